// The Array handle, the tracing helpers, evaluation and reading values out.
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>

#include "base/semantics.hpp"
#include "base/stats.hpp"
#include "core/api/device.hpp"
#include "core/api/evaluate.hpp"
#include "core/api/executor.hpp"
#include "core/api/observer.hpp"
#include "core/api/trace.hpp"
#include "graph/dump.hpp"

namespace aj {

static_assert(Array::kNoNode == kNoNode, "core and the IR mean the same by 'no node'");

// ---- handle ------------------------------------------------------------------

Operand::Operand(const Array& a, Loc l) : array(&a), loc(l) {}

Array Array::from_node(std::uint32_t id) {
  Array a;
  a.g_ = &graph();
  a.id_ = id;
  a.g_->retain_ext(id);
  return a;
}

Array::Array(const Array& o) : g_(o.g_), id_(o.id_), weak_(o.weak_) {
  if (id_ != kNoNode) g_->retain_ext(id_);
}
Array::Array(Array&& o) noexcept : g_(o.g_), id_(o.id_), weak_(o.weak_) {
  o.id_ = kNoNode;
  o.weak_ = false;
}
Array& Array::operator=(const Array& o) {
  if (o.id_ != kNoNode) o.g_->retain_ext(o.id_);  // first: self-assignment safe
  if (id_ != kNoNode) g_->release_ext(id_);
  g_ = o.g_;
  id_ = o.id_;
  weak_ = o.weak_;
  return *this;
}
Array& Array::operator=(Array&& o) noexcept {
  if (this != &o) {
    if (id_ != kNoNode) g_->release_ext(id_);
    g_ = o.g_;
    id_ = o.id_;
    weak_ = o.weak_;
    o.id_ = kNoNode;
    o.weak_ = false;
  }
  return *this;
}

void detail::set_weak(Array& a, bool weak) noexcept { a.weak_ = weak; }
Array::~Array() {
  if (id_ != kNoNode) g_->release_ext(id_);
}

// dtype and shape never change while a node lives: read without a lock.
DType Array::dtype(Loc loc) const { return trace::own_node(*this, "dtype", loc).dtype; }
// A function being compiled that reads an extent may branch on it: the
// transformation tracing it hears of the read (core/api/observer.hpp).
const Shape& Array::shape(Loc loc) const {
  if (!trace::in_op()) trace::report_shape_read();
  return trace::own_node(*this, "shape", loc).shape;
}
int Array::ndim(Loc loc) const { return trace::own_node(*this, "ndim", loc).shape.ndim(); }
std::int64_t Array::size(Loc loc) const {
  if (!trace::in_op()) trace::report_shape_read();
  return trace::own_node(*this, "size", loc).shape.numel();
}
Device Array::device(Loc loc) const {
  trace::own_node(*this, "device", loc);
  GraphScope in(*g_);
  const Node& n = graph()[id_];
  return n.storage ? n.storage->device : detail::device_of(node_id()).value_or(Device::cpu());
}
bool Array::is_evaluated(Loc loc) const {
  trace::own_node(*this, "is_evaluated", loc);
  GraphScope in(*g_);
  return graph()[id_].evaluated();
}

namespace {
// Unevaluated roots of the current graph (its lock held), evaluated.
void evaluate_roots(const std::vector<NodeId>& roots, const Loc& loc) {
  trace::report_evaluating(roots, loc);  // a traced function may not read values
  ++detail::stats_mut().evals;
  detail::evaluate(roots);
}
}  // namespace

// One array: aj::eval's work without its list (no handle copied into a
// vector: that was an allocation and two atomic operations a call).
const Array& Array::eval(Loc loc) const try {
  trace::own_node(*this, "eval", loc);
  GraphScope in(*g_);
  if (!graph()[id_].evaluated()) evaluate_roots({id_}, loc);
  return *this;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("eval", loc);
} catch (const detail::OutOfMemory& e) {
  detail::rethrow_out_of_memory(e, "eval", loc);
}

// Each array is evaluated in its own graph (arrays of several threads'
// graphs: one evaluation per graph, in the order first met).
void eval(const std::vector<Array>& arrays, Loc loc) try {
  for (const Array& a : arrays) trace::own_node(a, "eval", loc);
  std::vector<NodeId> roots;
  roots.reserve(arrays.size());
  for (std::size_t first = 0; first < arrays.size(); ++first) {
    Graph* g = arrays[first].graph_of();
    bool done = false;  // this graph came up before
    for (std::size_t k = 0; k < first && !done; ++k) done = arrays[k].graph_of() == g;
    if (done) continue;
    GraphScope in(*g);
    roots.clear();
    for (std::size_t k = first; k < arrays.size(); ++k) {
      if (arrays[k].graph_of() == g && !graph()[arrays[k].node_id()].evaluated()) roots.push_back(arrays[k].node_id());
    }
    if (roots.empty()) continue;
    evaluate_roots(roots, loc);
  }
} catch (const std::bad_alloc&) {
  detail::out_of_memory("eval", loc);
} catch (const detail::OutOfMemory& e) {
  detail::rethrow_out_of_memory(e, "eval", loc);
}

namespace detail {
namespace {
// Per thread: a test switching to the oracle affects its own thread only.
// -1: not read from AJ_EXECUTOR yet.
constinit thread_local int t_executor = -1;
}  // namespace
Executor executor() {
  if (t_executor < 0) {
    const char* e = std::getenv("AJ_EXECUTOR");
    t_executor = static_cast<int>(e && std::string(e) == "reference" ? Executor::reference : Executor::optimized);
  }
  return static_cast<Executor>(t_executor);
}
void set_executor(Executor e) { t_executor = static_cast<int>(e); }
}  // namespace detail

namespace {
template <class To>
void convert_out(const Node& n, To* dst) {
  const Shape& s = n.shape;
  const int nd = s.ndim();
  const std::int64_t total = s.numel();
  if (total == 0) return;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
  const char* base = static_cast<const char*>(n.storage->data);
  std::int64_t off = n.offset;
  sem::visit_dtype(n.dtype, [&](auto tag) {
    using From = decltype(tag);
    const From* src = reinterpret_cast<const From*>(base);
    for (std::int64_t k = 0; k < total; ++k) {
      dst[k] = sem::convert<To>(src[off]);
      for (int d = nd - 1; d >= 0; --d) {
        auto du = static_cast<std::size_t>(d);
        off += n.strides[du];
        if (++idx[du] < s[d]) break;
        off -= n.strides[du] * s[d];
        idx[du] = 0;
      }
    }
  });
}
}  // namespace

void Array::copy_out(void* dst, DType as, const Loc& loc) const try {
  eval(loc);
  // The evaluated view, taken under the graph's lock; the values are read
  // without it (an evaluated node never changes, and `n` keeps its storage).
  Node n;
  {
    GraphScope in(*g_);
    const Node& stored = graph()[id_];
    n.dtype = stored.dtype;
    n.shape = stored.shape;
    n.strides = stored.strides;
    n.offset = stored.offset;
    n.storage = stored.storage;
  }
  if (!n.storage->device.host_addressable()) {  // read through a host copy (synchronizes)
    n.storage = detail::backend_for(n.storage->device).to_host(*n.storage);
  }
  sem::visit_dtype(as, [&](auto tag) { convert_out(n, static_cast<decltype(tag)*>(dst)); });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("to_vector", loc);
}

Array& Array::operator+=(const Operand& b) { return *this = add(Operand(*this, b.loc), b); }
Array& Array::operator-=(const Operand& b) { return *this = subtract(Operand(*this, b.loc), b); }
Array& Array::operator*=(const Operand& b) { return *this = multiply(Operand(*this, b.loc), b); }
Array& Array::operator/=(const Operand& b) { return *this = divide(Operand(*this, b.loc), b); }
Array& Array::operator%=(const Operand& b) { return *this = mod(Operand(*this, b.loc), b); }

Array Array::astype(DType t, Loc loc) const try {
  trace::Scope scope;
  const Array& a = trace::local(*this, "astype", loc);
  trace::check_array_size(a.shape(), t, "astype", loc);
  Array out = trace::cast(a, t, loc);  // (the array itself at its own dtype)
  detail::set_weak(out, false);         // a dtype chosen: no longer weak
  return out;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("astype", loc);
}
Array Array::reshape(Shape s, Loc loc) const { return aj::reshape(*this, std::move(s), loc); }
Array Array::transpose(std::vector<int> perm, Loc loc) const {
  return aj::transpose(*this, std::move(perm), loc);
}
Array Array::T(Loc loc) const { return aj::transpose(*this, {}, loc); }

// ---- tracing helpers -----------------------------------------------------------

namespace trace {

namespace {
constinit thread_local Scope* t_scope = nullptr;  // the innermost op scope of this thread
}  // namespace

bool in_op() { return t_scope != nullptr; }

Scope::Scope() : graph_(thread_graph()), outer_(t_scope) { t_scope = this; }

Scope::~Scope() {
  imports_.clear();  // the op's node holds what it needs; the lock is still held here
  t_scope = outer_;
}

const Array& Scope::import(const Array& a, const char* op, const Loc& loc) {
  (void)op;
  Node leaf;
  {
    GraphScope there(*a.graph_of());  // our lock is released meanwhile
    const NodeId id = a.node_id();
    if (!graph()[id].evaluated()) {
      trace::report_evaluating({id}, loc);
      ++detail::stats_mut().evals;
      detail::evaluate({id});
    }
    const Node& n = graph()[id];
    leaf.dtype = n.dtype;
    leaf.shape = n.shape;
    leaf.strides = n.strides;
    leaf.offset = n.offset;
    leaf.storage = n.storage;  // shared: never reused in place while this leaf lives
  }
  leaf.op = Op::Input;
  leaf.loc = loc;
  imports_.push_back(std::make_unique<Array>(Array::from_node(graph().add(std::move(leaf)))));
  return *imports_.back();
}

const Node& node(const Array& a) {
  if (!a.valid()) internal_error("an op reached an empty Array handle its caller did not check");
  if (a.graph_of() != &graph()) internal_error("an op reached an array of another graph without trace::local");
  return graph()[a.node_id()];
}

const Node& own_node(const Array& a, const char* op, const Loc& loc) {
  if (!a.valid()) user_error(op, "empty Array handle (default-constructed or moved-from)", loc);
  return (*a.graph_of())[a.node_id()];
}

const Array& local(const Array& a, const char* op, const Loc& loc) {
  if (!a.valid()) user_error(op, "empty Array handle (default-constructed or moved-from)", loc);
  if (a.graph_of() == &graph()) return a;
  if (!t_scope || &t_scope->home() != &graph()) {
    internal_error(std::string("aj::") + op + " got an array of another thread without a trace::Scope");
  }
  return t_scope->import(a, op, loc);
}

const Node& node(const Array& a, const char* op, const Loc& loc) { return graph()[id(a, op, loc)]; }

NodeId id(const Array& a, const char* op, const Loc& loc) { return local(a, op, loc).node_id(); }

Node& scratch_node() {
  thread_local Node n;
  n.reset();
  return n;
}

Array make(Node&& n, const Loc& loc) {
  if (!holds_lock(graph())) internal_error(std::string("aj::") + op_name(n.op) + ": a node made outside a trace::Scope");
  check_array_size(n.shape, n.dtype, op_name(n.op), loc);
  detail::check_devices(n, loc);
  n.loc = loc;
  Array a = Array::from_node(graph().add(std::move(n)));
  if (observed()) report_made(a.node_id());
  return a;
}

Array marked_alias(const Array& x, std::int64_t mark, const Loc& loc, NodeId after) {
  const Node& in = node(x);
  Node n;
  n.op = Op::Reshape;
  n.dtype = in.dtype;
  n.shape = in.shape;
  n.inputs = {x.node_id()};
  n.after = after;
  n.i0 = mark;
  return make(std::move(n), loc);
}

Array stop_gradient_view(const Array& x, const Loc& loc) {
  return is_float(node(x).dtype) ? marked_alias(x, kStopGradientMark, loc) : x;
}

std::string describe(const Scalar& v) {
  switch (v.kind) {
    case Scalar::Kind::boolean: return v.i ? "true" : "false";
    case Scalar::Kind::integer:
      return v.above_int64 ? std::to_string(static_cast<std::uint64_t>(v.i)) : std::to_string(v.i);
    case Scalar::Kind::floating: {
      std::ostringstream os;
      os << v.f;  // shortest form that tells 1e+20 from 1e-20, unlike std::to_string
      return os.str();
    }
  }
  return "?";
}

bool fits(const Scalar& v, DType t) {
  if (!is_integer(t) || v.kind != Scalar::Kind::integer) return true;
  // Between t's limits (sem::int_min, int_max: t's kind decides them).
  return sem::visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (sem::is_signed_int<T>) {
      return !v.above_int64 && v.i >= static_cast<std::int64_t>(sem::int_min<T>()) &&
             v.i <= static_cast<std::int64_t>(sem::int_max<T>());
    } else if constexpr (sem::is_unsigned_int<T>) {
      return (v.above_int64 || v.i >= 0) &&
             static_cast<std::uint64_t>(v.i) <= static_cast<std::uint64_t>(sem::int_max<T>());
    } else {
      return true;  // not an integer: is_integer said it is
    }
  });
}

namespace {

void fill_constant(Node& n, const Scalar& v, DType t, const char* op, const Loc& loc, const Shape& shape) {
  n.op = Op::Constant;
  n.dtype = t;
  n.shape = shape;
  if (is_integer(t) && v.kind == Scalar::Kind::integer) {
    if (!fits(v, t)) {
      user_error(op, "scalar " + describe(v) + " does not fit the dtype " + dtype_name(t) +
                         " it takes here (an integer that does not fit is an error, not a wrap)", loc);
    }
  }
  sem::visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      n.i0 = v.kind == Scalar::Kind::floating ? (v.f != 0.0) : (v.i != 0);
    } else if constexpr (sem::is_int<T>) {
      // A float converts straight to i32 (saturating, as astype), not through i64.
      n.i0 = v.kind == Scalar::Kind::floating ? sem::convert<T>(v.f) : v.i;
    } else {
      n.f0 = static_cast<double>(T(v.f));  // the value rounded to T (f32, f16, bf16)
    }
  });
}

}  // namespace

Array constant(const Scalar& v, DType t, const char* op, const Loc& loc, const Shape& shape) {
  Node& n = scratch_node();
  fill_constant(n, v, t, op, loc, shape);
  return make(std::move(n), loc);
}

Node constant_node(const Scalar& v, DType t, const char* op, const Loc& loc, const Shape& shape) {
  Node n;
  fill_constant(n, v, t, op, loc, shape);
  return n;
}

Array cast(const Array& a, DType t, const Loc& loc) {
  const Node& in = node(a);
  if (in.dtype == t) return a;
  Node n;
  n.op = Op::Cast;
  n.dtype = t;
  n.shape = in.shape;
  n.inputs = {a.node_id()};
  return make(std::move(n), loc);
}

Array broadcast(const Array& a, const Shape& to, const Loc& loc) {
  const Node& in = node(a);
  if (in.shape == to) return a;
  Node n;
  n.op = Op::Broadcast;
  n.dtype = in.dtype;
  n.shape = to;
  n.inputs = {a.node_id()};
  return make(std::move(n), loc);
}

std::string describe(const Array& a) { return describe(a.dtype(), a.shape()); }

Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const std::vector<DType>& dtypes,
                       const char* op, const Loc& loc) {
  int nd = 0;
  for (auto* s : shapes) nd = std::max(nd, s->ndim());
  std::vector<std::int64_t> out(static_cast<std::size_t>(nd), 1);
  for (int k = 0; k < nd; ++k) {
    std::int64_t dim = 1;
    int from = -1;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Shape& s = *shapes[i];
      int ax = s.ndim() - nd + k;
      if (ax < 0) continue;
      std::int64_t e = s[ax];
      if (e == 1) continue;
      if (dim == 1) {
        dim = e;
        from = static_cast<int>(i);
      } else if (e != dim) {
        std::string all;
        for (std::size_t j = 0; j < shapes.size(); ++j) {
          if (j) all += " and ";
          all += describe(dtypes[j], *shapes[j]);
        }
        user_error(op, "shapes " + all + " cannot be broadcast together (axis " +
                           std::to_string(k - nd) + " from the end: " + std::to_string(dim) +
                           " vs " + std::to_string(e) + ")", loc);
      }
    }
    (void)from;
    out[static_cast<std::size_t>(k)] = dim;
  }
  return Shape(std::move(out));
}

void check_rank(std::int64_t ndim, const char* op, const Loc& loc) {
  if (ndim > kMaxRank) {
    user_error(op, "a shape of " + std::to_string(ndim) + " axes (arrays have at most " + std::to_string(kMaxRank) + ")",
               loc);
  }
}

std::int64_t checked_numel(const std::vector<std::int64_t>& dims, const char* op, const Loc& loc) {
  // One pass (every traced node comes here): a zero extent makes the count 0
  // even where the other extents alone would overflow.
  check_rank(static_cast<std::int64_t>(dims.size()), op, loc);
  std::int64_t n = 1;
  bool zero = false, overflow = false;
  for (auto d : dims) {
    if (d < 0) user_error(op, "negative extent in shape " + Shape(dims).str(), loc);
    if (d == 0) zero = true;
    else if (!overflow) overflow = __builtin_mul_overflow(n, d, &n);
  }
  if (zero) return 0;
  if (overflow) {
    user_error(op, "shape " + Shape(dims).str() + " has more elements than fit in int64", loc);
  }
  return n;
}

void check_array_size(const Shape& shape, DType t, const char* op, const Loc& loc) {
  const std::int64_t n = checked_numel(shape.dims(), op, loc);
  std::uint64_t bytes = 0;  // a multiply, not a division: every traced node comes here
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(itemsize(t)), &bytes) ||
      bytes > kMaxArrayBytes) {
    user_error(op, "an array " + describe(t, shape) + " would need " + std::to_string(n) + " x " +
                       std::to_string(itemsize(t)) +
                       " bytes, more than any system has (arrays are limited to 2^62 bytes, views "
                       "included)", loc);
  }
}

int normalize_axis(int axis, int ndim, const char* op, const Shape& shape, DType t, const Loc& loc) {
  if (axis < -ndim || axis >= ndim) {
    user_error(op, "axis " + std::to_string(axis) + " is out of range for " + describe(t, shape) +
                       " (valid: " + std::to_string(-ndim) + " to " + std::to_string(ndim - 1) + ")",
               loc);
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace trace
}  // namespace aj

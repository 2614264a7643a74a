#include "opt/verify.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "graph/host_call.hpp"
#include "graph/library.hpp"
#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"

namespace aj {

namespace {

bool verify_from_env() {
  const char* e = std::getenv("AJ_VERIFY");
  if (e && *e) return std::strcmp(e, "0") != 0;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

std::atomic<bool>& verify_flag() {
  static std::atomic<bool> on{verify_from_env()};
  return on;
}

class NodeCheck {
 public:
  NodeCheck(const Graph& g, NodeId id, const char* pass) : g_(g), id_(id), n_(g[id]), pass_(pass) {}

  void run() {
    for (NodeId in : n_.inputs) {
      need(in < g_.capacity() && g_[in].alive, "an input is not a live node");
    }
    if (n_.evaluated()) {
      need(n_.inputs.empty(), "an evaluated node still has inputs");
      need(n_.strides.size() == static_cast<std::size_t>(n_.shape.ndim()),
           "an evaluated node needs one stride per axis");
      return;
    }
    need(n_.op != Op::Input, "an input leaf without a storage");
    const int arity = op_info(n_.op).arity;
    if (arity >= 0) need(n_.inputs.size() == static_cast<std::size_t>(arity), "wrong input count");
    switch (op_category(n_.op)) {
      case OpCategory::Leaf: break;
      case OpCategory::Generator: break;
      case OpCategory::Unary:
      case OpCategory::Binary:
      case OpCategory::Ternary: elementwise(); break;
      case OpCategory::Reduce: reduction(); break;
      case OpCategory::Scan: scan(); break;
      case OpCategory::View: view(); break;
      case OpCategory::Other: other(); break;
      case OpCategory::Remap: remap(); break;
    }
  }

 private:
  const Node& in(std::size_t k) const { return g_[n_.inputs[k]]; }

  void need(bool ok, const char* rule) const {
    if (ok) return;
    internal_error(std::string("verify after ") + pass_ + ": node " + std::to_string(id_) + " (" +
                   op_name(n_.op) + " " + dtype_name(n_.dtype) + n_.shape.str() + "): " + rule);
  }

  void elementwise() {
    for (std::size_t k = 0; k < n_.inputs.size(); ++k) {
      need(in(k).shape == n_.shape, "an elementwise input of another shape (no implicit broadcast)");
    }
    if (n_.op == Op::Cast) return;
    if (n_.op == Op::Where) {
      need(in(0).dtype == DType::bool_, "where's condition must be bool");
      need(in(1).dtype == n_.dtype && in(2).dtype == n_.dtype, "where's values must have its dtype");
      return;
    }
    for (std::size_t k = 1; k < n_.inputs.size(); ++k) {
      need(in(k).dtype == in(0).dtype, "binary inputs must share one dtype");
    }
    if (op_has(n_.op, opflag::Logical)) {
      need(in(0).dtype == DType::bool_ && n_.dtype == DType::bool_, "logical ops are bool to bool");
    } else if (is_compare(n_.op)) {
      need(n_.dtype == DType::bool_, "comparisons give bool");
    } else {
      need(in(0).dtype == n_.dtype, "arithmetic keeps its operands' dtype");
    }
  }

  void reduction() {
    const Node& x = in(0);
    for (std::size_t k = 0; k < n_.ints.size(); ++k) {
      need(n_.ints[k] >= 0 && n_.ints[k] < x.shape.ndim(), "reduction axis out of range");
      need(k == 0 || n_.ints[k - 1] < n_.ints[k], "reduction axes must be sorted and unique");
    }
    need(!n_.ints.empty(), "a reduction over no axes");
    need(n_.shape == reduced_shape(x.shape, n_.ints), "a reduction's shape is its input's without the axes");
    if (n_.op == Op::ArgMax || n_.op == Op::ArgMin) {
      need(n_.ints.size() == 1 && n_.dtype == DType::i64, "argmax/argmin: one axis, i64 result");
    } else {
      need(x.dtype == n_.dtype, "a reduction accumulates in its input's dtype (tracing casts first)");
    }
  }

  void view() {
    const Node& x = in(0);
    need(x.dtype == n_.dtype, "a view keeps its input's dtype");
    switch (n_.op) {
      case Op::Reshape: need(x.numel() == n_.numel(), "reshape must keep the element count"); break;
      case Op::Transpose: {
        const auto nd = static_cast<std::size_t>(n_.shape.ndim());
        need(n_.ints.size() == nd && x.shape.ndim() == n_.shape.ndim(), "transpose needs a full permutation");
        std::vector<bool> seen(nd, false);
        for (std::size_t i = 0; i < nd; ++i) {
          const auto p = n_.ints[i];
          need(p >= 0 && static_cast<std::size_t>(p) < nd && !seen[static_cast<std::size_t>(p)],
               "transpose perm is not a permutation");
          seen[static_cast<std::size_t>(p)] = true;
          need(n_.shape[static_cast<int>(i)] == x.shape[static_cast<int>(p)], "transpose shape != permuted input shape");
        }
        break;
      }
      case Op::Broadcast: {
        const int d = n_.shape.ndim() - x.shape.ndim();
        need(d >= 0, "broadcast to a lower rank");
        for (int i = 0; i < x.shape.ndim(); ++i) {
          need(x.shape[i] == 1 || x.shape[i] == n_.shape[i + d], "broadcast of an extent that is not 1");
        }
        break;
      }
      case Op::Slice: {
        need(n_.ints.size() == 2 * static_cast<std::size_t>(n_.shape.ndim()) && x.shape.ndim() == n_.shape.ndim(),
             "slice needs (start, step) per axis");
        for (int i = 0; i < n_.shape.ndim(); ++i) {
          const auto start = n_.ints[2 * static_cast<std::size_t>(i)];
          const auto step = n_.ints[2 * static_cast<std::size_t>(i) + 1];
          const auto e = n_.shape[i];
          need(step != 0, "slice step 0");
          if (e == 0) continue;
          const auto last = start + (e - 1) * step;
          need(start >= 0 && start < x.shape[i] && last >= 0 && last < x.shape[i], "slice reads outside its input");
        }
        break;
      }
      AJ_CASES_OUTSIDE(View) need(false, "unknown view"); break;
    }
  }

  void scan() {
    const Node& x = in(0);
    need(n_.ints.size() == 1 && n_.ints[0] >= 0 && n_.ints[0] < x.shape.ndim(), "a scan has one axis in range");
    need(n_.shape == x.shape, "a scan keeps its input's shape");
    need(x.dtype == n_.dtype, "a scan runs in its input's dtype (tracing casts first)");
    need(n_.dtype != DType::bool_ || n_.op == Op::CumMax || n_.op == Op::CumMin, "only cummax / cummin run in bool");
    need(n_.op != Op::LogCumSumExp || (is_float(n_.dtype) && !is_half(n_.dtype)), "logcumsumexp runs in f32 or f64");
  }

  void sorting() {
    const Node& x = in(0);
    const int r = x.shape.ndim();
    need(n_.i0 >= 0 && n_.i0 < r && n_.shape.ndim() == r, "sort/topk: axis in range, rank kept");
    const bool top = n_.op == Op::TopK || n_.op == Op::ArgTopK;
    const bool indices = n_.op == Op::ArgSort || n_.op == Op::ArgTopK;
    need(n_.dtype == (indices ? DType::i64 : x.dtype), "sort/topk: values keep the dtype, indices are i64");
    for (int i = 0; i < r; ++i) {
      const std::int64_t want = i == n_.i0 && top ? n_.i1 : x.shape[i];
      need(n_.shape[i] == want, "sort/topk: extents (k along the axis for topk)");
    }
    if (top) need(n_.i1 >= 0 && n_.i1 <= x.shape[static_cast<int>(n_.i0)], "topk: k within the axis");
  }

  // gather/scatter: i32/i64 indices of the updates' (gather: result's)
  // shape, which is the array's but for the axis.
  void indexed(const Node& a, const Node& idx, const Shape& along) {
    need(idx.dtype == DType::i32 || idx.dtype == DType::i64, "indices must be i32 or i64");
    need(idx.shape == along, "indices have the shape they are applied over");
    need(n_.i0 >= 0 && n_.i0 < a.shape.ndim() && a.shape.ndim() == along.ndim(), "axis out of range");
    for (int d = 0; d < along.ndim(); ++d) {
      if (d != n_.i0) need(a.shape[d] == along[d], "extents off the axis must agree");
    }
  }

  void remap() {
    const Node& x = in(0);
    need(x.dtype == n_.dtype, "gather and pad keep their operand's dtype");
    if (n_.op == Op::Gather) {
      indexed(x, in(1), n_.shape);
      need(x.shape[static_cast<int>(n_.i0)] > 0 || n_.numel() == 0, "gather from an empty axis");
      return;
    }
    need(in(1).shape == n_.shape && in(1).dtype == n_.dtype, "pad's fill has its shape and dtype");
    need(n_.ints.size() == 2 * static_cast<std::size_t>(n_.shape.ndim()) && x.shape.ndim() == n_.shape.ndim(),
         "pad needs (start, step) per axis");
    for (int i = 0; i < n_.shape.ndim(); ++i) {
      const auto start = n_.ints[2 * static_cast<std::size_t>(i)], step = n_.ints[2 * static_cast<std::size_t>(i) + 1];
      need(step >= 1 && start >= 0, "pad start >= 0, step >= 1");
      if (x.shape[i] > 0) need(start + (x.shape[i] - 1) * step < n_.shape[i], "pad writes outside its result");
    }
  }

  // A host call's results, packed: one of them is the node; several fill a
  // flat node exactly. Its function still exists.
  void host_call() {
    const std::vector<Shape> rs = host_call_results(n_.ints);
    need(!rs.empty(), "host_call: at least one result");
    std::int64_t total = 0;
    for (const Shape& r : rs) total += r.numel();
    need(rs.size() == 1 ? n_.shape == rs[0] : (n_.shape.ndim() == 1 && n_.shape[0] == total),
         "host_call: the node is its result, or its results packed flat");
    need(find_host_call(n_.i0) != nullptr, "host_call: its function is held");
  }

  // A collective's result shape follows from its operand's and the group's
  // size, which only the running processes know: the kind and payload are
  // checked here, the shapes by the ranks themselves when the step runs.
  void collective() {
    need(n_.i0 >= 0 && n_.i0 <= static_cast<std::int64_t>(CollectiveKind::recv), "collective: a known kind");
    need(n_.i1 >= 0 && n_.i1 <= static_cast<std::int64_t>(ReduceKind::prod), "collective: a known reduction");
    need(n_.ints.size() == 2, "collective: payload {group, peer}");
    const bool recv = n_.i0 == static_cast<std::int64_t>(CollectiveKind::recv);
    need(n_.inputs.size() == (recv ? 0u : 1u), "collective: one operand (recv: none)");
    if (!recv) need(in(0).dtype == n_.dtype, "collective: the operand has the result's dtype");
  }

  void other() {
    if (n_.op == Op::HostCall) return host_call();
    if (n_.op == Op::Collective) return collective();
    if (n_.op == Op::Sort || n_.op == Op::ArgSort || n_.op == Op::TopK || n_.op == Op::ArgTopK) return sorting();
    if (n_.op == Op::ScatterAdd || n_.op == Op::Scatter) {
      need(in(0).dtype == n_.dtype && in(2).dtype == n_.dtype && in(0).shape == n_.shape,
           "scatter: the array and the updates have the result's dtype, the array its shape");
      indexed(n_, in(1), in(2).shape);
      return;
    }
    if (n_.op == Op::MatMul) {
      const Node &a = in(0), &b = in(1);
      const int r = n_.shape.ndim();
      need(r >= 2 && a.shape.ndim() == r && b.shape.ndim() == r, "matmul operands are broadcast to the result's rank");
      need(a.dtype == n_.dtype && b.dtype == n_.dtype, "matmul operands have the result's dtype");
      for (int i = 0; i < r - 2; ++i) {
        need(a.shape[i] == n_.shape[i] && b.shape[i] == n_.shape[i], "matmul batch extents");
      }
      need(a.shape[r - 1] == b.shape[r - 2] && a.shape[r - 2] == n_.shape[r - 2] &&
               b.shape[r - 1] == n_.shape[r - 1], "matmul extents");
      return;
    }
    if (n_.op == Op::Linalg) return linalg();
    if (n_.op == Op::Conv) return conv();
    // Concat
    need(!n_.inputs.empty(), "concat of nothing");
    need(n_.i0 >= 0 && n_.i0 < n_.shape.ndim(), "concat axis out of range");
    std::int64_t total = 0;
    for (std::size_t k = 0; k < n_.inputs.size(); ++k) {
      need(in(k).dtype == n_.dtype && in(k).shape.ndim() == n_.shape.ndim(), "concat inputs: dtype and rank");
      for (int i = 0; i < n_.shape.ndim(); ++i) {
        if (i != n_.i0) need(in(k).shape[i] == n_.shape[i], "concat inputs: extents off the axis");
      }
      total += in(k).shape[static_cast<int>(n_.i0)];
    }
    need(total == n_.shape[static_cast<int>(n_.i0)], "concat extent is the sum of its inputs'");
  }

  void conv() {
    need(n_.dtype == DType::f32 || n_.dtype == DType::f64, "conv runs in f32 or f64");
    need(n_.inputs.size() == 2 && in(0).dtype == n_.dtype && in(1).dtype == n_.dtype,
         "conv: x and w in the result's dtype");
    ConvGeometry geo;
    need(geo.unpack(n_.ints), "conv: ints are strides, pads and dilations (>= 1) per spatial axis");
    const Shape &x = in(0).shape, &w = in(1).shape;
    const int r = static_cast<int>(geo.dims()) + 2;
    need(x.ndim() == r && w.ndim() == r && n_.shape.ndim() == r, "conv: x, w and the result have 2 + d axes");
    need(n_.i1 == kConvForward || n_.i1 == kConvWeightGrad, "conv: a forward or weight-gradient step");
    if (n_.i1 == kConvWeightGrad) {  // operands x and g, the result the weights' shape
      const Shape& g = w;
      need(n_.i0 >= 1 && n_.shape[1] * n_.i0 == x[1] && n_.shape[0] % n_.i0 == 0 && g[0] == x[0],
           "conv weight gradient: groups divide the features, g and x have one batch");
      need(g == conv_shape(x, n_.shape, geo), "conv weight gradient: g has the convolution's shape");
      return;
    }
    need(n_.i0 >= 1 && w[1] * n_.i0 == x[1] && w[0] % n_.i0 == 0, "conv: groups divide the features");
    need(n_.shape == conv_shape(x, w, geo), "conv: the result's shape");
  }

  void linalg() {
    need(n_.dtype == DType::f32 || n_.dtype == DType::f64, "linalg runs in f32 or f64");
    need(n_.i0 >= 0 && n_.i0 <= static_cast<std::int64_t>(LinalgKind::eigh), "linalg: a routine of LinalgKind");
    const auto kind = static_cast<LinalgKind>(n_.i0);
    const bool two = kind == LinalgKind::solve || kind == LinalgKind::triangular;
    need(n_.inputs.size() == (two ? 2u : 1u), "linalg: solves take a and b, the others a");
    for (std::size_t k = 0; k < n_.inputs.size(); ++k) {
      need(in(k).dtype == n_.dtype && in(k).shape.ndim() >= 2, "linalg operands: the result's dtype, rank >= 2");
    }
    const Shape& a = in(0).shape;
    const int r = a.ndim();
    const bool square = kind != LinalgKind::lu && kind != LinalgKind::qr && kind != LinalgKind::svd;
    need(!square || a[r - 1] == a[r - 2], "linalg: this routine takes square matrices");
    if (two) {
      const Shape& b = in(1).shape;
      need(b.ndim() == r && b[r - 2] == a[r - 1], "linalg solves: b has a's rank and its rows");
      for (int d = 0; d < r - 2; ++d) need(b[d] == a[d], "linalg solves: batch extents agree");
    }
    need(n_.shape == linalg_shape(kind, n_.i1, a, two ? &in(1).shape : nullptr), "linalg: the result's shape");
  }

  const Graph& g_;
  NodeId id_;
  const Node& n_;
  const char* pass_;
};

}  // namespace

bool verify_enabled() { return verify_flag(); }
void set_verify(bool on) { verify_flag() = on; }

void verify(const Graph& g, const char* after_pass) {
  std::vector<std::uint32_t> readers(g.capacity(), 0);
  std::size_t live = 0;
  for (NodeId id = 0; id < g.capacity(); ++id) {
    const Node& n = g[id];
    if (!n.alive) continue;
    ++live;
    NodeCheck(g, id, after_pass).run();
    for (NodeId in : n.inputs) ++readers[in];
    if (n.after != kNoNode) ++readers[n.after];
  }
  for (NodeId id = 0; id < g.capacity(); ++id) {
    const Node& n = g[id];
    if (n.alive && n.uses != readers[id]) {
      internal_error(std::string("verify after ") + after_pass + ": node " + std::to_string(id) +
                     " has uses = " + std::to_string(n.uses) + " but " + std::to_string(readers[id]) +
                     " live readers");
    }
    if (n.alive && g.ext_count(id) == 0 && n.uses == 0) {
      internal_error(std::string("verify after ") + after_pass + ": node " + std::to_string(id) +
                     " is alive with no handle and no reader (should have been freed)");
    }
  }
  if (live != g.live()) {
    internal_error(std::string("verify after ") + after_pass + ": live node count is off");
  }
}

void verify(const BufferPlan& b, const Schedule& s, const char* after_pass) {
  auto fail = [&](const std::string& what) {
    internal_error(std::string("verify after ") + after_pass + ": buffer plan: " + what);
  };
  const int steps = static_cast<int>(s.steps.size());
  for (std::size_t i = 0; i < b.values.size(); ++i) {
    const BufferValue& v = b.values[i];
    if (v.def < 0 || v.def >= steps || (v.last != BufferPlan::kEnd && (v.last < v.def || v.last >= steps))) {
      fail("value of node " + std::to_string(v.node) + " has a bad live interval");
    }
    if (v.slot >= static_cast<int>(b.slot_bytes.size())) fail("slot out of range");
    if (v.slot >= 0 && b.slot_bytes[static_cast<std::size_t>(v.slot)] < v.bytes) {
      fail("node " + std::to_string(v.node) + " does not fit its slot");
    }
  }
  // Values sharing a slot, in order of their def: each must be dead before
  // the next begins, or hand its buffer on to it (a donation). Checked
  // against every earlier value still live, so a plan of thousands of values
  // verifies in about linear time.
  std::vector<std::vector<const BufferValue*>> by_slot(b.slot_bytes.size());
  for (const BufferValue& v : b.values) {
    if (v.slot >= 0) by_slot[static_cast<std::size_t>(v.slot)].push_back(&v);
  }
  for (auto& vs : by_slot) {
    std::stable_sort(vs.begin(), vs.end(), [](const BufferValue* a, const BufferValue* b) { return a->def < b->def; });
    std::vector<const BufferValue*> live;
    for (const BufferValue* second : vs) {
      std::erase_if(live, [&](const BufferValue* first) { return first->last < second->def; });
      for (const BufferValue* first : live) {
        const bool handed_on = second->donor == first->node && first->last <= second->def;
        if (!handed_on) {
          fail("nodes " + std::to_string(first->node) + " and " + std::to_string(second->node) +
               " share slot " + std::to_string(second->slot) + " while both are live");
        }
      }
      live.push_back(second);
    }
  }
  for (const Donation& d : b.donations) {
    if (d.step < 0 || d.step >= steps) fail("a donation to a step that does not exist");
    const Step& to_step = s.steps[static_cast<std::size_t>(d.step)];
    if (to_step.kind == Step::Kind::view ||
        (to_step.kind == Step::Kind::library &&
         (!op_has(graph()[to_step.node].op, opflag::Overwrites) || graph()[to_step.node].inputs[0] != d.from))) {
      fail("a donation to a step that is not a kernel or an overwriting library step's first input");
    }
    // An evaluated donor gives its whole storage (it may be a stride-0 view
    // of a smaller buffer); a donor made in this plan gives its own bytes.
    const Node &from = graph()[d.from], &to = graph()[d.to];
    const auto from_bytes = from.evaluated() ? from.storage->bytes
                                             : static_cast<std::size_t>(from.numel()) * itemsize(from.dtype);
    if (from_bytes != static_cast<std::size_t>(to.numel()) * itemsize(to.dtype)) {
      fail("a donation between buffers of different byte sizes");
    }
    if (from.evaluated() && from.storage->read_only()) fail("a borrowed buffer is donated");
  }
  if (b.lower_bound > b.bytes_used) fail("bytes used below the lower bound");
}

}  // namespace aj

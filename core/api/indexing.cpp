// Indexing and data movement (arrayjit/indexing.hpp): every public op here is
// built from four graph ops (arrayjit/ops.def): gather and pad, which lowering
// turns into index arithmetic inside kernels, and scatter / scatter_add,
// library steps. Everything a call could get wrong is checked before the
// first node is made, so a bad call changes nothing.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "arrayjit/indexing.hpp"
#include "base/index_rules.hpp"
#include "core/api/observer.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

std::atomic<bool>& debug_flag() {
  static std::atomic<bool> on = [] {
    const char* e = std::getenv("AJ_DEBUG");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

// Runs `body`, naming `op` in a user error that an op it is built from threw
// ("aj::where: operands are on different devices" becomes "aj::slice_update:
// ..."): the caller wrote `op`, so that is what the message must name.
template <class F>
Array as_op(const char* op, const Loc& loc, F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::string what = e.what();
    const std::string own = std::string("aj::") + op + ": ";
    const auto colon = what.find(": ");
    if (e.kind() != Error::Kind::user || what.rfind("aj::", 0) != 0 || what.rfind(own, 0) == 0 ||
        colon == std::string::npos) {
      throw;
    }
    what = what.substr(colon + 2);
    if (const auto at = what.rfind(" (at "); at != std::string::npos) what.resize(at);
    user_error(op, what, loc);
  }
}

// An operand whose array (if any) is an array of this thread's graph
// (trace::local: arrays of other threads are imported, held by the scope).
Operand local_operand(const Operand& o, const char* op) {
  if (o.is_scalar) return o;
  Operand r = o;
  r.array = &trace::local(*o.array, op, o.loc);
  return r;
}

void check_indices(const char* op, const Array& indices, const Loc& loc) {
  trace::id(indices, op, loc);
  const DType t = indices.dtype();
  if (t != DType::i32 && t != DType::i64) {
    user_error(op, "indices must be integers, got " + describe(indices), loc);
  }
}

// Indices as the index kernels and library steps take them: i32 and i64 as
// they are, the other integer dtypes (u8 labels, i16) widened to i64, as
// NumPy takes any integer dtype; bool and floats are errors (check_indices).
Array index_operand(const char* op, const Array& indices, const Loc& loc) {
  trace::id(indices, op, loc);
  const DType t = indices.dtype();
  if (!is_integer(t) || t == DType::i32 || t == DType::i64) return indices;
  return trace::cast(indices, DType::i64, loc);
}

// Whether `from` broadcasts to `to` (NumPy, one way: `to` does not change).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.ndim() > to.ndim()) return false;
  for (int i = 0; i < from.ndim(); ++i) {
    const std::int64_t f = from[i], t = to[to.ndim() - from.ndim() + i];
    if (f != t && f != 1) return false;
  }
  return true;
}

Shape with_extent(const Shape& s, int axis, std::int64_t extent) {
  std::vector<std::int64_t> d = s.dims();
  d[static_cast<std::size_t>(axis)] = extent;
  return Shape(d);
}

// Shape checks of a values operand that must broadcast to `to`; the array
// it becomes is made later (after every check) by values_as.
void check_values(const char* op, const Operand& v, const Shape& to, const char* what, const Loc& loc) {
  if (v.is_scalar) return;
  trace::id(*v.array, op, loc);
  if (!broadcasts_to(v.array->shape(), to)) {
    user_error(op, std::string(what) + " " + describe(*v.array) + " do not broadcast to " + to.str(), loc);
  }
}

Array values_as(const char* op, const Operand& v, DType t, const Shape& to, const Loc& loc) {
  Array a = v.is_scalar ? trace::constant(v.scalar, t, op, loc) : trace::cast(*v.array, t, loc);
  return trace::broadcast(a, to, loc);
}

std::vector<std::int64_t> unravel(std::int64_t k, const Shape& s) {
  std::vector<std::int64_t> at(static_cast<std::size_t>(s.ndim()));
  for (int d = s.ndim() - 1; d >= 0; --d) {
    at[static_cast<std::size_t>(d)] = k % s[d];
    k /= s[d];
  }
  return at;
}

// AJ_DEBUG: the indices, evaluated now, must lie in [-extent, extent).
void debug_check(const char* op, const Array& indices, std::int64_t extent, int axis, const Loc& loc) {
  if (!debug()) return;
  const std::vector<std::int64_t> v = indices.to_vector<std::int64_t>(loc);
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (idx::in_range(v[k], extent)) continue;
    const auto at = unravel(static_cast<std::int64_t>(k), indices.shape());
    std::string pos = "[";
    for (std::size_t i = 0; i < at.size(); ++i) pos += (i ? ", " : "") + std::to_string(at[i]);
    user_error(op, "index " + std::to_string(v[k]) + " (at " + pos + "] of the indices) is out of range for axis " +
                       std::to_string(axis) + " of extent " + std::to_string(extent) + " (valid: " +
                       std::to_string(-extent) + " to " + std::to_string(extent - 1) + "; AJ_DEBUG check)",
               loc);
  }
}

// gather(a, idx) along `axis`: idx has the result's shape, a the same but
// for the axis.
Array gather_node(const Array& a, const Array& idx, int axis, const Loc& loc) {
  Node n;
  n.op = Op::Gather;
  n.dtype = a.dtype();
  n.shape = idx.shape();
  n.i0 = axis;
  n.inputs = {a.node_id(), idx.node_id()};
  return trace::make(std::move(n), loc);
}

Array scatter_node(Op op, const Array& a, const Array& idx, const Array& upd, int axis, const Loc& loc) {
  Node n;
  n.op = op;
  n.dtype = a.dtype();
  n.shape = a.shape();
  n.i0 = axis;
  n.inputs = {a.node_id(), idx.node_id(), upd.node_id()};
  return trace::make(std::move(n), loc);
}

// x placed at start + step * i along every axis of `out`, fill elsewhere.
Array pad_node(const Array& x, const Array& fill, std::vector<std::int64_t> ints, Shape out, const Loc& loc) {
  Node n;
  n.op = Op::Pad;
  n.dtype = x.dtype();
  n.shape = std::move(out);
  n.ints = std::move(ints);
  n.inputs = {x.node_id(), fill.node_id()};
  return trace::make(std::move(n), loc);
}

// Extents with `ones` size-1 axes inserted at `at`.
Shape ones_at(const Shape& s, int at, int ones) {
  std::vector<std::int64_t> d = s.dims();
  d.insert(d.begin() + at, static_cast<std::size_t>(ones), 1);
  return Shape(d);
}

// The take-shaped scatters: updates a.shape[:axis] + indices.shape +
// a.shape[axis+1:], scattered along the axis with the indices flattened.
Array scatter_take_shaped(Op op, const char* name, const Array& a, const Array& indices, const Operand& updates,
                          int axis, const Loc& loc) {
  trace::id(a, name, loc);
  check_indices(name, indices, loc);
  const int ax = trace::normalize_axis(axis, a.ndim(), name, a.shape(), a.dtype(), loc);
  const Shape s = a.shape();  // a copy: making nodes may move the node table
  std::vector<std::int64_t> full(s.begin(), s.begin() + ax), flat = full;
  full.insert(full.end(), indices.shape().begin(), indices.shape().end());
  full.insert(full.end(), s.begin() + ax + 1, s.end());
  flat.push_back(indices.size());
  flat.insert(flat.end(), s.begin() + ax + 1, s.end());
  const Shape want(full);
  trace::check_array_size(want, a.dtype(), name, loc);
  check_values(name, updates, want, "updates", loc);
  debug_check(name, indices, s[ax], ax, loc);
  const Shape along(flat);
  std::vector<std::int64_t> line(static_cast<std::size_t>(s.ndim()), 1);  // the indices along the axis
  line[static_cast<std::size_t>(ax)] = indices.size();
  Array idx = trace::broadcast(reshape(indices, Shape(line), loc), along, loc);
  Array upd = reshape(values_as(name, updates, a.dtype(), want, loc), along, loc);
  return scatter_node(op, a, idx, upd, ax, loc);
}

Array scatter_along(Op op, const char* name, const Array& a, const Array& indices, const Operand& updates, int axis,
                    const Loc& loc) {
  trace::id(a, name, loc);
  check_indices(name, indices, loc);
  const int ax = trace::normalize_axis(axis, a.ndim(), name, a.shape(), a.dtype(), loc);
  if (indices.ndim() != a.ndim()) {
    user_error(name, "indices " + describe(indices) + " must have the rank of the array " + describe(a), loc);
  }
  const Shape along = with_extent(a.shape(), ax, indices.shape()[ax]);
  if (!broadcasts_to(indices.shape(), along)) {
    user_error(name, "indices " + describe(indices) + " do not broadcast to " + along.str() + " (the array " +
                         describe(a) + " with axis " + std::to_string(ax) + " taking the indices' extent)", loc);
  }
  check_values(name, updates, along, "updates", loc);
  debug_check(name, indices, a.shape()[ax], ax, loc);
  Array idx = trace::broadcast(indices, along, loc);
  return scatter_node(op, a, idx, values_as(name, updates, a.dtype(), along, loc), ax, loc);
}

// Slice parameters (start, step, extent per axis) as aj::slice computes them.
struct SliceParams {
  std::vector<std::int64_t> start, step;
  Shape shape;
};

SliceParams slice_params(const Array& a, const std::vector<Slice>& slices, const char* op, const Loc& loc) {
  if (static_cast<int>(slices.size()) > a.ndim()) {
    user_error(op, std::to_string(slices.size()) + " slices given for " + describe(a), loc);
  }
  Array v = slice(a, slices, loc);  // checks every bound (errors renamed by as_op); a view (freed below) or a
  SliceParams p;
  p.shape = v.shape();
  const Node& n = trace::node(v);
  const bool identity = v.node_id() == a.node_id() || n.op != Op::Slice;
  for (int d = 0; d < a.ndim(); ++d) {
    p.start.push_back(identity ? 0 : n.ints[2 * static_cast<std::size_t>(d)]);
    p.step.push_back(identity ? 1 : n.ints[2 * static_cast<std::size_t>(d) + 1]);
  }
  return p;
}

// a with the slice replaced by the values (or a's slice + values): one pad.
Array update_slice(const Array& a, const std::vector<Slice>& slices, const Operand& values, bool add,
                   const char* name, const Loc& loc) {
  trace::id(a, name, loc);
  const SliceParams p = slice_params(a, slices, name, loc);
  check_values(name, values, p.shape, "values", loc);
  if (p.shape.numel() == 0) {
    if (!values.is_scalar) trace::id(*values.array, name, loc);
    else trace::constant(values.scalar, a.dtype(), name, loc);  // still checks that it fits
    if (trace::observed() && !values.is_scalar) {
      // Nothing is placed, so no node relates the values' extents to the
      // slice's; aj::compile makes a trace's ops again at other extents
      // without calling this function, and only its nodes' shape rules
      // check them. A comparison of the two says that they must broadcast
      // (it is dropped: nothing runs).
      const Array view = slice(a, slices, loc);
      const Array placed = values_as(name, values, a.dtype(), p.shape, loc);
      (void)(Operand(view, loc) == Operand(placed, loc));
    }
    return a;
  }
  Array v = values_as(name, values, a.dtype(), p.shape, loc);
  // A negative step walks the slice backwards: reverse the values and place
  // them forwards from the slice's last element.
  std::vector<std::int64_t> ints;
  std::vector<Slice> reverse;
  bool any_reverse = false;
  for (int d = 0; d < a.ndim(); ++d) {
    const auto du = static_cast<std::size_t>(d);
    const std::int64_t len = p.shape[d];
    if (p.step[du] < 0) {
      ints.push_back(p.start[du] + p.step[du] * (len - 1));
      ints.push_back(-p.step[du]);
      reverse.push_back(Slice(std::nullopt, std::nullopt, -1));
      any_reverse = true;
    } else {
      ints.push_back(p.start[du]);
      ints.push_back(p.step[du]);
      reverse.push_back(Slice());
    }
  }
  if (any_reverse) v = slice(v, reverse, loc);
  const Shape shape = a.shape();  // a copy: making nodes may move the node table
  // One pad: v placed into a (outside the slice, a's own elements).
  if (!add) return pad_node(v, a, ints, shape, loc);
  // slice_add: a plus v placed into zeros. a is read once per element at
  // its own index (the work rule then never stores a computed a first), v
  // only where the slice is.
  // (-0.0 for floats: x + -0.0 is x for every x, -0.0 included.)
  const Scalar z = a.dtype() == DType::bool_ ? Scalar(false) : is_float(a.dtype()) ? Scalar(-0.0) : Scalar(0);
  const Array zero = trace::broadcast(trace::constant(z, a.dtype(), name, loc), shape, loc);
  const Array placed = pad_node(v, zero, ints, shape, loc);
  return a.dtype() == DType::bool_ ? (Operand(a, loc) || Operand(placed, loc)) : (Operand(a, loc) + Operand(placed, loc));
}

// roll along one axis: the last s elements first, then the rest.
Array roll_axis(const Array& a, std::int64_t shift, int ax, const Loc& loc) {
  const std::int64_t n = a.shape()[ax];
  if (n == 0) return a;
  const std::int64_t s = ((shift % n) + n) % n;
  if (s == 0) return a;
  std::vector<std::int64_t> head, tail;
  for (int d = 0; d < a.ndim(); ++d) {
    head.insert(head.end(), {0, 1});
    tail.insert(tail.end(), {d == ax ? s : 0, 1});
  }
  const Shape shape = a.shape();  // a copy: making nodes may move the node table
  // The last s elements placed first, over the first n - s placed after them
  // (the zeros under both are never read).
  const Array zeros = trace::constant(0, a.dtype(), "roll", loc, shape);
  Array rest = pad_node(slice(a, ax, 0, n - s, 1, loc), zeros, tail, shape, loc);
  return pad_node(slice(a, ax, n - s, n, 1, loc), rest, head, shape, loc);
}

}  // namespace

void set_debug(bool on) { debug_flag().store(on); }
bool debug() { return debug_flag().load(std::memory_order_relaxed); }

Array take(const Array& a_in, const Array& indices_in, std::optional<int> axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "take", loc);
  const Array indices = index_operand("take", trace::local(indices_in, "take", loc), loc);
  return as_op("take", loc, [&]() -> Array {
    trace::id(a, "take", loc);
    check_indices("take", indices, loc);
    if (!axis) {
      if (a.ndim() != 1) return take(reshape(a, Shape{a.size()}, loc), indices, 0, loc);
      axis = 0;
    }
    const int ax = trace::normalize_axis(*axis, a.ndim(), "take", a.shape(), a.dtype(), loc);
    const Shape s = a.shape(), is = indices.shape();  // copies: making nodes may move the node table
    const std::int64_t n = s[ax];
    std::vector<std::int64_t> out(s.begin(), s.begin() + ax);
    out.insert(out.end(), is.begin(), is.end());
    out.insert(out.end(), s.begin() + ax + 1, s.end());
    const Shape result(out);
    trace::check_array_size(result, a.dtype(), "take", loc);
    if (n == 0 && indices.size() > 0) {
      user_error("take", "cannot take " + describe(indices) + " from axis " + std::to_string(ax) + " of " +
                             describe(a) + ", which is empty", loc);
    }
    debug_check("take", indices, n, ax, loc);
    const int k = is.ndim(), post = s.ndim() - ax - 1;
    // As a gather over pre + I + post (a size-1 axis for rank-0 indices):
    // the array gets the index axes after the first as broadcast axes, the
    // indices broadcast over the array's other axes.
    const Shape gshape = k == 0 ? with_extent(s, ax, 1) : result;
    Array ga = trace::broadcast(k <= 1 ? a : reshape(a, ones_at(s, ax + 1, k - 1), loc),
                                with_extent(gshape, ax, n), loc);
    Array gi = trace::broadcast(reshape(indices, ones_at(ones_at(k == 0 ? Shape{1} : is, 0, ax), ax + std::max(k, 1), post), loc),
                                gshape, loc);
    Array r = gather_node(ga, gi, ax, loc);
    return k == 0 ? reshape(r, result, loc) : r;
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("take", loc);
}

Array take_along_axis(const Array& a_in, const Array& indices_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "take_along_axis", loc);
  const Array indices = index_operand("take_along_axis", trace::local(indices_in, "take_along_axis", loc), loc);
  return as_op("take_along_axis", loc, [&]() -> Array {
    trace::id(a, "take_along_axis", loc);
    check_indices("take_along_axis", indices, loc);
    const int ax = trace::normalize_axis(axis, a.ndim(), "take_along_axis", a.shape(), a.dtype(), loc);
    if (indices.ndim() != a.ndim()) {
      user_error("take_along_axis", "indices " + describe(indices) + " must have the rank of the array " + describe(a),
                 loc);
    }
    std::vector<std::int64_t> out;
    for (int d = 0; d < a.ndim(); ++d) {
      const std::int64_t x = a.shape()[d], i = indices.shape()[d];
      if (d == ax) {
        out.push_back(i);
      } else if (x == i || x == 1 || i == 1) {
        out.push_back(x == 1 ? i : x);
      } else {
        user_error("take_along_axis", "indices " + describe(indices) + " do not broadcast against " + describe(a) +
                                          " off axis " + std::to_string(ax), loc);
      }
    }
    const Shape result(out);
    trace::check_array_size(result, a.dtype(), "take_along_axis", loc);
    const std::int64_t n = a.shape()[ax];
    if (n == 0 && result.numel() > 0) {
      user_error("take_along_axis", "cannot take " + describe(indices) + " from axis " + std::to_string(ax) + " of " +
                                        describe(a) + ", which is empty", loc);
    }
    debug_check("take_along_axis", indices, n, ax, loc);
    Array ga = trace::broadcast(a, with_extent(result, ax, n), loc);
    return gather_node(ga, trace::broadcast(indices, result, loc), ax, loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("take_along_axis", loc);
}

Array scatter_add(const Array& a_in, const Array& indices_in, const Operand& updates_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "scatter_add", loc);
  const Array indices = index_operand("scatter_add", trace::local(indices_in, "scatter_add", loc), loc);
  const Operand updates = local_operand(updates_in, "scatter_add");
  return as_op("scatter_add", loc, [&]() -> Array {
    return scatter_take_shaped(Op::ScatterAdd, "scatter_add", a, indices, updates, axis, loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("scatter_add", loc);
}

Array scatter(const Array& a_in, const Array& indices_in, const Operand& updates_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "scatter", loc);
  const Array indices = index_operand("scatter", trace::local(indices_in, "scatter", loc), loc);
  const Operand updates = local_operand(updates_in, "scatter");
  return as_op("scatter", loc, [&]() -> Array {
    return scatter_take_shaped(Op::Scatter, "scatter", a, indices, updates, axis, loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("scatter", loc);
}

Array scatter_add_along_axis(const Array& a_in, const Array& indices_in, const Operand& updates_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "scatter_add_along_axis", loc);
  const Array indices = index_operand("scatter_add_along_axis", trace::local(indices_in, "scatter_add_along_axis", loc), loc);
  const Operand updates = local_operand(updates_in, "scatter_add_along_axis");
  return as_op("scatter_add_along_axis", loc, [&]() -> Array {
    return scatter_along(Op::ScatterAdd, "scatter_add_along_axis", a, indices, updates, axis, loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("scatter_add_along_axis", loc);
}

Array put_along_axis(const Array& a_in, const Array& indices_in, const Operand& values_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "put_along_axis", loc);
  const Array indices = index_operand("put_along_axis", trace::local(indices_in, "put_along_axis", loc), loc);
  const Operand values = local_operand(values_in, "put_along_axis");
  return as_op("put_along_axis", loc, [&]() -> Array {
    return scatter_along(Op::Scatter, "put_along_axis", a, indices, values, axis, loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("put_along_axis", loc);
}

Array slice_update(const Array& a_in, std::vector<Slice> slices, const Operand& values_in, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "slice_update", loc);
  const Operand values = local_operand(values_in, "slice_update");
  return as_op("slice_update", loc, [&]() -> Array {
    return update_slice(a, slices, values, false, "slice_update", loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("slice_update", loc);
}

Array slice_add(const Array& a_in, std::vector<Slice> slices, const Operand& values_in, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "slice_add", loc);
  const Operand values = local_operand(values_in, "slice_add");
  return as_op("slice_add", loc, [&]() -> Array {
    return update_slice(a, slices, values, true, "slice_add", loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("slice_add", loc);
}

Array pad(const Array& a_in, std::vector<PadWidth> widths, PadMode mode, Scalar value, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "pad", loc);
  return as_op("pad", loc, [&]() -> Array {
    trace::id(a, "pad", loc);
    const int nd = a.ndim();
    if (widths.size() == 1 && nd != 1) widths.assign(static_cast<std::size_t>(nd), widths[0]);
    if (static_cast<int>(widths.size()) != nd && !(nd == 0 && widths.empty())) {
      user_error("pad", std::to_string(widths.size()) + " widths given for " + describe(a) +
                            " (one per axis, or one for all)", loc);
    }
    std::vector<std::int64_t> out, ints;
    bool any = false;
    for (int d = 0; d < nd; ++d) {
      const PadWidth& w = widths[static_cast<std::size_t>(d)];
      if (w.before < 0 || w.after < 0) {
        user_error("pad", "negative width (" + std::to_string(w.before) + ", " + std::to_string(w.after) +
                              ") for axis " + std::to_string(d), loc);
      }
      const std::int64_t n = a.shape()[d];
      std::int64_t e = n;
      if (__builtin_add_overflow(e, w.before, &e) || __builtin_add_overflow(e, w.after, &e)) {
        user_error("pad", "the padded extent of axis " + std::to_string(d) + " overflows int64", loc);
      }
      if (mode != PadMode::constant && n == 0 && (w.before > 0 || w.after > 0)) {
        user_error("pad", std::string("cannot pad axis ") + std::to_string(d) + " of " + describe(a) +
                              " in mode " + (mode == PadMode::edge ? "edge" : "reflect") + ": the axis is empty", loc);
      }
      any |= w.before > 0 || w.after > 0;
      out.push_back(e);
      ints.insert(ints.end(), {w.before, 1});
    }
    const Shape result(out);
    trace::check_array_size(result, a.dtype(), "pad", loc);
    Array fill = trace::constant(value, a.dtype(), "pad", loc);  // checks the value fits
    if (!any) return a;
    if (mode == PadMode::constant) return pad_node(a, trace::broadcast(fill, result, loc), ints, result, loc);
    // edge / reflect, one padded axis after another. Edge, and reflect by
    // less than the axis: pads of slices (the edge element broadcast, the
    // reflected run walked backwards), which lower to masked loads that the
    // kernel splits into plain loops (jit/llvm/codegen.cpp, range_split).
    // Reflect by more (it repeats with period 2(n - 1)): a gather with
    // indices computed from the position (in range by construction, so
    // never checked).
    Array r = a;
    for (int d = 0; d < nd; ++d) {
      const PadWidth& w = widths[static_cast<std::size_t>(d)];
      if (w.before == 0 && w.after == 0) continue;
      const std::int64_t n = a.shape()[d];
      const Shape rshape = r.shape();  // a copy: making nodes may move the node table
      const Shape wide = with_extent(rshape, d, result[d]);
      std::vector<std::int64_t> at(2 * static_cast<std::size_t>(nd), 0);
      for (int e = 0; e < nd; ++e) at[2 * static_cast<std::size_t>(e) + 1] = 1;
      auto placed_at = [&](std::int64_t start) {
        std::vector<std::int64_t> v = at;
        v[2 * static_cast<std::size_t>(d)] = start;
        return v;
      };
      if (mode == PadMode::edge || n == 1) {
        // [0, before + n): the first element; the rest the last; r over both.
        const Array first = trace::broadcast(slice(r, d, 0, 1, 1, loc), with_extent(rshape, d, w.before + n), loc);
        const Array last = trace::broadcast(slice(r, d, n - 1, n, 1, loc), wide, loc);
        r = pad_node(r, pad_node(first, last, placed_at(0), wide, loc), placed_at(w.before), wide, loc);
        continue;
      }
      if (w.before < n && w.after < n) {
        // before: r[before], ..., r[1]; after: r[n - 2], ..., r[n - 1 - after]
        // (the zeros under them are never read).
        Array fill = trace::broadcast(trace::constant(0, r.dtype(), "pad", loc), wide, loc);
        if (w.before > 0) fill = pad_node(slice(r, d, w.before, 0, -1, loc), fill, placed_at(0), wide, loc);
        if (w.after > 0) {  // (from the end: at other extents aj::compile takes the same run)
          const std::optional<std::int64_t> stop = w.after == n - 1 ? std::nullopt : std::optional<std::int64_t>(-2 - w.after);
          fill = pad_node(slice(r, d, -2, stop, -1, loc), fill, placed_at(w.before + n), wide, loc);
        }
        r = pad_node(r, fill, placed_at(w.before), wide, loc);
        continue;
      }
      Array q = arange(result[d], DType::i64, loc) - w.before;
      Array i;
      if (mode == PadMode::edge || n == 1) {
        i = clip(Operand(q, loc), 0, n - 1);
      } else {  // period 2(n - 1): 0 1 .. n-1 n-2 .. 1
        const std::int64_t period = 2 * (n - 1);
        Array m = Operand(q, loc) % period;
        i = where(Operand(m < n, loc), Operand(m, loc), period - m);
      }
      std::vector<std::int64_t> col(static_cast<std::size_t>(nd), 1);
      col[static_cast<std::size_t>(d)] = result[d];
      const Shape gshape = with_extent(r.shape(), d, result[d]);
      r = gather_node(r, trace::broadcast(reshape(i, Shape(col), loc), gshape, loc), d, loc);
    }
    return r;
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("pad", loc);
}

Array roll(const Array& a_in, std::int64_t shift, std::optional<int> axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "roll", loc);
  return as_op("roll", loc, [&]() -> Array {
    trace::id(a, "roll", loc);
    if (!axis) {
      const Shape shape = a.shape();
      return reshape(roll_axis(reshape(a, Shape{a.size()}, loc), shift, 0, loc), shape, loc);
    }
    const int ax = trace::normalize_axis(*axis, a.ndim(), "roll", a.shape(), a.dtype(), loc);
    return roll_axis(a, shift, ax, loc);
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("roll", loc);
}

Array roll(const Array& a_in, std::vector<std::int64_t> shifts, std::vector<int> axes, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "roll", loc);
  return as_op("roll", loc, [&]() -> Array {
    trace::id(a, "roll", loc);
    if (shifts.size() != axes.size()) {
      user_error("roll", std::to_string(shifts.size()) + " shifts for " + std::to_string(axes.size()) + " axes", loc);
    }
    // Repeated axes add up (NumPy); a shift is taken modulo the extent.
    std::vector<std::int64_t> total(static_cast<std::size_t>(a.ndim()), 0);
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const int ax = trace::normalize_axis(axes[k], a.ndim(), "roll", a.shape(), a.dtype(), loc);
      const std::int64_t n = a.shape()[ax];
      if (n > 0) total[static_cast<std::size_t>(ax)] = (total[static_cast<std::size_t>(ax)] + shifts[k] % n) % n;
    }
    Array r = a;
    for (int d = 0; d < a.ndim(); ++d) r = roll_axis(r, total[static_cast<std::size_t>(d)], d, loc);
    return r;
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("roll", loc);
}

Array one_hot(const Array& labels_in, std::int64_t num_classes, DType dtype, Loc loc) try {
  trace::Scope scope;
  const Array labels = index_operand("one_hot", trace::local(labels_in, "one_hot", loc), loc);
  return as_op("one_hot", loc, [&]() -> Array {
    check_indices("one_hot", labels, loc);
    if (num_classes < 0) user_error("one_hot", "num_classes " + std::to_string(num_classes) + " is negative", loc);
    std::vector<std::int64_t> out = labels.shape().dims();
    out.push_back(num_classes);
    trace::check_array_size(Shape(out), dtype, "one_hot", loc);
    Array classes = arange(num_classes, labels.dtype(), loc);
    Array eq = Operand(expand_dims(labels, -1, loc), loc) == Operand(classes, loc);
    return where(Operand(eq, loc), Operand(trace::constant(1, dtype, "one_hot", loc), loc),
                 Operand(trace::constant(0, dtype, "one_hot", loc), loc));
  });
} catch (const std::bad_alloc&) {
  detail::out_of_memory("one_hot", loc);
}

}  // namespace aj

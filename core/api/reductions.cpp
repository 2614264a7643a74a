// Reductions: axis checks, result dtypes (NumPy's), keepdims as a reshape.
#include <algorithm>
#include <new>
#include <string>

#include "core/api/observer.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

// Sorted, unique, non-negative axes; throws on duplicates or out-of-range axes.
std::vector<std::int64_t> resolve_axes(const Array& a, const Axes& axes, const char* op,
                                       const Loc& loc) {
  std::vector<std::int64_t> out;
  const int nd = a.ndim();
  if (axes.is_all()) {
    for (int i = 0; i < nd; ++i) out.push_back(i);
    return out;
  }
  for (int ax : axes.list()) {
    out.push_back(trace::normalize_axis(ax, nd, op, a.shape(), a.dtype(), loc));
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    user_error(op, "repeated axis in the axes of a reduction over " + describe(a), loc);
  }
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<std::int64_t>& axes, bool keepdims) {
  std::vector<std::int64_t> dims;
  for (int i = 0; i < s.ndim(); ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) dims.push_back(s[i]);
    else if (keepdims) dims.push_back(1);
  }
  return Shape(std::move(dims));
}

// `input` by value: a.shape() refers into the node table, which tracing the
// reduction node (an argument evaluated in unspecified order) may reallocate.
Array keep(const Array& r, Shape input, const std::vector<std::int64_t>& axes,
           bool keepdims, const Loc& loc) {
  if (!keepdims) return r;
  return reshape(r, reduced_shape(input, axes, true), loc);
}

// The reduction node itself; `x` already has the accumulation dtype.
Array reduce_node(Op op, const Array& x, const std::vector<std::int64_t>& axes, DType out,
                  const Loc& loc) {
  if (axes.empty()) return trace::cast(x, out, loc);
  Node n;
  n.op = op;
  n.dtype = out;
  n.shape = reduced_shape(x.shape(), axes, false);
  n.ints = axes;
  n.inputs = {x.node_id()};
  return trace::make(std::move(n), loc);
}

std::int64_t reduced_count(const Shape& s, const std::vector<std::int64_t>& axes) {
  std::int64_t c = 1;
  for (auto ax : axes) c *= s[static_cast<int>(ax)];
  return c;
}

// max/min/argmax/argmin have no identity: reducing an empty extent is an
// error (as NumPy), caught here at trace time. Also when the result is empty
// too (max over axis 0 of a [0, 0] array): the rule does not depend on the
// other axes.
void check_nonempty(const Array& a, const std::vector<std::int64_t>& axes, const char* op,
                    const Loc& loc) {
  if (reduced_count(a.shape(), axes) == 0) {
    user_error(op, "reduction over an empty axis of " + describe(a) +
                       " has no identity (use a sum, or check the size first)", loc);
  }
}

Array reduce(Op op, const Array& a_in, const Axes& axes_in, bool keepdims, const Loc& loc) try {
  trace::Scope scope;
  const char* name = op_name(op);
  const Array& a = trace::local(a_in, name, loc);
  auto axes = resolve_axes(a, axes_in, name, loc);
  DType t = a.dtype();
  Array x = a;
  DType out = t;
  switch (op) {
    case Op::Sum:
    case Op::Prod:
      out = trace::sum_dtype(t);
      trace::check_array_size(a.shape(), out, name, loc);  // the widened copy it reads
      x = trace::cast(a, out, loc);
      break;
    case Op::ReduceMax:
    case Op::ReduceMin:
      check_nonempty(a, axes, name, loc);
      break;
    case Op::All:
    case Op::Any:
      out = DType::bool_;
      x = trace::cast(a, DType::bool_, loc);
      break;
    case Op::ArgMax:
    case Op::ArgMin:  // arg_reduce
    AJ_CASES_OUTSIDE(Reduce) internal_error(std::string("reduce() called with ") + name);
  }
  return keep(reduce_node(op, x, axes, out, loc), a.shape(), axes, keepdims, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op_name(op), loc);
}

Array arg_reduce(Op op, const Array& a_in, std::optional<int> axis, bool keepdims, const Loc& loc) try {
  trace::Scope scope;
  const char* name = op_name(op);
  const Array& a = trace::local(a_in, name, loc);
  if (!axis) {
    if (a.size() == 0) {
      user_error(name, "reduction over an empty array " + describe(a) +
                           " has no identity (check the size first)", loc);
    }
    Array flat = reshape(a, Shape{a.size()}, loc);
    Array r = arg_reduce(op, flat, 0, false, loc);
    if (!keepdims) return r;
    return reshape(r, Shape(std::vector<std::int64_t>(static_cast<std::size_t>(a.ndim()), 1)), loc);
  }
  if (a.ndim() == 0) {
    user_error(name, "needs an array of rank >= 1 when an axis is given, got " + describe(a), loc);
  }
  int ax = trace::normalize_axis(*axis, a.ndim(), name, a.shape(), a.dtype(), loc);
  std::vector<std::int64_t> axes{ax};
  check_nonempty(a, axes, name, loc);
  Node n;
  n.op = op;
  n.dtype = DType::i64;
  n.shape = reduced_shape(a.shape(), axes, false);
  n.ints = axes;
  n.inputs = {a.node_id()};
  return keep(trace::make(std::move(n), loc), a.shape(), axes, keepdims, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op_name(op), loc);
}

}  // namespace

Array sum(const Array& a, Axes axes, bool keepdims, Loc loc) {
  return reduce(Op::Sum, a, axes, keepdims, loc);
}
Array prod(const Array& a, Axes axes, bool keepdims, Loc loc) {
  return reduce(Op::Prod, a, axes, keepdims, loc);
}
Array max(const Array& a, Axes axes, bool keepdims, Loc loc) {
  return reduce(Op::ReduceMax, a, axes, keepdims, loc);
}
Array min(const Array& a, Axes axes, bool keepdims, Loc loc) {
  return reduce(Op::ReduceMin, a, axes, keepdims, loc);
}
Array all(const Array& a, Axes axes, bool keepdims, Loc loc) {
  return reduce(Op::All, a, axes, keepdims, loc);
}
Array any(const Array& a, Axes axes, bool keepdims, Loc loc) {
  return reduce(Op::Any, a, axes, keepdims, loc);
}

// mean = sum / count in the float type (ints and bool average in f64). The
// mean of an empty axis is 0/0 = NaN, as NumPy.
Array mean(const Array& a_in, Axes axes_in, bool keepdims, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "mean", loc);
  auto axes = resolve_axes(a, axes_in, "mean", loc);
  DType t = is_float(a.dtype()) ? a.dtype() : DType::f64;
  trace::check_array_size(a.shape(), t, "mean", loc);
  Array x = trace::cast(a, t, loc);
  Array s = reduce_node(Op::Sum, x, axes, t, loc);
  auto count = static_cast<double>(reduced_count(a.shape(), axes));
  // The divisor is made from an extent: aj::compile's templates follow it.
  const Array c = trace::constant(Scalar(count), t, "mean", loc);
  trace::report_extent_constant(c.node_id());
  Array m = divide(Operand(s, loc), Operand(c, loc));
  return keep(m, a.shape(), axes, keepdims, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("mean", loc);
}

Array argmax(const Array& a, std::optional<int> axis, bool keepdims, Loc loc) {
  return arg_reduce(Op::ArgMax, a, axis, keepdims, loc);
}
Array argmin(const Array& a, std::optional<int> axis, bool keepdims, Loc loc) {
  return arg_reduce(Op::ArgMin, a, axis, keepdims, loc);
}

DType trace::sum_dtype(DType t) {
  if (itemsize(t) >= 8) return t;
  switch (dtype_kind(t)) {
    case DTypeKind::Bool:
    case DTypeKind::Signed: return DType::i64;
    case DTypeKind::Unsigned:
      for (DType u : kAllDTypes) {
        if (dtype_kind(u) == DTypeKind::Unsigned && itemsize(u) == 8) return u;
      }
      return DType::i64;
    case DTypeKind::Float: return t;
  }
  internal_error(std::string("sum_dtype: dtype ") + dtype_name(t));
}

}  // namespace aj

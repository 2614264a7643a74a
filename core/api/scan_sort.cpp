// Scans (a Scan-category node: a kernel walks its axis as a reduction does)
// and sorting (library steps): axis checks, dtypes, flattening.
#include "arrayjit/scan_sort.hpp"

#include <new>
#include <vector>
#include <string>

#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

Array scan(Op op, const Array& a_in, std::optional<int> axis, std::optional<DType> dtype, const Loc& loc) try {
  trace::Scope scope;
  const char* name = op_name(op);
  const Array& a = trace::local(a_in, name, loc);
  if (dtype && *dtype == DType::bool_) {
    user_error(name, "does not accumulate in bool (" + describe(a) +
                         "); give an integer or float dtype, or use any/all", loc);
  }
  if (!axis) {
    const Array flat = reshape(a, Shape{a.size()}, loc);
    return scan(op, flat, 0, dtype, loc);
  }
  if (a.ndim() == 0) {
    user_error(name, "needs an array of rank >= 1 when an axis is given, got " + describe(a) +
                         " (leave the axis out to scan the flattened array)", loc);
  }
  const int ax = trace::normalize_axis(*axis, a.ndim(), name, a.shape(), a.dtype(), loc);
  DType t = dtype.value_or(a.dtype());
  if (!dtype && (op == Op::CumSum || op == Op::CumProd)) t = trace::sum_dtype(t);  // as sum
  // logcumsumexp: of floats (integers and bool in f64, as NumPy's float
  // functions); halves run in f32, each result rounded once.
  const bool half = is_half(t);
  if (op == Op::LogCumSumExp && !is_float(t)) t = DType::f64;
  if (op == Op::LogCumSumExp && half) t = DType::f32;
  trace::check_array_size(a.shape(), t, name, loc);  // the converted copy it reads
  const Array x = trace::cast(a, t, loc);
  Node n;
  n.op = op;
  n.dtype = t;
  n.shape = a.shape();
  n.ints = {ax};
  n.inputs = {x.node_id()};
  const Array r = trace::make(std::move(n), loc);
  return half ? trace::cast(r, a.dtype(), loc) : r;
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op_name(op), loc);
}

// A library node over one axis of `a`: Sort, ArgSort (k < 0), TopK, ArgTopK.
Array sort_node(Op op, const Array& a, int axis, std::int64_t k, const Loc& loc) {
  Node n;
  n.op = op;
  n.dtype = op == Op::ArgSort || op == Op::ArgTopK ? DType::i64 : a.dtype();
  n.shape = a.shape();
  n.i0 = axis;
  if (k >= 0) {
    std::vector<std::int64_t> dims = a.shape().dims();
    dims[static_cast<std::size_t>(axis)] = k;
    n.shape = Shape(std::move(dims));
    n.i1 = k;
  }
  n.inputs = {a.node_id()};
  return trace::make(std::move(n), loc);
}

int sort_axis(const Array& a, int axis, const char* name, const Loc& loc) {
  trace::own_node(a, name, loc);
  if (a.ndim() == 0) user_error(name, "cannot sort a rank-0 array " + describe(a), loc);
  return trace::normalize_axis(axis, a.ndim(), name, a.shape(), a.dtype(), loc);
}

}  // namespace

Array cumsum(const Array& a, std::optional<int> axis, std::optional<DType> dtype, Loc loc) {
  return scan(Op::CumSum, a, axis, dtype, loc);
}
Array cumprod(const Array& a, std::optional<int> axis, std::optional<DType> dtype, Loc loc) {
  return scan(Op::CumProd, a, axis, dtype, loc);
}

Array cummax(const Array& a, std::optional<int> axis, Loc loc) { return scan(Op::CumMax, a, axis, std::nullopt, loc); }
Array cummin(const Array& a, std::optional<int> axis, Loc loc) { return scan(Op::CumMin, a, axis, std::nullopt, loc); }
Array logcumsumexp(const Array& a, std::optional<int> axis, Loc loc) {
  return scan(Op::LogCumSumExp, a, axis, std::nullopt, loc);
}

Array cumulative_sum(const Array& a, std::optional<int> axis, std::optional<DType> dtype, bool include_initial,
                     Loc loc) {
  if (!axis && a.ndim(loc) > 1) {
    user_error("cumulative_sum", "needs an axis for " + trace::describe(a) + " (it sums along one axis)", loc);
  }
  Array r = cumsum(a, axis, dtype, loc);
  if (!include_initial) return r;
  const int ax = axis ? trace::normalize_axis(*axis, r.ndim(), "cumulative_sum", r.shape(), r.dtype(), loc) : 0;
  std::vector<std::int64_t> dims = r.shape().dims();
  dims[static_cast<std::size_t>(ax)] = 1;
  return concatenate({zeros(Shape(std::move(dims)), r.dtype(), loc), r}, ax, loc);
}

Array sort(const Array& a_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "sort", loc);
  const int ax = sort_axis(a, axis, "sort", loc);
  return sort_node(Op::Sort, a, ax, -1, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("sort", loc);
}

Array argsort(const Array& a_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "argsort", loc);
  const int ax = sort_axis(a, axis, "argsort", loc);
  return sort_node(Op::ArgSort, a, ax, -1, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("argsort", loc);
}

namespace {
// partition / argpartition: each kth in [-n, n) of the axis's extent n
// (n == 0 has none, as NumPy), checked; then the line sorted.
Array partition_node(Op op, const Array& a_in, const std::vector<std::int64_t>& kth, int axis, const char* name,
                     const Loc& loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, name, loc);
  const int ax = sort_axis(a, axis, name, loc);
  const std::int64_t extent = a.shape()[ax];
  for (std::int64_t k : kth) {
    if (k < -extent || k >= extent) {
      user_error(name, "kth = " + std::to_string(k) + " is outside [" + std::to_string(-extent) + ", " +
                           std::to_string(extent) + "), the positions of axis " + std::to_string(axis) + " of " +
                           describe(a), loc);
    }
  }
  return sort_node(op, a, ax, -1, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory(name, loc);
}
}  // namespace

Array partition(const Array& a, std::int64_t kth, int axis, Loc loc) {
  return partition_node(Op::Sort, a, {kth}, axis, "partition", loc);
}
Array partition(const Array& a, const std::vector<std::int64_t>& kth, int axis, Loc loc) {
  return partition_node(Op::Sort, a, kth, axis, "partition", loc);
}
Array argpartition(const Array& a, std::int64_t kth, int axis, Loc loc) {
  return partition_node(Op::ArgSort, a, {kth}, axis, "argpartition", loc);
}
Array argpartition(const Array& a, const std::vector<std::int64_t>& kth, int axis, Loc loc) {
  return partition_node(Op::ArgSort, a, kth, axis, "argpartition", loc);
}

TopK topk(const Array& a_in, std::int64_t k, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "topk", loc);
  const int ax = sort_axis(a, axis, "topk", loc);
  const std::int64_t extent = a.shape()[ax];
  if (k < 0 || k > extent) {
    user_error("topk", "k = " + std::to_string(k) + " is outside [0, " + std::to_string(extent) +
                           "], the extent of axis " + std::to_string(axis) + " of " + describe(a), loc);
  }
  TopK r;
  r.values = sort_node(Op::TopK, a, ax, k, loc);
  r.indices = sort_node(Op::ArgTopK, a, ax, k, loc);
  return r;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("topk", loc);
}

}  // namespace aj

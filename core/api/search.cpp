// Searching and data-dependent shapes (arrayjit/search.hpp), composed of
// comparisons, sums, cumsum, sort and scatters. A result whose length
// depends on the values is compacted by one scatter: each kept element's
// slot is the running count of kept elements before it, and every other
// element aims past the end, where a scatter drops it. The scatters are
// made as graph nodes here (as autodiff's rules make them), with slots
// always in range or exactly one past: take/scatter's AJ_DEBUG check would
// evaluate them, which a compiled function's trace refuses.
#include "arrayjit/search.hpp"

#include <string>
#include <vector>

#include "arrayjit/scan_sort.hpp"
#include "arrayjit/shape_functions.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

Operand o(const Array& a, const Loc& loc) { return Operand(a, loc); }

// scatter / scatter_add along axis 0 of a 1-d target: idx and upd of one shape.
Array scatter_1d(Op op, const Array& target, const Array& idx, const Array& upd, const Loc& loc) {
  Node n;
  n.op = op;
  n.dtype = target.dtype();
  n.shape = target.shape();
  n.i0 = 0;
  n.inputs = {target.node_id(), idx.node_id(), upd.node_id()};
  return trace::make(std::move(n), loc);
}

Array flat(const Array& a, const Loc& loc) { return reshape(a, Shape{a.size()}, loc); }

// x < y in NumPy's sort order: NaN after every number (equal to NaN).
Array sort_less(const Array& x, const Array& y, const Loc& loc) {
  const Array lt = o(x, loc) < o(y, loc);
  if (!is_float(x.dtype())) return lt;
  return o(lt, loc) || o(o(isnan(o(y, loc)), loc) && o(logical_not(o(isnan(o(x, loc)), loc)), loc), loc);
}

void check_size(std::optional<std::int64_t> size, const char* op, const Loc& loc) {
  if (size && *size < 0) user_error(op, "size must not be negative, got " + std::to_string(*size), loc);
}

// How many elements `keep` holds: evaluated (the eager form's sync point).
std::int64_t count_of(const Array& keep, const char* op, const Loc& loc) {
  try {
    return sum(keep, Axes::all(), false, loc).item<std::int64_t>(loc);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::user) throw;
    user_error(op, std::string("evaluates its input for the result's length (give size = ... to trace it without "
                               "evaluating, as inside aj::compile): ") + e.what(), loc);
  }
}

// The elements of the 1-d `values` where the 1-d `keep` holds, in order,
// then `fill`: exactly `size` of them.
Array compact(const Array& values, const Array& keep, std::int64_t size, const Scalar& fill, const Loc& loc) {
  const Array target = full(Shape{size}, fill, values.dtype(), loc);
  if (size == 0 || values.size() == 0) return target;
  const Array before = cumsum(keep, 0, DType::i64, loc);
  const Array slot = where(o(keep, loc), o(o(before, loc) - Operand(std::int64_t{1}, loc), loc), Operand(size, loc));
  return scatter_1d(Op::Scatter, target, slot, values, loc);
}

// The row-major positions of the nonzero elements of x as [size] i64 (past
// the count: `fill`), and the count (rank 0, lazy).
Array nonzero_flat(const Array& x, std::optional<std::int64_t> size, std::int64_t fill, const char* op, const Loc& loc) {
  const Array keep = x.dtype() == DType::bool_ ? flat(x, loc) : flat(o(x, loc) != Operand(0, loc), loc);
  const std::int64_t s = size ? *size : count_of(keep, op, loc);
  const Array pos = compact(arange(keep.size(), DType::i64, loc), keep, s, 0, loc);
  const Array valid = o(arange(s, DType::i64, loc), loc) < o(sum(keep, Axes::all(), false, loc), loc);
  return where(o(valid, loc), o(pos, loc), Operand(fill, loc));
}

// The position of each flat index along each axis of `shape` (fill kept).
std::vector<Array> unravel(const Array& pos, const Shape& shape, std::int64_t fill, const Loc& loc) {
  std::vector<Array> r;
  const Array valid = o(pos, loc) != Operand(fill, loc);
  std::int64_t stride = 1;
  std::vector<std::int64_t> strides(static_cast<std::size_t>(shape.ndim()));
  for (int k = shape.ndim(); k-- > 0;) {
    strides[static_cast<std::size_t>(k)] = stride;
    stride *= shape[k];
  }
  for (int k = 0; k < shape.ndim(); ++k) {
    const Array c = floor_divide(o(pos, loc), Operand(strides[static_cast<std::size_t>(k)], loc));
    const Array at = mod(o(c, loc), Operand(shape[k], loc));
    // With one axis the position is the flat index itself (fill included).
    r.push_back(shape.ndim() == 1 ? pos : where(o(valid, loc), o(at, loc), Operand(fill, loc)));
  }
  return r;
}

Array searchsorted_impl(const Array& a_in, const Array& v_in, Side side, const Loc& loc) {
  const DType t = promote_types(a_in.dtype(), v_in.dtype());
  const Array a = a_in.astype(t, loc), v = v_in.astype(t, loc);
  const std::int64_t n = a.size(), m = v.size();
  if (n == 0 || m == 0) return zeros(v.shape(), DType::i64, loc);
  if (n <= 64) {  // every element of a against each of v: one fused kernel
    std::vector<std::int64_t> dims = v.shape().dims();
    dims.push_back(1);
    const Array ve = reshape(v, Shape(dims), loc);
    const Array below = side == Side::left ? sort_less(broadcast_to(a, Shape{n}, loc), ve, loc)
                                           : logical_not(o(sort_less(ve, a, loc), loc));
    return sum(below, -1, false, loc);
  }
  // One stable sort of v and a together: v first for `left` (an element of v
  // sorts before the equal ones of a), a first for `right`; the running count
  // of a's elements at each of v's places is its position.
  const Array vf = flat(v, loc);
  const bool left = side == Side::left;
  const Array order = argsort(concatenate(left ? std::vector<Array>{vf, a} : std::vector<Array>{a, vf}, 0, loc), 0, loc);
  const Array from_a = left ? o(order, loc) >= Operand(m, loc) : o(order, loc) < Operand(n, loc);
  const Array count = cumsum(from_a, 0, DType::i64, loc);
  const Array at = left ? order : o(order, loc) - Operand(n, loc);
  const Array slot = where(o(from_a, loc), Operand(m, loc), o(at, loc));  // a's own places: dropped
  return reshape(scatter_1d(Op::Scatter, zeros(Shape{m}, DType::i64, loc), slot, count, loc), v.shape(), loc);
}

}  // namespace

Array searchsorted(const Array& a_in, const Operand& v_op, Side side, Loc loc) {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "searchsorted", loc);
  if (a.ndim() != 1) user_error("searchsorted", "needs a 1-d sorted array, got " + describe(a), loc);
  const Array v = trace::operand_array(v_op, "searchsorted");
  return searchsorted_impl(a, v, side, loc);
}

Array digitize(const Array& x_in, const Array& bins_in, bool right, Loc loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "digitize", loc);
  const Array& bins = trace::local(bins_in, "digitize", loc);
  if (bins.ndim() != 1) user_error("digitize", "needs 1-d bins, got " + describe(bins), loc);
  const Side side = right ? Side::left : Side::right;
  const Array inc = searchsorted_impl(bins, x, side, loc);
  const std::int64_t n = bins.size();
  if (n <= 1) return inc;
  // Decreasing bins (the last below the first): NumPy's n - searchsorted of
  // the reversed bins, with the same side.
  const Array rev = slice(bins, 0, std::nullopt, std::nullopt, -1, loc);
  const Array dec = Operand(n, loc) - o(searchsorted_impl(rev, x, side, loc), loc);
  const Array first = reshape(slice(bins, 0, 0, 1, 1, loc), Shape{}, loc);
  const Array last = reshape(slice(bins, 0, n - 1, n, 1, loc), Shape{}, loc);
  return where(o(o(last, loc) < o(first, loc), loc), o(dec, loc), o(inc, loc));
}

Array bincount(const Array& x_in, const std::optional<Array>& weights_in, std::int64_t minlength,
               std::optional<std::int64_t> length, Loc loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "bincount", loc);
  if (x.ndim() != 1) user_error("bincount", "needs a 1-d array of counts' indices, got " + describe(x), loc);
  if (x.dtype() != DType::bool_ && !is_integer(x.dtype())) {
    user_error("bincount", "counts integers (or bool), got " + describe(x), loc);
  }
  if (minlength < 0) user_error("bincount", "minlength must not be negative, got " + std::to_string(minlength), loc);
  if (length && *length < 0) user_error("bincount", "length must not be negative, got " + std::to_string(*length), loc);
  std::optional<Array> w;
  if (weights_in) {
    w = trace::local(*weights_in, "bincount", loc);
    if (w->shape() != x.shape()) {
      user_error("bincount", "needs weights of x's shape " + x.shape().str() + ", got " + describe(*w), loc);
    }
  }
  const Array idx = x.astype(DType::i64, loc);
  std::int64_t n = length.value_or(minlength);
  if (!length && x.size() > 0) {
    std::int64_t lo = 0, hi = 0;
    try {
      lo = min(idx, Axes::all(), false, loc).item<std::int64_t>(loc);
      hi = max(idx, Axes::all(), false, loc).item<std::int64_t>(loc);
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::user) throw;
      user_error("bincount", std::string("evaluates x for the result's length (give length = ... to trace it "
                                         "without evaluating, as inside aj::compile): ") + e.what(), loc);
    }
    if (lo < 0) user_error("bincount", "x holds a negative value (" + std::to_string(lo) + "), as NumPy refuses", loc);
    n = std::max(n, hi + 1);
  }
  const DType t = w ? DType::f64 : DType::i64;
  const Array target = zeros(Shape{n}, t, loc);
  if (n == 0 || x.size() == 0) return target;
  const Array in = o(o(idx, loc) >= Operand(std::int64_t{0}, loc), loc) && o(o(idx, loc) < Operand(n, loc), loc);
  const Array slot = where(o(in, loc), o(idx, loc), Operand(n, loc));  // outside [0, n): dropped
  const Array upd = w ? w->astype(DType::f64, loc) : ones(x.shape(), DType::i64, loc);
  return scatter_1d(Op::ScatterAdd, target, slot, upd, loc);
}

std::vector<Array> nonzero(const Array& x_in, std::optional<std::int64_t> size, std::int64_t fill, Loc loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "nonzero", loc);
  check_size(size, "nonzero", loc);
  const Array x1 = x.ndim() == 0 ? reshape(x, Shape{1}, loc) : x;
  return unravel(nonzero_flat(x1, size, fill, "nonzero", loc), x1.shape(), fill, loc);
}

Array argwhere(const Array& x_in, std::optional<std::int64_t> size, std::int64_t fill, Loc loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "argwhere", loc);
  check_size(size, "argwhere", loc);
  const Array pos = nonzero_flat(x.ndim() == 0 ? reshape(x, Shape{1}, loc) : x, size, fill, "argwhere", loc);
  if (x.ndim() == 0) {  // NumPy: [count, 0]
    return reshape(slice(pos, 0, 0, 0, 1, loc), Shape{pos.size(), 0}, loc);
  }
  return stack(unravel(pos, x.shape(), fill, loc), 1, loc);
}

Array unique(const Array& x_in, std::optional<std::int64_t> size, Scalar fill, Loc loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "unique", loc);
  check_size(size, "unique", loc);
  const Array f = flat(x, loc);
  const std::int64_t n = f.size();
  if (n == 0) return full(Shape{size.value_or(0)}, fill, x.dtype(), loc);
  const Array s = sort(f, 0, loc);
  // The first of each run of equal values (NaN equal to NaN).
  const Array a = slice(s, 0, 1, n, 1, loc), b = slice(s, 0, 0, n - 1, 1, loc);
  Array differs = o(a, loc) != o(b, loc);
  if (is_float(x.dtype())) {
    differs = o(differs, loc) && o(logical_not(o(o(isnan(o(a, loc)), loc) && o(isnan(o(b, loc)), loc), loc)), loc);
  }
  const Array first = concatenate({ones(Shape{1}, DType::bool_, loc), differs}, 0, loc);
  const std::int64_t count = size ? *size : count_of(first, "unique", loc);
  return compact(s, first, count, fill, loc);
}

Array masked_select(const Array& x_in, const Array& mask_in, std::optional<std::int64_t> size, Scalar fill, Loc loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "masked_select", loc);
  const Array& mask = trace::local(mask_in, "masked_select", loc);
  if (mask.dtype() != DType::bool_) user_error("masked_select", "needs a bool mask, got " + describe(mask), loc);
  check_size(size, "masked_select", loc);
  const std::vector<Array> both = broadcast_arrays({x, mask}, loc);
  const Array keep = flat(both[1], loc);
  const std::int64_t count = size ? *size : count_of(keep, "masked_select", loc);
  return compact(flat(both[0], loc), keep, count, fill, loc);
}

}  // namespace aj

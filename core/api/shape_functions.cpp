// NumPy's shape and data-movement functions (arrayjit/shape_functions.hpp),
// each composed of views, concatenate, matmul and elementwise ops. Each
// checks its own arguments first, so a mistake names the function the user
// called, not the view it is built from.
#include "arrayjit/shape_functions.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "arrayjit/indexing.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

int axis_of(const Array& a, int axis, const char* op, const Loc& loc) {
  return trace::normalize_axis(axis, a.ndim(loc), op, a.shape(loc), a.dtype(loc), loc);
}

std::string ints(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// a with its extent-`n` axis `axis` replaced by the extents `parts` (a view).
Array split_axis(const Array& a, int axis, const std::vector<std::int64_t>& parts, const Loc& loc) {
  std::vector<std::int64_t> d = a.shape().dims();
  d.erase(d.begin() + axis);
  d.insert(d.begin() + axis, parts.begin(), parts.end());
  return reshape(a, Shape(std::move(d)), loc);
}

// The permutation that moves axis `from` to position `to`, the others in order.
std::vector<int> move_perm(int ndim, const std::vector<int>& from, const std::vector<int>& to) {
  std::vector<int> perm(static_cast<std::size_t>(ndim), -1);
  std::vector<bool> used(static_cast<std::size_t>(ndim), false);
  for (std::size_t i = 0; i < from.size(); ++i) {
    perm[static_cast<std::size_t>(to[i])] = from[i];
    used[static_cast<std::size_t>(from[i])] = true;
  }
  int next = 0;
  for (int& p : perm) {
    if (p >= 0) continue;
    while (used[static_cast<std::size_t>(next)]) ++next;
    p = next++;
  }
  return perm;
}

}  // namespace

Array flip(const Array& a, Axes axes, Loc loc) {
  const int nd = a.ndim(loc);
  std::vector<bool> flipped(static_cast<std::size_t>(nd), axes.is_all());
  if (!axes.is_all()) {
    for (int ax : axes.list()) {
      const int k = axis_of(a, ax, "flip", loc);
      if (flipped[static_cast<std::size_t>(k)]) user_error("flip", "axis " + std::to_string(ax) + " given twice", loc);
      flipped[static_cast<std::size_t>(k)] = true;
    }
  }
  std::vector<Slice> s;
  for (int i = 0; i < nd; ++i) {
    s.push_back(flipped[static_cast<std::size_t>(i)] ? Slice(std::nullopt, std::nullopt, -1) : Slice());
  }
  return nd == 0 ? a : slice(a, std::move(s), loc);
}

Array swapaxes(const Array& a, int axis1, int axis2, Loc loc) {
  const int i = axis_of(a, axis1, "swapaxes", loc), j = axis_of(a, axis2, "swapaxes", loc);
  std::vector<int> perm(static_cast<std::size_t>(a.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(j)]);
  return transpose(a, std::move(perm), loc);
}

Array moveaxis(const Array& a, std::vector<int> source, std::vector<int> destination, Loc loc) {
  if (source.size() != destination.size()) {
    user_error("moveaxis", "needs as many destinations as sources, got " + std::to_string(source.size()) + " and " +
                               std::to_string(destination.size()),
               loc);
  }
  std::vector<bool> seen_s(static_cast<std::size_t>(a.ndim(loc))), seen_d(seen_s.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    source[i] = axis_of(a, source[i], "moveaxis", loc);
    destination[i] = axis_of(a, destination[i], "moveaxis", loc);
    if (seen_s[static_cast<std::size_t>(source[i])] || seen_d[static_cast<std::size_t>(destination[i])]) {
      user_error("moveaxis", "an axis repeats among the sources or the destinations", loc);
    }
    seen_s[static_cast<std::size_t>(source[i])] = seen_d[static_cast<std::size_t>(destination[i])] = true;
  }
  return transpose(a, move_perm(a.ndim(), source, destination), loc);
}
Array moveaxis(const Array& a, int source, int destination, Loc loc) {
  return moveaxis(a, std::vector<int>{source}, std::vector<int>{destination}, loc);
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& arrays, Loc loc) {
  std::vector<const Shape*> shapes;
  std::vector<DType> dtypes;
  for (const Array& x : arrays) {
    shapes.push_back(&x.shape(loc));
    dtypes.push_back(x.dtype(loc));
  }
  const Shape common = trace::broadcast_shapes(shapes, dtypes, "broadcast_arrays", loc);
  std::vector<Array> out;
  for (const Array& x : arrays) out.push_back(broadcast_to(x, common, loc));
  return out;
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, bool ij, Loc loc) {
  const std::size_t n = xs.size();
  std::vector<std::int64_t> dims;
  for (const Array& x : xs) dims.push_back(x.size(loc));
  if (!ij && n >= 2) std::swap(dims[0], dims[1]);
  std::vector<Array> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> s(n, 1);
    const std::size_t at = !ij && n >= 2 && i < 2 ? 1 - i : i;
    s[at] = dims[at];
    out.push_back(broadcast_to(reshape(xs[i], Shape(std::move(s)), loc), Shape(dims), loc));
  }
  return out;
}

Array tile(const Array& a, std::vector<std::int64_t> reps, Loc loc) {
  for (std::int64_t r : reps) {
    if (r < 0) user_error("tile", "repetitions must not be negative, got " + ints(reps), loc);
  }
  std::vector<std::int64_t> d = a.shape(loc).dims();
  while (d.size() < reps.size()) d.insert(d.begin(), 1);
  while (reps.size() < d.size()) reps.insert(reps.begin(), 1);
  // [r0, d0, r1, d1, ...]: a broadcast of [1, d0, 1, d1, ...], then merged.
  std::vector<std::int64_t> spread, wide, merged;
  for (std::size_t i = 0; i < d.size(); ++i) {
    spread.insert(spread.end(), {1, d[i]});
    wide.insert(wide.end(), {reps[i], d[i]});
    merged.push_back(reps[i] * d[i]);
  }
  trace::check_array_size(Shape(merged), a.dtype(), "tile", loc);
  return reshape(broadcast_to(reshape(a, Shape(spread), loc), Shape(wide), loc), Shape(merged), loc);
}

Array repeat(const Array& a_in, std::int64_t repeats, std::optional<int> axis, Loc loc) {
  if (repeats < 0) user_error("repeat", "the count must not be negative, got " + std::to_string(repeats), loc);
  const Array a = axis ? a_in : reshape(a_in, Shape{-1}, loc);
  const int ax = axis_of(a, axis.value_or(0), "repeat", loc);
  const std::int64_t n = a.shape()[ax];
  // [..., n, 1, ...] broadcast to [..., n, repeats, ...], merged.
  Array col = split_axis(a, ax, {n, 1}, loc);
  std::vector<std::int64_t> wide = col.shape().dims();
  wide[static_cast<std::size_t>(ax + 1)] = repeats;
  std::vector<std::int64_t> merged = a.shape().dims();
  merged[static_cast<std::size_t>(ax)] = n * repeats;
  trace::check_array_size(Shape(merged), a.dtype(), "repeat", loc);
  return reshape(broadcast_to(col, Shape(wide), loc), Shape(merged), loc);
}

Array repeat(const Array& a_in, const std::vector<std::int64_t>& repeats, std::optional<int> axis, Loc loc) {
  if (repeats.size() == 1) return repeat(a_in, repeats[0], axis, loc);
  const Array a = axis ? a_in : reshape(a_in, Shape{-1}, loc);
  const int ax = axis_of(a, axis.value_or(0), "repeat", loc);
  const std::int64_t n = a.shape()[ax];
  if (static_cast<std::int64_t>(repeats.size()) != n) {
    user_error("repeat", "needs one count per element along the axis (" + std::to_string(n) + ") or one for all, got " +
                             std::to_string(repeats.size()),
               loc);
  }
  std::vector<std::int64_t> index;
  for (std::int64_t i = 0; i < n; ++i) {
    if (repeats[static_cast<std::size_t>(i)] < 0) user_error("repeat", "counts must not be negative", loc);
    index.insert(index.end(), static_cast<std::size_t>(repeats[static_cast<std::size_t>(i)]), i);
  }
  return take(a, from_vector(index, Shape{static_cast<std::int64_t>(index.size())}, loc), ax, loc);
}

std::vector<Array> split(const Array& a, const std::vector<std::int64_t>& indices, int axis, Loc loc) {
  const int ax = axis_of(a, axis, "split", loc);
  const std::int64_t n = a.shape()[ax];
  std::vector<Array> out;
  std::int64_t at = 0;
  for (std::size_t i = 0; i <= indices.size(); ++i) {
    // NumPy: each bound clamped to [0, n] (negative ones count from the end); a
    // bound before the previous one gives an empty piece.
    std::int64_t end = i < indices.size() ? indices[i] : n;
    if (end < 0) end += n;
    end = std::clamp<std::int64_t>(end, 0, n);
    const std::int64_t stop = std::max(end, at);
    out.push_back(slice(a, ax, at, stop, 1, loc));
    at = stop;
  }
  return out;
}

std::vector<Array> split(const Array& a, std::int64_t sections, int axis, Loc loc) {
  if (sections <= 0) user_error("split", "needs a positive number of sections, got " + std::to_string(sections), loc);
  const int ax = axis_of(a, axis, "split", loc);
  const std::int64_t n = a.shape()[ax];
  if (n % sections != 0) {
    user_error("split", "cannot split extent " + std::to_string(n) + " of axis " + std::to_string(axis) + " of " +
                            describe(a) + " into " + std::to_string(sections) +
                            " equal sections (array_split allows unequal ones)",
               loc);
  }
  return array_split(a, sections, axis, loc);
}

std::vector<Array> array_split(const Array& a, std::int64_t sections, int axis, Loc loc) {
  if (sections <= 0) {
    user_error("array_split", "needs a positive number of sections, got " + std::to_string(sections), loc);
  }
  const int ax = axis_of(a, axis, "array_split", loc);
  const std::int64_t n = a.shape()[ax], each = n / sections, extra = n % sections;
  std::vector<std::int64_t> cuts;
  std::int64_t at = 0;
  for (std::int64_t i = 0; i + 1 < sections; ++i) cuts.push_back(at += each + (i < extra ? 1 : 0));
  return split(a, cuts, ax, loc);
}

std::vector<Array> unstack(const Array& a, int axis, Loc loc) {
  const int ax = axis_of(a, axis, "unstack", loc);
  std::vector<Array> out;
  for (std::int64_t i = 0; i < a.shape()[ax]; ++i) out.push_back(squeeze(slice(a, ax, i, i + 1, 1, loc), ax, loc));
  return out;
}

namespace {
// tril / triu: a where (column - row) compares with k, over the last two axes.
Array triangle(const Array& a, std::int64_t k, bool lower, const char* op, const Loc& loc) {
  if (a.ndim(loc) < 2) user_error(op, "needs at least 2 axes, got " + describe(a), loc);
  const std::int64_t rows = a.shape()[a.ndim() - 2], cols = a.shape()[a.ndim() - 1];
  Array r = reshape(arange(0, static_cast<double>(rows), 1, DType::i64, loc), Shape{rows, 1}, loc);
  Array c = reshape(arange(0, static_cast<double>(cols), 1, DType::i64, loc), Shape{1, cols}, loc);
  Array diff = subtract(Operand(c, loc), Operand(r, loc));
  Array keep = lower ? Operand(diff, loc) <= Operand(k, loc) : Operand(diff, loc) >= Operand(k, loc);
  return where(Operand(keep, loc), Operand(a, loc), Operand(false, loc));
}
}  // namespace

Array tril(const Array& a, std::int64_t k, Loc loc) { return triangle(a, k, true, "tril", loc); }
Array triu(const Array& a, std::int64_t k, Loc loc) { return triangle(a, k, false, "triu", loc); }

Array diagonal(const Array& a, std::int64_t offset, int axis1, int axis2, Loc loc) {
  if (a.ndim(loc) < 2) user_error("diagonal", "needs at least 2 axes, got " + describe(a), loc);
  const int i = axis_of(a, axis1, "diagonal", loc), j = axis_of(a, axis2, "diagonal", loc);
  if (i == j) user_error("diagonal", "axis1 and axis2 are the same axis " + std::to_string(i), loc);
  // The two axes moved last, merged, and sliced with step cols + 1.
  Array m = moveaxis(a, {i, j}, {a.ndim() - 2, a.ndim() - 1}, loc);
  const std::int64_t rows = m.shape()[m.ndim() - 2], cols = m.shape()[m.ndim() - 1];
  const std::int64_t len = offset >= 0 ? std::max<std::int64_t>(0, std::min(rows, cols - offset))
                                       : std::max<std::int64_t>(0, std::min(rows + offset, cols));
  std::vector<std::int64_t> d = m.shape().dims();
  d.pop_back();
  d.back() = rows * cols;
  Array flat = reshape(m, Shape(d), loc);
  const std::int64_t start = len == 0 ? 0 : offset >= 0 ? offset : -offset * cols;
  return slice(flat, flat.ndim() - 1, start, start + (len == 0 ? 0 : (len - 1) * (cols + 1) + 1), cols + 1, loc);
}

Array linalg::trace(const Array& a, std::int64_t offset, int axis1, int axis2, Loc loc) {
  Array d = diagonal(a, offset, axis1, axis2, loc);
  return sum(d, -1, false, loc);
}

Array diag(const Array& a, std::int64_t k, Loc loc) {
  const int nd = a.ndim(loc);
  if (nd == 2) return diagonal(a, k, 0, 1, loc);
  if (nd != 1) user_error("diag", "needs a 1-d or 2-d array, got " + describe(a), loc);
  const std::int64_t len = a.shape()[0], ak = k < 0 ? -k : k, n = len + ak;
  // v padded with |k| zeros at the end: row i (k >= 0) or column j (k < 0)
  // reads element i (j) of it where the eye of diagonal k is set.
  Array v = ak == 0 ? a : concatenate({a, zeros(Shape{ak}, a.dtype(), loc)}, 0, loc);
  Array line = reshape(v, k >= 0 ? Shape{n, 1} : Shape{1, n}, loc);
  Array mask = eye(n, n, k, DType::bool_, loc);
  return where(Operand(mask, loc), Operand(line, loc), Operand(false, loc));
}

Array atleast_1d(const Array& a, Loc loc) { return a.ndim(loc) >= 1 ? a : reshape(a, Shape{1}, loc); }
Array atleast_2d(const Array& a, Loc loc) {
  const int nd = a.ndim(loc);
  if (nd >= 2) return a;
  return reshape(a, nd == 0 ? Shape{1, 1} : Shape{1, a.shape()[0]}, loc);
}
Array atleast_3d(const Array& a, Loc loc) {
  const int nd = a.ndim(loc);
  if (nd >= 3) return a;
  if (nd == 0) return reshape(a, Shape{1, 1, 1}, loc);
  if (nd == 1) return reshape(a, Shape{1, a.shape()[0], 1}, loc);
  return reshape(a, Shape{a.shape()[0], a.shape()[1], 1}, loc);
}

Array logspace(double start, double stop, std::int64_t num, double base, DType dtype, Loc loc) {
  Array e = linspace(start, stop, num, DType::f64, loc);
  return pow(Operand(base, loc), Operand(e, loc)).astype(dtype, loc);
}

Array outer(const Array& a, const Array& b, Loc loc) {
  Array x = reshape(a, Shape{-1, 1}, loc), y = reshape(b, Shape{1, -1}, loc);
  return multiply(Operand(x, loc), Operand(y, loc));
}

Array tensordot(const Array& a, const Array& b, std::vector<int> a_axes, std::vector<int> b_axes, Loc loc) {
  if (a_axes.size() != b_axes.size()) {
    user_error("tensordot", "needs as many axes of b as of a, got " + std::to_string(a_axes.size()) + " and " +
                                std::to_string(b_axes.size()),
               loc);
  }
  const int na = a.ndim(loc), nb = b.ndim(loc);
  std::vector<bool> ca(static_cast<std::size_t>(na)), cb(static_cast<std::size_t>(nb));
  std::int64_t k = 1;
  for (std::size_t i = 0; i < a_axes.size(); ++i) {
    a_axes[i] = axis_of(a, a_axes[i], "tensordot", loc);
    b_axes[i] = axis_of(b, b_axes[i], "tensordot", loc);
    const std::int64_t ea = a.shape()[a_axes[i]], eb = b.shape()[b_axes[i]];
    if (ea != eb || ca[static_cast<std::size_t>(a_axes[i])] || cb[static_cast<std::size_t>(b_axes[i])]) {
      user_error("tensordot", "axis " + std::to_string(a_axes[i]) + " of " + describe(a) + " and axis " +
                                  std::to_string(b_axes[i]) + " of " + describe(b) +
                                  (ea != eb ? " differ in extent" : ": an axis is summed twice"),
                 loc);
    }
    ca[static_cast<std::size_t>(a_axes[i])] = cb[static_cast<std::size_t>(b_axes[i])] = true;
    k *= ea;
  }
  // a as [free, summed], b as [summed, free]: one matmul, then the free axes back.
  std::vector<int> pa, pb = b_axes;
  std::vector<std::int64_t> out_dims;
  std::int64_t fa = 1, fb = 1;
  for (int i = 0; i < na; ++i) {
    if (ca[static_cast<std::size_t>(i)]) continue;
    pa.push_back(i);
    out_dims.push_back(a.shape()[i]);
    fa *= a.shape()[i];
  }
  pa.insert(pa.end(), a_axes.begin(), a_axes.end());
  for (int i = 0; i < nb; ++i) {
    if (cb[static_cast<std::size_t>(i)]) continue;
    pb.push_back(i);
    out_dims.push_back(b.shape()[i]);
    fb *= b.shape()[i];
  }
  Array x = reshape(transpose(a, pa, loc), Shape{fa, k}, loc);
  Array y = reshape(transpose(b, pb, loc), Shape{k, fb}, loc);
  return reshape(matmul(x, y, loc), Shape(std::move(out_dims)), loc);
}

Array tensordot(const Array& a, const Array& b, int axes, Loc loc) {
  const int na = a.ndim(loc), nb = b.ndim(loc);
  if (axes < 0 || axes > na || axes > nb) {
    user_error("tensordot", "cannot sum over " + std::to_string(axes) + " axes of " + describe(a) + " and " +
                                describe(b),
               loc);
  }
  std::vector<int> aa, ba;
  for (int i = 0; i < axes; ++i) {
    aa.push_back(na - axes + i);
    ba.push_back(i);
  }
  return tensordot(a, b, aa, ba, loc);
}

Array dot(const Array& a, const Array& b, Loc loc) {
  const int na = a.ndim(loc), nb = b.ndim(loc);
  if (na == 0 || nb == 0) return multiply(Operand(a, loc), Operand(b, loc));
  if (na <= 2 && nb <= 2) return matmul(a, b, loc);
  return tensordot(a, b, {na - 1}, {nb >= 2 ? nb - 2 : 0}, loc);
}

Array inner(const Array& a, const Array& b, Loc loc) {
  if (a.ndim(loc) == 0 || b.ndim(loc) == 0) return multiply(Operand(a, loc), Operand(b, loc));
  return tensordot(a, b, {a.ndim() - 1}, {b.ndim() - 1}, loc);
}

Array vdot(const Array& a, const Array& b, Loc loc) {
  if (a.size(loc) != b.size(loc)) {
    user_error("vdot", "needs arrays of one size, got " + describe(a) + " and " + describe(b), loc);
  }
  return matmul(reshape(a, Shape{-1}, loc), reshape(b, Shape{-1}, loc), loc);
}

Array kron(const Array& a, const Array& b, Loc loc) {
  std::vector<std::int64_t> da = a.shape(loc).dims(), db = b.shape(loc).dims();
  while (da.size() < db.size()) da.insert(da.begin(), 1);
  while (db.size() < da.size()) db.insert(db.begin(), 1);
  std::vector<std::int64_t> sa, sb, merged;
  for (std::size_t i = 0; i < da.size(); ++i) {
    sa.insert(sa.end(), {da[i], 1});
    sb.insert(sb.end(), {1, db[i]});
    merged.push_back(da[i] * db[i]);
  }
  Array p = multiply(Operand(reshape(a, Shape(sa), loc), loc), Operand(reshape(b, Shape(sb), loc), loc));
  return reshape(p, Shape(std::move(merged)), loc);
}

Array cross(const Array& a_in, const Array& b_in, int axis, Loc loc) {
  std::vector<Array> ab = broadcast_arrays({a_in, b_in}, loc);
  const Array &a = ab[0], &b = ab[1];
  const int ax = axis_of(a, axis, "cross", loc);
  const std::int64_t n = a.shape()[ax];
  if (n != 2 && n != 3) {
    user_error("cross", "needs vectors of 2 or 3 components along axis " + std::to_string(axis) + ", got " +
                            describe(a_in) + " and " + describe(b_in),
               loc);
  }
  // The components (views), kept alive here: an Operand only points at its array.
  std::vector<Array> ca, cb;
  for (std::int64_t i = 0; i < n; ++i) {
    ca.push_back(squeeze(slice(a, ax, i, i + 1, 1, loc), ax, loc));
    cb.push_back(squeeze(slice(b, ax, i, i + 1, 1, loc), ax, loc));
  }
  auto det = [&](std::size_t i, std::size_t j) {
    const Array p = multiply(Operand(ca[i], loc), Operand(cb[j], loc));
    const Array q = multiply(Operand(ca[j], loc), Operand(cb[i], loc));
    return subtract(Operand(p, loc), Operand(q, loc));
  };
  if (n == 2) return det(0, 1);  // the z component, as NumPy 1.x
  return stack({det(1, 2), det(2, 0), det(0, 1)}, ax, loc);
}

}  // namespace aj

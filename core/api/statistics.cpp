// NumPy's statistics (arrayjit/statistics.hpp), composed of reductions, sort
// and elementwise ops. Each checks its own arguments first, so a mistake
// names the function the user called.
#include "arrayjit/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "arrayjit/scan_sort.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

// a in the float dtype a statistic computes in: its own, f64 for integers and bool.
Array as_float(const Array& a, const Loc& loc) {
  return is_float(a.dtype(loc)) ? a : a.astype(DType::f64, loc);
}

Operand o(const Array& a, const Loc& loc) { return Operand(a, loc); }

// The axes checked under the function's own name (the reductions it is made
// of would name themselves).
void check_axes(const Array& a, const Axes& axes, const char* op, const Loc& loc) {
  if (axes.is_all()) return;
  std::vector<bool> seen(static_cast<std::size_t>(a.ndim(loc)));
  for (int ax : axes.list()) {
    const int k = trace::normalize_axis(ax, a.ndim(), op, a.shape(), a.dtype(), loc);
    if (seen[static_cast<std::size_t>(k)]) user_error(op, "axis " + std::to_string(ax) + " given twice", loc);
    seen[static_cast<std::size_t>(k)] = true;
  }
}

}  // namespace

Array var(const Array& a, Axes axes, double ddof, bool keepdims, Loc loc) {
  check_axes(a, axes, "var", loc);
  if (!std::isfinite(ddof) || ddof < 0) {
    user_error("var", "ddof must be finite and not negative, got " + std::to_string(ddof), loc);
  }
  const Array x = as_float(a, loc);
  // One pass over the data: the sums of d = x - k and of d^2 in one kernel,
  // k each line's first element (a shift that takes the mean's size out of
  // the sums: the cancellation in s2 - s1^2 / n is then of the order of
  // the deviations, not of the mean), all in f64. k is read through a
  // broadcast, so a computed x is evaluated for it alone (one element a
  // line), not stored. The shift is a constant to the derivative (the
  // variance does not depend on it).
  trace::Scope scope;
  Array k = trace::stop_gradient_view(trace::local(x, "var", loc), loc);
  for (int ax = 0; ax < x.ndim(); ++ax) {
    if (axes.is_all() || std::find(axes.list().begin(), axes.list().end(), ax) != axes.list().end() ||
        std::find(axes.list().begin(), axes.list().end(), ax - x.ndim()) != axes.list().end()) {
      k = slice(k, ax, 0, std::min<std::int64_t>(1, x.shape()[ax]), 1, loc);  // empty stays empty
    }
  }
  const Array x64 = x.astype(DType::f64, loc);
  const Array d = subtract(o(x64, loc), o(k.astype(DType::f64, loc), loc));
  // s1 is NaN exactly where a line holds inf or NaN (x * 0 is NaN there, 0
  // elsewhere): NumPy's deviations from a mean that is not finite are NaN.
  // Finite f64 values whose deviations or squares overflow give inf, as
  // NumPy's do.
  const Array s1 = sum(o(d, loc) + o(o(x64, loc) * Operand(0.0, loc), loc), axes, keepdims, loc);
  const Array s2 = sum(multiply(o(d, loc), o(d, loc)), axes, keepdims, loc);
  // n counted by the graph (a sum of ones), so a compiled call at other
  // extents divides by its own count.
  const Array n = sum(full_like(x, 1.0, DType::f64, loc), axes, keepdims, loc);
  // The sum of squared deviations from the mean, s2 - s1 (s1 / n) (never
  // above s2: no overflow of its own); rounding may take it just below 0
  // where it is 0 (NaN stays NaN: an empty line's 0 / 0).
  const Array centered = maximum(o(o(s2, loc) - o(o(s1, loc) * o(o(s1, loc) / o(n, loc), loc), loc), loc), Operand(0.0, loc));
  const Array overflowed = o(o(s2, loc) == Operand(std::numeric_limits<double>::infinity(), loc), loc) &&
                           o(logical_not(o(isnan(o(s1, loc)), loc)), loc);
  const Array m2 = where(o(overflowed, loc), Operand(std::numeric_limits<double>::infinity(), loc), o(centered, loc));
  // max(n - ddof, 0), as NumPy: an empty or too short line divides by 0.
  const Array dof = maximum(o(subtract(o(n, loc), Operand(ddof, loc)), loc), Operand(0.0, loc));
  return divide(o(m2, loc), o(dof, loc)).astype(x.dtype(), loc);
}

Array std(const Array& a, Axes axes, double ddof, bool keepdims, Loc loc) {
  check_axes(a, axes, "std", loc);
  const Array v = var(a, axes, ddof, keepdims, loc);
  return sqrt(Operand(v, loc));
}

Array nansum(const Array& a, Axes axes, bool keepdims, Loc loc) {
  check_axes(a, axes, "nansum", loc);
  if (!is_float(a.dtype(loc))) return sum(a, axes, keepdims, loc);
  const Array nan = isnan(o(a, loc));
  const Array z = where(o(nan, loc), Operand(0.0, loc), o(a, loc));
  return sum(z, axes, keepdims, loc);
}

Array nanmean(const Array& a, Axes axes, bool keepdims, Loc loc) {
  check_axes(a, axes, "nanmean", loc);
  if (!is_float(a.dtype(loc))) return mean(a, axes, keepdims, loc);
  const Array s = nansum(a, axes, keepdims, loc);
  const Array seen = logical_not(o(isnan(o(a, loc)), loc));
  const Array count = sum(seen.astype(a.dtype(), loc), axes, keepdims, loc);
  return divide(o(s, loc), o(count, loc));  // 0 / 0: NaN for an all-NaN line
}

namespace {
Array nan_extreme(const Array& a, Axes axes, bool keepdims, bool is_max, const Loc& loc) {
  check_axes(a, axes, is_max ? "nanmax" : "nanmin", loc);
  const Array r0 = is_max ? max(a, axes, keepdims, loc) : min(a, axes, keepdims, loc);
  if (!is_float(a.dtype(loc))) return r0;
  const Array nan = isnan(o(a, loc));
  const Array skipped = where(o(nan, loc), Operand(is_max ? -INFINITY : INFINITY, loc), o(a, loc));
  const Array r = is_max ? max(skipped, axes, keepdims, loc) : min(skipped, axes, keepdims, loc);
  const Array all_nan = all(nan, axes, keepdims, loc);
  return where(o(all_nan, loc), Operand(NAN, loc), o(r, loc));
}
}  // namespace

Array nanmax(const Array& a, Axes axes, bool keepdims, Loc loc) { return nan_extreme(a, axes, keepdims, true, loc); }
Array nanmin(const Array& a, Axes axes, bool keepdims, Loc loc) { return nan_extreme(a, axes, keepdims, false, loc); }

Array count_nonzero(const Array& a, Axes axes, bool keepdims, Loc loc) {
  check_axes(a, axes, "count_nonzero", loc);
  const Array nz = a.dtype(loc) == DType::bool_ ? a : Operand(a, loc) != Operand(0, loc);
  return sum(nz.astype(DType::i64, loc), axes, keepdims, loc);
}

Array diff(const Array& a, int n, int axis, Loc loc) {
  if (n < 0) user_error("diff", "the order must not be negative, got " + std::to_string(n), loc);
  if (a.ndim(loc) == 0) user_error("diff", "needs at least 1 axis, got " + describe(a), loc);
  const int ax = trace::normalize_axis(axis, a.ndim(), "diff", a.shape(), a.dtype(), loc);
  Array r = a;
  for (int k = 0; k < n; ++k) {
    const std::int64_t len = r.shape()[ax];
    if (len == 0) break;
    const Array hi = slice(r, ax, 1, len, 1, loc), lo = slice(r, ax, 0, len - 1, 1, loc);
    r = r.dtype() == DType::bool_ ? Operand(hi, loc) != Operand(lo, loc) : subtract(o(hi, loc), o(lo, loc));
  }
  return r;
}

Array isclose(const Operand& a_op, const Operand& b_op, double rtol, double atol, bool equal_nan) {
  const Loc& loc = a_op.is_scalar ? b_op.loc : a_op.loc;
  // In a float dtype (integers in f64): their difference must not wrap.
  const Array a = as_float(trace::operand_array(a_op, "isclose"), a_op.loc);
  const Array b = as_float(trace::operand_array(b_op, "isclose"), b_op.loc);
  const Array same = Operand(a, loc) == Operand(b, loc);  // equal infinities too
  const Array gap = abs(o(subtract(o(a, loc), o(b, loc)), loc));
  const Array limit = add(Operand(atol, loc), o(multiply(Operand(rtol, loc), o(abs(o(b, loc)), loc)), loc));
  // Only for finite b (the limit is inf at an infinite b: equality decides
  // there); an infinite a has an infinite gap. NaN: false.
  const Array within = Operand(gap, loc) <= Operand(limit, loc);
  const Array near = Operand(within, loc) && Operand(Operand(limit, loc) < Operand(INFINITY, loc), loc);
  Array r = Operand(same, loc) || Operand(near, loc);
  if (equal_nan) {
    const Array both = Operand(isnan(o(a, loc)), loc) && Operand(isnan(o(b, loc)), loc);
    r = Operand(r, loc) || Operand(both, loc);
  }
  return r;
}

Array allclose(const Operand& a, const Operand& b, double rtol, double atol, bool equal_nan) {
  const Array c = isclose(a, b, rtol, atol, equal_nan);
  return all(c, Axes::all(), false, a.is_scalar ? b.loc : a.loc);
}

Array array_equal(const Array& a, const Array& b, bool equal_nan, Loc loc) {
  if (a.shape(loc) != b.shape(loc)) return full(Shape{}, false, DType::bool_, loc);
  Array eq = Operand(a, loc) == Operand(b, loc);
  if (equal_nan) {
    eq = Operand(eq, loc) || Operand(Operand(isnan(o(a, loc)), loc) && Operand(isnan(o(b, loc)), loc), loc);
  }
  return all(eq, Axes::all(), false, loc);
}

namespace {
// The sorted line(s) and the axis they run along, for the quantiles.
struct Sorted {
  Array s;
  int axis;
  std::int64_t n;
};
Sorted sorted_lines(const Array& a, std::optional<int> axis, const char* op, const Loc& loc) {
  const Array x = as_float(axis ? a : reshape(a, Shape{-1}, loc), loc);
  const int ax = trace::normalize_axis(axis.value_or(0), x.ndim(loc), op, x.shape(), x.dtype(), loc);
  const std::int64_t n = x.shape()[ax];
  if (n == 0) user_error(op, "of an empty axis has no value (" + describe(a) + ")", loc);
  return {sort(x, ax, loc), ax, n};
}

// The value at sorted position `at` of each line (a view), the axis kept.
Array at_position(const Sorted& s, std::int64_t at, const Loc& loc) { return slice(s.s, s.axis, at, at + 1, 1, loc); }

// NaN where a line holds NaN (sort puts NaN last: the line's last value).
Array nan_if_any(const Sorted& s, const Array& v, const Loc& loc) {
  const Array last = at_position(s, s.n - 1, loc);
  return where(o(isnan(o(last, loc)), loc), Operand(NAN, loc), o(v, loc));
}

Array finish(const Sorted& s, const Array& v, const Array& a, std::optional<int> axis, bool keepdims, const Loc& loc) {
  const Array r = nan_if_any(s, v, loc);
  if (keepdims) {
    if (axis) return r;
    return reshape(r, Shape(std::vector<std::int64_t>(static_cast<std::size_t>(a.ndim()), 1)), loc);
  }
  return squeeze(r, s.axis, loc);
}
}  // namespace

Array quantile(const Array& a, double q, std::optional<int> axis, bool keepdims, Loc loc) {
  if (!(q >= 0.0 && q <= 1.0)) user_error("quantile", "q must lie in [0, 1], got " + std::to_string(q), loc);
  const Sorted s = sorted_lines(a, axis, "quantile", loc);
  const double pos = q * static_cast<double>(s.n - 1);
  const auto lo = static_cast<std::int64_t>(std::floor(pos));
  const std::int64_t hi = std::min(lo + 1, s.n - 1);
  const double t = pos - static_cast<double>(lo);
  // NumPy's lerp: a + (b - a) t below t = 1/2, b - (b - a) (1 - t) from it,
  // in f64 (its t is an f64 array), rounded once to the dtype.
  const DType t_out = s.s.dtype();
  const Array va = at_position(s, lo, loc).astype(DType::f64, loc), vb = at_position(s, hi, loc).astype(DType::f64, loc);
  const Array d = subtract(o(vb, loc), o(va, loc));
  const Array v = t < 0.5 ? add(o(va, loc), o(multiply(o(d, loc), Operand(t, loc)), loc))
                          : subtract(o(vb, loc), o(multiply(o(d, loc), Operand(1.0 - t, loc)), loc));
  return finish(s, v.astype(t_out, loc), a, axis, keepdims, loc);
}

Array percentile(const Array& a, double p, std::optional<int> axis, bool keepdims, Loc loc) {
  if (!(p >= 0.0 && p <= 100.0)) user_error("percentile", "p must lie in [0, 100], got " + std::to_string(p), loc);
  return quantile(a, p / 100.0, axis, keepdims, loc);
}

Array median(const Array& a, std::optional<int> axis, bool keepdims, Loc loc) {
  const Sorted s = sorted_lines(a, axis, "median", loc);
  const Array va = at_position(s, (s.n - 1) / 2, loc), vb = at_position(s, s.n / 2, loc);
  // NumPy: the mean of the middle two, (a + b) / 2.
  const Array v = s.n % 2 ? va : multiply(o(add(o(va, loc), o(vb, loc)), loc), Operand(0.5, loc));
  return finish(s, v, a, axis, keepdims, loc);
}

}  // namespace aj

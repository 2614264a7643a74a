// NumPy's statistics and comparisons of whole arrays, composed of
// reductions, sort and elementwise ops (lazy, fused like any op). Integers
// and bool compute in f64 where NumPy gives a float (var, std, nanmean,
// quantile); docs/semantics.md ("Statistics") lists where arrayjit differs.
#pragma once

#include <optional>

#include "arrayjit/array.hpp"

namespace aj {

// The variance, the mean of squared deviations from the mean, divided by
// (n - ddof) instead of n; std is its square root. One pass over the data:
// the sums of the deviations from each line's first element and of their
// squares, in f64 (docs/semantics.md, "Statistics").
Array var(const Array& a, Axes axes = Axes::all(), double ddof = 0.0, bool keepdims = false,
          Loc loc = Loc::current());
Array std(const Array& a, Axes axes = Axes::all(), double ddof = 0.0, bool keepdims = false,
          Loc loc = Loc::current());

// Reductions that skip NaN: nansum (0 for all-NaN lines), nanmean and
// nanmax/nanmin (NaN for all-NaN lines, as NumPy, which warns). Integers and
// bool have no NaN: sum, mean, max, min.
Array nansum(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array nanmean(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array nanmax(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array nanmin(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
// The number of nonzero elements (NaN counts: it is not zero), i64.
Array count_nonzero(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());

// The n-th difference along `axis`: a[1:] - a[:-1], n times (bool: !=).
Array diff(const Array& a, int n = 1, int axis = -1, Loc loc = Loc::current());

// |a - b| <= atol + rtol |b| elementwise (NumPy's asymmetric rule), equal
// infinities close, NaN close to NaN only with equal_nan. allclose: all of
// it, a rank-0 bool. array_equal: the same shape and equal elements (false,
// not an error, for other shapes).
Array isclose(const Operand& a, const Operand& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Array allclose(const Operand& a, const Operand& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Array array_equal(const Array& a, const Array& b, bool equal_nan = false, Loc loc = Loc::current());

// The q-th quantile (0 <= q <= 1) along `axis` (of the flattened array with
// none), NumPy's default "linear" method: sorted values at (n - 1) q,
// interpolated; NaN where a line holds NaN. percentile takes p = 100 q;
// median is the middle value, or the mean of the two middle ones.
Array quantile(const Array& a, double q, std::optional<int> axis = std::nullopt, bool keepdims = false,
               Loc loc = Loc::current());
Array percentile(const Array& a, double p, std::optional<int> axis = std::nullopt, bool keepdims = false,
                 Loc loc = Loc::current());
Array median(const Array& a, std::optional<int> axis = std::nullopt, bool keepdims = false,
             Loc loc = Loc::current());

}  // namespace aj

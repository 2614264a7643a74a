// Scans and sorting along one axis (NumPy / array-API names), traced lazily
// like every op of arrayjit/array.hpp; semantics in docs/semantics.md.
//
//   cumsum, cumprod   a running sum / product in a fused kernel (producers
//                     run inside it, elementwise consumers after it)
//   cummax, cummin,   a running maximum / minimum / log(sum(exp)), the same
//   logcumsumexp      kind of kernel
//   sort, argsort     stable, ascending; NaN after every number; -0.0 and
//                     +0.0 are equal (keep their order)
//   partition,        NumPy's (kth checked), as a sort: a valid partition
//   argpartition
//   topk              the k largest, largest first; NaN counts as largest;
//                     ties: the lower index first
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// The running sum (product) along `axis`; with no axis, of the flattened
// array (a 1-d result, as NumPy). `dtype` is the dtype the values are cast to
// and accumulated in; by default sum's rule: bool and i32 accumulate in i64,
// i64 and floats in their own dtype. Integers wrap. Floats add (multiply) in
// order along the axis, one rounding per element, on every backend.
Array cumsum(const Array& a, std::optional<int> axis = std::nullopt, std::optional<DType> dtype = std::nullopt,
             Loc loc = Loc::current());
Array cumprod(const Array& a, std::optional<int> axis = std::nullopt, std::optional<DType> dtype = std::nullopt,
              Loc loc = Loc::current());
// The running maximum (minimum) along `axis` (flattened with none, as
// cumsum; NumPy's maximum.accumulate defaults to axis 0): NaN propagates,
// as np.maximum; same dtype (bool included).
Array cummax(const Array& a, std::optional<int> axis = std::nullopt, Loc loc = Loc::current());
Array cummin(const Array& a, std::optional<int> axis = std::nullopt, Loc loc = Loc::current());
// log(cumsum(exp(a))) without overflow: a running logaddexp from -inf, one
// rounding per element (as np.logaddexp.accumulate). Floats; integers and
// bool give f64; halves run in f32.
Array logcumsumexp(const Array& a, std::optional<int> axis = std::nullopt, Loc loc = Loc::current());
// The array API's cumsum: an axis is needed above rank 1, and include_initial
// puts the empty sum (0) first, so the axis grows by one.
Array cumulative_sum(const Array& a, std::optional<int> axis = std::nullopt,
                     std::optional<DType> dtype = std::nullopt, bool include_initial = false,
                     Loc loc = Loc::current());

// Each line along `axis` sorted ascending (stable; see above). Same shape and dtype.
Array sort(const Array& a, int axis = -1, Loc loc = Loc::current());
// The i64 positions along `axis` that sort each line: sort(a) equals a's
// values taken at these positions.
Array argsort(const Array& a, int axis = -1, Loc loc = Loc::current());

// NumPy's partition: each line rearranged so that the element at each `kth`
// (in [-n, n), negative from the end) is the one a sort would put there,
// smaller ones before it and larger ones after (NaN counts as largest).
// NumPy leaves the order within each side open; arrayjit's is the sorted
// order (the line is sorted: a valid partition, O(n log n)). argpartition:
// the i64 positions that do this (argsort's, stable).
Array partition(const Array& a, std::int64_t kth, int axis = -1, Loc loc = Loc::current());
Array partition(const Array& a, const std::vector<std::int64_t>& kth, int axis = -1, Loc loc = Loc::current());
Array argpartition(const Array& a, std::int64_t kth, int axis = -1, Loc loc = Loc::current());
Array argpartition(const Array& a, const std::vector<std::int64_t>& kth, int axis = -1, Loc loc = Loc::current());

// The k largest values of each line along `axis`, largest first, and their
// i64 positions. The results have extent k along the axis; 0 <= k <= extent.
struct TopK {
  Array values;
  Array indices;
};
TopK topk(const Array& a, std::int64_t k, int axis = -1, Loc loc = Loc::current());

}  // namespace aj

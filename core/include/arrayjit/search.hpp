// Searching and data-dependent shapes (NumPy names; docs/semantics.md,
// "Search and data-dependent shapes"), composed of comparisons, sums,
// cumsum, sort and scatters: lazy like any op.
//
//   searchsorted, digitize   positions in a sorted array (i64)
//   bincount                 counts (or weight sums) of non-negative integers
//   nonzero, argwhere,       results whose length depends on the values, in
//   unique, masked_select    two forms (below)
//
// The two forms of a result whose length depends on the values:
//   - with no `size`: the length is computed first by evaluating what it
//     depends on (a sync point, like item()), then the result is traced at
//     that length. Not inside aj::compile (a located error says to give a
//     size).
//   - with `size` (JAX's form): the result has exactly `size` entries, the
//     first ones as NumPy's, the rest `fill`; entries past `size` are
//     dropped. Nothing is evaluated: usable inside aj::compile.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

enum class Side : std::uint8_t { left, right };

// For each element of v, the position in the sorted 1-d array `a` where it
// would go to keep `a` sorted: the first such position (left: the number of
// elements of a less than it) or the last (right: less or equal). NumPy's
// order: NaN after every number. i64 of v's shape. a and v compare in their
// promoted dtype. A short `a` (64 or fewer) is compared with every element in
// one fused kernel; a longer one merged with v by one stable sort.
Array searchsorted(const Array& a, const Operand& v, Side side = Side::left, Loc loc = Loc::current());

// The bin of each element of x (i64): i with bins[i-1] <= x < bins[i] for
// increasing bins (bins[i-1] < x <= bins[i] with `right`), NumPy's
// mirror image for decreasing ones (which of the two is read from the
// bins' first and last element, lazily).
Array digitize(const Array& x, const Array& bins, bool right = false, Loc loc = Loc::current());

// How often each value 0, 1, ... occurs in the 1-d integer array x (i64), or
// the sum of `weights` (x's shape) at each (f64, as NumPy). With no `length`
// the result has max(x) + 1 entries (at least `minlength`): x is evaluated
// for it, and a negative value is an error, as NumPy. With `length` it has
// exactly that many, and values outside [0, length) are not counted.
Array bincount(const Array& x, const std::optional<Array>& weights = std::nullopt, std::int64_t minlength = 0,
               std::optional<std::int64_t> length = std::nullopt, Loc loc = Loc::current());

// The positions of the nonzero (true, NaN included) elements, row-major: one
// i64 array per axis (a rank-0 array counts as 1-d, as NumPy 1.24).
std::vector<Array> nonzero(const Array& x, std::optional<std::int64_t> size = std::nullopt, std::int64_t fill = 0,
                           Loc loc = Loc::current());
// The same positions as one i64 array [count, ndim].
Array argwhere(const Array& x, std::optional<std::int64_t> size = std::nullopt, std::int64_t fill = 0,
               Loc loc = Loc::current());
// The sorted distinct values of x, flattened (NaNs count as one, NumPy's
// equal_nan; -0.0 and +0.0 as one, the first in sorted order kept).
Array unique(const Array& x, std::optional<std::int64_t> size = std::nullopt, Scalar fill = 0,
             Loc loc = Loc::current());
// The elements of x where `mask` (bool, broadcast with x) holds, row-major, 1-d.
Array masked_select(const Array& x, const Array& mask, std::optional<std::int64_t> size = std::nullopt,
                    Scalar fill = 0, Loc loc = Loc::current());

}  // namespace aj

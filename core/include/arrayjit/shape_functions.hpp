// NumPy's shape and data-movement functions, composed of arrayjit's views
// (reshape, transpose, slice, broadcast), concatenate, matmul and
// elementwise ops: lazy like any op, and views wherever NumPy returns a view
// (flip, swapaxes, moveaxis, diagonal, split's pieces, unstack,
// broadcast_arrays, meshgrid, atleast_*d): no copy is made for them, a
// consumer reads through the index arithmetic. Semantics are NumPy's;
// docs/semantics.md ("Shape functions") lists where they differ.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// Reversed along `axes` (all by default).
Array flip(const Array& a, Axes axes = Axes::all(), Loc loc = Loc::current());
Array swapaxes(const Array& a, int axis1, int axis2, Loc loc = Loc::current());
// Axes `source` moved to positions `destination`, the others in order.
Array moveaxis(const Array& a, std::vector<int> source, std::vector<int> destination, Loc loc = Loc::current());
Array moveaxis(const Array& a, int source, int destination, Loc loc = Loc::current());
// Each array broadcast to their common shape.
std::vector<Array> broadcast_arrays(const std::vector<Array>& arrays, Loc loc = Loc::current());
// Coordinate arrays: N 1-d arrays (any shape, raveled) give N arrays of N
// axes; indexing "xy" (the default, Cartesian: the first two axes swapped)
// or "ij" (matrix) when `ij`.
std::vector<Array> meshgrid(const std::vector<Array>& xs, bool ij = false, Loc loc = Loc::current());

// `a` repeated `reps[i]` times along axis i (reps and a's rank padded with
// leading 1s to the longer).
Array tile(const Array& a, std::vector<std::int64_t> reps, Loc loc = Loc::current());
// Each element repeated `repeats` times along `axis` (flattened with no
// axis); or element i `repeats[i]` times (a count per element, or one for all).
Array repeat(const Array& a, std::int64_t repeats, std::optional<int> axis = std::nullopt, Loc loc = Loc::current());
Array repeat(const Array& a, const std::vector<std::int64_t>& repeats, std::optional<int> axis = std::nullopt,
             Loc loc = Loc::current());

// Pieces along `axis`: `sections` equal ones (an error when they cannot be
// equal), or cut before each of the sorted `indices` (clamped to the extent,
// as NumPy: pieces may be empty). array_split allows unequal sections (the
// first extent % sections are one longer). unstack: every index of the axis,
// the axis removed.
std::vector<Array> split(const Array& a, std::int64_t sections, int axis = 0, Loc loc = Loc::current());
std::vector<Array> split(const Array& a, const std::vector<std::int64_t>& indices, int axis = 0,
                         Loc loc = Loc::current());
std::vector<Array> array_split(const Array& a, std::int64_t sections, int axis = 0, Loc loc = Loc::current());
std::vector<Array> unstack(const Array& a, int axis = 0, Loc loc = Loc::current());

// The lower (upper) triangle of the last two axes: elements with
// column - row <= k (>= k) kept, the others 0.
Array tril(const Array& a, std::int64_t k = 0, Loc loc = Loc::current());
Array triu(const Array& a, std::int64_t k = 0, Loc loc = Loc::current());
// A 1-d array: the square matrix with it on diagonal k. A 2-d array: its
// diagonal k, 1-d.
Array diag(const Array& a, std::int64_t k = 0, Loc loc = Loc::current());
// The diagonal `offset` of the matrices in axes (axis1, axis2), as the last
// axis (a view).
Array diagonal(const Array& a, std::int64_t offset = 0, int axis1 = 0, int axis2 = 1, Loc loc = Loc::current());
// At least 1, 2, 3 axes: NumPy's rules for where the new extent-1 axes go.
Array atleast_1d(const Array& a, Loc loc = Loc::current());
Array atleast_2d(const Array& a, Loc loc = Loc::current());
Array atleast_3d(const Array& a, Loc loc = Loc::current());
// base ** linspace(start, stop, num), computed in f64 and converted.
Array logspace(double start, double stop, std::int64_t num, double base = 10.0, DType dtype = DType::f32,
               Loc loc = Loc::current());

// Products. outer: of the raveled arrays. inner: over the last axes. dot:
// NumPy's (matmul for 2-d, a sum over a's last axis and b's second-to-last
// otherwise, a product with a rank-0 one). vdot: of the raveled arrays.
// tensordot: over a's last `axes` axes and b's first, or over the given
// pairs. kron: the Kronecker product. cross: of 3-vectors (or 2-vectors,
// giving the z component) along `axis`, broadcast.
Array outer(const Array& a, const Array& b, Loc loc = Loc::current());
Array inner(const Array& a, const Array& b, Loc loc = Loc::current());
Array dot(const Array& a, const Array& b, Loc loc = Loc::current());
Array vdot(const Array& a, const Array& b, Loc loc = Loc::current());
Array tensordot(const Array& a, const Array& b, int axes = 2, Loc loc = Loc::current());
Array tensordot(const Array& a, const Array& b, std::vector<int> a_axes, std::vector<int> b_axes,
                Loc loc = Loc::current());
Array kron(const Array& a, const Array& b, Loc loc = Loc::current());
Array cross(const Array& a, const Array& b, int axis = -1, Loc loc = Loc::current());

namespace linalg {
// The sum of the diagonal `offset` of the matrices in axes (axis1, axis2),
// in sum's dtype (bool and i32 in i64). In linalg (the array API's place for
// it), with its default axes, the last two: NumPy's np.trace takes axes 0, 1
// by default (aj::trace would be arrayjit's tracing namespace).
Array trace(const Array& a, std::int64_t offset = 0, int axis1 = -2, int axis2 = -1, Loc loc = Loc::current());
}  // namespace linalg

}  // namespace aj

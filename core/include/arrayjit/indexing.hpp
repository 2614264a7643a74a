// Indexing and data movement: gathers, scatters, functional slice updates,
// padding, rolling, one-hot. NumPy / array-API names; docs/semantics.md,
// "Indexing", is the reference for every rule below.
//
// Index arrays are integers of any width (bool or float: a located trace-time error).
// An index i of an axis of extent n means i + n when -n <= i < 0 (NumPy);
// beyond [-n, n) gathers clamp (to 0 or n - 1) and scatters drop the update,
// so no index ever touches memory outside an array. With AJ_DEBUG=1 (or
// aj::set_debug(true)) the indices are evaluated and checked when the op is
// traced, and an out-of-range one throws aj::Error naming the op, the index,
// its position and the caller's line.
//
// Gathers and pads are index arithmetic inside kernels: `take(x, i) * 2` is
// one kernel with the indices' producer (docs/optimizer.md). Scatters are
// library steps that update a dead array in place.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// NumPy take: result shape a.shape[:axis] + indices.shape + a.shape[axis+1:];
// axis nullopt takes from the flattened array.
Array take(const Array& a, const Array& indices, std::optional<int> axis = std::nullopt,
           Loc loc = Loc::current());
// NumPy take_along_axis: indices have a's rank and broadcast against a on
// every other axis; result[..., j, ...] = a[..., indices[..., j, ...], ...].
Array take_along_axis(const Array& a, const Array& indices, int axis, Loc loc = Loc::current());

// Functional scatters (a is never changed; a new array is returned, which
// takes a's buffer over when nothing else needs a). The updates broadcast to
// a.shape[:axis] + indices.shape + a.shape[axis+1:] (so scatter_add is the
// exact transpose of take) and are converted to a's dtype.
// scatter_add: duplicate indices accumulate, in the updates' row-major order
// (np.add.at); on bool it is `or`.
Array scatter_add(const Array& a, const Array& indices, const Operand& updates, int axis = 0,
                  Loc loc = Loc::current());
// scatter: set; with duplicate indices the last update in row-major order wins.
Array scatter(const Array& a, const Array& indices, const Operand& updates, int axis = 0,
              Loc loc = Loc::current());
// The along-axis forms (the transposes of take_along_axis; NumPy's
// put_along_axis): indices have a's rank, and broadcast with the updates to
// a's shape but for `axis`, where they take the indices' extent.
Array scatter_add_along_axis(const Array& a, const Array& indices, const Operand& updates, int axis,
                             Loc loc = Loc::current());
Array put_along_axis(const Array& a, const Array& indices, const Operand& values, int axis,
                     Loc loc = Loc::current());

// JAX's a.at[slices].set(values) / .add(values): a with the slice replaced /
// incremented; values broadcast to the slice's shape and take a's dtype.
// Slices as in aj::slice (negative steps too). slice_add on bool is `or`.
Array slice_update(const Array& a, std::vector<Slice> slices, const Operand& values,
                   Loc loc = Loc::current());
Array slice_add(const Array& a, std::vector<Slice> slices, const Operand& values,
                Loc loc = Loc::current());

// Elements added before and after one axis.
struct PadWidth {
  std::int64_t before = 0, after = 0;
  PadWidth(std::int64_t both = 0) : before(both), after(both) {}  // NOLINT: implicit on purpose
  PadWidth(std::int64_t b, std::int64_t a) : before(b), after(a) {}
};
enum class PadMode {
  constant,  // `value`
  edge,      // the edge element repeated
  reflect,   // mirrored about the edge element, not repeating it (NumPy 'reflect')
};
// NumPy pad: one width per axis, or one for every axis.
Array pad(const Array& a, std::vector<PadWidth> widths, PadMode mode = PadMode::constant, Scalar value = 0,
          Loc loc = Loc::current());

// NumPy roll: elements shifted by `shift` along `axis` (the flattened array
// when nullopt), wrapping around; several axes at once with lists.
Array roll(const Array& a, std::int64_t shift, std::optional<int> axis = std::nullopt, Loc loc = Loc::current());
Array roll(const Array& a, std::vector<std::int64_t> shifts, std::vector<int> axes, Loc loc = Loc::current());

// labels.shape + [num_classes]: 1 where the class equals the label, else 0.
// A label outside [0, num_classes) gives a row of zeros (as JAX).
Array one_hot(const Array& labels, std::int64_t num_classes, DType dtype = DType::f32, Loc loc = Loc::current());

// The debug checks of indexing ops (AJ_DEBUG=1 at start-up).
void set_debug(bool on);
bool debug();

}  // namespace aj

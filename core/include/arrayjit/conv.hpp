// Convolution, pooling and resizing over 1 to 3 spatial axes, as
// compositions of arrayjit's ops (so they are lazy, fuse with the work around
// them and are differentiable in both modes with no rule of their own):
//
//  - conv_general (JAX's conv_general_dilated) gathers the input's windows
//    with strided views into one column matrix (im2col: a concatenation of
//    views, a row copy per window offset) and multiplies it with the weights
//    in one batched BLAS matmul per group; a 1x1 convolution with unit
//    strides is the matmul alone. The input's gradient is the column
//    matrix's cotangent added back window by window (one fused kernel of
//    padded pieces), the weights' one matmul.
//  - max_pool, avg_pool and reduce_window fold their window's strided views
//    with an elementwise maximum or sum: one fused kernel, no column matrix.
//  - interpolate gathers along each resized axis (take), nearest or linear.
//
// Layouts: PyTorch's by default, inputs [N, C, spatial...], weights [O, I,
// spatial...] (I = C / groups); conv_general takes any other as letters
// (JAX's dimension numbers: "NHWC", "HWIO", ...). docs/semantics.md
// ("Convolution and pooling") lists the rules and the differences from
// PyTorch and JAX.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// Padding of the spatial axes: one (low, high) pair per axis (negative
// crops), the same pair for every axis, or JAX's "SAME" / "VALID".
struct ConvPadding {
  enum class Mode { pairs, same, valid } mode = Mode::pairs;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // empty: 0 everywhere
  ConvPadding() = default;
  ConvPadding(std::int64_t both) : pairs{{both, both}} {}  // NOLINT: every axis
  ConvPadding(int both) : ConvPadding(std::int64_t{both}) {}  // NOLINT
  ConvPadding(std::vector<std::pair<std::int64_t, std::int64_t>> p) : pairs(std::move(p)) {}  // NOLINT
  ConvPadding(const char* mode);  // NOLINT: "SAME" or "VALID"
};

// Layout letters (JAX's dimension numbers): lhs has N, C and one letter per
// spatial axis; rhs O, I and the same spatial letters; out N, C and the same.
// Empty: "N", "C" then the spatial axes in order (out: lhs's).
struct ConvLayout {
  std::string lhs, rhs, out;
};

// out[n, o, p...] = sum over i, k... of x[n, g I + i, p s + k d - pad] w[o, i, k...]
// (g = o's group). Empty strides and dilations mean 1 for every axis;
// lhs_dilation > 1 spreads the input (a transposed convolution's stride).
Array conv_general(const Array& x, const Array& w, std::vector<std::int64_t> strides = {}, ConvPadding padding = {},
                   std::vector<std::int64_t> lhs_dilation = {}, std::vector<std::int64_t> rhs_dilation = {},
                   std::int64_t groups = 1, const ConvLayout& layout = {}, Loc loc = Loc::current());

// PyTorch's conv1d/2d/3d: x [N, C, spatial...], w [O, C / groups, k...], an
// optional bias [O] (an empty handle: none); stride, padding, dilation for
// every axis, or one per axis.
Array conv1d(const Array& x, const Array& w, const Array& bias = Array(), std::vector<std::int64_t> stride = {1},
             ConvPadding padding = {}, std::vector<std::int64_t> dilation = {1}, std::int64_t groups = 1,
             Loc loc = Loc::current());
Array conv2d(const Array& x, const Array& w, const Array& bias = Array(), std::vector<std::int64_t> stride = {1},
             ConvPadding padding = {}, std::vector<std::int64_t> dilation = {1}, std::int64_t groups = 1,
             Loc loc = Loc::current());
Array conv3d(const Array& x, const Array& w, const Array& bias = Array(), std::vector<std::int64_t> stride = {1},
             ConvPadding padding = {}, std::vector<std::int64_t> dilation = {1}, std::int64_t groups = 1,
             Loc loc = Loc::current());
// PyTorch's conv_transpose1d/2d/3d: w [C, O / groups, k...]; the gradient of
// conv{1,2,3}d with respect to its input, output_padding added at the high
// end of each axis.
Array conv_transpose1d(const Array& x, const Array& w, const Array& bias = Array(),
                       std::vector<std::int64_t> stride = {1}, std::vector<std::int64_t> padding = {0},
                       std::vector<std::int64_t> output_padding = {0}, std::int64_t groups = 1,
                       std::vector<std::int64_t> dilation = {1}, Loc loc = Loc::current());
Array conv_transpose2d(const Array& x, const Array& w, const Array& bias = Array(),
                       std::vector<std::int64_t> stride = {1}, std::vector<std::int64_t> padding = {0},
                       std::vector<std::int64_t> output_padding = {0}, std::int64_t groups = 1,
                       std::vector<std::int64_t> dilation = {1}, Loc loc = Loc::current());
Array conv_transpose3d(const Array& x, const Array& w, const Array& bias = Array(),
                       std::vector<std::int64_t> stride = {1}, std::vector<std::int64_t> padding = {0},
                       std::vector<std::int64_t> output_padding = {0}, std::int64_t groups = 1,
                       std::vector<std::int64_t> dilation = {1}, Loc loc = Loc::current());

// Pooling over the spatial axes of x [N, C, spatial...] (or [C, spatial...]):
// the window, strides (empty: the window), padding per axis (symmetric,
// PyTorch's), ceil_mode (PyTorch's rule: a last window that starts inside the
// input or its low padding counts). max_pool pads with -inf; avg_pool divides
// by the window's size (count_include_pad: padding counted, the ceil_mode
// overhang not) or by its elements inside the input.
Array max_pool(const Array& x, std::vector<std::int64_t> window, std::vector<std::int64_t> strides = {},
               std::vector<std::int64_t> padding = {}, bool ceil_mode = false, std::vector<std::int64_t> dilation = {},
               Loc loc = Loc::current());
Array avg_pool(const Array& x, std::vector<std::int64_t> window, std::vector<std::int64_t> strides = {},
               std::vector<std::int64_t> padding = {}, bool ceil_mode = false, bool count_include_pad = true,
               Loc loc = Loc::current());

// JAX's reduce_window over every axis of x: a window and strides per axis
// (empty strides: 1), (low, high) padding per axis filled with the
// reduction's identity; op: "sum", "max", "min" or "prod".
Array reduce_window(const Array& x, const std::string& op, std::vector<std::int64_t> window,
                    std::vector<std::int64_t> strides = {},
                    std::vector<std::pair<std::int64_t, std::int64_t>> padding = {}, Loc loc = Loc::current());

// PyTorch's interpolate over the spatial axes of x [N, C, spatial...]: to
// `size` (one extent per spatial axis) with mode "nearest" (source index
// floor(o * in / out)) or "linear" (bilinear and trilinear: each axis in
// turn; align_corners as PyTorch's).
Array interpolate(const Array& x, std::vector<std::int64_t> size, const std::string& mode = "nearest",
                  bool align_corners = false, Loc loc = Loc::current());

}  // namespace aj

// The two forms of a convolution (core/api/conv.cpp), for conv_general and
// for Op::Conv's derivative rule (core/autodiff/rules.cpp). Operands are
// canonical: x [N, C, s...], w [O, C / groups, k...], one float dtype.
#pragma once

#include <cstdint>

#include "arrayjit/array.hpp"
#include "graph/library.hpp"

namespace aj::detail {

// The composition: padded input, a view per tap stacked into the column
// matrix, one batched matmul. Any dtype, any device; differentiated by the
// ops' own rules.
Array conv_composed(const Array& x, const Array& w, const ConvGeometry& geo, std::int64_t groups, const Loc& loc);

// One Op::Conv node (a library step), and whether conv_general takes it:
// f32/f64 on the host, a result with points, a window of more than one point
// or one that moves (a plain 1 x 1 window is the composition's matmul of the
// input as it lies).
Array conv_node(const Array& x, const Array& w, const ConvGeometry& geo, std::int64_t groups, const Loc& loc);
bool conv_as_library_step(const Array& x, const Array& w, const ConvGeometry& geo);
// The weight gradient of conv_node(x, w, geo, groups) for the result's
// cotangent g, as one Op::Conv node (i1 kConvWeightGrad): the weights' shape
// `w`, x and g the convolution's operand and result shapes.
Array conv_weight_grad_node(const Array& x, const Array& g, const Shape& w, const ConvGeometry& geo,
                            std::int64_t groups, const Loc& loc);

// The library step on or off (environment AJ_CONV=compose: off), for tests
// and benchmarks that compare the two forms.
bool conv_library();
void set_conv_library(bool on);

}  // namespace aj::detail

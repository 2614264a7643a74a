// Op::Conv's derivatives. The convolution is bilinear in (x, w):
//  - forward mode: conv(tx, w) + conv(x, tw), two more library steps;
//  - reverse mode: the weights' cotangent is one weight-gradient step (the
//    same node kind, graph/library.hpp); at stride 1 the input's cotangent is
//    one more conv step (below); at other strides it is the linear map
//    transposed by aj's own reverse mode over the composed form
//    (core/api/conv_detail.hpp: views, a column matrix and matmul), the
//    column matrix's cotangent added back into the padded input in one kernel.
// The weight-gradient step wg(x, g) is bilinear too: <h, wg(x, g)> =
// <g, conv(x, h)>, so its cotangents are conv(x, h) for g and conv's input
// cotangent of g with weights h for x. All of it differentiates again.
#include <optional>

#include "arrayjit/autodiff.hpp"
#include "arrayjit/shape_functions.hpp"
#include "core/api/conv_detail.hpp"
#include "core/api/trace.hpp"
#include "core/autodiff/rules.hpp"
#include "graph/library.hpp"

namespace aj::autodiff {

namespace {

ConvGeometry geometry(const NodeInfo& n) {
  ConvGeometry geo;
  if (!geo.unpack(n.ints)) internal_error("autodiff: a conv node with a malformed geometry");
  return geo;
}

// At stride 1 the input's cotangent is itself a convolution, of g by the
// weights flipped over their window with the feature axes of each group
// swapped, padded by span - 1 - pad (JAX's conv transpose of the lhs): one
// more conv step instead of the column matrix's cotangent added back.
// Nullopt where that form does not apply.
std::optional<Array> input_cotangent_as_conv(const Array& x, const Array& w, const ConvGeometry& geo,
                                             std::int64_t groups, const Array& g, const Loc& loc) {
  const std::size_t d = geo.dims();
  ConvGeometry t;
  for (std::size_t i = 0; i < d; ++i) {
    if (geo.stride[i] != 1) return std::nullopt;
    const std::int64_t reach = (w.shape()[static_cast<int>(i) + 2] - 1) * geo.dilation[i];
    t.stride.push_back(1);
    t.lo.push_back(reach - geo.lo[i]);
    t.hi.push_back(reach - geo.hi[i]);
    t.dilation.push_back(geo.dilation[i]);
  }
  const std::int64_t o = w.shape()[0], in = w.shape()[1], og = o / groups;
  // w [O, I, k...] -> [groups, og, I, k...] -> [groups, I, og, k...] ->
  // [groups * I, og, k...], each window axis reversed.
  std::vector<std::int64_t> split{groups, og, in};
  std::vector<std::int64_t> merged{groups * in, og};
  for (std::size_t i = 0; i < d; ++i) {
    split.push_back(w.shape()[static_cast<int>(i) + 2]);
    merged.push_back(w.shape()[static_cast<int>(i) + 2]);
  }
  std::vector<int> order{0, 2, 1};
  for (std::size_t i = 0; i < d; ++i) order.push_back(static_cast<int>(i) + 3);
  Array wt = reshape(transpose(reshape(w, Shape(split), loc), order, loc), Shape(merged), loc);
  for (std::size_t i = 0; i < d; ++i) wt = slice(wt, static_cast<int>(i) + 2, std::nullopt, std::nullopt, -1, loc);
  if (!detail::conv_as_library_step(g, wt, t)) return std::nullopt;
  const Array r = detail::conv_node(g, wt, t, groups, loc);
  if (r.shape() != x.shape()) return std::nullopt;
  return r;
}

// The convolution of x by w: a library step where conv_general takes one.
Array conv_forward(const Array& x, const Array& w, const ConvGeometry& geo, std::int64_t groups, const Loc& loc) {
  return detail::conv_as_library_step(x, w, geo) ? detail::conv_node(x, w, geo, groups, loc)
                                                 : detail::conv_composed(x, w, geo, groups, loc);
}

// The cotangent of x in conv(x, w) for the result's cotangent g.
Array input_cotangent(const Array& x, const Array& w, const ConvGeometry& geo, std::int64_t groups, const Array& g,
                      const Loc& loc) {
  if (std::optional<Array> r = input_cotangent_as_conv(x, w, geo, groups, g, loc)) return *r;
  const VectorFn linear = [&](const std::vector<Array>& t) {
    return std::vector<Array>{detail::conv_composed(t[0], w, geo, groups, loc)};
  };
  auto [outs, pulled] = detail::vjp(linear, {zeros_like(x, std::nullopt, loc)}, {g}, "the conv derivative", loc);
  return pulled[0];
}

// The cotangent of w in conv(x, w) for the result's cotangent g (w: an
// array of the weights' shape, dtype and device).
Array weight_cotangent(const Array& x, const Array& w, const ConvGeometry& geo, std::int64_t groups, const Array& g,
                       const Loc& loc) {
  if (detail::conv_as_library_step(x, w, geo)) return detail::conv_weight_grad_node(x, g, w.shape(), geo, groups, loc);
  const VectorFn linear = [&](const std::vector<Array>& t) {
    return std::vector<Array>{detail::conv_composed(x, t[0], geo, groups, loc)};
  };
  auto [outs, pulled] = detail::vjp(linear, {zeros_like(w, std::nullopt, loc)}, {g}, "the conv derivative", loc);
  return pulled[0];
}

Array jvp_conv(const NodeInfo& n, const std::vector<Array>& t) {
  trace::Scope scope;
  const At at{n.loc};
  const ConvGeometry geo = geometry(n);
  Array acc;
  auto add = [&](const Array& b) { acc = acc.valid() ? at.add(acc, b) : b; };
  if (n.i1 == kConvWeightGrad) {  // wg(x, g): wg(tx, g) + wg(x, tg)
    if (t[0].valid()) add(weight_cotangent(t[0], n.out, geo, n.i0, n.in[1], n.loc));
    if (t[1].valid()) add(weight_cotangent(n.in[0], n.out, geo, n.i0, t[1], n.loc));
    return acc;
  }
  if (t[0].valid()) add(detail::conv_node(t[0], n.in[1], geo, n.i0, n.loc));
  if (t[1].valid()) add(detail::conv_node(n.in[0], t[1], geo, n.i0, n.loc));
  return acc;
}

void vjp_conv(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  trace::Scope scope;
  const ConvGeometry geo = geometry(n);
  const std::int64_t groups = n.i0;
  const Array &x = n.in[0], &other = n.in[1];
  if (n.i1 == kConvWeightGrad) {  // other: the convolution's cotangent; g: the weights'
    if (need[0]) cts[0] = input_cotangent(x, g, geo, groups, other, n.loc);
    if (need[1]) cts[1] = conv_forward(x, g, geo, groups, n.loc);
    return;
  }
  if (need[0]) cts[0] = input_cotangent(x, other, geo, groups, g, n.loc);
  if (need[1]) cts[1] = weight_cotangent(x, other, geo, groups, g, n.loc);
}

}  // namespace

namespace conv_rules {
const Rule conv{&vjp_conv, &jvp_conv};
}  // namespace conv_rules

}  // namespace aj::autodiff

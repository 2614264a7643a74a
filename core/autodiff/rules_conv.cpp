// Op::Conv's derivatives. The convolution is bilinear in (x, w):
//  - forward mode: conv(tx, w) + conv(x, tw), two more library steps;
//  - reverse mode: at stride 1 the input's cotangent is one more conv step
//    (below); the rest is the linear map transposed by aj's own reverse mode
//    over the composed form (core/api/conv_detail.hpp: views, a column matrix
//    and matmul): the weights' cotangent is one matmul against the columns,
//    the input's at other strides the column matrix's cotangent added back
//    into the padded input in one kernel. All of it differentiates again.
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

Array jvp_conv(const NodeInfo& n, const std::vector<Array>& t) {
  trace::Scope scope;
  const At at{n.loc};
  const ConvGeometry geo = geometry(n);
  Array acc;
  if (t[0].valid()) acc = detail::conv_node(t[0], n.in[1], geo, n.i0, n.loc);
  if (t[1].valid()) {
    const Array b = detail::conv_node(n.in[0], t[1], geo, n.i0, n.loc);
    acc = acc.valid() ? at.add(acc, b) : b;
  }
  return acc;
}

// At stride 1 the input's cotangent is itself a convolution, of g by the
// weights flipped over their window with the feature axes of each group
// swapped, padded by span - 1 - pad (JAX's conv transpose of the lhs): one
// more conv step instead of the column matrix's cotangent added back.
// Nullopt where that form does not apply.
std::optional<Array> input_cotangent_as_conv(const NodeInfo& n, const ConvGeometry& geo, const Array& g) {
  const Array& w = n.in[1];
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
  const std::int64_t groups = n.i0, o = w.shape()[0], in = w.shape()[1], og = o / groups;
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
  Array wt = reshape(transpose(reshape(w, Shape(split), n.loc), order, n.loc), Shape(merged), n.loc);
  for (std::size_t i = 0; i < d; ++i) wt = slice(wt, static_cast<int>(i) + 2, std::nullopt, std::nullopt, -1, n.loc);
  if (!detail::conv_as_library_step(g, wt, t)) return std::nullopt;
  const Array r = detail::conv_node(g, wt, t, groups, n.loc);
  if (r.shape() != n.in[0].shape()) return std::nullopt;
  return r;
}

void vjp_conv(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  trace::Scope scope;
  const ConvGeometry geo = geometry(n);
  const std::int64_t groups = n.i0;
  const Loc loc = n.loc;
  const Array x = n.in[0], w = n.in[1];
  bool dx = need[0];
  if (dx) {
    if (std::optional<Array> r = input_cotangent_as_conv(n, geo, g)) {
      cts[0] = *r;
      dx = false;
    }
  }
  const bool dw = need[1];
  std::vector<Array> primals;
  if (dx) primals.push_back(zeros_like(x, std::nullopt, loc));
  if (dw) primals.push_back(zeros_like(w, std::nullopt, loc));
  if (primals.empty()) return;
  const VectorFn linear = [&](const std::vector<Array>& t) {
    Array r;
    if (dx) r = detail::conv_composed(t[0], w, geo, groups, loc);
    if (dw) {
      const Array b = detail::conv_composed(x, t[dx ? 1 : 0], geo, groups, loc);
      r = r.valid() ? At{loc}.add(r, b) : b;
    }
    return std::vector<Array>{r};
  };
  auto [outs, pulled] = detail::vjp(linear, primals, {g}, "the conv derivative", loc);
  if (dx) cts[0] = pulled[0];
  if (dw) cts[1] = pulled[dx ? 1 : 0];
}

}  // namespace

namespace conv_rules {
const Rule conv{&vjp_conv, &jvp_conv};
}  // namespace conv_rules

}  // namespace aj::autodiff

// Op::Conv's derivatives. The convolution is bilinear in (x, w):
//  - forward mode: conv(tx, w) + conv(x, tw), two more library steps;
//  - reverse mode: that linear map transposed by aj's own reverse mode, over
//    the composed form (core/api/conv_detail.hpp: views, a column matrix and
//    matmul), so the cotangents are the ones the composition has always had
//    (the input's: the column matrix's cotangent added back into the padded
//    input in one kernel; the weights': one matmul against the columns) and
//    differentiate again.
#include "arrayjit/autodiff.hpp"
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

void vjp_conv(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  trace::Scope scope;
  const ConvGeometry geo = geometry(n);
  const std::int64_t groups = n.i0;
  const Loc loc = n.loc;
  const Array x = n.in[0], w = n.in[1];
  std::vector<Array> primals;
  if (need[0]) primals.push_back(zeros_like(x, std::nullopt, loc));
  if (need[1]) primals.push_back(zeros_like(w, std::nullopt, loc));
  if (primals.empty()) return;
  const bool dx = need[0], dw = need[1];
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

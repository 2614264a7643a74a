// Convolution, pooling and resizing (arrayjit/conv.hpp) as compositions of
// views, pads, one concatenation (the column matrix), matmul and
// elementwise folds; their derivatives are those ops' own. A float
// convolution on the host is one Op::Conv node instead (the column matrix a
// tile at a time, backends/cpu/host_conv.hpp), differentiated as the
// composition (core/autodiff/rules_conv.cpp).
#include "arrayjit/conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "arrayjit/indexing.hpp"
#include "arrayjit/shape_functions.hpp"
#include "core/api/conv_detail.hpp"
#include "core/api/trace.hpp"
#include "exec/execute.hpp"
#include "graph/library.hpp"

namespace aj {

ConvPadding::ConvPadding(const char* m) {
  const std::string s = m ? m : "";
  if (s == "SAME" || s == "same") {
    mode = Mode::same;
  } else if (s == "VALID" || s == "valid") {
    mode = Mode::valid;
  } else {
    user_error("conv", "padding must be pairs, a number, \"SAME\" or \"VALID\", not \"" + s + "\"", Loc::current());
  }
}

namespace {

using trace::describe;
using Ints = std::vector<std::int64_t>;

using trace::At;

// One value per spatial axis: empty -> `dflt`, one -> repeated, else d of them.
Ints per_axis(const Ints& v, std::size_t d, std::int64_t dflt, const char* what, const char* op, const Loc& loc) {
  if (v.empty()) return Ints(d, dflt);
  if (v.size() == 1) return Ints(d, v[0]);
  if (v.size() != d) {
    user_error(op, std::string(what) + " has " + std::to_string(v.size()) + " values for " + std::to_string(d) +
                       " spatial axes", loc);
  }
  return v;
}

void positive(const Ints& v, const char* what, const char* op, const Loc& loc) {
  for (std::int64_t e : v) {
    if (e < 1) user_error(op, std::string(what) + " must be at least 1, got " + std::to_string(e), loc);
  }
}

// The window of output position p along an axis starts at p * stride; its
// taps are k * dilation: the strided view of tap k.
Array tap(const Array& x, int axis, std::int64_t k, std::int64_t dilation, std::int64_t stride, std::int64_t out,
          const Loc& loc) {
  const std::int64_t start = k * dilation;
  return slice(x, axis, start, start + (out - 1) * stride + 1, stride, loc);
}

// Every window offset's view of x over `axes`, row-major over the window.
std::vector<Array> window_views(const Array& x, const std::vector<int>& axes, const Ints& window, const Ints& strides,
                                const Ints& dilation, const Ints& out, const Loc& loc) {
  const std::size_t d = axes.size();
  std::vector<Array> views;
  Ints k(d, 0);
  while (true) {
    Array v = x;
    for (std::size_t i = 0; i < d; ++i) v = tap(v, axes[i], k[i], dilation[i], strides[i], out[i], loc);
    views.push_back(v);
    std::size_t i = d;
    while (i-- > 0) {
      if (++k[i] < window[i]) break;
      k[i] = 0;
    }
    if (i == static_cast<std::size_t>(-1)) return views;
  }
}

// The views combined by `f` (elementwise: one fused kernel), first to last.
template <class F>
Array fold_views(const std::vector<Array>& views, F f) {
  Array acc = views.front();
  for (std::size_t i = 1; i < views.size(); ++i) acc = f(acc, views[i]);
  return acc;
}

// x padded (or cropped, negative) along `axes` by (lo, hi) with `value`.
Array pad_axes(const Array& x, const std::vector<int>& axes, const std::vector<std::pair<std::int64_t, std::int64_t>>& p,
               Scalar value, const Loc& loc) {
  Array r = x;
  std::vector<PadWidth> widths(static_cast<std::size_t>(x.ndim()), PadWidth(0));
  bool any = false;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    auto [lo, hi] = p[i];
    const int ax = axes[i];
    if (lo < 0 || hi < 0) {  // crop first
      const std::int64_t e = r.shape()[ax];
      const std::int64_t from = lo < 0 ? std::min(-lo, e) : 0, to = hi < 0 ? std::max(e + hi, from) : e;
      r = slice(r, ax, from, to, 1, loc);
    }
    widths[static_cast<std::size_t>(ax)] = PadWidth(std::max<std::int64_t>(lo, 0), std::max<std::int64_t>(hi, 0));
    any = any || lo > 0 || hi > 0;
  }
  return any ? pad(r, widths, PadMode::constant, value, loc) : r;
}

// Extent after a window: floor((e - span) / stride) + 1, or 0.
std::int64_t windows(std::int64_t e, std::int64_t k, std::int64_t dilation, std::int64_t stride) {
  const std::int64_t span = (k - 1) * dilation + 1;
  return e >= span ? (e - span) / stride + 1 : 0;
}

// Positions of each layout letter; `spatial` letters in the order given.
struct Spec {
  std::string text;
  int pos(char c) const { return static_cast<int>(text.find(c)); }
};

std::string default_spatial(std::size_t d) { return d == 1 ? "W" : d == 2 ? "HW" : "DHW"; }

}  // namespace

namespace detail {

namespace {
bool& conv_library_flag() {
  static bool on = [] {
    const char* e = std::getenv("AJ_CONV");
    return !(e && std::strcmp(e, "compose") == 0);
  }();
  return on;
}
}  // namespace

bool conv_library() { return conv_library_flag(); }
void set_conv_library(bool on) { conv_library_flag() = on; }

// The column matrix [N, groups, C / groups * taps, positions], one view of
// the padded input per tap (a 1 x 1 window at stride 1 is the input as it
// lies), times the weights as [1, groups, O / groups, I * taps].
Array conv_composed(const Array& x, const Array& w, const ConvGeometry& geo, std::int64_t groups, const Loc& loc) {
  const std::size_t d = geo.dims();
  std::vector<int> axes;
  std::vector<std::pair<std::int64_t, std::int64_t>> pads;
  for (std::size_t i = 0; i < d; ++i) {
    axes.push_back(static_cast<int>(i) + 2);
    pads.emplace_back(geo.lo[i], geo.hi[i]);
  }
  const Array xp = pad_axes(x, axes, pads, 0, loc);
  const std::int64_t n = x.shape()[0], c = x.shape()[1], o = w.shape()[0], ig = w.shape()[1];
  Ints out_sp, kernel;
  std::int64_t taps = 1, positions = 1;
  for (std::size_t i = 0; i < d; ++i) {
    kernel.push_back(w.shape()[axes[i]]);
    out_sp.push_back(windows(xp.shape()[axes[i]], kernel[i], geo.dilation[i], geo.stride[i]));
    taps *= kernel[i];
    positions *= out_sp.back();
  }
  const std::int64_t g = groups, og = o / g;
  std::vector<std::int64_t> canon_dims{n, o};
  canon_dims.insert(canon_dims.end(), out_sp.begin(), out_sp.end());
  if (positions == 0 || n == 0 || o == 0) return zeros(Shape(canon_dims), x.dtype(), loc);
  const bool unit = taps == 1 && std::all_of(geo.stride.begin(), geo.stride.end(), [](std::int64_t s) { return s == 1; });
  const Array cols =
      reshape(unit ? xp : stack(window_views(xp, axes, kernel, geo.stride, geo.dilation, out_sp, loc), 2, loc),
              Shape{n, g, (c / g) * taps, positions}, loc);
  const Array wm = reshape(w, Shape{1, g, og, ig * taps}, loc);
  return reshape(matmul(wm, cols, loc), Shape(canon_dims), loc);
}

// The host's library step (backends/cpu/host_conv.cpp) builds the column
// matrix a tile at a time in cache instead of all of it in memory: taken for
// f32/f64 on the host, with work to do and a window wider than one point or
// a stride (a 1 x 1 window at stride 1 is a matmul of the input as it lies).
bool conv_as_library_step(const Array& x, const Array& w, const ConvGeometry& geo) {
  if (!conv_library() || (x.dtype() != DType::f32 && x.dtype() != DType::f64)) return false;
  const auto scope = exec::scope_device();
  if ((scope && scope->kind != Device::Kind::cpu) || x.device().kind != Device::Kind::cpu ||
      w.device().kind != Device::Kind::cpu) {
    return false;
  }
  std::int64_t taps = 1;
  bool moves = false;
  for (std::size_t i = 0; i < geo.dims(); ++i) {
    taps *= w.shape()[static_cast<int>(i) + 2];
    moves = moves || geo.stride[i] != 1 || geo.lo[i] != 0 || geo.hi[i] != 0;
  }
  const Shape out = conv_shape(x.shape(), w.shape(), geo);
  return out.numel() > 0 && x.shape()[1] > 0 && (taps > 1 || moves);
}

Array conv_node(const Array& x_in, const Array& w_in, const ConvGeometry& geo, std::int64_t groups, const Loc& loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "conv_general", loc);
  const Array& w = trace::local(w_in, "conv_general", loc);
  Node n;
  n.op = Op::Conv;
  n.dtype = x.dtype();
  n.shape = conv_shape(x.shape(), w.shape(), geo);
  trace::check_array_size(n.shape, n.dtype, "conv_general", loc);
  n.i0 = groups;
  n.ints = geo.pack();
  n.inputs = {x.node_id(), w.node_id()};
  return trace::make(std::move(n), loc);
}

Array conv_weight_grad_node(const Array& x_in, const Array& g_in, const Shape& w, const ConvGeometry& geo,
                            std::int64_t groups, const Loc& loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "conv_general", loc);
  const Array& g = trace::local(g_in, "conv_general", loc);
  if (g.dtype() != x.dtype() || g.shape() != conv_shape(x.shape(), w, geo)) {
    internal_error("conv weight gradient: g is not the convolution's result");
  }
  Node n;
  n.op = Op::Conv;
  n.dtype = x.dtype();
  n.shape = w;
  n.i0 = groups;
  n.i1 = kConvWeightGrad;
  n.ints = geo.pack();
  n.inputs = {x.node_id(), g.node_id()};
  return trace::make(std::move(n), loc);
}

}  // namespace detail

Array conv_general(const Array& x_in, const Array& w_in, Ints strides, ConvPadding padding, Ints lhs_dilation,
                   Ints rhs_dilation, std::int64_t groups, const ConvLayout& layout, Loc loc) try {
  trace::Scope scope;
  const At at{loc};
  const Array& x0 = trace::local(x_in, "conv_general", loc);
  const Array& w0 = trace::local(w_in, "conv_general", loc);
  const int nd = x0.ndim();
  if (nd < 3 || nd > 5) {
    user_error("conv_general", "takes inputs with 1 to 3 spatial axes plus batch and feature axes, got " +
                                   describe(x0), loc);
  }
  if (w0.ndim() != nd) {
    user_error("conv_general", "weights " + describe(w0) + " must have the input's rank " + std::to_string(nd), loc);
  }
  const std::size_t d = static_cast<std::size_t>(nd - 2);
  // Layouts: letters to canonical [N, C, s...], [O, I, s...] (spatial in
  // the rhs spec's order, as JAX), and the result back to out's letters.
  const std::string sp = default_spatial(d);
  const Spec lhs{layout.lhs.empty() ? "NC" + sp : layout.lhs}, rhs{layout.rhs.empty() ? "OI" + sp : layout.rhs};
  const Spec out_spec{layout.out.empty() ? lhs.text : layout.out};
  std::string spatial;
  for (char c : rhs.text) {
    if (c != 'O' && c != 'I') spatial += c;
  }
  auto check_spec = [&](const Spec& s, char a, char b, const char* which) {
    bool ok = s.text.size() == static_cast<std::size_t>(nd) && s.pos(a) >= 0 && s.pos(b) >= 0 && spatial.size() == d;
    for (char c : spatial) ok = ok && s.pos(c) >= 0 && std::count(s.text.begin(), s.text.end(), c) == 1;
    if (!ok) {
      user_error("conv_general", std::string("layout ") + which + " \"" + s.text + "\" must name " + a + ", " + b +
                                     " and the weights' spatial letters \"" + spatial + "\" once each, for rank " +
                                     std::to_string(nd), loc);
    }
  };
  check_spec(lhs, 'N', 'C', "lhs");
  check_spec(rhs, 'O', 'I', "rhs");
  check_spec(out_spec, 'N', 'C', "out");
  std::vector<int> lp{lhs.pos('N'), lhs.pos('C')}, rp{rhs.pos('O'), rhs.pos('I')};
  for (char c : spatial) {
    lp.push_back(lhs.pos(c));
    rp.push_back(rhs.pos(c));
  }
  DType t = promote_types(x0.dtype(), w0.dtype());
  if (t == DType::bool_) user_error("conv_general", "does not take bool operands", loc);
  const Array x = transpose(x0, lp, loc).astype(t, loc);
  const Array w = transpose(w0, rp, loc).astype(t, loc);
  const std::int64_t c = x.shape()[1], o = w.shape()[0], ig = w.shape()[1];
  if (groups < 1 || c != ig * groups || o % groups != 0) {
    user_error("conv_general", "with " + std::to_string(groups) + " groups the input's " + std::to_string(c) +
                                   " features must be the weights' " + std::to_string(ig) + " per group times the groups, and the " +
                                   std::to_string(o) + " outputs a multiple of the groups (" + describe(x0) + ", " +
                                   describe(w0) + ")", loc);
  }
  strides = per_axis(strides, d, 1, "strides", "conv_general", loc);
  lhs_dilation = per_axis(lhs_dilation, d, 1, "lhs_dilation", "conv_general", loc);
  rhs_dilation = per_axis(rhs_dilation, d, 1, "rhs_dilation", "conv_general", loc);
  positive(strides, "strides", "conv_general", loc);
  positive(lhs_dilation, "lhs_dilation", "conv_general", loc);
  positive(rhs_dilation, "rhs_dilation", "conv_general", loc);
  std::vector<int> axes;
  Ints kernel, spread;
  for (std::size_t i = 0; i < d; ++i) {
    axes.push_back(static_cast<int>(i) + 2);
    kernel.push_back(w.shape()[static_cast<int>(i) + 2]);
    const std::int64_t e = x.shape()[static_cast<int>(i) + 2];
    spread.push_back(e == 0 ? 0 : (e - 1) * lhs_dilation[i] + 1);
  }
  // The input spread by lhs_dilation: its elements every ld-th place, zeros
  // between (one pad node).
  Array xs = x;
  if (std::any_of(lhs_dilation.begin(), lhs_dilation.end(), [](std::int64_t v) { return v > 1; })) {
    std::vector<std::int64_t> dims = x.shape().dims();
    std::vector<Slice> where(2, Slice());
    for (std::size_t i = 0; i < d; ++i) {
      dims[i + 2] = spread[i];
      where.push_back(Slice(0, std::nullopt, lhs_dilation[i]));
    }
    xs = slice_update(zeros(Shape(dims), t, loc), where, at.o(x), loc);
  }
  // Padding pairs.
  std::vector<std::pair<std::int64_t, std::int64_t>> pads;
  if (padding.mode == ConvPadding::Mode::pairs) {
    pads = padding.pairs;
    if (pads.empty()) pads.assign(d, {0, 0});
    if (pads.size() == 1) pads.assign(d, pads[0]);
    if (pads.size() != d) {
      user_error("conv_general", "padding has " + std::to_string(pads.size()) + " pairs for " + std::to_string(d) +
                                     " spatial axes", loc);
    }
  } else {
    for (std::size_t i = 0; i < d; ++i) {
      if (padding.mode == ConvPadding::Mode::valid) {
        pads.emplace_back(0, 0);
        continue;
      }
      const std::int64_t out = (spread[i] + strides[i] - 1) / strides[i];  // ceil(e / stride)
      const std::int64_t span = (kernel[i] - 1) * rhs_dilation[i] + 1;
      const std::int64_t total = std::max<std::int64_t>((out - 1) * strides[i] + span - spread[i], 0);
      pads.emplace_back(total / 2, total - total / 2);
    }
  }
  ConvGeometry geo;
  geo.stride = strides;
  geo.dilation = rhs_dilation;
  for (const auto& [lo, hi] : pads) {
    geo.lo.push_back(lo);
    geo.hi.push_back(hi);
  }
  const bool spread_input = xs.node_id() != x.node_id();
  const Array out = !spread_input && detail::conv_as_library_step(x, w, geo)
                        ? detail::conv_node(x, w, geo, groups, loc)
                        : detail::conv_composed(xs, w, geo, groups, loc);
  // Back to out's letters.
  std::vector<int> op(static_cast<std::size_t>(nd));
  for (int j = 0; j < nd; ++j) {
    const char ch = out_spec.text[static_cast<std::size_t>(j)];
    op[static_cast<std::size_t>(j)] = ch == 'N' ? 0 : ch == 'C' ? 1 : 2 + static_cast<int>(spatial.find(ch));
  }
  return transpose(out, op, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("conv_general", loc);
}

namespace {

// PyTorch's conv{1,2,3}d: [N, C, s...] or unbatched [C, s...].
Array torch_conv(std::size_t d, const Array& x_in, const Array& w, const Array& bias, const Ints& stride,
                 ConvPadding padding, const Ints& dilation, std::int64_t groups, const char* op, const Loc& loc) {
  trace::Scope scope;
  const At at{loc};
  const int nd = x_in.ndim(loc);
  if (nd != static_cast<int>(d) + 2 && nd != static_cast<int>(d) + 1) {
    user_error(op, "takes [N, C, " + std::to_string(d) + " spatial axes] or [C, spatial...], got " + describe(x_in), loc);
  }
  const bool unbatched = nd == static_cast<int>(d) + 1;
  const Array x = unbatched ? expand_dims(x_in, 0, loc) : x_in;
  if (padding.mode == ConvPadding::Mode::same &&
      std::any_of(stride.begin(), stride.end(), [](std::int64_t s) { return s != 1; })) {
    user_error(op, "padding \"same\" needs unit strides (as PyTorch)", loc);
  }
  if (padding.mode == ConvPadding::Mode::same) {  // PyTorch's: total d (k - 1), the odd one at the end
    const Ints dl = per_axis(dilation, d, 1, "dilation", op, loc);
    std::vector<std::pair<std::int64_t, std::int64_t>> p;
    for (std::size_t i = 0; i < d; ++i) {
      const std::int64_t total = dl[i] * (w.shape()[static_cast<int>(i) + 2] - 1);
      p.emplace_back(total / 2, total - total / 2);
    }
    padding = ConvPadding(p);
  }
  Array r = conv_general(x, w, per_axis(stride, d, 1, "stride", op, loc), padding, {},
                         per_axis(dilation, d, 1, "dilation", op, loc), groups, {}, loc);
  if (bias.valid()) {
    std::vector<std::int64_t> bd(d + 2, 1);
    bd[1] = bias.size(loc);
    r = at.o(r) + at.o(reshape(bias, Shape(bd), loc));
  }
  return unbatched ? squeeze(r, Axes(0), loc) : r;
}

// PyTorch's conv_transpose{1,2,3}d: the input gradient of a convolution.
Array torch_conv_transpose(std::size_t d, const Array& x_in, const Array& w, const Array& bias, const Ints& stride_in,
                           const Ints& padding_in, const Ints& out_pad_in, std::int64_t groups, const Ints& dilation_in,
                           const char* op, const Loc& loc) {
  trace::Scope scope;
  const At at{loc};
  const int nd = x_in.ndim(loc);
  if (nd != static_cast<int>(d) + 2 && nd != static_cast<int>(d) + 1) {
    user_error(op, "takes [N, C, " + std::to_string(d) + " spatial axes] or [C, spatial...], got " + describe(x_in), loc);
  }
  if (w.ndim(loc) != static_cast<int>(d) + 2) user_error(op, "weights must be [C, O / groups, k...], got " + describe(w), loc);
  const bool unbatched = nd == static_cast<int>(d) + 1;
  const Array x = unbatched ? expand_dims(x_in, 0, loc) : x_in;
  const Ints stride = per_axis(stride_in, d, 1, "stride", op, loc), pad_ = per_axis(padding_in, d, 0, "padding", op, loc);
  const Ints out_pad = per_axis(out_pad_in, d, 0, "output_padding", op, loc);
  const Ints dil = per_axis(dilation_in, d, 1, "dilation", op, loc);
  positive(stride, "stride", op, loc);
  positive(dil, "dilation", op, loc);
  const std::int64_t cin = w.shape()[0], coutg = w.shape()[1];
  if (groups < 1 || cin % groups != 0) {
    user_error(op, "weights' " + std::to_string(cin) + " input features are not a multiple of " +
                       std::to_string(groups) + " groups", loc);
  }
  for (std::size_t i = 0; i < d; ++i) {
    if (out_pad[i] < 0 || (out_pad[i] >= stride[i] && out_pad[i] >= dil[i])) {
      user_error(op, "output_padding must be below the stride or the dilation (PyTorch's rule), got " +
                         std::to_string(out_pad[i]), loc);
    }
  }
  // [C, O/g, k...] -> [g, C/g, O/g, k...] -> [O, C/g, k...], spatially flipped.
  std::vector<std::int64_t> gd{groups, cin / groups, coutg};
  std::vector<int> flip_axes;
  for (std::size_t i = 0; i < d; ++i) {
    gd.push_back(w.shape()[static_cast<int>(i) + 2]);
    flip_axes.push_back(static_cast<int>(i) + 2);
  }
  Array wg = swapaxes(reshape(w, Shape(gd), loc), 1, 2, loc);
  std::vector<std::int64_t> wd{groups * coutg, cin / groups};
  wd.insert(wd.end(), gd.begin() + 3, gd.end());
  const Array wt = flip(reshape(wg, Shape(wd), loc), Axes(flip_axes), loc);
  std::vector<std::pair<std::int64_t, std::int64_t>> p;
  for (std::size_t i = 0; i < d; ++i) {
    const std::int64_t k = dil[i] * (gd[i + 3] - 1);
    p.emplace_back(k - pad_[i], k - pad_[i] + out_pad[i]);
  }
  Array r = conv_general(x, wt, {}, ConvPadding(p), stride, dil, groups, {}, loc);
  if (bias.valid()) {
    std::vector<std::int64_t> bd(d + 2, 1);
    bd[1] = bias.size(loc);
    r = at.o(r) + at.o(reshape(bias, Shape(bd), loc));
  }
  return unbatched ? squeeze(r, Axes(0), loc) : r;
}

}  // namespace

Array conv1d(const Array& x, const Array& w, const Array& bias, Ints stride, ConvPadding padding, Ints dilation,
             std::int64_t groups, Loc loc) {
  return torch_conv(1, x, w, bias, stride, std::move(padding), dilation, groups, "conv1d", loc);
}
Array conv2d(const Array& x, const Array& w, const Array& bias, Ints stride, ConvPadding padding, Ints dilation,
             std::int64_t groups, Loc loc) {
  return torch_conv(2, x, w, bias, stride, std::move(padding), dilation, groups, "conv2d", loc);
}
Array conv3d(const Array& x, const Array& w, const Array& bias, Ints stride, ConvPadding padding, Ints dilation,
             std::int64_t groups, Loc loc) {
  return torch_conv(3, x, w, bias, stride, std::move(padding), dilation, groups, "conv3d", loc);
}
Array conv_transpose1d(const Array& x, const Array& w, const Array& bias, Ints stride, Ints padding,
                       Ints output_padding, std::int64_t groups, Ints dilation, Loc loc) {
  return torch_conv_transpose(1, x, w, bias, stride, padding, output_padding, groups, dilation, "conv_transpose1d", loc);
}
Array conv_transpose2d(const Array& x, const Array& w, const Array& bias, Ints stride, Ints padding,
                       Ints output_padding, std::int64_t groups, Ints dilation, Loc loc) {
  return torch_conv_transpose(2, x, w, bias, stride, padding, output_padding, groups, dilation, "conv_transpose2d", loc);
}
Array conv_transpose3d(const Array& x, const Array& w, const Array& bias, Ints stride, Ints padding,
                       Ints output_padding, std::int64_t groups, Ints dilation, Loc loc) {
  return torch_conv_transpose(3, x, w, bias, stride, padding, output_padding, groups, dilation, "conv_transpose3d", loc);
}

namespace {

// The pooling of max_pool and avg_pool over the last window.size() axes.
struct Pooling {
  std::vector<int> axes;
  Ints window, strides, pads, dilation, out, extra;  // extra: ceil_mode's high overhang
};

Pooling pooling(const Array& x, Ints window, Ints strides, Ints padding, bool ceil_mode, Ints dilation, const char* op,
                const Loc& loc) {
  Pooling p;
  const std::size_t d = window.size();
  const int nd = x.ndim(loc);
  if (d < 1 || d > 3 || (nd != static_cast<int>(d) + 1 && nd != static_cast<int>(d) + 2)) {
    user_error(op, "takes a window of 1 to 3 axes over [N, C, spatial...] or [C, spatial...], got a window of " +
                       std::to_string(d) + " for " + describe(x), loc);
  }
  p.window = window;
  positive(p.window, "window", op, loc);
  p.strides = strides.empty() ? window : per_axis(strides, d, 1, "strides", op, loc);
  p.pads = per_axis(padding, d, 0, "padding", op, loc);
  p.dilation = per_axis(dilation, d, 1, "dilation", op, loc);
  positive(p.strides, "strides", op, loc);
  positive(p.dilation, "dilation", op, loc);
  for (std::size_t i = 0; i < d; ++i) {
    const int ax = nd - static_cast<int>(d) + static_cast<int>(i);
    p.axes.push_back(ax);
    const std::int64_t e = x.shape()[ax], k = p.window[i], s = p.strides[i], pd = p.pads[i], dl = p.dilation[i];
    if (pd < 0 || 2 * pd > (k - 1) * dl + 1) {
      user_error(op, "padding " + std::to_string(pd) + " must be between 0 and half the window (PyTorch's rule)", loc);
    }
    const std::int64_t span = (k - 1) * dl + 1, len = e + 2 * pd - span;
    std::int64_t o = len < 0 ? 0 : (ceil_mode ? (len + s - 1) / s : len / s) + 1;
    // PyTorch: the last window must start inside the input or its low padding.
    if (ceil_mode && o > 0 && (o - 1) * s >= e + pd) --o;
    p.out.push_back(o);
    p.extra.push_back(std::max<std::int64_t>(0, (o - 1) * s + span - (e + 2 * pd)));
  }
  return p;
}

std::vector<std::pair<std::int64_t, std::int64_t>> pairs_of(const Pooling& p, bool with_extra) {
  std::vector<std::pair<std::int64_t, std::int64_t>> r;
  for (std::size_t i = 0; i < p.axes.size(); ++i) r.emplace_back(p.pads[i], p.pads[i] + (with_extra ? p.extra[i] : 0));
  return r;
}

// The identities of max and min in t.
Scalar lowest(DType t) {
  if (is_float(t)) return -std::numeric_limits<double>::infinity();
  if (t == DType::bool_) return false;
  if (t == DType::i32) return std::int64_t{std::numeric_limits<std::int32_t>::min()};
  return std::numeric_limits<std::int64_t>::min();
}
Scalar highest(DType t) {
  if (is_float(t)) return std::numeric_limits<double>::infinity();
  if (t == DType::bool_) return true;
  if (t == DType::i32) return std::int64_t{std::numeric_limits<std::int32_t>::max()};
  return std::numeric_limits<std::int64_t>::max();
}

}  // namespace

// Windows that tile the input (strides = window, no padding, no dilation,
// none past the end): x, cut to whole windows, as [..., out_i, window_i, ...]
// (a view), so that pooling is a reduction over the window axes and its
// derivative a broadcast, with no strided view to put back. Nullopt otherwise.
std::optional<Array> window_tiles(const Array& x, const Pooling& p, const Loc& loc) {
  std::vector<std::int64_t> dims;
  Array v = x;
  for (int a = 0; a < x.ndim(); ++a) {
    const auto it = std::find(p.axes.begin(), p.axes.end(), a);
    if (it == p.axes.end()) {
      dims.push_back(x.shape()[a]);
      continue;
    }
    const auto i = static_cast<std::size_t>(it - p.axes.begin());
    if (p.strides[i] != p.window[i] || p.pads[i] != 0 || p.dilation[i] != 1 || p.extra[i] != 0) return std::nullopt;
    if (p.out[i] * p.window[i] != x.shape()[a]) v = slice(v, a, 0, p.out[i] * p.window[i], 1, loc);
    dims.push_back(p.out[i]);
    dims.push_back(p.window[i]);
  }
  return reshape(v, Shape(std::move(dims)), loc);
}
// The window axes of window_tiles' view.
std::vector<int> tile_axes(const Pooling& p) {
  std::vector<int> r;
  for (std::size_t i = 0; i < p.axes.size(); ++i) r.push_back(p.axes[i] + static_cast<int>(i) + 1);
  return r;
}

Array max_pool(const Array& x_in, Ints window, Ints strides, Ints padding, bool ceil_mode, Ints dilation, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const Array& x = trace::local(x_in, "max_pool", loc);
  const Pooling p = pooling(x, window, strides, padding, ceil_mode, dilation, "max_pool", loc);
  if (std::any_of(p.out.begin(), p.out.end(), [](std::int64_t o) { return o == 0; })) {
    std::vector<std::int64_t> dims = x.shape().dims();
    for (std::size_t i = 0; i < p.axes.size(); ++i) dims[static_cast<std::size_t>(p.axes[i])] = p.out[i];
    return zeros(Shape(dims), x.dtype(), loc);
  }
  if (std::optional<Array> tiles = window_tiles(x, p, loc)) return aj::max(*tiles, tile_axes(p), false, loc);
  const Array xp = pad_axes(x, p.axes, pairs_of(p, true), lowest(x.dtype()), loc);
  return fold_views(window_views(xp, p.axes, p.window, p.strides, p.dilation, p.out, loc),
                    [&](const Array& a, const Array& b) { return maximum(at.o(a), at.o(b)); });
}

Array avg_pool(const Array& x_in, Ints window, Ints strides, Ints padding, bool ceil_mode, bool count_include_pad,
               Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const Array& x0 = trace::local(x_in, "avg_pool", loc);
  if (x0.dtype() == DType::bool_) user_error("avg_pool", "does not take bool " + describe(x0), loc);
  const Array x = is_float(x0.dtype()) ? x0 : x0.astype(DType::f64, loc);
  const Pooling p = pooling(x, window, strides, padding, ceil_mode, {}, "avg_pool", loc);
  if (std::any_of(p.out.begin(), p.out.end(), [](std::int64_t o) { return o == 0; })) {
    std::vector<std::int64_t> dims = x.shape().dims();
    for (std::size_t i = 0; i < p.axes.size(); ++i) dims[static_cast<std::size_t>(p.axes[i])] = p.out[i];
    return zeros(Shape(dims), x.dtype(), loc);
  }
  const auto add_views = [&](const Array& a, const Array& b) { return at.o(a) + at.o(b); };
  const Array sums = fold_views(
      window_views(pad_axes(x, p.axes, pairs_of(p, true), 0, loc), p.axes, p.window, p.strides, p.dilation, p.out, loc),
      add_views);
  // The divisor per output position over the spatial axes alone: the same
  // windows over ones (the input, or the input and its padding) padded with
  // zeros.
  std::vector<std::int64_t> sd;
  std::vector<int> local_axes;
  for (std::size_t i = 0; i < p.axes.size(); ++i) {
    sd.push_back(x.shape()[p.axes[i]] + (count_include_pad ? 2 * p.pads[i] : 0));
    local_axes.push_back(static_cast<int>(i));
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> mask_pads;
  for (std::size_t i = 0; i < p.axes.size(); ++i) {
    mask_pads.emplace_back(count_include_pad ? 0 : p.pads[i], p.extra[i] + (count_include_pad ? 0 : p.pads[i]));
  }
  const Array ones_ = pad_axes(ones(Shape(sd), x.dtype(), loc), local_axes, mask_pads, 0, loc);
  const Array count =
      fold_views(window_views(ones_, local_axes, p.window, p.strides, p.dilation, p.out, loc), add_views);
  return at.o(sums) / at.o(count);
}

Array reduce_window(const Array& x_in, const std::string& op, Ints window, Ints strides,
                    std::vector<std::pair<std::int64_t, std::int64_t>> padding, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const Array& x = trace::local(x_in, "reduce_window", loc);
  const std::size_t nd = static_cast<std::size_t>(x.ndim());
  if (window.size() != nd) {
    user_error("reduce_window", "needs a window extent for each of the " + std::to_string(nd) + " axes of " +
                                    describe(x) + ", got " + std::to_string(window.size()), loc);
  }
  positive(window, "window", "reduce_window", loc);
  strides = strides.empty() ? Ints(nd, 1) : strides;
  if (strides.size() != nd) user_error("reduce_window", "needs a stride for each axis", loc);
  positive(strides, "strides", "reduce_window", loc);
  if (padding.empty()) padding.assign(nd, {0, 0});
  if (padding.size() != nd) user_error("reduce_window", "needs a (low, high) padding for each axis", loc);
  Scalar identity = 0;
  std::function<Array(const Array&, const Array&)> fold;
  if (op == "sum") {
    fold = [&](const Array& a, const Array& b) { return at.o(a) + at.o(b); };
  } else if (op == "prod") {
    identity = 1;
    fold = [&](const Array& a, const Array& b) { return at.o(a) * at.o(b); };
  } else if (op == "max") {
    identity = lowest(x.dtype());
    fold = [&](const Array& a, const Array& b) { return maximum(at.o(a), at.o(b)); };
  } else if (op == "min") {
    identity = highest(x.dtype());
    fold = [&](const Array& a, const Array& b) { return minimum(at.o(a), at.o(b)); };
  } else {
    user_error("reduce_window", "op must be \"sum\", \"prod\", \"max\" or \"min\", not \"" + op + "\"", loc);
  }
  std::vector<int> axes;
  for (std::size_t i = 0; i < nd; ++i) axes.push_back(static_cast<int>(i));
  const Array xp = pad_axes(x, axes, padding, identity, loc);
  Ints out, dil(nd, 1);
  for (std::size_t i = 0; i < nd; ++i) out.push_back(windows(xp.shape()[axes[i]], window[i], 1, strides[i]));
  if (std::any_of(out.begin(), out.end(), [](std::int64_t o) { return o == 0; })) {
    return zeros(Shape(out), x.dtype(), loc);
  }
  return fold_views(window_views(xp, axes, window, strides, dil, out, loc), fold);
}

Array interpolate(const Array& x_in, Ints size, const std::string& mode, bool align_corners, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const Array& x0 = trace::local(x_in, "interpolate", loc);
  const std::size_t d = size.size();
  const int nd = x0.ndim();
  if (d < 1 || d > 3 || nd < static_cast<int>(d) + 1) {
    user_error("interpolate", "takes 1 to 3 sizes for the last axes of [N, C, spatial...], got " +
                                  std::to_string(d) + " for " + describe(x0), loc);
  }
  const bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  if (!linear && mode != "nearest") {
    user_error("interpolate", "mode must be \"nearest\", \"linear\", \"bilinear\" or \"trilinear\", not \"" + mode + "\"",
               loc);
  }
  Array x = linear && !is_float(x0.dtype()) ? x0.astype(DType::f64, loc) : x0;
  for (std::size_t i = 0; i < d; ++i) {
    const int ax = nd - static_cast<int>(d) + static_cast<int>(i);
    const std::int64_t in = x.shape()[ax], out = size[i];
    if (out < 0) user_error("interpolate", "sizes must not be negative, got " + std::to_string(out), loc);
    if (in == out) continue;
    if (in == 0) user_error("interpolate", "cannot resize an empty axis to " + std::to_string(out), loc);
    std::vector<std::int64_t> i0(static_cast<std::size_t>(out)), i1(static_cast<std::size_t>(out));
    std::vector<double> frac(static_cast<std::size_t>(out));
    for (std::int64_t o = 0; o < out; ++o) {
      const auto k = static_cast<std::size_t>(o);
      if (!linear) {
        i0[k] = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(static_cast<double>(o) * in / out)), in - 1);
        continue;
      }
      double src = align_corners ? (out > 1 ? static_cast<double>(o) * (in - 1) / (out - 1) : 0.0)
                                 : std::max((static_cast<double>(o) + 0.5) * in / out - 0.5, 0.0);
      i0[k] = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(src)), in - 1);
      i1[k] = std::min<std::int64_t>(i0[k] + 1, in - 1);
      frac[k] = src - static_cast<double>(i0[k]);
    }
    // The indices and weights are made here, on the host: moved to x's
    // device (no copy when that is the host).
    const Device dev = x.device(loc);
    const Array lo = take(x, from_vector(i0, loc).to(dev, loc), ax, loc);
    if (!linear) {
      x = lo;
      continue;
    }
    std::vector<std::int64_t> wd(static_cast<std::size_t>(nd - ax), 1);
    wd[0] = out;
    const Array w = reshape(from_vector(frac, loc).astype(x.dtype(), loc).to(dev, loc), Shape(wd), loc);
    const Array hi = take(x, from_vector(i1, loc).to(dev, loc), ax, loc);
    x = at.o(lo) + at.o(at.o(w) * at.o(at.o(hi) - at.o(lo)));
  }
  return x;
}

}  // namespace aj

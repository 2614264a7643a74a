// Convolution, pooling and resizing (arrayjit/conv.hpp, issue 37 points 2
// and 3) against loops written here from the definitions: conv_general over
// 1 to 3 spatial axes with strides, padding (pairs, negative, SAME, VALID),
// input and kernel dilation, groups and other layouts; PyTorch's conv{1,2,3}d
// and conv_transpose{1,2,3}d (the transpose checked as the convolution's
// adjoint, <conv(x), y> = <x, conv_transpose(y)>); max_pool and avg_pool with
// padding, ceil_mode and count_include_pad; reduce_window; interpolate
// nearest and linear; every derivative against central differences
// (tests/autodiff_check.hpp); errors.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/api/conv_detail.hpp"
#include "core/api/executor.hpp"
#include "tests/autodiff_check.hpp"
#include "tests/cuda_fake_driver.hpp"
#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using Ints = std::vector<std::int64_t>;

std::vector<double> normals(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return ajtest::normal_values(static_cast<std::size_t>(n), rng);
}

// Calls f(index) for every index of `dims`, row-major.
void each(const Ints& dims, const std::function<void(const Ints&)>& f) {
  for (std::int64_t e : dims) {
    if (e == 0) return;
  }
  Ints i(dims.size(), 0);
  while (true) {
    f(i);
    std::size_t k = dims.size();
    while (k-- > 0) {
      if (++i[k] < dims[k]) break;
      i[k] = 0;
    }
    if (k == static_cast<std::size_t>(-1)) return;
  }
}

std::int64_t flat(const Ints& dims, const Ints& idx) {
  std::int64_t f = 0;
  for (std::size_t k = 0; k < dims.size(); ++k) f = f * dims[k] + idx[k];
  return f;
}

struct Conv {
  Ints strides, lhs_dil, rhs_dil;
  std::vector<std::pair<std::int64_t, std::int64_t>> pads;
  std::int64_t groups = 1;
};

// The input index [n, feature, s...] that tap k of output point oi [n, o,
// p...] reads, or false where it falls in the padding (or between the
// points of a dilated input).
bool tap_index(const Ints& xd, const Conv& c, const Ints& oi, const Ints& k, std::int64_t feature, Ints* xi) {
  *xi = {oi[0], feature};
  for (std::size_t a = 0; a + 2 < xd.size(); ++a) {
    const std::int64_t q = oi[a + 2] * c.strides[a] + k[a] * c.rhs_dil[a] - c.pads[a].first;
    if (q < 0 || q % c.lhs_dil[a] != 0 || q / c.lhs_dil[a] >= xd[a + 2]) return false;
    xi->push_back(q / c.lhs_dil[a]);
  }
  return true;
}

// The definition in canonical layouts: x [N, C, S...], w [O, C / g, K...].
std::pair<std::vector<double>, Ints> naive_conv(const std::vector<double>& x, const Ints& xd,
                                                const std::vector<double>& w, const Ints& wd, const Conv& c) {
  const std::size_t d = xd.size() - 2;
  const std::int64_t n = xd[0], o = wd[0], ig = wd[1], og = o / c.groups;
  Ints od{n, o};
  for (std::size_t i = 0; i < d; ++i) {
    const std::int64_t s = xd[i + 2], p = s == 0 ? 0 : (s - 1) * c.lhs_dil[i] + 1 + c.pads[i].first + c.pads[i].second;
    const std::int64_t span = (wd[i + 2] - 1) * c.rhs_dil[i] + 1;
    od.push_back(p >= span ? (p - span) / c.strides[i] + 1 : 0);
  }
  Ints ksp(wd.begin() + 2, wd.end()), osp(od.begin() + 2, od.end());
  std::vector<double> out(static_cast<std::size_t>(std::max<std::int64_t>(1, flat(od, od))), 0.0);
  std::int64_t total = 1;
  for (std::int64_t e : od) total *= e;
  out.assign(static_cast<std::size_t>(total), 0.0);
  each(od, [&](const Ints& oi) {
    double acc = 0;
    const std::int64_t g = oi[1] / og;
    for (std::int64_t i = 0; i < ig; ++i) {
      each(ksp, [&](const Ints& k) {
        Ints xi, wi;
        if (!tap_index(xd, c, oi, k, g * ig + i, &xi)) return;
        wi = {oi[1], i};
        wi.insert(wi.end(), k.begin(), k.end());
        acc += x[static_cast<std::size_t>(flat(xd, xi))] * w[static_cast<std::size_t>(flat(wd, wi))];
      });
    }
    out[static_cast<std::size_t>(flat(od, oi))] = acc;
  });
  return {out, od};
}

// The weights' gradient of naive_conv for the result's cotangent gy [od]:
// dw[o, i, k] = sum over the result's points of gy times the input there.
std::vector<double> naive_weight_grad(const std::vector<double>& x, const Ints& xd, const std::vector<double>& gy,
                                      const Ints& od, const Ints& wd, const Conv& c) {
  const std::int64_t ig = wd[1], og = wd[0] / c.groups;
  Ints ksp(wd.begin() + 2, wd.end());
  std::int64_t total = 1;
  for (std::int64_t e : wd) total *= e;
  std::vector<double> dw(static_cast<std::size_t>(total), 0.0);
  each(od, [&](const Ints& oi) {
    const std::int64_t g = oi[1] / og;
    const double gv = gy[static_cast<std::size_t>(flat(od, oi))];
    for (std::int64_t i = 0; i < ig; ++i) {
      each(ksp, [&](const Ints& k) {
        Ints xi, wi;
        if (!tap_index(xd, c, oi, k, g * ig + i, &xi)) return;
        wi = {oi[1], i};
        wi.insert(wi.end(), k.begin(), k.end());
        dw[static_cast<std::size_t>(flat(wd, wi))] += gv * x[static_cast<std::size_t>(flat(xd, xi))];
      });
    }
  });
  return dw;
}

void close(const std::vector<double>& got, const std::vector<double>& want, double eps, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  double err = 0, scale = 1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  CHECK_MESSAGE(err <= eps * scale, what << ": max error " << err);
}

// The library step's cases: tiles of its scratch block hold about 256 KiB,
// so results of several thousand points cross tile and output-row
// boundaries inside a tile.
struct StepCase {
  Ints xd, wd;
  Conv c;
};
std::vector<StepCase> step_cases() {
  return {
      {{2, 3, 40, 50}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1}},
      {{1, 64, 30, 31}, {8, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1}},  // K = 576: tiles of 112
      {{2, 4, 33, 29}, {6, 2, 5, 3}, {{2, 3}, {1, 1}, {2, 1}, {{3, 0}, {-1, 2}}, 2}},
      {{3, 2, 300}, {5, 2, 7}, {{3}, {1}, {2}, {{4, 4}}, 1}},
      {{1, 3, 9, 10, 11}, {2, 3, 3, 2, 3}, {{1, 2, 1}, {1, 1, 1}, {1, 1, 2}, {{1, 1}, {0, 1}, {2, 0}}, 1}},
      {{2, 8, 20, 20}, {8, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 8}},  // depthwise
      {{2, 6, 17, 17}, {4, 6, 1, 1}, {{2, 2}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, 1}},  // 1x1 at stride 2
  };
}

Array make(const std::vector<double>& v, const Ints& d, DType t = DType::f64) {
  return aj::from_vector(v, Shape(d)).astype(t);
}

}  // namespace

TEST_CASE("conv_general against the definition: 1 to 3 spatial axes, strides, padding, dilations, groups") {
  struct Case {
    Ints xd, wd;
    Conv c;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9}, {4, 3, 3}, {{1}, {1}, {1}, {{0, 0}}, 1}},
      {{2, 4, 10}, {6, 2, 3}, {{2}, {1}, {2}, {{2, 1}}, 2}},
      {{1, 2, 7, 6}, {3, 2, 3, 2}, {{1, 2}, {1, 1}, {1, 1}, {{1, 1}, {0, 2}}, 1}},
      {{2, 4, 8, 8}, {4, 1, 3, 3}, {{2, 1}, {1, 1}, {2, 1}, {{1, 2}, {-1, 1}}, 4}},  // depthwise, a crop
      {{1, 3, 5, 4}, {2, 3, 2, 2}, {{1, 1}, {2, 3}, {1, 1}, {{1, 1}, {1, 1}}, 1}},   // spread input
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 1}, {{1, 2, 1}, {1, 1, 2}, {1, 1, 1}, {{0, 1}, {1, 1}, {0, 0}}, 1}},
      {{3, 8, 6, 6}, {5, 8, 1, 1}, {{1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, 1}},  // 1x1: the matmul alone
      {{1, 2, 3, 3}, {2, 2, 5, 5}, {{1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, 1}},  // window larger: empty
  };
  ajtest::on_both([&] {
    std::uint64_t seed = 1;
    for (const Case& k : cases) {
      CAPTURE(Shape(k.xd).str());
      CAPTURE(Shape(k.wd).str());
      const auto xv = normals(Shape(k.xd).numel(), seed++), wv = normals(Shape(k.wd).numel(), seed++);
      const auto [want, od] = naive_conv(xv, k.xd, wv, k.wd, k.c);
      for (DType t : {DType::f64, DType::f32}) {
        const Array r = aj::conv_general(make(xv, k.xd, t), make(wv, k.wd, t), k.c.strides, k.c.pads, k.c.lhs_dil,
                                         k.c.rhs_dil, k.c.groups);
        CHECK(r.shape() == Shape(od));
        CHECK(r.dtype() == t);
        close(r.to_vector<double>(), want, t == DType::f64 ? 1e-12 : 1e-5, "conv_general");
      }
    }
  });
}

TEST_CASE("conv_general: layouts, SAME and VALID, and PyTorch's conv2d with a bias") {
  const Ints xd{2, 3, 7, 5}, wd{4, 3, 3, 2};
  const auto xv = normals(Shape(xd).numel(), 10), wv = normals(Shape(wd).numel(), 11);
  const Array x = make(xv, xd), w = make(wv, wd);
  // NHWC input, HWIO weights, NHWC result: the same numbers, moved.
  const Array xn = aj::transpose(x, {0, 2, 3, 1}), wh = aj::transpose(w, {2, 3, 1, 0});
  const Array r = aj::conv_general(xn, wh, {2, 1}, aj::ConvPadding({{1, 1}, {0, 1}}), {}, {}, 1, {"NHWC", "HWIO", "NHWC"});
  const Array ref = aj::conv_general(x, w, {2, 1}, aj::ConvPadding({{1, 1}, {0, 1}}));
  close(r.to_vector<double>(), aj::transpose(ref, {0, 2, 3, 1}).to_vector<double>(), 1e-13, "NHWC/HWIO");
  // SAME keeps ceil(extent / stride); VALID pads nothing.
  CHECK(aj::conv_general(x, w, {2, 2}, "SAME").shape() == Shape{2, 4, 4, 3});
  CHECK(aj::conv_general(x, w, {1, 1}, "SAME").shape() == Shape{2, 4, 7, 5});
  CHECK(aj::conv_general(x, w, {}, "VALID").shape() == Shape{2, 4, 5, 4});
  {
    Conv c{{1, 1}, {1, 1}, {1, 1}, {{1, 1}, {0, 1}}, 1};  // SAME at stride 1: (k - 1) split, the odd one high
    close(aj::conv_general(x, w, {1, 1}, "SAME").to_vector<double>(), naive_conv(xv, xd, wv, wd, c).first, 1e-12,
          "SAME");
  }
  // conv2d: bias, "same" (PyTorch's: the same split), unbatched input.
  const Array b = make(normals(4, 12), {4});
  const Array y = aj::conv2d(x, w, b, {1}, "same");
  const auto yv = y.to_vector<double>(), bv = b.to_vector<double>();
  const auto plain = aj::conv_general(x, w, {1, 1}, "SAME").to_vector<double>();
  for (std::size_t i = 0; i < yv.size(); ++i) {
    CHECK(yv[i] == doctest::Approx(plain[i] + bv[(i / 35) % 4]).epsilon(1e-12));
  }
  const Array one = aj::conv2d(aj::slice(x, 0, 0, 1).reshape({3, 7, 5}), w, b, {1}, "same");
  close(one.to_vector<double>(), aj::slice(y, 0, 0, 1).reshape({4, 7, 5}).to_vector<double>(), 1e-13, "unbatched");
  // conv1d and conv3d are the same function at other ranks.
  const Array x1 = make(normals(2 * 3 * 9, 13), {2, 3, 9}), w1 = make(normals(4 * 3 * 3, 14), {4, 3, 3});
  close(aj::conv1d(x1, w1, Array(), {2}, 1).to_vector<double>(),
        aj::conv_general(x1, w1, {2}, aj::ConvPadding({{1, 1}})).to_vector<double>(), 1e-13, "conv1d");
  const Array x3 = make(normals(1 * 2 * 4 * 4 * 4, 15), {1, 2, 4, 4, 4}), w3 = make(normals(2 * 2 * 8, 16), {2, 2, 2, 2, 2});
  close(aj::conv3d(x3, w3, Array(), {1}, 0, {2}).to_vector<double>(),
        aj::conv_general(x3, w3, {}, {}, {}, {2, 2, 2}).to_vector<double>(), 1e-13, "conv3d");
}

TEST_CASE("conv_transpose is the adjoint of conv: <conv(x), y> = <x, conv_transpose(y)>") {
  struct Case {
    Ints xd, wd, stride, pad, dil;
    std::int64_t groups;
  };
  for (const Case& k : std::vector<Case>{{{2, 4, 9, 8}, {6, 2, 3, 3}, {2, 2}, {1, 0}, {1, 2}, 2},
                                         {{1, 3, 10}, {2, 3, 4}, {3}, {2}, {1}, 1},
                                         {{1, 2, 5, 6, 4}, {2, 2, 2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 1, 1}, 1}}) {
    const std::size_t d = k.xd.size() - 2;
    CAPTURE(d);
    const Array x = make(normals(Shape(k.xd).numel(), 20), k.xd), w = make(normals(Shape(k.wd).numel(), 21), k.wd);
    std::vector<std::pair<std::int64_t, std::int64_t>> pads;
    for (std::int64_t p : k.pad) pads.emplace_back(p, p);
    const Array y0 = aj::conv_general(x, w, k.stride, pads, {}, k.dil, k.groups);
    const Array y = make(normals(y0.size(), 22), y0.shape().dims());
    // PyTorch's conv_transpose takes the convolution's own weights ([C_out,
    // C_in / g, k...] of the forward convolution is [C, O / g, k...] of the
    // transposed one).
    const Array& wt = w;
    // output_padding: what makes the transpose's result x's shape.
    Ints out_pad;
    for (std::size_t i = 0; i < d; ++i) {
      const std::int64_t span = (k.wd[i + 2] - 1) * k.dil[i] + 1;
      const std::int64_t made = (y0.shape()[static_cast<int>(i) + 2] - 1) * k.stride[i] - 2 * k.pad[i] + span;
      out_pad.push_back(k.xd[i + 2] - made);
    }
    Array xt;
    if (d == 1) xt = aj::conv_transpose1d(y, wt, Array(), k.stride, k.pad, out_pad, k.groups, k.dil);
    if (d == 2) xt = aj::conv_transpose2d(y, wt, Array(), k.stride, k.pad, out_pad, k.groups, k.dil);
    if (d == 3) xt = aj::conv_transpose3d(y, wt, Array(), k.stride, k.pad, out_pad, k.groups, k.dil);
    REQUIRE(xt.shape() == x.shape());
    const double lhs = aj::sum(y0 * y).item<double>(), rhs = aj::sum(x * xt).item<double>();
    CHECK(lhs == doctest::Approx(rhs).epsilon(1e-12));
  }
}

TEST_CASE("max_pool, avg_pool and reduce_window against loops: padding, ceil_mode, count_include_pad") {
  const Ints xd{2, 3, 7, 6};
  const auto xv = normals(Shape(xd).numel(), 30);
  const Array x = make(xv, xd);
  struct Pool {
    Ints window, strides, pads;
    bool ceil;
  };
  ajtest::on_both([&] {
    for (const Pool& p : std::vector<Pool>{{{2, 2}, {2, 2}, {0, 0}, false}, {{3, 3}, {2, 2}, {1, 1}, true},
                                           {{3, 2}, {2, 3}, {1, 0}, true}, {{2, 3}, {1, 1}, {1, 1}, false}}) {
      CAPTURE(Shape(p.window).str());
      CAPTURE(p.ceil);
      const Array mx = aj::max_pool(x, p.window, p.strides, p.pads, p.ceil);
      for (bool include : {true, false}) {
        const Array av = aj::avg_pool(x, p.window, p.strides, p.pads, p.ceil, include);
        REQUIRE(av.shape() == mx.shape());
        const Ints od = mx.shape().dims();
        std::vector<double> wmax, wavg;
        each(od, [&](const Ints& o) {
          double m = -INFINITY, s = 0;
          std::int64_t cnt = 0, cnt_pad = 0;
          for (std::int64_t a = 0; a < p.window[0]; ++a) {
            for (std::int64_t b = 0; b < p.window[1]; ++b) {
              const std::int64_t i = o[2] * p.strides[0] + a - p.pads[0], j = o[3] * p.strides[1] + b - p.pads[1];
              // PyTorch's divisor with padding: the window clipped to the padded input.
              if (i < xd[2] + p.pads[0] && j < xd[3] + p.pads[1]) ++cnt_pad;
              if (i < 0 || j < 0 || i >= xd[2] || j >= xd[3]) continue;
              const double v = xv[static_cast<std::size_t>(flat(xd, {o[0], o[1], i, j}))];
              m = std::max(m, v);
              s += v;
              ++cnt;
            }
          }
          wmax.push_back(m);
          wavg.push_back(s / static_cast<double>(include ? cnt_pad : cnt));
        });
        close(mx.to_vector<double>(), wmax, 0, "max_pool");
        close(av.to_vector<double>(), wavg, 1e-13, include ? "avg_pool, padding counted" : "avg_pool");
      }
    }
  });
  // PyTorch's output extents with ceil_mode: 7 -> 4 with k 2, s 2; 6 -> 3.
  CHECK(aj::max_pool(x, {2, 2}, {}, {}, true).shape() == Shape{2, 3, 4, 3});
  CHECK(aj::max_pool(x, {2, 2}).shape() == Shape{2, 3, 3, 3});
  // Unbatched, integers (padding with the dtype's lowest), dilation.
  const Array xi = aj::from_vector<std::int32_t>({5, -3, 8, 1, 9, -7, 2, 4}, {1, 8});
  CHECK(aj::max_pool(xi, {3}, {2}, {1}).to_vector<std::int32_t>() == std::vector<std::int32_t>{5, 8, 9, 4});
  CHECK(aj::max_pool(xi, {2}, {1}, {}, false, {3}).to_vector<std::int32_t>() == std::vector<std::int32_t>{5, 9, 8, 2, 9});
  // reduce_window over every axis (JAX's), each op, with padding.
  const Array r = aj::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(aj::reduce_window(r, "sum", {1, 2}).to_vector<double>() == std::vector<double>{3, 5, 9, 11});
  CHECK(aj::reduce_window(r, "max", {2, 2}, {1, 1}, {{0, 0}, {1, 0}}).to_vector<double>() ==
        std::vector<double>{4, 5, 6});
  CHECK(aj::reduce_window(r, "prod", {2, 1}).to_vector<double>() == std::vector<double>{4, 10, 18});
  CHECK(aj::reduce_window(r, "min", {1, 3}, {1, 1}, {{0, 0}, {1, 1}}).to_vector<double>() ==
        std::vector<double>{1, 1, 2, 4, 4, 5});
}

TEST_CASE("interpolate: nearest and linear as PyTorch computes them") {
  const Array x = aj::from_vector<double>({1, 2, 4, 8}, {1, 1, 4});
  CHECK(aj::interpolate(x, {8}).to_vector<double>() == std::vector<double>{1, 1, 2, 2, 4, 4, 8, 8});
  CHECK(aj::interpolate(x, {3}).to_vector<double>() == std::vector<double>{1, 2, 4});  // floor(o * 4 / 3)
  // linear, align_corners false: src = (o + 0.5) * 4 / 8 - 0.5 clamped at 0.
  const auto lin = aj::interpolate(x, {8}, "linear").to_vector<double>();
  const std::vector<double> want{1, 1.25, 1.75, 2.5, 3.5, 5, 7, 8};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(lin[i] == doctest::Approx(want[i]));
  // align_corners true: src = o * 3 / 7.
  const auto ac = aj::interpolate(x, {8}, "linear", true).to_vector<double>();
  for (int o = 0; o < 8; ++o) {
    const double src = o * 3.0 / 7.0, lo = std::floor(src), f = src - lo;
    const double v0 = std::pow(2.0, lo), v1 = std::pow(2.0, std::min(lo + 1, 3.0));
    CHECK(ac[static_cast<std::size_t>(o)] == doctest::Approx(v0 + f * (v1 - v0)));
  }
  // bilinear is linear along each axis: a product of two ramps stays one.
  const Array grid = aj::reshape(aj::outer(aj::arange(0.0, 3.0, 1.0, DType::f64), aj::arange(0.0, 4.0, 1.0, DType::f64)),
                                 {1, 1, 3, 4});
  const auto up = aj::interpolate(grid, {5, 7}, "bilinear", true).to_vector<double>();
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) {
      CHECK(up[static_cast<std::size_t>(i * 7 + j)] == doctest::Approx((i * 2.0 / 4.0) * (j * 3.0 / 6.0)));
    }
  }
}

TEST_CASE("convolution and pooling derivatives against central differences") {
  using ajtest::Arg;
  using V = std::vector<Array>;
  std::mt19937_64 rng(50);
  auto arg = [&](Shape s) { return Arg{ajtest::normal_values(static_cast<std::size_t>(s.numel()), rng), s, false}; };
  ajtest::check_gradient("conv2d", [](const V& v) { return V{aj::conv2d(v[0], v[1], v[2], {2, 1}, 1)}; },
                         {arg({2, 2, 5, 4}), arg({3, 2, 3, 2}), arg({3})}, 1);
  ajtest::check_gradient("conv_general: groups, dilations, crop", [](const V& v) {
    return V{aj::conv_general(v[0], v[1], {1, 2}, aj::ConvPadding({{2, 1}, {-1, 1}}), {2, 1}, {1, 2}, 2)};
  }, {arg({1, 4, 4, 6}), arg({2, 2, 2, 2})}, 2);
  ajtest::check_gradient("conv1d, strided input view", [](const V& v) { return V{aj::conv1d(v[0], v[1], Array(), {1}, "same")}; },
                         {Arg{ajtest::normal_values(2 * 3 * 7, rng), Shape{2, 3, 7}, true}, arg({2, 3, 3})}, 3);
  ajtest::check_gradient("conv_transpose2d", [](const V& v) {
    return V{aj::conv_transpose2d(v[0], v[1], v[2], {2}, {1}, {1})};
  }, {arg({1, 2, 3, 3}), arg({2, 3, 3, 3}), arg({3})}, 4);
  // Distinct values (no ties), so max_pool's derivative is defined.
  ajtest::check_gradient("max_pool", [](const V& v) { return V{aj::max_pool(v[0], {2, 3}, {1, 2}, {1, 1}, true)}; },
                         {arg({1, 2, 5, 6})}, 5);
  ajtest::check_gradient("avg_pool", [](const V& v) {
    return V{aj::avg_pool(v[0], {3, 3}, {2, 2}, {1, 1}, true, false), aj::avg_pool(v[0], {2, 2}, {}, {}, false)};
  }, {arg({1, 2, 5, 5})}, 6);
  ajtest::check_gradient("interpolate", [](const V& v) {
    return V{aj::interpolate(v[0], {5, 3}, "bilinear"), aj::interpolate(v[0], {6, 2})};
  }, {arg({1, 2, 3, 4})}, 7);
  ajtest::check_gradient("reduce_window", [](const V& v) {
    return V{aj::reduce_window(v[0], "sum", {2, 2}, {1, 2}, {{1, 0}, {0, 1}})};
  }, {arg({4, 5})}, 8);
}

TEST_CASE("convolution and pooling: errors name the op and the caller's line") {
  auto message = [](auto f) {
    try {
      f();
    } catch (const aj::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Array x = aj::ones({1, 4, 5, 5}), w = aj::ones({2, 3, 3, 3});
  CHECK(message([&] { aj::conv_general(x, w); }).find("with 1 groups the input's 4 features") != std::string::npos);
  CHECK(message([&] { aj::conv_general(x, aj::ones({2, 4, 3})); }).find("must have the input's rank") != std::string::npos);
  CHECK(message([&] { aj::conv_general(aj::ones({4, 5}), w); }).find("1 to 3 spatial axes") != std::string::npos);
  CHECK(message([&] { aj::conv_general(x, aj::ones({2, 4, 3, 3}), {0}); }).find("strides must be at least 1") !=
        std::string::npos);
  CHECK(message([&] { aj::conv_general(x, aj::ones({2, 4, 3, 3}), {1, 1, 1}); }).find("strides has 3 values for 2") !=
        std::string::npos);
  CHECK(message([&] { aj::conv_general(x, aj::ones({2, 4, 3, 3}), {}, {}, {}, {}, 1, {"NCHW", "OIHX", ""}); })
            .find("layout") != std::string::npos);
  CHECK(message([&] { aj::conv2d(x, aj::ones({2, 4, 3, 3}), Array(), {2}, "same"); }).find("unit strides") !=
        std::string::npos);
  CHECK(message([] { aj::ConvPadding p("FULL"); }).find("\"SAME\" or \"VALID\"") != std::string::npos);
  CHECK(message([&] { aj::max_pool(x, {2, 2}, {}, {2, 2}); }).find("half the window") != std::string::npos);
  CHECK(message([&] { aj::avg_pool(x, {2, 2, 2, 2, 2}); }).find("window of 1 to 3 axes") != std::string::npos);
  CHECK(message([&] { aj::reduce_window(x, "mean", {1, 1, 2, 2}); }).find("op must be") != std::string::npos);
  CHECK(message([&] { aj::interpolate(x, {3, 3}, "cubic"); }).find("mode must be") != std::string::npos);
  const std::string where = message([&] { aj::conv2d(x, w); });
  CHECK(where.find("test_conv.cpp:") != std::string::npos);
}

TEST_CASE("convolution and pooling: the C functions give the C++ results") {
  const Array x = aj::from_vector(normals(2 * 3 * 6 * 5, 60), Shape{2, 3, 6, 5});
  const Array w = aj::from_vector(normals(4 * 3 * 3 * 3, 61), Shape{4, 3, 3, 3});
  aj_array cx = aj::to_c(x), cw = aj::to_c(w), r{0};
  const std::int64_t strides[] = {2, 1}, pads[] = {1, 1, 0, 2};
  REQUIRE(aj_conv_general(cx, cw, strides, 2, AJ_PADDING_PAIRS, pads, 2, nullptr, 0, nullptr, 0, 1, nullptr, "", nullptr,
                          &r) == AJ_OK);
  close(aj::from_c(r).to_vector<double>(),
        aj::conv_general(x, w, {2, 1}, aj::ConvPadding({{1, 1}, {0, 2}})).to_vector<double>(), 0, "aj_conv_general");
  aj_array_release(r);
  const std::int64_t window[] = {2, 2};
  REQUIRE(aj_max_pool(cx, window, 2, nullptr, 0, nullptr, 0, 1, nullptr, 0, &r) == AJ_OK);
  close(aj::from_c(r).to_vector<double>(), aj::max_pool(x, {2, 2}, {}, {}, true).to_vector<double>(), 0, "aj_max_pool");
  aj_array_release(r);
  const std::int64_t size[] = {9, 4};
  REQUIRE(aj_interpolate(cx, size, 2, "bilinear", 0, &r) == AJ_OK);
  close(aj::from_c(r).to_vector<double>(), aj::interpolate(x, {9, 4}, "bilinear").to_vector<double>(), 0,
        "aj_interpolate");
  aj_array_release(r);
  // A bad list is an error that writes nothing.
  CHECK(aj_max_pool(cx, nullptr, 2, nullptr, 0, nullptr, 0, 0, nullptr, 0, &r) == AJ_ERROR_USER);
  CHECK(r._id == 0);
  CHECK(std::string(aj_last_error()).find("null window with length 2") != std::string::npos);
  aj_array_release(cx);
  aj_array_release(cw);
}

TEST_CASE("cuda fake driver: convolution, pooling and resizing run on a device as on the host") {
  if (!ajtest::fake_cuda::have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  const Array x = aj::from_vector(normals(2 * 3 * 6 * 5, 70), Shape{2, 3, 6, 5}).astype(DType::f32);
  const Array w = aj::from_vector(normals(4 * 3 * 3 * 3, 71), Shape{4, 3, 3, 3}).astype(DType::f32);
  auto all = [](const Array& xa, const Array& wa) {
    const Array c = aj::conv2d(xa, wa, Array(), {2, 1}, 1);
    return std::vector<Array>{c, aj::max_pool(xa, {2, 2}, {}, {}, true), aj::avg_pool(xa, {3, 3}, {2, 2}, {1, 1}),
                              aj::interpolate(xa, {9, 7}, "bilinear")};
  };
  const std::vector<Array> host = all(x, w);
  std::vector<std::vector<double>> want;
  for (const Array& h : host) want.push_back(h.to_vector<double>());
  ajtest::fake_cuda::FakeGpu gpu;
  // The fake driver's two passes: the first collects the kernels' sources,
  // the second runs them, compiled for the host.
  const std::vector<std::vector<double>> got = gpu.twice([&] {
    const std::vector<Array> dev = all(x.to(aj::Device::cuda(0)), w.to(aj::Device::cuda(0)));
    std::vector<std::vector<double>> r;
    for (const Array& d : dev) {
      CHECK(d.device() == aj::Device::cuda(0));
      r.push_back(d.to(aj::Device::cpu()).to_vector<double>());
    }
    return r;
  });
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    close(got[i], want[i], 1e-5, "on the device");
  }
}

TEST_CASE("conv_general and pooling in f16 and bf16: the f32 result, rounded once per step") {
  const Ints xd{2, 3, 6, 5}, wd{4, 3, 3, 3};
  const auto xv = normals(Shape(xd).numel(), 80), wv = normals(Shape(wd).numel(), 81);
  const auto [want, od] = naive_conv(xv, xd, wv, wd, Conv{{1, 2}, {1, 1}, {1, 1}, {{1, 1}, {1, 0}}, 1});
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(aj::dtype_name(t));
    // Inputs rounded to the half type first: the reference sees the same operands.
    const Array x = make(xv, xd, t), w = make(wv, wd, t);
    const auto [ref, rd] = naive_conv(x.to_vector<double>(), xd, w.to_vector<double>(), wd,
                                      Conv{{1, 2}, {1, 1}, {1, 1}, {{1, 1}, {1, 0}}, 1});
    const Array r = aj::conv_general(x, w, {1, 2}, aj::ConvPadding({{1, 1}, {1, 0}}));
    CHECK(r.dtype() == t);
    CHECK(r.shape() == Shape(od));
    // One rounding of an f32 accumulation: half an ulp of the type at the result's size.
    close(r.to_vector<double>(), ref, t == DType::f16 ? 2e-3 : 1.6e-2, "half conv");
    CHECK(aj::max_pool(x, {2, 2}).dtype() == t);
    close(aj::max_pool(x, {2, 2}).to_vector<double>(), aj::max_pool(x.astype(DType::f32), {2, 2}).to_vector<double>(), 0,
          "half max_pool: exact");
  }
}

namespace {

// conv_general with the host's conv library step on or off (the composition).
struct ConvLibrary {
  bool saved = aj::detail::conv_library();
  explicit ConvLibrary(bool on) { aj::detail::set_conv_library(on); }
  ~ConvLibrary() { aj::detail::set_conv_library(saved); }
};

}  // namespace

TEST_CASE("conv's library step: the composition's values, tile by tile, threads, strided operands, the reference") {
  const std::vector<StepCase> cases = step_cases();
  const int threads = aj::jit::num_threads();
  std::uint64_t seed = 300;
  for (const StepCase& k : cases) {
    CAPTURE(Shape(k.xd).str());
    CAPTURE(Shape(k.wd).str());
    const auto xv = normals(Shape(k.xd).numel(), seed++), wv = normals(Shape(k.wd).numel(), seed++);
    const auto [want, od] = naive_conv(xv, k.xd, wv, k.wd, k.c);
    for (DType t : {DType::f64, DType::f32}) {
      CAPTURE(std::string(aj::dtype_name(t)));
      const double eps = t == DType::f64 ? 1e-12 : 1e-5;
      auto conv = [&](const Array& x, const Array& w) {
        return aj::conv_general(x, w, k.c.strides, k.c.pads, k.c.lhs_dil, k.c.rhs_dil, k.c.groups);
      };
      const Array x = make(xv, k.xd, t).eval(), w = make(wv, k.wd, t).eval();
      Array composed;
      {
        ConvLibrary off(false);
        composed = conv(x, w);
        CHECK(aj::explain(composed).find("= conv") == std::string::npos);
        composed.eval();
      }
      ConvLibrary on(true);
      const Array step = conv(x, w);
      INFO(aj::explain(step));
      CHECK(aj::explain(step).find("library %") != std::string::npos);
      CHECK(aj::explain(step).find("= conv") != std::string::npos);
      CHECK(aj::explain(step).find("= concat") == std::string::npos);  // no column matrix
      close(step.to_vector<double>(), want, eps, "the library step");
      close(step.to_vector<double>(), composed.to_vector<double>(), eps, "against the composition");
      // On 2 threads and 1; operands read where they lie (channels-last
      // input, transposed weights), with the elementwise work around it.
      for (int th : {1, 2}) {
        aj::jit::set_num_threads(th);
        std::vector<int> perm(k.xd.size());
        for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
        std::vector<int> last = perm;
        std::rotate(last.begin() + 1, last.begin() + 2, last.end());  // [N, s..., C]
        std::vector<int> back(perm.size());
        for (std::size_t i = 0; i < last.size(); ++i) back[static_cast<std::size_t>(last[i])] = static_cast<int>(i);
        // A fresh contiguous array of the transposed values, transposed back:
        // a view with channels-last (and transposed weights') strides.
        auto laid = [&](const Array& a, const std::vector<int>& p, const std::vector<int>& q) {
          const Array v = aj::transpose(a, p);
          return aj::transpose(make(v.to_vector<double>(), v.shape().dims(), t).eval(), q);
        };
        std::vector<int> wswap(k.wd.size());
        for (std::size_t i = 0; i < wswap.size(); ++i) wswap[i] = static_cast<int>(i);
        std::swap(wswap[0], wswap[1]);
        const Array x_cl = laid(x, last, back), w_t = laid(w, wswap, wswap);
        CHECK(!x_cl.data().row_major());
        if (k.wd[1] > 1) CHECK(!w_t.data().row_major());
        const Array r = conv(x_cl * 2.0, w_t) + 1.0;
        std::vector<double> want2 = want;
        for (double& v : want2) v = 2.0 * v + 1.0;
        close(r.to_vector<double>(), want2, eps, "strided operands, " + std::to_string(th) + " threads");
      }
      aj::jit::set_num_threads(threads);
      // The reference interpreter's loops.
      Array ref = conv(x, w);
      {
        aj::detail::ExecutorScope scope(aj::detail::Executor::reference);
        ref.eval();
      }
      close(ref.to_vector<double>(), want, eps, "the reference interpreter");
    }
  }
}

TEST_CASE("conv's weight-gradient step: the definition, the composition's gradient, same bits on 1 and 2 threads, "
          "strided operands, the reference") {
  // The weights' gradient of a library-step convolution is one more step
  // (no column matrix): tiles of ~256 KiB of columns, blocks of tiles per
  // image, sums added in a fixed order.
  std::vector<StepCase> cases = step_cases();
  cases.push_back({{40, 2, 6, 6}, {3, 2, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, 1}});  // many images
  const int threads = aj::jit::num_threads();
  std::uint64_t seed = 900;
  for (const StepCase& k : cases) {
    CAPTURE(Shape(k.xd).str());
    CAPTURE(Shape(k.wd).str());
    const auto xv = normals(Shape(k.xd).numel(), seed++), wv = normals(Shape(k.wd).numel(), seed++);
    const Ints od = naive_conv(xv, k.xd, wv, k.wd, k.c).second;
    const auto gv = normals(Shape(od).numel(), seed++);
    const std::vector<double> want = naive_weight_grad(xv, k.xd, gv, od, k.wd, k.c);
    for (DType t : {DType::f64, DType::f32}) {
      CAPTURE(std::string(aj::dtype_name(t)));
      const double eps = t == DType::f64 ? 1e-12 : 1e-5;
      const Array x = make(xv, k.xd, t).eval(), w = make(wv, k.wd, t).eval(), gy = make(gv, od, t).eval();
      // d/dw sum(conv(x, w) * gy) is the step applied to x and gy.
      auto dw = [&](const Array& xa, const Array& ga) {
        return aj::grad([&](const Array& wa) {
          return aj::sum(aj::conv_general(xa, wa, k.c.strides, k.c.pads, k.c.lhs_dil, k.c.rhs_dil, k.c.groups) * ga);
        })(w);
      };
      Array composed;
      {
        ConvLibrary off(false);
        composed = dw(x, gy).eval();
      }
      ConvLibrary on(true);
      const Array step = dw(x, gy);
      INFO(aj::explain(step));
      CHECK(aj::explain(step).find("= conv weight gradient") != std::string::npos);
      CHECK(aj::explain(step).find("= concat") == std::string::npos);  // no column matrix
      close(step.to_vector<double>(), want, eps, "the weight-gradient step");
      close(step.to_vector<double>(), composed.to_vector<double>(), eps, "against the composition's gradient");
      // Channels-last x and a transposed gy, read where they lie; the bits
      // are the same on 1 and 2 threads.
      std::vector<int> last(k.xd.size());
      for (std::size_t i = 0; i < last.size(); ++i) last[i] = static_cast<int>(i);
      std::rotate(last.begin() + 1, last.begin() + 2, last.end());  // [N, s..., C]
      std::vector<int> back(last.size());
      for (std::size_t i = 0; i < last.size(); ++i) back[static_cast<std::size_t>(last[i])] = static_cast<int>(i);
      auto laid = [&](const Array& a) {
        const Array v = aj::transpose(a, last);
        return aj::transpose(make(v.to_vector<double>(), v.shape().dims(), t).eval(), back);
      };
      const Array x_cl = laid(x), gy_cl = laid(gy);
      CHECK(!x_cl.data().row_major());
      // The node itself too, so that gy reaches the step as the strided view
      // (through grad it is the cotangent a kernel wrote).
      aj::ConvGeometry geo;
      for (std::size_t i = 0; i < k.c.strides.size(); ++i) {
        geo.stride.push_back(k.c.strides[i]);
        geo.lo.push_back(k.c.pads[i].first);
        geo.hi.push_back(k.c.pads[i].second);
        geo.dilation.push_back(k.c.rhs_dil[i]);
      }
      std::vector<std::vector<double>> runs, direct;
      for (int th : {1, 2}) {
        aj::jit::set_num_threads(th);
        runs.push_back(dw(x_cl, gy_cl).to_vector<double>());
        close(runs.back(), want, eps, "strided operands, " + std::to_string(th) + " threads");
        direct.push_back(aj::detail::conv_weight_grad_node(x_cl, gy_cl, Shape(k.wd), geo, k.c.groups, aj::Loc::current())
                             .to_vector<double>());
        close(direct.back(), want, eps, "the node on strided operands");
      }
      aj::jit::set_num_threads(threads);
      CHECK(runs[0] == runs[1]);
      CHECK(direct[0] == direct[1]);
      // The reference interpreter's loops.
      Array ref = dw(x, gy);
      {
        aj::detail::ExecutorScope scope(aj::detail::Executor::reference);
        ref.eval();
      }
      close(ref.to_vector<double>(), want, eps, "the reference interpreter");
    }
  }
}

TEST_CASE("conv's library step in aj::compile: new extents run from the kept trace, values as eager") {
  ConvLibrary on(true);
  auto f = aj::compile([](const Array& x, const Array& w) { return aj::relu(aj::conv2d(x, w, Array(), {1}, 1)); });
  auto g = aj::compile([](const Array& x, const Array& w) { return aj::conv2d(x, w, Array(), {2}, 1); });
  // Without a convolution, to compare the traces with: a template is trusted
  // after the calls that check it, and extent 1 is a shape of its own.
  auto plain = aj::compile([](const Array& x, const Array& w) { return aj::relu(x) * aj::sum(w); });
  // The weights' gradient: a weight-gradient step whose extents follow x's.
  auto loss = [](const Array& x, const Array& w) { return aj::sum(aj::square(aj::conv2d(x, w, Array(), {1}, 1))); };
  auto dw = aj::compile([&](const Array& x, const Array& w) { return aj::grad([&](const Array& v) { return loss(x, v); })(w); });
  const Array w = make(normals(4 * 3 * 9, 400), {4, 3, 3, 3}, DType::f32).eval();
  std::uint64_t seed = 401;
  for (Ints xd : {Ints{2, 3, 12, 12}, Ints{2, 3, 12, 12}, Ints{3, 3, 17, 9}, Ints{1, 3, 5, 30}, Ints{2, 3, 8, 7},
                  Ints{4, 3, 9, 11}, Ints{2, 3, 1, 1}, Ints{2, 3, 20, 3}}) {
    CAPTURE(Shape(xd).str());
    const Array x = make(normals(Shape(xd).numel(), seed++), xd, DType::f32).eval();
    const Array eager = aj::relu(aj::conv2d(x, w, Array(), {1}, 1));
    const Array eager2 = aj::conv2d(x, w, Array(), {2}, 1);
    CHECK(aj::explain(eager).find("= conv stride=1,1 pad=1,1/1,1 dilation=1,1 groups=1") != std::string::npos);
    CHECK(f(x, w).to_vector<float>() == eager.to_vector<float>());
    CHECK(g(x, w).to_vector<float>() == eager2.to_vector<float>());
    const Array eager_dw = aj::grad([&](const Array& v) { return loss(x, v); })(w);
    CHECK(aj::explain(eager_dw).find("= conv weight gradient") != std::string::npos);
    CHECK(dw(x, w).to_vector<float>() == eager_dw.to_vector<float>());
    plain(x, w).eval();
  }
  INFO(dw.extents_note());
  CHECK(dw.counts().traces == plain.counts().traces);
  INFO(f.extents_note());
  CHECK(f.counts().traces == plain.counts().traces);  // stride 1: an output extent is its input's
  CHECK(f.counts().new_extents >= 3);
  // At stride 2 an output extent is a quotient: traced again, as the
  // composition's strided views are, and said once.
  CHECK(g.extents_note().find("of the conv traced at") != std::string::npos);
}

TEST_CASE("conv's library step: derivatives in both modes, second order, against central differences") {
  using ajtest::Arg;
  using V = std::vector<Array>;
  ConvLibrary on(true);
  std::mt19937_64 rng(60);
  auto arg = [&](Shape s) { return Arg{ajtest::normal_values(static_cast<std::size_t>(s.numel()), rng), s, false}; };
  ajtest::check_gradient("conv2d as a library step", [](const V& v) {
    const Array y = aj::conv2d(v[0], v[1], v[2], {1}, 1);
    CHECK(aj::explain(y).find("= conv") != std::string::npos);
    return V{y};
  }, {arg({2, 3, 6, 5}), arg({4, 3, 3, 3}), arg({4})}, 1);
  ajtest::check_gradient("conv_general: groups, stride, crop, dilation", [](const V& v) {
    return V{aj::conv_general(v[0], v[1], {2, 1}, aj::ConvPadding({{2, 1}, {-1, 2}}), {}, {1, 2}, 2)};
  }, {arg({1, 4, 7, 6}), arg({2, 2, 3, 2})}, 2);
  ajtest::check_gradient("the gradient of a conv's gradient", [](const V& v) {
    auto inner = aj::grad([&](const Array& w) { return aj::sum(aj::square(aj::conv2d(v[0], w, Array(), {1}, 1))); });
    return V{inner(v[1])};
  }, {arg({1, 2, 5, 5}), arg({3, 2, 3, 3})}, 3);
}

TEST_CASE("max_pool over windows that tile the input: a reduction of a view, ties share the cotangent equally") {
  // Values against loops (a remainder row and column skipped), with the
  // fold of the general path (stride 1 windows) beside it.
  const Ints d{2, 3, 7, 9};
  const auto v = normals(Shape(d).numel(), 70);
  const Array x = make(v, d);
  const Array y = aj::max_pool(x, {2, 3});
  CHECK(y.shape() == Shape{2, 3, 3, 3});
  CHECK(aj::explain(y).find("maximum") == std::string::npos);  // a reduction, not a fold
  const auto got = y.to_vector<double>();
  each({2, 3, 3, 3}, [&](const Ints& o) {
    double m = -INFINITY;
    for (std::int64_t i = 0; i < 2; ++i) {
      for (std::int64_t j = 0; j < 3; ++j) m = std::max(m, v[static_cast<std::size_t>(flat(d, {o[0], o[1], 2 * o[2] + i, 3 * o[3] + j}))]);
    }
    CHECK(got[static_cast<std::size_t>(flat({2, 3, 3, 3}, o))] == m);
  });
  // Ties: a window of four equal maxima gets a quarter each; the row and
  // column past the last window get nothing.
  std::vector<double> tv(1 * 1 * 3 * 5, 1.0);
  tv[0] = 0.5;  // the first window then has three maxima
  const Array t = make(tv, {1, 1, 3, 5});
  const auto g = aj::grad([](const Array& a) { return aj::sum(aj::max_pool(a, {2, 2})); })(t).to_vector<double>();
  const std::vector<double> want{0, 1.0 / 3, 0.25, 0.25, 0, 1.0 / 3, 1.0 / 3, 0.25, 0.25, 0, 0, 0, 0, 0, 0};
  CHECK(g == want);
}

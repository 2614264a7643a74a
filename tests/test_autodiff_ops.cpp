// Every differentiable op of arrayjit/ops.def against central differences in f64
// (tests/autodiff_check.hpp: reverse mode element by element, forward mode
// against reverse mode), over random shapes with size-0 and size-1 axes,
// broadcasting, strided views and strided (borrowed, reversed) arguments.
// The piecewise-constant ops, casts and the kinks (ties, 0) are checked
// against values worked out by hand in tests/test_autodiff.cpp; scans,
// sorting and indexing are in tests/test_autodiff_index.cpp.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/autodiff/rules.hpp"
#include "tests/autodiff_check.hpp"

namespace {

using aj::Array;
using aj::Shape;
using ajtest::Arg;
using ajtest::check_gradient;
using Dims = ajtest::Dims;

using ajtest::arg;
using ajtest::broadcastable;
using ajtest::numel;
using ajtest::random_dims;
using ajtest::str;

constexpr int kShapesPerOp = 4;

}  // namespace

TEST_CASE("autodiff ops: unary elementwise ops against central differences") {
  struct Case {
    const char* name;
    std::function<Array(const Array&)> f;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"neg", [](const Array& x) { return -x; }, -2, 2},
      {"abs", [](const Array& x) { return aj::abs(x); }, -2, 2},
      {"exp", [](const Array& x) { return aj::exp(x); }, -2, 2},
      {"log", [](const Array& x) { return aj::log(x); }, 0.2, 3},
      {"log1p", [](const Array& x) { return aj::log1p(x); }, -0.7, 3},
      {"expm1", [](const Array& x) { return aj::expm1(x); }, -2, 2},
      {"sin", [](const Array& x) { return aj::sin(x); }, -3, 3},
      {"cos", [](const Array& x) { return aj::cos(x); }, -3, 3},
      {"tan", [](const Array& x) { return aj::tan(x); }, -1.2, 1.2},
      {"tanh", [](const Array& x) { return aj::tanh(x); }, -2, 2},
      {"sigmoid", [](const Array& x) { return aj::sigmoid(x); }, -3, 3},
      {"sqrt", [](const Array& x) { return aj::sqrt(x); }, 0.2, 3},
      {"rsqrt", [](const Array& x) { return aj::rsqrt(x); }, 0.2, 3},
      {"clip", [](const Array& x) { return aj::clip(x, -0.7, 1.1); }, -2, 2},
      {"square via pow", [](const Array& x) { return aj::pow(x, 2.0); }, -2, 2},
      {"cube via pow", [](const Array& x) { return aj::pow(x, 3); }, -2, 2},
      {"erf", [](const Array& x) { return aj::erf(x); }, -2, 2},
      {"erfc", [](const Array& x) { return aj::erfc(x); }, -2, 2},
      {"arcsin", [](const Array& x) { return aj::arcsin(x); }, -0.8, 0.8},
      {"arccos", [](const Array& x) { return aj::arccos(x); }, -0.8, 0.8},
      {"arctan", [](const Array& x) { return aj::arctan(x); }, -3, 3},
      {"sinh", [](const Array& x) { return aj::sinh(x); }, -2, 2},
      {"cosh", [](const Array& x) { return aj::cosh(x); }, -2, 2},
      {"arcsinh", [](const Array& x) { return aj::arcsinh(x); }, -3, 3},
      {"arccosh", [](const Array& x) { return aj::arccosh(x); }, 1.2, 4},
      {"arctanh", [](const Array& x) { return aj::arctanh(x); }, -0.8, 0.8},
      {"exp2", [](const Array& x) { return aj::exp2(x); }, -2, 2},
      {"log2", [](const Array& x) { return aj::log2(x); }, 0.2, 3},
      {"log10", [](const Array& x) { return aj::log10(x); }, 0.2, 3},
      {"cbrt", [](const Array& x) { return aj::cbrt(x); }, 0.2, 3},
      {"cbrt of negatives", [](const Array& x) { return aj::cbrt(x); }, -3, -0.2},
      {"lgamma", [](const Array& x) { return aj::lgamma(x); }, 0.3, 4},
      {"lgamma of negatives", [](const Array& x) { return aj::lgamma(x); }, -2.9, -2.1},
      {"digamma", [](const Array& x) { return aj::digamma(x); }, 0.3, 12},
      {"erfinv", [](const Array& x) { return aj::erfinv(x); }, -0.9, 0.9},
      {"ndtri", [](const Array& x) { return aj::ndtri(x); }, 0.05, 0.95},
      {"log_ndtr", [](const Array& x) { return aj::log_ndtr(x); }, -4, 3},
      {"i0", [](const Array& x) { return aj::i0(x); }, -3, 3},
      {"i1", [](const Array& x) { return aj::i1(x); }, -3, 3},
  };
  std::mt19937_64 rng(11);
  for (const Case& c : cases) {
    for (int s = 0; s < kShapesPerOp; ++s) {
      const Dims d = random_dims(rng);
      const bool strided = s == kShapesPerOp - 1;
      auto f = [&c](const std::vector<Array>& x) { return std::vector<Array>{c.f(x[0])}; };
      check_gradient(std::string(c.name) + " on " + str(d) + (strided ? " strided" : ""), f,
                     {arg(d, rng, c.lo, c.hi, strided)}, rng());
    }
  }
}

TEST_CASE("autodiff ops: binary elementwise ops with broadcasting") {
  struct Case {
    const char* name;
    std::function<Array(const Array&, const Array&)> f;
    double alo, ahi, blo, bhi;
  };
  const std::vector<Case> cases = {
      {"add", [](const Array& a, const Array& b) { return a + b; }, -2, 2, -2, 2},
      {"sub", [](const Array& a, const Array& b) { return a - b; }, -2, 2, -2, 2},
      {"mul", [](const Array& a, const Array& b) { return a * b; }, -2, 2, -2, 2},
      {"div", [](const Array& a, const Array& b) { return a / b; }, -2, 2, 0.3, 2},
      {"div by negative", [](const Array& a, const Array& b) { return a / b; }, -2, 2, -2, -0.3},
      {"mod", [](const Array& a, const Array& b) { return aj::mod(a, b); }, -3, 3, 0.7, 1.3},
      {"maximum", [](const Array& a, const Array& b) { return aj::maximum(a, b); }, -2, 2, -2, 2},
      {"minimum", [](const Array& a, const Array& b) { return aj::minimum(a, b); }, -2, 2, -2, 2},
      {"pow", [](const Array& a, const Array& b) { return aj::pow(a, b); }, 0.3, 2, -1.5, 2},
      {"arctan2", [](const Array& a, const Array& b) { return aj::arctan2(a, b); }, -2, 2, 0.3, 2},
      {"arctan2 left half", [](const Array& a, const Array& b) { return aj::arctan2(a, b); }, 0.3, 2, -2, 2},
      {"hypot", [](const Array& a, const Array& b) { return aj::hypot(a, b); }, -2, 2, 0.3, 2},
      {"copysign", [](const Array& a, const Array& b) { return aj::copysign(a, b); }, 0.3, 2, -2, 2},
      {"copysign of negatives", [](const Array& a, const Array& b) { return aj::copysign(a, b); }, -2, -0.3, -2, 2},
      {"fmod", [](const Array& a, const Array& b) { return aj::fmod(a, b); }, -3, 3, 0.7, 1.3},
      {"logaddexp", [](const Array& a, const Array& b) { return aj::logaddexp(a, b); }, -2, 2, -2, 2},
      {"logaddexp2", [](const Array& a, const Array& b) { return aj::logaddexp2(a, b); }, -2, 2, -2, 2},
      {"where", [](const Array& a, const Array& b) { return aj::where(a > b, a * a, b * 3.0); }, -2, 2, -2, 2},
  };
  std::mt19937_64 rng(12);
  for (const Case& c : cases) {
    for (int s = 0; s < kShapesPerOp; ++s) {
      Dims da = random_dims(rng), db = broadcastable(da, rng);
      if (s % 2) std::swap(da, db);
      const bool strided = s == 1;
      auto f = [&c](const std::vector<Array>& x) { return std::vector<Array>{c.f(x[0], x[1])}; };
      // "mod" must stay away from its jumps: keep a / b off the integers.
      Arg a = arg(da, rng, c.alo, c.ahi, strided), b = arg(db, rng, c.blo, c.bhi);
      if (std::string(c.name) == "mod" || std::string(c.name) == "fmod") {
        // b = +-1 and a's fractional part in [0.35, 0.65]
        for (auto& v : a.values) v = std::floor(v) + 0.5 + 0.3 * (v - std::floor(v) - 0.5);
        for (std::size_t k = 0; k < b.values.size(); ++k) b.values[k] = k % 2 ? 1.0 : -1.0;
      }
      check_gradient(std::string(c.name) + " of " + str(da) + " and " + str(db) + (strided ? " strided" : ""),
                     f, {a, b}, rng());
    }
  }
}

TEST_CASE("autodiff ops: where, with the condition from data that is not differentiated") {
  std::mt19937_64 rng(13);
  for (int s = 0; s < kShapesPerOp; ++s) {
    const Dims d = random_dims(rng), dc = broadcastable(d, rng), db = broadcastable(d, rng);
    std::vector<bool> cv;
    for (std::int64_t k = 0; k < numel(dc); ++k) cv.push_back(rng() % 2);
    const Array cond = aj::from_vector(std::vector<double>(cv.begin(), cv.end()), Shape(dc)) > 0.5;
    auto f = [cond](const std::vector<Array>& x) { return std::vector<Array>{aj::where(cond, x[0], x[1])}; };
    check_gradient("where " + str(dc) + " " + str(d) + " " + str(db), f, {arg(d, rng), arg(db, rng)}, rng());
  }
}

TEST_CASE("autodiff ops: reductions over random axes") {
  struct Case {
    const char* name;
    std::function<Array(const Array&, aj::Axes, bool)> f;
    bool needs_nonempty;
  };
  const std::vector<Case> cases = {
      {"sum", [](const Array& x, aj::Axes a, bool k) { return aj::sum(x, a, k); }, false},
      {"mean", [](const Array& x, aj::Axes a, bool k) { return aj::mean(x, a, k); }, true},  // 0/0 over nothing
      {"prod", [](const Array& x, aj::Axes a, bool k) { return aj::prod(x, a, k); }, false},
      {"max", [](const Array& x, aj::Axes a, bool k) { return aj::max(x, a, k); }, true},
      {"min", [](const Array& x, aj::Axes a, bool k) { return aj::min(x, a, k); }, true},
  };
  std::mt19937_64 rng(14);
  for (const Case& c : cases) {
    for (int s = 0; s < 2 * kShapesPerOp; ++s) {
      const Dims d = random_dims(rng, 0, 3, !c.needs_nonempty);
      std::vector<int> axes;
      for (int i = 0; i < static_cast<int>(d.size()); ++i) {
        if (rng() % 2) axes.push_back(rng() % 3 == 0 ? i - static_cast<int>(d.size()) : i);
      }
      const bool all = rng() % 4 == 0, keep = rng() % 2;
      auto f = [&c, axes, all, keep](const std::vector<Array>& x) {
        return std::vector<Array>{c.f(x[0], all ? aj::Axes::all() : aj::Axes(axes), keep)};
      };
      std::string what = std::string(c.name) + " of " + str(d) + (all ? " over all" : " over " + std::to_string(axes.size()) + " axes") + (keep ? " keepdims" : "");
      check_gradient(what, f, {arg(d, rng, -2, 2, s == 3)}, rng());
    }
  }
}

TEST_CASE("autodiff ops: views") {
  std::mt19937_64 rng(15);
  for (int s = 0; s < 2 * kShapesPerOp; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    const int r = static_cast<int>(d.size());
    const bool strided = s % 3 == 1;
    // transpose by a random permutation, then a non-linear op so that the
    // layout matters
    std::vector<int> perm(static_cast<std::size_t>(r));
    for (int i = 0; i < r; ++i) perm[static_cast<std::size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    const Dims dw = [&] {
      Dims w;
      for (int p : perm) w.push_back(d[static_cast<std::size_t>(p)]);
      return w;
    }();
    std::vector<double> wv = ajtest::normal_values(static_cast<std::size_t>(numel(dw)), rng);
    const Array weights = aj::from_vector(wv, Shape(dw));
    check_gradient("transpose of " + str(d), [perm, weights](const std::vector<Array>& x) {
      return std::vector<Array>{aj::transpose(x[0], perm) * weights};
    }, {arg(d, rng, -2, 2, strided)}, rng());

    // reshape to the reversed extents (and through a flat vector)
    Dims rev(d.rbegin(), d.rend());
    check_gradient("reshape of " + str(d), [rev](const std::vector<Array>& x) {
      Array flat = aj::reshape(x[0], {-1});
      return std::vector<Array>{aj::sin(aj::reshape(flat * flat, Shape(rev)))};
    }, {arg(d, rng, -2, 2, strided)}, rng());

    // broadcast_to a larger shape (one more leading axis, 1s widened)
    Dims small = broadcastable(d, rng), big = d;
    big.insert(big.begin(), 2);
    check_gradient("broadcast_to " + str(small) + " -> " + str(big), [big](const std::vector<Array>& x) {
      Array b = aj::broadcast_to(x[0], Shape(big));
      return std::vector<Array>{b * aj::arange(0.5, 0.5 + static_cast<double>(numel(big)), 1.0, aj::DType::f64).reshape(Shape(big))};
    }, {arg(small, rng, -2, 2, strided)}, rng());

    // expand_dims and squeeze
    check_gradient("expand_dims/squeeze of " + str(d), [](const std::vector<Array>& x) {
      Array e = aj::expand_dims(x[0], 1);
      return std::vector<Array>{aj::exp(aj::squeeze(e, 1)), e * 2.0};
    }, {arg(d, rng)}, rng());
  }
}

TEST_CASE("autodiff ops: slices with steps, negative steps, empty and size-1 results") {
  std::mt19937_64 rng(16);
  for (int s = 0; s < 4 * kShapesPerOp; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    std::vector<aj::Slice> sl;
    std::string desc = "{";
    const int ns = 1 + static_cast<int>(rng() % d.size());
    for (int i = 0; i < ns; ++i) {
      const std::int64_t n = d[static_cast<std::size_t>(i)];
      static const std::int64_t steps[] = {1, 1, 2, 3, -1, -2};
      const std::int64_t step = steps[rng() % 6];
      std::optional<std::int64_t> start, stop;
      if (n > 0) {
        std::uniform_int_distribution<std::int64_t> pos(step > 0 ? -n : -n, step > 0 ? n : n - 1);
        if (rng() % 2) start = pos(rng);
        if (rng() % 2) stop = pos(rng);
      }
      sl.emplace_back(start, stop, step);
      desc += (start ? std::to_string(*start) : "_") + ":" + (stop ? std::to_string(*stop) : "_") + ":" + std::to_string(step) + " ";
    }
    desc += "}";
    auto f = [sl](const std::vector<Array>& x) {
      Array y = aj::slice(x[0], sl);
      return std::vector<Array>{y * y + y};
    };
    check_gradient("slice " + desc + " of " + str(d), f, {arg(d, rng, -2, 2, s % 4 == 2)}, rng());
  }
}

TEST_CASE("autodiff ops: concatenate and stack, with empty parts and a repeated part") {
  std::mt19937_64 rng(17);
  for (int s = 0; s < 2 * kShapesPerOp; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    const int axis = static_cast<int>(rng() % d.size());
    Dims d2 = d;
    d2[static_cast<std::size_t>(axis)] = static_cast<std::int64_t>(rng() % 3);  // possibly 0
    check_gradient("concatenate " + str(d) + " " + str(d2) + " axis " + std::to_string(axis),
                   [axis](const std::vector<Array>& x) {
                     return std::vector<Array>{aj::concatenate({x[0], aj::exp(x[1]), x[0]}, axis) * 1.5};
                   },
                   {arg(d, rng), arg(d2, rng)}, rng());
    check_gradient("stack " + str(d), [axis](const std::vector<Array>& x) {
      return std::vector<Array>{aj::stack({x[0], x[1] * x[0]}, axis)};
    }, {arg(d, rng), arg(d, rng, -2, 2, true)}, rng());
  }
}

TEST_CASE("autodiff ops: matmul (matrices, batches, broadcast batches, vectors)") {
  std::mt19937_64 rng(18);
  struct Case {
    Dims a, b;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 2}},       {{1, 4}, {4, 1}},       {{2, 3, 4}, {2, 4, 5}}, {{2, 3, 4}, {4, 2}},
      {{3, 4}, {2, 4, 2}},    {{2, 1, 2, 3}, {3, 3, 2}}, {{4}, {4, 3}},       {{3, 4}, {4}},
      {{4}, {4}},             {{2, 3, 4}, {4}},       {{0, 3}, {3, 2}},       {{2, 0}, {0, 3}},
  };
  for (const Case& c : cases) {
    auto f = [](const std::vector<Array>& x) { return std::vector<Array>{aj::matmul(x[0], x[1])}; };
    check_gradient("matmul " + str(c.a) + " @ " + str(c.b), f, {arg(c.a, rng), arg(c.b, rng)}, rng());
    // transposed operands (views into the matmul)
    if (c.a.size() == 2 && c.b.size() == 2) {
      auto ft = [](const std::vector<Array>& x) { return std::vector<Array>{aj::matmul(x[0].T(), x[1].T())}; };
      check_gradient("matmul of transposes " + str(c.a) + " " + str(c.b), ft,
                     {arg({c.a[1], c.a[0]}, rng, -2, 2, true), arg({c.b[1], c.b[0]}, rng)}, rng());
    }
  }
}

TEST_CASE("autodiff ops: compositions (softmax cross-entropy, layer norm, a 2-layer net)") {
  std::mt19937_64 rng(19);
  auto xent = [](const std::vector<Array>& x) {
    Array z = x[0];
    Array m = aj::stop_gradient(aj::max(z, 1, true));
    Array lse = aj::log(aj::sum(aj::exp(z - m), 1, true)) + m;
    Array labels = aj::from_vector(std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0}, Shape{3, 4});
    return std::vector<Array>{-aj::mean(aj::sum(labels * (z - lse), 1))};
  };
  check_gradient("softmax cross-entropy", xent, {arg({3, 4}, rng)}, rng());
  auto layer_norm = [](const std::vector<Array>& x) {
    Array mu = aj::mean(x[0], -1, true);
    Array c = x[0] - mu;
    Array var = aj::mean(c * c, -1, true);
    return std::vector<Array>{c * aj::rsqrt(var + 1e-5) * x[1] + x[2]};
  };
  check_gradient("layer norm", layer_norm, {arg({3, 5}, rng), arg({5}, rng), arg({5}, rng)}, rng());
  auto net = [](const std::vector<Array>& x) {
    Array h = aj::maximum(aj::matmul(x[0], x[1]) + x[2], 0.0);
    return std::vector<Array>{aj::tanh(aj::matmul(h, x[3]))};
  };
  check_gradient("2-layer net", net, {arg({4, 3}, rng), arg({3, 5}, rng), arg({5}, rng), arg({5, 2}, rng)}, rng());
}

TEST_CASE("autodiff ops: every op of the table has a rule or is declared non-differentiable") {
  // The switch in rule_for has no default (a new op fails to compile until it
  // is listed); this keeps the "non-differentiable" list honest: only ops
  // without inputs, with bool/integer results or piecewise constant.
  for (int k = 0; k < aj::kNumOps; ++k) {
    const auto op = static_cast<aj::Op>(k);
    if (aj::autodiff::rule_for(op)) continue;
    const std::string name = aj::op_name(op);
    const bool ok = aj::op_category(op) == aj::OpCategory::Leaf ||
                    aj::op_category(op) == aj::OpCategory::Generator ||
                    aj::op_has(op, aj::opflag::Compare) || aj::op_has(op, aj::opflag::Logical) ||
                    name == "argmax" || name == "argmin" || name == "argsort" || name == "argtopk" ||
                    name == "sign" || name == "floor" || name == "ceil" || name == "round" || name == "trunc" ||
                    name == "nextafter" ||  // not differentiated (PyTorch and JAX do not either)
                    name == "random_bits" ||  // integer results (random::bits of a Key)
                    aj::op_has(op, aj::opflag::IntegerOnly);  // bit operations
    CHECK_MESSAGE(ok, "op " << name << " has no derivative rule (core/autodiff/rules.cpp)");
  }
}

TEST_CASE("autodiff ops: lgamma differentiates twice (digamma, trigamma); a third time is a located error") {
  auto f = [](const Array& x) { return aj::sum(aj::lgamma(x)); };
  const Array x = aj::from_vector<double>({0.5, 1.0, 3.5});
  const auto g1 = aj::grad(f)(x).to_vector<double>();
  const auto d = aj::digamma(x).to_vector<double>();
  for (std::size_t i = 0; i < d.size(); ++i) CHECK(g1[i] == doctest::Approx(d[i]).epsilon(1e-14));
  auto df = [&](const Array& y) { return aj::sum(aj::grad(f)(y)); };
  const auto g2 = aj::grad(df)(x).to_vector<double>();
  const auto t = aj::trigamma(x).to_vector<double>();
  for (std::size_t i = 0; i < t.size(); ++i) CHECK(g2[i] == doctest::Approx(t[i]).epsilon(1e-14));
  CHECK(t[1] == doctest::Approx(1.6449340668482264).epsilon(1e-15));  // trigamma(1) = pi^2 / 6
  auto ddf = [&](const Array& y) { return aj::sum(aj::grad(df)(y)); };
  try {
    (void)aj::grad(ddf)(x);  // the line below names this file
    FAIL("the derivative of trigamma was taken");
  } catch (const aj::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("trigamma") != std::string::npos);
    CHECK(what.find("not implemented") != std::string::npos);
    CHECK(what.find("test_autodiff_ops.cpp") != std::string::npos);
  }
}

// aj::grad / value_and_grad / vjp / jvp / stop_gradient / sum_to_shape: the
// API, the documented choices at kinks (ties of max/min, abs, pow and sqrt
// at 0, products with zeros), integer arguments, what f may not do,
// higher-order derivatives against closed forms, and a training step that
// allocates and compiles nothing after warm-up. (Every op against central
// differences: tests/test_autodiff_ops.cpp; random programs:
// tests/test_autodiff_random.cpp.)
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <future>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/autodiff_check.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;

std::vector<double> vals(const Array& a) { return a.to_vector<double>(); }

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
    }
  }
}

Array f64(std::vector<double> v, Shape s) { return aj::from_vector(v, s); }
Array f64(std::vector<double> v) { return aj::from_vector(v); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("autodiff: grad, value_and_grad and their argument forms") {
  std::mt19937_64 rng(1);
  const std::vector<double> xv = ajtest::normal_values(6, rng), yv = ajtest::normal_values(6, rng);
  const Array x = f64(xv, {2, 3}), y = f64(yv, {2, 3});
  std::vector<double> want_dx(6), want_dy(6);
  double want_value = 0;
  for (int i = 0; i < 6; ++i) {  // f = sum(x^2 y + sin(x)); df/dx = 2xy + cos x, df/dy = x^2
    want_value += xv[i] * xv[i] * yv[i] + std::sin(xv[i]);
    want_dx[i] = 2 * xv[i] * yv[i] + std::cos(xv[i]);
    want_dy[i] = xv[i] * xv[i];
  }
  auto f = [](const Array& a, const Array& b) { return aj::sum(a * a * b + aj::sin(a)); };

  SUBCASE("grad of the first argument") { check_close(vals(aj::grad(f)(x, y)), want_dx); }
  SUBCASE("grad of the second, and by a negative argnum") {
    check_close(vals(aj::grad(f, 1)(x, y)), want_dy);
    check_close(vals(aj::grad(f, -1)(x, y)), want_dy);
  }
  SUBCASE("value_and_grad of both") {
    auto [value, grads] = aj::value_and_grad(f, {0, 1})(x, y);
    CHECK(value.ndim() == 0);
    check_close({value.item<double>()}, {want_value});
    REQUIRE(grads.size() == 2);
    check_close(vals(grads[0]), want_dx);
    check_close(vals(grads[1]), want_dy);
  }
  SUBCASE("a function of one std::vector<Array>") {
    auto fv = [&](const std::vector<Array>& p) { return f(p[0], p[1]); };
    std::vector<Array> grads = aj::grad(fv, {0, 1})(std::vector<Array>{x, y});
    check_close(vals(grads[0]), want_dx);
    check_close(vals(grads[1]), want_dy);
  }
  SUBCASE("vjp with one array, and with vectors of several outputs") {
    auto [out, ct] = aj::vjp([](const Array& a) { return aj::exp(a); }, x, y);
    std::vector<double> want(6);
    for (int i = 0; i < 6; ++i) want[i] = std::exp(xv[i]) * yv[i];
    check_close(vals(out), [&] { std::vector<double> e(6); for (int i = 0; i < 6; ++i) e[i] = std::exp(xv[i]); return e; }());
    check_close(vals(ct), want);
    auto [outs, cts] = aj::vjp([](const std::vector<Array>& p) { return std::vector<Array>{p[0] * p[1], p[0] + p[1]}; },
                               {x, y}, {aj::ones({2, 3}, DType::f64), y});
    std::vector<double> wx(6), wy(6);
    for (int i = 0; i < 6; ++i) wx[i] = yv[i] + yv[i], wy[i] = xv[i] + yv[i];
    check_close(vals(cts[0]), wx);
    check_close(vals(cts[1]), wy);
  }
  SUBCASE("jvp: directional derivative") {
    auto [out, t] = aj::jvp([](const Array& a) { return aj::sum(aj::sin(a) * a); }, x, y);
    double want = 0;
    for (int i = 0; i < 6; ++i) want += (std::cos(xv[i]) * xv[i] + std::sin(xv[i])) * yv[i];
    check_close({t.item<double>()}, {want});
  }
  SUBCASE("the same array passed twice is two arguments") {
    std::vector<Array> g = aj::grad([](const Array& a, const Array& b) { return aj::sum(a * b * b); }, {0, 1})(x, x);
    std::vector<double> w0(6), w1(6);
    for (int i = 0; i < 6; ++i) w0[i] = xv[i] * xv[i], w1[i] = 2 * xv[i] * xv[i];
    check_close(vals(g[0]), w0);
    check_close(vals(g[1]), w1);
  }
  SUBCASE("an array captured by f is a constant, even when it is also the argument") {
    Array g = aj::grad([&](const Array& w) { return aj::sum(w * x); })(x);
    check_close(vals(g), xv);  // not 2x
  }
  SUBCASE("an unevaluated (lazy) argument") {
    Array lazy = x * 2.0;
    Array g = aj::grad([](const Array& a) { return aj::sum(a * a); })(lazy);
    std::vector<double> want(6);
    for (int i = 0; i < 6; ++i) want[i] = 4 * xv[i];
    check_close(vals(g), want);
    check_close(vals(lazy), [&] { std::vector<double> e(6); for (int i = 0; i < 6; ++i) e[i] = 2 * xv[i]; return e; }());
  }
  SUBCASE("an output that does not depend on the argument: zero gradient") {
    Array g = aj::grad([&](const Array&) { return aj::sum(y); })(x);
    CHECK(g.shape() == x.shape());
    check_close(vals(g), std::vector<double>(6, 0.0));
  }
  SUBCASE("f32 arguments get f32 gradients") {
    Array x32 = x.astype(DType::f32);
    Array g = aj::grad([](const Array& a) { return aj::sum(a * a); })(x32);
    CHECK(g.dtype() == DType::f32);
    std::vector<double> want(6);
    for (int i = 0; i < 6; ++i) want[i] = 2.0 * static_cast<float>(xv[i]);
    check_close(vals(g), want, 1e-6);
  }
}

TEST_CASE("autodiff: stop_gradient") {
  const Array x = f64({0.5, -1.25, 2.0});
  Array g = aj::grad([](const Array& a) { return aj::sum(aj::stop_gradient(a) * a); })(x);
  check_close(vals(g), {0.5, -1.25, 2.0});  // not 2a
  check_close(vals(aj::stop_gradient(x)), {0.5, -1.25, 2.0});
  // forward mode too
  auto [out, t] = aj::jvp([](const Array& a) { return aj::stop_gradient(a * a) + a; }, x, f64({1, 1, 1}));
  check_close(vals(t), {1, 1, 1});
  // integers pass through
  Array i = aj::arange(3);
  CHECK(aj::stop_gradient(i).node_id() == i.node_id());
}

TEST_CASE("autodiff: sum_to_shape") {
  const Array x = aj::arange(24, DType::f64).reshape({2, 3, 4});
  check_close(vals(aj::sum_to_shape(x, {4})), vals(aj::sum(x, {0, 1})));
  check_close(vals(aj::sum_to_shape(x, {3, 1})), vals(aj::sum(x, {0, 2}, true).reshape({3, 1})));
  check_close(vals(aj::sum_to_shape(x, {1, 1, 4})), vals(aj::sum(x, {0, 1}, true)));
  CHECK(aj::sum_to_shape(x, {2, 3, 4}).node_id() == x.node_id());
  CHECK(aj::sum_to_shape(x, {}).shape() == Shape{});
  Array xi = aj::arange(6, DType::i32).reshape({2, 3});
  CHECK(aj::sum_to_shape(xi, {3}).dtype() == DType::i32);
  CHECK(error_of([&] { aj::sum_to_shape(x, {2, 4}); }).find("sum_to_shape") != std::string::npos);
  CHECK(error_of([&] { aj::sum_to_shape(x, {5, 2, 3, 4}); }).find("test_autodiff.cpp") != std::string::npos);
}

TEST_CASE("autodiff: ties of max and min share the gradient equally") {
  SUBCASE("reductions") {
    const Array x = f64({1, 3, 3, 2, -1, 3}, {2, 3});
    check_close(vals(aj::grad([](const Array& a) { return aj::max(a); })(x)), {0, 1.0 / 3, 1.0 / 3, 0, 0, 1.0 / 3});
    check_close(vals(aj::grad([](const Array& a) { return aj::sum(aj::max(a, 1)); })(x)), {0, 0.5, 0.5, 0, 0, 1});
    check_close(vals(aj::grad([](const Array& a) { return aj::sum(aj::min(a, 0)); })(x)), {1, 0, 0.5, 0, 1, 0.5});
    // a NaN maximum: the gradient goes to the NaN
    const Array n = f64({1, std::nan(""), 3});
    check_close(vals(aj::grad([](const Array& a) { return aj::max(a); })(n)), {0, 1, 0});
  }
  SUBCASE("elementwise, and relu at 0") {
    const Array a = f64({1, 2, 3}), b = f64({1, 5, 0});
    auto [v, g] = aj::value_and_grad([](const Array& p, const Array& q) { return aj::sum(aj::maximum(p, q)); }, {0, 1})(a, b);
    check_close(vals(g[0]), {0.5, 0, 1});
    check_close(vals(g[1]), {0.5, 1, 0});
    std::vector<Array> gm = aj::grad([](const Array& p, const Array& q) { return aj::sum(aj::minimum(p, q)); }, {0, 1})(a, b);
    check_close(vals(gm[0]), {0.5, 1, 0});
    check_close(vals(gm[1]), {0.5, 0, 1});
    check_close(vals(aj::grad([](const Array& p) { return aj::sum(aj::maximum(p, 0.0)); })(f64({-1, 0, 2}))), {0, 0.5, 1});
  }
}

TEST_CASE("autodiff: kinks and edges (abs, sign, rounding, pow, sqrt, prod with zeros)") {
  auto d = [](auto f, std::vector<double> x) {
    return vals(aj::grad([f](const Array& a) { return aj::sum(f(a)); })(f64(x)));
  };
  check_close(d([](const Array& a) { return aj::abs(a); }, {-2, 0, 3}), {-1, 0, 1});
  check_close(d([](const Array& a) { return aj::sign(a) * 5.0; }, {-2, 0, 3}), {0, 0, 0});
  check_close(d([](const Array& a) { return aj::floor(a) + aj::ceil(a) + aj::round(a); }, {-2.5, 0.2, 3}), {0, 0, 0});
  check_close(d([](const Array& a) { return aj::pow(a, 2.0); }, {0, 3}), {0, 6});
  check_close(d([](const Array& a) { return aj::pow(a, 0.0); }, {0, 3}), {0, 0});  // not NaN at 0
  check_close(d([](const Array& a) { return aj::pow(a, 0.5); }, {0, 4}), {INFINITY, 0.25});
  check_close(d([](const Array& a) { return aj::sqrt(a); }, {0, 4}), {INFINITY, 0.25});
  // d/db a^b = a^b log a: 0 where a == 0 (not 0 * -inf)
  const Array base = f64({0, 2});
  check_close(vals(aj::grad([&](const Array& b) { return aj::sum(aj::pow(base, b)); })(f64({2, 3}))), {0, 8 * std::log(2.0)});
  // prod: the product of the others, zeros included
  check_close(d([](const Array& a) { return aj::prod(a); }, {2, 4, 3}), {12, 6, 8});
  check_close(d([](const Array& a) { return aj::prod(a); }, {2, 0, 3}), {0, 6, 0});
  check_close(d([](const Array& a) { return aj::prod(a); }, {0, 5, 0}), {0, 0, 0});
  check_close(vals(aj::grad([](const Array& a) { return aj::sum(aj::prod(a, 1)); })(f64({0, 2, 3, 4, 0, 0}, {2, 3}))),
              {6, 0, 0, 0, 0, 0});
  check_close(vals(aj::grad([](const Array& a) { return aj::sum(aj::prod(a, 0)); })(f64({0, 2, 3, 4, 0, 5}, {2, 3}))),
              {4, 0, 5, 0, 2, 3});
}

TEST_CASE("autodiff: casts") {
  const Array x = f64({0.5, -1.5, 2.25});
  Array g = aj::grad([](const Array& a) { return aj::sum(a.astype(DType::f32) * 3.0f).astype(DType::f64); })(x);
  CHECK(g.dtype() == DType::f64);
  check_close(vals(g), {3, 3, 3});
  // through an integer: no gradient
  check_close(vals(aj::grad([](const Array& a) { return aj::sum(a.astype(DType::i32).astype(DType::f64) * a); })(x)),
              {0, -1, 2});
  // f32 argument, f64 computation
  Array g32 = aj::grad([](const Array& a) { return aj::sum(a.astype(DType::f64) * a.astype(DType::f64)); })(x.astype(DType::f32));
  CHECK(g32.dtype() == DType::f32);
  check_close(vals(g32), {1, -3, 4.5});
}

TEST_CASE("autodiff: integer and bool arguments get no gradient") {
  const Array n = aj::arange(3, DType::i32);
  const Array x = f64({1, 2, 3});
  // grad refuses them (as JAX), naming the argument and the caller's line
  const std::string e = error_of([&] { aj::grad([](const Array& a) { return aj::sum(a * 2.0); })(n); });
  CHECK(e.find("argument 0 is i32[3]") != std::string::npos);
  CHECK(e.find("floating-point") != std::string::npos);
  CHECK(e.find("test_autodiff.cpp") != std::string::npos);
  // vjp and jvp: zeros of the argument's shape and dtype, and the float ones as usual
  auto [outs, cts] = aj::vjp([](const std::vector<Array>& p) { return std::vector<Array>{p[0] * p[1]}; },
                             {n, x}, {aj::ones({3}, DType::f64)});
  CHECK(cts[0].dtype() == DType::i32);
  CHECK(vals(cts[0]) == std::vector<double>{0, 0, 0});
  check_close(vals(cts[1]), {0, 1, 2});
  auto [o2, ts] = aj::jvp([](const std::vector<Array>& p) { return std::vector<Array>{p[0] * p[1]}; },
                          {n, x}, {aj::ones({3}, DType::i32), aj::ones({3}, DType::f64)});
  check_close(vals(ts[0]), {0, 1, 2});
  // an integer output: its cotangent is ignored, it passes nothing back
  auto [o3, c3] = aj::vjp([](const Array& a) { return aj::argmax(a); }, x, aj::ones({}, DType::i64));
  check_close(vals(c3), {0, 0, 0});
}

TEST_CASE("autodiff: bad calls are located errors") {
  const Array x = f64({1, 2, 3});
  CHECK(error_of([&] { aj::grad([](const Array& a) { return a * 2.0; })(x); }).find("scalar") != std::string::npos);
  CHECK(error_of([&] { aj::grad([](const Array& a) { return aj::sum(a); }, 3)(x); }).find("out of range") != std::string::npos);
  CHECK(error_of([&] { aj::vjp([](const Array& a) { return a * 2.0; }, x, aj::ones({4}, DType::f64)); })
            .find("cotangent 0 is f64[4] but output 0 of f is f64[3]") != std::string::npos);
  CHECK(error_of([&] { aj::jvp([](const Array& a) { return a * 2.0; }, x, aj::ones({2}, DType::f64)); })
            .find("tangent 0") != std::string::npos);
  CHECK(error_of([&] { aj::grad([](const Array& a) { return aj::sum(a); })(Array()); }).find("empty") != std::string::npos);
}

TEST_CASE("autodiff: evaluating a traced value inside f is refused; other values are fine") {
  const Array x = f64({1, 2, 3});
  const Array other = f64({4, 5, 6});
  const auto live = aj::stats().live_nodes;
  for (int how = 0; how < 4; ++how) {
    INFO("how " << how);
    const std::string e = error_of([&] {
      aj::grad([&](const Array& a) {
        Array s = aj::sum(a * a);
        if (how == 0) s.eval();
        if (how == 1) (void)s.item<double>();
        if (how == 2) (void)(a * 2.0).to_vector<double>();
        if (how == 3) {
          std::ostringstream os;
          os << a;
        }
        return s;
      })(x);
    });
    CHECK(e.find("depends on an argument being differentiated") != std::string::npos);
    if (how < 3) CHECK(e.find("test_autodiff.cpp") != std::string::npos);  // printing has no caller line
  }
  CHECK(aj::stats().live_nodes == live);  // the failed traces left nothing behind
  // values that do not depend on the argument may be read inside f
  double seen = 0;
  Array g = aj::grad([&](const Array& a) {
    seen = aj::sum(other).item<double>();
    return aj::sum(a * seen);
  })(x);
  CHECK(seen == 15);
  check_close(vals(g), {15, 15, 15});
  // and after an error, the arguments and the graph still work
  check_close(vals(x * 2.0), {2, 4, 6});
}

TEST_CASE("autodiff: higher order derivatives against closed forms") {
  const std::vector<double> xv = {-1.3, -0.2, 0.4, 1.7};
  const Array x = f64(xv);
  auto sum_of = [](auto f) { return [f](const Array& a) { return aj::sum(f(a)); }; };
  // d2/dx2 of sin, x^3, exp(x) x, tanh
  auto second = [&](auto f) { return vals(aj::grad(sum_of(aj::grad(sum_of(f))))(x)); };
  std::vector<double> w(4);
  for (int i = 0; i < 4; ++i) w[i] = -std::sin(xv[i]);
  check_close(second([](const Array& a) { return aj::sin(a); }), w);
  for (int i = 0; i < 4; ++i) w[i] = 6 * xv[i];
  check_close(second([](const Array& a) { return a * a * a; }), w);
  for (int i = 0; i < 4; ++i) w[i] = std::exp(xv[i]) * (xv[i] + 2);
  check_close(second([](const Array& a) { return aj::exp(a) * a; }), w);
  for (int i = 0; i < 4; ++i) {
    const double t = std::tanh(xv[i]);
    w[i] = -2 * t * (1 - t * t);
  }
  check_close(second([](const Array& a) { return aj::tanh(a); }), w);
  for (int i = 0; i < 4; ++i) w[i] = 2 / (xv[i] * xv[i] * xv[i]);  // 1/x -> 2/x^3
  check_close(second([](const Array& a) { return 1.0 / a; }), w);
  // third order: x^4 -> 24 x
  auto g1 = aj::grad(sum_of([](const Array& a) { return a * a * a * a; }));
  auto g2 = aj::grad(sum_of(g1));
  auto g3 = aj::grad(sum_of(g2));
  for (int i = 0; i < 4; ++i) w[i] = 24 * xv[i];
  check_close(vals(g3(x)), w);
  // reductions: Hessian-vector products of sum(x)^2 (2 sum(v) 1), prod (H_ij = prod / (x_i x_j), i != j),
  // max (0), logsumexp (diag(p) - p p^T)
  const std::vector<double> vv = {0.3, -1.0, 2.0, 0.5};
  const Array v = f64(vv);
  auto hvp = [&](auto f) {
    return vals(aj::grad([&](const Array& a) { return aj::sum(aj::grad(f)(a) * v); })(x));
  };
  double sv = 0;
  for (double e : vv) sv += e;
  check_close(hvp([](const Array& a) { Array s = aj::sum(a); return s * s; }), std::vector<double>(4, 2 * sv));
  double p = 1;
  for (double e : xv) p *= e;
  for (int i = 0; i < 4; ++i) {
    w[i] = 0;
    for (int j = 0; j < 4; ++j) if (j != i) w[i] += p / (xv[i] * xv[j]) * vv[j];
  }
  check_close(hvp([](const Array& a) { return aj::prod(a); }), w);
  check_close(hvp([](const Array& a) { return aj::max(a); }), std::vector<double>(4, 0.0));
  double z = 0;
  std::vector<double> pr(4);
  for (double e : xv) z += std::exp(e);
  for (int i = 0; i < 4; ++i) pr[i] = std::exp(xv[i]) / z;
  double pv = 0;
  for (int i = 0; i < 4; ++i) pv += pr[i] * vv[i];
  for (int i = 0; i < 4; ++i) w[i] = pr[i] * vv[i] - pr[i] * pv;
  check_close(hvp([](const Array& a) { return aj::log(aj::sum(aj::exp(a))); }), w);
  // jvp of grad (forward over reverse): the same Hessian-vector product
  auto [g, hv] = aj::jvp(aj::grad([](const Array& a) { return aj::log(aj::sum(aj::exp(a))); }), x, v);
  check_close(vals(hv), w);
}

TEST_CASE("autodiff: second derivatives of every elementwise op and reduction against central differences") {
  // The gradient function itself checked as a function: its vjp is a
  // Hessian-vector product, compared with differences of the gradient.
  struct Case {
    const char* name;
    std::function<Array(const Array&)> f;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"exp", [](const Array& a) { return aj::exp(a); }, -1, 1},
      {"log", [](const Array& a) { return aj::log(a); }, 0.3, 2},
      {"log1p", [](const Array& a) { return aj::log1p(a); }, -0.5, 2},
      {"expm1", [](const Array& a) { return aj::expm1(a); }, -1, 1},
      {"sin", [](const Array& a) { return aj::sin(a); }, -2, 2},
      {"cos", [](const Array& a) { return aj::cos(a); }, -2, 2},
      {"tan", [](const Array& a) { return aj::tan(a); }, -1, 1},
      {"tanh", [](const Array& a) { return aj::tanh(a); }, -2, 2},
      {"sigmoid", [](const Array& a) { return aj::sigmoid(a); }, -2, 2},
      {"sqrt", [](const Array& a) { return aj::sqrt(a); }, 0.3, 2},
      {"rsqrt", [](const Array& a) { return aj::rsqrt(a); }, 0.3, 2},
      {"abs * x", [](const Array& a) { return aj::abs(a) * a; }, -2, 2},
      {"div", [](const Array& a) { return aj::sin(a) / (a * a + 1.0); }, -2, 2},
      {"pow", [](const Array& a) { return aj::pow(a * a + 0.5, aj::cos(a)); }, -2, 2},
      {"mod", [](const Array& a) { return aj::mod(a * a, 0.7) * a; }, 0.05, 0.8},
      {"max/min", [](const Array& a) { return aj::maximum(a * a, 0.5) * aj::minimum(a, 0.2); }, -2, 2},
      {"sum", [](const Array& a) { Array s = aj::sum(a * a, 0, true); return s * a; }, -2, 2},
      {"prod", [](const Array& a) { return aj::prod(a, 1, true) * a; }, -2, 2},
      {"max", [](const Array& a) { return aj::max(a, 0, true) * a; }, -2, 2},
      {"matmul", [](const Array& a) { return aj::matmul(a, a.T()); }, -2, 2},
      {"where/slice", [](const Array& a) { Array s = aj::slice(a, {{std::nullopt, std::nullopt, -1}}); return aj::where(s > 0.0, s * a, a * a * a); }, -2, 2},
  };
  std::mt19937_64 rng(2);
  for (const Case& c : cases) {
    std::uniform_real_distribution<double> u(c.lo, c.hi);
    std::vector<double> xv(6);
    for (auto& e : xv) e = u(rng);
    auto gradient = [&c](const std::vector<Array>& p) {
      return std::vector<Array>{aj::grad([&c](const Array& a) { return aj::sum(c.f(a)); })(p[0])};
    };
    ajtest::check_gradient(std::string("second derivative of ") + c.name, gradient,
                           {ajtest::Arg{xv, Shape{2, 3}, false}}, rng(), 1e-5, 1e-6);
  }
}

TEST_CASE("autodiff: a training step allocates and compiles nothing after warm-up") {
  // A small MLP: relu, softmax cross-entropy, Adam; value_and_grad, the update
  // and the loss in one eval per step.
  aj::random::seed(5);
  const int n = 32, d = 20, h = 16, c = 4;
  const Array X = aj::random::normal({n, d}, 0, 1, DType::f32);
  const Array labels = aj::random::uniform({n}, 0, c, DType::f32).astype(DType::i32);
  const Array Y = (aj::expand_dims(labels, 1) == aj::arange(c, DType::i32)).astype(DType::f32);
  aj::eval({X, Y});
  std::vector<Array> params = {aj::random::normal({d, h}, 0, 0.3, DType::f32), aj::zeros({h}),
                               aj::random::normal({h, c}, 0, 0.3, DType::f32), aj::zeros({c})};
  std::vector<Array> m, v;
  for (auto& p : params) m.push_back(aj::zeros(p.shape())), v.push_back(aj::zeros(p.shape()));
  aj::eval(params);
  auto loss_fn = [&](const std::vector<Array>& p) {
    Array hid = aj::maximum(aj::matmul(X, p[0]) + p[1], 0.0f);
    Array z = aj::matmul(hid, p[2]) + p[3];
    Array mx = aj::stop_gradient(aj::max(z, 1, true));
    Array lse = aj::log(aj::sum(aj::exp(z - mx), 1, true)) + mx;
    return aj::mean(aj::sum(Y * (lse - z), 1));
  };
  auto vg = aj::value_and_grad(loss_fn, {0, 1, 2, 3});
  std::vector<double> losses;
  auto step = [&](int t) {
    auto [loss, grads] = vg(params);
    const float b1 = 0.9f, b2 = 0.999f, lr = 0.01f;
    std::vector<Array> all{loss};
    for (std::size_t i = 0; i < params.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * grads[i];
      v[i] = b2 * v[i] + (1 - b2) * grads[i] * grads[i];
      const float c1 = 1 - std::pow(b1, static_cast<float>(t)), c2 = 1 - std::pow(b2, static_cast<float>(t));
      params[i] = params[i] - lr * (m[i] / c1) / (aj::sqrt(v[i] / c2) + 1e-8f);
      all.push_back(params[i]), all.push_back(m[i]), all.push_back(v[i]);
    }
    aj::eval(all);
    losses.push_back(loss.item<double>());
  };
  for (int t = 1; t <= 3; ++t) step(t);
  aj::reset_stats();
  for (int t = 4; t <= 10; ++t) step(t);
  const aj::Stats s = aj::stats();
  CHECK(s.system_allocs == 0);
  CHECK(s.kernels_compiled == 0);
  CHECK(s.kernel_disk_hits == 0);
  CHECK(s.plans_built == 0);
  CHECK(s.evals == 7);
  MESSAGE("kernels per step: " << s.kernels_launched / 7 << ", in place: " << s.inplace_reuses / 7);
  CHECK(losses.back() < losses.front());
}

TEST_CASE("donation: an output written during a reduction never takes the buffer of an input read after it") {
  // Found by the random autodiff programs (forward and backward fused into one
  // reduction kernel): x * 2 was written in place of x during the reduction
  // loop of sum(x), and x was then read again after it (reduce axis of
  // extent 1, so the strides agreed). opt/passes/assign_buffers.cpp.
  Array y, r;
  {
    Array x = f64({3.0}, {1});
    y = x * 2.0;
    r = aj::sum(x) + aj::reshape(x, {});
  }
  aj::eval({y, r});
  CHECK(y.item<double>() == 6);
  CHECK(r.item<double>() == 6);
}

TEST_CASE("autodiff: an MLP's gradient is one plan: transposed matmul operands are views, nothing for the data") {
  aj::random::seed(9);
  const Array X = aj::random::normal({64, 30}, 0, 1, DType::f32);
  const Array Y = aj::random::uniform({64, 5}, 0, 1, DType::f32);
  std::vector<Array> p = {aj::random::normal({30, 16}, 0, 0.2, DType::f32), aj::zeros({16}),
                          aj::random::normal({16, 5}, 0, 0.2, DType::f32), aj::zeros({5})};
  aj::eval({X, Y});
  aj::eval(p);
  auto loss = [&](const std::vector<Array>& q) {
    Array h = aj::maximum(aj::matmul(X, q[0]) + q[1], 0.0f);
    Array z = aj::matmul(h, q[2]) + q[3];
    Array d = z - Y;
    return aj::mean(d * d);
  };
  auto [l, g] = aj::value_and_grad(loss, {0, 1, 2, 3})(p);
  std::vector<Array> all{l};
  all.insert(all.end(), g.begin(), g.end());
  const std::string plan = aj::explain(all);
  INFO(plan);
  auto count = [&](const std::string& what) {
    int n = 0;
    for (std::size_t at = plan.find(what); at != std::string::npos; at = plan.find(what, at + 1)) ++n;
    return n;
  };
  // forward X @ W1, h @ W2; backward h^T @ dz, dz @ W2^T, X^T @ dh (no dX: X is not differentiated)
  CHECK(count("= matmul") == 5);
  CHECK(count("copy:") == 0);  // every transposed operand is read in place (a BLAS transpose flag)
  CHECK(count("= transpose of") >= 3);
  // (Step lines start a line; "at step 9" inside a not-in-place line is no step.)
  CHECK(count("(no copy)") == count("\nstep ") - count(": kernel k") - count(": library"));
}

TEST_CASE("autodiff: explain() inside f (which simplifies the graph) keeps tracers and stop_gradient") {
  const Array x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Array g = aj::grad([](const Array& a) {
    Array y = aj::reshape(a, {6}) * aj::reshape(aj::stop_gradient(a), {6});
    (void)aj::explain(y);  // plans (simplify folds reshapes of reshapes) without evaluating
    return aj::sum(y);
  })(x);
  check_close(vals(g), {1, 2, 3, 4, 5, 6});  // not 2x, not 0
}

TEST_CASE("autodiff: arrays of another thread as primals, cotangents, tangents and captured constants") {
  // Made and evaluated on a thread that has exited by the time they are used
  // (its graph lives on while they do): every entry point imports them.
  Array x, c, t, k, lazy;
  std::thread([&] {
    x = f64({0.5, -1, 2}, {3});
    c = f64({1, 2, 3}, {3});
    t = f64({-1, 0.5, 1}, {3});
    k = f64({2, 3, 4}, {3});
    lazy = x * 2.0;  // left unevaluated: evaluated in its own graph when imported
    aj::eval({x, c, t, k});
  }).join();
  auto f = [&](const Array& a) { return aj::sin(a) * k; };
  check_close(vals(aj::grad([&](const Array& a) { return aj::sum(f(a)); })(x)),
              {2 * std::cos(0.5), 3 * std::cos(-1.0), 4 * std::cos(2.0)});
  auto [v, g] = aj::value_and_grad([&](const Array& a) { return aj::sum(f(a)); })(x);
  check_close({v.item<double>()}, {2 * std::sin(0.5) + 3 * std::sin(-1.0) + 4 * std::sin(2.0)});
  auto [y, ct] = aj::vjp(f, x, c);
  check_close(vals(ct), {2 * std::cos(0.5), 6 * std::cos(-1.0), 12 * std::cos(2.0)});
  check_close(vals(y), {2 * std::sin(0.5), 3 * std::sin(-1.0), 4 * std::sin(2.0)});
  auto [y2, tan] = aj::jvp(f, x, t);
  check_close(vals(tan), {-2 * std::cos(0.5), 1.5 * std::cos(-1.0), 4 * std::cos(2.0)});
  check_close(vals(aj::grad([](const Array& a) { return aj::sum(a * a); })(lazy)), {2, -4, 8});
  // f returning another thread's array: a constant (no derivative)
  auto [outs, cts] = aj::vjp([&](const std::vector<Array>& a) { return std::vector<Array>{a[0] * 2.0, k}; },
                             std::vector<Array>{x}, std::vector<Array>{c, c});
  check_close(vals(cts[0]), {2, 4, 6});
  check_close(vals(outs[1]), {2, 3, 4});
  check_close(vals(aj::stop_gradient(k)), {2, 3, 4});
  check_close(vals(aj::sum_to_shape(aj::broadcast_to(k, {2, 3}), {1, 3})), {4, 6, 8});
}

TEST_CASE("autodiff: f may wait on another thread that uses this thread's arrays") {
  // No graph lock is held while f runs: a thread f waits for can evaluate and
  // read arrays of the graph f traces into.
  const Array w = f64({1, 2, 3}, {3});
  w.eval();
  const Array x = f64({0.1, 0.2, 0.3}, {3});
  Array g = aj::grad([&](const Array& a) {
    const double s = std::async(std::launch::async, [&] { return aj::sum(w * w).item<double>(); }).get();
    return aj::sum(a * w) * s;
  })(x);
  check_close(vals(g), {14, 28, 42});
}

TEST_CASE("autodiff: threads running value_and_grad at once on their own arrays") {
  // Each thread trains a least-squares model on its own data for a few steps
  // (its gradients traced, planned and run in its own graph) and checks
  // every step against the gradient worked out in doubles.
  constexpr int kThreads = 4, kSteps = 25, kN = 16, kD = 5;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([id, &failures] {
      std::mt19937_64 rng(100 + static_cast<std::uint64_t>(id));
      const std::vector<double> xv = ajtest::normal_values(kN * kD, rng), yv = ajtest::normal_values(kN, rng);
      std::vector<double> w = ajtest::normal_values(kD, rng);
      const Array X = f64(xv, {kN, kD}), Y = f64(yv, {kN});
      auto loss = [&](const Array& p) {
        Array r = aj::matmul(X, p) - Y;
        return aj::mean(r * r);
      };
      auto step = aj::value_and_grad(loss);
      Array p = f64(w, {kD});
      for (int s = 0; s < kSteps; ++s) {
        auto [l, g] = step(p);
        Array next = p - 0.05 * g;
        aj::eval({l, g, next});
        // by hand: r = X w - y, loss = |r|^2 / n, grad = 2 X^T r / n
        std::vector<double> r(kN), gw(kD, 0.0);
        double want = 0;
        for (int i = 0; i < kN; ++i) {
          double acc = -yv[static_cast<std::size_t>(i)];
          for (int j = 0; j < kD; ++j) acc += xv[static_cast<std::size_t>(i * kD + j)] * w[static_cast<std::size_t>(j)];
          r[static_cast<std::size_t>(i)] = acc;
          want += acc * acc / kN;
        }
        for (int i = 0; i < kN; ++i) {
          for (int j = 0; j < kD; ++j) gw[static_cast<std::size_t>(j)] += 2 * xv[static_cast<std::size_t>(i * kD + j)] * r[static_cast<std::size_t>(i)] / kN;
        }
        const std::vector<double> got = vals(g);
        bool ok = std::fabs(l.item<double>() - want) <= 1e-12 * (1 + want);
        for (int j = 0; j < kD; ++j) ok = ok && std::fabs(got[static_cast<std::size_t>(j)] - gw[static_cast<std::size_t>(j)]) <= 1e-12 * (1 + std::fabs(gw[static_cast<std::size_t>(j)]));
        if (!ok) {
          failures[static_cast<std::size_t>(id)] = "thread " + std::to_string(id) + " step " + std::to_string(s);
          return;
        }
        for (int j = 0; j < kD; ++j) w[static_cast<std::size_t>(j)] -= 0.05 * gw[static_cast<std::size_t>(j)];
        p = next;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& f : failures) CHECK_MESSAGE(f.empty(), f);
}

TEST_CASE("autodiff: explain() inside f keeps the tracer of a primal that is a fill") {
  // simplify folds views of fills into fills; a tracer (a marked reshape) of
  // aj::ones must stay a tracer, or the gradient is lost.
  const Array x = aj::full({3}, 2.0, DType::f64);
  Array g = aj::grad([](const Array& a) {
    Array y = a * a;
    (void)aj::explain(y);
    return aj::sum(y);
  })(x);
  check_close(vals(g), {4, 4, 4});
}

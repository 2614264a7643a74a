// Functions with derivatives of their own: aj::custom_vjp, aj::custom_jvp and
// aj::checkpoint (arrayjit/autodiff.hpp). Each against closed forms or plain
// autodiff of the same function on random inputs; the rule's choice must show
// (a bwd that differs from the true derivative is what grad returns); errors
// for bad rules; nested derivatives; inside aj::compile; and checkpoint's
// memory, read from stats().peak_live_bytes.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/api/annotations.hpp"
#include "core/api/trace.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;

std::vector<double> vals(const Array& a) { return a.to_vector<double>(); }

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

Array random_f64(std::mt19937_64& rng, Shape s, double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.numel()));
  for (double& x : v) x = u(rng);
  return aj::from_vector(v, s);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    return e.what();
  }
  return "";
}

std::size_t annotations() {
  aj::trace::Scope scope;
  return aj::trace::annotation_count();
}

}  // namespace

TEST_CASE("custom_vjp: the value is f's, the reverse derivative bwd's") {
  std::mt19937_64 rng(11);
  // softplus with a stable derivative (JAX's example of custom_vjp): the
  // naive derivative exp(x) / (1 + exp(x)) is inf / inf = NaN at x = 800.
  auto softplus = aj::custom_vjp(
      [](const Array& x) { return aj::log1p(aj::exp(-aj::abs(x))) + aj::maximum(x, 0.0); },
      [](const Array& x) {
        return std::pair{aj::log1p(aj::exp(-aj::abs(x))) + aj::maximum(x, 0.0), std::vector<Array>{x}};
      },
      [](const std::vector<Array>& res, const Array& g) { return g * aj::sigmoid(res[0]); });
  std::vector<double> xs = {-800, -3, -0.5, 0, 0.25, 2, 40, 800};
  const Array x = aj::from_vector(xs);
  auto [value, grads] = aj::value_and_grad([&](const Array& a) { return aj::sum(softplus(a)); })(x);
  std::vector<double> want_g, want_v = {0};
  for (double v : xs) {
    want_g.push_back(1 / (1 + std::exp(-v)));
    want_v[0] += std::log1p(std::exp(-std::fabs(v))) + std::max(v, 0.0);
  }
  check_close(vals(grads), want_g);
  check_close(vals(value), want_v);
  // Plain autodiff of the naive form gives NaN at 800: the rule is what ran.
  const Array naive = aj::grad([](const Array& a) { return aj::sum(aj::log(1.0 + aj::exp(a))); })(x);
  CHECK(std::isnan(vals(naive).back()));

  SUBCASE("a rule that differs from f's derivative is the one used") {
    auto twice = aj::custom_vjp([](const Array& a) { return aj::sin(a); },
                                [](const Array& a) { return std::pair{aj::sin(a), std::vector<Array>{}}; },
                                [](const std::vector<Array>&, const Array& g) { return 2.0 * g; });
    const Array r = random_f64(rng, {5});
    check_close(vals(aj::grad([&](const Array& a) { return aj::sum(twice(a)); })(r)), std::vector<double>(5, 2.0));
    check_close(vals(twice(r)), vals(aj::sin(r)));
  }
}

TEST_CASE("custom_vjp: several arguments and outputs, against plain autodiff") {
  std::mt19937_64 rng(12);
  auto plain = [](const Array& x, const Array& y) -> std::vector<Array> {
    return {x * aj::sin(y), aj::sum(x * y, 0), aj::exp(x) + y};
  };
  // bwd by hand: residuals x, y.
  auto f = aj::custom_vjp(
      plain, [&](const Array& x, const Array& y) { return std::pair{plain(x, y), std::vector<Array>{x, y}}; },
      [](const std::vector<Array>& r, const std::vector<Array>& g) -> std::vector<Array> {
        const Array& x = r[0];
        const Array& y = r[1];
        return {g[0] * aj::sin(y) + g[1] * y + g[2] * aj::exp(x), g[0] * x * aj::cos(y) + g[1] * x + g[2]};
      });
  const Array x = random_f64(rng, {3, 4}), y = random_f64(rng, {3, 4});
  const std::vector<Array> cts = {random_f64(rng, {3, 4}), random_f64(rng, {4}), random_f64(rng, {3, 4})};
  auto [outs, grads] = aj::vjp([&](const std::vector<Array>& v) { return f(v[0], v[1]); }, {x, y}, cts);
  auto [outs_p, grads_p] = aj::vjp([&](const std::vector<Array>& v) { return plain(v[0], v[1]); }, {x, y}, cts);
  for (int k = 0; k < 3; ++k) check_close(vals(outs[k]), vals(outs_p[k]));
  for (int k = 0; k < 2; ++k) check_close(vals(grads[k]), vals(grads_p[k]));

  SUBCASE("an output without a cotangent gets zeros in bwd") {
    std::vector<Array> seen;
    auto g = aj::custom_vjp(
        [](const Array& a) -> std::vector<Array> { return {a * 2.0, a * 3.0}; },
        [](const Array& a) { return std::pair{std::vector<Array>{a * 2.0, a * 3.0}, std::vector<Array>{}}; },
        [&](const std::vector<Array>&, const std::vector<Array>& ct) {
          seen = ct;
          return 2.0 * ct[0] + 3.0 * ct[1];
        });
    const Array r = random_f64(rng, {4});
    const Array d = aj::grad([&](const Array& a) { return aj::sum(g(a)[1]); })(r);
    check_close(vals(d), std::vector<double>(4, 3.0));
    REQUIRE(seen.size() == 2);
    check_close(vals(seen[0]), std::vector<double>(4, 0.0));
  }
  SUBCASE("an integer argument gets no cotangent; its output carries none") {
    auto h = aj::custom_vjp(
        [](const Array& a, const Array& k) -> std::vector<Array> { return {a * k.astype(DType::f64), k + 1}; },
        [](const Array& a, const Array& k) {
          return std::pair{std::vector<Array>{a * k.astype(DType::f64), k + 1}, std::vector<Array>{k}};
        },
        [](const std::vector<Array>& r, const std::vector<Array>& ct) -> std::vector<Array> {
          return {ct[0] * r[0].astype(DType::f64), Array()};
        });
    const Array a = random_f64(rng, {3});
    const Array k = aj::from_vector(std::vector<std::int64_t>{1, 2, 3});
    auto gr = aj::grad([&](const Array& u, const Array& kk) { return aj::sum(h(u, kk)[0]); })(a, k);
    check_close(vals(gr), {1, 2, 3});
    CHECK(vals(h(a, k)[1]) == std::vector<double>{2, 3, 4});
  }
}

TEST_CASE("custom_vjp: bad rules and forward mode are clear errors") {
  std::mt19937_64 rng(13);
  const Array x = random_f64(rng, {4});
  auto fwd = [](const Array& a) { return std::pair{aj::sin(a), std::vector<Array>{a}}; };
  auto wrong_shape = aj::custom_vjp([](const Array& a) { return aj::sin(a); }, fwd,
                                    [](const std::vector<Array>&, const Array& g) { return aj::sum(g); });
  std::string e = error_of([&] { (void)aj::grad([&](const Array& a) { return aj::sum(wrong_shape(a)); })(x); });
  CHECK(e.find("custom_vjp") != std::string::npos);
  CHECK(e.find("bwd returned") != std::string::npos);
  CHECK(e.find("test_custom_derivatives.cpp") != std::string::npos);  // where the function was made

  auto wrong_count = aj::custom_vjp(
      [](const Array& a) { return aj::sin(a); }, fwd,
      [](const std::vector<Array>&, const Array& g) { return std::vector<Array>{g, g}; });
  e = error_of([&] { (void)aj::grad([&](const Array& a) { return aj::sum(wrong_count(a)); })(x); });
  CHECK(e.find("2 cotangents for 1 argument") != std::string::npos);

  auto fwd_differs = aj::custom_vjp([](const Array& a) { return aj::sin(a); },
                                    [](const Array& a) { return std::pair{aj::sum(a), std::vector<Array>{}}; },
                                    [](const std::vector<Array>&, const Array& g) { return g; });
  e = error_of([&] { (void)fwd_differs(x); });
  CHECK(e.find("fwd's output") != std::string::npos);

  auto ok = aj::custom_vjp([](const Array& a) { return aj::sin(a); }, fwd,
                           [](const std::vector<Array>& r, const Array& g) { return g * aj::cos(r[0]); });
  e = error_of([&] { (void)aj::jvp([&](const Array& a) { return ok(a); }, x, x); });
  CHECK(e.find("forward mode (jvp) through a custom_vjp function") != std::string::npos);
  // The function still works after the errors.
  check_close(vals(aj::grad([&](const Array& a) { return aj::sum(ok(a)); })(x)), vals(aj::cos(x)));
}

TEST_CASE("custom_jvp: forward mode is the rule's, reverse mode its transpose") {
  std::mt19937_64 rng(14);
  auto plain = [](const Array& x, const Array& y) { return x * aj::sin(y); };
  auto f = aj::custom_jvp(plain, [](const std::vector<Array>& a, const std::vector<Array>& t) {
    return t[0] * aj::sin(a[1]) + t[1] * a[0] * aj::cos(a[1]);
  });
  const Array x = random_f64(rng, {2, 3}), y = random_f64(rng, {2, 3});
  const Array tx = random_f64(rng, {2, 3}), ty = random_f64(rng, {2, 3});
  auto call = [&](const std::vector<Array>& v) { return std::vector<Array>{f(v[0], v[1])}; };
  auto call_p = [&](const std::vector<Array>& v) { return std::vector<Array>{plain(v[0], v[1])}; };
  auto [o, t] = aj::jvp(call, {x, y}, {tx, ty});
  auto [op, tp] = aj::jvp(call_p, {x, y}, {tx, ty});
  check_close(vals(o[0]), vals(op[0]));
  check_close(vals(t[0]), vals(tp[0]));
  const Array g = random_f64(rng, {2, 3});
  auto [o2, cts] = aj::vjp(call, {x, y}, {g});
  auto [o2p, ctsp] = aj::vjp(call_p, {x, y}, {g});
  check_close(vals(cts[0]), vals(ctsp[0]));
  check_close(vals(cts[1]), vals(ctsp[1]));

  SUBCASE("the rule's choice shows in both modes (a clipped derivative)") {
    auto clipped = aj::custom_jvp([](const Array& a) { return aj::exp(a); },
                                  [](const std::vector<Array>& a, const std::vector<Array>& tt) {
                                    return tt[0] * aj::minimum(aj::exp(a[0]), 1.0);
                                  });
    const std::vector<double> xs = {-1, 0.5, 2};
    const Array a = aj::from_vector(xs);
    std::vector<double> want;
    for (double v : xs) want.push_back(std::min(std::exp(v), 1.0));
    check_close(vals(aj::grad([&](const Array& u) { return aj::sum(clipped(u)); })(a)), want);
    check_close(vals(aj::jvp(clipped, a, aj::ones({3}, DType::f64)).second), want);
  }
  SUBCASE("second derivatives go through the rule") {
    auto cube = aj::custom_jvp([](const Array& a) { return a * a * a; },
                               [](const std::vector<Array>& a, const std::vector<Array>& tt) {
                                 return 3.0 * a[0] * a[0] * tt[0];
                               });
    const Array r = random_f64(rng, {4});
    auto d1 = [&](const Array& u) { return aj::sum(aj::grad([&](const Array& w) { return aj::sum(cube(w)); })(u)); };
    check_close(vals(aj::grad(d1)(r)), vals(6.0 * r));
  }
  SUBCASE("a rule returning the wrong shape is named") {
    auto bad = aj::custom_jvp([](const Array& a) { return aj::exp(a); },
                              [](const std::vector<Array>&, const std::vector<Array>& tt) { return aj::sum(tt[0]); });
    const std::string e = error_of([&] { (void)aj::jvp(bad, x, tx); });
    CHECK(e.find("the jvp rule returned") != std::string::npos);
  }
}

TEST_CASE("custom_vjp: grad of grad differentiates bwd") {
  std::mt19937_64 rng(15);
  auto s = aj::custom_vjp([](const Array& a) { return aj::sin(a); },
                          [](const Array& a) { return std::pair{aj::sin(a), std::vector<Array>{a}}; },
                          [](const std::vector<Array>& r, const Array& g) { return g * aj::cos(r[0]); });
  const Array r = random_f64(rng, {5});
  auto d1 = [&](const Array& u) { return aj::sum(aj::grad([&](const Array& w) { return aj::sum(s(w)); })(u)); };
  check_close(vals(aj::grad(d1)(r)), vals(-aj::sin(r)));
}

TEST_CASE("custom rules are dropped once their outputs are evaluated") {
  std::mt19937_64 rng(16);
  auto f = aj::custom_vjp([](const Array& a) { return aj::exp(a); },
                          [](const Array& a) { return std::pair{aj::exp(a), std::vector<Array>{a * 2.0}}; },
                          [](const std::vector<Array>& r, const Array& g) { return g * r[0]; });
  const std::size_t before = annotations();
  Array y = f(random_f64(rng, {1000}));
  CHECK(annotations() == before + 1);
  y.eval();
  CHECK(annotations() == before);  // the residual's handle is gone with it
  // An evaluated output is a constant, as any evaluated value.
  const Array x = random_f64(rng, {3});
  Array z = f(x);
  z.eval();
  check_close(vals(aj::grad([&](const Array& a) { return aj::sum(a * z); })(x)), vals(z));
}

TEST_CASE("checkpoint: the same values and gradients as f") {
  std::mt19937_64 rng(17);
  auto block = [](const Array& h, const Array& w) { return aj::tanh(aj::matmul(h, w)) * 1.5 + h; };
  auto ck = aj::checkpoint(block);
  const Array h = random_f64(rng, {6, 5}), w = random_f64(rng, {5, 5});
  auto loss = [&](auto&& fn) {
    return [&, fn](const Array& a, const Array& b) { return aj::sum(fn(fn(a, b), b) * fn(a, b)); };
  };
  auto [v, g] = aj::value_and_grad(loss(ck), std::vector<int>{0, 1})(h, w);
  auto [vp, gp] = aj::value_and_grad(loss(block), std::vector<int>{0, 1})(h, w);
  check_close(vals(v), vals(vp));
  check_close(vals(g[0]), vals(gp[0]));
  check_close(vals(g[1]), vals(gp[1]));
  // Forward mode differentiates f as usual.
  const Array t = random_f64(rng, {6, 5});
  auto [o, tan] = aj::jvp([&](const Array& a) { return ck(a, w); }, h, t);
  auto [op, tanp] = aj::jvp([&](const Array& a) { return block(a, w); }, h, t);
  check_close(vals(tan), vals(tanp));
}

namespace {
// A 16-layer MLP's loss and its gradients, each group of `segment` layers
// checkpointed (0: none); returns the peak of live bytes above those held
// before, while the loss and gradients are evaluated.
std::uint64_t mlp_backward_peak(int segment, std::vector<double>* grad0) {
  constexpr int kLayers = 16, kBatch = 512, kWidth = 256;
  aj::random::seed(3);
  std::vector<Array> ws;
  for (int i = 0; i < kLayers; ++i) {
    ws.push_back(aj::random::normal({kWidth, kWidth}, 0, 1.0 / 16, DType::f32).eval());
  }
  const Array x = aj::random::normal({kBatch, kWidth}, 0, 1, DType::f32).eval();
  auto layer = [](const Array& h, const Array& w) { return aj::maximum(aj::matmul(h, w), 0.0f); };
  auto loss = [&](const std::vector<Array>& w) {
    Array h = x;
    for (int i = 0; i < kLayers;) {
      const int n = segment ? segment : kLayers;
      auto run = [&, i, n](const std::vector<Array>& a) {
        Array u = a[0];
        for (int k = 0; k < n; ++k) u = layer(u, a[1 + k]);
        return u;
      };
      std::vector<Array> args = {h};
      for (int k = 0; k < n; ++k) args.push_back(w[static_cast<std::size_t>(i + k)]);
      h = segment ? aj::checkpoint(run)(args) : run(args);
      i += n;
    }
    return aj::sum(h * h);
  };
  std::vector<int> all;
  for (int i = 0; i < kLayers; ++i) all.push_back(i);
  aj::Array value;
  std::vector<Array> grads;
  {
    auto [v, g] = aj::value_and_grad(loss, all)(ws);
    value = v;
    grads = g;
  }
  aj::reset_stats();
  const std::uint64_t base = aj::stats().live_bytes;
  std::vector<Array> roots = grads;
  roots.push_back(value);
  aj::eval(roots);
  const std::uint64_t peak = aj::stats().peak_live_bytes - base;
  if (grad0) *grad0 = grads[0].to_vector<double>();
  return peak;
}
}  // namespace

TEST_CASE("checkpoint: a 16-layer MLP's backward holds fewer activations") {
  // One activation is 512 x 256 f32 = 512 KiB; the weights' gradients (16 x
  // 256 KiB = 8 activations) are results either way. Without checkpointing
  // the backward keeps what each layer's derivative reads (its input and
  // its matmul's output: up to 32 activations, some of which the planner
  // overlaps). With segments of 4 layers it keeps the 3 segment boundaries
  // and, at a time, one segment's recomputed values, which die as the
  // backward through that segment ends: at most 8 more.
  constexpr std::uint64_t kAct = 512 * 256 * 4, kGrads = 8 * kAct;
  std::vector<double> g_plain, g_ck;
  const std::uint64_t plain = mlp_backward_peak(0, &g_plain);
  const std::uint64_t ck = mlp_backward_peak(4, &g_ck);
  MESSAGE("peak above the inputs, in activations beside the gradients: " << double(plain - kGrads) / kAct
          << " plain, " << double(ck - kGrads) / kAct << " checkpointed");
  REQUIRE(plain > kGrads);
  CHECK(plain - kGrads >= 20 * kAct);
  CHECK(ck <= kGrads + 8 * kAct);
  REQUIRE(g_plain.size() == g_ck.size());
  for (std::size_t i = 0; i < g_plain.size(); i += 97) {
    CHECK(std::fabs(g_ck[i] - g_plain[i]) <= 1e-4 * (1 + std::fabs(g_plain[i])));
  }
}

TEST_CASE("custom functions inside aj::compile: replays use the rules, allocate nothing") {
  std::mt19937_64 rng(18);
  auto softplus = aj::custom_vjp(
      [](const Array& x) { return aj::log1p(aj::exp(-aj::abs(x))) + aj::maximum(x, 0.0f); },
      [](const Array& x) {
        return std::pair{aj::log1p(aj::exp(-aj::abs(x))) + aj::maximum(x, 0.0f), std::vector<Array>{x}};
      },
      [](const std::vector<Array>& res, const Array& g) { return g * aj::sigmoid(res[0]); });
  auto block = aj::checkpoint([&](const Array& h, const Array& w) { return softplus(aj::matmul(h, w)); });
  auto step = aj::compile(
      [&](Array w, const Array& x) {
        Array g = aj::grad([&](const Array& u) { return aj::mean(block(block(x, u), u)); })(w);
        return w - 0.1f * g;
      },
      {.max_allocations = 0, .in_place = {0}});
  aj::random::seed(4);
  Array w = aj::random::normal({32, 32}, 0, 0.2, DType::f32).eval();
  const Array x = aj::random::normal({16, 32}, 0, 1, DType::f32).eval();
  Array w_eager = aj::from_vector(w.to_vector<float>(), Shape{32, 32});
  for (int it = 0; it < 4; ++it) {
    w = step(std::move(w), x);
    Array ge = aj::grad([&](const Array& u) {
      auto plain_sp = [](const Array& v) { return aj::log1p(aj::exp(-aj::abs(v))) + aj::maximum(v, 0.0f); };
      return aj::mean(plain_sp(aj::matmul(plain_sp(aj::matmul(x, u)), u)));
    })(w_eager);
    w_eager = (w_eager - 0.1f * ge).eval();
    const auto a = w.to_vector<double>(), b = w_eager.to_vector<double>();
    for (std::size_t i = 0; i < a.size(); i += 31) CHECK(std::fabs(a[i] - b[i]) <= 1e-5);
  }
  CHECK(step.counts().replays >= 2);
  CHECK(annotations() == 0);
}

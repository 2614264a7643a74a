// Derivatives through the C API (C API 1.5): aj_vjp and aj_jvp over a C
// callback against aj::vjp / aj::jvp of the same function, aj_function's own
// rules (custom_vjp, custom_jvp, checkpoint) used inside them, a callback's
// aj_set_error message reaching the caller, bad descriptions, and a gradient
// inside a compiled C training step.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using aj::Array;

Array random_f64(std::mt19937_64& rng, aj::Shape s) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(static_cast<std::size_t>(s.numel()));
  for (double& x : v) x = u(rng);
  return aj::from_vector(v, s);
}

void check_close(const Array& got, const Array& want, double tol = 1e-12) {
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
    CHECK(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i])));
  }
}

// Takes over C handles: the arrays, each handle released.
std::vector<Array> take(aj_array* hs, int n) {
  std::vector<Array> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(aj::from_c(hs[i]));
    aj_array_release(hs[i]);
  }
  return out;
}

// f(x, y) = {x * sin(y), sum(x * y)} with the C ops.
aj_status f_c(void*, const aj_array* in, aj_array* out) {
  aj_array s{0}, p{0};
  aj_status st = aj_sin(in[1], &s);
  if (st == AJ_OK) st = aj_multiply(in[0], s, &out[0]);
  if (st == AJ_OK) st = aj_multiply(in[0], in[1], &p);
  if (st == AJ_OK) st = aj_sum(p, nullptr, 0, 0, &out[1]);
  return st;  // s and p are released by the call
}
std::vector<Array> f_cpp(const std::vector<Array>& v) { return {v[0] * aj::sin(v[1]), aj::sum(v[0] * v[1])}; }

}  // namespace

TEST_CASE("c api: aj_vjp and aj_jvp give what aj::vjp and aj::jvp give") {
  std::mt19937_64 rng(21);
  const Array x = random_f64(rng, {3, 2}), y = random_f64(rng, {3, 2});
  const Array g0 = random_f64(rng, {3, 2}), g1 = random_f64(rng, {});
  const std::size_t live = aj_live_handles();
  {
    aj_array p[2] = {aj::to_c(x), aj::to_c(y)};
    aj_array ct[2] = {aj::to_c(g0), aj::to_c(g1)};
    aj_array outs[2], grads[2];
    REQUIRE(aj_vjp(f_c, nullptr, 2, 2, p, ct, outs, grads) == AJ_OK);
    const std::vector<Array> o = take(outs, 2), g = take(grads, 2);
    auto [o_want, g_want] = aj::vjp(f_cpp, {x, y}, {g0, g1});
    for (int k = 0; k < 2; ++k) check_close(o[k], o_want[k]), check_close(g[k], g_want[k]);
    // A null cotangent is zero; outputs may be left out.
    aj_array_release(ct[1]);
    ct[1] = aj_array{0};
    REQUIRE(aj_vjp(f_c, nullptr, 2, 2, p, ct, nullptr, grads) == AJ_OK);
    const std::vector<Array> g2 = take(grads, 2);
    auto [o3, g3] = aj::vjp(f_cpp, {x, y}, {g0, Array()});
    check_close(g2[0], g3[0]);

    const Array tx = random_f64(rng, {3, 2});
    aj_array t[2] = {aj::to_c(tx), aj_array{0}};
    aj_array tans[2];
    REQUIRE(aj_jvp(f_c, nullptr, 2, 2, p, t, outs, tans) == AJ_OK);
    const std::vector<Array> o4 = take(outs, 2), t4 = take(tans, 2);
    auto [o5, t5] = aj::jvp(f_cpp, {x, y}, {tx, Array()});
    for (int k = 0; k < 2; ++k) check_close(t4[k], t5[k]);
    for (aj_array h : {p[0], p[1], ct[0], t[0]}) aj_array_release(h);
  }
  CHECK(aj_live_handles() == live);

  SUBCASE("bad calls") {
    aj_array p[2] = {aj::to_c(x), aj::to_c(y)};
    aj_array grads[2] = {{7}, {7}};
    CHECK(aj_vjp(nullptr, nullptr, 2, 2, p, p, nullptr, grads) == AJ_ERROR_USER);
    CHECK(grads[0]._id == 0);
    CHECK(aj_vjp(f_c, nullptr, 2, 0, p, p, nullptr, grads) == AJ_ERROR_USER);
    CHECK(std::string(aj_last_error()).find("n_outputs") != std::string::npos);
    CHECK(aj_vjp(f_c, nullptr, 2, 2, p, nullptr, nullptr, grads) == AJ_ERROR_USER);
    aj_array_release(p[0]);
    aj_array_release(p[1]);
  }
}

namespace {

struct Ctx {
  int released = 0;
  int bwd_calls = 0;
  bool fail = false;
};
void count_release(void* c) { ++static_cast<Ctx*>(c)->released; }

// exp(x), with the reverse rule 2 * g (not exp's derivative: the rule shows).
aj_status exp_trace(void*, const aj_array* in, aj_array* out) { return aj_exp(in[0], &out[0]); }
aj_status exp_fwd(void*, const aj_array* in, aj_array* out) {
  aj_status s = aj_exp(in[0], &out[0]);
  if (s == AJ_OK) s = aj_array_retain(in[0], &out[1]);  // residual: x
  return s;
}
aj_status twice_bwd(void* c, const aj_array* res, const aj_array* ct, aj_array* out) {
  Ctx* ctx = static_cast<Ctx*>(c);
  ++ctx->bwd_calls;
  if (ctx->fail) {
    aj_set_error("the rule refuses");
    return AJ_ERROR_USER;
  }
  (void)res;
  aj_array two{0};
  aj_status s = aj_scalar_f64(2.0, &two);
  if (s == AJ_OK) s = aj_multiply(ct[0], two, &out[0]);
  return s;
}
// A tangent rule: t * min(exp(x), 1).
aj_status clipped_jvp(void*, const aj_array* a, const aj_array* t, aj_array* out) {
  aj_array e{0}, one{0}, m{0};
  aj_status s = aj_exp(a[0], &e);
  if (s == AJ_OK) s = aj_scalar_f64(1.0, &one);
  if (s == AJ_OK) s = aj_minimum(e, one, &m);
  if (s == AJ_OK) s = aj_multiply(t[0], m, &out[0]);
  return s;
}

// sum(g(x)) for the aj_function g in context.
aj_status loss_of(void* c, const aj_array* in, aj_array* out) {
  aj_function g = *static_cast<aj_function*>(c);
  aj_array y{0};
  aj_status s = aj_function_call(g, in, &y);
  if (s == AJ_OK) s = aj_sum(y, nullptr, 0, 0, &out[0]);
  return s;
}

aj_function_desc exp_desc(Ctx* ctx) {
  aj_function_desc d{};
  d.struct_size = sizeof d;
  d.trace = exp_trace;
  d.context = ctx;
  d.n_inputs = 1;
  d.n_outputs = 1;
  d.release = count_release;
  d.name = "exp";
  return d;
}

}  // namespace

TEST_CASE("c api: an aj_function's own derivative rules, used by aj_vjp and aj_jvp") {
  std::mt19937_64 rng(22);
  const Array x = random_f64(rng, {5});
  Ctx ctx;
  SUBCASE("custom_vjp: fwd and bwd") {
    aj_function_desc d = exp_desc(&ctx);
    d.fwd = exp_fwd;
    d.bwd = twice_bwd;
    d.n_residuals = 1;
    aj_function g{0};
    REQUIRE(aj_function_new(&d, &g) == AJ_OK);
    // The seed of sum's cotangent: aj_vjp needs one for the scalar output.
    aj_array p = aj::to_c(x), one = aj::to_c(aj::ones({}, aj::DType::f64));
    aj_array grads[1], outs[1];
    REQUIRE(aj_vjp(loss_of, &g, 1, 1, &p, &one, outs, grads) == AJ_OK);
    const Array gr = take(grads, 1)[0];
    check_close(gr, aj::full({5}, 2.0, aj::DType::f64));
    check_close(take(outs, 1)[0], aj::sum(aj::exp(x)));
    CHECK(ctx.bwd_calls == 1);
    // Forward mode through it is refused, as in JAX.
    aj_array tans[1];
    CHECK(aj_jvp(loss_of, &g, 1, 1, &p, &p, nullptr, tans) == AJ_ERROR_USER);
    CHECK(std::string(aj_last_error()).find("forward mode (jvp) through a custom_vjp") != std::string::npos);
    // A rule that fails says why, through aj_set_error.
    ctx.fail = true;
    CHECK(aj_vjp(loss_of, &g, 1, 1, &p, &one, nullptr, grads) == AJ_ERROR_USER);
    const std::string e = aj_last_error();
    CHECK(e.find("aj_vjp: ") == 0);
    CHECK(e.find("function 'exp': bwd failed: the rule refuses") != std::string::npos);
    CHECK(grads[0]._id == 0);
    aj_array_release(p);
    aj_array_release(one);
    // Called outside a trace it is an ordinary compiled call: trace's value.
    aj_array xs = aj::to_c(x), y{0};
    REQUIRE(aj_function_call(g, &xs, &y) == AJ_OK);
    check_close(take(&y, 1)[0], aj::exp(x));
    aj_array_release(xs);
    CHECK(ctx.released == 0);
    aj_function_release(g);
    CHECK(ctx.released == 1);  // nothing traced holds it any more
  }
  SUBCASE("custom_jvp: forward mode is the rule's, reverse mode its transpose") {
    aj_function_desc d = exp_desc(&ctx);
    d.jvp = clipped_jvp;
    aj_function g{0};
    REQUIRE(aj_function_new(&d, &g) == AJ_OK);
    const Array want = aj::minimum(aj::exp(x), 1.0);
    aj_array p = aj::to_c(x), one = aj::to_c(aj::ones({}, aj::DType::f64)), grads[1];
    REQUIRE(aj_vjp(loss_of, &g, 1, 1, &p, &one, nullptr, grads) == AJ_OK);
    check_close(take(grads, 1)[0], want);
    aj_array t = aj::to_c(aj::ones({5}, aj::DType::f64)), tans[1];
    REQUIRE(aj_jvp(loss_of, &g, 1, 1, &p, &t, nullptr, tans) == AJ_OK);
    check_close(take(tans, 1)[0], aj::sum(want));
    for (aj_array h : {p, one, t}) aj_array_release(h);
    aj_function_release(g);
    CHECK(ctx.released == 1);
  }
  SUBCASE("checkpoint: the gradient of trace, recomputed") {
    aj_function_desc d = exp_desc(&ctx);
    d.checkpoint = 1;
    aj_function g{0};
    REQUIRE(aj_function_new(&d, &g) == AJ_OK);
    aj_array p = aj::to_c(x), one = aj::to_c(aj::ones({}, aj::DType::f64)), grads[1];
    REQUIRE(aj_vjp(loss_of, &g, 1, 1, &p, &one, nullptr, grads) == AJ_OK);
    check_close(take(grads, 1)[0], aj::exp(x));
    aj_array_release(p);
    aj_array_release(one);
    aj_function_release(g);
    CHECK(ctx.released == 1);
  }
  SUBCASE("a description with two kinds, or half a custom_vjp, is refused") {
    aj_function_desc d = exp_desc(&ctx);
    d.fwd = exp_fwd;
    aj_function g{7};
    CHECK(aj_function_new(&d, &g) == AJ_ERROR_USER);
    CHECK(std::string(aj_last_error()).find("custom_vjp takes both") != std::string::npos);
    CHECK(g._id == 0);
    d.bwd = twice_bwd;
    d.checkpoint = 1;
    CHECK(aj_function_new(&d, &g) == AJ_ERROR_USER);
    CHECK(std::string(aj_last_error()).find("at most one kind") != std::string::npos);
    CHECK(ctx.released == 0);  // a failed new calls no release
  }
}

namespace {
// A training step in C: w - 0.5 * d/dw sum(g(w * x)), g = exp with the rule 2g.
struct StepCtx {
  aj_function g;
};
aj_status inner_loss(void* c, const aj_array* in, aj_array* out) {
  aj_array wx{0}, y{0};
  aj_status s = aj_multiply(in[0], in[1], &wx);
  if (s == AJ_OK) s = aj_function_call(static_cast<StepCtx*>(c)->g, &wx, &y);
  if (s == AJ_OK) s = aj_sum(y, nullptr, 0, 0, &out[0]);
  return s;
}
aj_status step_trace(void* c, const aj_array* in, aj_array* out) {
  aj_array one{0}, half{0}, grads[2] = {{0}, {0}}, scaled{0};
  aj_status s = aj_scalar_f64(1.0, &one);
  if (s == AJ_OK) s = aj_vjp(inner_loss, c, 2, 1, in, &one, nullptr, grads);
  if (s == AJ_OK) s = aj_scalar_f64(0.5, &half);
  if (s == AJ_OK) s = aj_multiply(grads[0], half, &scaled);
  if (s == AJ_OK) s = aj_subtract(in[0], scaled, &out[0]);
  return s;
}
}  // namespace

TEST_CASE("c api: a gradient through a custom rule inside a compiled C step replays") {
  std::mt19937_64 rng(23);
  Ctx ctx;
  aj_function_desc gd = exp_desc(&ctx);
  gd.fwd = exp_fwd;
  gd.bwd = twice_bwd;
  gd.n_residuals = 1;
  StepCtx sc{};
  REQUIRE(aj_function_new(&gd, &sc.g) == AJ_OK);
  aj_function_desc sd{};
  sd.struct_size = sizeof sd;
  sd.trace = step_trace;
  sd.context = &sc;
  sd.n_inputs = 2;
  sd.n_outputs = 1;
  sd.name = "step";
  aj_function step{0};
  REQUIRE(aj_function_new(&sd, &step) == AJ_OK);
  const Array x = random_f64(rng, {4});
  Array w = random_f64(rng, {4});
  for (int it = 0; it < 3; ++it) {
    aj_array in[2] = {aj::to_c(w), aj::to_c(x)}, out[1];
    REQUIRE(aj_function_call(step, in, out) == AJ_OK);
    const Array w_new = take(out, 1)[0];
    // d/dw sum(g(w x)) with g's rule 2 * ct: 2 * x.
    check_close(w_new, w - 0.5 * (2.0 * x));
    w = w_new;
    aj_array_release(in[0]);
    aj_array_release(in[1]);
  }
  CHECK(ctx.bwd_calls == 1);  // traced once, replayed twice
  aj_function_release(step);
  aj_function_release(sc.g);
  CHECK(ctx.released == 1);
}

// More random distributions (arrayjit/random.hpp), composed of uniform,
// randint, permutation and elementwise ops, computed in f64 and converted
// once to the dtype asked for.
#include "arrayjit/random.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "arrayjit/indexing.hpp"
#include "arrayjit/scan_sort.hpp"
#include "arrayjit/search.hpp"
#include "core/api/trace.hpp"

namespace aj::random {

namespace {

using trace::describe;

Operand o(const Array& a, const Loc& loc) { return Operand(a, loc); }

void float_dtype(DType t, const char* op, const Loc& loc) {
  if (!is_float(t)) user_error(op, std::string("makes floating point arrays, not ") + dtype_name(t) + " (use astype after)", loc);
}
void finite(double v, const char* what, const char* op, const Loc& loc) {
  if (!std::isfinite(v)) user_error(op, std::string(what) + " must be finite, got " + describe(Scalar(v)), loc);
}

// Uniform in the open interval (0, 1): uniform's [0, 1) (multiples of
// 2^-53) moved half a step up.
Array open_uniform(const Shape& shape, const Loc& loc) {
  return o(uniform(shape, 0.0, 1.0, DType::f64, loc), loc) + Operand(0x1p-54, loc);
}

// Standard Gumbel in f64: -log(-log(u)).
Array gumbel64(const Shape& shape, const Loc& loc) {
  return -o(log(o(-o(log(o(open_uniform(shape, loc), loc)), loc), loc)), loc);
}

// Normalized log-probabilities of p along its last axis (checked as floats).
Array log_probabilities(const Array& p, const char* op, const Loc& loc) {
  if (!is_float(p.dtype()) && !is_integer(p.dtype())) user_error(op, "needs numeric probabilities, got " + describe(p), loc);
  const Array q = p.astype(DType::f64, loc);
  return o(log(o(q, loc)), loc) - o(log(o(sum(q, -1, true, loc), loc)), loc);
}

}  // namespace

Array exponential(Shape shape, double scale, DType dtype, Loc loc) {
  const char* op = "random::exponential";
  float_dtype(dtype, op, loc);
  finite(scale, "scale", op, loc);
  if (scale < 0) user_error(op, "needs scale >= 0, got " + describe(Scalar(scale)), loc);
  const Array u = uniform(std::move(shape), 0.0, 1.0, DType::f64, loc);
  return (-o(log1p(-o(u, loc)), loc) * Operand(scale, loc)).astype(dtype, loc);
}

Array gumbel(Shape shape, double mu, double scale, DType dtype, Loc loc) {
  const char* op = "random::gumbel";
  float_dtype(dtype, op, loc);
  finite(mu, "loc", op, loc);
  finite(scale, "scale", op, loc);
  if (scale < 0) user_error(op, "needs scale >= 0, got " + describe(Scalar(scale)), loc);
  return (Operand(mu, loc) + o(o(gumbel64(shape, loc), loc) * Operand(scale, loc), loc)).astype(dtype, loc);
}

Array truncated_normal(Shape shape, double lower, double upper, DType dtype, Loc loc) {
  const char* op = "random::truncated_normal";
  float_dtype(dtype, op, loc);
  if (std::isnan(lower) || std::isnan(upper) || !(lower < upper)) {
    user_error(op, "needs lower < upper, got [" + describe(Scalar(lower)) + ", " + describe(Scalar(upper)) + "]", loc);
  }
  // Phi(x) = erfc(-x / sqrt 2) / 2 keeps its digits for x <= 0; for bounds
  // above 0 draw -X from [-upper, -lower] instead.
  const bool flip = lower > 0;
  const double a = flip ? -upper : lower, b = flip ? -lower : upper;
  const double pa = 0.5 * std::erfc(-a / std::sqrt(2.0)), pb = 0.5 * std::erfc(-b / std::sqrt(2.0));
  const Array u = open_uniform(shape, loc);
  Array x = ndtri(o(Operand(pa, loc) + o(o(u, loc) * Operand(pb - pa, loc), loc), loc));
  if (flip) x = -o(x, loc);
  // Rounding may step just outside: clamp into the bounds (as JAX).
  return clip(o(x, loc), Operand(lower, loc), Operand(upper, loc)).astype(dtype, loc);
}

Array categorical(const Array& logits_in, int axis, Loc loc) {
  trace::Scope scope;
  const char* op = "random::categorical";
  const Array& logits = trace::local(logits_in, op, loc);
  if (!is_float(logits.dtype())) user_error(op, "needs float logits, got " + describe(logits), loc);
  if (logits.ndim() == 0) user_error(op, "needs logits with an axis of categories, got " + describe(logits), loc);
  const int ax = trace::normalize_axis(axis, logits.ndim(), op, logits.shape(), logits.dtype(), loc);
  if (logits.shape()[ax] == 0) user_error(op, "has no category to draw: " + describe(logits), loc);
  const Array noisy = o(logits.astype(DType::f64, loc), loc) + o(gumbel64(logits.shape(), loc), loc);
  return argmax(noisy, ax, false, loc);
}

Array multinomial(std::int64_t n, const Array& pvals_in, Loc loc) {
  trace::Scope scope;
  const char* op = "random::multinomial";
  const Array& pvals = trace::local(pvals_in, op, loc);
  if (n < 0) user_error(op, "needs n >= 0 draws, got " + std::to_string(n), loc);
  if (pvals.ndim() == 0 || pvals.shape()[pvals.ndim() - 1] == 0) user_error(op, "needs categories along the last axis, got " + describe(pvals), loc);
  const std::int64_t k = pvals.shape()[pvals.ndim() - 1];
  const Array lp = log_probabilities(pvals, op, loc);
  // n draws per batch index: lp broadcast to [..., n, k], one categorical
  // along k each; their counts by a one-hot sum over the draws.
  std::vector<std::int64_t> dims = lp.shape().dims();
  dims.insert(dims.end() - 1, n);
  std::vector<std::int64_t> with_one = lp.shape().dims();
  with_one.insert(with_one.end() - 1, 1);
  const Array draws = categorical(broadcast_to(reshape(lp, Shape(with_one), loc), Shape(dims), loc), -1, loc);
  return sum(one_hot(draws, k, DType::i64, loc), -2, false, loc);
}

Array choice(std::int64_t n, std::int64_t count, bool replace, const std::optional<Array>& p_in, Loc loc) {
  trace::Scope scope;
  const char* op = "random::choice";
  if (n < 0 || count < 0) user_error(op, "needs n >= 0 and count >= 0, got " + std::to_string(n) + " and " + std::to_string(count), loc);
  if (!replace && count > n) {
    user_error(op, "cannot take " + std::to_string(count) + " distinct values of " + std::to_string(n) + " without replacement", loc);
  }
  if (count > 0 && n == 0) user_error(op, "has nothing to draw from (n = 0)", loc);
  std::optional<Array> p;
  if (p_in) {
    p = trace::local(*p_in, op, loc);
    if (p->ndim() != 1 || p->shape()[0] != n) {
      user_error(op, "needs p of shape [" + std::to_string(n) + "], got " + describe(*p), loc);
    }
  }
  if (count == 0) return zeros(Shape{0}, DType::i64, loc);
  if (!p) {
    if (replace) return randint(Shape{count}, 0, n, DType::i64, loc);
    return slice(permutation(n, loc), 0, 0, count, 1, loc);
  }
  const Array lp = log_probabilities(*p, op, loc);
  if (replace) return categorical(broadcast_to(reshape(lp, Shape{1, n}, loc), Shape{count, n}, loc), -1, loc);
  // Without replacement: the count largest of log p + Gumbel noise are
  // NumPy's successive draws, each from what is left, renormalized.
  return topk(o(lp, loc) + o(gumbel64(Shape{n}, loc), loc), count, 0, loc).indices;
}

Array choice(const Array& a_in, std::int64_t count, bool replace, const std::optional<Array>& p, Loc loc) {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "random::choice", loc);
  if (a.ndim() == 0) user_error("random::choice", "needs an array with an axis to draw from, got " + describe(a), loc);
  return take(a, choice(a.shape()[0], count, replace, p, loc), 0, loc);
}

Array shuffle(const Array& a_in, int axis, Loc loc) {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "random::shuffle", loc);
  if (a.ndim() == 0) user_error("random::shuffle", "needs an array with an axis to shuffle, got " + describe(a), loc);
  const int ax = trace::normalize_axis(axis, a.ndim(), "random::shuffle", a.shape(), a.dtype(), loc);
  return take(a, permutation(a.shape()[ax], loc), ax, loc);
}

}  // namespace aj::random

namespace aj::random {

namespace {

// Rounds of a rejection sampler: each draws for every element, the first
// accepted value is kept. With acceptance >= 0.9 per round, an element
// still unaccepted after kRounds has probability below 1e-12; it takes the
// sampler's fallback (documented), so the graph has a fixed size.
constexpr int kRounds = 12;

// Marsaglia and Tsang's gamma(a) for a >= 1, in f64.
Array gamma_at_least_one(const Shape& shape, double a, const Loc& loc) {
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  Array result = full(shape, d, DType::f64, loc);  // the fallback: about the mean
  Array done = zeros(shape, DType::bool_, loc);
  for (int r = 0; r < kRounds; ++r) {
    const Array x = normal(shape, 0.0, 1.0, DType::f64, loc);
    const Array u = open_uniform(shape, loc);
    const Array t = Operand(1.0, loc) + o(o(x, loc) * Operand(c, loc), loc);
    const Array v = o(o(t, loc) * o(t, loc), loc) * o(t, loc);
    // log(v) is NaN where v <= 0: that comparison is false (rejected).
    const Array bound = o(o(o(o(x, loc) * o(x, loc), loc) * Operand(0.5, loc), loc) + Operand(d, loc), loc) +
                        o(o(Operand(d, loc) * o(log(o(v, loc)), loc), loc) - o(Operand(d, loc) * o(v, loc), loc), loc);
    const Array ok = o(o(v, loc) > Operand(0.0, loc), loc) && o(o(log(o(u, loc)), loc) < o(bound, loc), loc);
    const Array take = o(ok, loc) && o(logical_not(o(done, loc)), loc);
    result = where(o(take, loc), o(Operand(d, loc) * o(v, loc), loc), o(result, loc));
    done = o(done, loc) || o(ok, loc);
  }
  return result;
}

// gamma(alpha) in f64 for alpha > 0: below 1, gamma(alpha + 1) U^(1/alpha).
Array gamma64(const Shape& shape, double alpha, const Loc& loc) {
  if (alpha >= 1.0) return gamma_at_least_one(shape, alpha, loc);
  const Array g = gamma_at_least_one(shape, alpha + 1.0, loc);
  const Array u = open_uniform(shape, loc);
  return exp(o(o(log(o(g, loc)), loc) + o(o(log(o(u, loc)), loc) * Operand(1.0 / alpha, loc), loc), loc));
}

void positive(double v, const char* what, const char* op, const Loc& loc) {
  if (!(v > 0.0) || !std::isfinite(v)) user_error(op, std::string(what) + " must be finite and > 0, got " + describe(Scalar(v)), loc);
}

}  // namespace

Array gamma(Shape shape, double alpha, double scale, DType dtype, Loc loc) {
  const char* op = "random::gamma";
  float_dtype(dtype, op, loc);
  positive(alpha, "alpha", op, loc);
  positive(scale, "scale", op, loc);
  return (o(gamma64(shape, alpha, loc), loc) * Operand(scale, loc)).astype(dtype, loc);
}

Array beta(Shape shape, double a, double b, DType dtype, Loc loc) {
  const char* op = "random::beta";
  float_dtype(dtype, op, loc);
  positive(a, "a", op, loc);
  positive(b, "b", op, loc);
  const Array x = gamma64(shape, a, loc), y = gamma64(shape, b, loc);
  return (o(x, loc) / o(o(x, loc) + o(y, loc), loc)).astype(dtype, loc);
}

Array poisson(Shape shape, double lam, Loc loc) {
  trace::Scope scope;
  const char* op = "random::poisson";
  if (!(lam >= 0.0) || !(lam <= 1e15)) user_error(op, "needs 0 <= lam <= 1e15, got " + describe(Scalar(lam)), loc);
  if (lam == 0.0) return zeros(shape, DType::i64, loc);
  if (lam <= 64.0) {
    // Inversion: k is how many of the CDF's values F(0), F(1), ... lie below
    // one uniform u; F to 10 standard deviations past the mean (the rest of
    // its mass is below 1e-20, under one u's resolution).
    std::vector<double> cdf;
    double p = std::exp(-lam), s = 0.0;
    const int last = static_cast<int>(lam + 10.0 * std::sqrt(lam) + 20.0);
    for (int j = 0; j <= last; ++j) {
      s += p;
      cdf.push_back(std::min(s, 1.0));
      p *= lam / (j + 1);
    }
    const Array u = open_uniform(shape, loc);
    return searchsorted(from_vector(cdf, Shape{static_cast<std::int64_t>(cdf.size())}, loc), u, Side::left, loc);
  }
  // Hörmann's transformed rejection with squeeze (PTRS, as NumPy above 10).
  const double slam = std::sqrt(lam), loglam = std::log(lam), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  Array result = full(shape, std::floor(lam), DType::f64, loc);  // the fallback: the mode
  Array done = zeros(shape, DType::bool_, loc);
  for (int r = 0; r < kRounds; ++r) {
    const Array uu = o(open_uniform(shape, loc), loc) - Operand(0.5, loc);
    const Array v = open_uniform(shape, loc);
    const Array us = Operand(0.5, loc) - o(abs(o(uu, loc)), loc);
    const Array k = floor(o(o(o(o(Operand(2.0 * a, loc) / o(us, loc), loc) + Operand(b, loc), loc) * o(uu, loc), loc) +
                            Operand(lam + 0.43, loc), loc));
    const Array quick = o(o(us, loc) >= Operand(0.07, loc), loc) && o(o(v, loc) <= Operand(vr, loc), loc);
    const Array out = o(o(k, loc) < Operand(0.0, loc), loc) ||
                      o(o(o(us, loc) < Operand(0.013, loc), loc) && o(o(v, loc) > o(us, loc), loc), loc);
    const Array lhs = o(o(log(o(v, loc)), loc) + Operand(std::log(invalpha), loc), loc) -
                      o(log(o(o(Operand(a, loc) / o(o(us, loc) * o(us, loc), loc), loc) + Operand(b, loc), loc)), loc);
    const Array rhs = o(Operand(-lam, loc) + o(o(k, loc) * Operand(loglam, loc), loc), loc) -
                      o(lgamma(o(o(k, loc) + Operand(1.0, loc), loc)), loc);
    const Array ok = o(quick, loc) || o(o(logical_not(o(out, loc)), loc) && o(o(lhs, loc) <= o(rhs, loc), loc), loc);
    result = where(o(o(ok, loc) && o(logical_not(o(done, loc)), loc), loc), o(k, loc), o(result, loc));
    done = o(done, loc) || o(ok, loc);
  }
  return result.astype(DType::i64, loc);
}

}  // namespace aj::random

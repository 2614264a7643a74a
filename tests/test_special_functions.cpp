// The special functions (lgamma, digamma, trigamma, erfinv, ndtri, log_ndtr,
// i0, i1, logaddexp, logaddexp2) against references computed in 113-bit
// quad precision (GCC's __float128 and libquadmath), for f64 and f32, on the
// host JIT and on the interpreter: the worst error of each is printed and
// bounded, and docs/semantics.md lists it. The references are written here,
// independently of base/special_math.hpp (bisection and Newton steps on
// quad erfc, power series summed to quad precision, the asymptotic series
// with more terms and from further out).
//
// Error is in units in the last place of the reference in the result's
// dtype; for functions with zeros in their range (lgamma at 1 and 2 and on
// the negative axis, digamma at 1.4616...), that unit is at least the ulp
// of 1 (the absolute error there: no implementation with a fixed number of
// f64 operations is relatively accurate at an irrational zero).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(AJ_HAVE_QUADMATH)
#include <quadmath.h>

#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using Q = __float128;

// ---- references ----------------------------------------------------------------------------

const Q kPiQ = M_PIq;
const Q kSqrtPiQ = sqrtq(M_PIq);

// Bernoulli numbers B2 .. B20.
const double kB2k[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510,
                       43867.0 / 798, -174611.0 / 330};

Q ref_digamma(Q x) {
  Q result = 0;
  if (x <= 0) {
    if (x == floorq(x)) return x == 0 ? -HUGE_VALQ : nanq("");
    const Q r = x - rintq(x);
    result = -kPiQ / tanq(kPiQ * r);
    x = 1 - x;
  }
  while (x < 30) result -= 1 / x, x += 1;
  Q s = 0, xp = x * x;
  for (int k = 1; k <= 10; ++k, xp *= x * x) s += Q(kB2k[k - 1]) / (2 * k * xp);
  return result + logq(x) - 1 / (2 * x) - s;
}

Q ref_trigamma(Q x) {
  Q reflected = 0, sign = 1;
  if (x <= 0) {
    if (x == floorq(x)) return isinfq(x) ? nanq("") : HUGE_VALQ;
    const Q s = sinq(kPiQ * (x - rintq(x)));
    reflected = kPiQ * kPiQ / (s * s);
    sign = -1;
    x = 1 - x;
  }
  Q sum = 0;
  while (x < 30) sum += 1 / (x * x), x += 1;
  Q t = 1 / x + 1 / (2 * x * x), xp = x * x * x;
  for (int k = 1; k <= 10; ++k, xp *= x * x) t += Q(kB2k[k - 1]) / xp;
  return reflected + sign * (sum + t);
}

// x with erfc(x) = q (0 < q <= 1/2): bisection to 1e-30, then two Newton steps.
Q ref_erfc_inverse_tail(Q q) {
  Q lo = 0.4, hi = 30;
  for (int i = 0; i < 110; ++i) {
    const Q mid = (lo + hi) / 2;
    (erfcq(mid) > q ? lo : hi) = mid;
  }
  Q x = (lo + hi) / 2;
  for (int i = 0; i < 2; ++i) x += (erfcq(x) - q) / (2 / kSqrtPiQ * expq(-x * x));
  return x;
}
// erfinv for |y| <= 1/2: Newton from the series' first terms.
Q ref_erfinv_central(Q y) {
  Q x = kSqrtPiQ / 2 * (y + kPiQ / 12 * y * y * y);
  for (int i = 0; i < 8; ++i) x -= (erfq(x) - y) / (2 / kSqrtPiQ * expq(-x * x));
  return x;
}
Q ref_erfinv(Q y) {
  if (isnanq(y)) return y;
  const Q a = fabsq(y);
  if (a > 1) return nanq("");
  if (a == 1) return copysignq(HUGE_VALQ, y);
  if (a <= Q(0.5)) return ref_erfinv_central(y);
  return copysignq(ref_erfc_inverse_tail(1 - a), y);
}
Q ref_ndtri(Q p) {
  if (p < 0 || p > 1) return nanq("");
  if (p == 0) return -HUGE_VALQ;
  if (p == 1) return HUGE_VALQ;
  const Q q = 2 * p;
  if (q < Q(0.5)) return -sqrtq(2) * ref_erfc_inverse_tail(q);
  if (q > Q(1.5)) return sqrtq(2) * ref_erfc_inverse_tail(2 - q);
  return sqrtq(2) * ref_erfinv_central(q - 1);
}
Q ref_log_ndtr(Q z) {
  if (z > 0) return log1pq(-erfcq(z / sqrtq(2)) / 2);
  const Q x = -z / sqrtq(2);
  if (x < 100) return logq(erfcq(x) / 2);
  // Where quad's erfc underflows: its asymptotic series, 30 terms (the
  // 31st is below 1e-70 at x = 100).
  Q s = 1, t = 1;
  for (int k = 1; k <= 30; ++k) s += (t *= -(2 * k - 1) / (2 * x * x));
  return -x * x - logq(x * kSqrtPiQ) + logq(s) - logq(2);
}
// I_nu(x) by its power series, summed until the terms stop mattering.
Q ref_bessel_i(int nu, Q x) {
  const Q a = fabsq(x), q = a * a / 4;
  Q t = nu == 0 ? Q(1) : a / 2, s = t;
  for (int k = 1; k < 5000 && t > s * Q(1e-36); ++k) {
    t *= q / (Q(k) * Q(k + nu));
    s += t;
  }
  return nu == 1 ? copysignq(s, x) : s;
}
Q ref_logaddexp(Q a, Q b, bool base2) {
  if (isnanq(a) || isnanq(b)) return nanq("");
  if (a == b) return a + (base2 ? Q(1) : logq(2));
  const Q m = a > b ? a : b, d = -fabsq(a - b);
  return base2 ? m + log1pq(exp2q(d)) / logq(2) : m + log1pq(expq(d));
}

// ---- comparison ------------------------------------------------------------------------------

// |got - ref| in units of the ulp of ref in T (at least `floor` times the ulp
// of 1, see above); 0 when both are the same NaN / inf, infinity when they
// differ there.
template <class T>
double error_ulps(T got, Q ref, double floor) {
  const T r = static_cast<T>(ref);  // correctly rounded
  if (std::isnan(r)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(r)) return got == r ? 0 : INFINITY;
  if (std::isnan(got) || std::isinf(got)) return INFINITY;
  using L = std::numeric_limits<T>;
  const T ar = std::fabs(r);
  T ulp = ar < L::min() ? L::denorm_min() : std::ldexp(T(1), std::ilogb(ar) - (L::digits - 1));
  ulp = std::max(ulp, static_cast<T>(floor * L::epsilon()));
  return static_cast<double>(fabsq(Q(got) - ref) / Q(ulp));
}

using ajtest::eval_with;

struct Worst {
  double ulps = 0;
  double at = 0, at2 = 0;
};

// Points: `count` log-uniform magnitudes in [lo, hi] with random signs when
// `both_signs`, from a fixed seed.
std::vector<double> log_uniform(double lo, double hi, int count, bool both_signs, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  std::vector<double> v;
  for (int i = 0; i < count; ++i) {
    double x = std::exp(u(rng));
    if (both_signs && (rng() & 1)) x = -x;
    v.push_back(x);
  }
  return v;
}
std::vector<double> uniform(double lo, double hi, int count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(u(rng));
  return v;
}
void append(std::vector<double>& v, const std::vector<double>& w) { v.insert(v.end(), w.begin(), w.end()); }

struct Unary {
  const char* name;
  std::function<Array(const Array&)> f;
  std::function<Q(Q)> ref;
  std::function<std::vector<double>(bool f32)> inputs;
  double floor;          // see error_ulps
  double bound64, bound32;  // the largest error allowed
};

const double kInf = INFINITY, kNaN = NAN;

std::vector<Unary> unaries() {
  auto common = [] { return std::vector<double>{0.0, -0.0, kInf, -kInf, kNaN, 1.0, -1.0, 0.5, -0.5}; };
  return {
      {"lgamma", [](const Array& x) { return aj::lgamma(x); }, [](Q x) { return lgammaq(x); },
       [&](bool f32) {
         auto v = common();
         append(v, log_uniform(f32 ? 1e-37 : 1e-300, f32 ? 1e36 : 1e300, 3000, false, 1));
         append(v, uniform(0.5, 3, 2000, 2));
         append(v, uniform(-30, 0, 2000, 3));
         for (double k = 1; k <= 10; ++k) v.push_back(-k), v.push_back(-k + 1e-7), v.push_back(-k - 1e-7);
         return v;
       },
       1, 3, 3},
      {"digamma", [](const Array& x) { return aj::digamma(x); }, ref_digamma,
       [&](bool f32) {
         auto v = common();
         append(v, log_uniform(f32 ? 1e-37 : 1e-300, f32 ? 1e36 : 1e300, 3000, false, 4));
         append(v, uniform(0, 20, 2000, 5));
         append(v, uniform(1.45, 1.47, 500, 7));  // its zero
         return v;
       },
       1, 3, 1},
      // The reflection's pi cot(pi x) cancels against digamma(1 - x) near the
      // zeros between the poles.
      {"digamma<0", [](const Array& x) { return aj::digamma(x); }, ref_digamma,
       [&](bool) {
         auto v = uniform(-30, 0, 3000, 6);
         for (double k = 1; k <= 10; ++k) v.push_back(-k), v.push_back(-k + 1e-7), v.push_back(-k - 1e-7);
         return v;
       },
       1, 6, 1},
      {"trigamma", [](const Array& x) { return aj::trigamma(x); }, ref_trigamma,
       [&](bool f32) {
         auto v = common();
         append(v, log_uniform(f32 ? 1e-18 : 1e-150, f32 ? 1e36 : 1e300, 3000, false, 8));
         append(v, uniform(0, 20, 2000, 9));
         append(v, uniform(-30, 0, 2000, 10));
         for (double k = 1; k <= 10; ++k) v.push_back(-k), v.push_back(-k + 1e-7), v.push_back(-k - 1e-7);
         return v;
       },
       0, 4, 1},
      {"erfinv", [](const Array& x) { return aj::erfinv(x); }, ref_erfinv,
       [&](bool f32) {
         auto v = common();
         v.push_back(1.5), v.push_back(-1.5);
         append(v, uniform(-1, 1, 4000, 11));
         append(v, log_uniform(f32 ? 1e-37 : 1e-300, 0.5, 1000, true, 12));
         for (int k = 1; k < (f32 ? 24 : 53); ++k) v.push_back(1 - std::ldexp(1.0, -k)), v.push_back(-1 + std::ldexp(1.0, -k));
         return v;
       },
       0, 2, 1},
      {"ndtri", [](const Array& x) { return aj::ndtri(x); }, ref_ndtri,
       [&](bool f32) {
         auto v = common();
         v.push_back(1.5), v.push_back(2.0);
         append(v, uniform(0, 1, 4000, 13));
         append(v, log_uniform(f32 ? 1e-45 : 5e-324, 0.5, 2000, false, 14));
         for (int k = 1; k < (f32 ? 24 : 53); ++k) v.push_back(1 - std::ldexp(1.0, -k));
         return v;
       },
       0, 3, 1},
      {"log_ndtr", [](const Array& x) { return aj::log_ndtr(x); }, ref_log_ndtr,
       [&](bool f32) {
         auto v = common();
         append(v, uniform(-40, 40, 4000, 15));
         append(v, log_uniform(1e-10, f32 ? 1e18 : 1e150, 1000, true, 16));
         return v;
       },
       0, 4, 1},
      {"i0", [](const Array& x) { return aj::i0(x); }, [](Q x) { return ref_bessel_i(0, x); },
       [&](bool f32) {
         auto v = common();
         const double top = f32 ? 92 : 716;  // past overflow
         append(v, uniform(-top, top, 3000, 17));
         append(v, uniform(15, 25, 1000, 18));  // the series' switch at 20
         append(v, log_uniform(f32 ? 1e-37 : 1e-300, 1, 500, true, 19));
         return v;
       },
       0, 5, 1},
      {"i1", [](const Array& x) { return aj::i1(x); }, [](Q x) { return ref_bessel_i(1, x); },
       [&](bool f32) {
         auto v = common();
         const double top = f32 ? 92 : 716;
         append(v, uniform(-top, top, 3000, 20));
         append(v, uniform(15, 25, 1000, 21));
         append(v, log_uniform(f32 ? 1e-37 : 1e-300, 1, 500, true, 22));
         return v;
       },
       0, 5, 1},
  };
}

template <class T>
void check_unary(const Unary& fn) {
  const bool f32 = sizeof(T) == 4;
  std::vector<T> in;
  for (double d : fn.inputs(f32)) in.push_back(static_cast<T>(d));
  const double bound = f32 ? fn.bound32 : fn.bound64;
  for (bool jit : {true, false}) {
    const std::vector<T> got = eval_with<T>(jit, [&] { return fn.f(aj::from_vector(in)); });
    REQUIRE(got.size() == in.size());
    Worst w;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const double e = error_ulps(got[i], fn.ref(Q(in[i])), fn.floor);
      if (e > w.ulps || std::isnan(e)) w = {e, static_cast<double>(in[i])};
    }
    std::printf("  %-9s %s %-11s worst %.2f ulp at %.17g (%zu points)\n", fn.name, f32 ? "f32" : "f64",
                jit ? "host JIT" : "interpreter", w.ulps, w.at, in.size());
    INFO(fn.name, (f32 ? " f32" : " f64"), (jit ? " host JIT" : " interpreter"), ": worst at x = ", w.at);
    CHECK(w.ulps <= bound);
  }
}

template <class T>
void check_logaddexp(bool base2) {
  const bool f32 = sizeof(T) == 4;
  std::vector<T> a, b;
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> scale(-3, f32 ? 1.5 : 2.5), u(-1, 1);
  for (int i = 0; i < 4000; ++i) {
    const double s = std::pow(10.0, scale(rng));
    a.push_back(static_cast<T>(u(rng) * s));
    b.push_back(static_cast<T>(i % 4 == 0 ? a.back() + static_cast<T>(u(rng)) : u(rng) * s));
  }
  const double specials[] = {0.0, -0.0, kInf, -kInf, kNaN, 1.0, -1.0, 700, -700};
  for (double x : specials) {
    for (double y : specials) a.push_back(static_cast<T>(x)), b.push_back(static_cast<T>(y));
  }
  const char* name = base2 ? "logaddexp2" : "logaddexp";
  for (bool jit : {true, false}) {
    const std::vector<T> got = eval_with<T>(jit, [&] {
      return base2 ? aj::logaddexp2(aj::from_vector(a), aj::from_vector(b))
                   : aj::logaddexp(aj::from_vector(a), aj::from_vector(b));
    });
    REQUIRE(got.size() == a.size());
    Worst w;
    for (std::size_t i = 0; i < a.size(); ++i) {
      // log(e^a + e^b) cancels to 0 where a = -b and both are small: the unit is the ulp of 1 there.
      const double e = error_ulps(got[i], ref_logaddexp(Q(a[i]), Q(b[i]), base2), 1);
      if (e > w.ulps || std::isnan(e)) w = {e, static_cast<double>(a[i]), static_cast<double>(b[i])};
    }
    std::printf("  %-9s %s %-11s worst %.2f ulp at (%.17g, %.17g) (%zu points)\n", name, f32 ? "f32" : "f64",
                jit ? "host JIT" : "interpreter", w.ulps, w.at, w.at2, a.size());
    INFO(name, (f32 ? " f32" : " f64"), (jit ? " host JIT" : " interpreter"), ": worst at ", w.at, ", ", w.at2);
    CHECK(w.ulps <= 3);
  }
}

}  // namespace

TEST_SUITE("special functions") {
  TEST_CASE("special functions: the worst error against a quad-precision reference, f64 and f32") {
    for (const Unary& fn : unaries()) {
      check_unary<double>(fn);
      check_unary<float>(fn);
    }
    for (bool base2 : {false, true}) {
      check_logaddexp<double>(base2);
      check_logaddexp<float>(base2);
    }
  }

  TEST_CASE("special functions: known values, poles and domains") {
    auto one = [](Array (*f)(const aj::Operand&), double x) { return f(aj::full({1}, x, aj::DType::f64)).item<double>(); };
    // Values from the functions' definitions (not from this implementation).
    CHECK(one(aj::lgamma, 5.0) == doctest::Approx(std::log(24.0)).epsilon(1e-15));
    CHECK(one(aj::digamma, 1.0) == doctest::Approx(-0.57721566490153286061).epsilon(1e-15));  // -Euler's gamma
    CHECK(one(aj::trigamma, 1.0) == doctest::Approx(1.64493406684822643647).epsilon(1e-15));  // pi^2 / 6
    CHECK(one(aj::erfinv, std::erf(0.3)) == doctest::Approx(0.3).epsilon(1e-15));
    CHECK(one(aj::ndtri, 0.975) == doctest::Approx(1.95996398454005423552).epsilon(1e-15));
    CHECK(one(aj::log_ndtr, 0.0) == doctest::Approx(-std::log(2.0)).epsilon(1e-15));
    CHECK(one(aj::i0, 0.0) == 1.0);
    CHECK(one(aj::i1, 0.0) == 0.0);
    CHECK(one(aj::ndtri, 0.5) == 0.0);
    CHECK(!std::signbit(one(aj::ndtri, 0.5)));
    // Poles and domain edges.
    CHECK(one(aj::digamma, 0.0) == -INFINITY);
    CHECK(std::isnan(one(aj::digamma, -2.0)));
    CHECK(one(aj::trigamma, -3.0) == INFINITY);
    CHECK(one(aj::lgamma, -3.0) == INFINITY);
    CHECK(one(aj::erfinv, 1.0) == INFINITY);
    CHECK(one(aj::erfinv, -1.0) == -INFINITY);
    CHECK(std::isnan(one(aj::erfinv, 1.0000001)));
    CHECK(one(aj::ndtri, 0.0) == -INFINITY);
    CHECK(one(aj::ndtri, 1.0) == INFINITY);
    CHECK(std::isnan(one(aj::ndtri, -0.1)));
    CHECK(one(aj::log_ndtr, -INFINITY) == -INFINITY);
    CHECK(one(aj::log_ndtr, INFINITY) == 0.0);
    CHECK(one(aj::i0, -INFINITY) == INFINITY);
    CHECK(one(aj::i1, -INFINITY) == -INFINITY);
    // Integers compute in f64 (NumPy's rule for float functions).
    Array k = aj::lgamma(aj::from_vector(std::vector<std::int32_t>{1, 2, 3, 4}));
    CHECK(k.dtype() == aj::DType::f64);
    CHECK(k.to_vector<double>()[3] == doctest::Approx(std::log(6.0)).epsilon(1e-15));
  }
}

#else
TEST_CASE("special functions: skipped (no __float128 / libquadmath with this compiler)") {
  MESSAGE("skipped: the quad-precision references need GCC's __float128 and libquadmath");
}
#endif

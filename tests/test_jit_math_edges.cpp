// The host JIT's transcendental functions at the edges of their domains and
// ranges, against the kernel interpreter (which calls libm, as the reference
// does): +-0, +-inf, NaN, subnormals, the largest finite inputs, and dense
// sweeps across each overflow and underflow threshold, for f32 and f64.
// README.md promises 4 ulp for every input; SLEEF alone breaks that at three
// edges (see ScalarCodegen::math), which the kernel now handles itself.
//
// Every input runs twice: in one long array (the vector loop) and alone (the
// scalar remainder loop), since both call SLEEF, in different widths.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;

constexpr double kUlpBound = 4;  // README.md, "Float semantics"

// Distance in units in the last place of T: adjacent values are 1 apart, +0
// and -0 are 0 apart; NaN is only near NaN and inf only near inf (an overflow
// where the reference is finite is wrong however close DBL_MAX is).
template <class T>
double ulp_distance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0 : INFINITY;
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  auto ordered = [](T x) {
    I i;
    std::memcpy(&i, &x, sizeof i);
    return i < 0 ? static_cast<I>(std::numeric_limits<I>::min() - i) : i;
  };
  const long double d = static_cast<long double>(ordered(a)) - static_cast<long double>(ordered(b));
  return static_cast<double>(d < 0 ? -d : d);
}

struct Fn {
  const char* name;
  std::function<Array(const Array&)> f;
};

const std::vector<Fn>& unary_fns() {
  static const std::vector<Fn> fns = {
      {"exp", [](const Array& x) { return aj::exp(x); }},
      {"log", [](const Array& x) { return aj::log(x); }},
      {"log1p", [](const Array& x) { return aj::log1p(x); }},
      {"expm1", [](const Array& x) { return aj::expm1(x); }},
      {"sin", [](const Array& x) { return aj::sin(x); }},
      {"cos", [](const Array& x) { return aj::cos(x); }},
      {"tan", [](const Array& x) { return aj::tan(x); }},
      {"tanh", [](const Array& x) { return aj::tanh(x); }},
      {"sigmoid", [](const Array& x) { return aj::sigmoid(x); }},
      {"sqrt", [](const Array& x) { return aj::sqrt(x); }},
      {"rsqrt", [](const Array& x) { return aj::rsqrt(x); }},
      {"erf", [](const Array& x) { return aj::erf(x); }},
      {"erfc", [](const Array& x) { return aj::erfc(x); }},
      {"trunc", [](const Array& x) { return aj::trunc(x); }},
      {"arcsin", [](const Array& x) { return aj::arcsin(x); }},
      {"arccos", [](const Array& x) { return aj::arccos(x); }},
      {"arctan", [](const Array& x) { return aj::arctan(x); }},
      {"sinh", [](const Array& x) { return aj::sinh(x); }},
      {"cosh", [](const Array& x) { return aj::cosh(x); }},
      {"arcsinh", [](const Array& x) { return aj::arcsinh(x); }},
      {"arccosh", [](const Array& x) { return aj::arccosh(x); }},
      {"arctanh", [](const Array& x) { return aj::arctanh(x); }},
      {"exp2", [](const Array& x) { return aj::exp2(x); }},
      {"log2", [](const Array& x) { return aj::log2(x); }},
      {"log10", [](const Array& x) { return aj::log10(x); }},
      {"cbrt", [](const Array& x) { return aj::cbrt(x); }},
  };
  return fns;
}

using ajtest::eval_with;

// `count` points evenly across [lo, hi], and the 8 representable values on
// each side of every `pivot`.
template <class T>
void sweep(std::vector<T>& v, T lo, T hi, int count) {
  for (int i = 0; i <= count; ++i) v.push_back(static_cast<T>(lo + (hi - lo) * (static_cast<T>(i) / count)));
}
template <class T>
void around(std::vector<T>& v, T pivot) {
  T up = pivot, down = pivot;
  v.push_back(pivot);
  for (int i = 0; i < 8; ++i) {
    up = std::nextafter(up, std::numeric_limits<T>::infinity());
    down = std::nextafter(down, -std::numeric_limits<T>::infinity());
    v.push_back(up);
    v.push_back(down);
  }
}

// Values every function meets: zeros, infinities, NaN, the extremes of the
// normal and subnormal ranges, and ordinary numbers.
template <class T>
std::vector<T> common_edges() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::max(), -L::max(),
                      L::min(), -L::min(), L::denorm_min(), -L::denorm_min(), L::min() / 2, -L::min() / 2,
                      T(1), T(-1), T(0.5), T(-0.5), T(2), T(-2), T(1e-5), T(-1e-5), T(3), T(-3), T(100),
                      T(-100), T(1e6), T(-1e6)};
  around(v, L::max());
  around(v, L::min());
  around(v, L::denorm_min());
  return v;
}

// Each function's own edges: where its result overflows, underflows,
// saturates, or its argument reduction is hardest. The representable values
// around each such point come first; `dense` adds sweeps across them.
template <class T>
std::vector<T> edges_of(const std::string& fn, bool dense) {
  using L = std::numeric_limits<T>;
  const bool f64 = sizeof(T) == 8;
  std::vector<T> v = common_edges<T>();
  const T log_max = std::log(L::max());                   // exp overflows past it
  const T log_min = std::log(L::min());                   // exp result subnormal below
  const T log_tiny = std::log(L::denorm_min()) - T(0.7);  // exp result 0 below
  const T pi = T(3.14159265358979323846);
  const bool exps = fn == "exp" || fn == "expm1" || fn == "sigmoid" || fn == "sinh" || fn == "cosh";
  const bool logs = fn == "log" || fn == "log1p" || fn == "sqrt" || fn == "rsqrt" || fn == "log2" ||
                    fn == "log10" || fn == "cbrt" || fn == "arcsinh" || fn == "arccosh";
  // Where the inverse functions' domains end (+-1; 1 for arccosh), and exp2's
  // overflow and underflow thresholds (the exponent range, in binades).
  if (fn == "arcsin" || fn == "arccos" || fn == "arctanh" || fn == "arccosh") {
    for (T p : {T(1), T(-1), T(0.5), T(-0.5), T(0.99), T(-0.99)}) around(v, p);
  }
  if (fn == "exp2") {
    for (T p : {T(L::max_exponent), T(L::min_exponent - 1), T(L::min_exponent - L::digits - 1)}) {
      around(v, p);
      around(v, -p);
    }
  }
  if (fn == "arctan") {
    for (T p : {T(1e8), T(1e16), T(-1e8), T(-1e16)}) around(v, p);
  }
  const bool trig = fn == "sin" || fn == "cos" || fn == "tan";
  if (exps) {
    for (T p : {log_max, log_min, log_tiny, -log_max, -log_min, -log_tiny}) around(v, p);
  }
  if (logs) {
    for (T p = L::denorm_min(); p < L::max() / 4; p *= 1024) around(v, p);  // every scale
  }
  if (fn == "log1p") around(v, T(-1));
  if (trig) {
    for (int k = -8; k <= 8; ++k) around(v, k * pi / 2);
    for (T big : {T(1e5), T(1e10), T(1e15), T(1e22), T(1e30), T(1e38)}) {
      around(v, big);
      around(v, -big);
    }
  }
  if (!dense) return v;
  if (exps) {
    for (T p : {log_max, log_min, log_tiny, -log_max, -log_min, -log_tiny}) {
      sweep(v, p - T(0.01), p + T(0.01), 400);
      sweep(v, p - 1, p + 1, 400);
    }
  }
  if (fn == "expm1") sweep(v, T(-50), T(-30), 200);
  if (logs) {
    sweep(v, L::max() / T(1e6), L::max(), 400);
    sweep(v, f64 ? T(1e300) : T(1e36), f64 ? T(1e308) : T(1e38), 400);
  }
  if (fn == "log1p") sweep(v, T(-1), T(-0.99), 400);
  if (trig) sweep(v, T(-1e4), T(1e4), 2000);
  if (fn == "arcsin" || fn == "arccos" || fn == "arctanh") {
    sweep(v, T(-1), T(1), 4000);
    sweep(v, T(0.999), T(1), 400);
    sweep(v, T(-1), T(-0.999), 400);
  }
  if (fn == "arccosh") sweep(v, T(1), T(1.01), 400);
  if (fn == "exp2") {
    sweep(v, T(L::max_exponent - 2), T(L::max_exponent + 1), 400);
    sweep(v, T(L::min_exponent - L::digits - 2), T(L::min_exponent), 800);
  }
  if (fn == "trunc") sweep(v, T(-10), T(10), 400);
  if (fn == "arctan" || fn == "arcsinh" || fn == "cbrt") sweep(v, T(-50), T(50), 2000);
  if (fn == "tanh" || fn == "sigmoid") {
    sweep(v, T(-40), T(40), 2000);  // tanh saturates near 9 (f32) and 19 (f64)
    sweep(v, T(-1e-3), T(1e-3), 200);
  }
  if (fn == "erf" || fn == "erfc") {
    // erf rounds to +-1 near 3.9 (f32) / 5.9 (f64); erfc's result turns
    // subnormal near 9.2 / 26.5 and 0 near 10.1 / 27.3; small |x| is erf's
    // linear range.
    sweep(v, T(-7), T(7), 4000);
    sweep(v, T(-1e-3), T(1e-3), 200);
    sweep(v, f64 ? T(25) : T(8.5), f64 ? T(28) : T(10.5), 2000);
    for (T p : {T(0.5), T(1), T(2), T(3.9), T(5.9), T(9.2), T(10.05), T(26.5), T(27.25)}) {
      around(v, p);
      around(v, -p);
    }
  }
  return v;
}

// Random bit patterns: every binade equally likely, subnormals, NaNs included
// (quiet ones: what libm does with a signaling NaN is its own choice, e.g.
// glibc's pow(sNaN, 0) is NaN where C says 1).
template <class T>
std::vector<T> random_bits(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    std::uint64_t r = rng();
    std::memcpy(&x, &r, sizeof(T));
    if (std::isnan(x)) x = std::copysign(std::numeric_limits<T>::quiet_NaN(), x);
  }
  return v;
}

// The largest distance between JIT and interpreter over `inputs` (through the
// vector loop and, for the first `alone` inputs, one at a time), with a
// message naming each input beyond the bound.
template <class T>
double check(const std::string& what, const std::vector<T>& x, const std::vector<T>& y,
             const std::function<Array(const Array&, const Array&)>& f, std::size_t alone) {
  auto run = [&](bool jit, std::size_t first, std::size_t count) {
    std::vector<T> xs(x.begin() + first, x.begin() + first + count);
    std::vector<T> ys(y.begin() + first, y.begin() + first + count);
    return eval_with<T>(jit, [&] { return f(aj::from_vector<T>(xs), aj::from_vector<T>(ys)); });
  };
  double worst = 0;
  int reported = 0;
  auto compare = [&](const std::vector<T>& want, const std::vector<T>& got, std::size_t first) {
    for (std::size_t i = 0; i < want.size(); ++i) {
      double d = ulp_distance(want[i], got[i]);
      const bool zero_sign = want[i] == 0 && got[i] == 0 && std::signbit(want[i]) != std::signbit(got[i]);
      if (zero_sign) d = INFINITY;
      worst = std::max(worst, d);
      if (d > kUlpBound && reported++ < 5) {
        std::ostringstream os;
        os.precision(std::numeric_limits<T>::max_digits10);
        os << what << "(" << x[first + i];
        if (&x != &y) os << ", " << y[first + i];
        os << "): JIT " << got[i] << ", interpreter (libm) " << want[i] << ", " << d << " ulp";
        FAIL_CHECK(os.str());
      }
    }
  };
  compare(run(false, 0, x.size()), run(true, 0, x.size()), 0);
  for (std::size_t i = 0; i < std::min(alone, x.size()); ++i) compare(run(false, i, 1), run(true, i, 1), i);
  return worst;
}

template <class T>
void check_unary_edges() {
  const char* dt = sizeof(T) == 4 ? "f32" : "f64";
  for (const Fn& fn : unary_fns()) {
    const std::size_t alone = edges_of<T>(fn.name, false).size();
    std::vector<T> x = edges_of<T>(fn.name, true);
    std::vector<T> r = random_bits<T>(20000, 17);
    x.insert(x.end(), r.begin(), r.end());
    double worst = check<T>(std::string(fn.name) + "<" + dt + ">", x, x,
                            [&](const Array& a, const Array&) { return fn.f(a); }, alone);
    const std::string note = std::string(fn.name) + " " + dt + ": " + std::to_string(x.size()) +
                             " inputs, worst " + std::to_string(worst) + " ulp";
    MESSAGE(note);
  }
}

template <class T>
void check_pow_edges() {
  using L = std::numeric_limits<T>;
  const bool f64 = sizeof(T) == 8;
  const char* dt = f64 ? "f64" : "f32";
  std::vector<T> xs = common_edges<T>(), ys = common_edges<T>();
  for (T y : {T(0.5), T(1.5), T(-1.5), T(1023), T(1024), T(-1074), T(127), T(128), T(-149), T(1e10)}) ys.push_back(y);
  std::vector<T> x, y;
  for (T a : xs) {  // the grid of edge bases and exponents
    for (T b : ys) x.push_back(a), y.push_back(b);
  }
  const std::size_t alone = x.size();
  // The results' overflow threshold: 2^y near the top binade, max^y near 1,
  // (-2)^y for odd y near it (sign), large bases near y = 1.
  const T top = f64 ? T(1024) : T(128);
  auto add = [&](T a, T b) { x.push_back(a), y.push_back(b); };
  for (int i = 0; i <= 2000; ++i) {
    const T t = T(i) / 2000;
    add(T(2), top - T(0.01) + T(0.02) * t);
    add(T(2), top - T(i + 1) * (f64 ? T(2e-9) : T(4e-6)));  // SLEEF's f64 cut-off: 2.5e-6 below 1024
    add(L::max(), T(0.99) + T(0.02) * t);
    add(-L::max(), T(0.99) + T(0.02) * t);
    add(L::max() * t, T(1));
    add(T(2) + t, (top - 1) / std::log2(T(2) + t));
    add(T(0.5) - t / 4, -(top - 1) / std::log2(T(0.5) - t / 4));
    add(T(-2), top - 1 - 2 * T(i % 3));  // odd, even and odd again: the result's sign
    add(T(1) + t * T(1e-3), T(1e6) * (1 + t));
  }
  std::vector<T> rx = random_bits<T>(20000, 23), ry = random_bits<T>(20000, 29);
  for (auto& b : ry) b = std::fmod(b, T(64));  // mostly finite results
  x.insert(x.end(), rx.begin(), rx.end());
  y.insert(y.end(), ry.begin(), ry.end());
  double worst = check<T>(std::string("pow<") + dt + ">", x, y,
                          [](const Array& a, const Array& b) { return aj::pow(a, b); }, alone);
  const std::string note = std::string("pow ") + dt + ": " + std::to_string(x.size()) + " inputs, worst " +
                           std::to_string(worst) + " ulp";
  MESSAGE(note);
}

// arctan2, hypot, copysign, nextafter, fmod: the grid of edge values against
// each other (signed zeros and infinities meet in every quadrant), a dense
// walk around the circle for arctan2, hypot's overflow and underflow scales,
// and random bit patterns.
template <class T>
void check_binary_edges() {
  using L = std::numeric_limits<T>;
  const char* dt = sizeof(T) == 8 ? "f64" : "f32";
  const struct {
    const char* name;
    Array (*f)(const aj::Operand&, const aj::Operand&);
  } fns[] = {{"arctan2", aj::arctan2}, {"hypot", aj::hypot}, {"copysign", aj::copysign},
             {"nextafter", aj::nextafter}, {"fmod", aj::fmod}};
  for (const auto& fn : fns) {
    std::vector<T> edges = common_edges<T>(), x, y;
    for (T a : edges) {
      for (T b : edges) x.push_back(a), y.push_back(b);
    }
    const std::size_t alone = x.size();
    for (int i = 0; i <= 4000; ++i) {  // the circle, and large and tiny radii
      const T t = T(i) / 4000 * T(6.283185307179586);
      for (T r : {T(1), L::max() / 4, L::min() * 4, L::denorm_min() * 64}) {
        x.push_back(r * std::sin(t));
        y.push_back(r * std::cos(t));
      }
    }
    std::vector<T> rx = random_bits<T>(20000, 31), ry = random_bits<T>(20000, 37);
    x.insert(x.end(), rx.begin(), rx.end());
    y.insert(y.end(), ry.begin(), ry.end());
    double worst = check<T>(std::string(fn.name) + "<" + dt + ">", x, y,
                            [&](const Array& a, const Array& b) { return fn.f(a, b); }, alone);
    const std::string note = std::string(fn.name) + " " + dt + ": " + std::to_string(x.size()) + " inputs, worst " +
                             std::to_string(worst) + " ulp";
    MESSAGE(note);
  }
}

}  // namespace

TEST_CASE("jit math edges: arctan2 hypot copysign nextafter fmod, f32") { check_binary_edges<float>(); }
TEST_CASE("jit math edges: arctan2 hypot copysign nextafter fmod, f64") { check_binary_edges<double>(); }

TEST_CASE("jit math edges: exp log log1p expm1 sin cos tan tanh sigmoid sqrt rsqrt erf erfc trunc arcsin arccos arctan sinh cosh arcsinh arccosh arctanh exp2 log2 log10 cbrt, f32") {
  check_unary_edges<float>();
}
TEST_CASE("jit math edges: exp log log1p expm1 sin cos tan tanh sigmoid sqrt rsqrt erf erfc trunc arcsin arccos arctan sinh cosh arcsinh arccosh arctanh exp2 log2 log10 cbrt, f64") {
  check_unary_edges<double>();
}
TEST_CASE("jit math edges: pow, f32") { check_pow_edges<float>(); }
TEST_CASE("jit math edges: pow, f64") { check_pow_edges<double>(); }

// The inputs the issue named: finite in libm, +inf from SLEEF alone.
TEST_CASE("jit math edges: the SLEEF overflows found at the range edges are finite now") {
  const bool saved = aj::jit::enabled();
  aj::jit::set_enabled(true);
  auto one = [](Array a) { return a.to_vector<double>()[0]; };
  auto d = [](double v) { return aj::from_vector<double>({v}); };
  auto f = [](float v) { return aj::from_vector<float>({v}); };
  CHECK(one(aj::exp(d(709.782712893384))) == doctest::Approx(std::exp(709.782712893384)).epsilon(1e-15));
  CHECK(one(aj::pow(d(DBL_MAX), 1.0)) == DBL_MAX);
  CHECK(one(aj::pow(d(2.0), 1023.9999999)) == doctest::Approx(std::pow(2.0, 1023.9999999)).epsilon(1e-15));
  CHECK(one(aj::pow(d(-2.0), 1023.0)) == -std::ldexp(1.0, 1023));
  CHECK(std::isnan(one(aj::pow(d(-DBL_MAX), 0.999))));
  CHECK(one(aj::log1p(d(DBL_MAX))) == doctest::Approx(std::log(DBL_MAX)).epsilon(1e-15));
  CHECK(one(aj::log1p(d(1e307))) == doctest::Approx(std::log(1e307)).epsilon(1e-15));
  CHECK(one(aj::log1p(f(FLT_MAX))) == doctest::Approx(std::log(FLT_MAX)).epsilon(1e-6));
  CHECK(one(aj::log1p(f(1e38f))) == doctest::Approx(std::log(1e38)).epsilon(1e-6));
  aj::jit::set_enabled(saved);
}

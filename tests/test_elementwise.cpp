// Elementwise ops: arithmetic, comparisons, logic, where, maximum/minimum,
// pow, the math functions, clip, true/floor division, compound assignment,
// scalars on either side, broadcasting, strided views as operands, and the
// result dtypes (NumPy promotion, weak scalars).
//
// Every expected value is computed here with plain C++ loops over the same
// inputs (never through arrayjit), or written out by hand. Floating point
// results are compared exactly: the semantics (docs/semantics.md) compute in
// the operands' dtype with the same std:: functions the test calls.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/arrayjit.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>
#include "base/op.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using aj::Slice;
using std::nullopt;
using i32 = std::int32_t;
using i64 = std::int64_t;
using Dims = std::vector<i64>;

// Transcendental functions (exp, log, sin, ...) are compared within this many
// ulps: the host JIT computes them with SLEEF's 1.0-ulp vector functions
// (jit/llvm), the reference with the std:: functions; 4 ulp is the bound
// docs/semantics.md states.
constexpr int kMathUlps = 4;

// Random values of T, never zero (so they divide), not all equal.
// Integers in [lo, hi]; floats in [lo, hi] away from 0.
template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed, double lo = -9, double hi = 9) {
  return ajtest::random_in<T>(n, seed, lo, hi);
}

// Values drawn from a small set, so that comparisons see ties.
template <class T>
std::vector<T> tie_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> v;
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      v.push_back(rng() % 2 == 0);
    } else if constexpr (std::is_integral_v<T>) {
      v.push_back(static_cast<T>(static_cast<int>(rng() % 7) - 3));
    } else {
      v.push_back(static_cast<T>(static_cast<double>(rng() % 7) - 3.5));  // -3.5 .. 2.5
    }
  }
  return v;
}

template <class T>
Array make(const std::vector<T>& v, const Dims& dims) {
  return aj::from_vector(v, Shape(dims));
}

// Equal values, NaN equal to NaN, and -0.0 told apart from +0.0.
template <class T>
bool same_value(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want)) return std::isnan(got);
    return got == want && std::signbit(got) == std::signbit(want);
  } else {
    return got == want;
  }
}

template <class T>
i64 ulp_distance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return (std::isnan(a) && std::isnan(b)) ? 0 : INT64_MAX;
  using U = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  U ia, ib;
  std::memcpy(&ia, &a, sizeof(T));
  std::memcpy(&ib, &b, sizeof(T));
  // Map the sign-magnitude bit patterns onto a monotonic integer line.
  auto ordered = [](U x) -> i64 {
    return x < 0 ? static_cast<i64>(std::numeric_limits<U>::min()) - static_cast<i64>(x)
                 : static_cast<i64>(x);
  };
  i64 d = ordered(ia) - ordered(ib);
  return d < 0 ? -d : d;
}

// The array has dtype T, shape `dims` and exactly the values `want`.
template <class T>
void check_values(const Array& a, const Dims& dims, const std::vector<T>& want) {
  REQUIRE(a.dtype() == aj::dtype_of<T>);
  REQUIRE(a.shape() == Shape(dims));
  REQUIRE(a.size() == static_cast<i64>(want.size()));
  std::vector<T> got = a.template to_vector<T>();
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    T g = got[i], w = want[i];
    if (!same_value(g, w)) {
      if (++bad <= 5) CHECK_MESSAGE(false, "element " << i << ": got " << g << ", want " << w);
    }
  }
  CHECK(bad == 0);
}

// As check_values, within kMathUlps for floating point T.
template <class T>
void check_math(const Array& a, const Dims& dims, const std::vector<T>& want) {
  if constexpr (!std::is_floating_point_v<T>) {
    check_values(a, dims, want);
  } else {
    REQUIRE(a.dtype() == aj::dtype_of<T>);
    REQUIRE(a.shape() == Shape(dims));
    std::vector<T> got = a.template to_vector<T>();
    REQUIRE(got.size() == want.size());
    int bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (ulp_distance(got[i], want[i]) > kMathUlps) {
        if (++bad <= 5) {
          CHECK_MESSAGE(false, "element " << i << ": got " << got[i] << ", want " << want[i]);
        }
      }
    }
    CHECK(bad == 0);
  }
}

template <class T, class F>
std::vector<T> map1(const std::vector<T>& a, F f) {
  std::vector<T> r;
  for (std::size_t i = 0; i < a.size(); ++i) r.push_back(static_cast<T>(f(a[i])));
  return r;
}
template <class R, class T, class U, class F>
std::vector<R> map2(const std::vector<T>& a, const std::vector<U>& b, F f) {
  std::vector<R> r;
  for (std::size_t i = 0; i < a.size(); ++i) r.push_back(static_cast<R>(f(a[i], b[i])));
  return r;
}

// NumPy's // and % on integers, computed through double (exact for the small
// values these tests use).
template <class T>
T floordiv_ref(T a, T b) {
  return static_cast<T>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}
template <class T>
T intmod_ref(T a, T b) {
  return static_cast<T>(a - floordiv_ref(a, b) * b);
}
// NumPy's % on floats: the remainder takes the divisor's sign.
template <class T>
T floatmod_ref(T a, T b) {
  T r = std::fmod(a, b);
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  if (r == 0) r = std::copysign(T(0), b);
  return r;
}
template <class T>
T mod_ref(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return floatmod_ref(a, b);
  else return intmod_ref(a, b);
}
template <class T>
T div_ref(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a / b;
  else return floordiv_ref(a, b);
}

}  // namespace

TEST_SUITE("elementwise") {

// ---- arithmetic ---------------------------------------------------------------------

TEST_CASE_TEMPLATE("+ - * / % on equal shapes compute elementwise in the operands' dtype", T, i32,
                   i64, float, double) {
  const Dims dims{4, 6};
  auto av = random_values<T>(24, 11);
  auto bv = random_values<T>(24, 12);
  Array a = make(av, dims), b = make(bv, dims);
  check_values(a + b, dims, map2<T>(av, bv, [](T x, T y) { return T(x + y); }));
  check_values(a - b, dims, map2<T>(av, bv, [](T x, T y) { return T(x - y); }));
  check_values(a * b, dims, map2<T>(av, bv, [](T x, T y) { return T(x * y); }));
  check_values(a / b, dims, map2<T>(av, bv, [](T x, T y) { return div_ref(x, y); }));
  check_values(a % b, dims, map2<T>(av, bv, [](T x, T y) { return mod_ref(x, y); }));
}

TEST_CASE_TEMPLATE("add subtract multiply divide mod equal their operators", T, i32, i64, float,
                   double) {
  const Dims dims{3, 5};
  auto av = random_values<T>(15, 21);
  auto bv = random_values<T>(15, 22);
  Array a = make(av, dims), b = make(bv, dims);
  check_values(aj::add(a, b), dims, map2<T>(av, bv, [](T x, T y) { return T(x + y); }));
  check_values(aj::subtract(a, b), dims, map2<T>(av, bv, [](T x, T y) { return T(x - y); }));
  check_values(aj::multiply(a, b), dims, map2<T>(av, bv, [](T x, T y) { return T(x * y); }));
  check_values(aj::divide(a, b), dims, map2<T>(av, bv, [](T x, T y) { return div_ref(x, y); }));
  check_values(aj::mod(a, b), dims, map2<T>(av, bv, [](T x, T y) { return mod_ref(x, y); }));
}

TEST_CASE_TEMPLATE("unary minus and negative flip the sign in the operand's dtype", T, i32, i64,
                   float, double) {
  const Dims dims{17};
  auto av = random_values<T>(17, 31);
  Array a = make(av, dims);
  auto want = map1(av, [](T x) { return T(-x); });
  check_values(-a, dims, want);
  check_values(aj::negative(a), dims, want);
  check_values(-(-a), dims, av);
}

TEST_CASE_TEMPLATE("true_divide gives floats: f64 for integers, the float dtype for floats", T, i32,
                   i64, float, double) {
  const Dims dims{2, 7};
  auto av = random_values<T>(14, 41);
  auto bv = random_values<T>(14, 42);
  Array a = make(av, dims), b = make(bv, dims);
  Array q = aj::true_divide(a, b);
  if constexpr (std::is_integral_v<T>) {
    check_values(q, dims, map2<double>(av, bv, [](T x, T y) {
                   return static_cast<double>(x) / static_cast<double>(y);
                 }));
    // With a scalar divisor too: 7 / 2 == 3.5, not 3.
    check_values(aj::true_divide(make(std::vector<T>{7, -7}, {2}), 2), {2},
                 std::vector<double>{3.5, -3.5});
  } else {
    check_values(q, dims, map2<T>(av, bv, [](T x, T y) { return T(x / y); }));
  }
}

TEST_CASE_TEMPLATE("floor_divide is floor(a / b) in the operands' dtype", T, i32, i64, float,
                   double) {
  const Dims dims{3, 4};
  auto av = random_values<T>(12, 51);
  auto bv = random_values<T>(12, 52);
  Array a = make(av, dims), b = make(bv, dims);
  Array q = aj::floor_divide(a, b);
  if constexpr (std::is_integral_v<T>) {
    check_values(q, dims, map2<T>(av, bv, [](T x, T y) { return floordiv_ref(x, y); }));
  } else {
    check_values(q, dims, map2<T>(av, bv, [](T x, T y) { return T(std::floor(x / y)); }));
  }
  // Hand values: -7 // 2 == -4, 7 // 2 == 3, 7 // -2 == -4.
  check_values(aj::floor_divide(make(std::vector<T>{-7, 7, 7}, {3}), make(std::vector<T>{2, 2, -2}, {3})),
               {3}, std::vector<T>{-4, 3, -4});
}

// ---- scalars on either side -------------------------------------------------------------

TEST_CASE_TEMPLATE("scalars work on either side and keep their operand order", T, i32, i64, float,
                   double) {
  const Dims dims{2, 3};
  auto xv = random_values<T>(6, 61);
  Array x = make(xv, dims);
  check_values(2 + x, dims, map1(xv, [](T v) { return T(T(2) + v); }));
  check_values(x + 2, dims, map1(xv, [](T v) { return T(v + T(2)); }));
  check_values(10 - x, dims, map1(xv, [](T v) { return T(T(10) - v); }));
  check_values(x - 10, dims, map1(xv, [](T v) { return T(v - T(10)); }));
  check_values(3 * x, dims, map1(xv, [](T v) { return T(T(3) * v); }));
  check_values(x * 3, dims, map1(xv, [](T v) { return T(v * T(3)); }));
  check_values(100 / x, dims, map1(xv, [](T v) { return div_ref(T(100), v); }));
  check_values(x / 4, dims, map1(xv, [](T v) { return div_ref(v, T(4)); }));
  check_values(7 % x, dims, map1(xv, [](T v) { return mod_ref(T(7), v); }));
  check_values(x % 4, dims, map1(xv, [](T v) { return mod_ref(v, T(4)); }));
  check_values(aj::maximum(0, x), dims, map1(xv, [](T v) { return v > 0 ? v : T(0); }));
  check_values(aj::minimum(x, 0), dims, map1(xv, [](T v) { return v < 0 ? v : T(0); }));
  if constexpr (std::is_floating_point_v<T>) {
    // A floating scalar stays weak against a floating array.
    check_values(2.0 * x, dims, map1(xv, [](T v) { return T(T(2.0) * v); }));
    check_values(x * 2.0, dims, map1(xv, [](T v) { return T(v * T(2.0)); }));
    check_values(1.0 / x, dims, map1(xv, [](T v) { return T(T(1.0) / v); }));
    check_values(x - 0.5, dims, map1(xv, [](T v) { return T(v - T(0.5)); }));
    check_values(0.5f + x, dims, map1(xv, [](T v) { return T(T(0.5) + v); }));
  }
}

TEST_CASE_TEMPLATE("comparisons with a scalar on either side give bool", T, i32, i64, float, double) {
  const Dims dims{10};
  auto xv = tie_values<T>(10, 71);
  Array x = make(xv, dims);
  auto cmp = [&](auto f) {
    std::vector<bool> r;
    for (T v : xv) r.push_back(f(v));
    return r;
  };
  check_values(x < 1, dims, cmp([](T v) { return v < T(1); }));
  check_values(1 < x, dims, cmp([](T v) { return T(1) < v; }));
  check_values(x >= -1, dims, cmp([](T v) { return v >= T(-1); }));
  check_values(-1 >= x, dims, cmp([](T v) { return T(-1) >= v; }));
  check_values(x == 2, dims, cmp([](T v) { return v == T(2); }));
  check_values(2 != x, dims, cmp([](T v) { return T(2) != v; }));
  check_values(x <= 0, dims, cmp([](T v) { return v <= T(0); }));
  check_values(0 > x, dims, cmp([](T v) { return T(0) > v; }));
}

// ---- comparisons -------------------------------------------------------------------------

TEST_CASE_TEMPLATE("== != < <= > >= compare elementwise and give bool", T, bool, i32, i64, float,
                   double) {
  const Dims dims{5, 8};
  auto av = tie_values<T>(40, 81);
  auto bv = tie_values<T>(40, 82);
  Array a = make(av, dims), b = make(bv, dims);
  check_values(a == b, dims, map2<bool>(av, bv, [](T x, T y) { return x == y; }));
  check_values(a != b, dims, map2<bool>(av, bv, [](T x, T y) { return x != y; }));
  check_values(a < b, dims, map2<bool>(av, bv, [](T x, T y) { return x < y; }));
  check_values(a <= b, dims, map2<bool>(av, bv, [](T x, T y) { return x <= y; }));
  check_values(a > b, dims, map2<bool>(av, bv, [](T x, T y) { return x > y; }));
  check_values(a >= b, dims, map2<bool>(av, bv, [](T x, T y) { return x >= y; }));
  // An array against itself: all equal.
  check_values(a == a, dims, std::vector<bool>(40, true));
  check_values(a < a, dims, std::vector<bool>(40, false));
}

TEST_CASE("comparisons between different dtypes compare the promoted values") {
  // i32 vs f32 compares in f64: 16777217 (not an f32) is greater than 16777216.0f.
  Array a = make(std::vector<i32>{16777217, 3, -2}, {3});
  Array b = make(std::vector<float>{16777216.0f, 3.0f, -1.5f}, {3});
  check_values(a > b, {3}, std::vector<bool>{true, false, false});
  check_values(a == b, {3}, std::vector<bool>{false, true, false});
  check_values(a < b, {3}, std::vector<bool>{false, false, true});
  // bool vs i64: true == 1.
  Array c = make(std::vector<bool>{true, false, true}, {3});
  Array d = make(std::vector<i64>{1, 0, 2}, {3});
  check_values(c == d, {3}, std::vector<bool>{true, true, false});
  check_values(c < d, {3}, std::vector<bool>{false, false, true});
}

// ---- logic ---------------------------------------------------------------------------------

TEST_CASE("&& || ! logical_not work on bool arrays and bool scalars") {
  const Dims dims{3, 7};
  auto av = random_values<bool>(21, 91);
  auto bv = random_values<bool>(21, 92);
  Array a = make(av, dims), b = make(bv, dims);
  check_values(a && b, dims, map2<bool>(av, bv, [](bool x, bool y) { return x && y; }));
  check_values(a || b, dims, map2<bool>(av, bv, [](bool x, bool y) { return x || y; }));
  check_values(!a, dims, map1(av, [](bool x) { return !x; }));
  check_values(aj::logical_not(b), dims, map1(bv, [](bool x) { return !x; }));
  check_values(a && true, dims, av);
  check_values(false && a, dims, std::vector<bool>(21, false));
  check_values(a || false, dims, av);
  check_values(true || a, dims, std::vector<bool>(21, true));
  check_values(!(!a), dims, av);
  // Logic on comparison results.
  auto xv = random_values<float>(21, 93, -2, 2);
  Array x = make(xv, dims);
  std::vector<bool> inside;
  for (float v : xv) inside.push_back(v > -1.0f && v < 1.0f);
  check_values((x > -1.0f) && (x < 1.0f), dims, inside);
  check_values(!((x <= -1.0f) || (x >= 1.0f)), dims, inside);
}

// ---- where -----------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("where picks a where the condition holds and b elsewhere", T, bool, i32, i64,
                   float, double) {
  const Dims dims{4, 5};
  auto cv = random_values<bool>(20, 101);
  auto av = random_values<T>(20, 102);
  auto bv = random_values<T>(20, 103);
  Array c = make(cv, dims), a = make(av, dims), b = make(bv, dims);
  std::vector<T> want;
  for (std::size_t i = 0; i < 20; ++i) want.push_back(cv[i] ? av[i] : bv[i]);
  check_values(aj::where(c, a, b), dims, want);
  std::vector<T> want_not;
  for (std::size_t i = 0; i < 20; ++i) want_not.push_back(cv[i] ? bv[i] : av[i]);
  check_values(aj::where(!c, a, b), dims, want_not);
}

TEST_CASE("where broadcasts its three operands and takes scalars") {
  // cond (2,1,1), a (1,3,1), b (1,1,4) -> (2,3,4)
  auto cv = std::vector<bool>{true, false};
  auto av = random_values<double>(3, 111);
  auto bv = random_values<double>(4, 112);
  Array c = make(cv, {2, 1, 1}), a = make(av, {1, 3, 1}), b = make(bv, {1, 1, 4});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(cv[i] ? av[j] : bv[k]);
  check_values(aj::where(c, a, b), {2, 3, 4}, want);

  // Scalars in the value positions are weak: an f32 array with 0.0 stays f32.
  auto xv = random_values<float>(6, 113);
  Array x = make(xv, {2, 3});
  Array pos = x > 0.0f;
  check_values(aj::where(pos, x, 0.0), {2, 3}, map1(xv, [](float v) { return v > 0 ? v : 0.0f; }));
  check_values(aj::where(pos, -1, x), {2, 3}, map1(xv, [](float v) { return v > 0 ? -1.0f : v; }));
  // An i32 array with an integer scalar stays i32; with 2.5 it becomes f64.
  auto iv = random_values<i32>(6, 114);
  Array xi = make(iv, {2, 3});
  check_values(aj::where(xi > 0, xi, 7), {2, 3}, map1(iv, [](i32 v) { return v > 0 ? v : 7; }));
  std::vector<double> wf;
  for (i32 v : iv) wf.push_back(v > 0 ? static_cast<double>(v) : 2.5);
  check_values(aj::where(xi > 0, xi, 2.5), {2, 3}, wf);
  // A scalar condition broadcasts too.
  check_values(aj::where(true, x, 1.0), {2, 3}, xv);
  // Two scalar values: the first sets the type (i64), the second is weak.
  check_values(aj::where(pos, 1, 2), {2, 3},
               map2<i64>(xv, xv, [](float v, float) { return v > 0 ? 1 : 2; }));
  // Mixed array dtypes promote: i32 with f32 -> f64.
  std::vector<double> wm;
  for (std::size_t i = 0; i < 6; ++i) wm.push_back(xv[i] > 0 ? double(iv[i]) : double(xv[i]));
  check_values(aj::where(pos, xi, x), {2, 3}, wm);
}

// ---- maximum, minimum, clip, pow -------------------------------------------------------------

TEST_CASE_TEMPLATE("maximum and minimum pick the larger / smaller value (or / and on bool)", T, bool,
                   i32, i64, float, double) {
  const Dims dims{6, 4};
  auto av = random_values<T>(24, 121);
  auto bv = random_values<T>(24, 122);
  Array a = make(av, dims), b = make(bv, dims);
  check_values(aj::maximum(a, b), dims, map2<T>(av, bv, [](T x, T y) { return x > y ? x : y; }));
  check_values(aj::minimum(a, b), dims, map2<T>(av, bv, [](T x, T y) { return x < y ? x : y; }));
  if constexpr (std::is_same_v<T, bool>) {
    check_values(aj::maximum(a, b), dims, map2<bool>(av, bv, [](bool x, bool y) { return x || y; }));
    check_values(aj::minimum(a, b), dims, map2<bool>(av, bv, [](bool x, bool y) { return x && y; }));
  }
}

TEST_CASE_TEMPLATE("clip bounds values by scalar or array limits", T, i32, i64, float, double) {
  const Dims dims{3, 6};
  auto xv = random_values<T>(18, 131);
  Array x = make(xv, dims);
  check_values(aj::clip(x, -3, 4), dims,
               map1(xv, [](T v) { return std::min(std::max(v, T(-3)), T(4)); }));
  auto lov = random_values<T>(18, 132, -9, -1);
  auto hiv = random_values<T>(18, 133, 1, 9);
  Array lo = make(lov, dims), hi = make(hiv, dims);
  std::vector<T> want;
  for (std::size_t i = 0; i < 18; ++i) want.push_back(std::min(std::max(xv[i], lov[i]), hiv[i]));
  check_values(aj::clip(x, lo, hi), dims, want);
  // Broadcast limits: one row of lower bounds (1, 6) against (3, 6).
  auto rowv = random_values<T>(6, 134, -5, 5);
  Array row = make(rowv, {1, 6});
  std::vector<T> want_row;
  for (std::size_t i = 0; i < 18; ++i) want_row.push_back(std::min(std::max(xv[i], rowv[i % 6]), T(6)));
  check_values(aj::clip(x, row, 6), dims, want_row);
  if constexpr (std::is_floating_point_v<T>) {
    check_values(aj::clip(x, -0.5, 0.5), dims,
                 map1(xv, [](T v) { return std::min(std::max(v, T(-0.5)), T(0.5)); }));
  }
}

TEST_CASE_TEMPLATE("pow of integers multiplies out exactly", T, i32, i64) {
  const Dims dims{20};
  auto bv = random_values<T>(20, 141, -5, 5);
  std::mt19937 rng(142);
  std::vector<T> ev;
  for (int i = 0; i < 20; ++i) ev.push_back(static_cast<T>(rng() % 7));  // 0..6, some zeros
  Array b = make(bv, dims), e = make(ev, dims);
  std::vector<T> want;
  for (std::size_t i = 0; i < 20; ++i) {
    T r = 1;
    for (T k = 0; k < ev[i]; ++k) r = static_cast<T>(r * bv[i]);
    want.push_back(r);
  }
  check_values(aj::pow(b, e), dims, want);
  check_values(aj::pow(b, 2), dims, map1(bv, [](T v) { return T(v * v); }));
  check_values(aj::pow(2, e), dims, map1(ev, [](T v) { return T(T(1) << v); }));
}

TEST_CASE_TEMPLATE("pow of floats is std::pow in the operands' dtype", T, float, double) {
  const Dims dims{4, 4};
  auto bv = random_values<T>(16, 151, 0.1, 4.0);
  auto ev = random_values<T>(16, 152, -3.0, 3.0);
  Array b = make(bv, dims), e = make(ev, dims);
  check_math(aj::pow(b, e), dims, map2<T>(bv, ev, [](T x, T y) { return std::pow(x, y); }));
  check_math(aj::pow(b, 0.5), dims, map1(bv, [](T x) { return std::pow(x, T(0.5)); }));
  check_math(aj::pow(2.0, e), dims, map1(ev, [](T y) { return std::pow(T(2.0), y); }));
}

// ---- math functions -----------------------------------------------------------------------------

TEST_CASE_TEMPLATE("exp log log1p expm1 sin cos tan tanh sigmoid sqrt rsqrt compute in the float dtype",
                   T, float, double) {
  const Dims dims{3, 9};
  auto xv = random_values<T>(27, 161, -4.0, 4.0);
  auto pv = random_values<T>(27, 162, 0.05, 9.0);  // positive: log, sqrt, rsqrt
  auto lv = random_values<T>(27, 163, -0.9, 4.0);  // > -1: log1p
  Array x = make(xv, dims), p = make(pv, dims), l = make(lv, dims);
  check_math(aj::exp(x), dims, map1(xv, [](T v) { return std::exp(v); }));
  check_math(aj::log(p), dims, map1(pv, [](T v) { return std::log(v); }));
  check_math(aj::log1p(l), dims, map1(lv, [](T v) { return std::log1p(v); }));
  check_math(aj::expm1(x), dims, map1(xv, [](T v) { return std::expm1(v); }));
  check_math(aj::sin(x), dims, map1(xv, [](T v) { return std::sin(v); }));
  check_math(aj::cos(x), dims, map1(xv, [](T v) { return std::cos(v); }));
  check_math(aj::tan(x), dims, map1(xv, [](T v) { return std::tan(v); }));
  check_math(aj::tanh(x), dims, map1(xv, [](T v) { return std::tanh(v); }));
  check_math(aj::sigmoid(x), dims, map1(xv, [](T v) { return T(T(1) / (T(1) + std::exp(-v))); }));
  // sqrt is correctly rounded in IEEE 754: exact on every backend.
  check_values(aj::sqrt(p), dims, map1(pv, [](T v) { return std::sqrt(v); }));
  check_math(aj::rsqrt(p), dims, map1(pv, [](T v) { return T(T(1) / std::sqrt(v)); }));
}

TEST_CASE_TEMPLATE("math functions of integers compute in f64", T, i32, i64) {
  const Dims dims{2, 8};
  auto xv = random_values<T>(16, 171, -5, 5);
  auto pv = random_values<T>(16, 172, 1, 50);
  Array x = make(xv, dims), p = make(pv, dims);
  auto d = [](T v) { return static_cast<double>(v); };
  auto m = [&](const std::vector<T>& v, double (*f)(double)) {
    std::vector<double> r;
    for (T e : v) r.push_back(f(d(e)));
    return r;
  };
  check_math(aj::exp(x), dims, m(xv, [](double v) { return std::exp(v); }));
  check_math(aj::log(p), dims, m(pv, [](double v) { return std::log(v); }));
  check_math(aj::log1p(p), dims, m(pv, [](double v) { return std::log1p(v); }));
  check_math(aj::expm1(x), dims, m(xv, [](double v) { return std::expm1(v); }));
  check_math(aj::sin(x), dims, m(xv, [](double v) { return std::sin(v); }));
  check_math(aj::cos(x), dims, m(xv, [](double v) { return std::cos(v); }));
  check_math(aj::tan(x), dims, m(xv, [](double v) { return std::tan(v); }));
  check_math(aj::tanh(x), dims, m(xv, [](double v) { return std::tanh(v); }));
  check_math(aj::sigmoid(x), dims, m(xv, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }));
  check_values(aj::sqrt(p), dims, m(pv, [](double v) { return std::sqrt(v); }));
  check_math(aj::rsqrt(p), dims, m(pv, [](double v) { return 1.0 / std::sqrt(v); }));
}

TEST_CASE_TEMPLATE("abs sign floor ceil round of floats", T, float, double) {
  const Dims dims{30};
  auto xv = random_values<T>(30, 181, -6.0, 6.0);
  Array x = make(xv, dims);
  check_values(aj::abs(x), dims, map1(xv, [](T v) { return std::fabs(v); }));
  check_values(aj::sign(x), dims, map1(xv, [](T v) { return v > 0 ? T(1) : T(-1); }));
  check_values(aj::floor(x), dims, map1(xv, [](T v) { return std::floor(v); }));
  check_values(aj::ceil(x), dims, map1(xv, [](T v) { return std::ceil(v); }));
  // Random values are not exact halves: round to nearest (halves: test_semantics).
  check_values(aj::round(x), dims, map1(xv, [](T v) {
                 T f = std::floor(v);
                 return (v - f) < T(0.5) ? f : T(f + 1);
               }));
}

TEST_CASE_TEMPLATE("abs sign floor ceil round of integers keep the integer dtype", T, i32, i64) {
  const Dims dims{2, 10};
  auto xv = random_values<T>(20, 191, -20, 20);
  Array x = make(xv, dims);
  check_values(aj::abs(x), dims, map1(xv, [](T v) { return v < 0 ? T(-v) : v; }));
  check_values(aj::sign(x), dims, map1(xv, [](T v) { return T(v > 0 ? 1 : v < 0 ? -1 : 0); }));
  check_values(aj::floor(x), dims, xv);
  check_values(aj::ceil(x), dims, xv);
  check_values(aj::round(x), dims, xv);
  check_values(aj::sign(make(std::vector<T>{0, 5, -5}, {3})), {3}, std::vector<T>{0, 1, -1});
}

// ---- compound assignment ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE("compound assignment += -= *= /= %= rebinds to the new values", T, i32, i64, float,
                   double) {
  const Dims dims{3, 4};
  auto xv = random_values<T>(12, 201);
  auto yv = random_values<T>(12, 202);
  Array x = make(xv, dims), y = make(yv, dims);
  Array before = x;  // a second handle to the old value
  std::vector<T> want = xv;

  x += y;
  for (std::size_t i = 0; i < 12; ++i) want[i] = T(want[i] + yv[i]);
  check_values(x, dims, want);
  x -= 3;
  for (auto& v : want) v = T(v - T(3));
  check_values(x, dims, want);
  x *= y;
  for (std::size_t i = 0; i < 12; ++i) want[i] = T(want[i] * yv[i]);
  check_values(x, dims, want);
  x /= y;
  for (std::size_t i = 0; i < 12; ++i) want[i] = div_ref(want[i], yv[i]);
  check_values(x, dims, want);
  x %= 5;
  for (auto& v : want) v = mod_ref(v, T(5));
  check_values(x, dims, want);
  x += y;  // lazily chained, evaluated once at the end
  x *= 2;
  x -= y;
  for (std::size_t i = 0; i < 12; ++i) want[i] = T(T(T(want[i] + yv[i]) * T(2)) - yv[i]);
  check_values(x, dims, want);

  // The other handles never change.
  check_values(before, dims, xv);
  check_values(y, dims, yv);
}

TEST_CASE("compound assignment with a broadcast right-hand side") {
  auto xv = random_values<double>(12, 211);
  auto rv = random_values<double>(4, 212);
  Array x = make(xv, {3, 4});
  Array r = make(rv, {4});
  x += r;
  std::vector<double> want;
  for (std::size_t i = 0; i < 12; ++i) want.push_back(xv[i] + rv[i % 4]);
  check_values(x, {3, 4}, want);
}

// ---- broadcasting ------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("(3,1) with (1,4) broadcasts to (3,4)", T, i32, i64, float, double) {
  auto av = random_values<T>(3, 221);
  auto bv = random_values<T>(4, 222);
  Array a = make(av, {3, 1}), b = make(bv, {1, 4});
  std::vector<T> sum, diff, q;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      sum.push_back(T(av[i] + bv[j]));
      diff.push_back(T(av[i] - bv[j]));
      q.push_back(div_ref(av[i], bv[j]));
    }
  }
  check_values(a + b, {3, 4}, sum);
  check_values(a - b, {3, 4}, diff);
  check_values(a / b, {3, 4}, q);
  // Reversed: (1,4) - (3,1), element (i, j) = b[j] - a[i].
  std::vector<T> rdiff;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) rdiff.push_back(T(bv[j] - av[i]));
  check_values(b - a, {3, 4}, rdiff);
}

TEST_CASE("(5,) with (2,1,5) broadcasts to (2,1,5), and (3,1,5) with (4,1) to (3,4,5)") {
  auto av = random_values<i64>(5, 231);
  auto bv = random_values<i64>(10, 232);
  Array a = make(av, {5}), b = make(bv, {2, 1, 5});
  std::vector<i64> want;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 5; ++k) want.push_back(av[k] * bv[i * 5 + k]);
  check_values(a * b, {2, 1, 5}, want);
  check_values(b * a, {2, 1, 5}, want);

  auto cv = random_values<float>(15, 233);
  auto dv = random_values<float>(4, 234);
  Array c = make(cv, {3, 1, 5}), d = make(dv, {4, 1});
  std::vector<float> w2;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) w2.push_back(cv[i * 5 + k] - dv[j]);
  check_values(c - d, {3, 4, 5}, w2);
}

TEST_CASE_TEMPLATE("rank-0 arrays broadcast against anything", T, i32, i64, float, double) {
  T s = random_values<T>(1, 241)[0];
  Array r = make(std::vector<T>{s}, {});
  CHECK(r.ndim() == 0);
  auto xv = random_values<T>(6, 242);
  Array x = make(xv, {2, 3});
  check_values(r + x, {2, 3}, map1(xv, [&](T v) { return T(s + v); }));
  check_values(x - r, {2, 3}, map1(xv, [&](T v) { return T(v - s); }));
  check_values(r * r, {}, std::vector<T>{T(s * s)});
  check_values(r + 1, {}, std::vector<T>{T(s + T(1))});
  check_values(-r, {}, std::vector<T>{T(-s)});
  CHECK((r * r).template item<T>() == T(s * s));
  // rank 0 with an empty array gives an empty array.
  Array e = make(std::vector<T>{}, {0});
  check_values(r + e, {0}, std::vector<T>{});
  check_values(e * r, {0}, std::vector<T>{});
  // rank 0 with a (1,1,1) array gives (1,1,1).
  Array one = make(std::vector<T>{T(2)}, {1, 1, 1});
  check_values(r * one, {1, 1, 1}, std::vector<T>{T(s * T(2))});
}

TEST_CASE_TEMPLATE("size-0 extents broadcast against 1 and give empty results", T, bool, i32, i64,
                   float, double) {
  Array e03 = make(std::vector<T>{}, {0, 3});
  Array row = make(random_values<T>(3, 251), {1, 3});
  Array col = make(random_values<T>(3, 252), {3, 1});
  Array e30 = make(std::vector<T>{}, {3, 0});
  Array e0 = make(std::vector<T>{}, {0});
  Array one = make(random_values<T>(1, 253), {1});
  if constexpr (std::is_same_v<T, bool>) {
    check_values(e03 && row, {0, 3}, std::vector<bool>{});
    check_values(col || e30, {3, 0}, std::vector<bool>{});
    check_values(!e0, {0}, std::vector<bool>{});
  } else {
    check_values(e03 + row, {0, 3}, std::vector<T>{});
    check_values(row * e03, {0, 3}, std::vector<T>{});
    check_values(e30 - col, {3, 0}, std::vector<T>{});
    check_values(e0 / one, {0}, std::vector<T>{});
    check_values(-e0, {0}, std::vector<T>{});
    check_values(e0 + 5, {0}, std::vector<T>{});
    check_values(aj::exp(e03).astype(DType::f64), {0, 3}, std::vector<double>{});
    // (2,0,1) with (1,5): (2,0,5)
    Array e201 = make(std::vector<T>{}, {2, 0, 1});
    Array r15 = make(random_values<T>(5, 254), {1, 5});
    check_values(aj::maximum(e201, r15), {2, 0, 5}, std::vector<T>{});
  }
  check_values(e03 == row, {0, 3}, std::vector<bool>{});
  check_values(aj::where(e03 == row, e03, row), {0, 3}, std::vector<T>{});
}

TEST_CASE("an array broadcast against itself through different shapes") {
  // x (4,) and x reshaped to (4,1): (4,4) outer difference.
  auto xv = random_values<double>(4, 261);
  Array x = make(xv, {4});
  Array d = aj::reshape(x, {4, 1}) - x;
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(xv[i] - xv[j]);
  check_values(d, {4, 4}, want);
}

// ---- strided views as operands ---------------------------------------------------------------------

TEST_CASE_TEMPLATE("transpose(slice(broadcast_to(x))) works as an operand", T, i32, i64, float, double) {
  auto bv = random_values<T>(30, 271);
  Array base = make(bv, {5, 6});
  Array b = aj::broadcast_to(base, {2, 5, 6});
  // s[0][i][j] = base[4 - 2i][1 + 2j], shape (1, 3, 3)
  Array s = aj::slice(b, {Slice(1, 2), Slice(4, nullopt, -2), Slice(1, 6, 2)});
  CHECK(s.shape() == Shape{1, 3, 3});
  Array t = aj::transpose(s);  // t[j][i][0] = base[4 - 2i][1 + 2j], shape (3, 3, 1)
  CHECK(t.shape() == Shape{3, 3, 1});
  auto ov = random_values<T>(9, 272);
  Array other = make(ov, {3, 3, 1});
  std::vector<T> sum, prod, mx;
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 3; ++i) {
      T v = bv[(4 - 2 * i) * 6 + (1 + 2 * j)];
      T o = ov[j * 3 + i];
      sum.push_back(T(v + o));
      prod.push_back(T(o * v));
      mx.push_back(v > o ? v : o);
    }
  }
  check_values(t + other, {3, 3, 1}, sum);
  check_values(other * t, {3, 3, 1}, prod);
  check_values(aj::maximum(t, other), {3, 3, 1}, mx);
  // The view against a broadcast row: (3,3,1) with (4,) -> (3,3,4).
  auto rv = random_values<T>(4, 273);
  Array row = make(rv, {4});
  std::vector<T> w;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k) w.push_back(T(bv[(4 - 2 * i) * 6 + (1 + 2 * j)] - rv[k]));
  check_values(t - row, {3, 3, 4}, w);
  // The base is unchanged.
  check_values(base, {5, 6}, bv);
}

TEST_CASE_TEMPLATE("negative-step slices as operands read backwards", T, i32, i64, float, double) {
  auto xv = random_values<T>(8, 281);
  Array x = make(xv, {8});
  Array rev = aj::slice(x, 0, nullopt, nullopt, -1);
  std::vector<T> want;
  for (int i = 0; i < 8; ++i) want.push_back(T(xv[7 - i] - xv[i]));
  check_values(rev - x, {8}, want);
  // Every second element from the end: indices 7, 5, 3, 1 against 0, 2, 4, 6.
  Array odd_rev = aj::slice(x, 0, 7, nullopt, -2);
  Array even = aj::slice(x, 0, 0, nullopt, 2);
  std::vector<T> w2;
  for (int i = 0; i < 4; ++i) w2.push_back(T(xv[7 - 2 * i] * xv[2 * i]));
  check_values(odd_rev * even, {4}, w2);

  // 2-D, both axes reversed, against the transpose of the original.
  auto mv = random_values<T>(16, 282);
  Array m = make(mv, {4, 4});
  Array mr = aj::slice(m, {Slice(nullopt, nullopt, -1), Slice(nullopt, nullopt, -1)});
  Array mt = aj::transpose(m);
  std::vector<T> w3;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) w3.push_back(T(mv[(3 - i) * 4 + (3 - j)] + mv[j * 4 + i]));
  check_values(mr + mt, {4, 4}, w3);
  // A unary op and a comparison on a reversed view.
  check_values(-mr, {4, 4}, [&] {
    std::vector<T> r;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) r.push_back(T(-mv[(3 - i) * 4 + (3 - j)]));
    return r;
  }());
  check_values(mr > mt, {4, 4}, [&] {
    std::vector<bool> r;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) r.push_back(mv[(3 - i) * 4 + (3 - j)] > mv[j * 4 + i]);
    return r;
  }());
}

TEST_CASE("a view of the result of an op is an operand of the next op") {
  auto av = random_values<float>(12, 291);
  Array a = make(av, {3, 4});
  Array b = aj::transpose(a * 2.0f);  // (4, 3)
  Array c = aj::slice(b, 0, 3, nullopt, -1) + 1.0f;  // rows 3, 2, 1, 0 of b
  std::vector<float> want;
  for (int r = 3; r >= 0; --r)
    for (int k = 0; k < 3; ++k) want.push_back(av[k * 4 + r] * 2.0f + 1.0f);
  check_values(c, {4, 3}, want);
}

// ---- result dtypes ----------------------------------------------------------------------------------

TEST_CASE("promote_types follows NumPy for every pair of dtypes") {
  const DType b = DType::bool_, i = DType::i32, l = DType::i64, f = DType::f32, d = DType::f64;
  const DType all[] = {b, i, l, f, d};
  // want[x][y], rows/cols in the order bool, i32, i64, f32, f64.
  const DType want[5][5] = {
      {b, i, l, f, d},
      {i, i, l, d, d},
      {l, l, l, d, d},
      {f, d, d, f, d},
      {d, d, d, d, d},
  };
  for (int x = 0; x < 5; ++x) {
    for (int y = 0; y < 5; ++y) {
      CAPTURE(x);
      CAPTURE(y);
      CHECK(aj::promote_types(all[x], all[y]) == want[x][y]);
    }
  }
}

TEST_CASE("array-array promotion: i32+i64 -> i64, i32+f32 -> f64, bool+i32 -> i32, f32+f64 -> f64") {
  auto iv = random_values<i32>(6, 301);
  auto lv = random_values<i64>(6, 302);
  auto fv = random_values<float>(6, 303);
  auto dv = random_values<double>(6, 304);
  auto bv = random_values<bool>(6, 305);
  Array ai = make(iv, {6}), al = make(lv, {6}), af = make(fv, {6}), ad = make(dv, {6}),
        ab = make(bv, {6});
  check_values(ai + al, {6}, map2<i64>(iv, lv, [](i32 x, i64 y) { return i64(x) + y; }));
  check_values(al * ai, {6}, map2<i64>(lv, iv, [](i64 x, i32 y) { return x * i64(y); }));
  check_values(ai + af, {6}, map2<double>(iv, fv, [](i32 x, float y) { return double(x) + double(y); }));
  check_values(af - al, {6}, map2<double>(fv, lv, [](float x, i64 y) { return double(x) - double(y); }));
  check_values(ab + ai, {6}, map2<i32>(bv, iv, [](bool x, i32 y) { return i32(x) + y; }));
  check_values(ai * ab, {6}, map2<i32>(iv, bv, [](i32 x, bool y) { return x * i32(y); }));
  check_values(ab - al, {6}, map2<i64>(bv, lv, [](bool x, i64 y) { return i64(x) - y; }));
  check_values(af + ab, {6}, map2<float>(fv, bv, [](float x, bool y) { return x + float(y); }));
  check_values(af + ad, {6}, map2<double>(fv, dv, [](float x, double y) { return double(x) + y; }));
  check_values(ad / af, {6}, map2<double>(dv, fv, [](double x, float y) { return x / double(y); }));
  // Integer division of mixed integer dtypes is floor division in i64.
  check_values(ai / al, {6}, map2<i64>(iv, lv, [](i32 x, i64 y) { return floordiv_ref(i64(x), y); }));
  // maximum and where promote the same way.
  check_values(aj::maximum(ai, af), {6},
               map2<double>(iv, fv, [](i32 x, float y) { return std::max(double(x), double(y)); }));
  check_values(aj::minimum(ab, ai), {6}, map2<i32>(bv, iv, [](bool x, i32 y) { return std::min(i32(x), y); }));
}

TEST_CASE("weak scalars: f32*2.0 stays f32, i32+1 stays i32, i32+2.5 -> f64, bool+1 -> i64") {
  auto iv = random_values<i32>(5, 311);
  auto lv = random_values<i64>(5, 312);
  auto fv = random_values<float>(5, 313);
  auto dv = random_values<double>(5, 314);
  auto bv = random_values<bool>(5, 315);
  Array ai = make(iv, {5}), al = make(lv, {5}), af = make(fv, {5}), ad = make(dv, {5}),
        ab = make(bv, {5});

  check_values(af * 2.0, {5}, map1(fv, [](float v) { return v * 2.0f; }));
  // 0.1 becomes the f32 nearest 0.1 (f32 math, as NumPy's weak scalars).
  check_values(af + 0.1, {5}, map1(fv, [](float v) { return v + 0.1f; }));
  check_values(af + 3, {5}, map1(fv, [](float v) { return v + 3.0f; }));
  check_values(ai + 1, {5}, map1(iv, [](i32 v) { return v + 1; }));
  check_values(1 - ai, {5}, map1(iv, [](i32 v) { return 1 - v; }));
  check_values(ai * i64{4}, {5}, map1(iv, [](i32 v) { return v * 4; }));
  check_values(al + 1, {5}, map1(lv, [](i64 v) { return v + 1; }));
  check_values(ai + 2.5, {5}, map2<double>(iv, iv, [](i32 v, i32) { return double(v) + 2.5; }));
  check_values(al * 0.5, {5}, map2<double>(lv, lv, [](i64 v, i64) { return double(v) * 0.5; }));
  check_values(ai * 2.0f, {5}, map2<double>(iv, iv, [](i32 v, i32) { return double(v) * 2.0; }));
  check_values(ab + 1, {5}, map2<i64>(bv, bv, [](bool v, bool) { return i64(v) + 1; }));
  check_values(ab * 2.5, {5}, map2<double>(bv, bv, [](bool v, bool) { return double(v) * 2.5; }));
  check_values(ai + true, {5}, map1(iv, [](i32 v) { return v + 1; }));
  check_values(ad - 1, {5}, map1(dv, [](double v) { return v - 1.0; }));
  check_values(ab && true, {5}, bv);
  // Two scalars: the first sets the type, the second is weak against it.
  check_values(aj::add(1, 2.5), {}, std::vector<double>{3.5});
  check_values(aj::add(1, 2), {}, std::vector<i64>{3});
  check_values(aj::multiply(1.5, 2), {}, std::vector<double>{3.0});
  check_values(aj::negative(3), {}, std::vector<i64>{-3});
}

TEST_CASE("comparisons give bool for every operand dtype") {
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    CAPTURE(t);
    Array a = aj::ones({3}, t), b = aj::zeros({3}, t);
    CHECK((a == b).dtype() == DType::bool_);
    CHECK((a != b).dtype() == DType::bool_);
    CHECK((a < b).dtype() == DType::bool_);
    CHECK((a <= 1).dtype() == DType::bool_);
    CHECK((2.5 > a).dtype() == DType::bool_);
    CHECK((a >= b).dtype() == DType::bool_);
    check_values(a > b, {3}, std::vector<bool>(3, true));
  }
}

TEST_CASE("math functions: exp(i32) -> f64, exp(f32) -> f32; abs/sign/floor keep the dtype") {
  Array i = aj::ones({2}, DType::i32), l = aj::ones({2}, DType::i64);
  Array f = aj::ones({2}, DType::f32), d = aj::ones({2}, DType::f64);
  CHECK(aj::exp(i).dtype() == DType::f64);
  CHECK(aj::exp(l).dtype() == DType::f64);
  CHECK(aj::exp(f).dtype() == DType::f32);
  CHECK(aj::exp(d).dtype() == DType::f64);
  CHECK(aj::sqrt(i).dtype() == DType::f64);
  CHECK(aj::sigmoid(f).dtype() == DType::f32);
  CHECK(aj::abs(i).dtype() == DType::i32);
  CHECK(aj::sign(l).dtype() == DType::i64);
  CHECK(aj::floor(i).dtype() == DType::i32);
  CHECK(aj::round(f).dtype() == DType::f32);
  CHECK((-i).dtype() == DType::i32);
  CHECK(aj::true_divide(i, i).dtype() == DType::f64);
  CHECK(aj::true_divide(f, 2).dtype() == DType::f32);
  CHECK(aj::floor_divide(i, 2).dtype() == DType::i32);
  CHECK(aj::floor_divide(f, 2).dtype() == DType::f32);
  CHECK(aj::pow(i, 2).dtype() == DType::i32);
  CHECK(aj::pow(i, 0.5).dtype() == DType::f64);
  // A scalar argument alone: integers default to i64, then f64 for math.
  check_values(aj::exp(1), {}, std::vector<double>{std::exp(1.0)});
  check_values(aj::exp(1.0f), {}, std::vector<double>{std::exp(double(1.0f))});
  check_values(aj::sqrt(i * 4), {2}, std::vector<double>{2.0, 2.0});
}

TEST_CASE("chains of ops over all dtypes agree with a plain loop") {
  // A longer expression that mixes dtypes, broadcasting, scalars and where.
  auto iv = random_values<i32>(12, 321);
  auto fv = random_values<float>(4, 322);
  Array a = make(iv, {3, 4});
  Array f = make(fv, {4});
  Array e = aj::where(a > 0, a * 2 + 1, -a) + f * 0.5 - aj::abs(f);  // i32 with f32 -> f64
  std::vector<double> want;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      i32 v = iv[r * 4 + c];
      i32 w = v > 0 ? v * 2 + 1 : -v;
      float h = fv[c] * 0.5f;
      want.push_back((double(w) + double(h)) - double(std::fabs(fv[c])));
    }
  }
  check_values(e, {3, 4}, want);
}

// A new elementwise op in arrayjit/ops.def needs its API line in arrayjit/array.hpp
// (AJ_UNARY_FUNCTIONS / AJ_BINARY_FUNCTIONS): this fails until it has one.
// Cast is astype; comparisons and logic are operators.
TEST_CASE("every unary and arithmetic binary op of the op table has its API function") {
  std::vector<aj::Op> listed;
#define AJ_LISTED(function, op) listed.push_back(aj::Op::op);
  AJ_UNARY_FUNCTIONS(AJ_LISTED)
  AJ_BINARY_FUNCTIONS(AJ_LISTED)
#undef AJ_LISTED
  for (int o = 0; o < aj::kNumOps; ++o) {
    const auto op = static_cast<aj::Op>(o);
    const bool unary = aj::op_category(op) == aj::OpCategory::Unary && op != aj::Op::Cast;
    // (random_bits is random::bits of a Key, arrayjit/random.hpp: not an elementwise function)
    const bool binary = aj::op_category(op) == aj::OpCategory::Binary && !aj::is_compare(op) &&
                        !aj::op_has(op, aj::opflag::Logical) && op != aj::Op::RandomBits;
    if (!unary && !binary) continue;
    CAPTURE(std::string(aj::op_name(op)));
    CHECK(std::count(listed.begin(), listed.end(), op) == 1);
  }
  // ... and each API function its C function (arrayjit.h's lists).
  std::vector<std::string> in_c, in_cpp;
#define AJ_NAME_C(function) in_c.push_back(#function);
#define AJ_NAME_CPP(function, op) in_cpp.push_back(#function);
  AJ_UNARY_OPS(AJ_NAME_C)
  AJ_BINARY_OPS(AJ_NAME_C)
  AJ_UNARY_FUNCTIONS(AJ_NAME_CPP)
  AJ_BINARY_FUNCTIONS(AJ_NAME_CPP)
#undef AJ_NAME_C
#undef AJ_NAME_CPP
  for (const std::string& f : in_cpp) {
    CAPTURE(f);
    CHECK(std::count(in_c.begin(), in_c.end(), f) == 1);
  }
}

}  // TEST_SUITE

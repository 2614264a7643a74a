// The rules of docs/semantics.md, one test each: integer division and modulo,
// wrapping overflow, NaN and signed zeros in max/min, rounding, conversions,
// integer pow, empty and rank-0 arrays. Expected values are written out by
// hand (or computed with plain C++ on the same inputs).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "base/semantics.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using i32 = std::int32_t;
using i64 = std::int64_t;
using Dims = std::vector<i64>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
Array make(const std::vector<T>& v, const Dims& dims) {
  return aj::from_vector(v, Shape(dims));
}
template <class T>
Array vec(const std::vector<T>& v) {
  return aj::from_vector(v);
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
void check_values(const Array& a, const std::vector<T>& want) {
  REQUIRE(a.dtype() == aj::dtype_of<T>);
  REQUIRE(a.size() == static_cast<i64>(want.size()));
  std::vector<T> got = a.template to_vector<T>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    T g = got[i], w = want[i];
    if constexpr (std::is_floating_point_v<T>) {
      CHECK_MESSAGE(same_value(g, w), "element " << i << ": got " << g << ", want " << w << " (got sign bit "
                                                  << std::signbit(g) << ", want " << std::signbit(w) << ")");
    } else {
      CHECK_MESSAGE(same_value(g, w), "element " << i << ": got " << g << ", want " << w);
    }
  }
}

template <class T>
std::vector<T> random_ints(std::size_t n, unsigned seed, i64 lo, i64 hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<i64> d(lo, hi);
  std::vector<T> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(static_cast<T>(d(rng)));
  return v;
}

// Wrapping arithmetic computed through unsigned types (independent of the library).
template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

}  // namespace

TEST_SUITE("semantics") {

// ---- integer division and modulo --------------------------------------------------------

TEST_CASE_TEMPLATE("integer / is floor division: -7/2 == -4, 7/-2 == -4", T, i32, i64) {
  Array a = vec<T>({-7, 7, 7, -7, 6, -6, 0, 1, -1});
  Array b = vec<T>({2, -2, 2, -2, 3, 4, 5, 3, 3});
  check_values(a / b, std::vector<T>{-4, -4, 3, 3, 2, -2, 0, 0, -1});
  check_values(aj::divide(a, b), std::vector<T>{-4, -4, 3, 3, 2, -2, 0, 0, -1});
  check_values(aj::floor_divide(a, b), std::vector<T>{-4, -4, 3, 3, 2, -2, 0, 0, -1});
  // With scalars on either side.
  check_values(vec<T>({-7, 7}) / 2, std::vector<T>{-4, 3});
  check_values(-7 / vec<T>({2, -2}), std::vector<T>{-4, 3});
  // Random operands against floor() of the exact quotient.
  auto av = random_ints<T>(200, 1, -1000, 1000);
  auto bv = random_ints<T>(200, 2, 1, 37);
  for (std::size_t i = 0; i < bv.size(); i += 2) bv[i] = static_cast<T>(-bv[i]);
  std::vector<T> q, r;
  for (std::size_t i = 0; i < av.size(); ++i) {
    T qq = static_cast<T>(std::floor(double(av[i]) / double(bv[i])));
    q.push_back(qq);
    r.push_back(static_cast<T>(av[i] - qq * bv[i]));
  }
  check_values(vec(av) / vec(bv), q);
  check_values(vec(av) % vec(bv), r);
}

TEST_CASE_TEMPLATE("integer % has the divisor's sign: -7 % 3 == 2, 7 % -3 == -2", T, i32, i64) {
  Array a = vec<T>({-7, 7, 7, -7, 6, -6, 0, 5});
  Array b = vec<T>({3, -3, 3, -3, 3, -4, 5, 7});
  check_values(a % b, std::vector<T>{2, -2, 1, -1, 0, -2, 0, 5});
  check_values(aj::mod(a, b), std::vector<T>{2, -2, 1, -1, 0, -2, 0, 5});
  check_values(vec<T>({-7, 7}) % 3, std::vector<T>{2, 1});
  check_values(-7 % vec<T>({3, -3}), std::vector<T>{2, -1});
}

TEST_CASE_TEMPLATE("integer division and modulo by zero give 0", T, i32, i64) {
  Array a = vec<T>({7, -7, 0, std::numeric_limits<T>::max(), std::numeric_limits<T>::min()});
  Array z = vec<T>({0, 0, 0, 0, 0});
  check_values(a / z, std::vector<T>{0, 0, 0, 0, 0});
  check_values(a % z, std::vector<T>{0, 0, 0, 0, 0});
  check_values(a / 0, std::vector<T>{0, 0, 0, 0, 0});
  check_values(a % 0, std::vector<T>{0, 0, 0, 0, 0});
  check_values(aj::floor_divide(a, z), std::vector<T>{0, 0, 0, 0, 0});
  // Mixed: only the zero divisors give 0.
  check_values(vec<T>({9, 9, -9}) / vec<T>({0, 2, 0}), std::vector<T>{0, 4, 0});
  check_values(vec<T>({9, 9, -9}) % vec<T>({0, 2, 0}), std::vector<T>{0, 1, 0});
}

TEST_CASE_TEMPLATE("INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 == 0", T, i32, i64) {
  constexpr T mn = std::numeric_limits<T>::min();
  constexpr T mx = std::numeric_limits<T>::max();
  Array a = vec<T>({mn, mn, mx, -5});
  Array m1 = vec<T>({-1, -1, -1, -1});
  check_values(a / m1, std::vector<T>{mn, mn, T(-mx), 5});
  check_values(a % m1, std::vector<T>{0, 0, 0, 0});
  check_values(a / -1, std::vector<T>{mn, mn, T(-mx), 5});
  check_values(a % -1, std::vector<T>{0, 0, 0, 0});
  // INT_MIN / 1 and INT_MIN % 1 are ordinary.
  check_values(vec<T>({mn}) / 1, std::vector<T>{mn});
  check_values(vec<T>({mn}) % 1, std::vector<T>{0});
  // INT_MIN // 2 and % 3 (floor toward -inf).
  check_values(vec<T>({mn}) / 2, std::vector<T>{T(mn / 2)});
  check_values(vec<T>({mn}) % 3, std::vector<T>{T(((mn % 3) + 3) % 3)});
}

// ---- wrapping overflow ------------------------------------------------------------------------

TEST_CASE_TEMPLATE("signed overflow wraps: MAX + 1 == MIN, MIN - 1 == MAX, multiplication wraps", T,
                   i32, i64) {
  constexpr T mn = std::numeric_limits<T>::min();
  constexpr T mx = std::numeric_limits<T>::max();
  Array hi = vec<T>({mx, mx, mx});
  Array lo = vec<T>({mn, mn, mn});
  check_values(hi + 1, std::vector<T>{mn, mn, mn});
  check_values(1 + hi, std::vector<T>{mn, mn, mn});
  check_values(hi + vec<T>({1, 2, mx}), std::vector<T>{mn, T(mn + 1), T(-2)});
  check_values(lo - 1, std::vector<T>{mx, mx, mx});
  check_values(lo - vec<T>({1, 2, mx}), std::vector<T>{mx, T(mx - 1), T(1)});
  check_values(lo + lo, std::vector<T>{0, 0, 0});
  check_values(hi * 2, std::vector<T>{T(-2), T(-2), T(-2)});
  check_values(-lo, std::vector<T>{mn, mn, mn});
  check_values(aj::negative(lo), std::vector<T>{mn, mn, mn});
  // 2^(bits/2) squared wraps to 0.
  constexpr T half = T(T(1) << (sizeof(T) * 4));
  check_values(vec<T>({half}) * vec<T>({half}), std::vector<T>{0});
  // Random large products against unsigned arithmetic.
  auto av = random_ints<T>(64, 3, mn / 2, mx / 2);
  auto bv = random_ints<T>(64, 4, mn / 2, mx / 2);
  std::vector<T> prod, sum;
  for (std::size_t i = 0; i < av.size(); ++i) {
    prod.push_back(wrap_mul(av[i], bv[i]));
    sum.push_back(wrap_add(wrap_add(av[i], bv[i]), wrap_add(av[i], bv[i])));
  }
  check_values(vec(av) * vec(bv), prod);
  Array s = vec(av) + vec(bv);
  check_values(s + s, sum);
}

TEST_CASE("integer sum and prod wrap; bool and i32 accumulate in i64") {
  constexpr i64 mx = std::numeric_limits<i64>::max();
  check_values(aj::sum(vec<i64>({mx, 1})), std::vector<i64>{std::numeric_limits<i64>::min()});
  check_values(aj::prod(vec<i64>({i64{1} << 32, i64{1} << 32})), std::vector<i64>{0});
  // i32 sums do not wrap at 32 bits: they accumulate in i64.
  constexpr i32 m32 = std::numeric_limits<i32>::max();
  check_values(aj::sum(vec<i32>({m32, m32, 2})), std::vector<i64>{i64{m32} * 2 + 2});
  check_values(aj::prod(vec<i32>({65536, 65536})), std::vector<i64>{i64{1} << 32});
  check_values(aj::sum(vec<bool>({true, true, false, true})), std::vector<i64>{3});
}

// ---- floating point modulo, NaN, signed zeros --------------------------------------------------

TEST_CASE_TEMPLATE("float % has the divisor's sign, and a zero remainder takes it too", T, float,
                   double) {
  Array a = vec<T>({-7.5, 7.5, 7.5, -7.5, 5.0, -4.0, 4.0, -4.0, 0.25});
  Array b = vec<T>({2.0, -2.0, 2.0, -2.0, 2.5, 2.0, -2.0, -2.0, 1.0});
  // NumPy: np.mod(-7.5, 2) == 0.5, np.mod(7.5, -2) == -0.5, np.mod(-4.0, 2.0) == 0.0,
  // np.mod(4.0, -2.0) == -0.0.
  check_values(a % b, std::vector<T>{0.5, -0.5, 1.5, -1.5, 0.0, 0.0, T(-0.0), T(-0.0), 0.25});
  check_values(vec<T>({-1.0, 1.0}) % 3.0, std::vector<T>{2.0, 1.0});
  check_values(1.0 % vec<T>({-3.0, 3.0}), std::vector<T>{-2.0, 1.0});
}

TEST_CASE_TEMPLATE("float division by zero follows IEEE: inf, -inf, NaN", T, float, double) {
  Array a = vec<T>({1.0, -1.0, 0.0});
  check_values(a / vec<T>({0.0, 0.0, 0.0}),
               std::vector<T>{T(kInf), T(-kInf), T(kNaN)});
  check_values(a / T(-0.0), std::vector<T>{T(-kInf), T(kInf), T(kNaN)});
}

TEST_CASE_TEMPLATE("maximum and minimum propagate NaN from either side", T, float, double) {
  const T n = T(kNaN);
  Array a = vec<T>({n, 1.0, n, -2.0, 3.0});
  Array b = vec<T>({1.0, n, n, -3.0, T(kInf)});
  check_values(aj::maximum(a, b), std::vector<T>{n, n, n, -2.0, T(kInf)});
  check_values(aj::minimum(a, b), std::vector<T>{n, n, n, -3.0, 3.0});
  check_values(aj::maximum(a, 0.0), std::vector<T>{n, 1.0, n, 0.0, 3.0});
  check_values(aj::minimum(0.0, a), std::vector<T>{n, 0.0, n, -2.0, 0.0});
  check_values(aj::clip(a, -1.0, 1.0), std::vector<T>{n, 1.0, n, -1.0, 1.0});
}

TEST_CASE_TEMPLATE("reduction max and min propagate NaN", T, float, double) {
  const T n = T(kNaN);
  Array a = make<T>({1.0, 5.0, n, 2.0, -1.0, 7.0, 0.5, 3.0}, {2, 4});
  check_values(aj::max(a), std::vector<T>{n});
  check_values(aj::min(a), std::vector<T>{n});
  // Along axis 1: only row 0 has a NaN.
  check_values(aj::max(a, 1), std::vector<T>{n, 7.0});
  check_values(aj::min(a, 1), std::vector<T>{n, -1.0});
  // Along axis 0: only column 2 has a NaN.
  check_values(aj::max(a, 0), std::vector<T>{1.0, 7.0, n, 3.0});
  check_values(aj::min(a, 0), std::vector<T>{-1.0, 5.0, n, 2.0});
  // NaN first and last.
  check_values(aj::max(vec<T>({n, 1.0, 2.0})), std::vector<T>{n});
  check_values(aj::min(vec<T>({1.0, 2.0, n})), std::vector<T>{n});
}

TEST_CASE_TEMPLATE("maximum(-0.0, +0.0) is +0.0 and minimum is -0.0, in either order", T, float,
                   double) {
  Array neg = vec<T>({T(-0.0), 0.0});
  Array pos = vec<T>({0.0, T(-0.0)});
  check_values(aj::maximum(neg, pos), std::vector<T>{0.0, 0.0});
  check_values(aj::minimum(neg, pos), std::vector<T>{T(-0.0), T(-0.0)});
  check_values(aj::maximum(neg, 0.0), std::vector<T>{0.0, 0.0});
  check_values(aj::minimum(0.0, neg), std::vector<T>{T(-0.0), 0.0});
  check_values(aj::maximum(neg, -0.0), std::vector<T>{T(-0.0), 0.0});
  // Reductions order the zeros the same way.
  check_values(aj::max(vec<T>({T(-0.0), 0.0, T(-0.0)})), std::vector<T>{0.0});
  check_values(aj::min(vec<T>({0.0, T(-0.0), 0.0})), std::vector<T>{T(-0.0)});
  CHECK(std::signbit(aj::min(vec<T>({0.0, T(-0.0)})).template item<T>()));
  CHECK_FALSE(std::signbit(aj::max(vec<T>({T(-0.0), 0.0})).template item<T>()));
}

TEST_CASE_TEMPLATE("argmax and argmin return the first NaN, and the first of ties", T, float, double) {
  const T n = T(kNaN);
  check_values(aj::argmax(vec<T>({1.0, n, 5.0, n})), std::vector<i64>{1});
  check_values(aj::argmin(vec<T>({1.0, n, -5.0, n})), std::vector<i64>{1});
  check_values(aj::argmax(vec<T>({9.0, 2.0, 3.0, n})), std::vector<i64>{3});
  check_values(aj::argmin(vec<T>({n, -2.0, n})), std::vector<i64>{0});
  check_values(aj::argmax(vec<T>({3.0, 5.0, 5.0, 1.0})), std::vector<i64>{1});
  check_values(aj::argmin(vec<T>({3.0, 1.0, 5.0, 1.0})), std::vector<i64>{1});
  // Per row: row 0 has a NaN at column 2, row 1 has none.
  Array m = make<T>({4.0, 1.0, n, 9.0, 0.0, 7.0, 7.0, -1.0}, {2, 4});
  check_values(aj::argmax(m, 1), std::vector<i64>{2, 1});
  check_values(aj::argmin(m, 1), std::vector<i64>{2, 3});
}

TEST_CASE_TEMPLATE("NaN compares unequal to everything, itself included", T, float, double) {
  const T n = T(kNaN);
  Array a = vec<T>({n, n, 1.0});
  Array b = vec<T>({n, 1.0, n});
  check_values(a == b, std::vector<bool>{false, false, false});
  check_values(a != b, std::vector<bool>{true, true, true});
  check_values(a < b, std::vector<bool>{false, false, false});
  check_values(a >= b, std::vector<bool>{false, false, false});
  check_values(a == a, std::vector<bool>{false, false, true});
}

// ---- rounding, sign ------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("round is half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0.0", T, float,
                   double) {
  Array a = vec<T>({0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49, 2.51, -0.2, T(-0.0)});
  check_values(aj::round(a),
               std::vector<T>{0.0, 2.0, 2.0, 4.0, T(-0.0), -2.0, -2.0, 0.0, 3.0, T(-0.0), T(-0.0)});
  CHECK(std::signbit(aj::round(vec<T>({-0.5})).template item<T>()));
  // floor and ceil keep the sign of zero results too: ceil(-0.5) == -0.0.
  check_values(aj::ceil(vec<T>({-0.5, 0.5})), std::vector<T>{T(-0.0), 1.0});
  check_values(aj::floor(vec<T>({-0.5, 0.5})), std::vector<T>{-1.0, 0.0});
}

TEST_CASE_TEMPLATE("sign is 1 or -1, and keeps -0.0, +0.0 and NaN", T, float, double) {
  Array a = vec<T>({T(-0.0), 0.0, T(kNaN), -3.5, 2.0, T(kInf), T(-kInf), T(1e-30)});
  check_values(aj::sign(a), std::vector<T>{T(-0.0), 0.0, T(kNaN), -1.0, 1.0, 1.0, -1.0, 1.0});
  CHECK(std::signbit(aj::sign(vec<T>({T(-0.0)})).template item<T>()));
}

TEST_CASE_TEMPLATE("abs(INT_MIN) == INT_MIN; floor, ceil, round of integers change nothing", T, i32,
                   i64) {
  constexpr T mn = std::numeric_limits<T>::min();
  constexpr T mx = std::numeric_limits<T>::max();
  Array a = vec<T>({mn, mx, -3, 0, 4});
  check_values(aj::abs(a), std::vector<T>{mn, mx, 3, 0, 4});
  check_values(aj::floor(a), std::vector<T>{mn, mx, -3, 0, 4});
  check_values(aj::ceil(a), std::vector<T>{mn, mx, -3, 0, 4});
  check_values(aj::round(a), std::vector<T>{mn, mx, -3, 0, 4});
  check_values(aj::sign(a), std::vector<T>{-1, 1, -1, 0, 1});
}

// ---- integer pow --------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("integer pow with a negative exponent: 2**-1 == 0, 1**-5 == 1, (-1)**-3 == -1", T,
                   i32, i64) {
  Array b = vec<T>({2, 1, -1, -1, 0, 5, -2, 3});
  Array e = vec<T>({-1, -5, -3, -2, -1, -2, -1, 0});
  check_values(aj::pow(b, e), std::vector<T>{0, 1, -1, 1, 0, 0, 0, 1});
  check_values(aj::pow(b, -1), std::vector<T>{0, 1, -1, -1, 0, 0, 0, 0});
  // 0 ** 0 == 1, as NumPy.
  check_values(aj::pow(vec<T>({0}), vec<T>({0})), std::vector<T>{1});
}

TEST_CASE_TEMPLATE("integer pow wraps on overflow", T, i32, i64) {
  constexpr int bits = sizeof(T) * 8;
  check_values(aj::pow(vec<T>({2, 2, -2}), vec<T>({bits - 1, bits, bits - 1})),
               std::vector<T>{std::numeric_limits<T>::min(), 0, std::numeric_limits<T>::min()});
  // 3 ** 45 wraps; compare with repeated unsigned multiplication.
  T want = 1;
  for (int k = 0; k < 45; ++k) want = wrap_mul(want, T(3));
  check_values(aj::pow(vec<T>({3}), 45), std::vector<T>{want});
  T want7 = 1;
  for (int k = 0; k < 33; ++k) want7 = wrap_mul(want7, T(-7));
  check_values(aj::pow(vec<T>({-7}), 33), std::vector<T>{want7});
}

// ---- conversions --------------------------------------------------------------------------------

TEST_CASE("astype float -> int truncates toward zero, saturates, and maps NaN to 0") {
  constexpr i32 mn32 = std::numeric_limits<i32>::min(), mx32 = std::numeric_limits<i32>::max();
  constexpr i64 mn64 = std::numeric_limits<i64>::min(), mx64 = std::numeric_limits<i64>::max();
  Array d = vec<double>({2.7, -2.7, 0.999, -0.999, 1e20, -1e20, kNaN, kInf, -kInf, -0.0,
                         2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0});
  check_values(d.astype(DType::i32),
               std::vector<i32>{2, -2, 0, 0, mx32, mn32, 0, mx32, mn32, 0, mx32, mx32, mn32, mn32});
  check_values(d.astype(DType::i64),
               std::vector<i64>{2, -2, 0, 0, mx64, mn64, 0, mx64, mn64, 0, 2147483647, 2147483648, -2147483648LL,
                                -2147483649LL});
  check_values(vec<double>({1e300, -1e300, 9223372036854775808.0, -9223372036854775808.0})
                   .astype(DType::i64),
               std::vector<i64>{mx64, mn64, mx64, mn64});
  // From f32: 2^31 as a float saturates, -2^31 is exact.
  Array f = vec<float>({2147483648.0f, -2147483648.0f, 3.9f, -3.9f, std::nanf("")});
  check_values(f.astype(DType::i32), std::vector<i32>{mx32, mn32, 3, -3, 0});
  check_values(f.astype(DType::i64), std::vector<i64>{2147483648LL, -2147483648LL, 3, -3, 0});
  // to_vector converts with the same rules.
  CHECK(d.to_vector<i32>() ==
        std::vector<i32>{2, -2, 0, 0, mx32, mn32, 0, mx32, mn32, 0, mx32, mx32, mn32, mn32});
}

TEST_CASE("astype integer -> narrower integer wraps; int -> float rounds to nearest") {
  Array a = vec<i64>({4294967297LL, 2147483648LL, -2147483649LL, -1, 123});
  check_values(a.astype(DType::i32), std::vector<i32>{1, std::numeric_limits<i32>::min(),
                                                      std::numeric_limits<i32>::max(), -1, 123});
  check_values(vec<i32>({16777217, -3}).astype(DType::f32), std::vector<float>{16777216.0f, -3.0f});
  check_values(vec<i64>({(1LL << 53) + 1}).astype(DType::f64), std::vector<double>{9007199254740992.0});
  check_values(vec<bool>({true, false}).astype(DType::i32), std::vector<i32>{1, 0});
  check_values(vec<bool>({true, false}).astype(DType::f64), std::vector<double>{1.0, 0.0});
}

TEST_CASE("astype to bool is != 0, and NaN is true") {
  check_values(vec<double>({0.0, -0.0, 2.5, kNaN, -1e-300, kInf}).astype(DType::bool_),
               std::vector<bool>{false, false, true, true, true, true});
  check_values(vec<float>({0.0f, 0.5f, std::nanf("")}).astype(DType::bool_),
               std::vector<bool>{false, true, true});
  check_values(vec<i32>({0, 5, -1, std::numeric_limits<i32>::min()}).astype(DType::bool_),
               std::vector<bool>{false, true, true, true});
  check_values(vec<i64>({0, 1LL << 40}).astype(DType::bool_), std::vector<bool>{false, true});
}

// ---- the integer rules by kind -------------------------------------------------------------------
// base/semantics.hpp chooses between signed and unsigned rules by the C++
// type (the kind a dtype row's type has); no dtype of the table is unsigned
// yet, so these call the semantics directly, as a u8 or u16 row would.

TEST_CASE_TEMPLATE("unsigned integer rules: saturating casts, wrapping, C division, identities", T, unsigned char,
                   unsigned short, unsigned, unsigned long long) {
  namespace sem = aj::sem;
  using aj::Op;
  constexpr T mx = std::numeric_limits<T>::max();
  CHECK(sem::int_max<T>() == mx);
  CHECK(sem::int_min<T>() == T(0));
  // Float -> unsigned: truncates; negative values 0; 2^n and above the largest; NaN 0.
  CHECK(sem::convert<T>(200.0) == T(200));
  CHECK(sem::convert<T>(200.9f) == T(200));
  CHECK(sem::convert<T>(-1.0) == T(0));
  CHECK(sem::convert<T>(-0.5) == T(0));
  CHECK(sem::convert<T>(1e30) == mx);
  CHECK(sem::convert<T>(-kInf) == T(0));
  CHECK(sem::convert<T>(kNaN) == T(0));
  CHECK(sem::convert<T>(std::ldexp(1.0, 8 * sizeof(T))) == mx);  // 2^n
  if constexpr (sizeof(T) == 1) CHECK(sem::convert<T>(300.0) == T(255));
  // Integer -> unsigned wraps; unsigned -> wider or float keeps the value.
  CHECK(sem::convert<T>(-1) == mx);
  CHECK(sem::convert<unsigned long long>(mx) == static_cast<unsigned long long>(mx));
  if constexpr (sizeof(T) < 8) CHECK(sem::convert<i64>(mx) == static_cast<i64>(mx));
  CHECK(sem::convert<double>(T(200)) == 200.0);
  if constexpr (sizeof(T) < 8) CHECK(static_cast<float>(sem::convert<aj::f16>(T(200))) == 200.0f);  // (u64: not yet)
  // Wrapping + - * and unary minus (2^n - x, as NumPy); no signed overflow
  // inside (u16 * u16 would overflow an int).
  CHECK(sem::binary(Op::Sub, T(0), T(1)) == mx);
  CHECK(sem::binary(Op::Add, mx, T(1)) == T(0));
  CHECK(sem::binary(Op::Mul, mx, mx) == T(1));
  CHECK(sem::unary(Op::Neg, T(1)) == mx);
  CHECK(sem::unary(Op::Abs, mx) == mx);
  CHECK(sem::unary(Op::Sign, T(0)) == T(0));
  CHECK(sem::unary(Op::Sign, mx) == T(1));
  // Division and modulo: C's (nothing is negative), by zero 0.
  CHECK(sem::binary(Op::Div, T(200), T(7)) == T(28));
  CHECK(sem::binary(Op::Mod, T(200), T(7)) == T(4));
  CHECK(sem::binary(Op::Div, mx, T(0)) == T(0));
  CHECK(sem::binary(Op::Mod, mx, T(0)) == T(0));
  CHECK(sem::binary(Op::Div, mx, mx) == T(1));  // mx is no -1
  CHECK(sem::binary(Op::Pow, T(3), T(6)) == static_cast<T>(729u));
  CHECK(sem::binary(Op::Pow, T(2), T(8 * sizeof(T))) == T(0));
  // Compares and max/min are unsigned: the largest value is no -1.
  CHECK(sem::compare(Op::Gt, mx, T(1)));
  CHECK(sem::binary(Op::Max, mx, T(1)) == mx);
  CHECK(sem::binary(Op::Min, mx, T(1)) == T(1));
  CHECK(sem::arg_better(Op::ArgMax, mx, T(1)));
  // Reductions: max starts from 0, min from the largest value.
  CHECK(sem::reduce_identity<T>(Op::ReduceMax) == T(0));
  CHECK(sem::reduce_identity<T>(Op::ReduceMin) == mx);
}

TEST_CASE_TEMPLATE("signed integer limits and saturation of any width", T, signed char, short, i32, i64) {
  namespace sem = aj::sem;
  CHECK(sem::int_max<T>() == std::numeric_limits<T>::max());
  CHECK(sem::int_min<T>() == std::numeric_limits<T>::min());
  CHECK(sem::convert<T>(1e30) == std::numeric_limits<T>::max());
  CHECK(sem::convert<T>(-1e30) == std::numeric_limits<T>::min());
  CHECK(sem::convert<T>(-1.9) == T(-1));
  CHECK(sem::reduce_identity<T>(aj::Op::ReduceMax) == std::numeric_limits<T>::min());
  CHECK(sem::binary(aj::Op::Div, T(-7), T(2)) == T(-4));
  CHECK(sem::binary(aj::Op::Mul, std::numeric_limits<T>::max(), T(2)) == T(-2));
}

// ---- signed zeros survive -----------------------------------------------------------------------

TEST_CASE_TEMPLATE("-0.0 survives negation, x*1.0, x-0.0, x/1 and copies; -0.0 + 0.0 is +0.0", T, float,
                   double) {
  Array z = vec<T>({0.0});
  Array nz = aj::negative(z);
  check_values(nz, std::vector<T>{T(-0.0)});
  CHECK(std::signbit(nz.template item<T>()));
  check_values(-z, std::vector<T>{T(-0.0)});
  Array m = vec<T>({T(-0.0)});
  check_values(m * 1.0, std::vector<T>{T(-0.0)});
  check_values(1.0 * m, std::vector<T>{T(-0.0)});
  check_values(m - 0.0, std::vector<T>{T(-0.0)});
  check_values(m / 1.0, std::vector<T>{T(-0.0)});
  check_values(m * -1.0, std::vector<T>{0.0});
  check_values(aj::abs(m), std::vector<T>{0.0});
  // IEEE: -0.0 + 0.0 == +0.0, so x + 0.0 must not be simplified to x.
  check_values(m + 0.0, std::vector<T>{0.0});
  check_values(0.0 + m, std::vector<T>{0.0});
  check_values(m + m, std::vector<T>{T(-0.0)});
  // Through views and other dtypes.
  check_values(aj::reshape(m, {1, 1}) * 1.0, std::vector<T>{T(-0.0)});
  check_values(m.astype(DType::f64), std::vector<double>{-0.0});
  check_values(aj::sqrt(m), std::vector<T>{T(-0.0)});
  // Printing -0.0 keeps the sign.
  std::ostringstream os;
  os << m;
  CHECK(os.str().find("-0") != std::string::npos);
  std::ostringstream pos;
  pos << (m + 0.0);
  CHECK(pos.str().find("-0") == std::string::npos);
}

// ---- empty arrays --------------------------------------------------------------------------------

TEST_CASE("empty arrays work through elementwise ops and keep their shapes") {
  Array e = make(std::vector<float>{}, {0});
  Array e2 = make(std::vector<i32>{}, {2, 0, 3});
  CHECK(e.size() == 0);
  check_values(e + 1.0f, std::vector<float>{});
  check_values(aj::exp(e) * e, std::vector<float>{});
  check_values(e2 / 2, std::vector<i32>{});
  check_values(aj::where(e2 > 0, e2, -e2), std::vector<i32>{});
  CHECK((e2 * 3.5).shape() == Shape{2, 0, 3});
  CHECK((e2 * 3.5).dtype() == DType::f64);
  CHECK(aj::transpose(e2).shape() == Shape{3, 0, 2});
  CHECK((e2.astype(DType::f32) + make(std::vector<float>{1, 2, 3}, {3})).to_vector<float>().empty());
}

TEST_CASE("reductions of empty arrays: sum 0, prod 1, all true, any false") {
  Array ef = make(std::vector<double>{}, {0});
  Array ei = make(std::vector<i32>{}, {0});
  Array eb = make(std::vector<bool>{}, {0});
  check_values(aj::sum(ef), std::vector<double>{0.0});
  check_values(aj::prod(ef), std::vector<double>{1.0});
  check_values(aj::sum(ei), std::vector<i64>{0});
  check_values(aj::prod(ei), std::vector<i64>{1});
  check_values(aj::all(eb), std::vector<bool>{true});
  check_values(aj::any(eb), std::vector<bool>{false});
  check_values(aj::all(ef), std::vector<bool>{true});
  check_values(aj::any(ei), std::vector<bool>{false});
  CHECK(aj::sum(ef).ndim() == 0);
  // Reducing the empty axis of a (3, 0) array gives three identities.
  Array e30 = make(std::vector<float>{}, {3, 0});
  check_values(aj::sum(e30, 1), std::vector<float>{0, 0, 0});
  check_values(aj::prod(e30, 1), std::vector<float>{1, 1, 1});
  check_values(aj::all(e30, 1), std::vector<bool>{true, true, true});
  check_values(aj::any(e30, -1), std::vector<bool>{false, false, false});
  // Reducing the non-empty axis gives an empty result.
  check_values(aj::sum(e30, 0), std::vector<float>{});
  CHECK(aj::sum(e30, 0).shape() == Shape{0});
  // max over a non-empty axis of an empty array is empty, not an error.
  CHECK(aj::max(e30, 0).shape() == Shape{0});
  check_values(aj::max(e30, 0), std::vector<float>{});
}

TEST_CASE("mean of an empty axis is NaN") {
  Array e = make(std::vector<double>{}, {0});
  check_values(aj::mean(e), std::vector<double>{kNaN});
  Array e03 = make(std::vector<float>{}, {0, 3});
  check_values(aj::mean(e03, 0), std::vector<float>{std::nanf(""), std::nanf(""), std::nanf("")});
  Array ei = make(std::vector<i32>{}, {2, 0});
  check_values(aj::mean(ei, 1), std::vector<double>{kNaN, kNaN});
  CHECK(aj::mean(ei, 0).shape() == Shape{0});
}

// ---- rank-0 arrays -----------------------------------------------------------------------------

TEST_CASE("rank-0 arrays have one element, and item reads it") {
  Array s = make(std::vector<double>{2.5}, {});
  CHECK(s.ndim() == 0);
  CHECK(s.size() == 1);
  CHECK(s.shape() == Shape{});
  CHECK(s.item<double>() == 2.5);
  CHECK(s.item<i32>() == 2);  // converted with astype's rules
  Array t = s * s + 1.0;
  CHECK(t.ndim() == 0);
  CHECK(t.item<double>() == 7.25);
  Array i = make(std::vector<i64>{-9}, {});
  CHECK((i / 2).item<i64>() == -5);
  CHECK((i % 4).item<i64>() == 3);
  CHECK(aj::sum(i).item<i64>() == -9);
  CHECK(aj::sum(i).ndim() == 0);
  CHECK(aj::max(s).item<double>() == 2.5);
  CHECK(aj::argmax(s).item<i64>() == 0);
  // Reductions over every axis give rank 0.
  Array m = make(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Array r = aj::sum(m);
  CHECK(r.ndim() == 0);
  CHECK(r.item<float>() == 21.0f);
  CHECK(aj::sum(m, {0, 1}).ndim() == 0);
  CHECK(aj::mean(m).item<float>() == 3.5f);
  CHECK(aj::all(m > 0.0f).item<bool>());
  CHECK_FALSE(aj::any(m > 6.0f).item<bool>());
  // A rank-0 result of a comparison.
  CHECK((s > 2.0).item<bool>());
  CHECK((s > 2.0).ndim() == 0);
}

}  // TEST_SUITE

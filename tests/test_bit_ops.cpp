// Bit operations (ops.def BitAnd, BitOr, BitXor, BitNot, LeftShift,
// RightShift; C++ operators & | ^ ~ << >>; the C functions from the op
// table): against hand loops on random integers, NumPy's shift rule at the
// edges (a count outside [0, width) shifts everything out; -1 for a right
// shift of a negative value), bools as logic, and floats refused.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using aj::Array;
using aj::DType;

template <class T>
std::vector<T> random_ints(std::mt19937_64& rng, std::size_t n) {
  std::uniform_int_distribution<std::int64_t> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

// NumPy's npy_lshift / npy_rshift.
template <class T>
T lshift(T a, T b) {
  return static_cast<std::uint64_t>(b) < sizeof(T) * 8 ? static_cast<T>(static_cast<std::uint64_t>(a) << b) : T(0);
}
template <class T>
T rshift(T a, T b) {
  if (static_cast<std::uint64_t>(b) < sizeof(T) * 8) return static_cast<T>(a >> b);
  return a < 0 ? T(-1) : T(0);
}

template <class T>
void check_type(DType t, std::mt19937_64& rng) {
  const std::size_t n = 257;
  const std::vector<T> a = random_ints<T>(rng, n), b = random_ints<T>(rng, n);
  std::vector<T> counts(n);
  std::uniform_int_distribution<int> c(-3, static_cast<int>(sizeof(T) * 8) + 3);  // edges included
  for (T& x : counts) x = static_cast<T>(c(rng));
  const Array x = aj::from_vector<T>(a), y = aj::from_vector<T>(b), s = aj::from_vector<T>(counts);
  REQUIRE(x.dtype() == t);
  const auto band = (x & y).template to_vector<T>(), bor = (x | y).template to_vector<T>();
  const auto bxor = (x ^ y).template to_vector<T>(), bnot = (~x).template to_vector<T>();
  const auto shl = (x << s).template to_vector<T>(), shr = (x >> s).template to_vector<T>();
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(band[i] == static_cast<T>(a[i] & b[i]));
    CHECK(bor[i] == static_cast<T>(a[i] | b[i]));
    CHECK(bxor[i] == static_cast<T>(a[i] ^ b[i]));
    CHECK(bnot[i] == static_cast<T>(~a[i]));
    CHECK(shl[i] == lshift(a[i], counts[i]));
    CHECK(shr[i] == rshift(a[i], counts[i]));
  }
  // The same through the interpreter (the JIT off) and with a scalar.
  aj::jit::set_enabled(false);
  const auto shl2 = (x << s).template to_vector<T>();
  aj::jit::set_enabled(true);
  CHECK(shl2 == shl);
  const auto masked = (x & 0xff).template to_vector<T>();
  for (std::size_t i = 0; i < n; ++i) CHECK(masked[i] == static_cast<T>(a[i] & 0xff));
}

}  // namespace

TEST_CASE("bit ops: & | ^ ~ << >> on i32 and i64 as C++ computes them, shifts by NumPy's rule") {
  std::mt19937_64 rng(53);
  check_type<std::int32_t>(DType::i32, rng);
  check_type<std::int64_t>(DType::i64, rng);
  // NumPy's results at the edges, written out (np.left_shift(np.int32(1), 33) == 0, ...).
  const Array one = aj::full({}, 1, DType::i32), m8 = aj::full({}, -8, DType::i64);
  CHECK((one << 33).item<std::int32_t>() == 0);
  CHECK((one << 31).item<std::int32_t>() == std::numeric_limits<std::int32_t>::min());
  CHECK((m8 >> 40).item<std::int64_t>() == -1);
  CHECK((m8 >> 64).item<std::int64_t>() == -1);
  CHECK((m8 >> -1).item<std::int64_t>() == -1);
  CHECK((aj::full({}, 3, DType::i64) << -1).item<std::int64_t>() == 0);
  CHECK((aj::full({}, 8, DType::i64) >> -1).item<std::int64_t>() == 0);
  CHECK((~aj::full({}, 5, DType::i32)).item<std::int32_t>() == -6);
}

TEST_CASE("bit ops: bools are logic; a shift of bools is one of i64; floats are refused") {
  const Array p = aj::from_vector<bool>({true, true, false, false}), q = aj::from_vector<bool>({true, false, true, false});
  auto bools = [](const Array& a) {
    REQUIRE(a.dtype() == DType::bool_);
    return a.astype(DType::i32).to_vector<std::int32_t>();
  };
  CHECK(bools(p & q) == std::vector<std::int32_t>{1, 0, 0, 0});
  CHECK(bools(p | q) == std::vector<std::int32_t>{1, 1, 1, 0});
  CHECK(bools(p ^ q) == std::vector<std::int32_t>{0, 1, 1, 0});
  CHECK(bools(~p) == std::vector<std::int32_t>{0, 0, 1, 1});
  const Array sh = p << q;
  CHECK(sh.dtype() == DType::i8);  // NumPy's int8
  CHECK(sh.to_vector<std::int8_t>() == std::vector<std::int8_t>{2, 1, 0, 0});
  const Array f = aj::ones({3}, DType::f32);
  CHECK_THROWS_WITH_AS(f & aj::ones({3}, DType::i32), doctest::Contains("bitwise_and"), aj::Error);
  CHECK_THROWS_WITH_AS(f & aj::ones({3}, DType::i32), doctest::Contains("integer"), aj::Error);
  CHECK_THROWS_WITH_AS(~f, doctest::Contains("test_bit_ops.cpp"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::arange(4) << 1.5, doctest::Contains("left_shift"), aj::Error);
  // Not differentiable: integer results; grad through a float path around them is unaffected.
  const Array x = aj::from_vector<double>({1.0, 2.0});
  const Array g = aj::grad([](const Array& v) { return aj::sum(v * (aj::arange(2) & 1).astype(DType::f64)); })(x);
  CHECK(g.to_vector<double>() == std::vector<double>{0.0, 1.0});
}

TEST_CASE("c api: the bit operations come from the op table's lists") {
  const aj_array a = aj::to_c(aj::from_vector<std::int32_t>({12, 10})), b = aj::to_c(aj::from_vector<std::int32_t>({10, 3}));
  aj_array r[6] = {};
  REQUIRE(aj_bitwise_and(a, b, &r[0]) == AJ_OK);
  REQUIRE(aj_bitwise_or(a, b, &r[1]) == AJ_OK);
  REQUIRE(aj_bitwise_xor(a, b, &r[2]) == AJ_OK);
  REQUIRE(aj_bitwise_invert(a, &r[3]) == AJ_OK);
  REQUIRE(aj_left_shift(a, b, &r[4]) == AJ_OK);
  REQUIRE(aj_right_shift(a, b, &r[5]) == AJ_OK);
  const std::vector<std::vector<std::int32_t>> want = {{8, 2}, {14, 11}, {6, 9}, {-13, -11}, {12288, 80}, {0, 1}};
  for (int i = 0; i < 6; ++i) CHECK(aj::from_c(r[i]).to_vector<std::int32_t>() == want[static_cast<std::size_t>(i)]);
  const std::string names = aj_op_names(AJ_OPS_BINARY);
  CHECK(names.find("bitwise_xor") != std::string::npos);
  CHECK(names.find("right_shift") != std::string::npos);
  for (aj_array h : {a, b, r[0], r[1], r[2], r[3], r[4], r[5]}) CHECK(aj_array_release(h) == AJ_OK);
}

// The narrow and unsigned integer dtypes (dtypes.def: u8 i8 i16 u16 u32 u64)
// and gcd/lcm: every elementwise op, cast, reduction, scan and product of
// each against hand loops written with NumPy's rules (wrapping arithmetic,
// floor division and modulo with x / 0 = 0, saturating float -> integer
// casts as docs/semantics.md says), on the host JIT and on the interpreter;
// promotion facts; printing; .npy, safetensors, DLPack and C API round trips.
// NumPy itself checks every promotion pair (test_numpy_oracle.cpp) and the
// random programs of the oracle tier draw these dtypes.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/dlpack.hpp>

#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;

// Values across T's whole range, with its edges mixed in.
template <class T>
std::vector<T> random_values(std::mt19937_64& rng, std::size_t n) {
  using L = std::numeric_limits<T>;
  const T edges[] = {L::min(), L::max(), T(0), T(1), static_cast<T>(L::max() / 2 + 1), static_cast<T>(L::min() + 1)};
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng();
    if (r % 7 == 0) v[i] = edges[(r >> 8) % std::size(edges)];
    else if (r % 7 == 1) v[i] = static_cast<T>(static_cast<std::int64_t>((r >> 8) % 41) - 20);  // small, signs
    else v[i] = static_cast<T>(r >> 3);                                                         // any bits
  }
  return v;
}

// NumPy's integer rules, computed in 64 bits and cast (two's complement).
template <class T> T w(std::uint64_t v) { return static_cast<T>(v); }
template <class T> std::uint64_t u(T v) { return static_cast<std::uint64_t>(v); }
template <class T> T floordiv(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return w<T>(0 - u(a));  // MIN / -1 wraps to MIN
    T q = static_cast<T>(a / b);
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    return static_cast<T>(a / b);
  }
}
template <class T> T mod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return 0;
    T r = static_cast<T>(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}
template <class T> std::uint64_t magnitude(T a) {
  if constexpr (std::is_signed_v<T>) return a < 0 ? 0 - u(a) : u(a);
  else return a;
}
template <class T> T gcd(T a, T b) {
  std::uint64_t x = magnitude(a), y = magnitude(b);
  while (y) {
    const std::uint64_t r = x % y;
    x = y;
    y = r;
  }
  return w<T>(x);
}
template <class T> T lcm(T a, T b) {
  const std::uint64_t g = u(gcd(a, b)) & (std::numeric_limits<std::uint64_t>::max() >> (64 - 8 * sizeof(T)));
  if (g == 0) return 0;
  return w<T>(magnitude(a) / g * magnitude(b));
}

// What NumPy's sum, prod and cumsum of T accumulate in: int64 for the signed
// integers narrower than it, uint64 for the unsigned ones.
template <class T> using acc_t = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;

template <class T>
void check_dtype(DType t, std::mt19937_64& rng) {
  CAPTURE(aj::dtype_name(t));
  const std::size_t n = 515;
  const std::vector<T> a = random_values<T>(rng, n), b = random_values<T>(rng, n);
  const Array x = aj::from_vector<T>(a), y = aj::from_vector<T>(b);
  REQUIRE(x.dtype() == t);
  REQUIRE(aj::itemsize(t) == sizeof(T));
  ajtest::on_both([&] {
    const auto add = (x + y).template to_vector<T>(), sub = (x - y).template to_vector<T>();
    const auto mul = (x * y).template to_vector<T>(), div = (x / y).template to_vector<T>();
    const auto md = (x % y).template to_vector<T>(), mx = aj::maximum(x, y).template to_vector<T>();
    const auto mn = aj::minimum(x, y).template to_vector<T>(), neg = (-x).template to_vector<T>();
    const auto ab = aj::abs(x).template to_vector<T>(), g = aj::gcd(x, y).template to_vector<T>();
    const auto l = aj::lcm(x, y).template to_vector<T>(), band = (x & y).template to_vector<T>();
    const auto bxor = (x ^ y).template to_vector<T>(), bnot = (~x).template to_vector<T>();
    const auto lt = (x < y).template to_vector<bool>(), eq = (x == y).template to_vector<bool>();
    const auto sq = aj::square(x).template to_vector<T>();
    for (std::size_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CAPTURE(+a[i]);
      CAPTURE(+b[i]);
      CHECK(add[i] == w<T>(u(a[i]) + u(b[i])));
      CHECK(sub[i] == w<T>(u(a[i]) - u(b[i])));
      CHECK(mul[i] == w<T>(u(a[i]) * u(b[i])));
      CHECK(div[i] == floordiv(a[i], b[i]));
      CHECK(md[i] == mod(a[i], b[i]));
      CHECK(mx[i] == std::max(a[i], b[i]));
      CHECK(mn[i] == std::min(a[i], b[i]));
      CHECK(neg[i] == w<T>(0 - u(a[i])));
      CHECK(ab[i] == w<T>(magnitude(a[i])));
      CHECK(g[i] == gcd(a[i], b[i]));
      CHECK(l[i] == lcm(a[i], b[i]));
      CHECK(band[i] == static_cast<T>(a[i] & b[i]));
      CHECK(bxor[i] == static_cast<T>(a[i] ^ b[i]));
      CHECK(bnot[i] == static_cast<T>(~a[i]));
      CHECK(lt[i] == (a[i] < b[i]));
      CHECK(eq[i] == (a[i] == b[i]));
      CHECK(sq[i] == w<T>(u(a[i]) * u(a[i])));
    }
    // Casts: to floats rounded once from the integer; from f64 truncated
    // toward zero and saturated (NaN to 0); between integers wrapped.
    const auto to_f64 = x.astype(DType::f64).template to_vector<double>();
    const auto to_f32 = x.astype(DType::f32).template to_vector<float>();
    const auto to_i64 = x.astype(DType::i64).template to_vector<std::int64_t>();
    const auto to_u8 = x.astype(DType::u8).template to_vector<std::uint8_t>();
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(to_f64[i] == static_cast<double>(a[i]));
      CHECK(to_f32[i] == static_cast<float>(a[i]));
      CHECK(to_i64[i] == static_cast<std::int64_t>(a[i]));
      CHECK(to_u8[i] == static_cast<std::uint8_t>(a[i]));
    }
    using L = std::numeric_limits<T>;
    const std::vector<double> f = {-1e30, -300.7, -1.5, -0.5, 0.0, 0.9, 2.5, 200.9, 70000.2, 5e9, 1e30, NAN};
    const auto from_f = aj::from_vector<double>(f).astype(t).template to_vector<T>();
    for (std::size_t i = 0; i < f.size(); ++i) {
      CAPTURE(f[i]);
      const T want = std::isnan(f[i])                               ? T(0)
                     : f[i] <= static_cast<double>(L::min())        ? L::min()
                     : f[i] >= static_cast<double>(L::max())        ? L::max()
                                                                    : static_cast<T>(f[i]);
      CHECK(from_f[i] == want);
    }
    // Reductions and scans: sums in NumPy's accumulator dtype (wrapping),
    // max/min and argmax in T.
    const Array s = aj::sum(x), c = aj::cumsum(x, 0);
    CHECK(s.dtype() == aj::dtype_of<acc_t<T>>);
    CHECK(c.dtype() == aj::dtype_of<acc_t<T>>);
    CHECK(aj::max(x).dtype() == t);
    acc_t<T> total = 0;
    std::size_t arg = 0;
    const auto cs = c.template to_vector<acc_t<T>>();
    for (std::size_t i = 0; i < n; ++i) {
      total = static_cast<acc_t<T>>(u(total) + u(static_cast<acc_t<T>>(a[i])));
      CHECK(cs[i] == total);
      if (a[i] > a[arg]) arg = i;
    }
    CHECK(s.template item<acc_t<T>>() == total);
    CHECK(aj::max(x).template item<T>() == a[arg]);
    CHECK(aj::argmax(x).template item<std::int64_t>() == static_cast<std::int64_t>(arg));
    CHECK(aj::min(x).template item<T>() == *std::min_element(a.begin(), a.end()));
  });
  // A product of matrices keeps T and wraps (NumPy's matmul of integers).
  const std::int64_t m = 7, k = 9, p = 5;
  const std::vector<T> ma = random_values<T>(rng, m * k), mb = random_values<T>(rng, k * p);
  ajtest::on_both([&] {
    const Array r = aj::matmul(aj::from_vector<T>(ma, {m, k}), aj::from_vector<T>(mb, {k, p}));
    REQUIRE(r.dtype() == t);
    const auto got = r.template to_vector<T>();
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < p; ++j) {
        std::uint64_t acc = 0;
        for (std::int64_t q = 0; q < k; ++q) acc += u(ma[i * k + q]) * u(mb[q * p + j]);
        CHECK(got[i * p + j] == w<T>(acc));
      }
    }
  });
}

}  // namespace

TEST_CASE("integer dtypes: u8 i8 i16 u16 u32 u64 compute as NumPy's on both executors") {
  std::mt19937_64 rng(35);
  check_dtype<std::uint8_t>(DType::u8, rng);
  check_dtype<std::int8_t>(DType::i8, rng);
  check_dtype<std::int16_t>(DType::i16, rng);
  check_dtype<std::uint16_t>(DType::u16, rng);
  check_dtype<std::uint32_t>(DType::u32, rng);
  check_dtype<std::uint64_t>(DType::u64, rng);
  // gcd and lcm of i32/i64 too (the dtypes that were there before).
  check_dtype<std::int32_t>(DType::i32, rng);
  check_dtype<std::int64_t>(DType::i64, rng);
}

TEST_CASE("integer dtypes: NumPy's promotion, weak scalars and the dtypes of bool operations") {
  using aj::promote_types;
  CHECK(promote_types(DType::u8, DType::i8) == DType::i16);
  CHECK(promote_types(DType::u16, DType::i16) == DType::i32);
  CHECK(promote_types(DType::u32, DType::i32) == DType::i64);
  CHECK(promote_types(DType::u64, DType::i64) == DType::f64);
  CHECK(promote_types(DType::u64, DType::i8) == DType::f64);
  CHECK(promote_types(DType::u8, DType::u64) == DType::u64);
  CHECK(promote_types(DType::u8, DType::f16) == DType::f16);
  CHECK(promote_types(DType::i16, DType::f16) == DType::f32);
  CHECK(promote_types(DType::u32, DType::f32) == DType::f64);
  CHECK(promote_types(DType::bool_, DType::u8) == DType::u8);
  // A weak scalar keeps the array's dtype when it fits (NEP 50) and is an
  // error naming the dtype when it does not (no wrap, no widening).
  const Array x = aj::from_vector<std::uint8_t>({250, 3, 7});
  CHECK((x + 10).dtype() == DType::u8);
  CHECK((x + 10).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{4, 13, 17});
  CHECK((x * 2.5).dtype() == DType::f64);
  try {
    (void)(x + 300);
    FAIL("no error for a scalar beyond u8");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("300 does not fit the dtype u8") != std::string::npos);
  }
  CHECK_THROWS_AS((void)(x - (-1)), aj::Error);
  const Array big = aj::full({2}, std::numeric_limits<std::uint64_t>::max(), DType::u64);
  CHECK(big.to_vector<std::uint64_t>()[1] == std::numeric_limits<std::uint64_t>::max());
  CHECK((big - 1u).to_vector<std::uint64_t>()[0] == std::numeric_limits<std::uint64_t>::max() - 1);
  // Bools: and/or/xor stay logic; shifts, gcd and lcm are int8 (NumPy's).
  const Array tb = aj::from_vector<bool>({true, false, true});
  CHECK((tb & tb).dtype() == DType::bool_);
  CHECK((tb << tb).dtype() == DType::i8);
  CHECK((tb << tb).to_vector<std::int8_t>() == std::vector<std::int8_t>{2, 0, 2});
  CHECK(aj::gcd(tb, tb).dtype() == DType::i8);
  CHECK_THROWS_AS((void)aj::gcd(aj::ones({2}, DType::f32), aj::ones({2}, DType::f32)), aj::Error);
  // Sums of u32 go to u64, of i16 to i64; mean to f64.
  CHECK(aj::sum(aj::ones({3}, DType::u32)).dtype() == DType::u64);
  CHECK(aj::sum(aj::ones({3}, DType::i16)).dtype() == DType::i64);
  CHECK(aj::mean(aj::ones({3}, DType::u16)).dtype() == DType::f64);
}

TEST_CASE("integer dtypes: NumPy's gcd/lcm at the edges, shifts of narrow integers") {
  // np.gcd(np.int8(-128), np.int8(0)) == -128 (|MIN| wraps), np.lcm(np.int16(300), np.int16(256)) wraps.
  const Array a = aj::from_vector<std::int8_t>({-128, -12, 0, 0, 7, -9});
  const Array b = aj::from_vector<std::int8_t>({0, 18, 0, 5, -21, -6});
  CHECK(aj::gcd(a, b).to_vector<std::int8_t>() == std::vector<std::int8_t>{-128, 6, 0, 5, 7, 3});
  CHECK(aj::lcm(a, b).to_vector<std::int8_t>() == std::vector<std::int8_t>{0, 36, 0, 0, 21, 18});
  CHECK(aj::lcm(aj::full({}, 300, DType::i16), aj::full({}, 256, DType::i16)).item<std::int16_t>() ==
        static_cast<std::int16_t>(19200));
  // A count of the width or more, or negative, shifts everything out.
  const Array one = aj::full({3}, 1, DType::u8);
  const Array counts = aj::from_vector<std::uint8_t>({7, 8, 200});
  CHECK((one << counts).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{128, 0, 0});
  const Array m = aj::full({3}, -128, DType::i8);
  const Array sc = aj::from_vector<std::int8_t>({7, 8, -1});
  CHECK((m >> sc).to_vector<std::int8_t>() == std::vector<std::int8_t>{-1, -1, -1});
}

TEST_CASE("integer dtypes: printed as NumPy, kept by .npy, safetensors, DLPack and the C API") {
  const Array x = aj::from_vector<std::uint16_t>({0, 65535, 7}, {3});
  std::ostringstream os;
  os << x;
  CHECK(os.str().find("dtype=u16") != std::string::npos);
  CHECK(os.str().find("[    0, 65535,     7]") != std::string::npos);  // (NumPy's repr: python/tests)
  const auto dir = std::filesystem::temp_directory_path() / ("aj_int_dtypes_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(7);
  for (DType t : {DType::u8, DType::i8, DType::i16, DType::u16, DType::u32, DType::u64}) {
    CAPTURE(aj::dtype_name(t));
    const Array v = aj::from_vector<std::uint64_t>(random_values<std::uint64_t>(rng, 12), {3, 4}).astype(t).eval();
    const auto want = v.astype(DType::u64).to_vector<std::uint64_t>();
    aj::save((dir / "a.npy").string(), v);
    const Array back = aj::load((dir / "a.npy").string());
    CHECK(back.dtype() == t);
    CHECK(back.astype(DType::u64).to_vector<std::uint64_t>() == want);
    aj::save_safetensors((dir / "a.st").string(), {{"v", v}});
    const Array st = aj::load_safetensors((dir / "a.st").string()).at("v");
    CHECK(st.dtype() == t);
    CHECK(st.astype(DType::u64).to_vector<std::uint64_t>() == want);
    DLManagedTensor* m = aj::to_dlpack(v);
    CHECK(m->dl_tensor.dtype.bits == 8 * aj::itemsize(t));
    CHECK(m->dl_tensor.dtype.code == (aj::dtype_kind(t) == aj::DTypeKind::Unsigned ? kDLUInt : kDLInt));
    const Array d = aj::from_dlpack(m);
    CHECK(d.dtype() == t);
    CHECK(d.astype(DType::u64).to_vector<std::uint64_t>() == want);
    // The C API's code is the enum's value, with the table's name and size.
    CHECK(std::string(aj_dtype_name(static_cast<aj_dtype>(t))) == aj::dtype_name(t));
    CHECK(aj_dtype_itemsize(static_cast<aj_dtype>(t)) == aj::itemsize(t));
  }
  std::filesystem::remove_all(dir);
  CHECK(AJ_U8 == static_cast<int>(DType::u8));
  CHECK(AJ_U64 == static_cast<int>(DType::u64));
}

TEST_CASE("integer dtypes: indices and labels of any integer dtype, randint of every integer dtype") {
  const Array x = aj::arange(10, DType::f32) * 1.5f;
  CHECK(aj::take(x, aj::from_vector<std::uint8_t>({9, 0, 3})).to_vector<float>() == std::vector<float>{13.5f, 0.f, 4.5f});
  CHECK(aj::take(x, aj::from_vector<std::int16_t>({-1, 2})).to_vector<float>() == std::vector<float>{13.5f, 3.f});
  CHECK(aj::one_hot(aj::from_vector<std::uint8_t>({2, 0}), 3).to_vector<float>() ==
        std::vector<float>{0, 0, 1, 1, 0, 0});
  const Array acc = aj::scatter_add(aj::zeros({4}), aj::from_vector<std::uint16_t>({1, 3, 1}), aj::ones({3}), 0);
  CHECK(acc.to_vector<float>() == std::vector<float>{0, 2, 0, 1});
  CHECK_THROWS_WITH_AS((void)aj::take(x, aj::from_vector<bool>({true})), doctest::Contains("indices must be integers"),
                       aj::Error);
  CHECK_THROWS_AS((void)aj::take(x, aj::ones({1})), aj::Error);
  for (DType t : {DType::u8, DType::i8, DType::i16, DType::u16, DType::u32, DType::u64}) {
    CAPTURE(aj::dtype_name(t));
    const bool is_unsigned = aj::dtype_kind(t) == aj::DTypeKind::Unsigned;
    const std::int64_t lo = is_unsigned ? 0 : -100, hi = aj::itemsize(t) == 1 ? (is_unsigned ? 256 : 128) : 30000;
    const Array r = aj::random::randint({4000}, lo, hi, t);
    CHECK(r.dtype() == t);
    const auto v = r.astype(DType::i64).to_vector<std::int64_t>();
    const std::int64_t mn = *std::min_element(v.begin(), v.end()), mx = *std::max_element(v.begin(), v.end());
    CHECK(mn >= lo);
    CHECK(mx <= hi - 1);
    if (aj::itemsize(t) == 1) {  // 4,000 draws reach both ends of 228 or 256 values
      CHECK(mn == lo);
      CHECK(mx == hi - 1);
    }
    if (t != DType::u64) {
      CHECK_THROWS_WITH_AS((void)aj::random::randint({2}, lo, aj::itemsize(t) == 1 ? 300 : std::int64_t{1} << 40, t),
                           doctest::Contains("does not fit"), aj::Error);
    }
  }
  CHECK_THROWS_AS((void)aj::random::randint({2}, -1, 5, DType::u8), aj::Error);
}

// f16 and bf16: conversions bit-exact for every bit pattern against
// independent references (the CPU's F16C and AVX512-BF16 instructions, exact
// comparison with decoded neighbours, NumPy's float16), on every executor
// (reference interpreter, kernel interpreter, host JIT); promotion; arithmetic
// computed in f32 and rounded once per op; reductions and matmul accumulating
// in f32; data in and out (from_vector, to_vector, item, borrow, DLPack, the C
// view); printing of bf16 (f16 printing is in the NumPy table of
// test_printing.cpp).
#include <doctest/doctest.h>

#include <unistd.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>
#include <arrayjit/dlpack.hpp>

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/api/executor.hpp"

namespace {

using aj::Array;
using aj::bf16;
using aj::DType;
using aj::f16;
using aj::detail::Executor;
using aj::detail::ExecutorScope;

std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }
float f32_of(std::uint32_t b) { return std::bit_cast<float>(b); }

bool have_f16c() { return __builtin_cpu_supports("f16c"); }
bool have_avx512bf16() { return __builtin_cpu_supports("avx512bf16"); }

// ---- independent references ----------------------------------------------------------------

__attribute__((target("f16c"))) float hw_f16_to_f32(std::uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) std::uint16_t hw_f32_to_f16(float x) {
  return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
// VCVTNEPS2BF16: round to nearest even, NaN quieted; treats f32 subnormal
// inputs as zero (where arrayjit keeps them: see bf16_round_by_carry).
__attribute__((target("avx512bf16,avx512vl,avx512f"))) std::uint16_t hw_f32_to_bf16(float x) {
  const __m128bh r = _mm_cvtneps_pbh(_mm_set1_ps(x));
  std::uint16_t b;
  std::memcpy(&b, &r, 2);
  return b;
}
// The textbook f32 -> bf16 (a different algorithm from arrayjit's): add
// 0x7fff plus the kept low bit, keep the top half (a carry moves to the next
// binade); NaN quieted.
std::uint16_t bf16_round_by_carry(float x) {
  const std::uint32_t b = bits(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((b >> 16) | 0x40);
  return static_cast<std::uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
// bf16 -> f32: the top half of an f32 (NaN quieted).
float bf16_widened(std::uint16_t h) {
  const float f = f32_of(static_cast<std::uint32_t>(h) << 16);
  return std::isnan(f) ? f32_of(bits(f) | 0x00400000u) : f;
}

// Exact rounding of a double to a 16-bit format by comparing with the two
// neighbouring values, decoded by `widen` (exact): the nearest, ties to the
// even pattern; past the largest finite value by half an ulp or more: inf.
template <class Widen>
std::uint16_t nearest(double d, Widen widen, std::uint32_t inf_bits) {
  const bool neg = std::signbit(d);
  const double a = std::fabs(d);
  // The largest pattern whose value is <= a (non-negative patterns are ordered).
  std::uint32_t lo = 0, hi = inf_bits + 1;
  while (lo + 1 < hi) {
    const std::uint32_t mid = (lo + hi) / 2;
    (widen(static_cast<std::uint16_t>(mid)) <= a ? lo : hi) = mid;
  }
  std::uint32_t r = lo;
  if (lo + 1 == inf_bits) {  // at or past the largest finite value: inf from half an ulp past it on
    const double vl = widen(static_cast<std::uint16_t>(lo));
    r = a - vl >= (vl - widen(static_cast<std::uint16_t>(lo - 1))) / 2 ? inf_bits : lo;
  } else if (lo < inf_bits) {
    const double vl = widen(static_cast<std::uint16_t>(lo)), vh = widen(static_cast<std::uint16_t>(lo + 1));
    const double dl = a - vl, dh = vh - a;  // exact (Sterbenz)
    r = dl < dh ? lo : dh < dl ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  }
  return static_cast<std::uint16_t>(r | (neg ? 0x8000u : 0u));
}
double f16_value(std::uint16_t h) { return hw_f16_to_f32(h); }
double bf16_value(std::uint16_t h) { return bf16_widened(h); }

// Doubles that probe every rounding decision of a 16-bit format: each finite
// value, the midpoints to its neighbour, and a hair (one f64 ulp, 2^-30
// relative: where rounding through f32 first would round twice) on each side.
template <class Value>
std::vector<double> probes(Value value, std::uint16_t inf_bits) {
  std::vector<double> v;
  for (std::uint32_t h = 0; h < inf_bits; ++h) {
    const double x = value(static_cast<std::uint16_t>(h));
    const double next = value(static_cast<std::uint16_t>(h + 1));
    const double mid = std::isinf(next) ? x + (x - value(static_cast<std::uint16_t>(h - 1))) / 2 : (x + next) / 2;
    for (double d : {x, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300), mid * (1 + 0x1p-30),
                     mid * (1 - 0x1p-30)}) {
      v.push_back(d);
      v.push_back(-d);
    }
  }
  return v;
}

// Runs `make` on the given executor (the kernel interpreter: optimized with the JIT off).
enum class Path { reference, interpreter, jit };
constexpr Path kPaths[] = {Path::reference, Path::interpreter, Path::jit};
const char* path_name(Path p) { return p == Path::reference ? "reference" : p == Path::interpreter ? "interpreter" : "jit"; }

template <class F>
auto on(Path p, F make) {
  ExecutorScope s(p == Path::reference ? Executor::reference : Executor::optimized);
  const bool saved = aj::jit::enabled();
  aj::jit::set_enabled(p == Path::jit);
  auto r = make();
  aj::jit::set_enabled(saved);
  return r;
}

std::vector<std::uint16_t> all_patterns() {
  std::vector<std::uint16_t> v(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<std::uint16_t>(i);
  return v;
}

template <class H>
Array half_array(const std::vector<std::uint16_t>& patterns) {
  std::vector<H> v(patterns.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = H::from_bits(patterns[i]);
  return aj::from_vector(v);
}

template <class H>
std::vector<std::uint16_t> patterns_of(const Array& a) {
  std::vector<std::uint16_t> out;
  for (H h : a.to_vector<H>()) out.push_back(h.bits);
  return out;
}

// Every pattern of half type H widened to f32 and f64 on every path must be
// `want(pattern)` exactly (at most 5 failures reported per path).
template <class H, class Want>
void check_widening(const char* name, const std::vector<std::uint16_t>& pats, Want&& want) {
  for (Path p : kPaths) {
    CAPTURE(path_name(p));
    const auto f = on(p, [&] { return half_array<H>(pats).astype(DType::f32).template to_vector<float>(); });
    const auto d = on(p, [&] { return half_array<H>(pats).astype(DType::f64).template to_vector<double>(); });
    int bad = 0;
    for (std::uint32_t h = 0; h < 65536 && bad < 5; ++h) {
      const float w = want(static_cast<std::uint16_t>(h));
      if (bits(f[h]) != bits(w) || bits(d[h]) != bits(static_cast<double>(w))) {
        ++bad;
        FAIL_CHECK(name << " pattern " << h << ": f32 " << bits(f[h]) << " f64 " << bits(d[h]) << ", want " << bits(w));
      }
    }
  }
}

}  // namespace

TEST_SUITE("dtypes_half") {

TEST_CASE("f16 widens exactly to f32 and f64, for all 65,536 patterns, as F16C does, on every path") {
  if (!have_f16c()) {
    MESSAGE("no F16C on this CPU: skipped");
    return;
  }
  const auto pats = all_patterns();
  for (std::uint32_t h = 0; h < 65536; ++h) {  // the header's conversion itself
    const float want = hw_f16_to_f32(static_cast<std::uint16_t>(h));
    const float got = static_cast<float>(f16::from_bits(static_cast<std::uint16_t>(h)));
    if (bits(got) != bits(want)) FAIL_CHECK("f16 " << h << " -> f32: " << bits(got) << ", F16C " << bits(want));
    if (bits(static_cast<double>(f16::from_bits(static_cast<std::uint16_t>(h)))) != bits(static_cast<double>(want))) {
      FAIL_CHECK("f16 " << h << " -> f64");
    }
  }
  check_widening<f16>("f16 (want: F16C)", pats, hw_f16_to_f32);
}

TEST_CASE("bf16 widens exactly to f32 and f64 for all 65,536 patterns on every path") {
  check_widening<bf16>("bf16", all_patterns(), bf16_widened);
}

TEST_CASE("f32 rounds to f16 and bf16 as F16C and AVX512-BF16 do, at every rounding boundary, on every path") {
  if (!have_f16c()) {
    MESSAGE("no F16C on this CPU: skipped");
    return;
  }
  // Every f16 value and midpoint (exact in f32) and its f32 neighbours, the
  // same for bf16, NaNs with payloads, and random f32 patterns.
  std::vector<float> xs;
  for (double d : probes(f16_value, 0x7c00)) xs.push_back(static_cast<float>(d));
  for (double d : probes(bf16_value, 0x7f80)) xs.push_back(static_cast<float>(d));
  const std::size_t probes_end = xs.size();
  for (std::size_t i = 0; i < probes_end; ++i) {
    xs.push_back(std::nextafter(xs[i], 0.0f));
    xs.push_back(std::nextafter(xs[i], 1e30f));
  }
  for (std::uint32_t nan : {0x7f800001u, 0x7fa00000u, 0xffc00001u, 0x7f802001u, 0x7fc00000u, 0xff801234u}) xs.push_back(f32_of(nan));
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) xs.push_back(f32_of(static_cast<std::uint32_t>(rng())));
  const bool bf16_hw = have_avx512bf16();
  for (Path p : kPaths) {
    CAPTURE(path_name(p));
    const auto h = on(p, [&] { return patterns_of<f16>(aj::from_vector(xs).astype(DType::f16)); });
    const auto b = on(p, [&] { return patterns_of<bf16>(aj::from_vector(xs).astype(DType::bf16)); });
    int bad = 0;
    for (std::size_t i = 0; i < xs.size() && bad < 5; ++i) {
      const std::uint16_t want_h = hw_f32_to_f16(xs[i]);
      // The instruction flushes f32 subnormal inputs to zero; there the
      // textbook rounding is the reference (it agrees with the instruction
      // everywhere else, checked too).
      const bool subnormal = std::fpclassify(xs[i]) == FP_SUBNORMAL;
      const std::uint16_t want_b = bf16_hw && !subnormal ? hw_f32_to_bf16(xs[i]) : bf16_round_by_carry(xs[i]);
      if (h[i] != want_h || b[i] != want_b || bf16_round_by_carry(xs[i]) != want_b) {
        ++bad;
        FAIL_CHECK("f32 " << bits(xs[i]) << ": f16 " << h[i] << " (F16C " << want_h << "), bf16 " << b[i]
                          << " (want " << want_b << ")");
      }
    }
  }
}

TEST_CASE("f64 and integers round once to f16 and bf16 (no double rounding through f32), on every path") {
  if (!have_f16c()) {
    MESSAGE("no F16C on this CPU: skipped");
    return;
  }
  std::vector<double> f16_in = probes(f16_value, 0x7c00), bf16_in = probes(bf16_value, 0x7f80);
  for (double d : {1e300, -1e300, 65520.0, 65519.999999, 5e-324, -5e-324, 0x1p-25, 0x1p-25 * (1 + 0x1p-40)}) {
    f16_in.push_back(d);
    bf16_in.push_back(d);
  }
  std::vector<std::int64_t> ints;
  for (std::int64_t i = -70000; i <= 70000; ++i) ints.push_back(i);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) ints.push_back(static_cast<std::int64_t>(rng()) >> (rng() % 60));
  // 2^24 + 2^16 + 1: through f32 it rounds to the bf16 midpoint, then to even (wrong).
  for (std::int64_t v : {std::int64_t{(1ll << 24) + (1ll << 16) + 1}, std::int64_t{(1ll << 60) + (1ll << 52) + 1},
                         std::int64_t{INT64_MIN}, std::int64_t{INT64_MAX}}) {
    ints.push_back(v);
  }
  for (Path p : kPaths) {
    CAPTURE(path_name(p));
    const auto h = on(p, [&] { return patterns_of<f16>(aj::from_vector(f16_in).astype(DType::f16)); });
    const auto b = on(p, [&] { return patterns_of<bf16>(aj::from_vector(bf16_in).astype(DType::bf16)); });
    const auto hi = on(p, [&] { return patterns_of<f16>(aj::from_vector(ints).astype(DType::f16)); });
    const auto bi = on(p, [&] { return patterns_of<bf16>(aj::from_vector(ints).astype(DType::bf16)); });
    int bad = 0;
    for (std::size_t i = 0; i < f16_in.size() && bad < 5; ++i) {
      if (h[i] != nearest(f16_in[i], f16_value, 0x7c00)) {
        ++bad;
        FAIL_CHECK("f64 " << f16_in[i] << " -> f16 " << h[i]);
      }
    }
    for (std::size_t i = 0; i < bf16_in.size() && bad < 5; ++i) {
      if (b[i] != nearest(bf16_in[i], bf16_value, 0x7f80)) {
        ++bad;
        FAIL_CHECK("f64 " << bf16_in[i] << " -> bf16 " << b[i]);
      }
    }
    for (std::size_t i = 0; i < ints.size() && bad < 5; ++i) {
      const double d = static_cast<double>(ints[i]);  // inexact above 2^53: compare by the exact rule below
      const bool exact_d = static_cast<std::int64_t>(d) == ints[i] || std::fabs(d) >= 0x1p63;
      if (hi[i] != nearest(d, f16_value, 0x7c00)) {
        ++bad;
        FAIL_CHECK("i64 " << ints[i] << " -> f16 " << hi[i]);
      }
      if (exact_d && bi[i] != nearest(d, bf16_value, 0x7f80)) {
        ++bad;
        FAIL_CHECK("i64 " << ints[i] << " -> bf16 " << bi[i]);
      }
    }
    // The double-rounding traps, checked against the right answers.
    CHECK(bi[ints.size() - 4] == 0x4b81);  // 2^24 + 2^17
    CHECK(bi[ints.size() - 3] == 0x5d81);  // 2^60 + 2^53
  }
}

TEST_CASE("f64 -> f16 agrees with NumPy's float16 for every probe") {
  const char* py = "/usr/bin/python3";
  // (Strings built by append: GCC 12 warns falsely on std::string(p) + "...".)
  std::string check = py;
  check += " -c 'import numpy' > /dev/null 2>&1";
  if (std::system(check.c_str()) != 0) {
    MESSAGE("no NumPy: skipped");
    return;
  }
  std::vector<double> in = probes([](std::uint16_t h) { return static_cast<double>(static_cast<float>(f16::from_bits(h))); }, 0x7c00);
  const std::string dir = "/tmp/aj_half_" + std::to_string(::getpid());
  std::system(("mkdir -p " + dir).c_str());
  std::ofstream(dir + "/in.bin", std::ios::binary).write(reinterpret_cast<const char*>(in.data()),
                                                         static_cast<std::streamsize>(in.size() * 8));
  std::string cmd = py;
  cmd += " -c \"import numpy as np; np.fromfile('" + dir + "/in.bin', dtype=np.float64).astype(np.float16).tofile('" +
         dir + "/out.bin')\"";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<std::uint16_t> want(in.size());
  std::ifstream(dir + "/out.bin", std::ios::binary).read(reinterpret_cast<char*>(want.data()),
                                                         static_cast<std::streamsize>(want.size() * 2));
  std::system(("rm -rf " + dir).c_str());
  const auto got = patterns_of<f16>(aj::from_vector(in).astype(DType::f16));
  int bad = 0;
  for (std::size_t i = 0; i < in.size() && bad < 5; ++i) {
    if (got[i] != want[i]) {
        ++bad;
        FAIL_CHECK("f64 " << in[i] << ": " << got[i] << ", NumPy " << want[i]);
      }
  }
}

TEST_CASE("halves convert to integers and bool through their exact f32 value, for every pattern") {
  const auto pats = all_patterns();
  for (Path p : kPaths) {
    CAPTURE(path_name(p));
    const auto i32 = on(p, [&] { return half_array<f16>(pats).astype(DType::i32).to_vector<std::int32_t>(); });
    const auto i64 = on(p, [&] { return half_array<bf16>(pats).astype(DType::i64).to_vector<std::int64_t>(); });
    const auto b = on(p, [&] { return half_array<bf16>(pats).astype(DType::bool_).to_vector<bool>(); });
    const auto hb = on(p, [&] { return patterns_of<bf16>(half_array<f16>(pats).astype(DType::bf16)); });
    int bad = 0;
    for (std::uint32_t h = 0; h < 65536 && bad < 5; ++h) {
      const float x = static_cast<float>(f16::from_bits(static_cast<std::uint16_t>(h)));
      const std::int32_t want32 = std::isnan(x) ? 0 : x >= 0x1p31f ? INT32_MAX : x < -0x1p31f ? INT32_MIN : static_cast<std::int32_t>(x);
      const float y = bf16_widened(static_cast<std::uint16_t>(h));
      const std::int64_t want64 = std::isnan(y) ? 0 : y >= 0x1p63f ? INT64_MAX : y < -0x1p63f ? INT64_MIN : static_cast<std::int64_t>(y);
      if (i32[h] != want32 || i64[h] != want64 || b[h] != (y != 0.0f || std::isnan(y)) ||
          hb[h] != bf16_round_by_carry(x)) {
        ++bad;
        FAIL_CHECK("pattern " << h << ": i32 " << i32[h] << " i64 " << i64[h] << " bool " << b[h] << " f16->bf16 " << hb[h]);
      }
    }
  }
}

TEST_CASE("promotion: f16 + f32 is f32, f16 + bf16 is f32, an integer with a half is f64, weak scalars keep halves") {
  Array h = aj::from_vector(std::vector<f16>{f16(1.5f), f16(2.0f)});
  Array b = h.astype(DType::bf16);
  Array f = aj::from_vector(std::vector<float>{1, 2});
  Array i = aj::from_vector(std::vector<std::int32_t>{1, 2});
  CHECK(aj::promote_types(DType::f16, DType::f32) == DType::f32);
  CHECK(aj::promote_types(DType::bf16, DType::f64) == DType::f64);
  CHECK(aj::promote_types(DType::f16, DType::bf16) == DType::f32);
  CHECK(aj::promote_types(DType::bool_, DType::bf16) == DType::bf16);
  CHECK(aj::promote_types(DType::i32, DType::f16) == DType::f64);  // NumPy: int32 + float16 -> float64
  CHECK((h + f).dtype() == DType::f32);
  CHECK((h + b).dtype() == DType::f32);
  CHECK((h + i).dtype() == DType::f64);
  CHECK((h * 2.0).dtype() == DType::f16);  // a weak float scalar takes the array's float type
  CHECK((b * 2).dtype() == DType::bf16);
  CHECK(aj::exp(h).dtype() == DType::f16);
  CHECK((h < 2.0).dtype() == DType::bool_);
  CHECK(aj::sum(h).dtype() == DType::f16);
  CHECK(aj::mean(b).dtype() == DType::bf16);
  CHECK(aj::exp(i.astype(DType::f16)).dtype() == DType::f16);
}

TEST_CASE("every elementwise op on halves is the op in f32 rounded once, on every path") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-6, 6);
  std::vector<float> xs(997), ys(997);
  for (auto& v : xs) v = d(rng);
  for (auto& v : ys) v = d(rng);
  xs[0] = 0.0f, xs[1] = -0.0f, xs[2] = NAN, xs[3] = INFINITY, ys[4] = 0.0f;
  using U = Array (*)(const aj::Operand&);
  using B = Array (*)(const aj::Operand&, const aj::Operand&);
  const U unary[] = {aj::negative, aj::abs, aj::sign, aj::floor, aj::ceil, aj::round, aj::exp, aj::log, aj::log1p,
                     aj::expm1, aj::sin, aj::cos, aj::tan, aj::tanh, aj::sigmoid, aj::sqrt, aj::rsqrt,
                     aj::trunc, aj::arcsin, aj::arccos, aj::arctan, aj::sinh, aj::cosh, aj::arcsinh, aj::arccosh,
                     aj::arctanh, aj::exp2, aj::log2, aj::log10, aj::cbrt, aj::lgamma, aj::digamma,
                     aj::trigamma, aj::erfinv, aj::ndtri, aj::log_ndtr, aj::i0, aj::i1};
  const B binary[] = {aj::add,     aj::subtract, aj::multiply, aj::divide,    aj::mod,      aj::maximum, aj::minimum,
                      aj::pow,     aj::arctan2,  aj::hypot,    aj::copysign,  aj::fmod,     aj::logaddexp,
                      aj::logaddexp2};
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(aj::dtype_name(t));
    for (Path p : kPaths) {
      CAPTURE(path_name(p));
      // The reference: the f32 op on the widened values, rounded to t by the
      // reference interpreter (the conversions themselves are checked above).
      auto run = [&](auto make) {
        const auto got = on(p, [&] { return make(aj::from_vector(xs).astype(t), aj::from_vector(ys).astype(t)).astype(DType::f64).template to_vector<double>(); });
        const auto want = on(Path::reference, [&] {
          Array x = aj::from_vector(xs).astype(t).astype(DType::f32), y = aj::from_vector(ys).astype(t).astype(DType::f32);
          return make(x, y).astype(t).astype(DType::f64).template to_vector<double>();
        });
        for (std::size_t k = 0; k < got.size(); ++k) {
          const bool same = (std::isnan(got[k]) && std::isnan(want[k])) || got[k] == want[k];
          // Math functions may differ by a few f32 ulps (SLEEF vs libm), which can move
          // the rounded half by one of its ulps.
          const double ulp = std::fabs(want[k]) * (t == DType::f16 ? 0x1p-10 : 0x1p-7);
          if (!same && !(p == Path::jit && std::fabs(got[k] - want[k]) <= ulp)) {
            FAIL_CHECK("element " << k << " (" << xs[k] << ", " << ys[k] << "): " << got[k] << ", want " << want[k]);
            return;
          }
        }
      };
      for (U f : unary) run([&](const Array& x, const Array&) { return f(x); });
      for (B f : binary) run([&](const Array& x, const Array& y) { return f(x, y); });
      run([&](const Array& x, const Array& y) { return aj::where(x < y, x, y * 0.5); });
      run([&](const Array& x, const Array& y) { return (x == y).astype(DType::f32) + (x >= y).astype(DType::f32); });
    }
  }
}

TEST_CASE("nextafter of halves is a located error (f32 arithmetic cannot step a half's ulp)") {
  const int line = __LINE__ + 2;
  try {
    (void)aj::nextafter(aj::ones({3}, DType::f16), aj::zeros({3}, DType::f16));
    FAIL("accepted");
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    CHECK(std::string(e.what()).find("aj::nextafter:") != std::string::npos);
    CHECK(std::string(e.what()).find("test_dtypes_half.cpp:" + std::to_string(line)) != std::string::npos);
  }
  CHECK_THROWS_AS(aj::nextafter(aj::ones({3}, DType::bf16), 2.0), aj::Error);
  CHECK(aj::nextafter(aj::ones({1}, DType::f16).astype(DType::f32), 2.0).item<float>() == std::nextafter(1.0f, 2.0f));
}

TEST_CASE("reductions and matmul of halves accumulate in f32 and round once") {
  // 4096 ones: an f16 accumulator would stop at 2048 (2048 + 1 rounds to 2048).
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(aj::dtype_name(t));
    for (Path p : kPaths) {
      CAPTURE(path_name(p));
      const double s = on(p, [&] { return aj::sum(aj::ones({4096}, t)).astype(DType::f64).item<double>(); });
      CHECK(s == 4096.0);
      const double m = on(p, [&] { return aj::max(aj::arange(1000, t)).astype(DType::f64).item<double>(); });
      CHECK(m == (t == DType::f16 ? 999.0 : static_cast<double>(static_cast<float>(bf16(999.0f)))));
      const auto mm = on(p, [&] {
        return aj::matmul(aj::ones({3, 4096}, t), aj::ones({4096, 2}, t)).astype(DType::f64).to_vector<double>();
      });
      CHECK(mm == std::vector<double>(6, 4096.0));
      // cumsum: an f32 running value, each output rounded once. Rounding the
      // running value would stop at 2048 (2048 + 1 ties to even).
      const auto cs = on(p, [&] {
        return aj::cumsum(aj::from_vector(std::vector<float>{2048, 1, 1}).astype(t), 0).astype(DType::f64).to_vector<double>();
      });
      const double third = t == DType::f16 ? 2050.0 : 2048.0;  // bf16 holds 8 bits: 2050 rounds to 2048
      CHECK(cs == std::vector<double>{2048.0, 2048.0, third});
    }
    // Random products: the optimized paths (BLAS on widened values) against
    // the reference interpreter (f32 sums in k order), within one half ulp.
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<float> a(7 * 33), b(33 * 5);
    for (auto& v : a) v = d(rng);
    for (auto& v : b) v = d(rng);
    auto product = [&] {
      Array x = aj::from_vector(a, {7, 33}).astype(t), y = aj::from_vector(b, {33, 5}).astype(t);
      return std::vector<Array>{aj::matmul(x, y), aj::matmul(x.T().T(), y.T().T()), aj::sum(x * 3.0, 1)};
    };
    for (Path p : {Path::interpreter, Path::jit}) {
      const auto got = on(p, [&] { auto r = product(); std::vector<std::vector<double>> v; for (auto& x : r) v.push_back(x.astype(DType::f64).to_vector<double>()); return v; });
      const auto want = on(Path::reference, [&] { auto r = product(); std::vector<std::vector<double>> v; for (auto& x : r) v.push_back(x.astype(DType::f64).to_vector<double>()); return v; });
      for (std::size_t r = 0; r < got.size(); ++r) {
        for (std::size_t k = 0; k < got[r].size(); ++k) {
          CHECK(std::fabs(got[r][k] - want[r][k]) <= std::fabs(want[r][k]) * (t == DType::f16 ? 0x1p-10 : 0x1p-7) + 1e-3);
        }
      }
    }
  }
}

TEST_CASE("halves in and out: from_vector, to_vector, item, borrow, DLPack, the C view") {
  std::vector<f16> v{f16(0.5f), f16(-2.0f), f16(65504.0f), f16::from_bits(0x7e00)};
  Array a = aj::from_vector(v);
  CHECK(a.dtype() == DType::f16);
  CHECK(patterns_of<f16>(a) == std::vector<std::uint16_t>{0x3800, 0xc000, 0x7bff, 0x7e00});
  CHECK(a.to_vector<double>()[2] == 65504.0);
  CHECK(static_cast<float>(aj::slice(a, 0, 1, 2).item<f16>()) == -2.0f);
  CHECK((a * 2.0).to_vector<float>()[0] == 1.0f);
  CHECK(std::isinf((a * 2.0).to_vector<float>()[2]));  // 131008 rounds to inf in f16
  std::vector<bf16> raw{bf16(1.0f), bf16(3.0f), bf16(-0.25f)};
  Array br = aj::borrow(raw.data(), {3});
  CHECK(br.dtype() == DType::bf16);
  CHECK((br + br).to_vector<float>() == std::vector<float>{2.0f, 6.0f, -0.5f});

  for (Array x : {a, br}) {
    DLManagedTensor* t = aj::to_dlpack(x);
    CHECK(t->dl_tensor.dtype.bits == 16);
    CHECK(t->dl_tensor.dtype.code == (x.dtype() == DType::f16 ? kDLFloat : kDLBfloat));
    Array back = aj::from_dlpack(t);
    CHECK(back.dtype() == x.dtype());
    const auto got = back.to_vector<double>(), want = x.to_vector<double>();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK((got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))));
  }

  aj_array c = aj::to_c(a);
  aj_view view{};
  view.struct_size = sizeof view;
  REQUIRE(aj_view_acquire(c, AJ_VIEW_ANY, &view) == AJ_OK);
  CHECK(std::string(view.format) == "e");  // PEP 3118's half
  CHECK(view.itemsize == 2);
  CHECK(view.dtype == AJ_F16);
  aj_view_release(&view);
  aj_array_release(c);
}

TEST_CASE("bf16 prints as NumPy prints ml_dtypes' bfloat16: each value's float, 6 digits, not aligned") {
  std::ostringstream os;
  os << aj::from_vector(std::vector<bf16>{bf16(0.1f), bf16(2.0f), bf16(-INFINITY), bf16(NAN), bf16(1e10f)});
  // bf16(0.1) is 0.10009765625; 1e10 rounds to 9999220736.
  CHECK(os.str() == "array([0.100098, 2, -inf, nan, 9.99922e+09], dtype=bf16, shape=[5])");
}

}  // TEST_SUITE

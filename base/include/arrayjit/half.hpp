// Half-precision element types: aj::f16 (IEEE 754 binary16: 5 exponent bits,
// 10 stored significand bits) and aj::bf16 (bfloat16: f32's 8 exponent bits,
// 7 significand bits). Arrays store them; arithmetic on them runs in f32 and
// is rounded to nearest even once per op (docs/semantics.md).
//
// These conversions are arrayjit's one definition of rounding to a half type
// and of widening from one: base/semantics.hpp (interpreters, constant
// folding), the host JIT (through its bitcode) and the CUDA prelude all use
// them, and tests/test_dtypes_half.cpp checks every one of the 65,536 bit
// patterns against the CPU's F16C / AVX512-BF16 instructions and NumPy.
//  - Narrowing (f32, f64, integers -> half) rounds once, to nearest, ties to
//    even; subnormals are kept (no flush to zero); too large gives +-inf.
//  - Widening (half -> f32, f64) is exact.
//  - NaN keeps its sign and the leading bits of its payload, and comes out
//    quiet (IEEE 754's rule, and what F16C does): a signaling NaN is quieted
//    both ways.
//
// Read by three compilers: host C++ (the library and its users), clang-19
// building the host JIT's bitcode, and NVRTC through the CUDA prelude
// generated from base/semantics.hpp (AJ_SEM_CUDA). So: no standard headers,
// only builtins each of them has, and every function AJ_HD.
#pragma once

#ifndef AJ_HD
#define AJ_HD inline
#endif

namespace aj {

namespace half_detail {

using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;

#if defined(AJ_SEM_CUDA)
AJ_HD u32 bits_of(float x) { return __float_as_uint(x); }
AJ_HD u64 bits_of(double x) { return static_cast<u64>(__double_as_longlong(x)); }
AJ_HD float f32_of(u32 b) { return __uint_as_float(b); }
AJ_HD double f64_of(u64 b) { return __longlong_as_double(static_cast<long long>(b)); }
AJ_HD int clz64(u64 x) { return __clzll(static_cast<long long>(x)); }
#else
AJ_HD u32 bits_of(float x) { return __builtin_bit_cast(u32, x); }
AJ_HD u64 bits_of(double x) { return __builtin_bit_cast(u64, x); }
AJ_HD float f32_of(u32 b) { return __builtin_bit_cast(float, b); }
AJ_HD double f64_of(u64 b) { return __builtin_bit_cast(double, b); }
AJ_HD int clz64(u64 x) { return __builtin_clzll(x); }  // x != 0
#endif

// A binary floating-point format of E exponent bits and M stored significand
// bits in 16 bits (sign in bit 15).
template <int E, int M>
struct Format {
  static constexpr int kMant = M;
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr int kEmin = 1 - kBias;  // exponent of the smallest normal number
  static constexpr int kEmax = kBias;      // of the largest finite one
  static constexpr u32 kSign = 1u << 15;
  static constexpr u32 kExpField = ((1u << E) - 1) << M;  // all ones: inf and NaN
  static constexpr u32 kMantField = (1u << M) - 1;
  static constexpr u32 kQuiet = 1u << (M - 1);
};
using Binary16 = Format<5, 10>;
using BFloat16 = Format<8, 7>;

// The value of F nearest to (-1)^neg * m * 2^e (ties to even), as bits.
template <class F>
AJ_HD u16 round_bits(bool neg, u64 m, int e) {
  const u32 sign = neg ? F::kSign : 0u;
  if (m == 0) return static_cast<u16>(sign);
  const int top = e + 63 - clz64(m);  // exponent of m's leading bit
  if (top > F::kEmax) return static_cast<u16>(sign | F::kExpField);
  const int lsb = (top < F::kEmin ? F::kEmin : top) - F::kMant;  // exponent of the result's last bit
  const int drop = lsb - e;                                      // bits of m below it
  u64 q = 0;
  if (drop <= 0) {
    q = m << -drop;  // exact: at most M + 1 bits
  } else if (drop <= 64) {
    q = drop == 64 ? 0 : m >> drop;
    const u64 rest = drop == 64 ? m : m & ((u64(1) << drop) - 1);
    const u64 half = u64(1) << (drop - 1);
    if (rest > half || (rest == half && (q & 1))) ++q;
  }  // drop > 64: m < 2^64 is less than half the last bit: rounds to 0
  // Normal: q has its leading bit (2^M) set, which adds one to the biased
  // exponent below; a carry to 2^(M+1) moves to the next binade, past the
  // largest finite value onto the infinity pattern. Subnormal: q itself (a
  // carry to 2^M is the smallest normal number's pattern).
  const u32 body = top < F::kEmin ? static_cast<u32>(q)
                                  : (static_cast<u32>(top + F::kBias - 1) << F::kMant) + static_cast<u32>(q);
  return static_cast<u16>(sign | body);
}

// A wide format's NaN (exponent all ones, `payload` the significand field)
// narrowed: sign, leading payload bits, quiet bit set.
template <class F>
AJ_HD u16 narrow_nan(bool neg, u64 payload, int wide_mant) {
  return static_cast<u16>((neg ? F::kSign : 0u) | F::kExpField | F::kQuiet |
                          static_cast<u32>(payload >> (wide_mant - F::kMant)));
}

template <class F>
AJ_HD u16 from_f32(float x) {
  const u32 b = bits_of(x);
  const bool neg = (b >> 31) != 0;
  const int ef = static_cast<int>((b >> 23) & 0xff);
  const u64 mant = b & 0x7fffffu;
  if (ef == 0xff) return mant == 0 ? static_cast<u16>((neg ? F::kSign : 0u) | F::kExpField) : narrow_nan<F>(neg, mant, 23);
  return ef == 0 ? round_bits<F>(neg, mant, -149) : round_bits<F>(neg, mant | (u64(1) << 23), ef - 150);
}

template <class F>
AJ_HD u16 from_f64(double x) {
  const u64 b = bits_of(x);
  const bool neg = (b >> 63) != 0;
  const int ef = static_cast<int>((b >> 52) & 0x7ff);
  const u64 mant = b & ((u64(1) << 52) - 1);
  if (ef == 0x7ff) return mant == 0 ? static_cast<u16>((neg ? F::kSign : 0u) | F::kExpField) : narrow_nan<F>(neg, mant, 52);
  return ef == 0 ? round_bits<F>(neg, mant, -1074) : round_bits<F>(neg, mant | (u64(1) << 52), ef - 1075);
}

// Integers round once (through f32 or f64 first could round twice).
template <class F>
AJ_HD u16 from_i64(long long v) {
  const bool neg = v < 0;
  return round_bits<F>(neg, neg ? u64(0) - static_cast<u64>(v) : static_cast<u64>(v), 0);
}
template <class F>
AJ_HD u16 from_u64(unsigned long long v) {
  return round_bits<F>(false, static_cast<u64>(v), 0);
}

// The bits of h in the wide format of WE exponent and WM significand bits
// (f32: 8, 23; f64: 11, 52), exactly.
template <class F, int WE, int WM>
AJ_HD u64 widen_bits(u16 h) {
  constexpr int wide_bias = (1 << (WE - 1)) - 1;
  const u64 sign = static_cast<u64>(h >> 15) << (WE + WM);
  const u32 ef = (h & F::kExpField) >> F::kMant;
  const u64 mant = h & F::kMantField;
  const u64 wide_exp_field = ((u64(1) << WE) - 1) << WM;
  if (ef == (F::kExpField >> F::kMant)) {  // inf, NaN (quieted)
    return sign | wide_exp_field | (mant ? u64(1) << (WM - 1) : 0) | (mant << (WM - F::kMant));
  }
  if (ef != 0) return sign | (static_cast<u64>(static_cast<int>(ef) - F::kBias + wide_bias) << WM) | (mant << (WM - F::kMant));
  if (mant == 0) return sign;
  if constexpr (F::kEmin - F::kMant >= 1 - wide_bias) {
    // Subnormal in F, normal in the wide format (f16 -> f32, f64; bf16 -> f64).
    const int p = 63 - clz64(mant);
    return sign | (static_cast<u64>(p + F::kEmin - F::kMant + wide_bias) << WM) |
           ((mant << (WM - p)) & ((u64(1) << WM) - 1));
  } else {
    // Both formats have one exponent range (bf16 -> f32): subnormal in both.
    static_assert(F::kEmin == 1 - wide_bias, "a narrower format with a wider exponent range");
    return sign | (mant << (WM - F::kMant));
  }
}

template <class F> AJ_HD float to_f32(u16 h) { return f32_of(static_cast<u32>(widen_bits<F, 8, 23>(h))); }
template <class F> AJ_HD double to_f64(u16 h) { return f64_of(widen_bits<F, 11, 52>(h)); }

}  // namespace half_detail

// A storage type of F's 16 bits: explicit conversions from and to the
// built-in arithmetic types, nothing else (compute in float).
template <class F>
struct half_t {
  unsigned short bits;

  half_t() = default;
  AJ_HD explicit half_t(float x) : bits(half_detail::from_f32<F>(x)) {}
  AJ_HD explicit half_t(double x) : bits(half_detail::from_f64<F>(x)) {}
  AJ_HD explicit half_t(int x) : bits(half_detail::from_i64<F>(x)) {}
  AJ_HD explicit half_t(long x) : bits(half_detail::from_i64<F>(x)) {}
  AJ_HD explicit half_t(long long x) : bits(half_detail::from_i64<F>(x)) {}
  AJ_HD explicit half_t(unsigned long x) : bits(half_detail::from_u64<F>(x)) {}
  AJ_HD explicit half_t(unsigned long long x) : bits(half_detail::from_u64<F>(x)) {}
  AJ_HD explicit operator float() const { return half_detail::to_f32<F>(bits); }
  AJ_HD explicit operator double() const { return half_detail::to_f64<F>(bits); }
  AJ_HD static half_t from_bits(unsigned short b) {
    half_t h;
    h.bits = b;
    return h;
  }
};

using f16 = half_t<half_detail::Binary16>;
using bf16 = half_t<half_detail::BFloat16>;

}  // namespace aj

// The semantics of every scalar operation, written once. Three compilers read
// this file, so every backend computes with the same source:
//  - host C++: constant folding (opt/passes/simplify), the reference
//    interpreter, the kernel interpreter and the host JIT's runtime helpers;
//  - clang-19 (AJ_SEM_BITCODE), at build time: jit/llvm/semantics_bitcode.cpp
//    instantiates these functions as LLVM bitcode that the host JIT links into
//    every kernel and inlines (jit/llvm/scalar_codegen.hpp);
//  - NVRTC (AJ_SEM_CUDA): the CUDA prelude is this file preprocessed at build
//    time (jit/cuda/cuda_prelude.cu), and generated CUDA C calls these
//    functions with constant ops (the switches fold away).
// So: every function AJ_HD, no standard library under AJ_SEM_CUDA, math
// through `math::` below. docs/semantics.md states the same rules in prose.
//
// No `default:` in an op switch: a new op in arrayjit/ops.def is a compile error
// (-Werror=switch) until every switch here handles it. A new op needs its
// case here and nothing in the emitters (README "Where things go").
//
// Half types (aj::f16, aj::bf16; arrayjit/half.hpp) compute in f32 and round
// once per op; reductions accumulate in acc_t<T> (f32 for them).
#pragma once

#if defined(AJ_SEM_CUDA)
#define AJ_HD __device__ __forceinline__
#else
#ifndef AJ_HD
#define AJ_HD inline
#endif
#include <cmath>
#include <limits>
#include <string>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"
#endif

#include "arrayjit/half.hpp"
#include "base/op.hpp"

// What an impossible case does: host code reports an internal error; the
// bitcode and the device code never reach one (their ops are constants).
#if defined(AJ_SEM_CUDA) || defined(AJ_SEM_BITCODE)
#define AJ_SEM_FAIL(message) __builtin_unreachable()
#else
#define AJ_SEM_FAIL(message) ::aj::internal_error(message)
#endif

// The math functions ops need from a library: X(name, arity, SLEEF accuracy)
// for each row of arrayjit/ops.def that is one (its libm columns: `exp, u10`).
// Host C++ calls std::name, NVRTC CUDA's name / namef, and the host JIT's
// bitcode a hook aj_math_<name>_<f32|f64> whose body code generation writes
// per kernel: a call of SLEEF's `accuracy` variant (u10: 1.0 ulp, u35: 3.5),
// which the loop vectorizer widens (jit/llvm/scalar_codegen.cpp,
// jit/llvm/runtime_symbols.cpp). AJ_LIBM_<accuracy> (base/op.hpp) picks X for
// those rows and AJ_MATH_NONE_ for the others, then calls it.
#define AJ_MATH_FUNCS(X) AJ_OPS_V(AJ_MATH_FUNC_, X)
#define AJ_MATH_FUNC_(X, e, name, arity, cat, flags, api, fn, libm, acc) \
  AJ_LIBM_##acc(X, AJ_MATH_NONE_, AJ_MATH_NONE_)(libm, arity, acc)
#define AJ_MATH_NONE_(libm, arity, acc)

#if defined(AJ_SEM_BITCODE)
#define AJ_MATH_HOOK_1(n) extern "C" float aj_math_##n##_f32(float); extern "C" double aj_math_##n##_f64(double);
#define AJ_MATH_HOOK_2(n) \
  extern "C" float aj_math_##n##_f32(float, float); extern "C" double aj_math_##n##_f64(double, double);
#define AJ_MATH_HOOK(n, arity, acc) AJ_MATH_HOOK_##arity(n)
AJ_MATH_FUNCS(AJ_MATH_HOOK)
#undef AJ_MATH_HOOK
#endif

namespace aj::sem {

// ---- types and math for the three compilers ---------------------------------------------

template <class A, class B> inline constexpr bool same = false;
template <class A> inline constexpr bool same<A, A> = true;
template <class T> inline constexpr bool is_fp = same<T, float> || same<T, double>;
template <class T> inline constexpr bool is_half_type = false;
template <class F> inline constexpr bool is_half_type<half_t<F>> = true;
// The integer kinds (arrayjit/dtypes.def's Signed and Unsigned) by C++ type:
// every integer rule below (limits, saturation, division, negation) chooses
// by these, so a dtype row of any standard integer type needs nothing here.
// visit_dtype's static_asserts check each row's kind against them.
template <class T> inline constexpr bool is_signed_int =
    same<T, signed char> || same<T, short> || same<T, int> || same<T, long> || same<T, long long>;
template <class T> inline constexpr bool is_unsigned_int = same<T, unsigned char> || same<T, unsigned short> ||
                                                         same<T, unsigned> || same<T, unsigned long> ||
                                                         same<T, unsigned long long>;
template <class T> inline constexpr bool is_int = is_signed_int<T> || is_unsigned_int<T>;

// The unsigned type of T's width.
template <class T> struct unsigned_of;
template <> struct unsigned_of<signed char> { using type = unsigned char; };
template <> struct unsigned_of<short> { using type = unsigned short; };
template <> struct unsigned_of<int> { using type = unsigned; };
template <> struct unsigned_of<long> { using type = unsigned long; };
template <> struct unsigned_of<long long> { using type = unsigned long long; };
template <> struct unsigned_of<unsigned char> { using type = unsigned char; };
template <> struct unsigned_of<unsigned short> { using type = unsigned short; };
template <> struct unsigned_of<unsigned> { using type = unsigned; };
template <> struct unsigned_of<unsigned long> { using type = unsigned long; };
template <> struct unsigned_of<unsigned long long> { using type = unsigned long long; };
// What wrapping arithmetic of T computes in: its unsigned type, or unsigned
// int for the narrower ones, which C++ would promote to a signed int (where
// a u16 product can overflow).
template <class T> using wrap_t = decltype(typename unsigned_of<T>::type(0) + 0u);

// What a reduction of T accumulates in: halves in f32, the rest in T.
template <class T> struct acc_of { using type = T; };
template <class F> struct acc_of<half_t<F>> { using type = float; };
template <class T> using acc_t = typename acc_of<T>::type;

// An integer type's largest and smallest values.
template <class T> AJ_HD T int_max() {
  if constexpr (is_signed_int<T>) return static_cast<T>(static_cast<typename unsigned_of<T>::type>(-1) >> 1);
  else return static_cast<T>(-1);
}
template <class T> AJ_HD T int_min() {
  if constexpr (is_signed_int<T>) return static_cast<T>(-int_max<T>() - 1);
  else return T(0);
}
template <class T> AJ_HD T infinity() {
  if constexpr (same<T, float>) return half_detail::f32_of(0x7f800000u);
  else return half_detail::f64_of(0x7ff0000000000000ull);
}

namespace math {
#if defined(AJ_SEM_CUDA)
#define AJ_MATH_EXACT(n, cf, cd) AJ_HD float n(float x) { return ::cf(x); } AJ_HD double n(double x) { return ::cd(x); }
#define AJ_MATH_EXACT2(n, cf, cd) \
  AJ_HD float n(float x, float y) { return ::cf(x, y); } AJ_HD double n(double x, double y) { return ::cd(x, y); }
AJ_HD bool isnan(float x) { return ::isnan(x); }
AJ_HD bool isnan(double x) { return ::isnan(x); }
AJ_HD bool signbit(float x) { return ::signbit(x); }
AJ_HD bool signbit(double x) { return ::signbit(x); }
#define AJ_MATH_LIB_1(n) AJ_MATH_EXACT(n, n##f, n)
#define AJ_MATH_LIB_2(n) AJ_MATH_EXACT2(n, n##f, n)
#elif defined(AJ_SEM_BITCODE)
#define AJ_MATH_EXACT(n, cf, cd) \
  AJ_HD float n(float x) { return __builtin_##cf(x); } AJ_HD double n(double x) { return __builtin_##cd(x); }
#define AJ_MATH_EXACT2(n, cf, cd) \
  AJ_HD float n(float x, float y) { return __builtin_##cf(x, y); } \
  AJ_HD double n(double x, double y) { return __builtin_##cd(x, y); }
AJ_HD bool isnan(float x) { return __builtin_isnan(x); }
AJ_HD bool isnan(double x) { return __builtin_isnan(x); }
AJ_HD bool signbit(float x) { return __builtin_signbit(x); }
AJ_HD bool signbit(double x) { return __builtin_signbit(x); }
#define AJ_MATH_LIB_1(n) \
  AJ_HD float n(float x) { return aj_math_##n##_f32(x); } AJ_HD double n(double x) { return aj_math_##n##_f64(x); }
#define AJ_MATH_LIB_2(n) \
  AJ_HD float n(float x, float y) { return aj_math_##n##_f32(x, y); } \
  AJ_HD double n(double x, double y) { return aj_math_##n##_f64(x, y); }
#else
#define AJ_MATH_EXACT(n, cf, cd) AJ_HD float n(float x) { return std::n(x); } AJ_HD double n(double x) { return std::n(x); }
#define AJ_MATH_EXACT2(n, cf, cd) \
  AJ_HD float n(float x, float y) { return std::n(x, y); } AJ_HD double n(double x, double y) { return std::n(x, y); }
AJ_HD bool isnan(float x) { return std::isnan(x); }
AJ_HD bool isnan(double x) { return std::isnan(x); }
AJ_HD bool signbit(float x) { return std::signbit(x); }
AJ_HD bool signbit(double x) { return std::signbit(x); }
#define AJ_MATH_LIB_1(n) AJ_MATH_EXACT(n, n##f, n)
#define AJ_MATH_LIB_2(n) AJ_MATH_EXACT2(n, n##f, n)
#endif
// Correctly rounded everywhere (IEEE operations or exact results).
AJ_MATH_EXACT(fabs, fabsf, fabs)
AJ_MATH_EXACT(floor, floorf, floor)
AJ_MATH_EXACT(ceil, ceilf, ceil)
AJ_MATH_EXACT(nearbyint, rintf, rint)  // the default rounding mode: half to even
AJ_MATH_EXACT(trunc, truncf, trunc)
AJ_MATH_EXACT(sqrt, sqrtf, sqrt)
AJ_MATH_EXACT2(fmod, fmodf, fmod)
AJ_MATH_EXACT2(copysign, copysignf, copysign)
AJ_MATH_EXACT2(nextafter, nextafterf, nextafter)
// a * b + c with one rounding (f64 only: the special functions' error terms).
#if defined(AJ_SEM_CUDA)
AJ_HD double fma(double a, double b, double c) { return ::fma(a, b, c); }
#elif defined(AJ_SEM_BITCODE)
AJ_HD double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
#else
AJ_HD double fma(double a, double b, double c) { return std::fma(a, b, c); }
#endif
// Library functions (within 4 ulp of each other across backends).
#define AJ_MATH_LIB(n, arity, acc) AJ_MATH_LIB_##arity(n)
AJ_MATH_FUNCS(AJ_MATH_LIB)
#undef AJ_MATH_LIB
#undef AJ_MATH_LIB_1
#undef AJ_MATH_LIB_2
#undef AJ_MATH_EXACT
#undef AJ_MATH_EXACT2
}  // namespace math

// digamma, erfinv, i0 and the other functions written from math:: (not libraries).
#include "base/special_math.hpp"

#if !defined(AJ_SEM_CUDA)
// Calls f(T{}) with the C++ type of dtype t (arrayjit/dtypes.def): the one
// dispatch from a run-time dtype to typed code.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
#define AJ_VISIT_CASE(e, name, bytes, cpp, cuda, kind, digits, fmt) \
  case DType::e: return f(cpp{});
    AJ_DTYPES(AJ_VISIT_CASE)
#undef AJ_VISIT_CASE
  }
  AJ_SEM_FAIL("visit_dtype: bad dtype");
}

// Each row of arrayjit/dtypes.def names a C++ type of its Kind, digits and
// bytes: the functions here choose by the C++ type (is_signed_int, ...),
// promotion and the emitters by the Kind column, and the two must agree.
template <class T> constexpr bool known_type = same<T, bool> || is_int<T> || is_fp<T> || is_half_type<T>;
template <class T> constexpr DTypeKind kind_of() {
  if constexpr (same<T, bool>) return DTypeKind::Bool;
  else if constexpr (is_signed_int<T>) return DTypeKind::Signed;
  else if constexpr (is_unsigned_int<T>) return DTypeKind::Unsigned;
  else return DTypeKind::Float;
}
template <class T> struct digits_of { static constexpr int value = std::numeric_limits<T>::digits; };
template <class F> struct digits_of<half_t<F>> { static constexpr int value = F::kMant + 1; };
#define AJ_CHECK_ROW(e, name, bytes, cpp, cuda, kind, digits, fmt)                                         \
  static_assert(known_type<cpp> && kind_of<cpp>() == DTypeKind::kind && digits_of<cpp>::value == digits && \
                    sizeof(cpp) == bytes,                                                                  \
                "arrayjit/dtypes.def: the row " name " names a C++ type of another kind, digits or size");
AJ_DTYPES(AJ_CHECK_ROW)
#undef AJ_CHECK_ROW
#endif

// ---- conversion (astype) ------------------------------------------------------------------
// Floats to integers truncate toward zero and saturate at the integer's
// limits (to an unsigned integer, negative values give 0); NaN becomes 0.
// Anything to bool is "!= 0" (NaN is true). Integers wrap (two's complement).
// Halves widen exactly and round once to nearest even (arrayjit/half.hpp).
template <class To, class From>
AJ_HD To convert(From v) {
  if constexpr (is_half_type<From>) {
    return convert<To>(static_cast<float>(v));  // exact: then f32's rules
  } else if constexpr (is_half_type<To>) {
    if constexpr (same<From, bool>) return To(v ? 1.0f : 0.0f);
    else if constexpr (is_fp<From>) return To(v);
    else {
      // Rounded once from the integer (half.hpp): through long long, which
      // holds every value of the integers up to 32 bits and of i64, or a u64
      // as it is.
      if constexpr (is_unsigned_int<From> && sizeof(From) == 8) return To(static_cast<unsigned long long>(v));
      else return To(static_cast<long long>(v));
    }
  } else if constexpr (same<To, bool>) {
    return v != From(0);
  } else if constexpr (is_fp<From> && is_signed_int<To>) {
    if (math::isnan(v)) return 0;
    // The limits of signed integers are -2^(n-1) and 2^(n-1) - 1: -lo is a
    // power of two, exact in double.
    const double lo = static_cast<double>(int_min<To>());
    if (static_cast<double>(v) < lo) return int_min<To>();
    if (static_cast<double>(v) >= -lo) return int_max<To>();
    return static_cast<To>(v);
  } else if constexpr (is_fp<From> && is_unsigned_int<To>) {
    if (math::isnan(v) || static_cast<double>(v) <= 0.0) return 0;
    // The limit 2^n - 1: 2^n = 2 * (2^(n-1)), exact in double.
    const double hi = 2.0 * static_cast<double>(int_max<To>() / 2 + 1);
    if (static_cast<double>(v) >= hi) return int_max<To>();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ---- integer arithmetic: wraps on overflow (computed unsigned) ------------------------------
template <class T> AJ_HD T wrap_add(T a, T b) {
  using U = wrap_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T> AJ_HD T wrap_sub(T a, T b) {
  using U = wrap_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T> AJ_HD T wrap_mul(T a, T b) {
  using U = wrap_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T> AJ_HD T wrap_neg(T a) {
  using U = wrap_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}

// Floor division (NumPy's //). x / 0 = 0; MIN / -1 = MIN (wraps). Unsigned
// operands are never negative: truncation is the floor.
template <class T> AJ_HD T int_floordiv(T a, T b) {
  if (b == 0) return 0;
  if constexpr (is_unsigned_int<T>) {
    return static_cast<T>(a / b);
  } else {
    if (b == -1) return wrap_neg(a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
}
// Modulo with the sign of the divisor (NumPy's %). x % 0 = 0.
template <class T> AJ_HD T int_mod(T a, T b) {
  if constexpr (is_unsigned_int<T>) {
    return b == 0 ? T(0) : static_cast<T>(a % b);
  } else {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}
// Remainder with the sign of the dividend (C's fmod, NumPy's np.fmod on
// integers): x fmod 0 = 0, as NumPy (which warns), and MIN fmod -1 = 0.
template <class T> AJ_HD T int_fmod(T a, T b) {
  if constexpr (is_unsigned_int<T>) {
    return b == 0 ? T(0) : static_cast<T>(a % b);
  } else {
    if (b == 0 || b == -1) return 0;
    return static_cast<T>(a % b);
  }
}
// Float modulo with the sign of the divisor (NumPy): fmod, then shifted.
template <class T> AJ_HD T float_mod(T a, T b) {
  T r = math::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  if (r == 0) r = math::copysign(T(0), b);
  return r;
}
// NumPy's gcd and lcm: Euclid's algorithm on the magnitudes, computed
// unsigned (|MIN| is 2^(n-1) there), the result cast back, so gcd(MIN, 0)
// and an lcm past the maximum wrap as NumPy's npy_gcd / npy_lcm do.
template <class T> AJ_HD typename unsigned_of<T>::type int_magnitude(T a) {
  using U = typename unsigned_of<T>::type;
  if constexpr (is_unsigned_int<T>) return a;
  else return a < 0 ? static_cast<U>(U(0) - static_cast<U>(a)) : static_cast<U>(a);
}
template <class T> AJ_HD typename unsigned_of<T>::type gcd_magnitude(T a, T b) {
  using U = typename unsigned_of<T>::type;
  U x = int_magnitude(a), y = int_magnitude(b);
  while (y != 0) {
    const U r = static_cast<U>(x % y);
    x = y;
    y = r;
  }
  return x;
}
template <class T> AJ_HD T int_gcd(T a, T b) { return static_cast<T>(gcd_magnitude(a, b)); }
template <class T> AJ_HD T int_lcm(T a, T b) {
  using U = typename unsigned_of<T>::type;
  const U g = gcd_magnitude(a, b);
  if (g == 0) return T(0);
  return static_cast<T>(static_cast<wrap_t<T>>(int_magnitude(a) / g) * static_cast<wrap_t<T>>(int_magnitude(b)));
}

// Integer power by squaring, wrapping. Negative exponents: 1/a^|b| truncated,
// i.e. 1 for a == 1, +-1 for a == -1, otherwise 0 (0 ** negative is 0).
template <class T> AJ_HD T int_pow(T a, T b) {
  if constexpr (is_signed_int<T>) {
    if (b < 0) {
      if (a == 1) return 1;
      if (a == -1) return (b % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  T r = 1;
  while (b > 0) {
    if (b & 1) r = wrap_mul(r, a);
    a = wrap_mul(a, a);
    b >>= 1;
  }
  return r;
}

// IEEE 754-2019 maximum/minimum: NaN propagates, -0 < +0.
template <class T> AJ_HD T fmax_nan(T a, T b) {
  if constexpr (is_fp<T>) {
    if (math::isnan(a)) return a;
    if (math::isnan(b)) return b;
    if (a == b) return math::signbit(a) ? b : a;  // max(-0, +0) = +0
  }
  return a > b ? a : b;
}
template <class T> AJ_HD T fmin_nan(T a, T b) {
  if constexpr (is_fp<T>) {
    if (math::isnan(a)) return a;
    if (math::isnan(b)) return b;
    if (a == b) return math::signbit(a) ? a : b;  // min(-0, +0) = -0
  }
  return a < b ? a : b;
}

// ---- elementwise ops -------------------------------------------------------------------------
template <class T> AJ_HD T unary(Op op, T x) {
  // Cast is computed by convert(); tracing rejects arithmetic on bool and
  // casts integers to floats for the float-only ops (FloatOnly in ops.def).
  if constexpr (is_half_type<T>) {
    return T(unary<float>(op, static_cast<float>(x)));
  } else if constexpr (same<T, bool>) {
    switch (op) {
      case Op::Not: case Op::BitNot: return !x;
      case Op::Neg: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round:
      case Op::Exp: case Op::Log: case Op::Log1p: case Op::Expm1: case Op::Sin: case Op::Cos:
      case Op::Tan: case Op::Tanh: case Op::Sigmoid: case Op::Sqrt: case Op::Rsqrt:
      case Op::Erf: case Op::Erfc: case Op::Trunc:
      case Op::Arcsin: case Op::Arccos: case Op::Arctan: case Op::Sinh: case Op::Cosh: case Op::Arcsinh:
      case Op::Arccosh: case Op::Arctanh: case Op::Exp2: case Op::Log2: case Op::Log10: case Op::Cbrt:
      case Op::Lgamma: case Op::Digamma: case Op::Trigamma: case Op::Erfinv: case Op::Ndtri: case Op::LogNdtr:
      case Op::I0: case Op::I1:
      case Op::Cast: return x;  // tracing never asks
      AJ_CASES_OUTSIDE(Unary) break;
    }
  } else if constexpr (is_int<T>) {
    switch (op) {
      case Op::Neg: return wrap_neg(x);  // unsigned: 2^n - x, as NumPy
      case Op::Abs:
        if constexpr (is_unsigned_int<T>) return x;
        else return x < 0 ? wrap_neg(x) : x;  // abs(MIN) = MIN
      case Op::Sign:
        if constexpr (is_unsigned_int<T>) return static_cast<T>(x != 0);
        else return static_cast<T>((x > 0) - (x < 0));
      case Op::Floor:
      case Op::Ceil:
      case Op::Round:
      case Op::Trunc: return x;
      case Op::BitNot: return static_cast<T>(~x);
      case Op::Not:
      case Op::Arcsin: case Op::Arccos: case Op::Arctan: case Op::Sinh: case Op::Cosh: case Op::Arcsinh:
      case Op::Arccosh: case Op::Arctanh: case Op::Exp2: case Op::Log2: case Op::Log10: case Op::Cbrt:
      case Op::Lgamma: case Op::Digamma: case Op::Trigamma: case Op::Erfinv: case Op::Ndtri: case Op::LogNdtr:
      case Op::I0: case Op::I1:
      case Op::Exp: case Op::Log: case Op::Log1p: case Op::Expm1: case Op::Sin: case Op::Cos:
      case Op::Tan: case Op::Tanh: case Op::Sigmoid: case Op::Sqrt: case Op::Rsqrt:
      case Op::Erf: case Op::Erfc:
      case Op::Cast: return x;  // tracing casts integers to float for these
      AJ_CASES_OUTSIDE(Unary) break;
    }
  } else {
    switch (op) {
      case Op::Neg: return -x;
      case Op::Abs: return math::fabs(x);
      case Op::Sign: return x > 0 ? T(1) : x < 0 ? T(-1) : x;  // +-0 and NaN unchanged
      case Op::Floor: return math::floor(x);
      case Op::Ceil: return math::ceil(x);
      case Op::Round: return math::nearbyint(x);  // half to even
      case Op::Exp: return math::exp(x);
      case Op::Log: return math::log(x);
      case Op::Log1p: return math::log1p(x);
      case Op::Expm1: return math::expm1(x);
      case Op::Sin: return math::sin(x);
      case Op::Cos: return math::cos(x);
      case Op::Tan: return math::tan(x);
      case Op::Tanh: return math::tanh(x);
      case Op::Sigmoid: return T(1) / (T(1) + math::exp(-x));
      case Op::Sqrt: return math::sqrt(x);
      case Op::Rsqrt: return T(1) / math::sqrt(x);
      case Op::Erf: return math::erf(x);
      case Op::Erfc: return math::erfc(x);
      case Op::Trunc: return math::trunc(x);
      case Op::Arcsin: return math::asin(x);
      case Op::Arccos: return math::acos(x);
      case Op::Arctan: return math::atan(x);
      case Op::Sinh: return math::sinh(x);
      case Op::Cosh: return math::cosh(x);
      case Op::Arcsinh: return math::asinh(x);
      case Op::Arccosh: return math::acosh(x);
      case Op::Arctanh: return math::atanh(x);
      case Op::Exp2: return math::exp2(x);
      case Op::Log2: return math::log2(x);
      case Op::Log10: return math::log10(x);
      case Op::Cbrt: return math::cbrt(x);
      case Op::Lgamma: return math::lgamma(x);
      // Computed in f64 (base/special_math.hpp), rounded once to T.
      case Op::Digamma: return static_cast<T>(special::digamma(static_cast<double>(x)));
      case Op::Trigamma: return static_cast<T>(special::trigamma(static_cast<double>(x)));
      case Op::Erfinv: return static_cast<T>(special::erfinv(static_cast<double>(x)));
      case Op::Ndtri: return static_cast<T>(special::ndtri(static_cast<double>(x)));
      case Op::LogNdtr: return static_cast<T>(special::log_ndtr(static_cast<double>(x)));
      case Op::I0: return static_cast<T>(special::bessel_i(0, static_cast<double>(x)));
      case Op::I1: return static_cast<T>(special::bessel_i(1, static_cast<double>(x)));
      case Op::Not: case Op::BitNot:  // (tracing refuses bit operations on floats)
      case Op::Cast: return x;
      AJ_CASES_OUTSIDE(Unary) break;
    }
  }
  AJ_SEM_FAIL(std::string("sem::unary: ") + op_name(op) + " is not a unary op of this dtype");
}

AJ_HD unsigned long long random_bits(unsigned long long key, unsigned long long index);  // (generators, below)

template <class T> AJ_HD T binary(Op op, T a, T b) {
  if constexpr (is_half_type<T>) {
    return T(binary<float>(op, static_cast<float>(a), static_cast<float>(b)));
  } else if constexpr (same<T, bool>) {
    switch (op) {
      case Op::And: case Op::BitAnd: return a && b;
      case Op::Or: case Op::BitOr: return a || b;
      case Op::BitXor: return a != b;
      case Op::Max: return a || b;
      case Op::Min: return a && b;
      case Op::LeftShift: case Op::RightShift: case Op::Gcd: case Op::Lcm:  // tracing makes these i8
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::Pow:
      case Op::Arctan2: case Op::Hypot: case Op::Copysign: case Op::Nextafter: case Op::Fmod:
      case Op::Logaddexp: case Op::Logaddexp2: case Op::RandomBits:
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return a;  // tracing rejects arithmetic on bool
      AJ_CASES_OUTSIDE(Binary) break;
    }
  } else if constexpr (is_int<T>) {
    switch (op) {
      case Op::Add: return wrap_add(a, b);
      case Op::Sub: return wrap_sub(a, b);
      case Op::Mul: return wrap_mul(a, b);
      case Op::Div: return int_floordiv(a, b);
      case Op::Mod: return int_mod(a, b);
      case Op::Max: return a > b ? a : b;
      case Op::Min: return a < b ? a : b;
      case Op::Pow: return int_pow(a, b);
      case Op::Fmod: return int_fmod(a, b);
      case Op::RandomBits:  // tracing makes both i64
        return static_cast<T>(random_bits(static_cast<unsigned long long>(a), static_cast<unsigned long long>(b)));
      case Op::BitAnd: return static_cast<T>(a & b);
      case Op::BitOr: return static_cast<T>(a | b);
      case Op::BitXor: return static_cast<T>(a ^ b);
      // NumPy's npy_lshift / npy_rshift: a count outside [0, width) (negative
      // ones too, compared unsigned) shifts everything out.
      case Op::LeftShift:
        return static_cast<unsigned long long>(b) < sizeof(T) * 8
                   ? static_cast<T>(static_cast<unsigned long long>(a) << static_cast<unsigned long long>(b))
                   : T(0);
      case Op::RightShift:
        if (static_cast<unsigned long long>(b) < sizeof(T) * 8) return static_cast<T>(a >> b);
        return a < 0 ? T(-1) : T(0);
      case Op::Gcd: return int_gcd(a, b);
      case Op::Lcm: return int_lcm(a, b);
      case Op::Arctan2: case Op::Hypot: case Op::Copysign: case Op::Nextafter:  // tracing makes these float
      case Op::Logaddexp: case Op::Logaddexp2:
      case Op::And: case Op::Or:
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
        return a;  // logical ops take bool; compare() does the comparisons
      AJ_CASES_OUTSIDE(Binary) break;
    }
  } else {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Sub: return a - b;
      case Op::Mul: return a * b;
      case Op::Div: return a / b;
      case Op::Mod: return float_mod(a, b);
      case Op::Max: return fmax_nan(a, b);
      case Op::Min: return fmin_nan(a, b);
      case Op::Pow: return math::pow(a, b);
      case Op::Arctan2: return math::atan2(a, b);
      case Op::Hypot: return math::hypot(a, b);
      case Op::Copysign: return math::copysign(a, b);
      case Op::Nextafter: return math::nextafter(a, b);
      case Op::Fmod: return math::fmod(a, b);
      // f32 in f64: where the result cancels to near 0 (max(a, b) against the
      // log1p term), f64's rounding is far below an f32 ulp.
      case Op::Logaddexp:
        if constexpr (same<T, float>) return static_cast<float>(special::logaddexp<double>(a, b, false));
        else return special::logaddexp(a, b, false);
      case Op::Logaddexp2:
        if constexpr (same<T, float>) return static_cast<float>(special::logaddexp<double>(a, b, true));
        else return special::logaddexp(a, b, true);
      case Op::And: case Op::Or: case Op::RandomBits:  // (random bits are i64: tracing)
      case Op::BitAnd: case Op::BitOr: case Op::BitXor: case Op::LeftShift: case Op::RightShift:  // (tracing)
      case Op::Gcd: case Op::Lcm:
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
        return a;
      AJ_CASES_OUTSIDE(Binary) break;
    }
  }
  AJ_SEM_FAIL(std::string("sem::binary: ") + op_name(op) + " is not an arithmetic op of this dtype");
}

template <class T> AJ_HD bool compare(Op op, T a, T b) {
  if constexpr (is_half_type<T>) {
    return compare<float>(op, static_cast<float>(a), static_cast<float>(b));
  } else {
    switch (op) {
      case Op::Eq: return a == b;
      case Op::Ne: return a != b;
      case Op::Lt: return a < b;
      case Op::Le: return a <= b;
      case Op::Gt: return a > b;
      case Op::Ge: return a >= b;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::Max: case Op::Min:
      case Op::Pow: case Op::And: case Op::Or:
      case Op::Arctan2: case Op::Hypot: case Op::Copysign: case Op::Nextafter: case Op::Fmod:
      case Op::Logaddexp: case Op::Logaddexp2: case Op::RandomBits:
      case Op::BitAnd: case Op::BitOr: case Op::BitXor: case Op::LeftShift: case Op::RightShift:
      case Op::Gcd: case Op::Lcm:
      AJ_CASES_OUTSIDE(Binary) break;
    }
  }
  AJ_SEM_FAIL(std::string("sem::compare: not a comparison: ") + op_name(op));
}

// ---- reductions -------------------------------------------------------------------------------
// Identities and combiners. Max/min of floats propagate NaN. A reduction of T
// runs in acc_t<T> and converts once at the end (halves accumulate in f32).
template <class T> AJ_HD T reduce_identity(Op op) {
  if constexpr (is_half_type<T>) {
    return T(reduce_identity<float>(op));
  } else {
    switch (op) {
      case Op::Sum: return T(0);
      case Op::Prod: return T(1);
      case Op::ReduceMax:
        if constexpr (is_fp<T>) return -infinity<T>();
        else if constexpr (is_int<T>) return int_min<T>();
        else return T(0);
      case Op::ReduceMin:
        if constexpr (is_fp<T>) return infinity<T>();
        else if constexpr (is_int<T>) return int_max<T>();
        else return T(1);
      case Op::All: return T(1);
      case Op::Any: return T(0);
      case Op::ArgMax: case Op::ArgMin:  // (value, index) pairs: arg_take
      AJ_CASES_OUTSIDE(Reduce) break;
    }
  }
  AJ_SEM_FAIL(std::string("sem::reduce_identity: ") + op_name(op));
}
template <class T> AJ_HD T reduce_combine(Op op, T acc, T x) {
  switch (op) {
    case Op::Sum: return binary(Op::Add, acc, x);
    case Op::Prod: return binary(Op::Mul, acc, x);
    case Op::ReduceMax: return binary(Op::Max, acc, x);
    case Op::ReduceMin: return binary(Op::Min, acc, x);
    case Op::All: return convert<T>(convert<bool>(acc) && convert<bool>(x));
    case Op::Any: return convert<T>(convert<bool>(acc) || convert<bool>(x));
    case Op::ArgMax: case Op::ArgMin:  // (value, index) pairs: arg_take
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  AJ_SEM_FAIL(std::string("sem::reduce_combine: ") + op_name(op));
}
// Does x replace the current best for argmax/argmin? The first NaN wins and
// stays; ties keep the first index.
template <class T> AJ_HD bool arg_better(Op op, T x, T best) {
  if constexpr (is_half_type<T>) {
    return arg_better<float>(op, static_cast<float>(x), static_cast<float>(best));
  } else {
    if constexpr (is_fp<T>) {
      if (math::isnan(best)) return false;
      if (math::isnan(x)) return true;
    }
    return op == Op::ArgMax ? x > best : x < best;
  }
}
// Does candidate (x, xi) replace (best, bi)? The lowest index among the best
// values, whatever order candidates come in (vector lanes, thread parts).
template <class T> AJ_HD bool arg_take(Op op, T x, long long xi, T best, long long bi) {
  return arg_better(op, x, best) || (!arg_better(op, best, x) && xi < bi);
}

// Scans: the running value starts from scan_identity and combines each
// element in order along the axis with scan_combine: reduce_combine for
// cumsum, cumprod, cummax, cummin (Sum, Prod, ReduceMax, ReduceMin: max/min
// propagate NaN, as NumPy's maximum.accumulate), the binary logaddexp for
// logcumsumexp (from -inf). A float running sum starts from -0.0, the
// identity that keeps every first element's bits (-0.0 + x == x, also for
// x == -0.0): as NumPy, which copies the first element.
AJ_HD constexpr Op scan_combiner(Op scan) {
  switch (scan) {
    case Op::CumProd: return Op::Prod;
    case Op::CumMax: return Op::ReduceMax;
    case Op::CumMin: return Op::ReduceMin;
    case Op::LogCumSumExp: return Op::Logaddexp;
    default: return Op::Sum;
  }
}
template <class T> AJ_HD T scan_identity(Op combiner) {
  if constexpr (is_fp<T>) {
    if (combiner == Op::Sum) return T(-0.0);
  } else if constexpr (is_half_type<T>) {
    if (combiner == Op::Sum) return T::from_bits(0x8000);
  }
  if (combiner == Op::Logaddexp) return reduce_identity<T>(Op::ReduceMax);  // -inf (floats only)
  return reduce_identity<T>(combiner);
}
template <class T> AJ_HD T scan_combine(Op combiner, T acc, T x) {
  if (combiner == Op::Logaddexp) return binary(Op::Logaddexp, acc, x);
  return reduce_combine(combiner, acc, x);
}

// ---- generators -------------------------------------------------------------------------------
// Counter-based random numbers: a value depends only on (key, index).
AJ_HD unsigned long long splitmix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Uniform double in [0, 1) with 53 random bits.
AJ_HD double uniform01(unsigned long long key, unsigned long long index, unsigned long long stream = 0) {
  const unsigned long long h = splitmix64(key ^ splitmix64(index * 2 + stream));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}
// 64 random bits: the hash uniform01 takes its 53 bits from.
AJ_HD unsigned long long random_bits(unsigned long long key, unsigned long long index) {
  return splitmix64(key ^ splitmix64(index * 2));
}
// Standard normal by Box-Muller on two uniforms of the same index.
AJ_HD double normal01(unsigned long long key, unsigned long long index) {
  const double u1 = 1.0 - uniform01(key, index, 0);  // (0, 1]: log is finite
  const double u2 = uniform01(key, index, 1);
  return math::sqrt(-2.0 * math::log(u1)) * math::cos(6.283185307179586 * u2);
}
// The largest T below x (x > lowest finite): nextafter toward -inf.
template <class T> AJ_HD T step_down(T x) {
  if constexpr (is_half_type<T>) {
    const unsigned short b = x.bits;
    if ((b & 0x7fff) == 0) return T::from_bits(0x8001);  // +-0: the negative smallest subnormal
    return T::from_bits(static_cast<unsigned short>((b & 0x8000) ? b + 1 : b - 1));
  } else {
    return math::nextafter(x, -infinity<T>());
  }
}

// A generator's value at flat index i: iota (start f0, step f1), linspace
// (f0 to f1 in `extra` points), eye (diagonal i0 of a matrix of `extra`
// columns), uniform in [f0, f1) and normal (mean f0, stddev f1) random
// numbers of key i0, and 64 random bits of key i0 (as i64). The one
// definition: both interpreters, the host JIT (runtime helpers) and
// generated CUDA C call it; Kernel IR passes the payload as four scalars
// (graph/kernel.hpp, KOp::Index).
template <class T>
AJ_HD T generate_value(Op op, double f0, double f1, long long i0, long long extra, long long i) {
  switch (op) {
    case Op::Iota: {
      const bool integral = math::floor(f0) == f0 && math::floor(f1) == f1 && math::fabs(f0) < 9e15 &&
                            math::fabs(f1) < 9e15;
      if constexpr (!is_fp<T> && !is_half_type<T>) {
        if (integral) return convert<T>(static_cast<long long>(f0) + i * static_cast<long long>(f1));
      }
      return convert<T>(f0 + static_cast<double>(i) * f1);
    }
    case Op::Linspace: {
      const long long total = extra;
      const double step = total > 1 ? (f1 - f0) / static_cast<double>(total - 1) : 0.0;
      return convert<T>((i == total - 1 && total > 1) ? f1 : f0 + static_cast<double>(i) * step);
    }
    case Op::Eye: {
      const long long cols = extra;
      return convert<T>((i % cols) - (i / cols) == i0);
    }
    case Op::RandUniform:
    case Op::RandNormal:
      if constexpr (is_fp<T> || is_half_type<T>) {
        const auto key = static_cast<unsigned long long>(i0);
        const auto ui = static_cast<unsigned long long>(i);
        if (op == Op::RandNormal) return convert<T>(f0 + f1 * normal01(key, ui));
        T v = convert<T>(f0 + (f1 - f0) * uniform01(key, ui));
        const T hi = convert<T>(f1);
        if (f1 > f0 && compare(Op::Ge, v, hi)) v = step_down(hi);  // [f0, f1): never f1 itself
        return v;
      }
      AJ_SEM_FAIL("generate: random numbers of a non-float type");
    case Op::RandBits:
      if constexpr (same<T, long long> || same<T, long>) {
        return static_cast<T>(random_bits(static_cast<unsigned long long>(i0), static_cast<unsigned long long>(i)));
      }
      AJ_SEM_FAIL("generate: random bits of a type other than i64");
    AJ_CASES_OUTSIDE(Generator) break;
  }
  AJ_SEM_FAIL(std::string("generate: not a generator: ") + op_name(op));
}

}  // namespace aj::sem

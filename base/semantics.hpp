// The semantics of every scalar operation, written once: constant folding
// (opt/passes/simplify), the reference interpreter, the kernel interpreter and
// the host JIT's runtime helpers call these; the LLVM and CUDA emitters are
// tested against them op by op. docs/semantics.md states the same rules in
// prose. No `default:` in an op switch: a new op in base/ops.def is a
// compile error (-Werror=switch) until every switch here handles it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"
#include <string>

#include "base/op.hpp"

namespace aj::sem {

template <class T> constexpr bool is_fp = std::is_floating_point_v<T>;

// Calls f(T{}) with the C++ type of dtype t: the one dispatch from a run-time
// dtype to typed code, shared by the interpreters and simplify.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::bool_: return f(bool{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
  }
  internal_error("visit_dtype: bad dtype");
}

// ---- conversion (astype): floats to integers truncate toward zero and
// saturate; NaN becomes 0. Anything to bool is "!= 0" (NaN is true).
template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_fp<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return 0;
    // Compare in long double? No: limits of i64 are exactly representable as
    // double powers of two (2^63), so compare against them directly.
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi_excl = -lo;  // 2^31 or 2^63
    if (static_cast<double>(v) < lo) return std::numeric_limits<To>::min();
    if (static_cast<double>(v) >= hi_excl) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To> &&
                       !std::is_same_v<From, bool>) {
    // Two's complement wrap (well defined since C++20).
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ---- integer arithmetic: wraps on overflow (computed unsigned).
template <class T> T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T> T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T> T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T> T wrap_neg(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}

// Floor division (NumPy's //). x / 0 = 0; MIN / -1 = MIN (wraps).
template <class T> T int_floordiv(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
// Modulo with the sign of the divisor (NumPy's %). x % 0 = 0.
template <class T> T int_mod(T a, T b) {
  if (b == 0 || b == -1) return 0;
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// Float modulo with the sign of the divisor (NumPy): fmod, then shifted.
template <class T> T float_mod(T a, T b) {
  T r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  if (r == 0) r = std::copysign(T(0), b);
  return r;
}
// Integer power by squaring, wrapping. Negative exponents: 1/a^|b| truncated,
// i.e. 1 for a == 1, +-1 for a == -1, otherwise 0 (0 ** negative is 0).
template <class T> T int_pow(T a, T b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b % 2 == 0) ? 1 : -1;
    return 0;
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
template <class T> T fmax_nan(T a, T b) {
  if constexpr (is_fp<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a == b) return std::signbit(a) ? b : a;  // max(-0, +0) = +0
  }
  return a > b ? a : b;
}
template <class T> T fmin_nan(T a, T b) {
  if constexpr (is_fp<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a == b) return std::signbit(a) ? a : b;  // min(-0, +0) = -0
  }
  return a < b ? a : b;
}

template <class T> T unary(Op op, T x) {
  // Cast is computed by convert(); tracing rejects arithmetic on bool and
  // casts integers to floats for the float-only ops (FloatOnly in ops.def).
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Op::Not: return !x;
      case Op::Neg: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round:
      case Op::Exp: case Op::Log: case Op::Log1p: case Op::Expm1: case Op::Sin: case Op::Cos:
      case Op::Tan: case Op::Tanh: case Op::Sigmoid: case Op::Sqrt: case Op::Rsqrt:
      case Op::Erf: case Op::Erfc:
      case Op::Cast: return x;  // tracing never asks
      AJ_CASES_OUTSIDE(Unary) break;
    }
  } else if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case Op::Neg: return wrap_neg(x);
      case Op::Abs: return x < 0 ? wrap_neg(x) : x;  // abs(MIN) = MIN
      case Op::Sign: return static_cast<T>((x > 0) - (x < 0));
      case Op::Floor:
      case Op::Ceil:
      case Op::Round: return x;
      case Op::Not:
      case Op::Exp: case Op::Log: case Op::Log1p: case Op::Expm1: case Op::Sin: case Op::Cos:
      case Op::Tan: case Op::Tanh: case Op::Sigmoid: case Op::Sqrt: case Op::Rsqrt:
      case Op::Erf: case Op::Erfc:
      case Op::Cast: return x;  // tracing casts integers to float for these
      AJ_CASES_OUTSIDE(Unary) break;
    }
  } else {
    switch (op) {
      case Op::Neg: return -x;
      case Op::Abs: return std::fabs(x);
      case Op::Sign: return x > 0 ? T(1) : x < 0 ? T(-1) : x;  // +-0 and NaN unchanged
      case Op::Floor: return std::floor(x);
      case Op::Ceil: return std::ceil(x);
      case Op::Round: return std::nearbyint(x);  // default rounding mode: half to even
      case Op::Exp: return std::exp(x);
      case Op::Log: return std::log(x);
      case Op::Log1p: return std::log1p(x);
      case Op::Expm1: return std::expm1(x);
      case Op::Sin: return std::sin(x);
      case Op::Cos: return std::cos(x);
      case Op::Tan: return std::tan(x);
      case Op::Tanh: return std::tanh(x);
      case Op::Sigmoid: return T(1) / (T(1) + std::exp(-x));
      case Op::Sqrt: return std::sqrt(x);
      case Op::Rsqrt: return T(1) / std::sqrt(x);
      case Op::Erf: return std::erf(x);
      case Op::Erfc: return std::erfc(x);
      case Op::Not:
      case Op::Cast: return x;
      AJ_CASES_OUTSIDE(Unary) break;
    }
  }
  internal_error(std::string("sem::unary: ") + op_name(op) + " is not a unary op of this dtype");
}

template <class T> T binary(Op op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Op::And: return a && b;
      case Op::Or: return a || b;
      case Op::Max: return a || b;
      case Op::Min: return a && b;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::Pow:
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return a;  // tracing rejects arithmetic on bool
      AJ_CASES_OUTSIDE(Binary) break;
    }
  } else if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case Op::Add: return wrap_add(a, b);
      case Op::Sub: return wrap_sub(a, b);
      case Op::Mul: return wrap_mul(a, b);
      case Op::Div: return int_floordiv(a, b);
      case Op::Mod: return int_mod(a, b);
      case Op::Max: return a > b ? a : b;
      case Op::Min: return a < b ? a : b;
      case Op::Pow: return int_pow(a, b);
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
      case Op::Pow: return std::pow(a, b);
      case Op::And: case Op::Or:
      case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
        return a;
      AJ_CASES_OUTSIDE(Binary) break;
    }
  }
  internal_error(std::string("sem::binary: ") + op_name(op) + " is not an arithmetic op of this dtype");
}

template <class T> bool compare(Op op, T a, T b) {
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::Max: case Op::Min:
    case Op::Pow: case Op::And: case Op::Or:
    AJ_CASES_OUTSIDE(Binary) break;
  }
  internal_error(std::string("sem::compare: not a comparison: ") + op_name(op));
}

// Reduction identities and combiners. Max/min of floats propagate NaN.
template <class T> T reduce_identity(Op op) {
  switch (op) {
    case Op::Sum: return T(0);
    case Op::Prod: return T(1);
    case Op::ReduceMax:
      if constexpr (is_fp<T>) return -std::numeric_limits<T>::infinity();
      else return std::numeric_limits<T>::lowest();
    case Op::ReduceMin:
      if constexpr (is_fp<T>) return std::numeric_limits<T>::infinity();
      else return std::numeric_limits<T>::max();
    case Op::All: return T(1);
    case Op::Any: return T(0);
    case Op::ArgMax: case Op::ArgMin:  // (value, index) pairs: arg_take
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  internal_error(std::string("sem::reduce_identity: ") + op_name(op));
}
template <class T> T reduce_combine(Op op, T acc, T x) {
  switch (op) {
    case Op::Sum: return binary(Op::Add, acc, x);
    case Op::Prod: return binary(Op::Mul, acc, x);
    case Op::ReduceMax: return binary(Op::Max, acc, x);
    case Op::ReduceMin: return binary(Op::Min, acc, x);
    case Op::All: return static_cast<T>(acc && x);
    case Op::Any: return static_cast<T>(acc || x);
    case Op::ArgMax: case Op::ArgMin:  // (value, index) pairs: arg_take
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  internal_error(std::string("sem::reduce_combine: ") + op_name(op));
}
// Does x replace the current best for argmax/argmin? The first NaN wins and
// stays; ties keep the first index.
template <class T> bool arg_better(Op op, T x, T best) {
  if constexpr (is_fp<T>) {
    if (std::isnan(best)) return false;
    if (std::isnan(x)) return true;
  }
  return op == Op::ArgMax ? x > best : x < best;
}
// Does candidate (x, xi) replace (best, bi)? The lowest index among the best
// values, whatever order candidates come in (vector lanes, thread parts).
template <class T> bool arg_take(Op op, T x, std::int64_t xi, T best, std::int64_t bi) {
  return arg_better(op, x, best) || (!arg_better(op, best, x) && xi < bi);
}

// Scans (cumsum, cumprod): the running value starts from this and combines
// each element in order along the axis with reduce_combine (Sum, Prod). A
// float running sum starts from -0.0, the identity that keeps every first
// element's bits (-0.0 + x == x, also for x == -0.0): as NumPy, which copies
// the first element.
template <class T> T scan_identity(Op combiner) {
  if constexpr (is_fp<T>) {
    if (combiner == Op::Sum) return T(-0.0);
  }
  return reduce_identity<T>(combiner);
}
// The combiner a scan op runs (Kernel IR's KOp::Scan carries it).
constexpr Op scan_combiner(Op scan) { return scan == Op::CumProd ? Op::Prod : Op::Sum; }

// Counter-based random numbers: a value depends only on (key, index).
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Uniform double in [0, 1) with 53 random bits.
inline double uniform01(std::uint64_t key, std::uint64_t index, std::uint64_t stream = 0) {
  std::uint64_t h = splitmix64(key ^ splitmix64(index * 2 + stream));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}
// 64 random bits: the hash uniform01 takes its 53 bits from.
inline std::uint64_t random_bits(std::uint64_t key, std::uint64_t index) {
  return splitmix64(key ^ splitmix64(index * 2));
}
// Standard normal by Box-Muller on two uniforms of the same index.
inline double normal01(std::uint64_t key, std::uint64_t index) {
  double u1 = 1.0 - uniform01(key, index, 0);  // (0, 1]: log is finite
  double u2 = uniform01(key, index, 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// A generator's value at flat index i: iota (start f0, step f1), linspace
// (f0 to f1 in `extra` points), eye (diagonal i0 of a matrix of `extra`
// columns), uniform in [f0, f1) and normal (mean f0, stddev f1) random
// numbers of key i0, and 64 random bits of key i0 (as i64). The one definition: the reference interpreter, the
// kernel interpreter and the host JIT (through runtime helpers) call it;
// Kernel IR passes the payload as four scalars (graph/kernel.hpp, KOp::Index).
template <class T>
T generate_value(Op op, double f0, double f1, std::int64_t i0, std::int64_t extra, std::int64_t i) {
  switch (op) {
    case Op::Iota: {
      const bool integral = std::floor(f0) == f0 && std::floor(f1) == f1 && std::fabs(f0) < 9e15 &&
                            std::fabs(f1) < 9e15;
      if (!std::is_floating_point_v<T> && integral) {
        return convert<T>(static_cast<std::int64_t>(f0) + i * static_cast<std::int64_t>(f1));
      }
      return convert<T>(f0 + static_cast<double>(i) * f1);
    }
    case Op::Linspace: {
      const std::int64_t total = extra;
      const double step = total > 1 ? (f1 - f0) / static_cast<double>(total - 1) : 0.0;
      return convert<T>((i == total - 1 && total > 1) ? f1 : f0 + static_cast<double>(i) * step);
    }
    case Op::Eye: {
      const std::int64_t cols = extra;
      return static_cast<T>((i % cols) - (i / cols) == i0);
    }
    case Op::RandUniform:
    case Op::RandNormal:
      if constexpr (std::is_floating_point_v<T>) {
        const auto key = static_cast<std::uint64_t>(i0);
        const auto ui = static_cast<std::uint64_t>(i);
        if (op == Op::RandNormal) return static_cast<T>(f0 + f1 * normal01(key, ui));
        T v = static_cast<T>(f0 + (f1 - f0) * uniform01(key, ui));
        if (v >= static_cast<T>(f1) && f1 > f0) v = std::nextafter(static_cast<T>(f1), static_cast<T>(f0));
        return v;
      }
      internal_error("generate: random numbers of a non-float type");
    case Op::RandBits:
      if constexpr (std::is_same_v<T, std::int64_t>) {
        return static_cast<std::int64_t>(random_bits(static_cast<std::uint64_t>(i0), static_cast<std::uint64_t>(i)));
      }
      internal_error("generate: random bits of a type other than i64");
    AJ_CASES_OUTSIDE(Generator) break;
  }
  internal_error(std::string("generate: not a generator: ") + op_name(op));
}

}  // namespace aj::sem

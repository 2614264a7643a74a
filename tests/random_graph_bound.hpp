// The error bounds of tests/random_graph.hpp's values: what the generator
// knows about how far two executors' results for a value may legitimately
// differ (Bound, and the dtype facts it is computed from), with the limits
// and the small shape and number helpers every piece of the generator uses.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace ajtest {

using aj::Array;
using aj::DType;
using aj::Shape;
using Dims = std::vector<std::int64_t>;

// Largest element count of any value the generator makes (keeps a graph
// evaluating in well under a millisecond on the reference interpreter).
inline constexpr std::int64_t kMaxNumel = 256;
// Inexact arithmetic only meets finite values of at most this magnitude.
inline constexpr double kTameMag = 1e6;
// Accuracy assumed of an optimized backend's transcendental functions, in
// units of machine epsilon (vector math libraries promise about 4 ulp).
inline constexpr double kUlps = 8;

inline std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto e : d) n *= e;
  return n;
}

inline std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

inline double eps_of(DType t) {
  switch (t) {
    case DType::f16: return 0x1p-10;
    case DType::bf16: return 0x1p-7;
    case DType::f32: return 0x1p-23;
    case DType::f64: return 0x1p-52;
    case DType::bool_: case DType::i32: case DType::i64: case DType::u8: case DType::i8: case DType::i16:
    case DType::u16: case DType::u32: case DType::u64: return 0.0;
  }
  return 0.0;
}
// The rounding unit of a float result computed from these operand dtypes:
// the coarsest float operand's (an upper bound: promotion never narrows),
// f64's when none is a float.
inline double eps_from(std::initializer_list<DType> operands) {
  double e = eps_of(DType::f64);
  for (DType t : operands) e = std::max(e, eps_of(t));
  return e;
}
inline double max_of(DType t) {
  switch (t) {
    case DType::bool_: return 1.0;
    case DType::i32: return 0x1p31;
    case DType::i64: return 0x1p63;
    case DType::f32: return static_cast<double>(std::numeric_limits<float>::max());
    case DType::f64: return std::numeric_limits<double>::max();
    case DType::f16: return 65504.0;
    case DType::bf16: return 0x1.fep127;
    case DType::u8: return 255.0;
    case DType::i8: return 128.0;
    case DType::i16: return 32768.0;
    case DType::u16: return 65535.0;
    case DType::u32: return 0x1p32;
    case DType::u64: return 0x1p64;
  }
  return 0.0;
}

// What the generator knows about the elements of one value.
//   mag: every finite element x has |x| <= mag.
//   abs_err, rel_err: the optimized result y of an element whose reference
//     result is x satisfies |x - y| <= abs_err + rel_err * max(|x|, |y|)
//     (both zero: the results are bit-identical, signed zeros included).
//   nonfinite: some elements may be inf or NaN (at the same positions in both
//     executors: exact ops create them, inexact ops only meet tamed values).
// Propagation rules (first order, each a worst-case bound):
//   a +- b : abs = err(a) + err(b),             rel = eps (result rounding)
//   a * b  : abs = Ea*Mb + Eb*Ma + Ea*Eb,       rel = Ra + Rb + Ra*Rb + eps
//   a / d  : (d >= 0.5) abs = 2Ea + 4Ma*err(d), rel = Ra + Rd + eps
//   f(x)   : abs = L * err(x) + U*eps, rel = U*eps (L: Lipschitz bound of f)
//   sum of N:  abs = N*err(x) + (N-1)*eps*N*Mx   (any order of N-1 additions)
//   prod of N: abs = N*err(x)*(Mx+e)^(N-1) + N*eps*(Mx+e)^N
//   matmul, inner K: abs = K*(Ea*Mb + Eb*Ma + Ea*Eb) + K*eps*K*Ma*Mb
//   max/min/where/clip/views/concat: the largest bound of their inputs
// where err(v) = abs_err + rel_err * mag, and eps is the result type's
// machine epsilon. docs/semantics.md allows exactly this freedom: float
// reductions may be reassociated (n * eps of the sum of absolute values).
struct Bound {
  double mag = 0;
  double abs_err = 0;
  double rel_err = 0;
  bool nonfinite = false;
  bool exact() const { return abs_err == 0 && rel_err == 0; }
  double err() const { return abs_err + rel_err * mag; }
};

inline Bound exact_bound(double mag, bool nonfinite = false) {
  Bound b;
  b.mag = mag;
  b.nonfinite = nonfinite;
  return b;
}

// Clamp a bound to what the dtype can hold: a float value whose magnitude
// bound passes the type's maximum may overflow (to inf, at the same places in
// both executors, since only exact ops are allowed to get there).
inline Bound fit(Bound b, DType t) {
  if (t == DType::bool_) return exact_bound(1.0);
  if (!aj::is_float(t)) return exact_bound(std::min(b.mag, max_of(t)));
  if (!(b.mag <= max_of(t))) {
    b.nonfinite = true;
    b.mag = max_of(t);
  }
  return b;
}

inline std::string fmt_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace ajtest

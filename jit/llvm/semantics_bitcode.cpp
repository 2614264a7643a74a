// base/semantics.hpp for the host JIT: compiled by clang-19 to LLVM bitcode at
// build time (CMakeLists.txt: -O2, no vectorization, no FP contraction, no
// math errno), embedded in libarrayjit, and linked into every kernel module
// by jit/llvm/scalar_codegen.cpp, where these functions inline with a
// constant op and the op's switch folds to its one case. The library's glob
// leaves this file out: the host compiler never builds it.
//
// One function per dtype (arrayjit/dtypes.def) and kind; the op (and for a
// conversion the source dtype) is an int. A conversion's source value
// arrives as 64 bits (from_payload), so one function per target dtype covers
// every source. Half values cross as their 16 bits (the ABI passes aj::f16 as
// an i16).
#define AJ_SEM_BITCODE 1
#include "base/semantics.hpp"

namespace {

using namespace aj;

template <class T>
T from_payload(unsigned long long p) {
  if constexpr (sem::same<T, bool>) return p != 0;
  else if constexpr (sem::is_half_type<T>) return T::from_bits(static_cast<unsigned short>(p));
  else if constexpr (sem::same<T, float>) return __builtin_bit_cast(float, static_cast<unsigned>(p));
  else if constexpr (sem::same<T, double>) return __builtin_bit_cast(double, p);
  else return static_cast<T>(static_cast<long long>(p));
}

template <class To>
To convert_from(int from, unsigned long long payload) {
  return sem::visit_dtype(static_cast<DType>(from), [&](auto tag) {
    return sem::convert<To>(from_payload<decltype(tag)>(payload));
  });
}

}  // namespace

#define AJ_SEM_FUNCTIONS(e, name, bytes, T, cuda, kind, digits, fmt)                                           \
  extern "C" T aj_sem_unary_##e(int op, T x) { return sem::unary(static_cast<Op>(op), x); }               \
  extern "C" T aj_sem_binary_##e(int op, T a, T b) { return sem::binary(static_cast<Op>(op), a, b); }     \
  extern "C" bool aj_sem_compare_##e(int op, T a, T b) { return sem::compare(static_cast<Op>(op), a, b); } \
  extern "C" T aj_sem_combine_##e(int op, T acc, T x) {                                                   \
    return sem::reduce_combine(static_cast<Op>(op), acc, x);                                              \
  }                                                                                                       \
  extern "C" T aj_sem_convert_##e(int from, unsigned long long payload) { return convert_from<T>(from, payload); } \
  extern "C" T aj_sem_generate_##e(int op, double f0, double f1, long long i0, long long extra, long long i) { \
    return sem::generate_value<T>(static_cast<Op>(op), f0, f1, i0, extra, i);                            \
  }
AJ_DTYPES(AJ_SEM_FUNCTIONS)
#undef AJ_SEM_FUNCTIONS

// Library loops for the CPU at hand. The library is built for baseline x86-64
// (a distribution package runs on any x86-64 CPU), so its own loops (scatter
// rows, integer matmul) would otherwise be SSE2 code on every CPU. A loop is
// written once, as an always-inlined function template, and wrapped three
// times: plain, AJ_TARGET_AVX2 and AJ_TARGET_AVX512 (GCC/Clang target
// attributes; the body is inlined into each wrapper and vectorized for its
// target); isa_variant() says which wrapper to call, from base/cpu_level.hpp's
// level, once (AJ_CPU_LEVEL picks a lower one, as it does for the JIT).
// Under ThreadSanitizer, and off x86-64, there is one variant.
#pragma once

#include "base/cpu_level.hpp"

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define AJ_ISA_X86 1
#define AJ_TARGET_AVX2 __attribute__((target("avx2,fma,bmi,bmi2,popcnt")))
#define AJ_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt,prefer-vector-width=512")))
#else
#define AJ_ISA_X86 0
#define AJ_TARGET_AVX2
#define AJ_TARGET_AVX512
#endif

namespace aj::cpu {

// Which variant runs: 0 baseline (also avx: its loops gain little over
// SSE2 without AVX2's integer and FMA forms), 1 AVX2, 2 AVX-512.
inline int isa_variant() {
#if AJ_ISA_X86
  static const int v = level() >= IsaLevel::avx512 ? 2 : level() >= IsaLevel::avx2 ? 1 : 0;
  return v;
#else
  return 0;
#endif
}

}  // namespace aj::cpu

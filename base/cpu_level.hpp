// The instruction-set level the host code runs at: found once from the CPU
// (CPUID, with the operating system's consent to the wider registers), capped
// by AJ_CPU_LEVEL. Both halves of the host backend read it: the JIT compiles
// its kernels for it (jit/llvm/host_jit.cpp turns the features above it off)
// and the matmul picks a BLAS kernel made for it (backends/cpu/blas.cpp).
//
//   baseline  x86-64 (SSE2)
//   avx       AVX (Sandy Bridge, Bulldozer)
//   avx2      AVX2 and FMA (Haswell, Zen 1-3)
//   avx512    AVX-512 F, BW, DQ, VL (Skylake-SP and later, Zen 4 and later)
//
// AJ_CPU_LEVEL=baseline|avx|avx2|avx512 runs a faster CPU's code paths as a
// slower CPU's: how the lower levels are tested on one machine. A level the
// CPU does not have, or a name that is none of these, is an error naming the
// variable (thrown by level(), at the first kernel compiled or matmul run).
#pragma once

#include <optional>
#include <string>

namespace aj::cpu {

enum class IsaLevel { baseline = 0, avx = 1, avx2 = 2, avx512 = 3 };

const char* level_name(IsaLevel l);
std::optional<IsaLevel> parse_level(const std::string& name);

// What this CPU (and its operating system) supports.
IsaLevel detected_level();
// detected_level() capped by AJ_CPU_LEVEL; throws aj::Error (runtime) for a
// bad value. Read once: later changes to the environment are not seen.
IsaLevel level();
// Whether AJ_CPU_LEVEL set the level (rather than the CPU alone).
bool level_forced();

// "avx2 (set by AJ_CPU_LEVEL; the CPU's is avx512)", "avx512 (the CPU's)".
std::string level_description();

// "AMD EPYC 9R14 96-Core Processor" (CPUID's brand string; "" when absent).
const std::string& cpu_model();

// An LLVM feature string ("+avx2,+fma,-avx512f,...") for `level`: the host's
// features with every one above the level switched off. LLVM clears what
// depends on a feature it switches off (-avx clears AVX2, FMA, F16C and
// AVX-512), so naming the roots is enough; the roots named here are the
// ones that introduce each level's registers or instructions.
std::string cap_llvm_features(const std::string& host_features, IsaLevel level);

// Whether an LLVM feature string turns `name` on ("+name" as a whole flag:
// "+avx512f" is not "+avx512fp16"; the last flag naming it decides).
bool llvm_feature_on(const std::string& features, const std::string& name);

}  // namespace aj::cpu

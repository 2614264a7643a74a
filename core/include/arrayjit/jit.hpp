// aj::jit: the host JIT's switches. By default every fused kernel runs as
// machine code compiled by LLVM for the CPU the process runs on, cached in
// memory and on disk; the interpreters stay as test oracles.
//
// Environment: AJ_JIT=0 runs kernels in the kernel interpreter instead;
// AJ_CACHE_DIR=<dir> puts the disk cache there ("off" disables it; default
// $XDG_CACHE_HOME/arrayjit or ~/.cache/arrayjit); AJ_LOG=ir prints the LLVM IR
// of each kernel compiled or loaded (AJ_LOG=asm its assembly).
#pragma once

#include <string>

#include "arrayjit/array.hpp"

namespace aj::jit {

bool enabled();
void set_enabled(bool on);

// Threads a large kernel is split over; 0 (the default) means all cores.
// Small kernels always run on the calling thread.
int num_threads();
void set_num_threads(int n);

// The disk cache directory ("" when disabled); set_cache_dir("") disables it.
std::string cache_dir();
void set_cache_dir(const std::string& dir);

// Two tiers of compiled code. A kernel whose first launch is small (under
// about 4M points x instructions) is compiled quick: LLVM translates it
// without optimizing, 4-7x sooner (a fused 9-op kernel in 4-6 ms instead of
// 20-30 ms on a Zen 3), into code that runs several times slower. At its
// 128th launch (a loop; or once its launches add up to 16M points x
// instructions) it is compiled in full (LLVM's O3, the vectorizer, vector math) on a
// background thread, and the launches after that compile is done run the
// full code; no launch waits for it. A large first launch compiles in full
// at once. Both tiers compute the same bits. stats().kernels_tiered_up
// counts the second compiles.
//   automatic  the above (the default)
//   full       every kernel compiled in full at its first launch (steady
//              timing from the first call; the cost is paid up front)
//   quick      every kernel stays quick (the least compile time)
// Environment: AJ_JIT_TIER=auto|full|quick. A kernel already compiled in
// full stays so; kernels the disk cache holds in full load in full.
enum class Tiers { automatic, full, quick };
Tiers tiers();
void set_tiers(Tiers t);
// Waits until the background thread has compiled every kernel queued for
// the full tier (a benchmark's warm-up, before timing the steady state).
void finish_tier_ups();

// Forget every compiled kernel in memory (their code is freed); the disk
// cache is kept, so the next use of a kernel is a disk hit.
void clear_memory_cache();

// "LLVM 19.1.7, cpu znver4, +avx512f,..." : what compiled code is built for.
std::string target_description();

// The BLAS kernel f32/f64 matmuls run on: "OpenBLAS 0.3.21 ...: core
// Cooperlake (the process's copy), level avx512". arrayjit picks kernels made
// for the CPU's instruction-set level; where the process's OpenBLAS does not
// know the CPU (and would run its generic SSE3 kernels), a private copy of it
// runs the right ones, leaving the process's copy (NumPy's) as it was.
std::string matmul_library();

// What host code runs on, one "name: value" line each: the CPU's model, the
// instruction-set level used (baseline, avx, avx2, avx512), the JIT's target,
// the matmul's BLAS kernel. Record it with every benchmark figure.
//
// Environment: AJ_CPU_LEVEL=baseline|avx|avx2|avx512 runs a lower level's
// code on a faster CPU (kernels compiled without the higher features, BLAS
// kernels for that level); a level above the CPU's is an error.
// AJ_VECTOR_WIDTH=256 makes AVX-512 kernels prefer 256-bit vectors (the
// default there is 512; the transcendental chain of bench_host runs 2x
// slower at 256 on a Zen 4).
std::string host_info();

// The optimized LLVM IR of every kernel in the plan that evaluating `a` would
// run (nothing is computed): the full tier's, which a kernel runs once its
// work has added up (see Tiers). `assembly` gives the machine code instead.
std::string kernel_ir(const Array& a, bool assembly = false, Loc loc = Loc::current());

}  // namespace aj::jit

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

// Forget every compiled kernel in memory (their code is freed); the disk
// cache is kept, so the next use of a kernel is a disk hit.
void clear_memory_cache();

// "LLVM 19.1.7, cpu znver4, +avx512f,..." : what compiled code is built for.
std::string target_description();

// The optimized LLVM IR of every kernel in the plan that evaluating `a` would
// run (nothing is computed). `assembly` gives the machine code instead.
std::string kernel_ir(const Array& a, bool assembly = false, Loc loc = Loc::current());

}  // namespace aj::jit

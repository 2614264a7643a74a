// CUDA C -> cubin (or PTX) with NVRTC, cached in memory and on disk.
//
// compile() targets one compute capability: a cubin for sm_<arch> when this
// NVRTC supports the architecture, otherwise PTX for the newest compute_<x>
// it supports below it (the driver JIT-compiles that PTX for the device).
// Options: -std=c++17 --fmad=false (no contraction into FMA, so + - * give the
// host's bits); division and sqrt stay IEEE (no fast-math flags).
//
// Cache key: hash of (source, arch, NVRTC version, driver version). The disk
// cache lives in $AJ_CACHE_DIR/cuda, else $XDG_CACHE_HOME/arrayjit/cuda, else
// ~/.cache/arrayjit/cuda; AJ_CUDA_DISK_CACHE=0 turns it off. Files are written
// to a temporary name and renamed, so concurrent processes never read half a
// file. The memory cache holds at most 4096 images (cleared when full).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "jit/cuda/cuda_source.hpp"

namespace aj::cuda {

struct Image {
  std::string bytes;   // cubin, or PTX text (NUL-terminated for the driver)
  bool cubin = false;
  int arch = 0;        // sm_<arch> of the cubin, or compute_<arch> of the PTX
};

struct CompileOptions {
  bool memory_cache = true;
  bool disk_cache = true;   // also subject to AJ_CUDA_DISK_CACHE
  int driver_version = 0;   // part of the disk key (0 when compiling without a driver)
  bool ptx_only = false;    // stop at PTX (skips ptxas; for quick compile-only checks)
  // --Ofast-compile=max where NVRTC has it (seen in 13.0): the front end and
  // code generation in full, few optimizations, 6x quicker (compile-only checks).
  bool fast_compile = false;
};

// Throws aj::Error (runtime) when NVRTC is missing, or on a compile failure
// with the NVRTC log and the numbered source.
std::shared_ptr<const Image> compile(const KernelSource& src, int arch, const CompileOptions& opt = {});

// Tests only: compile() calls `hook` instead of NVRTC (and bypasses the
// caches) while set; an empty function restores NVRTC.
void set_compile_hook_for_testing(
    std::function<std::shared_ptr<const Image>(const KernelSource&, int arch)> hook);

// "NVRTC 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13)"; empty when absent.
std::string nvrtc_description();

struct CompileCounters {
  std::uint64_t compiles = 0, memory_hits = 0, disk_hits = 0;
};
CompileCounters compile_counters();
void clear_compile_cache();  // the memory cache (the disk cache stays)

}  // namespace aj::cuda

// The contract between the host JIT (jit/llvm/) and the CPU launcher
// (backends/cpu/host_launch.cpp). No LLVM types here: backends never see them.
//
// A compiled host kernel is  void fn(const HostArgs*, int64 begin, int64 end)
// and computes the outer iteration points [begin, end) of its Kernel (all
// points for an elementwise kernel; the points of the non-reduced axes, each
// with its whole reduction, for a reduction kernel), in row-major order. Any
// split of [0, outer_points) into disjoint ranges may run concurrently.
// Extents, strides, offsets and scalar values are read from HostArgs at run
// time; only the structure (kernel_key, graph/kernel.hpp) is compiled in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/kernel.hpp"

namespace aj::jit {

struct HostArgs {
  void* const* ptrs;            // inputs then outputs (nullptr for index streams)
  const std::int64_t* shape;    // rank extents
  const std::int64_t* strides;  // (inputs + outputs) x rank, elements
  const std::int64_t* offsets;  // inputs + outputs, elements
  const KScalar* scalars;       // Kernel::scalars
};

using HostKernelFn = void (*)(const HostArgs*, std::int64_t begin, std::int64_t end);

// For output j: the input it shares memory with exactly (same buffer, dtype,
// offset and strides: an in-place donation), or -1. Code generation reuses
// that input's addresses for the store, so the vectorizer sees a distance-0
// dependence instead of a possible overlap, and gives every buffer its own
// alias scope. kAliasUnknown where another input stream reads that buffer
// too (the buffer plan never does that; then no alias facts are claimed).
// Part of the cache key.
inline constexpr int kAliasUnknown = -2;
std::vector<int> exact_aliases(const Kernel& k, const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs);
// The same into `alias` (its storage reused: a launch allocates nothing for it).
void exact_aliases_into(const Kernel& k, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                        std::vector<int>& alias);

// Two tiers of compiled code (docs/architecture.md, "Two tiers of host
// code"). A kernel is first compiled quick (its IR put in registers and
// translated without optimizing: 4-7x less compile time, code that runs
// several times slower) unless its first launch is large. Once the launches
// that ran it reach kTierUpLaunches or kTierUpWork, its full compile (LLVM's
// O3 with the vectorizer and SLEEF, then the full code generator) is queued
// for a background thread, and the full code replaces the quick one when it
// is ready; launches meanwhile run the quick code. Work is a launch's points
// times instructions (host_launch.cpp's launch_work). Both tiers compute the
// same bits (neither contracts nor reassociates what the kernel's IR does
// not say).
enum class HostTiers { automatic, quick, full };  // quick/full: every kernel in that tier (AJ_JIT_TIER)
inline constexpr long long kQuickTierWork = 1LL << 22;  // a first launch below this compiles quick
inline constexpr long long kTierUpWork = 1LL << 24;     // the work after which quick code is compiled in full
inline constexpr long long kTierUpLaunches = 128;        // the launches after which it is, whatever their work
HostTiers host_tiers();
void set_host_tiers(HostTiers t);
// Counts the full compiles that replaced quick code: a caller that kept a
// quick function (a prepared kernel) looks again when it changes.
std::uint64_t host_tier_ups();
// Waits until every queued full compile is done (or failed: the quick code
// stays). For benchmarks and tests that want the steady state.
void finish_host_tier_ups();

struct HostKernelRef {
  HostKernelFn fn = nullptr;
  bool quick = false;  // the quick tier's code: report further work to host_kernel
};

// Compiled function for this kernel structure: from the in-memory cache, the
// disk cache or a fresh compile, in the tier `work` asks for (this launch's);
// with quick code, `work` and `launches` are what ran since the last call
// (they may queue its full compile). Throws
// aj::Error (runtime) on failure. The caller holds a CodeInUse from before
// this call until the function returned.
HostKernelRef host_kernel(const Kernel& k, const std::vector<int>& alias, long long work, int launches = 1);
// "" when host_kernel(k, alias) would find it in memory, else its cache key
// (equal keys: one compiled function). Nothing is read or compiled.
std::string host_kernel_missing(const Kernel& k, const std::vector<int>& alias);

// Changes whenever compiled functions leave the in-memory cache: a function
// pointer kept from host_kernel (a prepared launch, host_launch.hpp) is
// still valid while this returns what it returned when the pointer was
// looked up, read inside a CodeInUse.
std::uint64_t host_kernels_generation();

// Held by a thread while it looks up and runs compiled kernels (nests): code
// dropped from the cache (clear_memory_cache, or the cache full) is freed
// only once every thread that might still run it has let go.
class CodeInUse {
 public:
  CodeInUse();
  ~CodeInUse();
  CodeInUse(const CodeInUse&) = delete;
  CodeInUse& operator=(const CodeInUse&) = delete;
};

// LLVM IR for a kernel: as generated, or after the optimization pipeline.
std::string host_kernel_ir(const Kernel& k, const std::vector<int>& alias, bool optimized);
// The kernel's dump as comments, then its optimized IR (or assembly).
std::string host_kernel_text(const Kernel& k, bool assembly);

// The disk cache directory ("" when disabled), the in-memory cache, and what
// compiled code is built for (arrayjit/jit.hpp's switches call these).
std::string host_cache_dir();
void set_host_cache_dir(const std::string& dir);
void clear_host_kernels();
std::string host_target();
const char* llvm_version_string();  // "19.1.7"

}  // namespace aj::jit

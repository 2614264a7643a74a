// Runs a Kernel as compiled machine code (jit/host_kernel.hpp): looks the
// compiled function up (or compiles it), fills its run-time arguments and
// splits its outer iteration points over threads (thread_pool.hpp) when the
// kernel is large. Small kernels run on the calling thread: no pool wake-up,
// no atomics. A large reduction with fewer outer points than threads is
// split over its reduced range instead (two kernels; graph/kernel_split.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include <memory>

#include "exec/backend.hpp"
#include "graph/kernel.hpp"

namespace aj::cpu {

// Same contract as run_kernel (kernel_interpreter.hpp).
void run_kernel_compiled(const Kernel& k, const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs);

// A kernel made ready for many launches (exec::Backend::prepare_kernel):
// its axes collapsed once, its compiled function looked up once per
// aliasing pattern (and again only when the JIT's cache dropped it).
// `scalars`: the launch's run-time scalars (null: the kernel's own).
std::shared_ptr<const exec::PreparedKernel> prepare_compiled(const Kernel& k);
void run_prepared_compiled(const exec::PreparedKernel& p, const KScalar* scalars,
                           const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

// exec::Backend::compile_ahead on the host: the kernels not in memory yet
// compiled at once, one per pool thread at a time (the caller's too), each
// as its launch will look it up (collapsed, with the aliasing the buffers
// given would have). Kernels a launch splits over threads are left to it.
void compile_ahead(const std::vector<exec::Backend::AheadKernel>& kernels);

// An elementwise kernel compiled once and run over ranges of its points
// (row-major flat indices), each range on the calling thread: a matmul runs
// its epilogue on each block of the result it has just computed, while the
// block is in cache (host_library.cpp). Ranges may run concurrently.
class KernelRanges {
 public:
  KernelRanges(const Kernel& k, const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  ~KernelRanges();
  KernelRanges(const KernelRanges&) = delete;
  KernelRanges& operator=(const KernelRanges&) = delete;
  void run(std::int64_t begin, std::int64_t end) const;

 private:
  struct Impl;
  Impl* impl_;
};

// Compiled code (default) or the kernel interpreter (AJ_JIT=0); the threads
// a large kernel is split over (0: all cores). aj::jit's switches.
bool jit_enabled();
void set_jit_enabled(bool on);
int num_threads();
void set_num_threads(int n);

// Work (points x instructions) from which a kernel is split over threads:
// about 50 us of vectorized work, well above an OpenMP team wake-up.
inline constexpr long long kParallelWork = 1 << 18;

}  // namespace aj::cpu

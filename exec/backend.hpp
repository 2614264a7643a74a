// What the executor (exec/execute.hpp) needs from a device. backends/cpu and
// backends/cuda implement it; a third backend implements these methods
// (run_library_then has a default) and answers for its Device::Kind where the
// compiler then asks (docs/architecture.md, "A backend"). A backend sees
// Kernel IR, LibraryCalls and Storage, never graph nodes, plans or passes.
//
// Ordering: every method that enqueues work (copies, launches) orders it on
// the backend's current stream (on the host: runs it at once). Storage freed
// while work that uses it is enqueued stays valid until that work is done
// (the backend's allocator orders frees on the stream).
#pragma once

#include <cstdint>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "base/storage.hpp"
#include "graph/kernel.hpp"
#include "graph/library.hpp"

namespace aj::exec {

using aj::PreparedKernel;  // graph/kernel.hpp

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;

  // A new buffer of `bytes` on this device (released through Storage::release).
  // Throws aj::Error (runtime) when the device is out of memory.
  virtual std::shared_ptr<Storage> allocate(std::size_t bytes) = 0;

  // Copies of a whole storage between host memory and this device. On the
  // host backend both are plain copies.
  virtual std::shared_ptr<Storage> from_host(const Storage& host) = 0;
  virtual std::shared_ptr<Storage> to_host(const Storage& mine) = 0;  // synchronizes

  // Compile `k` (or fetch it from the kernel caches) and run it: one storage
  // per input stream (null for index streams) and one per output, all on
  // this device; offsets and strides come from the kernel.
  virtual void run_kernel(const Kernel& k, const std::vector<const Storage*>& inputs,
                          const std::vector<const Storage*>& outputs) = 0;

  // A kernel that will be launched many times with the same layout (a
  // compiled function's program): whatever can be done once is done here.
  // Null: nothing to keep, run_prepared runs run_kernel.
  virtual std::shared_ptr<const PreparedKernel> prepare_kernel(const Kernel&) { return nullptr; }
  // Runs `k` as run_kernel does, `p` its prepare_kernel result (or null) and
  // `scalars` its run-time scalars (null: k's own; else k.scalars.size() of them).
  virtual void run_prepared(const PreparedKernel* /*p*/, const Kernel& k, const KScalar* scalars,
                            const std::vector<const Storage*>& inputs, const std::vector<const Storage*>& outputs) {
    if (!scalars) return run_kernel(k, inputs, outputs);
    Kernel bound = k;
    std::copy(scalars, scalars + k.scalars.size(), bound.scalars.begin());
    run_kernel(bound, inputs, outputs);
  }

  // The kernels of a program's first run, given before it starts: a backend
  // that compiles may compile them all at once now (the host: on its thread
  // pool, so a cold first step takes the longest kernel's compile rather than
  // the sum). Per kernel, an id per input stream and per output naming the
  // buffer each will most likely be (equal ids: one buffer; an output
  // expected to take a donor's buffer over carries the donor's id), so that
  // the variant compiled is the one the launch asks for. A guess that proves
  // wrong costs a compile at the launch, as without this; errors are left to
  // the launches to report.
  struct AheadKernel {
    const PreparedKernel* prepared = nullptr;  // prepare_kernel's, or null
    const Kernel* kernel = nullptr;
    std::vector<std::int64_t> input_buffers, output_buffers;
  };
  virtual void compile_ahead(const std::vector<AheadKernel>& /*kernels*/) {}

  // Run a library step into `out` (contiguous, bytes for the whole result).
  virtual void run_library(const LibraryCall& call, const std::vector<const Storage*>& inputs,
                           const Storage& out) = 0;

  // A library step that may go on while the steps after it run (a collective
  // across processes: its exchange overlaps the kernels that do not read
  // it). It is started here; the returned function waits for it and throws
  // what it threw (called once, by the step loop, before any step reads
  // `out` and before the run ends). The caller keeps `inputs` and `out`
  // from being reused until then. Default: runs it now, nothing to wait for.
  virtual std::function<void()> start_library(const LibraryCall& call, const std::vector<const Storage*>& inputs,
                                              const Storage& out) {
    run_library(call, inputs, out);
    return nullptr;
  }

  // A library step, then an elementwise kernel that reads its result `out`
  // at its own index (the epilogue of a matmul: bias, scale, activation) and
  // may write it in place: a backend may run the kernel on each block of
  // the result while the block is in cache (the host does for matmul). The
  // kernel's outputs never overlap the step's inputs.
  virtual void run_library_then(const LibraryCall& call, const std::vector<const Storage*>& inputs,
                                const Storage& out, const Kernel& k, const std::vector<const Storage*>& k_inputs,
                                const std::vector<const Storage*>& k_outputs) {
    run_library(call, inputs, out);
    run_kernel(k, k_inputs, k_outputs);
  }

  // Wait until the work enqueued so far is done.
  virtual void synchronize() = 0;
};

}  // namespace aj::exec

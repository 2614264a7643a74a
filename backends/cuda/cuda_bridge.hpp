// Where the pipeline and core meet the CUDA backend. This is the one part of
// the backend that sees graph nodes: it turns a pipeline step into buffers
// and a launch (cuda_runtime.hpp sees only Kernel IR and Storage).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "graph/graph.hpp"
#include "graph/passes/assign_buffers.hpp"
#include "graph/passes/fuse.hpp"
#include "jit/cuda/cuda_library.hpp"

namespace aj::cuda {

// True once any device buffer was made (core skips device checks before).
bool any_device_storage();

// The device set by a live aj::cuda::DeviceScope on this thread, if any.
std::optional<Device> scope_device();

// The device a schedule runs on: that of the evaluated arrays its steps read
// (or the DeviceScope's), cpu when none is on a GPU. Throws when two GPUs meet.
Device schedule_device(const Schedule& s);

// A kernel step on a GPU: inputs on the host are uploaded for the launch,
// outputs come from the device allocator or a donated dead input.
void run_kernel_step(const Step& st, const BufferPlan& buffers, std::size_t k, Device dev);

// A step that is not Kernel IR, as a library kernel on the device (matmul,
// concatenate, argmax/argmin; jit/cuda/cuda_library.hpp): inputs on the
// host are uploaded for the launch, the result gets contiguous device storage.
void run_library_step(NodeId id, Device dev);

// The library kernels evaluating reference step `n` (matmul, concatenate,
// argmax/argmin; not a view), given its inputs' layouts at device addresses
// (0 when only the sources are wanted) and its contiguous result at `out`
// on a device with `sms` multiprocessors. Concatenate is one copy per input
// into its slice of the result.
std::vector<LibraryLaunch> plan_library(const Node& n, const std::vector<StridedRef>& ins, std::uint64_t out,
                                        int sms);

// A node through the reference interpreter on the host: device inputs are
// copied down, the result is copied to `dev`. Only the pipeline's fallback
// for a view whose run-time layout is no view (fuse plans copy kernels for
// those, so a correct plan never comes here).
void run_on_host(NodeId id, Device dev);

// Copies of a whole storage between host and device, on the device's current stream.
std::shared_ptr<Storage> to_host(const Storage& s);            // synchronizes
std::shared_ptr<Storage> to_device(const Storage& s, Device d);  // enqueues

}  // namespace aj::cuda

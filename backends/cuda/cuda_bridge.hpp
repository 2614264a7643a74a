// Where the pipeline and core meet the CUDA backend. This is the one part of
// the backend that sees graph nodes: it turns a pipeline step into buffers
// and a launch (cuda_runtime.hpp sees only Kernel IR and Storage).
#pragma once

#include <memory>
#include <optional>

#include "graph/graph.hpp"
#include "graph/passes/assign_buffers.hpp"
#include "graph/passes/fuse.hpp"

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

// A step the GPU path does not compute (matmul, concatenate, argmax/argmin,
// copying views): device inputs are copied to the host, the reference
// interpreter evaluates the node, and the result is copied to `dev`.
void run_on_host(NodeId id, Device dev);

// Copies of a whole storage between host and device, on the device's current stream.
std::shared_ptr<Storage> to_host(const Storage& s);            // synchronizes
std::shared_ptr<Storage> to_device(const Storage& s, Device d);  // enqueues

}  // namespace aj::cuda

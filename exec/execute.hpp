// The executor: one step loop over an optimized plan (opt/pipeline.hpp) for
// every device, through the Backend interface (exec/backend.hpp).
//
// Per step:
//  - kernel: inputs that live on the host while the plan runs on a device
//    are copied over for the step; each output takes a dead input's buffer
//    when the plan donates it and the run-time check agrees
//    (donation_applies), else a new buffer from the backend; the backend
//    compiles (or fetches) and launches the kernel; outputs become leaves.
//  - view: the node becomes a leaf sharing its input's storage with the
//    planned strides and offset (no copy, no backend call).
//  - library: matmul, concatenate, sort/argsort/topk, scatter as a
//    LibraryCall into a new contiguous buffer, or (scatter, when the plan
//    donates it and the run-time check agrees) into its first input's
//    buffer, in place; a concatenate into the buffer its pieces' kernels
//    wrote into already (Step::into).
// With verification on, the layouts steps produce are checked against the
// plan and no two buffers the plan has live at once may overlap.
#pragma once

#include <functional>
#include <optional>

#include "exec/backend.hpp"
#include "opt/lower.hpp"
#include "opt/pipeline.hpp"

namespace aj::exec {

// The device a plan runs on: the one DeviceScope set on this thread, else
// that of the evaluated arrays its steps read, cpu when none is on a GPU.
// This is the one place the device is decided. Throws aj::Error (runtime)
// when two GPUs meet, or arrays on a GPU meet another DeviceScope.
Device plan_device(const opt::Plan& p);

// Runs the plan's steps on `target` (the backend of plan_device).
void execute(const opt::Plan& p, Backend& target);

// Does kernel step e run as the epilogue of library step k
// (Backend::run_library_then)? `ready` tells whether a node exists before
// step k (null: it is evaluated now, as when the executor reaches step k).
bool is_epilogue(const opt::Plan& p, std::size_t k, std::size_t e, const std::function<bool(NodeId)>* ready);

// The LibraryCall of library node `n` whose inputs have these layouts.
LibraryCall library_call(const Node& n, const std::vector<Layout>& inputs);

// Caller memory a kernel output is written into instead of a new buffer
// (Array::eval_into): core registers the hook; it returns null for every
// node but the one asked for. Host plans only.
using DestinationHook = std::shared_ptr<Storage> (*)(NodeId node, std::size_t bytes);
void set_destination_hook(DestinationHook hook);

// The DeviceScope of this thread (aj::cuda::DeviceScope sets it).
std::optional<Device> scope_device();
void set_scope_device(std::optional<Device> d);

}  // namespace aj::exec

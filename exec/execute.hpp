// Eager evaluation's side of the executor: the device a plan runs on, and
// running a plan's program (opt/program.hpp) with its values on the graph's
// nodes, through the one step loop (exec/program.hpp).
#pragma once

#include <optional>

#include "exec/backend.hpp"
#include "exec/program.hpp"
#include "opt/pipeline.hpp"

namespace aj::exec {

// The device a plan runs on: the one DeviceScope set on this thread, else
// that of the evaluated arrays its steps read, cpu when none is on a GPU.
// This is the one place the device is decided. Throws aj::Error (runtime)
// when two GPUs meet, or arrays on a GPU meet another DeviceScope.
Device plan_device(const opt::Plan& p);

// Runs the plan's program on `target` (the backend of plan_device): every
// value it makes becomes its node's result (graph lock held; let go while
// kernels run).
void execute(const opt::Plan& p, Backend& target);

// The DeviceScope of this thread (aj::cuda::DeviceScope sets it).
std::optional<Device> scope_device();
void set_scope_device(std::optional<Device> d);

}  // namespace aj::exec

// The CUDA backend (exec/backend.hpp) of one device: buffers from the
// stream-ordered pool, host<->device copies staged through pinned memory,
// kernels rendered to CUDA C and compiled by NVRTC (cached), library steps
// as hand-written library kernels; everything on the device's current
// stream (cuda_runtime.hpp).
#pragma once

#include "exec/backend.hpp"

namespace aj::cuda {

// Throws aj::Error when CUDA is unavailable or there is no such device.
exec::Backend& cuda_backend(int device);

}  // namespace aj::cuda

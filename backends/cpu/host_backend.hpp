// The host backend (exec/backend.hpp): buffers from the caching allocator
// (host_memory.hpp), kernels compiled by the host JIT and split over the
// thread pool (host_launch.hpp) or, under AJ_JIT=0, interpreted
// (kernel_interpreter.hpp), library steps in host_library.hpp.
#pragma once

#include "exec/backend.hpp"

namespace aj::cpu {

exec::Backend& host_backend();

}  // namespace aj::cpu

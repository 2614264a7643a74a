// A thread's limit on buffers taken from the system, set while aj::compile
// replays a function with CompileOptions::max_allocations: the allocators
// (host pool, CUDA pool) call before_system_alloc before they ask the system
// for memory, and the limit throws to refuse. Unset (every other time) it
// is one thread-local load.
#pragma once

#include <cstddef>

namespace aj::detail {

class AllocationLimit {
 public:
  virtual ~AllocationLimit() = default;
  // Called before each system allocation on this thread; throws aj::Error to refuse it.
  virtual void before(std::size_t bytes) = 0;
};

// This thread's limit (null: none).
AllocationLimit*& allocation_limit();

inline void before_system_alloc(std::size_t bytes) {
  if (AllocationLimit* l = allocation_limit()) l->before(bytes);
}

}  // namespace aj::detail

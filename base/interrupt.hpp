// The interrupt request behind aj::interrupt() (arrayjit/interrupt.hpp), as
// the layers that run work look at it: one relaxed load, so a step loop or a
// kernel's blocks pay nothing measurable while no request is made.
#pragma once

#include <atomic>

#include "arrayjit/interrupt.hpp"

namespace aj::detail {

extern std::atomic<bool> g_interrupt;
static_assert(std::atomic<bool>::is_always_lock_free, "aj::interrupt is called from signal handlers");

inline bool interrupt_requested() { return g_interrupt.load(std::memory_order_relaxed); }

// Takes the request back and throws aj::Error "aj: interrupted" (a runtime kind).
[[noreturn]] void throw_interrupted();

// Throws when an interrupt was requested.
inline void check_interrupt() {
  if (interrupt_requested()) [[unlikely]] throw_interrupted();
}

}  // namespace aj::detail

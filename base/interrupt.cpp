#include "base/interrupt.hpp"

#include "arrayjit/error.hpp"

namespace aj {

namespace detail {

std::atomic<bool> g_interrupt{false};

void throw_interrupted() {
  g_interrupt.store(false, std::memory_order_relaxed);
  runtime_error("aj: interrupted");
}

}  // namespace detail

void interrupt(bool on) noexcept { detail::g_interrupt.store(on, std::memory_order_relaxed); }

}  // namespace aj

// Mutable access to the counters behind aj::stats(), for the layers that do
// the counted work.
#pragma once

#include "arrayjit/stats.hpp"

namespace aj::detail {
Stats& stats_mut();
// Live-byte accounting for buffers arrays hold (keeps the peak).
void note_live_bytes(std::int64_t delta);
}  // namespace aj::detail

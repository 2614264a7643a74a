#include <ostream>
#include <sstream>

#include "base/stats.hpp"

namespace aj {

namespace detail {
Stats& stats_mut() {
  static Stats s;
  return s;
}
void note_live_bytes(std::int64_t delta) {
  Stats& s = stats_mut();
  s.live_bytes = static_cast<std::uint64_t>(static_cast<std::int64_t>(s.live_bytes) + delta);
  if (s.live_bytes > s.peak_live_bytes) s.peak_live_bytes = s.live_bytes;
}
}  // namespace detail

Stats stats() { return detail::stats_mut(); }

void reset_stats() {
  Stats& s = detail::stats_mut();
  Stats fresh;
  fresh.live_bytes = s.live_bytes;
  fresh.peak_live_bytes = s.live_bytes;
  fresh.live_nodes = s.live_nodes;
  s = fresh;
}

std::string Stats::str() const {
  std::ostringstream os;
  os << "evals " << evals << ", kernels " << kernels_launched << ", system allocs "
     << system_allocs << " (" << bytes_allocated << " bytes), pool hits " << pool_hits
     << ", in-place " << inplace_reuses << ", live " << live_bytes << " bytes (peak "
     << peak_live_bytes << "), nodes " << live_nodes << ", plans built " << plans_built << " (plan cache hits " << plan_cache_hits << "), stored held " << held_values_stored << ", materialized " << values_materialized << ", compiled " << kernels_compiled
     << " (" << compile_ns / 1000000.0 << " ms), kernel cache hits " << kernel_cache_hits
     << ", disk hits " << kernel_disk_hits;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Stats& s) { return os << s.str(); }

}  // namespace aj

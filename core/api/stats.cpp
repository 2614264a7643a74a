#include <ostream>
#include <sstream>

#include "base/stats.hpp"
#include "graph/graph.hpp"

namespace aj {

Stats stats() {
  Stats s = detail::sum_counters();
  s.live_nodes = live_nodes_all_graphs();
  return s;
}

void reset_stats() { detail::reset_counters(); }

std::string Stats::str() const {
  std::ostringstream os;
  os << "evals " << evals << ", kernels " << kernels_launched << ", system allocs "
     << system_allocs << " (" << bytes_allocated << " bytes), pool hits " << pool_hits
     << ", in-place " << inplace_reuses << ", live " << live_bytes << " bytes (peak "
     << peak_live_bytes << "), nodes " << live_nodes << ", plans built " << plans_built << " (plan cache hits " << plan_cache_hits << ", " << plans_renumbered << " at new numbers), stored held " << held_values_stored << ", materialized " << values_materialized << ", compiled " << kernels_compiled
     << " (" << compile_ns / 1000000.0 << " ms, " << kernels_compiled_ahead << " ahead, " << kernels_tiered_up << " tiered up), kernel cache hits " << kernel_cache_hits
     << ", disk hits " << kernel_disk_hits << ", compiled calls traced " << compiled_traces << " / replayed "
     << compiled_replays << " / at new extents " << compiled_new_extents
     << " (" << compiled_unplanned << " not planned)";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Stats& s) { return os << s.str(); }

}  // namespace aj

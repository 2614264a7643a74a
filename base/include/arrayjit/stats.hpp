// Counters of what the library did. Every field is filled honestly by the
// layer that does the work; reset_stats() zeroes the counters (not the live
// byte count, which is a state).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace aj {

struct Stats {
  std::uint64_t evals = 0;              // evaluations run (eval / read-outs that had work)
  std::uint64_t kernels_launched = 0;   // kernels (or interpreter ops) executed
  std::uint64_t system_allocs = 0;      // buffers obtained from the system allocator
  std::uint64_t system_frees = 0;       // buffers returned to the system
  std::uint64_t bytes_allocated = 0;    // bytes obtained from the system
  std::uint64_t pool_hits = 0;          // buffers served from the cache instead
  std::uint64_t inplace_reuses = 0;     // outputs written into a dead input's buffer
  std::uint64_t live_bytes = 0;         // bytes in buffers that arrays hold now
  std::uint64_t peak_live_bytes = 0;    // high-water mark of live_bytes since reset
  std::uint64_t live_nodes = 0;         // graph nodes alive now
  std::uint64_t nodes_created = 0;      // nodes traced since reset
  // Plans: made by the optimizer's passes, or reused from the plan cache
  // (a loop tracing the same structure, scalar values aside, reuses one).
  std::uint64_t plans_built = 0;
  std::uint64_t plan_cache_hits = 0;
  // Of those hits, plans of a graph whose numbers (extents, offsets, slice
  // starts) differ from the kept plan's: fuse's decisions kept, the numbers
  // computed again from this graph's shapes (opt/materialize.hpp).
  std::uint64_t plans_renumbered = 0;
  // Values evaluations stored although nobody asked for them by name: held
  // values (a live handle refers to them; docs/semantics.md), and
  // intermediates the planner materialized on its own (the work rule, the
  // kernel size cap, reductions needed at another index, library operands;
  // aj::explain says why).
  std::uint64_t held_values_stored = 0;
  std::uint64_t values_materialized = 0;
  // Host JIT (jit/llvm): kernel structures compiled, found compiled in memory,
  // loaded from the disk cache, and disk entries rejected (corrupt/stale).
  std::uint64_t kernels_compiled = 0;
  std::uint64_t kernel_cache_hits = 0;
  std::uint64_t kernel_disk_hits = 0;
  std::uint64_t kernel_disk_rejects = 0;
  std::uint64_t compile_ns = 0;          // time spent compiling (codegen + LLVM)
  std::uint64_t kernel_disk_load_ns = 0; // time spent loading disk-cached kernels
  // Of kernels_compiled, those compiled together before a plan's first run
  // (on the host thread pool; exec::Backend::compile_ahead) rather than one
  // at a time at their launches.
  std::uint64_t kernels_compiled_ahead = 0;
  // aj::compile (arrayjit/compile.hpp): calls that traced the function, and
  // calls that replayed a kept program (no tracing, no planning).
  std::uint64_t compiled_traces = 0;
  std::uint64_t compiled_replays = 0;
  // Calls at extents (or argument layouts) not seen before that ran the kept
  // trace made again at them (planned, not traced; docs/extent-replays.md).
  std::uint64_t compiled_new_extents = 0;
  std::uint64_t compiled_unplanned = 0;  // of those, run with a kept plan (not planned)
  // Kernels compiled first by the quick tier and compiled again in full once
  // their launches added up (arrayjit/jit.hpp, "Tiers"; not in
  // kernels_compiled; their time is in compile_ns).
  std::uint64_t kernels_tiered_up = 0;

  std::string str() const;
};

Stats stats();
void reset_stats();
std::ostream& operator<<(std::ostream& os, const Stats& s);

}  // namespace aj

// The counters behind aj::stats(), for the layers that do the counted work.
//
// Threads: each thread counts into a block of its own (stats_mut()), so
// counting never contends; aj::stats() adds up every block, those of threads
// that have exited included. A counter has one writer (its thread): an
// increment is a relaxed load and store, and reading it from another thread
// is a relaxed load. Live bytes are one process-wide atomic (a buffer may be
// freed on another thread than the one that made it); live nodes are read
// from the graphs.
#pragma once

#include <atomic>
#include <cstdint>

#include "arrayjit/stats.hpp"

namespace aj::detail {

class Counter {
 public:
  Counter& operator++() { return *this += 1; }
  Counter& operator+=(std::uint64_t d) {
    v_.store(v_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
    return *this;
  }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }
  void reset() { v_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

// One thread's counts; the fields mean what aj::Stats's fields of the same
// names mean.
struct Counters {
#define AJ_COUNTERS(X)                                                                      \
  X(evals) X(kernels_launched) X(system_allocs) X(system_frees) X(bytes_allocated)          \
  X(pool_hits) X(inplace_reuses) X(nodes_created) X(plans_built) X(plan_cache_hits) X(plans_renumbered)         \
  X(held_values_stored) X(values_materialized)                                              \
  X(kernels_compiled) X(kernel_cache_hits) X(kernel_disk_hits) X(kernel_disk_rejects)       \
  X(compile_ns) X(kernel_disk_load_ns) X(compiled_traces) X(compiled_replays)       \
  X(compiled_new_extents) X(compiled_unplanned) X(kernels_compiled_ahead) X(kernels_tiered_up)
#define AJ_COUNTER_FIELD(name) Counter name;
  AJ_COUNTERS(AJ_COUNTER_FIELD)
#undef AJ_COUNTER_FIELD
};

// This thread's counters.
Counters& stats_mut();

// Live-byte accounting for buffers arrays hold (keeps the peak).
void note_live_bytes(std::int64_t delta);

// The sum over every thread's block, plus live bytes and their peak; live
// nodes are filled in by the caller (core/api/stats.cpp asks the graphs).
Stats sum_counters();
// Zeroes every block and the peak (not live bytes: a state, not a count).
void reset_counters();

}  // namespace aj::detail

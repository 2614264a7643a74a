// Per-thread counter blocks (see stats.hpp).
#include "base/stats.hpp"

#include "base/allocation_limit.hpp"

#include <mutex>
#include <vector>

namespace aj::detail {

namespace {

// Every block ever handed out. A block whose thread has exited keeps its
// counts (they are still summed) and is handed to the next new thread, which
// counts on from there: the sums stay right and blocks never pile up.
struct Blocks {
  std::mutex mu;
  std::vector<Counters*> all;
  std::vector<Counters*> free;

  static Blocks& get() {
    static Blocks* b = new Blocks();  // never destroyed: threads may count during exit
    return *b;
  }
  Counters* take() {
    std::lock_guard lock(mu);
    if (!free.empty()) {
      Counters* c = free.back();
      free.pop_back();
      return c;
    }
    all.push_back(new Counters());
    return all.back();
  }
  void give_back(Counters* c) {
    std::lock_guard lock(mu);
    free.push_back(c);
  }
};

// Counts made while a thread exits, after its block went back (other
// thread_local destructors freeing buffers): one shared block, whose
// increments may race harmlessly (relaxed atomics, a count may be lost).
Counters& late_block() {
  static Counters* c = new Counters();
  Blocks& b = Blocks::get();
  static const bool registered = [&] {
    std::lock_guard lock(b.mu);
    b.all.push_back(c);
    return true;
  }();
  (void)registered;
  return *c;
}

constinit thread_local Counters* t_block = nullptr;
constinit thread_local bool t_exited = false;

struct BlockReturn {
  ~BlockReturn() {
    if (t_block) Blocks::get().give_back(t_block);
    t_block = nullptr;
    t_exited = true;
  }
};

std::atomic<std::int64_t> g_live_bytes{0};
std::atomic<std::int64_t> g_peak_live_bytes{0};

}  // namespace

Counters& stats_mut() {
  if (Counters* c = t_block) return *c;
  if (t_exited) return late_block();
  static thread_local BlockReturn give_back_at_exit;
  (void)&give_back_at_exit;
  t_block = Blocks::get().take();
  return *t_block;
}

void note_live_bytes(std::int64_t delta) {
  const std::int64_t now = g_live_bytes.fetch_add(delta, std::memory_order_relaxed) + delta;
  std::int64_t peak = g_peak_live_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_live_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

Stats sum_counters() {
  Stats s;
  Blocks& b = Blocks::get();
  std::lock_guard lock(b.mu);
  for (const Counters* c : b.all) {
#define AJ_ADD_COUNTER(name) s.name += c->name.get();
    AJ_COUNTERS(AJ_ADD_COUNTER)
#undef AJ_ADD_COUNTER
  }
  const std::int64_t live = g_live_bytes.load(std::memory_order_relaxed);
  s.live_bytes = static_cast<std::uint64_t>(live > 0 ? live : 0);
  const std::int64_t peak = g_peak_live_bytes.load(std::memory_order_relaxed);
  s.peak_live_bytes = static_cast<std::uint64_t>(peak > live ? peak : live);
  return s;
}

void reset_counters() {
  Blocks& b = Blocks::get();
  std::lock_guard lock(b.mu);
  for (Counters* c : b.all) {
#define AJ_RESET_COUNTER(name) c->name.reset();
    AJ_COUNTERS(AJ_RESET_COUNTER)
#undef AJ_RESET_COUNTER
  }
  g_peak_live_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace aj::detail

namespace aj::detail {

AllocationLimit*& allocation_limit() {
  thread_local AllocationLimit* limit = nullptr;
  return limit;
}

}  // namespace aj::detail

#include "base/profile.hpp"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

namespace aj::detail::prof {

std::atomic<bool> g_on{false};

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kernel: return "kernel";
    case Kind::library: return "library";
    case Kind::compile: return "compile";
    case Kind::plan: return "plan";
    case Kind::transfer: return "transfer";
    case Kind::eval: return "eval";
    case Kind::range: return "range";
  }
  return "?";
}

void Event::set_name(const char* s) {
  std::strncpy(name, s ? s : "", kNameChars - 1);
  name[kNameChars - 1] = '\0';
}

namespace {

constexpr std::size_t kChunk = 1024;     // events per chunk
constexpr std::size_t kChunks = 4096;    // chunks per thread: 4M events, then events are dropped

struct Chunk {
  Event events[kChunk];
};

// One thread's events. Written by its thread only; `count` published with
// release so a reader sees whole events. A buffer of a thread that exited
// goes back to a free list and serves the next new thread (events carry
// their thread's number, so the two never mix).
struct Buffer {
  std::atomic<std::uint64_t> epoch{0};
  std::atomic<std::size_t> count{0};
  std::unique_ptr<std::atomic<Chunk*>[]> chunks{new std::atomic<Chunk*>[kChunks]()};
  std::uint32_t thread = 0;
  std::string name;
};

struct Registry {
  std::mutex mu;
  std::vector<Buffer*> all, free;
  std::uint32_t next_thread = 1;
  std::atomic<std::uint64_t> epoch{0};
  int active = 0;  // profiles recording (under mu)
  std::int64_t started_ns = 0;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may record during exit
  return *r;
}

constinit thread_local const char* t_name = nullptr;  // set_thread_name's, applied when the buffer is made

struct ThreadSlot {
  Buffer* b = nullptr;
  ~ThreadSlot() {
    if (!b) return;
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    r.free.push_back(b);
  }
  Buffer& get() {
    if (b) return *b;
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    if (!r.free.empty()) {
      b = r.free.back();
      r.free.pop_back();
    } else {
      b = new Buffer;
      r.all.push_back(b);
    }
    b->thread = r.next_thread++;
    b->name = t_name                  ? std::string(t_name)
              : ::gettid() == ::getpid() ? std::string("main thread")
                                         : "thread " + std::to_string(b->thread);
    return *b;
  }
};

thread_local ThreadSlot t_slot;

}  // namespace

void record(Event& e) {
  Buffer& b = t_slot.get();
  const std::uint64_t epoch = registry().epoch.load(std::memory_order_acquire);
  if (b.epoch.load(std::memory_order_relaxed) != epoch) {  // a new recording: start over
    b.count.store(0, std::memory_order_relaxed);
    b.epoch.store(epoch, std::memory_order_release);
  }
  const std::size_t n = b.count.load(std::memory_order_relaxed);
  if (n >= kChunk * kChunks) return;  // full: dropped
  Chunk* c = b.chunks[n / kChunk].load(std::memory_order_relaxed);
  if (!c) {  // first use of this chunk (kept for later recordings)
    c = new Chunk;
    b.chunks[n / kChunk].store(c, std::memory_order_release);
  }
  e.thread = b.thread;
  c->events[n % kChunk] = e;
  b.count.store(n + 1, std::memory_order_release);
}

void set_thread_name(const char* name) { t_name = name; }

std::int64_t start() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.active++ == 0) {
    r.epoch.fetch_add(1, std::memory_order_acq_rel);
    r.started_ns = now_ns();
    g_on.store(true, std::memory_order_relaxed);
  }
  return now_ns();
}

void stop() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.active > 0 && --r.active == 0) g_on.store(false, std::memory_order_relaxed);
}

Snapshot collect() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  Snapshot s;
  const std::uint64_t epoch = r.epoch.load(std::memory_order_acquire);
  for (Buffer* b : r.all) {
    if (b->epoch.load(std::memory_order_acquire) != epoch) continue;
    const std::size_t n = b->count.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      s.events.push_back(b->chunks[i / kChunk].load(std::memory_order_acquire)->events[i % kChunk]);
    }
  }
  for (Buffer* b : r.all) s.threads.emplace_back(b->thread, b->name);
  return s;
}

}  // namespace aj::detail::prof

// The profiler's recorder (arrayjit/profile.hpp is its public side): the
// layers that do work (the step loop, the JITs, the planner, transfers) note
// each piece of work here while a profile records.
//
// Cost: while nothing records, `on()` is one relaxed load of a global flag and
// a branch, the only thing a launch pays. While recording, an event is two
// steady_clock reads and a copy of a small fixed-size record into this
// thread's buffer: no lock and no allocation (the buffer grows by chunks of
// events, allocated once and reused by later profiles), well under 1 us.
//
// Threads: every thread writes a buffer of its own; a reader (a profile that
// stops) reads every buffer up to its published count. Buffers are reset by
// their own thread when a new recording starts (an epoch), never by a reader.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "base/op.hpp"

namespace aj::detail::prof {

enum class Kind : std::uint8_t { kernel, library, compile, plan, transfer, eval, range };
const char* kind_name(Kind k);

extern std::atomic<bool> g_on;
inline bool on() { return g_on.load(std::memory_order_relaxed); }

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One piece of work, fixed size so that recording copies and never allocates.
struct Event {
  static constexpr int kMaxOps = 24;
  static constexpr int kNameChars = 48;
  std::int64_t start_ns = 0, dur_ns = 0;
  std::uint64_t bytes = 0;          // bytes moved (read + written)
  const char* file = nullptr;       // the user's source line (static storage), or null
  std::uint32_t line = 0;
  std::int32_t step = -1;           // the program step (the plan's step), -1: none
  std::uint32_t thread = 0;         // dense thread number, set by record()
  Kind kind = Kind::kernel;
  std::int8_t device_kind = 0;      // Device::Kind as an int
  std::int8_t device_index = 0;
  std::uint8_t nops = 0;            // ops[0 .. nops): the kernel's fused ops, in order
  bool more_ops = false;            // more than kMaxOps
  bool flag = false;                // compile: loaded from the disk cache; plan: a plan-cache hit
  std::uint8_t rank = 0;            // shape[0 .. rank): the kernel's iteration space (at most 6 kept)
  std::uint8_t reduced = 0;         // bit i: axis i is reduced
  std::int64_t shape[6] = {};
  Op ops[kMaxOps] = {};
  char name[kNameChars] = {};       // library op, range name, transfer direction ("" for kernels)
  void set_name(const char* s);
  void set_loc(const std::source_location& l) {
    file = l.file_name();
    line = l.line();
  }
};

// Appends e to this thread's buffer (e.thread is set here). Call only after
// on() said yes; an event recorded after the recording stopped is dropped or
// kept, harmlessly.
void record(Event& e);

// Names this thread in traces ("aj pool 1"); static storage.
void set_thread_name(const char* name);

// The recording: starts (the first of nested profiles starts an epoch; the
// buffers empty themselves lazily) and stops (the last stops the flag).
// Returns the start time.
std::int64_t start();
void stop();

// Every event recorded in this epoch so far, with thread names.
struct Snapshot {
  std::vector<Event> events;
  std::vector<std::pair<std::uint32_t, std::string>> threads;  // thread number, name
};
Snapshot collect();

}  // namespace aj::detail::prof

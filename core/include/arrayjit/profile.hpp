// The profiler: what ran, where, how long, how many bytes.
//
//   {
//     aj::profile p("trace.json");   // records from here ...
//     train_step(x);
//   }                                 // ... to here, then writes the trace
//   std::cout << aj::profile_summary();
//
// While a profile records, every kernel launch, library step (matmul, sort,
// ...), kernel compile, planning, host<->device transfer and evaluation is an
// event: its start, duration, thread, the plan step, the kernel's fused ops,
// the user's file:line that traced the value it makes, the bytes it moves at
// least (each element it reads or writes once) and the bandwidth achieved.
// The trace is Chrome trace-event JSON, which https://ui.perfetto.dev and
// chrome://tracing open. `AJ_TRACE=file.json` records a whole process and
// writes the file at exit.
//
// Cost: with no profile recording, one relaxed load and a branch per launch.
// While recording, about 0.1-0.3 us per event (bench/README.md); CUDA work is
// waited for after each step, so that an event lasts as long as its work
// (profiling serializes a device's steps).
//
// Profiles nest (each sees the events between its start and its stop) and
// may record on any thread; events of every thread are in each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/error.hpp"

namespace aj {

// One recorded piece of work (times in microseconds from the profile's start).
struct ProfileEvent {
  // "kernel", "library", "compile", "plan", "transfer", "eval", or "range"
  // (an aj::profile_range).
  std::string category;
  std::string name;    // kernel: its fused ops ("mul+add+sum"); library: "matmul"; ...
  std::string ops;     // kernel, compile, a library step's epilogue: the fused ops, space-separated
  std::string shape;   // kernel, compile: the iteration space ("[64, 128] reducing [1]")
  std::string where;   // kernel, library: the user's file:line that traced the value made
  std::string detail;  // compile: how ("LLVM", "disk cache", "NVRTC"); transfer: the direction
  std::string device;  // "cpu", "cuda:0" ("" for planning and ranges)
  int step = -1;       // kernel, library: the step of the evaluation's plan; plan: its steps
  std::uint32_t thread = 0;  // the thread (a small number; the trace names them)
  double start_us = 0, duration_us = 0;
  std::uint64_t bytes = 0;   // kernel, library, transfer: bytes moved (read + written)
  double gb_per_s = 0;       // bytes / duration
};

// A recording, from construction to stop() (or destruction). `trace_path`:
// where stop() writes the Chrome trace ("": kept in memory only); the file
// is opened here, so a path that cannot be written is an aj::Error now.
class profile {
 public:
  explicit profile(const std::string& trace_path = "", Loc loc = Loc::current());
  ~profile();  // stops; an error writing the trace then is printed to stderr
  profile(const profile&) = delete;
  profile& operator=(const profile&) = delete;

  // Stops recording and writes the trace file (if any). Stopping twice is an
  // aj::Error.
  void stop(Loc loc = Loc::current());
  bool recording() const;

  // The events so far (while recording: up to now), by start time.
  std::vector<ProfileEvent> events() const;
  // The Chrome trace-event JSON of events().
  std::string trace_json() const;
  // The table of aj::profile_summary for this profile.
  std::string summary(std::size_t top = 10) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// A named range in the trace (PyTorch's record_function, JAX's
// TraceAnnotation): recorded on this thread from construction to destruction
// while a profile records; ranges nest. Names are cut at 47 characters.
class profile_range {
 public:
  explicit profile_range(const std::string& name);
  ~profile_range();
  profile_range(const profile_range&) = delete;
  profile_range& operator=(const profile_range&) = delete;

 private:
  std::int64_t start_ns_;
  char name_[48];
};

// The top `top` kernels and library steps of the last profile stopped (or of
// the one recording now, up to now) by total time, with calls, mean time,
// achieved bandwidth and its percentage of the peak: the host's measured
// STREAM triad (one thread; `AJ_PEAK_GBPS` overrides it), then a line per
// other category (compile, plan, transfer). "" when no profile has recorded.
std::string profile_summary(std::size_t top = 10);

}  // namespace aj

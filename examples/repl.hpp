// What the examples share: REPL-style echo, and the checks that make each a test.
//
// Each example reads like a session at an interactive prompt: `STEP(code)` prints
// `>>> code` and runs it, `SHOW(expr)` prints `>>> expr` and then its value, as
// Python's REPL does for a bare expression. The macros expand to plain statements
// in the caller's scope, so `STEP(Array a = ones({2, 3}));` declares `a` there.
//
// Every example also works its numbers out a second way (a plain C++ loop, a
// closed form, values known by hand) and compares them with `check`; `finish()`
// prints one summary line and gives main's exit status, so each example is a
// ctest that fails when arrayjit prints a wrong number.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#define STEP(...)                              \
  std::cout << ">>> " << #__VA_ARGS__ << "\n"; \
  __VA_ARGS__
#define SHOW(...) std::cout << ">>> " << #__VA_ARGS__ << "\n" << (__VA_ARGS__) << "\n"

namespace example {

// What a compiled training step did: its traces and replays, and the buffers
// from the system and outputs in place of the `steps` calls between `warm`
// and `end` (stats() after warm-up and at the end).
inline void show_compiled(const std::string& name, const aj::detail::CompiledCounts& c, const aj::Stats& warm,
                          const aj::Stats& end, int steps) {
  std::cout << ">>> " << name << ".counts(), stats() after step 3\n    " << c.traces << " traces, " << c.replays
            << " replays; " << end.system_allocs - warm.system_allocs << " buffers from the system, "
            << (end.inplace_reuses - warm.inplace_reuses) / static_cast<std::uint64_t>(steps)
            << " outputs written in place per step\n";
}

// Runs `steps` calls of a compiled training step `fn` (aj::compile), `call(t)`
// making step t's call and returning its loss, and prints what the steps
// after warm-up did (show_compiled: stats() after step 3 and at the end).
struct Trained {
  std::vector<double> losses;              // one per step
  std::uint64_t system_allocs_after_warmup;  // buffers from the system after step 3
};
template <class Fn, class Call>
Trained train_compiled(const std::string& name, const Fn& fn, int steps, Call&& call) {
  Trained r;
  aj::Stats warm;
  for (int t = 1; t <= steps; ++t) {
    r.losses.push_back(call(t));
    if (t == 3) warm = aj::stats();
  }
  const aj::Stats end = aj::stats();
  show_compiled(name, fn.counts(), warm, end, steps - 3);
  r.system_allocs_after_warmup = end.system_allocs - warm.system_allocs;
  return r;
}

inline std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

inline int checks_run = 0;
inline int checks_failed = 0;

// Compares element by element: |got - want| <= atol + rtol * |want| (NumPy's
// allclose). Prints one line either way, naming the first bad element on failure.
inline void check(const std::string& what, const std::vector<double>& got,
                  const std::vector<double>& want, double rtol, double atol = 0.0) {
  ++checks_run;
  if (got.size() != want.size()) {
    std::cout << "    check " << what << ": FAILED, " << got.size() << " values, expected "
              << want.size() << "\n";
    ++checks_failed;
    return;
  }
  double max_err = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    if (!(err <= atol + rtol * std::abs(want[i]))) {  // NaN fails too
      std::cout << "    check " << what << ": FAILED at [" << i << "]: got " << got[i]
                << ", expected " << want[i] << " (rtol " << rtol << ", atol " << atol << ")\n";
      ++checks_failed;
      return;
    }
    max_err = std::max(max_err, err);
  }
  const std::string within = rtol == 0 && atol == 0 ? "exactly"
                             : "within rtol " + number(rtol) + ", atol " + number(atol);
  if (got.size() == 1) {
    std::cout << "    check " << what << ": ok, " << got[0] << " (expected " << want[0] << ", "
              << within << ")\n";
  } else if (rtol == 0 && atol == 0) {
    std::cout << "    check " << what << ": ok, " << got.size() << " values, all equal\n";
  } else {
    std::cout << "    check " << what << ": ok, " << got.size() << " values " << within
              << " (largest difference " << max_err << ")\n";
  }
}

inline void check(const std::string& what, double got, double want, double rtol,
                  double atol = 0.0) {
  check(what, std::vector<double>{got}, std::vector<double>{want}, rtol, atol);
}

// Values of any dtype, as doubles (exact for every i32 and f32, and i64 below 2^53).
inline std::vector<double> values(const aj::Array& a) { return a.to_vector<double>(); }

// The last line of every example, and main's exit status.
inline int finish() {
  if (checks_failed == 0) {
    std::cout << "\nok: all " << checks_run << " checks passed\n";
    return 0;
  }
  std::cout << "\nFAILED: " << checks_failed << " of " << checks_run << " checks\n";
  return 1;
}

}  // namespace example

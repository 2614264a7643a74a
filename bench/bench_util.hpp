// What the dispatch benchmarks share: this thread's CPU time, medians of
// repeated batches, and the 10-op chain they time.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <ctime>
#include <functional>
#include <vector>

namespace ajbench {

// This thread's CPU time in us: on a shared machine, time spent descheduled
// would otherwise dominate the small numbers measured.
inline double cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// Median over `runs` of the mean CPU time per call of `calls` calls, in us.
inline double median_us(const std::function<void()>& f, int calls, int runs = 9) {
  for (int i = 0; i < calls / 10 + 1; ++i) f();  // warm up
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const double t0 = cpu_us();
    for (int i = 0; i < calls; ++i) f();
    t.push_back((cpu_us() - t0) / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The 10-op elementwise chain of the dispatch target (x held by the caller,
// so nothing is donated from it).
inline aj::Array chain(const aj::Array& x) {
  aj::Array y = x * 1.5f;
  y = y + 2.0f;
  y = aj::abs(y);
  y = y - 1.0f;
  y = aj::sqrt(y);
  y = y * y;
  y = aj::maximum(y, 0.25f);
  y = y / 3.0f;
  y = aj::exp(y);
  y = y + x;
  return y;
}

}  // namespace ajbench

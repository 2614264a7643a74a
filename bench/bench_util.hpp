// What the benchmarks share: this thread's CPU time, medians of repeated
// batches, wall-clock medians of long calls, a number printed by a peer
// script, and the 10-op chain the dispatch benchmarks time.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <ctime>
#include <functional>
#include <thread>
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
// The warm-up runs f at least 129 times, so that kernels of small launches
// are compiled in full on the JIT's background thread, and waits for that:
// the steady state is what is timed (arrayjit/jit.hpp, Tiers).
inline double median_us(const std::function<void()>& f, int calls, int runs = 9) {
  for (int i = 0; i < std::max(calls / 10 + 1, 129); ++i) f();  // warm up
  aj::jit::finish_tier_ups();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const double t0 = cpu_us();
    for (int i = 0; i < calls; ++i) f();
    t.push_back((cpu_us() - t0) / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Median wall time in ms of `runs` calls after `warm` unmeasured ones (for
// calls of milliseconds that use several threads). The warm-up goes on until
// two calls in a row queue no tier-up (at most 128 more calls): a kernel of
// a long call reaches its 16M points x instructions in a few launches, and a
// user's loop runs its full code from then on (arrayjit/jit.hpp, Tiers).
inline double wall_median_ms(const std::function<void()>& f, int runs, int warm = 1) {
  for (int i = 0; i < warm; ++i) f();
  aj::jit::finish_tier_ups();  // (what the warm-up queued)
  for (int i = 0, quiet = 0; quiet < 2 && i < 128; ++i) {
    const std::uint64_t before = aj::stats().kernels_tiered_up;
    f();
    aj::jit::finish_tier_ups();
    quiet = aj::stats().kernels_tiered_up == before ? quiet + 1 : 0;
  }
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The number a peer's command prints (a Python script timing NumPy or
// PyTorch), or -1 when it cannot be run.
inline double command_number(const std::string& cmd) {
  FILE* f = ::popen(cmd.c_str(), "r");
  double v = -1;
  if (f) {
    if (std::fscanf(f, "%lf", &v) != 1) v = -1;
    ::pclose(f);
  }
  return v;
}

// The STREAM triad a[i] = b[i] + s * c[i] over 32M f32 (well past the L3),
// on 1 thread and split over 2 (wall clock, medians of `runs`): what the
// memory system gives a second core, the ceiling of a memory-bound case's
// 2-thread speed-up. issue 34 point 5 holds each such case to >= 0.95x of it.
struct Triad {
  double gbs = 0;       // 1 thread, 12 bytes an element
  double speedup2 = 0;  // 1-thread time over 2-thread time
};
inline Triad triad(int runs = 7) {
  const std::size_t n = std::size_t{32} << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  auto part = [&](std::size_t lo, std::size_t hi) {
    float* __restrict A = a.data();
    const float* __restrict B = b.data();
    const float* __restrict C = c.data();
    for (std::size_t i = lo; i < hi; ++i) A[i] = B[i] + 1.5f * C[i];
  };
  const double t1 = wall_median_ms([&] { part(0, n); }, runs);
  const double t2 = wall_median_ms([&] {
    std::thread other(part, n / 2, n);
    part(0, n / 2);
    other.join();
  }, runs);
  return {12.0 * static_cast<double>(n) / (t1 * 1e6), t1 / t2};
}

// "2 threads 1.21x faster, the triad 1.30x: 0.93 of it", for a case timed on
// 1 and on 2 threads.
inline std::string against_triad(double t1, double t2, const Triad& tr) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "2 threads %.2fx faster, the triad %.2fx: %.2f of it", t1 / t2, tr.speedup2,
                (t1 / t2) / tr.speedup2);
  return buf;
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

// ---- the MLP training step of bench_mlp and compiled_step --------------------

// Adam's constants (the hand-written peers use the same).
struct AdamConstants {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};
inline constexpr AdamConstants kAdam{};

// Adam's moments for the parameters p: zeros of their shapes. p, m, v and
// `data` are evaluated together.
inline void adam_init(const std::vector<aj::Array>& p, std::vector<aj::Array>& m, std::vector<aj::Array>& v,
                      const std::vector<aj::Array>& data) {
  for (const auto& q : p) m.push_back(aj::zeros(q.shape())), v.push_back(aj::zeros(q.shape()));
  std::vector<aj::Array> all = p;
  all.insert(all.end(), m.begin(), m.end());
  all.insert(all.end(), v.begin(), v.end());
  all.insert(all.end(), data.begin(), data.end());
  aj::eval(all);
}

// Bias corrections of Adam's step t (1, 2, ...).
inline std::pair<float, float> adam_bias(int t) {
  return {1 - std::pow(kAdam.beta1, static_cast<float>(t)), 1 - std::pow(kAdam.beta2, static_cast<float>(t))};
}

// Softmax cross-entropy of a ReLU MLP: q = {W1, b1, W2, b2}, Y one-hot.
inline aj::Array mlp_loss(const aj::Array& X, const aj::Array& Y, const std::vector<aj::Array>& q) {
  aj::Array h = aj::maximum(aj::matmul(X, q[0]) + q[1], 0.0f);
  aj::Array z = aj::matmul(h, q[2]) + q[3];
  aj::Array mx = aj::stop_gradient(aj::max(z, 1, true));
  aj::Array lse = aj::log(aj::sum(aj::exp(z - mx), 1, true)) + mx;
  return aj::mean(aj::sum(Y * (lse - z), 1));
}

// One training step, out of place: {loss, p0', m0', v0', p1', ...} from the
// parameters and Adam's moments (taken by value: passed as rvalues, their
// buffers may be written in place).
inline std::vector<aj::Array> mlp_adam_step(const aj::Array& X, const aj::Array& Y, std::vector<aj::Array> p,
                                            std::vector<aj::Array> m, std::vector<aj::Array> v, float c1, float c2) {
  auto [l, g] = aj::value_and_grad([&](const std::vector<aj::Array>& q) { return mlp_loss(X, Y, q); },
                                   {0, 1, 2, 3})(p);
  std::vector<aj::Array> out{l};
  for (std::size_t i = 0; i < p.size(); ++i) {
    aj::Array mi = kAdam.beta1 * m[i] + (1 - kAdam.beta1) * g[i];
    aj::Array vi = kAdam.beta2 * v[i] + (1 - kAdam.beta2) * g[i] * g[i];
    out.push_back(p[i] - kAdam.lr * (mi / c1) / (aj::sqrt(vi / c2) + kAdam.eps));
    out.push_back(mi);
    out.push_back(vi);
  }
  return out;
}

// Puts a step's results back (p, m, v may have been moved into the call);
// returns the loss.
inline aj::Array take_step(std::vector<aj::Array>& p, std::vector<aj::Array>& m, std::vector<aj::Array>& v,
                           std::vector<aj::Array>&& r) {
  const std::size_t n = (r.size() - 1) / 3;
  p.resize(n), m.resize(n), v.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = std::move(r[1 + 3 * i]);
    m[i] = std::move(r[2 + 3 * i]);
    v[i] = std::move(r[3 + 3 * i]);
  }
  return std::move(r[0]);
}

}  // namespace ajbench

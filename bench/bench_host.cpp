// Host JIT benchmarks: arrayjit against peers measured in the same run
// (hand-written loops, Eigen). Prints, per case, the median of several runs
// for each and the ratio ours / peer. Results and targets: bench/README.md.
//
//   bench_host [--quick] [--cpu-time] [GROUP...]
//                                 all cases, or the groups named (see main);
//                                 --quick: fewer repetitions; --cpu-time:
//                                 1-thread runs timed by thread CPU time
//   bench_host --disk-hit DIR     (internal) one kernel from the disk cache in
//                                 DIR, in a fresh process; prints its time
#include <arrayjit/arrayjit.hpp>

#include <Eigen/Dense>
#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using aj::Array;
using aj::DType;
using Clock = std::chrono::steady_clock;

int g_reps = 7;
// --cpu-time: time single-threaded runs by this thread's CPU time, which on
// a shared machine leaves out the time spent waiting for a core (memory
// stalls still count). Runs on 2 threads are always timed by the clock.
bool g_cpu_time = false;
bool g_wall_only = false;  // set while timing a multi-threaded run

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median_ms(const std::function<void()>& f, int reps = g_reps) {
  f();  // warm-up (compiles, faults pages in)
  const bool cpu = g_cpu_time && !g_wall_only;
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    const double c0 = cpu ? thread_cpu_ms() : 0;
    f();
    t.push_back(cpu ? thread_cpu_ms() - c0 : std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void row(const char* name, double ours, const char* peer, double theirs, const char* unit = "ms") {
  std::printf("  %-44s %10.3f %s   %-26s %10.3f %s   ratio %.2f\n", name, ours, unit, peer, theirs, unit,
              ours / theirs);
  std::fflush(stdout);
}

std::vector<double> random_vec(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<float> random_floats(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// `ours` on 1 thread and on all threads, each row against the peer's time;
// returns the 1-thread time.
double thread_rows(const std::string& name, const std::function<void()>& ours, const char* peer, double theirs) {
  aj::jit::set_num_threads(1);
  const double t1 = median_ms(ours);
  aj::jit::set_num_threads(0);
  const double t2 = median_ms(ours);
  row((name + ", 1 thread").c_str(), t1, peer, theirs);
  row((name + ", all threads").c_str(), t2, peer, theirs);
  return t1;
}

volatile double g_sink = 0;

// --- seed: a = x + 2; b = sum(a, 1); b = b * 3; b = b + 0 ----------------------------
void bench_seed(std::int64_t n) {
  std::vector<double> xv = random_vec(static_cast<std::size_t>(n * n), 1);
  Array x = aj::borrow(xv.data(), {n, n});
  std::vector<double> hand(static_cast<std::size_t>(n));
  auto ours = [&] {
    Array a = x + 2.0;
    Array b = aj::sum(a, 1);
    b = b * 3.0;
    b = b + 0.0;
    b.eval();
    g_sink = g_sink + 1;
  };
  auto loop = [&] {
    for (std::int64_t i = 0; i < n; ++i) {
      double s = 0;
      const double* r = xv.data() + i * n;
      for (std::int64_t j = 0; j < n; ++j) s += r[j] + 2.0;
      hand[static_cast<std::size_t>(i)] = s * 3.0 + 0.0;
    }
    g_sink = g_sink + hand[0];
  };
  using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMat> xm(xv.data(), n, n);
  auto eigen = [&] {
    RowMat a = xm.array() + 2.0;
    Eigen::VectorXd b = a.rowwise().sum();
    b = b * 3.0;
    b = b.array() + 0.0;
    g_sink = g_sink + b[0];
  };
  char name[64];
  aj::jit::set_num_threads(1);
  const double t1 = median_ms(ours);
  aj::jit::set_num_threads(2);
  const double t2 = median_ms(ours);
  aj::jit::set_num_threads(0);
  const double tl = median_ms(loop), te = median_ms(eigen);
  std::snprintf(name, sizeof name, "seed f64 n=%lld, 1 thread", static_cast<long long>(n));
  row(name, t1, "hand-written loop", tl);
  std::snprintf(name, sizeof name, "seed f64 n=%lld, 2 threads", static_cast<long long>(n));
  row(name, t2, "hand-written loop", tl);
  std::snprintf(name, sizeof name, "seed f64 n=%lld, 1 thread", static_cast<long long>(n));
  row(name, t1, "Eigen, statement by statement", te);
}

// --- Adam step, 10M f32 ---------------------------------------------------------------
void bench_adam() {
  const std::int64_t n = 10'000'000;
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  std::vector<float> g0(static_cast<std::size_t>(n)), p0(static_cast<std::size_t>(n));
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& v : g0) v = d(rng);
  for (auto& v : p0) v = d(rng);
  Array g = aj::from_vector(g0), p = aj::from_vector(p0), m = aj::zeros({n}, DType::f32),
        v = aj::zeros({n}, DType::f32);
  int t = 0;
  auto ours = [&] {
    ++t;
    const float c1 = 1.0f / (1.0f - std::pow(b1, static_cast<float>(t)));
    const float c2 = 1.0f / (1.0f - std::pow(b2, static_cast<float>(t)));
    m = b1 * m + (1.0f - b1) * g;
    v = b2 * v + (1.0f - b2) * (g * g);
    p = p - lr * (m * c1) / (aj::sqrt(v * c2) + eps);
    aj::eval({p, m, v});
  };
  Eigen::ArrayXf ep = Eigen::Map<Eigen::ArrayXf>(p0.data(), n), eg = Eigen::Map<Eigen::ArrayXf>(g0.data(), n),
                 em = Eigen::ArrayXf::Zero(n), ev = Eigen::ArrayXf::Zero(n);
  int te_t = 0;
  auto eigen = [&] {
    ++te_t;
    const float c1 = 1.0f / (1.0f - std::pow(b1, static_cast<float>(te_t)));
    const float c2 = 1.0f / (1.0f - std::pow(b2, static_cast<float>(te_t)));
    em = b1 * em + (1.0f - b1) * eg;
    ev = b2 * ev + (1.0f - b2) * eg.square();
    ep -= lr * (em * c1) / ((ev * c2).sqrt() + eps);
  };
  std::vector<float> hp = p0, hm(static_cast<std::size_t>(n)), hv(static_cast<std::size_t>(n));
  int th = 0;
  auto hand = [&] {
    ++th;
    const float c1 = 1.0f / (1.0f - std::pow(b1, static_cast<float>(th)));
    const float c2 = 1.0f / (1.0f - std::pow(b2, static_cast<float>(th)));
    float* __restrict P = hp.data();
    float* __restrict M = hm.data();
    float* __restrict V = hv.data();
    const float* __restrict G = g0.data();
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = G[i];
      const float m = b1 * M[i] + (1 - b1) * g;
      const float v = b2 * V[i] + (1 - b2) * g * g;
      M[i] = m;
      V[i] = v;
      P[i] -= lr * (m * c1) / (__builtin_sqrtf(v * c2) + eps);
    }
  };
  const double te = median_ms(eigen), th_ = median_ms(hand);
  const double t1 = thread_rows("Adam 10M f32 out of place", ours, "Eigen in place", te);
  row("Adam 10M f32 out of place, 1 thread", t1, "hand-written fused loop", th_);
}

// --- transcendental chain, 16M f32 ------------------------------------------------------
void bench_chain() {
  const std::int64_t n = 16 << 20;
  std::vector<float> x0 = random_floats(static_cast<std::size_t>(n), 3, -4, 4);
  Array x = aj::from_vector(x0);
  auto ours = [&] {
    Array y = aj::exp(-x * x / 2.0f) * aj::sin(3.0f * x) + 0.5f * aj::cos(x);
    y.eval();
  };
  Eigen::Map<Eigen::ArrayXf> ex(x0.data(), n);
  Eigen::ArrayXf ey(n);
  auto eigen = [&] { ey = (-ex * ex / 2.0f).exp() * (3.0f * ex).sin() + 0.5f * ex.cos(); };
  thread_rows("exp(-x*x/2)*sin(3x)+0.5cos(x) 16M f32", ours, "Eigen", median_ms(eigen));
}

// --- Black-Scholes call prices, 10M f64 ---------------------------------------------------
// N(x) = erfc(-x / sqrt 2) / 2. Eigen's erfc is its SpecialFunctions module's.
void bench_black_scholes() {
  const std::int64_t n = 10'000'000;
  std::vector<double> s0(static_cast<std::size_t>(n)), k0(s0.size()), t0(s0.size());
  {
    std::vector<float> a = random_floats(s0.size(), 21, 50, 150), b = random_floats(s0.size(), 22, 50, 150),
                       c = random_floats(s0.size(), 23, 0.1f, 2.0f);
    for (std::size_t i = 0; i < s0.size(); ++i) s0[i] = a[i], k0[i] = b[i], t0[i] = c[i];
  }
  const double r = 0.03, sigma = 0.25, rt2 = 1.0 / std::sqrt(2.0);
  Array S = aj::from_vector(s0), K = aj::from_vector(k0), T = aj::from_vector(t0);
  auto ours = [&] {
    Array sq = sigma * aj::sqrt(T);
    Array d1 = (aj::log(S / K) + (r + 0.5 * sigma * sigma) * T) / sq;
    Array d2 = d1 - sq;
    Array c = S * (0.5 * aj::erfc(-d1 * rt2)) - K * aj::exp(-r * T) * (0.5 * aj::erfc(-d2 * rt2));
    c.eval();
  };
  Eigen::Map<Eigen::ArrayXd> es(s0.data(), n), ek(k0.data(), n), et(t0.data(), n);
  Eigen::ArrayXd ec(n);
  auto eigen = [&] {
    const Eigen::ArrayXd sq = sigma * et.sqrt();
    const Eigen::ArrayXd d1 = ((es / ek).log() + (r + 0.5 * sigma * sigma) * et) / sq;
    const Eigen::ArrayXd d2 = d1 - sq;
    ec = es * (0.5 * (-d1 * rt2).erfc()) - ek * (-r * et).exp() * (0.5 * (-d2 * rt2).erfc());
  };
  thread_rows("Black-Scholes calls, 10M f64", ours, "Eigen", median_ms(eigen));
}

// --- whole-array reduction: sqrt(sum(x*x)), 16M f32 --------------------------------------
// One output: split over the reduced range (partial sums per part, then a
// finishing kernel), so it uses every thread.
void bench_norm() {
  const std::int64_t n = 16 << 20;
  std::vector<float> x0 = random_floats(static_cast<std::size_t>(n), 5, -1, 1);
  Array x = aj::from_vector(x0);
  auto ours = [&] {
    Array y = aj::sqrt(aj::sum(x * x));
    g_sink = g_sink + y.item<float>();
  };
  Eigen::Map<Eigen::ArrayXf> ex(x0.data(), n);
  auto eigen = [&] { g_sink = g_sink + std::sqrt(ex.square().sum()); };
  thread_rows("sqrt(sum(x*x)) 16M f32", ours, "Eigen", median_ms(eigen));
}

// --- memory-bound cases, each against the triad bandwidth ------------------------------
// The triad a[i] = b[i] + s*c[i] (two reads, one write) is the bandwidth the
// reductions and two-pass kernels below are held to: a case's bandwidth is
// the least traffic it needs (bytes read and written once) over its time,
// printed as a percentage of the triad's 12 bytes per element over its time.
constexpr std::int64_t kRows = 8192, kCols = 4096;  // 128 MiB of f32: well past the L3

double g_triad_gbs = 0;  // GB/s
double g_triad_speedup2 = 0;  // the triad's 2-thread time over its 1-thread time

void bench_triad() {
  const std::size_t n = static_cast<std::size_t>(kRows * kCols);
  std::vector<float> a(n), b = random_floats(n, 7, -1, 1), c = random_floats(n, 8, -1, 1);
  const float s = 1.5f;
  auto triad = [&] {
    float* __restrict A = a.data();
    const float* __restrict B = b.data();
    const float* __restrict C = c.data();
    for (std::size_t i = 0; i < n; ++i) A[i] = B[i] + s * C[i];
    g_sink = g_sink + A[n / 2];
  };
  const double t = median_ms(triad);
  g_triad_gbs = 12.0 * static_cast<double>(n) / (t * 1e6);
  std::printf("  %-44s %10.3f ms   %.1f GB/s (2 reads + 1 write of 4 bytes per element)\n",
              "triad a = b + s*c, 32M f32, 1 thread", t, g_triad_gbs);
  // The same loop split over 2 threads (by the clock): what the memory system
  // gives a second core, the ceiling of a bandwidth-bound case's 2-thread
  // speedup. On the 2-core EPYC VM it was 1.11-1.16x (2026-11-24).
  auto half = [&](std::size_t lo, std::size_t hi) {
    float* __restrict A = a.data();
    const float* __restrict B = b.data();
    const float* __restrict C = c.data();
    for (std::size_t i = lo; i < hi; ++i) A[i] = B[i] + s * C[i];
  };
  const bool wall = g_wall_only;
  g_wall_only = true;
  const double t2 = median_ms([&] {
    std::thread other(half, n / 2, n);
    half(0, n / 2);
    other.join();
    g_sink = g_sink + a[n / 2];
  });
  g_wall_only = wall;
  g_triad_speedup2 = t / t2;
  std::printf("  %-44s %10.3f ms   %.1f GB/s, 2 threads %.2fx faster (the ceiling for the cases below)\n",
              "triad, 2 threads (by the clock)", t2, 12.0 * static_cast<double>(n) / (t2 * 1e6), g_triad_speedup2);
}

// `bytes` moved at least in `ms`, as a percentage of the triad bandwidth.
double pct_triad(double bytes, double ms) { return 100.0 * bytes / (ms * 1e6) / g_triad_gbs; }

void bw_rows(const std::string& name, double bytes, double t1, double t2, const char* peer, double theirs) {
  row((name + ", 1 thread").c_str(), t1, peer, theirs);
  row((name + ", 2 threads").c_str(), t2, peer, theirs);
  std::printf("  %-44s %9.0f%% / %.0f%% of triad (1 / 2 threads), 2 threads %.2fx faster (the triad %.2fx)%s\n", "",
              pct_triad(bytes, t1), pct_triad(bytes, t2), t1 / t2, g_triad_speedup2,
              g_cpu_time ? " (2 threads by the clock)" : "");
}

// NumPy's median time in ms for `expr` over x (f32 [kRows, kCols], random),
// from /usr/bin/python3; -1 when NumPy cannot be run.
double numpy_ms(const char* expr) {
  char cmd[1024];
  std::snprintf(cmd, sizeof cmd,
                "/usr/bin/python3 -c \"import numpy as np, time\n"
                "x = np.random.default_rng(1).uniform(-1, 1, (%lld, %lld)).astype(np.float32)\n"
                "%s\nclock = time.%s\nt = []\nfor i in range(%d):\n t0 = clock(); %s; t.append(clock() - t0)\n"
                "print(sorted(t)[len(t) // 2] * 1e3)\" 2>/dev/null",
                static_cast<long long>(kRows), static_cast<long long>(kCols), expr,
                g_cpu_time ? "thread_time" : "perf_counter", g_reps + 1, expr);
  FILE* f = ::popen(cmd, "r");
  double ms = -1;
  if (f) {
    if (std::fscanf(f, "%lf", &ms) != 1) ms = -1;
    ::pclose(f);
  }
  return ms;
}

// Both times of `ours`: on 1 thread and on 2.
std::pair<double, double> one_two(const std::function<void()>& ours) {
  aj::jit::set_num_threads(1);
  const double t1 = median_ms(ours);
  aj::jit::set_num_threads(2);
  g_wall_only = true;
  const double t2 = median_ms(ours);
  g_wall_only = false;
  aj::jit::set_num_threads(0);
  return {t1, t2};
}

// sum(x, 0) and sum(x, 1) of f32 [8192, 4096]: columns (every output walks
// all rows) and rows, against NumPy (in another process) and Eigen.
void bench_axis_sums() {
  std::vector<float> x0 = random_floats(static_cast<std::size_t>(kRows * kCols), 9, -1, 1);
  Array x = aj::borrow(x0.data(), {kRows, kCols});
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMat> xm(x0.data(), kRows, kCols);
  const double bytes = 4.0 * static_cast<double>(kRows * kCols);
  for (int axis : {0, 1}) {
    auto ours = [&] {
      Array s = aj::sum(x, axis);
      s.eval();
      g_sink = g_sink + 1;
    };
    Eigen::VectorXf ev;
    auto eigen = [&] {
      if (axis == 0) ev = xm.colwise().sum().transpose();
      else ev = xm.rowwise().sum();
      g_sink = g_sink + ev[0];
    };
    const auto [t1, t2] = one_two(ours);
    const double tn = numpy_ms(axis == 0 ? "x.sum(0)" : "x.sum(1)");
    const double te = median_ms(eigen);
    const std::string name = std::string("sum(x, ") + std::to_string(axis) + ") 8192x4096 f32";
    bw_rows(name, bytes, t1, t2, "NumPy (1 thread)", tn);
    row((name + ", 1 thread").c_str(), t1, "Eigen", te);
  }
}

// var over rows, columns and all of f32 [4096, 4096] (issue 35: one pass,
// >= 60% of the triad): its least traffic is one read of the input. Against
// NumPy's two-pass var of the same values (the first 4096 rows of NumPy's x).
void bench_var() {
  const std::int64_t n = 4096;
  std::vector<float> x0 = random_floats(static_cast<std::size_t>(n * n), 13, -1, 1);
  for (float& v : x0) v += 3.0f;  // a mean well away from 0
  Array x = aj::borrow(x0.data(), {n, n});
  const double bytes = 4.0 * static_cast<double>(n * n);
  struct Case {
    const char* name;
    std::optional<int> axis;
    const char* numpy;
  };
  for (const Case& c : {Case{"var(x, 1) 4096^2 f32", 1, "x[:4096].var(1)"}, Case{"var(x, 0) 4096^2 f32", 0, "x[:4096].var(0)"},
                        Case{"var(x) 4096^2 f32", std::nullopt, "x[:4096].var()"}}) {
    auto ours = [&] {
      Array v = c.axis ? aj::var(x, *c.axis) : aj::var(x);
      v.eval();
      g_sink = g_sink + 1;
    };
    const auto [t1, t2] = one_two(ours);
    bw_rows(c.name, bytes, t1, t2, "NumPy (1 thread)", numpy_ms(c.numpy));
  }
}

// Softmax and layernorm over the rows of f32 [4096, 4096], against a
// hand-written loop that keeps each row in cache (max, exp and sum, scale;
// mean, variance, normalize). Held to the least traffic of two passes over
// memory: two reads of the input and one write, the triad's 12 bytes.
void bench_two_pass() {
  const std::int64_t n = 4096;
  const std::size_t total = static_cast<std::size_t>(n * n);
  std::vector<float> x0 = random_floats(total, 10, -4, 4), g0 = random_floats(static_cast<std::size_t>(n), 11, 0.5f, 1.5f),
                     b0 = random_floats(static_cast<std::size_t>(n), 12, -1, 1), out(total);
  Array x = aj::borrow(x0.data(), {n, n}), g = aj::borrow(g0.data(), {n}), b = aj::borrow(b0.data(), {n});
  const double bytes = 12.0 * static_cast<double>(total);
  const float eps = 1e-5f;
  // As a function would write it: `e` is a local the caller never sees, so
  // the division may take over its buffer.
  auto softmax_of = [](const Array& v) {
    Array e = aj::exp(v - aj::max(v, 1, true));
    return e / aj::sum(e, 1, true);
  };
  auto softmax = [&] { softmax_of(x).eval(); };
  // The same with exp(x - max) still held by a handle while it is evaluated:
  // it must be stored whole, and the result needs a buffer of its own.
  auto softmax_held = [&] {
    Array e = aj::exp(x - aj::max(x, 1, true));
    (e / aj::sum(e, 1, true)).eval();
  };
  auto hand_softmax = [&] {
    for (std::int64_t i = 0; i < n; ++i) {
      const float* r = x0.data() + i * n;
      float* o = out.data() + i * n;
      float m = r[0], s = 0;
      for (std::int64_t j = 1; j < n; ++j) m = std::max(m, r[j]);
      for (std::int64_t j = 0; j < n; ++j) s += (o[j] = std::exp(r[j] - m));
      const float inv = 1.0f / s;
      for (std::int64_t j = 0; j < n; ++j) o[j] *= inv;
    }
    g_sink = g_sink + out[0];
  };
  // As a function would write it: `c` is gone when the result is
  // evaluated, so the normalizing kernel may recompute x - mean instead of
  // reading it back (the work rule's one exception, docs/optimizer.md).
  auto layernorm_of = [&](const Array& v) {
    Array c = v - aj::mean(v, 1, true);
    return c / aj::sqrt(aj::mean(c * c, 1, true) + eps) * g + b;
  };
  auto layernorm = [&] { layernorm_of(x).eval(); };
  // The same with `c` still held by a handle: it must be stored whole.
  auto layernorm_held = [&] {
    Array c = x - aj::mean(x, 1, true);
    (c / aj::sqrt(aj::mean(c * c, 1, true) + eps) * g + b).eval();
  };
  auto hand_layernorm = [&] {
    for (std::int64_t i = 0; i < n; ++i) {
      const float* r = x0.data() + i * n;
      float* o = out.data() + i * n;
      float s = 0, v = 0;
      for (std::int64_t j = 0; j < n; ++j) s += r[j];
      const float mu = s / static_cast<float>(n);
      for (std::int64_t j = 0; j < n; ++j) v += (r[j] - mu) * (r[j] - mu);
      const float inv = 1.0f / std::sqrt(v / static_cast<float>(n) + eps);
      for (std::int64_t j = 0; j < n; ++j) o[j] = (r[j] - mu) * inv * g0[static_cast<std::size_t>(j)] + b0[static_cast<std::size_t>(j)];
    }
    g_sink = g_sink + out[0];
  };
  const double th = median_ms(hand_softmax);
  {
    const auto [t1, t2] = one_two(softmax);
    bw_rows("softmax over rows 4096x4096 f32", bytes, t1, t2, "hand-written loop", th);
  }
  {
    const auto [t1, t2] = one_two(softmax_held);
    bw_rows("softmax, exp(x - max) held, 4096x4096 f32", bytes, t1, t2, "hand-written loop", th);
  }
  const double tl = median_ms(hand_layernorm);
  {
    const auto [t1, t2] = one_two(layernorm);
    bw_rows("layernorm over rows 4096x4096 f32", bytes, t1, t2, "hand-written loop", tl);
  }
  {
    const auto [t1, t2] = one_two(layernorm_held);
    bw_rows("layernorm, x - mean held, 4096x4096 f32", bytes, t1, t2, "hand-written loop", tl);
  }
  // Where layernorm's time goes, 1 thread: each of its passes evaluated on
  // its own from stored mean and sqrt(var + eps), against one elementwise
  // pass that reads and writes as much as the normalizing one.
  {
    Array mu = aj::mean(x, 1, true);
    Array rs = aj::sqrt(aj::mean((x - mu) * (x - mu), 1, true) + eps);
    aj::eval({mu, rs});
    aj::jit::set_num_threads(1);
    const double t_mean = median_ms([&] { aj::mean(x, 1, true).eval(); });
    // (x - mu twice is one node: no handle holds it, so it is not stored.)
    const double t_var = median_ms([&] { aj::mean((x - mu) * (x - mu), 1, true).eval(); });
    const double t_norm = median_ms([&] { ((x - mu) / rs * g + b).eval(); });
    const double t_scale = median_ms([&] { (x * 1.0001f).eval(); });
    aj::jit::set_num_threads(0);
    std::printf("  layernorm's passes, 1 thread: mean %.2f ms, variance %.2f ms, normalize %.2f ms "
                "(x * 1.0001 over the same array: %.2f ms)\n", t_mean, t_var, t_norm, t_scale);
    std::fflush(stdout);
  }
}

// argmax over rows and over columns of f32 [8192, 4096] (JIT reductions
// carrying a value and an index), against NumPy's argmax and a hand loop
// (first index of the largest, as NumPy), held to a read of the input.
void bench_argmax() {
  std::vector<float> x0 = random_floats(static_cast<std::size_t>(kRows * kCols), 13, -1, 1);
  Array x = aj::borrow(x0.data(), {kRows, kCols});
  const double bytes = 4.0 * static_cast<double>(kRows * kCols);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(std::max(kRows, kCols)));
  std::vector<float> best(static_cast<std::size_t>(kCols));
  for (int axis : {1, 0}) {
    auto ours = [&] {
      aj::argmax(x, axis).eval();
      g_sink = g_sink + 1;
    };
    auto hand = [&] {
      if (axis == 1) {
        for (std::int64_t i = 0; i < kRows; ++i) {
          const float* r = x0.data() + i * kCols;
          std::int64_t b = 0;
          for (std::int64_t j = 1; j < kCols; ++j) b = r[j] > r[b] ? j : b;
          idx[static_cast<std::size_t>(i)] = b;
        }
      } else {
        std::copy(x0.begin(), x0.begin() + kCols, best.begin());
        std::fill(idx.begin(), idx.begin() + kCols, 0);
        for (std::int64_t i = 1; i < kRows; ++i) {
          const float* r = x0.data() + i * kCols;
          for (std::int64_t j = 0; j < kCols; ++j) {
            const bool better = r[j] > best[static_cast<std::size_t>(j)];
            best[static_cast<std::size_t>(j)] = better ? r[j] : best[static_cast<std::size_t>(j)];
            idx[static_cast<std::size_t>(j)] = better ? i : idx[static_cast<std::size_t>(j)];
          }
        }
      }
      g_sink = g_sink + static_cast<double>(idx[0]);
    };
    const auto [t1, t2] = one_two(ours);
    const double tn = numpy_ms(axis == 0 ? "x.argmax(0)" : "x.argmax(1)");
    const std::string name = std::string("argmax(x, ") + std::to_string(axis) + ") 8192x4096 f32";
    bw_rows(name, bytes, t1, t2, "NumPy (1 thread)", tn);
    row((name + ", 1 thread").c_str(), t1, "hand-written loop", median_ms(hand));
  }
}

// concatenate of evaluated arrays against memcpy of the same bytes: pieces
// one after another (axis 0: contiguous blocks) and side by side (axis 1:
// a row piece each); a 64K f32 case; a computed piece written
// straight into its slice (heat-equation boundary) against a hand loop.
void bench_concat() {
  struct Case { const char* name; std::int64_t rows, cols; int pieces, axis; };
  const Case cases[] = {{"concatenate 3 x [2048, 4096] f32, axis 0", 2048, 4096, 3, 0},
                        {"concatenate 3 x [6144, 1365] f32, axis 1", 6144, 1365, 3, 1},
                        {"concatenate 4 x 16K f32 (64K f32)", 1, 16384, 4, 1}};
  for (const Case& c : cases) {
    std::vector<std::vector<float>> host;
    std::vector<Array> pieces;
    for (int k = 0; k < c.pieces; ++k) {
      host.push_back(random_floats(static_cast<std::size_t>(c.rows * c.cols), 20 + static_cast<unsigned>(k), -1, 1));
      pieces.push_back(aj::borrow(host.back().data(), {c.rows, c.cols}));
    }
    const std::size_t total = static_cast<std::size_t>(c.rows * c.cols) * static_cast<std::size_t>(c.pieces);
    std::vector<float> dst(total);
    auto ours = [&] {
      aj::concatenate(pieces, c.axis).eval();
      g_sink = g_sink + 1;
    };
    auto copy = [&] {
      if (c.axis == 0) {
        for (int k = 0; k < c.pieces; ++k) {
          std::memcpy(dst.data() + static_cast<std::size_t>(k * c.rows * c.cols), host[static_cast<std::size_t>(k)].data(),
                      static_cast<std::size_t>(c.rows * c.cols) * 4);
        }
      } else {
        const std::int64_t out_cols = c.cols * c.pieces;
        for (std::int64_t i = 0; i < c.rows; ++i) {
          for (int k = 0; k < c.pieces; ++k) {
            std::memcpy(dst.data() + i * out_cols + k * c.cols, host[static_cast<std::size_t>(k)].data() + i * c.cols,
                        static_cast<std::size_t>(c.cols) * 4);
          }
        }
      }
      g_sink = g_sink + dst[1];
    };
    const double tm = median_ms(copy);
    const auto [t1, t2] = one_two(ours);
    row((std::string(c.name) + ", 1 thread").c_str(), t1, "memcpy (1 thread)", tm);
    row((std::string(c.name) + ", 2 threads").c_str(), t2, "memcpy (1 thread)", tm);
    // The same through aj::compile: the op's own cost, without tracing and
    // planning it again (what a small concatenate in a loop pays otherwise).
    auto compiled = aj::compile([axis = c.axis](const std::vector<Array>& p) { return aj::concatenate(p, axis); });
    auto ours_compiled = [&] {
      Array r = compiled(pieces);
      g_sink = g_sink + 1;
    };
    const auto [tc1, tc2] = one_two(ours_compiled);
    (void)tc2;
    row((std::string(c.name) + ", aj::compile'd, 1 thread").c_str(), tc1, "memcpy (1 thread)", tm);
  }
  // u = [u[0], (u[:-2] + u[2:]) / 2, u[-1]], 4M f64: the interior is computed
  // into the new array's slice, the two boundary elements are copied.
  const std::int64_t n = 4 << 20;
  std::vector<double> u0 = random_vec(static_cast<std::size_t>(n), 21), a = u0, b(static_cast<std::size_t>(n));
  Array u = aj::from_vector(u0);
  auto ours = [&] {
    Array interior = (aj::slice(u, 0, 0, n - 2) + aj::slice(u, 0, 2, n)) * 0.5;
    u = aj::concatenate({aj::slice(u, 0, 0, 1), interior, aj::slice(u, 0, n - 1, n)});
    u.eval();
  };
  auto hand = [&] {
    b[0] = a[0];
    for (std::int64_t i = 1; i + 1 < n; ++i) b[static_cast<std::size_t>(i)] = (a[static_cast<std::size_t>(i - 1)] + a[static_cast<std::size_t>(i + 1)]) * 0.5;
    b[static_cast<std::size_t>(n - 1)] = a[static_cast<std::size_t>(n - 1)];
    std::swap(a, b);
    g_sink = g_sink + a[1];
  };
  const double th = median_ms(hand);
  const auto [t1, t2] = one_two(ours);
  row("heat step with concatenate, 4M f64, 1 thread", t1, "hand-written loop", th);
  row("heat step with concatenate, 4M f64, 2 threads", t2, "hand-written loop", th);
}

// --- dispatch: a 10-op chain on 1000 elements, trace + cache hit + run ------------------
void bench_dispatch() {
  Array x = aj::from_vector(random_vec(1000, 4));
  std::vector<double> out(1000);
  auto ours = [&] {
    for (int k = 0; k < 1000; ++k) {
      Array y = ((((x * 1.5 + 2.0) * x - 1.0) / 3.0 + x) * 0.5 - x) * 2.0 + 1.0;  // 10 ops
      y.eval();
    }
  };
  std::vector<double> xv = x.to_vector<double>();
  auto hand = [&] {
    for (int k = 0; k < 1000; ++k) {
      for (std::size_t i = 0; i < 1000; ++i) {
        const double v = xv[i];
        out[i] = ((((v * 1.5 + 2.0) * v - 1.0) / 3.0 + v) * 0.5 - v) * 2.0 + 1.0;
      }
      g_sink = g_sink + out[0];
    }
  };
  const double us = median_ms(ours) * 1000.0 / 1000.0;
  const double hs = median_ms(hand) * 1000.0 / 1000.0;
  row("dispatch: 10-op chain on 1000 f64, per call", us, "the same loop, hand-written", hs, "us");
}

// --- compile time: cold, and a disk hit in a new process -------------------------------------
Array typical_kernel(const Array& x, const Array& y) {
  return aj::exp(x * 0.5 + y) * aj::tanh(y - 1.0) + aj::sqrt(aj::abs(x)) * 2.0;
}

void bench_compile(const char* self) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aj_bench_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string saved = aj::jit::cache_dir();
  std::vector<double> times;
  Array x = aj::from_vector(random_vec(4096, 5)), y = aj::from_vector(random_vec(4096, 6));
  for (int i = 0; i < g_reps; ++i) {
    aj::jit::set_cache_dir("");  // no disk: every compile is cold
    aj::jit::clear_memory_cache();
    aj::reset_stats();
    typical_kernel(x, y).eval();
    times.push_back(static_cast<double>(aj::stats().compile_ns) / 1e6);
  }
  std::sort(times.begin(), times.end());
  // Fill the disk cache, then load from it in fresh processes.
  aj::jit::set_cache_dir(dir.string());
  aj::jit::clear_memory_cache();
  typical_kernel(x, y).eval();
  std::vector<double> hits;
  for (int i = 0; i < g_reps; ++i) {
    std::string cmd = std::string("'") + self + "' --disk-hit '" + dir.string() + "'";
    FILE* f = ::popen(cmd.c_str(), "r");
    double ms = -1;
    if (f) {
      if (std::fscanf(f, "%lf", &ms) != 1) ms = -1;
      ::pclose(f);
    }
    hits.push_back(ms);
  }
  std::sort(hits.begin(), hits.end());
  aj::jit::set_cache_dir(saved);
  fs::remove_all(dir);
  std::printf("  %-44s %10.3f ms   (target <= 30 ms)\n", "cold compile of a fused 9-op kernel", times[times.size() / 2]);
  std::printf("  %-44s %10.3f ms   (target <= 2 ms)\n", "disk-cache hit in a new process", hits[hits.size() / 2]);
}

int disk_hit(const char* dir) {
  aj::jit::set_cache_dir(dir);
  Array x = aj::from_vector(random_vec(4096, 5)), y = aj::from_vector(random_vec(4096, 6));
  aj::reset_stats();
  typical_kernel(x, y).eval();
  const aj::Stats s = aj::stats();
  if (s.kernel_disk_hits != 1) return 1;
  std::printf("%.4f\n", static_cast<double>(s.kernel_disk_load_ns) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--disk-hit") == 0) return disk_hit(argv[2]);
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; ++first) {
    if (std::strcmp(argv[first], "--quick") == 0) g_reps = 3;
    if (std::strcmp(argv[first], "--cpu-time") == 0) g_cpu_time = true;
  }
  // Further arguments pick groups: "bandwidth" (triad, axis sums, argmax,
  // softmax, layernorm, var), "var" (the triad and var only), "library"
  // (concatenate), "other" (the rest); none runs all.
  auto want = [&](const char* group) {
    if (first >= argc) return true;
    for (int i = first; i < argc; ++i) if (std::strcmp(argv[i], group) == 0) return true;
    return false;
  };
  std::printf("arrayjit host JIT benchmarks (median of %d runs; ratio = ours / peer)%s\n", g_reps,
              g_cpu_time ? "; 1-thread times are thread CPU time" : "");
  std::printf("  target: %s\n", aj::jit::target_description().substr(0, 60).c_str());
  if (want("bandwidth")) {
    bench_triad();
    bench_axis_sums();
    bench_argmax();
    bench_two_pass();
    bench_var();
  } else if (want("var")) {
    bench_triad();
    bench_var();
  }
  if (want("library")) bench_concat();
  if (!want("other")) return 0;
  bench_seed(1000);
  bench_seed(4000);
  bench_adam();
  bench_chain();
  bench_black_scholes();
  bench_norm();
  bench_dispatch();
  bench_compile(argv[0]);
  return 0;
}

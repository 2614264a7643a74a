// Boundary idioms (issue 33): a 1-D heat step u + k * (left + right - 2u)
// with fixed ends, written with each idiom a user reaches for, against the
// same step as a hand-written loop (g++ -O3 -march=native, this binary) in
// the same run; 65,536 f32, 1 thread (the JIT's pool off: both sides on one
// core), thread CPU time per step, medians of 9 runs.
//
//   build/bench/idioms
//
// Each line says the step's time called eagerly (traced and dispatched
// every call) and through aj::compile (a replay of the kept kernel), and how
// many kernels the step launched. Targets (issue 33): 1 kernel and <= 1.5x
// the hand loop.
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/jit.hpp>

#include <cstdio>
#include <cmath>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

using aj::Array;

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

constexpr float kK = 0.1f;

struct Case {
  const char* name;
  std::function<Array()> step;
};

// Times `hand` (which writes `out`) as the table's 1.00x, then each case
// against it: us per step, the ratio, kernels launched per step and the
// largest difference from the loop's values.
void table(const std::vector<Case>& cases, const std::function<void()>& hand, const std::vector<float>& out, int calls) {
  const double base = ajbench::median_us(hand, calls);
  std::printf("  %-34s %9s %8s  %9s %7s\n", "", "eager", "", "compiled", "");
  std::printf("  %-34s %9.1f us   1.00x\n", "hand-written loop", base);
  for (const Case& c : cases) {
    const std::vector<float> got = c.step().to_vector<float>();
    hand();
    double err = 0;
    for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, static_cast<double>(std::fabs(got[i] - out[i])));
    // Kernels launched per eager step, counted over steps of their own
    // (median_us's warm-up count is its own business).
    constexpr int kCounted = 16;
    const aj::Stats s0 = aj::stats();
    for (int i = 0; i < kCounted; ++i) c.step().eval();
    const aj::Stats s1 = aj::stats();
    const double us = ajbench::median_us([&] { c.step().eval(); }, calls);
    // The same step through aj::compile: a replay runs the kept kernel
    // without tracing or planning (what a loop of steps pays per step).
    auto compiled = aj::compile([&c] { return c.step(); });
    compiled();
    const double us_compiled = ajbench::median_us([&] { compiled(); }, calls);
    std::printf("  %-34s %9.1f us  %5.2fx  %9.1f us  %5.2fx   %.1f kernels; max |diff| from the loop %.2g\n", c.name, us,
                us / base, us_compiled, us_compiled / base,
                static_cast<double>(s1.kernels_launched - s0.kernels_launched) / kCounted, err);
  }
}

// Each op alone, against `x * 2` (one read, one write of the same size) in
// the same run: us per call and the ratio.
void ops(const char* title, const Array& x, const std::vector<Case>& cases, int calls) {
  const double base = ajbench::median_us([&] { (x * 2.0f).eval(); }, calls);
  std::printf("  %s\n  %-34s %9.1f us   1.00x\n", title, "x * 2", base);
  for (const Case& c : cases) {
    const double us = ajbench::median_us([&] { c.step().eval(); }, calls);
    std::printf("  %-34s %9.1f us  %5.2fx\n", c.name, us, us / base);
  }
}

}  // namespace

int main() {
  const std::int64_t n = 65536;
  aj::jit::set_num_threads(1);
  std::vector<float> host(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) host[static_cast<std::size_t>(i)] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
  const Array u = aj::from_vector(host, {n});
  u.eval();
  std::printf("arrayjit %s: a 1-D heat step on %lld f32, fixed ends, 1 thread; %s\n", aj::version(),
              static_cast<long long>(n), cpu_model().c_str());
  std::printf("  us per step (thread CPU time, median of 9); kernels launched per step\n");

  // The hand loop: out-of-place, ends copied.
  std::vector<float> out(host.size());
  auto hand = [&] {
    const float* a = host.data();
    float* o = out.data();
    o[0] = a[0];
    for (std::int64_t i = 1; i < n - 1; ++i) o[i] = a[i] + kK * (a[i - 1] + a[i + 1] - 2.0f * a[i]);
    o[n - 1] = a[n - 1];
  };
  const std::vector<Case> cases = {
      {"slice_update of the interior", [&] {
         const Array in = aj::slice(u, 0, 1, n - 1);
         const Array lap = aj::slice(u, 0, 0, n - 2) + aj::slice(u, 0, 2, n) - 2.0f * in;
         return aj::slice_update(u, {aj::Slice(1, n - 1)}, in + kK * lap);
       }},
      {"pad (constant) of the interior", [&] {
         const Array in = aj::slice(u, 0, 1, n - 1);
         const Array lap = aj::slice(u, 0, 0, n - 2) + aj::slice(u, 0, 2, n) - 2.0f * in;
         const Array mask = aj::pad(aj::ones({n - 2}, aj::DType::bool_), {{1, 1}}, aj::PadMode::constant, false);
         return aj::where(mask, aj::pad(in + kK * lap, {{1, 1}}), u);
       }},
      {"pad (edge) and an arange mask", [&] {
         const Array p = aj::pad(u, {{1, 1}}, aj::PadMode::edge);
         const Array lap = aj::slice(p, 0, 0, n) + aj::slice(p, 0, 2, n + 2) - 2.0f * u;
         const Array i = aj::arange(n);
         return aj::where((i == 0) || (i == n - 1), u, u + kK * lap);
       }},
      {"roll and an arange mask", [&] {
         const Array lap = aj::roll(u, 1) + aj::roll(u, -1) - 2.0f * u;
         const Array i = aj::arange(n);
         return aj::where((i == 0) || (i == n - 1), u, u + kK * lap);
       }},
  };
  // Periodic ends: the step a roll writes without a mask.
  std::vector<float> out_periodic(host.size());
  auto hand_periodic = [&] {
    const float* a = host.data();
    float* o = out_periodic.data();
    o[0] = a[0] + kK * (a[n - 1] + a[1] - 2.0f * a[0]);
    for (std::int64_t i = 1; i < n - 1; ++i) o[i] = a[i] + kK * (a[i - 1] + a[i + 1] - 2.0f * a[i]);
    o[n - 1] = a[n - 1] + kK * (a[n - 2] + a[0] - 2.0f * a[n - 1]);
  };
  ops("each idiom alone:", u,
      {{"arange(n) == 0", [&] { return aj::arange(n) == 0; }},
       {"where(arange mask, u, u / 2)", [&] {
          const Array i = aj::arange(n);
          return aj::where((i == 0) || (i == n - 1), u, u * 0.5f);
        }},
       {"roll(u, 1)", [&] { return aj::roll(u, 1); }},
       {"pad(u, 1) constant", [&] { return aj::pad(u, {{1, 1}}); }},
       {"pad(u, 1) edge", [&] { return aj::pad(u, {{1, 1}}, aj::PadMode::edge); }},
       {"pad(u, {2, 3}) reflect", [&] { return aj::pad(u, {{2, 3}}, aj::PadMode::reflect); }}},
      200);
  std::printf("  the heat step:\n");
  table(cases, hand, out, 200);
  std::printf("  periodic ends:\n");
  table({{"roll (no mask)", [&] { return u + kK * (aj::roll(u, 1) + aj::roll(u, -1) - 2.0f * u); }}}, hand_periodic,
        out_periodic, 200);
  // 2-D, 1024^2: u + k * (the 4 neighbours - 4u), fixed edges.
  {
    const std::int64_t m = 1024;
    std::vector<float> h2(static_cast<std::size_t>(m * m));
    for (std::size_t i = 0; i < h2.size(); ++i) h2[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    const Array v = aj::from_vector(h2, {m, m});
    v.eval();
    std::vector<float> o2(h2.size());
    auto hand2 = [&] {
      const float* a = h2.data();
      float* o = o2.data();
      for (std::int64_t j = 0; j < m; ++j) o[j] = a[j], o[(m - 1) * m + j] = a[(m - 1) * m + j];
      for (std::int64_t i = 1; i < m - 1; ++i) {
        const float* r = a + i * m;
        float* w = o + i * m;
        w[0] = r[0];
        for (std::int64_t j = 1; j < m - 1; ++j) w[j] = r[j] + kK * (r[j - m] + r[j + m] + r[j - 1] + r[j + 1] - 4.0f * r[j]);
        w[m - 1] = r[m - 1];
      }
    };
    using aj::Slice;
    auto at = [&](const Array& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
      return aj::slice(a, {Slice(r0, r1), Slice(c0, c1)});
    };
    const std::vector<Case> cases2 = {
        {"slice_update of the interior", [&] {
           const Array in = at(v, 1, m - 1, 1, m - 1);
           const Array lap = at(v, 0, m - 2, 1, m - 1) + at(v, 2, m, 1, m - 1) + at(v, 1, m - 1, 0, m - 2) +
                             at(v, 1, m - 1, 2, m) - 4.0f * in;
           return aj::slice_update(v, {Slice(1, m - 1), Slice(1, m - 1)}, in + kK * lap);
         }},
        {"pad (edge) and row/column masks", [&] {
           const Array p = aj::pad(v, {{1, 1}, {1, 1}}, aj::PadMode::edge);
           const Array lap = at(p, 0, m, 1, m + 1) + at(p, 2, m + 2, 1, m + 1) + at(p, 1, m + 1, 0, m) +
                             at(p, 1, m + 1, 2, m + 2) - 4.0f * v;
           const Array r = aj::reshape(aj::arange(m), {m, 1}), c = aj::arange(m);
           const Array edge = (r == 0) || (r == m - 1) || (c == 0) || (c == m - 1);
           return aj::where(edge, v, v + kK * lap);
         }},
    };
    std::printf("  2-D, %lld^2:\n", static_cast<long long>(m));
    ops("each idiom alone:", v,
        {{"pad(v, 1) edge, both axes", [&] { return aj::pad(v, {{1, 1}, {1, 1}}, aj::PadMode::edge); }},
         {"pad(v, 1) edge, rows", [&] { return aj::pad(v, {{1, 1}, {0, 0}}, aj::PadMode::edge); }},
         {"pad(v, 1) edge, columns", [&] { return aj::pad(v, {{0, 0}, {1, 1}}, aj::PadMode::edge); }},
         {"where(row/column masks, v, v / 2)", [&] {
            const Array r = aj::reshape(aj::arange(m), {m, 1}), c = aj::arange(m);
            return aj::where((r == 0) || (r == m - 1) || (c == 0) || (c == m - 1), v, v * 0.5f);
          }}},
        20);
    std::printf("  the heat step:\n");
    table(cases2, hand2, o2, 20);
  }
  return 0;
}

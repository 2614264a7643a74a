// Scans, sorting and logsumexp against peers measured in the same
// run: hand-written loops, std::sort / std::stable_sort, and NumPy (another
// process, same data distribution). Prints per case the median of several
// runs and the ratio ours / peer (below 1: we are faster). Results:
// bench/README.md.
//
//   bench_scan_sort [--quick] [--sort]
#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

using aj::Array;
using Clock = std::chrono::steady_clock;

int g_reps = 7;
volatile double g_sink = 0;
ajbench::Triad g_triad;  // measured at the start (main)

// The 2-thread line of a memory-bound case: its speed-up beside the
// triad's, measured again right after the case (the VM's second core comes
// and goes within minutes: a triad from the start of the run said little).
void scaling(const std::string& name, double t1, double t2) {
  const ajbench::Triad now = ajbench::triad(g_reps);
  std::printf("  %-42s %s\n", name.c_str(), ajbench::against_triad(t1, t2, now).c_str());
}

double median_ms(const std::function<void()>& f, int reps = g_reps) {
  f();  // warm-up: compiles, faults pages in
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void row(const std::string& name, double ours, const char* peer, double theirs) {
  if (theirs < 0) {
    std::printf("  %-40s %9.3f ms   %-30s (not run)\n", name.c_str(), ours, peer);
  } else {
    std::printf("  %-40s %9.3f ms   %-30s %9.3f ms   ratio %.2f\n", name.c_str(), ours, peer, theirs, ours / theirs);
  }
  std::fflush(stdout);
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// NumPy's median time in ms of `expr` after `setup`, from /usr/bin/python3
// (its own threads: NumPy's sort and cumsum use one); -1 when it cannot run.
double numpy_ms(const std::string& setup, const std::string& expr) {
  const std::string cmd = "/usr/bin/python3 -c \"import numpy as np, time\n" + setup +
                          "\nt = []\nfor i in range(" + std::to_string(g_reps + 1) + "):\n t0 = time.perf_counter(); " +
                          expr + "; t.append(time.perf_counter() - t0)\nprint(sorted(t)[len(t) // 2] * 1e3)\" 2>/dev/null";
  FILE* f = ::popen(cmd.c_str(), "r");
  double ms = -1;
  if (f) {
    if (std::fscanf(f, "%lf", &ms) != 1) ms = -1;
    ::pclose(f);
  }
  return ms;
}

// Our time on 1 thread and on every thread.
std::pair<double, double> one_all(const std::function<void()>& ours) {
  aj::jit::set_num_threads(1);
  const double t1 = median_ms(ours);
  aj::jit::set_num_threads(0);
  const double ta = median_ms(ours);
  return {t1, ta};
}

// cumsum over the rows and over the columns of f32 [4096, 4096].
void bench_cumsum() {
  const std::int64_t n = 4096;
  const std::size_t total = static_cast<std::size_t>(n * n);
  std::vector<float> x0 = random_floats(total, 1), out(total);
  const Array x = aj::borrow(x0.data(), {n, n});
  const std::string setup = "x = np.random.default_rng(1).uniform(-1, 1, (4096, 4096)).astype(np.float32)";
  for (int axis : {1, 0}) {
    auto ours = [&] {
      Array c = aj::cumsum(x, axis);
      c.eval();
      g_sink = g_sink + 1;
    };
    // The loop a C++ programmer writes: along each row, or row after row
    // (that one vectorizes across the columns).
    auto hand = [&] {
      const float* in = x0.data();
      float* o = out.data();
      if (axis == 1) {
        for (std::int64_t r = 0; r < n; ++r) {
          float acc = 0;
          for (std::int64_t c = 0; c < n; ++c) o[r * n + c] = acc += in[r * n + c];
        }
      } else {
        std::memcpy(o, in, static_cast<std::size_t>(n) * sizeof(float));
        for (std::int64_t r = 1; r < n; ++r) {
          for (std::int64_t c = 0; c < n; ++c) o[r * n + c] = o[(r - 1) * n + c] + in[r * n + c];
        }
      }
      g_sink = g_sink + o[total - 1];
    };
    const auto [t1, ta] = one_all(ours);
    const double th = median_ms(hand);
    const double tn = numpy_ms(setup, "np.cumsum(x, " + std::to_string(axis) + ")");
    const std::string name = "cumsum(x, " + std::to_string(axis) + ") 4096x4096 f32";
    row(name + ", 1 thread", t1, "hand loop", th);
    row(name + ", all threads", ta, "hand loop (1 thread)", th);
    scaling(name, t1, ta);
    row(name + ", 1 thread", t1, "NumPy", tn);
  }
}

// sort and argsort of 1M f32 (one line), and of 4096 lines of 64, 256 and 1,024.
void bench_sort() {
  const std::int64_t n = 1 << 20;
  std::vector<float> x0 = random_floats(static_cast<std::size_t>(n), 2), tmp;
  const Array x = aj::borrow(x0.data(), {n});
  const std::string setup = "x = np.random.default_rng(2).uniform(-1, 1, 1 << 20).astype(np.float32)";
  auto ours_sort = [&] {
    Array s = aj::sort(x);
    s.eval();
    g_sink = g_sink + 1;
  };
  auto std_sort = [&] {
    tmp = x0;
    std::sort(tmp.begin(), tmp.end());
    g_sink = g_sink + tmp[0];
  };
  auto std_stable = [&] {
    tmp = x0;
    std::stable_sort(tmp.begin(), tmp.end());
    g_sink = g_sink + tmp[0];
  };
  const double t_ours = median_ms(ours_sort);
  row("sort 1M f32", t_ours, "std::sort (copy + sort)", median_ms(std_sort));
  row("sort 1M f32", t_ours, "std::stable_sort", median_ms(std_stable));
  row("sort 1M f32", t_ours, "NumPy np.sort (quicksort)", numpy_ms(setup, "np.sort(x)"));
  row("sort 1M f32", t_ours, "NumPy np.sort(kind='stable')", numpy_ms(setup, "np.sort(x, kind='stable')"));

  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  auto ours_arg = [&] {
    Array s = aj::argsort(x);
    s.eval();
    g_sink = g_sink + 1;
  };
  auto std_arg = [&] {
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) {
      return x0[static_cast<std::size_t>(a)] < x0[static_cast<std::size_t>(b)];
    });
    g_sink = g_sink + static_cast<double>(idx[0]);
  };
  const double t_arg = median_ms(ours_arg);
  row("argsort 1M f32", t_arg, "std::stable_sort of indices", median_ms(std_arg));
  row("argsort 1M f32", t_arg, "NumPy np.argsort(kind='stable')", numpy_ms(setup, "np.argsort(x, kind='stable')"));

  auto ours_top = [&] {
    aj::TopK t = aj::topk(x, 10);
    t.indices.eval();
    g_sink = g_sink + 1;
  };
  auto std_top = [&] {
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + 10, idx.end(), [&](std::int64_t a, std::int64_t b) {
      return x0[static_cast<std::size_t>(a)] > x0[static_cast<std::size_t>(b)];
    });
    g_sink = g_sink + static_cast<double>(idx[0]);
  };
  row("topk(10) indices of 1M f32", median_ms(ours_top), "std::partial_sort of indices", median_ms(std_top));

  // Many lines of 64 to 1,024: split over the threads (the sorting network's
  // range on AVX-512 CPUs, the radix sort from 256 on elsewhere).
  for (const std::int64_t cols : {64, 256, 1024}) {
    const std::int64_t rows = 4096;
    std::vector<float> m0 = random_floats(static_cast<std::size_t>(rows * cols), 3);
    const Array m = aj::borrow(m0.data(), {rows, cols});
    auto ours_rows = [&] {
      Array s = aj::sort(m, 1);
      s.eval();
      g_sink = g_sink + 1;
    };
    auto ours_arg_rows = [&] {
      Array s = aj::argsort(m, 1);
      s.eval();
      g_sink = g_sink + 1;
    };
    auto std_rows = [&] {
      tmp = m0;
      for (std::int64_t r = 0; r < rows; ++r) std::sort(tmp.begin() + r * cols, tmp.begin() + (r + 1) * cols);
      g_sink = g_sink + tmp[0];
    };
    const std::string shape = "4096x" + std::to_string(cols) + " f32";
    const std::string np_setup =
        "x = np.random.default_rng(3).uniform(-1, 1, (4096, " + std::to_string(cols) + ")).astype(np.float32)";
    const auto [r1, ra] = one_all(ours_rows);
    const double tr = median_ms(std_rows);
    row("sort(x, 1) " + shape + ", 1 thread", r1, "std::sort per row", tr);
    row("sort(x, 1) " + shape + ", all threads", ra, "std::sort per row (1 thread)", tr);
    row("sort(x, 1) " + shape + ", 1 thread", r1, "NumPy np.sort(x, 1)", numpy_ms(np_setup, "np.sort(x, 1)"));
    const auto [a1, aa] = one_all(ours_arg_rows);
    (void)aa;
    row("argsort(x, 1) " + shape + ", 1 thread", a1, "NumPy np.argsort(x, 1)", numpy_ms(np_setup, "np.argsort(x, 1)"));
  }
}

// logsumexp and softmax over the rows of f32 [4096, 4096] against loops that
// keep a row in cache (max; exp-sum; log / scale).
void bench_logsumexp() {
  const std::int64_t n = 4096;
  const std::size_t total = static_cast<std::size_t>(n * n);
  std::vector<float> x0 = random_floats(total, 4), out(total), lse(static_cast<std::size_t>(n));
  for (auto& v : x0) v *= 4;
  const Array x = aj::borrow(x0.data(), {n, n});
  auto ours_lse = [&] {
    Array r = aj::logsumexp(x, 1);
    r.eval();
    g_sink = g_sink + 1;
  };
  auto hand_lse = [&] {
    for (std::int64_t r = 0; r < n; ++r) {
      const float* in = &x0[static_cast<std::size_t>(r * n)];
      float m = in[0];
      for (std::int64_t c = 1; c < n; ++c) m = std::max(m, in[c]);
      float s = 0;
      for (std::int64_t c = 0; c < n; ++c) s += std::exp(in[c] - m);
      lse[static_cast<std::size_t>(r)] = m + std::log(s);
    }
    g_sink = g_sink + lse[0];
  };
  auto ours_sm = [&] {
    Array r = aj::softmax(x);
    r.eval();
    g_sink = g_sink + 1;
  };
  auto hand_sm = [&] {
    for (std::int64_t r = 0; r < n; ++r) {
      const float* in = &x0[static_cast<std::size_t>(r * n)];
      float* o = &out[static_cast<std::size_t>(r * n)];
      float m = in[0];
      for (std::int64_t c = 1; c < n; ++c) m = std::max(m, in[c]);
      float s = 0;
      for (std::int64_t c = 0; c < n; ++c) s += o[c] = std::exp(in[c] - m);
      const float inv = 1.0f / s;
      for (std::int64_t c = 0; c < n; ++c) o[c] *= inv;
    }
    g_sink = g_sink + out[0];
  };
  const auto [l1, la] = one_all(ours_lse);
  const double lh = median_ms(hand_lse);
  row("logsumexp(x, 1) 4096x4096 f32, 1 thread", l1, "hand loop", lh);
  row("logsumexp(x, 1) 4096x4096 f32, all threads", la, "hand loop (1 thread)", lh);
  scaling("logsumexp(x, 1) 4096x4096 f32", l1, la);
  const auto [s1, sa] = one_all(ours_sm);
  const double sh = median_ms(hand_sm);
  row("softmax(x) 4096x4096 f32, 1 thread", s1, "hand loop", sh);
  row("softmax(x) 4096x4096 f32, all threads", sa, "hand loop (1 thread)", sh);
  scaling("softmax(x) 4096x4096 f32", s1, sa);
}

}  // namespace

int main(int argc, char** argv) {
  bool only_sort = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) g_reps = 3;
    if (std::strcmp(argv[i], "--sort") == 0) only_sort = true;
  }
  std::printf("bench_scan_sort: median of %d runs; %s\n", g_reps, aj::jit::host_info().c_str());
  g_triad = ajbench::triad(g_reps);
  std::printf("  STREAM triad, 32M f32: %.1f GB/s on 1 thread, 2 threads %.2fx faster (the ceiling of a memory-bound\n"
              "  case's 2-thread speed-up; measured again beside each case below)\n", g_triad.gbs, g_triad.speedup2);
  if (!only_sort) bench_cumsum();
  bench_sort();
  if (!only_sort) bench_logsumexp();
  return 0;
}

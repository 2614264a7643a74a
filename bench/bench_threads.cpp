// Threads: what several threads using arrayjit at once get done, and whether
// one thread's long evaluation holds up another's small ones.
//
//   small chains   independent 10-op f32 chains on 1,000 elements (trace,
//                  plan cache hit, run, read one value), one thread vs two
//                  threads at once: calls per second, and the ratio
//   large chains   the same chain on 16M f32 (kernels on one core each), one
//                  thread vs two
//   latency        a small call's wall time alone, and while another thread
//                  runs large evaluations (a 2048^2 matmul, or the 16M chain)
//                  back to back: medians and 99th percentiles
//
// Wall times (several threads run at once), medians of several runs. Kernel
// threads are set to 1 for the throughput cases, so the user's threads are
// the only parallelism. Run on a quiet machine: with other processes on the
// cores, two threads cannot do twice the work.
//
//   build/bench/bench_threads [--quick]
#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "?";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// `threads` threads each run `work(thread)` `calls` times; the wall time of
// the whole batch, median of `runs` batches.
template <class F>
double batch_seconds(int threads, int calls, int runs, F&& work) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int k = 0; k < threads; ++k) {
      ts.emplace_back([&, k] {
        ready.fetch_add(1);
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < calls; ++i) work(k);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const auto t0 = Clock::now();
    go.store(true);
    for (auto& th : ts) th.join();
    t.push_back(seconds_since(t0));
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int runs = quick ? 3 : 7;
  std::printf("arrayjit %s threads benchmark; %s, %u hardware threads\n", aj::version(), cpu_model().c_str(),
              std::thread::hardware_concurrency());
  aj::jit::set_num_threads(1);  // the user's threads are the parallelism

  // ---- small chains ----
  {
    std::vector<aj::Array> xs;
    for (int k = 0; k < 2; ++k) {
      std::vector<float> v(1000);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i + k) % 17) * 0.25f;
      xs.push_back(aj::from_vector(v).eval());
    }
    const int calls = quick ? 20000 : 100000;
    auto small = [&](int k) {
      aj::Array y = ajbench::chain(xs[static_cast<std::size_t>(k)]);
      volatile float v = y.data().as<float>()[0];  // one element read: the call is done
      (void)v;
    };
    // Warm every thread's plan cache and the kernel cache.
    batch_seconds(2, 100, 1, [&](int k) { aj::Array y = ajbench::chain(xs[static_cast<std::size_t>(k)]); y.eval(); });
    const double t1 = batch_seconds(1, calls, runs, [&](int) { aj::Array y = ajbench::chain(xs[0]); y.eval(); });
    const double t2 = batch_seconds(2, calls, runs, [&](int k) { aj::Array y = ajbench::chain(xs[static_cast<std::size_t>(k)]); y.eval(); });
    std::printf("  small chains (10 ops, 1000 f32, eval)    1 thread %9.0f calls/s   2 threads %9.0f calls/s   ratio %.2f\n",
                calls / t1, 2 * calls / t2, (2 * calls / t2) / (calls / t1));
    const double r1 = batch_seconds(1, calls / 2, runs, [&](int) { small(0); });
    const double r2 = batch_seconds(2, calls / 2, runs, small);
    std::printf("  small chains + data() read               1 thread %9.0f calls/s   2 threads %9.0f calls/s   ratio %.2f\n",
                (calls / 2) / r1, calls / r2, (calls / r2) / ((calls / 2) / r1));
  }

  // ---- large chains ----
  {
    const std::int64_t n = std::int64_t{16} << 20;
    std::vector<aj::Array> xs;
    for (int k = 0; k < 2; ++k) xs.push_back((aj::random::uniform({n}, 0.0, 1.0) + static_cast<float>(k)).eval());
    const int calls = quick ? 3 : 8;
    auto large = [&](int k) {
      aj::Array y = ajbench::chain(xs[static_cast<std::size_t>(k)]);
      y.eval();
    };
    batch_seconds(2, 1, 1, large);  // warm up
    const double t1 = batch_seconds(1, calls, runs, [&](int) { large(0); });
    const double t2 = batch_seconds(2, calls, runs, large);
    const double gb = 2.0 * static_cast<double>(n) * 4 / 1e9;  // one read, one write per element
    std::printf("  large chains (10 ops, 16M f32)           1 thread %9.2f GB/s      2 threads %9.2f GB/s      ratio %.2f\n",
                calls * gb / t1, 2 * calls * gb / t2, (2 * calls / t2) / (calls / t1));
  }

  // ---- latency of small calls next to long evaluations ----
  {
    aj::jit::set_num_threads(0);  // the long work may use every core, as a real program's would
    std::vector<float> v(1000, 0.5f);
    aj::Array x = aj::from_vector(v).eval();
    const int samples = quick ? 2000 : 10000;
    auto small_latencies = [&] {
      std::vector<double> us;
      for (int i = 0; i < samples; ++i) {
        const auto t0 = Clock::now();
        aj::Array y = ajbench::chain(x);
        y.eval();
        us.push_back(seconds_since(t0) * 1e6);
      }
      return us;
    };
    small_latencies();  // warm
    const std::vector<double> alone = small_latencies();
    std::printf("  small call latency alone                  median %7.2f us   p99 %8.2f us\n", median(alone),
                percentile(alone, 0.99));
    struct Long {
      const char* name;
      std::function<void()> run;
    };
    aj::Array a = aj::random::uniform({2048, 2048}, -1.0, 1.0).eval();
    aj::Array big = aj::random::uniform({std::int64_t{16} << 20}, 0.0, 1.0).eval();
    const Long longs[] = {
        {"a 2048^2 f32 matmul", [&] { aj::matmul(a, a).eval(); }},
        {"the 16M f32 chain", [&] { ajbench::chain(big).eval(); }},
    };
    for (const Long& l : longs) {
      l.run();  // compile first
      std::atomic<bool> stop{false};
      std::atomic<int> done{0};
      double long_ms = 0;
      std::thread busy([&] {
        const auto t0 = Clock::now();
        while (!stop.load()) {
          l.run();
          done.fetch_add(1);
        }
        long_ms = seconds_since(t0) * 1e3 / std::max(1, done.load());
      });
      while (done.load() == 0) std::this_thread::yield();
      const std::vector<double> beside = small_latencies();
      stop.store(true);
      busy.join();
      std::printf("  small call latency beside %-20s median %7.2f us   p99 %8.2f us   (one long evaluation: %.1f ms)\n",
                  l.name, median(beside), percentile(beside, 0.99), long_ms);
    }
  }
  std::printf("stats: %s\n", aj::stats().str().c_str());
  return 0;
}

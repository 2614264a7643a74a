// CUDA benchmarks, run on a GPU machine: `./dev bench` or
// build/bench/bench_cuda [scale]. Without a GPU it prints why and exits 0.
//
// Cases (medians of CUDA-event timings on the library's default stream):
//   seed     a = x + 2; b = sum(a, 1) * 3 + 0 on f32[n, n], n = 16384 (a held: stored; and a temporary)
//   adam     out-of-place Adam step on p, m, v, g of 100M f32 (runs in place)
//   chain    exp(-x*x/2) * sin(3x) + 0.5 * cos(x) on 256M f32
//   dispatch a 10-op chain on 1,000 f32: trace + cache hit + launch, host time
//   dispatch (compiled)  the same chain through aj::compile (replayed), host time
//   matmul   f32[4096, 4096] @ f32[4096, 4096], TFLOP/s (2 n^3), checked once
//            against float64 on the host (sampled elements, whole rows and
//            columns, every element finite)
//   mlp      bench_mlp's training step (784 -> 256 -> 10, batch 256, f32,
//            ReLU, softmax cross-entropy, Adam) with every array on cuda:0,
//            eager and aj::compile'd; the losses of the first steps are
//            compared with the same steps on the host
// Each bandwidth is compared with a device-to-device copy measured in the same
// run (bytes read + written per second). The torch peers are measured by
// bench/bench_cuda_torch.py on the same machine. `scale` (default 1) divides
// the sizes, for a quick check on a small GPU (the MLP keeps its sizes).
// Each case runs on its own: one that throws prints `CASE FAILED: <what>` and
// the rest still run; every line is flushed as it is printed.
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "jit/cuda/cuda_api.hpp"
#include "jit/cuda/cuda_blas.hpp"
#include "jit/cuda/nvrtc_compile.hpp"
#include "graph/graph.hpp"

namespace {

using aj::Array;
using aj::Device;
namespace cu = aj::cuda;

// Timed runs of time_ms, and calls per timed run of the dispatch cases.
int g_warmup = 3, g_reps = 15, g_dispatch_calls = 1000;

// printf, then flush: the process may be killed by a timeout, and what was
// measured before that must not be lost in a buffer.
[[gnu::format(printf, 1, 2)]] void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::fflush(stdout);
}

// Runs one case: an exception is printed and the next case runs.
void run_case(const char* name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    say("CASE FAILED: %s: %s\n", name, e.what());
  } catch (...) {
    say("CASE FAILED: %s: unknown exception\n", name);
  }
}

// Median milliseconds of `body` between two events on the current stream.
double time_ms(const std::function<void()>& body) {
  cu::CUstream s = static_cast<cu::CUstream>(cu::current_stream(0).handle());
  cu::CUevent a = nullptr, b = nullptr;
  AJ_CU(cuEventCreate, &a, cu::CU_EVENT_DEFAULT);
  AJ_CU(cuEventCreate, &b, cu::CU_EVENT_DEFAULT);
  std::vector<double> ms;
  for (int i = 0; i < g_warmup + g_reps; ++i) {
    AJ_CU(cuEventRecord, a, s);
    body();
    AJ_CU(cuEventRecord, b, s);
    AJ_CU(cuEventSynchronize, b);
    float t = 0;
    AJ_CU(cuEventElapsedTime, &t, a, b);
    if (i >= g_warmup) ms.push_back(t);
  }
  cu::require_driver().cuEventDestroy(a);
  cu::require_driver().cuEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The device address of an evaluated array's first element, after checking
// that its buffer holds `bytes` from there (an evaluated fill such as
// zeros() is one element, broadcast: copying into it would write past it).
cu::CUdeviceptr ptr(const Array& a, std::size_t bytes) {
  const auto& n = aj::graph()[a.node_id()];
  const std::size_t at = static_cast<std::size_t>(n.offset) * aj::itemsize(a.dtype());
  if (!n.storage || n.storage->device.is_host() || n.offset < 0 || n.storage->bytes < at + bytes) {
    throw std::runtime_error("ptr: not a device buffer of " + std::to_string(bytes) + " bytes");
  }
  return reinterpret_cast<cu::CUdeviceptr>(static_cast<char*>(n.storage->data) + at);
}

Array device_random(std::int64_t n, std::uint64_t seed) {
  aj::random::seed(seed);
  return aj::random::uniform({n}, -1.0, 1.0).to(Device::cuda(0)).eval();
}

void report(const char* name, double ms, double bytes, double copy_gbs) {
  const double gbs = bytes / ms / 1e6;
  say("%-9s %10.3f ms %9.1f GB/s  %5.1f%% of copy\n", name, ms, gbs, 100.0 * gbs / copy_gbs);
}

// ---- dispatch -----------------------------------------------------------------

// The 10-op chain of both dispatch cases (and of the torch script's).
Array dispatch_chain(const Array& x) {
  Array y = x;
  for (int i = 0; i < 5; ++i) y = y * 1.0001f + 0.5f;
  return y;
}

// Median over g_reps runs of the host time per call of g_dispatch_calls calls
// (after 100 untimed ones), in us; the stream is synchronized at the end only.
double dispatch_us(const std::function<void()>& once) {
  for (int i = 0; i < 100; ++i) once();
  cu::current_stream(0).synchronize();
  std::vector<double> us;
  for (int r = 0; r < g_reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < g_dispatch_calls; ++i) once();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                 g_dispatch_calls);
  }
  std::sort(us.begin(), us.end());
  cu::current_stream(0).synchronize();
  return us[us.size() / 2];
}

// The driver's own floor under dispatch: host time per bare cuLaunchKernel of
// an empty kernel, and per stream-ordered pool allocation + free of 4 KB,
// each back to back on the library's stream (what one small eval asks of the
// driver besides arrayjit's own work: bench/dispatch_cuda counts the calls).
void case_launch_floor() {
  cu::KernelSource src;
  src.source = "extern \"C\" __global__ void aj_empty(int n) { if (n < 0) asm volatile(\"trap;\"); }\n";
  src.hash = std::hash<std::string>()(src.source);
  cu::CUdevice dev = 0;
  int major = 0, minor = 0;
  AJ_CU(cuDeviceGet, &dev, 0);
  AJ_CU(cuDeviceGetAttribute, &major, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  AJ_CU(cuDeviceGetAttribute, &minor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  auto img = cu::compile(src, major * 10 + minor);
  cu::CUmodule mod = nullptr;
  cu::CUfunction fn = nullptr;
  AJ_CU(cuModuleLoadData, &mod, img->bytes.data());
  AJ_CU(cuModuleGetFunction, &fn, mod, "aj_empty");
  cu::CUstream s = static_cast<cu::CUstream>(cu::current_stream(0).handle());
  int n = 1;
  void* args[] = {&n};
  const double launch = dispatch_us([&] { AJ_CU(cuLaunchKernel, fn, 1u, 1u, 1u, 32u, 1u, 1u, 0u, s, args, nullptr); });
  cu::CUmemoryPool pool = nullptr;
  AJ_CU(cuDeviceGetDefaultMemPool, &pool, dev);
  const double alloc = dispatch_us([&] {
    cu::CUdeviceptr p = 0;
    AJ_CU(cuMemAllocFromPoolAsync, &p, 4096, pool, s);
    AJ_CU(cuMemFreeAsync, p, s);
  });
  say("%-9s %10.2f us per bare cuLaunchKernel, %.2f us per pool alloc + free (the driver's floor under dispatch)\n",
      "launch", launch, alloc);
}

void case_dispatch() {
  Array x = device_random(1000, 7);
  const double us = dispatch_us([&] { dispatch_chain(x).eval(); });
  say("%-9s %10.2f us per eval (trace + cache hit + launch; target <= 10 us)\n", "dispatch", us);
}

void case_dispatch_compiled() {
  Array x = device_random(1000, 7);
  auto f = aj::compile([](const Array& a) { return dispatch_chain(a); });
  // Checked once against the chain on the host: the eager chain on the
  // device, the first compiled call (traced) and the second (replayed).
  const std::vector<float> want = dispatch_chain(x.to(Device::cpu())).to_vector<float>();
  bool same = true;
  for (int call = 0; call < 3; ++call) {
    const std::vector<float> got = (call == 0 ? dispatch_chain(x) : f(x)).to_vector<float>();
    double worst = got.size() == want.size() ? 0 : INFINITY;
    for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
      const double d = std::fabs(static_cast<double>(got[i]) - want[i]) / (1 + std::fabs(static_cast<double>(want[i])));
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
    if (!(worst <= 1e-6)) {
      say("dispatch (compiled): WRONG: %s differs from the host's chain by %.1e\n",
          call == 0 ? "the eager chain" : call == 1 ? "the first call" : "the second call", worst);
      same = false;
    }
  }
  const double us = dispatch_us([&] { (void)f(x); });
  const auto c = f.counts();
  say("%-9s %10.2f us per call (aj::compile replay + launch; target <= 3 us; %llu traces, %llu replays; %s)\n",
      "dispatch (compiled)", us, static_cast<unsigned long long>(c.traces), static_cast<unsigned long long>(c.replays),
      same ? "values = the host's" : "WRONG values");
}

// ---- matmul -------------------------------------------------------------------

void case_matmul(std::int64_t n) {
  Array a = device_random(n * n, 8).reshape({n, n}).eval();
  Array b = device_random(n * n, 9).reshape({n, n}).eval();
  Array c;
  const double ms = time_ms([&] {
    c = aj::matmul(a, b);
    c.eval();
  });
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  say("%-9s %10.3f ms %9.2f TFLOP/s  (f32[%lld, %lld] @ f32[%lld, %lld], 2 n^3 flops, %s)\n", "matmul", ms,
      flops / ms / 1e9, static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n),
      static_cast<long long>(n), c.device().str().c_str());

  // Checked once, on a result of its own: the device memory it is written to
  // is first filled with NaN where the pool gives it back (a buffer of the
  // same size, freed just before), so elements left unwritten show as NaN.
  c = Array();
  { Array poison = (a * std::numeric_limits<float>::quiet_NaN()).eval(); }
  c = aj::matmul(a, b).eval();
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(), cv = c.to_vector<float>();
  const auto N = static_cast<std::size_t>(n);
  std::size_t bad = 0;
  for (float x : cv) bad += std::isfinite(x) ? 0 : 1;
  double max_rel = 0, max_norm = 0;  // |c - ref| / |ref| (sampled), |c - ref| / sum |a b| (all checked)
  std::size_t checked = 0;
  auto check = [&](std::size_t i, std::size_t j, double ref, double abs_sum, bool sampled) {
    const double err = std::fabs(static_cast<double>(cv[i * N + j]) - ref);
    const double norm = abs_sum > 0 ? err / abs_sum : err;
    max_norm = std::isnan(err) ? INFINITY : std::max(max_norm, norm);
    if (sampled) max_rel = std::isnan(err) ? INFINITY : std::max(max_rel, ref != 0 ? err / std::fabs(ref) : err);
    ++checked;
  };
  // Whole rows (first, middle, last): row i of a times b, in float64.
  for (std::size_t i : {std::size_t{0}, N / 2, N - 1}) {
    std::vector<double> ref(N, 0.0), abs_sum(N, 0.0);
    for (std::size_t k = 0; k < N; ++k) {
      const double aik = av[i * N + k];
      for (std::size_t j = 0; j < N; ++j) {
        const double p = aik * static_cast<double>(bv[k * N + j]);
        ref[j] += p;
        abs_sum[j] += std::fabs(p);
      }
    }
    for (std::size_t j = 0; j < N; ++j) check(i, j, ref[j], abs_sum[j], false);
  }
  // Whole columns (first, last), and 64 sampled elements.
  auto element = [&](std::size_t i, std::size_t j, bool sampled) {
    double ref = 0, abs_sum = 0;
    for (std::size_t k = 0; k < N; ++k) {
      const double p = static_cast<double>(av[i * N + k]) * static_cast<double>(bv[k * N + j]);
      ref += p;
      abs_sum += std::fabs(p);
    }
    check(i, j, ref, abs_sum, sampled);
  };
  for (std::size_t j : {std::size_t{0}, N - 1}) {
    for (std::size_t i = 0; i < N; ++i) element(i, j, false);
  }
  std::mt19937_64 rng(12345);
  for (int s = 0; s < 64; ++s) element(rng() % N, rng() % N, true);
  // f32 sums of n products in any order: within n * 2^-24 of sum |a b|
  // (the usual bound; random signs give far less).
  const bool ok = bad == 0 && max_norm <= static_cast<double>(n) * 0x1.0p-24;
  say("  matmul check vs float64: max rel err %.2e (64 sampled elements), max |err|/sum|a*b| %.2e (%zu elements: "
      "3 rows, 2 columns, the samples); non-finite %zu of %zu: %s\n",
      max_rel, max_norm, checked, bad, cv.size(), ok ? "ok" : "WRONG");
}

// ---- mlp ------------------------------------------------------------------------

struct MlpSizes {
  int B = 256, D = 784, H = 256, C = 10;
};

struct MlpData {
  std::vector<float> X, Y, W1, W2;  // row-major; biases start at zero
};

// bench_mlp's data and initial weights (the same generator and order).
MlpData make_mlp_data(const MlpSizes& s) {
  std::mt19937 rng(42);
  std::normal_distribution<float> n01(0, 1);
  MlpData d;
  d.X.resize(static_cast<std::size_t>(s.B * s.D));
  for (auto& x : d.X) x = n01(rng);
  d.Y.assign(static_cast<std::size_t>(s.B * s.C), 0.0f);
  for (int i = 0; i < s.B; ++i) d.Y[static_cast<std::size_t>(i * s.C + static_cast<int>(rng() % static_cast<unsigned>(s.C)))] = 1.0f;
  d.W1.resize(static_cast<std::size_t>(s.D * s.H));
  for (auto& w : d.W1) w = n01(rng) * std::sqrt(2.0f / static_cast<float>(s.D));
  d.W2.resize(static_cast<std::size_t>(s.H * s.C));
  for (auto& w : d.W2) w = n01(rng) * std::sqrt(2.0f / static_cast<float>(s.H));
  return d;
}

// The model's state on one device: built on the host (as bench_mlp), then
// every array moved to `dev` and evaluated there.
struct Mlp {
  Array X, Y;
  std::vector<Array> p, m, v;
  int t = 0;
  aj::Compiled<decltype(&ajbench::mlp_adam_step)> compiled{&ajbench::mlp_adam_step};

  Mlp(const MlpSizes& s, const MlpData& d, Device dev) {
    X = aj::from_vector(d.X, {s.B, s.D});
    Y = aj::from_vector(d.Y, {s.B, s.C});
    p = {aj::from_vector(d.W1, {s.D, s.H}), aj::zeros({s.H}), aj::from_vector(d.W2, {s.H, s.C}), aj::zeros({s.C})};
    ajbench::adam_init(p, m, v, {X, Y});
    if (dev != Device::cpu()) {
      std::vector<Array> all;
      auto move = [&](Array& a) {
        a = a.to(dev);
        all.push_back(a);
      };
      move(X), move(Y);
      for (auto* group : {&p, &m, &v}) {
        for (Array& a : *group) move(a);
      }
      aj::eval(all);
    }
  }

  // One step, evaluated (enqueued on a device); returns the loss, unread.
  Array step() {
    auto [c1, c2] = ajbench::adam_bias(++t);
    std::vector<Array> r = ajbench::mlp_adam_step(X, Y, std::move(p), std::move(m), std::move(v), c1, c2);
    aj::eval(r);
    return ajbench::take_step(p, m, v, std::move(r));
  }
  // The same step through aj::compile (bench_mlp's compiled form).
  Array step_compiled() {
    auto [c1, c2] = ajbench::adam_bias(++t);
    return ajbench::take_step(p, m, v, compiled(X, Y, std::move(p), std::move(m), std::move(v), c1, c2));
  }
};

// The losses of the first `steps` steps: host, cuda eager, cuda compiled.
void case_mlp_check(const MlpSizes& s, int steps) {
  const MlpData d = make_mlp_data(s);
  std::vector<float> host, eager, comp;
  {
    Mlp h(s, d, Device::cpu());
    for (int k = 0; k < steps; ++k) host.push_back(h.step().item<float>());
  }
  say("mlp loss  host          ");
  for (float l : host) say(" %.6f", l);
  say("  (steps 1-%d)\n", steps);
  auto compare = [&](const char* label, const std::vector<float>& got) {
    double worst = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      const double rel = std::fabs(static_cast<double>(got[k]) - host[k]) / std::fabs(static_cast<double>(host[k]));
      worst = std::isnan(rel) ? INFINITY : std::max(worst, rel);
    }
    say("mlp loss  %-14s", label);
    for (float l : got) say(" %.6f", l);
    say("  max rel diff vs host %.1e: %s\n", worst, worst <= 1e-3 ? "ok" : "WRONG (tolerance 1e-3)");
  };
  {
    Mlp g(s, d, Device::cuda(0));
    if (g.X.device() != Device::cuda(0) || g.p[0].device() != Device::cuda(0)) say("mlp: WRONG: state not on cuda:0\n");
    for (int k = 0; k < steps; ++k) {
      Array l = g.step();
      if (k == 0 && l.device() != Device::cuda(0)) say("mlp: WRONG: loss on %s\n", l.device().str().c_str());
      eager.push_back(l.item<float>());
    }
  }
  compare("cuda eager", eager);
  {
    Mlp g(s, d, Device::cuda(0));
    for (int k = 0; k < steps; ++k) comp.push_back(g.step_compiled().item<float>());
  }
  compare("cuda compiled", comp);
}

// Median ms per step by events, each timed run 10 steps (after g_warmup runs).
void case_mlp_time(const MlpSizes& s, bool use_compile) {
  const MlpData d = make_mlp_data(s);
  Mlp g(s, d, Device::cuda(0));
  constexpr int kSteps = 10;
  for (int k = 0; k < 3; ++k) (void)(use_compile ? g.step_compiled() : g.step());  // traces, compiles
  cu::current_stream(0).synchronize();
  aj::reset_stats();
  const double ms = time_ms([&] {
    for (int k = 0; k < kSteps; ++k) (void)(use_compile ? g.step_compiled() : g.step());
  }) / kSteps;
  const aj::Stats st = aj::stats();
  const double n = static_cast<double>((g_warmup + g_reps) * kSteps);
  const float loss = (use_compile ? g.step_compiled() : g.step()).item<float>();
  std::string extra;
  if (use_compile) {
    const auto c = g.compiled.counts();
    extra = "; " + std::to_string(c.traces) + " traces, " + std::to_string(c.replays) + " replays";
  }
  say("%-9s %10.3f ms per step  (%d-%d-%d, batch %d, f32, Adam; %.1f kernels per step%s; loss %.4f after %d steps)\n",
      use_compile ? "mlp (compiled)" : "mlp (eager)", ms, s.D, s.H, s.C, s.B,
      static_cast<double>(st.kernels_launched) / n, extra.c_str(), loss, g.t);
}

}  // namespace

int main(int argc, char** argv) {
  if (!cu::available()) {
    std::printf("bench_cuda: skipped: %s\n", cu::unavailable_reason().c_str());
    return 0;
  }
  const std::int64_t scale = argc > 1 ? std::max(1ll, std::atoll(argv[1])) : 1;
  char name[256] = {};
  cu::CUdevice dev = 0;
  AJ_CU(cuDeviceGet, &dev, 0);
  AJ_CU(cuDeviceGetName, name, 255, dev);
  say("bench_cuda on %s (scale 1/%lld); medians of %d runs\n", name, static_cast<long long>(scale), g_reps);
  if (!cu::compiler_available()) say("note: %s: every case needing a kernel will fail\n", cu::compiler_reason().c_str());
  say("%s; matmul: %s\n", cu::nvrtc_description().c_str(),
      cu::blas_api() ? ("cuBLAS (" + cu::blas_api()->path + ")").c_str()
                     : ("the generated kernel (" + cu::blas_reason() + ")").c_str());

  // Device-to-device copy of 256M f32: the bandwidth every case is held to.
  const std::int64_t big = (std::int64_t{256} << 20) / scale;
  Array src;
  double copy_gbs = std::nan("");
  run_case("copy", [&] {
    src = device_random(big, 1);
    Array dst = device_random(big, 10);  // a full buffer (zeros() would be one element, broadcast)
    cu::CUstream s = static_cast<cu::CUstream>(cu::current_stream(0).handle());
    const std::size_t bytes = static_cast<std::size_t>(big) * 4;
    const cu::CUdeviceptr to = ptr(dst, bytes), from = ptr(src, bytes);
    const double copy_ms = time_ms([&] { AJ_CU(cuMemcpyDtoDAsync, to, from, bytes, s); });
    copy_gbs = 2.0 * big * 4 / copy_ms / 1e6;
    say("%-9s %10.3f ms %9.1f GB/s\n", "copy", copy_ms, copy_gbs);
  });

  run_case("seed", [&] {
    // The seed as written: `a` is held by a handle, so it is stored too (one
    // read and one write of n*n f32, docs/semantics.md "What an evaluation
    // stores"); and as torch.compile's function runs it, `a` a temporary
    // (one read of n*n f32, n results).
    const std::int64_t n = 16384 / (scale > 1 ? 4 : 1);
    Array x = device_random(n * n, 2).reshape({n, n});
    Array b;
    double ms = time_ms([&] {
      Array a = x + 2.f;
      b = aj::sum(a, 1) * 3.f + 0.f;
      b.eval();
    });
    report("seed", ms, 8.0 * n * n + 4.0 * n, copy_gbs);
    ms = time_ms([&] {
      b = aj::sum(x + 2.f, 1) * 3.f + 0.f;
      b.eval();
    });
    report("seed (a a temporary)", ms, 4.0 * n * n + 4.0 * n, copy_gbs);
  });
  run_case("adam", [&] {  // adam: reads p, m, v, g; writes p, m, v
    const std::int64_t n = 100'000'000 / scale;
    Array p = device_random(n, 3), m = device_random(n, 4), v = aj::abs(device_random(n, 5)).eval(),
          g = device_random(n, 6);
    int step = 0;
    const double ms = time_ms([&] {
      const double lr = 1e-3 / (1 + step++);
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      p = p - lr * m / (aj::sqrt(v) + 1e-8);
      aj::eval({p, m, v});
    });
    report("adam", ms, 7.0 * 4 * n, copy_gbs);
  });
  run_case("chain", [&] {  // chain: reads x, writes y
    Array x = src.valid() ? src : device_random(big, 1);
    Array y;
    const double ms = time_ms([&] {
      y = aj::exp(-x * x / 2.f) * aj::sin(3.f * x) + 0.5f * aj::cos(x);
      y.eval();
    });
    report("chain", ms, 2.0 * 4 * big, copy_gbs);
  });
  src = Array();
  run_case("launch floor", case_launch_floor);
  run_case("dispatch", case_dispatch);
  run_case("dispatch (compiled)", case_dispatch_compiled);
  run_case("matmul", [&] { case_matmul(scale > 1 ? 1024 : 4096); });
  const MlpSizes mlp;
  run_case("mlp check", [&] { case_mlp_check(mlp, 10); });
  run_case("mlp (eager)", [&] { case_mlp_time(mlp, false); });
  run_case("mlp (compiled)", [&] { case_mlp_time(mlp, true); });
  return 0;
}

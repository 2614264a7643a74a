// CUDA benchmarks, run on a GPU machine: `./dev bench` or
// build/bench/bench_cuda [scale]. Without a GPU it prints why and exits 0.
//
// Cases (medians of CUDA-event timings on the library's default stream):
//   seed     a = x + 2; b = sum(a, 1) * 3 + 0 on f32[n, n], n = 16384
//   adam     out-of-place Adam step on p, m, v, g of 100M f32 (runs in place)
//   chain    exp(-x*x/2) * sin(3x) + 0.5 * cos(x) on 256M f32
//   dispatch a 10-op chain on 1,000 f32: trace + cache hit + launch, host time
// Each bandwidth is compared with a device-to-device copy measured in the same
// run (bytes read + written per second). The torch peers are measured by
// bench/bench_cuda_torch.py on the same machine. `scale` (default 1) divides
// the sizes, for a quick check on a small GPU.
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "jit/cuda/cuda_api.hpp"
#include "graph/graph.hpp"

namespace {

using aj::Array;
using aj::Device;
namespace cu = aj::cuda;

constexpr int kWarmup = 3, kReps = 15;

// Median milliseconds of `body` between two events on the current stream.
double time_ms(const std::function<void()>& body) {
  cu::CUstream s = static_cast<cu::CUstream>(cu::current_stream(0).handle());
  cu::CUevent a = nullptr, b = nullptr;
  AJ_CU(cuEventCreate, &a, cu::CU_EVENT_DEFAULT);
  AJ_CU(cuEventCreate, &b, cu::CU_EVENT_DEFAULT);
  std::vector<double> ms;
  for (int i = 0; i < kWarmup + kReps; ++i) {
    AJ_CU(cuEventRecord, a, s);
    body();
    AJ_CU(cuEventRecord, b, s);
    AJ_CU(cuEventSynchronize, b);
    float t = 0;
    AJ_CU(cuEventElapsedTime, &t, a, b);
    if (i >= kWarmup) ms.push_back(t);
  }
  cu::require_driver().cuEventDestroy(a);
  cu::require_driver().cuEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

cu::CUdeviceptr ptr(const Array& a) {
  return reinterpret_cast<cu::CUdeviceptr>(aj::graph()[a.node_id()].storage->data);
}

Array device_random(std::int64_t n, std::uint64_t seed) {
  aj::random::seed(seed);
  return aj::random::uniform({n}, -1.0, 1.0).to(Device::cuda(0)).eval();
}

void report(const char* name, double ms, double bytes, double copy_gbs) {
  const double gbs = bytes / ms / 1e6;
  std::printf("%-9s %10.3f ms %9.1f GB/s  %5.1f%% of copy\n", name, ms, gbs, 100.0 * gbs / copy_gbs);
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
  std::printf("bench_cuda on %s (scale 1/%lld); medians of %d runs\n", name, static_cast<long long>(scale), kReps);

  // Device-to-device copy of 256M f32: the bandwidth every case is held to.
  const std::int64_t big = (std::int64_t{256} << 20) / scale;
  Array src = device_random(big, 1);
  Array dst = aj::zeros({big}).to(Device::cuda(0)).eval();
  cu::CUstream s = static_cast<cu::CUstream>(cu::current_stream(0).handle());
  const double copy_ms = time_ms([&] { AJ_CU(cuMemcpyDtoDAsync, ptr(dst), ptr(src), big * 4, s); });
  const double copy_gbs = 2.0 * big * 4 / copy_ms / 1e6;
  std::printf("%-9s %10.3f ms %9.1f GB/s\n", "copy", copy_ms, copy_gbs);

  {  // seed: one read of n*n f32, n results
    const std::int64_t n = 16384 / (scale > 1 ? 4 : 1);
    Array x = device_random(n * n, 2).reshape({n, n});
    Array b;
    const double ms = time_ms([&] {
      Array a = x + 2.f;
      b = aj::sum(a, 1) * 3.f + 0.f;
      b.eval();
    });
    report("seed", ms, 4.0 * n * n + 4.0 * n, copy_gbs);
  }
  {  // adam: reads p, m, v, g; writes p, m, v
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
  }
  {  // chain: reads x, writes y
    Array x = src;
    Array y;
    const double ms = time_ms([&] {
      y = aj::exp(-x * x / 2.f) * aj::sin(3.f * x) + 0.5f * aj::cos(x);
      y.eval();
    });
    report("chain", ms, 2.0 * 4 * big, copy_gbs);
  }
  {  // dispatch: host time per eval of a 10-op chain on 1,000 elements
    Array x = device_random(1000, 7);
    auto once = [&] {
      Array y = x;
      for (int i = 0; i < 5; ++i) y = y * 1.0001f + 0.5f;
      y.eval();
    };
    for (int i = 0; i < 100; ++i) once();
    std::vector<double> us;
    for (int r = 0; r < kReps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000; ++i) once();
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000);
    }
    std::sort(us.begin(), us.end());
    cu::current_stream(0).synchronize();
    std::printf("%-9s %10.2f us per eval (trace + cache hit + launch; target <= 10 us)\n", "dispatch",
                us[us.size() / 2]);
  }
  return 0;
}

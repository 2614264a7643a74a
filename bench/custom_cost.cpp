// What custom derivatives and host callbacks cost (arrayjit/autodiff.hpp,
// arrayjit/host_callback.hpp), measured in one run:
//  - checkpoint: a 16-layer MLP (batch 512, width 256, f32, ReLU) training
//    step, gradient and SGD update as one aj::compile'd call, plain and
//    checkpointed by blocks of 4 layers: wall ms per step (median of 7) and
//    the step's peak memory above its inputs (stats().peak_live_bytes). The
//    recomputation adds one forward pass (16 of the step's 48 matmuls).
//  - host_callback: the time per evaluation of a callback that doubles 1,024
//    f64 (a hand loop), against the same work as a kernel (x * 2) and as the
//    bare loop; eager (trace, plan cache, run) and inside a compiled replay.
//    CPU us per call, median of 9 runs.
//
//   build/bench/custom_cost
#include <arrayjit/arrayjit.hpp>

#include <cstdio>
#include <vector>

#include "bench_util.hpp"

using aj::Array;

namespace {

constexpr int kLayers = 16, kBatch = 512, kWidth = 256;

Array layer(const Array& h, const Array& w) { return aj::maximum(aj::matmul(h, w), 0.0f); }

// The loss of the MLP, checkpointed by blocks of `block` layers (0: none).
Array loss(const Array& x, const std::vector<Array>& w, int block) {
  Array h = x;
  for (int i = 0; i < kLayers; i += 4) {
    auto run = [&, i](const std::vector<Array>& a) {
      Array u = a[0];
      for (int k = 0; k < 4; ++k) u = layer(u, a[1 + static_cast<std::size_t>(k)]);
      (void)i;
      return u;
    };
    std::vector<Array> args = {h};
    for (int k = 0; k < 4; ++k) args.push_back(w[static_cast<std::size_t>(i + k)]);
    h = block ? aj::checkpoint(run)(args) : run(args);
  }
  return aj::mean(h * h);
}

}  // namespace

int main() {
  std::printf("%s", aj::jit::host_info().c_str());
  aj::random::seed(3);
  const Array x = aj::random::normal({kBatch, kWidth}, 0, 1, aj::DType::f32).eval();
  std::vector<int> all;
  for (int i = 0; i < kLayers; ++i) all.push_back(i);
  std::printf("\ncheckpoint: a %d-layer MLP step (batch %d, width %d, f32), compiled; wall ms (median of 7), "
              "peak MiB above the inputs\n", kLayers, kBatch, kWidth);
  double ms[2], peak[2];
  for (int ck = 0; ck < 2; ++ck) {
    std::vector<Array> w;
    for (int i = 0; i < kLayers; ++i) w.push_back(aj::random::normal({kWidth, kWidth}, 0, 1.0 / 16, aj::DType::f32).eval());
    auto step = aj::compile([&, ck](std::vector<Array> p) {
      std::vector<Array> g = aj::grad([&](const std::vector<Array>& q) { return loss(x, q, ck ? 4 : 0); }, all)(p);
      for (std::size_t i = 0; i < p.size(); ++i) p[i] = p[i] - 0.01f * g[i];
      return p;
    });
    for (int i = 0; i < 3; ++i) w = step(std::move(w));  // traced, then replayed
    aj::reset_stats();
    const auto base = aj::stats().live_bytes;
    w = step(std::move(w));
    peak[ck] = static_cast<double>(aj::stats().peak_live_bytes - base) / (1 << 20);
    ms[ck] = ajbench::wall_median_ms([&] { w = step(std::move(w)); }, 7);
    std::printf("  %-13s %8.2f ms %8.2f MiB\n", ck ? "checkpointed" : "plain", ms[ck], peak[ck]);
  }
  std::printf("  checkpointed / plain: time %.2fx, peak memory %.2fx\n", ms[1] / ms[0], peak[1] / peak[0]);

  std::printf("\nhost_callback: doubling 1024 f64; CPU us per call (median of 9 runs)\n");
  const Array v = aj::random::normal({1024}, 0, 1, aj::DType::f64).eval();
  auto twice = [](const std::vector<aj::HostBuffer>& in, const std::vector<aj::HostBuffer>& out) {
    const double* a = in[0].as<double>();
    double* b = out[0].as<double>();
    for (std::int64_t i = 0; i < in[0].numel(); ++i) b[i] = 2 * a[i];
  };
  aj::HostCallback host(twice, "twice");
  std::vector<double> src = v.to_vector<double>(), dst(src.size());
  const double loop = ajbench::median_us([&] {
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = 2 * src[i];
  }, 2000);
  const double eager_host = ajbench::median_us([&] { (void)host({{aj::Shape{1024}, aj::DType::f64}}, {v})[0].eval(); }, 500);
  const double eager_kernel = ajbench::median_us([&] { (void)(v * 2.0).eval(); }, 500);
  auto compiled_host = aj::compile([&](const Array& a) { return host({{a.shape(), aj::DType::f64}}, {a})[0]; });
  auto compiled_kernel = aj::compile([](const Array& a) { return a * 2.0; });
  const double replay_host = ajbench::median_us([&] { (void)compiled_host(v); }, 500);
  const double replay_kernel = ajbench::median_us([&] { (void)compiled_kernel(v); }, 500);
  std::printf("  %-28s %8.2f\n", "the loop alone", loop);
  std::printf("  %-28s %8.2f   (kernel x * 2: %.2f)\n", "eager host_callback", eager_host, eager_kernel);
  std::printf("  %-28s %8.2f   (kernel x * 2: %.2f)\n", "compiled replay", replay_host, replay_kernel);
  return 0;
}

// Getting values out of arrayjit: copy_to into a preallocated
// buffer against a memcpy of the same bytes (target: ratio <= 1.2), with
// to_vector, a strided copy_to and eval_into for context. Each case's calls
// alternate with its peer's in the same runs (this machine is shared), and
// the median of 9 runs of this thread's CPU time is printed.
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/jit.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

struct Pair {
  double ours, peer;
};

// Median CPU time per call (ms) of `ours` and `peer`, calls interleaved.
template <class F, class G>
Pair interleaved_ms(F&& ours, G&& peer, int calls = 10, int runs = 9) {
  ours(), peer();  // warm up
  std::vector<double> a, b;
  for (int r = 0; r < runs; ++r) {
    double ta = 0, tb = 0;
    for (int i = 0; i < calls; ++i) {
      double t0 = ajbench::cpu_us();
      ours();
      double t1 = ajbench::cpu_us();
      peer();
      tb += ajbench::cpu_us() - t1;
      ta += t1 - t0;
    }
    a.push_back(ta / calls / 1000), b.push_back(tb / calls / 1000);
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return {a[a.size() / 2], b[b.size() / 2]};
}

void row(const char* name, Pair p, const char* peer) {
  std::printf("%-46s %8.3f ms   %-28s %8.3f ms   ratio %.2f\n", name, p.ours, peer, p.peer, p.ours / p.peer);
}

}  // namespace

int main() {
  const std::int64_t n = 2'100'000;  // 8.4 MB of f32, the to_vector case
  aj::Array x = (aj::random::uniform({n}) * 2 - 1).eval();
  std::vector<float> dst(static_cast<std::size_t>(n), 1.0f), src = x.to_vector<float>();
  std::printf("bench_interop: %lld f32 (%.1f MB)\n", static_cast<long long>(n), n * 4 / 1e6);

  auto memcpy_peer = [&] { std::memcpy(dst.data(), src.data(), src.size() * sizeof(float)); };
  row("copy_to, contiguous", interleaved_ms([&] { x.copy_to(dst.data()); }, memcpy_peer), "memcpy");
  row("to_vector", interleaved_ms([&] { auto v = x.to_vector<float>(); (void)v; }, memcpy_peer), "memcpy");

  aj::Array m = x.reshape({1500, 1400});
  row("copy_to, transposed 1400x1500 view", interleaved_ms([&] { m.T().copy_to(dst.data()); }, memcpy_peer),
      "memcpy");

  // y = x * 2 + 1 into caller memory: the kernel writes dst, against
  // evaluating into arrayjit's buffer and copying that out. One thread: the
  // times are this thread's CPU time.
  aj::jit::set_num_threads(1);
  auto into = [&] { (x * 2 + 1).eval_into(dst.data()); };
  auto eval_copy = [&] { (x * 2 + 1).eval().copy_to(dst.data()); };
  row("eval_into(x * 2 + 1)", interleaved_ms(into, eval_copy), "eval() + copy_to");
  return 0;
}

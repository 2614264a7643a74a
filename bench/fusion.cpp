// Fusion against its peers, measured in one run: the same work written out of
// place with arrayjit, as a hand-written in-place loop, and with Eigen arrays.
// Prints each time and the ratio to the hand-written loop (lower is better).
//
//   ./dev bench            or   build/bench/fusion [n]
//
// Until the LLVM JIT lands, arrayjit kernels run in the host Kernel IR
// interpreter: the ratios show what fusion saves in memory traffic and
// allocations, not yet what compiled code will do.
#include <arrayjit/arrayjit.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

double best_ms(const std::function<void()>& f, int reps = 5) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

void row(const char* what, double ms, double base) {
  std::printf("  %-34s %9.3f ms  %6.2fx\n", what, ms, ms / base);
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 2000;
  std::printf("arrayjit %s, n = %lld\n", aj::version(), static_cast<long long>(n));
  const auto nn = static_cast<std::size_t>(n * n);
  std::vector<double> x(nn);
  for (std::size_t i = 0; i < nn; ++i) x[i] = static_cast<double>(i % 1000) * 1e-3;

  // The seed example on random data: b = sum(x + 2, 1) * 3 + 0.
  std::printf("seed: b = sum(x + 2, 1) * 3 + 0 over an n x n f64 array\n");
  std::vector<double> b(static_cast<std::size_t>(n));
  const double loop = best_ms([&] {
    for (std::int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::int64_t j = 0; j < n; ++j) s += x[static_cast<std::size_t>(i * n + j)] + 2;
      b[static_cast<std::size_t>(i)] = s * 3 + 0;
    }
  });
  aj::Array xa = aj::borrow(x.data(), {n, n});
  const double ajt = best_ms([&] {
    aj::Array a = xa + 2;
    aj::Array r = aj::sum(a, 1);
    r = r * 3;
    r = r + 0;
    r.eval();
  });
  Eigen::Map<const Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> xe(x.data(), n, n);
  Eigen::ArrayXd be;
  const double eig = best_ms([&] { be = ((xe + 2).rowwise().sum() * 3 + 0).eval(); });
  row("hand-written loop", loop, loop);
  row("arrayjit (out of place)", ajt, loop);
  row("Eigen", eig, loop);

  // A 20-op elementwise chain, out of place.
  std::printf("chain: 20 elementwise ops over n*n f64 elements\n");
  std::vector<double> y(nn);
  const double loop2 = best_ms([&] {
    for (std::size_t i = 0; i < nn; ++i) {
      double v = x[i];
      for (int k = 0; k < 5; ++k) v = std::max(std::abs(v * 1.0001 + 0.5), -1.0);
      y[i] = v;
    }
  });
  const double ajt2 = best_ms([&] {
    aj::Array v = xa;
    for (int k = 0; k < 5; ++k) v = aj::maximum(aj::abs(v * 1.0001 + 0.5), -1.0);
    v.eval();
  });
  Eigen::ArrayXd ye;
  Eigen::Map<const Eigen::ArrayXd> xv(x.data(), static_cast<Eigen::Index>(nn));
  const double eig2 = best_ms([&] {
    ye = xv;
    for (int k = 0; k < 5; ++k) ye = (ye * 1.0001 + 0.5).abs().max(-1.0);
  });
  row("hand-written loop", loop2, loop2);
  row("arrayjit (out of place)", ajt2, loop2);
  row("Eigen (one temporary per line)", eig2, loop2);
  aj::Stats s = aj::stats();
  std::printf("arrayjit stats: %llu kernels, %llu system allocations, %llu pool hits\n",
              static_cast<unsigned long long>(s.kernels_launched),
              static_cast<unsigned long long>(s.system_allocs),
              static_cast<unsigned long long>(s.pool_hits));
  return 0;
}

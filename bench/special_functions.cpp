// The special functions of base/special_math.hpp against Eigen's
// SpecialFunctions module (the same functions, vectorized by Eigen) in the
// same run: 1M elements, f64 and f32, medians of 7 runs, one thread for
// both (Eigen's array expressions are single-threaded), the ratio ours /
// Eigen. erfinv and log_ndtr have no Eigen counterpart: their time is
// printed beside exp's (a kernel bound by memory). Figures: bench/README.md.
//
//   special_functions [--quick]
#include <arrayjit/arrayjit.hpp>

#include <Eigen/Dense>
#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace {

double median_ms(int runs, const std::function<void()>& body) {
  std::vector<double> t;
  body();  // warm: the kernel compiled, buffers in the pool
  for (int r = 0; r < runs; ++r) {
    const auto a = std::chrono::steady_clock::now();
    body();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class T>
void run(int runs, std::int64_t n) {
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> pos(0.05, 20.0), unit(0.001, 0.999);
  std::vector<T> p(static_cast<std::size_t>(n)), u(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = static_cast<T>(pos(rng)), u[static_cast<std::size_t>(i)] = static_cast<T>(unit(rng));
  const aj::Array ap = aj::from_vector(p), au = aj::from_vector(u);
  const Eigen::Map<const Arr> ep(p.data(), n), eu(u.data(), n);
  Arr out(n);
  struct Case {
    const char* name;
    const aj::Array* in;
    aj::Array (*ours)(const aj::Operand&);
    std::function<void()> eigen;
  };
  const Case cases[] = {
      {"exp", &ap, aj::exp, [&] { out = ep.exp(); }},
      {"lgamma", &ap, aj::lgamma, [&] { out = ep.lgamma(); }},
      {"digamma", &ap, aj::digamma, [&] { out = ep.digamma(); }},
      {"i0", &ap, aj::i0, [&] { out = ep.unaryExpr([](T x) { return Eigen::numext::bessel_i0(x); }); }},
      {"i1", &ap, aj::i1, [&] { out = ep.unaryExpr([](T x) { return Eigen::numext::bessel_i1(x); }); }},
      {"ndtri", &au, aj::ndtri, [&] { out = eu.ndtri(); }},
      {"erfinv", &au, aj::erfinv, nullptr},
      {"log_ndtr", &ap, aj::log_ndtr, nullptr},
  };
  const char* t = sizeof(T) == 8 ? "f64" : "f32";
  for (const Case& c : cases) {
    const double ours = median_ms(runs, [&] { c.ours(*c.in).eval(); });
    if (c.eigen) {
      const double peer = median_ms(runs, c.eigen);
      std::printf("%-9s %s  ours %7.2f ns/elem  Eigen %7.2f ns/elem  ours/Eigen %.2f\n", c.name, t,
                  ours * 1e6 / static_cast<double>(n), peer * 1e6 / static_cast<double>(n), ours / peer);
    } else {
      std::printf("%-9s %s  ours %7.2f ns/elem  (no Eigen function)\n", c.name, t, ours * 1e6 / static_cast<double>(n));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  aj::jit::set_num_threads(1);
  std::printf("%s\n", aj::jit::host_info().c_str());
  const int runs = quick ? 3 : 7;
  const std::int64_t n = quick ? (1 << 16) : (1 << 20);
  run<double>(runs, n);
  run<float>(runs, n);
  return 0;
}

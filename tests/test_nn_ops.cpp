// erf, erfc, softmax, log_softmax, logsumexp, zeros_like / ones_like /
// full_like, and the random integers, permutations and coin flips: against
// loops written here (std::erf, a double-precision softmax), on the host
// JIT, the kernel interpreter and the reference interpreter; fusion counts
// with explain and stats; random values identical on every path.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::DType;
using Dims = std::vector<std::int64_t>;
using Executor = aj::detail::Executor;

enum class Path { reference, jit, interpreter };
constexpr Path kPaths[] = {Path::reference, Path::jit, Path::interpreter};
const char* path_name(Path p) { return p == Path::reference ? "reference" : p == Path::jit ? "jit" : "interpreter"; }

struct PathScope {
  explicit PathScope(Path p)
      : exec(p == Path::reference ? Executor::reference : Executor::optimized), jit_was(aj::jit::enabled()) {
    aj::jit::set_enabled(p != Path::interpreter);
  }
  ~PathScope() { aj::jit::set_enabled(jit_was); }
  aj::detail::ExecutorScope exec;
  bool jit_was;
};

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto e : d) n *= e;
  return n;
}

template <class T>
double ulps(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0 : INFINITY;
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  auto ordered = [](T x) {
    const I i = std::bit_cast<I>(x);
    return i < 0 ? static_cast<I>(std::numeric_limits<I>::min() - i) : i;
  };
  const long double d = static_cast<long double>(ordered(a)) - static_cast<long double>(ordered(b));
  return static_cast<double>(d < 0 ? -d : d);
}

// Rows of a [rows, cols] array in f64, with the softmax family written out.
struct Rows {
  std::int64_t rows, cols;
  std::vector<double> x;
  double at(std::int64_t r, std::int64_t c) const { return x[static_cast<std::size_t>(r * cols + c)]; }
  double max(std::int64_t r) const {
    double m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) m = std::isnan(at(r, c)) || std::isnan(m) ? NAN : std::max(m, at(r, c));
    return m;
  }
  std::vector<double> softmax() const {
    std::vector<double> out(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      const double m = max(r);
      double total = 0;
      for (std::int64_t c = 0; c < cols; ++c) total += std::exp(at(r, c) - m);
      for (std::int64_t c = 0; c < cols; ++c) out[static_cast<std::size_t>(r * cols + c)] = std::exp(at(r, c) - m) / total;
    }
    return out;
  }
  std::vector<double> log_softmax() const {
    std::vector<double> out(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      const double m = max(r);
      double total = 0;
      for (std::int64_t c = 0; c < cols; ++c) total += std::exp(at(r, c) - m);
      for (std::int64_t c = 0; c < cols; ++c) out[static_cast<std::size_t>(r * cols + c)] = at(r, c) - m - std::log(total);
    }
    return out;
  }
  std::vector<double> logsumexp() const {
    std::vector<double> out(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      double m = max(r);
      if (!std::isfinite(m)) m = std::isnan(m) ? m : 0;
      double total = 0;
      for (std::int64_t c = 0; c < cols; ++c) total += std::exp(at(r, c) - m);
      out[static_cast<std::size_t>(r)] = std::log(total) + m;
    }
    return out;
  }
};

// |got - want| <= rtol * |want| + atol, NaN only where NaN is wanted, infinities equal.
void check_close(const std::vector<double>& want, const std::vector<double>& got, double rtol, double atol,
                 const std::string& what) {
  CAPTURE(what);
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double w = want[k], g = got[k];
    bool ok;
    if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g)) ok = w == g;
    else ok = std::fabs(g - w) <= rtol * std::fabs(w) + atol;
    if (!ok) {
      FAIL_CHECK("element " << k << ": want " << w << ", got " << g);
      return;
    }
  }
}

}  // namespace

TEST_SUITE("nn ops") {

TEST_CASE("erf and erfc are within 4 ulp of libm on every path, f32 and f64; integers compute in f64") {
  std::vector<double> v;
  for (int i = -4000; i <= 4000; ++i) v.push_back(i * 0.0025 * 3);
  for (double x : std::vector<double>{0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-300, -1e-310, 5.9, 6.0, 26.5, 27.3, 30.0}) {
    v.push_back(x);
  }
  for (DType t : {DType::f32, DType::f64}) {
    const Array x = aj::from_vector<double>(v).astype(t).eval();
    const std::vector<double> xs = x.to_vector<double>();
    for (Path p : kPaths) {
      PathScope scope(p);
      const std::vector<double> e = aj::erf(x).to_vector<double>(), c = aj::erfc(x).to_vector<double>();
      double worst = 0;
      for (std::size_t k = 0; k < xs.size(); ++k) {
        if (t == DType::f32) {
          const auto xf = static_cast<float>(xs[k]);
          worst = std::max({worst, ulps(static_cast<float>(e[k]), std::erf(xf)), ulps(static_cast<float>(c[k]), std::erfc(xf))});
        } else {
          worst = std::max({worst, ulps(e[k], std::erf(xs[k])), ulps(c[k], std::erfc(xs[k]))});
        }
      }
      CAPTURE(path_name(p));
      CAPTURE(aj::dtype_name(t));
      CHECK(worst <= 4);
      // The signs of zero survive: erf(-0.0) is -0.0.
      CHECK(std::signbit(aj::erf(aj::full({}, -0.0, t)).item<double>()));
    }
  }
  const Array i = aj::from_vector<std::int32_t>({-2, 0, 1});
  CHECK(aj::erf(i).dtype() == DType::f64);
  CHECK(aj::erfc(i).to_vector<double>() == std::vector<double>{std::erfc(-2.0), 1.0, std::erfc(1.0)});
}

TEST_CASE("softmax, log_softmax and logsumexp equal double-precision loops over random rows, on every path") {
  std::mt19937_64 rng(1403);
  for (DType t : {DType::f32, DType::f64, DType::i32}) {
    for (const Dims& dims : {Dims{7, 33}, Dims{1, 1}, Dims{40, 3}, Dims{5, 1000}}) {
      std::vector<double> v(static_cast<std::size_t>(numel(dims)));
      std::normal_distribution<double> d(0, 20);  // large spreads: exp(x) alone would overflow f32
      for (auto& x : v) x = t == DType::i32 ? std::round(d(rng)) : d(rng) + (t == DType::f32 ? 0 : 500);
      const Array x = aj::from_vector<double>(v, aj::Shape(dims)).astype(t).eval();
      Rows rows{dims[0], dims[1], x.to_vector<double>()};
      // f32: a row sum of up to 1000 terms in f32, exp within a few ulp.
      const double rtol = t == DType::f32 ? 2e-4 : 1e-12;
      for (Path p : kPaths) {
        PathScope scope(p);
        const std::string what = std::string(aj::dtype_name(t)) + aj::Shape(dims).str() + " on " + path_name(p);
        const Array s = aj::softmax(x);
        CHECK(s.dtype() == (t == DType::i32 ? DType::f64 : t));
        check_close(rows.softmax(), s.to_vector<double>(), rtol, 1e-30, "softmax " + what);
        check_close(rows.log_softmax(), aj::log_softmax(x, 1).to_vector<double>(), rtol, rtol * 10, "log_softmax " + what);
        check_close(rows.logsumexp(), aj::logsumexp(x, 1).to_vector<double>(), rtol, rtol, "logsumexp " + what);
        // Over axis 0: the transpose's rows.
        Rows cols{dims[1], dims[0], aj::transpose(x).to_vector<double>()};
        check_close(cols.logsumexp(), aj::logsumexp(x, 0).to_vector<double>(), rtol, rtol, "logsumexp axis 0 " + what);
        check_close(cols.softmax(), aj::transpose(aj::softmax(x, 0)).to_vector<double>(), rtol, 1e-30,
                    "softmax axis 0 " + what);
      }
    }
  }
}

TEST_CASE("softmax family at the edges: -inf rows, +inf, NaN, empty axes, keepdims, all axes") {
  const double inf = INFINITY, nan = NAN;
  const Array x = aj::from_vector<double>({-inf, -inf, -inf,  // only -inf
                                           1, inf, 2,         // +inf
                                           1, nan, 2,         // NaN
                                           -inf, 0, -inf},    // one finite value
                                          aj::Shape{4, 3});
  for (Path p : kPaths) {
    PathScope scope(p);
    CAPTURE(path_name(p));
    const std::vector<double> lse = aj::logsumexp(x, 1).to_vector<double>();
    CHECK(lse[0] == -inf);
    CHECK(lse[1] == inf);
    CHECK(std::isnan(lse[2]));
    CHECK(lse[3] == 0.0);
    const std::vector<double> sm = aj::softmax(x).to_vector<double>();
    for (int k = 0; k < 9; ++k) CHECK(std::isnan(sm[static_cast<std::size_t>(k)]));
    CHECK(sm[9] == 0.0);
    CHECK(sm[10] == 1.0);
    CHECK(sm[11] == 0.0);
    const std::vector<double> ls = aj::log_softmax(x).to_vector<double>();
    CHECK(ls[9] == -inf);
    CHECK(ls[10] == 0.0);
    // Empty lines: logsumexp is log(0) = -inf; softmax of nothing is nothing.
    CHECK(aj::logsumexp(aj::zeros({3, 0}), 1).to_vector<double>() == std::vector<double>(3, -inf));
    CHECK(aj::softmax(aj::zeros({3, 0})).shape() == aj::Shape{3, 0});
    // keepdims, all axes, a list of axes.
    const Array y = aj::from_vector<double>({1, 2, 3, 4, 5, 6}, aj::Shape{2, 3});
    CHECK(aj::logsumexp(y, 1, true).shape() == aj::Shape{2, 1});
    const double all = std::log(std::exp(1) + std::exp(2) + std::exp(3) + std::exp(4) + std::exp(5) + std::exp(6));
    CHECK(aj::logsumexp(y).item<double>() == doctest::Approx(all).epsilon(1e-14));
    CHECK(aj::logsumexp(y, {0, 1}).item<double>() == doctest::Approx(all).epsilon(1e-14));
    CHECK(aj::sum(aj::softmax(y, aj::Axes::all())).item<double>() == doctest::Approx(1.0).epsilon(1e-14));
  }
}

TEST_CASE("softmax and logsumexp fuse: the max, then the shifted exp-sum (with logsumexp's epilogue), then the division") {
  const Array x = aj::random::normal({64, 1000}, 0, 3).eval();
  const std::string sm = aj::explain(aj::softmax(x));
  CAPTURE(sm);
  CHECK(sm.find("plan: 3 steps, 3 kernels") != std::string::npos);
  const std::string lse = aj::explain(aj::logsumexp(x, 1));
  CAPTURE(lse);
  CHECK(lse.find("plan: 2 steps, 2 kernels") != std::string::npos);
  aj::reset_stats();
  aj::logsumexp(x, 1).eval();
  CHECK(aj::stats().kernels_launched == 2);
  // log_softmax: max, exp-sum with the log after it, then x - m - lse.
  CHECK(aj::explain(aj::log_softmax(x)).find("plan: 3 steps, 3 kernels") != std::string::npos);
}

TEST_CASE("zeros_like, ones_like and full_like take the shape, and the dtype unless one is given") {
  const Array a = aj::from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, aj::Shape{2, 3});
  CHECK(aj::zeros_like(a).dtype() == DType::i32);
  CHECK(aj::zeros_like(a).shape() == aj::Shape{2, 3});
  CHECK(aj::zeros_like(a).to_vector<std::int64_t>() == std::vector<std::int64_t>(6, 0));
  CHECK(aj::ones_like(a, DType::f32).dtype() == DType::f32);
  CHECK(aj::ones_like(a, DType::f32).to_vector<double>() == std::vector<double>(6, 1.0));
  CHECK(aj::full_like(a, 2.75).to_vector<std::int64_t>() == std::vector<std::int64_t>(6, 2));  // converted as astype
  CHECK(aj::full_like(a, 2.75, DType::f64).to_vector<double>() == std::vector<double>(6, 2.75));
  CHECK(aj::full_like(aj::zeros({0, 4}), true, DType::bool_).shape() == aj::Shape{0, 4});
  CHECK(aj::zeros_like(aj::full({}, 1.5, DType::f64)).item<double>() == 0.0);
}

TEST_CASE("randint, permutation and bernoulli: in range, well spread, and the same bits on every path") {
  for (DType t : {DType::i32, DType::i64}) {
    std::vector<std::vector<std::int64_t>> seen;
    for (Path p : kPaths) {
      PathScope scope(p);
      aj::random::seed(99);
      const Array r = aj::random::randint({300, 40}, -7, 6, t);
      CHECK(r.dtype() == t);
      seen.push_back(r.to_vector<std::int64_t>());
    }
    CHECK(seen[0] == seen[1]);
    CHECK(seen[0] == seen[2]);
    std::vector<int> counts(13, 0);
    for (auto v : seen[0]) {
      REQUIRE(v >= -7);
      REQUIRE(v < 6);
      ++counts[static_cast<std::size_t>(v + 7)];
    }
    for (int c : counts) CHECK(std::abs(c - 12000 / 13) < 160);  // 923 expected, sd ~29
  }
  // The extremes of i64 and i32.
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::int64_t> big = aj::random::randint({1000}, lo, lo + (std::int64_t{1} << 62)).to_vector<std::int64_t>();
  CHECK(*std::max_element(big.begin(), big.end()) > lo + (std::int64_t{1} << 61));
  const std::vector<std::int64_t> i32 = aj::random::randint({1000}, INT32_MIN, std::int64_t{INT32_MAX} + 1, DType::i32).to_vector<std::int64_t>();
  CHECK(*std::min_element(i32.begin(), i32.end()) < -1000000000);
  CHECK(aj::random::randint({5}, 3, 4).to_vector<std::int64_t>() == std::vector<std::int64_t>(5, 3));

  std::vector<std::vector<std::int64_t>> perms;
  for (Path p : kPaths) {
    PathScope scope(p);
    aj::random::seed(5);
    perms.push_back(aj::random::permutation(1000).to_vector<std::int64_t>());
  }
  CHECK(perms[0] == perms[1]);
  CHECK(perms[0] == perms[2]);
  std::vector<std::int64_t> sorted = perms[0];
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(sorted == iota);
  CHECK(perms[0] != iota);
  CHECK(aj::random::permutation(0).shape() == aj::Shape{0});
  aj::random::seed(5);
  const std::vector<std::int64_t> again = aj::random::permutation(1000).to_vector<std::int64_t>();
  CHECK(again == perms[0]);  // the seed decides it
  CHECK(aj::random::permutation(1000).to_vector<std::int64_t>() != perms[0]);  // the next one differs

  std::vector<std::vector<bool>> flips;
  for (Path p : kPaths) {
    PathScope scope(p);
    aj::random::seed(3);
    flips.push_back(aj::random::bernoulli({20000}, 0.3).to_vector<bool>());
  }
  CHECK(flips[0] == flips[1]);
  CHECK(flips[0] == flips[2]);
  const auto ones = std::count(flips[0].begin(), flips[0].end(), true);
  CHECK(std::abs(static_cast<double>(ones) - 6000.0) < 250);  // sd 65
  CHECK(aj::random::bernoulli({100}, 0.0).to_vector<bool>() == std::vector<bool>(100, false));
  CHECK(aj::random::bernoulli({100}, 1.0).to_vector<bool>() == std::vector<bool>(100, true));
  CHECK(aj::random::bernoulli({2, 3}).dtype() == DType::bool_);
}

}  // TEST_SUITE

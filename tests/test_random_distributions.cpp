// The random distributions of arrayjit/random.hpp (issue 35 point 6, in
// part): each against its distribution's own moments and CDF on 200,000
// draws (fixed seeds: the bounds are 5 or more standard errors wide), the
// support (bounds, distinct draws without replacement, permutations), the
// same bits on the JIT and the interpreter, and bad arguments.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;

constexpr std::int64_t kDraws = 200000;

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }
double var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}
double fraction_above(const std::vector<double>& v, double t) {
  return static_cast<double>(std::count_if(v.begin(), v.end(), [t](double x) { return x > t; })) /
         static_cast<double>(v.size());
}
double phi(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The same draws on the JIT and the interpreter, from the same seed: the
// uniform and normal bits are identical, the functions applied to them
// (log, exp, ndtri) within their few ulps (docs/semantics.md).
template <class F>
void same_on_both(F make) {
  std::vector<std::vector<double>> got;
  for (bool jit : {true, false}) {
    const bool saved = aj::jit::enabled();
    aj::jit::set_enabled(jit);
    aj::random::seed(77);
    got.push_back(make().template to_vector<double>());
    aj::jit::set_enabled(saved);
  }
  REQUIRE(got[0].size() == got[1].size());
  for (std::size_t i = 0; i < got[0].size(); ++i) {
    CHECK(std::fabs(got[0][i] - got[1][i]) <= 1e-6 * std::max(1.0, std::fabs(got[1][i])));
  }
}

}  // namespace

TEST_CASE("random: exponential and gumbel have their distributions' moments and tails") {
  aj::random::seed(351);
  const std::vector<double> e = aj::random::exponential({kDraws}, 2.0, DType::f64).to_vector<double>();
  CHECK(*std::min_element(e.begin(), e.end()) >= 0.0);
  CHECK(std::fabs(mean_of(e) - 2.0) < 5 * 2.0 / std::sqrt(double(kDraws)));
  CHECK(std::fabs(fraction_above(e, 2.0) - std::exp(-1.0)) < 0.005);
  CHECK(std::fabs(fraction_above(e, 6.0) - std::exp(-3.0)) < 0.002);
  const Array e32 = aj::random::exponential({10}, 1.0);
  CHECK(e32.dtype() == DType::f32);
  const std::vector<double> g = aj::random::gumbel({kDraws}, 1.0, 2.0, DType::f64).to_vector<double>();
  const double gamma = 0.5772156649015329;
  CHECK(std::fabs(mean_of(g) - (1.0 + 2.0 * gamma)) < 5 * 2.0 * 1.2825 / std::sqrt(double(kDraws)));
  CHECK(std::fabs(var_of(g) - 4.0 * M_PI * M_PI / 6) < 0.1);
  // CDF exp(-exp(-(x - mu) / scale)) at the median-ish point x = mu.
  CHECK(std::fabs((1 - fraction_above(g, 1.0)) - std::exp(-1.0)) < 0.005);
  for (double x : g) REQUIRE(std::isfinite(x));
  same_on_both([] { return aj::random::gumbel({1000}, 0.0, 1.0, DType::f64); });
  same_on_both([] { return aj::random::exponential({1000}, 3.0, DType::f32); });
  CHECK_THROWS_WITH_AS(aj::random::exponential({3}, -1.0), doctest::Contains("random::exponential: needs scale >= 0"),
                       aj::Error);
  CHECK_THROWS_WITH_AS(aj::random::gumbel({3}, 0.0, 1.0, DType::i32), doctest::Contains("floating point"), aj::Error);
}

TEST_CASE("random: truncated_normal stays in its bounds with the truncated distribution's mean, in the far tails too") {
  aj::random::seed(352);
  struct Case {
    double lo, hi;
  };
  for (Case c : {Case{-1.0, 2.0}, Case{-2.0, -1.5}, Case{5.0, 6.0}, Case{-9.0, -8.5}, Case{0.0, INFINITY}}) {
    CAPTURE(c.lo);
    CAPTURE(c.hi);
    const std::vector<double> x = aj::random::truncated_normal({kDraws}, c.lo, c.hi, DType::f64).to_vector<double>();
    for (double v : x) REQUIRE((v >= c.lo && v <= c.hi));
    const double z = Phi(c.hi) - Phi(c.lo);
    // In the upper tail Phi loses its digits; use the symmetric form there.
    const double zz = c.lo > 0 ? Phi(-c.lo) - Phi(-c.hi) : z;
    const double want = (phi(c.lo) - (std::isinf(c.hi) ? 0.0 : phi(c.hi))) / zz;
    CHECK(std::fabs(mean_of(x) - want) < 0.01);
  }
  const Array f = aj::random::truncated_normal({1000}, -0.5, 0.5);
  CHECK(f.dtype() == DType::f32);
  for (float v : f.to_vector<float>()) REQUIRE((v >= -0.5f && v <= 0.5f));
  same_on_both([] { return aj::random::truncated_normal({1000}, -1.0, 3.0, DType::f64); });
  CHECK_THROWS_WITH_AS(aj::random::truncated_normal({3}, 1.0, 1.0), doctest::Contains("needs lower < upper"), aj::Error);
}

TEST_CASE("random: categorical and multinomial draw with softmax(logits) / normalized probabilities") {
  aj::random::seed(353);
  const Array logits = aj::from_vector<double>({0.0, std::log(2.0), std::log(3.0), -INFINITY});
  const Array many = aj::broadcast_to(aj::reshape(logits, Shape{1, 4}), Shape{kDraws, 4});
  const Array d = aj::random::categorical(many);
  CHECK(d.dtype() == DType::i64);
  CHECK(d.shape() == Shape{kDraws});
  std::vector<double> freq(4);
  for (std::int64_t k : d.to_vector<std::int64_t>()) freq[static_cast<std::size_t>(k)] += 1.0 / kDraws;
  CHECK(std::fabs(freq[0] - 1.0 / 6) < 0.005);
  CHECK(std::fabs(freq[1] - 2.0 / 6) < 0.005);
  CHECK(std::fabs(freq[2] - 3.0 / 6) < 0.005);
  CHECK(freq[3] == 0.0);
  // Along another axis.
  CHECK(aj::random::categorical(aj::zeros({5, 3}), 0).shape() == Shape{3});
  const Array counts = aj::random::multinomial(1000, aj::from_vector<double>({2, 3, 5, 0, 10, 10}, Shape{2, 3}));
  CHECK(counts.shape() == Shape{2, 3});
  const std::vector<std::int64_t> c = counts.to_vector<std::int64_t>();
  CHECK(c[0] + c[1] + c[2] == 1000);
  CHECK(c[3] == 0);
  CHECK(c[4] + c[5] == 1000);
  CHECK(std::abs(c[2] - 500) < 80);  // 5 standard deviations of a binomial(1000, 0.5) are 79
  same_on_both([] { return aj::random::categorical(aj::from_vector<double>({1, 2, 3, 4, 5, 6}, Shape{2, 3})).astype(DType::f64); });
  CHECK_THROWS_WITH_AS(aj::random::categorical(aj::zeros({3}, DType::i64)), doctest::Contains("float logits"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::random::multinomial(-1, aj::ones({3})), doctest::Contains("n >= 0"), aj::Error);
}

TEST_CASE("random: choice with and without replacement, uniform or weighted; shuffle permutes along an axis") {
  aj::random::seed(354);
  // Without replacement: distinct values of 0..n-1.
  for (bool weighted : {false, true}) {
    const std::optional<Array> p = weighted ? std::optional<Array>(aj::arange(10, DType::f64) + 1.0) : std::nullopt;
    const std::vector<std::int64_t> v = aj::random::choice(10, 10, false, p).to_vector<std::int64_t>();
    CHECK(std::set<std::int64_t>(v.begin(), v.end()).size() == 10);
    for (auto k : v) CHECK((k >= 0 && k < 10));
  }
  // Weighted, with replacement: frequencies p.
  const Array p = aj::from_vector<double>({1, 0, 3});
  std::vector<double> freq(3);
  for (std::int64_t k : aj::random::choice(3, kDraws, true, p).to_vector<std::int64_t>()) freq[static_cast<std::size_t>(k)] += 1.0 / kDraws;
  CHECK(std::fabs(freq[0] - 0.25) < 0.005);
  CHECK(freq[1] == 0.0);
  // Weighted, without replacement: the first draw has probabilities p.
  std::vector<double> first(3);
  for (int i = 0; i < 4000; ++i) first[static_cast<std::size_t>(aj::random::choice(3, 2, false, p).to_vector<std::int64_t>()[0])] += 1.0 / 4000;
  CHECK(std::fabs(first[2] - 0.75) < 0.035);
  // Uniform with replacement: every value, about equally often.
  std::vector<double> u(5);
  for (std::int64_t k : aj::random::choice(5, kDraws).to_vector<std::int64_t>()) u[static_cast<std::size_t>(k)] += 1.0 / kDraws;
  for (double f : u) CHECK(std::fabs(f - 0.2) < 0.005);
  // From an array's rows.
  const Array a = aj::from_vector<double>({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  const std::vector<double> rows = aj::random::choice(a, 3, false).to_vector<double>();
  CHECK(rows.size() == 6);
  for (std::size_t r = 0; r < 3; ++r) CHECK(rows[2 * r + 1] == rows[2 * r] + 1);
  // shuffle: the same slices in another order.
  const Array m = aj::reshape(aj::arange(24, DType::f64), Shape{4, 6});
  for (int axis : {0, 1, -1}) {
    const Array s = aj::random::shuffle(m, axis);
    CHECK(s.shape() == m.shape());
    CHECK(aj::sort(s, axis).to_vector<double>() == m.to_vector<double>());
  }
  same_on_both([] { return aj::random::choice(100, 20, false).astype(DType::f64); });
  CHECK_THROWS_WITH_AS(aj::random::choice(3, 4, false), doctest::Contains("without replacement"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::random::choice(3, 2, true, aj::ones({4})), doctest::Contains("p of shape [3]"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::random::shuffle(aj::ones({})), doctest::Contains("random::shuffle"), aj::Error);
}

TEST_CASE("random: gamma, beta and poisson have their distributions' moments (rejection rounds and inversion)") {
  aj::random::seed(355);
  struct G {
    double alpha, scale;
  };
  for (G g : {G{3.0, 2.0}, G{1.0, 1.0}, G{0.3, 1.0}, G{50.0, 0.1}}) {
    CAPTURE(g.alpha);
    const std::vector<double> x = aj::random::gamma({kDraws}, g.alpha, g.scale, DType::f64).to_vector<double>();
    for (double v : x) REQUIRE((v >= 0.0 && std::isfinite(v)));
    const double mean = g.alpha * g.scale, var = g.alpha * g.scale * g.scale;
    CHECK(std::fabs(mean_of(x) - mean) < 5 * std::sqrt(var / kDraws));
    CHECK(std::fabs(var_of(x) / var - 1.0) < 0.03);
  }
  const std::vector<double> b = aj::random::beta({kDraws}, 2.0, 5.0, DType::f64).to_vector<double>();
  for (double v : b) REQUIRE((v > 0.0 && v < 1.0));
  CHECK(std::fabs(mean_of(b) - 2.0 / 7.0) < 0.002);
  CHECK(std::fabs(var_of(b) - 10.0 / (49.0 * 8.0)) < 0.0005);
  for (double lam : {0.5, 3.5, 40.0, 200.0, 5000.0}) {
    CAPTURE(lam);
    const Array p = aj::random::poisson({kDraws}, lam);
    CHECK(p.dtype() == DType::i64);
    std::vector<double> x;
    for (std::int64_t k : p.to_vector<std::int64_t>()) {
      REQUIRE(k >= 0);
      x.push_back(static_cast<double>(k));
    }
    CHECK(std::fabs(mean_of(x) - lam) < 5 * std::sqrt(lam / kDraws));
    CHECK(std::fabs(var_of(x) / lam - 1.0) < 0.03);
    if (lam < 10) CHECK(std::fabs((1 - fraction_above(x, 0.5)) - std::exp(-lam)) < 0.005);  // P(0)
  }
  CHECK(aj::random::poisson({4}, 0.0).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 0, 0});
  same_on_both([] { return aj::random::gamma({500}, 0.7, 1.0, DType::f64); });
  same_on_both([] { return aj::random::poisson({500}, 120.0).astype(DType::f64); });
  CHECK_THROWS_WITH_AS(aj::random::gamma({2}, 0.0), doctest::Contains("alpha must be finite and > 0"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::random::poisson({2}, -1.0), doctest::Contains("random::poisson"), aj::Error);
}

TEST_CASE("random: the C functions draw what the C++ ones do from the same seed") {
  const std::int64_t shape[] = {300};
  auto same_as = [](aj_status s, aj_array out, const Array& want) {
    REQUIRE(s == AJ_OK);
    CHECK(aj::from_c(out).to_vector<double>() == want.to_vector<double>());
    aj_array_release(out);
  };
  aj_array out{0};
  aj_random_seed(5);
  const aj_status s1 = aj_random_gamma(shape, 1, 2.5, 1.0, AJ_F64, &out);
  aj::random::seed(5);
  same_as(s1, out, aj::random::gamma({300}, 2.5, 1.0, DType::f64));
  aj_random_seed(6);
  const aj_status s2 = aj_random_poisson(shape, 1, 7.0, &out);
  aj::random::seed(6);
  same_as(s2, out, aj::random::poisson({300}, 7.0));
  aj_random_seed(7);
  const aj_status s3 = aj_random_choice(50, 20, 0, aj_array{0}, &out);
  aj::random::seed(7);
  same_as(s3, out, aj::random::choice(50, 20, false));
  CHECK(aj_random_beta(shape, 1, -1.0, 1.0, AJ_F32, &out) != AJ_OK);
  CHECK(std::string(aj_last_error()).find("aj_random_beta") != std::string::npos);
}

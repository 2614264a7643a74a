// NumPy's statistics (arrayjit/statistics.hpp, issue 35 point 3, in part)
// against loops written here from NumPy's definitions: var/std with ddof,
// the NaN-skipping reductions, count_nonzero, diff, isclose/allclose/
// array_equal, quantile/percentile/median (NumPy's linear method), on the
// JIT and the interpreter, with NaN, size-1 and all-NaN lines; a compiled
// call at other extents divides by its own count; bad arguments are
// located errors.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tests/c_result.hpp"
#include "tests/autodiff_check.hpp"
#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using ajtest::on_both;

std::vector<double> randoms(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(3.0, 2.0);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= 1e-13 * std::max(1.0, std::fabs(b));
}

// Rows of a [rows, cols] matrix, row-major.
std::vector<std::vector<double>> rows_of(const std::vector<double>& v, int rows, int cols) {
  std::vector<std::vector<double>> r(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) r[static_cast<std::size_t>(i)].assign(v.begin() + i * cols, v.begin() + (i + 1) * cols);
  return r;
}

double ref_quantile(std::vector<double> line, double q) {
  for (double x : line) {
    if (std::isnan(x)) return NAN;
  }
  std::sort(line.begin(), line.end());
  const double pos = q * static_cast<double>(line.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, line.size() - 1);
  const double t = pos - static_cast<double>(lo), a = line[lo], b = line[hi];
  return t < 0.5 ? a + (b - a) * t : b - (b - a) * (1 - t);
}

}  // namespace

TEST_CASE("statistics: var and std with ddof along each axis and all, against two-pass loops") {
  on_both([] {
    const int rows = 5, cols = 7;
    const auto v = randoms(rows * cols, 1);
    const Array x = aj::from_vector(v, aj::Shape{rows, cols});
    for (double ddof : {0.0, 1.0}) {
      CAPTURE(ddof);
      const auto got = aj::var(x, 1, ddof).to_vector<double>();
      const auto sd = aj::std(x, 1, ddof, true);
      CHECK(sd.shape() == aj::Shape{rows, 1});
      const auto gs = sd.to_vector<double>();
      const auto r = rows_of(v, rows, cols);
      for (int i = 0; i < rows; ++i) {
        double m = 0, s = 0;
        for (double e : r[static_cast<std::size_t>(i)]) m += e;
        m /= cols;
        for (double e : r[static_cast<std::size_t>(i)]) s += (e - m) * (e - m);
        CHECK(close(got[static_cast<std::size_t>(i)], s / (cols - ddof)));
        CHECK(close(gs[static_cast<std::size_t>(i)], std::sqrt(s / (cols - ddof))));
      }
      double m = 0, s = 0;
      for (double e : v) m += e;
      m /= static_cast<double>(v.size());
      for (double e : v) s += (e - m) * (e - m);
      CHECK(close(aj::var(x, aj::Axes::all(), ddof).item<double>(), s / (static_cast<double>(v.size()) - ddof)));
    }
    // Integers in f64; ddof = n gives inf (a nonzero sum over 0), as NumPy.
    const Array k = aj::from_vector<std::int32_t>({1, 2, 4});
    CHECK(aj::var(k).dtype() == DType::f64);
    CHECK(close(aj::var(k).item<double>(), 14.0 / 9.0));
    CHECK(aj::var(k, 0, 3.0).item<double>() == INFINITY);
    // Size-0 axes: an empty line's variance is NaN (0 / 0), as NumPy; no lines, no values.
    const Array e = aj::zeros({0, 3});
    CHECK(aj::var(e, 0).shape() == aj::Shape{3});
    CHECK(std::isnan(aj::var(e, 0).to_vector<double>()[2]));
    CHECK(aj::var(e, 1).shape() == aj::Shape{0});
    CHECK(std::isnan(aj::var(e).item<double>()));
    // A mean far from 0 with small deviations (the shift keeps their digits):
    // 1e8 + {0, 1, 2, 3} in f64, and an outlier first.
    CHECK(aj::var(aj::from_vector<double>({1e8, 1e8 + 1, 1e8 + 2, 1e8 + 3})).item<double>() == 1.25);
    CHECK(close(aj::var(aj::from_vector<double>({1e6, 0, 0, 0, 0, 0, 0, 0})).item<double>(), 7e12 / 64));
    // inf or NaN in a line: NaN (NumPy's deviations from an inf mean); finite
    // f64 values whose squared deviations overflow: inf, as NumPy.
    const auto lines = aj::var(aj::from_vector<double>({INFINITY, 1, 2, 1.5e308, 0, 1, NAN, 3, 4, -INFINITY, INFINITY, 0},
                                                       aj::Shape{4, 3}), 1).to_vector<double>();
    CHECK(std::isnan(lines[0]));
    CHECK(lines[1] == INFINITY);
    CHECK(std::isnan(lines[2]));
    CHECK(std::isnan(lines[3]));
  });
  CHECK_THROWS_WITH_AS(aj::var(aj::ones({3}), 0, -1.0), doctest::Contains("ddof"), aj::Error);
}

TEST_CASE("statistics: var and std differentiate as the mean of squared deviations (the shift is a constant)") {
  std::mt19937_64 rng(35);
  // Lines of 2 or more (a variance of one element is 0 / 0 with ddof 1, and
  // std's derivative at a zero variance is inf * 0, as JAX's).
  const std::vector<std::pair<ajtest::Dims, int>> cases = {{{5}, 0}, {{3, 4}, 1}, {{3, 4}, 0}, {{2, 3, 4}, 1}, {{4, 1, 3}, 2}, {{4, 1, 3}, -3}};
  for (int s = 0; s < static_cast<int>(cases.size()); ++s) {
    const auto& [d, axis] = cases[static_cast<std::size_t>(s)];
    const double ddof = s % 2;
    ajtest::check_gradient("var " + ajtest::str(d) + " axis " + std::to_string(axis), [axis = axis, ddof](const std::vector<Array>& x) {
      return std::vector<Array>{aj::var(x[0] * 2.0 + 5.0, axis, ddof), aj::std(x[0], aj::Axes::all(), 0.0, true)};
    }, {ajtest::arg(d, rng, -2, 2, s % 3 == 1)}, rng());
  }
  // d var / dx = 2 (x - mean) / (n - ddof), by hand.
  const std::vector<double> g =
      aj::grad([](const Array& x) { return aj::var(x, 0, 1.0); })(aj::from_vector<double>({1, 2, 6})).to_vector<double>();
  CHECK(close(g[0], 2 * (1 - 3.0) / 2));
  CHECK(close(g[1], 2 * (2 - 3.0) / 2));
  CHECK(close(g[2], 2 * (6 - 3.0) / 2));
}

TEST_CASE("statistics: a compiled var at other extents divides by its own count") {
  auto f = aj::compile([](const Array& x) { return aj::var(x, 0, 1.0); });
  for (int n : {5, 9, 2}) {
    CAPTURE(n);
    const auto v = randoms(static_cast<std::size_t>(n), static_cast<unsigned>(n));
    double m = 0, s = 0;
    for (double e : v) m += e;
    m /= n;
    for (double e : v) s += (e - m) * (e - m);
    CHECK(close(f(aj::from_vector(v)).item<double>(), s / (n - 1)));
  }
}

TEST_CASE("statistics: nansum, nanmean, nanmax, nanmin, count_nonzero skip NaN (all-NaN lines as NumPy)") {
  on_both([] {
    const Array x = aj::from_vector<double>({1, NAN, 3, NAN, NAN, NAN, -2, 0, 5}, {3, 3});
    CHECK(aj::nansum(x, 1).to_vector<double>() == std::vector<double>{4, 0, 3});
    const auto mean = aj::nanmean(x, 1).to_vector<double>();
    CHECK(mean[0] == 2.0);
    CHECK(std::isnan(mean[1]));
    CHECK(mean[2] == 1.0);
    const auto mx = aj::nanmax(x, 1).to_vector<double>(), mn = aj::nanmin(x, 1).to_vector<double>();
    CHECK(mx[0] == 3.0);
    CHECK(std::isnan(mx[1]));
    CHECK(mx[2] == 5.0);
    CHECK(mn[0] == 1.0);
    CHECK(std::isnan(mn[1]));
    CHECK(mn[2] == -2.0);
    CHECK(aj::nansum(x).item<double>() == 7.0);
    CHECK(aj::count_nonzero(x, 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 3, 2});
    CHECK(aj::count_nonzero(aj::from_vector<bool>({true, false, true})).item<std::int64_t>() == 2);
    CHECK(aj::nanmax(aj::from_vector<std::int32_t>({3, 9})).item<std::int32_t>() == 9);
  });
}

TEST_CASE("statistics: diff of order n along an axis; bool diff is !=") {
  on_both([] {
    const Array x = aj::from_vector<std::int64_t>({1, 4, 9, 16, 25, 2, 2, 2, 2, 2}, {2, 5});
    CHECK(aj::diff(x).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 5, 7, 9, 0, 0, 0, 0});
    CHECK(aj::diff(x, 2).to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 2, 2, 0, 0, 0});
    CHECK(aj::diff(x, 1, 0).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, -7, -14, -23});
    CHECK(aj::diff(x, 7).shape() == aj::Shape{2, 0});
    CHECK(aj::diff(x, 0).shape() == x.shape());
    CHECK(aj::diff(aj::from_vector<bool>({true, true, false})).to_vector<bool>() == std::vector<bool>{false, true});
  });
  CHECK_THROWS_WITH_AS(aj::diff(aj::ones({3}), -1), doctest::Contains("must not be negative"), aj::Error);
}

TEST_CASE("statistics: isclose, allclose, array_equal (infinities, NaN, shapes)") {
  on_both([] {
    const Array a = aj::from_vector<double>({1.0, 1e10, INFINITY, NAN, 1.0, -INFINITY});
    const Array b = aj::from_vector<double>({1.0 + 1e-9, 1.000001e10, INFINITY, NAN, 1.1, INFINITY});
    CHECK(aj::isclose(a, b).to_vector<bool>() == std::vector<bool>{true, true, true, false, false, false});
    CHECK(aj::isclose(a, b, 1e-5, 1e-8, true).to_vector<bool>() ==
          std::vector<bool>{true, true, true, true, false, false});
    CHECK_FALSE(aj::allclose(a, b).item<bool>());
    CHECK(aj::allclose(aj::from_vector<std::int32_t>({1, 2}), 1.0, 1.0).item<bool>());
    CHECK(aj::array_equal(a, a, true).item<bool>());
    CHECK_FALSE(aj::array_equal(a, a).item<bool>());  // NaN != NaN
    CHECK_FALSE(aj::array_equal(aj::ones({2}), aj::ones({3})).item<bool>());
  });
}

TEST_CASE("statistics: quantile, percentile, median against sorted loops (NaN lines, one element)") {
  on_both([] {
    const int rows = 4, cols = 6;
    auto v = randoms(rows * cols, 3);
    v[7] = NAN;  // row 1
    const Array x = aj::from_vector(v, aj::Shape{rows, cols});
    const auto r = rows_of(v, rows, cols);
    for (double q : {0.0, 0.1, 0.25, 0.5, 0.7, 1.0}) {
      CAPTURE(q);
      const auto got = aj::quantile(x, q, 1).to_vector<double>();
      const auto pct = aj::percentile(x, q * 100, 1, true);
      CHECK(pct.shape() == aj::Shape{rows, 1});
      for (int i = 0; i < rows; ++i) {
        CHECK(close(got[static_cast<std::size_t>(i)], ref_quantile(r[static_cast<std::size_t>(i)], q)));
        CHECK(close(pct.to_vector<double>()[static_cast<std::size_t>(i)], ref_quantile(r[static_cast<std::size_t>(i)], q)));
      }
    }
    const auto med = aj::median(x, 1).to_vector<double>();
    for (int i = 0; i < rows; ++i) {
      auto line = r[static_cast<std::size_t>(i)];
      std::sort(line.begin(), line.end());
      const double want = i == 1 ? NAN : (line[2] + line[3]) / 2;
      CHECK(close(med[static_cast<std::size_t>(i)], want));
    }
    const Array k = aj::from_vector<std::int32_t>({5, 1, 3});
    CHECK(aj::median(k).item<double>() == 3.0);
    CHECK(aj::quantile(k, 0.25).item<double>() == 2.0);
    CHECK(aj::median(aj::from_vector<float>({2.5f})).item<float>() == 2.5f);
  });
  CHECK_THROWS_WITH_AS(aj::quantile(aj::ones({3}), 1.5), doctest::Contains("[0, 1]"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::median(aj::zeros({0})), doctest::Contains("empty axis"), aj::Error);
}

TEST_CASE("statistics: the C functions compute what the C++ ones do") {
  const Array x = aj::from_vector(randoms(12, 9), aj::Shape{3, 4});
  aj_array h = aj::to_c(x), out{0};
  auto same = [&](aj_status s, const Array& want) { ajtest::check_c_result(s, out, want); };
  const int32_t ax = 1;
  same(aj_var(h, &ax, 1, 1.0, 0, &out), aj::var(x, 1, 1.0));
  same(aj_std(h, nullptr, 0, 0.0, 1, &out), aj::std(x, aj::Axes::all(), 0.0, true));
  same(aj_nanmean(h, &ax, 1, 0, &out), aj::nanmean(x, 1));
  same(aj_count_nonzero(h, nullptr, 0, 0, &out), aj::count_nonzero(x).astype(DType::i64));
  same(aj_diff(h, 1, 0, &out), aj::diff(x, 1, 0));
  same(aj_isclose(h, h, 1e-5, 1e-8, 0, &out), aj::isclose(x, x));
  same(aj_allclose(h, h, 1e-5, 1e-8, 0, &out), aj::allclose(x, x));
  same(aj_array_equal(h, h, 0, &out), aj::array_equal(x, x));
  same(aj_quantile(h, 0.3, &ax, 0, &out), aj::quantile(x, 0.3, 1));
  same(aj_percentile(h, 30, nullptr, 0, &out), aj::percentile(x, 30));
  same(aj_median(h, &ax, 1, &out), aj::median(x, 1, true));
  aj_array_release(h);
}

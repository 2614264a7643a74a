// Searching and data-dependent shapes (arrayjit/search.hpp, issue 35 point
// 5) against loops written here from NumPy's definitions (std::lower_bound
// and upper_bound in NumPy's NaN order, counting and compacting by hand), on
// random values with NaN, ties and signed zeros, on the JIT and the
// interpreter; both forms of a result whose length depends on the values
// (evaluated first, and with a static size and fill, inside aj::compile
// too); the C functions; bad arguments are located errors.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/c_result.hpp"
#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using ajtest::on_both;
using I64 = std::vector<std::int64_t>;

// NumPy's sort order: NaN after every number.
bool np_less(double a, double b) {
  if (std::isnan(b)) return !std::isnan(a);
  if (std::isnan(a)) return false;
  return a < b;
}

// Small values with ties, and (`specials`) NaN and signed zeros.
std::vector<double> values(std::size_t n, std::mt19937_64& rng, bool specials) {
  std::vector<double> v(n);
  for (double& x : v) {
    const int u = static_cast<int>(rng() % 20);
    x = static_cast<double>(static_cast<int>(rng() % 15) - 7) / 2;
    if (specials && u == 0) x = NAN;
    if (specials && u == 1) x = -0.0;
  }
  return v;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("searchsorted: left and right positions as lower_bound / upper_bound in NumPy's order, short and long a") {
  std::mt19937_64 rng(351);
  for (std::size_t n : {0, 1, 5, 64, 65, 300}) {
    for (bool specials : {false, true}) {
      std::vector<double> a = values(n, rng, specials);
      std::sort(a.begin(), a.end(), np_less);
      const std::vector<double> v = values(37, rng, specials);
      for (aj::Side side : {aj::Side::left, aj::Side::right}) {
        I64 want;
        for (double x : v) {
          const auto it = side == aj::Side::left ? std::lower_bound(a.begin(), a.end(), x, np_less)
                                                 : std::upper_bound(a.begin(), a.end(), x, np_less);
          want.push_back(it - a.begin());
        }
        CAPTURE(n);
        CAPTURE(specials);
        CAPTURE(side == aj::Side::left);
        on_both([&] {
          const Array va = aj::from_vector(v, Shape{37}), aa = aj::from_vector(a, Shape{static_cast<std::int64_t>(n)});
          const Array r = aj::searchsorted(aa, va, side);
          CHECK(r.dtype() == DType::i64);
          CHECK(r.to_vector<std::int64_t>() == want);
          // v of another shape and dtype (promoted), and a scalar.
          const Array r2 = aj::searchsorted(aa.astype(DType::f32), aj::reshape(va, Shape{37, 1}), side);
          CHECK(r2.shape() == Shape{37, 1});
          CHECK(r2.to_vector<std::int64_t>() == want);
          const Array r0 = aj::searchsorted(aa, v[3], side);
          CHECK(r0.shape() == Shape{});
          CHECK(r0.item<std::int64_t>() == want[3]);
        });
      }
    }
  }
  // Integers against floats compare in the promoted dtype.
  const Array ai = aj::from_vector<std::int64_t>({1, 3, 3, 7});
  CHECK(aj::searchsorted(ai, aj::from_vector<double>({3.0, 3.5, -1, 8})).to_vector<std::int64_t>() == I64{1, 3, 0, 4});
  CHECK(aj::searchsorted(ai, 3, aj::Side::right).item<std::int64_t>() == 3);
  CHECK_THROWS_WITH_AS(aj::searchsorted(aj::zeros({2, 2}), 1.0), doctest::Contains("searchsorted: needs a 1-d"),
                       aj::Error);
}

TEST_CASE("digitize: increasing and decreasing bins, right or not, as NumPy's definition") {
  std::mt19937_64 rng(352);
  for (bool decreasing : {false, true}) {
    for (bool right : {false, true}) {
      std::vector<double> bins = {-2.5, -1, -1, 0, 1.5, 3};
      if (decreasing) std::reverse(bins.begin(), bins.end());
      const std::vector<double> x = values(50, rng, true);
      I64 want;
      const auto nb = static_cast<std::int64_t>(bins.size());
      for (double e : x) {
        // NumPy: increasing, i with bins[i-1] <= x < bins[i] (right: < and <=);
        // decreasing: bins[i-1] > x >= bins[i] (right: >= and >); NaN past the end.
        std::int64_t i = 0;
        if (std::isnan(e)) {
          i = decreasing ? 0 : nb;
        } else if (!decreasing) {
          while (i < nb && (right ? bins[static_cast<std::size_t>(i)] < e : bins[static_cast<std::size_t>(i)] <= e)) ++i;
        } else {
          while (i < nb && (right ? bins[static_cast<std::size_t>(i)] >= e : bins[static_cast<std::size_t>(i)] > e)) ++i;
        }
        want.push_back(i);
      }
      CAPTURE(decreasing);
      CAPTURE(right);
      on_both([&] {
        CHECK(aj::digitize(aj::from_vector(x), aj::from_vector(bins), right).to_vector<std::int64_t>() == want);
      });
    }
  }
  CHECK(aj::digitize(aj::from_vector<double>({0.5, 2}), aj::from_vector<double>({1})).to_vector<std::int64_t>() ==
        I64{0, 1});
}

TEST_CASE("bincount: counts and weight sums, minlength, a static length (values outside dropped), in aj::compile") {
  on_both([] {
    const Array x = aj::from_vector<std::int32_t>({1, 3, 1, 0, 3, 3});
    CHECK(aj::bincount(x).to_vector<std::int64_t>() == I64{1, 2, 0, 3});
    CHECK(aj::bincount(x).dtype() == DType::i64);
    CHECK(aj::bincount(x, std::nullopt, 6).to_vector<std::int64_t>() == I64{1, 2, 0, 3, 0, 0});
    const Array w = aj::from_vector<float>({0.5f, 1, 2, 4, 8, 16});
    const Array ws = aj::bincount(x, w);
    CHECK(ws.dtype() == DType::f64);
    CHECK(ws.to_vector<double>() == std::vector<double>{4, 2.5, 0, 25});
    CHECK(aj::bincount(x, std::nullopt, 0, 2).to_vector<std::int64_t>() == I64{1, 2});
    CHECK(aj::bincount(aj::from_vector<std::int64_t>({-1, 0, 5}), std::nullopt, 0, 3).to_vector<std::int64_t>() ==
          I64{1, 0, 0});
    CHECK(aj::bincount(aj::from_vector<bool>({true, false, true})).to_vector<std::int64_t>() == I64{1, 2});
    CHECK(aj::bincount(aj::zeros({0}, DType::i64), std::nullopt, 3).to_vector<std::int64_t>() == I64{0, 0, 0});
  });
  CHECK_THROWS_WITH_AS(aj::bincount(aj::from_vector<std::int64_t>({2, -3})), doctest::Contains("negative value (-3)"),
                       aj::Error);
  CHECK_THROWS_WITH_AS(aj::bincount(aj::zeros({3})), doctest::Contains("bincount: counts integers"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::bincount(aj::from_vector<std::int64_t>({1}), aj::zeros({2})),
                       doctest::Contains("weights of x's shape"), aj::Error);
  // Inside a compiled function only the static form traces; each call counts its own values.
  auto f = aj::compile([](const Array& v) { return aj::bincount(v, std::nullopt, 0, 4); });
  CHECK(f(aj::from_vector<std::int64_t>({0, 0, 2})).to_vector<std::int64_t>() == I64{2, 0, 1, 0});
  CHECK(f(aj::from_vector<std::int64_t>({3, 1, 3})).to_vector<std::int64_t>() == I64{0, 1, 0, 2});
  auto g = aj::compile([](const Array& v) { return aj::bincount(v); });
  CHECK_THROWS_WITH_AS(g(aj::from_vector<std::int64_t>({1})), doctest::Contains("give length"), aj::Error);
}

TEST_CASE("nonzero and argwhere: row-major positions, every rank, evaluated or with a static size and fill") {
  std::mt19937_64 rng(353);
  for (int round = 0; round < 30; ++round) {
    const int rank = round % 4;
    std::vector<std::int64_t> dims;
    for (int k = 0; k < rank; ++k) dims.push_back(static_cast<std::int64_t>(rng() % 4));
    std::int64_t n = 1;
    for (auto e : dims) n *= e;
    const std::vector<double> v = values(static_cast<std::size_t>(n), rng, true);
    std::vector<double> sparse = v;
    for (double& e : sparse) e = rng() % 3 ? 0.0 : e;  // mostly zeros; NaN counts as nonzero
    const Array x = aj::from_vector(sparse, Shape(dims));
    // By hand: the flat positions of the nonzero elements, unravelled.
    I64 pos;
    for (std::int64_t i = 0; i < n; ++i) {
      if (sparse[static_cast<std::size_t>(i)] != 0.0) pos.push_back(i);
    }
    const std::vector<std::int64_t> shape = rank == 0 ? std::vector<std::int64_t>{1} : dims;
    auto coord = [&](std::int64_t p, std::size_t k) {
      std::int64_t stride = 1;
      for (std::size_t j = k + 1; j < shape.size(); ++j) stride *= shape[j];
      return (p / stride) % shape[k];
    };
    CAPTURE(Shape(dims).str());
    on_both([&] {
      const std::vector<Array> nz = aj::nonzero(x);
      REQUIRE(nz.size() == shape.size());
      for (std::size_t k = 0; k < shape.size(); ++k) {
        I64 want;
        for (auto p : pos) want.push_back(coord(p, k));
        CHECK(nz[k].to_vector<std::int64_t>() == want);
      }
      const Array aw = aj::argwhere(x);
      CHECK(aw.shape() == Shape{static_cast<std::int64_t>(pos.size()), rank == 0 ? 0 : rank});
      // A static size: cut or filled.
      for (std::int64_t size : {std::int64_t{0}, std::int64_t{2}, static_cast<std::int64_t>(pos.size()) + 3}) {
        const std::vector<Array> sz = aj::nonzero(x, size, -1);
        for (std::size_t k = 0; k < shape.size(); ++k) {
          I64 want;
          for (std::int64_t i = 0; i < size; ++i) {
            want.push_back(i < static_cast<std::int64_t>(pos.size()) ? coord(pos[static_cast<std::size_t>(i)], k) : -1);
          }
          CHECK(sz[k].to_vector<std::int64_t>() == want);
        }
        if (rank > 0) {
          const Array as = aj::argwhere(x, size, -1);
          CHECK(as.shape() == Shape{size, rank});
          const I64 got = as.to_vector<std::int64_t>();
          for (std::int64_t i = 0; i < size; ++i) {
            for (std::size_t k = 0; k < shape.size(); ++k) {
              CHECK(got[static_cast<std::size_t>(i * rank) + k] == sz[k].to_vector<std::int64_t>()[static_cast<std::size_t>(i)]);
            }
          }
        }
      }
    });
  }
  CHECK_THROWS_WITH_AS(aj::nonzero(aj::ones({2}), -1), doctest::Contains("nonzero: size must not be negative"),
                       aj::Error);
}

TEST_CASE("unique: sorted distinct values (NaNs as one, zeros as one), evaluated or with a static size, in aj::compile") {
  std::mt19937_64 rng(354);
  for (int round = 0; round < 20; ++round) {
    const std::vector<double> v = values(static_cast<std::size_t>(rng() % 40), rng, round % 2 == 0);
    std::vector<double> want = v;
    std::sort(want.begin(), want.end(), np_less);
    want.erase(std::unique(want.begin(), want.end(), [](double a, double b) { return same(a, b); }), want.end());
    on_both([&] {
      const Array x = aj::from_vector(v, Shape{static_cast<std::int64_t>(v.size())});
      const std::vector<double> got = aj::unique(aj::reshape(x, Shape{-1, 1})).to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(same(got[i], want[i]));
      const std::vector<double> cut = aj::unique(x, 3, 99.0).to_vector<double>();
      REQUIRE(cut.size() == 3);
      for (std::size_t i = 0; i < 3; ++i) CHECK(same(cut[i], i < want.size() ? want[i] : 99.0));
    });
  }
  CHECK(aj::unique(aj::from_vector<std::int32_t>({3, 1, 3, -2})).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{-2, 1, 3});
  CHECK(aj::unique(aj::from_vector<bool>({true, true})).to_vector<bool>() == std::vector<bool>{true});
  auto f = aj::compile([](const Array& x) { return aj::unique(x, 4, -1); });
  CHECK(f(aj::from_vector<std::int64_t>({5, 2, 5})).to_vector<std::int64_t>() == I64{2, 5, -1, -1});
  CHECK(f(aj::from_vector<std::int64_t>({9, 8, 7, 6, 5})).to_vector<std::int64_t>() == I64{5, 6, 7, 8});
}

TEST_CASE("masked_select: x where a broadcast mask holds, row-major; static size; differentiable") {
  on_both([] {
    const Array x = aj::from_vector<double>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const Array row = aj::from_vector<bool>({true, false, true}, Shape{3});
    CHECK(aj::masked_select(x, row).to_vector<double>() == std::vector<double>{1, 3, 4, 6});
    CHECK(aj::masked_select(x, row, 6, -1.0).to_vector<double>() == std::vector<double>{1, 3, 4, 6, -1, -1});
    CHECK(aj::masked_select(x, x > 2.5, 2).to_vector<double>() == std::vector<double>{3, 4});
    // The selected elements get the cotangent of their place, the rest 0.
    const Array g = aj::grad([&row](const Array& a) {
      return aj::sum(aj::masked_select(a, row, 3) * aj::from_vector<double>({10, 20, 30}));
    })(x);
    CHECK(g.to_vector<double>() == std::vector<double>{10, 0, 20, 30, 0, 0});
  });
  CHECK_THROWS_WITH_AS(aj::masked_select(aj::ones({3}), aj::ones({3})), doctest::Contains("needs a bool mask"),
                       aj::Error);
  CHECK_THROWS_WITH_AS(aj::masked_select(aj::ones({3}), aj::ones({2}, DType::bool_)), doctest::Contains("broadcast"),
                       aj::Error);
}

TEST_CASE("search: the C functions compute what the C++ ones do") {
  const Array a = aj::from_vector<double>({-1, 0.5, 0.5, 2, 7});
  const Array v = aj::from_vector<double>({0.5, 3, -4, 0, 7, 0.5, 2, 2}, Shape{2, 4});
  const Array k = aj::from_vector<std::int64_t>({2, 0, 2, 5, 1});
  aj_array ha = aj::to_c(a), hv = aj::to_c(v), hk = aj::to_c(k), out{0};
  auto same_as = [&](aj_status s, const Array& want) { ajtest::check_c_result(s, out, want); };
  const std::int64_t size = 5, length = 4;
  same_as(aj_searchsorted(ha, hv, 1, &out), aj::searchsorted(a, v, aj::Side::right));
  same_as(aj_digitize(hv, ha, 0, &out), aj::digitize(v, a));
  same_as(aj_bincount(hk, aj_array{0}, 0, nullptr, &out), aj::bincount(k));
  same_as(aj_bincount(hk, ha, 0, &length, &out), aj::bincount(k, a, 0, 4));
  same_as(aj_argwhere(hv, &size, -1, &out), aj::argwhere(v, 5, -1));
  same_as(aj_unique(hv, nullptr, 0, &out), aj::unique(v));
  const Array m = v > 0.4;
  aj_array hm = aj::to_c(m);
  same_as(aj_masked_select(hv, hm, &size, -2, &out), aj::masked_select(v, m, 5, -2.0));
  CHECK(aj_bincount(hk, hv, 0, nullptr, &out) != AJ_OK);  // weights of another shape
  CHECK(std::string(aj_last_error()).find("aj_bincount") != std::string::npos);
  for (aj_array h : {ha, hv, hk, hm}) aj_array_release(h);
}

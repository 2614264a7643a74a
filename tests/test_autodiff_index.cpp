// Derivatives of the scans, sorting and indexing ops (core/autodiff/rules_index.cpp):
// every public op built on them against central differences in f64 and forward
// mode against reverse mode (tests/autodiff_check.hpp), over random shapes with
// size-1 (and size-0) axes and random indices, negative, duplicated and out of
// range; the documented choices (sort ties, scatter's winner, dropped and
// clamped indices, cumprod at zeros) against values worked out by hand; take
// and scatter_add as each other's transposes; and the embedding gradient as
// one scatter_add into the table.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <random>
#include <string>
#include <vector>

#include "tests/autodiff_check.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using ajtest::Arg;
using ajtest::arg;
using ajtest::check_gradient;
using ajtest::Dims;
using ajtest::numel;
using ajtest::random_dims;
using ajtest::str;

using Fn1 = std::function<Array(const Array&)>;
std::vector<Array> one(const Array& a) { return {a}; }

// Random indices for an axis of extent n: mostly in [-n, n) (negative ones
// count from the end), duplicates likely, and with `out_of_range` some
// outside (gathers clamp them, scatters drop them).
std::vector<std::int64_t> random_indices(std::int64_t count, std::int64_t n, std::mt19937_64& rng, bool out_of_range) {
  std::vector<std::int64_t> v;
  for (std::int64_t k = 0; k < count; ++k) {
    const int u = static_cast<int>(rng() % 10);
    if (out_of_range && u == 0) v.push_back(n + static_cast<std::int64_t>(rng() % 3));
    else if (out_of_range && u == 1) v.push_back(-n - 1 - static_cast<std::int64_t>(rng() % 3));
    else v.push_back(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * n)) - n);
  }
  return v;
}

Array index_array(const std::vector<std::int64_t>& v, const Dims& d, bool i32) {
  Array a = aj::from_vector(v, Shape(d));
  return i32 ? a.astype(DType::i32) : a;
}

std::vector<double> vals(const Array& a) { return a.to_vector<double>(); }

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("autodiff index: cumsum and cumprod along every axis, cumprod with zeros") {
  std::mt19937_64 rng(31);
  for (int s = 0; s < 12; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    const int r = static_cast<int>(d.size());
    const int axis = static_cast<int>(rng() % static_cast<std::uint64_t>(r)) - (s % 2 ? r : 0);  // negative too
    const bool flat = s % 5 == 4;
    auto axis_of = [&]() -> std::optional<int> { return flat ? std::nullopt : std::optional<int>(axis); };
    const std::string where = str(d) + (flat ? " flattened" : " axis " + std::to_string(axis));
    check_gradient("cumsum " + where, [ax = axis_of()](const std::vector<Array>& x) {
      return one(aj::cumsum(x[0] * x[0], ax));
    }, {arg(d, rng, -2, 2, s % 3 == 1)}, rng());
    check_gradient("cumprod " + where, [ax = axis_of()](const std::vector<Array>& x) {
      return one(aj::cumprod(x[0], ax));
    }, {arg(d, rng, -1.5, 1.5, s % 3 == 2)}, rng());
    // Exact zeros: none, one or several per line (cumprod is multilinear in
    // each element, so central differences are exact there too).
    Arg z = arg(d, rng, -1.5, 1.5);
    for (auto& v : z.values) {
      if (rng() % 3 == 0) v = 0.0;
    }
    check_gradient("cumprod with zeros " + where, [ax = axis_of()](const std::vector<Array>& x) {
      return one(aj::cumprod(x[0], ax));
    }, {z}, rng());
    // second order (the rule is built from differentiable ops)
    check_gradient("grad of cumprod with zeros " + where, [ax = axis_of()](const std::vector<Array>& x) {
      return one(aj::grad([ax](const Array& a) { return aj::sum(aj::cumprod(a, ax) * aj::cumprod(a, ax)); })(x[0]));
    }, {z}, rng());
  }
}

TEST_CASE("autodiff index: cumprod at zeros, by hand") {
  // x = [2, 0, 3]: y = [2, 0, 0]; d sum(y) = [1 + x1 + x1 x2, x0 + x0 x2, x0 x1] = [1, 8, 0]
  check_close(vals(aj::grad([](const Array& x) { return aj::sum(aj::cumprod(x)); })(aj::from_vector(std::vector<double>{2, 0, 3}))),
              {1, 8, 0});
  // two zeros: only the first one's own terms survive, up to the second
  check_close(vals(aj::grad([](const Array& x) { return aj::sum(aj::cumprod(x)); })(aj::from_vector(std::vector<double>{0, 4, 0, 5}))),
              {1 + 4, 0, 0, 0});
}

TEST_CASE("autodiff index: cummax, cummin and logcumsumexp along every axis, to the second order") {
  std::mt19937_64 rng(33);
  for (int s = 0; s < 12; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    const int r = static_cast<int>(d.size());
    const int axis = static_cast<int>(rng() % static_cast<std::uint64_t>(r)) - (s % 2 ? r : 0);
    const bool flat = s % 5 == 4;
    const std::optional<int> ax = flat ? std::nullopt : std::optional<int>(axis);
    const std::string where = str(d) + (flat ? " flattened" : " axis " + std::to_string(axis));
    // Continuous random values: no ties within the differences' step.
    check_gradient("cummax " + where, [ax](const std::vector<Array>& x) {
      return one(aj::cummax(x[0] * 3.0, ax));
    }, {arg(d, rng, -2, 2, s % 3 == 1)}, rng());
    check_gradient("cummin " + where, [ax](const std::vector<Array>& x) {
      return one(aj::cummin(aj::sin(x[0]), ax));
    }, {arg(d, rng, -2, 2)}, rng());
    check_gradient("logcumsumexp " + where, [ax](const std::vector<Array>& x) {
      return one(aj::logcumsumexp(x[0] * 2.0, ax));
    }, {arg(d, rng, -3, 3, s % 3 == 2)}, rng());
    check_gradient("grad of logcumsumexp " + where, [ax](const std::vector<Array>& x) {
      return one(aj::grad([ax](const Array& a) {
        return aj::sum(aj::logcumsumexp(a, ax) * aj::cos(ax ? a : aj::reshape(a, Shape{-1})));
      })(x[0]));
    }, {arg(d, rng, -3, 3)}, rng());
  }
}

TEST_CASE("autodiff index: cummax ties go to the later position, NaN keeps its place; logcumsumexp where exp overflows") {
  auto gsum = [](Array (*f)(const Array&, std::optional<int>, aj::Loc), std::vector<double> v) {
    return vals(aj::grad([f](const Array& x) { return aj::sum(f(x, std::nullopt, aj::Loc::current())); })(
        aj::from_vector(v)));
  };
  // y = [1, 3, 3, 3] taken from positions [0, 1, 2, 2] (PyTorch's cummax indices).
  check_close(gsum(aj::cummax, {1, 3, 3, 2}), {1, 1, 2, 0});
  check_close(gsum(aj::cummin, {4, 2, 5, 2, 1}), {1, 2, 0, 1, 1});
  // NaN propagates: every later y is that NaN, taken from it.
  check_close(gsum(aj::cummax, {1, NAN, 5}), {1, 2, 0});
  // y = [1000, 1000 + log 2]: dy1/dx = [1/2, 1/2]; no overflow on the way.
  check_close(gsum(aj::logcumsumexp, {1000, 1000}), {1.5, 0.5});
  check_close(gsum(aj::logcumsumexp, {-1000, 0}), {1 + std::exp(-1000.0), 1});
  // Negative and positive cotangents: d/dx sum(c * y) = [c0 + c1 s, c1 (1 - s)], s = e^x0 / (e^x0 + e^x1).
  const Array c = aj::from_vector(std::vector<double>{-2.0, 3.0});
  const std::vector<double> g = vals(aj::grad([&c](const Array& x) { return aj::sum(c * aj::logcumsumexp(x)); })(
      aj::from_vector(std::vector<double>{0.25, -0.5})));
  const double sw = std::exp(0.25) / (std::exp(0.25) + std::exp(-0.5));
  check_close(g, {-2.0 + 3.0 * sw, 3.0 * (1 - sw)});
  // A line still at -inf passes nothing back (not NaN).
  const std::vector<double> z = gsum(aj::logcumsumexp, {-INFINITY, 0.0});
  CHECK(z[0] == 0.0);
  CHECK(z[1] == 1.0);
}

TEST_CASE("autodiff index: sort and topk along every axis") {
  std::mt19937_64 rng(32);
  for (int s = 0; s < 12; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    const int r = static_cast<int>(d.size());
    const int axis = static_cast<int>(rng() % static_cast<std::uint64_t>(r)) - (s % 2 ? r : 0);
    const int ax = axis < 0 ? axis + r : axis;
    const std::int64_t k = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(d[static_cast<std::size_t>(ax)] + 1));
    check_gradient("sort " + str(d) + " axis " + std::to_string(axis), [axis](const std::vector<Array>& x) {
      return one(aj::sort(aj::sin(x[0]) * 2.0, axis));
    }, {arg(d, rng, -2, 2, s % 3 == 1)}, rng());
    check_gradient("topk " + std::to_string(k) + " of " + str(d) + " axis " + std::to_string(axis),
                   [axis, k](const std::vector<Array>& x) { return one(aj::topk(x[0], k, axis).values * 3.0); },
                   {arg(d, rng, -2, 2, s % 3 == 2)}, rng());
  }
}

TEST_CASE("autodiff index: sort and topk ties, by hand") {
  // Each element gets the cotangent of the place the (stable) sort puts it:
  // x = [1, 1, 0] sorts to x2, x0, x1.
  const Array w = aj::from_vector(std::vector<double>{10, 20, 30});
  const Array x = aj::from_vector(std::vector<double>{1, 1, 0});
  check_close(vals(aj::grad([&](const Array& a) { return aj::sum(aj::sort(a) * w); })(x)), {20, 30, 10});
  // topk: the largest first, ties by the lower position: [x0, x1] of [1, 1, 0]
  const Array w2 = aj::from_vector(std::vector<double>{10, 20});
  check_close(vals(aj::grad([&](const Array& a) { return aj::sum(aj::topk(a, 2).values * w2); })(x)), {10, 20, 0});
}

TEST_CASE("autodiff index: take and take_along_axis with negative, repeated and out-of-range indices") {
  std::mt19937_64 rng(33);
  for (int s = 0; s < 16; ++s) {
    const Dims d = random_dims(rng, 1, 3, false);
    const int r = static_cast<int>(d.size());
    const int axis = static_cast<int>(rng() % static_cast<std::uint64_t>(r));
    const std::int64_t n = d[static_cast<std::size_t>(axis)];
    // take: index arrays of rank 0-2 (rank >= 2 reads a broadcast view of the table)
    Dims id;
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) id.push_back(1 + static_cast<std::int64_t>(rng() % 3));
    const Array idx = index_array(random_indices(numel(id), n, rng, true), id, s % 2);
    check_gradient("take " + str(id) + " from " + str(d) + " axis " + std::to_string(axis), [idx, axis](const std::vector<Array>& x) {
      return one(aj::exp(aj::take(x[0], idx, axis)));
    }, {arg(d, rng, -2, 2, s % 4 == 1)}, rng());
    if (s % 4 == 0) {  // the flattened form
      const Array fi = index_array(random_indices(5, numel(d), rng, true), {5}, false);
      check_gradient("take flat of " + str(d), [fi](const std::vector<Array>& x) {
        return one(aj::take(x[0], fi) * aj::take(x[0], fi));
      }, {arg(d, rng)}, rng());
    }
    // take_along_axis: indices of a's rank, broadcasting both ways off the axis
    Dims td = d, ad = d;
    td[static_cast<std::size_t>(axis)] = 1 + static_cast<std::int64_t>(rng() % 4);
    for (int k = 0; k < r; ++k) {
      if (k == axis) continue;
      const int u = static_cast<int>(rng() % 4);
      if (u == 0) td[static_cast<std::size_t>(k)] = 1;
      if (u == 1 && td[static_cast<std::size_t>(k)] > 1) ad[static_cast<std::size_t>(k)] = 1;  // a broadcast
    }
    const Array ti = index_array(random_indices(numel(td), n, rng, true), td, s % 3 == 0);
    check_gradient("take_along_axis " + str(td) + " of " + str(ad) + " axis " + std::to_string(axis),
                   [ti, axis](const std::vector<Array>& x) { return one(aj::take_along_axis(x[0], ti, axis) * 1.5); },
                   {arg(ad, rng)}, rng());
  }
}

TEST_CASE("autodiff index: scatter_add and scatter, duplicates and dropped indices, both operands") {
  std::mt19937_64 rng(34);
  for (int s = 0; s < 16; ++s) {
    const Dims d = random_dims(rng, 1, 3, false);
    const int r = static_cast<int>(d.size());
    const int axis = static_cast<int>(rng() % static_cast<std::uint64_t>(r));
    const std::int64_t n = d[static_cast<std::size_t>(axis)];
    Dims id;
    for (int k = 1 + static_cast<int>(rng() % 2); k > 0; --k) id.push_back(1 + static_cast<std::int64_t>(rng() % 4));
    Dims ud(d.begin(), d.begin() + axis);
    ud.insert(ud.end(), id.begin(), id.end());
    ud.insert(ud.end(), d.begin() + axis + 1, d.end());
    Dims ub = ud;  // updates that broadcast
    if (rng() % 3 == 0) ub.erase(ub.begin());
    else if (!ub.empty() && rng() % 2) ub.back() = 1;
    const Array idx = index_array(random_indices(numel(id), n, rng, true), id, s % 2);
    const std::string where = str(ub) + " at " + str(id) + " into " + str(d) + " axis " + std::to_string(axis);
    check_gradient("scatter_add " + where, [idx, axis](const std::vector<Array>& x) {
      return one(aj::scatter_add(x[0] * x[0], idx, aj::sin(x[1]), axis));
    }, {arg(d, rng, -2, 2, s % 4 == 1), arg(ub, rng)}, rng());
    check_gradient("scatter " + where, [idx, axis](const std::vector<Array>& x) {
      return one(aj::scatter(x[0], idx, x[1] * 2.0, axis) * 1.5);
    }, {arg(d, rng), arg(ub, rng, -2, 2, s % 4 == 2)}, rng());
    // the along-axis forms
    Dims ad = d;
    ad[static_cast<std::size_t>(axis)] = 1 + static_cast<std::int64_t>(rng() % 4);
    const Array ai = index_array(random_indices(numel(ad), n, rng, true), ad, false);
    check_gradient("scatter_add_along_axis " + str(ad) + " into " + str(d), [ai, axis](const std::vector<Array>& x) {
      return one(aj::scatter_add_along_axis(x[0], ai, x[1], axis));
    }, {arg(d, rng), arg(ad, rng)}, rng());
    check_gradient("put_along_axis " + str(ad) + " into " + str(d), [ai, axis](const std::vector<Array>& x) {
      return one(aj::put_along_axis(x[0], ai, x[1], axis));
    }, {arg(d, rng), arg(ad, rng)}, rng());
  }
}

TEST_CASE("autodiff index: scatter's winner, dropped updates and clamped gathers, by hand") {
  const Array a = aj::from_vector(std::vector<double>{1, 2, 3});
  const Array w = aj::from_vector(std::vector<double>{10, 20, 30});
  const Array idx = aj::from_vector(std::vector<std::int64_t>{1, -2, 7, 0});  // 1 twice (the second wins), 7 dropped
  const Array upd = aj::from_vector(std::vector<double>{5, 6, 7, 8});
  auto set = [&](const Array& x, const Array& u) { return aj::sum(aj::scatter(x, idx, u) * w); };
  auto g = aj::grad(set, {0, 1})(a, upd);
  check_close(vals(g[0]), {0, 0, 30});      // written positions get nothing
  check_close(vals(g[1]), {0, 20, 0, 10});  // the loser and the dropped update get 0
  auto add = [&](const Array& x, const Array& u) { return aj::sum(aj::scatter_add(x, idx, u) * w); };
  auto h = aj::grad(add, {0, 1})(a, upd);
  check_close(vals(h[0]), {10, 20, 30});
  check_close(vals(h[1]), {20, 20, 0, 10});
  // take clamps: -1 is the last element, 7 and -9 clamp to the ends
  const Array ti = aj::from_vector(std::vector<std::int64_t>{-1, 7, -9, 0});
  check_close(vals(aj::grad([&](const Array& x) { return aj::sum(aj::take(x, ti) * aj::arange(1.0, 5.0, 1.0, DType::f64)); })(a)),
              {3 + 4, 0, 1 + 2});
}

TEST_CASE("autodiff index: take and scatter_add are each other's transposes") {
  // vjp(take(., idx)) at g == scatter_add(zeros, idx, g), and vjp of
  // scatter_add's updates at g == take(g, idx) where idx is in range.
  std::mt19937_64 rng(35);
  for (int s = 0; s < 8; ++s) {
    const Dims d = random_dims(rng, 1, 3, false);
    const int axis = static_cast<int>(rng() % d.size());
    const std::int64_t n = d[static_cast<std::size_t>(axis)];
    const Dims id{1 + static_cast<std::int64_t>(rng() % 5)};
    const std::vector<std::int64_t> iv = random_indices(id[0], n, rng, false);
    const Array idx = aj::from_vector(iv);
    const Array x = aj::from_vector(ajtest::normal_values(static_cast<std::size_t>(numel(d)), rng), Shape(d));
    const Array t = aj::take(x, idx, axis);
    const Array g = aj::from_vector(ajtest::normal_values(static_cast<std::size_t>(t.size()), rng), t.shape());
    auto [y, ct] = aj::vjp([&](const Array& a) { return aj::take(a, idx, axis); }, x, g);
    check_close(vals(ct), vals(aj::scatter_add(aj::zeros_like(x), idx, g, axis)));
    auto [z, cu] = aj::vjp([&](const Array& u) { return aj::scatter_add(x, idx, u, axis); }, g, x);
    check_close(vals(cu), vals(aj::take(x, idx, axis)));
  }
}

TEST_CASE("autodiff index: pad, slice_update, slice_add and roll") {
  std::mt19937_64 rng(36);
  for (int s = 0; s < 12; ++s) {
    const Dims d = random_dims(rng, 1, 3);
    const int r = static_cast<int>(d.size());
    std::vector<aj::PadWidth> widths;
    for (int k = 0; k < r; ++k) widths.emplace_back(static_cast<std::int64_t>(rng() % 3), static_cast<std::int64_t>(rng() % 3));
    const bool empty = numel(d) == 0;
    for (aj::PadMode mode : {aj::PadMode::constant, aj::PadMode::edge, aj::PadMode::reflect}) {
      if (empty && mode != aj::PadMode::constant) continue;
      check_gradient("pad " + str(d) + " mode " + std::to_string(static_cast<int>(mode)), [widths, mode](const std::vector<Array>& x) {
        return one(aj::pad(x[0] * x[0], widths, mode, 0.5));
      }, {arg(d, rng, -2, 2, s % 3 == 1)}, rng());
    }
    // a slice (steps, negative steps) updated with values that broadcast
    std::vector<aj::Slice> sl;
    Dims vd;
    for (int k = 0; k < r; ++k) {
      const std::int64_t e = d[static_cast<std::size_t>(k)];
      static const std::int64_t steps[] = {1, 2, -1, -2};
      const std::int64_t step = steps[rng() % 4];
      sl.emplace_back(std::nullopt, std::nullopt, step);
      vd.push_back(e == 0 ? 0 : (e + std::abs(step) - 1) / std::abs(step));
    }
    if (!vd.empty() && rng() % 3 == 0) vd.back() = std::min<std::int64_t>(vd.back(), 1);
    check_gradient("slice_update " + str(vd) + " into " + str(d), [sl](const std::vector<Array>& x) {
      return one(aj::slice_update(x[0], sl, aj::tanh(x[1])) * 2.0);
    }, {arg(d, rng), arg(vd, rng)}, rng());
    check_gradient("slice_add " + str(vd) + " into " + str(d), [sl](const std::vector<Array>& x) {
      return one(aj::slice_add(x[0] * x[0], sl, x[1]));
    }, {arg(d, rng, -2, 2, true), arg(vd, rng)}, rng());
    const std::int64_t shift = static_cast<std::int64_t>(rng() % 7) - 3;
    check_gradient("roll " + str(d) + " by " + std::to_string(shift), [shift, r](const std::vector<Array>& x) {
      return std::vector<Array>{aj::roll(x[0], shift, r - 1) * aj::sin(x[0]), aj::roll(x[0], shift)};
    }, {arg(d, rng)}, rng());
  }
}

TEST_CASE("autodiff index: second order through take, scatter_add, sort and pad") {
  std::mt19937_64 rng(37);
  const Array idx = aj::from_vector(std::vector<std::int64_t>{2, 0, -1, 2, 1});
  check_gradient("grad of take", [idx](const std::vector<Array>& x) {
    return one(aj::grad([&](const Array& a) { return aj::sum(aj::pow(aj::take(a, idx, 1), 3)); })(x[0]));
  }, {arg({2, 3}, rng)}, rng());
  check_gradient("grad of scatter_add", [idx](const std::vector<Array>& x) {
    return one(aj::grad([&](const Array& u) {
      Array s = aj::scatter_add(aj::zeros({3}, DType::f64), idx, u * u);
      return aj::sum(s * s);
    })(x[0]));
  }, {arg({5}, rng)}, rng());
  check_gradient("grad of sort", [](const std::vector<Array>& x) {
    return one(aj::grad([](const Array& a) { return aj::sum(aj::sort(a * a) * aj::arange(1.0, 7.0, 1.0, DType::f64)); })(x[0]));
  }, {arg({6}, rng)}, rng());
  check_gradient("grad of pad", [](const std::vector<Array>& x) {
    return one(aj::grad([](const Array& a) { return aj::sum(aj::exp(aj::pad(a, {{1, 2}}, aj::PadMode::reflect))); })(x[0]));
  }, {arg({4}, rng)}, rng());
}

TEST_CASE("autodiff index: with AJ_DEBUG on, the rules' indices are never evaluated inside f") {
  aj::set_debug(true);
  const Array x = aj::from_vector(std::vector<double>{1, 2, 3, 4});
  const Array idx = aj::from_vector(std::vector<std::int64_t>{3, -1, 0});
  Array g;
  CHECK_NOTHROW(g = aj::grad([&](const Array& a) {
    const Array first3 = aj::slice(aj::sort(a), 0, 0, 3);
    return aj::sum(aj::take(a, idx) * first3) + aj::sum(aj::slice(aj::topk(a, 2).values, 0, 0, 1));
  })(x));
  aj::set_debug(false);
  // f = x3 x0 + x3 x1 + x0 x2 + x3 (take gives x3, x3, x0; the sorted first
  // three are x0, x1, x2; topk's first is x3)
  check_close(vals(g), {4 + 3, 4, 1, 1 + 2 + 1});
}

TEST_CASE("autodiff index: an embedding's gradient is one scatter_add into the table, not into a broadcast") {
  // take(table, ids[B, L]) reads the table through a view broadcast over L;
  // the gradient folds L into the scatter instead of summing a [V, L, D] array.
  constexpr std::int64_t V = 50, L = 7, D = 3, B = 4;
  std::mt19937_64 rng(38);
  std::vector<std::int64_t> ids;
  for (int k = 0; k < B * L; ++k) ids.push_back(static_cast<std::int64_t>(rng() % V));
  const Array tokens = aj::from_vector(ids, {B, L});
  const Array table = aj::from_vector(ajtest::normal_values(V * D, rng), {V, D});
  const Array w = aj::from_vector(ajtest::normal_values(B * L * D, rng), {B, L, D});
  const Array g = aj::grad([&](const Array& t) { return aj::sum(aj::take(t, tokens, 0) * w); })(table);
  const std::string plan = aj::explain(g);
  INFO(plan);
  CHECK(plan.find("scatter_add") != std::string::npos);
  CHECK(plan.find("[50, 7, 3]") == std::string::npos);
  std::vector<double> want(V * D, 0.0);
  const std::vector<double> wv = vals(w);
  for (int k = 0; k < B * L; ++k) {
    for (int j = 0; j < D; ++j) want[static_cast<std::size_t>(ids[static_cast<std::size_t>(k)] * D + j)] += wv[static_cast<std::size_t>(k * D + j)];
  }
  check_close(vals(g), want);
}

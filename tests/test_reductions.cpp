// Reductions: sum, prod, mean, max, min, all, any, argmax, argmin.
// Every expected value is computed here with plain loops over the same inputs
// (never through arrayjit), or written out by hand.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>
#include "tests/random_data.hpp"

namespace {

using aj::DType;
using Dims = std::vector<std::int64_t>;

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto e : d) n *= e;
  return n;
}

// Random non-zero values of type T. `small` keeps magnitudes near 1 (for prod).
template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed, bool small = false) {
  return small ? ajtest::random_magnitudes<T>(n, seed, 0.5, 2.0) : ajtest::random_magnitudes<T>(n, seed, 0.25, 9.0);
}

template <class T>
aj::Array make(const std::vector<T>& v, const Dims& dims) {
  return aj::from_vector(v, aj::Shape(dims));
}

// The shape left after reducing `axes` (non-negative) of `dims`.
Dims reduced_dims(const Dims& dims, const std::vector<int>& axes, bool keepdims = false) {
  Dims out;
  for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
    bool r = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!r) out.push_back(dims[static_cast<std::size_t>(d)]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

// Reference reduction: walk the input in row-major order, fold each element
// into the output slot its non-reduced coordinates name.
template <class A, class T, class F>
std::vector<A> ref_reduce(const std::vector<T>& x, const Dims& dims, const std::vector<int>& axes,
                          A init, F combine) {
  Dims od = reduced_dims(dims, axes);
  std::vector<A> out(static_cast<std::size_t>(numel(od)), init);
  const int nd = static_cast<int>(dims.size());
  Dims idx(dims.size(), 0);
  for (std::int64_t flat = 0; flat < numel(dims); ++flat) {
    std::int64_t rem = flat;
    for (int d = nd - 1; d >= 0; --d) {
      idx[static_cast<std::size_t>(d)] = rem % dims[static_cast<std::size_t>(d)];
      rem /= dims[static_cast<std::size_t>(d)];
    }
    std::int64_t o = 0;
    for (int d = 0; d < nd; ++d) {
      if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;
      o = o * dims[static_cast<std::size_t>(d)] + idx[static_cast<std::size_t>(d)];
    }
    out[static_cast<std::size_t>(o)] = combine(out[static_cast<std::size_t>(o)],
                                               static_cast<T>(x[static_cast<std::size_t>(flat)]));
  }
  return out;
}

// Compare a float result with a reference computed in double.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(rel));
  }
}

template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <class T>
constexpr DType sum_dtype() {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int32_t>) return DType::i64;
  else return aj::dtype_of<T>;
}

// Check an arrayjit sum/prod result of input type T against a reference in
// the accumulation type (i64 for integers and bool, double for floats).
template <class T>
void check_sum_like(const aj::Array& r, const std::vector<T>& x, const Dims& dims,
                    const std::vector<int>& axes, bool is_prod) {
  CHECK(r.dtype() == sum_dtype<T>());
  CHECK(r.shape() == aj::Shape(reduced_dims(dims, axes)));
  if constexpr (std::is_floating_point_v<T>) {
    auto want = ref_reduce<double>(x, dims, axes, is_prod ? 1.0 : 0.0,
                                   [&](double a, T v) { return is_prod ? a * v : a + v; });
    check_close(r.to_vector<double>(), want, tol<T>());
  } else {
    auto want = ref_reduce<std::int64_t>(x, dims, axes, is_prod ? 1 : 0, [&](std::int64_t a, T v) {
      return is_prod ? a * static_cast<std::int64_t>(v) : a + static_cast<std::int64_t>(v);
    });
    CHECK(r.to_vector<std::int64_t>() == want);
  }
}

const std::vector<std::vector<int>> kAxisSets = {{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};

}  // namespace

TEST_SUITE("reductions") {

TEST_CASE_TEMPLATE("sum over every axis subset of a 3-d array matches a hand loop", T, bool,
                   std::int32_t, std::int64_t, float, double) {
  const Dims dims{3, 4, 5};
  auto x = random_values<T>(60, 11);
  aj::Array a = make(x, dims);
  for (const auto& axes : kAxisSets) {
    CAPTURE(axes.size());
    CAPTURE(axes[0]);
    check_sum_like<T>(aj::sum(a, aj::Axes(axes)), x, dims, axes, false);
  }
  // The default (all axes) gives rank 0.
  aj::Array all = aj::sum(a);
  CHECK(all.ndim() == 0);
  check_sum_like<T>(all, x, dims, {0, 1, 2}, false);
}

TEST_CASE_TEMPLATE("prod over one axis, several axes and all axes matches a hand loop", T, bool,
                   std::int32_t, std::int64_t, float, double) {
  const Dims dims{3, 4, 5};
  auto x = random_values<T>(60, 12, /*small=*/true);
  aj::Array a = make(x, dims);
  for (const auto& axes : kAxisSets) {
    CAPTURE(axes.size());
    CAPTURE(axes[0]);
    check_sum_like<T>(aj::prod(a, aj::Axes(axes)), x, dims, axes, true);
  }
  check_sum_like<T>(aj::prod(a), x, dims, {0, 1, 2}, true);
}

TEST_CASE_TEMPLATE("mean divides the sum by the reduced count, in f64 for ints and bool", T, bool,
                   std::int32_t, std::int64_t, float, double) {
  const Dims dims{3, 4, 5};
  auto x = random_values<T>(60, 13);
  aj::Array a = make(x, dims);
  const DType want_t = std::is_same_v<T, float> ? DType::f32 : DType::f64;
  for (const auto& axes : kAxisSets) {
    CAPTURE(axes.size());
    CAPTURE(axes[0]);
    aj::Array m = aj::mean(a, aj::Axes(axes));
    CHECK(m.dtype() == want_t);
    CHECK(m.shape() == aj::Shape(reduced_dims(dims, axes)));
    auto s = ref_reduce<double>(x, dims, axes, 0.0, [](double acc, T v) { return acc + static_cast<double>(v); });
    double count = 1;
    for (int ax : axes) count *= static_cast<double>(dims[static_cast<std::size_t>(ax)]);
    for (auto& v : s) v /= count;
    check_close(m.to_vector<double>(), s, tol<T>());
  }
  aj::Array m = aj::mean(a);
  CHECK(m.ndim() == 0);
  double total = 0;
  for (auto v : x) total += static_cast<double>(v);
  CHECK(m.item<double>() == doctest::Approx(total / 60.0).epsilon(tol<T>()));
}

TEST_CASE_TEMPLATE("max and min over axes match a hand loop and keep the input dtype", T, bool,
                   std::int32_t, std::int64_t, float, double) {
  const Dims dims{3, 4, 5};
  auto x = random_values<T>(60, 14);
  aj::Array a = make(x, dims);
  for (const auto& axes : kAxisSets) {
    CAPTURE(axes.size());
    CAPTURE(axes[0]);
    aj::Array mx = aj::max(a, aj::Axes(axes));
    aj::Array mn = aj::min(a, aj::Axes(axes));
    CHECK(mx.dtype() == aj::dtype_of<T>);
    CHECK(mn.dtype() == aj::dtype_of<T>);
    CHECK(mx.shape() == aj::Shape(reduced_dims(dims, axes)));
    CHECK(mn.shape() == aj::Shape(reduced_dims(dims, axes)));
    // Start from the first element of the whole array's extremes: every slot
    // receives at least one element, so begin from the opposite extreme.
    auto want_max = ref_reduce<double>(x, dims, axes, -INFINITY,
                                       [](double acc, T v) { return std::max(acc, double(v)); });
    auto want_min = ref_reduce<double>(x, dims, axes, INFINITY,
                                       [](double acc, T v) { return std::min(acc, double(v)); });
    // max/min pick an element: the results are exact.
    CHECK(mx.to_vector<double>() == want_max);
    CHECK(mn.to_vector<double>() == want_min);
  }
}

TEST_CASE_TEMPLATE("all and any test != 0 and give bool", T, bool, std::int32_t, std::int64_t,
                   float, double) {
  // Rows: all non-zero, one zero, all zero, alternating.
  std::vector<T> x = {T(1), T(2), T(3), T(1),  //
                      T(1), T(0), T(3), T(1),  //
                      T(0), T(0), T(0), T(0),  //
                      T(0), T(5), T(0), T(7)};
  if constexpr (std::is_same_v<T, bool>) x = {1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1};
  if constexpr (std::is_signed_v<T>) x[3] = T(-1);  // negative values are true too
  aj::Array a = make(x, {4, 4});
  aj::Array al = aj::all(a, 1), an = aj::any(a, 1);
  CHECK(al.dtype() == DType::bool_);
  CHECK(an.dtype() == DType::bool_);
  CHECK(al.shape() == aj::Shape{4});
  CHECK(al.to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK(an.to_vector<bool>() == std::vector<bool>{true, true, false, true});
  // Over axis 0: column 0 has zeros, column 1 too; no column is all zero.
  CHECK(aj::all(a, 0).to_vector<bool>() == std::vector<bool>{false, false, false, false});
  CHECK(aj::any(a, 0).to_vector<bool>() == std::vector<bool>{true, true, true, true});
  CHECK(aj::all(a).item<bool>() == false);
  CHECK(aj::any(a).item<bool>() == true);
  CHECK(aj::all(a).ndim() == 0);
  // Over the first row only: everything true.
  aj::Array row = aj::slice(a, 0, 0, 1);
  CHECK(aj::all(row).item<bool>() == true);
  aj::Array zero_row = aj::slice(a, 0, 2, 3);
  CHECK(aj::any(zero_row).item<bool>() == false);
}

TEST_CASE("all and any treat NaN as true (NaN != 0)") {
  aj::Array a = aj::from_vector(std::vector<double>{NAN, 1.0, -0.0, 0.0}, {2, 2});
  CHECK(aj::all(a, 1).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(aj::any(a, 1).to_vector<bool>() == std::vector<bool>{true, false});
}

TEST_CASE("negative axes count from the end and give the same result as positive ones") {
  const Dims dims{2, 3, 4};
  auto x = random_values<std::int64_t>(24, 21);
  aj::Array a = make(x, dims);
  auto s_last = aj::sum(a, -1);
  CHECK(s_last.shape() == aj::Shape{2, 3});
  CHECK(s_last.to_vector<std::int64_t>() ==
        ref_reduce<std::int64_t>(x, dims, {2}, 0, [](std::int64_t c, std::int64_t v) { return c + v; }));
  auto s_mixed = aj::sum(a, {-3, -1});
  CHECK(s_mixed.shape() == aj::Shape{3});
  CHECK(s_mixed.to_vector<std::int64_t>() ==
        ref_reduce<std::int64_t>(x, dims, {0, 2}, 0,
                                 [](std::int64_t c, std::int64_t v) { return c + v; }));
  auto mx = aj::max(a, -2);
  CHECK(mx.shape() == aj::Shape{2, 4});
  CHECK(mx.to_vector<std::int64_t>() ==
        ref_reduce<std::int64_t>(x, dims, {1}, std::numeric_limits<std::int64_t>::min(),
                                 [](std::int64_t c, std::int64_t v) { return std::max(c, v); }));
  // Axes given out of order mean the same set.
  CHECK(aj::sum(a, {2, 0}).to_vector<std::int64_t>() == s_mixed.to_vector<std::int64_t>());
}

TEST_CASE("keepdims leaves reduced axes with extent 1 and the same values") {
  const Dims dims{2, 3, 4};
  auto x = random_values<double>(24, 22);
  aj::Array a = make(x, dims);
  auto plus = [](double c, double v) { return c + v; };

  aj::Array s1 = aj::sum(a, 1, true);
  CHECK(s1.shape() == aj::Shape{2, 1, 4});
  check_close(s1.to_vector<double>(), ref_reduce<double>(x, dims, {1}, 0.0, plus), 1e-12);

  aj::Array s02 = aj::sum(a, {0, -1}, true);
  CHECK(s02.shape() == aj::Shape{1, 3, 1});
  check_close(s02.to_vector<double>(), ref_reduce<double>(x, dims, {0, 2}, 0.0, plus), 1e-12);

  aj::Array sall = aj::sum(a, aj::Axes::all(), true);
  CHECK(sall.shape() == aj::Shape{1, 1, 1});
  check_close(sall.to_vector<double>(), ref_reduce<double>(x, dims, {0, 1, 2}, 0.0, plus), 1e-12);

  aj::Array m = aj::mean(a, 2, true);
  CHECK(m.shape() == aj::Shape{2, 3, 1});
  auto want_m = ref_reduce<double>(x, dims, {2}, 0.0, plus);
  for (auto& v : want_m) v /= 4.0;
  check_close(m.to_vector<double>(), want_m, 1e-12);

  aj::Array mx = aj::max(a, 0, true);
  CHECK(mx.shape() == aj::Shape{1, 3, 4});
  CHECK(mx.to_vector<double>() ==
        ref_reduce<double>(x, dims, {0}, -INFINITY, [](double c, double v) { return std::max(c, v); }));

  aj::Array an = aj::any(a > 3.0, 1, true);
  CHECK(an.shape() == aj::Shape{2, 1, 4});
  std::vector<bool> want_any;
  for (auto v : ref_reduce<int>(x, dims, {1}, 0, [](int c, double v) { return c || v > 3.0; })) {
    want_any.push_back(v != 0);
  }
  CHECK(an.to_vector<bool>() == want_any);

  // keepdims results broadcast back against the input: x - mean(x, axis, keepdims).
  aj::Array centered = a - aj::mean(a, 1, true);
  auto got = centered.to_vector<double>();
  auto means = ref_reduce<double>(x, dims, {1}, 0.0, plus);
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t k = 0; k < 4; ++k) {
        auto f = static_cast<std::size_t>((i * 3 + j) * 4 + k);
        CHECK(got[f] == doctest::Approx(x[f] - means[static_cast<std::size_t>(i * 4 + k)] / 3.0));
      }
}

TEST_CASE("result dtypes follow NumPy: sum of i32/bool is i64, mean of ints f64, arg* i64") {
  aj::Array i32 = aj::from_vector(std::vector<std::int32_t>{1, 2, 3, 4}, {2, 2});
  aj::Array i64 = aj::from_vector(std::vector<std::int64_t>{1, 2, 3, 4}, {2, 2});
  aj::Array b = aj::from_vector(std::vector<bool>{true, false, true, true}, {2, 2});
  aj::Array f32 = aj::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  aj::Array f64 = aj::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});

  CHECK(aj::sum(i32).dtype() == DType::i64);
  CHECK(aj::sum(b).dtype() == DType::i64);
  CHECK(aj::sum(i64).dtype() == DType::i64);
  CHECK(aj::sum(f32).dtype() == DType::f32);
  CHECK(aj::sum(f64).dtype() == DType::f64);
  CHECK(aj::prod(i32, 0).dtype() == DType::i64);
  CHECK(aj::prod(b, 0).dtype() == DType::i64);

  CHECK(aj::mean(i32).dtype() == DType::f64);
  CHECK(aj::mean(i64).dtype() == DType::f64);
  CHECK(aj::mean(b).dtype() == DType::f64);
  CHECK(aj::mean(f32).dtype() == DType::f32);
  CHECK(aj::mean(f64).dtype() == DType::f64);

  CHECK(aj::max(i32).dtype() == DType::i32);
  CHECK(aj::min(f32).dtype() == DType::f32);
  CHECK(aj::max(b).dtype() == DType::bool_);

  for (const aj::Array& a : {i32, i64, b, f32, f64}) {
    CHECK(aj::argmax(a).dtype() == DType::i64);
    CHECK(aj::argmin(a, 1).dtype() == DType::i64);
    CHECK(aj::all(a).dtype() == DType::bool_);
    CHECK(aj::any(a, 0).dtype() == DType::bool_);
  }

  // Values: the i64 accumulation does not wrap at the i32 limit.
  aj::Array big = aj::full({4}, 2000000000, DType::i32);
  CHECK(aj::sum(big).item<std::int64_t>() == 8000000000LL);
  CHECK(aj::sum(b).item<std::int64_t>() == 3);
  CHECK(aj::mean(i32).item<double>() == 2.5);
  CHECK(aj::mean(b).item<double>() == 0.75);
  CHECK(aj::mean(f32).item<float>() == 2.5f);
}

TEST_CASE_TEMPLATE("argmax and argmin along an axis match a hand loop", T, bool, std::int32_t,
                   std::int64_t, float, double) {
  const Dims dims{3, 4, 5};
  auto x = random_values<T>(60, 31);
  aj::Array a = make(x, dims);
  for (int axis : {0, 1, 2, -1, -3}) {
    CAPTURE(axis);
    const int ax = axis < 0 ? axis + 3 : axis;
    aj::Array am = aj::argmax(a, axis), an = aj::argmin(a, axis);
    CHECK(am.dtype() == DType::i64);
    CHECK(am.shape() == aj::Shape(reduced_dims(dims, {ax})));
    // Hand loop: the first index holding the extreme along `ax`.
    Dims od = reduced_dims(dims, {ax});
    std::vector<std::int64_t> want_max(static_cast<std::size_t>(numel(od))), want_min(want_max);
    for (std::int64_t o = 0; o < numel(od); ++o) {
      // Output coordinates -> the input base offset and the stride along ax.
      Dims oc(od.size());
      std::int64_t rem = o;
      for (int d = static_cast<int>(od.size()) - 1; d >= 0; --d) {
        oc[static_cast<std::size_t>(d)] = rem % od[static_cast<std::size_t>(d)];
        rem /= od[static_cast<std::size_t>(d)];
      }
      auto at = [&](std::int64_t j) {
        Dims ic;
        std::size_t k = 0;
        for (int d = 0; d < 3; ++d) ic.push_back(d == ax ? j : oc[k++]);
        return x[static_cast<std::size_t>((ic[0] * 4 + ic[1]) * 5 + ic[2])];
      };
      std::int64_t bi = 0, si = 0;
      for (std::int64_t j = 1; j < dims[static_cast<std::size_t>(ax)]; ++j) {
        if (at(j) > at(bi)) bi = j;
        if (at(j) < at(si)) si = j;
      }
      want_max[static_cast<std::size_t>(o)] = bi;
      want_min[static_cast<std::size_t>(o)] = si;
    }
    CHECK(am.to_vector<std::int64_t>() == want_max);
    CHECK(an.to_vector<std::int64_t>() == want_min);
  }
}

TEST_CASE_TEMPLATE("argmax and argmin without an axis give the flattened index", T, std::int32_t,
                   std::int64_t, float, double) {
  auto x = random_values<T>(24, 32);
  aj::Array a = make(x, {2, 3, 4});
  auto mx = std::max_element(x.begin(), x.end());  // first of the largest
  auto mn = std::min_element(x.begin(), x.end());
  aj::Array am = aj::argmax(a), an = aj::argmin(a);
  CHECK(am.ndim() == 0);
  CHECK(am.item<std::int64_t>() == mx - x.begin());
  CHECK(an.item<std::int64_t>() == mn - x.begin());
  // keepdims without an axis: every axis kept with extent 1.
  aj::Array amk = aj::argmax(a, std::nullopt, true);
  CHECK(amk.shape() == aj::Shape{1, 1, 1});
  CHECK(amk.to_vector<std::int64_t>() == std::vector<std::int64_t>{mx - x.begin()});
  // With an axis and keepdims.
  aj::Array ank = aj::argmin(a, 1, true);
  CHECK(ank.shape() == aj::Shape{2, 1, 4});
}

TEST_CASE("argmax and argmin pick the first index among ties") {
  aj::Array a = aj::from_vector(std::vector<std::int32_t>{3, 7, 7, 1, 1, 7,  //
                                                          5, 5, 5, 5, 5, 5},
                                {2, 6});
  CHECK(aj::argmax(a, 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
  CHECK(aj::argmin(a, 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 0});
  CHECK(aj::argmax(a).item<std::int64_t>() == 1);
  CHECK(aj::argmin(a).item<std::int64_t>() == 3);
  aj::Array f = aj::from_vector(std::vector<double>{2.0, -1.0, 2.0, -1.0}, {4});
  CHECK(aj::argmax(f).item<std::int64_t>() == 0);
  CHECK(aj::argmin(f).item<std::int64_t>() == 1);
  aj::Array b = aj::from_vector(std::vector<bool>{false, true, true, false}, {4});
  CHECK(aj::argmax(b).item<std::int64_t>() == 1);
  CHECK(aj::argmin(b).item<std::int64_t>() == 0);
  // -0.0 and +0.0 compare equal: a tie, the first wins.
  aj::Array z = aj::from_vector(std::vector<double>{-0.0, 0.0}, {2});
  CHECK(aj::argmax(z).item<std::int64_t>() == 0);
  CHECK(aj::argmin(z).item<std::int64_t>() == 0);
}

TEST_CASE("argmax and argmin return the index of the first NaN") {
  aj::Array a = aj::from_vector(std::vector<float>{1.f, NAN, 5.f, NAN, -3.f}, {5});
  CHECK(aj::argmax(a).item<std::int64_t>() == 1);
  CHECK(aj::argmin(a).item<std::int64_t>() == 1);
  CHECK(std::isnan(aj::max(a).item<float>()));
  CHECK(std::isnan(aj::min(a).item<float>()));
}

TEST_CASE("reductions over a strided view (transpose of a reversed, stepped slice)") {
  // x is 7 x 9; v = transpose(x[1:6, 8:0:-3]), so v[i][j] = x[1 + j][8 - 3 i], shape 3 x 5.
  auto xv = random_values<double>(63, 41);
  aj::Array x = make(xv, {7, 9});
  aj::Array v = aj::transpose(aj::slice(x, {aj::Slice(1, 6), aj::Slice(8, 0, -3)}));
  REQUIRE(v.shape() == aj::Shape{3, 5});
  auto at = [&](int i, int j) { return xv[static_cast<std::size_t>((1 + j) * 9 + (8 - 3 * i))]; };

  std::vector<double> want_rows(3, 0.0), want_cols(5, 0.0), want_max_rows(3, -INFINITY);
  std::vector<std::int64_t> want_argmin_cols(5, 0);
  double total = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      want_rows[static_cast<std::size_t>(i)] += at(i, j);
      want_cols[static_cast<std::size_t>(j)] += at(i, j);
      want_max_rows[static_cast<std::size_t>(i)] = std::max(want_max_rows[static_cast<std::size_t>(i)], at(i, j));
      if (at(i, j) < at(static_cast<int>(want_argmin_cols[static_cast<std::size_t>(j)]), j)) {
        want_argmin_cols[static_cast<std::size_t>(j)] = i;
      }
      total += at(i, j);
    }
  }
  check_close(aj::sum(v, 1).to_vector<double>(), want_rows, 1e-12);
  check_close(aj::sum(v, 0).to_vector<double>(), want_cols, 1e-12);
  CHECK(aj::max(v, 1).to_vector<double>() == want_max_rows);
  CHECK(aj::argmin(v, 0).to_vector<std::int64_t>() == want_argmin_cols);
  CHECK(aj::mean(v).item<double>() == doctest::Approx(total / 15.0));
  // The flattened argmax of a view indexes the view's own row-major order.
  std::int64_t best = 0;
  for (int k = 1; k < 15; ++k) {
    if (at(k / 5, k % 5) > at(static_cast<int>(best / 5), static_cast<int>(best % 5))) best = k;
  }
  CHECK(aj::argmax(v).item<std::int64_t>() == best);
}

TEST_CASE("reductions of an evaluated strided view and of a broadcast view") {
  auto xv = random_values<std::int32_t>(12, 42);
  aj::Array x = make(xv, {3, 4});
  aj::Array t = x.T();
  t.eval();  // now a strided leaf
  std::vector<std::int64_t> want(3, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) want[static_cast<std::size_t>(i)] += xv[static_cast<std::size_t>(i * 4 + j)];
  CHECK(aj::sum(t, 0).to_vector<std::int64_t>() == want);
  // A broadcast view: each row of b is x's first row; sums over axis 0 are 5 * the row.
  aj::Array b = aj::broadcast_to(aj::slice(x, 0, 0, 1), {5, 4});
  std::vector<std::int64_t> want_b;
  for (int j = 0; j < 4; ++j) want_b.push_back(5 * static_cast<std::int64_t>(xv[static_cast<std::size_t>(j)]));
  CHECK(aj::sum(b, 0).to_vector<std::int64_t>() == want_b);
}

TEST_CASE("a 4-d array reduced over axes {0, 2}") {
  const Dims dims{2, 3, 4, 5};
  auto x = random_values<float>(120, 51);
  aj::Array a = make(x, dims);
  auto plus = [](double c, float v) { return c + v; };
  aj::Array s = aj::sum(a, {0, 2});
  CHECK(s.shape() == aj::Shape{3, 5});
  CHECK(s.dtype() == DType::f32);
  check_close(s.to_vector<double>(), ref_reduce<double>(x, dims, {0, 2}, 0.0, plus), 1e-5);

  aj::Array mx = aj::max(a, {0, 2});
  CHECK(mx.to_vector<double>() ==
        ref_reduce<double>(x, dims, {0, 2}, -INFINITY, [](double c, float v) { return std::max(c, double(v)); }));
  aj::Array mn = aj::min(a, {2, 0}, true);
  CHECK(mn.shape() == aj::Shape{1, 3, 1, 5});
  CHECK(mn.to_vector<double>() ==
        ref_reduce<double>(x, dims, {0, 2}, INFINITY, [](double c, float v) { return std::min(c, double(v)); }));

  aj::Array m = aj::mean(a, {0, 2}, true);
  CHECK(m.shape() == aj::Shape{1, 3, 1, 5});
  auto want_m = ref_reduce<double>(x, dims, {0, 2}, 0.0, plus);
  for (auto& v : want_m) v /= 8.0;
  check_close(m.to_vector<double>(), want_m, 1e-5);

  // The same reduction on an i32 copy accumulates exactly in i64.
  std::vector<std::int32_t> xi;
  for (auto v : x) xi.push_back(static_cast<std::int32_t>(v * 100));
  aj::Array ai = make(xi, dims);
  CHECK(aj::sum(ai, {0, 2}).to_vector<std::int64_t>() ==
        ref_reduce<std::int64_t>(xi, dims, {0, 2}, 0,
                                 [](std::int64_t c, std::int32_t v) { return c + v; }));
}

TEST_CASE("empty axes: sum gives 0, prod 1, all true, any false, mean NaN") {
  aj::Array e = aj::zeros({3, 0}, DType::f32);
  aj::Array s = aj::sum(e, 1);
  CHECK(s.shape() == aj::Shape{3});
  CHECK(s.to_vector<float>() == std::vector<float>{0.f, 0.f, 0.f});
  CHECK(aj::sum(aj::zeros({0}, DType::i32)).item<std::int64_t>() == 0);
  CHECK(aj::prod(e, 1).to_vector<float>() == std::vector<float>{1.f, 1.f, 1.f});
  CHECK(aj::all(e, 1).to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(aj::any(e, 1).to_vector<bool>() == std::vector<bool>{false, false, false});
  aj::Array m = aj::mean(e, 1);
  CHECK(m.dtype() == DType::f32);
  auto mv = m.to_vector<float>();
  REQUIRE(mv.size() == 3);
  for (float v : mv) CHECK(std::isnan(v));
  CHECK(std::isnan(aj::mean(aj::zeros({0}, DType::i64)).item<double>()));
  // Reducing the non-empty axis of an empty array gives an empty result.
  aj::Array s0 = aj::sum(e, 0);
  CHECK(s0.shape() == aj::Shape{0});
  CHECK(s0.to_vector<float>().empty());
}

TEST_CASE("max, min, argmax and argmin over an empty axis throw aj::Error at trace time") {
  aj::Array e = aj::zeros({3, 0}, DType::f64);
  CHECK_THROWS_AS(aj::max(e, 1), aj::Error);
  CHECK_THROWS_AS(aj::min(e, 1), aj::Error);
  CHECK_THROWS_AS(aj::max(e), aj::Error);
  CHECK_THROWS_AS(aj::argmax(e, 1), aj::Error);
  CHECK_THROWS_AS(aj::argmin(e), aj::Error);
  CHECK_THROWS_AS(aj::max(aj::zeros({0}, DType::i32)), aj::Error);
  // Reducing a non-empty axis of an empty array is fine (the result is empty).
  aj::Array r = aj::max(e, 0);
  CHECK(r.shape() == aj::Shape{0});
  CHECK(r.to_vector<double>().empty());
}

TEST_CASE("reduction axes out of range or repeated throw aj::Error") {
  aj::Array a = aj::ones({2, 3});
  CHECK_THROWS_AS(aj::sum(a, 2), aj::Error);
  CHECK_THROWS_AS(aj::sum(a, -3), aj::Error);
  CHECK_THROWS_AS(aj::sum(a, {0, 0}), aj::Error);
  CHECK_THROWS_AS(aj::sum(a, {1, -1}), aj::Error);
  CHECK_THROWS_AS(aj::argmax(a, 2), aj::Error);
}

TEST_CASE("reductions of a rank-0 array over all axes return its value") {
  aj::Array s = aj::from_vector(std::vector<std::int32_t>{7}, aj::Shape{});
  aj::Array r = aj::sum(s);
  CHECK(r.ndim() == 0);
  CHECK(r.dtype() == DType::i64);
  CHECK(r.item<std::int64_t>() == 7);
  CHECK(aj::max(s).item<std::int32_t>() == 7);
  CHECK(aj::mean(s).item<double>() == 7.0);
  CHECK(aj::argmax(s).item<std::int64_t>() == 0);
}

TEST_CASE("reductions of computed expressions see the computed values") {
  auto xv = random_values<std::int64_t>(20, 61);
  aj::Array x = make(xv, {4, 5});
  aj::Array r = aj::sum(x * x + 1, 1);
  std::vector<std::int64_t> want(4, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) {
      auto v = xv[static_cast<std::size_t>(i * 5 + j)];
      want[static_cast<std::size_t>(i)] += v * v + 1;
    }
  CHECK(r.to_vector<std::int64_t>() == want);
  // A reduction feeding further elementwise work and another reduction.
  aj::Array r2 = aj::max(aj::sum(x, 1) * 2 - 3);
  std::int64_t best = std::numeric_limits<std::int64_t>::min();
  for (int i = 0; i < 4; ++i) {
    std::int64_t s = 0;
    for (int j = 0; j < 5; ++j) s += xv[static_cast<std::size_t>(i * 5 + j)];
    best = std::max(best, s * 2 - 3);
  }
  CHECK(r2.item<std::int64_t>() == best);
}

}  // TEST_SUITE

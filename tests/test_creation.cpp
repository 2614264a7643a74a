// Creating arrays: fills, arange, linspace, eye, from_vector, borrow, random,
// astype, reading values out (item, to_vector with conversion).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>
#include "tests/random_data.hpp"

namespace {

using aj::DType;

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  return ajtest::random_magnitudes<T>(n, seed, 0.001, 1000.0);
}

// Buffers obtained for arrays: from the system, or served from the cache
// (a copy taken from the cache is still a copy).
std::uint64_t allocs() {
  const aj::Stats s = aj::stats();
  return s.system_allocs + s.pool_hits;
}

}  // namespace

TEST_SUITE("creation") {

// ---- fills -------------------------------------------------------------------------

TEST_CASE("full without a dtype takes it from the value: float f32, integer i64, bool bool") {
  aj::Array f = aj::full({256}, 0.01);
  CHECK(f.dtype() == DType::f32);
  CHECK(f.shape() == aj::Shape{256});
  CHECK(f.to_vector<float>() == std::vector<float>(256, 0.01f));
  aj::Array i = aj::full({2, 3}, -7);
  CHECK(i.dtype() == DType::i64);
  CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>(6, -7));
  aj::Array b = aj::full({2}, true);
  CHECK(b.dtype() == DType::bool_);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, true});
  CHECK(aj::full({2}, 2.5, DType::f64).dtype() == DType::f64);  // an explicit dtype still wins
  CHECK_THROWS_AS(aj::full({2}, std::numeric_limits<std::uint64_t>::max()), aj::Error);  // no i64 holds it
}

TEST_CASE_TEMPLATE("zeros, ones and full give the requested dtype, shape and value", T, bool,
                   std::int32_t, std::int64_t, float, double) {
  constexpr DType t = aj::dtype_of<T>;
  aj::Array z = aj::zeros({2, 3}, t);
  CHECK(z.dtype() == t);
  CHECK(z.shape() == aj::Shape{2, 3});
  CHECK(z.template to_vector<T>() == std::vector<T>(6, T(0)));

  aj::Array o = aj::ones({4}, t);
  CHECK(o.dtype() == t);
  CHECK(o.shape() == aj::Shape{4});
  CHECK(o.template to_vector<T>() == std::vector<T>(4, T(1)));

  T value;
  if constexpr (std::is_same_v<T, bool>) value = true;
  else if constexpr (std::is_integral_v<T>) value = T(-7);
  else value = T(2.5);
  aj::Array f = aj::full({3, 1, 2}, value, t);
  CHECK(f.dtype() == t);
  CHECK(f.shape() == aj::Shape{3, 1, 2});
  CHECK(f.template to_vector<T>() == std::vector<T>(6, value));

  // Rank 0 and empty shapes.
  aj::Array r0 = aj::full(aj::Shape{}, value, t);
  CHECK(r0.ndim() == 0);
  CHECK(r0.template item<T>() == value);
  aj::Array e = aj::zeros({0, 5}, t);
  CHECK(e.shape() == aj::Shape{0, 5});
  CHECK(e.size() == 0);
  CHECK(e.template to_vector<T>().empty());
}

TEST_CASE("fills default to f32 and convert the value to the dtype") {
  CHECK(aj::zeros({2}).dtype() == DType::f32);
  CHECK(aj::ones({2}).dtype() == DType::f32);
  // A float value into an integer dtype truncates toward zero, as astype.
  CHECK(aj::full({2}, 2.7, DType::i32).to_vector<std::int32_t>() == std::vector<std::int32_t>{2, 2});
  CHECK(aj::full({1}, -2.7, DType::i64).item<std::int64_t>() == -2);
  // Into bool: != 0.
  CHECK(aj::full({1}, 0.5, DType::bool_).item<bool>() == true);
  CHECK(aj::full({1}, 0, DType::bool_).item<bool>() == false);
  CHECK(aj::full({1}, true, DType::f64).item<double>() == 1.0);
  // An f32 fill holds the f32 rounding of the value.
  CHECK(aj::full({1}, 0.1, DType::f32).item<float>() == 0.1f);
  CHECK(aj::full({1}, 0.1, DType::f64).item<double>() == 0.1);
  // Large i64 values are exact.
  CHECK(aj::full({1}, std::int64_t{9007199254740993}, DType::i64).item<std::int64_t>() ==
        9007199254740993LL);
  // An integer that does not fit i32 is an error.
  CHECK_THROWS_AS(aj::full({1}, std::int64_t{1} << 40, DType::i32), aj::Error);
  CHECK_THROWS_AS(aj::zeros({-1, 2}), aj::Error);
}

// ---- arange, linspace, eye ---------------------------------------------------------------

TEST_CASE("arange(n) gives 0..n-1 as i64 by default") {
  aj::Array a = aj::arange(5);
  CHECK(a.dtype() == DType::i64);
  CHECK(a.shape() == aj::Shape{5});
  CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  aj::Array b = aj::arange(4, DType::f64);
  CHECK(b.dtype() == DType::f64);
  CHECK(b.to_vector<double>() == std::vector<double>{0, 1, 2, 3});
  aj::Array c = aj::arange(3, DType::i32);
  CHECK(c.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 1, 2});
  CHECK(aj::arange(0).shape() == aj::Shape{0});
  CHECK_THROWS_AS(aj::arange(-1), aj::Error);
  CHECK_THROWS_AS(aj::arange(3, DType::bool_), aj::Error);
}

TEST_CASE("arange with integer start, stop and step") {
  aj::Array a = aj::arange(2, 11, 3, DType::i32);
  CHECK(a.dtype() == DType::i32);
  CHECK(a.to_vector<std::int32_t>() == std::vector<std::int32_t>{2, 5, 8});
  aj::Array b = aj::arange(-3, 3, 2, DType::i64);
  CHECK(b.to_vector<std::int64_t>() == std::vector<std::int64_t>{-3, -1, 1});
  // Negative step counts down, stop excluded.
  aj::Array c = aj::arange(10, 0, -3, DType::i64);
  CHECK(c.to_vector<std::int64_t>() == std::vector<std::int64_t>{10, 7, 4, 1});
  aj::Array d = aj::arange(5, 0, -1, DType::i32);
  CHECK(d.to_vector<std::int32_t>() == std::vector<std::int32_t>{5, 4, 3, 2, 1});
  // Empty ranges.
  CHECK(aj::arange(5, 0, 1, DType::i64).shape() == aj::Shape{0});
  CHECK(aj::arange(0, 5, -1, DType::i64).shape() == aj::Shape{0});
  CHECK(aj::arange(3, 3, 1, DType::i64).shape() == aj::Shape{0});
  // Large i64 values stay exact (no rounding through double steps).
  aj::Array big = aj::arange(4e15, 4e15 + 3, 1, DType::i64);
  CHECK(big.to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{4000000000000000LL, 4000000000000001LL, 4000000000000002LL});
  CHECK_THROWS_AS(aj::arange(0, 5, 0, DType::i64), aj::Error);
}

TEST_CASE("arange with floating point values, including a negative step") {
  aj::Array a = aj::arange(0, 1, 0.25);
  CHECK(a.dtype() == DType::f32);
  CHECK(a.to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f});
  // The length is ceil((stop - start) / step): 0, 0.3, 0.6, 0.9.
  aj::Array b = aj::arange(0, 1, 0.3, DType::f64);
  auto bv = b.to_vector<double>();
  REQUIRE(bv.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(bv[static_cast<std::size_t>(i)] == doctest::Approx(0.3 * i));
  aj::Array c = aj::arange(5, 0, -1.5, DType::f64);
  CHECK(c.to_vector<double>() == std::vector<double>{5.0, 3.5, 2.0, 0.5});
  aj::Array d = aj::arange(-1, 1, 0.5, DType::f32);
  CHECK(d.to_vector<float>() == std::vector<float>{-1.f, -0.5f, 0.f, 0.5f});
  CHECK_THROWS_AS(aj::arange(0, INFINITY, 1), aj::Error);
  CHECK_THROWS_AS(aj::arange(0, 1, NAN), aj::Error);
}

TEST_CASE("linspace hits both endpoints exactly and spaces evenly") {
  aj::Array a = aj::linspace(0, 1, 5);
  CHECK(a.dtype() == DType::f32);
  CHECK(a.to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f});
  // 0.3 + 6 * ((0.9 - 0.3) / 6) is 0.9000000000000001 in double: the last
  // value must be the stop itself.
  aj::Array b = aj::linspace(0.3, 0.9, 7, DType::f64);
  auto bv = b.to_vector<double>();
  REQUIRE(bv.size() == 7);
  CHECK(bv.front() == 0.3);
  CHECK(bv.back() == 0.9);
  for (int i = 0; i < 7; ++i) CHECK(bv[static_cast<std::size_t>(i)] == doctest::Approx(0.3 + 0.1 * i));
  auto b2 = aj::linspace(-1.3, 2.9, 13, DType::f64).to_vector<double>();  // same story
  REQUIRE(b2.size() == 13);
  CHECK(b2.front() == -1.3);
  CHECK(b2.back() == 2.9);
  CHECK(b2[6] == doctest::Approx(0.8));
  // Decreasing.
  CHECK(aj::linspace(1, -1, 5, DType::f64).to_vector<double>() ==
        std::vector<double>{1.0, 0.5, 0.0, -0.5, -1.0});
  // f32 endpoints are the f32 roundings of the arguments.
  auto cv = aj::linspace(0.1, 0.3, 3).to_vector<float>();
  CHECK(cv.front() == 0.1f);
  CHECK(cv.back() == 0.3f);
  // Integer dtype: values converted as astype (truncation): 0, 2.5, 5, 7.5, 10.
  CHECK(aj::linspace(0, 10, 5, DType::i32).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{0, 2, 5, 7, 10});
  CHECK_THROWS_AS(aj::linspace(0, 1, 3, DType::bool_), aj::Error);
  CHECK_THROWS_AS(aj::linspace(0, 1, -1), aj::Error);
}

TEST_CASE("linspace with num = 1 gives the start, num = 0 an empty array") {
  aj::Array one = aj::linspace(3.5, 9, 1, DType::f64);
  CHECK(one.shape() == aj::Shape{1});
  CHECK(one.to_vector<double>() == std::vector<double>{3.5});
  aj::Array none = aj::linspace(3.5, 9, 0, DType::f64);
  CHECK(none.shape() == aj::Shape{0});
  CHECK(none.to_vector<double>().empty());
  aj::Array two = aj::linspace(-2, 2, 2, DType::f64);
  CHECK(two.to_vector<double>() == std::vector<double>{-2.0, 2.0});
}

TEST_CASE("eye: square, rectangular and shifted diagonals") {
  aj::Array e = aj::eye(3);
  CHECK(e.dtype() == DType::f32);
  CHECK(e.shape() == aj::Shape{3, 3});
  CHECK(e.to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});

  aj::Array wide = aj::eye(2, 4, 0, DType::i32);
  CHECK(wide.shape() == aj::Shape{2, 4});
  CHECK(wide.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 0, 0, 0, 0, 1, 0, 0});
  aj::Array tall = aj::eye(4, 2, 0, DType::i64);
  CHECK(tall.shape() == aj::Shape{4, 2});
  CHECK(tall.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0, 0, 1, 0, 0, 0, 0});

  aj::Array up = aj::eye(3, std::nullopt, 1, DType::f64);
  CHECK(up.to_vector<double>() == std::vector<double>{0, 1, 0, 0, 0, 1, 0, 0, 0});
  aj::Array down = aj::eye(3, 4, -1, DType::f64);
  CHECK(down.shape() == aj::Shape{3, 4});
  CHECK(down.to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0});
  aj::Array b = aj::eye(2, std::nullopt, 0, DType::bool_);
  CHECK(b.dtype() == DType::bool_);
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, false, true});
  // A diagonal outside the matrix gives zeros.
  CHECK(aj::eye(2, 2, 5, DType::i32).to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 0, 0, 0});
  CHECK(aj::eye(0).shape() == aj::Shape{0, 0});
}

// ---- from_vector ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE("from_vector copies values that read back unchanged", T, bool, std::int32_t,
                   std::int64_t, float, double) {
  auto x = random_values<T>(30, 101);
  aj::Array a = aj::from_vector(x, {5, 6});
  CHECK(a.dtype() == aj::dtype_of<T>);
  CHECK(a.shape() == aj::Shape{5, 6});
  CHECK(a.ndim() == 2);
  CHECK(a.size() == 30);
  CHECK(a.is_evaluated());
  CHECK(a.device() == aj::Device::cpu());
  CHECK(a.template to_vector<T>() == x);
  // The one-argument form gives a 1-d array.
  aj::Array v = aj::from_vector(x);
  CHECK(v.shape() == aj::Shape{30});
  CHECK(v.template to_vector<T>() == x);
  // It is a copy: changing the vector afterwards does not change the array.
  auto saved = x;
  if constexpr (std::is_same_v<T, bool>) x[0] = !x[0];
  else x[0] = static_cast<T>(x[0] + 1);
  CHECK(a.template to_vector<T>() == saved);
  // Rank 0 and empty.
  aj::Array r0 = aj::from_vector(std::vector<T>{saved[1]}, aj::Shape{});
  CHECK(r0.ndim() == 0);
  CHECK(r0.template item<T>() == saved[1]);
  aj::Array e = aj::from_vector(std::vector<T>{}, {0, 3});
  CHECK(e.shape() == aj::Shape{0, 3});
  CHECK(e.template to_vector<T>().empty());
  // The count must match the shape.
  CHECK_THROWS_AS(aj::from_vector(saved, {4, 6}), aj::Error);
  CHECK_THROWS_AS(aj::from_vector(saved, {31}), aj::Error);
}

TEST_CASE("from_vector keeps special float values bit for bit") {
  std::vector<double> x = {-0.0, INFINITY, -INFINITY, std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()};
  auto got = aj::from_vector(x).to_vector<double>();
  REQUIRE(got.size() == x.size());
  CHECK(std::signbit(got[0]));
  CHECK(got[0] == 0.0);
  for (std::size_t i = 1; i < x.size(); ++i) CHECK(got[i] == x[i]);
  auto n = aj::from_vector(std::vector<float>{NAN}).to_vector<float>();
  CHECK(std::isnan(n[0]));
  std::vector<std::int64_t> lim = {std::numeric_limits<std::int64_t>::min(),
                                   std::numeric_limits<std::int64_t>::max()};
  CHECK(aj::from_vector(lim).to_vector<std::int64_t>() == lim);
}

// ---- borrow --------------------------------------------------------------------------------------

TEST_CASE("borrow wraps caller memory without allocating") {
  std::vector<float> buf = random_values<float>(12, 102);
  const auto before = allocs();
  const auto live_before = aj::stats().live_bytes;
  aj::Array a = aj::borrow(buf.data(), {3, 4});
  CHECK(a.is_evaluated());
  CHECK(a.dtype() == DType::f32);
  CHECK(a.shape() == aj::Shape{3, 4});
  CHECK(a.to_vector<float>() == buf);
  // Views of a borrowed array are zero-copy too.
  aj::Array t = aj::transpose(a);
  t.eval();
  CHECK(allocs() == before);
  CHECK(aj::stats().live_bytes == live_before);
  // The array reads the caller's memory, not a snapshot.
  buf[5] = 123.0f;
  CHECK(a.to_vector<float>()[5] == 123.0f);
  CHECK(t.to_vector<float>()[1 * 3 + 1] == 123.0f);  // t[1][1] = a[1][1] = buf[5]
}

TEST_CASE_TEMPLATE("ops on borrowed arrays compute right and never write the caller's buffer", T,
                   std::int32_t, std::int64_t, float, double) {
  auto buf = random_values<T>(20, 103);
  const auto original = buf;
  aj::Array a = aj::borrow(buf.data(), {4, 5});
  aj::Array r = a * 2 + 1;
  std::vector<T> want;
  for (auto v : original) want.push_back(static_cast<T>(v * 2 + 1));
  CHECK(r.template to_vector<T>() == want);
  // Rebinding: the borrowed array's last handle is dropped while it feeds an op.
  // Its buffer must not be reused in place for the result.
  a = a + 5;
  a.eval();
  std::vector<T> want5;
  for (auto v : original) want5.push_back(static_cast<T>(v + 5));
  CHECK(a.template to_vector<T>() == want5);
  CHECK(buf == original);
  // Again with a chain of rebindings starting from a fresh borrow: after the
  // first one, no handle refers to the borrowed leaf any more.
  aj::Array c = aj::borrow(buf.data(), {20});
  c = c - 1;
  c = c * 3;
  c.eval();
  std::vector<T> wantc;
  for (auto v : original) wantc.push_back(static_cast<T>((v - 1) * 3));
  CHECK(c.template to_vector<T>() == wantc);
  CHECK(buf == original);
  // A reduction of a borrow.
  aj::Array d = aj::borrow(static_cast<const T*>(buf.data()), {4, 5});
  aj::Array s = aj::sum(d, 1);
  std::vector<double> want_s(4, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) want_s[static_cast<std::size_t>(i)] += double(original[static_cast<std::size_t>(i * 5 + j)]);
  auto got_s = s.template to_vector<double>();
  for (int i = 0; i < 4; ++i) CHECK(got_s[static_cast<std::size_t>(i)] == doctest::Approx(want_s[static_cast<std::size_t>(i)]));
  CHECK(buf == original);
}

TEST_CASE("borrow with explicit strides: every second element") {
  std::vector<double> buf = random_values<double>(11, 104);
  const auto before = allocs();
  const auto live_before = aj::stats().live_bytes;
  aj::Array a = aj::borrow(buf.data(), {6}, {2});  // buf[0], buf[2], ..., buf[10]
  a.eval();
  CHECK(allocs() == before);
  CHECK(aj::stats().live_bytes == live_before);
  CHECK(a.shape() == aj::Shape{6});
  CHECK(a.to_vector<double>() ==
        std::vector<double>{buf[0], buf[2], buf[4], buf[6], buf[8], buf[10]});
  aj::Array r = a * a;
  std::vector<double> want;
  for (int i = 0; i < 6; ++i) want.push_back(buf[static_cast<std::size_t>(2 * i)] * buf[static_cast<std::size_t>(2 * i)]);
  CHECK(r.to_vector<double>() == want);
  // Odd elements via an offset pointer.
  aj::Array odd = aj::borrow(buf.data() + 1, {5}, {2});
  CHECK(odd.to_vector<double>() == std::vector<double>{buf[1], buf[3], buf[5], buf[7], buf[9]});
  // A negative stride walks backwards from the pointer.
  aj::Array rev = aj::borrow(buf.data() + 10, {11}, {-1});
  CHECK(rev.to_vector<double>() == std::vector<double>(buf.rbegin(), buf.rend()));
  double total = 0;
  for (double v : buf) total += v;
  CHECK(aj::sum(rev).item<double>() == doctest::Approx(total));
}

TEST_CASE("borrow with explicit strides: a column of a row-major matrix, and its transpose") {
  // A 4 x 3 row-major matrix m[i][j] = buf[i * 3 + j].
  std::vector<std::int32_t> buf = random_values<std::int32_t>(12, 105);
  const auto original = buf;
  aj::Array col1 = aj::borrow(buf.data() + 1, {4}, {3});
  CHECK(col1.to_vector<std::int32_t>() == std::vector<std::int32_t>{buf[1], buf[4], buf[7], buf[10]});
  CHECK(aj::sum(col1).item<std::int64_t>() ==
        std::int64_t{buf[1]} + buf[4] + buf[7] + buf[10]);
  // The transpose as a borrow with swapped strides: mt[j][i] = buf[i * 3 + j].
  aj::Array mt = aj::borrow(buf.data(), {3, 4}, {1, 3});
  std::vector<std::int32_t> want;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 4; ++i) want.push_back(buf[static_cast<std::size_t>(i * 3 + j)]);
  CHECK(mt.to_vector<std::int32_t>() == want);
  // Ops on it, then reshape (which needs contiguous data).
  aj::Array r = aj::reshape(mt + 100, {12});
  std::vector<std::int32_t> want_r;
  for (auto v : want) want_r.push_back(v + 100);
  CHECK(r.to_vector<std::int32_t>() == want_r);
  CHECK(aj::reshape(mt, {2, 6}).to_vector<std::int32_t>() == want);
  CHECK(buf == original);
  CHECK_THROWS_AS(aj::borrow(buf.data(), {3, 4}, {1}), aj::Error);
}

TEST_CASE("borrow of bool data") {
  bool buf[4] = {true, false, false, true};
  aj::Array a = aj::borrow(buf, {2, 2});
  CHECK(a.dtype() == DType::bool_);
  CHECK((!a).to_vector<bool>() == std::vector<bool>{false, true, true, false});
  CHECK(buf[0] == true);
  CHECK(buf[1] == false);
}

// ---- random ---------------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("random: the same seed gives identical values, another seed different ones", T,
                   float, double) {
  constexpr DType t = aj::dtype_of<T>;
  aj::random::seed(42);
  auto u1 = aj::random::uniform({1000}, 0.0, 1.0, t).template to_vector<T>();
  auto n1 = aj::random::normal({1000}, 0.0, 1.0, t).template to_vector<T>();
  aj::random::seed(42);
  auto u2 = aj::random::uniform({1000}, 0.0, 1.0, t).template to_vector<T>();
  auto n2 = aj::random::normal({1000}, 0.0, 1.0, t).template to_vector<T>();
  CHECK(u1 == u2);
  CHECK(n1 == n2);
  aj::random::seed(43);
  auto u3 = aj::random::uniform({1000}, 0.0, 1.0, t).template to_vector<T>();
  auto n3 = aj::random::normal({1000}, 0.0, 1.0, t).template to_vector<T>();
  int same_u = 0, same_n = 0;
  for (int i = 0; i < 1000; ++i) {
    same_u += u1[static_cast<std::size_t>(i)] == u3[static_cast<std::size_t>(i)];
    same_n += n1[static_cast<std::size_t>(i)] == n3[static_cast<std::size_t>(i)];
  }
  CHECK(same_u < 5);
  CHECK(same_n < 5);
  // Two arrays made one after another under one seed differ from each other.
  aj::random::seed(42);
  auto a = aj::random::uniform({1000}, 0.0, 1.0, t).template to_vector<T>();
  auto b = aj::random::uniform({1000}, 0.0, 1.0, t).template to_vector<T>();
  int same_ab = 0;
  for (int i = 0; i < 1000; ++i) same_ab += a[static_cast<std::size_t>(i)] == b[static_cast<std::size_t>(i)];
  CHECK(same_ab < 5);
  CHECK(a == u1);
}

TEST_CASE("random values do not depend on when the arrays are evaluated") {
  aj::random::seed(7);
  aj::Array a = aj::random::uniform({500}, 0.0, 1.0, DType::f64);
  aj::Array b = aj::random::normal({500}, 0.0, 1.0, DType::f64);
  auto bv = b.to_vector<double>();  // b first
  auto av = a.to_vector<double>();
  aj::random::seed(7);
  aj::Array a2 = aj::random::uniform({500}, 0.0, 1.0, DType::f64);
  aj::Array b2 = aj::random::normal({500}, 0.0, 1.0, DType::f64);
  aj::eval({a2, b2});
  CHECK(a2.to_vector<double>() == av);
  CHECK(b2.to_vector<double>() == bv);
  // The values depend on the index, not on the shape's layout.
  aj::random::seed(7);
  aj::Array a3 = aj::random::uniform({20, 25}, 0.0, 1.0, DType::f64);
  CHECK(a3.to_vector<double>() == av);
}

TEST_CASE_TEMPLATE("random::uniform values lie in [lo, hi) and fill the interval", T, float,
                   double) {
  constexpr DType t = aj::dtype_of<T>;
  aj::random::seed(123);
  const int n = 100000;
  aj::Array u = aj::random::uniform({n}, -2.0, 3.0, t);
  CHECK(u.dtype() == t);
  CHECK(u.shape() == aj::Shape{n});
  auto v = u.template to_vector<T>();
  double lo = 1e300, hi = -1e300, mean = 0;
  int below_half = 0;
  for (T x : v) {
    lo = std::min(lo, double(x));
    hi = std::max(hi, double(x));
    mean += x;
    below_half += x < T(0.5);
  }
  mean /= n;
  CHECK(lo >= -2.0);
  CHECK(hi < 3.0);
  CHECK(lo < -1.99);  // the whole interval is used
  CHECK(hi > 2.99);
  CHECK(std::abs(mean - 0.5) < 0.03);            // sd of the mean: 5 / sqrt(12 n) ~ 0.0046
  CHECK(std::abs(below_half - n / 2) < n / 50);  // half the mass below the midpoint
  // Default interval [0, 1).
  auto d = aj::random::uniform({1000}).to_vector<float>();
  for (float x : d) {
    CHECK(x >= 0.0f);
    CHECK(x < 1.0f);
  }
  // A narrow f32 interval whose upper end would be hit by rounding still excludes hi.
  auto narrow = aj::random::uniform({10000}, 1.0, 1.0000001, t).template to_vector<T>();
  for (T x : narrow) {
    CHECK(x >= T(1.0));
    CHECK(x < static_cast<T>(1.0000001));
  }
}

TEST_CASE_TEMPLATE("random::normal has the requested mean and standard deviation", T, float,
                   double) {
  constexpr DType t = aj::dtype_of<T>;
  aj::random::seed(2024);
  const int n = 100000;
  auto z = aj::random::normal({n}, 0.0, 1.0, t).template to_vector<T>();
  double mean = 0, sq = 0;
  for (T x : z) mean += x;
  mean /= n;
  for (T x : z) sq += (x - mean) * (x - mean);
  double sd = std::sqrt(sq / (n - 1));
  CHECK(std::abs(mean) < 0.02);
  CHECK(std::abs(sd - 1.0) < 0.02);
  // About 68.3% within one standard deviation.
  int within = 0;
  for (T x : z) within += std::abs(double(x)) < 1.0;
  CHECK(std::abs(within / double(n) - 0.6827) < 0.01);

  auto y = aj::random::normal({n}, 5.0, 3.0, t).template to_vector<T>();
  double m2 = 0, s2 = 0;
  for (T x : y) m2 += x;
  m2 /= n;
  for (T x : y) s2 += (x - m2) * (x - m2);
  CHECK(std::abs(m2 - 5.0) < 0.06);
  CHECK(std::abs(std::sqrt(s2 / (n - 1)) - 3.0) < 0.06);
  for (T x : y) REQUIRE(std::isfinite(double(x)));
}

TEST_CASE("random arrays must be floating point") {
  CHECK_THROWS_AS(aj::random::uniform({3}, 0.0, 1.0, DType::i32), aj::Error);
  CHECK_THROWS_AS(aj::random::normal({3}, 0.0, 1.0, DType::bool_), aj::Error);
  CHECK_THROWS_AS(aj::random::uniform({3}, 2.0, 1.0), aj::Error);
  CHECK_THROWS_AS(aj::random::normal({3}, 0.0, -1.0), aj::Error);
}

// ---- astype, item, to_vector ----------------------------------------------------------------------

TEST_CASE("astype round trips keep values that fit both types") {
  std::vector<std::int32_t> ints = {-2147483647 - 1, -5, 0, 7, 2147483647};
  aj::Array a = aj::from_vector(ints);
  aj::Array back = a.astype(DType::f64).astype(DType::i32);
  CHECK(a.astype(DType::f64).dtype() == DType::f64);
  CHECK(back.dtype() == DType::i32);
  CHECK(back.to_vector<std::int32_t>() == ints);
  CHECK(a.astype(DType::i64).astype(DType::i32).to_vector<std::int32_t>() == ints);

  std::vector<float> fl = random_values<float>(50, 106);
  aj::Array f = aj::from_vector(fl);
  CHECK(f.astype(DType::f64).astype(DType::f32).to_vector<float>() == fl);

  std::vector<bool> bl = {true, false, true, true, false};
  aj::Array b = aj::from_vector(bl);
  for (DType t : {DType::i32, DType::i64, DType::f32, DType::f64}) {
    CAPTURE(aj::dtype_name(t));
    aj::Array tb = b.astype(t);
    CHECK(tb.dtype() == t);
    CHECK(tb.to_vector<double>() == std::vector<double>{1, 0, 1, 1, 0});
    CHECK(tb.astype(DType::bool_).to_vector<bool>() == bl);
  }
  // i64 -> i32 -> i64 for values in i32 range.
  std::vector<std::int64_t> l = {-100000, 3, 2000000000};
  CHECK(aj::from_vector(l).astype(DType::i32).astype(DType::i64).to_vector<std::int64_t>() == l);
  // astype to the same dtype keeps the values.
  CHECK(f.astype(DType::f32).to_vector<float>() == fl);
}

TEST_CASE("astype conversions that lose information follow the documented rules") {
  aj::Array f = aj::from_vector(std::vector<double>{2.7, -2.7, 0.5, -0.0, NAN, 1e20, -1e20});
  CHECK(f.astype(DType::i32).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{2, -2, 0, 0, 0, 2147483647, -2147483647 - 1});
  CHECK(f.astype(DType::bool_).to_vector<bool>() ==
        std::vector<bool>{true, true, true, false, true, true, true});
  // Integer narrowing wraps.
  aj::Array l = aj::from_vector(std::vector<std::int64_t>{(std::int64_t{1} << 32) + 5, -1});
  CHECK(l.astype(DType::i32).to_vector<std::int32_t>() == std::vector<std::int32_t>{5, -1});
  // f64 -> f32 rounds.
  aj::Array d = aj::from_vector(std::vector<double>{0.1});
  CHECK(d.astype(DType::f32).item<float>() == 0.1f);
}

TEST_CASE("item reads a one-element array as any type") {
  aj::Array i = aj::from_vector(std::vector<std::int32_t>{-3}, aj::Shape{});
  CHECK(i.item<std::int32_t>() == -3);
  CHECK(i.item<double>() == -3.0);
  CHECK(i.item<std::int64_t>() == -3);
  CHECK(i.item<bool>() == true);
  aj::Array f = aj::from_vector(std::vector<float>{2.75f}, {1, 1});
  CHECK(f.item<float>() == 2.75f);
  CHECK(f.item<int>() == 2);
  CHECK(f.item<double>() == 2.75);
  aj::Array z = aj::from_vector(std::vector<double>{0.0}, {1});
  CHECK(z.item<bool>() == false);
  // item() evaluates a traced expression.
  aj::Array e = aj::sum(aj::from_vector(std::vector<std::int64_t>{1, 2, 3})) * 2;
  CHECK_FALSE(e.is_evaluated());
  CHECK(e.item<std::int64_t>() == 12);
  CHECK(e.is_evaluated());
  CHECK_THROWS_AS(aj::from_vector(std::vector<float>{1, 2}).item<float>(), aj::Error);
  CHECK_THROWS_AS(aj::zeros({0}).item<float>(), aj::Error);
}

TEST_CASE("to_vector converts to another element type with astype's rules") {
  aj::Array f = aj::from_vector(std::vector<float>{1.5f, -1.5f, 0.0f, 3.0f});
  CHECK(f.to_vector<int>() == std::vector<int>{1, -1, 0, 3});
  CHECK(f.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -1, 0, 3});
  CHECK(f.to_vector<double>() == std::vector<double>{1.5, -1.5, 0.0, 3.0});
  CHECK(f.to_vector<bool>() == std::vector<bool>{true, true, false, true});
  aj::Array i = aj::from_vector(std::vector<std::int64_t>{16777217, -4});
  CHECK(i.to_vector<double>() == std::vector<double>{16777217.0, -4.0});
  CHECK(i.to_vector<float>() == std::vector<float>{16777216.0f, -4.0f});  // rounds to nearest f32
  CHECK(i.to_vector<std::int32_t>() == std::vector<std::int32_t>{16777217, -4});
  aj::Array b = aj::from_vector(std::vector<bool>{true, false});
  CHECK(b.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
  CHECK(b.to_vector<float>() == std::vector<float>{1.0f, 0.0f});
  // Strided views read out in their own row-major order.
  aj::Array m = aj::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(m.T().to_vector<int>() == std::vector<int>{1, 4, 2, 5, 3, 6});
}

}  // TEST_SUITE

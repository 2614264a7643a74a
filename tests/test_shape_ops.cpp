// Shape ops: reshape, transpose, broadcast_to, expand_dims, squeeze, slice,
// concatenate, stack, matmul; views share memory (no new allocations).
// Expected values come from hand-written index arithmetic over the inputs.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>
#include "tests/random_data.hpp"

namespace {

using aj::DType;
using aj::Slice;
using std::nullopt;

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  return ajtest::random_magnitudes<T>(n, seed, 0.25, 9.0);
}

// 0, 1, 2, ... as T: easy to read in failures.
template <class T>
std::vector<T> iota_values(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i);
  return v;
}

// Buffers obtained for arrays: from the system, or served from the cache
// (a copy taken from the cache is still a copy).
std::uint64_t allocs() {
  const aj::Stats s = aj::stats();
  return s.system_allocs + s.pool_hits;
}

}  // namespace

TEST_SUITE("shape_ops") {

// ---- reshape --------------------------------------------------------------------

TEST_CASE("reshape keeps row-major order and infers one -1 extent") {
  auto x = iota_values<std::int64_t>(24);
  aj::Array a = aj::from_vector(x, {2, 3, 4});
  aj::Array r = aj::reshape(a, {6, 4});
  CHECK(r.shape() == aj::Shape{6, 4});
  CHECK(r.dtype() == DType::i64);
  CHECK(r.to_vector<std::int64_t>() == x);
  aj::Array r2 = aj::reshape(a, {4, -1});
  CHECK(r2.shape() == aj::Shape{4, 6});
  CHECK(r2.to_vector<std::int64_t>() == x);
  aj::Array r3 = a.reshape({-1});
  CHECK(r3.shape() == aj::Shape{24});
  aj::Array r4 = aj::reshape(a, {2, -1, 3});
  CHECK(r4.shape() == aj::Shape{2, 4, 3});
  CHECK(r4.to_vector<std::int64_t>() == x);
  // Element (1, 2, 0) of the {2, 4, 3} view is flat index 1*12 + 2*3 + 0 = 18.
  CHECK(aj::slice(r4, {Slice(1, 2), Slice(2, 3), Slice(0, 1)}).item<std::int64_t>() == 18);
  // Size-1 arrays reshape to rank 0 and back.
  aj::Array one = aj::from_vector(std::vector<float>{2.5f}, {1, 1});
  aj::Array s = aj::reshape(one, aj::Shape{});
  CHECK(s.ndim() == 0);
  CHECK(s.item<float>() == 2.5f);
  CHECK(aj::reshape(s, {1, 1, 1}).shape() == aj::Shape{1, 1, 1});
}

TEST_CASE("reshape with a bad element count or two -1 extents throws aj::Error") {
  aj::Array a = aj::zeros({2, 3});
  CHECK_THROWS_AS(aj::reshape(a, {4, 2}), aj::Error);
  CHECK_THROWS_AS(aj::reshape(a, {-1, -1}), aj::Error);
  CHECK_THROWS_AS(aj::reshape(a, {4, -1}), aj::Error);
  CHECK_THROWS_AS(aj::reshape(a, {-2, -3}), aj::Error);
}

TEST_CASE("reshape of an evaluated contiguous array is zero-copy") {
  auto x = random_values<double>(12, 1);
  aj::Array a = aj::from_vector(x, {3, 4});
  const auto before = allocs();
  const auto live_before = aj::stats().live_bytes;
  aj::Array r = aj::reshape(a, {2, -1});
  r.eval();
  CHECK(r.to_vector<double>() == x);
  aj::Array r2 = aj::reshape(a, {12});
  r2.eval();
  CHECK(r2.to_vector<double>() == x);
  // A row slice of contiguous data is contiguous too: reshaping it is a view.
  aj::Array rows = aj::slice(a, 0, 1, 3);
  aj::Array flat = aj::reshape(rows, {8});
  flat.eval();
  CHECK(flat.to_vector<double>() == std::vector<double>(x.begin() + 4, x.end()));
  CHECK(allocs() == before);
  CHECK(aj::stats().live_bytes == live_before);  // the views hold no buffer of their own
}

TEST_CASE("reshape of a non-contiguous view reads it in its own row-major order") {
  auto x = iota_values<std::int32_t>(6);
  aj::Array a = aj::from_vector(x, {2, 3});
  aj::Array r = aj::reshape(aj::transpose(a), {6});
  // transpose is [[0, 3], [1, 4], [2, 5]]
  CHECK(r.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 3, 1, 4, 2, 5});
  aj::Array r2 = aj::reshape(aj::slice(a, 1, nullopt, nullopt, -1), {3, 2});
  // a[:, ::-1] is [[2, 1, 0], [5, 4, 3]]
  CHECK(r2.to_vector<std::int32_t>() == std::vector<std::int32_t>{2, 1, 0, 5, 4, 3});
}

// ---- transpose ----------------------------------------------------------------------

TEST_CASE_TEMPLATE("transpose with an explicit permutation moves elements as indexed", T,
                   std::int32_t, std::int64_t, float, double, bool) {
  std::vector<T> x(24);
  std::mt19937 rng(7);
  for (auto&& v : x) {
    if constexpr (std::is_same_v<T, bool>) v = rng() % 2;
    else v = static_cast<T>(1 + rng() % 50);
  }
  aj::Array a = aj::from_vector(x, {2, 3, 4});
  aj::Array t = aj::transpose(a, {1, 2, 0});
  CHECK(t.shape() == aj::Shape{3, 4, 2});
  CHECK(t.dtype() == aj::dtype_of<T>);
  // t[i][j][k] = a[k][i][j]
  std::vector<T> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k) want.push_back(x[static_cast<std::size_t>(k * 12 + i * 4 + j)]);
  CHECK(t.template to_vector<T>() == want);
}

TEST_CASE("transpose by default reverses the axes; negative perm entries count from the end") {
  auto x = random_values<float>(24, 2);
  aj::Array a = aj::from_vector(x, {2, 3, 4});
  aj::Array t = aj::transpose(a);
  CHECK(t.shape() == aj::Shape{4, 3, 2});
  std::vector<float> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) want.push_back(x[static_cast<std::size_t>(k * 12 + j * 4 + i)]);
  CHECK(t.to_vector<float>() == want);
  CHECK(a.T().to_vector<float>() == want);
  CHECK(a.transpose().to_vector<float>() == want);

  // {-1, 0, -2} is {2, 0, 1}: t2[i][j][k] = a[j][k][i]
  aj::Array t2 = aj::transpose(a, {-1, 0, -2});
  CHECK(t2.shape() == aj::Shape{4, 2, 3});
  std::vector<float> want2;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want2.push_back(x[static_cast<std::size_t>(j * 12 + k * 4 + i)]);
  CHECK(t2.to_vector<float>() == want2);
  CHECK(a.transpose({2, 0, 1}).to_vector<float>() == want2);

  // Transposing twice gives the original.
  CHECK(aj::transpose(aj::transpose(a, {1, 2, 0}), {2, 0, 1}).to_vector<float>() == x);
  // Bad permutations.
  CHECK_THROWS_AS(aj::transpose(a, {0, 1}), aj::Error);
  CHECK_THROWS_AS(aj::transpose(a, {0, 0, 1}), aj::Error);
  CHECK_THROWS_AS(aj::transpose(a, {0, 1, 3}), aj::Error);
  CHECK_THROWS_AS(aj::transpose(a, {0, 1, -4}), aj::Error);
}

// ---- broadcast_to, expand_dims, squeeze -------------------------------------------------

TEST_CASE("broadcast_to repeats along new and size-1 axes") {
  aj::Array v = aj::from_vector(std::vector<std::int32_t>{1, 2, 3}, {3});
  aj::Array b = aj::broadcast_to(v, {2, 3});
  CHECK(b.shape() == aj::Shape{2, 3});
  CHECK(b.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 2, 3, 1, 2, 3});

  aj::Array c = aj::from_vector(std::vector<double>{1.5, -2.5, 4.0}, {3, 1});
  aj::Array bc = aj::broadcast_to(c, {2, 3, 4});
  CHECK(bc.shape() == aj::Shape{2, 3, 4});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(std::vector<double>{1.5, -2.5, 4.0}[static_cast<std::size_t>(j)]);
  CHECK(bc.to_vector<double>() == want);

  aj::Array s = aj::from_vector(std::vector<bool>{true}, aj::Shape{});
  CHECK(aj::broadcast_to(s, {2, 2}).to_vector<bool>() == std::vector<bool>{true, true, true, true});
  // Broadcasting to the same shape gives the same values.
  CHECK(aj::broadcast_to(v, {3}).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 2, 3});
  CHECK_THROWS_AS(aj::broadcast_to(v, {2, 4}), aj::Error);
  CHECK_THROWS_AS(aj::broadcast_to(c, {3}), aj::Error);
}

TEST_CASE("expand_dims inserts an extent-1 axis; negative axes count in the result") {
  auto x = iota_values<float>(6);
  aj::Array a = aj::from_vector(x, {2, 3});
  CHECK(aj::expand_dims(a, 0).shape() == aj::Shape{1, 2, 3});
  CHECK(aj::expand_dims(a, 1).shape() == aj::Shape{2, 1, 3});
  CHECK(aj::expand_dims(a, 2).shape() == aj::Shape{2, 3, 1});
  CHECK(aj::expand_dims(a, -1).shape() == aj::Shape{2, 3, 1});
  CHECK(aj::expand_dims(a, -2).shape() == aj::Shape{2, 1, 3});
  CHECK(aj::expand_dims(a, -3).shape() == aj::Shape{1, 2, 3});
  CHECK(aj::expand_dims(a, -2).to_vector<float>() == x);
  CHECK_THROWS_AS(aj::expand_dims(a, 3), aj::Error);
  CHECK_THROWS_AS(aj::expand_dims(a, -4), aj::Error);
}

TEST_CASE("squeeze drops all extent-1 axes, or only the given ones") {
  auto x = iota_values<std::int64_t>(6);
  aj::Array a = aj::from_vector(x, {1, 2, 1, 3, 1});
  aj::Array s = aj::squeeze(a);
  CHECK(s.shape() == aj::Shape{2, 3});
  CHECK(s.to_vector<std::int64_t>() == x);
  CHECK(aj::squeeze(a, 0).shape() == aj::Shape{2, 1, 3, 1});
  CHECK(aj::squeeze(a, {0, 2}).shape() == aj::Shape{2, 3, 1});
  CHECK(aj::squeeze(a, -1).shape() == aj::Shape{1, 2, 1, 3});
  CHECK(aj::squeeze(a, {-1, -3}).to_vector<std::int64_t>() == x);
  CHECK(aj::squeeze(aj::ones({1, 1})).ndim() == 0);
  CHECK_THROWS_AS(aj::squeeze(a, 1), aj::Error);
  CHECK_THROWS_AS(aj::squeeze(a, 5), aj::Error);
}

// ---- slice ------------------------------------------------------------------------------

TEST_CASE("slice with one Slice per axis, missing trailing axes taken whole") {
  auto x = iota_values<std::int32_t>(20);
  aj::Array a = aj::from_vector(x, {4, 5});
  // a[1:3, 0:5:2]
  aj::Array s = aj::slice(a, {Slice(1, 3), Slice(0, 5, 2)});
  CHECK(s.shape() == aj::Shape{2, 3});
  CHECK(s.to_vector<std::int32_t>() == std::vector<std::int32_t>{5, 7, 9, 10, 12, 14});
  // a[2:] (the second axis whole)
  aj::Array s2 = aj::slice(a, {Slice(2, nullopt)});
  CHECK(s2.shape() == aj::Shape{2, 5});
  CHECK(s2.to_vector<std::int32_t>() == std::vector<std::int32_t>(x.begin() + 10, x.end()));
  // Slice() is the whole axis.
  CHECK(aj::slice(a, {Slice(), Slice()}).to_vector<std::int32_t>() == x);
  CHECK_THROWS_AS(aj::slice(a, {Slice(), Slice(), Slice()}), aj::Error);
}

TEST_CASE("slice of a single axis with the axis overload") {
  auto x = iota_values<double>(20);
  aj::Array a = aj::from_vector(x, {4, 5});
  // a[:, 1:4]
  aj::Array s = aj::slice(a, 1, 1, 4);
  CHECK(s.shape() == aj::Shape{4, 3});
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 1; j < 4; ++j) want.push_back(i * 5 + j);
  CHECK(s.to_vector<double>() == want);
  // a[::3] along axis 0 via a negative axis number for axis 1 ... and axis -2
  aj::Array s2 = aj::slice(a, -2, nullopt, nullopt, 3);
  CHECK(s2.shape() == aj::Shape{2, 5});
  std::vector<double> want2(x.begin(), x.begin() + 5);
  want2.insert(want2.end(), x.begin() + 15, x.end());
  CHECK(s2.to_vector<double>() == want2);
  // a[:, -1:]
  aj::Array s3 = aj::slice(a, -1, -1, nullopt);
  CHECK(s3.shape() == aj::Shape{4, 1});
  CHECK(s3.to_vector<double>() == std::vector<double>{4, 9, 14, 19});
}

TEST_CASE("slice with negative start and stop counts from the end") {
  auto x = iota_values<std::int64_t>(10);
  aj::Array a = aj::from_vector(x, {10});
  // x[-4:-1] = 6, 7, 8
  CHECK(aj::slice(a, 0, -4, -1).to_vector<std::int64_t>() == std::vector<std::int64_t>{6, 7, 8});
  // x[-10:3] = 0, 1, 2
  CHECK(aj::slice(a, 0, -10, 3).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2});
  // x[2:-6] = 2, 3
  CHECK(aj::slice(a, 0, 2, -6).to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 3});
  // x[:10] is allowed (stop == n); x[:11] and x[-11:] are errors (no clamping)
  CHECK(aj::slice(a, 0, nullopt, 10).to_vector<std::int64_t>() == x);
  CHECK_THROWS_AS(aj::slice(a, 0, nullopt, 11), aj::Error);
  CHECK_THROWS_AS(aj::slice(a, 0, -11, nullopt), aj::Error);
  CHECK_THROWS_AS(aj::slice(a, 0, 1, 2, 0), aj::Error);
}

TEST_CASE("slice with a negative step walks backwards") {
  auto x = iota_values<float>(10);
  aj::Array a = aj::from_vector(x, {10});
  // x[::-1]
  std::vector<float> rev(x.rbegin(), x.rend());
  CHECK(aj::slice(a, 0, nullopt, nullopt, -1).to_vector<float>() == rev);
  // x[7:2:-2] = 7, 5, 3
  CHECK(aj::slice(a, 0, 7, 2, -2).to_vector<float>() == std::vector<float>{7, 5, 3});
  // x[-2::-3] = 8, 5, 2
  CHECK(aj::slice(a, 0, -2, nullopt, -3).to_vector<float>() == std::vector<float>{8, 5, 2});
  // x[:-4:-1] = 9, 8, 7
  CHECK(aj::slice(a, 0, nullopt, -4, -1).to_vector<float>() == std::vector<float>{9, 8, 7});
  // x[3:0:-1] = 3, 2, 1 (stop excluded)
  CHECK(aj::slice(a, 0, 3, 0, -1).to_vector<float>() == std::vector<float>{3, 2, 1});
  // 2-d: a2[::-1, 1::2]
  auto y = iota_values<std::int32_t>(12);
  aj::Array b = aj::from_vector(y, {3, 4});
  aj::Array r = aj::slice(b, {Slice(nullopt, nullopt, -1), Slice(1, nullopt, 2)});
  CHECK(r.shape() == aj::Shape{3, 2});
  CHECK(r.to_vector<std::int32_t>() == std::vector<std::int32_t>{9, 11, 5, 7, 1, 3});
}

TEST_CASE("slice with step > 1 takes every step-th element, rounding the length up") {
  auto x = iota_values<std::int32_t>(10);
  aj::Array a = aj::from_vector(x, {10});
  CHECK(aj::slice(a, 0, 0, 10, 3).to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 3, 6, 9});
  CHECK(aj::slice(a, 0, 1, 10, 3).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 4, 7});
  CHECK(aj::slice(a, 0, 1, 9, 4).to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 5});
  CHECK(aj::slice(a, 0, 5, nullopt, 100).to_vector<std::int32_t>() == std::vector<std::int32_t>{5});
  // Slices of slices compose: x[1::2][::2] = 1, 5, 9
  aj::Array s = aj::slice(aj::slice(a, 0, 1, nullopt, 2), 0, nullopt, nullopt, 2);
  CHECK(s.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 5, 9});
}

TEST_CASE("slices that select nothing give empty arrays") {
  auto x = iota_values<double>(12);
  aj::Array a = aj::from_vector(x, {3, 4});
  aj::Array e1 = aj::slice(a, 0, 2, 2);
  CHECK(e1.shape() == aj::Shape{0, 4});
  CHECK(e1.to_vector<double>().empty());
  aj::Array e2 = aj::slice(a, 1, 3, 1);  // start > stop with a positive step
  CHECK(e2.shape() == aj::Shape{3, 0});
  CHECK(e2.to_vector<double>().empty());
  aj::Array e3 = aj::slice(a, 1, 1, 2, -1);  // start < stop with a negative step
  CHECK(e3.shape() == aj::Shape{3, 0});
  // Empty slices still work in further ops.
  CHECK((e2 * 2.0).shape() == aj::Shape{3, 0});
  CHECK(aj::sum(e2, 1).to_vector<double>() == std::vector<double>{0, 0, 0});
}

// ---- strided views in computations ----------------------------------------------------------

TEST_CASE_TEMPLATE("elementwise ops on a transpose of a slice of a broadcast", T, std::int32_t,
                   double) {
  // x: {3, 1, 4} broadcast to {3, 5, 4}; s = b[::-1, 1:5:2, 3:0:-2] -> {3, 2, 2};
  // v = transpose(s, {2, 0, 1}) -> {2, 3, 2}, v[i][j][k] = s[j][k][i] = x[2 - j][0][3 - 2 i].
  auto xv = random_values<T>(12, 3);
  auto wv = random_values<T>(12, 4);
  aj::Array x = aj::from_vector(xv, {3, 1, 4});
  aj::Array b = aj::broadcast_to(x, {3, 5, 4});
  aj::Array s = aj::slice(b, {Slice(nullopt, nullopt, -1), Slice(1, 5, 2), Slice(3, 0, -2)});
  REQUIRE(s.shape() == aj::Shape{3, 2, 2});
  aj::Array v = aj::transpose(s, {2, 0, 1});
  REQUIRE(v.shape() == aj::Shape{2, 3, 2});
  aj::Array w = aj::from_vector(wv, {2, 3, 2});
  aj::Array r = v * v + w - v;
  // A second view of the same data, transposed the other way, in the same expression.
  aj::Array r2 = v + aj::transpose(aj::transpose(v));  // reverse twice = identity

  std::vector<T> want, want_v, want2;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        T vv = xv[static_cast<std::size_t>((2 - j) * 4 + (3 - 2 * i))];
        T ww = wv[static_cast<std::size_t>((i * 3 + j) * 2 + k)];
        want_v.push_back(vv);
        want.push_back(static_cast<T>(vv * vv + ww - vv));
        want2.push_back(static_cast<T>(vv + vv));
      }
  CHECK(v.template to_vector<T>() == want_v);
  CHECK(r.template to_vector<T>() == want);
  CHECK(r2.template to_vector<T>() == want2);
  // Evaluated views used again: values still follow the same index map.
  v.eval();
  std::vector<T> want3;
  for (auto e : want_v) want3.push_back(static_cast<T>(e * 3));
  CHECK((v * 3).template to_vector<T>() == want3);
}

// ---- concatenate and stack ------------------------------------------------------------------

TEST_CASE("concatenate along axis 0, 1 and -1") {
  aj::Array a = aj::from_vector(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  aj::Array b = aj::from_vector(std::vector<std::int32_t>{7, 8, 9}, {1, 3});
  aj::Array c0 = aj::concatenate({a, b}, 0);
  CHECK(c0.shape() == aj::Shape{3, 3});
  CHECK(c0.dtype() == DType::i32);
  CHECK(c0.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});

  aj::Array d = aj::from_vector(std::vector<std::int32_t>{10, 20, 30, 40}, {2, 2});
  aj::Array c1 = aj::concatenate({a, d}, 1);
  CHECK(c1.shape() == aj::Shape{2, 5});
  CHECK(c1.to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{1, 2, 3, 10, 20, 4, 5, 6, 30, 40});
  aj::Array cm1 = aj::concatenate({d, a, d}, -1);
  CHECK(cm1.shape() == aj::Shape{2, 7});
  CHECK(cm1.to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{10, 20, 1, 2, 3, 10, 20, 30, 40, 4, 5, 6, 30, 40});
  // Views as inputs: a transposed piece.
  aj::Array ct = aj::concatenate({aj::transpose(a), aj::transpose(b)}, 1);
  CHECK(ct.shape() == aj::Shape{3, 3});
  CHECK(ct.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 4, 7, 2, 5, 8, 3, 6, 9});
  // An empty piece contributes nothing.
  aj::Array e = aj::slice(b, 0, 0, 0);
  CHECK(aj::concatenate({a, e}, 0).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  CHECK_THROWS_AS(aj::concatenate({a, d}, 0), aj::Error);
  CHECK_THROWS_AS(aj::concatenate({a, b}, 2), aj::Error);
  CHECK_THROWS_AS(aj::concatenate({}, 0), aj::Error);
}

TEST_CASE("concatenate of mixed dtypes promotes as NumPy") {
  aj::Array i32 = aj::from_vector(std::vector<std::int32_t>{1, -2}, {2});
  aj::Array i64 = aj::from_vector(std::vector<std::int64_t>{3000000000LL}, {1});
  aj::Array f32 = aj::from_vector(std::vector<float>{0.5f}, {1});
  aj::Array f64 = aj::from_vector(std::vector<double>{0.25}, {1});
  aj::Array b = aj::from_vector(std::vector<bool>{true, false}, {2});

  aj::Array c1 = aj::concatenate({i32, i64});
  CHECK(c1.dtype() == DType::i64);
  CHECK(c1.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 3000000000LL});
  aj::Array c2 = aj::concatenate({i32, f32});
  CHECK(c2.dtype() == DType::f64);
  CHECK(c2.to_vector<double>() == std::vector<double>{1.0, -2.0, 0.5});
  aj::Array c3 = aj::concatenate({f32, f64});
  CHECK(c3.dtype() == DType::f64);
  CHECK(c3.to_vector<double>() == std::vector<double>{0.5, 0.25});
  aj::Array c4 = aj::concatenate({b, i32});
  CHECK(c4.dtype() == DType::i32);
  CHECK(c4.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 0, 1, -2});
  aj::Array c5 = aj::concatenate({b, b});
  CHECK(c5.dtype() == DType::bool_);
  CHECK(c5.to_vector<bool>() == std::vector<bool>{true, false, true, false});
  aj::Array c6 = aj::concatenate({f32, f32});
  CHECK(c6.dtype() == DType::f32);
}

TEST_CASE("stack adds a new axis at 0, in the middle and at -1") {
  aj::Array a = aj::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  aj::Array b = aj::from_vector(std::vector<float>{10, 20, 30, 40, 50, 60}, {2, 3});
  aj::Array s0 = aj::stack({a, b}, 0);
  CHECK(s0.shape() == aj::Shape{2, 2, 3});
  CHECK(s0.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
  aj::Array s1 = aj::stack({a, b}, 1);
  CHECK(s1.shape() == aj::Shape{2, 2, 3});
  CHECK(s1.to_vector<float>() == std::vector<float>{1, 2, 3, 10, 20, 30, 4, 5, 6, 40, 50, 60});
  aj::Array sm1 = aj::stack({a, b, a}, -1);
  CHECK(sm1.shape() == aj::Shape{2, 3, 3});
  CHECK(sm1.to_vector<float>() == std::vector<float>{1, 10, 1, 2, 20, 2, 3, 30, 3,  //
                                                     4, 40, 4, 5, 50, 5, 6, 60, 6});
  // Rank-0 arrays stack into a vector.
  aj::Array x = aj::from_vector(std::vector<std::int64_t>{7}, aj::Shape{});
  aj::Array y = aj::from_vector(std::vector<std::int64_t>{8}, aj::Shape{});
  aj::Array v = aj::stack({x, y});
  CHECK(v.shape() == aj::Shape{2});
  CHECK(v.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, 8});
  CHECK_THROWS_AS(aj::stack({a, aj::transpose(b)}), aj::Error);
  CHECK_THROWS_AS(aj::stack({a, b}, 3), aj::Error);
}

// ---- matmul ---------------------------------------------------------------------------------

namespace {
// C[b][r][c] = sum_k A[b][r][k] * B[b][k][c] on contiguous batches (hand triple loop).
template <class T>
std::vector<T> ref_matmul(const std::vector<T>& A, const std::vector<T>& B, int batches, int n,
                          int k, int m) {
  std::vector<T> C(static_cast<std::size_t>(batches * n * m), T(0));
  for (int b = 0; b < batches; ++b)
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < m; ++c) {
        T acc = 0;
        for (int i = 0; i < k; ++i) {
          acc += A[static_cast<std::size_t>((b * n + r) * k + i)] *
                 B[static_cast<std::size_t>((b * k + i) * m + c)];
        }
        C[static_cast<std::size_t>((b * n + r) * m + c)] = acc;
      }
  return C;
}

template <class T>
void check_values(const aj::Array& got, const std::vector<T>& want) {
  auto g = got.to_vector<T>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    if constexpr (std::is_floating_point_v<T>) {
      CHECK(g[i] == doctest::Approx(want[i]).epsilon(std::is_same_v<T, float> ? 1e-5 : 1e-12));
    } else {
      CHECK(g[i] == want[i]);
    }
  }
}
}  // namespace

TEST_CASE_TEMPLATE("matmul of two matrices matches a hand triple loop", T, std::int32_t,
                   std::int64_t, float, double) {
  auto A = random_values<T>(12, 5), B = random_values<T>(20, 6);
  aj::Array a = aj::from_vector(A, {3, 4}), b = aj::from_vector(B, {4, 5});
  aj::Array c = aj::matmul(a, b);
  CHECK(c.shape() == aj::Shape{3, 5});
  CHECK(c.dtype() == aj::dtype_of<T>);
  check_values(c, ref_matmul(A, B, 1, 3, 4, 5));
  // Transposed operands (strided views): (b^T @ a^T) = (a @ b)^T.
  aj::Array ct = aj::matmul(aj::transpose(b), aj::transpose(a));
  CHECK(ct.shape() == aj::Shape{5, 3});
  auto C = ref_matmul(A, B, 1, 3, 4, 5);
  std::vector<T> CT;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) CT.push_back(C[static_cast<std::size_t>(j * 5 + i)]);
  check_values(ct, CT);
}

TEST_CASE_TEMPLATE("matmul with 1-d operands removes the added axis", T, std::int32_t, double) {
  auto V = random_values<T>(4, 7), M = random_values<T>(12, 8), W = random_values<T>(4, 9);
  aj::Array v = aj::from_vector(V, {4}), m = aj::from_vector(M, {4, 3}), w = aj::from_vector(W, {4});
  // vec @ mat: {4} @ {4, 3} -> {3}
  aj::Array vm = aj::matmul(v, m);
  CHECK(vm.shape() == aj::Shape{3});
  check_values(vm, ref_matmul(V, M, 1, 1, 4, 3));
  // mat @ vec: {3, 4} @ {4} -> {3}
  aj::Array mt = aj::transpose(m);
  aj::Array mv = aj::matmul(mt, v);
  CHECK(mv.shape() == aj::Shape{3});
  std::vector<T> want_mv(3, T(0));
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 4; ++k)
      want_mv[static_cast<std::size_t>(r)] += M[static_cast<std::size_t>(k * 3 + r)] * V[static_cast<std::size_t>(k)];
  check_values(mv, want_mv);
  // vec @ vec -> rank 0
  aj::Array vv = aj::matmul(v, w);
  CHECK(vv.ndim() == 0);
  T dot = 0;
  for (int k = 0; k < 4; ++k) dot += V[static_cast<std::size_t>(k)] * W[static_cast<std::size_t>(k)];
  check_values(vv, std::vector<T>{dot});
  // A batch of matrices times a vector: {2, 3, 4} @ {4} -> {2, 3}
  auto Bt = random_values<T>(24, 10);
  aj::Array bm = aj::from_vector(Bt, {2, 3, 4});
  aj::Array bmv = aj::matmul(bm, v);
  CHECK(bmv.shape() == aj::Shape{2, 3});
  check_values(bmv, ref_matmul(Bt, [&] {
                 std::vector<T> rep(V);
                 rep.insert(rep.end(), V.begin(), V.end());
                 return rep;
               }(), 2, 3, 4, 1));
}

TEST_CASE_TEMPLATE("batched matmul broadcasts batch axes: (2,1,3,4) @ (5,4,2) -> (2,5,3,2)", T,
                   std::int32_t, double) {
  auto A = random_values<T>(2 * 3 * 4, 11), B = random_values<T>(5 * 4 * 2, 12);
  aj::Array a = aj::from_vector(A, {2, 1, 3, 4}), b = aj::from_vector(B, {5, 4, 2});
  aj::Array c = aj::matmul(a, b);
  CHECK(c.shape() == aj::Shape{2, 5, 3, 2});
  CHECK(c.dtype() == aj::dtype_of<T>);
  std::vector<T> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 2; ++col) {
          T acc = 0;
          for (int k = 0; k < 4; ++k) {
            acc += A[static_cast<std::size_t>((i * 3 + r) * 4 + k)] *
                   B[static_cast<std::size_t>((j * 4 + k) * 2 + col)];
          }
          want.push_back(acc);
        }
  check_values(c, want);
}

TEST_CASE("matmul promotes mixed dtypes and rejects bad operands") {
  aj::Array a = aj::from_vector(std::vector<std::int32_t>{1, 2, 3, 4}, {2, 2});
  aj::Array b = aj::from_vector(std::vector<float>{0.5f, 1.5f, -1.0f, 2.0f}, {2, 2});
  aj::Array c = aj::matmul(a, b);
  CHECK(c.dtype() == DType::f64);
  // [[1*0.5 + 2*-1, 1*1.5 + 2*2], [3*0.5 + 4*-1, 3*1.5 + 4*2]]
  CHECK(c.to_vector<double>() == std::vector<double>{-1.5, 5.5, -2.5, 12.5});
  aj::Array i64 = aj::from_vector(std::vector<std::int64_t>{1, 1}, {2});
  aj::Array ci = aj::matmul(a, i64);
  CHECK(ci.dtype() == DType::i64);
  CHECK(ci.to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 7});
  CHECK_THROWS_AS(aj::matmul(a, aj::ones({3, 2})), aj::Error);
  CHECK_THROWS_AS(aj::matmul(a, aj::from_vector(std::vector<float>{1}, aj::Shape{})), aj::Error);
  aj::Array bb = aj::from_vector(std::vector<bool>{true, false, false, true}, {2, 2});
  CHECK_THROWS_AS(aj::matmul(bb, bb), aj::Error);
  CHECK_THROWS_AS(aj::matmul(aj::ones({2, 2, 2}), aj::ones({3, 2, 2})), aj::Error);
}

// ---- zero-copy views ---------------------------------------------------------------------------

TEST_CASE("views of an evaluated array allocate no new buffers") {
  auto x = random_values<float>(24, 13);
  aj::Array a = aj::from_vector(x, {2, 3, 4});
  const auto before = allocs();
  const auto live_before = aj::stats().live_bytes;

  aj::Array t = aj::transpose(a, {2, 0, 1});
  aj::Array s = aj::slice(a, {Slice(1, 2), Slice(nullopt, nullopt, -1), Slice(0, 4, 3)});
  aj::Array b = aj::broadcast_to(aj::slice(a, 0, 0, 1), {5, 3, 4});
  aj::Array e = aj::expand_dims(a, 1);
  aj::eval({t, s, b, e});
  CHECK(t.is_evaluated());
  CHECK(b.is_evaluated());

  // Values are right (read out into std::vector, not through new buffers).
  auto tv = t.to_vector<float>();
  REQUIRE(tv.size() == 24);
  // t[i][j][k] = a[j][k][i]
  CHECK(tv[static_cast<std::size_t>((3 * 2 + 1) * 3 + 2)] == x[static_cast<std::size_t>(1 * 12 + 2 * 4 + 3)]);
  // s = a[1:2, ::-1, 0:4:3] -> {1, 3, 2}
  CHECK(s.shape() == aj::Shape{1, 3, 2});
  CHECK(s.to_vector<float>() == std::vector<float>{x[20], x[23], x[16], x[19], x[12], x[15]});
  auto bv = b.to_vector<float>();
  REQUIRE(bv.size() == 60);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 12; ++j) CHECK(bv[static_cast<std::size_t>(i * 12 + j)] == x[static_cast<std::size_t>(j)]);
  CHECK(e.to_vector<float>() == x);

  CHECK(allocs() == before);
  CHECK(aj::stats().live_bytes == live_before);
}

TEST_CASE("squeeze and expand_dims of a strided view are views too (no copy)") {
  // docs/semantics.md: expand_dims and squeeze share memory with their input
  // and are never copies -- also when the input is a strided (non-contiguous) view.
  auto x = random_values<double>(24, 14);
  aj::Array a = aj::from_vector(x, {2, 3, 4});
  aj::Array s = aj::slice(a, {Slice(1, 2), Slice(nullopt, nullopt, -1), Slice(0, 4, 3)});
  aj::Array t = aj::transpose(a, {2, 0, 1});
  aj::eval({s, t});
  const auto before = allocs();
  const auto live_before = aj::stats().live_bytes;
  aj::Array q = aj::squeeze(s);         // {1, 3, 2} -> {3, 2}
  aj::Array e = aj::expand_dims(t, 1);  // {4, 2, 3} -> {4, 1, 2, 3}
  aj::eval({q, e});
  CHECK(allocs() == before);
  CHECK(aj::stats().live_bytes == live_before);
  CHECK(q.shape() == aj::Shape{3, 2});
  CHECK(q.to_vector<double>() == std::vector<double>{x[20], x[23], x[16], x[19], x[12], x[15]});
  CHECK(e.shape() == aj::Shape{4, 1, 2, 3});
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(x[static_cast<std::size_t>(j * 12 + k * 4 + i)]);
  CHECK(e.to_vector<double>() == want);
}

}  // TEST_SUITE

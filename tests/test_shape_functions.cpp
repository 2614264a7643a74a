// NumPy's shape functions (arrayjit/shape_functions.hpp, issue 35 point 4)
// against index loops written here from NumPy's definitions, on random
// values of several dtypes, on the JIT and the interpreter; size-0 and
// size-1 axes and strided (sliced) inputs included; the C functions compute
// what the C++ ones do; bad arguments are located errors.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>
#include <arrayjit/shape_functions.hpp>

#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/c_result.hpp"
#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using Dims = std::vector<std::int64_t>;

using ajtest::on_both;

std::int64_t numel(const Dims& d) { return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()); }

// Distinct values 0, 1, 2, ... in a random order: every element identifiable.
std::vector<double> ids(std::int64_t n, unsigned seed) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// Row-major index helpers.
std::vector<std::int64_t> unravel(std::int64_t i, const Dims& d) {
  std::vector<std::int64_t> idx(d.size());
  for (std::size_t k = d.size(); k-- > 0;) {
    idx[k] = d[k] ? i % d[k] : 0;
    i = d[k] ? i / d[k] : 0;
  }
  return idx;
}
std::int64_t ravel(const std::vector<std::int64_t>& idx, const Dims& d) {
  std::int64_t i = 0;
  for (std::size_t k = 0; k < d.size(); ++k) i = i * d[k] + idx[k];
  return i;
}

// A strided f64 array of dims d: every other element of a wider input.
Array strided(const std::vector<double>& v, const Dims& d) {
  Dims wide = d;
  if (wide.empty()) return aj::from_vector(v, Shape(d));
  wide.back() *= 2;
  std::vector<double> w(static_cast<std::size_t>(numel(wide)), -1.0);
  for (std::int64_t i = 0; i < numel(d); ++i) {
    auto idx = unravel(i, d);
    idx.back() *= 2;
    w[static_cast<std::size_t>(ravel(idx, wide))] = v[static_cast<std::size_t>(i)];
  }
  return aj::slice(aj::from_vector(w, Shape(wide)), static_cast<int>(d.size()) - 1, 0, std::nullopt, 2);
}

void check_values(const Array& got, const Dims& want_dims, const std::vector<double>& want) {
  REQUIRE(got.shape() == Shape(want_dims));
  CHECK(got.astype(DType::f64).to_vector<double>() == want);
}

}  // namespace

TEST_CASE("shape functions: flip, swapaxes, moveaxis against index loops (size-0 and size-1 axes, strided)") {
  on_both([] {
    for (const Dims& d : {Dims{2, 3, 4}, Dims{1, 5}, Dims{3, 0, 2}, Dims{4}}) {
      const auto v = ids(numel(d), 1);
      for (bool s : {false, true}) {
        const Array x = s ? strided(v, d) : aj::from_vector(v, Shape(d));
        const int r = static_cast<int>(d.size());
        // flip along the first axis and along all.
        for (bool all : {false, true}) {
          std::vector<double> want(v.size());
          for (std::int64_t i = 0; i < numel(d); ++i) {
            auto idx = unravel(i, d);
            for (int k = 0; k < r; ++k) {
              if (all || k == 0) idx[static_cast<std::size_t>(k)] = d[static_cast<std::size_t>(k)] - 1 - idx[static_cast<std::size_t>(k)];
            }
            want[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>(ravel(idx, d))];
          }
          check_values(all ? aj::flip(x) : aj::flip(x, 0), d, want);
        }
        // swapaxes(0, -1), moveaxis(0, -1).
        Dims sd = d, md = d;
        std::swap(sd.front(), sd.back());
        md.erase(md.begin());
        md.push_back(d.front());
        std::vector<double> sw(v.size()), mv(v.size());
        for (std::int64_t i = 0; i < numel(d); ++i) {
          auto idx = unravel(i, d);
          auto si = idx;
          std::swap(si.front(), si.back());
          sw[static_cast<std::size_t>(ravel(si, sd))] = v[static_cast<std::size_t>(i)];
          auto mi = idx;
          mi.erase(mi.begin());
          mi.push_back(idx.front());
          mv[static_cast<std::size_t>(ravel(mi, md))] = v[static_cast<std::size_t>(i)];
        }
        check_values(aj::swapaxes(x, 0, -1), sd, sw);
        check_values(aj::moveaxis(x, 0, -1), md, mv);
      }
    }
  });
}

TEST_CASE("shape functions: tile and repeat against index loops") {
  on_both([] {
    const Dims d = {2, 3};
    const auto v = ids(6, 2);
    const Array x = aj::from_vector(v, Shape(d)).astype(DType::i32);
    // tile(x, (2, 1, 2)): rank padded to 3.
    std::vector<double> t;
    for (int a = 0; a < 2; ++a)
      for (int i = 0; i < 2; ++i)
        for (int b = 0; b < 2; ++b)
          for (int j = 0; j < 3; ++j) t.push_back(v[static_cast<std::size_t>(i * 3 + j)]);
    check_values(aj::tile(x, {2, 1, 2}), {2, 2, 6}, t);
    check_values(aj::tile(x, {0}), {2, 0}, {});
    CHECK(aj::tile(x, {2}).dtype() == DType::i32);
    // repeat 2 along axis 1; flattened; per-element counts along axis 0.
    std::vector<double> r1, r2, r3;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) r1.insert(r1.end(), 2, v[static_cast<std::size_t>(i * 3 + j)]);
    for (double e : v) r2.insert(r2.end(), 3, e);
    for (int j = 0; j < 3; ++j) r3.push_back(v[static_cast<std::size_t>(j)]);
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < 3; ++j) r3.push_back(v[static_cast<std::size_t>(3 + j)]);
    check_values(aj::repeat(x, 2, 1), {2, 6}, r1);
    check_values(aj::repeat(x, 3), {18}, r2);
    check_values(aj::repeat(x, std::vector<std::int64_t>{1, 2}, 0), {3, 3}, r3);
  });
  CHECK_THROWS_WITH_AS(aj::repeat(aj::ones({2}), std::vector<std::int64_t>{1, 2, 3}, 0),
                       doctest::Contains("one count per element"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::tile(aj::ones({2}), {-1}), doctest::Contains("must not be negative"), aj::Error);
}

TEST_CASE("shape functions: split, array_split, unstack cover the array in order") {
  on_both([] {
    const auto v = ids(14, 3);
    const Array x = aj::from_vector(v, Shape{7, 2});
    const auto parts = aj::array_split(x, 3);
    REQUIRE(parts.size() == 3);
    CHECK(parts[0].shape() == Shape{3, 2});
    CHECK(parts[1].shape() == Shape{2, 2});
    std::vector<double> joined;
    for (const Array& p : parts) {
      auto pv = p.to_vector<double>();
      joined.insert(joined.end(), pv.begin(), pv.end());
    }
    CHECK(joined == v);
    const auto cut = aj::split(x, std::vector<std::int64_t>{2, -2, 100}, 0);  // NumPy clamps
    REQUIRE(cut.size() == 4);
    CHECK(cut[0].shape() == Shape{2, 2});
    CHECK(cut[1].shape() == Shape{3, 2});
    CHECK(cut[2].shape() == Shape{2, 2});
    CHECK(cut[3].shape() == Shape{0, 2});
    const auto cols = aj::unstack(x, 1);
    REQUIRE(cols.size() == 2);
    CHECK(cols[1].shape() == Shape{7});
    for (int i = 0; i < 7; ++i) CHECK(cols[1].to_vector<double>()[static_cast<std::size_t>(i)] == v[static_cast<std::size_t>(2 * i + 1)]);
    CHECK(aj::split(x, 2, 1).size() == 2);
  });
  CHECK_THROWS_WITH_AS(aj::split(aj::ones({7}), 3), doctest::Contains("equal sections"), aj::Error);
}

TEST_CASE("shape functions: tril, triu, diag, diagonal, trace against index loops") {
  on_both([] {
    const Dims d = {2, 3, 4};
    const auto v = ids(24, 4);
    const Array x = aj::from_vector(v, Shape(d));
    for (std::int64_t k : {-2, -1, 0, 1, 3}) {
      CAPTURE(k);
      std::vector<double> lo(v.size()), up(v.size());
      for (std::int64_t i = 0; i < 24; ++i) {
        const auto idx = unravel(i, d);
        lo[static_cast<std::size_t>(i)] = idx[2] - idx[1] <= k ? v[static_cast<std::size_t>(i)] : 0;
        up[static_cast<std::size_t>(i)] = idx[2] - idx[1] >= k ? v[static_cast<std::size_t>(i)] : 0;
      }
      check_values(aj::tril(x, k), d, lo);
      check_values(aj::triu(x, k), d, up);
      // diagonal over axes (1, 2), and trace.
      std::vector<double> dg, tr;
      std::int64_t len = 0;
      for (std::int64_t b = 0; b < 2; ++b) {
        double s = 0;
        len = 0;
        for (std::int64_t i = 0; i < 3; ++i) {
          const std::int64_t j = i + k;
          if (j < 0 || j >= 4) continue;
          dg.push_back(v[static_cast<std::size_t>(b * 12 + i * 4 + j)]);
          s += dg.back();
          ++len;
        }
        tr.push_back(s);
      }
      check_values(aj::diagonal(x, k, 1, 2), {2, len}, dg);
      check_values(aj::linalg::trace(x, k, 1, 2), {2}, tr);
    }
    // diag of a vector and of a matrix.
    const Array e = aj::from_vector<double>({1, 2, 3});
    check_values(aj::diag(e, 1), {4, 4}, {0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0});
    check_values(aj::diag(e, -1), {4, 4}, {0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0});
    check_values(aj::diag(aj::diag(e)), {3}, {1, 2, 3});
    check_values(aj::diagonal(x, 0, 0, 2), {3, 2}, {v[0], v[13], v[4], v[17], v[8], v[21]});
  });
  CHECK_THROWS_WITH_AS(aj::tril(aj::ones({3})), doctest::Contains("at least 2 axes"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::diagonal(aj::ones({3, 3}), 0, 1, -1), doctest::Contains("same axis"), aj::Error);
}

TEST_CASE("shape functions: broadcast_arrays, meshgrid, atleast_nd, logspace") {
  on_both([] {
    const auto b = aj::broadcast_arrays({aj::ones({3, 1}), aj::zeros({4}), aj::full({}, 2.0)});
    for (const Array& a : b) CHECK(a.shape() == Shape{3, 4});
    const Array xs = aj::from_vector<double>({1, 2, 3}), ys = aj::from_vector<double>({10, 20});
    const auto xy = aj::meshgrid({xs, ys});
    check_values(xy[0], {2, 3}, {1, 2, 3, 1, 2, 3});
    check_values(xy[1], {2, 3}, {10, 10, 10, 20, 20, 20});
    const auto ij = aj::meshgrid({xs, ys}, true);
    check_values(ij[0], {3, 2}, {1, 1, 2, 2, 3, 3});
    check_values(ij[1], {3, 2}, {10, 20, 10, 20, 10, 20});
    CHECK(aj::atleast_1d(aj::full({}, 1.0)).shape() == Shape{1});
    CHECK(aj::atleast_2d(xs).shape() == Shape{1, 3});
    CHECK(aj::atleast_3d(xs).shape() == Shape{1, 3, 1});
    CHECK(aj::atleast_3d(aj::ones({2, 5})).shape() == Shape{2, 5, 1});
    const auto l = aj::logspace(0, 3, 4, 10.0, DType::f64).to_vector<double>();
    CHECK(l == std::vector<double>{1, 10, 100, 1000});
    CHECK(aj::logspace(1, 3, 3, 2.0).to_vector<float>() == std::vector<float>{2, 4, 8});
  });
  CHECK_THROWS_AS(aj::broadcast_arrays({aj::ones({3}), aj::ones({4})}), aj::Error);
}

TEST_CASE("shape functions: outer, inner, dot, vdot, tensordot, kron, cross against loops") {
  on_both([] {
    const auto av = ids(6, 5), bv = ids(12, 6);
    const Array a = aj::from_vector(av, Shape{2, 3}), b = aj::from_vector(bv, Shape{3, 4});
    // tensordot over a's axis 1 and b's axis 0 is the matrix product; dot too.
    std::vector<double> mm;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        double s = 0;
        for (int k = 0; k < 3; ++k) s += av[static_cast<std::size_t>(i * 3 + k)] * bv[static_cast<std::size_t>(k * 4 + j)];
        mm.push_back(s);
      }
    check_values(aj::tensordot(a, b, 1), {2, 4}, mm);
    check_values(aj::dot(a, b), {2, 4}, mm);
    // tensordot over two axis pairs: a (2,3) with a transposed copy (3,2): full contraction.
    double full = 0;
    for (int i = 0; i < 6; ++i) full += av[static_cast<std::size_t>(i)] * av[static_cast<std::size_t>(i)];
    check_values(aj::tensordot(a, aj::transpose(a), {0, 1}, {1, 0}), {}, {full});
    check_values(aj::vdot(a, a), {}, {full});
    // inner over last axes: a (2,3) with a: (2,2).
    std::vector<double> in;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double s = 0;
        for (int k = 0; k < 3; ++k) s += av[static_cast<std::size_t>(i * 3 + k)] * av[static_cast<std::size_t>(j * 3 + k)];
        in.push_back(s);
      }
    check_values(aj::inner(a, a), {2, 2}, in);
    // dot of 3-d with 2-d: a sum over a's last and b's second-to-last axis.
    const Array a3 = aj::reshape(a, {1, 2, 3});
    check_values(aj::dot(a3, b), {1, 2, 4}, mm);
    // outer and kron.
    std::vector<double> ou, kr;
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) ou.push_back(av[static_cast<std::size_t>(i)] * av[static_cast<std::size_t>(j)]);
    check_values(aj::outer(a, a), {6, 6}, ou);
    for (int i = 0; i < 2; ++i)
      for (int p = 0; p < 2; ++p)
        for (int j = 0; j < 3; ++j)
          for (int q = 0; q < 3; ++q)
            kr.push_back(av[static_cast<std::size_t>(i * 3 + j)] * av[static_cast<std::size_t>(p * 3 + q)]);
    check_values(aj::kron(a, a), {4, 9}, kr);
    // cross of 3-vectors, broadcast.
    const Array u = aj::from_vector<double>({1, 0, 0, 0, 1, 0}, {2, 3}), w = aj::from_vector<double>({0, 1, 0});
    check_values(aj::cross(u, w), {2, 3}, {0, 0, 1, 0, 0, 0});
    check_values(aj::cross(aj::from_vector<double>({1, 2}), aj::from_vector<double>({3, 4})), {}, {-2});
  });
  CHECK_THROWS_WITH_AS(aj::tensordot(aj::ones({2, 3}), aj::ones({2, 3}), 1), doctest::Contains("differ in extent"),
                       aj::Error);
  CHECK_THROWS_WITH_AS(aj::cross(aj::ones({4}), aj::ones({4})), doctest::Contains("2 or 3 components"), aj::Error);
}

TEST_CASE("shape functions: the C functions compute what the C++ ones do; several results all or none") {
  const Array x = aj::from_vector(ids(12, 7), Shape{3, 4});
  aj_array h = aj::to_c(x), out{0};
  auto same = [&](aj_status s, const Array& want) { ajtest::check_c_result(s, out, want); };
  const int32_t ax0 = 0, src = 0, dst = 1;
  same(aj_flip(h, &ax0, 1, &out), aj::flip(x, 0));
  same(aj_flip(h, nullptr, 0, &out), aj::flip(x));
  same(aj_swapaxes(h, 0, 1, &out), aj::swapaxes(x, 0, 1));
  same(aj_moveaxis(h, &src, &dst, 1, &out), aj::moveaxis(x, 0, 1));
  const int64_t reps[2] = {2, 1}, two = 2;
  same(aj_tile(h, reps, 2, &out), aj::tile(x, {2, 1}));
  same(aj_repeat(h, &two, 1, &ax0, &out), aj::repeat(x, 2, 0));
  same(aj_tril(h, 1, &out), aj::tril(x, 1));
  same(aj_triu(h, -1, &out), aj::triu(x, -1));
  same(aj_diagonal(h, 1, 0, 1, &out), aj::diagonal(x, 1));
  same(aj_trace(h, 0, 0, 1, &out), aj::linalg::trace(x, 0, 0, 1));
  same(aj_atleast_3d(h, &out), aj::atleast_3d(x));
  same(aj_logspace(0, 2, 3, 10, AJ_F64, &out), aj::logspace(0, 2, 3, 10, DType::f64));
  same(aj_outer(h, h, &out), aj::outer(x, x));
  same(aj_kron(h, h, &out), aj::kron(x, x));
  {
    const Array xt = aj::transpose(x);
    aj_array ht = aj::to_c(xt);
    same(aj_dot(h, ht, &out), aj::dot(x, xt));
    aj_array_release(ht);
  }
  aj_array pieces[3];
  REQUIRE(aj_array_split(h, 3, 1, pieces) == AJ_OK);
  const auto want = aj::array_split(x, 3, 1);
  for (int i = 0; i < 3; ++i) {
    CHECK(aj::from_c(pieces[i]).to_vector<double>() == want[static_cast<std::size_t>(i)].to_vector<double>());
    aj_array_release(pieces[i]);
  }
  // A wrong count writes nothing.
  aj_array rows[2] = {{7}, {7}};
  CHECK(aj_unstack(h, 0, rows, 2) == AJ_ERROR_USER);
  CHECK(rows[0]._id == 0);
  CHECK(rows[1]._id == 0);
  CHECK(std::string(aj_last_error()).find("aj_unstack") != std::string::npos);
  aj_array_release(h);
}

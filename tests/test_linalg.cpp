// numpy.linalg in arrayjit (arrayjit/linalg.hpp, issue 37 point 1): every
// routine against Eigen's own decompositions or against the identities that
// define it (a = q r with q orthonormal, a v = v diag(w), ...), in f32 and
// f64, batched with broadcasting, on strided views, on the JIT and the
// interpreter and on the reference interpreter (plain loops and Eigen);
// NumPy's errors (singular, not positive definite) as located errors that
// leave the session usable; every derivative against central differences in
// f64 with forward mode checked as reverse mode's transpose
// (tests/autodiff_check.hpp); compiled replays.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/autodiff_check.hpp"
#include "tests/cuda_fake_driver.hpp"
#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
namespace la = aj::linalg;
using M = Eigen::MatrixXd;

std::vector<double> normals(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return ajtest::normal_values(static_cast<std::size_t>(n), rng);
}

Array random(Shape s, std::uint64_t seed, DType t = DType::f64) {
  return aj::from_vector(normals(s.numel(), seed), s).astype(t);
}

// Matrix k of a batch [..., r, c] (row-major values of the whole array).
M matrix(const std::vector<double>& v, const Shape& s, std::int64_t k) {
  const std::int64_t r = s[s.ndim() - 2], c = s[s.ndim() - 1];
  M m(r, c);
  for (std::int64_t i = 0; i < r; ++i) {
    for (std::int64_t j = 0; j < c; ++j) m(i, j) = v[static_cast<std::size_t>(k * r * c + i * c + j)];
  }
  return m;
}
M matrix(const Array& a, std::int64_t k = 0) { return matrix(a.to_vector<double>(), a.shape(), k); }
std::int64_t batches(const Array& a) { return a.ndim() <= 2 ? 1 : a.size() / (a.shape()[a.ndim() - 1] * a.shape()[a.ndim() - 2]); }

double tol(DType t) { return t == DType::f64 ? 1e-10 : 2e-4; }

void close(const M& got, const M& want, double eps, const std::string& what) {
  INFO(what);
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  const double err = (got - want).cwiseAbs().maxCoeff(), scale = std::max(1.0, want.cwiseAbs().maxCoeff());
  CHECK_MESSAGE(err <= eps * scale, what << ": max error " << err << "\ngot\n" << got << "\nwant\n" << want);
}

// Columns scaled to a positive largest-magnitude entry (vectors are unique
// up to sign).
M signs_fixed(M v) {
  for (Eigen::Index j = 0; j < v.cols(); ++j) {
    Eigen::Index at = 0;
    v.col(j).cwiseAbs().maxCoeff(&at);
    if (v(at, j) < 0) v.col(j) *= -1;
  }
  return v;
}

// A well-conditioned square matrix: random plus n on the diagonal.
Array conditioned(Shape s, std::uint64_t seed, DType t = DType::f64) {
  const std::int64_t n = s[s.ndim() - 1];
  return (random(s, seed) + aj::eye(n, std::nullopt, 0, DType::f64) * static_cast<double>(n)).astype(t);
}
// Symmetric positive definite: a a^T + n I.
Array spd(Shape s, std::uint64_t seed, DType t = DType::f64) {
  const Array a = random(s, seed);
  const std::int64_t n = s[s.ndim() - 1];
  return (aj::matmul(a, aj::matrix_transpose(a)) + aj::eye(n, std::nullopt, 0, DType::f64) * static_cast<double>(n))
      .astype(t);
}

}  // namespace

TEST_CASE("linalg: solvers and factorizations against Eigen, f32 and f64, batched, strided, both executors") {
  ajtest::on_both([] {
    for (DType t : {DType::f64, DType::f32}) {
      CAPTURE(aj::dtype_name(t));
      const double eps = tol(t);
      // solve with batch broadcasting: a [2, 1, 5, 5], b [3, 5, 2].
      const Array a = conditioned({2, 1, 5, 5}, 1, t), b = random({3, 5, 2}, 2, DType::f64).astype(t);
      const Array x = la::solve(a, b);
      CHECK(x.shape() == Shape{2, 3, 5, 2});
      CHECK(x.dtype() == t);
      for (std::int64_t i = 0; i < 2; ++i) {
        for (std::int64_t j = 0; j < 3; ++j) {
          const M am = matrix(a, i), bm = matrix(b, j);
          close(matrix(x, i * 3 + j), am.partialPivLu().solve(bm), eps, "solve");
        }
      }
      // A vector b, and a transposed (strided) a.
      const Array at = aj::matrix_transpose(conditioned({4, 4}, 3, t));
      const Array v = random({4}, 4, DType::f64).astype(t);
      const Array xv = la::solve(at, v);
      CHECK(xv.shape() == Shape{4});
      close(matrix(aj::reshape(xv, {4, 1})), matrix(at).partialPivLu().solve(matrix(aj::reshape(v, {4, 1}))), eps,
            "solve of a vector by a transposed matrix");
      // inv, det, slogdet.
      const Array c = conditioned({3, 4, 4}, 5, t);
      const Array ci = la::inv(c), d = la::det(c);
      const la::SlogDet sl = la::slogdet(c);
      const auto dv = d.to_vector<double>(), sv = sl.sign.to_vector<double>(), lv = sl.logabsdet.to_vector<double>();
      for (std::int64_t k = 0; k < 3; ++k) {
        const M cm = matrix(c, k);
        close(matrix(ci, k), cm.inverse(), eps, "inv");
        const double want = cm.determinant();
        CHECK(std::fabs(dv[static_cast<std::size_t>(k)] - want) <= eps * std::max(1.0, std::fabs(want)) * 10);
        CHECK(sv[static_cast<std::size_t>(k)] == (want > 0 ? 1.0 : -1.0));
        CHECK(std::fabs(lv[static_cast<std::size_t>(k)] - std::log(std::fabs(want))) <= eps * 10);
      }
      // cholesky, lower and upper; only the lower triangle is read.
      const Array s = spd({2, 5, 5}, 6, t);
      const Array junk = aj::triu(random({2, 5, 5}, 7, DType::f64).astype(t), 1);
      const Array l = la::cholesky(aj::tril(s) + junk), u = la::cholesky(s, true);
      for (std::int64_t k = 0; k < 2; ++k) {
        const M want = M(matrix(s, k).llt().matrixL());
        close(matrix(l, k), want, eps, "cholesky lower");
        close(matrix(u, k), want.transpose(), eps, "cholesky upper");
      }
      // triangular_solve: every combination of lower, transpose, unit.
      const Array tri = conditioned({4, 4}, 8, t), rhs = random({4, 3}, 9, DType::f64).astype(t);
      for (int f = 0; f < 8; ++f) {
        const bool lower = f & 1, trans = f & 2, unit = f & 4;
        CAPTURE(lower);
        CAPTURE(trans);
        CAPTURE(unit);
        M tm = matrix(tri);
        tm = lower ? M(tm.triangularView<Eigen::Lower>()) : M(tm.triangularView<Eigen::Upper>());
        if (unit) tm.diagonal().setOnes();
        if (trans) tm.transposeInPlace();
        close(matrix(la::triangular_solve(tri, rhs, lower, trans, unit)), tm.lu().solve(matrix(rhs)), eps * 10,
              "triangular_solve");
      }
      // lu of square, tall and wide matrices: p l u = a, l unit lower, u upper.
      for (const Shape& sh : {Shape{5, 5}, Shape{6, 3}, Shape{3, 6}}) {
        CAPTURE(sh.str());
        const Array m = random(sh, 10, DType::f64).astype(t);
        const la::PLU f = la::lu(m);
        const std::int64_t k = std::min(sh[0], sh[1]);
        CHECK(f.p.shape() == Shape{sh[0], sh[0]});
        CHECK(f.l.shape() == Shape{sh[0], k});
        CHECK(f.u.shape() == Shape{k, sh[1]});
        const M lm = matrix(f.l), um = matrix(f.u);
        close(matrix(f.p) * lm * um, matrix(m), eps, "p l u");
        CHECK(lm.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().isZero());
        CHECK(lm.diagonal().isOnes());
        CHECK(um.triangularView<Eigen::StrictlyLower>().toDenseMatrix().isZero());
        if (sh[0] == sh[1]) {  // the same pivots as Eigen's partial pivoting
          const Eigen::PartialPivLU<M> e(matrix(m));
          close(matrix(la::lu_factor(m).lu), e.matrixLU(), eps * 10, "lu_factor against Eigen");
        }
      }
    }
  });
}

TEST_CASE("linalg: solve at the sizes of both paths (our small elimination up to 32, LAPACK above), singular in both") {
  for (std::int64_t n : {1, 7, 32, 33, 60}) {
    CAPTURE(n);
    for (DType t : {DType::f64, DType::f32}) {
      const Array a = conditioned({3, n, n}, 100 + static_cast<std::uint64_t>(n), t);
      const Array b = random({3, n, 5}, 200, DType::f64).astype(t);
      const Array x = la::solve(a, b), ai = la::inv(a);
      for (std::int64_t k = 0; k < 3; ++k) {
        const M am = matrix(a, k);
        close(matrix(x, k), am.partialPivLu().solve(matrix(b, k)), tol(t) * 10, "solve");
        close(matrix(ai, k), am.inverse(), tol(t) * 10, "inv");
      }
    }
    // A zero column: an exactly zero pivot, whichever path.
    std::vector<double> v = normals(n * n, 300);
    for (std::int64_t r = 0; r < n; ++r) v[static_cast<std::size_t>(r * n + n / 2)] = 0;
    std::string msg = "no error";
    try {
      la::inv(aj::from_vector(v, Shape{n, n})).eval();
    } catch (const aj::Error& e) {
      msg = e.what();
    }
    CHECK(msg.find("aj::inv: the matrix is singular") != std::string::npos);
  }
}

TEST_CASE("linalg: qr, svd and eigh by their defining identities and against Eigen's values") {
  ajtest::on_both([] {
    for (DType t : {DType::f64, DType::f32}) {
      CAPTURE(aj::dtype_name(t));
      const double eps = tol(t);
      for (const Shape& sh : {Shape{2, 6, 4}, Shape{2, 4, 6}, Shape{2, 5, 5}}) {
        CAPTURE(sh.str());
        const Array a = random(sh, 11, DType::f64).astype(t);
        const std::int64_t m = sh[1], n = sh[2], k = std::min(m, n);
        for (la::QRMode mode : {la::QRMode::reduced, la::QRMode::complete}) {
          const la::QR f = la::qr(a, mode);
          const std::int64_t q = mode == la::QRMode::complete ? m : k;
          CHECK(f.q.shape() == Shape{2, m, q});
          CHECK(f.r.shape() == Shape{2, q, n});
          for (std::int64_t b = 0; b < 2; ++b) {
            const M qm = matrix(f.q, b), rm = matrix(f.r, b);
            close(qm * rm, matrix(a, b), eps, "q r");
            close(qm.transpose() * qm, M::Identity(q, q), eps, "q orthonormal");
            CHECK(rm.triangularView<Eigen::StrictlyLower>().toDenseMatrix().isZero());
          }
        }
        CHECK_FALSE(la::qr(a, la::QRMode::r).q.valid());
        for (bool full : {true, false}) {
          const la::SVD f = la::svd(a, full);
          const std::int64_t u = full ? m : k, v = full ? n : k;
          CHECK(f.u.shape() == Shape{2, m, u});
          CHECK(f.s.shape() == Shape{2, k});
          CHECK(f.vh.shape() == Shape{2, v, n});
          const auto sv = f.s.to_vector<double>();
          const auto vals = la::svdvals(a).to_vector<double>();
          for (std::int64_t b = 0; b < 2; ++b) {
            const M um = matrix(f.u, b), vm = matrix(f.vh, b);
            Eigen::VectorXd s(k);
            for (std::int64_t i = 0; i < k; ++i) s(i) = sv[static_cast<std::size_t>(b * k + i)];
            const Eigen::JacobiSVD<M> e(matrix(a, b));
            close(s, e.singularValues(), eps, "singular values");
            for (std::int64_t i = 0; i < k; ++i) CHECK(std::fabs(vals[static_cast<std::size_t>(b * k + i)] - s(i)) <= eps);
            close(um.leftCols(k) * s.asDiagonal() * vm.topRows(k), matrix(a, b), eps, "u s vh");
            close(um.transpose() * um, M::Identity(u, u), eps, "u orthonormal");
            close(vm * vm.transpose(), M::Identity(v, v), eps, "vh orthonormal");
          }
        }
      }
      // eigh: a v = v diag(w), ascending, orthonormal; upper reads the upper triangle.
      const Array s = spd({3, 6, 6}, 12, t) - 6.0;
      for (bool upper : {false, true}) {
        const Array seen = upper ? aj::triu(s) : aj::tril(s);
        const la::Eigh e = la::eigh(seen, upper);
        const auto w = e.eigenvalues.to_vector<double>(), wv = la::eigvalsh(seen, upper).to_vector<double>();
        for (std::int64_t b = 0; b < 3; ++b) {
          const M sm = matrix(s, b), vm = matrix(e.eigenvectors, b);
          Eigen::VectorXd wb(6);
          for (int i = 0; i < 6; ++i) wb(i) = w[static_cast<std::size_t>(b * 6 + i)];
          const Eigen::SelfAdjointEigenSolver<M> ref(sm);
          close(wb, ref.eigenvalues(), eps * 10, "eigenvalues");
          close(sm * vm, vm * wb.asDiagonal(), eps * 10, "a v = v w");
          close(vm.transpose() * vm, M::Identity(6, 6), eps, "v orthonormal");
          close(signs_fixed(vm), signs_fixed(ref.eigenvectors()), eps * 100, "eigenvectors against Eigen's");
          for (int i = 0; i < 6; ++i) CHECK(std::fabs(wv[static_cast<std::size_t>(b * 6 + i)] - wb(i)) <= eps * 10);
        }
      }
    }
  });
}

TEST_CASE("linalg: norms, powers, rank, pinv and lstsq against Eigen") {
  const Array a = random({4, 3}, 13);
  const M am = matrix(a);
  const Eigen::JacobiSVD<M> e(am);
  auto item = [](const Array& x) { return x.item<double>(); };
  CHECK(item(la::norm(a)) == doctest::Approx(am.norm()).epsilon(1e-12));
  CHECK(item(la::norm(a, "fro")) == doctest::Approx(am.norm()).epsilon(1e-12));
  CHECK(item(la::norm(a, "nuc")) == doctest::Approx(e.singularValues().sum()).epsilon(1e-12));
  CHECK(item(la::norm(a, 2)) == doctest::Approx(e.singularValues()(0)).epsilon(1e-12));
  CHECK(item(la::norm(a, -2)) == doctest::Approx(e.singularValues()(2)).epsilon(1e-12));
  CHECK(item(la::norm(a, 1)) == doctest::Approx(am.cwiseAbs().colwise().sum().maxCoeff()).epsilon(1e-12));
  CHECK(item(la::norm(a, -1)) == doctest::Approx(am.cwiseAbs().colwise().sum().minCoeff()).epsilon(1e-12));
  CHECK(item(la::norm(a, INFINITY)) == doctest::Approx(am.cwiseAbs().rowwise().sum().maxCoeff()).epsilon(1e-12));
  CHECK(item(la::norm(a, -INFINITY)) == doctest::Approx(am.cwiseAbs().rowwise().sum().minCoeff()).epsilon(1e-12));
  // Vector norms along an axis, keepdims, and the array API's names.
  const Array cols = la::norm(a, 3.0, std::vector<int>{0}, true);
  CHECK(cols.shape() == Shape{1, 3});
  const auto cv = cols.to_vector<double>();
  for (int j = 0; j < 3; ++j) {
    CHECK(cv[static_cast<std::size_t>(j)] == doctest::Approx(std::cbrt(am.col(j).cwiseAbs().array().cube().sum())));
  }
  CHECK(item(la::vector_norm(a, 0.0)) == 12.0);
  CHECK(item(la::vector_norm(a, INFINITY)) == doctest::Approx(am.cwiseAbs().maxCoeff()));
  CHECK(item(la::vector_norm(a, 1.0)) == doctest::Approx(am.cwiseAbs().sum()));
  CHECK(item(la::matrix_norm(a, 2)) == doctest::Approx(e.singularValues()(0)));
  CHECK(la::norm(aj::arange(5)).dtype() == DType::f64);  // integers as f64
  CHECK(item(la::norm(aj::arange(5))) == doctest::Approx(std::sqrt(30.0)));
  // matrix_power, positive, zero and negative.
  const Array c = conditioned({3, 3}, 14);
  const M cm = matrix(c);
  close(matrix(la::matrix_power(c, 5)), cm * cm * cm * cm * cm, 1e-10, "matrix_power 5");
  close(matrix(la::matrix_power(c, 0)), M::Identity(3, 3), 0, "matrix_power 0");
  close(matrix(la::matrix_power(c, -2)), (cm * cm).inverse(), 1e-10, "matrix_power -2");
  CHECK(la::matrix_power(aj::from_vector<std::int64_t>({1, 1, 1, 0}, {2, 2}), 10).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{89, 55, 55, 34});  // Fibonacci, in integers
  // matrix_rank of a rank-2 product, pinv's Moore-Penrose identities.
  const Array r2 = aj::matmul(random({5, 2}, 15), random({2, 4}, 16));
  CHECK(la::matrix_rank(r2).item<std::int64_t>() == 2);
  CHECK(la::matrix_rank(a).item<std::int64_t>() == 3);
  CHECK(la::matrix_rank(aj::zeros({3})).item<std::int64_t>() == 0);
  const Array p = la::pinv(r2);
  const M rm = matrix(r2), pm = matrix(p);
  close(rm * pm * rm, rm, 1e-10, "a pinv a = a");
  close(pm * rm * pm, pm, 1e-10, "pinv a pinv = pinv");
  close(M((rm * pm).transpose()), rm * pm, 1e-10, "a pinv symmetric");
  // lstsq: a tall full-rank system against the normal equations.
  const Array b = random({4, 2}, 17);
  const la::Lstsq ls = la::lstsq(a, b);
  const M want = (am.transpose() * am).ldlt().solve(am.transpose() * matrix(b));
  close(matrix(ls.x), want, 1e-10, "lstsq x");
  CHECK(ls.rank.item<std::int64_t>() == 3);
  const M res = matrix(b) - am * want;
  const auto rv = ls.residuals.to_vector<double>();
  REQUIRE(rv.size() == 2);
  for (int j = 0; j < 2; ++j) CHECK(rv[static_cast<std::size_t>(j)] == doctest::Approx(res.col(j).squaredNorm()));
  const la::Lstsq lv = la::lstsq(a, aj::reshape(aj::slice(b, 1, 0, 1), {4}));
  CHECK(lv.x.shape() == Shape{3});
  CHECK(lv.residuals.shape() == Shape{});
  CHECK(la::lstsq(aj::matrix_transpose(a), random({3}, 18)).residuals.shape() == Shape{0});
}

TEST_CASE("linalg: the reference interpreter computes the same") {
  const Array a = conditioned({2, 5, 5}, 20), b = random({2, 5, 3}, 21), s = spd({2, 5, 5}, 22);
  const Array w = random({2, 6, 4}, 23);
  auto all = [&] {
    const la::QR q = la::qr(w);
    const la::SVD v = la::svd(w, false);
    const la::Eigh e = la::eigh(s);
    const la::LUFactor f = la::lu_factor(w);
    return std::vector<Array>{la::solve(a, b), la::inv(a), la::cholesky(s), la::triangular_solve(a, b, true, true),
                              f.lu, f.pivots.astype(DType::f64), f.permutation.astype(DType::f64), q.q, q.r,
                              v.u, v.s, v.vh, e.eigenvalues, e.eigenvectors, la::det(a)};
  };
  std::vector<Array> opt = all(), ref = all();
  aj::eval(opt);
  {
    aj::detail::ExecutorScope scope(aj::detail::Executor::reference);
    aj::eval(ref);
  }
  for (std::size_t i = 0; i < opt.size(); ++i) {
    CAPTURE(i);
    for (std::int64_t k = 0; k < batches(opt[i]); ++k) {
      if (opt[i].ndim() < 2) {
        const auto x = opt[i].to_vector<double>(), y = ref[i].to_vector<double>();
        for (std::size_t j = 0; j < x.size(); ++j) CHECK(std::fabs(x[j] - y[j]) <= 1e-10 * std::max(1.0, std::fabs(y[j])));
        break;
      }
      const bool vectors = i == 7 || i == 8 || i == 9 || i == 11 || i == 13;  // unique up to sign
      if (i == 11) {  // rows of vh
        close(signs_fixed(matrix(opt[i], k).transpose()), signs_fixed(matrix(ref[i], k).transpose()), 1e-9, "vh");
      } else if (i == 8) {  // r's rows follow q's columns' signs
        close(matrix(opt[i], k).cwiseAbs(), matrix(ref[i], k).cwiseAbs(), 1e-9, "|r|");
      } else if (vectors) {
        close(signs_fixed(matrix(opt[i], k)), signs_fixed(matrix(ref[i], k)), 1e-9, "vectors");
      } else {
        close(matrix(opt[i], k), matrix(ref[i], k), 1e-10, "values");
      }
    }
  }
}

TEST_CASE("linalg: NumPy's errors, located, and the session goes on") {
  const Array singular = aj::from_vector<double>({1, 2, 2, 4}, {2, 2});
  auto message = [](auto f) {
    try {
      f();
    } catch (const aj::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string solve_msg = message([&] { la::solve(singular, aj::ones({2}, DType::f64)).eval(); });
  CHECK(solve_msg.find("aj::solve: the matrix is singular") != std::string::npos);
  CHECK(solve_msg.find("test_linalg.cpp:") != std::string::npos);
  CHECK(message([&] { la::inv(singular).eval(); }).find("aj::inv: the matrix is singular") != std::string::npos);
  // Which matrix of a batch.
  const Array batch = aj::stack({aj::eye(2, std::nullopt, 0, DType::f64), singular, singular});
  CHECK(message([&] { la::inv(batch).eval(); }).find("batch element 1 of 3") != std::string::npos);
  const std::string chol = message([&] { la::cholesky(-spd({3, 3}, 30)).eval(); });
  CHECK(chol.find("aj::cholesky: the matrix is not positive definite") != std::string::npos);
  CHECK(chol.find("test_linalg.cpp:") != std::string::npos);
  // det and slogdet of a singular matrix are values, as NumPy's.
  CHECK(la::det(singular).item<double>() == 0.0);
  CHECK(la::slogdet(singular).sign.item<double>() == 0.0);
  CHECK(std::isinf(la::slogdet(singular).logabsdet.item<double>()));
  // Arguments: trace-time errors naming the op.
  CHECK(message([] { la::inv(aj::ones({2, 3})); }).find("aj::inv: needs square matrices") != std::string::npos);
  CHECK(message([] { la::cholesky(aj::ones({3})); }).find("aj::cholesky: needs matrices (rank >= 2)") != std::string::npos);
  CHECK(message([] { la::svd(aj::ones({3, 3}, DType::f16)); }).find("aj::svd: takes f32 or f64") != std::string::npos);
  CHECK(message([] { la::solve(aj::eye(3), aj::ones({4})); }).find("b's rows (4) differ from a's 3") != std::string::npos);
  CHECK(message([] { la::solve(aj::ones({2, 3, 3}), aj::ones({4, 3, 1})); }).find("cannot be broadcast") !=
        std::string::npos);
  CHECK(message([] { la::norm(aj::ones({2, 2}), "max"); }).find("ord must be a number") != std::string::npos);
  CHECK(message([] { la::norm(aj::ones({2, 2, 2}), 1); }).find("needs a 1-d or 2-d array or an axis") !=
        std::string::npos);
  // Integers as f64; the session still evaluates after the errors.
  const Array ints = aj::from_vector<std::int64_t>({4, 1, 1, 3}, {2, 2});
  CHECK(la::inv(ints).dtype() == DType::f64);
  CHECK(la::det(ints).item<double>() == doctest::Approx(11.0));
  const Array x = la::solve(conditioned({3, 3}, 31), aj::ones({3}, DType::f64));
  CHECK(x.to_vector<double>().size() == 3);
}

TEST_CASE("linalg: empty matrices") {
  const Array e = aj::zeros({0, 0}, DType::f64);
  CHECK(la::inv(e).shape() == Shape{0, 0});
  CHECK(la::det(e).item<double>() == 1.0);
  CHECK(la::cholesky(e).shape() == Shape{0, 0});
  CHECK(la::svdvals(aj::zeros({3, 0}, DType::f64)).shape() == Shape{0});
  const la::SVD f = la::svd(aj::zeros({2, 0}, DType::f64));
  CHECK(matrix(f.u) == M::Identity(2, 2));
  CHECK(la::eigvalsh(e).shape() == Shape{0});
  CHECK(la::solve(aj::zeros({2, 3, 3}, DType::f64) + aj::eye(3, std::nullopt, 0, DType::f64), aj::zeros({2, 3, 0}))
            .shape() == Shape{2, 3, 0});
}

TEST_CASE("linalg: derivatives against central differences, forward mode as reverse mode's transpose") {
  using ajtest::Arg;
  std::mt19937_64 rng(40);
  auto values = [&](std::int64_t n) { return ajtest::normal_values(static_cast<std::size_t>(n), rng); };
  // Well-conditioned square arguments: random + n I.
  auto square = [&](std::int64_t n, bool strided = false) {
    std::vector<double> v = values(n * n);
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i * n + i)] += static_cast<double>(n);
    return Arg{v, Shape{n, n}, strided};
  };
  auto plain = [&](Shape s) { return Arg{values(s.numel()), s, false}; };
  auto sym = [](const Array& x) { return (x + aj::matrix_transpose(x)) * 0.5; };
  auto spd_of = [&](const Array& x) {
    return aj::matmul(x, aj::matrix_transpose(x)) + aj::eye(x.shape()[0], std::nullopt, 0, DType::f64);
  };
  using V = std::vector<Array>;
  ajtest::check_gradient("solve", [](const V& x) { return V{la::solve(x[0], x[1])}; }, {square(4, true), plain({4, 2})}, 1);
  ajtest::check_gradient("solve, vector b", [](const V& x) { return V{la::solve(x[0], x[1])}; }, {square(3), plain({3})}, 2);
  ajtest::check_gradient("inv", [](const V& x) { return V{la::inv(x[0])}; }, {square(4)}, 3);
  for (int f = 0; f < 8; ++f) {
    const bool lower = f & 1, trans = f & 2, unit = f & 4;
    ajtest::check_gradient("triangular_solve " + std::to_string(f),
                           [=](const V& x) { return V{la::triangular_solve(x[0], x[1], lower, trans, unit)}; },
                           {square(3), plain({3, 2})}, 4 + static_cast<std::uint64_t>(f));
  }
  ajtest::check_gradient("cholesky", [&](const V& x) { return V{la::cholesky(sym(x[0]))}; }, {square(4)}, 20);
  ajtest::check_gradient("cholesky of a product", [&](const V& x) { return V{la::cholesky(spd_of(x[0]), true)}; },
                         {plain({3, 3})}, 21);
  ajtest::check_gradient("lu", [](const V& x) {
    const la::PLU f = la::lu(x[0]);
    return V{f.l, f.u};
  }, {square(4, true)}, 22);
  ajtest::check_gradient("det", [](const V& x) { return V{la::det(x[0])}; }, {square(4)}, 23);
  ajtest::check_gradient("slogdet", [](const V& x) { return V{la::slogdet(x[0]).logabsdet}; }, {square(3)}, 24);
  for (const Shape& s : {Shape{5, 3}, Shape{4, 4}}) {
    ajtest::check_gradient("qr " + s.str(), [](const V& x) {
      const la::QR f = la::qr(x[0]);
      return V{f.q, f.r};
    }, {plain(s)}, 25);
  }
  ajtest::check_gradient("qr complete, square", [](const V& x) {
    const la::QR f = la::qr(x[0], la::QRMode::complete);
    return V{f.q, f.r};
  }, {plain({3, 3})}, 26);
  for (const Shape& s : {Shape{5, 3}, Shape{3, 5}, Shape{4, 4}}) {
    ajtest::check_gradient("svd " + s.str(), [](const V& x) {
      const la::SVD f = la::svd(x[0], false);
      return V{f.u, f.s, f.vh};
    }, {plain(s)}, 27);
    ajtest::check_gradient("svdvals " + s.str(), [](const V& x) { return V{la::svdvals(x[0])}; }, {plain(s)}, 28);
  }
  ajtest::check_gradient("svd full, square", [](const V& x) {
    const la::SVD f = la::svd(x[0], true);
    return V{f.u, f.s, f.vh};
  }, {plain({3, 3})}, 29);
  ajtest::check_gradient("eigh", [&](const V& x) {
    const la::Eigh e = la::eigh(sym(x[0]));
    return V{e.eigenvalues, e.eigenvectors};
  }, {plain({4, 4})}, 30);
  ajtest::check_gradient("eigvalsh, upper", [&](const V& x) { return V{la::eigvalsh(sym(x[0]), true)}; },
                         {plain({4, 4})}, 31);
  ajtest::check_gradient("pinv", [](const V& x) { return V{la::pinv(x[0])}; }, {plain({4, 3})}, 32);
  ajtest::check_gradient("norms", [](const V& x) {
    return V{la::norm(x[0]), la::norm(x[0], 2), la::norm(x[0], "nuc"), la::norm(x[0], 1)};
  }, {plain({3, 4})}, 33);
  ajtest::check_gradient("matrix_power -3", [](const V& x) { return V{la::matrix_power(x[0], -3)}; }, {square(3)}, 34);
  ajtest::check_gradient("batched solve", [](const V& x) { return V{la::solve(x[0], x[1])}; },
                         {Arg{[&] {
                            std::vector<double> v = values(2 * 9);
                            for (int b = 0; b < 2; ++b) {
                              for (int i = 0; i < 3; ++i) v[static_cast<std::size_t>(b * 9 + i * 3 + i)] += 3;
                            }
                            return v;
                          }(), Shape{2, 3, 3}, false},
                          plain({3, 1})},
                         35);
  // Second order: the derivative of a derivative.
  const Array x0 = conditioned({3, 3}, 36);
  auto f = [](const Array& m) { return aj::sum(la::inv(m)); };
  const Array h = aj::grad([&](const Array& m) { return aj::sum(aj::grad(f)(m) * aj::grad(f)(m)); })(x0);
  CHECK(h.shape() == Shape{3, 3});
  for (double v : h.to_vector<double>()) CHECK(std::isfinite(v));
}

TEST_CASE("linalg: compiled replays and calls at new extents") {
  auto step = aj::compile([](const Array& a, const Array& b) {
    return la::solve(a, b) + la::det(a);
  });
  for (std::int64_t n : {4, 4, 6, 6, 3}) {
    CAPTURE(n);
    const Array a = conditioned({n, n}, static_cast<std::uint64_t>(50 + n)), b = random({n, 2}, 60);
    const M want = matrix(a).partialPivLu().solve(matrix(b)).array() + matrix(a).determinant();
    close(matrix(step(a, b)), want, 1e-10, "compiled solve + det");
  }
  // Solves, cholesky and eigh have extent rules: calls at new extents run
  // from the kept trace (lu, whose result has max(m, n) columns, traces).
  auto chol = aj::compile([](const Array& a, const Array& b) {
    const Array l = la::cholesky(a);
    return la::triangular_solve(l, la::triangular_solve(l, b, true), true, true) + aj::slice(la::eigvalsh(a), 0, 0, 1);
  });
  for (std::int64_t n : {3, 5, 4, 6, 7}) {
    CAPTURE(n);
    const Array a = spd({n, n}, static_cast<std::uint64_t>(70 + n)), b = random({n, 2}, 80);
    const M want = matrix(a).llt().solve(matrix(b)).array() + Eigen::SelfAdjointEigenSolver<M>(matrix(a)).eigenvalues()(0);
    close(matrix(chol(a, b)), want, 1e-9, "compiled cholesky solves");
  }
  CHECK(chol.counts().traces <= 2);
  CHECK(chol.counts().new_extents >= 3);
}

TEST_CASE("linalg: the C functions give the C++ results, and C errors") {
  const Array a = conditioned({4, 4}, 90), b = random({4, 2}, 91);
  aj_array ca = aj::to_c(a), cb = aj::to_c(b), x{0};
  REQUIRE(aj_linalg_solve(ca, cb, &x) == AJ_OK);
  close(matrix(aj::from_c(x)), matrix(la::solve(a, b)), 1e-12, "aj_linalg_solve");
  aj_array_release(x);
  aj_array parts[3] = {{0}, {0}, {0}};
  REQUIRE(aj_linalg_svd(ca, 0, parts, 3) == AJ_OK);
  const la::SVD f = la::svd(a, false);
  close(matrix(aj::reshape(aj::from_c(parts[1]), {1, 4})), matrix(aj::reshape(f.s, {1, 4})), 1e-12, "aj_linalg_svd s");
  for (aj_array& p : parts) aj_array_release(p);
  // A wrong output count is an error that writes nothing.
  CHECK(aj_linalg_qr(ca, AJ_QR_REDUCED, parts, 3) == AJ_ERROR_USER);
  CHECK(parts[0]._id == 0);
  CHECK(std::string(aj_last_error()).find("makes 2 arrays, the output list holds 3") != std::string::npos);
  REQUIRE(aj_linalg_qr(ca, AJ_QR_R, parts, 1) == AJ_OK);
  close(matrix(aj::from_c(parts[0])).cwiseAbs(), matrix(la::qr(a).r).cwiseAbs(), 1e-12, "aj_linalg_qr r");
  aj_array_release(parts[0]);
  const int32_t axes[2] = {0, 1};
  aj_array n{0};
  REQUIRE(aj_linalg_norm(ca, AJ_ORD_NUC, 0, axes, 2, 0, &n) == AJ_OK);
  CHECK(aj::from_c(n).item<double>() == doctest::Approx(la::norm(a, "nuc").item<double>()));
  aj_array_release(n);
  // A singular matrix: the error comes with the evaluation.
  aj_array s = aj::to_c(aj::zeros({2, 2}, DType::f64)), si{0};
  REQUIRE(aj_linalg_inv(s, &si) == AJ_OK);
  CHECK(aj_eval(si) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("inv: the matrix is singular") != std::string::npos);
  aj_array_release(si);
  aj_array_release(s);
  aj_array_release(ca);
  aj_array_release(cb);
}

TEST_CASE("cuda fake driver: linear algebra on a device is a clear error, not a silent host copy") {
  if (!ajtest::fake_cuda::have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  ajtest::fake_cuda::FakeGpu gpu;
  const Array a = conditioned({3, 3}, 95).to(aj::Device::cuda(0));
  std::string msg = "no error";
  try {
    la::inv(a).eval();
  } catch (const aj::Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("aj::inv: is not available on CUDA devices yet") != std::string::npos);
  CHECK(msg.find("test_linalg.cpp:") != std::string::npos);
  // Elementwise work on the device still runs after the refusal.
  CHECK((a * 2.0).to(aj::Device::cpu()).to_vector<double>().size() == 9);
}

// <arrayjit/eigen.hpp>: Eigen objects in (borrowed, their strides kept) and
// evaluated arrays out as Eigen::Map (zero-copy), checked against Eigen.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/eigen.hpp>

namespace {
Eigen::MatrixXd random_matrix(int rows, int cols, unsigned seed) {
  std::srand(seed);
  return Eigen::MatrixXd::Random(rows, cols);
}
}  // namespace

TEST_CASE("eigen: from_eigen borrows column-major, row-major, blocks and vectors with their strides") {
  Eigen::MatrixXd m = random_matrix(5, 7, 1);
  aj::Array a = aj::from_eigen(m);
  CHECK(a.shape() == aj::Shape{5, 7});
  CHECK(a.data().ptr == m.data());
  CHECK(a.data().strides == std::vector<std::int64_t>{1, 5});
  Eigen::MatrixXd twice = 2 * m;
  auto got = (a * 2).to_vector<double>();  // row-major
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) CHECK(got[static_cast<std::size_t>(i * 7 + j)] == twice(i, j));
  }

  auto block = m.block(1, 2, 3, 4);  // inner stride 1, outer stride 5
  aj::Array b = aj::from_eigen(block);
  CHECK(b.shape() == aj::Shape{3, 4});
  CHECK(aj::sum(b).item<double>() == doctest::Approx(block.sum()).epsilon(1e-12));
  CHECK(b.data().ptr == &m(1, 2));

  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = random_matrix(4, 3, 2).cast<float>();
  aj::Array ra = aj::from_eigen(r);
  CHECK(ra.data().strides == std::vector<std::int64_t>{3, 1});
  CHECK(ra.to_vector<float>() == std::vector<float>(r.data(), r.data() + 12));

  Eigen::VectorXd v = m.col(3);
  aj::Array va = aj::from_eigen(m.row(2));  // a row of a column-major matrix: stride 5
  CHECK(va.shape() == aj::Shape{7});
  CHECK(va.data().strides == std::vector<std::int64_t>{5});
  CHECK(aj::from_eigen(v).to_vector<double>() == std::vector<double>(v.data(), v.data() + 5));
  for (int j = 0; j < 7; ++j) CHECK(va.to_vector<double>()[static_cast<std::size_t>(j)] == m(2, j));

  Eigen::Map<const Eigen::MatrixXd, 0, Eigen::OuterStride<>> mapped(m.data(), 2, 7, Eigen::OuterStride<>(5));
  CHECK(aj::max(aj::from_eigen(mapped)).item<double>() == mapped.maxCoeff());
}

TEST_CASE("eigen: an evaluated array maps as Eigen::Map, zero-copy, in either storage order") {
  Eigen::MatrixXd m = random_matrix(6, 4, 3);
  aj::Array y = aj::exp(aj::from_eigen(m)) + 1;
  aj::ArrayData d = y.data();  // row-major 6 x 4
  auto rm = aj::to_eigen_row_major<double>(d);
  CHECK(rm.data() == d.ptr);
  CHECK(rm.innerStride() == 1);
  Eigen::MatrixXd want = (m.array().exp() + 1).matrix();
  CHECK(rm.isApprox(want, 1e-14));
  auto cm = aj::to_eigen<double>(d);  // the same memory walked with strides
  CHECK(cm.isApprox(want, 1e-14));

  aj::ArrayData t = y.T().data();  // column-major 4 x 6: the column-major map is the fast one
  auto tc = aj::to_eigen<double>(t);
  CHECK(tc.innerStride() == 1);
  CHECK(tc.isApprox(want.transpose(), 1e-14));

  CHECK_THROWS_AS(aj::to_eigen<float>(d), aj::Error);
  CHECK_THROWS_AS(aj::to_eigen<double>(aj::ones({2, 2, 2}, aj::DType::f64).data()), aj::Error);
  CHECK_THROWS_AS(aj::to_eigen<double>(aj::slice(y, 0, std::nullopt, std::nullopt, -1).data()), aj::Error);
}

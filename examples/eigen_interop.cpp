// Eigen in and out: arrayjit borrows Eigen's memory without copying (a
// row-major matrix, a column-major one, and a block inside a bigger matrix, all
// described by strides), computes, and hands results back as Eigen matrices
// through to_vector. Eigen computes the same things as the check.
//
// A borrowed buffer must stay alive and unchanged while arrays use it;
// arrayjit never writes to it.
#include <Eigen/Dense>

#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

// An Eigen matrix's entries in row-major order, whatever its own storage order.
std::vector<double> row_major(const Eigen::MatrixXd& m) {
  std::vector<double> v(static_cast<std::size_t>(m.size()));
  RowMajorMatrix::Map(v.data(), m.rows(), m.cols()) = m;
  return v;
}

}  // namespace

int main() {
  std::srand(7);  // Eigen's Random() draws from std::rand
  std::cout << "# Eigen matrices in both storage orders\n";
  STEP(RowMajorMatrix A = RowMajorMatrix::Random(4, 3));  // row-major: A(i, j) at i * 3 + j
  STEP(Eigen::MatrixXd B = Eigen::MatrixXd::Random(3, 5));  // column-major: B(i, j) at i + j * 3
  SHOW(A);

  std::cout << "\n# borrowed, not copied: the strides say where each element is\n";
  STEP(const Stats before = stats());
  STEP(Array a = borrow(A.data(), {4, 3}));          // row-major: the default strides {3, 1}
  STEP(Array b = borrow(B.data(), {3, 5}, {1, 3}));  // column-major: strides {1, rows}
  SHOW(stats().system_allocs - before.system_allocs);  // no buffer was made
  SHOW(a);
  SHOW(b);
  check("a reads A", values(a), row_major(A), 0);
  check("b reads B", values(b), row_major(B), 0);

  std::cout << "\n# compute, and copy the result back into an Eigen matrix\n";
  STEP(Array c = tanh(matmul(a, b)) + 1);
  STEP(std::vector<double> out = c.to_vector<double>());  // row-major, like the array
  STEP(Eigen::MatrixXd C = RowMajorMatrix::Map(out.data(), 4, 5));
  SHOW(C);
  STEP(Eigen::MatrixXd C_eigen = ((A * B).array().tanh() + 1).matrix());
  SHOW((C - C_eigen).cwiseAbs().maxCoeff());
  // Matmul sums in its own order and tanh is SLEEF's (within 4 ulp).
  check("tanh(A B) + 1 against Eigen", row_major(C), row_major(C_eigen), 1e-14, 1e-15);

  std::cout << "\n# or read it out transposed: a column-major Eigen matrix maps the data directly\n";
  STEP(std::vector<double> out_t = c.T().to_vector<double>());
  STEP(Eigen::Map<Eigen::MatrixXd> C_view(out_t.data(), 4, 5));
  check("column-major read-out", row_major(C_view), row_major(C_eigen), 1e-14, 1e-15);

  std::cout << "\n# a block inside a bigger matrix: the outer stride is the big matrix's\n";
  STEP(Eigen::MatrixXd M = Eigen::MatrixXd::Random(6, 8));
  STEP(auto block = M.block(1, 2, 3, 4));  // rows 1..3, columns 2..5, no copy
  STEP(Array m = borrow(&block(0, 0), {3, 4}, {1, M.rows()}));
  SHOW(m);
  SHOW(sum(m, 0));  // column sums
  SHOW(block.colwise().sum());
  check("block read in place", values(m), row_major(block), 0);
  const Eigen::RowVectorXd column_sums = block.colwise().sum();
  check("column sums against Eigen", values(sum(m, 0)),
        std::vector<double>(column_sums.data(), column_sums.data() + column_sums.size()), 1e-15, 1e-15);
  return example::finish();
}

// Linear algebra against NumPy and Eigen in the same run (issue 37 point 1):
// solve 1024^2 with 16 right-hand sides, cholesky 2048^2, svd 512^2 (with
// vectors, NumPy's default), eigh 512^2 (with vectors), batched inv 64 x 32^2,
// and det 1024^2; f64, one thread each (aj::jit::set_num_threads(1);
// NumPy under OPENBLAS_NUM_THREADS=1; Eigen single-threaded). Medians of wall
// times; the ratio is arrayjit over the best peer (target <= 1.1).
//
//   ./build/bench_linalg [runs]
#include <arrayjit/arrayjit.hpp>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

namespace la = aj::linalg;
using M = Eigen::MatrixXd;

int g_runs = 7;

double median_ms(const std::function<void()>& f) { return ajbench::wall_median_ms(f, g_runs, 1); }

// NumPy's median in ms of `stmt` after `setup` (the same matrices' shapes),
// one thread; -1 when NumPy cannot be run.
double numpy_ms(const std::string& setup, const std::string& stmt) {
  const std::string cmd = "OPENBLAS_NUM_THREADS=1 /usr/bin/python3 -c \"import numpy as np, time\n"
                          "rng = np.random.default_rng(1)\n" + setup + "\n" + stmt + "\nt = []\nfor i in range(" +
                          std::to_string(g_runs) + "):\n t0 = time.perf_counter(); " + stmt +
                          "; t.append(time.perf_counter() - t0)\nprint(sorted(t)[len(t) // 2] * 1e3)\" 2>/dev/null";
  return ajbench::command_number(cmd);
}

aj::Array random(aj::Shape s, std::uint64_t seed) {
  aj::random::seed(seed);
  return aj::random::normal(s, 0, 1, aj::DType::f64).eval();
}
aj::Array spd(std::int64_t n, std::uint64_t seed) {
  const aj::Array a = random({n, n}, seed);
  return (aj::matmul(a, aj::matrix_transpose(a)) + aj::eye(n, std::nullopt, 0, aj::DType::f64) * double(n)).eval();
}
M eigen_of(const aj::Array& a) {
  const std::int64_t r = a.shape()[a.ndim() - 2], c = a.shape()[a.ndim() - 1];
  const std::vector<double> v = a.to_vector<double>();
  M m(r, c);
  for (std::int64_t i = 0; i < r; ++i) {
    for (std::int64_t j = 0; j < c; ++j) m(i, j) = v[static_cast<std::size_t>(i * c + j)];
  }
  return m;
}

void row(const char* name, double ours, double eigen, double numpy) {
  const double best = numpy > 0 ? std::min(eigen, numpy) : eigen;
  std::printf("%-30s %10.3f %10.3f %10.3f %8.2fx\n", name, ours, eigen, numpy, ours / best);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_runs = std::max(3, std::atoi(argv[1]));
  aj::jit::set_num_threads(1);
  std::printf("%s", aj::jit::host_info().c_str());
  std::printf("f64, 1 thread, medians of %d runs, ms\n", g_runs);
  std::printf("%-30s %10s %10s %10s %9s\n", "case", "arrayjit", "Eigen", "NumPy", "vs best");
  volatile double sink = 0;
  {
    const aj::Array a = (random({1024, 1024}, 1) + aj::eye(1024, std::nullopt, 0, aj::DType::f64) * 32.0).eval();
    const aj::Array b = random({1024, 16}, 2);
    const M ae = eigen_of(a), be = eigen_of(b);
    const double ours = median_ms([&] { la::solve(a, b).eval(); });
    const double eig = median_ms([&] { sink = sink + M(ae.partialPivLu().solve(be))(0, 0); });
    const double np = numpy_ms("a = rng.standard_normal((1024, 1024)) + 32 * np.eye(1024); b = rng.standard_normal((1024, 16))",
                               "np.linalg.solve(a, b)");
    row("solve 1024^2, 16 rhs", ours, eig, np);
    const double det = median_ms([&] { la::det(a).eval(); });
    const double edet = median_ms([&] { sink = sink + ae.partialPivLu().determinant(); });
    row("det 1024^2", det, edet, numpy_ms("a = rng.standard_normal((1024, 1024))", "np.linalg.det(a)"));
  }
  {
    const aj::Array s = spd(2048, 3);
    const M se = eigen_of(s);
    const double ours = median_ms([&] { la::cholesky(s).eval(); });
    const double eig = median_ms([&] { sink = sink + M(se.llt().matrixL())(0, 0); });
    const double np = numpy_ms("x = rng.standard_normal((2048, 2048)); s = x @ x.T + 2048 * np.eye(2048)",
                               "np.linalg.cholesky(s)");
    row("cholesky 2048^2", ours, eig, np);
  }
  {
    const aj::Array a = random({512, 512}, 4);
    const M ae = eigen_of(a);
    const double ours = median_ms([&] {
      const la::SVD f = la::svd(a);
      aj::eval({f.u, f.s, f.vh});
    });
    const double eig = median_ms([&] {
      Eigen::BDCSVD<M> f(ae, Eigen::ComputeFullU | Eigen::ComputeFullV);
      sink = sink + f.singularValues()(0);
    });
    row("svd 512^2 (u, s, vh)", ours, eig, numpy_ms("a = rng.standard_normal((512, 512))", "np.linalg.svd(a)"));
    const double vals = median_ms([&] { la::svdvals(a).eval(); });
    const double evals = median_ms([&] { sink = sink + Eigen::BDCSVD<M>(ae).singularValues()(0); });
    row("svd 512^2 (values)", vals, evals,
        numpy_ms("a = rng.standard_normal((512, 512))", "np.linalg.svd(a, compute_uv=False)"));
  }
  {
    const aj::Array s = spd(512, 5);
    const M se = eigen_of(s);
    const double ours = median_ms([&] {
      const la::Eigh e = la::eigh(s);
      aj::eval({e.eigenvalues, e.eigenvectors});
    });
    const double eig = median_ms([&] { sink = sink + Eigen::SelfAdjointEigenSolver<M>(se).eigenvalues()(0); });
    row("eigh 512^2", ours, eig,
        numpy_ms("x = rng.standard_normal((512, 512)); s = x @ x.T + 512 * np.eye(512)", "np.linalg.eigh(s)"));
  }
  {
    const aj::Array a = (random({64, 32, 32}, 6) + aj::eye(32, std::nullopt, 0, aj::DType::f64) * 8.0).eval();
    std::vector<M> ae;
    const std::vector<double> v = a.to_vector<double>();
    for (int k = 0; k < 64; ++k) ae.push_back(Eigen::Map<const Eigen::Matrix<double, 32, 32, Eigen::RowMajor>>(v.data() + k * 1024));
    const double ours = median_ms([&] { la::inv(a).eval(); });
    const double eig = median_ms([&] {
      for (const M& m : ae) sink = sink + M(m.inverse())(0, 0);
    });
    row("inv 64 x 32^2", ours, eig,
        numpy_ms("a = rng.standard_normal((64, 32, 32)) + 8 * np.eye(32)", "np.linalg.inv(a)"));
  }
  return sink == 12345.0;
}

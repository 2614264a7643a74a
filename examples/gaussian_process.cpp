// Gaussian-process regression with aj::linalg, as a REPL session: the
// kernel matrix's Cholesky factor, two triangular solves, the negative log
// marginal likelihood and its gradient with respect to the kernel's length
// scale and noise (aj::value_and_grad through cholesky and the solves), a few
// steps of gradient descent on them, and the posterior mean.
//
// Checked a second way: the weights K^-1 y by Gaussian elimination in plain
// double loops, the log-determinant from those loops' pivots, the gradient by
// central differences of the loss, and the loss falling.
#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kN = 40;

// K^-1 y and log det K by Gaussian elimination with partial pivoting.
std::pair<std::vector<double>, double> solve_by_hand(std::vector<double> k, std::vector<double> y) {
  const int n = static_cast<int>(y.size());
  double logdet = 0;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(k[std::size_t(r * n + c)]) > std::abs(k[std::size_t(p * n + c)])) p = r;
    }
    for (int j = 0; j < n; ++j) std::swap(k[std::size_t(c * n + j)], k[std::size_t(p * n + j)]);
    std::swap(y[std::size_t(c)], y[std::size_t(p)]);
    logdet += std::log(std::abs(k[std::size_t(c * n + c)]));
    for (int r = c + 1; r < n; ++r) {
      const double f = k[std::size_t(r * n + c)] / k[std::size_t(c * n + c)];
      for (int j = c; j < n; ++j) k[std::size_t(r * n + j)] -= f * k[std::size_t(c * n + j)];
      y[std::size_t(r)] -= f * y[std::size_t(c)];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    for (int j = r + 1; j < n; ++j) y[std::size_t(r)] -= k[std::size_t(r * n + j)] * y[std::size_t(j)];
    y[std::size_t(r)] /= k[std::size_t(r * n + r)];
  }
  return {y, logdet};
}

// The squared-exponential kernel plus noise: exp(-(xi - xj)^2 / (2 l^2)) + s^2 I,
// with l = exp(p[0]) and s = exp(p[1]).
Array kernel(const Array& x, const Array& p) {
  const Array l = exp(slice(p, 0, 0, 1)), s = exp(slice(p, 0, 1, 2));
  const Array d = expand_dims(x, 1) - expand_dims(x, 0);
  return exp(-(d * d) / (2.0 * l * l)) + eye(kN, std::nullopt, 0, DType::f64) * (s * s);
}

// The negative log marginal likelihood: y^T K^-1 y / 2 + log det K / 2 + n log(2 pi) / 2.
Array nlml(const Array& x, const Array& y, const Array& p) {
  const Array L = linalg::cholesky(kernel(x, p));
  const Array z = linalg::triangular_solve(L, y, /*lower=*/true);  // L^-1 y
  return 0.5 * sum(z * z) + sum(log(diagonal(L))) + 0.5 * kN * std::log(2 * M_PI);
}

}  // namespace

int main() {
  std::cout << "# noisy samples of sin(x) on [0, 5]\n";
  STEP(random::seed(3));
  STEP(Array x = linspace(0, 5, kN, DType::f64));
  STEP(Array y = (sin(x) + 0.1 * random::normal({kN}, 0, 1, DType::f64)).eval());
  STEP(Array p = from_vector<double>({std::log(0.5), std::log(0.3)}));  // log length scale, log noise

  std::cout << "\n# the weights K^-1 y through the Cholesky factor\n";
  STEP(Array K = kernel(x, p));
  STEP(Array L = linalg::cholesky(K));
  STEP(Array alpha = linalg::triangular_solve(L, linalg::triangular_solve(L, y, true), true, /*transpose_a=*/true));
  const auto [by_hand, logdet] = solve_by_hand(values(K), values(y));
  check("K^-1 y against Gaussian elimination", values(alpha), by_hand, 1e-9, 1e-9);
  SHOW(linalg::slogdet(K).logabsdet);
  check("log det K = 2 sum log diag L", values(2.0 * sum(log(diagonal(L)))), {logdet}, 1e-10);

  std::cout << "\n# the loss and its gradient with respect to the two log parameters\n";
  STEP(auto loss_and_grad = value_and_grad([&](const Array& q) { return nlml(x, y, q); }));
  STEP(auto [loss, g] = loss_and_grad(p));
  SHOW(loss);
  SHOW(g);
  const double h = 1e-6;
  std::vector<double> fd;
  for (int i = 0; i < 2; ++i) {
    std::vector<double> up = values(p), down = values(p);
    up[std::size_t(i)] += h;
    down[std::size_t(i)] -= h;
    fd.push_back((nlml(x, y, from_vector(up)).item<double>() - nlml(x, y, from_vector(down)).item<double>()) / (2 * h));
  }
  check("gradient against central differences", values(g), fd, 1e-5, 1e-6);

  std::cout << "\n# 50 steps of gradient descent on the log parameters\n";
  const double first = loss.item<double>();
  for (int t = 0; t < 50; ++t) {
    auto [l, gt] = loss_and_grad(p);
    p = (p - 0.02 * gt).eval();
    if (t % 10 == 0) std::cout << "step " << t << ": loss " << l.item<double>() << "\n";
  }
  SHOW(exp(p));
  const double last = nlml(x, y, p).item<double>();
  std::cout << "loss " << first << " -> " << last << "\n";
  check("the loss fell", last < first ? 1.0 : 0.0, 1.0, 0);

  std::cout << "\n# the posterior mean at new points, against sin\n";
  STEP(Array xs = linspace(0.5, 4.5, 5, DType::f64));
  STEP(Array l = exp(slice(p, 0, 0, 1)));
  STEP(Array ks = exp(-square(expand_dims(xs, 1) - expand_dims(x, 0)) / (2.0 * l * l)));
  STEP(Array mean = matmul(ks, linalg::solve(kernel(x, p), y)));
  SHOW(mean);
  check("posterior mean near sin(x)", values(mean), values(sin(xs)), 0, 0.15);
  return example::finish();
}

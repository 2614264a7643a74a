// Softmax and layer normalization over the last axis of a batch of rows, as a
// transformer computes them, checked against plain double-precision loops.
//
// Both need a reduction broadcast back over its own input (the row maximum,
// the row mean), which is where a fused kernel must end: explain() shows the
// kernels the optimizer makes.
#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kRows = 64, kCols = 100;

std::vector<double> softmax_by_hand(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (int r = 0; r < kRows; ++r) {
    const double* in = &x[static_cast<std::size_t>(r * kCols)];
    double* out = &y[static_cast<std::size_t>(r * kCols)];
    double top = in[0], total = 0;
    for (int c = 0; c < kCols; ++c) top = std::max(top, in[c]);
    for (int c = 0; c < kCols; ++c) total += out[c] = std::exp(in[c] - top);
    for (int c = 0; c < kCols; ++c) out[c] /= total;
  }
  return y;
}

std::vector<double> layernorm_by_hand(const std::vector<double>& x, const std::vector<double>& gamma,
                                      const std::vector<double>& beta, double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < kRows; ++r) {
    const double* in = &x[static_cast<std::size_t>(r * kCols)];
    double* out = &y[static_cast<std::size_t>(r * kCols)];
    double mu = 0, var = 0;
    for (int c = 0; c < kCols; ++c) mu += in[c];
    mu /= kCols;
    for (int c = 0; c < kCols; ++c) var += (in[c] - mu) * (in[c] - mu);
    var /= kCols;
    for (int c = 0; c < kCols; ++c) {
      out[c] = (in[c] - mu) / std::sqrt(var + eps) * gamma[static_cast<std::size_t>(c)] +
               beta[static_cast<std::size_t>(c)];
    }
  }
  return y;
}

}  // namespace

int main() {
  std::cout << "# softmax of one small row, known by hand: e^k / (e + e^2 + e^3)\n";
  STEP(Array v = from_vector<float>({1, 2, 3}));
  SHOW(exp(v) / sum(exp(v)));
  check("softmax [1, 2, 3]", values(exp(v) / sum(exp(v))),
        {0.09003057317038046, 0.24472847105479767, 0.6652409557748219}, 1e-6);

  std::cout << "\n# softmax over the last axis of a batch, less the row maximum so exp never overflows\n";
  STEP(random::seed(17));
  STEP(Array x = random::normal({kRows, kCols}, 0, 3));
  STEP(Array shifted = x - max(x, -1, true));
  STEP(Array p = exp(shifted) / sum(exp(shifted), -1, true));
  SHOW(explain(p));
  SHOW(slice(p, {Slice(0, 2), Slice(0, 6)}));  // p[:2, :6]
  SHOW(sum(p, -1).shape());
  SHOW(min(sum(p, -1)));
  SHOW(max(sum(p, -1)));
  const std::vector<double> xs = values(x);
  // f32 math: exp within a few ulp, a row sum of 100 terms; relative to each value.
  check("softmax rows", values(p), softmax_by_hand(xs), 2e-6, 1e-9);
  check("softmax rows sum to 1", values(sum(p, -1)), std::vector<double>(kRows, 1.0), 1e-5);

  std::cout << "\n# layer normalization: zero mean and unit variance per row, then a scale and a shift\n";
  STEP(Array gamma = random::uniform({kCols}, 0.5, 1.5));
  STEP(Array beta = random::uniform({kCols}, -0.1, 0.1));
  STEP(double eps = 1e-5);
  STEP(Array mu = mean(x, -1, true));
  STEP(Array var = mean((x - mu) * (x - mu), -1, true));
  STEP(Array y = (x - mu) * rsqrt(var + eps) * gamma + beta);
  SHOW(y.shape());
  SHOW(slice(y, {Slice(0, 2), Slice(0, 6)}));  // y[:2, :6]
  STEP(Array z = (y - beta) / gamma);  // undo the scale and shift: what was normalized
  SHOW(max(abs(mean(z, -1))));         // every row mean is ~0
  SHOW(max(abs(mean(z * z, -1) - 1))); // every row variance is ~1 (less eps's share)
  // f32: mean and variance rounded once per row, the result a few ulp of a
  // value of size ~3.
  check("layernorm rows", values(y), layernorm_by_hand(xs, values(gamma), values(beta), eps), 1e-5,
        1e-5);
  check("layernorm row means", values(mean(z, -1)), std::vector<double>(kRows, 0.0), 0, 1e-5);
  check("layernorm row variances", values(mean(z * z, -1)), std::vector<double>(kRows, 1.0), 1e-4);
  return example::finish();
}

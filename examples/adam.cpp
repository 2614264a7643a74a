// Adam fitting a least-squares linear model, one eval() per step, checked
// against the same steps written as plain double loops.
//
// The step is traced as ordinary expressions; eval() fuses the updates of the
// weights and both moments into one kernel that writes them in place (the old
// values have no handle left), and the changing bias-correction scalars never
// recompile it: stats() below shows the in-place reuses and the kernels
// compiled.
#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kSamples = 256, kFeatures = 8, kSteps = 300;
constexpr double kLr = 0.05, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

struct ByHand {
  std::vector<double> w, losses;
};

// The same fit with the same data, in scalar loops.
ByHand adam_by_hand(const std::vector<double>& X, const std::vector<double>& y) {
  std::vector<double> w(kFeatures, 0.0), m(kFeatures, 0.0), v(kFeatures, 0.0), r(kSamples);
  std::vector<double> losses;
  for (int t = 1; t <= kSteps; ++t) {
    double loss = 0;
    for (int i = 0; i < kSamples; ++i) {
      double pred = 0;
      for (int j = 0; j < kFeatures; ++j) pred += X[std::size_t(i * kFeatures + j)] * w[std::size_t(j)];
      r[std::size_t(i)] = pred - y[std::size_t(i)];
      loss += r[std::size_t(i)] * r[std::size_t(i)];
    }
    losses.push_back(loss / kSamples);
    for (int j = 0; j < kFeatures; ++j) {
      double g = 0;
      for (int i = 0; i < kSamples; ++i) g += X[std::size_t(i * kFeatures + j)] * r[std::size_t(i)];
      g *= 2.0 / kSamples;
      auto& mj = m[std::size_t(j)];
      auto& vj = v[std::size_t(j)];
      mj = kBeta1 * mj + (1 - kBeta1) * g;
      vj = kBeta2 * vj + (1 - kBeta2) * g * g;
      const double m_hat = mj / (1 - std::pow(kBeta1, t)), v_hat = vj / (1 - std::pow(kBeta2, t));
      w[std::size_t(j)] -= kLr * m_hat / (std::sqrt(v_hat) + kEps);
    }
  }
  return {w, losses};
}

}  // namespace

int main() {
  std::cout << "# data: y = X w_true + noise\n";
  STEP(random::seed(3));
  STEP(Array X = random::normal({kSamples, kFeatures}, 0, 1, DType::f64));
  STEP(Array w_true = arange(1, kFeatures + 1, 1, DType::f64) / 4);
  STEP(Array y = matmul(X, w_true) + random::normal({kSamples}, 0, 0.01, DType::f64));
  STEP(eval({X, y}));
  SHOW(w_true);

  std::cout << "\n# Adam on the mean squared error; its gradient is 2/n X^T (X w - y)\n";
  STEP(Array w = zeros({kFeatures}, DType::f64));
  STEP(Array m = zeros({kFeatures}, DType::f64));
  STEP(Array v = zeros({kFeatures}, DType::f64));
  STEP(double lr = kLr, beta1 = kBeta1, beta2 = kBeta2, eps = kEps);
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   Array r = matmul(X, w) - y;\n"
               "...   Array loss = mean(r * r);\n"
               "...   Array g = matmul(X.T(), r) * (2.0 / kSamples);\n"
               "...   m = beta1 * m + (1 - beta1) * g;\n"
               "...   v = beta2 * v + (1 - beta2) * g * g;\n"
               "...   Array m_hat = m / (1 - std::pow(beta1, t)), v_hat = v / (1 - std::pow(beta2, t));\n"
               "...   w = w - lr * m_hat / (sqrt(v_hat) + eps);\n"
               "...   eval({w, m, v, loss});\n"
               "... }\n";
  reset_stats();
  std::vector<double> losses;
  for (int t = 1; t <= kSteps; ++t) {
    Array r = matmul(X, w) - y;
    Array loss = mean(r * r);
    Array g = matmul(X.T(), r) * (2.0 / kSamples);
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g;
    Array m_hat = m / (1 - std::pow(beta1, t)), v_hat = v / (1 - std::pow(beta2, t));
    w = w - lr * m_hat / (sqrt(v_hat) + eps);
    eval({w, m, v, loss});
    losses.push_back(loss.item<double>());
    if (t == 1 || t % 50 == 0) std::cout << "    step " << t << ": loss " << losses.back() << "\n";
  }
  const Stats s = stats();
  SHOW(w);
  SHOW(max(abs(w - w_true)));
  std::cout << ">>> stats()\n"
            << "    " << s.evals << " evals, " << s.kernels_launched << " kernels run, "
            << s.inplace_reuses << " outputs written in place, " << s.system_allocs
            << " buffers from the system (" << s.pool_hits << " from the pool), "
            << s.kernels_compiled + s.kernel_disk_hits << " kernels compiled or loaded from disk\n";

  std::cout << "\n# the same step compiled, its promise checked: after warm-up every call writes w, m and v in\n"
               "# place and takes no buffer from the system, or it throws, naming the op, your line and why\n";
  STEP(auto adam_step = compile(
           [&](Array w, Array m, Array v, double c1, double c2) {
             Array r = matmul(X, w) - y;
             Array loss = mean(r * r);
             Array g = matmul(X.T(), r) * (2.0 / kSamples);
             m = beta1 * m + (1 - beta1) * g;
             v = beta2 * v + (1 - beta2) * g * g;
             w = w - lr * (m / c1) / (sqrt(v / c2) + eps);
             return std::vector<Array>{w, m, v, loss};
           },
           {.max_allocations = 0, .in_place = {0, 1, 2}}));
  Array w2 = zeros({kFeatures}, DType::f64), m2 = zeros({kFeatures}, DType::f64), v2 = zeros({kFeatures}, DType::f64);
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto out = adam_step(std::move(w2), std::move(m2), std::move(v2),\n"
               "...                        1 - std::pow(beta1, t), 1 - std::pow(beta2, t));\n"
               "...   w2 = std::move(out[0]), m2 = std::move(out[1]), v2 = std::move(out[2]);\n"
               "... }\n";
  const example::Trained compiled = example::train_compiled("adam_step", adam_step, kSteps, [&](int t) {
    auto out = adam_step(std::move(w2), std::move(m2), std::move(v2), 1 - std::pow(beta1, t), 1 - std::pow(beta2, t));
    w2 = std::move(out[0]), m2 = std::move(out[1]), v2 = std::move(out[2]);
    return out[3].item<double>();
  });
  check("compiled: loss at every step, as the eager loop's", compiled.losses, losses, 1e-12, 1e-15);
  check("compiled: no buffer from the system after warm-up", double(compiled.system_allocs_after_warmup), 0.0, 0);

  const ByHand by_hand = adam_by_hand(values(X), values(y));
  // Same formulas in f64; only the matmul's summation order differs.
  check("weights after " + std::to_string(kSteps) + " steps", values(w), by_hand.w, 1e-9, 1e-12);
  check("loss at every step", losses, by_hand.losses, 1e-9, 1e-15);
  // The noise is 0.01 per sample, so the fit recovers w_true to about 0.01 / sqrt(n) per weight.
  check("fit recovers w_true", values(w), values(w_true), 0, 5e-3);
  return example::finish();
}

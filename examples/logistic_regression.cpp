// Logistic regression trained with aj::value_and_grad and an out-of-place Adam,
// checked against the same model, gradient and optimizer written as plain
// double loops (the gradient worked out by hand: X^T (sigmoid(z) - y) / n).
//
// The loss is written once; value_and_grad traces its gradient as ordinary
// array ops, so each step's eval runs the loss, the gradient and the Adam
// update of both parameters as one plan (no recompiles after the first step).
#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kSamples = 400, kFeatures = 3, kSteps = 200;
constexpr double kLr = 0.1, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

struct ByHand {
  std::vector<double> losses;
  std::vector<double> w;
  double b = 0;
};

// The same training in scalar loops.
ByHand train_by_hand(const std::vector<double>& X, const std::vector<double>& y) {
  ByHand r;
  r.w.assign(kFeatures, 0.0);
  std::vector<double> mw(kFeatures, 0.0), vw(kFeatures, 0.0), gw(kFeatures);
  double mb = 0, vb = 0;
  for (int t = 1; t <= kSteps; ++t) {
    double loss = 0, gb = 0;
    std::fill(gw.begin(), gw.end(), 0.0);
    for (int i = 0; i < kSamples; ++i) {
      double z = r.b;
      for (int j = 0; j < kFeatures; ++j) z += X[std::size_t(i * kFeatures + j)] * r.w[std::size_t(j)];
      const double yi = y[std::size_t(i)];
      loss += std::log1p(std::exp(-std::fabs(z))) + std::max(z, 0.0) - yi * z;  // -log likelihood
      const double d = 1 / (1 + std::exp(-z)) - yi;
      for (int j = 0; j < kFeatures; ++j) gw[std::size_t(j)] += d * X[std::size_t(i * kFeatures + j)];
      gb += d;
    }
    r.losses.push_back(loss / kSamples);
    const double c1 = 1 - std::pow(kBeta1, t), c2 = 1 - std::pow(kBeta2, t);
    auto adam = [&](double& p, double& m, double& v, double g) {
      m = kBeta1 * m + (1 - kBeta1) * g;
      v = kBeta2 * v + (1 - kBeta2) * g * g;
      p -= kLr * (m / c1) / (std::sqrt(v / c2) + kEps);
    };
    for (int j = 0; j < kFeatures; ++j) adam(r.w[std::size_t(j)], mw[std::size_t(j)], vw[std::size_t(j)], gw[std::size_t(j)] / kSamples);
    adam(r.b, mb, vb, gb / kSamples);
  }
  return r;
}

}  // namespace

int main() {
  std::cout << "# data: labels drawn with probability sigmoid(X w_true + b_true)\n";
  STEP(random::seed(7));
  STEP(Array X = random::normal({kSamples, kFeatures}, 0, 1, DType::f64));
  STEP(Array w_true = from_vector(std::vector<double>{2.0, -3.0, 0.5}));
  STEP(double b_true = 0.7);
  STEP(Array y = (random::uniform({kSamples}, 0, 1, DType::f64) < sigmoid(matmul(X, w_true) + b_true)).astype(DType::f64));
  STEP(eval({X, y}));
  SHOW(mean(y));

  std::cout << "\n# the model and its loss (the mean negative log-likelihood, written stably)\n";
  STEP(auto loss_fn = [&](const Array& w, const Array& b) {
    Array z = matmul(X, w) + b;
    return mean(log1p(exp(-abs(z))) + maximum(z, 0.0) - y * z);
  });
  STEP(auto step_fn = value_and_grad(loss_fn, {0, 1}));
  STEP(Array w = zeros({kFeatures}, DType::f64));
  STEP(Array b = zeros({}, DType::f64));
  std::cout << "\n# one gradient, before training: d loss / d w = X^T (sigmoid(z) - y) / n\n";
  STEP(auto [loss0, grads0] = step_fn(w, b));
  SHOW(loss0);
  SHOW(grads0[0]);
  SHOW(matmul(X.T(), sigmoid(matmul(X, w) + b) - y) / kSamples);

  std::cout << "\n# Adam, out of place: every step is one eval of loss, gradients and update\n";
  STEP(Array mw = zeros({kFeatures}, DType::f64), vw = zeros({kFeatures}, DType::f64));
  STEP(Array mb = zeros({}, DType::f64), vb = zeros({}, DType::f64));
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto [loss, g] = step_fn(w, b);\n"
               "...   double c1 = 1 - std::pow(beta1, t), c2 = 1 - std::pow(beta2, t);\n"
               "...   mw = beta1 * mw + (1 - beta1) * g[0];  vw = beta2 * vw + (1 - beta2) * g[0] * g[0];\n"
               "...   w = w - lr * (mw / c1) / (sqrt(vw / c2) + eps);   // and the same for b\n"
               "...   eval({loss, w, b, mw, vw, mb, vb});\n"
               "... }\n";
  std::vector<double> losses;
  Stats after_first;
  for (int t = 1; t <= kSteps; ++t) {
    auto [loss, g] = step_fn(w, b);
    const double c1 = 1 - std::pow(kBeta1, t), c2 = 1 - std::pow(kBeta2, t);
    mw = kBeta1 * mw + (1 - kBeta1) * g[0];
    vw = kBeta2 * vw + (1 - kBeta2) * g[0] * g[0];
    w = w - kLr * (mw / c1) / (sqrt(vw / c2) + kEps);
    mb = kBeta1 * mb + (1 - kBeta1) * g[1];
    vb = kBeta2 * vb + (1 - kBeta2) * g[1] * g[1];
    b = b - kLr * (mb / c1) / (sqrt(vb / c2) + kEps);
    eval({loss, w, b, mw, vw, mb, vb});
    losses.push_back(loss.item<double>());
    if (t == 3) reset_stats();  // step 1 plans with zero moments, step 2 with real ones
    if (t == 1 || t % 25 == 0) std::cout << "    step " << t << ": loss " << losses.back() << "\n";
  }
  const Stats s = stats();
  SHOW(w);
  SHOW(b);
  std::cout << ">>> stats() over steps 4-" << kSteps << "\n    " << s.kernels_launched / (kSteps - 3)
            << " kernels per step, " << s.kernels_compiled << " kernels compiled, " << s.system_allocs
            << " buffers from the system\n";
  STEP(double accuracy = mean((matmul(X, w) + b > 0.0) == (y > 0.5)).item<double>());
  SHOW(accuracy);

  std::cout << "\n# the same step compiled, its promise checked: after warm-up every call updates w, b and the\n"
               "# moments in place and takes no buffer from the system, or it throws, naming the op and line\n";
  STEP(auto train_step = compile(
           [&](std::vector<Array> s, double c1, double c2) {  // s = {w, b, mw, vw, mb, vb}
             auto [loss, g] = step_fn(s[0], s[1]);
             for (int i = 0; i < 2; ++i) {
               Array& m = s[2 + 2 * i];
               Array& v = s[3 + 2 * i];
               m = kBeta1 * m + (1 - kBeta1) * g[i];
               v = kBeta2 * v + (1 - kBeta2) * g[i] * g[i];
               s[i] = s[i] - kLr * (m / c1) / (sqrt(v / c2) + kEps);
             }
             s.push_back(loss);
             return s;
           },
           {.max_allocations = 0, .in_place = {0}}));
  std::vector<Array> state{zeros({kFeatures}, DType::f64), zeros({}, DType::f64), zeros({kFeatures}, DType::f64),
                           zeros({kFeatures}, DType::f64), zeros({}, DType::f64),         zeros({}, DType::f64)};
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto out = train_step(std::move(state), c1, c2);   // state = {w, b, mw, vw, mb, vb}\n"
               "...   loss = out.back(); out.pop_back(); state = std::move(out);\n"
               "... }\n";
  const example::Trained compiled = example::train_compiled("train_step", train_step, kSteps, [&](int t) {
    std::vector<Array> out = train_step(std::move(state), 1 - std::pow(kBeta1, t), 1 - std::pow(kBeta2, t));
    const double loss = out.back().item<double>();
    out.pop_back();
    state = std::move(out);
    return loss;
  });

  const ByHand by_hand = train_by_hand(values(X), values(y));
  check("loss at every step, against scalar loops", losses, by_hand.losses, 1e-9, 1e-12);
  check("weights after " + std::to_string(kSteps) + " steps", values(w), by_hand.w, 1e-8, 1e-10);
  check("bias", values(b)[0], by_hand.b, 1e-8, 1e-10);
  check("the loss fell below half its start", losses.back() < 0.5 * losses.front() ? 1.0 : 0.0, 1.0, 0);
  check("no compiles and no allocations after warm-up (3 steps)", double(s.kernels_compiled + s.system_allocs), 0.0, 0);
  check("compiled: loss at every step, as the eager loop's", compiled.losses, losses, 1e-12, 1e-15);
  check("compiled: w as the eager loop's", values(state[0]), values(w), 1e-12, 1e-15);
  check("compiled: no buffer from the system after warm-up", double(compiled.system_allocs_after_warmup), 0.0, 0);
  return example::finish();
}

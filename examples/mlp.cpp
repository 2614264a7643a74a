// A 2-layer MLP (2 -> 16 tanh -> 2, softmax cross-entropy) learning two
// interleaved half-moons, trained with aj::value_and_grad and an out-of-place
// Adam, checked step by step against the same network with backpropagation
// worked out by hand in plain double loops.
//
// The loss is written once, the four gradients come from value_and_grad, and
// each step is one eval: forward, backward and the Adam updates of all the
// parameters planned together (the backward's matmuls read the transposed
// weights and activations in place, as BLAS transpose flags; explain() below).
#include "repl.hpp"

#include <random>
#include <sstream>

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kN = 200, kHidden = 16, kClasses = 2, kSteps = 300;
constexpr double kLr = 0.02, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// Two half circles, one shifted and flipped, with noise: labels 0 and 1.
void moons(std::vector<double>& X, std::vector<int>& y) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.1);
  for (int i = 0; i < kN; ++i) {
    const int c = i % 2;
    const double t = M_PI * (i / 2) / (kN / 2 - 1);
    const double x0 = c == 0 ? std::cos(t) : 1 - std::cos(t);
    const double x1 = c == 0 ? std::sin(t) : 0.5 - std::sin(t);
    X.push_back(x0 + noise(rng));
    X.push_back(x1 + noise(rng));
    y.push_back(c);
  }
}

struct Net {  // row-major weights, as the arrays hold them
  std::vector<double> W1, b1, W2, b2;
};

// Backpropagation by hand: returns the loss, fills the gradients.
double loss_and_grad(const Net& p, const std::vector<double>& X, const std::vector<int>& y, Net& g) {
  g.W1.assign(p.W1.size(), 0), g.b1.assign(p.b1.size(), 0), g.W2.assign(p.W2.size(), 0), g.b2.assign(p.b2.size(), 0);
  double loss = 0;
  for (int i = 0; i < kN; ++i) {
    double h[kHidden], z[kClasses], dz[kClasses];
    for (int k = 0; k < kHidden; ++k) {
      double a = p.b1[std::size_t(k)];
      for (int j = 0; j < 2; ++j) a += X[std::size_t(2 * i + j)] * p.W1[std::size_t(j * kHidden + k)];
      h[k] = std::tanh(a);
    }
    double zmax = -INFINITY;
    for (int c = 0; c < kClasses; ++c) {
      z[c] = p.b2[std::size_t(c)];
      for (int k = 0; k < kHidden; ++k) z[c] += h[k] * p.W2[std::size_t(k * kClasses + c)];
      zmax = std::max(zmax, z[c]);
    }
    double s = 0;
    for (int c = 0; c < kClasses; ++c) s += std::exp(z[c] - zmax);
    loss += std::log(s) + zmax - z[y[std::size_t(i)]];
    for (int c = 0; c < kClasses; ++c) dz[c] = (std::exp(z[c] - zmax) / s - (c == y[std::size_t(i)])) / kN;
    for (int c = 0; c < kClasses; ++c) {
      g.b2[std::size_t(c)] += dz[c];
      for (int k = 0; k < kHidden; ++k) g.W2[std::size_t(k * kClasses + c)] += h[k] * dz[c];
    }
    for (int k = 0; k < kHidden; ++k) {
      double dh = 0;
      for (int c = 0; c < kClasses; ++c) dh += dz[c] * p.W2[std::size_t(k * kClasses + c)];
      const double da = dh * (1 - h[k] * h[k]);
      g.b1[std::size_t(k)] += da;
      for (int j = 0; j < 2; ++j) g.W1[std::size_t(j * kHidden + k)] += X[std::size_t(2 * i + j)] * da;
    }
  }
  return loss / kN;
}

std::vector<double> train_by_hand(Net p, const std::vector<double>& X, const std::vector<int>& y, Net* out) {
  Net m{std::vector<double>(p.W1.size()), std::vector<double>(p.b1.size()), std::vector<double>(p.W2.size()),
        std::vector<double>(p.b2.size())};
  Net v = m, g;
  std::vector<double> losses;
  for (int t = 1; t <= kSteps; ++t) {
    losses.push_back(loss_and_grad(p, X, y, g));
    const double c1 = 1 - std::pow(kBeta1, t), c2 = 1 - std::pow(kBeta2, t);
    auto adam = [&](std::vector<double>& q, std::vector<double>& mq, std::vector<double>& vq, const std::vector<double>& gq) {
      for (std::size_t i = 0; i < q.size(); ++i) {
        mq[i] = kBeta1 * mq[i] + (1 - kBeta1) * gq[i];
        vq[i] = kBeta2 * vq[i] + (1 - kBeta2) * gq[i] * gq[i];
        q[i] -= kLr * (mq[i] / c1) / (std::sqrt(vq[i] / c2) + kEps);
      }
    };
    adam(p.W1, m.W1, v.W1, g.W1);
    adam(p.b1, m.b1, v.b1, g.b1);
    adam(p.W2, m.W2, v.W2, g.W2);
    adam(p.b2, m.b2, v.b2, g.b2);
  }
  *out = p;
  return losses;
}

}  // namespace

int main() {
  std::vector<double> xv;
  std::vector<int> yv;
  moons(xv, yv);
  std::cout << "# two half-moons, " << kN << " points, labels 0/1 (one-hot for the loss)\n";
  STEP(Array X = from_vector(xv, {kN, 2}));
  STEP(Array labels = from_vector(yv));
  STEP(Array Y = (expand_dims(labels, 1) == arange(kClasses, DType::i32)).astype(DType::f64));
  STEP(random::seed(11));
  STEP(std::vector<Array> params = {random::normal({2, kHidden}, 0, 1, DType::f64), zeros({kHidden}, DType::f64),
                                    random::normal({kHidden, kClasses}, 0, 0.5, DType::f64), zeros({kClasses}, DType::f64)});
  STEP(eval(params));

  std::cout << "\n# the loss: tanh hidden layer, softmax cross-entropy (log-sum-exp with the max held constant)\n";
  STEP(auto loss_fn = [&](const std::vector<Array>& p) {
    Array h = tanh(matmul(X, p[0]) + p[1]);
    Array z = matmul(h, p[2]) + p[3];
    Array zmax = stop_gradient(max(z, 1, true));
    Array lse = log(sum(exp(z - zmax), 1, true)) + zmax;
    return mean(sum(Y * (lse - z), 1));
  });
  STEP(auto step_fn = value_and_grad(loss_fn, {0, 1, 2, 3}));
  STEP(auto [loss0, g0] = step_fn(params));
  SHOW(loss0);
  SHOW(g0[3]);
  std::cout << ">>> std::cout << explain(g0)   // matmuls of the backward: transposes are views, not copies\n";
  {
    const std::string plan = explain(g0);
    std::istringstream is(plan);
    for (std::string line; std::getline(is, line);) {
      if (line.find("library") != std::string::npos || line.find("transpose") != std::string::npos ||
          line.rfind("plan:", 0) == 0) {
        std::cout << "    " << line << "\n";
      }
    }
  }

  std::cout << "\n# Adam, out of place, one eval per step\n";
  std::vector<Array> m, v;
  for (auto& p : params) m.push_back(zeros(p.shape(), DType::f64)), v.push_back(zeros(p.shape(), DType::f64));
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto [loss, g] = step_fn(params);\n"
               "...   for (i in 0..3) { m[i] = beta1 * m[i] + (1 - beta1) * g[i];  v[i] = ...;\n"
               "...                     params[i] = params[i] - lr * (m[i] / c1) / (sqrt(v[i] / c2) + eps); }\n"
               "...   eval({loss, params..., m..., v...});\n"
               "... }\n";
  const Net start{values(params[0]), values(params[1]), values(params[2]), values(params[3])};
  std::vector<double> losses;
  for (int t = 1; t <= kSteps; ++t) {
    auto [loss, g] = step_fn(params);
    const double c1 = 1 - std::pow(kBeta1, t), c2 = 1 - std::pow(kBeta2, t);
    std::vector<Array> all{loss};
    for (std::size_t i = 0; i < params.size(); ++i) {
      m[i] = kBeta1 * m[i] + (1 - kBeta1) * g[i];
      v[i] = kBeta2 * v[i] + (1 - kBeta2) * g[i] * g[i];
      params[i] = params[i] - kLr * (m[i] / c1) / (sqrt(v[i] / c2) + kEps);
      all.push_back(params[i]), all.push_back(m[i]), all.push_back(v[i]);
    }
    eval(all);
    losses.push_back(loss.item<double>());
    if (t == 3) reset_stats();
    if (t == 1 || t % 50 == 0) std::cout << "    step " << t << ": loss " << losses.back() << "\n";
  }
  const Stats s = stats();
  std::cout << ">>> stats() over steps 4-" << kSteps << "\n    " << s.kernels_launched / (kSteps - 3)
            << " kernels and library calls per step, " << s.kernels_compiled << " kernels compiled, "
            << s.system_allocs << " buffers from the system, " << s.inplace_reuses / (kSteps - 3)
            << " outputs written in place per step\n";
  std::cout << "\n# the same training step compiled, its promise checked: after warm-up every call updates the\n"
               "# parameters and both moments in place and takes no buffer from the system, or it throws\n";
  STEP(auto train_step = compile(
           [&](std::vector<Array> p, std::vector<Array> m, std::vector<Array> v, double c1, double c2) {
             auto [loss, g] = step_fn(p);
             std::vector<Array> out;
             for (std::size_t i = 0; i < p.size(); ++i) {
               m[i] = kBeta1 * m[i] + (1 - kBeta1) * g[i];
               v[i] = kBeta2 * v[i] + (1 - kBeta2) * g[i] * g[i];
               out.push_back(p[i] - kLr * (m[i] / c1) / (sqrt(v[i] / c2) + kEps));
             }
             out.insert(out.end(), m.begin(), m.end());
             out.insert(out.end(), v.begin(), v.end());
             out.push_back(loss);
             return out;
           },
           {.max_allocations = 0, .in_place = {0, 1, 2}}));
  std::vector<Array> p2, m2, v2;
  for (const std::vector<double>& w : {start.W1, start.b1, start.W2, start.b2}) p2.push_back(from_vector(w));
  for (std::size_t i = 0; i < 4; ++i) {
    p2[i] = reshape(p2[i], params[i].shape()).eval();
    m2.push_back(zeros(params[i].shape(), DType::f64)), v2.push_back(zeros(params[i].shape(), DType::f64));
  }
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto out = train_step(std::move(p2), std::move(m2), std::move(v2), c1, c2);\n"
               "...   p2, m2, v2 = out[0..4), out[4..8), out[8..12) (moved); the loss is out[12]\n"
               "... }\n";
  const example::Trained compiled = example::train_compiled("train_step", train_step, kSteps, [&](int t) {
    auto out = train_step(std::move(p2), std::move(m2), std::move(v2), 1 - std::pow(kBeta1, t), 1 - std::pow(kBeta2, t));
    p2.assign(std::make_move_iterator(out.begin()), std::make_move_iterator(out.begin() + 4));
    m2.assign(std::make_move_iterator(out.begin() + 4), std::make_move_iterator(out.begin() + 8));
    v2.assign(std::make_move_iterator(out.begin() + 8), std::make_move_iterator(out.begin() + 12));
    return out[12].item<double>();
  });

  STEP(Array predicted = argmax(matmul(tanh(matmul(X, params[0]) + params[1]), params[2]) + params[3], 1));
  STEP(double accuracy = mean(predicted == labels).item<double>());
  SHOW(accuracy);

  Net trained;
  const std::vector<double> by_hand = train_by_hand(start, xv, yv, &trained);
  check("loss at every step, against backpropagation by hand", losses, by_hand, 1e-8, 1e-12);
  check("W1 after training", values(params[0]), trained.W1, 1e-6, 1e-9);
  check("W2 after training", values(params[2]), trained.W2, 1e-6, 1e-9);
  check("the loss fell to a tenth of its start (by hand: " + example::number(by_hand.back()) + ")",
        losses.back() < 0.1 * losses.front() ? 1.0 : 0.0, 1.0, 0);
  check("accuracy above 95%", accuracy > 0.95 ? 1.0 : 0.0, 1.0, 0);
  check("no compiles and no allocations after warm-up (3 steps)", double(s.kernels_compiled + s.system_allocs), 0.0, 0);
  check("compiled: loss at every step, as the eager loop's", compiled.losses, losses, 1e-9, 1e-12);
  check("compiled: no buffer from the system after warm-up", double(compiled.system_allocs_after_warmup), 0.0, 0);
  return example::finish();
}

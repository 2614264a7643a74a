// A bag-of-words classifier: token ids -> rows of an embedding table (take)
// -> their mean -> a linear layer -> softmax cross-entropy, trained on
// synthetic documents with aj::value_and_grad and an out-of-place Adam, and
// checked step by step against the same model with its gradients worked out
// by hand in plain double loops.
//
// The embedding's gradient is a scatter_add: each token's share of the
// gradient added into its row of the table (a token used twice gets both
// shares). explain() below shows it: a library step into a table-shaped
// buffer (the take reads the table through a view broadcast over the
// tokens; the scatter folds that axis in, so nothing of the size vocabulary
// x tokens x embedding is made).
#include "repl.hpp"

#include <random>
#include <sstream>

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kVocab = 40, kLen = 8, kDim = 8, kClasses = 3, kDocs = 120, kSteps = 150;
constexpr double kLr = 0.05, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// Documents of kLen tokens: each class has 6 words of its own (tokens
// 6c .. 6c + 5); a document draws a third of its tokens from its class's
// words and the rest from the whole vocabulary.
void documents(std::vector<std::int64_t>& tokens, std::vector<std::int64_t>& labels) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> any(0, kVocab - 1), own(0, 5), die(0, 2);
  for (int d = 0; d < kDocs; ++d) {
    const int c = d % kClasses;
    labels.push_back(c);
    for (int t = 0; t < kLen; ++t) tokens.push_back(die(rng) == 0 ? 6 * c + own(rng) : any(rng));
  }
}

struct Model {  // row-major, as the arrays hold them
  std::vector<double> E, W, b;
};

// The loss and its gradients by hand.
double loss_and_grad(const Model& p, const std::vector<std::int64_t>& tok, const std::vector<std::int64_t>& y,
                     Model& g) {
  g.E.assign(p.E.size(), 0), g.W.assign(p.W.size(), 0), g.b.assign(p.b.size(), 0);
  double loss = 0;
  for (int n = 0; n < kDocs; ++n) {
    double h[kDim] = {}, z[kClasses], dz[kClasses];
    for (int l = 0; l < kLen; ++l) {
      for (int j = 0; j < kDim; ++j) h[j] += p.E[std::size_t(tok[std::size_t(n * kLen + l)] * kDim + j)] / kLen;
    }
    double zmax = -INFINITY;
    for (int c = 0; c < kClasses; ++c) {
      z[c] = p.b[std::size_t(c)];
      for (int j = 0; j < kDim; ++j) z[c] += h[j] * p.W[std::size_t(j * kClasses + c)];
      zmax = std::max(zmax, z[c]);
    }
    double s = 0;
    for (int c = 0; c < kClasses; ++c) s += std::exp(z[c] - zmax);
    const auto label = y[std::size_t(n)];
    loss += std::log(s) + zmax - z[label];
    for (int c = 0; c < kClasses; ++c) dz[c] = (std::exp(z[c] - zmax) / s - (c == label)) / kDocs;
    for (int c = 0; c < kClasses; ++c) {
      g.b[std::size_t(c)] += dz[c];
      for (int j = 0; j < kDim; ++j) g.W[std::size_t(j * kClasses + c)] += h[j] * dz[c];
    }
    for (int j = 0; j < kDim; ++j) {
      double dh = 0;
      for (int c = 0; c < kClasses; ++c) dh += dz[c] * p.W[std::size_t(j * kClasses + c)];
      for (int l = 0; l < kLen; ++l) g.E[std::size_t(tok[std::size_t(n * kLen + l)] * kDim + j)] += dh / kLen;
    }
  }
  return loss / kDocs;
}

std::vector<double> train_by_hand(Model p, const std::vector<std::int64_t>& tok, const std::vector<std::int64_t>& y,
                                  Model* out) {
  Model m{std::vector<double>(p.E.size()), std::vector<double>(p.W.size()), std::vector<double>(p.b.size())};
  Model v = m, g;
  std::vector<double> losses;
  for (int t = 1; t <= kSteps; ++t) {
    losses.push_back(loss_and_grad(p, tok, y, g));
    const double c1 = 1 - std::pow(kBeta1, t), c2 = 1 - std::pow(kBeta2, t);
    auto adam = [&](std::vector<double>& q, std::vector<double>& mq, std::vector<double>& vq, const std::vector<double>& gq) {
      for (std::size_t i = 0; i < q.size(); ++i) {
        mq[i] = kBeta1 * mq[i] + (1 - kBeta1) * gq[i];
        vq[i] = kBeta2 * vq[i] + (1 - kBeta2) * gq[i] * gq[i];
        q[i] -= kLr * (mq[i] / c1) / (std::sqrt(vq[i] / c2) + kEps);
      }
    };
    adam(p.E, m.E, v.E, g.E);
    adam(p.W, m.W, v.W, g.W);
    adam(p.b, m.b, v.b, g.b);
  }
  *out = p;
  return losses;
}

}  // namespace

int main() {
  std::vector<std::int64_t> tv, yv;
  documents(tv, yv);
  std::cout << "# " << kDocs << " documents of " << kLen << " tokens from a vocabulary of " << kVocab << ", "
            << kClasses << " classes\n";
  STEP(Array tokens = from_vector(tv, {kDocs, kLen}));
  STEP(Array labels = from_vector(yv, {kDocs, 1}));
  STEP(random::seed(7));
  STEP(std::vector<Array> params = {random::normal({kVocab, kDim}, 0, 0.5, DType::f64),
                                    random::normal({kDim, kClasses}, 0, 0.5, DType::f64), zeros({kClasses}, DType::f64)});
  STEP(eval(params));

  std::cout << "\n# the loss: the mean of each document's embeddings, a linear layer, cross-entropy\n";
  STEP(auto loss_fn = [&](const std::vector<Array>& p) {
    Array h = mean(take(p[0], tokens, 0), 1);                     // [docs, dim]
    Array z = matmul(h, p[1]) + p[2];                            // [docs, classes]
    Array picked = take_along_axis(log_softmax(z, 1), labels, 1);  // each label's log-probability
    return -mean(picked);
  });
  STEP(auto step_fn = value_and_grad(loss_fn, {0, 1, 2}));
  STEP(auto [loss0, g0] = step_fn(params));
  std::cout << ">>> std::cout << explain(g0[0])   // the embedding's gradient: a scatter_add into the table\n";
  const std::string plan = explain(g0[0]);
  {
    std::istringstream is(plan);
    for (std::string line; std::getline(is, line);) {
      if (line.find(": library ") != std::string::npos ||
          line.rfind("plan:", 0) == 0 || line.rfind("buffers:", 0) == 0) {
        std::cout << "    " << line << "\n";
      }
    }
  }
  SHOW(loss0);
  SHOW(slice(g0[0], 0, 0, 2));

  std::cout << "\n# Adam, out of place, one eval per step\n";
  std::vector<Array> m, v;
  for (auto& p : params) m.push_back(zeros(p.shape(), DType::f64)), v.push_back(zeros(p.shape(), DType::f64));
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto [loss, g] = step_fn(params);\n"
               "...   for (i in 0..2) { m[i] = beta1 * m[i] + (1 - beta1) * g[i];  v[i] = ...;\n"
               "...                     params[i] = params[i] - lr * (m[i] / c1) / (sqrt(v[i] / c2) + eps); }\n"
               "...   eval({loss, params..., m..., v...});\n"
               "... }\n";
  const Model start{values(params[0]), values(params[1]), values(params[2])};
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
    if (t == 1 || t % 25 == 0) std::cout << "    step " << t << ": loss " << losses.back() << "\n";
  }
  const Stats s = stats();
  std::cout << ">>> stats() over steps 4-" << kSteps << "\n    " << s.kernels_launched / (kSteps - 3)
            << " kernels and library calls per step, " << s.kernels_compiled << " kernels compiled, "
            << s.system_allocs << " buffers from the system\n";
  std::cout << "\n# the same step compiled, its promise checked: after warm-up every call updates the table, the\n"
               "# weights and the moments in place and takes no buffer from the system, or it throws\n";
  STEP(auto train_step = compile(
           [&](std::vector<Array> p, std::vector<Array> m, std::vector<Array> v, double c1, double c2) {
             auto [loss, g] = step_fn(p);
             for (std::size_t i = 0; i < p.size(); ++i) {
               m[i] = kBeta1 * m[i] + (1 - kBeta1) * g[i];
               v[i] = kBeta2 * v[i] + (1 - kBeta2) * g[i] * g[i];
               p[i] = p[i] - kLr * (m[i] / c1) / (sqrt(v[i] / c2) + kEps);
             }
             std::vector<Array> out = p;
             out.insert(out.end(), m.begin(), m.end());
             out.insert(out.end(), v.begin(), v.end());
             out.push_back(loss);
             return out;
           },
           {.max_allocations = 0, .in_place = {0, 1, 2}}));
  std::vector<Array> p2, m2, v2;
  for (const std::vector<double>& w : {start.E, start.W, start.b}) p2.push_back(from_vector(w));
  for (std::size_t i = 0; i < p2.size(); ++i) {
    p2[i] = reshape(p2[i], params[i].shape()).eval();
    m2.push_back(zeros(params[i].shape(), DType::f64)), v2.push_back(zeros(params[i].shape(), DType::f64));
  }
  std::cout << ">>> for (int t = 1; t <= " << kSteps << "; ++t) {\n"
               "...   auto out = train_step(std::move(p2), std::move(m2), std::move(v2), c1, c2);\n"
               "...   p2, m2, v2 = out[0..3), out[3..6), out[6..9) (moved); the loss is out[9]\n"
               "... }\n";
  const example::Trained compiled = example::train_compiled("train_step", train_step, kSteps, [&](int t) {
    auto out = train_step(std::move(p2), std::move(m2), std::move(v2), 1 - std::pow(kBeta1, t), 1 - std::pow(kBeta2, t));
    p2.assign(std::make_move_iterator(out.begin()), std::make_move_iterator(out.begin() + 3));
    m2.assign(std::make_move_iterator(out.begin() + 3), std::make_move_iterator(out.begin() + 6));
    v2.assign(std::make_move_iterator(out.begin() + 6), std::make_move_iterator(out.begin() + 9));
    return out[9].item<double>();
  });

  STEP(Array predicted = argmax(matmul(mean(take(params[0], tokens, 0), 1), params[1]) + params[2], 1));
  STEP(double accuracy = mean(predicted == reshape(labels, {kDocs})).item<double>());
  SHOW(accuracy);

  Model trained, g_first;
  const double loss0_by_hand = loss_and_grad(start, tv, yv, g_first);
  check("the loss of step 1, against the double loops", loss0.item<double>(), loss0_by_hand, 1e-12);
  check("the embedding gradient of step 1 is a scatter_add", plan.find("scatter_add") != std::string::npos ? 1.0 : 0.0, 1.0, 0);
  check("the embedding gradient of step 1, against the double loops", values(g0[0]), g_first.E, 1e-10, 1e-14);
  const std::vector<double> by_hand = train_by_hand(start, tv, yv, &trained);
  check("loss at every step, against the double loops", losses, by_hand, 1e-8, 1e-12);
  check("the embedding table after training", values(params[0]), trained.E, 1e-6, 1e-9);
  check("the loss fell below a fifth of its start (by hand: " + example::number(by_hand.back()) + ")",
        losses.back() < 0.2 * losses.front() ? 1.0 : 0.0, 1.0, 0);
  check("accuracy above 90%", accuracy > 0.9 ? 1.0 : 0.0, 1.0, 0);
  check("no compiles and no allocations after warm-up (3 steps)", double(s.kernels_compiled + s.system_allocs), 0.0, 0);
  check("compiled: loss at every step, as the eager loop's", compiled.losses, losses, 1e-9, 1e-12);
  check("compiled: no buffer from the system after warm-up", double(compiled.system_allocs_after_warmup), 0.0, 0);
  return example::finish();
}

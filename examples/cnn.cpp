// A small convolutional network trained as a REPL session: two convolution +
// ReLU + max-pool layers and a dense head with softmax cross-entropy, on
// synthetic 12x12 images of horizontal and vertical bars (with noise), its
// gradient by aj::value_and_grad and each training step one aj::compile'd
// call (Adam, in place after the first step).
//
// Checked a second way: the first convolution against a loop over its
// definition, one weight's gradient against a central difference of the
// loss, the loss falling, and the accuracy on new images.
#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kBatch = 32, kSide = 12, kSteps = 60;
constexpr double kLr = 0.02, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// Images with one bar (a row or a column of ones) plus noise; label 0 for a
// horizontal bar, 1 for a vertical one.
void images(std::uint64_t seed, std::vector<double>& x, std::vector<int>& y) {
  std::uint64_t s = seed;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  };
  x.assign(std::size_t(kBatch * kSide * kSide), 0.0);
  y.assign(kBatch, 0);
  for (int n = 0; n < kBatch; ++n) {
    const int label = next() < 0.5 ? 0 : 1, at = 1 + static_cast<int>(next() * (kSide - 2));
    y[std::size_t(n)] = label;
    for (int i = 0; i < kSide; ++i) {
      for (int j = 0; j < kSide; ++j) {
        const bool on = label == 0 ? i == at : j == at;
        x[std::size_t((n * kSide + i) * kSide + j)] = (on ? 1.0 : 0.0) + 0.3 * (next() - 0.5);
      }
    }
  }
}

Array forward(const std::vector<Array>& p, const Array& X) {
  Array h = max_pool(relu(conv2d(X, p[0], p[1], {1}, 1)), {2, 2});  // [B, 4, 6, 6]
  h = max_pool(relu(conv2d(h, p[2], p[3], {1}, 1)), {2, 2});        // [B, 8, 3, 3]
  return matmul(reshape(h, {kBatch, 8 * 3 * 3}), p[4]) + p[5];      // [B, 2]
}

Array loss_of(const std::vector<Array>& p, const Array& X, const Array& Y) {
  return mean(sum(Y * -log_softmax(forward(p, X), -1), 1));
}

}  // namespace

int main() {
  std::vector<double> xv;
  std::vector<int> yv;
  images(1, xv, yv);
  std::cout << "# " << kBatch << " images of " << kSide << "x" << kSide << ": a horizontal (0) or vertical (1) bar\n";
  STEP(Array X = from_vector(xv, {kBatch, 1, kSide, kSide}));
  STEP(Array Y = (expand_dims(from_vector(yv), 1) == arange(2, DType::i32)).astype(DType::f64));
  STEP(random::seed(5));
  STEP(std::vector<Array> p = {random::normal({4, 1, 3, 3}, 0, 0.5, DType::f64), zeros({4}, DType::f64),
                               random::normal({8, 4, 3, 3}, 0, 0.3, DType::f64), zeros({8}, DType::f64),
                               random::normal({72, 2}, 0, 0.2, DType::f64), zeros({2}, DType::f64)});
  STEP(eval(p));

  std::cout << "\n# the first layer's convolution, against its definition in loops\n";
  STEP(Array c1 = conv2d(X, p[0], Array(), {1}, 1));
  SHOW(c1.shape());
  {
    const std::vector<double> w = values(p[0]);
    std::vector<double> want;
    for (int n = 0; n < kBatch; ++n) {
      for (int o = 0; o < 4; ++o) {
        for (int i = 0; i < kSide; ++i) {
          for (int j = 0; j < kSide; ++j) {
            double acc = 0;
            for (int a = 0; a < 3; ++a) {
              for (int b = 0; b < 3; ++b) {
                const int r = i + a - 1, c = j + b - 1;
                if (r >= 0 && c >= 0 && r < kSide && c < kSide) {
                  acc += xv[std::size_t((n * kSide + r) * kSide + c)] * w[std::size_t(o * 9 + a * 3 + b)];
                }
              }
            }
            want.push_back(acc);
          }
        }
      }
    }
    check("conv2d against its definition", values(c1), want, 1e-12, 1e-12);
  }

  std::cout << "\n# the loss and its gradient; one weight's against a central difference\n";
  STEP(auto grad_fn = value_and_grad([&](const std::vector<Array>& q) { return loss_of(q, X, Y); }, {0, 1, 2, 3, 4, 5}));
  STEP(auto [loss0, g0] = grad_fn(p));
  SHOW(loss0);
  {
    const double h = 1e-6;
    auto moved = [&](double by) {
      std::vector<Array> q = p;
      std::vector<double> w = values(p[2]);
      w[7] += by;
      q[2] = from_vector(w, p[2].shape());
      return loss_of(q, X, Y).item<double>();
    };
    check("d loss / d conv2 weight 7", values(g0[2])[7], (moved(h) - moved(-h)) / (2 * h), 1e-5, 1e-8);
  }

  std::cout << "\n# training: one compiled call per step (loss, gradient, Adam)\n";
  STEP(std::vector<Array> m, v);
  for (const Array& q : p) {
    m.push_back(zeros(q.shape(), DType::f64));
    v.push_back(zeros(q.shape(), DType::f64));
  }
  STEP(auto step = compile([&](const std::vector<Array>& q, const std::vector<Array>& mq, const std::vector<Array>& vq,
                               const Array& c1, const Array& c2) {
    auto [loss, g] = grad_fn(q);
    std::vector<Array> out{loss};
    for (std::size_t i = 0; i < q.size(); ++i) {
      Array mi = kBeta1 * mq[i] + (1 - kBeta1) * g[i];
      Array vi = kBeta2 * vq[i] + (1 - kBeta2) * g[i] * g[i];
      out.push_back(q[i] - kLr * (mi / c1) / (sqrt(vi / c2) + kEps));
      out.push_back(mi);
      out.push_back(vi);
    }
    return out;
  }));
  double first = 0, last = 0;
  for (int t = 1; t <= kSteps; ++t) {
    const Array c1 = full({}, 1 - std::pow(kBeta1, t), DType::f64), c2 = full({}, 1 - std::pow(kBeta2, t), DType::f64);
    std::vector<Array> r = step(p, m, v, c1, c2);
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] = r[1 + 3 * i];
      m[i] = r[2 + 3 * i];
      v[i] = r[3 + 3 * i];
    }
    const double l = r[0].item<double>();
    if (t == 1) first = l;
    last = l;
    if (t % 10 == 0) std::cout << "step " << t << ": loss " << l << "\n";
  }
  SHOW(step.counts().traces);
  check("the loss fell below a tenth of the first", last < first / 10 ? 1.0 : 0.0, 1.0, 0);

  std::cout << "\n# accuracy on 32 new images\n";
  images(2, xv, yv);
  STEP(Array Xt = from_vector(xv, {kBatch, 1, kSide, kSide}));
  STEP(Array predicted = argmax(forward(p, Xt), 1));
  double right = 0;
  const std::vector<double> pv = values(predicted);
  for (int n = 0; n < kBatch; ++n) right += pv[std::size_t(n)] == yv[std::size_t(n)];
  std::cout << "accuracy " << right / kBatch << "\n";
  check("accuracy at least 0.9", right / kBatch >= 0.9 ? 1.0 : 0.0, 1.0, 0);
  return example::finish();
}

// The epochs loop of bench/epochs.cpp and tests/test_compile_epochs.cpp:
// minibatches sliced from one evaluated dataset (features f32[N, D], labels
// i64[N]), one-hot labels made in the step, softmax cross-entropy, Adam. Two
// models: logistic regression (D -> C) and an MLP (D -> H -> C, ReLU).
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace ajepochs {

inline constexpr float kLr = 1e-3f, kBeta1 = 0.9f, kBeta2 = 0.999f, kEps = 1e-8f;

struct Data {
  std::int64_t n = 0, d = 0, c = 0;
  std::vector<float> x;
  std::vector<std::int64_t> labels;
  aj::Array X, L;  // f32[n, d], i64[n]
};

// Features from a normal distribution; a label is the argmax of a fixed
// random linear map of the features (learnable).
inline Data make_data(std::int64_t n, std::int64_t d, std::int64_t c, unsigned seed) {
  Data out{n, d, c, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> w(static_cast<std::size_t>(d * c));
  for (float& v : w) v = g(rng);
  out.x.resize(static_cast<std::size_t>(n * d));
  for (float& v : out.x) v = g(rng);
  out.labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t best = 0;
    float best_v = -1e30f;
    for (std::int64_t k = 0; k < c; ++k) {
      float s = 0;
      for (std::int64_t j = 0; j < d; ++j) s += out.x[static_cast<std::size_t>(i * d + j)] * w[static_cast<std::size_t>(j * c + k)];
      if (s > best_v) best_v = s, best = k;
    }
    out.labels[static_cast<std::size_t>(i)] = best;
  }
  out.X = aj::from_vector(out.x, {n, d});
  out.L = aj::from_vector(out.labels, {n});
  aj::eval({out.X, out.L});
  return out;
}

// Batch sizes covering n: uniform in [lo, hi], the last one what is left.
inline std::vector<std::int64_t> batch_sizes(std::int64_t n, std::int64_t lo, std::int64_t hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> u(lo, hi);
  std::vector<std::int64_t> out;
  for (std::int64_t at = 0; at < n;) {
    const std::int64_t b = std::min(u(rng), n - at);
    out.push_back(b);
    at += b;
  }
  return out;
}

// Parameters: {W, b} (hidden == 0) or {W1, b1, W2, b2}, and Adam's moments.
struct Params {
  std::vector<aj::Array> p, m, v;
  int t = 0;
};

inline Params init_params(std::int64_t d, std::int64_t hidden, std::int64_t c, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  auto rand = [&](std::int64_t rows, std::int64_t cols) {
    std::vector<float> v(static_cast<std::size_t>(rows * cols));
    for (float& x : v) x = g(rng) / std::sqrt(static_cast<float>(rows));
    return aj::from_vector(v, {rows, cols});
  };
  Params out;
  if (hidden == 0) {
    out.p = {rand(d, c), aj::zeros({c})};
  } else {
    out.p = {rand(d, hidden), aj::zeros({hidden}), rand(hidden, c), aj::zeros({c})};
  }
  for (const aj::Array& q : out.p) out.m.push_back(aj::zeros(q.shape())), out.v.push_back(aj::zeros(q.shape()));
  std::vector<aj::Array> all = out.p;
  all.insert(all.end(), out.m.begin(), out.m.end());
  all.insert(all.end(), out.v.begin(), out.v.end());
  aj::eval(all);
  return out;
}

// Mean softmax cross-entropy of the model q on a batch; labels i64[b] made
// one-hot here.
inline aj::Array loss(const aj::Array& x, const aj::Array& labels, const std::vector<aj::Array>& q, std::int64_t c) {
  const aj::Array y = (aj::expand_dims(labels, 1) == aj::arange(c)).astype(aj::DType::f32);
  aj::Array z = q.size() == 2 ? aj::matmul(x, q[0]) + q[1]
                              : aj::matmul(aj::maximum(aj::matmul(x, q[0]) + q[1], 0.0f), q[2]) + q[3];
  const aj::Array mx = aj::stop_gradient(aj::max(z, 1, true));
  const aj::Array lse = aj::log(aj::sum(aj::exp(z - mx), 1, true)) + mx;
  return aj::mean(aj::sum(y * (lse - z), 1));
}

// One Adam step, out of place: {loss, p0', m0', v0', ...}. c1, c2: the bias
// corrections of step t.
inline std::vector<aj::Array> step(const aj::Array& x, const aj::Array& labels, std::vector<aj::Array> p,
                                   std::vector<aj::Array> m, std::vector<aj::Array> v, float c1, float c2,
                                   std::int64_t c, float lr = kLr) {
  std::vector<int> which(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) which[i] = static_cast<int>(i);
  auto [l, g] = aj::value_and_grad([&](const std::vector<aj::Array>& q) { return loss(x, labels, q, c); }, which)(p);
  std::vector<aj::Array> out{l};
  for (std::size_t i = 0; i < p.size(); ++i) {
    aj::Array mi = kBeta1 * m[i] + (1 - kBeta1) * g[i];
    aj::Array vi = kBeta2 * v[i] + (1 - kBeta2) * g[i] * g[i];
    out.push_back(p[i] - lr * (mi / c1) / (aj::sqrt(vi / c2) + kEps));
    out.push_back(mi);
    out.push_back(vi);
  }
  return out;
}

inline std::pair<float, float> bias(int t) {
  return {1 - std::pow(kBeta1, static_cast<float>(t)), 1 - std::pow(kBeta2, static_cast<float>(t))};
}

// Puts a step's results back; returns the loss.
inline aj::Array take(Params& s, std::vector<aj::Array>&& r) {
  const std::size_t n = (r.size() - 1) / 3;
  s.p.resize(n), s.m.resize(n), s.v.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    s.p[i] = std::move(r[1 + 3 * i]);
    s.m[i] = std::move(r[2 + 3 * i]);
    s.v[i] = std::move(r[3 + 3 * i]);
  }
  return std::move(r[0]);
}

// The compiled step: parameters and moments donated (rvalues).
inline auto compiled_step(std::int64_t c) {
  return aj::compile([c](const aj::Array& x, const aj::Array& labels, std::vector<aj::Array> p,
                         std::vector<aj::Array> m, std::vector<aj::Array> v, float c1, float c2) {
    return step(x, labels, std::move(p), std::move(m), std::move(v), c1, c2, c);
  });
}

// The same with the learning rate an argument (a schedule: a new value
// every step).
inline auto compiled_step_lr(std::int64_t c) {
  return aj::compile([c](const aj::Array& x, const aj::Array& labels, std::vector<aj::Array> p,
                         std::vector<aj::Array> m, std::vector<aj::Array> v, float c1, float c2, float lr) {
    return step(x, labels, std::move(p), std::move(m), std::move(v), c1, c2, c, lr);
  });
}

// A schedule: lr / sqrt(1 + t / 100), another value every step.
inline float scheduled_lr(int t) { return kLr / std::sqrt(1.0f + static_cast<float>(t) / 100.0f); }

}  // namespace ajepochs

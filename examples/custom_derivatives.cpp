// Derivatives of your own, as JAX has them: a numerically stable softplus
// whose gradient is written by hand (custom_vjp), a clipped exponential whose
// tangent rule also gives its gradient (custom_jvp), a deep network whose
// backward recomputes blocks instead of keeping their activations
// (checkpoint), with the memory it saves read from stats(); and plain C++
// code as a step of the graph with its own derivative (host_callback). Each
// is checked against a closed form, a loop or the plain function.
#include <cmath>

#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

int main() {
  // softplus(x) = log(1 + e^x), written to be stable, with the derivative
  // sigmoid(x) by hand. Plain autodiff of log(1 + exp(x)) gives NaN at
  // x = 800 (inf / inf); the rule does not.
  STEP(auto stable = [](const Array& x) { return log1p(exp(-abs(x))) + maximum(x, 0.0); });
  STEP(auto softplus = custom_vjp(
           stable, [&](const Array& x) { return std::pair{stable(x), std::vector<Array>{x}}; },
           [](const std::vector<Array>& saved, const Array& g) { return g * sigmoid(saved[0]); }));
  STEP(Array x = from_vector<double>({-800, -2, 0, 2, 800}));
  SHOW(grad([&](const Array& a) { return sum(softplus(a)); })(x));
  SHOW(grad([](const Array& a) { return sum(log(1.0 + exp(a))); })(x));
  std::vector<double> want;
  for (double v : values(x)) want.push_back(1 / (1 + std::exp(-v)));
  check("custom_vjp gradient = sigmoid(x)", values(grad([&](const Array& a) { return sum(softplus(a)); })(x)), want,
        1e-15);

  // A tangent rule, clipped: forward mode uses it, and reverse mode
  // transposes it, so grad needs no second rule.
  STEP(auto clipped = custom_jvp([](const Array& a) { return exp(a); },
                                 [](const std::vector<Array>& a, const std::vector<Array>& t) {
                                   return t[0] * minimum(exp(a[0]), 1.0);
                                 }));
  STEP(Array z = from_vector<double>({-1, 0.5, 2}));
  SHOW(grad([&](const Array& a) { return sum(clipped(a)); })(z));
  SHOW(jvp(clipped, z, ones({3}, DType::f64)).second);
  std::vector<double> clip;
  for (double v : values(z)) clip.push_back(std::min(std::exp(v), 1.0));
  check("custom_jvp: reverse mode is the rule transposed", values(grad([&](const Array& a) { return sum(clipped(a)); })(z)),
        clip, 1e-15);

  // A 16-layer network, each block of 4 layers checkpointed: the backward
  // computes a block's activations again when it reaches the block.
  STEP(random::seed(7));
  std::vector<Array> ws;
  for (int i = 0; i < 16; ++i) ws.push_back(random::normal({256, 256}, 0, 1.0 / 16, DType::f32).eval());
  STEP(Array input = random::normal({512, 256}, 0, 1, DType::f32).eval());
  STEP(auto layer = [](const Array& h, const Array& w) { return maximum(matmul(h, w), 0.0f); });
  auto network = [&](bool checkpointed) {
    return [&, checkpointed](const std::vector<Array>& w) {
      Array h = input;
      for (int i = 0; i < 16; i += 4) {
        auto block = [&, i](const Array& a, const Array& w0, const Array& w1, const Array& w2, const Array& w3) {
          (void)i;
          return layer(layer(layer(layer(a, w0), w1), w2), w3);
        };
        h = checkpointed ? checkpoint(block)(h, w[i], w[i + 1], w[i + 2], w[i + 3])
                         : block(h, w[i], w[i + 1], w[i + 2], w[i + 3]);
      }
      return sum(h * h);
    };
  };
  std::vector<int> all;
  for (int i = 0; i < 16; ++i) all.push_back(i);
  auto peak_of = [&](bool checkpointed, std::vector<Array>* grads) {
    *grads = grad(network(checkpointed), all)(ws);
    reset_stats();
    const auto before = stats().live_bytes;
    eval(*grads);
    return (stats().peak_live_bytes - before) / double(512 * 256 * 4);
  };
  std::vector<Array> g_plain, g_ck;
  const double plain = peak_of(false, &g_plain), ck = peak_of(true, &g_ck);
  std::cout << ">>> peak memory of the backward, in activations (512 x 256 f32), gradients included\n    plain "
            << plain << ", checkpointed " << ck << "\n";
  check("checkpoint: the same gradients", values(g_ck[0]), values(g_plain[0]), 1e-4, 1e-6);
  check("checkpoint: saves at least 16 activations", plain - ck >= 16 ? 1.0 : 0.0, 1.0, 0);

  // A loop in plain C++ as a step of the graph (a running maximum), with its
  // derivative by another callback: the cotangent goes to the element each
  // running maximum was taken from.
  STEP(auto running_max = [](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
    double m = -INFINITY;
    for (std::int64_t i = 0; i < in[0].numel(); ++i) out[0].as<double>()[i] = m = std::max(m, in[0].at<double>(i));
  });
  STEP(auto running_max_vjp = [](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
    // in: x, the running maxima, their cotangents; out: x's cotangent
    const std::int64_t n = in[0].numel();
    std::int64_t arg = 0;
    for (std::int64_t i = 0; i < n; ++i) out[0].as<double>()[i] = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (in[0].at<double>(i) > in[0].at<double>(arg)) arg = i;
      out[0].as<double>()[arg] += in[2].at<double>(i);
    }
  });
  STEP(HostCallback cummax_host(running_max, running_max_vjp, "running_max"));
  STEP(Array s = from_vector<double>({0.5, 2, 1, 3, -1}));
  SHOW(cummax_host({{s.shape(), DType::f64}}, {s})[0]);
  SHOW(grad([&](const Array& a) { return sum(cummax_host({{a.shape(), DType::f64}}, {a})[0] * arange(1.0, 6.0)); })(s));
  check("host_callback's value", values(cummax_host({{s.shape(), DType::f64}}, {s})[0]), {0.5, 2, 2, 3, 3}, 0);
  check("host_callback's vjp", values(grad([&](const Array& a) {
          return sum(cummax_host({{a.shape(), DType::f64}}, {a})[0] * arange(1.0, 6.0));
        })(s)), {1, 2 + 3, 0, 4 + 5, 0}, 0);
  return example::finish();
}

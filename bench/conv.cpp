// Convolution against PyTorch's CPU convolution (oneDNN) and a hand im2col +
// Eigen GEMM in the same run (issue 37 point 2): ResNet layers, 3x3 64->64
// on 56x56 and 1x1 256->64 on 56x56, batch 8, f32, forward and forward +
// backward (the input's and the weights' gradients); and the training step
// of examples/cnn.cpp's network against PyTorch's. The same thread count for
// all (argument 2, default 1). Medians of wall times in ms; the ratio is
// arrayjit over the best peer (target <= 1.2).
//
//   ./build/bench/conv [threads] [runs]
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

using aj::Array;
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int g_runs = 7, g_threads = 1;

double median_ms(const std::function<void()>& f) { return ajbench::wall_median_ms(f, g_runs, 2); }

// PyTorch's median in ms for `stmt` after `setup`; -1 when torch cannot run.
double torch_ms(const std::string& setup, const std::string& stmt) {
  const std::string cmd = "/usr/bin/python3 -c \"import torch, time\ntorch.set_num_threads(" +
                          std::to_string(g_threads) + ")\ntorch.manual_seed(1)\n" + setup + "\nfor i in range(2): " +
                          stmt + "\nt = []\nfor i in range(" + std::to_string(g_runs) +
                          "):\n t0 = time.perf_counter(); " + stmt +
                          "; t.append(time.perf_counter() - t0)\nprint(sorted(t)[len(t) // 2] * 1e3)\" 2>/dev/null";
  return ajbench::command_number(cmd);
}

std::string torch_version() {
  FILE* f = ::popen("/usr/bin/python3 -c \"import torch; print(torch.__version__)\" 2>/dev/null", "r");
  char buf[64] = "not found";
  if (f) {
    if (!std::fgets(buf, sizeof buf, f)) std::snprintf(buf, sizeof buf, "not found");
    ::pclose(f);
  }
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// im2col of x [N, C, H, W] for a k x k window, padding p, stride 1:
// cols[n] is [C k k, H W].
void im2col(const float* x, int n, int c, int h, int w, int k, int p, std::vector<Mat>& cols) {
  cols.resize(static_cast<std::size_t>(n));
  for (int b = 0; b < n; ++b) {
    Mat& m = cols[static_cast<std::size_t>(b)];
    m.resize(c * k * k, h * w);
    for (int ch = 0; ch < c; ++ch) {
      for (int a = 0; a < k; ++a) {
        for (int d = 0; d < k; ++d) {
          float* row = m.row((ch * k + a) * k + d).data();
          for (int i = 0; i < h; ++i) {
            const int r = i + a - p;
            for (int j = 0; j < w; ++j) {
              const int s = j + d - p;
              row[i * w + j] = r >= 0 && r < h && s >= 0 && s < w ? x[((b * c + ch) * h + r) * w + s] : 0.0f;
            }
          }
        }
      }
    }
  }
}

// col2im: the columns' cotangent added back into dx [N, C, H, W].
void col2im(const std::vector<Mat>& cols, int c, int h, int w, int k, int p, float* dx) {
  const int n = static_cast<int>(cols.size());
  std::fill(dx, dx + static_cast<std::ptrdiff_t>(n) * c * h * w, 0.0f);
  for (int b = 0; b < n; ++b) {
    const Mat& m = cols[static_cast<std::size_t>(b)];
    for (int ch = 0; ch < c; ++ch) {
      for (int a = 0; a < k; ++a) {
        for (int d = 0; d < k; ++d) {
          const float* row = m.row((ch * k + a) * k + d).data();
          for (int i = 0; i < h; ++i) {
            const int r = i + a - p;
            if (r < 0 || r >= h) continue;
            for (int j = 0; j < w; ++j) {
              const int s = j + d - p;
              if (s >= 0 && s < w) dx[((b * c + ch) * h + r) * w + s] += row[i * w + j];
            }
          }
        }
      }
    }
  }
}

void row(const std::string& name, double ours, double eigen, double torch) {
  double best = eigen > 0 ? eigen : torch;
  if (torch > 0) best = std::min(best, torch);
  std::printf("%-40s %9.2f %9.2f %9.2f %8.2fx\n", name.c_str(), ours, eigen, torch, ours / best);
}

void layer(int n, int c, int o, int hw, int k) {
  const int p = k / 2;
  aj::random::seed(1);
  const Array x = aj::random::normal({n, c, hw, hw}).eval(), w = aj::random::normal({o, c, k, k}, 0, 0.05).eval();
  const Array g = aj::random::normal({n, o, hw, hw}).eval();
  auto fwd = aj::compile([p](const Array& xa, const Array& wa) { return aj::conv2d(xa, wa, Array(), {1}, p); });
  auto both = aj::compile([p](const Array& xa, const Array& wa, const Array& ga) {
    auto vg = aj::value_and_grad(
        [&](const Array& xi, const Array& wi) { return aj::sum(aj::conv2d(xi, wi, Array(), {1}, p) * ga); }, {0, 1});
    auto [v, grads] = vg(xa, wa);
    return std::vector<Array>{grads[0], grads[1]};
  });
  const double ours_f = median_ms([&] { fwd(x, w).eval(); });
  const double ours_b = median_ms([&] {
    auto r = both(x, w, g);
    aj::eval(r);
  });
  // The hand im2col + Eigen GEMM peer.
  const std::vector<float> xv = x.to_vector<float>(), wv = w.to_vector<float>(), gv = g.to_vector<float>();
  const Eigen::Map<const Mat> wm(wv.data(), o, c * k * k);
  std::vector<Mat> cols;
  std::vector<float> out(static_cast<std::size_t>(n) * o * hw * hw), dx(xv.size());
  Mat dw(o, c * k * k);
  const double eig_f = median_ms([&] {
    im2col(xv.data(), n, c, hw, hw, k, p, cols);
    for (int b = 0; b < n; ++b) {
      Eigen::Map<Mat>(out.data() + static_cast<std::ptrdiff_t>(b) * o * hw * hw, o, hw * hw).noalias() =
          wm * cols[static_cast<std::size_t>(b)];
    }
  });
  std::vector<Mat> dcols(static_cast<std::size_t>(n));
  const double eig_b = median_ms([&] {
    im2col(xv.data(), n, c, hw, hw, k, p, cols);
    dw.setZero();
    for (int b = 0; b < n; ++b) {
      const Eigen::Map<const Mat> gb(gv.data() + static_cast<std::ptrdiff_t>(b) * o * hw * hw, o, hw * hw);
      dw.noalias() += gb * cols[static_cast<std::size_t>(b)].transpose();
      dcols[static_cast<std::size_t>(b)].noalias() = wm.transpose() * gb;
    }
    col2im(dcols, c, hw, hw, k, p, dx.data());
  });
  const std::string setup = "x = torch.randn(" + std::to_string(n) + ", " + std::to_string(c) + ", " +
                            std::to_string(hw) + ", " + std::to_string(hw) + ", requires_grad=True)\nw = torch.randn(" +
                            std::to_string(o) + ", " + std::to_string(c) + ", " + std::to_string(k) + ", " +
                            std::to_string(k) + ", requires_grad=True)\ng = torch.randn(" + std::to_string(n) + ", " +
                            std::to_string(o) + ", " + std::to_string(hw) + ", " + std::to_string(hw) +
                            ")\nF = torch.nn.functional";
  const std::string conv = "F.conv2d(x, w, padding=" + std::to_string(p) + ")";
  const double torch_f = torch_ms(setup + "\ntorch.set_grad_enabled(False)", conv);
  const double torch_b = torch_ms(setup, "torch.autograd.grad(" + conv + ", (x, w), g)");
  const std::string name = std::to_string(k) + "x" + std::to_string(k) + " " + std::to_string(c) + "->" +
                           std::to_string(o) + " " + std::to_string(hw) + "^2 batch " + std::to_string(n);
  row(name + " fwd", ours_f, eig_f, torch_f);
  row(name + " fwd+bwd", ours_b, eig_b, torch_b);
}

// examples/cnn.cpp's network (f32, batch 64 of 1 x 28 x 28: conv 1->8, pool,
// conv 8->16, pool, dense 784->10), one training step: loss, gradient, Adam.
void cnn_step() {
  constexpr int kB = 64;
  aj::random::seed(2);
  const Array X = aj::random::normal({kB, 1, 28, 28}).eval();
  const Array Y = (aj::expand_dims(aj::random::randint({kB}, 0, 10), 1) == aj::arange(10)).astype(aj::DType::f32).eval();
  std::vector<Array> p = {aj::random::normal({8, 1, 3, 3}, 0, 0.3), aj::zeros({8}), aj::random::normal({16, 8, 3, 3}, 0, 0.1),
                          aj::zeros({16}), aj::random::normal({784, 10}, 0, 0.05), aj::zeros({10})};
  std::vector<Array> m, v;
  for (const Array& q : p) {
    m.push_back(aj::zeros(q.shape()));
    v.push_back(aj::zeros(q.shape()));
  }
  aj::eval(p);
  auto loss = [&](const std::vector<Array>& q) {
    Array h = aj::max_pool(aj::relu(aj::conv2d(X, q[0], q[1], {1}, 1)), {2, 2});
    h = aj::max_pool(aj::relu(aj::conv2d(h, q[2], q[3], {1}, 1)), {2, 2});
    const Array z = aj::matmul(aj::reshape(h, {kB, 784}), q[4]) + q[5];
    return aj::mean(aj::sum(Y * -aj::log_softmax(z, -1), 1));
  };
  auto step = aj::compile([&](const std::vector<Array>& q, const std::vector<Array>& mq, const std::vector<Array>& vq) {
    auto [l, g] = aj::value_and_grad(loss, {0, 1, 2, 3, 4, 5})(q);
    std::vector<Array> out{l};
    for (std::size_t i = 0; i < q.size(); ++i) {
      Array mi = 0.9f * mq[i] + 0.1f * g[i];
      Array vi = 0.999f * vq[i] + 0.001f * g[i] * g[i];
      out.push_back(q[i] - 1e-3f * mi / (aj::sqrt(vi) + 1e-8f));
      out.push_back(mi);
      out.push_back(vi);
    }
    return out;
  });
  const double ours = median_ms([&] {
    std::vector<Array> r = step(std::move(p), std::move(m), std::move(v));  // rvalue vectors: donated
    p.clear(), m.clear(), v.clear();
    for (std::size_t i = 0; i < 6; ++i) {
      p.push_back(r[1 + 3 * i]);
      m.push_back(r[2 + 3 * i]);
      v.push_back(r[3 + 3 * i]);
    }
    r[0].eval();
  });
  const std::string setup =
      "F = torch.nn.functional\nX = torch.randn(64, 1, 28, 28)\ny = torch.randint(0, 10, (64,))\n"
      "p = [torch.randn(8, 1, 3, 3) * 0.3, torch.zeros(8), torch.randn(16, 8, 3, 3) * 0.1, torch.zeros(16), "
      "torch.randn(784, 10) * 0.05, torch.zeros(10)]\n"
      "p = [t.requires_grad_() for t in p]\nopt = torch.optim.Adam(p, lr=1e-3)\n"
      "def step():\n h = F.max_pool2d(F.relu(F.conv2d(X, p[0], p[1], padding=1)), 2)\n"
      " h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3], padding=1)), 2)\n"
      " l = F.cross_entropy(h.reshape(64, 784) @ p[4] + p[5], y)\n opt.zero_grad(); l.backward(); opt.step(); return l.item()";
  row("cnn training step (batch 64, 28^2)", ours, -1, torch_ms(setup, "step()"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_threads = std::max(1, std::atoi(argv[1]));
  if (argc > 2) g_runs = std::max(3, std::atoi(argv[2]));
  aj::jit::set_num_threads(g_threads);
  Eigen::setNbThreads(g_threads);
  std::printf("%s", aj::jit::host_info().c_str());
  std::printf("f32, %d thread(s), medians of %d runs, ms; PyTorch %s\n", g_threads, g_runs, torch_version().c_str());
  std::printf("%-40s %9s %9s %9s %9s\n", "case", "arrayjit", "im2col+Eigen", "PyTorch", "vs best");
  layer(8, 64, 64, 56, 3);
  layer(8, 256, 64, 56, 1);
  cnn_step();
  return 0;
}

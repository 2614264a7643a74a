// Epochs over minibatch slices of one dataset (bench/epochs_model.hpp):
// 60,000 x 16 f32 features and i64 labels, one-hot per batch, softmax
// cross-entropy, Adam; logistic regression (16 -> 10) and an MLP
// (16 -> 64 -> 10); random batch sizes 16..256 (new ones each epoch) and a
// short last batch. Per batch, the median over the epochs after the first:
//   compiled     aj::compile's step fed slices (views at new offsets)
//   uncompiled   the same step traced and evaluated each batch
//   borrowed     the compiled step fed each batch as its own borrowed buffer
//                (the replay a slice should cost)
//   NumPy        bench/epochs_numpy.py, the same loop (/usr/bin/python3)
// and what the compiled loop did after its first epoch: plans built,
// kernels compiled, buffers from the system, traces (all should be 0).
//
//   build/bench/epochs [epochs] [n]
#include <arrayjit/arrayjit.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/epochs_model.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "?";
}

std::string blas_core() {
  using Fn = char* (*)();
  if (auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))) return fn();
  return "(not loaded)";
}

double numpy_us(std::int64_t n, std::int64_t h, int epochs) {
  const std::string cmd = "/usr/bin/python3 " AJ_BENCH_DIR "/epochs_numpy.py " + std::to_string(n) + " 16 " +
                          std::to_string(h) + " 10 " + std::to_string(epochs) + " 16 256 2>/dev/null";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return -1;
  double us = -1;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f)) std::sscanf(buf, "us_per_batch %lf", &us);
  ::pclose(f);
  return us;
}

enum class Mode { compiled, uncompiled, borrowed };

struct Run {
  double us = 0;                                  // median per batch, epochs after the first
  std::uint64_t plans = 0, compiles = 0, allocs = 0, traces = 0, replays = 0, batches = 0, renumbered = 0, hits = 0;
  float loss = 0;
};

// `schedule`: the learning rate changes every step (ajepochs::scheduled_lr).
Run run(ajepochs::Data& data, std::int64_t hidden, int epochs, Mode mode, bool schedule = false) {
  ajepochs::Params s = ajepochs::init_params(data.d, hidden, data.c, 6);
  auto cf = ajepochs::compiled_step(data.c);
  auto cf_lr = ajepochs::compiled_step_lr(data.c);
  std::vector<double> per_batch;
  Run r;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const std::vector<std::int64_t> sizes = ajepochs::batch_sizes(data.n, 16, 256, 100 + static_cast<unsigned>(epoch));
    const aj::Stats s0 = aj::stats();
    const auto c0 = schedule ? cf_lr.counts() : cf.counts();
    const auto t0 = Clock::now();
    std::int64_t at = 0;
    aj::Array loss;
    for (std::int64_t b : sizes) {
      aj::Array xb, lb;
      if (mode == Mode::borrowed) {
        xb = aj::borrow(data.x.data() + at * data.d, {b, data.d});
        lb = aj::borrow(data.labels.data() + at, {b});
      } else {
        xb = aj::slice(data.X, 0, at, at + b);
        lb = aj::slice(data.L, 0, at, at + b);
      }
      at += b;
      auto [c1, c2] = ajepochs::bias(++s.t);
      const float lr = schedule ? ajepochs::scheduled_lr(s.t) : ajepochs::kLr;
      if (mode == Mode::uncompiled) {
        std::vector<aj::Array> out = ajepochs::step(xb, lb, s.p, s.m, s.v, c1, c2, data.c, lr);
        aj::eval(out);
        loss = ajepochs::take(s, std::move(out));
      } else if (schedule) {
        loss = ajepochs::take(s, cf_lr(xb, lb, std::move(s.p), std::move(s.m), std::move(s.v), c1, c2, lr));
      } else {
        loss = ajepochs::take(s, cf(xb, lb, std::move(s.p), std::move(s.m), std::move(s.v), c1, c2));
      }
    }
    r.loss = loss.item<float>();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / static_cast<double>(sizes.size());
    if (epoch == 0) continue;
    per_batch.push_back(us);
    const aj::Stats s1 = aj::stats();
    r.plans += s1.plans_built - s0.plans_built;
    r.renumbered += s1.plans_renumbered - s0.plans_renumbered;
    r.hits += s1.plan_cache_hits - s0.plan_cache_hits;
    r.compiles += s1.kernels_compiled - s0.kernels_compiled;
    r.allocs += s1.system_allocs - s0.system_allocs;
    const auto c1 = schedule ? cf_lr.counts() : cf.counts();
    r.traces += c1.traces - c0.traces;
    r.replays += c1.replays - c0.replays;
    r.batches += sizes.size();
  }
  r.us = median(per_batch);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 6;
  const std::int64_t n = argc > 2 ? std::atoll(argv[2]) : 60000;
  ajepochs::Data data = ajepochs::make_data(n, 16, 10, 5);
  std::printf("arrayjit %s: epochs over minibatch slices, %lld x 16 f32, i64 labels, batches 16..256, %d epochs\n",
              aj::version(), static_cast<long long>(n), epochs);
  std::printf("  CPU: %s; BLAS core: %s\n", cpu_model().c_str(), blas_core().c_str());
  std::printf("  us per batch, median over epochs 2..%d\n", epochs);
  for (std::int64_t hidden : {std::int64_t{0}, std::int64_t{64}}) {
    const char* name = hidden == 0 ? "logistic regression 16 -> 10" : "MLP 16 -> 64 -> 10";
    const Run c = run(data, hidden, epochs, Mode::compiled);
    const Run u = run(data, hidden, epochs, Mode::uncompiled);
    const Run b = run(data, hidden, epochs, Mode::borrowed);
    const double np = numpy_us(n, hidden, epochs);
    std::printf("%s\n", name);
    std::printf("  compiled (slices)      %8.1f us   %.2fx borrowed, %.2fx NumPy (targets <= 1.2, <= 0.5)\n", c.us,
                c.us / b.us, c.us / np);
    std::printf("  uncompiled (slices)    %8.1f us   %.2fx NumPy (target <= 1.0)\n", u.us, u.us / np);
    std::printf("  compiled (borrowed)    %8.1f us\n", b.us);
    std::printf("  NumPy                  %8.1f us\n", np);
    std::printf("  compiled after epoch 1: %llu batches, %llu replays, %llu traces, %llu plans, %llu compiles, "
                "%llu system allocations\n",
                static_cast<unsigned long long>(c.batches), static_cast<unsigned long long>(c.replays),
                static_cast<unsigned long long>(c.traces), static_cast<unsigned long long>(c.plans),
                static_cast<unsigned long long>(c.compiles), static_cast<unsigned long long>(c.allocs));
    std::printf("  uncompiled after epoch 1: %llu plans (%llu plan-cache hits, %llu of them renumbered), %llu compiles, "
                "%llu system allocations; final losses %.4f %.4f %.4f\n",
                static_cast<unsigned long long>(u.plans), static_cast<unsigned long long>(u.hits),
                static_cast<unsigned long long>(u.renumbered), static_cast<unsigned long long>(u.compiles),
                static_cast<unsigned long long>(u.allocs), c.loss, u.loss, b.loss);
    // A learning rate that changes every step, against the fixed rate above
    // (target: <= 1.1x).
    const Run cs = run(data, hidden, epochs, Mode::compiled, true);
    const Run us = run(data, hidden, epochs, Mode::uncompiled, true);
    std::printf("  with an LR schedule: compiled %8.1f us (%.2fx the fixed rate; %llu traces, %llu plans after epoch 1), "
                "uncompiled %8.1f us (%.2fx; %llu plans)\n",
                cs.us, cs.us / c.us, static_cast<unsigned long long>(cs.traces), static_cast<unsigned long long>(cs.plans),
                us.us, us.us / u.us, static_cast<unsigned long long>(us.plans));
  }
  return 0;
}

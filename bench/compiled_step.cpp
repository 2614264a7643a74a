// A compiled training step (aj::compile): an MLP's loss, its gradients
// (value_and_grad) and an out-of-place Adam update, traced once and replayed.
//
// The target: "a compiled MLP training step's host overhead <= 5 us".
// Host overhead is what a step costs besides its kernels and library calls.
// Two sizes, each timed as this thread's CPU time, medians of several runs of
// many steps:
//   tiny   4 -> 8 -> 8 -> 2, batch 4: the kernels do almost nothing, so the
//          step's time is its host overhead (an upper bound: the 16 or so
//          kernels' own few hundred nanoseconds are in it)
//   mlp    784 -> 256 -> 10, batch 256 (bench_mlp's model): the overhead is
//          the compiled step minus the sum of its launches run directly
// Both also run uncompiled (trace + plan cache hit + run each step) for
// comparison, and check that the compiled and uncompiled losses agree and
// that replays trace, plan, compile and allocate nothing.
//
//   build/bench/compiled_step [steps]
#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

struct Model {
  int B, D, H, C;
  aj::Array X, Y;
  std::vector<aj::Array> p, m, v;
  int t = 0;

  Model(int b, int d, int h, int c, unsigned seed) : B(b), D(d), H(h), C(c) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    auto rand = [&](int count, float scale) {
      std::vector<float> out(static_cast<std::size_t>(count));
      for (float& x : out) x = n(rng) * scale;
      return out;
    };
    X = aj::from_vector(rand(B * D, 1.0f), {B, D});
    std::vector<float> y(static_cast<std::size_t>(B * C), 0.0f);
    for (int i = 0; i < B; ++i) y[static_cast<std::size_t>(i * C + i % C)] = 1.0f;
    Y = aj::from_vector(y, {B, C});
    p = {aj::from_vector(rand(D * H, 1.0f / std::sqrt(static_cast<float>(D))), {D, H}), aj::zeros({H}),
         aj::from_vector(rand(H * C, 1.0f / std::sqrt(static_cast<float>(H))), {H, C}), aj::zeros({C})};
    ajbench::adam_init(p, m, v, {X, Y});
  }
};

struct Result {
  double compiled_us = 0, uncompiled_us = 0;
  double traces = 0, plans = 0, compiles = 0, allocs = 0, launches = 0;
  float max_loss_diff = 0;
};

Result run(int B, int D, int H, int C, int steps, bool profile = false) {
  Model a(B, D, H, C, 7), b(B, D, H, C, 7);
  auto compiled = aj::compile([](const aj::Array& X, const aj::Array& Y, std::vector<aj::Array> p,
                                 std::vector<aj::Array> m, std::vector<aj::Array> v, float c1, float c2) {
    return ajbench::mlp_adam_step(X, Y, std::move(p), std::move(m), std::move(v), c1, c2);
  });
  auto step_compiled = [&](Model& md) {
    auto [c1, c2] = ajbench::adam_bias(++md.t);
    return ajbench::take_step(md.p, md.m, md.v, compiled(md.X, md.Y, std::move(md.p), std::move(md.m), std::move(md.v), c1, c2));
  };
  auto step_plain = [&](Model& md) {
    auto [c1, c2] = ajbench::adam_bias(++md.t);
    std::vector<aj::Array> r = ajbench::mlp_adam_step(md.X, md.Y, md.p, md.m, md.v, c1, c2);
    aj::eval(r);
    return ajbench::take_step(md.p, md.m, md.v, std::move(r));
  };
  Result res;
  // Warm-up (the compiled step traces twice: the second learns which kernel
  // scalars follow c1 and c2), and the losses compared step by step.
  for (int k = 0; k < 5; ++k) {
    const float la = step_compiled(a).item<float>(), lb = step_plain(b).item<float>();
    res.max_loss_diff = std::max(res.max_loss_diff, std::fabs(la - lb));
  }
  if (profile) {  // only compiled steps, for perf
    for (int k = 0; k < steps; ++k) aj::Array l = step_compiled(a);
    return res;
  }
  const auto c0 = compiled.counts();
  const aj::Stats s0 = aj::stats();
  res.compiled_us = ajbench::median_us([&] { aj::Array l = step_compiled(a); }, steps);
  const aj::Stats s1 = aj::stats();
  const auto c1 = compiled.counts();
  res.uncompiled_us = ajbench::median_us([&] { aj::Array l = step_plain(b); }, steps);
  const double n = static_cast<double>(c1.replays - c0.replays);
  res.traces = static_cast<double>(c1.traces - c0.traces);
  res.plans = static_cast<double>(s1.plans_built - s0.plans_built) / n;
  res.compiles = static_cast<double>(s1.kernels_compiled - s0.kernels_compiled) / n;
  res.allocs = static_cast<double>(s1.system_allocs - s0.system_allocs) / n;
  res.launches = static_cast<double>(s1.kernels_launched - s0.kernels_launched) / n;
  return res;
}

// New batch sizes: every step another batch (the data made beforehand). The
// compiled step's first call at each batch runs its kept trace made at the
// new extents (no tracing; docs/extent-replays.md); against the same step
// compiled from a function that reads an extent (traced at each batch) and
// the uncompiled step (trace + plan: the plan cache misses at new extents).
// Each kind its own batches. Medians of the per-step times.
struct NewBatches {
  double kept_us = 0, traced_us = 0, uncompiled_us = 0;
  std::uint64_t traces = 0, new_extents = 0, unplanned = 0, compiles = 0;
  float max_loss_diff = 0;
  std::string note;
};

// only_kept: the calls at new extents alone (for perf: `compiled_step N profile_new`).
NewBatches new_batches(int D, int H, int C, int count, bool only_kept = false) {
  auto step_fn = [](const aj::Array& X, const aj::Array& Y, std::vector<aj::Array> p, std::vector<aj::Array> m,
                    std::vector<aj::Array> v, float c1, float c2) {
    return ajbench::mlp_adam_step(X, Y, std::move(p), std::move(m), std::move(v), c1, c2);
  };
  auto kept = aj::compile(step_fn);
  auto traced = aj::compile([&](const aj::Array& X, const aj::Array& Y, std::vector<aj::Array> p, std::vector<aj::Array> m,
                                std::vector<aj::Array> v, float c1, float c2) {
    const float one = X.shape()[0] > 0 ? 1.0f : 0.0f;  // an extent read in C++: traced at each batch
    return step_fn(X * one, Y, std::move(p), std::move(m), std::move(v), c1, c2);
  });
  Model a(4, D, H, C, 7), b(4, D, H, C, 7), t(4, D, H, C, 7), u(4, D, H, C, 7);
  auto step = [](auto& f, Model& md, const aj::Array& X, const aj::Array& Y) {
    auto [c1, c2] = ajbench::adam_bias(++md.t);
    return ajbench::take_step(md.p, md.m, md.v, f(X, Y, std::move(md.p), std::move(md.m), std::move(md.v), c1, c2));
  };
  auto plain = [](Model& md, const aj::Array& X, const aj::Array& Y) {
    auto [c1, c2] = ajbench::adam_bias(++md.t);
    std::vector<aj::Array> r = ajbench::mlp_adam_step(X, Y, md.p, md.m, md.v, c1, c2);
    aj::eval(r);
    return ajbench::take_step(md.p, md.m, md.v, std::move(r));
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  NewBatches r;
  // Warm-up batches: the first trace, the second that checks it (its
  // parameters are results now, not the first call's aj::zeros views: the
  // template is kept without layouts), one more, planned from the template.
  // From then on each new batch size makes the kept trace at its extents and
  // runs the kept plan at its numbers (opt/materialize.hpp), except where a
  // guard refuses (8 rows, the hidden width: an equality the kept plan's
  // numbers did not have is planned).
  for (int batch : {2, 3, 4}) {
    const Model d(batch, D, H, C, 11);
    step(kept, a, d.X, d.Y).eval();
    plain(b, d.X, d.Y).eval();
    step(traced, t, d.X, d.Y).eval();
  }
  std::vector<double> tk, tt, tu;
  const std::uint64_t compiled0 = aj::stats().kernels_compiled, kept0 = kept.counts().new_extents,
                      traces0 = kept.counts().traces;
  for (int k = 0; k < count; ++k) {
    const Model d1(5 + k, D, H, C, 20 + static_cast<unsigned>(k)), d2(1005 + k, D, H, C, 30), d3(2005 + k, D, H, C, 40);
    aj::eval({d1.X, d1.Y, d2.X, d2.Y, d3.X, d3.Y});
    double t0 = ajbench::cpu_us();
    const aj::Array la = step(kept, a, d1.X, d1.Y);
    tk.push_back(ajbench::cpu_us() - t0);
    if (only_kept) continue;
    const aj::Array lb = plain(b, d1.X, d1.Y);
    r.max_loss_diff = std::max(r.max_loss_diff, std::fabs(la.item<float>() - lb.item<float>()));
    t0 = ajbench::cpu_us();
    step(traced, t, d2.X, d2.Y).eval();
    tt.push_back(ajbench::cpu_us() - t0);
    t0 = ajbench::cpu_us();
    plain(u, d3.X, d3.Y).eval();
    tu.push_back(ajbench::cpu_us() - t0);
  }
  r.compiles = aj::stats().kernels_compiled - compiled0;
  r.kept_us = median(tk), r.traced_us = median(tt), r.uncompiled_us = median(tu);
  r.traces = kept.counts().traces - traces0;  // while timing
  r.new_extents = kept.counts().new_extents - kept0;
  r.unplanned = kept.counts().unplanned;
  r.note = kept.extents_note();
  if (!kept.plan_note().empty()) r.note += (r.note.empty() ? "" : "; ") + kept.plan_note();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (argc > 2 && std::string(argv[2]) == "profile_new") {
    new_batches(8, 8, 2, steps, true);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "profile") {  // the tiny case's compiled steps only
    run(4, 8, 8, 2, steps, true);
    return 0;
  }
  std::printf("arrayjit %s: an MLP training step (value_and_grad + Adam), us per step (median)\n", aj::version());
  struct Case {
    const char* name;
    int B, D, H, C, steps;
  } cases[] = {{"tiny 4->8->8->2, batch 4", 4, 8, 8, 2, steps}, {"mlp 784->256->10, batch 256", 256, 784, 256, 10, steps / 40 + 5}};
  int failures = 0;
  for (const Case& c : cases) {
    const Result r = run(c.B, c.D, c.H, c.C, c.steps);
    std::printf("  %s\n", c.name);
    std::printf("    %-30s %10.2f us\n", "compiled (aj::compile replay)", r.compiled_us);
    std::printf("    %-30s %10.2f us   (trace + plan cache hit + run)\n", "uncompiled", r.uncompiled_us);
    std::printf("    per replay: %.1f launches, %.2f plans, %.2f compiles, %.2f system allocations; "
                "%g traces while timing; losses agree to %.2g\n",
                r.launches, r.plans, r.compiles, r.allocs, r.traces, static_cast<double>(r.max_loss_diff));
    if (r.traces != 0 || r.plans != 0 || r.compiles != 0 || r.max_loss_diff > 1e-4f) {
      std::fprintf(stderr, "compiled_step: a replay traced, planned or compiled, or the losses differ\n");
      ++failures;
    }
  }
  std::printf("  host overhead of a compiled step: the tiny case's time (target <= 5 us)\n");
  {
    const int count = 40;
    const NewBatches nb = new_batches(8, 8, 2, count);
    std::printf("  tiny 4->8->8->2, a new batch size every step (5 .. %d rows), first call at each\n", 4 + count);
    std::printf("    %-30s %10.2f us   (no tracing, no plan)\n", "compiled, kept plan renumbered", nb.kept_us);
    std::printf("    %-30s %10.2f us\n", "compiled, traced each batch", nb.traced_us);
    std::printf("    %-30s %10.2f us   (trace + plan)\n", "uncompiled", nb.uncompiled_us);
    std::printf("    while timing: %llu traces, %llu calls from the kept trace (%llu not planned), "
                "%llu kernels compiled (all three kinds); losses agree to %.2g%s%s\n",
                static_cast<unsigned long long>(nb.traces), static_cast<unsigned long long>(nb.new_extents),
                static_cast<unsigned long long>(nb.unplanned), static_cast<unsigned long long>(nb.compiles),
                static_cast<double>(nb.max_loss_diff), nb.note.empty() ? "" : "; ", nb.note.c_str());
    if (nb.traces != 0 || nb.new_extents != static_cast<std::uint64_t>(count) ||
        nb.unplanned + 4 < static_cast<std::uint64_t>(count) || nb.max_loss_diff > 1e-4f) {
      std::fprintf(stderr, "compiled_step: new batch sizes were traced or planned, or the losses differ\n");
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

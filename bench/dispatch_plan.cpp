// Dispatch latency: what one small call costs besides running its kernel.
// Times are this thread's CPU time (steadier than wall time on a shared VM).
//
// The issue's target: "a 10-op elementwise chain on 1,000 elements, trace +
// cache hit + run, <= 5 us per call". Printed here, medians of several runs of
// many calls each (a shared machine is noisy, the median is what to compare):
//   trace only        trace the chain, drop it unevaluated
//   kernel only       the chain's fused kernel run directly (no trace, no plan;
//                     compiled, or the interpreter under AJ_JIT=0)
//   full call         trace + plan (or plan cache hit) + run
//   overhead          full call - kernel only: tracing and planning
//   plan, cache off   full call with the plan cache switched off
//   compiled replay   aj::compile(chain) called again with the same kind of
//                     argument: no trace, no plan, the kept kernel launched
//                     (target: <= 1.5 us including the launch)
//   compiled, lr      the chain with a C++ scalar argument that changes
//                     every call (x * lr): replayed, the scalar rebound
//   profiling on      the compiled replay and the full call while an
//                     aj::profile records (arrayjit/profile.hpp): a replay
//                     is one kernel event, a full call three (evaluation,
//                     plan, kernel); off, the rows above pay one relaxed
//                     load and branch per launch (target: on, <= 1 us more
//                     per launch)
//   new extents       a compiled call at extents it has not seen (every call
//                     another length near 1,000): from the kept trace (made
//                     at the new extents, no tracing) and the kept plan with
//                     its numbers made again (no planning), against a
//                     function that reads its argument's extent (traced each
//                     time) and the uncompiled call (trace, then the plan
//                     cache's plan of the same structure renumbered)
//
//   build/bench/dispatch_plan [calls]
#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "graph/graph.hpp"
#include "opt/passes/fuse.hpp"
#include "bench/bench_util.hpp"
#include "opt/plan_cache.hpp"

using ajbench::chain;
using ajbench::median_us;

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (argc > 2 && std::string(argv[2]) == "profile") {
    // For perf: only full calls on one element (the kernel is negligible).
    aj::Array one = aj::from_vector(std::vector<float>{0.5f});
    for (int i = 0; i < calls; ++i) chain(one).eval();
    return 0;
  }
  std::printf("arrayjit %s: a 10-op f32 elementwise chain on 1,000 elements, us per call (median)\n",
              aj::version());
  std::vector<float> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17) * 0.25f;
  aj::Array x = aj::from_vector(data);
  x.eval();

  const double trace = median_us([&] { aj::Array y = chain(x); }, calls);

  // The kernel alone: fuse the chain once, then run its one kernel.
  double kernel = 0;
  {
    aj::Array y = chain(x);
    aj::Schedule s = aj::fuse({y.node_id()});
    const aj::Step* k = nullptr;
    for (const aj::Step& st : s.steps) {
      if (st.kind == aj::Step::Kind::kernel) k = &st;
    }
    if (!k || s.kernels() != 1) {
      std::fprintf(stderr, "dispatch_plan: expected one kernel, got %d\n", s.kernels());
      return 1;
    }
    std::vector<const void*> ins;
    for (std::size_t e = 0; e < k->inputs.size(); ++e) {
      ins.push_back(k->kernel.inputs[e].index_only ? nullptr : aj::graph()[k->inputs[e]].storage->data);
    }
    std::vector<float> out(1000);
    std::vector<void*> outs{out.data()};
    kernel = median_us([&] {
      if (aj::jit::enabled()) aj::cpu::run_kernel_compiled(k->kernel, ins, outs);
      else aj::cpu::run_kernel(k->kernel, ins, outs);
    }, calls);
  }

  auto full_call = [&] {
    aj::Array y = chain(x);
    y.eval();
  };
  aj::plan_cache::clear();
  const double full = median_us(full_call, calls);
  aj::plan_cache::set_enabled(false);
  const double uncached = median_us(full_call, calls / 4 + 1);
  aj::plan_cache::set_enabled(true);
  aj::Array one = aj::from_vector(std::vector<float>{0.5f});
  const double full1 = median_us([&] { chain(one).eval(); }, calls);

  // aj::compile: the chain traced once, then replayed.
  auto compiled = aj::compile([](const aj::Array& a) { return chain(a); });
  compiled(x).eval();
  const double replay = median_us([&] { aj::Array y = compiled(x); }, calls);
  auto compiled_lr = aj::compile([](const aj::Array& a, float lr) { return chain(a) * lr; });
  float lr = 0.5f;
  compiled_lr(x, 0.3f);
  compiled_lr(x, 0.35f);  // a second value: the scalar's binding is learned
  const double replay_lr = median_us([&] {
    lr = lr > 0.9f ? 0.1f : lr + 0.001f;
    aj::Array y = compiled_lr(x, lr);
  }, calls);
  // A schedule computed inside: lr / sqrt(1 + t) with C++ scalars (traced
  // each call: the constant is none of the arguments) and with the scalars
  // taken as arrays (weak arrays: the arithmetic replays).
  auto sched_cpp = aj::compile([](const aj::Array& a, double lr, int t) { return chain(a) * (lr / std::sqrt(1.0 + t)); });
  auto sched_weak = aj::compile([](const aj::Array& a, const aj::Array& lr, const aj::Array& t) {
    return chain(a) * (lr / aj::sqrt(1 + t));
  });
  int step = 0;
  const double sched_traced = median_us([&] { aj::Array y = sched_cpp(x, 0.5, ++step); }, calls / 4 + 1);
  const double sched_replay = median_us([&] { aj::Array y = sched_weak(x, 0.5, ++step); }, calls);
  const auto cw = sched_weak.counts();
  const auto cc = compiled.counts();
  const auto cl = compiled_lr.counts();
  // The same calls while a profile records (fewer: each call keeps its events).
  double replay_profiled = 0, full_profiled = 0;
  {
    aj::profile p;
    replay_profiled = median_us([&] { aj::Array y = compiled(x); }, calls / 10 + 1);
    full_profiled = median_us(full_call, calls / 10 + 1);
  }

  // New extents: each call another length, arrays made beforehand; each
  // kind its own lengths (1,000 + 100 k ...), so no plan is cached before
  // (the plan cache's key has the extents). The per-call median of each kind.
  const int lengths = 60;
  int kind = 0;
  auto per_call = [&](const std::function<void(const aj::Array&)>& f) {
    std::vector<aj::Array> xs;
    for (int n = 0; n < lengths; ++n) {
      xs.push_back(aj::from_vector(std::vector<float>(static_cast<std::size_t>(1000 + 100 * kind + n), 0.5f)).eval());
    }
    ++kind;
    std::vector<double> t;
    for (const aj::Array& a : xs) {
      const double t0 = ajbench::cpu_us();
      f(a);
      t.push_back(ajbench::cpu_us() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  auto generic = aj::compile([](const aj::Array& a) { return chain(a); });
  // (lvalues, as the calls timed: an rvalue is donated, another signature)
  const aj::Array warm1 = aj::from_vector(std::vector<float>(900, 0.5f)), warm2 = aj::from_vector(std::vector<float>(950, 0.5f));
  generic(warm1).eval();
  generic(warm2).eval();  // the second trace checks the first
  auto reading = aj::compile([](const aj::Array& a) { return chain(a) * static_cast<float>(a.shape()[0] > 0); });
  const double new_kept = per_call([&](const aj::Array& a) { generic(a).eval(); });
  const double new_traced = per_call([&](const aj::Array& a) { reading(a).eval(); });
  const double new_uncompiled = per_call([&](const aj::Array& a) { chain(a).eval(); });
  const auto cg = generic.counts();

  std::printf("  %-32s %8.2f us\n", "trace only", trace);
  std::printf("  %-32s %8.2f us\n", aj::jit::enabled() ? "kernel only (compiled)" : "kernel only (interpreter)", kernel);
  std::printf("  %-32s %8.2f us\n", "full call (plan cache on)", full);
  std::printf("  %-32s %8.2f us   <- trace + plan, target well under 4\n", "overhead (full - kernel)",
              full - kernel);
  std::printf("  %-32s %8.2f us\n", "full call on 1 element", full1);
  std::printf("  %-32s %8.2f us\n", "full call (plan cache off)", uncached);
  std::printf("  %-32s %8.2f us\n", "overhead, plan cache off", uncached - kernel);
  std::printf("  %-32s %8.2f us   <- target <= 1.5\n", "compiled replay (aj::compile)", replay);
  std::printf("  %-32s %8.2f us\n", "compiled replay, changing lr", replay_lr);
  std::printf("  %-32s %8.2f us   (x * (lr / sqrt(1 + t)) of C++ scalars: traced each call)\n",
              "compiled, schedule in C++", sched_traced);
  std::printf("  %-32s %8.2f us   (the same of weak arrays: %llu trace, %llu replays)\n", "compiled, schedule as arrays",
              sched_replay, static_cast<unsigned long long>(cw.traces), static_cast<unsigned long long>(cw.replays));
  std::printf("  %-32s %8.2f us\n", "compiled replay - kernel", replay - kernel);
  std::printf("  %-32s %8.2f us   (+%.2f us: 1 event)\n", "compiled replay, profiling on", replay_profiled,
              replay_profiled - replay);
  std::printf("  %-32s %8.2f us   (+%.2f us: 3 events)\n", "full call, profiling on", full_profiled,
              full_profiled - full);
  std::printf("  %-32s %8.2f us   <- no trace, no plan\n", "new extents, compiled", new_kept);
  std::printf("  %-32s %8.2f us\n", "new extents, traced each time", new_traced);
  std::printf("  %-32s %8.2f us\n", "new extents, uncompiled call", new_uncompiled);
  std::printf("  compiled: %llu traces, %llu replays; with lr: %llu traces, %llu replays\n",
              static_cast<unsigned long long>(cc.traces), static_cast<unsigned long long>(cc.replays),
              static_cast<unsigned long long>(cl.traces), static_cast<unsigned long long>(cl.replays));
  std::printf("  new extents: %llu traces, %llu from the kept trace, %llu of them not planned %s%s\n",
              static_cast<unsigned long long>(cg.traces), static_cast<unsigned long long>(cg.new_extents),
              static_cast<unsigned long long>(cg.unplanned), generic.extents_note().c_str(), generic.plan_note().c_str());
  if (cc.traces != 1 || cl.traces != 2 || cw.traces != 1 || cg.traces != 2 ||
      cg.new_extents != static_cast<std::uint64_t>(lengths)) {
    std::fprintf(stderr, "dispatch_plan: a compiled chain was traced again\n");
    return 1;
  }
  const auto st = aj::plan_cache::counters();
  std::printf("  plan cache: %llu hits, %llu misses\n", static_cast<unsigned long long>(st.hits),
              static_cast<unsigned long long>(st.misses));
  return 0;
}

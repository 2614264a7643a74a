// Indexing against hand-written loops, measured in one run:
//
//  1. A 1-D heat-equation step with fixed ends on 65,536 f32,
//       u[1:-1] = u[1:-1] + r * (u[2:] - 2 u[1:-1] + u[:-2])
//     written with slice_update, with pad, and (the old way) with concatenate;
//     each must be 1 kernel (printed), target <= 1.2x the hand loop.
//  2. take: a 1-D gather of 65,536 f32 at random indices, and an embedding
//     lookup (rows of a [4096, 64] table), against loops.
//  3. scatter_add: the embedding gradient (rows added at the ids) against a loop,
//     also timed alternately with it run by run (the median of the ratios).
//
// Times are medians of several batches, in us per call: this thread's CPU time
// on one thread (the default; a shared machine's descheduling would dominate
// wall time), wall time with more. "step" is a
// whole call (trace + plan cache hit + run); "kernel" runs the step's fused
// kernel alone (no trace, no plan). One thread unless a second argument says
// otherwise (the hand loops are single-threaded).
//
//   build/bench/bench_indexing [reps] [threads]
#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "backends/cpu/host_launch.hpp"
#include "graph/graph.hpp"
#include "opt/passes/fuse.hpp"

namespace {

// One thread: this thread's CPU time (a shared machine's descheduling would
// dominate wall time); several: wall time.
bool g_cpu_time = true;

double now_us() {
  if (!g_cpu_time) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

double median_us(const std::function<void()>& f, int calls, int runs = 11) {
  for (int i = 0; i < calls; ++i) f();  // warm up (compile, caches)
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    const double t0 = now_us();
    for (int i = 0; i < calls; ++i) f();
    t.push_back((now_us() - t0) / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The ratio of g's time to f's, f and g timed alternately run by run (calls
// each), the median of the runs' ratios: a shared machine's speed drifts
// over seconds, so the two medians above, taken one after the other, can
// differ by a fifth either way; each run's pair is timed in the same
// moment.
double paired_ratio(const std::function<void()>& f, const std::function<void()>& g, int calls, int runs = 21) {
  for (int i = 0; i < calls; ++i) f(), g();
  std::vector<double> r;
  for (int k = 0; k < runs; ++k) {
    const double t0 = now_us();
    for (int i = 0; i < calls; ++i) f();
    const double t1 = now_us();
    for (int i = 0; i < calls; ++i) g();
    r.push_back((now_us() - t1) / (t1 - t0));
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

void row(const char* what, double us, double base) { std::printf("  %-44s %9.2f us  %6.2fx\n", what, us, base > 0 ? us / base : 0.0); }

// The kernels evaluating `a` would run, fused once; runs the single kernel
// directly (its inputs must be evaluated already). Returns -1 when the plan
// is not one kernel.
double kernel_only_us(const aj::Array& a, int calls) {
  aj::Schedule s = aj::fuse({a.node_id()});
  if (s.kernels() != 1 || s.steps.size() != 1) return -1;
  const aj::Step& k = s.steps[0];
  std::vector<const void*> ins;
  for (std::size_t e = 0; e < k.inputs.size(); ++e) {
    ins.push_back(k.kernel.inputs[e].index_only ? nullptr : aj::graph()[k.inputs[e]].storage->data);
  }
  std::vector<char> out(static_cast<std::size_t>(a.size()) * aj::itemsize(a.dtype()) + 64);
  std::vector<void*> outs{out.data()};
  return median_us([&] { aj::cpu::run_kernel_compiled(k.kernel, ins, outs); }, calls);
}

std::uint64_t kernels_of(const aj::Array& a) {
  const std::uint64_t before = aj::stats().kernels_launched;
  a.eval();
  return aj::stats().kernels_launched - before;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  aj::jit::set_num_threads(threads);
  g_cpu_time = threads == 1;
  std::printf("arrayjit %s, %d thread(s), medians of %s\n", aj::version(), threads,
              g_cpu_time ? "this thread's CPU time" : "wall time");

  // ---- 1. heat step -------------------------------------------------------------------
  constexpr std::int64_t n = 65536;
  constexpr float r = 0.4f;
  std::vector<float> u0(n);
  for (std::int64_t i = 0; i < n; ++i) u0[static_cast<std::size_t>(i)] = std::sin(static_cast<float>(i) * 1e-3f) + 1.0f;
  std::printf("heat step, %lld f32, ends fixed:\n", static_cast<long long>(n));
  std::vector<float> hu = u0, hn(n);
  const double loop = median_us([&] {
    hn[0] = hu[0];
    hn[n - 1] = hu[n - 1];
    for (std::int64_t j = 1; j + 1 < n; ++j) {
      const auto jj = static_cast<std::size_t>(j);
      hn[jj] = hu[jj] + r * (hu[jj + 1] - 2.0f * hu[jj] + hu[jj - 1]);
    }
    std::swap(hu, hn);
  }, reps);
  auto interior = [&](const aj::Array& u) {
    aj::Array in = aj::slice(u, 0, 1, -1), left = aj::slice(u, 0, 0, -2), right = aj::slice(u, 0, 2, std::nullopt);
    return in + r * (right - 2.0f * in + left);
  };
  aj::Array ua = aj::from_vector(u0);
  ua.eval();
  auto by_update = [&](const aj::Array& u) { return aj::slice_update(u, {aj::Slice(1, -1)}, interior(u)); };
  auto by_pad = [&](const aj::Array& u) {
    // Fixed ends of value 1 (the initial ends are sin(0) + 1 = 1 and near 1.06).
    return aj::pad(interior(u), {{1, 1}}, aj::PadMode::constant, 1.0f);
  };
  auto by_concat = [&](const aj::Array& u) {
    return aj::concatenate({aj::slice(u, 0, 0, 1), interior(u), aj::slice(u, 0, -1, std::nullopt)});
  };
  aj::Array step_u = ua;
  const double upd = median_us([&] { step_u = by_update(step_u); step_u.eval(); }, reps);
  aj::Array step_p = ua;
  const double padt = median_us([&] { step_p = by_pad(step_p); step_p.eval(); }, reps);
  aj::Array step_c = ua;
  const double cat = median_us([&] { step_c = by_concat(step_c); step_c.eval(); }, reps);
  const double kupd = kernel_only_us(by_update(ua), reps);
  const double kpad = kernel_only_us(by_pad(ua), reps);
  row("hand-written loop", loop, loop);
  row("slice_update: step (trace + plan hit + kernel)", upd, loop);
  row("slice_update: kernel", kupd, loop);
  row("pad: step", padt, loop);
  row("pad: kernel", kpad, loop);
  row("concatenate (before this issue): step", cat, loop);
  std::printf("  kernels per step: slice_update %llu, pad %llu, concatenate %llu\n",
              static_cast<unsigned long long>(kernels_of(by_update(ua))),
              static_cast<unsigned long long>(kernels_of(by_pad(ua))),
              static_cast<unsigned long long>(kernels_of(by_concat(ua))));
  // The two agree with the loop after the same number of steps.
  {
    std::vector<float> a = u0, b(n);
    aj::Array x = ua;
    for (int s = 0; s < 10; ++s) {
      b[0] = a[0];
      b[n - 1] = a[n - 1];
      for (std::int64_t j = 1; j + 1 < n; ++j) {
        const auto jj = static_cast<std::size_t>(j);
        b[jj] = a[jj] + r * (a[jj + 1] - 2.0f * a[jj] + a[jj - 1]);
      }
      std::swap(a, b);
      x = by_update(x);
    }
    // (The compiler may contract the loop's a + r * b into an FMA: compare
    // within rounding.)
    const std::vector<float> got = x.to_vector<float>();
    double worst = 0;
    for (std::size_t k = 0; k < got.size(); ++k) worst = std::max(worst, static_cast<double>(std::fabs(got[k] - a[k])));
    std::printf("  after 10 steps, largest difference from the loop: %g\n", worst);
  }

  // ---- 2. take -----------------------------------------------------------------------
  std::mt19937 rng(1);
  std::vector<float> src(n);
  for (auto& v : src) v = static_cast<float>(rng() % 1000) * 0.5f;
  std::vector<std::int32_t> ids(n);
  for (auto& i : ids) i = static_cast<std::int32_t>(rng() % n);
  aj::Array sa = aj::from_vector(src), ia = aj::from_vector(ids);
  sa.eval();
  ia.eval();
  std::printf("take: 65,536 f32 gathered at random i32 indices (then * 2):\n");
  std::vector<float> out(n);
  const double gloop = median_us([&] {
    for (std::int64_t k = 0; k < n; ++k) out[static_cast<std::size_t>(k)] = src[static_cast<std::size_t>(ids[static_cast<std::size_t>(k)])] * 2.0f;
  }, reps);
  const double gstep = median_us([&] { (aj::take(sa, ia) * 2.0f).eval(); }, reps);
  const double gkern = kernel_only_us(aj::take(sa, ia) * 2.0f, reps);
  row("hand-written loop", gloop, gloop);
  row("take(x, i) * 2: step", gstep, gloop);
  row("take(x, i) * 2: kernel", gkern, gloop);

  constexpr std::int64_t vocab = 4096, dim = 64, batch = 4096;
  std::vector<float> table(static_cast<std::size_t>(vocab * dim));
  for (auto& v : table) v = static_cast<float>(rng() % 1000) * 0.01f;
  std::vector<std::int32_t> tok(batch);
  for (auto& t : tok) t = static_cast<std::int32_t>(rng() % vocab);
  aj::Array ta = aj::from_vector(table, {vocab, dim}), tk = aj::from_vector(tok);
  ta.eval();
  tk.eval();
  std::printf("embedding lookup: %lld rows of a [%lld, %lld] f32 table:\n", static_cast<long long>(batch),
              static_cast<long long>(vocab), static_cast<long long>(dim));
  std::vector<float> emb(static_cast<std::size_t>(batch * dim));
  const double eloop = median_us([&] {
    for (std::int64_t b = 0; b < batch; ++b) {
      const float* row_p = &table[static_cast<std::size_t>(tok[static_cast<std::size_t>(b)] * dim)];
      std::copy(row_p, row_p + dim, &emb[static_cast<std::size_t>(b * dim)]);
    }
  }, reps);
  const double estep = median_us([&] { aj::take(ta, tk, 0).eval(); }, reps);
  const double ekern = kernel_only_us(aj::take(ta, tk, 0), reps);
  row("hand-written loop (memcpy per row)", eloop, eloop);
  row("take(table, ids, 0): step", estep, eloop);
  row("take(table, ids, 0): kernel", ekern, eloop);

  // ---- 3. scatter_add -----------------------------------------------------------------
  std::printf("scatter_add: the embedding gradient, %lld rows of %lld f32 added into [%lld, %lld]:\n",
              static_cast<long long>(batch), static_cast<long long>(dim), static_cast<long long>(vocab),
              static_cast<long long>(dim));
  std::vector<float> g(static_cast<std::size_t>(batch * dim), 0.5f), acc(table.size());
  auto scatter_loop = [&] {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::int64_t b = 0; b < batch; ++b) {
      float* dst = &acc[static_cast<std::size_t>(tok[static_cast<std::size_t>(b)] * dim)];
      const float* s = &g[static_cast<std::size_t>(b * dim)];
      for (std::int64_t d = 0; d < dim; ++d) dst[d] += s[d];
    }
  };
  const double sloop = median_us(scatter_loop, reps);
  aj::Array ga = aj::from_vector(g, {batch, dim});
  ga.eval();
  const double sstep = median_us([&] { aj::scatter_add(aj::zeros({vocab, dim}), tk, ga, 0).eval(); }, reps);
  row("hand-written loop (zero, then add rows)", sloop, sloop);
  row("scatter_add(zeros, ids, g, 0): step", sstep, sloop);
  std::printf("  %-44s %9s     %6.2fx\n", "the same two, timed alternately", "",
              paired_ratio(scatter_loop, [&] { aj::scatter_add(aj::zeros({vocab, dim}), tk, ga, 0).eval(); }, reps));
  const aj::Stats st = aj::stats();
  std::printf("  in-place reuses so far: %llu\n", static_cast<unsigned long long>(st.inplace_reuses));
  return 0;
}

// Lazy loops: a loop left unevaluated and
// evaluated once at the end, against the same loop evaluated after every
// step, measured in one run; long chains and wide concatenates planned and
// compiled at once; an Adam step with a learning-rate schedule that
// evaluates only p, against evaluating p, m and v and a hand-written loop.
//
//   build/bench/lazy_loops [quick]
//
// Every timed run starts cold: the kernel cache in memory is cleared, the
// disk cache is off and the plan cache is emptied, so compile and planning
// time are part of both sides of each ratio. Times are wall-clock medians;
// beside them, the process CPU time (all threads), which a busy machine
// disturbs less.
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/explain.hpp>
#include <arrayjit/jit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "opt/plan_cache.hpp"

namespace {

using aj::Array;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// A cold start: no compiled kernel, no stored plan.
void cold() {
  aj::jit::clear_memory_cache();
  aj::plan_cache::clear();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

struct Run {
  double ms = 0;
  double cpu = 0;
  aj::Stats stats;
  std::vector<float> out;
};

// Runs `body` cold `reps` times (warm: once untimed first, then with its
// kernels compiled); the median time, the stats and values of the last.
Run timed(int reps, const std::function<Array()>& body, bool warm = false) {
  std::vector<double> t, c;
  Run r;
  if (warm) {
    cold();
    body().eval();
  }
  for (int i = 0; i < reps; ++i) {
    if (!warm) cold();
    aj::reset_stats();
    const auto t0 = Clock::now();
    const double c0 = cpu_ms();
    Array y = body();
    t.push_back(ms_since(t0));
    c.push_back(cpu_ms() - c0);
    r.stats = aj::stats();
    r.out = y.to_vector<float>();
  }
  r.ms = median(t);
  r.cpu = median(c);
  return r;
}

void row(const char* what, const Run& r, const Run& base) {
  std::printf("  %-24s %9.2f ms %5.2fx  (cpu %8.2f ms %5.2fx)  kernels %5llu, compiled %2llu, plans %4llu, "
              "materialized %4llu\n",
              what, r.ms, r.ms / base.ms, r.cpu, r.cpu / base.cpu, static_cast<unsigned long long>(r.stats.kernels_launched),
              static_cast<unsigned long long>(r.stats.kernels_compiled),
              static_cast<unsigned long long>(r.stats.plans_built),
              static_cast<unsigned long long>(r.stats.values_materialized));
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// x[i-1] + x[i] + x[i+1] with slices: each step is two elements shorter.
Array smooth(const Array& x) {
  return aj::slice(x, 0, 0, -2) + aj::slice(x, 0, 1, -1) + aj::slice(x, 0, 2, std::nullopt);
}

// The 5-point Jacobi update of the interior: each step is one ring smaller.
Array jacobi(const Array& u) {
  using aj::Slice;
  auto s = [&](std::int64_t r0, std::optional<std::int64_t> r1, std::int64_t c0, std::optional<std::int64_t> c1) {
    return aj::slice(u, {Slice(r0, r1), Slice(c0, c1)});
  };
  return 0.25f * (s(0, -2, 1, -1) + s(2, std::nullopt, 1, -1) + s(1, -1, 0, -2) + s(1, -1, 2, std::nullopt));
}

// x's interior replaced by its 3-point mean (slice_update), the ends kept:
// the same length every step.
Array smooth_update(const Array& x) {
  const std::int64_t n = x.shape()[0];
  const Array in = aj::slice(x, 0, 1, n - 1);
  return aj::slice_update(x, {aj::Slice(1, n - 1)}, (aj::slice(x, 0, 0, n - 2) + in + aj::slice(x, 0, 2, n)) / 3.0f);
}

// The same update written with pad: the interior's mean padded with the
// fixed boundary value (0) on both ends.
Array smooth_pad(const Array& x) {
  const std::int64_t n = x.shape()[0];
  const Array mean = (aj::slice(x, 0, 0, n - 2) + aj::slice(x, 0, 1, n - 1) + aj::slice(x, 0, 2, n)) / 3.0f;
  return aj::pad(mean, {1});
}

// And with concatenate: the ends kept, the interior's mean between them.
Array smooth_concat(const Array& x) {
  const std::int64_t n = x.shape()[0];
  const Array mean = (aj::slice(x, 0, 0, n - 2) + aj::slice(x, 0, 1, n - 1) + aj::slice(x, 0, 2, n)) / 3.0f;
  return aj::concatenate({aj::slice(x, 0, 0, 1), mean, aj::slice(x, 0, n - 1, n)});
}

void lazy_vs_eager(const char* name, int steps, int reps, const Array& x0, Array (*step)(const Array&),
                   bool warm = false) {
  Run eager = timed(reps, [&] {
    Array x = x0;
    for (int t = 0; t < steps; ++t) {
      x = step(x);
      x.eval();
    }
    return x;
  }, warm);
  Run lazy = timed(reps, [&] {
    Array x = x0;
    for (int t = 0; t < steps; ++t) x = step(x);
    x.eval();
    return x;
  }, warm);
  Array x = x0;
  for (int t = 0; t < steps; ++t) x = step(x);
  const std::size_t explain_lines = lines(aj::explain(x));
  std::printf("%s, %d steps%s (explain: %zu lines)%s\n", name, steps, warm ? ", warm" : "", explain_lines,
              same(eager.out, lazy.out) ? "" : "  VALUES DIFFER");
  row("evaluated every step", eager, eager);
  row("lazy, evaluated once", lazy, eager);
}

// Issue 33's case: a concatenate of 4,000 unevaluated 16-element pieces
// (slices of one array, each * 2 + 1) against the whole-array expression
// that gives the same values, both cold (trace, plan, compile and run).
void concat_vs_whole(std::int64_t pieces, int reps) {
  const std::int64_t len = 16;
  Array x = aj::from_vector(random_floats(static_cast<std::size_t>(len * pieces), 9));
  x.eval();
  Run cat = timed(reps, [&] {
    std::vector<Array> parts;
    parts.reserve(static_cast<std::size_t>(pieces));
    for (std::int64_t i = 0; i < pieces; ++i) parts.push_back(aj::slice(x, 0, len * i, len * (i + 1)) * 2.0f + 1.0f);
    return aj::concatenate(parts).eval();
  });
  Run whole = timed(reps, [&] { return (x * 2.0f + 1.0f).eval(); });
  std::printf("concatenate of %lld unevaluated %lld-element pieces against the whole-array expression, cold%s\n",
              static_cast<long long>(pieces), static_cast<long long>(len), same(cat.out, whole.out) ? "" : "  VALUES DIFFER");
  row("whole-array expression", whole, whole);
  row("concatenate of pieces", cat, whole);
}

// The escape-time Mandelbrot on a 400 x 600 f64 grid (the example's loop):
// evaluated every iteration against left lazy and evaluated once.
void mandelbrot(int iterations, int reps) {
  const Array cr = aj::linspace(-2.0, 0.5, 600, aj::DType::f64);
  const Array ci = aj::linspace(1.25, -1.25, 400, aj::DType::f64).reshape({400, 1});
  auto loop = [&](bool eval_each) {
    Array zr = aj::zeros({400, 600}, aj::DType::f64), zi = zr;
    Array count = aj::zeros({400, 600}, aj::DType::i32);
    for (int it = 0; it < iterations; ++it) {
      const Array zr2 = zr * zr, zi2 = zi * zi;
      const Array inside = zr2 + zi2 <= 4;
      count = count + inside.astype(aj::DType::i32);
      const Array next_zi = 2 * zr * zi + ci;
      zr = aj::where(inside, zr2 - zi2 + cr, zr);
      zi = aj::where(inside, next_zi, zi);
      if (eval_each) aj::eval({zr, zi, count});
    }
    return count.astype(aj::DType::f32).eval();
  };
  for (bool warm : {false, true}) {
    Run eager = timed(reps, [&] { return loop(true); }, warm);
    Run lazy = timed(reps, [&] { return loop(false); }, warm);
    std::printf("Mandelbrot, 400 x 600 f64, %d iterations%s%s\n", iterations, warm ? ", warm" : "",
                same(eager.out, lazy.out) ? "" : "  VALUES DIFFER");
    row("evaluated every step", eager, eager);
    row("lazy, evaluated once", lazy, eager);
  }
}

// A chain of `ops` elementwise ops (four kinds, repeating), evaluated once.
void long_chain(std::int64_t ops) {
  Array x = aj::from_vector(random_floats(1000, 7));
  x.eval();
  std::vector<double> trace, run, cpu;
  aj::Stats st;
  for (int rep = 0; rep < 3; ++rep) {
    cold();
    const auto t0 = Clock::now();
    Array y = x;
    for (std::int64_t i = 0; i < ops; ++i) {
      switch (i % 4) {
        case 0: y = y * 0.999f; break;
        case 1: y = y + 0.5f; break;
        case 2: y = aj::abs(y); break;
        default: y = aj::minimum(y, 4.0f); break;
      }
    }
    trace.push_back(ms_since(t0));
    aj::reset_stats();
    const auto t1 = Clock::now();
    const double c1 = cpu_ms();
    y.eval();
    run.push_back(ms_since(t1));
    cpu.push_back(cpu_ms() - c1);
    st = aj::stats();
  }
  std::printf("chain of %lld elementwise ops on 1000 f32, evaluated once\n", static_cast<long long>(ops));
  std::printf("  trace %8.1f ms; plan + compile + run %8.1f ms (cpu %.1f ms; compile %.1f ms)   kernels %llu, "
              "compiled %llu, materialized %llu\n",
              median(trace), median(run), median(cpu), static_cast<double>(st.compile_ns) / 1e6,
              static_cast<unsigned long long>(st.kernels_launched),
              static_cast<unsigned long long>(st.kernels_compiled),
              static_cast<unsigned long long>(st.values_materialized));
}

// concatenate of `pieces` unevaluated pieces (4 elements each).
void wide_concat(std::int64_t pieces) {
  Array x = aj::from_vector(random_floats(static_cast<std::size_t>(4 * pieces), 8));
  x.eval();
  std::vector<double> trace, run, cpu;
  aj::Stats st;
  for (int rep = 0; rep < 3; ++rep) {
    cold();
    const auto t0 = Clock::now();
    std::vector<Array> parts;
    parts.reserve(static_cast<std::size_t>(pieces));
    for (std::int64_t i = 0; i < pieces; ++i) {
      parts.push_back(aj::slice(x, 0, 4 * i, 4 * i + 4) * 2.0f + static_cast<float>(i));
    }
    Array c = aj::concatenate(parts);
    parts.clear();
    trace.push_back(ms_since(t0));
    aj::reset_stats();
    const auto t1 = Clock::now();
    const double c1 = cpu_ms();
    c.eval();
    run.push_back(ms_since(t1));
    cpu.push_back(cpu_ms() - c1);
    st = aj::stats();
  }
  std::printf("concatenate of %lld unevaluated pieces\n", static_cast<long long>(pieces));
  std::printf("  trace %8.1f ms; plan + compile + run %8.1f ms (cpu %.1f ms; compile %.1f ms)   kernels %llu, "
              "compiled %llu\n",
              median(trace), median(run), median(cpu), static_cast<double>(st.compile_ns) / 1e6,
              static_cast<unsigned long long>(st.kernels_launched),
              static_cast<unsigned long long>(st.kernels_compiled));
}

// Adam with a learning-rate schedule (a C++ double each step).
void adam(std::int64_t n, int warm, int steps) {
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const auto g0 = random_floats(static_cast<std::size_t>(n), 11);
  const auto p0 = random_floats(static_cast<std::size_t>(n), 12);
  auto lr_at = [](int t) { return 1e-3 / std::sqrt(1.0 + t); };
  std::printf("Adam on %lld f32 with a learning-rate schedule, per step after %d warm-up steps (median of %d)\n",
              static_cast<long long>(n), warm, steps);
  auto run = [&](bool all, const char* what, double base) {
    cold();
    Array g = aj::from_vector(g0), p = aj::from_vector(p0);
    Array m = aj::zeros({n}), v = aj::zeros({n});
    std::vector<double> t;
    aj::Stats total{};
    for (int s = 0; s < warm + steps; ++s) {
      const double lr = lr_at(s);
      const double c1 = 1.0 / (1.0 - std::pow(0.9, s + 1)), c2 = 1.0 / (1.0 - std::pow(0.999, s + 1));
      aj::reset_stats();
      const auto t0 = Clock::now();
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      p = p - lr * (m * c1) / (aj::sqrt(v * c2) + eps);
      if (all) aj::eval({p, m, v});
      else p.eval();
      const double ms = ms_since(t0);
      if (s >= warm) {
        t.push_back(ms);
        const aj::Stats st = aj::stats();
        total.kernels_launched += st.kernels_launched;
        total.kernels_compiled += st.kernels_compiled;
        total.system_allocs += st.system_allocs;
        total.pool_hits += st.pool_hits;
        total.plans_built += st.plans_built;
        total.inplace_reuses += st.inplace_reuses;
        total.live_nodes = st.live_nodes;
      }
    }
    const double med = median(t);
    const double k = steps;
    std::printf("  %-30s %8.3f ms  %5.2fx   per step: kernels %.2f, compiled %.2f, system allocs %.2f, pool hits "
                "%.2f, plans built %.2f, in place %.2f; live nodes %llu; m %s\n",
                what, med, base > 0 ? med / base : 1.0, total.kernels_launched / k, total.kernels_compiled / k,
                total.system_allocs / k, total.pool_hits / k, total.plans_built / k, total.inplace_reuses / k,
                static_cast<unsigned long long>(total.live_nodes), m.is_evaluated() ? "evaluated" : "NOT evaluated");
    return med;
  };
  // The peer: one hand-written pass, in place.
  std::vector<float> p(p0), m(static_cast<std::size_t>(n), 0.0f), v(static_cast<std::size_t>(n), 0.0f);
  std::vector<double> t;
  for (int s = 0; s < warm + steps; ++s) {
    const float lr = static_cast<float>(lr_at(s));
    const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(0.9, s + 1)));
    const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(0.999, s + 1)));
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g0[i];
      v[i] = b2 * v[i] + (1 - b2) * g0[i] * g0[i];
      p[i] = p[i] - lr * (m[i] * c1) / (std::sqrt(v[i] * c2) + eps);
    }
    if (s >= warm) t.push_back(ms_since(t0));
  }
  const double loop = median(t);
  std::printf("  %-30s %8.3f ms  %5.2fx\n", "hand-written loop (1 thread)", loop, 1.0);
  run(false, "eval(p) only", loop);
  run(true, "eval({p, m, v})", loop);
  const int threads = aj::jit::num_threads();
  aj::jit::set_num_threads(1);
  run(false, "eval(p) only, 1 thread", loop);
  run(true, "eval({p, m, v}), 1 thread", loop);
  aj::jit::set_num_threads(threads);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  aj::jit::set_cache_dir("");  // no disk cache: every cold run compiles
  const std::string target = aj::jit::target_description();
  std::printf("arrayjit %s; %s\n", aj::version(), target.substr(0, target.find(", +")).c_str());
  const int reps = quick ? 1 : 5;
  for (int steps : {32, 256, 1000}) {
    if (quick && steps > 256) break;
    Array x = aj::from_vector(random_floats(static_cast<std::size_t>(10000 + 2 * steps), 1));
    x.eval();
    lazy_vs_eager("3-point smoothing of 10000 + 2T f32 (slices)", steps, reps, x, smooth);
  }
  for (int steps : {32, 256, 1000}) {
    if (quick && steps > 256) break;
    Array x = aj::from_vector(random_floats(65536, 4));
    x.eval();
    for (bool warm : {false, true}) {
      lazy_vs_eager("3-point smoothing of 65536 f32 (slice_update, fixed ends)", steps, reps, x, smooth_update, warm);
    }
    for (bool warm : {false, true}) {
      lazy_vs_eager("3-point smoothing of 65536 f32 (pad, ends 0)", steps, reps, x, smooth_pad, warm);
    }
    for (bool warm : {false, true}) {
      lazy_vs_eager("3-point smoothing of 65536 f32 (concatenate, fixed ends)", steps, reps, x, smooth_concat, warm);
    }
  }
  {
    const std::int64_t n = quick ? 1024 : 4096;
    Array u = aj::from_vector(random_floats(static_cast<std::size_t>(n * n), 2), {n, n});
    u.eval();
    lazy_vs_eager(quick ? "2-D 5-point Jacobi on 1024^2 f32" : "2-D 5-point Jacobi on 4096^2 f32", 10,
                  quick ? 1 : 3, u, jacobi);
  }
  {
    cold();
    Array x = aj::from_vector(random_floats(1000, 3));
    Array y = x;
    for (int i = 0; i < 100; ++i) y = y * 0.5f + 1.0f;
    aj::reset_stats();
    y.eval();
    std::printf("100 x (x * 0.5 + 1): %llu kernel(s)\n", static_cast<unsigned long long>(aj::stats().kernels_launched));
  }
  mandelbrot(100, quick ? 1 : 3);
  long_chain(quick ? 10'000 : 100'000);
  wide_concat(quick ? 1'000 : 10'000);
  concat_vs_whole(4'000, quick ? 3 : 5);
  adam(quick ? (1 << 16) : (1 << 20), 5, quick ? 20 : 50);
  return 0;
}

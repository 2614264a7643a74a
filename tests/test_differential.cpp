// Differential testing: random graphs (tests/random_graph.hpp) evaluated by the
// optimizing pipeline must agree with the reference interpreter.
//
// For each seed the program is traced and evaluated twice, from scratch, once
// under Executor::reference (the oracle) and once under Executor::optimized;
// the handles of the first run are all gone before the second starts (so
// trace-time CSE cannot share a node between the runs).
//
// Comparison rule (compare_values below):
//   - bool and integer results: exactly equal.
//   - float results the generator marks exact (no reduction, matmul or
//     transcendental function on their path): bit-identical, so -0.0 must stay
//     -0.0 (docs/semantics.md: optimizer rewrites are exact); NaN matches NaN.
//   - other float results: NaN matches only NaN, an infinity only the same
//     infinity, and finite values a, b must satisfy
//         |a - b| <= 2 * (abs_err + rel_err * max(|a|, |b|))
//                    + 2 * eps * max(|a|, |b|) + 16 * min_normal
//     where abs_err/rel_err is the value's Bound, a forward error analysis the
//     generator carries along the graph. For a sum of N terms of magnitude at
//     most M it is (N-1) * eps * N * M (any association order of the N-1
//     additions), i.e. docs/semantics.md's "n * eps of the sum of absolute
//     values"; later ops propagate it with their Lipschitz constants, and
//     transcendental functions add 8 ulp. eps is 2^-23 for f32 and 2^-52 for
//     f64 (so the relative part is about 1e-7 * N for f32 and 2e-16 * N for
//     f64 — tighter than a fixed rtol of 1e-5 / 1e-12, and unlike a pure
//     relative tolerance it stays sound when a sum cancels to near zero).
//
// A mismatch prints a reproducer: the seed, the program (C++-like, including
// mid-program evals, rebinding and dropped handles), the aj::dump of the
// output graph before evaluation, and the first mismatching element; then the
// seed is re-run with fewer steps to find the shortest failing prefix.
//
// A second mode re-runs each program with new input values so that its
// evaluations reuse cached plans (opt/plan_cache.hpp); see that test case.
//
// Environment: AJ_TEST_LONG=1 runs 10,000 graphs instead of 300 (the plan
// cache mode a third of that, four runs each);
// AJ_DIFF_SEED=<n> runs only that seed and prints its program (before the
// optimized run, so a crash still leaves it); AJ_DIFF_STEPS=<k> with it runs
// only the first k steps of that program (to shrink a crash by hand);
// AJ_DIFF_GRAPHS=<n> runs n graphs (a deeper search than long mode).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/api/executor.hpp"
#include "opt/plan_cache.hpp"
#include "tests/random_graph.hpp"

namespace {

using aj::DType;
using aj::detail::Executor;
using aj::detail::ExecutorScope;
using ajtest::Bound;
using ajtest::RandomGraph;

constexpr std::uint64_t kSeedBase = 0xd1ff000;
constexpr int kDefaultGraphs = 300;
constexpr int kLongGraphs = 10000;

struct OutData {
  std::string name;
  DType dtype = DType::f32;
  std::string shape;
  Bound bound;
  std::vector<double> f;        // float outputs
  std::vector<std::int64_t> i;  // integer and bool outputs
};

struct RunData {
  std::vector<OutData> outs;
  std::string program, dump;
  std::string error;  // what evaluation threw, if it did
  std::int64_t leaked_nodes = 0;
  bool borrowed_intact = true;
  std::optional<std::string> held_changed;
  std::map<std::string, int> used;
  int skipped = 0;
  int steps = 0;  // steps the program ran (its prefix length)
};

// A re-run of a seed's program (the plan cache mode): other input values,
// optionally other reference counts (dropped handles kept).
struct Rerun {
  std::uint64_t data_seed = 0;
  bool keep_dropped = false;
};

// Build the seed's program under executor `ex`, evaluate its outputs together
// and read them. Every handle is gone when this returns.
RunData run_one(std::uint64_t seed, int step_limit, Executor ex,
                std::optional<Rerun> rerun = std::nullopt) {
  const auto live_before = static_cast<std::int64_t>(aj::stats().live_nodes);
  RunData d;
  {
    ExecutorScope scope(ex);
    RandomGraph g = rerun ? RandomGraph(seed, step_limit, rerun->data_seed, rerun->keep_dropped)
                          : RandomGraph(seed, step_limit);
    try {
      g.build();
      std::vector<aj::Array> arrays;
      for (auto& o : g.outputs()) arrays.push_back(o.array);
      d.dump = aj::dump(arrays);  // before evaluation: the graph the executor sees
      aj::eval(arrays);
      for (auto& o : g.outputs()) {
        OutData od;
        od.name = o.name;
        od.dtype = o.array.dtype();
        std::ostringstream s;
        s << o.array.shape();
        od.shape = s.str();
        od.bound = o.bound;
        if (aj::is_float(od.dtype)) od.f = o.array.to_vector<double>();
        else od.i = o.array.to_vector<std::int64_t>();
        d.outs.push_back(std::move(od));
      }
      d.held_changed = g.held_intact();
    } catch (const std::exception& e) {
      d.error = e.what();
    }
    d.program = g.program();
    d.borrowed_intact = g.borrowed_intact();
    d.used = g.used();
    d.skipped = g.skipped();
    d.steps = g.steps();
  }
  d.leaked_nodes = static_cast<std::int64_t>(aj::stats().live_nodes) - live_before;
  return d;
}

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::string show(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

namespace ajtest {

// The first element where `got` (optimized) is not acceptably close to `want`
// (reference) under the rule in the header comment; nullopt if none.
std::optional<std::string> compare_values(DType t, const Bound& b, const std::vector<double>& want,
                                          const std::vector<double>& got) {
  if (want.size() != got.size()) {
    return "element count " + std::to_string(got.size()) + ", reference has " +
           std::to_string(want.size());
  }
  const double eps = eps_of(t);
  // 16 of the smallest normal value (f16: 2^-14; bf16 has f32's exponent range).
  const double tiny = 16 * (t == DType::f16 ? 0x1p-14
                            : t == DType::f32 || t == DType::bf16 ? static_cast<double>(std::numeric_limits<float>::min())
                                                                  : std::numeric_limits<double>::min());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double a = want[k], g = got[k];
    bool ok;
    double tol = 0;
    if (b.exact()) {
      ok = same_bits(a, g);
    } else if (std::isnan(a) || std::isnan(g)) {
      ok = std::isnan(a) && std::isnan(g);
    } else if (std::isinf(a) || std::isinf(g)) {
      ok = a == g;
    } else {
      const double m = std::max(std::fabs(a), std::fabs(g));
      tol = 2 * (b.abs_err + b.rel_err * m) + 2 * eps * m + tiny;
      ok = std::fabs(a - g) <= tol;
    }
    if (!ok) {
      return "element " + std::to_string(k) + ": reference " + show(a) + ", optimized " + show(g) +
             (b.exact() ? " (exact: bit-identical expected)" : " (tolerance " + show(tol) + ")");
    }
  }
  return std::nullopt;
}

std::optional<std::string> compare_ints(const std::vector<std::int64_t>& want,
                                        const std::vector<std::int64_t>& got) {
  if (want.size() != got.size()) {
    return "element count " + std::to_string(got.size()) + ", reference has " +
           std::to_string(want.size());
  }
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (want[k] != got[k]) {
      return "element " + std::to_string(k) + ": reference " + std::to_string(want[k]) +
             ", optimized " + std::to_string(got[k]);
    }
  }
  return std::nullopt;
}

}  // namespace ajtest

namespace {

// Problems with the reference run itself (the oracle must never fail).
std::optional<std::string> check_reference(const RunData& r) {
  if (!r.error.empty()) return "the reference interpreter threw: " + r.error;
  if (r.leaked_nodes != 0) {
    return "reference run left " + std::to_string(r.leaked_nodes) + " graph nodes alive";
  }
  if (!r.borrowed_intact) return "the reference run wrote into borrowed memory";
  if (r.held_changed) return "reference run: " + *r.held_changed;
  return std::nullopt;
}

// The first way the optimized run differs from the reference run.
std::optional<std::string> diff_runs(const RunData& ref, const RunData& opt) {
  if (!opt.error.empty()) return "the optimized path threw: " + opt.error;
  if (ref.program != opt.program) {
    return std::string("the generator traced a different program (not deterministic)");
  }
  if (opt.leaked_nodes != 0) {
    return "optimized run left " + std::to_string(opt.leaked_nodes) + " graph nodes alive";
  }
  if (!opt.borrowed_intact) return std::string("the optimized run wrote into borrowed memory");
  if (opt.held_changed) return "optimized run: " + *opt.held_changed;
  if (ref.outs.size() != opt.outs.size()) return std::string("different number of outputs");
  for (std::size_t k = 0; k < ref.outs.size(); ++k) {
    const OutData &a = ref.outs[k], &b = opt.outs[k];
    std::string where = "output " + std::to_string(k) + " (" + a.name + ", " +
                        aj::dtype_name(a.dtype) + a.shape + ")";
    if (a.dtype != b.dtype || a.shape != b.shape) {
      return where + ": optimized has " + aj::dtype_name(b.dtype) + b.shape;
    }
    auto m = aj::is_float(a.dtype) ? ajtest::compare_values(a.dtype, a.bound, a.f, b.f)
                                   : ajtest::compare_ints(a.i, b.i);
    if (m) return where + ", " + *m;
  }
  return std::nullopt;
}

// Run one seed through both executors: nullopt when they agree.
std::optional<std::string> check_seed(std::uint64_t seed, int limit, RunData* ref_out = nullptr,
                                      std::optional<Rerun> rerun = std::nullopt) {
  RunData ref = run_one(seed, limit, Executor::reference, rerun);
  if (auto bad = check_reference(ref)) {
    if (ref_out) *ref_out = ref;
    return "REFERENCE BUG: " + *bad;
  }
  RunData opt = run_one(seed, limit, Executor::optimized, rerun);
  auto m = diff_runs(ref, opt);
  if (ref_out) *ref_out = std::move(ref);
  return m;
}

// Print a reproducer for a failing seed, then shrink it: the same seed with a
// smaller step limit runs a prefix of the same program.
void report_failure(std::uint64_t seed, const std::string& why) {
  RunData ref;
  check_seed(seed, RandomGraph::kMaxSteps, &ref);
  std::ostringstream os;
  os << "==== differential mismatch: seed " << seed << " ====\n"
     << why << "\n-- program --\n"
     << ref.program << "-- aj::dump of the outputs before evaluation --\n"
     << ref.dump;
  // Shrink: halve the step limit while it still fails, then step down.
  int fail = std::max(1, ref.steps), pass = 0;
  std::string fail_why = why;
  for (int lim = fail / 2; lim >= 1; lim /= 2) {
    auto m = check_seed(seed, lim);
    if (!m) {
      pass = lim;
      break;
    }
    fail = lim;
    fail_why = *m;
  }
  for (int lim = fail - 1; lim > pass; --lim) {
    auto m = check_seed(seed, lim);
    if (!m) {
      pass = lim;
      break;
    }
    fail = lim;
    fail_why = *m;
  }
  if (fail < ref.steps) {
    RunData small;
    check_seed(seed, fail, &small);
    os << "-- shrunk: still fails with a limit of " << fail << " steps";
    if (pass > 0) os << " (passes with " << pass << ")";
    os << " --\n"
       << fail_why << "\n-- shrunk program (RandomGraph(" << seed << ", " << fail << ")) --\n"
       << small.program << "-- shrunk aj::dump --\n"
       << small.dump;
  }
  std::fputs(os.str().c_str(), stderr);
}

std::optional<std::uint64_t> env_seed() {
  const char* s = std::getenv("AJ_DIFF_SEED");
  if (!s || !*s) return std::nullopt;
  return std::strtoull(s, nullptr, 0);
}

// A crash (e.g. the optimizer corrupting memory) kills the test binary; this
// names the seed that was running first, then lets doctest's handler report.
class CrashNote {
 public:
  CrashNote() {
    for (int k = 0; k < kSignals; ++k) {
      struct sigaction sa {};
      sa.sa_handler = &CrashNote::on_signal;
      sigemptyset(&sa.sa_mask);
      sigaction(kSig[k], &sa, &saved_[k]);
    }
  }
  ~CrashNote() {
    for (int k = 0; k < kSignals; ++k) sigaction(kSig[k], &saved_[k], nullptr);
    note_[0] = 0;
  }
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
  static void set(std::uint64_t seed) {
    std::snprintf(
        note_, sizeof note_,
        "\n==== differential: crashed while running seed %llu (rerun: AJ_DIFF_SEED=%llu) ====\n",
        static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  }

 private:
  static constexpr int kSignals = 4;
  static constexpr int kSig[kSignals] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE};
  static void on_signal(int sig) {
    if (note_[0]) {
      ssize_t r = ::write(2, note_, std::strlen(note_));
      (void)r;
    }
    for (int k = 0; k < kSignals; ++k) {
      if (kSig[k] == sig) sigaction(sig, &saved_[k], nullptr);
    }
    std::raise(sig);
  }
  static inline char note_[160] = {};
  static inline struct sigaction saved_[kSignals] = {};
};

bool long_mode() {
  const char* s = std::getenv("AJ_TEST_LONG");
  return s && *s && std::string(s) != "0";
}

}  // namespace

TEST_SUITE("differential") {

TEST_CASE("random graphs: the optimizer agrees with the reference interpreter") {
  if (auto one = env_seed()) {
    // One seed, verbosely: the program is printed before the optimized run,
    // so it is there even if that run crashes.
    CrashNote crash_note;
    CrashNote::set(*one);
    const char* steps = std::getenv("AJ_DIFF_STEPS");
    const int limit = steps && *steps ? std::atoi(steps) : RandomGraph::kMaxSteps;
    RunData ref = run_one(*one, limit, Executor::reference);
    std::printf("seed %llu\n%s-- dump --\n%s", static_cast<unsigned long long>(*one),
                ref.program.c_str(), ref.dump.c_str());
    std::fflush(stdout);
    auto m = check_reference(ref);
    if (m) {
      *m = "REFERENCE BUG: " + *m;
    } else {
      m = diff_runs(ref, run_one(*one, limit, Executor::optimized));
    }
    if (m) report_failure(*one, *m);
    CHECK_MESSAGE(!m, "seed " << *one << ": " << (m ? *m : ""));
    return;
  }
  const char* count = std::getenv("AJ_DIFF_GRAPHS");
  const int n = count && *count ? std::atoi(count) : long_mode() ? kLongGraphs : kDefaultGraphs;
  const auto t0 = std::chrono::steady_clock::now();
  // Executor::optimized runs kernels through the host JIT (unless AJ_JIT=0:
  // then through the kernel interpreter); the launches below prove which.
  const aj::Stats jit_before = aj::stats();
  CrashNote crash_note;
  int failures = 0, reported = 0;
  std::string first;
  for (int k = 0; k < n; ++k) {
    const std::uint64_t seed = kSeedBase + static_cast<std::uint64_t>(k);
    CrashNote::set(seed);
    auto m = check_seed(seed, RandomGraph::kMaxSteps);
    if (!m) continue;
    ++failures;
    if (first.empty()) first = "seed " + std::to_string(seed) + ": " + *m;
    if (reported++ < 3) report_failure(seed, *m);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const aj::Stats jit_after = aj::stats();
  const auto jit_launches = (jit_after.kernels_compiled + jit_after.kernel_cache_hits + jit_after.kernel_disk_hits) -
                            (jit_before.kernels_compiled + jit_before.kernel_cache_hits + jit_before.kernel_disk_hits);
  if (aj::jit::enabled()) CHECK(jit_launches > 0);
  if (long_mode() || (count && *count))
    std::printf("differential: %d graphs in %.1f s, %d mismatches (%s)\n", n, secs, failures,
                aj::jit::enabled() ? "host JIT" : "kernel interpreter");
  CHECK_MESSAGE(failures == 0, failures << " of " << n << " graphs differ; first: " << first);
}

// The plan cache (opt/plan_cache.hpp) under the same oracle: each program
// runs four times with new input values (new nodes, new buffers), the third
// time also holding every handle it drops (other reference counts: plans that
// donated must not be reused). Runs 2 and 4 repeat run 1's reference counts,
// so their evaluations take their plans from the cache; with verification on
// (as in this binary) every hit is also re-planned from scratch and must be
// identical. Results must match the reference interpreter every time.
TEST_CASE("random graphs re-run with plan cache hits agree with the reference") {
  const char* count = std::getenv("AJ_DIFF_GRAPHS");
  const int all = count && *count ? std::atoi(count) : long_mode() ? kLongGraphs : kDefaultGraphs;
  const int n = std::max(1, all / 3);
  const Rerun runs[] = {{1, false}, {2, false}, {3, true}, {4, false}};
  const auto t0 = std::chrono::steady_clock::now();
  CrashNote crash_note;
  int failures = 0;
  std::uint64_t hits = 0, misses = 0, repeat_lookups = 0, repeat_misses = 0, first_repeat_miss = 0;
  std::string first;
  for (int k = 0; k < n; ++k) {
    const std::uint64_t seed = kSeedBase + static_cast<std::uint64_t>(k);
    CrashNote::set(seed);
    aj::plan_cache::clear();
    for (int r = 0; r < 4; ++r) {
      const auto before = aj::plan_cache::counters();
      auto m = check_seed(seed, RandomGraph::kMaxSteps, nullptr, runs[r]);
      const auto after = aj::plan_cache::counters();
      hits += after.hits - before.hits;
      misses += after.misses - before.misses;
      if (r == 1) repeat_lookups += (after.hits - before.hits) + (after.misses - before.misses);
      if (r == 1 && after.misses != before.misses) {
        if (repeat_misses == 0) first_repeat_miss = seed;
        repeat_misses += after.misses - before.misses;
      }
      if (!m) continue;
      ++failures;
      if (first.empty()) {
        first = "seed " + std::to_string(seed) + " run " + std::to_string(r) + " (data seed " +
                std::to_string(runs[r].data_seed) + (runs[r].keep_dropped ? ", dropped handles kept" : "") +
                "): " + *m;
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (long_mode() || (count && *count)) {
    std::printf("differential (plan cache): %d graphs x 4 runs in %.1f s, %llu hits, %llu misses, %d mismatches\n",
                n, secs, static_cast<unsigned long long>(hits), static_cast<unsigned long long>(misses),
                failures);
  }
  CHECK_MESSAGE(failures == 0, failures << " runs differ; first: " << first);
  CHECK(hits > 0);
  // Run 2 repeats run 1 exactly, up to input values: its plans are hits.
  // Rarely (about 1 in 100,000 evaluations) the graphs differ after all:
  // simplify can rewrite a node into a twin of another live node, and which
  // twin trace-time CSE returns later depends on the CSE table's history, so
  // reference counts can differ. Such a miss is correct, just not a hit.
  CHECK_MESSAGE(repeat_misses * 100 <= repeat_lookups,
                repeat_misses << " of " << repeat_lookups
                              << " lookups missed when re-running identical programs (first: seed "
                              << first_repeat_miss << ")");
}

TEST_CASE("the generator is deterministic and covers every kind of op") {
  // Determinism: the same seed traces the same program and graph.
  for (int k = 0; k < 60; ++k) {
    const std::uint64_t seed = kSeedBase + static_cast<std::uint64_t>(k);
    RunData a = run_one(seed, RandomGraph::kMaxSteps, Executor::reference);
    RunData b = run_one(seed, RandomGraph::kMaxSteps, Executor::reference);
    INFO("seed " << seed);
    REQUIRE(a.error.empty());
    CHECK(a.program == b.program);
    CHECK(a.dump == b.dump);
  }
  // Coverage over the default run's seeds.
  std::map<std::string, int> used;
  int steps = 0, skipped = 0;
  for (int k = 0; k < kDefaultGraphs; ++k) {
    RunData a = run_one(kSeedBase + static_cast<std::uint64_t>(k), RandomGraph::kMaxSteps,
                        Executor::reference);
    for (auto& [op, c] : a.used) used[op] += c;
    steps += a.steps;
    skipped += a.skipped;
  }
  // clang-format off
  const char* expected[] = {
      "from_vector", "borrow", "full", "ones", "zeros", "arange", "linspace", "eye",
      "neg", "abs", "sign", "floor", "ceil", "round", "exp", "log", "log1p", "expm1", "sin",
      "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "clip", "not",
      "add", "sub", "mul", "div", "true_divide", "floor_divide", "mod", "maximum", "minimum",
      "pow", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "where", "astype",
      "sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin",
      "transpose", "slice", "broadcast_to", "reshape", "expand_dims", "squeeze",
      "matmul", "concatenate", "stack", "concatenate of continuing slices", "eval", "read", "drop", "(rebind)",
      "loop of slice_update", "loop of pad edge", "loop of pad constant", "loop of roll", "loop of roll and mask",
      "cumsum", "cumprod", "sort", "argsort", "topk", "erf", "erfc", "softmax", "logsumexp",
      "take", "take_along_axis", "scatter_add", "scatter", "scatter_add_along_axis", "put_along_axis",
      "slice_update", "slice_add", "pad", "roll", "one_hot", "where_scalar",
      "input bool", "input i32", "input i64", "input f32", "input f64", "input f16", "input bf16"};
  // clang-format on
  for (const char* op : expected) {
    INFO("op " << op);
    CHECK(used[op] > 0);
  }
  // Trace-time user errors only skip a step; the generator should rarely make them.
  CHECK_MESSAGE(skipped * 50 < steps, skipped << " of " << steps << " steps were skipped");
}

TEST_CASE("the comparison rejects what it must") {
  using ajtest::compare_ints;
  using ajtest::compare_values;
  Bound exact;  // bit-identical expected
  Bound sum8;   // a sum of 8 f32 terms of magnitude <= 4
  sum8.mag = 32;
  sum8.abs_err = 7 * 0x1p-23 * 8 * 4;
  sum8.rel_err = 0x1p-23;
  const double nan = std::nan(""), inf = INFINITY;

  CHECK_FALSE(compare_values(DType::f32, exact, {1, 2, 3}, {1, 2, 3}).has_value());
  CHECK(compare_values(DType::f32, exact, {1, 2, 3}, {1, 2, 4}).has_value());
  CHECK(compare_values(DType::f32, exact, {1, 2, 3}, {1, 2}).has_value());
  CHECK(compare_values(DType::f64, exact, {0.0}, {-0.0}).has_value());  // signed zero is exact
  CHECK(compare_values(DType::f64, exact, {1.0}, {std::nextafter(1.0, 2.0)}).has_value());
  CHECK_FALSE(compare_values(DType::f64, exact, {nan}, {-nan}).has_value());  // any NaN matches NaN
  CHECK(compare_values(DType::f64, exact, {nan}, {1.0}).has_value());

  CHECK_FALSE(compare_values(DType::f32, sum8, {10.0}, {10.0 + 1e-5}).has_value());
  CHECK_FALSE(compare_values(DType::f32, sum8, {1e-6}, {-1e-6})
                  .has_value());  // cancellation: absolute part
  CHECK(compare_values(DType::f32, sum8, {10.0}, {10.01}).has_value());
  CHECK(compare_values(DType::f32, sum8, {1, 2, 3}, {1, 2, 3.5}).has_value());
  CHECK(compare_values(DType::f32, sum8, {nan}, {0.0}).has_value());
  CHECK(compare_values(DType::f32, sum8, {0.0}, {nan}).has_value());
  CHECK_FALSE(compare_values(DType::f32, sum8, {nan}, {nan}).has_value());
  CHECK(compare_values(DType::f32, sum8, {inf}, {-inf}).has_value());
  CHECK(compare_values(DType::f32, sum8, {inf}, {3.4e38}).has_value());
  CHECK_FALSE(compare_values(DType::f32, sum8, {-inf}, {-inf}).has_value());
  Bound f64sum = sum8;
  f64sum.abs_err = 7 * 0x1p-52 * 8 * 4;
  f64sum.rel_err = 0x1p-52;
  CHECK(compare_values(DType::f64, f64sum, {10.0}, {10.0 + 1e-9}).has_value());

  CHECK_FALSE(compare_ints({1, -2, 3}, {1, -2, 3}).has_value());
  CHECK(compare_ints({1, -2, 3}, {1, -2, 4}).has_value());
  CHECK(compare_ints({1}, {1, 1}).has_value());

  // And the whole path: two different runs are reported as different.
  RunData a = run_one(kSeedBase, RandomGraph::kMaxSteps, Executor::reference);
  RunData b = a;
  REQUIRE(!b.outs.empty());
  auto& o = b.outs[0];
  if (aj::is_float(o.dtype) && !o.f.empty()) o.f[0] = o.f[0] + 1.0 + std::fabs(o.f[0]);
  else if (!o.i.empty()) o.i[0] += 1;
  else o.name += "?", o.shape = "[]", o.dtype = o.dtype == DType::f32 ? DType::f64 : DType::f32;
  CHECK(diff_runs(a, b).has_value());
  CHECK_FALSE(diff_runs(a, a).has_value());
}

}  // TEST_SUITE("differential")

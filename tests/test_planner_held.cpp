// Evaluation stores what users hold (docs/semantics.md, "What an evaluation
// stores"): a value a live handle refers to that an evaluation computes is
// one more output of the kernel that computes it, and the handle is
// evaluated afterwards. Values are compared with the reference interpreter.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/explain.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::detail::Executor;
using aj::detail::ExecutorScope;

std::vector<double> random_doubles(std::size_t n, unsigned seed) {
  return ajtest::random_in<double>(n, seed, -2.0, 2.0);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// A random program over f64 of exact ops only (+ - * max min, neg, abs,
// where, views, max/min reductions), so every executor and every fusion
// gives the same bits. Each value records which earlier values it reads
// (transitively), so the test knows what evaluating the last one reaches.
// One op per source line: the nodes' source locations decide nothing here.
struct Program {
  std::vector<Array> values;
  std::vector<std::vector<bool>> reads;  // reads[i][j]: value i needs value j

  void add(Array a, std::vector<std::size_t> from) {
    std::vector<bool> r(values.size() + 1, false);
    for (std::size_t f : from) {
      r[f] = true;
      for (std::size_t k = 0; k < reads[f].size(); ++k) r[k] = r[k] || reads[f][k];
    }
    values.push_back(std::move(a));
    reads.push_back(std::move(r));
  }
};

Program random_program(std::uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Program p;
  p.add(aj::from_vector(random_doubles(24, static_cast<unsigned>(seed)), {4, 6}), {});
  p.add(aj::from_vector(random_doubles(6, static_cast<unsigned>(seed + 1)), {6}), {});
  p.add(aj::from_vector(random_doubles(4, static_cast<unsigned>(seed + 2)), {4, 1}), {});
  for (int s = 0; s < steps; ++s) {
    const auto i = static_cast<std::size_t>(uni(0, static_cast<int>(p.values.size()) - 1));
    const auto j = static_cast<std::size_t>(uni(0, static_cast<int>(p.values.size()) - 1));
    const Array& a = p.values[i];
    const Array& b = p.values[j];
    try {
      switch (uni(0, 10)) {
        case 0: p.add(a + b, {i, j}); break;
        case 1: p.add(a - b, {i, j}); break;
        case 2: p.add(a * b, {i, j}); break;
        case 3: p.add(aj::maximum(a, b), {i, j}); break;
        case 4: p.add(aj::minimum(a, 0.5), {i}); break;
        case 5: p.add(aj::abs(a) - 1.0, {i}); break;
        case 6: {
          Array c = a > b;
          p.add(aj::where(c, a, b), {i, j});
          break;
        }
        case 7: p.add(aj::transpose(a), {i}); break;
        case 8: {
          if (a.ndim() == 0 || a.shape()[0] < 2) break;
          p.add(aj::slice(a, 0, 1, std::nullopt), {i});
          break;
        }
        case 9: {
          if (a.ndim() == 0) break;
          p.add(aj::max(a, a.ndim() - 1), {i});
          break;
        }
        default: {
          if (a.ndim() == 0) break;
          p.add(aj::min(a, 0, true), {i});
          break;
        }
      }
    } catch (const aj::Error&) {
      // shapes that do not broadcast: the step is skipped
    }
  }
  return p;
}

}  // namespace

TEST_SUITE("planner") {
TEST_CASE("held values: random graphs, random held subsets; every held value reached is evaluated and exact") {
  int checked = 0, stored = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::vector<std::vector<double>> want;
    {
      ExecutorScope ref(Executor::reference);
      Program p = random_program(seed, 14);
      aj::eval(p.values);
      for (auto& v : p.values) want.push_back(v.to_vector<double>());
    }
    // Three runs of the same structure with other held subsets: each plans
    // (or takes from the plan cache, checked against planning afresh) what
    // it must store.
    for (int run = 0; run < 3; ++run) {
      Program p = random_program(seed, 14);
      const std::size_t root = p.values.size() - 1;
      std::mt19937_64 pick(seed * 7 + static_cast<std::uint64_t>(run));
      std::vector<bool> held(p.values.size(), false);
      for (std::size_t k = 3; k < root; ++k) {
        held[k] = std::uniform_int_distribution<int>(0, 2)(pick) == 0;
        if (!held[k]) p.values[k] = Array();
      }
      const std::uint64_t before = aj::stats().held_values_stored;
      p.values[root].eval();
      stored += static_cast<int>(aj::stats().held_values_stored - before);
      CHECK(same_bits(p.values[root].to_vector<double>(), want[root]));
      for (std::size_t k = 3; k < root; ++k) {
        if (!held[k] || !p.reads[root][k]) continue;
        INFO("seed " << seed << " run " << run << " value " << k);
        CHECK(p.values[k].is_evaluated());
        CHECK(same_bits(p.values[k].to_vector<double>(), want[k]));
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
  CHECK(stored > 50);
}

TEST_CASE("held values: after sum(x).item(), x is evaluated and is not computed again") {
  Array a = aj::from_vector(random_doubles(1000, 3));
  Array x = aj::exp(a) * 2.0;
  aj::reset_stats();
  const double s = aj::sum(x).item<double>();
  CHECK(aj::stats().kernels_launched == 1);  // x is one more output of the sum's loop
  CHECK(aj::stats().held_values_stored == 1);
  CHECK(x.is_evaluated());
  double want = 0;
  for (double v : x.to_vector<double>()) want += v;
  CHECK(std::fabs(s - want) <= 1e-9 * std::fabs(want));
  aj::reset_stats();
  Array y = x + 1.0;
  y.eval();
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(aj::stats().held_values_stored == 0);
}

TEST_CASE("held values: a temporary of the evaluated statement is not stored") {
  Array x = aj::from_vector(random_doubles(1000, 4));
  aj::reset_stats();
  const double s = aj::sum(x * x).item<double>();  // x * x lives until the ';' but nobody can read it
  CHECK(aj::stats().held_values_stored == 0);
  CHECK(aj::stats().kernels_launched == 1);
  double want = 0;
  for (double v : x.to_vector<double>()) want += v * v;
  CHECK(std::fabs(s - want) <= 1e-9 * want);
  // The same value with a name, on its own line, is stored.
  Array sq = x * x;
  aj::reset_stats();
  CHECK(std::fabs(aj::sum(sq).item<double>() - want) <= 1e-9 * want);
  CHECK(aj::stats().held_values_stored == 1);
  CHECK(sq.is_evaluated());
}

TEST_CASE("held values: values made by the root's own call site in a loop are kept") {
  // An unrolled recurrence keeping every state: the states are made by the
  // same line as the root, and must still be stored.
  Array h = aj::from_vector(random_doubles(64, 5));
  Array w = aj::from_vector(random_doubles(64, 6));
  std::vector<Array> hs;
  for (int t = 0; t < 6; ++t) hs.push_back(h = aj::maximum(h * 0.5 + w, -1.0));
  hs.back().eval();
  for (auto& s : hs) CHECK(s.is_evaluated());
  std::vector<double> hv = h.to_vector<double>();
  std::vector<double> want = random_doubles(64, 5), wv = random_doubles(64, 6);
  for (int t = 0; t < 6; ++t) {
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::max(want[i] * 0.5 + wv[i], -1.0);
  }
  CHECK(same_bits(hv, want));
}

TEST_CASE("held values: a held view becomes a view step, a held fill is not stored") {
  Array x = aj::from_vector(random_doubles(24, 7), {4, 6});
  Array e = aj::exp(x);
  Array t = aj::transpose(e);  // held: a view of e
  e = Array();
  Array z = aj::zeros({4, 6}, aj::DType::f64);  // held, but a fill: free to recompute
  Array y = aj::sum(t, 1) + aj::sum(z, 0);
  const std::string plan = aj::explain(y);
  CHECK(plan.find("view ") != std::string::npos);
  CHECK(plan.find("viewed by") != std::string::npos);
  y.eval();
  CHECK(t.is_evaluated());
  CHECK(!z.is_evaluated());
  std::vector<double> xs = random_doubles(24, 7), tv = t.to_vector<double>();
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 4; ++j) CHECK(tv[static_cast<std::size_t>(i * 4 + j)] == doctest::Approx(std::exp(xs[static_cast<std::size_t>(j * 6 + i)])));
  }
}

TEST_CASE("held values: explain shows the extra outputs") {
  Array x = aj::from_vector(random_doubles(100, 8));
  Array m = x * 0.5 + 1.0;
  Array p = m * m - x;
  const std::string plan = aj::explain(p);
  CHECK(plan.find("out1 = ") != std::string::npos);
  CHECK(plan.find("held by a handle made at test_planner_held.cpp:" + std::to_string(__LINE__ - 4) + ": stored") !=
        std::string::npos);
  CHECK(plan.find("1 held values stored") != std::string::npos);
}

TEST_CASE("held values: Adam evaluating only p is one kernel, no compile, no allocation, constant live nodes") {
  const std::int64_t n = 256;
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  auto run = [&](Executor ex, int steps, bool check) {
    ExecutorScope scope(ex);
    Array g = aj::from_vector(ajtest::random_in<float>(static_cast<std::size_t>(n), 9, -1.0f, 1.0f));
    Array p = aj::from_vector(ajtest::random_in<float>(static_cast<std::size_t>(n), 10, -1.0f, 1.0f));
    Array m = aj::zeros({n}), v = aj::zeros({n});
    std::uint64_t live = 0;
    bool c1_is_one = false;
    for (int s = 0; s < steps; ++s) {
      const double lr = 1e-3 / std::sqrt(1.0 + s);  // a schedule: a C++ double that changes every step
      const double c1 = 1.0 / (1.0 - std::pow(0.9, s + 1)), c2 = 1.0 / (1.0 - std::pow(0.999, s + 1));
      // Near step 157 the bias correction c1 rounds to 1.0f: m * 1 is m, a
      // value of another class, so that one step plans (and compiles) anew.
      const bool class_change = (static_cast<float>(c1) == 1.0f) != c1_is_one;
      c1_is_one = static_cast<float>(c1) == 1.0f;
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      p = p - lr * (m * c1) / (aj::sqrt(v * c2) + eps);
      aj::reset_stats();
      p.eval();
      if (!check) continue;
      const aj::Stats st = aj::stats();
      CHECK(m.is_evaluated());
      CHECK(v.is_evaluated());
      if (s < 3) continue;  // warm-up: the first steps compile and allocate
      INFO("step " << s);
      CHECK(st.kernels_launched == 1);
      CHECK(st.kernels_compiled <= (class_change ? 1u : 0u));
      CHECK(st.plans_built == (class_change ? 1u : 0u));
      CHECK(st.system_allocs == 0);
      CHECK(st.pool_hits == 0);
      CHECK(st.inplace_reuses == 3);
      if (s == 3) live = st.live_nodes;
      CHECK(st.live_nodes == live);
    }
    return std::vector<std::vector<float>>{p.to_vector<float>(), m.to_vector<float>(), v.to_vector<float>()};
  };
  auto got = run(Executor::optimized, 1000, true);
  auto want = run(Executor::reference, 1000, false);
  for (std::size_t k = 0; k < got.size(); ++k) {
    REQUIRE(got[k].size() == want[k].size());
    for (std::size_t i = 0; i < got[k].size(); ++i) {
      CHECK(got[k][i] == doctest::Approx(want[k][i]).epsilon(1e-4).scale(1e-6));
    }
  }
}
}

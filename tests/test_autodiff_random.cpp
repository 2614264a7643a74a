// vjp and jvp of random differentiable programs (tests/random_diff_program.hpp)
// against central differences.
//
// For each seed: arguments x in [-2, 2]^n, random cotangents u of the
// outputs and a random unit direction v over all arguments; with
// phi(x) = sum_j <u_j, f_j(x)>,
//     <vjp(f, x, u), v>  ==  (phi(x + h v) - phi(x - h v)) / 2h  ==  <u, jvp(f, x, v)>
// to |a - b| <= 1e-6 |b| + 1e-7 (1 + S), S = sum_j <|u_j|, |f_j(x)|> (see
// tests/autodiff_check.hpp for why), with h = 1e-5; vjp's outputs must equal f's.
// vjp runs the optimizing pipeline (JIT); the differences and jvp run on the
// reference interpreter (another executor, and no compile per program).
//
// Environment: AJ_TEST_LONG=1 checks 1,000 programs instead of 100;
// AJ_AD_SEED=<n> checks only that seed and prints its program; AJ_AD_DEBUG=1
// also prints the values and the gradient's graph.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/autodiff_check.hpp"
#include "tests/random_diff_program.hpp"

namespace {

using aj::Array;
using aj::detail::Executor;
using aj::detail::ExecutorScope;
using ajtest::DiffProgram;

constexpr std::uint64_t kSeedBase = 0xad00000;

struct Outcome {
  std::string failure;  // empty: passed
  std::map<std::string, int> used;
};

std::vector<Array> make_args(const DiffProgram& p, const std::vector<std::vector<double>>& values) {
  std::vector<Array> a;
  for (std::size_t i = 0; i < values.size(); ++i) a.push_back(aj::from_vector(values[i], aj::Shape(p.input_shapes()[i])));
  return a;
}

std::vector<std::vector<double>> read(const std::vector<Array>& outs) {
  std::vector<std::vector<double>> r;
  for (const Array& o : outs) r.push_back(o.to_vector<double>());
  return r;
}

Outcome check_seed(std::uint64_t seed) {
  Outcome out;
  DiffProgram prog(seed);
  std::mt19937_64 rng(seed * 7 + 1);
  std::uniform_real_distribution<double> u01(-2, 2);
  std::vector<std::vector<double>> x, v;
  double vnorm = 0;
  for (const auto& d : prog.input_shapes()) {
    std::int64_t n = 1;
    for (auto e : d) n *= e;
    x.emplace_back(), v.emplace_back();
    for (std::int64_t k = 0; k < n; ++k) x.back().push_back(u01(rng));
    v.back() = ajtest::normal_values(static_cast<std::size_t>(n), rng);
    for (double e : v.back()) vnorm += e * e;
  }
  vnorm = std::sqrt(vnorm);
  for (auto& vi : v) for (double& e : vi) e /= vnorm > 0 ? vnorm : 1;
  auto f = [&prog](const std::vector<Array>& a) { return prog(a); };

  // f's plain values (reference interpreter), and the cotangents.
  std::vector<std::vector<double>> plain, u;
  {
    ExecutorScope ref(Executor::reference);
    plain = read(f(make_args(prog, x)));
  }
  double scale = 0;
  std::vector<Array> cts;
  {
    std::vector<Array> shapes = f(make_args(prog, x));  // traced only, for the shapes
    for (std::size_t j = 0; j < plain.size(); ++j) {
      u.push_back(ajtest::normal_values(plain[j].size(), rng));
      cts.push_back(aj::from_vector(u.back(), shapes[j].shape()));
      for (std::size_t k = 0; k < plain[j].size(); ++k) scale += std::fabs(u[j][k] * plain[j][k]);
    }
  }
  out.used = prog.used();
  // Reverse mode on the JIT.
  auto [outs, grads] = aj::vjp(f, make_args(prog, x), cts);
  if (std::getenv("AJ_AD_DEBUG")) MESSAGE(aj::dump(grads));
  {
    std::vector<Array> all = outs;
    all.insert(all.end(), grads.begin(), grads.end());
    aj::eval(all);
  }
  const auto got = read(outs);
  for (std::size_t j = 0; j < got.size(); ++j) {
    for (std::size_t k = 0; k < got[j].size(); ++k) {
      if (!(std::fabs(got[j][k] - plain[j][k]) <= 1e-9 * (1 + std::fabs(plain[j][k])))) {
        out.failure = "vjp's output " + std::to_string(j) + "[" + std::to_string(k) + "] = " +
                      std::to_string(got[j][k]) + ", f gives " + std::to_string(plain[j][k]);
        return out;
      }
    }
  }
  double gv = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) gv += ajtest::dot(grads[i].to_vector<double>(), v[i]);
  if (std::getenv("AJ_AD_DEBUG")) {
    for (std::size_t i = 0; i < grads.size(); ++i) MESSAGE("x " << ajtest::show(x[i]) << " v " << ajtest::show(v[i]) << " grad " << ajtest::show(grads[i].to_vector<double>()));
    for (std::size_t j = 0; j < u.size(); ++j) MESSAGE("u " << ajtest::show(u[j]) << " out " << ajtest::show(plain[j]));
    MESSAGE(aj::dump(grads));
  }
  // Central difference along v, and forward mode, on the reference interpreter.
  ExecutorScope ref(Executor::reference);
  const double h = 1e-5;
  auto phi_at = [&](double t) {
    std::vector<std::vector<double>> xt = x;
    for (std::size_t i = 0; i < xt.size(); ++i) for (std::size_t k = 0; k < xt[i].size(); ++k) xt[i][k] += t * v[i][k];
    return ajtest::phi(f, make_args(prog, xt), u);
  };
  const double fd = (phi_at(h) - phi_at(-h)) / (2 * h);
  std::vector<Array> tangents;
  for (std::size_t i = 0; i < v.size(); ++i) tangents.push_back(aj::from_vector(v[i], aj::Shape(prog.input_shapes()[i])));
  auto [outs2, jv] = aj::jvp(f, make_args(prog, x), tangents);
  aj::eval(jv);
  double uj = 0;
  for (std::size_t j = 0; j < jv.size(); ++j) uj += ajtest::dot(u[j], jv[j].to_vector<double>());
  auto close = [&](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b) + 1e-7 * (1 + scale); };
  if (!close(gv, fd)) {
    out.failure = "<vjp u, v> = " + std::to_string(gv) + " but the central difference is " + std::to_string(fd);
  } else if (!close(uj, fd)) {
    out.failure = "<u, jvp v> = " + std::to_string(uj) + " but the central difference is " + std::to_string(fd);
  }
  return out;
}

}  // namespace

TEST_CASE("autodiff random programs: vjp and jvp against central differences") {
  if (const char* s = std::getenv("AJ_AD_SEED")) {
    const std::uint64_t seed = std::strtoull(s, nullptr, 0);
    DiffProgram p(seed);
    std::vector<Array> args;
    for (const auto& d : p.input_shapes()) args.push_back(aj::zeros(aj::Shape(d), aj::DType::f64));
    p(args);
    MESSAGE("program " << seed << ":\n" << p.program());
    const Outcome o = check_seed(seed);
    CHECK_MESSAGE(o.failure.empty(), o.failure);
    return;
  }
  const int graphs = std::getenv("AJ_TEST_LONG") ? 1000 : 100;
  std::map<std::string, int> used;
  int failed = 0;
  for (int i = 0; i < graphs; ++i) {
    const std::uint64_t seed = kSeedBase + static_cast<std::uint64_t>(i);
    const Outcome o = check_seed(seed);
    for (const auto& [k, n] : o.used) used[k] += n;
    if (!o.failure.empty() && failed++ < 3) {
      DiffProgram p(seed);
      std::vector<Array> args;
      for (const auto& d : p.input_shapes()) args.push_back(aj::zeros(aj::Shape(d), aj::DType::f64));
      p(args);
      FAIL_CHECK("seed " << seed << " (AJ_AD_SEED=" << seed << "): " << o.failure << "\n" << p.program());
    }
  }
  CHECK(failed == 0);
  std::string s;
  for (const auto& [k, n] : used) s += k + " " + std::to_string(n) + ", ";
  MESSAGE(graphs << " programs; ops used: " << s);
  // Every kind of step was drawn.
  for (const char* op : {"sin", "exp", "log", "abs", "clip", "add", "mul", "div", "pow", "maximum", "where", "mod",
                         "sum", "mean", "prod", "max", "min", "transpose", "slice", "broadcast_to", "reshape",
                         "matmul", "concatenate", "grad", "erf", "cumsum", "cumprod", "sort", "topk", "take",
                         "take_along_axis", "scatter_add", "scatter", "pad", "slice_update", "roll"}) {
    CHECK_MESSAGE(used.count(op), "no program used " << op);
  }
}

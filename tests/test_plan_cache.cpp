// The plan cache (opt/plan_cache.hpp): a repeated call reuses its plan, and
// a plan is never reused where anything it depended on differs — a handle's
// lifetime (donation), reader counts, shapes, dtypes, strides, or a scalar
// that simplify used. Every result is also checked by value. (The random-graph
// version of this is in test_differential.cpp.)
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"
#include "opt/plan_cache.hpp"
#include "tests/random_data.hpp"
#include "tests/verify_off.hpp"

namespace {

using aj::Array;
namespace pc = aj::plan_cache;

struct Delta {
  pc::Counters before = pc::counters();
  std::uint64_t hits() const { return pc::counters().hits - before.hits; }
  std::uint64_t misses() const { return pc::counters().misses - before.misses; }
};

std::uint64_t inplace() { return aj::stats().inplace_reuses; }

Array chain(const Array& x) {
  Array y = x * 1.5;
  y = y + 2.0;
  y = aj::abs(y);
  y = aj::sqrt(y);
  y = y * y;
  return y - x;
}

double chain_of(double x) {
  double y = x * 1.5 + 2.0;
  y = std::sqrt(std::fabs(y));
  return y * y - x;
}

}  // namespace

TEST_SUITE("plan cache") {

TEST_CASE("a repeated identical call is a plan cache hit with the right values") {
  pc::clear();
  for (int call = 0; call < 4; ++call) {
    std::vector<double> v{1.0 * call, -2.0, 3.5, 0.25};
    Array x = aj::from_vector(v);
    Delta d;
    Array y = chain(x);
    y.eval();
    if (call == 0) {
      CHECK(d.misses() == 1);
      CHECK(d.hits() == 0);
    } else {
      CHECK(d.hits() == 1);
      CHECK(d.misses() == 0);
    }
    auto got = y.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) CHECK(got[i] == chain_of(v[i]));
  }
  CHECK(pc::counters().entries >= 1);
}

TEST_CASE("a plan that donated a dead input is not reused while the user holds that input") {
  pc::clear();
  const std::vector<double> v{1, 2, 3, 4};
  {  // a's handle is dropped before the evaluation: b takes a's buffer
    Array a = aj::from_vector(v);
    Array b = a + 1.0;
    a = Array();
    const auto before = inplace();
    Delta d;
    b.eval();
    CHECK(d.misses() == 1);
    CHECK(inplace() == before + 1);
    CHECK(b.to_vector<double>() == std::vector<double>{2, 3, 4, 5});
  }
  {  // the same graph, but the user still holds a: a new plan, no donation
    Array a = aj::from_vector(v);
    Array b = a + 1.0;
    const auto before = inplace();
    Delta d;
    b.eval();
    CHECK(d.hits() == 0);
    CHECK(d.misses() == 1);
    CHECK(inplace() == before);
    CHECK(a.to_vector<double>() == v);
    CHECK(b.to_vector<double>() == std::vector<double>{2, 3, 4, 5});
  }
  {  // no handle, but another (unevaluated) node still reads a: no donation
    Array a = aj::from_vector(v);
    Array b = a + 1.0;
    Array c = a * 2.0;
    a = Array();
    const auto before = inplace();
    Delta d;
    b.eval();
    CHECK(d.hits() == 0);
    CHECK(inplace() == before);
    CHECK(b.to_vector<double>() == std::vector<double>{2, 3, 4, 5});
    CHECK(c.to_vector<double>() == std::vector<double>{2, 4, 6, 8});
  }
  {  // the first shape of the call again: a hit, donating again
    Array a = aj::from_vector(v);
    Array b = a + 1.0;
    a = Array();
    const auto before = inplace();
    Delta d;
    b.eval();
    CHECK(d.hits() == 1);
    CHECK(inplace() == before + 1);
    CHECK(b.to_vector<double>() == std::vector<double>{2, 3, 4, 5});
  }
}

TEST_CASE("on a hit the run-time check still refuses to donate a storage shared since") {
  pc::clear();
  const std::vector<double> v{1, 2, 3, 4};
  {
    Array a = aj::from_vector(v);
    Array b = a + 1.0;
    a = Array();
    b.eval();
  }
  // Same structure and counts, but an evaluated view shares a's storage.
  Array a = aj::from_vector(v);
  Array view = aj::reshape(a, {2, 2});
  view.eval();
  Array b = a + 1.0;
  a = Array();
  const auto before = inplace();
  Delta d;
  b.eval();
  CHECK(d.hits() == 1);
  CHECK(inplace() == before);  // the plan donates, donation_applies says no
  CHECK(view.to_vector<double>() == v);
  CHECK(b.to_vector<double>() == std::vector<double>{2, 3, 4, 5});
}

TEST_CASE("another length reuses the plan's decisions with its own numbers; other dtypes and strides do not") {
  pc::clear();
  std::vector<double> v(12);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 5.5;
  auto run = [](const Array& x) {
    Delta d;
    Array y = x * 3.0 + 1.0;
    y.eval();
    return std::make_pair(d.hits(), y);
  };
  Array x12 = aj::from_vector(v);
  CHECK(run(x12).first == 0);
  CHECK(run(x12).first == 1);
  // Another length: the same structure, its numbers made again
  // (opt/materialize.hpp), no planning.
  std::vector<double> v11(v.begin(), v.begin() + 11);
  const std::uint64_t renumbered = pc::counters().renumbered, built = aj::stats().plans_built;
  auto [h11, y11] = run(aj::from_vector(v11));
  CHECK(h11 == 1);
  CHECK(pc::counters().renumbered == renumbered + 1);
  CHECK(aj::stats().plans_built == built);
  CHECK(y11.to_vector<double>() == [&] {
    std::vector<double> want;
    for (double e : v11) want.push_back(e * 3.0 + 1.0);
    return want;
  }());
  // And that length again: its own plan, kept as it is.
  CHECK(run(aj::from_vector(v11)).first == 1);
  CHECK(pc::counters().renumbered == renumbered + 1);
  // Another dtype (f32 input: the scalars stay weak, the result is f32).
  std::vector<float> vf(v.begin(), v.end());
  auto [hf, yf] = run(aj::from_vector(vf));
  CHECK(hf == 0);
  CHECK(yf.dtype() == aj::DType::f32);
  CHECK(yf.to_vector<float>()[3] == vf[3] * 3.0f + 1.0f);
  // Same shape [12] and dtype, but a strided leaf (every other element).
  std::vector<double> wide(24);
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<double>(i);
  Array strided = aj::borrow(wide.data(), {12}, {2});
  auto [hs, ys] = run(strided);
  CHECK(hs == 0);
  auto got = ys.to_vector<double>();
  for (std::size_t i = 0; i < 12; ++i) CHECK(got[i] == wide[2 * i] * 3.0 + 1.0);
  // Another rank with the same element count.
  auto [h2, y2] = run(aj::from_vector(v, {3, 4}));
  CHECK(h2 == 0);
  CHECK(y2.to_vector<double>()[11] == v[11] * 3.0 + 1.0);
}

// A lazy smoothing loop (a slice_update per step) at another length: the
// work rule's point counts are not proportional to the length (a pad read
// through a slice evaluates its inside at n - 3 of n points), so fuse's
// greedy boundaries fall at other nodes at n = 5 than at n = 11. The kept
// partition is still valid there and is used; verification (on in tests)
// checks it with every rule fuse keeps, not against fuse's choice.
TEST_CASE("a lazy stencil loop at another length keeps its partition where fuse would cut elsewhere") {
  auto smooth = [](const std::vector<float>& v0, int steps) {
    const auto n = static_cast<std::int64_t>(v0.size());
    Array v = aj::from_vector(v0);
    for (int t = 0; t < steps; ++t) {
      Array m = (aj::slice(v, 0, 0, n - 2) + aj::slice(v, 0, 2, n)) * 0.5f;
      v = aj::slice_update(v, {aj::Slice(1, n - 1)}, m);
    }
    return v;
  };
  auto by_hand = [](std::vector<float> v, int steps) {
    for (int t = 0; t < steps; ++t) {
      std::vector<float> w = v;
      for (std::size_t i = 1; i + 1 < v.size(); ++i) w[i] = (v[i - 1] + v[i + 1]) * 0.5f;
      v = w;
    }
    return v;
  };
  for (auto [first, second] : {std::pair{5, 11}, std::pair{11, 5}}) {
    CAPTURE(first);
    CAPTURE(second);
    pc::clear();
    const std::vector<float> a = ajtest::random_in<float>(static_cast<std::size_t>(first), 11, -1.0, 1.0);
    Array x = smooth(a, 11);
    x.eval();
    CHECK(x.to_vector<float>() == by_hand(a, 11));
    const std::uint64_t renumbered = pc::counters().renumbered, built = aj::stats().plans_built;
    const std::vector<float> b = ajtest::random_in<float>(static_cast<std::size_t>(second), 12, -1.0, 1.0);
    Array y = smooth(b, 11);
    y.eval();  // with verification on: planned from scratch too, another partition, no error
    CHECK(pc::counters().renumbered == renumbered + 1);
    CHECK(aj::stats().plans_built == built);
    CHECK(y.to_vector<float>() == by_hand(b, 11));
  }
}

// The other side: a kept plan that reads a node at two offsets in one kernel
// because the two reads fit its elements at n = 4 (a pad of 3 on each side
// leaves 2 of 4 points inside each read) would evaluate it at 2 (n - 3)
// points at n = 20. Fuse stores it there (several index maps), so the kept
// plan is refused and the call plans from scratch.
TEST_CASE("a kept plan that would evaluate a node past its elements at new numbers is not used") {
  pc::clear();
  auto run = [](const std::vector<double>& v) {
    const auto n = static_cast<std::int64_t>(v.size());
    const Array x = aj::from_vector(v);
    Array z = [&] {  // y and p temporaries: fuse decides where they are computed
      Array y = x * 2.0;
      Array p = aj::pad(y, {aj::PadWidth{3, 3}});
      return aj::slice(p, 0, 0, n) + aj::slice(p, 0, 6, n + 6);
    }();
    z.eval();
    return z.to_vector<double>();
  };
  auto by_hand = [](const std::vector<double>& v) {
    const auto n = static_cast<std::int64_t>(v.size());
    std::vector<double> z(v.size());
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t l = i - 3, r = i + 3;  // the two reads, in v's indices
      z[static_cast<std::size_t>(i)] = (l >= 0 ? 2 * v[static_cast<std::size_t>(l)] : 0.0) +
                                       (r < n ? 2 * v[static_cast<std::size_t>(r)] : 0.0);
    }
    return z;
  };
  const std::vector<double> a = ajtest::random_in<double>(4, 21, -1.0, 1.0);
  CHECK(run(a) == by_hand(a));  // one kernel: y at 2 + 2 of its 4 points
  const std::uint64_t renumbered = pc::counters().renumbered, built = aj::stats().plans_built;
  const std::vector<double> b = ajtest::random_in<double>(20, 22, -1.0, 1.0);
  CHECK(run(b) == by_hand(b));  // the kept kernel would compute y at 17 + 17 of 20
  CHECK(pc::counters().renumbered == renumbered);
  CHECK(aj::stats().plans_built == built + 1);
  CAPTURE(pc::last_refusal());
  CHECK(pc::last_refusal().find("work rule") != std::string::npos);
}

TEST_CASE("a scalar that simplify folded is part of the key: x * 1 then x * 2") {
  pc::clear();
  const std::vector<double> v{1.5, -2, 0.25};
  Array x = aj::from_vector(v);
  {
    Delta d;
    Array y = x * 1.0;  // simplify makes this an alias of x: no kernel
    y.eval();
    CHECK(d.misses() == 1);
    CHECK(y.to_vector<double>() == v);
  }
  {
    Delta d;
    Array y = x * 2.0;
    y.eval();
    CHECK(d.hits() == 0);
    CHECK(y.to_vector<double>() == std::vector<double>{3, -4, 0.5});
  }
  {  // and back: x * 1 again is a hit, still the identity
    Delta d;
    Array y = x * 1.0;
    y.eval();
    CHECK(d.hits() == 1);
    CHECK(y.to_vector<double>() == v);
  }
  {  // a scalar simplify does not fold is a kernel argument: a hit, right values
    Delta d;
    Array y = x * 3.0;
    y.eval();
    CHECK(d.hits() == 1);
    CHECK(y.to_vector<double>() == std::vector<double>{4.5, -6, 0.75});
  }
  {  // an integer x + 0 is x (simplify), x + 5 is not: the class changed, a new plan
    Array i = aj::from_vector<std::int64_t>({4, -7, 9});
    Array a = i + 0;
    a.eval();
    Delta d;
    Array b = i + 5;
    b.eval();
    CHECK(d.hits() == 0);
    CHECK(b.to_vector<std::int64_t>() == std::vector<std::int64_t>{9, -2, 14});
  }
}

// Adam on n f32, one eval({p, m, v}) per step, the learning rate of step t
// (1, 2, ...) from `lr_at` and the bias corrections of step t + t_shift; the
// result is checked against a double-precision hand loop. Returns the stats
// after 3 warm-up steps and at the end.
namespace {
struct ScheduleRun {
  aj::Stats warm, end;
};
ScheduleRun adam_with_schedule(std::size_t n, int steps, int t_shift, const std::function<double(int)>& lr_at) {
  pc::clear();
  std::vector<float> p0(n), g0(n);
  for (std::size_t i = 0; i < n; ++i) {
    p0[i] = std::sin(0.37f * static_cast<float>(i));
    g0[i] = std::cos(0.11f * static_cast<float>(i)) * 0.5f;
  }
  Array p = aj::from_vector(p0), m = aj::zeros({static_cast<std::int64_t>(n)}),
        v = aj::zeros({static_cast<std::int64_t>(n)});
  const Array g = aj::from_vector(g0);
  std::vector<double> hp(p0.begin(), p0.end()), hm(n, 0.0), hv(n, 0.0);
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  ScheduleRun run;
  for (int t = 1; t <= steps; ++t) {
    const double lr = lr_at(t);
    const double c1 = 1 - std::pow(b1, t + t_shift), c2 = 1 - std::pow(b2, t + t_shift);  // bias correction
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    p = p - lr * (m / c1) / (aj::sqrt(v / c2) + eps);
    aj::eval({p, m, v});
    for (std::size_t i = 0; i < n; ++i) {
      hm[i] = static_cast<float>(b1 * hm[i] + (1 - b1) * g0[i]);
      hv[i] = static_cast<float>(b2 * hv[i] + (1 - b2) * g0[i] * g0[i]);
      hp[i] = static_cast<float>(hp[i] - lr * (hm[i] / c1) / (std::sqrt(hv[i] / c2) + eps));
    }
    if (t == 3) run.warm = aj::stats();
  }
  run.end = aj::stats();
  const std::vector<float> got = p.to_vector<float>();
  for (std::size_t i = 0; i < n; ++i) REQUIRE(got[i] == doctest::Approx(hp[i]).epsilon(1e-5));
  return run;
}
}  // namespace

TEST_CASE("a learning-rate schedule never replans or recompiles: scalars are kernel arguments") {
  // A schedule: a new value every step.
  const ScheduleRun r = adam_with_schedule(1000, 30, 0, [](int t) { return 0.01 * std::pow(0.95, t); });
  CHECK(r.end.plans_built == r.warm.plans_built);            // 0 plans built after warm-up
  CHECK(r.end.kernels_compiled == r.warm.kernels_compiled);  // 0 kernels compiled
  CHECK(r.end.plan_cache_hits - r.warm.plan_cache_hits == 27);
}

TEST_CASE("a scalar equal to another constant of the step plans nothing new (scalars are not merged by value)") {
  // Before scalars had nodes of their own, a learning rate of 0.1 shared the
  // node of (1 - b1) == 0.1f: another structure, so a new plan. After 3
  // warm-up steps (bias corrections from step 3 on, so none equals 1 - b1):
  // rates equal (in f32) to 1 - b1, b1, 1 - b2, b2 and eps, the constants of
  // this very step, then ones equal to nothing.
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const std::vector<double> lrs = {0.01, 0.02, 0.005, 1 - b1, b1, 1 - b2, b2, eps, 0.003, 0.1, 0.001, 0.9};
  const ScheduleRun r = adam_with_schedule(257, static_cast<int>(lrs.size()), 2,
                                           [&](int t) { return lrs[static_cast<std::size_t>(t - 1)]; });
  CHECK(r.end.plans_built == r.warm.plans_built);
  CHECK(r.end.kernels_compiled == r.warm.kernels_compiled);
  CHECK(r.end.plan_cache_hits - r.warm.plan_cache_hits == lrs.size() - 3);
}

TEST_CASE("hits with verification off run lean copies of the plan and its prepared kernels, with the planned values") {
  const ajtest::VerifyOff off;  // a user's build: hits are lean, and not planned again
  pc::clear();
  const std::size_t n = 96;
  std::vector<double> xr = ajtest::random_in<double>(n, 31, -1.0, 1.0), mr = ajtest::random_in<double>(n, 32, -0.5, 0.5);
  Array x = aj::from_vector(xr), m = aj::from_vector(mr);
  const auto before = aj::stats();
  Delta d;
  std::uint64_t compiled_after_both = 0;
  for (int t = 0; t < 40; ++t) {
    if (t == 2) compiled_after_both = aj::stats().kernels_compiled;
    const double lr = 0.01 * (1 + t % 7);  // a new kernel scalar on most hits
    Array keep;
    if (t % 3 == 0) keep = x;  // held: another plan, which must not write x in place
    m = m * 0.9 + aj::exp(x) * lr;
    x = x - m;
    Array s = aj::sum(x * x);  // a reduction: a kernel of another space
    aj::eval({x, m, s});
    double sr = 0;
    for (std::size_t i = 0; i < n; ++i) {
      mr[i] = mr[i] * 0.9 + std::exp(xr[i]) * lr;
      xr[i] -= mr[i];
      sr += xr[i] * xr[i];
    }
    const auto xs = x.to_vector<double>(), ms = m.to_vector<double>();
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(xs[i] == doctest::Approx(xr[i]).epsilon(1e-12));
      REQUIRE(ms[i] == doctest::Approx(mr[i]).epsilon(1e-12));
    }
    CHECK(s.item<double>() == doctest::Approx(sr).epsilon(1e-12));
    if (t % 3 == 0) CHECK(keep.to_vector<double>() != xs);  // the held x kept its values
  }
  CHECK(d.misses() == 2);  // x held, and not
  CHECK(d.hits() == 38);
  CHECK(aj::stats().inplace_reuses - before.inplace_reuses > 20);
  CHECK(aj::stats().kernels_compiled == compiled_after_both);
}

TEST_CASE("the plan cache can be switched off and cleared") {
  pc::clear();
  Array x = aj::from_vector(std::vector<double>{1, 2});
  pc::set_enabled(false);
  {
    Delta d;
    for (int i = 0; i < 3; ++i) (x + 1.0).eval();
    CHECK(d.hits() == 0);
    CHECK(d.misses() == 0);
    CHECK(pc::counters().entries == 0);
  }
  pc::set_enabled(true);
  {
    Delta d;
    for (int i = 0; i < 3; ++i) (x + 1.0).eval();
    CHECK(d.hits() == 2);
    CHECK(d.misses() == 1);
  }
  pc::clear();
  CHECK(pc::counters().entries == 0);
  {
    Delta d;
    (x + 1.0).eval();
    CHECK(d.misses() == 1);
  }
}

TEST_CASE("same_plan, which checks every hit in tests, tells different plans apart") {
  Array x = aj::from_vector(std::vector<double>{1, 2, 3});
  Array a = x + 1.0, b = x * 2.0, c = x + 2.0;
  auto plan = [](const Array& r) {
    aj::Schedule s = aj::fuse({r.node_id()});
    aj::BufferPlan p = aj::assign_buffers(s);
    return std::make_pair(std::move(s), std::move(p));
  };
  auto [sa, pa] = plan(a);
  auto [sa2, pa2] = plan(a);
  auto [sb, pb] = plan(b);
  auto [sc, pc2] = plan(c);
  CHECK(pc::same_plan(sa, pa, sa2, pa2));
  CHECK_FALSE(pc::same_plan(sa, pa, sb, pb));   // another op
  CHECK_FALSE(pc::same_plan(sa, pa, sc, pc2));  // another node (and scalar)
  aj::BufferPlan moved = pa;
  moved.lower_bound += 8;
  CHECK_FALSE(pc::same_plan(sa, pa, sa, moved));
}

}  // TEST_SUITE("plan cache")

// No runaway graphs, no work-multiplying fusion (docs/optimizer.md, "The work
// rule" and "The size cap"): lazy loops evaluated once give the values of
// evaluating every step, with plans whose size grows linearly with the loop;
// long chains and wide concatenates plan at once.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/explain.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "graph/graph.hpp"
#include "opt/passes/fuse.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::detail::Executor;
using aj::detail::ExecutorScope;

std::vector<float> random_floats(std::size_t n, unsigned seed) { return ajtest::random_in<float>(n, seed, -1.0f, 1.0f); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

Array smooth(const Array& x) {
  return aj::slice(x, 0, 0, -2) + aj::slice(x, 0, 1, -1) + aj::slice(x, 0, 2, std::nullopt);
}

Array jacobi(const Array& u) {
  using aj::Slice;
  auto s = [&](std::int64_t r0, std::optional<std::int64_t> r1, std::int64_t c0, std::optional<std::int64_t> c1) {
    return aj::slice(u, {Slice(r0, r1), Slice(c0, c1)});
  };
  return 0.25f * (s(0, -2, 1, -1) + s(2, std::nullopt, 1, -1) + s(1, -1, 0, -2) + s(1, -1, 2, std::nullopt));
}

// `steps` of `step` from x0, evaluated after every step and lazily, once:
// both values, the lazy loop's plan (explain) and the stats of its evaluation.
struct LazyEager {
  std::vector<float> lazy, eager;
  std::string plan;
  aj::Stats stats;
};
template <class F>
LazyEager lazy_and_eager(const Array& x0, int steps, F step) {
  LazyEager r;
  Array eager = x0;
  for (int t = 0; t < steps; ++t) {
    eager = step(eager);
    eager.eval();
  }
  Array lazy = x0;
  for (int t = 0; t < steps; ++t) lazy = step(lazy);
  r.plan = aj::explain(lazy);
  aj::reset_stats();
  lazy.eval();
  r.stats = aj::stats();
  r.lazy = lazy.to_vector<float>();
  r.eager = eager.to_vector<float>();
  return r;
}

}  // namespace

TEST_SUITE("planner") {
TEST_CASE("lazy 3-point smoothing: the values of evaluating every step, a plan linear in the steps") {
  std::size_t lines16 = 0;
  for (int steps : {4, 16, 64, 256}) {
    const LazyEager r = lazy_and_eager(aj::from_vector(random_floats(static_cast<std::size_t>(300 + 2 * steps), 1)), steps, smooth);
    const std::string& plan = r.plan;
    INFO("steps " << steps);
    CHECK(same_bits(r.lazy, r.eager));
    // Each level is read at three offsets by the next: stored once, never
    // recomputed (one kernel per step, as evaluating every step).
    CHECK(r.stats.kernels_launched == static_cast<std::uint64_t>(steps));
    CHECK(r.stats.values_materialized == static_cast<std::uint64_t>(steps - 1));
    CHECK(count(plan, "materialized: ") == static_cast<std::size_t>(steps - 1));
    // Mostly by the work rule; where the size cap's estimate got there
    // first, the same level is stored for the cap (never one more value).
    CHECK(count(plan, "read at 3 index maps") + count(plan, "would pass the size cap") ==
          static_cast<std::size_t>(steps - 1));
    if (steps == 16) lines16 = lines(plan);
    if (steps == 256) CHECK(lines(plan) <= 16 * lines16 + 200);  // linear, not quadratic
  }
}

TEST_CASE("lazy smoothing with slice_update and fixed ends: a bounded number of kernels for any number of steps") {
  // u's interior replaced by its 3-point mean each step, the ends kept. Each
  // step's pad takes the last step's as its fill; from the second level the
  // pad is stored (it counts as work), so the steps' kernels stop being new:
  // one kernel a step, at most 3 kernel structures for any T, and a plan
  // linear in T.
  const std::int64_t n = 500;
  auto step = [&](const Array& u) {
    const Array in = aj::slice(u, 0, 1, n - 1);
    const Array mean = (aj::slice(u, 0, 0, n - 2) + in + aj::slice(u, 0, 2, n)) / 3.0f;
    return aj::slice_update(u, {aj::Slice(1, n - 1)}, mean);
  };
  std::size_t lines32 = 0;
  for (int steps : {32, 128, 512}) {
    const LazyEager r = lazy_and_eager(aj::from_vector(random_floats(static_cast<std::size_t>(n), 3)), steps, step);
    const std::string& plan = r.plan;
    INFO("steps " << steps);
    CHECK(same_bits(r.lazy, r.eager));
    CHECK(r.stats.kernels_launched == static_cast<std::uint64_t>(steps));
    // The plan's kernels of distinct structure (hash) are few.
    std::vector<std::string> hashes;
    for (auto at = plan.find("hash "); at != std::string::npos; at = plan.find("hash ", at + 1)) {
      const std::string h = plan.substr(at + 5, 16);
      if (std::find(hashes.begin(), hashes.end(), h) == hashes.end()) hashes.push_back(h);
    }
    CHECK(hashes.size() <= 3);
    if (steps == 32) lines32 = lines(plan);
    if (steps == 512) CHECK(lines(plan) <= 16 * lines32 + 200);  // linear, not quadratic
  }
}

TEST_CASE("lazy 2-D Jacobi: one kernel per step, the values of evaluating every step") {
  const std::int64_t n = 70;
  const LazyEager r = lazy_and_eager(aj::from_vector(random_floats(static_cast<std::size_t>(n * n), 2), {n, n}), 10, jacobi);
  CHECK(r.stats.kernels_launched == 10);
  CHECK(same_bits(r.lazy, r.eager));
}

TEST_CASE("the work rule: a producer read at two offsets, through a broadcast or by two kernels is stored once") {
  Array x = aj::from_vector(random_floats(64, 3));
  Array b = aj::from_vector(random_floats(16, 4));
  Array w = aj::from_vector(random_floats(8 * 16, 5), {8, 16});
  auto offsets = [&] {
    Array y = x * 2 + 1;
    return aj::slice(y, 0, 1, std::nullopt) + aj::slice(y, 0, 0, -1);
  };
  auto broadcast = [&] { return w * aj::exp(b); };  // exp(b) would run 8 times per element
  auto two_kernels = [&] {
    Array y = aj::exp(w);
    return std::vector<Array>{aj::sum(y, 0), aj::sum(y, 1)};
  };
  std::vector<std::vector<float>> want;
  {
    ExecutorScope ref(Executor::reference);
    want.push_back(offsets().to_vector<float>());
    want.push_back(broadcast().to_vector<float>());
    for (Array& a : two_kernels()) want.push_back(a.to_vector<float>());
  }
  {
    Array r = offsets();
    const std::string plan = aj::explain(r);
    CHECK(plan.find("materialized: read at 2 index maps (offsets, transposes) by") != std::string::npos);
    aj::reset_stats();
    r.eval();
    CHECK(aj::stats().kernels_launched == 2);
    CHECK(aj::stats().values_materialized == 1);
    CHECK(r.to_vector<float>() == want[0]);
  }
  {
    Array r = broadcast();
    const std::string plan = aj::explain(r);
    CHECK(plan.find("materialized: read through a broadcast by") != std::string::npos);
    CHECK(plan.find("(128 evaluations for its 16 elements)") != std::string::npos);
    aj::reset_stats();
    r.eval();
    CHECK(aj::stats().values_materialized == 1);
    auto got = r.to_vector<float>();
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[1][i]).epsilon(1e-5));
  }
  {
    auto r = two_kernels();
    aj::reset_stats();
    aj::eval(r);
    CHECK(aj::stats().kernels_launched == 2);
    CHECK(aj::stats().values_materialized == 1);
    for (std::size_t k = 0; k < 2; ++k) {
      auto got = r[k].to_vector<float>();
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[2 + k][i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("the work rule's exception: a cheap op over stored inputs is recomputed by a second kernel, not stored") {
  const std::int64_t r = 24, c = 40;
  Array x = aj::from_vector(random_floats(static_cast<std::size_t>(r * c), 21), {r, c});
  Array y = aj::from_vector(random_floats(static_cast<std::size_t>(r * c), 22), {r, c});
  Array g = aj::from_vector(random_floats(static_cast<std::size_t>(c), 23));
  // Layernorm as a function writes it: x - mean is read by the variance's
  // kernel and by the normalizing kernel, at every element of both.
  auto layernorm = [&] {
    Array d = x - aj::mean(x, 1, true);
    return d / aj::sqrt(aj::mean(d * d, 1, true) + 1e-5f) * g;
  };
  // Two full-size inputs: recomputing would read two arrays instead of one.
  // (d is read by exactly two kernels: the row sum's, and the product's.)
  auto two_full = [&] {
    Array d = x - y;
    return std::vector<Array>{d * aj::sum(d, 1, true)};
  };
  // A mask of f64: reading x (8 bytes) again would cost more than storing 1.
  Array xd = x.astype(aj::DType::f64);
  xd.eval();
  auto wide_input = [&] {
    Array m = xd > 0.0;  // read by the row sum's kernel and by the product's
    return std::vector<Array>{aj::where(m, xd, 0.0) * aj::sum(aj::where(m, 2.0, 1.0), 1, true)};
  };
  // Not cheap: exp is computed once per element, whatever it saves.
  auto not_cheap = [&] {
    Array e = aj::exp(x - aj::max(x, 1, true));
    return e / aj::sum(e, 1, true);
  };
  std::vector<std::vector<float>> want;
  {
    ExecutorScope ref(Executor::reference);
    want.push_back(layernorm().to_vector<float>());
    for (Array& a : two_full()) want.push_back(a.to_vector<float>());
    want.push_back(not_cheap().to_vector<float>());
  }
  std::vector<std::vector<double>> want_wide;
  {
    ExecutorScope ref(Executor::reference);
    for (Array& a : wide_input()) want_wide.push_back(a.astype(aj::DType::f64).to_vector<double>());
  }
  auto close = [](const std::vector<float>& got, const std::vector<float>& w) {
    REQUIRE(got.size() == w.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(w[i]).epsilon(1e-5));
  };
  {
    Array out = layernorm();
    const std::string plan = aj::explain(out);
    CHECK(plan.find("needed by 2 kernels") == std::string::npos);
    aj::reset_stats();
    out.eval();
    // mean, variance, sqrt, normalize; only the three row vectors are stored.
    CHECK(aj::stats().kernels_launched == 4);
    CHECK(aj::stats().values_materialized == 3);
    close(out.to_vector<float>(), want[0]);
  }
  {  // held by a handle, x - mean is stored, and read back
    Array d = x - aj::mean(x, 1, true);
    Array out = d / aj::sqrt(aj::mean(d * d, 1, true) + 1e-5f) * g;
    aj::reset_stats();
    out.eval();
    CHECK(d.is_evaluated());
    CHECK(aj::stats().kernels_launched == 4);
    close(out.to_vector<float>(), want[0]);
  }
  {
    auto out = two_full();
    const std::string plan = aj::explain(out);
    CHECK(plan.find("materialized: needed by 2 kernels") != std::string::npos);
    aj::eval(out);
    close(out[0].to_vector<float>(), want[1]);
  }
  {
    Array out = not_cheap();
    const std::string plan = aj::explain(out);
    CHECK(plan.find("materialized: needed by 2 kernels") != std::string::npos);
    out.eval();
    close(out.to_vector<float>(), want[2]);
  }
  {
    auto out = wide_input();
    const std::string plan = aj::explain(out);
    CHECK(plan.find("materialized: needed by 2 kernels") != std::string::npos);
    aj::eval(out);
    CHECK(out[0].astype(aj::DType::f64).to_vector<double>() == want_wide[0]);
  }
}

TEST_CASE("a no-bias Adam step whose equal constants are traced separately is one kernel, three steps running") {
  // Issue 33 point 3: constants are never merged (docs/optimizer.md), and
  // that costs no kernel here: p, m and v of each step are one pass.
  const std::size_t n = 4099;
  const Array g = aj::from_vector(random_floats(n, 31));
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  auto run = [&](bool count) {
    Array p = aj::from_vector(random_floats(n, 32)), m = aj::zeros({static_cast<std::int64_t>(n)});
    Array v = aj::zeros({static_cast<std::int64_t>(n)});
    aj::eval({p, m, v});
    for (int t = 0; t < 3; ++t) {
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      p = p - lr * m / (aj::sqrt(v) + eps);
      aj::reset_stats();
      aj::eval({p, m, v});
      if (count) CHECK(aj::stats().kernels_launched == 1);
    }
    return p.to_vector<float>();
  };
  std::vector<float> want;
  {
    ExecutorScope ref(Executor::reference);
    want = run(false);
  }
  const std::vector<float> got = run(true);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("the work rule is about cost, not op count: 100 x (x * 0.5 + 1) is one kernel") {
  Array x = aj::from_vector(random_floats(1000, 6));
  auto make = [&] {
    Array y = x;
    for (int i = 0; i < 100; ++i) y = y * 0.5f + 1.0f;
    return y;
  };
  std::vector<float> want;
  {
    ExecutorScope ref(Executor::reference);
    want = make().to_vector<float>();
  }
  Array y = make();
  aj::reset_stats();
  y.eval();
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(aj::stats().values_materialized == 0);
  auto got = y.to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("the size cap: a chain of 100000 ops plans in pieces of the same structure") {
  Array x = aj::from_vector(random_floats(64, 7));
  const int ops = 100'000;
  auto chain = [&](int n, int eval_every) {
    Array y = x;
    for (int i = 0; i < n; ++i) {
      switch (i % 4) {
        case 0: y = y * 0.999f; break;
        case 1: y = y + 0.25f; break;
        case 2: y = aj::abs(y); break;
        default: y = aj::minimum(y, 4.0f); break;
      }
      if (eval_every && (i + 1) % eval_every == 0) y.eval();
    }
    return y;
  };
  // Evaluated every 256 ops (where the cap cuts), the values are the same bits.
  std::vector<float> want = chain(ops, static_cast<int>(aj::kMaxKernelNodes)).to_vector<float>();
  Array y = chain(ops, 0);
  const std::string plan = aj::explain(y);
  aj::reset_stats();
  y.eval();
  const std::uint64_t pieces = (ops + aj::kMaxKernelNodes - 1) / aj::kMaxKernelNodes;
  CHECK(aj::stats().kernels_launched == pieces);
  CHECK(aj::stats().values_materialized == pieces - 1);
  CHECK(aj::stats().kernels_compiled <= 3);  // first piece, the others, the rest
  CHECK(count(plan, "would pass the size cap") == pieces - 1);
  CHECK(same_bits(y.to_vector<float>(), want));
}

TEST_CASE("the id space follows the live nodes down: after a long chain is gone, a pass's verify walks what is left") {
  // verify (AJ_VERIFY, on in the tests) walks every id after every pass: a
  // process that once held a 100,000-op chain paid for its ids in every
  // later evaluation (a test run after this case's neighbour took 30 s
  // instead of 0.5 s).
  const std::size_t before = aj::graph().capacity();
  {
    Array y = aj::from_vector(random_floats(16, 9));
    for (int i = 0; i < 20'000; ++i) y = (i % 2) ? y * 0.5f : y + 1.0f;
    CHECK(aj::graph().capacity() >= before + 20'000);
    y.eval();
  }
  const std::size_t after_chain = aj::graph().capacity();
  // A few more frees (the trim is amortized over frees) bring it down.
  for (int k = 0; k < 4; ++k) {
    Array z = aj::from_vector(random_floats(16, 10 + k));
    for (int i = 0; i < 1'000; ++i) z = z * 1.0001f;
    z.eval();
  }
  CAPTURE(before);
  CAPTURE(after_chain);
  CHECK(aj::graph().capacity() <= before + 2 * 1'024 + 1'000);
  // New nodes after the trim are whole nodes: evaluation still right.
  const Array a = aj::from_vector(random_floats(32, 11));
  const std::vector<float> av = a.to_vector<float>();
  const std::vector<float> got = (a * 2.0f + 1.0f).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == av[i] * 2.0f + 1.0f);
}

TEST_CASE("the size cap in a loop: a lazy Mandelbrot is pieces of whole iterations, at most 3 kernels compiled") {
  // z = z^2 + c with an escape count, 100 and 400 iterations left lazy and
  // evaluated once. The cap cuts the loop's whole state (zr, zi, count) where
  // an iteration ends, the same number of iterations a piece, so the pieces
  // are one kernel each and the middle ones one kernel structure; nothing in
  // a piece is read by two kernels (cutting one state at a time stored
  // hundreds of values "needed by 2 kernels"). Values: the loop evaluated
  // every iteration, bit for bit.
  const std::int64_t h = 24, w = 40;
  const Array cr = aj::linspace(-2.0, 0.5, w, aj::DType::f64);
  const Array ci = aj::linspace(1.25, -1.25, h, aj::DType::f64).reshape({h, 1});
  auto iterate = [&](int iterations, bool eval_each) {
    Array zr = aj::zeros({h, w}, aj::DType::f64), zi = zr;
    Array count = aj::zeros({h, w}, aj::DType::i32);
    for (int it = 0; it < iterations; ++it) {
      const Array zr2 = zr * zr, zi2 = zi * zi;
      const Array inside = zr2 + zi2 <= 4;
      count = count + inside.astype(aj::DType::i32);
      const Array next_zi = 2 * zr * zi + ci;
      zr = aj::where(inside, zr2 - zi2 + cr, zr);
      zi = aj::where(inside, next_zi, zi);
      if (eval_each) aj::eval({zr, zi, count});
    }
    return count;
  };
  for (int iterations : {100, 400}) {
    INFO("iterations " << iterations);
    const std::vector<std::int32_t> want = iterate(iterations, true).to_vector<std::int32_t>();
    aj::jit::clear_memory_cache();
    Array escapes = iterate(iterations, false);
    const std::string plan = aj::explain(escapes);
    aj::reset_stats();
    escapes.eval();
    const aj::Stats st = aj::stats();
    CHECK(escapes.to_vector<std::int32_t>() == want);
    // About 20 iterations a piece (15 nodes each under the 256-node cap).
    CHECK(st.kernels_launched <= static_cast<std::uint64_t>(iterations / 15 + 2));
    CHECK(st.kernels_launched >= static_cast<std::uint64_t>(iterations / 20));
    CHECK(st.kernels_compiled + st.kernel_disk_hits <= 3);
    CHECK(count(plan, "needed by") == 0);
    // Three states cut per piece (the first piece also starts from fills).
    CHECK(count(plan, "would pass the size cap") <= 4 * st.kernels_launched);
  }
}

TEST_CASE("concatenate of many unevaluated pieces: kernels of up to 16 outputs, right values") {
  const std::int64_t pieces = 300;
  std::vector<float> xs = random_floats(static_cast<std::size_t>(4 * pieces), 8);
  Array x = aj::from_vector(xs);
  std::vector<Array> parts;
  for (std::int64_t i = 0; i < pieces; ++i) parts.push_back(aj::slice(x, 0, 4 * i, 4 * i + 4) * 2.0f + static_cast<float>(i));
  Array c = aj::concatenate(parts);
  parts.clear();
  aj::reset_stats();
  c.eval();
  // Every piece is written into its slice of the result (concat_slices): the
  // concatenate itself copies nothing.
  CHECK(aj::stats().kernels_launched == static_cast<std::uint64_t>((pieces + 15) / 16));
  auto got = c.to_vector<float>();
  REQUIRE(got.size() == xs.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == xs[i] * 2.0f + static_cast<float>(i / 4));
}
}

// Found by the random-graph tier's lazy loops: over an empty array nothing
// is ever evaluated at more points than it has elements (0), so the work rule
// never stored a step, the loop fused into one kernel whose lowering grew
// five times each step (10 steps: 7 s). An empty value is now stored
// (nothing to store): one kernel a step, as with elements.
TEST_CASE("a lazy loop over an empty array plans one kernel a step") {
  for (aj::DType t : {aj::DType::f32, aj::DType::f16}) {
    CAPTURE(static_cast<int>(t));
    const int steps = 12;
    Array x = aj::zeros({0, 5}, t);
    for (int s = 0; s < steps; ++s) {
      const Array inner = (aj::slice(x, 1, 0, 3) + aj::slice(x, 1, 2, 5)) * 0.5;
      x = aj::pad(inner, {aj::PadWidth{0, 0}, aj::PadWidth{1, 1}}, aj::PadMode::edge);
    }
    CHECK(aj::explain(x).find("has no elements") != std::string::npos);
    aj::reset_stats();
    x.eval();
    CHECK(aj::stats().kernels_launched == static_cast<std::uint64_t>(steps));
    CHECK(x.shape() == aj::Shape({0, 5}));
    CHECK(x.dtype() == t);
  }
}

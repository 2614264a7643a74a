// aj::compile at new extents (docs/extent-replays.md): once a second trace has
// checked the first, a call at new extents makes the kept trace at its
// extents and runs the kept plan's decisions with the numbers made again from
// those extents (opt/materialize.hpp): no tracing and no planning. The
// results are what the uncompiled call gives bit for bit, and what the kept
// plan cannot vouch for (an equality of two extents that no longer holds, a
// threshold of the planner crossed, a function that read an extent) is
// planned or traced instead.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <array>
#include <atomic>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "tests/compile_helpers.hpp"

namespace {

using aj::Array;
using aj::Shape;

using ajtest::input;
using ajtest::same_bits;
using ajtest::vals;

// Calls cf, then f, at each shape (one argument each), checks them bit for
// bit; counts the plans built by compiled calls that ran unplanned (none, by
// definition) and the plans made again at new numbers. (The compiled call
// comes first: the uncompiled one would leave a plan at these very numbers.)
struct Runner {
  unsigned seed = 1;
  std::uint64_t planned_when_unplanned = 0, renumbered = 0;
  template <class CF, class F>
  void one(CF& cf, F f, const Shape& s) {
    const Array x = input(s, seed++);
    const aj::Stats s0 = aj::stats();
    const std::uint64_t unplanned0 = cf.counts().unplanned;
    const Array got = cf(x);
    if (cf.counts().unplanned > unplanned0) planned_when_unplanned += aj::stats().plans_built - s0.plans_built;
    renumbered += aj::stats().plans_renumbered - s0.plans_renumbered;
    Array want = f(x);
    want.eval();
    INFO("shape " << s.str());
    CHECK(same_bits(vals(got), vals(want)));
  }
};


// Calls cf and f (a loss and a gradient of x and w, both [n]) at lengths 10
// .. 70 and 17 again: traced twice, then made from the kept trace four times
// (the kept plan renumbered) and replayed once, each result as the
// uncompiled call's.
template <class CF, class F>
void loss_and_gradient_at_lengths(CF& cf, F f, unsigned seed) {
  for (std::int64_t n : {10, 17, 29, 41, 55, 70, 17}) {
    const Array x = input({n}, seed++), w = input({n}, seed++);
    const std::vector<Array> got = cf(x, w);
    std::vector<Array> want = f(x, w);
    aj::eval(want);
    INFO("n " << n);
    CHECK(same_bits(vals(got[0]), vals(want[0])));
    CHECK(same_bits(vals(got[1]), vals(want[1])));
  }
  INFO(cf.extents_note());
  INFO(cf.plan_note());
  CHECK(cf.counts().traces == 2);
  // (The plan kept for the structure is the latest at other numbers, which
  // may be another test's: its work-rule decisions can refuse one length,
  // which is then planned.)
  CHECK(cf.counts().unplanned >= 3);
  CHECK(cf.counts().new_extents == 4);
  CHECK(cf.counts().replays == 1);
}
}  // namespace

TEST_SUITE("compile") {

TEST_CASE("compile renumber: new extents run unplanned, bit for bit; mean's 1/n and a sum's count follow") {
  auto f = [](const Array& x) { return aj::exp(x - aj::mean(x, 1, true)) * 0.5f + aj::sum(x * x, 0, true) / 3.0f; };
  auto cf = aj::compile(f);
  Runner r;
  // Traced at [4, 6] and [9, 7]; every later new extent runs the kept plan
  // at its numbers.
  for (const Shape& s : {Shape{4, 6}, Shape{9, 7}, Shape{30, 11}, Shape{2, 129}, Shape{13, 17}, Shape{64, 3}, Shape{13, 17}}) {
    r.one(cf, f, s);
  }
  INFO(cf.plan_note());
  CHECK(cf.counts().traces == 2);
  CHECK(cf.counts().new_extents == 4);
  CHECK(cf.counts().unplanned == 4);
  CHECK(cf.counts().replays == 1);  // [13, 17] again: the program made there
  CHECK(r.planned_when_unplanned == 0);
  CHECK(r.renumbered >= 4);  // the kept plan's numbers made again, not the uncompiled call's plan
  CHECK(cf.plan_note().empty());
}

TEST_CASE("compile renumber: a matmul below the blockwise-epilogue threshold, then far above it") {
  // The plans at 2-4 rows run bias + relu apart from the product (below
  // 2^14 result elements, opt/program.hpp); at 300 rows the decision is made
  // again (blockwise): the same values.
  auto f = [](const Array& x, const Array& w, const Array& b) { return aj::maximum(aj::matmul(x, w) + b, 0.0f); };
  auto cf = aj::compile(f);
  const Array w = input({48, 130}, 7), b = input({130}, 8);
  unsigned seed = 10;
  for (std::int64_t rows : {2, 3, 5, 300, 301, 7}) {
    const Array x = input({rows, 48}, seed++);
    const Array got = cf(x, w, b);  // first: f would leave a plan at these numbers
    Array want = f(x, w, b);
    want.eval();
    INFO("rows " << rows);
    CHECK(same_bits(vals(got), vals(want)));
  }
  INFO(cf.plan_note());
  CHECK(cf.counts().traces == 2);
  CHECK(cf.counts().unplanned == 4);  // the epilogue is decided at each call's numbers, not planned
}

TEST_CASE("compile renumber: scalar arguments that change with the extents take their values") {
  auto f = [](const Array& x, float s, float t) { return aj::tanh(x * s) + t; };
  auto cf = aj::compile(f);
  unsigned seed = 20;
  auto call = [&](std::int64_t n, float s, float t) {
    const Array x = input({n, 3}, seed++);
    const Array got = cf(x, s, t);  // first: f would leave a plan at these numbers
    Array want = f(x, s, t);
    want.eval();
    INFO("n " << n << " s " << s << " t " << t);
    CHECK(same_bits(vals(got), vals(want)));
  };
  // s changes at every call: a kernel scalar follows it. t stays 0.25 for
  // the first calls: the template holds it fixed, so a call with another t
  // is traced; that trace shows t reaching a kernel as it is, and from then
  // on t is followed too (extents::widen).
  call(4, 0.5f, 0.25f);
  call(9, 0.6f, 0.25f);
  call(14, 0.7f, 0.25f);
  call(23, 0.8f, 0.25f);
  CHECK(cf.counts().unplanned == 2);
  CHECK(cf.counts().traces == 2);
  call(31, 0.9f, 0.75f);  // t changed too: traced
  CHECK(cf.counts().unplanned == 2);
  CHECK(cf.counts().traces == 3);
  CHECK(cf.extents_note().find("is followed") != std::string::npos);
  call(40, 1.0f, 0.5f);  // new extents and a new t: made from the kept trace
  CHECK(cf.counts().traces == 3);
  call(23, 1.1f, 0.25f);  // back at a kept point with a new s: replayed with it
  call(23, 1.2f, 0.75f);  // and a new t there
}

TEST_CASE("compile renumber: two extents equal at every call, then different, are planned") {
  // x and y always had one length: a plan may have relied on it (a CSE, one
  // kernel for both), so the kept plan serves only equal lengths (the plan
  // cache keeps which numbers are equal).
  auto f = [](const Array& x, const Array& y) { return aj::sum(aj::exp(x), 0) + aj::sum(y * 2.0f, 0); };
  auto cf = aj::compile(f);
  unsigned seed = 40;
  auto call = [&](std::int64_t n, std::int64_t m) {
    const Array x = input({n}, seed++), y = input({m}, seed++);
    const Array got = cf(x, y);  // first: f would leave a plan at these numbers
    Array want = f(x, y);
    want.eval();
    INFO("n " << n << " m " << m);
    CHECK(same_bits(vals(got), vals(want)));
  };
  call(5, 5);
  call(9, 9);
  call(17, 17);
  call(30, 30);
  CHECK(cf.counts().unplanned == 2);
  call(40, 41);
  INFO(cf.plan_note());
  INFO(cf.extents_note());
  CHECK(cf.counts().unplanned == 2);
}

TEST_CASE("compile renumber: a function that reads an extent in C++ is traced at each extent") {
  auto f = [](const Array& x) { return x.shape()[0] > 10 ? aj::exp(x) : x * 2.0f; };
  auto cf = aj::compile(f);
  Runner r;
  for (std::int64_t n : {4, 6, 8, 9, 12, 15, 40}) r.one(cf, f, Shape{n});
  CHECK(cf.counts().unplanned == 0);
  CHECK(cf.counts().traces == 7);
}

TEST_CASE("compile renumber: minibatch views at new offsets and a donated state run unplanned") {
  // Every batch is a view of one dataset at another offset and length: the
  // offset is a number of the plan too (a stream's offset). The weight is
  // donated and written in place.
  auto step = [](const Array& x, Array w, float lr) {
    auto [l, g] = aj::value_and_grad([&](const Array& q) { return aj::mean(aj::tanh(aj::matmul(x, q))); })(w);
    return std::vector<Array>{l, w - lr * g};
  };
  auto cstep = aj::compile(step);
  const Array X = input({400, 6}, 60);
  Array w = input({6, 3}, 61), w2 = w;
  std::int64_t at = 0;
  std::uint64_t inplace_renumbered = 0;
  for (int t = 0; t < 8; ++t) {
    const std::int64_t rows = 5 + 7 * t;
    const Array xb = aj::slice(X, 0, at, at + rows);
    at += rows;
    const float lr = 0.05f + 0.01f * static_cast<float>(t);
    const aj::Stats s0 = aj::stats();
    const std::uint64_t renumbered0 = cstep.counts().unplanned;
    std::vector<Array> r = cstep(xb, std::move(w), lr);
    if (cstep.counts().unplanned > renumbered0) inplace_renumbered += aj::stats().inplace_reuses - s0.inplace_reuses;
    std::vector<Array> e = step(xb, w2, lr);
    aj::eval(e);
    INFO("step " << t);
    CHECK(same_bits(vals(r[0]), vals(e[0])));
    CHECK(same_bits(vals(r[1]), vals(e[1])));
    w = r[1], w2 = e[1];
  }
  INFO(cstep.plan_note());
  CHECK(cstep.counts().traces == 2);
  CHECK(cstep.counts().unplanned >= 5);
  CHECK(inplace_renumbered >= 5);  // the donated w written in place by the renumbered programs
}

TEST_CASE("compile renumber: threads calling one compiled function at their own new extents") {
  // The template is made and checked on this thread; then four threads call
  // at extents of their own (each new extent set made from the template on
  // the thread that meets it first, renumbering that thread's kept plan,
  // replayed by the others).
  auto f = [](const Array& x, const Array& y) { return aj::sum(x * y + aj::exp(x), 0) - aj::mean(y * y, 0); };
  auto cf = aj::compile(f);
  unsigned seed = 70;
  for (const auto& [n, m] : {std::pair<std::int64_t, std::int64_t>{5, 3}, {9, 8}, {14, 20}}) {
    const Array x = input({n, m}, seed++), y = input({n, m}, seed++);
    const Array got = cf(x, y);  // first: f would leave a plan at these numbers
    Array want = f(x, y);
    want.eval();
    CHECK(same_bits(vals(got), vals(want)));
  }
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k) {
        // Some extents repeated, some met by two threads.
        const std::int64_t n = 21 + 3 * t + 17 * (k % 4), m = 6 + 5 * t + 11 * (k % 3);
        const Array x = input({n, m}, 900 + static_cast<unsigned>(t * 31 + k)), y = input({n, m}, 950 + static_cast<unsigned>(k));
        Array want = f(x, y);
        want.eval();
        bad += !same_bits(vals(cf(x, y)), vals(want));
      }
    });
  }
  for (auto& th : threads) th.join();
  INFO(cf.plan_note());
  CHECK(bad.load() == 0);
  CHECK(cf.counts().traces == 2);
  CHECK(cf.counts().unplanned >= 4);
  CHECK(cf.counts().traces + cf.counts().new_extents + cf.counts().replays == 43);
}

TEST_CASE("compile renumber: the gradient of a difference of slices (buffers of n - 1 elements)") {
  auto f = [](const Array& x, const Array& w) {
    auto [l, g] = aj::value_and_grad([&](const Array& q) {
      const Array y = x * q;
      const Array d = aj::slice(y, 0, 1, std::nullopt) - aj::slice(y, 0, 0, -1);
      return aj::sum(d * d);
    })(w);
    return std::vector<Array>{l, g};
  };
  auto cf = aj::compile(f);
  loss_and_gradient_at_lengths(cf, f, 80);
}

TEST_CASE("compile renumber: a reshape splitting the batch ([8 * b, 3] to [b, 8, 3])") {
  // b is the argument's extent over 8 (the template's quotient symbol).
  auto f = [](const Array& x) {
    const Array r = aj::reshape(x, {-1, 8, 3});
    return aj::sum(aj::tanh(r) * 2.0f, 1) - aj::mean(r, {1, 2}, true);
  };
  auto cf = aj::compile(f);
  Runner r;
  for (std::int64_t b : {2, 3, 5, 7, 11, 13, 17, 5}) r.one(cf, f, Shape{8 * b, 3});
  INFO(cf.extents_note());
  INFO(cf.plan_note());
  CHECK(cf.counts().traces == 2);
  CHECK(cf.counts().unplanned >= 4);
  CHECK(r.planned_when_unplanned == 0);
}

TEST_CASE("compile renumber: the gradient of a concatenation of two arguments' pieces") {
  // The gradient slices each piece back out: [0, n) and [n, 2n) of the
  // [2n] product; n is x's extent and w's (the guard x * q makes them one).
  auto f = [](const Array& x, const Array& w) {
    auto [l, g] = aj::value_and_grad([&](const Array& q) {
      const Array y = aj::concatenate({x * q, aj::tanh(q)}, 0);
      return aj::sum(y * y * 0.5f);
    })(w);
    return std::vector<Array>{l, g};
  };
  auto cf = aj::compile(f);
  loss_and_gradient_at_lengths(cf, f, 120);
}

TEST_CASE("compile renumber: minibatch views from offset 0, then new batch sizes") {
  // Same-size batches of one dataset differ only in their offset (the first
  // is at 0): replays of one program; then the batch size changes at every
  // call: the kept plan at new numbers.
  auto f = [](const Array& x, const Array& w) { return aj::sum(aj::tanh(aj::matmul(x, w)), 1); };
  auto cf = aj::compile(f);
  const Array X = input({600, 6}, 200), w = input({6, 3}, 201);
  std::int64_t at = 0;
  auto batch = [&](std::int64_t rows) {
    const Array xb = aj::slice(X, 0, at, at + rows);
    at += rows;
    const Array got = cf(xb, w);  // first: f would leave a plan at these numbers
    Array want = f(xb, w);
    want.eval();
    INFO("rows " << rows << " at " << at - rows);
    CHECK(same_bits(vals(got), vals(want)));
  };
  for (int k = 0; k < 6; ++k) batch(16);
  INFO(cf.plan_note());
  CHECK(cf.counts().traces == 1);
  CHECK(cf.counts().replays == 5);
  CHECK(cf.counts().programs == 1);
  for (std::int64_t rows : {10, 11, 13, 17, 19, 23, 29, 31}) batch(rows);
  CHECK(cf.counts().traces == 2);
  CHECK(cf.counts().unplanned >= 6);
}

// The message of the aj::Error `run` throws; empty when it throws none.
template <class Fn>
std::string error_of(Fn run) {
  try {
    run();
  } catch (const aj::Error& e) {
    return e.what();
  }
  return {};
}

TEST_CASE("compile renumber: derived extents that leave their range, and a sum of extents equal to another by chance") {
  SUBCASE("a slice extent that would be negative in a product's operand is the function's own error") {
    auto f = [](const Array& a, const Array& b) {
      return aj::matmul(aj::slice(a, 1, 5, std::nullopt), aj::slice(b, 0, 5, std::nullopt));
    };
    auto cf = aj::compile(f);
    unsigned seed = 140;
    for (std::int64_t n : {8, 12, 16, 21, 27, 33}) {
      const Array a = input({4, n}, seed++), b = input({n, 2}, seed++);
      const Array got = cf(a, b);  // first: f would leave a plan at these numbers
      Array want = f(a, b);
      want.eval();
      CHECK(same_bits(vals(got), vals(want)));
    }
    CHECK(cf.counts().unplanned >= 1);
    const Array a = input({4, 3}, 150), b = input({3, 2}, 151);
    const std::string want = error_of([&] { f(a, b); });
    CHECK(want.find("slice") != std::string::npos);
    CHECK(error_of([&] { cf(a, b); }) == want);  // traced: the slice's own error, not a product of -2 columns
  }
  SUBCASE("a quotient of 1 squeezes as the uncompiled call does") {
    auto f = [](const Array& x) { return aj::squeeze(aj::reshape(x, {-1, 8})) * 2.0f; };
    auto cf = aj::compile(f);
    Runner r;
    for (std::int64_t n : {16, 24, 40, 56, 72, 8}) r.one(cf, f, Shape{n});
    const Array x = input({8}, 160);
    CHECK(cf(x).shape() == f(x).shape());
  }
  SUBCASE("an empty max is the function's own error") {
    auto f = [](const Array& x) { return aj::max(aj::slice(x, 0, 2, std::nullopt)); };
    auto cf = aj::compile(f);
    Runner r;
    for (std::int64_t n : {6, 9, 13, 17, 22}) r.one(cf, f, Shape{n});
    CHECK(cf.counts().unplanned >= 1);
    const Array x = input({2}, 170);
    const std::string want = error_of([&] { f(x); });
    CHECK_FALSE(want.empty());
    CHECK(error_of([&] { cf(x); }) == want);
  }
  SUBCASE("a concatenation's n + m that equalled another argument's extent at every plan") {
    // p = n + m at the first four calls: a plan may have relied on it; the
    // kept plan must not serve (20, 30, 4) as if it held.
    auto f = [](const Array& x, const Array& y, const Array& z) {
      return std::vector<Array>{aj::concatenate({x, y}, 0) * 2.0f, aj::exp(z)};
    };
    auto cf = aj::compile(f);
    unsigned seed = 180;
    for (const auto& [n, m, p] : {std::array<std::int64_t, 3>{3, 4, 7}, {5, 6, 11}, {8, 9, 17}, {10, 12, 22}, {13, 15, 28},
                                  {20, 30, 4}, {7, 2, 40}}) {
      const Array x = input({n}, seed++), y = input({m}, seed++), z = input({p}, seed++);
      std::vector<Array> want = f(x, y, z);
      aj::eval(want);
      const std::vector<Array> got = cf(x, y, z);
      INFO("n " << n << " m " << m << " p " << p);
      CHECK(same_bits(vals(got[0]), vals(want[0])));
      CHECK(same_bits(vals(got[1]), vals(want[1])));
    }
  }
}

}  // TEST_SUITE

TEST_SUITE("compile") {

TEST_CASE("compile renumber: scalar arguments at new extents replay at any value, unless simplified or folded") {
  // x * s + tanh(x) / c at lengths cycling through three values, s and c
  // new at every call: each length's first call after the two traces makes
  // the kept trace at its extents, every later one replays at its values.
  auto f = [](const Array& x, float s, float c) { return x * s + aj::tanh(x) / c; };
  unsigned seed = 400;
  float s = 0.5f;
  auto call = [&](auto& cf, std::int64_t n, float s, float c) {
    const Array x = input({n}, seed++);
    const Array got = cf(x, s, c);
    Array want = f(x, s, c);
    want.eval();
    INFO("n " << n << " s " << s << " c " << c);
    CHECK(same_bits(vals(got), vals(want)));
  };
  {
    auto cf = aj::compile(f);
    for (int round = 0; round < 3; ++round) {
      for (std::int64_t n : {7, 12, 30}) {
        s += 0.25f;  // a new scalar each call (not in the argument list: its order is unspecified)
        call(cf, n, s, 1.5f + s);
      }
    }
    CHECK(cf.counts().traces == 2);    // 7 and 12
    CHECK(cf.counts().replays == 4);   // 30 in round 2, all of round 3
  }
  // c is 1 at every call (the planner drops `/ 1`, so no kernel reads c):
  // the programs hold c at 1; a call with another c does not replay them.
  {
    auto cf = aj::compile(f);
    for (int round = 0; round < 3; ++round) {
      for (std::int64_t n : {7, 12, 30}) call(cf, n, s += 0.25f, 1.0f);
    }
    CHECK(cf.counts().replays == 4);
    for (std::int64_t n : {30, 7}) call(cf, n, s += 0.25f, 3.0f);
    CHECK(cf.counts().replays == 4);
  }
}

TEST_CASE("compile renumber: a scalar argument the graph computes with is not replayed at other values") {
  // sqrt of the scalar's constant is folded by the planner: the kernel reads
  // the folded value, which no binding can follow, so each new value runs the
  // kept trace again (and the results stay right).
  auto f = [](const Array& x, float s) { return x * aj::sqrt(aj::full({}, s)); };
  auto cf = aj::compile(f);
  unsigned seed = 500;
  float s = 1.0f;
  for (int k = 0; k < 8; ++k) {
    const std::int64_t n = k % 2 ? 9 : 17;
    const Array x = input({n}, seed++);
    s += 0.5f;
    const Array got = cf(x, s);
    Array want = f(x, s);
    want.eval();
    INFO("n " << n << " s " << s);
    CHECK(same_bits(vals(got), vals(want)));
  }
}

TEST_CASE("compile renumber: a scalar computed with in C++ traces each call and says why once") {
  // lr * (1 + t) reaches the kernel as one constant that is neither lr nor
  // t: no replay can follow it, so every call traces, and the note says so.
  auto f = [](const Array& x, float lr, float t) { return x * (lr * (1 + t)); };
  auto cf = aj::compile(f);
  const Array x = input({9}, 600);
  for (int k = 0; k < 4; ++k) {
    const float t = static_cast<float>(k);
    const Array got = cf(x, 0.1f, t);
    Array want = f(x, 0.1f, t);
    want.eval();
    CHECK(same_bits(vals(got), vals(want)));
  }
  CHECK(cf.counts().traces == 4);
  CHECK(cf.extents_note().find("calls with new values of the scalar arguments are traced") != std::string::npos);
  CHECK(cf.extents_note().find("lr * (1 + t)") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("compile") {

TEST_CASE("compile renumber: a learning-rate schedule over minibatches of changing sizes") {
  // lr = 0.1 / (1 + epoch), passed as it is: the two traces that checked the
  // template shared lr (one epoch), so the template pins it; the first call
  // of the next epoch is traced once, shows that lr only reaches kernels as
  // it is, and from then on every batch size and every lr replays.
  auto step = [](const Array& xb, const Array& w, float lr) {
    const Array g = aj::mean(xb * (aj::sum(xb * w, 1, true) - 1.0f), 0);
    return w - lr * g;
  };
  auto cf = aj::compile(step);
  const Array data = input({400, 8}, 700);
  Array w_c = input({8}, 701), w_p = w_c;
  const std::vector<std::int64_t> sizes = {64, 37, 64, 100, 23, 64, 48};
  for (int epoch = 0; epoch < 4; ++epoch) {
    const float lr = 0.1f / static_cast<float>(1 + epoch);
    const aj::detail::CompiledCounts before = cf.counts();
    std::int64_t at = 0;
    for (std::int64_t b : sizes) {
      const Array xb = aj::slice(data, 0, at, at + b);
      at += b;
      w_c = cf(xb, w_c, lr);
      w_p = step(xb, w_p, lr);
      w_p.eval();
      INFO("epoch " << epoch << " batch of " << b);
      REQUIRE(same_bits(vals(w_c), vals(w_p)));
    }
    INFO("epoch " << epoch << ": " << cf.extents_note() << cf.plan_note());
    if (epoch == 0) CHECK(cf.counts().traces == 2);
    if (epoch == 1) CHECK(cf.counts().traces - before.traces == 1);
    if (epoch >= 2) CHECK(cf.counts().traces == before.traces);
  }
  // What a user reads after the loop: no stale reason for a trace.
  CHECK(cf.extents_note().find("another value than in both traces") == std::string::npos);
  CHECK(cf.extents_note().find("is followed") != std::string::npos);
}

}  // TEST_SUITE

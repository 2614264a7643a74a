// aj::compile across extents (docs/extent-replays.md): after a second trace
// at other extents has checked the first, a call at new extents runs the kept
// trace made at its extents (no tracing), gives what the call gives, and
// what cannot follow the extents (an extent read in C++, a constant shape)
// is traced instead, never replayed wrong.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/compile_helpers.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;

using ajtest::input;
using ajtest::same_bits;
using ajtest::vals;

// Calls cf and f on arrays of each shape in `shapes` (one argument), checks
// the results bit for bit and returns how many calls traced.
template <class CF, class F>
std::uint64_t run_shapes(CF& cf, F f, const std::vector<Shape>& shapes, unsigned seed) {
  const std::uint64_t before = cf.counts().traces;
  for (const Shape& s : shapes) {
    const Array x = input(s, seed++);
    Array want = f(x), got = cf(x);
    want.eval();
    INFO("shape " << s.str());
    CHECK(same_bits(vals(got), vals(want)));
  }
  return cf.counts().traces - before;
}

}  // namespace

TEST_SUITE("compile") {

TEST_CASE("compile extents: mean's divisor follows the extent it counts") {
  auto f = [](const Array& x) { return x - aj::mean(x, 1, true) + aj::mean(x * x); };
  auto cf = aj::compile(f);
  CHECK(run_shapes(cf, f, {Shape{4, 6}, Shape{7, 9}, Shape{30, 11}, Shape{2, 129}, Shape{30, 11}}, 1) == 2);
  CHECK(cf.counts().new_extents == 2);
  CHECK(cf.counts().replays == 1);
  CHECK(cf.extents_note().empty());
}

TEST_CASE("compile extents: two arguments with independent extents; a matmul across the epilogue threshold") {
  // x: [batch, in], w: [in, out], b: [out]. The batch changes; at 1024 rows
  // the product runs its epilogue blockwise (exec/program.cpp), a decision
  // the plan at those extents makes again.
  auto f = [](const Array& x, const Array& w, const Array& b) { return aj::maximum(aj::matmul(x, w) + b, 0.0f); };
  auto cf = aj::compile(f);
  const Array w = input({24, 40}, 2), b = input({40}, 3);
  unsigned seed = 10;
  for (std::int64_t n : {3, 5, 1024, 17, 1024}) {
    const Array x = input({n, 24}, seed++);
    Array want = f(x, w, b);
    want.eval();
    CHECK(same_bits(vals(cf(x, w, b)), vals(want)));
  }
  CHECK(cf.counts().traces == 2);       // 3, then 5 (w and b keep theirs: pinned)
  CHECK(cf.counts().new_extents == 2);  // 1024, 17
  CHECK(cf.counts().replays == 1);
  // w with another width: its extents were pinned, so this traces.
  const Array w2 = input({24, 8}, 4), b2 = input({8}, 5), x = input({6, 24}, 6);
  Array want = f(x, w2, b2);
  CHECK(same_bits(vals(cf(x, w2, b2)), vals(want)));
  CHECK(cf.counts().traces == 3);
  CHECK(cf.extents_note().find("==") != std::string::npos);  // says which extent had to stay
}

TEST_CASE("compile extents: slices from the end, a concatenation and a flatten follow their extents") {
  auto f = [](const Array& x) {
    Array rolled = aj::concatenate({aj::slice(x, 0, 1, std::nullopt), aj::slice(x, 0, 0, 1)}, 0);
    Array last = aj::slice(x, 0, -1, std::nullopt);  // starts at n - 1
    return aj::reshape(rolled * 2.0f - last, {-1});
  };
  auto cf = aj::compile(f);
  CHECK(run_shapes(cf, f, {Shape{5, 3}, Shape{8, 4}, Shape{13, 6}, Shape{3, 7}, Shape{13, 6}}, 20) == 2);
  CHECK(cf.counts().new_extents == 2);
  INFO(cf.extents_note());
  CHECK(cf.extents_note().empty());
  // At 2 rows x[1:] has 1 row: a derived extent of 1 (or 0) is out of the
  // range both traces had (a squeeze or a broadcast decides otherwise
  // there), so the call is traced, as an argument extent of 1 would be.
  CHECK(run_shapes(cf, f, {Shape{2, 7}}, 25) == 1);
  CHECK(cf.extents_note().find("2 <= ") != std::string::npos);
}

TEST_CASE("compile extents: a function that reads an extent in C++ is traced at every new extent") {
  int calls = 0;
  auto f = [&calls](const Array& x) {
    ++calls;
    // A branch on the extent: only a trace sees it.
    return x.shape()[0] > 10 ? aj::exp(x) : aj::tanh(x);
  };
  auto cf = aj::compile(f);
  CHECK(run_shapes(cf, f, {Shape{4}, Shape{6}, Shape{40}, Shape{7}}, 30) == 4);
  CHECK(cf.counts().new_extents == 0);
  CHECK(cf.extents_note().find("read an extent") != std::string::npos);
}

TEST_CASE("compile extents: a reshape to a constant shape is never generalized") {
  // [4, 6] and [6, 4] both reshape to {4, 6}; a rule would take the first
  // axis for the argument's. The second trace shows it is not, so [3, 8]
  // traces too (its result is [4, 6] as well).
  auto f = [](const Array& x) { return aj::reshape(x, {4, 6}) + 1.0f; };
  auto cf = aj::compile(f);
  CHECK(run_shapes(cf, f, {Shape{4, 6}, Shape{6, 4}, Shape{3, 8}, Shape{8, 3}}, 40) == 4);
  CHECK(cf.counts().new_extents == 0);
  CHECK_FALSE(cf.extents_note().empty());
}

TEST_CASE("compile extents: a reshape whose -1 splits a changing extent; an extent that does not divide is the function's own error") {
  // [4 * n] to [n, 4]: n is the argument's extent divided by 4, a symbol of
  // its own (a quotient), checked to divide at every call.
  auto f = [](const Array& x) { return aj::sum(aj::exp(aj::reshape(x, {-1, 4})), 1) * 0.5f; };
  auto cf = aj::compile(f);
  CHECK(run_shapes(cf, f, {Shape{8}, Shape{20}, Shape{44}, Shape{12}, Shape{400}, Shape{20}}, 45) == 2);
  CHECK(cf.counts().new_extents == 3);
  CHECK(cf.extents_note().empty());
  const Array x = input({10}, 49);
  CHECK_THROWS_AS(f(x), aj::Error);
  CHECK_THROWS_AS(cf(x), aj::Error);  // traced: the reshape fails as uncompiled
  CHECK(cf.counts().new_extents == 3);
}

TEST_CASE("compile extents: extents the graph needs equal are checked; a mismatch is the function's own error") {
  auto f = [](const Array& x, const Array& y) { return x * y + 1.0f; };
  auto cf = aj::compile(f);
  for (std::int64_t n : {3, 9, 31}) {
    const Array x = input({n}, 50 + static_cast<unsigned>(n)), y = input({n}, 60 + static_cast<unsigned>(n));
    CHECK(same_bits(vals(cf(x, y)), vals(f(x, y))));
  }
  CHECK(cf.counts().new_extents == 1);
  // Extents that break x's and y's equality: traced, and the trace throws as
  // the uncompiled call does.
  const Array x = input({5}, 70), y = input({6}, 71);
  CHECK_THROWS_AS(f(x, y), aj::Error);
  CHECK_THROWS_AS(cf(x, y), aj::Error);
  CHECK(cf.counts().new_extents == 1);
}

TEST_CASE("compile extents: a pad's extent is its input's plus its widths, not what its consumer needs") {
  // pad(x) + y with y four longer than x at both traces: at a
  // call where they are not, the uncompiled call raises, and so must the
  // compiled one (the pad's output once took y's extent, padding more).
  // The sum is not returned: it is checked all the same.
  auto f = [](const Array& x, const Array& y) {
    const Array unused = aj::pad(x, {{1, 3}}, aj::PadMode::constant, -1.5) + y;
    (void)unused;
    return aj::tanh(x);
  };
  auto cf = aj::compile(f);
  for (std::int64_t n : {4, 7, 12}) {
    const Array x = input({n}, 80 + static_cast<unsigned>(n)), y = input({1, n + 4}, 90 + static_cast<unsigned>(n));
    CHECK(same_bits(vals(cf(x, y)), vals(f(x, y))));
  }
  CHECK(cf.counts().new_extents == 1);
  for (std::int64_t n : {9, 15}) {
    const Array x = input({n}, 100 + static_cast<unsigned>(n)), y = input({1, 2 * n - 1}, 110 + static_cast<unsigned>(n));
    CHECK_THROWS_AS(f(x, y), aj::Error);
    CHECK_THROWS_AS(cf(x, y), aj::Error);
  }
}

TEST_CASE("compile extents: slices given from the end take at new extents what aj::slice takes there") {
  // x[1::3] has one row at 2 and 4 rows, two at 5: added to x it broadcasts
  // at the first two and fails at 5, compiled or not. x[1:-3:-2] is empty
  // at 4 and 9 and takes one element at 3. A slice_add into an empty slice
  // still checks that the values broadcast to it.
  auto every_third = [](const Array& x) { return aj::slice(x, 0, 1, std::nullopt, 3) + x; };
  auto backwards = [](const Array& x) { return aj::slice(x, 0, 1, -3, -2) + 1.0f; };
  auto empty_add = [](const Array& x, const Array& v) {
    return aj::slice_add(x, {aj::Slice(0, 0), aj::Slice(3, std::nullopt)}, v);
  };
  auto c1 = aj::compile(every_third);
  auto c2 = aj::compile(backwards);
  auto c3 = aj::compile(empty_add);
  unsigned seed = 120;
  for (std::int64_t n : {2, 4}) {
    const Array x = input({n, 3}, seed++);
    CHECK(same_bits(vals(c1(x)), vals(every_third(x))));
  }
  for (std::int64_t n : {5, 8}) {
    const Array x = input({n, 3}, seed++);
    CHECK_THROWS_AS(every_third(x), aj::Error);
    CHECK_THROWS_AS(c1(x), aj::Error);
  }
  for (std::int64_t n : {4, 9, 3, 6}) {
    const Array x = input({n}, seed++);
    const Array want = backwards(x), got = c2(x);
    INFO("n " << n);
    CHECK(got.shape() == want.shape());
    CHECK(same_bits(vals(got), vals(want)));
  }
  for (std::int64_t n : {6, 9}) {
    const Array x = input({0, n}, seed++), v = input({0, n - 3}, seed++);
    CHECK(same_bits(vals(c3(x, v)), vals(empty_add(x, v))));
  }
  const Array x = input({0, 17}, seed++), v = input({0, 8}, seed++);
  CHECK_THROWS_AS(empty_add(x, v), aj::Error);
  CHECK_THROWS_AS(c3(x, v), aj::Error);
}

TEST_CASE("compile extents: a training step with a changing scalar and a changing batch, donated in place") {
  auto step = [](const Array& x, const Array& y, Array w, float lr) {
    auto [l, g] = aj::value_and_grad([&](const Array& q) {
      const Array z = aj::matmul(x, q);
      return aj::mean((z - y) * (z - y));
    })(w);
    return std::vector<Array>{l, w - lr * g};
  };
  auto cstep = aj::compile(step);
  Array w = input({6, 2}, 80), w2 = w;
  unsigned seed = 81;
  const aj::Stats s0 = aj::stats();
  std::uint64_t inplace_at_new = 0;
  for (int t = 0; t < 9; ++t) {
    const std::int64_t batch = 4 + 3 * t;  // every step a new batch size
    const float lr = 0.1f / static_cast<float>(1 + t);
    const Array x = input({batch, 6}, seed++), y = input({batch, 2}, seed++);
    const aj::Stats before = aj::stats();
    std::vector<Array> r = cstep(x, y, std::move(w), lr);
    const aj::Stats after = aj::stats();
    if (t >= 2) inplace_at_new += after.inplace_reuses - before.inplace_reuses;
    std::vector<Array> e = step(x, y, w2, lr);
    aj::eval(e);
    CHECK(same_bits(vals(r[0]), vals(e[0])));
    CHECK(same_bits(vals(r[1]), vals(e[1])));
    w = r[1], w2 = e[1];
  }
  INFO(cstep.extents_note());
  CHECK(cstep.counts().traces == 2);
  CHECK(cstep.counts().new_extents == 7);
  CHECK(aj::stats().compiled_new_extents - s0.compiled_new_extents == 7);
  CHECK(inplace_at_new >= 7);  // the donated w written in place at each new batch
}

TEST_CASE("compile extents: scalar arguments the two traces shared stay fixed; one computed with is refused") {
  // (Regressions: these replayed the first value at new extents.)
  auto branch = [](const Array& x, bool train) { return train ? x * 2.0f : x + 1.0f; };
  auto cb = aj::compile(branch);
  auto top = [](const Array& x, int k) { return aj::topk(x, k).values; };
  auto ct = aj::compile(top);
  auto computed = [](const Array& x, int t) { return x * static_cast<float>(t + 1); };
  auto cc = aj::compile(computed);
  unsigned seed = 200;
  struct Call {
    std::int64_t n;
    int k;
  };
  for (const Call& c : {Call{4, 2}, Call{5, 2}, Call{6, 3}, Call{7, 2}, Call{9, 4}}) {
    const Array x = input({3, c.n}, seed++);
    CHECK(same_bits(vals(cb(x, c.k == 2)), vals(branch(x, c.k == 2))));
    CHECK(same_bits(vals(ct(x, c.k)), vals(top(x, c.k))));
    CHECK(same_bits(vals(cc(x, c.k + static_cast<int>(c.n))), vals(computed(x, c.k + static_cast<int>(c.n)))));
  }
  CHECK(cb.counts().new_extents == 1);  // n = 7 (train again): the others traced
  CHECK(ct.counts().new_extents == 1);
  CHECK(cc.counts().new_extents == 0);  // t + 1 is no argument as it is
  CHECK(cc.extents_note().find("scalar") != std::string::npos);
}

TEST_CASE("compile extents: extents the template relates are checked before anything runs") {
  // (Regressions: a mismatch at new extents read out of bounds.) Each call
  // that breaks a relation traces, and throws what the function throws.
  auto sliced = [](const Array& x, const Array& y) { return y + aj::slice(x, 0, 1, std::nullopt); };
  auto cs = aj::compile(sliced);
  auto top = [](const Array& x) { return aj::topk(x, 3).values; };
  auto ct = aj::compile(top);
  for (std::int64_t n : {5, 8, 13}) {
    const Array x = input({n}, 300 + static_cast<unsigned>(n)), y = input({n - 1}, 310 + static_cast<unsigned>(n));
    CHECK(same_bits(vals(cs(x, y)), vals(sliced(x, y))));
    const Array z = input({4, n}, 320 + static_cast<unsigned>(n));
    CHECK(same_bits(vals(ct(z)), vals(top(z))));
  }
  CHECK(cs.counts().new_extents == 1);
  CHECK(ct.counts().new_extents == 1);
  const Array x = input({9}, 330), y = input({9}, 331);  // y should have 8
  CHECK_THROWS_WITH_AS(sliced(x, y), doctest::Contains("cannot be broadcast"), aj::Error);
  CHECK_THROWS_WITH_AS(cs(x, y), doctest::Contains("cannot be broadcast"), aj::Error);
  const Array z = input({4, 2}, 332);  // k = 3 > 2
  CHECK_THROWS_WITH_AS(top(z), doctest::Contains("outside"), aj::Error);
  CHECK_THROWS_WITH_AS(ct(z), doctest::Contains("outside"), aj::Error);
  CHECK(cs.counts().new_extents == 1);
  CHECK(ct.counts().new_extents == 1);
}

TEST_CASE("compile extents: an f16 mean whose count rounds alike in both traces, softmax, log_softmax") {
  // 4096 and 4098 rows are both 4096 in f16; the third call (20 rows) must
  // divide by 20.
  auto m = [](const Array& x) { return aj::mean(x, 0); };
  auto cm = aj::compile(m);
  for (std::int64_t n : {4096, 4098, 20}) {
    const Array x = input({n, 3}, 400 + static_cast<unsigned>(n), DType::f16);
    CHECK(same_bits(vals(cm(x)), vals(m(x))));
  }
  CHECK(cm.counts().new_extents == 1);
  auto sm = [](const Array& x) { return aj::softmax(x, -1) + aj::log_softmax(x, 0); };
  auto csm = aj::compile(sm);
  CHECK(run_shapes(csm, sm, {Shape{3, 5}, Shape{6, 7}, Shape{11, 2}, Shape{2, 40}}, 410) == 2);
  CHECK(csm.counts().new_extents == 2);
  CHECK(csm.extents_note().empty());
}

TEST_CASE("compile extents: threads calling one compiled function at their own new extents") {
  auto f = [](const Array& x, const Array& y) { return aj::sum(x * y + aj::exp(x), 0) - aj::mean(y, 1); };
  auto cf = aj::compile(f);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 12; ++k) {
        const std::int64_t n = 8 + 3 * t + 13 * (k % 4);  // each thread its own extents, some repeated
        const Array x = input({n, n}, 500 + static_cast<unsigned>(t * 31 + k)), y = input({n, n}, 600 + static_cast<unsigned>(k));
        Array want = f(x, y);
        want.eval();
        bad += !same_bits(vals(cf(x, y)), vals(want));
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  CHECK(cf.counts().new_extents > 0);
  CHECK(cf.counts().traces + cf.counts().new_extents + cf.counts().replays == 48);
}

TEST_CASE("compile extents: minibatch views of one dataset, a short last batch, another epoch") {
  // Batches are views of X at other offsets: the program sees each as a
  // buffer of its own, so the first is traced and the others of its extents
  // replay it; the short last one traces again (and checks the template);
  // the next epoch replays.
  auto f = [](const Array& x, const Array& w) { return aj::sum(aj::tanh(aj::matmul(x, w)), 1); };
  auto cf = aj::compile(f);
  const Array X = input({250, 6}, 90), w = input({6, 3}, 91);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (std::int64_t s = 0; s < 250; s += 64) {
      const Array xb = aj::slice(X, 0, s, std::min<std::int64_t>(250, s + 64));
      Array want = f(xb, w);
      want.eval();
      CHECK(same_bits(vals(cf(xb, w)), vals(want)));
    }
  }
  CHECK(cf.counts().traces == 2);       // the first batch; the last (58 rows)
  CHECK(cf.counts().new_extents == 0);
  CHECK(cf.counts().replays == 6);      // batches 2 and 3, then the second epoch
  CHECK(cf.counts().programs == 2);
}

TEST_CASE("compile extents: windows of one buffer at any offset replay one program") {
  // Row blocks, column blocks (strided) and a returned window, starting away
  // from offset 0: the first call is traced (its program reads the window at
  // its offset), the second is made as a buffer of its own, later ones replay
  // it; every result as the uncompiled call's.
  auto f = [](const Array& x, const Array& b) { return std::vector<Array>{aj::exp(x) * 2.0f + b, x}; };
  auto cf = aj::compile(f);
  const Array X = input({40, 12}, 300), b = input({3}, 301);
  auto check = [&](const Array& xb) {
    const std::vector<Array> got = cf(xb, b);
    std::vector<Array> want = f(xb, b);
    aj::eval(want);
    CHECK(same_bits(vals(got[0]), vals(want[0])));
    CHECK(same_bits(vals(got[1]), vals(want[1])));
  };
  for (std::int64_t r : {5, 9, 20, 0, 33}) check(aj::slice(aj::slice(X, 0, r, r + 7), 1, 4, 7));
  CHECK(cf.counts().traces == 1);
  CHECK(cf.counts().replays == 3);
  CHECK(cf.counts().new_extents == 1);  // the window as a buffer of its own
  // The dataset changed in place of another (the same windows of another
  // buffer) and a window reaching its buffer's last element.
  const Array Y = input({40, 12}, 302);
  for (std::int64_t r : {33, 2}) check(aj::slice(aj::slice(Y, 0, r, r + 7), 1, 9, 12));
  CHECK(cf.counts().traces == 1);
  CHECK(cf.counts().replays == 5);
}

TEST_CASE("compile extents: a view argument at new extents reads through its layout") {
  // Transposed and offset views as arguments: the plan made at new extents
  // is made for the arguments' own strides.
  auto f = [](const Array& x) { return aj::exp(x) * 2.0f + aj::sum(x, 0, true); };
  auto cf = aj::compile(f);
  unsigned seed = 100;
  for (std::int64_t n : {4, 7, 12, 31}) {
    // Each [n, n + 1]: a transpose, rows 2 .. n + 1 of a taller array, a plain one.
    const Array views[] = {aj::transpose(input({n + 1, n}, seed)), aj::slice(input({n + 3, n + 1}, seed + 1), 0, 2, n + 2),
                           input({n, n + 1}, seed + 2)};
    seed += 3;
    for (const Array& v : views) {
      Array want = f(v);
      want.eval();
      CHECK(same_bits(vals(cf(v)), vals(want)));
    }
  }
  CHECK(cf.counts().traces == 2);         // the first call, and the first at 7 (checks the template)
  CHECK(cf.counts().new_extents == 10);  // every other call
}

}  // TEST_SUITE

// Generators in compiled kernels (iota, linspace, eye): the host JIT inlines
// semantics.hpp's generate_value from the bitcode, so the loop is index
// arithmetic the vectorizer widens instead of a helper call per element.
// Every dtype, integral and fractional steps, values that saturate or wrap
// when converted, each alone and fused with arithmetic: bit for bit what the
// reference interpreter and the kernel interpreter give, on 1 and 3 threads.
// And the boundary idioms they serve (issue 33): heat steps written with
// slice_update, pads of every mode, rolls and arange masks, one kernel each.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/jit.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/api/executor.hpp"

namespace {

using aj::Array;
using aj::DType;

// The bytes of a (as f64 for floats, i64 for integers, bool as 0/1).
std::vector<double> bits_of(const Array& a) {
  std::vector<double> out;
  if (a.dtype() == DType::bool_ || a.dtype() == DType::i32 || a.dtype() == DType::i64) {
    for (std::int64_t v : a.to_vector<std::int64_t>()) {
      double d;
      std::memcpy(&d, &v, sizeof d);
      out.push_back(d);
    }
  } else {
    out = a.to_vector<double>();  // f16, bf16 and f32 widen exactly
  }
  return out;
}

bool same(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
}

void check(const std::string& what, const std::function<Array()>& make) {
  std::vector<double> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = bits_of(make());
  }
  for (bool jit : {true, false}) {
    aj::jit::set_enabled(jit);
    for (int threads : {1, 3}) {
      aj::jit::set_num_threads(threads);
      INFO(what << (jit ? " (JIT" : " (kernel interpreter") << ", " << threads << " threads)");
      CHECK(same(bits_of(make()), want));
    }
  }
  aj::jit::set_enabled(true);
  aj::jit::set_num_threads(0);
}

}  // namespace

TEST_CASE("generators in kernels: iota, linspace and eye of every dtype, bit for bit the reference interpreter's") {
  const DType dtypes[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64, DType::f16, DType::bf16};
  struct Range {
    double start, stop, step;
  };
  // Integral steps; fractional ones (integers truncate each value); values
  // past i32's range (saturate) and f16's (infinity); a negative step.
  const Range ranges[] = {{0, 1000, 1}, {-7, 993, 3}, {0.25, 300.25, 0.75}, {-3.5, 250, 1.25},
                          {2147483000.0, 2147484700.0, 1.5}, {100, -900, -2}, {65000, 66000, 7}};
  for (DType t : dtypes) {
    const std::string name = aj::dtype_name(t);
    for (const Range& r : ranges) {
      if (t == DType::bool_) break;  // (arange makes no bool arrays)
      const std::string what = "arange(" + std::to_string(r.start) + ", " + std::to_string(r.stop) + ", " +
                               std::to_string(r.step) + ") " + name;
      check(what, [&] { return aj::arange(r.start, r.stop, r.step, t); });
      check(what + " fused", [&] {
        const Array a = aj::arange(r.start, r.stop, r.step, t);
        return (a == a) && (aj::arange(r.start, r.stop, r.step, DType::f64) > 17.0);
      });
    }
    for (std::int64_t num : {1, 2, 7, 1001}) {
      if (t == DType::bool_) break;  // (nor linspace)
      check("linspace " + std::to_string(num) + " " + name, [&] { return aj::linspace(-3.25, 1e3 + 0.1, num, t); });
    }
    check("eye 37 x 53, k = 5, " + name, [&] { return aj::eye(37, 53, 5, t); });
    check("eye 64, k = -9, " + name, [&] { return aj::eye(64, std::nullopt, -9, t); });
  }
  // A mask from arange fused into a where: the boundary idiom.
  const Array u = aj::random::uniform({4099});
  u.eval();
  check("where(arange == 0 or arange == n - 1)", [&] {
    const Array i = aj::arange(4099);
    return aj::where((i == 0) || (i == 4098), 0.0f, u * 0.5f);
  });
  check("arange(n) as f32 times u", [&] { return aj::arange(4099, DType::f32) * u; });
}

TEST_CASE("boundary idioms: a heat step with each idiom is one kernel, bit for bit the reference interpreter's") {
  // The 1-D step u + k (left + right - 2u) written with slice_update, a
  // constant pad and a mask, an edge pad and an arange mask, a roll and an
  // arange mask, and a periodic roll; the 2-D step with slice_update and with
  // an edge pad on both axes. Every one is one kernel (the masks split into
  // intervals, edge pads as pads of broadcast edges) and gives what the
  // reference interpreter gives.
  const std::int64_t n = 4099, m = 67;
  const Array u = aj::random::uniform({n});
  const Array v = aj::random::uniform({m, m});
  aj::eval({u, v});
  const float k = 0.1f;
  using aj::Slice;
  const std::vector<std::pair<std::string, std::function<Array()>>> steps = {
      {"slice_update", [&] {
         const Array in = aj::slice(u, 0, 1, n - 1);
         return aj::slice_update(u, {Slice(1, n - 1)}, in + k * (aj::slice(u, 0, 0, n - 2) + aj::slice(u, 0, 2, n) - 2.0f * in));
       }},
      {"constant pad and a mask", [&] {
         const Array in = aj::slice(u, 0, 1, n - 1);
         const Array lap = aj::slice(u, 0, 0, n - 2) + aj::slice(u, 0, 2, n) - 2.0f * in;
         const Array mask = aj::pad(aj::ones({n - 2}, DType::bool_), {{1, 1}}, aj::PadMode::constant, false);
         return aj::where(mask, aj::pad(in + k * lap, {{1, 1}}), u);
       }},
      {"edge pad and an arange mask", [&] {
         const Array p = aj::pad(u, {{1, 1}}, aj::PadMode::edge);
         const Array i = aj::arange(n);
         return aj::where((i == 0) || (i == n - 1), u, u + k * (aj::slice(p, 0, 0, n) + aj::slice(p, 0, 2, n + 2) - 2.0f * u));
       }},
      {"reflect pad", [&] {
         const Array p = aj::pad(u, {{2, 3}}, aj::PadMode::reflect);
         return aj::slice(p, 0, 0, n) + aj::slice(p, 0, 5, n + 5) - 2.0f * u;
       }},
      {"roll and an arange mask", [&] {
         const Array i = aj::arange(n);
         return aj::where((i == 0) || (i == n - 1), u, u + k * (aj::roll(u, 1) + aj::roll(u, -1) - 2.0f * u));
       }},
      {"periodic roll", [&] { return u + k * (aj::roll(u, 1) + aj::roll(u, -1) - 2.0f * u); }},
      {"2-D slice_update", [&] {
         auto at = [&](std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
           return aj::slice(v, {Slice(r0, r1), Slice(c0, c1)});
         };
         const Array in = at(1, m - 1, 1, m - 1);
         const Array lap = at(0, m - 2, 1, m - 1) + at(2, m, 1, m - 1) + at(1, m - 1, 0, m - 2) + at(1, m - 1, 2, m) - 4.0f * in;
         return aj::slice_update(v, {Slice(1, m - 1), Slice(1, m - 1)}, in + k * lap);
       }},
      {"2-D edge pad", [&] {
         const Array p = aj::pad(v, {{1, 1}, {1, 1}}, aj::PadMode::edge);
         auto at = [&](std::int64_t r0, std::int64_t c0) { return aj::slice(p, {Slice(r0, r0 + m), Slice(c0, c0 + m)}); };
         return v + k * (at(0, 1) + at(2, 1) + at(1, 0) + at(1, 2) - 4.0f * v);
       }},
      {"2-D edge pad and row and column masks from arange", [&] {
         const Array p = aj::pad(v, {{1, 1}, {1, 1}}, aj::PadMode::edge);
         auto at = [&](std::int64_t r0, std::int64_t c0) { return aj::slice(p, {Slice(r0, r0 + m), Slice(c0, c0 + m)}); };
         const Array r = aj::reshape(aj::arange(m), {m, 1}), c = aj::arange(m);
         const Array walls = (r == 0) | (r >= m - 1) | (c < 1) | (c == m - 1);
         return aj::where(walls, v, v + k * (at(0, 1) + at(2, 1) + at(1, 0) + at(1, 2) - 4.0f * v));
       }},
  };
  for (const auto& [name, step] : steps) {
    INFO(name);
    std::vector<double> want;
    {
      aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
      want = bits_of(step());
    }
    const Array got = step();
    aj::reset_stats();
    got.eval();
    CHECK(aj::stats().kernels_launched == 1);
    CHECK(same(bits_of(got), want));
  }
}

TEST_CASE("iota comparisons split the loop: every op, either side, views, i32 and i64, bit for bit the reference") {
  // `arange == c` and its kin are runs of the segment the host JIT computes
  // from the iota's start and step (jit/llvm/codegen.cpp, iota_runs): each
  // interval runs with the mask constant. Every comparison, the scalar on
  // either side, values inside, at the ends and outside the iota's, steps
  // of either sign, the iota read reversed, strided and broadcast along
  // either axis, fused with a where; values near 2^60; and iotas whose
  // values are not exact integer arithmetic (a start past 9e15, an i32 iota
  // that wraps), which keep the per-point masks.
  std::mt19937_64 rng(20261201);
  const Array y = aj::random::uniform({13, 31});
  y.eval();
  using Cmp = Array (*)(const aj::Operand&, const aj::Operand&);
  const std::vector<std::pair<const char*, Cmp>> ops = {
      {"==", [](const aj::Operand& a, const aj::Operand& b) { return a == b; }},
      {"!=", [](const aj::Operand& a, const aj::Operand& b) { return a != b; }},
      {"<", [](const aj::Operand& a, const aj::Operand& b) { return a < b; }},
      {"<=", [](const aj::Operand& a, const aj::Operand& b) { return a <= b; }},
      {">", [](const aj::Operand& a, const aj::Operand& b) { return a > b; }},
      {">=", [](const aj::Operand& a, const aj::Operand& b) { return a >= b; }}};
  struct Iota {
    double start, step;
    DType t;
  };
  const std::vector<Iota> iotas = {{0, 1, DType::i64}, {5, 3, DType::i64}, {40, -7, DType::i64}, {-11, 2, DType::i32},
                                   {3, -1, DType::i32}, {-5e15, 8.9e15, DType::i64}, {1e16, 1, DType::i64}, {2147483600.0, 1, DType::i32}};
  for (const Iota& io : iotas) {
    const double stop = io.start + io.step * 97;
    // Traced afresh by each call (a held iota would be stored by the
    // reference run, and the JIT would then load it).
    auto iota = [&] { return aj::arange(io.start, stop, io.step, io.t); };
    const std::int64_t len = iota().shape()[0];  // 97, or near it where doubles round (a start of 1e16)
    REQUIRE(len >= 40);
    const Array x = aj::random::uniform({len});
    x.eval();
    const double last = io.start + io.step * static_cast<double>(len - 1);
    for (const auto& [name, cmp] : ops) {
      std::vector<double> cs = {io.start, last, io.start + io.step * 40, io.start - io.step, last + io.step,
                                std::min(io.start, last) - 1000};
      cs.push_back(io.start + io.step * static_cast<double>(rng() % static_cast<std::uint64_t>(len)) + (io.step > 1 ? 1 : 0));  // between two values
      for (double cd : cs) {
        if (io.t == DType::i32) cd = std::clamp(cd, -2147483648.0, 2147483647.0);  // a scalar must fit the dtype
        const auto c = static_cast<std::int64_t>(cd);
        const std::string what = std::string("arange(") + std::to_string(io.start) + ", step " + std::to_string(io.step) +
                                 ", " + aj::dtype_name(io.t) + ") " + name + " " + std::to_string(c);
        check(what, [&] { return cmp(iota(), c); });
        check(what + ", scalar on the left", [&] { return cmp(c, iota()); });
        check(what + ", reversed, in a where", [&] { return aj::where(cmp(aj::flip(iota()), c), x, x * 2.0f); });
        check(what + ", every third", [&] { return cmp(aj::slice(iota(), 0, 1, len, 3), c); });
      }
      // 2-D: the iota along the rows (constant over a row) and along the
      // columns, and a comparison of the two (the diagonal, not a run).
      auto r = [&] { return aj::reshape(aj::slice(iota(), 0, 0, 13), {13, 1}); };
      auto cl = [&] { return aj::slice(iota(), 0, 0, 31); };
      const auto c = static_cast<std::int64_t>(std::min(io.start + io.step * 5, 2147483647.0));
      check(std::string("rows and columns ") + name, [&] { return aj::where(cmp(r(), c) || cmp(cl(), c), y, -y); });
      check(std::string("rows against columns ") + name, [&] { return cmp(r(), cl()); });
    }
  }
}

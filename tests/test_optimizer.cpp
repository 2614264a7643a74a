// The graph optimizer: fusion into kernels, in-place donation, buffer plans,
// simplification. Every result is compared with the reference interpreter on
// an identical, freshly traced graph (bit for bit: the kernel interpreter uses
// the reference's scalar functions and its summation order), and the figures
// are asserted on aj::stats() (counts are deterministic).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/explain.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "core/api/trace.hpp"
#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"
#include "opt/passes/simplify.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::detail::Executor;
using aj::detail::ExecutorScope;

std::vector<double> random_doubles(std::size_t n, unsigned seed) {
  return ajtest::random_in<double>(n, seed, -2.0, 2.0);
}

// Build with `make` twice: once evaluated by the reference interpreter, once
// by the optimizer; the values must agree exactly.
template <class T>
void check_same(const std::function<std::vector<Array>()>& make) {
  std::vector<Array> want;
  {
    ExecutorScope ref(Executor::reference);
    want = make();
    aj::eval(want);
  }
  // Exactly through the kernel interpreter; through the host JIT (the default
  // path) within a small relative tolerance, since it may reassociate float
  // sums and computes transcendentals with SLEEF (docs/semantics.md).
  for (bool jit : {false, true}) {
    const bool saved = aj::jit::enabled();
    aj::jit::set_enabled(jit);
    std::vector<Array> got = make();
    aj::eval(got);
    aj::jit::set_enabled(saved);
    REQUIRE(got.size() == want.size());
    const double tol = !jit || !std::is_floating_point_v<T> ? 0.0 : sizeof(T) == 4 ? 1e-4 : 1e-10;
    for (std::size_t i = 0; i < got.size(); ++i) {
      auto a = got[i].to_vector<T>(), b = want[i].to_vector<T>();
      REQUIRE(a.size() == b.size());
      for (std::size_t k = 0; k < a.size(); ++k) {
        const double x = static_cast<double>(a[k]), y = static_cast<double>(b[k]);
        if (std::isnan(y)) CHECK(std::isnan(x));
        else if (tol == 0.0) CHECK(a[k] == b[k]);
        else CHECK(std::fabs(x - y) <= tol * (1.0 + std::fabs(y)));
      }
    }
  }
}

std::uint64_t allocations() { return aj::stats().system_allocs + aj::stats().pool_hits; }

std::string kernel_hash(const std::string& explain) {
  auto at = explain.find(" hash ");
  return at == std::string::npos ? "" : explain.substr(at + 6, 16);
}


}  // namespace

TEST_SUITE("optimizer") {

TEST_CASE("the seed example is one kernel and one n-element buffer, then no system allocations") {
  const std::int64_t n = 300;
  Array x = aj::from_vector(random_doubles(static_cast<std::size_t>(n * n), 1), {n, n});
  auto seed = [&] {
    Array a = x + 2;
    Array b = aj::sum(a, 1);
    b = b * 3;
    b = b + 0;
    return b;
  };
  check_same<double>([&] { return std::vector<Array>{seed()}; });

  Array b = seed();
  CHECK(aj::explain(b).find("plan: 1 steps, 1 kernels") != std::string::npos);
  aj::reset_stats();
  const auto live0 = aj::stats().live_bytes;
  b.eval();
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(allocations() == 1);  // the n-element result; the n x n intermediate never exists
  CHECK(aj::stats().live_bytes - live0 == static_cast<std::uint64_t>(n) * 8);
  CHECK(aj::stats().peak_live_bytes - aj::stats().live_bytes == 0);

  aj::reset_stats();
  for (int i = 0; i < 100; ++i) {
    Array r = seed();
    r.eval();
  }
  CHECK(aj::stats().kernels_launched == 100);
  CHECK(aj::stats().system_allocs == 0);
  CHECK(aj::stats().pool_hits == 100);
}

TEST_CASE("the seed example with ones folds to a fill: no n x n work") {
  const std::int64_t n = 1000;
  auto seed = [&] {
    Array a = aj::ones({n, n}, DType::i64);
    a = a + 2;
    Array b = aj::sum(a, 1);
    b = b * 3;
    b = b + 0;
    return b;
  };
  check_same<std::int64_t>([&] { return std::vector<Array>{seed()}; });
  Array b = seed();
  const std::string plan = aj::explain(b);
  CHECK(plan.find("kernel k0 over []") != std::string::npos);  // a scalar: 9n
  CHECK(plan.find("[1000, 1000]") == std::string::npos);       // no n x n anything
  aj::reset_stats();
  b.eval();
  CHECK(aj::stats().kernels_launched == 1);       // one rank-0 constant kernel
  CHECK(aj::stats().bytes_allocated <= 64);       // one scalar, broadcast as a view
  CHECK(allocations() == 1);
  auto v = b.to_vector<std::int64_t>();
  CHECK(v.size() == static_cast<std::size_t>(n));
  CHECK(v[0] == 9 * n);
  CHECK(v[static_cast<std::size_t>(n - 1)] == 9 * n);
}

TEST_CASE("an out-of-place Adam step is one kernel updating p, m and v in place") {
  const std::int64_t n = 4096;
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  auto init = [&](unsigned seed) {
    auto d = random_doubles(static_cast<std::size_t>(n), seed);
    std::vector<float> f(d.begin(), d.end());
    return f;
  };
  auto vpos = init(3);
  for (auto& e : vpos) e = std::fabs(e);
  auto run = [&](Executor e, int steps, std::vector<std::string>* hashes, bool measure) {
    ExecutorScope scope(e);
    Array p = aj::from_vector(init(1)), m = aj::from_vector(init(2)), v = aj::from_vector(vpos);
    Array g = aj::from_vector(init(4));
    for (int s = 0; s < steps; ++s) {
      const double lr = 0.01 / (1 + s);  // changes every step: must not change the kernel
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      p = p - lr * m / (aj::sqrt(v) + eps);
      if (hashes) hashes->push_back(kernel_hash(aj::explain({p, m, v})));
      if (measure) aj::reset_stats();
      aj::eval({p, m, v});
      if (measure) {
        CHECK(aj::stats().kernels_launched == 1);
        CHECK(aj::stats().inplace_reuses == 3);
        CHECK(allocations() == 0);
      }
    }
    return std::vector<std::vector<float>>{p.to_vector<float>(), m.to_vector<float>(), v.to_vector<float>()};
  };
  std::vector<std::string> hashes;
  auto got = run(Executor::optimized, 5, &hashes, true);
  auto want = run(Executor::reference, 5, nullptr, false);
  CHECK(got == want);
  REQUIRE(hashes.size() == 5);
  CHECK(!hashes[0].empty());
  for (auto& h : hashes) CHECK(h == hashes[0]);
}

TEST_CASE("a 20-op elementwise chain runs in one kernel with peak live bytes <= input + output") {
  const std::int64_t n = 12'500'000;  // 100 MB of f64
  Array x = aj::from_vector(random_doubles(static_cast<std::size_t>(n), 5), {n});
  auto chain = [](Array y) {
    for (int i = 0; i < 20; ++i) {
      switch (i % 4) {
        case 0: y = y * 1.0001; break;
        case 1: y = y + 0.5; break;
        case 2: y = aj::abs(y); break;
        default: y = aj::maximum(y, -1.0); break;
      }
    }
    return y;
  };
  {  // the values, on a smaller input (the reference makes a buffer per op)
    Array small = aj::from_vector(random_doubles(100'000, 5), {100'000});
    check_same<double>([&] { return std::vector<Array>{chain(small)}; });
  }
  const auto bytes = static_cast<std::uint64_t>(n) * 8;
  Array y = chain(x);
  aj::reset_stats();
  const auto live0 = aj::stats().live_bytes;  // includes the input
  y.eval();
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(aj::stats().peak_live_bytes <= live0 + bytes);

  // With the input's handle given up, the chain runs in the input's buffer.
  Array z = aj::from_vector(random_doubles(static_cast<std::size_t>(n), 6), {n});
  Array w = chain(std::move(z));
  aj::reset_stats();
  const auto live1 = aj::stats().live_bytes;
  w.eval();
  CHECK(aj::stats().inplace_reuses == 1);
  CHECK(allocations() == 0);
  CHECK(aj::stats().peak_live_bytes == live1);
}

TEST_CASE("two reductions of one shared producer: the kernel count the work rule predicts") {
  const std::int64_t r = 64, c = 48;
  Array x = aj::from_vector(random_doubles(static_cast<std::size_t>(r * c), 7), {r, c});
  // Same axes: one loop computes both reductions; exp(x) never exists.
  check_same<double>([&] {
    Array e = aj::exp(x);
    return std::vector<Array>{aj::sum(e, 1), aj::max(e, 1)};
  });
  {
    Array e = aj::exp(x);
    Array s1 = aj::sum(e, 1), s2 = aj::max(e, 1);
    e = Array();  // nobody holds exp(x): it is never stored
    aj::reset_stats();
    aj::eval({s1, s2});
    CHECK(aj::stats().kernels_launched == 1);
    CHECK(allocations() == 2);
  }
  {  // held, exp(x) is one more output of the same loop
    Array e = aj::exp(x);
    Array s1 = aj::sum(e, 1), s2 = aj::max(e, 1);
    aj::reset_stats();
    aj::eval({s1, s2});
    CHECK(aj::stats().kernels_launched == 1);
    CHECK(allocations() == 3);
    CHECK(e.is_evaluated());
  }
  // Other axes, cheap producer: recomputing x*2+1 in both kernels would do
  // its arithmetic twice (the work rule), so the first kernel also stores it
  // and the second loads it.
  check_same<double>([&] {
    Array e = x * 2 + 1;
    return std::vector<Array>{aj::sum(e, 0), aj::sum(e, 1)};
  });
  {
    Array e = x * 2 + 1;
    Array s0 = aj::sum(e, 0), s1 = aj::sum(e, 1);
    e = Array();
    aj::reset_stats();
    aj::eval({s0, s1});
    CHECK(aj::stats().kernels_launched == 2);
    CHECK(allocations() == 3);
    CHECK(aj::stats().values_materialized == 1);
  }
  {  // x * 2 + 1 traced twice is two producers (scalars are not merged by
     // value, graph.cpp): each reduction computes its own, once.
    Array s0 = aj::sum(x * 2 + 1, 0), s1 = aj::sum(x * 2 + 1, 1);
    aj::reset_stats();
    aj::eval({s0, s1});
    CHECK(aj::stats().kernels_launched == 2);
    CHECK(allocations() == 2);
    CHECK(aj::stats().values_materialized == 0);
  }
  // Other axes, expensive producer (exp): materialized once, by the first
  // reduction's kernel, and loaded by the second.
  check_same<double>([&] {
    Array e = aj::exp(x);
    return std::vector<Array>{aj::sum(e, 0), aj::sum(e, 1)};
  });
  {
    Array e = aj::exp(x);
    Array s0 = aj::sum(e, 0), s1 = aj::sum(e, 1);
    e = Array();
    aj::reset_stats();
    aj::eval({s0, s1});
    CHECK(aj::stats().kernels_launched == 2);
    CHECK(allocations() == 3);
  }
}

TEST_CASE("a producer feeding an elementwise output and a reduction is one kernel") {
  const std::int64_t r = 33, c = 17;
  Array x = aj::from_vector(random_doubles(static_cast<std::size_t>(r * c), 8), {r, c});
  auto make = [&] {
    Array p = x * 2;
    return std::vector<Array>{p + 1, aj::sum(p, 1)};
  };
  check_same<double>(make);
  auto outs = make();
  aj::reset_stats();
  aj::eval(outs);
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(allocations() == 2);
}

TEST_CASE("views become index arithmetic inside kernels and results match the reference") {
  Array x = aj::from_vector(random_doubles(60, 9), {3, 4, 5});
  check_same<double>([&] {
    Array t = aj::transpose(x, {2, 0, 1});                          // {5, 3, 4}
    Array s = aj::slice(t, {aj::Slice(std::nullopt, std::nullopt, -2)});  // {3, 3, 4}
    Array b = aj::broadcast_to(aj::slice(x, 2, 1, 2), {2, 3, 4, 1});
    Array y = aj::sum(s * 2, {0, 2}) + aj::sum(aj::reshape(aj::slice(x, 1, 0, 3), {3, 15}), 1);
    return std::vector<Array>{aj::exp(s) - 1, y, b + 1, aj::mean(x, {1}, true) * x};
  });
  Array s = aj::slice(aj::transpose(x, {2, 0, 1}), {aj::Slice(std::nullopt, std::nullopt, -2)});
  Array y = aj::exp(s) - 1;
  aj::reset_stats();
  y.eval();
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(allocations() == 1);
}

TEST_CASE("a reshape of strided data is a copy kernel, not a library step, and matches the reference") {
  Array x = aj::from_vector(random_doubles(4 * 6 * 5, 31), {4, 6, 5});
  x.eval();
  auto strided = [&] {
    Array t = aj::transpose(x, {2, 0, 1});                                                // {5, 4, 6}
    Array r = aj::slice(x, {aj::Slice(std::nullopt, std::nullopt, -1), aj::Slice(1, 5)});  // {4, 4, 5}, offset
    return std::vector<Array>{
        aj::reshape(t, {20, 6}),            // a root: the copy itself
        aj::reshape(r, {16, 5}) * 3 + 1,    // consumed by a kernel
        aj::sum(aj::reshape(t, {5, 24}), 1), // consumed by a reduction
    };
  };
  check_same<double>(strided);
  // The plan: copies, no library step; each copy reads at other indices
  // than it writes, so it never works in place.
  auto r = strided();
  const std::string plan = aj::explain(r[0]) + aj::explain(r[1]);
  CHECK(plan.find("copy: ") != std::string::npos);
  CHECK(plan.find("library ") == std::string::npos);
  aj::reset_stats();
  aj::eval(r);
  // a copy per strided reshape (t is reshaped twice: two copies), then the
  // kernels that consume r[1] and r[2]
  CHECK(aj::stats().kernels_launched == 5);
  // Every dtype goes through the copy (the kernel is dtype-generic).
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32}) {
    // Evaluated first, so the copy reads a strided array of dtype t.
    auto make = [&] {
      Array c = aj::where(x > 0.5, x, x * 3).astype(t);
      c.eval();
      return aj::reshape(aj::transpose(c, {1, 0, 2}), {6, 20}).astype(DType::f64).to_vector<double>();
    };
    std::vector<double> want;
    {
      ExecutorScope ref(Executor::reference);
      want = make();
    }
    CHECK(make() == want);
  }
}

TEST_CASE("a DAG of elementwise ops with broadcasting and strided views is one kernel") {
  Array x = aj::from_vector(random_doubles(24 * 16, 16), {24, 16});
  Array row = aj::from_vector(random_doubles(16, 17), {16});
  Array col = aj::from_vector(random_doubles(12, 18), {12, 1});
  auto make = [&] {
    Array v = aj::slice(x, {aj::Slice(std::nullopt, std::nullopt, 2)});  // rows 0, 2, ..., 22: [12, 16]
    Array a = v + row;                  // broadcast a row
    Array b = aj::exp(v) * col;         // broadcast a column
    Array c = aj::where(a > b, a, b);   // both branches share v
    return std::vector<Array>{aj::transpose(c * a - b) + aj::transpose(v)};  // a [16, 12] view
  };
  check_same<double>(make);
  auto r = make();
  aj::reset_stats();
  aj::eval(r);
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(allocations() == 1);
}

TEST_CASE("softmax: a reduction broadcast back over its input ends a kernel") {
  Array x = aj::from_vector(random_doubles(40 * 30, 10), {40, 30});
  auto softmax = [&] {
    Array e = aj::exp(x - aj::max(x, 1, true));
    return std::vector<Array>{e / aj::sum(e, 1, true)};
  };
  check_same<double>(softmax);
  auto r = softmax();
  aj::reset_stats();
  aj::eval(r);
  // max | exp + sum in one loop (exp is kept: both the sum and the division need it) | divide
  CHECK(aj::stats().kernels_launched == 3);
}

TEST_CASE("buffer plans never overlap two live values and stay within the lower bound's slots") {
  Array x = aj::from_vector(random_doubles(40 * 30, 11), {40, 30});
  Array e = aj::exp(x - aj::max(x, 1, true));
  Array s = aj::sum(e, 1, true);
  Array t = aj::tanh(aj::exp(x) * 2);  // expensive, used by two kernels below
  Array out1 = e / s;
  Array out2 = aj::sum(t, 0) + aj::sum(aj::sum(t, 1));
  e = Array();
  t = Array();
  std::vector<aj::NodeId> roots{out1.node_id(), out2.node_id(), s.node_id()};
  aj::simplify(roots);
  aj::Schedule sched = aj::fuse(roots);
  aj::BufferPlan plan = aj::assign_buffers(sched);
  CHECK(plan.lower_bound <= plan.bytes_used);
  for (std::size_t i = 0; i < plan.values.size(); ++i) {
    for (std::size_t j = i + 1; j < plan.values.size(); ++j) {
      const auto &a = plan.values[i], &b = plan.values[j];
      if (a.slot < 0 || a.slot != b.slot || b.donor == a.node || a.donor == b.node) continue;
      CHECK((a.last < b.def || b.last < a.def));
    }
    CHECK(plan.values[i].slot < static_cast<int>(plan.slot_bytes.size()));
    if (plan.values[i].slot >= 0) CHECK(plan.slot_bytes[static_cast<std::size_t>(plan.values[i].slot)] >= plan.values[i].bytes);
  }
  // Buffers held after the evaluation do not overlap in memory either.
  aj::eval({out1, out2, s});
  struct Span { const char* lo; const char* hi; };
  std::vector<Span> spans;
  for (const Array* a : {&out1, &out2, &s}) {
    const aj::Node& n = aj::graph()[a->node_id()];
    const char* p = static_cast<const char*>(n.storage->data);
    spans.push_back({p, p + n.storage->bytes});
  }
  for (std::size_t i = 0; i < spans.size(); ++i)
    for (std::size_t j = i + 1; j < spans.size(); ++j)
      CHECK((spans[i].hi <= spans[j].lo || spans[j].hi <= spans[i].lo));
}

TEST_CASE("arrays a user holds survive later in-place evaluations unchanged") {
  Array p = aj::from_vector(random_doubles(1000, 12), {1000});
  Array held = p;  // a second handle: p's buffer must not be donated
  auto before = held.to_vector<double>();
  p = p * 3 - 1;
  p.eval();
  CHECK(aj::stats().inplace_reuses >= 0);
  CHECK(held.to_vector<double>() == before);
  Array q = p;  // held copy of the new p
  auto qv = q.to_vector<double>();
  p = p + 1;
  p.eval();
  CHECK(q.to_vector<double>() == qv);
}

TEST_CASE("simplify folds fills and exact identities, and only exact ones") {
  // ones + 2 is a fill of 3; the sum of a fill is a fill.
  Array f = aj::sum(aj::ones({4, 5}, DType::i32) + 2, 1);
  aj::simplify({f.node_id()});
  CHECK(aj::dump({f}).find("broadcast") != std::string::npos);
  CHECK(aj::dump({f}).find("sum") == std::string::npos);
  CHECK(f.to_vector<std::int64_t>() == std::vector<std::int64_t>(4, 15));

  // Float x + 0.0 is not x: -0.0 + 0.0 is +0.0.
  Array z = aj::from_vector(std::vector<double>{-0.0, 1.5});
  Array z0 = z + 0.0;
  CHECK(!std::signbit(z0.to_vector<double>()[0]));
  Array zm = z - 0.0;  // x - (+0.0) is exact
  CHECK(std::signbit(zm.to_vector<double>()[0]));

  // Integer identities and x - x.
  Array i = aj::from_vector(std::vector<std::int32_t>{3, -7, INT32_MIN});
  Array d = i - i;
  aj::simplify({d.node_id()});
  CHECK(aj::dump({d}).find("sub") == std::string::npos);
  CHECK(d.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 0, 0});
  Array id = (i * 1 + 0) - 0;
  CHECK(id.to_vector<std::int32_t>() == i.to_vector<std::int32_t>());
  Array nn = -(-i);
  CHECK(nn.to_vector<std::int32_t>() == i.to_vector<std::int32_t>());

  // Cast chains through a lossless middle type, and not otherwise.
  Array c = i.astype(DType::i64).astype(DType::f32);
  aj::simplify({c.node_id()});
  CHECK(c.to_vector<float>() == std::vector<float>{3.0f, -7.0f, static_cast<float>(INT32_MIN)});
  check_same<std::int32_t>([] {
    Array big = aj::from_vector(std::vector<double>{3e9, -1.5, 2.7});
    return std::vector<Array>{big.astype(DType::i64).astype(DType::i32), big.astype(DType::f32).astype(DType::i32)};
  });

  // Transpose of transpose; reshape of reshape.
  Array m = aj::from_vector(random_doubles(24, 13), {2, 3, 4});
  check_same<double>([&] {
    return std::vector<Array>{aj::transpose(aj::transpose(m, {1, 2, 0}), {2, 0, 1}) + 1,
                              aj::reshape(aj::reshape(m, {6, 4}), {4, 6}) * 2};
  });
}

TEST_CASE("a reduction of a float fill folds exactly as summing it would") {
  check_same<float>([] { return std::vector<Array>{aj::sum(aj::full({1000, 3}, 0.1, DType::f32), 0)}; });
  check_same<double>([] {
    return std::vector<Array>{aj::sum(aj::full({7}, -0.0, DType::f64)), aj::prod(aj::full({5, 2}, 1.5, DType::f64), 1),
                              aj::max(aj::full({3, 4}, -0.0, DType::f64), 0)};
  });
}

TEST_CASE("generators, where, comparisons and casts fuse and match the reference") {
  check_same<double>([] {
    aj::random::seed(42);  // the same keys for both builds
    Array a = aj::arange(12, DType::f64).reshape({3, 4});
    Array e = aj::eye(3, 4, 1, DType::f64);
    Array u = aj::random::uniform({3, 4}, -1, 1, DType::f64);
    Array w = aj::where(a > 5, a * e, u);
    Array l = aj::linspace(0, 1, 4, DType::f64);
    return std::vector<Array>{w + l, aj::sum((a > 3).astype(DType::i32), 1).astype(DType::f64),
                              aj::argmax(u, 1).astype(DType::f64), aj::matmul(a, e.T()) - 1};
  });
}

TEST_CASE("explain shows kernels, fused ops, buffer slots and in-place reuse") {
  Array p = aj::from_vector(random_doubles(100, 14), {100});
  Array g = aj::from_vector(random_doubles(100, 15), {100});
  p = p - 0.1 * g;
  std::string text = aj::explain(p);
  CHECK(text.find("kernel k0") != std::string::npos);
  CHECK(text.find("fused:") != std::string::npos);
  CHECK(text.find("in place of") != std::string::npos);
  CHECK(text.find("lower bound") != std::string::npos);
  aj::reset_stats();
  p.eval();
  CHECK(aj::stats().inplace_reuses == 1);
  CHECK(aj::explain(p).find("nothing to do") != std::string::npos);
}

}  // TEST_SUITE

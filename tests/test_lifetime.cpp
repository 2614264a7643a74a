// Lifetime: handles are cheap, evaluated nodes drop their inputs, buffers and
// nodes are freed as soon as nothing can reach them, held arrays survive
// later evaluations, and long chains are freed without deep recursion.
// Byte and node counts are measured as differences from a baseline taken in
// the same test, so other suites' arrays do not matter.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <link.h>

#include <arrayjit/arrayjit.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>
#include "tests/random_data.hpp"

namespace {

using aj::DType;

std::uint64_t live_bytes() { return aj::stats().live_bytes; }
std::uint64_t live_nodes() { return aj::stats().live_nodes; }
// Buffers obtained for arrays: from the system, or served from the cache
// (a copy taken from the cache is still a copy).
std::uint64_t allocs() {
  const aj::Stats s = aj::stats();
  return s.system_allocs + s.pool_hits;
}

std::vector<double> random_doubles(std::size_t n, unsigned seed) {
  return ajtest::random_magnitudes<double>(n, seed, 0.5, 10.0);
}

}  // namespace

TEST_SUITE("lifetime") {

TEST_CASE("copying and moving handles allocates no buffers and no nodes") {
  aj::Array x = aj::from_vector(random_doubles(512, 1), {512});
  const auto a0 = allocs();
  const auto b0 = live_bytes();
  const auto n0 = live_nodes();
  {
    aj::Array y = x;
    aj::Array z(y);
    aj::Array w;
    w = z;
    std::vector<aj::Array> many(100, x);
    aj::Array m = std::move(w);
    CHECK_FALSE(w.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    CHECK(m.valid());
    CHECK(y.node_id() == x.node_id());
    CHECK(m.node_id() == x.node_id());
    CHECK(many[99].node_id() == x.node_id());
    // Self-assignment through an alias keeps the handle valid.
    aj::Array& alias = y;
    y = alias;
    CHECK(y.valid());
    CHECK(y.to_vector<double>() == x.to_vector<double>());
    CHECK(allocs() == a0);
    CHECK(live_bytes() == b0);
    CHECK(live_nodes() == n0);
  }
  CHECK(allocs() == a0);
  CHECK(live_bytes() == b0);
  CHECK(live_nodes() == n0);
  CHECK(x.is_evaluated());
  CHECK(x.size() == 512);
}

TEST_CASE("copies of an unevaluated handle share the node: evaluating one evaluates all") {
  aj::Array x = aj::from_vector(std::vector<std::int64_t>{1, 2, 3}, {3});
  aj::Array u = x * 10;
  aj::Array u2 = u;
  CHECK_FALSE(u2.is_evaluated());
  u.eval();
  CHECK(u2.is_evaluated());
  CHECK(u2.to_vector<std::int64_t>() == std::vector<std::int64_t>{10, 20, 30});
}

TEST_CASE("an empty handle is invalid and using it throws aj::Error") {
  aj::Array e;
  CHECK_FALSE(e.valid());
  CHECK_THROWS_AS(e.dtype(), aj::Error);
  CHECK_THROWS_AS(e.shape(), aj::Error);
  CHECK_THROWS_AS(e.eval(), aj::Error);
  CHECK_THROWS_AS(e + 1, aj::Error);
  CHECK_THROWS_AS(aj::sum(e), aj::Error);
  CHECK_THROWS_AS(aj::eval({e}), aj::Error);
}

TEST_CASE("an evaluated node drops its inputs: after x is reset only y's buffer is live") {
  const auto b0 = live_bytes();
  const auto n0 = live_nodes();
  aj::Array x = aj::from_vector(std::vector<float>(1000, 1.5f), {1000});
  CHECK(live_bytes() == b0 + 4000);
  aj::Array y = x + 1;
  CHECK(live_bytes() == b0 + 4000);  // nothing has run yet
  CHECK_FALSE(y.is_evaluated());
  y.eval();
  CHECK(y.is_evaluated());
  // x and y; the constant 1 and its broadcast are gone.
  CHECK(live_bytes() == b0 + 8000);
  CHECK(live_nodes() == n0 + 2);
  x = aj::Array();
  CHECK(live_bytes() == b0 + 4000);
  CHECK(live_nodes() == n0 + 1);
  CHECK(y.to_vector<float>() == std::vector<float>(1000, 2.5f));
  y = aj::Array();
  CHECK(live_bytes() == b0);
  CHECK(live_nodes() == n0);
}

TEST_CASE("an input whose last handle was dropped before eval is freed by the eval") {
  const auto b0 = live_bytes();
  aj::Array x = aj::from_vector(std::vector<double>(500, 2.0), {500});
  aj::Array y = x * 3;
  x = aj::Array();
  CHECK(live_bytes() == b0 + 4000);  // the graph still needs x's data
  y.eval();
  CHECK(live_bytes() == b0 + 4000);  // only y now
  CHECK(y.to_vector<double>() == std::vector<double>(500, 6.0));
}

TEST_CASE("intermediates without handles are freed after eval; everything after the scope") {
  const auto b0 = live_bytes();
  const auto n0 = live_nodes();
  const auto xs = random_doubles(256, 2);
  {
    aj::Array a = aj::from_vector(xs, {256});
    aj::Array d = aj::sum((a * 2 + 1) * a, 0);
    CHECK(live_nodes() > n0 + 2);  // the traced intermediates are nodes
    d.eval();
    CHECK(live_bytes() == b0 + 256 * 8 + 8);  // a and the rank-0 sum
    CHECK(live_nodes() == n0 + 2);
    double want = 0;
    for (double v : xs) want += (v * 2 + 1) * v;
    CHECK(d.item<double>() == doctest::Approx(want));
  }
  CHECK(live_bytes() == b0);
  CHECK(live_nodes() == n0);
}

TEST_CASE("held intermediates keep their values; dropping them frees their buffers") {
  const auto b0 = live_bytes();
  const auto xs = random_doubles(100, 3);
  aj::Array a = aj::from_vector(xs, {100});
  aj::Array b = a * 2;
  aj::Array c = b + 1;
  c.eval();
  // b may have been computed on the way (or fused into c and left traced):
  // either way it still has its own values, and reading them evaluates it.
  std::vector<double> want_b, want_c;
  for (double v : xs) {
    want_b.push_back(v * 2);
    want_c.push_back(v * 2 + 1);
  }
  CHECK(b.to_vector<double>() == want_b);
  CHECK(b.is_evaluated());
  CHECK(c.is_evaluated());
  CHECK(live_bytes() == b0 + 3 * 800);  // a, b, c
  b = aj::Array();
  CHECK(live_bytes() == b0 + 2 * 800);
  CHECK(c.to_vector<double>() == want_c);
  a = aj::Array();
  CHECK(live_bytes() == b0 + 800);
  CHECK(c.to_vector<double>() == want_c);
}

TEST_CASE("dropping an unevaluated graph frees its nodes without running anything") {
  const auto n0 = live_nodes();
  const auto a0 = allocs();
  const auto b0 = live_bytes();
  {
    aj::Array x = aj::ones({64, 64});
    aj::Array y = aj::sum(aj::exp(x) * 2 + aj::transpose(x), 1);
    aj::Array z = y / 3;
    CHECK(live_nodes() > n0 + 5);
  }
  CHECK(live_nodes() == n0);
  CHECK(allocs() == a0);
  CHECK(live_bytes() == b0);
}

TEST_CASE("a = a + 2 rebinding frees the old buffer once evaluated") {
  const auto b0 = live_bytes();
  aj::Array a = aj::from_vector(std::vector<std::int64_t>(1000, 5), {1000});
  CHECK(live_bytes() == b0 + 8000);
  a = a + 2;
  CHECK_FALSE(a.is_evaluated());
  CHECK(live_bytes() == b0 + 8000);  // the old data, still needed
  a.eval();
  CHECK(live_bytes() == b0 + 8000);  // the new data only
  for (int i = 0; i < 10; ++i) {
    a = a + 2;
    a.eval();
    CHECK(live_bytes() == b0 + 8000);
  }
  CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>(1000, 27));
  // The compound assignment operators rebind the same way.
  a += 3;
  a *= 2;
  a.eval();
  CHECK(live_bytes() == b0 + 8000);
  CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>(1000, 60));
  a = aj::Array();
  CHECK(live_bytes() == b0);
}

TEST_CASE("aj::eval evaluates several arrays together in one evaluation") {
  const auto xs = random_doubles(50, 4);
  aj::Array x = aj::from_vector(xs, {50});
  aj::Array c = x * x;  // shared by both results
  aj::Array a = c + 1;
  aj::Array b = c - x;
  c = aj::Array();
  const auto e0 = aj::stats().evals;
  aj::eval({a, b});
  CHECK(aj::stats().evals == e0 + 1);
  CHECK(a.is_evaluated());
  CHECK(b.is_evaluated());
  auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CHECK(av[i] == xs[i] * xs[i] + 1);
    CHECK(bv[i] == xs[i] * xs[i] - xs[i]);
  }
  // Nothing left to do: no new evaluation.
  aj::eval({a, b});
  aj::eval({});
  CHECK(aj::stats().evals == e0 + 1);
  // A repeated array and a mix of evaluated and unevaluated ones.
  aj::Array d = a * 2;
  aj::eval({d, a, d, x});
  CHECK(aj::stats().evals == e0 + 2);
  CHECK(d.to_vector<double>()[7] == (xs[7] * xs[7] + 1) * 2);
}

TEST_CASE("is_evaluated goes false -> true when values are needed") {
  aj::Array x = aj::from_vector(std::vector<std::int32_t>{4, 5, 6}, {3});
  CHECK(x.is_evaluated());  // data exists
  aj::Array y = x + 1;
  CHECK_FALSE(y.is_evaluated());
  CHECK(&y.eval() == &y);  // eval returns the array itself
  CHECK(y.is_evaluated());
  y.eval();  // evaluating again is harmless
  CHECK(y.to_vector<std::int32_t>() == std::vector<std::int32_t>{5, 6, 7});

  aj::Array t = aj::transpose(aj::reshape(x, {3, 1}));
  CHECK_FALSE(t.is_evaluated());  // a view is a node too, until evaluated
  CHECK(t.to_vector<std::int32_t>() == std::vector<std::int32_t>{4, 5, 6});  // reading evaluates
  CHECK(t.is_evaluated());

  aj::Array s = aj::sum(x);
  (void)s.item<std::int64_t>();
  CHECK(s.is_evaluated());
  aj::Array z = aj::zeros({2});
  CHECK_FALSE(z.is_evaluated());  // a traced fill
  z.eval();
  CHECK(z.is_evaluated());
}

TEST_CASE("held arrays survive later evaluations that create and free other buffers") {
  const auto xs = random_doubles(1000, 5);
  std::vector<double> want;
  for (double v : xs) want.push_back(v * 3);
  aj::Array h = aj::from_vector(xs, {1000}) * 3;
  h.eval();
  // A view held past the death of its base array.
  aj::Array base = aj::from_vector(xs, {10, 100});
  aj::Array view = aj::slice(aj::transpose(base), 0, 5, 10);  // rows 5..9 of base^T
  view.eval();
  base = aj::Array();

  for (int round = 0; round < 30; ++round) {
    // Same-size temporaries: the most likely to be handed h's memory by mistake.
    aj::Array t = aj::from_vector(std::vector<double>(1000, double(round)), {1000});
    t = t * 2 + 1;
    t = -t;
    t.eval();
    CHECK(t.to_vector<double>()[999] == -(2.0 * round + 1));
    aj::Array s = aj::sum(aj::reshape(t, {10, 100}), 1);
    s.eval();
  }
  CHECK(h.is_evaluated());
  CHECK(h.to_vector<double>() == want);
  CHECK(view.shape() == aj::Shape{5, 10});
  auto vv = view.to_vector<double>();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 10; ++j) {
      // view[i][j] = base^T[5 + i][j] = base[j][5 + i]
      CHECK(vv[static_cast<std::size_t>(i * 10 + j)] == xs[static_cast<std::size_t>(j * 100 + 5 + i)]);
    }
  // Arrays computed from held arrays are right, and the held ones still are after.
  aj::Array h2 = h + 1;
  h2.eval();
  CHECK(h2.to_vector<double>()[3] == want[3] + 1);
  CHECK(h.to_vector<double>() == want);
}

TEST_CASE("a chain of 100000 ops is evaluated and freed without stack overflow") {
  const auto n0 = live_nodes();
  const auto b0 = live_bytes();
  {
    aj::Array x = aj::from_vector(std::vector<std::int64_t>{1, 2, 3, 4}, {4});
    for (int i = 0; i < 100000; ++i) x = x + 1;
    CHECK_FALSE(x.is_evaluated());
    CHECK(live_nodes() >= n0 + 100000);
    CHECK(x.to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{100001, 100002, 100003, 100004});
    CHECK(live_nodes() == n0 + 1);
    CHECK(live_bytes() == b0 + 32);
  }
  CHECK(live_nodes() == n0);
  CHECK(live_bytes() == b0);
  // Never evaluated: dropping the last handle frees the whole chain.
  {
    aj::Array y = aj::from_vector(std::vector<double>{0.5, 1.5}, {2});
    for (int i = 0; i < 100000; ++i) y = y * 1.0 + 1.0;
    CHECK(live_nodes() >= n0 + 200000);
  }
  CHECK(live_nodes() == n0);
  CHECK(live_bytes() == b0);
}

}  // TEST_SUITE

TEST_CASE("the library needs no static TLS, so it can be loaded late (Python's ctypes after PyTorch)") {
  // A module flagged DF_STATIC_TLS (any initial-exec thread-local) has its
  // whole TLS block placed in the static area, which a process fills as it
  // loads libraries: dlopen then fails with "cannot allocate memory in
  // static TLS block" (seen on the GPU machine with PyTorch loaded first).
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(&aj::reset_stats), &info) != 0);
  struct Found {
    const void* base;
    bool seen = false, static_tls = false;
  } found{info.dli_fbase};
  dl_iterate_phdr(
      [](dl_phdr_info* p, std::size_t, void* data) {
        auto* f = static_cast<Found*>(data);
        if (reinterpret_cast<const void*>(p->dlpi_addr) != f->base) return 0;
        f->seen = true;
        for (int i = 0; i < p->dlpi_phnum; ++i) {
          if (p->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
          for (auto* d = reinterpret_cast<const ElfW(Dyn)*>(p->dlpi_addr + p->dlpi_phdr[i].p_vaddr); d->d_tag != DT_NULL;
               ++d) {
            if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_STATIC_TLS)) f->static_tls = true;
          }
        }
        return 1;
      },
      &found);
  if (!found.seen) {
    MESSAGE("libarrayjit is linked into the executable here: skipped");
    return;
  }
  CHECK_MESSAGE(!found.static_tls, info.dli_fname << " is flagged DF_STATIC_TLS: a thread_local with "
                                                     "initial-exec TLS was added (CMakeLists.txt: -mtls-dialect=gnu2 instead)");
}

TEST_CASE("an eager evaluation's peak memory is its plan's: a value read inside kernels goes with its last reader") {
  // A 6-layer MLP's gradients: the backward's masks are computed inside its
  // kernels from stored values. Evaluated eagerly, those values must go
  // when the kernels reading them have run, as in the buffer plan (and in a
  // compiled replay, which keeps no graph nodes), not when the evaluation
  // ends. The replay's peak is the plan's.
  aj::random::seed(9);
  std::vector<aj::Array> ws;
  for (int i = 0; i < 6; ++i) ws.push_back(aj::random::normal({128, 128}, 0, 0.1, DType::f32).eval());
  const aj::Array x = aj::random::normal({256, 128}, 0, 1, DType::f32).eval();
  auto loss = [&](const std::vector<aj::Array>& w) {
    aj::Array h = x;
    for (const aj::Array& wi : w) h = aj::tanh(aj::matmul(h, wi)) + aj::maximum(h, 0.0f);
    return aj::sum(h * h);
  };
  std::vector<int> all = {0, 1, 2, 3, 4, 5};
  auto peak = [](const std::function<void()>& run) {
    aj::reset_stats();
    const std::uint64_t base = aj::stats().live_bytes;
    run();
    return aj::stats().peak_live_bytes - base;
  };
  std::vector<aj::Array> eager;
  const std::uint64_t eager_peak = peak([&] {
    eager = aj::grad(loss, all)(ws);
    aj::eval(eager);
  });
  auto step = aj::compile([&](const std::vector<aj::Array>& w) { return aj::grad(loss, all)(w); });
  for (int i = 0; i < 2; ++i) (void)step(ws);  // traced, then replayed
  std::vector<aj::Array> replayed;
  const std::uint64_t replay_peak = peak([&] { replayed = step(ws); });
  MESSAGE("peak above the inputs: eager " << eager_peak << " bytes, compiled replay " << replay_peak);
  CHECK(step.counts().replays >= 2);
  CHECK(eager_peak <= replay_peak);
  REQUIRE(replayed.size() == eager.size());
  CHECK(replayed[0].to_vector<float>() == eager[0].to_vector<float>());
}

// Backend::compile_ahead on the host: a plan's kernels compiled together on
// the thread pool before its first run. The kernels compiled are the ones the
// launches then use (no variant compiled twice, none wasted on a wrong guess
// of the aliasing an in-place update has), and the values are the kernel
// interpreter's.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

// The JIT on, the disk cache off, nothing compiled in memory; `threads`
// pool threads. Restores the settings.
struct Fresh {
  std::string dir = aj::jit::cache_dir();
  int threads = aj::jit::num_threads();
  bool on = aj::jit::enabled();
  explicit Fresh(int t) {
    aj::jit::set_enabled(true);
    aj::jit::set_cache_dir("");
    aj::jit::set_num_threads(t);
    aj::jit::clear_memory_cache();
    aj::reset_stats();
  }
  ~Fresh() {
    aj::jit::set_cache_dir(dir);
    aj::jit::set_num_threads(threads);
    aj::jit::set_enabled(on);
  }
};

struct Model {
  aj::Array x, w, b;
};

// `rows`: a batch size of each test's own, so that its plans are new (a
// plan is compiled ahead on its first run only) while its kernels (keyed by
// structure, not extents) are the same.
// Its values from the host (no generator kernels).
Model make_model(std::int64_t rows) {
  std::mt19937 rng(static_cast<unsigned>(rows));
  std::normal_distribution<float> n01(0, 1);
  auto values = [&](std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = n01(rng);
    return v;
  };
  Model m;
  m.x = aj::from_vector(values(rows * 48), {rows, 48});
  m.w = aj::from_vector(values(48 * 32), {48, 32});
  m.b = aj::from_vector(values(32), {32});
  return m;
}

// One step of several distinct kernels: a matmul epilogue, softmax rows,
// reductions along both axes, and an update of w and b in place (both moved
// in: their buffers are donated).
std::vector<aj::Array> step(const Model& m, aj::Array w, aj::Array b) {
  aj::Array h = aj::tanh(aj::matmul(m.x, w) + b);
  aj::Array e = aj::exp(h - aj::max(h, 1, true));
  aj::Array s = e / aj::sum(e, 1, true);
  aj::Array gb = aj::sum(s * h, 0);
  aj::Array gw = aj::matmul(aj::transpose(m.x), s - 0.5f);
  aj::Array w2 = w - 0.01f * gw;
  aj::Array b2 = b - 0.01f * gb;
  return {w2, b2, aj::mean(s * s)};
}

std::vector<std::vector<float>> run(const Model& m, int steps) {
  aj::Array w = m.w * 1.0f, b = m.b * 1.0f;  // copies the step may take over
  aj::eval({w, b});
  aj::Array loss;
  for (int i = 0; i < steps; ++i) {
    std::vector<aj::Array> r = step(m, std::move(w), std::move(b));
    aj::eval(r);
    w = r[0], b = r[1], loss = r[2];
  }
  return {w.to_vector<float>(), b.to_vector<float>(), loss.to_vector<float>()};
}

}  // namespace

TEST_SUITE("jit_host") {

TEST_CASE("compile ahead: a plan's kernels compiled together are the ones its launches use") {
  const Model m = make_model(64), m1 = make_model(65);
  std::uint64_t alone = 0;
  {
    Fresh f(1);  // one thread: nothing is compiled ahead
    run(m1, 3);
    const aj::Stats s = aj::stats();
    CHECK(s.kernels_compiled_ahead == 0);
    alone = s.kernels_compiled;
  }
  REQUIRE(alone >= 3);
  std::vector<std::vector<float>> two;
  {
    Fresh f(2);
    two = run(m, 3);
    const aj::Stats s = aj::stats();
    CHECK(s.kernels_compiled_ahead >= 2);
    // Every kernel compiled ahead was launched: the same set as one thread
    // compiles one at a time (a wrong guess of an in-place output's aliasing
    // would add a variant).
    CHECK(s.kernels_compiled == alone);
  }
  std::vector<std::vector<float>> interpreted;
  {
    Fresh f(2);
    aj::jit::set_enabled(false);
    interpreted = run(m, 3);
  }
  REQUIRE(two.size() == interpreted.size());
  for (std::size_t i = 0; i < two.size(); ++i) {
    REQUIRE(two[i].size() == interpreted[i].size());
    int bad = 0;
    for (std::size_t j = 0; j < two[i].size(); ++j) {
      bad += !(std::abs(two[i][j] - interpreted[i][j]) <= 1e-4f * (1 + std::abs(interpreted[i][j])));
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("compile ahead: a plan run again compiles nothing ahead; one whose kernels are compiled neither") {
  const Model m = make_model(66);
  Fresh f(2);
  run(m, 3);
  aj::reset_stats();
  run(m, 3);  // the same plans (plan cache), the same kernels (memory cache)
  aj::Stats s = aj::stats();
  CHECK(s.kernels_compiled == 0);
  CHECK(s.kernels_compiled_ahead == 0);
  run(make_model(67), 3);  // new plans, their kernels in memory already
  s = aj::stats();
  CHECK(s.kernels_compiled == 0);
  CHECK(s.kernels_compiled_ahead == 0);
}

}  // TEST_SUITE

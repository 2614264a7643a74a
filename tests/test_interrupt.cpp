// aj::interrupt (arrayjit/interrupt.hpp): a request stops the evaluation
// that sees it, once, with aj::Error "interrupted"; a long kernel sees it
// between its blocks; what was computed before stays computed and the rest
// stays lazy, so evaluating again gives the right values.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace {

using aj::DType;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

TEST_SUITE("interrupt") {

TEST_CASE("interrupt: from C, aj_interrupt stops the next evaluation with a runtime error") {
  aj_array a = aj::to_c(aj::arange(8) * 3);
  aj_interrupt(1);
  CHECK(aj_eval(a) == AJ_ERROR_RUNTIME);
  CHECK(std::string(aj_last_error()).find("interrupted") != std::string::npos);
  CHECK(aj_eval(a) == AJ_OK);
  CHECK(aj::from_c(a).to_vector<std::int64_t>()[7] == 21);
  aj_interrupt(1);
  aj_interrupt(0);
  aj_array b = aj::to_c(aj::arange(3));
  CHECK(aj_eval(b) == AJ_OK);
  aj_array_release(b);
  aj_array_release(a);
}

TEST_CASE("interrupt: a request stops the next evaluation once; interrupt(false) withdraws it") {
  aj::Array a = aj::arange(10) * 2;
  aj::interrupt();
  CHECK_THROWS_WITH_AS(a.eval(), doctest::Contains("interrupted"), aj::Error);
  CHECK_FALSE(a.is_evaluated());
  // The evaluation that saw the request took it back: this one runs.
  const std::vector<std::int64_t> v = a.to_vector<std::int64_t>();
  CHECK(v[9] == 18);

  aj::Array b = aj::arange(5) + 1;
  aj::interrupt();
  aj::interrupt(false);
  CHECK_NOTHROW(b.eval());
  CHECK(b.to_vector<std::int64_t>()[4] == 5);
}

TEST_CASE("interrupt: a long kernel stops between its blocks; values made before stay, the rest evaluates again") {
  // s is held by a handle, so it is its own step before y's kernel; y's
  // kernel has 4e11 points (many minutes on one core, seconds on a hundred):
  // the request comes while it runs. The kernel interpreter (AJ_JIT=0) looks
  // between steps only.
  if (!aj::jit::enabled()) return;
  const std::int64_t rows = 400000, cols = 1000000;
  aj::Array xr = aj::arange(rows).astype(DType::f32).reshape({rows, 1});
  aj::Array yc = (aj::arange(cols).astype(DType::f32) * 1e-6).reshape({1, cols});
  xr.eval();
  yc.eval();
  aj::Array s = xr * 0.5;
  aj::Array y = aj::sum(aj::sin(s * yc), 1);

  std::atomic<bool> started{false};
  Clock::time_point asked;
  std::thread t([&] {
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    asked = Clock::now();
    aj::interrupt();
  });
  started = true;
  const Clock::time_point t0 = Clock::now();
  CHECK_THROWS_WITH_AS(y.eval(), doctest::Contains("interrupted"), aj::Error);
  t.join();
  const double after = seconds_since(asked);
  MESSAGE("interrupted after " << seconds_since(t0) << " s, " << after * 1e3 << " ms after the request");
  CHECK(after < 5.0);  // blocks are milliseconds of work; 5 s leaves room for a busy or sanitized run
  CHECK_FALSE(y.is_evaluated());

  // s was made before y's kernel and is right; y's inputs are intact (a
  // small evaluation over them is right too).
  const std::vector<float> sv = s.to_vector<float>();
  CHECK(sv[7] == 3.5f);
  CHECK(sv[static_cast<std::size_t>(rows - 1)] == static_cast<float>(rows - 1) * 0.5f);
  aj::Array part = aj::sum(aj::sin(aj::slice(s, 0, 0, 3) * aj::slice(yc, 1, 0, 5)), 1);
  const std::vector<float> pv = part.to_vector<float>();
  double want = 0;
  for (int j = 0; j < 5; ++j) want += std::sin(2 * 0.5 * (j * 1e-6));
  CHECK(pv[2] == doctest::Approx(want).epsilon(1e-5));
}

}  // TEST_SUITE

// The host JIT's two tiers (arrayjit/jit.hpp, "Tiers"; jit/host_kernel.hpp):
// a kernel compiled quick computes the same bits as the same kernel compiled
// in full, a small first launch compiles quick and a large one in full, and
// quick code is compiled in full on the background thread from its 128th
// launch.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/compile_helpers.hpp"
#include "tests/random_function.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using ajtest::input;
using ajtest::same_bits;
using ajtest::vals;

// Sets the tier mode, with no disk cache (a full entry on disk would serve
// a quick request) and nothing compiled in memory; puts both back after.
struct TierMode {
  explicit TierMode(aj::jit::Tiers t) : saved_dir(aj::jit::cache_dir()), saved(aj::jit::tiers()) { set(t); }
  void set(aj::jit::Tiers t) {
    aj::jit::set_cache_dir("");
    aj::jit::clear_memory_cache();
    aj::jit::set_tiers(t);
  }
  ~TierMode() {
    aj::jit::set_tiers(saved);
    aj::jit::clear_memory_cache();
    aj::jit::set_cache_dir(saved_dir);
  }
  std::string saved_dir;
  aj::jit::Tiers saved;
};

std::vector<std::vector<double>> run(const ajtest::RandomFunction& f, const std::vector<Array>& x) {
  std::vector<Array> r = f(x);
  aj::eval(r);
  std::vector<std::vector<double>> out;
  for (const Array& a : r) out.push_back(vals(a));
  return out;
}

}  // namespace

TEST_SUITE("jit_host") {

TEST_CASE("tiers: quick and full code of random functions compute the same bits") {
  if (!aj::jit::enabled()) return;
  TierMode mode(aj::jit::Tiers::quick);
  int compared = 0, mismatches = 0;
  std::string first;
  for (int g = 0; g < 60; ++g) {
    const ajtest::RandomFunction f{0x7e500 + static_cast<std::uint64_t>(g), 1 + g % 3};
    const int rank = 1 + g % 3;
    std::vector<std::int64_t> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(5 + 7 * d + g % 5);
    std::vector<Array> x;
    for (int k = 0; k < f.inputs; ++k) x.push_back(input(Shape(dims), static_cast<unsigned>(g * 31 + k)));
    mode.set(aj::jit::Tiers::quick);
    aj::Stats s0 = aj::stats();
    const auto quick = run(f, x);
    CHECK(aj::stats().kernels_tiered_up == s0.kernels_tiered_up);
    mode.set(aj::jit::Tiers::full);
    s0 = aj::stats();
    const auto full = run(f, x);
    CHECK(aj::stats().kernels_tiered_up == s0.kernels_tiered_up);
    REQUIRE(quick.size() == full.size());
    for (std::size_t k = 0; k < quick.size(); ++k) {
      ++compared;
      if (!same_bits(quick[k], full[k])) {
        ++mismatches;
        for (std::size_t i = 0; first.empty() && i < quick[k].size(); ++i) {
          if (quick[k][i] != full[k][i]) {
            first = "function " + std::to_string(g) + " result " + std::to_string(k) + " element " + std::to_string(i) +
                    ": quick " + std::to_string(quick[k][i]) + ", full " + std::to_string(full[k][i]);
          }
        }
      }
    }
  }
  INFO(first);
  CHECK(compared >= 60);
  CHECK(mismatches == 0);
}

TEST_CASE("tiers: a small first launch compiles quick, its 128th queues the full compile, a large launch compiles full") {
  if (!aj::jit::enabled()) return;
  TierMode mode(aj::jit::Tiers::automatic);
  // 4,096 points x a few instructions a launch: quick first.
  const Array x = input({4096}, 1), y = input({4096}, 2);
  auto f = [&] { return aj::tanh(x * 0.5f + y) * 2.0f - x; };
  aj::Stats s0 = aj::stats();
  const std::vector<double> want = vals(f());
  CHECK(aj::stats().kernels_compiled - s0.kernels_compiled == 1);
  // 127 launches in all queue nothing.
  for (int i = 0; i < 126; ++i) CHECK(same_bits(vals(f()), want));
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up == s0.kernels_tiered_up);
  // The 128th queues the full compile; launches meanwhile run the quick
  // code, then the full code, the same bits either way.
  s0 = aj::stats();
  for (int i = 0; i < 6; ++i) CHECK(same_bits(vals(f()), want));
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up - s0.kernels_tiered_up == 1);
  CHECK(aj::stats().kernels_compiled == s0.kernels_compiled);
  // The full code gives the same bits, and is kept.
  s0 = aj::stats();
  for (int i = 0; i < 10; ++i) CHECK(same_bits(vals(f()), want));
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up == s0.kernels_tiered_up);
  CHECK(aj::stats().kernels_compiled == s0.kernels_compiled);

  // 2M points of another kernel (extents and scalars are run-time
  // arguments: the same ops would find the kernel above): compiled in full
  // at its first launch, nothing queued after.
  const Array u = input({1 << 21}, 3), v = input({1 << 21}, 4);
  s0 = aj::stats();
  (aj::sin(u + v) * u).eval();
  CHECK(aj::stats().kernels_compiled - s0.kernels_compiled == 1);
  for (int i = 0; i < 8; ++i) (aj::sin(u + v) * u).eval();
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up == s0.kernels_tiered_up);
  CHECK(aj::stats().kernels_compiled - s0.kernels_compiled == 1);
}

TEST_CASE("tiers: a kernel dropped from memory while its full compile is queued compiles again, quick") {
  if (!aj::jit::enabled()) return;
  TierMode mode(aj::jit::Tiers::automatic);
  const Array x = input({3000}, 7);
  auto f = [&] { return aj::cosh(x * 0.25f) - x; };
  const std::vector<double> want = vals(f());
  for (int i = 0; i < 129; ++i) CHECK(same_bits(vals(f()), want));  // queued
  aj::jit::clear_memory_cache();  // (a compile already running is dropped when done)
  aj::jit::finish_tier_ups();
  const aj::Stats s0 = aj::stats();
  CHECK(same_bits(vals(f()), want));
  CHECK(aj::stats().kernels_compiled - s0.kernels_compiled == 1);
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up == s0.kernels_tiered_up);
}

TEST_CASE("tiers: compiled replays report their launches too, and quick mode never tiers up") {
  if (!aj::jit::enabled()) return;
  TierMode mode(aj::jit::Tiers::automatic);
  auto step = aj::compile([](const Array& w, const Array& g) { return w - 0.01f * aj::tanh(g) * w; });
  const Array g = input({8192}, 5);
  Array w = input({8192}, 6);
  const aj::Stats s0 = aj::stats();
  for (int i = 0; i < 130; ++i) w = step(w, g);
  w.eval();
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up - s0.kernels_tiered_up == 1);
  CHECK(step.counts().traces == 1);

  mode.set(aj::jit::Tiers::quick);
  const aj::Stats s1 = aj::stats();
  for (int i = 0; i < 3000; ++i) w = step(w, g);
  w.eval();
  aj::jit::finish_tier_ups();
  CHECK(aj::stats().kernels_tiered_up == s1.kernels_tiered_up);
  CHECK(aj::stats().kernels_compiled - s1.kernels_compiled == 1);
}

}  // TEST_SUITE

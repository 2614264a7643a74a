// The host JIT's inline f32 exp (jit/llvm/scalar_codegen.cpp) against the
// C library's expf at the edges of its range: overflow, the subnormal
// results, the reduction's rounding points, infinities, NaN and signed zero.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

// Distance in f32 ulps (the ordered bit patterns' difference).
std::int64_t ulps(float a, float b) {
  auto ordered = [](float f) {
    std::int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? -static_cast<std::int64_t>(i & 0x7fffffff) : static_cast<std::int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

}  // namespace

TEST_SUITE("jit_host") {

TEST_CASE("f32 exp is within 2 ulp of expf across its range, edges included") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, 88.72283f, 88.7228394f, 88.8f, 89.0f, 100.0f,
                          -87.33654f, -87.4f, -100.0f, -103.9f, -103.98f, -104.0f, -150.0f, 1e-8f, -1e-8f,
                          0.34657359f, -0.34657359f, 0.693147181f, 1e30f, -1e30f};
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> wide(-105.0f, 90.0f), narrow(-1.0f, 1.0f);
  while (v.size() < 40000) v.push_back(v.size() % 2 ? wide(rng) : narrow(rng));
  const std::size_t nan_at = v.size();
  v.push_back(std::nanf(""));
  aj::jit::set_num_threads(1);
  const std::vector<float> got = aj::exp(aj::from_vector(v)).to_vector<float>();
  aj::jit::set_num_threads(0);
  REQUIRE(got.size() == v.size());
  CHECK(std::isnan(got[nan_at]));
  for (std::size_t i = 0; i < nan_at; ++i) {
    CAPTURE(v[i]);
    const float want = std::exp(v[i]);
    CAPTURE(want);
    CAPTURE(got[i]);
    CHECK(ulps(got[i], want) <= 2);
  }
}

}  // TEST_SUITE

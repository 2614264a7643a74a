// Random test data shared by the test files: every dtype from one generator,
// so ranges are stated where a test needs them instead of in a private copy.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

namespace ajtest {

// n values of T: bools about half true (both present when n >= 2), other
// types `draw(rng)` (an int64 for integers, a double for floats).
template <class T, class Draw>
std::vector<T> generate(std::size_t n, unsigned seed, Draw&& draw) {
  std::mt19937 rng(seed);
  std::vector<T> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) v.push_back(rng() % 2 == 0);
    else v.push_back(static_cast<T>(draw(rng)));
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (n >= 2) v[0] = true, v[1] = false;
  }
  return v;
}

// Values with a magnitude in [lo, hi] (0 < lo <= hi) and a random sign, so
// never zero (they divide). Integers: whole magnitudes in [max(1, ceil(lo)),
// max(1, floor(hi))]. bool: as generate().
template <class T>
std::vector<T> random_magnitudes(std::size_t n, unsigned seed, double lo, double hi) {
  return generate<T>(n, seed, [&](std::mt19937& rng) {
    if constexpr (std::is_integral_v<T>) {
      const auto a = static_cast<std::int64_t>(std::fmax(1.0, std::ceil(lo)));
      const auto b = static_cast<std::int64_t>(std::fmax(1.0, std::floor(hi)));
      const std::int64_t mag = std::uniform_int_distribution<std::int64_t>(a, b < a ? a : b)(rng);
      return rng() % 2 ? mag : -mag;
    } else {
      const double mag = std::uniform_real_distribution<double>(lo, hi)(rng);
      return rng() % 2 ? mag : -mag;
    }
  });
}

// Values in [lo, hi] (signed), never zero: integers uniform over the whole
// numbers in it except 0, floats at least 0.05 away from 0. bool: as generate().
template <class T>
std::vector<T> random_in(std::size_t n, unsigned seed, double lo, double hi) {
  return generate<T>(n, seed, [&](std::mt19937& rng) {
    if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<std::int64_t> d(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi));
      std::int64_t x = 0;
      while (x == 0) x = d(rng);
      return x;
    } else {
      std::uniform_real_distribution<double> d(lo, hi);
      double x = 0;
      while (std::fabs(x) < 0.05) x = d(rng);
      return x;
    }
  });
}

// Small integers -8..8 as doubles (many ties; float sums of them are exact in
// any order); with `nans` about one value in 17 is NaN and one in 17 is -0.0.
// A fixed LCG: the same values on every platform.
inline std::vector<double> small_values(std::size_t n, std::uint64_t seed, bool nans = false) {
  std::vector<double> v(n);
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<int>((s >> 33) % 17);
    x = r - 8;
    if (nans && r == 0) x = std::nan("");
    if (nans && r == 1) x = -0.0;
  }
  return v;
}

}  // namespace ajtest

// What the aj::compile tests (test_compile.cpp, test_compile_extents.cpp)
// share: random evaluated inputs and bit-for-bit comparison of results.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <cstring>
#include <vector>

#include "tests/random_data.hpp"

namespace ajtest {

inline std::vector<double> vals(const aj::Array& a) { return a.to_vector<double>(); }

inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Values in [-2, 2) of shape s, evaluated, in dtype t.
inline aj::Array input(aj::Shape s, unsigned seed, aj::DType t = aj::DType::f32) {
  const auto v = random_in<double>(static_cast<std::size_t>(s.numel()), seed, -2, 2);
  return aj::from_vector(v, s).astype(t).eval();
}

}  // namespace ajtest

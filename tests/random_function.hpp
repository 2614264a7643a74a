// Random functions of k arrays of one shape (tests/test_compile.cpp's
// replays, tests/test_jit_tiers.cpp's two tiers of code).
#pragma once

#include <arrayjit/arrayjit.hpp>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace ajtest {

// Any extents of the same rank work for the same function (so replays with
// new extents are the same function): elementwise ops with broadcasting of
// size-1 reductions, reductions with keepdims, where, casts, transposes,
// slices and concatenations (a roll), softmax, cumsum, matrix products,
// expand_dims and squeeze.
struct RandomFunction {
  std::uint64_t seed;
  int inputs;
  std::vector<aj::Array> operator()(const std::vector<aj::Array>& x) const {
    std::mt19937_64 rng(seed);
    auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<aj::Array> pool(x.begin(), x.end());
    const int rank = x[0].ndim();
    const int steps = uni(2, 12);
    for (int s = 0; s < steps; ++s) {
      const aj::Array& a = pool[static_cast<std::size_t>(uni(0, static_cast<int>(pool.size()) - 1))];
      const aj::Array& b = pool[static_cast<std::size_t>(uni(0, static_cast<int>(pool.size()) - 1))];
      aj::Array r;
      const int ax = uni(0, rank - 1);
      switch (uni(0, 16)) {
        case 0: r = a + b; break;
        case 1: r = a * b - 0.5f; break;
        case 2: r = aj::maximum(a, b * 0.25f); break;
        case 3: r = aj::tanh(a) + b; break;
        case 4: r = aj::exp(aj::minimum(a, 2.0f)); break;
        case 5: r = aj::where(a > b, a, b * 2.0f); break;
        case 6: r = a - aj::sum(b, uni(0, rank - 1), true); break;  // a reduction broadcast back
        case 7: r = aj::max(a, uni(0, rank - 1), true) * b; break;
        case 8: r = a * 1.5f + aj::mean(b, aj::Axes::all(), true); break;
        case 9: r = (a.astype(aj::DType::f64) * 0.1).astype(aj::DType::f32) + b; break;
        case 10: r = aj::abs(a) / (aj::abs(b) + 1.0f); break;
        case 11: r = aj::sqrt(aj::abs(a + b)); break;
        case 12:  // a roll by one along ax: a slice from 1 and the first line after it
          r = aj::concatenate({aj::slice(a, ax, 1, std::nullopt), aj::slice(a, ax, 0, 1)}, ax) - b;
          break;
        case 13: r = aj::softmax(a, ax) * b; break;
        case 14: r = aj::cumsum(a, ax) * 0.125f + b; break;
        case 15:  // (a b^T) a over the last two axes: a's shape again
          if (rank >= 2) {
            std::vector<int> perm;
            for (int d = 0; d < rank; ++d) perm.push_back(d);
            std::swap(perm[static_cast<std::size_t>(rank - 1)], perm[static_cast<std::size_t>(rank - 2)]);
            r = aj::matmul(aj::matmul(a, aj::transpose(b, perm)), a) * 0.0625f;
          } else {
            r = a * aj::sum(a * b) * 0.0625f;
          }
          break;
        case 16: r = aj::squeeze(aj::expand_dims(a, ax), ax) + b * 0.5f; break;
      }
      pool.push_back(r);
    }
    std::vector<aj::Array> out{pool.back()};
    if (uni(0, 1)) out.push_back(aj::sum(pool[pool.size() - 2], uni(0, rank - 1)));
    if (uni(0, 2) == 0) out.push_back(x[0]);  // an argument returned unchanged
    return out;
  }
};

}  // namespace ajtest

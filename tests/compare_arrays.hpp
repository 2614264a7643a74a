// One array against the reference's: the comparison the executor tests share
// (test_concat_slices, test_matmul_epilogue, test_reduction_blocks).
#pragma once

#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstddef>

namespace ajtest {

// `got` matches `want`: the same shape and dtype, and every element (read as
// f64) equal to want's, or NaN where want's is NaN (when nan_matches), or
// within rel_tol * (1 + |want|) when rel_tol > 0. The first element that
// differs is reported with its index; the count of those must be 0.
inline void check_matches(const aj::Array& got, const aj::Array& want, double rel_tol, bool nan_matches) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const auto g = got.astype(aj::DType::f64).to_vector<double>();
  const auto w = want.astype(aj::DType::f64).to_vector<double>();
  std::size_t bad = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    const bool ok = (nan_matches && std::isnan(g[k]) && std::isnan(w[k])) || g[k] == w[k] ||
                    (rel_tol > 0 && std::fabs(g[k] - w[k]) <= rel_tol * (1 + std::fabs(w[k])));
    if (!ok && bad++ == 0) {
      CAPTURE(k);
      CHECK(g[k] == w[k]);
    }
  }
  CHECK(bad == 0);
}

}  // namespace ajtest

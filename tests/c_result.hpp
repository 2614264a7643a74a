// A C function's result checked against the C++ function's: status, shape,
// dtype and values; the handle is released (tests of the C API's functions).
#pragma once

#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

namespace ajtest {

inline void check_c_result(aj_status s, aj_array& out, const aj::Array& want) {
  REQUIRE(s == AJ_OK);
  const aj::Array got = aj::from_c(out);
  CHECK(got.shape() == want.shape());
  CHECK(got.dtype() == want.dtype());
  CHECK(got.to_vector<double>() == want.to_vector<double>());
  aj_array_release(out);
  out = aj_array{0};
}

}  // namespace ajtest

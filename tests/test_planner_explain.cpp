// Why not in place: aj::explain names, for every kernel
// output that did not take an input's buffer, the reason, and for a live
// handle where that array was made. Each case also checks that the output
// indeed gets a new buffer, and that the reason's absence gives in-place.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/explain.hpp>

#include <string>
#include <vector>

#include "tests/random_data.hpp"

namespace {

using aj::Array;

std::vector<float> random_floats(std::size_t n, unsigned seed) { return ajtest::random_in<float>(n, seed, -1.0f, 1.0f); }

bool has(const std::string& text, const std::string& what) {
  if (text.find(what) != std::string::npos) return true;
  MESSAGE("not found: " << what << "\nin:\n" << text);
  return false;
}

// Evaluates `a` and returns how many outputs were written in place.
std::uint64_t in_place(const Array& a) {
  aj::reset_stats();
  a.eval();
  return aj::stats().inplace_reuses;
}

}  // namespace

TEST_SUITE("planner") {
TEST_CASE("why not in place: a handle still holds the input, made at its source line") {
  Array x = aj::from_vector(random_floats(100, 1));  // the line explain names
  const int made = __LINE__ - 1;
  Array y = x * 2.0f;
  CHECK(has(aj::explain(y), "not in place: %0 is still held by a handle made at test_planner_explain.cpp:" +
                                std::to_string(made)));
  CHECK(in_place(y) == 0);
  // Without the handle the output takes x's buffer.
  Array z = aj::from_vector(random_floats(100, 1));
  Array w = z * 2.0f;
  z = Array();
  CHECK(aj::explain(w).find("not in place") == std::string::npos);
  CHECK(in_place(w) == 1);
}

TEST_CASE("why not in place: read at another index, elements of another size, another buffer size") {
  {
    Array x = aj::from_vector(random_floats(24, 2), {4, 6});
    Array y = aj::transpose(x) * 2.0f;
    x = Array();
    CHECK(has(aj::explain(y), "not in place: %0 is read at another index or layout than %"));
    CHECK(in_place(y) == 0);
  }
  {
    Array x = aj::from_vector(random_floats(24, 3), {24});
    Array y = x.astype(aj::DType::f64) * 2.0;
    x = Array();
    CHECK(has(aj::explain(y), "not in place: %0 has 4-byte elements, %"));
    CHECK(in_place(y) == 0);
  }
  {
    Array big = aj::from_vector(random_floats(8, 4));
    Array v = aj::slice(big, 0, 0, 4);
    v.eval();  // a view of big's 32-byte buffer
    big = Array();
    Array y = v * 2.0f;
    v = Array();
    CHECK(has(aj::explain(y), "not in place: %0's buffer has another size"));
    CHECK(in_place(y) == 0);
  }
}

TEST_CASE("why not in place: borrowed memory, shared storage, a later reader") {
  {
    std::vector<float> mem = random_floats(16, 5);
    Array b = aj::borrow(mem.data(), {16});
    Array y = b + 1.0f;
    b = Array();
    CHECK(has(aj::explain(y), "not in place: %0 is borrowed memory (never written)"));
    CHECK(in_place(y) == 0);
  }
  {
    Array x = aj::from_vector(random_floats(16, 6));
    Array r = aj::reshape(x, {4, 4});
    r.eval();  // shares x's storage
    Array y = x * 3.0f;
    x = Array();
    CHECK(has(aj::explain(y), "not in place: %0's storage is shared with another array"));
    CHECK(in_place(y) == 0);
  }
  {
    Array x = aj::from_vector(random_floats(24, 7), {4, 6});
    Array a = x * 2.0f;
    Array b = aj::sum(aj::transpose(x), 1);  // another kernel, after a's
    x = Array();
    const std::string plan = aj::explain({a, b});
    CHECK(has(plan, "not in place: %0 is read later by %"));
    aj::reset_stats();
    aj::eval({a, b});
    CHECK(aj::stats().inplace_reuses == 0);
  }
}

TEST_CASE("why not in place: a buffer already taken by another output of the kernel") {
  Array x = aj::from_vector(random_floats(32, 8));
  Array a = x * 2.0f;
  Array b = x + 1.0f;
  x = Array();
  const std::string plan = aj::explain({a, b});
  CHECK(has(plan, "(in place of %0)"));
  CHECK(has(plan, "not in place: %0's buffer went to %"));
  aj::reset_stats();
  aj::eval({a, b});
  CHECK(aj::stats().inplace_reuses == 1);
}
}

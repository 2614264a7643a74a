// User mistakes: each throws aj::Error of kind `user` while the op is traced
// (no kernel runs), and the message names the op, the shapes/dtypes involved
// and the caller's file:line. After an error every array made before it still
// evaluates to the right values, and the failed op leaves no nodes behind.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using aj::Slice;
using std::nullopt;
using i32 = std::int32_t;
using i64 = std::int64_t;
using Dims = std::vector<i64>;

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  return ajtest::random_magnitudes<T>(n, seed, 0.25, 9.0);
}

// An unevaluated array of the given dtype and shape (random values, then one
// op, so that a kernel would have to run to produce it).
Array lazy(DType t, const Dims& dims, unsigned seed = 1) {
  i64 n = 1;
  for (auto d : dims) n *= d;
  const auto un = static_cast<std::size_t>(n);
  switch (t) {
    case DType::bool_: return !aj::from_vector(random_values<bool>(un, seed), Shape(dims));
    case DType::i32: return aj::from_vector(random_values<i32>(un, seed), Shape(dims)) + 1;
    case DType::i64: return aj::from_vector(random_values<i64>(un, seed), Shape(dims)) + 1;
    case DType::f32: return aj::from_vector(random_values<float>(un, seed), Shape(dims)) * 2.0f;
    case DType::f64: return aj::from_vector(random_values<double>(un, seed), Shape(dims)) * 2.0;
    case DType::f16:
    case DType::bf16: return aj::from_vector(random_values<float>(un, seed), Shape(dims)).astype(t) * 2.0f;
    case DType::u8:
    case DType::i8:
    case DType::i16:
    case DType::u16:
    case DType::u32:
    case DType::u64: return aj::from_vector(random_values<i32>(un, seed), Shape(dims)).astype(t) + 1;
  }
  return {};
}

// Runs `f`, which must throw aj::Error of kind user whose message holds every
// one of `parts` and "test_errors.cpp:<line>". No kernel may run (the error is
// a trace-time error) and no graph node may be left behind.
template <class F>
void expect_user_error(F&& f, int line, std::initializer_list<std::string> parts) {
  const std::string where = "test_errors.cpp:" + std::to_string(line);
  CAPTURE(where);
  const aj::Stats before = aj::stats();
  bool thrown = false;
  try {
    f();
  } catch (const aj::Error& e) {
    thrown = true;
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.kind() == aj::Error::Kind::user);
    for (const std::string& p : parts) {
      CHECK_MESSAGE(msg.find(p) != std::string::npos, "message lacks \"" << p << "\"");
    }
    CHECK_MESSAGE(msg.find(where) != std::string::npos, "message lacks \"" << where << "\"");
  } catch (const std::exception& e) {
    thrown = true;
    FAIL_CHECK("threw a std::exception that is not aj::Error: " << e.what());
  }
  CHECK_MESSAGE(thrown, "no exception was thrown");
  const aj::Stats after = aj::stats();
  CHECK_MESSAGE(after.kernels_launched == before.kernels_launched, "a kernel ran before the error");
  CHECK_MESSAGE(after.evals == before.evals, "an evaluation ran before the error");
  CHECK_MESSAGE(after.live_nodes == before.live_nodes, "the failed op left graph nodes behind");
}

}  // namespace

// Keep each use on one line: __LINE__ is the line the op is written on.
#define EXPECT_USER_ERROR(expr, ...) expect_user_error([&] { (void)(expr); }, __LINE__, {__VA_ARGS__})

TEST_SUITE("errors") {

// ---- broadcasting ----------------------------------------------------------------------------

TEST_CASE("incompatible broadcast shapes in + name aj::add, both operands and the line") {
  Array a = lazy(DType::f32, {3, 4}), b = lazy(DType::f32, {5});
  EXPECT_USER_ERROR(a + b, "aj::add", "f32[3, 4]", "f32[5]", "broadcast");
  EXPECT_USER_ERROR(b + a, "aj::add", "f32[3, 4]", "f32[5]", "broadcast");
  EXPECT_USER_ERROR(aj::add(a, b), "aj::add", "f32[3, 4]", "f32[5]");
  Array c = lazy(DType::f32, {2, 3, 4}), d = lazy(DType::f32, {3, 1, 5});
  EXPECT_USER_ERROR(c + d, "aj::add", "f32[2, 3, 4]", "f32[3, 1, 5]");
  // Other binary ops name themselves.
  EXPECT_USER_ERROR(a - b, "aj::sub", "f32[3, 4]", "f32[5]");
  EXPECT_USER_ERROR(a * b, "aj::mul", "f32[3, 4]", "f32[5]");
  EXPECT_USER_ERROR(a < b, "aj::lt", "f32[3, 4]", "f32[5]");
  EXPECT_USER_ERROR(aj::pow(a, b), "aj::pow", "f32[3, 4]", "f32[5]");
  // A size-0 extent does not broadcast against 2.
  Array e = lazy(DType::f32, {0, 3}), f = lazy(DType::f32, {2, 3});
  EXPECT_USER_ERROR(e * f, "aj::mul", "f32[0, 3]", "f32[2, 3]");
}

TEST_CASE("incompatible broadcast shapes in where and maximum name the op and every operand") {
  Array c = lazy(DType::bool_, {3}), a = lazy(DType::f32, {4}), b = lazy(DType::f32, {3});
  EXPECT_USER_ERROR(aj::where(c, a, b), "aj::where", "bool[3]", "f32[4]", "f32[3]");
  EXPECT_USER_ERROR(aj::where(c, b, a), "aj::where", "bool[3]", "f32[4]", "f32[3]");
  Array c2 = lazy(DType::bool_, {2, 5});
  EXPECT_USER_ERROR(aj::where(c2, b, 0.0), "aj::where", "bool[2, 5]", "f32[3]");
  Array x = lazy(DType::f64, {2, 3}), y = lazy(DType::f64, {3, 2});
  EXPECT_USER_ERROR(aj::maximum(x, y), "aj::maximum", "f64[2, 3]", "f64[3, 2]");
  EXPECT_USER_ERROR(aj::minimum(y, x), "aj::minimum", "f64[2, 3]", "f64[3, 2]");
  EXPECT_USER_ERROR(aj::clip(x, y, 1.0), "aj::maximum", "f64[2, 3]", "f64[3, 2]");
}

TEST_CASE("broadcast errors between different dtypes name each operand's own dtype") {
  Array a = lazy(DType::i32, {3, 4}), b = lazy(DType::f64, {5});
  EXPECT_USER_ERROR(a + b, "aj::add", "i32[3, 4]", "f64[5]");
  Array f = lazy(DType::f32, {2}), l = lazy(DType::i64, {3});
  EXPECT_USER_ERROR(aj::maximum(f, l), "aj::maximum", "f32[2]", "i64[3]");
  Array c = lazy(DType::bool_, {2});
  Array i = lazy(DType::i32, {2}), d = lazy(DType::f64, {3});
  EXPECT_USER_ERROR(aj::where(c, i, d), "aj::where", "i32[2]", "f64[3]");
}

TEST_CASE("compound assignment with incompatible shapes fails and leaves the left side unchanged") {
  auto xv = random_values<float>(12, 7);
  Array x = aj::from_vector(xv, {3, 4});
  Array y = lazy(DType::f32, {5});
  EXPECT_USER_ERROR(x += y, "aj::add", "f32[3, 4]", "f32[5]");
  EXPECT_USER_ERROR(x *= y, "aj::mul", "f32[3, 4]", "f32[5]");
  CHECK(x.shape() == Shape{3, 4});
  CHECK(x.to_vector<float>() == xv);
}

// ---- axes ---------------------------------------------------------------------------------------

TEST_CASE("an out-of-range axis in sum, mean, argmax and the other reductions is an error") {
  Array x = lazy(DType::f32, {2, 3});
  EXPECT_USER_ERROR(aj::sum(x, 2), "aj::sum", "axis 2", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::sum(x, -3), "aj::sum", "axis -3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::sum(x, {0, 7}), "aj::sum", "axis 7", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::mean(x, 2), "aj::mean", "axis 2", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::mean(x, -3), "aj::mean", "axis -3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::argmax(x, 2), "aj::argmax", "axis 2", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::argmax(x, -3), "aj::argmax", "axis -3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::argmin(x, 5), "aj::argmin", "axis 5", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::prod(x, 2), "aj::prod", "axis 2", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::max(x, -3), "aj::max", "axis -3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::min(x, 2), "aj::min", "axis 2", "f32[2, 3]");
  Array b = lazy(DType::bool_, {4});
  EXPECT_USER_ERROR(aj::all(b, 1), "aj::all", "axis 1", "bool[4]");
  EXPECT_USER_ERROR(aj::any(b, -2), "aj::any", "axis -2", "bool[4]");
  // Rank 0 has no axes at all.
  Array s = aj::from_vector(std::vector<double>{1.5}, Shape{}) * 2.0;
  EXPECT_USER_ERROR(aj::sum(s, 0), "aj::sum", "axis 0", "f64[]");
  EXPECT_USER_ERROR(aj::argmax(s, 0), "aj::argmax", "f64[]");
}

TEST_CASE("a repeated axis in sum and mean is an error") {
  Array x = lazy(DType::f64, {2, 3, 4});
  EXPECT_USER_ERROR(aj::sum(x, {0, 0}), "aj::sum", "repeated axis", "f64[2, 3, 4]");
  EXPECT_USER_ERROR(aj::sum(x, {1, -2}), "aj::sum", "repeated axis", "f64[2, 3, 4]");
  EXPECT_USER_ERROR(aj::mean(x, {2, 0, -1}), "aj::mean", "repeated axis", "f64[2, 3, 4]");
  EXPECT_USER_ERROR(aj::prod(x, {-3, 0}), "aj::prod", "repeated axis", "f64[2, 3, 4]");
}

TEST_CASE("an out-of-range axis in expand_dims, squeeze, slice, concatenate, stack is an error") {
  Array x = lazy(DType::f32, {2, 3});
  // expand_dims takes axes of the result: -3 .. 2 for a rank-2 input.
  EXPECT_USER_ERROR(aj::expand_dims(x, 3), "aj::expand_dims", "axis 3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::expand_dims(x, -4), "aj::expand_dims", "axis -4", "f32[2, 3]");
  Array y = lazy(DType::f32, {2, 1});
  EXPECT_USER_ERROR(aj::squeeze(y, 2), "aj::squeeze", "axis 2", "f32[2, 1]");
  EXPECT_USER_ERROR(aj::squeeze(y, -3), "aj::squeeze", "axis -3", "f32[2, 1]");
  EXPECT_USER_ERROR(aj::slice(x, 2, 0, 1), "aj::slice", "axis 2", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::slice(x, -3, 0, 1), "aj::slice", "axis -3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::concatenate({x, x}, 2), "aj::concatenate", "axis 2", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::concatenate({x, x}, -3), "aj::concatenate", "axis -3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::stack({x, x}, 3), "aj::stack", "axis 3", "f32[2, 3]");
  EXPECT_USER_ERROR(aj::stack({x, x}, -4), "aj::stack", "axis -4", "f32[2, 3]");
}

// ---- shapes -------------------------------------------------------------------------------------

TEST_CASE("reshape to a different element count, or with two -1 extents, is an error") {
  Array x = lazy(DType::f32, {3, 4});
  EXPECT_USER_ERROR(aj::reshape(x, {5, 3}), "aj::reshape", "f32[3, 4]", "[5, 3]");
  EXPECT_USER_ERROR(x.reshape({13}), "aj::reshape", "f32[3, 4]", "[13]");
  EXPECT_USER_ERROR(aj::reshape(x, {-1, -1}), "aj::reshape", "-1", "[-1, -1]");
  EXPECT_USER_ERROR(aj::reshape(x, {2, -1, -1}), "aj::reshape", "[2, -1, -1]");
  EXPECT_USER_ERROR(aj::reshape(x, {5, -1}), "aj::reshape", "f32[3, 4]", "[5, -1]");
  EXPECT_USER_ERROR(aj::reshape(x, {-2, -6}), "aj::reshape", "negative extent");
  EXPECT_USER_ERROR(aj::reshape(x, Shape{}), "aj::reshape", "f32[3, 4]", "[]");
}

TEST_CASE("transpose with axes that are not a permutation is an error") {
  Array x = lazy(DType::i64, {2, 3});
  EXPECT_USER_ERROR(aj::transpose(x, {0, 0}), "aj::transpose", "(0, 0)", "i64[2, 3]");
  EXPECT_USER_ERROR(aj::transpose(x, {0}), "aj::transpose", "(0)", "i64[2, 3]");
  EXPECT_USER_ERROR(aj::transpose(x, {0, 2}), "aj::transpose", "(0, 2)", "i64[2, 3]");
  EXPECT_USER_ERROR(aj::transpose(x, {1, 0, 2}), "aj::transpose", "i64[2, 3]");
  EXPECT_USER_ERROR(x.transpose({-1, 1}), "aj::transpose", "(-1, 1)", "i64[2, 3]");
}

TEST_CASE("slice bounds out of range and step 0 are errors, not clamped") {
  Array x = lazy(DType::f32, {4, 2});
  EXPECT_USER_ERROR(aj::slice(x, 0, 5, nullopt), "aj::slice", "start 5", "extent 4", "f32[4, 2]");
  EXPECT_USER_ERROR(aj::slice(x, 0, nullopt, -9), "aj::slice", "stop -9", "extent 4", "f32[4, 2]");
  EXPECT_USER_ERROR(aj::slice(x, 0, -5, 2), "aj::slice", "start -5", "extent 4");
  EXPECT_USER_ERROR(aj::slice(x, 0, 0, 5), "aj::slice", "stop 5", "extent 4");
  EXPECT_USER_ERROR(aj::slice(x, 0, 0, 4, 0), "aj::slice", "step 0");
  EXPECT_USER_ERROR(aj::slice(x, {Slice(nullopt, nullopt, 0)}), "aj::slice", "step 0");
  // Negative steps: start must name an element.
  EXPECT_USER_ERROR(aj::slice(x, 0, 4, nullopt, -1), "aj::slice", "start 4", "extent 4");
  // The second axis (extent 2), through the list form.
  EXPECT_USER_ERROR(aj::slice(x, {Slice(), Slice(3, nullopt)}), "aj::slice", "start 3", "extent 2");
  // More slices than axes.
  EXPECT_USER_ERROR(aj::slice(x, {Slice(), Slice(), Slice()}), "aj::slice", "f32[4, 2]");
}

TEST_CASE("shapes whose element count overflows int64, and negative extents, are errors") {
  const i64 big = i64{1} << 40;
  EXPECT_USER_ERROR(aj::ones({big, big}), "aj::ones", "[1099511627776, 1099511627776]");
  EXPECT_USER_ERROR(aj::zeros({big, big, 2}, DType::i32), "aj::zeros", "int64");
  EXPECT_USER_ERROR(aj::full({big, big}, 1.5, DType::f64), "aj::full", "int64");
  EXPECT_USER_ERROR(aj::zeros({2, -3}), "aj::zeros", "negative extent", "[2, -3]");
  EXPECT_USER_ERROR(aj::ones({-1}), "aj::ones", "negative extent", "[-1]");
  EXPECT_USER_ERROR(aj::random::uniform({big, big}), "aj::random::uniform", "int64");
  EXPECT_USER_ERROR(aj::from_vector(std::vector<float>{1, 2}, {2, -1}), "aj::from_vector", "negative");
  Array x = lazy(DType::f32, {2});
  EXPECT_USER_ERROR(aj::broadcast_to(x, {big, big, 2}), "aj::broadcast_to", "int64");
  EXPECT_USER_ERROR(aj::reshape(x, {big, big, big}), "aj::reshape", "int64");
  EXPECT_USER_ERROR(aj::eye(big, big * 16), "aj::eye", "int64");
}

TEST_CASE("squeeze of an axis whose extent is not 1 is an error") {
  Array x = lazy(DType::f32, {3, 1, 2});
  EXPECT_USER_ERROR(aj::squeeze(x, 0), "aj::squeeze", "extent 3", "f32[3, 1, 2]");
  EXPECT_USER_ERROR(aj::squeeze(x, -1), "aj::squeeze", "extent 2", "f32[3, 1, 2]");
  EXPECT_USER_ERROR(aj::squeeze(x, {1, 2}), "aj::squeeze", "extent 2", "f32[3, 1, 2]");
}

TEST_CASE("broadcast_to a shape the array cannot broadcast to is an error") {
  Array x = lazy(DType::f32, {3});
  EXPECT_USER_ERROR(aj::broadcast_to(x, {4}), "aj::broadcast_to", "f32[3]", "[4]");
  EXPECT_USER_ERROR(aj::broadcast_to(x, {3, 2}), "aj::broadcast_to", "f32[3]", "[3, 2]");
  Array y = lazy(DType::f32, {2, 3});
  EXPECT_USER_ERROR(aj::broadcast_to(y, {3}), "aj::broadcast_to", "f32[2, 3]", "[3]");
}

// ---- dtypes -------------------------------------------------------------------------------------

TEST_CASE("ops given a dtype they do not accept name the op and the dtype") {
  Array f = lazy(DType::f32, {3}), i = lazy(DType::i32, {3}), b = lazy(DType::bool_, {3});
  EXPECT_USER_ERROR(f && f, "aj::and", "f32[3]");
  EXPECT_USER_ERROR(b && f, "aj::and", "f32[3]");
  EXPECT_USER_ERROR(i || b, "aj::or", "i32[3]");
  EXPECT_USER_ERROR(b && 1, "aj::and", "scalar 1");
  EXPECT_USER_ERROR(!i, "aj::not", "i32[3]");
  EXPECT_USER_ERROR(aj::logical_not(f), "aj::not", "f32[3]");
  EXPECT_USER_ERROR(-b, "aj::neg", "bool[3]");
  EXPECT_USER_ERROR(aj::negative(b), "aj::neg", "bool[3]");
  EXPECT_USER_ERROR(aj::exp(b), "aj::exp", "bool[3]");
  EXPECT_USER_ERROR(aj::sqrt(b), "aj::sqrt", "bool[3]");
  EXPECT_USER_ERROR(aj::abs(b), "aj::abs", "bool[3]");
  EXPECT_USER_ERROR(aj::sign(b), "aj::sign", "bool[3]");
  EXPECT_USER_ERROR(aj::round(b), "aj::round", "bool[3]");
  EXPECT_USER_ERROR(b + b, "aj::add", "bool[3]");
  EXPECT_USER_ERROR(b * b, "aj::mul", "bool[3]");
  EXPECT_USER_ERROR(b - true, "aj::sub", "bool[3]");
  EXPECT_USER_ERROR(b / b, "aj::div", "bool[3]");
  EXPECT_USER_ERROR(b % b, "aj::mod", "bool[3]");
  EXPECT_USER_ERROR(aj::pow(b, b), "aj::pow", "bool[3]");
  EXPECT_USER_ERROR(aj::true_divide(b, b), "aj::true_divide", "bool[3]");
  EXPECT_USER_ERROR(aj::where(i, f, f), "aj::where", "condition", "i32[3]");
  EXPECT_USER_ERROR(aj::where(f, f, f), "aj::where", "condition", "f32[3]");
  EXPECT_USER_ERROR(aj::where(1, f, f), "aj::where", "scalar 1");
  Array m = lazy(DType::bool_, {2, 3}), n = lazy(DType::bool_, {3, 2});
  EXPECT_USER_ERROR(aj::matmul(m, n), "aj::matmul", "bool[2, 3]", "bool[3, 2]");
}

TEST_CASE("an integer scalar that does not fit an i32 operand is an error, not a wrap") {
  Array i = lazy(DType::i32, {3});
  EXPECT_USER_ERROR(i + 3000000000LL, "aj::add", "3000000000", "i32");
  EXPECT_USER_ERROR(3000000000LL + i, "aj::add", "3000000000", "i32");
  EXPECT_USER_ERROR(i * -3000000000LL, "aj::mul", "-3000000000", "i32");
  EXPECT_USER_ERROR(i == (i64{1} << 40), "aj::eq", "1099511627776", "i32");
  EXPECT_USER_ERROR(aj::maximum(i, 2147483648LL), "aj::maximum", "2147483648", "i32");
  EXPECT_USER_ERROR(aj::where(i > 0, i, 3000000000LL), "aj::where", "3000000000", "i32");
  EXPECT_USER_ERROR(aj::full({2}, 3000000000LL, DType::i32), "aj::full", "3000000000", "i32");
  // The limits themselves fit.
  auto iv = random_values<i32>(3, 17);
  Array j = aj::from_vector(iv, {3});
  Array k = j + 2147483647LL;
  CHECK(k.dtype() == DType::i32);
  CHECK(k.to_vector<i32>() == std::vector<i32>{static_cast<i32>(static_cast<std::uint32_t>(iv[0]) + 2147483647u),
                                               static_cast<i32>(static_cast<std::uint32_t>(iv[1]) + 2147483647u),
                                               static_cast<i32>(static_cast<std::uint32_t>(iv[2]) + 2147483647u)});
  CHECK((j - (-2147483647LL - 1)).dtype() == DType::i32);
  // i64 operands take any int64 scalar.
  CHECK((lazy(DType::i64, {2}) + 3000000000LL).dtype() == DType::i64);
}

// ---- linear algebra, joining --------------------------------------------------------------------

TEST_CASE("matmul with mismatched inner extents is an error naming both shapes") {
  Array a = lazy(DType::f32, {2, 3}), b = lazy(DType::f32, {4, 5});
  EXPECT_USER_ERROR(aj::matmul(a, b), "aj::matmul", "f32[2, 3]", "f32[4, 5]");
  Array v = lazy(DType::f32, {3}), w = lazy(DType::f32, {4});
  EXPECT_USER_ERROR(aj::matmul(v, w), "aj::matmul", "f32[3]", "f32[4]");
  EXPECT_USER_ERROR(aj::matmul(b, v), "aj::matmul", "f32[4, 5]", "f32[3]");
  Array s = aj::from_vector(std::vector<float>{1.0f}, Shape{}) * 2.0f;
  EXPECT_USER_ERROR(aj::matmul(s, a), "aj::matmul", "f32[]", "f32[2, 3]");
}

TEST_CASE("matmul with batch extents that do not broadcast names both operands") {
  Array a = lazy(DType::f64, {2, 2, 3}), b = lazy(DType::f64, {3, 3, 4});
  EXPECT_USER_ERROR(aj::matmul(a, b), "aj::matmul", "f64[2, 2, 3]", "f64[3, 3, 4]");
}

TEST_CASE("concatenate with mismatched extents, and stack with unequal shapes, are errors") {
  Array a = lazy(DType::f32, {2, 3}), b = lazy(DType::f32, {2, 4}), c = lazy(DType::f32, {3});
  EXPECT_USER_ERROR(aj::concatenate({a, b}, 0), "aj::concatenate", "f32[2, 3]", "f32[2, 4]");
  EXPECT_USER_ERROR(aj::concatenate({a, a, b}), "aj::concatenate", "f32[2, 3]", "f32[2, 4]");
  EXPECT_USER_ERROR(aj::concatenate({a, c}, 0), "aj::concatenate", "f32[2, 3]", "f32[3]");
  EXPECT_USER_ERROR(aj::concatenate({}, 0), "aj::concatenate", "at least one");
  EXPECT_USER_ERROR(aj::stack({a, b}), "aj::stack", "f32[2, 3]", "f32[2, 4]");
  EXPECT_USER_ERROR(aj::stack({a, a, c}, 1), "aj::stack", "f32[2, 3]", "f32[3]");
  EXPECT_USER_ERROR(aj::stack({}), "aj::stack", "at least one");
}

// ---- reductions without an identity ---------------------------------------------------------------

TEST_CASE("max, min, argmax, argmin over an empty axis are errors at trace time") {
  Array e = lazy(DType::f32, {0, 3});
  EXPECT_USER_ERROR(aj::max(e, 0), "aj::max", "f32[0, 3]", "empty");
  EXPECT_USER_ERROR(aj::min(e), "aj::min", "f32[0, 3]", "empty");
  EXPECT_USER_ERROR(aj::argmax(e, 0), "aj::argmax", "f32[0, 3]");
  EXPECT_USER_ERROR(aj::argmin(e), "aj::argmin", "f32[0, 3]");
  Array e1 = lazy(DType::i64, {0});
  EXPECT_USER_ERROR(aj::max(e1), "aj::max", "i64[0]");
  // Reducing the non-empty axis of an empty array is fine (empty result).
  CHECK(aj::max(e, 1).shape() == Shape{0});
}

// ---- creation, reading values out ------------------------------------------------------------------

TEST_CASE("from_vector with the wrong number of values is an error") {
  std::vector<float> five = random_values<float>(5, 23);
  EXPECT_USER_ERROR(aj::from_vector(five, {2, 3}), "aj::from_vector", "5", "[2, 3]");
  EXPECT_USER_ERROR(aj::from_vector(five, Shape{}), "aj::from_vector", "5", "[]");
  EXPECT_USER_ERROR(aj::from_vector(std::vector<i32>{}, {1}), "aj::from_vector", "0", "[1]");
}

TEST_CASE("item() on an array without exactly one element is an error") {
  Array x = lazy(DType::f32, {2, 3});
  EXPECT_USER_ERROR(x.item<float>(), "aj::item", "[2, 3]", "6");
  Array e = lazy(DType::i64, {0});
  EXPECT_USER_ERROR(e.item<i64>(), "aj::item", "[0]");
  // One element of any rank is fine.
  Array one = aj::from_vector(std::vector<double>{4.5}, {1, 1, 1}) * 2.0;
  CHECK(one.item<double>() == 9.0);
}

TEST_CASE("other creation mistakes: bad arange, linspace, eye, random dtypes") {
  EXPECT_USER_ERROR(aj::arange(0.0, 10.0, 0.0), "aj::arange", "step");
  EXPECT_USER_ERROR(aj::arange(-3), "aj::arange", "-3");
  EXPECT_USER_ERROR(aj::arange(4, DType::bool_), "aj::arange", "bool");
  EXPECT_USER_ERROR(aj::linspace(0.0, 1.0, -2), "aj::linspace", "-2");
  EXPECT_USER_ERROR(aj::eye(-2), "aj::eye", "negative");
  EXPECT_USER_ERROR(aj::random::uniform({3}, 0.0, 1.0, DType::i32), "aj::random::uniform", "i32");
  EXPECT_USER_ERROR(aj::random::normal({3}, 0.0, -1.0), "aj::random::normal", "stddev");
}

// ---- empty handles ---------------------------------------------------------------------------------

TEST_CASE("using a default-constructed Array is an error naming the op and the line") {
  Array e;
  CHECK_FALSE(e.valid());
  Array x = lazy(DType::f32, {2});
  EXPECT_USER_ERROR(e + 1, "aj::add", "empty");
  EXPECT_USER_ERROR(x * e, "aj::mul", "empty");
  EXPECT_USER_ERROR(-e, "aj::neg", "empty");
  EXPECT_USER_ERROR(aj::exp(e), "aj::exp", "empty");
  EXPECT_USER_ERROR(aj::where(e, x, x), "aj::where", "empty");
  EXPECT_USER_ERROR(aj::sum(e), "aj::sum", "empty");
  EXPECT_USER_ERROR(aj::argmax(e), "aj::argmax", "empty");
  EXPECT_USER_ERROR(aj::reshape(e, {1}), "aj::reshape", "empty");
  EXPECT_USER_ERROR(aj::transpose(e), "aj::transpose", "empty");
  EXPECT_USER_ERROR(aj::concatenate({x, e}), "aj::concatenate", "empty");
  EXPECT_USER_ERROR(aj::matmul(e, x), "aj::matmul", "empty");
  EXPECT_USER_ERROR(e.astype(DType::f64), "aj::astype", "empty");
  EXPECT_USER_ERROR(e.eval(), "aj::eval", "empty");
  EXPECT_USER_ERROR(aj::eval({x, e}), "aj::eval", "empty");
  EXPECT_USER_ERROR(e.item<float>(), "aj::item", "empty");
  EXPECT_USER_ERROR(e.to_vector<float>(), "empty");
  // Queries name the caller's line too.
  EXPECT_USER_ERROR(e.shape(), "aj::shape", "empty");
  EXPECT_USER_ERROR(e.dtype(), "aj::dtype", "empty");
  EXPECT_USER_ERROR(e.size(), "aj::size", "empty");
}

TEST_CASE("using a moved-from Array is an error like an empty one") {
  Array x = lazy(DType::f64, {3});
  Array y = std::move(x);
  EXPECT_USER_ERROR(x + y, "aj::add", "empty");  // NOLINT(bugprone-use-after-move): on purpose
  CHECK(y.shape() == Shape{3});
}

// ---- nothing is lost after an error ------------------------------------------------------------------

TEST_CASE("after errors, arrays made before them still evaluate correctly and new ops work") {
  auto av = random_values<float>(12, 31);
  auto bv = random_values<float>(4, 32);
  Array a = aj::from_vector(av, {3, 4});
  Array b = aj::from_vector(bv, {4});
  Array c = a * 2.0f + b;          // unevaluated
  Array s = aj::sum(c, 1);         // unevaluated, depends on c
  Array t = aj::transpose(c) - 1.0f;  // unevaluated view of c
  const i64 nodes = static_cast<i64>(aj::stats().live_nodes);

  Array wrong = aj::from_vector(random_values<float>(5, 33), {5});
  const i64 nodes_with_wrong = static_cast<i64>(aj::stats().live_nodes);
  EXPECT_USER_ERROR(c + wrong, "aj::add", "f32[3, 4]", "f32[5]");
  EXPECT_USER_ERROR(aj::sum(s, 3), "aj::sum", "axis 3");
  EXPECT_USER_ERROR(aj::reshape(t, {5, 5}), "aj::reshape", "f32[4, 3]");
  EXPECT_USER_ERROR(aj::maximum(c.astype(DType::f64), wrong), "aj::maximum");
  EXPECT_USER_ERROR(aj::matmul(c, c), "aj::matmul", "f32[3, 4]");
  EXPECT_USER_ERROR(c && c, "aj::and");
  EXPECT_USER_ERROR(aj::slice(t, 0, 9, nullopt), "aj::slice");
  CHECK(static_cast<i64>(aj::stats().live_nodes) == nodes_with_wrong);
  wrong = Array();
  CHECK(static_cast<i64>(aj::stats().live_nodes) == nodes);

  // Nothing evaluated yet; now everything evaluates to the right values.
  CHECK_FALSE(c.is_evaluated());
  std::vector<float> cw, sw(3, 0.0f), tw;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 4; ++k) {
      float v = av[static_cast<std::size_t>(r * 4 + k)] * 2.0f + bv[static_cast<std::size_t>(k)];
      cw.push_back(v);
    }
  }
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 4; ++k) sw[static_cast<std::size_t>(r)] += cw[static_cast<std::size_t>(r * 4 + k)];
  }
  for (int k = 0; k < 4; ++k) {
    for (int r = 0; r < 3; ++r) tw.push_back(cw[static_cast<std::size_t>(r * 4 + k)] - 1.0f);
  }
  CHECK(c.to_vector<float>() == cw);
  CHECK(t.to_vector<float>() == tw);
  CHECK(t.shape() == Shape{4, 3});
  std::vector<float> sg = s.to_vector<float>();
  REQUIRE(sg.size() == 3);
  for (std::size_t r = 0; r < 3; ++r) CHECK(sg[r] == doctest::Approx(sw[r]).epsilon(1e-6));

  // The same ops, written correctly after the errors, work.
  Array ok = c + aj::broadcast_to(b, {3, 4});
  std::vector<float> okw;
  for (std::size_t i = 0; i < 12; ++i) okw.push_back(cw[i] + bv[i % 4]);
  CHECK(ok.to_vector<float>() == okw);
  CHECK(aj::sum(s).item<float>() == doctest::Approx(sw[0] + sw[1] + sw[2]).epsilon(1e-6));
}

TEST_CASE("an error between evaluations does not disturb evaluated arrays") {
  auto av = random_values<i64>(6, 41);
  Array a = aj::from_vector(av, {2, 3}) * 3;
  a.eval();
  CHECK(a.is_evaluated());
  Array bad = lazy(DType::i64, {4});
  EXPECT_USER_ERROR(a - bad, "aj::sub", "i64[2, 3]", "i64[4]");
  EXPECT_USER_ERROR(a / bad, "aj::div", "i64[2, 3]", "i64[4]");
  std::vector<i64> want;
  for (i64 v : av) want.push_back(v * 3);
  CHECK(a.to_vector<i64>() == want);
  std::vector<i64> want2;
  for (i64 v : want) want2.push_back(v - 1);
  CHECK((a - 1).to_vector<i64>() == want2);
}

}  // TEST_SUITE

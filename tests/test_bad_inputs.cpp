// Bad inputs, systematically. One table below tries, for every
// public function, each invalid class of each argument: negative, zero, huge
// and overflowing extents; out-of-range and duplicate axes; out-of-range
// slices and steps; dtypes the op rejects; scalars that do not fit; empty and
// moved-from handles; borrowed pointers with bad strides; non-finite
// parameters. Every row must throw aj::Error of its kind naming the op and
// the row's own line, leave live nodes and live bytes as they were, and leave
// the library computing correctly.
//
// After the table: one regression test per bug the issue found, named after
// it, and the out-of-memory sweep (a replaced operator new fails the k-th
// allocation of an op, for every k, in a child process).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu/host_memory.hpp"
#include "jit/disk_cache.hpp"
#include "tests/random_data.hpp"

// ---- allocation failure injection ---------------------------------------------------------------
// The k-th allocation on this thread after fail_allocation(k) fails, once:
// as the system's failure would, it calls the new_handler when one is
// installed (the JIT's, which gives its reserve back: the allocation is then
// retried), else throws std::bad_alloc. Off (the default) it is plain malloc,
// as libstdc++'s.
namespace {
thread_local long t_allocations_until_failure = -1;
void fail_allocation(long k) { t_allocations_until_failure = k; }
// Every element of `got` within 1e-14 relative of `want` (the JIT's exp and libm's may differ in the last bit).
bool close_to(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-14 * std::fabs(want[i]))) return false;
  }
  return true;
}
// Whether the allocation fail_allocation(k) armed has happened (and failed).
bool failure_reached() { return t_allocations_until_failure < 0; }
}  // namespace

// The largest operator-new request on this thread since the last call
// (tests/test_io.cpp: saving copies no array's values).
namespace {
thread_local std::size_t t_largest_new = 0;
}
std::size_t aj_test_largest_new_since_last_call() { return std::exchange(t_largest_new, 0); }

void* operator new(std::size_t n) {
  t_largest_new = std::max(t_largest_new, n);
  bool fail = t_allocations_until_failure >= 0 && t_allocations_until_failure-- == 0;
  for (;;) {
    if (!fail) {
      if (void* p = std::malloc(n ? n : 1)) return p;
    }
    fail = false;
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}
// GCC takes these for a free() of what `new` returned; they are the
// replacements of that `new`, which mallocs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using aj::Slice;
using std::nullopt;
using i64 = std::int64_t;
using u64 = std::uint64_t;
using Kind = aj::Error::Kind;

constexpr i64 kBig = i64{1} << 40;  // kBig * kBig overflows int64
constexpr i64 kMax = std::numeric_limits<i64>::max();
constexpr i64 kMin = std::numeric_limits<i64>::min();
constexpr u64 kAboveI64 = u64{1} << 63;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string here(int line) { return "test_bad_inputs.cpp:" + std::to_string(line); }

struct BadCall {
  std::string op;  // "aj::<op>", as the message must name it
  int line;        // the row's line, as the message must name it
  std::function<void()> call;
  Kind kind = Kind::user;
};

// One row per line: the call's own source location is that line.
#define BAD(op, expr) BadCall{op, __LINE__, [&] { (void)(expr); }}

// The library still computes right: a fresh small program, checked by hand.
void check_still_usable() {
  const std::vector<double> v = ajtest::random_magnitudes<double>(5, 99, 0.5, 4.0);
  double want = 0;
  for (double x : v) want += x * 2.0 + 1.0;
  const double got = aj::sum(aj::from_vector(v) * 2.0 + 1.0).item<double>();
  CHECK(got == doctest::Approx(want).epsilon(1e-12));
}

// Runs `row`, which must throw as described, and change nothing.
void expect_rejected(const BadCall& row) {
  const std::string where = here(row.line);
  CAPTURE(where);
  CAPTURE(row.op);
  const aj::Stats before = aj::stats();
  std::string msg;
  bool thrown = false;
  try {
    row.call();
  } catch (const aj::Error& e) {
    thrown = true;
    msg = e.what();
    CAPTURE(msg);
    CHECK(e.kind() == row.kind);
    CHECK_MESSAGE(msg.find(row.op + ":") != std::string::npos, "the message does not name the op");
    CHECK_MESSAGE(msg.find(where) != std::string::npos, "the message does not name the caller's line");
  } catch (const std::exception& e) {
    thrown = true;
    FAIL_CHECK("threw a std::exception that is not aj::Error: " << e.what());
  }
  CHECK_MESSAGE(thrown, "accepted: no exception was thrown");
  const aj::Stats after = aj::stats();
  CHECK_MESSAGE(after.live_nodes == before.live_nodes, "the failed call left graph nodes behind");
  CHECK_MESSAGE(after.live_bytes == before.live_bytes, "the failed call left buffers behind");
  check_still_usable();
}

template <class T>
Array random_array(DType t, Shape s, unsigned seed) {
  const auto n = static_cast<std::size_t>(s.numel());
  Array a = aj::from_vector(ajtest::random_magnitudes<T>(n, seed, 0.5, 9.0), s);
  return t == DType::bool_ ? a : a + T(1);  // unevaluated, except bool
}

}  // namespace

TEST_SUITE("bad inputs") {

TEST_CASE("the bad-input table: every row is a located aj::Error that changes nothing") {
  Array f = random_array<float>(DType::f32, {2, 3}, 1);     // lazy f32[2, 3]
  Array fe = random_array<float>(DType::f32, {2, 3}, 2);    // evaluated below
  fe.eval();
  Array i = random_array<std::int32_t>(DType::i32, {2, 3}, 3);
  Array l = random_array<i64>(DType::i64, {4}, 4);     // {4} does not broadcast with {2, 3}
  Array d = random_array<double>(DType::f64, {4}, 5);
  Array b = random_array<bool>(DType::bool_, {2, 3}, 6);
  Array s0 = aj::full({}, 2.5, DType::f64);  // rank 0
  Array e03 = aj::zeros({0, 3});
  Array e00 = aj::zeros({0, 0});
  Array one = aj::full({1}, 1.5, DType::f32);
  Array one_d = aj::full({1}, 1.5, DType::f64);
  Array one_i = aj::full({1}, 7, DType::i32);
  Array none;
  Array moved = random_array<float>(DType::f32, {3}, 7);
  Array taker = std::move(moved);
  std::vector<float> buf = ajtest::random_magnitudes<float>(12, 8, 0.5, 9.0);
  float* p = buf.data();

  const std::vector<BadCall> table = {
      // ---- creation: extents (negative, int64 overflow, more bytes than any system) ----
      BAD("aj::zeros", aj::zeros({2, -3})),
      BAD("aj::zeros", aj::zeros({kBig, kBig})),
      BAD("aj::zeros", aj::zeros({i64{1} << 61}, DType::f64)),
      BAD("aj::ones", aj::ones({-1})),
      BAD("aj::ones", aj::ones({kBig, kBig, 0, -1})),
      BAD("aj::ones", aj::ones({i64{1} << 61}, DType::f32)),
      BAD("aj::full", aj::full({kMin}, 1.0, DType::f32)),
      BAD("aj::full", aj::full({kMax, 2}, 1.0, DType::f32)),
      BAD("aj::full", aj::full({i64{1} << 60, 2}, 1, DType::i64)),
      // ---- creation: values that do not fit the dtype ----
      BAD("aj::full", aj::full({2}, 3000000000LL, DType::i32)),
      BAD("aj::full", aj::full({2}, -3000000000LL, DType::i32)),
      BAD("aj::full", aj::full({2}, kAboveI64, DType::i64)),
      BAD("aj::full", aj::full({2}, kAboveI64, DType::i32)),
      // ---- arange ----
      BAD("aj::arange", aj::arange(-1)),
      BAD("aj::arange", aj::arange(kMin)),
      BAD("aj::arange", aj::arange(3, DType::bool_)),
      BAD("aj::arange", aj::arange(i64{1} << 61, DType::f64)),
      BAD("aj::arange", aj::arange(kMax, DType::i64)),
      BAD("aj::arange", aj::arange(0.0, 10.0, 0.0)),
      BAD("aj::arange", aj::arange(kNaN, 10.0, 1.0)),
      BAD("aj::arange", aj::arange(0.0, kInf, 1.0)),
      BAD("aj::arange", aj::arange(0.0, 1.0, kNaN)),
      BAD("aj::arange", aj::arange(0.0, 1.0, -kInf)),
      BAD("aj::arange", aj::arange(0.0, 1e300, 1e-300)),
      BAD("aj::arange", aj::arange(-DBL_MAX, DBL_MAX, 1e300)),
      BAD("aj::arange", aj::arange(0.0, 0x1p61, 1.0, DType::f64)),
      BAD("aj::arange", aj::arange(0.0, 3.0, 1.0, DType::bool_)),
      // ---- linspace ----
      BAD("aj::linspace", aj::linspace(0.0, 1.0, -2)),
      BAD("aj::linspace", aj::linspace(0.0, 1.0, kMin)),
      BAD("aj::linspace", aj::linspace(0.0, 1.0, i64{1} << 62, DType::f32)),
      BAD("aj::linspace", aj::linspace(0.0, 1.0, 3, DType::bool_)),
      BAD("aj::linspace", aj::linspace(kNaN, 1.0, 3)),
      BAD("aj::linspace", aj::linspace(0.0, -kInf, 3)),
      // ---- eye ----
      BAD("aj::eye", aj::eye(-2)),
      BAD("aj::eye", aj::eye(3, -1)),
      BAD("aj::eye", aj::eye(kBig, kBig)),
      BAD("aj::eye", aj::eye(i64{1} << 31, i64{1} << 31, 0, DType::f64)),
      // ---- from_vector ----
      BAD("aj::from_vector", aj::from_vector(buf, {5, 2})),
      BAD("aj::from_vector", aj::from_vector(buf, {-12})),
      BAD("aj::from_vector", aj::from_vector(buf, {12, -1})),
      BAD("aj::from_vector", aj::from_vector(buf, {kBig, kBig})),
      BAD("aj::from_vector", aj::from_vector(buf, Shape{})),
      // ---- borrow: null pointers, stride counts, strides whose span overflows ----
      BAD("aj::borrow", aj::borrow(static_cast<float*>(nullptr), {3})),
      BAD("aj::borrow", aj::borrow(p, {-3})),
      BAD("aj::borrow", aj::borrow(p, {kBig, kBig})),
      BAD("aj::borrow", aj::borrow(p, {2, 3}, {1})),
      BAD("aj::borrow", aj::borrow(p, {3}, {1, 1})),
      BAD("aj::borrow", aj::borrow(p, {3}, {kMax})),
      BAD("aj::borrow", aj::borrow(p, {3}, {kMin})),
      BAD("aj::borrow", aj::borrow(p, {3}, {i64{1} << 62})),
      BAD("aj::borrow", aj::borrow(p, {3}, {-(i64{1} << 62)})),
      BAD("aj::borrow", aj::borrow(p, {2, 2}, {i64{1} << 62, i64{1} << 62})),
      BAD("aj::borrow", aj::borrow(p, {2}, {i64{1} << 61})),
      BAD("aj::borrow", aj::borrow(p, {2}, {-(i64{1} << 50)})),
      BAD("aj::borrow", aj::borrow(static_cast<const float*>(p), {2, 2}, {1, kMin})),
      // ---- cuda::borrow: checked before any driver call (none on most machines) ----
      BAD("aj::cuda::borrow", aj::cuda::borrow(nullptr, DType::f32, {3}, {}, 0, aj::cuda::no_sync())),
      BAD("aj::cuda::borrow", aj::cuda::borrow(p, DType::f32, {2, 3}, {1}, 0, aj::cuda::no_sync())),
      BAD("aj::cuda::borrow", aj::cuda::borrow(p, DType::f32, {-3}, {}, 0, aj::cuda::no_sync())),
      BAD("aj::cuda::borrow", aj::cuda::borrow(p, DType::f32, {3}, {}, -1, aj::cuda::no_sync())),
      // ---- random: parameters, dtypes, extents ----
      BAD("aj::random::uniform", aj::random::uniform({3}, 1.0, 0.0)),
      BAD("aj::random::uniform", aj::random::uniform({3}, -kInf, kInf)),
      BAD("aj::random::uniform", aj::random::uniform({3}, 0.0, kInf)),
      BAD("aj::random::uniform", aj::random::uniform({3}, kNaN, 1.0)),
      BAD("aj::random::uniform", aj::random::uniform({3}, 0.0, kNaN)),
      BAD("aj::random::uniform", aj::random::uniform({3}, -DBL_MAX, DBL_MAX, DType::f64)),
      BAD("aj::random::uniform", aj::random::uniform({3}, 0.0, 1e300, DType::f32)),
      BAD("aj::random::uniform", aj::random::uniform({3}, 0.0, 1.0, DType::i32)),
      BAD("aj::random::uniform", aj::random::uniform({3}, 0.0, 1.0, DType::bool_)),
      BAD("aj::random::uniform", aj::random::uniform({-3})),
      BAD("aj::random::uniform", aj::random::uniform({kBig, kBig})),
      BAD("aj::random::uniform", aj::random::uniform({i64{1} << 61})),
      BAD("aj::random::normal", aj::random::normal({3}, 0.0, -1.0)),
      BAD("aj::random::normal", aj::random::normal({3}, 0.0, kNaN)),
      BAD("aj::random::normal", aj::random::normal({3}, 0.0, kInf)),
      BAD("aj::random::normal", aj::random::normal({3}, -kInf, 1.0)),
      BAD("aj::random::normal", aj::random::normal({3}, 1e300, 1.0, DType::f32)),
      BAD("aj::random::normal", aj::random::normal({3}, 0.0, 1.0, DType::i64)),
      BAD("aj::random::normal", aj::random::normal({2, -2})),
      // ---- elementwise: shapes ----
      BAD("aj::add", f + l),
      BAD("aj::sub", aj::subtract(f, e03)),
      BAD("aj::mul", f * aj::zeros({3, 2})),
      BAD("aj::div", aj::floor_divide(f, l)),
      BAD("aj::mod", f % d),
      BAD("aj::maximum", aj::maximum(f, l)),
      BAD("aj::minimum", aj::clip(f, 0.0, l)),
      BAD("aj::pow", aj::pow(d, f)),
      BAD("aj::lt", f < l),
      BAD("aj::and", b && aj::zeros({2}, DType::bool_)),
      BAD("aj::where", aj::where(b, f, l)),
      BAD("aj::where", aj::where(aj::zeros({2}, DType::bool_), f, 1.0)),
      BAD("aj::true_divide", aj::true_divide(i, l)),
      // ---- elementwise: broadcast results too large ----
      BAD("aj::add", aj::broadcast_to(one, {kBig, 1}) + aj::broadcast_to(one, {1, kBig})),
      BAD("aj::add", aj::broadcast_to(one_i, {i64{1} << 60}) + 1.0),
      BAD("aj::exp", aj::exp(aj::broadcast_to(one_i, {i64{1} << 60}))),
      BAD("aj::where", aj::where(aj::broadcast_to(b, {i64{1} << 59, 2, 3}), 1.0, aj::broadcast_to(one_d, {i64{1} << 59, 1, 1}))),
      // ---- elementwise: dtypes the op rejects ----
      BAD("aj::add", b + b),
      BAD("aj::sub", b - true),
      BAD("aj::mul", aj::multiply(true, false)),
      BAD("aj::div", b / b),
      BAD("aj::mod", b % b),
      BAD("aj::pow", aj::pow(b, b)),
      BAD("aj::neg", -b),
      BAD("aj::abs", aj::abs(b)),
      BAD("aj::sign", aj::sign(b)),
      BAD("aj::floor", aj::floor(b)),
      BAD("aj::exp", aj::exp(b)),
      BAD("aj::log1p", aj::log1p(true)),
      BAD("aj::sqrt", aj::sqrt(b)),
      BAD("aj::sigmoid", aj::sigmoid(b)),
      BAD("aj::trunc", aj::trunc(b)),
      BAD("aj::arcsin", aj::arcsin(b)),
      BAD("aj::arccos", aj::arccos(true)),
      BAD("aj::arctan", aj::arctan(b)),
      BAD("aj::sinh", aj::sinh(b)),
      BAD("aj::cosh", aj::cosh(b)),
      BAD("aj::arcsinh", aj::arcsinh(b)),
      BAD("aj::arccosh", aj::arccosh(b)),
      BAD("aj::arctanh", aj::arctanh(b)),
      BAD("aj::exp2", aj::exp2(b)),
      BAD("aj::log2", aj::log2(b)),
      BAD("aj::log10", aj::log10(b)),
      BAD("aj::cbrt", aj::cbrt(b)),
      BAD("aj::arctan2", aj::arctan2(b, b)),
      BAD("aj::hypot", aj::hypot(b, true)),
      BAD("aj::copysign", aj::copysign(b, b)),
      BAD("aj::nextafter", aj::nextafter(b, b)),
      BAD("aj::fmod", aj::fmod(b, b)),
      BAD("aj::arctan2", aj::arctan2(f, l)),
      BAD("aj::hypot", aj::hypot(f, e03)),
      BAD("aj::fmod", aj::fmod(f, l)),
      BAD("aj::nextafter", aj::nextafter(aj::ones({2}, DType::f16), 1.0)),
      BAD("aj::nextafter", aj::nextafter(aj::ones({2}, DType::bf16), aj::ones({2}, DType::bf16))),
      BAD("aj::lgamma", aj::lgamma(b)),
      BAD("aj::digamma", aj::digamma(true)),
      BAD("aj::trigamma", aj::trigamma(b)),
      BAD("aj::erfinv", aj::erfinv(b)),
      BAD("aj::ndtri", aj::ndtri(b)),
      BAD("aj::log_ndtr", aj::log_ndtr(b)),
      BAD("aj::i0", aj::i0(b)),
      BAD("aj::i1", aj::i1(b)),
      BAD("aj::logaddexp", aj::logaddexp(b, b)),
      BAD("aj::logaddexp2", aj::logaddexp2(f, l)),
      BAD("aj::reciprocal", aj::reciprocal(b)),
      BAD("aj::logical_xor", aj::logical_xor(f, b)),
      BAD("aj::logical_xor", aj::logical_xor(b, 1)),
      BAD("aj::relu", aj::relu(b)),
      BAD("aj::gelu", aj::gelu(b)),
      BAD("aj::silu", aj::silu(b)),
      BAD("aj::softplus", aj::softplus(true)),
      BAD("aj::permute_dims", aj::permute_dims(f, {0})),
      BAD("aj::transpose", aj::permute_dims(f, {0, 0})),
      BAD("aj::matrix_transpose", aj::matrix_transpose(aj::ones({3}))),
      BAD("aj::flip", aj::flip(f, 2)),
      BAD("aj::flip", aj::flip(f, {0, -2})),
      BAD("aj::swapaxes", aj::swapaxes(f, 0, 5)),
      BAD("aj::moveaxis", aj::moveaxis(f, {0, 1}, {1, 1})),
      BAD("aj::moveaxis", aj::moveaxis(f, {0}, {0, 1})),
      BAD("aj::tile", aj::tile(f, {2, -1})),
      BAD("aj::repeat", aj::repeat(f, -2, 0)),
      BAD("aj::repeat", aj::repeat(f, std::vector<std::int64_t>{1, 2, 3}, 0)),
      BAD("aj::split", aj::split(f, 2, 1)),
      BAD("aj::array_split", aj::array_split(f, 0)),
      BAD("aj::unstack", aj::unstack(f, 3)),
      BAD("aj::tril", aj::tril(l)),
      BAD("aj::diagonal", aj::diagonal(f, 0, 1, 1)),
      BAD("aj::diag", aj::diag(aj::ones({2, 2, 2}))),
      BAD("aj::tensordot", aj::tensordot(f, f, 1)),
      BAD("aj::tensordot", aj::tensordot(f, f, 3)),
      BAD("aj::vdot", aj::vdot(f, l)),
      BAD("aj::cross", aj::cross(l, l)),
      BAD("aj::broadcast_arrays", aj::broadcast_arrays({f, l})),
      BAD("aj::var", aj::var(f, 2)),
      BAD("aj::var", aj::var(f, 0, -1.0)),
      BAD("aj::std", aj::std(f, {1, -1})),
      BAD("aj::nansum", aj::nansum(f, 4)),
      BAD("aj::nanmax", aj::nanmax(f, -3)),
      BAD("aj::count_nonzero", aj::count_nonzero(f, 2)),
      BAD("aj::diff", aj::diff(f, -1)),
      BAD("aj::diff", aj::diff(f, 1, 2)),
      BAD("aj::quantile", aj::quantile(f, 1.5)),
      BAD("aj::quantile", aj::quantile(f, 0.5, 3)),
      BAD("aj::percentile", aj::percentile(f, -1)),
      BAD("aj::median", aj::median(e03, 0)),
      BAD("aj::and", f && f),
      BAD("aj::or", i || b),
      BAD("aj::and", b && 1),
      BAD("aj::not", !i),
      BAD("aj::not", aj::logical_not(2.5)),
      BAD("aj::true_divide", aj::true_divide(b, b)),
      BAD("aj::where", aj::where(i, f, f)),
      BAD("aj::where", aj::where(1, f, f)),
      BAD("aj::matmul", aj::matmul(b, b.T())),
      // ---- elementwise: scalars that do not fit ----
      BAD("aj::add", i + 3000000000LL),
      BAD("aj::sub", -3000000000LL - i),
      BAD("aj::mul", i * (i64{1} << 40)),
      BAD("aj::eq", i == kMin),
      BAD("aj::add", l + kAboveI64),
      BAD("aj::sub", kAboveI64 - l),
      BAD("aj::maximum", aj::maximum(l, std::numeric_limits<u64>::max())),
      BAD("aj::add", i + kAboveI64),
      BAD("aj::add", aj::add(kAboveI64, 1)),
      BAD("aj::where", aj::where(b, i, 3000000000LL)),
      BAD("aj::where", aj::where(l > 0, kAboveI64, l)),
      BAD("aj::minimum", aj::clip(i, 0, 3000000000LL)),
      // ---- elementwise: empty and moved-from handles ----
      BAD("aj::add", none + 1),
      BAD("aj::add", 1 + none),
      BAD("aj::mul", f * none),
      BAD("aj::add", moved + f),  // NOLINT(bugprone-use-after-move): on purpose
      BAD("aj::neg", -moved),     // NOLINT(bugprone-use-after-move)
      BAD("aj::exp", aj::exp(none)),
      BAD("aj::true_divide", aj::true_divide(none, 2)),
      BAD("aj::where", aj::where(none, f, f)),
      BAD("aj::where", aj::where(b, f, moved)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::maximum", aj::clip(none, 0, 1)),
      BAD("aj::add", none += 1),
      BAD("aj::mul", moved *= 2.0),  // NOLINT(bugprone-use-after-move)
      // ---- reductions: axes out of range, repeated, over nothing ----
      BAD("aj::sum", aj::sum(f, 2)),
      BAD("aj::sum", aj::sum(f, -3)),
      BAD("aj::sum", aj::sum(f, {0, 0})),
      BAD("aj::sum", aj::sum(f, {1, -1})),
      BAD("aj::sum", aj::sum(s0, 0)),
      BAD("aj::prod", aj::prod(f, {0, 7})),
      BAD("aj::mean", aj::mean(f, -3)),
      BAD("aj::mean", aj::mean(f, {0, -2})),
      BAD("aj::max", aj::max(f, 5)),
      BAD("aj::max", aj::max(e03, 0)),
      BAD("aj::max", aj::max(e00, 0)),
      BAD("aj::max", aj::max(e00)),
      BAD("aj::min", aj::min(e03)),
      BAD("aj::min", aj::min(e00, 1, true)),
      BAD("aj::min", aj::min(f, {1, 1})),
      BAD("aj::all", aj::all(b, 2)),
      BAD("aj::any", aj::any(b, {0, -2})),
      BAD("aj::argmax", aj::argmax(f, 2)),
      BAD("aj::argmax", aj::argmax(s0, 0)),
      BAD("aj::argmax", aj::argmax(e03, 0)),
      BAD("aj::argmax", aj::argmax(e00, 1)),
      BAD("aj::argmin", aj::argmin(e03)),
      BAD("aj::argmin", aj::argmin(f, -3)),
      BAD("aj::sum", aj::sum(none)),
      BAD("aj::mean", aj::mean(moved)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::max", aj::max(none, 0)),
      BAD("aj::argmax", aj::argmax(none)),
      BAD("aj::argmin", aj::argmin(moved, 0)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::sum", aj::sum(aj::broadcast_to(one_i, {i64{1} << 60}))),
      BAD("aj::mean", aj::mean(aj::broadcast_to(one_i, {i64{1} << 60}))),
      // ---- reshape ----
      BAD("aj::reshape", aj::reshape(f, {5})),
      BAD("aj::reshape", aj::reshape(f, {-1, -1})),
      BAD("aj::reshape", aj::reshape(f, {-2, -3})),
      BAD("aj::reshape", aj::reshape(f, {0, -1})),
      BAD("aj::reshape", aj::reshape(f, {4, -1})),
      BAD("aj::reshape", aj::reshape(f, {kBig, kBig, kBig})),
      BAD("aj::reshape", aj::reshape(f, {kMin})),
      BAD("aj::reshape", aj::reshape(f, Shape{})),
      BAD("aj::reshape", f.reshape({7})),
      BAD("aj::reshape", aj::reshape(none, {1})),
      // ---- transpose ----
      BAD("aj::transpose", aj::transpose(f, {0, 0})),
      BAD("aj::transpose", aj::transpose(f, {0, 2})),
      BAD("aj::transpose", aj::transpose(f, {-3, 0})),
      BAD("aj::transpose", aj::transpose(f, {0})),
      BAD("aj::transpose", aj::transpose(f, {1, 0, 2})),
      BAD("aj::transpose", f.transpose({1, 1})),
      BAD("aj::transpose", none.T()),
      BAD("aj::transpose", aj::transpose(moved)),  // NOLINT(bugprone-use-after-move)
      // ---- broadcast_to, expand_dims, squeeze ----
      BAD("aj::broadcast_to", aj::broadcast_to(f, {4, 3})),
      BAD("aj::broadcast_to", aj::broadcast_to(f, {3})),
      BAD("aj::broadcast_to", aj::broadcast_to(f, {-2, 3})),
      BAD("aj::broadcast_to", aj::broadcast_to(f, {kBig, kBig, 2, 3})),
      BAD("aj::broadcast_to", aj::broadcast_to(one_d, {i64{1} << 61})),
      BAD("aj::broadcast_to", aj::broadcast_to(none, {3})),
      BAD("aj::expand_dims", aj::expand_dims(f, 3)),
      BAD("aj::expand_dims", aj::expand_dims(f, -4)),
      BAD("aj::expand_dims", aj::expand_dims(none, 0)),
      BAD("aj::squeeze", aj::squeeze(f, 0)),
      BAD("aj::squeeze", aj::squeeze(one, 1)),
      BAD("aj::squeeze", aj::squeeze(one, -2)),
      BAD("aj::squeeze", aj::squeeze(aj::zeros({1, 3}), {0, 0})),
      BAD("aj::squeeze", aj::squeeze(aj::zeros({1, 3, 1}), {0, -3})),
      BAD("aj::squeeze", aj::squeeze(moved)),  // NOLINT(bugprone-use-after-move)
      // ---- slice ----
      BAD("aj::slice", aj::slice(f, 0, 3, nullopt)),
      BAD("aj::slice", aj::slice(f, 0, -3, nullopt)),
      BAD("aj::slice", aj::slice(f, 1, 0, 4)),
      BAD("aj::slice", aj::slice(f, 1, 0, -4)),
      BAD("aj::slice", aj::slice(f, 1, kMax, nullopt)),
      BAD("aj::slice", aj::slice(f, 1, kMin, nullopt)),
      BAD("aj::slice", aj::slice(f, 1, nullopt, kMin, -1)),
      BAD("aj::slice", aj::slice(f, 1, 3, nullopt, -1)),
      BAD("aj::slice", aj::slice(f, 1, 0, 3, 0)),
      BAD("aj::slice", aj::slice(f, {Slice(nullopt, nullopt, 0)})),
      BAD("aj::slice", aj::slice(f, {Slice(), Slice(), Slice()})),
      BAD("aj::slice", aj::slice(f, 2, 0, 1)),
      BAD("aj::slice", aj::slice(f, -3, 0, 1)),
      BAD("aj::slice", aj::slice(s0, 0, 0, 1)),
      BAD("aj::slice", aj::slice(none, 0, 0, 1)),
      BAD("aj::slice", aj::slice(moved, {Slice()})),  // NOLINT(bugprone-use-after-move)
      // ---- concatenate, stack ----
      BAD("aj::concatenate", aj::concatenate({})),
      BAD("aj::concatenate", aj::concatenate({s0, s0})),
      BAD("aj::concatenate", aj::concatenate({f, l})),
      BAD("aj::concatenate", aj::concatenate({f, f}, 2)),
      BAD("aj::concatenate", aj::concatenate({f, f}, -3)),
      BAD("aj::concatenate", aj::concatenate({f, none})),
      BAD("aj::concatenate", aj::concatenate({aj::broadcast_to(one, {i64{1} << 60}), aj::broadcast_to(one, {i64{1} << 60})})),
      BAD("aj::stack", aj::stack({})),
      BAD("aj::stack", aj::stack({f, aj::zeros({3, 2})})),
      BAD("aj::stack", aj::stack({f, f}, 3)),
      BAD("aj::stack", aj::stack({f, f}, -4)),
      BAD("aj::stack", aj::stack({moved, f})),  // NOLINT(bugprone-use-after-move)
      // ---- matmul ----
      BAD("aj::matmul", aj::matmul(f, f)),
      BAD("aj::matmul", aj::matmul(s0, d)),
      BAD("aj::matmul", aj::matmul(d, s0)),
      BAD("aj::matmul", aj::matmul(l, aj::zeros({5}))),
      BAD("aj::matmul", aj::matmul(aj::zeros({2, 2, 3}), aj::zeros({3, 3, 4}))),
      BAD("aj::matmul", aj::matmul(aj::broadcast_to(one_d, {i64{1} << 30, 1, 1, 1}), aj::broadcast_to(one_d, {1, i64{1} << 30, 1, 1}))),
      BAD("aj::matmul", aj::matmul(none, f)),
      BAD("aj::matmul", aj::matmul(f.T(), moved)),  // NOLINT(bugprone-use-after-move)
      // ---- indexing (arrayjit/indexing.hpp): index dtypes and shapes, axes, updates ----
      BAD("aj::take", aj::take(f, b)),
      BAD("aj::take", aj::take(f, d, 1)),
      BAD("aj::take", aj::take(f, l, 2)),
      BAD("aj::take", aj::take(f, l, -3)),
      BAD("aj::take", aj::take(s0, l, 0)),
      BAD("aj::take", aj::take(e03, l, 0)),
      BAD("aj::take", aj::take(e03, l)),
      BAD("aj::take", aj::take(fe, aj::broadcast_to(one_i, {i64{1} << 60}), 1)),
      BAD("aj::take", aj::take(none, l)),
      BAD("aj::take", aj::take(f, none)),
      BAD("aj::take", aj::take(moved, l)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::take_along_axis", aj::take_along_axis(f, l, 0)),
      BAD("aj::take_along_axis", aj::take_along_axis(f, f, 0)),
      BAD("aj::take_along_axis", aj::take_along_axis(f, aj::zeros({2, 4}, DType::i32), 0)),
      BAD("aj::take_along_axis", aj::take_along_axis(f, i, 2)),
      BAD("aj::take_along_axis", aj::take_along_axis(e03, aj::zeros({1, 3}, DType::i64), 0)),
      BAD("aj::take_along_axis", aj::take_along_axis(f, none, 0)),
      BAD("aj::scatter_add", aj::scatter_add(f, b, 1.0f)),
      BAD("aj::scatter_add", aj::scatter_add(f, l, aj::zeros({3, 3}))),
      BAD("aj::scatter_add", aj::scatter_add(f, l, 1.0f, 2)),
      BAD("aj::scatter_add", aj::scatter_add(s0, l, 1.0)),
      BAD("aj::scatter_add", aj::scatter_add(i, l, 3000000000LL)),
      BAD("aj::scatter_add", aj::scatter_add(none, l, 1.0f)),
      BAD("aj::scatter", aj::scatter(f, l, none)),
      BAD("aj::scatter", aj::scatter(f, d, 1.0f)),
      BAD("aj::scatter", aj::scatter(f, l, aj::zeros({4, 3, 1}))),
      BAD("aj::put_along_axis", aj::put_along_axis(f, l, 1.0f, 0)),
      BAD("aj::put_along_axis", aj::put_along_axis(f, i, aj::zeros({4}), 1)),
      BAD("aj::put_along_axis", aj::put_along_axis(f, i, 1.0f, -3)),
      BAD("aj::scatter_add_along_axis", aj::scatter_add_along_axis(f, aj::zeros({2, 5}, DType::i64), 1.0f, 0)),
      BAD("aj::scatter_add_along_axis", aj::scatter_add_along_axis(f, b, 1.0f, 0)),
      BAD("aj::slice_update", aj::slice_update(f, {Slice(0, 5)}, 1.0f)),
      BAD("aj::slice_update", aj::slice_update(f, {Slice(), Slice(nullopt, nullopt, 0)}, 1.0f)),
      BAD("aj::slice_update", aj::slice_update(f, {Slice(), Slice(), Slice()}, 1.0f)),
      BAD("aj::slice_update", aj::slice_update(f, {Slice(0, 1)}, aj::zeros({2, 3}))),
      BAD("aj::slice_update", aj::slice_update(none, {Slice()}, 1.0f)),
      BAD("aj::slice_add", aj::slice_add(i, {Slice()}, 3000000000LL)),
      BAD("aj::slice_add", aj::slice_add(f, {Slice(-3, nullopt)}, 1.0f)),
      BAD("aj::slice_add", aj::slice_add(f, {Slice()}, none)),
      BAD("aj::pad", aj::pad(f, {{-1, 0}})),
      BAD("aj::pad", aj::pad(f, {1, 2, 3})),
      BAD("aj::pad", aj::pad(e03, {{1, 1}}, aj::PadMode::edge)),
      BAD("aj::pad", aj::pad(e03, {{1, 0}, {0, 0}}, aj::PadMode::reflect)),
      BAD("aj::pad", aj::pad(i, {1}, aj::PadMode::constant, 3000000000LL)),
      BAD("aj::pad", aj::pad(f, {{kMax, 1}})),
      BAD("aj::pad", aj::pad(fe, {{i64{1} << 40, 0}, {i64{1} << 40, 0}})),
      BAD("aj::pad", aj::pad(none, {1})),
      BAD("aj::roll", aj::roll(f, 1, 2)),
      BAD("aj::roll", aj::roll(f, {1, 2}, {0})),
      BAD("aj::roll", aj::roll(f, {1}, {-5})),
      BAD("aj::roll", aj::roll(none, 1)),
      BAD("aj::one_hot", aj::one_hot(f, 3)),
      BAD("aj::one_hot", aj::one_hot(b, 3)),
      BAD("aj::one_hot", aj::one_hot(i, -1)),
      BAD("aj::one_hot", aj::one_hot(l, i64{1} << 62)),
      BAD("aj::one_hot", aj::one_hot(none, 2)),
      // ---- members: reading out, converting, moving, accessors ----
      BAD("aj::item", f.item<float>()),
      BAD("aj::item", e03.item<float>()),
      BAD("aj::item", none.item<float>()),
      BAD("aj::to_vector", none.to_vector<double>()),
      BAD("aj::to_vector", moved.to_vector<bool>()),  // NOLINT(bugprone-use-after-move)
      BAD("aj::eval", none.eval()),
      BAD("aj::eval", aj::eval({f, none})),
      BAD("aj::astype", none.astype(DType::f64)),
      BAD("aj::astype", aj::broadcast_to(one_i, {i64{1} << 60}).astype(DType::i64)),
      BAD("aj::to", none.to(aj::Device::cpu())),
      BAD("aj::to", fe.to(aj::Device::cuda(-1))),
      BAD("aj::dtype", none.dtype()),
      BAD("aj::shape", none.shape()),
      BAD("aj::ndim", moved.ndim()),  // NOLINT(bugprone-use-after-move)
      BAD("aj::size", none.size()),
      BAD("aj::device", none.device()),
      BAD("aj::is_evaluated", moved.is_evaluated()),  // NOLINT(bugprone-use-after-move)
      // ---- scans and sorting ----
      BAD("aj::cumsum", aj::cumsum(f, 2)),
      BAD("aj::cumsum", aj::cumsum(f, -3)),
      BAD("aj::cumsum", aj::cumsum(s0, 0)),
      BAD("aj::cumsum", aj::cumsum(f, 0, DType::bool_)),
      BAD("aj::cumsum", aj::cumsum(none)),
      BAD("aj::cumsum", aj::cumsum(aj::broadcast_to(one_i, {i64{1} << 60}), 0)),
      BAD("aj::cumprod", aj::cumprod(b, std::nullopt, DType::bool_)),
      BAD("aj::cumprod", aj::cumprod(moved, 0)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::cumprod", aj::cumprod(i, 5)),
      BAD("aj::cummax", aj::cummax(f, 2)),
      BAD("aj::cummax", aj::cummax(s0, 0)),
      BAD("aj::cummin", aj::cummin(none)),
      BAD("aj::cummin", aj::cummin(moved, 0)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::logcumsumexp", aj::logcumsumexp(f, -3)),
      BAD("aj::logcumsumexp", aj::logcumsumexp(none)),
      BAD("aj::sort", aj::sort(s0)),
      BAD("aj::sort", aj::sort(f, 2)),
      BAD("aj::sort", aj::sort(none)),
      BAD("aj::argsort", aj::argsort(f, -3)),
      BAD("aj::argsort", aj::argsort(s0, 0)),
      BAD("aj::argsort", aj::argsort(moved)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::topk", aj::topk(f, 4)),
      BAD("aj::topk", aj::topk(f, -1)),
      BAD("aj::topk", aj::topk(f, 3, 0)),
      BAD("aj::topk", aj::topk(f, 1, 2)),
      BAD("aj::topk", aj::topk(s0, 1)),
      BAD("aj::topk", aj::topk(e03, 1, 0)),
      BAD("aj::topk", aj::topk(none, 1)),
      // ---- erf, softmax family ----
      BAD("aj::erf", aj::erf(b)),
      BAD("aj::erfc", aj::erfc(none)),
      BAD("aj::erfc", aj::erfc(true)),
      BAD("aj::softmax", aj::softmax(b)),
      BAD("aj::softmax", aj::softmax(f, 2)),
      BAD("aj::softmax", aj::softmax(f, {1, -1})),
      BAD("aj::softmax", aj::softmax(s0)),
      BAD("aj::log_softmax", aj::log_softmax(none)),
      BAD("aj::log_softmax", aj::log_softmax(f, -3)),
      BAD("aj::logsumexp", aj::logsumexp(f, 5)),
      BAD("aj::logsumexp", aj::logsumexp(b, 0)),
      BAD("aj::logsumexp", aj::logsumexp(f, {0, 0})),
      BAD("aj::logsumexp", aj::logsumexp(moved)),  // NOLINT(bugprone-use-after-move)
      // ---- fills like another array ----
      BAD("aj::zeros_like", aj::zeros_like(none)),
      BAD("aj::ones_like", aj::ones_like(moved)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::full_like", aj::full_like(i, 3000000000LL)),
      BAD("aj::full_like", aj::full_like(l, kAboveI64)),
      BAD("aj::full_like", aj::full_like(none, 1.0)),
      // ---- random integers, permutations, coin flips ----
      BAD("aj::random::randint", aj::random::randint({3}, 5, 5)),
      BAD("aj::random::randint", aj::random::randint({3}, 5, -5)),
      BAD("aj::random::randint", aj::random::randint({3}, 0, 10, DType::f32)),
      BAD("aj::random::randint", aj::random::randint({3}, 0, 2, DType::bool_)),
      BAD("aj::random::randint", aj::random::randint({3}, 0, 3000000000LL, DType::i32)),
      BAD("aj::random::randint", aj::random::randint({3}, -3000000000LL, 0, DType::i32)),
      BAD("aj::random::randint", aj::random::randint({3}, kMin, kMax)),
      BAD("aj::random::randint", aj::random::randint({3}, -1, kMax)),
      BAD("aj::random::randint", aj::random::randint({-3}, 0, 3)),
      BAD("aj::random::randint", aj::random::randint({kBig, kBig}, 0, 3)),
      BAD("aj::random::permutation", aj::random::permutation(-1)),
      BAD("aj::random::permutation", aj::random::permutation(i64{1} << 62)),
      BAD("aj::random::bernoulli", aj::random::bernoulli({3}, 1.5)),
      BAD("aj::random::bernoulli", aj::random::bernoulli({3}, -0.1)),
      BAD("aj::random::bernoulli", aj::random::bernoulli({3}, kNaN)),
      BAD("aj::random::bernoulli", aj::random::bernoulli({3}, kInf)),
      BAD("aj::random::bernoulli", aj::random::bernoulli({kBig, kBig})),
      // ---- inspection ----
      BAD("aj::dump", aj::dump({f, none})),
      BAD("aj::to_dot", aj::to_dot(moved)),  // NOLINT(bugprone-use-after-move)
      BAD("aj::explain", aj::explain(none)),
      BAD("aj::explain", aj::explain(std::vector<Array>{f, none})),
      BAD("aj::jit::kernel_ir", aj::jit::kernel_ir(none)),
      // ---- autodiff (arrayjit/autodiff.hpp) ----
      BAD("aj::grad", aj::grad([](const Array& x) { return x * 2.0f; })(f)),  // not a scalar
      BAD("aj::grad", aj::grad([](const Array& x) { return aj::sum(x); })(i)),  // integer argument
      BAD("aj::grad", aj::grad([](const Array& x) { return aj::sum(x); }, 1)(f)),  // argnum out of range
      BAD("aj::grad", aj::grad([](const Array& x) { return aj::sum(x); })(none)),
      BAD("aj::value_and_grad", aj::value_and_grad([](const Array& x) { return aj::sum(x).astype(DType::i32); })(f)),
      BAD("aj::vjp", aj::vjp([](const Array& x) { return x * 2.0f; }, f, d)),  // cotangent's shape
      BAD("aj::vjp", aj::vjp([](const std::vector<Array>& x) { return x; }, {f}, {f, f})),  // cotangent count
      BAD("aj::jvp", aj::jvp([](const Array& x) { return x; }, f, d)),  // tangent's shape
      BAD("aj::jvp", aj::jvp([](const Array& x) { return x; }, f, b)),  // bool tangent
      BAD("aj::eval", aj::grad([](const Array& x) { return aj::sum(x).eval(); })(f)),  // evaluating inside f
      BAD("aj::sum_to_shape", aj::sum_to_shape(f, {4})),
      BAD("aj::sum_to_shape", aj::sum_to_shape(b, {3})),
      BAD("aj::stop_gradient", aj::stop_gradient(none)),
  };

  CHECK(table.size() >= 150);
  for (const BadCall& row : table) expect_rejected(row);
  // The arrays made before the table are unchanged.
  CHECK(fe.is_evaluated());
  CHECK_FALSE(f.is_evaluated());
  CHECK(taker.shape() == Shape{3});
  CHECK(buf == ajtest::random_magnitudes<float>(12, 8, 0.5, 9.0));
}

// ---- regression tests, one per bug found by the table ---------------------------------------------------

TEST_CASE("byte size overflow: arange of 2^61 f64, broadcast_to({2^61}) + 1 in f64 and linspace of 2^62 f32 are located errors, not tiny buffers") {
  const aj::Stats before = aj::stats();
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const aj::Error& e) {
      CHECK(e.kind() == Kind::user);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string a = message([] { (void)aj::arange(i64{1} << 61, DType::f64); }), a_at = here(__LINE__);
  CHECK(a.find("aj::arange") != std::string::npos);
  CHECK(a.find("more than any system") != std::string::npos);
  CHECK(a.find(a_at) != std::string::npos);
  Array scalar = aj::full({}, 1, DType::i32);
  const std::string b = message([&] { (void)(aj::broadcast_to(scalar, {i64{1} << 61}) + 1.0); });
  CHECK(b.find("aj::broadcast_to") != std::string::npos);  // the i32 view itself is 2^63 bytes
  const std::string c = message([&] { (void)(aj::broadcast_to(scalar, {i64{1} << 60}) + 1.0); });
  CHECK(c.find("aj::add") != std::string::npos);  // the view fits, its f64 sum does not
  const std::string d = message([] { (void)aj::linspace(0.0, 1.0, i64{1} << 62, DType::f32); });
  CHECK(d.find("aj::linspace") != std::string::npos);
  CHECK(aj::stats().live_nodes == before.live_nodes + 1);  // `scalar`
  // The limit itself is fine as a view (2^62 bytes), and small arrays are unaffected.
  CHECK(aj::broadcast_to(scalar, {i64{1} << 60}).size() == i64{1} << 60);
  CHECK(aj::arange(5, DType::f64).to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4});
}

TEST_CASE("byte size overflow, second line: the allocator refuses an element count whose byte size wraps") {
  const aj::Stats before = aj::stats();
  for (auto [count, item] : {std::pair<i64, std::size_t>{i64{1} << 61, 8}, {kMax, 4}, {-1, 4}}) {
    CAPTURE(count);
    bool thrown = false;
    try {
      (void)aj::cpu::host_alloc(count, item);
    } catch (const aj::Error& e) {
      thrown = true;
      CHECK(e.kind() == Kind::runtime);
    }
    CHECK(thrown);
  }
  CHECK(aj::stats().live_bytes == before.live_bytes);
  CHECK(aj::cpu::host_alloc(3, 8)->bytes == 24);
}

TEST_CASE("borrow rejects strides whose span overflows int64 (INT64_MAX, INT64_MIN, 2^62 with extent 3)") {
  std::vector<double> v = ajtest::random_magnitudes<double>(6, 11, 0.5, 9.0);
  for (i64 stride : {kMax, kMin, i64{1} << 62, -(i64{1} << 62)}) {
    CAPTURE(stride);
    bool thrown = false;
    try {
      (void)aj::borrow(v.data(), {3}, {stride});
    } catch (const aj::Error& e) {
      thrown = true;
      CHECK(e.kind() == Kind::user);
      CHECK(std::string(e.what()).find("aj::borrow") != std::string::npos);
      CHECK(std::string(e.what()).find("strides") != std::string::npos);
    }
    CHECK(thrown);
  }
  // Good strides, negative ones included, still view the caller's memory.
  CHECK(aj::borrow(v.data() + 4, {3}, {-2}).to_vector<double>() == std::vector<double>{v[4], v[2], v[0]});
  CHECK(aj::borrow(v.data(), {2, 3}, {1, 2}).to_vector<double>() ==
        std::vector<double>{v[0], v[2], v[4], v[1], v[3], v[5]});
}

TEST_CASE("slices with huge steps: step INT64_MAX takes one element (not extent -1), INT64_MIN one element (not 0)") {
  const std::vector<float> v = ajtest::random_magnitudes<float>(6, 12, 0.5, 9.0);
  Array a = aj::from_vector(v, {2, 3});
  Array up = aj::slice(a, 1, 0, 3, kMax);  // NumPy a[:, 0:3:2**63-1]
  CHECK(up.shape() == Shape{2, 1});
  CHECK(up.to_vector<float>() == std::vector<float>{v[0], v[3]});
  CHECK(aj::sum(up).item<double>() == doctest::Approx(double(v[0]) + double(v[3])));
  Array down = aj::slice(a, 1, nullopt, nullopt, kMin);  // NumPy a[:, ::-2**63]
  CHECK(down.shape() == Shape{2, 1});
  CHECK(down.to_vector<float>() == std::vector<float>{v[2], v[5]});
  // Huge steps from the middle, both directions, and the join NumPy gives.
  CHECK(aj::slice(a, 1, 1, nullopt, kMax - 1).to_vector<float>() == std::vector<float>{v[1], v[4]});
  CHECK(aj::slice(a, 1, 2, 0, kMin + 1).to_vector<float>() == std::vector<float>{v[2], v[5]});
  CHECK(aj::slice(a, 1, 0, 0, kMax).shape() == Shape{2, 0});
  Array joined = aj::concatenate({up, down}, 1);
  CHECK(joined.shape() == Shape{2, 2});
  CHECK(joined.to_vector<float>() == std::vector<float>{v[0], v[2], v[3], v[5]});
  // Ordinary steps are unchanged: a[:, ::2] and a[:, ::-2].
  CHECK(aj::slice(a, 1, nullopt, nullopt, 2).to_vector<float>() == std::vector<float>{v[0], v[2], v[3], v[5]});
  CHECK(aj::slice(a, 1, nullopt, nullopt, -2).to_vector<float>() == std::vector<float>{v[2], v[0], v[5], v[3]});
}

TEST_CASE("max and min over an empty axis are errors also when the result is empty too") {
  Array e = aj::zeros({0, 0}) + 1.0f;
  CHECK_THROWS_AS(aj::max(e, 0), aj::Error);
  CHECK_THROWS_AS(aj::min(e, 1), aj::Error);
  CHECK_THROWS_AS(aj::argmax(e, 0), aj::Error);
  CHECK_THROWS_AS(aj::max(aj::zeros({2, 0, 0}), {1, 2}), aj::Error);
  // Reducing a non-empty axis of an empty array is fine (NumPy: max(zeros((0, 3)), axis=1) has shape (0,)).
  CHECK(aj::max(aj::zeros({0, 3}), 1).shape() == Shape{0});
  CHECK(aj::argmin(aj::zeros({0, 3}), 1).shape() == Shape{0});
  // Reducing no axes reduces nothing, even of an empty array.
  CHECK(aj::max(e, aj::Axes(std::vector<int>{})).shape() == Shape{0, 0});
}

TEST_CASE("squeeze with a duplicated axis is an error") {
  Array x = aj::zeros({1, 3, 1});
  CHECK_THROWS_AS(aj::squeeze(x, {0, 0}), aj::Error);
  CHECK_THROWS_AS(aj::squeeze(x, {2, -1}), aj::Error);
  CHECK(aj::squeeze(x, {0, 2}).shape() == Shape{3});
  CHECK(aj::squeeze(x, {-1}).shape() == Shape{1, 3});
}

TEST_CASE("bool + i32 arithmetic follows the documented rule: a bool meets a number as 0/1, bool with bool is an error") {
  const auto bv = ajtest::random_magnitudes<bool>(6, 13, 1, 1);
  const auto iv = ajtest::random_magnitudes<std::int32_t>(6, 14, 1, 1000);
  Array ab = aj::from_vector(bv), ai = aj::from_vector(iv);
  Array sum = ab + ai;
  CHECK(sum.dtype() == DType::i32);
  std::vector<std::int32_t> want;
  for (std::size_t k = 0; k < 6; ++k) want.push_back(std::int32_t(bv[k]) + iv[k]);
  CHECK(sum.to_vector<std::int32_t>() == want);
  CHECK_THROWS_AS(ab + ab, aj::Error);
  CHECK_THROWS_AS(ab * true, aj::Error);
  CHECK_THROWS_AS(-ab, aj::Error);
}

TEST_CASE("an i64 operand with a uint64_t scalar above INT64_MAX is an error, not a silent wrap") {
  const auto lv = ajtest::random_magnitudes<i64>(4, 15, 1, 1000);
  Array l = aj::from_vector(lv);
  std::string msg;
  try {
    (void)(l + kAboveI64);
  } catch (const aj::Error& e) {
    msg = e.what();
    CHECK(e.kind() == Kind::user);
  }
  CHECK(msg.find("9223372036854775808") != std::string::npos);
  CHECK(msg.find("i64") != std::string::npos);
  CHECK_THROWS_AS(aj::full({2}, kAboveI64, DType::i64), aj::Error);
  // Unsigned scalars that fit work; a float operand takes the big one as a float.
  std::vector<i64> plus5;
  for (i64 v : lv) plus5.push_back(v + 5);
  CHECK((l + u64{5}).to_vector<i64>() == plus5);
  // 2^63 + 2048 is a double exactly; wrapped through int64 it was -2^63 + 2048.
  Array d = aj::from_vector(std::vector<double>{4096.0});
  CHECK((d + (kAboveI64 + 2048)).item<double>() == 0x1p63 + 6144.0);
  CHECK(aj::full({1}, kAboveI64, DType::f64).item<double>() == 0x1p63);
}

TEST_CASE("random::uniform(-inf, inf) and other non-finite random parameters are errors, not NaN") {
  CHECK_THROWS_AS(aj::random::uniform({4}, -kInf, kInf), aj::Error);
  CHECK_THROWS_AS(aj::random::uniform({4}, -DBL_MAX, DBL_MAX, DType::f64), aj::Error);
  CHECK_THROWS_AS(aj::random::normal({4}, kNaN, 1.0), aj::Error);
  // Wide but finite ranges give finite values in range.
  aj::random::seed(7);
  for (double v : aj::random::uniform({64}, -1e300, 1e300, DType::f64).to_vector<double>()) {
    CHECK(std::isfinite(v));
    CHECK(v >= -1e300);
    CHECK(v < 1e300);
  }
  for (float v : aj::random::uniform({64}, -3e38, 3e38, DType::f32).to_vector<float>()) CHECK(std::isfinite(v));
}

TEST_CASE("printing an empty (moved-from) handle prints no other array's values") {
  Array a = aj::from_vector(std::vector<double>{1.25, 2.5});
  Array b = std::move(a);
  Array c = aj::from_vector(std::vector<double>{7.75}) * 2.0;  // may take a's old node
  std::ostringstream os;
  os << a;  // NOLINT(bugprone-use-after-move): on purpose
  CHECK(os.str() == "array(<empty handle>)");
  CHECK(b.to_vector<double>() == std::vector<double>{1.25, 2.5});
  CHECK(c.item<double>() == 15.5);
}

TEST_CASE("full(shape, 1e20, i32) saturates like astype instead of wrapping through i64") {
  CHECK(aj::full({1}, 1e20, DType::i32).item<std::int32_t>() == std::numeric_limits<std::int32_t>::max());
  CHECK(aj::full({1}, -1e20, DType::i32).item<std::int32_t>() == std::numeric_limits<std::int32_t>::min());
  CHECK(aj::full({1}, 1e20, DType::i64).item<i64>() == kMax);
  CHECK(aj::full({1}, kNaN, DType::i32).item<std::int32_t>() == 0);
  CHECK(aj::full({1}, -7.9, DType::i32).item<std::int32_t>() == -7);
  // The same as astype of the f64 value.
  Array big = aj::full({1}, 1e20, DType::f64);
  CHECK(big.astype(DType::i32).item<std::int32_t>() == aj::full({1}, 1e20, DType::i32).item<std::int32_t>());
}

TEST_CASE("accessor errors on empty handles name the caller's file:line") {
  Array e;
  expect_rejected(BAD("aj::dtype", e.dtype()));
  expect_rejected(BAD("aj::shape", e.shape()));
  expect_rejected(BAD("aj::ndim", e.ndim()));
  expect_rejected(BAD("aj::size", e.size()));
  expect_rejected(BAD("aj::device", e.device()));
  expect_rejected(BAD("aj::is_evaluated", e.is_evaluated()));
}

// ---- out of memory: every allocation of an op, failed in turn ---------------------------------------

namespace {

// Fails allocation k = 0, 1, ... of `op` until it succeeds; `op(k)` makes
// its arguments, then calls fail_allocation(k) right before the call under
// test (the caller's own allocations are not the library's to report). Each
// failure must be an aj::Error (runtime) naming `name` and `line`; with
// `unchanged`, live nodes and bytes must be as before. Returns what went
// wrong ("" if nothing).
std::string sweep(const char* name, int line, bool unchanged, const std::function<Array(long)>& op,
                  const std::function<bool()>& inputs_right) {
  std::string problems;
  for (long k = 0; k < 100000; ++k) {
    const aj::Stats before = aj::stats();
    const std::string at = "allocation " + std::to_string(k) + " of " + name + ": ";
    bool failed = false;
    try {
      Array r = op(k);
      fail_allocation(-1);
    } catch (const aj::Error& e) {
      fail_allocation(-1);
      failed = true;
      const std::string msg = e.what();
      if (e.kind() != Kind::runtime || (msg.find("out of memory") == std::string::npos && msg.find("out of host memory") == std::string::npos) ||
          msg.find(std::string(name) + ":") == std::string::npos || msg.find(here(line)) == std::string::npos) {
        problems += at + msg + "\n";
      }
    } catch (const std::exception& e) {
      fail_allocation(-1);
      failed = true;
      problems += at + "not an aj::Error: " + e.what() + "\n";
    }
    if (!failed) return problems + (k == 0 ? std::string(name) + " never allocated\n" : "");
    const aj::Stats after = aj::stats();
    if (unchanged && (after.live_nodes != before.live_nodes || after.live_bytes != before.live_bytes)) {
      problems += at + "live nodes " + std::to_string(before.live_nodes) + " -> " +
                  std::to_string(after.live_nodes) + ", bytes " + std::to_string(before.live_bytes) +
                  " -> " + std::to_string(after.live_bytes) + "\n";
    }
    if (!inputs_right()) problems += at + "the inputs changed\n";
  }
  return problems + std::string(name) + " never succeeded\n";
}

// Runs `body` in a child process (the sweep may find an allocation whose
// failure terminates); its report comes back through a pipe.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    const std::string report = body();
    (void)!::write(fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fds[0], chunk, sizeof chunk)) > 0) report.append(chunk, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) report += "the child died (status " + std::to_string(status) + ")\n";
  return report;
}

}  // namespace

TEST_CASE("out of memory while tracing is an aj::Error (runtime) naming the op and line; arrays stay valid") {
  const std::string report = in_child([] {
    const auto xv = ajtest::random_magnitudes<double>(3, 21, 0.5, 9.0);
    const auto yv = ajtest::random_magnitudes<double>(4, 22, 0.5, 9.0);
    Array x = aj::from_vector(xv, {3, 1}), y = aj::from_vector(yv, {4});
    const Array y_row = aj::reshape(y, {1, 4});
    const std::vector<Array> parts{x, x};
    auto right = [&] { return x.to_vector<double>() == xv && y.to_vector<double>() == yv; };
    std::string r;
    int at = __LINE__ + 1;
    r += sweep("aj::add", at, true, [&](long k) { fail_allocation(k); return x + y; }, right);
    at = __LINE__ + 1;
    r += sweep("aj::concatenate", at, true, [&](long k) { fail_allocation(k); return aj::concatenate(parts, 1); }, right);
    at = __LINE__ + 1;
    r += sweep("aj::sum", at, true, [&](long k) { aj::Axes axes(0); fail_allocation(k); return aj::sum(x, std::move(axes)); }, right);
    at = __LINE__ + 1;
    r += sweep("aj::matmul", at, true, [&](long k) { fail_allocation(k); return aj::matmul(x, y_row); }, right);
    at = __LINE__ + 1;
    r += sweep("aj::full", at, true, [&](long k) { Shape s{2, 3}; fail_allocation(k); return aj::full(std::move(s), 1.5, DType::f32); }, right);
    at = __LINE__ + 1;
    r += sweep("aj::slice", at, true, [&](long k) { fail_allocation(k); return aj::slice(y, 0, 1, nullopt, 2); }, right);
    at = __LINE__ + 1;
    r += sweep("aj::exp", at, true, [&](long k) { fail_allocation(k); return aj::exp(x); }, right);
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("out of memory while evaluating is an aj::Error (runtime) naming eval; the arrays evaluate after") {
  const std::string report = in_child([] {
    aj::jit::set_enabled(false);  // the kernel interpreter: no LLVM frames in between
    aj::jit::set_num_threads(1);
    const auto xv = ajtest::random_magnitudes<double>(5, 23, 0.5, 9.0);
    Array x = aj::from_vector(xv);
    std::vector<double> want;
    for (double v : xv) want.push_back(v * 3.0 + 1.0);
    Array y = x * 3.0 + 1.0;
    auto right = [&] { return x.to_vector<double>() == xv; };
    const int at = __LINE__ + 1;
    std::string r = sweep("aj::eval", at, false, [&](long k) { fail_allocation(k); return y.eval(); }, right);
    if (y.to_vector<double>() != want) r += "the evaluated values are wrong\n";
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("out of memory while compiling a kernel is an aj::Error (runtime) naming eval; LLVM never sees a failed allocation") {
  // LLVM cannot unwind a bad_alloc: inside it, the JIT's reserve is given
  // back and the allocation retried (jit/llvm/memory_guard.hpp); a reserve
  // that cannot be taken fails the evaluation before LLVM starts. Each k
  // compiles afresh (memory cache cleared, no disk cache); every k in the
  // long tier, the first 300 and every 61st after that otherwise.
  const std::string report = in_child([] {
    aj::jit::set_enabled(true);
    aj::jit::set_cache_dir("");
    aj::jit::set_num_threads(1);
    const bool all = std::getenv("AJ_TEST_LONG") != nullptr;
    const auto xv = ajtest::random_magnitudes<double>(100, 36, 0.5, 2.0);
    const Array x = aj::from_vector(xv);
    x.eval();
    std::vector<double> want;
    for (double v : xv) want.push_back(std::exp(v * 3.0 + 1.0) - v);
    auto close = [&](const std::vector<double>& got) { return close_to(got, want); };
    std::string r;
    long failures = 0, survived = 0;
    for (long k = 0; k < 1000000; k += (all || k < 300) ? 1 : 61) {
      aj::jit::clear_memory_cache();
      const aj::Stats before = aj::stats();
      Array y;
      const int at = __LINE__ + 3;
      try {
        fail_allocation(k);
        y = aj::exp(x * 3.0 + 1.0) - x;
        y.eval();
      } catch (const aj::Error& e) {
        fail_allocation(-1);
        ++failures;
        const std::string msg = e.what();
        if (e.kind() != Kind::runtime || (msg.find("out of memory") == std::string::npos && msg.find("out of host memory") == std::string::npos) ||
            (msg.find(here(at)) == std::string::npos && msg.find(here(at + 1)) == std::string::npos)) {
          r += "allocation " + std::to_string(k) + ": " + msg + "\n";
        }
        y = Array();
        if (aj::stats().live_nodes != before.live_nodes) r += "allocation " + std::to_string(k) + ": nodes left\n";
        continue;
      } catch (const std::exception& e) {
        fail_allocation(-1);
        r += "allocation " + std::to_string(k) + ": not an aj::Error: " + e.what() + "\n";
        continue;
      }
      const bool reached = failure_reached();
      fail_allocation(-1);
      if (!close(y.to_vector<double>())) r += "allocation " + std::to_string(k) + ": wrong values\n";
      if (aj::stats().kernels_compiled == before.kernels_compiled) r += "allocation " + std::to_string(k) + ": nothing compiled\n";
      if (!reached) break;  // the evaluation made fewer than k + 1 allocations: all were tried
      ++survived;
    }
    if (survived == 0) r += "no failed allocation inside LLVM was survived\n";
    if (failures == 0) r += "no allocation failed\n";
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

namespace {

aj_status c_scale_add(void*, const aj_array* in, aj_array* out) {
  aj_array e{};
  if (aj_status st = aj_exp(in[0], &e); st != AJ_OK) return st;
  return aj_multiply(e, in[1], out);  // e is the callback's: released by the call
}
}  // namespace

TEST_CASE("out of memory while destroying arrays, C handles, views and compiled functions never terminates") {
  // Destruction must allocate nothing (or survive failing to): each k fails
  // the k-th allocation of the teardown; a destructor that let bad_alloc out
  // would end the child (std::terminate), which the report shows.
  const std::string report = in_child([] {
    aj::jit::set_num_threads(1);
    const auto xv = ajtest::random_magnitudes<double>(64, 31, 0.5, 9.0);
    const Array base = aj::from_vector(xv);
    base.eval();
    std::string r;
    for (long k = 0; k < 100000; ++k) {
      const aj::Stats start = aj::stats();
      const std::size_t handles = aj_live_handles();
      std::vector<Array> kept;
      {
        Array chain = base;  // unevaluated, over several of the graph's node segments
        for (int i = 0; i < 3000; ++i) chain = chain * 1.0001 + 0.5;
        kept = {chain, aj::sum(chain), (base * 2.0 - 1.0).eval(), aj::concatenate({base, chain}, 0)};
      }
      aj_array h = aj::to_c(base * 3.0);
      aj_view view{};
      view.struct_size = sizeof view;
      if (aj_view_acquire(h, AJ_VIEW_ANY, &view) != AJ_OK) return r + "aj_view_acquire failed\n";
      std::optional compiled = aj::compile([](const Array& a) { return a * 2.0 + 1.0; });
      (void)(*compiled)(base);
      (void)(*compiled)(base);  // a program kept, replayed
      fail_allocation(k);
      kept.clear();
      aj_view_release(&view);
      const aj_status released = aj_array_release(h);
      compiled.reset();
      const bool reached = failure_reached();
      fail_allocation(-1);
      const std::string at = "allocation " + std::to_string(k) + " of the teardown: ";
      if (released != AJ_OK) r += at + "aj_array_release failed: " + aj_last_error() + "\n";
      if (aj_live_handles() != handles) r += at + "handles left\n";
      if (aj::stats().live_nodes != start.live_nodes) {
        r += at + "live nodes " + std::to_string(start.live_nodes) + " -> " + std::to_string(aj::stats().live_nodes) + "\n";
      }
      if (!reached) return r;  // the teardown made fewer than k + 1 allocations
    }
    return r + "the teardown never stopped allocating\n";
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("out of memory in a compiled replay is an aj::Error (runtime) naming aj::compile's line; the next call is right") {
  const std::string report = in_child([] {
    aj::jit::set_num_threads(1);
    const auto xv = ajtest::random_magnitudes<double>(300, 32, 0.5, 2.0);
    const auto yv = ajtest::random_magnitudes<double>(300, 33, 0.5, 2.0);
    Array x = aj::from_vector(xv), y = aj::from_vector(yv);
    std::vector<double> want;
    for (std::size_t i = 0; i < xv.size(); ++i) want.push_back(std::exp(xv[i]) * yv[i] + 1.0);
    const int at = __LINE__ + 1;
    auto f = aj::compile([](const Array& a, const Array& b) { return aj::exp(a) * b + 1.0; });
    auto close = [&](const std::vector<double>& got) { return close_to(got, want); };
    std::string r;
    for (int warm = 0; warm < 2; ++warm) {
      if (!close(f(x, y).to_vector<double>())) r += "the warm-up call is wrong\n";
    }
    auto right = [&] { return x.to_vector<double>() == xv && y.to_vector<double>() == yv; };
    r += sweep("aj::compile", at, true, [&](long k) { fail_allocation(k); return f(x, y); }, right);
    if (!close(f(x, y).to_vector<double>())) r += "the call after the sweep is wrong\n";
    if (f.counts().traces > 2) r += "the sweep's failures made new traces: " + std::to_string(f.counts().traces) + "\n";
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

TEST_CASE("out of memory in the C API is AJ_ERROR_RUNTIME with a message; no handle is made or lost") {
  const std::string report = in_child([] {
    aj::jit::set_num_threads(1);
    const auto xv = ajtest::random_magnitudes<float>(200, 34, 0.5, 2.0);
    const auto yv = ajtest::random_magnitudes<float>(200, 35, 0.5, 2.0);
    const std::int64_t n = 200;
    aj_array x{}, y{};
    if (aj_array_from_data(xv.data(), AJ_F32, &n, 1, &x) != AJ_OK) return std::string("aj_array_from_data failed\n");
    if (aj_array_from_data(yv.data(), AJ_F32, &n, 1, &y) != AJ_OK) return std::string("aj_array_from_data failed\n");
    aj_function_desc desc{};
    desc.struct_size = sizeof desc;
    desc.trace = c_scale_add;
    desc.n_inputs = 2;
    desc.n_outputs = 1;
    desc.name = "scale_add";
    aj_function f{};
    if (aj_function_new(&desc, &f) != AJ_OK) return std::string("aj_function_new failed\n");
    const aj_array in[2] = {x, y};
    std::string r;
    auto c_sweep = [&](const char* name, const std::function<aj_status(aj_array*)>& call) {
      for (long k = 0; k < 100000; ++k) {
        const std::size_t handles = aj_live_handles();
        aj_array out{};
        fail_allocation(k);
        const aj_status st = call(&out);
        fail_allocation(-1);
        const std::string at = std::string("allocation ") + std::to_string(k) + " of " + name + ": ";
        if (st == AJ_OK) {
          std::vector<float> got(200);
          if (aj_array_read(out, AJ_F32, got.data(), got.size() * sizeof(float), nullptr) != AJ_OK) {
            r += at + "the result cannot be read\n";
          }
          for (std::size_t i = 0; i < got.size(); ++i) {
            const float want = std::exp(xv[i]) * yv[i];
            if (std::fabs(got[i] - want) > 1e-5f * std::fabs(want)) {
              r += at + "a wrong value\n";
              break;
            }
          }
          aj_array_release(out);
          return;
        }
        const std::string msg = aj_last_error();
        if (st != AJ_ERROR_RUNTIME || (msg.find("out of memory") == std::string::npos && msg.find("out of host memory") == std::string::npos) || msg.rfind("aj_", 0) != 0) {
          r += at + "status " + std::to_string(st) + ": " + msg + "\n";
        }
        if (!AJ_IS_NULL(out)) r += at + "a failed call left a handle\n";
        if (aj_live_handles() != handles) r += at + "handles " + std::to_string(handles) + " -> " + std::to_string(aj_live_handles()) + "\n";
      }
      r += std::string(name) + " never succeeded\n";
    };
    c_sweep("aj_function_call", [&](aj_array* out) { return aj_function_call(f, in, out); });  // traces
    c_sweep("aj_function_call", [&](aj_array* out) { return aj_function_call(f, in, out); });  // replays
    c_sweep("aj_eval", [&](aj_array* out) -> aj_status {
      aj_array e{};
      if (aj_status st = aj_exp(x, &e); st != AJ_OK) return st;
      aj_array p{};
      const aj_status st = aj_multiply(e, y, &p);
      aj_array_release(e);
      if (st != AJ_OK) return st;
      if (aj_status ev = aj_eval(p); ev != AJ_OK) {
        aj_array_release(p);
        return ev;
      }
      *out = p;
      return AJ_OK;
    });
    aj_function_release(f);
    aj_array_release(x);
    aj_array_release(y);
    return r;
  });
  CHECK_MESSAGE(report.empty(), report);
}

// ---- the disk cache: what is found at an entry's path ----------------------------------------------

namespace {
struct TempCacheDir {
  std::filesystem::path dir;
  std::string saved = aj::jit::cache_dir();
  bool jit_was = aj::jit::enabled();
  explicit TempCacheDir(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);  // the cache refuses others' writes
    aj::jit::set_enabled(true);
    aj::jit::set_cache_dir(dir.string());
    aj::jit::clear_memory_cache();
  }
  ~TempCacheDir() {
    aj::jit::set_cache_dir(saved);
    aj::jit::set_enabled(jit_was);
    std::filesystem::remove_all(dir);
  }
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> v;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".ajk") v.push_back(e.path());
    }
    return v;
  }
};
}  // namespace

TEST_CASE("disk cache: a FIFO placed where an entry is expected is refused at once, not waited on") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aj_fifo_unit_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  aj::jit::DiskCache c(dir.string());
  REQUIRE(c.write("k", "payload"));
  fs::remove(c.path_for("k"));
  REQUIRE(::mkfifo(c.path_for("k").c_str(), 0600) == 0);
  std::string got;
  CHECK(c.read("k", &got) == aj::jit::DiskRead::corrupt);
  fs::remove(c.path_for("k"));
  fs::create_directory(c.path_for("k"));  // a directory there is refused too
  CHECK(c.read("k", &got) == aj::jit::DiskRead::corrupt);
  fs::remove_all(dir);

  // End to end: every entry of a kernel replaced by a FIFO; the next
  // evaluation recompiles (a reject) instead of hanging.
  TempCacheDir cache("aj_fifo_jit_");
  const auto v = ajtest::random_magnitudes<double>(300, 24, 0.5, 9.0);
  auto work = [&] { return aj::sum(aj::from_vector(v) * 1.5 - 0.25).item<double>(); };
  double want = 0;
  for (double x : v) want += x * 1.5 - 0.25;
  CHECK(work() == doctest::Approx(want).epsilon(1e-12));
  const auto files = cache.entries();
  REQUIRE(!files.empty());
  for (const auto& e : files) {
    fs::remove(e);
    REQUIRE(::mkfifo(e.c_str(), 0600) == 0);
  }
  aj::jit::clear_memory_cache();
  aj::reset_stats();
  CHECK(work() == doctest::Approx(want).epsilon(1e-12));
  CHECK(aj::stats().kernel_disk_rejects == files.size());
  CHECK(aj::stats().kernel_disk_hits == 0);
}

TEST_CASE("disk cache: a valid entry copied over another key's file is refused, never run") {
  namespace fs = std::filesystem;
  TempCacheDir cache("aj_swap_jit_");
  const auto v = ajtest::random_magnitudes<double>(200, 25, 0.5, 9.0);
  Array x = aj::from_vector(v);
  x.eval();
  auto first = [&] { return (x * 3.0 + 2.0).to_vector<double>(); };
  auto second = [&] { return (aj::exp(x * -0.5) - x).to_vector<double>(); };
  std::vector<double> want1, want2;
  for (double e : v) want1.push_back(e * 3.0 + 2.0), want2.push_back(std::exp(e * -0.5) - e);
  CHECK(first() == want1);
  const auto first_files = cache.entries();
  REQUIRE(first_files.size() == 1);
  const auto got2 = second();
  REQUIRE(got2.size() == want2.size());
  for (std::size_t k = 0; k < got2.size(); ++k) CHECK(got2[k] == doctest::Approx(want2[k]).epsilon(1e-13));
  const auto all = cache.entries();
  REQUIRE(all.size() == 2);
  const fs::path second_file = all[0] == first_files[0] ? all[1] : all[0];
  // The first kernel's entry, checksum and all, under the second kernel's name.
  fs::copy_file(first_files[0], second_file, fs::copy_options::overwrite_existing);
  aj::jit::clear_memory_cache();
  aj::reset_stats();
  const auto again = second();
  for (std::size_t k = 0; k < again.size(); ++k) CHECK(again[k] == doctest::Approx(want2[k]).epsilon(1e-13));
  CHECK(aj::stats().kernel_disk_rejects == 1);
  CHECK(aj::stats().kernels_compiled == 1);
  CHECK(first() == want1);  // the first kernel's own entry still serves it
}

namespace {
// This process's peak resident set since the last reset, in bytes; resets it
// first when `reset` (Linux: /proc/self/clear_refs, "5"). -1 where neither works.
long long peak_rss(bool reset) {
  if (reset) {
    std::ofstream c("/proc/self/clear_refs");
    c << "5";
    if (!c.flush()) return -1;
  }
  std::ifstream s("/proc/self/status");
  std::string line;
  while (std::getline(s, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}
}  // namespace

TEST_CASE("disk cache: a planted 1 GiB entry is refused from its size, without reading it") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aj_big_unit_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  aj::jit::DiskCache c(dir.string());
  REQUIRE(c.write("k", "payload"));
  std::string got;
  REQUIRE(c.read("k", &got) == aj::jit::DiskRead::hit);
  // Measured against the same lookup of a small valid entry.
  REQUIRE(peak_rss(true) > 0);
  REQUIRE(c.read("k", &got) == aj::jit::DiskRead::hit);
  const long long small_peak = peak_rss(false);
  // 1 GiB with a valid header for this key (sparse: no disk used).
  {
    std::ofstream f(c.path_for("k"), std::ios::binary | std::ios::trunc);
    f << "AJKC1\n";
    const std::uint64_t klen = 1, plen = (std::uint64_t{1} << 30) - 6 - 8 - 1 - 16;
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((klen >> (8 * i)) & 0xff));
    f << "k";
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((plen >> (8 * i)) & 0xff));
  }
  fs::resize_file(c.path_for("k"), std::uint64_t{1} << 30);
  REQUIRE(peak_rss(true) > 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(c.read("k", &got) == aj::jit::DiskRead::corrupt);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long long big_peak = peak_rss(false);
  CAPTURE(small_peak);
  CAPTURE(big_peak);
  CHECK(big_peak - small_peak <= 50ll << 20);
  CHECK(got.size() < 1024);
  CHECK(seconds < 0.5);  // generous: reading the file alone took about 3 s
  // A short header, a truncated key, lengths that do not add up: refused too.
  fs::resize_file(c.path_for("k"), 10);
  CHECK(c.read("k", &got) == aj::jit::DiskRead::corrupt);
  fs::remove_all(dir);
}

TEST_CASE("disk cache: a directory others may write, or another user's, is not used (one line on stderr)") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aj_shared_unit_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  aj::jit::DiskCache c(dir.string());
  REQUIRE(c.write("k", "payload"));  // made by the cache: 0700
  CHECK((fs::status(dir).permissions() & (fs::perms::group_write | fs::perms::others_write)) == fs::perms::none);
  std::string got;
  CHECK(c.read("k", &got) == aj::jit::DiskRead::hit);
  for (fs::perms writable : {fs::perms::others_write, fs::perms::group_write}) {
    fs::permissions(dir, writable, fs::perm_options::add);
    CHECK(c.read("k", &got) == aj::jit::DiskRead::missing);  // compiled instead, never read
    CHECK(!c.write("k2", "payload"));
    CHECK(!fs::exists(c.path_for("k2")));
    fs::permissions(dir, writable, fs::perm_options::remove);
  }
  CHECK(c.read("k", &got) == aj::jit::DiskRead::hit);
  // Another user's directory: /tmp itself (root's, and world-writable) when
  // this test is not root; else a file where the directory should be.
  const fs::path file = dir / "not_a_dir";
  { std::ofstream(file) << "x"; }
  aj::jit::DiskCache on_file(file.string());
  CHECK(on_file.read("k", &got) == aj::jit::DiskRead::missing);
  CHECK(!on_file.write("k", "payload"));
  aj::jit::DiskCache tmp(fs::temp_directory_path().string());
  if (::geteuid() != 0) {
    CHECK(tmp.read("k", &got) == aj::jit::DiskRead::missing);
    CHECK(!tmp.write("aj_never_written", "payload"));
  }
  fs::remove_all(dir);

  // End to end: a world-writable cache directory is left alone; kernels still run.
  TempCacheDir cache("aj_shared_jit_");
  fs::permissions(cache.dir, fs::perms::others_write, fs::perm_options::add);
  const auto v = ajtest::random_magnitudes<double>(100, 37, 0.5, 9.0);
  aj::jit::clear_memory_cache();
  aj::reset_stats();
  const auto out = (aj::from_vector(v) * 2.5 + 1.0).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(out[i] == v[i] * 2.5 + 1.0);
  CHECK(aj::stats().kernels_compiled == 1);
  CHECK(cache.entries().empty());
}

}  // TEST_SUITE

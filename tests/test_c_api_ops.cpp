// The C functions added for C API 1.2 (issue 36 point 1: a foreign runtime
// needs every C++ op) against the C++ functions they wrap, on random inputs:
// zeros_like / ones_like / full_like, cumulative_sum, topk, nonzero,
// scatter, scatter_add_along_axis, put_along_axis, slice_update, slice_add,
// pad, roll, stop_gradient, sum_to_shape; and each one's error paths (a
// clear message naming the C function, the null handle in every `out`, no
// handle made or released).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/c_result.hpp"
#include "tests/random_data.hpp"

namespace {

// A C handle owned by the test (released when it goes out of scope).
struct Handle {
  aj_array h{0};
  explicit Handle(aj::Array a) : h(aj::to_c(std::move(a))) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { CHECK(aj_array_release(h) == AJ_OK); }
};

// `s` failed with `status`, naming `fn` and saying `what`; *out is null and no
// handle was made.
void check_error(aj_status s, aj_status status, const aj_array& out, const std::string& fn, const char* what) {
  CAPTURE(fn);
  CHECK(s == status);
  CHECK(out._id == 0);
  const std::string e = aj_last_error();
  CAPTURE(e);
  CHECK(e.rfind(fn + ": ", 0) == 0);
  CHECK(e.find(what) != std::string::npos);
}

// A random f64 array of `shape` (small integers, so sums are exact in any
// order and comparisons of C and C++ results are exact).
aj::Array random_array(aj::Shape shape, unsigned seed) {
  return aj::from_vector(ajtest::small_values(static_cast<std::size_t>(shape.numel()), seed), shape);
}

// Random i64 indices in [-n, n) of `shape`.
aj::Array random_indices(aj::Shape shape, std::int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int64_t> v(static_cast<std::size_t>(shape.numel()));
  for (auto& i : v) i = std::uniform_int_distribution<std::int64_t>(-n, n - 1)(rng);
  return aj::from_vector(v, shape);
}

}  // namespace

TEST_CASE("c api: zeros_like, ones_like, full_like, cumulative_sum, stop_gradient, sum_to_shape compute what C++ does") {
  const std::size_t live = aj_live_handles();
  for (unsigned seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    const aj::Array x = random_array({2, 3, static_cast<std::int64_t>(seed)}, seed);
    const aj::Array xi = x.astype(aj::DType::i32);
    const Handle hx(x), hxi(xi);
    aj_array out{0};
    auto same = [&](aj_status s, const aj::Array& want) { ajtest::check_c_result(s, out, want); };
    const aj_dtype i64 = AJ_I64, f32 = AJ_F32;
    same(aj_zeros_like(hx.h, nullptr, &out), aj::zeros_like(x));
    same(aj_zeros_like(hx.h, &i64, &out), aj::zeros_like(x, aj::DType::i64));
    same(aj_ones_like(hxi.h, nullptr, &out), aj::ones_like(xi));
    same(aj_ones_like(hx.h, &f32, &out), aj::ones_like(x, aj::DType::f32));
    same(aj_full_like(hx.h, 2.5, nullptr, &out), aj::full_like(x, 2.5));
    same(aj_full_like(hxi.h, -7, nullptr, &out), aj::full_like(xi, -7));
    same(aj_full_like(hxi.h, 0.25, &f32, &out), aj::full_like(xi, 0.25, aj::DType::f32));
    for (int axis : {0, 1, -1}) {
      same(aj_cumulative_sum(hx.h, &axis, nullptr, 0, &out), aj::cumulative_sum(x, axis));
      same(aj_cumulative_sum(hxi.h, &axis, &i64, 1, &out), aj::cumulative_sum(xi, axis, aj::DType::i64, true));
    }
    const aj::Array flat = aj::reshape(x, aj::Shape{-1});
    const Handle hflat(flat);
    same(aj_cumulative_sum(hflat.h, nullptr, nullptr, 1, &out),
         aj::cumulative_sum(flat, std::nullopt, std::nullopt, true));
    same(aj_stop_gradient(hx.h, &out), aj::stop_gradient(x));
    const std::int64_t to[] = {3, 1};
    same(aj_sum_to_shape(hx.h, to, 2, &out), aj::sum_to_shape(x, aj::Shape{3, 1}));
    same(aj_sum_to_shape(hx.h, nullptr, 0, &out), aj::sum_to_shape(x, aj::Shape{}));

    // Errors: nothing made, the C function named.
    const aj_dtype bad = 99;
    check_error(aj_zeros_like(hx.h, &bad, &out), AJ_ERROR_USER, out, "aj_zeros_like", "99");
    check_error(aj_ones_like(aj_array{0}, nullptr, &out), AJ_ERROR_HANDLE, out, "aj_ones_like", "a");
    check_error(aj_full_like(hx.h, 1.0, &bad, &out), AJ_ERROR_USER, out, "aj_full_like", "99");
    CHECK(aj_zeros_like(hx.h, nullptr, nullptr) == AJ_ERROR_USER);
    const int far = 5;
    check_error(aj_cumulative_sum(hx.h, &far, nullptr, 0, &out), AJ_ERROR_USER, out, "aj_cumulative_sum", "axis");
    check_error(aj_cumulative_sum(hx.h, nullptr, nullptr, 0, &out), AJ_ERROR_USER, out, "aj_cumulative_sum",
                "needs an axis");
    check_error(aj_sum_to_shape(hx.h, to, -1, &out), AJ_ERROR_USER, out, "aj_sum_to_shape", "ndim");
    const std::int64_t wrong[] = {7};
    check_error(aj_sum_to_shape(hx.h, wrong, 1, &out), AJ_ERROR_USER, out, "aj_sum_to_shape", "sum_to_shape");
    check_error(aj_stop_gradient(aj_array{12345}, &out), AJ_ERROR_HANDLE, out, "aj_stop_gradient", "x");
  }
  CHECK(aj_live_handles() == live);
}

TEST_CASE("c api: topk gives the values and indices C++ does; nonzero one index array per axis") {
  const std::size_t live = aj_live_handles();
  for (unsigned seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    const aj::Array x = random_array({3, 5}, seed);
    const Handle hx(x);
    for (int axis : {0, 1, -1}) {
      const std::int64_t extent = x.shape()[axis < 0 ? axis + 2 : axis];
      for (std::int64_t k : {std::int64_t{0}, std::int64_t{1}, extent}) {
        CAPTURE(axis);
        CAPTURE(k);
        aj_array v{0}, i{0};
        const aj_status s = aj_topk(hx.h, k, axis, &v, &i);
        const aj::TopK want = aj::topk(x, k, axis);
        ajtest::check_c_result(s, v, want.values);
        ajtest::check_c_result(AJ_OK, i, want.indices);
      }
    }
    aj_array v{1}, i{1};
    CHECK(aj_topk(hx.h, 6, 1, &v, &i) == AJ_ERROR_USER);
    CHECK(v._id == 0);
    CHECK(i._id == 0);
    CHECK(std::string(aj_last_error()).rfind("aj_topk: ", 0) == 0);
    CHECK(std::string(aj_last_error()).find("k = 6") != std::string::npos);
    CHECK(aj_topk(hx.h, 1, 2, &v, &i) == AJ_ERROR_USER);
    CHECK(aj_topk(hx.h, 1, 0, &v, nullptr) == AJ_ERROR_USER);
    CHECK(v._id == 0);
    CHECK(std::string(aj_last_error()).find("null output") != std::string::npos);
    CHECK(aj_topk(aj_array{0}, 1, 0, &v, &i) == AJ_ERROR_HANDLE);

    // nonzero of a random bool array, with and without a static size.
    const aj::Array m = x > 1.0;
    const Handle hm(m);
    aj_array outs[2] = {{0}, {0}};
    const std::int64_t size = 4;
    for (const std::int64_t* sz : {static_cast<const std::int64_t*>(nullptr), &size}) {
      const aj_status s = aj_nonzero(hm.h, sz, -1, outs, 2);
      const std::vector<aj::Array> want = sz ? aj::nonzero(m, *sz, -1) : aj::nonzero(m);
      REQUIRE(want.size() == 2);
      ajtest::check_c_result(s, outs[0], want[0]);
      ajtest::check_c_result(AJ_OK, outs[1], want[1]);
    }
    aj_array three[3] = {{1}, {1}, {1}};
    CHECK(aj_nonzero(hm.h, nullptr, 0, three, 3) == AJ_ERROR_USER);
    CHECK(std::string(aj_last_error()).find("aj_nonzero: makes 2 arrays") == 0);
    for (const aj_array& o : three) CHECK(o._id == 0);
    CHECK(aj_nonzero(hm.h, nullptr, 0, nullptr, 2) == AJ_ERROR_USER);
    CHECK(aj_nonzero(hm.h, nullptr, 0, outs, -1) == AJ_ERROR_USER);
  }
  CHECK(aj_live_handles() == live);
}

TEST_CASE("c api: scatter, scatter_add_along_axis, put_along_axis, slice_update, slice_add compute what C++ does") {
  const std::size_t live = aj_live_handles();
  for (unsigned seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    const aj::Array a = random_array({4, 5}, seed);
    const aj::Array idx = random_indices({3}, 4, seed + 10);                  // rows of a (duplicates likely)
    const aj::Array upd = random_array({3, 5}, seed + 20);                    // a.shape[:0] + idx.shape + a.shape[1:]
    const aj::Array along = random_indices({4, 2}, 5, seed + 30);             // a's rank, axis 1
    const aj::Array along_upd = random_array({4, 2}, seed + 40);
    const Handle ha(a), hi(idx), hu(upd), hl(along), hlu(along_upd), hs(aj::full({}, 9.0, aj::DType::f64));
    aj_array out{0};
    auto same = [&](aj_status s, const aj::Array& want) { ajtest::check_c_result(s, out, want); };
    same(aj_scatter(ha.h, hi.h, hu.h, 0, &out), aj::scatter(a, idx, upd, 0));
    same(aj_scatter(ha.h, hi.h, hs.h, 0, &out), aj::scatter(a, idx, aj::full({}, 9.0, aj::DType::f64), 0));
    same(aj_scatter_add_along_axis(ha.h, hl.h, hlu.h, 1, &out), aj::scatter_add_along_axis(a, along, along_upd, 1));
    same(aj_put_along_axis(ha.h, hl.h, hlu.h, -1, &out), aj::put_along_axis(a, along, along_upd, -1));
    // Scalar updates: a weak scalar handle is an operand, as in C++.
    aj_array w{0};
    REQUIRE(aj_scalar_f64(3.0, &w) == AJ_OK);
    same(aj_put_along_axis(ha.h, hl.h, w, 1, &out), aj::put_along_axis(a, along, 3.0, 1));
    same(aj_scatter(ha.h, hi.h, w, 0, &out), aj::scatter(a, idx, 3.0, 0));

    // Slices: rows 1:4:2, columns ::-2 (negative steps too), and AJ_SLICE_NONE.
    const std::int64_t starts[] = {1, AJ_SLICE_NONE}, stops[] = {4, AJ_SLICE_NONE}, steps[] = {2, -2};
    const std::vector<aj::Slice> sl = {aj::Slice(1, 4, 2), aj::Slice(std::nullopt, std::nullopt, -2)};
    const aj::Array vals = random_array({2, 3}, seed + 50);
    const Handle hv(vals);
    same(aj_slice_update(ha.h, starts, stops, steps, 2, hv.h, &out), aj::slice_update(a, sl, vals));
    same(aj_slice_add(ha.h, starts, stops, steps, 2, hv.h, &out), aj::slice_add(a, sl, vals));
    same(aj_slice_update(ha.h, starts, stops, nullptr, 1, w, &out), aj::slice_update(a, {aj::Slice(1, 4)}, 3.0));
    same(aj_slice_add(ha.h, nullptr, nullptr, nullptr, 0, w, &out), aj::slice_add(a, {}, 3.0));

    // Errors.
    const Handle hf(aj::from_vector<float>({0.5f, 1.5f}));
    check_error(aj_scatter(ha.h, hf.h, hu.h, 0, &out), AJ_ERROR_USER, out, "aj_scatter", "indices must be integers");
    check_error(aj_scatter(ha.h, hi.h, hu.h, 2, &out), AJ_ERROR_USER, out, "aj_scatter", "axis");
    check_error(aj_scatter(ha.h, hi.h, aj_array{0}, 0, &out), AJ_ERROR_HANDLE, out, "aj_scatter", "updates");
    check_error(aj_scatter_add_along_axis(ha.h, hi.h, hu.h, 0, &out), AJ_ERROR_USER, out, "aj_scatter_add_along_axis",
                "rank");
    check_error(aj_put_along_axis(ha.h, hl.h, hu.h, 1, &out), AJ_ERROR_USER, out, "aj_put_along_axis", "broadcast");
    check_error(aj_put_along_axis(ha.h, hl.h, aj_array{0}, 1, &out), AJ_ERROR_HANDLE, out, "aj_put_along_axis",
                "values");
    check_error(aj_slice_update(ha.h, starts, stops, steps, -1, hv.h, &out), AJ_ERROR_USER, out, "aj_slice_update",
                "negative");
    const std::int64_t zero_step[] = {0, 1};
    check_error(aj_slice_add(ha.h, starts, stops, zero_step, 2, hv.h, &out), AJ_ERROR_USER, out, "aj_slice_add",
                "step");
    check_error(aj_slice_update(ha.h, starts, stops, steps, 2, hu.h, &out), AJ_ERROR_USER, out, "aj_slice_update",
                "broadcast");
    CHECK(aj_array_release(w) == AJ_OK);
  }
  CHECK(aj_live_handles() == live);
}

TEST_CASE("c api: pad (constant, edge, reflect) and roll compute what C++ does") {
  const std::size_t live = aj_live_handles();
  for (unsigned seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    const aj::Array a = random_array({3, 4}, seed);
    const aj::Array ai = a.astype(aj::DType::i64);
    const Handle ha(a), hai(ai);
    aj_array out{0};
    auto same = [&](aj_status s, const aj::Array& want) { ajtest::check_c_result(s, out, want); };
    const std::int64_t w2[] = {1, 2, 0, 3};  // (before, after) per axis
    const std::int64_t w1[] = {2, 1};        // for every axis
    const std::vector<aj::PadWidth> pw2 = {aj::PadWidth(1, 2), aj::PadWidth(0, 3)};
    same(aj_pad(ha.h, w2, 2, AJ_PAD_CONSTANT, 0.5, &out), aj::pad(a, pw2, aj::PadMode::constant, 0.5));
    same(aj_pad(hai.h, w2, 2, AJ_PAD_CONSTANT, -3, &out), aj::pad(ai, pw2, aj::PadMode::constant, -3));
    same(aj_pad(ha.h, w2, 2, AJ_PAD_EDGE, 0, &out), aj::pad(a, pw2, aj::PadMode::edge));
    same(aj_pad(ha.h, w2, 2, AJ_PAD_REFLECT, 0, &out), aj::pad(a, pw2, aj::PadMode::reflect));
    same(aj_pad(hai.h, w1, 1, AJ_PAD_REFLECT, 0, &out), aj::pad(ai, {aj::PadWidth(2, 1)}, aj::PadMode::reflect));
    // Reflect by more than the axis (a gather) and edge on every axis.
    const std::int64_t wide[] = {7, 5};
    same(aj_pad(ha.h, wide, 1, AJ_PAD_REFLECT, 0, &out), aj::pad(a, {aj::PadWidth(7, 5)}, aj::PadMode::reflect));
    same(aj_pad(ha.h, wide, 1, AJ_PAD_EDGE, 0, &out), aj::pad(a, {aj::PadWidth(7, 5)}, aj::PadMode::edge));

    std::mt19937 rng(seed);
    const std::int64_t shift = std::uniform_int_distribution<std::int64_t>(-20, 20)(rng);
    const std::int64_t shifts[] = {shift, 3, -1};
    const std::int32_t axes[] = {1, 0, 1};
    same(aj_roll(ha.h, shifts, nullptr, 1, &out), aj::roll(a, shift));
    same(aj_roll(ha.h, shifts, axes, 1, &out), aj::roll(a, shift, 1));
    same(aj_roll(ha.h, shifts, axes, 3, &out), aj::roll(a, {shift, 3, -1}, {1, 0, 1}));
    same(aj_roll(hai.h, shifts + 1, axes + 1, 2, &out), aj::roll(ai, {3, -1}, {0, 1}));

    // Errors.
    check_error(aj_pad(ha.h, w2, 2, 7, 0, &out), AJ_ERROR_USER, out, "aj_pad", "not a pad mode");
    check_error(aj_pad(ha.h, nullptr, 2, AJ_PAD_CONSTANT, 0, &out), AJ_ERROR_USER, out, "aj_pad", "null widths");
    check_error(aj_pad(ha.h, w2, -1, AJ_PAD_CONSTANT, 0, &out), AJ_ERROR_USER, out, "aj_pad", "negative");
    const std::int64_t three[] = {1, 1, 1, 1, 1, 1};
    check_error(aj_pad(ha.h, three, 3, AJ_PAD_CONSTANT, 0, &out), AJ_ERROR_USER, out, "aj_pad", "3 widths");
    const std::int64_t neg[] = {-1, 0};
    check_error(aj_pad(ha.h, neg, 1, AJ_PAD_EDGE, 0, &out), AJ_ERROR_USER, out, "aj_pad", "negative width");
    check_error(aj_pad(ha.h, w2, 2, AJ_PAD_EDGE, 0, nullptr), AJ_ERROR_USER, out, "aj_pad", "null output");
    check_error(aj_roll(ha.h, shifts, nullptr, 2, &out), AJ_ERROR_USER, out, "aj_roll", "exactly one shift");
    check_error(aj_roll(ha.h, nullptr, axes, 1, &out), AJ_ERROR_USER, out, "aj_roll", "null shifts");
    check_error(aj_roll(ha.h, shifts, axes, -2, &out), AJ_ERROR_USER, out, "aj_roll", "negative");
    const std::int32_t bad_axis[] = {2};
    check_error(aj_roll(ha.h, shifts, bad_axis, 1, &out), AJ_ERROR_USER, out, "aj_roll", "axis");
    check_error(aj_roll(aj_array{0}, shifts, axes, 1, &out), AJ_ERROR_HANDLE, out, "aj_roll", "a");
  }
  CHECK(aj_live_handles() == live);
}

// concatenate and stack as kernels (opt/passes/concat_slices.hpp): a piece a
// kernel computes is written by that kernel straight into its slice of the
// result; the rest (evaluated arrays, views, pieces something else reads)
// are copied by compiled copy kernels. Against the reference interpreter on
// 1 to 8 threads, compiled and interpreted; buffers and explain show that no
// piece gets a buffer of its own.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/compare_arrays.hpp"

namespace {

using aj::Array;
using aj::DType;

Array values(aj::Shape shape, DType t, unsigned seed) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-4, 4);
  for (auto& x : v) x = d(rng);
  Array a = aj::from_vector(v, shape);
  if (t == DType::bool_) return (a > 0.0).eval();
  return (aj::is_float(t) ? a : a * 1000.0).astype(t).eval();
}

// `make` by the reference, then compiled on 1, 2, 3, 4, 8 threads and
// interpreted: equal, floats within 1e-4 relative where a reduction of
// 200,000 f32 may reassociate.
void check(const std::function<std::vector<Array>()>& make) {
  std::vector<Array> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = make();
    aj::eval(want);
  }
  for (bool jit : {true, false}) {
    aj::jit::set_enabled(jit);
    for (int threads : {1, 2, 3, 4, 8}) {
      if (!jit && threads > 1) continue;
      CAPTURE(jit);
      CAPTURE(threads);
      aj::jit::set_num_threads(threads);
      std::vector<Array> got = make();
      aj::eval(got);
      for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        ajtest::check_matches(got[i], want[i], 1e-4, true);
      }
    }
  }
  aj::jit::set_enabled(true);
  aj::jit::set_num_threads(0);
}

}  // namespace

TEST_SUITE("concat_slices") {

TEST_CASE("computed pieces are written into their slices: every axis, every dtype, mixed with evaluated and strided pieces") {
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    CAPTURE(std::string(aj::dtype_name(t)));
    const Array a = values({6, 7, 5}, t, 1), b = values({6, 3, 5}, t, 2), w = values({6, 7, 9}, t, 3);
    check([&] {
      const Array neg = t == DType::bool_ ? !a : -a;
      return std::vector<Array>{
          aj::concatenate({neg, b, aj::where(a == a, a, a)}, 1),                 // computed, evaluated, computed
          aj::concatenate({a.transpose({0, 1, 2}), neg, a}, 0),                  // along the outer axis
          aj::concatenate({neg, w, aj::slice(w, 2, 8, 0, -2)}, 2),               // a reversed strided view
          aj::concatenate({a.astype(DType::f64), b.astype(DType::i32).astype(DType::f64)}, -2),  // casts
          aj::stack({neg, a, aj::where(a == a, neg, a)}, 1),                     // stack: size-1 axis inserted
      };
    });
  }
}

TEST_CASE("a strided reshape's copy kernel writes into its slice: it iterates over its input's axes, not the piece's") {
  // The random-graph seed 220203658: the copy kernel that lays out
  // reshape(borrowed [1, 5, 2] with strides [30, 3, 2], [2, 5]) iterates over
  // [1, 5, 2]; its slice strides were once taken axis by axis from the
  // [2, 5] piece's ([0, 1, 0]: half the slice never written).
  std::vector<float> buf(40, -7.0f);
  for (int k = 0; k < 10; ++k) buf[static_cast<std::size_t>(k / 2 * 3 + k % 2 * 2)] = 0.25f * static_cast<float>(k) - 1.0f;
  const Array v0 = values({6, 5}, DType::f32, 6), w = values({2, 3}, DType::f32, 7);
  check([&] {
    const Array piece = aj::reshape(aj::borrow<float>(buf.data(), aj::Shape({1, 5, 2}), {30, 3, 2}), {2, 5});
    const Array rows = aj::concatenate({v0 * 2.0f, piece}, 0);  // a contiguous slice: written in place
    return std::vector<Array>{rows, aj::argmax(rows)};
  });
  check([&] {
    const Array piece = aj::reshape(aj::borrow<float>(buf.data(), aj::Shape({1, 5, 2}), {30, 3, 2}), {2, 5});
    const Array cols = aj::concatenate({w * 2.0f, piece}, 1);  // a strided slice: copied
    return std::vector<Array>{cols, aj::argmin(cols)};
  });
}

TEST_CASE("flattened pieces (a gradient bucket) are written into their slices: any reshape into a contiguous slice") {
  // concatenate({reshape(g1, {-1}), reshape(g2, {-1}), ...}) packs computed
  // arrays of any shapes flat (aj::distributed::average_gradients): each
  // kernel writes its piece contiguous at the piece's offset; a reshape of a
  // non-contiguous result, or into a strided slice, still copies.
  const Array a = values({4, 3}, DType::f32, 11), b = values({2, 3, 5}, DType::f32, 12), c = values({7}, DType::f32, 13);
  const auto flat = [](const Array& x) { return aj::reshape(x, aj::Shape{x.size()}); };
  check([&] {
    return std::vector<Array>{
        aj::concatenate({flat(a * 2.0f), flat(aj::exp(b)), flat(c + 1.0f)}, 0),
        aj::concatenate({flat(aj::sum(b, 2)), flat(a.transpose() * 3.0f), c}, 0),  // a reduction; a transposed result
        aj::concatenate({aj::reshape(b * 2.0f, {6, 5}), aj::reshape(a - 1.0f, {6, 2})}, 1),  // strided slices: copied
    };
  });
  const std::string plan = aj::explain(aj::concatenate({flat(a * 2.0f), flat(aj::exp(b)), flat(c + 1.0f)}, 0));
  CAPTURE(plan);
  std::size_t slices = 0;
  for (std::size_t at = plan.find("into its slice of"); at != std::string::npos; at = plan.find("into its slice of", at + 1)) {
    ++slices;
  }
  CHECK(slices == 3);
  CHECK(plan.find("buffers: 1 values") != std::string::npos);
}

TEST_CASE("reductions write into their slices, also split over threads; a piece read twice or held is copied") {
  const Array x = values({3, 200000}, DType::f32, 4), y = values({1 << 19}, DType::f64, 5);
  check([&] {
    const Array twice = x * 2.0f;
    return std::vector<Array>{
        aj::stack({aj::sum(x, 1), aj::max(x, 1) + 1.0f, aj::argmin(x, 1).astype(DType::f32)}, 0),
        aj::stack({aj::sum(y), aj::min(y), aj::mean(y * y)}),     // whole arrays: split reductions
        aj::concatenate({twice, twice + 1.0f, twice}, 1),          // `twice` read twice: copied
        aj::concatenate({aj::sum(x, 0, true), aj::max(x, 0, true)}, 0),  // outer-axis reductions
    };
  });
  // A piece that is also a result keeps a buffer of its own; a piece only
  // held by a handle is a view of the result's buffer. Both read right.
  Array piece = x * 3.0f, held = x * 4.0f;
  Array both = aj::concatenate({piece, x, held}, 0);
  aj::eval({piece, both});
  CHECK(piece.to_vector<float>() == (x * 3.0f).eval().to_vector<float>());
  CHECK(held.is_evaluated());
  CHECK(held.to_vector<float>() == (x * 4.0f).eval().to_vector<float>());
  CHECK(aj::slice(both, 0, 0, 3).eval().to_vector<float>() == piece.to_vector<float>());
  CHECK(aj::slice(both, 0, 6, 9).eval().to_vector<float>() == held.to_vector<float>());
  held = held + 1.0f;  // not in place: the buffer is the concatenate's too
  held.eval();
  CHECK(aj::slice(both, 0, 6, 9).eval().to_vector<float>() == (x * 4.0f).eval().to_vector<float>());
}

TEST_CASE("no piece gets a buffer of its own: one allocation, explain names the slices") {
  const Array x = values({512, 300}, DType::f32, 6), y = values({512, 100}, DType::f32, 7);
  auto make = [&] { return aj::concatenate({aj::exp(x), y * 2.0f, aj::sqrt(aj::abs(x))}, 1); };
  const std::string plan = aj::explain(make());
  CHECK(plan.find("into its slice of") != std::string::npos);
  CHECK(plan.find("buffers: 1 values") != std::string::npos);
  aj::jit::set_num_threads(2);
  make().eval();  // warm: compiled, pool filled
  aj::reset_stats();
  Array c = make();
  c.eval();
  const aj::Stats s = aj::stats();
  CHECK(s.system_allocs + s.pool_hits == 1);  // the result's buffer only
  CHECK(s.kernels_launched == 2);  // exp(x) and sqrt(abs(x)) share a kernel; the concatenate copies nothing
  aj::jit::set_num_threads(0);
  std::vector<float> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = make().to_vector<float>();
  }
  const auto got = c.to_vector<float>();
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) bad += std::fabs(got[i] - want[i]) > 1e-5f * (1 + std::fabs(want[i]));
  CHECK(bad == 0);
  // stack of reductions: one kernel writes every row of the result (the
  // pieces are held by no handle once the statement that made them ends).
  Array st = aj::stack({aj::sum(x, 1), aj::max(x, 1), aj::min(x, 1)});
  aj::reset_stats();
  st.eval();
  CHECK(aj::stats().kernels_launched == 1);
  CHECK(aj::stats().system_allocs + aj::stats().pool_hits == 1);
}

TEST_CASE("a concatenate in a loop reuses its plan and its buffers (heat-equation boundary)") {
  // u = [u0, (u[:-2] + u[2:]) / 2, u[-1]] repeated: the interior writes into
  // the new array, the two boundary elements are copied.
  Array u = values({4096}, DType::f64, 8);
  std::vector<double> h = u.to_vector<double>();
  for (int step = 0; step < 5; ++step) {
    Array interior = (aj::slice(u, 0, 0, 4094) + aj::slice(u, 0, 2, 4096)) * 0.5;
    u = aj::concatenate({aj::slice(u, 0, 0, 1), interior, aj::slice(u, 0, 4095, 4096)});
    u.eval();
    std::vector<double> n = h;
    for (std::size_t i = 1; i + 1 < h.size(); ++i) n[i] = (h[i - 1] + h[i + 1]) * 0.5;
    h = n;
  }
  CHECK(u.to_vector<double>() == h);
}

}  // TEST_SUITE

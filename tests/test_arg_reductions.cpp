// argmax/argmin as JIT-compiled reductions (graph/kernel.hpp: a Reduce
// carrying a value and an index) against the reference interpreter, which
// keeps its own loop as the oracle: every dtype, the reduced axis last
// (lanes of accumulators) or outer (blocks of outputs), strided views,
// ties, NaN and signed zeros, whole arrays split over their range, on 1, 2,
// 3, 4 and 8 threads, compiled and through the kernel interpreter. Then
// fusion: producers run inside the reduction's loop and epilogues after it.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "jit/llvm/codegen.hpp"

namespace {

using aj::Array;
using aj::DType;

constexpr DType kDTypes[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64};

// Values drawn from a few levels, so rows hold many ties; floats include
// -0.0 beside +0.0 and, with `nans`, NaNs at irregular places (some rows
// several, most none).
Array tie_heavy(aj::Shape shape, DType t, unsigned seed, bool nans) {
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<double> v(n);
  std::mt19937 rng(seed);
  const double levels[] = {-3.0, -1.0, -0.0, 0.0, 2.0, 5.0};
  for (auto& x : v) x = levels[rng() % 6];
  if (nans) {
    for (std::size_t i = 5; i < n; i += 1 + rng() % 1500) v[i] = std::nan("");
  }
  Array a = aj::from_vector(v, shape);
  if (t == DType::bool_) return (a > 1.0).astype(DType::bool_);
  return a.astype(t);
}

// Spread values (few ties) with a few NaNs.
Array spread(aj::Shape shape, DType t, unsigned seed) {
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<double> v(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1e6, 1e6);
  for (auto& x : v) x = d(rng);
  for (std::size_t i = 11; i < n; i += 3001) v[i] = std::nan("");
  Array a = aj::from_vector(v, shape);
  if (t == DType::bool_) return (a > 0.0).astype(DType::bool_);
  return a.astype(t);
}

// `make` by the reference interpreter, then by the host (compiled, and the
// kernel interpreter when `interpreter`) on every thread count: the
// indices must be equal.
void check(const std::function<std::vector<Array>()>& make, bool interpreter = false) {
  std::vector<Array> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = make();
    aj::eval(want);
  }
  for (bool jit : {true, false}) {
    if (!jit && !interpreter) continue;
    aj::jit::set_enabled(jit);
    for (int threads : {1, 2, 3, 4, 8}) {
      CAPTURE(jit);
      CAPTURE(threads);
      aj::jit::set_num_threads(threads);
      std::vector<Array> got = make();
      aj::eval(got);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        REQUIRE(got[i].dtype() == want[i].dtype());
        REQUIRE(got[i].shape() == want[i].shape());
        const auto g = got[i].astype(DType::i64).to_vector<std::int64_t>();
        const auto w = want[i].astype(DType::i64).to_vector<std::int64_t>();
        for (std::size_t k = 0; k < g.size(); ++k) {
          if (g[k] != w[k]) {
            CAPTURE(k);
            CHECK(g[k] == w[k]);
            break;  // one mismatch per output is enough to read
          }
        }
      }
    }
  }
  aj::jit::set_enabled(true);
  aj::jit::set_num_threads(0);
}

std::vector<Array> both(const Array& x, std::optional<int> axis) {
  return {aj::argmax(x, axis), aj::argmin(x, axis)};
}

}  // namespace

TEST_SUITE("arg_reductions") {

TEST_CASE("argmax/argmin over the last axis match the reference: every dtype, lane edges, ties, NaN, -0") {
  // Row lengths around the 8/16 accumulator lanes and longer rows.
  const aj::Shape shapes[] = {{3, 1}, {5, 7}, {4, 8}, {4, 15}, {6, 16}, {3, 17}, {9, 33}, {2, 1000}, {40, 513}};
  for (DType t : kDTypes) {
    for (const aj::Shape& s : shapes) {
      CAPTURE(std::string(aj::dtype_name(t)));
      CAPTURE(s.str());
      const Array x = tie_heavy(s, t, 1, true);
      check([&] { return both(x, 1); }, true);
    }
  }
}

TEST_CASE("argmax/argmin over an outer axis match the reference: every dtype, block edges, ties, NaN, -0") {
  // Column counts around the output blocks (jit/llvm/codegen.hpp), rows
  // around the 8 rows per pass.
  const aj::Shape shapes[] = {{1, 5}, {7, 3}, {9, 1025}, {17, 2049}, {8, 4096}, {1003, 3}};
  for (DType t : kDTypes) {
    for (const aj::Shape& s : shapes) {
      CAPTURE(std::string(aj::dtype_name(t)));
      CAPTURE(s.str());
      const Array x = tie_heavy(s, t, 2, true);
      check([&] { return both(x, 0); }, s.numel() < 20000);
    }
  }
}

// Axes of 2^31 points or more keep their indices in i64 on a scalar path
// (jit/llvm/codegen.hpp, index_i32_limit); with the limit at 6 the same
// kernels take it from 7 points on, and both paths meet the reference.
TEST_CASE("argmax/argmin over axes past the i32 index limit take the i64 path and match the reference") {
  const std::string dir = aj::jit::cache_dir();
  aj::jit::set_cache_dir("");  // no kernel made at the usual limit comes back from disk
  aj::jit::clear_memory_cache();
  aj::jit::set_index_i32_limit(6);
  const aj::Shape shapes[] = {{5, 6}, {4, 7}, {3, 17}, {9, 33}, {40, 513}, {7, 1025}, {1003, 3}};
  for (DType t : kDTypes) {
    for (const aj::Shape& s : shapes) {
      CAPTURE(std::string(aj::dtype_name(t)));
      CAPTURE(s.str());
      const Array x = tie_heavy(s, t, 3, true);
      check([&] { return std::vector<Array>{aj::argmax(x, 1), aj::argmin(x, 1), aj::argmax(x, 0), aj::argmin(x, 0)}; });
    }
  }
  aj::jit::set_index_i32_limit(std::numeric_limits<std::int32_t>::max());
  aj::jit::clear_memory_cache();
  aj::jit::set_cache_dir(dir);
}

TEST_CASE("argmax/argmin of 3-d arrays over each axis, of strided, reversed and transposed views") {
  for (DType t : {DType::i32, DType::f32, DType::f64}) {
    CAPTURE(std::string(aj::dtype_name(t)));
    const Array x = tie_heavy({6, 50, 70}, t, 3, true);
    check([&] {
      std::vector<Array> r;
      for (int axis : {0, 1, 2, -1}) {
        r.push_back(aj::argmax(x, axis));
        r.push_back(aj::argmin(x, axis));
      }
      const Array v = aj::slice(x, {aj::Slice(1, std::nullopt, 2), aj::Slice(std::nullopt, std::nullopt, 3),
                                        aj::Slice(60, std::nullopt, -4)});  // stepped, reversed
      r.push_back(aj::argmax(v, 2));
      r.push_back(aj::argmin(v, 0));
      r.push_back(aj::argmax(x.T(), 0));  // the contiguous axis, now outer
      r.push_back(aj::argmin(x.T(), 2));
      return r;
    }, true);
  }
}

TEST_CASE("argmax/argmin of whole arrays split over their range on several threads") {
  // Large enough to be split (backends/cpu/host_launch.cpp: kParallelWork),
  // NaN-free and with NaNs, and one result per row of a short outer axis.
  for (DType t : kDTypes) {
    CAPTURE(std::string(aj::dtype_name(t)));
    const Array a = spread({1 << 19}, t, 4);
    const Array b = tie_heavy({1 << 19}, t, 5, false);  // many ties across parts
    const Array c = tie_heavy({3, 200000}, t, 6, true);
    check([&] {
      return std::vector<Array>{aj::argmax(a), aj::argmin(a), aj::argmax(b), aj::argmin(b),
                                aj::argmax(c, 1), aj::argmin(c, 1), aj::argmax(c.T(), 0)};
    });
  }
  // Where the only NaN or the only maximum sits in the last part, and in the first.
  for (std::int64_t at : {std::int64_t{0}, std::int64_t{(1 << 19) - 1}, std::int64_t{300000}}) {
    CAPTURE(at);
    std::vector<float> v(1 << 19, 1.0f);
    v[static_cast<std::size_t>(at)] = 2.0f;
    const Array m = aj::from_vector(v);
    v[static_cast<std::size_t>(at)] = NAN;
    const Array n = aj::from_vector(v);
    check([&] { return std::vector<Array>{aj::argmax(m), aj::argmin(m), aj::argmax(n), aj::argmin(n)}; });
  }
}

TEST_CASE("argmax/argmin of all -inf, all +inf, all NaN and all equal rows pick index 0") {
  for (double fill : {-HUGE_VAL, HUGE_VAL, std::nan(""), -0.0}) {
    CAPTURE(fill);
    for (DType t : {DType::f32, DType::f64}) {
      const Array x = aj::full({5, 37}, fill, t);
      const Array y = aj::from_vector(std::vector<double>(5 * 37, fill), {5, 37}).astype(t);  // not a fill
      check([&] { return std::vector<Array>{aj::argmax(y, 1), aj::argmin(y, 1), aj::argmax(y, 0), aj::argmin(y, 0),
                                            aj::argmax(x, 1)}; }, true);
      CHECK(aj::argmax(y, 1).to_vector<std::int64_t>() == std::vector<std::int64_t>(5, 0));
      CHECK(aj::argmin(y, 0).to_vector<std::int64_t>() == std::vector<std::int64_t>(37, 0));
    }
  }
  // Integer extremes: the identity of the accumulators is a real value here.
  const Array lo = aj::full({4, 20}, std::numeric_limits<std::int64_t>::min(), DType::i64) + 0;
  const Array hi = aj::full({4, 20}, std::numeric_limits<std::int32_t>::max(), DType::i32) + 0;
  check([&] { return std::vector<Array>{aj::argmax(lo, 1), aj::argmin(hi, 1), aj::argmax(lo, 0)}; }, true);
}

TEST_CASE("argmax/argmin are kernels: producers fuse in, epilogues run after, one launch") {
  const Array x = tie_heavy({64, 300}, DType::f32, 7, true);
  const Array labels = (aj::arange(64) * 7) % 300;
  auto run = [&](const std::vector<Array>& r) {
    aj::reset_stats();
    std::vector<Array> copy = r;
    aj::eval(copy);
    return aj::stats().kernels_launched;
  };
  // A producer inside the loop.
  const Array p = aj::argmax(x * 2.0f + 1.0f, 1);
  CHECK(aj::explain(p).find("library") == std::string::npos);
  CHECK(run({p}) == 1);
  // An epilogue: the accuracy-style comparison and a cast, in the same kernel.
  CHECK(run({(aj::argmin(aj::abs(x - 1.0f), 1) == labels).astype(DType::f32)}) == 1);
  // max and argmax of the same rows share one pass.
  CHECK(run({aj::max(x, 1), aj::argmax(x, 1), aj::argmin(x, 1)}) == 1);
  // Over an outer axis too.
  CHECK(run({aj::argmax(aj::exp(x), 0)}) == 1);
  check([&] {
    return std::vector<Array>{aj::argmax(x * 2.0f + 1.0f, 1), (aj::argmin(aj::abs(x - 1.0f), 1) == labels),
                              aj::max(x, 1), aj::argmax(x, 1), aj::argmin(-x, 0), aj::argmax(aj::exp(x), 0) + 3};
  }, true);
}

}  // TEST_SUITE

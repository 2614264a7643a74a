// The host JIT's reduction loops at their edges, against the reference
// interpreter: outer-axis reductions (blocks of outputs, rows taken several
// at a time; jit/llvm/codegen.hpp) are bit-exact, last-axis reductions (rows
// reduced side by side) are exact except float sums and products, which may
// reassociate (docs/semantics.md). Each case runs on 1 and on 2 threads.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/compare_arrays.hpp"

namespace {

using aj::Array;
using aj::DType;

constexpr DType kDTypes[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64};

// Random values in [-4, 4] with a few NaNs (when `nans`), as `t`.
Array random_array(aj::Shape shape, DType t, unsigned seed, bool nans) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-4, 4);
  for (auto& x : v) x = d(rng);
  if (nans) {
    for (std::size_t i = 7; i < v.size(); i += 997) v[i] = std::nan("");
  }
  Array a = aj::from_vector(v, shape);
  if (t == DType::bool_ || aj::is_integer(t)) a = (a * 1000.0).astype(DType::i32);  // integers; 0 and != 0 for bool
  return a.astype(t);
}

enum class Which { sum, prod, max, min, all, any };
constexpr Which kWhich[] = {Which::sum, Which::prod, Which::max, Which::min, Which::all, Which::any};

Array reduce(Which w, const Array& x, aj::Axes axes) {
  switch (w) {
    case Which::sum: return aj::sum(x, axes);
    case Which::prod: return aj::prod(aj::is_float(x.dtype()) ? 1.0 + x * 1e-3 : x, axes);  // floats stay finite
    case Which::max: return aj::max(x, axes);
    case Which::min: return aj::min(x, axes);
    case Which::all: return aj::all(x, axes);
    case Which::any: return aj::any(x > 3.9, axes);
  }
  return x;
}

// The arrays of `make` by the reference interpreter and by the JIT on 1 and
// 2 threads, compared element by element; `exact` says which outputs must
// match bit for bit (NaN matches NaN), the rest within 1e-5 relative.
void check(const std::function<std::vector<Array>()>& make, const std::function<bool(std::size_t)>& exact) {
  std::vector<Array> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = make();
    aj::eval(want);
  }
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    aj::jit::set_num_threads(threads);
    std::vector<Array> got = make();
    aj::eval(got);
    aj::jit::set_num_threads(0);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      ajtest::check_matches(got[i], want[i], exact(i) ? 0.0 : 1e-5, true);
    }
  }
}

const auto kAllExact = [](std::size_t) { return true; };

}  // namespace

TEST_SUITE("jit_host") {

// Column counts around the accumulator blocks (4096 outputs for one 4-byte
// accumulator, 2048 for 8 bytes), row counts around the 8 rows per pass.
TEST_CASE("outer-axis reductions are bit-exact at block and row-group edges, every kind and dtype") {
  struct Case { aj::Shape shape; aj::Axes axes; };
  const Case cases[] = {{{1, 5000}, 0}, {{9, 4097}, 0}, {{17, 2049}, 0}, {{8, 4096}, 0},
                        {{1003, 3}, 0}, {{7, 3, 700}, {0, 1}}, {{3, 11, 130}, 1}};
  for (DType t : kDTypes) {
    for (Which w : kWhich) {
      if (t == DType::bool_ && (w == Which::sum || w == Which::prod)) continue;  // promoted: i64 cases cover them
      for (const Case& c : cases) {
        CAPTURE(std::string(aj::dtype_name(t)));
        CAPTURE(static_cast<int>(w));
        CAPTURE(c.shape.str());
        const Array x = random_array(c.shape, t, 1, true);
        check([&] { return std::vector<Array>{reduce(w, x, c.axes)}; }, kAllExact);
      }
    }
  }
}

TEST_CASE("outer-axis reductions of strided, reversed and transposed views are bit-exact") {
  const Array x = random_array({300, 4200}, DType::f32, 2, true);
  const Array y = random_array({2100, 40}, DType::f64, 3, false);
  check([&] {
    const Array stepped = aj::slice(x, {aj::Slice(1, 300, 3), aj::Slice(5, 4200, 2)});  // [100, 2098]
    const Array reversed = aj::slice(x, {aj::Slice(std::nullopt, std::nullopt, -1)});
    const Array columns = y.transpose();  // [40, 2100]: summing axis 0 walks y's rows
    return std::vector<Array>{aj::sum(stepped, 0), aj::max(reversed, 0), aj::min(stepped, 0),
                              aj::sum(columns, 0), aj::prod(1.0 + columns * 1e-3, 0),
                              aj::sum(x.reshape({300, 3, 1400}), {0, 1})};
  }, kAllExact);
}

TEST_CASE("outer-axis reductions with epilogues and per-point outputs are bit-exact") {
  const Array x = random_array({513, 4100}, DType::f32, 4, false);
  const Array b = random_array({4100}, DType::f32, 5, false);
  check([&] {
    const Array e = aj::exp(x - aj::max(x, 0, true));  // softmax down the columns: exp is stored and summed
    return std::vector<Array>{aj::sqrt(aj::sum(x * x, 0)) + b, aj::mean(x, 0), e / aj::sum(e, 0, true),
                              aj::sum(x, 0) + aj::max(x, 0)};
  }, [](std::size_t i) { return i != 2; });  // exp is SLEEF's, within a few ulp of the reference's
}

TEST_CASE("last-axis reductions reduce several rows side by side: remainders, views and every kind") {
  // 1, 3, 5 and 4099 rows: groups of 4 and what is left; [6, 5, 70]: the
  // group stops at the end of the last outer axis.
  struct Case { aj::Shape shape; aj::Axes axes; };
  const Case cases[] = {{{1, 300}, 1}, {{3, 70}, 1}, {{5, 1}, 1}, {{4099, 33}, 1}, {{6, 5, 70}, 2},
                        {{6, 70, 5}, {1, 2}}};
  for (DType t : kDTypes) {
    for (Which w : kWhich) {
      if (t == DType::bool_ && (w == Which::sum || w == Which::prod)) continue;
      for (const Case& c : cases) {
        CAPTURE(std::string(aj::dtype_name(t)));
        CAPTURE(static_cast<int>(w));
        CAPTURE(c.shape.str());
        const Array x = random_array(c.shape, t, 6, true);
        const bool reassociates = aj::is_float(t) && (w == Which::sum || w == Which::prod);
        check([&] { return std::vector<Array>{reduce(w, x, c.axes)}; }, [&](std::size_t) { return !reassociates; });
      }
    }
  }
  const Array x = random_array({1001, 300}, DType::f64, 7, false);
  check([&] {
    const Array e = aj::exp(x - aj::max(x, 1, true));
    const Array c = x - aj::mean(x, 1, true);
    const Array stepped = aj::slice(x, {aj::Slice(std::nullopt, std::nullopt, -3), aj::Slice(1, 300, 2)});
    return std::vector<Array>{e / aj::sum(e, 1, true), c / aj::sqrt(aj::mean(c * c, 1, true) + 1e-5),
                              aj::max(stepped, 1), aj::sum(x.transpose(), 1)};
  }, [](std::size_t i) { return i == 2; });
}

}  // TEST_SUITE

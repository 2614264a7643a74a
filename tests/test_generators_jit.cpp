// Generators in compiled kernels (iota, linspace, eye): the host JIT inlines
// semantics.hpp's generate_value from the bitcode, so the loop is index
// arithmetic the vectorizer widens instead of a helper call per element.
// Every dtype, integral and fractional steps, values that saturate or wrap
// when converted, each alone and fused with arithmetic: bit for bit what the
// reference interpreter and the kernel interpreter give, on 1 and 3 threads.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/jit.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/api/executor.hpp"

namespace {

using aj::Array;
using aj::DType;

// The bytes of a (as f64 for floats, i64 for integers, bool as 0/1).
std::vector<double> bits_of(const Array& a) {
  std::vector<double> out;
  if (a.dtype() == DType::bool_ || a.dtype() == DType::i32 || a.dtype() == DType::i64) {
    for (std::int64_t v : a.to_vector<std::int64_t>()) {
      double d;
      std::memcpy(&d, &v, sizeof d);
      out.push_back(d);
    }
  } else {
    out = a.to_vector<double>();  // f16, bf16 and f32 widen exactly
  }
  return out;
}

bool same(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
}

void check(const std::string& what, const std::function<Array()>& make) {
  std::vector<double> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = bits_of(make());
  }
  for (bool jit : {true, false}) {
    aj::jit::set_enabled(jit);
    for (int threads : {1, 3}) {
      aj::jit::set_num_threads(threads);
      INFO(what << (jit ? " (JIT" : " (kernel interpreter") << ", " << threads << " threads)");
      CHECK(same(bits_of(make()), want));
    }
  }
  aj::jit::set_enabled(true);
  aj::jit::set_num_threads(0);
}

}  // namespace

TEST_CASE("generators in kernels: iota, linspace and eye of every dtype, bit for bit the reference interpreter's") {
  const DType dtypes[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64, DType::f16, DType::bf16};
  struct Range {
    double start, stop, step;
  };
  // Integral steps; fractional ones (integers truncate each value); values
  // past i32's range (saturate) and f16's (infinity); a negative step.
  const Range ranges[] = {{0, 1000, 1}, {-7, 993, 3}, {0.25, 300.25, 0.75}, {-3.5, 250, 1.25},
                          {2147483000.0, 2147484700.0, 1.5}, {100, -900, -2}, {65000, 66000, 7}};
  for (DType t : dtypes) {
    const std::string name = aj::dtype_name(t);
    for (const Range& r : ranges) {
      if (t == DType::bool_) break;  // (arange makes no bool arrays)
      const std::string what = "arange(" + std::to_string(r.start) + ", " + std::to_string(r.stop) + ", " +
                               std::to_string(r.step) + ") " + name;
      check(what, [&] { return aj::arange(r.start, r.stop, r.step, t); });
      check(what + " fused", [&] {
        const Array a = aj::arange(r.start, r.stop, r.step, t);
        return (a == a) && (aj::arange(r.start, r.stop, r.step, DType::f64) > 17.0);
      });
    }
    for (std::int64_t num : {1, 2, 7, 1001}) {
      if (t == DType::bool_) break;  // (nor linspace)
      check("linspace " + std::to_string(num) + " " + name, [&] { return aj::linspace(-3.25, 1e3 + 0.1, num, t); });
    }
    check("eye 37 x 53, k = 5, " + name, [&] { return aj::eye(37, 53, 5, t); });
    check("eye 64, k = -9, " + name, [&] { return aj::eye(64, std::nullopt, -9, t); });
  }
  // A mask from arange fused into a where: the boundary idiom.
  const Array u = aj::random::uniform({4099});
  u.eval();
  check("where(arange == 0 or arange == n - 1)", [&] {
    const Array i = aj::arange(4099);
    return aj::where((i == 0) || (i == 4098), 0.0f, u * 0.5f);
  });
  check("arange(n) as f32 times u", [&] { return aj::arange(4099, DType::f32) * u; });
}

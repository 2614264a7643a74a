// Elementwise epilogues of a matmul (bias, scale, activation) run on each
// block of the product as it is computed (exec::Backend::run_library_then,
// host_library.cpp): the blocks cpu::matmul reports, and whole programs
// against the reference interpreter on 1 to 8 threads.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/host_matmul.hpp"
#include "core/api/executor.hpp"
#include "tests/compare_arrays.hpp"

namespace {

using aj::Array;
using aj::DType;

// Small integers as floats: every product and sum is exact in f32, so the
// BLAS and the reference agree bit for bit whatever their order.
Array small_ints(aj::Shape shape, DType t, unsigned seed) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::mt19937 rng(seed);
  for (auto& x : v) x = static_cast<double>(static_cast<int>(rng() % 5) - 2);
  return aj::from_vector(v, shape).astype(t).eval();
}

// The arrays of `make` by the reference and on 1, 2, 3, 4, 8 threads: equal
// (within `tol` relative when tol > 0).
void check(const std::function<std::vector<Array>()>& make, double tol = 0) {
  std::vector<Array> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = make();
    aj::eval(want);
  }
  for (int threads : {1, 2, 3, 4, 8}) {
    CAPTURE(threads);
    aj::jit::set_num_threads(threads);
    std::vector<Array> got = make();
    aj::eval(got);
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      ajtest::check_matches(got[i], want[i], tol, false);
    }
  }
  aj::jit::set_num_threads(0);
}

}  // namespace

TEST_SUITE("matmul_epilogue") {

// What BlocksDone sees: how often each element was reported, and whether
// it held its final value then.
template <class T> struct Seen {
  const T* c = nullptr;
  std::vector<T> want;
  std::vector<int> count;
  int stale = 0;
  static void fn(const void* ctx, std::int64_t lo, std::int64_t hi) {
    auto* s = const_cast<Seen*>(static_cast<const Seen*>(ctx));
    for (std::int64_t i = lo; i < hi; ++i) {
      const auto u = static_cast<std::size_t>(i);
      __atomic_add_fetch(&s->count[u], 1, __ATOMIC_RELAXED);
      if (s->c[u] != s->want[u]) __atomic_add_fetch(&s->stale, 1, __ATOMIC_RELAXED);
    }
  }
};

template <class T> void check_blocks(std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n, int threads) {
  std::mt19937 rng(static_cast<unsigned>(m * 31 + n));
  std::vector<T> a(static_cast<std::size_t>(batches * m * k)), b(static_cast<std::size_t>(batches * k * n));
  for (auto& v : a) v = static_cast<T>(static_cast<int>(rng() % 5) - 2);
  for (auto& v : b) v = static_cast<T>(static_cast<int>(rng() % 5) - 2);
  Seen<T> seen;
  std::vector<T> c(static_cast<std::size_t>(batches * m * n), T(-7));
  seen.c = c.data();
  seen.want.assign(c.size(), T(0));
  seen.count.assign(c.size(), 0);
  for (std::int64_t q = 0; q < batches; ++q) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (std::int64_t l = 0; l < k; ++l) acc += a[static_cast<std::size_t>((q * m + i) * k + l)] * b[static_cast<std::size_t>((q * k + l) * n + j)];
        seen.want[static_cast<std::size_t>((q * m + i) * n + j)] = acc;
      }
    }
  }
  const aj::cpu::StridedOperand av{a.data(), 0, {m * k, k, 1}}, bv{b.data(), 0, {k * n, n, 1}};
  aj::cpu::matmul(aj::dtype_of<T>, {batches, m, n}, k, av, bv, c.data(), threads, {&Seen<T>::fn, &seen});
  CHECK(seen.stale == 0);
  std::size_t not_once = 0;
  for (int v : seen.count) not_once += v != 1;
  CHECK(not_once == 0);
}

TEST_CASE("cpu::matmul reports every element of C once, after it is final, block by block") {
  for (int threads : {1, 2, 4}) {
    CAPTURE(threads);
    check_blocks<float>(1, 700, 200, 300, threads);   // tall: split by rows
    check_blocks<double>(1, 40, 500, 3000, threads);  // wide: split by columns
    check_blocks<float>(6, 50, 30, 70, threads);      // batches
    check_blocks<std::int32_t>(1, 300, 100, 257, threads);
    check_blocks<float>(2, 33, 0, 40, threads);       // K = 0: zeros
  }
}

TEST_CASE("bias, scale and activation epilogues of a matmul match the reference on every thread count") {
  for (DType t : {DType::f32, DType::f64}) {
    CAPTURE(std::string(aj::dtype_name(t)));
    const Array x = small_ints({300, 200}, t, 3), w = small_ints({200, 260}, t, 4), b = small_ints({260}, t, 5);
    const Array wide = small_ints({20, 200}, t, 6), big = small_ints({200, 3000}, t, 7);
    const Array bx = small_ints({3, 40, 64}, t, 8), bw = small_ints({64, 50}, t, 9);
    check([&] {
      return std::vector<Array>{aj::maximum(aj::matmul(x, w) + b, 0.0),     // relu(x @ w + b)
                                aj::matmul(x, w) * 0.5 - 1.0,              // a scale
                                aj::maximum(aj::matmul(wide, big) + 1, 0),  // wide: split by columns
                                aj::matmul(bx, bw) * 2 + 1,                // batched, folded into rows
                                aj::matmul(x.T().T(), w.T().T()) + aj::matmul(x, w)};
    });
    check([&] {
      return std::vector<Array>{aj::tanh(aj::matmul(x, w) * 0.01 + b), aj::sigmoid(aj::matmul(wide, big) * 0.01)};
    }, 1e-6);
  }
  // Integers wrap the same in blocks.
  const Array xi = small_ints({130, 70}, DType::i32, 10) * 1000003, wi = small_ints({70, 90}, DType::i32, 11) * 7919;
  check([&] { return std::vector<Array>{aj::maximum(aj::matmul(xi, wi) + 5, 0), aj::matmul(xi, wi) * 3}; });
}

TEST_CASE("a matmul epilogue writes the product's buffer in place, and never an operand it overwrites") {
  const Array x = small_ints({256, 128}, DType::f32, 12), w = small_ints({128, 256}, DType::f32, 13),
              b = small_ints({256}, DType::f32, 14);
  aj::jit::set_num_threads(2);
  Array y = aj::maximum(aj::matmul(x, w) + b, 0.0f);
  aj::reset_stats();
  y.eval();
  const aj::Stats s = aj::stats();
  CHECK(s.kernels_launched == 2);  // the matmul and its epilogue
  CHECK(s.inplace_reuses == 1);    // into the product's buffer
  CHECK(s.system_allocs + s.pool_hits == 1);
  // relu(p + v) with p = v @ v held and v dead: the epilogue takes v's
  // buffer over, which later blocks of the product still read as an
  // operand: it must run after the product, not block by block.
  std::vector<Array> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    Array v = small_ints({300, 300}, DType::f32, 15) * 1.0f;
    Array p = aj::matmul(v, v);
    want = {aj::maximum(p + v, 0.0f), p};
    aj::eval(want);
  }
  for (int threads : {1, 2, 4}) {
    CAPTURE(threads);
    aj::jit::set_num_threads(threads);
    Array r, p;
    {
      Array v = small_ints({300, 300}, DType::f32, 15) * 1.0f;
      v.eval();
      p = aj::matmul(v, v);
      r = aj::maximum(p + v, 0.0f);
    }
    aj::reset_stats();
    aj::eval({r, p});
    CHECK(aj::stats().inplace_reuses == 1);  // into v's buffer
    CHECK(r.to_vector<float>() == want[0].to_vector<float>());
    CHECK(p.to_vector<float>() == want[1].to_vector<float>());
  }
  aj::jit::set_num_threads(0);
}

}  // TEST_SUITE

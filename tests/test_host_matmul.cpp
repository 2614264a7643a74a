// aj::cpu::matmul, the host library step, called directly on strided memory:
// every dtype, row- and column-major, sliced and broadcast operands, empty and
// degenerate extents, 1 and 2 threads, against a naive triple loop (double for
// floats, wrapping unsigned arithmetic for integers, OR of ANDs for bool), and
// integers against the reference interpreter's matmul.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/host_matmul.hpp"

namespace {

using aj::DType;
using aj::cpu::StridedOperand;
using I64 = std::int64_t;

// bool stored as a byte (as arrays hold it).
template <class T> using Elem = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

template <class T> Elem<T> draw(std::mt19937_64& rng) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<std::uint8_t>(rng() % 3 == 0);  // sparse enough that some outputs stay false
  } else if constexpr (std::is_integral_v<T>) {
    // Full-range values half the time, so products and sums wrap.
    if (rng() % 2) return static_cast<T>(rng());
    return static_cast<T>(static_cast<I64>(rng() % 201) - 100);
  } else {
    return static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(rng));
  }
}

// One operand of logical shape [batch..., rows, cols] laid out in a larger
// buffer of random values: a random offset, its matrix row- or column-major,
// padded (sliced) leading dimension or a stride-2 inner axis, and each batch
// axis either stored or broadcast (stride 0).
template <class T> struct Operand {
  std::vector<Elem<T>> buf;
  StridedOperand view;
  std::string layout;
};

template <class T>
Operand<T> make_operand(const std::vector<I64>& batch, I64 rows, I64 cols, std::mt19937_64& rng) {
  Operand<T> op;
  const int kind = static_cast<int>(rng() % 5);  // row-major, transposed, sliced, sliced transposed, strided
  const bool transposed = kind == 1 || kind == 3;
  const I64 inner_step = kind == 4 ? 2 : 1;
  const I64 pad = kind == 2 || kind == 3 ? 1 + static_cast<I64>(rng() % 4) : 0;
  I64 rs, cs, span;
  if (transposed) {
    rs = inner_step;
    cs = rows * inner_step + pad;
    span = cols * cs;
  } else {
    cs = inner_step;
    rs = cols * inner_step + pad;
    span = rows * rs;
  }
  std::vector<I64> strides(batch.size() + 2);
  strides[batch.size()] = rs;
  strides[batch.size() + 1] = cs;
  op.layout = std::string(transposed ? "col" : "row") + (pad ? "+pad" : "") + (inner_step > 1 ? "+step2" : "");
  I64 size = std::max<I64>(span, 1);
  for (std::size_t i = batch.size(); i-- > 0;) {
    const bool broadcast = rng() % 3 == 0;
    strides[i] = broadcast ? 0 : size;
    if (!broadcast) size *= batch[i];
    op.layout += broadcast ? " b0" : " b";
  }
  op.view.offset = static_cast<I64>(rng() % 7);
  op.buf.resize(static_cast<std::size_t>(size + op.view.offset + 8));
  for (auto& x : op.buf) x = draw<T>(rng);
  op.view.data = op.buf.data();
  op.view.strides = strides;
  return op;
}

// Integers sum in the unsigned type of their width (wrapping), the rest in double.
template <class T> struct Accumulator { using type = double; };
template <> struct Accumulator<std::int32_t> { using type = std::uint32_t; };
template <> struct Accumulator<std::int64_t> { using type = std::uint64_t; };

// C = A @ B read through the strides, the obvious way.
template <class T>
std::vector<double> naive(const std::vector<I64>& batch, I64 M, I64 N, I64 K, const Operand<T>& a, const Operand<T>& b,
                          std::vector<double>* magnitude) {
  using U = typename Accumulator<T>::type;
  const std::size_t r = batch.size();
  const std::vector<I64>&sa = a.view.strides, &sb = b.view.strides;
  I64 batches = 1;
  for (I64 e : batch) batches *= e;
  std::vector<double> out;
  for (I64 bi = 0; bi < batches; ++bi) {
    I64 f = bi, ao = a.view.offset, bo = b.view.offset;
    for (std::size_t i = r; i-- > 0;) {
      ao += f % batch[i] * sa[i];
      bo += f % batch[i] * sb[i];
      f /= batch[i];
    }
    for (I64 m = 0; m < M; ++m) {
      for (I64 n = 0; n < N; ++n) {
        U acc = 0;
        double mag = 0;
        for (I64 k = 0; k < K; ++k) {
          const auto x = a.buf[static_cast<std::size_t>(ao + m * sa[r] + k * sa[r + 1])];
          const auto y = b.buf[static_cast<std::size_t>(bo + k * sb[r] + n * sb[r + 1])];
          if constexpr (std::is_same_v<T, bool>) {
            acc = acc || (x && y);
          } else {
            acc += static_cast<U>(x) * static_cast<U>(y);
            mag += std::abs(static_cast<double>(x) * static_cast<double>(y));
          }
        }
        out.push_back(static_cast<double>(static_cast<Elem<T>>(acc)));
        magnitude->push_back(mag);
      }
    }
  }
  return out;
}

template <class T>
std::string check_case(const std::vector<I64>& batch, I64 M, I64 N, I64 K, int threads, std::mt19937_64& rng) {
  const Operand<T> a = make_operand<T>(batch, M, K, rng), b = make_operand<T>(batch, K, N, rng);
  std::vector<I64> out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  I64 numel = M * N;
  for (I64 e : batch) numel *= e;
  std::vector<Elem<T>> c(static_cast<std::size_t>(numel) + 1);
  for (auto& x : c) x = draw<T>(rng);  // every element must be overwritten
  const Elem<T> sentinel = c.back();
  aj::cpu::matmul(aj::dtype_of<T>, out_shape, K, a.view, b.view, c.data(), threads);
  std::vector<double> mag;
  const std::vector<double> want = naive(batch, M, N, K, a, b, &mag);
  std::string shape = "[";
  for (I64 e : out_shape) shape += std::to_string(e) + ",";
  shape += "] K=" + std::to_string(K) + " A " + a.layout + ", B " + b.layout + ", threads " + std::to_string(threads);
  if (c.back() != sentinel) return "wrote past the end: " + shape;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double got = static_cast<double>(c[i]);
    bool ok;
    if constexpr (std::is_floating_point_v<T>) {
      ok = std::abs(got - want[i]) <= 4 * static_cast<double>(K + 1) * std::numeric_limits<T>::epsilon() * mag[i] + 1e-30;
    } else {
      ok = got == want[i];
    }
    if (!ok) return "element " + std::to_string(i) + ": got " + std::to_string(got) + ", want " + std::to_string(want[i]) + " for " + shape;
  }
  return "";
}

template <class T> void random_cases(int count, unsigned seed) {
  std::mt19937_64 rng(seed);
  const I64 extents[] = {0, 1, 1, 2, 3, 5, 8, 17, 33};
  for (int i = 0; i < count; ++i) {
    std::vector<I64> batch(rng() % 3);  // rank 2, 3 or 4
    for (auto& e : batch) e = static_cast<I64>(1 + rng() % 3);
    const I64 M = extents[rng() % 9], N = extents[rng() % 9], K = extents[rng() % 9];
    const int threads = 1 + static_cast<int>(rng() % 2);
    const std::string err = check_case<T>(batch, M, N, K, threads, rng);
    CHECK_MESSAGE(err.empty(), aj::dtype_name(aj::dtype_of<T>), ": ", err);
  }
}

// Shapes that reach each path: products large enough to be split over threads
// (by rows, by columns: a float block needs 2^23 multiply-adds), batches shared
// out whole, batch axes folded into M, K and N larger than the integer
// kernel's tiles.
template <class T> void large_cases(unsigned seed) {
  std::mt19937_64 rng(seed);
  struct Case { std::vector<I64> batch; I64 M, N, K; };
  const Case cases[] = {{{}, 70, 300, 200}, {{2}, 300, 20, 64}, {{}, 260, 70, 1000}, {{}, 30, 600, 1000}, {{8}, 40, 40, 40}, {{3, 2}, 33, 65, 130}, {{3}, 1, 513, 257}, {{}, 129, 1, 300}};
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      const int reps = c.M * c.N * c.K > 10000000 ? 1 : 3;  // the naive loop is slow
      for (int rep = 0; rep < reps; ++rep) {  // random layouts each time
        const std::string err = check_case<T>(c.batch, c.M, c.N, c.K, threads, rng);
        CHECK_MESSAGE(err.empty(), aj::dtype_name(aj::dtype_of<T>), ": ", err);
      }
    }
  }
}

}  // namespace

TEST_CASE("host matmul: random shapes and layouts against a naive loop, every dtype, 1 and 2 threads") {
  random_cases<bool>(300, 1);
  random_cases<std::int32_t>(300, 2);
  random_cases<std::int64_t>(300, 3);
  random_cases<float>(300, 4);
  random_cases<double>(300, 5);
}

TEST_CASE("host matmul: products split over threads, batches and tiles") {
  large_cases<bool>(11);
  large_cases<std::int32_t>(12);
  large_cases<std::int64_t>(13);
  large_cases<float>(14);
  large_cases<double>(15);
}

TEST_CASE("host matmul: batch axes B is broadcast along fold into one product (A contiguous)") {
  // x[2, 3, 5, 4] @ W[4, 6]: W's batch strides are 0 and x's rows run on
  // through the batches, so the step sees one [30, 4] @ [4, 6] product.
  std::mt19937_64 rng(21);
  std::vector<double> x(2 * 3 * 5 * 4), w(4 * 6);
  for (auto& v : x) v = draw<double>(rng);
  for (auto& v : w) v = draw<double>(rng);
  std::vector<double> c(2 * 3 * 5 * 6, -7.0);
  aj::cpu::matmul(DType::f64, {2, 3, 5, 6}, 4, {x.data(), 0, {60, 20, 4, 1}}, {w.data(), 0, {0, 0, 6, 1}}, c.data(), 2);
  for (int r = 0; r < 30; ++r) {
    for (int n = 0; n < 6; ++n) {
      double want = 0;
      for (int k = 0; k < 4; ++k) want += x[r * 4 + k] * w[k * 6 + n];
      CHECK(c[r * 6 + n] == doctest::Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("host matmul: K = 0 writes zeros, an empty output writes nothing") {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(6, 5.0f);
  aj::cpu::matmul(DType::f32, {2, 3}, 0, {a.data(), 0, {0, 1}}, {b.data(), 0, {3, 1}}, c.data(), 1);
  for (float v : c) CHECK(v == 0.0f);
  std::vector<std::int32_t> ci(3, 9);
  aj::cpu::matmul(DType::i32, {0, 3}, 2, {a.data(), 0, {2, 1}}, {b.data(), 0, {3, 1}}, ci.data(), 1);
  CHECK(ci == std::vector<std::int32_t>{9, 9, 9});
}

TEST_CASE("host matmul: integers give exactly the reference interpreter's results") {
  std::mt19937_64 rng(31);
  for (int i = 0; i < 20; ++i) {
    const I64 B = 1 + static_cast<I64>(rng() % 3), M = 1 + static_cast<I64>(rng() % 9),
              N = 1 + static_cast<I64>(rng() % 9), K = 1 + static_cast<I64>(rng() % 40);
    auto one = [&]<class T>(T) {
      std::vector<T> x(static_cast<std::size_t>(B * M * K)), y(static_cast<std::size_t>(B * K * N));
      for (auto& v : x) v = draw<T>(rng);
      for (auto& v : y) v = draw<T>(rng);
      const std::vector<T> want =
          aj::matmul(aj::from_vector(x, aj::Shape{B, M, K}), aj::from_vector(y, aj::Shape{B, K, N})).template to_vector<T>();
      std::vector<T> got(static_cast<std::size_t>(B * M * N));
      aj::cpu::matmul(aj::dtype_of<T>, {B, M, N}, K, {x.data(), 0, {M * K, K, 1}}, {y.data(), 0, {K * N, N, 1}},
                      got.data(), 2);
      CHECK(got == want);
    };
    one(std::int32_t{});
    one(std::int64_t{});
  }
}

TEST_CASE("host matmul: strides that do not match the output's rank are an internal error") {
  std::vector<float> a(4), b(4), c(4);
  try {
    aj::cpu::matmul(DType::f32, {2, 2}, 2, {a.data(), 0, {2, 1, 1}}, {b.data(), 0, {2, 1}}, c.data(), 1);
    FAIL("no error");
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::internal);
    CHECK(std::string(e.what()).find("host matmul") != std::string::npos);
  }
}

TEST_CASE("host matmul: names the BLAS it runs on") {
  CHECK(std::string(aj::cpu::matmul_library()).find("OpenBLAS") != std::string::npos);
}

// cuBLAS for the device matmul (jit/cuda/cuda_blas.hpp), without a GPU:
//  - plan_gemm maps row-major, transposed, sliced and broadcast operands to
//    cuBLAS's column-major arguments, and declines what it cannot take;
//  - under the fake driver, a host implementation of the cuBLAS entry points
//    (the column-major definition, written from cuBLAS's documentation) runs
//    the matmuls of device arrays: results equal the host's, each matmul
//    cuBLAS can take is one call, the others run the generated kernel.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "jit/cuda/cuda_blas.hpp"
#include "tests/cuda_fake_driver.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::Device;
using aj::DType;
using aj::cuda::Gemm;
using aj::cuda::plan_gemm;

Gemm plan(DType t, std::vector<std::int64_t> shape, std::int64_t k, std::vector<std::int64_t> as,
          std::vector<std::int64_t> bs, std::int64_t ao = 0, std::int64_t bo = 0) {
  auto g = plan_gemm(t, shape, k, 0x1000, as, ao, 0x100000, bs, bo, 0x2000000);
  REQUIRE(g.has_value());
  return *g;
}

// ---- a host cuBLAS: device memory is host memory under the fake driver ----------------
int g_calls = 0;

// Widened to double exactly (f16/bf16 through float), and back with one rounding.
template <class T>
double widen(T v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return static_cast<double>(static_cast<float>(v));
}
template <class T>
T narrow(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return static_cast<T>(static_cast<float>(v));
}

// cuBLAS's definition: C = alpha op(A) op(B) + beta C, column-major, op(X) = X or X^T.
template <class T>
void host_gemm(int ta, int tb, int m, int n, int k, double alpha, const T* A, int lda, long long sa, const T* B,
               int ldb, long long sb, double beta, T* C, int ldc, long long sc, int batch) {
  ++g_calls;
  REQUIRE(lda >= std::max(1, ta == aj::cuda::CUBLAS_OP_N ? m : k));
  REQUIRE(ldb >= std::max(1, tb == aj::cuda::CUBLAS_OP_N ? k : n));
  REQUIRE(ldc >= std::max(1, m));
  for (int b = 0; b < batch; ++b) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int p = 0; p < k; ++p) {
          const T a = ta == aj::cuda::CUBLAS_OP_N ? A[b * sa + i + static_cast<long long>(p) * lda]
                                                   : A[b * sa + p + static_cast<long long>(i) * lda];
          const T bb = tb == aj::cuda::CUBLAS_OP_N ? B[b * sb + p + static_cast<long long>(j) * ldb]
                                                    : B[b * sb + j + static_cast<long long>(p) * ldb];
          acc += widen(a) * widen(bb);
        }
        T& out = C[b * sc + i + static_cast<long long>(j) * ldc];
        out = narrow<T>(alpha * acc + (beta == 0 ? 0.0 : beta * widen(out)));
      }
    }
  }
}

int f_create(aj::cuda::cublasHandle_t* h) {
  static int token;
  *h = reinterpret_cast<aj::cuda::cublasHandle_t>(&token);
  return 0;
}
int f_destroy(aj::cuda::cublasHandle_t) { return 0; }
int f_set_stream(aj::cuda::cublasHandle_t, aj::cuda::CUstream) { return 0; }
int f_math(aj::cuda::cublasHandle_t, int mode) { return mode == aj::cuda::CUBLAS_DEFAULT_MATH ? 0 : 7; }
const char* f_status(int) { return "FAKE_STATUS"; }
int f_sgemm(aj::cuda::cublasHandle_t, int ta, int tb, int m, int n, int k, const float* al, const float* A, int lda,
            long long sa, const float* B, int ldb, long long sb, const float* be, float* C, int ldc, long long sc,
            int batch) {
  host_gemm<float>(ta, tb, m, n, k, *al, A, lda, sa, B, ldb, sb, *be, C, ldc, sc, batch);
  return 0;
}
int f_dgemm(aj::cuda::cublasHandle_t, int ta, int tb, int m, int n, int k, const double* al, const double* A,
            int lda, long long sa, const double* B, int ldb, long long sb, const double* be, double* C, int ldc,
            long long sc, int batch) {
  host_gemm<double>(ta, tb, m, n, k, *al, A, lda, sa, B, ldb, sb, *be, C, ldc, sc, batch);
  return 0;
}
int f_gemm_ex(aj::cuda::cublasHandle_t, int ta, int tb, int m, int n, int k, const void* al, const void* A, int at,
              int lda, long long sa, const void* B, int bt, int ldb, long long sb, const void* be, void* C, int ct,
              int ldc, long long sc, int batch, int compute, int algo) {
  REQUIRE(compute == aj::cuda::CUBLAS_COMPUTE_32F);
  REQUIRE(algo == aj::cuda::CUBLAS_GEMM_DEFAULT);
  REQUIRE(at == bt);
  REQUIRE(at == ct);
  const float alpha = *static_cast<const float*>(al), beta = *static_cast<const float*>(be);
  if (at == aj::cuda::CUDA_R_16F) {
    host_gemm<aj::f16>(ta, tb, m, n, k, alpha, static_cast<const aj::f16*>(A), lda, sa, static_cast<const aj::f16*>(B),
                       ldb, sb, beta, static_cast<aj::f16*>(C), ldc, sc, batch);
  } else {
    REQUIRE(at == aj::cuda::CUDA_R_16BF);
    host_gemm<aj::bf16>(ta, tb, m, n, k, alpha, static_cast<const aj::bf16*>(A), lda, sa,
                        static_cast<const aj::bf16*>(B), ldb, sb, beta, static_cast<aj::bf16*>(C), ldc, sc, batch);
  }
  return 0;
}

aj::cuda::BlasApi fake_blas() {
  aj::cuda::BlasApi a{};
  a.path = "fake";
  a.cublasCreate_v2 = f_create;
  a.cublasDestroy_v2 = f_destroy;
  a.cublasSetStream_v2 = f_set_stream;
  a.cublasSetMathMode = f_math;
  a.cublasGetStatusString = f_status;
  a.cublasSgemmStridedBatched = f_sgemm;
  a.cublasDgemmStridedBatched = f_dgemm;
  a.cublasGemmStridedBatchedEx = f_gemm_ex;
  return a;
}

Array random_matrix(DType t, aj::Shape s, std::uint64_t seed) {
  const auto v = ajtest::random_magnitudes<double>(static_cast<std::size_t>(s.numel()), seed, 0.1, 2.0);
  return aj::from_vector<double>(v, s).astype(t).eval();
}

}  // namespace

TEST_CASE("cuda blas: plan_gemm maps row-major, transposed, sliced and broadcast operands to cuBLAS's arguments") {
  using aj::cuda::CUBLAS_OP_N;
  using aj::cuda::CUBLAS_OP_T;
  // C[4, 5] = A[4, 3] B[3, 5], both row-major: C^T = B^T A^T, no transposes.
  Gemm g = plan(DType::f32, {4, 5}, 3, {3, 1}, {5, 1});
  CHECK(g.transa == CUBLAS_OP_N);
  CHECK(g.transb == CUBLAS_OP_N);
  CHECK(g.m == 5);
  CHECK(g.n == 4);
  CHECK(g.k == 3);
  CHECK(g.lda == 5);  // B's row stride
  CHECK(g.ldb == 3);  // A's row stride
  CHECK(g.ldc == 5);
  CHECK(g.a == 0x100000);  // A' is B
  CHECK(g.b == 0x1000);
  CHECK(g.batch == 1);
  // A a transposed view (m contiguous), B a column slice of a wider matrix
  // at an offset: A is used transposed, B keeps its row stride as lda.
  g = plan(DType::f64, {4, 5}, 3, {1, 4}, {9, 1}, 2, 7);
  CHECK(g.transb == CUBLAS_OP_T);
  CHECK(g.ldb == 4);
  CHECK(g.transa == CUBLAS_OP_N);
  CHECK(g.lda == 9);
  CHECK(g.a == 0x100000 + 7 * 8);
  CHECK(g.b == 0x1000 + 2 * 8);
  // B transposed (k contiguous).
  g = plan(DType::f16, {4, 5}, 3, {3, 1}, {1, 3});
  CHECK(g.transa == CUBLAS_OP_T);
  CHECK(g.lda == 3);
  // Batches: contiguous [2, 3] batch axes collapse to one stride; a
  // broadcast operand has stride 0.
  g = plan(DType::f32, {2, 3, 4, 5}, 6, {72, 24, 6, 1}, {0, 0, 5, 1});
  CHECK(g.batch == 6);
  CHECK(g.stride_b == 24);
  CHECK(g.stride_a == 0);
  CHECK(g.stride_c == 20);
  // A broadcast between batch axes: [3, 1] x [1, 4] batches walk as two
  // groups, a loop of 3 strided-batched calls of 4.
  g = plan(DType::f32, {3, 4, 7, 11}, 9, {63, 0, 9, 1}, {0, 99, 11, 1});
  CHECK(g.batch == 4);
  CHECK(g.outer == 3);
  CHECK(g.stride_a == 99);  // B's
  CHECK(g.stride_b == 0);
  CHECK(g.stride_c == 77);
  CHECK(g.outer_a == 0);
  CHECK(g.outer_b == 63 * 4);
  CHECK(g.outer_c == 4 * 77 * 4);
  // Extent-1 axes and vectors take any stride.
  g = plan(DType::f32, {1, 1, 5}, 3, {99, 77, 1}, {0, 5, 1});
  CHECK(g.n == 1);
  CHECK(g.ldb >= 3);
  // Declined: integers, K = 0, empty results, a matrix with no unit stride,
  // batch axes that do not walk as one, negative strides.
  const std::vector<std::int64_t> rm = {3, 1}, bm = {5, 1};
  CHECK_FALSE(plan_gemm(DType::i32, {4, 5}, 3, 1, rm, 0, 2, bm, 0, 3));
  CHECK_FALSE(plan_gemm(DType::f32, {4, 5}, 0, 1, {0, 1}, 0, 2, bm, 0, 3));
  CHECK_FALSE(plan_gemm(DType::f32, {0, 5}, 3, 1, rm, 0, 2, bm, 0, 3));
  CHECK_FALSE(plan_gemm(DType::f32, {4, 5}, 3, 1, {6, 2}, 0, 2, bm, 0, 3));
  CHECK_FALSE(plan_gemm(DType::f32, {2, 3, 2, 4, 5}, 6, 1, {100, 0, 24, 6, 1}, 0, 2, {0, 7, 0, 5, 1}, 0, 3));
  CHECK_FALSE(plan_gemm(DType::f32, {4, 5}, 3, 1, {-3, 1}, 9, 2, bm, 0, 3));
  CHECK_FALSE(plan_gemm(DType::f32, {3, 4, 5}, 3, 1, {-12, 3, 1}, 24, 2, {0, 5, 1}, 0, 3));
}

TEST_CASE("cuda blas: under the fake driver, device matmuls run as cuBLAS calls where they can and match the host") {
  ajtest::fake_cuda::FakeGpu gpu;
  const aj::cuda::BlasApi api = fake_blas();
  aj::cuda::set_blas_for_testing(aj::cuda::BlasTest::fake, &api);
  CHECK(aj::cuda::blas_api() == &api);
  std::uint64_t seed = 1;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    CAPTURE(aj::dtype_name(t));
    auto r = [&](aj::Shape s) { return random_matrix(t, s, seed++); };
    const std::vector<Array> in = {r({30, 50}), r({50, 27}), r({3, 1, 7, 9}), r({4, 9, 11}), r({2, 3, 5, 4}),
                                   r({4, 6})};
    auto ops = [](const std::vector<Array>& v) {
      return std::vector<std::pair<std::string, Array>>{
          {"30x50 @ 50x27", aj::matmul(v[0], v[1])},
          {"broadcast batches", aj::matmul(v[2], v[3])},
          {"transposed operands", aj::matmul(v[1].T(), v[0].T())},
          {"sliced operands", aj::matmul(aj::slice(v[0], 1, 3, 40), aj::slice(v[1], 0, 3, 40))},
          {"batched @ matrix", aj::matmul(v[4], v[5])},
          {"vector @ matrix", aj::matmul(aj::slice(v[0], 0, 0, 1), v[1])},
      };
    };
    std::vector<Array> dev;
    for (const Array& a : in) dev.push_back(a.to(Device::cuda(0)));
    const int before = g_calls;
    const auto want = ops(in), got = ops(dev);
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(want[k].first);
      CHECK(got[k].second.device() == Device::cuda(0));
      // (to the host first: a cast on the device is a kernel the fake does not run here)
      const auto g = got[k].second.to(Device::cpu()).astype(DType::f64).to_vector<double>();
      const auto w = want[k].second.astype(DType::f64).to_vector<double>();
      REQUIRE(g.size() == w.size());
      // Host and fake both round once per element from a wider sum (f16/bf16:
      // one ulp of the type apart at most); f32/f64 within the sum's rounding.
      const double tol = t == DType::f16 ? 0x1p-9 : t == DType::bf16 ? 0x1p-6 : t == DType::f32 ? 1e-5 : 1e-12;
      for (std::size_t i = 0; i < g.size(); ++i) {
        if (!(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i])))) {
          FAIL_CHECK("element " << i << ": device " << g[i] << ", host " << w[i]);
          break;
        }
      }
    }
    CHECK(g_calls - before == 8);  // one cuBLAS call each, the broadcast batches a loop of 3
  }
  // Integers and K = 0 run the generated kernel: no cuBLAS call. (Without
  // kernel execution the fake leaves their values unchecked here; the
  // emulated tier checks those kernels.)
  const int before = g_calls;
  Array ai = aj::ones({4, 3}, DType::i32).to(Device::cuda(0));
  (void)aj::matmul(ai, aj::ones({3, 2}, DType::i32).to(Device::cuda(0))).eval();
  (void)aj::matmul(aj::zeros({4, 0}).to(Device::cuda(0)), aj::zeros({0, 2}).to(Device::cuda(0))).eval();
  CHECK(g_calls == before);
  aj::cuda::set_blas_for_testing(aj::cuda::BlasTest::off);
  CHECK(aj::cuda::blas_api() == nullptr);
  CHECK(aj::cuda::blas_reason().find("off") != std::string::npos);
}

TEST_CASE("cuda blas: without a GPU, cuBLAS is found or its absence explained, and AJ_CUDA_BLAS=0 is honoured") {
  // The real library may be present (the toolkit) without a GPU; loading it
  // runs nothing on a device.
  const aj::cuda::BlasApi* api = aj::cuda::blas_api();
  const char* off = std::getenv("AJ_CUDA_BLAS");
  if (off && std::string(off) == "0") {
    CHECK(api == nullptr);
    CHECK(aj::cuda::blas_reason().find("AJ_CUDA_BLAS=0") != std::string::npos);
  } else if (api) {
    CHECK(api->path.find("libcublas.so.1") != std::string::npos);
    CHECK(aj::cuda::blas_reason().empty());
  } else {
    CHECK(aj::cuda::blas_reason().find("cuBLAS not found") != std::string::npos);
  }
}

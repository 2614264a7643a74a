// cuBLAS for the device matmul, loaded at run time like the driver.
//
// A matmul step whose operands cuBLAS can take as they lie (each matrix with
// one unit stride, the batch axes one uniform stride per operand, sizes that
// fit its int arguments) runs as one strided-batched GEMM of the vendor's
// library; any other (integer dtypes, K = 0, batches that do not collapse to
// one stride) runs the generated kernel of cuda_library.cpp. Nothing is linked
// at build time and nothing is copied: plan_gemm only describes the call.
//
// Precision: f32 runs without TF32 (cuBLAS's default math mode: full f32
// products, as PyTorch's default), f64 in f64, f16/bf16 with f32 accumulation
// and one rounding at the store (as the generated kernel and the host).
// cuBLAS fuses multiply-adds and orders the k sum its own way: results agree
// with the host within rounding, not bit for bit.
//
// AJ_CUDA_BLAS=0 turns it off (the generated kernel runs every matmul).
// Where libcublas is missing, blas_api() is null and blas_reason() says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "jit/cuda/cuda_api.hpp"

namespace aj::cuda {

using cublasHandle_t = struct cublasContext*;
using cublasStatus_t = int;
inline constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
inline constexpr int CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14;
inline constexpr int CUBLAS_COMPUTE_32F = 68;
inline constexpr int CUBLAS_GEMM_DEFAULT = -1;
inline constexpr int CUBLAS_DEFAULT_MATH = 0;

// The entry points used, by their ABI names (cublas_api.h, CUDA 13.0).
struct BlasApi {
  std::string path;
  cublasStatus_t (*cublasCreate_v2)(cublasHandle_t*);
  cublasStatus_t (*cublasDestroy_v2)(cublasHandle_t);
  cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t, CUstream);
  cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int);
  const char* (*cublasGetStatusString)(cublasStatus_t);
  cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const float*, const float*,
                                              int, long long, const float*, int, long long, const float*, float*,
                                              int, long long, int);
  cublasStatus_t (*cublasDgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const double*,
                                              const double*, int, long long, const double*, int, long long,
                                              const double*, double*, int, long long, int);
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int, const void*, const void*,
                                               int, int, long long, const void*, int, int, long long, const void*,
                                               void*, int, int, long long, int, int, int);
};

// Loaded on first use; null when AJ_CUDA_BLAS=0 or libcublas is missing.
const BlasApi* blas_api();
std::string blas_reason();  // "" when loaded, else why not
// Tests without a GPU: `off` (the fake driver's default: every matmul runs
// the generated kernel), `fake` (a host implementation of these entry
// points), `real` (loaded from libcublas, the default).
enum class BlasTest { real, off, fake };
void set_blas_for_testing(BlasTest mode, const BlasApi* fake = nullptr);

// One column-major strided-batched GEMM, C' = op(A') op(B') in cuBLAS's terms
// (the row-major product C = A B is C^T = B^T A^T: A' is our B, B' our A).
struct Gemm {
  DType dtype = DType::f32;
  int transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0, batch = 1;
  std::uint64_t a = 0, b = 0, c = 0;  // device addresses of A', B', C' (offsets applied)
  // Batch axes that walk as two groups (a broadcast in the middle): `outer`
  // calls, each `outer_*` bytes further on.
  std::int64_t outer = 1, outer_a = 0, outer_b = 0, outer_c = 0;
};

// The GEMM computing C[batch..., m, n] (contiguous at `c`) = A[..., m, k] @ B[..., k, n]
// (element strides per axis, element offsets, at device addresses `a_ptr`,
// `b_ptr`), or nullopt where cuBLAS cannot take the operands as they lie.
std::optional<Gemm> plan_gemm(DType t, const std::vector<std::int64_t>& shape, std::int64_t k,
                              std::uint64_t a_ptr, const std::vector<std::int64_t>& a_strides, std::int64_t a_offset,
                              std::uint64_t b_ptr, const std::vector<std::int64_t>& b_strides, std::int64_t b_offset,
                              std::uint64_t c_ptr);

// Enqueue `g` on `stream` of device `device` (a cuBLAS handle per device and
// stream, made on first use). Throws aj::Error (runtime) naming the status.
void run_gemm(const Gemm& g, int device, CUstream stream);

}  // namespace aj::cuda

// Host matmul as a library step: no graph nodes, just strided memory in and a
// contiguous result out. The executor calls it for an Op::MatMul node whose
// operands are evaluated (or are views of evaluated buffers):
//
//   C[..., M, N] = A[..., M, K] @ B[..., K, N]
//
// `out_shape` is C's shape (rank >= 2); the batch axes of A and B are already
// broadcast to C's (a broadcast axis has stride 0). Each operand is given as
// its buffer, an element offset and one element stride per axis of C's rank
// (A's last two are its M and K strides, B's its K and N strides), so views
// (transposes, slices, broadcasts) are read where they lie. C is written
// row-major and contiguous, every element (K == 0 gives zeros).
//
// f32/f64 go to the BLAS (OpenBLAS, see CMakeLists.txt and bench/README.md:
// measured against BLIS and Eigen on this workload; its kernels made for the
// CPU's level, a private copy of it where the process's would run generic
// ones: blas.hpp). An operand whose last two
// axes are row- or column-major with unit stride in one of them is passed in
// place, a column-major one as a transpose flag with its leading dimension;
// any other operand is copied once into a packed buffer. Batch axes that B
// does not vary along and A walks in step with its rows fold into M (one
// [batch * M, K] @ [K, N] call), the rest loop.
//
// f16/bf16: each operand's span is widened to f32 (views stay views), the f32
// product above runs, and C is rounded once per element: sums accumulate in
// f32, as docs/semantics.md says of every half reduction.
//
// i32/i64 wrap on overflow (docs/semantics.md), bool is OR of ANDs (NumPy);
// both run a blocked loop of our own and give exactly the reference
// interpreter's results.
//
// `threads`: the threads to use, 0 = all cores (pass aj::jit::num_threads()).
// They are the host pool's (thread_pool.hpp), for every dtype: a product is
// cut into blocks of rows (or columns) that the pool shares out over all
// batches, each block a single-threaded BLAS call. OpenBLAS is kept at one
// thread (openblas_set_num_threads(1), a process-wide setting, made only when
// it is not already 1).
#pragma once

#include <cstdint>
#include <vector>

#include "arrayjit/dtype.hpp"

namespace aj::cpu {

struct StridedOperand {
  const void* data = nullptr;
  std::int64_t offset = 0;             // elements from data to element [0, ..., 0]
  std::vector<std::int64_t> strides;   // elements, one per axis of out_shape
};

// Told of each part of C as soon as it holds its final values: fn(ctx,
// begin, end) with a range of C's flat (row-major) element indices, on the
// thread that computed it (ranges of different threads run concurrently),
// every element in exactly one range. A product split over threads reports
// each block when its gemm returns, while the block is still in cache.
struct BlocksDone {
  void (*fn)(const void* ctx, std::int64_t begin, std::int64_t end) = nullptr;
  const void* ctx = nullptr;
  void operator()(std::int64_t begin, std::int64_t end) const {
    if (fn && begin < end) fn(ctx, begin, end);
  }
};

// Throws an internal aj::Error when the strides do not match out_shape's rank.
void matmul(DType t, const std::vector<std::int64_t>& out_shape, std::int64_t K,
            const StridedOperand& a, const StridedOperand& b, void* c, int threads,
            const BlocksDone& done = {});

// "OpenBLAS 0.3.21 ...: core Zen (the process's copy), level avx2": the BLAS
// f32/f64 matmuls run on (blas.hpp).
const char* matmul_library();

}  // namespace aj::cpu

// Library kernels: CUDA C written by hand, not rendered from Kernel IR, for
// the library steps (graph/library.hpp): batched matmul and the strided
// copies concatenate is made of. Render-only like cuda_source.hpp: works
// without a GPU or NVRTC. (argmax/argmin are Kernel IR reductions,
// cuda_source.cpp.)
//
// Same conventions as the generated kernels: the prelude (cuda_prelude.hpp)
// first, one entry `aj_k` (a launch may add `aj_k_finish`) taking one
// parameter block `P` by value, __launch_bounds__(kThreadsPerBlock), 1-D grids
// that stride over the work. A source depends only on a LibrarySpec (op,
// dtype, rank); extents, strides, offsets and addresses are in the parameter
// block, so new sizes or layouts never recompile. The KernelSource's hash is
// the compile cache key, as for every other kernel.
//
// Semantics are those of base/semantics.hpp and the reference interpreter:
//  - matmul: C[b..., m, n] = sum_k A[b..., m, k] * B[b..., k, n], C contiguous.
//    Where cuBLAS is loaded and takes the operands as they lie (floats; see
//    cuda_blas.hpp) the step is one cuBLAS call instead; otherwise this kernel:
//    Accumulates in the element type in k order (f16/bf16: in f32, loaded
//    widened and rounded once at the store) (one rounding per + and *,
//    no FMA: --fmad=false); integers wrap. The reference multiplies floats with
//    Eigen, whose summation order differs: float results agree within rounding,
//    integer results exactly. K = 0 gives zeros.
//  - copy: out[offset + i . out_strides] = in[offset + i . in_strides].
//  - sort: sort/argsort/topk of each line along one axis (jit/cuda/cuda_sort.cpp):
//    one block per line merge sorts (value, position) pairs in scratch; the
//    order is base/semantics' (NaN last, or first for topk; -0.0 == +0.0;
//    ties by position), so results equal the host's bit for bit.
//  - scatter/scatter_add (the result is first a copy of the array, or the
//    array's own buffer when the step works in place): one thread per
//    position off the axis walks the indices along it in order, so each
//    element takes its updates in the updates' row-major order, as the
//    reference does (duplicates: sums in that order, or the last wins; no
//    atomics, deterministic); out-of-range indices are dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "graph/library.hpp"
#include "jit/cuda/cuda_blas.hpp"
#include "jit/cuda/cuda_source.hpp"

namespace aj::cuda {

enum class LibraryOp : std::uint8_t { matmul, copy, sort, scatter, scatter_add };

// What a library kernel's source depends on. rank: the batch axes of a
// matmul, the axes of a copy after merging (plan_copy).
struct LibrarySpec {
  LibraryOp op = LibraryOp::copy;
  DType dtype = DType::f32;
  int rank = 0;
  DType index = DType::i64;  // scatter: the indices' dtype
  std::uint64_t key() const;  // distinct per spec: the runtime's module cache key
  bool operator==(const LibrarySpec&) const = default;
};

const char* library_op_name(LibraryOp op);  // "matmul", "copy", "sort", "scatter", "scatter_add"

KernelSource render_library(const LibrarySpec& spec);

// One launch of a library kernel: `grid` blocks of kThreadsPerBlock threads
// run aj_k (none when grid is 0), then `finish_grid` blocks run aj_k_finish.
// When scratch_bytes > 0 the launcher allocates that much device scratch and
// stores its address in params[scratch_slot] first.
struct LibraryLaunch {
  LibrarySpec spec;
  std::int64_t grid = 0, finish_grid = 0;
  std::size_t scratch_bytes = 0;
  int scratch_slot = -1;
  std::vector<std::int64_t> params;  // the parameter block, 8 bytes a field
  std::optional<Gemm> gemm;          // set: a cuBLAS call (cuda_blas.hpp) instead of a kernel
};

// A strided operand: device address, element strides (one per axis), element offset.
struct StridedRef {
  std::uint64_t ptr = 0;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
};

// shape: of the result, [batch..., m, n] (rank >= 2); a is [batch..., m, k],
// b is [batch..., k, n] (batch strides may be 0); the result is contiguous at c.
LibraryLaunch plan_matmul(DType t, const std::vector<std::int64_t>& shape, std::int64_t k, const StridedRef& a,
                          const StridedRef& b, std::uint64_t c, int sms);

// Copy `in` (extents `shape`) into `out`'s layout. Axes of extent 1 are
// dropped and axes both sides walk as one are merged, so the spec's rank is
// that of the merged shape (1 for a contiguous copy).
LibraryLaunch plan_copy(DType t, const std::vector<std::int64_t>& shape, const StridedRef& in,
                        const StridedRef& out, int sms);

// Sort, argsort, topk (c.op) of c.inputs[0] (at `in`) into the contiguous
// result at `out`; rank of the spec: the input's other axes.
LibraryLaunch plan_sort(const LibraryCall& c, const StridedRef& in, std::uint64_t out, int sms);
std::string render_sort(const LibrarySpec& spec);  // cuda_sort.cpp

// scatter/scatter_add of `upd` (extents `shape`) at `idx` (same extents)
// along `axis` into the contiguous result at `out` (extents `out_shape`),
// which already holds the array.
LibraryLaunch plan_scatter(LibraryOp op, DType t, DType index, const std::vector<std::int64_t>& out_shape,
                           const std::vector<std::int64_t>& shape, int axis, const StridedRef& idx,
                           const StridedRef& upd, std::uint64_t out, int sms);

// The launches evaluating a library step (graph/library.hpp): one matmul,
// one copy per input of a concatenate into its slice
// of the result, or a scatter (after a copy of the array unless `out` is
// its buffer). `inputs`: each operand's buffer base address (0 when only
// the sources are wanted); `out`: the contiguous result's. With `blas`, a
// matmul cuBLAS can take as it lies is one cuBLAS call (plan_gemm).
std::vector<LibraryLaunch> plan_library(const LibraryCall& call, const std::vector<std::uint64_t>& inputs,
                                        std::uint64_t out, int sms, bool blas = false);

}  // namespace aj::cuda

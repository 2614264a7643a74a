// The CUDA C prelude every generated kernel starts with: base/semantics.hpp in
// CUDA mode, preprocessed at build time from jit/cuda/cuda_prelude.cu, then
// jit/cuda/cuda_prelude_tail.cuh (CMakeLists.txt embeds the text). Nothing in
// it is written for the device alone except that tail: the scalar semantics
// are the host's own source. Compiled with --fmad=false and IEEE division and
// sqrt, so + - * / sqrt and the casts give the same bits as the host.
#pragma once

extern "C" const char aj_cuda_prelude[];  // generated: cuda_prelude_text.cpp

namespace aj::cuda {

inline const char* const kPrelude = aj_cuda_prelude;

// Put before the prelude in a kernel that loads or stores half dtypes:
// CUDA's __half and __nv_bfloat16 and the prelude's conversions to aj::f16
// and aj::bf16 (kept out of other kernels: the headers are long to compile).
inline constexpr const char* kHalfHeaders =
    "#define AJ_HALF_STORAGE 1\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";

}  // namespace aj::cuda

// The first part of the CUDA C prelude every generated kernel starts with:
// base/semantics.hpp itself, read in CUDA mode (AJ_SEM_CUDA: every function
// __device__ __forceinline__, math through CUDA's library). At build time the
// C preprocessor expands this file (CMakeLists.txt), cuda_prelude_tail.cuh is
// appended unchanged, and the text is embedded as kPrelude
// (cuda_prelude.hpp). Generated CUDA C calls aj::sem:: functions with
// constant ops (cuda_ops.cpp), so host and device compute with one source.
#define AJ_SEM_CUDA 1
#include "base/semantics.hpp"

/* arrayjit's DLPack calls for C (the C++ ones: arrayjit/dlpack.hpp), on the
 * DLPack ABI of arrayjit/dlpack_abi.h. C99 and C++. */

#ifndef ARRAYJIT_DLPACK_H
#define ARRAYJIT_DLPACK_H

#include "arrayjit/arrayjit.h"
#include "arrayjit/dlpack_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Export: a DLPack tensor that shares the evaluated array's memory (zero-copy;
 * the array is evaluated first). The caller (the consumer) calls its deleter
 * exactly once; until then the buffer is pinned (never freed, never reused in
 * place). Exports are READ_ONLY: arrayjit's buffers may be shared.
 * `stream` follows the array API's __dlpack__ rule for a CUDA array: the
 * consumer's stream (a CUstream; NULL for the legacy default stream, 1 or 2
 * for legacy/per-thread default), or (void*)-1 for "no synchronization";
 * it is ignored for host arrays. */
AJ_C_API aj_status aj_to_dlpack_versioned(aj_array a, void* stream, DLManagedTensorVersioned** out);
AJ_C_API aj_status aj_to_dlpack(aj_array a, void* stream, DLManagedTensor** out);

/* Import: an array borrowing the tensor's memory (zero-copy; never written).
 * arrayjit calls the tensor's deleter exactly once, when the last array using
 * it dies; a failed import takes nothing (the tensor is still the caller's,
 * its deleter not called). CPU, CUDA-host, CUDA, CUDA-managed; bool,
 * int32, int64, float32, float64, one lane; strides in elements. A CUDA
 * tensor must be ready on arrayjit's current stream of its device (the
 * DLPack rule: the consumer, arrayjit, named its stream to the producer); its
 * deleter runs once arrayjit's work reading it completed (see
 * aj_array_from_cuda_view, which also takes a producer's stream). */
AJ_C_API aj_status aj_from_dlpack_versioned(DLManagedTensorVersioned* t, aj_array* out);
AJ_C_API aj_status aj_from_dlpack(DLManagedTensor* t, aj_array* out);

#ifdef __cplusplus
}
#endif

#endif /* ARRAYJIT_DLPACK_H */

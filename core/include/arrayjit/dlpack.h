/* DLPack 1.1's ABI, declared from the specification (https://dmlc.github.io/dlpack/latest/),
 * and arrayjit's DLPack calls. Debian 12's libdlpack-dev (0.6) predates the
 * versioned struct, so the types are declared here; the include guard is the
 * official header's, so whichever is included first defines them (an older
 * official header first is an error below). C99 and C++.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;

typedef struct {
  uint8_t code;   /* DLDataTypeCode */
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* in elements; NULL means row-major */
  uint64_t byte_offset;
} DLTensor;

/* The legacy (pre-1.0) managed tensor: no version, no flags. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#error "arrayjit/dlpack.h needs DLPack >= 1.0: an older dlpack/dlpack.h was included first"
#endif

#ifndef ARRAYJIT_DLPACK_H
#define ARRAYJIT_DLPACK_H

#include "arrayjit/arrayjit.h"

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

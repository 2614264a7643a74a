// The CUDA driver API and NVRTC, declared once and loaded at run time.
//
// arrayjit never links libcuda or libnvrtc and never includes cuda.h or
// nvrtc.h: the few types, constants and entry points it uses are declared
// here (values copied from CUDA 13.0's headers; the driver ABI keeps them
// stable) and resolved with dlopen/dlsym on first use. A missing library means
// "backend unavailable", reported by driver_api()/nvrtc_api() returning null
// and a reason string naming what was missing, never a link or load failure.
//
// Every call goes through AJ_CU(...) / AJ_NVRTC(...), which check the result
// and throw aj::Error (runtime) naming the call and the CUDA error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace aj::cuda {

// ---- driver API types (cuda.h) -------------------------------------------------
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmemoryPool = struct CUmemPoolHandle_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;

inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;

inline constexpr int CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2;
inline constexpr int CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;
inline constexpr int CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5;
inline constexpr int CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7;

inline constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
inline constexpr int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
inline constexpr unsigned CU_MEMORYTYPE_HOST = 0x1;
inline constexpr unsigned CU_MEMORYTYPE_DEVICE = 0x2;
inline constexpr unsigned CU_MEMORYTYPE_UNIFIED = 0x4;

inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0x0;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;

// The driver entry points, by their ABI names (the _v2 ones where cuda.h
// maps the plain name to a _v2 symbol). Field name = what the code calls.
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext*);  // null in a test driver: the runtime then always sets
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuStreamGetCtx)(CUstream, CUcontext*);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);  // cuEventDestroy_v2
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool*, CUdevice);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void*);
  CUresult (*cuMemPoolGetAttribute)(CUmemoryPool, int, void*);
  CUresult (*cuMemPoolTrimTo)(CUmemoryPool, std::size_t);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, std::size_t, CUmemoryPool, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemHostAlloc)(void**, std::size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, std::size_t, CUstream);  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, std::size_t, CUstream);        // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream);  // _v2
  CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr);
};

// ---- NVRTC (nvrtc.h) ---------------------------------------------------------------
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
  nvrtcResult (*nvrtcGetSupportedArchs)(int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);  // absent before CUDA 11.1
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  std::string path;  // the library that was loaded
  int major = 0, minor = 0;
};

// The driver API after a successful cuInit(0), or null. `why` (if given) gets
// the reason when null: "no driver (libcuda.so.1 not found: ...)", "no CUDA
// device (cuInit: CUDA_ERROR_NO_DEVICE ...)". Loaded once per process.
const DriverApi* driver_api(std::string* why = nullptr);
// NVRTC, or null with `why` = "NVRTC not found (tried ...)". Searches
// libnvrtc.so.13/.12/.11/libnvrtc.so on the default path, then under
// $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
const NvrtcApi* nvrtc_api(std::string* why = nullptr);

// Tests only: make driver_api() return `fake` (null: the real driver again),
// so the runtime can be exercised without a GPU (tests/test_cuda_fake_driver.cpp).
void set_driver_for_testing(const DriverApi* fake);

// The driver or NVRTC, or throw aj::Error (runtime) with the reason.
const DriverApi& require_driver();
const NvrtcApi& require_nvrtc();

void* lookup_symbol(void* lib, const char* name);  // dlsym

// Loading the toolkit's libraries (NVRTC, cuBLAS): the first of `names`
// (sonames) found on the loader's path, then in $CUDA_PATH/lib64,
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64. Null when none is; `path` gets
// the one loaded, `tried` the places searched ("default path, /usr/...").
void* open_toolkit_library(const std::vector<const char*>& names, std::string* path, std::string* tried);

// Resolve `name` into `slot`; false (and `missing` gets the first absent name) when absent.
template <class F>
bool resolve(void* lib, F*& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<F*>(lookup_symbol(lib, name));
  if (!slot && missing.empty()) missing = name;
  return slot != nullptr;
}

// "cuMemAllocFromPoolAsync failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
[[noreturn]] void throw_cu(const char* call, CUresult r);
[[noreturn]] void throw_nvrtc(const char* call, nvrtcResult r);

}  // namespace aj::cuda

// Call a driver entry point through the table and throw on failure, naming it:
//   AJ_CU(cuStreamSynchronize, stream);
#define AJ_CU(fn, ...)                                                          \
  do {                                                                          \
    const ::aj::cuda::CUresult aj_cu_r_ = ::aj::cuda::require_driver().fn(__VA_ARGS__); \
    if (aj_cu_r_ != ::aj::cuda::CUDA_SUCCESS) ::aj::cuda::throw_cu(#fn, aj_cu_r_); \
  } while (0)

#define AJ_NVRTC(fn, ...)                                                         \
  do {                                                                            \
    const ::aj::cuda::nvrtcResult aj_nv_r_ = ::aj::cuda::require_nvrtc().fn(__VA_ARGS__); \
    if (aj_nv_r_ != ::aj::cuda::NVRTC_SUCCESS) ::aj::cuda::throw_nvrtc(#fn, aj_nv_r_); \
  } while (0)

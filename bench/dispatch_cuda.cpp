// What the CUDA path costs on the host per small call, without a GPU: the
// 10-op chain of dispatch_plan on 1,000 f32 on cuda:0, with a null driver in
// the symbol table (every driver call returns at once; launches do nothing)
// and NVRTC replaced by a stub. What is left is arrayjit's own work per call:
// trace, plan (cache hit), the bridge, the runtime (module lookup, collapse,
// launch planning, parameter packing, allocator bookkeeping, stream-ordered
// frees). The dispatch target (<= 10 us per call, trace + cache hit +
// launch) also pays the real driver's launch, allocation and free, measured
// by bench_cuda on a GPU. Times are this thread's CPU time, medians.
//
//   build/bench/dispatch_cuda [calls]
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "jit/cuda/cuda_api.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "bench/bench_util.hpp"
#include "jit/cuda/nvrtc_compile.hpp"

namespace {

using ajbench::chain;
using ajbench::median_us;
using namespace aj::cuda;

// ---- a null driver: host memory for device memory, nothing runs ----------------
int g_token;
// Driver calls by entry point, to say what a call asks of the real driver.
std::map<std::string, long>& g_calls() {
  static std::map<std::string, long> m;
  return m;
}
void tick(const char* name) { ++g_calls()[name]; }
thread_local CUcontext t_ctx = nullptr;
template <class T> T* token() { return reinterpret_cast<T*>(&g_token); }
CUresult ok() { return CUDA_SUCCESS; }
DriverApi null_driver() {
  DriverApi a{};
  a.cuInit = [](unsigned) { tick("cuInit"); return ok(); };
  a.cuDriverGetVersion = [](int* v) { tick("cuDriverGetVersion"); *v = 13000; return ok(); };
  a.cuGetErrorName = [](CUresult, const char** s) { tick("cuGetErrorName"); *s = "CUDA_ERROR_NULL_DRIVER"; return ok(); };
  a.cuGetErrorString = [](CUresult, const char** s) { tick("cuGetErrorString"); *s = "null driver"; return ok(); };
  a.cuDeviceGetCount = [](int* n) { tick("cuDeviceGetCount"); *n = 1; return ok(); };
  a.cuDeviceGet = [](CUdevice* d, int i) { tick("cuDeviceGet"); *d = i; return ok(); };
  a.cuDeviceGetAttribute = [](int* v, int attr, CUdevice) { tick("cuDeviceGetAttribute");
    *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9
         : attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 132
         : attr == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED ? 1 : 0;
    return ok();
  };
  a.cuDeviceGetName = [](char* b, int n, CUdevice) { tick("cuDeviceGetName"); std::snprintf(b, static_cast<std::size_t>(n), "null GPU"); return ok(); };
  a.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice) { tick("cuDevicePrimaryCtxRetain"); *c = token<CUctx_st>(); return ok(); };
  a.cuCtxSetCurrent = [](CUcontext c) { tick("cuCtxSetCurrent"); t_ctx = c; return ok(); };
  a.cuCtxGetCurrent = [](CUcontext* c) { tick("cuCtxGetCurrent"); *c = t_ctx; return ok(); };
  a.cuStreamCreate = [](CUstream* s, unsigned) { tick("cuStreamCreate"); *s = token<CUstream_st>(); return ok(); };
  a.cuStreamSynchronize = [](CUstream) { tick("cuStreamSynchronize"); return ok(); };
  a.cuStreamWaitEvent = [](CUstream, CUevent, unsigned) { tick("cuStreamWaitEvent"); return ok(); };
  a.cuStreamGetCtx = [](CUstream, CUcontext* c) { tick("cuStreamGetCtx"); *c = token<CUctx_st>(); return ok(); };
  a.cuEventCreate = [](CUevent* e, unsigned) { tick("cuEventCreate"); *e = token<CUevent_st>(); return ok(); };
  a.cuEventRecord = [](CUevent, CUstream) { tick("cuEventRecord"); return ok(); };
  a.cuEventQuery = [](CUevent) { tick("cuEventQuery"); return ok(); };
  a.cuEventSynchronize = [](CUevent) { tick("cuEventSynchronize"); return ok(); };
  a.cuEventElapsedTime = [](float* ms, CUevent, CUevent) { tick("cuEventElapsedTime"); *ms = 0; return ok(); };
  a.cuEventDestroy = [](CUevent) { tick("cuEventDestroy"); return ok(); };
  a.cuModuleLoadData = [](CUmodule* m, const void*) { tick("cuModuleLoadData"); *m = token<CUmod_st>(); return ok(); };
  a.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char*) { tick("cuModuleGetFunction"); *f = token<CUfunc_st>(); return ok(); };
  a.cuLaunchKernel = [](CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void**, void**) { tick("cuLaunchKernel"); return ok(); };
  a.cuDeviceGetDefaultMemPool = [](CUmemoryPool* p, CUdevice) { tick("cuDeviceGetDefaultMemPool"); *p = token<CUmemPoolHandle_st>(); return ok(); };
  a.cuMemPoolSetAttribute = [](CUmemoryPool, int, void*) { tick("cuMemPoolSetAttribute"); return ok(); };
  a.cuMemPoolGetAttribute = [](CUmemoryPool, int, void* v) { tick("cuMemPoolGetAttribute"); *static_cast<std::uint64_t*>(v) = 0; return ok(); };
  a.cuMemPoolTrimTo = [](CUmemoryPool, std::size_t) { tick("cuMemPoolTrimTo"); return ok(); };
  a.cuMemAllocFromPoolAsync = [](CUdeviceptr* p, std::size_t n, CUmemoryPool, CUstream) { tick("cuMemAllocFromPoolAsync");
    *p = reinterpret_cast<CUdeviceptr>(std::aligned_alloc(256, (n + 255) / 256 * 256));
    return ok();
  };
  a.cuMemFreeAsync = [](CUdeviceptr p, CUstream) { tick("cuMemFreeAsync"); std::free(reinterpret_cast<void*>(p)); return ok(); };
  a.cuMemHostAlloc = [](void** p, std::size_t n, unsigned) { tick("cuMemHostAlloc"); *p = std::malloc(n); return ok(); };
  a.cuMemFreeHost = [](void* p) { tick("cuMemFreeHost"); std::free(p); return ok(); };
  a.cuMemcpyHtoDAsync = [](CUdeviceptr d, const void* h, std::size_t n, CUstream) { tick("cuMemcpyHtoDAsync");
    std::memcpy(reinterpret_cast<void*>(d), h, n);
    return ok();
  };
  a.cuMemcpyDtoHAsync = [](void* h, CUdeviceptr d, std::size_t n, CUstream) { tick("cuMemcpyDtoHAsync");
    std::memcpy(h, reinterpret_cast<void*>(d), n);
    return ok();
  };
  a.cuMemcpyDtoDAsync = [](CUdeviceptr a2, CUdeviceptr b, std::size_t n, CUstream) { tick("cuMemcpyDtoDAsync");
    std::memcpy(reinterpret_cast<void*>(a2), reinterpret_cast<void*>(b), n);
    return ok();
  };
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  static const DriverApi api = null_driver();
  reset_runtime_for_testing();
  set_driver_for_testing(&api);
  set_compile_hook_for_testing([](const KernelSource&, int) {
    auto img = std::make_shared<Image>();
    img->bytes = std::string("null image") + '\0';
    return std::shared_ptr<const Image>(img);
  });
  std::vector<float> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17) * 0.25f;
  const double host = [&] {
    aj::Array x = aj::from_vector(data);
    x.eval();
    return median_us([&] { chain(x).eval(); }, calls);
  }();
  double device = 0;
  {
    aj::Array x = aj::from_vector(data).to(aj::Device::cuda(0));
    x.eval();
    device = median_us([&] { chain(x).eval(); }, calls);
    g_calls().clear();
    for (int i = 0; i < 1000; ++i) chain(x).eval();
  }
  std::printf("arrayjit %s: a 10-op f32 chain on 1,000 elements, us of CPU per call (median)\n", aj::version());
  std::printf("  %-46s %8.2f us\n", "host (JIT)", host);
  std::printf("  %-46s %8.2f us\n", "cuda:0 on a null driver (arrayjit's own work)", device);
  std::printf("  driver calls per call:");
  for (const auto& [name, n] : g_calls()) std::printf(" %s %.2f", name.c_str(), static_cast<double>(n) / 1000);
  std::printf("\n");
  set_compile_hook_for_testing({});
  set_driver_for_testing(nullptr);
  reset_runtime_for_testing();
  return 0;
}

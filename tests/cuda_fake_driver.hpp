// A fake CUDA driver for tests without a GPU: host memory for device memory,
// no-op streams and events (named, and every stream/event call recorded in
// fake().calls so tests can assert the order of hand-offs), and a
// cuLaunchKernel that runs the generated kernels on the host
// (tests/cuda_host_emulator.hpp). FakeGpu installs it for a scope.
#pragma once

#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/cuda_runtime.hpp"
#include "jit/cuda/cuda_api.hpp"
#include "jit/cuda/cuda_blas.hpp"
#include "jit/cuda/nvrtc_compile.hpp"
#include "tests/cuda_host_emulator.hpp"

namespace ajtest::fake_cuda {

using namespace aj::cuda;

struct FakeFn {
  std::uint64_t hash;
  std::string name;
};

struct Fake {
  std::mutex mu;
  std::size_t limit = std::size_t{1} << 30, live = 0;
  std::map<CUdeviceptr, std::size_t> allocs;
  int waits = 0, launches = 0, trims = 0, uploads = 0, downloads = 0, ctx_sets = 0;
  bool threshold_raised = false;
  bool execute = false;
  // Stream and event calls in order: "record e3 on s1", "wait s2 for e3",
  // "sync s1", "query e3", "evsync e3", "destroy e3" (streams s1, s2, ... in
  // creation order; s0 is the default stream, s-legacy and s-per-thread
  // CUDA's special handles).
  std::vector<std::string> calls;
  bool events_done = true;  // what cuEventQuery answers: done, or CUDA_ERROR_NOT_READY
  int next_event = 0;
  std::set<void*> pinned;   // cuMemHostAlloc'd: host memory the driver knows
  std::map<std::uint64_t, KernelSource> sources;
  std::unique_ptr<ajtest::HostCudaLibrary> lib;
  // Handles the fake hands out, owned here (the runtime never destroys
  // streams, modules or functions).
  std::vector<std::unique_ptr<int>> streams;
  std::vector<std::unique_ptr<std::uint64_t>> modules;
  std::vector<std::unique_ptr<FakeFn>> functions;
};
// Whether a host C++ compiler runs (the emulated kernels are compiled with it).
inline bool have_cxx() { return std::system("c++ --version > /dev/null 2>&1") == 0; }

inline Fake& fake() {
  static Fake f;
  return f;
}
inline int g_ctx_token, g_pool_token;

inline std::string stream_name(CUstream s) {
  const auto v = reinterpret_cast<std::uintptr_t>(s);
  if (v == 0) return "s0";
  if (v == 1) return "s-legacy";
  if (v == 2) return "s-per-thread";
  return "s" + std::to_string(*reinterpret_cast<int*>(s));
}
inline std::string event_name(CUevent e) { return "e" + std::to_string(*reinterpret_cast<int*>(e)); }
inline void log_call(std::string what) {
  std::lock_guard<std::mutex> lock(fake().mu);
  fake().calls.push_back(std::move(what));
}

// ---- the fake driver --------------------------------------------------------------
inline CUresult ok0() { return CUDA_SUCCESS; }
inline CUresult f_init(unsigned) { return ok0(); }
inline CUresult f_version(int* v) { *v = 13000; return ok0(); }
inline CUresult f_err_name(CUresult r, const char** s) { *s = r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_FAKE"; return ok0(); }
inline CUresult f_err_string(CUresult, const char** s) { *s = "fake driver"; return ok0(); }
inline CUresult f_count(int* n) { *n = 1; return ok0(); }
inline CUresult f_get(CUdevice* d, int i) { *d = i; return ok0(); }
inline CUresult f_attr(int* v, int attr, CUdevice) {
  *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9
       : attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 2
       : attr == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED ? 1 : 0;
  return ok0();
}
inline CUresult f_name(char* b, int n, CUdevice) { std::snprintf(b, static_cast<std::size_t>(n), "fake GPU"); return ok0(); }
inline CUresult f_ctx_retain(CUcontext* c, CUdevice) { *c = reinterpret_cast<CUcontext>(&g_ctx_token); return ok0(); }
inline thread_local CUcontext t_fake_ctx = nullptr;
inline CUresult f_ctx_set(CUcontext c) {
  t_fake_ctx = c;
  std::lock_guard<std::mutex> lock(fake().mu);
  ++fake().ctx_sets;
  return ok0();
}
inline CUresult f_ctx_get(CUcontext* c) {
  *c = t_fake_ctx;
  return ok0();
}
inline CUresult f_stream_create(CUstream* s, unsigned) {
  fake().streams.push_back(std::make_unique<int>(static_cast<int>(fake().streams.size()) + 1));
  *s = reinterpret_cast<CUstream>(fake().streams.back().get());
  return ok0();
}
inline CUresult f_stream(CUstream s) { log_call("sync " + stream_name(s)); return ok0(); }
inline CUresult f_wait(CUstream s, CUevent e, unsigned) {
  ++fake().waits;
  log_call("wait " + stream_name(s) + " for " + event_name(e));
  return ok0();
}
inline CUresult f_stream_ctx(CUstream, CUcontext* c) { *c = reinterpret_cast<CUcontext>(&g_ctx_token); return ok0(); }
inline CUresult f_event_create(CUevent* e, unsigned) { *e = reinterpret_cast<CUevent>(new int(++fake().next_event)); return ok0(); }
inline CUresult f_event_record(CUevent e, CUstream s) {
  log_call("record " + event_name(e) + " on " + stream_name(s));
  return ok0();
}
inline CUresult f_event_query(CUevent e) {
  log_call("query " + event_name(e));
  return fake().events_done ? ok0() : CUDA_ERROR_NOT_READY;
}
inline CUresult f_event_sync(CUevent e) { log_call("evsync " + event_name(e)); return ok0(); }
inline CUresult f_elapsed(float* ms, CUevent, CUevent) { *ms = 0; return ok0(); }
inline CUresult f_event_destroy(CUevent e) {
  log_call("destroy " + event_name(e));
  delete reinterpret_cast<int*>(e);
  return ok0();
}
inline CUresult f_module_load(CUmodule* m, const void* image) {
  const char* s = static_cast<const char*>(image);
  if (std::strncmp(s, "EMU:", 4) != 0) return 200;  // CUDA_ERROR_INVALID_IMAGE
  fake().modules.push_back(std::make_unique<std::uint64_t>(std::strtoull(s + 4, nullptr, 16)));
  *m = reinterpret_cast<CUmodule>(fake().modules.back().get());
  return ok0();
}
inline CUresult f_module_fn(CUfunction* f, CUmodule m, const char* name) {
  fake().functions.push_back(std::make_unique<FakeFn>(FakeFn{*reinterpret_cast<std::uint64_t*>(m), name}));
  *f = reinterpret_cast<CUfunction>(fake().functions.back().get());
  return ok0();
}
inline CUresult f_launch(CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned, CUstream,
                  void** args, void**) {
  const FakeFn& fn = *reinterpret_cast<FakeFn*>(f);
  ++fake().launches;
  if (!fake().execute) return ok0();
  if (!fake().lib || !fake().lib->has(fn.hash)) return 1;  // CUDA_ERROR_INVALID_VALUE
  fake().lib->run(fn.hash, fn.name.c_str(), args[0], gx, bx);
  return ok0();
}
inline CUresult f_pool(CUmemoryPool* p, CUdevice) { *p = reinterpret_cast<CUmemoryPool>(&g_pool_token); return ok0(); }
inline CUresult f_pool_set(CUmemoryPool, int attr, void* v) {
  if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) fake().threshold_raised = *static_cast<std::uint64_t*>(v) == ~0ull;
  return ok0();
}
inline CUresult f_pool_get(CUmemoryPool, int, void* v) { *static_cast<std::uint64_t*>(v) = fake().live; return ok0(); }
inline CUresult f_trim(CUmemoryPool, std::size_t) { ++fake().trims; return ok0(); }
inline CUresult f_alloc(CUdeviceptr* p, std::size_t n, CUmemoryPool, CUstream) {
  Fake& fk = fake();
  std::lock_guard<std::mutex> lock(fk.mu);
  if (n > fk.limit - fk.live) return CUDA_ERROR_OUT_OF_MEMORY;
  void* m = std::aligned_alloc(256, (n + 255) / 256 * 256);
  // Fresh device memory is garbage when kernels run (unwritten elements
  // show); zero in the collecting pass, whose values are never looked at but
  // must still be valid bools when read.
  std::memset(m, fk.execute ? 0xAB : 0, n);
  *p = reinterpret_cast<CUdeviceptr>(m);
  fk.allocs[*p] = n;
  fk.live += n;
  return ok0();
}
inline CUresult f_free(CUdeviceptr p, CUstream) {
  Fake& fk = fake();
  std::lock_guard<std::mutex> lock(fk.mu);
  auto it = fk.allocs.find(p);
  if (it == fk.allocs.end()) return 1;  // a double or foreign free
  fk.live -= it->second;
  fk.allocs.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return ok0();
}
inline CUresult f_host_alloc(void** p, std::size_t n, unsigned) {
  *p = std::malloc(n);
  std::lock_guard<std::mutex> lock(fake().mu);
  fake().pinned.insert(*p);
  return ok0();
}
inline CUresult f_host_free(void* p) {
  {
    std::lock_guard<std::mutex> lock(fake().mu);
    fake().pinned.erase(p);
  }
  std::free(p);
  return ok0();
}
// Device memory: inside one of the fake's allocations (device 0); host
// memory: a pinned block's start; anything else is unknown to the driver.
inline CUresult f_pointer_attr(void* data, int attr, CUdeviceptr p) {
  Fake& fk = fake();
  std::lock_guard<std::mutex> lock(fk.mu);
  auto it = fk.allocs.upper_bound(p);
  const bool on_device = it != fk.allocs.begin() && p < std::prev(it)->first + std::prev(it)->second;
  const bool pinned = fk.pinned.count(reinterpret_cast<void*>(p)) > 0;
  if (!on_device && !pinned) return CUDA_ERROR_INVALID_VALUE;
  if (attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *static_cast<unsigned*>(data) = on_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  else if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *static_cast<int*>(data) = on_device ? 0 : -1;
  else return CUDA_ERROR_INVALID_VALUE;
  return ok0();
}
inline CUresult f_h2d(CUdeviceptr d, const void* h, std::size_t n, CUstream) { ++fake().uploads; std::memcpy(reinterpret_cast<void*>(d), h, n); return ok0(); }
inline CUresult f_d2h(void* h, CUdeviceptr d, std::size_t n, CUstream) { ++fake().downloads; std::memcpy(h, reinterpret_cast<void*>(d), n); return ok0(); }
inline CUresult f_d2d(CUdeviceptr a, CUdeviceptr b, std::size_t n, CUstream) { std::memcpy(reinterpret_cast<void*>(a), reinterpret_cast<void*>(b), n); return ok0(); }

inline DriverApi make_api() {
  DriverApi a{};
  a.cuInit = f_init; a.cuDriverGetVersion = f_version; a.cuGetErrorName = f_err_name;
  a.cuGetErrorString = f_err_string; a.cuDeviceGetCount = f_count; a.cuDeviceGet = f_get;
  a.cuDeviceGetAttribute = f_attr; a.cuDeviceGetName = f_name; a.cuDevicePrimaryCtxRetain = f_ctx_retain;
  a.cuCtxSetCurrent = f_ctx_set; a.cuCtxGetCurrent = f_ctx_get; a.cuStreamCreate = f_stream_create; a.cuStreamSynchronize = f_stream;
  a.cuStreamWaitEvent = f_wait; a.cuStreamGetCtx = f_stream_ctx; a.cuEventCreate = f_event_create;
  a.cuEventRecord = f_event_record; a.cuEventQuery = f_event_query; a.cuEventSynchronize = f_event_sync;
  a.cuEventElapsedTime = f_elapsed; a.cuEventDestroy = f_event_destroy; a.cuModuleLoadData = f_module_load;
  a.cuModuleGetFunction = f_module_fn; a.cuLaunchKernel = f_launch; a.cuDeviceGetDefaultMemPool = f_pool;
  a.cuMemPoolSetAttribute = f_pool_set; a.cuMemPoolGetAttribute = f_pool_get; a.cuMemPoolTrimTo = f_trim;
  a.cuMemAllocFromPoolAsync = f_alloc; a.cuMemFreeAsync = f_free; a.cuMemHostAlloc = f_host_alloc;
  a.cuMemFreeHost = f_host_free; a.cuMemcpyHtoDAsync = f_h2d; a.cuMemcpyDtoHAsync = f_d2h;
  a.cuMemcpyDtoDAsync = f_d2d; a.cuPointerGetAttribute = f_pointer_attr;
  return a;
}

// Installs the fake driver and compile hook for a scope; the runtime's state
// is reset on both ends so no real-GPU test ever sees a fake handle.
struct FakeGpu {
  DriverApi api = make_api();
  FakeGpu() {
    fake().sources.clear();
    reset_runtime_for_testing();
    set_driver_for_testing(&api);
    set_blas_for_testing(BlasTest::off);  // a test that wants cuBLAS installs a fake one
    set_compile_hook_for_testing([](const KernelSource& src, int) {
      fake().sources.emplace(src.hash, src);
      auto img = std::make_shared<Image>();
      char buf[32];
      std::snprintf(buf, sizeof buf, "EMU:%016llx", static_cast<unsigned long long>(src.hash));
      img->bytes = std::string(buf) + '\0';
      return std::shared_ptr<const Image>(img);
    });
  }
  ~FakeGpu() {
    aj::cuda::trim_memory(0);  // gives the fake's pinned staging buffers back
    set_compile_hook_for_testing({});
    set_driver_for_testing(nullptr);
    set_blas_for_testing(BlasTest::real);
    reset_runtime_for_testing();
    fake().lib.reset();
    fake().execute = false;
    fake().streams.clear();
    fake().calls.clear();
    fake().ctx_sets = 0;
    t_fake_ctx = nullptr;
    fake().events_done = true;
    fake().modules.clear();
    fake().functions.clear();
  }
  // Run `body` once to collect kernels, compile them, then for real.
  template <class F>
  auto twice(F body) {
    fake().execute = false;
    body();
    fake().lib = std::make_unique<ajtest::HostCudaLibrary>(fake().sources);
    fake().execute = true;
    return body();
  }
};

}  // namespace ajtest::fake_cuda

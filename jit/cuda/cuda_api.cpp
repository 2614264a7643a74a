// Loading the driver API and NVRTC with dlopen (see cuda_api.hpp).
#include "jit/cuda/cuda_api.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "arrayjit/error.hpp"

namespace aj::cuda {

namespace {

template <class F>
bool sym(void* lib, F*& slot, const char* name, std::string& missing) {
  return resolve(lib, slot, name, missing);
}

struct DriverLoad {
  DriverApi api{};
  bool ok = false;
  std::string why;
};

DriverLoad load_driver() {
  DriverLoad d;
  // Only the driver's soname: a libcuda.so without .1 is the toolkit's stub,
  // which loads and then fails every call.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    d.why = std::string("no driver (libcuda.so.1 not found: ") + (e ? e : "dlopen failed") + ")";
    return d;
  }
  std::string missing;
  DriverApi& a = d.api;
  sym(lib, a.cuInit, "cuInit", missing);
  sym(lib, a.cuDriverGetVersion, "cuDriverGetVersion", missing);
  sym(lib, a.cuGetErrorName, "cuGetErrorName", missing);
  sym(lib, a.cuGetErrorString, "cuGetErrorString", missing);
  sym(lib, a.cuDeviceGetCount, "cuDeviceGetCount", missing);
  sym(lib, a.cuDeviceGet, "cuDeviceGet", missing);
  sym(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  sym(lib, a.cuDeviceGetName, "cuDeviceGetName", missing);
  sym(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  sym(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  sym(lib, a.cuCtxGetCurrent, "cuCtxGetCurrent", missing);
  sym(lib, a.cuStreamCreate, "cuStreamCreate", missing);
  sym(lib, a.cuStreamSynchronize, "cuStreamSynchronize", missing);
  sym(lib, a.cuStreamWaitEvent, "cuStreamWaitEvent", missing);
  sym(lib, a.cuStreamGetCtx, "cuStreamGetCtx", missing);
  sym(lib, a.cuEventCreate, "cuEventCreate", missing);
  sym(lib, a.cuEventRecord, "cuEventRecord", missing);
  sym(lib, a.cuEventQuery, "cuEventQuery", missing);
  sym(lib, a.cuEventSynchronize, "cuEventSynchronize", missing);
  sym(lib, a.cuEventElapsedTime, "cuEventElapsedTime", missing);
  sym(lib, a.cuEventDestroy, "cuEventDestroy_v2", missing);
  sym(lib, a.cuModuleLoadData, "cuModuleLoadData", missing);
  sym(lib, a.cuModuleGetFunction, "cuModuleGetFunction", missing);
  sym(lib, a.cuLaunchKernel, "cuLaunchKernel", missing);
  sym(lib, a.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", missing);
  sym(lib, a.cuMemPoolSetAttribute, "cuMemPoolSetAttribute", missing);
  sym(lib, a.cuMemPoolGetAttribute, "cuMemPoolGetAttribute", missing);
  sym(lib, a.cuMemPoolTrimTo, "cuMemPoolTrimTo", missing);
  sym(lib, a.cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", missing);
  sym(lib, a.cuMemFreeAsync, "cuMemFreeAsync", missing);
  sym(lib, a.cuMemHostAlloc, "cuMemHostAlloc", missing);
  sym(lib, a.cuMemFreeHost, "cuMemFreeHost", missing);
  sym(lib, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  sym(lib, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  sym(lib, a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  sym(lib, a.cuPointerGetAttribute, "cuPointerGetAttribute", missing);
  if (!missing.empty()) {
    d.why = "no usable driver (libcuda.so.1 lacks " + missing +
            "; stream-ordered pools need a CUDA 11.2+ driver)";
    return d;
  }
  if (CUresult r = a.cuInit(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    a.cuGetErrorName(r, &name);
    d.why = std::string(r == CUDA_ERROR_NO_DEVICE ? "no CUDA device" : "CUDA driver failed to start") +
            " (cuInit: " + (name ? name : std::to_string(r)) + ")";
    return d;
  }
  int n = 0;
  if (a.cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
    d.why = "no CUDA device (the driver is installed but reports no device)";
    return d;
  }
  d.ok = true;
  return d;
}

struct NvrtcLoad {
  NvrtcApi api{};
  bool ok = false;
  std::string why;
};

NvrtcLoad load_nvrtc() {
  NvrtcLoad d;
  std::string tried;
  void* lib = open_toolkit_library(
      {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11", "libnvrtc.so"}, &d.api.path, &tried);
  if (!lib) {
    d.why = "NVRTC not found (libnvrtc.so.13/.12/.11 searched in " + tried + ")";
    return d;
  }
  std::string missing;
  NvrtcApi& a = d.api;
  sym(lib, a.nvrtcGetErrorString, "nvrtcGetErrorString", missing);
  sym(lib, a.nvrtcVersion, "nvrtcVersion", missing);
  sym(lib, a.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", missing);
  sym(lib, a.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", missing);
  sym(lib, a.nvrtcCreateProgram, "nvrtcCreateProgram", missing);
  sym(lib, a.nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
  sym(lib, a.nvrtcCompileProgram, "nvrtcCompileProgram", missing);
  sym(lib, a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", missing);
  sym(lib, a.nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
  sym(lib, a.nvrtcGetPTXSize, "nvrtcGetPTXSize", missing);
  sym(lib, a.nvrtcGetPTX, "nvrtcGetPTX", missing);
  if (!missing.empty()) {
    d.why = "NVRTC at " + a.path + " is unusable (lacks " + missing + ")";
    return d;
  }
  // Optional: without them (CUDA < 11.1) kernels are compiled to PTX only.
  std::string ignore;
  sym(lib, a.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", ignore);
  sym(lib, a.nvrtcGetCUBIN, "nvrtcGetCUBIN", ignore);
  a.nvrtcVersion(&a.major, &a.minor);
  d.ok = true;
  return d;
}

const DriverLoad& driver_load() {
  static const DriverLoad d = load_driver();  // thread-safe, once
  return d;
}
const NvrtcLoad& nvrtc_load() {
  static const NvrtcLoad d = load_nvrtc();
  return d;
}

}  // namespace

void* lookup_symbol(void* lib, const char* name) { return dlsym(lib, name); }

void* open_toolkit_library(const std::vector<const char*>& names, std::string* path, std::string* tried) {
  std::vector<std::string> dirs = {""};  // "" = the loader's default search path
  if (const char* cp = std::getenv("CUDA_PATH"); cp && *cp) dirs.push_back(std::string(cp) + "/lib64/");
  if (const char* ch = std::getenv("CUDA_HOME"); ch && *ch) dirs.push_back(std::string(ch) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  for (const auto& dir : dirs) {
    for (const char* name : names) {
      const std::string p = dir + name;
      if (void* lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        if (path) *path = p;
        return lib;
      }
    }
    if (tried) *tried += (tried->empty() ? "" : ", ") + (dir.empty() ? std::string("default path") : dir);
  }
  return nullptr;
}

std::atomic<const DriverApi*> g_fake_driver{nullptr};

void set_driver_for_testing(const DriverApi* fake) { g_fake_driver = fake; }

const DriverApi* driver_api(std::string* why) {
  if (const DriverApi* fake = g_fake_driver.load()) return fake;
  const DriverLoad& d = driver_load();
  if (!d.ok && why) *why = d.why;
  return d.ok ? &d.api : nullptr;
}

const NvrtcApi* nvrtc_api(std::string* why) {
  const NvrtcLoad& d = nvrtc_load();
  if (!d.ok && why) *why = d.why;
  return d.ok ? &d.api : nullptr;
}

const DriverApi& require_driver() {
  std::string why;
  if (const DriverApi* a = driver_api(&why)) return *a;
  runtime_error("aj: CUDA is unavailable: " + why);
}

const NvrtcApi& require_nvrtc() {
  std::string why;
  if (const NvrtcApi* a = nvrtc_api(&why)) return *a;
  runtime_error("aj: cannot compile CUDA kernels: " + why);
}

void throw_cu(const char* call, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (const DriverApi* a = driver_api()) {
    a->cuGetErrorName(r, &name);
    a->cuGetErrorString(r, &text);
  }
  runtime_error(std::string("aj: ") + call + " failed: " + (name ? name : "CUDA error " + std::to_string(r)) +
                (text ? std::string(" (") + text + ")" : std::string()));
}

void throw_nvrtc(const char* call, nvrtcResult r) {
  const char* text = nullptr;
  if (const NvrtcApi* a = nvrtc_api()) text = a->nvrtcGetErrorString(r);
  runtime_error(std::string("aj: ") + call + " failed: " + (text ? text : "NVRTC error " + std::to_string(r)));
}

}  // namespace aj::cuda

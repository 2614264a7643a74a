// Devices, streams, the stream-ordered caching allocator, pinned staging and
// launches (see cuda_runtime.hpp). None of this can run without a GPU; the
// compile-only tests cover what feeds it (render, pack, NVRTC).
#include "backends/cuda/cuda_runtime.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "arrayjit/error.hpp"
#include "backends/cuda/cuda_borrowed.hpp"
#include "backends/cpu/host_memory.hpp"
#include "base/profile.hpp"
#include "jit/cuda/cuda_source.hpp"
#include "jit/cuda/nvrtc_compile.hpp"

namespace aj::cuda {

namespace {

constexpr unsigned kThreads = kThreadsPerBlock;
constexpr std::size_t kMaxParamBytes = 4096;  // the launch parameter limit of every driver

struct Loaded {
  CUmodule mod = nullptr;
  CUfunction k = nullptr, finish = nullptr, serial = nullptr;
  int vec = 0;
  std::size_t param_bytes = 0;
};

struct Pinned {
  void* p = nullptr;
  std::size_t bytes = 0;
  CUevent done = nullptr;  // busy until this event completes
};

struct Runtime {
  std::mutex mu;
  std::vector<std::unique_ptr<DeviceInfo>> devices;
  // Per live device buffer (arrayjit's and borrowed ones), by storage: two
  // borrows of one foreign pointer are two entries.
  std::unordered_map<const Storage*, CUstream> last_stream;
  std::vector<Pinned> pinned_busy, pinned_free;
  std::unordered_map<std::string, Loaded> modules;  // (device, kernel_key) -> module
  std::unordered_map<std::uint64_t, Loaded> library_modules;  // (device, LibrarySpec::key) -> module
};

// Make `ctx` current on this thread, setting it only when another is: every
// launch, allocation, copy and free comes through here, and a set is a driver
// call of its own (six per small eval on the H200 before, with the launch,
// the allocation and the free the only others: bench/dispatch_cuda counts).
CUresult make_current(const DriverApi& d, CUcontext ctx) {
  CUcontext cur = nullptr;
  if (d.cuCtxGetCurrent && d.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx) return CUDA_SUCCESS;
  return d.cuCtxSetCurrent(ctx);
}

// Never destroyed: buffers freed during static destruction still find it.
Runtime& rt() {
  static Runtime* r = new Runtime;
  return *r;
}

thread_local std::vector<std::vector<CUstream>> t_stream_stack;
std::atomic<bool> g_any_alloc{false};

std::unique_ptr<DeviceInfo> init_device(int index) {
  auto info = std::make_unique<DeviceInfo>();
  info->index = index;
  AJ_CU(cuDeviceGet, &info->dev, index);
  AJ_CU(cuDevicePrimaryCtxRetain, &info->ctx, info->dev);
  AJ_CU(cuCtxSetCurrent, info->ctx);
  AJ_CU(cuDeviceGetAttribute, &info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, info->dev);
  AJ_CU(cuDeviceGetAttribute, &info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, info->dev);
  AJ_CU(cuDeviceGetAttribute, &info->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, info->dev);
  int pools = 0;
  AJ_CU(cuDeviceGetAttribute, &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, info->dev);
  char name[256] = {};
  AJ_CU(cuDeviceGetName, name, static_cast<int>(sizeof name - 1), info->dev);
  info->name = name;
  AJ_CU(cuDriverGetVersion, &info->driver_version);
  if (!pools) {
    runtime_error("aj: cuda:" + std::to_string(index) + " (" + info->name +
                  ") does not support stream-ordered memory pools, which arrayjit's allocator needs");
  }
  AJ_CU(cuStreamCreate, &info->default_stream, CU_STREAM_NON_BLOCKING);
  AJ_CU(cuDeviceGetDefaultMemPool, &info->pool, info->dev);
  // Keep freed memory in the pool instead of returning it at every sync.
  std::uint64_t never = ~0ull;
  AJ_CU(cuMemPoolSetAttribute, info->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &never);
  return info;
}

void release_device(Storage& s) {
  // A destructor: never throws. At process exit the driver may already be
  // shut down; then the calls fail and the memory goes with the process.
  const DriverApi* d = driver_api();
  if (!d || !s.data) return;
  const auto p = reinterpret_cast<CUdeviceptr>(s.data);
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
  {
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.last_stream.find(&s);
    if (it != r.last_stream.end()) {
      stream = it->second;
      r.last_stream.erase(it);
    }
    const auto i = static_cast<std::size_t>(s.device.index);
    if (i < r.devices.size() && r.devices[i]) ctx = r.devices[i]->ctx;
  }
  if (ctx) make_current(*d, ctx);
  d->cuMemFreeAsync(p, stream);
}

// Pinned staging buffers: reused once the copy that used them completed.
Pinned pinned_get(std::size_t bytes) {
  const DriverApi& d = require_driver();
  Runtime& r = rt();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (std::size_t i = 0; i < r.pinned_busy.size();) {
      if (d.cuEventQuery(r.pinned_busy[i].done) == CUDA_SUCCESS) {
        d.cuEventDestroy(r.pinned_busy[i].done);
        r.pinned_busy[i].done = nullptr;
        r.pinned_free.push_back(r.pinned_busy[i]);
        r.pinned_busy.erase(r.pinned_busy.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    auto best = r.pinned_free.end();
    for (auto it = r.pinned_free.begin(); it != r.pinned_free.end(); ++it) {
      if (it->bytes >= bytes && (best == r.pinned_free.end() || it->bytes < best->bytes)) best = it;
    }
    if (best != r.pinned_free.end()) {
      Pinned p = *best;
      r.pinned_free.erase(best);
      return p;
    }
  }
  Pinned p;
  p.bytes = std::max<std::size_t>(bytes, 1 << 20);
  AJ_CU(cuMemHostAlloc, &p.p, p.bytes, CU_MEMHOSTALLOC_PORTABLE);
  return p;
}

void pinned_put(Pinned p, CUstream after) {
  if (after) {
    AJ_CU(cuEventCreate, &p.done, CU_EVENT_DISABLE_TIMING);
    AJ_CU(cuEventRecord, p.done, after);
  }
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  (p.done ? r.pinned_busy : r.pinned_free).push_back(p);
}

// Compiles `src` for the device and loads its entries: aj_k always,
// aj_k_finish for reductions, aj_k_serial where `serial` says the source has one.
Loaded load_module(const DeviceInfo& info, const KernelSource& src, bool serial) {
  CompileOptions opt;
  opt.driver_version = info.driver_version;
  auto img = compile(src, info.cc_major * 10 + info.cc_minor, opt);
  Loaded m;
  AJ_CU(cuModuleLoadData, &m.mod, img->bytes.data());
  AJ_CU(cuModuleGetFunction, &m.k, m.mod, "aj_k");
  if (src.reduction) AJ_CU(cuModuleGetFunction, &m.finish, m.mod, "aj_k_finish");
  if (src.reduction && serial) AJ_CU(cuModuleGetFunction, &m.serial, m.mod, "aj_k_serial");
  m.vec = src.vec;
  m.param_bytes = src.param_bytes;
  return m;
}

// A loaded module from `cache` under `key` (with the device index mixed in),
// or `make()`'s, stored there.
template <class Key, class Make>
const Loaded& cached_module(std::unordered_map<Key, Loaded>& cache, Key key, const DeviceInfo& info, Make&& make) {
  if constexpr (std::is_same_v<Key, std::string>) {
    key.push_back(static_cast<char>(info.index));
  } else {
    key = key * 31 + static_cast<std::uint64_t>(info.index);
  }
  Runtime& r = rt();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  Loaded m = make();
  std::lock_guard<std::mutex> lock(r.mu);
  return cache.emplace(key, m).first->second;
}

const Loaded& module_for(const DeviceInfo& info, const Kernel& c) {
  return cached_module(rt().modules, kernel_key(c, {}, true), info, [&] {
    const KernelSource src = render(c);
    if (src.param_bytes > kMaxParamBytes) {
      runtime_error("aj: a fused CUDA kernel needs " + std::to_string(src.param_bytes) +
                    " bytes of launch parameters (limit " + std::to_string(kMaxParamBytes) +
                    "): too many inputs and outputs in one kernel");
    }
    return load_module(info, src, /*serial=*/true);
  });
}

const Loaded& library_module_for(const DeviceInfo& info, const LibrarySpec& spec) {
  return cached_module(rt().library_modules, spec.key(), info,
                       [&] { return load_module(info, render_library(spec), /*serial=*/false); });
}

void launch_fn(CUfunction f, std::int64_t blocks, CUstream s, std::vector<std::int64_t>& params) {
  void* args[] = {params.data()};
  AJ_CU(cuLaunchKernel, f, static_cast<unsigned>(std::max<std::int64_t>(1, blocks)), 1u, 1u, kThreads, 1u, 1u,
        0u, s, args, nullptr);
}

}  // namespace

bool any_device_alloc() { return g_any_alloc.load(std::memory_order_relaxed); }

int device_count_or_zero() {
  const DriverApi* d = driver_api();
  int n = 0;
  if (!d || d->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

const DeviceInfo& device(int index) {
  Runtime& r = rt();
  DeviceInfo* info = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (index >= 0 && static_cast<std::size_t>(index) < r.devices.size()) info = r.devices[static_cast<std::size_t>(index)].get();
  }
  if (!info) {  // first use of this device: check the index, then initialize
    int n = 0;
    AJ_CU(cuDeviceGetCount, &n);
    if (index < 0 || index >= n) {
      runtime_error("aj: no CUDA device cuda:" + std::to_string(index) + " (this machine has " +
                    std::to_string(n) + ")");
    }
    auto fresh = init_device(index);
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.devices.size() < static_cast<std::size_t>(n)) r.devices.resize(static_cast<std::size_t>(n));
    auto& slot = r.devices[static_cast<std::size_t>(index)];
    if (!slot) slot = std::move(fresh);
    info = slot.get();
  }
  if (const CUresult r = make_current(require_driver(), info->ctx); r != CUDA_SUCCESS) throw_cu("cuCtxSetCurrent", r);
  return *info;
}

CUstream stream_of(int index) {
  const auto i = static_cast<std::size_t>(index);
  if (i < t_stream_stack.size() && !t_stream_stack[i].empty()) return t_stream_stack[i].back();
  return device(index).default_stream;
}

void push_stream(int index, CUstream s) {
  const auto i = static_cast<std::size_t>(index);
  if (t_stream_stack.size() <= i) t_stream_stack.resize(i + 1);
  t_stream_stack[i].push_back(s);
}

void pop_stream(int index) {
  const auto i = static_cast<std::size_t>(index);
  if (i < t_stream_stack.size() && !t_stream_stack[i].empty()) t_stream_stack[i].pop_back();
}

std::shared_ptr<Storage> device_alloc(int index, std::size_t bytes) {
  const DriverApi& d = require_driver();
  const DeviceInfo& info = device(index);
  CUstream s = stream_of(index);
  const std::size_t request = std::max<std::size_t>(bytes, 1);
  CUdeviceptr p = 0;
  CUresult r = d.cuMemAllocFromPoolAsync(&p, request, info.pool, s);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    // Blocks freed on a stream are only reusable once that stream passed the
    // free: wait for ours and the default stream, give cached blocks back, retry.
    d.cuStreamSynchronize(s);
    d.cuStreamSynchronize(info.default_stream);
    d.cuMemPoolTrimTo(info.pool, 0);
    r = d.cuMemAllocFromPoolAsync(&p, request, info.pool, s);
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    std::uint64_t reserved = 0, used = 0;
    d.cuMemPoolGetAttribute(info.pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
    d.cuMemPoolGetAttribute(info.pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
    runtime_error("aj: out of CUDA memory on cuda:" + std::to_string(index) + " (" + info.name +
                  "): a buffer of " + std::to_string(bytes) + " bytes did not fit; arrays hold " +
                  std::to_string(used) + " bytes, the pool reserves " + std::to_string(reserved) +
                  " bytes after trimming its cache");
  }
  if (r != CUDA_SUCCESS) throw_cu("cuMemAllocFromPoolAsync", r);
  g_any_alloc = true;
  auto st = std::make_shared<Storage>();
  st->data = reinterpret_cast<void*>(p);
  st->bytes = bytes;
  st->device = Device::cuda(index);
  st->release = &release_device;
  Runtime& rtm = rt();
  std::lock_guard<std::mutex> lock(rtm.mu);
  rtm.last_stream[st.get()] = s;
  return st;
}

void use_on_stream(const Storage& s, CUstream stream) {
  CUstream prev = nullptr;
  {
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.last_stream.find(&s);
    if (it == r.last_stream.end() || it->second == stream) return;
    prev = it->second;
    it->second = stream;
  }
  CUevent ev = nullptr;
  AJ_CU(cuEventCreate, &ev, CU_EVENT_DISABLE_TIMING);
  AJ_CU(cuEventRecord, ev, prev);
  AJ_CU(cuStreamWaitEvent, stream, ev, 0u);
  require_driver().cuEventDestroy(ev);  // released once the wait no longer needs it
}

void set_last_stream(const Storage& s, CUstream stream) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  r.last_stream[&s] = stream;
}

std::optional<CUstream> take_last_stream(const Storage& s) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.last_stream.find(&s);
  if (it == r.last_stream.end()) return std::nullopt;
  const CUstream stream = it->second;
  r.last_stream.erase(it);
  return stream;
}

std::optional<CUstream> last_stream_of(const Storage& s) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.last_stream.find(&s);
  if (it == r.last_stream.end()) return std::nullopt;
  return it->second;
}

namespace {
// The profiler's record of a copy between host and device (waited for, so
// that it lasts as long as the copy).
void profile_transfer(const char* what, std::int64_t t0, std::size_t bytes, int index, CUstream s) {
  if (s) require_driver().cuStreamSynchronize(s);
  detail::prof::Event e;
  e.kind = detail::prof::Kind::transfer;
  e.start_ns = t0;
  e.dur_ns = detail::prof::now_ns() - t0;
  e.bytes = bytes;
  e.device_kind = static_cast<std::int8_t>(Device::Kind::cuda);
  e.device_index = static_cast<std::int8_t>(index);
  e.set_name(what);
  detail::prof::record(e);
}
}  // namespace

std::shared_ptr<Storage> upload(const Storage& host, int index) {
  const std::int64_t t0 = detail::prof::on() ? detail::prof::now_ns() : 0;
  device(index);
  release_finished(false);
  CUstream s = stream_of(index);
  auto dst = device_alloc(index, host.bytes);
  if (host.bytes == 0) return dst;
  Pinned pb = pinned_get(host.bytes);
  std::memcpy(pb.p, host.data, host.bytes);
  const CUresult r = require_driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst->data), pb.p,
                                                        host.bytes, s);
  pinned_put(pb, r == CUDA_SUCCESS ? s : nullptr);
  if (r != CUDA_SUCCESS) throw_cu("cuMemcpyHtoDAsync", r);
  if (t0) profile_transfer("host to device", t0, host.bytes, index, s);
  return dst;
}

std::shared_ptr<Storage> download(const Storage& dev) {
  const std::int64_t t0 = detail::prof::on() ? detail::prof::now_ns() : 0;
  const int index = dev.device.index;
  device(index);
  release_finished(false);
  CUstream s = stream_of(index);
  use_on_stream(dev, s);
  auto host = cpu::host_alloc(dev.bytes);
  if (dev.bytes == 0) return host;
  Pinned pb = pinned_get(dev.bytes);
  const DriverApi& d = require_driver();
  CUresult r = d.cuMemcpyDtoHAsync(pb.p, reinterpret_cast<CUdeviceptr>(dev.data), dev.bytes, s);
  if (r == CUDA_SUCCESS) r = d.cuStreamSynchronize(s);
  if (r == CUDA_SUCCESS) std::memcpy(host->data, pb.p, dev.bytes);
  pinned_put(pb, nullptr);
  if (r != CUDA_SUCCESS) throw_cu("cuMemcpyDtoHAsync/cuStreamSynchronize", r);
  if (t0) profile_transfer("device to host", t0, dev.bytes, index, nullptr);
  return host;
}

void launch(int index, const Kernel& k, const std::vector<const Storage*>& inputs,
            const std::vector<const Storage*>& outputs) {
  const DeviceInfo& info = device(index);
  CUstream s = stream_of(index);
  release_finished(false);
  const Kernel c = collapse_axes(k);
  if ((c.is_reduction() ? c.outer_points() : c.points()) == 0) return;  // nothing to write
  const Loaded& m = module_for(info, c);

  std::vector<std::uint64_t> ptrs;
  auto add = [&](const Storage* st) {
    if (st) use_on_stream(*st, s);
    ptrs.push_back(st ? reinterpret_cast<std::uint64_t>(st->data) : 0);
  };
  for (auto* st : inputs) add(st);
  for (auto* st : outputs) add(st);

  const LaunchShape ls = plan_launch(c, m.vec, info.sms, ptrs);
  if (ls.grid == 0) return;
  std::shared_ptr<Storage> scratch;
  if (ls.scratch_bytes) scratch = device_alloc(index, ls.scratch_bytes);
  auto p = pack_params(c, ptrs, ls, scratch ? reinterpret_cast<std::uint64_t>(scratch->data) : 0);
  launch_fn(ls.mode == LaunchShape::Mode::serial ? m.serial : m.k, ls.grid, s, p);
  if (ls.finish_grid) launch_fn(m.finish, ls.finish_grid, s, p);
  // `scratch` is freed here, stream-ordered after the finishing kernel.
}

namespace {
void use_all_on_stream(const std::vector<const Storage*>& touched, CUstream s) {
  for (const Storage* st : touched) {
    if (st) use_on_stream(*st, s);
  }
}
}  // namespace

void launch_library(int index, const LibraryLaunch& l, const std::vector<const Storage*>& touched) {
  if (l.gemm) {  // a cuBLAS call, enqueued on the same stream as a kernel would be
    device(index);
    CUstream s = stream_of(index);
    release_finished(false);
    use_all_on_stream(touched, s);
    run_gemm(*l.gemm, index, s);
    return;
  }
  if (l.grid == 0) return;  // nothing to write
  const DeviceInfo& info = device(index);
  CUstream s = stream_of(index);
  release_finished(false);
  const Loaded& m = library_module_for(info, l.spec);
  if (l.params.size() * 8 != m.param_bytes) {
    internal_error("cuda: a " + std::string(library_op_name(l.spec.op)) + " kernel's parameter block has " +
                   std::to_string(l.params.size() * 8) + " bytes, its source declares " +
                   std::to_string(m.param_bytes));
  }
  if (m.param_bytes > kMaxParamBytes) {
    runtime_error("aj: a CUDA " + std::string(library_op_name(l.spec.op)) + " of rank " +
                  std::to_string(l.spec.rank) + " needs " + std::to_string(m.param_bytes) +
                  " bytes of launch parameters (limit " + std::to_string(kMaxParamBytes) + ")");
  }
  use_all_on_stream(touched, s);
  std::vector<std::int64_t> p = l.params;
  std::shared_ptr<Storage> scratch;
  if (l.scratch_bytes) {
    scratch = device_alloc(index, l.scratch_bytes);
    p[static_cast<std::size_t>(l.scratch_slot)] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(scratch->data));
  }
  launch_fn(m.k, l.grid, s, p);
  if (l.finish_grid) launch_fn(m.finish, l.finish_grid, s, p);
  // `scratch` is freed here, stream-ordered after the finishing kernel.
}

void trim(int index) {
  const DeviceInfo& info = device(index);
  const DriverApi& d = require_driver();
  AJ_CU(cuStreamSynchronize, stream_of(index));
  release_finished(true);
  AJ_CU(cuMemPoolTrimTo, info.pool, 0);
  std::vector<Pinned> free_now;
  {
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    free_now.swap(r.pinned_free);
    // The stream was synchronized: staging buffers of finished copies go too.
    for (std::size_t i = 0; i < r.pinned_busy.size();) {
      if (d.cuEventQuery(r.pinned_busy[i].done) == CUDA_SUCCESS) {
        d.cuEventDestroy(r.pinned_busy[i].done);
        free_now.push_back(r.pinned_busy[i]);
        r.pinned_busy.erase(r.pinned_busy.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  for (auto& p : free_now) d.cuMemFreeHost(p.p);
}

void reset_runtime_for_testing() {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  r.devices.clear();
  r.modules.clear();
  r.library_modules.clear();
  r.last_stream.clear();
  r.pinned_busy.clear();
  r.pinned_free.clear();
  forget_releases_for_testing();
  t_stream_stack.clear();
  g_any_alloc = false;
}

}  // namespace aj::cuda

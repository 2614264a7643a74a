// Borrowed device memory and stream hand-offs (see cuda_borrowed.hpp).
#include "backends/cuda/cuda_borrowed.hpp"

#include <atomic>
#include <mutex>
#include <vector>

#include "arrayjit/error.hpp"

namespace aj::cuda {

namespace {

// A release callback waiting for arrayjit's last work on its buffer.
struct PendingRelease {
  CUevent done = nullptr;
  CUcontext ctx = nullptr;
  std::function<void()> give_back;
};

struct Releases {
  std::mutex mu;
  std::vector<PendingRelease> pending;
  std::atomic<std::size_t> count{0};  // pending.size(), read without the lock on hot paths
};

Releases& releases() {
  static Releases* r = new Releases;  // never destroyed, like the runtime
  return *r;
}

bool special_stream(CUstream s) {
  const auto v = reinterpret_cast<std::uintptr_t>(s);
  return v == 0 || v == 1 || v == 2;  // the default stream, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
}

// Callbacks are the caller's code: one that throws must not skip the others
// or escape a destructor.
void give_back_now(std::function<void()>& f) noexcept {
  try {
    if (f) f();
  } catch (...) {
  }
}

// An event recorded now on `on`, waited for by `waiter` (both enqueued).
void wait_on(CUstream waiter, CUstream on) {
  CUevent ev = nullptr;
  AJ_CU(cuEventCreate, &ev, CU_EVENT_DISABLE_TIMING);
  const DriverApi& d = require_driver();
  CUresult r = d.cuEventRecord(ev, on);
  if (r == CUDA_SUCCESS) r = d.cuStreamWaitEvent(waiter, ev, 0u);
  d.cuEventDestroy(ev);  // released once the wait no longer needs it
  if (r != CUDA_SUCCESS) throw_cu("cuEventRecord/cuStreamWaitEvent", r);
}

}  // namespace

std::string check_device_pointer(int index, const void* ptr, std::size_t bytes) {
  if (bytes == 0) return {};
  const DriverApi& d = require_driver();
  device(index);
  const auto p = reinterpret_cast<CUdeviceptr>(ptr);
  unsigned type = 0;
  if (d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS) {
    return "the pointer is not CUDA memory (a host pointer? borrow host memory with aj::borrow)";
  }
  if (type == CU_MEMORYTYPE_HOST) {
    return "the pointer is pinned host memory (borrow it as host memory: aj::borrow or device type CUDA-host)";
  }
  if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) {
    return "the pointer's CUDA memory type " + std::to_string(type) + " is not device memory";
  }
  int ordinal = -1;
  if (d.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == CUDA_SUCCESS &&
      type == CU_MEMORYTYPE_DEVICE && ordinal != index) {
    return "the pointer is memory of cuda:" + std::to_string(ordinal) + ", not of cuda:" + std::to_string(index);
  }
  return {};
}

std::string check_stream(int index, CUstream stream) {
  if (stream == kNoSync || special_stream(stream)) return {};
  const DeviceInfo& info = device(index);
  CUcontext ctx = nullptr;
  if (require_driver().cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS) return "the stream is not a valid CUstream";
  if (ctx != info.ctx) {
    return "the stream belongs to another CUDA context than cuda:" + std::to_string(index) + "'s primary context";
  }
  return {};
}

std::shared_ptr<BorrowedDeviceStorage> borrow_device_buffer(int index, void* data, std::size_t bytes,
                                                            CUstream producer) {
  device(index);
  const CUstream ours = stream_of(index);
  if (producer != kNoSync && producer != ours) wait_on(ours, producer);
  auto s = std::make_shared<BorrowedDeviceStorage>();
  s->data = data;
  s->bytes = bytes;
  s->device = Device::cuda(index);
  s->borrowed = true;
  set_last_stream(*s, ours);
  return s;
}

void hand_off(const Storage& s, CUstream consumer) {
  if (consumer == kNoSync) return;
  const CUstream last = last_stream_of(s).value_or(stream_of(s.device.index));
  if (last != consumer) wait_on(consumer, last);
}

// Gives `give_back` back once arrayjit's last use of `s` completed (see the header).
void release_after_last_use(const Storage& s, std::function<void()>& give_back) noexcept {
  // Called from a destructor: never throws. If the driver fails or is gone
  // (process exit), nothing of arrayjit's can still read the buffer: give it
  // back now.
  const std::optional<CUstream> last = take_last_stream(s);
  if (!give_back) return;
  const DriverApi* d = driver_api();
  if (!last || !d) return give_back_now(give_back);
  PendingRelease p;
  try {
    p.ctx = device(s.device.index).ctx;
  } catch (...) {
    return give_back_now(give_back);
  }
  if (d->cuEventCreate(&p.done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return give_back_now(give_back);
  if (d->cuEventRecord(p.done, *last) != CUDA_SUCCESS || d->cuEventQuery(p.done) == CUDA_SUCCESS) {
    d->cuEventDestroy(p.done);
    return give_back_now(give_back);
  }
  p.give_back = std::move(give_back);
  Releases& r = releases();
  std::lock_guard<std::mutex> lock(r.mu);
  r.pending.push_back(std::move(p));
  r.count = r.pending.size();
}

BorrowedDeviceStorage::~BorrowedDeviceStorage() { release_after_last_use(*this, give_back); }

void release_finished(bool wait) {
  Releases& r = releases();
  if (r.count.load(std::memory_order_relaxed) == 0) return;
  const DriverApi* d = driver_api();
  if (!d) return;
  std::vector<PendingRelease> ready;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (std::size_t i = 0; i < r.pending.size();) {
      // Waiting happens below, outside the lock: here only what is done (or,
      // with `wait`, everything) is taken.
      if (wait || d->cuEventQuery(r.pending[i].done) == CUDA_SUCCESS) {
        ready.push_back(std::move(r.pending[i]));
        r.pending.erase(r.pending.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    r.count = r.pending.size();
  }
  for (PendingRelease& p : ready) {
    if (wait) {
      d->cuCtxSetCurrent(p.ctx);
      d->cuEventSynchronize(p.done);
    }
    d->cuEventDestroy(p.done);
    give_back_now(p.give_back);
  }
}

std::size_t pending_releases() { return releases().count.load(); }

void forget_releases_for_testing() {
  Releases& r = releases();
  std::lock_guard<std::mutex> lock(r.mu);
  r.pending.clear();
  r.count = 0;
}

}  // namespace aj::cuda

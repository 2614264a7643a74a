// The CUDA runtime of arrayjit: devices (primary contexts), streams, the
// stream-ordered caching allocator, pinned staging for host<->device copies,
// and kernel launches. Sees Kernel IR and buffers (Storage), never graph nodes.
//
// Streams. Each device has a default stream the library creates
// (non-blocking); a thread may override it per device with StreamState::push
// (aj::cuda::StreamGuard). Every launch, copy and allocation of a device goes
// to its current stream. eval only enqueues; reading values synchronizes.
//
// Allocator. Device buffers come from the device's default memory pool with
// cuMemAllocFromPoolAsync, its release threshold raised to "never" so freed
// memory stays cached in the pool. Frees are stream-ordered (cuMemFreeAsync
// on the stream of the buffer's last use): a later allocation on that stream
// reuses the block at once, another stream only once the driver knows the
// free has completed (the pool's opportunistic reuse, i.e. an event shows
// the first stream is past the last use). A buffer used on a second stream
// first makes that stream wait on an event of the previous one, so the free
// on the last stream is ordered after every use. Out of memory: synchronize,
// trim the pool to zero, retry once, then throw aj::Error with the sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/cuda/cuda_api.hpp"
#include "graph/graph.hpp"
#include "graph/kernel.hpp"
#include "jit/cuda/cuda_library.hpp"

namespace aj::cuda {

struct DeviceInfo {
  int index = 0;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int cc_major = 0, cc_minor = 0, sms = 0;
  int driver_version = 0;
  CUstream default_stream = nullptr;
  CUmemoryPool pool = nullptr;
  std::string name;
};

// The device, initialized on first use (primary context retained, default
// stream created, pool configured) and made current on this thread. Throws
// aj::Error: CUDA unavailable (with the reason), or index out of range.
const DeviceInfo& device(int index);
int device_count_or_zero();
// True once a device buffer was allocated in this process.
bool any_device_alloc();

// The stream work for device `index` goes to on this thread.
CUstream stream_of(int index);
// Per-thread stack of stream overrides (StreamGuard).
void push_stream(int index, CUstream s);
void pop_stream(int index);

// A device buffer of `bytes`, allocated on the current stream.
std::shared_ptr<Storage> device_alloc(int index, std::size_t bytes);
// Note that `s` is used by work on `stream` next: waits on the previous
// stream's last use if it differs, and frees will be ordered on `stream`.
void use_on_stream(const Storage& s, CUstream stream);

// The stream of a buffer's last use (arrayjit's buffers and borrowed ones:
// see cuda_borrowed.hpp): set, taken (the entry dropped), read.
void set_last_stream(const Storage& s, CUstream stream);
std::optional<CUstream> take_last_stream(const Storage& s);
std::optional<CUstream> last_stream_of(const Storage& s);

// Copies (whole storages), ordered on the current stream of the device.
std::shared_ptr<Storage> upload(const Storage& host, int index);  // staged through pinned memory
std::shared_ptr<Storage> download(const Storage& dev);             // synchronizes the stream

// Launch kernel `k` on device `index`'s current stream. inputs/outputs: one
// storage per stream (null for index streams); offsets come from the kernel.
void launch(int index, const Kernel& k, const std::vector<const Storage*>& inputs,
            const std::vector<const Storage*>& outputs);

// Launch library kernel `l` (jit/cuda/cuda_library.hpp) on device `index`'s
// current stream. `touched`: every storage its parameter block addresses
// (each is ordered on the stream first).
void launch_library(int index, const LibraryLaunch& l, const std::vector<const Storage*>& touched);

// Give cached device blocks and pinned staging buffers back.
void trim(int index);

// Tests only: forget every device, module, buffer record and staging buffer
// without calling the driver (used around a fake driver, see cuda_api.hpp).
void reset_runtime_for_testing();

}  // namespace aj::cuda

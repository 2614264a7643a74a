// Device memory another library owns, borrowed by arrayjit (the CUDA Array
// Interface rule: the producer names its stream; DLPack imports), and the
// hand-off of arrayjit's data to a consumer's stream (DLPack exports).
//
// Invariants:
// - Nothing here synchronizes a stream, a context or the device: ordering
//   between streams is an event recorded on one and waited on by the other
//   (cuEventRecord + cuStreamWaitEvent), all enqueued, none blocking.
// - A borrowed buffer is recorded with the runtime like arrayjit's own (its
//   last-use stream, cuda_runtime.hpp): work on another stream waits for it.
// - Its release callback runs exactly once, and only after every piece of
//   arrayjit work that reads the buffer completed: when the last array using
//   it dies an event is recorded on the buffer's last-use stream; the
//   callback runs at once if the event has completed, else on the next
//   arrayjit call that polls (launches, copies, trim, Stream::synchronize,
//   aj::cuda::release_borrowed), on that call's thread. Never from a driver
//   thread (cuLaunchHostFunc): callbacks may call CUDA or take a Python GIL.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backends/cuda/cuda_runtime.hpp"

namespace aj::cuda {

// Storage of a borrowed device buffer. `give_back` is armed by the importer
// once the array exists (a failed import takes nothing and never calls it).
struct BorrowedDeviceStorage : Storage {
  std::function<void()> give_back;
  ~BorrowedDeviceStorage();
};

// Why `ptr` (of `bytes` bytes) cannot be borrowed as device memory of device
// `index` ("" when it can): not known to CUDA (a host pointer), pinned host
// memory, or memory of another device.
std::string check_device_pointer(int index, const void* ptr, std::size_t bytes);

// Why `stream` cannot be named as a producer or consumer stream of device
// `index` ("" when it can): it belongs to another context. The special
// handles nullptr, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) always can.
std::string check_stream(int index, CUstream stream);

// A borrowed buffer of device `index` at `data` (`bytes` long), read-only
// and never reused in place. Unless `producer` is kNoSync, arrayjit's
// current stream waits for the work enqueued so far on `producer` (an event
// recorded there). The buffer's last-use stream starts as that current stream.
std::shared_ptr<BorrowedDeviceStorage> borrow_device_buffer(int index, void* data, std::size_t bytes,
                                                            CUstream producer);

// `consumer` waits for the work enqueued so far that uses `s` (an event on
// its last-use stream, or on the device's current stream when unknown); no
// wait when that is `consumer` itself.
void hand_off(const Storage& s, CUstream consumer);

// Run the callbacks whose buffers' last use completed; with `wait`, first
// wait for every pending one (their events, not the device).
void release_finished(bool wait);
// How many callbacks wait for their event (tests).
std::size_t pending_releases();

// "No synchronization" as a producer/consumer stream: DLPack's -1.
inline const CUstream kNoSync = reinterpret_cast<CUstream>(static_cast<std::intptr_t>(-1));

// Tests only: drop pending callbacks and their events without calling either.
void forget_releases_for_testing();

}  // namespace aj::cuda

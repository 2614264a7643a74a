// CUDA: devices, streams and the generated kernel source.
//
// The driver (libcuda.so.1) and NVRTC are loaded at run time; nothing here
// needs them at build time. Where they are missing, available() is false,
// unavailable_reason() says which is missing, and anything that needs a GPU
// throws aj::Error (runtime) with that reason.
//
// Arrays move with Array::to(Device::cuda(i)) / to(Device::cpu()); an
// unevaluated array whose graph reads no data (a fill, arange, random) is
// computed on the target device directly. Operations on CUDA arrays run
// there: eval() enqueues kernels on the device's current stream and returns;
// reading values (to_vector, item, printing) synchronizes that stream.
// Mixing arrays of two devices in one op is a trace-time error naming both.
//
// Streams: each device has a default stream (created by arrayjit,
// non-blocking). A caller's CUstream (from PyTorch, CuPy, your own code) can
// be used instead, per scope with StreamGuard or per call with eval(arrays,
// stream). Work is ordered on that stream: no device-wide synchronization.
// A caller's stream must outlive the arrays last used on it (their memory
// is freed on it, stream-ordered).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::cuda {

// Never throw.
bool available();                 // driver loaded, at least one device
std::string unavailable_reason(); // "" when available, else e.g. "no driver (libcuda.so.1 not found: ...)"
int device_count();               // 0 when unavailable
bool compiler_available();        // NVRTC found
std::string compiler_reason();    // "" when found, else "NVRTC not found (...)"

// A CUDA stream of one device. Does not own a caller's stream.
class Stream {
 public:
  // The library's default stream of `device`.
  static Stream default_stream(int device = 0);
  // A caller's CUstream (pass the CUstream / cudaStream_t as void*); it must
  // belong to the device's primary context (what the CUDA runtime, PyTorch
  // and CuPy use). nullptr means the legacy default stream.
  static Stream wrap(void* custream, int device = 0);
  void* handle() const { return handle_; }
  int device() const { return device_; }
  void synchronize() const;

 private:
  Stream(void* h, int d) : handle_(h), device_(d) {}
  void* handle_ = nullptr;
  int device_ = 0;
};

// While alive, work for the stream's device on this thread goes to it.
// Guards nest; destroy them in reverse order.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
};

// The stream work for `device` goes to on this thread now.
Stream current_stream(int device = 0);

// Evaluate on `stream` (as under a StreamGuard); enqueues and returns.
void eval(const std::vector<Array>& arrays, const Stream& stream, Loc loc = Loc::current());

// While alive, evaluations on this thread run on `device` even where their
// inputs are host arrays (those are copied to the device for each kernel,
// results stay on the device), and host and device arrays may meet in one op.
// Used by tests to run programs written for the host on a GPU.
class DeviceScope {
 public:
  explicit DeviceScope(Device d);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Device saved_;
  bool had_;
};

// The CUDA C source of every kernel evaluating `arrays` on a GPU would run,
// in order (computes nothing; needs no GPU, driver or NVRTC). AJ_LOG=cuda
// prints each kernel's source when it is first compiled.
std::string kernel_source(const std::vector<Array>& arrays);

// Give the device's cached memory (pool and pinned staging) back.
void trim_memory(int device = 0);

// ---- device memory of other libraries (the CUDA Array Interface rule) -------
//
// A stream argument naming another library's stream is a CUstream as void*;
// nullptr, 1 and 2 are CUDA's default streams (the default, CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD), and no_sync() means "nothing to wait for".
inline void* no_sync() { return reinterpret_cast<void*>(static_cast<std::intptr_t>(-1)); }

// An array borrowing device memory another library owns (PyTorch, CuPy, a
// cudaMalloc): zero-copy, element [0, ...] at `ptr`, strides in elements
// (empty = row-major; any sign, zero allowed). The producer names the stream
// its writes to the memory were enqueued on: arrayjit's current stream for
// `device` waits on an event recorded there (no synchronization), so work
// arrayjit enqueues later sees those writes. The buffer is never written by
// arrayjit and never reused in place. `release` runs exactly once, after the
// last array using the memory died and arrayjit's work reading it completed
// (an event recorded on the buffer's last stream): at once if done, else at a
// later arrayjit CUDA call (a launch, a copy, trim_memory,
// Stream::synchronize, release_borrowed) on that call's thread; never on a
// driver thread. It may run inside an arrayjit call: it must not call
// arrayjit (giving the memory back to its owner is what it is for). Errors (aj::Error, user): null `ptr` for a nonempty shape,
// memory the driver does not know as device memory of `device` (a host
// pointer, pinned host memory, another device's memory), a stream of another
// context; nothing is taken and `release` is not called then.
Array borrow(void* ptr, DType dtype, Shape shape, std::vector<std::int64_t> strides, int device,
             void* producer_stream, std::function<void()> release = {}, Loc loc = Loc::current());

// Run the release callbacks of borrowed device memory whose arrays died
// (see borrow); with `wait`, first wait for arrayjit's work on those
// buffers (their events, nothing else).
void release_borrowed(bool wait = true);

}  // namespace aj::cuda

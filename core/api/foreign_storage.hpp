// Memory another library owns, borrowed by arrayjit until the last array using
// it dies, then handed back through the owner's callback (aj_array_from_view,
// DLPack import). Borrowed: never written, never reused in place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::detail {

// An array over `data` (the element at index [0, ...]) with `strides` in
// elements (any sign, zero allowed). `give_back` runs exactly once, when the
// storage dies; if this throws, nothing was taken and it never runs.
// `device` CPU: host-readable memory (CPU, CUDA-host). `device` CUDA: device
// memory (checked with the driver), whose producer enqueued its writes on
// `producer_stream` (a CUstream; nullptr, 1, 2: CUDA's default streams;
// (void*)-1: nothing to wait for): arrayjit's stream waits on an event
// recorded there, and give_back runs after arrayjit's last work on it
// completed (backends/cuda/cuda_borrowed.hpp). Errors name `fn` and `loc`.
Array import_borrowed(void* data, DType dtype, Shape shape, std::vector<std::int64_t> strides,
                      std::function<void()> give_back, const char* fn, const Loc& loc,
                      Device device = Device::cpu(), void* producer_stream = nullptr);

}  // namespace aj::detail

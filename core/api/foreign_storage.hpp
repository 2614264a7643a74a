// Memory another library owns, borrowed by arrayjit until the last array using
// it dies, then handed back through the owner's callback (aj_array_from_view,
// DLPack import). Borrowed: never written, never reused in place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::detail {

// Where a foreign layout's elements lie, relative to `data` (the element at
// index [0, ...]): the lowest element offset `lo` (<= 0; negative strides
// reach below data) and the bytes from that element to one past the highest.
struct ForeignSpan {
  std::int64_t lo = 0;
  std::size_t bytes = 0;
};

// The one check every import of foreign memory goes through (aj::borrow,
// aj::cuda::borrow, the C views, DLPack): rank at most trace::kMaxRank, one
// stride per axis (in elements, any sign), an element count within int64 and
// 2^62 bytes, null data only for zero elements, and an element span that
// overflows nothing, stays within 2^62 bytes and does not leave the address
// space from `data`. A user error naming `fn` and `loc` otherwise.
ForeignSpan check_foreign_layout(const void* data, DType dtype, const Shape& shape,
                                 const std::vector<std::int64_t>& strides, const char* fn, const Loc& loc);

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

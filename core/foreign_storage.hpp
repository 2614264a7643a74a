// Memory another library owns, borrowed by arrayjit until the last array using
// it dies, then handed back through the owner's callback (aj_array_from_view,
// DLPack import). Borrowed: never written, never reused in place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::c_api {

// An array over `data` (the element at index [0, ...]) with `strides` in
// elements (any sign, zero allowed). `give_back` runs exactly once, when the
// storage dies; if this throws, nothing was taken and it never runs.
// Host-readable memory only (CPU, CUDA-host). Errors name `fn` and `loc`.
Array import_borrowed(void* data, DType dtype, Shape shape, std::vector<std::int64_t> strides,
                      std::function<void()> give_back, const char* fn, const Loc& loc);

// PEP 3118 struct format of a dtype ("?", "i", "q", "f", "d").
const char* buffer_format(DType t);

}  // namespace aj::c_api

// How indexing ops read an index (docs/semantics.md, "Indexing"): the one
// definition the reference interpreter, the library steps and the debug
// checks use; lowering (opt/lower.cpp) emits the same arithmetic into kernels.
//
//  - An index i of an axis of extent n means i + n when -n <= i < 0
//    (NumPy's count from the end).
//  - Gathers (take, take_along_axis) clamp what is still outside [0, n) to
//    0 or n - 1: they never read outside the array.
//  - Scatters (scatter, scatter_add and their along-axis forms) drop an
//    update whose index is outside [-n, n): they never write outside it.
//  - With debug checks on (AJ_DEBUG=1, aj::set_debug) an index outside
//    [-n, n) is an error naming the public op, the index and the caller's
//    line (core/api/indexing.cpp evaluates and checks the indices when the op
//    is traced).
#pragma once

#include <cstdint>

namespace aj::idx {

inline bool in_range(std::int64_t i, std::int64_t n) { return i >= -n && i < n; }

inline std::int64_t gather(std::int64_t i, std::int64_t n) {
  if (i < 0) i += n;
  return i < 0 ? 0 : i >= n ? n - 1 : i;
}

// The position written, or -1 when the update is dropped.
inline std::int64_t scatter(std::int64_t i, std::int64_t n) {
  if (!in_range(i, n)) return -1;
  return i < 0 ? i + n : i;
}

}  // namespace aj::idx

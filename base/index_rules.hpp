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
#include <optional>

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

// One axis of a slice as given (start, stop: NumPy's, either omitted or
// counted from the end) normalized against the axis's extent n: the first
// index, the element count and the step stored (1 when at most one element
// is taken). `error`: "start" or "stop" when that bound lies outside the
// axis (the value in `bad`), else null. step != 0.
struct SliceAxis {
  std::int64_t start = 0, len = 0, step = 1;
  const char* error = nullptr;
  std::int64_t bad = 0;
};

inline SliceAxis slice_axis(std::optional<std::int64_t> start_in, std::optional<std::int64_t> stop_in, std::int64_t step,
                            std::int64_t n) {
  SliceAxis r;
  std::int64_t start, stop;
  // |step| as unsigned: -INT64_MIN does not fit int64. The distance walked
  // is at most n + 1, so ceil(distance / |step|) cannot overflow.
  const std::uint64_t abs_step = step > 0 ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
  auto count = [&](std::int64_t distance) {
    return distance > 0 ? static_cast<std::int64_t>(1 + static_cast<std::uint64_t>(distance - 1) / abs_step)
                        : std::int64_t{0};
  };
  auto fail = [&](const char* what, std::int64_t v) {
    r.error = what;
    r.bad = v;
    return r;
  };
  if (step > 0) {
    start = start_in.value_or(0);
    stop = stop_in.value_or(n);
    if (start < -n || start > n) return fail("start", start);
    if (stop < -n || stop > n) return fail("stop", stop);
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    r.len = count(stop - start);
  } else {
    start = start_in.value_or(n - 1);
    if (start_in && (start < -n || start >= n)) return fail("start", start);
    if (start < 0) start += n;
    if (stop_in) {
      stop = *stop_in;
      if (stop < -n || stop >= n) return fail("stop", stop);
      if (stop < 0) stop += n;
    } else {
      stop = -1;  // one before the first element
    }
    r.len = count(start - stop);
  }
  r.start = r.len == 0 ? 0 : start;
  // With at most one element the step is never taken: 1, so that no later
  // stride arithmetic multiplies by a huge step.
  r.step = r.len <= 1 ? 1 : step;
  return r;
}

}  // namespace aj::idx

// Where a foreign caller (C, Python through the C API) says its op calls are
// made. C++ ops record std::source_location::current() at the user's call;
// for a caller through the C API that would be a line of core/c/, so the C
// API takes the caller's own file and line (aj_set_caller) and, while one of
// its calls runs on this thread, nodes made and errors raised name that line
// instead of core/c/'s (Graph::add, loc_str). C++ callers never see it: the override is
// only active inside the C boundary (CallerScope, in c_call).
#pragma once

#include <cstdint>

#include "arrayjit/error.hpp"

namespace aj::detail {

// The location a C caller set for this thread (an interned, immortal
// std::source_location whose file and function text are copies), or null.
// Set and clear with set_caller_loc; `file` null clears.
void set_caller_loc(const char* file, std::int64_t line);

// The override in effect now: the caller's location inside a C API call that
// has one set, else null.
const Loc* caller_loc_override() noexcept;

// Marks a C API call running on this thread (nests).
class CallerScope {
 public:
  CallerScope() noexcept;
  ~CallerScope();
  CallerScope(const CallerScope&) = delete;
  CallerScope& operator=(const CallerScope&) = delete;
};

// loc, or the caller's location when one is in effect and loc is a line of
// the C boundary itself (core/c/) or empty: a location already recorded (a node's,
// made at an earlier call) stays what it was.
const Loc& effective_loc(const Loc& loc) noexcept;

}  // namespace aj::detail

// Between the C API's aj_array handles (arrayjit/arrayjit.h) and aj::Array,
// for C++ code that talks to C callers.
#pragma once

#include "arrayjit/array.hpp"
#include "arrayjit/arrayjit.h"

namespace aj {
// A new C handle to `a` (one more reference to the array); the C side
// releases it with aj_array_release.
aj_array to_c(Array a);
// The array a live C handle stands for (a weak scalar gives its rank-0
// array). A null, released or unknown handle is an aj::Error (user).
Array from_c(aj_array h, Loc loc = Loc::current());
}  // namespace aj

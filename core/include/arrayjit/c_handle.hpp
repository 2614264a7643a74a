// Between the C API's aj_array handles (arrayjit/arrayjit.h) and aj::Array,
// for C++ code that talks to C callers.
#pragma once

#include <utility>

#include "arrayjit/array.hpp"
#include "arrayjit/arrayjit.h"

// One C handle: one aj::Array (one reference to the array).
struct aj_array {
  aj::Array array;
};

namespace aj {
// A new C handle to `a`; the C side releases it with aj_array_release.
inline aj_array* to_c(Array a) { return new aj_array{std::move(a)}; }
inline const Array& from_c(const aj_array* a) { return a->array; }
}  // namespace aj

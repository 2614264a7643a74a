// What the random generators check of their parameters (core/api/creation.cpp
// defines it; core/api/random_keys.cpp's keyed generators use it too).
#pragma once

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"

namespace aj::random {
// v must be finite in `dtype` (an infinite parameter gives NaN values).
void check_finite(const char* op, const char* what, double v, DType dtype, const Loc& loc);
}  // namespace aj::random

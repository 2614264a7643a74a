// What the random generators check of their parameters (core/api/creation.cpp
// defines it; core/api/random_keys.cpp's keyed generators use it too).
#pragma once

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"

namespace aj::random {
// The parameters of uniform (lo <= hi, both and the range finite in dtype),
// normal (finite mean, stddev >= 0) and bernoulli (0 <= p <= 1): an error
// naming `op` otherwise (an infinite parameter would give NaN values).
void check_uniform(const char* op, double lo, double hi, DType dtype, const Loc& loc);
void check_normal(const char* op, double mean, double stddev, DType dtype, const Loc& loc);
void check_probability(const char* op, double p, const Loc& loc);
}  // namespace aj::random

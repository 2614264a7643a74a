// NumPy's repr of an array, for bindings whose users compare with NumPy (the
// C API's AJ_FORMAT_NUMPY_REPR, the Python package's repr): NumPy's dtype
// names, no dtype for float64, int64 and bool, an empty array's shape. The
// C++ operator<< (print.hpp) names arrayjit's dtype and always the shape.
#pragma once

#include <string>

#include "arrayjit/dtype.hpp"

namespace aj {
class Array;
std::string numpy_repr(const Array& a);  // evaluates a
std::string numpy_dtype_name(DType t);    // "float32", "int64", "bool", "bfloat16"
}  // namespace aj

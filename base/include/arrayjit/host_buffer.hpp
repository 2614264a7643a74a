// A buffer in host memory as a host callback sees it (arrayjit/host_callback.hpp):
// where element [0, 0, ...] is, its dtype and shape, and its strides in
// elements (inputs: any, as the array is laid out; outputs: row-major,
// contiguous, to be filled).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"

namespace aj {

struct HostBuffer {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::int64_t> strides;

  // (Inline, so a loop `i < b.numel()` costs nothing per iteration.)
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
  bool contiguous() const {
    std::int64_t acc = 1;
    for (int d = shape.ndim(); d-- > 0;) {
      if (shape[d] != 1 && strides[static_cast<std::size_t>(d)] != acc) return false;
      acc *= shape[d];
    }
    return true;
  }
  // The data as T* (T must be the dtype's C++ type: float for f32, ...).
  template <class T>
  T* as() const {
    if (dtype != dtype_of<T>) {
      throw Error(Error::Kind::user, std::string("HostBuffer::as: the buffer holds ") + dtype_name(dtype));
    }
    return static_cast<T*>(data);
  }
  // Element at a row-major flat index (any strides).
  template <class T>
  T& at(std::int64_t flat) const {
    std::int64_t off = 0;
    for (int d = shape.ndim(); d-- > 0;) {
      const std::int64_t e = shape[d];
      off += (flat % e) * strides[static_cast<std::size_t>(d)];
      flat /= e;
    }
    return as<T>()[off];
  }
};

}  // namespace aj

// A row-major walk over a shape that keeps one running element offset per
// strided operand: what the reference interpreter uses to
// read and write views without index arithmetic per element.
#pragma once

#include <cstdint>
#include <vector>

#include "arrayjit/dtype.hpp"

namespace aj {

class StridedWalk {
 public:
  // The walk keeps references to `shape` and to each strides vector.
  StridedWalk(const Shape& shape, std::vector<const std::vector<std::int64_t>*> strides,
              std::vector<std::int64_t> offsets)
      : shape_(shape), strides_(std::move(strides)), off_(std::move(offsets)),
        idx_(static_cast<std::size_t>(shape.ndim()), 0) {}
  std::int64_t offset(std::size_t k) const { return off_[k]; }
  const std::vector<std::int64_t>& index() const { return idx_; }
  void next() {
    for (int d = shape_.ndim() - 1; d >= 0; --d) {
      auto du = static_cast<std::size_t>(d);
      for (std::size_t k = 0; k < off_.size(); ++k) off_[k] += (*strides_[k])[du];
      if (++idx_[du] < shape_[d]) return;
      for (std::size_t k = 0; k < off_.size(); ++k) off_[k] -= (*strides_[k])[du] * shape_[d];
      idx_[du] = 0;
    }
  }

 private:
  const Shape& shape_;
  std::vector<const std::vector<std::int64_t>*> strides_;
  std::vector<std::int64_t> off_;
  std::vector<std::int64_t> idx_;
};

}  // namespace aj

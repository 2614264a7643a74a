// Op::Conv's geometry and result shape (graph/library.hpp): one rule for
// tracing, verification, the extent templates and every backend.
#include "graph/library.hpp"

namespace aj {

std::vector<std::int64_t> ConvGeometry::pack() const {
  std::vector<std::int64_t> v;
  for (const auto* part : {&stride, &lo, &hi, &dilation}) v.insert(v.end(), part->begin(), part->end());
  return v;
}

bool ConvGeometry::unpack(const std::vector<std::int64_t>& ints) {
  if (ints.empty() || ints.size() % 4 != 0 || ints.size() > 12) return false;
  const auto d = static_cast<std::ptrdiff_t>(ints.size() / 4);
  stride.assign(ints.begin(), ints.begin() + d);
  lo.assign(ints.begin() + d, ints.begin() + 2 * d);
  hi.assign(ints.begin() + 2 * d, ints.begin() + 3 * d);
  dilation.assign(ints.begin() + 3 * d, ints.end());
  for (std::ptrdiff_t i = 0; i < d; ++i) {
    if (stride[static_cast<std::size_t>(i)] < 1 || dilation[static_cast<std::size_t>(i)] < 1) return false;
  }
  return true;
}

std::int64_t conv_out_extent(std::int64_t e, std::int64_t k, std::int64_t stride, std::int64_t lo, std::int64_t hi,
                             std::int64_t dilation) {
  const std::int64_t span = (k - 1) * dilation + 1, room = e + lo + hi - span;
  return k < 1 || room < 0 ? 0 : room / stride + 1;
}

Shape conv_shape(const Shape& x, const Shape& w, const ConvGeometry& geo) {
  std::vector<std::int64_t> d{x[0], w[0]};
  for (std::size_t i = 0; i < geo.dims(); ++i) {
    const int a = static_cast<int>(i) + 2;
    d.push_back(conv_out_extent(x[a], w[a], geo.stride[i], geo.lo[i], geo.hi[i], geo.dilation[i]));
  }
  return Shape(std::move(d));
}

}  // namespace aj

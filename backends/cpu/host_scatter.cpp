#include "backends/cpu/host_scatter.hpp"

#include <cstring>
#include <type_traits>

#include "base/index_rules.hpp"
#include "base/semantics.hpp"
#include "graph/graph.hpp"
#include "graph/strided_walk.hpp"

namespace aj::cpu {

namespace {

template <class T, class I>
void scatter_typed(const LibraryCall& c, const std::vector<const void*>& in, T* out) {
  const LibraryOperand &ix = c.inputs[1], &up = c.inputs[2];
  const auto axis = static_cast<std::size_t>(c.axis);
  const std::int64_t extent = c.shape[axis];
  const I* idx = static_cast<const I*>(in[1]);
  const T* u = static_cast<const T*>(in[2]);
  const bool add = c.op == Op::ScatterAdd;
  // The walk over the updates keeps the result's offset with 0 on the axis.
  std::vector<std::int64_t> os = contiguous_strides(Shape(c.shape));
  const std::int64_t axis_stride = os[axis];
  os[axis] = 0;
  const Shape shape(up.shape);
  if (shape.numel() == 0) return;
  // Row by row over the last axis (one walk step per row, not per element).
  const std::size_t last = up.shape.size() - 1;
  const std::int64_t row = up.shape.empty() ? 1 : up.shape[last];
  std::vector<std::int64_t> rows_shape = up.shape;
  if (!rows_shape.empty()) rows_shape[last] = 1;
  const Shape rs(rows_shape);
  const std::int64_t so = up.shape.empty() ? 0 : os[last], si = up.shape.empty() ? 0 : ix.strides[last],
                     su = up.shape.empty() ? 0 : up.strides[last];
  StridedWalk w(rs, {&os, &ix.strides, &up.strides}, {0, ix.offset, up.offset});
  for (std::int64_t r = rs.numel(); r > 0; --r, w.next()) {
    std::int64_t o = w.offset(0), i = w.offset(1), v = w.offset(2);
    for (std::int64_t e = 0; e < row; ++e, o += so, i += si, v += su) {
      const std::int64_t at = idx::scatter(static_cast<std::int64_t>(idx[i]), extent);
      if (at < 0) continue;
      T& dst = out[o + at * axis_stride];
      if (!add) dst = u[v];
      else if constexpr (std::is_same_v<T, bool>) dst = dst || u[v];
      else dst = sem::binary(Op::Add, dst, u[v]);
    }
  }
}

}  // namespace

void scatter(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const LibraryOperand& a = c.inputs[0];
  sem::visit_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    if (in[0] != out) {  // not donated: start from a copy of the array
      const Shape shape(a.shape);
      const auto cs = contiguous_strides(shape);
      const T* src = static_cast<const T*>(in[0]);
      StridedWalk w(shape, {&a.strides, &cs}, {a.offset, 0});
      for (std::int64_t k = shape.numel(); k > 0; --k, w.next()) o[w.offset(1)] = src[w.offset(0)];
    }
    if (c.inputs[1].dtype == DType::i32) scatter_typed<T, std::int32_t>(c, in, o);
    else scatter_typed<T, std::int64_t>(c, in, o);
  });
}

}  // namespace aj::cpu

#include "backends/cpu/host_scatter.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/index_rules.hpp"
#include "base/semantics.hpp"  // visit_dtype
#include "graph/graph.hpp"
#include "graph/strided_walk.hpp"

namespace aj::cpu {

namespace {

// a + b as sem::binary(Op::Add) computes it (wrapping integers), or `or`
// for bool; inline so the row loops below vectorize.
template <class T>
T add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else if constexpr (sem::is_half_type<T>) {
    return sem::binary(Op::Add, a, b);  // in f32, rounded once
  } else {
    return a + b;
  }
}

// One row of updates at one index: dst[e * so] (+)= u[e * su].
// (The result never overlaps the updates: __restrict lets the compiler
// vectorize the contiguous case.)
template <class T>
[[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void apply_row(T* __restrict dst, std::int64_t so, const T* __restrict u, std::int64_t su, std::int64_t n,
               bool add_op) {
  if (so == 1 && su == 1) {
    if (add_op) {
#pragma GCC ivdep
      for (std::int64_t e = 0; e < n; ++e) dst[e] = add(dst[e], u[e]);
    } else {
      std::memcpy(dst, u, static_cast<std::size_t>(n) * sizeof(T));
    }
    return;
  }
  for (std::int64_t e = 0; e < n; ++e) dst[e * so] = add_op ? add(dst[e * so], u[e * su]) : u[e * su];
}

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
    if (si == 0 && last != axis) {  // one index for the whole row (take-shaped updates)
      const std::int64_t at = idx::scatter(static_cast<std::int64_t>(idx[i]), extent);
      if (at >= 0) apply_row(out + o + at * axis_stride, so, u + v, su, row, add);
      continue;
    }
    for (std::int64_t e = 0; e < row; ++e, o += so, i += si, v += su) {
      const std::int64_t at = idx::scatter(static_cast<std::int64_t>(idx[i]), extent);
      if (at < 0) continue;
      T& dst = out[o + at * axis_stride];
      dst = add ? cpu::add(dst, u[v]) : u[v];
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
      const std::int64_t total = shape.numel();
      const T* src = static_cast<const T*>(in[0]);
      bool fill = true;
      for (auto st : a.strides) fill &= st == 0;
      if (fill && total > 0) {  // zeros(...) and other fills
        const T v = src[a.offset];
        T zero{};
        if (std::memcmp(&v, &zero, sizeof(T)) == 0) std::memset(o, 0, static_cast<std::size_t>(total) * sizeof(T));
        else std::fill(o, o + total, v);
      } else if (a.offset == 0 && is_contiguous(shape, a.strides)) {
        std::memcpy(o, src, static_cast<std::size_t>(total) * sizeof(T));
      } else {
        const auto cs = contiguous_strides(shape);
        StridedWalk w(shape, {&a.strides, &cs}, {a.offset, 0});
        for (std::int64_t k = total; k > 0; --k, w.next()) o[w.offset(1)] = src[w.offset(0)];
      }
    }
    if (c.inputs[1].dtype == DType::i32) scatter_typed<T, std::int32_t>(c, in, o);
    else scatter_typed<T, std::int64_t>(c, in, o);
  });
}

}  // namespace aj::cpu

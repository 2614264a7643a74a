#include "backends/cpu/host_scatter.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backends/cpu/isa.hpp"
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

// dst[0, n) (+)= u[0, n), contiguous: the loop every scatter_add row of a
// contiguous array runs (an embedding gradient's), in a variant for the
// CPU's level (isa.hpp). The result never overlaps the updates: __restrict
// lets the compiler vectorize.
template <class T>
[[gnu::always_inline]] inline void add_row_body(T* __restrict dst, const T* __restrict u, std::int64_t n) {
#pragma GCC ivdep
  for (std::int64_t e = 0; e < n; ++e) dst[e] = add(dst[e], u[e]);
}
template <class T>
[[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void add_row_baseline(
    T* __restrict dst, const T* __restrict u, std::int64_t n) {
  add_row_body(dst, u, n);
}
template <class T>
AJ_TARGET_AVX2 [[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void add_row_avx2(
    T* __restrict dst, const T* __restrict u, std::int64_t n) {
  add_row_body(dst, u, n);
}
template <class T>
AJ_TARGET_AVX512 [[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void add_row_avx512(
    T* __restrict dst, const T* __restrict u, std::int64_t n) {
  add_row_body(dst, u, n);
}

template <class T>
using AddRow = void (*)(T* __restrict, const T* __restrict, std::int64_t);

// The variant for this CPU's level (halves: a conversion per element, no
// vector form to gain).
template <class T>
AddRow<T> add_row_for_level() {
  if constexpr (!sem::is_half_type<T>) {
    switch (isa_variant()) {
      case 2: return &add_row_avx512<T>;
      case 1: return &add_row_avx2<T>;
      default: break;
    }
  }
  return &add_row_baseline<T>;
}

// One row of updates at one index: dst[e * so] (+)= u[e * su].
template <class T>
void apply_row(T* __restrict dst, std::int64_t so, const T* __restrict u, std::int64_t su, std::int64_t n,
               bool add_op, AddRow<T> add_row) {
  if (so == 1 && su == 1) {
    if (add_op) {
      add_row(dst, u, n);
    } else {
      std::memcpy(dst, u, static_cast<std::size_t>(n) * sizeof(T));
    }
    return;
  }
  for (std::int64_t e = 0; e < n; ++e) dst[e * so] = add_op ? add(dst[e * so], u[e * su]) : u[e * su];
}

// Rows of updates at one index each into a fill: the embedding gradient's
// shape, scatter_add(zeros([V, D]), ids[N], g[N, D], 0). Each result row is
// written whole where an index first reaches it (the fill's value (+) the
// row, or the row), added to (or overwritten) where one reaches it again,
// and the rows no index reached take the fill after: one pass over the
// result, where filling it and then reading back every row reached were two.
// The same values as filling first (fill + u is the first add either way),
// rows taken in order.
template <class T, class I>
[[gnu::always_inline]] inline void rows_into_fill_body(T* __restrict out, T fill, const I* idx, std::int64_t is,
                                                        const T* __restrict u, std::int64_t us, std::int64_t n,
                                                        std::int64_t extent, std::int64_t row, bool add_op,
                                                        std::uint8_t* __restrict seen) {
  std::memset(seen, 0, static_cast<std::size_t>(extent));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t at = idx::scatter(static_cast<std::int64_t>(idx[r * is]), extent);
    if (at < 0) continue;
    T* __restrict dst = out + at * row;
    const T* __restrict src = u + r * us;
    if (!add_op) {
      std::memcpy(dst, src, static_cast<std::size_t>(row) * sizeof(T));
    } else if (seen[at]) {
#pragma GCC ivdep
      for (std::int64_t e = 0; e < row; ++e) dst[e] = add(dst[e], src[e]);
    } else {
#pragma GCC ivdep
      for (std::int64_t e = 0; e < row; ++e) dst[e] = add(fill, src[e]);
    }
    seen[at] = 1;
  }
  T zero{};
  const bool zeros = std::memcmp(&fill, &zero, sizeof(T)) == 0;
  for (std::int64_t a = 0; a < extent;) {  // the rows no index reached, a run at a time
    if (seen[a]) {
      ++a;
      continue;
    }
    std::int64_t b = a + 1;
    while (b < extent && !seen[b]) ++b;
    if (zeros) std::memset(out + a * row, 0, static_cast<std::size_t>((b - a) * row) * sizeof(T));
    else std::fill(out + a * row, out + b * row, fill);
    a = b;
  }
}
#define AJ_ROWS_INTO_FILL_ARGS                                                                                  \
  T *__restrict out, T fill, const I *idx, std::int64_t is, const T *__restrict u, std::int64_t us, std::int64_t n, \
      std::int64_t extent, std::int64_t row, bool add_op, std::uint8_t *__restrict seen
template <class T, class I>
[[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void rows_into_fill_baseline(
    AJ_ROWS_INTO_FILL_ARGS) {
  rows_into_fill_body(out, fill, idx, is, u, us, n, extent, row, add_op, seen);
}
template <class T, class I>
AJ_TARGET_AVX2 [[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void rows_into_fill_avx2(
    AJ_ROWS_INTO_FILL_ARGS) {
  rows_into_fill_body(out, fill, idx, is, u, us, n, extent, row, add_op, seen);
}
template <class T, class I>
AJ_TARGET_AVX512 [[gnu::optimize("tree-loop-vectorize", "vect-cost-model=dynamic")]] void rows_into_fill_avx512(
    AJ_ROWS_INTO_FILL_ARGS) {
  rows_into_fill_body(out, fill, idx, is, u, us, n, extent, row, add_op, seen);
}
#undef AJ_ROWS_INTO_FILL_ARGS

// Whether the call has that shape: a 2-D result scattered along axis 0,
// updates of whole contiguous rows, one index per row.
bool rows_into_fill_shape(const LibraryCall& c) {
  const LibraryOperand &ix = c.inputs[1], &up = c.inputs[2];
  return c.shape.size() == 2 && c.axis == 0 && c.shape[1] > 0 && up.shape.size() == 2 &&
         up.shape[1] == c.shape[1] && (up.shape[1] == 1 || up.strides[1] == 1) && ix.strides.size() == 2 &&
         ix.strides[1] == 0;
}

template <class T, class I>
void rows_into_fill(const LibraryCall& c, const std::vector<const void*>& in, T fill, T* out) {
  const LibraryOperand &ix = c.inputs[1], &up = c.inputs[2];
  thread_local std::vector<std::uint8_t> seen;  // grows once; no allocation per call after
  if (seen.size() < static_cast<std::size_t>(c.shape[0])) seen.resize(static_cast<std::size_t>(c.shape[0]));
  const I* idx = static_cast<const I*>(in[1]) + ix.offset;
  const T* u = static_cast<const T*>(in[2]) + up.offset;
  auto run = &rows_into_fill_baseline<T, I>;
  if constexpr (!sem::is_half_type<T>) {  // (halves: a conversion per element, no vector form to gain)
    switch (isa_variant()) {
      case 2: run = &rows_into_fill_avx512<T, I>; break;
      case 1: run = &rows_into_fill_avx2<T, I>; break;
      default: break;
    }
  }
  run(out, fill, idx, ix.strides[0], u, up.strides[0], up.shape[0], c.shape[0], c.shape[1], c.op == Op::ScatterAdd,
      seen.data());
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
  const AddRow<T> add_row = add_row_for_level<T>();
  // Rows along one axis only (an embedding gradient: [batch, dim] rows at
  // ids[batch]): walked by its strides, without the general walk's
  // per-row bookkeeping.
  int row_axis = -1, row_axes = 0;
  for (std::size_t d = 0; d < rows_shape.size(); ++d) {
    if (rows_shape[d] != 1) row_axis = static_cast<int>(d), ++row_axes;
  }
  if (row_axes == 1 && si == 0 && last != axis) {
    const auto d = static_cast<std::size_t>(row_axis);
    const std::int64_t n = rows_shape[d], os_r = os[d], is_r = ix.strides[d], us_r = up.strides[d];
    std::int64_t o = 0, i = ix.offset, v = up.offset;
    for (std::int64_t r = 0; r < n; ++r, o += os_r, i += is_r, v += us_r) {
      const std::int64_t at = idx::scatter(static_cast<std::int64_t>(idx[i]), extent);
      if (at >= 0) apply_row(out + o + at * axis_stride, so, u + v, su, row, add, add_row);
    }
    return;
  }
  StridedWalk w(rs, {&os, &ix.strides, &up.strides}, {0, ix.offset, up.offset});
  for (std::int64_t r = rs.numel(); r > 0; --r, w.next()) {
    std::int64_t o = w.offset(0), i = w.offset(1), v = w.offset(2);
    if (si == 0 && last != axis) {  // one index for the whole row (take-shaped updates)
      const std::int64_t at = idx::scatter(static_cast<std::int64_t>(idx[i]), extent);
      if (at >= 0) apply_row(out + o + at * axis_stride, so, u + v, su, row, add, add_row);
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
      if (fill && total > 0 && rows_into_fill_shape(c)) {  // an embedding gradient: one pass
        if (c.inputs[1].dtype == DType::i32) rows_into_fill<T, std::int32_t>(c, in, src[a.offset], o);
        else rows_into_fill<T, std::int64_t>(c, in, src[a.offset], o);
        return;
      }
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

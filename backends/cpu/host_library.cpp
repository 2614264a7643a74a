#include "backends/cpu/host_library.hpp"

#include <Eigen/Core>
#include <memory>
#include <string>

#include "backends/cpu/host_memory.hpp"
#include "base/semantics.hpp"
#include "graph/graph.hpp"

namespace aj::cpu {

namespace {

using namespace aj::sem;

// Row-major walk over `shape`, one running element offset per operand.
class Walk {
 public:
  Walk(const std::vector<std::int64_t>& shape, std::vector<std::vector<std::int64_t>> strides,
       std::vector<std::int64_t> offsets)
      : shape_(shape), strides_(std::move(strides)), off_(std::move(offsets)), idx_(shape.size(), 0) {}
  std::int64_t offset(std::size_t k) const { return off_[k]; }
  std::int64_t index(std::size_t axis) const { return idx_[axis]; }
  void next() {
    for (std::size_t d = shape_.size(); d-- > 0;) {
      for (std::size_t k = 0; k < off_.size(); ++k) off_[k] += strides_[k][d];
      if (++idx_[d] < shape_[d]) return;
      for (std::size_t k = 0; k < off_.size(); ++k) off_[k] -= strides_[k][d] * shape_[d];
      idx_[d] = 0;
    }
  }

 private:
  const std::vector<std::int64_t>& shape_;
  std::vector<std::vector<std::int64_t>> strides_;
  std::vector<std::int64_t> off_;
  std::vector<std::int64_t> idx_;
};

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

void concat(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const auto axis = static_cast<std::size_t>(c.axis);
  const auto out_strides = contiguous_strides(Shape(c.shape));
  std::int64_t base = 0;  // where the current piece starts along the axis
  visit_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      const LibraryOperand& op = c.inputs[k];
      const T* src = static_cast<const T*>(in[k]);
      Walk w(op.shape, {op.strides, out_strides}, {op.offset, base * out_strides[axis]});
      for (std::int64_t i = numel(op.shape); i > 0; --i, w.next()) o[w.offset(1)] = src[w.offset(0)];
      base += op.shape[axis];
    }
  });
}

void arg_reduce(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const LibraryOperand& src = c.inputs[0];
  const auto axis = static_cast<std::size_t>(c.axis);
  // The result's offsets as the input is walked: contiguous, 0 on the axis.
  std::vector<std::int64_t> out_strides(src.shape.size(), 0);
  const auto cs = contiguous_strides(Shape(c.shape));
  for (std::size_t d = 0, j = 0; d < src.shape.size(); ++d) {
    if (d != axis) out_strides[d] = cs[j++];
  }
  auto* o = static_cast<std::int64_t*>(out);
  const std::int64_t total_out = numel(c.shape);
  visit_dtype(src.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in[0]);
    std::unique_ptr<T[]> best(new T[static_cast<std::size_t>(total_out)]());
    Walk w(src.shape, {src.strides, out_strides}, {src.offset, 0});
    for (std::int64_t i = numel(src.shape); i > 0; --i, w.next()) {
      const T v = x[w.offset(0)];
      const auto r = static_cast<std::size_t>(w.offset(1));
      if (w.index(axis) == 0 || arg_better(c.op, v, best[r])) {
        best[r] = v;
        o[r] = w.index(axis);
      }
    }
  });
}

// A contiguous copy of a strided operand (matmul reads packed matrices).
std::shared_ptr<Storage> packed(const LibraryOperand& op, const void* data) {
  auto s = host_alloc(static_cast<std::size_t>(numel(op.shape)) * itemsize(op.dtype));
  visit_dtype(op.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(data);
    T* dst = static_cast<T*>(s->data);
    Walk w(op.shape, {op.strides}, {op.offset});
    for (std::int64_t i = 0, n = numel(op.shape); i < n; ++i, w.next()) dst[i] = src[w.offset(0)];
  });
  return s;
}

void matmul(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const std::size_t nd = c.shape.size();
  const std::int64_t rows = c.shape[nd - 2], cols = c.shape[nd - 1], inner = c.inputs[0].shape[nd - 1];
  const auto as = packed(c.inputs[0], in[0]), bs = packed(c.inputs[1], in[1]);
  const std::int64_t batches = rows * cols == 0 ? 0 : numel(c.shape) / (rows * cols);
  visit_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* A = static_cast<const T*>(as->data);
    const T* B = static_cast<const T*>(bs->data);
    T* C = static_cast<T*>(out);
    for (std::int64_t bi = 0; bi < batches; ++bi) {
      const T* Ab = A + bi * rows * inner;
      const T* Bb = B + bi * inner * cols;
      T* Cb = C + bi * rows * cols;
      if constexpr (std::is_floating_point_v<T>) {
        using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        Eigen::Map<M>(Cb, rows, cols).noalias() = Eigen::Map<const M>(Ab, rows, inner) * Eigen::Map<const M>(Bb, inner, cols);
      } else {
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t col = 0; col < cols; ++col) {
            T acc = 0;
            for (std::int64_t k = 0; k < inner; ++k) {
              acc = binary(Op::Add, acc, binary(Op::Mul, Ab[r * inner + k], Bb[k * cols + col]));
            }
            Cb[r * cols + col] = acc;
          }
        }
      }
    }
  });
}

}  // namespace

void run_library(const LibraryCall& call, const std::vector<const void*>& inputs, void* out) {
  if (call.op == Op::MatMul) return matmul(call, inputs, out);
  if (call.op == Op::Concat) return concat(call, inputs, out);
  if (call.op == Op::ArgMax || call.op == Op::ArgMin) return arg_reduce(call, inputs, out);
  internal_error(std::string("host library: no step for ") + op_name(call.op));
}

}  // namespace aj::cpu

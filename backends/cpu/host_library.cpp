#include "backends/cpu/host_library.hpp"

#include <memory>
#include <string>

#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "backends/cpu/host_scatter.hpp"
#include "backends/cpu/host_sort.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "base/semantics.hpp"
#include "graph/graph.hpp"
#include "graph/strided_walk.hpp"

namespace aj::cpu {

namespace {

using namespace aj::sem;

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
      const Shape shape(op.shape);
      StridedWalk w(shape, {&op.strides, &out_strides}, {op.offset, base * out_strides[axis]});
      for (std::int64_t i = shape.numel(); i > 0; --i, w.next()) o[w.offset(1)] = src[w.offset(0)];
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
  const std::int64_t total_out = Shape(c.shape).numel();
  const Shape shape(src.shape);
  visit_dtype(src.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in[0]);
    std::unique_ptr<T[]> best(new T[static_cast<std::size_t>(total_out)]());
    StridedWalk w(shape, {&src.strides, &out_strides}, {src.offset, 0});
    for (std::int64_t i = shape.numel(); i > 0; --i, w.next()) {
      const T v = x[w.offset(0)];
      const auto r = static_cast<std::size_t>(w.offset(1));
      const std::int64_t at = w.index()[axis];
      if (at == 0 || arg_better(c.op, v, best[r])) {
        best[r] = v;
        o[r] = at;
      }
    }
  });
}

void matmul(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const auto& a = c.inputs[0];
  const auto& b = c.inputs[1];
  cpu::matmul(c.dtype, c.shape, a.shape.back(), {in[0], a.offset, a.strides}, {in[1], b.offset, b.strides}, out,
              num_threads());
}

}  // namespace

void run_library(const LibraryCall& call, const std::vector<const void*>& inputs, void* out) {
  if (call.op == Op::MatMul) return matmul(call, inputs, out);
  if (call.op == Op::Concat) return concat(call, inputs, out);
  if (call.op == Op::ArgMax || call.op == Op::ArgMin) return arg_reduce(call, inputs, out);
  if (call.op == Op::Sort || call.op == Op::ArgSort || call.op == Op::TopK || call.op == Op::ArgTopK) {
    const int threads = num_threads() > 0 ? num_threads() : hardware_threads();
    return sort_lines(call, inputs[0], out, threads);
  }
  if (call.op == Op::ScatterAdd || call.op == Op::Scatter) return scatter(call, inputs, out);
  internal_error(std::string("host library: no step for ") + op_name(call.op));
}

}  // namespace aj::cpu

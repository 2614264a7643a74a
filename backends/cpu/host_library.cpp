#include "backends/cpu/host_library.hpp"

#include <memory>
#include <string>

#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
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

void matmul(const LibraryCall& c, const std::vector<const void*>& in, void* out, const BlocksDone& done = {}) {
  const auto& a = c.inputs[0];
  const auto& b = c.inputs[1];
  cpu::matmul(c.dtype, c.shape, a.shape.back(), {in[0], a.offset, a.strides}, {in[1], b.offset, b.strides}, out,
              num_threads(), done);
}

}  // namespace

void run_library_then(const LibraryCall& call, const std::vector<const void*>& inputs, void* out,
                      const Kernel& epilogue, const std::vector<const void*>& epilogue_inputs,
                      const std::vector<void*>& epilogue_outputs) {
  if (call.op != Op::MatMul || !jit_enabled() || epilogue.is_reduction()) {
    run_library(call, inputs, out);
    if (jit_enabled()) run_kernel_compiled(epilogue, epilogue_inputs, epilogue_outputs);
    else run_kernel(epilogue, epilogue_inputs, epilogue_outputs);
    return;
  }
  const KernelRanges ranges(epilogue, epilogue_inputs, epilogue_outputs);
  const BlocksDone done{[](const void* ctx, std::int64_t lo, std::int64_t hi) {
                          static_cast<const KernelRanges*>(ctx)->run(lo, hi);
                        }, &ranges};
  matmul(call, inputs, out, done);
}

void run_library(const LibraryCall& call, const std::vector<const void*>& inputs, void* out) {
  if (call.op == Op::MatMul) return matmul(call, inputs, out);
  if (call.op == Op::Concat) return concat(call, inputs, out);
  internal_error(std::string("host library: no step for ") + op_name(call.op));
}

}  // namespace aj::cpu

#include "backends/cpu/host_library.hpp"

#include <memory>
#include <string>

#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "graph/graph.hpp"

namespace aj::cpu {

namespace {

// Each operand into its slice of the result by a copy kernel (Kernel IR:
// one load with the operand's strides, one store with the result's), so the
// copy is compiled, vectorized and split over threads like any kernel;
// contiguous pieces collapse to one loop. Operands already in place are
// skipped.
void concat(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const auto axis = static_cast<std::size_t>(c.axis);
  const auto out_strides = contiguous_strides(Shape(c.shape));
  std::int64_t base = 0;  // where the current piece starts along the axis
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const LibraryOperand& op = c.inputs[k];
    const std::int64_t start = base;
    base += op.shape[axis];
    if (op.in_place || Shape(op.shape).numel() == 0) continue;
    Kernel copy;
    copy.shape = op.shape;
    KStream from{c.dtype, op.strides, op.offset, false}, to{c.dtype, out_strides, start * out_strides[axis], false};
    for (std::size_t d = 0; d < op.shape.size(); ++d) {
      if (op.shape[d] == 1) from.strides[d] = to.strides[d] = 0;
    }
    copy.inputs.push_back(std::move(from));
    copy.instrs.push_back({KOp::Load, Op::Input, c.dtype, 0, -1, -1, -1, 0});
    copy.outputs.push_back({0, 0, std::move(to)});
    if (jit_enabled()) run_kernel_compiled(copy, {in[k]}, {out});
    else run_kernel(copy, {in[k]}, {out});
  }
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

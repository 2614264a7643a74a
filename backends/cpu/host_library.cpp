#include "backends/cpu/host_library.hpp"

#include <cstring>
#include <memory>
#include <string>

#include "backends/cpu/host_comm.hpp"
#include "backends/cpu/host_conv.hpp"
#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_linalg.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "backends/cpu/host_scatter.hpp"
#include "backends/cpu/host_sort.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "graph/host_call.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "base/semantics.hpp"
#include "graph/graph.hpp"

namespace aj::cpu {

namespace {

// A copy that is rows of contiguous elements on both sides once the axes
// both walk as one are merged (a contiguous piece of a concatenate along
// any axis): a memcpy per row, rows split over threads when there are
// megabytes of them. False for other layouts (nothing copied).
bool copy_rows(std::size_t item, const std::vector<std::int64_t>& shape, const LibraryOperand& from,
               const void* src, const std::vector<std::int64_t>& to_strides, std::int64_t to_offset, void* dst) {
  struct Axis { std::int64_t extent, from, to; };
  std::vector<Axis> axes;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const Axis a{shape[d], from.strides[d], to_strides[d]};
    if (!axes.empty() && axes.back().from == a.from * a.extent && axes.back().to == a.to * a.extent) {
      axes.back() = {axes.back().extent * a.extent, a.from, a.to};
      continue;
    }
    axes.push_back(a);
  }
  if (axes.empty()) axes.push_back({1, 1, 1});
  if (axes.size() > 2 || axes.back().from != 1 || axes.back().to != 1) return false;
  struct Rows {
    const char* src;
    char* dst;
    std::int64_t from_stride, to_stride, bytes;
  } rows{static_cast<const char*>(src) + from.offset * static_cast<std::int64_t>(item),
         static_cast<char*>(dst) + to_offset * static_cast<std::int64_t>(item),
         axes.size() == 2 ? axes[0].from * static_cast<std::int64_t>(item) : 0,
         axes.size() == 2 ? axes[0].to * static_cast<std::int64_t>(item) : 0,
         axes.back().extent * static_cast<std::int64_t>(item)};
  const std::int64_t n = axes.size() == 2 ? axes[0].extent : 1;
  auto run = [](const void* ctx, std::int64_t lo, std::int64_t hi) {
    const Rows& r = *static_cast<const Rows*>(ctx);
    for (std::int64_t i = lo; i < hi; ++i) {
      std::memcpy(r.dst + i * r.to_stride, r.src + i * r.from_stride, static_cast<std::size_t>(r.bytes));
    }
  };
  const int threads = num_threads() > 0 ? num_threads() : hardware_threads();
  if (n * rows.bytes >= (std::int64_t{1} << 20) && threads > 1 && n > 1) {
    parallel_chunks(run, &rows, n, std::min<std::int64_t>(n, 4 * threads), threads);
  } else {
    run(&rows, 0, n);
  }
  return true;
}

// Each operand into its slice of the result: rows of contiguous elements
// by memcpy, any other layout by a copy kernel (Kernel IR: one load with the
// operand's strides, one store with the result's), compiled, vectorized and
// split over threads like any kernel. Operands already in place are skipped.
void concat(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const auto axis = static_cast<std::size_t>(c.axis);
  const auto out_strides = contiguous_strides(Shape(c.shape));
  std::int64_t base = 0;  // where the current piece starts along the axis
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const LibraryOperand& op = c.inputs[k];
    const std::int64_t start = base;
    base += op.shape[axis];
    if (op.in_place || Shape(op.shape).numel() == 0) continue;
    if (copy_rows(itemsize(c.dtype), op.shape, op, in[k], out_strides, start * out_strides[axis], out)) continue;
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
  // Kept per thread: their stride vectors' memory is reused, so a replayed
  // step's products allocate nothing (cpu::matmul copies what it needs).
  thread_local StridedOperand av, bv;
  av.data = in[0], av.offset = a.offset, av.strides.assign(a.strides.begin(), a.strides.end());
  bv.data = in[1], bv.offset = b.offset, bv.strides.assign(b.strides.begin(), b.strides.end());
  cpu::matmul(c.dtype, c.shape, a.shape.back(), av, bv, out, num_threads(), done);
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
  if (call.op == Op::Sort || call.op == Op::ArgSort || call.op == Op::TopK || call.op == Op::ArgTopK) {
    const int threads = num_threads() > 0 ? num_threads() : hardware_threads();
    return sort_lines(call, inputs[0], out, threads);
  }
  if (call.op == Op::ScatterAdd || call.op == Op::Scatter) return scatter(call, inputs, out);
  if (call.op == Op::Linalg) return run_linalg(call, inputs, out);
  if (call.op == Op::Conv) return run_conv(call, inputs, out);
  if (call.op == Op::HostCall) {
    std::vector<HostBuffer> in;
    for (std::size_t k = 0; k < call.inputs.size(); ++k) {
      const LibraryOperand& o = call.inputs[k];
      HostBuffer b;
      b.data = const_cast<char*>(static_cast<const char*>(inputs[k])) + o.offset * static_cast<std::int64_t>(itemsize(o.dtype));
      b.dtype = o.dtype;
      b.shape = Shape(o.shape);
      b.strides = o.strides;
      in.push_back(std::move(b));
    }
    return run_host_call(*host_function(call.host), call.dtype, call.ints, in, out);
  }
  if (call.op == Op::Collective) return comm::run(call, call.inputs.empty() ? nullptr : inputs[0], out);
  internal_error(std::string("host library: no step for ") + op_name(call.op));
}

}  // namespace aj::cpu

#include "graph/kernel_split.hpp"

#include <algorithm>

namespace aj {

std::optional<SplitReduction> split_reduction(const Kernel& k, std::int64_t parts) {
  for (const KInstr& in : k.instrs) {
    if (in.kind == KOp::Scan) return std::nullopt;  // a running value needs its axis walked in order
  }
  SplitReduction sp;
  const std::size_t rank = k.shape.size();
  std::vector<std::size_t> outer_axes;
  for (std::size_t d = 0; d < rank; ++d) {
    if (std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) == k.reduce_axes.end()) {
      outer_axes.push_back(d);
    }
  }
  const std::size_t no = outer_axes.size();
  sp.axis = static_cast<std::size_t>(k.reduce_axes[0]);
  sp.parts = parts;
  sp.outer = k.outer_points();
  // Scratch layout [part][outer point], outer points row-major.
  std::vector<std::int64_t> outer_stride(no);
  {
    std::int64_t acc = 1;
    for (std::size_t i = no; i-- > 0;) {
      outer_stride[i] = k.shape[outer_axes[i]] == 1 ? 0 : acc;
      acc *= k.shape[outer_axes[i]];
    }
  }
  Kernel& f = sp.finish;
  f.shape.clear();
  for (std::size_t d : outer_axes) f.shape.push_back(k.shape[d]);
  f.shape.push_back(parts);
  f.reduce_axes = {static_cast<std::int64_t>(no)};
  f.scalars = k.scalars;
  // A kernel stream read by the epilogue, over the finish kernel's axes.
  auto outer_stream = [&](const KStream& s) {
    KStream t = s;
    t.strides.clear();
    for (std::size_t d : outer_axes) t.strides.push_back(s.strides[d]);
    t.strides.push_back(0);
    return t;
  };
  std::vector<int> input_map(k.inputs.size(), -1);
  auto finish_input = [&](std::int32_t arg) {
    auto& m = input_map[static_cast<std::size_t>(arg)];
    if (m < 0) {
      m = static_cast<int>(f.inputs.size());
      f.inputs.push_back(outer_stream(k.inputs[static_cast<std::size_t>(arg)]));
      sp.finish_inputs.push_back(-(arg + 1));
    }
    return m;
  };
  std::vector<std::int32_t> value(k.instrs.size(), -1);  // kernel instruction -> finish instruction
  auto emit = [&](KInstr in) {
    f.instrs.push_back(in);
    return static_cast<std::int32_t>(f.instrs.size() - 1);
  };
  Kernel& p = sp.partial;
  p = k;
  // The partial accumulators, reduced again over the parts.
  auto scratch_load = [&](std::size_t instr, DType t, bool index) {
    sp.finish_inputs.push_back(static_cast<int>(sp.slots.size()));
    sp.slots.push_back({.instr = instr, .dtype = t, .index = index});
    KStream scratch{.dtype = t, .strides = outer_stride, .offset = 0};
    scratch.strides.push_back(sp.outer);
    f.inputs.push_back(scratch);
    return emit(KInstr{.kind = KOp::Load, .op = Op::Input, .dtype = t, .phase = 0,
                       .arg = static_cast<std::int32_t>(f.inputs.size() - 1)});
  };
  for (std::size_t j = 0; j < k.instrs.size(); ++j) {
    const KInstr& in = k.instrs[j];
    if (in.kind != KOp::Reduce) continue;
    if (in.op == Op::ArgMax || in.op == Op::ArgMin) {
      if (in.b >= 0) return std::nullopt;  // candidate indices of its own: not split
      const DType vt = k.instrs[static_cast<std::size_t>(in.a)].dtype;
      p.instrs.push_back(KInstr{.kind = KOp::Reduce, .op = in.op == Op::ArgMax ? Op::ReduceMax : Op::ReduceMin,
                                .dtype = vt, .phase = 1, .a = in.a});
      const auto index = scratch_load(j, DType::i64, true);
      const auto best = scratch_load(p.instrs.size() - 1, vt, false);
      value[j] = emit(KInstr{.kind = KOp::Reduce, .op = in.op, .dtype = in.dtype, .phase = 1, .a = best, .b = index});
      continue;
    }
    value[j] = emit(KInstr{.kind = KOp::Reduce, .op = in.op, .dtype = in.dtype, .phase = 1,
                           .a = scratch_load(j, in.dtype, false)});
  }
  // The epilogue, its operands mapped; phase-0 constants and loads constant
  // over the reduced axes are taken along.
  auto constant_over_reduced = [&](const KStream& s) {
    for (auto a : k.reduce_axes) if (s.strides[static_cast<std::size_t>(a)] != 0) return false;
    return true;
  };
  auto operand = [&](std::int32_t o) -> std::int32_t {
    if (o < 0) return o;
    const auto oj = static_cast<std::size_t>(o);
    if (value[oj] >= 0) return value[oj];
    KInstr in = k.instrs[oj];
    if (in.phase == 0) {
      if (in.kind == KOp::Const) {
        // fine: scalars are shared
      } else if (in.kind == KOp::Load && in.b < 0 && in.c < 0 &&
                 constant_over_reduced(k.inputs[static_cast<std::size_t>(in.arg)])) {
        in.arg = finish_input(in.arg);
      } else {
        return -2;  // not available after the reduction
      }
      in.phase = 1;
      return value[oj] = emit(in);
    }
    return -2;  // a phase-1 value is mapped before it is used (SSA order)
  };
  for (std::size_t j = 0; j < k.instrs.size(); ++j) {
    KInstr in = k.instrs[j];
    if (in.phase != 1 || in.kind == KOp::Reduce) continue;
    switch (in.kind) {
      case KOp::Load:
      case KOp::Index:
      case KOp::Position:
      case KOp::InRange:
        in.arg = finish_input(in.arg);
        for (std::int32_t* o : {&in.b, &in.c}) {  // a gather's offset, a pad's mask
          if (*o < 0 || (in.kind != KOp::Load && o == &in.c)) continue;
          *o = operand(*o);
          if (*o == -2) return std::nullopt;
        }
        break;
      case KOp::Const: break;
      case KOp::Scan: return std::nullopt;  // phase 0 only (graph/kernel.hpp)
      case KOp::Unary:
      case KOp::Binary:
      case KOp::Where:
        for (std::int32_t* o : {&in.a, &in.b, &in.c}) {
          *o = operand(*o);
          if (*o == -2) return std::nullopt;
        }
        break;
      case KOp::Reduce: break;
    }
    value[j] = emit(in);
  }
  // Outputs: phase 0 from the partial kernel, phase 1 from the finish.
  p.outputs.clear();
  for (std::size_t j = 0; j < k.outputs.size(); ++j) {
    const KOutput& o = k.outputs[j];
    if (o.phase == 0) {
      p.outputs.push_back(o);
      sp.partial_outputs.push_back(j);
      continue;
    }
    const std::int32_t v = operand(o.value);
    if (v == -2) return std::nullopt;
    f.outputs.push_back(KOutput{.value = v, .phase = 1, .stream = outer_stream(o.stream)});
    sp.finish_outputs.push_back(j);
  }
  for (const auto& slot : sp.slots) {
    KStream scratch{.dtype = slot.dtype, .strides = std::vector<std::int64_t>(rank, 0), .offset = 0};
    for (std::size_t i = 0; i < no; ++i) scratch.strides[outer_axes[i]] = outer_stride[i];
    p.outputs.push_back(
        KOutput{.value = static_cast<std::int32_t>(slot.instr), .phase = 1, .stream = std::move(scratch)});
  }
  return sp;
}

}  // namespace aj

// Library steps: the ops that are not Kernel IR (matmul, concatenate,
// sort/argsort/topk, scatter) have whole-array algorithms of their own on
// every backend.
// A LibraryCall describes one without graph nodes, as Kernel IR describes a
// kernel: backends see this, never the graph.
//
// Rules:
//  - The result has `shape` and `dtype` and is written contiguous, row-major.
//  - Each operand is a strided view (elements: strides per axis of its own
//    shape, offset) of an input buffer, in the order of the node's inputs.
//  - MatMul: inputs are [batch..., m, k] and [batch..., k, n], batch axes
//    already broadcast to the result's (stride 0 allowed).
//  - Concat: inputs are written one after another along `axis`; an operand
//    marked `in_place` is there already (its producer wrote it into its
//    slice of the result, opt/passes/concat_slices.hpp) and is not copied.
//  - Sort/ArgSort: one input, each line along `axis` sorted ascending and
//    stable (NaN last, -0.0 equal to +0.0, docs/semantics.md); the result
//    has the input's shape: the values (Sort) or their i64 indices (ArgSort).
//  - TopK/ArgTopK: the `k` largest of each line along `axis`, largest first
//    (NaN largest; ties: lower index first); the result has extent k there.
#pragma once

#include <cstdint>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "base/op.hpp"

namespace aj {

struct LibraryOperand {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset = 0;
  bool in_place = false;  // Concat: already in its slice of the result
};

struct LibraryCall {
  Op op = Op::MatMul;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<LibraryOperand> inputs;
  std::int64_t axis = 0;
  std::int64_t k = 0;  // TopK/ArgTopK: how many
};

// Ops that run as library steps rather than inside kernels.
constexpr bool is_library_op(Op op) {
  return op_category(op) == OpCategory::Other;
}

}  // namespace aj

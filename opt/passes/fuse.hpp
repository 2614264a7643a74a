// fuse: partition the unevaluated graph reachable from the roots into a
// schedule of steps, in dependency order.
//
// Guarantees:
//  - Every root is produced by exactly one step; every other node is either
//    materialized by a step or computed inside every kernel that needs it.
//  - A kernel step computes any DAG of elementwise ops, constants, index
//    generators and views (as index arithmetic, never copies); producers of a
//    reduction run inside the reduction's loop (the reduced input never
//    exists in memory) and elementwise epilogues run after it. Roots of one
//    iteration space (the same shape, or the full and reduced shapes of one
//    reduction) share a kernel with several outputs when their inputs allow.
//  - A reduction whose result is needed at another index (broadcast back over
//    its own input, e.g. x - max(x)) or inside another reduction ends a kernel.
//  - MatMul and Concat are library steps (graph/library.hpp:
//    whole-array algorithms each backend implements); views
//    that are roots (or feed those steps) are view steps: strides, no copy.
//    A reshape of strided data that no strides can express is a copy kernel
//    (Step::copy) over its input's shape, writing it contiguous.
//  - Cost rule for a producer used by several kernels: it is recomputed in
//    each when it is cheap (all its ops carry the Cheap flag) and recomputing
//    reads no more bytes than materializing would write and re-read:
//        (k - 1) * leaf_bytes <= (k + 1) * own_bytes      (k kernels)
//    otherwise it is materialized once and loaded.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.hpp"
#include "graph/kernel.hpp"
#include "graph/library.hpp"
#include "opt/lower.hpp"

namespace aj {

struct Step {
  enum class Kind { kernel, view, library };
  Kind kind = Kind::kernel;
  NodeId node = kNoNode;  // view / library: the node this step evaluates
  // kernel:
  Kernel kernel;
  std::vector<NodeId> inputs;    // per kernel input, the node it reads (kNoNode: index stream)
  std::vector<NodeId> outputs;   // per kernel output, the node it defines
  std::vector<NodeId> computed;  // ops computed inside (explain)
  std::vector<NodeId> touched;   // all unevaluated nodes walked (buffer liveness)
  Shape space;
  std::vector<std::int64_t> axes;
  bool copy = false;  // a copy kernel for a reshape of strided data (node: outputs[0])
  // Per kernel output: the concatenate whose buffer it is written into (at
  // the slice its stream addresses), or kNoNode; empty: none
  // (opt/passes/concat_slices.hpp).
  std::vector<NodeId> into;
  std::vector<ScalarSource> scalar_sources;  // per kernel scalar (plan cache refresh)
};

struct Schedule {
  std::vector<NodeId> roots;
  std::vector<NodeId> order;  // unevaluated nodes, inputs first
  std::vector<Step> steps;
  std::unordered_map<NodeId, Layout> layouts;  // of every node a step produces
  std::unordered_map<NodeId, int> step_of;     // node -> step producing it
  int kernels() const;
};

// `fuse_ops` false (the pass switched off, for tests): every op its own
// kernel, views still index arithmetic.
Schedule fuse(const std::vector<NodeId>& roots, bool fuse_ops = true);

}  // namespace aj

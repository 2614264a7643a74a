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
//  - Gathers and pads (Remap ops) are index arithmetic inside the kernel of
//    their consumer: their indices' producers run there too, and so does a
//    gathered operand made of Cheap ops only (evaluated at the gathered
//    indices); any other gathered operand is materialized first. A pad's
//    operand is always computed inside, under the pad's mask.
//  - A reduction whose result is needed at another index (broadcast back over
//    its own input, e.g. x - max(x)) or inside another reduction ends a kernel.
//  - A scan (cumsum, cumprod) runs in a kernel whose reduce axes are its axis
//    (KOp::Scan): producers run inside it, elementwise consumers at the same
//    index and reductions over the same axis after it; needed at another
//    index or along another axis, it ends a kernel.
//  - MatMul, Concat, Sort/ArgSort/TopK/ArgTopK, Scatter/ScatterAdd
//    are library steps (graph/library.hpp:
//    whole-array algorithms each backend implements); views
//    that are roots (or feed those steps) are view steps: strides, no copy.
//    A reshape of strided data that no strides can express is a copy kernel
//    (Step::copy) over its input's shape, writing it contiguous.
//  - Held values are stored: a node a user handle holds (ext > 0) that the
//    evaluation reaches is an output of the kernel that computes it (or a
//    view step), so the handle is evaluated afterwards and its graph stops
//    growing. Values that cost nothing to recompute are not: constants, the
//    index generators (iota, linspace, eye) and views of those (fills); nor
//    are C++ temporaries of the evaluated expression (looks_temporary).
//  - Work rule: a node that does arithmetic (counts_as_work) is evaluated at
//    most at as many points, over the whole plan, as it has elements. A node
//    read at several index maps (a stencil's offsets), through a broadcast,
//    or by kernels of different iteration spaces is materialized once
//    instead: fusion never does more arithmetic than the unfused steps.
//  - Size cap: a kernel computes at most kMaxKernelNodes nodes (about as
//    many instructions); a longer chain is cut and the value at the cut
//    materialized (compile time grows faster than linearly with size).
//  - Linear: planning takes time linear in the nodes reached (lowering
//    reports every boundary of a kernel in one walk, boundaries are placed
//    where they are found, and a round replans only when kernels of
//    different spaces turned out to share a node).
//  - Every node the planner stores on its own, and every held value, is in
//    Schedule::materialized with the reason (aj::explain prints it).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.hpp"
#include "graph/kernel.hpp"
#include "graph/library.hpp"
#include "opt/lower.hpp"

namespace aj {

// (A field added here is copied by opt/plan_cache.cpp's translate too.)
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
  NodeId space_of = kNoNode;  // the node whose shape `space` is (materialize reads it again)
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
  // Nodes stored although no root: held values and the planner's own
  // materializations, each with the reason (in the order they were decided).
  std::vector<Materialization> materialized;
  int kernels() const;
};

// `fuse_ops` false (the pass switched off, for tests): every op its own
// kernel, views still index arithmetic.
Schedule fuse(const std::vector<NodeId>& roots, bool fuse_ops = true);

// Which held nodes look like C++ temporaries of the expression being
// evaluated: one handle, traced on the same source line as a root but at
// another column (`x * x` in `sum(x * x).item()` is alive until the statement
// ends, but nothing can read it afterwards). Such a value is not stored. A
// node made by the same call site as a root (a loop, a helper function) is no
// temporary: `hs.push_back(h = cell(h))` keeps every h.
class TemporaryRule {
 public:
  explicit TemporaryRule(const std::vector<NodeId>& roots);
  bool operator()(NodeId id) const;

 private:
  // The roots' distinct source locations: a few inline (this runs on every
  // evaluation, plan cache hits included), the rest in `more_`.
  static constexpr std::size_t kInline = 4;
  Loc inline_[kInline];
  std::size_t n_ = 0;
  std::vector<Loc> more_;
  const Loc& at(std::size_t i) const { return i < kInline ? inline_[i] : more_[i - kInline]; }
};

// The size cap, in nodes computed by one kernel (fuse.hpp's guarantees).
inline constexpr std::int64_t kMaxKernelNodes = 256;

}  // namespace aj

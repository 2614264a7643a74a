// Lowering a set of graph nodes into one Kernel (graph/kernel.hpp).
//
// Every node reached from the roots is computed inside the kernel unless it is
// "materialized" (evaluated already, or produced by an earlier step): those
// are loaded. Views are never computed: each node is evaluated under an index
// map (node index as an affine function of the iteration point), views
// transform the map, and a load folds the map into strides + offset.
// A scan is computed at its own index in a kernel whose reduce axes are its
// axis (KOp::Scan, phase 0). Where that is impossible (a reduction or scan
// needed at another index, a reshape of
// computed data that is not a pure size-1 insertion/removal) lowering reports
// the node that must be materialized instead; fuse() then re-plans.
//
// The work rule (docs/optimizer.md): with LowerContext::evaluations_elsewhere
// set, a node that does arithmetic is never evaluated at more points, over
// the whole plan, than it has elements. A node the kernel would evaluate
// under a second index map (read at another offset, or transposed), through
// a broadcast, or that another kernel computes too, is reported as a
// boundary instead of being expanded, so lowering a lazy stencil of T steps
// costs O(T), not O(T^2).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "graph/graph.hpp"
#include "graph/kernel.hpp"

namespace aj {

struct Layout {
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
  bool operator==(const Layout&) const = default;
};

Layout contiguous_layout(const Shape& s);

// The layout view node `v` has over its input's layout, exactly as the
// reference interpreter computes it; nullopt where the reference copies
// (reshape of non-contiguous data).
std::optional<Layout> view_layout(const Node& v, const Node& src, const Layout& src_layout);

struct LowerContext {
  // Produced by a step of the schedule (not computed inside this kernel).
  std::function<bool(NodeId)> is_materialized;
  // Layout of a materialized node once its step has run.
  std::function<Layout(NodeId)> layout;
  // The work rule: points at which the other kernels of the plan evaluate a
  // node. Null: no work rule (a kernel may recompute what it likes).
  std::function<std::int64_t(NodeId)> evaluations_elsewhere;
};

// Why a node is stored by a step of its own instead of being computed inside
// the kernels that read it (fuse's Schedule::materialized, aj::explain).
struct Materialization {
  enum class Why : std::uint8_t {
    held,                 // a user handle holds it: stored so the handle becomes evaluated
    library_operand,      // read by a library step (matmul, concatenate, argmax)
    view_base,            // a view that is a step of its own (a root, held) shares its buffer
    reduction_elsewhere,  // a reduction needed at another index than it is computed at
    not_a_view,           // reshaped where no index map expresses the reshape
    several_maps,         // read at `count` index maps (offsets, transposes) by `by`
    broadcast,            // read through a broadcast by `by`: `count` evaluations for its elements
    several_kernels,      // needed by `count` kernels
    size_cap,             // the kernel computing `by` would pass the size cap
    empty,                // has no elements: stored (nothing), so no kernel inlines it (a loop over
                          // an empty array would otherwise fuse into one kernel that grows each step)
  };
  NodeId node = kNoNode;
  Why why = Why::held;
  NodeId by = kNoNode;     // the consumer that needed it stored (kNoNode: none in particular)
  std::int64_t count = 0;  // maps, evaluations or kernels, as `why` says
  bool operator==(const Materialization&) const = default;
};

// Ops whose evaluation the work rule counts: everything that computes
// (elementwise, reductions, random numbers); not views, constants or the
// index generators (iota, linspace, eye cost what an address does).
bool counts_as_work(Op op);

// The most points the plan may evaluate node `id` at (the work rule's
// limit): its element count, or twice that for a node worth recomputing in a
// second kernel rather than storing: a Cheap elementwise op whose inputs are
// all stored (evaluated, or materialized per `is_materialized`; through
// views), constants or index generators, at most one of them with as many
// elements as the node, and that one at most twice the node's item size.
// Recomputing it costs one op per element and reads the large input instead
// of the node; storing it costs a write of its whole size and a read back.
// Layernorm's `x - mean` read by the variance and the normalizing kernel is
// one; `x > 0` of f64 x (a bool) is not: reading x again would cost more.
std::int64_t work_limit(const Graph& g, NodeId id, const std::function<bool(NodeId)>& is_materialized);

// Where a kernel scalar's value comes from, so a plan reused for another
// graph of the same structure takes that graph's values (opt/plan_cache.hpp):
// a Constant's value, or one of a generator's payload fields.
struct ScalarSource {
  enum Field : std::uint8_t { constant, f0, f1, i0, fixed };  // fixed: from the shape, or none
  NodeId node = kNoNode;
  Field field = fixed;
  bool operator==(const ScalarSource&) const = default;
};

// The value of `src` in the current graph, as a kernel scalar of `like`'s dtype.
KScalar scalar_value(const ScalarSource& src, const KScalar& like);

struct Lowered {
  bool ok = true;
  bool conflict = false;             // roots cannot share this kernel
  std::vector<NodeId> boundaries;    // must be materialized, then plan again
  std::vector<Materialization> why;  // per boundary, why
  Kernel kernel;
  std::vector<NodeId> inputs;        // kernel input k reads this node's storage (kNoNode: index)
  std::vector<NodeId> outputs;       // kernel output j defines this node
  std::vector<NodeId> computed;      // non-view nodes computed inside, once per index map
  std::vector<NodeId> touched;       // every unevaluated node walked, views included
  std::vector<NodeId> deps;          // materialized, unevaluated nodes read
  std::vector<ScalarSource> scalar_sources;  // per kernel scalar
  // Per node that counts as work: the points this kernel evaluates it at.
  std::vector<std::pair<NodeId, std::int64_t>> evaluations;
  std::vector<std::int64_t> evaluation_maps;  // per evaluations entry: the index maps it is evaluated under
  // Per load of a node an earlier step makes (materialized, not evaluated):
  // the points this kernel would evaluate it at if it computed it instead
  // (the work rule's other side, which opt/materialize checks again).
  std::vector<std::pair<NodeId, std::int64_t>> loads;
};

// `space`: the iteration space; `reduce_axes`: empty for elementwise kernels.
// Roots of the reduced shape are written after the reduction (phase 1), roots
// of the full shape at every point (phase 0).
Lowered lower(const std::vector<NodeId>& roots, const Shape& space,
              const std::vector<std::int64_t>& reduce_axes, const LowerContext& ctx);

Shape reduced_shape(const Shape& s, const std::vector<std::int64_t>& axes);

// The copy kernel of a reshape view `id` of strided data (a view no strides
// express): one kernel over the input's shape that reads it with layout `in`
// and writes it contiguous in row-major order, the reshape's layout.
Lowered lower_copy(NodeId id, const Layout& in);

}  // namespace aj

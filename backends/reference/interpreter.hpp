// The reference interpreter: evaluates graph nodes one at a time, the obvious
// way, with the scalar semantics of base/semantics.hpp. It is the oracle every
// other execution path is tested against, so it favours clarity over speed:
// every non-view node gets a fresh contiguous buffer.
#pragma once

#include <vector>

#include "graph/graph.hpp"

namespace aj::ref {

// Evaluate the given nodes and everything unevaluated they depend on. Each
// node becomes a leaf as soon as it is computed (dropping its inputs, so
// buffers are released at their last use). Throws aj::Error on failure; nodes
// already computed stay valid leaves.
void evaluate(const std::vector<NodeId>& roots);

// Compute one node whose inputs are all evaluated; returns nothing, sets the
// node's result. Exposed for tests and for other interpreters.
void evaluate_node(NodeId id);

}  // namespace aj::ref

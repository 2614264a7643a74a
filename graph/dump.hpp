// Text dumps of the graph (see dump.cpp).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace aj {

// Nodes reachable from the roots, inputs first, each once.
std::vector<NodeId> reachable_order(const std::vector<NodeId>& roots);
// "%3 = add f32[4] %1, %2" lines, dense ids in that order.
std::string dump_nodes(const std::vector<NodeId>& roots);
// Shortest round-trip text of a double ("0.1"), and "[1, 2, 3]".
std::string dump_number(double v);
std::string dump_list(const std::vector<std::int64_t>& v);
// Graphviz text of the same nodes.
std::string dot_nodes(const std::vector<NodeId>& roots);
// "f32[3, 4]"
std::string describe(DType t, const Shape& s);
// The op-specific part of a node's line ("axes=[1]", "perm=[1, 0]").
std::string node_payload(const Node& n);

}  // namespace aj

// aj::explain: what the optimizer will do with an array, as text.
#pragma once

#include <string>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// The optimized plan for evaluating the arrays: kernels and the ops fused into
// each, the buffer slots (bytes used beside the lower bound) and which outputs
// reuse which inputs in place. Node numbers (%3) are those of aj::dump.
// Nothing is computed. Setting AJ_LOG=plan prints the same on every eval.
std::string explain(const Array& a, Loc loc = Loc::current());
std::string explain(const std::vector<Array>& arrays, Loc loc = Loc::current());

// The debug channels, comma-separated, as the environment variables AJ_LOG
// and AJ_DUMP list them (both name the same channels): "plan" (the plan of
// every eval), "passes" (each pass: time, "(unchanged)"), "graph" (the graph
// after each pass), "all". Channels set here add to the environment's; ""
// clears them. Output goes to stderr.
void set_log(const std::string& channels);

}  // namespace aj

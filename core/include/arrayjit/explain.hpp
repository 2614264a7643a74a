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

// Pictures (Graphviz). With `plan` (the default): the optimized plan that
// evaluating the arrays would run, computing nothing: each kernel a cluster
// of the ops fused into it, library and view steps, the arrays read, every
// value's bytes and buffer slot, in-place reuse as red dashed edges, and each
// node's source line (file:line where it was written). Without `plan`, or
// when everything is evaluated already: the traced graph, as to_dot(a).
// AJ_DUMP_DOT=<dir> writes the plan of every evaluation there.
struct DotOptions {
  bool plan = true;
};
std::string to_dot(const std::vector<Array>& arrays, DotOptions options = {}, Loc loc = Loc::current());
// Writes to_dot's text to `path` (a .dot file) and, where Graphviz's `dot`
// is installed, renders the .svg and .png beside it; returns the files written.
std::vector<std::string> write_dot(const std::vector<Array>& arrays, const std::string& path,
                                   DotOptions options = {}, Loc loc = Loc::current());

}  // namespace aj

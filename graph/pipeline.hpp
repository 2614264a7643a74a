// The optimizing pipeline: simplify -> fuse -> assign buffers -> run steps.
// One function lists the passes (pipeline.cpp).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "graph/kernel.hpp"

namespace aj::opt {

// Evaluate the roots (and what they need) through the optimizer. Same
// contract as ref::evaluate: evaluated nodes become leaves; on failure,
// nodes already computed stay valid.
void evaluate(const std::vector<NodeId>& roots);

// The plan evaluate() would run for these roots, as text (kernels, fused ops,
// buffer slots, in-place reuse). Runs simplify (which only rewrites nodes into
// equivalent ones) but computes nothing.
std::string plan_text(const std::vector<NodeId>& roots);

// The kernels of that plan, in order (for aj::jit::kernel_ir).
std::vector<Kernel> plan_kernels(const std::vector<NodeId>& roots);

// Switch a pass off by name for tests ("simplify": no rewrites; "fuse": one
// kernel per op; "assign_buffers": no donation, a fresh buffer per value);
// true again to restore. AJ_DISABLE_PASSES=name,name does the same.
void set_pass_enabled(const std::string& name, bool enabled);

}  // namespace aj::opt

namespace aj::detail {
// All logging goes through here: writes to stderr when AJ_LOG or AJ_DUMP
// (comma-separated, e.g. AJ_LOG=plan, AJ_DUMP=graph,buffers) or aj::set_log()
// lists `channel` (or "all"). Channels: plan, passes, graph, buffers.
bool log_enabled(const char* channel);
// Whether any channel could be on (cheaper than asking for each channel).
bool log_any();
void log(const char* channel, const std::string& text);
}  // namespace aj::detail

// The optimizing pipeline: simplify -> (plan cache) -> fuse -> assign
// buffers, listed in one function (pipeline.cpp). It plans; exec/execute.hpp
// runs the plan on a backend.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "graph/kernel.hpp"
#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"

namespace aj::opt {

// Steps in dependency order and the buffers they use.
struct Plan {
  Schedule schedule;
  BufferPlan buffers;
};

// The plan for evaluating the roots (and what they need); `use_cache`: from
// (and into) the plan cache, when an earlier evaluation had the same
// structure. Runs simplify, which rewrites nodes into equivalent ones.
// `whole`: a plan-cache hit is translated whole (every field explain and
// the DOT dump read), as it is anyway when a log channel or verification is on.
Plan plan(const std::vector<NodeId>& roots, bool use_cache = true, bool whole = false);
// The same into `*p`, whose memory a plan-cache hit reuses (the evaluation of
// a traced call allocates nothing for its plan once it has had one).
void plan_into(const std::vector<NodeId>& roots, Plan* p, bool use_cache = true, bool whole = false);

// That plan as text (kernels, fused ops, buffer slots, in-place reuse),
// planned from scratch; computes nothing.
std::string plan_text(const std::vector<NodeId>& roots);

// The kernels of that plan, in order (for aj::jit::kernel_ir).
std::vector<Kernel> plan_kernels(const std::vector<NodeId>& roots);

// Switch a pass off by name for tests ("simplify": no rewrites; "fuse": one
// kernel per op; "assign_buffers": no donation, a fresh buffer per value);
// true again to restore. AJ_DISABLE_PASSES=name,name does the same.
void set_pass_enabled(const std::string& name, bool enabled);

}  // namespace aj::opt

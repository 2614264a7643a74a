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
#include "opt/program.hpp"

namespace aj::opt {

// Steps in dependency order, the buffers they use and the planner's other
// decisions; and the program that runs them (opt/program.hpp).
struct Plan {
  Schedule schedule;
  BufferPlan buffers;
  std::vector<std::uint8_t> epilogues;  // per step (decide_epilogues)
  // What an evaluation runs: the program (shared with the plan cache, which
  // keeps it prepared), the node of each of its values in this graph, and
  // this graph's kernel scalars where they differ from the program's.
  std::shared_ptr<const Program> program;
  std::vector<NodeId> value_nodes;
  std::vector<ScalarOverride> scalars;
  // The partition was kept from a plan made at other numbers (the plan
  // cache's materialize), not chosen by fuse for these: valid under every
  // rule fuse keeps, but fuse's greedy boundaries, whose order depends on
  // numbers, may have fallen elsewhere (opt/materialize.hpp).
  bool renumbered = false;
};

// The plan for evaluating the roots (and what they need); `use_cache`: from
// (and into) the plan cache, when an earlier evaluation had the same
// structure. Runs simplify, which rewrites nodes into equivalent ones.
// `whole`: a plan-cache hit is translated whole (every field explain, the DOT
// dump and aj::compile's programs read), as it is anyway when a log channel or
// verification is on; otherwise a hit fills only the schedule's roots, order
// and materializations besides the program. `for_compile`: the plan is for
// aj::compile's program, run again at other extents, so simplify keeps what
// holds at these extents only (concatenates of slices that continue each other).
Plan plan(const std::vector<NodeId>& roots, bool use_cache = true, bool whole = false);
// The same into `*p`, whose memory a plan-cache hit reuses (the evaluation of
// a traced call allocates nothing for its plan once it has had one).
void plan_into(const std::vector<NodeId>& roots, Plan* p, bool use_cache = true, bool whole = false,
               bool for_compile = false);

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

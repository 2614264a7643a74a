// Text of an optimized plan (schedule + buffer plan), for aj::explain and
// AJ_LOG=plan. Deterministic: dense node numbers as in aj::dump, no pointers.
#pragma once

#include <string>

#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"

namespace aj {

std::string describe_plan(const Schedule& s, const BufferPlan& b);
// The same plan as a Graphviz picture: each kernel a cluster of its fused ops,
// library and view steps, the arrays read (inputs), the buffer slot of every
// value, in-place edges, and each node's source line.
std::string plan_dot(const Schedule& s, const BufferPlan& b);
std::string dump(const BufferPlan& b, const Schedule& s);

}  // namespace aj

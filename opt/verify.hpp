// verify: the IR's rules (graph/graph.hpp, opt/passes/assign_buffers.hpp)
// checked, so a pass that breaks one fails at once, next to its cause, instead
// of as a wrong number much later.
//
// The pipeline runs these after every pass when verification is on: in debug
// builds (no NDEBUG), when AJ_VERIFY=1 (AJ_VERIFY=0 turns it off), or after
// set_verify(true) (the test binary does that). A broken rule throws an
// internal aj::Error naming the pass, the node and the rule.
#pragma once

#include <string>

#include "graph/graph.hpp"

namespace aj {

struct Schedule;
struct BufferPlan;

// Every live node: inputs alive and of the shapes/dtypes its op demands,
// reduction axes sorted and in range, views consistent with their input,
// evaluated nodes leaves with a storage and one stride per axis, and the
// `uses` counts equal to the number of live readers.
void verify(const Graph& g, const char* after_pass = "?");

// A buffer plan: values sharing a slot are never live at the same step (a
// donated output continues its donor, which is read last by that step),
// slots are large enough, donations keep the byte size.
void verify(const BufferPlan& b, const Schedule& s, const char* after_pass = "?");

bool verify_enabled();
void set_verify(bool on);

}  // namespace aj

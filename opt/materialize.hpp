// materialize: a plan made again at other numbers (Plan -> Plan).
//
// A plan is decisions and numbers. The decisions that cost planning time are
// fuse's: which nodes are stored, which kernel computes what, in which order
// (the partition). The numbers (kernel extents, strides, offsets, scalars
// made from extents, view layouts, byte counts, library calls) are what the
// same code computes from node shapes, leaf layouts and view payloads.
// materialize keeps the partition of `kept` (a plan of a graph with the same
// structure, translated to this graph's nodes) and runs that code again on
// this graph: each kernel lowered (opt/lower.hpp) over its space node's shape,
// each view's layout, each copy kernel; then concat_slices, assign_buffers,
// the epilogue decisions and the program, as planning does after fuse.
//
// Guarantees: the plan returned keeps every rule fuse keeps at these
// numbers, with the kept partition; where a guard does not hold, it returns
// false with the reason (the caller plans from scratch). It is the plan
// fuse makes for this graph unless fuse's greedy boundaries fall elsewhere
// at these numbers (a count not proportional to the extents, such as a pad's
// inside read through a slice, decides which node of a stencil chain breaks
// the work rule first): then the partitions differ, both valid
// (Plan::renumbered; docs/extent-replays.md). The guards:
//  - every kernel lowers over its space with no conflict and no boundary,
//    to a kernel of the kept structure (the same instructions, streams of
//    the same nodes with strides of the same kinds, the same scalars'
//    sources) that reads what earlier steps make;
//  - every view step is still a view of its input's layout;
//  - the work rule holds at these numbers (no node evaluated at more points
//    than fuse allows: past its elements only in two kernels, within
//    work_limit, the second under one index map), and every node stored for
//    the work rule would still break it if the kernels that load it computed
//    it instead.
// (Decisions that compare numbers only for equality, fuse's spaces and
// broadcasts, are fixed by the plan cache's key, which keeps which numbers
// are equal; opt/plan_cache.hpp.)
#pragma once

#include <string>
#include <vector>

#include "opt/pipeline.hpp"

namespace aj::opt {

bool materialize(const Plan& kept, Plan* out, std::string* why);

}  // namespace aj::opt

// scatter and scatter_add as host library steps (graph/library.hpp): the
// result is the array (input 0) with the updates (input 2) set or added at
// the indices (input 1) along `axis`, in the updates' row-major order, so
// duplicate indices accumulate (scatter_add) or the last one wins (scatter)
// exactly as in the reference interpreter; out-of-range indices are dropped
// (base/index_rules.hpp). When `out` is input 0's buffer (the planner
// donated it: contiguous, offset 0) the array is updated in place, else it
// is copied into `out` first.
#pragma once

#include <vector>

#include "graph/library.hpp"

namespace aj::cpu {

void scatter(const LibraryCall& call, const std::vector<const void*>& inputs, void* out);

}  // namespace aj::cpu

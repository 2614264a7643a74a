// Library steps on the host (graph/library.hpp): matmul (host_matmul.hpp:
// OpenBLAS for floats, operands read in place) and concatenate over strided
// operands into a contiguous result, with the semantics of
// base/semantics.hpp. Node-free: called by the host backend.
#pragma once

#include <vector>

#include "graph/library.hpp"

namespace aj::cpu {

// `inputs`: each operand's buffer base (element 0 of its storage); `out`:
// the contiguous result.
void run_library(const LibraryCall& call, const std::vector<const void*>& inputs, void* out);

}  // namespace aj::cpu

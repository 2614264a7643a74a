// Library steps on the host (graph/library.hpp): matmul (host_matmul.hpp:
// OpenBLAS for floats, operands read in place), sort/argsort/topk
// (host_sort.hpp), scatter (host_scatter.hpp) and concatenate over strided
// operands into a contiguous result, with the semantics of
// base/semantics.hpp. Node-free: called by the host backend.
#pragma once

#include <vector>

#include "graph/kernel.hpp"
#include "graph/library.hpp"

namespace aj::cpu {

// `inputs`: each operand's buffer base (element 0 of its storage); `out`:
// the contiguous result.
void run_library(const LibraryCall& call, const std::vector<const void*>& inputs, void* out);

// A matmul whose result the elementwise kernel `epilogue` reads at its own
// index (a bias, a scale, an activation: exec::Backend::run_library_then):
// the kernel runs on each block of the product as soon as the block is
// computed, on the thread that computed it, while it is in cache. The
// epilogue's outputs may be `out` itself (in place); they must not overlap
// the matmul's operands. Other calls run the step, then the kernel.
void run_library_then(const LibraryCall& call, const std::vector<const void*>& inputs, void* out,
                      const Kernel& epilogue, const std::vector<const void*>& epilogue_inputs,
                      const std::vector<void*>& epilogue_outputs);

}  // namespace aj::cpu

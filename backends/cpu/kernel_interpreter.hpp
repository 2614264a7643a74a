// Runs one Kernel (graph/kernel.hpp) on the host by interpreting its
// instructions over blocks of iteration points. Correct, not fast: it is the
// executor until the LLVM JIT compiles the same IR, and it computes every
// scalar with the reference semantics (base/semantics.hpp), so
// results are bit-identical to the reference interpreter (reductions
// accumulate in the same row-major order).
#pragma once

#include <vector>

#include "graph/kernel.hpp"

namespace aj::cpu {

// inputs[k]: base pointer of input stream k (ignored for index streams);
// outputs[j]: base pointer of output j. Offsets and strides come from the kernel.
void run_kernel(const Kernel& k, const std::vector<const void*>& inputs,
                const std::vector<void*>& outputs);

}  // namespace aj::cpu

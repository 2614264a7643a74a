// Splitting a reduction kernel over its reduced range: a Kernel -> Kernels
// rewrite for a launcher whose reduction has fewer outer points than it has
// threads (a whole-array sum has one), so that it cannot split it over its
// outer points. The host launcher runs it (backends/cpu/host_launch.cpp).
//
// A kernel `k` split into `parts` parts becomes two kernels:
//   partial: `k` itself, run once per part over a part of its first reduced
//            axis (`axis`), with each Reduce's accumulator stored to a
//            scratch slot [part][outer point] (phase-0 outputs stored as
//            usual);
//   finish:  over [outer axes of k..., parts], reducing the parts with the
//            same combiner, then `k`'s epilogue (phase 1) and its outputs.
// Float sums and products are reassociated (within docs/semantics.md's
// tolerance, as the JIT's vector accumulators already do); max/min/all/any
// are exact. An argmax/argmin leaves two scratch slots per part: its index
// (counted from its part's first point: the launcher makes it global after
// the parts ran) and its best value (a max/min over the same operand, which
// compares the same), and the finish takes the lowest index among the best
// values.
//
// What the launcher relies on:
//  - Scratch is laid out [part][outer point], outer points row-major: slot r
//    of part q, outer point o is element q * outer + o of slot r's buffer.
//    The partial kernel's scratch outputs have stride 0 on the split axis
//    and start at element 0 (each part's launch adds q * outer to their
//    offsets); the finish kernel reads them with stride `outer` on its last
//    axis, starting at element 0.
//  - The partial kernel's outputs are `k`'s phase-0 outputs
//    (`partial_outputs` names them, in order), then one per scratch slot, in
//    the order of `slots`; its inputs are `k`'s.
//  - The finish kernel's inputs are scratch slots and inputs of `k`, as
//    `finish_inputs` says; its outputs are `k`'s phase-1 outputs
//    (`finish_outputs` names them, in order). Both kernels carry `k`'s scalars.
//  - The split depends only on `k` and `parts`, never on buffers: the same
//    kernel is split the same way from call to call.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/kernel.hpp"

namespace aj {

struct SplitReduction {
  Kernel partial, finish;
  std::size_t axis = 0;   // the split axis of `partial` (k's first reduced axis)
  std::int64_t parts = 0, outer = 0;  // outer: k's outer points
  struct Slot {
    std::size_t instr;       // the Reduce instruction of `partial` stored here
    DType dtype;
    bool index = false;      // an arg reduction's index, local to its part
  };
  std::vector<Slot> slots;                     // scratch per part and outer point
  std::vector<int> finish_inputs;              // per finish input: scratch slot (>= 0) or -(kernel input + 1)
  std::vector<std::size_t> partial_outputs;    // kernel outputs kept in `partial` (phase 0)
  std::vector<std::size_t> finish_outputs;     // kernel outputs made by `finish` (phase 1)
};

// The split of reduction kernel `k` (k.is_reduction()) into `parts` parts;
// nullopt when it cannot be split: a Scan (its running value needs its axis
// walked in order), an arg reduction with candidate indices of its own, or an
// epilogue that reads something the finish kernel cannot (a phase-0 value
// that is neither a constant nor a load constant over the reduced axes).
// Then the kernel runs unsplit.
std::optional<SplitReduction> split_reduction(const Kernel& k, std::int64_t parts);

}  // namespace aj

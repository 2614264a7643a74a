// concat_slices: the producers of a concatenate's pieces write them straight
// into their slices of its result (Schedule -> Schedule, after fuse).
//
// Guarantees:
//  - A piece of a Concat step (an input, or the input of a reshape view that
//    only inserts or removes size-1 axes, as stack makes) that a kernel step
//    before it produces, that no other node reads and that is not a root of
//    the evaluation, is written by that kernel into the concatenate's
//    buffer (a handle may hold the piece: it is then a view of that buffer,
//    which stays alive as long as the handle does): the kernel
//    output's stream addresses the slice (the concatenate's strides, the
//    slice's offset), Step::into names the concatenate, and the piece's
//    layout (Schedule::layouts) is that slice. The piece is then a view of
//    the concatenate's buffer and the concat step copies only the others
//    (LibraryOperand::in_place).
//  - Nothing else changes: the same kernels run in the same order, with the
//    same values; only where one output of each goes.
// The executor allocates the concatenate's buffer when the first kernel
// writes into it; assign_buffers counts it live from that step.
#pragma once

#include "opt/passes/fuse.hpp"

namespace aj {

// Returns the number of pieces placed.
int place_concat_slices(Schedule& s);

}  // namespace aj

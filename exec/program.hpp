// The one step loop: every evaluation, eager or compiled, runs a Program
// (opt/program.hpp) here, through the Backend interface (exec/backend.hpp).
//
// Per step:
//  - kernel: inputs that live on the host while the program runs on a device
//    are copied over for the step; each output writes into the buffer of the
//    concatenation it is a piece of (allocated by the first piece), or a
//    caller's destination (Array::eval_into), or takes over its donor's
//    buffer when the donation predicate holds, else a new buffer; the backend
//    runs the kernel (prepared once where the program keeps it).
//  - view: the value shares its input's buffer with the planned layout.
//  - library: matmul, concatenate, sort/argsort/topk, scatter as a
//    LibraryCall into a new contiguous buffer; a concatenation into the
//    buffer its pieces' kernels wrote already (those pieces are not copied
//    again); an Overwrites step (scatter) into its first operand's buffer when
//    the donation predicate holds; a matmul with its epilogue blockwise when
//    the planner decided so (ProgramStep::then); a collective whose result
//    the next step does not read is started (Backend::start_library) and
//    waited for before its first reader and before the run ends, its input
//    and output buffers held until then.
// The donation predicate (one for every caller): the donor's buffer has no
// other holder (Values::sole_owner), is not borrowed, is on this device and
// has the output's size.
// With verification on (AJ_VERIFY, tests), the buffers of values live at the
// same step never overlap (a donated output continues its donor) and no
// kernel output overlaps an input it does not take over.
//
// Where values live is the caller's (a Values type): a vector for
// aj::compile's replays (VectorValues), the graph's nodes for an eager
// evaluation (GraphValues: each value made is set on its node as a leaf at
// once, and the graph's lock is let go while the backend runs).
#pragma once

#include <memory>
#include <vector>

#include "exec/backend.hpp"
#include "opt/program.hpp"

namespace aj::exec {

using opt::Program;
using opt::ProgramStep;
using opt::ScalarOverride;

// aj::compile's values: bound arguments, then what run_program fills in.
struct VectorValues {
  std::vector<std::shared_ptr<Storage>> storage;  // per value
};

// An eager evaluation's values: the nodes of the current graph (whose lock
// the caller holds). `nodes[v]`: the node of value v.
struct GraphValues {
  const std::vector<NodeId>* nodes = nullptr;
};

// Runs `p` on `target`. VectorValues: values[0 .. bound) are bound by the
// caller (the rest sized and filled here); afterwards storage[results[k]]
// is result k. GraphValues: bound values are read from their nodes and every
// value made becomes its node's result. `overrides`: this run's kernel
// scalars that are not the program's own.
void run_program(const Program& p, Backend& target, VectorValues& values,
                 const std::vector<ScalarOverride>& overrides = {});
void run_program(const Program& p, Backend& target, GraphValues& values,
                 const std::vector<ScalarOverride>& overrides = {});

// The step of the program the calling thread is running now (-1: none):
// what aj::compile's allocation limit names when it refuses a buffer.
int current_step();

// Makes every kernel step ready for many launches on `target`
// (Backend::prepare_kernel), before the program is shared.
void prepare_program(Program& p, Backend& target);

// Caller memory a kernel output is written into instead of a new buffer
// (Array::eval_into): core registers the hook; it returns null for every
// node but the one asked for. Host evaluations only.
using DestinationHook = std::shared_ptr<Storage> (*)(NodeId node, std::size_t bytes);
void set_destination_hook(DestinationHook hook);

}  // namespace aj::exec

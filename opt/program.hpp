// A Program: a plan (opt/pipeline.hpp) in the form every evaluation runs,
// eager or compiled (exec/program.hpp runs it). Its steps read and write
// numbered values instead of graph nodes, and carry every number and decision
// the run needs: kernels with their strides, offsets and scalars, library
// calls, the layout each value is made with, the buffer a kernel output takes
// over (a donor) or writes into (a concatenation's), whether a library step
// runs the next kernel as its epilogue, and when each value's last reader is.
//
// Values: 0 .. bound-1 are bound by whoever runs the program (aj::compile: its
// array arguments; an eager evaluation: every evaluated array the plan reads,
// found in the graph), then the arrays the program holds itself (captured:
// aj::compile's constants), then what the steps make.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "graph/kernel.hpp"
#include "graph/library.hpp"
#include "opt/lower.hpp"
#include "opt/passes/assign_buffers.hpp"

namespace aj::opt {

struct Plan;

struct ProgramStep {
  enum class Kind : std::uint8_t { kernel, view, library };
  Kind kind = Kind::kernel;
  bool then = false;  // library: step k + 1 (a kernel) runs as its epilogue, blockwise
  Kernel kernel;      // kernel: strides, offsets and scalars as planned
  // kernel: what the backend keeps of it (Backend::prepare_kernel), filled
  // once on the program's first run on a device (a program run many times:
  // aj::compile's, the plan cache's); null: run_kernel every time.
  std::shared_ptr<PreparedCell> prepared;
  std::vector<int> inputs;   // kernel: per stream (-1: index stream); view, library: per operand
  std::vector<int> outputs;  // kernel: per output; view, library: one
  // kernel: per output, the value whose buffer it may take over (-1: none);
  // library: one, the operand an Overwrites step (scatter) may update in place.
  // Taken at run time only when nothing else holds that buffer (the one
  // donation predicate, exec/program.hpp).
  std::vector<int> donors;
  // kernel: per output, the concatenation whose buffer it writes (at the
  // slice its stream addresses; opt/passes/concat_slices.hpp), -1: a buffer
  // of its own. The first piece run allocates the concatenation's buffer.
  std::vector<int> into;
  std::vector<std::size_t> bytes;  // per output: its buffer's bytes (into: the concatenation's)
  std::vector<Layout> layouts;     // per output: the strides and offset of the value made
  LibraryCall call;                // library
  // kernel: where each scalar's value comes from (nodes of the graph the plan
  // was made for; a plan-cache hit reads them again from its own graph).
  std::vector<ScalarSource> scalar_sources;
  std::vector<int> release;  // values whose last reader this step is (not bound ones)
  // Where the user traced the value this step makes (its first output), for
  // the profiler (arrayjit/profile.hpp).
  Loc loc;
};

struct Program {
  int bound = 0;                                     // values 0 .. bound-1
  std::vector<std::shared_ptr<Storage>> captured;   // values bound .. bound + captured-1
  int values = 0;                                    // how many in all
  std::vector<ProgramStep> steps;
  std::vector<int> results;  // the value of each result (aj::compile's)
  std::vector<DType> result_dtypes;
  std::vector<Shape> result_shapes;
  std::vector<Layout> result_layouts;
  Device device;
  // aj::compile's contract (CompileOptions), filled when its trace is
  // captured: per bound value, why no result takes over its buffer ("" when
  // one does); per step, its op and the user's line ("matmul at f.cpp:12").
  std::vector<std::string> not_in_place;
  std::vector<std::string> step_where;
  // What a kept program runs that the graph held for it when it was traced:
  // the host callbacks its steps name (weakly, as a plan's steps do), held
  // from the capture on, since the nodes holding them die before the program.
  std::vector<std::shared_ptr<const void>> kept;
};

// The program of plan `p` (graph lock held; the plan's evaluated leaves are
// read from the graph now). `args`: nodes bound first, in order (kNoNode: one nothing reads); every other
// evaluated leaf the plan reads is captured (`capture_leaves`) or bound after
// them. `results`: the nodes the program returns (evaluated ones among them
// are bound or captured values). `value_nodes` (when given): the node of each
// value, kNoNode for none. Null when the plan reads a node that is neither
// bound, captured nor made by a step.
std::unique_ptr<Program> make_program(const Plan& p, const std::vector<NodeId>& args,
                                      const std::vector<NodeId>& results, Device device, bool capture_leaves,
                                      std::vector<NodeId>* value_nodes = nullptr);

// A kernel scalar of one run that is not the program's own: aj::compile's
// scalar arguments, a plan-cache hit's constants. Sorted by step.
struct ScalarOverride {
  int step = 0, scalar = 0;
  KScalar value;
};

// Readable, deterministic text: one line per step, its values and decisions
// ("k2 kernel in v3,v4 -> v7 (donor v3)").
std::string dump(const Program& p);

// The LibraryCall of library node `n` whose inputs have these layouts.
LibraryCall library_call(const Node& n, const std::vector<Layout>& inputs);

// From this many result elements a matmul runs its elementwise epilogue on
// each block of the product (Backend::run_library_then); below it the two run
// one after the other (blockwise costs more than it saves in small products).
inline constexpr std::int64_t kEpilogueMinElements = 1 << 14;

// The planner's epilogue decisions: per step, whether library step k runs
// kernel step k + 1 as its epilogue (a matmul's product read by an
// elementwise kernel over its shape at its own index, whose other inputs
// exist before step k, that does not take over an operand of the matmul, from
// kEpilogueMinElements elements).
std::vector<std::uint8_t> decide_epilogues(const Schedule& s, const BufferPlan& b);

}  // namespace aj::opt

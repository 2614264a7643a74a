// A Program: a plan (opt/pipeline.hpp) with the graph taken out, for
// aj::compile's replays (core/compile/compile.cpp). Each step reads and writes
// numbered values instead of graph nodes, so a replay binds new argument
// buffers and runs the steps again without tracing, planning or touching a
// graph. Layouts, extents, kernel IR and scalar values are those of the
// evaluation the program was made from: a program replays only calls whose
// arguments have exactly those dtypes, shapes and layouts (the caller checks).
//
// Values: 0 .. args-1 are the arguments, then the arrays the plan read that
// were evaluated already (captured, held by the program), then what steps
// make. After its last reader a value's buffer is let go at once, so later
// steps of the same replay reuse it from the pool, as the buffer plan said.
#pragma once

#include <memory>
#include <vector>

#include "exec/backend.hpp"
#include "opt/pipeline.hpp"

namespace aj::exec {

// A value's buffer during a run. Its layout is fixed by the program (the
// steps carry their own strides; a result's is Program::result_layouts).
struct Value {
  std::shared_ptr<Storage> storage;
};

struct ProgramStep {
  enum class Kind { kernel, view, library };
  Kind kind = Kind::kernel;
  Kernel kernel;                           // kernel: strides, offsets, scalars as planned
  std::shared_ptr<const PreparedKernel> prepared;  // kernel: the backend's, when it keeps one
  std::vector<int> inputs;                 // kernel: per stream (-1: index stream); others: operands
  std::vector<int> outputs;                // kernel: per output; view/library: one
  std::vector<int> donors;                 // kernel: per output, the value it may take over (-1: none)
  std::vector<std::size_t> bytes;          // per output
  std::vector<std::vector<std::int64_t>> out_strides;  // kernel: per output, row-major
  LibraryCall call;                        // library
  bool then = false;                       // library: the next step is its epilogue, run with it
  std::vector<std::int64_t> view_strides;  // view: the output's layout
  std::int64_t view_offset = 0;
  std::vector<int> release;                // values whose last reader this step is
};

struct Program {
  int args = 0;
  std::vector<Value> captured;      // values args .. args + captured - 1
  int values = 0;                   // how many values in all
  std::vector<ProgramStep> steps;
  std::vector<int> results;         // the value of each result
  std::vector<DType> result_dtypes;
  std::vector<Shape> result_shapes;
  std::vector<Layout> result_layouts;  // strides and offset of each result
  Device device;
};

// The program of plan `p` (the caller holds the graph lock; the plan's
// evaluated leaves are read from the graph now). `args`: the argument
// nodes, in order; `results`: the nodes the program returns (evaluated ones
// among them map to arguments or captured values). Null when the plan reads
// a node that is neither an argument, captured, nor made by a step.
std::unique_ptr<Program> make_program(const opt::Plan& p, const std::vector<NodeId>& args,
                                      const std::vector<NodeId>& results, Device device);

// Makes every kernel step ready for many launches on `target`
// (Backend::prepare_kernel).
void prepare_program(Program& p, Backend& target);

// A kernel scalar of one replay that is not the program's (aj::compile's
// scalar arguments); sorted by step.
struct ScalarOverride {
  int step = 0, scalar = 0;
  KScalar value;
};

// Runs the program on `target` with `values[0 .. args)` bound to the
// arguments (the rest sized and filled here); afterwards values[results[k]]
// is result k. An argument whose buffer nothing else holds (use_count 1) may
// be written in place where the plan donated it.
void run_program(const Program& p, Backend& target, std::vector<Value>& values,
                 const std::vector<ScalarOverride>& overrides = {});

}  // namespace aj::exec

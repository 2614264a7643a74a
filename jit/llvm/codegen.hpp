// Kernel IR -> LLVM IR. One function per kernel,
//   void <name>(const HostArgs* args, i64 begin, i64 end)
// (jit/host_kernel.hpp). The loops are written so that LLVM's loop vectorizer
// does the rest:
//  - elementwise: segments along the last axis, an inner loop over the
//    segment whose streams are specialized on the stride kind (0: hoisted
//    broadcast, 1: unit stride, other: run-time stride);
//  - reducing the last axis: per kInnerRows outer points, nested loops over
//    the reduced axes with a scalar accumulator each; Sum/Prod of floats
//    may reassociate there (vector accumulators + horizontal combine;
//    docs/semantics.md);
//  - reducing other axes: a block of outputs along the last axis with an
//    accumulator array (kOuterAccBytes), rows read contiguously, up to
//    kOuterRows of them per pass (fewer as the work per row grows),
//    vectorized across outputs, each output summed in row-major order
//    (bit-exact);
//  - argmax/argmin keep (best value, index) pairs: across outputs in the
//    outer-axis blocks, in kArgLanes lanes along the row when the last axis
//    is reduced (selects the vectorizer widens), folded to the lowest index
//    among the best values.
// Pad masks (KOp::InRange) and comparisons of an integer iota with a scalar
// split the elementwise inner loop into intervals on which every mask is
// constant: the points inside every pad (off every `arange == c`) run with
// the masks as constants (plain loads), the others with them loop-invariant,
// and what does not move over an interval is computed before its loop. Loads and stores carry alias scopes saying
// inputs and outputs are separate buffers (unless an output takes an input
// over in place): the buffer plan guarantees it, and LLVM then keeps a
// gather's per-row index out of the row loop.
// Scalar semantics are base/semantics.hpp's, without undefined
// behaviour (guarded integer division, saturating float->int casts).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/kernel.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace aj::jit {

// Last-axis reductions: outputs reduced side by side (codegen.cpp) when the
// work per element (ops, a math function counting 8) is at most
// kInnerRowsWork.
inline constexpr int kInnerRows = 4;
inline constexpr int kInnerRowsWork = 6;

// Outer-axis reductions: the accumulator block (L1-sized; rows stream
// through it, so the longer a row piece the better the prefetchers do) and
// the rows taken per pass over it. Measured on sum(x, 0) of f32
// [8192, 4096] (Zen 3): 256 outputs x 1 row ran 2-4x slower than the
// 4096 x 8 chosen.
inline constexpr std::int64_t kOuterAccBytes = 16384;
inline constexpr int kOuterRows = 8;
// ... while a row's work (counted as for kInnerRowsWork) is at most
// kOuterRowsWork / kOuterRows; heavier rows fewer at a time, down to one:
// each row of a pass is a copy of the kernel's body in the generated code.
inline constexpr int kOuterRowsWork = 32;

// Last-axis reductions in a kernel with an argmax/argmin: lanes of
// accumulators (half as many for 8-byte values), folded at the end.
inline constexpr int kArgLanes = 16;

// An arg reduction keeps its indices in i32 where the reduced axis is at
// most this long (a run-time branch; longer axes run a scalar i64 loop).
// INT32_MAX; tests lower it to run the i64 path on small arrays (kernels
// compiled meanwhile keep the value they were made with).
std::int64_t index_i32_limit();
void set_index_i32_limit(std::int64_t n);

// Whether the kernel's float sums or products may be reassociated (a float
// Reduce or Scan over the last axis: vector accumulators, then a horizontal
// combine, as the vectorizer chooses). Its bits then depend on the
// optimization pipeline, so it is never compiled by the quick tier
// (host_kernel.hpp), which would add in order.
bool reassociates(const Kernel& k);

// Throws aj::Error (internal) for IR that breaks graph/kernel.hpp's rules.
std::unique_ptr<llvm::Module> generate_module(const Kernel& k, const std::vector<int>& alias,
                                              const std::string& fn_name, llvm::LLVMContext& ctx);

}  // namespace aj::jit

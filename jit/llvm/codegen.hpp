// Kernel IR -> LLVM IR. One function per kernel,
//   void <name>(const HostArgs* args, i64 begin, i64 end)
// (jit/host_kernel.hpp). The loops are written so that LLVM's loop vectorizer
// does the rest:
//  - elementwise: segments along the last axis, an inner loop over the
//    segment whose streams are specialized on the stride kind (0: hoisted
//    broadcast, 1: unit stride, other: run-time stride);
//  - reducing the last axis: per outer point, nested loops over the reduced
//    axes with a scalar accumulator; Sum/Prod of floats may reassociate there
//    (vector accumulators + horizontal combine; docs/semantics.md);
//  - reducing other axes: a block of up to kOuterBlock outputs along the last
//    axis with an accumulator array, rows read contiguously, vectorized
//    across outputs, each output summed in row-major order (bit-exact).
// Scalar semantics are backends/reference/scalar_ops.hpp's, without undefined
// behaviour (guarded integer division, saturating float->int casts).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/kernel.hpp"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace aj::jit {

inline constexpr int kOuterBlock = 256;

// Throws aj::Error (internal) for IR that breaks graph/kernel.hpp's rules.
std::unique_ptr<llvm::Module> generate_module(const Kernel& k, const std::vector<int>& alias,
                                              const std::string& fn_name, llvm::LLVMContext& ctx);

}  // namespace aj::jit

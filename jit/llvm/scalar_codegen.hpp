// One scalar operation of Kernel IR as LLVM IR, with the semantics of
// base/semantics.hpp. Used by codegen.cpp inside its loops;
// everything emitted here is scalar, the loop vectorizer widens it (math
// functions through the SLEEF mappings of math_library.cpp).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "graph/kernel.hpp"

namespace aj::jit {

class ScalarCodegen {
 public:
  ScalarCodegen(llvm::IRBuilder<>& b, llvm::Module& m) : b_(b), m_(m) {}

  // Register type (bool is i1) and memory type (bool is i8).
  llvm::Type* type(DType t) const;
  llvm::Type* mem_type(DType t) const;

  // Unary, Binary, Where and (for kind Reduce) the combiner acc (+) x.
  // `operand` is the dtype of the first operand (differs from in.dtype for
  // compares and casts). `reassoc` lets a float Sum/Prod combine reassociate.
  llvm::Value* op(const KInstr& in, DType operand, llvm::Value* a, llvm::Value* b,
                  llvm::Value* c, bool reassoc);
  llvm::Value* convert(llvm::Value* x, DType from, DType to);
  llvm::Constant* identity(Op reduce_op, DType t) const;
  // A generator value at flat index `i` (runtime helper, see math_library.cpp).
  llvm::Value* generate(Op op, DType t, llvm::Value* scalars, llvm::Value* i);

 private:
  llvm::Value* unary_float(Op op, llvm::Value* x);
  llvm::Value* binary_int(Op op, DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* binary_float(Op op, llvm::Value* a, llvm::Value* b);
  llvm::Value* compare(Op op, DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* fmax_nan(llvm::Value* a, llvm::Value* b, bool is_max);
  llvm::Value* exp_f32(llvm::Value* x);
  llvm::Value* math(const char* name, llvm::Value* x, llvm::Value* y = nullptr);
  llvm::Value* pure_call(const std::string& name, llvm::Type* ret, llvm::ArrayRef<llvm::Value*> args,
                         bool reads_memory = false);
  llvm::Value* truth(llvm::Value* x, DType t);  // x != 0 as i1 (NaN is true)

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
};

}  // namespace aj::jit

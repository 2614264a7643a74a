// One scalar operation of Kernel IR as LLVM IR. Used by codegen.cpp inside
// its loops; everything emitted here is scalar, the loop vectorizer widens it.
//
// The semantics are base/semantics.hpp's own code: clang-19 compiles that
// header to bitcode at build time (jit/llvm/semantics_bitcode.cpp), and an
// elementwise op, cast or comparison is a call of its function there
// (aj_sem_unary_f32(op, x), ...) with the op a constant. finish_module links
// the functions a kernel calls into its module, where O3 inlines them, folds
// the op's switch away and vectorizes the rest. So a new op needs no code
// here.
//
// Written by hand, because it is faster and tested op by op against
// semantics.hpp (tests/test_jit_host.cpp, test_jit_math_edges.cpp):
//  - the math library: semantics.hpp's math::exp(x) is a hook the bitcode
//    declares (aj_math_exp_f32); its body here is SLEEF's scalar function,
//    which the vectorizer maps to SLEEF's vector functions
//    (jit/llvm/runtime_symbols.cpp), with fixes at SLEEF's range edges, or
//    an inline polynomial (f32 exp);
//  - reduction combiners, in the forms the vectorizer recognizes as
//    reductions (reassociating float sums, llvm.maximum, smax / umax by the
//    dtype's kind);
//  - f16 <-> f32 conversions where the CPU has F16C (one instruction);
//  - IEEE + - * / and comparisons, integer + - * and f32 <-> f64 (`plain`):
//    one instruction each, the IR the bitcode inlines to anyway, written
//    directly so that kernels of only these link no bitcode (cold compiles);
//    maximum/minimum as selects (the bitcode's branches vectorize worse).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "graph/kernel.hpp"

namespace aj::jit {

class ScalarCodegen {
 public:
  ScalarCodegen(llvm::IRBuilder<>& b, llvm::Module& m) : b_(b), m_(m) {}

  // Register type (bool is i1, halves their 16 bits) and memory type (bool is i8).
  llvm::Type* type(DType t) const;
  llvm::Type* mem_type(DType t) const;

  // Unary, Binary, Where and (for kind Reduce) the combiner acc (+) x.
  // `operand` is the dtype of the first operand (differs from in.dtype for
  // compares and casts). `reassoc` lets a float Sum/Prod combine reassociate.
  // Half dtypes appear only in casts and where (graph/kernel.hpp).
  llvm::Value* op(const KInstr& in, DType operand, llvm::Value* a, llvm::Value* b,
                  llvm::Value* c, bool reassoc);
  llvm::Value* convert(llvm::Value* x, DType from, DType to);
  llvm::Constant* identity(Op reduce_op, DType t, bool scan = false) const;  // scan: sem::scan_identity
  // A generator value at flat index `i`. `params`: its four kernel scalars
  // (f0, f1 as double, i0, extra as i64), loaded once at the kernel's entry.
  // Iota, linspace and eye are semantics.hpp's generate_value inlined from
  // the bitcode (index arithmetic the vectorizer widens); random numbers are
  // a runtime helper (runtime_symbols.cpp) reading `scalars`.
  llvm::Value* generate(Op op, DType t, llvm::Value* scalars, llvm::ArrayRef<llvm::Value*> params, llvm::Value* i);
  static bool generates_inline(Op op);
  // The icmp of comparison `op` (Eq .. Ge) on integer dtype t: signed or
  // unsigned as t's kind (arrayjit/dtypes.def).
  static llvm::CmpInst::Predicate int_predicate(Op op, DType t);

  // After a kernel is emitted into `m`: links in the semantics functions it
  // calls and writes the bodies of the math hooks they call.
  static void finish_module(llvm::Module& m);

 private:
  llvm::Value* sem_call(const char* kind, DType t, Op op, llvm::ArrayRef<llvm::Value*> args);
  llvm::Value* combine(Op op, DType t, llvm::Value* acc, llvm::Value* x, bool reassoc);
  llvm::Value* plain(Op op, DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* plain_unary(Op op, DType t, llvm::Value* a);
  static void link_semantics(llvm::Module& m);
  static void write_math_hooks(llvm::Module& m);
  llvm::Value* fmax_nan(llvm::Value* a, llvm::Value* b, bool is_max);
  llvm::Value* exp_f32(llvm::Value* x);
  llvm::Value* math(const std::string& name, llvm::Value* x, llvm::Value* y = nullptr);
  llvm::Value* pure_call(const std::string& name, llvm::Type* ret, llvm::ArrayRef<llvm::Value*> args,
                         bool reads_memory = false);
  llvm::Value* truth(llvm::Value* x, DType t);  // x != 0 as i1 (NaN is true)

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
};

}  // namespace aj::jit

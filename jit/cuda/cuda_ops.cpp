// The CUDA C expression of every scalar op (see cuda_ops.hpp): one switch
// over op categories, the op itself passed on as a constant.
#include "jit/cuda/cuda_ops.hpp"

#include "arrayjit/error.hpp"

namespace aj::cuda {

namespace {

std::string op_constant(Op op) { return std::string("aj::Op::") + op_info(op).id; }

// Generated CUDA C names a dtype's type in function-style casts (`T(0)`),
// which a type of two words (`unsigned char`) cannot be: each row's CUDA C
// type is one word, a typedef of jit/cuda/cuda_prelude_tail.cuh where C's
// name has two (i64 for long long).
constexpr bool one_word(const char* s) {
  for (; *s; ++s) {
    if (*s == ' ') return false;
  }
  return true;
}
#define AJ_ONE_WORD(e, name, bytes, cpp, cuda, kind, digits, fmt) \
  static_assert(one_word(cuda), "arrayjit/dtypes.def: the CUDA C type of " name " must be one word (a typedef of "  \
                                "jit/cuda/cuda_prelude_tail.cuh)");
AJ_DTYPES(AJ_ONE_WORD)
#undef AJ_ONE_WORD

}  // namespace

const char* ctype(DType t) { return dtype_info(t).cuda_type; }

std::string value_type(DType t) { return is_half(t) ? std::string("aj::") + dtype_name(t) : ctype(t); }

std::string convert_expr(DType to, const std::string& x) {
  return "aj::sem::convert<" + value_type(to) + ">(" + x + ")";
}

std::string op_expr(Op op, DType t, DType to, const std::string& x, const std::string& y) {
  switch (op_category(op)) {
    case OpCategory::Unary:
      if (op == Op::Cast) return convert_expr(to, x);
      return "aj::sem::unary(" + op_constant(op) + ", " + x + ")";
    case OpCategory::Binary:
      return std::string("aj::sem::") + (is_compare(op) ? "compare(" : "binary(") + op_constant(op) + ", " + x +
             ", " + y + ")";
    case OpCategory::Leaf:
    case OpCategory::Generator:
    case OpCategory::Ternary:
    case OpCategory::Reduce:
    case OpCategory::View:
    case OpCategory::Scan:   // KOp::Scan: scan_combine_expr with its combiner
    case OpCategory::Remap:  // index arithmetic of lowering
    case OpCategory::Other: break;
  }
  internal_error(std::string("cuda codegen: op ") + op_name(op) + " is not an elementwise op of " + dtype_name(t));
}

std::string combine_expr(Op op, DType t, const std::string& acc, const std::string& x) {
  if (!is_reduction(op)) internal_error(std::string("cuda codegen: not a combiner: ") + op_name(op));
  return "aj::sem::reduce_combine<" + value_type(t) + ">(" + op_constant(op) + ", " + acc + ", " + x + ")";
}

// A scan's combiner: a reduction's, or logaddexp (sem::scan_combiner).
bool is_scan_combiner(Op op) { return is_reduction(op) || op == Op::Logaddexp; }

std::string scan_combine_expr(Op op, DType t, const std::string& acc, const std::string& x) {
  if (!is_scan_combiner(op)) internal_error(std::string("cuda codegen: not a scan combiner: ") + op_name(op));
  return "aj::sem::scan_combine<" + value_type(t) + ">(" + op_constant(op) + ", " + acc + ", " + x + ")";
}

std::string scan_identity_expr(Op op, DType t) {
  if (!is_scan_combiner(op)) internal_error(std::string("cuda codegen: not a scan combiner: ") + op_name(op));
  return "aj::sem::scan_identity<" + value_type(t) + ">(" + op_constant(op) + ")";
}

std::string identity_expr(Op op, DType t) {
  if (!is_reduction(op)) internal_error(std::string("cuda codegen: not a combiner: ") + op_name(op));
  return "aj::sem::reduce_identity<" + value_type(t) + ">(" + op_constant(op) + ")";
}

}  // namespace aj::cuda

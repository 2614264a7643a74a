// The CUDA C expression of every scalar op (see cuda_ops.hpp). One switch over
// ops (op_expr), in the op table's order, with no default: a new op fails to
// compile here.
#include "jit/cuda/cuda_ops.hpp"

#include "arrayjit/error.hpp"

namespace aj::cuda {

namespace {

// A float math function by dtype: f32 calls the f-suffixed one, as the host's
// std:: overloads do.
std::string fn(DType t, const char* name, const std::string& x) {
  return std::string(name) + (t == DType::f32 ? "f(" : "(") + x + ")";
}

}  // namespace

const char* ctype(DType t) {
  switch (t) {
    case DType::bool_: return "bool";
    case DType::i32: return "int";
    case DType::i64: return "i64";
    case DType::f32: return "float";
    case DType::f64: return "double";
  }
  internal_error("cuda codegen: bad dtype");
}

// The expression of one elementwise op on operands x (and y), mirroring
// sem::unary / ref::binary / ref::compare / convert. `t` is the operand dtype
// (for Cast, the source dtype); `to` the result dtype.
std::string op_expr(Op op, DType t, DType to, const std::string& x, const std::string& y) {
  const bool b = t == DType::bool_, f = is_float(t);
  const std::string T = ctype(t);
  const std::string one = t == DType::f32 ? "1.0f" : "1.0";
  auto bad = [&]() -> std::string {
    internal_error(std::string("cuda codegen: op ") + op_name(op) + " is not an elementwise op of " +
                   dtype_name(t));
  };
  switch (op) {
    case Op::Input:
    case Op::Constant:
    case Op::Iota:
    case Op::Linspace:
    case Op::Eye:
    case Op::RandUniform:
    case Op::RandNormal:
    case Op::RandBits: return bad();
    // Unary. Integers and bool see only the ops tracing allows; the rest
    // return x unchanged, as sem::unary does.
    case Op::Neg: return b ? x : f ? "(-" + x + ")" : "aj_wneg(" + x + ")";
    case Op::Not: return b ? "(!" + x + ")" : x;
    case Op::Abs: return b ? x : f ? fn(t, "fabs", x) : "(" + x + " < 0 ? aj_wneg(" + x + ") : " + x + ")";
    case Op::Sign:
      return b ? x : f ? "aj_fsign(" + x + ")" : "(" + T + ")((" + x + " > 0) - (" + x + " < 0))";
    case Op::Floor: return f ? fn(t, "floor", x) : x;
    case Op::Ceil: return f ? fn(t, "ceil", x) : x;
    case Op::Round: return f ? fn(t, "rint", x) : x;  // nearbyint: half to even
    case Op::Exp: return f ? fn(t, "exp", x) : x;
    case Op::Log: return f ? fn(t, "log", x) : x;
    case Op::Log1p: return f ? fn(t, "log1p", x) : x;
    case Op::Expm1: return f ? fn(t, "expm1", x) : x;
    case Op::Sin: return f ? fn(t, "sin", x) : x;
    case Op::Cos: return f ? fn(t, "cos", x) : x;
    case Op::Tan: return f ? fn(t, "tan", x) : x;
    case Op::Tanh: return f ? fn(t, "tanh", x) : x;
    case Op::Sigmoid: return f ? "(" + one + " / (" + one + " + " + fn(t, "exp", "-" + x) + "))" : x;
    case Op::Sqrt: return f ? fn(t, "sqrt", x) : x;
    case Op::Rsqrt: return f ? "(" + one + " / " + fn(t, "sqrt", x) + ")" : x;  // not rsqrt: same bits as host
    case Op::Erf: return f ? fn(t, "erf", x) : x;
    case Op::Erfc: return f ? fn(t, "erfc", x) : x;
    case Op::Cast: return std::string("aj_cvt<") + ctype(to) + ">(" + x + ")";
    // Binary.
    case Op::Add: return b ? x : f ? "(" + x + " + " + y + ")" : "aj_wadd(" + x + ", " + y + ")";
    case Op::Sub: return b ? x : f ? "(" + x + " - " + y + ")" : "aj_wsub(" + x + ", " + y + ")";
    case Op::Mul: return b ? x : f ? "(" + x + " * " + y + ")" : "aj_wmul(" + x + ", " + y + ")";
    case Op::Div: return b ? x : f ? "(" + x + " / " + y + ")" : "aj_floordiv(" + x + ", " + y + ")";
    case Op::Mod: return b ? x : (f ? "aj_fmod(" : "aj_imod(") + x + ", " + y + ")";
    case Op::Max:
      return b ? "(" + x + " || " + y + ")" : f ? "aj_fmax(" + x + ", " + y + ")"
                                                : "(" + x + " > " + y + " ? " + x + " : " + y + ")";
    case Op::Min:
      return b ? "(" + x + " && " + y + ")" : f ? "aj_fmin(" + x + ", " + y + ")"
                                                : "(" + x + " < " + y + " ? " + x + " : " + y + ")";
    case Op::Pow:
      return b ? x : f ? std::string(t == DType::f32 ? "powf(" : "pow(") + x + ", " + y + ")"
                       : "aj_ipow(" + x + ", " + y + ")";
    case Op::Eq: return "(" + x + " == " + y + ")";
    case Op::Ne: return "(" + x + " != " + y + ")";
    case Op::Lt: return "(" + x + " < " + y + ")";
    case Op::Le: return "(" + x + " <= " + y + ")";
    case Op::Gt: return "(" + x + " > " + y + ")";
    case Op::Ge: return "(" + x + " >= " + y + ")";
    case Op::And: return b ? "(" + x + " && " + y + ")" : x;
    case Op::Or: return b ? "(" + x + " || " + y + ")" : x;
    case Op::Where:
    case Op::Sum:
    case Op::Prod:
    case Op::ReduceMax:
    case Op::ReduceMin:
    case Op::All:
    case Op::Any:
    case Op::ArgMax:
    case Op::ArgMin:
    case Op::Reshape:
    case Op::Transpose:
    case Op::Broadcast:
    case Op::Slice:
    case Op::Concat:
    case Op::MatMul:
    case Op::CumSum:  // scans run KOp::Scan with Sum/Prod (combine_expr)
    case Op::CumProd:
    case Op::Sort:
    case Op::ArgSort:
    case Op::TopK:
    case Op::ArgTopK:
    case Op::Gather:
    case Op::Pad:
    case Op::ScatterAdd:
    case Op::Scatter: return bad();
  }
  return bad();
}

// sem::reduce_combine and reduce_identity.
std::string combine_expr(Op op, DType t, const std::string& acc, const std::string& x) {
  switch (op) {
    case Op::Sum: return op_expr(Op::Add, t, t, acc, x);
    case Op::Prod: return op_expr(Op::Mul, t, t, acc, x);
    case Op::ReduceMax: return op_expr(Op::Max, t, t, acc, x);
    case Op::ReduceMin: return op_expr(Op::Min, t, t, acc, x);
    case Op::All: return std::string("(") + ctype(t) + ")(" + acc + " && " + x + ")";
    case Op::Any: return std::string("(") + ctype(t) + ")(" + acc + " || " + x + ")";
    case Op::ArgMax:
    case Op::ArgMin:  // (value, index) pairs: cuda_source.cpp
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  internal_error(std::string("cuda codegen: not a combiner: ") + op_name(op));
}

std::string scan_identity_expr(Op op, DType t) {
  if (op == Op::Sum && is_float(t)) return t == DType::f32 ? "(-0.0f)" : "(-0.0)";  // sem::scan_identity
  return identity_expr(op, t);
}

std::string identity_expr(Op op, DType t) {
  const std::string T = ctype(t);
  switch (op) {
    case Op::Sum:
    case Op::Any: return T + "(0)";
    case Op::Prod:
    case Op::All: return T + "(1)";
    case Op::ReduceMax:
    case Op::ReduceMin: {
      const bool max = op == Op::ReduceMax;
      if (t == DType::f32) return max ? "(-__int_as_float(0x7f800000))" : "__int_as_float(0x7f800000)";
      if (t == DType::f64) {
        return max ? "(-__longlong_as_double(0x7ff0000000000000LL))" : "__longlong_as_double(0x7ff0000000000000LL)";
      }
      if (t == DType::bool_) return max ? "false" : "true";
      return "aj_t<" + T + ">::" + (max ? "lo()" : "hi()");
    }
    case Op::ArgMax:
    case Op::ArgMin:  // (value, index) pairs: cuda_source.cpp
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  internal_error(std::string("cuda codegen: not a combiner: ") + op_name(op));
}

}  // namespace aj::cuda

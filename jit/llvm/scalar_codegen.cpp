#include "jit/llvm/scalar_codegen.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <llvm/IR/Intrinsics.h>

#include "arrayjit/error.hpp"
#include "jit/llvm/runtime_symbols.hpp"

namespace aj::jit {

using llvm::Value;

llvm::Type* ScalarCodegen::type(DType t) const {
  auto& c = m_.getContext();
  switch (t) {
    case DType::bool_: return llvm::Type::getInt1Ty(c);
    case DType::i32: return llvm::Type::getInt32Ty(c);
    case DType::i64: return llvm::Type::getInt64Ty(c);
    case DType::f32: return llvm::Type::getFloatTy(c);
    case DType::f64: return llvm::Type::getDoubleTy(c);
  }
  internal_error("jit: bad dtype");
}

llvm::Type* ScalarCodegen::mem_type(DType t) const {
  return t == DType::bool_ ? llvm::Type::getInt8Ty(m_.getContext()) : type(t);
}

Value* ScalarCodegen::truth(Value* x, DType t) {
  if (t == DType::bool_) return x;
  if (is_float(t)) return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
  return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
}

// A call the optimizer may treat as a pure function: no side effects, so it
// can be hoisted, removed, and (for math) vectorized.
Value* ScalarCodegen::pure_call(const std::string& name, llvm::Type* ret,
                                llvm::ArrayRef<Value*> args, bool reads_memory) {
  std::vector<llvm::Type*> params;
  for (Value* a : args) params.push_back(a->getType());
  auto* fty = llvm::FunctionType::get(ret, params, false);
  llvm::FunctionCallee callee = m_.getOrInsertFunction(name, fty);
  auto* f = llvm::cast<llvm::Function>(callee.getCallee());
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr(llvm::Attribute::WillReturn);
  f->addFnAttr(llvm::Attribute::NoSync);
  f->setMemoryEffects(reads_memory ? llvm::MemoryEffects::readOnly() : llvm::MemoryEffects::none());
  llvm::CallInst* call = b_.CreateCall(callee, args);
  call->setAttributes(f->getAttributes());
  return call;
}

// SLEEF's scalar functions (the variants sleef_variant names); math_library.cpp
// maps them to SLEEF's vector functions for the loop vectorizer.
//
// SLEEF 3.5 is wrong at three range edges (tests/test_jit_math_edges.cpp finds
// them against libm): f64 exp and pow return +inf once the exponent passes
// 709.78271114955743, 1.7e-6 short of log(DBL_MAX), so results in the top
// 1.7e-6 below DBL_MAX overflow (exp(709.782712893384), pow(DBL_MAX, 1));
// log1p returns +inf above 1e307 (f64) / 1e38 (f32). The kernel moves those
// inputs to where SLEEF is right and corrects the result with selects, not
// branches, so the loops still vectorize:
//   exp(x)   = exp(x/2)^2                       (x > 709: 2.5 ulp)
//   pow(x,y) = pow(x, y -+ 1) * or / x          (integer y, result may pass 2^1000: 1.5 ulp)
//            = pow(|x|, y/2)^2, sign restored   (other y: 2.5 ulp; may round to +inf
//                                                within 2 ulp of DBL_MAX)
//   log1p(x) = log1p(x * 2^-64) + 64 ln 2       (x > 1e306 / 1e37: 1 + x == x there)
Value* ScalarCodegen::math(const char* name, Value* x, Value* y) {
  llvm::Type* t = x->getType();
  const bool f32 = t->isFloatTy();
  const std::string n = name;
  std::string fn = "Sleef_" + n + (f32 ? "f" : "") + "_" + sleef_variant(name);
  auto k = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto call = [&](Value* a, Value* b) {
    return b ? pure_call(fn, t, {a, b}) : pure_call(fn, t, {a});
  };
  if (n == "exp" && !f32) {
    Value* big = b_.CreateFCmpOGT(x, k(709.0));
    Value* r = call(b_.CreateSelect(big, b_.CreateFMul(x, k(0.5)), x), nullptr);
    return b_.CreateSelect(big, b_.CreateFMul(r, r), r);
  }
  if (n == "log1p") {
    Value* big = b_.CreateFCmpOGT(x, k(f32 ? 1e37 : 1e306));
    Value* r = call(b_.CreateSelect(big, b_.CreateFMul(x, k(0x1p-64)), x), nullptr);
    return b_.CreateSelect(big, b_.CreateFAdd(r, k(64 * 0.69314718055994530942)), r);
  }
  if (n == "pow" && !f32) {
    // big: |x| finite and non-zero, and y * log2|x| may pass 1000. log2|x| lies
    // in [e, e + 1) for the exponent e (subnormals: take -1075, an over-estimate
    // of the magnitude), so the larger of y*e, y*(e+1) bounds it from above;
    // where big, y * log2|x| >= 0, so no rewrite below can underflow.
    llvm::Type* it = b_.getInt64Ty();
    Value* field = b_.CreateAnd(b_.CreateLShr(b_.CreateBitCast(x, it), 52), 0x7ff);
    Value* e = b_.CreateSIToFP(b_.CreateSub(field, b_.getInt64(1023)), t);
    e = b_.CreateSelect(b_.CreateICmpEQ(field, b_.getInt64(0)), k(-1075.0), e);
    Value* ye = b_.CreateFMul(y, e);
    Value* ye1 = b_.CreateFMul(y, b_.CreateFAdd(e, k(1.0)));
    Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    Value* big = b_.CreateAnd(b_.CreateAnd(b_.CreateFCmpOLT(ax, k(INFINITY)), b_.CreateFCmpOGT(ax, k(0.0))),
                              b_.CreateOr(b_.CreateFCmpOGT(ye, k(1000.0)), b_.CreateFCmpOGT(ye1, k(1000.0))));
    // An integer y below 2^53: one step of y toward 0 (exact), then one exact
    // multiplication or division by x: pow(x, y) = pow(x, y - 1) * x = pow(x, y + 1) / x,
    // within 1.5 ulp and exact where pow(x, y -+ 1) is (pow(DBL_MAX, 1) == DBL_MAX).
    // Any other y: pow(|x|, y/2)^2 (2.5 ulp), its sign restored.
    auto trunc = [&](Value* v) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, v); };
    Value* half_y = b_.CreateFMul(y, k(0.5));
    Value* integral = b_.CreateFCmpOEQ(trunc(y), y);
    Value* stepped = b_.CreateAnd(big, b_.CreateAnd(integral, b_.CreateFCmpOLT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, y), k(0x1p53))));
    Value* squared = b_.CreateAnd(big, b_.CreateNot(stepped));
    Value* up = b_.CreateFCmpOGT(y, k(0.0));
    Value* y_step = b_.CreateFSub(y, b_.CreateSelect(up, k(1.0), k(-1.0)));
    Value* r = call(b_.CreateSelect(squared, ax, x),
                    b_.CreateSelect(stepped, y_step, b_.CreateSelect(squared, half_y, y)));
    Value* back = b_.CreateSelect(up, b_.CreateFMul(r, x), b_.CreateFDiv(r, x));
    r = b_.CreateSelect(stepped, back, b_.CreateSelect(squared, b_.CreateFMul(r, r), r));
    // Squared with a negative base: odd integers (none below 2^53 get here)
    // would be negative, non-integer powers are NaN.
    Value* neg = b_.CreateAnd(squared, b_.CreateFCmpOLT(x, k(0.0)));
    return b_.CreateSelect(b_.CreateAnd(neg, b_.CreateNot(integral)), k(NAN), r);
  }
  return call(x, y);
}

// exp of f32 inline (Cephes' expf: Cody-Waite reduction by ln 2, a degree-6
// polynomial on [-ln2/2, ln2/2], about 1 ulp), so the vectorizer widens it
// into a dozen instructions instead of calling SLEEF's expf8 (about 20
// cycles per 8 lanes on Zen 3: half of a softmax's time). 2^n is applied in
// two steps so that results near overflow and in the subnormal range round
// once.
Value* ScalarCodegen::exp_f32(Value* x) {
  llvm::Type* f = x->getType();
  llvm::Type* i32 = b_.getInt32Ty();
  auto k = [&](double v) { return llvm::ConstantFP::get(f, v); };
  auto fma = [&](Value* a, Value* b, Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {f}, {a, b, c});
  };
  // Past these, exp is +inf or rounds to 0; clamping keeps n in [-151, 129].
  Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, k(-104.0)), k(89.0));
  Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(xc, k(1.44269504088896341)));
  Value* r = fma(n, k(-0.693359375), xc);
  r = fma(n, k(2.12194440e-4), r);
  Value* p = k(1.9875691500e-4);
  for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}) p = fma(p, r, k(c));
  p = fma(b_.CreateFMul(p, r), r, b_.CreateFAdd(r, k(1.0)));
  // p * 2^n1 * 2^n2, n1 = n >> 1: both powers are normal floats.
  Value* ni = b_.CreateFPToSI(n, i32);
  Value* n1 = b_.CreateAShr(ni, 1);
  Value* n2 = b_.CreateSub(ni, n1);
  auto pow2 = [&](Value* e) { return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, b_.getInt32(127)), 23), f); };
  // No tests for overflow or underflow: the clamps make them come out of
  // the arithmetic. Above 88.72 n is 128 and p * 2^128 rounds to +inf (as
  // expf) once p > 1 - 2^-25; below -103.97 n is -150 and p <= 1, so
  // p * 2^-150 rounds to 0.
  Value* y = b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
}

Value* ScalarCodegen::generate(Op op, DType t, Value* scalars, Value* i) {
  auto& c = m_.getContext();
  llvm::Type* ret = t == DType::bool_ ? llvm::Type::getInt32Ty(c) : type(t);
  std::string fn = std::string("aj_jit_generate_") + dtype_name(t);
  Value* v = pure_call(fn, ret, {b_.getInt32(static_cast<std::uint32_t>(op)), scalars, i}, true);
  return t == DType::bool_ ? b_.CreateICmpNE(v, b_.getInt32(0)) : v;
}

Value* ScalarCodegen::convert(Value* x, DType from, DType to) {
  if (from == to) return x;
  llvm::Type* tt = type(to);
  if (to == DType::bool_) return truth(x, from);
  if (from == DType::bool_) return is_float(to) ? b_.CreateUIToFP(x, tt) : b_.CreateZExt(x, tt);
  if (is_float(from) && is_float(to)) {
    return to == DType::f64 ? b_.CreateFPExt(x, tt) : b_.CreateFPTrunc(x, tt);
  }
  if (is_float(from)) {
    // Truncate toward zero, saturate, NaN -> 0: exactly fptosi.sat.
    return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {tt, x->getType()}, {x});
  }
  if (is_float(to)) return b_.CreateSIToFP(x, tt);
  return b_.CreateSExtOrTrunc(x, tt);  // two's complement wrap
}

llvm::Constant* ScalarCodegen::identity(Op op, DType t) const {
  llvm::Type* ty = type(t);
  auto num = [&](double f, std::int64_t i) -> llvm::Constant* {
    if (is_float(t)) return llvm::ConstantFP::get(ty, f);
    return llvm::ConstantInt::get(ty, static_cast<std::uint64_t>(i), true);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::int64_t imax = t == DType::i32 ? std::numeric_limits<std::int32_t>::max()
                                            : std::numeric_limits<std::int64_t>::max();
  const std::int64_t imin = t == DType::i32 ? std::numeric_limits<std::int32_t>::min()
                                            : std::numeric_limits<std::int64_t>::min();
  switch (op) {
    case Op::Sum: return num(0, 0);
    case Op::Prod: return num(1, 1);
    case Op::ReduceMax: return t == DType::bool_ ? num(0, 0) : num(-inf, imin);
    case Op::ReduceMin: return t == DType::bool_ ? num(1, 1) : num(inf, imax);
    case Op::All: return num(1, 1);
    case Op::Any: return num(0, 0);
    case Op::ArgMax: case Op::ArgMin:  // (value, index) pairs: codegen.cpp
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  internal_error(std::string("jit: no reduction identity for ") + op_name(op));
}

// IEEE 754-2019 maximum/minimum as the reference writes it: the first NaN
// operand is returned, max(-0, +0) = +0, min(-0, +0) = -0.
Value* ScalarCodegen::fmax_nan(Value* a, Value* b, bool is_max) {
  llvm::Type* it = b_.getIntNTy(a->getType()->getPrimitiveSizeInBits());
  Value* a_nan = b_.CreateFCmpUNO(a, a);
  Value* b_nan = b_.CreateFCmpUNO(b, b);
  Value* eq = b_.CreateFCmpOEQ(a, b);
  Value* a_neg = b_.CreateICmpSLT(b_.CreateBitCast(a, it), llvm::ConstantInt::get(it, 0));
  Value* better = is_max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  Value* r = b_.CreateSelect(better, a, b);
  // Equal: for max keep a unless a is -0 (then b); for min keep a if a is -0.
  Value* on_eq = is_max ? b_.CreateSelect(a_neg, b, a) : b_.CreateSelect(a_neg, a, b);
  r = b_.CreateSelect(eq, on_eq, r);
  r = b_.CreateSelect(b_nan, b, r);
  return b_.CreateSelect(a_nan, a, r);
}

Value* ScalarCodegen::unary_float(Op op, Value* x) {
  llvm::Type* t = x->getType();
  auto one = llvm::ConstantFP::get(t, 1.0);
  auto zero = llvm::ConstantFP::get(t, 0.0);
  switch (op) {
    case Op::Neg: return b_.CreateFNeg(x);
    case Op::Abs: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    case Op::Sign: {
      Value* r = b_.CreateSelect(b_.CreateFCmpOLT(x, zero), llvm::ConstantFP::get(t, -1.0), x);
      return b_.CreateSelect(b_.CreateFCmpOGT(x, zero), one, r);
    }
    case Op::Floor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
    case Op::Ceil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
    // nearbyint in the default rounding mode: half to even.
    case Op::Round: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
    case Op::Exp: return t->isFloatTy() ? exp_f32(x) : math("exp", x);
    case Op::Log: return math("log", x);
    case Op::Log1p: return math("log1p", x);
    case Op::Expm1: return math("expm1", x);
    case Op::Sin: return math("sin", x);
    case Op::Cos: return math("cos", x);
    case Op::Tan: return math("tan", x);
    case Op::Tanh: return math("tanh", x);
    case Op::Sigmoid: return b_.CreateFDiv(one, b_.CreateFAdd(one, math("exp", b_.CreateFNeg(x))));
    case Op::Sqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case Op::Rsqrt: return b_.CreateFDiv(one, b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case Op::Erf: return math("erf", x);
    case Op::Erfc: return math("erfc", x);
    case Op::Not: case Op::Cast: return x;  // as sem::unary (Cast is convert())
    AJ_CASES_OUTSIDE(Unary) break;
  }
  internal_error(std::string("jit: not a unary float op: ") + op_name(op));
}

Value* ScalarCodegen::binary_int(Op op, DType t, Value* a, Value* b) {
  llvm::Type* ty = a->getType();
  auto k = [&](std::int64_t v) { return llvm::ConstantInt::get(ty, static_cast<std::uint64_t>(v), true); };
  switch (op) {
    case Op::Add: return b_.CreateAdd(a, b);  // no nsw: wraps
    case Op::Sub: return b_.CreateSub(a, b);
    case Op::Mul: return b_.CreateMul(a, b);
    case Op::Div:
    case Op::Mod: {
      // x / 0 = 0, x % 0 = 0, MIN / -1 = MIN (wraps), x % -1 = 0; the
      // hardware division only ever sees a safe divisor.
      Value* zero = b_.CreateICmpEQ(b, k(0));
      Value* neg1 = b_.CreateICmpEQ(b, k(-1));
      Value* safe = b_.CreateSelect(b_.CreateOr(zero, neg1), k(1), b);
      Value* q = b_.CreateSDiv(a, safe);
      Value* r = b_.CreateSRem(a, safe);
      Value* inexact = b_.CreateICmpNE(r, k(0));
      if (op == Op::Div) {
        Value* signs_differ = b_.CreateICmpSLT(b_.CreateXor(a, b), k(0));
        q = b_.CreateSub(q, b_.CreateZExt(b_.CreateAnd(inexact, signs_differ), ty));
        q = b_.CreateSelect(neg1, b_.CreateSub(k(0), a), q);
        return b_.CreateSelect(zero, k(0), q);
      }
      Value* signs_differ = b_.CreateICmpSLT(b_.CreateXor(r, b), k(0));
      r = b_.CreateSelect(b_.CreateAnd(inexact, signs_differ), b_.CreateAdd(r, b), r);
      return b_.CreateSelect(b_.CreateOr(zero, neg1), k(0), r);
    }
    case Op::Max: return b_.CreateSelect(b_.CreateICmpSGT(a, b), a, b);
    case Op::Min: return b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b);
    case Op::Pow: return pure_call(std::string("aj_jit_ipow_") + dtype_name(t), ty, {a, b});
    case Op::And: case Op::Or:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return a;  // as sem::binary (compare() does the comparisons)
    AJ_CASES_OUTSIDE(Binary) break;
  }
  internal_error(std::string("jit: not an integer binary op: ") + op_name(op));
}

Value* ScalarCodegen::binary_float(Op op, Value* a, Value* b) {
  llvm::Type* t = a->getType();
  auto zero = llvm::ConstantFP::get(t, 0.0);
  switch (op) {
    case Op::Add: return b_.CreateFAdd(a, b);
    case Op::Sub: return b_.CreateFSub(a, b);
    case Op::Mul: return b_.CreateFMul(a, b);
    case Op::Div: return b_.CreateFDiv(a, b);
    case Op::Mod: {
      // fmod, then shifted to the sign of the divisor; a zero takes b's sign.
      Value* r = b_.CreateFRem(a, b);
      Value* differ = b_.CreateXor(b_.CreateFCmpOLT(r, zero), b_.CreateFCmpOLT(b, zero));
      Value* shift = b_.CreateAnd(b_.CreateFCmpUNE(r, zero), differ);
      r = b_.CreateSelect(shift, b_.CreateFAdd(r, b), r);
      Value* signed_zero = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, b);
      return b_.CreateSelect(b_.CreateFCmpOEQ(r, zero), signed_zero, r);
    }
    case Op::Max: return fmax_nan(a, b, true);
    case Op::Min: return fmax_nan(a, b, false);
    case Op::Pow: return math("pow", a, b);
    case Op::And: case Op::Or:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return a;  // as sem::binary
    AJ_CASES_OUTSIDE(Binary) break;
  }
  internal_error(std::string("jit: not a float binary op: ") + op_name(op));
}

Value* ScalarCodegen::compare(Op op, DType t, Value* a, Value* b) {
  using P = llvm::CmpInst::Predicate;
  const bool f = is_float(t), u = t == DType::bool_;
  P p;
  switch (op) {
    case Op::Eq: p = f ? P::FCMP_OEQ : P::ICMP_EQ; break;
    case Op::Ne: p = f ? P::FCMP_UNE : P::ICMP_NE; break;  // NaN != x is true
    case Op::Lt: p = f ? P::FCMP_OLT : u ? P::ICMP_ULT : P::ICMP_SLT; break;
    case Op::Le: p = f ? P::FCMP_OLE : u ? P::ICMP_ULE : P::ICMP_SLE; break;
    case Op::Gt: p = f ? P::FCMP_OGT : u ? P::ICMP_UGT : P::ICMP_SGT; break;
    case Op::Ge: p = f ? P::FCMP_OGE : u ? P::ICMP_UGE : P::ICMP_SGE; break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::Max: case Op::Min:
    case Op::Pow: case Op::And: case Op::Or:
    AJ_CASES_OUTSIDE(Binary) internal_error(std::string("jit: not a comparison: ") + op_name(op));
  }
  return f ? b_.CreateFCmp(p, a, b) : b_.CreateICmp(p, a, b);
}

// The one switch over ops: every op is listed, so a new op in ops.def is a
// compiler warning here until code generation handles (or rejects) it.
Value* ScalarCodegen::op(const KInstr& in, DType t, Value* a, Value* b, Value* c, bool reassoc) {
  const bool fp = is_float(t), boolean = t == DType::bool_;
  auto flagged = [&](Value* v) {
    if (reassoc && llvm::isa<llvm::Instruction>(v)) {
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      llvm::cast<llvm::Instruction>(v)->setFastMathFlags(fmf);
    }
    return v;
  };
  auto both = [&](bool and_) {  // static_cast<T>(acc && x) / (acc || x)
    Value* r = and_ ? b_.CreateAnd(truth(a, t), truth(b, t)) : b_.CreateOr(truth(a, t), truth(b, t));
    return convert(r, DType::bool_, t);
  };
  switch (in.op) {
    case Op::Neg: case Op::Not: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil:
    case Op::Round: case Op::Exp: case Op::Log: case Op::Log1p: case Op::Expm1: case Op::Sin:
    case Op::Cos: case Op::Tan: case Op::Tanh: case Op::Sigmoid: case Op::Sqrt: case Op::Rsqrt:
    case Op::Erf: case Op::Erfc:
      if (boolean) return in.op == Op::Not ? b_.CreateNot(a) : a;
      if (fp) return unary_float(in.op, a);
      switch (in.op) {
        case Op::Neg: return b_.CreateSub(llvm::ConstantInt::get(a->getType(), 0), a);
        case Op::Abs:
          return b_.CreateSelect(b_.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)),
                                 b_.CreateSub(llvm::ConstantInt::get(a->getType(), 0), a), a);
        case Op::Sign: {
          Value* zero = llvm::ConstantInt::get(a->getType(), 0);
          return b_.CreateSub(b_.CreateZExt(b_.CreateICmpSGT(a, zero), a->getType()),
                              b_.CreateZExt(b_.CreateICmpSLT(a, zero), a->getType()));
        }
        case Op::Floor: case Op::Ceil: case Op::Round: return a;  // integers are whole already
        case Op::Not: case Op::Exp: case Op::Log: case Op::Log1p: case Op::Expm1: case Op::Sin:
        case Op::Cos: case Op::Tan: case Op::Tanh: case Op::Sigmoid: case Op::Sqrt: case Op::Rsqrt:
        case Op::Erf: case Op::Erfc: case Op::Cast:
          return a;  // as sem::unary: tracing gives these no integers
        AJ_CASES_OUTSIDE(Unary) break;
      }
      break;
    case Op::Cast: return convert(a, t, in.dtype);
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::Max:
    case Op::Min: case Op::Pow: case Op::And: case Op::Or:
      if (boolean) {
        if (in.op == Op::And || in.op == Op::Min) return b_.CreateAnd(a, b);
        if (in.op == Op::Or || in.op == Op::Max) return b_.CreateOr(a, b);
        return a;
      }
      return fp ? binary_float(in.op, a, b) : binary_int(in.op, t, a, b);
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      return compare(in.op, t, a, b);
    case Op::Where: return b_.CreateSelect(a, b, c);
    // Reduction combiners: a is the accumulator, b the new value.
    case Op::Sum:
      if (boolean) return a;
      return fp ? flagged(b_.CreateFAdd(a, b)) : b_.CreateAdd(a, b);
    case Op::Prod:
      if (boolean) return a;
      return fp ? flagged(b_.CreateFMul(a, b)) : b_.CreateMul(a, b);
    case Op::ReduceMax:
      if (boolean) return b_.CreateOr(a, b);
      // llvm.maximum is fmax_nan up to which NaN comes out; the vectorizer
      // knows it as a reduction.
      return fp ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, b)
                : b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
    case Op::ReduceMin:
      if (boolean) return b_.CreateAnd(a, b);
      return fp ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, b)
                : b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
    case Op::All: return boolean ? b_.CreateAnd(a, b) : both(true);
    case Op::Any: return boolean ? b_.CreateOr(a, b) : both(false);
    case Op::ArgMax: case Op::ArgMin:  // (value, index) pairs: codegen.cpp
    case Op::Input: case Op::Constant: case Op::Iota: case Op::Linspace: case Op::Eye:
    case Op::RandUniform: case Op::RandNormal: case Op::Reshape: case Op::Transpose:
    case Op::Broadcast: case Op::Slice: case Op::Concat: case Op::MatMul:
    case Op::RandBits: case Op::CumSum: case Op::CumProd:  // scans run KOp::Scan with Sum/Prod
    case Op::Sort: case Op::ArgSort: case Op::TopK: case Op::ArgTopK:
    case Op::Gather: case Op::Pad: case Op::ScatterAdd: case Op::Scatter:
      break;
  }
  internal_error(std::string("jit: op '") + op_name(in.op) + "' cannot appear in a kernel instruction");
}

}  // namespace aj::jit

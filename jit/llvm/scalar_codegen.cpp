#include "jit/llvm/scalar_codegen.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Linker/Linker.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "arrayjit/error.hpp"
#include "base/cpu_level.hpp"
#include "base/semantics.hpp"
#include "jit/llvm/runtime_symbols.hpp"

// base/semantics.hpp as LLVM bitcode (jit/llvm/semantics_bitcode.cpp, compiled
// by clang-19 and embedded at build time: CMakeLists.txt).
extern "C" const unsigned char aj_semantics_bitcode[];
extern "C" const unsigned long aj_semantics_bitcode_size;

namespace aj::jit {

using llvm::Value;

namespace {

// This CPU converts between f16 and f32 in one instruction (F16C); the
// kernels are compiled for the CPU they run on (host_jit.cpp), at its level:
// below avx2 F16C is off (cpu::cap_llvm_features).
bool host_has_f16c() {
  static const bool f16c = [] {
    if (cpu::level() < cpu::IsaLevel::avx2 && cpu::level() < cpu::detected_level()) return false;
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    auto it = features.find("f16c");
    return it != features.end() && it->second;
  }();
  return f16c;
}

constexpr const char* kSemPrefix = "aj_sem_";
constexpr const char* kMathPrefix = "aj_math_";

// An integer dtype's signedness: LLVM's integers have none, its compares,
// min/max and extensions do.
bool is_signed_integer(DType t) {
  switch (dtype_kind(t)) {
    case DTypeKind::Signed: return true;
    case DTypeKind::Unsigned: return false;
    case DTypeKind::Bool:
    case DTypeKind::Float: break;
  }
  internal_error(std::string("jit: ") + dtype_name(t) + " is not an integer dtype");
}

}  // namespace

llvm::CmpInst::Predicate ScalarCodegen::int_predicate(Op op, DType t) {
  using P = llvm::CmpInst::Predicate;
  struct Cmp {
    Op op;
    P sgn, uns;
  };
  constexpr Cmp cmps[] = {{Op::Eq, P::ICMP_EQ, P::ICMP_EQ},   {Op::Ne, P::ICMP_NE, P::ICMP_NE},
                          {Op::Lt, P::ICMP_SLT, P::ICMP_ULT}, {Op::Le, P::ICMP_SLE, P::ICMP_ULE},
                          {Op::Gt, P::ICMP_SGT, P::ICMP_UGT}, {Op::Ge, P::ICMP_SGE, P::ICMP_UGE}};
  for (const Cmp& c : cmps) {
    if (c.op == op) return is_signed_integer(t) ? c.sgn : c.uns;
  }
  internal_error(std::string("jit: ") + op_name(op) + " is not a comparison");
}

llvm::Type* ScalarCodegen::type(DType t) const {
  auto& c = m_.getContext();
  if (t == DType::bool_) return llvm::Type::getInt1Ty(c);
  if (is_float(t) && !is_half(t)) return itemsize(t) == 4 ? llvm::Type::getFloatTy(c) : llvm::Type::getDoubleTy(c);
  return llvm::Type::getIntNTy(c, static_cast<unsigned>(8 * itemsize(t)));  // integers; halves as their bits
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

// aj_sem_<kind>_<dtype>(op, args...): semantics.hpp's function of that kind
// (semantics_bitcode.cpp), the op a constant.
Value* ScalarCodegen::sem_call(const char* kind, DType t, Op op, llvm::ArrayRef<Value*> args) {
  std::vector<Value*> all{b_.getInt32(static_cast<std::uint32_t>(op))};
  all.insert(all.end(), args.begin(), args.end());
  llvm::Type* ret = std::string(kind) == "compare" ? b_.getInt1Ty() : type(t);
  return pure_call(std::string(kSemPrefix) + kind + "_" + dtype_info(t).id, ret, all);
}

// The body of a math hook: SLEEF's scalar function (the variant sleef_variant
// names), which runtime_symbols.cpp maps to SLEEF's vector functions for the
// loop vectorizer.
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
// SLEEF's sinh and cosh overflow once |x| passes log(max) (their results are
// finite up to log(2 max)), and asinh and acosh return inf from 2^64 / 2^512
// on (where x^2 overflows):
//   cosh(x)  = 2 cosh(x/2)^2                    (|x| > 88 / 709: the -1 of 2c^2 - 1 is below an ulp; 2.5 ulp)
//   sinh(x)  = 2 sinh(x/2) |sinh(x/2)|          (there, sinh and cosh of x/2 agree to e^-x)
//   asinh(x) = +-(log1p(|x| 2^-s) + (s+1) ln 2) (|x| > 2^60 / 2^500, s = 32 / 256: log(2|x|) there; 2 ulp)
//   acosh(x) = log1p(x 2^-s) + (s+1) ln 2
Value* ScalarCodegen::math(const std::string& name, Value* x, Value* y) {
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
  if (n == "sinh" || n == "cosh") {
    Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    Value* big = b_.CreateFCmpOGT(ax, k(f32 ? 88.0 : 709.0));
    Value* r = call(b_.CreateSelect(big, b_.CreateFMul(x, k(0.5)), x), nullptr);
    Value* other = n == "cosh" ? r : b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, r);
    return b_.CreateSelect(big, b_.CreateFMul(b_.CreateFMul(r, k(2.0)), other), r);
  }
  if (n == "asinh" || n == "acosh") {
    // Past 2^60 / 2^500, log(2|x|) is the function to the last bit; it is
    // log1p(|x| 2^-s) + (s + 1) ln 2 (s = 32 / 256: 1 + y == y for the scaled
    // y, which stays below where SLEEF's log1p overflows): 2 ulp.
    Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    Value* big = b_.CreateFCmpOGT(n == "asinh" ? ax : x, k(f32 ? 0x1p60 : 0x1p500));  // acosh(-big) is NaN
    const double s = f32 ? 32 : 256;
    Value* r = call(b_.CreateSelect(big, k(1.0), x), nullptr);  // 1: in every domain, never used
    Value* y = b_.CreateFMul(ax, k(f32 ? 0x1p-32 : 0x1p-256));
    Value* lg = pure_call("Sleef_log1p" + std::string(f32 ? "f" : "") + "_" + sleef_variant("log1p"), t,
                          {b_.CreateSelect(big, y, k(1.0))});
    Value* far = b_.CreateFAdd(lg, k((s + 1) * 0.69314718055994530942));
    if (n == "asinh") far = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, far, x);
    return b_.CreateSelect(big, far, r);
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

bool ScalarCodegen::generates_inline(Op op) { return op == Op::Iota || op == Op::Linspace || op == Op::Eye; }

Value* ScalarCodegen::generate(Op op, DType t, Value* scalars, llvm::ArrayRef<Value*> params, Value* i) {
  if (generates_inline(op)) {
    std::vector<Value*> args{b_.getInt32(static_cast<std::uint32_t>(op))};
    args.insert(args.end(), params.begin(), params.end());
    args.push_back(i);
    std::string name = kSemPrefix;  // (appended, not `+` chained: GCC 12's
    name += "generate_";             // bug 105651 false positive with a PCH)
    name += dtype_info(t).id;
    return pure_call(name, type(t), args);
  }
  auto& c = m_.getContext();
  llvm::Type* ret = t == DType::bool_ ? llvm::Type::getInt32Ty(c) : type(t);
  std::string fn = std::string("aj_jit_generate_") + dtype_info(t).id;
  Value* v = pure_call(fn, ret, {b_.getInt32(static_cast<std::uint32_t>(op)), scalars, i}, true);
  return t == DType::bool_ ? b_.CreateICmpNE(v, b_.getInt32(0)) : v;
}

// sem::convert. f16 <-> f32 is one instruction with F16C (the same rounding
// and NaN rules: tests/test_dtypes_half.cpp); everything else is the
// bitcode's aj_sem_convert_<to>(from, payload), the value passed as 64 bits.
Value* ScalarCodegen::convert(Value* x, DType from, DType to) {
  if (from == to) return x;
  // Between two floats of f32/f64 the IEEE conversion; from bool, 0/1.
  const bool wide_floats = is_float(from) && is_float(to) && !is_half(from) && !is_half(to);
  if (wide_floats) return to == DType::f64 ? b_.CreateFPExt(x, type(to)) : b_.CreateFPTrunc(x, type(to));
  if (from == DType::bool_ && !is_half(to)) {
    return is_float(to) ? b_.CreateUIToFP(x, type(to)) : b_.CreateZExt(x, type(to));
  }
  if (host_has_f16c() && from == DType::f16 && (to == DType::f32 || to == DType::f64)) {
    Value* f = b_.CreateFPExt(b_.CreateBitCast(x, b_.getHalfTy()), b_.getFloatTy());
    return to == DType::f32 ? f : b_.CreateFPExt(f, b_.getDoubleTy());
  }
  if (host_has_f16c() && from == DType::f32 && to == DType::f16) {
    return b_.CreateBitCast(b_.CreateFPTrunc(x, b_.getHalfTy()), b_.getInt16Ty());
  }
  Value* bits = x;
  if (x->getType()->isFloatingPointTy()) {
    bits = b_.CreateBitCast(x, b_.getIntNTy(x->getType()->getPrimitiveSizeInBits()));
  }
  // An integer's value in 64 bits, extended as its kind says (from_payload
  // truncates it back); a bool's or float's bits.
  Value* payload = nullptr;
  switch (dtype_kind(from)) {
    case DTypeKind::Signed: payload = b_.CreateSExtOrTrunc(bits, b_.getInt64Ty()); break;
    case DTypeKind::Unsigned:
    case DTypeKind::Bool:
    case DTypeKind::Float: payload = b_.CreateZExtOrTrunc(bits, b_.getInt64Ty()); break;
  }
  std::vector<Value*> args{b_.getInt32(static_cast<std::uint32_t>(from)), payload};
  return pure_call(std::string(kSemPrefix) + "convert_" + dtype_info(to).id, type(to), args);
}

// sem::reduce_identity (sem::scan_identity for a scan), evaluated here and
// emitted as a constant.
llvm::Constant* ScalarCodegen::identity(Op op, DType t, bool scan) const {
  llvm::Type* ty = type(t);
  return sem::visit_dtype(t, [&](auto tag) -> llvm::Constant* {
    using T = decltype(tag);
    const T v = scan ? sem::scan_identity<T>(op) : sem::reduce_identity<T>(op);
    if constexpr (sem::is_half_type<T>) return llvm::ConstantInt::get(ty, v.bits);
    else if constexpr (sem::is_fp<T>) return llvm::ConstantFP::get(ty, static_cast<double>(v));
    else if constexpr (sem::is_unsigned_int<T>) return llvm::ConstantInt::get(ty, static_cast<std::uint64_t>(v), false);
    else return llvm::ConstantInt::get(ty, static_cast<std::uint64_t>(static_cast<std::int64_t>(v)), true);
  });
}

// Reduction combiners in the forms the loop vectorizer knows as reductions;
// any other combiner (and these of other dtypes) is sem::reduce_combine.
Value* ScalarCodegen::combine(Op op, DType t, Value* a, Value* b, bool reassoc) {
  const bool fp = is_float(t) && !is_half(t), integer = is_integer(t), boolean = t == DType::bool_;
  auto flagged = [&](Value* v) {
    if (reassoc && llvm::isa<llvm::Instruction>(v)) {
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      llvm::cast<llvm::Instruction>(v)->setFastMathFlags(fmf);
    }
    return v;
  };
  if (op == Op::Sum && (fp || integer)) return fp ? flagged(b_.CreateFAdd(a, b)) : b_.CreateAdd(a, b);
  if (op == Op::Prod && (fp || integer)) return fp ? flagged(b_.CreateFMul(a, b)) : b_.CreateMul(a, b);
  // llvm.maximum is sem::fmax_nan up to which NaN comes out.
  if (op == Op::ReduceMax && (fp || integer)) {
    return b_.CreateBinaryIntrinsic(fp                      ? llvm::Intrinsic::maximum
                                    : is_signed_integer(t) ? llvm::Intrinsic::smax
                                                            : llvm::Intrinsic::umax,
                                    a, b);
  }
  if (op == Op::ReduceMin && (fp || integer)) {
    return b_.CreateBinaryIntrinsic(fp                      ? llvm::Intrinsic::minimum
                                    : is_signed_integer(t) ? llvm::Intrinsic::smin
                                                            : llvm::Intrinsic::umin,
                                    a, b);
  }
  if ((op == Op::All || op == Op::Any || op == Op::ReduceMax || op == Op::ReduceMin) && boolean) {
    return op == Op::All || op == Op::ReduceMin ? b_.CreateAnd(a, b) : b_.CreateOr(a, b);
  }
  if ((op == Op::All || op == Op::Any) && (fp || integer)) {  // static_cast<T>(acc && x)
    Value* r = op == Op::All ? b_.CreateAnd(truth(a, t), truth(b, t)) : b_.CreateOr(truth(a, t), truth(b, t));
    return convert(r, DType::bool_, t);
  }
  return sem_call("combine", t, op, {a, b});
}

// sem::fmax_nan / fmin_nan as selects: the first NaN operand is returned,
// max(-0, +0) = +0, min(-0, +0) = -0. (The bitcode's branches vectorize
// worse: a 20-op f64 chain of maximum and abs ran 1.3-1.6x slower.)
Value* ScalarCodegen::fmax_nan(Value* a, Value* b, bool is_max) {
  llvm::Type* it = b_.getIntNTy(a->getType()->getPrimitiveSizeInBits());
  Value* a_nan = b_.CreateFCmpUNO(a, a);
  Value* b_nan = b_.CreateFCmpUNO(b, b);
  Value* eq = b_.CreateFCmpOEQ(a, b);
  Value* a_neg = b_.CreateICmpSLT(b_.CreateBitCast(a, it), llvm::ConstantInt::get(it, 0));
  Value* better = is_max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  Value* r = b_.CreateSelect(better, a, b);
  Value* on_eq = is_max ? b_.CreateSelect(a_neg, b, a) : b_.CreateSelect(a_neg, a, b);
  r = b_.CreateSelect(eq, on_eq, r);
  r = b_.CreateSelect(b_nan, b, r);
  return b_.CreateSelect(a_nan, a, r);
}

// The plainest ops as single instructions: the same IR the bitcode inlines
// to (IEEE + - * / and comparisons; integer + - * wrap), emitted directly so
// a kernel of only these links no bitcode at all (cold compiles stay at
// their old cost). nullptr: not one of them. Tested op by op against
// semantics.hpp with every other op (tests/test_jit_host.cpp).
Value* ScalarCodegen::plain(Op op, DType t, Value* a, Value* b) {
  const bool fp = is_float(t) && !is_half(t), integer = is_integer(t);
  if (!fp && !integer) return nullptr;
  if (op == Op::Add) return fp ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
  if (op == Op::Sub) return fp ? b_.CreateFSub(a, b) : b_.CreateSub(a, b);
  if (op == Op::Mul) return fp ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
  if (op == Op::Div && fp) return b_.CreateFDiv(a, b);
  if (const char* fn = op_libm(op); fn && fp) {  // pow: sem::binary's math::pow, its hook
    return pure_call(std::string(kMathPrefix) + fn + (t == DType::f32 ? "_f32" : "_f64"), a->getType(), {a, b});
  }
  if (op == Op::Max || op == Op::Min) {
    if (integer) return b_.CreateSelect(b_.CreateICmp(int_predicate(op == Op::Max ? Op::Gt : Op::Lt, t), a, b), a, b);
    return fmax_nan(a, b, op == Op::Max);
  }
  using P = llvm::CmpInst::Predicate;
  struct Cmp {
    Op op;
    P f;
  };
  constexpr Cmp cmps[] = {{Op::Eq, P::FCMP_OEQ}, {Op::Ne, P::FCMP_UNE}, {Op::Lt, P::FCMP_OLT},
                          {Op::Le, P::FCMP_OLE}, {Op::Gt, P::FCMP_OGT}, {Op::Ge, P::FCMP_OGE}};
  for (const Cmp& c : cmps) {
    if (c.op == op) return fp ? b_.CreateFCmp(c.f, a, b) : b_.CreateICmp(int_predicate(op, t), a, b);
  }
  return nullptr;
}

// Float unary ops that are one math function of base/semantics.hpp (their
// libm column in arrayjit/ops.def; sem::unary: `case Op::Exp: return
// math::exp(x);`) as a direct call of that function's hook, and the exact
// ones as their instruction: a kernel of these reads no bitcode (linking it
// costs about 1.3 ms of a cold compile). nullptr: any other op or dtype.
// Tested op by op against semantics.hpp (tests/test_jit_host.cpp), like plain().
Value* ScalarCodegen::plain_unary(Op op, DType t, Value* a) {
  if (t != DType::f32 && t != DType::f64) return nullptr;
  llvm::Type* ty = a->getType();
  auto hook = [&](const char* fn, Value* x) {
    return pure_call(std::string(kMathPrefix) + fn + (t == DType::f32 ? "_f32" : "_f64"), ty, {x});
  };
  if (const char* fn = op_libm(op)) return hook(fn, a);
  llvm::Constant* one = llvm::ConstantFP::get(ty, 1.0);
  if (op == Op::Sigmoid) return b_.CreateFDiv(one, b_.CreateFAdd(one, hook("exp", b_.CreateFNeg(a))));
  if (op == Op::Sqrt) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
  if (op == Op::Rsqrt) return b_.CreateFDiv(one, b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a));
  if (op == Op::Floor) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a);
  if (op == Op::Ceil) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a);
  if (op == Op::Round) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, a);  // half to even
  if (op == Op::Abs) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
  if (op == Op::Neg) return b_.CreateFNeg(a);
  return nullptr;
}

// Every category is handled; within a category every op goes through
// semantics.hpp, so a new op in ops.def needs nothing here.
Value* ScalarCodegen::op(const KInstr& in, DType t, Value* a, Value* b, Value* c, bool reassoc) {
  auto no_half = [&] {
    if (is_half(t) || is_half(in.dtype)) {
      internal_error(std::string("jit: ") + op_name(in.op) + " on " + dtype_name(t) +
                     ": half arithmetic must be widened to f32 first (graph/kernel.hpp)");
    }
  };
  switch (op_category(in.op)) {
    case OpCategory::Unary:
      if (in.op == Op::Cast) return convert(a, t, in.dtype);
      no_half();
      if (Value* v = plain_unary(in.op, t, a)) return v;
      return sem_call("unary", t, in.op, {a});
    case OpCategory::Binary:
      no_half();
      if (Value* v = plain(in.op, t, a, b)) return v;
      return sem_call(is_compare(in.op) ? "compare" : "binary", t, in.op, {a, b});
    case OpCategory::Ternary:
      if (in.op == Op::Where) return b_.CreateSelect(a, b, c);  // moves bits, halves too
      break;
    case OpCategory::Reduce: return combine(in.op, t, a, b, reassoc);
    case OpCategory::Leaf:
    case OpCategory::Generator:
    case OpCategory::View:
    case OpCategory::Scan:    // KOp::Scan runs its combiner (a Reduce op through combine(), or logaddexp)
    case OpCategory::Remap:   // index arithmetic of lowering (KOp::Load, Position, InRange)
    case OpCategory::Other: break;
  }
  internal_error(std::string("jit: op '") + op_name(in.op) + "' cannot appear in a kernel instruction");
}

void ScalarCodegen::finish_module(llvm::Module& m) {
  bool calls_semantics = false;
  for (llvm::Function& f : m) calls_semantics |= f.isDeclaration() && f.getName().starts_with(kSemPrefix);
  if (calls_semantics) link_semantics(m);
  write_math_hooks(m);
}

// Links the semantics functions the kernel calls and inlines them.
void ScalarCodegen::link_semantics(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  // Link the semantics functions the kernel calls (lazily read: only those
  // and what they call are materialized).
  const llvm::StringRef data(reinterpret_cast<const char*>(aj_semantics_bitcode), aj_semantics_bitcode_size);
  auto lazy = llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(data, "aj_semantics"), ctx);
  if (!lazy) {
    std::string msg;
    llvm::handleAllErrors(lazy.takeError(), [&](const llvm::ErrorInfoBase& e) { msg = e.message(); });
    internal_error("jit: the embedded semantics bitcode does not load: " + msg);
  }
  if (m.getDataLayout().isDefault()) m.setDataLayout((*lazy)->getDataLayout());
  if (m.getTargetTriple().empty()) m.setTargetTriple((*lazy)->getTargetTriple());
  if (llvm::Linker::linkModules(m, std::move(*lazy), llvm::Linker::Flags::LinkOnlyNeeded)) {
    internal_error("jit: linking the semantics bitcode into a kernel failed");
  }
  // Everything linked in exists to be inlined into the kernel: inline it now.
  // With the op a constant, inlining clones only that op's case (LLVM prunes
  // on constant arguments), so O3 gets the kernel's own code, and only the
  // math hooks the kernel really calls are left to write.
  std::vector<llvm::Function*> linked;
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    if (f.getName().starts_with(kSemPrefix) || f.hasLinkOnceODRLinkage() || f.hasLinkOnceLinkage()) {
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
      linked.push_back(&f);
    }
  }
  for (bool again = true; again;) {
    again = false;
    for (llvm::Function& f : m) {
      if (f.isDeclaration() || f.hasInternalLinkage()) continue;  // the kernel
      std::vector<llvm::CallBase*> calls;
      for (llvm::BasicBlock& bb : f) {
        for (llvm::Instruction& in : bb) {
          auto* call = llvm::dyn_cast<llvm::CallBase>(&in);
          llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
          if (callee && !callee->isDeclaration() && callee->hasInternalLinkage()) calls.push_back(call);
        }
      }
      for (llvm::CallBase* call : calls) {
        llvm::InlineFunctionInfo info;
        if (!llvm::InlineFunction(*call, info).isSuccess()) internal_error("jit: a semantics function did not inline");
        again = true;
      }
    }
  }
  for (llvm::Function* f : linked) f->dropAllReferences();  // they only call each other now
  for (llvm::Function* f : linked) {
    if (!f->use_empty()) internal_error("jit: a semantics function is still called after inlining");
    f->eraseFromParent();
  }
}

// The math hooks' bodies (declared by the bitcode or by plain and plain_unary).
void ScalarCodegen::write_math_hooks(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  std::vector<llvm::Function*> hooks;
  for (llvm::Function& f : m) {
    if (f.isDeclaration() && f.getName().starts_with(kMathPrefix) && !f.use_empty()) hooks.push_back(&f);
  }
  // The math hooks' bodies: aj_math_<name>_<f32|f64>.
  for (llvm::Function* f : hooks) {
    const std::string n = f->getName().drop_front(std::string(kMathPrefix).size()).drop_back(4).str();
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    f->addFnAttr(llvm::Attribute::AlwaysInline);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
    ScalarCodegen sc(b, m);
    Value* x = f->getArg(0);
    Value* r = n == "exp" && x->getType()->isFloatTy() ? sc.exp_f32(x)
                                                       : sc.math(n, x, f->arg_size() > 1 ? f->getArg(1) : nullptr);
    b.CreateRet(r);
  }
}

}  // namespace aj::jit

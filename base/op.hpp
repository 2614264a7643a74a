// Op enum, names, arity, categories and libm functions, all generated from
// arrayjit/ops.def.
//
// Also read by NVRTC through the CUDA prelude (AJ_SEM_CUDA, see
// base/semantics.hpp): there only the enum and the macros exist.
#pragma once

#include "arrayjit/ops.def"

#if !defined(AJ_SEM_CUDA)
#include <cstdint>
#endif

// A row's libm columns sorted into three (arrayjit/ops.def): AJ_LIBM_<accuracy>
// (is, calls, none) is `is` where the op is a library function (the accuracy
// one of SLEEF's: u10, u15, u35), `calls` where it is computed with one, `none`
// where neither. Here, the fields of OpInfo; base/semantics.hpp, AJ_MATH_FUNCS.
#define AJ_LIBM_u05(is, calls, none) is
#define AJ_LIBM_u10(is, calls, none) is
#define AJ_LIBM_u15(is, calls, none) is
#define AJ_LIBM_u35(is, calls, none) is
#define AJ_LIBM_calls(is, calls, none) calls
#define AJ_LIBM__(is, calls, none) none

namespace aj {

enum class Op : unsigned char {
#define AJ_OP_ENUM(e, name, arity, cat, flags, api, fn, libm, acc) e,
  AJ_OPS(AJ_OP_ENUM)
#undef AJ_OP_ENUM
};

#if !defined(AJ_SEM_CUDA)

enum class OpCategory : std::uint8_t { Leaf, Generator, Unary, Binary, Ternary, Reduce, View, Other, Scan, Remap };

namespace opflag {
enum : std::uint32_t {
  None = 0,
  Commutative = 1u << 0,
  Associative = 1u << 1,
  Compare = 1u << 2,
  Logical = 1u << 3,
  FloatOnly = 1u << 4,
  Cheap = 1u << 5,
  Overwrites = 1u << 6,
  IntegerOnly = 1u << 7,  // bit operations: integer (or bool) operands, floats refused
};
}

struct OpInfo {
  const char* id;    // the enumerator, "Exp" (generated CUDA C names ops so)
  const char* name;  // "exp"
  int arity;
  OpCategory category;
  std::uint32_t flags;
  const char* libm;  // the math library function this op is ("exp"), else nullptr
  bool calls_libm;   // it is one or is computed with one (sigmoid: exp)
};

inline constexpr OpInfo kOpInfo[] = {
#define AJ_OP_INFO(e, name, arity, cat, flags, api, fn, libm, acc)                                \
  {#e, name, arity, OpCategory::cat, [] { using namespace opflag; return std::uint32_t(flags); }(), \
   AJ_LIBM_##acc(#libm, nullptr, nullptr), AJ_LIBM_##acc(true, true, false)},
    AJ_OPS(AJ_OP_INFO)
#undef AJ_OP_INFO
};

inline constexpr int kNumOps = sizeof(kOpInfo) / sizeof(kOpInfo[0]);

constexpr const OpInfo& op_info(Op op) { return kOpInfo[static_cast<int>(op)]; }
constexpr const char* op_name(Op op) { return op_info(op).name; }
constexpr OpCategory op_category(Op op) { return op_info(op).category; }
constexpr bool op_has(Op op, std::uint32_t flag) { return (op_info(op).flags & flag) != 0; }
// The libm columns: the library function an op is ("exp"; the host JIT calls
// its hook, jit/llvm/scalar_codegen.cpp), and whether the op costs one (those
// and sigmoid: the host JIT's blocking heuristic weighs it, jit/llvm/codegen.cpp).
constexpr const char* op_libm(Op op) { return op_info(op).libm; }
constexpr bool op_calls_libm(Op op) { return op_info(op).calls_libm; }

constexpr bool is_elementwise(Op op) {
  auto c = op_category(op);
  return c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Ternary;
}
constexpr bool is_reduction(Op op) { return op_category(op) == OpCategory::Reduce; }
constexpr bool is_view(Op op) { return op_category(op) == OpCategory::View; }
constexpr bool is_scan(Op op) { return op_category(op) == OpCategory::Scan; }
constexpr bool is_generator(Op op) { return op_category(op) == OpCategory::Generator; }
constexpr bool is_compare(Op op) { return op_has(op, opflag::Compare); }
constexpr bool is_remap(Op op) { return op_category(op) == OpCategory::Remap; }
#endif  // !AJ_SEM_CUDA

}  // namespace aj

// Switches over ops have no `default:` (built with -Werror=switch), so a new
// op in ops.def is a compile error at every switch that must handle it. A
// switch over the ops of one category lists those one by one and takes all
// the others with one generated label list:
//
//   switch (op) {
//     case Op::Neg: ...                          // every Unary op, by name
//     AJ_CASES_OUTSIDE(Unary) internal_error(...);  // every other op
//   }
//
// A new Unary op is then flagged in that switch; a new Binary op is not (it
// is among "the others") but is in the switches over Binary ops.
#define AJ_CASES_OUTSIDE(Category) AJ_OPS(AJ_CASE_OUTSIDE_##Category)

// AJ_CASE_OUTSIDE_<W>(op...) is `case Op::e:` unless the op's category is W.
#define AJ_CASE_OUTSIDE_Leaf(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Leaf_##cat(e)
#define AJ_CASE_OUTSIDE_Generator(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Generator_##cat(e)
#define AJ_CASE_OUTSIDE_Unary(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Unary_##cat(e)
#define AJ_CASE_OUTSIDE_Binary(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Binary_##cat(e)
#define AJ_CASE_OUTSIDE_Ternary(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Ternary_##cat(e)
#define AJ_CASE_OUTSIDE_Reduce(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Reduce_##cat(e)
#define AJ_CASE_OUTSIDE_View(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_View_##cat(e)
#define AJ_CASE_OUTSIDE_Other(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Other_##cat(e)
#define AJ_CASE_OUTSIDE_Scan(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Scan_##cat(e)
#define AJ_CASE_OUTSIDE_Remap(e, name, arity, cat, flags, api, fn, libm, acc) AJ_IF_NOT_Remap_##cat(e)

#define AJ_IF_NOT_Leaf_Leaf(e)
#define AJ_IF_NOT_Leaf_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Leaf_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Generator(e)
#define AJ_IF_NOT_Generator_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Generator_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Unary(e)
#define AJ_IF_NOT_Unary_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Unary_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Binary(e)
#define AJ_IF_NOT_Binary_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Binary_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Ternary(e)
#define AJ_IF_NOT_Ternary_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Ternary_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Reduce(e)
#define AJ_IF_NOT_Reduce_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Reduce_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_View(e)
#define AJ_IF_NOT_View_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_View_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Other(e)
#define AJ_IF_NOT_Other_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Other_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Scan_Scan(e)
#define AJ_IF_NOT_Scan_Remap(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Leaf(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Generator(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Unary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Binary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Ternary(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Reduce(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_View(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Other(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Scan(e) case ::aj::Op::e:
#define AJ_IF_NOT_Remap_Remap(e)

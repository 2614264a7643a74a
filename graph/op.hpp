// Op enum, names, arity and categories, all generated from graph/ops.def.
#pragma once

#include <cstdint>

namespace aj {

enum class Op : std::uint8_t {
#define X(e, name, arity, cat, flags) e,
#include "graph/ops.def"
#undef X
};

enum class OpCategory : std::uint8_t { Leaf, Generator, Unary, Binary, Ternary, Reduce, View, Other };

namespace opflag {
enum : std::uint32_t {
  None = 0,
  Commutative = 1u << 0,
  Associative = 1u << 1,
  Compare = 1u << 2,
  Logical = 1u << 3,
  FloatOnly = 1u << 4,
  Cheap = 1u << 5,
};
}

struct OpInfo {
  const char* name;
  int arity;
  OpCategory category;
  std::uint32_t flags;
};

inline constexpr OpInfo kOpInfo[] = {
#define X(e, name, arity, cat, flags) \
  {name, arity, OpCategory::cat, [] { using namespace opflag; return std::uint32_t(flags); }()},
#include "graph/ops.def"
#undef X
};

inline constexpr int kNumOps = sizeof(kOpInfo) / sizeof(kOpInfo[0]);

constexpr const OpInfo& op_info(Op op) { return kOpInfo[static_cast<int>(op)]; }
constexpr const char* op_name(Op op) { return op_info(op).name; }
constexpr OpCategory op_category(Op op) { return op_info(op).category; }
constexpr bool op_has(Op op, std::uint32_t flag) { return (op_info(op).flags & flag) != 0; }

constexpr bool is_elementwise(Op op) {
  auto c = op_category(op);
  return c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Ternary;
}
constexpr bool is_reduction(Op op) { return op_category(op) == OpCategory::Reduce; }
constexpr bool is_view(Op op) { return op_category(op) == OpCategory::View; }
constexpr bool is_generator(Op op) { return op_category(op) == OpCategory::Generator; }
constexpr bool is_compare(Op op) { return op_has(op, opflag::Compare); }

}  // namespace aj

// The derivative rules of the ops, one per op of arrayjit/ops.def
// (core/autodiff/rules.cpp), used by the reverse and forward walks of
// core/autodiff/autodiff.cpp.
//
// Invariants a rule keeps (checked by the walk after every rule):
//  - a cotangent or tangent has exactly the dtype and shape of the value it
//    belongs to (a rule undoes broadcasting and casts itself);
//  - it is built from ordinary traced ops (so it fuses with the forward work
//    and can be differentiated again), at the forward op's source line;
//  - it is linear in the incoming cotangent / tangents (vjp and jvp are each
//    other's transposes: <jvp(t), g> == <t, vjp(g)>, which the tests check).
#pragma once

#include <utility>
#include <vector>

#include "arrayjit/array.hpp"
#include "core/api/trace.hpp"
#include "base/op.hpp"

namespace aj::autodiff {

// What a rule sees of a node: a copy (the node table may grow while a rule
// traces), with handles on its inputs and on the node itself.
struct NodeInfo {
  Op op = Op::Input;
  DType dtype = DType::f32;
  Shape shape;
  std::int64_t i0 = 0, i1 = 0;
  double f0 = 0.0, f1 = 0.0;
  std::vector<std::int64_t> ints;
  std::vector<Array> in;  // the inputs
  Array out;              // the node's own value
  Loc loc;                // where the forward op was traced
  // Reverse mode only (else null): cotangents a rule passes past one of its
  // inputs to that input's own input, as {that array, its cotangent}; the
  // walk adds each to that array's cotangent. The gather of a broadcast view
  // uses it to scatter into the broadcast's source instead of into an array
  // of the broadcast's size (core/autodiff/rules_index.cpp).
  std::vector<std::pair<Array, Array>>* past = nullptr;
};

// Reverse mode: given the cotangent g of the node, set cts[i] to the
// cotangent of input i for each i with need[i] (a floating-point input that
// depends on a differentiated argument). An empty cts[i] means zero.
using VjpFn = void (*)(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                       std::vector<Array>& cts);
// Forward mode: the tangent of the node from the tangents of its inputs
// (t[i] empty: zero; at least one is not). An empty result means zero.
using JvpFn = Array (*)(const NodeInfo& n, const std::vector<Array>& t);

struct Rule {
  VjpFn vjp = nullptr;
  JvpFn jvp = nullptr;
};

// Backward ops are traced at the forward op's source line, so explain(),
// dumps and error messages point at the user's code, not at this file.
struct At : trace::At {
  Array mul(const Operand& a, const Operand& b) const { return multiply(a, b); }
  Array mul(const Array& a, const Array& b) const { return multiply(o(a), o(b)); }
  Array mul(const Array& a, double c) const { return multiply(o(a), o(c)); }
  Array div(const Array& a, const Array& b) const { return divide(o(a), o(b)); }
  Array add(const Array& a, const Array& b) const { return aj::add(o(a), o(b)); }
  Array add(const Array& a, double c) const { return aj::add(o(a), o(c)); }
  Array sub(const Array& a, const Array& b) const { return subtract(o(a), o(b)); }
  Array rsub(double c, const Array& a) const { return subtract(o(c), o(a)); }
  Array neg(const Array& a) const { return negative(o(a)); }
  Array eq(const Array& a, const Array& b) const { return aj::operator==(o(a), o(b)); }
  Array eq(const Array& a, double c) const { return aj::operator==(o(a), o(c)); }
  // where(c, a, 0): a where c holds, else zero of a's dtype.
  Array keep(const Array& c, const Array& a) const { return where(o(c), o(a), o(0.0)); }
  Array select(const Array& c, const Array& a, const Array& b) const { return where(o(c), o(a), o(b)); }
  Array select(const Array& c, double v, const Array& b) const { return where(o(c), o(v), o(b)); }
  Array ne(const Array& a, double c) const { return aj::operator!=(o(a), o(c)); }
};

// How derivatives pass through `op`:
//  - a rule for every differentiable op;
//  - nullptr for the ops declared non-differentiable: leaves and generators
//    (no inputs), ops with bool or integer results (comparisons, logic,
//    all/any, argmax/argmin, argsort/argtopk), and piecewise-constant ops
//    (sign, floor, ceil, round: derivative 0 almost everywhere, taken as 0
//    everywhere).
// The switch behind it lists every op (no default: the compiler flags a new
// op of arrayjit/ops.def until it is given a rule or declared here).
const Rule* rule_for(Op op);

// The rules of the scans, sorting and indexing ops (core/autodiff/rules_index.cpp).
namespace index_rules {
extern const Rule cumsum, cumprod, cumextreme, logcumsumexp, sort, gather, pad, scatter_add, scatter;
}  // namespace index_rules

// Op::Linalg's rule, by routine (core/autodiff/rules_linalg.cpp).
namespace linalg_rules {
extern const Rule linalg;
}  // namespace linalg_rules

// Op::Conv's rule (core/autodiff/rules_conv.cpp).
namespace conv_rules {
extern const Rule conv;
}  // namespace conv_rules

}  // namespace aj::autodiff

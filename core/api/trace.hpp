// Tracing helpers shared by the op constructors in core/*.cpp: make a node,
// wrap it in a handle, insert the casts and broadcasts the IR rules demand.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"
#include "graph/dump.hpp"
#include "graph/graph.hpp"

namespace aj::trace {

// Every public function that records nodes opens one first thing:
//
//   Array exp(const Operand& x) { trace::Scope scope; ... }
//
// It enters this thread's graph (locking it: other threads may drop handles
// into it or read its arrays meanwhile; graph/graph.hpp) and holds the
// arrays id() imports from other threads' graphs until the op has made its
// node (which then refers to them). Scopes nest: an op made of other ops
// opens one of its own and the inner ones only count.
class Scope {
 public:
  Scope();
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // A leaf of this graph sharing the evaluated storage of `a`, an array of
  // another thread's graph (evaluated there first if it is not yet); held
  // until the scope ends.
  const Array& import(const Array& a, const char* op, const Loc& loc);
  Graph& home() const { return graph_.graph(); }  // this thread's graph

 private:
  GraphScope graph_;
  Scope* outer_;
  std::vector<std::unique_ptr<Array>> imports_;  // stable addresses (local() returns references)
};

// Whether an op's Scope is open on this thread (the library is tracing, not
// the user's code: aj::compile counts only the user's shape reads).
bool in_op();

// The node of a handle the caller has checked and made local (an empty one,
// or one of another graph, is a library bug).
const Node& node(const Array& a);
// The node of a user's handle in its own graph, without a lock: for its dtype
// and shape only (they never change). An empty handle is a user error.
const Node& own_node(const Array& a, const char* op, const Loc& loc);
// An elementwise operand as an array: the user's array (checked as op's), or
// a scalar as a rank-0 array of its default dtype (f64, i64, bool: as
// exp(0.5) is f64). For functions composed of ops (core/api/elementwise.cpp).
Array operand_array(const Operand& x, const char* op);
// The user's handle as an array of the current graph: `a` itself, or (for an
// array of another thread's graph) a leaf imported into this one and held by
// the innermost trace::Scope. Ops use the result, never `a`, from then on.
// An empty handle is a user error naming `op`.
const Array& local(const Array& a, const char* op, const Loc& loc);
// The node of a user's handle, in its own graph (read its dtype and shape; use
// id() to refer to it from a new node): an empty handle is a user error
// naming `op`.
const Node& node(const Array& a, const char* op, const Loc& loc);
// The id of a user's handle in the current graph: for an array of another
// thread's graph, a leaf imported into this one (inside a trace::Scope, which
// holds it). An empty handle is a user error naming `op`.
NodeId id(const Array& a, const char* op, const Loc& loc);

// The mark (a Reshape's i0) of a value autodiff treats as a constant:
// stop_gradient makes it (core/autodiff); a composed function of core/api
// may too (stop_gradient_view), where a quantity its result does not
// depend on (var's shift) should send nothing back.
inline constexpr std::int64_t kStopGradientMark = -1;
Array stop_gradient_view(const Array& x, const Loc& loc);
// An alias of x (a Reshape to its own shape) whose payload is `mark` (the
// marks above, kAnnotatedViewMark, autodiff's), ordered after `after` when
// given (Node::after). x is local; inside a trace::Scope.
Array marked_alias(const Array& x, std::int64_t mark, const Loc& loc, NodeId after = kNoNode);

// Record a node and hand back a handle to it (graph/graph.hpp: Graph::add
// copies `n`, or takes what it cannot copy without allocating).
Array make(Node&& n, const Loc& loc);
// This thread's node for the hot ops to fill and pass to make() at once
// (elementwise ops, constants): reset, with its vectors' memory kept from
// the last use, so a traced op allocates nothing once the graph has freed
// nodes. Nothing may be traced between taking it and make().
Node& scratch_node();

// A constant of dtype `t` holding `v` converted to `t` at every element of
// `shape` (rank 0 unless given: an elementwise op's scalar operand takes the
// op's shape, which saves the Broadcast node a rank-0 one would need). An
// integer that does not fit an integer `t` is a user error naming `op`; a
// float converts as astype does (saturating).
Array constant(const Scalar& v, DType t, const char* op, const Loc& loc, const Shape& shape = {});
// Whether an integer scalar lies within integer dtype t's limits (anything
// else fits: a float takes any value, rounded). constant() refuses one that does not.
bool fits(const Scalar& v, DType t);
// The node constant() records, not recorded (its value fields as they would be).
Node constant_node(const Scalar& v, DType t, const char* op, const Loc& loc, const Shape& shape = {});
Array cast(const Array& a, DType t, const Loc& loc);
Array broadcast(const Array& a, const Shape& to, const Loc& loc);

// The NumPy broadcast of several shapes; throws naming `op` and the operands.
Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const std::vector<DType>& dtypes,
                       const char* op, const Loc& loc);

// Validate extents and return their product; throws on negative extents or
// int64 overflow of the element count.
std::int64_t checked_numel(const std::vector<std::int64_t>& dims, const char* op, const Loc& loc);

// No array, not even a view, may need more bytes than this (element count x
// item size): no system has that much memory, and every buffer size computed
// downstream then fits in size_t with room to spare.
inline constexpr std::uint64_t kMaxArrayBytes = std::uint64_t{1} << 62;
// No array has more axes than this (NumPy's limit too): checked_numel refuses
// more, as do the C API's shapes and every import of foreign memory.
inline constexpr int kMaxRank = 64;
// A user error naming `op` when `ndim` passes kMaxRank (checked_numel calls
// it; so do imports, before they read a foreign shape of that many extents).
void check_rank(std::int64_t ndim, const char* op, const Loc& loc);
// checked_numel, then the byte limit for dtype `t`.
void check_array_size(const Shape& shape, DType t, const char* op, const Loc& loc);

// Normalize an axis (negative counts from the end) of an array of rank `ndim`.
int normalize_axis(int axis, int ndim, const char* op, const Shape& shape, DType t, const Loc& loc);

// The dtype sum, prod, cumsum and cumprod give when none is asked for
// (NumPy on 64-bit Linux): bool and signed integers of fewer than 8 bytes
// widen to i64, unsigned ones to the table's 8-byte unsigned dtype (NumPy's
// uint64; i64, which holds their sums too, where there is none), the rest
// keep their own (core/api/reductions.cpp).
DType sum_dtype(DType t);

// "f32[3, 4]"; a scalar's value as written ("true", "3000000000", "1e+20").
using ::aj::describe;  // graph/dump.hpp
std::string describe(const Scalar& v);
std::string describe(const Array& a);

// Operands at the user's line: a composition's ops are traced there, so
// explain(), dumps and error messages point at the user's code.
struct At {
  Loc loc;
  Operand o(const Array& a) const { return Operand(a, loc); }
  Operand o(double c) const { return Operand(c, loc); }
};

}  // namespace aj::trace

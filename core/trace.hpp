// Tracing helpers shared by the op constructors in core/*.cpp: make a node,
// wrap it in a handle, insert the casts and broadcasts the IR rules demand.
#pragma once

#include <string>
#include <vector>

#include "arrayjit/array.hpp"
#include "graph/dump.hpp"
#include "graph/graph.hpp"

namespace aj::trace {

// The node of a handle the caller has checked (an empty one is a library bug).
const Node& node(const Array& a);
// The node or id of a user's handle: an empty one is a user error naming `op`.
const Node& node(const Array& a, const char* op, const Loc& loc);
NodeId id(const Array& a, const char* op, const Loc& loc);

// Record a node and hand back a handle to it.
Array make(Node n, const Loc& loc);

// A rank-0 constant of dtype `t` holding `v` converted to `t`. An integer
// that does not fit an integer `t` is a user error naming `op`; a float
// converts as astype does (saturating).
Array constant(const Scalar& v, DType t, const char* op, const Loc& loc);
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
// checked_numel, then the byte limit for dtype `t`.
void check_array_size(const Shape& shape, DType t, const char* op, const Loc& loc);

// Normalize an axis (negative counts from the end) of an array of rank `ndim`.
int normalize_axis(int axis, int ndim, const char* op, const Shape& shape, DType t, const Loc& loc);

// "f32[3, 4]"; a scalar's value as written ("true", "3000000000", "1e+20").
using ::aj::describe;  // graph/dump.hpp
std::string describe(const Scalar& v);
std::string describe(const Array& a);

}  // namespace aj::trace

// Tracing helpers shared by the op constructors in core/*.cpp: make a node,
// wrap it in a handle, insert the casts and broadcasts the IR rules demand.
#pragma once

#include <string>
#include <vector>

#include "arrayjit/array.hpp"
#include "graph/dump.hpp"
#include "graph/graph.hpp"

namespace aj::trace {

const Node& node(const Array& a);  // throws a user error on an empty handle
NodeId id(const Array& a, const char* op, const Loc& loc);

// Record a node and hand back a handle to it.
Array make(Node n, const Loc& loc);

// A rank-0 constant of dtype `t` holding `v` converted to `t`.
Array constant(const Scalar& v, DType t, const Loc& loc);
Array cast(const Array& a, DType t, const Loc& loc);
Array broadcast(const Array& a, const Shape& to, const Loc& loc);

// The NumPy broadcast of several shapes; throws naming `op` and the operands.
Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const std::vector<DType>& dtypes,
                       const char* op, const Loc& loc);

// Validate extents and return their product; throws on negative extents or
// int64 overflow of the element count.
std::int64_t checked_numel(const std::vector<std::int64_t>& dims, const char* op, const Loc& loc);

// Normalize an axis (negative counts from the end) of an array of rank `ndim`.
int normalize_axis(int axis, int ndim, const char* op, const Shape& shape, DType t, const Loc& loc);

// "f32[3, 4]"
using ::aj::describe;  // graph/dump.hpp
std::string describe(const Array& a);

}  // namespace aj::trace

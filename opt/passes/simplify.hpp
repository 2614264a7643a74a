// simplify: rewrites that make the graph smaller without changing any value.
//
// Guarantees (docs/semantics.md is the yardstick; every rule is exact, bit for
// bit, including -0.0 and NaN, because folding computes with the same scalar
// functions as the reference interpreter):
//  - Constant folding of fills (a Constant, or a Broadcast of one):
//    elementwise ops of fills, views of fills, and reductions of fills become
//    fills (`ones + 2` is a fill of 3; a sum of a fill is a fill, folded only
//    where the repeated sum is provably the same number: integers (wrapping),
//    integer-valued floats below 2^mantissa, or by summing c times for c <= 2^22).
//  - Algebraic identities: x*1, x/1; x+0 and x-0 for integers; for floats
//    only the exact forms x + (-0.0) and x - (+0.0) (x + 0.0 is NOT x: -0.0);
//    x - x = 0 for integers (not floats: inf - inf is NaN); -(-x) = x;
//    cast chains through a lossless middle type (i32->i64->T == i32->T);
//    reshape of reshape (not through a Reshape autodiff marked, i0 != 0:
//    a tracer or stop_gradient, which is never folded itself, not even as a
//    view of a fill); transpose of transpose; where(fill, a, b).
//  - Node identity is kept: a rewritten node changes in place into an
//    equivalent one (a Broadcast of a new Constant, or an identity Reshape
//    "alias" of the simpler node), so user handles stay valid.
//  - A concatenate of one elementwise expression over slices that continue
//    each other along its axis is that expression over the slice they make
//    together (concatenate([f(x[0:16]), f(x[16:32])]) is f(x[0:32])); a run of
//    such pieces among others becomes one piece. The pieces' other leaves
//    must be equal constants or broadcasts of one value 1 long on the axis
//    (the one rule that looks at constants' values: pieces with different
//    scalars stay a concatenate). Pieces of more than 4,096 nodes are left alone. Not for
//    aj::compile's programs (`merge_concat_pieces` false): whether slices
//    continue each other can hold at one call's extents and not at another's.
//  - CSE: trace-time structural hashing already merges equal nodes; rewritten
//    nodes re-enter the CSE table. DCE: reference counts free every node that
//    a rewrite left unreachable, at once.
#pragma once

#include <vector>

#include "graph/graph.hpp"

namespace aj {

// `walked`, when given: the topological order of the unevaluated nodes the
// roots need (unevaluated_order) when simplify rewrote nothing, else empty
// (the plan cache's key walks it instead of walking again).
void simplify(const std::vector<NodeId>& roots, std::vector<NodeId>* walked = nullptr,
              bool merge_concat_pieces = true);

}  // namespace aj

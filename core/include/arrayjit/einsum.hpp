// NumPy's einsum: a sum of products over named axes, composed of arrayjit's
// views (diagonal, transpose, reshape), sum, multiply and matmul, so it is
// lazy like any op, reaches the BLAS wherever a pair of operands is
// contracted, and is differentiable. docs/semantics.md ("einsum") lists where
// it differs from NumPy.
//
//   einsum("ij,jk->ik", {a, b})    matmul
//   einsum("...ij,...jk", {a, b})  batched matmul (implicit output)
//   einsum("ii", {a})              trace;  "ii->i": the diagonal (a view)
//   einsum("bn,anm,bm->ba", {x, w, y})
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// The subscripts are NumPy's: letters a-z A-Z name axes, one "..." per term
// stands for leading (broadcast) axes, spaces are ignored. With "->" the
// output is the letters after it (none: a full sum); without, the letters
// that appear exactly once, in ASCII order (A-Z before a-z), after the
// ellipsis axes. A letter repeated within one operand takes its diagonal;
// a letter absent from the output is summed. Extents of a letter must agree
// across operands or be 1 (broadcast). The result has the operands' promoted
// dtype (the sums run in it; bool: or of ands, as NumPy).
//
// Operands are contracted two at a time, in the order einsum_path chooses;
// a pair that sums over a shared letter is one (batched) matmul, or a fused
// multiply and sum where it is a dot product per batch index.
Array einsum(std::string_view subscripts, const std::vector<Array>& operands, Loc loc = Loc::current());

// The order einsum contracts its operands in, for operands of these shapes.
// Chosen to minimise the multiply-adds: by trying every order for up to 5
// operands (after each operand's own letters are summed), greedily for more
// (opt_einsum's "greedy": the pair sharing a letter whose result is smallest
// relative to its inputs, then outer products of the smallest).
struct EinsumPath {
  // Each step contracts positions (first, second) of the current list
  // (first < second); both are removed and the result appended, as
  // np.einsum_path's list.
  std::vector<std::pair<int, int>> steps;
  // Each step's own subscripts, "jk,k->j" (the letters as given, the axes
  // under "..." as digits 0, 1, ... from the left).
  std::vector<std::string> step_subscripts;
  // Multiply-adds: summed over the steps (each: the product of the extents
  // of every letter of its two operands), and of the naive single loop over
  // every letter (times operands - 1, at least 1).
  double flops = 0, naive_flops = 0;
  // np.einsum_path's report, shortened: the subscripts, both counts, the steps.
  std::string str() const;
};
EinsumPath einsum_path(std::string_view subscripts, const std::vector<Shape>& shapes, Loc loc = Loc::current());

}  // namespace aj

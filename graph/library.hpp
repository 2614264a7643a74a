// Library steps: the ops that are not Kernel IR (matmul, concatenate,
// sort/argsort/topk, scatter) have whole-array algorithms of their own on
// every backend.
// A LibraryCall describes one without graph nodes, as Kernel IR describes a
// kernel: backends see this, never the graph.
//
// Rules:
//  - The result has `shape` and `dtype` and is written contiguous, row-major.
//  - Each operand is a strided view (elements: strides per axis of its own
//    shape, offset) of an input buffer, in the order of the node's inputs.
//  - MatMul: inputs are [batch..., m, k] and [batch..., k, n], batch axes
//    already broadcast to the result's (stride 0 allowed).
//  - Concat: inputs are written one after another along `axis`; an operand
//    marked `in_place` is there already (its producer wrote it into its
//    slice of the result, opt/passes/concat_slices.hpp) and is not copied.
//  - Sort/ArgSort: one input, each line along `axis` sorted ascending and
//    stable (NaN last, -0.0 equal to +0.0, docs/semantics.md); the result
//    has the input's shape: the values (Sort) or their i64 indices (ArgSort).
//  - TopK/ArgTopK: the `k` largest of each line along `axis`, largest first
//    (NaN largest; ties: lower index first); the result has extent k there.
//  - Linalg: `axis` is the LinalgKind, `k` its flags (below); each matrix of
//    the operands' last two axes gets one LAPACK routine, the leading axes are
//    a batch (the operands' already agree). `loc` names the user's line for the
//    errors a matrix's values cause (singular, not positive definite).
//  - Conv: `axis` is the groups, `ints` the geometry (ConvGeometry below);
//    operands x [N, C, s...] and w [O, C / groups, k...], result
//    [N, O, out...]: out[n, o, p] = sum over c of its group and taps t of
//    w[o, c, t] * x[n, c, p * stride + t * dilation - pad_lo] (0 outside x).
//    With `k` = kConvWeightGrad (the node's i1) it is that convolution's
//    weight gradient instead: operands x [N, C, s...] and g [N, O, out...]
//    (out the convolution's extents), result [O, C / groups, k...] (the
//    window's extents are the result's): dw[o, c, t] = sum over n and points
//    p of g[n, o, p] * x[n, c of o's group, p * stride + t * dilation - pad_lo].
//  - HostCall: the user's function `host` over the operands (host memory, as
//    laid out), its results packed one after another in the result
//    (graph/host_call.hpp).
//  - Collective: `axis` is the CollectiveKind, `k` the ReduceKind, `ints`
//    {group, peer} (peer: broadcast's root, send's destination, recv's
//    source); one operand (recv: none). What each computes is below.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"
#include "base/op.hpp"

namespace aj {

struct LibraryOperand {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset = 0;
  bool in_place = false;  // Concat: already in its slice of the result
};

struct HostCallFn;  // graph/host_call.hpp

struct LibraryCall {
  Op op = Op::MatMul;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<LibraryOperand> inputs;
  std::int64_t axis = 0;
  std::int64_t k = 0;  // TopK/ArgTopK: how many; Linalg: the flags
  Loc loc;             // where the node was traced (Linalg's value errors)
  // HostCall: the function (not held: its nodes hold it while they may run,
  // and aj::compile's kept programs; graph/host_call.hpp) and its results'
  // shapes (the node's payload ints).
  std::weak_ptr<const HostCallFn> host;
  std::vector<std::int64_t> ints;
};

// The routines of Op::Linalg (node payload i0; flags in i1). Operands are
// [batch..., rows, cols]; results are row-major. A decomposition with several
// parts returns them packed in one array, rows of the parts one after
// another, each part's columns from 0 (the rest of a row is 0); the public
// functions (core/api/linalg.cpp) slice them apart (views, no copy).
//   cholesky  a [n, n] -> L [n, n], lower, zeros above (reads a's lower
//             triangle). Not positive definite: an error.
//   lu        a [m, n] -> [2 + m, max(m, n)]: row 0 holds the pivots as
//             numbers: row i was swapped with row pivot[i] (0-based, i <
//             min(m, n)); row 1 the permutation they make: row i of L U is
//             row perm[i] of a (i < m); rows 2..m+1 hold L below the
//             diagonal (unit diagonal not stored) and U on and above it
//             (LAPACK getrf, partial pivoting). (The short rows first: every
//             part starts at a fixed row, so a compiled call at new extents
//             slices them apart without tracing.) Never an error: a zero
//             pivot leaves U singular.
//   solve     a [n, n], b [n, k] -> x [n, k] with a x = b (getrf + getrs).
//             Singular a: an error.
//   triangular  a [n, n], b [n, k] -> x [n, k] with op(a) x = b, reading one
//             triangle of a: flags kLower (else upper), kTransposeA, kUnit
//             (diagonal taken as 1). A zero on the diagonal gives inf/NaN.
//   qr        a [m, n] -> [m + r, c]: Q [m, q] then R [r, n]; reduced:
//             q = r = min(m, n); kComplete: q = r = m. c = max(q, n).
//   svd       a [m, n] -> the singular values [min(m, n)], descending; with
//             kVectors: [m + 1 + v, c]: U [m, u], then S in one row, then
//             Vh [v, n]; u = v = min(m, n), kFull: u = m, v = n;
//             c = max(u, n).
//   eigh      a [n, n] symmetric (reads the lower triangle; kUpper: the
//             upper) -> the eigenvalues [n], ascending; with kVectors
//             [n + 1, n]: the eigenvalues in row 0, then V (column j is the
//             eigenvector of eigenvalue j).
enum class LinalgKind : std::int64_t { cholesky, lu, solve, triangular, qr, svd, eigh };
namespace linalg_flag {
constexpr std::int64_t kLower = 1, kTransposeA = 2, kUnit = 4;  // triangular
constexpr std::int64_t kNamedInv = 1;                            // solve: inv's (errors say "inv")
constexpr std::int64_t kComplete = 1;                            // qr
constexpr std::int64_t kVectors = 1, kFull = 2;                  // svd (kVectors also eigh)
constexpr std::int64_t kUpper = 2;                               // eigh
}  // namespace linalg_flag

const char* linalg_name(LinalgKind kind);
// The user's op behind a node (inv for a solve flagged kNamedInv): what
// errors name.
const char* linalg_op_name(LinalgKind kind, std::int64_t flags);

// The result's shape for operands of these shapes (batch axes equal, ranks
// >= 2, square where the routine needs it: checked by the caller, who names
// the user's op); the one rule that tracing, verification and the backends use.
Shape linalg_shape(LinalgKind kind, std::int64_t flags, const Shape& a, const Shape* b);

// The routines of Op::Collective (node payload i0; i1 the ReduceKind; ints
// {group id, peer rank}), across the ranks of a group of processes
// (backends/cpu/host_comm.hpp runs them, docs/distributed.md):
//   all_reduce      x -> x's shape: the elementwise reduction over the ranks
//                   (mean: the node exchanges the sum, and the tracing API
//                   multiplies it by 1 / size after; bool: sum and
//                   max are or, prod and min are and).
//   all_gather      x [n, ...] -> [size * n, ...]: every rank's x, rank after
//                   rank (a rank-0 x gives [size]).
//   reduce_scatter  x [size * m, ...] -> [m, ...]: rank r's block of the
//                   elementwise reduction.
//   broadcast       x -> x's shape: the root's x.
//   send            x -> x's shape, x's values: x is sent to the peer when the
//                   result is evaluated.
//   recv            () -> the node's shape: what the peer sent.
// The ranks must agree on each collective (kind, reduction, dtype, shapes,
// root, in the same order): every step checks it before moving data.
enum class CollectiveKind : std::int64_t { all_reduce, all_gather, reduce_scatter, broadcast, send, recv };
enum class ReduceKind : std::int64_t { sum, mean, max, min, prod };
const char* collective_name(CollectiveKind kind);
const char* reduce_kind_name(ReduceKind kind);

// Op::Conv's geometry, d spatial axes, packed in the node's ints as
// {strides..., pad_lo..., pad_hi..., dilations...} (4 d numbers). Padding may
// be negative (a crop).
struct ConvGeometry {
  std::vector<std::int64_t> stride, lo, hi, dilation;
  std::size_t dims() const { return stride.size(); }
  std::vector<std::int64_t> pack() const;
  // Unpacks ints of 4 d numbers (d = 1..3); false when malformed.
  bool unpack(const std::vector<std::int64_t>& ints);
};
// The result's extent along one spatial axis: floor((e + lo + hi - span) /
// stride) + 1 with span = (k - 1) * dilation + 1, or 0 when the window does
// not fit.
std::int64_t conv_out_extent(std::int64_t e, std::int64_t k, std::int64_t stride, std::int64_t lo, std::int64_t hi,
                             std::int64_t dilation);
// The result's shape [N, O, out...] for x [N, C, s...] and w [O, I, k...]
// (ranks and extents checked by the caller).
Shape conv_shape(const Shape& x, const Shape& w, const ConvGeometry& geo);
// Op::Conv's i1: the plain convolution, or its weight gradient (above).
constexpr std::int64_t kConvForward = 0, kConvWeightGrad = 1;

// Ops that run as library steps rather than inside kernels.
constexpr bool is_library_op(Op op) {
  return op_category(op) == OpCategory::Other;
}

}  // namespace aj

// numpy.linalg in arrayjit: decompositions and solvers over the last two
// axes, batched over the leading ones (which broadcast where two operands
// meet, as in matmul). Lazy like any op: each LAPACK routine is a library
// step of the plan (graph/library.hpp, Op::Linalg) that reads its operands
// where they lie and writes into its planned buffer, and the elementwise work
// around it fuses into kernels before and after. On the host the routines
// are LAPACK's from the OpenBLAS the matmul uses (the same kernels for the
// CPU); on CUDA devices they are not available yet (an error, no silent copy
// to the host).
//
// dtypes: f32 and f64 compute as they are; integers and bool are taken as
// f64 (NumPy); f16/bf16 are refused (NumPy refuses float16 too).
// Errors a matrix's values cause are NumPy's: solve, inv and cholesky of a
// singular or not positive definite matrix throw aj::Error naming the op and
// the caller's line when the value is evaluated; det and slogdet give 0 and
// (0, -inf). Every routine is differentiable in reverse and forward mode
// (docs/semantics.md, "Linear algebra", lists the rules and where they fail:
// repeated eigenvalues or singular values, rank-deficient QR).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::linalg {

// The Cholesky factor of a symmetric positive definite matrix: L (lower,
// a = L L^T; reads a's lower triangle) or, with upper, U = L^T (a = U^T U).
Array cholesky(const Array& a, bool upper = false, Loc loc = Loc::current());

// x with a x = b. a is [..., n, n]; b is [..., n, k], or [n] (one vector,
// NumPy 2's rule: only a 1-d b is a vector). Batch axes broadcast.
Array solve(const Array& a, const Array& b, Loc loc = Loc::current());
// The inverse (solve(a, identity)).
Array inv(const Array& a, Loc loc = Loc::current());

// x with op(a) x = b for a triangular a: only the `lower` (else upper)
// triangle of a is read; op(a) = a^T with transpose_a; unit_diagonal takes
// a's diagonal as ones. b as in solve. A zero on the diagonal gives inf/NaN
// (no error: LAPACK's trsm, scipy's solve_triangular with check_finite off).
Array triangular_solve(const Array& a, const Array& b, bool lower = false, bool transpose_a = false,
                       bool unit_diagonal = false, Loc loc = Loc::current());
inline Array solve_triangular(const Array& a, const Array& b, bool lower = false, bool transpose_a = false,
                              bool unit_diagonal = false, Loc loc = Loc::current()) {
  return triangular_solve(a, b, lower, transpose_a, unit_diagonal, loc);  // scipy's name
}

// LU with partial pivoting of a [..., m, n] (LAPACK getrf, scipy's
// lu_factor): lu holds L below the diagonal (unit diagonal not stored) and U
// on and above it; pivots (i32, min(m, n)): row i was swapped with row
// pivots[i]; permutation (i32, m): row i of L U is row permutation[i] of a.
struct LUFactor {
  Array lu, pivots, permutation;
};
LUFactor lu_factor(const Array& a, Loc loc = Loc::current());
// scipy.linalg.lu: a = p l u with p a permutation matrix [m, m], l [m, k]
// unit lower, u [k, n] upper (k = min(m, n)).
struct PLU {
  Array p, l, u;
};
PLU lu(const Array& a, Loc loc = Loc::current());

// QR of a [..., m, n] (Householder, LAPACK geqrf/orgqr). reduced: q [m, k],
// r [k, n] (k = min(m, n)); complete: q [m, m], r [m, n]; r: only r (q is an
// empty handle), as NumPy's modes.
enum class QRMode { reduced, complete, r };
struct QR {
  Array q, r;
};
QR qr(const Array& a, QRMode mode = QRMode::reduced, Loc loc = Loc::current());

// a = u diag(s) vh (LAPACK gesdd), s descending. full_matrices (NumPy's
// default): u [m, m], vh [n, n]; else u [m, k], vh [k, n].
struct SVD {
  Array u, s, vh;
};
SVD svd(const Array& a, bool full_matrices = true, Loc loc = Loc::current());
// The singular values alone (svd(compute_uv=False), NumPy 2's svdvals).
Array svdvals(const Array& a, Loc loc = Loc::current());

// Eigenvalues (ascending) and eigenvectors (column j for eigenvalue j) of a
// symmetric matrix, reading its lower triangle (upper: the upper; NumPy's
// UPLO) (LAPACK syevd).
struct Eigh {
  Array eigenvalues, eigenvectors;
};
Eigh eigh(const Array& a, bool upper = false, Loc loc = Loc::current());
Array eigvalsh(const Array& a, bool upper = false, Loc loc = Loc::current());

// Determinants from the LU factors: det, and slogdet's sign (0 for a
// singular matrix) and log|det| (-inf then), which does not overflow.
Array det(const Array& a, Loc loc = Loc::current());
struct SlogDet {
  Array sign, logabsdet;
};
SlogDet slogdet(const Array& a, Loc loc = Loc::current());

// Least squares min |a x - b| by the SVD (NumPy's lstsq, LAPACK's gelsd
// method): singular values at most rcond * max(s) count as 0 (rcond default:
// machine epsilon times max(m, n), NumPy 2's). residuals: the squared norms
// of b - a x per column when m > n ([k], or [] for a 1-d b), else shape [0];
// NumPy also gives shape [0] when rank < n (a value-dependent shape; here the
// residuals are computed: docs/semantics.md). rank: i64; s: the singular values.
struct Lstsq {
  Array x, residuals, rank, s;
};
Lstsq lstsq(const Array& a, const Array& b, std::optional<double> rcond = std::nullopt, Loc loc = Loc::current());

// The pseudo-inverse by the SVD: singular values at most rcond * max(s) are
// dropped (NumPy's default rcond 1e-15).
Array pinv(const Array& a, double rcond = 1e-15, Loc loc = Loc::current());

// NumPy's norm orders: a number p (2, 1, inf, -inf, 0, -1, -2, any other p
// for vectors), "fro" or "nuc"; default: the 2-norm of a vector, Frobenius
// of a matrix.
struct Ord {
  enum class Kind { none, p, fro, nuc } kind = Kind::none;
  double p = 2.0;
  Ord() = default;
  Ord(double value) : kind(Kind::p), p(value) {}  // NOLINT: implicit, as NumPy's ord=2
  Ord(int value) : kind(Kind::p), p(value) {}     // NOLINT
  Ord(const char* name);                          // NOLINT: "fro" or "nuc"
};
// numpy.linalg.norm: axis none: a 1-d or 2-d x by ord (the 2-norm of x
// flattened when ord is none too); one axis: vector norms; two: matrix norms.
Array norm(const Array& x, Ord ord = {}, std::optional<std::vector<int>> axis = std::nullopt, bool keepdims = false,
           Loc loc = Loc::current());
// The array API's: vector norms over `axes` (all by default), matrix norms
// over the last two axes.
Array vector_norm(const Array& x, double ord = 2.0, Axes axes = Axes::all(), bool keepdims = false,
                  Loc loc = Loc::current());
Array matrix_norm(const Array& x, Ord ord = "fro", bool keepdims = false, Loc loc = Loc::current());

// a^n by repeated squaring (n < 0: of the inverse; n = 0: the identity, in
// a's dtype).
Array matrix_power(const Array& a, std::int64_t n, Loc loc = Loc::current());
// The number of singular values above tol (default: max(s) * max(m, n) *
// eps), i64; a 1-d a: 1 unless every element is 0.
Array matrix_rank(const Array& a, std::optional<double> tol = std::nullopt, Loc loc = Loc::current());

}  // namespace aj::linalg

// numpy.linalg (arrayjit/linalg.hpp): each decomposition or solver is one
// Op::Linalg node (a library step; graph/library.hpp packs a decomposition's
// parts in its one result), and everything else (det from the LU factors,
// lstsq and pinv from the SVD, norms, powers) is composed of ordinary ops
// that fuse around it. Ops are traced at the caller's line. Each public
// function holds a trace::Scope: the extents it reads are the library's, not
// the caller's, so aj::compile does not take them for a C++ shape read.
#include "arrayjit/linalg.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "arrayjit/indexing.hpp"
#include "arrayjit/shape_functions.hpp"
#include "arrayjit/statistics.hpp"
#include "core/api/trace.hpp"
#include "graph/library.hpp"

namespace aj::linalg {

namespace {

using trace::describe;
using namespace linalg_flag;

// Ops at the caller's line.
using trace::At;

std::int64_t rows(const Array& a) { return a.shape()[a.ndim() - 2]; }
std::int64_t cols(const Array& a) { return a.shape()[a.ndim() - 1]; }

// a in a dtype LAPACK takes: f32/f64 as they are, integers and bool as f64.
Array as_float(const Array& a, const char* op, const Loc& loc) {
  const DType t = a.dtype(loc);
  if (t == DType::f32 || t == DType::f64) return a;
  if (is_half(t)) {
    user_error(op, "takes f32 or f64 matrices, not " + describe(a) + " (NumPy refuses float16 too): cast it first",
               loc);
  }
  return a.astype(DType::f64, loc);
}

// A stack of matrices (rank >= 2; square when asked) in a LAPACK dtype.
Array matrices(const Array& a, const char* op, bool square, const Loc& loc) {
  Array x = as_float(a, op, loc);
  if (x.ndim() < 2) user_error(op, "needs matrices (rank >= 2), got " + describe(x), loc);
  if (square && rows(x) != cols(x)) user_error(op, "needs square matrices, got " + describe(x), loc);
  return x;
}

// The Op::Linalg node.
Array node(LinalgKind kind, std::int64_t flags, const Array& a_in, const Array* b_in, const Loc& loc) {
  const char* name = linalg_name(kind);
  trace::Scope scope;
  const Array& a = trace::local(a_in, name, loc);
  const Array* b = b_in ? &trace::local(*b_in, name, loc) : nullptr;
  Node n;
  n.op = Op::Linalg;
  n.dtype = a.dtype();
  n.shape = linalg_shape(kind, flags, a.shape(), b ? &b->shape() : nullptr);
  trace::check_array_size(n.shape, n.dtype, name, loc);
  n.i0 = static_cast<std::int64_t>(kind);
  n.i1 = flags;
  n.inputs = {a.node_id()};
  if (b) n.inputs.push_back(b->node_id());
  return trace::make(std::move(n), loc);
}

// Rows [r0, r0 + nrows) and columns [0, ncols) of the last two axes: one
// part of a packed result (a view).
Array part(const Array& packed, std::int64_t r0, std::int64_t nrows, std::int64_t ncols, const Loc& loc) {
  const int nd = packed.ndim();
  return slice(slice(packed, nd - 2, r0, r0 + nrows, 1, loc), nd - 1, 0, ncols, 1, loc);
}
// Row r, columns [0, ncols), without the row axis.
Array row(const Array& packed, std::int64_t r, std::int64_t ncols, const Loc& loc) {
  std::vector<std::int64_t> d(packed.shape().begin(), packed.shape().end() - 2);
  d.push_back(ncols);
  return reshape(part(packed, r, 1, ncols, loc), Shape(std::move(d)), loc);
}

std::vector<std::int64_t> batch_of(const Array& a) { return {a.shape().begin(), a.shape().end() - 2}; }

// The batch axes of two operands broadcast together (matmul's rule).
std::vector<std::int64_t> broadcast_batch(const Array& a, const Array& b, const char* op, const Loc& loc) {
  const auto x = batch_of(a), y = batch_of(b);
  std::vector<std::int64_t> d(std::max(x.size(), y.size()), 1);
  for (std::size_t i = 0; i < d.size(); ++i) {
    const std::int64_t p = i < x.size() ? x[x.size() - 1 - i] : 1, q = i < y.size() ? y[y.size() - 1 - i] : 1;
    if (p != q && p != 1 && q != 1) {
      user_error(op, "batch extents of " + describe(a) + " and " + describe(b) + " cannot be broadcast together",
                 loc);
    }
    d[d.size() - 1 - i] = p == 1 ? q : p;
  }
  return d;
}

Shape with(std::vector<std::int64_t> batch, std::int64_t r, std::int64_t c) {
  batch.push_back(r);
  batch.push_back(c);
  return Shape(std::move(batch));
}

// solve and triangular_solve: a [..., n, n] and b [..., n, k] or [n],
// one dtype, batches broadcast; the node; a 1-d b's result as a vector.
Array solve_node(LinalgKind kind, std::int64_t flags, const Array& a_in, const Array& b_in, const char* op,
                 const Loc& loc) {
  trace::Scope scope;
  Array a = matrices(a_in, op, true, loc);
  Array b = as_float(b_in, op, loc);
  if (b.ndim() == 0) user_error(op, "b must be a vector or matrices, got " + describe(b), loc);
  const DType t = a.dtype() == DType::f64 || b.dtype() == DType::f64 ? DType::f64 : DType::f32;
  a = a.astype(t, loc);
  b = b.astype(t, loc);
  const bool vector = b.ndim() == 1;
  const std::int64_t n = rows(a);
  if (vector) b = reshape(b, Shape{b.shape()[0], 1}, loc);
  if (rows(b) != n) {
    user_error(op, "b's rows (" + std::to_string(rows(b)) + ") differ from a's " + std::to_string(n) + " (" +
                       describe(a_in) + ", " + describe(b_in) + ")", loc);
  }
  const auto batch = broadcast_batch(a, b, op, loc);
  a = broadcast_to(a, with(batch, n, n), loc);
  b = broadcast_to(b, with(batch, n, cols(b)), loc);
  Array x = node(kind, flags, a, &b, loc);
  if (!vector) return x;
  std::vector<std::int64_t> d = batch;
  d.push_back(n);
  return reshape(x, Shape(std::move(d)), loc);
}

double eps_of(DType t) {
  return t == DType::f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
}

}  // namespace

Array cholesky(const Array& a, bool upper, Loc loc) {
  trace::Scope scope;
  Array l = node(LinalgKind::cholesky, 0, matrices(a, "cholesky", true, loc), nullptr, loc);
  return upper ? matrix_transpose(l, loc) : l;
}

Array solve(const Array& a, const Array& b, Loc loc) { return solve_node(LinalgKind::solve, 0, a, b, "solve", loc); }

Array inv(const Array& a_in, Loc loc) {
  trace::Scope scope;
  const Array a = matrices(a_in, "inv", true, loc);
  const Array identity = broadcast_to(eye(rows(a), std::nullopt, 0, a.dtype(), loc), a.shape(), loc);
  return node(LinalgKind::solve, kNamedInv, a, &identity, loc);
}

Array triangular_solve(const Array& a, const Array& b, bool lower, bool transpose_a, bool unit_diagonal, Loc loc) {
  trace::Scope scope;
  const std::int64_t flags = (lower ? kLower : 0) | (transpose_a ? kTransposeA : 0) | (unit_diagonal ? kUnit : 0);
  return solve_node(LinalgKind::triangular, flags, a, b, "triangular_solve", loc);
}

LUFactor lu_factor(const Array& a_in, Loc loc) {
  trace::Scope scope;
  const Array a = matrices(a_in, "lu_factor", false, loc);
  const std::int64_t m = rows(a), n = cols(a);
  const Array packed = node(LinalgKind::lu, 0, a, nullptr, loc);
  return {part(packed, 2, m, n, loc), row(packed, 0, std::min(m, n), loc).astype(DType::i32, loc),
          row(packed, 1, m, loc).astype(DType::i32, loc)};
}

PLU lu(const Array& a_in, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const Array a = matrices(a_in, "lu", false, loc);
  const std::int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const LUFactor f = lu_factor(a, loc);
  const int nd = a.ndim();
  // l: the part below the diagonal of the first k columns, ones on it.
  const Array below = tril(slice(f.lu, nd - 1, 0, k, 1, loc), -1, loc);
  const Array l = at.o(below) + at.o(eye(m, k, 0, a.dtype(), loc));
  const Array u = triu(slice(f.lu, nd - 2, 0, k, 1, loc), 0, loc);
  // p[perm[i], i] = 1: p^T a = l u.
  const Array hit = at.o(expand_dims(f.permutation, nd - 1, loc)) == at.o(arange(m, DType::i32, loc));
  return {matrix_transpose(hit, loc).astype(a.dtype(), loc), l, u};
}

QR qr(const Array& a_in, QRMode mode, Loc loc) {
  trace::Scope scope;
  const Array a = matrices(a_in, "qr", false, loc);
  const std::int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const bool complete = mode == QRMode::complete;
  const std::int64_t q = complete ? m : k;
  const Array packed = node(LinalgKind::qr, complete ? kComplete : 0, a, nullptr, loc);
  const Array r = part(packed, m, q, n, loc);
  if (mode == QRMode::r) return {Array(), r};
  return {part(packed, 0, m, q, loc), r};
}

SVD svd(const Array& a_in, bool full_matrices, Loc loc) {
  trace::Scope scope;
  const Array a = matrices(a_in, "svd", false, loc);
  const std::int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const std::int64_t u = full_matrices ? m : k, v = full_matrices ? n : k;
  const Array packed = node(LinalgKind::svd, kVectors | (full_matrices ? kFull : 0), a, nullptr, loc);
  return {part(packed, 0, m, u, loc), row(packed, m, k, loc), part(packed, m + 1, v, n, loc)};
}

Array svdvals(const Array& a, Loc loc) {
  trace::Scope scope;
  return node(LinalgKind::svd, 0, matrices(a, "svdvals", false, loc), nullptr, loc);
}

Eigh eigh(const Array& a_in, bool upper, Loc loc) {
  trace::Scope scope;
  const Array a = matrices(a_in, "eigh", true, loc);
  const std::int64_t n = rows(a);
  const Array packed = node(LinalgKind::eigh, kVectors | (upper ? kUpper : 0), a, nullptr, loc);
  return {row(packed, 0, n, loc), part(packed, 1, n, n, loc)};
}

Array eigvalsh(const Array& a, bool upper, Loc loc) {
  trace::Scope scope;
  return node(LinalgKind::eigh, upper ? kUpper : 0, matrices(a, "eigvalsh", true, loc), nullptr, loc);
}

namespace {

// The LU factors' diagonal and the permutation's sign (+1 or -1, a's dtype).
std::pair<Array, Array> lu_diagonal(const Array& a_in, const char* op, const Loc& loc) {
  const At at{loc};
  const Array a = matrices(a_in, op, true, loc);
  const LUFactor f = lu_factor(a, loc);
  const int nd = a.ndim();
  const Array d = diagonal(f.lu, 0, nd - 2, nd - 1, loc);
  const Array swaps = count_nonzero(at.o(f.pivots) != at.o(arange(rows(a), DType::i32, loc)), Axes(nd - 2), false, loc);
  const Array odd = at.o(swaps) % at.o(2.0) == at.o(1.0);
  return {d, where(at.o(odd), at.o(-1.0), at.o(1.0)).astype(a.dtype(), loc)};
}

}  // namespace

Array det(const Array& a, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const auto [d, sign] = lu_diagonal(a, "det", loc);
  return at.o(sign) * at.o(prod(d, Axes(d.ndim() - 1), false, loc));
}

SlogDet slogdet(const Array& a, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  const auto [d, sign] = lu_diagonal(a, "slogdet", loc);
  const int last = d.ndim() - 1;
  return {at.o(sign) * at.o(prod(aj::sign(at.o(d)), Axes(last), false, loc)),
          sum(aj::log(at.o(aj::abs(at.o(d)))), Axes(last), false, loc)};
}

namespace {

// 1 / s where s > cutoff, else 0 (the SVD's pseudo-inverse of diag(s)).
Array inverse_values(const Array& s, const Array& cutoff, const Loc& loc) {
  const At at{loc};
  const Array keep = at.o(s) > at.o(cutoff);
  return where(at.o(keep), at.o(at.o(1.0) / at.o(where(at.o(keep), at.o(s), at.o(1.0)))), at.o(0.0));
}

// rcond * max(s) per matrix, with an axis of extent 1 for s's.
Array cutoff_of(const Array& s, double rcond, const Loc& loc) {
  const At at{loc};
  return at.o(max(s, Axes(s.ndim() - 1), true, loc)) * at.o(rcond);
}

// v diag(inv) u^T b (or without b: the pseudo-inverse).
Array pseudo_apply(const SVD& f, const Array& inv_s, const Array* b, const Loc& loc) {
  const At at{loc};
  // v [n, k] with column j times inv[j].
  const Array v_scaled = at.o(matrix_transpose(f.vh, loc)) * at.o(expand_dims(inv_s, inv_s.ndim() - 1, loc));
  const Array ut = matrix_transpose(f.u, loc);
  return b ? matmul(v_scaled, matmul(ut, *b, loc), loc) : matmul(v_scaled, ut, loc);
}

}  // namespace

Array pinv(const Array& a_in, double rcond, Loc loc) {
  trace::Scope scope;
  const Array a = matrices(a_in, "pinv", false, loc);
  const SVD f = svd(a, false, loc);
  return pseudo_apply(f, inverse_values(f.s, cutoff_of(f.s, rcond, loc), loc), nullptr, loc);
}

Lstsq lstsq(const Array& a_in, const Array& b_in, std::optional<double> rcond, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  Array a = matrices(a_in, "lstsq", false, loc);
  Array b = as_float(b_in, "lstsq", loc);
  if (a.ndim() != 2) user_error("lstsq", "takes one matrix a (as NumPy), got " + describe(a_in), loc);
  if (b.ndim() != 1 && b.ndim() != 2) user_error("lstsq", "b must be 1-d or 2-d, got " + describe(b_in), loc);
  const DType t = a.dtype() == DType::f64 || b.dtype() == DType::f64 ? DType::f64 : DType::f32;
  a = a.astype(t, loc);
  b = b.astype(t, loc);
  const std::int64_t m = rows(a), n = cols(a);
  if (b.shape()[0] != m) {
    user_error("lstsq", "b's rows (" + std::to_string(b.shape()[0]) + ") differ from a's " + std::to_string(m) + " (" +
                            describe(a_in) + ", " + describe(b_in) + ")", loc);
  }
  const bool vector = b.ndim() == 1;
  const Array b2 = vector ? reshape(b, Shape{m, 1}, loc) : b;
  const SVD f = svd(a, false, loc);
  const double rc = rcond ? *rcond : eps_of(t) * static_cast<double>(std::max(m, n));
  const Array cutoff = cutoff_of(f.s, rc, loc);
  Array x = pseudo_apply(f, inverse_values(f.s, cutoff, loc), &b2, loc);
  const Array rank = count_nonzero(at.o(f.s) > at.o(cutoff), Axes::all(), false, loc);
  Array residuals;
  if (m > n) {
    const Array r = at.o(b2) - at.o(matmul(a, x, loc));
    residuals = sum(at.o(r) * at.o(r), Axes(0), false, loc);
    if (vector) residuals = reshape(residuals, Shape{}, loc);
  } else {
    residuals = zeros(Shape{0}, t, loc);
  }
  if (vector) x = reshape(x, Shape{n}, loc);
  return {x, residuals, rank, f.s};
}

Ord::Ord(const char* name) {
  if (name && std::strcmp(name, "fro") == 0) {
    kind = Kind::fro;
  } else if (name && std::strcmp(name, "nuc") == 0) {
    kind = Kind::nuc;
  } else {
    user_error("norm", std::string("ord must be a number, \"fro\" or \"nuc\", not \"") + (name ? name : "null") + "\"",
               Loc::current());
  }
}

namespace {

// x in a floating-point dtype (integers and bool as f64).
Array float_of(const Array& x, const Loc& loc) {
  const DType t = x.dtype(loc);
  if (is_float(t)) return x;
  return x.astype(DType::f64, loc);
}

// Vector norms of x (float) over `axes`.
Array vector_norm_of(const Array& x, double p, const Axes& axes, bool keepdims, const Loc& loc) {
  const At at{loc};
  const Array ax = aj::abs(at.o(x));
  if (std::isinf(p)) return p > 0 ? max(ax, axes, keepdims, loc) : min(ax, axes, keepdims, loc);
  if (p == 0) return count_nonzero(x, axes, keepdims, loc).astype(x.dtype(), loc);
  if (p == 1) return sum(ax, axes, keepdims, loc);
  if (p == 2) return aj::sqrt(at.o(sum(at.o(x) * at.o(x), axes, keepdims, loc)));
  return aj::power(at.o(sum(aj::power(at.o(ax), at.o(p)), axes, keepdims, loc)), at.o(1.0 / p));
}

// Matrix norms over axes (r, c) (normalized, distinct) of x (float).
Array matrix_norm_of(const Array& x, const Ord& ord, int r, int c, bool keepdims, const Loc& loc) {
  const At at{loc};
  const int nd = x.ndim();
  Array out;
  auto singular = [&]() {
    // The two axes moved last for the SVD.
    return svdvals(moveaxis(x, std::vector<int>{r, c}, std::vector<int>{nd - 2, nd - 1}, loc), loc);
  };
  switch (ord.kind) {
    case Ord::Kind::none:
    case Ord::Kind::fro: out = aj::sqrt(at.o(sum(at.o(x) * at.o(x), Axes({r, c}), false, loc))); break;
    case Ord::Kind::nuc: out = sum(singular(), Axes(nd - 2), false, loc); break;
    case Ord::Kind::p: {
      const double p = ord.p;
      if (p == 2 || p == -2) {
        const Array s = singular();
        out = p > 0 ? max(s, Axes(nd - 2), false, loc) : min(s, Axes(nd - 2), false, loc);
      } else if (p == 1 || p == -1 || std::isinf(p)) {
        // 1: the largest column sum (over rows); inf: the largest row sum.
        const Array sums = sum(aj::abs(at.o(x)), Axes(p == 1 || p == -1 ? r : c), true, loc);
        out = p > 0 ? max(sums, Axes({r, c}), false, loc) : min(sums, Axes({r, c}), false, loc);
      } else {
        user_error("norm", "matrix norms take ord 2, -2, 1, -1, inf, -inf, \"fro\" or \"nuc\", not " +
                               std::to_string(p), loc);
      }
      break;
    }
  }
  if (!keepdims) return out;
  std::vector<std::int64_t> d = x.shape().dims();
  d[static_cast<std::size_t>(r)] = d[static_cast<std::size_t>(c)] = 1;
  return reshape(out, Shape(std::move(d)), loc);
}

int axis_in(int axis, int nd, const Loc& loc) {
  if (axis < -nd || axis >= nd) {
    user_error("norm", "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(nd), loc);
  }
  return axis < 0 ? axis + nd : axis;
}

}  // namespace

Array norm(const Array& x_in, Ord ord, std::optional<std::vector<int>> axis, bool keepdims, Loc loc) {
  trace::Scope scope;
  const Array x = float_of(x_in, loc);
  const int nd = x.ndim(loc);
  if (!axis) {
    if (ord.kind == Ord::Kind::none && !(nd == 2 && keepdims)) {
      Array r = vector_norm_of(reshape(x, Shape{x.size()}, loc), 2.0, Axes(0), false, loc);
      if (!keepdims) return r;
      return reshape(r, Shape(std::vector<std::int64_t>(static_cast<std::size_t>(nd), 1)), loc);
    }
    if (nd == 1) axis = std::vector<int>{0};
    else if (nd == 2) axis = std::vector<int>{0, 1};
    else user_error("norm", "an ord needs a 1-d or 2-d array or an axis, got " + describe(x_in), loc);
  }
  if (axis->size() == 1) {
    const int a = axis_in((*axis)[0], nd, loc);
    if (ord.kind == Ord::Kind::fro || ord.kind == Ord::Kind::nuc) {
      user_error("norm", "\"fro\" and \"nuc\" are matrix norms: give two axes", loc);
    }
    return vector_norm_of(x, ord.kind == Ord::Kind::none ? 2.0 : ord.p, Axes(a), keepdims, loc);
  }
  if (axis->size() == 2) {
    const int r = axis_in((*axis)[0], nd, loc), c = axis_in((*axis)[1], nd, loc);
    if (r == c) user_error("norm", "the two axes of a matrix norm must differ", loc);
    return matrix_norm_of(x, ord, r, c, keepdims, loc);
  }
  user_error("norm", "takes one axis (vector norms) or two (matrix norms), got " + std::to_string(axis->size()), loc);
}

Array vector_norm(const Array& x, double ord, Axes axes, bool keepdims, Loc loc) {
  trace::Scope scope;
  return vector_norm_of(float_of(x, loc), ord, axes, keepdims, loc);
}

Array matrix_norm(const Array& x_in, Ord ord, bool keepdims, Loc loc) {
  trace::Scope scope;
  const Array x = float_of(x_in, loc);
  if (x.ndim(loc) < 2) user_error("matrix_norm", "needs matrices (rank >= 2), got " + describe(x_in), loc);
  return matrix_norm_of(x, ord, x.ndim() - 2, x.ndim() - 1, keepdims, loc);
}

Array matrix_power(const Array& a_in, std::int64_t n, Loc loc) {
  trace::Scope scope;
  if (a_in.ndim(loc) < 2 || rows(a_in) != cols(a_in)) {
    user_error("matrix_power", "needs square matrices, got " + describe(a_in), loc);
  }
  if (n == 0) return broadcast_to(eye(rows(a_in), std::nullopt, 0, a_in.dtype(), loc), a_in.shape(), loc);
  Array base = n < 0 ? inv(a_in, loc) : a_in;
  std::uint64_t e = n < 0 ? static_cast<std::uint64_t>(-(n + 1)) + 1 : static_cast<std::uint64_t>(n);
  Array result;
  while (true) {
    if (e & 1) result = result.valid() ? matmul(result, base, loc) : base;
    e >>= 1;
    if (!e) break;
    base = matmul(base, base, loc);
  }
  return result;
}

Array matrix_rank(const Array& a_in, std::optional<double> tol, Loc loc) {
  trace::Scope scope;
  const At at{loc};
  if (a_in.ndim(loc) < 2) return any(at.o(a_in) != at.o(0.0), Axes::all(), false, loc).astype(DType::i64, loc);
  const Array a = matrices(a_in, "matrix_rank", false, loc);
  const Array s = svdvals(a, loc);
  const int last = s.ndim() - 1;
  const Array cutoff = tol ? Array(full(Shape{}, *tol, a.dtype(), loc))
                           : at.o(max(s, Axes(last), true, loc)) *
                                 at.o(static_cast<double>(std::max(rows(a), cols(a))) * eps_of(a.dtype()));
  return count_nonzero(at.o(s) > at.o(cutoff), Axes(last), false, loc);
}

}  // namespace aj::linalg

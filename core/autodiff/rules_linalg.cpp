// The derivative rules of Op::Linalg (graph/library.hpp: the routine is the
// node's i0, its flags i1; a decomposition's parts are packed in one result).
//
// solve and triangular_solve have both rules written out. The
// decompositions (cholesky, lu, qr, svd, eigh) have their forward rule
// written out (the standard ones, as JAX states them), and their reverse rule
// is that forward rule transposed: the JVP is linear in the tangent, so the
// VJP of the function t -> jvp(t) at any t, applied to the cotangent, is the
// cotangent pulled back (aj's own reverse mode does the transposing). Both
// are built of ordinary traced ops (linalg steps, matmuls, elementwise), so
// they can be differentiated again.
//
// Symmetric inputs (cholesky, eigh read one triangle): the tangent is
// symmetrized first, (t + t^T) / 2, as JAX and PyTorch do, so a gradient is
// symmetric; it is the derivative of the routine applied to (a + a^T) / 2,
// which for a symmetric a is the same function. docs/semantics.md
// ("Linear algebra") says where the rules are undefined (repeated
// eigenvalues or singular values give inf/NaN; rank-deficient R).
#include <string>

#include "arrayjit/autodiff.hpp"
#include "arrayjit/indexing.hpp"
#include "arrayjit/linalg.hpp"
#include "arrayjit/shape_functions.hpp"
#include "core/api/trace.hpp"
#include "core/autodiff/rules.hpp"
#include "graph/library.hpp"

namespace aj::autodiff {

namespace {

using namespace linalg_flag;

// The rules' ops (core/autodiff/rules.hpp's At) and the matrix ones, at
// the forward op's line.
struct L : At {
  Array mT(const Array& x) const { return matrix_transpose(x, loc); }
  Array mm(const Array& a, const Array& b) const { return matmul(a, b, loc); }
  // op(a)^-1 b for the triangle of a.
  Array tri(const Array& a, const Array& b, bool lower, bool transpose = false, bool unit = false) const {
    return linalg::triangular_solve(a, b, lower, transpose, unit, loc);
  }
  // b a^-1 for the triangle of a (a right-side solve, as the transpose of a
  // left one).
  Array tri_right(const Array& b, const Array& a, bool lower, bool unit = false) const {
    return mT(tri(a, mT(b), lower, true, unit));
  }
  Array sym(const Array& t) const { return mul(add(t, mT(t)), 0.5); }
  Array eye_like(std::int64_t n, DType t) const { return eye(n, std::nullopt, 0, t, loc); }
  // Rows [r0, r0 + n) and columns [0, c) of the last two axes.
  Array part(const Array& x, std::int64_t r0, std::int64_t n, std::int64_t c) const {
    const int nd = x.ndim();
    return slice(slice(x, nd - 2, r0, r0 + n, 1, loc), nd - 1, 0, c, 1, loc);
  }
  // Matrices stacked as rows, each padded with zero columns to `width`.
  Array pack(const std::vector<Array>& parts, std::int64_t width) const {
    std::vector<Array> padded;
    for (const Array& p : parts) {
      const int nd = p.ndim();
      std::vector<PadWidth> w(static_cast<std::size_t>(nd), PadWidth(0));
      w.back() = PadWidth(0, width - p.shape()[nd - 1]);
      padded.push_back(w.back().after > 0 ? pad(p, w, PadMode::constant, 0, loc) : p);
    }
    return concatenate(padded, padded.front().ndim() - 2, loc);
  }
  // A vector [..., k] as one row [..., 1, k].
  Array as_row(const Array& v) const { return expand_dims(v, v.ndim() - 1, loc); }
  Array zeros_rows(const Array& like, std::int64_t nrows, std::int64_t width) const {
    std::vector<std::int64_t> d(like.shape().begin(), like.shape().end() - 2);
    d.push_back(nrows);
    d.push_back(width);
    return zeros(Shape(std::move(d)), like.dtype(), loc);
  }
};

LinalgKind kind_of(const NodeInfo& n) { return static_cast<LinalgKind>(n.i0); }
std::int64_t rows(const Array& a) { return a.shape()[a.ndim() - 2]; }
std::int64_t cols(const Array& a) { return a.shape()[a.ndim() - 1]; }

[[noreturn]] void no_rule(const NodeInfo& n, const std::string& why) {
  user_error(linalg_name(kind_of(n)), "has no derivative here: " + why, n.loc);
}

// ---- solves ------------------------------------------------------------------

// op(a), triangle masked (what the routine reads of a tangent or cotangent).
Array triangle(const L& l, const Array& a, std::int64_t flags) {
  const bool unit = flags & kUnit;
  return (flags & kLower) ? tril(a, unit ? -1 : 0, l.loc) : triu(a, unit ? 1 : 0, l.loc);
}

Array jvp_solve(const NodeInfo& n, const std::vector<Array>& t) {
  const L l{n.loc};
  const Array& x = n.out;
  Array rhs = t.size() > 1 && t[1].valid() ? t[1] : Array();
  if (t[0].valid()) {
    Array da = t[0];
    if (kind_of(n) == LinalgKind::triangular) {
      da = triangle(l, da, n.i1);
      if (n.i1 & kTransposeA) da = l.mT(da);
    }
    const Array ax = l.mm(da, x);
    rhs = rhs.valid() ? l.sub(rhs, ax) : l.neg(ax);
  }
  if (kind_of(n) == LinalgKind::solve) return linalg::solve(n.in[0], rhs, n.loc);
  return l.tri(n.in[0], rhs, n.i1 & kLower, n.i1 & kTransposeA, n.i1 & kUnit);
}

void vjp_solve(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  const L l{n.loc};
  // b's cotangent: op(a)^-T g; a's: -(that) x^T, for op(a), then for a.
  const Array gb = kind_of(n) == LinalgKind::solve
                       ? linalg::solve(l.mT(n.in[0]), g, n.loc)
                       : l.tri(n.in[0], g, n.i1 & kLower, !(n.i1 & kTransposeA), n.i1 & kUnit);
  if (need.size() > 1 && need[1]) cts[1] = gb;
  if (!need[0]) return;
  Array ga = l.neg(l.mm(gb, l.mT(n.out)));
  if (kind_of(n) == LinalgKind::triangular) {
    if (n.i1 & kTransposeA) ga = l.mT(ga);
    ga = triangle(l, ga, n.i1);
  }
  cts[0] = ga;
}

// ---- decompositions: forward rules ---------------------------------------------

// L' = L phi(L^-1 sym(t) L^-T), phi: the lower triangle with half the diagonal.
Array jvp_cholesky(const NodeInfo& n, const Array& t) {
  const L l{n.loc};
  const Array& c = n.out;
  const Array inner = l.tri(c, l.mT(l.tri(c, l.sym(t), true)), true);  // L^-1 S L^-T (S symmetric)
  const Array phi = l.sub(tril(inner, 0, n.loc), l.mul(l.mul(inner, l.eye_like(rows(c), c.dtype())), 0.5));
  return l.mm(c, phi);
}

// A = P^T L U; with X = L^-1 P t U^-1: L' = L tril(X, -1), U' = triu(X) U.
Array jvp_lu(const NodeInfo& n, const Array& t) {
  const L l{n.loc};
  const Array& a = n.in[0];
  const std::int64_t m = rows(a), c = cols(a);
  if (m != c) no_rule(n, "lu's derivative is defined for square matrices only, not " + a.shape().str());
  const Array lu = l.part(n.out, 2, m, m);
  // The permutation's rows of t: (P t)[i] = t[perm[i]].
  const Array perm = l.part(n.out, 1, 1, m).astype(DType::i64, n.loc);  // [..., 1, m]
  const Array hit = l.o(l.mT(perm)) == l.o(arange(m, DType::i64, n.loc));    // [i, j]: perm[i] == j
  const Array pt = l.mm(hit.astype(a.dtype(), n.loc), t);
  const Array x = l.tri_right(l.tri(lu, pt, true, false, true), lu, false);  // L^-1 (P t) U^-1
  const Array unit_l = l.add(tril(lu, -1, n.loc), l.eye_like(m, a.dtype()));
  const Array dl = l.mm(unit_l, tril(x, -1, n.loc));
  const Array du = l.mm(triu(x, 0, n.loc), triu(lu, 0, n.loc));
  return l.pack({l.zeros_rows(a, 2, m), l.add(dl, du)}, m);
}

// JAX's rule for m >= n, reduced (or square complete).
Array jvp_qr(const NodeInfo& n, const Array& t) {
  const L l{n.loc};
  const Array& a = n.in[0];
  const std::int64_t m = rows(a), c = cols(a);
  if (m < c) no_rule(n, "qr's derivative needs rows >= columns, not " + a.shape().str());
  if ((n.i1 & kComplete) && m != c) no_rule(n, "qr's derivative in complete mode needs a square matrix");
  const Array q = l.part(n.out, 0, m, c), r = l.part(n.out, m, c, c);
  const Array dx_rinv = l.tri_right(t, r, false);
  const Array qt = l.mm(l.mT(q), dx_rinv);
  const Array low = tril(qt, -1, n.loc);
  const Array skew = l.sub(low, l.mT(low));
  const Array dq = l.add(l.mm(q, l.sub(skew, qt)), dx_rinv);
  const Array dr = l.mm(l.sub(qt, skew), r);
  return l.pack({dq, dr}, cols(n.out));
}

// JAX's rule for the thin SVD (real): values only, or all three parts.
Array jvp_svd(const NodeInfo& n, const Array& t) {
  const L l{n.loc};
  const Array& a = n.in[0];
  const std::int64_t m = rows(a), c = cols(a), k = std::min(m, c);
  const bool vectors = n.i1 & kVectors;
  if (vectors && (n.i1 & kFull) && m != c) {
    no_rule(n, "svd's derivative with full_matrices needs a square matrix: use full_matrices = false");
  }
  Array u, s, vt;
  if (vectors) {
    u = l.part(n.out, 0, m, k);
    s = l.part(n.out, m, 1, k);  // [..., 1, k]
    vt = l.part(n.out, m + 1, k, c);
  } else {
    const linalg::SVD f = linalg::svd(a, false, n.loc);
    u = f.u;
    s = l.as_row(f.s);
    vt = f.vh;
  }
  const Array v = l.mT(vt);
  const Array ds_mat = l.mm(l.mm(l.mT(u), t), v);
  const Array ds = l.mul(ds_mat, l.eye_like(k, a.dtype()));  // diag(dS) on the diagonal
  const Array ds_row = sum(ds, Axes(ds.ndim() - 2), true, n.loc);     // [..., 1, k]
  if (!vectors) {
    std::vector<std::int64_t> d(a.shape().begin(), a.shape().end() - 2);
    d.push_back(k);
    return reshape(ds_row, Shape(std::move(d)), n.loc);
  }
  const Array eye = l.eye_like(k, a.dtype());
  const Array diffs = l.mul(l.add(s, l.mT(s)), l.sub(s, l.mT(s)));  // (i, j): s_j^2 - s_i^2
  const Array f = l.sub(l.o(1.0) / l.o(l.add(diffs, eye)), eye);
  const Array dss = l.mul(ds_mat, s), sds = l.mul(l.mT(s), ds_mat);
  Array du = l.mm(u, l.mul(f, l.add(dss, l.mT(dss))));
  Array dv = l.mm(v, l.mul(f, l.add(sds, l.mT(sds))));
  if (m > c) {
    const Array dav = l.mm(t, v);
    du = l.add(du, l.o(l.sub(dav, l.mm(u, l.mm(l.mT(u), dav)))) / l.o(s));
  }
  if (c > m) {
    const Array dau = l.mm(l.mT(t), u);
    dv = l.add(dv, l.o(l.sub(dau, l.mm(v, l.mm(vt, dau)))) / l.o(s));
  }
  return l.pack({du, ds_row, l.mT(dv)}, cols(n.out));
}

// w' = diag(V^T S V), V' = V (F o V^T S V), F_ij = 1 / (w_j - w_i) off the
// diagonal, S = sym(t).
Array jvp_eigh(const NodeInfo& n, const Array& t) {
  const L l{n.loc};
  const Array& a = n.in[0];
  const std::int64_t k = rows(a);
  const bool vectors = n.i1 & kVectors;
  Array w, v;
  if (vectors) {
    w = l.part(n.out, 0, 1, k);  // [..., 1, k]
    v = l.part(n.out, 1, k, k);
  } else {
    const linalg::Eigh e = linalg::eigh(a, n.i1 & kUpper, n.loc);
    w = l.as_row(e.eigenvalues);
    v = e.eigenvectors;
  }
  const Array eye = l.eye_like(k, a.dtype());
  const Array vsv = l.mm(l.mm(l.mT(v), l.sym(t)), v);
  const Array dw = sum(l.mul(vsv, eye), Axes(vsv.ndim() - 2), true, n.loc);  // [..., 1, k]
  if (!vectors) {
    std::vector<std::int64_t> d(a.shape().begin(), a.shape().end() - 2);
    d.push_back(k);
    return reshape(dw, Shape(std::move(d)), n.loc);
  }
  const Array f = l.sub(l.o(1.0) / l.o(l.add(eye, l.sub(w, l.mT(w)))), eye);
  return l.pack({dw, l.mm(v, l.mul(f, vsv))}, k);
}

Array jvp_decomposition(const NodeInfo& n, const Array& t) {
  switch (kind_of(n)) {
    case LinalgKind::cholesky: return jvp_cholesky(n, t);
    case LinalgKind::lu: return jvp_lu(n, t);
    case LinalgKind::qr: return jvp_qr(n, t);
    case LinalgKind::svd: return jvp_svd(n, t);
    case LinalgKind::eigh: return jvp_eigh(n, t);
    case LinalgKind::solve:
    case LinalgKind::triangular: break;
  }
  internal_error("linalg rules: a solve reached the decompositions' rule");
}

// ---- the rule --------------------------------------------------------------------

bool is_solve(const NodeInfo& n) {
  return kind_of(n) == LinalgKind::solve || kind_of(n) == LinalgKind::triangular;
}

Array jvp_linalg(const NodeInfo& n, const std::vector<Array>& t) {
  trace::Scope scope;  // the rules' extent reads are the library's (aj::compile)
  if (is_solve(n)) return jvp_solve(n, t);
  return jvp_decomposition(n, t[0]);
}

// The decompositions' forward rule transposed (see the top of this file).
void vjp_linalg(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  trace::Scope scope;
  if (is_solve(n)) return vjp_solve(n, g, need, cts);
  if (!need[0]) return;
  const VectorFn forward = [&n](const std::vector<Array>& t) { return std::vector<Array>{jvp_decomposition(n, t[0])}; };
  auto [outs, pulled] = detail::vjp(forward, {zeros_like(n.in[0], std::nullopt, n.loc)}, {g},
                                    "the linalg derivative", n.loc);
  cts[0] = pulled[0];
}

}  // namespace

namespace linalg_rules {
const Rule linalg{&vjp_linalg, &jvp_linalg};
}  // namespace linalg_rules

}  // namespace aj::autodiff

// The derivative rules: how a cotangent passes backward (vjp) and a tangent
// forward (jvp) through each op of arrayjit/ops.def. See core/autodiff/rules.hpp
// for what every rule keeps; docs/semantics.md ("Differentiation") states the
// choices at kinks (ties of max/min, abs at 0, pow at 0).
#include "core/autodiff/rules.hpp"

#include <string>

#include "arrayjit/autodiff.hpp"
#include "arrayjit/distributed.hpp"
#include "core/api/trace.hpp"
#include "graph/host_call.hpp"
#include "graph/library.hpp"

namespace aj::autodiff {

namespace {

// Sum of the non-empty terms (empty: none).
Array accumulate(const At& at, Array acc, const Array& term) {
  if (!term.valid()) return acc;
  return acc.valid() ? at.add(acc, term) : term;
}

// ---- elementwise ops: local derivatives -------------------------------------
//
// Most elementwise ops are described by dy/dx_i alone; vjp multiplies the
// cotangent by it and jvp sums tangent times it. A derivative is an array, a
// constant, or "divide by this array" (log's 1/x as g / x: one rounding).

struct Partial {
  Array a;             // the derivative, elementwise (or the divisor when recip)
  bool recip = false;  // the derivative is 1 / a
  double c = 0.0;      // when a is empty: this constant (0: no contribution)
};
using PartialsFn = void (*)(const At& at, const NodeInfo& n, const std::vector<bool>& need, Partial* d);

Partial of(Array a) { return {std::move(a), false, 0.0}; }
Partial recip(Array a) { return {std::move(a), true, 0.0}; }
Partial constant(double c) { return {Array(), false, c}; }

Array times(const At& at, const Array& g, const Partial& d) {
  if (d.a.valid()) return d.recip ? at.div(g, d.a) : at.mul(g, d.a);
  if (d.c == 0.0) return Array();
  if (d.c == 1.0) return g;
  if (d.c == -1.0) return at.neg(g);
  return at.mul(g, d.c);
}

template <PartialsFn P>
void vjp_elementwise(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                     std::vector<Array>& cts) {
  const At at{n.loc};
  Partial d[3];
  P(at, n, need, d);
  for (std::size_t i = 0; i < n.in.size(); ++i) {
    if (need[i]) cts[i] = times(at, g, d[i]);
  }
}

template <PartialsFn P>
Array jvp_elementwise(const NodeInfo& n, const std::vector<Array>& t) {
  const At at{n.loc};
  std::vector<bool> need(n.in.size());
  for (std::size_t i = 0; i < t.size(); ++i) need[i] = t[i].valid();
  Partial d[3];
  P(at, n, need, d);
  Array acc;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].valid()) acc = accumulate(at, acc, times(at, t[i], d[i]));
  }
  return acc;
}

#define AJ_PARTIALS(name) \
  void name(const At& at, const NodeInfo& n, const std::vector<bool>& need, Partial* d)

// x = n.in[0], y = n.out (the op's own value: exp, tanh, ... reuse it).
AJ_PARTIALS(d_neg) { (void)at, (void)n, (void)need; d[0] = constant(-1.0); }
// abs: sign(x), so 0 at x = 0 (the subgradient PyTorch and MLX pick).
AJ_PARTIALS(d_abs) { (void)need; d[0] = of(sign(at.o(n.in[0]))); }
AJ_PARTIALS(d_exp) { (void)at, (void)need; d[0] = of(n.out); }
AJ_PARTIALS(d_log) { (void)at, (void)need; d[0] = recip(n.in[0]); }
AJ_PARTIALS(d_log1p) { (void)need; d[0] = recip(at.add(n.in[0], 1.0)); }
AJ_PARTIALS(d_expm1) { (void)need; d[0] = of(at.add(n.out, 1.0)); }
AJ_PARTIALS(d_sin) { (void)need; d[0] = of(cos(at.o(n.in[0]))); }
AJ_PARTIALS(d_cos) { (void)need; d[0] = of(at.neg(sin(at.o(n.in[0])))); }
AJ_PARTIALS(d_tan) { (void)need; d[0] = of(at.add(at.mul(n.out, n.out), 1.0)); }
AJ_PARTIALS(d_tanh) { (void)need; d[0] = of(at.rsub(1.0, at.mul(n.out, n.out))); }
AJ_PARTIALS(d_sigmoid) { (void)need; d[0] = of(at.mul(n.out, at.rsub(1.0, n.out))); }
// sqrt: 1 / (2 sqrt(x)), infinite at 0.
AJ_PARTIALS(d_sqrt) { (void)need; d[0] = recip(at.mul(n.out, 2.0)); }
// rsqrt: -x^(-3/2) / 2 = -y^3 / 2.
AJ_PARTIALS(d_rsqrt) { (void)need; d[0] = of(at.mul(at.mul(at.mul(n.out, n.out), n.out), -0.5)); }

AJ_PARTIALS(d_add) { (void)at, (void)n, (void)need; d[0] = constant(1.0), d[1] = constant(1.0); }
AJ_PARTIALS(d_sub) { (void)at, (void)n, (void)need; d[0] = constant(1.0), d[1] = constant(-1.0); }
AJ_PARTIALS(d_mul) { (void)at, (void)need; d[0] = of(n.in[1]), d[1] = of(n.in[0]); }
// a / b: 1/b and -a/b^2 = -y/b.
AJ_PARTIALS(d_div) {
  d[0] = recip(n.in[1]);
  if (need[1]) d[1] = of(at.neg(at.div(n.out, n.in[1])));
}
// a mod b = a - b floor(a / b) (floor semantics, the sign of b): 1 and
// -floor(a / b), away from the jumps.
AJ_PARTIALS(d_mod) {
  d[0] = constant(1.0);
  if (need[1]) d[1] = of(at.neg(floor(at.o(at.div(n.in[0], n.in[1])))));
}
// a^b: b a^(b-1), taken as 0 where b == 0 (0^-1 would make it NaN at a = 0);
// and a^b log(a), taken as 0 where a == 0 (JAX's choices).
AJ_PARTIALS(d_pow) {
  const Array& a = n.in[0];
  const Array& b = n.in[1];
  if (need[0]) {
    Array pm1 = pow(at.o(a), at.o(at.add(b, -1.0)));
    d[0] = of(at.keep(at.ne(b, 0.0), at.mul(b, pm1)));
  }
  if (need[1]) {
    Array safe = at.select(at.eq(a, 0.0), 1.0, a);
    d[1] = of(at.mul(n.out, log(at.o(safe))));
  }
}
// erf: 2/sqrt(pi) exp(-x^2); erfc = 1 - erf: its negative.
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
Array d_erf_of(const At& at, const Array& x, double sign) {
  return at.mul(exp(at.o(at.neg(at.mul(x, x)))), sign * kTwoOverSqrtPi);
}
AJ_PARTIALS(d_erf) { (void)need; d[0] = of(d_erf_of(at, n.in[0], 1.0)); }
AJ_PARTIALS(d_erfc) { (void)need; d[0] = of(d_erf_of(at, n.in[0], -1.0)); }
// The inverse trigonometric and hyperbolic functions: 1/sqrt(1 - x^2),
// -1/sqrt(1 - x^2), 1/(1 + x^2); cosh, sinh; 1/sqrt(x^2 + 1), 1/sqrt(x^2 - 1),
// 1/(1 - x^2) (infinite at the domain's edges, as the functions' slopes are).
AJ_PARTIALS(d_arcsin) { (void)need; d[0] = recip(sqrt(at.o(at.rsub(1.0, at.mul(n.in[0], n.in[0]))))); }
AJ_PARTIALS(d_arccos) { (void)need; d[0] = of(at.neg(rsqrt(at.o(at.rsub(1.0, at.mul(n.in[0], n.in[0])))))); }
AJ_PARTIALS(d_arctan) { (void)need; d[0] = recip(at.add(at.mul(n.in[0], n.in[0]), 1.0)); }
AJ_PARTIALS(d_sinh) { (void)need; d[0] = of(cosh(at.o(n.in[0]))); }
AJ_PARTIALS(d_cosh) { (void)need; d[0] = of(sinh(at.o(n.in[0]))); }
AJ_PARTIALS(d_arcsinh) { (void)need; d[0] = of(rsqrt(at.o(at.add(at.mul(n.in[0], n.in[0]), 1.0)))); }
AJ_PARTIALS(d_arccosh) { (void)need; d[0] = of(rsqrt(at.o(at.add(at.mul(n.in[0], n.in[0]), -1.0)))); }
AJ_PARTIALS(d_arctanh) { (void)need; d[0] = recip(at.rsub(1.0, at.mul(n.in[0], n.in[0]))); }
// 2^x ln 2; 1/(x ln 2); 1/(x ln 10); cbrt: 1/(3 y^2).
AJ_PARTIALS(d_exp2) { (void)need; d[0] = of(at.mul(n.out, 0.6931471805599453)); }
AJ_PARTIALS(d_log2) { (void)need; d[0] = recip(at.mul(n.in[0], 0.6931471805599453)); }
AJ_PARTIALS(d_log10) { (void)need; d[0] = recip(at.mul(n.in[0], 2.302585092994046)); }
AJ_PARTIALS(d_cbrt) { (void)need; d[0] = recip(at.mul(at.mul(n.out, n.out), 3.0)); }
// arctan2(y, x): x / (x^2 + y^2) and -y / (x^2 + y^2).
AJ_PARTIALS(d_arctan2) {
  const Array r2 = at.add(at.mul(n.in[0], n.in[0]), at.mul(n.in[1], n.in[1]));
  if (need[0]) d[0] = of(at.div(n.in[1], r2));
  if (need[1]) d[1] = of(at.neg(at.div(n.in[0], r2)));
}
// hypot(a, b): a / h and b / h.
AJ_PARTIALS(d_hypot) {
  if (need[0]) d[0] = of(at.div(n.in[0], n.out));
  if (need[1]) d[1] = of(at.div(n.in[1], n.out));
}
// copysign(a, b) = |a| sign(b): sign(a) sign(b) for a (the signs as copysign
// gives them, so +-1 at a = 0), 0 for b.
AJ_PARTIALS(d_copysign) {
  (void)need;
  d[0] = of(at.mul(copysign(at.o(1.0), at.o(n.in[0])), copysign(at.o(1.0), at.o(n.in[1]))));
}
// fmod(a, b) = a - b trunc(a / b): 1 and -trunc(a / b), away from the jumps.
AJ_PARTIALS(d_fmod) {
  d[0] = constant(1.0);
  if (need[1]) d[1] = of(at.neg(trunc(at.o(at.div(n.in[0], n.in[1])))));
}
// The gamma family: lgamma' = digamma, digamma' = trigamma (trigamma's own
// derivative is refused: trigamma_rule below).
AJ_PARTIALS(d_lgamma) { (void)need; d[0] = of(digamma(at.o(n.in[0]))); }
AJ_PARTIALS(d_digamma) { (void)need; d[0] = of(trigamma(at.o(n.in[0]))); }
// erfinv: sqrt(pi)/2 e^(y^2); ndtri: sqrt(2 pi) e^(y^2/2) (inverse functions'
// slopes); log_ndtr: phi(x) / Phi(x) = e^(-x^2/2 - y) / sqrt(2 pi), one exp
// that neither overflows nor underflows where Phi does (x = -40).
constexpr double kSqrt2Pi = 2.50662827463100050242;  // sqrt(2 pi)
AJ_PARTIALS(d_erfinv) { (void)need; d[0] = of(at.mul(exp(at.o(at.mul(n.out, n.out))), 0.88622692545275801365)); }
AJ_PARTIALS(d_ndtri) { (void)need; d[0] = of(at.mul(exp(at.o(at.mul(at.mul(n.out, n.out), 0.5))), kSqrt2Pi)); }
AJ_PARTIALS(d_log_ndtr) {
  (void)need;
  Array e = at.sub(at.mul(at.mul(n.in[0], n.in[0]), -0.5), n.out);
  d[0] = of(at.mul(exp(at.o(e)), 1.0 / kSqrt2Pi));
}
// i0' = i1; i1' = i0 - i1/x, 1/2 at x = 0.
AJ_PARTIALS(d_i0) { (void)need; d[0] = of(i1(at.o(n.in[0]))); }
AJ_PARTIALS(d_i1) {
  (void)need;
  const Array& x = n.in[0];
  d[0] = of(at.select(at.eq(x, 0.0), 0.5, at.sub(i0(at.o(x)), at.div(n.out, x))));
}
// logaddexp(a, b) = y: e^(a - y) and e^(b - y) (2^ for base 2); equal
// operands get 1/2 each (also at +-inf, where a - y is NaN).
void d_logaddexp_of(const At& at, const NodeInfo& n, const std::vector<bool>& need, Partial* d, bool base2) {
  const Array same = at.eq(n.in[0], n.in[1]);
  for (int i = 0; i < 2; ++i) {
    if (!need[static_cast<std::size_t>(i)]) continue;
    Array diff = at.sub(n.in[static_cast<std::size_t>(i)], n.out);
    Array w = base2 ? exp2(at.o(diff)) : exp(at.o(diff));
    d[i] = of(at.select(same, 0.5, w));
  }
}
AJ_PARTIALS(d_logaddexp) { d_logaddexp_of(at, n, need, d, false); }
AJ_PARTIALS(d_logaddexp2) { d_logaddexp_of(at, n, need, d, true); }
#undef AJ_PARTIALS

// trigamma: its derivative (tetragamma) is not implemented; asking for it is
// an error at the op's line rather than a silent zero.
[[noreturn]] void no_tetragamma(const NodeInfo& n) {
  user_error("grad", "the derivative of trigamma (the third derivative of lgamma) is not implemented", n.loc);
}
void vjp_trigamma(const NodeInfo& n, const Array&, const std::vector<bool>&, std::vector<Array>&) { no_tetragamma(n); }
Array jvp_trigamma(const NodeInfo& n, const std::vector<Array>&) { no_tetragamma(n); }

// ---- elementwise ops with their own rules -------------------------------------

// max/min: the gradient goes to the operand that is the result; on a tie
// (a == b) each gets half (JAX's rule). NaN results pass none back.
void vjp_max_min(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                 std::vector<Array>& cts) {
  const At at{n.loc};
  Array ea = at.eq(n.in[0], n.out), eb = at.eq(n.in[1], n.out);
  Array half = at.mul(g, 0.5);
  if (need[0]) cts[0] = at.keep(ea, at.select(eb, half, g));
  if (need[1]) cts[1] = at.keep(eb, at.select(ea, half, g));
}
Array jvp_max_min(const NodeInfo& n, const std::vector<Array>& t) {
  const At at{n.loc};
  Array ea = at.eq(n.in[0], n.out), eb = at.eq(n.in[1], n.out);
  Array acc;
  if (t[0].valid()) acc = accumulate(at, acc, at.keep(ea, at.select(eb, at.mul(t[0], 0.5), t[0])));
  if (t[1].valid()) acc = accumulate(at, acc, at.keep(eb, at.select(ea, at.mul(t[1], 0.5), t[1])));
  return acc;
}

// where(c, a, b): a's part where c holds, b's elsewhere; none to c (bool).
// A select, not a product with a 0/1 mask: an inf or NaN in the branch not
// taken stays out of the result.
void vjp_where(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
               std::vector<Array>& cts) {
  const At at{n.loc};
  if (need[1]) cts[1] = at.keep(n.in[0], g);
  if (need[2]) cts[2] = at.keep(!at.o(n.in[0]), g);
}
Array jvp_where(const NodeInfo& n, const std::vector<Array>& t) {
  const At at{n.loc};
  if (t[1].valid() && t[2].valid()) return at.select(n.in[0], t[1], t[2]);
  if (t[1].valid()) return at.keep(n.in[0], t[1]);
  return at.keep(!at.o(n.in[0]), t[2]);
}

// A cast between float types: the cotangent is cast back. (Casts from
// integers or bool have no input to differentiate; casts to them carry no
// derivative: the walk never asks for one.)
void vjp_cast(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
              std::vector<Array>& cts) {
  if (need[0]) cts[0] = g.astype(n.in[0].dtype(), n.loc);
}
Array jvp_cast(const NodeInfo& n, const std::vector<Array>& t) {
  if (!is_float(n.dtype)) return Array();
  return t[0].astype(n.dtype, n.loc);
}

// ---- reductions ---------------------------------------------------------------

// The input's shape with the reduced axes kept as extent 1.
Shape kept_shape(const Shape& in, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> d = in.dims();
  for (auto ax : axes) d[static_cast<std::size_t>(ax)] = 1;
  return Shape(std::move(d));
}

// A reduced value spread back over the input's shape. Shapes are taken by
// value here and below: a Shape& into the node table dangles once an op is traced.
Array expand(const Array& r, Shape in, const std::vector<std::int64_t>& axes, const Loc& loc) {
  Array k = reshape(r, kept_shape(in, axes), loc);
  return broadcast_to(k, std::move(in), loc);
}

std::vector<int> axes_of(const NodeInfo& n) { return {n.ints.begin(), n.ints.end()}; }

// d reduce(x) / dx for prod, max and min: an array of x's shape. (Sum's is 1.)
//  - prod: the product of the other elements. Zeros are counted, not divided
//    by: no zero -> y / x; exactly one -> the product of the rest at the zero
//    and 0 elsewhere; more -> 0. Divisions see x with zeros replaced by 1, so
//    no branch, taken or not, is inf or NaN (their derivatives neither).
//  - max/min: 1 / (number of elements equal to the result) at those elements
//    (ties share equally, as JAX), 0 elsewhere; a NaN result goes to the NaNs.
Array reduction_weights(const NodeInfo& n) {
  const At at{n.loc};
  const Array& x = n.in[0];
  const Shape in = x.shape();
  const std::vector<int> axes = axes_of(n);
  const DType t = n.dtype;
  if (n.op == Op::Prod) {
    Array zero = at.eq(x, 0.0);
    Array x1 = at.select(zero, 1.0, x);
    Array zeros_b = expand(sum(zero.astype(t, n.loc), axes, true, n.loc), in, n.ints, n.loc);
    Array others_b = expand(prod(x1, axes, true, n.loc), in, n.ints, n.loc);  // product of the non-zeros
    Array none = at.eq(zeros_b, 0.0), one = at.eq(zeros_b, 1.0);
    Array at_the_zero = at.keep(one && at.o(zero), others_b);
    return at.select(none, at.div(others_b, x1), at_the_zero);
  }
  Array yb = expand(n.out, in, n.ints, n.loc);
  Array hit = at.eq(x, yb) || (at.o(x) != at.o(x));
  Array hits = hit.astype(t, n.loc);
  Array count = expand(sum(hits, axes, true, n.loc), in, n.ints, n.loc);
  return at.div(hits, count);
}

void vjp_reduce(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                std::vector<Array>& cts) {
  if (!need[0]) return;
  const Array gb = expand(g, Shape(n.in[0].shape()), n.ints, n.loc);
  cts[0] = n.op == Op::Sum ? gb : At{n.loc}.mul(gb, reduction_weights(n));
}
Array jvp_reduce(const NodeInfo& n, const std::vector<Array>& t) {
  const std::vector<int> axes = axes_of(n);
  if (n.op == Op::Sum) return sum(t[0], axes, false, n.loc);
  return sum(At{n.loc}.mul(t[0], reduction_weights(n)), axes, false, n.loc);
}

// ---- views ----------------------------------------------------------------------

void vjp_reshape(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                 std::vector<Array>& cts) {
  if (need[0]) cts[0] = reshape(g, n.in[0].shape(), n.loc);
}
Array jvp_reshape(const NodeInfo& n, const std::vector<Array>& t) { return reshape(t[0], n.shape, n.loc); }

void vjp_transpose(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                   std::vector<Array>& cts) {
  if (!need[0]) return;
  std::vector<int> inverse(n.ints.size());
  for (std::size_t i = 0; i < n.ints.size(); ++i) inverse[static_cast<std::size_t>(n.ints[i])] = static_cast<int>(i);
  cts[0] = transpose(g, inverse, n.loc);
}
Array jvp_transpose(const NodeInfo& n, const std::vector<Array>& t) {
  return transpose(t[0], std::vector<int>(n.ints.begin(), n.ints.end()), n.loc);
}

void vjp_broadcast(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                   std::vector<Array>& cts) {
  if (need[0]) cts[0] = sum_to_shape(g, Shape(n.in[0].shape()), n.loc);
}
Array jvp_broadcast(const NodeInfo& n, const std::vector<Array>& t) { return broadcast_to(t[0], n.shape, n.loc); }

// A slice's cotangent put back where the slice took its elements from, zeros
// elsewhere: per axis, a negative step is walked forwards (a reversed view),
// a step k > 1 interleaves k-1 zeros after each element, and zeros pad the
// front and the back (concatenations of zero fills).
Array unslice(Array g, const Shape in, const std::vector<std::int64_t>& ints, const Loc& loc) {
  const DType t = g.dtype();
  if (g.size() == 0) return zeros(in, t, loc);
  auto with = [](const Shape& s, int axis, std::int64_t extent) {
    std::vector<std::int64_t> d = s.dims();
    d[static_cast<std::size_t>(axis)] = extent;
    return Shape(std::move(d));
  };
  for (int ax = 0; ax < in.ndim(); ++ax) {
    const std::int64_t n = in[ax], len = g.shape()[ax];
    std::int64_t start = ints[static_cast<std::size_t>(2 * ax)];
    std::int64_t step = ints[static_cast<std::size_t>(2 * ax + 1)];
    if (len == n && step == 1) continue;  // the whole axis
    if (step < 0) {
      g = slice(g, ax, std::nullopt, std::nullopt, -1, loc);
      start += (len - 1) * step;
      step = -step;
    }
    if (step > 1) {
      std::vector<std::int64_t> e = g.shape().dims();
      e.insert(e.begin() + ax + 1, 1);
      Array col = reshape(g, Shape(e), loc);
      e[static_cast<std::size_t>(ax + 1)] = step - 1;
      Array spread = concatenate({col, zeros(Shape(e), t, loc)}, ax + 1, loc);
      g = reshape(spread, with(g.shape(), ax, len * step), loc);
      g = slice(g, ax, 0, (len - 1) * step + 1, 1, loc);
    }
    const std::int64_t after = n - start - ((len - 1) * step + 1);
    std::vector<Array> parts;
    if (start > 0) parts.push_back(zeros(with(g.shape(), ax, start), t, loc));
    parts.push_back(g);
    if (after > 0) parts.push_back(zeros(with(g.shape(), ax, after), t, loc));
    if (parts.size() > 1) g = concatenate(parts, ax, loc);
  }
  return g;
}

void vjp_slice(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
               std::vector<Array>& cts) {
  if (need[0]) cts[0] = unslice(g, Shape(n.in[0].shape()), n.ints, n.loc);
}
// The same slice of the tangent (the node's payload, applied as it is).
Array jvp_slice(const NodeInfo& n, const std::vector<Array>& t) {
  Node s;
  s.op = Op::Slice;
  s.dtype = n.dtype;
  s.shape = n.shape;
  s.ints = n.ints;
  s.inputs = {t[0].node_id()};
  return trace::make(std::move(s), n.loc);
}

// ---- the rest ---------------------------------------------------------------------

// concatenate: each input's part of the cotangent, a slice along the axis.
void vjp_concat(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                std::vector<Array>& cts) {
  const int axis = static_cast<int>(n.i0);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < n.in.size(); ++i) {
    const std::int64_t len = n.in[i].shape()[axis];
    if (need[i]) cts[i] = slice(g, axis, at, at + len, 1, n.loc);
    at += len;
  }
}
Array jvp_concat(const NodeInfo& n, const std::vector<Array>& t) {
  std::vector<Array> parts;
  for (std::size_t i = 0; i < n.in.size(); ++i) {
    parts.push_back(t[i].valid() ? t[i] : zeros(n.in[i].shape(), n.dtype, n.loc));
  }
  return concatenate(parts, static_cast<int>(n.i0), n.loc);
}

// The last two axes swapped: a view, which the host matmul reads in place as
// a transposed operand (no copy).
Array swap_last(const Array& x, const Loc& loc) {
  const int nd = x.ndim();
  std::vector<int> perm(static_cast<std::size_t>(nd));
  for (int i = 0; i < nd; ++i) perm[static_cast<std::size_t>(i)] = i;
  std::swap(perm[static_cast<std::size_t>(nd - 2)], perm[static_cast<std::size_t>(nd - 1)]);
  return transpose(x, perm, loc);
}

// a @ b over equal batch axes (the node's inputs are broadcast already; the
// Broadcast views' own rule sums the batch back): g @ b^T and a^T @ g.
void vjp_matmul(const NodeInfo& n, const Array& g, const std::vector<bool>& need,
                std::vector<Array>& cts) {
  if (need[0]) cts[0] = matmul(g, swap_last(n.in[1], n.loc), n.loc);
  if (need[1]) cts[1] = matmul(swap_last(n.in[0], n.loc), g, n.loc);
}
Array jvp_matmul(const NodeInfo& n, const std::vector<Array>& t) {
  const At at{n.loc};
  Array acc;
  if (t[0].valid()) acc = matmul(t[0], n.in[1], n.loc);
  if (t[1].valid()) acc = accumulate(at, acc, matmul(n.in[0], t[1], n.loc));
  return acc;
}

template <PartialsFn P>
constexpr Rule elementwise{&vjp_elementwise<P>, &jvp_elementwise<P>};

}  // namespace

// A host callback's derivative is what its vjp callback says (a custom_vjp
// around the node, core/autodiff/host_callback.cpp): a walk that reaches the
// node itself has none to give.
[[noreturn]] void no_host_call_derivative(const NodeInfo& n) {
  const std::shared_ptr<const HostCallFn> f = find_host_call(n.i0);
  user_error("grad", "host_callback '" + (f ? f->name : std::string("?")) +
                         "' has no derivative: give it a vjp callback (aj::HostCallback(fn, vjp) or "
                         "host_callback(fn, vjp, ...)), or stop_gradient its inputs",
             n.loc);
}
const Rule host_call{[](const NodeInfo& n, const Array&, const std::vector<bool>&, std::vector<Array>&) {
                       no_host_call_derivative(n);
                     },
                     [](const NodeInfo& n, const std::vector<Array>&) -> Array { no_host_call_derivative(n); }};

// Collectives are linear in their operand (sum and mean reductions, data
// movement): the transpose of each is another collective over the same
// group, so every rank's backward pass runs the same exchanges in the same
// order (arrayjit/distributed.hpp).
namespace collective_rules {
using distributed::Group;
using distributed::ReduceOp;
// The mark of an alias ordered after an exchange whose values it does not
// read (trace::marked_alias; a Reshape with a mark stays in the graph).
constexpr std::int64_t kAfterExchangeMark = -4;

[[noreturn]] void none(const NodeInfo& n, const char* why) {
  user_error("grad", std::string(collective_name(static_cast<CollectiveKind>(n.i0))) + " has no derivative" + why, n.loc);
}

// Only the linear collectives have derivatives: sum reductions (a mean node
// exchanges the sum too: its scaling is a multiply node of its own) and data
// movement.
void check_linear(const NodeInfo& n) {
  const auto kind = static_cast<CollectiveKind>(n.i0);
  const auto red = static_cast<ReduceKind>(n.i1);
  if (kind == CollectiveKind::send || kind == CollectiveKind::recv) none(n, " (send and recv are not differentiated)");
  if ((kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter) && red != ReduceKind::sum &&
      red != ReduceKind::mean) {
    none(n, " for max, min or prod");
  }
}

// The node's own collective over x: forward mode pushes tangents through it.
Array apply(const NodeInfo& n, const Array& x) {
  check_linear(n);
  const auto kind = static_cast<CollectiveKind>(n.i0);
  const Group group = Group::from_id(n.ints.at(0));
  switch (kind) {
    case CollectiveKind::all_reduce: return distributed::all_reduce(x, ReduceOp::sum, group, n.loc);
    case CollectiveKind::all_gather: return distributed::all_gather(x, group, n.loc);
    case CollectiveKind::reduce_scatter: return distributed::reduce_scatter(x, ReduceOp::sum, group, n.loc);
    case CollectiveKind::broadcast: return distributed::broadcast(x, static_cast<int>(n.ints.at(1)), group, n.loc);
    case CollectiveKind::send:
    case CollectiveKind::recv: break;
  }
  internal_error("autodiff: an unknown collective");
}

// Reverse mode: the transpose, another collective over the same group.
Array transpose(const NodeInfo& n, const Array& g) {
  check_linear(n);
  const auto kind = static_cast<CollectiveKind>(n.i0);
  const Group group = Group::from_id(n.ints.at(0));
  switch (kind) {
    case CollectiveKind::all_reduce: return apply(n, g);  // sum is its own transpose
    case CollectiveKind::all_gather: {
      Array r = distributed::reduce_scatter(g, ReduceOp::sum, group, n.loc);
      return n.in[0].ndim() == 0 ? r.reshape(Shape{}, n.loc) : r;
    }
    case CollectiveKind::reduce_scatter: return distributed::all_gather(g, group, n.loc);
    case CollectiveKind::broadcast: {
      // Every rank runs the exchange, though only the root keeps its values:
      // the others' zeros are ordered after it (Node::after), else nothing
      // would read it there, it would never run, and the root would wait.
      Array total = distributed::all_reduce(g, ReduceOp::sum, group, n.loc);
      if (group.rank() == n.ints.at(1)) return total;
      trace::Scope scope;
      const Array zeros = zeros_like(total, std::nullopt, n.loc);
      return trace::marked_alias(trace::local(zeros, "grad", n.loc), kAfterExchangeMark, n.loc, total.node_id());
    }
    case CollectiveKind::send:
    case CollectiveKind::recv: none(n, " (send and recv are not differentiated)");
  }
  internal_error("autodiff: an unknown collective");
}

const Rule collective{[](const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
                        if (!need.empty() && need[0]) cts[0] = transpose(n, g);
                      },
                      [](const NodeInfo& n, const std::vector<Array>& t) -> Array { return apply(n, t[0]); }};
}  // namespace collective_rules

const Rule* rule_for(Op op) {
  static constexpr Rule neg = elementwise<d_neg>, abs = elementwise<d_abs>, exp = elementwise<d_exp>,
                        log = elementwise<d_log>, log1p = elementwise<d_log1p>,
                        expm1 = elementwise<d_expm1>, sin = elementwise<d_sin>,
                        cos = elementwise<d_cos>, tan = elementwise<d_tan>,
                        tanh = elementwise<d_tanh>, sigmoid = elementwise<d_sigmoid>,
                        sqrt = elementwise<d_sqrt>, rsqrt = elementwise<d_rsqrt>,
                        add = elementwise<d_add>, sub = elementwise<d_sub>,
                        mul = elementwise<d_mul>, div = elementwise<d_div>,
                        mod = elementwise<d_mod>, pow = elementwise<d_pow>,
                        erf = elementwise<d_erf>, erfc = elementwise<d_erfc>,
                        arcsin = elementwise<d_arcsin>, arccos = elementwise<d_arccos>,
                        arctan = elementwise<d_arctan>, sinh = elementwise<d_sinh>, cosh = elementwise<d_cosh>,
                        arcsinh = elementwise<d_arcsinh>, arccosh = elementwise<d_arccosh>,
                        arctanh = elementwise<d_arctanh>, exp2 = elementwise<d_exp2>,
                        log2 = elementwise<d_log2>, log10 = elementwise<d_log10>, cbrt = elementwise<d_cbrt>,
                        arctan2 = elementwise<d_arctan2>, hypot = elementwise<d_hypot>,
                        copysign = elementwise<d_copysign>, fmod = elementwise<d_fmod>,
                        lgamma = elementwise<d_lgamma>, digamma = elementwise<d_digamma>,
                        erfinv = elementwise<d_erfinv>, ndtri = elementwise<d_ndtri>,
                        log_ndtr = elementwise<d_log_ndtr>, i0 = elementwise<d_i0>, i1 = elementwise<d_i1>,
                        logaddexp = elementwise<d_logaddexp>, logaddexp2 = elementwise<d_logaddexp2>;
  static constexpr Rule max_min{&vjp_max_min, &jvp_max_min}, where{&vjp_where, &jvp_where},
      cast{&vjp_cast, &jvp_cast}, reduce{&vjp_reduce, &jvp_reduce},
      reshape{&vjp_reshape, &jvp_reshape}, transpose{&vjp_transpose, &jvp_transpose},
      broadcast{&vjp_broadcast, &jvp_broadcast}, slice{&vjp_slice, &jvp_slice},
      concat{&vjp_concat, &jvp_concat}, matmul{&vjp_matmul, &jvp_matmul},
      trigamma{&vjp_trigamma, &jvp_trigamma};
  switch (op) {
    // Non-differentiable: no inputs, ...
    case Op::Input:
    case Op::Constant:
    case Op::Iota:
    case Op::Linspace:
    case Op::Eye:
    case Op::RandUniform:
    case Op::RandNormal:
    case Op::RandBits:
    case Op::RandomBits:
    case Op::BitNot:
    case Op::BitAnd:
    case Op::BitOr:
    case Op::BitXor:
    case Op::LeftShift:
    case Op::RightShift:
    case Op::Gcd:
    case Op::Lcm:
    // ... bool or integer results, ...
    case Op::Not:
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::And:
    case Op::Or:
    case Op::All:
    case Op::Any:
    case Op::ArgMax:
    case Op::ArgMin:
    case Op::ArgSort:
    case Op::ArgTopK:
    // ... piecewise constant: derivative 0.
    case Op::Sign:
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc:
    case Op::Nextafter:  // not differentiable (as in PyTorch and JAX): taken as 0
      return nullptr;

    case Op::Neg: return &neg;
    case Op::Abs: return &abs;
    case Op::Exp: return &exp;
    case Op::Log: return &log;
    case Op::Log1p: return &log1p;
    case Op::Expm1: return &expm1;
    case Op::Sin: return &sin;
    case Op::Cos: return &cos;
    case Op::Tan: return &tan;
    case Op::Tanh: return &tanh;
    case Op::Sigmoid: return &sigmoid;
    case Op::Sqrt: return &sqrt;
    case Op::Rsqrt: return &rsqrt;
    case Op::Cast: return &cast;
    case Op::Add: return &add;
    case Op::Sub: return &sub;
    case Op::Mul: return &mul;
    case Op::Div: return &div;
    case Op::Mod: return &mod;
    case Op::Max:
    case Op::Min: return &max_min;
    case Op::Pow: return &pow;
    case Op::Arcsin: return &arcsin;
    case Op::Arccos: return &arccos;
    case Op::Arctan: return &arctan;
    case Op::Sinh: return &sinh;
    case Op::Cosh: return &cosh;
    case Op::Arcsinh: return &arcsinh;
    case Op::Arccosh: return &arccosh;
    case Op::Arctanh: return &arctanh;
    case Op::Exp2: return &exp2;
    case Op::Log2: return &log2;
    case Op::Log10: return &log10;
    case Op::Cbrt: return &cbrt;
    case Op::Arctan2: return &arctan2;
    case Op::Hypot: return &hypot;
    case Op::Copysign: return &copysign;
    case Op::Fmod: return &fmod;
    case Op::Lgamma: return &lgamma;
    case Op::Digamma: return &digamma;
    case Op::Trigamma: return &trigamma;
    case Op::Erfinv: return &erfinv;
    case Op::Ndtri: return &ndtri;
    case Op::LogNdtr: return &log_ndtr;
    case Op::I0: return &i0;
    case Op::I1: return &i1;
    case Op::Logaddexp: return &logaddexp;
    case Op::Logaddexp2: return &logaddexp2;
    case Op::Where: return &where;
    case Op::Sum:
    case Op::Prod:
    case Op::ReduceMax:
    case Op::ReduceMin: return &reduce;
    case Op::Reshape: return &reshape;
    case Op::Transpose: return &transpose;
    case Op::Broadcast: return &broadcast;
    case Op::Slice: return &slice;
    case Op::Concat: return &concat;
    case Op::MatMul: return &matmul;
    case Op::Erf: return &erf;
    case Op::Erfc: return &erfc;
    case Op::CumSum: return &index_rules::cumsum;
    case Op::CumProd: return &index_rules::cumprod;
    case Op::CumMax:
    case Op::CumMin: return &index_rules::cumextreme;
    case Op::LogCumSumExp: return &index_rules::logcumsumexp;
    case Op::Sort:
    case Op::TopK: return &index_rules::sort;
    case Op::Gather: return &index_rules::gather;
    case Op::Pad: return &index_rules::pad;
    case Op::ScatterAdd: return &index_rules::scatter_add;
    case Op::Scatter: return &index_rules::scatter;
    case Op::Linalg: return &linalg_rules::linalg;
    case Op::Conv: return &conv_rules::conv;
    case Op::HostCall: return &host_call;
    case Op::Collective: return &collective_rules::collective;
  }
  internal_error("autodiff: rule_for of an op outside the table");
}

}  // namespace aj::autodiff

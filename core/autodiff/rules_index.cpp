// The derivative rules of the scans, sorting and indexing ops of
// arrayjit/ops.def: cumsum, cumprod, sort, topk, gather, pad, scatter_add,
// scatter. core/autodiff/rules.hpp states what every rule keeps; the choices
// (duplicates, ties, out-of-range indices, zeros of cumprod) are in
// docs/semantics.md, "Differentiation".
//
// Gathers and scatters are each other's transposes, so the rules make graph
// nodes directly (gather_node, scatter_node) with indices they computed
// themselves, always in range: not through take / scatter_add, whose
// AJ_DEBUG check would evaluate indices that depend on the arguments being
// differentiated (refused while f is traced).
#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "arrayjit/autodiff.hpp"
#include "arrayjit/indexing.hpp"
#include "arrayjit/scan_sort.hpp"
#include "core/api/trace.hpp"
#include "core/autodiff/rules.hpp"

namespace aj::autodiff {

namespace {

Operand o(const Array& a, const Loc& loc) { return Operand(a, loc); }

// gather(a, idx) along `axis`: idx has the result's shape, a the same but
// for the axis (arrayjit/ops.def).
Array gather_node(const Array& a, const Array& idx, std::int64_t axis, const Loc& loc) {
  Node n;
  n.op = Op::Gather;
  n.dtype = a.dtype();
  n.shape = idx.shape();
  n.i0 = axis;
  n.inputs = {a.node_id(), idx.node_id()};
  return trace::make(std::move(n), loc);
}

// scatter / scatter_add(a, idx, upd) along `axis`: idx and upd share a shape,
// a's but for the axis.
Array scatter_node(Op op, const Array& a, const Array& idx, const Array& upd, std::int64_t axis, const Loc& loc) {
  Node n;
  n.op = op;
  n.dtype = a.dtype();
  n.shape = a.shape();
  n.i0 = axis;
  n.inputs = {a.node_id(), idx.node_id(), upd.node_id()};
  return trace::make(std::move(n), loc);
}

// A node like the forward one (same op and payload) on other inputs.
Array like(const NodeInfo& n, const std::vector<Array>& inputs) {
  Node m;
  m.op = n.op;
  m.dtype = n.dtype;
  m.shape = n.shape;
  m.i0 = n.i0, m.i1 = n.i1;
  m.ints = n.ints;
  for (const Array& a : inputs) m.inputs.push_back(a.node_id());
  return trace::make(std::move(m), n.loc);
}

Array zeros_of(const Array& a, const Loc& loc) { return zeros(a.shape(), a.dtype(), loc); }
Array or_zeros(const Array& t, const Array& like_this, const Loc& loc) {
  return t.valid() ? t : zeros_of(like_this, loc);
}

// An elementwise function of indices applied before their broadcast, not
// after (take() broadcasts its indices over the array's other axes: the
// function then runs once per index, not once per element read).
template <class F>
Array per_index(const Array& idx, F&& f, const Loc& loc) {
  const Node& v = trace::node(idx);
  if (v.op != Op::Broadcast || v.evaluated()) return f(idx);
  const Array src = Array::from_node(v.inputs[0]);
  return broadcast_to(f(src), idx.shape(), loc);
}

// base/index_rules.hpp with ops: an index of an axis of extent n counted from
// the end when negative, then clamped into [0, n) (i64). For an index in
// [-n, n) it is the position a scatter writes.
Array normalize_index(const Array& idx, std::int64_t extent, const Loc& loc) {
  const Array i = idx.astype(DType::i64, loc);
  const Array wrapped = where(o(i < 0, loc), o(i + extent, loc), o(i, loc));
  return clip(o(wrapped, loc), Operand(std::int64_t{0}, loc), Operand(extent - 1, loc));
}
Array gather_index(const Array& idx, std::int64_t extent, const Loc& loc) {
  return per_index(idx, [&](const Array& i) { return normalize_index(i, extent, loc); }, loc);
}
// Whether a scatter writes an update at all: the index is in [-n, n).
Array scatter_writes(const Array& idx, std::int64_t extent, const Loc& loc) {
  return per_index(idx, [&](const Array& i) { return o(o(i, loc) >= -extent, loc) && o(o(i, loc) < extent, loc); }, loc);
}

// ---- scans ------------------------------------------------------------------------

Array flip(const Array& a, int axis, const Loc& loc) { return slice(a, axis, std::nullopt, std::nullopt, -1, loc); }
// Sum over positions from each one to the end of its line.
Array reverse_cumsum(const Array& a, int axis, const Loc& loc) {
  return flip(cumsum(flip(a, axis, loc), axis, a.dtype(), loc), axis, loc);
}

// cumsum: y_i = sum_{j <= i} x_j.
void vjp_cumsum(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (need[0] && g.size() > 0) cts[0] = reverse_cumsum(g, static_cast<int>(n.ints[0]), n.loc);
}
Array jvp_cumsum(const NodeInfo& n, const std::vector<Array>& t) {
  return cumsum(t[0], static_cast<int>(n.ints[0]), n.dtype, n.loc);
}

// cumprod: y_i = x_i y_{i-1}, so with P_k = y_{k-1} (the exclusive product,
// 1 at the start of a line)
//   jvp:  T_i = x_i T_{i-1} + t_i P_i                 (a forward recurrence)
//   vjp:  ct_k = P_k S_k,  S_k = g_k + x_{k+1} S_{k+1}  (a backward one).
// Both are first-order linear recurrences, solved by doubling (linear_scan):
// products and sums only, never a division by x, so exact where x has zeros
// and at every order (JAX differentiates its associative scan the same way).
// ceil(log2 n) elementwise steps along the axis.

// X moved `by` places forward along the axis, `fill` in the places vacated.
Array shift(const Array& x, int axis, std::int64_t by, double fill, const Loc& loc) {
  const std::int64_t n = x.shape()[axis];
  std::vector<PadWidth> widths(static_cast<std::size_t>(x.ndim()), PadWidth(0));
  widths[static_cast<std::size_t>(axis)] = PadWidth(by, 0);
  return pad(slice(x, axis, 0, n - by, 1, loc), widths, PadMode::constant, fill, loc);
}

// T_i = coef_i T_{i-1} + c_i along the axis, T_{-1} = 0. Doubling: T_i =
// a_i T_{i-d} + b_i holds with d = 1, 2, 4, ... (a, b shifted in as 0 before
// the start of the line).
Array linear_scan(Array a, Array b, int axis, const Loc& loc) {
  const std::int64_t n = b.shape()[axis];
  for (std::int64_t d = 1; d < n; d *= 2) {
    b = o(b, loc) + o(o(a, loc) * o(shift(b, axis, d, 0.0, loc), loc), loc);
    if (2 * d < n) a = o(a, loc) * o(shift(a, axis, d, 0.0, loc), loc);
  }
  return b;
}

void vjp_cumprod(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (!need[0] || g.size() == 0) return;
  const Loc& loc = n.loc;
  const int ax = static_cast<int>(n.ints[0]);
  const Array before = shift(n.out, ax, 1, 1.0, loc);
  // S backwards is a forward recurrence on the flipped line, with coefficient
  // x_{k+1} at k: the flipped x moved one place.
  const Array s = linear_scan(shift(flip(n.in[0], ax, loc), ax, 1, 0.0, loc), flip(g, ax, loc), ax, loc);
  cts[0] = o(before, loc) * o(flip(s, ax, loc), loc);
}
Array jvp_cumprod(const NodeInfo& n, const std::vector<Array>& t) {
  if (n.out.size() == 0) return Array();
  const Loc& loc = n.loc;
  const int ax = static_cast<int>(n.ints[0]);
  const Array before = shift(n.out, ax, 1, 1.0, loc);
  return linear_scan(n.in[0], o(t[0], loc) * o(before, loc), ax, loc);
}

// cummax, cummin: y_i = x_{s(i)}, s(i) the position its running extreme was
// taken from: the last k <= i where x_k == y_k (a new extreme, or a tie with
// it, or NaN, which stays). Ties go to the later position (PyTorch's
// cummax indices); the cotangent of y_i goes to x_{s(i)}.
Array extreme_source(const NodeInfo& n, const Loc& loc) {
  const int ax = static_cast<int>(n.ints[0]);
  const Array& x = n.in[0];
  std::vector<std::int64_t> dims(static_cast<std::size_t>(x.ndim()), 1);
  dims[static_cast<std::size_t>(ax)] = x.shape()[ax];
  const Array pos = broadcast_to(reshape(arange(x.shape()[ax], DType::i64, loc), Shape(dims), loc), x.shape(), loc);
  const Array taken = o(o(x, loc) == o(n.out, loc), loc) || o(isnan(o(x, loc)), loc);
  return cummax(where(o(taken, loc), o(pos, loc), Operand(std::int64_t{0}, loc)), ax, loc);
}
void vjp_cumextreme(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (!need[0] || g.size() == 0) return;
  cts[0] = scatter_node(Op::ScatterAdd, zeros_of(n.in[0], n.loc), extreme_source(n, n.loc), g, n.ints[0], n.loc);
}
Array jvp_cumextreme(const NodeInfo& n, const std::vector<Array>& t) {
  if (n.out.size() == 0) return Array();
  return gather_node(t[0], extreme_source(n, n.loc), n.ints[0], n.loc);
}

// logcumsumexp: dy_i/dx_j = exp(x_j - y_i) for j <= i. Sums of such terms
// weighted by g are themselves log-sum-exps when g's signs are split (as
// PyTorch does): with L(z) = log(max(z, 0)),
//   vjp:  ct_j = exp(x_j + R(L(g) - y)_j) - exp(x_j + R(L(-g) - y)_j),
//         R the logcumsumexp from the end of the line;
//   jvp:  T_i = exp(C(x + L(t))_i - y_i) - exp(C(x + L(-t))_i - y_i),
//         C the logcumsumexp itself.
// No exponential is taken of anything that can overflow. A line whose
// running value is still -inf (every x so far -inf) passes nothing back.
Array log_positive(const Array& z, const Loc& loc) {
  return log(where(o(o(z, loc) > Operand(0.0, loc), loc), o(z, loc), Operand(0.0, loc)));
}
void vjp_logcumsumexp(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (!need[0] || g.size() == 0) return;
  const Loc& loc = n.loc;
  const int ax = static_cast<int>(n.ints[0]);
  const Array& x = n.in[0];
  const Array& y = n.out;
  const Array stuck = o(y, loc) == Operand(-std::numeric_limits<double>::infinity(), loc);
  auto part = [&](const Array& lg) {
    const Array z = where(o(stuck, loc), Operand(-std::numeric_limits<double>::infinity(), loc), o(lg, loc) - o(y, loc));
    const Array r = flip(logcumsumexp(flip(z, ax, loc), ax, loc), ax, loc);
    return exp(o(x, loc) + o(r, loc));
  };
  cts[0] = o(part(log_positive(g, loc)), loc) - o(part(log_positive(-o(g, loc), loc)), loc);
}
Array jvp_logcumsumexp(const NodeInfo& n, const std::vector<Array>& t) {
  if (n.out.size() == 0) return Array();
  const Loc& loc = n.loc;
  const int ax = static_cast<int>(n.ints[0]);
  auto part = [&](const Array& lt) {
    return exp(o(logcumsumexp(o(n.in[0], loc) + o(lt, loc), ax, loc), loc) - o(n.out, loc));
  };
  const Array r = o(part(log_positive(t[0], loc)), loc) - o(part(log_positive(-o(t[0], loc), loc)), loc);
  // Where y is -inf so is every term: 0, not NaN.
  return where(o(o(n.out, loc) == Operand(-std::numeric_limits<double>::infinity(), loc), loc), Operand(0.0, loc), o(r, loc));
}

// ---- sorting ------------------------------------------------------------------------

// sort and topk pick elements: the result is x taken at the positions argsort
// (argtopk) gives, made with the forward node's payload so that CSE shares
// it with an argsort / topk the user traced, and with the other mode's.
Array sort_positions(const NodeInfo& n) {
  Node m;
  m.op = n.op == Op::Sort ? Op::ArgSort : Op::ArgTopK;
  m.dtype = DType::i64;
  m.shape = n.shape;
  m.i0 = n.i0, m.i1 = n.i1;
  m.inputs = {n.in[0].node_id()};
  return trace::make(std::move(m), n.loc);
}
// Each element's cotangent goes back to the position it was taken from (a
// permutation for sort: no two meet; topk's untaken elements get 0).
void vjp_sort(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (!need[0] || g.size() == 0) return;
  cts[0] = scatter_node(Op::ScatterAdd, zeros_of(n.in[0], n.loc), sort_positions(n), g, n.i0, n.loc);
}
Array jvp_sort(const NodeInfo& n, const std::vector<Array>& t) {
  if (n.out.size() == 0) return Array();
  return gather_node(t[0], sort_positions(n), n.i0, n.loc);
}

// ---- gather ------------------------------------------------------------------------

// out[p] = a[p with p[axis] := clamp(idx[p])]: each element of g added back at
// the (clamped) position it was read from; duplicates accumulate.
//
// When `a` is a Broadcast view (take() with several index axes reads a table
// broadcast over them), the sum the broadcast's own rule would do is done by
// the scatter instead: the broadcast axes are folded into the gathered axis,
// and the cotangent goes to the broadcast's source (NodeInfo::past), so no
// array of the broadcast's size (an embedding table times the sequence
// length) is ever made.
bool scatter_into_broadcast_source(const NodeInfo& n, const Array& g, const Array& idx) {  // idx: the node's own
  const Node& view = trace::node(n.in[0]);
  if (!n.past || view.op != Op::Broadcast || view.evaluated()) return false;
  const Array src = Array::from_node(view.inputs[0]);
  const Shape a = n.in[0].shape(), s = src.shape(), out = g.shape();
  const int r = a.ndim(), lead = r - s.ndim(), ax = static_cast<int>(n.i0);
  auto src_extent = [&](int d) { return d < lead ? std::int64_t{1} : s[d - lead]; };
  if (src_extent(ax) != a[ax]) return false;  // broadcast along the gathered axis itself
  std::vector<int> spread, perm;
  for (int d = 0; d < r; ++d) {
    if (d != ax && src_extent(d) != a[d]) spread.push_back(d);
  }
  if (spread.empty()) return false;
  // g and idx with the spread axes moved right after the gathered axis and
  // merged into it; the target has the kept axes only (src's elements).
  std::vector<std::int64_t> merged, target;
  std::int64_t new_axis = 0;
  for (int d = 0; d < r; ++d) {
    if (std::find(spread.begin(), spread.end(), d) != spread.end()) continue;
    perm.push_back(d);
    target.push_back(a[d]);
    merged.push_back(out[d]);
    if (d == ax) {
      new_axis = static_cast<std::int64_t>(merged.size()) - 1;
      for (int sd : spread) perm.push_back(sd), merged.back() *= out[sd];
    }
  }
  std::vector<int> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  auto fold = [&](const Array& x) {
    return reshape(perm == identity ? x : transpose(x, perm, n.loc), Shape(merged), n.loc);
  };
  // (normalized at every element, before the fold: the fold's copy of a
  // broadcast and the arithmetic are then one kernel)
  const Array at = fold(normalize_index(idx, a[ax], n.loc));
  const Array sum = scatter_node(Op::ScatterAdd, zeros(Shape(target), n.dtype, n.loc), at, fold(g), new_axis, n.loc);
  n.past->push_back({src, reshape(sum, s, n.loc)});
  return true;
}

void vjp_gather(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (!need[0] || g.size() == 0) return;  // (need[1]: never, indices are integers)
  const Array& a = n.in[0];
  if (scatter_into_broadcast_source(n, g, n.in[1])) return;
  const Array idx = gather_index(n.in[1], a.shape()[static_cast<int>(n.i0)], n.loc);
  cts[0] = scatter_node(Op::ScatterAdd, zeros_of(a, n.loc), idx, g, n.i0, n.loc);
}
// The same gather (the node's payload and indices) of the tangent.
Array jvp_gather(const NodeInfo& n, const std::vector<Array>& t) { return like(n, {t[0], n.in[1]}); }

// ---- pad ------------------------------------------------------------------------------

// out = x placed at start + step * i, fill's elements elsewhere: x's cotangent
// is that strided slice of g; fill's is g with zeros where x was placed.
void vjp_pad(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  const Array& x = n.in[0];
  if (need[0]) {
    Node s;
    s.op = Op::Slice;
    s.dtype = n.dtype;
    s.shape = x.shape();
    s.ints = n.ints;
    s.inputs = {g.node_id()};
    cts[0] = trace::make(std::move(s), n.loc);
  }
  if (need[1]) cts[1] = like(n, {zeros_of(x, n.loc), g});
}
Array jvp_pad(const NodeInfo& n, const std::vector<Array>& t) {
  return like(n, {or_zeros(t[0], n.in[0], n.loc), or_zeros(t[1], n.in[1], n.loc)});
}

// ---- scatters ---------------------------------------------------------------------------

// scatter_add(a, idx, upd): a's cotangent is g; an update's is g at the
// position it was added to, 0 for one dropped (index outside [-n, n)).
Array at_written(const NodeInfo& n, const Array& g, const Array& idx, std::int64_t extent, const Array& keep) {
  return where(o(keep, n.loc), o(gather_node(g, gather_index(idx, extent, n.loc), n.i0, n.loc), n.loc), 0.0);
}

void vjp_scatter_add(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  if (need[0]) cts[0] = g;
  const Array& idx = n.in[1];
  const std::int64_t extent = n.shape[static_cast<int>(n.i0)];
  if (!need[2] || idx.size() == 0 || extent == 0) return;  // no update written
  cts[2] = at_written(n, g, idx, extent, scatter_writes(idx, extent, n.loc));
}

// scatter(a, idx, upd): the last update of a position (in row-major order)
// sets it. a's cotangent is g with zeros at every position written; an
// update's is g at its position if it is the one that won, else 0. The
// winners: the updates' row-major numbers scattered the same way, read back.
void vjp_scatter(const NodeInfo& n, const Array& g, const std::vector<bool>& need, std::vector<Array>& cts) {
  const Array& idx = n.in[1];
  const Array& upd = n.in[2];
  if (need[0]) cts[0] = scatter_node(Op::Scatter, g, idx, zeros_of(upd, n.loc), n.i0, n.loc);
  const std::int64_t extent = n.shape[static_cast<int>(n.i0)];
  if (!need[2] || idx.size() == 0 || extent == 0) return;
  const Loc& loc = n.loc;
  const Array number = reshape(arange(upd.size(), DType::i64, loc), upd.shape(), loc);
  const Array nobody = full(n.shape, std::int64_t{-1}, DType::i64, loc);
  const Array winner = scatter_node(Op::Scatter, nobody, idx, number, n.i0, loc);
  const Array won = gather_node(winner, gather_index(idx, extent, loc), n.i0, loc);
  const Array keep = o(scatter_writes(idx, extent, loc), loc) && o(o(won, loc) == o(number, loc), loc);
  cts[2] = at_written(n, g, idx, extent, keep);
}

// Both scatters are linear in (a, upd) for fixed indices: the same scatter of
// the tangents.
Array jvp_scatter(const NodeInfo& n, const std::vector<Array>& t) {
  return like(n, {or_zeros(t[0], n.in[0], n.loc), n.in[1], or_zeros(t[2], n.in[2], n.loc)});
}

}  // namespace

namespace index_rules {
const Rule cumsum{&vjp_cumsum, &jvp_cumsum};
const Rule cumprod{&vjp_cumprod, &jvp_cumprod};
const Rule cumextreme{&vjp_cumextreme, &jvp_cumextreme};  // cummax and cummin
const Rule logcumsumexp{&vjp_logcumsumexp, &jvp_logcumsumexp};
const Rule sort{&vjp_sort, &jvp_sort};  // sort and topk
const Rule gather{&vjp_gather, &jvp_gather};
const Rule pad{&vjp_pad, &jvp_pad};
const Rule scatter_add{&vjp_scatter_add, &jvp_scatter};
const Rule scatter{&vjp_scatter, &jvp_scatter};
}  // namespace index_rules

}  // namespace aj::autodiff

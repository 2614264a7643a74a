#include "opt/passes/simplify.hpp"

#include <bit>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "base/semantics.hpp"

namespace aj {

namespace {

using namespace aj::sem;

// The value of a fill, encoded as a Constant node holds it.
struct Fill {
  DType t;
  std::int64_t i = 0;
  double f = 0.0;
};

template <class T>
T get(const Fill& v) {
  if constexpr (std::is_same_v<T, bool>) return is_float(v.t) ? v.f != 0.0 : v.i != 0;
  else if constexpr (is_fp<T> || is_half_type<T>) return T(v.f);  // a half fill rounds here
  else return static_cast<T>(v.i);
}

template <class T>
Fill put(DType t, T x) {
  if constexpr (is_half_type<T>) return {t, 0, static_cast<double>(x)};
  else if (is_float(t)) return {t, 0, static_cast<double>(x)};
  else return {t, static_cast<std::int64_t>(x), 0.0};
}

std::optional<Fill> fill_of(NodeId id) {
  const Node& n = graph()[id];
  if (n.evaluated()) return std::nullopt;
  if (n.op == Op::Constant) return Fill{n.dtype, n.i0, n.f0};
  if (n.op == Op::Broadcast) {
    const Node& c = graph()[n.inputs[0]];
    if (c.op == Op::Constant && !c.evaluated()) return Fill{c.dtype, c.i0, c.f0};
  }
  return std::nullopt;
}

void make_fill(NodeId id, const Fill& v) {
  Graph& g = graph();
  const Node n = g[id];  // a copy: add() below may move the node table
  Node like;
  like.dtype = n.dtype;
  like.shape = n.shape;
  if (n.shape.ndim() == 0) {
    like.op = Op::Constant;
    like.i0 = v.i;
    like.f0 = v.f;
  } else {
    Node c;
    c.op = Op::Constant;
    c.dtype = n.dtype;
    c.i0 = v.i;
    c.f0 = v.f;
    c.loc = n.loc;
    like.op = Op::Broadcast;
    like.inputs = {g.add(std::move(c))};
  }
  g.rewrite(id, like);
}

// Node `id` becomes a view of `target` that changes nothing.
void make_alias(NodeId id, NodeId target) {
  Node like;
  like.op = Op::Reshape;
  like.dtype = graph()[id].dtype;
  like.shape = graph()[id].shape;
  like.inputs = {target};
  graph().rewrite(id, like);
}

bool is_value(const std::optional<Fill>& v, double x) {
  if (!v) return false;
  if (is_float(v->t)) return v->f == x && std::signbit(v->f) == std::signbit(x);
  return v->i == static_cast<std::int64_t>(x);
}

// i32 -> i64 -> T equals i32 -> T when the middle type holds every value
// (i32 -> f64; no float holds every i64, though NumPy promotes i64 to f64).
bool lossless(DType from, DType to) { return casts_exactly(from, to); }

template <class T>
std::optional<T> fold_reduce(Op op, T v, std::int64_t c) {
  T acc = reduce_identity<T>(op);
  if (c == 0) return acc;
  switch (op) {
    case Op::ReduceMax:
    case Op::ReduceMin:
    case Op::All:
    case Op::Any: return reduce_combine(op, acc, v);  // idempotent combiners
    case Op::Sum:
    case Op::Prod:
      if constexpr (std::is_same_v<T, bool> || is_half_type<T>) {
        return std::nullopt;  // (halves: a sum accumulates in f32, not folded)
      } else if constexpr (std::is_integral_v<T>) {
        if (op == Op::Sum) return wrap_mul(v, static_cast<T>(c));  // modular arithmetic
        T r = 1, b = v;
        for (auto e = static_cast<std::uint64_t>(c); e; e >>= 1) {
          if (e & 1) r = wrap_mul(r, b);
          b = wrap_mul(b, b);
        }
        return r;
      } else {
        constexpr double exact = std::is_same_v<T, float> ? 0x1p24 : 0x1p53;
        if (op == Op::Sum) {
          if (v == 0) return T(0);  // +0 + -0 is +0
          if (!std::isfinite(v)) return v;
          if (std::floor(v) == v && std::fabs(static_cast<double>(v)) * static_cast<double>(c) <= exact) {
            return static_cast<T>(v * static_cast<T>(c));
          }
        } else if (v == 1) {
          return T(1);
        }
        if (c > (1 << 22)) return std::nullopt;
        for (std::int64_t k = 0; k < c; ++k) acc = reduce_combine(op, acc, v);
        return acc;
      }
    case Op::ArgMax:
    case Op::ArgMin: return std::nullopt;  // never folded
    AJ_CASES_OUTSIDE(Reduce) break;
  }
  return std::nullopt;
}

// What fold_elementwise reads of the node (a copy: make_fill's add() may move
// the node table), without copying the whole node on every call.
struct Elementwise {
  Op op;
  DType dtype;
  std::size_t arity;
  NodeId in[3];
};

void fold_elementwise(NodeId id) {
  Graph& g = graph();
  if (g[id].inputs.empty() || g[id].inputs.size() > 3) return;
  Elementwise n{g[id].op, g[id].dtype, g[id].inputs.size(), {kNoNode, kNoNode, kNoNode}};
  for (std::size_t k = 0; k < n.arity; ++k) n.in[k] = g[id].inputs[k];
  std::optional<Fill> in[3];
  bool all = true;
  for (std::size_t k = 0; k < n.arity; ++k) {
    in[k] = fill_of(n.in[k]);
    all &= in[k].has_value();
  }
  const DType t = g[n.in[n.arity - 1]].dtype;  // operand dtype (Where: the values')
  if (all) {
    Fill r = visit_dtype(t, [&](auto tag) -> Fill {
      using I = decltype(tag);
      return visit_dtype(n.dtype, [&](auto out) -> Fill {
        using O = decltype(out);
        if (n.op == Op::Cast) return put(n.dtype, convert<O>(get<I>(*in[0])));
        if (n.op == Op::Where) return put(n.dtype, convert<O>(get<bool>(*in[0]) ? get<I>(*in[1]) : get<I>(*in[2])));
        if (is_compare(n.op)) return put(n.dtype, compare(n.op, get<I>(*in[0]), get<I>(*in[1])));
        if (n.arity == 2) return put(n.dtype, convert<O>(binary(n.op, get<I>(*in[0]), get<I>(*in[1]))));
        return put(n.dtype, convert<O>(unary(n.op, get<I>(*in[0]))));
      });
    });
    return make_fill(id, r);
  }
  const bool integer = is_integer(n.dtype);
  const bool floating = is_float(n.dtype);
  // The exact identities of docs/optimizer.md; other ops have none.
  if (n.op == Op::Mul) {
    if (is_value(in[1], 1)) return make_alias(id, n.in[0]);
    if (is_value(in[0], 1)) return make_alias(id, n.in[1]);
    return;
  }
  if (n.op == Op::Div) {
    if (is_value(in[1], 1)) return make_alias(id, n.in[0]);
    return;
  }
  if (n.op == Op::Add) {
    if ((integer && is_value(in[1], 0)) || (floating && is_value(in[1], -0.0))) return make_alias(id, n.in[0]);
    if ((integer && is_value(in[0], 0)) || (floating && is_value(in[0], -0.0))) return make_alias(id, n.in[1]);
    return;
  }
  if (n.op == Op::Sub) {
    if ((integer && is_value(in[1], 0)) || (floating && is_value(in[1], 0.0))) return make_alias(id, n.in[0]);
    if (integer && n.in[0] == n.in[1]) return make_fill(id, Fill{n.dtype, 0, 0.0});
    return;
  }
  if (n.op == Op::Neg) {
    const Node& m = g[n.in[0]];
    if (m.op == Op::Neg && !m.evaluated()) return make_alias(id, m.inputs[0]);
    return;
  }
  if (n.op == Op::Cast) {
    const Node& m = g[n.in[0]];
    if (m.op != Op::Cast || m.evaluated()) return;
    NodeId x = m.inputs[0];
    if (!lossless(g[x].dtype, m.dtype)) return;
    if (g[x].dtype == n.dtype) return make_alias(id, x);
    Node like = g[id];
    like.inputs = {x};
    return g.rewrite(id, like);
  }
  if (n.op == Op::Where) {
    if (in[0]) return make_alias(id, get<bool>(*in[0]) ? n.in[1] : n.in[2]);
    return;
  }
}

void fold_view(NodeId id) {
  Graph& g = graph();
  if (g[id].op == Op::Broadcast && g[g[id].inputs[0]].op == Op::Constant) return;  // a fill already
  if (g[id].op == Op::Reshape && g[id].i0 != 0) return;  // autodiff's tracers and stop_gradient stay themselves
  const Node n = g[id];
  const Node& m = g[n.inputs[0]];
  if (auto v = fill_of(n.inputs[0])) return make_fill(id, *v);
  if (m.evaluated() || m.op != n.op) return;
  if (n.op == Op::Reshape) {
    if (m.i0 != 0) return;  // autodiff's tracers and stop_gradient (ops.def) stay in the path
    Node like = n;
    like.inputs = {m.inputs[0]};
    return g.rewrite(id, like);  // an alias when the shapes agree
  }
  if (n.op == Op::Transpose) {
    Node like = n;
    like.inputs = {m.inputs[0]};
    bool identity = true;
    for (std::size_t i = 0; i < n.ints.size(); ++i) {
      like.ints[i] = m.ints[static_cast<std::size_t>(n.ints[i])];
      identity &= like.ints[i] == static_cast<std::int64_t>(i);
    }
    if (identity) return make_alias(id, m.inputs[0]);
    return g.rewrite(id, like);
  }
}

void fold_reduction(NodeId id) {
  Graph& g = graph();
  const Node n = g[id];
  if (n.op == Op::ArgMax || n.op == Op::ArgMin || n.numel() == 0) return;
  auto v = fill_of(n.inputs[0]);
  if (!v) return;
  std::int64_t c = 1;
  for (auto ax : n.ints) c *= g[n.inputs[0]].shape[static_cast<int>(ax)];
  std::optional<Fill> r = visit_dtype(n.dtype, [&](auto tag) -> std::optional<Fill> {
    using T = decltype(tag);
    auto x = fold_reduce<T>(n.op, get<T>(*v), c);
    if (!x) return std::nullopt;
    return put(n.dtype, *x);
  });
  if (r) make_fill(id, *r);
}

// ---- a concatenate of one elementwise expression over adjacent slices ----
//
// concatenate([f(x[0:16]), f(x[16:32]), ...]) is f(x[0:16k]) when every piece
// is the same elementwise expression whose position-dependent leaves are
// slices, along the concatenate's axis, that continue each other (the issue
// 33 case: 4,000 pieces of 16 elements plan as 250 kernels, the whole-array
// expression as one). Leaves that do not depend on the position are equal
// constants (a scalar operand) and broadcasts of one value that is 1 long on
// that axis.

// Larger pieces are left as they are (the match recurses through them).
constexpr std::size_t kMaxPieceNodes = 4096;

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

bool same_payload(const Node& a, const Node& b) {
  return a.op == b.op && a.dtype == b.dtype && a.i0 == b.i0 && a.i1 == b.i1 && same_bits(a.f0, b.f0) &&
         same_bits(a.f1, b.f1) && a.ints == b.ints && a.inputs.size() == b.inputs.size() && a.after == kNoNode &&
         b.after == kNoNode;
}

// same_payload but the slice start along `axis`, which must be delta steps on.
bool slice_continues(const Node& a, const Node& b, int axis, std::int64_t delta) {
  if (a.op != Op::Slice || b.op != Op::Slice || a.dtype != b.dtype || a.inputs != b.inputs || a.after != kNoNode ||
      b.after != kNoNode || a.ints.size() != b.ints.size()) {
    return false;
  }
  const std::size_t at = 2 * static_cast<std::size_t>(axis);
  for (std::size_t k = 0; k < a.ints.size(); ++k) {
    if (k != at && a.ints[k] != b.ints[k]) return false;
  }
  std::int64_t want = 0;
  return !__builtin_mul_overflow(delta, a.ints[at + 1], &want) && !__builtin_add_overflow(want, a.ints[at], &want) &&
         b.ints[at] == want;
}

// Whether a piece is the template piece's expression `delta` positions on:
// node for node the same ops and payloads, slices that continue the
// template's, broadcasts of the same value (or of equal constants).
struct PieceMatch {
  int axis;
  std::int64_t delta;
  const Shape& template_shape;
  const Shape& piece_shape;
  std::unordered_map<NodeId, NodeId> seen;  // template node -> piece node

  bool operator()(NodeId u, NodeId v) {
    if (auto it = seen.find(u); it != seen.end()) return it->second == v;
    if (seen.size() >= kMaxPieceNodes) return false;
    const Graph& g = graph();
    const Node& a = g[u];
    const Node& b = g[v];
    if (u == v) {  // one broadcast in both pieces (CSE): of a value 1 long on the axis
      return a.op == Op::Broadcast && !a.evaluated() && a.shape == template_shape && b.shape == piece_shape &&
             broadcast_input(a.inputs[0], a.inputs[0], a.shape) && seen.emplace(u, v).second;
    }
    if (a.evaluated() || b.evaluated() || a.shape != template_shape || b.shape != piece_shape) return false;
    if (a.op == Op::Slice) {
      if (!slice_continues(a, b, axis, delta)) return false;
      seen.emplace(u, v);
      return true;
    }
    if (!same_payload(a, b)) return false;
    seen.emplace(u, v);
    if (a.op == Op::Constant) return true;  // a scalar operand: equal values (constants are not CSE'd)
    if (a.op == Op::Broadcast) return broadcast_input(a.inputs[0], b.inputs[0], a.shape);
    if (!is_elementwise(a.op)) return false;
    for (std::size_t k = 0; k < a.inputs.size(); ++k) {
      if (!(*this)(a.inputs[k], b.inputs[k])) return false;
    }
    return true;
  }

  // The same value, 1 long on the axis (or below it), broadcast.
  bool broadcast_input(NodeId u, NodeId v, const Shape& out) const {
    const Graph& g = graph();
    const Node& a = g[u];
    if (u != v) {  // separately traced equal constants (constants are not CSE'd)
      const Node& b = g[v];
      if (a.op != Op::Constant || a.evaluated() || b.evaluated() || !same_payload(a, b) || a.shape != b.shape) return false;
    }
    const int d = out.ndim() - a.shape.ndim();
    return axis < d || a.shape[axis - d] == 1;
  }
};

bool continues(NodeId u, NodeId v, int axis, std::int64_t delta) {
  return PieceMatch{axis, delta, graph()[u].shape, graph()[v].shape, {}}(u, v);
}

// The template piece's node `u` at `shape` (its extent along the axis the
// run's), its inputs widened too: its slices start where the template's do.
NodeId widen(NodeId u, const Shape& shape, std::unordered_map<NodeId, NodeId>& made);

Node widened(NodeId u, const Shape& shape, std::unordered_map<NodeId, NodeId>& made) {
  Node n;
  {
    const Node& a = graph()[u];
    copy_payload(n, a);
    n.loc = a.loc;
    n.inputs = a.inputs;
  }
  n.shape = shape;
  if (is_elementwise(n.op)) {
    for (NodeId& in : n.inputs) in = widen(in, shape, made);
  }
  return n;
}

NodeId widen(NodeId u, const Shape& shape, std::unordered_map<NodeId, NodeId>& made) {
  if (auto it = made.find(u); it != made.end()) return it->second;
  const NodeId w = graph().add(widened(u, shape, made));
  made.emplace(u, w);
  return w;
}

void fold_concat(NodeId id) {
  Graph& g = graph();
  const Node c = g[id];  // a copy: add() below may move the node table
  const int axis = static_cast<int>(c.i0);
  const std::size_t k = c.inputs.size();
  std::vector<NodeId> inputs;
  bool merged = false;
  for (std::size_t i = 0; i < k;) {
    std::int64_t len = g[c.inputs[i]].shape[axis];
    std::size_t j = i + 1;
    while (len > 0 && j < k && g[c.inputs[j]].shape[axis] > 0 && continues(c.inputs[i], c.inputs[j], axis, len)) {
      len += g[c.inputs[j]].shape[axis];
      ++j;
    }
    std::unordered_map<NodeId, NodeId> made;
    if (j - i == 1) {
      inputs.push_back(c.inputs[i]);
    } else if (i == 0 && j == k) {
      return g.rewrite(id, widened(c.inputs[0], c.shape, made));  // the whole of it
    } else {
      std::vector<std::int64_t> dims = g[c.inputs[i]].shape.dims();
      dims[static_cast<std::size_t>(axis)] = len;
      inputs.push_back(widen(c.inputs[i], Shape(dims), made));
      merged = true;
    }
    i = j;
  }
  if (!merged) return;
  Node like = c;
  like.inputs = std::move(inputs);
  g.rewrite(id, like);
}

}  // namespace

void simplify(const std::vector<NodeId>& roots, std::vector<NodeId>* walked, bool merge_concat_pieces) {
  Graph& g = graph();
  const std::uint64_t rewrites = g.rewrites();
  // Inputs first: a rewrite only frees nodes before the current one, and
  // consumers see their inputs simplified already.
  std::vector<NodeId> order = unevaluated_order(roots);
  for (NodeId id : order) {
    const Node& n = g[id];
    if (!n.alive || n.evaluated()) continue;
    if (is_elementwise(n.op)) fold_elementwise(id);
    else if (is_view(n.op)) fold_view(id);
    else if (is_reduction(n.op)) fold_reduction(id);
    else if (n.op == Op::Concat && merge_concat_pieces) fold_concat(id);
  }
  if (walked) {
    walked->clear();
    if (g.rewrites() == rewrites) *walked = std::move(order);  // every rewrite goes through Graph::rewrite
  }
}

}  // namespace aj

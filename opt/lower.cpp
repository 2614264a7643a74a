#include "opt/lower.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/semantics.hpp"

namespace aj {

Layout contiguous_layout(const Shape& s) { return {contiguous_strides(s), 0}; }

bool counts_as_work(Op op) {
  switch (op_category(op)) {
    case OpCategory::Unary:
    case OpCategory::Binary:
    case OpCategory::Ternary:
    case OpCategory::Reduce:
    case OpCategory::Scan: return true;
    case OpCategory::Generator: return !op_has(op, opflag::Cheap);  // random numbers
    case OpCategory::Leaf:
    case OpCategory::View:
    case OpCategory::Remap:  // an address (gather) or a select (pad); their operands count
    case OpCategory::Other: return false;
  }
  return false;
}

std::int64_t work_limit(const Graph& g, NodeId id, const std::function<bool(NodeId)>& is_materialized) {
  const Node& n = g[id];
  const std::int64_t numel = n.numel();
  if (!is_elementwise(n.op) || !op_has(n.op, opflag::Cheap)) return numel;
  int full = 0;
  for (NodeId in : n.inputs) {
    NodeId base = in;
    while (!g[base].evaluated() && !is_materialized(base) && is_view(g[base].op)) base = g[base].inputs[0];
    const Node& b = g[base];
    const bool stored = b.evaluated() || is_materialized(base) || b.op == Op::Constant ||
                        (is_generator(b.op) && !counts_as_work(b.op));
    if (!stored) return numel;
    if (b.op == Op::Constant || b.numel() < numel) continue;  // a broadcast input re-reads few elements
    ++full;
    // Reading it instead of the node must cost less than storing the node
    // (a write and a read of its size): `x > 0` of f64 x is stored.
    if (itemsize(b.dtype) > 2 * itemsize(n.dtype)) return numel;
  }
  return full <= 1 ? 2 * numel : numel;
}

KScalar scalar_value(const ScalarSource& src, const KScalar& like) {
  if (src.node == kNoNode || src.field == ScalarSource::fixed) return like;
  const Node& n = graph()[src.node];
  KScalar k = like;
  switch (src.field) {
    case ScalarSource::constant: k.i = n.i0; k.f = n.f0; break;
    case ScalarSource::f0: k.f = n.f0; break;
    case ScalarSource::f1: k.f = n.f1; break;
    case ScalarSource::i0: k.i = n.i0; break;
    case ScalarSource::fixed: break;
  }
  return k;
}

Shape reduced_shape(const Shape& s, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> dims;
  for (int d = 0; d < s.ndim(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) dims.push_back(s[d]);
  }
  return Shape(std::move(dims));
}

std::optional<Layout> view_layout(const Node& v, const Node& src, const Layout& in) {
  Layout out;
  out.offset = in.offset;
  switch (v.op) {
    case Op::Reshape: {
      if (is_contiguous(src.shape, in.strides)) {
        out.strides = contiguous_strides(v.shape);
        break;
      }
      // Strided data: still a view when only size-1 axes come or go
      // (squeeze, expand_dims); otherwise the reference copies.
      std::vector<std::int64_t> kept;
      for (int d = 0; d < src.shape.ndim(); ++d) {
        if (src.shape[d] != 1) kept.push_back(in.strides[static_cast<std::size_t>(d)]);
      }
      std::size_t j = 0;
      for (int d = 0; d < v.shape.ndim(); ++d) {
        if (v.shape[d] == 1) {
          out.strides.push_back(0);
          continue;
        }
        if (j >= kept.size()) return std::nullopt;
        out.strides.push_back(kept[j++]);
      }
      if (j != kept.size()) return std::nullopt;
      std::vector<std::int64_t> a, b;
      for (auto e : src.shape) if (e != 1) a.push_back(e);
      for (auto e : v.shape) if (e != 1) b.push_back(e);
      if (a != b) return std::nullopt;
      break;
    }
    case Op::Transpose:
      for (auto p : v.ints) out.strides.push_back(in.strides[static_cast<std::size_t>(p)]);
      break;
    case Op::Broadcast: {
      const int lead = v.shape.ndim() - src.shape.ndim();
      for (int d = 0; d < v.shape.ndim(); ++d) {
        int sd = d - lead;
        out.strides.push_back(sd < 0 || src.shape[sd] == 1 ? 0 : in.strides[static_cast<std::size_t>(sd)]);
      }
      break;
    }
    case Op::Slice:
      for (int d = 0; d < v.shape.ndim(); ++d) {
        auto du = static_cast<std::size_t>(d);
        out.offset += v.ints[2 * du] * in.strides[du];
        out.strides.push_back(in.strides[du] * v.ints[2 * du + 1]);
      }
      break;
    AJ_CASES_OUTSIDE(View) internal_error(std::string("view_layout: not a view: ") + op_name(v.op));
  }
  return out;
}

namespace {

// Node index along one axis = coef * p[col] + add + dcoef * v[dyn]
// (col -1: no term in p; dyn -1: no data-dependent term). v[dyn] is an i64
// kernel value: a gather's clamped index, or a pad's source position when
// its step is not 1. Lowering keeps every unmasked index inside its axis.
struct Row {
  int col = -1;
  std::int64_t coef = 0, add = 0;
  int dyn = -1;
  std::int64_t dcoef = 0;
  bool operator==(const Row&) const = default;
};
using Map = std::vector<Row>;

// The map of node `v`'s input, given v's map; nullopt for a reshape that is
// not affine (anything but inserting/removing size-1 axes).
std::optional<Map> through_view(const Node& v, const Node& u, const Map& m) {
  Map out(static_cast<std::size_t>(u.shape.ndim()));
  switch (v.op) {
    case Op::Broadcast: {
      const int lead = v.shape.ndim() - u.shape.ndim();
      for (int d = 0; d < u.shape.ndim(); ++d) {
        if (u.shape[d] != 1) out[static_cast<std::size_t>(d)] = m[static_cast<std::size_t>(d + lead)];
      }
      return out;
    }
    case Op::Transpose:
      for (std::size_t i = 0; i < v.ints.size(); ++i) out[static_cast<std::size_t>(v.ints[i])] = m[i];
      return out;
    case Op::Slice:
      for (std::size_t d = 0; d < m.size(); ++d) {
        const std::int64_t start = v.ints[2 * d], step = v.ints[2 * d + 1];
        out[d] = {m[d].col, m[d].coef * step, m[d].add * step + start, m[d].dyn, m[d].dcoef * step};
      }
      return out;
    case Op::Reshape: {
      std::vector<std::size_t> vs, us;
      for (int d = 0; d < v.shape.ndim(); ++d) if (v.shape[d] != 1) vs.push_back(static_cast<std::size_t>(d));
      for (int d = 0; d < u.shape.ndim(); ++d) if (u.shape[d] != 1) us.push_back(static_cast<std::size_t>(d));
      if (vs.size() != us.size()) return std::nullopt;
      for (std::size_t i = 0; i < vs.size(); ++i) {
        if (v.shape[static_cast<int>(vs[i])] != u.shape[static_cast<int>(us[i])]) return std::nullopt;
        out[us[i]] = m[vs[i]];
      }
      return out;
    }
    AJ_CASES_OUTSIDE(View) break;
  }
  return std::nullopt;
}

class Lowerer {
 public:
  Lowerer(const Shape& space, const std::vector<std::int64_t>& axes, const LowerContext& ctx,
          const std::vector<NodeId>& roots)
      : g_(graph()), space_(space), axes_(axes), ctx_(ctx), roots_(roots) {
    r_.kernel.shape = space.dims();
    r_.kernel.reduce_axes = axes;
    for (int d = 0; d < space.ndim(); ++d) {
      if (!std::binary_search(axes.begin(), axes.end(), d)) outer_.push_back(d);
    }
    reduced_ = reduced_shape(space, axes);
    canon_[0] = intern(canonical(0));
    canon_[1] = intern(canonical(1));
  }

  Lowered run() {
    for (NodeId root : roots_) {
      const Node& n = g_[root];
      int phase = 0;
      if (!axes_.empty() && n.shape == reduced_) phase = 1;
      else if (n.shape != space_) {
        r_.conflict = true;
        continue;
      }
      int v = value(root, canon_[phase], phase);
      KOutput o;
      o.value = v;
      o.phase = static_cast<std::uint8_t>(phase);
      o.stream.dtype = n.dtype;
      o.stream.strides = strides_over_space(contiguous_layout(n.shape), canonical(phase), &o.stream.offset);
      r_.kernel.outputs.push_back(o);
      r_.outputs.push_back(root);
    }
    r_.ok = !r_.conflict && r_.boundaries.empty();
    for (NodeId id : order_) {
      r_.evaluations.push_back({id, work_.at(id).points});
      r_.evaluation_maps.push_back(work_.at(id).maps);
    }
    return std::move(r_);
  }

 private:
  Map canonical(int phase) const {
    Map m;
    if (phase == 0) {
      for (int d = 0; d < space_.ndim(); ++d) m.push_back({d, 1, 0});
    } else {
      for (int d : outer_) m.push_back({d, 1, 0});
    }
    return m;
  }

  bool is_root(NodeId id) const { return std::find(roots_.begin(), roots_.end(), id) != roots_.end(); }

  // Strides over the iteration space of a layout read under map m (the
  // affine part; dynamic terms are added by dynamic_offset).
  std::vector<std::int64_t> strides_over_space(const Layout& l, const Map& m, std::int64_t* offset) const {
    std::vector<std::int64_t> st(static_cast<std::size_t>(space_.ndim()), 0);
    std::int64_t off = l.offset;
    for (std::size_t d = 0; d < m.size(); ++d) {
      if (m[d].col >= 0) st[static_cast<std::size_t>(m[d].col)] += l.strides[d] * m[d].coef;
      off += l.strides[d] * m[d].add;
    }
    for (int c = 0; c < space_.ndim(); ++c) if (space_[c] == 1) st[static_cast<std::size_t>(c)] = 0;
    *offset = off;
    return st;
  }

  int emit(KInstr in) {
    r_.kernel.instrs.push_back(in);
    return static_cast<int>(r_.kernel.instrs.size() - 1);
  }

  int scalar(DType t, std::int64_t i, double f, ScalarSource src = {}) {
    if (src.node == kNoNode) {  // values of the structure: one scalar each
      for (std::size_t k = 0; k < r_.kernel.scalars.size(); ++k) {
        const KScalar& s = r_.kernel.scalars[k];
        if (r_.scalar_sources[k].node == kNoNode && s.dtype == t && s.i == i &&
            std::bit_cast<std::uint64_t>(s.f) == std::bit_cast<std::uint64_t>(f)) {
          return static_cast<int>(k);
        }
      }
    }
    r_.kernel.scalars.push_back({t, i, f});
    r_.scalar_sources.push_back(src);
    return static_cast<int>(r_.kernel.scalars.size() - 1);
  }

  int stream(NodeId node, DType t, std::vector<std::int64_t> st, std::int64_t off, bool index, bool gathered = false) {
    for (std::size_t k = 0; k < r_.inputs.size(); ++k) {
      const KStream& s = r_.kernel.inputs[k];
      if (r_.inputs[k] == node && s.dtype == t && s.strides == st && s.offset == off &&
          s.index_only == index && s.gathered == gathered) {
        return static_cast<int>(k);
      }
    }
    r_.kernel.inputs.push_back({t, std::move(st), off, index, gathered});
    r_.inputs.push_back(node);
    return static_cast<int>(r_.inputs.size() - 1);
  }

  using Why = Materialization::Why;

  int failed(NodeId boundary, Why why = Why::reduction_elsewhere, NodeId by = kNoNode, std::int64_t count = 0) {
    if (boundary != kNoNode) {
      auto it = std::find(r_.boundaries.begin(), r_.boundaries.end(), boundary);
      if (it == r_.boundaries.end()) {
        r_.boundaries.push_back(boundary);
        r_.why.push_back({boundary, why, by, count});
      } else {  // met again (another offset): the count grows
        Materialization& w = r_.why[static_cast<std::size_t>(it - r_.boundaries.begin())];
        w.count = std::max(w.count, count);
      }
    }
    if (dummy_ < 0) dummy_ = emit({KOp::Const, Op::Constant, DType::f64, 0, -1, -1, -1, scalar(DType::f64, 0, 0)});
    return dummy_;
  }

  // --- index arithmetic (gathers and pads) -------------------------------------------
  int i64_const(std::int64_t v, int phase) {
    return emit({KOp::Const, Op::Constant, DType::i64, static_cast<std::uint8_t>(phase), -1, -1, -1,
                 scalar(DType::i64, v, 0)});
  }
  int bin(Op op, DType t, int a, int b, int phase) {
    return emit({KOp::Binary, op, is_compare(op) ? DType::bool_ : t, static_cast<std::uint8_t>(phase), a, b, -1, -1});
  }

  // The data-dependent element offset of a layout read under map m: the sum
  // of stride * dcoef * v[dyn] over its dynamic rows, or -1 when it has none.
  int dynamic_offset(const Layout& l, const Map& m, int phase) {
    int sum = -1;
    for (std::size_t d = 0; d < m.size(); ++d) {
      if (m[d].dyn < 0 || l.strides[d] == 0 || m[d].dcoef == 0) continue;
      const std::int64_t k = l.strides[d] * m[d].dcoef;
      const int term = k == 1 ? m[d].dyn : bin(Op::Mul, DType::i64, m[d].dyn, i64_const(k, phase), phase);
      sum = sum < 0 ? term : bin(Op::Add, DType::i64, sum, term, phase);
    }
    return sum;
  }

  // Row r's index minus `shift` as an i64 value: a Position of an index
  // stream for the affine part, plus the dynamic term.
  int row_value(const Row& r, std::int64_t shift, int phase) {
    std::vector<std::int64_t> st(static_cast<std::size_t>(space_.ndim()), 0);
    bool affine = false;
    if (r.col >= 0 && space_[r.col] != 1 && r.coef != 0) {
      st[static_cast<std::size_t>(r.col)] = r.coef;
      affine = true;
    }
    int v;
    if (affine) {
      const int k = stream(kNoNode, DType::i64, std::move(st), r.add - shift, true);
      v = emit({KOp::Position, Op::Input, DType::i64, static_cast<std::uint8_t>(phase), -1, -1, -1, k});
    } else {
      v = i64_const(r.add - shift, phase);
    }
    if (r.dyn >= 0 && r.dcoef != 0) {
      const int term = r.dcoef == 1 ? r.dyn : bin(Op::Mul, DType::i64, r.dyn, i64_const(r.dcoef, phase), phase);
      v = bin(Op::Add, DType::i64, v, term, phase);
    }
    return v;
  }

  // The range row r's index can take over the iteration space, when it has
  // no dynamic term.
  std::optional<std::pair<std::int64_t, std::int64_t>> row_range(const Row& r) const {
    if (r.dyn >= 0 && r.dcoef != 0) return std::nullopt;
    std::int64_t lo = r.add, hi = r.add;
    if (r.col >= 0) {
      const std::int64_t span = r.coef * (space_[r.col] - 1);
      (span < 0 ? lo : hi) += span;
    }
    return std::pair{lo, hi};
  }

  // A gathered operand is computed inside the kernel (at the gathered
  // indices) only when every op of it is Cheap; otherwise it is materialized
  // once and gathered from (docs/optimizer.md).
  bool cheap_to_gather_from(NodeId id) {
    if (auto it = cheap_.find(id); it != cheap_.end()) return it->second;
    std::vector<NodeId> stack{id};
    std::unordered_set<NodeId> seen{id};
    bool cheap = true;
    while (!stack.empty() && cheap) {
      const NodeId x = stack.back();
      stack.pop_back();
      if (leaf(x)) continue;
      const Node& n = g_[x];
      cheap = op_has(n.op, opflag::Cheap) && op_category(n.op) != OpCategory::Other;
      for (NodeId in : n.inputs) {
        if (seen.insert(in).second) stack.push_back(in);
      }
    }
    return cheap_[id] = cheap;
  }

  // Load `node`'s storage viewed with layout l (dtype t) under map m; masked
  // by `guard` (a bool value, or -1) unless every row of m stays inside
  // `indexed` (the extents the layout describes) at every point: then no
  // point can reach outside the buffer, masked or not, and the load is a
  // plain one (a pad of u reads u itself unmasked; only its shifted
  // neighbours need the mask).
  int load(NodeId node, DType t, const Layout& l, const Map& m, int phase, int guard, const Shape& indexed) {
    if (guard >= 0 && inside(m, indexed)) guard = -1;
    std::int64_t off;
    auto st = strides_over_space(l, m, &off);
    const int dyn = dynamic_offset(l, m, phase);
    int k = stream(node, t, std::move(st), off, false, dyn >= 0);
    return emit({KOp::Load, Op::Input, t, static_cast<std::uint8_t>(phase), -1, dyn, guard, k});
  }

  // Every row of m stays in [0, extent) of `shape` over the iteration space.
  bool inside(const Map& m, const Shape& shape) const {
    for (std::size_t d = 0; d < m.size(); ++d) {
      const auto range = row_range(m[d]);
      if (!range || range->first < 0 || range->second >= shape[static_cast<int>(d)]) return false;
    }
    return true;
  }

  Layout layout_of(NodeId id) const {
    const Node& n = g_[id];
    if (n.evaluated()) return {n.strides, n.offset};
    return ctx_.layout(id);
  }

  bool leaf(NodeId id) const {
    return g_[id].evaluated() || (ctx_.is_materialized(id) && !is_root(id));
  }

  // Index maps are interned: a request names its map by number, so walking a
  // chain under one map allocates nothing per node.
  struct MapHash {
    std::size_t operator()(const Map& m) const {
      std::uint64_t h = 0x9e3779b97f4a7c15ull;
      for (const Row& r : m) {
        for (std::int64_t v : {std::int64_t{r.col}, r.coef, r.add, std::int64_t{r.dyn}, r.dcoef}) {
          h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ull + (h >> 29);
        }
      }
      return static_cast<std::size_t>(h);
    }
  };
  int intern(Map m) {
    auto [it, fresh] = map_ids_.emplace(std::move(m), static_cast<int>(maps_.size()));
    if (fresh) maps_.push_back(&it->first);  // node-based map: the key stays put
    return it->second;
  }
  const Map& map(int id) const { return *maps_[static_cast<std::size_t>(id)]; }

  // A node wanted under map m in `phase`; where `guard` (a bool value, or -1)
  // is false its value is never used, and its loads touch no memory there.
  struct Req {
    NodeId id = kNoNode;
    int m = 0;  // interned map
    int phase = 0;
    int guard = -1;
    // The points it is evaluated at, for the work rule: -1 for every point
    // of its phase; under a pad's mask, only the pad's share of them.
    std::int64_t points = -1;
    NodeId by = kNoNode;  // the nearest node above that is not a view (explain's "read by")
  };
  // Up to three inputs (elementwise ops; a gather's index then operand, a
  // pad's operand and fill; reductions and views have one).
  struct Kids {
    std::array<Req, 3> req;
    std::size_t n = 0;
    void push_back(const Req& r) {
      if (n == req.size()) internal_error("lower: a kernel node with more than 3 inputs");
      req[n++] = r;
    }
  };

  struct Key {
    std::uint64_t node_map_phase;
    std::int64_t guard;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return static_cast<std::size_t>((k.node_map_phase ^ static_cast<std::uint64_t>(k.guard) * 0x9e3779b97f4a7c15ull) *
                                      0xff51afd7ed558ccdull >> 7);
    }
  };
  static Key key_of(const Req& r) {
    return {static_cast<std::uint64_t>(r.id) << 32 | static_cast<std::uint64_t>(r.m) << 1 |
                static_cast<std::uint64_t>(r.phase),
            r.guard};
  }

  // The value of node `id` under map m. Iterative (an explicit stack), so a
  // chain of 100000 ops does not overflow the C++ stack; each (node, map)
  // is expanded once and its inputs visited in order.
  struct Frame {
    Req req;
    Kids kids;
    std::array<int, 3> vals{};
    std::size_t nvals = 0;
    bool expanded = false;
  };
  int value(NodeId id, int m, int phase) {
    std::vector<Frame>& stack = frames_;
    stack.clear();
    stack.push_back({Req{id, m, phase}, {}, {}, 0, false});
    int result = -1;
    auto done = [&](int v) {
      result = v;
      stack.pop_back();
      if (!stack.empty()) {
        Frame& up = stack.back();
        up.vals[up.nvals++] = v;
      }
    };
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (!f.expanded) {
        if (auto it = memo_.find(key_of(f.req)); it != memo_.end()) {
          done(it->second);
          continue;
        }
        f.expanded = true;
        const int now = expand(f.req, &f.kids);
        if (now >= 0) {
          memo_.emplace(key_of(f.req), now);
          done(now);
          continue;
        }
      }
      if (f.nvals < f.kids.n) {  // the next input, in order
        Req kid = f.kids.req[f.nvals];
        if (kid.by == kNoNode) kid.by = is_view(g_[f.req.id].op) ? f.req.by : f.req.id;
        stack.push_back({kid, {}, {}, 0, false});
        continue;
      }
      // combine may ask for more inputs (a gather's operand needs its index).
      const int v = combine(f.req, f.vals.data(), f.nvals, &f.kids);
      if (v < 0) continue;
      memo_.emplace(key_of(f.req), v);
      done(v);
    }
    return result;
  }

  // Cheap arithmetic on index generators and constants only (a pad's or a
  // gather's index computed from an iota): it reads no memory and costs what
  // an address does, so the work rule lets it be recomputed like the
  // generators themselves. At most 16 ops deep.
  bool index_arithmetic(NodeId id, int depth = 0) {
    if (auto it = index_arith_.find(id); it != index_arith_.end()) return it->second;
    const Node& n = g_[id];
    bool yes;
    if (n.evaluated() || depth > 16 || (ctx_.is_materialized(id) && !is_root(id))) {
      yes = false;
    } else if (n.op == Op::Constant || (is_generator(n.op) && !counts_as_work(n.op))) {
      yes = true;
    } else if (is_view(n.op) || (is_elementwise(n.op) && op_has(n.op, opflag::Cheap))) {
      yes = true;
      for (NodeId in : n.inputs) yes = yes && index_arithmetic(in, depth + 1);
    } else {
      yes = false;
    }
    index_arith_[id] = yes;
    return yes;
  }

  // A pad whose fill is a pad whose fill is a pad ... (a slice_update of a
  // slice_update, a loop's steps): every level is a select more at each
  // point a reader evaluates it, and a stencil reading it at three offsets
  // would unroll the whole chain again at every step, a kernel of its own
  // each. Past kMaxPadChain levels the pad counts as work: read at several
  // index maps it is stored, and the steps after it read a buffer.
  static constexpr int kMaxPadChain = 3;
  bool deep_pad(NodeId id) const {
    const Node& p = g_[id];
    if (p.op != Op::Pad || p.evaluated()) return false;
    // A computed value placed into a pad that placed a computed value (a
    // slice_update of a slice_update of computed values): from the second
    // step. (An edge or reflect pad's fill places views: not this.)
    auto computed = [&](NodeId id) { return counts_as_work(g_[id].op) && !g_[id].evaluated(); };
    const Node& f = g_[p.inputs[1]];
    if (computed(p.inputs[0]) && f.op == Op::Pad && !f.evaluated() && computed(f.inputs[0])) return true;
    int depth = 0;
    for (NodeId at = id; depth <= kMaxPadChain; ++depth) {
      const Node& n = g_[at];
      if (n.op != Op::Pad || n.evaluated()) break;
      at = n.inputs[1];
    }
    return depth > kMaxPadChain;
  }

  std::int64_t points_of(const Req& r) const {
    return r.points >= 0 ? r.points : r.phase ? reduced_.numel() : space_.numel();
  }

  // The work rule: false (and a boundary) when evaluating node `id` here
  // would make the plan evaluate it at more points than it has elements.
  bool within_work(const Req& r) {
    const Node& n = g_[r.id];
    if (!(counts_as_work(n.op) || deep_pad(r.id)) || index_arithmetic(r.id)) return true;
    const std::int64_t points = points_of(r);
    Work& mine = work_[r.id];
    if (ctx_.evaluations_elsewhere && !is_root(r.id)) {
      const std::int64_t other = ctx_.evaluations_elsewhere(r.id);
      // A second kernel may recompute what is worth it (work_limit); one
      // kernel evaluates a node at most once per element.
      const std::int64_t limit =
          other > 0 && mine.points == 0 && points <= n.numel() ? work_limit(g_, r.id, ctx_.is_materialized) : n.numel();
      if (other + mine.points + points > limit) {
        const Why why = other > 0 ? Why::several_kernels : mine.points > 0 ? Why::several_maps : Why::broadcast;
        const std::int64_t count = why == Why::several_maps ? ++mine.maps
                                   : why == Why::broadcast ? points
                                                           : 2;
        failed(r.id, why, r.by, count);
        return false;
      }
    }
    if (mine.points == 0) order_.push_back(r.id);
    mine.points += points;
    ++mine.maps;
    return true;
  }

  // Either the value right away (>= 0) or -1 and the inputs it needs.
  int expand(const Req& r, Kids* kids) {
    const NodeId id = r.id;
    const Map& m = map(r.m);
    const int phase = r.phase;
    const Node& n = g_[id];
    const auto ph = static_cast<std::uint8_t>(phase);
    if (leaf(id)) {
      if (!n.evaluated()) {
        r_.deps.push_back(id);
        if (counts_as_work(n.op)) r_.loads.push_back({id, points_of(r)});
      }
      return load(id, n.dtype, layout_of(id), m, phase, r.guard, n.shape);
    }
    r_.touched.push_back(id);
    if (is_root(id) && (r.m != canon_[phase] || n.shape != (phase ? reduced_ : space_))) {
      r_.conflict = true;  // another root needs this one at a different index
      return failed(kNoNode);
    }
    if (!within_work(r)) return dummy_;
    switch (op_category(n.op)) {
      case OpCategory::Leaf:
        if (n.op != Op::Constant) internal_error("lower: an input leaf without storage");
        return emit({KOp::Const, Op::Constant, n.dtype, ph, -1, -1, -1, scalar(n.dtype, n.i0, n.f0, {id, ScalarSource::constant})});
      case OpCategory::Generator: {
        r_.computed.push_back(id);
        std::int64_t off;
        const Layout cl = contiguous_layout(n.shape);
        auto st = strides_over_space(cl, m, &off);
        int k = stream(id, DType::i64, std::move(st), off, true);
        const int dyn = dynamic_offset(cl, m, phase);
        const std::int64_t extra = n.op == Op::Eye ? n.shape[1] : n.numel();
        int s0 = scalar(DType::f64, 0, n.f0, {id, ScalarSource::f0});
        scalar(DType::f64, 0, n.f1, {id, ScalarSource::f1});
        scalar(DType::i64, n.i0, 0, {id, ScalarSource::i0});
        r_.kernel.scalars.push_back({DType::i64, extra, 0});  // s0..s3 are consecutive
        r_.scalar_sources.push_back({});
        return emit({KOp::Index, n.op, n.dtype, ph, s0, dyn, -1, k});
      }
      case OpCategory::Unary:
      case OpCategory::Binary:
      case OpCategory::Ternary:
        r_.computed.push_back(id);
        for (NodeId in : n.inputs) kids->push_back({in, r.m, phase, r.guard, r.points});
        return -1;
      case OpCategory::Reduce: {
        const bool here = phase == 1 && n.ints == axes_ && g_[n.inputs[0]].shape == space_ &&
                          r.m == canon_[1] && r.guard < 0;
        if (!here) return failed(id, Why::reduction_elsewhere, r.by);
        if (n.op == Op::ArgMax || n.op == Op::ArgMin) {
          // Arg reductions walk their axis in interleaved lanes
          // (jit/llvm/codegen.cpp), a scan in order: not in one kernel.
          has_arg_ = true;
          for (NodeId s : scans_) failed(s, Why::reduction_elsewhere, id);
        }
        r_.computed.push_back(id);
        kids->push_back({n.inputs[0], canon_[0], 0});
        return -1;
      }
      case OpCategory::Scan: {
        // A scan is computed where the kernel walks its axis in order: at
        // its own index, in a kernel whose reduce axes are the scan's.
        const bool here = phase == 0 && n.ints == axes_ && g_[n.inputs[0]].shape == space_ &&
                          r.m == canon_[0] && !has_arg_;
        if (!here) return failed(id, Why::reduction_elsewhere, r.by);
        scans_.push_back(id);
        r_.computed.push_back(id);
        kids->push_back({n.inputs[0], canon_[0], 0});
        return -1;
      }
      case OpCategory::View: {
        NodeId u = n.inputs[0];
        if (leaf(u)) {
          auto l = view_layout(n, g_[u], layout_of(u));
          if (!l) return failed(id, Why::not_a_view, r.by);  // the reference copies here: a step of its own
          if (!g_[u].evaluated()) {
            r_.deps.push_back(u);
            if (counts_as_work(g_[u].op)) r_.loads.push_back({u, points_of(r)});
          }
          // A view of the buffer reaches outside it only if the index in
          // the buffer's own node does (u[1:-1] read at -1 is u[0]).
          auto mu = through_view(n, g_[u], m);
          const bool in_u = mu && inside(*mu, g_[u].shape);
          return load(u, n.dtype, *l, m, phase, in_u ? -1 : r.guard, n.shape);
        }
        auto mu = through_view(n, g_[u], m);
        if (!mu) return failed(u, Why::not_a_view, id);
        kids->push_back({u, intern(std::move(*mu)), phase, r.guard, r.points});
        return -1;
      }
      case OpCategory::Remap:
        r_.computed.push_back(id);
        if (n.op == Op::Gather) {
          kids->push_back({n.inputs[1], r.m, phase, r.guard, r.points});  // the index first
          return -1;
        }
        return expand_pad(r, kids);
      case OpCategory::Other: return failed(id, Why::library_operand, r.by);
    }
    return failed(id, Why::library_operand, r.by);
  }

  // pad(x, fill) under map m: per padded axis the source position
  // q = index - start must satisfy 0 <= q, q % step == 0, q / step < extent;
  // x is read at q / step under that mask (its loads touch no memory where
  // it is false), fill (of the pad's own shape) at m everywhere else. Axes
  // whose range is inside are free.
  int expand_pad(const Req& r, Kids* kids) {
    const Node& n = g_[r.id];
    const Node& x = g_[n.inputs[0]];
    const Map& rm = map(r.m);
    // Pads of one placement under one map share their mask (slice_update's
    // values and its mask are two pads).
    std::vector<std::int64_t> key{r.phase};
    for (std::size_t d = 0; d < rm.size(); ++d) {
      const Row& row = rm[d];
      key.insert(key.end(), {row.col, row.coef, row.add, row.dyn, row.dcoef, n.ints[2 * d], n.ints[2 * d + 1],
                             x.shape[static_cast<int>(d)]});
    }
    auto [it, fresh] = pad_masks_.try_emplace(key);
    if (fresh) it->second = pad_mask(r, n, x);
    const PadMask& pm = it->second;
    pad_valid_[key_of(r)] = pm.valid;
    if (pm.valid == kFillOnly) {
      kids->push_back({n.inputs[1], r.m, r.phase, r.guard, r.points});
      return -1;
    }
    auto conj = [&](int a, int b) { return a < 0 ? b : bin(Op::And, DType::bool_, a, b, r.phase); };
    // The operand is evaluated only where the mask holds: at the pad's
    // points times the share of them inside (its elements over the pad's).
    const std::int64_t all = points_of(r);
    const std::int64_t inside = n.numel() == 0 ? 0 : (all * x.numel() + n.numel() - 1) / n.numel();
    kids->push_back({n.inputs[0], intern(pm.inner), r.phase, pm.valid < 0 ? r.guard : conj(r.guard, pm.valid),
                     pm.valid < 0 ? all : inside});
    if (pm.valid >= 0) kids->push_back({n.inputs[1], r.m, r.phase, r.guard, all});
    return -1;
  }

  struct PadMask {
    int valid = -1;  // bool value, -1 (always inside) or kFillOnly (never)
    Map inner;       // x's map
  };

  PadMask pad_mask(const Req& r, const Node& n, const Node& x) {
    const Map& rm = map(r.m);
    Map inner = rm;
    int valid = -1;
    auto conj = [&](int a, int b) { return a < 0 ? b : bin(Op::And, DType::bool_, a, b, r.phase); };
    for (std::size_t d = 0; d < rm.size(); ++d) {
      const Row& row = rm[d];
      const std::int64_t start = n.ints[2 * d], step = n.ints[2 * d + 1], extent = x.shape[static_cast<int>(d)];
      if (step == 1) {
        inner[d] = {row.col, row.coef, row.add - start, row.dyn, row.dcoef};
        if (auto range = row_range(row)) {
          if (range->first - start >= 0 && range->second - start < extent) continue;  // always inside
          if (range->second - start < 0 || range->first - start >= extent) return {kFillOnly, {}};  // all fill
        }
        int ok;
        if (row.dyn < 0 || row.dcoef == 0) {
          // An affine range of the iteration point: one InRange (a loop the
          // JIT splits, so the inside runs without masks).
          std::vector<std::int64_t> st(static_cast<std::size_t>(space_.ndim()), 0);
          if (row.col >= 0 && space_[row.col] != 1) st[static_cast<std::size_t>(row.col)] = row.coef;
          const int k = stream(kNoNode, DType::i64, std::move(st), row.add - start, true);
          ok = emit({KOp::InRange, Op::Input, DType::bool_, static_cast<std::uint8_t>(r.phase),
                     scalar(DType::i64, 0, 0), scalar(DType::i64, extent, 0), -1, k});
        } else {
          const int q = row_value(row, start, r.phase);
          ok = bin(Op::And, DType::bool_, bin(Op::Ge, DType::i64, q, i64_const(0, r.phase), r.phase),
                   bin(Op::Lt, DType::i64, q, i64_const(extent, r.phase), r.phase), r.phase);
        }
        valid = conj(valid, ok);
        continue;
      }
      const int q = row_value(row, start, r.phase);
      const int zero = i64_const(0, r.phase), st = i64_const(step, r.phase);
      const int src = bin(Op::Div, DType::i64, q, st, r.phase);
      int ok = bin(Op::Ge, DType::i64, q, zero, r.phase);
      ok = bin(Op::And, DType::bool_, ok, bin(Op::Eq, DType::i64, bin(Op::Mod, DType::i64, q, st, r.phase), zero, r.phase), r.phase);
      ok = bin(Op::And, DType::bool_, ok, bin(Op::Lt, DType::i64, src, i64_const(extent, r.phase), r.phase), r.phase);
      valid = conj(valid, ok);
      inner[d] = {-1, 0, 0, src, 1};
    }
    return {valid, std::move(inner)};
  }

  int combine(const Req& r, const int* v, std::size_t nv, Kids* kids) {
    const Node& n = g_[r.id];
    const auto ph = static_cast<std::uint8_t>(r.phase);
    if (is_view(n.op)) return v[0];
    if (is_reduction(n.op)) return emit({KOp::Reduce, n.op, n.dtype, 1, v[0], -1, -1, -1});
    if (is_scan(n.op)) return emit({KOp::Scan, sem::scan_combiner(n.op), n.dtype, 0, v[0], -1, -1, -1});
    if (n.op == Op::Gather) {
      if (nv == 2) return v[1];
      // The index, counted from the end when negative, clamped into the axis.
      const NodeId a = n.inputs[0];
      if (!leaf(a) && !cheap_to_gather_from(a)) return failed(a);
      const std::int64_t axis = n.i0, extent = g_[a].shape[static_cast<int>(axis)];
      int i = v[0];
      if (g_[n.inputs[1]].dtype != DType::i64) i = emit({KOp::Unary, Op::Cast, DType::i64, ph, i, -1, -1, -1});
      const int ext = i64_const(extent, r.phase), zero = i64_const(0, r.phase);
      const int neg = bin(Op::Lt, DType::i64, i, zero, r.phase);
      i = emit({KOp::Where, Op::Where, DType::i64, ph, neg, bin(Op::Add, DType::i64, i, ext, r.phase), i, -1});
      i = bin(Op::Max, DType::i64, i, zero, r.phase);
      i = bin(Op::Min, DType::i64, i, i64_const(extent - 1, r.phase), r.phase);
      Map ma = map(r.m);
      ma[static_cast<std::size_t>(axis)] = {-1, 0, 0, i, 1};
      kids->push_back({a, intern(std::move(ma)), r.phase, r.guard, r.points});
      return -1;
    }
    if (n.op == Op::Pad) {
      const int valid = pad_valid_.at(key_of(r));
      return valid == kFillOnly || valid < 0 ? v[0] : emit({KOp::Where, Op::Where, n.dtype, ph, valid, v[0], v[1], -1});
    }
    int a[3] = {-1, -1, -1};
    for (std::size_t i = 0; i < nv; ++i) a[i] = v[i];
    KOp kind = n.op == Op::Where ? KOp::Where
               : op_category(n.op) == OpCategory::Binary ? KOp::Binary
                                                         : KOp::Unary;
    return emit({kind, n.op, n.dtype, ph, a[0], a[1], a[2], -1});
  }

  Graph& g_;
  Shape space_;
  std::vector<std::int64_t> axes_;
  const LowerContext& ctx_;
  const std::vector<NodeId>& roots_;
  std::vector<int> outer_;
  Shape reduced_;
  Lowered r_;
  std::unordered_map<Map, int, MapHash> map_ids_;
  std::vector<const Map*> maps_;
  int canon_[2] = {0, 0};
  std::unordered_map<Key, int, KeyHash> memo_;  // (node, map, phase, guard) -> value
  std::vector<Frame> frames_;  // value()'s stack, kept between roots
  struct Work {
    std::int64_t points = 0;  // work rule: points this kernel evaluates the node at
    std::int64_t maps = 0;    // index maps it is evaluated under
  };
  std::unordered_map<NodeId, Work> work_;
  std::vector<NodeId> order_;  // nodes of work_, first seen first
  static constexpr int kFillOnly = -2;
  std::unordered_map<Key, int, KeyHash> pad_valid_;  // per pad request: its mask (-1: none; kFillOnly)
  std::map<std::vector<std::int64_t>, PadMask> pad_masks_;
  std::unordered_map<NodeId, bool> cheap_;
  std::unordered_map<NodeId, bool> index_arith_;
  bool has_arg_ = false;        // an ArgMax/ArgMin is computed here
  std::vector<NodeId> scans_;   // scans computed here
  int dummy_ = -1;
};

}  // namespace

Lowered lower(const std::vector<NodeId>& roots, const Shape& space,
              const std::vector<std::int64_t>& reduce_axes, const LowerContext& ctx) {
  Lowered r = Lowerer(space, reduce_axes, ctx, roots).run();
  widen_halves(r.kernel);  // half arithmetic in f32 (graph/kernel.hpp)
  return r;
}

Lowered lower_copy(NodeId id, const Layout& in) {
  const Graph& g = graph();
  const Node& n = g[id];
  const NodeId src = n.inputs[0];
  const Shape& space = g[src].shape;
  Lowered lw;
  Kernel& k = lw.kernel;
  k.shape = space.dims();
  KStream is{n.dtype, in.strides, in.offset, false};
  KStream os{n.dtype, contiguous_strides(space), 0, false};
  for (int d = 0; d < space.ndim(); ++d) {
    if (space[d] == 1) is.strides[static_cast<std::size_t>(d)] = os.strides[static_cast<std::size_t>(d)] = 0;
  }
  k.inputs.push_back(std::move(is));
  k.instrs.push_back({KOp::Load, Op::Input, n.dtype, 0, -1, -1, -1, 0});
  k.outputs.push_back({0, 0, std::move(os)});
  lw.inputs = {src};
  lw.outputs = {id};
  lw.touched = {id};
  if (!g[src].evaluated()) lw.deps = {src};
  return lw;
}

}  // namespace aj

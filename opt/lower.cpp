#include "opt/lower.hpp"

#include <algorithm>
#include <map>

namespace aj {

Layout contiguous_layout(const Shape& s) { return {contiguous_strides(s), 0}; }

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

// Node index along one axis = coef * p[col] + add (col -1: constant add).
struct Row {
  int col = -1;
  std::int64_t coef = 0, add = 0;
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
        out[d] = {m[d].col, m[d].coef * step, m[d].add * step + start};
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
      int v = value(root, canonical(phase), phase);
      KOutput o;
      o.value = v;
      o.phase = static_cast<std::uint8_t>(phase);
      o.stream.dtype = n.dtype;
      o.stream.strides = strides_over_space(contiguous_layout(n.shape), canonical(phase), &o.stream.offset);
      r_.kernel.outputs.push_back(o);
      r_.outputs.push_back(root);
    }
    r_.ok = !r_.conflict && r_.boundaries.empty();
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

  // Strides over the iteration space of a layout read under map m.
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
    r_.kernel.scalars.push_back({t, i, f});
    r_.scalar_sources.push_back(src);
    return static_cast<int>(r_.kernel.scalars.size() - 1);
  }

  int stream(NodeId node, DType t, std::vector<std::int64_t> st, std::int64_t off, bool index) {
    for (std::size_t k = 0; k < r_.inputs.size(); ++k) {
      const KStream& s = r_.kernel.inputs[k];
      if (r_.inputs[k] == node && s.dtype == t && s.strides == st && s.offset == off &&
          s.index_only == index) {
        return static_cast<int>(k);
      }
    }
    r_.kernel.inputs.push_back({t, std::move(st), off, index});
    r_.inputs.push_back(node);
    return static_cast<int>(r_.inputs.size() - 1);
  }

  int failed(NodeId boundary) {
    if (boundary != kNoNode &&
        std::find(r_.boundaries.begin(), r_.boundaries.end(), boundary) == r_.boundaries.end()) {
      r_.boundaries.push_back(boundary);
    }
    if (dummy_ < 0) dummy_ = emit({KOp::Const, Op::Constant, DType::f64, 0, -1, -1, -1, scalar(DType::f64, 0, 0)});
    return dummy_;
  }

  // Load `node`'s storage viewed with layout l (dtype t) under map m.
  int load(NodeId node, DType t, const Layout& l, const Map& m, int phase) {
    std::int64_t off;
    auto st = strides_over_space(l, m, &off);
    int k = stream(node, t, std::move(st), off, false);
    return emit({KOp::Load, Op::Input, t, static_cast<std::uint8_t>(phase), -1, -1, -1, k});
  }

  Layout layout_of(NodeId id) const {
    const Node& n = g_[id];
    if (n.evaluated()) return {n.strides, n.offset};
    return ctx_.layout(id);
  }

  bool leaf(NodeId id) const {
    return g_[id].evaluated() || (ctx_.is_materialized(id) && !is_root(id));
  }

  struct Req {
    NodeId id;
    Map m;
    int phase;
  };

  static std::vector<std::int64_t> key_of(const Req& r) {
    std::vector<std::int64_t> key{r.id, r.phase};
    for (auto& row : r.m) key.insert(key.end(), {row.col, row.coef, row.add});
    return key;
  }

  // The value of node `id` under map m. Iterative (an explicit stack), so a
  // chain of 100000 ops does not overflow the C++ stack.
  int value(NodeId id, const Map& m, int phase) {
    struct Frame {
      Req req;
      std::vector<std::int64_t> key;
      std::vector<Req> kids;
      bool expanded = false;
    };
    std::vector<Frame> stack;
    stack.push_back({{id, m, phase}, key_of({id, m, phase}), {}, false});
    int result = -1;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (auto it = memo_.find(f.key); it != memo_.end()) {
        result = it->second;
        stack.pop_back();
        continue;
      }
      if (!f.expanded) {
        f.expanded = true;
        int now = expand(f.req, &f.kids);
        if (now >= 0) {
          memo_[f.key] = result = now;
          stack.pop_back();
          continue;
        }
      }
      // Push the first input not computed yet; when none is left, combine.
      bool pushed = false;
      for (const Req& k : f.kids) {
        auto key = key_of(k);
        if (!memo_.count(key)) {
          Req copy = k;
          stack.push_back({std::move(copy), std::move(key), {}, false});
          pushed = true;
          break;
        }
      }
      if (pushed) continue;
      std::vector<int> vals;
      for (const Req& k : f.kids) vals.push_back(memo_.at(key_of(k)));
      int v = combine(f.req, vals);
      memo_[f.key] = result = v;
      stack.pop_back();
    }
    return result;
  }

  // Either the value right away (>= 0) or -1 and the inputs it needs.
  int expand(const Req& r, std::vector<Req>* kids) {
    const NodeId id = r.id;
    const Map& m = r.m;
    const int phase = r.phase;
    const Node& n = g_[id];
    const auto ph = static_cast<std::uint8_t>(phase);
    if (leaf(id)) {
      if (!n.evaluated()) r_.deps.push_back(id);
      return load(id, n.dtype, layout_of(id), m, phase);
    }
    r_.touched.push_back(id);
    if (is_root(id) && (m != canonical(phase) || n.shape != (phase ? reduced_ : space_))) {
      r_.conflict = true;  // another root needs this one at a different index
      return failed(kNoNode);
    }
    switch (op_category(n.op)) {
      case OpCategory::Leaf:
        if (n.op != Op::Constant) internal_error("lower: an input leaf without storage");
        return emit({KOp::Const, Op::Constant, n.dtype, ph, -1, -1, -1, scalar(n.dtype, n.i0, n.f0, {id, ScalarSource::constant})});
      case OpCategory::Generator: {
        r_.computed.push_back(id);
        std::int64_t off;
        auto st = strides_over_space(contiguous_layout(n.shape), m, &off);
        int k = stream(id, DType::i64, std::move(st), off, true);
        const std::int64_t extra = n.op == Op::Eye ? n.shape[1] : n.numel();
        int s0 = scalar(DType::f64, 0, n.f0, {id, ScalarSource::f0});
        scalar(DType::f64, 0, n.f1, {id, ScalarSource::f1});
        scalar(DType::i64, n.i0, 0, {id, ScalarSource::i0});
        scalar(DType::i64, extra, 0);
        return emit({KOp::Index, n.op, n.dtype, ph, s0, -1, -1, k});
      }
      case OpCategory::Unary:
      case OpCategory::Binary:
      case OpCategory::Ternary:
        r_.computed.push_back(id);
        for (NodeId in : n.inputs) kids->push_back({in, m, phase});
        return -1;
      case OpCategory::Reduce: {
        const bool here = phase == 1 && n.ints == axes_ && g_[n.inputs[0]].shape == space_ &&
                          m == canonical(1);
        if (!here) return failed(id);
        r_.computed.push_back(id);
        kids->push_back({n.inputs[0], canonical(0), 0});
        return -1;
      }
      case OpCategory::View: {
        NodeId u = n.inputs[0];
        if (leaf(u)) {
          auto l = view_layout(n, g_[u], layout_of(u));
          if (!l) return failed(id);  // the reference copies here: a step of its own
          if (!g_[u].evaluated()) r_.deps.push_back(u);
          return load(u, n.dtype, *l, m, phase);
        }
        auto mu = through_view(n, g_[u], m);
        if (!mu) return failed(u);
        kids->push_back({u, std::move(*mu), phase});
        return -1;
      }
      case OpCategory::Other: return failed(id);
    }
    return failed(id);
  }

  int combine(const Req& r, const std::vector<int>& v) {
    const Node& n = g_[r.id];
    const auto ph = static_cast<std::uint8_t>(r.phase);
    if (is_view(n.op)) return v[0];
    if (is_reduction(n.op)) return emit({KOp::Reduce, n.op, n.dtype, 1, v[0], -1, -1, -1});
    int a[3] = {-1, -1, -1};
    for (std::size_t i = 0; i < v.size(); ++i) a[i] = v[i];
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
  std::map<std::vector<std::int64_t>, int> memo_;
  int dummy_ = -1;
};

}  // namespace

Lowered lower(const std::vector<NodeId>& roots, const Shape& space,
              const std::vector<std::int64_t>& reduce_axes, const LowerContext& ctx) {
  return Lowerer(space, reduce_axes, ctx, roots).run();
}

}  // namespace aj

#include "opt/passes/concat_slices.hpp"

#include <algorithm>

namespace aj {

namespace {

// The layout of `src` under which the reshape view `v` of it has layout
// `want`: for a reshape into a contiguous region (any reshape: row-major
// order is kept, so src is contiguous there too; a gradient flattened into
// its bucket), or one that inserts or removes size-1 axes (the remaining
// extents agree in order); nullopt otherwise.
std::optional<Layout> through_reshape(const Node& v, const Node& src, const Layout& want) {
  if (v.op != Op::Reshape) return std::nullopt;
  if (v.shape.numel() == src.shape.numel()) {
    bool contiguous = true;
    const std::vector<std::int64_t> c = contiguous_strides(v.shape);
    for (int d = 0; d < v.shape.ndim(); ++d) {
      const auto du = static_cast<std::size_t>(d);
      contiguous = contiguous && (v.shape[d] == 1 || want.strides[du] == c[du]);
    }
    if (contiguous) return Layout{contiguous_strides(src.shape), want.offset};
  }
  std::vector<std::int64_t> kept;  // want's strides of v's non-1 axes, in order
  for (int d = 0; d < v.shape.ndim(); ++d) {
    if (v.shape[d] != 1) kept.push_back(want.strides[static_cast<std::size_t>(d)]);
  }
  Layout l;
  l.offset = want.offset;
  std::size_t j = 0;
  for (int d = 0; d < src.shape.ndim(); ++d) {
    if (src.shape[d] == 1) {
      l.strides.push_back(0);
      continue;
    }
    if (j >= kept.size()) return std::nullopt;
    l.strides.push_back(kept[j++]);
  }
  if (j != kept.size()) return std::nullopt;
  std::vector<std::int64_t> a, b;
  for (auto e : v.shape) if (e != 1) a.push_back(e);
  for (auto e : src.shape) if (e != 1) b.push_back(e);
  if (a != b) return std::nullopt;
  return l;
}

// Read by one node only (handles may hold it: it becomes a view of the
// concatenate's buffer, which then stays alive while they do).
bool only_read_by(const Node& n) { return n.uses == 1; }

// Does kernel k iterate over output o's node axes, one to one (phase-1
// outputs: the axes left after the reduction)? A copy kernel that lays a
// strided reshape out contiguous iterates over its input's axes instead.
bool space_is_node(const Kernel& k, const KOutput& o, const Shape& node_shape) {
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < k.shape.size(); ++d) {
    const bool reduced = std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) !=
                         k.reduce_axes.end();
    if (o.phase == 1 && reduced) continue;
    dims.push_back(k.shape[d]);
  }
  return dims == node_shape.dims();
}

// The strides over kernel k's iteration space of output o stored with layout l
// (k iterates over o's node axes: space_is_node).
std::vector<std::int64_t> over_space(const Kernel& k, const KOutput& o, const Layout& l) {
  std::vector<std::int64_t> st(k.shape.size(), 0);
  std::size_t j = 0;
  for (std::size_t d = 0; d < k.shape.size(); ++d) {
    const bool reduced = std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) !=
                         k.reduce_axes.end();
    if (o.phase == 1 && reduced) continue;
    const std::size_t axis = o.phase == 1 ? j++ : d;
    st[d] = k.shape[d] == 1 ? 0 : l.strides[axis];
  }
  return st;
}

}  // namespace

int place_concat_slices(Schedule& s) {
  Graph& g = graph();
  int placed = 0;
  for (std::size_t ci = 0; ci < s.steps.size(); ++ci) {
    const Step& cs = s.steps[ci];
    if (cs.kind != Step::Kind::library || g[cs.node].op != Op::Concat) continue;
    const NodeId c = cs.node;
    const Node& cn = g[c];
    const auto axis = static_cast<std::size_t>(cn.i0);
    const std::vector<std::int64_t> cstr = contiguous_strides(cn.shape);
    std::int64_t base = 0;
    for (NodeId piece : cn.inputs) {
      const Layout slice{cstr, base * cstr[axis]};
      base += g[piece].shape[static_cast<int>(axis)];
      const auto is_root = [&](NodeId id) { return std::find(s.roots.begin(), s.roots.end(), id) != s.roots.end(); };
      if (g[piece].evaluated() || !only_read_by(g[piece]) || !s.step_of.count(piece) || is_root(piece)) continue;
      NodeId src = piece;
      Layout want = slice;
      const Step& ps = s.steps[static_cast<std::size_t>(s.step_of.at(piece))];
      if (ps.kind == Step::Kind::view) {
        src = g[piece].inputs[0];
        auto l = through_reshape(g[piece], g[src], slice);
        if (!l || g[src].evaluated() || !only_read_by(g[src]) || !s.step_of.count(src) || is_root(src)) continue;
        want = *l;
      }
      auto it = s.step_of.find(src);
      if (it == s.step_of.end() || it->second > static_cast<int>(ci)) continue;
      Step& prod = s.steps[static_cast<std::size_t>(it->second)];
      if (prod.kind != Step::Kind::kernel) continue;
      const auto out = std::find(prod.outputs.begin(), prod.outputs.end(), src);
      if (out == prod.outputs.end() || g[src].dtype != cn.dtype) continue;
      const auto j = static_cast<std::size_t>(out - prod.outputs.begin());
      prod.into.resize(prod.outputs.size(), kNoNode);
      if (prod.into[j] != kNoNode) continue;
      KOutput& o = prod.kernel.outputs[j];
      if (space_is_node(prod.kernel, o, g[src].shape)) {
        o.stream.strides = over_space(prod.kernel, o, want);
      } else if (want.strides != contiguous_strides(g[src].shape) || o.stream.offset != 0) {
        // Another iteration space: only a contiguous slice keeps the
        // kernel's own (contiguous) output strides, moved by its offset.
        continue;
      }
      o.stream.offset = want.offset;
      prod.into[j] = c;
      s.layouts[src] = want;
      s.layouts[piece] = slice;
      ++placed;
    }
  }
  return placed;
}

}  // namespace aj

#include "opt/passes/fuse.hpp"

#include <optional>
#include <unordered_set>


namespace aj {

namespace {

bool is_fusible_reduce(Op op) { return is_reduction(op) && !is_library_op(op); }

struct Sig {
  Shape space;
  std::vector<std::int64_t> axes;
};

using NodeSet = std::unordered_set<NodeId>;

// The iteration space of the kernel that computes root x: the first reduction
// or scan reached through computed elementwise ops (its input shape and
// axes), or x's own shape.
Sig signature(NodeId x, const NodeSet& mat) {
  Graph& g = graph();
  std::vector<NodeId> stack{x};
  NodeSet seen{x};
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    const Node& n = g[id];
    if (is_fusible_reduce(n.op)) return {g[n.inputs[0]].shape, n.ints};
    if (is_scan(n.op)) return {n.shape, n.ints};  // walks its axis as a reduction does
    if (!is_elementwise(n.op)) continue;
    for (NodeId in : n.inputs) {
      const Node& m = g[in];
      if (m.evaluated() || mat.count(in) || seen.count(in)) continue;
      if (is_elementwise(m.op) || is_fusible_reduce(m.op) || is_scan(m.op)) {
        seen.insert(in);
        stack.push_back(in);
      }
    }
  }
  return {g[x].shape, {}};
}

// One kernel can hold both when the spaces agree, or when one is elementwise
// over the full or reduced shape of the other's reduction.
std::optional<Sig> merge(const Sig& a, const Sig& b) {
  if (a.space == b.space && a.axes == b.axes) return a;
  if (a.axes.empty() && !b.axes.empty() &&
      (a.space == b.space || a.space == reduced_shape(b.space, b.axes))) {
    return b;
  }
  if (b.axes.empty() && !a.axes.empty() &&
      (b.space == a.space || b.space == reduced_shape(a.space, a.axes))) {
    return a;
  }
  return std::nullopt;
}

std::size_t bytes_of(const Node& n) {
  return static_cast<std::size_t>(n.numel()) * itemsize(n.dtype);
}

// The cost rule of fuse.hpp for a producer computed k times.
bool recompute_is_cheaper(NodeId producer, std::size_t k, const NodeSet& mat) {
  Graph& g = graph();
  bool cheap = true;
  std::size_t leaf_bytes = 0;
  NodeSet seen{producer};
  std::vector<NodeId> stack{producer};
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    const Node& n = g[id];
    if (id != producer && (n.evaluated() || mat.count(id))) {
      leaf_bytes += bytes_of(n);
      continue;
    }
    if (!op_has(n.op, opflag::Cheap)) cheap = false;
    for (NodeId in : n.inputs) {
      if (seen.insert(in).second) stack.push_back(in);
    }
  }
  return cheap && (k - 1) * leaf_bytes <= (k + 1) * bytes_of(g[producer]);
}

class Partitioner {
 public:
  Partitioner(const std::vector<NodeId>& roots, bool fuse_ops) : g_(graph()), fuse_ops_(fuse_ops) {
    s_.roots = roots;
    s_.order = unevaluated_order(roots);
    for (NodeId r : roots) mat_.insert(r);
    if (!fuse_ops) {
      for (NodeId id : s_.order) {
        if (!is_view(g_[id].op)) mat_.insert(id);
      }
    }
    for (NodeId id : s_.order) {
      if (!is_library_op(g_[id].op)) continue;
      mat_.insert(id);
      for (NodeId in : g_[id].inputs) mat_.insert(in);
    }
  }

  // Plans until no kernel needs another materialized node. Returns false if
  // that does not converge (the caller then uses the reference interpreter).
  bool run() {
    for (int round = 0; round < 10000; ++round) {
      close_views();
      if (place_all() && apply_cost_rule()) return true;
    }
    return false;
  }

  Schedule take() { return std::move(s_); }

 private:
  // A view that must exist as an array needs its input to exist too.
  void close_views() {
    for (auto it = s_.order.rbegin(); it != s_.order.rend(); ++it) {
      const Node& n = g_[*it];
      if (mat_.count(*it) && is_view(n.op) && !g_[n.inputs[0]].evaluated()) mat_.insert(n.inputs[0]);
    }
  }

  Layout layout(NodeId id) const {
    const Node& n = g_[id];
    if (n.evaluated()) return {n.strides, n.offset};
    auto it = s_.layouts.find(id);
    if (it == s_.layouts.end()) internal_error("fuse: layout of a node no step produced yet");
    return it->second;
  }

  void add_step(Step st, NodeId node, Layout l) {
    s_.layouts[node] = std::move(l);
    s_.step_of[node] = static_cast<int>(s_.steps.size());
    s_.steps.push_back(std::move(st));
  }

  void set_kernel(std::size_t index, const Lowered& lw, const Sig& sig) {
    Step& st = s_.steps[index];
    st.kind = Step::Kind::kernel;
    st.kernel = lw.kernel;
    st.inputs = lw.inputs;
    st.outputs = lw.outputs;
    st.computed = lw.computed;
    st.touched = lw.touched;
    st.scalar_sources = lw.scalar_sources;
    st.space = sig.space;
    st.axes = sig.axes;
    for (NodeId o : lw.outputs) {
      s_.layouts[o] = contiguous_layout(g_[o].shape);
      s_.step_of[o] = static_cast<int>(index);
    }
  }

  // Returns false when a boundary was found (mat_ grew): plan again.
  bool place_all() {
    s_.steps.clear();
    s_.layouts.clear();
    s_.step_of.clear();
    LowerContext ctx{[this](NodeId id) { return mat_.count(id) > 0; },
                     [this](NodeId id) { return layout(id); }};
    for (NodeId id : s_.order) {
      if (!mat_.count(id)) continue;
      const Node& n = g_[id];
      if (is_view(n.op)) {
        Step st;
        st.kind = Step::Kind::view;
        st.node = id;
        auto l = view_layout(n, g_[n.inputs[0]], layout(n.inputs[0]));
        if (!l) {  // strided data reshaped: a copy kernel makes it contiguous
          place_copy(id);
          continue;
        }
        add_step(std::move(st), id, *l);
        continue;
      }
      if (is_library_op(n.op)) {
        Step st;
        st.kind = Step::Kind::library;
        st.node = id;
        add_step(std::move(st), id, contiguous_layout(n.shape));
        continue;
      }
      if (!place_kernel(id, ctx)) return false;
    }
    return true;
  }

  // A view that is no view of its input's layout (a reshape of strided
  // data): one kernel over the input's shape reads it with its strides and
  // writes it contiguous in row-major order, which is the reshape's
  // contiguous layout. It never merges with other kernels (its output has
  // another shape than its space) and never works in place (it reads at
  // other indices than it writes).
  void place_copy(NodeId id) {
    const Node& n = g_[id];
    const NodeId src = n.inputs[0];
    const Shape& space = g_[src].shape;
    const Layout in = layout(src);
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
    if (!g_[src].evaluated()) lw.deps = {src};
    s_.steps.emplace_back();
    set_kernel(s_.steps.size() - 1, lw, Sig{space, {}});
    s_.steps.back().copy = true;
  }

  // Adds the boundaries lowering asked for; false if all were there already
  // (then the roots just cannot share that kernel).
  bool grow(const std::vector<NodeId>& boundaries) {
    bool grew = false;
    for (NodeId b : boundaries) grew |= mat_.insert(b).second;
    return grew;
  }

  bool place_kernel(NodeId id, const LowerContext& ctx) {
    const Sig sig = signature(id, mat_);
    int tries = fuse_ops_ ? 0 : 8;  // unfused: never share a kernel
    for (std::size_t i = s_.steps.size(); i-- > 0 && tries < 8;) {
      Step& st = s_.steps[i];
      if (st.kind != Step::Kind::kernel || st.copy) continue;
      auto merged = merge(Sig{st.space, st.axes}, sig);
      if (!merged) continue;
      ++tries;
      std::vector<NodeId> roots = st.outputs;
      roots.push_back(id);
      Lowered lw = lower(roots, merged->space, merged->axes, ctx);
      if (grow(lw.boundaries)) return false;
      if (!lw.ok) continue;
      bool ready = true;  // everything it loads exists before step i
      for (NodeId d : lw.deps) ready &= s_.step_of.count(d) && s_.step_of.at(d) < static_cast<int>(i);
      if (!ready) continue;
      set_kernel(i, lw, *merged);
      return true;
    }
    Lowered lw = lower({id}, sig.space, sig.axes, ctx);
    if (grow(lw.boundaries)) return false;
    if (!lw.ok) {
      // A kernel of its own that is not ok: every input it needs was
      // materialized, so only a node lowering cannot take comes here.
      internal_error(std::string("fuse: cannot lower ") + op_name(g_[id].op) + " into a kernel of its own");
    }
    s_.steps.emplace_back();
    set_kernel(s_.steps.size() - 1, lw, sig);
    return true;
  }

  // Producers computed by several kernels: keep recomputing, or materialize?
  bool apply_cost_rule() {
    std::unordered_map<NodeId, std::size_t> count;
    std::vector<NodeId> seen_order;
    for (const Step& st : s_.steps) {
      for (NodeId c : st.computed) {
        if (mat_.count(c)) continue;
        if (count[c]++ == 0) seen_order.push_back(c);
      }
    }
    bool grew = false;
    for (NodeId c : seen_order) {
      if (count[c] >= 2 && !recompute_is_cheaper(c, count[c], mat_)) grew |= mat_.insert(c).second;
    }
    return !grew;
  }

  Graph& g_;
  bool fuse_ops_ = true;
  Schedule s_;
  NodeSet mat_;
};

}  // namespace

int Schedule::kernels() const {
  int k = 0;
  for (auto& s : steps) k += s.kind == Step::Kind::kernel;
  return k;
}

Schedule fuse(const std::vector<NodeId>& roots, bool fuse_ops) {
  Partitioner p(roots, fuse_ops);
  if (p.run()) return p.take();
  // Did not converge: one kernel per op is always a plan.
  if (!fuse_ops) internal_error("fuse: planning one kernel per op did not converge");
  return fuse(roots, false);
}

}  // namespace aj

#include "opt/passes/fuse.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace aj {

namespace {

// A kernel that took another root is still small enough to compile quickly.
constexpr std::size_t kMaxMergedInstrs = 3 * static_cast<std::size_t>(kMaxKernelNodes) / 2;
// Outputs one kernel may write (several store streams are cheap; hundreds,
// as the pieces of a large concatenate would give, are not).
constexpr std::size_t kMaxKernelOutputs = 16;
// Merging looks back this many steps and lowers at most kMergeTries of them.
constexpr int kMergeLookback = 32;
constexpr int kMergeTries = 8;
// Rounds of planning; a round only follows when kernels of different
// iteration spaces turned out to share a node. Past this: one kernel per op.
constexpr int kMaxRounds = 8;

using Why = Materialization::Why;

bool is_fusible_reduce(Op op) { return is_reduction(op) && !is_library_op(op); }

struct Sig {
  Shape space;
  std::vector<std::int64_t> axes;
  NodeId of = kNoNode;  // the node whose shape the space is
};

// Positions in the schedule's order by node id: a dense table reused across
// calls (node ids are small and dense; hashing them dominated planning 10^5
// nodes). One Partitioner per thread at a time uses it (fuse() does not
// nest), and every per-node state of the Partitioner is a vector by position.
class Positions {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  explicit Positions(const std::vector<NodeId>& order) {
    Table& t = table();
    const std::size_t cap = graph().capacity();
    if (t.pos.size() < cap) {
      t.pos.resize(cap, 0);
      t.stamp.resize(cap, 0);
    }
    if (++t.epoch == 0) {
      std::fill(t.stamp.begin(), t.stamp.end(), 0);
      t.epoch = 1;
    }
    epoch_ = t.epoch;
    for (std::size_t i = 0; i < order.size(); ++i) {
      t.pos[order[i]] = static_cast<std::uint32_t>(i);
      t.stamp[order[i]] = epoch_;
    }
  }
  // kNone for a node outside the order (evaluated).
  std::uint32_t operator()(NodeId id) const {
    const Table& t = table();
    return id < t.stamp.size() && t.stamp[id] == epoch_ ? t.pos[id] : kNone;
  }

 private:
  struct Table {
    std::vector<std::uint32_t> pos, stamp;
    std::uint32_t epoch = 0;
  };
  static Table& table() {
    static thread_local Table t;
    return t;
  }
  std::uint32_t epoch_ = 0;
};

// The iteration space of the kernel that computes root x: the first reduction
// or scan reached through computed elementwise ops (its input shape and
// axes), or x's own shape. `seen` is scratch marked with `mark` (no
// allocation per call).
template <class IsMat>
Sig signature(NodeId x, const IsMat& is_mat, const Positions& pos, std::vector<std::uint32_t>& seen,
              std::uint32_t mark) {
  Graph& g = graph();
  std::vector<NodeId> stack{x};
  seen[pos(x)] = mark;
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    const Node& n = g[id];
    if (is_fusible_reduce(n.op)) return {g[n.inputs[0]].shape, n.ints, n.inputs[0]};
    if (is_scan(n.op)) return {n.shape, n.ints, id};  // walks its axis as a reduction does
    if (!is_elementwise(n.op)) continue;
    for (NodeId in : n.inputs) {
      const Node& m = g[in];
      if (m.evaluated() || is_mat(in) || seen[pos(in)] == mark) continue;
      if (is_elementwise(m.op) || is_fusible_reduce(m.op) || is_scan(m.op)) {
        seen[pos(in)] = mark;
        stack.push_back(in);
      }
    }
  }
  return {g[x].shape, {}, x};
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

// A value that costs nothing to recompute and whose graph cannot grow: a
// constant, an index generator or a view of one (a fill). A handle holding
// one does not make the evaluation store it.
bool free_value(NodeId id) {
  const Graph& g = graph();
  while (!g[id].evaluated() && is_view(g[id].op)) id = g[id].inputs[0];
  const Node& n = g[id];
  return !n.evaluated() && (n.op == Op::Constant || (is_generator(n.op) && !counts_as_work(n.op)));
}

bool same_line(const Loc& a, const Loc& b) {
  if (a.line() != b.line() || a.line() == 0) return false;
  return a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0;
}

class Partitioner {
 public:
  Partitioner(const std::vector<NodeId>& roots, bool fuse_ops)
      : g_(graph()), fuse_ops_(fuse_ops), s_(ordered(roots)), pos_(s_.order) {
    const std::size_t n = s_.order.size();
    mat_.assign(n, 0);
    evaluations_.assign(n, 0);
    seen_.assign(n, 0);
    ctx_.is_materialized = [this](NodeId id) { return is_mat(id); };
    // A node materialized since an earlier kernel was lowered may have no
    // step yet when that kernel is lowered again for a merge: its layout is
    // a placeholder, and the merge is refused (its deps are not ready).
    ctx_.layout = [this](NodeId id) {
      if (!g_[id].evaluated() && !s_.layouts.count(id)) return contiguous_layout(g_[id].shape);
      return layout(id);
    };
    ctx_.evaluations_elsewhere = [this](NodeId id) {
      const std::uint32_t p = pos_(id);
      return p == Positions::kNone ? std::int64_t{0} : evaluations_[p];
    };
    for (NodeId r : roots) mark(r, std::nullopt);
    const TemporaryRule temporary(roots);
    for (NodeId id : s_.order) {
      const Node& n = g_[id];
      if (!fuse_ops && !is_view(n.op)) mark(id, std::nullopt);
      if (n.numel() == 0 && counts_as_work(n.op)) mark(id, Materialization{id, Why::empty});
      if (g_.ext_count(id) > 0 && !is_mat(id) && !free_value(id) && !temporary(id)) {
        mark(id, Materialization{id, Why::held});
      }
      if (!is_library_op(n.op)) continue;
      mark(id, std::nullopt);
      for (NodeId in : n.inputs) {
        if (!g_[in].evaluated()) mark(in, Materialization{in, Why::library_operand, id});
      }
    }
    if (fuse_ops) cap_kernel_sizes();
  }

  // Plans until every node is evaluated at most once per element. Returns
  // false if that does not settle (the caller then plans one kernel per op).
  bool run() {
    for (int round = 0; round < kMaxRounds; ++round) {
      if (!place_all()) return false;
      if (!grow_for_work()) return true;
    }
    return false;
  }

  Schedule take() {
    s_.materialized = std::move(why_);
    return std::move(s_);
  }

 private:
  // Marks `id` materialized (with the reason, unless it is a root or a step
  // by nature); a view that is a step of its own needs its input to exist.
  // Returns the nodes newly marked.
  std::vector<NodeId> mark(NodeId id, std::optional<Materialization> why) {
    std::vector<NodeId> fresh;
    while (true) {
      std::uint8_t& m = mat_[pos_(id)];
      if (m) break;
      m = 1;
      fresh.push_back(id);
      if (why) why_.push_back(*why);
      const Node& n = g_[id];
      if (!is_view(n.op) || g_[n.inputs[0]].evaluated()) break;
      why = Materialization{n.inputs[0], Why::view_base, id};
      id = n.inputs[0];
    }
    return fresh;
  }

  // The size cap, decided before placement from an estimate of each node's
  // kernel: the nodes it computes (constants and loads are free). Where the
  // estimate passes the cap it is counted exactly (shared producers once);
  // past the cap the costliest inputs are materialized. Chains are cut every
  // kMaxKernelNodes nodes, so the pieces of a periodic chain compile once.
  void cap_kernel_sizes() {
    std::vector<std::int64_t>& w = size_;
    w.assign(s_.order.size(), 0);
    budget_ = 64 * static_cast<std::int64_t>(s_.order.size()) + 4096;
    auto base = [&](NodeId in) {
      while (!g_[in].evaluated() && !is_mat(in) && is_view(g_[in].op)) in = g_[in].inputs[0];
      return in;
    };
    auto stored = [&](NodeId b) -> std::int64_t {
      const Node& m = g_[b];
      if (m.evaluated() || is_mat(b) || m.op == Op::Constant) return 0;
      return w[pos_(b)];
    };
    // One level of the estimate: 1 + its distinct producers' sizes (the same
    // producer twice, x * x or x[1:] + x[:-1], is computed once).
    auto shallow = [&](NodeId id) {
      const Node& n = g_[id];
      NodeId bases[3] = {kNoNode, kNoNode, kNoNode};
      std::int64_t sum = 1;
      for (std::size_t k = 0; k < n.inputs.size() && k < 3; ++k) {
        bases[k] = base(n.inputs[k]);
        bool again = false;
        for (std::size_t j = 0; j < k; ++j) again |= bases[j] == bases[k];
        if (!again) sum += stored(bases[k]);
      }
      return sum;
    };
    // A producer's size now: what was counted when it was visited, or less
    // if a cut since then materialized one of its own producers.
    auto cost = [&](NodeId b) -> std::int64_t {
      const std::int64_t was = stored(b);
      return was == 0 ? 0 : std::min(was, shallow(b));
    };
    // A second bound, for DAGs whose producers share most of their nodes
    // (a loop reading its state twice, where the sum above doubles each
    // step): the kernel of the node at position i computes nodes at
    // positions from the earliest one it reaches (`reach`) to i, so at most
    // i - reach + 1 of them (a free producer, a generator, adds one).
    std::vector<std::size_t> reach(s_.order.size(), 0);
    auto estimate = [&](NodeId id, std::size_t i) {
      const Node& n = g_[id];
      NodeId bases[3] = {kNoNode, kNoNode, kNoNode};
      std::int64_t sum = 1;
      for (std::size_t k = 0; k < n.inputs.size() && k < 3; ++k) {
        bases[k] = base(n.inputs[k]);
        bool again = false;
        for (std::size_t j = 0; j < k; ++j) again |= bases[j] == bases[k];
        if (!again) sum += cost(bases[k]);
      }
      std::size_t lo = i;
      std::int64_t extra = 0;
      for (NodeId in : n.inputs) {
        const NodeId b = base(in);
        if (stored(b) == 0) continue;  // stored, evaluated or a constant
        const std::uint32_t p = pos_(b);
        if (p == Positions::kNone || free_value(b)) {
          ++extra;
          continue;
        }
        lo = std::min(lo, reach[p]);
      }
      reach[i] = lo;
      sum = std::min(sum, static_cast<std::int64_t>(i - lo + 1) + extra);
      if (sum > kMaxKernelNodes) sum = exact_size(id, kMaxKernelNodes + 1);
      return sum;
    };
    // Where a kernel would pass the cap, the whole frontier is cut: every
    // value computed since the last cut that a later node reads, at the
    // position (in the latter half of the stretch since the last cut) where
    // the fewest such values are open. In a loop that is the end of an
    // iteration (a lazy Mandelbrot's zr, zi and count), so each piece is the
    // same number of whole iterations, the same kernel, compiled once; and
    // no value of the stretch is read by two pieces (cutting one state at a
    // time left its siblings' producers needed by two kernels, all stored).
    const std::size_t count = s_.order.size();
    std::vector<std::size_t> last(count, 0);  // the last position reading each node
    for (std::size_t i = 0; i < count; ++i) {
      for (NodeId in : g_[s_.order[i]].inputs) {
        NodeId b = in;
        while (!g_[b].evaluated() && is_view(g_[b].op)) b = g_[b].inputs[0];
        const std::uint32_t p = pos_(b);
        if (p != Positions::kNone) last[p] = std::max(last[p], i);
      }
    }
    // A value the frontier counts: computed by a kernel, not stored already.
    auto open_value = [&](std::size_t i) {
      const NodeId id = s_.order[i];
      const Node& n = g_[id];
      return !n.evaluated() && !is_view(n.op) && !is_library_op(n.op) && !is_mat(id) && !free_value(id);
    };
    std::size_t from = 0;            // the first position since the last cut
    std::size_t piece = 0;           // the length of the last piece cut
    std::vector<std::int64_t> open;  // values open after each position since `from`
    std::int64_t now_open = 0;
    std::vector<std::int64_t> closing(count, 0);  // open values whose last reader is at a position
    std::vector<std::size_t> touched;             // the entries of `closing` set since `from`
    for (std::size_t i = 0; i < count; ++i) {
      const NodeId id = s_.order[i];
      const Node& n = g_[id];
      now_open -= closing[i];
      if (open_value(i) && last[i] > i) {
        ++now_open;
        ++closing[last[i]];
        touched.push_back(last[i]);
      }
      open.push_back(now_open);
      if (is_view(n.op) || is_library_op(n.op)) continue;
      std::int64_t size = estimate(id, i);
      if (size > kMaxKernelNodes && i > from + 1) {
        // The cut position: the fewest open values, the latest on ties, but
        // the previous piece's length where that is as good (a loop's pieces
        // then stay in step with its iterations).
        std::size_t at = i - 1;
        for (std::size_t p = i - 1; p > from && p >= from + (i - from) / 2; --p) {
          if (open[p - from] < open[at - from]) at = p;
        }
        if (const std::size_t same = from + piece - 1; piece > 0 && same < i && same > from &&
                                                        same >= from + (i - from) / 2 &&
                                                        open[same - from] == open[at - from]) {
          at = same;
        }
        bool cut_any = false;
        for (std::size_t p = from; p <= at; ++p) {
          if (last[p] > at && open_value(p)) {
            mark(s_.order[p], Materialization{s_.order[p], Why::size_cap, id, kMaxKernelNodes});
            cut_any = true;
          }
        }
        if (cut_any) {
          // Everything before the cut is stored or read no more: estimate
          // again from the position after it.
          for (std::size_t t : touched) closing[t] = 0;
          touched.clear();
          open.clear();
          now_open = 0;
          piece = at + 1 - from;
          from = at + 1;
          i = at;  // the loop's ++i resumes after the cut
          continue;
        }
      }
      while (size > kMaxKernelNodes) {
        // Cut the costliest producer, preferring one several nodes read (a
        // loop's state, where a stencil stores its levels anyway).
        NodeId cut = kNoNode;
        std::int64_t most = 0;
        bool shared = false;
        for (NodeId in : n.inputs) {
          const NodeId b = base(in);
          const std::int64_t c = cost(b);
          const bool sh = g_[b].uses > 1;
          if (c > 0 && (sh > shared || (sh == shared && c > most))) most = c, cut = b, shared = sh;
        }
        if (cut == kNoNode) break;
        mark(cut, Materialization{cut, Why::size_cap, id, kMaxKernelNodes});
        size = estimate(id, i);
      }
      w[i] = size;
    }
  }

  // Nodes computed in the kernel of `id` (views and constants free, loads
  // free), counted up to `limit`. Counting costs up to `limit` visits; past a
  // budget linear in the graph it is not done (the estimate is trusted, so a
  // kernel is cut early, never late): planning stays linear even where every
  // estimate overcounts (a DAG that reads each level twice).
  std::int64_t exact_size(NodeId id, std::int64_t limit) {
    if (budget_ <= 0) return limit;
    const std::uint32_t mark = ++seen_mark_;
    std::vector<NodeId>& stack = scratch_;
    stack.assign(1, id);
    seen_[pos_(id)] = mark;
    std::int64_t count = 0;
    while (!stack.empty() && count < limit) {
      const NodeId x = stack.back();
      stack.pop_back();
      --budget_;
      const Node& n = g_[x];
      if (!is_view(n.op) && n.op != Op::Constant) ++count;
      for (NodeId in : n.inputs) {
        const Node& m = g_[in];
        if (m.evaluated() || is_mat(in) || seen_[pos_(in)] == mark) continue;
        seen_[pos_(in)] = mark;
        stack.push_back(in);
      }
    }
    return count;
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
    step_work_.emplace_back();
  }

  // The work rule's ledger: what each step evaluates, summed per node.
  void count_work(std::size_t step, int sign) {
    for (const auto& [id, points] : step_work_[step]) evaluations_[pos_(id)] += sign * points;
  }

  void set_kernel(std::size_t index, Lowered&& lw, const Sig& sig) {
    Step& st = s_.steps[index];
    st.kind = Step::Kind::kernel;
    st.kernel = std::move(lw.kernel);
    st.inputs = std::move(lw.inputs);
    st.outputs = std::move(lw.outputs);
    st.computed = std::move(lw.computed);
    st.touched = std::move(lw.touched);
    st.scalar_sources = std::move(lw.scalar_sources);
    st.space = sig.space;
    st.axes = sig.axes;
    st.space_of = sig.of;
    for (NodeId o : st.outputs) {
      s_.layouts[o] = contiguous_layout(g_[o].shape);
      s_.step_of[o] = static_cast<int>(index);
    }
    step_work_[index] = std::move(lw.evaluations);
  }

  // One pass over the nodes in order: each materialized node gets its step.
  // False when a node could not be placed (the caller falls back).
  bool place_all() {
    s_.steps.clear();
    s_.layouts.clear();
    s_.step_of.clear();
    step_work_.clear();
    std::fill(evaluations_.begin(), evaluations_.end(), 0);
    for (NodeId id : s_.order) {
      if (!is_mat(id) || s_.step_of.count(id)) continue;
      if (!place_with_boundaries(id)) return false;
    }
    return true;
  }

  // Places `id`; where lowering reports boundaries, they are materialized
  // and placed first (earliest first), then `id` again. Nothing before them
  // is replanned: a kernel placed earlier that computes one of them inline
  // shows in the work ledger, and grow_for_work starts another round.
  bool place_with_boundaries(NodeId id) {
    std::vector<NodeId> todo{id};
    std::vector<Materialization> found;
    while (!todo.empty()) {
      const NodeId x = todo.back();
      if (s_.step_of.count(x)) {
        todo.pop_back();
        continue;
      }
      found.clear();
      if (place(x, &found)) {
        todo.pop_back();
        continue;
      }
      std::vector<NodeId> fresh;
      for (const Materialization& m : found) {
        for (NodeId f : mark(m.node, m)) fresh.push_back(f);
      }
      if (fresh.empty()) return false;  // no progress: give up this plan
      std::sort(fresh.begin(), fresh.end(), [&](NodeId a, NodeId b) { return pos_(a) > pos_(b); });
      todo.insert(todo.end(), fresh.begin(), fresh.end());
    }
    return true;
  }

  // True when placed; false with the boundaries lowering asked for.
  bool place(NodeId id, std::vector<Materialization>* found) {
    const Node& n = g_[id];
    if (is_view(n.op)) {
      Step st;
      st.kind = Step::Kind::view;
      st.node = id;
      auto l = view_layout(n, g_[n.inputs[0]], layout(n.inputs[0]));
      if (!l) {  // strided data reshaped: a copy kernel makes it contiguous
        place_copy(id);
        return true;
      }
      add_step(std::move(st), id, *l);
      return true;
    }
    if (is_library_op(n.op)) {
      Step st;
      st.kind = Step::Kind::library;
      st.node = id;
      add_step(std::move(st), id, contiguous_layout(n.shape));
      return true;
    }
    return place_kernel(id, found);
  }

  // A view that is no view of its input's layout (a reshape of strided
  // data): one kernel over the input's shape reads it with its strides and
  // writes it contiguous in row-major order, which is the reshape's
  // contiguous layout. It never merges with other kernels (its output has
  // another shape than its space) and never works in place (it reads at
  // other indices than it writes).
  void place_copy(NodeId id) {
    const NodeId src = g_[id].inputs[0];
    s_.steps.emplace_back();
    step_work_.emplace_back();
    set_kernel(s_.steps.size() - 1, lower_copy(id, layout(src)), Sig{g_[src].shape, {}, src});
    s_.steps.back().copy = true;
  }

  // Into one of the last kernels when the spaces allow, the merged kernel
  // lowers without a boundary, stays under the caps and reads only what
  // exists before it; else a kernel of its own.
  bool place_kernel(NodeId id, std::vector<Materialization>* found) {
    const Sig sig = signature(id, [this](NodeId x) { return is_mat(x); }, pos_, seen_, ++seen_mark_);
    int tries = fuse_ops_ ? 0 : kMergeTries;  // unfused: never share a kernel
    int looked = 0;
    for (std::size_t i = s_.steps.size(); i-- > 0 && tries < kMergeTries && looked < kMergeLookback; ++looked) {
      const Step& st = s_.steps[i];
      if (st.kind != Step::Kind::kernel || st.copy || st.outputs.size() >= kMaxKernelOutputs) continue;
      auto merged = merge(Sig{st.space, st.axes, st.space_of}, sig);
      if (!merged) continue;
      // Not worth lowering when it cannot fit. (The merged kernel computes
      // shared producers once: a loop's states cut together share nearly
      // all their nodes, so the sum of the two sizes says nothing.)
      if (!size_.empty() && std::max(st.kernel.instrs.size(), static_cast<std::size_t>(size_[pos_(id)])) > kMaxMergedInstrs) {
        continue;
      }
      ++tries;
      std::vector<NodeId> roots = st.outputs;
      roots.push_back(id);
      count_work(i, -1);  // what step i computes now is not "elsewhere"
      Lowered lw = lower(roots, merged->space, merged->axes, ctx_);
      bool ready = lw.ok && lw.kernel.instrs.size() <= kMaxMergedInstrs;
      for (NodeId d : lw.deps) ready &= s_.step_of.count(d) && s_.step_of.at(d) < static_cast<int>(i);
      if (ready) set_kernel(i, std::move(lw), *merged);
      count_work(i, +1);
      if (ready) return true;
    }
    Lowered lw = lower({id}, sig.space, sig.axes, ctx_);
    if (!lw.boundaries.empty()) {
      *found = std::move(lw.why);
      return false;
    }
    bool ready = lw.ok;
    for (NodeId d : lw.deps) ready &= s_.step_of.count(d) > 0;
    if (!ready) {
      // A kernel of its own that is not ok: every input it needs was
      // materialized and placed, so only a node lowering cannot take comes here.
      internal_error(std::string("fuse: cannot lower ") + op_name(g_[id].op) + " into a kernel of its own");
    }
    s_.steps.emplace_back();
    step_work_.emplace_back();
    set_kernel(s_.steps.size() - 1, std::move(lw), sig);
    count_work(s_.steps.size() - 1, +1);
    return true;
  }

  // After a round: a node evaluated at more points than it has elements
  // (kernels of different spaces computing it, or one placed before it was
  // found to be a boundary) is materialized; true if another round is due.
  bool grow_for_work() {
    std::unordered_map<NodeId, std::int64_t> kernels;
    for (const auto& work : step_work_) {
      for (const auto& [id, points] : work) ++kernels[id];
    }
    bool again = false;
    for (std::size_t i = 0; i < s_.order.size(); ++i) {
      const NodeId id = s_.order[i];
      if (evaluations_[i] <= g_[id].numel()) continue;
      // Two kernels may recompute a node worth it, each once per element.
      if (kernels[id] <= 2 && evaluations_[i] <= work_limit(g_, id, ctx_.is_materialized)) continue;
      again = true;
      mark(id, Materialization{id, Why::several_kernels, kNoNode, kernels[id]});
    }
    return again;
  }

  static Schedule ordered(const std::vector<NodeId>& roots) {
    Schedule s;
    s.roots = roots;
    s.order = unevaluated_order(roots);
    return s;
  }
  bool is_mat(NodeId id) const {
    const std::uint32_t p = pos_(id);
    return p != Positions::kNone && mat_[p];
  }

  Graph& g_;
  bool fuse_ops_ = true;
  Schedule s_;
  Positions pos_;                   // position in s_.order; the vectors below are by position
  std::vector<std::uint8_t> mat_;   // materialized: a step of its own
  std::vector<std::int64_t> size_;  // nodes the kernel of a node computes (cap_kernel_sizes)
  std::vector<std::int64_t> evaluations_;  // the work ledger: points all steps evaluate a node at
  std::vector<std::uint32_t> seen_;  // walk marks (signature, exact_size)
  std::uint32_t seen_mark_ = 0;
  std::vector<NodeId> scratch_;
  std::int64_t budget_ = 0;          // exact_size visits left
  LowerContext ctx_;
  std::vector<Materialization> why_;
  // Per step, the (node, points) it evaluates (evaluations_ is their sum).
  std::vector<std::vector<std::pair<NodeId, std::int64_t>>> step_work_;
};

}  // namespace

TemporaryRule::TemporaryRule(const std::vector<NodeId>& roots) {
  const Graph& g = graph();
  for (NodeId r : roots) {
    const Loc& l = g[r].loc;
    if (l.line() == 0) continue;
    bool known = false;
    for (std::size_t i = 0; i < n_ && !known; ++i) known = same_line(at(i), l) && at(i).column() == l.column();
    if (known) continue;
    if (n_ < kInline) inline_[n_] = l;
    else more_.push_back(l);
    ++n_;
  }
}

bool TemporaryRule::operator()(NodeId id) const {
  const Node& n = graph()[id];
  if (graph().ext_count(id) != 1) return false;
  bool line = false;
  for (std::size_t i = 0; i < n_; ++i) {
    const Loc& l = at(i);
    if (!same_line(l, n.loc)) continue;
    if (l.column() == n.loc.column()) return false;  // made by a root's own call site
    line = true;
  }
  return line;
}

int Schedule::kernels() const {
  int k = 0;
  for (auto& s : steps) k += s.kind == Step::Kind::kernel;
  return k;
}

namespace {

// In a plan with collectives, the steps are ordered again so that each
// exchange goes on while other steps run (exec/program.hpp starts it and
// waits at its first reader): among the steps whose inputs are made, the
// next collective first, then the steps it needs, then steps that read no
// collective's result, then the rest; ties by the order fuse chose. The next
// collective is the one that the fewest steps not yet placed stand before
// (views not counted; ties: fuse's order), so that the gradients' exchanges
// of a backward pass start in the order the gradients are made; in a plan
// with a send or recv, whose pairing across ranks is the program's order,
// collectives keep fuse's order. The same schedule on every rank gives the
// same order. Plans without collectives are left as they are.
void start_collectives_early(Schedule& s) {
  const Graph& g = graph();
  const std::size_t n = s.steps.size();
  const auto is_collective = [&](const Step& st) {
    return st.kind == Step::Kind::library && g[st.node].op == Op::Collective;
  };
  std::vector<std::size_t> collectives;
  for (std::size_t k = 0; k < n; ++k) {
    if (is_collective(s.steps[k])) collectives.push_back(k);
  }
  if (collectives.empty()) return;
  // What each step reads, as the steps that make it.
  std::vector<std::vector<std::size_t>> deps(n);
  std::vector<char> reads_exchange(n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const Step& st = s.steps[k];
    const auto dep = [&](NodeId in) {
      if (in == kNoNode) return;
      const auto it = s.step_of.find(in);
      if (it == s.step_of.end() || static_cast<std::size_t>(it->second) == k) return;
      deps[k].push_back(static_cast<std::size_t>(it->second));
      if (is_collective(s.steps[static_cast<std::size_t>(it->second)])) reads_exchange[k] = 1;
    };
    if (st.kind == Step::Kind::kernel) {
      for (NodeId in : st.inputs) dep(in);
    } else {
      for (NodeId in : g[st.node].inputs) dep(in);
      dep(g[st.node].after);
    }
  }
  // needed[c][k]: step k makes (transitively) what collective c reads.
  std::vector<std::vector<char>> needed(collectives.size(), std::vector<char>(n, 0));
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    std::vector<std::size_t> stack{collectives[c]};
    while (!stack.empty()) {
      const std::size_t k = stack.back();
      stack.pop_back();
      for (std::size_t d : deps[k]) {
        if (!needed[c][d]) needed[c][d] = 1, stack.push_back(d);
      }
    }
  }
  bool point_to_point = false;
  for (std::size_t k : collectives) {
    const auto kind = static_cast<CollectiveKind>(g[s.steps[k].node].i0);
    point_to_point = point_to_point || kind == CollectiveKind::send || kind == CollectiveKind::recv;
  }
  // before[c]: the steps not yet placed that collective c needs (views,
  // which compute nothing, not counted).
  std::vector<char> works(n, 0);
  for (std::size_t k = 0; k < n; ++k) works[k] = s.steps[k].kind != Step::Kind::view;
  std::vector<std::size_t> before(collectives.size(), 0);
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    for (std::size_t k = 0; k < n; ++k) before[c] += needed[c][k] && works[k];
  }
  std::vector<char> done(n, 0);
  std::vector<std::size_t> order;
  std::size_t next_c = 0;  // the collective placed next (collectives.size(): none left)
  const auto choose_next = [&] {
    if (point_to_point) {
      while (next_c < collectives.size() && done[collectives[next_c]]) ++next_c;
      return;
    }
    next_c = collectives.size();
    for (std::size_t c = 0; c < collectives.size(); ++c) {
      if (!done[collectives[c]] && (next_c == collectives.size() || before[c] < before[next_c])) next_c = c;
    }
  };
  choose_next();
  const auto ready = [&](std::size_t k) {
    if (done[k]) return false;
    for (std::size_t d : deps[k]) {
      if (!done[d]) return false;
    }
    return !is_collective(s.steps[k]) || (next_c < collectives.size() && collectives[next_c] == k);
  };
  while (order.size() < n) {
    std::size_t pick = n;
    int best = 5;
    for (std::size_t k = 0; k < n && best > 0; ++k) {
      if (!ready(k)) continue;
      const int rank = is_collective(s.steps[k])                               ? 0
                       : next_c < collectives.size() && needed[next_c][k] ? 1
                       : !reads_exchange[k]                                    ? 2
                                                                               : 3;
      if (rank < best) best = rank, pick = k;
    }
    if (pick == n) internal_error("fuse: the steps of a plan with collectives have no order");
    done[pick] = 1;
    order.push_back(pick);
    for (std::size_t c = 0; c < collectives.size(); ++c) before[c] -= needed[c][pick] && works[pick];
    if (is_collective(s.steps[pick])) choose_next();
  }
  std::vector<int> at(n);
  std::vector<Step> steps;
  steps.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    at[order[i]] = static_cast<int>(i);
    steps.push_back(std::move(s.steps[order[i]]));
  }
  s.steps = std::move(steps);
  for (auto& [node, k] : s.step_of) k = at[static_cast<std::size_t>(k)];
}

}  // namespace

Schedule fuse(const std::vector<NodeId>& roots, bool fuse_ops) {
  {
    Partitioner p(roots, fuse_ops);  // gone before another starts (Positions)
    if (p.run()) {
      Schedule s = p.take();
      start_collectives_early(s);
      return s;
    }
  }
  // Did not converge: one kernel per op is always a plan.
  if (!fuse_ops) internal_error("fuse: planning one kernel per op did not converge");
  return fuse(roots, false);
}

}  // namespace aj

// materialize: a plan made again at other numbers (see materialize.hpp).
#include "opt/materialize.hpp"

#include <algorithm>
#include <unordered_map>

#include "opt/passes/concat_slices.hpp"

namespace aj::opt {

namespace {

bool stored_for_work(Materialization::Why w) {
  using Why = Materialization::Why;
  return w == Why::several_maps || w == Why::broadcast || w == Why::several_kernels;
}

}  // namespace

bool materialize(const Plan& kept, Plan* out, std::string* why) {
  const Graph& g = graph();
  const Schedule& ks = kept.schedule;
  Plan p;
  Schedule& s = p.schedule;
  s.roots = ks.roots;
  s.order = ks.order;
  s.materialized = ks.materialized;
  auto fail = [&](const std::string& w) {
    *why = w;
    return false;
  };

  // A kernel loads what steps before it make (the kept plan's step_of) and
  // computes the rest, as when fuse lowered it: a node fuse marked stored
  // only after lowering it is computed there and stored by a later step.
  std::size_t now = 0;  // the step being made
  auto layout_of = [&](NodeId id) -> Layout {
    const Node& n = g[id];
    if (n.evaluated()) return {n.strides, n.offset};
    return s.layouts.at(id);
  };
  LowerContext ctx;
  ctx.is_materialized = [&](NodeId id) {
    auto it = ks.step_of.find(id);
    return it != ks.step_of.end() && static_cast<std::size_t>(it->second) < now;
  };
  ctx.layout = [&](NodeId id) { return s.layouts.at(id); };

  // The work rule's ledger: points each node is evaluated at, by how many
  // kernels; and the points the kernels that load a stored node would
  // evaluate it at instead.
  std::unordered_map<NodeId, std::pair<std::int64_t, int>> would;
  struct Evaluated {
    std::int64_t points = 0;  // over every kernel
    int kernels = 0;
    std::int64_t most = 0;    // the most points of one kernel
    bool one_map = false;     // some kernel evaluates it under one index map
  };
  std::unordered_map<NodeId, Evaluated> evaluated;
  std::unordered_map<NodeId, std::int64_t> most;  // the most points of one load

  for (std::size_t k = 0; k < ks.steps.size(); ++k) {
    const Step& from = ks.steps[k];
    now = k;
    Step st;
    st.kind = from.kind;
    st.node = from.node;
    st.copy = from.copy;
    st.axes = from.axes;
    st.space_of = from.space_of;
    switch (from.kind) {
      case Step::Kind::view: {
        const Node& n = g[from.node];
        auto l = view_layout(n, g[n.inputs[0]], layout_of(n.inputs[0]));
        if (!l) return fail("a view of the kept plan is no view of its input's layout here");
        s.layouts[from.node] = std::move(*l);
        s.step_of[from.node] = static_cast<int>(k);
        break;
      }
      case Step::Kind::library:
        s.layouts[from.node] = contiguous_layout(g[from.node].shape);
        s.step_of[from.node] = static_cast<int>(k);
        break;
      case Step::Kind::kernel: {
        if (from.space_of == kNoNode) return fail("a kernel step without its space's node");
        st.space = g[from.space_of].shape;
        Lowered lw = from.copy ? lower_copy(from.outputs[0], layout_of(g[from.outputs[0]].inputs[0]))
                               : lower(from.outputs, st.space, from.axes, ctx);
        if (!lw.ok || !lw.boundaries.empty()) return fail("a kernel of the kept plan does not lower here");
        if (lw.inputs != from.inputs || lw.outputs != from.outputs || lw.scalar_sources != from.scalar_sources) {
          return fail("a kernel of the kept plan reads or writes other nodes here");
        }
        for (NodeId d : lw.deps) {
          auto it = s.step_of.find(d);
          if (it == s.step_of.end()) return fail("a kernel reads a node no earlier step makes here");
        }
        for (std::size_t i = 0; i < lw.evaluations.size(); ++i) {
          const auto& [id, points] = lw.evaluations[i];
          Evaluated& e = evaluated[id];
          e.points += points;
          ++e.kernels;
          e.most = std::max(e.most, points);
          e.one_map |= lw.evaluation_maps[i] == 1;
        }
        for (const auto& [id, points] : lw.loads) {
          auto& e = would[id];
          e.first += points;
          ++e.second;
          most[id] = std::max(most[id], points);
        }
        st.kernel = std::move(lw.kernel);
        st.inputs = std::move(lw.inputs);
        st.outputs = std::move(lw.outputs);
        st.computed = std::move(lw.computed);
        st.touched = std::move(lw.touched);
        st.scalar_sources = std::move(lw.scalar_sources);
        for (NodeId o : st.outputs) {
          s.layouts[o] = contiguous_layout(g[o].shape);
          s.step_of[o] = static_cast<int>(k);
        }
        break;
      }
    }
    s.steps.push_back(std::move(st));
  }

  // The work rule at these numbers: nothing evaluated at more points than
  // fuse allows (grow_for_work's rule), and what was stored for it would
  // still break it. (Judged with every step's node stored, as fuse's last
  // round judged it.)
  now = ks.steps.size();
  for (const auto& [id, e] : evaluated) {
    const std::int64_t numel = g[id].numel();
    if (e.points <= numel) continue;
    // Past its elements only as fuse allows it (lowering's within_work,
    // grow_for_work): in two kernels, within work_limit, each at most once
    // per element, the one lowered second under one index map. (One kernel
    // evaluating a node under two maps past its elements is a several_maps
    // boundary for fuse.)
    if (e.kernels == 2 && e.points <= work_limit(g, id, ctx.is_materialized) && e.most <= numel && e.one_map) {
      continue;
    }
    return fail("the work rule: the kept plan evaluates a node at more points than fuse allows here");
  }
  for (Materialization& m : s.materialized) {
    if (!stored_for_work(m.why)) continue;
    auto it = would.find(m.node);
    if (it == would.end()) continue;  // loaded by no kernel (a later round's rest)
    // The kernels that load it would compute it, and the one that stores it
    // may compute it for its other outputs still: the ledger fuse judged.
    auto [points, kernels] = it->second;
    if (auto own = evaluated.find(m.node); own != evaluated.end()) {
      points += own->second.points;
      kernels += own->second.kernels;
    }
    if (m.why == Materialization::Why::broadcast) m.count = most[m.node];  // (explain's figure, at these numbers)
    const bool inline_here = points <= g[m.node].numel() ||
                             (kernels == 2 && points <= work_limit(g, m.node, ctx.is_materialized));
    if (inline_here && kernels <= 2) {
      return fail("%" + std::to_string(m.node) + ", stored for the work rule, would be computed inline here");
    }
  }

  place_concat_slices(s);
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step &a = s.steps[k], &b = ks.steps[k];
    if (a.kind != Step::Kind::kernel) continue;
    if (!same_kernel(a.kernel, b.kernel, /*numbers=*/false)) return fail("a kernel of the kept plan has another structure here");
    if (a.into != b.into) return fail("a concatenation's pieces are placed otherwise here");
  }
  p.buffers = assign_buffers(s);
  p.epilogues = decide_epilogues(s, p.buffers);
  std::shared_ptr<Program> program = make_program(p, {}, {}, Device::cpu(), false, &p.value_nodes);
  if (!program) return fail("the program reads a node no step makes");
  p.program = std::move(program);
  *out = std::move(p);
  return true;
}

}  // namespace aj::opt

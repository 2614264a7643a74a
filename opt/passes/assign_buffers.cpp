#include "opt/passes/assign_buffers.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace aj {

namespace {

std::size_t bytes_of(const Node& n) {
  return static_cast<std::size_t>(n.numel()) * itemsize(n.dtype);
}

class Planner {
 public:
  explicit Planner(const Schedule& s) : s_(s), g_(graph()) {
    for (NodeId id : s.order) {
      for (NodeId in : g_[id].inputs) consumers_[in].push_back(id);
      if (g_[id].after != kNoNode) ++waiters_[g_[id].after];
    }
    // release_[n]: the last step after which node n no longer holds its
    // inputs: its own step if a step produces it, else (a node computed
    // inside kernels) when its last consumer lets go; kEnd if a handle or a
    // node outside this evaluation keeps it.
    for (auto it = s.order.rbegin(); it != s.order.rend(); ++it) {
      NodeId id = *it;
      auto st = s.step_of.find(id);
      if (st != s.step_of.end()) {
        release_[id] = st->second;
      } else if (held_outside(id)) {
        release_[id] = BufferPlan::kEnd;
      } else {
        int r = -1;
        for (NodeId c : consumers_[id]) r = std::max(r, release_.at(c));
        release_[id] = r;
      }
    }
  }

  BufferPlan run() {
    plan();
    return std::move(p_);
  }

  void plan() {
    collect_values();
    find_donations();
    pack();
  }

 private:
  bool held_outside(NodeId id) const {
    const Node& n = g_[id];
    auto it = consumers_.find(id);
    std::size_t inside = it == consumers_.end() ? 0 : it->second.size();
    // Nodes of this evaluation ordered after it (Node::after) use it but
    // never read it.
    auto w = waiters_.find(id);
    if (w != waiters_.end()) inside += w->second;
    return g_.ext_count(id) > 0 || n.uses != inside;
  }

  // Why a reader of `id` is left after step k (or a handle): nullopt when
  // none is.
  struct Held {
    NotInPlace::Why why;
    NodeId other = kNoNode;
    int step = -1;
  };
  std::optional<Held> reader_after(NodeId id, int k) const {
    if (g_.ext_count(id) > 0) return Held{NotInPlace::Why::held};
    if (held_outside(id)) return Held{NotInPlace::Why::read_outside};
    if (std::find(s_.roots.begin(), s_.roots.end(), id) != s_.roots.end()) return Held{NotInPlace::Why::root};
    auto it = consumers_.find(id);
    if (it == consumers_.end()) return std::nullopt;
    for (NodeId c : it->second) {
      const int release = release_.at(c);
      if (release > k) return Held{NotInPlace::Why::later_reader, c, release};
      // A view step shares id's buffer: it must be free too.
      auto st = s_.step_of.find(c);
      if (st != s_.step_of.end() && s_.steps[static_cast<std::size_t>(st->second)].kind == Step::Kind::view &&
          reader_after(c, k)) {
        return Held{NotInPlace::Why::shared, c};
      }
    }
    return std::nullopt;
  }

  // No reader of `id` is left after step k (and no handle).
  bool free_after(NodeId id, int k) const { return !reader_after(id, k); }

  // The value whose buffer `id` uses (through view steps), or kNoNode.
  NodeId base_value(NodeId id) const {
    while (true) {
      auto it = s_.step_of.find(id);
      if (it == s_.step_of.end()) return kNoNode;  // evaluated before this evaluation
      const Step& st = s_.steps[static_cast<std::size_t>(it->second)];
      if (st.kind != Step::Kind::view) return id;
      id = g_[id].inputs[0];
    }
  }

  // A kernel output written into a concatenate's buffer (Step::into) is no
  // value of its own: the concatenate's value starts at the first such step.
  static NodeId into(const Step& st, std::size_t j) { return j < st.into.size() ? st.into[j] : kNoNode; }

  void collect_values() {
    std::unordered_map<NodeId, int> first_into;
    std::unordered_map<NodeId, NodeId> into_of;  // piece -> the concatenate holding it
    for (std::size_t k = 0; k < s_.steps.size(); ++k) {
      for (std::size_t j = 0; j < s_.steps[k].into.size(); ++j) {
        const NodeId c = s_.steps[k].into[j];
        if (c == kNoNode) continue;
        if (!first_into.count(c)) first_into[c] = static_cast<int>(k);
        into_of[s_.steps[k].outputs[j]] = c;
      }
    }
    for (std::size_t k = 0; k < s_.steps.size(); ++k) {
      const Step& st = s_.steps[k];
      const int ki = static_cast<int>(k);
      std::vector<NodeId> reads;
      if (st.kind == Step::Kind::kernel) {
        for (std::size_t j = 0; j < st.outputs.size(); ++j) {
          if (into(st, j) == kNoNode) add_value(st.outputs[j], ki);
        }
        reads = st.inputs;
      } else {
        if (st.kind == Step::Kind::library) {
          auto f = first_into.find(st.node);
          add_value(st.node, f == first_into.end() ? ki : f->second);
          p_.values.back().last = ki;
        }
        reads = g_[st.node].inputs;
      }
      for (NodeId r : reads) {
        if (r == kNoNode) continue;
        NodeId b = base_value(r);
        if (b != kNoNode) extend(b, ki);
      }
    }
    // What survives the evaluation keeps its buffer (views keep their base's).
    for (NodeId id : s_.order) {
      if (!s_.step_of.count(id)) continue;
      bool survives = held_outside(id);
      for (NodeId c : consumers_[id]) survives |= release_.at(c) == BufferPlan::kEnd;
      NodeId b = base_value(id);
      if (auto it = into_of.find(b); it != into_of.end()) b = it->second;  // a held piece keeps the whole result
      if (survives && b != kNoNode) extend(b, BufferPlan::kEnd);
    }
  }

  void add_value(NodeId id, int step) {
    index_[id] = p_.values.size();
    p_.values.push_back({id, bytes_of(g_[id]), step, step, -1, kNoNode});
  }
  void extend(NodeId id, int step) {
    auto it = index_.find(id);
    if (it == index_.end()) return;
    BufferValue& v = p_.values[it->second];
    v.last = std::max(v.last, step);
  }

  void find_donations() {
    for (std::size_t k = 0; k < s_.steps.size(); ++k) {
      const Step& st = s_.steps[k];
      if (st.kind == Step::Kind::library) {
        library_donation(k);
        continue;
      }
      if (st.kind != Step::Kind::kernel) continue;
      // Pairs (output, input) in order of ownership: an input that fewer of
      // the kernel's outputs are computed from first (an optimizer's state
      // m feeds m' alone, the gradient g feeds m', v' and w'), then how
      // directly (fewest fused ops between them), then output and input
      // order. The outputs of a fused update (m', v', w - lr m'/...) then
      // each take their own old value's buffer, not the gradient's. Lent
      // memory (aj::lend) comes before all: the caller wants its results
      // there, not in another donated input's buffer.
      struct Pair {
        int owned, readers, depth;
        std::size_t j, e;
      };
      const std::unordered_set<NodeId> computed(st.computed.begin(), st.computed.end());
      std::vector<std::unordered_map<NodeId, int>> depth(st.outputs.size());
      for (std::size_t j = 0; j < st.outputs.size(); ++j) depth[j] = depths(st, computed, st.outputs[j]);
      std::vector<Pair> pairs;
      for (std::size_t j = 0; j < st.outputs.size(); ++j) {
        if (into(st, j) != kNoNode) continue;  // goes into a concatenate's buffer
        for (std::size_t e = 0; e < st.inputs.size(); ++e) {
          const NodeId from = st.inputs[e];
          if (from == kNoNode || st.kernel.inputs[e].index_only) continue;
          const auto it = depth[j].find(from);
          int readers = 0;
          for (const auto& d : depth) readers += d.count(from) > 0;
          const Node& fn = g_[from];
          const int owned = fn.evaluated() && fn.storage->lent ? 0 : 1;
          pairs.push_back({owned, readers, it == depth[j].end() ? 1 << 20 : it->second, j, e});
        }
      }
      std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
        if (a.owned != b.owned) return a.owned < b.owned;
        return a.readers != b.readers ? a.readers < b.readers : a.depth < b.depth;
      });
      std::vector<char> done(st.outputs.size(), 0);
      for (const Pair& pr : pairs) {
        if (done[pr.j]) continue;
        const NodeId from = st.inputs[pr.e];
        if (refusal(k, pr.j, from)) continue;
        done[pr.j] = 1;
        taken_.emplace(from, st.outputs[pr.j]);
        p_.values[index_.at(st.outputs[pr.j])].donor = from;
      }
      for (std::size_t j = 0; j < st.outputs.size(); ++j) {  // (listed in output order)
        if (!done[j]) continue;
        const NodeId to = st.outputs[j];
        p_.donations.push_back({static_cast<int>(k), static_cast<int>(j), p_.values[index_.at(to)].donor, to});
      }
    }
  }

  // The fewest ops between kernel output `out` and each node its fused
  // expression reads (breadth first through the step's computed nodes and
  // the views they read through: a matrix-vector product's result is read
  // through a reshape).
  std::unordered_map<NodeId, int> depths(const Step& st, const std::unordered_set<NodeId>& computed, NodeId out) const {
    std::unordered_map<NodeId, int> d{{out, 0}};
    std::vector<NodeId> level{out}, next;
    for (int depth = 1; !level.empty(); ++depth) {
      next.clear();
      for (NodeId n : level) {
        const bool input = std::find(st.inputs.begin(), st.inputs.end(), n) != st.inputs.end();
        const bool fused = n == out || computed.count(n) ||
                           (!input && !g_[n].evaluated() && is_view(g_[n].op));
        if (!fused) continue;
        for (NodeId in : g_[n].inputs) {
          if (d.emplace(in, depth).second) next.push_back(in);
        }
      }
      std::swap(level, next);
    }
    return d;
  }

 public:
  // The donation rule, for output j of kernel step k and its input `from`:
  // nullopt when the output may take the input's buffer, else why not.
  std::optional<NotInPlace> refusal(std::size_t k, std::size_t j, NodeId from) const {
    using W = NotInPlace::Why;
    const Step& st = s_.steps[k];
    const KOutput& out = st.kernel.outputs[j];
    const std::size_t bytes = bytes_of(g_[st.outputs[j]]);
    NotInPlace r{static_cast<int>(k), static_cast<int>(j), from};
    auto no = [&](W why, NodeId other = kNoNode, int step = -1) {
      r.why = why;
      r.other = other;
      r.reader_step = step;
      return std::optional<NotInPlace>(r);
    };
    if (auto t = taken_.find(from); t != taken_.end()) return no(W::taken, t->second);
    if (auto w = index_mismatch(st, from, out)) return no(*w);
    const Node& fn = g_[from];
    const bool produced = s_.step_of.count(from) > 0;
    if (produced && s_.steps[static_cast<std::size_t>(s_.step_of.at(from))].kind == Step::Kind::view) return no(W::view);
    if (!produced && !fn.evaluated()) return no(W::view);
    if (!produced && fn.storage->read_only()) return no(W::borrowed);
    if ((produced ? bytes_of(fn) : fn.storage->bytes) != bytes) return no(W::sizes_differ);
    if (auto h = reader_after(from, static_cast<int>(k))) return no(h->why, h->other, h->step);
    if (produced && index_.count(from)) {
      const int last = p_.values[index_.at(from)].last;
      if (last > static_cast<int>(k)) return no(W::later_reader, kNoNode, last);
    }
    return std::nullopt;
  }

  // For aj::explain: the donations of plan `b` (made by this planner's rule).
  void take_donations(const BufferPlan& b) {
    for (const Donation& d : b.donations) taken_.emplace(d.from, d.to);
  }

 private:
  // A library step whose result is its first input changed in places
  // (scatter, scatter_add: the Overwrites flag) takes that input's buffer
  // when the same rules hold and the input is laid out as the result
  // (contiguous, offset 0): the step then skips copying it.
  void library_donation(std::size_t k) {
    const Step& st = s_.steps[k];
    const Node& n = g_[st.node];
    if (!op_has(n.op, opflag::Overwrites)) return;
    const NodeId from = n.inputs[0];
    const Node& fn = g_[from];
    const std::size_t bytes = bytes_of(n);
    if (taken_.count(from) || fn.dtype != n.dtype || fn.shape != n.shape) return;
    for (std::size_t i = 1; i < n.inputs.size(); ++i) {  // another operand reading that buffer
      NodeId in = n.inputs[i];
      while (s_.step_of.count(in) && s_.steps[static_cast<std::size_t>(s_.step_of.at(in))].kind == Step::Kind::view) {
        in = g_[in].inputs[0];
      }
      if (in == from || (fn.evaluated() && g_[in].evaluated() && g_[in].storage == fn.storage)) return;
    }
    const bool produced = s_.step_of.count(from) > 0;
    if (produced) {
      const Step& ps = s_.steps[static_cast<std::size_t>(s_.step_of.at(from))];
      if (ps.kind == Step::Kind::view || s_.layouts.at(from) != contiguous_layout(n.shape)) return;
    } else if (!fn.evaluated() || fn.storage->read_only() || fn.storage->bytes != bytes || fn.offset != 0 ||
               !is_contiguous(fn.shape, fn.strides)) {
      return;
    }
    if (!free_after(from, static_cast<int>(k))) return;
    if (produced && index_.count(from) && p_.values[index_.at(from)].last > static_cast<int>(k)) return;
    taken_.emplace(from, st.node);
    p_.donations.push_back({static_cast<int>(k), 0, from, st.node});
    p_.values[index_.at(st.node)].donor = from;
  }

  // Why a read of `from` in the kernel is not at exactly the output's index
  // (nullopt: every read is).
  static std::optional<NotInPlace::Why> index_mismatch(const Step& st, NodeId from, const KOutput& out) {
    for (std::size_t e = 0; e < st.inputs.size(); ++e) {
      if (st.inputs[e] != from) continue;
      const KStream& in = st.kernel.inputs[e];
      if (itemsize(in.dtype) != itemsize(out.stream.dtype)) return NotInPlace::Why::item_size;
      if (in.index_only || in.gathered || in.strides != out.stream.strides || in.offset != out.stream.offset) {
        return NotInPlace::Why::other_index;
      }
      // None comes after the write: a phase-0 output is stored during the
      // reduction loop, before phase 1 loads (equal strides there mean
      // reduce axes of extent 1, where both address the same element).
      for (const KInstr& i : st.kernel.instrs) {
        if (i.kind == KOp::Load && i.arg == static_cast<std::int32_t>(e) && i.phase > out.phase) {
          return NotInPlace::Why::other_index;
        }
      }
    }
    return std::nullopt;
  }

  // Temporaries packed by best fit in decreasing size. A donation chain
  // (a value, the output that takes its buffer, the output that takes that
  // one's, ...) is one unit: one buffer over the union of its intervals. The
  // largest units choose first; each takes the smallest slot that is large
  // enough and free over its whole interval, or opens a new slot.
  void pack() {
    const std::size_t nv = p_.values.size();
    std::vector<std::size_t> root(nv);
    for (std::size_t i = 0; i < nv; ++i) {  // values are in def order: donors come first
      root[i] = i;
      const BufferValue& v = p_.values[i];
      if (v.donor == kNoNode) continue;
      auto it = index_.find(v.donor);
      if (it != index_.end()) root[i] = root[it->second];
      else root[i] = nv;  // continues a buffer from outside this evaluation: no slot
    }
    std::vector<Unit> units(nv);
    for (std::size_t i = 0; i < nv; ++i) {
      const BufferValue& v = p_.values[i];
      if (root[i] == i) units[i] = {v.bytes, v.def, v.last, -1};
    }
    for (std::size_t i = 0; i < nv; ++i) {
      if (root[i] < nv && root[i] != i) units[root[i]].hi = std::max(units[root[i]].hi, p_.values[i].last);
    }
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < nv; ++i) {
      if (root[i] == i) order.push_back(i);
    }
    if (order.size() <= kBestFitUnits) {
      best_fit(units, order);
    } else {
      sweep(units, order);
    }
    for (std::size_t i = 0; i < nv; ++i) p_.values[i].slot = root[i] < nv ? units[root[i]].slot : -1;
    for (auto b : p_.slot_bytes) p_.bytes_used += b;
    // Lower bound: the most bytes live at once. A value donated from another
    // continues its donor's buffer, so it starts counting after its def.
    const auto steps = static_cast<int>(s_.steps.size());
    std::vector<std::int64_t> change(s_.steps.size() + 1, 0);
    for (const BufferValue& v : p_.values) {
      if (v.slot < 0) continue;
      const int start = v.donor != kNoNode ? v.def + 1 : v.def;
      const int end = std::min(v.last, steps - 1);
      if (start > end) continue;
      change[static_cast<std::size_t>(start)] += static_cast<std::int64_t>(v.bytes);
      change[static_cast<std::size_t>(end) + 1] -= static_cast<std::int64_t>(v.bytes);
    }
    std::int64_t live = 0;
    for (int k = 0; k < steps; ++k) {
      live += change[static_cast<std::size_t>(k)];
      p_.lower_bound = std::max(p_.lower_bound, static_cast<std::size_t>(live));
    }
  }

  struct Unit {
    std::size_t bytes = 0;
    int lo = 0, hi = 0;
    int slot = -1;
  };

  // Up to this many units, packing tries every slot for every unit (largest
  // first); beyond it, one sweep in time order (lazy loops and concatenates
  // of thousands of pieces must plan in linear time).
  static constexpr std::size_t kBestFitUnits = 256;

  // The largest units choose first; each takes the smallest slot that is
  // large enough and free over its whole interval, or opens a new slot.
  void best_fit(std::vector<Unit>& units, std::vector<std::size_t> order) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return units[a].bytes > units[b].bytes;  // stable: ties keep def order
    });
    std::vector<std::vector<std::size_t>> occupants;  // units per slot
    for (std::size_t u : order) {
      Unit& unit = units[u];
      int best = -1;
      for (std::size_t sl = 0; sl < p_.slot_bytes.size(); ++sl) {
        if (p_.slot_bytes[sl] < unit.bytes) continue;
        if (best >= 0 && p_.slot_bytes[sl] >= p_.slot_bytes[static_cast<std::size_t>(best)]) continue;
        bool free = true;
        for (std::size_t o : occupants[sl]) free &= units[o].hi < unit.lo || unit.hi < units[o].lo;
        if (free) best = static_cast<int>(sl);
      }
      if (best < 0) {
        best = static_cast<int>(p_.slot_bytes.size());
        p_.slot_bytes.push_back(unit.bytes);
        occupants.emplace_back();
      }
      unit.slot = best;
      occupants[static_cast<std::size_t>(best)].push_back(u);
    }
  }

  // Units in order of their first step; a slot is free again once its unit's
  // last step has passed. Each takes the smallest free slot that is large
  // enough, else the largest free slot (grown), else a new one.
  void sweep(std::vector<Unit>& units, std::vector<std::size_t> order) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return units[a].lo < units[b].lo; });
    using Busy = std::pair<int, std::size_t>;  // (last step, slot)
    std::priority_queue<Busy, std::vector<Busy>, std::greater<Busy>> busy;
    std::set<std::pair<std::size_t, std::size_t>> free;  // (bytes, slot)
    for (std::size_t u : order) {
      Unit& unit = units[u];
      while (!busy.empty() && busy.top().first < unit.lo) {
        const std::size_t sl = busy.top().second;
        busy.pop();
        free.insert({p_.slot_bytes[sl], sl});
      }
      std::size_t sl;
      if (auto it = free.lower_bound({unit.bytes, 0}); it != free.end()) {
        sl = it->second;
        free.erase(it);
      } else if (!free.empty()) {
        sl = std::prev(free.end())->second;
        free.erase(std::prev(free.end()));
        p_.slot_bytes[sl] = unit.bytes;
      } else {
        sl = p_.slot_bytes.size();
        p_.slot_bytes.push_back(unit.bytes);
      }
      unit.slot = static_cast<int>(sl);
      busy.push({unit.hi, sl});
    }
  }

  const Schedule& s_;
  Graph& g_;
  BufferPlan p_;
  std::unordered_map<NodeId, std::vector<NodeId>> consumers_;
  std::unordered_map<NodeId, std::size_t> waiters_;  // nodes of the order ordered after it (Node::after)
  std::unordered_map<NodeId, int> release_;
  std::unordered_map<NodeId, std::size_t> index_;
  std::unordered_map<NodeId, NodeId> taken_;  // donor -> the output that took its buffer
};

}  // namespace

BufferPlan assign_buffers(const Schedule& s) { return Planner(s).run(); }

std::vector<NotInPlace> not_in_place(const Schedule& s, const BufferPlan& b) {
  Planner p(s);
  p.plan();  // the same liveness the plan was made with
  p.take_donations(b);
  std::vector<NotInPlace> out;
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    if (st.kind != Step::Kind::kernel) continue;
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      bool donated = false;
      for (const Donation& d : b.donations) donated |= d.step == static_cast<int>(k) && d.output == static_cast<int>(j);
      if (donated) continue;
      std::vector<NodeId> seen;
      for (std::size_t e = 0; e < st.inputs.size(); ++e) {
        const NodeId from = st.inputs[e];
        if (from == kNoNode || st.kernel.inputs[e].index_only) continue;
        if (std::find(seen.begin(), seen.end(), from) != seen.end()) continue;
        seen.push_back(from);
        if (auto r = p.refusal(k, j, from)) {
          out.push_back(*r);
        } else if (graph()[from].evaluated() && graph()[from].storage.use_count() > 1) {
          // The plan allows it; the run-time check refuses a shared storage.
          out.push_back({static_cast<int>(k), static_cast<int>(j), from, NotInPlace::Why::shared});
        }
      }
    }
  }
  return out;
}

bool donation_applies(NodeId from, std::size_t bytes, Device device) {
  const Node& n = graph()[from];
  return n.alive && n.evaluated() && graph().ext_count(from) == 0 && !n.storage->read_only() && n.storage->device == device &&
         n.storage.use_count() == 1 && n.storage->bytes == bytes;
}

}  // namespace aj

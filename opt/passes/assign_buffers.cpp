#include "opt/passes/assign_buffers.hpp"

#include <algorithm>
#include <numeric>
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
    collect_values();
    find_donations();
    pack();
    return std::move(p_);
  }

 private:
  bool held_outside(NodeId id) const {
    const Node& n = g_[id];
    auto it = consumers_.find(id);
    std::size_t inside = it == consumers_.end() ? 0 : it->second.size();
    return n.ext > 0 || n.uses != inside;
  }

  // No reader of `id` is left after step k (and no handle).
  bool free_after(NodeId id, int k) const {
    if (held_outside(id)) return false;
    if (std::find(s_.roots.begin(), s_.roots.end(), id) != s_.roots.end()) return false;
    auto it = consumers_.find(id);
    if (it == consumers_.end()) return true;
    for (NodeId c : it->second) {
      if (release_.at(c) > k) return false;
      // A view step shares id's buffer: it must be free too.
      auto st = s_.step_of.find(c);
      if (st != s_.step_of.end() && s_.steps[static_cast<std::size_t>(st->second)].kind == Step::Kind::view &&
          !free_after(c, k)) {
        return false;
      }
    }
    return true;
  }

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

  void collect_values() {
    for (std::size_t k = 0; k < s_.steps.size(); ++k) {
      const Step& st = s_.steps[k];
      const int ki = static_cast<int>(k);
      std::vector<NodeId> reads;
      if (st.kind == Step::Kind::kernel) {
        for (NodeId o : st.outputs) add_value(o, ki);
        reads = st.inputs;
      } else {
        if (st.kind == Step::Kind::library) add_value(st.node, ki);
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
    std::unordered_set<NodeId> donors;
    for (std::size_t k = 0; k < s_.steps.size(); ++k) {
      const Step& st = s_.steps[k];
      if (st.kind != Step::Kind::kernel) continue;
      for (std::size_t j = 0; j < st.outputs.size(); ++j) {
        const KOutput& out = st.kernel.outputs[j];
        const std::size_t bytes = bytes_of(g_[st.outputs[j]]);
        for (std::size_t e = 0; e < st.inputs.size(); ++e) {
          NodeId from = st.inputs[e];
          if (from == kNoNode || donors.count(from)) continue;
          if (!same_index_everywhere(st, from, out)) continue;
          const Node& fn = g_[from];
          const bool produced = s_.step_of.count(from) > 0;
          if (produced && s_.steps[static_cast<std::size_t>(s_.step_of.at(from))].kind == Step::Kind::view) continue;
          if (!produced && (!fn.evaluated() || fn.storage->borrowed || fn.storage->bytes != bytes)) continue;
          if (produced && bytes_of(fn) != bytes) continue;
          if (!free_after(from, static_cast<int>(k))) continue;
          if (produced && index_.count(from) && p_.values[index_.at(from)].last > static_cast<int>(k)) continue;
          donors.insert(from);
          p_.donations.push_back({static_cast<int>(k), static_cast<int>(j), from, st.outputs[j]});
          p_.values[index_.at(st.outputs[j])].donor = from;
          break;
        }
      }
    }
  }

  // Every read of `from` in the kernel is at exactly the output's index, and
  // none comes after the write: a phase-0 output is stored during the
  // reduction loop, before phase 1 loads (equal strides there mean reduce
  // axes of extent 1, where both address the same element).
  static bool same_index_everywhere(const Step& st, NodeId from, const KOutput& out) {
    for (std::size_t e = 0; e < st.inputs.size(); ++e) {
      if (st.inputs[e] != from) continue;
      const KStream& in = st.kernel.inputs[e];
      if (in.index_only || in.strides != out.stream.strides || in.offset != out.stream.offset ||
          itemsize(in.dtype) != itemsize(out.stream.dtype)) {
        return false;
      }
      for (const KInstr& i : st.kernel.instrs) {
        if (i.kind == KOp::Load && i.arg == static_cast<std::int32_t>(e) && i.phase > out.phase) return false;
      }
    }
    return true;
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
    struct Unit {
      std::size_t bytes = 0;
      int lo = 0, hi = 0;
      int slot = -1;
    };
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
    for (std::size_t i = 0; i < nv; ++i) p_.values[i].slot = root[i] < nv ? units[root[i]].slot : -1;
    for (auto b : p_.slot_bytes) p_.bytes_used += b;
    // Lower bound: the most bytes live at once. A value donated from another
    // continues its donor's buffer, so it starts counting after its def.
    for (std::size_t k = 0; k < s_.steps.size(); ++k) {
      const int ki = static_cast<int>(k);
      std::size_t live = 0;
      for (const BufferValue& v : p_.values) {
        if (v.slot < 0) continue;
        const int start = v.donor != kNoNode ? v.def + 1 : v.def;
        if (start <= ki && ki <= v.last) live += v.bytes;
      }
      p_.lower_bound = std::max(p_.lower_bound, live);
    }
  }

  const Schedule& s_;
  Graph& g_;
  BufferPlan p_;
  std::unordered_map<NodeId, std::vector<NodeId>> consumers_;
  std::unordered_map<NodeId, int> release_;
  std::unordered_map<NodeId, std::size_t> index_;
};

}  // namespace

BufferPlan assign_buffers(const Schedule& s) { return Planner(s).run(); }

bool donation_applies(NodeId from, std::size_t bytes, Device device) {
  const Node& n = graph()[from];
  return n.alive && n.evaluated() && n.ext == 0 && !n.storage->borrowed && n.storage->device == device &&
         n.storage.use_count() == 1 && n.storage->bytes == bytes;
}

}  // namespace aj

#include "graph/graph.hpp"

#include <bit>
#include <cstring>
#include <unordered_map>

#include "base/stats.hpp"

namespace aj {

namespace {

std::size_t mix(std::size_t h, std::uint64_t v) {
  // boost::hash_combine's constant with a 64-bit multiply.
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

std::size_t structural_hash(const Node& n) {
  std::size_t h = mix(0, static_cast<std::uint64_t>(n.op));
  h = mix(h, static_cast<std::uint64_t>(n.dtype));
  for (auto d : n.shape) h = mix(h, static_cast<std::uint64_t>(d));
  for (auto i : n.inputs) h = mix(h, i);
  h = mix(h, static_cast<std::uint64_t>(n.i0));
  h = mix(h, static_cast<std::uint64_t>(n.i1));
  h = mix(h, std::bit_cast<std::uint64_t>(n.f0));
  h = mix(h, std::bit_cast<std::uint64_t>(n.f1));
  for (auto v : n.ints) h = mix(h, static_cast<std::uint64_t>(v));
  return (h ^ (h >> 31)) * 0x9e3779b97f4a7c15ull ^ (h >> 17);  // mixed: the table indexes by low bits
}

}  // namespace

// The CSE table: node hash -> node ids, open addressing with linear probing
// (several ids may share a hash). A flat array instead of a node-based
// multimap: adding and freeing a node must not allocate (a small call traces
// and frees dozens of nodes).
struct Graph::CseTable {
  static constexpr NodeId kEmpty = kNoNode;
  static constexpr NodeId kGone = kNoNode - 1;  // tombstone (never a real id: ids < 2^32-2)
  struct Slot {
    std::size_t hash = 0;
    NodeId id = kEmpty;
  };
  std::vector<Slot> slots = std::vector<Slot>(64);
  std::size_t live = 0, filled = 0;  // filled: live + tombstones

  std::size_t mask() const { return slots.size() - 1; }

  // Calls f(id) for every id stored under `h` until f returns true.
  template <class F>
  NodeId find(std::size_t h, F&& f) const {
    for (std::size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots[i];
      if (s.id == kEmpty) return kNoNode;
      if (s.id != kGone && s.hash == h && f(s.id)) return s.id;
    }
  }
  void insert(std::size_t h, NodeId id) {
    if ((filled + 1) * 4 > slots.size() * 3) rehash(live * 2 + 1 > slots.size() / 2 ? slots.size() * 2 : slots.size());
    std::size_t i = h & mask();
    while (slots[i].id != kEmpty && slots[i].id != kGone) i = (i + 1) & mask();
    if (slots[i].id == kEmpty) ++filled;
    slots[i] = {h, id};
    ++live;
  }
  void erase(std::size_t h, NodeId id) {
    for (std::size_t i = h & mask();; i = (i + 1) & mask()) {
      Slot& s = slots[i];
      if (s.id == kEmpty) return;
      if (s.id == id && s.hash == h) {
        s.id = kGone;
        --live;
        return;
      }
    }
  }
  void rehash(std::size_t size) {
    std::vector<Slot> old = std::move(slots);
    slots.assign(size, Slot{});
    live = filled = 0;
    for (const Slot& s : old) {
      if (s.id != kEmpty && s.id != kGone) insert(s.hash, s.id);
    }
  }
};

bool Graph::same_structure(const Node& a, const Node& b) const {
  return a.op == b.op && a.dtype == b.dtype && a.shape == b.shape && a.inputs == b.inputs &&
         a.i0 == b.i0 && a.i1 == b.i1 &&
         std::bit_cast<std::uint64_t>(a.f0) == std::bit_cast<std::uint64_t>(b.f0) &&
         std::bit_cast<std::uint64_t>(a.f1) == std::bit_cast<std::uint64_t>(b.f1) &&
         a.ints == b.ints;
}

NodeId Graph::add(Node n) {
  if (!cse_) cse_ = std::make_shared<CseTable>();
  const bool cse = n.op != Op::Input && !n.storage;
  if (cse) {
    n.hash = structural_hash(n);
    const NodeId same = cse_->find(n.hash, [&](NodeId id) {
      const Node& m = nodes_[id];
      return m.alive && !m.evaluated() && same_structure(m, n);
    });
    if (same != kNoNode) return same;
  }
  NodeId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    if (nodes_.size() >= kNoNode - 1) runtime_error("aj: more than 2^32-2 live graph nodes");
    id = static_cast<NodeId>(nodes_.size());
    nodes_.emplace_back();
  }
  for (NodeId in : n.inputs) ++nodes_[in].uses;
  n.alive = true;
  n.ext = 0;
  n.uses = 0;
  n.in_cse = cse;
  nodes_[id] = std::move(n);
  if (cse) cse_->insert(nodes_[id].hash, id);
  ++live_;
  auto& st = detail::stats_mut();
  ++st.nodes_created;
  st.live_nodes = live_;
  return id;
}

void Graph::cse_erase(NodeId id) {
  Node& n = nodes_[id];
  if (!n.in_cse) return;
  cse_->erase(n.hash, id);
  n.in_cse = false;
}

void Graph::release_ext(NodeId id) {
  if (nodes_[id].ext == 0) internal_error("release_ext of a node without handles");
  --nodes_[id].ext;
  maybe_free(id);
}

void Graph::release_use(NodeId id) {
  if (nodes_[id].uses == 0) internal_error("release_use of a node without uses");
  --nodes_[id].uses;
  maybe_free(id);
}

// Frees `id` if nothing refers to it, then whatever that leaves unreferenced.
// Iterative: a chain of a million ops must not overflow the stack.
void Graph::maybe_free(NodeId first) {
  {
    const Node& n = nodes_[first];
    if (!n.alive || n.ext != 0 || n.uses != 0) return;  // the common case: still referenced
  }
  std::vector<NodeId> work{first};
  while (!work.empty()) {
    NodeId id = work.back();
    work.pop_back();
    Node& n = nodes_[id];
    if (!n.alive || n.ext != 0 || n.uses != 0) continue;
    cse_erase(id);
    std::vector<NodeId> inputs = std::move(n.inputs);
    n = Node{};  // drops the storage: back to the allocator now
    free_.push_back(id);
    --live_;
    for (NodeId in : inputs) {
      --nodes_[in].uses;
      work.push_back(in);
    }
  }
  detail::stats_mut().live_nodes = live_;
}

void Graph::set_result(NodeId id, std::shared_ptr<Storage> storage,
                       std::vector<std::int64_t> strides, std::int64_t offset) {
  Node& n = nodes_[id];
  cse_erase(id);
  // Memos of device_of above this node may have been derived through it: a
  // result somewhere else than its memo says voids them all. Host results of
  // nodes nobody asked about (every host-only program) change nothing.
  const bool memo = n.dev_epoch == device_epoch_;
  if (memo ? !n.has_dev || n.dev != storage->device : storage->device.kind != Device::Kind::cpu) {
    if (++device_epoch_ == 0) device_epoch_ = 1;
  }
  n.storage = std::move(storage);
  n.strides = std::move(strides);
  n.offset = offset;
  std::vector<NodeId> inputs = std::move(n.inputs);
  n.inputs.clear();
  for (NodeId in : inputs) release_use(in);
}

void Graph::rewrite(NodeId id, const Node& like) {
  if (nodes_[id].evaluated() || nodes_[id].dtype != like.dtype || nodes_[id].shape != like.shape) {
    internal_error("Graph::rewrite must keep an unevaluated node's dtype and shape");
  }
  cse_erase(id);
  for (NodeId in : like.inputs) ++nodes_[in].uses;
  Node& n = nodes_[id];
  if (n.dev_epoch == device_epoch_ && ++device_epoch_ == 0) device_epoch_ = 1;  // new inputs: memos void
  std::vector<NodeId> old = std::move(n.inputs);
  n.op = like.op;
  n.inputs = like.inputs;
  n.i0 = like.i0;
  n.i1 = like.i1;
  n.f0 = like.f0;
  n.f1 = like.f1;
  n.ints = like.ints;
  n.hash = structural_hash(n);
  n.in_cse = true;
  if (!cse_) cse_ = std::make_shared<CseTable>();
  cse_->insert(n.hash, id);
  for (NodeId in : old) release_use(in);
}

std::vector<NodeId> unevaluated_order(const std::vector<NodeId>& roots) {
  Graph& g = graph();
  std::vector<NodeId> order;
  // Seen marks by node id, reused across calls (this runs on every eval):
  // seen[id] == epoch means visited in this walk.
  static std::vector<std::uint32_t>* seen_p = new std::vector<std::uint32_t>();
  static std::uint32_t epoch = 0;
  std::vector<std::uint32_t>& seen = *seen_p;
  if (seen.size() < g.capacity()) seen.resize(g.capacity(), 0);
  if (++epoch == 0) {
    std::fill(seen.begin(), seen.end(), 0);
    epoch = 1;
  }
  static std::size_t last_size = 0;  // a loop repeats one graph: allocate once
  order.reserve(last_size);
  static std::vector<std::pair<NodeId, std::size_t>>* stack_p = new std::vector<std::pair<NodeId, std::size_t>>();
  auto& stack = *stack_p;
  stack.clear();
  for (NodeId r : roots) {
    if (g[r].evaluated() || seen[r] == epoch) continue;
    stack.push_back({r, 0});
    seen[r] = epoch;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& n = g[id];
      if (next < n.inputs.size()) {
        NodeId in = n.inputs[next++];
        if (!g[in].evaluated() && seen[in] != epoch) {
          seen[in] = epoch;
          stack.push_back({in, 0});
        }
      } else {
        order.push_back(id);
        stack.pop_back();
      }
    }
  }
  last_size = order.size();
  return order;
}

Graph& graph() {
  static Graph* g = new Graph();  // never destroyed: arrays in static objects may outlive main
  return *g;
}

std::vector<std::int64_t> contiguous_strides(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.ndim()));
  std::int64_t acc = 1;
  for (int i = s.ndim() - 1; i >= 0; --i) {
    st[static_cast<std::size_t>(i)] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

bool is_contiguous(const Shape& s, const std::vector<std::int64_t>& strides) {
  std::int64_t acc = 1;
  for (int i = s.ndim() - 1; i >= 0; --i) {
    if (s[i] != 1 && strides[static_cast<std::size_t>(i)] != acc) return false;
    acc *= s[i];
  }
  return true;
}

}  // namespace aj

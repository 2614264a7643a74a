#include "graph/graph.hpp"

#include <bit>
#include <cstring>
#include <unordered_map>

#include "base/caller_loc.hpp"
#include "base/stats.hpp"

#include <algorithm>
#include <mutex>

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
  h = mix(h, n.after);
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
  // The first slot from h's on that holds no live entry.
  static std::size_t open_slot(const std::vector<Slot>& in, std::size_t h) {
    const std::size_t m = in.size() - 1;
    std::size_t i = h & m;
    while (in[i].id != kEmpty && in[i].id != kGone) i = (i + 1) & m;
    return i;
  }
  // Room for one more entry (may throw; the table is unchanged then).
  void make_room() {
    if ((filled + 1) * 4 > slots.size() * 3) rehash(live * 2 + 1 > slots.size() / 2 ? slots.size() * 2 : slots.size());
  }
  void insert(std::size_t h, NodeId id) {
    make_room();
    const std::size_t i = open_slot(slots, h);
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
  // The live entries in a new table of `size` slots, made first: a failed
  // allocation leaves the old one as it was.
  void rehash(std::size_t size) {
    std::vector<Slot> fresh(size);
    std::size_t n = 0;
    for (const Slot& s : slots) {
      if (s.id == kEmpty || s.id == kGone) continue;
      fresh[open_slot(fresh, s.hash)] = s;
      ++n;
    }
    slots.swap(fresh);
    live = filled = n;
  }
};

bool Graph::same_structure(const Node& a, const Node& b) const {
  return a.op == b.op && a.dtype == b.dtype && a.shape == b.shape && a.inputs == b.inputs &&
         a.after == b.after && a.i0 == b.i0 && a.i1 == b.i1 &&
         std::bit_cast<std::uint64_t>(a.f0) == std::bit_cast<std::uint64_t>(b.f0) &&
         std::bit_cast<std::uint64_t>(a.f1) == std::bit_cast<std::uint64_t>(b.f1) &&
         a.ints == b.ints;
}

Graph::Graph() : cse_(std::make_unique<CseTable>()) {}

Graph::~Graph() = default;

// A fresh id past the last one issued, adding a segment when the last is
// full (and a larger directory when that is full). Segments never move:
// Node references stay valid.
NodeId Graph::grow() {
  if (count_ >= kNoNode - 1) runtime_error("aj: more than 2^32-2 live graph nodes");
  const NodeId id = count_;
  const std::size_t seg = id >> kSegmentShift;
  if (seg == segments_.size()) {
    // Room, first, for every id of the new segment on the free list and on
    // maybe_free's stack: freeing then allocates nothing, so destroying an
    // array cannot run out of memory (a throw here has changed nothing).
    const std::size_t ids = (segments_.size() + 1) * kSegment;
    free_.reserve(ids);
    free_work_.reserve(ids + 1);
    if (seg == dir_size_) {
      const std::size_t size = dir_size_ ? dir_size_ * 2 : 8;
      auto dir = std::make_unique<Node*[]>(size);
      for (std::size_t k = 0; k < segments_.size(); ++k) dir[k] = segments_[k].get();
      dir_.store(dir.get(), std::memory_order_release);
      dirs_.push_back(std::move(dir));
      dir_size_ = size;
    }
    segments_.push_back(std::make_unique<Node[]>(kSegment));
    dirs_.back()[seg] = segments_.back().get();
  }
  ++count_;
  return id;
}

// A slot for a new node: a freed one (a default Node but for the memory its
// shape and strides vectors kept, see maybe_free) or a fresh one.
NodeId Graph::take_slot() {
  if (free_.empty()) return grow();
  const NodeId id = free_.back();
  free_.pop_back();
  return id;
}

NodeId Graph::add_leaf(DType dtype, const Shape& shape, std::shared_ptr<Storage> storage,
                       const std::vector<std::int64_t>& strides, std::int64_t offset) {
  const NodeId id = take_slot();
  Node& n = (*this)[id];  // a default Node: set what differs
  n.op = Op::Input;
  n.dtype = dtype;
  n.alive = true;
  n.shape = shape;  // copies into the slot's memory when it has room
  n.strides = strides;
  n.storage = std::move(storage);
  n.offset = offset;
  count_live(1);
  ++detail::stats_mut().nodes_created;
  return id;
}

// Which new nodes CSE may merge: not leaves, and not the nodes whose values
// reach kernels as run-time scalars (a constant, a generator's start, step or
// key). Merging those by value would make the graph's structure, so the plan
// cache's key, depend on a value: a learning rate that happens to equal
// another constant of the step would share its node and build a new plan.
// Each scalar the trace makes is its own node; an op over the same nodes is
// still one node.
// Annotated views are not merged either: each carries its own annotation;
// nor collectives: each call is one exchange with the other processes, which
// count them (two sends of one array are two messages).
static bool takes_part_in_cse(const Node& n) {
  return n.op != Op::Input && !n.storage && n.op != Op::Constant && !is_generator(n.op) &&
         !(n.op == Op::Reshape && n.i0 == kAnnotatedViewMark) && n.op != Op::Collective;
}

void Node::reset() {
  op = Op::Input;
  dtype = DType::f32;
  alive = in_cse = inline_only = false;
  ext = uses = claim = 0;
  inputs.clear();
  after = kNoNode;
  i0 = i1 = 0;
  f0 = f1 = 0.0;
  ints.clear();
  storage.reset();
  strides.clear();
  offset = 0;
  loc = Loc();
  hash = 0;
  dev_epoch = 0;
  has_dev = false;
  dev = Device();
}

namespace {

// `to` = `from`, in to's memory when it has room, else taking from's.
template <class V>
void assign_list(V& to, V& from) {
  if (to.capacity() >= from.size()) to.assign(from.begin(), from.end());
  else to.swap(from);
}
void assign_shape(Shape& to, Shape& from) {
  if (to.dims().capacity() >= from.dims().size()) to = from;  // vector copy-assignment keeps to's memory
  else std::swap(to, from);
}

}  // namespace

NodeId Graph::add(Node&& n) {
  const bool cse = takes_part_in_cse(n);
  if (cse) {
    n.hash = structural_hash(n);
    const NodeId same = cse_->find(n.hash, [&](NodeId id) {
      const Node& m = (*this)[id];
      return m.alive && !m.evaluated() && m.claim == 0 && same_structure(m, n);
    });
    if (same != kNoNode) return same;
  }
  // What may fail to allocate comes first, so a failure changes nothing: room
  // in the CSE table, the slot, the payload's copy (the slot goes back to the
  // free list, which has room for every id).
  if (cse) cse_->make_room();
  const NodeId id = take_slot();
  Node& s = (*this)[id];  // reset by maybe_free, or never used
  try {
    copy_payload(s, n);  // op, dtype, payload (ints copied into the slot's memory)
  } catch (...) {
    s.reset();
    free_.push_back(id);
    throw;
  }
  for (NodeId in : n.inputs) ++(*this)[in].uses;
  if (n.after != kNoNode) ++(*this)[n.after].uses;
  s.alive = true;
  s.in_cse = cse;
  assign_list(s.inputs, n.inputs);
  s.after = n.after;
  assign_shape(s.shape, n.shape);
  s.storage = std::move(n.storage);
  assign_list(s.strides, n.strides);
  s.offset = n.offset;
  s.loc = detail::effective_loc(n.loc);  // a C API caller's line (base/caller_loc.hpp)
  s.hash = n.hash;
  s.dev_epoch = n.dev_epoch;
  s.has_dev = n.has_dev;
  s.dev = n.dev;
  if (cse) cse_->insert(s.hash, id);
  count_live(1);
  ++detail::stats_mut().nodes_created;
  return id;
}

void Graph::cse_erase(NodeId id) {
  Node& n = (*this)[id];
  if (!n.in_cse) return;
  cse_->erase(n.hash, id);
  n.in_cse = false;
}

void Graph::retain_ext(NodeId id) {
  std::atomic_ref<std::uint32_t>((*this)[id].ext).fetch_add(1, std::memory_order_relaxed);
}

std::uint32_t Graph::ext_count(NodeId id) const {
  return std::atomic_ref<std::uint32_t>(const_cast<Node&>((*this)[id]).ext).load(std::memory_order_acquire);
}

void Graph::release_ext(NodeId id) {
  std::atomic_ref<std::uint32_t> ext((*this)[id].ext);
  // Not the last handle: no lock (another handle keeps the node alive).
  for (std::uint32_t old = ext.load(std::memory_order_relaxed); old > 1;) {
    if (ext.compare_exchange_weak(old, old - 1, std::memory_order_acq_rel)) return;
  }
  auto last = [&] {
    const std::uint32_t old = ext.fetch_sub(1, std::memory_order_acq_rel);
    if (old == 0) internal_error("release_ext of a node without handles");
    if (old == 1) maybe_free(id);
  };
  if (holds_lock(*this)) return last();  // inside an op: the lock is ours already
  GraphScope scope(*this);
  last();
}

void Graph::release_use(NodeId id) {
  Node& n = (*this)[id];
  if (n.uses == 0) internal_error("release_use of a node without uses");
  --n.uses;
  maybe_free(id);
}

// Frees `id` if nothing refers to it, then whatever that leaves unreferenced.
// Iterative: a chain of a million ops must not overflow the stack. A claimed
// node that is not evaluated yet waits for its evaluation to end (unclaim
// frees it then): the executor will still write it. An evaluated one is
// freed at once, so a buffer goes back to the pool when its last reader ran.
// Allocates nothing (it runs in ~Array, which must not throw): a node goes
// on the stack only when its last reference went, so once per walk, and the
// stack and the free list have room for every id issued (grow reserves it).
void Graph::maybe_free(NodeId first) {
  auto unreferenced = [&](const Node& n) {
    return n.alive && (n.claim == 0 || n.storage || n.inline_only) && n.uses == 0 &&
           std::atomic_ref<std::uint32_t>(const_cast<Node&>(n).ext).load(std::memory_order_acquire) == 0;
  };
  if (!unreferenced((*this)[first])) return;  // the common case: still referenced
  std::vector<NodeId>& work = free_work_;  // reused, with room reserved (lock held)
  // A storage's release may free arrays in turn (a C release callback that
  // releases handles): the nested walk keeps to the entries above `bottom`.
  // Every entry on the stack is still a distinct unreferenced node, so the
  // reserved room holds.
  const std::size_t bottom = work.size();
  work.push_back(first);
  while (work.size() > bottom) {
    NodeId id = work.back();
    work.pop_back();
    Node& n = (*this)[id];
    if (!unreferenced(n)) continue;
    cse_erase(id);
    auto release = [&](NodeId in) {
      Node& m = (*this)[in];
      --m.uses;
      if (unreferenced(m)) work.push_back(in);
    };
    for (NodeId in : n.inputs) release(in);
    if (n.after != kNoNode) release(n.after);
    // Drops the storage (back to the allocator now). The vectors keep their
    // memory for add and add_leaf; a dead node's contents are never read.
    n.reset();
    free_.push_back(id);
    ++frees_since_trim_;
    count_live(-1);
  }
  if (bottom == 0) trim_ids();
}

// Gives back the ids at the top of the id space once their nodes are gone,
// so that capacity() follows the live nodes down again: what walks every id
// (verify after each pass, AJ_VERIFY and the tests) costs what the graph
// holds now, not what a 100,000-op chain once held. Tried when the top id
// is free and enough frees have happened since the last try to pay for
// sorting the free list (amortized: a few comparisons per free). The free
// list stays sorted ascending, so new nodes take the highest free id below
// the top. Moves no node and allocates nothing.
void Graph::trim_ids() {
  if (count_ == 0 || (*this)[count_ - 1].alive) return;
  if (frees_since_trim_ < std::max<std::size_t>(kSegment, free_.size() / 8)) return;
  frees_since_trim_ = 0;
  std::sort(free_.begin(), free_.end());
  while (!free_.empty() && free_.back() == count_ - 1) {
    free_.pop_back();
    --count_;
  }
}

void Graph::set_result(NodeId id, std::shared_ptr<Storage> storage,
                       std::vector<std::int64_t> strides, std::int64_t offset) {
  Node& n = (*this)[id];
  cse_erase(id);
  // Memos of device_of above this node may have been derived through it: a
  // result somewhere else than its memo says voids them all. Host results of
  // nodes nobody asked about (every host-only program) change nothing.
  const bool memo = n.dev_epoch == device_epoch_;
  if (memo ? !n.has_dev || n.dev != storage->device : !storage->device.is_host()) {
    if (++device_epoch_ == 0) device_epoch_ = 1;
  }
  n.storage = std::move(storage);
  n.strides = std::move(strides);
  n.offset = offset;
  std::vector<NodeId> inputs = std::move(n.inputs);
  n.inputs.clear();
  const NodeId after = n.after;
  n.after = kNoNode;
  for (NodeId in : inputs) release_use(in);
  if (after != kNoNode) release_use(after);
}

void Graph::rewrite(NodeId id, const Node& like) {
  if ((*this)[id].evaluated() || (*this)[id].dtype != like.dtype || (*this)[id].shape != like.shape) {
    internal_error("Graph::rewrite must keep an unevaluated node's dtype and shape");
  }
  cse_erase(id);
  ++rewrites_;
  for (NodeId in : like.inputs) ++(*this)[in].uses;
  Node& n = (*this)[id];
  if (n.dev_epoch == device_epoch_ && ++device_epoch_ == 0) device_epoch_ = 1;  // new inputs: memos void
  std::vector<NodeId> old = std::move(n.inputs);
  copy_payload(n, like);  // the dtype is the same (checked above)
  n.inputs = like.inputs;
  n.hash = structural_hash(n);
  n.in_cse = takes_part_in_cse(n);
  if (n.in_cse) cse_->insert(n.hash, id);
  for (NodeId in : old) release_use(in);
}

std::uint32_t Graph::claim(const std::vector<NodeId>& ids) {
  if (++next_claim_ == 0) next_claim_ = 1;
  for (NodeId id : ids) {
    Node& n = (*this)[id];
    if (n.claim != 0) internal_error("Graph::claim of a node another evaluation has claimed");
    if (!n.evaluated()) n.claim = next_claim_;
    n.inline_only = false;
  }
  ++claims_;
  return next_claim_;
}

void Graph::unclaim(const std::vector<NodeId>& ids, std::uint32_t token) {
  for (NodeId id : ids) {
    Node& n = (*this)[id];
    if (n.alive && n.claim == token) n.claim = 0, n.inline_only = false;
  }
  // Consumers first (ids are inputs first): a dead chain goes in one walk.
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) maybe_free(*it);
  --claims_;
  if (waiters_ > 0) claims_cv_.notify_all();
}

void Graph::set_inline_only(const std::vector<NodeId>& ids, const std::vector<NodeId>& written) {
  for (NodeId id : ids) {
    Node& n = (*this)[id];
    if (n.alive && n.claim != 0 && !n.evaluated()) n.inline_only = true;
  }
  for (NodeId id : written) (*this)[id].inline_only = false;
}

void Graph::wait_for_claims() {
  if (!holds_lock(*this)) internal_error("Graph::wait_for_claims without the graph lock");
  ++waiters_;
  claims_cv_.wait(mu_);
  --waiters_;
}

std::vector<NodeId> Graph::unevaluated_order(const std::vector<NodeId>& roots) {
  std::vector<NodeId> order;
  // Seen marks by node id, reused across calls (this runs on every eval):
  // seen[id] == epoch means visited in this walk.
  if (walk_seen_.size() < capacity()) walk_seen_.resize(capacity(), 0);
  if (++walk_epoch_ == 0) {
    std::fill(walk_seen_.begin(), walk_seen_.end(), 0);
    walk_epoch_ = 1;
  }
  const std::uint32_t epoch = walk_epoch_;
  order.reserve(walk_last_size_);  // a loop repeats one graph: allocate once
  auto& stack = walk_stack_;
  stack.clear();
  bool ordered_after = false;  // a node with an ordering-only input was met
  for (NodeId r : roots) {
    if ((*this)[r].evaluated() || walk_seen_[r] == epoch) continue;
    stack.push_back({r, 0});
    walk_seen_[r] = epoch;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& n = (*this)[id];
      if (next < walk_inputs(n)) {
        NodeId in = walk_input(n, next++);
        if (!(*this)[in].evaluated() && walk_seen_[in] != epoch) {
          walk_seen_[in] = epoch;
          stack.push_back({in, 0});
        }
      } else {
        ordered_after |= n.after != kNoNode;
        order.push_back(id);
        stack.pop_back();
      }
    }
  }
  walk_last_size_ = order.size();
  if (ordered_after) hoist_result_tails(order, roots);
  return order;
}

// Depth first, the inputs of the first root are all placed before anything
// of the second: the gradients of value_and_grad, roots in argument order,
// end up at the very end (the first layer's pulls in the whole backward
// pass), and every value they read lives until then. Recomputation
// (checkpoint's backward, whose aliases carry an ordering-only input) is
// worthless so: the recomputed values must die where the backward of their
// segment ends. So, in a walk with an ordering-only input, the nodes that
// only lead to results (a result, or read by such nodes only: their values
// are kept to the end anyway) move up to the first place where all their
// inputs are computed and every other reader of those inputs' buffers has
// been placed (a reader of a view of one counts: the inputs die there, and
// a result may still take over an input's buffer, as an optimizer update
// waits for the backward's last reader of its weight). A node not moved up
// keeps its place; nothing moves later.
void Graph::hoist_result_tails(std::vector<NodeId>& order, const std::vector<NodeId>& roots) {
  const std::size_t n = order.size();
  std::unordered_map<NodeId, std::uint32_t> at;
  at.reserve(n);
  for (std::size_t i = 0; i < n; ++i) at.emplace(order[i], static_cast<std::uint32_t>(i));
  // The walk inputs in the order (by position) and each one's readers.
  std::vector<std::vector<std::uint32_t>> ins(n), readers(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Node& nd = (*this)[order[i]];
    for (std::size_t k = 0; k < walk_inputs(nd); ++k) {
      auto it = at.find(walk_input(nd, k));
      if (it == at.end()) continue;  // evaluated
      ins[i].push_back(it->second);
      readers[it->second].push_back(static_cast<std::uint32_t>(i));
    }
  }
  std::vector<char> tail(n, 0), done(n, 0);
  for (NodeId r : roots) {
    auto it = at.find(r);
    if (it != at.end()) tail[it->second] = 1;
  }
  for (std::size_t i = n; i-- > 0;) {  // readers come later in the order
    if (tail[i] || readers[i].empty()) continue;
    bool all = true;
    for (std::uint32_t c : readers[i]) all = all && tail[c];
    tail[i] = all;
  }
  // The buffers node i reads: each input (evaluated or not), and up through
  // the views of the order to what they view.
  auto sources = [&](std::size_t i) {
    std::vector<NodeId> src;
    for (NodeId in : (*this)[order[i]].inputs) {
      for (NodeId s = in;;) {
        if (std::find(src.begin(), src.end(), s) == src.end()) src.push_back(s);
        auto it = at.find(s);
        const Node& m = (*this)[s];
        if (it == at.end() || !is_view(m.op) || m.inputs.empty()) break;
        s = m.inputs[0];
      }
    }
    return src;
  };
  std::vector<std::vector<NodeId>> src(n);
  std::unordered_map<NodeId, std::vector<std::uint32_t>> interested;  // buffer -> tail nodes reading it
  std::unordered_map<NodeId, std::uint32_t> other_readers;            // buffer -> non-tail readers
  for (std::size_t i = 0; i < n; ++i) {
    src[i] = sources(i);
    for (NodeId b : src[i]) {
      if (tail[i]) interested[b].push_back(static_cast<std::uint32_t>(i));
      else ++other_readers[b];
    }
  }
  // What a tail node waits for: its inputs, and the other readers of the
  // buffers it reads that are not tail nodes.
  std::vector<std::uint32_t> wait(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (!tail[i]) continue;
    wait[i] = static_cast<std::uint32_t>(ins[i].size());
    for (NodeId b : src[i]) {
      auto it = other_readers.find(b);
      if (it != other_readers.end()) wait[i] += it->second;
    }
  }
  std::vector<NodeId> out;
  out.reserve(n);
  std::vector<std::uint32_t> ready;
  auto emit = [&](std::uint32_t first) {
    ready.push_back(first);
    while (!ready.empty()) {
      const std::uint32_t x = ready.back();
      ready.pop_back();
      if (done[x]) continue;
      done[x] = 1;
      out.push_back(order[x]);
      auto count_down = [&](std::uint32_t e) {
        if (tail[e] && !done[e] && wait[e] > 0 && --wait[e] == 0) ready.push_back(e);
      };
      for (std::uint32_t c : readers[x]) count_down(c);
      if (!tail[x]) {
        for (NodeId b : src[x]) {
          auto it = interested.find(b);
          if (it == interested.end()) continue;
          for (std::uint32_t e : it->second) count_down(e);
        }
      }
    }
  };
  // A tail node reached in the order with inputs still waiting (tail nodes
  // held back for readers that come later) places them first.
  std::vector<std::uint32_t> stack;
  auto place = [&](std::uint32_t i) {
    stack.push_back(i);
    while (!stack.empty()) {
      const std::uint32_t x = stack.back();
      if (done[x]) {
        stack.pop_back();
        continue;
      }
      bool inputs_done = true;
      for (std::uint32_t j : ins[x]) {
        if (!done[j]) {
          stack.push_back(j);
          inputs_done = false;
        }
      }
      if (!inputs_done) continue;
      stack.pop_back();
      emit(x);
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!done[i]) place(static_cast<std::uint32_t>(i));
  }
  order = std::move(out);
}

std::vector<NodeId> unevaluated_order(const std::vector<NodeId>& roots) {
  return graph().unevaluated_order(roots);
}

// ---- threads and their graphs ---------------------------------------------------

// Trivially destructible: usable from other thread_local destructors at exit.
constinit thread_local ThreadGraphState detail::t_graphs;

// Every graph ever made (never freed: handles point at them). A graph whose
// thread has exited is adopted by a new thread once it has no live nodes.
struct ThreadGraphs {
  std::mutex mu;
  std::vector<Graph*> all;

  static ThreadGraphs& get() {
    static ThreadGraphs* r = new ThreadGraphs();  // never destroyed: handles may outlive main
    return *r;
  }

  Graph* adopt_or_make() {
    std::lock_guard lock(mu);
    for (Graph* g : all) {
      if (!g->orphaned_ || g->live() != 0) continue;
      std::unique_lock glock(g->mu_, std::try_to_lock);
      if (!glock || !g->orphaned_ || g->live() != 0) continue;
      g->orphaned_ = false;
      return g;
    }
    all.push_back(new Graph());
    return all.back();
  }

  static void orphan(Graph* g) {
    std::lock_guard lock(g->mu_);
    g->orphaned_ = true;
  }
};

namespace {

// Marks the thread's graph orphaned when the thread exits.
struct ThreadExit {
  ~ThreadExit() {
    if (detail::t_graphs.own) ThreadGraphs::orphan(detail::t_graphs.own);
  }
};

}  // namespace

Graph& thread_graph() {
  if (!detail::t_graphs.own) {
    static thread_local ThreadExit exit_hook;
    (void)&exit_hook;
    detail::t_graphs.own = ThreadGraphs::get().adopt_or_make();
    if (!detail::t_graphs.current) detail::t_graphs.current = detail::t_graphs.own;
  }
  return *detail::t_graphs.own;
}

Graph& detail::first_graph() {
  Graph& own = thread_graph();
  detail::t_graphs.current = &own;
  return own;
}

std::size_t live_nodes_all_graphs() {
  ThreadGraphs& r = ThreadGraphs::get();
  std::lock_guard lock(r.mu);
  std::size_t n = 0;
  for (Graph* g : r.all) n += g->live();
  return n;
}

std::size_t graphs_made() {
  ThreadGraphs& r = ThreadGraphs::get();
  std::lock_guard lock(r.mu);
  return r.all.size();
}

GraphScope::GraphScope(Graph& g)
    : g_(&g), prev_current_(detail::t_graphs.current), prev_locked_(detail::t_graphs.locked), prev_depth_(detail::t_graphs.depth) {
  if (detail::t_graphs.locked == &g) {
    ++detail::t_graphs.depth;
  } else {
    if (detail::t_graphs.locked) detail::t_graphs.locked->mu_.unlock();
    g.mu_.lock();
    detail::t_graphs.locked = &g;
    detail::t_graphs.depth = 1;
  }
  detail::t_graphs.current = &g;
}

GraphScope::~GraphScope() {
  if (prev_locked_ != g_) {
    g_->mu_.unlock();
    if (prev_locked_) prev_locked_->mu_.lock();
  }
  detail::t_graphs.locked = prev_locked_;
  detail::t_graphs.depth = prev_depth_;
  detail::t_graphs.current = prev_current_;
}

GraphUnlocked::GraphUnlocked() : g_(detail::t_graphs.locked) {
  if (g_) g_->mu_.unlock();
  detail::t_graphs.locked = nullptr;
}

GraphUnlocked::~GraphUnlocked() {
  if (g_) g_->mu_.lock();
  detail::t_graphs.locked = g_;
}

std::vector<std::int64_t> contiguous_strides(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.ndim()));
  std::int64_t acc = 1;
  for (int i = s.ndim() - 1; i >= 0; --i) {
    st[static_cast<std::size_t>(i)] = acc;
    // A shape whose count overflows has no real strides: they saturate here
    // (defined, never used: every caller's size check refuses the shape).
    if (__builtin_mul_overflow(acc, s[i] > 0 ? s[i] : 1, &acc)) acc = INT64_MAX;
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

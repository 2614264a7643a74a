// The node table: every traced array is a Node of its thread's graph,
// addressed by a 32-bit id.
//
// Rules of the IR (what every pass and backend may rely on):
//  - Elementwise nodes (Unary/Binary/Ternary) have inputs of exactly their own
//    shape: tracing inserts Broadcast views, and makes a scalar operand a
//    Constant of the node's shape (a Constant has any shape; it is one value,
//    never stored, as a Broadcast of a rank-0 Constant is). Binary inputs share one dtype
//    (tracing inserts Casts); comparisons and logical ops produce bool; Where's
//    condition is bool and its two values share the node's dtype.
//  - Broadcasting is a Broadcast view; a view is index arithmetic, never a
//    copy (stride 0 for broadcast axes).
//  - Reductions list their axes sorted and non-negative in `ints`; the reduced
//    axes are removed from the shape (keepdims is a Reshape after).
//  - max/min (elementwise and reductions) propagate NaN; -0.0 < +0.0.
//  - Two reference counts: `ext` (user Array handles) and `uses` (nodes that
//    have this node as an input). A node with both at zero is freed at once:
//    its inputs lose a use and its buffer goes back to the allocator.
//  - An evaluated node is a leaf: it holds a Storage plus strides/offset
//    (in elements) and has dropped its inputs.
//
// Threads (docs/semantics.md, "Threads"): every thread traces into a graph of
// its own (thread_graph()), so threads working on separate arrays never
// contend. A Graph has one mutex; whoever touches a graph's mutable state
// holds it (GraphScope), the owning thread included, because other threads
// may drop handles into it, read its evaluated arrays or evaluate its
// unevaluated ones. A thread holds at most one graph lock at a time (entering
// another graph releases the one held and takes it back after), so two
// graphs never deadlock. Evaluation claims the nodes it plans (Node::claim):
// claimed nodes are skipped by CSE, not freed before they are computed and
// never planned by another evaluation until the claim ends; the lock is
// released while kernels run.
// Nodes never move: the table grows by segments, so a Node& stays valid while
// the node lives (Array::shape() returns a reference into it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"
#include "base/op.hpp"
#include "base/storage.hpp"

namespace aj {

using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = 0xffffffffu;  // == Array::kNoNode (checked in core/api/array.cpp)

struct Node {
  Op op = Op::Input;
  DType dtype = DType::f32;
  bool alive = false;
  bool in_cse = false;  // listed in the CSE table (removed when evaluated or freed)
  // Claimed by an evaluation that computes it only inside kernels (never
  // writes it): freed as soon as nothing refers to it, as an unclaimed node,
  // so the values it reads go when their last kernel ran (set_inline_only).
  bool inline_only = false;
  // User handles. Copying a handle adds one without the graph lock (a handle
  // exists, so the node is alive); use Graph::ext_count to read it. Dropping
  // the last one locks the graph (Graph::release_ext).
  std::uint32_t ext = 0;
  std::uint32_t uses = 0;  // nodes that read this one (graph lock held)
  // The evaluation that has planned this node (0: none); see the header.
  std::uint32_t claim = 0;
  std::vector<NodeId> inputs;
  // An ordering-only input (kNoNode: none): the node is scheduled after it
  // (unevaluated_order visits it before the inputs) but never reads it; it
  // holds a use of it like an input. autodiff's recomputation in checkpoint's
  // backward waits for the cotangent so (core/autodiff/custom.hpp).
  NodeId after = kNoNode;
  Shape shape;

  // Payload, by op (see arrayjit/ops.def): scalar values and small integer lists.
  std::int64_t i0 = 0, i1 = 0;
  double f0 = 0.0, f1 = 0.0;
  std::vector<std::int64_t> ints;

  // Evaluated state: a strided view of a storage.
  std::shared_ptr<Storage> storage;
  std::vector<std::int64_t> strides;  // elements; one per axis
  std::int64_t offset = 0;            // elements

  Loc loc;  // where it was traced
  std::size_t hash = 0;

  // Memo of detail::device_of for an unevaluated node (core/api/device.cpp):
  // valid while dev_epoch equals Graph::device_epoch().
  std::uint32_t dev_epoch = 0;
  bool has_dev = false;
  Device dev;

  bool evaluated() const { return storage != nullptr; }
  std::int64_t numel() const { return shape.numel(); }

  // Every field back to its default but the memory of the vectors (shape
  // keeps its stale extents): a freed slot, or a reused node under
  // construction, then allocates nothing for the next node's lists.
  // (A field added to Node is reset here and copied by Graph::add.)
  void reset();
};

// The payload (i0) of a Reshape that is an annotated view (core/api/
// annotations.hpp): a plain alias to every pass, never merged by CSE.
inline constexpr std::int64_t kAnnotatedViewMark = -2;

// The nodes a walk inputs-first visits before node n: its ordering-only
// input (if any), then its inputs in order. Every topological walk that must
// agree with unevaluated_order (the plan cache's key) uses these.
inline std::size_t walk_inputs(const Node& n) { return n.inputs.size() + (n.after != kNoNode); }
inline NodeId walk_input(const Node& n, std::size_t k) {
  if (n.after == kNoNode) return n.inputs[k];
  return k == 0 ? n.after : n.inputs[k - 1];
}

// Copies what an op is (op, dtype) and its payload (i0, i1, f0, f1, ints)
// between a Node and a struct that mirrors it (autodiff's NodeInfo,
// aj::compile's templates), so a payload field added to Node is added there.
template <class To, class From>
void copy_payload(To& to, const From& from) {
  to.op = from.op;
  to.dtype = from.dtype;
  to.i0 = from.i0, to.i1 = from.i1, to.f0 = from.f0, to.f1 = from.f1;
  to.ints = from.ints;
}

// State an upper layer keeps per graph (the optimizer's plan cache and walk
// marks): Graph owns it without knowing its type.
struct GraphAttachment {
  virtual ~GraphAttachment() = default;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Make a node (CSE: an identical unevaluated, unclaimed node is returned
  // instead; never for constants and generators, see takes_part_in_cse).
  // Takes a use of each input. The returned id has no references yet; wrap
  // it with Array::from_node or another node's inputs right away. `n` is
  // copied into the slot's memory where it has room (its own stays with the
  // caller, for a node it reuses: trace::scratch_node), else taken.
  NodeId add(Node&& n);
  // An evaluated leaf (an Input node over `storage`), its shape and strides
  // copied into a recycled slot's vectors: no allocation when a freed node
  // left them large enough (aj::compile's replays make their results so).
  NodeId add_leaf(DType dtype, const Shape& shape, std::shared_ptr<Storage> storage,
                  const std::vector<std::int64_t>& strides, std::int64_t offset);
  Node& operator[](NodeId id) { return *slot(id); }
  const Node& operator[](NodeId id) const { return *slot(id); }
  // One more than the largest id ever issued (walk marks are sized by it).
  std::size_t capacity() const { return count_; }
  std::size_t live() const { return live_.load(std::memory_order_relaxed); }

  // Handles. retain_ext needs no lock (the caller holds a handle or the lock);
  // release_ext takes the lock when the count reaches zero.
  void retain_ext(NodeId id);
  void release_ext(NodeId id);
  std::uint32_t ext_count(NodeId id) const;
  void release_use(NodeId id);
  // A use that no node holds: an evaluation keeps a result it will read
  // again alive (graph lock held); release_use ends it.
  void take_use(NodeId id) { ++(*this)[id].uses; }

  // Turn `id` into an evaluated leaf: set its storage and view, drop inputs.
  void set_result(NodeId id, std::shared_ptr<Storage> storage, std::vector<std::int64_t> strides,
                  std::int64_t offset);

  // Rewrite unevaluated node `id` in place into `like` (same dtype and shape;
  // op, inputs and payload taken from `like`), keeping its id and both
  // reference counts: user handles keep pointing at it. Used by simplify.
  // Takes uses of the new inputs before dropping the old ones.
  void rewrite(NodeId id, const Node& like);
  // How many rewrites this graph has had (a pass that saw none changed nothing).
  std::uint64_t rewrites() const { return rewrites_; }

  // Bumped when a node's result lands on another device than the memo of
  // detail::device_of said (or could have said), which voids every memo.
  // Starts at 1, so a fresh node's memo (epoch 0) is never valid.
  std::uint32_t device_epoch() const { return device_epoch_; }

  // ---- evaluations (graph lock held) ----
  // Marks the nodes an evaluation has planned (unevaluated ones) as its own
  // until unclaim; returns its token.
  std::uint32_t claim(const std::vector<NodeId>& ids);
  // Ends that claim: frees the claimed nodes nothing refers to any more and
  // wakes the evaluations waiting for them.
  void unclaim(const std::vector<NodeId>& ids, std::uint32_t token);
  // Marks the claimed nodes of `ids` but `written` (the nodes the
  // evaluation's steps write) as computed only inside kernels: see
  // Node::inline_only (graph lock held; the claim's end clears it).
  void set_inline_only(const std::vector<NodeId>& ids, const std::vector<NodeId>& written);
  // Whether any evaluation holds a claim now (the common answer, no, lets an
  // evaluation skip looking for claimed nodes).
  bool any_claims() const { return claims_ != 0; }
  // Waits (the lock, which this thread holds, released meanwhile) until
  // some claim ends.
  void wait_for_claims();

  // Per-graph state of upper layers, by slot (see GraphAttachment).
  static constexpr int kAttachmentSlots = 4;
  std::unique_ptr<GraphAttachment>& attachment(int slot) { return attach_[slot]; }

  // The walk behind unevaluated_order (its marks are reused across calls).
  std::vector<NodeId> unevaluated_order(const std::vector<NodeId>& roots);
  // Its schedule for recomputation (graph.cpp says why).
  void hoist_result_tails(std::vector<NodeId>& order, const std::vector<NodeId>& roots);

 private:
  friend class GraphScope;
  friend class GraphUnlocked;
  friend Graph& thread_graph();
  friend struct ThreadGraphs;

  // Segments of kSegment nodes; the directory of segment pointers doubles as
  // needed, and an outgrown directory is kept until the graph goes (a thread
  // reading a node without the lock may still hold it). A node is two loads
  // away: no copy ever moves one.
  static constexpr std::uint32_t kSegmentShift = 10, kSegment = 1u << kSegmentShift;
  Node* slot(NodeId id) const {
    return dir_.load(std::memory_order_acquire)[id >> kSegmentShift] + (id & (kSegment - 1));
  }
  NodeId grow();
  NodeId take_slot();

  void maybe_free(NodeId id);
  void trim_ids();
  void cse_erase(NodeId id);
  bool same_structure(const Node& a, const Node& b) const;

  std::atomic<Node* const*> dir_{nullptr};
  std::vector<std::unique_ptr<Node*[]>> dirs_;    // every directory made (the last is dir_)
  std::vector<std::unique_ptr<Node[]>> segments_;
  std::size_t dir_size_ = 0;
  std::uint32_t count_ = 0;  // ids issued
  std::vector<NodeId> free_;
  std::size_t frees_since_trim_ = 0;
  // Changed under the lock only, read without it (live()): an update is a
  // relaxed load and store, not a locked read-modify-write (one per node
  // made and freed, on the tracing path).
  std::atomic<std::size_t> live_{0};
  void count_live(std::ptrdiff_t delta) {
    live_.store(live_.load(std::memory_order_relaxed) + static_cast<std::size_t>(delta), std::memory_order_relaxed);
  }
  std::uint32_t device_epoch_ = 1;
  std::uint64_t rewrites_ = 0;
  std::uint32_t next_claim_ = 0;
  std::size_t claims_ = 0;  // evaluations holding a claim
  std::size_t waiters_ = 0;  // evaluations waiting for a claim to end
  std::vector<NodeId> free_work_;  // maybe_free's stack
  struct CseTable;
  std::unique_ptr<CseTable> cse_;
  std::unique_ptr<GraphAttachment> attach_[kAttachmentSlots];
  std::vector<std::uint32_t> walk_seen_;
  std::uint32_t walk_epoch_ = 0;
  std::size_t walk_last_size_ = 0;
  std::vector<std::pair<NodeId, std::size_t>> walk_stack_;
  std::mutex mu_;
  std::condition_variable_any claims_cv_;
  bool orphaned_ = false;  // its thread has exited (the graph may be adopted by a new one)
};

// What this thread is doing with graphs (graph.cpp). Initial-exec TLS and
// constinit: reading it is one load, not a call (graph() runs on every node
// access of every pass).
struct ThreadGraphState {
  Graph* own = nullptr;      // this thread's graph (made on first use)
  Graph* current = nullptr;  // graph(): the innermost GraphScope's, else own
  Graph* locked = nullptr;   // the one graph whose lock this thread holds
  int depth = 0;             // scopes relying on that lock
};
namespace detail {
extern constinit thread_local ThreadGraphState t_graphs;
Graph& first_graph();  // makes this thread's graph
}  // namespace detail

// The graph this thread works in now: the one a GraphScope entered, else its
// own. Every pass and the executor use it.
inline Graph& graph() {
  Graph* g = detail::t_graphs.current;
  return g ? *g : detail::first_graph();
}
// This thread's own graph (made on first use; adopted from a thread that has
// exited when one is free).
Graph& thread_graph();
// Live nodes in every graph there is (aj::stats().live_nodes).
std::size_t live_nodes_all_graphs();
// How many graphs were ever made (a thread that starts after another has
// exited reuses its graph once it is empty; tests check that).
std::size_t graphs_made();

// Enter graph g: lock it (unless this thread holds it already: scopes nest)
// and make it the current graph(). A lock this thread holds on another graph
// is released for the scope and taken back at its end, so a thread never
// holds two graph locks.
class GraphScope {
 public:
  explicit GraphScope(Graph& g);
  ~GraphScope();
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;
  Graph& graph() const { return *g_; }

 private:
  Graph* g_;
  Graph* prev_current_;
  Graph* prev_locked_;
  int prev_depth_;
};

// Inside a GraphScope: release the graph lock while long work runs (kernels,
// compiles, copies) and take it back after. Nothing graph-related may be
// touched in between.
class GraphUnlocked {
 public:
  GraphUnlocked();
  ~GraphUnlocked();
  GraphUnlocked(const GraphUnlocked&) = delete;
  GraphUnlocked& operator=(const GraphUnlocked&) = delete;

 private:
  Graph* g_;
};

// Whether this thread holds the lock of graph g now.
inline bool holds_lock(const Graph& g) { return detail::t_graphs.locked == &g; }

// Topological order (inputs first) of the unevaluated nodes the roots need
// (in graph()).
std::vector<NodeId> unevaluated_order(const std::vector<NodeId>& roots);

// Shape helpers.
std::vector<std::int64_t> contiguous_strides(const Shape& s);
bool is_contiguous(const Shape& s, const std::vector<std::int64_t>& strides);

}  // namespace aj

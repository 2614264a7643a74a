// The node table: every traced array is a Node in one flat vector, addressed
// by a 32-bit id.
//
// Rules of the IR (what every pass and backend may rely on):
//  - Elementwise nodes (Unary/Binary/Ternary) have inputs of exactly their own
//    shape: tracing inserts Broadcast views. Binary inputs share one dtype
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
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"
#include "base/storage.hpp"
#include "base/op.hpp"

namespace aj {

using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = 0xffffffffu;  // == Array::kNoNode (checked in core/array.cpp)

struct Node {
  Op op = Op::Input;
  DType dtype = DType::f32;
  bool alive = false;
  bool in_cse = false;  // listed in the CSE table (removed when evaluated or freed)
  std::uint32_t ext = 0;   // user handles
  std::uint32_t uses = 0;  // nodes that read this one
  std::vector<NodeId> inputs;
  Shape shape;

  // Payload, by op (see base/ops.def): scalar values and small integer lists.
  std::int64_t i0 = 0, i1 = 0;
  double f0 = 0.0, f1 = 0.0;
  std::vector<std::int64_t> ints;

  // Evaluated state: a strided view of a storage.
  std::shared_ptr<Storage> storage;
  std::vector<std::int64_t> strides;  // elements; one per axis
  std::int64_t offset = 0;            // elements

  Loc loc;  // where it was traced
  std::size_t hash = 0;

  // Memo of detail::device_of for an unevaluated node (core/device.cpp):
  // valid while dev_epoch equals Graph::device_epoch().
  std::uint32_t dev_epoch = 0;
  bool has_dev = false;
  Device dev;

  bool evaluated() const { return storage != nullptr; }
  std::int64_t numel() const { return shape.numel(); }
};

class Graph {
 public:
  // Make a node (CSE: an identical unevaluated node is returned instead).
  // Takes a use of each input. The returned id has no references yet; wrap it
  // with Array::from_node or another node's inputs right away.
  NodeId add(Node n);
  Node& operator[](NodeId id) { return nodes_[id]; }
  const Node& operator[](NodeId id) const { return nodes_[id]; }
  std::size_t capacity() const { return nodes_.size(); }
  std::size_t live() const { return live_; }

  void retain_ext(NodeId id) { ++nodes_[id].ext; }
  void release_ext(NodeId id);
  void release_use(NodeId id);

  // Turn `id` into an evaluated leaf: set its storage and view, drop inputs.
  void set_result(NodeId id, std::shared_ptr<Storage> storage, std::vector<std::int64_t> strides,
                  std::int64_t offset);

  // Rewrite unevaluated node `id` in place into `like` (same dtype and shape;
  // op, inputs and payload taken from `like`), keeping its id and both
  // reference counts: user handles keep pointing at it. Used by simplify.
  // Takes uses of the new inputs before dropping the old ones.
  void rewrite(NodeId id, const Node& like);

  // Bumped when a node's result lands on another device than the memo of
  // detail::device_of said (or could have said), which voids every memo.
  // Starts at 1, so a fresh node's memo (epoch 0) is never valid.
  std::uint32_t device_epoch() const { return device_epoch_; }

 private:
  void maybe_free(NodeId id);
  void cse_erase(NodeId id);
  bool same_structure(const Node& a, const Node& b) const;

  std::vector<Node> nodes_;
  std::vector<NodeId> free_;
  std::size_t live_ = 0;
  std::uint32_t device_epoch_ = 1;
  struct CseTable;
  std::shared_ptr<CseTable> cse_;
};

// The process-wide graph. Tracing is single-threaded: use one thread at a
// time for arrayjit calls (see README).
Graph& graph();

// Topological order (inputs first) of the unevaluated nodes the roots need.
std::vector<NodeId> unevaluated_order(const std::vector<NodeId>& roots);

// Shape helpers.
std::vector<std::int64_t> contiguous_strides(const Shape& s);
bool is_contiguous(const Shape& s, const std::vector<std::int64_t>& strides);

}  // namespace aj

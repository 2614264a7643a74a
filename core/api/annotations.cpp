// Annotated views (core/api/annotations.hpp): the table of annotations, one
// per graph, keyed by the view's node id.
#include "core/api/annotations.hpp"

#include <unordered_map>

#include "core/api/trace.hpp"

namespace aj::trace {

namespace {

constexpr int kSlot = 1;  // this file's graph attachment slot (the plan cache has 0)

struct Table final : GraphAttachment {
  std::unordered_map<NodeId, std::shared_ptr<const Annotation>> by_node;
  std::size_t sweep_at = 64;  // sweep stale entries when the table grows past this
};

Table* table(bool make) {
  auto& slot = graph().attachment(kSlot);
  if (!slot && make) slot = std::make_unique<Table>();
  return static_cast<Table*>(slot.get());
}

// Whether the entry for `id` still belongs to a live annotated view (a freed
// view's id may have been given to another node since).
bool current(const Graph& g, NodeId id) { return id < g.capacity() && is_annotated_view(g[id]); }

// Drops the entries of views that were freed or evaluated: what they hold is
// released (the arrays of a custom rule nobody can differentiate any more).
void sweep(Table& t) {
  const Graph& g = graph();
  for (auto it = t.by_node.begin(); it != t.by_node.end();) {
    it = current(g, it->first) ? std::next(it) : t.by_node.erase(it);
  }
  t.sweep_at = std::max<std::size_t>(64, 2 * t.by_node.size());
}

}  // namespace

bool is_annotated_view(const Node& n) {
  return n.alive && n.op == Op::Reshape && n.i0 == kAnnotatedViewMark && !n.evaluated();
}

Array annotated_view(const Array& x, std::shared_ptr<const Annotation> a, const Loc& loc) {
  Table& t = *table(true);
  if (t.by_node.size() >= t.sweep_at) sweep(t);
  Array v = marked_alias(x, kAnnotatedViewMark, loc);
  t.by_node[v.node_id()] = std::move(a);  // replaces a stale entry of a freed view with this id
  return v;
}

std::shared_ptr<const Annotation> annotation(NodeId id) {
  Table* t = table(false);
  if (!t) return nullptr;
  auto it = t->by_node.find(id);
  if (it == t->by_node.end()) return nullptr;
  if (!current(graph(), id)) {
    t->by_node.erase(it);
    return nullptr;
  }
  return it->second;
}

void drop_annotations(const std::vector<NodeId>& roots) {
  Table* t = table(false);
  if (!t || t->by_node.empty()) return;
  Graph& g = graph();
  // Taken out of the table first: releasing what they hold may free nodes,
  // which must not find the table half changed.
  std::vector<std::shared_ptr<const Annotation>> dropped;
  for (NodeId id : unevaluated_order(roots)) {
    if (g[id].op != Op::Reshape || g[id].i0 != kAnnotatedViewMark) continue;
    auto it = t->by_node.find(id);
    if (it == t->by_node.end()) continue;
    dropped.push_back(std::move(it->second));
    t->by_node.erase(it);
  }
  // And those of views freed meanwhile (a custom function's output nobody
  // kept: the loss grad drops), whose arrays would hold the arguments.
  for (auto it = t->by_node.begin(); it != t->by_node.end();) {
    if (current(g, it->first)) {
      ++it;
      continue;
    }
    dropped.push_back(std::move(it->second));
    it = t->by_node.erase(it);
  }
  dropped.clear();
}

std::size_t annotation_count() {
  Table* t = table(false);
  return t ? t->by_node.size() : 0;
}

}  // namespace aj::trace

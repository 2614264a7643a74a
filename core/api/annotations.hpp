// Annotated views: an alias of a value that carries something a
// transformation attached to it, for as long as the value is unevaluated.
//
// autodiff's custom rules (aj::custom_vjp, custom_jvp, checkpoint) wrap each
// output of a custom function in one: the reverse and forward walks stop at
// it and ask its annotation for the derivative instead of differentiating the
// ops beneath. core/api keeps the table and drops an annotation when its view
// is evaluated (the first thing detail::evaluate does, before planning, so the
// arrays an annotation holds never keep a buffer from being reused in place)
// or freed; what an annotation is, only its maker knows.
//
// The view is a Reshape of the value to its own shape marked
// kAnnotatedViewMark (graph/graph.hpp): every pass treats it as the plain
// alias it is, simplify keeps it (it keeps marked Reshapes), and tracing's
// CSE never merges two of them, so each custom call keeps its own.
#pragma once

#include <memory>
#include <vector>

#include "arrayjit/array.hpp"
#include "graph/graph.hpp"

namespace aj::trace {

struct Annotation {
  virtual ~Annotation() = default;
};

// An annotated view of x carrying `a` (inside a trace::Scope; x local).
Array annotated_view(const Array& x, std::shared_ptr<const Annotation> a, const Loc& loc);

// Whether node n is an annotated view (unevaluated).
bool is_annotated_view(const Node& n);

// The annotation of node `id` (graph lock held): null when the node is not
// an unevaluated annotated view, or its annotation was dropped (an
// evaluation that reached it failed).
std::shared_ptr<const Annotation> annotation(NodeId id);

// Drops the annotations of the annotated views the roots reach (graph lock
// held): an evaluation of the roots is about to make them leaves; and those
// of views freed since they were made. Nothing to do, and nothing walked,
// while the graph has no annotation.
void drop_annotations(const std::vector<NodeId>& roots);

// How many annotations the current graph holds (tests).
std::size_t annotation_count();

}  // namespace aj::trace

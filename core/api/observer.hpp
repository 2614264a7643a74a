// How the transformations above the API (aj::compile, grad/vjp/jvp) learn what
// the user code they trace does. Each registers an Observer with the tracer
// of its thread for as long as it traces (an Observing in scope), and the API
// reports to every registered one, innermost first. core/api names no
// transformation: what each does with a report is its own (core/compile,
// core/autodiff).
#pragma once

#include <vector>

#include "arrayjit/array.hpp"
#include "arrayjit/error.hpp"
#include "graph/graph.hpp"

namespace aj::trace {

class Observer {
 public:
  virtual ~Observer() = default;
  // The traced code read an extent in C++ (Array::shape(), size()) outside
  // any op: it may have branched on it.
  virtual void shape_read() {}
  // The library made Constant `id` from extents (mean's count).
  virtual void extent_constant(NodeId id) { (void)id; }
  // Slice node `id` was made by aj::slice from `slices` as given (its node
  // holds the normalized start and step only).
  virtual void slice(NodeId id, const std::vector<Slice>& slices) {
    (void)id;
    (void)slices;
  }
  // The traced code made op node `id` (not a leaf holding memory), called
  // with the graph's lock held: a result the code drops is made too, and its
  // shape checks are part of what the code does.
  virtual void made(NodeId id) { (void)id; }
  // An evaluation of `roots` is about to run on this thread (eval, item,
  // to_vector, printing, another thread's array imported): throw aj::Error to
  // refuse it. Called with the lock of the roots' graph held.
  virtual void evaluating(const std::vector<NodeId>& roots, const Loc& loc) {
    (void)roots;
    (void)loc;
  }
};

// Registers `o` on this thread while alive; nests (the innermost hears first).
class Observing {
 public:
  explicit Observing(Observer& o);
  ~Observing();
  Observing(const Observing&) = delete;
  Observing& operator=(const Observing&) = delete;
  Observer& observer() const { return observer_; }
  const Observing* outer() const { return outer_; }

 private:
  Observer& observer_;
  const Observing* outer_;
};

// Whether a transformation traces on this thread: a compiled or traced call
// made now records its ops inline instead of running.
bool observed();

// The API's reports (each costs a thread-local test when nothing observes).
void report_shape_read();
void report_extent_constant(NodeId id);
void report_made(NodeId id);
void report_slice(NodeId id, const std::vector<Slice>& slices);
void report_evaluating(const std::vector<NodeId>& roots, const Loc& loc);

}  // namespace aj::trace

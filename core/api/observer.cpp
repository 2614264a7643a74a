// The tracer's observers (see observer.hpp).
#include "core/api/observer.hpp"

namespace aj::trace {

namespace {
// This thread's innermost registration; each links to the one it nests in
// (registering allocates nothing, and a test costs one load).
constinit thread_local const Observing* t_top = nullptr;

template <class F> void each(F&& f) {
  for (const Observing* o = t_top; o; o = o->outer()) f(o->observer());
}
}  // namespace

Observing::Observing(Observer& o) : observer_(o), outer_(t_top) { t_top = this; }

Observing::~Observing() { t_top = outer_; }

bool observed() { return t_top != nullptr; }

void report_shape_read() {
  each([](Observer& o) { o.shape_read(); });
}

void report_extent_constant(NodeId id) {
  each([id](Observer& o) { o.extent_constant(id); });
}

void report_made(NodeId id) {
  each([id](Observer& o) { o.made(id); });
}

void report_slice(NodeId id, const std::vector<Slice>& slices) {
  each([&](Observer& o) { o.slice(id, slices); });
}

void report_evaluating(const std::vector<NodeId>& roots, const Loc& loc) {
  each([&](Observer& o) { o.evaluating(roots, loc); });
}

}  // namespace aj::trace

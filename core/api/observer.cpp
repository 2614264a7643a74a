// The tracer's observers (see observer.hpp).
#include "core/api/observer.hpp"

namespace aj::trace {

namespace {
// This thread's observers, outermost first. A fixed array: registering
// allocates nothing, and transformations nest only a few deep (grad of
// grad inside a compiled function).
constexpr int kMaxObservers = 32;
constinit thread_local Observer* t_observers[kMaxObservers] [[gnu::tls_model("initial-exec")]] = {};
constinit thread_local int t_count [[gnu::tls_model("initial-exec")]] = 0;

template <class F> void each(F&& f) {
  for (int k = t_count - 1; k >= 0; --k) f(*t_observers[k]);
}
}  // namespace

Observing::Observing(Observer& o) {
  if (t_count == kMaxObservers) {
    runtime_error("aj: more than " + std::to_string(kMaxObservers) +
                  " nested transformations (compile, grad, vjp, jvp) on one thread");
  }
  t_observers[t_count++] = &o;
}

Observing::~Observing() { t_observers[--t_count] = nullptr; }

bool observed() { return t_count > 0; }

void report_shape_read() {
  each([](Observer& o) { o.shape_read(); });
}

void report_extent_constant(NodeId id) {
  each([id](Observer& o) { o.extent_constant(id); });
}

void report_evaluating(const std::vector<NodeId>& roots, const Loc& loc) {
  each([&](Observer& o) { o.evaluating(roots, loc); });
}

}  // namespace aj::trace

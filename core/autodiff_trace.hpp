// The one hook autodiff needs in evaluation (called by aj::eval, which every
// read-out goes through): while grad/vjp/jvp trace f, an evaluation that
// reaches an argument being differentiated would turn the traced nodes into
// leaves and cut the derivative's graph, so it is refused.
#pragma once

#include <vector>

#include "arrayjit/error.hpp"
#include "graph/graph.hpp"

namespace aj::detail {

// Traces of f in progress on this thread (nested for grad of grad).
extern thread_local int t_autodiff_traces [[gnu::tls_model("initial-exec")]];

void reject_traced_eval(const std::vector<NodeId>& roots, const Loc& loc);

// Throws aj::Error (naming loc) if an evaluation of `roots` would evaluate a
// value that depends on an argument a trace in progress differentiates.
inline void check_eval_while_tracing(const std::vector<NodeId>& roots, const Loc& loc) {
  if (t_autodiff_traces > 0) reject_traced_eval(roots, loc);
}

}  // namespace aj::detail

// Functions with derivatives of their own (arrayjit/autodiff.hpp: custom_vjp,
// custom_jvp, checkpoint): what a call leaves in the graph for the reverse
// and forward walks of core/autodiff/autodiff.cpp.
//
// A call traces the function as usual and wraps each floating-point output in
// an annotated view (core/api/annotations.hpp) whose annotation names the
// call and the output's position. The walks go from such a view straight to
// the call's arguments, never into the ops beneath it, and ask the call for
// the derivative:
//  - custom_vjp: reverse mode runs the user's bwd on the residuals fwd made
//    and the outputs' cotangents (zeros where an output got none); forward
//    mode is refused, as in JAX.
//  - custom_jvp: forward mode runs the user's rule on the arguments and
//    their tangents; reverse mode transposes that rule (the vjp of the linear
//    map t -> rule(arguments, t), as JAX derives it).
//  - checkpoint: both modes differentiate the function again on fresh
//    aliases of its arguments (annotated views CSE never merges with the
//    forward's nodes, so the backward recomputes the function's values
//    instead of keeping them); the reverse aliases are ordered after the
//    outputs' cotangents (Op::Reshape reading them: see recompute_alias).
#pragma once

#include <memory>
#include <vector>

#include "arrayjit/autodiff.hpp"
#include "core/api/annotations.hpp"

namespace aj::autodiff {

enum class CustomKind { vjp, jvp, checkpoint };

struct CustomCall {
  CustomKind kind = CustomKind::vjp;
  const char* what = "custom_vjp";  // the entry point, for messages
  Loc loc;                          // where the custom function was made
  std::vector<Array> args;          // the call's arguments (this graph's)
  std::vector<NodeId> arg_ids;      // their nodes: where the walks go from an output
  std::vector<Array> outs;          // the outputs as the function returned them
  std::vector<Array> residuals;     // custom_vjp: what fwd saved for bwd
  VjpBwdFn bwd;                     // custom_vjp
  JvpRuleFn jvp;                    // custom_jvp
  VectorFn f;                       // checkpoint
};

// The annotation of one output's view.
struct CustomOutput final : trace::Annotation {
  std::shared_ptr<const CustomCall> call;
  std::size_t index = 0;  // position among the call's outputs
};

// Arrays of this thread's graph for the handles in `v`: an array of another
// thread's graph becomes a leaf of this one sharing its evaluated storage
// (evaluated there first; trace::local), held by the handle returned. Empty
// handles stay empty (the callers say what they mean).
std::vector<Array> local_all(const std::vector<Array>& v, const char* what, const Loc& loc);

// The call behind node `id` (an annotated view): null when `id` is not a
// custom function's output. An output whose annotation was dropped (an
// evaluation of it failed) is a user error naming `what`.
std::shared_ptr<const CustomOutput> custom_output(NodeId id, const char* what);

// Reverse mode through one call: the arguments' cotangents (empty: zero)
// from the outputs' (empty: zero). Graph lock held; released while user code runs.
std::vector<Array> custom_vjp_of(const CustomCall& c, const std::vector<Array>& out_cts);
// Forward mode: the outputs' tangents (empty: zero) from the arguments'.
std::vector<Array> custom_jvp_of(const CustomCall& c, const std::vector<Array>& arg_tangents);

}  // namespace aj::autodiff

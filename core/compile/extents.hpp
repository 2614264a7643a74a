// Replays across extents (docs/extent-replays.md): what aj::compile keeps of
// a trace so that a call with the same signature but other extents runs
// without calling the function again.
//
// A Template is the graph a compiled trace made, copied before evaluation:
// each node's op, payload and inputs, and each of its extents as an
// expression over the arguments' extents (the symbols; extents 0 and 1 are
// part of the signature and stay numbers). The expressions come from the
// IR's shape rules (an elementwise node's extents are its inputs', a
// reduction drops its axes, a concatenation adds, a broadcast takes what its
// consumers say), and every equality a rule relies on becomes a guard.
//
// A template is trusted only after a second trace of the function, at
// extents where every symbol differs, reproduces it exactly: each node, each
// extent, each payload number. What the rules cannot say (a slice's start
// from the end, `mean`'s 1/n, a split reshape) is fitted then, as an
// expression that gives both traces' numbers, and used only when exactly
// one fits. A function that read an extent in C++ while traced (shape(),
// size()) is never generalized: it may have branched on it.
//
// A trusted template is instantiated at a call's extents: its nodes are made
// again in the thread's graph (no user code runs) and evaluated as usual;
// core/compile/compile.cpp keeps the program that evaluation plans.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"
#include "graph/graph.hpp"

namespace aj::detail::extents {

struct Template;

// The template of a trace whose results are `results` and whose array
// arguments are the leaves `args` (graph lock held, before evaluation).
// `made`: every op node the function made, results or not; the template
// makes them all again (their shape rules are guards), returns the results.
// Null, with the reason in *why, when the trace cannot be generalized.
// `scalars`: the call's scalar arguments whose values may change between
// calls (a constant that follows one is fitted to it, as an extent is).
// `extent_constants`: the Constant nodes the library made from an extent
// while the function was traced (mean's count): only these are fitted to
// extents.
// `slices`: each Slice node aj::slice made while traced, with its slices as
// given (core/api/observer.hpp).
using SliceSpecs = std::vector<std::pair<NodeId, std::vector<Slice>>>;
std::shared_ptr<Template> capture(const std::vector<NodeId>& args, const std::vector<Scalar>& scalars,
                                  const std::vector<NodeId>& results, const std::vector<NodeId>& made,
                                  const std::vector<NodeId>& extent_constants, const SliceSpecs& slices,
                                  std::string* why);

// Checks `first` against `second`, the same function traced at other
// extents, fitting what the rules left open; true when `first` may now be
// instantiated. Inside a trace::Scope of the thread's graph.
bool validate(Template& first, const Template& second, std::string* why);
// A trusted template `t` widened by `w`, a trace of the same function at a
// call it refused only for a scalar argument it pinned (both of its checking
// traces had that value): when w is t's graph at w's extents, with every
// constant that changed exactly one of those scalars as it is, the scalars
// are no longer pinned and those constants follow them (a learning rate
// that changes each epoch while the batch sizes vary). False, t unchanged,
// otherwise.
bool widen(Template& t, const Template& w, std::string* why);
// Whether some argument extent differs between the two traces (else a
// second trace says nothing new).
bool extents_differ(const Template& a, const Template& b);
std::shared_ptr<Template> copy(const Template& t);

// The results of `t` at the extents of the argument leaves `args` (nodes of
// graph(), inside a trace::Scope): false, with the reason, when a guard does
// not hold there (the caller traces the function instead). A template not
// yet validated is made only at its own extents and scalar values (for
// arguments of another layout, a minibatch's view of a dataset).
// `made` (when given): each node made, with what it is of the scalars: the
// index of the scalar argument a Constant is (>= 0), -2 for a node computed
// from one (a kernel scalar of it would not follow the argument), -1 else.
bool instantiate(const Template& t, const std::vector<NodeId>& args, const std::vector<Scalar>& scalars,
                 std::vector<Array>* results, std::string* why,
                 std::vector<std::pair<NodeId, int>>* made = nullptr);
// Whether a call with argument leaves `args` and these scalars meets the
// template's guards (what instantiate checks first); the reason when not.
bool admits(const Template& t, const std::vector<NodeId>& args, const std::vector<Scalar>& scalars, std::string* why);
// Whether two C++ scalar arguments are the same value of the same kind (bit
// for bit).
bool same_scalar(const Scalar& a, const Scalar& b);

}  // namespace aj::detail::extents

// A generator of random arrayjit programs for the differential test
// (tests/test_differential.cpp).
//
// A program is a sequence of steps driven by one std::mt19937_64 seed: make an
// input, apply an elementwise op, a reduction, a view, matmul, concatenate,
// an indexing op (take, take_along_axis, scatter(_add), slice_update/add,
// pad, roll, one_hot), evaluate an intermediate, drop or rebind a handle (`v3 = add(v3, 2)`, so the
// old value has no handle left). Every choice depends only on the seed and on
// trace-time facts (shapes, dtypes), never on computed values, so building the
// same seed twice — once per executor — traces the same graph.
//
// Each value carries a Bound: what the generator knows about how far the two
// executors' results may legitimately differ. Bit-exact ops (IEEE + - * /,
// sqrt, comparisons, casts, views, max/min, integer math) on exact inputs stay
// exact. Float reductions, matmul and transcendental functions may be
// reassociated / vectorized by an optimizer, so they start an error bound that
// later ops propagate by a forward error analysis (see Bound). Ops that are
// discontinuous (comparisons, floor/ceil/round/sign, float mod, casts to
// integers or bool, argmax/argmin, all/any) are only applied to exact values,
// so an inexact input can never flip an integer or bool result. Values that
// may hold inf/NaN or grow large are "tamed" (NaN -> 0, clipped to [-4, 4]) before
// they meet inexact arithmetic, so every error bound stays finite and every
// inf/NaN position is the same in both executors.
//
// The generator in pieces:
//   tests/random_graph_bound.hpp        Bound (error bounds), limits, helpers
//   tests/random_graph_generator.hpp    RandomGraph: randomness, the pool of
//                                       handles, inputs, the program loop
//   tests/random_graph_elementwise.hpp  unary, binary, where, astype steps
//   tests/random_graph_axes.hpp         reduce, scan/sort, view, matmul,
//                                       concatenate, indexing steps
//   tests/random_graph_compile.hpp      compile mode: the program as a
//                                       function of its inputs (aj::compile)
// Tests include this header: it includes them all, and runs a program
// (evaluate_graph) and compares two executors' outputs (compare_output).
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/random_graph_axes.hpp"
#include "tests/random_graph_bound.hpp"
#include "tests/random_graph_compile.hpp"
#include "tests/random_graph_elementwise.hpp"
#include "tests/random_graph_generator.hpp"

namespace ajtest {

// Defined in test_differential.cpp (its header comment states the rule): the
// first element where `got` is not acceptably close to `want`, or nullopt.
std::optional<std::string> compare_values(aj::DType t, const Bound& b, const std::vector<double>& want,
                                          const std::vector<double>& got);
std::optional<std::string> compare_ints(const std::vector<std::int64_t>& want,
                                        const std::vector<std::int64_t>& got);

// One output of a random graph, read back.
struct GraphOutput {
  aj::DType t;
  Bound b;
  std::vector<double> f;
  std::vector<std::int64_t> k;
};

// Builds program `seed`, evaluates its outputs in one eval and reads them
// back. Where it runs is the caller's: an ExecutorScope, a DeviceScope.
inline std::vector<GraphOutput> evaluate_graph(std::uint64_t seed) {
  RandomGraph g(seed);
  g.build();
  std::vector<Array> arrays;
  for (auto& o : g.outputs()) arrays.push_back(o.array);
  aj::eval(arrays);
  std::vector<GraphOutput> outs;
  for (auto& o : g.outputs()) {
    GraphOutput r{o.array.dtype(), o.bound, {}, {}};
    RandomGraph::read(o.array, &r.f, &r.k);
    outs.push_back(std::move(r));
  }
  return outs;
}

// compare_values or compare_ints, as the output's dtype asks.
inline std::optional<std::string> compare_output(const GraphOutput& want, const GraphOutput& got) {
  return aj::is_float(want.t) ? compare_values(want.t, want.b, want.f, got.f) : compare_ints(want.k, got.k);
}

}  // namespace ajtest

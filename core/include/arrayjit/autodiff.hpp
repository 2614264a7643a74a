// Automatic differentiation of traced programs: reverse mode (vjp, grad,
// value_and_grad), forward mode (jvp), stop_gradient, sum_to_shape.
//
// `f` is any C++ callable over arrays: it takes one Array, several Arrays, or
// one std::vector<Array>, and returns an Array or a std::vector<Array>; C++
// scalars and other arrays it needs are captured (they are constants: no
// gradient flows into a captured array, as in JAX). f is called once, on
// fresh stand-ins for the primals (tracers: the same values, new graph nodes),
// and the derivative is built from the graph f traced, by one rule per op
// (core/autodiff/rules.cpp). Gradients are ordinary lazy arrays: evaluating
// them together with f's outputs fuses the forward and the backward work into
// one plan, with buffer reuse like any other graph, and differentiating a
// gradient again works (grad of grad).
//
// What f may not do: evaluate (eval, item, to_vector, printing, ...) a value
// that depends on the arguments being differentiated. That would cut the
// graph the derivative is built from, so it is an aj::Error naming the line;
// return the value from f instead (vjp returns all of f's outputs). Values
// that do not depend on the arguments may be evaluated freely.
//
// Threads: primals, cotangents, tangents and arrays f captures may belong to
// another thread's graph (imported like any op's operands); no graph lock is
// held while f runs.
//
// Rules (docs/semantics.md, "Differentiation", has the full table):
//  - Only floating-point values carry derivatives. Integer and bool arguments
//    get no gradient: vjp/jvp give zeros of their shape and dtype, grad and
//    value_and_grad refuse them (aj::Error, as JAX).
//  - Ties: max/min (elementwise and reductions) split the gradient equally
//    between tied elements (JAX's rule). abs has derivative sign(x) (0 at 0);
//    floor, ceil, round and sign have derivative 0. sort/topk send each
//    cotangent to the element the (stable) order put there.
//  - Indexing: take and scatter_add are each other's transposes (repeated
//    indices accumulate); scatter's update gets a cotangent only where it won
//    its position; dropped (out-of-range) updates get 0.
//
// Functions with derivatives of their own (JAX's semantics; the end of this
// file): custom_vjp(f, fwd, bwd), custom_jvp(f, rule), and checkpoint(f),
// whose backward recomputes f's values instead of keeping them.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// The value of x, with no derivative flowing through it: gradients treat it as
// a constant (JAX's lax.stop_gradient). A view of x; integers and bools pass
// through unchanged.
Array stop_gradient(const Array& x, Loc loc = Loc::current());

// Sum x down to `shape`, the reverse of broadcasting x from `shape`: leading
// axes are summed away and axes where `shape` has extent 1 are summed with
// keepdims. Throws unless `shape` broadcasts to x's shape.
Array sum_to_shape(const Array& x, const Shape& shape, Loc loc = Loc::current());

// f over a vector of arrays, the form every entry point below reduces to.
using VectorFn = std::function<std::vector<Array>(const std::vector<Array>&)>;
// The parts of a custom function (custom_vjp, custom_jvp below), over vectors:
// fwd's outputs and residuals; bwd's cotangents of the arguments from the
// residuals and the outputs' cotangents; a jvp rule's tangents of the outputs
// from the arguments and their tangents.
using VjpFwdFn = std::function<std::pair<std::vector<Array>, std::vector<Array>>(const std::vector<Array>&)>;
using VjpBwdFn =
    std::function<std::vector<Array>(const std::vector<Array>& residuals, const std::vector<Array>& cotangents)>;
using JvpRuleFn =
    std::function<std::vector<Array>(const std::vector<Array>& args, const std::vector<Array>& tangents)>;

namespace detail {
// The implementation (core/autodiff/autodiff.cpp). `what` names the entry point in
// error messages.
std::pair<std::vector<Array>, std::vector<Array>> vjp(const VectorFn& f,
                                                      const std::vector<Array>& primals,
                                                      const std::vector<Array>& cotangents,
                                                      const char* what, const Loc& loc);
std::pair<std::vector<Array>, std::vector<Array>> jvp(const VectorFn& f,
                                                      const std::vector<Array>& primals,
                                                      const std::vector<Array>& tangents,
                                                      const char* what, const Loc& loc);
// f's first output must be a floating-point scalar; returns it and its
// gradient with respect to primals[argnums[i]].
std::pair<Array, std::vector<Array>> value_and_grad(const VectorFn& f,
                                                    const std::vector<Array>& primals,
                                                    const std::vector<int>& argnums,
                                                    const char* what, const Loc& loc);

inline std::vector<Array> as_vector(Array a) { return {std::move(a)}; }
inline std::vector<Array> as_vector(std::vector<Array> v) { return v; }

// The custom functions' implementation (core/autodiff/custom.cpp), over
// vectors; the templates at the end of this file adapt the user's callables.
std::vector<Array> custom_vjp(const VectorFn& f, const VjpFwdFn& fwd, const VjpBwdFn& bwd,
                              const std::vector<Array>& args, const Loc& loc);
std::vector<Array> custom_jvp(const VectorFn& f, const JvpRuleFn& rule, const std::vector<Array>& args,
                              const Loc& loc);
std::vector<Array> checkpoint(const VectorFn& f, const std::vector<Array>& args, const Loc& loc);

template <class R>
concept ArrayResult = std::same_as<std::decay_t<R>, Array> || std::same_as<std::decay_t<R>, std::vector<Array>>;

// f called with the arrays of v as separate arguments (N of them).
template <std::size_t N, class F>
decltype(auto) call_spread(F& f, const std::vector<Array>& v) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return f(v[I]...);
  }(std::make_index_sequence<N>{});
}

// The arguments a user passes to a gradient callable: either several Arrays
// or one std::vector<Array>. Returns the primals and f as a VectorFn.
template <class F, class... A>
std::pair<std::vector<Array>, VectorFn> bind_args(F& f, const A&... args) {
  if constexpr (sizeof...(A) == 1 && (std::same_as<std::decay_t<A>, std::vector<Array>> && ...)) {
    static_assert(std::invocable<F&, const std::vector<Array>&>,
                  "aj: called with a std::vector<Array>, so f must take one std::vector<Array>");
    std::vector<Array> primals = std::get<0>(std::forward_as_tuple(args...));
    return {std::move(primals), [&f](const std::vector<Array>& v) { return as_vector(f(v)); }};
  } else {
    static_assert((std::convertible_to<const A&, const Array&> && ...),
                  "aj: the arguments of a gradient function are Arrays (or one std::vector<Array>); "
                  "capture C++ scalars in f instead");
    static_assert(std::invocable<F&, const std::conditional_t<true, Array, A>&...>,
                  "aj: f must take as many Arrays as the gradient function is called with");
    std::vector<Array> primals{Array(args)...};
    return {std::move(primals),
            [&f](const std::vector<Array>& v) { return as_vector(call_spread<sizeof...(A)>(f, v)); }};
  }
}
// How a custom function is called: with one std::vector<Array> (Vec) or N
// separate Arrays, as the user's callable takes them.
template <bool Vec, std::size_t N, class F>
decltype(auto) call_as(F& f, const std::vector<Array>& v) {
  if constexpr (Vec) return f(v);
  else return call_spread<N>(f, v);
}
template <class... A>
constexpr bool one_vector = sizeof...(A) == 1 && (std::same_as<std::decay_t<A>, std::vector<Array>> && ...);
template <class... A>
std::vector<Array> args_vector(const A&... args) {
  if constexpr (one_vector<A...>) return std::vector<Array>(args...);
  else {
    static_assert((std::convertible_to<const A&, const Array&> && ...),
                  "aj: a custom function takes Arrays (or one std::vector<Array>); capture C++ scalars instead");
    return std::vector<Array>{Array(args)...};
  }
}
// bwd called with the cotangents as f returned its outputs: one Array, or a
// vector. (A template of R, so that compilers check the call only for the
// R at hand: clang checks a non-dependent call even in a discarded branch.)
template <class R, class Bwd>
std::vector<Array> call_bwd(Bwd& bwd, const std::vector<Array>& res, const std::vector<Array>& cts) {
  if constexpr (std::same_as<R, Array>) return as_vector(bwd(res, cts[0]));
  else return as_vector(bwd(res, cts));
}
template <class R>
decltype(auto) first_or_all(std::vector<Array>&& v) {
  if constexpr (std::same_as<R, Array>) return Array(std::move(v[0]));
  else return std::vector<Array>(std::move(v));
}
}  // namespace detail

// ---- reverse mode ------------------------------------------------------------

// f's outputs and the vector-Jacobian product: for each primal, the sum over
// f's outputs of cotangent_j^T (d output_j / d primal). One cotangent per
// output, of the output's shape (a float cotangent is cast to the output's
// float dtype; cotangents of integer or bool outputs are ignored).
template <class F>
  requires std::invocable<F&, const std::vector<Array>&>
std::pair<std::vector<Array>, std::vector<Array>> vjp(F&& f, const std::vector<Array>& primals,
                                                      const std::vector<Array>& cotangents,
                                                      Loc loc = Loc::current()) {
  VectorFn fn = [&f](const std::vector<Array>& v) { return detail::as_vector(f(v)); };
  return detail::vjp(fn, primals, cotangents, "vjp", loc);
}
// One array in, one out: (f(primal), cotangent^T df/dprimal).
template <class F>
  requires std::invocable<F&, const Array&>
std::pair<Array, Array> vjp(F&& f, const Array& primal, const Array& cotangent,
                            Loc loc = Loc::current()) {
  VectorFn fn = [&f](const std::vector<Array>& v) { return detail::as_vector(f(v[0])); };
  auto [outs, cts] = detail::vjp(fn, {primal}, {cotangent}, "vjp", loc);
  if (outs.size() != 1) {
    user_error("vjp", "f returned " + std::to_string(outs.size()) +
                          " arrays, one cotangent was given (pass vectors for several outputs)", loc);
  }
  return {std::move(outs[0]), std::move(cts[0])};
}

// ---- forward mode -------------------------------------------------------------

// f's outputs and the Jacobian-vector product: for each output, the sum over
// primals of (d output / d primal_i) tangent_i. One tangent per primal, of its
// shape (tangents of integer or bool primals are ignored).
template <class F>
  requires std::invocable<F&, const std::vector<Array>&>
std::pair<std::vector<Array>, std::vector<Array>> jvp(F&& f, const std::vector<Array>& primals,
                                                      const std::vector<Array>& tangents,
                                                      Loc loc = Loc::current()) {
  VectorFn fn = [&f](const std::vector<Array>& v) { return detail::as_vector(f(v)); };
  return detail::jvp(fn, primals, tangents, "jvp", loc);
}
template <class F>
  requires std::invocable<F&, const Array&>
std::pair<Array, Array> jvp(F&& f, const Array& primal, const Array& tangent,
                            Loc loc = Loc::current()) {
  VectorFn fn = [&f](const std::vector<Array>& v) { return detail::as_vector(f(v[0])); };
  auto [outs, ts] = detail::jvp(fn, {primal}, {tangent}, "jvp", loc);
  if (outs.size() != 1) {
    user_error("jvp", "f returned " + std::to_string(outs.size()) +
                          " arrays (use the std::vector form for several outputs)", loc);
  }
  return {std::move(outs[0]), std::move(ts[0])};
}

// ---- gradients of scalar functions --------------------------------------------

// value_and_grad(f, argnum)(args...) -> (f(args...), df/d args[argnum]).
// f returns a floating-point scalar (rank 0). The callable takes the Arrays f
// takes (or one std::vector<Array> when f takes one) and keeps a copy of f.
template <class F>
auto value_and_grad(F f, int argnum = 0, Loc loc = Loc::current()) {
  return [f = std::move(f), argnum, loc](const auto&... args) -> std::pair<Array, Array> {
    auto [primals, fn] = detail::bind_args(f, args...);
    auto [value, grads] = detail::value_and_grad(fn, primals, {argnum}, "value_and_grad", loc);
    return {std::move(value), std::move(grads[0])};
  };
}
// Several arguments at once: the gradients in the order of argnums.
template <class F>
auto value_and_grad(F f, std::vector<int> argnums, Loc loc = Loc::current()) {
  return [f = std::move(f), argnums = std::move(argnums), loc](
             const auto&... args) -> std::pair<Array, std::vector<Array>> {
    auto [primals, fn] = detail::bind_args(f, args...);
    return detail::value_and_grad(fn, primals, argnums, "value_and_grad", loc);
  };
}

// grad(f, argnum)(args...) -> df/d args[argnum], f returning a float scalar.
template <class F>
auto grad(F f, int argnum = 0, Loc loc = Loc::current()) {
  return [f = std::move(f), argnum, loc](const auto&... args) -> Array {
    auto [primals, fn] = detail::bind_args(f, args...);
    return std::move(detail::value_and_grad(fn, primals, {argnum}, "grad", loc).second[0]);
  };
}
template <class F>
auto grad(F f, std::vector<int> argnums, Loc loc = Loc::current()) {
  return [f = std::move(f), argnums = std::move(argnums), loc](const auto&... args)
             -> std::vector<Array> {
    auto [primals, fn] = detail::bind_args(f, args...);
    return std::move(detail::value_and_grad(fn, primals, argnums, "grad", loc).second);
  };
}

// ---- functions with derivatives of their own --------------------------------
//
// Each returns a callable taking what f takes (Arrays, or one
// std::vector<Array>) and returning what f returns (an Array or a
// std::vector<Array>). Calling it traces f as usual: its value is f's, lazy
// and fused with the code around it; only derivatives differ. They work
// under grad, value_and_grad, vjp and jvp, nested, and inside aj::compile.
// The callables the user gives are kept (copied) by the returned one, and by
// every traced call until its outputs are evaluated.

// custom_vjp(f, fwd, bwd): f's value; its reverse-mode derivative is bwd's
// (JAX's jax.custom_vjp).
//   fwd(args...) -> std::pair{outputs, std::vector<Array> residuals}: outputs
//       as f returns them (their shapes and dtypes are checked against f's;
//       the values used are f's), residuals: what bwd needs;
//   bwd(residuals, cotangent) -> the arguments' cotangents: an Array for a
//       function of one argument, else a std::vector<Array> with one per
//       argument (an empty handle: zero; a float cotangent is cast to its
//       argument's dtype; integer arguments get none). `cotangent` is an
//       Array when f returns one, else a vector with one per output; an
//       output that got no cotangent gets zeros.
// Forward mode (jvp) through it is refused, as in JAX: use custom_jvp.
// The residuals are kept only until the outputs are evaluated: an output that
// is evaluated before it is differentiated is a constant (as any value).
template <class F, class Fwd, class Bwd>
auto custom_vjp(F f, Fwd fwd, Bwd bwd, Loc loc = Loc::current()) {
  auto fs = std::make_shared<std::tuple<F, Fwd, Bwd>>(std::move(f), std::move(fwd), std::move(bwd));
  return [fs, loc]<class... A>(const A&... args)
    requires std::invocable<F&, const A&...>
  {
    using R = std::decay_t<decltype(std::get<0>(*fs)(args...))>;
    static_assert(detail::ArrayResult<R>, "aj::custom_vjp: f must return an Array or a std::vector<Array>");
    constexpr bool vec = detail::one_vector<A...>;
    constexpr std::size_t n = sizeof...(args);
    VectorFn fv = [fs](const std::vector<Array>& v) {
      return detail::as_vector(detail::call_as<vec, n>(std::get<0>(*fs), v));
    };
    VjpFwdFn fwdv = [fs](const std::vector<Array>& v) {
      auto [o, r] = detail::call_as<vec, n>(std::get<1>(*fs), v);
      return std::pair<std::vector<Array>, std::vector<Array>>(detail::as_vector(std::move(o)),
                                                               std::vector<Array>(std::move(r)));
    };
    VjpBwdFn bwdv = [fs](const std::vector<Array>& res, const std::vector<Array>& cts) {
      return detail::call_bwd<R>(std::get<2>(*fs), res, cts);
    };
    return detail::first_or_all<R>(detail::custom_vjp(fv, fwdv, bwdv, detail::args_vector(args...), loc));
  };
}

// custom_jvp(f, rule): f's value; its forward-mode derivative is the rule's
// (JAX's jax.custom_jvp).
//   rule(args, tangents) -> the outputs' tangents (an Array when f returns
//       one, else one per output; empty: zero): args and tangents are
//       std::vector<Array>s with one per argument (a zero tangent is given
//       as zeros). The rule must be linear in the tangents.
// Reverse mode transposes the rule (the vjp of t -> rule(args, t)), as JAX
// does: grad of a custom_jvp function needs no second rule.
// (JAX's rule returns the outputs too; here f gives them, and what the rule
// computes again of f's values is shared with f's by tracing's CSE.)
template <class F, class Rule>
auto custom_jvp(F f, Rule rule, Loc loc = Loc::current()) {
  auto fs = std::make_shared<std::tuple<F, Rule>>(std::move(f), std::move(rule));
  return [fs, loc]<class... A>(const A&... args)
    requires std::invocable<F&, const A&...>
  {
    using R = std::decay_t<decltype(std::get<0>(*fs)(args...))>;
    static_assert(detail::ArrayResult<R>, "aj::custom_jvp: f must return an Array or a std::vector<Array>");
    constexpr bool vec = detail::one_vector<A...>;
    constexpr std::size_t n = sizeof...(args);
    VectorFn fv = [fs](const std::vector<Array>& v) {
      return detail::as_vector(detail::call_as<vec, n>(std::get<0>(*fs), v));
    };
    JvpRuleFn rulev = [fs](const std::vector<Array>& a, const std::vector<Array>& t) {
      return detail::as_vector(std::get<1>(*fs)(a, t));
    };
    return detail::first_or_all<R>(detail::custom_jvp(fv, rulev, detail::args_vector(args...), loc));
  };
}

// checkpoint(f): f, whose values the reverse pass computes again from f's
// arguments instead of keeping them (jax.checkpoint, mx.checkpoint): a
// gradient through it holds f's arguments and outputs, not its
// intermediates, at the cost of running f twice. The recomputation is
// ordered after the cotangents of f's outputs, so its values live only
// while the backward of f uses them. Forward mode differentiates f as usual.
template <class F>
auto checkpoint(F f, Loc loc = Loc::current()) {
  auto fs = std::make_shared<F>(std::move(f));
  return [fs, loc]<class... A>(const A&... args)
    requires std::invocable<F&, const A&...>
  {
    using R = std::decay_t<decltype((*fs)(args...))>;
    static_assert(detail::ArrayResult<R>, "aj::checkpoint: f must return an Array or a std::vector<Array>");
    constexpr bool vec = detail::one_vector<A...>;
    constexpr std::size_t n = sizeof...(args);
    VectorFn fv = [fs](const std::vector<Array>& v) {
      return detail::as_vector(detail::call_as<vec, n>(*fs, v));
    };
    return detail::first_or_all<R>(detail::checkpoint(fv, detail::args_vector(args...), loc));
  };
}

}  // namespace aj

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
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
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

}  // namespace aj

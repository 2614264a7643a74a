// aj::compile: trace a function once per kind of arguments, replay it after.
//
//   auto step = aj::compile([](aj::Array w, const aj::Array& g, double lr) {
//     return w - lr * g;
//   });
//   w = step(std::move(w), g, 0.1);   // first call: traced, planned, kept
//   w = step(std::move(w), g, 0.1);   // same kind of arguments: replayed
//
// The first call for a signature runs the function (tracing it), evaluates
// its results and keeps the plan. A later call whose arguments have the same
// signature — each array's dtype, shape, strides and device, whether it is
// donated, and each C++ scalar's value — runs the kept kernels on the new
// arguments' buffers: no tracing, no planning, no kernel lookup. Any other
// call traces again (and keeps that plan too): new extents or layouts get a
// plan of their own, but never recompile a kernel (kernels are compiled by
// structure, extents are run-time arguments), and a C++ scalar whose value
// changes is a run-time value of the kernels (arrayjit never replans for a
// scalar: docs/semantics.md) — a changing scalar that reaches kernels
// unchanged (`x * lr`) is replayed too; one the function computes with in
// C++ (`x * (1 - lr)` with `double lr`) is traced again each time, without
// planning or compiling. Take such a scalar as an aj::Array instead:
//
//   auto step = aj::compile([](aj::Array w, const aj::Array& g, const aj::Array& lr, const aj::Array& t) {
//     return w - lr / aj::sqrt(1 + t) * g;   // lr, t: weak arrays; the arithmetic replays
//   });
//   w = step(std::move(w), g, 0.1, 7);       // C++ scalars where the function takes arrays
//
// A C++ scalar passed where the function's parameter is an aj::Array (a
// lambda without auto parameters, or a function pointer) is passed as
// aj::scalar(value): a weak rank-0 array, an argument of the call like any
// array. It meets other arrays as the C++ scalar would (f32 weights stay
// f32), and arithmetic on it is part of the program: new values replay.
//
// Donation: an argument passed as an rvalue (`std::move(p)`, a temporary) or
// wrapped in aj::donate(p) is given up: the call takes its handle (the
// caller's variable is left empty) and may write its buffer in place, when
// nothing else holds that buffer.
//
// What the function may not do (docs/semantics.md, "Compiled functions"):
//  - read values: eval(), item(), to_vector() on arrays it made are errors
//    while it is traced (a replay would not run them);
//  - depend on anything but its arguments: arrays it reads from the
//    enclosing scope are taken as they are at the first call (rebinding
//    them later does not reach replays; pass them as arguments instead), and
//    side effects (printing, counters) happen only when it is traced.
// Arguments: aj::Array (by value, const&, &&), aj::Donated, std::vector<Array>
// (each element an argument; an rvalue vector donates them all), and
// arithmetic scalars. Called while another compiled function or a
// grad/vjp/jvp is being traced, a compiled function is traced inline (its
// ops become part of the outer trace). Results: an Array, a std::vector<Array>, or a std::tuple / pair
// of Arrays. A Compiled may be called from several threads at once.
#pragma once

#include <functional>
#include <string>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// A contract a compiled function's calls are held to after warm-up (the
// first call of each signature, which traces it or plans it at new
// extents): a replay that would break it throws an aj::Error naming the
// argument, the op and the user's line that break it, and why
// (docs/semantics.md, "Compiled functions").
//
//   auto step = aj::compile(sgd, {.max_allocations = 0, .in_place = {0}});
//   w = step(std::move(w), x, y);   // throws if w's buffer would not become the new w
struct CompileOptions {
  // Buffers a replay may take from the system (what stats().system_allocs
  // counts; buffers the pool already holds are free); -1: any number. A
  // replay over it stops at that allocation, before it is made: the results
  // are not made, and donated arguments are lost as on running out of memory.
  std::int64_t max_allocations = -1;
  // Arguments (positions in the call; every element of a std::vector
  // argument) whose buffer a result must take over: each must be donated,
  // its buffer held by nothing else, and written in place by a step whose
  // value becomes a result. Checked before the replay runs: a broken
  // contract changes nothing and takes no argument.
  std::vector<int> in_place = {};
};

// An argument given up to a compiled call (see above).
struct Donated {
  Array array;
};
// Takes the handle: the caller's variable is left empty, so the call holds
// the only reference and may write the buffer in place.
inline Donated donate(Array& a) { return Donated{std::move(a)}; }
inline Donated donate(Array&& a) { return Donated{std::move(a)}; }

namespace detail {

// One argument of a compiled call as the library sees it.
struct CallArg {
  Array* array = nullptr;  // an array argument (the caller's object; taken when donated)
  bool donated = false;
  bool is_scalar = false;
  bool structural = false;  // a scalar that is part of the structure (a vector's length)
  bool element = false;     // an element of a std::vector argument (gone once the function took the vector)
  // Called when the call takes a donated argument (after a successful trace,
  // or before a replay runs): the C API releases the caller's handle there.
  void (*give_up)(void* context, std::size_t index) = nullptr;
  void* give_up_context = nullptr;
  std::size_t give_up_index = 0;
  Scalar scalar;
  int position = -1;  // which argument of the call it is (aj::compile's; -1: not known)
};

// The arguments described since the last call are argument `position`.
inline void mark_position(std::vector<CallArg>& args, int position) {
  for (std::size_t i = args.size(); i-- > 0 && args[i].position < 0;) args[i].position = position;
}

class CompiledCore;
std::shared_ptr<CompiledCore> make_compiled_core(Loc where, CompileOptions options = {});
// The runtime aj::Error of a call that ran out of memory (naming aj::compile's line).
[[noreturn]] void compiled_out_of_memory(const CompiledCore& core);
std::shared_ptr<CompiledCore> make_compiled_core(std::string name, CompileOptions options = {});  // named for messages (the C API)

// One call: replays a program kept for arguments like these, or calls
// `trace` (the user's function, results flattened) and keeps its program.
std::vector<Array> compiled_call(CompiledCore& core, std::vector<CallArg>& args,
                                 const std::function<std::vector<Array>()>& trace);

// Counts of one compiled function: calls traced and calls replayed.
struct CompiledCounts {
  std::uint64_t traces = 0, replays = 0;
  std::uint64_t programs = 0, evicted = 0;  // programs kept now, and dropped (least recently used first)
  std::uint64_t new_extents = 0;  // calls at new extents or layouts run from a kept trace (no tracing)
  // Of those, calls run without planning: a plan of the same structure kept
  // by the plan cache, at these numbers or with its numbers made again from
  // the new extents (opt/materialize.hpp).
  std::uint64_t unplanned = 0;
};
CompiledCounts compiled_counts(const CompiledCore& core);
std::string compiled_extents_note(const CompiledCore& core);
std::string compiled_plan_note(const CompiledCore& core);

template <class T>
struct is_array_tuple : std::false_type {};
template <class... T>
struct is_array_tuple<std::tuple<T...>> : std::bool_constant<(std::is_same_v<T, Array> && ...)> {};
template <class A, class B>
struct is_array_tuple<std::pair<A, B>> : std::bool_constant<std::is_same_v<A, Array> && std::is_same_v<B, Array>> {};

template <class R>
std::vector<Array> flatten(R&& r) {
  using D = std::decay_t<R>;
  if constexpr (std::is_same_v<D, Array>) {
    return {std::forward<R>(r)};
  } else if constexpr (std::is_same_v<D, std::vector<Array>>) {
    return std::vector<Array>(std::forward<R>(r));
  } else {
    static_assert(is_array_tuple<D>::value,
                  "aj::compile: the function must return an Array, a std::vector<Array>, or a tuple/pair of Arrays");
    std::vector<Array> v;
    std::apply([&](auto&... a) { (v.push_back(a), ...); }, r);
    return v;
  }
}

template <class R>
R rebuild(std::vector<Array>&& v) {
  if constexpr (std::is_same_v<R, Array>) {
    return std::move(v[0]);
  } else if constexpr (std::is_same_v<R, std::vector<Array>>) {
    return std::move(v);
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return R{std::move(v[I])...};
    }(std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}

// What the user's function receives for each argument.
template <class A>
decltype(auto) pass(A&& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Donated>) {
    return std::move(a.array);  // an rvalue Array
  } else {
    return std::forward<A>(a);
  }
}

template <class A>
void describe_arg(std::vector<CallArg>& out, A&& a) {
  using D = std::decay_t<A>;
  CallArg c;
  if constexpr (std::is_same_v<D, Donated>) {
    c.array = &a.array;
    c.donated = true;
  } else if constexpr (std::is_same_v<D, Array>) {
    c.array = const_cast<Array*>(&a);
    c.donated = std::is_rvalue_reference_v<A&&> && !std::is_const_v<std::remove_reference_t<A>>;
  } else if constexpr (std::is_same_v<D, std::vector<Array>>) {
    // Each element is an array argument (a variable number of them).
    const bool donated = std::is_rvalue_reference_v<A&&> && !std::is_const_v<std::remove_reference_t<A>>;
    CallArg count;
    count.is_scalar = true;  // the length is part of the signature
    count.structural = true;
    count.scalar = Scalar(static_cast<std::int64_t>(a.size()));
    out.push_back(count);
    for (const Array& e : a) {
      CallArg c2;
      c2.array = const_cast<Array*>(&e);
      c2.donated = donated;
      c2.element = true;
      out.push_back(c2);
    }
    return;
  } else {
    static_assert(std::is_arithmetic_v<D>,
                  "aj::compile: arguments must be aj::Array, aj::Donated or arithmetic scalars");
    c.is_scalar = true;
    c.scalar = Scalar(a);
  }
  out.push_back(c);
}

// The parameter types of a callable whose operator() is one non-template
// function (a lambda without auto parameters, a function pointer); void for
// any other (a generic lambda, an overload set).
template <class T>
struct call_params {
  using type = void;
};
template <class R, bool N, class... P>
struct call_params<R (*)(P...) noexcept(N)> {
  using type = std::tuple<P...>;
};
template <class C, class R, bool N, class... P>
struct call_params<R (C::*)(P...) const noexcept(N)> {  // (a call through the const Compiled)
  using type = std::tuple<P...>;
};
template <class F>
auto params_of() {
  if constexpr (std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>) {
    return std::type_identity<typename call_params<F>::type>{};
  } else if constexpr (requires { &F::operator(); }) {
    return std::type_identity<typename call_params<decltype(&F::operator())>::type>{};
  } else {
    return std::type_identity<void>{};
  }
}
// Whether argument K (of type A) is a C++ scalar the function takes as an
// aj::Array parameter: it is passed as a weak array (aj::scalar), an
// argument of the call like any array, so arithmetic on it replays.
template <class F, std::size_t K, class A>
constexpr bool weak_at() {
  using P = typename decltype(params_of<F>())::type;
  if constexpr (!std::is_arithmetic_v<std::decay_t<A>> || std::is_void_v<P>) {
    return false;
  } else if constexpr (K >= std::tuple_size_v<P>) {
    return false;
  } else {
    return std::is_same_v<std::decay_t<std::tuple_element_t<K, P>>, Array>;
  }
}

}  // namespace detail

template <class F>
class Compiled {
 public:
  explicit Compiled(F f, Loc where = Loc::current())
      : f_(std::move(f)), core_(detail::make_compiled_core(where)) {}
  Compiled(F f, CompileOptions options, Loc where = Loc::current())
      : f_(std::move(f)), core_(detail::make_compiled_core(where, std::move(options))) {}

  template <class... Args>
  auto operator()(Args&&... args) const try {
    return call(std::index_sequence_for<Args...>{}, std::forward<Args>(args)...);
  } catch (const std::bad_alloc&) {
    detail::compiled_out_of_memory(*core_);
  }

  // Calls traced and replayed so far, and programs kept.
  detail::CompiledCounts counts() const { return detail::compiled_counts(*core_); }
  // Why calls at new extents were traced rather than run from the kept
  // trace (docs/extent-replays.md), and why calls with new values of the
  // scalar arguments are traced when they are (also logged once on the
  // "compile" channel, AJ_LOG=compile); empty when no call was.
  std::string extents_note() const { return detail::compiled_extents_note(*core_); }
  // Why the last call at new extents that was planned was not run with the
  // kept plan's decisions at its numbers (docs/extent-replays.md); empty
  // when none was planned.
  std::string plan_note() const { return detail::compiled_plan_note(*core_); }

 private:
  // Argument K as the function receives it: a C++ scalar it takes as an
  // aj::Array is the weak array made for it in weak[K].
  template <std::size_t K, class A>
  static decltype(auto) arg(Array* weak, A&& a) {
    if constexpr (detail::weak_at<F, K, A>()) {
      return Array(weak[K]);  // (binds to Array, const Array& and Array&& parameters)
    } else {
      return detail::pass(std::forward<A>(a));
    }
  }

  template <std::size_t... K, class... Args>
  auto call(std::index_sequence<K...>, Args&&... args) const {
    using R = std::decay_t<decltype(std::invoke(f_, arg<K>(nullptr, std::forward<Args>(args))...))>;
    Array weak[sizeof...(Args) + 1];  // empty handles cost nothing
    std::vector<detail::CallArg> cargs;
    cargs.reserve(sizeof...(Args) + 16);  // vector arguments add their elements
    auto describe = [&]<std::size_t I, class A>(A&& a) {
      if constexpr (detail::weak_at<F, I, A>()) {
        weak[I] = aj::scalar(a);
        detail::describe_arg(cargs, std::as_const(weak[I]));
      } else {
        detail::describe_arg(cargs, std::forward<A>(a));
      }
      detail::mark_position(cargs, static_cast<int>(I));
    };
    (describe.template operator()<K>(std::forward<Args>(args)), ...);
    (void)describe;  // (a function of no arguments)
    auto trace = [&] { return detail::flatten(std::invoke(f_, arg<K>(weak, std::forward<Args>(args))...)); };
    // Through std::ref: a std::function holds a reference_wrapper without
    // allocating (the lambda's captures would not fit in it).
    std::vector<Array> out = detail::compiled_call(*core_, cargs, std::ref(trace));
    for (Array& a : out) detail::set_weak(a, false);  // results are ordinary arrays, traced or replayed
    return detail::rebuild<R>(std::move(out));
  }

  F f_;
  std::shared_ptr<detail::CompiledCore> core_;
};

template <class F>
Compiled<std::decay_t<F>> compile(F&& f, Loc where = Loc::current()) {
  return Compiled<std::decay_t<F>>(std::forward<F>(f), where);
}
template <class F>
Compiled<std::decay_t<F>> compile(F&& f, CompileOptions options, Loc where = Loc::current()) {
  return Compiled<std::decay_t<F>>(std::forward<F>(f), std::move(options), where);
}

}  // namespace aj

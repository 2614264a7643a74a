// Traced functions of the C API (arrayjit/arrayjit.h, "traced functions"):
// an aj_function wraps a C callback that records ops; aj_function_call runs it
// on new inputs and evaluates the outputs together.
//
// A call goes through aj::compile's core (arrayjit/compile.hpp): the first
// call with a signature traces the callback (Function::trace, the function
// as C++ sees it: inputs to outputs) and keeps the plan; later calls like it
// replay without calling back. Weak scalar inputs are the compiled call's
// scalars (a changing learning rate replays). Inside another callback's
// trace (or a C++ compiled function's) the ops are recorded inline.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "arrayjit/autodiff.hpp"
#include "arrayjit/compile.hpp"
#include "core/api/evaluate.hpp"
#include "core/api/observer.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {
// The traced function whose callback runs on this thread (innermost), if any.
thread_local const Function* t_tracing = nullptr;
}  // namespace

// The contract a desc asks for (fields since C API 1.4, when its struct_size has them).
aj::CompileOptions options_of(const aj_function_desc& d) {
  aj::CompileOptions o;
  constexpr std::size_t v14 = offsetof(aj_function_desc, n_in_place) + sizeof(std::int32_t);
  if (d.struct_size < v14) return o;
  if (d.check_allocations) {
    if (d.max_allocations < 0) c_error("max_allocations " + std::to_string(d.max_allocations) + " with check_allocations set");
    o.max_allocations = d.max_allocations;
  }
  if (d.n_in_place < 0) c_error("negative n_in_place " + std::to_string(d.n_in_place));
  if (d.n_in_place > 0 && !d.in_place) c_error("null in_place with n_in_place " + std::to_string(d.n_in_place));
  for (std::int32_t i = 0; i < d.n_in_place; ++i) {
    if (d.in_place[i] < 0 || d.in_place[i] >= d.n_inputs) {
      c_error("in_place[" + std::to_string(i) + "] is " + std::to_string(d.in_place[i]) + "; the function has " +
              std::to_string(d.n_inputs) + " inputs");
    }
    o.in_place.push_back(d.in_place[i]);
  }
  return o;
}

// The derivative fields a desc sets (since C API 1.5).
struct Rules {
  aj_trace_fn fwd = nullptr;
  aj_rule_fn bwd = nullptr;
  int n_residuals = 0;
  aj_rule_fn jvp = nullptr;
  bool checkpoint = false;
  bool any() const { return fwd || bwd || jvp || checkpoint; }
};

Rules rules_of(const aj_function_desc& d) {
  Rules r;
  constexpr std::size_t v15 = offsetof(aj_function_desc, checkpoint) + sizeof(std::int32_t);
  if (d.struct_size < v15) return r;
  r.fwd = d.fwd;
  r.bwd = d.bwd;
  r.n_residuals = d.n_residuals;
  r.jvp = d.jvp;
  r.checkpoint = d.checkpoint != 0;
  if (!r.fwd != !r.bwd) c_error(std::string("desc->") + (r.fwd ? "bwd" : "fwd") + " is null but desc->" + (r.fwd ? "fwd" : "bwd") + " is set (custom_vjp takes both)");
  if ((r.fwd != nullptr) + (r.jvp != nullptr) + r.checkpoint > 1) {
    c_error("set at most one kind of derivative: fwd and bwd (custom_vjp), jvp (custom_jvp), or checkpoint");
  }
  if (r.n_residuals < 0) c_error("negative n_residuals " + std::to_string(r.n_residuals));
  if (r.n_residuals > 0 && !r.fwd) c_error("n_residuals " + std::to_string(r.n_residuals) + " without fwd");
  return r;
}

// Runs a C callback that records ops: `call` gets new handles for `inputs`
// (released when it returns, with every handle it made and did not return)
// and writes n_out handles; `nulls` says whether a null one is allowed (a
// zero derivative: an empty Array). A failing callback is a StatusError
// naming `who` with its message. `tracing`: the traced function it belongs
// to (null: the one tracing now, if any, stays).
std::vector<ArrayRef> run_recording(const std::string& who, const Function* tracing, const std::vector<ArrayRef>& inputs,
                                    int n_out, bool nulls, const std::function<aj_status(const aj_array*, aj_array*)>& call);

class Function {
 public:
  explicit Function(const aj_function_desc& d)
      : trace_fn_(d.trace), context_(d.context), release_(d.release), n_inputs_(d.n_inputs),
        n_outputs_(d.n_outputs), name_(d.name ? d.name : "(unnamed)"),
        core_(aj::detail::make_compiled_core("the C function '" + name_ + "'", options_of(d))), rules_(rules_of(d)) {}
  ~Function() {
    if (armed_ && release_) release_(context_);
  }
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  // From now on the function's death calls release (never for a failed new).
  void arm() { armed_ = true; }
  int n_inputs() const { return n_inputs_; }
  int n_outputs() const { return n_outputs_; }
  const std::string& name() const { return name_; }
  aj::detail::CompiledCore& core() const { return *core_; }

  // The callback traced on `inputs`: its outputs (unevaluated). Handles it
  // makes are released when it returns; a failed callback is a StatusError
  // with its status and message.
  std::vector<ArrayRef> trace(const std::vector<ArrayRef>& inputs) const;
  // The function recorded inline in another trace: with its derivative
  // rules (a custom call) when it has them. `self` keeps it alive as long as
  // a traced call's rules may run.
  static std::vector<ArrayRef> record(const std::shared_ptr<const Function>& self, const std::vector<ArrayRef>& inputs);

 private:
  aj_trace_fn trace_fn_;
  void* context_;
  aj_release_fn release_;
  int n_inputs_, n_outputs_;
  std::string name_;
  std::shared_ptr<aj::detail::CompiledCore> core_;  // its kept programs
  Rules rules_;
  bool armed_ = false;
};

namespace {

// While a callback runs: this thread's tracing function and handle recorder
// are set, and put back whatever happens.
class TracingScope {
 public:
  TracingScope(const Function* f, std::vector<aj_array>* made)
      : previous_function_(t_tracing), previous_recorder_(record_new_arrays(made)) {
    if (f) t_tracing = f;
  }
  ~TracingScope() {
    t_tracing = previous_function_;
    record_new_arrays(previous_recorder_);
  }
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;

 private:
  const Function* previous_function_;
  std::vector<aj_array>* previous_recorder_;
};

// Releases every handle in `made` that is still live (the callback may have
// released some itself).
void release_made(const std::vector<aj_array>& made) {
  for (aj_array h : made) {
    if (is_live(h)) release_array(h);
  }
}

std::string prefix(const Function& f) { return "function '" + f.name() + "': "; }

}  // namespace

std::vector<ArrayRef> run_recording(const std::string& who, const Function* tracing, const std::vector<ArrayRef>& inputs,
                                    int n_out, bool nulls, const std::function<aj_status(const aj_array*, aj_array*)>& call) {
  std::vector<aj_array> made;
  struct ReleaseMade {  // also when something below throws
    std::vector<aj_array>& made;
    ~ReleaseMade() {
      try {
        release_made(made);
      } catch (...) {  // a release cannot fail for a live handle; never throw from here
      }
    }
  } release{made};
  std::vector<aj_array> in, out(static_cast<std::size_t>(n_out), aj_array{0});
  aj_status status;
  {
    TracingScope scope(tracing, &made);
    for (const ArrayRef& r : inputs) in.push_back(new_array(r));
    clear_last_error();
    status = call(in.data(), out.data());
  }
  if (status != AJ_OK) {
    const std::string why = *aj_last_error() ? std::string(aj_last_error())
                                             : "it returned status " + std::to_string(status);
    throw StatusError(status, who + "failed: " + why);
  }
  std::vector<ArrayRef> outputs;
  for (int i = 0; i < n_out; ++i) {
    const aj_array h = out[static_cast<std::size_t>(i)];
    if (nulls && h._id == 0) {
      outputs.emplace_back();
      continue;
    }
    const std::string what = "output " + std::to_string(i) + " of " + who;
    try {
      outputs.push_back(get_array(h, what.c_str()));
    } catch (const HandleError& e) {
      throw StatusError(AJ_ERROR_USER, std::string(e.what()) + " (the callback must write a handle to every output)");
    }
    outputs.back().weak = false;  // results are never weak
  }
  return outputs;
}

std::vector<ArrayRef> Function::trace(const std::vector<ArrayRef>& inputs) const {
  return run_recording(prefix(*this) + "the traced callback ", this, inputs, n_outputs_, false,
                       [&](const aj_array* in, aj_array* out) { return trace_fn_(context_, in, out); });
}

namespace {
std::vector<aj::Array> arrays_of(const std::vector<ArrayRef>& v) {
  std::vector<aj::Array> a;
  for (const ArrayRef& r : v) a.push_back(r.array);
  return a;
}
std::vector<ArrayRef> refs_of(const std::vector<aj::Array>& v) {
  std::vector<ArrayRef> r;
  for (const aj::Array& a : v) r.push_back(ArrayRef{a, false, aj::Scalar()});
  return r;
}
}  // namespace

std::vector<ArrayRef> Function::record(const std::shared_ptr<const Function>& self, const std::vector<ArrayRef>& inputs) {
  const Rules& r = self->rules_;
  if (!r.any()) return self->trace(inputs);
  // The rules run later (when the outputs are differentiated): they hold
  // the function, so its context stays alive until they are dropped.
  const aj::VectorFn f = [self](const std::vector<aj::Array>& in) { return arrays_of(self->trace(refs_of(in))); };
  const std::vector<aj::Array> args = arrays_of(inputs);
  const aj::Loc loc = aj::detail::effective_loc(aj::Loc::current());  // the caller's line (aj_set_caller)
  if (r.checkpoint) return refs_of(aj::detail::checkpoint(f, args, loc));
  // A rule's two lists go to the callback as one: the first n, then the rest.
  auto two_lists = [self](aj_rule_fn rule, const char* name, const std::vector<aj::Array>& a,
                          const std::vector<aj::Array>& b, int n_out) {
    std::vector<aj::Array> both = a;
    both.insert(both.end(), b.begin(), b.end());
    const std::size_t split = a.size();
    return arrays_of(run_recording(prefix(*self) + name + " ", nullptr, refs_of(both), n_out, true,
                                   [&](const aj_array* in, aj_array* out) {
                                     return rule(self->context_, in, in + split, out);
                                   }));
  };
  if (r.jvp) {
    const aj::JvpRuleFn jvp = [self, two_lists](const std::vector<aj::Array>& a, const std::vector<aj::Array>& t) {
      return two_lists(self->rules_.jvp, "jvp", a, t, self->n_outputs_);
    };
    return refs_of(aj::detail::custom_jvp(f, jvp, args, loc));
  }
  const aj::VjpFwdFn fwd = [self](const std::vector<aj::Array>& in) {
    const int n_out = self->n_outputs_;
    std::vector<aj::Array> all =
        arrays_of(run_recording(prefix(*self) + "fwd ", nullptr, refs_of(in), n_out + self->rules_.n_residuals, false,
                                [&](const aj_array* a, aj_array* o) { return self->rules_.fwd(self->context_, a, o); }));
    std::vector<aj::Array> res(all.begin() + n_out, all.end());
    all.resize(static_cast<std::size_t>(n_out));
    return std::pair{std::move(all), std::move(res)};
  };
  const aj::VjpBwdFn bwd = [self, two_lists](const std::vector<aj::Array>& res, const std::vector<aj::Array>& cts) {
    return two_lists(self->rules_.bwd, "bwd", res, cts, self->n_inputs_);
  };
  return refs_of(aj::detail::custom_vjp(f, fwd, bwd, args, loc));
}

void check_not_tracing(const char* fn) {
  if (!t_tracing) return;
  throw Error(Error::Kind::user, "called while tracing " + prefix(*t_tracing) +
                                     "a traced callback only records ops (aj_function_call evaluates its "
                                     "outputs); " + fn + " would read values that do not exist yet");
}

}  // namespace aj::c_api

using namespace aj::c_api;

extern "C" {

aj_status aj_function_new(const aj_function_desc* desc, aj_function* out) {
  if (out) *out = aj_function{0};
  return c_call("aj_function_new", [&] {
    if (!desc || !out) c_error("null argument");
    constexpr std::size_t v1 = offsetof(aj_function_desc, name) + sizeof(const char*);
    if (desc->struct_size < v1) {
      c_error("desc->struct_size is " + std::to_string(desc->struct_size) + ", not sizeof(aj_function_desc) (" +
              std::to_string(sizeof(aj_function_desc)) + "): set it before the call");
    }
    if (!desc->trace) c_error("desc->trace is null");
    if (desc->n_inputs < 0) c_error("negative n_inputs " + std::to_string(desc->n_inputs));
    if (desc->n_outputs < 1) c_error("n_outputs is " + std::to_string(desc->n_outputs) + " (at least 1)");
    auto f = std::make_shared<Function>(*desc);
    *out = new_function(f);
    f->arm();  // only now: a failure above calls no release
  });
}

aj_status aj_function_release(aj_function f) {
  if (f._id == 0) return AJ_OK;
  return c_call("aj_function_release", [&] { release_function(f); });
}

aj_status aj_function_call_donate(aj_function f, aj_array* inputs, const int* donate, aj_array* outputs) {
  return c_call("aj_function_call", [&] {
    const std::shared_ptr<Function> fun = get_function(f, "the function");
    if (outputs) {
      for (int i = 0; i < fun->n_outputs(); ++i) outputs[i] = aj_array{0};
    }
    const int n_in = fun->n_inputs(), n_out = fun->n_outputs();
    if (!inputs && n_in > 0) c_error(prefix(*fun) + "null inputs (it takes " + std::to_string(n_in) + ")");
    if (!outputs) c_error(prefix(*fun) + "null outputs (it makes " + std::to_string(n_out) + ")");
    std::vector<ArrayRef> args;
    for (int i = 0; i < n_in; ++i) {
      const std::string what = "input " + std::to_string(i) + " of " + prefix(*fun);
      args.push_back(get_array(inputs[i], what.c_str()));
    }
    std::vector<std::unique_ptr<Reservation>> slots;  // first: once outputs exist, nothing may fail
    for (int i = 0; i < n_out; ++i) slots.push_back(std::make_unique<Reservation>());
    std::vector<ArrayRef> results;
    if (t_tracing || aj::trace::observed()) {
      // Inside another trace: the ops are recorded inline, nothing runs
      // (with the function's own derivative rules, when it has them).
      results = Function::record(fun, args);
      args.clear();
      if (donate) {
        std::unordered_set<std::uint64_t> released;
        for (int i = 0; i < n_in; ++i) {
          if (!donate[i]) continue;
          if (released.insert(inputs[i]._id).second) release_array(inputs[i]);
          inputs[i] = aj_array{0};
        }
      }
    } else {
      // A compiled call. Array inputs are its array arguments (our own
      // references); weak scalars are its scalars. A donated input's handle
      // is released when the call takes it: after a successful trace, or
      // before a replay runs (then its buffer may be written in place). A
      // failing callback consumes nothing.
      std::vector<aj::Array> arrays(static_cast<std::size_t>(n_in));
      std::vector<aj::detail::CallArg> cargs(static_cast<std::size_t>(n_in));
      struct GiveUp {
        aj_array* inputs;
        std::unordered_set<std::uint64_t> released;
      } give_up{inputs, {}};
      for (int i = 0; i < n_in; ++i) {
        auto& c = cargs[static_cast<std::size_t>(i)];
        c.position = i;
        const ArrayRef& r = args[static_cast<std::size_t>(i)];
        if (r.weak) {
          c.is_scalar = true;
          c.scalar = r.scalar;
          continue;
        }
        arrays[static_cast<std::size_t>(i)] = r.array;
        c.array = &arrays[static_cast<std::size_t>(i)];
        if (donate && donate[i]) {
          c.donated = true;
          c.give_up_context = &give_up;
          c.give_up_index = static_cast<std::size_t>(i);
          c.give_up = [](void* ctx, std::size_t k) {
            auto* g = static_cast<GiveUp*>(ctx);
            if (g->released.insert(g->inputs[k]._id).second) release_array(g->inputs[k]);
            g->inputs[k] = aj_array{0};
          };
        }
      }
      // Only `arrays` (which the call takes when donated) and the weak
      // scalars stay referenced: no other reference of ours may keep a
      // donated buffer from being reused in place.
      std::vector<ArrayRef> scalars(static_cast<std::size_t>(n_in));
      for (int i = 0; i < n_in; ++i) {
        if (args[static_cast<std::size_t>(i)].weak) scalars[static_cast<std::size_t>(i)] = args[static_cast<std::size_t>(i)];
      }
      args.clear();
      std::vector<aj::Array> out = aj::detail::compiled_call(fun->core(), cargs, [&] {
        std::vector<ArrayRef> in;
        for (int i = 0; i < n_in; ++i) {
          const auto k = static_cast<std::size_t>(i);
          in.push_back(cargs[k].is_scalar ? scalars[k] : ArrayRef{arrays[k], false, aj::Scalar()});
        }
        std::vector<ArrayRef> traced = fun->trace(in);
        in.clear();
        std::vector<aj::Array> as_arrays;
        for (ArrayRef& r : traced) as_arrays.push_back(std::move(r.array));
        return as_arrays;
      });
      for (aj::Array& a : out) results.push_back(ArrayRef{std::move(a), false, aj::Scalar()});
    }
    for (int i = 0; i < n_out; ++i) outputs[i] = slots[static_cast<std::size_t>(i)]->fill(std::move(results[static_cast<std::size_t>(i)]));
  });
}

aj_status aj_function_call(aj_function f, const aj_array* inputs, aj_array* outputs) {
  return aj_function_call_donate(f, const_cast<aj_array*>(inputs), nullptr, outputs);
}

}  // extern "C"

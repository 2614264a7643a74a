// Functions with derivatives of their own (core/autodiff/custom.hpp): the
// calls (aj::custom_vjp, custom_jvp, checkpoint) and their derivatives.
#include "core/autodiff/custom.hpp"

#include <new>
#include <string>

#include "core/api/trace.hpp"

namespace aj::autodiff {

namespace {

using trace::describe;

// The mark of checkpoint's recomputation aliases: Reshapes of an argument to
// its own shape, scheduled after a cotangent (Node::after). Being other nodes
// than the argument, the ops f traces on them are other nodes than the
// forward's (tracing's CSE merges only ops over the same inputs), and the
// mark keeps simplify from folding the alias into the argument.
constexpr std::int64_t kRecomputeMark = -3;

// "its argument" of one, "argument 2" of several.
std::string index_word(std::size_t n, std::size_t i, const char* thing) {
  return n == 1 ? "its " + std::string(thing) : std::string(thing) + " " + std::to_string(i);
}

// Runs user code without this thread's graph lock (its ops take it again),
// as f itself runs under vjp.
template <class F>
auto unlocked(F&& fn) {
  GraphUnlocked off;
  return fn();
}

void check_args(const std::vector<Array>& args, const char* what, const Loc& loc) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].valid()) user_error(what, "argument " + std::to_string(i) + " is an empty Array handle", loc);
  }
}

// The call's outputs, checked, wrapped in views that carry the call.
std::vector<Array> wrap_outputs(std::shared_ptr<CustomCall> c) {
  trace::Scope scope;
  for (std::size_t j = 0; j < c->outs.size(); ++j) {
    if (!c->outs[j].valid()) {
      user_error(c->what, "f returned an empty Array handle as output " + std::to_string(j), c->loc);
    }
  }
  c->outs = local_all(c->outs, c->what, c->loc);
  c->args = local_all(c->args, c->what, c->loc);
  c->residuals = local_all(c->residuals, c->what, c->loc);
  for (const Array& a : c->args) c->arg_ids.push_back(a.node_id());
  std::vector<Array> wrapped;
  for (std::size_t j = 0; j < c->outs.size(); ++j) {
    if (!is_float(c->outs[j].dtype())) {  // carries no derivative: as f returned it
      wrapped.push_back(c->outs[j]);
      continue;
    }
    auto a = std::make_shared<CustomOutput>();
    a->call = c;
    a->index = j;
    wrapped.push_back(trace::annotated_view(c->outs[j], std::move(a), c->loc));
  }
  return wrapped;
}

// A derivative a user's rule returned for `of`: its shape, a float dtype cast
// to of's (an empty handle stays empty: zero).
Array checked(const Array& d, const Array& of, const CustomCall& c, const char* rule, const std::string& which) {
  if (!d.valid()) return Array();
  if (d.shape() != of.shape() || d.dtype() == DType::bool_) {
    user_error(c.what, std::string(rule) + " returned " + describe(d) + " as the derivative of " + which + ", " +
                           describe(of) + " (a derivative has its value's shape and a float dtype)",
               c.loc);
  }
  return d.dtype() == of.dtype() ? d : d.astype(of.dtype(), c.loc);
}

std::vector<Array> zeros_for(const std::vector<Array>& like, const std::vector<Array>& given, const Loc& loc) {
  std::vector<Array> out(like.size());
  for (std::size_t i = 0; i < like.size(); ++i) {
    out[i] = given.size() > i && given[i].valid() ? given[i] : zeros(like[i].shape(), like[i].dtype(), loc);
  }
  return out;
}

// The arguments' derivatives a rule returned: one per argument.
std::vector<Array> per_arg(const std::vector<Array>& got, const CustomCall& c, const char* rule) {
  if (got.size() != c.args.size()) {
    user_error(c.what, std::string(rule) + " returned " + std::to_string(got.size()) + " cotangent" +
                           (got.size() == 1 ? "" : "s") + " for " + std::to_string(c.args.size()) +
                           " argument" + (c.args.size() == 1 ? "" : "s") + " (one per argument; an empty "
                           "handle for none)",
               c.loc);
  }
  std::vector<Array> out(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!is_float(c.args[i].dtype())) continue;  // integer arguments get none
    out[i] = checked(got[i], c.args[i], c, rule, index_word(got.size(), i, "argument"));
  }
  return out;
}

// A call of kind `kind` on `args` (checked), f traced on them.
std::shared_ptr<CustomCall> new_call(CustomKind kind, const char* what, const VectorFn& f,
                                     const std::vector<Array>& args, const Loc& loc) {
  check_args(args, what, loc);
  auto c = std::make_shared<CustomCall>();
  c->kind = kind;
  c->what = what;
  c->loc = loc;
  c->args = args;
  c->outs = f(args);
  return c;
}

}  // namespace

std::vector<Array> local_all(const std::vector<Array>& v, const char* what, const Loc& loc) {
  trace::Scope scope;
  std::vector<Array> out;
  out.reserve(v.size());
  for (const Array& a : v) out.push_back(a.valid() ? trace::local(a, what, loc) : Array());
  return out;
}

std::shared_ptr<const CustomOutput> custom_output(NodeId id, const char* what) {
  const Node& n = graph()[id];
  if (!trace::is_annotated_view(n)) return nullptr;
  auto a = std::dynamic_pointer_cast<const CustomOutput>(trace::annotation(id));
  if (!a) {
    user_error(what, "an output of a custom function (custom_vjp, custom_jvp or checkpoint) traced at " +
                         loc_str(n.loc) + " lost its rule when an evaluation of it failed; trace the call again",
               n.loc);
  }
  return a;
}

std::vector<Array> custom_vjp_of(const CustomCall& c, const std::vector<Array>& out_cts) {
  const std::vector<Array> cts = zeros_for(c.outs, out_cts, c.loc);
  switch (c.kind) {
    case CustomKind::vjp: {
      std::vector<Array> got = unlocked([&] { return c.bwd(c.residuals, cts); });
      trace::Scope scope;
      return per_arg(local_all(got, c.what, c.loc), c, "bwd");
    }
    case CustomKind::jvp: {
      // The transpose of the linear map t -> rule(args, t): its vjp at t = 0.
      std::vector<Array> t0;
      for (const Array& a : c.args) t0.push_back(zeros(a.shape(), a.dtype(), c.loc));
      std::vector<bool> float_out(c.outs.size());
      for (std::size_t j = 0; j < c.outs.size(); ++j) float_out[j] = is_float(c.outs[j].dtype());
      const VectorFn linear = [&c](const std::vector<Array>& t) {
        std::vector<Array> r = c.jvp(c.args, t);
        if (r.size() != c.outs.size()) {
          user_error(c.what, "the jvp rule returned " + std::to_string(r.size()) + " tangents for " +
                                 std::to_string(c.outs.size()) + " outputs", c.loc);
        }
        for (std::size_t j = 0; j < r.size(); ++j) {
          r[j] = r[j].valid() ? checked(r[j], c.outs[j], c, "the jvp rule", index_word(r.size(), j, "output"))
                              : zeros(c.outs[j].shape(), c.outs[j].dtype(), c.loc);
        }
        return r;
      };
      std::vector<Array> got = unlocked([&] { return detail::vjp(linear, t0, cts, c.what, c.loc).second; });
      trace::Scope scope;
      return per_arg(local_all(got, c.what, c.loc), c, "the transposed jvp rule");
    }
    case CustomKind::checkpoint: {
      // f again, on aliases CSE keeps apart from the arguments (so its values
      // are computed again, not shared with the forward's), each ordered after
      // the outputs' cotangents (so they are computed when the backward needs
      // them, not kept from the forward's time).
      std::vector<Array> aliases;
      {
        trace::Scope scope;
        std::vector<NodeId> waits;
        for (const Array& g : out_cts) {
          if (g.valid()) waits.push_back(trace::local(g, c.what, c.loc).node_id());
        }
        for (const Array& a : c.args) {
          Array x = a;
          if (is_float(x.dtype())) {
            for (NodeId w : waits) x = trace::marked_alias(x, kRecomputeMark, c.loc, w);
          }
          aliases.push_back(x);
        }
      }
      std::vector<Array> got = unlocked([&] { return detail::vjp(c.f, aliases, cts, c.what, c.loc).second; });
      trace::Scope scope;
      return per_arg(local_all(got, c.what, c.loc), c, "checkpoint's backward");
    }
  }
  return {};
}

std::vector<Array> custom_jvp_of(const CustomCall& c, const std::vector<Array>& arg_tangents) {
  switch (c.kind) {
    case CustomKind::vjp:
      user_error(c.what, "forward mode (jvp) through a custom_vjp function is not defined (as in JAX): give the "
                         "function a custom_jvp rule instead, whose reverse mode is derived",
                 c.loc);
    case CustomKind::jvp: {
      const std::vector<Array> t = zeros_for(c.args, arg_tangents, c.loc);
      std::vector<Array> got = unlocked([&] { return c.jvp(c.args, t); });
      trace::Scope scope;
      if (got.size() != c.outs.size()) {
        user_error(c.what, "the jvp rule returned " + std::to_string(got.size()) + " tangents for " +
                               std::to_string(c.outs.size()) + " outputs (one per output; an empty handle for "
                               "zero)", c.loc);
      }
      got = local_all(got, c.what, c.loc);
      for (std::size_t j = 0; j < got.size(); ++j) {
        got[j] = is_float(c.outs[j].dtype())
                     ? checked(got[j], c.outs[j], c, "the jvp rule", index_word(got.size(), j, "output"))
                     : Array();
      }
      return got;
    }
    case CustomKind::checkpoint: {
      const std::vector<Array> t = zeros_for(c.args, arg_tangents, c.loc);
      return unlocked([&] { return detail::jvp(c.f, c.args, t, c.what, c.loc).second; });
    }
  }
  return {};
}

}  // namespace aj::autodiff

namespace aj::detail {

using autodiff::CustomCall;
using autodiff::CustomKind;
using autodiff::index_word;
using autodiff::new_call;
using autodiff::wrap_outputs;
using trace::describe;

std::vector<Array> custom_vjp(const VectorFn& f, const VjpFwdFn& fwd, const VjpBwdFn& bwd,
                              const std::vector<Array>& args, const Loc& loc) try {
  std::shared_ptr<CustomCall> c = new_call(CustomKind::vjp, "custom_vjp", f, args, loc);
  c->bwd = bwd;
  auto [fwd_outs, residuals] = fwd(args);
  if (fwd_outs.size() != c->outs.size()) {
    user_error("custom_vjp", "fwd returned " + std::to_string(fwd_outs.size()) + " outputs but f returned " +
                                 std::to_string(c->outs.size()), loc);
  }
  for (std::size_t j = 0; j < fwd_outs.size(); ++j) {
    if (!fwd_outs[j].valid() || !c->outs[j].valid() || fwd_outs[j].shape() != c->outs[j].shape() ||
        fwd_outs[j].dtype() != c->outs[j].dtype()) {
      user_error("custom_vjp", "fwd's output " + std::to_string(j) + " is " +
                                   (fwd_outs[j].valid() ? describe(fwd_outs[j]) : std::string("an empty handle")) +
                                   " but f's is " +
                                   (c->outs[j].valid() ? describe(c->outs[j]) : std::string("an empty handle")),
                 loc);
    }
  }
  for (std::size_t r = 0; r < residuals.size(); ++r) {
    if (!residuals[r].valid()) {
      user_error("custom_vjp", "fwd returned an empty Array handle as residual " + std::to_string(r), loc);
    }
  }
  c->residuals = std::move(residuals);
  return wrap_outputs(std::move(c));
} catch (const std::bad_alloc&) {
  out_of_memory("custom_vjp", loc);
}

std::vector<Array> custom_jvp(const VectorFn& f, const JvpRuleFn& rule, const std::vector<Array>& args,
                              const Loc& loc) try {
  std::shared_ptr<CustomCall> c = new_call(CustomKind::jvp, "custom_jvp", f, args, loc);
  c->jvp = rule;
  return wrap_outputs(std::move(c));
} catch (const std::bad_alloc&) {
  out_of_memory("custom_jvp", loc);
}

std::vector<Array> checkpoint(const VectorFn& f, const std::vector<Array>& args, const Loc& loc) try {
  std::shared_ptr<CustomCall> c = new_call(CustomKind::checkpoint, "checkpoint", f, args, loc);
  c->f = f;
  return wrap_outputs(std::move(c));
} catch (const std::bad_alloc&) {
  out_of_memory("checkpoint", loc);
}

}  // namespace aj::detail

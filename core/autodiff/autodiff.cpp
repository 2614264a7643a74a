// Reverse and forward mode over the traced graph (arrayjit/autodiff.hpp).
//
// How a derivative is built:
//  1. Each differentiated primal gets a tracer: a fresh Reshape node of the
//     primal to its own shape, marked by a unique payload (i0) so that
//     tracing's CSE never merges it with anything. The walk from f's outputs
//     then stops at exactly these nodes, even when one array is passed twice
//     or is also used by other code (or captured by f: a constant).
//  2. f runs once on the tracers; nothing is evaluated (an evaluation that
//     reaches a tracer is refused: RefuseTracedEval, an observer of the tracer).
//  3. The graph from the outputs down to the tracers is walked in
//     topological order, before anything in it is evaluated or simplified;
//     each node's rule (core/autodiff/rules.cpp) traces the cotangents of its
//     inputs (reverse) or its own tangent (forward) as ordinary nodes.
//  4. The tracers become plain aliases of their primals (the payload is
//     cleared), so the graph left behind is what f would have traced on the
//     primals themselves, and a loop tracing it again hits the plan cache.
// Only floating-point nodes carry derivatives. stop_gradient is a Reshape
// alias with another mark, where the walk does not go.
#include "arrayjit/autodiff.hpp"

#include <algorithm>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/api/observer.hpp"
#include "core/api/trace.hpp"
#include "core/autodiff/custom.hpp"
#include "core/autodiff/rules.hpp"

namespace aj {

namespace {

using trace::describe;
using autodiff::local_all;

// Reshape payloads (i0) that mark autodiff's nodes; plain Reshapes have 0
// (trace::kStopGradientMark: a constant to autodiff).
using trace::kStopGradientMark;
constexpr std::int64_t kTracerMarkBase = std::int64_t{1} << 48;
thread_local std::int64_t t_next_tracer = 0;

bool is_tracer(const Node& n) { return n.op == Op::Reshape && n.i0 >= kTracerMarkBase && !n.evaluated(); }
bool is_stop(const Node& n) { return n.op == Op::Reshape && n.i0 == kStopGradientMark && !n.evaluated(); }

// While a trace of f runs, an evaluation that reaches an argument being
// differentiated would turn the traced nodes into leaves and cut the
// derivative's graph: it is refused (every evaluation on this thread is
// reported to the trace, core/api/observer.hpp).
class RefuseTracedEval final : public trace::Observer {
 public:
  void evaluating(const std::vector<NodeId>& roots, const Loc& loc) override;
};

// One trace of f: tracers for the primals that are differentiated, undone
// (made plain aliases) when it ends, also when f throws. The primals are
// arrays of this thread's graph (local_all). Making and undoing the tracers
// each lock the graph (a trace::Scope); f runs between them without the lock,
// like any code calling ops, so it may evaluate, wait on other threads, or
// differentiate again.
class Trace {
 public:
  Trace(const std::vector<Array>& primals, const std::vector<bool>& differentiate, const Loc& loc)
      : args_(primals) {
    trace::Scope scope;
    for (std::size_t i = 0; i < primals.size(); ++i) {
      if (!differentiate[i]) continue;
      const Node& p = trace::node(primals[i]);
      Node n;
      n.op = Op::Reshape;
      n.dtype = p.dtype;
      n.shape = p.shape;
      n.inputs = {primals[i].node_id()};
      n.i0 = kTracerMarkBase + t_next_tracer++;
      args_[i] = trace::make(std::move(n), loc);
      tracers_.push_back(args_[i].node_id());
      slot_.push_back(i);
    }
    observing_.emplace(refuse_);
  }
  ~Trace() {
    observing_.reset();
    trace::Scope scope;
    Graph& g = scope.home();
    for (NodeId id : tracers_) {
      if (!g[id].alive || !is_tracer(g[id])) continue;
      Node like = g[id];  // a copy: rewrite reads it while changing the node
      like.i0 = 0;
      g.rewrite(id, like);
    }
  }
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // f's arguments: tracers where differentiated, the primals elsewhere.
  const std::vector<Array>& args() const { return args_; }
  // The tracer of primal `i`, or kNoNode.
  NodeId tracer_of(std::size_t i) const {
    for (std::size_t k = 0; k < slot_.size(); ++k) {
      if (slot_[k] == i) return tracers_[k];
    }
    return kNoNode;
  }
  bool is_ours(NodeId id) const { return std::find(tracers_.begin(), tracers_.end(), id) != tracers_.end(); }

 private:
  std::vector<Array> args_;
  std::vector<NodeId> tracers_;
  std::vector<std::size_t> slot_;  // primal index of each tracer
  RefuseTracedEval refuse_;
  std::optional<trace::Observing> observing_;  // while f runs
};

// The nodes from the roots down to the tracers, inputs first, and which of
// them carry a derivative (floating point, reached from a tracer of this
// trace other than through stop_gradient).
// The output of a custom function (core/autodiff/custom.hpp) is where the
// walk goes to the call's arguments instead of its inputs.
struct Walk {
  std::vector<NodeId> order;
  std::unordered_map<NodeId, std::size_t> index;
  std::vector<char> active;
  std::unordered_map<NodeId, std::shared_ptr<const autodiff::CustomOutput>> custom;  // by output node
  std::size_t at(NodeId id) const { return index.at(id); }
  const autodiff::CustomOutput* custom_at(NodeId id) const {
    auto it = custom.find(id);
    return it == custom.end() ? nullptr : it->second.get();
  }
};

Walk walk(const Trace& tr, const std::vector<NodeId>& roots, const char* what) {
  Graph& g = graph();
  Walk w;
  // What the walk goes down to from a node: a custom output's arguments, or its inputs.
  auto down = [&](NodeId id) -> const std::vector<NodeId>& {
    auto it = w.custom.find(id);
    return it != w.custom.end() ? it->second->call->arg_ids : g[id].inputs;
  };
  std::vector<std::pair<NodeId, std::size_t>> stack;
  auto visit = [&](NodeId id) {
    if (w.index.count(id)) return;
    w.index.emplace(id, kNoNode);  // on the stack
    if (auto c = autodiff::custom_output(id, what)) w.custom.emplace(id, std::move(c));
    stack.push_back({id, 0});
  };
  for (NodeId r : roots) {
    visit(r);
    while (!stack.empty()) {
      const NodeId done = stack.back().first;
      const Node& n = g[done];
      // Tracers (any trace's) and stop_gradient are where the walk ends.
      const bool leaf = is_tracer(n) || is_stop(n);
      if (!leaf && stack.back().second < down(done).size()) {
        visit(down(done)[stack.back().second++]);  // may grow the stack
        continue;
      }
      stack.pop_back();
      bool act = false;
      const Node& d = g[done];
      if (is_float(d.dtype) && !is_stop(d)) {
        if (is_tracer(d)) {
          act = tr.is_ours(done);
        } else {
          for (NodeId in : down(done)) act = act || w.active[w.index.at(in)];
        }
      }
      w.index[done] = w.order.size();
      w.order.push_back(done);
      w.active.push_back(act);
    }
  }
  return w;
}

autodiff::NodeInfo info_of(NodeId id) {
  const Node& n = graph()[id];
  autodiff::NodeInfo info;
  copy_payload(info, n);
  info.shape = n.shape;
  info.loc = n.loc;
  const std::vector<NodeId> inputs = n.inputs;  // from_node may not move the table, but be sure
  for (NodeId in : inputs) info.in.push_back(Array::from_node(in));
  info.out = Array::from_node(id);
  return info;
}

// A rule's result must be a derivative of the value it belongs to.
void check_derivative(const Array& d, const Array& of, const char* mode, Op op) {
  if (!d.valid()) return;
  if (d.dtype() != of.dtype() || d.shape() != of.shape()) {
    internal_error(std::string("autodiff: the ") + mode + " rule of " + op_name(op) + " made " +
                   describe(d) + " for a value " + describe(of));
  }
}

Array add_to(Array acc, const Array& term, const Loc& loc) {
  if (!term.valid()) return acc;
  return acc.valid() ? add(Operand(acc, loc), Operand(term, loc)) : term;
}


// f on the tracers; its outputs as arrays of this thread's graph (an output
// f took from another thread's graph is a constant: imported).
std::vector<Array> call(const VectorFn& f, const Trace& tr, const char* what, const Loc& loc) {
  std::vector<Array> outs = f(tr.args());
  for (std::size_t j = 0; j < outs.size(); ++j) {
    if (!outs[j].valid()) {
      user_error(what, "f returned an empty Array handle as output " + std::to_string(j), loc);
    }
  }
  return local_all(outs, what, loc);
}

void check_primals(const std::vector<Array>& primals, const char* what, const Loc& loc) {
  for (std::size_t i = 0; i < primals.size(); ++i) {
    if (!primals[i].valid()) {
      user_error(what, "primal " + std::to_string(i) + " is an empty Array handle", loc);
    }
  }
}

// The cotangents of the primals from those of the outputs (empty: zero).
std::vector<Array> reverse(const Trace& tr, std::size_t n_primals, const std::vector<Array>& outs,
                           const std::vector<Array>& seeds, const char* what) {
  std::vector<NodeId> roots;
  for (const Array& o : outs) roots.push_back(o.node_id());
  const Walk w = walk(tr, roots, what);
  std::vector<Array> ct(w.order.size());
  // A custom call runs its rule once, at the first of its outputs in the
  // order (the last the reverse loop meets): by then every output's
  // cotangent is complete, and its arguments come earlier still.
  std::unordered_map<const autodiff::CustomCall*, std::size_t> first_out;
  std::unordered_map<const autodiff::CustomCall*, std::vector<Array>> out_cts;
  for (const auto& [id, c] : w.custom) {
    auto [it, fresh] = first_out.emplace(c->call.get(), w.at(id));
    if (!fresh) it->second = std::min(it->second, w.at(id));
  }
  for (std::size_t j = 0; j < outs.size(); ++j) {
    const std::size_t k = w.at(outs[j].node_id());
    if (w.active[k] && seeds[j].valid()) ct[k] = add_to(ct[k], seeds[j], graph()[outs[j].node_id()].loc);
  }
  for (std::size_t k = w.order.size(); k-- > 0;) {
    const NodeId id = w.order[k];
    if (const autodiff::CustomOutput* co = w.custom_at(id)) {
      const autodiff::CustomCall* call = co->call.get();
      if (w.active[k] && ct[k].valid()) {
        std::vector<Array>& v = out_cts[call];
        v.resize(call->outs.size());
        v[co->index] = std::move(ct[k]);
      }
      ct[k] = Array();
      if (first_out.at(call) != k) continue;
      auto got = out_cts.find(call);
      if (got == out_cts.end()) continue;  // no output of the call has a cotangent
      const std::vector<Array> cts = autodiff::custom_vjp_of(*call, got->second);
      out_cts.erase(got);
      for (std::size_t i = 0; i < cts.size(); ++i) {
        if (!cts[i].valid()) continue;
        const std::size_t ki = w.at(call->arg_ids[i]);
        if (w.active[ki]) ct[ki] = add_to(std::move(ct[ki]), cts[i], call->loc);
      }
      continue;
    }
    if (!w.active[k] || !ct[k].valid() || is_tracer(graph()[id])) continue;
    const autodiff::Rule* rule = autodiff::rule_for(graph()[id].op);
    if (!rule) continue;
    autodiff::NodeInfo n = info_of(id);
    std::vector<std::pair<Array, Array>> past;
    n.past = &past;
    std::vector<bool> need(n.in.size());
    for (std::size_t i = 0; i < n.in.size(); ++i) need[i] = w.active[w.at(n.in[i].node_id())];
    std::vector<Array> cts(n.in.size());
    rule->vjp(n, ct[k], need, cts);
    ct[k] = Array();  // its last use: the node's cotangent is spent
    for (std::size_t i = 0; i < n.in.size(); ++i) {
      if (!need[i]) continue;
      check_derivative(cts[i], n.in[i], "vjp", n.op);
      const std::size_t ki = w.at(n.in[i].node_id());
      ct[ki] = add_to(std::move(ct[ki]), cts[i], n.loc);
    }
    // Passed past an input to one of its inputs: earlier in the order than
    // that input, so its own rule has not run yet.
    for (const auto& [to, d] : past) {
      const std::size_t kt = w.at(to.node_id());
      if (!w.active[kt] || kt >= k) internal_error(std::string("autodiff: the vjp rule of ") + op_name(n.op) + " passed a cotangent to a node it may not reach");
      check_derivative(d, to, "vjp", n.op);
      ct[kt] = add_to(std::move(ct[kt]), d, n.loc);
    }
  }
  std::vector<Array> grads(n_primals);
  for (std::size_t i = 0; i < n_primals; ++i) {
    const NodeId t = tr.tracer_of(i);
    if (t == kNoNode) continue;
    auto it = w.index.find(t);
    if (it != w.index.end()) grads[i] = ct[it->second];
  }
  return grads;
}

// Zeros where a primal got no derivative: not reached, or not floating point.
void fill_zeros(std::vector<Array>& ds, const std::vector<Array>& like, const Loc& loc) {
  for (std::size_t i = 0; i < ds.size(); ++i) {
    if (!ds[i].valid()) ds[i] = zeros(like[i].shape(), like[i].dtype(), loc);
  }
}

}  // namespace

// ---- public ----------------------------------------------------------------------

Array stop_gradient(const Array& x_in, Loc loc) try {
  trace::Scope scope;
  const Array& x = trace::local(x_in, "stop_gradient", loc);
  return trace::stop_gradient_view(x, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("stop_gradient", loc);
}

Array sum_to_shape(const Array& x_in, const Shape& shape_in, Loc loc) try {
  trace::Scope scope;
  const Shape shape = shape_in;  // a copy: shape_in may be a node's, freed if the sum rewrites it
  const Array& x = trace::local(x_in, "sum_to_shape", loc);
  const Node& n = trace::node(x);
  const Shape from = n.shape;
  const DType t = n.dtype;
  const int r = from.ndim(), k = shape.ndim();
  bool ok = k <= r && t != DType::bool_;
  std::vector<int> axes;
  for (int i = 0; i < r - k && ok; ++i) axes.push_back(i);
  for (int i = 0; i < k && ok; ++i) {
    const std::int64_t have = from[r - k + i], want = shape[i];
    if (want == have) continue;
    if (want != 1) ok = false;
    else axes.push_back(r - k + i);
  }
  if (!ok) {
    user_error("sum_to_shape", t == DType::bool_
                                   ? "cannot sum bool " + describe(t, from) + " (cast it first)"
                                   : "cannot sum " + describe(t, from) + " to shape " + shape.str() +
                                         " (the shape must broadcast to the array's shape)",
               loc);
  }
  if (axes.empty()) return reshape(x, shape, loc);
  Array s = sum(x, axes, false, loc);
  return reshape(s.astype(t, loc), shape, loc);  // an integer sum widens: back to x's dtype
} catch (const std::bad_alloc&) {
  detail::out_of_memory("sum_to_shape", loc);
}

void RefuseTracedEval::evaluating(const std::vector<NodeId>& roots, const Loc& loc) {
  const Graph& g = graph();
  for (NodeId root : roots) {
    const std::vector<NodeId> order = unevaluated_order({root});
    if (std::none_of(order.begin(), order.end(), [&](NodeId id) { return is_tracer(g[id]); })) continue;
    {
      user_error("eval", "inside a function being differentiated (aj::grad, vjp, jvp), " +
                             describe(g[root].dtype, g[root].shape) +
                             " depends on an argument being differentiated; evaluating it (eval, "
                             "item, to_vector, printing) would cut the gradient. Return it from f "
                             "instead (vjp returns every output of f), or compute it outside f",
                 loc);
    }
  }
}

namespace detail {

std::pair<std::vector<Array>, std::vector<Array>> vjp(const VectorFn& f,
                                                      const std::vector<Array>& primals_in,
                                                      const std::vector<Array>& cotangents_in,
                                                      const char* what, const Loc& loc) try {
  check_primals(primals_in, what, loc);
  const std::vector<Array> primals = local_all(primals_in, what, loc);
  const std::vector<Array> cotangents = local_all(cotangents_in, what, loc);
  std::vector<bool> diff(primals.size());
  for (std::size_t i = 0; i < primals.size(); ++i) diff[i] = is_float(primals[i].dtype());
  std::vector<Array> outs, grads;
  {
    Trace tr(primals, diff, loc);
    outs = call(f, tr, what, loc);
    if (cotangents.size() != outs.size()) {
      user_error(what, "f returned " + std::to_string(outs.size()) + " outputs but " +
                           std::to_string(cotangents.size()) + " cotangents were given", loc);
    }
    std::vector<Array> seeds(outs.size());
    for (std::size_t j = 0; j < outs.size(); ++j) {
      const Array& c = cotangents[j];
      if (!c.valid()) continue;  // an empty handle: a zero cotangent
      if (c.shape() != outs[j].shape()) {
        user_error(what, "cotangent " + std::to_string(j) + " is " + describe(c) + " but output " +
                             std::to_string(j) + " of f is " + describe(outs[j]) +
                             " (a cotangent has its output's shape)", loc);
      }
      if (c.dtype() == DType::bool_ && is_float(outs[j].dtype())) {
        user_error(what, "cotangent " + std::to_string(j) + " is bool", loc);
      }
      if (is_float(outs[j].dtype())) seeds[j] = c.astype(outs[j].dtype(), loc);
    }
    trace::Scope scope;  // the walk reads the node table
    grads = reverse(tr, primals.size(), outs, seeds, what);
  }
  fill_zeros(grads, primals, loc);
  return {std::move(outs), std::move(grads)};
} catch (const std::bad_alloc&) {
  out_of_memory(what, loc);
}

std::pair<std::vector<Array>, std::vector<Array>> jvp(const VectorFn& f,
                                                      const std::vector<Array>& primals_in,
                                                      const std::vector<Array>& tangents_in,
                                                      const char* what, const Loc& loc) try {
  check_primals(primals_in, what, loc);
  const std::vector<Array> primals = local_all(primals_in, what, loc);
  const std::vector<Array> tangents = local_all(tangents_in, what, loc);
  if (tangents.size() != primals.size()) {
    user_error(what, std::to_string(primals.size()) + " primals but " + std::to_string(tangents.size()) +
                         " tangents (one per primal)", loc);
  }
  std::vector<bool> diff(primals.size());
  for (std::size_t i = 0; i < primals.size(); ++i) {
    const Array& t = tangents[i];
    diff[i] = is_float(primals[i].dtype()) && t.valid();
    if (!t.valid()) continue;  // an empty handle: a zero tangent
    if (t.shape() != primals[i].shape()) {
      user_error(what, "tangent " + std::to_string(i) + " is " + describe(t) + " but primal " +
                           std::to_string(i) + " is " + describe(primals[i]) +
                           " (a tangent has its primal's shape)", loc);
    }
    if (t.dtype() == DType::bool_ && diff[i]) user_error(what, "tangent " + std::to_string(i) + " is bool", loc);
  }
  std::vector<Array> outs, tans;
  {
    Trace tr(primals, diff, loc);
    outs = call(f, tr, what, loc);
    trace::Scope scope;  // the walk reads the node table
    std::vector<NodeId> roots;
    for (const Array& o : outs) roots.push_back(o.node_id());
    const Walk w = walk(tr, roots, what);
    std::vector<Array> tan(w.order.size());
    // A custom call's rule runs once, at the first of its outputs met.
    std::unordered_map<const autodiff::CustomCall*, std::vector<Array>> out_tans;
    for (std::size_t i = 0; i < primals.size(); ++i) {
      const NodeId t = tr.tracer_of(i);
      auto it = t == kNoNode ? w.index.end() : w.index.find(t);
      if (it != w.index.end()) tan[it->second] = tangents[i].astype(primals[i].dtype(), loc);
    }
    for (std::size_t k = 0; k < w.order.size(); ++k) {
      const NodeId id = w.order[k];
      if (!w.active[k] || is_tracer(graph()[id])) continue;
      if (const autodiff::CustomOutput* co = w.custom_at(id)) {
        const autodiff::CustomCall* call = co->call.get();
        auto it = out_tans.find(call);
        if (it == out_tans.end()) {
          std::vector<Array> t(call->args.size());
          for (std::size_t i = 0; i < t.size(); ++i) {
            const std::size_t ki = w.at(call->arg_ids[i]);
            if (w.active[ki]) t[i] = tan[ki];
          }
          it = out_tans.emplace(call, autodiff::custom_jvp_of(*call, t)).first;
        }
        tan[k] = it->second[co->index];
        check_derivative(tan[k], Array::from_node(id), "jvp", Op::Reshape);
        continue;
      }
      const autodiff::Rule* rule = autodiff::rule_for(graph()[id].op);
      if (!rule) continue;
      const autodiff::NodeInfo n = info_of(id);
      std::vector<Array> t(n.in.size());
      bool any = false;
      for (std::size_t i = 0; i < n.in.size(); ++i) {
        const std::size_t ki = w.at(n.in[i].node_id());
        if (w.active[ki] && tan[ki].valid()) t[i] = tan[ki], any = true;
      }
      if (!any) continue;
      tan[k] = rule->jvp(n, t);
      check_derivative(tan[k], n.out, "jvp", n.op);
    }
    for (const Array& o : outs) {
      const std::size_t k = w.at(o.node_id());
      tans.push_back(w.active[k] ? tan[k] : Array());
    }
  }
  fill_zeros(tans, outs, loc);
  return {std::move(outs), std::move(tans)};
} catch (const std::bad_alloc&) {
  out_of_memory(what, loc);
}

std::pair<Array, std::vector<Array>> value_and_grad(const VectorFn& f, const std::vector<Array>& primals_in,
                                                    const std::vector<int>& argnums, const char* what,
                                                    const Loc& loc) try {
  check_primals(primals_in, what, loc);
  const std::vector<Array> primals = local_all(primals_in, what, loc);
  const int n = static_cast<int>(primals.size());
  if (argnums.empty()) user_error(what, "argnums is empty: nothing to differentiate", loc);
  std::vector<bool> diff(primals.size());
  for (int a : argnums) {
    if (a < -n || a >= n) {
      user_error(what, "argnum " + std::to_string(a) + " is out of range for " + std::to_string(n) +
                           " argument" + (n == 1 ? "" : "s"), loc);
    }
    const std::size_t i = static_cast<std::size_t>(a < 0 ? a + n : a);
    if (!is_float(primals[i].dtype())) {
      user_error(what, "argument " + std::to_string(i) + " is " + describe(primals[i]) +
                           "; only floating-point arguments have gradients (convert it with "
                           "astype, or leave it out of argnums)", loc);
    }
    diff[i] = true;
  }
  Array value;
  std::vector<Array> grads;
  {
    Trace tr(primals, diff, loc);
    std::vector<Array> outs = call(f, tr, what, loc);
    if (outs.size() != 1 || outs[0].ndim() != 0 || !is_float(outs[0].dtype())) {
      user_error(what, "f must return one floating-point scalar (rank 0), got " +
                           (outs.size() == 1 ? describe(outs[0]) : std::to_string(outs.size()) + " arrays") +
                           " (reduce it, e.g. with sum or mean; or use vjp)", loc);
    }
    value = outs[0];
    const Array seed = ones({}, value.dtype(), loc);
    trace::Scope scope;  // the walk reads the node table
    grads = reverse(tr, primals.size(), outs, {seed}, what);
  }
  std::vector<Array> picked;
  for (int a : argnums) {
    const std::size_t i = static_cast<std::size_t>(a < 0 ? a + n : a);
    picked.push_back(grads[i].valid() ? grads[i] : zeros(primals[i].shape(), primals[i].dtype(), loc));
  }
  return {std::move(value), std::move(picked)};
} catch (const std::bad_alloc&) {
  out_of_memory(what, loc);
}

}  // namespace detail
}  // namespace aj

// aj::host_callback (arrayjit/host_callback.hpp): an Op::HostCall node over
// the inputs (graph/host_call.hpp), its results sliced out of the node; with
// a vjp callback, a custom_vjp whose bwd is another host call. (Here, in
// autodiff's room, because of that; the node itself is ordinary tracing.)
#include "arrayjit/host_callback.hpp"

#include <new>

#include "arrayjit/autodiff.hpp"
#include "core/api/trace.hpp"
#include "graph/host_call.hpp"

namespace aj {

struct HostCallback::Impl {
  std::shared_ptr<const HostCallFn> fn;
  std::int64_t id = 0;
  std::shared_ptr<const HostCallFn> vjp;  // null: no derivative
  std::int64_t vjp_id = 0;
};

namespace {

std::shared_ptr<const HostCallFn> make_fn(HostFn fn, const std::string& name, const Loc& loc) {
  auto f = std::make_shared<HostCallFn>();
  f->fn = std::move(fn);
  f->name = name;
  f->loc = loc;
  return f;
}

// The node of one call and its results (views of it).
std::vector<Array> call_node(const HostCallFn& f, std::int64_t id, const std::shared_ptr<const HostCallFn>& keep,
                             const std::vector<ResultSpec>& results, const std::vector<Array>& inputs_in,
                             const Loc& loc) {
  const char* what = "host_callback";
  if (results.empty()) user_error(what, "'" + f.name + "' has no results (give at least one ResultSpec)", loc);
  const DType dtype = results[0].dtype;
  std::vector<Shape> shapes;
  std::int64_t total = 0;
  for (std::size_t j = 0; j < results.size(); ++j) {
    if (results[j].dtype != dtype) {
      user_error(what, "'" + f.name + "': result " + std::to_string(j) + " is " + dtype_name(results[j].dtype) +
                           " but result 0 is " + dtype_name(dtype) +
                           " (the results of one call share a dtype: call it once per dtype)", loc);
    }
    for (std::int64_t d : results[j].shape) {
      if (d < 0) user_error(what, "'" + f.name + "': result " + std::to_string(j) + " has a negative extent", loc);
    }
    shapes.push_back(results[j].shape);
    total += results[j].shape.numel();
  }
  trace::Scope scope;
  Node n;
  n.op = Op::HostCall;
  n.dtype = dtype;
  n.shape = results.size() == 1 ? results[0].shape : Shape{total};
  for (const Array& x : inputs_in) n.inputs.push_back(trace::id(x, what, loc));
  n.i0 = id;
  n.ints = host_call_ints(shapes);
  Array packed = trace::make(std::move(n), loc);
  keep_host_call(packed.node_id(), keep);
  if (results.size() == 1) return {packed};
  std::vector<Array> out;
  std::int64_t at = 0;
  for (const Shape& s : shapes) {
    out.push_back(reshape(slice(packed, 0, at, at + s.numel(), 1, loc), s, loc));
    at += s.numel();
  }
  return out;
}

}  // namespace

HostCallback::HostCallback(HostFn fn, std::string name, Loc loc) {
  auto impl = std::make_shared<Impl>();
  impl->fn = make_fn(std::move(fn), name, loc);
  impl->id = register_host_call(impl->fn);
  impl_ = std::move(impl);
}

HostCallback::HostCallback(HostFn fn, HostFn vjp, std::string name, Loc loc) {
  auto impl = std::make_shared<Impl>();
  impl->fn = make_fn(std::move(fn), name, loc);
  impl->id = register_host_call(impl->fn);
  impl->vjp = make_fn(std::move(vjp), name + "'s vjp", loc);
  impl->vjp_id = register_host_call(impl->vjp);
  impl_ = std::move(impl);
}

std::vector<Array> HostCallback::operator()(const std::vector<ResultSpec>& results, const std::vector<Array>& inputs,
                                            Loc loc) const try {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) user_error("host_callback", "input " + std::to_string(i) + " is an empty Array handle", loc);
  }
  const std::shared_ptr<const Impl> impl = impl_;
  if (!impl->vjp) return call_node(*impl->fn, impl->id, impl->fn, results, inputs, loc);
  // With a vjp: a custom_vjp whose residuals are the inputs and results,
  // and whose bwd is the vjp callback as another host call.
  const VectorFn f = [impl, results, loc](const std::vector<Array>& in) {
    return call_node(*impl->fn, impl->id, impl->fn, results, in, loc);
  };
  const VjpFwdFn fwd = [f](const std::vector<Array>& in) {
    std::vector<Array> outs = f(in);
    std::vector<Array> res = in;
    res.insert(res.end(), outs.begin(), outs.end());
    return std::pair{std::move(outs), std::move(res)};
  };
  const std::size_t n_in = inputs.size();
  const VjpBwdFn bwd = [impl, n_in, loc](const std::vector<Array>& res, const std::vector<Array>& cts) {
    std::vector<ResultSpec> specs;
    std::vector<std::size_t> float_in;
    for (std::size_t i = 0; i < n_in; ++i) {
      if (!is_float(res[i].dtype())) continue;
      specs.push_back({res[i].shape(), res[i].dtype()});
      float_in.push_back(i);
    }
    std::vector<Array> grads(n_in);
    if (specs.empty()) return grads;
    std::vector<Array> args = res;
    args.insert(args.end(), cts.begin(), cts.end());
    std::vector<Array> got = call_node(*impl->vjp, impl->vjp_id, impl->vjp, specs, args, loc);
    for (std::size_t k = 0; k < float_in.size(); ++k) grads[float_in[k]] = got[k];
    return grads;
  };
  return detail::custom_vjp(f, fwd, bwd, inputs, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("host_callback", loc);
}

std::vector<Array> host_callback(HostFn fn, const std::vector<ResultSpec>& results, const std::vector<Array>& inputs,
                                 Loc loc) {
  return HostCallback(std::move(fn), "host_callback", loc)(results, inputs, loc);
}

std::vector<Array> host_callback(HostFn fn, HostFn vjp, const std::vector<ResultSpec>& results,
                                 const std::vector<Array>& inputs, Loc loc) {
  return HostCallback(std::move(fn), std::move(vjp), "host_callback", loc)(results, inputs, loc);
}

}  // namespace aj

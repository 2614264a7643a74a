// Devices of arrays: the trace-time mixing check and Array::to.
#include "core/api/device.hpp"

#include <algorithm>
#include <unordered_set>

#include "arrayjit/cuda.hpp"
#include "core/api/evaluate.hpp"
#include "core/api/trace.hpp"
#include "exec/execute.hpp"

namespace aj {

namespace detail {

std::optional<Device> device_of(NodeId root) {
  Graph& g = graph();
  {
    const Node& r = g[root];
    if (r.evaluated()) return r.storage->device;
    if (r.dev_epoch == g.device_epoch()) return r.has_dev ? std::optional<Device>(r.dev) : std::nullopt;
  }
  // Depth first, stopping at the first evaluated node or valid memo: every op
  // already checked that its own inputs agree, so the first one found speaks
  // for all. The answer is kept in the root's memo, so tracing a long chain
  // asks each node once (the walks stop at the memo of the op before).
  std::vector<NodeId> work{root}, seen;
  std::unordered_set<NodeId> seen_big;
  std::optional<Device> found;
  while (!work.empty() && !found) {
    const NodeId id = work.back();
    work.pop_back();
    const Node& n = g[id];
    if (n.evaluated()) {
      found = n.storage->device;
      break;
    }
    if (n.dev_epoch == g.device_epoch()) {
      if (n.has_dev) found = n.dev;
      continue;  // a memo of "no data below": nothing to find there
    }
    if (seen.size() < 64) {
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
      seen.push_back(id);
    } else if (!seen_big.insert(id).second || std::find(seen.begin(), seen.end(), id) != seen.end()) {
      continue;
    }
    for (auto it = n.inputs.rbegin(); it != n.inputs.rend(); ++it) work.push_back(*it);
  }
  Node& r = g[root];
  r.dev_epoch = g.device_epoch();
  r.has_dev = found.has_value();
  r.dev = found.value_or(Device::cpu());
  return found;
}

void check_devices(Node& n, const Loc& loc) {
  // Host-only programs never pay for the walk; under a DeviceScope host
  // arrays are inputs of the device by design.
  if (!any_device_storage() || exec::scope_device()) return;
  std::optional<Device> first;
  NodeId first_id = kNoNode;
  for (NodeId in : n.inputs) {
    const auto d = device_of(in);
    if (!d) continue;
    if (!first) {
      first = d;
      first_id = in;
    } else if (*d != *first) {
      const Graph& g = graph();
      user_error(op_name(n.op), "operands are on different devices: " +
                                    trace::describe(g[first_id].dtype, g[first_id].shape) + " on " +
                                    first->str() + " and " + trace::describe(g[in].dtype, g[in].shape) +
                                    " on " + d->str() + " (move one with .to(device))",
                 loc);
    }
  }
  // The new node's own memo: the next op asks about it at once.
  n.dev_epoch = graph().device_epoch();
  n.has_dev = first.has_value();
  n.dev = first.value_or(Device::cpu());
}

}  // namespace detail

Array Array::to(Device d, Loc loc) const try {
  trace::Scope scope;
  const Array& a = trace::local(*this, "to", loc);
  const NodeId id = a.node_id();
  // Whether an unevaluated array that reads no data is computed on the
  // target directly (under a DeviceScope) rather than on the host and copied.
  bool compute_on_target = false;
  switch (d.kind) {
    case Device::Kind::cpu: break;
    case Device::Kind::cuda:
      if (d.index < 0) user_error("to", "negative CUDA device index " + std::to_string(d.index), loc);
      compute_on_target = true;
      break;
  }
  if (!graph()[id].evaluated()) {
    if (compute_on_target && !detail::device_of(id)) {
      // Reads no data: compute it on the target directly.
      cuda::DeviceScope device_scope(d);
      a.eval(loc);
    } else {
      a.eval(loc);
    }
  }
  const Node& n = graph()[id];
  if (n.storage->device == d) return a;
  // Through the host: the device backend copies in and out of host memory
  // (GPU to GPU goes down and up again: rare, simple).
  std::shared_ptr<Storage> s = n.storage;
  if (!s->device.is_host()) s = detail::backend_for(s->device).to_host(*s);
  if (!d.is_host()) s = detail::backend_for(d).from_host(*s);
  Node leaf;
  leaf.op = Op::Input;
  leaf.dtype = n.dtype;
  leaf.shape = n.shape;
  leaf.strides = n.strides;
  leaf.offset = n.offset;
  leaf.storage = std::move(s);
  leaf.loc = loc;
  return Array::from_node(graph().add(std::move(leaf)));
} catch (const std::bad_alloc&) {
  detail::out_of_memory("to", loc);
}

}  // namespace aj

// Op::HostCall: a user's function over evaluated host buffers, run as a
// library step (arrayjit/host_callback.hpp is its public side).
//
// A node names its function by an id (payload i0); the function lives as
// long as anything may run it: the graph keeps it for each node that names
// it (keep_host_call) while the node is alive and unevaluated (dropped by
// sweep_host_calls, which every evaluation runs when it ends), and
// aj::compile's kept programs hold the functions they run (host_functions).
// A cached plan does not: it can only be reused for a graph with a node
// naming the same id, which holds it. The results, one dtype, are packed
// one after another in the node (payload ints: their shapes, see
// host_call_results), row-major.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/host_buffer.hpp"
#include "graph/graph.hpp"

namespace aj {

struct HostCallFn {
  std::function<void(const std::vector<HostBuffer>& inputs, const std::vector<HostBuffer>& outputs)> fn;
  std::string name;  // for messages
  Loc loc;           // where it was made
};

// A fresh id for `f` (ids are never reused).
std::int64_t register_host_call(const std::shared_ptr<const HostCallFn>& f);
// The function of id (null: nothing holds it any more).
std::shared_ptr<const HostCallFn> find_host_call(std::int64_t id);
// The current graph keeps f while node `id` (a HostCall naming it) lives
// unevaluated (graph lock held).
void keep_host_call(NodeId id, std::shared_ptr<const HostCallFn> f);

// Drops what the current graph keeps for nodes that were evaluated or freed
// (graph lock held). Cheap when nothing is kept.
void sweep_host_calls();
// The function a LibraryCall runs (an internal error when it is gone).
std::shared_ptr<const HostCallFn> host_function(const std::weak_ptr<const HostCallFn>& f);

// The payload list for results of these shapes, and back.
std::vector<std::int64_t> host_call_ints(const std::vector<Shape>& results);
std::vector<Shape> host_call_results(const std::vector<std::int64_t>& ints);

// Runs f: `inputs` as laid out, the results written into `out` (packed,
// row-major). What f throws becomes an aj::Error naming it and its line.
void run_host_call(const HostCallFn& f, DType dtype, const std::vector<std::int64_t>& ints,
                   const std::vector<HostBuffer>& inputs, void* out);

}  // namespace aj

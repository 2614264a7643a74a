// Op::HostCall's functions (graph/host_call.hpp).
#include "graph/host_call.hpp"

#include <exception>
#include <mutex>
#include <unordered_map>

namespace aj {

namespace {

struct Registry {
  std::mutex mu;
  std::int64_t next = 1;
  std::unordered_map<std::int64_t, std::weak_ptr<const HostCallFn>> by_id;
  static Registry& get() {
    static Registry* r = new Registry();  // never destroyed: programs may outlive main's statics
    return *r;
  }
};

constexpr int kSlot = 2;  // this file's graph attachment slot (0: plan cache, 1: annotations)

struct Kept final : GraphAttachment {
  std::unordered_map<NodeId, std::shared_ptr<const HostCallFn>> by_node;
  std::size_t sweep_at = 64;
};

}  // namespace

std::int64_t register_host_call(const std::shared_ptr<const HostCallFn>& f) {
  Registry& r = Registry::get();
  std::lock_guard lock(r.mu);
  if (r.by_id.size() >= 64) {  // forget the ids nothing holds
    std::erase_if(r.by_id, [](const auto& e) { return e.second.expired(); });
  }
  const std::int64_t id = r.next++;
  r.by_id.emplace(id, f);
  return id;
}

std::shared_ptr<const HostCallFn> find_host_call(std::int64_t id) {
  Registry& r = Registry::get();
  std::lock_guard lock(r.mu);
  auto it = r.by_id.find(id);
  return it == r.by_id.end() ? nullptr : it->second.lock();
}

namespace {
void sweep(Graph& g, Kept& k) {
  // Taken out first: a function's destructor (a C release callback) may
  // run arbitrary code.
  std::vector<std::shared_ptr<const HostCallFn>> dropped;
  for (auto it = k.by_node.begin(); it != k.by_node.end();) {
    const Node& n = g[it->first];
    if (n.alive && n.op == Op::HostCall && !n.evaluated()) {
      ++it;
      continue;
    }
    dropped.push_back(std::move(it->second));
    it = k.by_node.erase(it);
  }
  k.sweep_at = std::max<std::size_t>(64, 2 * k.by_node.size());
}
}  // namespace

void keep_host_call(NodeId id, std::shared_ptr<const HostCallFn> f) {
  Graph& g = graph();
  auto& slot = g.attachment(kSlot);
  if (!slot) slot = std::make_unique<Kept>();
  Kept& k = static_cast<Kept&>(*slot);
  if (k.by_node.size() >= k.sweep_at) sweep(g, k);
  k.by_node[id] = std::move(f);
}

void sweep_host_calls() {
  Graph& g = graph();
  auto& slot = g.attachment(kSlot);
  if (!slot) return;
  Kept& k = static_cast<Kept&>(*slot);
  if (!k.by_node.empty()) sweep(g, k);
}

std::shared_ptr<const HostCallFn> host_function(const std::weak_ptr<const HostCallFn>& f) {
  std::shared_ptr<const HostCallFn> s = f.lock();
  if (!s) internal_error("a host_call step whose function is gone");
  return s;
}

std::vector<std::int64_t> host_call_ints(const std::vector<Shape>& results) {
  std::vector<std::int64_t> v{static_cast<std::int64_t>(results.size())};
  for (const Shape& s : results) {
    v.push_back(s.ndim());
    for (std::int64_t d : s) v.push_back(d);
  }
  return v;
}

std::vector<Shape> host_call_results(const std::vector<std::int64_t>& ints) {
  std::vector<Shape> out;
  std::size_t at = 1;
  for (std::int64_t r = 0; !ints.empty() && r < ints[0]; ++r) {
    const auto nd = static_cast<std::size_t>(ints.at(at++));
    out.emplace_back(std::vector<std::int64_t>(ints.begin() + static_cast<std::ptrdiff_t>(at),
                                               ints.begin() + static_cast<std::ptrdiff_t>(at + nd)));
    at += nd;
  }
  return out;
}

void run_host_call(const HostCallFn& f, DType dtype, const std::vector<std::int64_t>& ints,
                   const std::vector<HostBuffer>& inputs, void* out) {
  std::vector<HostBuffer> outputs;
  char* at = static_cast<char*>(out);
  for (const Shape& s : host_call_results(ints)) {
    HostBuffer b;
    b.data = at;
    b.dtype = dtype;
    b.shape = s;
    b.strides = contiguous_strides(s);
    at += s.numel() * static_cast<std::int64_t>(itemsize(dtype));
    outputs.push_back(std::move(b));
  }
  try {
    f.fn(inputs, outputs);
  } catch (const Error& e) {
    throw Error(e.kind(), "host_callback '" + f.name + "' (made at " + loc_str(f.loc) + ") failed: " + e.what());
  } catch (const std::exception& e) {
    throw Error(Error::Kind::user, "host_callback '" + f.name + "' (made at " + loc_str(f.loc) + ") threw: " + e.what());
  } catch (...) {
    throw Error(Error::Kind::user, "host_callback '" + f.name + "' (made at " + loc_str(f.loc) + ") threw an exception");
  }
}

}  // namespace aj

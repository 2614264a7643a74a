// The one step loop (see execute.hpp).
#include "exec/execute.hpp"

#include <atomic>
#include <string>
#include <unordered_map>

#include "base/stats.hpp"
#include "opt/lower.hpp"
#include "opt/verify.hpp"

namespace aj::exec {

namespace {

constinit thread_local std::optional<Device> t_scope [[gnu::tls_model("initial-exec")]];
std::atomic<DestinationHook> g_destination{nullptr};

using Span = std::pair<const char*, const char*>;

// Per step: buffers a step reads from another device, alive until the step
// is enqueued (the backend orders their release after it).
using Staged = std::vector<std::shared_ptr<Storage>>;

// The storage step inputs read node `id` from on `target`: its own, or a copy
// of a host array for a device step.
const Storage* input_storage(NodeId id, Backend& target, Staged& staged) {
  const Node& n = graph()[id];
  if (!n.evaluated()) internal_error("exec: a step input was not computed before its step");
  const Device here = target.device();
  if (n.storage->device == here) return n.storage.get();
  if (n.storage->device.kind != Device::Kind::cpu) {
    runtime_error("aj: an evaluation on " + here.str() + " reads an array on " + n.storage->device.str());
  }
  staged.push_back(target.from_host(*n.storage));
  return staged.back().get();
}

// Buffers of concatenates that kernels write pieces into before the
// concatenate's own step (Step::into), by concatenate node.
using Pending = std::unordered_map<NodeId, std::shared_ptr<Storage>>;

std::shared_ptr<Storage> pending_buffer(Pending& pending, NodeId c, Backend& target) {
  std::shared_ptr<Storage>& s = pending[c];
  if (!s) s = target.allocate(static_cast<std::size_t>(graph()[c].numel()) * itemsize(graph()[c].dtype));
  return s;
}

// A kernel step's buffers: its inputs (with any staged copies) and its
// outputs (a concatenate's, a destination hook's, a donated input's, or new).
struct KernelBuffers {
  Staged staged;
  std::vector<const Storage*> ins, out_ptrs;
  std::vector<std::shared_ptr<Storage>> outs;
};

KernelBuffers kernel_buffers(const opt::Plan& p, std::size_t k, Backend& target, Pending& pending) {
  Graph& g = graph();
  const Step& st = p.schedule.steps[k];
  KernelBuffers b;
  b.ins.reserve(st.inputs.size());
  for (std::size_t e = 0; e < st.inputs.size(); ++e) {
    b.ins.push_back(st.kernel.inputs[e].index_only ? nullptr : input_storage(st.inputs[e], target, b.staged));
  }
  for (std::size_t j = 0; j < st.outputs.size(); ++j) {
    const Node& n = g[st.outputs[j]];
    const std::size_t bytes = static_cast<std::size_t>(n.numel()) * itemsize(n.dtype);
    std::shared_ptr<Storage> s;
    if (j < st.into.size() && st.into[j] != kNoNode) s = pending_buffer(pending, st.into[j], target);
    if (!s && target.device().kind == Device::Kind::cpu) {
      if (DestinationHook hook = g_destination.load(std::memory_order_acquire)) s = hook(st.outputs[j], bytes);
    }
    for (const Donation& d : p.buffers.donations) {
      if (!s && d.step == static_cast<int>(k) && d.output == static_cast<int>(j) &&
          donation_applies(d.from, bytes, target.device())) {
        // Taken, not shared: the donor node keeps no reference (it has no
        // reader after this step), so the output is the buffer's only
        // holder and a later step may take it over in turn, as a replay does.
        s = std::move(g[d.from].storage);
        ++detail::stats_mut().inplace_reuses;
      }
    }
    if (!s) s = target.allocate(bytes);
    b.out_ptrs.push_back(s.get());
    b.outs.push_back(std::move(s));
  }
  return b;
}

void set_kernel_results(const opt::Plan& p, const Step& st, KernelBuffers& b) {
  Graph& g = graph();
  ++detail::stats_mut().kernels_launched;
  for (std::size_t j = 0; j < st.outputs.size(); ++j) {
    const NodeId id = st.outputs[j];
    if (j < st.into.size() && st.into[j] != kNoNode) {  // a view of the concatenate's buffer
      const Layout& l = p.schedule.layouts.at(id);
      g.set_result(id, std::move(b.outs[j]), l.strides, l.offset);
      continue;
    }
    g.set_result(id, std::move(b.outs[j]), contiguous_strides(g[id].shape), 0);
  }
}

void run_kernel_step(const opt::Plan& p, std::size_t k, Backend& target, Pending& pending) {
  KernelBuffers b = kernel_buffers(p, k, target, pending);
  const Step& st = p.schedule.steps[k];
  // A plan from the plan cache: its kernels are prepared on its first hit
  // (under the graph's lock, which every hit of it holds here), and later
  // hits launch them without looking them up again.
  PreparedCell* cell = st.prepared.get();
  if (cell && (!cell->done || cell->device != target.device())) {
    cell->kernel = target.prepare_kernel(st.kernel);
    cell->device = target.device();
    cell->done = true;
  }
  // Held while the lock is let go (another evaluation may prepare the cell
  // again, for another device).
  const std::shared_ptr<const PreparedKernel> prepared = cell ? cell->kernel : nullptr;
  {
    // Other threads may use the graph while the kernel (and its compile)
    // runs: this evaluation's nodes are claimed, its inputs kept by their
    // readers, its outputs by `b.outs`.
    GraphUnlocked unlocked;
    if (prepared) target.run_prepared(prepared.get(), st.kernel, st.kernel.scalars.data(), b.ins, b.out_ptrs);
    else target.run_kernel(st.kernel, b.ins, b.out_ptrs);
  }
  set_kernel_results(p, st, b);
}

}  // namespace

// Does kernel step e run as the epilogue of library step k
// (Backend::run_library_then)? A matmul's result read by the next step, an
// elementwise kernel over its shape that reads it only at its own index and
// whose other inputs exist already.
bool is_epilogue(const opt::Plan& p, std::size_t k, std::size_t e, const std::function<bool(NodeId)>* ready) {
  const Graph& g = graph();
  const std::vector<Step>& steps = p.schedule.steps;
  if (e >= steps.size()) return false;
  const Step& st = steps[e];
  const NodeId m = steps[k].node;
  if (g[m].op != Op::MatMul || st.kind != Step::Kind::kernel || st.copy || st.kernel.is_reduction() ||
      st.kernel.shape != g[m].shape.dims()) {
    return false;
  }
  std::vector<std::int64_t> own = contiguous_strides(g[m].shape);
  for (std::size_t d = 0; d < own.size(); ++d) {
    if (st.kernel.shape[d] == 1) own[d] = 0;
  }
  bool reads = false;
  for (std::size_t i = 0; i < st.inputs.size(); ++i) {
    const KStream& in = st.kernel.inputs[i];
    if (in.index_only) continue;
    if (st.inputs[i] != m) {
      if (!(ready ? (*ready)(st.inputs[i]) : g[st.inputs[i]].evaluated())) return false;
      continue;
    }
    if (in.dtype != g[m].dtype || in.offset != 0 || in.strides != own) return false;
    reads = true;
  }
  // An output taking over an operand's buffer would overwrite it while
  // later blocks still read it: then the two steps run one after the other.
  for (const Donation& d : p.buffers.donations) {
    if (d.step != static_cast<int>(e)) continue;
    for (NodeId operand : g[m].inputs) {
      if (d.from == operand) return false;
    }
  }
  return reads;
}

namespace {

bool overlaps(const Storage* a, const Storage* b) {
  const char *a0 = static_cast<const char*>(a->data), *b0 = static_cast<const char*>(b->data);
  return a0 < b0 + b->bytes && b0 < a0 + a->bytes;
}

// Library step k and its epilogue, kernel step k + 1, in one backend call.
// `epilogue_reads`: the spans the epilogue reads, for the overlap check
// (taken now: the storages may be gone once the results are set).
void run_library_with_epilogue(const opt::Plan& p, std::size_t k, Backend& target, Pending& pending,
                               std::vector<Span>* epilogue_reads) {
  Graph& g = graph();
  const NodeId id = p.schedule.steps[k].node;
  const Node& n = g[id];
  Staged staged;
  std::vector<const Storage*> ins;
  for (NodeId i : n.inputs) {
    ins.push_back(input_storage(i, target, staged));
    staged.push_back(g[i].storage);  // set_result below may release the input nodes
  }
  std::vector<Layout> layouts;
  for (NodeId i : n.inputs) layouts.push_back({g[i].strides, g[i].offset});
  const LibraryCall call = library_call(n, layouts);
  // The result exists before it is computed, so the epilogue may take it over.
  g.set_result(id, target.allocate(static_cast<std::size_t>(n.numel()) * itemsize(n.dtype)),
               contiguous_strides(n.shape), 0);
  const Storage* out = g[id].storage.get();
  const Step& st = p.schedule.steps[k + 1];
  if (epilogue_reads) *epilogue_reads = {};
  KernelBuffers b = kernel_buffers(p, k + 1, target, pending);
  if (epilogue_reads) {
    for (const Storage* s : b.ins) {
      if (s) epilogue_reads->push_back({static_cast<const char*>(s->data), static_cast<const char*>(s->data) + s->bytes});
    }
  }
  // An operand the epilogue writes (a caller's destination buffer that
  // overlaps it) would change under the blocks still to come: then one
  // after the other.
  bool apart = true;
  for (const Storage* o : b.out_ptrs) {
    for (const Storage* i : ins) apart &= !overlaps(o, i);
  }
  {
    GraphUnlocked unlocked;  // as for kernels
    if (apart) {
      target.run_library_then(call, ins, *out, st.kernel, b.ins, b.out_ptrs);
    } else {
      target.run_library(call, ins, *out);
      target.run_kernel(st.kernel, b.ins, b.out_ptrs);
    }
  }
  ++detail::stats_mut().kernels_launched;
  set_kernel_results(p, st, b);
}

void run_library_step(const opt::Plan& p, std::size_t k, Backend& target, Pending& pending) {
  Graph& g = graph();
  const NodeId id = p.schedule.steps[k].node;
  const Node& n = g[id];
  if (!is_library_op(n.op)) internal_error(std::string("exec: a library step of ") + op_name(n.op));
  Staged staged;
  std::vector<const Storage*> ins;
  for (NodeId i : n.inputs) ins.push_back(input_storage(i, target, staged));
  const std::size_t bytes = static_cast<std::size_t>(n.numel()) * itemsize(n.dtype);
  std::shared_ptr<Storage> out;
  // A concatenate some of whose pieces their kernels wrote already.
  if (auto it = pending.find(id); it != pending.end()) {
    out = std::move(it->second);
    pending.erase(it);
  }
  // A step that overwrites its first input (scatter) may take its buffer:
  // the backend sees the same storage as input 0 and output, and updates it.
  for (const Donation& d : p.buffers.donations) {
    if (!out && d.step == static_cast<int>(k) && donation_applies(d.from, bytes, target.device()) &&
        ins[0] == g[d.from].storage.get()) {
      out = g[d.from].storage;
      ++detail::stats_mut().inplace_reuses;
    }
  }
  if (!out) out = target.allocate(bytes);
  std::vector<Layout> layouts;
  for (NodeId i : n.inputs) layouts.push_back({g[i].strides, g[i].offset});
  LibraryCall call = library_call(n, layouts);
  bool work = true;
  if (n.op == Op::Concat) {
    work = false;
    for (std::size_t i = 0; i < call.inputs.size(); ++i) {
      call.inputs[i].in_place = ins[i] == out.get();
      work |= !call.inputs[i].in_place;
    }
  }
  {
    GraphUnlocked unlocked;  // as for kernels
    target.run_library(call, ins, *out);
  }
  if (work) ++detail::stats_mut().kernels_launched;
  g.set_result(id, std::move(out), contiguous_strides(n.shape), 0);
}

void run_view_step(NodeId id) {
  Graph& g = graph();
  const Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  auto l = view_layout(n, src, {src.strides, src.offset});
  // fuse plans a copy kernel for every view no strides can express, from the
  // layouts the steps make: a view step that is no view is a planning bug.
  if (!l) internal_error("exec: a view step whose input's layout is no view of it");
  std::shared_ptr<Storage> storage = src.storage;
  g.set_result(id, std::move(storage), std::move(l->strides), l->offset);
}

// The layouts the kernels were lowered against must be what the steps made.
void check_layout(const Schedule& s, NodeId id) {
  auto it = s.layouts.find(id);
  const Node& n = graph()[id];
  if (it == s.layouts.end() || !n.evaluated()) return;
  for (int d = 0; d < n.shape.ndim(); ++d) {
    auto du = static_cast<std::size_t>(d);
    if (n.shape[d] != 1 && n.strides[du] != it->second.strides[du]) {
      internal_error("exec: a step produced another layout than planned");
    }
  }
}

// Verification at run time: the buffers of values the plan has live at the
// same step never overlap in memory (a donated output continues its donor),
// and no kernel output overlaps an input it does not take over.
class OverlapCheck {
 public:
  explicit OverlapCheck(const opt::Plan& p) : p_(p) {
    for (std::size_t i = 0; i < p.buffers.values.size(); ++i) index_[p.buffers.values[i].node] = i;
  }

  // The storage spans a kernel step reads (taken before it runs: a donated
  // input is released by the step).
  static std::vector<Span> input_spans(const Step& st) {
    std::vector<Span> out;
    if (st.kind != Step::Kind::kernel) return out;
    for (NodeId in : st.inputs) {
      if (in == kNoNode || !graph()[in].evaluated()) continue;
      out.push_back(span_of(*graph()[in].storage));
    }
    return out;
  }

  void after_step(std::size_t k, const std::vector<Span>& input_spans) {
    const Step& st = p_.schedule.steps[k];
    const int ki = static_cast<int>(k);
    const std::vector<NodeId> made = st.kind == Step::Kind::kernel ? st.outputs : std::vector<NodeId>{st.node};
    for (NodeId id : made) {
      const Node& n = graph()[id];
      if (index_.count(id) && n.evaluated()) span_[id] = span_of(*n.storage);
    }
    std::vector<const BufferValue*> live;
    for (const BufferValue& v : p_.buffers.values) {
      if (v.def <= ki && ki <= v.last && span_.count(v.node)) live.push_back(&v);
    }
    for (std::size_t i = 0; i < live.size(); ++i) {
      for (std::size_t j = i + 1; j < live.size(); ++j) {
        const BufferValue &a = *live[i], &b = *live[j];
        if (a.donor == b.node || b.donor == a.node) continue;
        if (overlap(span_[a.node], span_[b.node])) {
          internal_error("exec: nodes " + std::to_string(a.node) + " and " + std::to_string(b.node) +
                         " are live at step " + std::to_string(k) + " in overlapping memory");
        }
      }
    }
    if (st.kind != Step::Kind::kernel) return;
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      auto it = span_.find(st.outputs[j]);
      if (it == span_.end()) continue;
      for (const Span& in : input_spans) {
        if (overlap(it->second, in) && !(it->second.first == in.first && donated(k, j))) {
          internal_error("exec: kernel output " + std::to_string(j) + " of step " + std::to_string(k) +
                         " overlaps an input it does not take over");
        }
      }
    }
  }

 private:
  static Span span_of(const Storage& s) {
    const char* lo = static_cast<const char*>(s.data);
    return {lo, lo + s.bytes};
  }
  static bool overlap(const Span& a, const Span& b) { return a.first < b.second && b.first < a.second; }
  bool donated(std::size_t k, std::size_t j) const {
    for (const Donation& d : p_.buffers.donations) {
      if (d.step == static_cast<int>(k) && d.output == static_cast<int>(j)) return true;
    }
    return false;
  }
  const opt::Plan& p_;
  std::unordered_map<NodeId, std::size_t> index_;
  std::unordered_map<NodeId, Span> span_;
};

}  // namespace

LibraryCall library_call(const Node& n, const std::vector<Layout>& inputs) {
  const Graph& g = graph();
  LibraryCall c;
  c.op = n.op;
  c.dtype = n.dtype;
  c.shape = n.shape.dims();
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const Node& in = g[n.inputs[k]];
    c.inputs.push_back({in.dtype, in.shape.dims(), inputs[k].strides, inputs[k].offset});
  }
  c.axis = is_reduction(n.op) ? n.ints[0] : n.op == Op::MatMul ? 0 : n.i0;  // concat, sort, scatter: i0
  c.k = n.i1;  // topk
  return c;
}

Device plan_device(const opt::Plan& p) {
  const Graph& g = graph();
  std::optional<Device> found;
  auto see = [&](NodeId id) {
    if (id == kNoNode || !g[id].evaluated()) return;
    const Device d = g[id].storage->device;
    if (d.kind == Device::Kind::cpu) return;
    if (found && *found != d) {
      runtime_error("aj: one evaluation reads arrays on " + found->str() + " and " + d.str() +
                    "; move them to one device with .to(...)");
    }
    found = d;
  };
  for (const Step& st : p.schedule.steps) {
    if (st.kind == Step::Kind::kernel) {
      for (NodeId in : st.inputs) see(in);
    } else {
      for (NodeId in : g[st.node].inputs) see(in);
    }
  }
  if (t_scope && t_scope->kind != Device::Kind::cpu) {
    if (found && *found != *t_scope) {
      runtime_error("aj: an evaluation under DeviceScope(" + t_scope->str() + ") reads arrays on " + found->str());
    }
    return *t_scope;
  }
  return found.value_or(Device::cpu());
}

void execute(const opt::Plan& p, Backend& target) {
  const Schedule& s = p.schedule;
  Pending pending;
  std::optional<OverlapCheck> check;
  if (verify_enabled()) check.emplace(p);
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    std::vector<Span> reads;
    if (check) reads = OverlapCheck::input_spans(st);
    if (st.kind == Step::Kind::library && !graph()[st.node].evaluated() && is_epilogue(p, k, k + 1, nullptr)) {
      std::vector<Span> epilogue_reads;
      run_library_with_epilogue(p, k, target, pending, &epilogue_reads);
      check_layout(s, st.node);
      if (check) check->after_step(k, reads);
      ++k;
      for (NodeId o : s.steps[k].outputs) check_layout(s, o);
      if (check) check->after_step(k, epilogue_reads);
      continue;
    }
    switch (st.kind) {
      case Step::Kind::kernel:
        run_kernel_step(p, k, target, pending);
        for (NodeId o : st.outputs) check_layout(s, o);
        break;
      case Step::Kind::view:
        run_view_step(st.node);
        check_layout(s, st.node);
        break;
      case Step::Kind::library:
        if (!graph()[st.node].evaluated()) run_library_step(p, k, target, pending);
        check_layout(s, st.node);
        break;
    }
    if (check) check->after_step(k, reads);
  }
}

void set_destination_hook(DestinationHook hook) { g_destination.store(hook, std::memory_order_release); }

std::optional<Device> scope_device() { return t_scope; }
void set_scope_device(std::optional<Device> d) { t_scope = d; }

}  // namespace aj::exec

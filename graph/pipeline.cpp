// The optimizing pipeline, as a table of contents: simplify, (plan cache,)
// fuse, assign buffers, then run the steps: kernels compiled by the host JIT
// (the kernel interpreter under AJ_JIT=0) or on a GPU through the CUDA bridge,
// view steps as strides, reference steps through the reference interpreter.
#include "graph/pipeline.hpp"

#include <chrono>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <unordered_map>

#include "arrayjit/jit.hpp"
#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_memory.hpp"
#include "backends/cuda/cuda_bridge.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "backends/reference/interpreter.hpp"
#include "core/eval_into.hpp"
#include "core/stats_internal.hpp"
#include "graph/dump.hpp"
#include "graph/explain.hpp"
#include "graph/passes/assign_buffers.hpp"
#include "graph/passes/fuse.hpp"
#include "graph/passes/simplify.hpp"
#include "graph/plan_cache.hpp"
#include "graph/verify.hpp"

namespace aj::opt {

namespace {

std::set<std::string>& disabled_passes() {
  static std::set<std::string> s = [] {
    std::set<std::string> d;
    if (const char* env = std::getenv("AJ_DISABLE_PASSES")) {
      std::stringstream ss(env);
      for (std::string name; std::getline(ss, name, ',');) d.insert(name);
    }
    return d;
  }();
  return s;
}
bool pass_enabled(const char* name) { return !disabled_passes().count(name); }

// Whether any log channel is on, read once per evaluation: asking each
// channel reads the environment every time, which a small call notices.
bool g_logging = true;
bool logging(const char* channel) { return g_logging && detail::log_enabled(channel); }

struct Plan {
  Schedule schedule;
  BufferPlan buffers;
  Device device = Device::cpu();  // where kernel steps run (cuda::schedule_device)
};

// Runs one pass: `body(enabled)` does the work (a switched-off pass still
// gets called, to produce the trivial result the next pass needs) and returns
// a one-line summary. Times it; logs it on channel "passes", noting
// "(unchanged)" when the graph text is the same after it; dumps the graph after
// it on channel "graph"; verifies the graph after it when verification is on.
template <class Body>
void run_pass(const char* name, const std::vector<NodeId>& roots, Body&& body) {
  const bool on = pass_enabled(name);
  const bool show = logging("passes"), show_graph = logging("graph");
  std::string before;
  if (show || show_graph) before = dump_nodes(roots);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = show ? Clock::now() : Clock::time_point{};  // timed only when shown
  const std::string summary = body(on);
  const double ms = show ? std::chrono::duration<double, std::milli>(Clock::now() - t0).count() : 0.0;
  if (verify_enabled()) verify(graph(), name);
  if (show || show_graph) {
    const std::string after = dump_nodes(roots);
    const bool same = after == before;
    char time[32];
    std::snprintf(time, sizeof time, "%.3f ms", ms);
    if (show) {
      detail::log("passes", std::string(name) + (on ? "" : " (switched off)") + ": " + time +
                                (summary.empty() ? "" : ", " + summary) + (same ? " (unchanged)" : ""));
    }
    if (show_graph) {
      detail::log("graph", std::string("after ") + name + (same ? " (unchanged)\n" : ":\n" + after));
    }
  }
}

// A plan for the graph simplify left, from the plan cache (graph/plan_cache.hpp)
// when an earlier evaluation had the same structure. With verification on, a
// hit is checked against planning from scratch.
bool cached_plan(const std::vector<NodeId>& roots, const plan_cache::Key** key, Plan* p) {
  if (!plan_cache::enabled() || !disabled_passes().empty()) return false;
  *key = &plan_cache::make_key(roots);
  if (!plan_cache::lookup(**key, &p->schedule, &p->buffers)) return false;
  if (logging("passes")) detail::log("passes", "plan cache: hit (fuse, assign_buffers skipped)");
  if (verify_enabled()) {
    verify(p->buffers, p->schedule, "plan_cache");
    Schedule s = fuse(roots);
    BufferPlan b = assign_buffers(s);
    if (!plan_cache::same_plan(p->schedule, p->buffers, s, b)) {
      internal_error("plan_cache: a stored plan differs from planning this graph from scratch");
    }
  }
  return true;
}

// The table of contents: the passes, in order. `use_cache`: look the plan up
// in (and add it to) the plan cache after simplify.
Plan make_plan(const std::vector<NodeId>& roots, bool use_cache = false) {
  Plan p;
  run_pass("simplify", roots, [&](bool on) {
    if (on) simplify(roots);
    return std::string();
  });
  const plan_cache::Key* key = nullptr;
  if (use_cache && cached_plan(roots, &key, &p)) {
    p.device = cuda::schedule_device(p.schedule);  // the key holds each leaf's device
    return p;
  }
  run_pass("fuse", roots, [&](bool on) {  // off: one kernel per op
    p.schedule = fuse(roots, on);
    return std::to_string(p.schedule.steps.size()) + " steps, " +
           std::to_string(p.schedule.kernels()) + " kernels";
  });
  run_pass("assign_buffers", roots, [&](bool on) {  // off: no donation, a fresh buffer per value
    p.buffers = on ? assign_buffers(p.schedule) : BufferPlan{};
    if (verify_enabled()) verify(p.buffers, p.schedule, "assign_buffers");
    if (logging("buffers")) detail::log("buffers", dump(p.buffers, p.schedule));
    return std::to_string(p.buffers.bytes_used) + " bytes in slots, lower bound " +
           std::to_string(p.buffers.lower_bound);
  });
  if (key) plan_cache::insert(*key, p.schedule, p.buffers);
  p.device = cuda::schedule_device(p.schedule);
  return p;
}

void run_kernel_step(const Plan& p, std::size_t k) {
  if (p.device.kind == Device::Kind::cuda) return cuda::run_kernel_step(p.schedule.steps[k], p.buffers, k, p.device);
  Graph& g = graph();
  const Step& st = p.schedule.steps[k];
  std::vector<const void*> ins;
  for (std::size_t e = 0; e < st.inputs.size(); ++e) {
    if (st.kernel.inputs[e].index_only) {
      ins.push_back(nullptr);
      continue;
    }
    const Node& n = g[st.inputs[e]];
    if (!n.evaluated()) internal_error("pipeline: a kernel input was not computed before its kernel");
    ins.push_back(n.storage->data);
  }
  std::vector<std::shared_ptr<Storage>> outs;
  std::vector<void*> ptrs;
  for (std::size_t j = 0; j < st.outputs.size(); ++j) {
    const Node& n = g[st.outputs[j]];
    const std::size_t bytes = static_cast<std::size_t>(n.numel()) * itemsize(n.dtype);
    std::shared_ptr<Storage> s = detail::take_destination(st.outputs[j], bytes);  // Array::eval_into
    for (const Donation& d : p.buffers.donations) {
      if (!s && d.step == static_cast<int>(k) && d.output == static_cast<int>(j) &&
          donation_applies(d.from, bytes)) {
        s = g[d.from].storage;
        ++detail::stats_mut().inplace_reuses;
      }
    }
    if (!s) s = cpu::host_alloc(bytes);
    ptrs.push_back(s->data);
    outs.push_back(std::move(s));
  }
  // Compiled code by default; the kernel interpreter when the JIT is off.
  if (jit::enabled()) cpu::run_kernel_compiled(st.kernel, ins, ptrs);
  else cpu::run_kernel(st.kernel, ins, ptrs);
  ++detail::stats_mut().kernels_launched;
  for (std::size_t j = 0; j < st.outputs.size(); ++j) {
    NodeId id = st.outputs[j];
    g.set_result(id, std::move(outs[j]), contiguous_strides(g[id].shape), 0);
  }
}

// Steps that are not Kernel IR (matmul, concatenate, argmax/argmin): the
// reference interpreter on the host, library kernels on a GPU (cuda_bridge.hpp).
void run_reference_step(NodeId id, Device dev) {
  if (dev.kind == Device::Kind::cuda) return cuda::run_library_step(id, dev);
  ref::evaluate_node(id);
}

void run_view_step(NodeId id, Device dev) {
  Graph& g = graph();
  const Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  auto l = view_layout(n, src, {src.strides, src.offset});
  if (!l) {
    // fuse plans a copy kernel for every view its layouts cannot express, so
    // this is only reached if a step made another layout than planned (which
    // verification reports); stay correct: copy as the reference does.
    if (dev.kind == Device::Kind::cuda) return cuda::run_on_host(id, dev);
    return ref::evaluate_node(id);
  }
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
      internal_error("pipeline: a step produced another layout than planned");
    }
  }
}

// Verification at run time: the buffers of values the plan has live at the
// same step never overlap in memory (a donated output continues its donor),
// and no kernel output overlaps an input it does not take over.
class OverlapCheck {
 public:
  explicit OverlapCheck(const Plan& p) : p_(p) {
    for (std::size_t i = 0; i < p.buffers.values.size(); ++i) index_[p.buffers.values[i].node] = i;
  }

  void after_step(std::size_t k, const std::vector<std::pair<const char*, const char*>>& input_spans) {
    const Step& st = p_.schedule.steps[k];
    const int ki = static_cast<int>(k);
    std::vector<NodeId> made = st.kind == Step::Kind::kernel ? st.outputs : std::vector<NodeId>{st.node};
    for (NodeId id : made) {
      const Node& n = graph()[id];
      if (!index_.count(id) || !n.evaluated()) continue;
      const char* lo = static_cast<const char*>(n.storage->data);
      span_[id] = {lo, lo + n.storage->bytes};
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
          internal_error("pipeline: nodes " + std::to_string(a.node) + " and " + std::to_string(b.node) +
                         " are live at step " + std::to_string(k) + " in overlapping memory");
        }
      }
    }
    if (st.kind != Step::Kind::kernel) return;
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      auto it = span_.find(st.outputs[j]);
      if (it == span_.end()) continue;
      for (const auto& in : input_spans) {
        if (overlap(it->second, in) && !(it->second.first == in.first && donated(k, j))) {
          internal_error("pipeline: kernel output " + std::to_string(j) + " of step " + std::to_string(k) +
                         " overlaps an input it does not take over");
        }
      }
    }
  }

 private:
  using Span = std::pair<const char*, const char*>;
  static bool overlap(const Span& a, const Span& b) { return a.first < b.second && b.first < a.second; }
  bool donated(std::size_t k, std::size_t j) const {
    for (const Donation& d : p_.buffers.donations) {
      if (d.step == static_cast<int>(k) && d.output == static_cast<int>(j)) return true;
    }
    return false;
  }
  const Plan& p_;
  std::unordered_map<NodeId, std::size_t> index_;
  std::unordered_map<NodeId, Span> span_;
};

// The storage spans a kernel step reads (taken before it runs: a donated
// input is released by the step).
std::vector<std::pair<const char*, const char*>> input_spans(const Step& st) {
  std::vector<std::pair<const char*, const char*>> out;
  if (st.kind != Step::Kind::kernel) return out;
  for (std::size_t e = 0; e < st.inputs.size(); ++e) {
    if (st.inputs[e] == kNoNode) continue;
    const Node& n = graph()[st.inputs[e]];
    if (!n.evaluated()) continue;
    const char* lo = static_cast<const char*>(n.storage->data);
    out.emplace_back(lo, lo + n.storage->bytes);
  }
  return out;
}

void execute(const Plan& p) {
  const Schedule& s = p.schedule;
  std::optional<OverlapCheck> check;
  if (verify_enabled()) check.emplace(p);
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    std::vector<std::pair<const char*, const char*>> reads;
    if (check) reads = input_spans(st);
    switch (st.kind) {
      case Step::Kind::kernel:
        run_kernel_step(p, k);
        for (NodeId o : st.outputs) check_layout(s, o);
        break;
      case Step::Kind::view:
        run_view_step(st.node, p.device);
        check_layout(s, st.node);
        break;
      case Step::Kind::reference:
        if (!graph()[st.node].evaluated()) run_reference_step(st.node, p.device);
        check_layout(s, st.node);
        break;
    }
    if (check) check->after_step(k, reads);
  }
}

}  // namespace

void evaluate(const std::vector<NodeId>& roots) {
  g_logging = detail::log_any();
  Plan p = make_plan(roots, /*use_cache=*/true);
  if (logging("plan")) detail::log("plan", describe_plan(p.schedule, p.buffers));
  execute(p);
}

std::string plan_text(const std::vector<NodeId>& roots) {
  g_logging = detail::log_any();
  Plan p = make_plan(roots);
  return describe_plan(p.schedule, p.buffers);
}

std::vector<Kernel> plan_kernels(const std::vector<NodeId>& roots) {
  Plan p = make_plan(roots);
  std::vector<Kernel> ks;
  for (const Step& st : p.schedule.steps) {
    if (st.kind == Step::Kind::kernel) ks.push_back(st.kernel);
  }
  return ks;
}

void set_pass_enabled(const std::string& name, bool enabled) {
  if (enabled) disabled_passes().erase(name);
  else disabled_passes().insert(name);
  plan_cache::clear();  // plans made under other switches are not reused
}

}  // namespace aj::opt

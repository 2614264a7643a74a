// The optimizing pipeline, as a table of contents: simplify, fuse, assign
// buffers, then run the steps (kernels through the host kernel interpreter
// until the JIT lands, view steps as strides, reference steps through the
// reference interpreter).
#include "graph/pipeline.hpp"

#include <cstdlib>
#include <set>
#include <sstream>

#include "arrayjit/jit.hpp"
#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_memory.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "backends/reference/interpreter.hpp"
#include "core/stats_internal.hpp"
#include "graph/explain.hpp"
#include "graph/passes/assign_buffers.hpp"
#include "graph/passes/fuse.hpp"
#include "graph/passes/simplify.hpp"

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

struct Plan {
  Schedule schedule;
  BufferPlan buffers;
};

Plan make_plan(const std::vector<NodeId>& roots) {
  if (pass_enabled("simplify")) simplify(roots);
  Plan p;
  p.schedule = fuse(roots);
  p.buffers = assign_buffers(p.schedule);
  return p;
}

void run_kernel_step(const Plan& p, std::size_t k) {
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
    std::shared_ptr<Storage> s;
    for (const Donation& d : p.buffers.donations) {
      if (d.step == static_cast<int>(k) && d.output == static_cast<int>(j) &&
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

void run_view_step(NodeId id) {
  Graph& g = graph();
  const Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  auto l = view_layout(n, src, {src.strides, src.offset});
  if (!l) return ref::evaluate_node(id);  // a copy, as the reference makes it
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

void execute(const Plan& p) {
  const Schedule& s = p.schedule;
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    switch (st.kind) {
      case Step::Kind::kernel:
        run_kernel_step(p, k);
        for (NodeId o : st.outputs) check_layout(s, o);
        break;
      case Step::Kind::view:
        run_view_step(st.node);
        check_layout(s, st.node);
        break;
      case Step::Kind::reference:
        if (!graph()[st.node].evaluated()) ref::evaluate_node(st.node);
        check_layout(s, st.node);
        break;
    }
  }
}

}  // namespace

void evaluate(const std::vector<NodeId>& roots) {
  Plan p = make_plan(roots);
  if (detail::log_enabled("plan")) detail::log("plan", describe_plan(p.schedule, p.buffers));
  execute(p);
}

std::string plan_text(const std::vector<NodeId>& roots) {
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
}

}  // namespace aj::opt

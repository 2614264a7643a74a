#include "core/api/evaluate.hpp"

#include "backends/cpu/host_backend.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "backends/reference/interpreter.hpp"
#include "base/log.hpp"
#include "base/profile.hpp"
#include "core/api/annotations.hpp"
#include "core/api/device.hpp"
#include "core/api/executor.hpp"
#include "exec/execute.hpp"
#include "graph/host_call.hpp"
#include "opt/explain.hpp"
#include "opt/program.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

namespace aj::detail {

exec::Backend& backend_for(Device d) {
  switch (d.kind) {
    case Device::Kind::cpu: return cpu::host_backend();
    case Device::Kind::cuda: return cuda::cuda_backend(d.index);
  }
  internal_error("detail::backend_for: no backend for " + d.str());
}

bool any_device_storage() { return cuda::any_device_alloc() || exec::scope_device().has_value(); }

std::vector<std::string> write_dot_files(const std::string& text, const std::string& path) {
  {
    std::ofstream f(path);
    if (!(f << text)) return {};
  }
  std::vector<std::string> files{path};
  static const bool have_dot = std::system("command -v dot >/dev/null 2>&1") == 0;
  if (!have_dot) return files;
  const std::string stem = path.size() > 4 && path.compare(path.size() - 4, 4, ".dot") == 0
                               ? path.substr(0, path.size() - 4) : path;
  for (const char* fmt : {"svg", "png"}) {
    const std::string out = stem + "." + fmt;
    const std::string cmd = std::string("dot -T") + fmt + " '" + path + "' -o '" + out + "' 2>/dev/null";
    if (std::system(cmd.c_str()) == 0) files.push_back(out);
  }
  return files;
}

namespace {

// The nodes a plan computes belong to its evaluation until it ends (see
// graph/graph.hpp): another thread evaluating an array that needs one of them
// waits for it instead of computing it twice.
class Claim {
 public:
  Claim(Graph& g, const std::vector<NodeId>& ids) : g_(g), ids_(ids), token_(g.claim(ids_)) {}
  ~Claim() { g_.unclaim(ids_, token_); }  // the lock is held again here, also when unwinding
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;

 private:
  Graph& g_;
  const std::vector<NodeId>& ids_;
  std::uint32_t token_;
};

// Drops roots that are evaluated, then waits while another evaluation has
// claimed a node the rest need; false when nothing is left to do.
bool wait_for_others(Graph& g, std::vector<NodeId>& roots) {
  for (;;) {
    std::erase_if(roots, [&](NodeId id) { return g[id].evaluated(); });
    if (roots.empty()) return false;
    if (!g.any_claims()) return true;
    bool claimed = false;
    for (NodeId id : g.unevaluated_order(roots)) claimed |= g[id].claim != 0;
    if (!claimed) return true;
    g.wait_for_claims();
  }
}

// This thread's plans, one per evaluation in progress (an evaluation that
// starts another, importing an array of another graph, takes the next):
// kept between evaluations, so a plan-cache hit copies into their memory.
class PlanSlot {
 public:
  PlanSlot() {
    if (t_depth == t_plans.size()) t_plans.push_back(std::make_unique<opt::Plan>());
    plan_ = t_plans[t_depth++].get();
  }
  ~PlanSlot() { --t_depth; }
  PlanSlot(const PlanSlot&) = delete;
  PlanSlot& operator=(const PlanSlot&) = delete;
  opt::Plan& plan() { return *plan_; }

 private:
  static thread_local std::vector<std::unique_ptr<opt::Plan>> t_plans;
  static thread_local std::size_t t_depth;
  opt::Plan* plan_;
};
thread_local std::vector<std::unique_ptr<opt::Plan>> PlanSlot::t_plans;
thread_local std::size_t PlanSlot::t_depth = 0;

}  // namespace

namespace {
constinit thread_local EvalObserver* t_observer = nullptr;
}  // namespace

void set_eval_observer(EvalObserver* observer) { t_observer = observer; }

// The caller holds the lock of the current graph (a GraphScope).
void evaluate(const std::vector<NodeId>& roots_in) {
  Graph& g = graph();
  if (!holds_lock(g)) internal_error("detail::evaluate without the graph lock");
  // The views the roots reach become leaves: their custom rules are spent,
  // and the arrays those hold must not keep a buffer from being reused.
  trace::drop_annotations(roots_in);
  // However it ends, the host callbacks of nodes it evaluated (or that were
  // freed) are let go (graph/host_call.hpp).
  struct SweepHostCalls {
    ~SweepHostCalls() { sweep_host_calls(); }
  } sweep_host_calls_after;
  std::vector<NodeId> roots = roots_in;
  if (!wait_for_others(g, roots)) return;
  if (executor() == Executor::reference) {
    for (NodeId id : roots) {  // the oracle reads host memory only
      if (any_device_storage() && !device_of(id).value_or(Device::cpu()).is_host()) {
        runtime_error("aj: the reference executor runs on the host only; move arrays with .to(Device::cpu())");
      }
    }
    return ref::evaluate(roots);  // runs with the lock held throughout
  }
  // The profiler's record of the whole evaluation (planning and steps).
  struct ProfileEval {
    std::int64_t t0 = detail::prof::on() ? detail::prof::now_ns() : 0;
    ~ProfileEval() {
      if (!t0) return;
      detail::prof::Event e;
      e.kind = detail::prof::Kind::eval;
      e.start_ns = t0;
      e.dur_ns = detail::prof::now_ns() - t0;
      e.set_name("eval");
      detail::prof::record(e);
    }
  } profiled;
  const char* dot_dir = std::getenv("AJ_DUMP_DOT");
  const bool dump_dot = dot_dir && *dot_dir;
  PlanSlot slot;
  // The DOT file draws every field; aj::compile makes a program of its own.
  opt::plan_into(roots, &slot.plan(), true, /*whole=*/dump_dot || t_observer != nullptr,
                 /*for_compile=*/t_observer != nullptr);
  const opt::Plan& p = slot.plan();
  const Claim claim(g, p.schedule.order);
  // The nodes no step writes (computed inside kernels) go as soon as their
  // readers are done, and with them the values they read: the run's memory
  // is the buffer plan's, whose liveness assumes so.
  if (p.program) g.set_inline_only(p.schedule.order, p.value_nodes);
  if (log_any()) {
    if (log_enabled("plan")) log("plan", describe_plan(p.schedule, p.buffers));
    if (log_enabled("program") && p.program) log("program", opt::dump(*p.program));
  }
  if (dump_dot) {
    static std::atomic<int> n{0};
    write_dot_files(plan_dot(p.schedule, p.buffers), std::string(dot_dir) + "/plan-" + std::to_string(n++) + ".dot");
  }
  const Device device = exec::plan_device(p);
  if (EvalObserver* o = t_observer) {
    t_observer = nullptr;  // the results' evaluation only
    o->planned(p, device);
  }
  exec::execute(p, backend_for(device));
}

}  // namespace aj::detail

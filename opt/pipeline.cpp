// The optimizing pipeline, as a table of contents: simplify, (plan cache,)
// fuse, concat slices, assign buffers. The plan it returns is run by exec/execute.hpp.
#include "opt/pipeline.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "base/log.hpp"
#include "base/profile.hpp"
#include "base/stats.hpp"
#include "graph/dump.hpp"
#include "opt/explain.hpp"
#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/concat_slices.hpp"
#include "opt/passes/fuse.hpp"
#include "opt/passes/simplify.hpp"
#include "opt/plan_cache.hpp"
#include "opt/verify.hpp"

namespace aj::opt {

namespace {

// Switched by tests and AJ_DISABLE_PASSES; not to be changed while other
// threads evaluate.
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
constinit thread_local bool g_logging = true;
bool logging(const char* channel) { return g_logging && detail::log_enabled(channel); }

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
    // Appended, not `+` chained: GCC 12 reports the chain's inlined copies
    // as overflows (bug 105651) when <string> comes from the precompiled header.
    if (show) {
      std::string line = name;
      line += on ? ": " : " (switched off): ";
      line += time;
      if (!summary.empty()) line += ", " + summary;
      if (same) line += " (unchanged)";
      detail::log("passes", line);
    }
    if (show_graph) {
      std::string text = "after ";
      text += name;
      if (same) {
        text += " (unchanged)\n";
      } else {
        text += ":\n";
        text += after;
      }
      detail::log("graph", text);
    }
  }
}

// The same steps (kinds, nodes, outputs) and the same stored values, in the
// same order: the numbers aside, the same plan.
bool same_partition(const Schedule& a, const Schedule& b) {
  if (a.steps.size() != b.steps.size() || a.materialized.size() != b.materialized.size()) return false;
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    const Step &x = a.steps[k], &y = b.steps[k];
    if (x.kind != y.kind || x.node != y.node || x.outputs != y.outputs) return false;
  }
  for (std::size_t i = 0; i < a.materialized.size(); ++i) {
    if (a.materialized[i].node != b.materialized[i].node) return false;
  }
  return true;
}

// A plan for the graph simplify left, from the plan cache (opt/plan_cache.hpp)
// when an earlier evaluation had the same structure. With verification on, a
// hit is checked against planning from scratch.
bool cached_plan(const std::vector<NodeId>& roots, const std::vector<NodeId>& order, const plan_cache::Key** key,
                 Plan* p, bool whole) {
  if (!plan_cache::enabled() || !disabled_passes().empty()) return false;
  using Clock = std::chrono::steady_clock;
  const bool show = logging("passes");
  const Clock::time_point t0 = show ? Clock::now() : Clock::time_point{};
  *key = &plan_cache::make_key(roots, order);
  if (show) {
    char text[64];
    std::snprintf(text, sizeof text, "plan cache key: %.3f ms, %zu words",
                  std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), (*key)->words.size());
    detail::log("passes", text);
  }
  // Logged or checked, the plan is translated whole; else only what runs it.
  if (!plan_cache::lookup(**key, p, whole || g_logging || verify_enabled())) return false;
  if (logging("passes")) detail::log("passes", "plan cache: hit (fuse, assign_buffers skipped)");
  if (verify_enabled()) {
    verify(p->buffers, p->schedule, "plan_cache");
    Schedule s = fuse(roots);
    place_concat_slices(s);
    BufferPlan b = assign_buffers(s);
    std::string differs = plan_cache::plan_difference(p->schedule, p->buffers, s, b);
    if (differs.empty() && decide_epilogues(s, b) != p->epilogues) differs = "epilogues";
    // A plan kept from other numbers holds fuse's partition of those: where
    // fuse's greedy boundaries fall otherwise at these (a stencil chain
    // whose reads fit the work rule at small extents only), the plans differ
    // in their partition, and the kept one was checked against every rule
    // fuse keeps (materialize's guards, verify above). With the same
    // partition, every number must be the same.
    if (!differs.empty() && p->renumbered && !same_partition(p->schedule, s)) {
      if (logging("passes")) detail::log("passes", "plan cache: the kept partition differs from fuse's at these numbers (" + differs + ")");
      differs.clear();
    }
    if (!differs.empty()) {
      internal_error("plan_cache: a stored plan differs from planning this graph from scratch (" + differs + ")");
    }
  }
  return true;
}

// aj::stats(): what this evaluation stores beyond its roots.
void count_stored(const Schedule& s) {
  auto& st = detail::stats_mut();
  for (const Materialization& m : s.materialized) {
    if (m.why == Materialization::Why::held) ++st.held_values_stored;
    else ++st.values_materialized;
  }
}

}  // namespace

// The table of contents: the passes, in order. `use_cache`: look the plan up
// in (and add it to) the plan cache after simplify.
Plan plan(const std::vector<NodeId>& roots, bool use_cache, bool whole) {
  Plan p;
  plan_into(roots, &p, use_cache, whole);
  return p;
}

namespace {

// The profiler's record of one planning (arrayjit/profile.hpp), made when it
// ends however it ends; `hit`: the plan came from the plan cache.
struct ProfilePlan {
  std::int64_t t0 = detail::prof::on() ? detail::prof::now_ns() : 0;
  bool hit = false;
  std::size_t steps = 0;
  ~ProfilePlan() {
    if (!t0) return;
    detail::prof::Event e;
    e.kind = detail::prof::Kind::plan;
    e.start_ns = t0;
    e.dur_ns = detail::prof::now_ns() - t0;
    e.flag = hit;
    e.step = static_cast<std::int32_t>(steps);
    e.set_name(hit ? "plan (cache hit)" : "plan");
    detail::prof::record(e);
  }
};

}  // namespace

void plan_into(const std::vector<NodeId>& roots, Plan* into, bool use_cache, bool whole, bool for_compile) {
  ProfilePlan profiled;
  g_logging = detail::log_any();
  Plan& p = *into;
  std::vector<NodeId> order;  // simplify's walk, for the key when it changed nothing
  run_pass("simplify", roots, [&](bool on) {
    if (on) simplify(roots, &order, /*merge_concat_pieces=*/!for_compile);
    return std::string();
  });
  const plan_cache::Key* key = nullptr;
  if (use_cache && cached_plan(roots, order, &key, &p, whole)) {
    ++detail::stats_mut().plan_cache_hits;
    count_stored(p.schedule);
    profiled.hit = true;
    profiled.steps = p.program ? p.program->steps.size() : 0;
    return;
  }
  ++detail::stats_mut().plans_built;
  p.renumbered = false;
  run_pass("fuse", roots, [&](bool on) {  // off: one kernel per op
    p.schedule = fuse(roots, on);
    return std::to_string(p.schedule.steps.size()) + " steps, " +
           std::to_string(p.schedule.kernels()) + " kernels";
  });
  run_pass("concat_slices", roots, [&](bool on) {  // off: concatenate copies every piece
    return on ? std::to_string(place_concat_slices(p.schedule)) + " pieces written in place" : std::string();
  });
  run_pass("assign_buffers", roots, [&](bool on) {  // off: no donation, a fresh buffer per value
    p.buffers = on ? assign_buffers(p.schedule) : BufferPlan{};
    if (verify_enabled()) verify(p.buffers, p.schedule, "assign_buffers");
    if (logging("buffers")) detail::log("buffers", dump(p.buffers, p.schedule));
    return std::to_string(p.buffers.bytes_used) + " bytes in slots, lower bound " +
           std::to_string(p.buffers.lower_bound);
  });
  p.epilogues = decide_epilogues(p.schedule, p.buffers);
  // The program: every evaluated array it reads is bound from its node.
  std::shared_ptr<Program> program = make_program(p, {}, {}, Device::cpu(), false, &p.value_nodes);
  if (!program) internal_error("plan: a plan reads a node no step makes");
  p.program = std::move(program);
  p.scalars.clear();
  // Kept (and run) with its kernels prepared on their first run.
  if (key) plan_cache::insert(*key, &p);
  if (use_cache) count_stored(p.schedule);  // an evaluation (explain passes false)
  profiled.steps = p.program ? p.program->steps.size() : 0;
}

std::string plan_text(const std::vector<NodeId>& roots) {
  Plan p = plan(roots, false);
  return describe_plan(p.schedule, p.buffers);
}

std::vector<Kernel> plan_kernels(const std::vector<NodeId>& roots) {
  Plan p = plan(roots, false);
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

// The public API of arrayjit/explain.hpp and of aj::dump / aj::to_dot.
#include "arrayjit/explain.hpp"

#include "base/log.hpp"
#include "core/api/evaluate.hpp"
#include "core/api/trace.hpp"
#include "graph/dump.hpp"
#include "opt/explain.hpp"
#include "opt/pipeline.hpp"

namespace aj {

std::string explain(const std::vector<Array>& arrays, Loc loc) {
  trace::Scope scope;  // arrays of other threads are imported (evaluated)
  std::vector<NodeId> roots;
  for (const Array& a : arrays) {
    NodeId id = trace::id(a, "explain", loc);
    if (!graph()[id].evaluated()) roots.push_back(id);
  }
  if (roots.empty()) return "plan: nothing to do (evaluated already)\n";
  return opt::plan_text(roots);
}

std::string explain(const Array& a, Loc loc) { return explain(std::vector<Array>{a}, loc); }

void set_log(const std::string& channels) { detail::set_log_channels(channels); }

std::string dump(const std::vector<Array>& arrays, Loc loc) {
  trace::Scope scope;  // arrays of other threads are imported (evaluated)
  std::vector<NodeId> roots;
  for (auto& a : arrays) roots.push_back(trace::id(a, "dump", loc));
  return dump_nodes(roots);
}

std::string to_dot(const Array& a, Loc loc) {
  trace::Scope scope;
  return dot_nodes({trace::id(a, "to_dot", loc)});
}

std::string to_dot(const std::vector<Array>& arrays, DotOptions options, Loc loc) {
  trace::Scope scope;  // arrays of other threads are imported (evaluated)
  std::vector<NodeId> ids, roots;
  for (const Array& a : arrays) {
    ids.push_back(trace::id(a, "to_dot", loc));
    if (!graph()[ids.back()].evaluated()) roots.push_back(ids.back());
  }
  if (!options.plan || roots.empty()) return dot_nodes(ids);
  const opt::Plan p = opt::plan(roots, /*use_cache=*/false);
  return plan_dot(p.schedule, p.buffers);
}

std::vector<std::string> write_dot(const std::vector<Array>& arrays, const std::string& path, DotOptions options,
                                   Loc loc) {
  const std::string text = to_dot(arrays, options, loc);
  std::vector<std::string> files = detail::write_dot_files(text, path);
  if (files.empty()) user_error("write_dot", "cannot write " + path, loc);
  return files;
}

}  // namespace aj

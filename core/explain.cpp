// The public API of arrayjit/explain.hpp and of aj::dump / aj::to_dot.
#include "arrayjit/explain.hpp"

#include "base/log.hpp"
#include "core/trace.hpp"
#include "graph/dump.hpp"
#include "opt/pipeline.hpp"

namespace aj {

std::string explain(const std::vector<Array>& arrays, Loc loc) {
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
  std::vector<NodeId> roots;
  for (auto& a : arrays) roots.push_back(trace::id(a, "dump", loc));
  return dump_nodes(roots);
}

std::string to_dot(const Array& a, Loc loc) { return dot_nodes({trace::id(a, "to_dot", loc)}); }

}  // namespace aj

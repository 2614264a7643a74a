#include "graph/explain.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <unordered_map>

#include "arrayjit/explain.hpp"
#include "core/trace.hpp"
#include "graph/dump.hpp"
#include "graph/pipeline.hpp"

namespace aj {

namespace {

class Names {
 public:
  explicit Names(const std::vector<NodeId>& roots) {
    for (NodeId id : reachable_order(roots)) dense_.emplace(id, dense_.size());
  }
  std::string operator()(NodeId id) const {
    auto it = dense_.find(id);
    return it == dense_.end() ? "%?" : "%" + std::to_string(it->second);
  }

 private:
  std::unordered_map<NodeId, std::size_t> dense_;
};

std::string list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string indent(const std::string& text, const char* pad) {
  std::string out;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) out += pad + line + "\n";
  return out;
}

std::string buffers_text(const BufferPlan& b, const Names& name) {
  std::ostringstream os;
  os << "buffers: " << b.values.size() << " values in " << b.slot_bytes.size() << " slots, "
     << b.bytes_used << " bytes used, lower bound " << b.lower_bound << " bytes\n";
  for (const BufferValue& v : b.values) {
    const Node& n = graph()[v.node];
    os << "  " << name(v.node) << " " << trace::describe(n.dtype, n.shape) << " " << v.bytes
       << " bytes, live [" << v.def << ", "
       << (v.last == BufferPlan::kEnd ? std::string("end") : std::to_string(v.last)) << "]";
    if (v.slot >= 0) os << ", slot " << v.slot;
    if (v.donor != kNoNode) os << ", in place of " << name(v.donor);
    os << "\n";
  }
  return os.str();
}

}  // namespace

std::string dump(const BufferPlan& b, const Schedule& s) { return buffers_text(b, Names(s.roots)); }

std::string describe_plan(const Schedule& s, const BufferPlan& b) {
  Graph& g = graph();
  Names name(s.roots);
  std::ostringstream os;
  os << "plan: " << s.steps.size() << " steps, " << s.kernels() << " kernels\n";
  int kernel_no = 0;
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    os << "step " << k << ": ";
    if (st.kind == Step::Kind::view) {
      os << "view " << name(st.node) << " = " << op_name(g[st.node].op) << " of "
         << name(g[st.node].inputs[0]) << " (no copy)\n";
      continue;
    }
    if (st.kind == Step::Kind::reference) {
      os << "reference " << name(st.node) << " = " << op_name(g[st.node].op) << "\n";
      continue;
    }
    os << "kernel k" << kernel_no++ << " over " << list(st.kernel.shape);
    if (st.kernel.is_reduction()) os << " reducing " << list(st.kernel.reduce_axes);
    if (st.copy) {
      os << "\n  copy: " << name(st.outputs[0]) << " = " << op_name(g[st.outputs[0]].op) << " of strided "
         << name(st.inputs[0]) << ", written contiguous\n";
    } else {
      os << "\n  fused:";
      for (NodeId c : st.computed) os << " " << name(c) << ":" << op_name(g[c].op);
      os << "\n";
    }
    for (std::size_t e = 0; e < st.inputs.size(); ++e) {
      if (st.kernel.inputs[e].index_only) continue;
      os << "  in" << e << " = " << name(st.inputs[e]) << "\n";
    }
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      os << "  out" << j << " = " << name(st.outputs[j]);
      for (const Donation& d : b.donations) {
        if (d.step == static_cast<int>(k) && d.output == static_cast<int>(j)) {
          os << " (in place of " << name(d.from) << ")";
        }
      }
      os << "\n";
    }
    os << indent(dump(st.kernel), "  | ");
  }
  os << buffers_text(b, name);
  return os.str();
}

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

namespace detail {

namespace {
std::string& api_channels() {
  static std::string s;
  return s;
}
bool lists(const char* list, const char* channel) {
  if (!list || !*list) return false;
  const std::string s = std::string(",") + list + ",";
  return s.find(std::string(",") + channel + ",") != std::string::npos ||
         s.find(",all,") != std::string::npos;
}
}  // namespace

// One switch, three spellings: AJ_LOG, AJ_DUMP (the same channels) and
// aj::set_log().
bool log_enabled(const char* channel) {
  return lists(std::getenv("AJ_LOG"), channel) || lists(std::getenv("AJ_DUMP"), channel) ||
         lists(api_channels().c_str(), channel);
}

bool log_any() {
  auto set = [](const char* v) { return v && *v; };
  return set(std::getenv("AJ_LOG")) || set(std::getenv("AJ_DUMP")) || !api_channels().empty();
}

void log(const char* channel, const std::string& text) {
  if (!log_enabled(channel)) return;
  std::cerr << "[aj:" << channel << "] " << text;
  if (!text.empty() && text.back() != '\n') std::cerr << "\n";
  std::cerr.flush();
}

}  // namespace detail

void set_log(const std::string& channels) { detail::api_channels() = channels; }

}  // namespace aj

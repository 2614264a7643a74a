#include "opt/explain.hpp"

#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "graph/dump.hpp"
#include "graph/host_call.hpp"
#include "arrayjit/error.hpp"

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
    os << "  " << name(v.node) << " " << describe(n.dtype, n.shape) << " " << v.bytes
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

namespace {

// Why a value is stored although it is no root (Schedule::materialized).
std::string stored_text(const Materialization& m, const Names& name) {
  using W = Materialization::Why;
  const Graph& g = graph();
  const std::string by = m.by == kNoNode ? std::string("a consumer") : name(m.by);
  switch (m.why) {
    case W::held: return "held by a handle made at " + loc_str(g[m.node].loc) + ": stored";
    case W::library_operand:
      return "materialized: read by library step " + by + (m.by == kNoNode ? "" : std::string(" (") + op_name(g[m.by].op) + ")");
    case W::view_base: return "materialized: viewed by " + by + ", a step of its own";
    case W::reduction_elsewhere: return "materialized: a reduction needed at another index by " + by;
    case W::not_a_view: return "materialized: reshaped by " + by + " where no index map expresses the reshape";
    case W::several_maps:
      return "materialized: read at " + std::to_string(m.count) + " index maps (offsets, transposes) by " + by;
    case W::broadcast:
      return "materialized: read through a broadcast by " + by + " (" + std::to_string(m.count) +
             " evaluations for its " + std::to_string(g[m.node].numel()) + " elements)";
    case W::several_kernels: return "materialized: needed by " + std::to_string(m.count) + " kernels";
    case W::empty: return "materialized: has no elements";
    case W::size_cap:
      return "materialized: the kernel computing " + by + " would pass the size cap (" + std::to_string(m.count) +
             " nodes)";
  }
  return "materialized";
}

// Why output `out` of a kernel did not take `r.input`'s buffer.
std::string not_in_place_text(NodeId out, const NotInPlace& r, const Names& name) {
  using W = NotInPlace::Why;
  const Graph& g = graph();
  const std::string in = name(r.input);
  std::string why;
  switch (r.why) {
    case W::taken: why = in + "'s buffer went to " + name(r.other); break;
    case W::other_index: why = in + " is read at another index or layout than " + name(out) + " is written"; break;
    case W::item_size:
      why = in + " has " + std::to_string(itemsize(g[r.input].dtype)) + "-byte elements, " + name(out) + " " +
            std::to_string(itemsize(g[out].dtype)) + "-byte";
      break;
    case W::sizes_differ: why = in + "'s buffer has another size"; break;
    case W::borrowed: why = in + " is borrowed memory (never written)"; break;
    case W::view: why = in + " is a view: its storage belongs to another array"; break;
    case W::shared:
      why = in + "'s storage is shared" + (r.other == kNoNode ? std::string(" with another array") : " with the view " + name(r.other));
      break;
    case W::held: why = in + " is still held by a handle made at " + loc_str(g[r.input].loc); break;
    case W::read_outside: why = in + " is read by a node outside this evaluation"; break;
    case W::root: why = in + " is a result of this evaluation"; break;
    case W::later_reader:
      why = in + " is read later" + (r.other == kNoNode ? std::string() : " by " + name(r.other)) +
            (r.reader_step == BufferPlan::kEnd ? std::string(", after this evaluation")
             : r.reader_step >= 0 ? ", at step " + std::to_string(r.reader_step) : std::string());
      break;
  }
  return name(out) + " not in place: " + why;
}

}  // namespace

std::string describe_plan(const Schedule& s, const BufferPlan& b) {
  Graph& g = graph();
  Names name(s.roots);
  std::unordered_map<NodeId, const Materialization*> stored;
  for (const Materialization& m : s.materialized) stored.emplace(m.node, &m);
  auto note = [&](NodeId id) {
    auto it = stored.find(id);
    return it == stored.end() ? std::string() : ", " + stored_text(*it->second, name);
  };
  const std::vector<NotInPlace> refused = not_in_place(s, b);
  std::ostringstream os;
  os << "plan: " << s.steps.size() << " steps, " << s.kernels() << " kernels";
  std::size_t held = 0;
  for (const Materialization& m : s.materialized) held += m.why == Materialization::Why::held;
  if (held) os << ", " << held << " held values stored";
  if (s.materialized.size() > held) os << ", " << s.materialized.size() - held << " values materialized";
  os << "\n";
  int kernel_no = 0;
  std::size_t r = 0;  // refused is in step order
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    os << "step " << k << ": ";
    if (st.kind == Step::Kind::view) {
      os << "view " << name(st.node) << " = " << op_name(g[st.node].op) << " of "
         << name(g[st.node].inputs[0]) << " (no copy)" << note(st.node) << "\n";
      continue;
    }
    if (st.kind == Step::Kind::library) {
      os << "library " << name(st.node) << " = " << op_name(g[st.node].op);
      if (g[st.node].op == Op::HostCall) {  // the user's function, by the name it was given
        if (auto f = find_host_call(g[st.node].i0)) os << " '" << f->name << "' (made at " << loc_str(f->loc) << ")";
      }
      if (g[st.node].op == Op::Collective || g[st.node].op == Op::Conv) {
        os << " " << node_payload(g[st.node]);  // all_reduce sum group=0; conv stride=1,1 pad=1,1/1,1 ...
      }
      os << note(st.node);
      for (const Donation& d : b.donations) {
        if (d.step == static_cast<int>(k)) os << " (in place of " << name(d.from) << ")";
      }
      os << "\n";
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
    std::vector<NotInPlace> shared_now;  // planned in place, refused at run time as things stand
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      os << "  out" << j << " = " << name(st.outputs[j]);
      for (const Donation& d : b.donations) {
        if (d.step != static_cast<int>(k) || d.output != static_cast<int>(j)) continue;
        const Node& from = g[d.from];
        if (from.evaluated() && from.storage.use_count() > 1) {
          shared_now.push_back({d.step, d.output, d.from, NotInPlace::Why::shared});
        } else {
          os << " (in place of " << name(d.from) << ")";
        }
      }
      if (j < st.into.size() && st.into[j] != kNoNode) os << " (into its slice of " << name(st.into[j]) << ")";
      os << note(st.outputs[j]) << "\n";
    }
    for (; r < refused.size() && refused[r].step == static_cast<int>(k); ++r) {
      os << "  " << not_in_place_text(st.outputs[static_cast<std::size_t>(refused[r].output)], refused[r], name) << "\n";
    }
    for (const NotInPlace& n : shared_now) {
      os << "  " << not_in_place_text(st.outputs[static_cast<std::size_t>(n.output)], n, name) << "\n";
    }
    os << indent(dump(st.kernel), "  | ");
  }
  os << buffers_text(b, name);
  return os.str();
}

namespace {

// Text safe inside a Graphviz "..." label.
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string plan_dot(const Schedule& s, const BufferPlan& b) {
  Graph& g = graph();
  Names name(s.roots);
  std::unordered_map<NodeId, const BufferValue*> value;
  for (const BufferValue& v : b.values) value[v.node] = &v;
  std::ostringstream os;
  os << "digraph arrayjit_plan {\n  rankdir=BT;\n  compound=true;\n"
     << "  node [shape=box, fontname=monospace, fontsize=10];\n";
  // One box per node: what it is, its dtype and shape, where it was traced,
  // and the buffer slot its value lives in.
  auto box = [&](NodeId id, const std::string& extra_style) {
    const Node& n = g[id];
    std::string label = name(id) + " " + (n.evaluated() ? "input" : op_name(n.op)) + " " +
                        describe(n.dtype, n.shape) + "\\n" + dot_escape(loc_str(n.loc));
    if (auto it = value.find(id); it != value.end()) {
      const BufferValue& v = *it->second;
      label += "\\n" + std::to_string(v.bytes) + " bytes" +
               (v.slot >= 0 ? ", slot " + std::to_string(v.slot) : std::string(", donated buffer"));
    }
    os << "    n" << id << " [label=\"" << label << "\"" << extra_style << "];\n";
  };
  std::unordered_map<NodeId, bool> drawn;
  int kernel_no = 0;
  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    if (st.kind == Step::Kind::kernel) {
      os << "  subgraph cluster_" << k << " {\n    label=\"step " << k << ": kernel k" << kernel_no++
         << (st.copy ? " (copy)" : "") << " over " << dump_list(st.kernel.shape)
         << (st.kernel.is_reduction() ? " reducing " + dump_list(st.kernel.reduce_axes) : std::string()) << "\";\n"
         << "    style=rounded; color=blue;\n";
      for (NodeId c : st.computed) {
        if (drawn[c]) continue;
        drawn[c] = true;
        box(c, "");
      }
      for (NodeId o : st.outputs) {
        if (drawn[o]) continue;
        drawn[o] = true;
        box(o, ", penwidth=2");
      }
      os << "  }\n";
    } else {
      drawn[st.node] = true;
      os << "  subgraph cluster_" << k << " {\n    label=\"step " << k << ": "
         << (st.kind == Step::Kind::view ? "view (no copy)" : "library step") << "\";\n    style=dashed;\n";
      box(st.node, st.kind == Step::Kind::view ? ", style=dashed" : ", shape=component");
      os << "  }\n";
    }
  }
  // Everything else the plan reaches: arrays that exist already, views
  // folded into kernels' index arithmetic, constants.
  for (NodeId id : reachable_order(s.roots)) {
    if (drawn[id]) continue;
    drawn[id] = true;
    box(id, g[id].evaluated() ? ", shape=ellipse, style=filled, fillcolor=lightgrey" : ", style=dotted");
  }
  for (NodeId id : reachable_order(s.roots)) {
    for (NodeId in : g[id].inputs) os << "  n" << in << " -> n" << id << ";\n";
  }
  for (const Donation& d : b.donations) {
    os << "  n" << d.from << " -> n" << d.to << " [style=dashed, color=red, label=\"in place\"];\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace aj

// Programs: plans in numbered values (see program.hpp).
#include "opt/program.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "graph/host_call.hpp"
#include "opt/pipeline.hpp"
#include "opt/verify.hpp"

namespace aj::opt {

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
  c.k = n.i1;  // topk: k; linalg: the flags (axis: the routine)
  c.loc = n.loc;
  if (n.op == Op::HostCall) {
    c.host = find_host_call(n.i0);
    if (c.host.expired()) internal_error("a host_call node whose function is gone");
    c.ints = n.ints;
  }
  if (n.op == Op::Collective) c.ints = n.ints;  // {group, peer}; axis: the kind, k: the reduction
  if (n.op == Op::Conv) c.ints = n.ints;  // the geometry; axis: the groups
  return c;
}

namespace {

// Does kernel step e run as the epilogue of library step k? `ready` tells
// whether a node exists before step k.
template <class Ready>
bool is_epilogue(const Schedule& s, const BufferPlan& b, std::size_t k, std::size_t e, Ready&& ready) {
  const Graph& g = graph();
  if (e >= s.steps.size() || s.steps[k].kind != Step::Kind::library) return false;
  const Step& st = s.steps[e];
  const NodeId m = s.steps[k].node;
  if (g[m].op != Op::MatMul || st.kind != Step::Kind::kernel || st.copy || st.kernel.is_reduction() ||
      st.kernel.shape != g[m].shape.dims() || g[m].numel() < kEpilogueMinElements) {
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
      if (!ready(st.inputs[i])) return false;
      continue;
    }
    if (in.dtype != g[m].dtype || in.offset != 0 || in.strides != own) return false;
    reads = true;
  }
  // An output taking over an operand's buffer would overwrite it while
  // later blocks still read it: then the two steps run one after the other.
  for (const Donation& d : b.donations) {
    if (d.step != static_cast<int>(e)) continue;
    for (NodeId operand : g[m].inputs) {
      if (d.from == operand) return false;
    }
  }
  return reads;
}

}  // namespace

std::vector<std::uint8_t> decide_epilogues(const Schedule& s, const BufferPlan& b) {
  const Graph& g = graph();
  std::vector<std::uint8_t> out(s.steps.size(), 0);
  for (std::size_t k = 0; k + 1 < s.steps.size(); ++k) {
    auto ready = [&](NodeId id) {
      if (g[id].evaluated()) return true;
      auto it = s.step_of.find(id);
      return it != s.step_of.end() && static_cast<std::size_t>(it->second) < k;
    };
    if (is_epilogue(s, b, k, k + 1, ready)) {
      out[k] = 1;
      ++k;  // a kernel that is an epilogue is not a library step
    }
  }
  return out;
}

std::unique_ptr<Program> make_program(const Plan& p, const std::vector<NodeId>& args,
                                      const std::vector<NodeId>& results, Device device, bool capture_leaves,
                                      std::vector<NodeId>* value_nodes) {
  const Graph& g = graph();
  const Schedule& s = p.schedule;
  auto prog = std::make_unique<Program>();
  prog->device = device;
  std::unordered_map<NodeId, int> value;
  std::vector<NodeId> nodes;  // value -> node
  auto number = [&](NodeId id) {
    const int v = static_cast<int>(nodes.size());
    value.emplace(id, v);  // an array passed twice is its first value
    nodes.push_back(id);
    return v;
  };
  for (NodeId a : args) number(a);

  // Evaluated arrays the steps (or the results) read that are not
  // arguments: held by the program (captured) or bound by the caller.
  std::vector<NodeId> leaves;
  auto leaf = [&](NodeId id) {
    if (id == kNoNode || value.count(id) || !g[id].evaluated()) return;
    number(id);
    leaves.push_back(id);
  };
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::kernel) {
      for (NodeId in : st.inputs) leaf(in);
    } else {
      for (NodeId in : g[st.node].inputs) leaf(in);
    }
  }
  for (NodeId r : results) leaf(r);
  if (capture_leaves) {
    prog->bound = static_cast<int>(args.size());
    for (NodeId id : leaves) prog->captured.push_back(g[id].storage);
  } else {
    prog->bound = static_cast<int>(nodes.size());
  }

  std::vector<Layout> layout_of_value;  // the layout each value has (bound, captured and made)
  for (NodeId id : nodes) {  // (kNoNode: an argument nothing reads)
    layout_of_value.push_back(id == kNoNode ? Layout{} : Layout{g[id].strides, g[id].offset});
  }
  auto made = [&](NodeId id, Layout l) {
    auto it = value.find(id);
    if (it != value.end()) return it->second;  // a concatenation its pieces met first
    const int v = number(id);
    layout_of_value.push_back(std::move(l));
    return v;
  };
  auto value_of = [&](NodeId id) -> int {
    if (id == kNoNode) return -1;
    auto it = value.find(id);
    return it == value.end() ? -2 : it->second;
  };
  auto bytes_of = [&](NodeId id) { return static_cast<std::size_t>(g[id].numel()) * itemsize(g[id].dtype); };
  auto donor_of = [&](std::size_t k, int output) {
    for (const Donation& d : p.buffers.donations) {
      if (d.step == static_cast<int>(k) && d.output == output) return value_of(d.from);
    }
    return -1;
  };

  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    ProgramStep ps;
    switch (st.kind) {
      case Step::Kind::kernel: {
        ps.kind = ProgramStep::Kind::kernel;
        ps.kernel = st.kernel;
        if (!st.outputs.empty()) ps.loc = g[st.outputs[0]].loc;
        ps.scalar_sources = st.scalar_sources;
        for (std::size_t e = 0; e < st.inputs.size(); ++e) {
          const int v = st.kernel.inputs[e].index_only ? -1 : value_of(st.inputs[e]);
          if (v == -2) return nullptr;
          ps.inputs.push_back(v);
        }
        for (std::size_t j = 0; j < st.outputs.size(); ++j) {
          const NodeId o = st.outputs[j];
          const NodeId c = j < st.into.size() ? st.into[j] : kNoNode;
          if (c != kNoNode) {  // its slice of a concatenation's buffer
            ps.into.push_back(made(c, contiguous_layout(g[c].shape)));
            ps.bytes.push_back(bytes_of(c));
            ps.layouts.push_back(s.layouts.at(o));
          } else {
            ps.into.push_back(-1);
            ps.bytes.push_back(bytes_of(o));
            ps.layouts.push_back(contiguous_layout(g[o].shape));
          }
          ps.outputs.push_back(made(o, ps.layouts.back()));
          const int d = donor_of(k, static_cast<int>(j));
          ps.donors.push_back(d >= 0 ? d : -1);
        }
        break;
      }
      case Step::Kind::view: {
        ps.kind = ProgramStep::Kind::view;
        const NodeId src = g[st.node].inputs[0];
        const int in = value_of(src);
        if (in < 0) return nullptr;
        ps.inputs.push_back(in);
        ps.layouts.push_back(s.layouts.at(st.node));
        if (verify_enabled()) {  // the layout planned is the view of the layout its input is made with
          auto l = view_layout(g[st.node], g[src], layout_of_value[static_cast<std::size_t>(in)]);
          bool same = l.has_value();
          for (int d = 0; same && d < g[st.node].shape.ndim(); ++d) {  // (the stride of an extent of 1 is any)
            const auto du = static_cast<std::size_t>(d);
            same = g[st.node].shape[d] == 1 || l->strides[du] == ps.layouts[0].strides[du];
          }
          if (!same) internal_error("make_program: a view step's planned layout is not the view of its input's");
        }
        ps.outputs.push_back(made(st.node, ps.layouts[0]));
        break;
      }
      case Step::Kind::library: {
        ps.kind = ProgramStep::Kind::library;
        ps.then = k < p.epilogues.size() && p.epilogues[k];
        const Node& n = g[st.node];
        std::vector<Layout> layouts;
        for (NodeId in : n.inputs) {
          const int v = value_of(in);
          if (v < 0) return nullptr;
          ps.inputs.push_back(v);
          layouts.push_back(layout_of_value[static_cast<std::size_t>(v)]);
        }
        ps.call = library_call(n, layouts);
        ps.loc = n.loc;
        ps.bytes.push_back(bytes_of(st.node));
        ps.layouts.push_back(contiguous_layout(n.shape));
        ps.outputs.push_back(made(st.node, ps.layouts[0]));
        const int d = donor_of(k, 0);
        ps.donors.push_back(d >= 0 ? d : -1);
        break;
      }
    }
    prog->steps.push_back(std::move(ps));
  }
  prog->values = static_cast<int>(nodes.size());
  for (NodeId r : results) {
    const int v = value_of(r);
    if (v < 0) return nullptr;
    prog->results.push_back(v);
    prog->result_dtypes.push_back(g[r].dtype);
    prog->result_shapes.push_back(g[r].shape);
    prog->result_layouts.push_back(layout_of_value[static_cast<std::size_t>(v)]);
  }

  // Let a made value's buffer go after its last reader, or after the step
  // that makes it when nothing reads it (results stay): later steps of the
  // same run reuse it from the pool.
  std::vector<int> last(nodes.size(), -1);
  for (std::size_t k = 0; k < prog->steps.size(); ++k) {
    for (int v : prog->steps[k].outputs) {
      if (last[static_cast<std::size_t>(v)] < 0) last[static_cast<std::size_t>(v)] = static_cast<int>(k);
    }
    for (int v : prog->steps[k].inputs) {
      if (v >= 0) last[static_cast<std::size_t>(v)] = static_cast<int>(k);
    }
  }
  for (int r : prog->results) last[static_cast<std::size_t>(r)] = -1;
  const int first_made = prog->bound + static_cast<int>(prog->captured.size());
  for (int v = first_made; v < prog->values; ++v) {
    const int k = last[static_cast<std::size_t>(v)];
    if (k >= 0) prog->steps[static_cast<std::size_t>(k)].release.push_back(v);
  }
  if (value_nodes) *value_nodes = std::move(nodes);
  return prog;
}

std::string dump(const Program& p) {
  auto list = [](const std::vector<int>& vs) {
    std::string s;
    for (int v : vs) s += (s.empty() ? "" : ",") + (v < 0 ? std::string("-") : "v" + std::to_string(v));
    return s;
  };
  std::string s = "program: " + std::to_string(p.bound) + " bound, " + std::to_string(p.captured.size()) +
                  " captured, " + std::to_string(p.values) + " values\n";
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const ProgramStep& st = p.steps[k];
    const char* kind = st.kind == ProgramStep::Kind::kernel ? "kernel" : st.kind == ProgramStep::Kind::view ? "view" : "library";
    s += "  k" + std::to_string(k) + " " + kind;
    if (st.kind == ProgramStep::Kind::library) s += std::string(" ") + op_name(st.call.op) + (st.then ? " then" : "");
    s += " in " + list(st.inputs) + " -> " + list(st.outputs);
    if (std::any_of(st.donors.begin(), st.donors.end(), [](int d) { return d >= 0; })) s += " donors " + list(st.donors);
    if (std::any_of(st.into.begin(), st.into.end(), [](int c) { return c >= 0; })) s += " into " + list(st.into);
    if (!st.release.empty()) s += " release " + list(st.release);
    s += "\n";
  }
  if (!p.results.empty()) s += "  results " + list(p.results) + "\n";
  return s;
}

}  // namespace aj::opt

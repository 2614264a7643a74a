// Deterministic text dumps of the graph: dense ids in topological order,
// never pointers. `dump` is for tests and logs; `to_dot` for pictures.
#include "graph/dump.hpp"

#include <charconv>
#include <sstream>
#include <unordered_map>

#include "graph/library.hpp"

namespace aj {

std::string describe(DType t, const Shape& s) { return std::string(dtype_name(t)) + s.str(); }

std::string dump_number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string dump_list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

namespace {


}  // namespace

std::string node_payload(const Node& n) {
  switch (op_category(n.op)) {
    case OpCategory::Leaf:
      if (n.op == Op::Constant) return is_float(n.dtype) ? dump_number(n.f0) : std::to_string(n.i0);
      return "";
    case OpCategory::Generator:
      switch (n.op) {
        case Op::Iota: return "start=" + dump_number(n.f0) + " step=" + dump_number(n.f1);
        case Op::Linspace: return "start=" + dump_number(n.f0) + " stop=" + dump_number(n.f1);
        case Op::Eye: return "k=" + std::to_string(n.i0);
        case Op::RandUniform:
        case Op::RandNormal: return "key=" + std::to_string(n.i0) + " " + dump_number(n.f0) + " " + dump_number(n.f1);
        case Op::RandBits: return "key=" + std::to_string(n.i0);
        AJ_CASES_OUTSIDE(Generator) break;
      }
      internal_error("dump: a generator category op that is no generator");
    case OpCategory::Reduce: return "axes=" + dump_list(n.ints);
    case OpCategory::Scan: return "axis=" + std::to_string(n.ints.at(0));
    case OpCategory::View:
      if (n.op == Op::Transpose) return "perm=" + dump_list(n.ints);
      if (n.op == Op::Slice) return "start,step=" + dump_list(n.ints);
      return "";
    case OpCategory::Other:
      if (n.op == Op::Concat || n.op == Op::Sort || n.op == Op::ArgSort || n.op == Op::ScatterAdd ||
          n.op == Op::Scatter) {
        return "axis=" + std::to_string(n.i0);
      }
      if (n.op == Op::Linalg) {
        return std::string(linalg_name(static_cast<LinalgKind>(n.i0))) + " flags=" + std::to_string(n.i1);
      }
      if (n.op == Op::Conv) {
        ConvGeometry geo;
        if (!geo.unpack(n.ints)) return "bad geometry";
        auto list = [](const std::vector<std::int64_t>& v) {
          std::string r;
          for (std::size_t i = 0; i < v.size(); ++i) r += (i ? "," : "") + std::to_string(v[i]);
          return r;
        };
        return std::string(n.i1 == kConvWeightGrad ? "weight gradient " : "") + "stride=" + list(geo.stride) +
               " pad=" + list(geo.lo) + "/" + list(geo.hi) + " dilation=" + list(geo.dilation) +
               " groups=" + std::to_string(n.i0);
      }
      if (n.op == Op::Collective) {
        const auto kind = static_cast<CollectiveKind>(n.i0);
        std::string d = collective_name(kind);
        if (kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter) {
          d += std::string(" ") + reduce_kind_name(static_cast<ReduceKind>(n.i1));
        }
        d += " group=" + std::to_string(n.ints.at(0));
        if (kind == CollectiveKind::broadcast) d += " root=" + std::to_string(n.ints.at(1));
        if (kind == CollectiveKind::send) d += " to=" + std::to_string(n.ints.at(1));
        if (kind == CollectiveKind::recv) d += " from=" + std::to_string(n.ints.at(1));
        return d;
      }
      if (n.op == Op::TopK || n.op == Op::ArgTopK) return "axis=" + std::to_string(n.i0) + " k=" + std::to_string(n.i1);
      return "";
    case OpCategory::Remap:
      if (n.op == Op::Gather) return "axis=" + std::to_string(n.i0);
      return "start,step=" + dump_list(n.ints);
    case OpCategory::Unary:
    case OpCategory::Binary:
    case OpCategory::Ternary: return "";
  }
  return "";
}

std::vector<NodeId> reachable_order(const std::vector<NodeId>& roots) {
  Graph& g = graph();
  std::vector<NodeId> order;
  std::unordered_map<NodeId, bool> seen;
  std::vector<std::pair<NodeId, std::size_t>> stack;
  for (NodeId r : roots) {
    if (seen.count(r)) continue;
    seen[r] = true;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& n = g[id];
      if (next < n.inputs.size()) {
        NodeId in = n.inputs[next++];
        if (!seen.count(in)) {
          seen[in] = true;
          stack.push_back({in, 0});
        }
      } else {
        order.push_back(id);
        stack.pop_back();
      }
    }
  }
  return order;
}

std::string dump_nodes(const std::vector<NodeId>& roots) {
  Graph& g = graph();
  auto order = reachable_order(roots);
  std::unordered_map<NodeId, std::size_t> dense;
  std::ostringstream os;
  for (NodeId id : order) {
    const Node& n = g[id];
    std::size_t d = dense.size();
    dense[id] = d;
    os << "%" << d << " = " << (n.evaluated() ? "input" : op_name(n.op)) << " "
       << describe(n.dtype, n.shape);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      os << (i ? ", %" : " %") << dense.at(n.inputs[i]);
    }
    std::string p = n.evaluated() ? "" : node_payload(n);
    if (!p.empty()) os << " " << p;
    os << "\n";
  }
  return os.str();
}

std::string dot_nodes(const std::vector<NodeId>& roots) {
  Graph& g = graph();
  auto order = reachable_order(roots);
  std::unordered_map<NodeId, std::size_t> dense;
  std::ostringstream os;
  os << "digraph arrayjit {\n  rankdir=BT;\n  node [shape=box, fontname=monospace];\n";
  for (NodeId id : order) {
    const Node& n = g[id];
    std::size_t d = dense.size();
    dense[id] = d;
    std::string label = "%" + std::to_string(d) + " " + (n.evaluated() ? "input" : op_name(n.op)) +
                        "\\n" + describe(n.dtype, n.shape);
    std::string p = n.evaluated() ? "" : node_payload(n);
    if (!p.empty()) label += "\\n" + p;
    os << "  n" << d << " [label=\"" << label << "\"" << (n.evaluated() ? ", style=filled" : "")
       << "];\n";
    for (NodeId in : n.inputs) os << "  n" << dense.at(in) << " -> n" << d << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace aj

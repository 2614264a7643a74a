#include "graph/kernel.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "graph/dump.hpp"

namespace aj {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// Per axis: 0 broadcast, 1 unit stride on the innermost varying axis, 2 other.
// This is what code generation specializes on; the stride values are not.
std::uint64_t stream_shape_hash(std::uint64_t h, const KStream& s, const std::vector<std::int64_t>& shape) {
  h = mix(h, static_cast<std::uint64_t>(s.dtype));
  h = mix(h, s.index_only);
  h = mix(h, s.gathered);
  // Contiguous over the iteration space (row-major, ignoring broadcast axes)?
  std::int64_t acc = 1;
  bool contiguous = true;
  for (std::size_t d = shape.size(); d-- > 0;) {
    std::uint64_t kind = s.strides[d] == 0 ? 0 : s.strides[d] == 1 ? 1 : 2;
    h = mix(h, kind);
    if (s.strides[d] != 0) {
      if (s.strides[d] != acc) contiguous = false;
      acc *= shape[d];
    }
  }
  return mix(h, contiguous);
}

}  // namespace

KOperands operands(const KInstr& in) {
  KOperands o;
  switch (in.kind) {
    case KOp::Load: o.v[1] = in.b; o.v[2] = in.c; break;
    case KOp::Index: o.v[1] = in.b; break;
    case KOp::Const:
    case KOp::Position:
    case KOp::InRange: break;
    case KOp::Unary:
    case KOp::Binary:
    case KOp::Where:
    case KOp::Reduce:
    case KOp::Scan: o.v[0] = in.a; o.v[1] = in.b; o.v[2] = in.c; break;
  }
  return o;
}

std::int64_t Kernel::points() const {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

std::int64_t Kernel::inner_points() const {
  std::int64_t n = 1;
  for (auto a : reduce_axes) n *= shape[static_cast<std::size_t>(a)];
  return n;
}

std::int64_t Kernel::outer_points() const {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (std::find(reduce_axes.begin(), reduce_axes.end(), static_cast<std::int64_t>(d)) == reduce_axes.end()) {
      n *= shape[d];
    }
  }
  return n;
}

std::uint64_t structural_hash(const Kernel& k) {
  std::uint64_t h = mix(0x61726a6b, k.shape.size());
  for (auto a : k.reduce_axes) h = mix(h, static_cast<std::uint64_t>(a));
  for (auto& s : k.inputs) h = stream_shape_hash(h, s, k.shape);
  for (auto& in : k.instrs) {
    h = mix(h, static_cast<std::uint64_t>(in.kind));
    h = mix(h, static_cast<std::uint64_t>(in.op));
    h = mix(h, static_cast<std::uint64_t>(in.dtype));
    h = mix(h, in.phase);
    h = mix(h, static_cast<std::uint64_t>(in.a));
    h = mix(h, static_cast<std::uint64_t>(in.b));
    h = mix(h, static_cast<std::uint64_t>(in.c));
    h = mix(h, static_cast<std::uint64_t>(in.arg));
  }
  for (auto& o : k.outputs) {
    h = mix(h, static_cast<std::uint64_t>(o.value));
    h = mix(h, o.phase);
    h = stream_shape_hash(h, o.stream, k.shape);
  }
  // Scalars count by dtype only: their values are arguments.
  for (auto& s : k.scalars) h = mix(h, static_cast<std::uint64_t>(s.dtype));
  return h;
}

std::string dump(const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << dump_list(k.shape);
  if (k.is_reduction()) os << " reduce " << dump_list(k.reduce_axes);
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(structural_hash(k)));
  os << " hash " << hash << "\n";
  for (std::size_t i = 0; i < k.inputs.size(); ++i) {
    const KStream& s = k.inputs[i];
    os << "  in" << i << ": " << dtype_name(s.dtype) << (s.index_only ? " index" : "")
       << (s.gathered ? " gathered" : "")
       << " strides " << dump_list(s.strides) << " offset " << s.offset << "\n";
  }
  for (std::size_t i = 0; i < k.scalars.size(); ++i) {
    const KScalar& s = k.scalars[i];
    os << "  s" << i << ": " << dtype_name(s.dtype) << " = "
       << (is_float(s.dtype) ? dump_number(s.f) : std::to_string(s.i)) << "\n";
  }
  for (std::size_t i = 0; i < k.instrs.size(); ++i) {
    const KInstr& in = k.instrs[i];
    os << "  " << (in.phase ? "  " : "") << "v" << i << " = ";
    switch (in.kind) {
      case KOp::Load:
        os << "load " << dtype_name(in.dtype) << " in" << in.arg;
        if (in.b >= 0) os << " + v" << in.b;
        if (in.c >= 0) os << " if v" << in.c;
        break;
      case KOp::Position: os << "position i64 in" << in.arg; break;
      case KOp::InRange: os << "in_range bool in" << in.arg << " [s" << in.a << ", s" << in.b << ")"; break;
      case KOp::Const: os << "const " << dtype_name(in.dtype) << " s" << in.arg; break;
      case KOp::Unary:
        os << op_name(in.op) << " " << dtype_name(in.dtype) << " v" << in.a;
        break;
      case KOp::Binary:
        os << op_name(in.op) << " " << dtype_name(in.dtype) << " v" << in.a << ", v" << in.b;
        break;
      case KOp::Where:
        os << "where " << dtype_name(in.dtype) << " v" << in.a << ", v" << in.b << ", v" << in.c;
        break;
      case KOp::Reduce:
        os << "reduce_" << op_name(in.op) << " " << dtype_name(in.dtype) << " v" << in.a;
        if (in.b >= 0) os << " at v" << in.b;  // arg reductions: candidate indices
        break;
      case KOp::Scan:
        os << "scan_" << op_name(in.op) << " " << dtype_name(in.dtype) << " v" << in.a;
        break;
      case KOp::Index:
        os << op_name(in.op) << " " << dtype_name(in.dtype) << " in" << in.arg;
        if (in.b >= 0) os << " + v" << in.b;
        os << " s" << in.a << "..s" << in.a + 3;
        break;
    }
    os << "\n";
  }
  for (std::size_t i = 0; i < k.outputs.size(); ++i) {
    const KOutput& o = k.outputs[i];
    os << "  out" << i << " = v" << o.value << ": " << dtype_name(o.stream.dtype) << " strides "
       << dump_list(o.stream.strides) << (o.phase ? " (after reduce)" : "") << "\n";
  }
  return os.str();
}

}  // namespace aj

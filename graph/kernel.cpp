#include "graph/kernel.hpp"


#include <algorithm>
#include <charconv>
#include <cstring>
#include <sstream>

#include "graph/dump.hpp"
#include "base/profile.hpp"

namespace aj {

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

void widen_halves(Kernel& k) {
  bool any = false;
  for (const KInstr& in : k.instrs) any |= is_half(in.dtype);
  if (!any) return;
  std::vector<KInstr> out;
  std::vector<std::int32_t> now(k.instrs.size(), -1);  // old value -> new value of the same dtype
  std::vector<std::int32_t> up;                         // new value -> its f32 cast (-1: none yet)
  auto push = [&](const KInstr& in) {
    out.push_back(in);
    up.push_back(-1);
    return static_cast<std::int32_t>(out.size() - 1);
  };
  // f32 of new value v (a cast in v's phase, made once).
  auto wide = [&](std::int32_t v) {
    const auto u = static_cast<std::size_t>(v);
    if (v < 0 || !is_half(out[u].dtype)) return v;
    if (up[u] < 0) {
      const std::int32_t c = push({KOp::Unary, Op::Cast, DType::f32, out[u].phase, v, -1, -1, -1});
      up[u] = c;
    }
    return up[u];
  };
  for (std::size_t j = 0; j < k.instrs.size(); ++j) {
    KInstr in = k.instrs[j];
    // Operands (graph/kernel.hpp KOperands) to their new values.
    const bool computes = in.kind == KOp::Unary || in.kind == KOp::Binary || in.kind == KOp::Where ||
                          in.kind == KOp::Reduce || in.kind == KOp::Scan;
    for (std::int32_t* o : {&in.a, &in.b, &in.c}) {
      const bool operand = computes || (in.kind == KOp::Load && o != &in.a) || (in.kind == KOp::Index && o == &in.b);
      if (operand && *o >= 0) *o = now[static_cast<std::size_t>(*o)];
    }
    const bool arithmetic = (in.kind == KOp::Unary && in.op != Op::Cast) || in.kind == KOp::Binary ||
                            in.kind == KOp::Reduce || in.kind == KOp::Scan;
    const bool half = is_half(in.dtype) || (in.a >= 0 && computes && is_half(out[static_cast<std::size_t>(in.a)].dtype));
    if (!arithmetic || !half) {
      now[j] = push(in);
      continue;
    }
    in.a = wide(in.a);
    in.b = wide(in.b);
    const DType result = in.dtype;
    if (is_half(result)) in.dtype = DType::f32;
    const std::int32_t v = push(in);
    now[j] = is_half(result) ? push({KOp::Unary, Op::Cast, result, in.phase, v, -1, -1, -1}) : v;
  }
  for (KOutput& o : k.outputs) o.value = now[static_cast<std::size_t>(o.value)];
  k.instrs = std::move(out);
}

// The same loop nest with fewer axes: extent-1 axes dropped, and adjacent
// axes merged where every stream walks them as one (stride[d] ==
// stride[d+1] * extent[d+1]) and both are reduced or both not. A contiguous
// [1000, 3] kernel becomes one loop of 3000 (long vector loops, fewer index
// divisions), and kernels of any rank over contiguous data share one
// compiled function. False when nothing would change.
bool collapse_axes(const Kernel& k, Kernel* out, std::size_t min_rank) {
  const std::size_t rank = k.shape.size();
  if (rank == 0 && min_rank == 0) return false;
  std::vector<const KStream*> streams;
  for (auto& s : k.inputs) streams.push_back(&s);
  for (auto& o : k.outputs) streams.push_back(&o.stream);
  auto reduced = [&](std::size_t d) {
    return std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) != k.reduce_axes.end();
  };
  std::vector<std::int64_t> ext;
  std::vector<bool> red;
  std::vector<std::vector<std::int64_t>> st(streams.size());
  for (std::size_t d = 0; d < rank; ++d) {
    if (k.shape[d] == 1) continue;  // its index is always 0
    bool merge = !ext.empty() && red.back() == reduced(d);
    for (std::size_t s = 0; merge && s < streams.size(); ++s) {
      merge = st[s].back() == streams[s]->strides[d] * k.shape[d];
    }
    if (merge) {
      ext.back() *= k.shape[d];
      for (std::size_t s = 0; s < streams.size(); ++s) st[s].back() = streams[s]->strides[d];
      continue;
    }
    ext.push_back(k.shape[d]);
    red.push_back(reduced(d));
    for (std::size_t s = 0; s < streams.size(); ++s) st[s].push_back(streams[s]->strides[d]);
  }
  if (k.is_reduction() && std::find(red.begin(), red.end(), true) == red.end()) {
    ext.push_back(1);  // a reduction keeps a (trivial) reduce axis
    red.push_back(true);
    for (auto& v : st) v.push_back(0);
  }
  while (ext.size() < min_rank) {  // an axis of extent 1 that every stream ignores
    ext.push_back(1);
    red.push_back(false);
    for (auto& v : st) v.push_back(0);
  }
  if (ext.size() == rank) return false;
  *out = k;
  out->shape = ext;
  out->reduce_axes.clear();
  for (std::size_t d = 0; d < red.size(); ++d) if (red[d]) out->reduce_axes.push_back(static_cast<std::int64_t>(d));
  for (std::size_t s = 0; s < streams.size(); ++s) {
    KStream& t = s < k.inputs.size() ? out->inputs[s] : out->outputs[s - k.inputs.size()].stream;
    t.strides = std::move(st[s]);
  }
  return true;
}


std::string kernel_key(const Kernel& k, const std::vector<int>& alias, bool contiguity) {
  // Raw bytes, not text: the host runs this on every launch (a memory cache lookup).
  std::string s;
  s.reserve(16 + 20 * k.instrs.size() + 8 * (k.inputs.size() + k.outputs.size()) * (k.shape.size() + 2));
  auto put = [&](std::int64_t v) {
    char b[8];
    std::memcpy(b, &v, 8);
    s.append(b, 8);
  };
  auto small = [&](int v) { s.push_back(static_cast<char>(v)); };
  auto stream = [&](const KStream& st) {
    small(static_cast<int>(st.dtype));
    small(st.index_only);
    small(st.gathered);
    for (auto v : st.strides) small(stride_kind(v));
    if (contiguity) {  // row-major over the iteration space, ignoring broadcast axes
      std::int64_t acc = 1;
      bool contiguous = true;
      for (std::size_t d = k.shape.size(); d-- > 0;) {
        if (st.strides[d] == 0) continue;
        contiguous &= st.strides[d] == acc;
        acc *= k.shape[d];
      }
      small(contiguous);
    }
  };
  small(static_cast<int>(k.shape.size()));
  small(static_cast<int>(k.reduce_axes.size()));
  for (auto a : k.reduce_axes) small(static_cast<int>(a));
  put(static_cast<std::int64_t>(k.inputs.size()));
  for (const KStream& st : k.inputs) stream(st);
  put(static_cast<std::int64_t>(k.instrs.size()));
  for (const KInstr& in : k.instrs) {
    small(static_cast<int>(in.kind));
    small(static_cast<int>(in.op));
    small(static_cast<int>(in.dtype));
    small(in.phase);
    std::int32_t f[4] = {in.a, in.b, in.c, in.arg};
    s.append(reinterpret_cast<const char*>(f), sizeof f);
  }
  put(static_cast<std::int64_t>(k.outputs.size()));
  for (const KOutput& o : k.outputs) {
    put(o.value);
    small(o.phase);
    stream(o.stream);
  }
  put(static_cast<std::int64_t>(k.scalars.size()));
  for (const KScalar& sc : k.scalars) small(static_cast<int>(sc.dtype));
  for (int a : alias) put(a);
  return s;
}

std::uint64_t structural_hash(const Kernel& k) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : kernel_key(k, {}, true)) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

void profile_kernel(detail::prof::Event& e, const Kernel& k) {
  for (const KInstr& in : k.instrs) {
    if (in.kind == KOp::Load || in.kind == KOp::Const) continue;
    if (e.nops == detail::prof::Event::kMaxOps) {
      e.more_ops = true;
      break;
    }
    e.ops[e.nops++] = in.op;
  }
  e.rank = static_cast<std::uint8_t>(std::min<std::size_t>(k.shape.size(), 6));
  for (std::size_t i = 0; i < e.rank; ++i) e.shape[i] = k.shape[i];
  for (int a : k.reduce_axes) {
    if (a >= 0 && a < 8) e.reduced |= static_cast<std::uint8_t>(1u << a);
  }
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

namespace {
bool same_stream(const KStream& a, const KStream& b, bool numbers) {
  if (a.dtype != b.dtype || a.index_only != b.index_only || a.gathered != b.gathered ||
      a.strides.size() != b.strides.size()) {
    return false;
  }
  if (numbers) return a.strides == b.strides && a.offset == b.offset;
  for (std::size_t d = 0; d < a.strides.size(); ++d) {
    if (stride_kind(a.strides[d]) != stride_kind(b.strides[d])) return false;
  }
  return true;
}
}  // namespace

bool same_kernel(const Kernel& a, const Kernel& b, bool numbers) {
  if ((numbers ? a.shape != b.shape : a.shape.size() != b.shape.size()) || a.reduce_axes != b.reduce_axes ||
      a.inputs.size() != b.inputs.size() || a.instrs.size() != b.instrs.size() ||
      a.outputs.size() != b.outputs.size() || a.scalars.size() != b.scalars.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    if (!same_stream(a.inputs[i], b.inputs[i], numbers)) return false;
  }
  for (std::size_t i = 0; i < a.instrs.size(); ++i) {
    const KInstr &x = a.instrs[i], &y = b.instrs[i];
    if (x.kind != y.kind || x.op != y.op || x.dtype != y.dtype || x.phase != y.phase || x.a != y.a || x.b != y.b ||
        x.c != y.c || x.arg != y.arg) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    const KOutput &x = a.outputs[i], &y = b.outputs[i];
    if (x.value != y.value || x.phase != y.phase || !same_stream(x.stream, y.stream, numbers)) return false;
  }
  for (std::size_t i = 0; i < a.scalars.size(); ++i) {
    const KScalar &x = a.scalars[i], &y = b.scalars[i];
    if (x.dtype != y.dtype) return false;
    if (numbers && (x.i != y.i || std::memcmp(&x.f, &y.f, sizeof x.f) != 0)) return false;
  }
  return true;
}

}  // namespace aj

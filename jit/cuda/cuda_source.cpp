// Kernel IR -> CUDA C (see cuda_source.hpp). One switch over ops (op_expr),
// in the op table's order, with no default: a new op fails to compile here.
#include "jit/cuda/cuda_source.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>

#include "arrayjit/error.hpp"
#include "jit/cuda/cuda_prelude.hpp"

namespace aj::cuda {

namespace {

constexpr int kBlock = 256;  // threads per block: a multiple of the warp size

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

const char* ctype(DType t) {
  switch (t) {
    case DType::bool_: return "bool";
    case DType::i32: return "int";
    case DType::i64: return "i64";
    case DType::f32: return "float";
    case DType::f64: return "double";
  }
  internal_error("cuda codegen: bad dtype");
}

// A float math function by dtype: f32 calls the f-suffixed one, as the host's
// std:: overloads do.
std::string fn(DType t, const char* name, const std::string& x) {
  return std::string(name) + (t == DType::f32 ? "f(" : "(") + x + ")";
}

// The expression of one elementwise op on operands x (and y), mirroring
// ref::unary / ref::binary / ref::compare / convert. `t` is the operand dtype
// (for Cast, the source dtype); `to` the result dtype.
std::string op_expr(Op op, DType t, DType to, const std::string& x, const std::string& y) {
  const bool b = t == DType::bool_, f = is_float(t);
  const std::string T = ctype(t);
  const std::string one = t == DType::f32 ? "1.0f" : "1.0";
  auto bad = [&]() -> std::string {
    internal_error(std::string("cuda codegen: op ") + op_name(op) + " is not an elementwise op of " +
                   dtype_name(t));
  };
  switch (op) {
    case Op::Input:
    case Op::Constant:
    case Op::Iota:
    case Op::Linspace:
    case Op::Eye:
    case Op::RandUniform:
    case Op::RandNormal: return bad();
    // Unary. Integers and bool see only the ops tracing allows; the rest
    // return x unchanged, as ref::unary's defaults do.
    case Op::Neg: return b ? x : f ? "(-" + x + ")" : "aj_wneg(" + x + ")";
    case Op::Not: return b ? "(!" + x + ")" : x;
    case Op::Abs: return b ? x : f ? fn(t, "fabs", x) : "(" + x + " < 0 ? aj_wneg(" + x + ") : " + x + ")";
    case Op::Sign:
      return b ? x : f ? "aj_fsign(" + x + ")" : "(" + T + ")((" + x + " > 0) - (" + x + " < 0))";
    case Op::Floor: return f ? fn(t, "floor", x) : x;
    case Op::Ceil: return f ? fn(t, "ceil", x) : x;
    case Op::Round: return f ? fn(t, "rint", x) : x;  // nearbyint: half to even
    case Op::Exp: return f ? fn(t, "exp", x) : x;
    case Op::Log: return f ? fn(t, "log", x) : x;
    case Op::Log1p: return f ? fn(t, "log1p", x) : x;
    case Op::Expm1: return f ? fn(t, "expm1", x) : x;
    case Op::Sin: return f ? fn(t, "sin", x) : x;
    case Op::Cos: return f ? fn(t, "cos", x) : x;
    case Op::Tan: return f ? fn(t, "tan", x) : x;
    case Op::Tanh: return f ? fn(t, "tanh", x) : x;
    case Op::Sigmoid: return f ? "(" + one + " / (" + one + " + " + fn(t, "exp", "-" + x) + "))" : x;
    case Op::Sqrt: return f ? fn(t, "sqrt", x) : x;
    case Op::Rsqrt: return f ? "(" + one + " / " + fn(t, "sqrt", x) + ")" : x;  // not rsqrt: same bits as host
    case Op::Cast: return std::string("aj_cvt<") + ctype(to) + ">(" + x + ")";
    // Binary.
    case Op::Add: return b ? x : f ? "(" + x + " + " + y + ")" : "aj_wadd(" + x + ", " + y + ")";
    case Op::Sub: return b ? x : f ? "(" + x + " - " + y + ")" : "aj_wsub(" + x + ", " + y + ")";
    case Op::Mul: return b ? x : f ? "(" + x + " * " + y + ")" : "aj_wmul(" + x + ", " + y + ")";
    case Op::Div: return b ? x : f ? "(" + x + " / " + y + ")" : "aj_floordiv(" + x + ", " + y + ")";
    case Op::Mod: return b ? x : (f ? "aj_fmod(" : "aj_imod(") + x + ", " + y + ")";
    case Op::Max:
      return b ? "(" + x + " || " + y + ")" : f ? "aj_fmax(" + x + ", " + y + ")"
                                                : "(" + x + " > " + y + " ? " + x + " : " + y + ")";
    case Op::Min:
      return b ? "(" + x + " && " + y + ")" : f ? "aj_fmin(" + x + ", " + y + ")"
                                                : "(" + x + " < " + y + " ? " + x + " : " + y + ")";
    case Op::Pow:
      return b ? x : f ? std::string(t == DType::f32 ? "powf(" : "pow(") + x + ", " + y + ")"
                       : "aj_ipow(" + x + ", " + y + ")";
    case Op::Eq: return "(" + x + " == " + y + ")";
    case Op::Ne: return "(" + x + " != " + y + ")";
    case Op::Lt: return "(" + x + " < " + y + ")";
    case Op::Le: return "(" + x + " <= " + y + ")";
    case Op::Gt: return "(" + x + " > " + y + ")";
    case Op::Ge: return "(" + x + " >= " + y + ")";
    case Op::And: return b ? "(" + x + " && " + y + ")" : x;
    case Op::Or: return b ? "(" + x + " || " + y + ")" : x;
    case Op::Where:
    case Op::Sum:
    case Op::Prod:
    case Op::ReduceMax:
    case Op::ReduceMin:
    case Op::All:
    case Op::Any:
    case Op::ArgMax:
    case Op::ArgMin:
    case Op::Reshape:
    case Op::Transpose:
    case Op::Broadcast:
    case Op::Slice:
    case Op::Concat:
    case Op::MatMul: return bad();
  }
  return bad();
}

// ref::reduce_combine and reduce_identity.
std::string combine_expr(Op op, DType t, const std::string& acc, const std::string& x) {
  switch (op) {
    case Op::Sum: return op_expr(Op::Add, t, t, acc, x);
    case Op::Prod: return op_expr(Op::Mul, t, t, acc, x);
    case Op::ReduceMax: return op_expr(Op::Max, t, t, acc, x);
    case Op::ReduceMin: return op_expr(Op::Min, t, t, acc, x);
    case Op::All: return std::string("(") + ctype(t) + ")(" + acc + " && " + x + ")";
    case Op::Any: return std::string("(") + ctype(t) + ")(" + acc + " || " + x + ")";
    default: internal_error(std::string("cuda codegen: not a combiner: ") + op_name(op));
  }
}

std::string identity_expr(Op op, DType t) {
  const std::string T = ctype(t);
  switch (op) {
    case Op::Sum:
    case Op::Any: return T + "(0)";
    case Op::Prod:
    case Op::All: return T + "(1)";
    case Op::ReduceMax:
    case Op::ReduceMin: {
      const bool max = op == Op::ReduceMax;
      if (t == DType::f32) return max ? "(-__int_as_float(0x7f800000))" : "__int_as_float(0x7f800000)";
      if (t == DType::f64) {
        return max ? "(-__longlong_as_double(0x7ff0000000000000LL))" : "__longlong_as_double(0x7ff0000000000000LL)";
      }
      if (t == DType::bool_) return max ? "false" : "true";
      return "aj_t<" + T + ">::" + (max ? "lo()" : "hi()");
    }
    default: internal_error(std::string("cuda codegen: not a combiner: ") + op_name(op));
  }
}

// Per stream and axis: 0 stride zero (broadcast), 1 unit stride, 2 other.
int axis_kind(const KStream& s, std::size_t d) { return s.strides[d] == 0 ? 0 : s.strides[d] == 1 ? 1 : 2; }

class Renderer {
 public:
  explicit Renderer(const Kernel& k) : k_(k), R_(k.shape.size()), nin_(k.inputs.size()) {
    for (auto& s : k.inputs) streams_.push_back(&s);
    for (auto& o : k.outputs) streams_.push_back(&o.stream);
    red_.assign(R_, false);
    for (auto a : k.reduce_axes) red_[static_cast<std::size_t>(a)] = true;
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      const bool memory = s >= nin_ || !streams_[s]->index_only;
      if (memory) max_item_ = std::max(max_item_, itemsize(streams_[s]->dtype));
    }
  }

  KernelSource run() {
    KernelSource out;
    out.reduction = k_.is_reduction();
    os_ << "// arrayjit CUDA kernel: rank " << R_ << (out.reduction ? ", reduction" : ", elementwise")
        << " (generated by jit/cuda/cuda_source.cpp)\n"
        << kPrelude;
    params();
    if (out.reduction) {
      reduction_blocks();
      reduction_finish();
      reduction_serial();
    } else {
      out.vec = vector_width();
      elementwise(out.vec);
    }
    out.source = os_.str();
    out.hash = fnv1a(out.source);
    out.param_bytes = param_slots() * 8;
    return out;
  }

  std::size_t param_slots() const {
    const std::size_t S = streams_.size(), NS = std::max<std::size_t>(1, k_.scalars.size());
    return 4 + R_ + S + S * R_ + 2 * NS + S + 1;
  }

 private:
  // The parameter block: every field 8 bytes, so host packing is a flat array.
  void params() {
    const std::size_t S = streams_.size(), NS = std::max<std::size_t>(1, k_.scalars.size());
    os_ << "\nstruct P {\n  i64 n, ninner, parts, vec;\n  i64 shape[" << R_ << "];\n  i64 off[" << S
        << "];\n  i64 str[" << S << "][" << R_ << "];\n  i64 si[" << NS << "];\n  double sf[" << NS
        << "];\n  void* ptr[" << S << "];\n  void* scratch;\n};\n";
  }

  // Elements per 16-byte access of the widest stream, when the kernel has the
  // shape the vector path needs: rank 1, every memory stream unit or zero stride.
  int vector_width() const {
    if (R_ != 1 || max_item_ == 0) return 0;
    bool unit = false;
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      if (s < nin_ && streams_[s]->index_only) continue;
      const int kind = axis_kind(*streams_[s], 0);
      if (kind == 2) return 0;
      unit |= kind == 1;
    }
    return unit ? static_cast<int>(16 / max_item_) : 0;
  }

  // "p.off[s] + c0 * p.str[s][0] + c1" over the axes in `axes`.
  std::string offset(std::size_t s, const std::vector<std::size_t>& axes, const std::string& base) const {
    std::string e = base.empty() ? "p.off[" + std::to_string(s) + "]" : base;
    for (std::size_t d : axes) {
      switch (axis_kind(*streams_[s], d)) {
        case 0: break;
        case 1: e += " + c" + std::to_string(d); break;
        default: e += " + c" + std::to_string(d) + " * p.str[" + std::to_string(s) + "][" + std::to_string(d) + "]";
      }
    }
    return e;
  }

  // Decompose linear position `lin` over `axes` (row-major) into c<d> variables.
  void coords(const std::vector<std::size_t>& axes, const std::string& lin, const std::string& ind) {
    if (axes.empty()) return;
    if (axes.size() == 1) {
      os_ << ind << "const i64 c" << axes[0] << " = " << lin << ";\n";
      return;
    }
    os_ << ind << "i64 rest_ = " << lin << ";\n";
    for (std::size_t a = axes.size(); a-- > 1;) {
      const std::size_t d = axes[a];
      os_ << ind << "const i64 c" << d << " = rest_ % p.shape[" << d << "]; rest_ /= p.shape[" << d << "];\n";
    }
    os_ << ind << "const i64 c" << axes[0] << " = rest_;\n";
  }

  // Which streams a phase touches: loaded inputs, index streams, stored outputs.
  std::vector<std::size_t> streams_of_phase(int phase) const {
    std::vector<bool> used(streams_.size(), false);
    for (const KInstr& in : k_.instrs) {
      if (in.phase != phase) continue;
      if (in.kind == KOp::Load || in.kind == KOp::Index) used[static_cast<std::size_t>(in.arg)] = true;
    }
    for (std::size_t j = 0; j < k_.outputs.size(); ++j) {
      if (k_.outputs[j].phase == phase) used[nin_ + j] = true;
    }
    std::vector<std::size_t> out;
    for (std::size_t s = 0; s < used.size(); ++s) {
      if (used[s]) out.push_back(s);
    }
    return out;
  }

  std::string dt(std::int32_t v) const { return ctype(k_.instrs[static_cast<std::size_t>(v)].dtype); }

  // The SSA statements of one phase. load(s) / index(s): expressions for the
  // element of input stream s / the flat index of index stream s here.
  void body(int phase, const std::function<std::string(std::size_t)>& load,
            const std::function<std::string(std::size_t)>& index, const std::string& ind) {
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.phase != phase) continue;
      const std::string T = ctype(in.dtype);
      const std::string a = "v" + std::to_string(in.a), b = "v" + std::to_string(in.b),
                        c = "v" + std::to_string(in.c);
      std::string e;
      switch (in.kind) {
        case KOp::Load: e = load(static_cast<std::size_t>(in.arg)); break;
        case KOp::Const: {
          const auto s = std::to_string(in.arg);
          const bool fs = is_float(k_.scalars[static_cast<std::size_t>(in.arg)].dtype);
          const std::string v = fs ? "p.sf[" + s + "]" : "p.si[" + s + "]";
          // cpu::scalar_as: bool is "!= 0", the rest a plain conversion.
          e = in.dtype == DType::bool_ ? "(" + v + (fs ? " != 0.0)" : " != 0)") : "(" + T + ")" + v;
          break;
        }
        case KOp::Index: e = generator(in, index(static_cast<std::size_t>(in.arg))); break;
        case KOp::Unary: {
          const DType from = k_.instrs[static_cast<std::size_t>(in.a)].dtype;
          e = op_expr(in.op, from, in.dtype, a, "");
          break;
        }
        case KOp::Binary: {
          const DType t = k_.instrs[static_cast<std::size_t>(in.a)].dtype;
          e = op_expr(in.op, t, in.dtype, a, b);
          break;
        }
        case KOp::Where: e = "(" + a + " ? " + b + " : " + c + ")"; break;
        case KOp::Reduce: e = "acc" + std::to_string(j); break;
      }
      os_ << ind << "const " << T << " v" << j << " = " << e << ";\n";
    }
  }

  std::string generator(const KInstr& in, const std::string& i) const {
    const std::string T = ctype(in.dtype);
    const std::string s0 = std::to_string(in.a), s1 = std::to_string(in.a + 1),
                      s2 = std::to_string(in.a + 2), s3 = std::to_string(in.a + 3);
    switch (in.op) {
      case Op::Iota: return "aj_iota<" + T + ">(p.sf[" + s0 + "], p.sf[" + s1 + "], " + i + ")";
      case Op::Linspace:
        return "aj_linspace<" + T + ">(p.sf[" + s0 + "], p.sf[" + s1 + "], p.si[" + s3 + "], " + i + ")";
      case Op::Eye: return "aj_eye<" + T + ">(p.si[" + s2 + "], p.si[" + s3 + "], " + i + ")";
      case Op::RandUniform:
      case Op::RandNormal:
        if (!is_float(in.dtype)) internal_error("cuda codegen: random numbers of a non-float type");
        return std::string(in.op == Op::RandUniform ? "aj_rand_uniform<" : "aj_rand_normal<") + T +
               ">(p.sf[" + s0 + "], p.sf[" + s1 + "], p.si[" + s2 + "], " + i + ")";
      default: internal_error(std::string("cuda codegen: not a generator: ") + op_name(in.op));
    }
  }

  std::string ptr(std::size_t s, bool is_const) const {
    return std::string("((") + (is_const ? "const " : "") + ctype(streams_[s]->dtype) + "*)p.ptr[" +
           std::to_string(s) + "])";
  }

  // Scalar stores of a phase at offsets o<s>.
  void stores(int phase, const std::string& ind) {
    for (std::size_t j = 0; j < k_.outputs.size(); ++j) {
      const KOutput& o = k_.outputs[j];
      if (o.phase != phase) continue;
      const std::size_t s = nin_ + j;
      os_ << ind << ptr(s, false) << "[o" << s << "] = v" << o.value << ";\n";
    }
  }

  std::function<std::string(std::size_t)> load_at_o() const {
    return [this](std::size_t s) { return ptr(s, true) + "[o" + std::to_string(s) + "]"; };
  }
  static std::function<std::string(std::size_t)> index_at_o() {
    return [](std::size_t s) { return "o" + std::to_string(s); };
  }

  void elementwise(int vec) {
    os_ << "\nextern \"C\" __global__ void __launch_bounds__(" << kBlock << ") aj_k(const P p) {\n"
        << "  const i64 n = p.n;\n  const i64 step = (i64)gridDim.x * blockDim.x;\n"
        << "  i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n";
    const auto used = streams_of_phase(0);
    if (vec > 0) vector_path(vec, used);
    os_ << "  for (i64 i = first; i < n; i += step) {\n";
    std::vector<std::size_t> axes;
    for (std::size_t d = 0; d < R_; ++d) axes.push_back(d);
    coords(axes, "i", "    ");
    for (std::size_t s : used) os_ << "    const i64 o" << s << " = " << offset(s, axes, "") << ";\n";
    body(0, load_at_o(), index_at_o(), "    ");
    stores(0, "    ");
    os_ << "  }\n}\n";
  }

  // Each thread takes `vec` consecutive points: one wide load per unit-stride
  // input, the body unrolled over the lanes, one wide store per output. The
  // scalar loop after it finishes the last n % vec points.
  void vector_path(int vec, const std::vector<std::size_t>& used) {
    const std::string V = std::to_string(vec);
    auto vt = [&](std::size_t s) { return std::string("aj_vec<") + ctype(streams_[s]->dtype) + ", " + V + ">"; };
    auto unit = [&](std::size_t s) { return axis_kind(*streams_[s], 0) == 1; };
    os_ << "  if (p.vec) {\n    const i64 nv = n / " << V << ";\n"
        << "    for (i64 ch = first; ch < nv; ch += step) {\n      const i64 base = ch * " << V << ";\n";
    for (std::size_t s : used) {
      if (s >= nin_ || streams_[s]->index_only || !unit(s)) continue;
      os_ << "      const " << vt(s) << " w" << s << " = *(const " << vt(s) << "*)(" << ptr(s, true)
          << " + p.off[" << s << "] + base);\n";
    }
    for (std::size_t j = 0; j < k_.outputs.size(); ++j) os_ << "      " << vt(nin_ + j) << " r" << nin_ + j << ";\n";
    os_ << "#pragma unroll\n      for (int e = 0; e < " << V << "; ++e) {\n        const i64 i = base + e;\n";
    auto load = [&](std::size_t s) {
      return unit(s) ? "w" + std::to_string(s) + ".v[e]" : ptr(s, true) + "[p.off[" + std::to_string(s) + "]]";
    };
    auto index = [&](std::size_t s) {
      const std::string off = "p.off[" + std::to_string(s) + "]";
      switch (axis_kind(*streams_[s], 0)) {
        case 0: return off;
        case 1: return "(" + off + " + i)";
        default: return "(" + off + " + i * p.str[" + std::to_string(s) + "][0])";
      }
    };
    body(0, load, index, "        ");
    for (std::size_t j = 0; j < k_.outputs.size(); ++j) {
      os_ << "        r" << nin_ + j << ".v[e] = v" << k_.outputs[j].value << ";\n";
    }
    os_ << "      }\n";
    for (std::size_t j = 0; j < k_.outputs.size(); ++j) {
      const std::size_t s = nin_ + j;
      if (unit(s)) {
        os_ << "      *(" << vt(s) << "*)(" << ptr(s, false) << " + p.off[" << s << "] + base) = r" << s << ";\n";
      } else {  // a stride-0 output exists only when n == 1; keep the last lane
        os_ << "      " << ptr(s, false) << "[p.off[" << s << "]] = r" << s << ".v[" << vec - 1 << "];\n";
      }
    }
    os_ << "    }\n    first += nv * " << V << ";\n  }\n";
  }

  std::vector<std::size_t> axes_where(bool reduced) const {
    std::vector<std::size_t> a;
    for (std::size_t d = 0; d < R_; ++d) {
      if (red_[d] == reduced) a.push_back(d);
    }
    return a;
  }

  std::vector<std::size_t> reduce_instrs() const {
    std::vector<std::size_t> r;
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      if (k_.instrs[j].kind == KOp::Reduce) r.push_back(j);
    }
    return r;
  }

  // At outer point `o`: coordinates, base offsets b<s> of every stream.
  void outer_bases(const std::string& ind) {
    coords(axes_where(false), "o", ind);
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      os_ << ind << "const i64 b" << s << " = " << offset(s, axes_where(false), "") << ";\n";
    }
  }

  void init_accs(const std::string& ind) {
    for (std::size_t j : reduce_instrs()) {
      const KInstr& in = k_.instrs[j];
      os_ << ind << ctype(in.dtype) << " acc" << j << " = " << identity_expr(in.op, in.dtype) << ";\n";
    }
  }

  // The phase-0 work at reduced position `i`: body, fold into accumulators,
  // phase-0 stores.
  void inner_point(const std::string& i, const std::string& ind) {
    const auto inner = axes_where(true);
    coords(inner, i, ind);
    for (std::size_t s : streams_of_phase(0)) {
      os_ << ind << "const i64 o" << s << " = " << offset(s, inner, "b" + std::to_string(s)) << ";\n";
    }
    body(0, load_at_o(), index_at_o(), ind);
    for (std::size_t j : reduce_instrs()) {
      const KInstr& in = k_.instrs[j];
      const std::string acc = "acc" + std::to_string(j);
      os_ << ind << acc << " = " << combine_expr(in.op, in.dtype, acc, "v" + std::to_string(in.a)) << ";\n";
    }
    stores(0, ind);
  }

  // Phase 1 at the outer point (its loads have stride 0 on reduce axes).
  void epilogue(const std::string& ind) {
    for (std::size_t s : streams_of_phase(1)) os_ << ind << "const i64 o" << s << " = b" << s << ";\n";
    body(1, load_at_o(), index_at_o(), ind);
    stores(1, ind);
  }

  // Combine every accumulator across the block; the result is in thread 0.
  void block_reduce(const std::string& ind) {
    for (std::size_t j : reduce_instrs()) {
      const KInstr& in = k_.instrs[j];
      const std::string T = ctype(in.dtype), acc = "acc" + std::to_string(j);
      const std::string comb = combine_expr(in.op, in.dtype, acc, "y_");
      os_ << ind << "{\n" << ind << "  __shared__ " << T << " sm_[32];\n"
          << ind << "  for (int d = 16; d > 0; d >>= 1) { const " << T << " y_ = aj_shfl_down(" << acc
          << ", d); " << acc << " = " << comb << "; }\n"
          << ind << "  if ((threadIdx.x & 31) == 0) sm_[threadIdx.x >> 5] = " << acc << ";\n"
          << ind << "  __syncthreads();\n"
          << ind << "  if (threadIdx.x < 32) {\n"
          << ind << "    " << acc << " = threadIdx.x < (blockDim.x >> 5) ? sm_[threadIdx.x] : "
          << identity_expr(in.op, in.dtype) << ";\n"
          << ind << "    for (int d = 16; d > 0; d >>= 1) { const " << T << " y_ = aj_shfl_down(" << acc
          << ", d); " << acc << " = " << comb << "; }\n"
          << ind << "  }\n" << ind << "  __syncthreads();\n" << ind << "}\n";
    }
  }

  std::string scratch_slot(std::size_t r, DType t) const {
    return std::string("((") + ctype(t) + "*)((char*)p.scratch + 8 * ((o * p.parts + part) * " +
           std::to_string(reduce_instrs().size()) + " + " + std::to_string(r) + ")))[0]";
  }

  void reduction_blocks() {
    os_ << "\nextern \"C\" __global__ void __launch_bounds__(" << kBlock << ") aj_k(const P p) {\n"
        << "  const i64 total = p.n * p.parts;\n"
        << "  for (i64 blk = blockIdx.x; blk < total; blk += gridDim.x) {\n"
        << "    const i64 o = blk / p.parts, part = blk % p.parts;\n";
    outer_bases("    ");
    init_accs("    ");
    os_ << "    const i64 lo = p.ninner * part / p.parts, hi = p.ninner * (part + 1) / p.parts;\n"
        << "    for (i64 i = lo + threadIdx.x; i < hi; i += blockDim.x) {\n";
    inner_point("i", "      ");
    os_ << "    }\n";
    block_reduce("    ");
    os_ << "    if (threadIdx.x == 0) {\n      if (p.parts == 1) {\n";
    epilogue("        ");
    os_ << "      } else {\n";
    const auto red = reduce_instrs();
    for (std::size_t r = 0; r < red.size(); ++r) {
      os_ << "        " << scratch_slot(r, k_.instrs[red[r]].dtype) << " = acc" << red[r] << ";\n";
    }
    os_ << "      }\n    }\n  }\n}\n";
  }

  void reduction_finish() {
    os_ << "\nextern \"C\" __global__ void __launch_bounds__(" << kBlock << ") aj_k_finish(const P p) {\n"
        << "  for (i64 o = blockIdx.x; o < p.n; o += gridDim.x) {\n";
    outer_bases("    ");
    init_accs("    ");
    os_ << "    for (i64 part = threadIdx.x; part < p.parts; part += blockDim.x) {\n";
    const auto red = reduce_instrs();
    for (std::size_t r = 0; r < red.size(); ++r) {
      const KInstr& in = k_.instrs[red[r]];
      const std::string acc = "acc" + std::to_string(red[r]);
      os_ << "      " << acc << " = " << combine_expr(in.op, in.dtype, acc, scratch_slot(r, in.dtype)) << ";\n";
    }
    os_ << "    }\n";
    block_reduce("    ");
    os_ << "    if (threadIdx.x == 0) {\n";
    epilogue("      ");
    os_ << "    }\n  }\n}\n";
  }

  void reduction_serial() {
    os_ << "\nextern \"C\" __global__ void __launch_bounds__(" << kBlock << ") aj_k_serial(const P p) {\n"
        << "  const i64 step = (i64)gridDim.x * blockDim.x;\n"
        << "  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < p.n; o += step) {\n";
    outer_bases("    ");
    init_accs("    ");
    os_ << "    for (i64 i = 0; i < p.ninner; ++i) {\n";
    inner_point("i", "      ");
    os_ << "    }\n";
    epilogue("    ");
    os_ << "  }\n}\n";
  }

  const Kernel& k_;
  std::size_t R_, nin_;
  std::vector<const KStream*> streams_;
  std::vector<bool> red_;
  std::size_t max_item_ = 0;
  std::ostringstream os_;
};

}  // namespace

Kernel collapse_axes(const Kernel& k) {
  const std::size_t R = k.shape.size();
  std::vector<bool> red(R, false);
  for (auto a : k.reduce_axes) red[static_cast<std::size_t>(a)] = true;
  Kernel c = k;
  std::vector<KStream*> streams;
  for (auto& s : c.inputs) streams.push_back(&s);
  for (auto& o : c.outputs) streams.push_back(&o.stream);

  // Axes kept: extent != 1. A reduction keeps at least one reduced axis and
  // every kernel at least one axis (extent 1, stride 0) so the source shape
  // does not depend on which extents happen to be 1 everywhere.
  std::vector<std::int64_t> shape;
  std::vector<bool> kred;
  std::vector<std::vector<std::int64_t>> str(streams.size());
  auto stride = [&](std::size_t s, std::size_t d) {
    return s < k.inputs.size() ? k.inputs[s].strides[d] : k.outputs[s - k.inputs.size()].stream.strides[d];
  };
  auto push = [&](std::int64_t extent, bool r, std::size_t d, bool synthetic) {
    shape.push_back(extent);
    kred.push_back(r);
    for (std::size_t s = 0; s < streams.size(); ++s) str[s].push_back(synthetic ? 0 : stride(s, d));
  };
  for (std::size_t d = 0; d < R; ++d) {
    if (k.shape[d] == 1) continue;
    // Merge into the previous kept axis when every stream walks both as one.
    if (!shape.empty() && kred.back() == red[d]) {
      bool merge = true;
      for (std::size_t s = 0; s < streams.size(); ++s) merge &= str[s].back() == stride(s, d) * k.shape[d];
      if (merge) {
        shape.back() *= k.shape[d];
        for (std::size_t s = 0; s < streams.size(); ++s) str[s].back() = stride(s, d);
        continue;
      }
    }
    push(k.shape[d], red[d], d, false);
  }
  const bool any_red = std::find(kred.begin(), kred.end(), true) != kred.end();
  if (k.is_reduction() && !any_red) push(1, true, 0, true);
  if (shape.empty()) push(1, false, 0, true);

  c.shape = shape;
  c.reduce_axes.clear();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (kred[d]) c.reduce_axes.push_back(static_cast<std::int64_t>(d));
  }
  for (std::size_t s = 0; s < streams.size(); ++s) streams[s]->strides = str[s];
  return c;
}

KernelSource render(const Kernel& collapsed) { return Renderer(collapsed).run(); }

std::int64_t outer_points(const Kernel& k) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < k.shape.size(); ++d) {
    if (std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) == k.reduce_axes.end()) {
      n *= k.shape[d];
    }
  }
  return n;
}

std::int64_t inner_points(const Kernel& k) {
  std::int64_t n = 1;
  for (auto a : k.reduce_axes) n *= k.shape[static_cast<std::size_t>(a)];
  return n;
}

bool innermost_is_outer(const Kernel& k) {
  return !k.shape.empty() && (k.reduce_axes.empty() || k.reduce_axes.back() != static_cast<std::int64_t>(k.shape.size()) - 1);
}

int reductions(const Kernel& k) {
  int n = 0;
  for (auto& in : k.instrs) n += in.kind == KOp::Reduce;
  return n;
}

std::vector<std::int64_t> pack_params(const Kernel& k, const std::vector<std::uint64_t>& ptrs,
                                      const LaunchShape& shape, std::uint64_t scratch) {
  const std::size_t S = k.inputs.size() + k.outputs.size();
  if (ptrs.size() != S) internal_error("cuda pack_params: one pointer per stream expected");
  std::vector<std::int64_t> p;
  const bool red = k.is_reduction();
  p.push_back(red ? outer_points(k) : k.points());
  p.push_back(red ? inner_points(k) : 1);
  p.push_back(shape.parts);
  p.push_back(shape.vec ? 1 : 0);
  for (auto e : k.shape) p.push_back(e);
  auto stream = [&](std::size_t s) -> const KStream& {
    return s < k.inputs.size() ? k.inputs[s] : k.outputs[s - k.inputs.size()].stream;
  };
  for (std::size_t s = 0; s < S; ++s) p.push_back(stream(s).offset);
  for (std::size_t s = 0; s < S; ++s) {
    for (auto st : stream(s).strides) p.push_back(st);
  }
  const std::size_t NS = std::max<std::size_t>(1, k.scalars.size());
  for (std::size_t i = 0; i < NS; ++i) p.push_back(i < k.scalars.size() ? k.scalars[i].i : 0);
  for (std::size_t i = 0; i < NS; ++i) {
    std::int64_t bits = 0;
    if (i < k.scalars.size()) std::memcpy(&bits, &k.scalars[i].f, 8);
    p.push_back(bits);
  }
  for (auto a : ptrs) p.push_back(static_cast<std::int64_t>(a));
  p.push_back(static_cast<std::int64_t>(scratch));
  return p;
}

}  // namespace aj::cuda

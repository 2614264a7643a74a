// Templates of compiled traces, checked and instantiated at new extents
// (compile/extents.hpp; the design: docs/extent-replays.md).
#include "core/compile/extents.hpp"

#include <algorithm>
#include <bit>
#include <optional>
#include <unordered_map>

#include "base/index_rules.hpp"
#include "base/op.hpp"
#include "core/api/trace.hpp"
#include "graph/library.hpp"

namespace aj::detail::extents {

namespace {

// ---- polynomials --------------------------------------------------------------
// Integer polynomials over atoms: while a template is captured the atoms are
// its variables (below), once resolved they are its symbols.

struct Term {
  std::int64_t coef = 0;
  std::vector<int> atoms;  // sorted; empty: the constant term
};
using Poly = std::vector<Term>;  // sorted by atoms, no zero coefficients

Poly normalized(Poly p) {
  std::sort(p.begin(), p.end(), [](const Term& a, const Term& b) { return a.atoms < b.atoms; });
  Poly out;
  for (Term& t : p) {
    if (!out.empty() && out.back().atoms == t.atoms) {
      out.back().coef += t.coef;
    } else {
      out.push_back(std::move(t));
    }
    if (out.back().coef == 0) out.pop_back();
  }
  return out;
}
Poly cst(std::int64_t v) { return v ? Poly{{v, {}}} : Poly{}; }
Poly atom(int a) { return Poly{{1, {a}}}; }
Poly add(const Poly& a, const Poly& b) {
  Poly r = a;
  r.insert(r.end(), b.begin(), b.end());
  return normalized(std::move(r));
}
Poly mul(const Poly& a, const Poly& b) {
  Poly r;
  for (const Term& x : a) {
    for (const Term& y : b) {
      Term t{x.coef * y.coef, x.atoms};
      t.atoms.insert(t.atoms.end(), y.atoms.begin(), y.atoms.end());
      std::sort(t.atoms.begin(), t.atoms.end());
      r.push_back(std::move(t));
    }
  }
  return normalized(std::move(r));
}
bool same(const Poly& a, const Poly& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].coef != b[k].coef || a[k].atoms != b[k].atoms) return false;
  }
  return true;
}
bool is_const(const Poly& p) { return p.empty() || (p.size() == 1 && p[0].atoms.empty()); }
// The value at `vals` (indexed by atom); nullopt on int64 overflow.
std::optional<std::int64_t> eval(const Poly& p, const std::vector<std::int64_t>& vals) {
  std::int64_t sum = 0;
  for (const Term& t : p) {
    std::int64_t v = t.coef;
    for (int a : t.atoms) {
      if (__builtin_mul_overflow(v, vals[static_cast<std::size_t>(a)], &v)) return std::nullopt;
    }
    if (__builtin_add_overflow(sum, v, &sum)) return std::nullopt;
  }
  return sum;
}
std::string show(const Poly& p) {
  if (p.empty()) return "0";
  std::string s;
  for (const Term& t : p) {
    if (!s.empty()) s += t.coef < 0 ? " - " : " + ";
    else if (t.coef < 0) s += "-";
    const std::int64_t c = t.coef < 0 ? -t.coef : t.coef;
    if (c != 1 || t.atoms.empty()) s += std::to_string(c) + (t.atoms.empty() ? "" : "*");
    for (std::size_t k = 0; k < t.atoms.size(); ++k) s += (k ? "*s" : "s") + std::to_string(t.atoms[k]);
  }
  return s;
}

// ---- the template --------------------------------------------------------------

// An extent of the trace. Variables are unified (union-find) where the IR
// says two extents are equal; a root is free (a broadcast's new extent,
// whatever its consumers make it), a symbol (an argument's extent) or an
// expression over other variables.
struct Var {
  enum class Kind { free, symbol, expr };
  int parent = 0;
  Kind kind = Kind::free;
  Poly e;                // expr: over variables
  int sym = -1;          // symbol: its number
  std::int64_t value = 0;  // in this trace
  bool fit = false;      // the rules could not say: validate fits it
  int fit_base = -1;     // a variable whose expression plus a constant is tried first
};

// Two extents a rule needs equal (or ordered): over variables while
// captured, over symbols once validated.
struct Guard {
  Poly a, b;
  bool le = false;  // a <= b (else a == b)
};

struct TNode {
  Op op = Op::Input;
  DType dtype = DType::f32;
  Shape shape;             // in this trace
  std::vector<int> dims;   // a variable per axis
  std::vector<int> inputs;  // template nodes
  int after = -1;           // the ordering-only input (graph/graph.hpp: Node::after), or -1
  int arg = -1;            // an argument leaf: its number among the array arguments
  std::shared_ptr<Storage> storage;  // another evaluated leaf: held as it is
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
  std::int64_t i0 = 0, i1 = 0;
  double f0 = 0.0, f1 = 0.0;
  std::vector<std::int64_t> ints;
  Loc loc;
  bool from_extent = false;  // a Constant the library made from an extent (mean's count)
  // Set by validate:
  enum class Value { as_traced, extent, reciprocal, scalar } value = Value::as_traced;  // a Constant's
  Poly value_of;            // the extent (over symbols) that value is made from
  int scalar = -1;          // Value::scalar: the scalar argument it is
  std::vector<Poly> starts;  // Slice, Pad: each axis's start (over symbols)
  // A Slice's axes whose bounds were given from the end (omitted or
  // negative; aj::slice's arguments), walked backwards or empty: at other
  // extents their start and count are what aj::slice gives there, or the
  // call is traced.
  struct GivenAxis {
    int axis = 0;
    std::optional<std::int64_t> start, stop;
    std::int64_t step = 1;
    bool operator==(const GivenAxis&) const = default;
  };
  std::vector<GivenAxis> given;
};

}  // namespace

struct Template {
  std::vector<TNode> nodes;
  std::vector<int> results;
  std::vector<Var> vars;
  std::vector<std::pair<int, int>> syms;  // (argument, axis) of each symbol
  std::vector<std::int64_t> sym_values;   // in this trace
  std::vector<Scalar> scalars;            // the changeable scalar arguments, in this trace
  std::vector<int> pinned_scalars;        // once validated: those that must keep their value
  std::vector<Guard> guards;              // over variables
  // Once validated:
  bool trusted = false;
  // Symbols that are quotients of the arguments' (a split reshape's -1:
  // [4 * n] to [n, 4] makes n = s / 4): symbol syms.size() + j is
  // quotients[j].of (over argument symbols) divided by quotients[j].by.
  struct Quotient {
    Poly of;
    std::int64_t by = 1;
  };
  std::vector<Quotient> quotients;
  std::vector<std::vector<Poly>> dims;  // per node and axis, over symbols
  std::vector<Guard> checks;            // over symbols
};

namespace {

int find(Template& t, int v) {
  while (t.vars[static_cast<std::size_t>(v)].parent != v) {
    Var& x = t.vars[static_cast<std::size_t>(v)];
    x.parent = t.vars[static_cast<std::size_t>(x.parent)].parent;
    v = x.parent;
  }
  return v;
}

int new_var(Template& t, Var::Kind k, std::int64_t value, Poly e = {}) {
  Var v;
  v.parent = static_cast<int>(t.vars.size());
  v.kind = k;
  v.value = value;
  v.e = std::move(e);
  t.vars.push_back(std::move(v));
  return static_cast<int>(t.vars.size()) - 1;
}
int constant_var(Template& t, std::int64_t v) { return new_var(t, Var::Kind::expr, v, cst(v)); }
// A number the rules cannot say (validate fits it), first tried as variable
// `base`'s expression plus a constant when given.
int fit_var(Template& t, std::int64_t v, int base = -1) {
  const int k = constant_var(t, v);
  t.vars[static_cast<std::size_t>(k)].fit = true;
  t.vars[static_cast<std::size_t>(k)].fit_base = base;
  return k;
}

// The IR says extents a and b are equal: false if this trace says otherwise.
bool unify(Template& t, int a, int b) {
  a = find(t, a), b = find(t, b);
  if (a == b) return true;
  Var &x = t.vars[static_cast<std::size_t>(a)], &y = t.vars[static_cast<std::size_t>(b)];
  if (x.value != y.value) return false;
  if (x.kind == Var::Kind::free) {
    x.parent = b;
  } else if (y.kind == Var::Kind::free) {
    y.parent = a;
  } else {
    // Both say what they are: each keeps its expression, the equality is
    // checked wherever the template is used.
    t.guards.push_back({atom(a), atom(b), false});
  }
  return true;
}

// The extents of node `n` (its inputs' are known) by the IR's shape rules.
bool derive(Template& t, TNode& n, std::string* why) {
  auto in = [&](std::size_t k) -> TNode& { return t.nodes[static_cast<std::size_t>(n.inputs[k])]; };
  const int rank = n.shape.ndim();
  auto same_as = [&](std::size_t k) {
    if (in(k).shape.ndim() != rank) return false;
    n.dims = in(k).dims;
    return true;
  };
  auto unify_all = [&](std::size_t from) {
    for (std::size_t k = from; k < n.inputs.size(); ++k) {
      if (in(k).shape.ndim() != rank) return false;
      for (int d = 0; d < rank; ++d) {
        if (!unify(t, n.dims[static_cast<std::size_t>(d)], in(k).dims[static_cast<std::size_t>(d)])) return false;
      }
    }
    return true;
  };
  auto constants = [&](bool fit) {
    n.dims.clear();
    for (std::int64_t d : n.shape) n.dims.push_back(fit ? fit_var(t, d) : constant_var(t, d));
  };
  // Unify axes of a and b but `skip` (a gather's or scatter's axis).
  auto unify_but = [&](const TNode& a, const TNode& b, std::int64_t skip) {
    if (a.shape.ndim() != b.shape.ndim()) return false;
    for (int d = 0; d < a.shape.ndim(); ++d) {
      if (d != skip && !unify(t, a.dims[static_cast<std::size_t>(d)], b.dims[static_cast<std::size_t>(d)])) return false;
    }
    return true;
  };
  bool ok = true;
  switch (op_category(n.op)) {
    case OpCategory::Leaf:
      if (n.op == Op::Constant) {  // its consumer's shape (graph/graph.hpp), as a broadcast's new extents
        for (std::int64_t d : n.shape) n.dims.push_back(new_var(t, Var::Kind::free, d));
      } else {
        constants(false);
      }
      break;
    case OpCategory::Generator:
      constants(true);
      break;
    case OpCategory::Unary:
    case OpCategory::Binary:
    case OpCategory::Ternary:
    case OpCategory::Scan:
      ok = same_as(0) && unify_all(1);
      break;
    case OpCategory::Reduce: {
      const TNode& x = in(0);
      for (int d = 0; d < x.shape.ndim(); ++d) {
        if (std::find(n.ints.begin(), n.ints.end(), d) == n.ints.end()) n.dims.push_back(x.dims[static_cast<std::size_t>(d)]);
      }
      ok = static_cast<int>(n.dims.size()) == rank;
      break;
    }
    case OpCategory::View:
      switch (n.op) {
        case Op::Transpose:
          for (std::int64_t p : n.ints) n.dims.push_back(in(0).dims[static_cast<std::size_t>(p)]);
          ok = static_cast<int>(n.dims.size()) == rank;
          break;
        case Op::Broadcast: {
          const TNode& x = in(0);
          const int off = rank - x.shape.ndim();
          ok = off >= 0;
          for (int d = 0; ok && d < rank; ++d) {
            if (d >= off && x.shape[d - off] == n.shape[d]) {
              n.dims.push_back(x.dims[static_cast<std::size_t>(d - off)]);
            } else {
              n.dims.push_back(new_var(t, Var::Kind::free, n.shape[d]));
            }
          }
          break;
        }
        case Op::Slice: {
          const TNode& x = in(0);
          ok = x.shape.ndim() == rank && n.ints.size() == 2 * static_cast<std::size_t>(rank);
          for (int d = 0; ok && d < rank; ++d) {
            const std::size_t s = static_cast<std::size_t>(d);
            if (n.shape[d] == x.shape[d] && n.ints[2 * s] == 0 && n.ints[2 * s + 1] == 1) {
              n.dims.push_back(x.dims[s]);
            } else {
              n.dims.push_back(fit_var(t, n.shape[d], x.dims[s]));
            }
          }
          break;
        }
        case Op::Reshape: {
          // Runs of input and output axes with equal products; a run with one
          // output extent above 1 is the product of its input extents.
          const TNode& x = in(0);
          const int xr = x.shape.ndim();
          int i = 0, o = 0;
          n.dims.assign(static_cast<std::size_t>(rank), -1);
          while (ok && (i < xr || o < rank)) {
            std::int64_t pi = 1, po = 1;
            const int i0 = i, o0 = o;
            if (i < xr) pi *= x.shape[i++];
            if (o < rank) po *= n.shape[o++];
            while (pi != po) {
              if (pi < po && i < xr) pi *= x.shape[i++];
              else if (po < pi && o < rank) po *= n.shape[o++];
              else break;
            }
            if (pi != po) {
              ok = false;
              break;
            }
            // Trailing 1s join this run.
            while (i < xr && x.shape[i] == 1 && !(o < rank && n.shape[o] == 1)) ++i;
            int big = 0;
            for (int d = o0; d < o; ++d) big += n.shape[d] != 1;
            Poly prod = cst(1);
            for (int d = i0; d < i; ++d) prod = mul(prod, atom(x.dims[static_cast<std::size_t>(d)]));
            for (int d = o0; d < o; ++d) {
              const std::size_t s = static_cast<std::size_t>(d);
              if (n.shape[d] == 1) {
                n.dims[s] = constant_var(t, 1);
              } else if (big == 1) {
                n.dims[s] = i - i0 == 1 ? x.dims[static_cast<std::size_t>(i0)] : new_var(t, Var::Kind::expr, n.shape[d], prod);
              } else {
                n.dims[s] = fit_var(t, n.shape[d]);
              }
            }
          }
          if (ok) {  // the element counts agree wherever the template is used
            Poly a = cst(1), b = cst(1);
            for (int d : x.dims) a = mul(a, atom(d));
            for (int d : n.dims) b = mul(b, atom(d));
            t.guards.push_back({std::move(a), std::move(b), false});
          }
          break;
        }
        default:
          ok = false;
      }
      break;
    case OpCategory::Remap:
      if (n.op == Op::Gather) {  // out: idx's shape; a's too but for axis i0
        ok = same_as(1) && unify_but(in(0), in(1), n.i0);
      } else if (n.op == Op::Pad) {
        // out: the fill's shape, which the library made from the input's
        // extents and the widths: each axis its input's extent plus a
        // constant, else fitted (a pad to a multiple). Not the fill's free
        // extents: a consumer would make them what it needs, and a call
        // where the pad's extent and its consumer's differ would not raise
        // as the function does.
        ok = in(0).shape.ndim() == rank && in(1).shape.ndim() == rank;
        for (int d = 0; ok && d < rank; ++d) {
          const int k = fit_var(t, n.shape[d], in(0).dims[static_cast<std::size_t>(d)]);
          ok = unify(t, in(1).dims[static_cast<std::size_t>(d)], k);
          n.dims.push_back(k);
        }
      } else {
        ok = false;
      }
      break;
    case OpCategory::Other:
      switch (n.op) {
        case Op::Concat: {
          ok = same_as(0);
          for (std::size_t k = 1; ok && k < n.inputs.size(); ++k) ok = unify_but(in(0), in(k), n.i0);
          if (ok) {
            Poly sum;
            for (std::size_t k = 0; k < n.inputs.size(); ++k) sum = add(sum, atom(in(k).dims[static_cast<std::size_t>(n.i0)]));
            n.dims[static_cast<std::size_t>(n.i0)] = new_var(t, Var::Kind::expr, n.shape[static_cast<int>(n.i0)], sum);
          }
          break;
        }
        case Op::MatMul: {
          const TNode &a = in(0), &b = in(1);
          ok = a.shape.ndim() == rank && b.shape.ndim() == rank && rank >= 2;
          for (int d = 0; ok && d < rank - 2; ++d) {
            ok = unify(t, a.dims[static_cast<std::size_t>(d)], b.dims[static_cast<std::size_t>(d)]);
          }
          ok = ok && unify(t, a.dims[static_cast<std::size_t>(rank - 1)], b.dims[static_cast<std::size_t>(rank - 2)]);
          if (ok) {
            n.dims.assign(a.dims.begin(), a.dims.end() - 1);
            n.dims.push_back(b.dims[static_cast<std::size_t>(rank - 1)]);
          }
          break;
        }
        case Op::Sort:
        case Op::ArgSort:
          ok = same_as(0);
          break;
        case Op::TopK:
        case Op::ArgTopK:
          ok = same_as(0) && n.i0 >= 0 && n.i0 < rank;
          if (ok) {
            const int k = fit_var(t, n.shape[static_cast<int>(n.i0)]);
            n.dims[static_cast<std::size_t>(n.i0)] = k;
            t.guards.push_back({atom(k), atom(in(0).dims[static_cast<std::size_t>(n.i0)]), true});  // k <= extent
          }
          break;
        case Op::Scatter:
        case Op::ScatterAdd:  // out: a's shape; idx and upd alike, a's but for axis i0
          ok = same_as(0) && in(1).shape.ndim() == rank && unify_but(in(1), in(2), -1) && unify_but(in(0), in(1), n.i0);
          break;
        case Op::Linalg: {
          // graph/library.hpp's shapes for a square a [..., n, n] (a guard:
          // rows = columns), each extent n or n plus a constant (for other
          // shapes, min(m, n) and max(m, n) appear: traced at new extents).
          const auto kind = static_cast<LinalgKind>(n.i0);
          const TNode& a = in(0);
          const int ar = a.shape.ndim();
          const int rows = a.dims[static_cast<std::size_t>(ar - 2)], cols = a.dims[static_cast<std::size_t>(ar - 1)];
          ok = a.shape[ar - 2] == a.shape[ar - 1] && unify(t, rows, cols);
          if (!ok) break;
          if (kind == LinalgKind::solve || kind == LinalgKind::triangular) {
            ok = same_as(1) && unify_but(a, in(1), ar - 1);
            break;
          }
          // [..., n * p + q, n] or [..., n]: the rows as an expression of n.
          n.dims.assign(a.dims.begin(), a.dims.end() - 2);
          if (rank == ar) {
            // For square operands the rows are linear in n: per n + plus,
            // read off linalg_shape itself at n = 1 and 2.
            const auto rows_at = [&](std::int64_t e) { return linalg_shape(kind, n.i1, Shape{e, e}, nullptr)[0]; };
            const std::int64_t per = rows_at(2) - rows_at(1), plus = rows_at(1) - per;
            ok = n.shape[rank - 2] == per * a.shape[ar - 1] + plus;
            if (!ok) break;
            n.dims.push_back(per == 1 && plus == 0 ? cols
                                                   : new_var(t, Var::Kind::expr, n.shape[rank - 2],
                                                             add(mul(cst(per), atom(cols)), cst(plus))));
          }
          n.dims.push_back(cols);
          break;
        }
        case Op::Conv: {
          if (n.i1 == kConvWeightGrad) {
            // [O, I, k...] from x [N, C, s...] and g [N, O, out...]: the
            // window's extents are constants, O is g's and I x's (both
            // pinned with groups other than 1), and g's points are the
            // convolution's, by the forward node's rule below.
            const TNode &x = in(0), &gy = in(1);
            ConvGeometry geo;
            ok = geo.unpack(n.ints) && x.shape.ndim() == rank && gy.shape.ndim() == rank;
            if (!ok) break;
            auto dim = [](const TNode& v, int a) { return v.dims[static_cast<std::size_t>(a)]; };
            ok = unify(t, dim(x, 0), dim(gy, 0));
            if (ok && n.i0 != 1) {
              ok = unify(t, dim(x, 1), constant_var(t, x.shape[1])) && unify(t, dim(gy, 1), constant_var(t, gy.shape[1]));
            }
            if (!ok) break;
            // N, C and O at least 1, and below every point extent: where
            // the step is taken (conv_as_library_step; else the composition).
            for (int d : {dim(x, 0), dim(x, 1), dim(gy, 1)}) t.guards.push_back({cst(1), atom(d), true});
            n.dims = {dim(gy, 1), n.i0 == 1 ? dim(x, 1) : constant_var(t, n.shape[1])};
            for (int a = 2; ok && a < rank; ++a) {
              const std::size_t i = static_cast<std::size_t>(a - 2);
              n.dims.push_back(constant_var(t, n.shape[a]));
              const std::int64_t plus = geo.lo[i] + geo.hi[i] - (n.shape[a] - 1) * geo.dilation[i];
              const int out = geo.stride[i] != 1 ? fit_var(t, gy.shape[a], dim(x, a))
                              : plus == 0       ? dim(x, a)
                                                : new_var(t, Var::Kind::expr, gy.shape[a], add(atom(dim(x, a)), cst(plus)));
              ok = unify(t, dim(gy, a), out);
              t.guards.push_back({cst(1), atom(dim(gy, a)), true});
            }
            break;
          }
          // [N, O, out...] from x [N, C, s...] and w [O, I, k...]: the
          // window's extents are constants; at stride 1 an output extent is
          // its input's plus a constant (at least 1: a result without points
          // is traced as the composition), at other strides fitted. Groups
          // other than 1 pin the feature extents.
          const TNode &x = in(0), &w = in(1);
          ConvGeometry geo;
          ok = geo.unpack(n.ints) && x.shape.ndim() == rank && w.shape.ndim() == rank;
          if (!ok) break;
          auto dim = [](const TNode& v, int a) { return v.dims[static_cast<std::size_t>(a)]; };
          auto at_least_1 = [&](Poly p) { t.guards.push_back({cst(1), std::move(p), true}); };
          if (n.i0 == 1) {
            ok = unify(t, dim(x, 1), dim(w, 1));
          } else {
            ok = unify(t, dim(x, 1), constant_var(t, x.shape[1])) && unify(t, dim(w, 1), constant_var(t, w.shape[1])) &&
                 unify(t, dim(w, 0), constant_var(t, w.shape[0]));
          }
          for (int a = 2; ok && a < rank; ++a) ok = unify(t, dim(w, a), constant_var(t, w.shape[a]));
          if (!ok) break;
          at_least_1(atom(dim(x, 0)));
          at_least_1(atom(dim(x, 1)));
          at_least_1(atom(dim(w, 0)));
          n.dims = {dim(x, 0), dim(w, 0)};
          for (int a = 2; a < rank; ++a) {
            const std::size_t i = static_cast<std::size_t>(a - 2);
            const std::int64_t plus = geo.lo[i] + geo.hi[i] - (w.shape[a] - 1) * geo.dilation[i];
            if (geo.stride[i] != 1) {
              n.dims.push_back(fit_var(t, n.shape[a], dim(x, a)));
            } else {
              n.dims.push_back(plus == 0 ? dim(x, a)
                                         : new_var(t, Var::Kind::expr, n.shape[a], add(atom(dim(x, a)), cst(plus))));
            }
            at_least_1(atom(n.dims.back()));
          }
          break;
        }
        case Op::Collective: {
          // all_reduce, broadcast, send: the operand's extents; all_gather:
          // axis 0 times the group's size (a constant of the process). recv
          // (a shape from C++) and reduce_scatter (a quotient) are traced at
          // new extents.
          const auto kind = static_cast<CollectiveKind>(n.i0);
          if (kind == CollectiveKind::all_reduce || kind == CollectiveKind::broadcast ||
              kind == CollectiveKind::send) {
            ok = same_as(0);
          } else if (kind == CollectiveKind::all_gather && rank >= 1 && in(0).shape.ndim() == rank &&
                     in(0).shape[0] > 0) {
            const std::int64_t p = n.shape[0] / in(0).shape[0];
            ok = n.shape[0] == p * in(0).shape[0];
            if (ok) {
              n.dims = in(0).dims;
              n.dims[0] = new_var(t, Var::Kind::expr, n.shape[0], mul(cst(p), atom(in(0).dims[0])));
            }
          } else {
            ok = false;
          }
          break;
        }
        default:
          ok = false;
      }
      break;
  }
  if (!ok) {
    *why = std::string("no extent rule for the ") + op_name(n.op) + " traced at " + loc_str(n.loc);
    return false;
  }
  for (std::size_t d = 0; d < n.dims.size(); ++d) {
    if (t.vars[static_cast<std::size_t>(find(t, n.dims[d]))].value != n.shape[static_cast<int>(d)]) {
      *why = std::string("the extents of the ") + op_name(n.op) + " traced at " + loc_str(n.loc) +
             " disagree with its inputs'";
      return false;
    }
  }
  return true;
}

// Variables as polynomials over symbols; `fits` gives roots an expression
// (over symbols) that replaces theirs.
class Resolver {
 public:
  Resolver(Template& t, const std::unordered_map<int, Poly>& fits) : t_(t), fits_(fits), memo_(t.vars.size()) {}
  std::optional<Poly> operator()(int v) {
    const int r = find(t_, v);
    auto& m = memo_[static_cast<std::size_t>(r)];
    if (m) return *m;
    if (auto f = fits_.find(r); f != fits_.end()) return *(m = f->second);
    const Var& x = t_.vars[static_cast<std::size_t>(r)];
    switch (x.kind) {
      case Var::Kind::free: return *(m = cst(x.value));
      case Var::Kind::symbol: return *(m = atom(x.sym));
      case Var::Kind::expr: break;
    }
    if (++depth_ > 10000) return std::nullopt;  // a cycle (a unification made one)
    std::optional<Poly> p = subst(x.e);
    --depth_;
    if (p) m = *p;
    return p;
  }
  std::optional<Poly> subst(const Poly& e) {
    Poly sum;
    for (const Term& term : e) {
      Poly prod = cst(term.coef);
      for (int a : term.atoms) {
        std::optional<Poly> pa = (*this)(a);
        if (!pa) return std::nullopt;
        prod = mul(prod, *pa);
      }
      sum = add(sum, prod);
    }
    return sum;
  }

 private:
  Template& t_;
  const std::unordered_map<int, Poly>& fits_;
  std::vector<std::optional<Poly>> memo_;
  int depth_ = 0;
};

// Whether trace::constant makes constant `c`'s value of `v` in c's dtype
// (no node is made: validating must leave the graph as the trace made it);
// false too where it would throw.
bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

bool makes(const Scalar& v, const TNode& c) {
  try {
    const Node n = trace::constant_node(v, c.dtype, "compile", Loc::current());
    return n.i0 == c.i0 && same_bits(n.f0, c.f0);
  } catch (const Error&) {
    return false;
  }
}

// The scalar a constant of dtype `t` made from extent value `e` in `form` is.
Scalar from_extent_value(TNode::Value form, std::int64_t e, DType t) {
  if (form == TNode::Value::reciprocal) return Scalar(1.0 / static_cast<double>(e));
  return is_float(t) ? Scalar(static_cast<double>(e)) : Scalar(e);
}


bool holds(const Guard& g, const std::vector<std::int64_t>& vals) {
  auto a = eval(g.a, vals), b = eval(g.b, vals);
  return a && b && (g.le ? *a <= *b : *a == *b);
}

}  // namespace

namespace {
// An evaluated node as a template leaf (an Input: whatever made it).
TNode evaluated_leaf(const Node& a) {
  TNode n;
  n.op = Op::Input;
  n.dtype = a.dtype;
  n.shape = a.shape;
  n.loc = a.loc;
  return n;
}
}  // namespace

std::shared_ptr<Template> capture(const std::vector<NodeId>& args, const std::vector<Scalar>& scalars,
                                  const std::vector<NodeId>& results, const std::vector<NodeId>& made,
                                  const std::vector<NodeId>& extent_constants, const SliceSpecs& slices,
                                  std::string* why) {
  Graph& g = graph();
  auto t = std::make_shared<Template>();
  t->scalars = scalars;
  std::unordered_map<NodeId, int> index;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (index.count(args[k])) {
      *why = "an array passed as two arguments";
      return nullptr;
    }
    const Node& a = g[args[k]];
    TNode n = evaluated_leaf(a);
    n.arg = static_cast<int>(k);
    for (int d = 0; d < a.shape.ndim(); ++d) {
      if (a.shape[d] <= 1) {
        n.dims.push_back(constant_var(*t, a.shape[d]));
        continue;
      }
      const int v = new_var(*t, Var::Kind::symbol, a.shape[d]);
      t->vars[static_cast<std::size_t>(v)].sym = static_cast<int>(t->syms.size());
      t->syms.emplace_back(static_cast<int>(k), d);
      t->sym_values.push_back(a.shape[d]);
      n.dims.push_back(v);
    }
    index.emplace(args[k], static_cast<int>(t->nodes.size()));
    t->nodes.push_back(std::move(n));
  }
  auto leaf = [&](NodeId id) {
    if (index.count(id)) return;
    const Node& a = g[id];
    TNode n = evaluated_leaf(a);
    n.storage = a.storage;
    n.strides = a.strides;
    n.offset = a.offset;
    for (std::int64_t d : a.shape) n.dims.push_back(constant_var(*t, d));
    index.emplace(id, static_cast<int>(t->nodes.size()));
    t->nodes.push_back(std::move(n));
  };
  // Each Slice node's slices as given, one list per aj::slice call that made
  // it (CSE may hand two calls one node).
  std::unordered_map<NodeId, std::vector<const std::vector<Slice>*>> given_of;
  for (const auto& [node, given] : slices) given_of[node].push_back(&given);
  std::vector<NodeId> roots;
  for (NodeId r : results) {
    if (!g[r].evaluated()) roots.push_back(r);
  }
  for (NodeId r : made) {  // (dropped ones: made again, checked, dropped again)
    if (!g[r].evaluated()) roots.push_back(r);
  }
  for (NodeId id : g.unevaluated_order(roots)) {
    const Node& a = g[id];
    TNode n;
    copy_payload(n, a);
    n.shape = a.shape;
    n.loc = a.loc;
    n.from_extent = a.op == Op::Constant &&
                    std::find(extent_constants.begin(), extent_constants.end(), id) != extent_constants.end();
    if (auto it = given_of.find(id); it != given_of.end() && a.op == Op::Slice) {
      for (const std::vector<Slice>* given_p : it->second) {
        const std::vector<Slice>& given = *given_p;
        for (std::size_t d = 0; d < given.size() && d < static_cast<std::size_t>(a.shape.ndim()); ++d) {
          const Slice& sl = given[d];
          // (Also a negative step, and an empty slice, whose node keeps no
          // start: each bound must lie inside the axis there too. Bounds the
          // library computes from extents are explicit, positive and
          // non-empty: their numbers follow the extents, fitted.)
          const bool from_end = !sl.start || *sl.start < 0 || !sl.stop || *sl.stop < 0 || sl.step < 0 ||
                                a.shape[static_cast<int>(d)] == 0;
          const bool whole = !sl.start && !sl.stop && sl.step == 1;
          TNode::GivenAxis g{static_cast<int>(d), sl.start, sl.stop, sl.step};
          if (from_end && !whole && std::find(n.given.begin(), n.given.end(), g) == n.given.end()) n.given.push_back(g);
        }
      }
    }
    for (NodeId in : a.inputs) {
      if (g[in].evaluated()) leaf(in);
      n.inputs.push_back(index.at(in));
    }
    if (a.after != kNoNode) {
      if (g[a.after].evaluated()) leaf(a.after);
      n.after = index.at(a.after);
    }
    if (!derive(*t, n, why)) return nullptr;
    index.emplace(id, static_cast<int>(t->nodes.size()));
    t->nodes.push_back(std::move(n));
  }
  for (NodeId r : results) {
    leaf(r);
    t->results.push_back(index.at(r));
  }
  return t;
}

namespace {
// The element counts of the reductions that constant `k` is combined with
// (through views and casts): the extents a divisor like mean's is made of.
std::vector<Poly> met_counts(const Template& t, const std::vector<std::vector<Poly>>& dims, std::size_t k) {
  auto passes = [&](const TNode& n) { return is_view(n.op) || n.op == Op::Cast; };
  // The nodes reading k, through views and casts.
  std::vector<std::size_t> from{k}, users;
  for (std::size_t i = 0; i < from.size(); ++i) {
    for (std::size_t j = from[i] + 1; j < t.nodes.size(); ++j) {
      const TNode& n = t.nodes[j];
      if (std::find(n.inputs.begin(), n.inputs.end(), static_cast<int>(from[i])) == n.inputs.end()) continue;
      (passes(n) ? from : users).push_back(j);
    }
  }
  std::vector<Poly> out;
  for (std::size_t u : users) {
    for (int in : t.nodes[u].inputs) {
      std::size_t r = static_cast<std::size_t>(in);
      while (passes(t.nodes[r]) && !t.nodes[r].inputs.empty()) r = static_cast<std::size_t>(t.nodes[r].inputs[0]);
      if (!is_reduction(t.nodes[r].op)) continue;
      Poly count = cst(1);
      for (std::int64_t d : t.nodes[r].ints) count = mul(count, dims[static_cast<std::size_t>(t.nodes[r].inputs[0])][static_cast<std::size_t>(d)]);
      if (is_const(count) || std::any_of(out.begin(), out.end(), [&](const Poly& p) { return same(p, count); })) continue;
      out.push_back(std::move(count));
    }
  }
  return out;
}
}  // namespace

bool extents_differ(const Template& a, const Template& b) { return a.sym_values != b.sym_values; }
std::shared_ptr<Template> copy(const Template& t) { return std::make_shared<Template>(t); }

namespace {
// Whether u is t's graph traced again: the same nodes, inputs and payloads,
// but a constant's value, a slice's or pad's starts and the extents (what
// may follow extents and scalars).
bool same_graph(const Template& t, const Template& u, std::string* why) {
  auto fail = [&](std::string s) {
    *why = std::move(s);
    return false;
  };
  if (t.nodes.size() != u.nodes.size() || t.results != u.results || t.syms != u.syms ||
      t.scalars.size() != u.scalars.size()) {
    return fail("the second trace made another graph");
  }
  for (std::size_t k = 0; k < t.nodes.size(); ++k) {
    const TNode &a = t.nodes[k], &b = u.nodes[k];
    const std::string where = std::string("the ") + op_name(a.op) + " traced at " + loc_str(a.loc);
    if (a.op != b.op || a.dtype != b.dtype || a.arg != b.arg || a.inputs != b.inputs || a.after != b.after ||
        a.shape.ndim() != b.shape.ndim() || a.storage != b.storage || a.ints.size() != b.ints.size() ||
        a.given != b.given) {
      return fail("the second trace made another graph at " + where);
    }
    const bool numbers = a.op == Op::Constant;  // its value may come from extents
    if (!numbers && (a.i0 != b.i0 || a.i1 != b.i1 || !same_bits(a.f0, b.f0) || !same_bits(a.f1, b.f1))) {
      return fail("a payload of " + where + " changed between the traces");
    }
    const bool starts = a.op == Op::Slice || a.op == Op::Pad;
    for (std::size_t i = 0; i < a.ints.size(); ++i) {
      if (a.ints[i] != b.ints[i] && !(starts && i % 2 == 0)) return fail("a payload of " + where + " changed between the traces");
    }
  }
  return true;
}
}  // namespace

bool validate(Template& t, const Template& u, std::string* why) {
  auto fail = [&](std::string s) {
    *why = std::move(s);
    return false;
  };
  // Structure and payloads but the numbers fitted below.
  if (!same_graph(t, u, why)) return false;
  // The symbols' values in both traces (quotients fitted below are appended).
  std::vector<std::int64_t> v1 = t.sym_values, v2 = u.sym_values;
  t.quotients.clear();
  // Symbols that did not change are pinned: nothing says what follows them.
  t.checks.clear();
  for (std::size_t s = 0; s < t.syms.size(); ++s) {
    if (v1[s] == v2[s]) t.checks.push_back({atom(static_cast<int>(s)), cst(v1[s]), false});
  }
  // So are scalar arguments: the function may have branched on one, or
  // made a payload of it (topk's k).
  t.pinned_scalars.clear();
  for (std::size_t j = 0; j < t.scalars.size(); ++j) {
    if (same_scalar(t.scalars[j], u.scalars[j])) t.pinned_scalars.push_back(static_cast<int>(j));
  }
  // Extents: rules first; what disagrees with the second trace and may be
  // fitted gets the one expression that gives both traces' numbers.
  std::unordered_map<int, Poly> fits;
  std::vector<std::vector<Poly>> dims;
  auto resolve_all = [&]() -> bool {
    Resolver r(t, fits);
    dims.assign(t.nodes.size(), {});
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
      for (int v : t.nodes[k].dims) {
        std::optional<Poly> p = r(v);
        if (!p) return false;
        dims[k].push_back(std::move(*p));
      }
    }
    return true;
  };
  // Symbols an equality guard makes one (x * y of two arguments): each is
  // its class's first, so that the extents a fit chooses from are not two
  // names of one number (the guards hold wherever the template is used).
  auto canonical = [&]() {
    std::vector<int> rep(t.syms.size());
    for (std::size_t k = 0; k < rep.size(); ++k) rep[k] = static_cast<int>(k);
    auto root = [&](int a) {
      while (rep[static_cast<std::size_t>(a)] != a) a = rep[static_cast<std::size_t>(a)];
      return a;
    };
    Resolver r(t, fits);
    auto one_symbol = [&](const std::optional<Poly>& p) {
      const bool one = p && p->size() == 1 && (*p)[0].coef == 1 && (*p)[0].atoms.size() == 1 &&
                       (*p)[0].atoms[0] < static_cast<int>(t.syms.size());
      return one ? (*p)[0].atoms[0] : -1;
    };
    for (const Guard& g : t.guards) {
      const int a = g.le ? -1 : one_symbol(r.subst(g.a)), b = g.le ? -1 : one_symbol(r.subst(g.b));
      if (a < 0 || b < 0) continue;
      const int ra = root(a), rb = root(b);
      if (ra != rb) rep[static_cast<std::size_t>(std::max(ra, rb))] = std::min(ra, rb);
    }
    for (std::size_t k = 0; k < rep.size(); ++k) rep[k] = root(static_cast<int>(k));
    return rep;
  };
  // p with each symbol its class's first (canonical()).
  auto in_classes = [](Poly p, const std::vector<int>& rep) {
    for (Term& term : p) {
      for (int& a : term.atoms) {
        if (a < static_cast<int>(rep.size())) a = rep[static_cast<std::size_t>(a)];
      }
      std::sort(term.atoms.begin(), term.atoms.end());
    }
    return normalized(std::move(p));
  };
  auto candidates = [&]() {
    std::vector<Poly> c;
    const std::vector<int> rep = canonical();
    auto put = [&](Poly p) {
      if (is_const(p)) return;
      p = in_classes(std::move(p), rep);
      for (const Poly& q : c) {
        if (same(p, q)) return;
      }
      c.push_back(std::move(p));
    };
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
      Poly numel = cst(1);
      for (const Poly& p : dims[k]) put(p), numel = mul(numel, p);
      put(numel);
      if (is_reduction(t.nodes[k].op)) {
        Poly reduced = cst(1);
        for (std::int64_t d : t.nodes[k].ints) reduced = mul(reduced, dims[static_cast<std::size_t>(t.nodes[k].inputs[0])][static_cast<std::size_t>(d)]);
        put(reduced);
      }
    }
    return c;
  };
  // The one extent of `cands` divided by a constant that gives x1 in the
  // first trace and x2 in the second (a reshape's -1 splitting an extent that
  // changes): a new symbol, the quotient, wherever the extent is a multiple
  // of it. Symbols that did not change are their values (pinned above): 3 *
  // s0 / 24 and s0 / 8 are one quotient when s1 is pinned to 3.
  auto quotient = [&](std::int64_t x1, std::int64_t x2, const std::vector<Poly>& cands) -> std::optional<Template::Quotient> {
    if (x1 <= 0 || x2 <= 0) return std::nullopt;
    auto pinned_out = [&](const Poly& p) {
      Poly r;
      for (const Term& term : p) {
        Term u{term.coef, {}};
        for (int a : term.atoms) {
          const auto sa = static_cast<std::size_t>(a);
          if (sa < t.syms.size() && v1[sa] == v2[sa]) u.coef *= v1[sa];
          else u.atoms.push_back(a);
        }
        r.push_back(std::move(u));
      }
      return normalized(std::move(r));
    };
    std::optional<Template::Quotient> q;
    int m = 0;
    for (const Poly& cand : cands) {
      const Poly p = pinned_out(cand);
      const bool over_args = std::all_of(p.begin(), p.end(), [&](const Term& term) {
        return std::all_of(term.atoms.begin(), term.atoms.end(), [&](int a) { return a < static_cast<int>(t.syms.size()); });
      });
      const auto p1 = eval(p, v1), p2 = eval(p, v2);
      if (!over_args || !p1 || !p2 || *p1 % x1 != 0 || *p2 % x2 != 0) continue;
      const std::int64_t by = *p1 / x1;
      if (by <= 1 || *p2 / x2 != by) continue;
      if (q && same(mul(p, cst(q->by)), mul(q->of, cst(by)))) continue;  // (s / 8 and 3 * s / 24)
      ++m, q = Template::Quotient{p, by};
    }
    if (m != 1) return std::nullopt;
    return q;
  };
  // Rounds: each fits one value and resolves again (what was fitted may
  // explain others). The rules' open values first (a slice's extent), then
  // broadcast extents no consumer bound (a gradient's fill: often a slice's
  // extent); a round that fits nothing fails with the first disagreement.
  for (std::size_t round = 0;; ++round) {
    if (!resolve_all()) return fail("the extents' equations have a cycle");
    if (round > 4 * t.vars.size()) return fail("the extents' fitting does not settle");
    bool changed = false;
    std::string first_failure;
    for (int pass = 0; pass < 2 && !changed; ++pass) {
      for (std::size_t k = 0; k < t.nodes.size() && !changed; ++k) {
        for (std::size_t d = 0; d < dims[k].size() && !changed; ++d) {
          const std::int64_t want = u.nodes[k].shape[static_cast<int>(d)];
          if (eval(dims[k][d], v2) == want) continue;
          const std::string where = std::string("extent ") + std::to_string(d) + " of the " + op_name(t.nodes[k].op) +
                                    " traced at " + loc_str(t.nodes[k].loc);
          const int root = find(t, t.nodes[k].dims[d]);
          const Var& x = t.vars[static_cast<std::size_t>(root)];
          if (!(x.fit || x.kind == Var::Kind::free) || fits.count(root)) {
            if (first_failure.empty()) first_failure = where + " is " + std::to_string(want) + " in the second trace, not " + show(dims[k][d]);
            continue;
          }
          if (x.fit != (pass == 0)) continue;
          std::optional<Poly> found;
          if (x.fit_base >= 0) {  // a slice: its input's extent plus a constant
            const Poly base = *Resolver(t, fits)(x.fit_base);
            if (auto b1 = eval(base, v1), b2 = eval(base, v2); b1 && b2 && want - *b2 == x.value - *b1) {
              found = add(base, cst(x.value - *b1));
            }
          }
          if (!found) {  // (a slice too: a concatenation's gradient takes each piece's extent back)
            int n = 0;
            std::vector<Poly> cands = candidates();
            for (const Poly& p : cands) {
              if (eval(p, v1) == x.value && eval(p, v2) == want) ++n, found = p;
            }
            if (n != 1) found.reset();
            if (n == 0) {
              if (std::optional<Template::Quotient> q = quotient(x.value, want, cands)) {
                found = atom(static_cast<int>(t.syms.size() + t.quotients.size()));
                t.quotients.push_back(std::move(*q));
                v1.push_back(x.value);
                v2.push_back(want);
              }
            }
          }
          if (!found) {
            if (first_failure.empty()) {
              first_failure = where + " changes between the traces (" + std::to_string(x.value) + ", " + std::to_string(want) +
                              ") in a way no one expression of the arguments' extents explains";
            }
            continue;
          }
          fits[root] = std::move(*found);
          changed = true;
        }
      }
    }
    if (changed) continue;
    if (!first_failure.empty()) return fail(first_failure);
    break;
  }
  // Guards of the rules, over symbols; the two traces met them.
  {
    Resolver r(t, fits);
    for (const Guard& g : t.guards) {
      std::optional<Poly> a = r.subst(g.a), b = r.subst(g.b);
      if (!a || !b) return fail("the extents' equations have a cycle");
      if (same(*a, *b)) continue;
      Guard s{std::move(*a), std::move(*b), g.le};
      if (!holds(s, v1) || !holds(s, v2)) return fail("an equality of extents the graph relies on fails: " + show(s.a) + " vs " + show(s.b));
      t.checks.push_back(std::move(s));
    }
  }
  // Payload numbers made from extents: slice and pad starts, constants.
  std::vector<Poly> cands = candidates();
  for (std::size_t k = 0; k < t.nodes.size(); ++k) {
    TNode& a = t.nodes[k];
    const TNode& b = u.nodes[k];
    const std::string where = std::string("the ") + op_name(a.op) + " traced at " + loc_str(a.loc);
    if (a.op == Op::Slice || a.op == Op::Pad) {
      // A slice's start follows its input's extent, a pad's its output's.
      const std::vector<Poly>& ref = a.op == Op::Slice ? dims[static_cast<std::size_t>(a.inputs[0])] : dims[k];
      const std::vector<Poly>& inner = a.op == Op::Slice ? dims[k] : dims[static_cast<std::size_t>(a.inputs[0])];
      a.starts.clear();
      for (std::size_t d = 0; d < ref.size(); ++d) {
        const std::int64_t s1 = a.ints[2 * d], s2 = b.ints[2 * d], step = a.ints[2 * d + 1];
        Poly start = cst(s1);
        if (s1 != s2) {
          // Its reference extent plus a constant (x[-3:]), else exactly one
          // extent of the graph (a concatenation's gradient slices each
          // piece back out at the extents before it).
          const auto r1 = eval(ref[d], v1), r2 = eval(ref[d], v2);
          if (r1 && r2 && s2 - *r2 == s1 - *r1) {
            start = add(ref[d], cst(s1 - *r1));
          } else {
            int n = 0;
            for (const Poly& p : cands) {
              if (eval(p, v1) == s1 && eval(p, v2) == s2) ++n, start = p;
            }
            if (n != 1) return fail("the start of " + where + " changes in a way its extents do not explain");
          }
        }
        if (!is_const(start) || !is_const(ref[d]) || !is_const(inner[d])) {
          if (step != 1) return fail(where + " has a step of " + std::to_string(step) + " on an extent that changes");
          // 0 <= start and start + inner <= ref wherever it is used.
          t.checks.push_back({cst(0), start, true});
          t.checks.push_back({add(start, inner[d]), ref[d], true});
        }
        a.starts.push_back(std::move(start));
      }
    }
    if (a.op == Op::Constant) {
      const bool changed = a.i0 != b.i0 || !same_bits(a.f0, b.f0);
      // The extents (or reciprocals) that give this constant's value in both traces.
      auto extent_forms = [&](const std::vector<Poly>& polys, auto&& found) {
        for (const Poly& p : polys) {
          const auto e1 = eval(p, v1), e2 = eval(p, v2);
          if (!e1 || !e2 || *e1 == 0 || *e2 == 0) continue;
          for (TNode::Value form : {TNode::Value::extent, TNode::Value::reciprocal}) {
            if (form == TNode::Value::reciprocal && !is_float(a.dtype)) continue;
            if (makes(from_extent_value(form, *e1, a.dtype), a) && makes(from_extent_value(form, *e2, a.dtype), b)) {
              found(form, p);
            }
          }
        }
      };
      if (a.from_extent) {
        // Made from an extent (mean's count): its count among the reductions
        // it meets, else any extent of the graph; exactly one. Checked even
        // when unchanged: an f16 count may round alike in both traces.
        int n = 0;
        auto take = [&](TNode::Value form, const Poly& p) { ++n, a.value = form, a.value_of = p; };
        extent_forms(met_counts(t, dims, k), take);
        if (n != 1) {
          n = 0;
          extent_forms(cands, take);
        }
        if (n != 1) {
          return fail("the value of " + where + " (from an extent) changes between the traces in a way no one extent explains");
        }
      } else if (changed) {
        // Anything else that changed is a scalar argument as it is, or the
        // function computed it: refused.
        int n = 0;
        for (std::size_t j = 0; j < t.scalars.size(); ++j) {
          if (makes(t.scalars[j], a) && makes(u.scalars[j], b)) ++n, a.value = TNode::Value::scalar, a.scalar = static_cast<int>(j);
        }
        if (n != 1) {
          return fail("the value of " + where + " changes between the traces and is not one scalar argument as it is");
        }
      }
    }
  }
  // The rules' extents give the first trace's numbers too.
  for (std::size_t k = 0; k < t.nodes.size(); ++k) {
    for (std::size_t d = 0; d < dims[k].size(); ++d) {
      if (eval(dims[k][d], v1) != t.nodes[k].shape[static_cast<int>(d)]) {
        return fail(std::string("the extents of the ") + op_name(t.nodes[k].op) + " do not reproduce the first trace");
      }
    }
  }
  // Every extent that changes stays in the range both traces had it in: 2
  // or more, 1 or more, or not negative. An extent of 1 changes what the
  // library makes (squeeze, broadcasting), one of 0 an empty reduction's
  // error, a negative one a slice's: a call where a derived extent leaves its
  // range is traced, and does what the function does there.
  // (Argument extents of 0 and 1 are part of the signature already.)
  std::vector<Poly> seen;
  for (const std::vector<Poly>& node_dims : dims) {
    for (const Poly& p : node_dims) {
      if (is_const(p) || std::any_of(seen.begin(), seen.end(), [&](const Poly& q) { return same(p, q); })) continue;
      seen.push_back(p);
      const std::int64_t low = std::min<std::int64_t>({*eval(p, v1), *eval(p, v2), 2});
      t.checks.push_back({cst(std::max<std::int64_t>(low, 0)), p, true});
    }
  }
  t.dims = std::move(dims);
  t.trusted = true;
  return true;
}

bool same_scalar(const Scalar& a, const Scalar& b) {
  return a.kind == b.kind && a.i == b.i && same_bits(a.f, b.f) && a.above_int64 == b.above_int64;
}

namespace {
// The quotient symbols' values appended to the arguments' symbols' `vals`;
// false, with the reason, where an extent is not a multiple of its divisor.
bool with_quotients(const Template& t, std::vector<std::int64_t>* vals, std::string* why) {
  for (const Template::Quotient& q : t.quotients) {
    const auto e = eval(q.of, *vals);
    if (!e || *e % q.by != 0) {
      if (why) *why = "the extent " + show(q.of) + " is not a multiple of " + std::to_string(q.by) + " here";
      return false;
    }
    vals->push_back(*e / q.by);
  }
  return true;
}

// Every symbol's value at the argument leaves `args`: the arguments'
// extents, then the quotients'; false, with the reason, where an extent is
// not a multiple of its divisor (the function's reshape fails there: the
// caller traces it).
bool symbol_values(const Template& t, const std::vector<NodeId>& args, std::vector<std::int64_t>* vals, std::string* why) {
  const Graph& g = graph();
  vals->resize(t.syms.size());
  for (std::size_t s = 0; s < t.syms.size(); ++s) {
    (*vals)[s] = g[args[static_cast<std::size_t>(t.syms[s].first)]].shape[t.syms[s].second];
  }
  return with_quotients(t, vals, why);
}
}  // namespace

bool admits(const Template& t, const std::vector<NodeId>& args, const std::vector<Scalar>& scalars, std::string* why) {
  const Graph& g = graph();
  std::vector<std::int64_t> vals;
  if (!symbol_values(t, args, &vals, why)) return false;
  // A template not yet checked is made only as it was traced: at its own
  // extents and scalar values (the arguments' layouts may differ; such a
  // template has no quotients).
  const bool as_traced = !t.trusted;
  if (as_traced) {
    bool same = vals == t.sym_values && scalars.size() == t.scalars.size();
    for (std::size_t j = 0; same && j < scalars.size(); ++j) same = same_scalar(scalars[j], t.scalars[j]);
    if (!same) {
      *why = "other extents or scalars than the one trace so far";
      return false;
    }
  }
  for (const Guard& c : t.checks) {
    if (!holds(c, vals)) {
      *why = "the extents fail " + show(c.a) + (c.le ? " <= " : " == ") + show(c.b);
      return false;
    }
  }
  for (int j : t.pinned_scalars) {
    if (!same_scalar(scalars[static_cast<std::size_t>(j)], t.scalars[static_cast<std::size_t>(j)])) {
      *why = "scalar argument " + std::to_string(j) + " has another value than in both traces";
      return false;
    }
  }
  if (!as_traced) {
    // A slice given from the end takes there what aj::slice gives.
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
      const TNode& tn = t.nodes[k];
      for (const TNode::GivenAxis& g : tn.given) {
        const auto d = static_cast<std::size_t>(g.axis);
        const auto n = eval(t.dims[static_cast<std::size_t>(tn.inputs[0])][d], vals);
        const idx::SliceAxis r = idx::slice_axis(g.start, g.stop, g.step, n.value_or(0));
        const std::int64_t start = d < tn.starts.size() ? eval(tn.starts[d], vals).value_or(-1) : tn.ints[2 * d];
        if (!n || r.error || eval(t.dims[k][d], vals) != r.len || (r.len > 0 && (start != r.start || tn.ints[2 * d + 1] != r.step))) {
          *why = std::string("the slice traced at ") + loc_str(tn.loc) + " takes other elements at these extents";
          return false;
        }
      }
    }
    // Every argument's and held array's extents are what the template says
    // (the guards imply it; checked, since a wrong extent would read out of
    // bounds).
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
      const TNode& tn = t.nodes[k];
      if (tn.arg < 0 && !tn.storage) continue;
      const Shape& have = tn.arg >= 0 ? g[args[static_cast<std::size_t>(tn.arg)]].shape : tn.shape;
      for (std::size_t d = 0; d < t.dims[k].size(); ++d) {
        if (eval(t.dims[k][d], vals) != have[static_cast<int>(d)]) {
          *why = "extent " + std::to_string(d) + " of " + (tn.arg >= 0 ? "argument " + std::to_string(tn.arg) : std::string("an array it holds")) +
                 " is not what the template relates it to";
          return false;
        }
      }
    }
  }
  return true;
}

bool widen(Template& t, const Template& w, std::string* why) {
  auto fail = [&](std::string s) {
    *why = std::move(s);
    return false;
  };
  if (!t.trusted) return fail("the template is not checked yet");
  if (!same_graph(t, w, why)) return false;
  // The symbols' values in w, and the template's guards there: w is a call
  // the template covers but for its pinned scalars.
  std::vector<std::int64_t> vals = w.sym_values;
  if (!with_quotients(t, &vals, nullptr)) return fail("the new trace is at extents the template does not cover");
  for (const Guard& c : t.checks) {
    if (!holds(c, vals)) return fail("the new trace is at extents the template does not cover");
  }
  // The pinned scalars w gives other values.
  std::vector<int> changed;
  for (int j : t.pinned_scalars) {
    if (!same_scalar(t.scalars[static_cast<std::size_t>(j)], w.scalars[static_cast<std::size_t>(j)])) changed.push_back(j);
  }
  if (changed.empty()) return fail("no pinned scalar argument changed");
  // Every extent, start and constant of w is what the template makes there,
  // a constant that changed being exactly one of the changed scalars as it is.
  std::vector<std::pair<std::size_t, int>> follows;  // (node, scalar)
  for (std::size_t k = 0; k < t.nodes.size(); ++k) {
    const TNode &a = t.nodes[k], &b = w.nodes[k];
    const std::string where = std::string("the ") + op_name(a.op) + " traced at " + loc_str(a.loc);
    for (std::size_t d = 0; d < t.dims[k].size(); ++d) {
      if (eval(t.dims[k][d], vals) != b.shape[static_cast<int>(d)]) return fail("an extent of " + where + " is not the template's");
    }
    for (std::size_t d = 0; d < a.starts.size(); ++d) {
      if (eval(a.starts[d], vals) != b.ints[2 * d]) return fail("a start of " + where + " is not the template's");
    }
    if (a.op != Op::Constant) continue;
    switch (a.value) {
      case TNode::Value::scalar:
        if (!makes(w.scalars[static_cast<std::size_t>(a.scalar)], b)) return fail("the value of " + where + " is not the template's");
        break;
      case TNode::Value::extent:
      case TNode::Value::reciprocal: {
        const auto e = eval(a.value_of, vals);
        if (!e || *e == 0 || !makes(from_extent_value(a.value, *e, a.dtype), b)) return fail("the value of " + where + " is not the template's");
        break;
      }
      case TNode::Value::as_traced: {
        if (a.i0 == b.i0 && same_bits(a.f0, b.f0)) break;
        int n = 0, of = -1;
        for (int j : changed) {
          if (makes(t.scalars[static_cast<std::size_t>(j)], a) && makes(w.scalars[static_cast<std::size_t>(j)], b)) ++n, of = j;
        }
        if (n != 1) return fail("the value of " + where + " changed and is not one scalar argument as it is");
        follows.emplace_back(k, of);
        break;
      }
    }
  }
  for (const auto& [k, j] : follows) {
    t.nodes[k].value = TNode::Value::scalar;
    t.nodes[k].scalar = j;
  }
  std::erase_if(t.pinned_scalars, [&](int j) { return std::find(changed.begin(), changed.end(), j) != changed.end(); });
  return true;
}

bool instantiate(const Template& t, const std::vector<NodeId>& args, const std::vector<Scalar>& scalars,
                 std::vector<Array>* results, std::string* why, std::vector<std::pair<NodeId, int>>* made_of) {
  if (!admits(t, args, scalars, why)) return false;
  Graph& g = graph();
  std::vector<std::int64_t> vals;
  symbol_values(t, args, &vals, nullptr);  // (admits checked that they divide)
  const bool as_traced = !t.trusted;
  std::vector<Array> made(t.nodes.size());
  for (std::size_t k = 0; k < t.nodes.size(); ++k) {
    const TNode& tn = t.nodes[k];
    if (tn.arg >= 0) {
      made[k] = Array::from_node(args[static_cast<std::size_t>(tn.arg)]);
      continue;
    }
    std::vector<std::int64_t> shape;
    if (as_traced) {
      shape = tn.shape.dims();
    } else {
      for (const Poly& p : t.dims[k]) {
        const auto v = eval(p, vals);
        if (!v || *v < 0) {
          *why = "an extent of the " + std::string(op_name(tn.op)) + " would be " + (v ? std::to_string(*v) : "too large");
          return false;
        }
        shape.push_back(*v);
      }
    }
    if (tn.storage) {
      made[k] = Array::from_node(g.add_leaf(tn.dtype, tn.shape, tn.storage, tn.strides, tn.offset));
      continue;
    }
    if (tn.op == Op::Constant && tn.value == TNode::Value::scalar) {
      made[k] = trace::constant(scalars[static_cast<std::size_t>(tn.scalar)], tn.dtype, "compile", tn.loc, Shape(std::move(shape)));
      continue;
    }
    if (tn.op == Op::Constant && tn.value != TNode::Value::as_traced) {
      const std::int64_t e = *eval(tn.value_of, vals);
      if (e == 0) {
        *why = "a constant made from an extent that is 0";
        return false;
      }
      made[k] = trace::constant(from_extent_value(tn.value, e, tn.dtype), tn.dtype, "compile", tn.loc, Shape(std::move(shape)));
      continue;
    }
    Node n;
    copy_payload(n, tn);
    n.shape = Shape(std::move(shape));
    for (std::size_t d = 0; d < tn.starts.size(); ++d) n.ints[2 * d] = *eval(tn.starts[d], vals);
    for (int in : tn.inputs) n.inputs.push_back(made[static_cast<std::size_t>(in)].node_id());
    if (tn.after >= 0) n.after = made[static_cast<std::size_t>(tn.after)].node_id();
    made[k] = trace::make(std::move(n), tn.loc);
  }
  if (made_of) {
    made_of->clear();
    std::vector<int> of(t.nodes.size(), -1);
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
      const TNode& tn = t.nodes[k];
      if (tn.arg >= 0) continue;
      if (tn.op == Op::Constant && tn.value == TNode::Value::scalar) {
        of[k] = tn.scalar;
      } else {
        for (int in : tn.inputs) {
          if (of[static_cast<std::size_t>(in)] != -1) of[k] = -2;
        }
      }
      made_of->emplace_back(made[k].node_id(), of[k]);
    }
  }
  results->clear();
  for (int r : t.results) results->push_back(made[static_cast<std::size_t>(r)]);
  return true;
}

}  // namespace aj::detail::extents

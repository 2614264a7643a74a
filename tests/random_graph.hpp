// A generator of random arrayjit programs for the differential test
// (tests/test_differential.cpp).
//
// A program is a sequence of steps driven by one std::mt19937_64 seed: make an
// input, apply an elementwise op, a reduction, a view, matmul, concatenate,
// an indexing op (take, take_along_axis, scatter(_add), slice_update/add,
// pad, roll, one_hot), evaluate an intermediate, drop or rebind a handle (`v3 = add(v3, 2)`, so the
// old value has no handle left). Every choice depends only on the seed and on
// trace-time facts (shapes, dtypes), never on computed values, so building the
// same seed twice — once per executor — traces the same graph.
//
// Each value carries a Bound: what the generator knows about how far the two
// executors' results may legitimately differ. Bit-exact ops (IEEE + - * /,
// sqrt, comparisons, casts, views, max/min, integer math) on exact inputs stay
// exact. Float reductions, matmul and transcendental functions may be
// reassociated / vectorized by an optimizer, so they start an error bound that
// later ops propagate by a forward error analysis (see Bound). Ops that are
// discontinuous (comparisons, floor/ceil/round/sign, float mod, casts to
// integers or bool, argmax/argmin, all/any) are only applied to exact values,
// so an inexact input can never flip an integer or bool result. Values that
// may hold inf/NaN or grow large are "tamed" (NaN -> 0, clipped to [-4, 4]) before
// they meet inexact arithmetic, so every error bound stays finite and every
// inf/NaN position is the same in both executors.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ajtest {

using aj::Array;
using aj::DType;
using aj::Shape;
using Dims = std::vector<std::int64_t>;

// Largest element count of any value the generator makes (keeps a graph
// evaluating in well under a millisecond on the reference interpreter).
inline constexpr std::int64_t kMaxNumel = 256;
// Inexact arithmetic only meets finite values of at most this magnitude.
inline constexpr double kTameMag = 1e6;
// Accuracy assumed of an optimized backend's transcendental functions, in
// units of machine epsilon (vector math libraries promise about 4 ulp).
inline constexpr double kUlps = 8;

inline std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto e : d) n *= e;
  return n;
}

inline std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

inline double eps_of(DType t) {
  switch (t) {
    case DType::f16: return 0x1p-10;
    case DType::bf16: return 0x1p-7;
    case DType::f32: return 0x1p-23;
    case DType::f64: return 0x1p-52;
    case DType::bool_: case DType::i32: case DType::i64: return 0.0;
  }
  return 0.0;
}
// The rounding unit of a float result computed from these operand dtypes:
// the coarsest float operand's (an upper bound: promotion never narrows),
// f64's when none is a float.
inline double eps_from(std::initializer_list<DType> operands) {
  double e = eps_of(DType::f64);
  for (DType t : operands) e = std::max(e, eps_of(t));
  return e;
}
inline double max_of(DType t) {
  switch (t) {
    case DType::bool_: return 1.0;
    case DType::i32: return 0x1p31;
    case DType::i64: return 0x1p63;
    case DType::f32: return static_cast<double>(std::numeric_limits<float>::max());
    case DType::f64: return std::numeric_limits<double>::max();
    case DType::f16: return 65504.0;
    case DType::bf16: return 0x1.fep127;
  }
  return 0.0;
}

// What the generator knows about the elements of one value.
//   mag: every finite element x has |x| <= mag.
//   abs_err, rel_err: the optimized result y of an element whose reference
//     result is x satisfies |x - y| <= abs_err + rel_err * max(|x|, |y|)
//     (both zero: the results are bit-identical, signed zeros included).
//   nonfinite: some elements may be inf or NaN (at the same positions in both
//     executors: exact ops create them, inexact ops only meet tamed values).
// Propagation rules (first order, each a worst-case bound):
//   a +- b : abs = err(a) + err(b),             rel = eps (result rounding)
//   a * b  : abs = Ea*Mb + Eb*Ma + Ea*Eb,       rel = Ra + Rb + Ra*Rb + eps
//   a / d  : (d >= 0.5) abs = 2Ea + 4Ma*err(d), rel = Ra + Rd + eps
//   f(x)   : abs = L * err(x) + U*eps, rel = U*eps (L: Lipschitz bound of f)
//   sum of N:  abs = N*err(x) + (N-1)*eps*N*Mx   (any order of N-1 additions)
//   prod of N: abs = N*err(x)*(Mx+e)^(N-1) + N*eps*(Mx+e)^N
//   matmul, inner K: abs = K*(Ea*Mb + Eb*Ma + Ea*Eb) + K*eps*K*Ma*Mb
//   max/min/where/clip/views/concat: the largest bound of their inputs
// where err(v) = abs_err + rel_err * mag, and eps is the result type's
// machine epsilon. docs/semantics.md allows exactly this freedom: float
// reductions may be reassociated (n * eps of the sum of absolute values).
struct Bound {
  double mag = 0;
  double abs_err = 0;
  double rel_err = 0;
  bool nonfinite = false;
  bool exact() const { return abs_err == 0 && rel_err == 0; }
  double err() const { return abs_err + rel_err * mag; }
};

inline Bound exact_bound(double mag, bool nonfinite = false) {
  Bound b;
  b.mag = mag;
  b.nonfinite = nonfinite;
  return b;
}

// Clamp a bound to what the dtype can hold: a float value whose magnitude
// bound passes the type's maximum may overflow (to inf, at the same places in
// both executors, since only exact ops are allowed to get there).
inline Bound fit(Bound b, DType t) {
  if (t == DType::bool_) return exact_bound(1.0);
  if (!aj::is_float(t)) return exact_bound(std::min(b.mag, max_of(t)));
  if (!(b.mag <= max_of(t))) {
    b.nonfinite = true;
    b.mag = max_of(t);
  }
  return b;
}

inline std::string fmt_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

class RandomGraph {
 public:
  // Programs have between 1 and kMaxSteps steps (drawn from the seed); a
  // smaller step_limit runs a prefix of the same program (used to shrink a
  // failing seed).
  static constexpr int kMaxSteps = 40;

  struct Output {
    Array array;
    Bound bound;
    std::string name;
  };

  explicit RandomGraph(std::uint64_t seed, int step_limit = kMaxSteps)
      : rng_(seed), limit_(step_limit) {}

  // For re-running one program (the plan cache test): the same seed traces
  // the same graph structure, while `data_seed` draws the input values (only
  // values: specials such as NaN stay where the seed puts them, and bounds
  // assume the largest magnitude a value could have, so no structural choice
  // depends on the data). `keep_dropped`: handles the program drops or
  // rebinds are kept until the generator is destroyed (other reference
  // counts, so no donation from them).
  RandomGraph(std::uint64_t seed, int step_limit, std::uint64_t data_seed, bool keep_dropped)
      : rng_(seed), limit_(step_limit), data_rng_(data_seed), keep_dropped_(keep_dropped) {}

  // Trace the program (evaluating the intermediates it evaluates) and pick its
  // outputs. Throws whatever arrayjit throws other than trace-time user errors,
  // which only skip the step that caused them.
  void build();

  const std::vector<Output>& outputs() const { return outputs_; }
  const std::string& program() const { return log_; }
  int steps() const { return steps_; }
  int skipped() const { return skipped_; }
  const std::map<std::string, int>& used() const { return used_; }
  // True while every buffer lent with aj::borrow still holds what was put in.
  bool borrowed_intact() const {
    for (auto& b : borrowed_) {
      if (std::memcmp(b.data.get(), b.copy.data(), b.copy.size()) != 0) return false;
    }
    return true;
  }
  // Values read in the middle of the program (and still held) must read the
  // same later, after further evaluations reused memory: nullopt if they do.
  std::optional<std::string> held_intact() const {
    for (auto& h : held_) {
      std::vector<double> f;
      std::vector<std::int64_t> i;
      read(h.a, &f, &i);
      bool same = f.size() == h.f.size() && i == h.i;
      for (std::size_t k = 0; same && k < f.size(); ++k) {
        same = std::isnan(f[k]) ? std::isnan(h.f[k])
                                : std::memcmp(&f[k], &h.f[k], sizeof(double)) == 0;
      }
      if (!same)
        return "held array " + h.name + " (read mid-program) changed by a later evaluation";
    }
    return std::nullopt;
  }
  static void read(const Array& a, std::vector<double>* f, std::vector<std::int64_t>* i) {
    if (aj::is_float(a.dtype())) *f = a.to_vector<double>();
    else *i = a.to_vector<std::int64_t>();
  }

 private:
  struct Val {
    Array a;
    Bound b;
    std::string name;
    DType dtype() const { return a.dtype(); }
    Dims dims() const { return a.shape().dims(); }
    bool is_float() const { return aj::is_float(a.dtype()); }
  };
  // An operand: a pool value or a C++ scalar (weak, as in user code).
  struct Arg {
    bool scalar = false;
    int kind = 0;  // scalar: 0 bool, 1 integer, 2 floating
    std::int64_t i = 0;
    double f = 0;
    Val v;
    aj::Operand op() const {
      if (!scalar) return aj::Operand(v.a);
      if (kind == 0) return aj::Operand(i != 0);
      if (kind == 1) return aj::Operand(i);
      return aj::Operand(f);
    }
    Bound bound() const {
      if (!scalar) return v.b;
      return exact_bound(kind == 2 ? std::fabs(f) : std::fabs(static_cast<double>(i)));
    }
    std::string str() const {
      if (!scalar) return v.name;
      if (kind == 0) return i ? "true" : "false";
      if (kind == 1) return std::to_string(i);
      return fmt_double(f);
    }
    bool is_float() const { return scalar ? kind == 2 : v.is_float(); }
    bool is_bool() const { return scalar ? kind == 0 : v.dtype() == DType::bool_; }
    bool exact() const { return scalar || v.b.exact(); }
    Dims dims() const { return scalar ? Dims{} : v.dims(); }
  };
  // Memory lent to arrayjit with aj::borrow, and a copy to check it is never written.
  struct Borrowed {
    std::unique_ptr<std::uint64_t[]> data;  // 8-byte aligned
    std::vector<unsigned char> copy;
  };

  // Dtype classes for picking operands.
  static constexpr int kB = 1, kI = 2, kF = 4, kNum = kI | kF, kAny = kB | kI | kF;
  static int kind_bit(DType t) { return t == DType::bool_ ? kB : aj::is_float(t) ? kF : kI; }

  // ---- randomness ----
  std::mt19937_64& gen() { return drawing_data_ && data_rng_ ? *data_rng_ : rng_; }
  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen()); }
  double unif(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen()); }
  // Draws input values from the data generator when there is one.
  template <class F>
  auto data(F&& f) {
    drawing_data_ = true;
    auto v = f();
    drawing_data_ = false;
    return v;
  }
  bool coin(double p) { return unif(0, 1) < p; }
  template <class T>
  const T& choose(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(uni(0, static_cast<int>(v.size()) - 1))];
  }
  DType random_dtype(int kinds = kAny);

  // ---- shapes ----
  Dims random_shape();
  Dims compatible_shape(const Dims& s);
  static bool broadcast(const Dims& a, const Dims& b, Dims* out);

  // ---- the pool of live handles ----
  int pick(const std::function<bool(const Val&)>& pred);
  std::string fresh() { return "v" + std::to_string(next_name_++); }
  std::string temp() { return "t" + std::to_string(next_temp_++); }
  Val make_val(Array a, Bound b, const std::string& name, const std::string& expr);
  // Put a step's result into the pool; with some probability it replaces
  // (rebinds) the handle of slot `rebind`, so the old value loses its handle.
  void place(Array a, Bound b, const std::string& expr, const std::string& op, int rebind = -1);
  Val temp_val(Array a, Bound b, const std::string& expr) {
    const Bound fb = fit(b, a.dtype());
    return make_val(std::move(a), fb, temp(), expr);
  }

  // ---- operands ----
  Val new_input(const Dims& dims, DType t);
  Val input_like(const Dims& with, int kinds);
  Arg array_arg(const Dims& with, int kinds, bool need_exact);
  Arg scalar_arg(int kind, const std::vector<double>& choices);
  Val tame(const Val& v, double lim);
  Val prep(const Val& v, double lim = kTameMag) {
    bool over = v.is_float() ? (v.b.nonfinite || v.b.mag > lim) : v.b.mag > lim;
    return over ? tame(v, std::min(lim, 4.0)) : v;
  }
  Arg prep(const Arg& a, double lim = kTameMag) {
    if (a.scalar) return a;
    Arg r = a;
    r.v = prep(a.v, lim);
    return r;
  }

  // ---- steps ----
  void step();
  void step_input();
  void step_leaf();
  void step_unary();
  void step_binary();
  void step_where();
  void step_astype();
  void step_reduce();
  void step_view();
  void step_matmul();
  void step_concat();
  void step_eval();
  void step_scan_sort();  // cumsum, cumprod, sort, argsort, topk, erf(c), softmax, logsumexp
  void step_drop();
  void step_index();
  Val index_val(const Dims& dims);

  std::mt19937_64 rng_;
  int limit_;
  std::vector<Borrowed> borrowed_;  // declared before the pool: outlives every handle
  struct Held {
    Array a;
    std::string name;
    std::vector<double> f;
    std::vector<std::int64_t> i;
  };
  std::vector<Held> held_;  // arrays read mid-program, with what they read
  std::vector<Val> pool_;
  std::optional<std::mt19937_64> data_rng_;
  bool drawing_data_ = false;
  bool keep_dropped_ = false;
  std::vector<Array> kept_;  // dropped handles, when keep_dropped_
  std::vector<Output> outputs_;
  std::string log_;
  std::map<std::string, int> used_;
  int steps_ = 0, skipped_ = 0, next_name_ = 0, next_temp_ = 0;
};

// ============================================================================
// Implementation (header-only: one test file includes it).
// ============================================================================

inline DType RandomGraph::random_dtype(int kinds) {
  // weights: bool 15, i32 15, i64 15, f32 25, f64 20, f16 5, bf16 5
  static const DType all[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64, DType::f16, DType::bf16};
  static const int w[] = {15, 15, 15, 25, 20, 5, 5};
  int total = 0;
  for (int k = 0; k < 7; ++k) total += (kinds & kind_bit(all[k])) ? w[k] : 0;
  int r = uni(0, total - 1);
  for (int k = 0; k < 7; ++k) {
    if (!(kinds & kind_bit(all[k]))) continue;
    if (r < w[k]) return all[k];
    r -= w[k];
  }
  return DType::f32;
}

inline Dims RandomGraph::random_shape() {
  static const std::vector<int> ranks = {0, 1, 1, 2, 2, 2, 3, 3, 4};
  int r = choose(ranks);
  Dims d;
  for (int i = 0; i < r; ++i) {
    int u = uni(0, 99);
    d.push_back(u < 3 ? 0 : u < 25 ? 1 : u < 85 ? uni(2, 5) : uni(6, 24));
  }
  while (numel(d) > kMaxNumel) {
    for (auto& e : d) e = std::max<std::int64_t>(1, e / 2);
  }
  return d;
}

// A shape that broadcasts with `s`: right-aligned, some extents set to 1,
// some 1s of `s` widened, sometimes fewer or more axes.
inline Dims RandomGraph::compatible_shape(const Dims& s) {
  int r = static_cast<int>(s.size());
  int u = uni(0, 9);
  int keep = u < 2 ? uni(0, r) : r;  // rank difference (drop leading axes)
  Dims out;
  if (u == 9 && r < 4) out.push_back(uni(1, 3));  // one more leading axis
  for (int i = r - keep; i < r; ++i) {
    std::int64_t e = s[static_cast<std::size_t>(i)];
    if (e == 1) out.push_back(coin(0.4) ? uni(2, 4) : 1);
    else out.push_back(coin(0.3) ? 1 : e);
  }
  Dims bc;
  if (!broadcast(s, out, &bc) || numel(bc) > kMaxNumel) return s;
  return out;
}

inline bool RandomGraph::broadcast(const Dims& a, const Dims& b, Dims* out) {
  std::size_t n = std::max(a.size(), b.size());
  Dims r(n);
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t x = k < n - a.size() ? 1 : a[k - (n - a.size())];
    std::int64_t y = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    r[k] = x == 1 ? y : x;
  }
  if (out) *out = r;
  return true;
}

inline int RandomGraph::pick(const std::function<bool(const Val&)>& pred) {
  std::vector<int> ok;
  for (std::size_t k = 0; k < pool_.size(); ++k) {
    if (pred(pool_[k])) ok.push_back(static_cast<int>(k));
  }
  return ok.empty() ? -1 : choose(ok);
}

inline RandomGraph::Val RandomGraph::make_val(Array a, Bound b, const std::string& name,
                                              const std::string& expr) {
  std::ostringstream os;
  os << name << " = " << expr << "  // " << aj::dtype_name(a.dtype()) << a.shape();
  if (!b.exact()) os << " ~(abs " << b.abs_err << ", rel " << b.rel_err << ")";
  if (b.nonfinite) os << " inf/nan?";
  log_ += os.str() + "\n";
  return Val{std::move(a), b, name};
}

inline void RandomGraph::place(Array a, Bound b, const std::string& expr, const std::string& op,
                               int rebind) {
  b = fit(b, a.dtype());
  ++used_[op];
  if (rebind >= 0 && rebind < static_cast<int>(pool_.size()) && coin(0.35)) {
    auto& slot = pool_[static_cast<std::size_t>(rebind)];
    if (keep_dropped_) kept_.push_back(slot.a);
    slot = make_val(std::move(a), b, slot.name, expr);  // the old value loses its handle
    ++used_["(rebind)"];
    return;
  }
  pool_.push_back(make_val(std::move(a), b, fresh(), expr));
}

// ---- inputs -------------------------------------------------------------------

inline RandomGraph::Val RandomGraph::new_input(const Dims& dims, DType t) {
  const std::int64_t n = numel(dims);
  // Value styles: continuous in [-4, 4]; half-integers (ties, equal values,
  // exact zeros); and, rarely, special values (NaN, +-inf, -0.0, extremes).
  const int style = uni(0, 99) < 60 ? 0 : uni(0, 99) < 75 ? 1 : 2;
  std::vector<double> fv;
  std::vector<std::int64_t> iv;
  bool nonfinite = false;
  double mag = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    if (aj::is_float(t)) {
      double x;
      if (style == 2 && coin(0.3)) {
        static const std::vector<double> sp = {std::nan(""), INFINITY, -INFINITY, -0.0,
                                               0.0,          0.5,      -2.5,      1e30};
        x = choose(sp);
      } else if (style >= 1) {
        x = data([&] { return uni(-8, 8) * 0.5; });
        if (data_rng_) mag = std::max(mag, 4.0);
      } else {
        x = data([&] { return unif(-4, 4); });
        if (data_rng_) mag = std::max(mag, 4.0);
      }
      if (t == DType::f32) x = static_cast<float>(x);
      if (t == DType::f16) x = static_cast<double>(static_cast<float>(aj::f16(static_cast<float>(x))));
      if (t == DType::bf16) x = static_cast<double>(static_cast<float>(aj::bf16(static_cast<float>(x))));
      if (std::isfinite(x)) mag = std::max(mag, std::fabs(x));
      else nonfinite = true;
      fv.push_back(x);
    } else if (t == DType::bool_) {
      iv.push_back(data([&] { return coin(0.5); }));
      mag = 1;
    } else {
      std::int64_t x = data([&] { return uni(-9, 9); });
      if (data_rng_) mag = std::max(mag, 9.0);
      if (style == 2 && coin(0.3)) {
        const std::int64_t lo = t == DType::i32 ? std::numeric_limits<std::int32_t>::min()
                                                : std::numeric_limits<std::int64_t>::min();
        const std::int64_t hi = t == DType::i32 ? std::numeric_limits<std::int32_t>::max()
                                                : std::numeric_limits<std::int64_t>::max();
        const std::vector<std::int64_t> sp = {lo, hi, 0, -1, 1};
        x = choose(sp);
      }
      mag = std::max(mag, std::fabs(static_cast<double>(x)));
      iv.push_back(x);
    }
  }
  std::string vals = "{";
  for (std::int64_t k = 0; k < n && k < 24; ++k) {
    vals += (k ? ", " : "") + (aj::is_float(t) ? fmt_double(fv[static_cast<std::size_t>(k)])
                                               : std::to_string(iv[static_cast<std::size_t>(k)]));
  }
  vals += n > 24 ? ", ...}" : "}";

  // Most inputs are copied in with from_vector; some borrow caller memory
  // through strided (possibly negative-stride) views.
  Array a;
  std::string expr;
  const bool borrow = n > 0 && coin(0.15);
  auto put = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> data;
    for (std::int64_t k = 0; k < n; ++k) {
      auto kk = static_cast<std::size_t>(k);
      if constexpr (std::is_floating_point_v<T>) data.push_back(static_cast<T>(fv[kk]));
      else if constexpr (std::is_same_v<T, aj::f16> || std::is_same_v<T, aj::bf16>) data.push_back(T(static_cast<float>(fv[kk])));
      else data.push_back(static_cast<T>(iv[kk]));
    }
    if (!borrow) {
      a = aj::from_vector(data, Shape(dims));
      expr = std::string("from_vector<") + aj::dtype_name(t) + ">(" + vals + ", " + dims_str(dims) +
             ")";
      return;
    }
    // A padded buffer; axis i is walked with step 1 or 2, forwards or backwards.
    const int r = static_cast<int>(dims.size());
    Dims padded(dims.size()), step(dims.size());
    std::vector<bool> back(dims.size());
    for (int i = 0; i < r; ++i) {
      auto iu = static_cast<std::size_t>(i);
      step[iu] = coin(0.3) ? 2 : 1;
      back[iu] = coin(0.3);
      padded[iu] = (dims[iu] - 1) * step[iu] + 1;
    }
    const std::int64_t total = numel(padded);
    Dims cs(dims.size());
    std::int64_t acc = 1;
    for (int i = r - 1; i >= 0; --i) {
      cs[static_cast<std::size_t>(i)] = acc;
      acc *= padded[static_cast<std::size_t>(i)];
    }
    Borrowed b;
    b.data.reset(new std::uint64_t[static_cast<std::size_t>(total) * sizeof(T) / 8 + 1]());
    T* base = reinterpret_cast<T*>(b.data.get());
    for (std::int64_t k = 0; k < total; ++k) base[k] = T(-7.0f);  // padding
    std::vector<std::int64_t> strides(dims.size());
    std::int64_t start = 0;
    for (int i = 0; i < r; ++i) {
      auto iu = static_cast<std::size_t>(i);
      strides[iu] = step[iu] * cs[iu] * (back[iu] ? -1 : 1);
      if (back[iu]) start += (dims[iu] - 1) * step[iu] * cs[iu];
    }
    // Element k of the logical row-major order goes where the view reads it.
    for (std::int64_t k = 0; k < n; ++k) {
      std::int64_t rem = k, off = start;
      for (int i = r - 1; i >= 0; --i) {
        auto iu = static_cast<std::size_t>(i);
        off += (rem % dims[iu]) * strides[iu];
        rem /= dims[iu];
      }
      base[off] = data[static_cast<std::size_t>(k)];
    }
    const auto bytes = static_cast<std::size_t>(total) * sizeof(T);
    b.copy.assign(reinterpret_cast<unsigned char*>(base),
                  reinterpret_cast<unsigned char*>(base) + bytes);
    a = aj::borrow<T>(base + start, Shape(dims), strides);
    expr = std::string("borrow<") + aj::dtype_name(t) + ">(" + vals + ", " + dims_str(dims) +
           ", strides " + dims_str(strides) + ")";
    borrowed_.push_back(std::move(b));
  };
  switch (t) {
    case DType::bool_: put(bool{}); break;
    case DType::i32: put(std::int32_t{}); break;
    case DType::i64: put(std::int64_t{}); break;
    case DType::f32: put(float{}); break;
    case DType::f64: put(double{}); break;
    case DType::f16: put(aj::f16{}); break;
    case DType::bf16: put(aj::bf16{}); break;
  }
  ++used_[borrow ? "borrow" : "from_vector"];
  ++used_[std::string("input ") + aj::dtype_name(t)];
  return make_val(std::move(a), exact_bound(mag, nonfinite), fresh(), expr);
}

// A new input (kept in the pool) whose shape broadcasts with `with`.
inline RandomGraph::Val RandomGraph::input_like(const Dims& with, int kinds) {
  Val v = new_input(compatible_shape(with), random_dtype(kinds));
  pool_.push_back(v);
  return v;
}

// An array operand broadcast-compatible with `with`: an existing value
// (sharing a subexpression) or a new input.
inline RandomGraph::Arg RandomGraph::array_arg(const Dims& with, int kinds, bool need_exact) {
  Arg a;
  int k = -1;
  if (coin(0.65)) {
    k = pick([&](const Val& v) {
      Dims bc;
      return (kinds & kind_bit(v.dtype())) && (!need_exact || v.b.exact()) &&
             broadcast(with, v.dims(), &bc) && numel(bc) <= kMaxNumel;
    });
  }
  a.v = k >= 0 ? pool_[static_cast<std::size_t>(k)] : input_like(with, kinds);  // inputs are exact
  return a;
}

inline RandomGraph::Arg RandomGraph::scalar_arg(int kind, const std::vector<double>& choices) {
  Arg a;
  a.scalar = true;
  a.kind = kind;
  double c = choose(choices);
  if (kind == 2) a.f = c;
  else a.i = static_cast<std::int64_t>(c);
  if (kind == 0) a.i = coin(0.5);
  return a;
}

// NaN -> 0 and clip to [-lim, lim]: exact ops, continuous in the finite
// values (so an error bound carries through), and NaN positions are the same
// in both executors. Integers are clipped to whole bounds.
inline RandomGraph::Val RandomGraph::tame(const Val& v, double lim) {
  Bound b = v.b;
  b.nonfinite = false;
  b.rel_err *= 1.0 + 1e-6;  // relative error survives clipping to first order
  if (v.is_float()) {
    b.mag = std::min(b.mag, lim);
    if (v.b.nonfinite) {
      Array r = aj::where(v.a == v.a, aj::clip(v.a, -lim, lim), 0.0);
      return temp_val(std::move(r), b,
                      "where(" + v.name + " == " + v.name + ", clip(" + v.name + ", " +
                          fmt_double(-lim) + ", " + fmt_double(lim) + "), 0.0)");
    }
    return temp_val(aj::clip(v.a, -lim, lim), b,
                    "clip(" + v.name + ", " + fmt_double(-lim) + ", " + fmt_double(lim) + ")");
  }
  auto L = static_cast<std::int64_t>(std::max(1.0, std::floor(lim)));
  b.mag = std::min(b.mag, static_cast<double>(L));
  return temp_val(aj::clip(v.a, -L, L), b,
                  "clip(" + v.name + ", " + std::to_string(-L) + ", " + std::to_string(L) + ")");
}

// ---- the program ------------------------------------------------------------

inline void RandomGraph::build() {
  const int planned = uni(1, kMaxSteps);
  const int n = std::min(planned, limit_);
  const int first = uni(1, 3);
  for (int k = 0; k < first; ++k) pool_.push_back(new_input(random_shape(), random_dtype()));
  for (steps_ = 0; steps_ < n; ++steps_) {
    try {
      step();
    } catch (const aj::Error& e) {
      if (e.kind() != aj::Error::Kind::user) throw;
      ++skipped_;
      log_ += std::string("// skipped: ") + e.what() + "\n";
    }
  }
  // Outputs: the newest value, and up to three more (possibly repeated, and
  // possibly already evaluated) — evaluated together with aj::eval({...}).
  std::vector<int> idx{static_cast<int>(pool_.size()) - 1};
  const int more = uni(0, std::min(3, static_cast<int>(pool_.size()) - 1));
  for (int k = 0; k < more; ++k) idx.push_back(uni(0, static_cast<int>(pool_.size()) - 1));
  log_ += "outputs:";
  for (int i : idx) {
    const Val& v = pool_[static_cast<std::size_t>(i)];
    outputs_.push_back(Output{v.a, v.b, v.name});
    log_ += " " + v.name;
  }
  log_ += "\n";
}

inline void RandomGraph::step() {
  static const int w[] = {8, 3, 14, 22, 5, 5, 12, 14, 3, 3, 3, 2, 6, 8};
  int total = 0;
  for (int x : w) total += x;
  int r = uni(0, total - 1), k = 0;
  while (r >= w[k]) r -= w[k++];
  switch (k) {
    case 0: return step_input();
    case 1: return step_leaf();
    case 2: return step_unary();
    case 3: return step_binary();
    case 4: return step_where();
    case 5: return step_astype();
    case 6: return step_reduce();
    case 7: return step_view();
    case 8: return step_matmul();
    case 9: return step_concat();
    case 10: return step_eval();
    case 11: return step_drop();
    case 12: return step_scan_sort();
    default: return step_index();
  }
}

inline void RandomGraph::step_input() {
  Dims d =
      pool_.empty() || coin(0.5)
          ? random_shape()
          : compatible_shape(
                pool_[static_cast<std::size_t>(uni(0, static_cast<int>(pool_.size()) - 1))].dims());
  pool_.push_back(new_input(d, random_dtype()));
}

// Leaves made by arrayjit itself: fills, ranges, identities.
inline void RandomGraph::step_leaf() {
  const int u = uni(0, 4);
  const DType t = random_dtype();
  const std::string tn = aj::dtype_name(t);
  if (u == 0) {
    Dims d = random_shape();
    double c = choose(std::vector<double>{0, 1, 2, -3, 0.5});
    if (t == DType::bool_) c = c != 0;
    else if (!aj::is_float(t)) c = std::trunc(c);
    const aj::Scalar sc = t == DType::bool_ ? aj::Scalar(c != 0)
                          : aj::is_float(t) ? aj::Scalar(c)
                                            : aj::Scalar(static_cast<std::int64_t>(c));
    place(aj::full(Shape(d), sc, t), exact_bound(std::fabs(c)),
          "full(" + dims_str(d) + ", " + fmt_double(c) + ", " + tn + ")", "full");
  } else if (u == 1) {
    Dims d = random_shape();
    const bool one = coin(0.5);
    place(one ? aj::ones(Shape(d), t) : aj::zeros(Shape(d), t), exact_bound(1.0),
          std::string(one ? "ones(" : "zeros(") + dims_str(d) + ", " + tn + ")",
          one ? "ones" : "zeros");
  } else if (u == 2) {
    if (t == DType::bool_) return;
    const int n = uni(0, 12);
    place(aj::arange(std::int64_t{n}, t), exact_bound(n),
          "arange(" + std::to_string(n) + ", " + tn + ")", "arange");
  } else if (u == 3) {
    if (!aj::is_float(t)) return;
    const int n = uni(0, 9);
    place(aj::linspace(-2.0, 3.0, n, t), exact_bound(3.0),
          "linspace(-2, 3, " + std::to_string(n) + ", " + tn + ")", "linspace");
  } else {
    const int n = uni(1, 5), m = uni(1, 5), k = uni(-2, 2);
    place(aj::eye(n, m, k, t), exact_bound(1.0),
          "eye(" + std::to_string(n) + ", " + std::to_string(m) + ", " + std::to_string(k) + ", " +
              tn + ")",
          "eye");
  }
}

inline void RandomGraph::step_unary() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Val x = pool_[static_cast<std::size_t>(slot)];
  const std::string xn = x.name;
  if (x.dtype() == DType::bool_) {
    place(!x.a, x.b, "!" + xn, "not", slot);
    return;
  }
  static const std::vector<std::string> ops = {"neg", "abs",  "sign",    "floor", "ceil",  "round",
                                               "exp", "log",  "log1p",   "expm1", "sin",   "cos",
                                               "tan", "tanh", "sigmoid", "sqrt",  "rsqrt", "clip"};
  std::string op = choose(ops);
  const bool discontinuous = op == "sign" || op == "floor" || op == "ceil" || op == "round";
  if (discontinuous && !x.b.exact())
    op = choose(std::vector<std::string>{"neg", "abs", "tanh", "sin"});
  const bool fl = x.is_float();
  // Result type of the float-only functions: the float type, or f64 for integers.
  const DType ft = fl ? x.dtype() : DType::f64;
  const double eps = eps_of(ft);
  const double U = kUlps * eps;
  Bound b = x.b;
  if (op == "neg") return place(-x.a, b, "-" + xn, op, slot);
  if (op == "abs") return place(aj::abs(x.a), b, "abs(" + xn + ")", op, slot);
  if (op == "sign")
    return place(aj::sign(x.a), exact_bound(1, b.nonfinite), "sign(" + xn + ")", op, slot);
  if (op == "floor" || op == "ceil" || op == "round") {
    Array r = op == "floor" ? aj::floor(x.a) : op == "ceil" ? aj::ceil(x.a) : aj::round(x.a);
    return place(r, exact_bound(b.mag + 1, b.nonfinite), op + "(" + xn + ")", op, slot);
  }
  if (op == "clip") {
    if (fl) {
      double lo = choose(std::vector<double>{-2, -1, 0, 0.5}),
             hi = choose(std::vector<double>{1, 2, 3});
      b.mag = std::min(b.mag, std::max(std::fabs(lo), hi));
      return place(aj::clip(x.a, lo, hi), b,
                   "clip(" + xn + ", " + fmt_double(lo) + ", " + fmt_double(hi) + ")", op, slot);
    }
    std::int64_t lo = uni(-3, 0), hi = uni(1, 4);
    b.mag = std::min(b.mag, static_cast<double>(std::max(-lo, hi)));
    return place(aj::clip(x.a, lo, hi), b,
                 "clip(" + xn + ", " + std::to_string(lo) + ", " + std::to_string(hi) + ")", op,
                 slot);
  }
  // Float-only functions: computed in the float type (f64 for integers);
  // possibly a few ulps apart in an optimized backend.
  if (op == "exp" || op == "expm1") {
    Val p = prep(x, 10.0);
    const double M = p.b.mag, E = p.b.err();
    Bound r;
    if (op == "exp") {
      r.mag = std::exp(M);
      r.rel_err = std::expm1(E) + U;  // exp is relatively accurate down to underflow
      return place(aj::exp(p.a), r, "exp(" + p.name + ")", op, slot);
    }
    r.mag = std::expm1(M);
    r.abs_err = std::exp(M) * E + U;
    r.rel_err = U;
    return place(aj::expm1(p.a), r, "expm1(" + p.name + ")", op, slot);
  }
  if (op == "log" || op == "log1p" || op == "sqrt" || op == "rsqrt") {
    if (x.b.exact() && coin(0.35)) {
      // Raw on an exact input: NaN for negatives, -inf / inf at the poles, at
      // the same places in both executors.
      Bound r;
      r.nonfinite = true;
      if (op == "sqrt") {  // correctly rounded (IEEE 754): stays exact
        r.mag = std::sqrt(b.mag);
        return place(aj::sqrt(x.a), r, "sqrt(" + xn + ")", op, slot);
      }
      r.rel_err = U;
      r.abs_err = U;
      if (op == "rsqrt") {
        r.mag = max_of(ft);
        r.abs_err = 0;
        return place(aj::rsqrt(x.a), r, "rsqrt(" + xn + ")", op, slot);
      }
      r.mag = std::max(std::log1p(b.mag), 750.0);
      if (op == "log") return place(aj::log(x.a), r, "log(" + xn + ")", op, slot);
      return place(aj::log1p(x.a), r, "log1p(" + xn + ")", op, slot);
    }
    // Guarded: the argument |x| + 1 (|x| for log1p) keeps every function
    // Lipschitz (constant <= 1) on it.
    Val p = prep(x);
    const double M = p.b.mag;
    const double E = p.b.err() + (p.b.exact() ? 0.0 : eps * (M + 1));
    Bound r;
    r.abs_err = E + U;
    r.rel_err = U;
    const std::string pn = p.name;
    if (op == "log1p") {
      r.mag = std::log1p(M);
      return place(aj::log1p(aj::abs(p.a)), r, "log1p(abs(" + pn + "))", op, slot);
    }
    Array y = aj::abs(p.a) + 1;
    const std::string yn = "abs(" + pn + ") + 1";
    if (op == "log") {
      r.mag = std::log1p(M);
      return place(aj::log(y), r, "log(" + yn + ")", op, slot);
    }
    r.abs_err = 0.5 * E + U;
    if (op == "sqrt") {
      r.mag = std::sqrt(M + 1);
      return place(aj::sqrt(y), r, "sqrt(" + yn + ")", op, slot);
    }
    r.mag = 1;
    return place(aj::rsqrt(y), r, "rsqrt(" + yn + ")", op, slot);
  }
  if (op == "tan") {
    Val p = prep(x, 1.2);  // tan is Lipschitz with 1/cos^2(1.2) < 7.7 on [-1.2, 1.2]
    Bound r;
    r.mag = std::tan(std::min(p.b.mag, 1.2));
    r.abs_err = 7.7 * p.b.err() + U * r.mag;
    r.rel_err = U;
    return place(aj::tan(p.a), r, "tan(" + p.name + ")", op, slot);
  }
  // sin, cos, tanh, sigmoid: |f| <= 1, Lipschitz constant <= 1.
  Val p = prep(x, op == "sin" || op == "cos" ? 100.0 : kTameMag);
  Bound r;
  r.mag = op == "tanh" ? std::min(p.b.mag, 1.0) : 1.0;
  r.abs_err = (op == "sigmoid" ? 0.25 : 1.0) * p.b.err() + U;
  r.rel_err = U;
  Array y = op == "sin"    ? aj::sin(p.a)
            : op == "cos"  ? aj::cos(p.a)
            : op == "tanh" ? aj::tanh(p.a)
                           : aj::sigmoid(p.a);
  place(y, r, op + "(" + p.name + ")", op, slot);
}

inline void RandomGraph::step_binary() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Arg a;
  a.v = pool_[static_cast<std::size_t>(slot)];
  const int cls = uni(0, 99) < 60 ? 0 : uni(0, 99) < 65 ? 1 : 2;  // arithmetic, compare, logical
  static const char* cmp_names[] = {"==", "!=", "<", "<=", ">", ">="};

  if (cls == 2 && a.is_bool()) {
    Arg b = coin(0.2) ? scalar_arg(0, {0}) : array_arg(a.dims(), kB, true);
    const bool conj = coin(0.5), swap = coin(0.5);
    const Arg& x = swap ? b : a;
    const Arg& y = swap ? a : b;
    Array r = conj ? (x.op() && y.op()) : (x.op() || y.op());
    const std::string opn = conj ? "&&" : "||";
    return place(r, exact_bound(1), x.str() + " " + opn + " " + y.str(), opn, slot);
  }
  if (cls >= 1) {
    // Comparisons need exact operands (an inexact one could flip the result).
    if (!a.exact()) {
      int k = pick([](const Val& v) { return v.b.exact(); });
      if (k < 0) return;
      a.v = pool_[static_cast<std::size_t>(k)];
    }
    Arg b;
    if (coin(0.3)) {
      b = a.is_bool()    ? scalar_arg(0, {0})
          : a.is_float() ? scalar_arg(2, {0.0, 0.5, -1.5, 2.0})
                         : scalar_arg(1, {0, 1, -2, 3});
    } else {
      b = array_arg(a.dims(), kAny, true);
    }
    const int c = uni(0, 5);
    Array r;
    switch (c) {
      case 0: r = a.op() == b.op(); break;
      case 1: r = a.op() != b.op(); break;
      case 2: r = a.op() < b.op(); break;
      case 3: r = a.op() <= b.op(); break;
      case 4: r = a.op() > b.op(); break;
      default: r = a.op() >= b.op(); break;
    }
    return place(r, exact_bound(1), a.str() + " " + cmp_names[c] + " " + b.str(), cmp_names[c],
                 slot);
  }

  // Arithmetic.
  static const std::vector<std::string> ops = {"add",         "sub",          "mul", "div",
                                               "true_divide", "floor_divide", "mod", "maximum",
                                               "minimum",     "pow"};
  std::string op = choose(ops);
  if (a.is_bool()) {
    if (op == "maximum" || op == "minimum") {
      Arg b = array_arg(a.dims(), kB, false);
      Array r = op == "maximum" ? aj::maximum(a.op(), b.op()) : aj::minimum(a.op(), b.op());
      return place(r, exact_bound(1), op + "(" + a.str() + ", " + b.str() + ")", op, slot);
    }
    DType t = random_dtype(kNum);
    a.v = temp_val(a.v.a.astype(t), exact_bound(1),
                   "astype(" + a.v.name + ", " + aj::dtype_name(t) + ")");
  }
  // The second operand: a scalar (either side) or an array of any dtype but
  // bool-with-bool.
  Arg b;
  const bool scalar = coin(0.3);
  if (scalar) {
    const bool div = op == "div" || op == "true_divide" || op == "floor_divide" || op == "mod";
    if (op == "pow") {
      b = a.is_float() || coin(0.3) ? scalar_arg(2, {2.0, 3.0, 0.5, -1.0, 1.5, -0.5, 0.0, 1.0})
                                    : scalar_arg(1, {0, 1, 2, 3, -1});
    } else if (a.is_float() ? coin(0.8) : coin(0.2)) {
      b = div ? scalar_arg(2, {0.5, 2.0, -1.5, 3.0, 0.25, -4.0})
              : scalar_arg(2, {0.0, -0.0, 1.0, 0.5, 2.0, -1.5, 3.0, 0.25});
    } else {
      b = div ? scalar_arg(1, {1, 2, -3, 5, -1}) : scalar_arg(1, {0, 1, -1, 2, 3, -3, 5});
    }
  } else {
    // (no bool divisors or exponents: the guarded forms take abs() of them)
    const bool numeric = op == "div" || op == "true_divide" || op == "pow";
    b = array_arg(a.dims(), numeric ? kNum : kAny, false);
  }
  const bool swap = scalar && op != "pow" && op != "div" && op != "true_divide" &&
                    op != "floor_divide" && op != "mod" && coin(0.3);
  const bool fl = a.is_float() || b.is_float() || op == "true_divide";
  const bool exact = a.exact() && b.exact();
  const auto call = [](const std::string& f, const Arg& x, const Arg& y) {
    return f + "(" + x.str() + ", " + y.str() + ")";
  };

  if (op == "maximum" || op == "minimum") {
    // Exact ops, continuous: no taming needed, NaN propagates in both.
    Bound ba = a.bound(), bb = b.bound(), r;
    r.mag = std::max(ba.mag, bb.mag);
    r.abs_err = std::max(ba.abs_err, bb.abs_err);
    r.rel_err = std::max(ba.rel_err, bb.rel_err);
    r.nonfinite = ba.nonfinite || bb.nonfinite;
    const Arg& x = swap ? b : a;
    const Arg& y = swap ? a : b;
    Array out = op == "maximum" ? aj::maximum(x.op(), y.op()) : aj::minimum(x.op(), y.op());
    return place(out, r, call(op, x, y), op, slot);
  }
  if (fl && (op == "floor_divide" || op == "mod") && !exact) op = "sub";  // discontinuous
  // Inexact arithmetic meets only tamed operands.
  if (!exact || (fl && op == "pow")) {
    if (!(fl && op == "pow" && exact && scalar)) {
      a = prep(a);
      b = prep(b);
    }
  }
  const Bound ba = a.bound(), bb = b.bound();
  // Rounding unit of the result: the coarsest float operand's (an upper
  // bound: f32 with an integer gives f64), else f64's.
  const double reps = fl ? eps_from({a.scalar ? DType::f64 : a.v.dtype(), b.scalar ? DType::f64 : b.v.dtype()}) : 0.0;
  const double rnd = exact ? 0.0 : reps;
  Bound r;
  r.nonfinite = ba.nonfinite || bb.nonfinite;
  const Arg& x = swap ? b : a;
  const Arg& y = swap ? a : b;

  if (op == "add" || op == "sub") {
    r.mag = ba.mag + bb.mag;
    r.abs_err = ba.err() + bb.err();
    r.rel_err = rnd;
    Array out = op == "add" ? aj::add(x.op(), y.op()) : aj::subtract(x.op(), y.op());
    return place(out, r, call(op, x, y), op, slot);
  }
  if (op == "mul") {
    r.mag = ba.mag * bb.mag;
    const double Ea = ba.abs_err, Eb = bb.abs_err;
    r.abs_err = Ea * bb.mag + Eb * ba.mag + Ea * Eb;
    r.rel_err = ba.rel_err + bb.rel_err + ba.rel_err * bb.rel_err + rnd;
    return place(aj::multiply(x.op(), y.op()), r, call(op, x, y), op, slot);
  }
  if (!fl) {
    // Integer division, modulo, power: exact (wrapping, x / 0 == 0).
    Array out;
    if (op == "div") out = aj::divide(a.op(), b.op());
    else if (op == "floor_divide") out = aj::floor_divide(a.op(), b.op());
    else if (op == "mod") out = aj::mod(a.op(), b.op());
    else out = aj::pow(a.op(), b.op());
    double mag = op == "mod"   ? bb.mag
                 : op == "pow" ? std::pow(std::max(ba.mag, 1.0), bb.mag)
                               : ba.mag;
    return place(out, exact_bound(mag), call(op, a, b), op, slot);
  }
  if (op == "floor_divide" || op == "mod") {  // exact operands (checked above)
    Array out = op == "mod" ? aj::mod(a.op(), b.op()) : aj::floor_divide(a.op(), b.op());
    r = exact_bound(op == "mod" ? bb.mag : max_of(DType::f64), true);
    return place(out, r, call(op, a, b), op, slot);
  }
  if (op == "div" || op == "true_divide") {
    auto f = [&](const aj::Operand& p, const aj::Operand& q) {
      return op == "div" ? aj::divide(p, q) : aj::true_divide(p, q);
    };
    if (exact) {  // IEEE division: exact; x / 0 gives inf or NaN in both
      const bool nonzero = b.scalar;
      r = exact_bound(nonzero ? ba.mag / std::fabs(b.f != 0 ? b.f : static_cast<double>(b.i))
                              : max_of(DType::f64),
                      r.nonfinite || !nonzero);
      return place(f(a.op(), b.op()), r, call(op, a, b), op, slot);
    }
    if (b.scalar) {  // nonzero scalar divisor, |c| >= 0.25
      const double c = std::fabs(b.kind == 2 ? b.f : static_cast<double>(b.i));
      r.mag = ba.mag / c;
      r.abs_err = ba.abs_err / c;
      r.rel_err = ba.rel_err + rnd;
      return place(f(a.op(), b.op()), r, call(op, a, b), op, slot);
    }
    // Inexact divisor: divide by |b| + 0.5 >= 0.5, well conditioned.
    Array d = aj::abs(b.v.a) + 0.5;
    const double Ed = bb.err() + reps * (bb.mag + 0.5);
    r.mag = 2 * ba.mag;
    r.abs_err = 2 * ba.abs_err + 4 * ba.mag * Ed;
    r.rel_err = ba.rel_err + reps + rnd;
    return place(f(a.op(), aj::Operand(d)), r, op + "(" + a.str() + ", abs(" + b.str() + ") + 0.5)",
                 op, slot);
  }
  // pow on floats: a few ulps from the reference in an optimized backend.
  const double U = kUlps * reps;
  if (exact && b.scalar) {
    // Raw base (negative bases give NaN for fractional exponents, 0 ** -1 inf).
    const double p = b.kind == 2 ? b.f : static_cast<double>(b.i);
    r = exact_bound(p >= 0 ? std::pow(ba.mag, p) : max_of(DType::f64), true);
    r.rel_err = U;
    return place(aj::pow(a.op(), b.op()), r, call(op, a, b), op, slot);
  }
  // Base |a| + 0.5 in [0.5, Ma + 0.5]; exponent a scalar or clip(b, -2, 2).
  Array base = aj::abs(a.v.a) + 0.5;
  const double MB = ba.mag + 0.5;
  const double RB = (ba.err() + reps * MB) / 0.5;  // relative error of the base
  double pmax, Ep = 0;
  Array out;
  std::string expr;
  if (b.scalar) {
    pmax = std::fabs(b.kind == 2 ? b.f : static_cast<double>(b.i));
    out = aj::pow(aj::Operand(base), b.op());
    expr = "pow(abs(" + a.str() + ") + 0.5, " + b.str() + ")";
  } else {
    pmax = 2;
    Ep = bb.err();
    Array e = aj::clip(b.v.a, -2.0, 2.0);
    out = aj::pow(aj::Operand(base), aj::Operand(e));
    expr = "pow(abs(" + a.str() + ") + 0.5, clip(" + b.str() + ", -2, 2))";
  }
  r.nonfinite = false;
  r.mag = std::max(std::pow(MB, pmax), std::pow(2.0, pmax));
  r.rel_err = std::expm1(pmax * RB * 1.01 + std::max(std::log(MB), std::log(2.0)) * Ep) + U;
  place(out, r, expr, op, slot);
}

inline void RandomGraph::step_where() {
  int k = pick([](const Val& v) { return v.dtype() == DType::bool_; });
  Val c;
  if (k >= 0 && coin(0.7)) {
    c = pool_[static_cast<std::size_t>(k)];
  } else {
    int e = pick([](const Val& v) { return v.b.exact() && v.dtype() != DType::bool_; });
    if (e < 0) return;
    const Val& s = pool_[static_cast<std::size_t>(e)];
    c = temp_val(s.a > 0, exact_bound(1), s.name + " > 0");
  }
  auto value = [&](const Dims& with) {
    if (coin(0.25)) return scalar_arg(coin(0.5) ? 2 : 1, {0, 1, -2, 3});
    return array_arg(with, kAny, false);
  };
  Arg x = value(c.dims());
  Dims cx;
  broadcast(c.dims(), x.dims(), &cx);
  Arg y = value(cx);
  Bound bx = x.bound(), by = y.bound(), r;
  r.mag = std::max(bx.mag, by.mag);
  r.abs_err = std::max(bx.abs_err, by.abs_err);
  r.rel_err = std::max(bx.rel_err, by.rel_err);
  r.nonfinite = bx.nonfinite || by.nonfinite;
  // (the values promote to a common type, which never narrows: exact)
  place(aj::where(c.a, x.op(), y.op()), r,
        "where(" + c.name + ", " + x.str() + ", " + y.str() + ")", "where", -1);
}

inline void RandomGraph::step_astype() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Val x = pool_[static_cast<std::size_t>(slot)];
  DType t = random_dtype();
  if (t == x.dtype()) return;
  // To integers or bool only from exact values (truncation is discontinuous).
  if (!aj::is_float(t) && !x.b.exact()) t = x.dtype() == DType::f32 ? DType::f64 : DType::f32;
  Bound b = x.b;
  if (!aj::is_float(t)) {
    b = exact_bound(t == DType::bool_ ? 1.0 : std::min(b.mag, max_of(t)));  // saturates, NaN -> 0
  } else if (eps_of(t) > eps_of(x.dtype()) && aj::is_float(x.dtype()) && !b.exact()) {
    b.rel_err += eps_of(t);  // narrowed: one more rounding
  }
  place(x.a.astype(t), b, "astype(" + x.name + ", " + aj::dtype_name(t) + ")", "astype", slot);
}

inline void RandomGraph::step_reduce() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Val x = pool_[static_cast<std::size_t>(slot)];
  static const std::vector<std::string> ops = {"sum", "prod", "mean",   "max",   "min",
                                               "all", "any",  "argmax", "argmin"};
  std::string op = choose(ops);
  const Dims d = x.dims();
  const int r = static_cast<int>(d.size());
  const bool keep = coin(0.4);
  // Axes: all (default), one (maybe negative), or a random subset (maybe empty).
  aj::Axes axes;
  std::vector<int> ax;
  std::string axs = "all";
  const int form = uni(0, 2);
  if (form == 1 && r > 0) {
    int a = uni(0, r - 1);
    ax = {a};
    const int given = coin(0.3) ? a - r : a;
    axes = aj::Axes(given);
    axs = std::to_string(given);
  } else if (form == 2) {
    std::vector<int> given;
    for (int a = 0; a < r; ++a) {
      if (coin(0.5)) {
        ax.push_back(a);
        given.push_back(coin(0.3) ? a - r : a);
      }
    }
    axes = aj::Axes(given);
    axs = "{";
    for (std::size_t i = 0; i < given.size(); ++i)
      axs += (i ? ", " : "") + std::to_string(given[i]);
    axs += "}";
  } else {
    for (int a = 0; a < r; ++a) ax.push_back(a);
  }
  std::int64_t N = 1, out_n = 1;
  for (int a = 0; a < r; ++a) {
    const bool red = std::find(ax.begin(), ax.end(), a) != ax.end();
    (red ? N : out_n) *= d[static_cast<std::size_t>(a)];
  }
  const bool no_identity = N == 0;  // an error even when the result is empty too (as NumPy)
  const bool needs_exact = op == "all" || op == "any" || op == "argmax" || op == "argmin";
  if (needs_exact && !x.b.exact()) op = "max";
  if ((op == "max" || op == "min" || op == "argmax" || op == "argmin") && no_identity) op = "sum";
  if (op == "prod" && N > 48) op = "sum";
  const std::string kd = keep ? ", keepdims" : "";

  if (op == "argmax" || op == "argmin") {
    std::optional<int> axis;
    std::string an = "flat";
    if (r > 0 && form != 0) {
      axis = ax.empty() ? 0 : ax[0];
      if (d[static_cast<std::size_t>(*axis)] == 0) return;  // no identity, even for an empty result
      an = std::to_string(*axis);
    } else if (numel(d) == 0) {
      return;  // flattened argmax of nothing
    }
    Array out = op == "argmax" ? aj::argmax(x.a, axis, keep) : aj::argmin(x.a, axis, keep);
    return place(out, exact_bound(std::max<double>(1, static_cast<double>(numel(d)))),
                 op + "(" + x.name + ", " + an + kd + ")", op, slot);
  }
  const std::string tail = ", " + axs + kd + ")";
  if (op == "all" || op == "any") {
    Array out = op == "all" ? aj::all(x.a, axes, keep) : aj::any(x.a, axes, keep);
    return place(out, exact_bound(1), op + "(" + x.name + tail, op, slot);
  }
  if (op == "max" || op == "min") {  // order-independent: exact on exact inputs
    Array out = op == "max" ? aj::max(x.a, axes, keep) : aj::min(x.a, axes, keep);
    return place(out, x.b, op + "(" + x.name + tail, op, slot);
  }
  const bool fl = x.is_float() || op == "mean";
  const double Nd = static_cast<double>(N);
  if (!fl) {  // integer sum / prod: exact (wrapping), i64 for bool and i32
    const double mag = op == "sum" ? Nd * x.b.mag : std::pow(std::max(x.b.mag, 1.0), Nd);
    Array out = op == "sum" ? aj::sum(x.a, axes, keep) : aj::prod(x.a, axes, keep);
    return place(out, exact_bound(mag), op + "(" + x.name + tail, op, slot);
  }
  const double eps = eps_from({x.dtype()});
  Bound b;
  if (op == "prod") {
    Val p = prep(x, 1.5);
    const double M = p.b.mag, E = p.b.err();
    b.mag = std::pow(M, Nd);
    b.abs_err = Nd * E * std::pow(M + E, std::max(Nd - 1, 0.0)) + Nd * eps * std::pow(M + E, Nd);
    b.rel_err =
        eps;  // even N = 1: 1 * x need not keep x's zero sign... and -0.0 may be summed away
    return place(aj::prod(p.a, axes, keep), b, "prod(" + p.name + tail, op, slot);
  }
  Val p = prep(x);
  const double M = p.b.mag, E = p.b.err();
  if (op == "sum") {
    b.mag = Nd * M;
    b.abs_err = Nd * E + (N >= 2 ? (Nd - 1) * eps * Nd * M : 0.0);
    b.rel_err = eps;  // sum of one -0.0 is +0.0 (0 + x); an optimizer may keep -0.0
    return place(aj::sum(p.a, axes, keep), b, "sum(" + p.name + tail, op, slot);
  }
  b.mag = M;  // mean = sum / N
  b.abs_err = E + (N >= 2 ? (Nd - 1) * eps * M : 0.0);
  b.rel_err = eps;
  b.nonfinite = N == 0 && out_n != 0;  // 0 / 0
  place(aj::mean(p.a, axes, keep), b, "mean(" + p.name + tail, op, slot);
}

// Issue 14's ops. Scans add in order on every backend, so exact inputs give
// exact (bit-identical) results; on inexact ones they take sum's bound.
// sort's values move each input element to another place (its bound);
// argsort and topk's positions need exact inputs (ties could flip).
inline void RandomGraph::step_scan_sort() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Val x = pool_[static_cast<std::size_t>(slot)];
  const Dims d = x.dims();
  const int r = static_cast<int>(d.size());
  static const std::vector<std::string> ops = {"cumsum", "cumprod", "sort", "argsort", "topk",
                                               "erf",    "erfc",    "softmax", "logsumexp"};
  std::string op = choose(ops);
  const bool any_axis = r > 0;
  int axis = any_axis ? uni(0, r - 1) : 0;
  const std::int64_t extent = any_axis ? d[static_cast<std::size_t>(axis)] : 1;
  const int given = any_axis && coin(0.3) ? axis - r : axis;
  const std::string an = std::to_string(given);
  if ((op == "sort" || op == "argsort" || op == "topk") && !any_axis) op = "cumsum";
  if ((op == "argsort" || op == "topk") && !x.b.exact()) op = "sort";
  if ((op == "erf" || op == "erfc" || op == "softmax" || op == "logsumexp") && x.dtype() == DType::bool_) op = "cumsum";
  if (op == "cumprod" && extent > 24) op = "cumsum";
  const DType ft = x.is_float() ? x.dtype() : DType::f64;
  const double eps = eps_of(ft), U = kUlps * eps;

  if (op == "cumsum" || op == "cumprod") {
    const bool flat = !any_axis || coin(0.2);
    const std::optional<int> ax = flat ? std::nullopt : std::optional<int>(given);
    const double n = static_cast<double>(flat ? numel(d) : extent);
    const std::string tail = flat ? ")" : ", " + an + ")";
    if (!x.is_float()) {  // integers wrap the same everywhere; i64 for bool and i32
      const double mag = op == "cumsum" ? n * x.b.mag : std::pow(std::max(x.b.mag, 1.0), n);
      Array out = op == "cumsum" ? aj::cumsum(x.a, ax) : aj::cumprod(x.a, ax);
      return place(out, exact_bound(mag), op + "(" + x.name + tail, op, slot);
    }
    if (x.b.exact() && op == "cumsum") {  // one order everywhere: the same bits
      Bound b = exact_bound(n * x.b.mag, x.b.nonfinite);
      return place(aj::cumsum(x.a, ax), b, "cumsum(" + x.name + tail, op, slot);
    }
    Val p = prep(x, op == "cumprod" ? 1.5 : kTameMag);
    const double M = p.b.mag, E = p.b.err();
    Bound b;
    if (op == "cumsum") {
      b.mag = n * M;
      b.abs_err = n * E + (n >= 2 ? (n - 1) * eps * n * M : 0.0);
      b.rel_err = eps;
      return place(aj::cumsum(p.a, ax), b, "cumsum(" + p.name + tail, op, slot);
    }
    if (p.b.exact()) {
      b = exact_bound(std::pow(M, n));
      return place(aj::cumprod(p.a, ax), b, "cumprod(" + p.name + tail, op, slot);
    }
    b.mag = std::pow(M, n);
    b.abs_err = n * E * std::pow(M + E, std::max(n - 1, 0.0)) + n * eps * std::pow(M + E, n);
    b.rel_err = eps;
    return place(aj::cumprod(p.a, ax), b, "cumprod(" + p.name + tail, op, slot);
  }
  // Sorting is 1-Lipschitz in max |dx| but moves elements: an absolute bound.
  Bound moved = x.b;
  if (!moved.exact()) moved.abs_err = moved.err(), moved.rel_err = 0;
  if (op == "sort") return place(aj::sort(x.a, given), moved, "sort(" + x.name + ", " + an + ")", op, slot);
  if (op == "argsort") {
    return place(aj::argsort(x.a, given), exact_bound(static_cast<double>(extent)),
                 "argsort(" + x.name + ", " + an + ")", op, slot);
  }
  if (op == "topk") {
    const auto k = static_cast<std::int64_t>(uni(0, static_cast<int>(std::min<std::int64_t>(extent, 6))));
    const aj::TopK t = aj::topk(x.a, k, given);
    const std::string e = "topk(" + x.name + ", " + std::to_string(k) + ", " + an + ")";
    if (coin(0.5)) return place(t.values, moved, e + ".values", op, slot);
    return place(t.indices, exact_bound(static_cast<double>(extent)), e + ".indices", op, slot);
  }
  // erf, erfc: |f| <= 2, Lipschitz 2/sqrt(pi) < 1.13.
  Val p = prep(x);
  const double E = p.b.err();
  Bound b;
  if (op == "erf" || op == "erfc") {
    b.mag = op == "erf" ? 1.0 : 2.0;
    b.abs_err = 1.13 * E + U;
    b.rel_err = U;
    return place(op == "erf" ? aj::erf(p.a) : aj::erfc(p.a), b, op + "(" + p.name + ")", op, slot);
  }
  if (!any_axis) return;
  // softmax: values in [0, 1], each moves at most 2 max|dx|; exp, a sum of
  // n terms and a division round. logsumexp: 1-Lipschitz in max|dx|, plus
  // the rounding of the sum (relative, so absolute in the log) and the log.
  const double n = static_cast<double>(extent);
  if (op == "softmax") {
    b.mag = 1;
    b.abs_err = 2 * E + U + (n + 2) * eps;
    return place(aj::softmax(p.a, given), b, "softmax(" + p.name + ", " + an + ")", op, slot);
  }
  if (extent == 0) return;
  b.mag = p.b.mag + std::log(n) + 1;
  b.abs_err = E + U + (n + 2) * eps;
  b.rel_err = U;
  place(aj::logsumexp(p.a, given), b, "logsumexp(" + p.name + ", " + an + ")", op, slot);
}

inline void RandomGraph::step_view() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Val x = pool_[static_cast<std::size_t>(slot)];
  const Dims d = x.dims();
  const int r = static_cast<int>(d.size());
  const int u = uni(0, 6);
  if (u == 0 && r >= 2) {  // transpose
    std::vector<int> perm(static_cast<std::size_t>(r));
    for (int i = 0; i < r; ++i) perm[static_cast<std::size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng_);
    if (coin(0.3)) return place(x.a.T(), x.b, x.name + ".T()", "transpose", slot);
    std::string ps = "{";
    for (int i = 0; i < r; ++i)
      ps += (i ? ", " : "") + std::to_string(perm[static_cast<std::size_t>(i)]);
    return place(aj::transpose(x.a, perm), x.b, "transpose(" + x.name + ", " + ps + "})",
                 "transpose", slot);
  }
  if ((u == 1 || u == 2) && r >= 1) {  // slice with steps, negative steps and bounds
    std::vector<aj::Slice> sl;
    std::string s = "{";
    const int ns = uni(1, r);
    for (int i = 0; i < ns; ++i) {
      const std::int64_t n = d[static_cast<std::size_t>(i)];
      const std::int64_t step = choose(std::vector<std::int64_t>{1, 1, 2, 3, -1, -2});
      std::optional<std::int64_t> start, stop;
      if (step > 0) {
        if (coin(0.6)) start = uni(static_cast<int>(-n), static_cast<int>(n));
        if (coin(0.6)) stop = uni(static_cast<int>(-n), static_cast<int>(n));
      } else if (n > 0) {
        if (coin(0.6)) start = uni(static_cast<int>(-n), static_cast<int>(n) - 1);
        if (coin(0.5)) stop = uni(static_cast<int>(-n), static_cast<int>(n) - 1);
      }
      sl.emplace_back(start, stop, step);
      s += std::string(i ? ", " : "") + "{" + (start ? std::to_string(*start) : "_") + ":" +
           (stop ? std::to_string(*stop) : "_") + ":" + std::to_string(step) + "}";
    }
    return place(aj::slice(x.a, sl), x.b, "slice(" + x.name + ", " + s + "})", "slice", slot);
  }
  if (u == 3) {  // broadcast_to: more leading axes, size-1 axes widened
    Dims t;
    const int lead = r < 4 ? uni(0, 1) : 0;
    for (int i = 0; i < lead; ++i) t.push_back(uni(1, 3));
    for (auto e : d) t.push_back(e == 1 && coin(0.6) ? uni(2, 4) : e);
    if (numel(t) > kMaxNumel) return;
    return place(aj::broadcast_to(x.a, Shape(t)), x.b,
                 "broadcast_to(" + x.name + ", " + dims_str(t) + ")", "broadcast_to", slot);
  }
  if (u == 4) {  // reshape: regroup the elements (of strided views too)
    const std::int64_t n = numel(d);
    Dims t;
    if (n == 0) {
      t = choose(std::vector<Dims>{{0}, {0, 2}, {3, 0}, {1, 0, 1}});
    } else {
      std::int64_t rem = n;
      for (std::int64_t f = 2; f <= rem && t.size() < 3;) {
        if (rem % f == 0 && coin(0.5)) {
          t.push_back(f);
          rem /= f;
        } else {
          ++f;
        }
      }
      t.push_back(rem);
      std::shuffle(t.begin(), t.end(), rng_);
      if (coin(0.2)) t.insert(t.begin() + uni(0, static_cast<int>(t.size())), 1);
    }
    Dims given = t;
    if (n > 0 && coin(0.3))
      given[static_cast<std::size_t>(uni(0, static_cast<int>(t.size()) - 1))] = -1;
    return place(aj::reshape(x.a, Shape(given)), x.b,
                 "reshape(" + x.name + ", " + dims_str(given) + ")", "reshape", slot);
  }
  if (u == 5 && r < 5) {
    const int axis = uni(-(r + 1), r);
    return place(aj::expand_dims(x.a, axis), x.b,
                 "expand_dims(" + x.name + ", " + std::to_string(axis) + ")", "expand_dims", slot);
  }
  // squeeze: all size-1 axes, or some of them
  std::vector<int> ones;
  for (int i = 0; i < r; ++i) {
    if (d[static_cast<std::size_t>(i)] == 1 && coin(0.6)) ones.push_back(coin(0.3) ? i - r : i);
  }
  if (coin(0.4)) return place(aj::squeeze(x.a), x.b, "squeeze(" + x.name + ")", "squeeze", slot);
  std::string s = "{";
  for (std::size_t i = 0; i < ones.size(); ++i) s += (i ? ", " : "") + std::to_string(ones[i]);
  place(aj::squeeze(x.a, aj::Axes(ones)), x.b, "squeeze(" + x.name + ", " + s + "})", "squeeze",
        slot);
}

inline void RandomGraph::step_matmul() {
  int k = pick([](const Val& v) { return v.a.ndim() >= 1 && v.a.ndim() <= 3; });
  if (k < 0) return;
  Val a = pool_[static_cast<std::size_t>(k)];
  if (a.dtype() == DType::bool_) {
    a = temp_val(a.a.astype(DType::i32), exact_bound(1), "astype(" + a.name + ", i32)");
  }
  const Dims da = a.dims();
  const std::int64_t K = da.back();
  // b: a vector [K], a matrix [K, m], or a batch [..., K, m] broadcasting with a's batch.
  Dims db;
  const int form = uni(0, 2);
  if (form == 0) {
    db = {K};
  } else {
    if (form == 2 && da.size() >= 3) db = compatible_shape(Dims(da.begin(), da.end() - 2));
    else if (form == 2) db = {uni(1, 3)};
    db.push_back(K);
    db.push_back(uni(1, 4));
  }
  const int kb = pick([&](const Val& v) { return v.dims() == db; });
  Val b;
  if (kb >= 0 && coin(0.6)) {
    b = pool_[static_cast<std::size_t>(kb)];
  } else {
    b = new_input(db, random_dtype(kNum));
    pool_.push_back(b);
  }
  // Result size: broadcast batch x rows x columns.
  const Dims ab(da.begin(),
                da.end() - std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(da.size())));
  const Dims bb(db.begin(),
                db.end() - std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(db.size())));
  Dims batch;
  if (!broadcast(ab, bb, &batch)) return;
  const std::int64_t rows = da.size() >= 2 ? da[da.size() - 2] : 1;
  const std::int64_t cols = db.size() >= 2 ? db.back() : 1;
  if (numel(batch) * rows * cols > kMaxNumel) return;
  const bool fl = a.is_float() || b.is_float();
  Bound r;
  if (!fl) {  // integers: exact (wrapping)
    r = exact_bound(static_cast<double>(K) * a.b.mag * b.b.mag);
  } else {
    a = prep(a);
    b = prep(b);
    const double eps = eps_from({a.dtype(), b.dtype()});
    const double Kd = static_cast<double>(K), Ma = a.b.mag, Mb = b.b.mag, Ea = a.b.err(),
                 Eb = b.b.err();
    r.mag = Kd * Ma * Mb;
    r.abs_err = Kd * (Ea * Mb + Eb * Ma + Ea * Eb) + Kd * eps * Kd * (Ma + Ea) * (Mb + Eb);
    r.rel_err = eps;
  }
  place(aj::matmul(a.a, b.a), r, "matmul(" + a.name + ", " + b.name + ")", "matmul", -1);
}

inline void RandomGraph::step_concat() {
  int k = pick([](const Val& v) { return v.a.ndim() >= 1; });
  if (k < 0) return;
  const Val a = pool_[static_cast<std::size_t>(k)];
  const Dims d = a.dims();
  const int r = static_cast<int>(d.size());
  const bool stack = coin(0.35);
  const int axis = stack ? uni(-(r + 1), r) : uni(-r, r - 1);
  const int ax = axis < 0 ? axis + (stack ? r + 1 : r) : axis;
  std::vector<Val> parts{a};
  const int more = uni(1, 2);
  for (int i = 0; i < more; ++i) {
    if (coin(0.25)) {
      parts.push_back(a);  // the same value twice: a shared subexpression
      continue;
    }
    int j = pick([&](const Val& v) {
      Dims e = v.dims();
      if (e.size() != d.size()) return false;
      for (int q = 0; q < r; ++q) {
        if ((stack || q != ax) && e[static_cast<std::size_t>(q)] != d[static_cast<std::size_t>(q)])
          return false;
      }
      return true;
    });
    if (j >= 0 && coin(0.6)) {
      parts.push_back(pool_[static_cast<std::size_t>(j)]);
    } else {
      Dims e = d;
      if (!stack) e[static_cast<std::size_t>(ax)] = uni(0, 3);
      Val v = new_input(e, random_dtype());
      pool_.push_back(v);
      parts.push_back(v);
    }
  }
  std::int64_t total = 0;
  Bound b;
  std::vector<Array> arrays;
  std::string names;
  for (auto& p : parts) {
    total += numel(p.dims());
    b.mag = std::max(b.mag, p.b.mag);
    b.abs_err = std::max(b.abs_err, p.b.abs_err);
    b.rel_err = std::max(b.rel_err, p.b.rel_err);
    b.nonfinite |= p.b.nonfinite;
    arrays.push_back(p.a);
    names += (names.empty() ? "" : ", ") + p.name;
  }
  if (total > kMaxNumel) return;
  const std::string op = stack ? "stack" : "concatenate";
  Array out = stack ? aj::stack(arrays, axis) : aj::concatenate(arrays, axis);
  place(out, b, op + "({" + names + "}, " + std::to_string(axis) + ")", op, -1);
}

// Indices of shape `dims`: small integers around the axis extents the
// programs use (out of range both ways: clamped by gathers, dropped by
// scatters), sometimes computed from an existing exact integer value.
inline RandomGraph::Val RandomGraph::index_val(const Dims& dims) {
  const DType t = coin(0.5) ? DType::i32 : DType::i64;
  Val v = new_input(dims, t);
  pool_.push_back(v);
  if (coin(0.3)) return temp_val(v.a % 7 - 2, exact_bound(9), "mod(" + v.name + ", 7) - 2");
  return v;
}

inline void RandomGraph::step_index() {
  const int slot = uni(0, static_cast<int>(pool_.size()) - 1);
  Val x = pool_[static_cast<std::size_t>(slot)];
  const Dims d = x.dims();
  const int r = static_cast<int>(d.size());
  const int u = uni(0, 9);
  const int ax = r ? uni(0, r - 1) : 0;
  const int axis_arg = r && coin(0.3) ? ax - r : ax;
  const std::string xn = x.name, axs = std::to_string(axis_arg);
  auto join = [](const Bound& a, const Bound& b) {
    Bound o;
    o.mag = std::max(a.mag, b.mag);
    o.abs_err = std::max(a.abs_err, b.abs_err);
    o.rel_err = std::max(a.rel_err, b.rel_err);
    o.nonfinite = a.nonfinite || b.nonfinite;
    return o;
  };
  if (u == 0 && r >= 1) {  // take, along an axis or of the flattened array
    const bool flat = coin(0.25);
    const std::int64_t n = flat ? numel(d) : d[static_cast<std::size_t>(ax)];
    Dims is;
    for (int k = uni(0, 2); k > 0; --k) is.push_back(uni(0, 4));
    if (n == 0 && numel(is) > 0) return;
    if (n > 0 && numel(d) / n * numel(is) > kMaxNumel) return;
    Val i = index_val(is);
    Array out = flat ? aj::take(x.a, i.a) : aj::take(x.a, i.a, axis_arg);
    return place(out, x.b, "take(" + xn + ", " + i.name + (flat ? "" : ", " + axs) + ")", "take", slot);
  }
  if (u == 1 && r >= 1) {  // take_along_axis, indices broadcast off the axis
    Dims is = d;
    is[static_cast<std::size_t>(ax)] = uni(0, 4);
    for (int q = 0; q < r; ++q) {
      if (q != ax && coin(0.3)) is[static_cast<std::size_t>(q)] = 1;
    }
    Dims out = d;
    out[static_cast<std::size_t>(ax)] = is[static_cast<std::size_t>(ax)];
    if (numel(out) > kMaxNumel || (d[static_cast<std::size_t>(ax)] == 0 && numel(out) > 0)) return;
    Val i = index_val(is);
    return place(aj::take_along_axis(x.a, i.a, axis_arg), x.b,
                 "take_along_axis(" + xn + ", " + i.name + ", " + axs + ")", "take_along_axis", slot);
  }
  if ((u == 2 || u == 3) && r >= 1) {  // scatter_add / scatter, take-shaped updates
    const bool add = u == 2;
    if (add && !x.b.exact()) return;  // sums in the same order everywhere: exact inputs stay exact
    Dims is;
    for (int k = uni(0, 2); k > 0; --k) is.push_back(uni(0, 4));
    Dims us(d.begin(), d.begin() + ax);
    us.insert(us.end(), is.begin(), is.end());
    us.insert(us.end(), d.begin() + ax + 1, d.end());
    if (numel(us) > kMaxNumel) return;
    Val i = index_val(is);
    Arg up = coin(0.2) ? scalar_arg(x.is_float() ? 2 : x.dtype() == DType::bool_ ? 0 : 1, {1, -2, 3})
                       : Arg{false, 0, 0, 0, new_input(coin(0.3) && !us.empty() ? Dims(us.begin() + 1, us.end()) : us, x.dtype())};
    if (!up.scalar) pool_.push_back(up.v);
    Bound b = join(x.b, up.bound());
    if (add) {
      const double m = static_cast<double>(std::max<std::int64_t>(1, numel(is)));
      b = exact_bound(x.b.mag + m * up.bound().mag, x.b.nonfinite || up.bound().nonfinite);
    }
    Array out = add ? aj::scatter_add(x.a, i.a, up.op(), axis_arg) : aj::scatter(x.a, i.a, up.op(), axis_arg);
    return place(out, b, std::string(add ? "scatter_add(" : "scatter(") + xn + ", " + i.name + ", " + up.str() +
                             ", " + axs + ")", add ? "scatter_add" : "scatter", slot);
  }
  if (u == 4 && r >= 1) {  // along-axis scatters
    const bool add = coin(0.5);
    if (add && !x.b.exact()) return;
    Dims us = d;
    us[static_cast<std::size_t>(ax)] = uni(0, 4);
    if (numel(us) > kMaxNumel) return;
    Val i = index_val(us);
    Val up = new_input(us, x.dtype());
    pool_.push_back(up);
    Bound b = join(x.b, up.b);
    if (add) b = exact_bound(x.b.mag + static_cast<double>(us[static_cast<std::size_t>(ax)]) * up.b.mag, b.nonfinite);
    Array out = add ? aj::scatter_add_along_axis(x.a, i.a, up.a, axis_arg) : aj::put_along_axis(x.a, i.a, up.a, axis_arg);
    return place(out, b, std::string(add ? "scatter_add_along_axis(" : "put_along_axis(") + xn + ", " + i.name + ", " +
                             up.name + ", " + axs + ")", add ? "scatter_add_along_axis" : "put_along_axis", slot);
  }
  if (u == 5 && r >= 1) {  // slice_update / slice_add
    std::vector<aj::Slice> sl;
    std::string s = "{";
    Dims vs;
    for (int q = 0; q < r; ++q) {
      const std::int64_t n = d[static_cast<std::size_t>(q)];
      std::int64_t step = choose(std::vector<std::int64_t>{1, 1, 2, -1, -2});
      std::optional<std::int64_t> start, stop;
      std::int64_t a0 = 0, b0 = 0, len = 0;
      if (step > 0) {
        a0 = uni(0, static_cast<int>(n));
        b0 = uni(0, static_cast<int>(n));
        start = a0;
        if (coin(0.7)) stop = b0;
        else b0 = n;
        len = b0 > a0 ? (b0 - a0 + step - 1) / step : 0;
      } else if (n > 0) {
        a0 = uni(0, static_cast<int>(n) - 1);
        start = a0;
        b0 = coin(0.5) ? uni(0, static_cast<int>(n) - 1) : -1;
        if (b0 >= 0) stop = b0;
        len = a0 > b0 ? (a0 - b0 - step - 1) / -step : 0;
      } else {
        step = 1;
      }
      sl.emplace_back(start, stop, step);
      vs.push_back(len);
      s += std::string(q ? ", " : "") + "{" + (start ? std::to_string(*start) : "_") + ":" +
           (stop ? std::to_string(*stop) : "_") + ":" + std::to_string(step) + "}";
    }
    const bool add = coin(0.4);
    Arg v = coin(0.25) ? scalar_arg(x.is_float() ? 2 : x.dtype() == DType::bool_ ? 0 : 1, {1, -2, 3})
                       : Arg{false, 0, 0, 0, new_input(vs, x.dtype())};
    if (!v.scalar) pool_.push_back(v.v);
    Bound b = join(x.b, v.bound());
    if (add) {
      if (!x.b.exact() && x.is_float()) return;  // keep the add exact
      b.mag = x.b.mag + v.bound().mag;
    }
    Array out = add ? aj::slice_add(x.a, sl, v.op()) : aj::slice_update(x.a, sl, v.op());
    return place(out, b, std::string(add ? "slice_add(" : "slice_update(") + xn + ", " + s + "}, " + v.str() + ")",
                 add ? "slice_add" : "slice_update", slot);
  }
  if (u == 6) {  // pad
    std::vector<aj::PadWidth> w;
    Dims out;
    const int mode = uni(0, 2);
    std::string ws = "{";
    for (int q = 0; q < r; ++q) {
      const std::int64_t n = d[static_cast<std::size_t>(q)];
      std::int64_t lo = uni(0, 2), hi = uni(0, 3);
      if (mode != 0 && n == 0) lo = hi = 0;
      w.push_back({lo, hi});
      out.push_back(n + lo + hi);
      ws += std::string(q ? ", " : "") + "{" + std::to_string(lo) + ", " + std::to_string(hi) + "}";
    }
    if (numel(out) > kMaxNumel) return;
    const double value = x.dtype() == DType::bool_ ? 1 : x.is_float() ? -1.5 : 4;
    const aj::Scalar sv = x.dtype() == DType::bool_ ? aj::Scalar(true) : x.is_float() ? aj::Scalar(-1.5) : aj::Scalar(4);
    static const aj::PadMode modes[] = {aj::PadMode::constant, aj::PadMode::edge, aj::PadMode::reflect};
    static const char* names[] = {"constant", "edge", "reflect"};
    Bound b = x.b;
    b.mag = std::max(b.mag, std::fabs(value));
    return place(aj::pad(x.a, w, modes[mode], sv), b,
                 "pad(" + xn + ", " + ws + "}, " + names[mode] + ", " + fmt_double(value) + ")", "pad", slot);
  }
  if (u == 7) {  // roll
    const std::int64_t shift = uni(-6, 6);
    if (r == 0 || coin(0.3)) return place(aj::roll(x.a, shift), x.b, "roll(" + xn + ", " + std::to_string(shift) + ")", "roll", slot);
    return place(aj::roll(x.a, shift, axis_arg), x.b,
                 "roll(" + xn + ", " + std::to_string(shift) + ", " + axs + ")", "roll", slot);
  }
  if (u == 8) {  // one_hot of integer labels
    if (x.is_float() || x.dtype() == DType::bool_ || !x.b.exact()) return;
    const std::int64_t c = uni(0, 5);
    if (numel(d) * c > kMaxNumel) return;
    const DType t = random_dtype();
    return place(aj::one_hot(x.a, c, t), exact_bound(1),
                 "one_hot(" + xn + ", " + std::to_string(c) + ", " + aj::dtype_name(t) + ")", "one_hot", slot);
  }
  // where with a broadcast bool mask and a C++ scalar on one side
  Val m = new_input(r ? Dims{d.back()} : Dims{}, DType::bool_);
  pool_.push_back(m);
  const Arg fill = scalar_arg(x.is_float() ? 2 : x.dtype() == DType::bool_ ? 0 : 1, {0, 1, -2});
  Bound b = x.b;
  b.mag = std::max(b.mag, 2.0);
  place(aj::where(m.a, x.a, fill.op()), b, "where(" + m.name + ", " + xn + ", " + fill.str() + ")", "where_scalar", slot);
}

inline void RandomGraph::step_eval() {
  const int k = uni(0, static_cast<int>(pool_.size()) - 1);
  const Val& v = pool_[static_cast<std::size_t>(k)];
  const int u = uni(0, 9);
  if (u < 5 || pool_.size() < 2) {
    v.a.eval();
    log_ += v.name + ".eval()\n";
  } else if (u < 7) {
    const Val& w = pool_[static_cast<std::size_t>(uni(0, static_cast<int>(pool_.size()) - 1))];
    aj::eval({v.a, w.a});
    log_ += "eval({" + v.name + ", " + w.name + "})\n";
  } else {
    // Read it out (evaluating it if needed) and keep holding it: it must read
    // the same at the end, whatever later evaluations do with memory.
    Held h{v.a, v.name, {}, {}};
    read(v.a, &h.f, &h.i);
    held_.push_back(std::move(h));
    log_ += "read " + v.name + " (and hold it)\n";
    ++used_["read"];
  }
  ++used_["eval"];
}

inline void RandomGraph::step_drop() {
  if (pool_.size() < 3) return;
  const int k = uni(0, static_cast<int>(pool_.size()) - 1);
  log_ += "drop " + pool_[static_cast<std::size_t>(k)].name + "\n";
  if (keep_dropped_) kept_.push_back(pool_[static_cast<std::size_t>(k)].a);
  pool_.erase(pool_.begin() + k);
  ++used_["drop"];
}

// Defined in test_differential.cpp (its header comment states the rule): the
// first element where `got` is not acceptably close to `want`, or nullopt.
std::optional<std::string> compare_values(aj::DType t, const Bound& b, const std::vector<double>& want,
                                          const std::vector<double>& got);
std::optional<std::string> compare_ints(const std::vector<std::int64_t>& want,
                                        const std::vector<std::int64_t>& got);

// One output of a random graph, read back.
struct GraphOutput {
  aj::DType t;
  Bound b;
  std::vector<double> f;
  std::vector<std::int64_t> k;
};

// Builds program `seed`, evaluates its outputs in one eval and reads them
// back. Where it runs is the caller's: an ExecutorScope, a DeviceScope.
inline std::vector<GraphOutput> evaluate_graph(std::uint64_t seed) {
  RandomGraph g(seed);
  g.build();
  std::vector<Array> arrays;
  for (auto& o : g.outputs()) arrays.push_back(o.array);
  aj::eval(arrays);
  std::vector<GraphOutput> outs;
  for (auto& o : g.outputs()) {
    GraphOutput r{o.array.dtype(), o.bound, {}, {}};
    RandomGraph::read(o.array, &r.f, &r.k);
    outs.push_back(std::move(r));
  }
  return outs;
}

// compare_values or compare_ints, as the output's dtype asks.
inline std::optional<std::string> compare_output(const GraphOutput& want, const GraphOutput& got) {
  return aj::is_float(want.t) ? compare_values(want.t, want.b, want.f, got.f) : compare_ints(want.k, got.k);
}

}  // namespace ajtest

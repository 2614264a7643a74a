// The random program generator of tests/random_graph.hpp (its header comment
// says what a program is): the RandomGraph class, its randomness, shapes,
// pool of live handles and inputs, and the program loop with its steps that
// make inputs and leaves, evaluate or drop handles. The steps that apply ops
// are in tests/random_graph_elementwise.hpp and tests/random_graph_axes.hpp;
// include tests/random_graph.hpp, which has them all.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cstdlib>
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
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/random_graph_bound.hpp"

namespace ajtest {

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

  // ---- compile mode (tests/random_graph_compile.hpp) ----
  // The program as a function of its inputs, for aj::compile
  // (tests/test_compile_random_graphs.cpp): its inputs are its arguments
  // (new_input takes the next one instead of making data), nothing is
  // evaluated mid-program (step_eval does nothing), and the extents every
  // choice is made by are those of a recording, never the arguments': a
  // compiled function must not read extents (it may branch on them), so
  // the program, its constants included, is one fixed function of its
  // arguments at any extents. A program in compile mode draws other numbers
  // than the one of the same seed in plain mode (no data is drawn, and
  // one in seven has a step with a matmul of about 2^14 elements).
  struct ArgSpec {
    Dims dims;
    DType dtype = DType::f32;
    int style = 0;  // the values: 0 in [-4, 4], 1 half-integers, 2 with specials (NaN, infinities, extremes)
  };
  struct Recording {
    std::vector<ArgSpec> args;  // the program's arguments, in the order it takes them
    std::vector<Dims> dims;     // the extents of each value made, in order, at the recorded arguments
    std::vector<int> skipped;   // the steps that raised a user error (skipped again by a replay)
    std::string program;        // RandomGraph::program() of the recording
    std::map<std::string, int> used;
    int steps = 0;
    int big_matmul_arg = -1;    // the big matmul's operands: this argument by the next one
  };
  // Builds program `seed` in compile mode on zeros of the extents it draws,
  // and records it.
  static Recording record(std::uint64_t seed, int step_limit = kMaxSteps);
  // Program `seed` of `rec` in compile mode, on `args` (the recorded dtypes
  // and ranks, at any extents). build() throws the aj::Error of a step the
  // recording did not skip (an op whose shapes no longer fit).
  RandomGraph(std::uint64_t seed, int step_limit, const Recording& rec, std::vector<Array> args)
      : rng_(seed), limit_(step_limit), mode_(Mode::replay), rec_(&rec), args_(std::move(args)) {}
  // The values of an argument of `spec`'s dtype and style at extents `dims`,
  // drawn from `rng` (evaluated; contiguous).
  static Array argument(const ArgSpec& spec, const Dims& dims, std::mt19937_64& rng);
  // Every value the program made is an output too, those it dropped or
  // rebound included (after the outputs it picks): no op's result goes
  // unused. For a diagnosis: a failure that goes away with it is one of an
  // op whose result is not returned.
  void return_everything() {
    return_everything_ = true;
    keep_dropped_ = true;
  }

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
    // a's extents, read once when the value is made (make_val): in compile
    // mode, the recording's (a traced function that read an extent could
    // branch on it: aj::compile would trace it at every new extent).
    Dims d;
    bool input = false;  // made by new_input (compile mode's coverage count)
    DType dtype() const { return a.dtype(); }
    Dims dims() const { return d; }
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

  // ---- compile mode ----
  enum class Mode { plain, record, replay };
  bool compiling() const { return mode_ != Mode::plain; }
  Val compile_input(const Dims& dims, DType t);
  Dims value_dims(const Array& a);
  void step_big_matmul();

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
  void step_concat_pieces();  // one expression over slices that continue each other
  void step_loop();  // a lazy loop of 2-20 steps of a boundary idiom (slice_update, pad, roll, a mask)
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
  Mode mode_ = Mode::plain;
  bool return_everything_ = false;
  Recording* recording_ = nullptr;    // Mode::record: what is recorded
  const Recording* rec_ = nullptr;    // Mode::replay: what is replayed
  std::vector<Array> args_;           // Mode::replay: the arguments
  std::size_t next_arg_ = 0, next_dims_ = 0;
};

// ============================================================================
// Implementation (header-only, inline: several test files include it).
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
  Dims d = value_dims(a);
  std::ostringstream os;
  os << name << " = " << expr << "  // " << aj::dtype_name(a.dtype()) << Shape(d);
  if (!b.exact()) os << " ~(abs " << b.abs_err << ", rel " << b.rel_err << ")";
  if (b.nonfinite) os << " inf/nan?";
  log_ += os.str() + "\n";
  return Val{std::move(a), b, name, std::move(d)};
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
  if (compiling()) return compile_input(dims, t);
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
    case DType::u8: put(std::uint8_t{}); break;
    case DType::i8: put(std::int8_t{}); break;
    case DType::i16: put(std::int16_t{}); break;
    case DType::u16: put(std::uint16_t{}); break;
    case DType::u32: put(std::uint32_t{}); break;
    case DType::u64: put(std::uint64_t{}); break;
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
  // Compile mode: one program in seven has a big matmul at one step.
  const int big_at = compiling() && uni(0, 6) == 0 ? uni(0, n - 1) : -1;
  for (int k = 0; k < first; ++k) pool_.push_back(new_input(random_shape(), random_dtype()));
  for (steps_ = 0; steps_ < n; ++steps_) {
    // A replay skips (by its error) only the steps the recording skipped;
    // any other error is the program's at these extents.
    const bool skipped_when_recorded =
        mode_ == Mode::replay &&
        std::find(rec_->skipped.begin(), rec_->skipped.end(), steps_) != rec_->skipped.end();
    try {
      if (steps_ == big_at) step_big_matmul();
      else step();
    } catch (const aj::Error& e) {
      if (e.kind() != aj::Error::Kind::user) throw;
      if (mode_ == Mode::replay && !skipped_when_recorded) throw;
      if (mode_ == Mode::record) recording_->skipped.push_back(steps_);
      ++skipped_;
      log_ += std::string("// skipped: ") + e.what() + "\n";
      continue;
    }
    if (skipped_when_recorded)
      throw std::logic_error("random graph replay: step " + std::to_string(steps_) +
                             " raised when recorded but not here (a program that branched on an error)");
  }
  if (mode_ == Mode::replay && next_arg_ != args_.size())
    throw std::logic_error("random graph replay: " + std::to_string(args_.size()) + " arguments given, " +
                           std::to_string(next_arg_) + " taken");
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
  if (return_everything_) {
    for (const Val& v : pool_) outputs_.push_back(Output{v.a, v.b, v.name});
    for (const Array& a : kept_) outputs_.push_back(Output{a, Bound{}, "(dropped)"});
    log_ += " and every value made";
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
    case 9: return coin(0.25) ? step_loop() : step_concat();
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

inline void RandomGraph::step_eval() {
  if (compiling()) return;  // a compiled function may not read values
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

}  // namespace ajtest

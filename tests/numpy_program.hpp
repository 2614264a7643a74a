// Random arrayjit programs for the NumPy oracle (tests/test_numpy_oracle.cpp).
//
// A program is a few steps drawn from one seed: make an input or a created
// array, then apply elementwise ops (with arrays or weak C++ scalars, any
// broadcast), astype, reductions, views, concatenate/stack and matmul, over
// every dtype and ranks 0-4 with size-0 and size-1 axes; cumsum/cumprod,
// sort/argsort and erf/erfc too. Every value is then
// evaluated in one aj::eval (so the fuser still sees the whole graph) and the
// program writes itself, with arrayjit's value of each step, in the line form
// tests/numpy_oracle.py reads:
//
//   prog <seed> <jit|interp>
//   <name> <dtype> [<dims>] <op> <args...> = <values...>
//   end
//
// args: `vK` (an earlier value), `i:N` / `f:HEX` / `b:0|1` (a weak scalar),
// `key=value` attributes. Values are row-major: floats as C99 hex floats
// (exact), integers in decimal, bools 0/1. The oracle checks each step
// against NumPy applied to arrayjit's values of its operands, so an error is
// pinned to one op and inexact ops never blur the steps after them.
//
// Choices depend only on the seed and on shapes and dtypes, never on values,
// so one seed traces the same program under the JIT and the interpreter.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ajtest {

class NumpyProgram {
 public:
  using Array = aj::Array;
  using DType = aj::DType;
  using Dims = std::vector<std::int64_t>;

  static constexpr std::int64_t kMaxNumel = 48;

  explicit NumpyProgram(std::uint64_t seed) : seed_(seed), rng_(seed) {}

  // Trace the program, evaluate every value, and write it as text.
  void write(std::ostream& os, const char* mode) {
    const int steps = uni(1, 8);
    input(random_shape(), random_dtype());
    for (int s = 0; s < steps; ++s) step();
    std::vector<Array> all;
    for (auto& v : vals_) all.push_back(v.a);
    aj::eval(all);
    os << "prog " << seed_ << " " << mode << "\n";
    for (auto& v : vals_) os << v.line << " =" << values(v.a) << "\n";
    os << "end\n";
  }

 private:
  struct Val {
    Array a;
    std::string name, line;
  };
  // An operand as the text names it; op() makes the aj::Operand (which
  // points at `array`, so an Arg stays put while its operand is in use).
  struct Arg {
    Array array;
    char kind = 'a';  // 'a' array, 'b' bool, 'i' integer, 'f' float scalar
    std::int64_t i = 0;
    double f = 0;
    std::string text;
    Dims dims;  // empty for a scalar
    aj::Operand op() const {
      if (kind == 'a') return aj::Operand(array);
      if (kind == 'b') return aj::Operand(i != 0);
      if (kind == 'i') return aj::Operand(i);
      return aj::Operand(f);
    }
  };

  // ---- random choices --------------------------------------------------------

  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& choose(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(uni(0, static_cast<int>(v.size()) - 1))];
  }

  static std::int64_t numel(const Dims& d) {
    std::int64_t n = 1;
    for (auto e : d) n *= e;
    return n;
  }
  static DType dt(const Val& v) { return v.a.dtype(); }
  static Dims dims_of(const Array& a) { return a.shape().dims(); }

  DType random_dtype() {
    return coin(0.2) ? narrow_dtype()
                     : choose<DType>({DType::bool_, DType::i32, DType::i64, DType::f32, DType::f32, DType::f64, DType::f64});
  }
  DType number_dtype() {
    return coin(0.2) ? narrow_dtype() : choose<DType>({DType::i32, DType::i64, DType::f32, DType::f64});
  }
  DType narrow_dtype() { return choose<DType>({DType::u8, DType::i8, DType::i16, DType::u16, DType::u32, DType::u64}); }
  static bool is_unsigned(DType t) { return aj::dtype_kind(t) == aj::DTypeKind::Unsigned; }

  Dims random_shape() {
    Dims d(static_cast<std::size_t>(uni(0, 4)));
    for (auto& e : d) {
      const int u = uni(0, 99);
      e = u < 6 ? 0 : u < 30 ? 1 : uni(2, 4);
    }
    while (numel(d) > kMaxNumel) {
      for (auto& e : d) e = std::max<std::int64_t>(1, e / 2);
    }
    return d;
  }

  // A shape that broadcasts with `s`: some extents 1, some 1s widened, and
  // sometimes fewer or one more leading axis.
  Dims compatible_shape(const Dims& s) {
    const int r = static_cast<int>(s.size());
    const int keep = coin(0.2) ? uni(0, r) : r;
    Dims out;
    if (coin(0.1) && r < 4) out.push_back(uni(1, 3));
    for (int i = r - keep; i < r; ++i) {
      const std::int64_t e = s[static_cast<std::size_t>(i)];
      out.push_back(e == 1 ? (coin(0.3) ? uni(2, 3) : 1) : coin(0.3) ? 1 : e);
    }
    Dims full;
    if (!broadcast(s, out, &full) || numel(full) > kMaxNumel) return s;
    return out;
  }

  static bool broadcast(const Dims& a, const Dims& b, Dims* out) {
    const std::size_t n = std::max(a.size(), b.size());
    Dims r(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t x = k < n - a.size() ? 1 : a[k - (n - a.size())];
      const std::int64_t y = k < n - b.size() ? 1 : b[k - (n - b.size())];
      if (x != y && x != 1 && y != 1) return false;
      r[k] = x == 1 ? y : x;
    }
    *out = r;
    return true;
  }

  // An existing value matching `ok`, or -1.
  int pick(const std::function<bool(const Val&)>& ok) {
    std::vector<int> idx;
    for (std::size_t k = 0; k < vals_.size(); ++k) {
      if (ok(vals_[k])) idx.push_back(static_cast<int>(k));
    }
    return idx.empty() ? -1 : choose(idx);
  }

  // ---- text --------------------------------------------------------------------

  static std::string hex(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a", x);
    return buf;
  }
  static std::string list(const Dims& d) {
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s;
  }
  static std::string values(const Array& a) {
    std::string s;
    if (aj::is_float(a.dtype())) {
      for (double x : a.to_vector<double>()) s += " " + hex(x);
    } else if (a.dtype() == DType::bool_) {
      for (bool x : a.to_vector<bool>()) s += x ? " 1" : " 0";
    } else {
      for (std::int64_t x : a.to_vector<std::int64_t>()) s += " " + std::to_string(x);
    }
    return s;
  }

  void add(Array a, const std::string& text) {
    std::string name = "v" + std::to_string(vals_.size());
    std::string line = name + " " + aj::dtype_name(a.dtype()) + " [" + list(dims_of(a)) + "] " + text;
    vals_.push_back(Val{std::move(a), name, line});
  }

  // ---- values --------------------------------------------------------------------

  double float_value(DType t, int style) {
    if (style == 2 && coin(0.4)) {
      const bool f32 = t == DType::f32;
      return choose<double>({NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e30, -1e30, f32 ? 1e-40 : 1e-310,
                             f32 ? 3.4e38 : 1.7e308, 0.5, -2.5, 88.75, -104.0, 710.0, 3e9});
    }
    if (style >= 1) return uni(-8, 8) * 0.5;
    const double x = std::uniform_real_distribution<double>(-4, 4)(rng_);
    return t == DType::f32 ? static_cast<double>(static_cast<float>(x)) : x;
  }
  std::int64_t int_value(DType t, int style) {
    if (style == 2 && coin(0.3)) {
      // The dtype's limits (a u64's maximum as the int64 -1 it wraps from).
      const int bits = static_cast<int>(8 * aj::itemsize(t));
      const std::int64_t lo = is_unsigned(t) ? 0 : bits == 64 ? INT64_MIN : -(std::int64_t(1) << (bits - 1));
      const std::int64_t hi = is_unsigned(t) ? (bits == 64 ? -1 : (std::int64_t(1) << bits) - 1)
                                             : bits == 64 ? INT64_MAX : (std::int64_t(1) << (bits - 1)) - 1;
      return choose<std::int64_t>({lo, hi, -1, 0, bits <= 32 ? 65536 : 4294967296LL, 46341});
    }
    return uni(style == 0 ? -10 : -3, style == 0 ? 10 : 3);
  }

  Array input(const Dims& dims, DType t) {
    const std::int64_t n = numel(dims);
    const int style = uni(0, 99) < 55 ? 0 : uni(0, 99) < 60 ? 1 : 2;
    aj::Shape shape(dims);
    Array a;
    if (aj::is_float(t)) {
      std::vector<double> v;
      for (std::int64_t k = 0; k < n; ++k) v.push_back(float_value(t, style));
      a = aj::from_vector<double>(v, shape).astype(t);
    } else if (t == DType::bool_) {
      std::vector<std::int32_t> v;
      for (std::int64_t k = 0; k < n; ++k) v.push_back(coin(0.5));
      a = aj::from_vector<std::int32_t>(v, shape).astype(t);
    } else {
      std::vector<std::int64_t> v;
      for (std::int64_t k = 0; k < n; ++k) v.push_back(int_value(t, style));
      a = aj::from_vector<std::int64_t>(v, shape).astype(t);
    }
    a.eval();  // an input is data, not an astype the oracle would check
    add(a, "input");
    return a;
  }

  // An array operand shaped to broadcast with `with`: an earlier value or a new input.
  Arg array_arg(const Dims& with, const std::function<bool(DType)>& dtype_ok) {
    const int k = pick([&](const Val& v) {
      Dims out;
      return dtype_ok(dt(v)) && broadcast(with, dims_of(v.a), &out) && numel(out) <= kMaxNumel;
    });
    if (k >= 0 && coin(0.5)) return array_of(vals_[static_cast<std::size_t>(k)]);
    DType t = random_dtype();
    while (!dtype_ok(t)) t = random_dtype();
    input(compatible_shape(with), t);
    return array_of(vals_.back());
  }

  static Arg array_of(const Val& v) { return {v.a, 'a', 0, 0, v.name, dims_of(v.a)}; }

  // kinds: 'b' bool, 'i' integer, 'f' float scalars allowed.
  Arg scalar_arg(const std::string& kinds, bool non_negative = false) {
    const char k = kinds[static_cast<std::size_t>(uni(0, static_cast<int>(kinds.size()) - 1))];
    if (k == 'b') {
      const bool b = coin(0.5);
      return {Array(), 'b', b, 0, std::string("b:") + (b ? "1" : "0"), {}};
    }
    if (k == 'i') {
      const std::int64_t i = non_negative ? choose<std::int64_t>({0, 1, 2, 3, 7, 100})
                                          : choose<std::int64_t>({0, 1, -1, 2, -3, 3, 7, -7, 100});
      return {Array(), 'i', i, 0, "i:" + std::to_string(i), {}};
    }
    const double f = choose<double>({0.0, -0.0, 0.5, -1.5, 2.0, 2.5, 1e10, -3.25, 0.1, NAN, INFINITY});
    return {Array(), 'f', 0, f, "f:" + hex(f), {}};
  }

  // ---- steps ---------------------------------------------------------------------

  void step() {
    const int u = uni(0, 128);
    if (u >= 124) return search_fn();
    if (u >= 118) return stats_fn();
    if (u >= 110) return shape_fn();
    if (u >= 100) return indexing();
    if (u < 6) create();
    else if (u < 26) unary();
    else if (u < 52) binary();
    else if (u < 57) where_clip();
    else if (u < 63) astype();
    else if (u < 72) reduce();
    else if (u < 78) scan_sort();
    else if (u < 88) view();
    else if (u < 94) concat_stack();
    else matmul();
  }

  void create() {
    const DType t = random_dtype();
    const Dims d = random_shape();
    const std::string ts = aj::dtype_name(t);
    switch (uni(0, 5)) {
      case 0: add(aj::zeros(aj::Shape(d), t), "zeros shape=" + list(d) + " dtype=" + ts); break;
      case 1: add(aj::ones(aj::Shape(d), t), "ones shape=" + list(d) + " dtype=" + ts); break;
      case 2: {
        // A value of the dtype's own category, which the fill holds exactly.
        const std::string head = "full shape=" + list(d) + " dtype=" + ts + " value=";
        if (aj::is_float(t)) {
          const double v = float_value(t, uni(0, 1));
          add(aj::full(aj::Shape(d), v, t), head + "f:" + hex(v));
        } else {
          const std::int64_t v = is_unsigned(t) ? uni(0, 5) : uni(-5, 5);
          add(aj::full(aj::Shape(d), v, t), head + "i:" + std::to_string(v));
        }
        break;
      }
      case 3: {
        if (t == DType::bool_) return;
        if (aj::is_float(t)) {
          const double start = uni(-8, 8) * 0.25, step = choose<double>({0.5, 0.25, -0.5, 1.0, 0.1, -0.3});
          const double stop = start + step * uni(0, 20) + (coin(0.5) ? step / 2 : 0);
          add(aj::arange(start, stop, step, t),
              "arange start=f:" + hex(start) + " stop=f:" + hex(stop) + " step=f:" + hex(step) + " dtype=" + ts);
        } else {
          const std::int64_t n = uni(0, 20);
          add(aj::arange(n, t), "arange_n n=" + std::to_string(n) + " dtype=" + ts);
        }
        break;
      }
      case 4: {
        if (!aj::is_float(t)) return;
        const double start = uni(-8, 8) * 0.5, stop = uni(-8, 8) * 0.75;
        const std::int64_t num = uni(0, 12);
        add(aj::linspace(start, stop, num, t), "linspace start=f:" + hex(start) + " stop=f:" + hex(stop) +
                                                   " num=" + std::to_string(num) + " dtype=" + ts);
        break;
      }
      default: {
        const std::int64_t n = uni(0, 5), m = uni(0, 5), k = uni(-3, 3);
        add(aj::eye(n, m, k, t), "eye n=" + std::to_string(n) + " m=" + std::to_string(m) + " k=" +
                                     std::to_string(k) + " dtype=" + ts);
      }
    }
  }

  int any_value() { return uni(0, static_cast<int>(vals_.size()) - 1); }
  int number_value() {
    int k = pick([](const Val& v) { return v.a.dtype() != DType::bool_; });
    if (k < 0) {
      input(random_shape(), number_dtype());
      k = static_cast<int>(vals_.size()) - 1;
    }
    return k;
  }
  int bool_value() {
    int k = pick([](const Val& v) { return v.a.dtype() == DType::bool_; });
    if (k < 0) {
      input(random_shape(), DType::bool_);
      k = static_cast<int>(vals_.size()) - 1;
    }
    return k;
  }

  void unary() {
    using F = Array (*)(const aj::Operand&);
    static const std::vector<std::pair<const char*, F>> ops = {
        {"negative", aj::negative}, {"abs", aj::abs},     {"sign", aj::sign},   {"floor", aj::floor},
        {"ceil", aj::ceil},         {"round", aj::round}, {"exp", aj::exp},     {"log", aj::log},
        {"log1p", aj::log1p},       {"expm1", aj::expm1}, {"sin", aj::sin},     {"cos", aj::cos},
        {"tan", aj::tan},           {"tanh", aj::tanh},   {"sigmoid", aj::sigmoid}, {"sqrt", aj::sqrt},
        {"rsqrt", aj::rsqrt},       {"logical_not", aj::logical_not}, {"erf", aj::erf},
        {"erfc", aj::erfc},         {"trunc", aj::trunc}, {"arcsin", aj::arcsin}, {"arccos", aj::arccos},
        {"arctan", aj::arctan},     {"sinh", aj::sinh},   {"cosh", aj::cosh},   {"arcsinh", aj::arcsinh},
        {"arccosh", aj::arccosh},   {"arctanh", aj::arctanh}, {"exp2", aj::exp2}, {"log2", aj::log2},
        {"log10", aj::log10},       {"cbrt", aj::cbrt},   {"lgamma", aj::lgamma}, {"digamma", aj::digamma},
        {"trigamma", aj::trigamma}, {"erfinv", aj::erfinv}, {"ndtri", aj::ndtri}, {"log_ndtr", aj::log_ndtr},
        {"i0", aj::i0},             {"i1", aj::i1},       {"isnan", aj::isnan}, {"isinf", aj::isinf},
        {"isfinite", aj::isfinite}, {"signbit", aj::signbit}, {"square", aj::square},
        {"reciprocal", aj::reciprocal}, {"relu", aj::relu}, {"silu", aj::silu}, {"softplus", aj::softplus},
        {"gelu", [](const aj::Operand& x) { return aj::gelu(x); }},
        {"gelu_tanh", [](const aj::Operand& x) { return aj::gelu(x, true); }},
        {"nan_to_num", [](const aj::Operand& x) { return aj::nan_to_num(x); }}};
    const auto& [name, f] = choose(ops);
    const bool logical = std::string(name) == "logical_not";
    const Val v = vals_[static_cast<std::size_t>(logical ? bool_value() : number_value())];
    add(f(aj::Operand(v.a)), std::string(name) + " " + v.name);
  }

  void binary() {
    using F = Array (*)(const aj::Operand&, const aj::Operand&);
    struct B {
      const char* name;
      F f;
      char kind;  // 'a' arithmetic (no bool), 'c' compare (any), 'l' logical (bool), 'm' max/min (any),
                  // 'i' integers only
    };
    static const std::vector<B> ops = {
        {"add", aj::add, 'a'},          {"subtract", aj::subtract, 'a'}, {"multiply", aj::multiply, 'a'},
        {"divide", aj::divide, 'a'},    {"mod", aj::mod, 'a'},           {"pow", aj::pow, 'a'},
        {"arctan2", aj::arctan2, 'a'},  {"hypot", aj::hypot, 'a'},       {"copysign", aj::copysign, 'a'},
        {"nextafter", aj::nextafter, 'a'}, {"fmod", aj::fmod, 'a'},
        {"logaddexp", aj::logaddexp, 'a'}, {"logaddexp2", aj::logaddexp2, 'a'},
        {"logical_xor", aj::logical_xor, 'l'},
        {"isclose", [](const aj::Operand& a, const aj::Operand& b) { return aj::isclose(a, b); }, 'a'},
        {"true_divide", aj::true_divide, 'a'}, {"floor_divide", aj::floor_divide, 'a'},
        {"maximum", aj::maximum, 'm'},  {"minimum", aj::minimum, 'm'},
        {"equal", [](const aj::Operand& a, const aj::Operand& b) { return a == b; }, 'c'},
        {"not_equal", [](const aj::Operand& a, const aj::Operand& b) { return a != b; }, 'c'},
        {"less", [](const aj::Operand& a, const aj::Operand& b) { return a < b; }, 'c'},
        {"less_equal", [](const aj::Operand& a, const aj::Operand& b) { return a <= b; }, 'c'},
        {"greater", [](const aj::Operand& a, const aj::Operand& b) { return a > b; }, 'c'},
        {"greater_equal", [](const aj::Operand& a, const aj::Operand& b) { return a >= b; }, 'c'},
        {"logical_and", [](const aj::Operand& a, const aj::Operand& b) { return a && b; }, 'l'},
        {"logical_or", [](const aj::Operand& a, const aj::Operand& b) { return a || b; }, 'l'},
        {"bitwise_and", aj::bitwise_and, 'i'}, {"bitwise_or", aj::bitwise_or, 'i'},
        {"bitwise_xor", aj::bitwise_xor, 'i'}, {"left_shift", aj::left_shift, 'i'},
        {"right_shift", aj::right_shift, 'i'}, {"gcd", aj::gcd, 'i'}, {"lcm", aj::lcm, 'i'}};
    const B& op = choose(ops);
    auto integer = [](DType t) { return aj::is_integer(t); };
    int k = op.kind == 'l' ? bool_value() : op.kind == 'a' ? number_value() : op.kind == 'i' ? pick([&](const Val& v) { return integer(dt(v)); }) : any_value();
    if (k < 0) {
      input(random_shape(), coin(0.5) ? narrow_dtype() : DType::i64);
      k = static_cast<int>(vals_.size()) - 1;
    }
    Arg a = array_of(vals_[static_cast<std::size_t>(k)]);
    // (Integer operations take operands that promote to an integer: i64 and
    // u64 meet at f64, which NumPy's bit operations refuse as arrayjit's do.)
    const DType at = a.array.dtype();
    auto ok = [&](DType t) {
      return op.kind == 'l' ? t == DType::bool_ : op.kind == 'a' ? t != DType::bool_
             : op.kind == 'i' ? integer(t) && aj::is_integer(aj::promote_types(t, at)) : true;
    };
    // An integer scalar meets an unsigned array as a non-negative one (a
    // negative one does not fit: an error, as in NumPy 2).
    const bool unsigned_a = is_unsigned(a.array.dtype());
    Arg b = coin(0.3) ? scalar_arg(op.kind == 'l' ? "b" : op.kind == 'a' ? "iiff" : op.kind == 'i' ? "i" : "biff", unsigned_a)
                      : array_arg(a.dims, ok);
    if (coin(0.3)) std::swap(a, b);
    add(op.f(a.op(), b.op()), std::string(op.name) + " " + a.text + " " + b.text);
  }

  void where_clip() {
    if (coin(0.5)) {
      const Val c = vals_[static_cast<std::size_t>(bool_value())];
      const Dims cd = dims_of(c.a);
      auto any = [](DType) { return true; };
      Arg a = coin(0.3) ? scalar_arg("bif") : array_arg(cd, any);
      Arg b = coin(0.3) ? scalar_arg("bif") : array_arg(cd, any);
      Dims ab;
      if (!broadcast(a.dims, b.dims, &ab) || !broadcast(ab, cd, &ab) || numel(ab) > kMaxNumel) return;
      // A negative scalar against an unsigned array does not fit it (an
      // error, as in NumPy 2): not drawn.
      const bool neg_a = a.kind == 'i' && a.i < 0, neg_b = b.kind == 'i' && b.i < 0;
      if ((neg_a && b.kind == 'a' && is_unsigned(b.array.dtype())) || (neg_b && a.kind == 'a' && is_unsigned(a.array.dtype()))) return;
      add(aj::where(aj::Operand(c.a), a.op(), b.op()), "where " + c.name + " " + a.text + " " + b.text);
      return;
    }
    const Val x = vals_[static_cast<std::size_t>(number_value())];
    const Dims xd = dims_of(x.a);
    auto num = [](DType t) { return t != DType::bool_; };
    Arg lo = coin(0.6) ? scalar_arg("if", is_unsigned(x.a.dtype())) : array_arg(xd, num);
    Arg hi = coin(0.6) ? scalar_arg("if", is_unsigned(x.a.dtype())) : array_arg(xd, num);
    Dims all;
    if (!broadcast(lo.dims, hi.dims, &all) || !broadcast(all, xd, &all) || numel(all) > kMaxNumel) return;
    add(aj::clip(aj::Operand(x.a), lo.op(), hi.op()), "clip " + x.name + " " + lo.text + " " + hi.text);
  }

  void astype() {
    const Val& v = vals_[static_cast<std::size_t>(any_value())];
    const DType t = random_dtype();
    add(v.a.astype(t), std::string("astype ") + v.name + " to=" + aj::dtype_name(t));
  }

  // Axes to reduce over for a rank-r value: none listed (all) 30% of the
  // time, else each axis with probability 1/2, some counted from the end.
  // The text is the program's: "all" or the list.
  std::string random_axes(int r, std::vector<int>& list) {
    if (!(r > 0 && coin(0.7))) return "all";
    std::string s;
    for (int i = 0; i < r; ++i) {
      if (coin(0.5)) {
        const int ax = coin(0.3) ? i - r : i;
        list.push_back(ax);
        s += (s.empty() ? "" : ",") + std::to_string(ax);
      }
    }
    return list.empty() ? "all" : s;
  }

  void reduce() {
    const Val& v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    const std::string op = choose<std::string>({"sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin"});
    const bool keep = coin(0.3);
    const bool needs_elements = op == "max" || op == "min" || op == "argmax" || op == "argmin";
    if (op == "argmax" || op == "argmin") {
      std::optional<int> axis;
      if (r > 0 && coin(0.7)) axis = uni(-r, r - 1);
      if (axis ? d[static_cast<std::size_t>((*axis + r) % r)] == 0 || numel(d) == 0 : numel(d) == 0) return;
      Array a = op == "argmax" ? aj::argmax(v.a, axis, keep) : aj::argmin(v.a, axis, keep);
      add(a, op + " " + v.name + " axis=" + (axis ? std::to_string(*axis) : "none") + " keep=" + (keep ? "1" : "0"));
      return;
    }
    aj::Axes axes;
    std::vector<int> list;
    const std::string axes_text = random_axes(r, list);
    if (!list.empty()) {
      axes = aj::Axes(list);
      if (needs_elements) {
        for (int ax : list) {
          if (d[static_cast<std::size_t>((ax + r) % r)] == 0) return;
        }
      }
    }
    if (needs_elements && axes.is_all() && numel(d) == 0) return;
    using R = Array (*)(const Array&, aj::Axes, bool, aj::Loc);
    static const std::vector<std::pair<std::string, R>> fs = {
        {"sum", aj::sum}, {"prod", aj::prod}, {"mean", aj::mean}, {"max", aj::max},
        {"min", aj::min}, {"all", aj::all},   {"any", aj::any}};
    for (auto& [n, f] : fs) {
      if (n == op) add(f(v.a, axes, keep, aj::Loc::current()), op + " " + v.name + " axes=" + axes_text + " keep=" + (keep ? "1" : "0"));
    }
  }

  // cumsum / cumprod / cummax / cummin / logcumsumexp (an axis or the
  // flattened array), sort / argsort (stable).
  void scan_sort() {
    const Val& v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    const std::string op =
        choose<std::string>({"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort", "partition",
                             "argpartition"});
    if (op == "partition" || op == "argpartition") {
      if (r == 0 || d[static_cast<std::size_t>(r - 1)] == 0) return;
      const std::int64_t n = d[static_cast<std::size_t>(r - 1)];
      const std::int64_t kth = uni(static_cast<int>(-n), static_cast<int>(n - 1));
      add(op == "partition" ? aj::partition(v.a, kth) : aj::argpartition(v.a, kth),
          op + " " + v.name + " kth=" + std::to_string(kth));
      return;
    }
    if (op != "sort" && op != "argsort") {
      std::optional<int> axis;
      if (r > 0 && coin(0.8)) axis = uni(-r, r - 1);
      Array a = op == "cumsum"    ? aj::cumsum(v.a, axis)
                : op == "cumprod" ? aj::cumprod(v.a, axis)
                : op == "cummax"  ? aj::cummax(v.a, axis)
                : op == "cummin"  ? aj::cummin(v.a, axis)
                                  : aj::logcumsumexp(v.a, axis);
      add(a, op + " " + v.name + " axis=" + (axis ? std::to_string(*axis) : "none"));
      return;
    }
    if (r == 0) return;
    const int axis = uni(-r, r - 1);
    add(op == "sort" ? aj::sort(v.a, axis) : aj::argsort(v.a, axis), op + " " + v.name + " axis=" + std::to_string(axis));
  }

  // Extents with product n, rank 0-4 (rank 0 only for n == 1).
  Dims factor(std::int64_t n) {
    const int rank = uni(n == 1 ? 0 : 1, 4);
    Dims d(static_cast<std::size_t>(rank), 1);
    if (n == 0) {
      for (auto& e : d) e = uni(1, 3);
      d[static_cast<std::size_t>(uni(0, rank - 1))] = 0;
      return d;
    }
    std::int64_t m = n;
    for (std::int64_t p = 2; m > 1; ++p) {
      while (m % p == 0) {
        m /= p;
        d[static_cast<std::size_t>(uni(0, rank - 1))] *= p;
      }
    }
    return d;
  }

  void view() {
    const Val& v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    switch (uni(0, 5)) {
      case 0: {
        Dims s = factor(numel(d));
        if (numel(d) > 0 && !s.empty() && coin(0.3)) s[static_cast<std::size_t>(uni(0, static_cast<int>(s.size()) - 1))] = -1;
        add(aj::reshape(v.a, aj::Shape(s)), "reshape " + v.name + " shape=" + list(s));
        return;
      }
      case 1: {
        std::vector<int> perm(static_cast<std::size_t>(r));
        for (int i = 0; i < r; ++i) perm[static_cast<std::size_t>(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        std::string s;
        for (int p : perm) s += (s.empty() ? "" : ",") + std::to_string(p);
        if (coin(0.2)) add(aj::transpose(v.a), "transpose " + v.name + " perm=rev");
        else add(aj::transpose(v.a, perm), "transpose " + v.name + " perm=" + (s.empty() ? "none" : s));
        return;
      }
      case 2: {
        Dims s;
        if (r < 4 && coin(0.5)) s.push_back(uni(0, 3));
        for (auto e : d) s.push_back(e == 1 ? uni(1, 3) : e);
        if (numel(s) > kMaxNumel) return;
        add(aj::broadcast_to(v.a, aj::Shape(s)), "broadcast_to " + v.name + " shape=" + list(s));
        return;
      }
      case 3: {
        if (r >= 4) return;
        const int axis = uni(-r - 1, r);
        add(aj::expand_dims(v.a, axis), "expand_dims " + v.name + " axis=" + std::to_string(axis));
        return;
      }
      case 4: {
        std::vector<int> ones;
        std::string s;
        for (int i = 0; i < r; ++i) {
          if (d[static_cast<std::size_t>(i)] == 1 && coin(0.6)) {
            const int ax = coin(0.3) ? i - r : i;
            ones.push_back(ax);
            s += (s.empty() ? "" : ",") + std::to_string(ax);
          }
        }
        if (ones.empty() || coin(0.3)) add(aj::squeeze(v.a), "squeeze " + v.name + " axes=all");
        else add(aj::squeeze(v.a, aj::Axes(ones)), "squeeze " + v.name + " axes=" + s);
        return;
      }
      default: {
        if (r == 0) return;
        std::vector<aj::Slice> sl;
        std::string s;
        const int k = uni(1, r);
        for (int i = 0; i < k; ++i) {
          const std::int64_t n = d[static_cast<std::size_t>(i)];
          const std::int64_t step = choose<std::int64_t>({1, 1, 2, 3, -1, -2});
          // Bounds lie in [-n, n] going forward, [-n, n - 1] going backward
          // (arrayjit rejects what Python would clamp).
          auto bound = [&]() -> std::optional<std::int64_t> {
            const int hi = static_cast<int>(step > 0 ? n : n - 1);
            if (coin(0.4) || hi < -n) return std::nullopt;
            return static_cast<std::int64_t>(uni(static_cast<int>(-n), hi));
          };
          const auto start = bound(), stop = bound();
          sl.push_back(aj::Slice(start, stop, step));
          auto txt = [](std::optional<std::int64_t> b) { return b ? std::to_string(*b) : std::string("_"); };
          s += (s.empty() ? "" : ",") + txt(start) + ":" + txt(stop) + ":" + std::to_string(step);
        }
        add(aj::slice(v.a, sl), "slice " + v.name + " s=" + s);
      }
    }
  }

  // Indices in [-n, n) (NumPy raises beyond; arrayjit's clamping and
  // dropping are tested in tests/test_indexing.cpp), i32 or i64.
  Array index_input(const Dims& dims, std::int64_t n) {
    std::vector<std::int64_t> v;
    for (std::int64_t k = 0; k < numel(dims); ++k) v.push_back(uni(static_cast<int>(-n), static_cast<int>(n) - 1));
    Array a = aj::from_vector<std::int64_t>(v, aj::Shape(dims)).astype(coin(0.5) ? DType::i32 : DType::i64);
    a.eval();
    add(a, "input");
    return a;
  }

  // take, take_along_axis, np.add.at (scatter_add), setitem (scatter,
  // put_along_axis, slice_update), += on a slice, pad, roll, one_hot.
  void indexing() {
    const Val v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    const int u = uni(0, 9);
    if (r == 0 && u != 6 && u != 7) return;
    const int ax = r ? uni(0, r - 1) : 0;
    const int axis = r && coin(0.3) ? ax - r : ax;
    const std::int64_t n = r ? d[static_cast<std::size_t>(ax)] : 1;
    const std::string vi = " " + v.name + " ", as = " axis=" + std::to_string(axis);
    Dims is;
    for (int k = uni(0, 2); k > 0; --k) is.push_back(uni(1, 3));
    Dims us(d.begin(), d.begin() + ax);  // take-shaped: pre + indices + post
    us.insert(us.end(), is.begin(), is.end());
    if (r) us.insert(us.end(), d.begin() + ax + 1, d.end());
    switch (u) {
      case 0: {
        const bool flat = coin(0.3);
        const std::int64_t m = flat ? numel(d) : n;
        if (m == 0 || (flat ? numel(is) : numel(us)) > kMaxNumel) return;
        const std::string iname = "v" + std::to_string(vals_.size());
        Array i = index_input(is, m);
        add(flat ? aj::take(v.a, i) : aj::take(v.a, i, axis),
            "take" + vi + iname + (flat ? " axis=none" : as));
        return;
      }
      case 1: {
        if (n == 0) return;
        Dims id = d;
        id[static_cast<std::size_t>(ax)] = uni(1, 3);
        for (int q = 0; q < r; ++q) {
          if (q != ax && coin(0.3)) id[static_cast<std::size_t>(q)] = 1;
        }
        Dims out = d;
        out[static_cast<std::size_t>(ax)] = id[static_cast<std::size_t>(ax)];
        if (numel(out) > kMaxNumel) return;
        const std::string iname = "v" + std::to_string(vals_.size());
        Array i = index_input(id, n);
        add(aj::take_along_axis(v.a, i, axis), "take_along_axis" + vi + iname + as);
        return;
      }
      case 2:
      case 3: {  // scatter_add (np.add.at) / scatter (setitem), updates of v's dtype
        if (n == 0 || numel(us) > kMaxNumel) return;
        const std::string iname = "v" + std::to_string(vals_.size());
        Array i = index_input(is, n);
        const std::string uname = "v" + std::to_string(vals_.size());
        Array up = input(us, dt(v));
        const bool add_op = u == 2;
        add(add_op ? aj::scatter_add(v.a, i, up, axis) : aj::scatter(v.a, i, up, axis),
            std::string(add_op ? "scatter_add" : "scatter") + vi + iname + " " + uname + as);
        return;
      }
      case 4: {  // put_along_axis (setitem along the axis)
        if (n == 0) return;
        Dims id = d;
        id[static_cast<std::size_t>(ax)] = uni(1, 3);
        if (numel(id) > kMaxNumel) return;
        const std::string iname = "v" + std::to_string(vals_.size());
        Array i = index_input(id, n);
        const std::string uname = "v" + std::to_string(vals_.size());
        Array up = input(id, dt(v));
        add(aj::put_along_axis(v.a, i, up, axis), "put_along_axis" + vi + iname + " " + uname + as);
        return;
      }
      case 5: {  // slice_update / slice_add: b[sl] = x, b[sl] += x
        std::vector<aj::Slice> sl;
        std::string s;
        for (int q = 0; q < r; ++q) {
          const std::int64_t e = d[static_cast<std::size_t>(q)];
          const std::int64_t step = choose<std::int64_t>({1, 1, 2, -1, -2});
          auto bound = [&]() -> std::optional<std::int64_t> {
            const int hi = static_cast<int>(step > 0 ? e : e - 1);
            if (coin(0.4) || hi < -e) return std::nullopt;
            return static_cast<std::int64_t>(uni(static_cast<int>(-e), hi));
          };
          const auto start = bound(), stop = bound();
          sl.push_back(aj::Slice(start, stop, step));
          auto txt = [](std::optional<std::int64_t> b) { return b ? std::to_string(*b) : std::string("_"); };
          s += (s.empty() ? "" : ",") + txt(start) + ":" + txt(stop) + ":" + std::to_string(step);
        }
        const Dims sd = dims_of(aj::slice(v.a, sl));
        const bool add_op = coin(0.5);
        const std::string xname = "v" + std::to_string(vals_.size());
        Array x = input(sd, dt(v));
        add(add_op ? aj::slice_add(v.a, sl, x) : aj::slice_update(v.a, sl, x),
            std::string(add_op ? "slice_add" : "slice_update") + vi + xname + " s=" + s);
        return;
      }
      case 6: {  // pad
        const int mode = uni(0, 2);
        Dims out;
        std::vector<aj::PadWidth> w;
        std::string ws;
        for (int q = 0; q < r; ++q) {
          const std::int64_t e = d[static_cast<std::size_t>(q)];
          std::int64_t lo = uni(0, 2), hi = uni(0, 2);
          if (mode != 0 && e == 0) lo = hi = 0;
          w.push_back({lo, hi});
          out.push_back(e + lo + hi);
          ws += (ws.empty() ? "" : ";") + std::to_string(lo) + "," + std::to_string(hi);
        }
        if (numel(out) > kMaxNumel) return;
        static const char* modes[] = {"constant", "edge", "reflect"};
        const DType t = dt(v);
        const aj::Scalar value = t == DType::bool_ ? aj::Scalar(true) : aj::is_float(t) ? aj::Scalar(-2.5) : aj::Scalar(5);
        const std::string vt = t == DType::bool_ ? "b:1" : aj::is_float(t) ? "f:" + hex(-2.5) : "i:5";
        add(aj::pad(v.a, w, static_cast<aj::PadMode>(mode), value),
            "pad" + vi + "widths=" + (ws.empty() ? "none" : ws) + " mode=" + modes[mode] + " value=" + vt);
        return;
      }
      case 7: {  // roll
        const std::int64_t shift = uni(-5, 5);
        if (r == 0 || coin(0.3)) {
          add(aj::roll(v.a, shift), "roll" + vi + "shift=" + std::to_string(shift) + " axis=none");
        } else {
          add(aj::roll(v.a, shift, axis), "roll" + vi + "shift=" + std::to_string(shift) + as);
        }
        return;
      }
      default: {  // one_hot of labels in range (out-of-range labels: zero rows, as JAX)
        const std::int64_t c = uni(1, 4);
        Dims ld(d.begin(), d.begin() + std::min(r, 2));
        if (numel(ld) * c > kMaxNumel) return;
        const std::string lname = "v" + std::to_string(vals_.size());
        Array labels = index_input(ld, c);
        const DType t = random_dtype();
        add(aj::one_hot(labels, c, t), "one_hot " + lname + " classes=" + std::to_string(c) + " dtype=" +
                                           aj::dtype_name(t));
        return;
      }
    }
  }

  void concat_stack() {
    const Val v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    const bool stack = r == 0 || coin(0.4);
    if (stack && r >= 4) return;
    const int axis = stack ? uni(-r - 1, r) : uni(-r, r - 1);
    std::vector<Array> parts = {v.a};
    std::string text = (stack ? "stack " : "concatenate ") + v.name;
    for (int k = uni(0, 2); k > 0; --k) {
      Dims pd = d;
      if (!stack) pd[static_cast<std::size_t>((axis + r) % r)] = uni(0, 3);
      if (numel(d) + numel(pd) > 2 * kMaxNumel) break;
      const DType t = coin(0.6) ? v.a.dtype() : random_dtype();
      parts.push_back(input(pd, t));
      text += " " + vals_.back().name;
    }
    Array out = stack ? aj::stack(parts, axis) : aj::concatenate(parts, axis);
    add(out, text + " axis=" + std::to_string(axis));
  }

  // NumPy's shape functions (arrayjit/shape_functions.hpp): one result each
  // (array_split gives one of its pieces).
  void shape_fn() {
    const Val v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    auto axis = [&] { return uni(-r, r - 1); };
    const bool number = v.a.dtype() != DType::bool_;
    switch (uni(0, 12)) {
      case 0:
        if (r == 0 || coin(0.4)) add(aj::flip(v.a), "flip " + v.name + " axes=all");
        else {
          const int ax = axis();
          add(aj::flip(v.a, ax), "flip " + v.name + " axes=" + std::to_string(ax));
        }
        return;
      case 1: {
        if (r == 0) return;
        const int i = axis(), j = axis();
        add(aj::swapaxes(v.a, i, j), "swapaxes " + v.name + " a=" + std::to_string(i) + " b=" + std::to_string(j));
        return;
      }
      case 2: {
        if (r == 0) return;
        const int i = axis(), j = axis();
        add(aj::moveaxis(v.a, i, j), "moveaxis " + v.name + " src=" + std::to_string(i) + " dst=" + std::to_string(j));
        return;
      }
      case 3: {
        Dims reps;
        for (int k = uni(1, 3); k > 0; --k) reps.push_back(uni(0, 2));
        std::int64_t n = numel(d);
        for (auto x : reps) n *= x;
        if (n > kMaxNumel || r + 3 > 4) return;
        add(aj::tile(v.a, reps), "tile " + v.name + " reps=" + list(reps));
        return;
      }
      case 4: {
        const std::int64_t k = uni(0, 3);
        if (numel(d) * k > kMaxNumel) return;
        if (r == 0 || coin(0.3)) add(aj::repeat(v.a, k), "repeat " + v.name + " n=" + std::to_string(k) + " axis=none");
        else {
          const int ax = axis();
          add(aj::repeat(v.a, k, ax), "repeat " + v.name + " n=" + std::to_string(k) + " axis=" + std::to_string(ax));
        }
        return;
      }
      case 5: {
        if (r < 2) return;
        const std::int64_t k = uni(-3, 3);
        const bool lower = coin(0.5);
        add(lower ? aj::tril(v.a, k) : aj::triu(v.a, k), std::string(lower ? "tril " : "triu ") + v.name + " k=" + std::to_string(k));
        return;
      }
      case 6: {
        if (r < 2) return;
        const std::int64_t off = uni(-3, 3);
        int i = axis(), j = axis();
        if ((i + r) % r == (j + r) % r) return;
        const bool tr = coin(0.4);
        add(tr ? aj::linalg::trace(v.a, off, i, j) : aj::diagonal(v.a, off, i, j),
            std::string(tr ? "trace " : "diagonal ") + v.name + " off=" + std::to_string(off) + " a=" + std::to_string(i) +
                " b=" + std::to_string(j));
        return;
      }
      case 7: {
        if (r != 1 && r != 2) return;
        const std::int64_t k = uni(-2, 2);
        if (r == 1 && (d[0] + (k < 0 ? -k : k)) * (d[0] + (k < 0 ? -k : k)) > kMaxNumel) return;
        add(aj::diag(v.a, k), "diag " + v.name + " k=" + std::to_string(k));
        return;
      }
      case 8: {
        const int n = uni(1, 3);
        add(n == 1 ? aj::atleast_1d(v.a) : n == 2 ? aj::atleast_2d(v.a) : aj::atleast_3d(v.a),
            "atleast_" + std::to_string(n) + "d " + v.name);
        return;
      }
      case 9: {
        if (!number || numel(d) > 8) return;
        const Dims bd = r == 0 ? Dims{} : Dims{uni(1, 3)};
        const Val b = (input(bd, number_dtype()), vals_.back());
        if (coin(0.5)) add(aj::outer(v.a, b.a), "outer " + v.name + " " + b.name);
        else if (r <= 2) add(aj::kron(v.a, b.a), "kron " + v.name + " " + b.name);
        return;
      }
      case 10: {
        if (!number || r == 0) return;
        const int kind = uni(0, 3);  // tensordot, dot, inner, vdot
        Dims bd;
        if (kind == 0 || kind == 1) {
          bd = {d.back(), uni(0, 3)};
        } else if (kind == 2) {
          bd = {uni(0, 3), d.back()};
        } else {
          bd = {numel(d)};
        }
        if (numel(bd) > kMaxNumel) return;
        const Val b = (input(bd, number_dtype()), vals_.back());
        const char* names[] = {"tensordot", "dot", "inner", "vdot"};
        Array out = kind == 0 ? aj::tensordot(v.a, b.a, 1)
                    : kind == 1 ? aj::dot(v.a, b.a)
                    : kind == 2 ? aj::inner(v.a, b.a)
                                : aj::vdot(v.a, b.a);
        if (out.size() > kMaxNumel) return;
        add(out, std::string(names[kind]) + " " + v.name + " " + b.name);
        return;
      }
      case 11: {
        const Dims cd = {uni(0, 3), 3};
        const DType t = number_dtype();
        const Val a = (input(cd, t), vals_.back());
        const Val b = (input(coin(0.5) ? cd : Dims{3}, number_dtype()), vals_.back());
        add(aj::cross(a.a, b.a), "cross " + a.name + " " + b.name);
        return;
      }
      default: {
        if (r == 0) return;
        const int ax = axis();
        const std::int64_t sections = uni(1, 4);
        const auto pieces = aj::array_split(v.a, sections, ax);
        const int i = uni(0, static_cast<int>(sections) - 1);
        add(pieces[static_cast<std::size_t>(i)], "array_split " + v.name + " sections=" + std::to_string(sections) +
                                                     " axis=" + std::to_string(ax) + " i=" + std::to_string(i));
      }
    }
  }

  // NumPy's statistics (arrayjit/statistics.hpp).
  void stats_fn() {
    const Val& v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    const bool keep = coin(0.3);
    const std::string keep_text = std::string(" keep=") + (keep ? "1" : "0");
    std::vector<int> list;
    const std::string axes_text = random_axes(r, list);
    const aj::Axes axes = list.empty() ? aj::Axes::all() : aj::Axes(list);
    bool empty_line = numel(d) == 0;
    for (int ax : list) empty_line = empty_line || d[static_cast<std::size_t>((ax + r) % r)] == 0;
    switch (uni(0, 6)) {
      case 0: {
        const int ddof = uni(0, 1);
        const bool sd = coin(0.5);
        add(sd ? aj::std(v.a, axes, ddof, keep) : aj::var(v.a, axes, ddof, keep),
            std::string(sd ? "std " : "var ") + v.name + " axes=" + axes_text + " ddof=" + std::to_string(ddof) + keep_text);
        return;
      }
      case 1: {
        const bool mean = coin(0.5);
        add(mean ? aj::nanmean(v.a, axes, keep) : aj::nansum(v.a, axes, keep),
            std::string(mean ? "nanmean " : "nansum ") + v.name + " axes=" + axes_text + keep_text);
        return;
      }
      case 2: {
        if (empty_line) return;
        const bool mx = coin(0.5);
        add(mx ? aj::nanmax(v.a, axes, keep) : aj::nanmin(v.a, axes, keep),
            std::string(mx ? "nanmax " : "nanmin ") + v.name + " axes=" + axes_text + keep_text);
        return;
      }
      case 3:
        add(aj::count_nonzero(v.a, axes, keep), "count_nonzero " + v.name + " axes=" + axes_text + keep_text);
        return;
      case 4: {
        if (r == 0) return;
        const int n = uni(0, 3), ax = uni(-r, r - 1);
        add(aj::diff(v.a, n, ax), "diff " + v.name + " n=" + std::to_string(n) + " axis=" + std::to_string(ax));
        return;
      }
      default: {
        if (v.a.dtype() == DType::bool_ || numel(d) == 0) return;
        std::optional<int> axis;
        if (r > 0 && coin(0.7)) axis = uni(-r, r - 1);
        if (axis && d[static_cast<std::size_t>((*axis + r) % r)] == 0) return;
        const std::string at = std::string(" axis=") + (axis ? std::to_string(*axis) : "none") + keep_text;
        if (coin(0.4)) {
          add(aj::median(v.a, axis, keep), "median " + v.name + at);
        } else {
          const double q = choose<double>({0.0, 0.1, 0.25, 0.5, 0.7, 0.9, 1.0});
          add(aj::quantile(v.a, q, axis, keep), "quantile " + v.name + " q=f:" + hex(q) + at);
        }
      }
    }
  }

  // searchsorted (into a sorted copy of a value), bincount with a static
  // length, argwhere and masked_select with a static size, einsum of one
  // operand or a contracted pair.
  void search_fn() {
    const Val v = vals_[static_cast<std::size_t>(any_value())];
    const Dims d = dims_of(v.a);
    const int r = static_cast<int>(d.size());
    const bool number = v.a.dtype() != DType::bool_;
    switch (uni(0, 6)) {
      case 5: {
        // Sorted distinct values, a static size (JAX's form), 0 after them.
        const std::int64_t size = uni(0, 9);
        add(aj::unique(v.a, size, 0), "unique " + v.name + " size=" + std::to_string(size));
        return;
      }
      case 6: {
        // Bins: an integer value's elements sorted (no NaN, so monotonic),
        // increasing or decreasing (flipped).
        if (!number) return;
        const int k = pick([](const Val& w) { return aj::is_integer(w.a.dtype()); });
        if (k < 0) return;
        const Val w = vals_[static_cast<std::size_t>(k)];
        const std::int64_t n = w.a.size();
        add(aj::reshape(w.a, aj::Shape{n}), "reshape " + w.name + " shape=" + std::to_string(n));
        add(aj::sort(vals_.back().a, -1), "sort " + vals_.back().name + " axis=-1");
        if (coin(0.5)) add(aj::flip(vals_.back().a), "flip " + vals_.back().name + " axes=all");
        const Val bins = vals_.back();
        const bool right = coin(0.5);
        add(aj::digitize(v.a, bins.a, right), "digitize " + v.name + " " + bins.name + " right=" + (right ? "1" : "0"));
        return;
      }
      case 0: {
        if (!number) return;
        const Val w = vals_[static_cast<std::size_t>(number_value())];
        const std::int64_t n = w.a.size();
        add(aj::reshape(w.a, aj::Shape{n}), "reshape " + w.name + " shape=" + std::to_string(n));
        const Val flat = vals_.back();
        add(aj::sort(flat.a, -1), "sort " + flat.name + " axis=-1");
        const Val sorted = vals_.back();
        const bool right = coin(0.5);
        add(aj::searchsorted(sorted.a, v.a, right ? aj::Side::right : aj::Side::left),
            "searchsorted " + sorted.name + " " + v.name + " side=" + (right ? "right" : "left"));
        return;
      }
      case 1: {
        if (!aj::is_integer(v.a.dtype()) && number) return;
        const std::int64_t n = v.a.size();
        add(aj::reshape(v.a, aj::Shape{n}), "reshape " + v.name + " shape=" + std::to_string(n));
        const Val flat = vals_.back();
        const std::int64_t length = uni(0, 9);
        add(aj::bincount(flat.a, std::nullopt, 0, length), "bincount " + flat.name + " length=" + std::to_string(length));
        return;
      }
      case 2: {
        const std::int64_t size = uni(0, 8);
        if (r > 0 && coin(0.5)) {
          add(aj::argwhere(v.a, size, -1), "argwhere " + v.name + " size=" + std::to_string(size));
        } else {
          const Val m = vals_[static_cast<std::size_t>(bool_value())];
          Arg x = array_arg(dims_of(m.a), [](DType) { return true; });
          if (x.kind != 'a') return;
          add(aj::masked_select(x.array, m.a, size, 0), "masked_select " + x.text + " " + m.name + " size=" + std::to_string(size));
        }
        return;
      }
      default: {
        // One operand: a permutation, a sum, a diagonal; or v contracted with
        // a new operand over its last axis.
        if (r == 0 || !number || coin(0.5)) {
          static const std::vector<std::vector<std::string>> by_rank = {
              {"->", ""}, {"i->", "i", "i->i"}, {"ij->ji", "ij->", "ij->j", "ij", "ji"}, {"ijk->kji", "ijk->j", "...k->...", "ijk->ik"}};
          if (r > 3) return;
          std::string spec = choose(by_rank[static_cast<std::size_t>(r)]);
          if (r == 2 && d[0] == d[1] && coin(0.3)) spec = coin(0.5) ? "ii->i" : "ii";
          add(aj::einsum(spec, {v.a}), "einsum " + v.name + " spec=" + (spec.empty() ? "_" : spec));
          return;
        }
        if (r > 3) return;
        const std::string letters = std::string("abc").substr(0, static_cast<std::size_t>(r));
        const Dims od = {d.back(), uni(0, 4)};
        if (numel(od) > kMaxNumel) return;
        input(od, number_dtype());
        const Val w = vals_.back();
        const std::string spec = letters + "," + letters.back() + "z->" + letters.substr(0, letters.size() - 1) + "z";
        add(aj::einsum(spec, {v.a, w.a}), "einsum " + v.name + " " + w.name + " spec=" + spec);
      }
    }
  }

  void matmul() {
    const int k = pick([](const Val& v) { return v.a.dtype() != DType::bool_ && v.a.ndim() >= 1; });
    const bool fresh = k < 0 || coin(0.4);
    if (fresh) {
      Dims d = factor(uni(1, 12));
      if (d.empty()) d = {1};
      input(d, number_dtype());
    }
    const Val a = fresh ? vals_.back() : vals_[static_cast<std::size_t>(k)];
    const Dims ad = dims_of(a.a);
    Dims bd;
    if (coin(0.25)) {
      bd = {ad.back()};
    } else {
      const int batch = ad.size() > 2 && coin(0.5) ? static_cast<int>(ad.size()) - 2 : 0;
      for (int i = 0; i < batch; ++i) bd.push_back(coin(0.3) ? 1 : ad[static_cast<std::size_t>(i)]);
      bd.push_back(ad.back());
      bd.push_back(uni(0, 4));
    }
    if (numel(bd) > kMaxNumel) return;
    const Val b = (input(bd, number_dtype()), vals_.back());
    add(aj::matmul(a.a, b.a), "matmul " + a.name + " " + b.name);
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<Val> vals_;
};

}  // namespace ajtest

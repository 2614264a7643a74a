// Random differentiable programs for the autodiff tests
// (tests/test_autodiff_random.cpp): the counterpart of tests/random_graph.hpp
// for derivatives. RandomGraph's programs mix in integers, bools, NaN and inf,
// mid-program evaluations and discontinuous ops, none of which a central
// difference can check; these programs are f64 from end to end and smooth
// almost everywhere:
//  - every op of the table that has a derivative: elementwise (with domains
//    guarded: log(x^2 + 1), exp(tanh x), division by x^2 + 1, pow of a
//    positive base), where (a comparison of two values), max/min, reductions
//    over random axes, views (transpose, strided and reversed slices,
//    reshape, broadcast_to, expand_dims, squeeze), matmul (batched,
//    broadcast, vectors), concatenate/stack, stop_gradient-free; scans
//    (cumsum, cumprod of a bounded value), sort, topk, and the indexing ops
//    (take, take_along_axis, scatter_add, scatter, pad, slice_update, roll)
//    with constant indices drawn from the seed: negative, repeated, and out
//    of range (clamped by gathers, dropped by scatters);
//  - sometimes a gradient inside the program (grad of grad);
//  - values are kept moderate (a value whose magnitude bound passes 8 is
//    divided by that bound, a linear op), so no step overflows.
// Kinks (abs at 0, ties of max/min/where, clip's ends, mod's jumps) are met
// only where two continuous random values coincide to within the difference
// step, which practically never happens.
//
// Every choice depends on the seed and on shapes only: running the program on
// any argument values traces the same ops.
#pragma once

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace ajtest {

class DiffProgram {
 public:
  using Dims = std::vector<std::int64_t>;
  static constexpr std::int64_t kMaxNumel = 48;
  static constexpr int kMaxSteps = 24;

  explicit DiffProgram(std::uint64_t seed) : seed_(seed) {
    std::mt19937_64 rng(seed ^ 0x5eedf00dULL);
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) inputs_.push_back(shape(rng));
  }

  const std::vector<Dims>& input_shapes() const { return inputs_; }
  const std::string& program() const { return log_; }
  const std::map<std::string, int>& used() const { return used_; }

  // The program on `args` (f64, one per input shape): its outputs.
  std::vector<aj::Array> operator()(const std::vector<aj::Array>& args) {
    rng_.seed(seed_);
    pool_.clear();
    log_.clear();
    used_.clear();
    next_ = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      pool_.push_back({args[i], 2.0, "x" + std::to_string(i)});
      log_ += "x" + std::to_string(i) + ": " + dims_str(inputs_[i]) + "\n";
    }
    const int steps = 1 + uni(0, kMaxSteps - 1);
    for (int s = 0; s < steps; ++s) step();
    std::vector<aj::Array> outs{pool_.back().a};
    std::string names = pool_.back().name;
    const int more = uni(0, 2);
    for (int k = 0; k < more; ++k) {
      const Val& v = pool_[static_cast<std::size_t>(uni(0, static_cast<int>(pool_.size()) - 1))];
      outs.push_back(v.a);
      names += " " + v.name;
    }
    log_ += "outputs: " + names + "\n";
    return outs;
  }

 private:
  struct Val {
    aj::Array a;
    double mag;  // |element| <= mag
    std::string name;
    Dims dims() const { return a.shape().dims(); }
  };

  static std::int64_t numel(const Dims& d) {
    std::int64_t n = 1;
    for (auto e : d) n *= e;
    return n;
  }
  static std::string dims_str(const Dims& d) {
    std::string s = "[";
    for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "]";
  }
  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  static Dims shape(std::mt19937_64& rng) {
    static const int ranks[] = {0, 1, 1, 2, 2, 2, 3, 3};
    const int r = ranks[rng() % 8];
    Dims d;
    for (int i = 0; i < r; ++i) {
      const int u = static_cast<int>(rng() % 100);
      d.push_back(u < 3 ? 0 : u < 25 ? 1 : 2 + u % 4);
    }
    while (numel(d) > kMaxNumel) {
      for (auto& e : d) e = std::max<std::int64_t>(1, e / 2);
    }
    return d;
  }

  // A constant (not differentiated) of the given shape: values from the seed.
  aj::Array constant(const Dims& d) {
    std::vector<double> v(static_cast<std::size_t>(numel(d)));
    for (auto& x : v) x = std::uniform_real_distribution<double>(-1.5, 1.5)(rng_);
    return aj::from_vector(v, aj::Shape(d));
  }

  void put(aj::Array a, double mag, const std::string& expr, const std::string& op) {
    ++used_[op];
    std::string name = "v" + std::to_string(next_++);
    log_ += name + " = " + expr + "  // " + dims_str(a.shape().dims()) + "\n";
    if (mag > 8) {  // keep values moderate: a linear rescale
      a = a * (1.0 / mag);
      log_ += name + " = " + name + " * (1 / " + std::to_string(mag) + ")\n";
      mag = 1;
    }
    pool_.push_back({std::move(a), mag, name});
  }

  const Val& any() { return pool_[static_cast<std::size_t>(uni(0, static_cast<int>(pool_.size()) - 1))]; }

  // A pool value whose shape broadcasts with d (within the size limit), or a
  // constant of a compatible shape.
  Val partner(const Dims& d) {
    std::vector<std::size_t> ok;
    for (std::size_t k = 0; k < pool_.size(); ++k) {
      Dims b;
      if (broadcast(d, pool_[k].dims(), &b) && numel(b) <= kMaxNumel) ok.push_back(k);
    }
    if (!ok.empty() && coin(0.75)) return pool_[ok[static_cast<std::size_t>(uni(0, static_cast<int>(ok.size()) - 1))]];
    Dims c;
    const std::size_t drop = coin(0.2) ? static_cast<std::size_t>(uni(0, static_cast<int>(d.size()))) : 0;
    for (std::size_t i = drop; i < d.size(); ++i) c.push_back(coin(0.3) ? 1 : d[i]);
    return {constant(c), 1.5, "c" + dims_str(c)};
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

  void step() {
    static const int w[] = {22, 24, 12, 18, 7, 5, 3, 14};
    int r = uni(0, 104), k = 0;
    while (k < 7 && r >= w[k]) r -= w[k++];
    switch (k) {
      case 0: return unary();
      case 1: return binary();
      case 2: return reduce();
      case 3: return view();
      case 4: return matmul();
      case 5: return concat();
      case 6: return inner_grad();
      default: return indexing();
    }
  }

  void unary() {
    const Val x = any();
    static const char* ops[] = {"neg", "sin", "cos", "tanh", "sigmoid", "exp", "log", "log1p",
                                "expm1", "sqrt", "rsqrt", "tan", "abs", "clip", "square", "erf", "erfc"};
    const std::string op = ops[uni(0, 16)];
    const aj::Array& a = x.a;
    const std::string n = x.name;
    if (op == "neg") return put(-a, x.mag, "-" + n, op);
    if (op == "sin") return put(aj::sin(a), 1, "sin(" + n + ")", op);
    if (op == "cos") return put(aj::cos(a), 1, "cos(" + n + ")", op);
    if (op == "tanh") return put(aj::tanh(a), 1, "tanh(" + n + ")", op);
    if (op == "sigmoid") return put(aj::sigmoid(a), 1, "sigmoid(" + n + ")", op);
    if (op == "exp") return put(aj::exp(aj::tanh(a)), 2.72, "exp(tanh(" + n + "))", op);
    if (op == "log") return put(aj::log(a * a + 1.0), std::log(x.mag * x.mag + 1), "log(" + n + "^2 + 1)", op);
    if (op == "log1p") return put(aj::log1p(a * a), std::log1p(x.mag * x.mag), "log1p(" + n + "^2)", op);
    if (op == "expm1") return put(aj::expm1(aj::tanh(a)), 1.72, "expm1(tanh(" + n + "))", op);
    if (op == "sqrt") return put(aj::sqrt(a * a + 1.0), x.mag + 1, "sqrt(" + n + "^2 + 1)", op);
    if (op == "rsqrt") return put(aj::rsqrt(a * a + 0.5), 1.5, "rsqrt(" + n + "^2 + 0.5)", op);
    if (op == "tan") return put(aj::tan(aj::tanh(a)), 1.56, "tan(tanh(" + n + "))", op);
    if (op == "abs") return put(aj::abs(a), x.mag, "abs(" + n + ")", op);
    if (op == "clip") return put(aj::clip(a, -0.8, 0.6), 0.8, "clip(" + n + ", -0.8, 0.6)", op);
    if (op == "erf") return put(aj::erf(a), 1, "erf(" + n + ")", op);
    if (op == "erfc") return put(aj::erfc(a), 2, "erfc(" + n + ")", op);
    put(aj::pow(a, 2.0), x.mag * x.mag, "pow(" + n + ", 2)", op);
  }

  void binary() {
    const Val x = any();
    const Val y = partner(x.dims());
    static const char* ops[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "mod", "scalar"};
    const std::string op = ops[uni(0, 9)];
    const bool swap = coin(0.5);
    const Val& a = swap ? y : x;
    const Val& b = swap ? x : y;
    const std::string call = "(" + a.name + ", " + b.name + ")";
    if (op == "add") return put(a.a + b.a, a.mag + b.mag, "add" + call, op);
    if (op == "sub") return put(a.a - b.a, a.mag + b.mag, "sub" + call, op);
    if (op == "mul") return put(a.a * b.a, a.mag * b.mag, "mul" + call, op);
    if (op == "div") return put(a.a / (b.a * b.a + 1.0), a.mag, a.name + " / (" + b.name + "^2 + 1)", op);
    if (op == "pow") {
      return put(aj::pow(b.a * b.a + 0.5, aj::tanh(a.a)), std::max(b.mag * b.mag + 0.5, 2.0),
                 "pow(" + b.name + "^2 + 0.5, tanh(" + a.name + "))", op);
    }
    if (op == "maximum") return put(aj::maximum(a.a, b.a), std::max(a.mag, b.mag), "maximum" + call, op);
    if (op == "minimum") return put(aj::minimum(a.a, b.a), std::max(a.mag, b.mag), "minimum" + call, op);
    if (op == "where") {
      return put(aj::where(a.a > b.a, a.a * b.a, b.a - a.a), std::max(a.mag * b.mag, a.mag + b.mag),
                 "where(" + a.name + " > " + b.name + ", " + a.name + " * " + b.name + ", " + b.name + " - " + a.name + ")", op);
    }
    if (op == "mod") return put(aj::mod(x.a, 1.7), 1.7, "mod(" + x.name + ", 1.7)", op);
    const double c = std::uniform_real_distribution<double>(-2, 2)(rng_);
    return put(swap ? c * x.a + 0.25 : x.a - c, x.mag * std::fabs(c) + 2, "scalar op with " + std::to_string(c) + " on " + x.name, op);
  }

  void reduce() {
    const Val x = any();
    const Dims d = x.dims();
    std::vector<int> axes;
    std::int64_t count = 1;
    bool empty = false;
    for (int i = 0; i < static_cast<int>(d.size()); ++i) {
      if (coin(0.5)) {
        axes.push_back(coin(0.3) ? i - static_cast<int>(d.size()) : i);
        count *= d[static_cast<std::size_t>(i)];
        empty = empty || d[static_cast<std::size_t>(i)] == 0;
      }
    }
    const bool keep = coin(0.4);
    static const char* ops[] = {"sum", "mean", "prod", "max", "min"};
    std::string op = ops[uni(0, 4)];
    if (empty && (op == "max" || op == "min" || op == "mean")) op = "sum";  // no identity / 0 / 0
    const std::string call = "(" + x.name + ", " + std::to_string(axes.size()) + " axes" + (keep ? ", keepdims)" : ")");
    const auto c = static_cast<double>(count);
    if (op == "sum") return put(aj::sum(x.a, aj::Axes(axes), keep), c * x.mag, "sum" + call, op);
    if (op == "mean") return put(aj::mean(x.a, aj::Axes(axes), keep), x.mag, "mean" + call, op);
    if (op == "prod") return put(aj::prod(aj::tanh(x.a) * 1.3, aj::Axes(axes), keep), std::pow(1.3, c), "prod(tanh(...) * 1.3)" + call, op);
    if (op == "max") return put(aj::max(x.a, aj::Axes(axes), keep), x.mag, "max" + call, op);
    put(aj::min(x.a, aj::Axes(axes), keep), x.mag, "min" + call, op);
  }

  void view() {
    const Val x = any();
    const Dims d = x.dims();
    const int r = static_cast<int>(d.size());
    const int u = uni(0, 5);
    if (u == 0 && r >= 2) {
      std::vector<int> perm(static_cast<std::size_t>(r));
      for (int i = 0; i < r; ++i) perm[static_cast<std::size_t>(i)] = i;
      std::shuffle(perm.begin(), perm.end(), rng_);
      return put(aj::transpose(x.a, perm), x.mag, "transpose(" + x.name + ")", "transpose");
    }
    if (u <= 1 && r >= 1) {
      std::vector<aj::Slice> sl;
      std::string s;
      const int axes = uni(1, r);
      for (int i = 0; i < axes; ++i) {
        const std::int64_t n = d[static_cast<std::size_t>(i)];
        static const std::int64_t steps[] = {1, 2, 3, -1, -2};
        const std::int64_t step = steps[uni(0, 4)];
        std::optional<std::int64_t> start, stop;
        if (n > 0 && coin(0.5)) start = uni(step > 0 ? 0 : static_cast<int>(-n), static_cast<int>(n) - 1);
        if (n > 0 && coin(0.5)) stop = uni(step > 0 ? 0 : static_cast<int>(-n), static_cast<int>(n) - 1);
        sl.emplace_back(start, stop, step);
        s += (start ? std::to_string(*start) : "_") + ":" + (stop ? std::to_string(*stop) : "_") + ":" + std::to_string(step) + " ";
      }
      return put(aj::slice(x.a, sl), x.mag, "slice(" + x.name + ", " + s + ")", "slice");
    }
    if (u == 2) {
      Dims t;
      if (r < 3 && coin(0.5)) t.push_back(uni(1, 3));
      for (auto e : d) t.push_back(e == 1 && coin(0.6) ? uni(2, 3) : e);
      if (numel(t) > kMaxNumel) return;
      return put(aj::broadcast_to(x.a, aj::Shape(t)), x.mag, "broadcast_to(" + x.name + ", " + dims_str(t) + ")", "broadcast_to");
    }
    if (u == 3) {
      const std::int64_t n = numel(d);
      Dims t = n == 0 ? Dims{0, 2} : Dims{n};
      if (n > 1 && n % 2 == 0 && coin(0.5)) t = {2, n / 2};
      if (n > 2 && n % 3 == 0 && coin(0.5)) t = {n / 3, 1, 3};
      return put(aj::reshape(x.a, aj::Shape(t)), x.mag, "reshape(" + x.name + ", " + dims_str(t) + ")", "reshape");
    }
    if (u == 4 && r < 4) {
      const int axis = uni(-(r + 1), r);
      return put(aj::expand_dims(x.a, axis), x.mag, "expand_dims(" + x.name + ", " + std::to_string(axis) + ")", "expand_dims");
    }
    put(aj::squeeze(x.a), x.mag, "squeeze(" + x.name + ")", "squeeze");
  }

  void matmul() {
    std::vector<std::size_t> ok;
    for (std::size_t k = 0; k < pool_.size(); ++k) {
      const int r = pool_[k].a.ndim();
      if (r >= 1 && r <= 3) ok.push_back(k);
    }
    if (ok.empty()) return;
    const Val a = pool_[ok[static_cast<std::size_t>(uni(0, static_cast<int>(ok.size()) - 1))]];
    const Dims da = a.dims();
    const std::int64_t K = da.back();
    Dims db = coin(0.3) ? Dims{K} : Dims{K, uni(1, 4)};
    if (db.size() == 2 && da.size() == 3 && coin(0.5)) db.insert(db.begin(), coin(0.5) ? 1 : da[0]);
    Val b;
    std::vector<std::size_t> same;
    for (std::size_t k = 0; k < pool_.size(); ++k) {
      if (pool_[k].dims() == db) same.push_back(k);
    }
    if (!same.empty() && coin(0.6)) b = pool_[same[static_cast<std::size_t>(uni(0, static_cast<int>(same.size()) - 1))]];
    else b = {constant(db), 1.5, "c" + dims_str(db)};
    const std::int64_t rows = da.size() >= 2 ? da[da.size() - 2] : 1;
    const std::int64_t batch = da.size() == 3 ? da[0] : (db.size() == 3 ? db[0] : 1);
    if (batch * rows * (db.size() >= 2 ? db.back() : 1) > kMaxNumel) return;
    const bool swap_t = da.size() == 2 && db.size() == 2 && coin(0.3);  // a^T-style operand: (b^T a^T)^T
    if (swap_t) {
      return put(aj::matmul(b.a.T(), a.a.T()).T(), static_cast<double>(K) * a.mag * b.mag,
                 "matmul(" + b.name + ".T, " + a.name + ".T).T", "matmul");
    }
    put(aj::matmul(a.a, b.a), static_cast<double>(K) * a.mag * b.mag, "matmul(" + a.name + ", " + b.name + ")", "matmul");
  }

  void concat() {
    const Val a = any();
    const Dims d = a.dims();
    if (d.empty()) return;
    const int axis = uni(0, static_cast<int>(d.size()) - 1);
    std::vector<aj::Array> parts{a.a};
    std::string names = a.name;
    double mag = a.mag;
    std::int64_t total = numel(d);
    const int more = uni(1, 2);
    for (int k = 0; k < more; ++k) {
      std::vector<std::size_t> ok;
      for (std::size_t j = 0; j < pool_.size(); ++j) {
        const Dims e = pool_[j].dims();
        bool fits = e.size() == d.size();
        for (std::size_t q = 0; fits && q < d.size(); ++q) fits = static_cast<int>(q) == axis || e[q] == d[q];
        if (fits) ok.push_back(j);
      }
      const Val& p = pool_[ok[static_cast<std::size_t>(uni(0, static_cast<int>(ok.size()) - 1))]];
      parts.push_back(p.a);
      names += ", " + p.name;
      mag = std::max(mag, p.mag);
      total += numel(p.dims());
    }
    if (total > kMaxNumel) return;
    if (coin(0.3) && parts[1].shape() == parts[0].shape()) {
      return put(aj::stack({parts[0], parts[1]}, axis), mag, "stack({" + names + "}, " + std::to_string(axis) + ")", "stack");
    }
    put(aj::concatenate(parts, axis), mag, "concatenate({" + names + "}, " + std::to_string(axis) + ")", "concatenate");
  }

  // A gradient as a step of the program: its derivative needs second-order rules.
  void inner_grad() {
    const Val x = any();
    const int form = uni(0, 2);
    aj::Array g;
    std::string expr;
    if (form == 0) {
      g = aj::grad([](const aj::Array& a) { return aj::sum(aj::tanh(a) * a); })(x.a);
      expr = "grad(sum(tanh(a) * a))(" + x.name + ")";
    } else if (form == 1) {
      g = aj::grad([](const aj::Array& a) { return aj::log(aj::sum(aj::exp(aj::sin(a)))); })(x.a);
      expr = "grad(log(sum(exp(sin(a)))))(" + x.name + ")";
    } else {
      g = aj::grad([](const aj::Array& a) { return aj::sum(aj::sqrt(a * a + 1.0) * aj::cos(a)); })(x.a);
      expr = "grad(sum(sqrt(a^2 + 1) cos(a)))(" + x.name + ")";
    }
    put(g, x.mag + 2, expr, "grad");
  }

  // Constant indices for an axis of extent n: in [-n, n) mostly (negative
  // ones count from the end), repeats likely, sometimes outside.
  aj::Array indices(const Dims& d, std::int64_t n) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(numel(d)));
    for (auto& i : v) i = coin(0.1) ? (coin(0.5) ? n + uni(0, 2) : -n - 1 - uni(0, 2)) : uni(static_cast<int>(-n), static_cast<int>(n) - 1);
    return aj::from_vector(v, aj::Shape(d));
  }
  // A pool value that broadcasts to exactly d, or a constant of shape d.
  Val operand_for(const Dims& d) {
    std::vector<std::size_t> ok;
    for (std::size_t k = 0; k < pool_.size(); ++k) {
      Dims b;
      if (broadcast(d, pool_[k].dims(), &b) && b == d) ok.push_back(k);
    }
    if (!ok.empty() && coin(0.7)) return pool_[ok[static_cast<std::size_t>(uni(0, static_cast<int>(ok.size()) - 1))]];
    return {constant(d), 1.5, "c" + dims_str(d)};
  }

  void indexing() {
    const Val x = any();
    const Dims d = x.dims();
    const int r = static_cast<int>(d.size());
    if (r == 0) return;
    const int axis = uni(0, r - 1);
    const std::int64_t n = d[static_cast<std::size_t>(axis)];
    const std::string on = "(" + x.name + ", axis " + std::to_string(axis);
    static const char* ops[] = {"cumsum", "cumprod", "sort", "topk", "take", "take_along_axis",
                                "scatter_add", "scatter", "pad", "slice_update", "roll"};
    const std::string op = ops[uni(0, 10)];
    if (op == "cumsum") return put(aj::cumsum(x.a, axis), static_cast<double>(std::max<std::int64_t>(n, 1)) * x.mag, "cumsum" + on + ")", op);
    if (op == "cumprod") {
      return put(aj::cumprod(aj::tanh(x.a) * 1.2, axis), std::pow(1.2, static_cast<double>(n)), "cumprod(tanh" + on + ") * 1.2)", op);
    }
    if (op == "sort") return put(aj::sort(x.a, axis), x.mag, "sort" + on + ")", op);
    if (op == "topk") {
      const int k = uni(0, static_cast<int>(n));
      return put(aj::topk(x.a, k, axis).values, x.mag, "topk" + on + ", k " + std::to_string(k) + ")", op);
    }
    if (op == "pad") {
      std::vector<aj::PadWidth> widths;
      std::string w;
      Dims out;
      for (int i = 0; i < r; ++i) {
        widths.emplace_back(uni(0, 2), uni(0, 1));
        w += std::to_string(widths.back().before) + "/" + std::to_string(widths.back().after) + " ";
        out.push_back(d[static_cast<std::size_t>(i)] + widths.back().before + widths.back().after);
      }
      const int m = numel(d) == 0 ? 0 : uni(0, 2);
      if (numel(out) > kMaxNumel) return;
      return put(aj::pad(x.a, widths, static_cast<aj::PadMode>(m), 0.3), std::max(x.mag, 0.3),
                 "pad(" + x.name + ", " + w + "mode " + std::to_string(m) + ")", op);
    }
    if (op == "roll") {
      const int shift = uni(-3, 3);
      if (coin(0.3)) return put(aj::roll(x.a, shift), x.mag, "roll(" + x.name + ", " + std::to_string(shift) + ")", op);
      return put(aj::roll(x.a, shift, axis), x.mag, "roll" + on + ", " + std::to_string(shift) + ")", op);
    }
    if (op == "slice_update") {
      std::vector<aj::Slice> sl;
      Dims vd;
      std::string s;
      for (int i = 0; i < r; ++i) {
        static const std::int64_t steps[] = {1, 2, -1};
        const std::int64_t step = steps[uni(0, 2)];
        const std::int64_t e = d[static_cast<std::size_t>(i)];
        const std::int64_t start = e > 0 && coin(0.5) ? uni(0, static_cast<int>(e) - 1) : (step > 0 ? 0 : e - 1);
        sl.emplace_back(step > 0 || e > 0 ? std::optional<std::int64_t>(start) : std::nullopt, std::nullopt, step);
        vd.push_back(e == 0 ? 0 : step > 0 ? (e - start + step - 1) / step : start + 1);
        s += std::to_string(start) + "::" + std::to_string(step) + " ";
      }
      const Val v = operand_for(vd);
      return put(aj::slice_update(x.a, sl, v.a), std::max(x.mag, v.mag), "slice_update(" + x.name + ", " + s + ", " + v.name + ")", op);
    }
    if (n == 0) return;
    Dims id;  // take-shaped index arrays: rank 0-2
    for (int k = uni(0, 2); k > 0; --k) id.push_back(uni(1, 3));
    Dims full(d.begin(), d.begin() + axis);
    full.insert(full.end(), id.begin(), id.end());
    full.insert(full.end(), d.begin() + axis + 1, d.end());
    if (numel(full) > kMaxNumel) return;
    const aj::Array idx = indices(id, n);
    const std::string at = " at " + dims_str(id);
    if (op == "take") return put(aj::take(x.a, idx, axis), x.mag, "take" + on + ")" + at, op);
    if (op == "take_along_axis") {
      Dims td = d;
      td[static_cast<std::size_t>(axis)] = uni(1, 3);
      for (int i = 0; i < r; ++i) {
        if (i != axis && coin(0.3)) td[static_cast<std::size_t>(i)] = 1;
      }
      if (numel(td) > kMaxNumel) return;
      return put(aj::take_along_axis(x.a, indices(td, n), axis), x.mag, "take_along_axis" + on + ") at " + dims_str(td), op);
    }
    if (id.empty()) id.push_back(1), full.insert(full.begin() + axis, 1);  // scatters take rank >= 1 indices here
    const aj::Array sidx = indices(id, n);
    const Val u = operand_for(full);
    if (op == "scatter_add") {
      return put(aj::scatter_add(x.a, sidx, u.a, axis), x.mag + static_cast<double>(numel(id)) * u.mag,
                 "scatter_add" + on + ", " + u.name + ") at " + dims_str(id), op);
    }
    put(aj::scatter(x.a, sidx, u.a, axis), std::max(x.mag, u.mag), "scatter" + on + ", " + u.name + ") at " + dims_str(id), op);
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<Dims> inputs_;
  std::vector<Val> pool_;
  std::string log_;
  std::map<std::string, int> used_;
  int next_ = 0;
};

}  // namespace ajtest

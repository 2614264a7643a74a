// The random program generator's elementwise steps (tests/random_graph.hpp):
// unary functions, binary operators, where and astype, each with the error
// bound of its result.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/random_graph_generator.hpp"

namespace ajtest {

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

}  // namespace ajtest

// Gradient checks shared by the autodiff tests: reverse mode against central
// differences in f64, forward mode against reverse mode.
//
// For f with outputs f_j and random cotangents u_j, the scalar
//     phi(x) = sum_j <u_j, f_j(x)>
// has gradient vjp(f, x, u). check_gradient compares every element of it with
// (phi(x + h e_k) - phi(x - h e_k)) / 2h, evaluated by running f on perturbed
// copies of the arguments (no autodiff involved), and checks
//     <u, jvp(f, x, v)> == <vjp(f, x, u), v>
// for random tangents v (the two modes are each other's transposes).
//
// Tolerances: with h = 1e-5 in f64 the truncation error is ~1e-10 |phi'''|
// and the rounding error ~eps |phi| / h ~ 2e-11 S, where S = sum_j <|u_j|,
// |f_j|> (the size of what cancels); an element passes when
//     |grad - fd| <= rtol * |fd| + atol * (1 + S)
// with rtol = atol = 1e-6 by default (a wrong rule is off by O(1)).
#pragma once

#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ajtest {

using Fn = std::function<std::vector<aj::Array>(const std::vector<aj::Array>&)>;

// An argument: f64 values in row-major order, made into a contiguous array,
// or (strided) into a view of caller memory with a reversed first axis and a
// step of 2 on the last (aj::borrow with negative and non-unit strides).
struct Arg {
  std::vector<double> values;
  aj::Shape shape;
  bool strided = false;
};

// Owns the memory of strided arguments for as long as arrays may read it.
class ArgMaker {
 public:
  aj::Array make(const Arg& a, const std::vector<double>& values) {
    if (!a.strided || a.shape.ndim() == 0 || a.shape.numel() == 0) {
      return aj::from_vector(values, a.shape);
    }
    const int r = a.shape.ndim();
    std::vector<std::int64_t> strides(static_cast<std::size_t>(r));
    std::int64_t acc = 1;
    for (int i = r - 1; i >= 0; --i) {
      const std::int64_t step = i == r - 1 ? 2 : 1;
      strides[static_cast<std::size_t>(i)] = acc * step;
      acc *= a.shape[i] * step;
    }
    std::vector<double>& buf = buffers_.emplace_back(static_cast<std::size_t>(acc), -99.0);
    strides[0] = -strides[0];  // first axis walked backwards
    const std::int64_t start = (a.shape[0] - 1) * -strides[0];
    for (std::int64_t k = 0; k < a.shape.numel(); ++k) {
      std::int64_t rem = k, off = start;
      for (int i = r - 1; i >= 0; --i) {
        off += (rem % a.shape[i]) * strides[static_cast<std::size_t>(i)];
        rem /= a.shape[i];
      }
      buf[static_cast<std::size_t>(off)] = values[static_cast<std::size_t>(k)];
    }
    return aj::borrow(buf.data() + start, a.shape, strides);
  }
  std::vector<aj::Array> make_all(const std::vector<Arg>& args) {
    std::vector<aj::Array> out;
    for (const Arg& a : args) out.push_back(make(a, a.values));
    return out;
  }

 private:
  std::deque<std::vector<double>> buffers_;
};

inline std::vector<double> normal_values(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

inline std::string show(const std::vector<double>& v) {
  std::ostringstream os;
  os.precision(10);
  os << "{";
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > 12) os << ", ...";
  os << "}";
  return os.str();
}

// phi(x) = sum_j <u_j, f_j(x)> and S = sum_j <|u_j|, |f_j(x)|>, f run plainly.
inline double phi(const Fn& f, const std::vector<aj::Array>& x, const std::vector<std::vector<double>>& u,
                  double* scale = nullptr) {
  std::vector<aj::Array> outs = f(x);
  aj::eval(outs);
  double s = 0, m = 0;
  for (std::size_t j = 0; j < outs.size(); ++j) {
    const std::vector<double> v = outs[j].to_vector<double>();
    for (std::size_t k = 0; k < v.size(); ++k) {
      s += u[j][k] * v[k];
      m += std::fabs(u[j][k] * v[k]);
    }
  }
  if (scale) *scale = m;
  return s;
}

// The check described at the top. `what` names the case in failure messages.
inline void check_gradient(const std::string& what, const Fn& f, const std::vector<Arg>& args,
                           std::uint64_t seed, double rtol = 1e-6, double atol = 1e-6) {
  INFO(what);
  std::mt19937_64 rng(seed);
  ArgMaker maker;
  const std::vector<aj::Array> x = maker.make_all(args);
  // The outputs' shapes (f traced once without evaluation) and cotangents.
  std::vector<aj::Array> plain = f(x);
  std::vector<std::vector<double>> u;
  std::vector<aj::Array> cts;
  for (const aj::Array& o : plain) {
    u.push_back(normal_values(static_cast<std::size_t>(o.size()), rng));
    cts.push_back(aj::from_vector(u.back(), o.shape()).astype(o.dtype()));
  }
  auto [outs, grads] = aj::vjp(f, x, cts);
  REQUIRE(outs.size() == plain.size());
  REQUIRE(grads.size() == args.size());
  {
    std::vector<aj::Array> all = outs;
    all.insert(all.end(), grads.begin(), grads.end());
    aj::eval(all);
  }
  // The outputs vjp returns are f's values.
  aj::eval(plain);
  for (std::size_t j = 0; j < outs.size(); ++j) {
    INFO("output " << j);
    const auto a = outs[j].to_vector<double>(), b = plain[j].to_vector<double>();
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (!(std::fabs(a[k] - b[k]) <= 1e-12 * (1 + std::fabs(b[k]))) && !(std::isnan(a[k]) && std::isnan(b[k]))) {
        FAIL_CHECK("vjp's output " << j << "[" << k << "] is " << a[k] << ", f gives " << b[k]);
        break;
      }
    }
  }
  double scale = 0;
  phi(f, x, u, &scale);
  const double h = 1e-5;
  std::vector<std::vector<double>> g;
  for (std::size_t i = 0; i < args.size(); ++i) {
    INFO("argument " << i << " " << args[i].shape << (args[i].strided ? " (strided)" : ""));
    g.push_back(grads[i].to_vector<double>());
    CHECK(grads[i].shape() == args[i].shape);
    CHECK(grads[i].dtype() == aj::DType::f64);
    REQUIRE(g[i].size() == args[i].values.size());
    for (std::size_t k = 0; k < args[i].values.size(); ++k) {
      std::vector<aj::Array> xp = x, xm = x;
      std::vector<double> vp = args[i].values, vm = args[i].values;
      vp[k] += h;
      vm[k] -= h;
      xp[i] = maker.make(args[i], vp);
      xm[i] = maker.make(args[i], vm);
      const double fd = (phi(f, xp, u) - phi(f, xm, u)) / (2 * h);
      if (!(std::fabs(g[i][k] - fd) <= rtol * std::fabs(fd) + atol * (1 + scale))) {
        FAIL_CHECK("gradient element " << k << " is " << g[i][k] << ", central difference "
                                       << fd << "; x = " << show(args[i].values)
                                       << ", gradient " << show(g[i]));
        break;
      }
    }
  }
  // Forward mode: <u, J v> == <J^T u, v>.
  std::vector<std::vector<double>> v;
  std::vector<aj::Array> tangents;
  for (const Arg& a : args) {
    v.push_back(normal_values(a.values.size(), rng));
    tangents.push_back(aj::from_vector(v.back(), a.shape));
  }
  auto [outs2, jv] = aj::jvp(f, x, tangents);
  aj::eval(jv);
  double lhs = 0, rhs = 0, mag = 0;
  for (std::size_t j = 0; j < jv.size(); ++j) {
    CHECK(jv[j].shape() == outs2[j].shape());
    const auto t = jv[j].to_vector<double>();
    for (std::size_t k = 0; k < t.size(); ++k) lhs += u[j][k] * t[k], mag += std::fabs(u[j][k] * t[k]);
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    for (std::size_t k = 0; k < v[i].size(); ++k) rhs += g[i][k] * v[i][k], mag += std::fabs(g[i][k] * v[i][k]);
  }
  if (!(std::fabs(lhs - rhs) <= 1e-10 * (1 + mag))) {
    FAIL_CHECK("<u, jvp v> = " << lhs << " but <vjp u, v> = " << rhs);
  }
}

// ---- random arguments -----------------------------------------------------------

using Dims = std::vector<std::int64_t>;

// Shapes for the checks: ranks 0-3, extents mostly 1-4, sometimes 0; at most
// 24 elements (every element is differentiated by two evaluations).
inline Dims random_dims(std::mt19937_64& rng, int min_rank = 0, int max_rank = 3, bool allow_zero = true) {
  std::uniform_int_distribution<int> rank(min_rank, max_rank), u(0, 99);
  Dims d;
  const int r = rank(rng);
  for (int i = 0; i < r; ++i) {
    const int x = u(rng);
    d.push_back(x < 6 && allow_zero ? 0 : x < 30 ? 1 : 2 + x % 3);
  }
  auto numel = [&] {
    std::int64_t n = 1;
    for (auto e : d) n *= e;
    return n;
  };
  while (numel() > 24) {
    for (auto& e : d) e = std::max<std::int64_t>(1, e / 2);
  }
  return d;
}

// A shape that broadcasts against d: some extents 1, some leading axes gone.
inline Dims broadcastable(const Dims& d, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> u(0, 9);
  Dims out;
  const std::size_t drop = u(rng) < 3 ? static_cast<std::size_t>(u(rng)) % (d.size() + 1) : 0;
  for (std::size_t i = drop; i < d.size(); ++i) out.push_back(u(rng) < 3 ? 1 : d[i]);
  return out;
}

inline std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto e : d) n *= e;
  return n;
}

// Values in [lo, hi], at least `gap` away from 0 (abs, division).
inline std::vector<double> values(std::int64_t n, std::mt19937_64& rng, double lo, double hi, double gap = 0.05) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v;
  while (static_cast<std::int64_t>(v.size()) < n) {
    const double x = d(rng);
    if (std::fabs(x) >= gap) v.push_back(x);
  }
  return v;
}

inline Arg arg(const Dims& d, std::mt19937_64& rng, double lo = -2, double hi = 2, bool strided = false) {
  return Arg{values(numel(d), rng, lo, hi), aj::Shape(d), strided};
}

inline std::string str(const Dims& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace ajtest

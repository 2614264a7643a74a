// The random program generator's steps that work along axes
// (tests/random_graph.hpp): reductions, scans and sorts, views, matmul,
// concatenation and the indexing ops, each with the error bound of its result.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/random_graph_generator.hpp"

namespace ajtest {

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

// Scans, sorting and indexing. Scans add in order on every backend, so exact inputs give
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
  // Not in compile mode: compiled programs keep such a concatenate (extents
  // change), eager calls merge it, and a float reduction of the two may differ
  // in its last bits (its order follows its input's layout; seen: seed
  // 201991247 of the long compile tier with this step in).
  if (coin(0.3) && !compiling()) return step_concat_pieces();
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
  if (compiling() && std::any_of(parts.begin(), parts.end(), [](const Val& p) { return !p.input; }))
    ++used_[op + " of computed pieces"];
  place(out, b, op + "({" + names + "}, " + std::to_string(axis) + ")", op, -1);
}

// A concatenate of one expression (a negation) over slices of one value
// that continue each other along the axis, forwards or backwards: simplify
// makes it the expression over the whole slice. One time in three a piece
// breaks the run (abs instead, or a slice one shorter: a gap), and it stays
// a concatenate. Negation and abs are exact, so the bound is the value's.
inline void RandomGraph::step_concat_pieces() {
  const int k = pick([](const Val& v) {
    if (v.a.ndim() == 0 || v.dtype() == DType::bool_) return false;
    const Dims e = v.dims();
    return std::any_of(e.begin(), e.end(), [](std::int64_t x) { return x >= 2; });
  });
  if (k < 0) return;
  const Val a = pool_[static_cast<std::size_t>(k)];
  const Dims d = a.dims();
  std::vector<int> axes;
  for (int q = 0; q < static_cast<int>(d.size()); ++q) {
    if (d[static_cast<std::size_t>(q)] >= 2) axes.push_back(q);
  }
  const int ax = axes[static_cast<std::size_t>(uni(0, static_cast<int>(axes.size()) - 1))];
  const int n = static_cast<int>(d[static_cast<std::size_t>(ax)]);
  const int pieces = uni(2, std::min(4, n));
  std::vector<int> cuts{0, n};
  while (static_cast<int>(cuts.size()) < pieces + 1) {
    const int c = uni(1, n - 1);
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  const bool reversed = coin(0.3);
  const int broken = coin(0.33) ? uni(0, pieces - 1) : -1;
  std::vector<Array> arrays;
  std::string names;
  for (int i = 0; i < pieces; ++i) {
    int s = cuts[static_cast<std::size_t>(i)];
    const int e = cuts[static_cast<std::size_t>(i) + 1];
    const bool gap = i == broken && e - s >= 2 && coin(0.5);
    if (gap) ++s;
    Array sl;
    std::string sn;
    if (reversed) {  // positions n-1-s down to n-e
      const std::optional<std::int64_t> stop = e == n ? std::nullopt : std::optional<std::int64_t>(n - 1 - e);
      sl = aj::slice(a.a, ax, n - 1 - s, stop, -1);
      sn = "slice(" + a.name + ", " + std::to_string(ax) + ", " + std::to_string(n - 1 - s) + ", " +
           (stop ? std::to_string(*stop) : std::string("end")) + ", -1)";
    } else {
      sl = aj::slice(a.a, ax, s, e);
      sn = "slice(" + a.name + ", " + std::to_string(ax) + ", " + std::to_string(s) + ", " + std::to_string(e) + ")";
    }
    const bool other_op = i == broken && !gap;
    arrays.push_back(other_op ? aj::abs(sl) : -sl);
    names += (names.empty() ? "" : ", ") + std::string(other_op ? "abs(" : "-(") + sn + ")";
  }
  Array out = aj::concatenate(arrays, ax);
  place(out, a.b, "concatenate({" + names + "}, " + std::to_string(ax) + ")", "concatenate of continuing slices", -1);
}

// A lazy loop (issue 33): 2 to 20 steps of 3-point smoothing along an axis,
// never evaluated in between, written with one boundary idiom: the interior
// set by slice_update, the interior padded back (edge or a constant 0), rolls
// of both neighbours, or rolls with the ends kept by a mask from arange. A
// step is (a + b) * 0.5 of values within the bound's magnitude: the
// magnitude holds, and each step adds at most one rounding of it.
inline void RandomGraph::step_loop() {
  const int k = pick([](const Val& v) {
    if (!v.is_float() || v.b.nonfinite || !(v.b.mag <= kTameMag)) return false;
    const Dims e = v.dims();
    return std::any_of(e.begin(), e.end(), [](std::int64_t x) { return x >= 3; });
  });
  if (k < 0) return;
  const Val x = pool_[static_cast<std::size_t>(k)];
  const Dims d = x.dims();
  const int r = static_cast<int>(d.size());
  std::vector<int> axes;
  for (int q = 0; q < r; ++q) {
    if (d[static_cast<std::size_t>(q)] >= 3) axes.push_back(q);
  }
  const int ax = axes[static_cast<std::size_t>(uni(0, static_cast<int>(axes.size()) - 1))];
  const std::int64_t n = d[static_cast<std::size_t>(ax)];
  const int steps = uni(2, 20);
  const int idiom = uni(0, 4);
  static const char* names[] = {"slice_update", "pad edge", "pad constant", "roll", "roll and mask"};
  std::vector<aj::Slice> interior(static_cast<std::size_t>(r));
  interior[static_cast<std::size_t>(ax)] = aj::Slice(1, n - 1);
  std::vector<aj::PadWidth> widths(static_cast<std::size_t>(r), aj::PadWidth{0, 0});
  widths[static_cast<std::size_t>(ax)] = aj::PadWidth{1, 1};
  Dims at(static_cast<std::size_t>(r), 1);
  at[static_cast<std::size_t>(ax)] = n;
  const Array pos = aj::arange(n).reshape(Shape(at));
  // The ends, as a user might write them (each comparison is a run of the
  // host JIT's split loop: jit/llvm/codegen.cpp, iota_runs).
  const int form = idiom == 4 ? uni(0, 2) : 0;
  const Array ends = form == 0   ? (pos == 0) || (pos == n - 1)
                     : form == 1 ? (pos < 1) || (pos >= n - 1)
                                 : (std::int64_t{0} >= pos) || (n - 1 <= pos);
  Array v = x.a;
  Bound b = x.b;
  const double eps = eps_of(x.dtype());
  for (int t = 0; t < steps; ++t) {
    const Array mean_inside = (aj::slice(v, ax, 0, n - 2) + aj::slice(v, ax, 2, n)) * 0.5;
    const Array mean_rolled = (aj::roll(v, 1, ax) + aj::roll(v, -1, ax)) * 0.5;
    switch (idiom) {
      case 0: v = aj::slice_update(v, interior, mean_inside); break;
      case 1: v = aj::pad(mean_inside, widths, aj::PadMode::edge); break;
      case 2: v = aj::pad(mean_inside, widths, aj::PadMode::constant, aj::Scalar(0.0)); break;
      case 3: v = mean_rolled; break;
      default: v = aj::where(ends, v, mean_rolled); break;
    }
    b.abs_err += 2 * eps * (b.mag + b.err());
  }
  static const char* ends_forms[] = {"", " (ends: pos == 0 || pos == n - 1)", " (ends: pos < 1 || pos >= n - 1)",
                                     " (ends: 0 >= pos || n - 1 <= pos)"};
  place(v, b,
        std::string("loop(") + x.name + ", " + std::to_string(steps) + " steps of " + names[idiom] + " along axis " +
            std::to_string(ax) + ends_forms[idiom == 4 ? form + 1 : 0] + ")",
        std::string("loop of ") + names[idiom], -1);
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

}  // namespace ajtest

// Indexing and data movement (arrayjit/indexing.hpp): every op x every dtype
// over random shapes (ranks 0-4, size-0 and size-1 axes, negative axes,
// out-of-range and negative indices) and input layouts (contiguous,
// transposed, strided, broadcast, computed by a fused producer), each result
// compared with values computed here by plain loops, with the reference
// interpreter, and with the kernel interpreter (the JIT switched off). Then
// fusion (gathers and pads inside one kernel), scatter in place, and the
// AJ_DEBUG checks.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using aj::Slice;
using Dims = std::vector<std::int64_t>;

constexpr DType kDTypes[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64};

// Host values of an array, row-major, as doubles (every test value is exact
// in double: small integers, quarters, NaN, -0.0).
struct Host {
  Dims shape;
  std::vector<double> v;
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
  double at(const Dims& i) const {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) k = k * shape[d] + i[d];
    return v[static_cast<std::size_t>(k)];
  }
};

Dims unravel(std::int64_t k, const Dims& s) {
  Dims at(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    at[d] = s[d] ? k % s[d] : 0;
    k = s[d] ? k / s[d] : 0;
  }
  return at;
}

std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto e : d) n *= e;
  return n;
}

// A value of dtype t drawn from small integers and quarters (with NaN and
// -0.0 for floats), exact after conversion to t.
double draw(DType t, std::mt19937_64& rng) {
  const int r = static_cast<int>(rng() % 40);
  if (t == DType::bool_) return r % 2;
  if (aj::is_float(t)) {
    if (r == 0) return std::nan("");
    if (r == 1) return -0.0;
    return (r - 20) * 0.25;
  }
  return r - 20;
}

struct Input {
  Array a;
  Host h;
};

// An array of dtype t and shape s in one of several layouts (kind):
// 0 contiguous, 1 transposed storage, 2 strided (every other element of a
// larger array, reversed), 3 computed by a producer that fuses (maximum(x, x),
// exact for every dtype), 4 broadcast along a random axis.
Input make_input(DType t, const Dims& s, std::mt19937_64& rng, int kind) {
  Host h{s, {}};
  const std::int64_t n = numel(s);
  int bcast_axis = -1;
  if (kind == 4) {
    std::vector<int> axes;
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (s[d] > 1) axes.push_back(static_cast<int>(d));
    }
    if (axes.empty()) kind = 0;
    else bcast_axis = axes[rng() % axes.size()];
  }
  for (std::int64_t k = 0; k < n; ++k) {
    const Dims at = unravel(k, s);
    if (bcast_axis >= 0 && at[static_cast<std::size_t>(bcast_axis)] > 0) {
      Dims first = at;
      first[static_cast<std::size_t>(bcast_axis)] = 0;
      h.v.push_back(h.at(first));
    } else {
      h.v.push_back(draw(t, rng));
    }
  }
  auto from = [&](const std::vector<double>& v, const Dims& shape) {
    return aj::from_vector<double>(v, Shape(shape)).astype(t).eval();
  };
  Array a;
  switch (kind) {
    case 1: {  // the values stored transposed, viewed back
      Dims rs(s.rbegin(), s.rend());
      std::vector<double> tv(static_cast<std::size_t>(n));
      for (std::int64_t k = 0; k < n; ++k) {
        const Dims at = unravel(k, rs);
        tv[static_cast<std::size_t>(k)] = h.at(Dims(at.rbegin(), at.rend()));
      }
      a = from(tv, rs).T();
      break;
    }
    case 2: {  // every other element along the last axis, walked backwards
      if (s.empty()) {
        a = from(h.v, s);
        break;
      }
      Dims big = s;
      big.back() = 2 * s.back() + 1;
      std::vector<double> bv(static_cast<std::size_t>(numel(big)), 7);
      for (std::int64_t k = 0; k < n; ++k) {
        Dims at = unravel(k, s);
        at.back() = 2 * (s.back() - 1 - at.back()) + 1;
        std::int64_t f = 0;
        for (std::size_t d = 0; d < big.size(); ++d) f = f * big[d] + at[d];
        bv[static_cast<std::size_t>(f)] = h.v[static_cast<std::size_t>(k)];
      }
      a = aj::slice(aj::slice(from(bv, big), -1, 1, std::nullopt, 2), -1, std::nullopt, std::nullopt, -1);
      break;
    }
    case 3: a = aj::maximum(from(h.v, s), from(h.v, s)); break;
    case 4: {
      Dims one = s;
      one[static_cast<std::size_t>(bcast_axis)] = 1;
      std::vector<double> ov;
      for (std::int64_t k = 0; k < numel(one); ++k) ov.push_back(h.at(unravel(k, one)));
      a = aj::broadcast_to(from(ov, one), Shape(s));
      break;
    }
    default: a = from(h.v, s);
  }
  REQUIRE(a.shape() == Shape(s));
  return {a, h};
}

// Index arrays: i32 or i64, values in [-n - 2, n + 2) (out of range both
// ways, clamped by gathers and dropped by scatters), in a random layout.
Input make_indices(const Dims& s, std::int64_t n, std::mt19937_64& rng, int kind) {
  const DType t = rng() % 2 ? DType::i32 : DType::i64;
  Input in = make_input(DType::i64, s, rng, kind == 4 ? 4 : kind % 4);
  for (auto& x : in.h.v) x = static_cast<double>(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * n + 4)) - n - 2);
  // Rebuild with the new values in the same layout kind.
  std::vector<double> v = in.h.v;
  Array base = aj::from_vector<double>(v, Shape(s)).astype(t).eval();
  if (kind % 5 == 1) base = (base.T().astype(t).eval()).T();  // a transposed copy, viewed back (same values)
  if (kind % 5 == 3) base = aj::maximum(base, base);
  return {base, in.h};
}

Dims random_shape(std::mt19937_64& rng, int max_rank = 4) {
  const int r = static_cast<int>(rng() % static_cast<std::uint64_t>(max_rank + 1));
  Dims d;
  for (int i = 0; i < r; ++i) {
    const int u = static_cast<int>(rng() % 20);
    d.push_back(u == 0 ? 0 : u < 5 ? 1 : 2 + static_cast<std::int64_t>(rng() % 4));
  }
  return d;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

std::vector<double> values(const Array& a) { return a.astype(DType::f64).to_vector<double>(); }

// `make` traced and evaluated three ways (optimized with the JIT, with the
// kernel interpreter, and by the reference interpreter), each compared with
// `want` element by element, signed zeros and NaN included.
void check_three_ways(const std::string& what, const std::function<Array()>& make, const Host& want, DType dtype) {
  CAPTURE(what);
  std::vector<std::pair<const char*, Array>> got;
  got.push_back({"jit", make()});
  {
    aj::jit::set_enabled(false);
    got.push_back({"kernel interpreter", make()});
    got.back().second.eval();
    aj::jit::set_enabled(true);
  }
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    got.push_back({"reference", make()});
    got.back().second.eval();
  }
  for (auto& [name, a] : got) {
    CAPTURE(name);
    REQUIRE(a.dtype() == dtype);
    REQUIRE(a.shape() == Shape(want.shape));
    const std::vector<double> v = values(a);
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (!same_value(v[k], want.v[k])) {
        FAIL_CHECK("element " << k << ": got " << v[k] << ", want " << want.v[k]);
        break;
      }
    }
  }
}

std::int64_t clamp_index(std::int64_t i, std::int64_t n) {
  if (i < 0) i += n;
  return i < 0 ? 0 : i >= n ? n - 1 : i;
}

}  // namespace

TEST_SUITE("indexing") {

TEST_CASE("take: every dtype, random shapes, axes, index shapes and layouts, out-of-range clamped") {
  std::mt19937_64 rng(1);
  int checked = 0;
  for (int round = 0; round < 60; ++round) {
    for (DType t : kDTypes) {
      const Dims s = random_shape(rng);
      const int nd = static_cast<int>(s.size());
      std::optional<int> axis;
      if (nd > 0 && rng() % 5) axis = static_cast<int>(rng() % static_cast<std::uint64_t>(nd)) - (rng() % 2 ? nd : 0);
      const std::int64_t n = axis ? s[static_cast<std::size_t>(*axis < 0 ? *axis + nd : *axis)] : numel(s);
      const Dims is = random_shape(rng, 2);
      if (n == 0 && numel(is) > 0) continue;  // an error (checked in test_bad_inputs.cpp)
      Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
      Input ix = make_indices(is, std::max<std::int64_t>(n, 1), rng, static_cast<int>(rng() % 5));
      // By hand: pre + I + post.
      const int ax = axis ? (*axis < 0 ? *axis + nd : *axis) : 0;
      const Dims src = axis ? s : Dims{numel(s)};
      Dims out(src.begin(), src.begin() + ax);
      out.insert(out.end(), is.begin(), is.end());
      out.insert(out.end(), src.begin() + ax + 1, src.end());
      Host want{out, {}};
      Host flat{src, a.h.v};
      for (std::int64_t k = 0; k < numel(out); ++k) {
        const Dims o = unravel(k, out);
        Dims ii(o.begin() + ax, o.begin() + ax + static_cast<std::ptrdiff_t>(is.size()));
        Dims at(o.begin(), o.begin() + ax);
        at.push_back(clamp_index(static_cast<std::int64_t>(ix.h.at(ii)), n));
        at.insert(at.end(), o.begin() + ax + static_cast<std::ptrdiff_t>(is.size()), o.end());
        want.v.push_back(flat.at(at));
      }
      check_three_ways("take " + std::string(aj::dtype_name(t)) + Shape(s).str() + " axis " +
                           (axis ? std::to_string(*axis) : "none") + " indices " + Shape(is).str(),
                       [&] { return aj::take(a.a, ix.a, axis); }, want, t);
      ++checked;
    }
  }
  CHECK(checked > 200);
}

TEST_CASE("take_along_axis: every dtype, indices broadcast against the array off the axis") {
  std::mt19937_64 rng(2);
  int checked = 0;
  for (int round = 0; round < 60; ++round) {
    for (DType t : kDTypes) {
      Dims s = random_shape(rng);
      if (s.empty()) s.push_back(3);
      const int nd = static_cast<int>(s.size());
      const int ax = static_cast<int>(rng() % static_cast<std::uint64_t>(nd));
      Dims is = s;
      is[static_cast<std::size_t>(ax)] = static_cast<std::int64_t>(rng() % 4);
      for (int d = 0; d < nd; ++d) {  // broadcasting both ways off the axis
        if (d == ax) continue;
        if (rng() % 4 == 0) is[static_cast<std::size_t>(d)] = 1;
        else if (rng() % 6 == 0 && s[static_cast<std::size_t>(d)] == 1) is[static_cast<std::size_t>(d)] = 3;
      }
      Dims out(static_cast<std::size_t>(nd));
      for (int d = 0; d < nd; ++d) {
        const auto du = static_cast<std::size_t>(d);
        out[du] = d == ax ? is[du] : s[du] == 1 ? is[du] : s[du];
      }
      const std::int64_t n = s[static_cast<std::size_t>(ax)];
      if (n == 0 && numel(out) > 0) continue;
      Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
      Input ix = make_indices(is, std::max<std::int64_t>(n, 1), rng, static_cast<int>(rng() % 5));
      Host want{out, {}};
      for (std::int64_t k = 0; k < numel(out); ++k) {
        const Dims o = unravel(k, out);
        Dims ai = o, ii = o;
        for (int d = 0; d < nd; ++d) {
          const auto du = static_cast<std::size_t>(d);
          if (s[du] == 1) ai[du] = 0;
          if (is[du] == 1) ii[du] = 0;
        }
        ai[static_cast<std::size_t>(ax)] = clamp_index(static_cast<std::int64_t>(ix.h.at(ii)), n);
        want.v.push_back(a.h.at(ai));
      }
      const int axis_arg = rng() % 2 ? ax : ax - nd;
      check_three_ways("take_along_axis " + std::string(aj::dtype_name(t)) + Shape(s).str() + " axis " +
                           std::to_string(axis_arg) + " indices " + Shape(is).str(),
                       [&] { return aj::take_along_axis(a.a, ix.a, axis_arg); }, want, t);
      ++checked;
    }
  }
  CHECK(checked > 200);
}

TEST_CASE("scatter_add and scatter: duplicates accumulate / the last wins, out-of-range updates are dropped") {
  std::mt19937_64 rng(3);
  int checked = 0;
  for (int round = 0; round < 50; ++round) {
    for (DType t : kDTypes) {
      for (bool add : {true, false}) {
        Dims s = random_shape(rng);
        if (s.empty()) s.push_back(4);
        const int nd = static_cast<int>(s.size());
        const int ax = static_cast<int>(rng() % static_cast<std::uint64_t>(nd));
        const std::int64_t n = s[static_cast<std::size_t>(ax)];
        const Dims is = random_shape(rng, 2);
        Dims us(s.begin(), s.begin() + ax);
        us.insert(us.end(), is.begin(), is.end());
        us.insert(us.end(), s.begin() + ax + 1, s.end());
        Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
        Input ix = make_indices(is, std::max<std::int64_t>(n, 2), rng, static_cast<int>(rng() % 5));
        // Updates: a full array, a broadcast one (one axis of extent 1), or a scalar.
        const int style = static_cast<int>(rng() % 3);
        Dims given = us;
        if (style == 1 && !given.empty()) given[rng() % given.size()] = 1;
        Input u = make_input(t, style == 2 ? Dims{} : given, rng, static_cast<int>(rng() % 5));
        Host want = a.h;
        for (std::int64_t k = 0; k < numel(us); ++k) {
          const Dims o = unravel(k, us);
          Dims ii(o.begin() + ax, o.begin() + ax + static_cast<std::ptrdiff_t>(is.size()));
          const auto i = static_cast<std::int64_t>(ix.h.at(ii));
          if (i < -n || i >= n) continue;
          Dims at(o.begin(), o.begin() + ax);
          at.push_back(i < 0 ? i + n : i);
          at.insert(at.end(), o.begin() + ax + static_cast<std::ptrdiff_t>(is.size()), o.end());
          Dims ui = o;
          if (style == 2) ui.clear();
          for (std::size_t d = 0; d < ui.size(); ++d) {
            if (given[d] == 1) ui[d] = 0;
          }
          const double uv = u.h.at(ui);
          std::int64_t f = 0;
          for (std::size_t d = 0; d < s.size(); ++d) f = f * s[d] + at[d];
          double& w = want.v[static_cast<std::size_t>(f)];
          if (!add) w = uv;
          else if (t == DType::bool_) w = (w != 0 || uv != 0) ? 1 : 0;
          else w = w + uv;
        }
        const int axis_arg = rng() % 2 ? ax : ax - nd;
        check_three_ways(std::string(add ? "scatter_add " : "scatter ") + aj::dtype_name(t) + Shape(s).str() +
                             " axis " + std::to_string(axis_arg) + " indices " + Shape(is).str(),
                         [&] {
                           return add ? aj::scatter_add(a.a, ix.a, u.a, axis_arg) : aj::scatter(a.a, ix.a, u.a, axis_arg);
                         },
                         want, t);
        ++checked;
      }
    }
  }
  CHECK(checked > 400);
}

TEST_CASE("scatter_add and scatter of rows into a fill (the embedding gradient's one pass): rows reached, reached again and never") {
  // scatter_add(full([V, D], f), ids[N], u[N, D], 0): the host writes each
  // row where an index first reaches it as f (+) the row, without filling
  // it first (backends/cpu/host_scatter.cpp, rows_into_fill), and fills the
  // rows no index reached. Ids out of range both ways, duplicates, signed
  // zeros and NaN (0 + -0 is +0), rows read at a stride, both index dtypes.
  std::mt19937_64 rng(11);
  int checked = 0, reached_twice = 0, never = 0;
  for (int round = 0; round < 40; ++round) {
    for (DType t : kDTypes) {
      for (bool add : {true, false}) {
        const std::int64_t V = 1 + static_cast<std::int64_t>(rng() % 12), D = 1 + static_cast<std::int64_t>(rng() % 9),
                           N = static_cast<std::int64_t>(rng() % 20);
        const double f = rng() % 3 ? 0.0 : draw(t, rng);
        const bool wide = rng() % 2;  // updates as a slice of [N, D + 2]: rows at a stride of D + 2
        Host u{{N, D}, {}};
        std::vector<double> wide_v;
        for (std::int64_t r = 0; r < N; ++r) {
          for (std::int64_t e = 0; e < D + (wide ? 2 : 0); ++e) {
            const double x = draw(t, rng);
            wide_v.push_back(x);
            if (e < D) u.v.push_back(x);
          }
        }
        Array ua = wide ? aj::slice(aj::from_vector<double>(wide_v, Shape{N, D + 2}).astype(t).eval(), 1, 0, D)
                        : aj::from_vector<double>(u.v, Shape{N, D}).astype(t).eval();
        std::vector<std::int64_t> ids(static_cast<std::size_t>(N));
        for (auto& i : ids) i = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * V + 4)) - V - 2;
        const DType it = rng() % 2 ? DType::i32 : DType::i64;
        const Array ix = aj::from_vector<std::int64_t>(ids, Shape{N}).astype(it).eval();
        Host want{{V, D}, std::vector<double>(static_cast<std::size_t>(V * D), f)};
        std::vector<int> hits(static_cast<std::size_t>(V), 0);
        for (std::int64_t r = 0; r < N; ++r) {
          const std::int64_t i = ids[static_cast<std::size_t>(r)];
          if (i < -V || i >= V) continue;
          const std::int64_t at = i < 0 ? i + V : i;
          ++hits[static_cast<std::size_t>(at)];
          for (std::int64_t e = 0; e < D; ++e) {
            double& w = want.v[static_cast<std::size_t>(at * D + e)];
            const double x = u.v[static_cast<std::size_t>(r * D + e)];
            if (!add) w = x;
            else if (t == DType::bool_) w = (w != 0 || x != 0) ? 1 : 0;
            else w = w + x;
          }
        }
        for (int h : hits) reached_twice += h > 1, never += h == 0;
        const aj::Scalar fill = t == DType::bool_ ? aj::Scalar(f != 0)
                                : aj::is_float(t) ? aj::Scalar(f)
                                                  : aj::Scalar(static_cast<std::int64_t>(f));
        check_three_ways(std::string(add ? "scatter_add " : "scatter ") + aj::dtype_name(t) + " into full([" +
                             std::to_string(V) + ", " + std::to_string(D) + "], " + std::to_string(f) + "), " +
                             std::to_string(N) + " rows" + (wide ? " at a stride" : "") + ", " + aj::dtype_name(it) +
                             " ids",
                         [&] {
                           const Array base = aj::full(Shape{V, D}, fill, t);
                           return add ? aj::scatter_add(base, ix, ua, 0) : aj::scatter(base, ix, ua, 0);
                         },
                         want, t);
        ++checked;
      }
    }
  }
  CHECK(checked == 400);
  CHECK(reached_twice > 100);  // the cases the pass must add to a row it wrote
  CHECK(never > 100);          // and fill after
}

TEST_CASE("scatter_add_along_axis and put_along_axis: the transposes of take_along_axis") {
  std::mt19937_64 rng(4);
  for (int round = 0; round < 40; ++round) {
    for (DType t : kDTypes) {
      for (bool add : {true, false}) {
        Dims s = random_shape(rng);
        if (s.empty()) s.push_back(3);
        const int nd = static_cast<int>(s.size());
        const int ax = static_cast<int>(rng() % static_cast<std::uint64_t>(nd));
        const std::int64_t n = s[static_cast<std::size_t>(ax)];
        Dims us = s;
        us[static_cast<std::size_t>(ax)] = static_cast<std::int64_t>(rng() % 5);
        Dims is = us;
        for (int d = 0; d < nd; ++d) {
          if (d != ax && rng() % 3 == 0) is[static_cast<std::size_t>(d)] = 1;
        }
        Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
        Input ix = make_indices(is, std::max<std::int64_t>(n, 2), rng, static_cast<int>(rng() % 5));
        Input u = make_input(t, us, rng, static_cast<int>(rng() % 5));
        Host want = a.h;
        for (std::int64_t k = 0; k < numel(us); ++k) {
          Dims o = unravel(k, us), ii = o;
          for (int d = 0; d < nd; ++d) {
            if (is[static_cast<std::size_t>(d)] == 1) ii[static_cast<std::size_t>(d)] = 0;
          }
          const auto i = static_cast<std::int64_t>(ix.h.at(ii));
          if (i < -n || i >= n) continue;
          Dims at = o;
          at[static_cast<std::size_t>(ax)] = i < 0 ? i + n : i;
          std::int64_t f = 0;
          for (std::size_t d = 0; d < s.size(); ++d) f = f * s[d] + at[d];
          double& w = want.v[static_cast<std::size_t>(f)];
          const double uv = u.h.at(o);
          if (!add) w = uv;
          else if (t == DType::bool_) w = (w != 0 || uv != 0) ? 1 : 0;
          else w = w + uv;
        }
        check_three_ways(std::string(add ? "scatter_add_along_axis " : "put_along_axis ") + aj::dtype_name(t) +
                             Shape(s).str() + " axis " + std::to_string(ax) + " indices " + Shape(is).str(),
                         [&] {
                           return add ? aj::scatter_add_along_axis(a.a, ix.a, u.a, ax)
                                      : aj::put_along_axis(a.a, ix.a, u.a, ax);
                         },
                         want, t);
      }
    }
  }
}

TEST_CASE("slice_update and slice_add: random slices (negative steps too), broadcast and scalar values") {
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int round = 0; round < 60; ++round) {
    for (DType t : kDTypes) {
      for (bool add : {false, true}) {
        const Dims s = random_shape(rng);
        const int nd = static_cast<int>(s.size());
        std::vector<Slice> slices;
        std::vector<std::vector<std::int64_t>> pos;  // positions each axis's slice covers
        for (int d = 0; d < nd; ++d) {
          const std::int64_t n = s[static_cast<std::size_t>(d)];
          if (rng() % 4 == 0 && static_cast<int>(slices.size()) == d) {
            std::vector<std::int64_t> all;
            for (std::int64_t i = 0; i < n; ++i) all.push_back(i);
            pos.push_back(all);
            if (rng() % 2) slices.push_back(Slice());
            continue;
          }
          while (static_cast<int>(slices.size()) < d) slices.push_back(Slice());  // keep them aligned
          std::int64_t step = static_cast<std::int64_t>(rng() % 3) + 1;
          if (rng() % 3 == 0) step = -step;
          std::optional<std::int64_t> start, stop;
          std::vector<std::int64_t> p;
          if (step > 0) {
            const std::int64_t a0 = n ? static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n + 1)) : 0;
            const std::int64_t b0 = n ? static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n + 1)) : 0;
            start = rng() % 2 && a0 < n ? a0 - n : a0;
            stop = rng() % 3 == 0 ? std::optional<std::int64_t>() : std::optional<std::int64_t>(b0);
            for (std::int64_t i = a0; i < stop.value_or(n); i += step) p.push_back(i);
          } else if (n > 0) {
            const std::int64_t a0 = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
            start = a0;
            const bool to_end = rng() % 2;
            const std::int64_t b0 = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(n));
            if (!to_end) stop = b0;
            for (std::int64_t i = a0; to_end ? i >= 0 : i > b0; i += step) p.push_back(i);
          } else {
            step = 1;
          }
          slices.push_back(Slice(start, stop, step));
          pos.push_back(p);
        }
        Dims vs;
        for (auto& p : pos) vs.push_back(static_cast<std::int64_t>(p.size()));
        Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
        const int style = static_cast<int>(rng() % 3);
        Dims given = vs;
        if (style == 1 && !given.empty()) given[rng() % given.size()] = 1;
        Input v = make_input(t, style == 2 ? Dims{} : given, rng, static_cast<int>(rng() % 5));
        Host want = a.h;
        for (std::int64_t k = 0; k < numel(vs); ++k) {
          Dims o = unravel(k, vs), at(o.size()), vi = style == 2 ? Dims{} : o;
          for (std::size_t d = 0; d < o.size(); ++d) {
            at[d] = pos[d][static_cast<std::size_t>(o[d])];
            if (style != 2 && given[d] == 1) vi[d] = 0;
          }
          std::int64_t f = 0;
          for (std::size_t d = 0; d < s.size(); ++d) f = f * s[d] + at[d];
          double& w = want.v[static_cast<std::size_t>(f)];
          const double x = v.h.at(vi);
          if (!add) w = x;
          else if (t == DType::bool_) w = (w != 0 || x != 0) ? 1 : 0;
          else w = w + x;
        }
        check_three_ways(std::string(add ? "slice_add " : "slice_update ") + aj::dtype_name(t) + Shape(s).str(),
                         [&] {
                           return add ? aj::slice_add(a.a, slices, v.a) : aj::slice_update(a.a, slices, v.a);
                         },
                         want, t);
        ++checked;
      }
    }
  }
  CHECK(checked > 500);
  // C++ scalars take the array's dtype (weak), as in every elementwise op.
  Array x = aj::arange(6, DType::i32);
  CHECK(aj::slice_update(x, {Slice(1, 3)}, 9).to_vector<int>() == std::vector<int>{0, 9, 9, 3, 4, 5});
  CHECK(aj::slice_add(x, {Slice(std::nullopt, std::nullopt, -2)}, 10).to_vector<int>() ==
        std::vector<int>{0, 11, 2, 13, 4, 15});
}

TEST_CASE("pad: constant, edge and reflect (NumPy's, repeated for wide pads) on every dtype") {
  std::mt19937_64 rng(6);
  int checked = 0;
  for (int round = 0; round < 50; ++round) {
    for (DType t : kDTypes) {
      for (aj::PadMode mode : {aj::PadMode::constant, aj::PadMode::edge, aj::PadMode::reflect}) {
        const Dims s = random_shape(rng, 3);
        std::vector<aj::PadWidth> w;
        bool bad = false;
        for (std::size_t d = 0; d < s.size(); ++d) {
          const std::int64_t lo = static_cast<std::int64_t>(rng() % 4), hi = static_cast<std::int64_t>(rng() % 7);
          w.push_back({lo, hi});
          bad |= mode != aj::PadMode::constant && s[d] == 0 && lo + hi > 0;
        }
        if (bad) continue;  // an error (test_bad_inputs.cpp)
        Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
        const double value = t == DType::bool_ ? 1 : t == DType::f32 || t == DType::f64 ? -2.5 : 7;
        Dims out;
        for (std::size_t d = 0; d < s.size(); ++d) out.push_back(s[d] + w[d].before + w[d].after);
        Host want{out, {}};
        for (std::int64_t k = 0; k < numel(out); ++k) {
          Dims o = unravel(k, out), at(o.size());
          bool inside = true;
          for (std::size_t d = 0; d < o.size(); ++d) {
            const std::int64_t q = o[d] - w[d].before, n = s[d];
            if (mode == aj::PadMode::constant) {
              inside &= q >= 0 && q < n;
              at[d] = q;
            } else if (mode == aj::PadMode::edge || n == 1) {
              at[d] = std::clamp<std::int64_t>(q, 0, n - 1);
            } else {
              const std::int64_t period = 2 * (n - 1);
              const std::int64_t m = ((q % period) + period) % period;
              at[d] = m < n ? m : period - m;
            }
          }
          want.v.push_back(inside ? a.h.at(at) : value);
        }
        aj::Scalar sv = t == DType::bool_ ? aj::Scalar(true) : aj::is_float(t) ? aj::Scalar(-2.5) : aj::Scalar(7);
        check_three_ways("pad " + std::string(aj::dtype_name(t)) + Shape(s).str() + " mode " +
                             std::to_string(static_cast<int>(mode)),
                         [&] { return aj::pad(a.a, w, mode, sv); }, want, t);
        ++checked;
      }
    }
  }
  CHECK(checked > 500);
  // One width for every axis, as NumPy's pad(a, 1).
  CHECK(aj::pad(aj::ones({2, 2}, DType::i32), {1}).to_vector<int>() ==
        std::vector<int>{0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0});
}

TEST_CASE("roll: one axis, several axes (repeated ones add up), and the flattened array") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    for (DType t : kDTypes) {
      const Dims s = random_shape(rng);
      const int nd = static_cast<int>(s.size());
      Input a = make_input(t, s, rng, static_cast<int>(rng() % 5));
      std::vector<std::int64_t> shifts;
      std::vector<int> axes;
      const int style = nd == 0 ? 0 : static_cast<int>(rng() % 3);  // 0 flattened, 1 one axis, 2 several
      const int count = style == 0 ? 1 : style == 1 ? 1 : 1 + static_cast<int>(rng() % 3);
      for (int c = 0; c < count; ++c) {
        shifts.push_back(static_cast<std::int64_t>(rng() % 21) - 10);
        if (style) axes.push_back(static_cast<int>(rng() % static_cast<std::uint64_t>(nd)) - (rng() % 2 ? nd : 0));
      }
      Host want{s, {}};
      if (style == 0) {
        const std::int64_t n = numel(s);
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t src = n ? (((k - shifts[0]) % n) + n) % n : 0;
          want.v.push_back(a.h.v[static_cast<std::size_t>(src)]);
        }
      } else {
        Dims total(s.size(), 0);
        for (std::size_t c = 0; c < axes.size(); ++c) total[static_cast<std::size_t>(axes[c] < 0 ? axes[c] + nd : axes[c])] += shifts[c];
        for (std::int64_t k = 0; k < numel(s); ++k) {
          Dims at = unravel(k, s);
          for (std::size_t d = 0; d < at.size(); ++d) at[d] = (((at[d] - total[d]) % s[d]) + s[d]) % s[d];
          want.v.push_back(a.h.at(at));
        }
      }
      check_three_ways("roll " + std::string(aj::dtype_name(t)) + Shape(s).str() + " style " + std::to_string(style),
                       [&] {
                         if (style == 0) return aj::roll(a.a, shifts[0]);
                         if (style == 1) return aj::roll(a.a, shifts[0], axes[0]);
                         return aj::roll(a.a, shifts, axes);
                       },
                       want, t);
    }
  }
}

TEST_CASE("one_hot: every result dtype, labels out of range (negative too) give zero rows") {
  std::mt19937_64 rng(8);
  for (int round = 0; round < 20; ++round) {
    for (DType t : kDTypes) {
      const Dims s = random_shape(rng, 3);
      const std::int64_t c = static_cast<std::int64_t>(rng() % 6);
      Input lab = make_indices(s, std::max<std::int64_t>(c, 1), rng, static_cast<int>(rng() % 5));
      Dims out = s;
      out.push_back(c);
      Host want{out, {}};
      for (std::int64_t k = 0; k < numel(out); ++k) {
        Dims o = unravel(k, out);
        const std::int64_t cls = o.back();
        o.pop_back();
        want.v.push_back(static_cast<std::int64_t>(lab.h.at(o)) == cls ? 1 : 0);
      }
      check_three_ways("one_hot " + std::string(aj::dtype_name(t)) + Shape(s).str() + " classes " + std::to_string(c),
                       [&] { return aj::one_hot(lab.a, c, t); }, want, t);
    }
  }
}

TEST_CASE("where with a broadcast bool mask and a scalar fill works for every dtype") {
  std::mt19937_64 rng(9);
  for (DType t : kDTypes) {
    Input x = make_input(t, {3, 4}, rng, 2);
    Input m = make_input(DType::bool_, {4}, rng, 0);
    const aj::Scalar fill = t == DType::bool_ ? aj::Scalar(true) : aj::is_float(t) ? aj::Scalar(0.5) : aj::Scalar(-3);
    const double fv = t == DType::bool_ ? 1 : aj::is_float(t) ? 0.5 : -3;
    Host want{{3, 4}, {}};
    for (std::int64_t k = 0; k < 12; ++k) want.v.push_back(m.h.v[static_cast<std::size_t>(k % 4)] != 0 ? x.h.v[static_cast<std::size_t>(k)] : fv);
    check_three_ways(std::string("where ") + aj::dtype_name(t), [&] {
      if (fill.kind == aj::Scalar::Kind::boolean) return aj::where(m.a, x.a, true);
      if (fill.kind == aj::Scalar::Kind::floating) return aj::where(m.a, x.a, 0.5);
      return aj::where(m.a, x.a, -3);
    }, want, t);
  }
}

// ---- fusion ---------------------------------------------------------------------------------------

namespace {

std::uint64_t kernels_for(const std::vector<Array>& arrays) {
  const std::uint64_t before = aj::stats().kernels_launched;
  aj::eval(arrays);
  return aj::stats().kernels_launched - before;
}

}  // namespace

TEST_CASE("a gather is index arithmetic inside the kernel: take fuses with its indices' producer and its consumer") {
  Array x = aj::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}).eval();
  Array i = aj::from_vector<std::int32_t>({3, -1, 0, 9, 2}).eval();
  Array y = aj::from_vector<float>({10, 20, 30, 40, 50}).eval();
  // (i + 1) % 8 computed inside, the gather, * 2 + y: one kernel (the index
  // producer is evaluated once per element: 5 points, 5 elements).
  Array flat = x.reshape({8});
  Array r = aj::take(flat, (i + 1) % 8, 0) * 2.0f + y;
  const std::string plan = aj::explain(r);
  CAPTURE(plan);
  CHECK(plan.find("1 kernels") != std::string::npos);
  CHECK(plan.find("gather") != std::string::npos);
  CHECK(kernels_for({r}) == 1);
  CHECK(r.to_vector<float>() == std::vector<float>{20, 22, 34, 46, 58});
  // Broadcast over x's 2 rows, the same index producer would be evaluated at
  // 10 points for its 5 elements: the work rule stores it first.
  Array r2 = aj::take(x, (i + 1) % 4, 1) * 2.0f;
  CHECK(kernels_for({r2}) == 2);
  CHECK(r2.to_vector<float>() == std::vector<float>{2, 2, 4, 6, 8, 10, 10, 12, 14, 16});
  // A cheap gathered operand is computed at the gathered indices, inside
  // too, while it is evaluated at no more points than it has elements.
  Array j = aj::from_vector<std::int32_t>({3, -1, 0}).eval();
  Array c = aj::take(x * 3.0f + 1.0f, j, 1);
  CHECK(kernels_for({c}) == 1);
  CHECK(c.to_vector<float>() == std::vector<float>{13, 13, 4, 25, 25, 16});
  // At 10 gathered points for its 8 elements it is stored once, then gathered.
  Array c2 = aj::take(x * 3.0f + 1.0f, i, 1);
  CHECK(kernels_for({c2}) == 2);
  CHECK(c2.to_vector<float>() == std::vector<float>{13, 13, 4, 13, 10, 25, 25, 16, 25, 22});
  // An expensive one (exp) is materialized first: 2 kernels.
  Array e = aj::take(aj::exp(x), i, 1);
  CHECK(kernels_for({e}) == 2);
  // A gather feeding a reduction runs inside the reduction's loop.
  Array s = aj::sum(aj::take(x, i, 1), 1);
  CHECK(kernels_for({s}) == 1);
  CHECK(s.to_vector<float>() == std::vector<float>{4 + 4 + 1 + 4 + 3, 8 + 8 + 5 + 8 + 7});
  // take_along_axis with computed indices (an argsort-like use): one kernel.
  Array ta = aj::take_along_axis(x, aj::from_vector<std::int64_t>({3, 2, 1, 0}, {1, 4}) + 0, 1) - 1.0f;
  CHECK(kernels_for({ta}) == 1);
  CHECK(ta.to_vector<float>() == std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4});
}

TEST_CASE("pads, slice updates and rolls of computed values are one kernel, reading no memory outside") {
  Array u = aj::arange(64, DType::f32).eval();
  auto lap = [&](const Array& v) {
    return aj::slice(v, {Slice(1, -1)}) +
           0.25f * (aj::slice(v, {Slice(2, std::nullopt)}) - 2.0f * aj::slice(v, {Slice(1, -1)}) +
                    aj::slice(v, {Slice(std::nullopt, -2)}));
  };
  // lap(uu) is computed (the stencil's arithmetic) and fuses with the pad
  // or slice update; its operand is evaluated, so reading it at 3 offsets
  // costs loads only.
  const Array uu = (u * u).eval();
  Array heat1 = aj::slice_update(u, {Slice(1, -1)}, lap(uu));
  Array heat2 = aj::pad(lap(uu), {{1, 1}}, aj::PadMode::constant, 5.0);
  // A computed operand read at 3 offsets is stored first (the work rule): 2.
  Array heat3 = aj::slice_update(u, {Slice(1, -1)}, lap(u * u));
  Array rolled = aj::roll(u * 2.0f, 3) + 1.0f;
  Array padded = aj::pad(u.reshape({8, 8}) * 2.0f, {{1, 2}, {3, 0}}, aj::PadMode::constant, -1.0) + 1.0f;
  Array added = aj::slice_add(u.reshape({8, 8}) + 1.0f, {Slice(1, std::nullopt, 2), Slice(std::nullopt, std::nullopt, -3)}, 100.0f);
  for (Array* a : {&heat1, &heat2, &rolled, &padded, &added}) CHECK(kernels_for({*a}) == 1);
  CHECK(kernels_for({heat3}) == 2);
  CHECK(heat3.to_vector<float>() == heat1.to_vector<float>());
  const auto h1 = heat1.to_vector<float>(), h2 = heat2.to_vector<float>();
  for (int k = 0; k < 64; ++k) {
    CAPTURE(k);
    const float uu = static_cast<float>(k * k);
    if (k == 0 || k == 63) {
      CHECK(h1[static_cast<std::size_t>(k)] == static_cast<float>(k));
      CHECK(h2[static_cast<std::size_t>(k)] == 5.0f);
    } else {
      const float want = uu + 0.25f * (static_cast<float>((k + 1) * (k + 1)) - 2.0f * uu + static_cast<float>((k - 1) * (k - 1)));
      CHECK(h1[static_cast<std::size_t>(k)] == want);
      CHECK(h2[static_cast<std::size_t>(k)] == want);
    }
  }
  CHECK(rolled.to_vector<float>()[0] == 2.0f * 61 + 1);
  CHECK(padded.shape() == Shape{11, 11});
}

TEST_CASE("pads seen through reversed, strided and transposed views: the JIT's split loops agree with the reference") {
  // The JIT runs the inside of a pad in a loop of its own (no masks); a view
  // of a pad walks its masks backwards, in steps, or along another axis.
  std::mt19937_64 rng(11);
  for (DType t : kDTypes) {
    Input x = make_input(t, {7, 9}, rng, 0);
    Input v = make_input(t, {3, 9}, rng, 2);
    auto make = [&]() {
      const Array p = aj::pad(aj::maximum(x.a, x.a), {{2, 3}, {4, 1}}, aj::PadMode::constant, t == DType::bool_ ? aj::Scalar(true) : aj::Scalar(3));
      const Array s = aj::slice_update(x.a, {Slice(1, 7, 2)}, aj::maximum(v.a, v.a));
      const Array r = aj::roll(aj::maximum(x.a, x.a), {2, -3}, {0, 1});
      return std::vector<Array>{
          aj::slice(p, {Slice(std::nullopt, std::nullopt, -1), Slice(std::nullopt, std::nullopt, -2)}),
          p.T(), aj::slice(p.T(), 1, 1, std::nullopt, 3), aj::slice(s, 1, std::nullopt, std::nullopt, -1), s.T(),
          aj::slice(r, {Slice(std::nullopt, std::nullopt, -2), Slice(std::nullopt, std::nullopt, -1)}), r.T(),
          aj::pad(aj::slice(aj::maximum(x.a, x.a), 1, std::nullopt, std::nullopt, -1), {{0, 0}, {5, 5}}),
          aj::pad(aj::pad(aj::maximum(x.a, x.a), {{1, 1}}), {{2, 0}, {0, 3}})};
    };
    std::vector<Array> got = make(), want;
    aj::eval(got);
    {
      aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
      want = make();
      aj::eval(want);
    }
    for (std::size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      CAPTURE(aj::dtype_name(t));
      REQUIRE(got[k].shape() == want[k].shape());
      const auto a = values(got[k]), b = values(want[k]);
      for (std::size_t e = 0; e < a.size(); ++e) {
        if (!same_value(a[e], b[e])) {
          FAIL_CHECK("element " << e << ": " << a[e] << " vs reference " << b[e]);
          break;
        }
      }
    }
  }
}

TEST_CASE("edge and reflect pads read their operand in their consumer's kernel: cheap producers fuse, repeated reads are stored first") {
  Array x = aj::arange(12, DType::f64).reshape({3, 4}).eval();
  // Read from an evaluated array: one kernel with its consumer.
  Array p0 = aj::pad(x, {{2, 1}, {1, 3}}, aj::PadMode::reflect) + 1.0;
  CHECK(kernels_for({p0}) == 1);
  // A computed operand read at 48 points for its 12 elements: the work rule
  // stores it first (2 kernels), the values are the same.
  Array p = aj::pad(x * 2.0, {{2, 1}, {1, 3}}, aj::PadMode::reflect) + 1.0;
  CHECK(kernels_for({p}) == 2);
  const auto pv = p.to_vector<double>(), p0v = p0.to_vector<double>();
  REQUIRE(pv.size() == p0v.size());
  for (std::size_t k = 0; k < pv.size(); ++k) CHECK(pv[k] == 2.0 * (p0v[k] - 1.0) + 1.0);
  Array e = aj::pad(x - 1.0, {{1, 1}}, aj::PadMode::edge);
  CHECK(kernels_for({e}) == 2);
  CHECK(e.shape() == Shape{5, 6});
  CHECK(e.to_vector<double>()[0] == -1.0);
}

TEST_CASE("scatter_add into a dead buffer works in place; into a fresh zeros it allocates the result only") {
  Array table = (aj::arange(20, DType::f32).reshape({5, 4}) + 0.5f).eval();
  Array idx = aj::from_vector<std::int64_t>({1, 3, 1, -1, 7}).eval();
  Array g = aj::ones({5, 4}).eval();
  std::vector<float> want = table.to_vector<float>();
  for (std::int64_t r : {1, 3, 1, 4}) {
    for (int c = 0; c < 4; ++c) want[static_cast<std::size_t>(r * 4 + c)] += 1.0f;
  }
  const void* before = table.data().ptr;
  const std::uint64_t reuses = aj::stats().inplace_reuses;
  table = aj::scatter_add(table, idx, g);  // the old table has no handle left
  table.eval();
  CHECK(aj::stats().inplace_reuses == reuses + 1);
  CHECK(table.data().ptr == before);
  CHECK(table.to_vector<float>() == want);
  // A computed array that only the scatter reads: its kernel's buffer is taken over.
  const std::uint64_t r2 = aj::stats().inplace_reuses;
  Array s2 = aj::scatter(table * 2.0f, idx, 0.0f);
  s2.eval();
  CHECK(aj::stats().inplace_reuses == r2 + 1);
  // Still held elsewhere: never written.
  Array held = (aj::arange(8, DType::f32) + 1.0f).eval();
  Array s3 = aj::scatter_add(held, aj::from_vector<std::int32_t>({0}), aj::from_vector<float>({5}));
  CHECK(s3.to_vector<float>()[0] == 6.0f);
  CHECK(held.to_vector<float>()[0] == 1.0f);
  // The embedding gradient: zeros + scatter_add is one library step, no temporary.
  Array grad = aj::scatter_add(aj::zeros({6, 3}), aj::from_vector<std::int32_t>({5, 0, 5}), aj::ones({3, 3}));
  CHECK(kernels_for({grad}) <= 2);
  CHECK(grad.to_vector<float>() == std::vector<float>{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2});
}

TEST_CASE("take and scatter_add are transposes: <take(a, i), g> == <a, scatter_add(0, i, g)>") {
  std::mt19937_64 rng(10);
  for (int round = 0; round < 20; ++round) {
    Dims s = random_shape(rng, 3);
    if (s.empty()) s.push_back(3);
    const int ax = static_cast<int>(rng() % s.size());
    if (s[static_cast<std::size_t>(ax)] == 0) continue;
    const Dims is = random_shape(rng, 2);
    Input a = make_input(DType::f64, s, rng, 0);
    for (auto& v : a.h.v) v = std::isnan(v) ? 1 : v;
    Array av = aj::from_vector<double>(a.h.v, Shape(s));
    Input ix = make_indices(is, s[static_cast<std::size_t>(ax)], rng, 0);
    for (auto& v : ix.h.v) v = std::fmod(std::fabs(v), static_cast<double>(s[static_cast<std::size_t>(ax)]));
    Array iv = aj::from_vector<double>(ix.h.v, Shape(is)).astype(DType::i64);
    Array t = aj::take(av, iv, ax);
    Array gv = aj::from_vector<double>(ajtest::small_values(static_cast<std::size_t>(t.size()), 99 + round), t.shape());
    const double lhs = aj::sum(t * gv).item<double>();
    const double rhs = aj::sum(av * aj::scatter_add(aj::zeros(Shape(s), DType::f64), iv, gv, ax)).item<double>();
    CHECK(lhs == doctest::Approx(rhs).epsilon(1e-12));
  }
}

// ---- AJ_DEBUG -----------------------------------------------------------------------------------

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    return e.what();
  }
  return "accepted";
}

struct DebugOn {
  DebugOn() { aj::set_debug(true); }
  ~DebugOn() { aj::set_debug(false); }
};

}  // namespace

TEST_CASE("out-of-range indices: clamped / dropped without AJ_DEBUG, a located error naming the index with it") {
  Array x = aj::from_vector<float>({1, 2, 3, 4}).eval();
  Array bad = aj::from_vector<std::int32_t>({0, 2, 4}, {3}).eval();
  Array neg = aj::from_vector<std::int64_t>({-4, -5}).eval();
  CHECK(aj::take(x, bad).to_vector<float>() == std::vector<float>{1, 3, 4});
  CHECK(aj::take(x, neg).to_vector<float>() == std::vector<float>{1, 1});
  CHECK(aj::scatter_add(x, bad, 10.0f).to_vector<float>() == std::vector<float>{11, 2, 13, 4});
  CHECK(aj::scatter(x, neg, 0.0f).to_vector<float>() == std::vector<float>{0, 2, 3, 4});
  DebugOn on;
  CHECK(aj::debug());
  const std::string m1 = message_of([&] { (void)aj::take(x, bad); });
  const int line1 = __LINE__ - 1;
  CHECK(m1.find("aj::take:") != std::string::npos);
  CHECK(m1.find("index 4") != std::string::npos);
  CHECK(m1.find("[2]") != std::string::npos);
  CHECK(m1.find("test_indexing.cpp:" + std::to_string(line1)) != std::string::npos);
  const std::string m2 = message_of([&] { (void)aj::scatter_add(x, neg, 1.0f); });
  CHECK(m2.find("aj::scatter_add:") != std::string::npos);
  CHECK(m2.find("index -5") != std::string::npos);
  const std::string m3 = message_of([&] {
    (void)aj::take_along_axis(x.reshape({2, 2}), aj::from_vector<std::int64_t>({0, 1, 1, 2}, {2, 2}), 1);
  });
  CHECK(m3.find("aj::take_along_axis:") != std::string::npos);
  CHECK(m3.find("[1, 1]") != std::string::npos);
  // In range, negative ones included, passes; pads and rolls never check.
  CHECK(aj::take(x, neg + 1).to_vector<float>() == std::vector<float>{2, 1});
  CHECK(aj::pad(x, {{3, 3}}, aj::PadMode::reflect).size() == 10);
}

}  // TEST_SUITE

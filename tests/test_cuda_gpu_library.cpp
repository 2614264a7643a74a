// The CUDA library kernels and device paths that the GPU tier of
// test_cuda_runtime.cpp does not reach, checked against the host: sort,
// argsort, topk and partition; the scans; scatter, scatter_add and their
// along-axis forms (in place too); gathers, one_hot, pads, rolls and slice
// updates; f16 and bf16 (math, casts at every rounding boundary,
// reductions, matmul); counter-based random arrays made on the device.
//
// Each group is one function that builds random host inputs (every dtype the
// ops take; NaN, -0.0, infinities and ties where they matter; strided and
// transposed operands; lines from 1 to 100000 long), computes its ops on the
// host and on device copies of the inputs, and compares: exactly (equal
// values, signs of zero too, NaN with NaN) where the semantics fix the result (integers, sorts,
// argsort positions, scatters, casts, running max/min), within a bound where
// device math or summation order may round differently.
//
// Two tiers run the same functions:
//  - "cuda gpu: ..." at full size on a GPU (skips with "no GPU: <reason>:
//    skipped" elsewhere);
//  - "cuda fake driver: ..." at small sizes through the fake driver, whose
//    cuLaunchKernel runs the generated CUDA C on the host emulator
//    (tests/cuda_fake_driver.hpp); it also checks that nothing went through
//    the host between the inputs' upload and the results' download. Skips
//    without a host C++ compiler.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cuda_fake_driver.hpp"

namespace {

using aj::Array;
using aj::Device;
using aj::DType;
using ajtest::fake_cuda::FakeGpu;

bool skip_without_gpu() {
  if (aj::cuda::available()) return false;
  MESSAGE("no GPU: " << aj::cuda::unavailable_reason() << ": skipped");
  return true;
}

const DType kTypes[] = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64, DType::f16, DType::bf16};

// ---- random inputs ---------------------------------------------------------------------

struct Fill {
  double range = 8;        // integers in [-range, range]; floats in [-range, range)
  bool quarters = false;   // floats: multiples of 1/4 (ties; sums exact in any order)
  int specials = 0;        // floats: every ~specials-th element NaN, -0.0, +0.0, +inf or -inf (0: none)
};

std::uint64_t next(std::uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return (s ^ (s >> 29)) * 0xbf58476d1ce4e5b9ull >> 11;  // 53 bits
}

Array random_array(DType t, aj::Shape shape, std::uint64_t seed, Fill f = {}) {
  const auto n = static_cast<std::size_t>(shape.numel());
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 12345;
  if (t == DType::bool_) {
    std::vector<bool> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = next(s) & 1;
    std::vector<std::int64_t> w(v.begin(), v.end());
    return aj::from_vector<std::int64_t>(w, shape).astype(DType::bool_).eval();
  }
  if (!aj::is_float(t)) {
    const auto span = static_cast<std::uint64_t>(2 * f.range + 1);
    std::vector<std::int64_t> v(n);
    for (auto& x : v) {
      // 53 random bits are too few to cover a span above 2^53: two draws.
      const std::uint64_t r = (next(s) << 11) ^ next(s);
      x = static_cast<std::int64_t>(r % span) - static_cast<std::int64_t>(f.range);
    }
    return aj::from_vector<std::int64_t>(v, shape).astype(t).eval();
  }
  std::vector<double> v(n);
  for (auto& x : v) {
    const std::uint64_t r = next(s);
    if (f.quarters) {
      const auto q = static_cast<std::int64_t>(4 * f.range);
      x = static_cast<double>(static_cast<std::int64_t>(r % static_cast<std::uint64_t>(2 * q + 1)) - q) / 4;
    } else {
      x = (static_cast<double>(r) * 0x1.0p-52 - 1.0) * f.range;
    }
    if (f.specials > 0) {
      const std::uint64_t c = next(s) % static_cast<std::uint64_t>(f.specials);
      const double inf = std::numeric_limits<double>::infinity();
      if (c == 0) x = std::nan("");
      else if (c == 1) x = -0.0;
      else if (c == 2) x = 0.0;
      else if (c == 3) x = inf;
      else if (c == 4) x = -inf;
    }
  }
  return aj::from_vector<double>(v, shape).astype(t).eval();
}

// Indices in [lo, hi] (negative ones count from the end, those outside the
// axis clamp or are dropped), of dtype `it`.
Array random_indices(DType it, aj::Shape shape, std::uint64_t seed, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(shape.numel()));
  std::uint64_t s = seed * 0x2545f4914f6cdd1dull + 99;
  for (auto& x : v) x = lo + static_cast<std::int64_t>(next(s) % static_cast<std::uint64_t>(hi - lo + 1));
  return aj::from_vector<std::int64_t>(v, shape).astype(it).eval();
}

// ---- comparing device results with the host's ------------------------------------------

// How a result is compared. exact: equal values, the same sign of zero, NaN
// with NaN. Otherwise |device - host| <= abs + rel * scale, where scale is
// |host| (per element) or, with `scaled`, 1 + the largest finite |host| of
// the result (scans: cancellation leaves small values with the error of large
// running ones).
struct Cmp {
  double rel = 0, abs = 0;
  bool scaled = false;
  bool exact() const { return rel == 0 && abs == 0; }
};
constexpr Cmp kExact{};
Cmp within(double rel, double abs = 0) { return {rel, abs, false}; }
Cmp scaled(double rel) { return {rel, 0, true}; }

// One ulp of t relative to a value (at most 2^(1 - digits) of it): the bound
// for a value computed in f32 by two math libraries and rounded once to t.
double ulp_rel(DType t) {
  switch (t) {
    case DType::f16: return 0x1p-10;
    case DType::bf16: return 0x1p-7;
    case DType::f32: return 0x1p-23;
    default: return 0x1p-52;
  }
}

struct Result {
  std::string what;
  Array value;
  Cmp cmp = kExact;
};

// The group's ops on `in` (host arrays, or their device copies when
// `device`); arrays an op makes from nothing (random ones) are moved to the
// device by the op when `device`.
using Ops = std::function<std::vector<Result>(const std::vector<Array>& in, bool device)>;

// Set while a "cuda fake driver:" case runs: results are collected with
// gpu.twice (kernels first, then for real) and host transfers are counted.
FakeGpu* g_fake = nullptr;

struct FakeScope {
  explicit FakeScope(FakeGpu& g) { g_fake = &g; }
  ~FakeScope() { g_fake = nullptr; }
  FakeScope(const FakeScope&) = delete;
  FakeScope& operator=(const FakeScope&) = delete;
};

struct Values {
  DType dtype = DType::f32;
  aj::Shape shape;
  Device device;
  std::vector<double> d;        // every dtype (NaN as NaN)
  std::vector<std::int64_t> i;  // integers and bool: exact beyond 2^53
  std::string error;            // what evaluating it threw, if it did
};

// An error's message cut to its start and the lines around its first
// "error" (an NVRTC failure carries the whole numbered source).
std::string brief(const std::string& what) {
  if (what.size() <= 1500) return what;
  const std::size_t at = what.find(" error", 300);
  std::string s = what.substr(0, 600);
  if (at != std::string::npos) s += "\n...\n" + what.substr(at > 400 ? at - 400 : 0, 1200);
  return s + "\n... (" + std::to_string(what.size()) + " characters)";
}

Values values_of(const Array& a) {
  Values v;
  v.dtype = a.dtype();
  v.shape = a.shape();
  v.device = a.device();
  v.d = a.to_vector<double>();  // converted on the host after the download: no device kernel
  if (!aj::is_float(v.dtype)) v.i = a.to_vector<std::int64_t>();
  return v;
}

// The first difference, or "".
std::string mismatch(const Values& got, const Values& want, const Cmp& c) {
  std::ostringstream os;
  if (!got.error.empty()) return "threw: " + brief(got.error);
  if (got.dtype != want.dtype) {
    os << "dtype " << aj::dtype_name(got.dtype) << ", host " << aj::dtype_name(want.dtype);
    return os.str();
  }
  if (!(got.shape == want.shape)) {
    os << "shape " << got.shape.str() << ", host " << want.shape.str();
    return os.str();
  }
  if (got.d.size() != want.d.size() || got.i.size() != want.i.size()) return "element count differs";
  for (std::size_t k = 0; k < got.i.size(); ++k) {
    if (got.i[k] != want.i[k]) {
      os << "element " << k << ": device " << got.i[k] << ", host " << want.i[k];
      return os.str();
    }
  }
  double scale = 1;
  if (c.scaled) {
    for (double w : want.d) {
      if (std::isfinite(w)) scale = std::fmax(scale, 1 + std::fabs(w));
    }
  }
  int bad = 0;
  std::size_t first = 0;
  for (std::size_t k = 0; k < got.d.size(); ++k) {
    const double g = got.d[k], w = want.d[k];
    bool ok = (std::isnan(g) && std::isnan(w)) || (g == w && (!c.exact() || std::signbit(g) == std::signbit(w)));
    if (!ok && !c.exact() && std::isfinite(g) && std::isfinite(w)) {
      ok = std::fabs(g - w) <= c.abs + c.rel * (c.scaled ? scale : std::fabs(w));
    }
    if (!ok && bad++ == 0) first = k;
  }
  if (bad == 0) return "";
  os.precision(17);
  os << bad << " of " << got.d.size() << " elements differ; first: element " << first << ": device "
     << got.d[first] << ", host " << want.d[first];
  return os.str();
}

// Runs `ops` on the host inputs and on their device copies and compares
// every result (its device, dtype, shape and values).
void compare_on_device(const std::string& group, const std::vector<Array>& inputs, const Ops& ops) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> names;
  std::vector<Cmp> cmps;
  std::vector<Values> want;
  {
    std::vector<Result> host = ops(inputs, false);
    std::vector<Array> arrays;
    for (auto& r : host) arrays.push_back(r.value);
    aj::eval(arrays);
    for (auto& r : host) {
      names.push_back(r.what);
      cmps.push_back(r.cmp);
      want.push_back(values_of(r.value));
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  struct Got {
    std::vector<Values> values;
    int transfers = 0;
    std::string error;  // what evaluating all results together threw
  };
  auto transfers = [] { return g_fake ? ajtest::fake_cuda::fake().uploads + ajtest::fake_cuda::fake().downloads : 0; };
  auto body = [&] {
    Got g;
    std::vector<Array> dev;
    for (const Array& a : inputs) dev.push_back(a.to(Device::cuda(0)));
    aj::eval(dev);
    const int before = transfers();
    std::vector<Result> res = ops(dev, true);
    std::vector<Array> arrays;
    for (auto& r : res) arrays.push_back(r.value);
    // An error (a kernel that fails to compile or to run) is reported with
    // the results it concerns; the others are still compared, each
    // evaluated on its own then.
    try {
      aj::eval(arrays);
    } catch (const aj::Error& e) {
      g.error = e.what();
    }
    g.transfers = transfers() - before;
    for (auto& r : res) {
      try {
        g.values.push_back(values_of(r.value));
      } catch (const aj::Error& e) {
        g.values.emplace_back();
        g.values.back().device = Device::cuda(0);
        g.values.back().error = e.what();
      }
    }
    return g;
  };
  const Got got = g_fake ? g_fake->twice(body) : body();
  const auto t2 = std::chrono::steady_clock::now();
  REQUIRE(got.values.size() == want.size());
  if (!got.error.empty()) FAIL_CHECK(group << ": evaluating every result at once threw: " << brief(got.error));
  int failed = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const Values& g = got.values[k];
    std::string m = g.device == Device::cuda(0) ? mismatch(g, want[k], cmps[k]) : "on " + g.device.str() + ", not cuda:0";
    if (!m.empty()) {
      ++failed;
      FAIL_CHECK(group << ": " << names[k] << ": " << m);
    }
  }
  CHECK(failed == 0);
  if (g_fake && got.error.empty()) CHECK(got.transfers == 0);  // nothing went through the host
  const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  MESSAGE(group << ": " << want.size() - failed << " of " << want.size() << " results agree (host " << ms(t0, t1)
                << " ms, device " << ms(t1, t2) << " ms"
                << (g_fake ? ", " + std::to_string(ajtest::fake_cuda::fake().sources.size()) + " distinct kernels emulated"
                           : std::string())
                << ")");
}

std::string name(DType t, const std::string& what) { return std::string(aj::dtype_name(t)) + " " + what; }

// Float bound of a scan's result dtype: sums and products in order along the
// axis round the same on both sides (the bound is a margin only).
Cmp scan_cmp(DType result) {
  if (!aj::is_float(result)) return kExact;
  return scaled(result == DType::f64 ? 1e-13 : result == DType::f32 ? 1e-5 : 2 * ulp_rel(result));
}

// ---- sort, argsort, topk, partition --------------------------------------------------

void check_sorts(bool small) {
  // Per dtype: lines of 1; rows with ties; a matrix sorted along its
  // strided axis 0 and through its transpose; long rows; the longest rows
  // (100000); a rank-3 array sorted along its middle axis; a 1-d array. The
  // emulator runs each line of a block's sort as 256 host threads meeting at
  // every barrier: few lines when small.
  const std::vector<aj::Shape> shapes =
      small ? std::vector<aj::Shape>{{2, 1}, {2, 100}, {5, 6}, {1, 600}, {1, 1500}, {2, 10, 2}, {601}}
            : std::vector<aj::Shape>{{1000, 1}, {64, 1000}, {1000, 37}, {7, 5000}, {2, 100000}, {4, 300, 5}, {30001}};
  const std::size_t per = shapes.size();
  std::vector<Array> in;
  std::uint64_t seed = 1000;
  for (DType t : kTypes) {
    const bool fl = aj::is_float(t);
    // Floats: quarters (ties) with NaN, signed zeros and infinities, or
    // reals; integers: few values (ties) or, for i64, beyond 32 bits.
    const Fill ties{4, true, 13}, reals{1, false, 29};
    const Fill wide{t == DType::i64 ? 1e15 : t == DType::i32 ? 2e9 : 8, false, 0};
    in.push_back(random_array(t, shapes[0], seed++, fl ? ties : Fill{3}));
    in.push_back(random_array(t, shapes[1], seed++, fl ? ties : Fill{20}));
    in.push_back(random_array(t, shapes[2], seed++, fl ? ties : Fill{5}));
    in.push_back(random_array(t, shapes[3], seed++, fl ? reals : wide));
    in.push_back(random_array(t, shapes[4], seed++, fl ? Fill{64, true, 101} : Fill{1000}));
    in.push_back(random_array(t, shapes[5], seed++, fl ? ties : Fill{5}));
    in.push_back(random_array(t, shapes[6], seed++, fl ? reals : wide));
  }
  const std::int64_t n1 = shapes[1][1], n3 = shapes[3][1];
  Ops ops = [&](const std::vector<Array>& v, bool) {
    std::vector<Result> r;
    for (std::size_t k = 0; k < std::size(kTypes); ++k) {
      const DType t = kTypes[k];
      const Array &one = v[k * per], &a = v[k * per + 1], &s = v[k * per + 2], &b = v[k * per + 3],
                  &c = v[k * per + 4], &d = v[k * per + 5], &e = v[k * per + 6];
      auto add = [&](const std::string& what, const Array& x) { r.push_back({name(t, what), x}); };
      add("sort lines of 1", aj::sort(one, 1));
      add("argsort lines of 1", aj::argsort(one, 1));
      add("sort rows with ties", aj::sort(a, 1));
      add("argsort rows with ties", aj::argsort(a, 1));
      const aj::TopK top = aj::topk(a, 10, 1);
      add("topk 10 values", top.values);
      add("topk 10 indices", top.indices);
      add("argsort strided lines (axis 0)", aj::argsort(s, 0));
      add("sort transposed input along its rows", aj::sort(s.T(), 1));
      const aj::TopK none = aj::topk(a, 0, 1);
      add("topk 0 values", none.values);
      add("topk 0 indices", none.indices);
      add("partition at 3 and n/2", aj::partition(a, std::vector<std::int64_t>{3, n1 / 2}, 1));
      add("argpartition at -7", aj::argpartition(a, -7, 1));
      add("sort long rows", aj::sort(b, 1));
      add("argsort long rows", aj::argsort(b, 1));
      add("topk k = n indices", aj::topk(b, n3, 1).indices);
      add("sort longest rows", aj::sort(c, -1));
      add("argsort longest rows", aj::argsort(c, -1));
      const aj::TopK top100 = aj::topk(c, 100, 1);
      add("topk 100 values of the longest rows", top100.values);
      add("topk 100 indices of the longest rows", top100.indices);
      add("sort middle axis", aj::sort(d, 1));
      add("argsort middle axis", aj::argsort(d, 1));
      add("argsort 1-d, every 3rd reversed", aj::argsort(aj::slice(e, 0, std::nullopt, std::nullopt, -3)));
      add("sort 1-d", aj::sort(e));
    }
    return r;
  };
  compare_on_device("sorts", in, ops);
}

// ---- scans -----------------------------------------------------------------------

void check_scans(bool small) {
  // Per dtype: rows (the scan axis innermost), columns (outer: coalesced
  // serial walks), a middle axis, a long 1-d array, and rows with NaN and
  // infinities for the running max/min.
  const std::vector<aj::Shape> shapes =
      small ? std::vector<aj::Shape>{{4, 500}, {300, 6}, {2, 50, 3}, {3000}, {5, 70}}
            : std::vector<aj::Shape>{{64, 5000}, {3000, 48}, {8, 500, 6}, {100000}, {100, 700}};
  const std::size_t per = shapes.size();
  std::vector<Array> in;
  std::uint64_t seed = 2000;
  for (DType t : kTypes) {
    const bool fl = aj::is_float(t);
    in.push_back(random_array(t, shapes[0], seed++, fl ? Fill{1} : Fill{8}));
    in.push_back(random_array(t, shapes[1], seed++, fl ? Fill{4, true} : Fill{1000}));
    in.push_back(random_array(t, shapes[2], seed++, fl ? Fill{1} : Fill{3}));
    in.push_back(random_array(t, shapes[3], seed++, fl ? Fill{2, true} : Fill{100000}));
    in.push_back(random_array(t, shapes[4], seed++, fl ? Fill{8, true, 17} : Fill{50}));
  }
  Ops ops = [&](const std::vector<Array>& v, bool) {
    std::vector<Result> r;
    for (std::size_t k = 0; k < std::size(kTypes); ++k) {
      const DType t = kTypes[k];
      const bool fl = aj::is_float(t);
      const Array &m = v[k * per], &c = v[k * per + 1], &t3 = v[k * per + 2], &l = v[k * per + 3], &s = v[k * per + 4];
      auto add = [&](const std::string& what, const Array& x, std::optional<Cmp> cmp = std::nullopt) {
        r.push_back({name(t, what), x, cmp ? *cmp : scan_cmp(x.dtype())});
      };
      // logcumsumexp: exp and log1p of two math libraries at each step.
      auto lse_cmp = [](DType rt) {
        return rt == DType::f64 ? scaled(1e-10) : rt == DType::f32 ? scaled(1e-4) : scaled(2 * ulp_rel(rt));
      };
      add("cumsum rows", aj::cumsum(m, 1));
      // Products of values near 1 stay finite over long rows (floats);
      // integers wrap, bools are `and`.
      add("cumprod rows", aj::cumprod(fl ? m / 8 + 1 : m, 1));
      add("cummax rows", aj::cummax(m, 1));
      add("cummin rows", aj::cummin(m, 1));
      const Array lse = aj::logcumsumexp(m, 1);
      add("logcumsumexp rows", lse, lse_cmp(lse.dtype()));
      add("cumsum columns", aj::cumsum(c, 0));
      add("cummax columns", aj::cummax(c, 0));
      add("cumprod columns", aj::cumprod(fl ? c / 32 + 1 : c, 0));
      const Array lsec = aj::logcumsumexp(c, 0);
      add("logcumsumexp columns", lsec, lse_cmp(lsec.dtype()));
      add("cumsum middle axis", aj::cumsum(t3, 1));
      add("cummin middle axis", aj::cummin(t3, 1));
      add("cumsum 1-d", aj::cumsum(l));
      add("cummax flattened", aj::cummax(t3));
      add("cummax with NaN and infinities", aj::cummax(s, 1));
      add("cummin with NaN and infinities, transposed", aj::cummin(s.T(), 1));
      if (t == DType::f32 || t == DType::i32 || t == DType::bf16) {
        add("cumsum of a producer, consumer after", aj::cumsum(m * 2 + 1, 1) - 1);
        add("cumsum of a transposed input", aj::cumsum(c.T(), 1));
        // A sum after the scan: the sums' order may differ (a looser margin).
        const DType st = aj::cumsum(m, 1).dtype();
        add("sum of cumsum along the same axis", aj::sum(aj::cumsum(m, 1), 1),
            st == DType::f32 ? scaled(1e-3) : scan_cmp(st));
      }
      if (t == DType::i32 || t == DType::f16 || t == DType::bool_) add("cumsum in f64", aj::cumsum(m, 1, DType::f64));
      if (t == DType::i64 || t == DType::f32) {
        add("cumulative_sum with the initial 0", aj::cumulative_sum(m, 1, std::nullopt, true));
      }
    }
    return r;
  };
  compare_on_device("scans", in, ops);
}

// ---- scatters ----------------------------------------------------------------------

void check_scatters(bool small) {
  // An embedding gradient (scatter_add along axis 0 of a table, many
  // duplicate and some negative or out-of-range rows), along axis 1 with
  // strided updates, the along-axis forms, scalar updates, scatter (the last
  // duplicate wins), and a dead device array updated in place.
  const std::int64_t V = small ? 50 : 1000, D = small ? 8 : 64, N = small ? 60 : 5000;
  const std::int64_t R = small ? 6 : 64, C = small ? 30 : 300, K = small ? 12 : 500, K2 = small ? 7 : 200;
  std::vector<Array> in;
  // Indices shared by every dtype: i64 rows of the table, i32 columns, the
  // along-axis positions (i64), each with duplicates, negatives and a few out of range.
  in.push_back(random_indices(DType::i64, {N}, 1, -V - 2, V + 1));
  in.push_back(random_indices(DType::i32, {K}, 2, -C - 3, C + 2));
  in.push_back(random_indices(DType::i64, {R, K2}, 3, -C, C + 1));
  in.push_back(random_indices(DType::i32, {R, K2}, 4, -C - 1, C));
  const std::size_t shared = in.size(), per = 6;
  std::uint64_t seed = 3000;
  for (DType t : kTypes) {
    // Quarters of small magnitude: sums of duplicates are exact in every
    // float dtype (bf16 too), so the check is exact.
    const Fill f = aj::is_float(t) ? Fill{2, true} : Fill{100};
    in.push_back(random_array(t, {V, D}, seed++, f));
    in.push_back(random_array(t, {N, D}, seed++, f));
    in.push_back(random_array(t, {R, C}, seed++, f));
    in.push_back(random_array(t, {K, R}, seed++, f));  // used transposed: strided updates
    in.push_back(random_array(t, {R, K2}, seed++, f));
    in.push_back(random_array(t, {R, 1}, seed++, f));
  }
  std::vector<std::int64_t> reuses(std::size(kTypes), -1);
  Ops ops = [&](const std::vector<Array>& v, bool) {
    std::vector<Result> r;
    const Array &rows = v[0], &cols = v[1], &along = v[2], &along32 = v[3];
    for (std::size_t k = 0; k < std::size(kTypes); ++k) {
      const DType t = kTypes[k];
      const std::size_t b = shared + k * per;
      const Array &table = v[b], &grads = v[b + 1], &a = v[b + 2], &ut = v[b + 3], &u2 = v[b + 4], &col = v[b + 5];
      auto add = [&](const std::string& what, const Array& x) { r.push_back({name(t, what), x}); };
      add("scatter_add rows (embedding gradient)", aj::scatter_add(table, rows, grads));
      add("scatter rows, last duplicate wins", aj::scatter(table, rows, grads));
      add("scatter_add columns, strided updates", aj::scatter_add(a, cols, ut.T(), 1));
      add("scatter columns, broadcast updates", aj::scatter(a, cols, col, 1));
      add("scatter_add columns of a transposed array", aj::scatter_add(a.T(), cols, ut, 0));
      add("scatter_add_along_axis", aj::scatter_add_along_axis(a, along, u2, 1));
      add("put_along_axis, i32 positions", aj::put_along_axis(a, along32, u2, 1));
      add("scatter_add of a scalar",
          t == DType::bool_ ? aj::scatter_add(a, cols, true, 1) : aj::scatter_add(a, cols, 3, 1));
      add("scatter into zeros", aj::scatter(aj::zeros({V, D}, t), rows, grads));
      // A dead array updated in place: its buffer is the result's.
      Array dead = aj::maximum(table, table).eval();
      const std::uint64_t before = aj::stats().inplace_reuses;
      dead = aj::scatter_add(dead, rows, grads);
      dead.eval();
      reuses[k] = static_cast<std::int64_t>(aj::stats().inplace_reuses - before);
      add("scatter_add in place", dead);
    }
    return r;
  };
  compare_on_device("scatters", in, ops);
  // The last run of ops was the device's.
  for (std::size_t k = 0; k < std::size(kTypes); ++k) {
    CHECK_MESSAGE(reuses[k] == 1, aj::dtype_name(kTypes[k]) << ": scatter_add on a dead device array in place");
  }
}

// ---- gathers, one_hot, pads, rolls, slice updates ---------------------------------------

void check_gathers_pads(bool small) {
  const std::int64_t R = small ? 9 : 300, C = small ? 37 : 257, K = small ? 6 : 1000, K2 = small ? 5 : 40;
  std::vector<Array> in;
  in.push_back(random_indices(DType::i64, {K}, 11, -C - 5, C + 4));          // clamped beyond the axis
  in.push_back(random_indices(DType::i32, {K}, 12, -R - 5, R + 4));
  in.push_back(random_indices(DType::i32, {R, K2}, 13, -C, C - 1));
  in.push_back(random_indices(DType::i64, {K, 2}, 14, -1, 11));               // labels; out of [0, 10): zero rows
  in.push_back(random_indices(DType::i64, {K}, 15, -R * C - 3, R * C + 2));  // into the flattened array
  const std::size_t shared = in.size(), per = 3;
  std::uint64_t seed = 4000;
  for (DType t : kTypes) {
    const Fill f = aj::is_float(t) ? Fill{4, false, 19} : Fill{1000};
    in.push_back(random_array(t, {R, C}, seed++, f));
    in.push_back(random_array(t, {3, C}, seed++, f));
    in.push_back(random_array(t, {1, C}, seed++, f));
  }
  Ops ops = [&](const std::vector<Array>& v, bool) {
    std::vector<Result> r;
    const Array &i = v[0], &i32 = v[1], &j = v[2], &labels = v[3], &flat = v[4];
    for (std::size_t k = 0; k < std::size(kTypes); ++k) {
      const DType t = kTypes[k];
      const std::size_t b = shared + k * per;
      const Array &x = v[b], &u = v[b + 1], &row = v[b + 2];
      auto add = [&](const std::string& what, const Array& y) { r.push_back({name(t, what), y}); };
      const aj::Scalar one = t == DType::bool_ ? aj::Scalar(true) : aj::Scalar(3);
      add("take columns (i64)", aj::take(x, i, 1));
      add("take rows (i32)", aj::take(x, i32, 0));
      add("take from the flattened transpose", aj::take(x.T(), flat));
      add("take_along_axis (i32)", aj::take_along_axis(x, j, 1));
      add("one_hot", aj::one_hot(labels, 10, t));
      add("pad constant", aj::pad(x, {{1, 2}, {3, 0}}, aj::PadMode::constant, one));
      add("pad edge", aj::pad(x, {{2, 0}, {0, 5}}, aj::PadMode::edge));
      add("pad reflect, transposed", aj::pad(x.T(), {{3, 4}, {1, 2}}, aj::PadMode::reflect));
      add("roll axis 1", aj::roll(x, 5, 1));
      add("roll two axes", aj::roll(x, {2, -C - 3}, {0, 1}));
      add("roll flattened", aj::roll(x, 100));
      add("slice_update strided rows", aj::slice_update(x, {aj::Slice(1, 7, 2)}, u));
      add("slice_update reversed rows, broadcast", aj::slice_update(x, {aj::Slice(std::nullopt, std::nullopt, -3)}, row));
      add("slice_add", aj::slice_add(x, {aj::Slice(2, 5), aj::Slice(3, std::nullopt, 4)},
                                     t == DType::bool_ ? aj::Operand(true) : aj::Operand(3)));
    }
    return r;
  };
  compare_on_device("gathers, pads, rolls, slice updates", in, ops);
}

// ---- f16 and bf16 ------------------------------------------------------------------

// Every 16-bit pattern as dtype t.
Array all_patterns(DType t) {
  std::vector<aj::f16> h(65536);
  for (std::uint32_t p = 0; p < 65536; ++p) h[p] = aj::f16::from_bits(static_cast<std::uint16_t>(p));
  Array a = aj::from_vector(h);
  if (t == DType::f16) return a.eval();
  std::vector<aj::bf16> b(65536);
  for (std::uint32_t p = 0; p < 65536; ++p) b[p] = aj::bf16::from_bits(static_cast<std::uint16_t>(p));
  return aj::from_vector(b).eval();
}

// Values at and around each rounding decision of half dtype t: its finite
// values, the midpoints to their neighbours and a hair each side (one f64
// ulp, and 2^-30 relative: where rounding through f32 would round twice).
// `step`: every step-th pattern. f64 and f32 (the hairs off by one f32 ulp).
template <class H>
std::pair<std::vector<double>, std::vector<float>> probes(std::uint32_t inf_bits, std::uint32_t step) {
  std::vector<double> d;
  std::vector<float> f;
  for (std::uint32_t p = 0; p + 1 < inf_bits; p += step) {
    const double x = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(p)));
    const double y = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(p + 1)));
    const double mid = (x + y) / 2;
    for (double v : {x, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300), mid * (1 + 0x1p-30), mid * (1 - 0x1p-30)}) {
      d.push_back(v);
      d.push_back(-v);
    }
    const float m = static_cast<float>(mid);  // exact: a half's midpoint has few digits
    for (float v : {m, std::nextafter(m, 0.0f), std::nextafter(m, 1e30f)}) {
      f.push_back(v);
      f.push_back(-v);
    }
  }
  // Past the largest finite value: where inf begins.
  const double top = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(inf_bits - 1)));
  const double below = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(inf_bits - 2)));
  const double edge = top + (top - below) / 2;
  for (double v : {edge, std::nextafter(edge, 0.0), std::nextafter(edge, 1e300), 1e300}) {
    d.push_back(v);
    d.push_back(-v);
  }
  return {d, f};
}

// Integers around each rounding decision of integer-valued halves above
// 2^(digits): midpoints between neighbours and one either side.
template <class H>
std::vector<std::int64_t> integer_probes(std::uint32_t inf_bits, int digits, std::uint32_t step) {
  std::vector<std::int64_t> v;
  for (std::uint32_t p = 0; p + 1 < inf_bits; p += step) {
    const double x = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(p)));
    const double y = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(p + 1)));
    if (x < std::ldexp(1.0, digits + 1) || y > 0x1p62) continue;
    const auto mid = static_cast<std::int64_t>((x + y) / 2);
    for (std::int64_t w : {mid - 1, mid, mid + 1}) {
      v.push_back(w);
      v.push_back(-w);
    }
  }
  // Where inf begins (f16: 65520), and the ends of i64.
  const double top = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(inf_bits - 1)));
  const double below = static_cast<double>(H::from_bits(static_cast<std::uint16_t>(inf_bits - 2)));
  if (top < 0x1p62) {
    const auto edge = static_cast<std::int64_t>(top + (top - below) / 2);
    for (std::int64_t w : {edge - 1, edge, edge + 1}) {
      v.push_back(w);
      v.push_back(-w);
    }
  }
  v.push_back(std::numeric_limits<std::int64_t>::max());
  v.push_back(std::numeric_limits<std::int64_t>::min());
  return v;
}

void check_half_dtypes(bool small) {
  const std::int64_t N = small ? 997 : 100003;
  const std::int64_t M = small ? 20 : 300, Kd = small ? 40 : 500, P = small ? 9 : 257;
  const std::uint32_t step = small ? 61 : 1;
  std::vector<Array> in;
  // Shared: f32 bit patterns of every kind (random, subnormal, NaN, inf),
  // i32 and bool values to cast.
  {
    std::vector<std::uint32_t> bits(static_cast<std::size_t>(small ? 4096 : 1 << 20));
    std::uint64_t s = 77;
    for (auto& b : bits) b = static_cast<std::uint32_t>(next(s) >> 21);
    bits[0] = 0x7f800000u, bits[1] = 0xff800000u, bits[2] = 0x7fc00001u, bits[3] = 0x00000001u, bits[4] = 0x80000000u;
    std::vector<float> f(bits.size());
    for (std::size_t k = 0; k < bits.size(); ++k) f[k] = std::bit_cast<float>(bits[k]);
    in.push_back(aj::from_vector(f).eval());
    in.push_back(random_array(DType::i32, {N}, 5000, Fill{2147483647}));
    in.push_back(random_array(DType::bool_, {N}, 5001));
  }
  const std::size_t shared = in.size(), per = 10;
  std::uint64_t seed = 5100;
  for (DType t : {DType::f16, DType::bf16}) {
    const std::uint32_t inf_bits = t == DType::f16 ? 0x7c00 : 0x7f80;
    const int digits = t == DType::f16 ? 11 : 8;
    auto [d, f] = t == DType::f16 ? probes<aj::f16>(inf_bits, step) : probes<aj::bf16>(inf_bits, step);
    const auto ip = t == DType::f16 ? integer_probes<aj::f16>(inf_bits, digits, step) : integer_probes<aj::bf16>(inf_bits, digits, step);
    in.push_back(random_array(t, {N}, seed++, Fill{6, false, 31}));  // x: math operands with NaN, +-0, +-inf
    in.push_back(random_array(t, {N}, seed++, Fill{6}));             // y
    in.push_back(random_array(t, {M, Kd}, seed++, Fill{8, true}));   // quarters: f32 sums exact in any order
    in.push_back(random_array(t, {Kd, P}, seed++, Fill{8, true}));
    in.push_back(random_array(t, {3, 1, 37, 9}, seed++, Fill{4, true}));
    in.push_back(random_array(t, {4, 9, 70}, seed++, Fill{4, true}));
    in.push_back(all_patterns(t));
    in.push_back(aj::from_vector(d).eval());
    in.push_back(aj::from_vector(f).eval());
    in.push_back(aj::from_vector(ip).eval());
  }
  using U = Array (*)(const aj::Operand&);
  using B = Array (*)(const aj::Operand&, const aj::Operand&);
  // Math with few-ulp f32 implementations on both sides (CUDA's and the
  // host's), rounded once to the half (halves compute with the f32
  // functions; the random-graph GPU test covers those).
  const std::vector<std::pair<const char*, U>> unary = {
      {"negative", aj::negative}, {"abs", aj::abs},   {"sign", aj::sign}, {"floor", aj::floor}, {"round", aj::round},
      {"exp", aj::exp},           {"log", aj::log},   {"log1p", aj::log1p}, {"expm1", aj::expm1}, {"sin", aj::sin},
      {"cos", aj::cos},           {"tanh", aj::tanh}, {"sqrt", aj::sqrt}, {"rsqrt", aj::rsqrt}, {"sigmoid", aj::sigmoid},
      {"erf", aj::erf}};
  const std::vector<std::pair<const char*, B>> binary = {
      {"add", aj::add},         {"subtract", aj::subtract}, {"multiply", aj::multiply}, {"divide", aj::divide},
      {"mod", aj::mod},         {"maximum", aj::maximum},   {"minimum", aj::minimum},   {"pow", aj::pow},
      {"arctan2", aj::arctan2}, {"hypot", aj::hypot},       {"copysign", aj::copysign}, {"logaddexp", aj::logaddexp}};
  Ops ops = [&](const std::vector<Array>& v, bool) {
    std::vector<Result> r;
    const Array &f32bits = v[0], &ints = v[1], &bools = v[2];
    const DType halves[] = {DType::f16, DType::bf16};
    for (std::size_t k = 0; k < 2; ++k) {
      const DType t = halves[k], other = halves[1 - k];
      const std::size_t b = shared + k * per;
      const Array &x = v[b], &y = v[b + 1], &q = v[b + 2], &w = v[b + 3], &b1 = v[b + 4], &b2 = v[b + 5];
      const Array &pats = v[b + 6], &f64p = v[b + 7], &f32p = v[b + 8], &i64p = v[b + 9];
      const double u = ulp_rel(t);
      const double tiny = t == DType::f16 ? 0x1p-24 : 0x1p-133;  // the smallest subnormal
      const Cmp math = within(u, tiny);
      auto add = [&](const std::string& what, const Array& z, Cmp c = kExact) { r.push_back({name(t, what), z, c}); };
      // Through reversed views: the kernels' scalar path only (a vector
      // path would repeat every function 8 times: seconds of NVRTC per
      // kernel of f16 conversions).
      const Array xr = aj::slice(x, 0, std::nullopt, std::nullopt, -1), yr = aj::slice(y, 0, std::nullopt, std::nullopt, -1);
      for (auto& [n, f] : unary) add(n, f(xr), math);
      for (auto& [n, f] : binary) add(n, f(xr, yr), math);
      add("where", aj::where(x < y, x, y * 0.5), math);
      add("comparisons", (x == y) || (x >= y * 2));
      add("x < y", x < y);
      add("times a scalar", x * 3.0, math);
      // Casts: exact both ways (the f32 value of a half, rounded once).
      for (DType to : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64, other}) {
        add(std::string("every pattern to ") + aj::dtype_name(to), pats.astype(to));
      }
      add("f64 at rounding boundaries", f64p.astype(t));
      add("f32 at rounding boundaries", f32p.astype(t));
      add("f32 bit patterns", f32bits.astype(t));
      add("i64 at rounding boundaries", i64p.astype(t));
      add("i32", ints.astype(t));
      add("bool", bools.astype(t));
      add("every pattern, strided, reversed", aj::slice(pats, 0, std::nullopt, std::nullopt, -3).astype(DType::f32));
      // Reductions accumulate in f32 and round once (quarters: the f32 sums
      // are exact in any order; a margin of one ulp for mean's division).
      const Cmp red = within(u, tiny);
      add("sum rows", aj::sum(q, 1), red);
      add("sum columns", aj::sum(q, 0), red);
      add("sum all", aj::sum(q), red);
      add("sum with NaN", aj::sum(x), red);
      add("mean rows", aj::mean(q, 1), red);
      add("max columns", aj::max(q, 0));
      add("min rows of the transpose", aj::min(q.T(), 1));
      add("prod of 7", aj::prod(aj::slice(q, 1, 0, 7), 1), red);
      add("argmax rows", aj::argmax(q, 1));
      add("argmin columns", aj::argmin(q, 0));
      add("softmax rows", aj::softmax(q / 4, 1), within(2 * u, 2 * tiny));
      add("matmul", aj::matmul(q, w), red);
      add("matmul of transposed operands", aj::matmul(w.T(), q.T()), red);
      add("matmul, broadcast batches", aj::matmul(b1, b2), red);
      add("matmul, mixed with f32", aj::matmul(q, w.astype(DType::f32)), within(1e-6, 1e-6));
    }
    return r;
  };
  compare_on_device("f16 and bf16", in, ops);
}

// ---- random arrays made on the device ------------------------------------------

void check_random(bool small) {
  const std::int64_t N = small ? 3000 : 1 << 20, P = small ? 2000 : 100000;
  std::vector<Array> in{random_array(DType::f32, {small ? 50 : 5000, 3}, 6000)};
  Ops ops = [&](const std::vector<Array>& v, bool device) {
    // The same seed and sequence of random arrays on both sides: the same
    // counters, so the same bits.
    aj::random::seed(424242);
    std::vector<Result> r;
    auto add = [&](const std::string& what, const Array& x, Cmp c = kExact) {
      r.push_back({what, device ? x.to(Device::cuda(0)) : x, c});
    };
    // uniform: a linear map of the bits (a margin of an ulp); normal and the
    // others: log, cos, ndtri of two math libraries.
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      add(name(t, "uniform"), aj::random::uniform({N}, -2, 3, t), within(ulp_rel(t), ulp_rel(t)));
      const double m = t == DType::f64 ? 1e-13 : t == DType::f32 ? 1e-5 : 2 * ulp_rel(t);
      add(name(t, "normal"), aj::random::normal({N}, 1, 2, t), within(m, m));
    }
    add("randint i64", aj::random::randint({N}, -1000000000000LL, 1000000000000LL));
    add("randint i32", aj::random::randint({N / 3, 3}, 0, 7, DType::i32));
    add("bernoulli", aj::random::bernoulli({N}, 0.3));
    add("permutation (a device sort of random keys)", aj::random::permutation(P));
    add("exponential", aj::random::exponential({N}, 2.0), within(1e-5, 1e-5));
    add("gumbel", aj::random::gumbel({N}, 0.5, 2.0, DType::f64), within(1e-12, 1e-12));
    // shuffle reads an input: already on the device there.
    r.push_back({"shuffle rows", aj::random::shuffle(v[0], 0), kExact});
    return r;
  };
  compare_on_device("random arrays", in, ops);
}

// A "cuda fake driver:" case: `check` at small sizes through the fake driver
// with kernels run on the host emulator.
void on_fake_gpu(void (*check)(bool)) {
  if (!ajtest::fake_cuda::have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  FakeGpu gpu;
  {
    FakeScope scope(gpu);
    check(true);
  }
  CHECK(ajtest::fake_cuda::fake().live == 0);  // every device buffer was freed
}

}  // namespace

// ---- on a GPU ---------------------------------------------------------------------

TEST_CASE("cuda gpu: sort, argsort, topk and partition match the host (every dtype, NaN, signed zeros, ties, lines of 1 to 100000, strided lines)") {
  if (skip_without_gpu()) return;
  check_sorts(false);
}

TEST_CASE("cuda gpu: cumsum, cumprod, cummax, cummin and logcumsumexp match the host (every dtype, rows, columns, middle axis, 100000 long, NaN)") {
  if (skip_without_gpu()) return;
  check_scans(false);
}

TEST_CASE("cuda gpu: scatter, scatter_add and the along-axis forms match the host (every dtype, duplicates, out of range, strided, in place)") {
  if (skip_without_gpu()) return;
  check_scatters(false);
}

TEST_CASE("cuda gpu: take, take_along_axis, one_hot, pads, rolls and slice updates match the host (every dtype, clamped indices)") {
  if (skip_without_gpu()) return;
  check_gathers_pads(false);
}

TEST_CASE("cuda gpu: f16 and bf16 math, casts at every rounding boundary, reductions and matmul match the host") {
  if (skip_without_gpu()) return;
  check_half_dtypes(false);
}

TEST_CASE("cuda gpu: random arrays made on the device equal the host's (uniform, normal, randint, bernoulli, permutation, shuffle)") {
  if (skip_without_gpu()) return;
  check_random(false);
}

// ---- the same checks through the fake driver, small --------------------------------

TEST_CASE("cuda fake driver: sort, argsort, topk and partition match the host (the GPU tier's checks, small)") {
  on_fake_gpu(check_sorts);
}

TEST_CASE("cuda fake driver: scans match the host (the GPU tier's checks, small)") { on_fake_gpu(check_scans); }

TEST_CASE("cuda fake driver: scatters match the host (the GPU tier's checks, small)") { on_fake_gpu(check_scatters); }

TEST_CASE("cuda fake driver: gathers, one_hot, pads, rolls and slice updates match the host (the GPU tier's checks, small)") {
  on_fake_gpu(check_gathers_pads);
}

TEST_CASE("cuda fake driver: f16 and bf16 match the host (the GPU tier's checks, small)") { on_fake_gpu(check_half_dtypes); }

TEST_CASE("cuda fake driver: random arrays made on the device equal the host's (the GPU tier's checks, small)") {
  on_fake_gpu(check_random);
}


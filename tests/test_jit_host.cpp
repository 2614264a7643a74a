// The host JIT (jit/llvm) against the kernel interpreter, which computes every
// scalar with the reference semantics: every op x dtype on edge values, every
// reduction in both layouts, the kernel cache (memory and disk, across
// processes), threads, and the IR dump.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "core/api/executor.hpp"
#include "graph/kernel.hpp"
#include "jit/disk_cache.hpp"

namespace {

using aj::DType;
using aj::KInstr;
using aj::KOp;
using aj::Op;

constexpr const auto& kDTypes = aj::kAllDTypes;  // every row of dtypes.def

// Values of every dtype as doubles / int64s, converted when stored.
std::vector<double> float_values() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.25, nan, inf, -inf,
                           1e30, -1e30, 3e9, -3e9, 2147483648.0, -2147483649.0, 9.3e18, -9.3e18,
                           1e-310, 5e-324, 0.1, 88.0, -100.0, 710.0, 1e-8, 3.14159};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> d(-10, 10);
  while (v.size() < 101) v.push_back(d(rng));
  return v;
}
std::vector<std::int64_t> int_values() {
  std::vector<std::int64_t> v = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 31, 62,
                                 std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                                 std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> d(-50, 50);
  while (v.size() < 101) v.push_back(d(rng));
  return v;
}

// A buffer of n elements of dtype t (8 bytes per slot: any dtype fits).
struct Buf {
  DType t;
  std::vector<std::uint64_t> mem;
  Buf(DType t, std::size_t n) : t(t), mem(n + 1, 0) {}
  void* data() { return mem.data(); }
  void set(std::size_t i, double f, std::int64_t k) {
    auto* p = mem.data();
    switch (t) {
      case DType::bool_: reinterpret_cast<std::uint8_t*>(p)[i] = k != 0; break;
      case DType::i32: reinterpret_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(k); break;
      case DType::i64: reinterpret_cast<std::int64_t*>(p)[i] = k; break;
      case DType::f32: reinterpret_cast<float*>(p)[i] = static_cast<float>(f); break;
      case DType::f64: reinterpret_cast<double*>(p)[i] = f; break;
      case DType::f16: reinterpret_cast<aj::f16*>(p)[i] = aj::f16(f); break;
      case DType::bf16: reinterpret_cast<aj::bf16*>(p)[i] = aj::bf16(f); break;
      case DType::u8: reinterpret_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(k); break;
      case DType::i8: reinterpret_cast<std::int8_t*>(p)[i] = static_cast<std::int8_t>(k); break;
      case DType::i16: reinterpret_cast<std::int16_t*>(p)[i] = static_cast<std::int16_t>(k); break;
      case DType::u16: reinterpret_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(k); break;
      case DType::u32: reinterpret_cast<std::uint32_t*>(p)[i] = static_cast<std::uint32_t>(k); break;
      case DType::u64: reinterpret_cast<std::uint64_t*>(p)[i] = static_cast<std::uint64_t>(k); break;
    }
  }
  double get(std::size_t i) const {
    const auto* p = mem.data();
    switch (t) {
      case DType::bool_: return reinterpret_cast<const std::uint8_t*>(p)[i];
      case DType::i32: return reinterpret_cast<const std::int32_t*>(p)[i];
      case DType::i64: return static_cast<double>(reinterpret_cast<const std::int64_t*>(p)[i]);
      case DType::f32: return reinterpret_cast<const float*>(p)[i];
      case DType::f64: return reinterpret_cast<const double*>(p)[i];
      case DType::f16: return static_cast<double>(reinterpret_cast<const aj::f16*>(p)[i]);
      case DType::bf16: return static_cast<double>(reinterpret_cast<const aj::bf16*>(p)[i]);
      case DType::u8: return reinterpret_cast<const std::uint8_t*>(p)[i];
      case DType::i8: return reinterpret_cast<const std::int8_t*>(p)[i];
      case DType::i16: return reinterpret_cast<const std::int16_t*>(p)[i];
      case DType::u16: return reinterpret_cast<const std::uint16_t*>(p)[i];
      case DType::u32: return reinterpret_cast<const std::uint32_t*>(p)[i];
      case DType::u64: return static_cast<double>(reinterpret_cast<const std::uint64_t*>(p)[i]);
    }
    return 0;
  }
  std::int64_t bits(std::size_t i) const {
    const auto* p = mem.data();
    if (t == DType::i64 || t == DType::u64) return reinterpret_cast<const std::int64_t*>(p)[i];
    if (t == DType::f64) {
      std::int64_t b;
      std::memcpy(&b, reinterpret_cast<const double*>(p) + i, 8);
      return b;
    }
    if (t == DType::f32) {
      std::int32_t b;
      std::memcpy(&b, reinterpret_cast<const float*>(p) + i, 4);
      return b;
    }
    if (aj::is_half(t)) return reinterpret_cast<const std::uint16_t*>(p)[i];
    return static_cast<std::int64_t>(get(i));
  }
};

Buf fill(DType t, std::size_t n, unsigned shift) {
  Buf b(t, n);
  auto f = float_values();
  auto k = int_values();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = (i * 7 + shift) % f.size();  // every pair of specials meets some time
    b.set(i, f[j], t == DType::bool_ ? static_cast<std::int64_t>((i + shift) % 3 == 0) : k[(i * 5 + shift) % k.size()]);
  }
  return b;
}

// Distance in units in the last place (0 for equal, huge across signs).
double ulps(double a, double b, DType t) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : 1e300;
  if (a == b) return 0;
  if (aj::is_half(t)) {  // in the half's own ulps (a few f32 ulps of a math function may move it one)
    auto pattern = [&](double v) {
      const int b16 = t == DType::f16 ? aj::f16(v).bits : aj::bf16(v).bits;
      return b16 & 0x8000 ? -(b16 & 0x7fff) : b16;
    };
    return std::fabs(static_cast<double>(pattern(a) - pattern(b)));
  }
  if (std::isinf(a) || std::isinf(b)) return 1e300;
  const double eps = t == DType::f32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
  double x = a, y = b;
  if (t == DType::f32) {
    float fa = static_cast<float>(a), fb = static_cast<float>(b);
    std::int32_t ia, ib;
    std::memcpy(&ia, &fa, 4);
    std::memcpy(&ib, &fb, 4);
    if ((ia < 0) != (ib < 0)) return std::fabs(x - y) / eps;
    return static_cast<double>(ia > ib ? ia - ib : ib - ia);
  }
  std::int64_t ia, ib;
  std::memcpy(&ia, &x, 8);
  std::memcpy(&ib, &y, 8);
  if ((ia < 0) != (ib < 0)) return std::fabs(x - y) / eps;
  // Subtract as integers: as doubles, bit patterns near 2^62 round to 512s.
  return static_cast<double>(ia > ib ? ia - ib : ib - ia);
}

// The ops whose values come from a math library function (arrayjit/ops.def's
// libm columns: exp, ..., pow, and sigmoid, computed with exp): within 4 ulp
// of the reference, not bit-identical (docs/semantics.md).
std::vector<Op> math_ops() {
  std::vector<Op> ops;
  for (int o = 0; o < aj::kNumOps; ++o) {
    if (aj::op_calls_libm(static_cast<Op>(o))) ops.push_back(static_cast<Op>(o));
  }
  return ops;
}

// The ops whose result can cancel to near 0 from terms of a larger size:
// digamma below 0 (psi(1 - x) against pi cot(pi x), both about log|x|),
// lgamma near its zeros (1, 2, and one between each pair of poles below 0)
// and logaddexp (max(a, b) against log1p(e^-|a - b|)). Their distance is
// also accepted in ulps of that size rather than of the result
// (docs/semantics.md, "Special functions"); 0 for every other op.
double cancel_scale(Op op, const std::vector<Buf>& ins, std::size_t i) {
  switch (op) {
    case Op::Digamma:
    case Op::Lgamma: return std::log1p(std::fabs(ins[0].get(i))) + 1;
    case Op::Logaddexp:
    case Op::Logaddexp2: return std::max({1.0, std::fabs(ins[0].get(i)), std::fabs(ins[1].get(i))});
    default: return 0;
  }
}

// Run k through the interpreter and the JIT on the same inputs; compare.
// Half arithmetic is widened first, as lowering does (graph/kernel.hpp).
void check_kernel(aj::Kernel k, std::vector<Buf>& ins, std::size_t n, bool math) {
  aj::widen_halves(k);
  std::vector<const void*> in_ptrs;
  for (auto& b : ins) in_ptrs.push_back(b.data());
  const DType ot = k.outputs[0].stream.dtype;
  Buf want(ot, n), got(ot, n);
  aj::cpu::run_kernel(k, in_ptrs, {want.data()});
  aj::cpu::run_kernel_compiled(k, in_ptrs, {got.data()});
  int bad = 0;
  for (std::size_t i = 0; i < n && bad < 4; ++i) {
    const double w = want.get(i), g = got.get(i);
    const double eps = ot == DType::f64 ? DBL_EPSILON : FLT_EPSILON;
    const double scale = cancel_scale(k.instrs.back().op, ins, i);
    const bool same = math && aj::is_float(ot) ? ulps(w, g, ot) <= 4 || std::fabs(g - w) <= 4 * eps * scale
                      : aj::is_float(ot) && std::isnan(w) ? std::isnan(g)
                                                          : want.bits(i) == got.bits(i);
    if (!same) {
      ++bad;
      std::string args;
      char num[40];
      for (auto& b : ins) args += (std::snprintf(num, sizeof num, "%.17g ", b.get(i)), num);
      FAIL_CHECK(aj::dump(k) << "element " << i << " of (" << args << "): jit " << std::to_string(g) << ", interpreter " << std::to_string(w) << " (" << ulps(w, g, ot) << " ulp)");
    }
  }
}

aj::Kernel elementwise(std::vector<DType> in_types, KInstr op, std::int64_t n) {
  aj::Kernel k;
  k.shape = {n};
  for (std::size_t i = 0; i < in_types.size(); ++i) {
    k.inputs.push_back({in_types[i], {1}, 0, false});
    k.instrs.push_back({KOp::Load, Op::Input, in_types[i], 0, -1, -1, -1, static_cast<std::int32_t>(i)});
  }
  k.instrs.push_back(op);
  aj::KOutput o;
  o.value = static_cast<std::int32_t>(k.instrs.size() - 1);
  o.stream = {op.dtype, {1}, 0, false};
  k.outputs.push_back(o);
  return k;
}

constexpr std::int64_t kN = 203;  // vector body plus a tail

// The JIT on for a scope (these tests count compiles even under AJ_JIT=0).
struct JitOn {
  bool saved = aj::jit::enabled();
  JitOn() { aj::jit::set_enabled(true); }
  ~JitOn() { aj::jit::set_enabled(saved); }
};

}  // namespace

TEST_SUITE("jit_host") {

TEST_CASE("every unary op and cast of every dtype agrees with the kernel interpreter") {
  for (int o = 0; o < aj::kNumOps; ++o) {
    const Op op = static_cast<Op>(o);
    if (aj::op_category(op) != aj::OpCategory::Unary) continue;
    for (DType t : kDTypes) {
      std::vector<DType> targets = {t};
      if (op == Op::Cast) targets.assign(std::begin(kDTypes), std::end(kDTypes));
      for (DType to : targets) {
        CAPTURE(std::string(aj::op_name(op)));
        CAPTURE(std::string(aj::dtype_name(t)));
        CAPTURE(std::string(aj::dtype_name(to)));
        auto k = elementwise({t}, {KOp::Unary, op, to, 0, 0, -1, -1, -1}, kN);
        std::vector<Buf> ins{fill(t, kN, 0)};
        check_kernel(k, ins, kN, aj::op_calls_libm(op));
      }
    }
  }
}

TEST_CASE("math functions are within 4 ulp of the reference over random inputs of every magnitude") {
  const std::int64_t n = 20000;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> mant(-1, 1), expo(-30, 30);
  for (Op op : math_ops()) {
    for (DType t : {DType::f32, DType::f64}) {
      CAPTURE(std::string(aj::op_name(op)));
      CAPTURE(std::string(aj::dtype_name(t)));
      const bool binary = aj::op_info(op).arity == 2, pow = op == Op::Pow;
      auto k = binary ? elementwise({t, t}, {KOp::Binary, op, t, 0, 0, 1, -1, -1}, n)
                      : elementwise({t}, {KOp::Unary, op, t, 0, 0, -1, -1, -1}, n);
      std::vector<Buf> ins{Buf(t, n), Buf(t, n)};
      for (std::int64_t i = 0; i < n; ++i) {
        const double m = mant(rng), e = std::exp2(expo(rng) * (op == Op::Exp || op == Op::Expm1 ? 0.2 : 1.0));
        ins[0].set(static_cast<std::size_t>(i), pow ? std::fabs(m) * e : m * e, 0);
        ins[1].set(static_cast<std::size_t>(i), mant(rng) * 8, 0);
      }
      if (!binary) ins.pop_back();
      check_kernel(k, ins, static_cast<std::size_t>(n), true);
    }
  }
}

TEST_CASE("a math function gives the same bits for a value wherever it is: vector body, vector tail, scalar") {
  // The loop vectorizer calls SLEEF's 16-, 8- and 4-lane functions and the
  // scalar one for the last elements; they are bound to one deterministic
  // family (runtime_symbols.hpp). Each value is computed at an offset of a
  // 203-element kernel and again as a kernel of one element, one point.
  const std::int64_t n = 203;
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> d(-3, 3);
  for (Op op : math_ops()) {
    for (DType t : {DType::f32, DType::f64}) {
      CAPTURE(std::string(aj::op_name(op)));
      CAPTURE(std::string(aj::dtype_name(t)));
      const bool binary = aj::op_info(op).arity == 2, positive = op == Op::Pow || op == Op::Log || op == Op::Log2 || op == Op::Log10;  // NaN's bits vary
      auto kernel = [&](std::int64_t len) {
        return binary ? elementwise({t, t}, {KOp::Binary, op, t, 0, 0, 1, -1, -1}, len)
                      : elementwise({t}, {KOp::Unary, op, t, 0, 0, -1, -1, -1}, len);
      };
      std::vector<Buf> ins{Buf(t, n), Buf(t, n)};
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        ins[0].set(i, positive ? std::fabs(d(rng)) + 0.01 : d(rng), 0);
        ins[1].set(i, d(rng), 0);
      }
      Buf all(t, n);
      aj::cpu::run_kernel_compiled(kernel(n), {ins[0].data(), ins[1].data()}, {all.data()});
      const aj::Kernel one = kernel(1);
      int same = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        Buf a(t, 1), b(t, 1), r(t, 1);
        a.set(0, ins[0].get(i), 0);
        b.set(0, ins[1].get(i), 0);
        aj::cpu::run_kernel_compiled(one, {a.data(), b.data()}, {r.data()});
        same += r.bits(0) == all.bits(i);
      }
      CHECK(same == n);
    }
  }
}

TEST_CASE("every binary op and where of every dtype agrees (division by zero, MIN / -1, NaN in max/min)") {
  for (int o = 0; o < aj::kNumOps; ++o) {
    const Op op = static_cast<Op>(o);
    if (aj::op_category(op) != aj::OpCategory::Binary) continue;
    for (DType t : kDTypes) {
      CAPTURE(std::string(aj::op_name(op)));
      CAPTURE(std::string(aj::dtype_name(t)));
      const DType rt = aj::is_compare(op) ? DType::bool_ : t;
      auto k = elementwise({t, t}, {KOp::Binary, op, rt, 0, 0, 1, -1, -1}, kN);
      for (unsigned shift : {0u, 3u, 13u}) {
        std::vector<Buf> ins{fill(t, kN, 0), fill(t, kN, shift)};
        check_kernel(k, ins, kN, aj::op_calls_libm(op));
      }
    }
  }
  for (DType t : kDTypes) {
    auto k = elementwise({DType::bool_, t, t}, {KOp::Where, Op::Where, t, 0, 0, 1, 2, -1}, kN);
    std::vector<Buf> ins{fill(DType::bool_, kN, 1), fill(t, kN, 0), fill(t, kN, 5)};
    check_kernel(k, ins, kN, false);
  }
}

TEST_CASE("reductions of every kind agree in both layouts, empty axes and rank 0 included") {
  using aj::Array;
  using aj::detail::Executor;
  using aj::detail::ExecutorScope;
  auto run = [](Executor ex, DType t, int which, aj::Shape shape, aj::Axes axes) {
    ExecutorScope s(ex);
    std::vector<double> data(static_cast<std::size_t>(shape.numel()));
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> d(-4, 4);
    for (auto& x : data) x = which == 1 ? 1.0 + d(rng) / 64 : d(rng);  // products stay finite
    if (data.size() > 5) data[5] = std::nan("");  // NaN propagates through max/min
    Array x = aj::from_vector(data, shape).astype(t);
    if (t == DType::bool_ || aj::is_integer(t)) x = aj::from_vector(data, shape).astype(DType::i32).astype(t);
    Array r = which == 0 ? aj::sum(x, axes) : which == 1 ? aj::prod(x, axes) : which == 2 ? aj::max(x, axes)
              : which == 3 ? aj::min(x, axes) : which == 4 ? aj::all(x, axes) : aj::any(x, axes);
    return r.astype(DType::f64).to_vector<double>();
  };
  struct Case { aj::Shape shape; aj::Axes axes; };
  const Case cases[] = {{{37, 129}, 1}, {{129, 37}, 0}, {{5, 7, 300}, {0, 2}}, {{300, 3, 4}, {0, 1}},
                        {{1000}, aj::Axes::all()}, {{6, 0}, 1}, {{0, 6}, 0}, {{4, 5}, {0, 1}}};
  for (DType t : kDTypes) {
    for (int which = 0; which < 6; ++which) {
      for (const Case& c : cases) {
        const bool empty = c.shape.numel() == 0;
        if (empty && (which == 2 || which == 3)) continue;  // max/min of nothing: a trace-time error
        if (t == DType::bool_ && which < 2) continue;       // sum/prod of bool promote
        CAPTURE(std::string(aj::dtype_name(t)));
        CAPTURE(which);
        CAPTURE(c.shape.str());
        auto want = run(Executor::reference, t, which, c.shape, c.axes);
        auto got = run(Executor::optimized, t, which, c.shape, c.axes);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (std::isnan(want[i])) {
            CHECK(std::isnan(got[i]));
          } else if (aj::is_float(t) && which < 2) {  // sums may reassociate (then round to a half)
            CHECK(std::fabs(got[i] - want[i]) <= (aj::is_half(t) ? 1e-2 : 1e-4) * (1 + std::fabs(want[i])));
          } else {
            CHECK(got[i] == want[i]);
          }
        }
      }
    }
  }
  // Rank 0 and empty elementwise kernels.
  CHECK((aj::full({}, 2.5, DType::f64) * 2.0 + 1.0).item<double>() == 6.0);
  CHECK((aj::zeros({0, 3}, DType::f32) + 1.0f).to_vector<float>().empty());
}

TEST_CASE("strided, broadcast, transposed, reversed and size-1 layouts agree exactly") {
  using aj::detail::Executor;
  using aj::detail::ExecutorScope;
  auto make = [] {
    std::vector<double> d(24 * 30);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<double>(i % 97) * 0.25 - 7;
    aj::Array x = aj::from_vector(d, {24, 30});
    aj::Array row = aj::slice(x, {aj::Slice(3, 4)});                      // [1, 30]
    aj::Array rev = aj::slice(x, {aj::Slice(std::nullopt, std::nullopt, -1)});  // reversed rows
    aj::Array t = x.transpose().reshape({30, 24, 1});
    aj::Array cols = aj::slice(x, {aj::Slice(), aj::Slice(1, 30, 3)});      // every third column
    return std::vector<aj::Array>{x * 2.0 + row, rev - x, t * 0.5 + 1.0, cols * cols,
                                  aj::sum(t, 1), aj::max(cols, 0), aj::sum(rev.reshape({24, 30, 1}), {0, 2}),
                                  (x + 1.0).reshape({4, 6, 5, 6}) * 3.0};
  };
  std::vector<aj::Array> want, got;
  {
    ExecutorScope s(Executor::reference);
    want = make();
    aj::eval(want);
  }
  got = make();
  aj::eval(got);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].shape() == want[i].shape());
    CHECK(got[i].to_vector<double>() == want[i].to_vector<double>());  // sums of quarters: exact
  }
}

TEST_CASE("generators (iota, linspace, eye, random) agree with the reference") {
  using aj::detail::Executor;
  using aj::detail::ExecutorScope;
  auto make = [] {
    return std::vector<aj::Array>{aj::arange(0.5, 40.0, 1.5, DType::f64) * 2.0,
                                  aj::linspace(-1.0, 1.0, 33, DType::f32) + 0.0f,
                                  aj::eye(9, 7, 1, DType::i32) + 1,
                                  aj::arange(std::int64_t{50}) * 3};
  };
  std::vector<aj::Array> want, got;
  {
    ExecutorScope s(Executor::reference);
    want = make();
    aj::eval(want);
  }
  got = make();
  aj::eval(got);
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].astype(DType::f64).to_vector<double>() == want[i].astype(DType::f64).to_vector<double>());
  }
}

TEST_CASE("changing a scalar or an extent does not recompile") {
  JitOn on;
  aj::jit::clear_memory_cache();
  aj::Array p = aj::from_vector(std::vector<float>(1000, 1.0f));
  auto step = [&](int i) {
    const float lr = 0.1f / static_cast<float>(i + 1);  // a new learning rate every step
    p = p - lr * (p * 2.0f);
    p.eval();
  };
  step(0);  // the first steps settle the layout: a fresh buffer, then in place
  step(1);
  aj::reset_stats();
  for (int i = 2; i < 7; ++i) step(i);
  const auto s1 = aj::stats();
  CHECK(s1.kernels_compiled + s1.kernel_disk_hits == 0);
  CHECK(s1.kernel_cache_hits == 5);
  CHECK(s1.inplace_reuses == 5);
  for (std::int64_t n = 100; n < 4000; n += 250) {  // growing sizes
    aj::Array x = aj::full({n}, 2.0, DType::f64);
    aj::Array y = x * 3.0 + 1.0;
    CHECK(y.to_vector<double>()[static_cast<std::size_t>(n - 1)] == 7.0);
  }
  const auto s2 = aj::stats();
  CHECK(s2.kernels_compiled + s2.kernel_disk_hits - s1.kernels_compiled - s1.kernel_disk_hits == 1);
}

TEST_CASE("large kernels split over threads give the same result as one thread") {
  auto run = [](int threads) {
    aj::jit::set_num_threads(threads);
    aj::Array x = aj::arange(0.0, 1 << 18, 1.0, DType::f64).reshape({512, 512});
    aj::Array y = aj::sum(aj::sin(x) * 2.0 + x, 1) + aj::sum(x * 0.5, 0);
    auto v = y.to_vector<double>();
    aj::jit::set_num_threads(0);
    return v;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("reductions to fewer outputs than threads split over the reduced range and match the reference") {
  JitOn jit;
  const std::int64_t n = 300007;  // not a multiple of any part count
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> d(-2.0, 2.0);
  std::vector<double> xs(static_cast<std::size_t>(n));
  for (auto& v : xs) v = d(rng);
  xs[12345] = std::nan("");  // max/min must propagate it from whichever part holds it
  std::vector<double> cols(static_cast<std::size_t>(n / 7 * 3));
  for (auto& v : cols) v = d(rng);
  aj::Array x = aj::from_vector(xs);
  aj::Array xn = aj::from_vector(std::vector<double>(xs.begin(), xs.begin() + 12000));  // no NaN
  aj::Array m = aj::from_vector(cols, {n / 7, 3});
  aj::Array b = aj::from_vector(std::vector<double>{0.5, -1.0, 2.0});
  // Each case: the arrays, traced again for every run.
  auto cases = [&] {
    aj::Array xc = aj::where(x != x, 0.0, x);
    aj::Array ints = (xc * 1000.0).astype(DType::i32);
    return std::vector<aj::Array>{
        aj::sum(xc),                                          // whole array
        aj::sqrt(aj::sum(xc * xc)) / static_cast<double>(n) + 1.0,  // an epilogue
        aj::max(x), aj::min(x),                               // NaN propagates
        aj::prod(1.0 + xn * 1e-4),                            // float product
        aj::sum(ints), aj::sum(ints.astype(DType::i64) * 3000000), // exact integers (i64 wraps)
        aj::all(xc > -1.9), aj::any(xc > 1.99999),            // logical
        aj::sum(m, 0) + b,                                    // 3 outputs, epilogue load over outer axes
        aj::mean(m * 2.0, 0),
    };
  };
  std::vector<aj::Array> want;
  {
    aj::detail::ExecutorScope ref(aj::detail::Executor::reference);
    want = cases();
    aj::eval(want);
  }
  for (int threads : {1, 2, 3, 4, 8}) {
    CAPTURE(threads);
    aj::jit::set_num_threads(threads);
    std::vector<aj::Array> got = cases();
    aj::eval(got);
    std::vector<aj::Array> again = cases();
    aj::eval(again);
    aj::jit::set_num_threads(0);
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      auto g = got[i].astype(DType::f64).to_vector<double>();
      auto w = want[i].astype(DType::f64).to_vector<double>();
      auto a = again[i].astype(DType::f64).to_vector<double>();
      REQUIRE(g.size() == w.size());
      for (std::size_t k = 0; k < g.size(); ++k) {
        if (std::isnan(w[k])) {
          CHECK(std::isnan(g[k]));
          continue;
        }
        const bool exact = got[i].dtype() != DType::f64 && got[i].dtype() != DType::f32;
        if (exact || i == 2 || i == 3) CHECK(g[k] == w[k]);
        else CHECK(std::fabs(g[k] - w[k]) <= 1e-9 * (1.0 + std::fabs(w[k])));
        CHECK(std::memcmp(&g[k], &a[k], sizeof(double)) == 0);  // the same bits every call
      }
    }
  }
  // The split really happens: a partial and a finish kernel are looked up
  // (compiled or found) instead of one.
  auto lookups = [] {
    auto s = aj::stats();
    return s.kernels_compiled + s.kernel_cache_hits + s.kernel_disk_hits;
  };
  for (int threads : {1, 4}) {
    aj::jit::set_num_threads(threads);
    aj::Array y = aj::sum(x * 3.0 - 1.0);
    const auto before = lookups();
    y.eval();
    CHECK(lookups() - before == (threads == 1 ? 1u : 2u));
    aj::jit::set_num_threads(0);
  }
}

TEST_CASE("a kernel over a reduced space with no accumulator compiles and agrees, on both layouts") {
  // Fusion can leave a kernel whose space has reduce axes but whose outputs
  // are all phase 0 (the reduction it was grouped with went to another
  // kernel). The outer-axis layout once sized its block by the accumulator
  // bytes and never stopped growing it at zero.
  for (std::int64_t axis : {0, 1}) {
    CAPTURE(axis);
    aj::Kernel k;
    k.shape = {3, 20};
    k.reduce_axes = {axis};
    k.inputs.push_back({DType::f32, {20, 1}, 0, false});
    k.instrs.push_back({KOp::Load, Op::Input, DType::f32, 0, -1, -1, -1, 0});
    k.scalars.push_back({DType::f32, 0, 1.5});
    k.instrs.push_back({KOp::Const, Op::Constant, DType::f32, 0, -1, -1, -1, 0});
    k.instrs.push_back({KOp::Binary, Op::Mul, DType::f32, 0, 0, 1, -1, -1});
    aj::KOutput o;
    o.value = 2;
    o.stream = {DType::f32, {20, 1}, 0, false};
    k.outputs.push_back(o);
    std::vector<Buf> ins{Buf(DType::f32, 60)};
    std::mt19937 rng(11 + static_cast<unsigned>(axis));
    std::uniform_real_distribution<double> d(-3, 3);
    for (std::size_t i = 0; i < 60; ++i) ins[0].set(i, d(rng), 0);
    check_kernel(k, ins, 60, false);
    Buf got(DType::f32, 60);
    aj::cpu::run_kernel_compiled(k, {ins[0].data()}, {got.data()});
    int same = 0;
    for (std::size_t i = 0; i < 60; ++i) same += got.get(i) == static_cast<double>(static_cast<float>(ins[0].get(i)) * 1.5f);
    CHECK(same == 60);
  }
}

TEST_CASE("a kernel the code generator cannot take is an aj::Error, not a crash") {
  // A Reduce in an elementwise kernel breaks graph/kernel.hpp's rules.
  auto k = elementwise({DType::f64}, {KOp::Reduce, Op::Sum, DType::f64, 1, 0, -1, -1, -1}, 8);
  std::vector<double> in(8, 1.0), out(8, 0.0);
  CHECK_THROWS_AS(aj::cpu::run_kernel_compiled(k, {in.data()}, {out.data()}), aj::Error);
  // The JIT still works afterwards.
  CHECK((aj::from_vector(in) * 2.0).to_vector<double>()[0] == 2.0);
}

TEST_CASE("the thread pool: many large kernels in a row, every chunk exactly once") {
  aj::jit::set_num_threads(2);
  aj::Array x = aj::arange(0.0, 300000.0, 1.0, DType::f64);
  for (int i = 0; i < 200; ++i) {
    const double k = 1.0 + i % 7;
    auto v = (x * k + 1.0).to_vector<double>();  // 300,000 points: split over threads
    REQUIRE(v.size() == 300000);
    CHECK(v[0] == 1.0);
    CHECK(v[123457] == 123457.0 * k + 1.0);
    CHECK(v[299999] == 299999.0 * k + 1.0);
  }
  aj::jit::set_num_threads(0);
}

TEST_CASE("the LLVM IR of a kernel can be printed, and math is vectorized") {
  aj::Array x = aj::from_vector(std::vector<double>(4096, 0.5));
  std::string ir = aj::jit::kernel_ir(aj::exp(x) * 2.0);
  CHECK(ir.find("define void @aj_kernel") != std::string::npos);
  CHECK(ir.find("Sleef_exp") != std::string::npos);
  if (aj::jit::target_description().find("+avx512f") != std::string::npos) {
    CHECK(ir.find("Sleef_expd8_u10") != std::string::npos);
  }
  CHECK(aj::jit::kernel_ir(aj::sum(x) + 1.0, true).find("ret") != std::string::npos);
}

TEST_CASE("the disk cache: hits in a new process; corrupt entries are recompiled, never run") {
  JitOn on;
  namespace fs = std::filesystem;
  const std::string saved = aj::jit::cache_dir();
  const fs::path dir = fs::temp_directory_path() / ("aj_jit_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  aj::jit::set_cache_dir(dir.string());
  auto work = [] { return (aj::full({777}, 3.0, DType::f64) * 1.25 - 0.5).to_vector<double>()[0]; };
  aj::jit::clear_memory_cache();
  aj::reset_stats();
  CHECK(work() == 3.25);
  CHECK(aj::stats().kernels_compiled == 1);
  // In this process, after forgetting the compiled code: a disk hit.
  aj::jit::clear_memory_cache();
  CHECK(work() == 3.25);
  CHECK(aj::stats().kernel_disk_hits == 1);
  CHECK(aj::stats().kernels_compiled == 1);
  // A second process (this test binary, running only the helper test below).
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  exe[len] = 0;
  const std::string cmd = "AJ_JIT_CHILD_DIR='" + dir.string() + "' '" + exe +
                          "' --no-intro --no-version --test-case='jit child process*' > /dev/null 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
  // Corrupt every entry (flip a byte in the object code): detected, recompiled.
  int corrupted = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-20, std::ios::end);
    f.put('\x5a');
    ++corrupted;
  }
  CHECK(corrupted >= 1);
  aj::jit::clear_memory_cache();
  aj::reset_stats();
  CHECK(work() == 3.25);
  CHECK(aj::stats().kernel_disk_rejects == 1);
  CHECK(aj::stats().kernels_compiled == 1);
  // Truncated entries too.
  for (const auto& e : fs::directory_iterator(dir)) fs::resize_file(e.path(), 30);
  aj::jit::clear_memory_cache();
  aj::reset_stats();
  CHECK(work() == 3.25);
  CHECK(aj::stats().kernel_disk_rejects == 1);
  aj::jit::set_cache_dir(saved);
  fs::remove_all(dir);
}

TEST_CASE("disk cache entries: round trip, other keys and truncation are misses, trim keeps a limit") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aj_disk_unit_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  aj::jit::DiskCache c(dir.string());
  std::string got;
  CHECK(c.read("k1", &got) == aj::jit::DiskRead::missing);
  REQUIRE(c.write("k1", std::string("object\0code", 11)));
  CHECK(c.read("k1", &got) == aj::jit::DiskRead::hit);
  CHECK(got == std::string("object\0code", 11));
  // Another key stored under k1's file name (a hash collision, or a stale
  // entry): a corrupt read, never k1's hit.
  fs::copy_file(c.path_for("k1"), c.path_for("k2"));
  CHECK(c.read("k2", &got) == aj::jit::DiskRead::corrupt);
  fs::resize_file(c.path_for("k1"), 20);
  CHECK(c.read("k1", &got) == aj::jit::DiskRead::corrupt);
  for (int i = 0; i < 30; ++i) REQUIRE(c.write("key" + std::to_string(i), "payload"));
  c.trim(10);
  std::size_t left = 0;
  for (const auto& e : fs::directory_iterator(dir)) left += e.path().extension() == ".ajk";
  CHECK(left <= 10);
  CHECK(left >= 1);
  fs::remove_all(dir);
}

TEST_CASE("jit child process: loads the kernel from the disk cache without compiling") {
  const char* dir = std::getenv("AJ_JIT_CHILD_DIR");
  if (!dir) return;  // only run as the child of the disk cache test
  JitOn on;
  aj::jit::set_cache_dir(dir);
  aj::reset_stats();
  const double v = (aj::full({777}, 3.0, DType::f64) * 1.25 - 0.5).to_vector<double>()[0];
  REQUIRE(v == 3.25);
  REQUIRE(aj::stats().kernel_disk_hits == 1);
  REQUIRE(aj::stats().kernels_compiled == 0);
}

}  // TEST_SUITE

// Compile-only tier of the CUDA backend (needs NVRTC, no GPU): every distinct
// kernel the optimizer makes for the random-graph suite, for a table of
// every op x dtype x layout (indexing ops included), and every library kernel
// (matmul, copy, sort, scatter) x dtype x rank, is rendered to CUDA C and compiled by NVRTC for
// sm_90: to PTX by default (NVRTC's front end and NVVM with --Ofast-compile=max
// where NVRTC has it; seconds), through
// ptxas to a cubin with AJ_TEST_LONG=1 (tests/test_cuda_codegen.cpp compiles
// one cubin always). Skips with "NVRTC not found: ... skipped" without NVRTC.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <chrono>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "jit/cuda/cuda_api.hpp"
#include "opt/pipeline.hpp"
#include "jit/cuda/cuda_library.hpp"
#include "jit/cuda/cuda_prelude.hpp"
#include "jit/cuda/cuda_source.hpp"
#include "jit/cuda/nvrtc_compile.hpp"
#include "tests/random_graph.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Kernel;

std::vector<Kernel> plan_kernels(const std::vector<Array>& arrays) {
  std::vector<aj::NodeId> roots;
  for (auto& a : arrays) {
    if (!a.is_evaluated()) roots.push_back(a.node_id());
  }
  return roots.empty() ? std::vector<Kernel>{} : aj::opt::plan_kernels(roots);
}

struct Sources {
  std::map<std::uint64_t, std::string> bodies;  // source after the prelude, by hash
  int kernels = 0;
  void add(const std::vector<Array>& arrays) {
    for (auto& k : plan_kernels(arrays)) add(aj::cuda::render(aj::cuda::collapse_axes(k)));
  }
  void add(const aj::cuda::KernelSource& src) {
    ++kernels;
    CHECK(src.param_bytes <= 4096);  // the launch parameter limit of every driver
    const std::string prelude = aj::cuda::kPrelude;
    const auto at = src.source.find(prelude);
    REQUIRE(at != std::string::npos);
    bodies.emplace(src.hash, src.source.substr(at + prelude.size()));
  }
};

// One NVRTC program per `batch` kernels: the prelude once, each kernel in its
// own namespace with C++ linkage (its entry names would clash otherwise).
void compile_all(const Sources& s, std::size_t batch, bool cubin) {
  std::vector<std::string> bodies;
  for (auto& [h, b] : s.bodies) {
    std::string body = b;
    for (std::size_t p; (p = body.find("extern \"C\" ")) != std::string::npos;) body.erase(p, 11);
    bodies.push_back(std::move(body));
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t start = 0; start < bodies.size(); start += batch) {
    aj::cuda::KernelSource unit;
    unit.source = "// compile-only batch\n";
    unit.source += aj::cuda::kHalfHeaders;  // some kernels store f16 / bf16
    unit.source += aj::cuda::kPrelude;  // appended, not operator+ (a GCC 12 -Warray-bounds false positive)
    const std::size_t end = std::min(bodies.size(), start + batch);
    for (std::size_t i = start; i < end; ++i) {
      unit.source += "namespace k" + std::to_string(i) + " {\n" + bodies[i] + "}\n";
    }
    unit.hash = std::hash<std::string>()(unit.source);
    aj::cuda::CompileOptions opt;
    opt.memory_cache = false;
    opt.disk_cache = false;
    opt.ptx_only = !cubin;
    opt.fast_compile = !cubin;  // the long tier compiles as the runtime does
    try {
      auto img = aj::cuda::compile(unit, 90, opt);
      CHECK(img->cubin == cubin);
      CHECK(img->bytes.size() > 0);
    } catch (const aj::Error& e) {
      // The first error of the log, not only its warnings.
      const std::string w = e.what();
      const std::size_t at = w.find(" error");
      const std::string first = at == std::string::npos ? std::string() : w.substr(at > 300 ? at - 300 : 0, 1500);
      FAIL_CHECK(w.substr(0, 300) << "\n... " << first);
      return;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string what = cubin ? " (cubin)" : " (PTX)";
  MESSAGE("NVRTC compiled " << bodies.size() << what << " distinct kernels (of " << s.kernels << ") in " << secs
                            << " s");
}

bool skip_without_nvrtc() {
  std::string why;
  if (aj::cuda::nvrtc_api(&why)) return false;
  MESSAGE(why << ": skipped");
  return true;
}

Array input(DType t, aj::Shape shape) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()), 1.5);
  return aj::from_vector<double>(v, shape).astype(t).eval();
}

}  // namespace

TEST_CASE("cuda compile: every op x dtype x layout compiles with NVRTC") {
  if (skip_without_nvrtc()) return;
  Sources s;
  const auto& all = aj::kAllDTypes;
  const DType floats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
  using U = Array (*)(const aj::Operand&);
  const U float_unary[] = {aj::exp,    aj::log,    aj::log1p,   aj::expm1,   aj::sin,     aj::cos,
                           aj::tan,    aj::tanh,   aj::sigmoid, aj::sqrt,    aj::rsqrt,   aj::erf,
                           aj::erfc,   aj::arcsin, aj::arccos,  aj::arctan,  aj::sinh,    aj::cosh,
                           aj::arcsinh, aj::arccosh, aj::arctanh, aj::exp2, aj::log2,   aj::log10, aj::cbrt,
                           aj::lgamma, aj::digamma, aj::trigamma, aj::erfinv, aj::ndtri, aj::log_ndtr,
                           aj::i0,     aj::i1};
  const U num_unary[] = {aj::negative, aj::abs, aj::sign, aj::floor, aj::ceil, aj::round, aj::trunc};
  using B = Array (*)(const aj::Operand&, const aj::Operand&);
  const B num_binary[] = {aj::add, aj::subtract, aj::multiply, aj::divide, aj::mod,
                          aj::maximum, aj::minimum, aj::pow, aj::fmod};
  const B float_binary[] = {aj::arctan2, aj::hypot, aj::copysign, aj::nextafter, aj::logaddexp, aj::logaddexp2};
  for (DType t : floats) {
    Array x = input(t, {64});
    Array y = input(t, {64});
    for (U f : float_unary) s.add({f(x)});
    for (B f : float_binary) {
      if (f == aj::nextafter && aj::itemsize(t) < 4) continue;  // halves: an error (docs/semantics.md)
      s.add({f(x, y)});
    }
  }
  for (DType t : all) {
    Array x = input(t, {8, 16});
    Array y = input(t, {8, 16});
    Array row = input(t, {16});
    if (t == DType::bool_) {
      s.add({!x, x && y, x || row, aj::maximum(x, y), aj::minimum(x, y)});
    } else if (aj::is_integer(t) && (aj::dtype_info(t).digits < 31 || aj::dtype_kind(t) == aj::DTypeKind::Unsigned)) {
      // The narrow and unsigned integers: each op once (their CUDA C types,
      // unsigned compares and extensions), not every layout.
      for (U f : num_unary) s.add({f(x)});
      for (B f : num_binary) s.add({f(x, y)});
      s.add({aj::sum(x), aj::prod(x, 1), aj::max(x, 0), aj::min(x.T(), 1), aj::mean(x, 0), aj::cumsum(x * 2, 1) + 1});
      s.add({x & y, x | row, x ^ y, ~x, x << (y % 3), x >> 1, aj::gcd(x, y), aj::lcm(x, row)});
      s.add({x == y, x < row, aj::where(x == y, x, y), aj::argmax(x, 1), aj::argmin(x.T(), 1)});
      for (DType to : all) s.add({x.astype(to)});
      continue;
    } else {
      for (U f : num_unary) s.add({f(x)});
      for (B f : num_binary) s.add({f(x, y), f(x, row), f(x.T().reshape({16, 8}), 2)});
      s.add({aj::sum(x), aj::prod(x, 1), aj::max(x, 0), aj::min(x.T(), 1), aj::mean(x, 0)});
      s.add({aj::sum(x, 1) * 2, x - aj::max(x, 1, true)});  // epilogue; reduction broadcast back
      // Scans: along the last axis, an outer axis, with a same-axis sum after.
      s.add({aj::cumsum(x * 2, 1) + 1, aj::cumprod(x, 0), aj::sum(aj::cumsum(y, 1), 1)});
      s.add({aj::cummax(x, 1), aj::cummin(x * y, 0), aj::logcumsumexp(x, 1)});
      if (aj::is_integer(t)) s.add({x & y, x | row, x ^ y, ~x, x << (y % 3), x >> 1, aj::gcd(x, y), aj::lcm(x, row)});
    }
    s.add({x == y, x != row, x < y, x <= y, x > y, x >= y});
    s.add({aj::where(x == y, x, y), aj::all(x != y, 1), aj::any(x == y)});
    // argmax/argmin: both layouts, a whole array (parts), an epilogue.
    s.add({aj::argmax(x, 1), aj::argmin(x, 1), aj::max(x, 1)});
    s.add({aj::argmax(x, 0) * 2, aj::argmin(x.T(), 1)});
    s.add({aj::argmax(x)});
    for (DType to : all) {
      if (aj::is_integer(to) && (aj::dtype_info(to).digits < 31 || aj::dtype_kind(to) == aj::DTypeKind::Unsigned)) continue;  // (theirs: above; f64 to each: test_cuda_emulated)
      s.add({x.astype(to)});
    }
    s.add({aj::slice(x, {aj::Slice(1, 7, 2), aj::Slice(std::nullopt, std::nullopt, -1)}) * 1});
  }
  for (DType t : {DType::i32, DType::i64, DType::f32, DType::f64, DType::f16, DType::bf16}) {
    s.add({aj::arange(0.0, 10.0, 1.0, t) * 2, aj::linspace(0, 1, 7, t) + 1, aj::eye(4, 5, 1, t) * 3});
  }
  for (DType t : floats) s.add({aj::random::uniform({33}, -1, 1, t) + aj::random::normal({33}, 0, 1, t)});
  s.add({aj::random::randint({33}, -5, 5), aj::random::randint({33}, 0, 9, DType::i32), aj::random::bernoulli({33}, 0.5)});
  // Keyed draws: the key is a kernel input (Op::RandomBits over (key, counter)).
  {
    const aj::random::Key key(aj::full({}, 7, DType::i32).eval());
    s.add({aj::random::bits(key, {33}), aj::random::uniform(key, {33}, -1, 1) * 2,
           aj::random::normal(aj::random::fold_in(key, 1), {33}, 0, 1, DType::f64), aj::random::bernoulli(key, {33}, 0.3)});
  }
  // Multi-output: a full-shape and a reduced root of one reduction.
  Array x = input(DType::f32, {32, 64});
  Array e = aj::exp(x - 1.f);
  s.add({e, aj::sum(e, 1)});
  CHECK(s.bodies.size() > 100);
  compile_all(s, 64, std::getenv("AJ_TEST_LONG") != nullptr);
}

TEST_CASE("cuda compile: every kernel of the random-graph suite compiles with NVRTC") {
  if (skip_without_nvrtc()) return;
  Sources s;
  // The differential suite's seeds; its long tier also runs ptxas (cubin).
  const bool long_tier = std::getenv("AJ_TEST_LONG") != nullptr;
  const int graphs = long_tier ? 2000 : 150;
  for (int i = 0; i < graphs; ++i) {
    ajtest::RandomGraph g(0xd1ff000 + static_cast<std::uint64_t>(i));
    try {
      g.build();
    } catch (const aj::Error&) {
      continue;  // the differential test reports those
    }
    std::vector<Array> outs;
    for (auto& o : g.outputs()) outs.push_back(o.array);
    s.add(outs);
  }
  CHECK(s.bodies.size() > 50);
  compile_all(s, 64, long_tier);
}

TEST_CASE("cuda compile: every library kernel (matmul, copy, sort, scatter) x dtype x rank compiles with NVRTC") {
  if (skip_without_nvrtc()) return;
  using aj::cuda::LibraryOp;
  Sources s;
  for (LibraryOp op : {LibraryOp::matmul, LibraryOp::copy, LibraryOp::sort}) {
    for (DType t : aj::kAllDTypes) {
      if (op == LibraryOp::matmul && t == DType::bool_) continue;  // matmul rejects bool at trace time
      for (int rank = 0; rank <= 4; ++rank) s.add(aj::cuda::render_library({op, t, rank}));
    }
  }
  for (LibraryOp op : {LibraryOp::scatter, LibraryOp::scatter_add}) {
    for (DType t : aj::kAllDTypes) {
      for (DType index : {DType::i32, DType::i64}) {
        for (int rank = 0; rank <= 4; ++rank) s.add(aj::cuda::render_library({op, t, rank, index}));
      }
    }
  }
  const int n = aj::kNumDTypes;  // matmul: all but bool
  CHECK(s.bodies.size() == static_cast<std::size_t>(((n - 1) + n + n) * 5 + 2 * n * 2 * 5));
  compile_all(s, 64, std::getenv("AJ_TEST_LONG") != nullptr);
}

TEST_CASE("cuda compile: indexing kernels (gathers, masked pads, positions) x dtype compile with NVRTC") {
  if (skip_without_nvrtc()) return;
  Sources s;
  for (DType t : aj::kAllDTypes) {
    Array x = input(t, {8, 16});
    for (DType it : {DType::i32, DType::i64}) {
      Array i = aj::from_vector<std::int64_t>({3, -1, 20, 0}).astype(it).eval();
      Array j = aj::from_vector<std::int64_t>({1, 0, 2, 7, -3, 5, 6, 4}, {8, 1}).astype(it).eval();
      s.add({aj::take(x, i, 1), aj::take(x, (i + 1) % 5), aj::take_along_axis(x, j, 1), aj::one_hot(i, 5, t)});
      s.add({aj::take(aj::maximum(x, x), i, 0), aj::sum(aj::take(x, i, 1).astype(DType::f32), 1)});
    }
    for (aj::PadMode m : {aj::PadMode::constant, aj::PadMode::edge, aj::PadMode::reflect}) {
      s.add({aj::pad(x, {{1, 2}, {3, 0}}, m), aj::pad(aj::maximum(x, x).T(), {{2, 2}}, m)});
    }
    Array v = input(t, {3, 16});
    s.add({aj::roll(x, 3, 1), aj::roll(x, {2, -5}, {0, 1}), aj::slice_update(x, {aj::Slice(1, 7, 2)}, v),
           aj::slice_update(x, {aj::Slice(std::nullopt, std::nullopt, -3)}, aj::maximum(v, v))});
    if (t == DType::bool_) s.add({aj::slice_add(x, {aj::Slice(2, 5)}, v)});
    else s.add({aj::slice_add(x, {aj::Slice(2, 5)}, v * 2)});
    s.add({aj::where(input(DType::bool_, {16}), x, t == DType::bool_ ? aj::Operand(true) : aj::Operand(2))});
  }
  CHECK(s.bodies.size() > 60);
  compile_all(s, 64, std::getenv("AJ_TEST_LONG") != nullptr);
}

TEST_CASE("cuda compile: library kernels compile to cubins through the cache, and AJ_LOG=cuda prints their source") {
  if (skip_without_nvrtc()) return;
  using aj::cuda::LibraryOp;
  setenv("AJ_LOG", "cuda", 1);
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  aj::cuda::CompileOptions opt;
  opt.disk_cache = false;
  opt.memory_cache = false;
  for (aj::cuda::LibrarySpec spec : {aj::cuda::LibrarySpec{LibraryOp::matmul, DType::f32, 1},
                                     aj::cuda::LibrarySpec{LibraryOp::copy, DType::f64, 2},
                                     aj::cuda::LibrarySpec{LibraryOp::copy, DType::bool_, 3}}) {
    try {
      auto img = aj::cuda::compile(aj::cuda::render_library(spec), 90, opt);
      CHECK(img->cubin);
      CHECK(img->bytes.size() > 100);
    } catch (const aj::Error& e) {
      FAIL_CHECK(e.what());
    }
  }
  std::cerr.rdbuf(old);
  unsetenv("AJ_LOG");
  const std::string log = captured.str();
  CHECK(log.find("arrayjit CUDA library kernel: matmul f32, rank 1") != std::string::npos);
  CHECK(log.find("arrayjit CUDA library kernel: copy f64, rank 2") != std::string::npos);
  CHECK(log.find("arrayjit CUDA library kernel: copy bool, rank 3") != std::string::npos);
}

// The generated CUDA kernels, run on the host (tests/cuda_host_emulator.hpp),
// against the host kernel interpreter on the same Kernel IR and buffers.
//
// Every kernel step of each program is run twice: by cpu::run_kernel (whose
// result the next steps read) and by the generated CUDA C, launched as
// plan_launch plans it for a one-SM device with parameters from pack_params.
// Elementwise results must be bit-identical (same libm on both sides);
// reductions of floats may differ by their summation order.
// The library kernels (matmul, concatenate) are checked the same way against
// the reference interpreter (bottom of this file).
// Needs a host C++ compiler at test time ($CXX or c++); skips without one.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/host_memory.hpp"
#include "exec/execute.hpp"
#include "jit/cuda/cuda_library.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "backends/reference/interpreter.hpp"
#include "opt/passes/fuse.hpp"
#include "opt/passes/simplify.hpp"
#include "tests/cuda_host_emulator.hpp"
#include "tests/random_data.hpp"
#include "tests/random_graph.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Kernel;

bool have_cxx() {
  const char* cxx = std::getenv("CXX");
  const std::string cmd = std::string(cxx && *cxx ? cxx : "c++") + " --version > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

struct Program {
  std::vector<Array> roots;
  aj::Schedule schedule;
};

Program plan(std::vector<Array> roots) {
  Program p;
  p.roots = std::move(roots);
  std::vector<aj::NodeId> ids;
  for (auto& a : p.roots) {
    if (!a.is_evaluated()) ids.push_back(a.node_id());
  }
  if (ids.empty()) return p;
  aj::simplify(ids);
  p.schedule = aj::fuse(ids);
  return p;
}

// Bytes of an element as double for comparison.
double element(const void* base, DType t, std::int64_t i) {
  switch (t) {
    case DType::bool_: return static_cast<const bool*>(base)[i];
    case DType::i32: return static_cast<const std::int32_t*>(base)[i];
    case DType::i64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::f16: return static_cast<float>(static_cast<const aj::f16*>(base)[i]);
    case DType::bf16: return static_cast<float>(static_cast<const aj::bf16*>(base)[i]);
    case DType::u8: return static_cast<const std::uint8_t*>(base)[i];
    case DType::i8: return static_cast<const std::int8_t*>(base)[i];
    case DType::i16: return static_cast<const std::int16_t*>(base)[i];
    case DType::u16: return static_cast<const std::uint16_t*>(base)[i];
    case DType::u32: return static_cast<const std::uint32_t*>(base)[i];
    case DType::u64: return static_cast<double>(static_cast<const std::uint64_t*>(base)[i]);
  }
  return 0;
}

struct Checker {
  const ajtest::HostCudaLibrary& lib;
  int kernels = 0, mismatches = 0;

  void run_kernel_step(const aj::Step& st) {
    aj::Graph& g = aj::graph();
    bool any_missing = false;
    for (aj::NodeId o : st.outputs) any_missing |= !g[o].evaluated();
    if (!any_missing) return;  // made by another program (trace-time CSE)
    std::vector<const void*> ins;
    std::vector<std::uint64_t> ptrs;
    for (std::size_t e = 0; e < st.inputs.size(); ++e) {
      const void* p = st.kernel.inputs[e].index_only ? nullptr : g[st.inputs[e]].storage->data;
      ins.push_back(p);
      ptrs.push_back(reinterpret_cast<std::uint64_t>(p));
    }
    std::vector<std::shared_ptr<aj::Storage>> want, got;
    std::vector<void*> want_p;
    for (aj::NodeId o : st.outputs) {
      const std::size_t bytes = static_cast<std::size_t>(g[o].numel()) * aj::itemsize(g[o].dtype);
      want.push_back(aj::cpu::host_alloc(bytes));
      got.push_back(aj::cpu::host_alloc(bytes));
      std::memset(got.back()->data, 0xEE, bytes);  // unwritten elements show
      want_p.push_back(want.back()->data);
      ptrs.push_back(0);
    }
    for (std::size_t j = 0; j < got.size(); ++j) ptrs[st.inputs.size() + j] = reinterpret_cast<std::uint64_t>(got[j]->data);
    aj::cpu::run_kernel(st.kernel, ins, want_p);

    const Kernel c = aj::cuda::collapse_axes(st.kernel);
    const auto src = aj::cuda::render(c);
    REQUIRE(lib.has(src.hash));
    const auto ls = aj::cuda::plan_launch(c, src.vec, 1, ptrs);
    std::vector<std::uint64_t> scratch((ls.scratch_bytes + 7) / 8 + 1);
    const auto params = aj::cuda::pack_params(c, ptrs, ls, reinterpret_cast<std::uint64_t>(scratch.data()));
    if (ls.grid > 0) {
      const char* entry = ls.mode == aj::cuda::LaunchShape::Mode::serial ? "aj_k_serial" : "aj_k";
      lib.run(src.hash, entry, params, ls.grid, 64);
      if (ls.finish_grid) lib.run(src.hash, "aj_k_finish", params, ls.finish_grid, 64);
    }
    ++kernels;
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      const aj::Node& n = g[st.outputs[j]];
      const bool exact = !st.kernel.is_reduction() || !aj::is_float(n.dtype);
      for (std::int64_t i = 0; i < n.numel(); ++i) {
        const double a = element(want[j]->data, n.dtype, i), b = element(got[j]->data, n.dtype, i);
        bool ok;
        if (exact) {
          ok = std::memcmp(static_cast<const char*>(want[j]->data) + i * aj::itemsize(n.dtype),
                           static_cast<const char*>(got[j]->data) + i * aj::itemsize(n.dtype), aj::itemsize(n.dtype)) == 0 ||
               (std::isnan(a) && std::isnan(b));
        } else {
          ok = (std::isnan(a) && std::isnan(b)) || a == b ||
               std::fabs(a - b) <= 1e-4 * (std::fabs(a) + std::fabs(b)) + 1e-30;
        }
        if (!ok) {
          ++mismatches;
          FAIL_CHECK("kernel output " << j << " element " << i << ": interpreter " << a << ", generated CUDA " << b
                                      << " (launch mode " << static_cast<int>(ls.mode) << ", parts " << ls.parts
                                      << ", vec " << ls.vec << ")\n" << aj::dump(st.kernel) << "\n" << src.source);
          return;
        }
      }
    }
    for (std::size_t j = 0; j < st.outputs.size(); ++j) {
      aj::NodeId id = st.outputs[j];
      if (!g[id].evaluated()) g.set_result(id, want[j], aj::contiguous_strides(g[id].shape), 0);
    }
  }

  void execute(const Program& p) {
    aj::Graph& g = aj::graph();
    for (const aj::Step& st : p.schedule.steps) {
      if (st.kind == aj::Step::Kind::kernel) {
        run_kernel_step(st);
        if (mismatches) return;
      } else if (!g[st.node].evaluated()) {
        const aj::Node& n = g[st.node];
        auto l = st.kind == aj::Step::Kind::view ? aj::view_layout(n, g[n.inputs[0]], {g[n.inputs[0]].strides, g[n.inputs[0]].offset})
                                                 : std::nullopt;
        if (l) {
          auto storage = g[n.inputs[0]].storage;
          g.set_result(st.node, std::move(storage), std::move(l->strides), l->offset);
        } else {
          aj::ref::evaluate_node(st.node);
        }
      }
    }
  }
};

void check_programs(std::vector<Program>& programs) {
  std::map<std::uint64_t, aj::cuda::KernelSource> sources;
  for (auto& p : programs) {
    for (auto& st : p.schedule.steps) {
      if (st.kind != aj::Step::Kind::kernel) continue;
      auto src = aj::cuda::render(aj::cuda::collapse_axes(st.kernel));
      sources.emplace(src.hash, std::move(src));
    }
  }
  std::unique_ptr<ajtest::HostCudaLibrary> lib;
  try {
    lib = std::make_unique<ajtest::HostCudaLibrary>(sources);
  } catch (const std::exception& e) {
    FAIL(std::string(e.what()));
  }
  Checker c{*lib};
  for (auto& p : programs) {
    c.execute(p);
    if (c.mismatches) break;
  }
  MESSAGE("ran " << c.kernels << " kernels (" << sources.size() << " distinct) as generated CUDA on the host");
  CHECK(c.mismatches == 0);
  CHECK(c.kernels > 0);
}

Array data(DType t, aj::Shape shape, int salt) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  // Quarters in [-8, 8): float sums of these are exact in any order.
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int>((i * 37 + salt * 11) % 64) - 32) / 4;
  return aj::from_vector<double>(v, shape).astype(t).eval();
}

}  // namespace

TEST_CASE("cuda emulated: elementwise, vector path, views, generators and every reduction strategy match the interpreter") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<Program> ps;
  for (DType t : {DType::i32, DType::i64, DType::f32, DType::f64}) {
    Array x = data(t, {1003}, 1), y = data(t, {1003}, 2);
    ps.push_back(plan({x * y + 3, aj::maximum(x, y) - aj::minimum(x, 2), x / y, x % y, aj::abs(-x)}));
    // Misaligned: a slice starting at element 1 cannot take the vector path.
    ps.push_back(plan({aj::slice(x, 0, 1, std::nullopt) * 2}));
    Array m = data(t, {37, 300}, 3);
    ps.push_back(plan({aj::sum(m, 1), aj::max(m, 0), aj::sum(m), aj::min(m.T(), 1)}));
    ps.push_back(plan({aj::sum(data(t, {20000}, 4))}));  // one outer point: two passes
    Array e2 = data(t, {20000}, 9) * 2;
    ps.push_back(plan({e2, aj::max(e2) - 1}));  // two passes with a full-shape output and an epilogue
    ps.push_back(plan({aj::sum(data(t, {5000, 7}, 5), 1)}));  // small reduced range: serial
    ps.push_back(plan({aj::sum(data(t, {300, 5000}, 6), 0)}));  // column sums
    Array e = x * 2;
    ps.push_back(plan({e, aj::sum(e) + 1}));  // two outputs and an epilogue
    ps.push_back(plan({aj::where(x > y, x, y), (x == y) || (x < 0), x.astype(DType::bool_)}));
    ps.push_back(plan({aj::arange(0.0, 50.0, 1.0, t) * 2, aj::eye(5, 7, 1, t) + 1}));
  }
  for (DType t : {DType::f32, DType::f64}) {
    Array x = data(t, {999}, 7);
    ps.push_back(plan({aj::exp(x), aj::sin(x) * aj::cos(x), aj::sqrt(aj::abs(x)), aj::sigmoid(x), aj::round(x / 3),
                       x.astype(DType::i32), aj::pow(x, 2)}));
    ps.push_back(plan({aj::random::uniform({513}, -1, 1, t), aj::random::normal({513}, 0, 1, t)}));
    ps.push_back(plan({aj::linspace(0, 1, 101, t)}));
  }
  // The narrow and unsigned integers (their CUDA C typedefs, unsigned
  // compares and extensions): one program each.
  for (DType t : {DType::u8, DType::i8, DType::i16, DType::u16, DType::u32, DType::u64}) {
    Array x = data(t, {1003}, 10), y = data(t, {1003}, 11), m = data(t, {37, 300}, 12);
    ps.push_back(plan({x * y + 3, aj::maximum(x, y) - aj::minimum(x, 2), x / y, x % y, aj::abs(-x), (x & y) ^ (x << 3),
                       aj::gcd(x, y), aj::lcm(x, y), x < y, x.astype(DType::f32), (x.astype(DType::f64) * 300.7).astype(t),
                       aj::sum(m, 1), aj::max(m, 0), aj::cumsum(x, 0), aj::argmax(m, 1)}));
  }
  Array b = data(DType::bool_, {64, 64}, 8);
  ps.push_back(plan({aj::all(b, 1), aj::any(b, 0), !b}));
  check_programs(ps);
}

TEST_CASE("cuda emulated: the random-graph suite's kernels match the interpreter") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  const int graphs = std::getenv("AJ_TEST_LONG") ? 300 : 60;
  std::vector<std::unique_ptr<ajtest::RandomGraph>> keep;
  std::vector<Program> ps;
  for (int i = 0; i < graphs; ++i) {
    auto g = std::make_unique<ajtest::RandomGraph>(0xd1ff000 + static_cast<std::uint64_t>(i));
    try {
      g->build();
    } catch (const aj::Error&) {
      continue;
    }
    std::vector<Array> outs;
    for (auto& o : g->outputs()) outs.push_back(o.array);
    ps.push_back(plan(outs));
    keep.push_back(std::move(g));
  }
  check_programs(ps);
}

// ---- library kernels (matmul, concatenate's copies) -----------------------------------
//
// Each library step of a program is evaluated twice: by the reference
// interpreter, and by the library kernels the CUDA backend plans for it
// (cuda::plan_library, the same call the device path makes), run on the host
// emulator with 256-thread blocks into a buffer of 0xEE bytes.

namespace {

std::uint64_t addr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// The library steps of a program with the library launches planned for them
// from the layouts the steps before will make (no addresses).
std::vector<aj::cuda::LibrarySpec> library_specs(const Program& p) {
  aj::Graph& g = aj::graph();
  std::vector<aj::cuda::LibrarySpec> specs;
  for (const aj::Step& st : p.schedule.steps) {
    if (st.kind != aj::Step::Kind::library) continue;
    std::vector<aj::Layout> ins;
    for (aj::NodeId i : g[st.node].inputs) {
      const auto it = p.schedule.layouts.find(i);
      ins.push_back(g[i].evaluated() ? aj::Layout{g[i].strides, g[i].offset} : it->second);
    }
    const aj::LibraryCall call = aj::opt::library_call(g[st.node], ins);
    std::vector<std::uint64_t> distinct(ins.size());  // buffers apart from the result's (a scatter copies first)
    for (std::size_t k = 0; k < distinct.size(); ++k) distinct[k] = 64 * (k + 1);
    for (const auto& l : aj::cuda::plan_library(call, distinct, 0, 1)) {
      specs.push_back(l.spec);
    }
  }
  return specs;
}

struct LibraryChecker {
  const ajtest::HostCudaLibrary& lib;
  int sms = 1;
  int steps = 0, launches = 0, mismatches = 0;

  void run_library_step(aj::NodeId id) {
    aj::Graph& g = aj::graph();
    const aj::Node& n = g[id];
    std::vector<aj::Layout> ins;
    std::vector<std::uint64_t> addrs;
    for (aj::NodeId i : n.inputs) {
      ins.push_back({g[i].strides, g[i].offset});
      addrs.push_back(addr(g[i].storage->data));
    }
    const std::size_t bytes = static_cast<std::size_t>(n.numel()) * aj::itemsize(n.dtype);
    auto got = aj::cpu::host_alloc(bytes);
    std::memset(got->data, 0xEE, bytes);  // unwritten elements show
    std::string sources;
    for (auto l : aj::cuda::plan_library(aj::opt::library_call(n, ins), addrs, addr(got->data), sms)) {
      if (l.grid == 0) continue;
      const auto src = aj::cuda::render_library(l.spec);
      REQUIRE(lib.has(src.hash));
      CHECK(src.param_bytes == l.params.size() * 8);
      std::vector<std::uint64_t> scratch(l.scratch_bytes / 8 + 1);
      if (l.scratch_bytes) l.params[static_cast<std::size_t>(l.scratch_slot)] = static_cast<std::int64_t>(addr(scratch.data()));
      lib.run(src.hash, "aj_k", l.params, l.grid, aj::cuda::kThreadsPerBlock);
      if (l.finish_grid) lib.run(src.hash, "aj_k_finish", l.params, l.finish_grid, aj::cuda::kThreadsPerBlock);
      ++launches;
      if (sources.empty()) sources = src.source;
    }
    // Float matmuls round in Eigen's order on one side, in k order on the
    // other: within 2 k^2 eps for operands in [-1, 1] (random_wide; the small
    // integers of random_small sum exactly either way).
    double tolerance = 0;
    if (n.op == aj::Op::MatMul && aj::is_float(n.dtype)) {
      const aj::Node& a = g[n.inputs[0]];
      const double k = static_cast<double>(a.shape[a.shape.ndim() - 1]);
      tolerance = 2 * k * k * (n.dtype == DType::f32 ? 0x1.0p-23 : 0x1.0p-52);
    }
    // Scatter in place: the result buffer starts as a copy of the array and
    // the launches are planned with it as the array's buffer (no copy).
    std::shared_ptr<aj::Storage> in_place;
    const aj::Node& a0 = g[n.inputs[0]];
    if (aj::op_has(n.op, aj::opflag::Overwrites) && a0.offset == 0 && aj::is_contiguous(a0.shape, a0.strides) &&
        a0.storage->bytes == bytes) {
      in_place = aj::cpu::host_alloc(bytes);
      std::memcpy(in_place->data, a0.storage->data, bytes);
      std::vector<std::uint64_t> ip = addrs;
      ip[0] = addr(in_place->data);
      const auto ls = aj::cuda::plan_library(aj::opt::library_call(n, ins), ip, ip[0], sms);
      CHECK(ls.size() == 1);  // no copy of the array
      for (auto l : ls) {
        if (l.grid == 0) continue;
        const auto src = aj::cuda::render_library(l.spec);
        REQUIRE(lib.has(src.hash));
        lib.run(src.hash, "aj_k", l.params, l.grid, aj::cuda::kThreadsPerBlock);
        ++launches;
      }
    }
    const aj::DType t = n.dtype;
    aj::ref::evaluate_node(id);
    const aj::Node& r = g[id];
    ++steps;
    for (std::int64_t i = 0; i < r.numel(); ++i) {
      double a = element(r.storage->data, t, i), b = element(got->data, t, i);
      const std::size_t item = aj::itemsize(t);
      bool ok = std::memcmp(static_cast<const char*>(r.storage->data) + i * item,
                            static_cast<const char*>(got->data) + i * item, item) == 0;
      if (!ok && tolerance > 0) ok = std::fabs(a - b) <= tolerance;
      if (ok && in_place) {
        ok = std::memcmp(static_cast<const char*>(r.storage->data) + i * item,
                         static_cast<const char*>(in_place->data) + i * item, item) == 0;
        if (!ok) b = element(in_place->data, t, i);
      }
      if (!ok) {
        ++mismatches;
        const std::string what = std::string(aj::op_name(r.op)) + " " + aj::dtype_name(t) + r.shape.str();
        FAIL_CHECK(what << " element " << i << ": interpreter " << a << ", library kernel " << b << "\n" << sources);
        return;
      }
    }
  }

  void execute(const Program& p) {
    aj::Graph& g = aj::graph();
    for (const aj::Step& st : p.schedule.steps) {
      if (st.kind == aj::Step::Kind::kernel) {
        std::vector<const void*> ins;
        for (std::size_t e = 0; e < st.inputs.size(); ++e) {
          ins.push_back(st.kernel.inputs[e].index_only ? nullptr : g[st.inputs[e]].storage->data);
        }
        std::vector<std::shared_ptr<aj::Storage>> outs;
        std::vector<void*> ptrs;
        for (aj::NodeId o : st.outputs) {
          outs.push_back(aj::cpu::host_alloc(static_cast<std::size_t>(g[o].numel()) * aj::itemsize(g[o].dtype)));
          ptrs.push_back(outs.back()->data);
        }
        aj::cpu::run_kernel(st.kernel, ins, ptrs);
        for (std::size_t j = 0; j < st.outputs.size(); ++j) {
          g.set_result(st.outputs[j], outs[j], aj::contiguous_strides(g[st.outputs[j]].shape), 0);
        }
      } else if (g[st.node].evaluated()) {
        continue;
      } else if (st.kind == aj::Step::Kind::library) {
        run_library_step(st.node);
        if (mismatches) return;
      } else {
        const aj::Node& n = g[st.node];
        const aj::Node& src = g[n.inputs[0]];
        auto l = aj::view_layout(n, src, {src.strides, src.offset});
        if (!l) {
          aj::ref::evaluate_node(st.node);
          continue;
        }
        auto storage = src.storage;
        g.set_result(st.node, std::move(storage), std::move(l->strides), l->offset);
      }
    }
  }
};

// Random values of dtype t: small integers (many ties, float sums exact in
// any order), or with `nans` some NaNs and signed zeros among them (floats).
Array random_small(DType t, aj::Shape shape, std::uint64_t seed, bool nans = false) {
  const auto n = static_cast<std::size_t>(shape.numel());
  return aj::from_vector<double>(ajtest::small_values(n, seed, nans), shape).astype(t).eval();
}

// Random reals in [-1, 1) (floats), or integers over the whole range of the
// type (integer matmuls wrap the same in any order).
Array random_wide(DType t, aj::Shape shape, std::uint64_t seed) {
  const auto count = static_cast<std::size_t>(shape.numel());
  std::vector<std::uint64_t> bits(count);
  std::uint64_t s = seed * 0xbf58476d1ce4e5b9ull + 7;
  for (auto& b : bits) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    b = s ^ (s >> 29);
  }
  switch (t) {
    case DType::i32: {
      std::vector<std::int32_t> v(count);
      for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::int32_t>(bits[i] >> 32);
      return aj::from_vector<std::int32_t>(v, shape).eval();
    }
    case DType::i64: {
      std::vector<std::int64_t> v(count);
      for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::int64_t>(bits[i]);
      return aj::from_vector<std::int64_t>(v, shape).eval();
    }
    default: {
      std::vector<double> v(count);
      for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<double>(bits[i] >> 11) * 0x1.0p-52 - 1.0;
      return aj::from_vector<double>(v, shape).astype(t).eval();
    }
  }
}

void check_library_programs(std::vector<std::pair<Program, int>>& programs) {
  std::map<std::uint64_t, aj::cuda::KernelSource> sources;
  for (auto& [p, sms] : programs) {
    for (const auto& spec : library_specs(p)) {
      auto src = aj::cuda::render_library(spec);
      sources.emplace(src.hash, std::move(src));
    }
  }
  std::unique_ptr<ajtest::HostCudaLibrary> lib;
  try {
    lib = std::make_unique<ajtest::HostCudaLibrary>(sources);
  } catch (const std::exception& e) {
    FAIL(std::string(e.what()));
  }
  LibraryChecker c{*lib};
  for (auto& [p, sms] : programs) {
    c.sms = sms;
    c.execute(p);
    if (c.mismatches) break;
  }
  MESSAGE("checked " << c.steps << " steps, " << c.launches << " library kernel launches (" << sources.size()
                     << " distinct kernels) on the host emulator");
  CHECK(c.mismatches == 0);
  CHECK(c.launches > 0);
}

}  // namespace

TEST_CASE("cuda emulated: matmul library kernels match the interpreter (edge tiles, broadcast batches, strides, K = 0)") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<std::pair<Program, int>> ps;
  std::uint64_t seed = 1;
  for (DType t : {DType::i32, DType::i64, DType::f32, DType::f64}) {
    auto small = [&](aj::Shape s) { return random_small(t, s, seed++); };
    auto wide = [&](aj::Shape s) { return random_wide(t, s, seed++); };
    // Sizes off the 64 x 64 tile and the 16-deep k step.
    ps.push_back({plan({aj::matmul(small({37, 53}), small({53, 71})), aj::matmul(small({130, 20}), small({20, 65}))}), 1});
    // Whole-range integers wrap; reals round (checked within a bound).
    ps.push_back({plan({aj::matmul(wide({45, 33}), wide({33, 70}))}), 1});
    // Broadcast batches (stride 0 on the size-1 and the missing axis), more tiles than blocks.
    ps.push_back({plan({aj::matmul(small({3, 1, 17, 9}), small({4, 9, 70}))}), 1});
    // Transposed (column-major) and sliced (stride 2, reversed) operands.
    Array x = small({40, 33}), y = small({40, 100}), z = small({30, 40});
    ps.push_back({plan({aj::matmul(x.T(), aj::slice(y, 1, std::nullopt, std::nullopt, 2)),
                        aj::matmul(aj::slice(x.T(), 0, std::nullopt, std::nullopt, -1), z.T())}), 2});
    // Matrix-vector, vector-matrix.
    ps.push_back({plan({aj::matmul(small({7, 300}), small({300})), aj::matmul(small({19}), small({19, 66}))}), 1});
    // K = 0 gives zeros; an empty batch or an empty result launches nothing.
    ps.push_back({plan({aj::matmul(small({5, 0}), small({0, 7})), aj::matmul(small({0, 4, 5}), small({5, 6})),
                        aj::matmul(small({2, 0, 5}), small({2, 5, 3}))}), 1});
  }
  check_library_programs(ps);
}

TEST_CASE("cuda emulated: argmax/argmin kernels match the interpreter (ties, NaN, strides, every launch mode)") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<Program> ps;
  std::uint64_t seed = 100;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    for (bool nans : {false, true}) {
      if (nans && !aj::is_float(t)) continue;
      auto small = [&](aj::Shape s) { return random_small(t, s, seed++, nans); };
      Array m = small({37, 300});
      // A block per result (axis 1), a thread per result (short axis 0), a
      // strided axis (the transpose), a middle axis of rank 3.
      ps.push_back(plan({aj::argmax(m, 1), aj::argmin(m, 1), aj::argmax(m, 0), aj::argmin(m.T(), 0),
                          aj::argmax(small({6, 50, 7}), 1), aj::argmin(small({6, 50, 7}), -1)}));
      // Column walks: one thread per result, neighbours at neighbouring addresses.
      Array c = small({65, 4096});
      ps.push_back(plan({aj::argmax(c, 0), aj::argmin(c, 0)}));
      // Long axes: a block per result; few results: split in parts + finishing
      // pass; a producer fused in and an epilogue after.
      Array l = small({3, 5000});
      ps.push_back(plan({aj::argmax(l, 1), aj::argmin(l.T(), 0)}));
      ps.push_back(plan({aj::argmax(small({60, 200})), aj::argmin(small({9001}))}));
      ps.push_back(plan({aj::argmax(aj::slice(small({15001}), 0, std::nullopt, std::nullopt, -3))}));
      ps.push_back(plan({aj::argmax(small({9001}) * 3) + 1, aj::argmin(small({40, 700}) - 1, 1) * 2}));
    }
  }
  // Extremes: the first of equal infinities / lowest values, and all-NaN rows.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Array e = aj::from_vector<double>({inf, 1, inf, -inf, -inf, 0, nan, nan, nan, -0.0, 0.0, -0.0}, aj::Shape{4, 3});
  for (DType t : {DType::f32, DType::f64}) {
    Array et = e.astype(t).eval();
    ps.push_back(plan({aj::argmax(et, 1), aj::argmin(et, 1), aj::argmax(et), aj::argmin(et)}));
  }
  check_programs(ps);
}

TEST_CASE("cuda emulated: concatenate's library copies match the interpreter (middle axis, strided and empty inputs)") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<std::pair<Program, int>> ps;
  std::uint64_t seed = 300;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    auto wide = [&](aj::Shape s) { return random_wide(t == DType::bool_ ? DType::f64 : t, s, seed++).astype(t).eval(); };
    Array z = wide({5, 7, 4});
    ps.push_back({plan({aj::concatenate({wide({4, 3, 5}), wide({4, 1, 5}), z.transpose({2, 1, 0}), wide({4, 0, 5})}, 1)}), 1});
    Array r = wide({9, 6});
    ps.push_back({plan({aj::concatenate({aj::slice(r, 0, std::nullopt, std::nullopt, -1), wide({2, 6}), r.T().T()}, 0),
                        aj::concatenate({r, aj::slice(wide({9, 40}), 1, 3, 37, 3)}, -1)}), 1});
    ps.push_back({plan({aj::concatenate({wide({700}), wide({1}), wide({1000})})}), 1});
  }
  check_library_programs(ps);
}

TEST_CASE("cuda emulated: gathers, masked pads, rolls and slice updates match the interpreter (every dtype)") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  // Programs are planned before any runs: each gets its own inputs, so no
  // computed node is shared (trace-time CSE) with one that runs earlier.
  std::vector<Program> ps;
  std::uint64_t seed = 500;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    auto wide = [&](aj::Shape s) { return random_wide(t == DType::bool_ ? DType::f64 : t, s, seed++).astype(t).eval(); };
    Array x;
    for (DType it : {DType::i32, DType::i64}) {
      x = wide({9, 37});
      Array i = aj::from_vector<std::int64_t>({3, -1, 40, 0, -50, 8}).astype(it).eval();
      Array j = aj::from_vector<std::int64_t>({1, 0, 36, 7, -3, 5, 6, 4, 99}, {9, 1}).astype(it).eval();
      ps.push_back(plan({aj::take(x, i, 1), aj::take(x, (i + 1) % 7, 0), aj::take_along_axis(x, j, 1),
                         aj::take(aj::maximum(x, x).T(), i), aj::one_hot(i, 6, t)}));
    }
    for (aj::PadMode m : {aj::PadMode::constant, aj::PadMode::edge, aj::PadMode::reflect}) {
      x = wide({9, 37});
      ps.push_back(plan({aj::pad(x, {{1, 2}, {40, 3}}, m), aj::pad(aj::maximum(x, x).T(), {{2, 5}}, m)}));
    }
    x = wide({9, 37});
    Array v = wide({3, 37});
    ps.push_back(plan({aj::roll(x, 5, 1), aj::roll(x, {2, -40}, {0, 1}), aj::roll(x, 100),
                       aj::slice_update(x, {aj::Slice(1, 7, 2)}, v),
                       aj::slice_update(x, {aj::Slice(std::nullopt, std::nullopt, -3)}, aj::maximum(v, v)),
                       aj::slice_add(x, {aj::Slice(2, 5), aj::Slice(3, std::nullopt, 4)}, t == DType::bool_ ? aj::Operand(true) : aj::Operand(3))}));
    // A long contiguous masked kernel (the heat-equation step's shape).
    Array u = wide({4099});
    ps.push_back(plan({aj::slice_update(u, {aj::Slice(1, -1)}, aj::maximum(aj::slice(u, 0, 2, std::nullopt), aj::slice(u, 0, std::nullopt, -2)))}));
  }
  check_programs(ps);
}

TEST_CASE("cuda emulated: scatter and scatter_add library kernels match the interpreter (duplicates, out of range, in place)") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<std::pair<Program, int>> ps;
  std::uint64_t seed = 700;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    auto small = [&](aj::Shape s) { return random_small(t, s, seed++); };
    for (DType it : {DType::i32, DType::i64}) {
      Array i = aj::from_vector<std::int64_t>({3, -1, 3, 0, -50, 8, 3, 1}).astype(it).eval();
      Array a = small({9, 5});
      // Along axis 0 (an embedding gradient) and axis 1, strided updates, an
      // along-axis form, and a scalar update.
      ps.push_back({plan({aj::scatter_add(a, i, small({8, 5})), aj::scatter(a, i, small({8, 5}))}), 1});
      ps.push_back({plan({aj::scatter_add(a.T(), i, small({8, 9}).T().T(), 0), aj::scatter(small({4, 9, 3}), i, small({4, 8, 3}), 1)}), 2});
      Array j = aj::from_vector<std::int64_t>({1, 0, 4, 7, -3, 5, 6, 4, 99, 2}, {2, 5}).astype(it).eval();
      ps.push_back({plan({aj::scatter_add_along_axis(small({2, 9}), j, small({2, 5}), 1),
                          aj::put_along_axis(small({2, 9}), j, small({2, 5}), 1)}), 1});
      ps.push_back({plan({aj::scatter_add(aj::zeros({300}, t), aj::from_vector<std::int64_t>({299, 0, 299}).astype(it), small({3}))}), 1});
    }
  }
  check_library_programs(ps);
}

// ---- scan kernels, the sort library kernel, random bits -----------------------

TEST_CASE("cuda emulated: scan kernels (cumsum, cumprod, cummax, cummin, logcumsumexp with producers and consumers) and random integers match the interpreter") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<Program> ps;
  for (DType t : {DType::i32, DType::i64, DType::f32, DType::f64}) {
    Array m = data(t, {37, 300}, 11), n = data(t, {37, 300}, 12);
    // Rows (the scan axis innermost), columns (outer, coalesced serial walks),
    // a middle axis, the flattened array, producers inside and consumers after.
    ps.push_back(plan({aj::cumsum(m * 2 + n, 1) - 1, aj::cumsum(m, 0), aj::cumprod(aj::sign(n), 1)}));
    ps.push_back(plan({aj::cumsum(data(t, {6, 50, 7}, 13), 1), aj::cumsum(data(t, {5000}, 14))}));
    ps.push_back(plan({aj::sum(aj::cumsum(m, 1), 1), aj::cumsum(m.T(), 0)}));
    ps.push_back(plan({aj::cummax(m - n, 1), aj::cummin(m, 0) * 2, aj::logcumsumexp(m.T(), 1)}));
  }
  ps.push_back(plan({aj::cummax(data(DType::bool_, {64, 64}, 16), 1)}));
  ps.push_back(plan({aj::cumsum(data(DType::bool_, {64, 64}, 15), 0)}));
  ps.push_back(plan({aj::random::randint({513}, -100, 100), aj::random::randint({7, 9}, 0, 3, DType::i32),
                     aj::random::bernoulli({300}, 0.25)}));
  check_programs(ps);
}

TEST_CASE("cuda emulated: sort, argsort and topk library kernels match the interpreter (NaN, signed zeros, ties, strides)") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<std::pair<Program, int>> ps;
  std::uint64_t seed = 500;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    for (bool nans : {false, true}) {
      if (nans && !aj::is_float(t)) continue;
      auto small = [&](aj::Shape s) { return random_small(t, s, seed++, nans); };
      Array m = small({37, 300});
      const aj::TopK top = aj::topk(m, 5, 1), top0 = aj::topk(m.T(), 37, 1);
      ps.push_back({plan({aj::sort(m, 1), aj::argsort(m, 0), top.values, top.indices, top0.values, top0.indices}), 2});
      ps.push_back({plan({aj::argsort(aj::slice(small({3001}), 0, std::nullopt, std::nullopt, -2)),
                          aj::sort(small({4, 5, 6}), 1), aj::argsort(small({1, 1}), 0)}), 1});
    }
  }
  ps.push_back({plan({aj::random::permutation(777)}), 1});
  check_library_programs(ps);
}

TEST_CASE("cuda emulated: division by a scalar takes its exact reciprocal, bit for bit with the interpreter") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  // x / s is x * (1/s) only where s is a normal power of two; every other
  // divisor (3, 0, inf, NaN, a subnormal power of two) divides. Numerators
  // reach subnormal results, overflow, signed zeros, inf and NaN.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> xs = {1.0, -1.0, 0.0, -0.0, 3.0, 1e-300, -1e-310, 1e300, inf, -inf, nan, 0.1, 7.5, -2.5e-38,
                            1.4e-45, 3.4e38, 1e-40};
  for (int i = 0; i < 64; ++i) xs.push_back(std::ldexp(0.7 + i * 0.013, (i % 40) - 20) * (i % 3 ? 1 : -1));
  std::vector<Program> ps;
  for (DType t : {DType::f32, DType::f64}) {
    Array x = aj::from_vector<double>(xs).astype(t).eval();
    for (double s : {2.0, 0.5, -4.0, 1.0, 0x1p-126, 0x1p127, 0x1p-130, 3.0, 0.0, -0.0, inf, nan, 0x1p-1022, 0x1p1023,
                     0x1p-1050, 1.0 / 3}) {
      ps.push_back(plan({x / s, (x * 2) / s}));
    }
  }
  const auto src = aj::cuda::render(aj::cuda::collapse_axes(ps[0].schedule.steps.back().kernel)).source;
  CHECK(src.find("aj_exact_recip") != std::string::npos);
  check_programs(ps);
}

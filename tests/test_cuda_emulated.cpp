// The generated CUDA kernels, run on the host (tests/cuda_host_emulator.hpp),
// against the host kernel interpreter on the same Kernel IR and buffers.
//
// Every kernel step of each program is run twice: by cpu::run_kernel (whose
// result the next steps read) and by the generated CUDA C, launched as
// plan_launch plans it for a one-SM device with parameters from pack_params.
// Elementwise results must be bit-identical (same libm on both sides);
// reductions of floats may differ by their summation order.
// Needs a host C++ compiler at test time ($CXX or c++); skips without one.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/host_memory.hpp"
#include "backends/cpu/kernel_interpreter.hpp"
#include "backends/reference/interpreter.hpp"
#include "graph/passes/fuse.hpp"
#include "graph/passes/simplify.hpp"
#include "tests/cuda_host_emulator.hpp"
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
    FAIL(e.what());
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

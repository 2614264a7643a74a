// The CUDA code generator, render-only (no GPU, driver or NVRTC needed): the
// source has the paths it must have (vector loads for contiguous elementwise
// kernels, shuffles for reductions), axes collapse, sizes and scalars are
// parameters. One NVRTC round trip (skipped without NVRTC) checks the compile
// error report. The full compile-only tier is tests/test_cuda_compile.cpp,
// execution on the host tests/test_cuda_emulated.cpp.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <cstdio>
#include <map>
#include <set>
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

// The kernels the optimizer would run for these arrays (computes nothing).
std::vector<Kernel> kernels_of(const std::vector<Array>& arrays) {
  std::vector<aj::NodeId> roots;
  for (auto& a : arrays) {
    if (!a.is_evaluated()) roots.push_back(a.node_id());
  }
  return roots.empty() ? std::vector<Kernel>{} : aj::opt::plan_kernels(roots);
}

bool have_nvrtc(std::string* why) { return aj::cuda::nvrtc_api(why) != nullptr; }

Kernel elementwise_kernel(std::vector<std::int64_t> shape, std::vector<std::vector<std::int64_t>> in_strides,
                          std::vector<std::int64_t> out_strides) {
  Kernel k;
  k.shape = std::move(shape);
  for (auto& s : in_strides) {
    aj::KStream st;
    st.strides = s;
    k.inputs.push_back(st);
  }
  for (std::size_t i = 0; i < k.inputs.size(); ++i) {
    aj::KInstr ld;
    ld.kind = aj::KOp::Load;
    ld.arg = static_cast<std::int32_t>(i);
    k.instrs.push_back(ld);
  }
  aj::KInstr add;
  add.kind = aj::KOp::Binary;
  add.op = aj::Op::Add;
  add.a = 0;
  add.b = static_cast<std::int32_t>(k.inputs.size()) - 1;
  k.instrs.push_back(add);
  aj::KOutput o;
  o.value = static_cast<std::int32_t>(k.instrs.size()) - 1;
  o.stream.strides = std::move(out_strides);
  k.outputs.push_back(o);
  return k;
}

}  // namespace

TEST_CASE("cuda codegen: contiguous axes collapse to one, broadcast and strided axes stay") {
  // [4, 8, 16] row-major everywhere: one axis of 512.
  Kernel k = elementwise_kernel({4, 8, 16}, {{128, 16, 1}, {128, 16, 1}}, {128, 16, 1});
  Kernel c = aj::cuda::collapse_axes(k);
  CHECK(c.shape == std::vector<std::int64_t>{512});
  CHECK(c.inputs[0].strides == std::vector<std::int64_t>{1});
  // A row vector broadcast down the rows keeps two axes; extent-1 axes vanish.
  Kernel b = elementwise_kernel({4, 1, 16}, {{16, 0, 1}, {0, 0, 1}}, {16, 0, 1});
  Kernel cb = aj::cuda::collapse_axes(b);
  CHECK(cb.shape == std::vector<std::int64_t>{4, 16});
  CHECK(cb.inputs[1].strides == std::vector<std::int64_t>{0, 1});
  // A transposed input cannot merge.
  Kernel t = elementwise_kernel({8, 16}, {{1, 8}, {16, 1}}, {16, 1});
  CHECK(aj::cuda::collapse_axes(t).shape == std::vector<std::int64_t>{8, 16});
  // Every extent 1: one axis of extent 1, never rank 0.
  Kernel one = elementwise_kernel({1, 1}, {{0, 0}, {0, 0}}, {0, 0});
  CHECK(aj::cuda::collapse_axes(one).shape == std::vector<std::int64_t>{1});
}

TEST_CASE("cuda codegen: a contiguous elementwise kernel has a 16-byte vector path, a strided one not") {
  Kernel k = elementwise_kernel({1000}, {{1}, {0}}, {1});
  auto src = aj::cuda::render(aj::cuda::collapse_axes(k));
  CHECK(src.vec == 4);  // f32: 4 lanes of 16 bytes
  CHECK(src.source.find("if (p.vec)") != std::string::npos);
  CHECK(src.source.find("aj_vec<float, 4>") != std::string::npos);
  CHECK(src.source.find("__global__") != std::string::npos);
  k.inputs[0].dtype = k.inputs[1].dtype = k.outputs[0].stream.dtype = DType::f64;
  for (auto& in : k.instrs) in.dtype = DType::f64;
  CHECK(aj::cuda::render(aj::cuda::collapse_axes(k)).vec == 2);
  Kernel t = elementwise_kernel({8, 16}, {{1, 8}, {16, 1}}, {16, 1});
  auto ts = aj::cuda::render(aj::cuda::collapse_axes(t));
  CHECK(ts.vec == 0);
  CHECK(ts.source.find("if (p.vec)") == std::string::npos);
}

TEST_CASE("cuda codegen: sizes and scalar values are parameters, not source") {
  auto a = aj::from_vector<float>(std::vector<float>(100, 1.f));
  auto b = aj::from_vector<float>(std::vector<float>(3000, 1.f));
  auto ka = kernels_of({a * 2.5f + 1.f});
  auto kb = kernels_of({b * 7.0f + 3.f});
  REQUIRE(ka.size() == 1);
  REQUIRE(kb.size() == 1);
  auto sa = aj::cuda::render(aj::cuda::collapse_axes(ka[0]));
  auto sb = aj::cuda::render(aj::cuda::collapse_axes(kb[0]));
  CHECK(sa.hash == sb.hash);
  CHECK(sa.source == sb.source);
  // The packed block carries the sizes and the scalars' bits.
  auto pa = aj::cuda::pack_params(aj::cuda::collapse_axes(ka[0]), {0, 0}, {}, 0);
  CHECK(pa.size() * 8 == sa.param_bytes);
  CHECK(pa[0] == 100);
}

TEST_CASE("cuda codegen: values computed from scalars alone are hoisted out of every loop") {
  // A bf16 compared with a scalar: the scalar's conversion (a branchy
  // software rounding) inside the unrolled 8-lane vector path took NVRTC
  // 172 s and 2.4 MB of PTX (random graph 0xd1ff000 + 2333 on the GPU).
  auto x = aj::from_vector<float>(std::vector<float>(1000, 1.f)).astype(aj::DType::bf16).eval();
  auto m = aj::from_vector<float>(std::vector<float>(64 * 32, 1.f), aj::Shape{64, 32});
  for (const Array& y : std::vector<Array>{x == aj::full({}, 1.5, aj::DType::bf16), aj::sum(m * 2.5f, 1) * 3.f + 1.f}) {
    auto ks = kernels_of({y});
    REQUIRE(ks.size() == 1);
    const std::string src = aj::cuda::render(aj::cuda::collapse_axes(ks[0])).source;
    // Every entry point converts the scalars before its first loop, and no
    // loop converts one again.
    for (const char* entry : {"aj_k(", "aj_k_finish(", "aj_k_serial("}) {
      const auto at = src.find(entry);
      if (at == std::string::npos) continue;
      const auto first_loop = src.find("for (", at);
      const auto first_sf = src.find("p.sf[0]", at);
      REQUIRE(first_sf != std::string::npos);
      CHECK_MESSAGE(first_sf < first_loop, entry << "\n" << src.substr(at, 1200));
      const auto next = src.find("__global__", at);
      CHECK(src.substr(first_loop, next == std::string::npos ? std::string::npos : next - first_loop).find("p.sf[") ==
            std::string::npos);
    }
  }
}

TEST_CASE("cuda codegen: a reduction over rows walks them with 16-byte loads where rows allow") {
  // The seed case on a GPU (sum over rows of 16384^2 f32) read at 36% of the
  // copy bandwidth with one 4-byte load per thread in flight.
  auto m = aj::from_vector<float>(std::vector<float>(16 * 256, 1.f), aj::Shape{16, 256});
  auto ks = kernels_of({aj::sum(m * 2.f, 1)});
  REQUIRE(ks.size() == 1);
  const Kernel c = aj::cuda::collapse_axes(ks[0]);
  const auto src = aj::cuda::render(c);
  CHECK(src.vec == 4);
  CHECK(src.source.find("const aj_vec<float, 4> w0") != std::string::npos);
  auto launch = [&](std::uint64_t in) { return aj::cuda::plan_launch(c, src.vec, 132, {in, 0x2000}); };
  CHECK(launch(0x1000).mode == aj::cuda::LaunchShape::Mode::blocks);
  CHECK(launch(0x1000).vec);
  CHECK_FALSE(launch(0x1004).vec);  // rows not on a 16-byte boundary
  // A reduced extent that is not a multiple of the width walks scalar.
  auto odd = aj::from_vector<float>(std::vector<float>(16 * 258, 1.f), aj::Shape{16, 258});
  const Kernel co = aj::cuda::collapse_axes(kernels_of({aj::sum(odd, 1)})[0]);
  CHECK_FALSE(aj::cuda::plan_launch(co, aj::cuda::render(co).vec, 132, {0x1000, 0x2000}).vec);
  // Column sums (the reduced axis is not the last) have no vector walk.
  const Kernel cc = aj::cuda::collapse_axes(kernels_of({aj::sum(m, 0)})[0]);
  CHECK(aj::cuda::render(cc).vec == 0);
}

TEST_CASE("cuda codegen: reductions combine with warp shuffles and have a two-pass path") {
  auto x = aj::from_vector<float>(std::vector<float>(64 * 32, 1.f), aj::Shape{64, 32});
  auto ks = kernels_of({aj::sum(x, 1), aj::max(x, 0), aj::sum(x)});
  REQUIRE(ks.size() == 3);
  for (auto& k : ks) {
    auto src = aj::cuda::render(aj::cuda::collapse_axes(k));
    CHECK(src.reduction);
    CHECK(src.source.find("aj_shfl_down") != std::string::npos);
    CHECK(src.source.find("aj_k_finish") != std::string::npos);
    CHECK(src.source.find("aj_k_serial") != std::string::npos);
  }
}

TEST_CASE("cuda codegen: library kernels take sizes, strides and addresses as parameters; their launch splits follow the shape") {
  using namespace aj::cuda;
  // Two matmuls of different sizes and layouts (one transposed, one with a
  // broadcast batch) share one source; the parameter block fits it.
  const LibraryLaunch a = plan_matmul(DType::f32, {2, 37, 71}, 53, {0x1000, {0, 53, 1}, 0}, {0x2000, {53 * 71, 71, 1}, 0}, 0x3000, 4);
  const LibraryLaunch b = plan_matmul(DType::f32, {5, 300, 9}, 7, {0x1000, {2100, 1, 300}, 3}, {0x2000, {0, 9, 1}, 0}, 0x3000, 4);
  CHECK(a.spec == b.spec);
  const KernelSource src = render_library(a.spec);
  CHECK(src.param_bytes == a.params.size() * 8);
  CHECK(src.param_bytes == b.params.size() * 8);
  CHECK(a.grid == 2 * 1 * 2);  // batches x row tiles x column tiles
  CHECK(src.source.find("__shared__ float sa[16][64 + 1]") != std::string::npos);
  CHECK(src.source.find("__launch_bounds__(256) aj_k(const P p)") != std::string::npos);
  CHECK(render_library({LibraryOp::matmul, DType::i32, 1}).source.find("aj::sem::binary(aj::Op::Add, acc[i][j], aj::sem::binary(aj::Op::Mul, a[i], b[j]))") !=
        std::string::npos);  // integers wrap
  // copy: contiguous input and output slice merge to one axis; a transposed input does not.
  CHECK(plan_copy(DType::i32, {4, 3, 5}, {0, {15, 5, 1}, 0}, {0, {15, 5, 1}, 60}, 4).spec.rank == 1);
  CHECK(plan_copy(DType::i32, {4, 3, 5}, {0, {15, 5, 1}, 0}, {0, {40, 5, 1}, 10}, 4).spec.rank == 2);
  CHECK(plan_copy(DType::i32, {4, 3, 5}, {0, {1, 4, 12}, 0}, {0, {15, 5, 1}, 0}, 4).spec.rank == 3);
  CHECK(plan_copy(DType::i32, {4, 0, 5}, {0, {0, 5, 1}, 0}, {0, {15, 5, 1}, 0}, 4).grid == 0);
}

TEST_CASE("cuda compile: NVRTC compiles a kernel and reports a broken one with log and source") {
  std::string why;
  if (!have_nvrtc(&why)) {
    MESSAGE(why << ": skipped");
    return;
  }
  auto x = aj::from_vector<float>(std::vector<float>(16, 1.f));
  auto ks = kernels_of({aj::exp(-x * x / 2.f) * aj::sin(3.f * x) + 0.5f * aj::cos(x)});
  REQUIRE(ks.size() == 1);
  auto src = aj::cuda::render(aj::cuda::collapse_axes(ks[0]));
  aj::cuda::CompileOptions opt;
  opt.disk_cache = false;
  auto img = aj::cuda::compile(src, 90, opt);
  CHECK(img->bytes.size() > 100);
  // The memory cache hands back the same image.
  CHECK(aj::cuda::compile(src, 90, opt).get() == img.get());
  aj::cuda::KernelSource bad = src;
  bad.source += "\nthis is not CUDA;\n";
  bad.hash ^= 1;
  try {
    aj::cuda::compile(bad, 90, opt);
    FAIL("a broken kernel compiled");
  } catch (const aj::Error& e) {
    const std::string m = e.what();
    CHECK(m.find("NVRTC failed to compile") != std::string::npos);
    CHECK(m.find("--- log ---") != std::string::npos);
    CHECK(m.find("this is not CUDA") != std::string::npos);  // the numbered source
    CHECK(e.kind() == aj::Error::Kind::runtime);
  }
}

// What the source promises, checked in what NVVM made of it (PTX for sm_90):
// the vector path really issues 16-byte global loads and stores, and the
// reductions really use warp shuffles. A GPU is not needed to see that.
TEST_CASE("cuda compile: the PTX has 16-byte global loads/stores and warp shuffles where the source asks") {
  std::string why;
  if (!have_nvrtc(&why)) {
    MESSAGE(why << ": skipped");
    return;
  }
  aj::cuda::CompileOptions opt;
  opt.disk_cache = false;
  opt.ptx_only = true;
  auto ptx_of = [&](const Kernel& k) {
    auto img = aj::cuda::compile(aj::cuda::render(aj::cuda::collapse_axes(k)), 90, opt);
    CHECK_FALSE(img->cubin);
    return img->bytes;
  };
  auto has = [](const std::string& ptx, const char* what) { return ptx.find(what) != std::string::npos; };
  // Contiguous f32 and f64 elementwise: v4 of 4 bytes and v2 of 8 bytes (16).
  Kernel k = elementwise_kernel({1000}, {{1}, {1}}, {1});
  std::string p32 = ptx_of(k);
  CHECK(has(p32, ".v4.f32"));
  CHECK((has(p32, "ld.global.v4.f32") || has(p32, "ld.global.nc.v4.f32")));
  CHECK(has(p32, "st.global.v4.f32"));
  k.inputs[0].dtype = k.inputs[1].dtype = k.outputs[0].stream.dtype = DType::f64;
  for (auto& in : k.instrs) in.dtype = DType::f64;
  std::string p64 = ptx_of(k);
  CHECK((has(p64, "ld.global.v2.f64") || has(p64, "ld.global.nc.v2.f64")));
  CHECK(has(p64, "st.global.v2.f64"));
  // A transposed input: no vector path at all.
  std::string pt = ptx_of(elementwise_kernel({8, 16}, {{1, 8}, {16, 1}}, {16, 1}));
  CHECK_FALSE(has(pt, ".v4.f32"));
  // Reductions: shuffles in the block strategy.
  auto x = aj::from_vector<float>(std::vector<float>(64 * 32, 1.f), aj::Shape{64, 32});
  for (const Kernel& r : kernels_of({aj::sum(x, 1), aj::max(x)})) CHECK(has(ptx_of(r), "shfl.sync.down"));
}

TEST_CASE("cuda compile: the disk cache serves a second process, and AJ_LOG=cuda prints the source") {
  std::string why;
  if (!have_nvrtc(&why)) {
    MESSAGE(why << ": skipped");
    return;
  }
  char dir[] = "/tmp/aj_cuda_cache_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  setenv("AJ_CACHE_DIR", dir, 1);
  setenv("AJ_LOG", "cuda", 1);
  auto x = aj::from_vector<double>(std::vector<double>(8, 1.0));
  auto ks = kernels_of({aj::tanh(x) * 7.0 - x});
  REQUIRE(ks.size() == 1);
  auto src = aj::cuda::render(aj::cuda::collapse_axes(ks[0]));
  aj::cuda::CompileOptions opt;
  opt.memory_cache = false;  // as a new process would
  opt.driver_version = 12345;
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const auto before = aj::cuda::compile_counters();
  auto a = aj::cuda::compile(src, 90, opt);
  auto b = aj::cuda::compile(src, 90, opt);
  const auto after = aj::cuda::compile_counters();
  std::cerr.rdbuf(old);
  unsetenv("AJ_LOG");
  unsetenv("AJ_CACHE_DIR");
  CHECK(after.compiles == before.compiles + 1);
  CHECK(after.disk_hits == before.disk_hits + 1);
  CHECK(a->bytes == b->bytes);
  CHECK(b->cubin);
  CHECK(captured.str().find("[aj:cuda] kernel") != std::string::npos);
  CHECK(captured.str().find("tanh(") != std::string::npos);
  std::system((std::string("rm -rf ") + dir).c_str());
}

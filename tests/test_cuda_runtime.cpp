// The CUDA runtime, in two tiers:
//  - no GPU (always runs where there is none): asking for a CUDA device
//    throws aj::Error naming what is missing; the source API works anyway.
//  - GPU (skips with "no GPU: <reason>: skipped" elsewhere): values computed on
//    the device match the reference interpreter (the differential random
//    graphs, every op table entry, the library kernels: matmul, argmax/argmin,
//    concatenate), work is ordered on a caller's stream,
//    donation runs in place on the device, out of memory throws and leaves
//    arrays valid.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/api/executor.hpp"
#include "graph/graph.hpp"
#include "jit/cuda/cuda_api.hpp"
#include "jit/cuda/nvrtc_compile.hpp"
#include "tests/random_graph.hpp"

namespace {

using aj::Array;
using aj::Device;
using aj::DType;

bool skip_without_gpu() {
  if (aj::cuda::available()) return false;
  MESSAGE("no GPU: " << aj::cuda::unavailable_reason() << ": skipped");
  return true;
}

std::vector<float> iota_f(int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.25f - 3.f;
  return v;
}

// Random values as dtype t: reals in [-1, 1) for floats (with `nans`, some
// NaNs and signed zeros), integers in [-range, range] otherwise.
Array random_array(DType t, aj::Shape shape, std::uint64_t seed, std::int64_t range = 8, bool nans = false) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t r = s >> 11;
    x = aj::is_float(t) ? static_cast<double>(r) * 0x1.0p-52 - 1.0
                        : static_cast<double>(static_cast<std::int64_t>(r % static_cast<std::uint64_t>(2 * range + 1)) - range);
    if (nans && r % 23 == 0) x = std::nan("");
    if (nans && r % 23 == 1) x = -0.0;
  }
  return aj::from_vector<double>(v, shape).astype(t).eval();
}

std::vector<double> doubles(const Array& a) { return a.astype(DType::f64).to_vector<double>(); }

// Equal (NaN equal to NaN), or for floats within `tol` relative to `scale`.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])) ||
                    std::fabs(got[i] - want[i]) <= tol;
    if (!ok) {
      FAIL_CHECK(what << " element " << i << ": device " << got[i] << ", host " << want[i]);
      return;
    }
  }
}

}  // namespace

// ---- tier 0: no GPU ----------------------------------------------------------------

TEST_CASE("cuda: without a driver or device, asking for one throws an error saying which") {
  if (aj::cuda::available()) {
    CHECK(aj::cuda::device_count() > 0);
    CHECK(aj::cuda::unavailable_reason().empty());
    return;
  }
  const std::string why = aj::cuda::unavailable_reason();
  CHECK(aj::cuda::device_count() == 0);
  const bool known = why.find("no driver (libcuda.so.1 not found") != std::string::npos ||
                     why.find("no CUDA device") != std::string::npos ||
                     why.find("no usable driver") != std::string::npos;
  CHECK_MESSAGE(known, why);
  auto expect = [&](auto&& f) {
    try {
      f();
      FAIL("no error without a GPU");
    } catch (const aj::Error& e) {
      CHECK(e.kind() == aj::Error::Kind::runtime);
      CHECK(std::string(e.what()).find("CUDA is unavailable: " + why) != std::string::npos);
    }
  };
  Array x = aj::from_vector<float>({1.f, 2.f, 3.f});
  expect([&] { (void)x.to(Device::cuda(0)); });
  expect([&] { (void)aj::ones({4}).to(Device::cuda(0)); });  // a fill made on the device
  expect([&] { (void)aj::cuda::Stream::default_stream(0); });
  expect([&] { aj::cuda::DeviceScope scope(Device::cuda(0)); });
  // The host path is untouched by the failed requests.
  CHECK(x.to(Device::cpu()).to_vector<float>() == std::vector<float>{1.f, 2.f, 3.f});
  CHECK((x * 2).device() == Device::cpu());
}

TEST_CASE("cuda: NVRTC is found or its absence explained") {
  if (aj::cuda::compiler_available()) {
    CHECK(aj::cuda::compiler_reason().empty());
    CHECK(aj::cuda::nvrtc_description().find("NVRTC") == 0);
  } else {
    CHECK(aj::cuda::compiler_reason().find("NVRTC not found") == 0);
  }
}

TEST_CASE("cuda: kernel_source shows the kernels without a GPU and computes nothing") {
  Array x = aj::from_vector<float>(iota_f(1000));
  Array y = aj::exp(-x * x / 2.f) * aj::sin(3.f * x) + 0.5f * aj::cos(x);
  const std::string src = aj::cuda::kernel_source({y});
  CHECK(src.find("// ---- kernel 0") != std::string::npos);
  CHECK(src.find("aj_vec<float, 4>") != std::string::npos);  // 16-byte loads and stores
  CHECK(src.find("expf(") != std::string::npos);
  // y and its sum share one reduction kernel with two outputs.
  const std::string both = aj::cuda::kernel_source({y, aj::sum(y)});
  CHECK(both.find("// ---- kernel 1") == std::string::npos);
  CHECK(both.find("aj_shfl_down") != std::string::npos);
  CHECK_FALSE(y.is_evaluated());
}

TEST_CASE("cuda: kernel_source shows the library kernels of matmul and concatenate, and argmax/argmin as reductions") {
  Array a = aj::from_vector<float>(iota_f(6 * 4), aj::Shape{6, 4});
  Array b = aj::from_vector<double>(std::vector<double>(2 * 4 * 3, 1.0), aj::Shape{2, 4, 3});
  const std::string src = aj::cuda::kernel_source(
      {aj::matmul(a, b), aj::argmin(a, 1), aj::concatenate({a, a * 2.f}, 0), aj::concatenate({a, a}, 1),
       aj::argmax(a.T(), 1)});
  CHECK(src.find("arrayjit CUDA library kernel: matmul f64, rank 1") != std::string::npos);
  // Along axis 0 both sides are contiguous: one merged axis; along axis 1 not.
  CHECK(src.find("arrayjit CUDA library kernel: copy f32, rank 1") != std::string::npos);
  CHECK(src.find("arrayjit CUDA library kernel: copy f32, rank 2") != std::string::npos);
  CHECK(src.find("__shared__ double sa[16][64 + 1]") != std::string::npos);
  // argmax/argmin: generated reductions carrying (value, index) pairs.
  CHECK(src.find("library kernel: arg") == std::string::npos);
  CHECK(src.find("aj::sem::arg_take(aj::Op::ArgMin") != std::string::npos);
  CHECK(src.find("aj::sem::arg_take(aj::Op::ArgMax") != std::string::npos);
  CHECK(src.find("aj_k_finish") != std::string::npos);
}

// ---- tier 2: on a GPU -----------------------------------------------------------------

TEST_CASE("cuda gpu: elementwise, reductions and transfers match the host") {
  if (skip_without_gpu()) return;
  const auto v = iota_f(100003);  // odd: the vector path's tail runs too
  Array h = aj::from_vector<float>(v);
  Array d = h.to(Device::cuda(0));
  CHECK(d.device() == Device::cuda(0));
  Array yd = aj::maximum(d * 2.f + 1.f, 0.f);
  CHECK(yd.device() == Device::cuda(0));
  const auto got = yd.to_vector<float>();
  const auto want = aj::maximum(h * 2.f + 1.f, 0.f).to_vector<float>();
  CHECK(got == want);
  Array m = aj::from_vector<float>(iota_f(300 * 257), aj::Shape{300, 257});
  Array md = m.to(Device::cuda(0));
  for (int axis : {0, 1}) {
    const auto a = aj::sum(md, axis).to_vector<float>();
    const auto b = aj::sum(m, axis).to_vector<float>();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-3f * (1 + std::fabs(b[i])));
    CHECK(aj::max(md, axis).to_vector<float>() == aj::max(m, axis).to_vector<float>());
  }
  CHECK(std::fabs(aj::sum(md).item<float>() - aj::sum(m).item<float>()) < 1.f);
  CHECK(aj::ones({1000}, DType::i64).to(Device::cuda(0)).device() == Device::cuda(0));
  CHECK(aj::sum(aj::arange(1000).to(Device::cuda(0))).item<std::int64_t>() == 499500);
}

TEST_CASE("cuda gpu: mixing host and device arrays in one op is a trace-time error naming both") {
  if (skip_without_gpu()) return;
  Array h = aj::from_vector<float>({1.f, 2.f});
  Array d = h.to(Device::cuda(0));
  try {
    (void)(h + d);
    FAIL("no error");
  } catch (const aj::Error& e) {
    const std::string m = e.what();
    CHECK(e.kind() == aj::Error::Kind::user);
    CHECK(m.find("cpu") != std::string::npos);
    CHECK(m.find("cuda:0") != std::string::npos);
  }
  CHECK((d + 1.f).to_vector<float>() == std::vector<float>{2.f, 3.f});  // a scalar is device-neutral
}

TEST_CASE("cuda gpu: a = a + 2 runs in place on the device") {
  if (skip_without_gpu()) return;
  Array a = aj::arange(1 << 20, DType::f32).to(Device::cuda(0));  // a full buffer (a fill is one element, broadcast)
  const auto before = aj::stats().inplace_reuses;
  for (int i = 0; i < 3; ++i) {
    a = a + 2.f;
    a.eval();
  }
  CHECK(aj::stats().inplace_reuses - before == 3);
  CHECK(a.to_vector<float>()[12345] == 12351.f);
}

TEST_CASE("cuda gpu: eval on a caller's stream is ordered after the caller's kernel on it") {
  if (skip_without_gpu()) return;
  using namespace aj::cuda;
  const int n = 1 << 22;
  Array x = aj::zeros({n}).to(Device::cuda(0));
  Stream::default_stream(0).synchronize();  // x's fill is done; only the caller's stream matters now
  // The caller's kernel: every block sleeps first (so a reader on another
  // stream would see the zeros), then writes 7 everywhere.
  KernelSource src;
  src.source = R"(extern "C" __global__ void slow_fill(float* p, long long n) {
    if (threadIdx.x == 0) { for (int i = 0; i < 2000; ++i) __nanosleep(10000); }  // ~20 ms per block
    __syncthreads();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) p[i] = 7.f;
  })";
  src.hash = std::hash<std::string>()(src.source);
  int major = 0, minor = 0;
  CUdevice dev = 0;
  AJ_CU(cuDeviceGet, &dev, 0);
  AJ_CU(cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  AJ_CU(cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  auto img = compile(src, major * 10 + minor);
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  AJ_CU(cuModuleLoadData, &mod, img->bytes.data());
  AJ_CU(cuModuleGetFunction, &fn, mod, "slow_fill");
  CUstream mine = nullptr;
  AJ_CU(cuStreamCreate, &mine, CU_STREAM_NON_BLOCKING);
  void* ptr = aj::graph()[x.node_id()].storage->data;
  long long count = n;
  void* args[] = {&ptr, &count};
  AJ_CU(cuLaunchKernel, fn, 256u, 1u, 1u, 256u, 1u, 1u, 0u, mine, args, nullptr);
  Array y = x * 2.f;
  aj::cuda::eval({y}, Stream::wrap(mine, 0));  // enqueued on `mine`, after slow_fill
  {
    StreamGuard guard(Stream::wrap(mine, 0));
    const auto v = y.to_vector<float>();  // synchronizes `mine` only
    CHECK(v.front() == 14.f);
    CHECK(v.back() == 14.f);
  }
}

TEST_CASE("cuda gpu: out of memory throws with the sizes and leaves arrays valid") {
  if (skip_without_gpu()) return;
  Array keep = aj::full({1000}, 3.f, DType::f32).to(Device::cuda(0));
  keep.eval();
  try {
    (void)aj::arange(std::int64_t{1} << 42, DType::f32).to(Device::cuda(0));  // 16 TiB, computed there
    FAIL("allocated 16 TiB");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("out of CUDA memory") != std::string::npos);
    CHECK(std::string(e.what()).find("17592186044416 bytes") != std::string::npos);
  }
  CHECK(aj::sum(keep).item<float>() == 3000.f);
}

TEST_CASE("cuda gpu: random graphs on the GPU agree with the reference interpreter") {
  if (skip_without_gpu()) return;
  using aj::detail::Executor;
  // AJ_GPU_GRAPHS graphs from index AJ_GPU_GRAPH_FIRST (the GPU machine runs
  // the suite in parallel shards, bench/device/run.sh), stopping early after
  // AJ_GPU_GRAPH_SECONDS: how many were compared is printed either way.
  auto env_int = [](const char* name, long long fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoll(v) : fallback;
  };
  const long long graphs = env_int("AJ_GPU_GRAPHS", std::getenv("AJ_TEST_LONG") ? 3000 : 300);
  const long long first = env_int("AJ_GPU_GRAPH_FIRST", 0);
  const double seconds = static_cast<double>(env_int("AJ_GPU_GRAPH_SECONDS", 0));
  const auto start = std::chrono::steady_clock::now();
  int mismatches = 0;
  long long compared = 0;
  for (long long i = first; i < first + graphs; ++i) {
    if (seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) break;
    ++compared;
    const std::uint64_t seed = 0xd1ff000 + static_cast<std::uint64_t>(i);
    auto run = [&](bool gpu) {
      std::optional<aj::cuda::DeviceScope> scope;
      std::optional<aj::detail::ExecutorScope> ex;
      if (gpu) scope.emplace(Device::cuda(0));
      else ex.emplace(Executor::reference);
      return ajtest::evaluate_graph(seed);
    };
    std::vector<ajtest::GraphOutput> want, got;
    try {
      want = run(false);
      got = run(true);
    } catch (const aj::Error& e) {
      FAIL_CHECK("seed " << seed << ": " << e.what());
      ++mismatches;
      continue;
    }
    REQUIRE(want.size() == got.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      auto m = ajtest::compare_output(want[k], got[k]);
      if (m) {
        ++mismatches;
        FAIL_CHECK("seed " << seed << " output " << k << ": " << *m << " (rerun: AJ_DIFF_SEED=" << seed << ")");
      }
    }
  }
  MESSAGE("random graphs on the GPU: " << compared << " compared (indices " << first << ".."
                                         << first + compared - 1 << "), " << mismatches << " mismatched");
  CHECK(mismatches == 0);
}

TEST_CASE("cuda gpu: matmul on the device matches the host (every dtype, edge tiles, broadcast batches, transposes, K = 0)") {
  if (skip_without_gpu()) return;
  std::uint64_t seed = 1;
  for (DType t : {DType::i32, DType::i64, DType::f32, DType::f64}) {
    // Integers up to 1e5: products overflow i32 and wrap the same in any
    // order. Reals in [-1, 1): the host sums in Eigen's order, the device in
    // k order, within 2 k^2 eps.
    auto r = [&](aj::Shape s) { return random_array(t, s, seed++, 100000); };
    const std::vector<Array> in = {r({300, 500}), r({500, 257}), r({3, 1, 37, 9}), r({4, 9, 70}),
                                   r({5, 0}),     r({0, 7}),     r({0, 4, 5}),     r({5, 6})};
    auto ops = [](const std::vector<Array>& v) {
      return std::vector<std::pair<std::string, Array>>{
          {"300x500 @ 500x257", aj::matmul(v[0], v[1])},
          {"broadcast batches", aj::matmul(v[2], v[3])},
          {"transposed operands", aj::matmul(v[1].T(), v[0].T())},
          {"sliced operands", aj::matmul(aj::slice(v[0], 1, std::nullopt, std::nullopt, 2), aj::slice(v[1], 0, 0, 250))},
          {"K = 0", aj::matmul(v[4], v[5])},
          {"empty batch", aj::matmul(v[6], v[7])},
      };
    };
    std::vector<Array> dev;
    for (const Array& a : in) dev.push_back(a.to(Device::cuda(0)));
    const auto want = ops(in), got = ops(dev);
    const double eps = t == DType::f32 ? 0x1.0p-23 : t == DType::f64 ? 0x1.0p-52 : 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      CHECK(got[k].second.device() == Device::cuda(0));
      const double inner = 500;
      check_close(doubles(got[k].second), doubles(want[k].second), 2 * inner * inner * eps,
                  std::string(aj::dtype_name(t)) + " " + want[k].first);
    }
  }
}

TEST_CASE("cuda gpu: argmax/argmin on the device match the host (every dtype, ties, NaN, strided axes, whole arrays)") {
  if (skip_without_gpu()) return;
  std::uint64_t seed = 100;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    // Integers in [-3, 3] and bools tie often; floats carry NaNs and -0.0.
    auto r = [&](aj::Shape s) { return random_array(t, s, seed++, 3, true); };
    const std::vector<Array> in = {r({37, 300}), r({100, 5000}), r({3, 100000}), r({1000, 1000}), r({6, 50, 7})};
    auto ops = [](const std::vector<Array>& v) {
      return std::vector<std::pair<std::string, Array>>{
          {"argmax rows", aj::argmax(v[0], 1)},          {"argmin columns", aj::argmin(v[0], 0)},
          {"argmax column walk", aj::argmax(v[1], 0)},   {"argmin long rows", aj::argmin(v[2], 1)},
          {"argmax strided axis", aj::argmax(v[2].T(), 0)}, {"argmax whole", aj::argmax(v[3])},
          {"argmin whole", aj::argmin(v[3])},             {"argmax middle axis", aj::argmax(v[4], 1)},
      };
    };
    std::vector<Array> dev;
    for (const Array& a : in) dev.push_back(a.to(Device::cuda(0)));
    const auto want = ops(in), got = ops(dev);
    for (std::size_t k = 0; k < want.size(); ++k) {
      CHECK(got[k].second.device() == Device::cuda(0));
      CHECK_MESSAGE(got[k].second.to_vector<std::int64_t>() == want[k].second.to_vector<std::int64_t>(),
                    aj::dtype_name(t) << " " << want[k].first);
    }
  }
}

TEST_CASE("cuda gpu: concatenate on the device matches the host (every dtype, middle axis, strided and empty inputs)") {
  if (skip_without_gpu()) return;
  std::uint64_t seed = 200;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    auto r = [&](aj::Shape s) { return random_array(t, s, seed++, 1000); };
    const std::vector<Array> in = {r({40, 30, 50}), r({40, 1, 50}), r({50, 70, 40}), r({40, 0, 50}), r({100000})};
    auto ops = [](const std::vector<Array>& v) {
      return std::vector<std::pair<std::string, Array>>{
          {"middle axis", aj::concatenate({v[0], v[1], v[2].transpose({2, 1, 0}), v[3]}, 1)},
          {"first axis, reversed input", aj::concatenate({aj::slice(v[0], 0, std::nullopt, std::nullopt, -1), v[0]}, 0)},
          {"last axis", aj::concatenate({v[0], aj::slice(v[2].transpose({2, 1, 0}), 1, 0, 30)}, -1)},
          {"rank 1", aj::concatenate({v[4], v[4], aj::slice(v[4], 0, 5, 10)})},
      };
    };
    std::vector<Array> dev;
    for (const Array& a : in) dev.push_back(a.to(Device::cuda(0)));
    const auto want = ops(in), got = ops(dev);
    for (std::size_t k = 0; k < want.size(); ++k) {
      CHECK(got[k].second.device() == Device::cuda(0));
      check_close(doubles(got[k].second), doubles(want[k].second), 0, std::string(aj::dtype_name(t)) + " " + want[k].first);
    }
  }
}

// The CUDA runtime and pipeline path end to end, without a GPU: a fake driver
// (host memory for device memory, no-op streams and events) is swapped into
// the symbol table, and its cuLaunchKernel runs the generated kernels on the
// host (tests/cuda_host_emulator.hpp). This exercises what the GPU tests
// would, except the real driver and CUDA's math library: Array::to, creation
// on the device, the bridge's kernel and library-kernel steps (matmul,
// concatenate, argmax/argmin) and host-round-trip steps, donation on
// the device, the allocator's bookkeeping and out-of-memory path, stream
// guards and cross-stream waits, reading values back.
//
// Each scenario runs twice: first with launches switched off to collect the
// kernels it needs (values never change what is traced), then, once those
// are compiled into one host library, for real.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/cuda.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_runtime.hpp"
#include "core/api/executor.hpp"
#include "jit/cuda/cuda_api.hpp"
#include "jit/cuda/nvrtc_compile.hpp"
#include "tests/cuda_fake_driver.hpp"
#include "tests/cuda_host_emulator.hpp"
#include "tests/random_data.hpp"
#include "tests/random_graph.hpp"

namespace {

using namespace aj::cuda;
using namespace ajtest::fake_cuda;
using aj::Array;
using aj::Device;
using aj::DType;

// Small random integers as dtype t (sums exact in any order, many ties);
// with `nans` some NaNs and -0.0 among them.
Array random_small(DType t, aj::Shape shape, std::uint64_t seed, bool nans = false) {
  const auto n = static_cast<std::size_t>(shape.numel());
  return aj::from_vector<double>(ajtest::small_values(n, seed, nans), shape).astype(t).eval();
}

// Values as doubles (exact for the small integers above), NaN as NaN.
std::vector<double> doubles(const Array& a) { return a.astype(DType::f64).to_vector<double>(); }

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  }
  return true;
}

std::vector<float> values(int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i % 29) * 0.5f - 7.f;
  return v;
}

}  // namespace

TEST_CASE("cuda fake driver: arrays on the device compute what the host computes") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  FakeGpu gpu;
  CHECK(available());
  const auto v = values(5003);
  const Array h = aj::from_vector<float>(v);
  const Array hm = aj::from_vector<float>(values(40 * 70), aj::Shape{40, 70});
  struct Out {
    std::vector<float> ew, rows, cols, mm, all;
    std::vector<std::int64_t> ar, am;
    aj::Device dev;
    int arange_uploads = 0;
  };
  auto body = [&] {
    Out o;
    Array d = h.to(Device::cuda(0));
    Array dm = hm.to(Device::cuda(0));
    Array y = aj::maximum(d * 2.f + 1.f, 0.f) / 3.f;
    o.dev = y.device();
    o.ew = y.to_vector<float>();
    o.rows = aj::sum(dm, 1).to_vector<float>();
    o.cols = aj::max(dm, 0).to_vector<float>();
    o.all = {aj::sum(d).item<float>()};
    o.mm = aj::matmul(dm, dm.T()).to_vector<float>();  // a library kernel
    const int uploads = fake().uploads;
    Array ar = aj::arange(100).to(Device::cuda(0));  // made on the device: no host buffer, no copy
    o.arange_uploads = fake().uploads - uploads;
    o.ar = ar.to_vector<std::int64_t>();
    o.am = {aj::argmax(dm).item<std::int64_t>()};
    return o;
  };
  const Out got = gpu.twice(body);
  CHECK(got.dev == Device::cuda(0));
  CHECK(got.ew == (aj::maximum(h * 2.f + 1.f, 0.f) / 3.f).to_vector<float>());
  CHECK(got.rows == aj::sum(hm, 1).to_vector<float>());  // quarter-valued: sums are exact
  CHECK(got.cols == aj::max(hm, 0).to_vector<float>());
  CHECK(got.all[0] == aj::sum(h).item<float>());
  CHECK(got.mm == aj::matmul(hm, hm.T()).to_vector<float>());
  CHECK(got.ar == aj::arange(100).to_vector<std::int64_t>());
  CHECK(got.arange_uploads == 0);
  CHECK(got.am[0] == aj::argmax(hm).item<std::int64_t>());
  CHECK(fake().threshold_raised);
  CHECK(fake().live == 0);  // every device buffer was freed
}

TEST_CASE("cuda fake driver: in place on the device, mixing is an error, streams wait, out of memory throws") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  FakeGpu gpu;
  auto body = [&] {
    Array a = aj::arange(4096, DType::f32).to(Device::cuda(0));  // a full buffer (a fill is one element, broadcast)
    const auto before = aj::stats().inplace_reuses;
    for (int i = 0; i < 3; ++i) {
      a = a + 2.f;
      a.eval();
    }
    const auto reused = aj::stats().inplace_reuses - before;
    // A second stream: the buffer last used on the default stream is waited for.
    CUstream mine = nullptr;
    f_stream_create(&mine, 0);
    const int waits = fake().waits;
    Array b;
    {
      StreamGuard guard(Stream::wrap(mine, 0));
      b = a * 3.f;
      b.eval();
    }
    const int new_waits = fake().waits - waits;
    return std::make_tuple(reused, a.to_vector<float>()[100], b.to_vector<float>()[7], new_waits);
  };
  const auto [reused, a100, b7, waits] = gpu.twice(body);
  CHECK(reused == 3);
  CHECK(a100 == 106.f);
  CHECK(b7 == 39.f);
  CHECK(waits >= 1);

  Array d = aj::from_vector<float>({1.f, 2.f}).to(Device::cuda(0));
  Array h = aj::from_vector<float>({1.f, 2.f});
  try {
    (void)(h + d);
    FAIL("mixing devices traced");
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    CHECK(std::string(e.what()).find("operands are on different devices") != std::string::npos);
    CHECK(std::string(e.what()).find("cuda:0") != std::string::npos);
  }
  const int trims = fake().trims;
  try {
    (void)aj::arange(std::int64_t{1} << 40, DType::f32).to(Device::cuda(0));  // computed on the device
    FAIL("allocated 4 TiB of a 1 GiB fake device");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("out of CUDA memory on cuda:0") != std::string::npos);
    CHECK(std::string(e.what()).find("4398046511104 bytes") != std::string::npos);
  }
  CHECK(fake().trims == trims + 1);  // trimmed once, retried once
  CHECK((d * 2.f).to_vector<float>() == std::vector<float>{2.f, 4.f});  // still valid
}

TEST_CASE("cuda fake driver: random graphs under DeviceScope agree with the reference interpreter") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  const int graphs = std::getenv("AJ_TEST_LONG") ? 200 : 40;
  auto run = [&](std::uint64_t seed, bool gpu) {
    std::optional<DeviceScope> scope;
    std::optional<aj::detail::ExecutorScope> ex;
    if (gpu) scope.emplace(Device::cuda(0));
    else ex.emplace(aj::detail::Executor::reference);
    return ajtest::evaluate_graph(seed);
  };
  std::vector<std::vector<ajtest::GraphOutput>> want;
  for (int i = 0; i < graphs; ++i) want.push_back(run(0xd1ff000 + static_cast<std::uint64_t>(i), false));
  FakeGpu gpu;
  int mismatches = 0, compared = 0;
  gpu.twice([&] {
    for (int i = 0; i < graphs; ++i) {
      const std::uint64_t seed = 0xd1ff000 + static_cast<std::uint64_t>(i);
      const auto got = run(seed, true);
      if (!fake().execute) continue;
      REQUIRE(got.size() == want[static_cast<std::size_t>(i)].size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        auto m = ajtest::compare_output(want[static_cast<std::size_t>(i)][k], got[k]);
        ++compared;
        if (m) {
          ++mismatches;
          FAIL_CHECK("seed " << seed << " output " << k << ": " << *m);
        }
      }
    }
    return 0;
  });
  MESSAGE("compared " << compared << " outputs of " << graphs << " random graphs run through the CUDA path");
  CHECK(compared > 0);
  CHECK(mismatches == 0);
  CHECK(fake().live == 0);
}

TEST_CASE("cuda fake driver: matmul, concatenate and argmax/argmin run as device kernels, with no host round trip") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  // One set of operations per dtype, on host arrays (the reference) and on
  // their device copies.
  auto ops = [](DType t, const std::vector<Array>& in) {
    const Array &a = in[0], &b = in[1], &x = in[2], &y = in[3], &m = in[4], &c1 = in[5], &c2 = in[6];
    std::vector<Array> r;
    r.push_back(aj::concatenate({c1, c2.transpose({2, 1, 0}), c1}, 1));  // middle axis, a strided input
    r.push_back(aj::argmax(m, 1));
    r.push_back(aj::argmin(m.T(), 1));  // a strided axis
    r.push_back(aj::argmax(m));         // the whole array: parts and a finishing pass
    if (t != DType::bool_) {
      r.push_back(aj::matmul(a, b));    // broadcast batches
      r.push_back(aj::matmul(x.T(), y));  // a transposed operand
    }
    return r;
  };
  const std::vector<DType> types = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64};
  std::vector<std::vector<Array>> host;
  std::uint64_t seed = 1;
  for (DType t : types) {
    const bool nans = aj::is_float(t);
    host.push_back({random_small(t, {3, 1, 20, 33}, seed++), random_small(t, {4, 33, 70}, seed++),
                    random_small(t, {45, 30}, seed++), random_small(t, {45, 67}, seed++),
                    random_small(t, {37, 3000}, seed++, nans), random_small(t, {4, 3, 5}, seed++),
                    random_small(t, {5, 6, 4}, seed++)});
  }
  FakeGpu gpu;
  struct Out {
    std::vector<std::vector<double>> values;
    int launches = 0, uploads = 0, downloads = 0, results = 0;
    bool on_device = true;
    int scoped_uploads = 0;
    std::vector<double> scoped;
  };
  auto body = [&] {
    Out o;
    std::vector<std::vector<Array>> dev;
    for (auto& h : host) {
      dev.emplace_back();
      for (auto& a : h) dev.back().push_back(a.to(Device::cuda(0)).eval());
    }
    const int launches = fake().launches, uploads = fake().uploads, downloads = fake().downloads;
    std::vector<Array> results;
    for (std::size_t i = 0; i < types.size(); ++i) {
      for (auto& r : ops(types[i], dev[i])) results.push_back(r);
    }
    aj::eval(results);
    o.launches = fake().launches - launches;
    o.uploads = fake().uploads - uploads;
    o.downloads = fake().downloads - downloads;
    o.results = static_cast<int>(results.size());
    for (auto& r : results) {
      o.on_device &= r.device() == Device::cuda(0);
      o.values.push_back(doubles(r));
    }
    // Host inputs of a library step under DeviceScope are uploaded for it.
    const int before = fake().uploads;
    {
      DeviceScope scope(Device::cuda(0));
      Array r = aj::matmul(host[3][2].T(), host[3][3]);
      r.eval();
      o.on_device &= r.device() == Device::cuda(0);
      o.scoped_uploads = fake().uploads - before;
      o.scoped = doubles(r);
    }
    return o;
  };
  const Out got = gpu.twice(body);
  std::vector<std::vector<double>> want;
  for (std::size_t i = 0; i < types.size(); ++i) {
    for (auto& r : ops(types[i], host[i])) want.push_back(doubles(r));
  }
  CHECK(got.on_device);
  CHECK(got.results == 4 * 6 + 4);
  // concatenate: 3 copies per dtype; 2 matmuls per dtype but bool; the
  // argmax/argmin reductions of one iteration space share a kernel across
  // dtypes: 3 kernels, the whole-array one in 2 passes.
  CHECK(got.launches >= 5 * 3 + 4 * 2 + 4);
  CHECK(got.uploads == 0);            // nothing went through the host
  CHECK(got.downloads == 0);
  REQUIRE(got.values.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK_MESSAGE(same(got.values[k], want[k]), "result " << k);
  CHECK(got.scoped_uploads == 2);
  CHECK(same(got.scoped, doubles(aj::matmul(host[3][2].T(), host[3][3]))));
  CHECK(fake().live == 0);
}

TEST_CASE("cuda fake driver: a reshape of strided device data is a device copy kernel, no host round trip") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  std::vector<Array> host;
  std::uint64_t seed = 40;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64}) {
    host.push_back(random_small(t, {6, 35}, seed++, aj::is_float(t)));
  }
  auto ops = [](const Array& m) {
    return std::vector<Array>{
        aj::reshape(m.T(), {5, 42}),  // a root copy
        // rows reversed (a negative stride and an offset), consumed by a kernel
        aj::reshape(aj::slice(m, 0, std::nullopt, std::nullopt, -1), {35, 6}).astype(DType::f64) + 1.0};
  };
  FakeGpu gpu;
  struct Out {
    std::vector<std::vector<double>> values;
    int launches = 0, uploads = 0, downloads = 0;
    bool on_device = true;
  };
  auto body = [&] {
    Out o;
    std::vector<Array> dev;
    for (auto& h : host) dev.push_back(h.to(Device::cuda(0)).eval());
    const int launches = fake().launches, uploads = fake().uploads, downloads = fake().downloads;
    std::vector<Array> results;
    for (auto& d : dev) {
      for (auto& r : ops(d)) results.push_back(r);
    }
    aj::eval(results);
    o.launches = fake().launches - launches;
    o.uploads = fake().uploads - uploads;
    o.downloads = fake().downloads - downloads;
    for (auto& r : results) {
      o.on_device &= r.device() == Device::cuda(0);
      o.values.push_back(doubles(r));
    }
    return o;
  };
  const Out got = gpu.twice(body);
  std::vector<std::vector<double>> want;
  for (auto& h : host) {
    for (auto& r : ops(h)) want.push_back(doubles(r));
  }
  CHECK(got.on_device);
  CHECK(got.uploads == 0);
  CHECK(got.downloads == 0);
  CHECK(got.launches >= 5 * 3);  // per dtype: two copies and the consuming kernel
  REQUIRE(got.values.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK_MESSAGE(same(got.values[k], want[k]), "result " << k);
}

TEST_CASE("cuda fake driver: the trace-time device check follows results that moved to the device") {
  FakeGpu gpu;  // launches are not executed here: only tracing and placement matter
  Array d = aj::from_vector<float>(values(64)).to(Device::cuda(0)).eval();
  Array h = aj::from_vector<float>(values(64));
  // A long chain on the device still knows its device (asked once per op).
  Array y = d;
  for (int i = 0; i < 200; ++i) y = aj::abs(y) * 0.5f + 1.f;
  CHECK(y.device() == Device::cuda(0));
  CHECK_THROWS_WITH_AS((void)(y + h), doctest::Contains("operands are on different devices"), aj::Error);
  // A host chain traced first, then its middle evaluated onto the device: its
  // consumer now reads device data and meets device arrays without error,
  // and host arrays with one.
  Array b = h * 2.f;
  Array c = b + 1.f;
  CHECK(c.device() == Device::cpu());
  {
    DeviceScope scope(Device::cuda(0));
    b.eval();
  }
  CHECK(b.device() == Device::cuda(0));
  CHECK(c.device() == Device::cuda(0));
  CHECK_NOTHROW((void)(c + d));
  CHECK_THROWS_WITH_AS((void)(c + h), doctest::Contains("operands are on different devices"), aj::Error);
}

TEST_CASE("cuda fake driver: gathers, pads and scatters run on the device; scatter_add updates a dead device array in place") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  const std::vector<DType> types = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64};
  auto ops = [](DType t, const Array& x, const Array& i, const Array& u) {
    std::vector<Array> r;
    r.push_back(aj::take(x, i, 1));
    r.push_back(aj::take(x, (i + 2) % 5, 0));
    r.push_back(aj::pad(x, {{1, 2}, {3, 0}}, aj::PadMode::reflect));
    r.push_back(aj::roll(x, 3, 1));
    r.push_back(aj::slice_update(x, {aj::Slice(1, 7, 2)}, aj::take(x, aj::slice(i, 0, 3, 4), 0)));
    r.push_back(aj::scatter_add(x, i, u, 1));
    r.push_back(aj::scatter(aj::zeros({9, 40}, t), i, u, 1));
    return r;
  };
  std::vector<std::vector<Array>> host;
  std::uint64_t seed = 40;
  Array i = aj::from_vector<std::int64_t>({3, -1, 30, 0, -50, 3}).eval();
  for (DType t : types) host.push_back({random_small(t, {9, 31}, seed++), random_small(t, {9, 6}, seed++)});
  FakeGpu gpu;
  struct Out {
    std::vector<std::vector<double>> values;
    int uploads = 0, downloads = 0, reused = 0;
    bool on_device = true;
    std::vector<double> in_place;
  };
  auto body = [&] {
    Out o;
    Array di = i.to(Device::cuda(0)).eval();
    std::vector<std::vector<Array>> dev;
    for (auto& h : host) dev.push_back({h[0].to(Device::cuda(0)).eval(), h[1].to(Device::cuda(0)).eval()});
    const int uploads = fake().uploads, downloads = fake().downloads;
    std::vector<Array> results;
    for (std::size_t k = 0; k < types.size(); ++k) {
      for (auto& r : ops(types[k], dev[k][0], di, dev[k][1])) results.push_back(r);
    }
    aj::eval(results);
    o.uploads = fake().uploads - uploads;
    o.downloads = fake().downloads - downloads;
    for (auto& r : results) {
      o.on_device &= r.device() == Device::cuda(0);
      o.values.push_back(doubles(r));
    }
    // A dead device array scattered into: its buffer is updated in place.
    Array table = (dev[3][0] + 1.0f).eval();
    const std::uint64_t before = aj::stats().inplace_reuses;
    table = aj::scatter_add(table, di, dev[3][1], 1);
    table.eval();
    o.reused = static_cast<int>(aj::stats().inplace_reuses - before);
    o.in_place = doubles(table);
    return o;
  };
  const Out got = gpu.twice(body);
  std::vector<std::vector<double>> want;
  for (std::size_t k = 0; k < types.size(); ++k) {
    for (auto& r : ops(types[k], host[k][0], i, host[k][1])) want.push_back(doubles(r));
  }
  CHECK(got.on_device);
  CHECK(got.uploads == 0);  // nothing went through the host
  CHECK(got.downloads == 0);
  REQUIRE(got.values.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK_MESSAGE(same(got.values[k], want[k]), "result " << k);
  CHECK(got.reused == 1);
  CHECK(same(got.in_place, doubles(aj::scatter_add(host[3][0] + 1.0f, i, host[3][1], 1))));
}

TEST_CASE("cuda fake driver: evaluations set the context only when another is current") {
  // On the H200 each small eval made 6 cuCtxSetCurrent calls besides its
  // launch, allocation and free (bench/dispatch_cuda counts them).
  FakeGpu gpu;
  Array x = aj::from_vector<float>(std::vector<float>(1000, 1.5f)).to(Device::cuda(0)).eval();
  Array y = (x * 2.f + 1.f).eval();  // the first eval may set it
  const int before = fake().ctx_sets;
  for (int i = 0; i < 50; ++i) y = (y * 1.0001f + 0.5f).eval();
  CHECK(fake().ctx_sets == before);
  // Another context current on this thread (a caller's): set again, once.
  CUcontext other = reinterpret_cast<CUcontext>(&gpu);
  REQUIRE(f_ctx_set(other) == CUDA_SUCCESS);
  const int sets = fake().ctx_sets;
  y = (y + 1.f).eval();
  y = (y + 1.f).eval();
  CHECK(fake().ctx_sets == sets + 1);
  CUcontext now = nullptr;
  REQUIRE(f_ctx_get(&now) == CUDA_SUCCESS);
  CHECK(now != other);
}

// Device memory changing hands with other libraries,
// checked against the fake driver's record of stream and event calls
// (tests/cuda_fake_driver.hpp): a borrow with the producer's stream makes
// arrayjit's stream wait on an event recorded there; a DLPack export makes the
// consumer's stream wait on one of ours; a borrowed buffer is never written
// in place; its release waits for an event after arrayjit's last use and runs
// exactly once; nothing synchronizes a stream or the device. The "cuda gpu:"
// case runs the same on a real GPU and skips without one.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>
#include <arrayjit/cuda.hpp>
#include <arrayjit/dlpack.h>
#include <arrayjit/dlpack.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_borrowed.hpp"
#include "tests/cuda_fake_driver.hpp"
#include "tests/random_data.hpp"

namespace {

using namespace ajtest::fake_cuda;
using aj::Array;
using aj::Device;
using aj::DType;

// Memory another library (the producer) owns on the fake device, holding `v`.
struct ForeignBuffer {
  CUdeviceptr p = 0;
  std::size_t bytes = 0;
  explicit ForeignBuffer(const std::vector<float>& v) : bytes(v.size() * sizeof(float)) {
    REQUIRE(f_alloc(&p, bytes, nullptr, nullptr) == CUDA_SUCCESS);
    std::memcpy(data(), v.data(), bytes);
  }
  ~ForeignBuffer() { f_free(p, nullptr); }
  float* data() const { return reinterpret_cast<float*>(p); }
  std::vector<float> values() const { return std::vector<float>(data(), data() + bytes / sizeof(float)); }
};

std::vector<std::string> calls_since(std::size_t mark) {
  std::lock_guard<std::mutex> lock(fake().mu);
  return std::vector<std::string>(fake().calls.begin() + static_cast<std::ptrdiff_t>(mark), fake().calls.end());
}
std::size_t mark() {
  std::lock_guard<std::mutex> lock(fake().mu);
  return fake().calls.size();
}
// Any blocking call: a stream synchronize or an event wait on the host.
bool any_sync(const std::vector<std::string>& calls) {
  return std::any_of(calls.begin(), calls.end(),
                     [](const std::string& c) { return c.rfind("sync ", 0) == 0 || c.rfind("evsync ", 0) == 0; });
}
// The event named in "record eK on sN".
std::string recorded_event(const std::string& call) {
  const auto on = call.find(" on ");
  return call.rfind("record ", 0) == 0 && on != std::string::npos ? call.substr(7, on - 7) : "?";
}
// Where `what` is in `calls` (calls.size() when absent).
std::size_t at(const std::vector<std::string>& calls, const std::string& what) {
  return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), what) - calls.begin());
}

CUstream ours() { return static_cast<CUstream>(aj::cuda::current_stream(0).handle()); }

CUstream new_stream() {
  CUstream s = nullptr;
  f_stream_create(&s, 0);
  return s;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  const auto d = ajtest::random_magnitudes<double>(n, seed, 0.5, 9.0);
  return std::vector<float>(d.begin(), d.end());
}

}  // namespace

TEST_CASE("cuda interop: a borrow with the producer's stream makes ours wait on an event recorded there") {
  FakeGpu gpu;
  const CUstream mine = ours();  // initializes the device first: its calls are not the borrow's
  const CUstream producer = new_stream();
  const std::vector<float> v = random_floats(300, 7);
  ForeignBuffer buf(v);
  int released = 0;
  const std::size_t m = mark();
  Array x = aj::cuda::borrow(buf.data(), DType::f32, {300}, {}, 0, producer, [&] {
    ++released;
    log_call("release");
  });
  const auto c = calls_since(m);
  REQUIRE(c.size() == 3);
  const std::string ev = recorded_event(c[0]);
  CHECK(c[0] == "record " + ev + " on " + stream_name(producer));
  CHECK(c[1] == "wait " + stream_name(mine) + " for " + ev);
  CHECK(c[2] == "destroy " + ev);
  CHECK(x.device() == Device::cuda(0));
  CHECK(x.to_vector<float>() == v);  // zero-copy: read straight from the producer's memory
  CHECK(released == 0);

  // The producer's stream is ours, or it says nothing is pending: no event.
  const std::size_t m2 = mark();
  Array same = aj::cuda::borrow(buf.data(), DType::f32, {300}, {}, 0, mine);
  Array ready = aj::cuda::borrow(buf.data(), DType::f32, {10, 30}, {}, 0, aj::cuda::no_sync());
  CHECK(calls_since(m2).empty());
  CHECK(ready.to_vector<float>() == v);

  // The last array gone: an event after our last use, then the release, once.
  const std::size_t m3 = mark();
  x = Array();
  const auto r = calls_since(m3);
  REQUIRE(!r.empty());
  const std::string done = recorded_event(r[0]);
  CHECK(r[0] == "record " + done + " on " + stream_name(mine));
  CHECK(at(r, "query " + done) < at(r, "release"));
  CHECK(at(r, "destroy " + done) < r.size());
  CHECK(released == 1);
  CHECK(!any_sync(r));  // the release blocks nothing
  aj::cuda::release_borrowed();
  CHECK(released == 1);
}

TEST_CASE("cuda interop: a borrowed device buffer is read by kernels but never written in place") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  const std::vector<float> v = random_floats(4096, 11);
  std::vector<float> want(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) want[i] = v[i] * 2.f + 1.f;
  FakeGpu gpu;
  ForeignBuffer buf(v);
  struct Out {
    std::uint64_t borrowed_reuses = 0, own_reuses = 0;
    std::vector<float> got;
    int released_after_eval = 0;
    bool no_sync_before_read = false;
  };
  auto body = [&] {
    Out o;
    int released = 0;
    const std::size_t m = mark();
    Array x = aj::cuda::borrow(buf.data(), DType::f32, {4096}, {}, 0, new_stream(), [&] { ++released; });
    // Our handle dropped: an array of our own would have its buffer donated.
    std::uint64_t before = aj::stats().inplace_reuses;
    x = x * 2.f + 1.f;
    x.eval();
    o.borrowed_reuses = aj::stats().inplace_reuses - before;
    o.released_after_eval = released;
    o.no_sync_before_read = !any_sync(calls_since(m));
    o.got = x.to_vector<float>();
    // The same on a buffer of arrayjit's: reused (the check above can fail).
    Array y = aj::from_vector<float>(v).to(Device::cuda(0)).eval();
    before = aj::stats().inplace_reuses;
    y = y * 2.f + 1.f;
    y.eval();
    o.own_reuses = aj::stats().inplace_reuses - before;
    return o;
  };
  const Out o = gpu.twice(body);
  CHECK(o.borrowed_reuses == 0);
  CHECK(o.own_reuses == 1);
  CHECK(o.got == want);
  CHECK(buf.values() == v);          // the producer's memory is unchanged
  CHECK(o.released_after_eval == 1);  // the last user was the kernel's input: gone after it ran
  CHECK(o.no_sync_before_read);
}

TEST_CASE("cuda interop: a compiled function given a borrowed device buffer to donate does not write it") {
  if (!have_cxx()) {
    MESSAGE("no host C++ compiler: skipped");
    return;
  }
  const std::vector<float> v = random_floats(2048, 13);
  std::vector<float> want(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) want[i] = v[i] * 2.f + 1.f;
  FakeGpu gpu;
  ForeignBuffer buf(v);
  struct Out {
    std::uint64_t own_reuses = 0, borrowed_reuses = 0;
    std::vector<float> own, borrowed;
    int released = 0;
  };
  auto body = [&] {
    Out o;
    auto step = aj::compile([](Array x) { return x * 2.f + 1.f; });
    Array own = aj::from_vector<float>(v).to(Device::cuda(0)).eval();
    own = step(aj::donate(own));  // traced
    own = aj::from_vector<float>(v).to(Device::cuda(0)).eval();
    std::uint64_t before = aj::stats().inplace_reuses;
    own = step(aj::donate(own));  // replayed: our buffer is written in place
    own.eval();
    o.own_reuses = aj::stats().inplace_reuses - before;
    o.own = own.to_vector<float>();
    int released = 0;
    Array x = aj::cuda::borrow(buf.data(), DType::f32, {2048}, {}, 0, aj::cuda::no_sync(), [&] { ++released; });
    before = aj::stats().inplace_reuses;
    Array y = step(aj::donate(x));
    y.eval();
    o.borrowed_reuses = aj::stats().inplace_reuses - before;
    o.borrowed = y.to_vector<float>();
    o.released = released;
    return o;
  };
  const Out o = gpu.twice(body);
  CHECK(o.own_reuses == 1);
  CHECK(o.own == want);
  CHECK(o.borrowed_reuses == 0);
  CHECK(o.borrowed == want);
  CHECK(buf.values() == v);
  CHECK(o.released == 1);  // the donated handle was the last user
}

TEST_CASE("cuda interop: the release waits for an event after arrayjit's last use, and runs exactly once") {
  FakeGpu gpu;
  const CUstream mine = ours();
  const CUstream other = new_stream();
  ForeignBuffer buf(random_floats(64, 3));
  int released = 0;
  Array x = aj::cuda::borrow(buf.data(), DType::f32, {8, 8}, {}, 0, aj::cuda::no_sync(), [&] {
    ++released;
    log_call("release");
  });
  Array view = x.T();  // shares the buffer: the release waits for it too
  {
    // Read on another stream: it waits for ours, and becomes the last use.
    aj::cuda::StreamGuard g(aj::cuda::Stream::wrap(other, 0));
    (x + 1.f).eval();  // launches are not executed by the fake here: only the order matters
  }
  fake().events_done = false;  // our work is still running on the device
  const std::size_t m = mark();
  x = Array();
  CHECK(calls_since(m).empty());  // the view still uses the buffer
  view = Array();
  auto c = calls_since(m);
  REQUIRE(c.size() == 2);
  const std::string ev = recorded_event(c[0]);
  CHECK(c[0] == "record " + ev + " on " + stream_name(other));
  CHECK(c[1] == "query " + ev);
  CHECK(released == 0);
  CHECK(aj::cuda::pending_releases() == 1);

  // A later launch polls: still running.
  (aj::arange(16, DType::f32).to(Device::cuda(0)) * 2.f).eval();
  CHECK(released == 0);
  // Done now: the next poll gives it back, once.
  fake().events_done = true;
  aj::cuda::release_borrowed(false);
  CHECK(released == 1);
  CHECK(aj::cuda::pending_releases() == 0);
  c = calls_since(m);
  CHECK(at(c, "destroy " + ev) < at(c, "release"));
  CHECK(at(c, "release") < c.size());
  CHECK(!any_sync(c));
  aj::cuda::release_borrowed(true);
  aj::cuda::trim_memory(0);  // synchronizes our stream: a later poll finds nothing more to give back
  CHECK(released == 1);
  CHECK(std::count(fake().calls.begin(), fake().calls.end(), "release") == 1);
  (void)mine;

  // Waiting for pending releases waits on their events, not on a stream.
  fake().events_done = false;
  Array z = aj::cuda::borrow(buf.data(), DType::f32, {64}, {}, 0, aj::cuda::no_sync(), [&] {
    ++released;
    log_call("release");
  });
  z = Array();
  CHECK(released == 1);
  const std::size_t m2 = mark();
  aj::cuda::release_borrowed(true);
  c = calls_since(m2);
  REQUIRE(c.size() == 3);
  CHECK(c[0].rfind("evsync ", 0) == 0);
  CHECK(c[1].rfind("destroy ", 0) == 0);
  CHECK(c[2] == "release");
  CHECK(released == 2);
}

TEST_CASE("cuda interop: bad device borrows are clear errors that take nothing") {
  FakeGpu gpu;
  ours();
  std::vector<float> host(12, 1.f);
  void* pinned = nullptr;
  REQUIRE(f_host_alloc(&pinned, 48, 0) == CUDA_SUCCESS);
  ForeignBuffer buf(random_floats(12, 5));
  int released = 0;
  auto count = [&] { ++released; };
  const aj::Stats before = aj::stats();
  const std::size_t m = mark();
  using aj::cuda::no_sync;
  CHECK_THROWS_WITH_AS(aj::cuda::borrow(nullptr, DType::f32, {3, 4}, {}, 0, no_sync(), count),
                       doctest::Contains("null data pointer"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::cuda::borrow(host.data(), DType::f32, {3, 4}, {}, 0, no_sync(), count),
                       doctest::Contains("not CUDA memory (a host pointer?"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::cuda::borrow(pinned, DType::f32, {3, 4}, {}, 0, no_sync(), count),
                       doctest::Contains("pinned host memory"), aj::Error);
  CHECK_THROWS_WITH_AS(aj::cuda::borrow(buf.data(), DType::f32, {3, 4}, {}, 1, no_sync(), count),
                       doctest::Contains("no CUDA device cuda:1"), aj::Error);
  try {
    (void)aj::cuda::borrow(host.data(), DType::f32, {3, 4}, {}, 0, no_sync(), count);
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    CHECK(std::string(e.what()).find("aj::cuda::borrow: cannot borrow f32[3, 4] at cuda:0") != std::string::npos);
    CHECK(std::string(e.what()).find("test_cuda_interop.cpp") != std::string::npos);
  }
  // An empty shape needs no memory: a null pointer is fine.
  CHECK(aj::cuda::borrow(nullptr, DType::f32, {0, 4}, {}, 0, no_sync()).size() == 0);

  // The C API: an unknown dtype, a CUDA view through the host call, host memory.
  std::int64_t shape[2] = {3, 4};
  aj_view view{};
  view.struct_size = sizeof view;
  view.data = buf.data();
  view.ndim = 2;
  view.shape = shape;
  view.dtype = 99;
  view.itemsize = 4;
  view.device_type = AJ_DEVICE_CUDA;
  aj_array out{};
  CHECK(aj_array_from_cuda_view(&view, nullptr, nullptr, nullptr, &out) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("view->dtype") != std::string::npos);
  view.dtype = AJ_F32;
  CHECK(aj_array_from_view(&view, nullptr, nullptr, &out) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("aj_array_from_cuda_view") != std::string::npos);
  view.device_type = AJ_DEVICE_CPU;
  CHECK(aj_array_from_cuda_view(&view, nullptr, nullptr, nullptr, &out) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("not CUDA device memory") != std::string::npos);
  view.device_type = AJ_DEVICE_CUDA;
  view.data = host.data();
  CHECK(aj_array_from_cuda_view(&view, nullptr, nullptr, nullptr, &out) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("not CUDA memory") != std::string::npos);

  // DLPack: a dtype arrayjit lacks, on CUDA memory.
  DLManagedTensorVersioned t{};
  t.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  t.deleter = [](DLManagedTensorVersioned* self) { ++*static_cast<int*>(self->manager_ctx); };
  t.manager_ctx = &released;
  t.dl_tensor.data = buf.data();
  t.dl_tensor.device = {kDLCUDA, 0};
  t.dl_tensor.ndim = 2;
  t.dl_tensor.shape = shape;
  t.dl_tensor.dtype = {kDLComplex, 64, 1};
  CHECK_THROWS_WITH_AS(aj::from_dlpack(&t), doctest::Contains("not one of arrayjit's"), aj::Error);

  CHECK(released == 0);
  const aj::Stats after = aj::stats();
  CHECK(after.live_nodes == before.live_nodes);
  CHECK(after.live_bytes == before.live_bytes);
  const auto c = calls_since(m);
  CHECK(std::none_of(c.begin(), c.end(), [](const std::string& s) { return s.rfind("record ", 0) == 0; }));
  f_host_free(pinned);
}

TEST_CASE("cuda interop: a DLPack export makes the consumer's stream wait on an event of ours") {
  FakeGpu gpu;
  const CUstream mine = ours();
  const CUstream consumer = new_stream();
  Array a = aj::arange(32, DType::f32).to(Device::cuda(0)).eval();
  std::size_t m = mark();
  DLManagedTensorVersioned* t = aj::to_dlpack_versioned(a, consumer);
  auto c = calls_since(m);
  REQUIRE(c.size() == 3);
  const std::string ev = recorded_event(c[0]);
  CHECK(c[0] == "record " + ev + " on " + stream_name(mine));
  CHECK(c[1] == "wait " + stream_name(consumer) + " for " + ev);
  CHECK(c[2] == "destroy " + ev);
  CHECK(t->dl_tensor.device.device_type == kDLCUDA);
  CHECK(t->dl_tensor.data == a.data().ptr);
  t->deleter(t);

  // CUDA's special handles are streams too; -1 asks for nothing; our own stream needs no event.
  m = mark();
  DLManagedTensor* legacy = aj::to_dlpack(a, reinterpret_cast<void*>(1));
  c = calls_since(m);
  REQUIRE(c.size() == 3);
  CHECK(c[1] == "wait s-legacy for " + recorded_event(c[0]));
  legacy->deleter(legacy);
  m = mark();
  DLManagedTensor* none = aj::to_dlpack(a, aj::cuda::no_sync());
  DLManagedTensor* same = aj::to_dlpack(a, mine);
  CHECK(calls_since(m).empty());
  none->deleter(none);
  same->deleter(same);

  // The C call hands off the same way; arrayjit's stream is what C code names to producers.
  void* s = nullptr;
  REQUIRE(aj_cuda_current_stream(0, &s) == AJ_OK);
  CHECK(s == static_cast<void*>(mine));
  aj_array h = aj::to_c(a);
  m = mark();
  DLManagedTensorVersioned* viac = nullptr;
  REQUIRE(aj_to_dlpack_versioned(h, consumer, &viac) == AJ_OK);
  c = calls_since(m);
  REQUIRE(c.size() == 3);
  CHECK(c[1] == "wait " + stream_name(consumer) + " for " + recorded_event(c[0]));
  CHECK(!any_sync(c));
  viac->deleter(viac);
  aj_array_release(h);
}

TEST_CASE("cuda interop: DLPack and C views import CUDA memory; the deleter runs once, after our last use") {
  FakeGpu gpu;
  const CUstream mine = ours();
  const CUstream producer = new_stream();
  const std::vector<float> v = random_floats(24, 9);
  ForeignBuffer buf(v);
  int deletes = 0;
  std::int64_t shape[2] = {4, 6}, strides[2] = {1, 4};  // column-major, in elements
  DLManagedTensorVersioned t{};
  t.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  t.deleter = [](DLManagedTensorVersioned* self) {
    ++*static_cast<int*>(self->manager_ctx);
    log_call("release");
  };
  t.manager_ctx = &deletes;
  t.dl_tensor.data = buf.data();
  t.dl_tensor.device = {kDLCUDA, 0};
  t.dl_tensor.ndim = 2;
  t.dl_tensor.shape = shape;
  t.dl_tensor.strides = strides;
  t.dl_tensor.dtype = {kDLFloat, 32, 1};

  // Ready on our stream (we named it to the producer): no event.
  std::size_t m = mark();
  Array a = aj::from_dlpack(&t);
  CHECK(calls_since(m).empty());
  CHECK(a.device() == Device::cuda(0));
  std::vector<float> want(24);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 6; ++j) want[static_cast<std::size_t>(i * 6 + j)] = v[static_cast<std::size_t>(i + 4 * j)];
  }
  CHECK(a.to_vector<float>() == want);
  a = Array();
  CHECK(deletes == 1);

  // With the producer's stream: ours waits on an event recorded there.
  m = mark();
  Array b = aj::from_dlpack(&t, producer);
  auto c = calls_since(m);
  REQUIRE(c.size() == 3);
  CHECK(c[0] == "record " + recorded_event(c[0]) + " on " + stream_name(producer));
  CHECK(c[1] == "wait " + stream_name(mine) + " for " + recorded_event(c[0]));
  fake().events_done = false;
  b = Array();
  CHECK(deletes == 1);  // our last use may still be running
  fake().events_done = true;
  aj::cuda::release_borrowed(false);
  CHECK(deletes == 2);

  // The C view of the same memory, row-major, strides in bytes.
  std::int64_t rm_shape[2] = {6, 4};
  aj_view view{};
  view.struct_size = sizeof view;
  view.data = buf.data();
  view.ndim = 2;
  view.shape = rm_shape;
  view.dtype = AJ_F32;
  view.itemsize = 4;
  view.device_type = AJ_DEVICE_CUDA;
  int c_releases = 0;
  aj_array h{};
  m = mark();
  REQUIRE(aj_array_from_cuda_view(&view, producer, [](void* n) { ++*static_cast<int*>(n); }, &c_releases, &h) ==
          AJ_OK);
  c = calls_since(m);
  REQUIRE(c.size() == 3);
  CHECK(c[1] == "wait " + stream_name(mine) + " for " + recorded_event(c[0]));
  CHECK(aj::from_c(h).to_vector<float>() == v);
  aj_array_release(h);
  CHECK(c_releases == 1);
  aj::cuda::release_borrowed();
  CHECK(c_releases == 1);
  CHECK(deletes == 2);
}

TEST_CASE("cuda gpu: a borrowed device buffer with its producer's stream computes right and is released once") {
  if (!aj::cuda::available()) {
    MESSAGE("no GPU: " << aj::cuda::unavailable_reason() << ": skipped");
    return;
  }
  const std::vector<float> v = random_floats(1 << 16, 21);
  // The producer: arrayjit itself, on a stream of the producer's own.
  (void)aj::cuda::current_stream(0);  // the device's primary context made current
  CUstream producer = nullptr;
  REQUIRE(require_driver().cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  Array src;
  {
    aj::cuda::StreamGuard g(aj::cuda::Stream::wrap(producer, 0));
    src = (aj::from_vector<float>(v).to(Device::cuda(0)) * 1.f).eval();  // a kernel enqueued on `producer`
  }
  const void* ptr = src.data().ptr;
  int released = 0;
  Array x = aj::cuda::borrow(const_cast<void*>(ptr), DType::f32, {1 << 16}, {}, 0, producer, [&] { ++released; });
  const std::uint64_t before = aj::stats().inplace_reuses;
  x = aj::sqrt(x * x) + 1.f;
  x.eval();
  CHECK(aj::stats().inplace_reuses == before);
  const std::vector<float> got = x.to_vector<float>();
  for (std::size_t i = 0; i < v.size(); i += 997) CHECK(got[i] == doctest::Approx(std::fabs(v[i]) + 1.f));
  CHECK(src.to_vector<float>() == v);  // never written
  aj::cuda::release_borrowed();
  CHECK(released == 1);
  aj::cuda::Stream::wrap(producer, 0).synchronize();
  src = Array();
  aj::cuda::trim_memory(0);
  CHECK(released == 1);
}

TEST_CASE("cuda interop: C code works on a caller's stream with aj_cuda_stream_push/pop; reads wait for that stream only") {
  FakeGpu gpu;
  const CUstream mine = ours();
  const CUstream theirs = new_stream();
  const std::vector<float> v = random_floats(64, 21);
  aj_array x = aj::to_c(aj::from_vector<float>(v).to(Device::cuda(0)).eval());
  REQUIRE(aj_cuda_stream_push(0, theirs) == AJ_OK);
  void* s = nullptr;
  REQUIRE(aj_cuda_current_stream(0, &s) == AJ_OK);
  CHECK(s == static_cast<void*>(theirs));
  aj_array y{};
  REQUIRE(aj_multiply(x, x, &y) == AJ_OK);
  std::vector<float> out(v.size());
  const std::size_t m = mark();
  REQUIRE(aj_array_read(y, AJ_F32, out.data(), out.size() * sizeof(float), nullptr) == AJ_OK);
  const auto c = calls_since(m);
  CHECK(at(c, "sync " + stream_name(theirs)) < c.size());
  CHECK(at(c, "sync " + stream_name(mine)) == c.size());
  if (fake().execute) {
    for (std::size_t i = 0; i < v.size(); ++i) CHECK(out[i] == v[i] * v[i]);
  }
  REQUIRE(aj_cuda_stream_pop(0) == AJ_OK);
  REQUIRE(aj_cuda_current_stream(0, &s) == AJ_OK);
  CHECK(s == static_cast<void*>(mine));
  // Pops without a push, or out of order, are errors that change nothing.
  CHECK(aj_cuda_stream_pop(0) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("no stream pushed on this thread") != std::string::npos);
  REQUIRE(aj_cuda_stream_push(0, theirs) == AJ_OK);
  CHECK(aj_cuda_stream_pop(1) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("reverse order") != std::string::npos);
  REQUIRE(aj_cuda_current_stream(0, &s) == AJ_OK);
  CHECK(s == static_cast<void*>(theirs));
  REQUIRE(aj_cuda_stream_pop(0) == AJ_OK);
  aj_array_release(x);
  aj_array_release(y);
}

// Foreign memory, from every entry point: hostile layouts are refused before a
// byte is read, and a refusal takes nothing.
//
// One table of layouts (issue 39's hostile tensors: strides whose element span
// overflows int64 or passes 2^62 bytes, strides that leave the address space
// from a real pointer, a byte offset that wraps the pointer, NULL data made
// non-NULL by an offset, a 2^62-element shape, 65 axes) against one table of
// entry points (aj::borrow, aj::cuda::borrow, the C views borrowed, copied and
// on CUDA, aj_array_borrow and aj_array_from_data, DLPack versioned and
// legacy from C and C++, on the host and on CUDA). Every pair must be a user
// error naming what is wrong, make no handle, node or buffer, and never call
// the producer's release or deleter (the documented rule: a failed import
// takes nothing). Then each host entry point reads a good layout with
// negative strides right and releases it exactly once.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>
#include <arrayjit/cuda.hpp>
#include <arrayjit/dlpack.h>
#include <arrayjit/dlpack.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/dlpack_producer.hpp"
#include "tests/random_data.hpp"

namespace {

using i64 = std::int64_t;
constexpr i64 kMax = std::numeric_limits<i64>::max();
constexpr i64 kMin = std::numeric_limits<i64>::min();

// A layout over `data` (or NULL), strides in elements and, for the C views
// (which take bytes), in bytes; empty: row-major.
struct Layout {
  const char* what;
  bool null_data = false;
  std::vector<i64> shape;
  std::vector<i64> elem_strides;  // for aj::borrow, cuda::borrow, DLPack
  std::vector<i64> byte_strides;  // for aj_view
  std::uint64_t byte_offset = 0;  // DLPack only (0 elsewhere: the row is skipped)
  const char* words;              // the message names this
};

// What an import did.
struct Outcome {
  bool ok = false;
  bool user_error = false;
  std::string message;
  std::function<void()> drop;                 // releases what an accepted import made
  std::function<std::vector<float>()> read;  // its values
};

// One import of `l` over `data`; `releases` counts the producer's release
// (or deleter) calls.
struct Entry {
  const char* name;
  bool offsets = false;       // takes a byte offset (DLPack)
  bool strided = true;        // takes strides (aj_array_borrow, aj_array_from_data do not)
  bool host = true;           // a good layout can be read back here (not CUDA memory)
  int gives_back = 1;         // release/deleter calls once the import died (0: a copy, or no callback)
  std::function<Outcome(float* data, const Layout& l, int* releases)> import;
};

Outcome from_cpp(const std::function<aj::Array()>& make) {
  Outcome o;
  try {
    auto a = std::make_shared<aj::Array>(make());
    o.ok = true;
    o.drop = [a] { *a = aj::Array(); };
    o.read = [a] { return a->to_vector<float>(); };
  } catch (const aj::Error& e) {
    o.user_error = e.kind() == aj::Error::Kind::user;
    o.message = e.what();
  }
  return o;
}

Outcome from_c(aj_status st, aj_array out) {
  Outcome o;
  o.ok = st == AJ_OK;
  o.user_error = st == AJ_ERROR_USER;
  if (!o.ok) {
    o.message = aj_last_error();
    if (!AJ_IS_NULL(out)) o.message += " [a failed call left a handle]";
  } else {
    o.drop = [out] { CHECK(aj_array_release(out) == AJ_OK); };
    o.read = [out] { return aj::from_c(out).to_vector<float>(); };
  }
  return o;
}

void count_release(void* context) { ++*static_cast<int*>(context); }

aj_view view_of(float* data, const Layout& l, int device_type) {
  aj_view v{};
  v.struct_size = sizeof v;
  v.data = l.null_data ? nullptr : data;
  v.ndim = static_cast<int32_t>(l.shape.size());
  v.shape = l.shape.data();
  v.strides = l.byte_strides.empty() ? nullptr : l.byte_strides.data();
  v.dtype = AJ_F32;
  v.itemsize = 4;
  v.device_type = device_type;
  return v;
}

// A DLPack tensor over the layout, with a deleter that counts.
template <class Managed>
Managed* produce(float* data, const Layout& l, int* deletes, DLDeviceType dev) {
  return ajtest::produce<Managed>(l.null_data ? nullptr : data, {kDLFloat, 32, 1}, l.shape, l.elem_strides, deletes,
                                  dev, l.byte_offset);
}

// A DLPack entry point: the import, and the producer's own deleter call when
// it was refused (the tensor is still the caller's then).
template <class Managed>
Outcome dlpack(float* data, const Layout& l, int* deletes, DLDeviceType dev,
               const std::function<Outcome(Managed*)>& import) {
  Managed* m = produce<Managed>(data, l, deletes, dev);
  Outcome o = import(m);
  if (!o.ok && *deletes == 0) {
    m->deleter(m);
    --*deletes;  // the test's own call, not arrayjit's
  }
  return o;
}

std::vector<Entry> entries() {
  std::vector<Entry> e;
  e.push_back({"aj::borrow", false, true, true, 0, [](float* data, const Layout& l, int*) {
                 return from_cpp([&] { return aj::borrow(l.null_data ? nullptr : data, aj::Shape(l.shape), l.elem_strides); });
               }});
  e.push_back({"aj::cuda::borrow", false, true, false, 1, [](float* data, const Layout& l, int* releases) {
                 return from_cpp([&] {
                   return aj::cuda::borrow(l.null_data ? nullptr : data, aj::DType::f32, aj::Shape(l.shape), l.elem_strides,
                                           0, aj::cuda::no_sync(), [releases] { ++*releases; });
                 });
               }});
  e.push_back({"aj_array_from_view", false, true, true, 1, [](float* data, const Layout& l, int* releases) {
                 const aj_view v = view_of(data, l, AJ_DEVICE_CPU);
                 aj_array out{};
                 return from_c(aj_array_from_view(&v, count_release, releases, &out), out);
               }});
  e.push_back({"aj_array_copy_view", false, true, true, 0, [](float* data, const Layout& l, int*) {
                 const aj_view v = view_of(data, l, AJ_DEVICE_CPU);
                 aj_array out{};
                 return from_c(aj_array_copy_view(&v, &out), out);
               }});
  e.push_back({"aj_array_from_cuda_view", false, true, false, 1, [](float* data, const Layout& l, int* releases) {
                 const aj_view v = view_of(data, l, AJ_DEVICE_CUDA);
                 aj_array out{};
                 return from_c(aj_array_from_cuda_view(&v, nullptr, count_release, releases, &out), out);
               }});
  e.push_back({"aj_array_borrow", false, false, true, 1, [](float* data, const Layout& l, int* releases) {
                 aj_array out{};
                 return from_c(aj_array_borrow(l.null_data ? nullptr : data, AJ_F32, l.shape.data(),
                                               static_cast<int32_t>(l.shape.size()), count_release, releases, &out),
                               out);
               }});
  e.push_back({"aj_array_from_data", false, false, true, 0, [](float* data, const Layout& l, int*) {
                 aj_array out{};
                 return from_c(aj_array_from_data(l.null_data ? nullptr : data, AJ_F32, l.shape.data(),
                                                  static_cast<int32_t>(l.shape.size()), &out),
                               out);
               }});
  e.push_back({"aj_from_dlpack_versioned", true, true, true, 1, [](float* data, const Layout& l, int* deletes) {
                 return dlpack<DLManagedTensorVersioned>(data, l, deletes, kDLCPU, [](DLManagedTensorVersioned* m) {
                   aj_array out{};
                   return from_c(aj_from_dlpack_versioned(m, &out), out);
                 });
               }});
  e.push_back({"aj_from_dlpack", true, true, true, 1, [](float* data, const Layout& l, int* deletes) {
                 return dlpack<DLManagedTensor>(data, l, deletes, kDLCPU, [](DLManagedTensor* m) {
                   aj_array out{};
                   return from_c(aj_from_dlpack(m, &out), out);
                 });
               }});
  e.push_back({"aj::from_dlpack (versioned)", true, true, true, 1, [](float* data, const Layout& l, int* deletes) {
                 return dlpack<DLManagedTensorVersioned>(data, l, deletes, kDLCPU, [](DLManagedTensorVersioned* m) {
                   return from_cpp([&] { return aj::from_dlpack(m); });
                 });
               }});
  e.push_back({"aj::from_dlpack (legacy)", true, true, true, 1, [](float* data, const Layout& l, int* deletes) {
                 return dlpack<DLManagedTensor>(data, l, deletes, kDLCPU, [](DLManagedTensor* m) {
                   return from_cpp([&] { return aj::from_dlpack(m); });
                 });
               }});
  e.push_back({"aj::from_dlpack (CUDA, producer stream)", true, true, false, 1,
               [](float* data, const Layout& l, int* deletes) {
                 return dlpack<DLManagedTensorVersioned>(data, l, deletes, kDLCUDA, [](DLManagedTensorVersioned* m) {
                   return from_cpp([&] { return aj::from_dlpack(m, aj::cuda::no_sync()); });
                 });
               }});
  return e;
}

// The hostile layouts over a real 256-byte buffer at `data`.
std::vector<Layout> hostile(const float* data) {
  const auto addr = reinterpret_cast<std::uintptr_t>(data);
  const std::uint64_t wrap = ((~std::uint64_t{0} - addr) / 4 + 1) * 4 + 16;  // addr + wrap passes 2^64
  std::vector<Layout> v;
  v.push_back({"{2^62, 4} bytes over 3 rows", false, {3, 1}, {i64{1} << 60, 1}, {i64{1} << 62, 4}, 0, "2^62 bytes"});
  v.push_back({"stride INT64_MAX over 3", false, {3}, {kMax}, {kMax - 3}, 0, "strides"});
  v.push_back({"stride INT64_MIN over 3", false, {3}, {kMin}, {kMin}, 0, "strides"});
  v.push_back({"-2^62 bytes from a real pointer", false, {2}, {-(i64{1} << 60)}, {-(i64{1} << 62)}, 0, "strides"});
  v.push_back({"-2^61 bytes from a real pointer", false, {2}, {-(i64{1} << 59)}, {-(i64{1} << 61)}, 0, "address space"});
  v.push_back({"+2^61 bytes, 3 rows, from a real pointer", false, {3}, {i64{1} << 59}, {i64{1} << 61}, 0, "2^62 bytes"});
  v.push_back({"a byte_offset that wraps the pointer", false, {4}, {}, {}, wrap, "wraps"});
  v.push_back({"NULL data made non-NULL by a byte_offset", true, {4}, {}, {}, addr, "null data"});
  v.push_back({"NULL data", true, {4}, {}, {}, 0, "null data"});
  v.push_back({"a 2^62-element f32 shape", false, {i64{1} << 62}, {}, {}, 0, "2^62 bytes"});
  v.push_back({"65 axes", false, std::vector<i64>(65, 1), {}, {}, 0, "at most 64"});
  return v;
}

}  // namespace

TEST_SUITE("foreign memory") {

TEST_CASE("every foreign-memory entry point refuses every hostile layout, taking nothing") {
  std::vector<float> buffer = ajtest::random_magnitudes<float>(64, 71, 0.5, 9.0);  // the producer's 256 bytes
  const std::vector<float> before_values = buffer;
  int checked = 0;
  for (const Entry& entry : entries()) {
    for (const Layout& l : hostile(buffer.data())) {
      if (l.byte_offset != 0 && !entry.offsets) continue;
      if (!entry.strided && (!l.elem_strides.empty() || !l.byte_strides.empty())) continue;
      CAPTURE(entry.name);
      CAPTURE(l.what);
      const aj::Stats before = aj::stats();
      const std::size_t handles = aj_live_handles();
      int releases = 0;
      Outcome o = entry.import(buffer.data(), l, &releases);
      CAPTURE(o.message);
      CHECK_MESSAGE(!o.ok, "accepted");
      if (o.ok) {
        o.drop();
        continue;
      }
      CHECK(o.user_error);
      CHECK(o.message.find(l.words) != std::string::npos);
      CHECK(releases == 0);
      CHECK(aj_live_handles() == handles);
      CHECK(aj::stats().live_nodes == before.live_nodes);
      CHECK(aj::stats().live_bytes == before.live_bytes);
      ++checked;
    }
  }
  CHECK(buffer == before_values);
  CHECK(checked >= 90);  // 12 entry points x the rows each takes
}

TEST_CASE("every host entry point reads a good layout (negative strides included) and releases it once") {
  // A 2 x 3 view of a 3 x 4 buffer from its last row upwards: data = &buffer[8],
  // strides {-4, 1} elements; element [i, j] is buffer[8 - 4i + j]. The
  // entry points without strides read buffer[0..6) row-major.
  std::vector<float> buffer = ajtest::random_magnitudes<float>(12, 72, 0.5, 9.0);
  const Layout good{"{-4, 1} from row 2", false, {2, 3}, {-4, 1}, {-16, 4}, 0, ""};
  const Layout flat{"row-major 2 x 3", false, {2, 3}, {}, {}, 0, ""};
  int tried = 0;
  for (const Entry& entry : entries()) {
    if (!entry.host) continue;
    CAPTURE(entry.name);
    const Layout& l = entry.strided ? good : flat;
    int releases = 0;
    const std::size_t handles = aj_live_handles();
    Outcome o = entry.import(buffer.data() + (entry.strided ? 8 : 0), l, &releases);
    CAPTURE(o.message);
    REQUIRE(o.ok);
    std::vector<float> want;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        want.push_back(buffer[static_cast<std::size_t>(entry.strided ? 8 - 4 * i + j : 3 * i + j)]);
      }
    }
    CHECK(o.read() == want);
    CHECK(releases == 0);
    o.drop();
    CHECK(aj_live_handles() == handles);
    CHECK(releases == entry.gives_back);
    ++tried;
  }
  CHECK(tried == 9);
}

}  // TEST_SUITE

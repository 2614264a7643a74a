// Handing arrays out and in without copies: Array::data / copy_to /
// eval_into, the C strided view (aj_view_acquire/release, aj_array_from_view)
// and DLPack (versioned and legacy), each checked against values computed
// here by hand from random inputs.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>
#include <arrayjit/dlpack.h>
#include <arrayjit/dlpack.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tests/dlpack_producer.hpp"
#include "tests/random_data.hpp"

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  return ajtest::random_magnitudes<float>(n, seed, 0.5, 4.0);
}

// y = x * 2 + 1 on a host copy, the expression most tests evaluate.
std::vector<float> twice_plus_one(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * 2.0f + 1.0f;
  return y;
}

}  // namespace

TEST_CASE("interop: data() gives the evaluated buffer with its layout, a transpose as strides") {
  auto xv = random_floats(12, 1);
  aj::Array x = aj::from_vector(xv, {3, 4});
  aj::ArrayData d = x.data();
  CHECK(d.dtype == aj::DType::f32);
  CHECK(d.shape == aj::Shape{3, 4});
  CHECK(d.strides == std::vector<std::int64_t>{4, 1});
  CHECK(d.row_major());
  CHECK_FALSE(d.column_major());
  CHECK(std::memcmp(d.as<float>(), xv.data(), xv.size() * sizeof(float)) == 0);
  CHECK_THROWS_AS(d.as<double>(), aj::Error);

  aj::ArrayData t = x.T().data();  // a view: same buffer, swapped strides
  CHECK(t.ptr == d.ptr);
  CHECK(t.strides == std::vector<std::int64_t>{1, 4});
  CHECK(t.column_major());
  aj::ArrayData s = aj::slice(x, {aj::Slice(1, 3), aj::Slice(std::nullopt, std::nullopt, -1)}).data();
  CHECK(s.as<float>()[0] == xv[4 + 3]);  // element [0, 0] of the slice is x[1, 3]
  CHECK(s.strides == std::vector<std::int64_t>{4, -1});
}

TEST_CASE("interop: data() pins the buffer: x = x + 1 does not run in place while a view is held") {
  auto xv = random_floats(64, 2);
  aj::Array x = aj::from_vector(xv);
  x = x * 3;  // x is now arrayjit's own buffer
  aj::ArrayData d = x.data();
  const float* before = d.as<float>();
  std::vector<float> seen(before, before + 64);
  aj::reset_stats();
  x = x + 1;
  x.eval();
  CHECK(aj::stats().inplace_reuses == 0);
  CHECK(std::memcmp(before, seen.data(), seen.size() * sizeof(float)) == 0);
  for (std::size_t i = 0; i < xv.size(); ++i) CHECK(seen[i] == xv[i] * 3);
}

TEST_CASE("interop: copy_to writes row-major, into caller strides, from strided views") {
  auto xv = random_floats(6 * 5, 3);
  aj::Array x = aj::from_vector(xv, {6, 5});
  std::vector<float> out(30, 0.0f);
  x.copy_to(out.data());
  CHECK(out == xv);

  // Transposed source into a column-major destination: the same bytes.
  std::vector<float> col(30, 0.0f);
  x.T().copy_to(col.data(), {1, 5});
  CHECK(col == xv);

  // Into every other element of a wider buffer, from a reversed slice.
  std::vector<double> wide(2 * 6 * 5, -7.0);
  aj::Array r = aj::slice(x.astype(aj::DType::f64), {aj::Slice(std::nullopt, std::nullopt, -1)});
  r.copy_to(wide.data(), {10, 2});
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 5; ++j) {
      CHECK(wide[static_cast<std::size_t>(i * 10 + j * 2)] == double(xv[static_cast<std::size_t>((5 - i) * 5 + j)]));
      CHECK(wide[static_cast<std::size_t>(i * 10 + j * 2 + 1)] == -7.0);
    }
  }
  CHECK_THROWS_AS(x.copy_to(out.data(), {1}), aj::Error);
}

TEST_CASE("interop: eval_into runs the kernel into caller memory: no buffer made, nothing copied") {
  auto xv = random_floats(1000, 4);
  aj::Array x = aj::from_vector(xv);
  aj::Array y = aj::exp(x * 0.25f) * 2 + 1;
  std::vector<float> dst(1000, 0.0f);
  aj::reset_stats();
  y.eval_into(dst.data());
  const aj::Stats s = aj::stats();
  CHECK(s.kernels_launched == 1);  // the fused kernel, nothing after it
  CHECK(s.system_allocs == 0);     // no buffer for the result...
  CHECK(s.pool_hits == 0);         // ...not even a cached one, so no copy
  CHECK(y.data().ptr == dst.data());
  auto want = (aj::exp(x * 0.25f) * 2 + 1).to_vector<float>();
  CHECK(dst == want);
  CHECK(y.to_vector<float>() == want);

  // The result borrows dst: a later computation never writes it in place.
  y = y + 1;
  y.eval();
  CHECK(y.data().ptr != dst.data());
  CHECK(dst == want);
}

TEST_CASE("interop: eval_into of a view or an evaluated array copies, and refuses overlapping memory") {
  auto xv = random_floats(12, 5);
  aj::Array x = aj::from_vector(xv, {3, 4});
  std::vector<float> dst(12, 0.0f);
  x.T().eval_into(dst.data());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) CHECK(dst[static_cast<std::size_t>(i * 3 + j)] == xv[static_cast<std::size_t>(j * 4 + i)]);
  }
  std::vector<float> src = xv;
  aj::Array b = aj::borrow(src.data(), {3, 4});
  aj::Array z = b.T() + 1;  // reads src at transposed positions: writing src would corrupt it
  CHECK_THROWS_WITH_AS(z.eval_into(src.data()), doctest::Contains("overlaps"), aj::Error);
}

TEST_CASE("interop: aj_view_acquire gives the layout in bytes, refuses flags it cannot meet, release unpins") {
  auto xv = random_floats(12, 6);
  aj_array a = aj::to_c(aj::from_vector(xv, {3, 4}) * 2 + 1);
  aj_view v{};
  v.struct_size = sizeof v;
  REQUIRE(aj_view_acquire(a, AJ_VIEW_C_CONTIGUOUS, &v) == AJ_OK);
  CHECK(v.ndim == 2);
  CHECK(v.shape[0] == 3);
  CHECK(v.shape[1] == 4);
  CHECK(v.strides[0] == 16);
  CHECK(v.strides[1] == 4);
  CHECK(v.itemsize == 4);
  CHECK(std::string(v.format) == "f");
  CHECK(v.dtype == AJ_F32);
  CHECK(v.device_type == AJ_DEVICE_CPU);
  CHECK(v.readonly == 1);
  auto want = twice_plus_one(xv);
  CHECK(std::memcmp(v.data, want.data(), 48) == 0);
  aj_view_release(&v);
  CHECK(v.data == nullptr);
  CHECK(v.owner == nullptr);
  aj_view_release(&v);  // a released view is ignored

  aj_array t = aj::to_c(aj::from_c(a).T());
  CHECK(aj_view_acquire(t, AJ_VIEW_C_CONTIGUOUS, &v) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("C-contiguous") != std::string::npos);
  CHECK(v.data == nullptr);
  CHECK(aj_view_acquire(t, AJ_VIEW_F_CONTIGUOUS, &v) == AJ_OK);
  CHECK(v.strides[0] == 4);
  aj_view_release(&v);
  CHECK(aj_view_acquire(t, 64, &v) == AJ_ERROR_USER);
  aj_array_release(t);
  aj_array_release(a);
}

TEST_CASE("interop: a writable view is granted only when no other array can see the writes") {
  auto xv = random_floats(8, 7);
  aj_array a = aj::to_c(aj::from_vector(xv) * 2);
  aj_view v{};
  v.struct_size = sizeof v;
  REQUIRE(aj_view_acquire(a, AJ_VIEW_WRITABLE, &v) == AJ_OK);
  CHECK(v.readonly == 0);
  static_cast<float*>(v.data)[0] = 42.0f;
  aj_view_release(&v);
  CHECK(aj::from_c(a).to_vector<float>()[0] == 42.0f);

  aj::Array lazy = aj::from_c(a) + 1;  // a lazy reader and a second handle
  CHECK(aj_view_acquire(a, AJ_VIEW_WRITABLE, &v) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("share") != std::string::npos);
  lazy = aj::Array();
  aj::Array other = aj::from_c(a);  // another handle sees the writes too
  CHECK(aj_view_acquire(a, AJ_VIEW_WRITABLE, &v) == AJ_ERROR_USER);
  other = aj::Array();
  CHECK(aj_view_acquire(a, AJ_VIEW_WRITABLE, &v) == AJ_OK);
  aj_view_release(&v);
  aj_array_release(a);

  std::vector<float> mine = xv;  // caller memory is its owner's to write
  aj_array b = aj::to_c(aj::borrow(mine.data(), {8}));
  CHECK(aj_view_acquire(b, AJ_VIEW_WRITABLE, &v) == AJ_ERROR_USER);
  aj_array_release(b);
}

namespace {
int g_released = 0;
void count_release(void* context) {
  ++g_released;
  *static_cast<int*>(context) += 1;
}
}  // namespace

TEST_CASE("interop: aj_array_from_view borrows foreign memory; release runs once, when the last user dies") {
  auto xv = ajtest::random_magnitudes<double>(2 * 3, 8, 1.0, 9.0);
  const std::int64_t shape[2] = {3, 2};
  const std::int64_t strides[2] = {8, 24};  // a column-major 3 x 2 matrix, in bytes
  aj_view v{};
  v.struct_size = sizeof v;
  v.data = xv.data();
  v.ndim = 2;
  v.shape = shape;
  v.strides = strides;
  v.dtype = AJ_F64;
  v.itemsize = 8;
  v.device_type = AJ_DEVICE_CPU;
  int calls = 0;
  g_released = 0;
  aj_array a{};
  REQUIRE(aj_array_from_view(&v, count_release, &calls, &a) == AJ_OK);
  aj::Array view_of_it = aj::from_c(a).T();  // shares the storage
  aj::Array sum = aj::sum(aj::from_c(a), 0);
  aj_array_release(a);
  CHECK(calls == 0);
  CHECK(aj::from_c(a = aj::to_c(sum)).to_vector<double>() ==
        std::vector<double>{xv[0] + xv[1] + xv[2], xv[3] + xv[4] + xv[5]});
  aj_array_release(a);
  CHECK(calls == 0);  // the transpose still reads it
  CHECK(view_of_it.data().ptr == xv.data());
  view_of_it = aj::Array();
  CHECK(calls == 1);
  CHECK(g_released == 1);

  const std::int64_t odd[2] = {8, 12};  // 12 bytes is not a whole number of doubles
  v.strides = odd;
  CHECK(aj_array_from_view(&v, count_release, &calls, &a) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("multiple of the item size") != std::string::npos);
  v.strides = strides;
  v.device_type = AJ_DEVICE_CUDA;
  CHECK(aj_array_from_view(&v, count_release, &calls, &a) == AJ_ERROR_USER);
  CHECK(calls == 1);  // failed calls take nothing
}

// ---- DLPack -------------------------------------------------------------------

using ajtest::produce;

TEST_CASE_TEMPLATE("interop: DLPack import borrows the producer's memory; the deleter runs once, last", Managed,
                   DLManagedTensorVersioned, DLManagedTensor) {
  auto xv = ajtest::random_magnitudes<std::int32_t>(4 * 3, 9, 1, 1000);
  int deletes = 0;
  // A transposed 4 x 3 view of row-major 3 x 4 data: strides in elements.
  Managed* m = produce<Managed>(xv.data(), {kDLInt, 32, 1}, {4, 3}, {1, 4}, &deletes);
  aj::Array a = aj::from_dlpack(m);
  CHECK(a.dtype() == aj::DType::i32);
  CHECK(a.data().ptr == xv.data());
  aj::Array b = a;
  aj::Array c = (a * 2).astype(aj::DType::i64);
  a = aj::Array();
  CHECK(deletes == 0);
  std::vector<std::int64_t> want;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) want.push_back(2 * xv[static_cast<std::size_t>(j * 4 + i)]);
  }
  CHECK(c.to_vector<std::int64_t>() == want);
  b = aj::Array();
  CHECK(deletes == 1);  // c is evaluated: it no longer reads the import
  c = aj::Array();
  CHECK(deletes == 1);
}

TEST_CASE("interop: DLPack import rejects what arrayjit cannot read, taking nothing") {
  std::vector<std::uint8_t> bytes(16, 1);
  int deletes = 0;
  // A dtype no row of dtypes.def will be soon (uint8 was, until unsigned dtypes came into view).
  auto* m = produce<DLManagedTensorVersioned>(bytes.data(), {kDLComplex, 64, 1}, {16}, {}, &deletes);
  CHECK_THROWS_WITH_AS(aj::from_dlpack(m), doctest::Contains("not one of arrayjit's"), aj::Error);
  m->dl_tensor.dtype = {kDLFloat, 32, 4};
  CHECK_THROWS_WITH_AS(aj::from_dlpack(m), doctest::Contains("4 lanes"), aj::Error);
  m->dl_tensor.dtype = {kDLBool, 8, 1};
  m->dl_tensor.device = {kDLCUDA, 0};
  // Host memory posing as CUDA memory: the driver does not know it (or there is none).
  CHECK_THROWS_WITH_AS(aj::from_dlpack(m), doctest::Contains("cannot borrow"), aj::Error);
  m->dl_tensor.device = {kDLOpenCL, 0};
  CHECK_THROWS_WITH_AS(aj::from_dlpack(m), doctest::Contains("device type 4"), aj::Error);
  m->dl_tensor.device = {kDLCPU, 0};
  m->version.major = 2;
  aj_array out{};
  CHECK(aj_from_dlpack_versioned(m, &out) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("major version 2") != std::string::npos);
  CHECK(deletes == 0);
  m->version.major = 1;
  m->dl_tensor.device = {kDLCUDAHost, 0};  // pinned host memory reads like the CPU's
  REQUIRE(aj_from_dlpack_versioned(m, &out) == AJ_OK);
  CHECK(aj::from_c(out).to_vector<bool>() == std::vector<bool>(16, true));
  aj_array_release(out);
  CHECK(deletes == 1);
}

TEST_CASE_TEMPLATE("interop: DLPack export shares the buffer and pins it until the deleter", Managed,
                   DLManagedTensorVersioned, DLManagedTensor) {
  auto xv = random_floats(20, 10);
  aj::Array x = aj::from_vector(xv, {4, 5}) * 2 + 1;
  Managed* m = nullptr;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    m = aj::to_dlpack_versioned(x.T());
    CHECK(m->version.major == 1);
    CHECK((m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
    CHECK((m->flags & DLPACK_FLAG_BITMASK_IS_COPIED) == 0);
  } else {
    m = aj::to_dlpack(x.T());
  }
  const DLTensor& t = m->dl_tensor;
  CHECK(t.data == x.data().ptr);
  CHECK(t.device.device_type == kDLCPU);
  CHECK(t.ndim == 2);
  CHECK(t.shape[0] == 5);
  CHECK(t.shape[1] == 4);
  CHECK(t.strides[0] == 1);
  CHECK(t.strides[1] == 5);
  CHECK(t.dtype.code == kDLFloat);
  CHECK(t.dtype.bits == 32);
  auto want = twice_plus_one(xv);
  x = aj::Array();  // the export alone keeps the buffer...
  aj::reset_stats();
  aj::Array other = aj::from_vector(random_floats(20, 11), {4, 5}) * 3;
  other.eval();  // ...so this result cannot land in it
  const auto* data = static_cast<const float*>(t.data);
  CHECK(std::vector<float>(data, data + 20) == want);
  const auto live = aj::stats().live_bytes;
  m->deleter(m);
  CHECK(aj::stats().live_bytes == live - 80);
}

TEST_CASE("interop: DLPack round trip through arrayjit is the same memory, and one deleter call") {
  auto xv = ajtest::random_magnitudes<double>(6, 12, 0.1, 5.0);
  int deletes = 0;
  auto* in = produce<DLManagedTensorVersioned>(xv.data(), {kDLFloat, 64, 1}, {2, 3}, {}, &deletes);
  aj::Array a = aj::from_dlpack(in);
  DLManagedTensorVersioned* out = aj::to_dlpack_versioned(a);
  CHECK(out->dl_tensor.data == xv.data());
  a = aj::Array();
  CHECK(deletes == 0);  // the export still holds the import
  out->deleter(out);
  CHECK(deletes == 1);
}

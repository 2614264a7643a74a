// The C API (arrayjit/arrayjit.h) against the C++ API it wraps: the C tape's
// logistic regression (tests/c_api/logreg.c, compiled as C) against the same
// training written in C++; every generated op against its C++ op; weak
// scalars, read-out, handles (pool return at the last release, threads),
// traced functions (donation, nesting, no replanning for new scalars).
#include <doctest/doctest.h>

#include <cfloat>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/c_result.hpp"
#include "tests/c_api/logreg.h"
#include "tests/random_data.hpp"

namespace {

// A C handle owned by the test (released when it goes out of scope).
struct Handle {
  aj_array h{0};
  Handle() = default;
  explicit Handle(aj::Array a) : h(aj::to_c(std::move(a))) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { CHECK(aj_array_release(h) == AJ_OK); }
  aj::Array array() const { return aj::from_c(h); }
};

std::string last_error() { return aj_last_error(); }

}  // namespace

TEST_CASE("c api: the C tape's logistic regression gives the C++ API's losses") {
  constexpr int n = 64, d = 6, steps = 30;
  constexpr float lr = 0.4f, b0 = -0.1f;
  const auto X = ajtest::random_in<float>(n * d, 151, -1.0, 1.0);
  const auto noise = ajtest::random_in<float>(n, 152, -0.5, 0.5);
  const auto w0 = ajtest::random_in<float>(d, 153, -0.3, 0.3);
  std::vector<float> y(n);
  for (int i = 0; i < n; ++i) {  // labels of a known separating direction, with noise
    float z = 0;
    for (int j = 0; j < d; ++j) z += X[static_cast<std::size_t>(i * d + j)] * static_cast<float>(j % 3 - 1);
    y[static_cast<std::size_t>(i)] = z + noise[static_cast<std::size_t>(i)] > 0 ? 1.0f : 0.0f;
  }
  std::vector<double> c_losses(steps);
  std::vector<float> c_w(d);
  float c_b = 0;
  REQUIRE(logreg_train(LOGREG_FUNCTION, X.data(), y.data(), n, d, w0.data(), b0, lr, steps, c_losses.data(),
                       c_w.data(), &c_b) == 0);

  // The same training with the C++ API, the gradient in closed form.
  aj::Array Xa = aj::from_vector(X, {n, d}), ya = aj::from_vector(y), w = aj::from_vector(w0);
  aj::Array b = aj::full({}, b0, aj::DType::f32);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    aj::Array p = aj::sigmoid(aj::matmul(Xa, w) + b);
    aj::Array loss = -aj::mean(ya * aj::log(p) + (1 - ya) * aj::log(1 - p));
    aj::Array r = (p - ya) / n;
    w = w - lr * aj::matmul(Xa.T(), r);
    b = b - lr * aj::sum(r);
    aj::eval({w, b, loss});
    losses.push_back(loss.item<double>());
  }
  CHECK(losses.back() < 0.8 * losses.front());
  for (int s = 0; s < steps; ++s) {
    INFO("step " << s << ": C tape " << c_losses[static_cast<std::size_t>(s)] << ", C++ " << losses[static_cast<std::size_t>(s)]);
    CHECK(std::fabs(c_losses[static_cast<std::size_t>(s)] - losses[static_cast<std::size_t>(s)]) <=
          2e-6 * std::fabs(losses[static_cast<std::size_t>(s)]));
  }
  const auto cpp_w = w.to_vector<float>();
  for (int j = 0; j < d; ++j) CHECK(c_w[static_cast<std::size_t>(j)] == doctest::Approx(cpp_w[static_cast<std::size_t>(j)]).epsilon(1e-5));
  CHECK(c_b == doctest::Approx(b.item<float>()).epsilon(1e-5));
  CHECK(aj_live_handles() == 0);
}

namespace ref {  // the C++ op behind each C name (as core/c/ops.cpp maps them)
using namespace ::aj;
inline Array equal(const Operand& a, const Operand& b) { return a == b; }
inline Array not_equal(const Operand& a, const Operand& b) { return a != b; }
inline Array less(const Operand& a, const Operand& b) { return a < b; }
inline Array less_equal(const Operand& a, const Operand& b) { return a <= b; }
inline Array greater(const Operand& a, const Operand& b) { return a > b; }
inline Array greater_equal(const Operand& a, const Operand& b) { return a >= b; }
inline Array logical_and(const Operand& a, const Operand& b) { return a && b; }
inline Array logical_or(const Operand& a, const Operand& b) { return a || b; }
inline Array gelu_tanh(const Operand& x) { return gelu(x, true); }
}  // namespace ref

namespace {
// Both results evaluated, then compared as doubles, NaN equal to NaN.
void check_same(const char* name, const aj::Array& got, const aj::Array& want) {
  INFO(name);
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK((g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))));
}
// The ops given bool operands: logic, and the integer-only ops (which refuse floats).
bool logical(const std::string& name) {
  return name.rfind("logical_", 0) == 0 || name.rfind("bitwise_", 0) == 0 || name == "left_shift" ||
         name == "right_shift" || name == "gcd" || name == "lcm";
}
}  // namespace

TEST_CASE("c api: every generated op computes what its C++ op does") {
  const Handle x(aj::from_vector(ajtest::random_magnitudes<float>(12, 161, 0.2, 0.9), {3, 4}));
  const Handle y(aj::from_vector(ajtest::random_magnitudes<float>(4, 162, 0.5, 3.0), {4}));
  const Handle z(aj::from_vector(ajtest::random_in<float>(12, 163, -2.0, 2.0), {3, 4}));
  const Handle p(aj::from_vector(ajtest::generate<bool>(12, 164, 0), {3, 4}));
  const Handle q(aj::from_vector(ajtest::generate<bool>(4, 165, 0), {4}));
  aj_array out{0};
#define AJ_TEST_UNARY(name)                                                         \
  {                                                                                 \
    const bool l = logical(#name);                                                  \
    REQUIRE(aj_##name(l ? p.h : x.h, &out) == AJ_OK);                               \
    check_same(#name, aj::from_c(out), ref::name(l ? p.array() : x.array()));       \
    aj_array_release(out);                                                          \
  }
#define AJ_TEST_BINARY(name)                                                        \
  {                                                                                 \
    const bool l = logical(#name);                                                  \
    REQUIRE(aj_##name(l ? p.h : x.h, l ? q.h : y.h, &out) == AJ_OK);                \
    check_same(#name, aj::from_c(out), ref::name(l ? p.array() : x.array(), l ? q.array() : y.array())); \
    aj_array_release(out);                                                          \
  }
#define AJ_TEST_REDUCE(name)                                                        \
  for (int keep = 0; keep < 2; ++keep) {                                            \
    const bool l = #name == std::string("all") || #name == std::string("any");      \
    const std::int32_t axis = -1;                                                   \
    REQUIRE(aj_##name(l ? p.h : z.h, &axis, 1, keep, &out) == AJ_OK);               \
    check_same(#name, aj::from_c(out), ref::name(l ? p.array() : z.array(), -1, keep != 0)); \
    aj_array_release(out);                                                          \
    REQUIRE(aj_##name(l ? p.h : z.h, nullptr, 0, keep, &out) == AJ_OK);             \
    check_same(#name, aj::from_c(out), ref::name(l ? p.array() : z.array(), aj::Axes::all(), keep != 0)); \
    aj_array_release(out);                                                          \
  }
  AJ_UNARY_OPS(AJ_TEST_UNARY)
  AJ_BINARY_OPS(AJ_TEST_BINARY)
  AJ_REDUCE_OPS(AJ_TEST_REDUCE)
#undef AJ_TEST_UNARY
#undef AJ_TEST_BINARY
#undef AJ_TEST_REDUCE
  REQUIRE(aj_where(p.h, x.h, z.h, &out) == AJ_OK);
  check_same("where", aj::from_c(out), aj::where(p.array(), x.array(), z.array()));
  aj_array_release(out);
  REQUIRE(aj_clip(z.h, x.h, y.h, &out) == AJ_OK);
  check_same("clip", aj::from_c(out), aj::clip(z.array(), x.array(), y.array()));
  aj_array_release(out);

  // The ones written out one by one.
  const std::int32_t axis = 0, perm[2] = {1, 0}, sq = 0;
  const std::int64_t shape[3] = {2, 3, 2}, wide[3] = {2, 3, 4};
  const std::int64_t starts[2] = {1, AJ_SLICE_NONE}, stops[2] = {AJ_SLICE_NONE, 0}, steps[2] = {1, -2};
  const aj::Array X = x.array(), Z = z.array();
  auto one = [&](const char* name, aj_status s, const aj::Array& want) {
    REQUIRE_MESSAGE(s == AJ_OK, name << ": " << last_error());
    check_same(name, aj::from_c(out), want);
    aj_array_release(out);
  };
  {
    const Handle w(aj::from_vector(std::vector<double>{1.0, NAN, INFINITY, -INFINITY, -2.5}));
    const double big = 7.0;
    one("nan_to_num", aj_nan_to_num(w.h, -1.0, &big, nullptr, &out), aj::nan_to_num(w.array(), -1.0, 7.0));
    REQUIRE(aj_nan_to_num(w.h, 3.0, nullptr, nullptr, &out) == AJ_OK);
    CHECK(aj::from_c(out).to_vector<double>() == std::vector<double>{1.0, 3.0, DBL_MAX, -DBL_MAX, -2.5});
    aj_array_release(out);
  }
  one("argmax", aj_argmax(z.h, &axis, 1, &out), aj::argmax(Z, 0, true));
  one("argmin", aj_argmin(z.h, nullptr, 0, &out), aj::argmin(Z));
  one("matmul", aj_matmul(z.h, y.h, &out), aj::matmul(Z, y.array()));
  one("astype", aj_astype(z.h, AJ_I32, &out), Z.astype(aj::DType::i32));
  one("reshape", aj_reshape(z.h, shape, 3, &out), aj::reshape(Z, {2, 3, 2}));
  one("transpose", aj_transpose(z.h, perm, 2, &out), aj::transpose(Z, {1, 0}));
  one("transpose all", aj_transpose(z.h, nullptr, 0, &out), Z.T());
  one("broadcast_to", aj_broadcast_to(x.h, wide, 3, &out), aj::broadcast_to(X, {2, 3, 4}));
  one("expand_dims", aj_expand_dims(x.h, 1, &out), aj::expand_dims(X, 1));
  {
    const Handle e(aj::expand_dims(X, 0));
    one("squeeze", aj_squeeze(e.h, &sq, 1, &out), X);
    one("squeeze all", aj_squeeze(e.h, nullptr, 0, &out), X);
  }
  one("slice", aj_slice(z.h, starts, stops, steps, 2, &out), aj::slice(Z, {{1, std::nullopt}, {std::nullopt, 0, -2}}));
  one("slice_axis", aj_slice_axis(z.h, 1, -3, AJ_SLICE_NONE, 2, &out), aj::slice(Z, 1, -3, std::nullopt, 2));
  const aj_array two[2] = {x.h, z.h};
  one("concatenate", aj_concatenate(two, 2, 1, &out), aj::concatenate({X, Z}, 1));
  one("stack", aj_stack(two, 2, 0, &out), aj::stack({X, Z}, 0));
  one("to_device", aj_to_device(x.h, AJ_DEVICE_CPU, 0, &out), X);
  one("zeros", aj_zeros(shape, 3, AJ_I64, &out), aj::zeros({2, 3, 2}, aj::DType::i64));
  one("full", aj_full(shape, 2, 2.5, AJ_F64, &out), aj::full({2, 3}, 2.5, aj::DType::f64));
  one("arange", aj_arange_range(1, 7, 1.5, AJ_F32, &out), aj::arange(1, 7, 1.5));
  one("linspace", aj_linspace(0, 1, 5, AJ_F64, &out), aj::linspace(0, 1, 5, aj::DType::f64));
  one("eye", aj_eye(3, 4, 1, AJ_I32, &out), aj::eye(3, 4, 1, aj::DType::i32));
  aj_random_seed(7);
  REQUIRE(aj_random_normal(shape, 2, 1, 2, AJ_F32, &out) == AJ_OK);
  aj::random::seed(7);
  check_same("random_normal", aj::from_c(out), aj::random::normal({2, 3}, 1, 2));
  aj_array_release(out);
}

TEST_CASE("c api: weak scalars take the other operand's dtype, as C++ literals do") {
  const Handle f(aj::from_vector(std::vector<float>{1.5f, -2.0f}));
  const Handle i(aj::from_vector(std::vector<std::int32_t>{3, -7}));
  aj_array two{0}, one{0}, half{0}, out{0};
  REQUIRE(aj_scalar_f64(2.0, &two) == AJ_OK);
  REQUIRE(aj_scalar_i64(1, &one) == AJ_OK);
  REQUIRE(aj_scalar_f64(2.5, &half) == AJ_OK);
  REQUIRE(aj_multiply(f.h, two, &out) == AJ_OK);
  check_same("f32 * 2.0", aj::from_c(out), f.array() * 2.0);
  CHECK(aj::from_c(out).dtype() == aj::DType::f32);
  aj_array_release(out);
  REQUIRE(aj_subtract(one, i.h, &out) == AJ_OK);
  check_same("1 - i32", aj::from_c(out), 1 - i.array());
  CHECK(aj::from_c(out).dtype() == aj::DType::i32);
  aj_array_release(out);
  REQUIRE(aj_add(i.h, half, &out) == AJ_OK);
  CHECK(aj::from_c(out).dtype() == aj::DType::f64);  // a float scalar lifts an integer array to f64
  aj_array_release(out);
  REQUIRE(aj_sum(two, nullptr, 0, 0, &out) == AJ_OK);  // outside elementwise ops: a rank-0 f64
  CHECK(aj::from_c(out).dtype() == aj::DType::f64);
  CHECK(aj::from_c(out).item<double>() == 2.0);
  aj_array_release(out);
  REQUIRE(aj_scalar_i64(3000000000LL, &out) == AJ_OK);
  aj_array big{0};
  CHECK(aj_add(i.h, out, &big) == AJ_ERROR_USER);  // does not fit i32: an error, as in C++
  CHECK(last_error().find("3000000000") != std::string::npos);
  for (aj_array h : {two, one, half, out}) CHECK(aj_array_release(h) == AJ_OK);
}

TEST_CASE("c api: read-out converts and follows strides; printing matches operator<<") {
  const auto v = ajtest::random_in<float>(6, 171, -9.0, 9.0);
  const Handle a(aj::from_vector(v, {2, 3}));
  std::vector<std::int32_t> as_int(6);
  REQUIRE(aj_array_read(a.h, AJ_I32, as_int.data(), 24, nullptr) == AJ_OK);
  CHECK(as_int == a.array().to_vector<std::int32_t>());
  std::vector<double> col(6);  // column-major destination: strides 8 and 16 bytes
  const std::int64_t strides[2] = {8, 16};
  REQUIRE(aj_array_read(a.h, AJ_F64, col.data(), 48, strides) == AJ_OK);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) CHECK(col[static_cast<std::size_t>(r + 2 * c)] == v[static_cast<std::size_t>(r * 3 + c)]);
  }
  std::vector<float> same(6);
  const std::int64_t f_strides[2] = {4, 8};
  REQUIRE(aj_array_read(a.h, AJ_F32, same.data(), 24, f_strides) == AJ_OK);  // same dtype: copy_to
  CHECK(same[1] == v[3]);
  std::ostringstream os;
  os << a.array();
  std::size_t len = 0;
  REQUIRE(aj_array_to_string(a.h, nullptr, 0, &len) == AJ_OK);
  std::string text(len + 1, '\0');
  REQUIRE(aj_array_to_string(a.h, text.data(), text.size(), &len) == AJ_OK);
  CHECK(text.c_str() == os.str());
  int32_t nd = 0;
  std::int64_t shape[4];
  aj_dtype t;
  CHECK((aj_array_ndim(a.h, &nd) == AJ_OK && nd == 2));
  CHECK((aj_array_shape(a.h, shape, 4) == AJ_OK && shape[0] == 2 && shape[1] == 3));
  CHECK((aj_array_dtype(a.h, &t) == AJ_OK && t == AJ_F32));
}

TEST_CASE("c api: a buffer goes back to the pool when its last handle is released") {
  aj_array a{0}, b{0};
  REQUIRE(aj_arange(4096, AJ_F64, &a) == AJ_OK);
  REQUIRE(aj_eval(a) == AJ_OK);
  const auto held = aj::stats().live_bytes;
  REQUIRE(aj_array_retain(a, &b) == AJ_OK);
  CHECK(aj_array_release(a) == AJ_OK);
  CHECK(aj::stats().live_bytes == held);  // b still holds it
  CHECK(aj_array_release(b) == AJ_OK);
  CHECK(aj::stats().live_bytes == held - 4096 * 8);  // at once, in that call
  CHECK(aj_array_release(b) == AJ_ERROR_HANDLE);
  CHECK_THROWS_WITH_AS(aj::from_c(b), doctest::Contains("released aj_array handle"), aj::Error);
}

namespace {
aj_status noop_trace(void*, const aj_array* in, aj_array* out) { return aj_array_retain(in[0], &out[0]); }
}  // namespace

TEST_CASE("c api: the handle table is safe from several threads; stale handles are always caught") {
  // Function handles touch no array, so this runs now while tracing arrays
  // is still single-threaded (graph/graph.hpp: graph()).
  aj_function_desc desc{};
  desc.struct_size = sizeof desc;
  desc.trace = noop_trace;
  desc.n_inputs = desc.n_outputs = 1;
  const std::size_t before = aj_live_handles();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<aj_function> stale;
      for (int i = 0; i < 5000; ++i) {
        aj_function f{0};
        if (aj_function_new(&desc, &f) != AJ_OK) ++wrong;
        if (aj_function_release(f) != AJ_OK) ++wrong;
        if (i % 50 == 0) stale.push_back(f);
      }
      for (aj_function f : stale) {
        if (aj_function_release(f) != AJ_ERROR_HANDLE) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(aj_live_handles() == before);
}

namespace {
struct Step {
  int traces = 0;
};
// out = w - lr * x (lr a weak scalar input): one elementwise kernel.
aj_status sgd_trace(void* context, const aj_array* in, aj_array* out) {
  ++static_cast<Step*>(context)->traces;
  aj_array t{0};
  aj_status s = aj_multiply(in[2], in[1], &t);
  if (s == AJ_OK) s = aj_subtract(in[0], t, &out[0]);
  return s;  // t is released by the call
}
// The description of sgd_trace, counting its traces in *step.
aj_function_desc sgd_desc(Step* step) {
  aj_function_desc desc{};
  desc.struct_size = sizeof desc;
  desc.trace = sgd_trace;
  desc.context = step;
  desc.n_inputs = 3;
  desc.n_outputs = 1;
  desc.name = "sgd";
  return desc;
}
// Calls the sgd function inside its own trace: recorded inline.
aj_status twice_trace(void* context, const aj_array* in, aj_array* out) {
  const aj_function inner{reinterpret_cast<std::uintptr_t>(context)};
  aj_array mid[3] = {{0}, in[1], in[2]};
  aj_status s = aj_function_call(inner, in, &mid[0]);
  if (s == AJ_OK) s = aj_function_call(inner, mid, out);
  return s;
}
}  // namespace

TEST_CASE("c api: traced functions replay with new inputs, donate buffers, and record inline when nested") {
  Step step;
  aj_function_desc desc = sgd_desc(&step);
  aj_function f{0};
  REQUIRE(aj_function_new(&desc, &f) == AJ_OK);
  const auto wv = ajtest::random_in<float>(1000, 181, -1.0, 1.0), xv = ajtest::random_in<float>(1000, 182, -1.0, 1.0);
  aj_array in[3] = {aj::to_c(aj::from_vector(wv) * 1), aj::to_c(aj::from_vector(xv)), {0}};
  REQUIRE(aj_eval(in[0]) == AJ_OK);
  std::vector<float> want = wv;
  aj::reset_stats();
  for (int k = 0; k < 4; ++k) {
    const double lr = 0.1 * (k + 1);
    REQUIRE(aj_scalar_f64(lr, &in[2]) == AJ_OK);
    const int donate[3] = {1, 0, 0};
    aj_array out{0};
    REQUIRE_MESSAGE(aj_function_call_donate(f, in, donate, &out) == AJ_OK, last_error());
    CHECK(AJ_IS_NULL(in[0]));  // consumed
    in[0] = out;
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = want[i] - static_cast<float>(lr) * xv[i];
    CHECK(aj::from_c(in[0]).to_vector<float>() == want);
    CHECK(aj_array_release(in[2]) == AJ_OK);
  }
  const aj::Stats s = aj::stats();
  CHECK(step.traces == 2);           // the second call learns that lr reaches the kernel as is; then replays
  CHECK(s.compiled_replays == 2);
  CHECK(s.inplace_reuses >= 3);      // the donated weights were overwritten in place, replays too
  CHECK(s.plans_built <= 1);         // a new learning rate is a new scalar, not a new plan
  CHECK(s.kernels_compiled + s.kernel_disk_hits <= 1);

  aj_function_desc outer = desc;
  outer.trace = twice_trace;
  outer.context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(f._id));
  outer.name = "twice";
  aj_function g{0};
  REQUIRE(aj_function_new(&outer, &g) == AJ_OK);
  REQUIRE(aj_scalar_f64(0.5, &in[2]) == AJ_OK);
  aj_array out{0};
  aj::reset_stats();
  REQUIRE_MESSAGE(aj_function_call(g, in, &out) == AJ_OK, last_error());
  CHECK(aj::stats().evals == 1);  // the inner calls were recorded, not run
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = (want[i] - 0.5f * xv[i]) - 0.5f * xv[i];
  const auto got = aj::from_c(out).to_vector<float>();
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  for (aj_array h : {in[0], in[1], in[2], out}) CHECK(aj_array_release(h) == AJ_OK);
  CHECK(aj_function_release(g) == AJ_OK);
  CHECK(aj_function_release(f) == AJ_OK);
}

TEST_CASE("c api: arrays from caller memory (copied, strided, bools) and evaluated into it") {
  const auto v = ajtest::random_in<double>(6, 191, -5.0, 5.0);
  const std::int64_t shape[2] = {2, 3}, col_strides[2] = {8, 16};  // a column-major 2 x 3 in bytes
  aj_view view{};
  view.struct_size = sizeof view;
  view.data = const_cast<double*>(v.data());
  view.ndim = 2;
  view.shape = shape;
  view.strides = col_strides;
  view.dtype = AJ_F64;
  view.itemsize = 8;
  view.device_type = AJ_DEVICE_CPU;
  aj_array copy{0};
  REQUIRE(aj_array_copy_view(&view, &copy) == AJ_OK);
  const auto got = aj::from_c(copy).to_vector<double>();
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) CHECK(got[static_cast<std::size_t>(r * 3 + c)] == v[static_cast<std::size_t>(r + 2 * c)]);
  }
  CHECK(aj::from_c(copy).data().ptr != v.data());  // a copy of arrayjit's own

  const unsigned char bytes[3] = {0, 2, 1};  // C's truthy bytes become true
  const std::int64_t three = 3;
  aj_array flags{0};
  REQUIRE(aj_array_from_data(bytes, AJ_BOOL, &three, 1, &flags) == AJ_OK);
  CHECK(aj::from_c(flags).to_vector<bool>() == std::vector<bool>{false, true, true});

  aj_array twice{0}, two{0};
  REQUIRE(aj_scalar_f64(2.0, &two) == AJ_OK);
  REQUIRE(aj_multiply(copy, two, &twice) == AJ_OK);
  int evaluated = 1;
  CHECK((aj_array_is_evaluated(twice, &evaluated) == AJ_OK && evaluated == 0));
  std::vector<double> dst(6);
  CHECK(aj_eval_into(twice, dst.data(), 40) == AJ_ERROR_USER);  // 40 of 48 bytes
  CHECK(last_error().find("48 bytes") != std::string::npos);
  REQUIRE(aj_eval_into(twice, dst.data(), 48) == AJ_OK);
  for (std::size_t i = 0; i < 6; ++i) CHECK(dst[i] == 2 * got[i]);
  aj_device_type type = AJ_DEVICE_CUDA;
  std::int32_t id = -1;
  CHECK((aj_array_device(twice, &type, &id) == AJ_OK && type == AJ_DEVICE_CPU && id == 0));
  for (aj_array h : {copy, flags, twice, two}) CHECK(aj_array_release(h) == AJ_OK);
}

TEST_CASE("c api: a traced function at new lengths traces twice, then runs without tracing or planning") {
  // aj_function_call compiles as aj::compile does: the second length traces
  // once more (it checks the first trace), every later new length makes the
  // kept trace at its length and runs the kept plan at its numbers.
  Step step;
  aj_function_desc desc = sgd_desc(&step);
  aj_function f{0};
  REQUIRE(aj_function_new(&desc, &f) == AJ_OK);
  unsigned seed = 300;
  int k = 0;
  for (std::int64_t n : {100, 230, 371, 502, 777, 1234, 64}) {
    const auto wv = ajtest::random_in<float>(static_cast<std::size_t>(n), seed++, -1.0, 1.0);
    const auto xv = ajtest::random_in<float>(static_cast<std::size_t>(n), seed++, -1.0, 1.0);
    const double lr = 0.05 * ++k;
    aj_array in[3] = {aj::to_c(aj::from_vector(wv)), aj::to_c(aj::from_vector(xv)), {0}};
    REQUIRE(aj_scalar_f64(lr, &in[2]) == AJ_OK);
    aj::reset_stats();
    aj_array out{0};
    REQUIRE_MESSAGE(aj_function_call(f, in, &out) == AJ_OK, last_error());
    const aj::Stats s = aj::stats();
    std::vector<float> got(static_cast<std::size_t>(n));
    REQUIRE(aj_array_read(out, AJ_F32, got.data(), got.size() * sizeof(float), nullptr) == AJ_OK);
    for (std::size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i] == wv[i] - static_cast<float>(lr) * xv[i]);  // one rounding each, as the kernel does
    }
    INFO("length " << n);
    if (k >= 3) {  // no trace, no plan, no compile
      CHECK(s.compiled_unplanned == 1);
      CHECK(s.compiled_new_extents == 1);
      CHECK(s.compiled_replays == 0);  // a call at new extents, not a replay
      CHECK(s.plans_built == 0);
      CHECK(s.kernels_compiled == 0);
    }
    for (aj_array h : {in[0], in[1], in[2], out}) CHECK(aj_array_release(h) == AJ_OK);
  }
  CHECK(step.traces == 2);
  CHECK(aj_function_release(f) == AJ_OK);
}

TEST_CASE("c api: an op's error names the C function once, with no C++ name repeating it and no source line") {
  const Handle b(aj::from_vector<bool>({true, false}));
  const Handle f(aj::from_vector<float>({1.0f, 2.0f}));
  aj_array out{0};
  CHECK(aj_exp(b.h, &out) == AJ_ERROR_USER);
  std::string e = last_error();
  CHECK(e.rfind("aj_exp: ", 0) == 0);
  CHECK(e.find("aj::exp") == std::string::npos);
  CHECK(e.find("does not accept bool") != std::string::npos);
  CHECK(e.find("(at ") == std::string::npos);
  CHECK(aj_logical_xor(f.h, f.h, &out) == AJ_ERROR_USER);
  e = last_error();
  CHECK(e.rfind("aj_logical_xor: needs bool operands", 0) == 0);
  CHECK(out._id == 0);
}

TEST_CASE("C API: softmax, log_softmax, logsumexp, take, take_along_axis, scatter_add, one_hot compute what C++ does") {
  const aj::Array x = aj::from_vector<double>({0.5, -1, 2, 3, 0, -0.25}, aj::Shape{2, 3});
  const aj::Array idx = aj::from_vector<std::int64_t>({2, 0, 2});
  const aj::Array col = aj::from_vector<std::int64_t>({1, 2}, aj::Shape{2, 1});
  aj_array hx = aj::to_c(x), hi = aj::to_c(idx), hc = aj::to_c(col), out{0};
  auto same = [&](aj_status s, const aj::Array& want) { ajtest::check_c_result(s, out, want); };
  const std::int32_t ax0 = 0, ax1 = 1;
  same(aj_softmax(hx, nullptr, 0, &out), aj::softmax(x));
  same(aj_softmax(hx, &ax0, 1, &out), aj::softmax(x, 0));
  same(aj_log_softmax(hx, nullptr, 0, &out), aj::log_softmax(x));
  same(aj_logsumexp(hx, &ax1, 1, 1, &out), aj::logsumexp(x, 1, true));
  same(aj_logsumexp(hx, nullptr, 0, 0, &out), aj::logsumexp(x));
  same(aj_take(hx, hi, &ax1, &out), aj::take(x, idx, 1));
  same(aj_take(hx, hi, nullptr, &out), aj::take(x, idx));
  same(aj_take_along_axis(hx, hc, 1, &out), aj::take_along_axis(x, col, 1));
  aj_array hz = aj::to_c(aj::zeros({2, 4}, aj::DType::f64));
  same(aj_scatter_add(hz, hi, hx, 1, &out), aj::scatter_add(aj::zeros({2, 4}, aj::DType::f64), idx, x, 1));
  same(aj_one_hot(hi, 4, AJ_F32, &out), aj::one_hot(idx, 4));
  CHECK(aj_one_hot(hi, -1, AJ_F32, &out) != AJ_OK);
  CHECK(std::string(aj_last_error()).find("aj_one_hot") != std::string::npos);
  for (aj_array h : {hx, hi, hc, hz}) aj_array_release(h);
}

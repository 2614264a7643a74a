// aj::host_callback (arrayjit/host_callback.hpp) and aj_host_callback: a
// user's function over evaluated host buffers as a step of the plan. Against
// hand loops on random inputs: strided and broadcast inputs as laid out,
// several results, kernels fused around it, calls inside aj::compile (every
// replay calls it), a vjp callback under grad, and the errors (no
// derivative, a throwing callback, mixed result dtypes, a CUDA input), each
// leaving the session usable.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <atomic>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using aj::Array;
using aj::DType;
using aj::HostBuffer;

std::vector<double> random_values(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const aj::Error& e) {
    return e.what();
  }
  return "";
}

// A running maximum along the last axis of a 2-d f64 input, read through its
// strides (a function arrayjit would not fuse: a stand-in for foreign code).
void running_max(const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
  const HostBuffer& x = in[0];
  double* y = out[0].as<double>();
  const std::int64_t rows = x.shape[0], cols = x.shape[1];
  for (std::int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY;
    for (std::int64_t j = 0; j < cols; ++j) {
      m = std::max(m, x.as<double>()[i * x.strides[0] + j * x.strides[1]]);
      y[i * cols + j] = m;
    }
  }
}

std::vector<double> running_max_of(const std::vector<double>& v, std::int64_t rows, std::int64_t cols, bool transposed) {
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY;
    for (std::int64_t j = 0; j < cols; ++j) {
      m = std::max(m, transposed ? v[static_cast<std::size_t>(j * rows + i)] : v[static_cast<std::size_t>(i * cols + j)]);
      out[static_cast<std::size_t>(i * cols + j)] = m;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("host_callback: a function over the inputs as laid out, kernels around it") {
  std::mt19937_64 rng(31);
  const std::vector<double> v = random_values(rng, 12);
  const Array x = aj::from_vector(v, aj::Shape{3, 4});
  std::atomic<int> calls{0};
  aj::HostCallback rmax([&](const auto& in, const auto& out) {
    ++calls;
    running_max(in, out);
  }, "running_max");
  // The input is computed by a kernel (x * 2), the result read by another.
  const Array y = rmax({{aj::Shape{3, 4}, DType::f64}}, {x * 2.0})[0] + 1.0;
  CHECK(calls == 0);  // lazy
  std::vector<double> want = running_max_of(v, 3, 4, false);
  for (double& w : want) w = 2 * w + 1;
  // (x * 2's running max is twice x's.)
  CHECK(y.to_vector<double>() == want);
  CHECK(calls == 1);
  // A transposed view is handed over as it is laid out: its strides.
  const Array xt = aj::transpose(aj::from_vector(v, aj::Shape{4, 3}));
  const Array yt = rmax({{aj::Shape{3, 4}, DType::f64}}, {xt})[0];
  CHECK(yt.to_vector<double>() == running_max_of(v, 3, 4, true));
  // explain names the step by the callback's name and line.
  const std::string plan = aj::explain(rmax({{aj::Shape{3, 4}, DType::f64}}, {x})[0]);
  CHECK(plan.find("= host_call 'running_max' (made at test_host_callback.cpp:") != std::string::npos);
  // The same function on the same array twice: one call (it is pure).
  calls = 0;
  const Array a = rmax({{aj::Shape{3, 4}, DType::f64}}, {x})[0];
  const Array b = rmax({{aj::Shape{3, 4}, DType::f64}}, {x})[0];
  aj::eval({a, b});
  CHECK(calls == 1);
  CHECK(a.to_vector<double>() == b.to_vector<double>());
}

TEST_CASE("host_callback: several results, a broadcast input, no inputs") {
  std::mt19937_64 rng(32);
  const std::vector<double> v = random_values(rng, 6);
  const Array x = aj::from_vector(v);
  auto rs = aj::host_callback(
      [](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
        const HostBuffer& s = in[1];  // a rank-0 scalar broadcast: read with at()
        for (std::int64_t i = 0; i < in[0].numel(); ++i) {
          out[0].as<double>()[i] = in[0].at<double>(i) * s.at<double>(0);
        }
        double sum = 0;
        for (std::int64_t i = 0; i < in[0].numel(); ++i) sum += in[0].at<double>(i);
        out[1].as<double>()[0] = sum;
        out[1].as<double>()[1] = static_cast<double>(in[0].numel());
      },
      {{aj::Shape{6}, DType::f64}, {aj::Shape{2}, DType::f64}}, {x, aj::full({}, 3.0, DType::f64)});
  REQUIRE(rs.size() == 2);
  std::vector<double> want0;
  double sum = 0;
  for (double e : v) want0.push_back(3 * e), sum += e;
  CHECK(rs[0].to_vector<double>() == want0);
  CHECK(rs[1].to_vector<double>() == std::vector<double>{sum, 6});
  // No inputs: a source of values.
  auto src = aj::host_callback(
      [](const std::vector<HostBuffer>&, const std::vector<HostBuffer>& out) {
        for (std::int64_t i = 0; i < out[0].numel(); ++i) out[0].as<std::int64_t>()[i] = i * i;
      },
      {{aj::Shape{2, 3}, DType::i64}}, {});
  CHECK(src[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 4, 9, 16, 25});
}

TEST_CASE("host_callback: inside aj::compile every replay calls it with the new values") {
  std::mt19937_64 rng(33);
  std::atomic<int> calls{0};
  aj::HostCallback rmax([&](const auto& in, const auto& out) {
    ++calls;
    running_max(in, out);
  });
  auto step = aj::compile([&](const Array& x) { return aj::exp(rmax({{x.shape(), DType::f64}}, {x * 0.5})[0]); });
  for (int it = 0; it < 4; ++it) {
    const std::vector<double> v = random_values(rng, 8);
    const Array y = step(aj::from_vector(v, aj::Shape{2, 4}));
    std::vector<double> half = v;
    for (double& e : half) e *= 0.5;
    std::vector<double> want = running_max_of(half, 2, 4, false);
    for (double& w : want) w = std::exp(w);
    const std::vector<double> got = y.to_vector<double>();
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-15));
  }
  CHECK(calls == 4);
  CHECK(step.counts().replays >= 2);
}

TEST_CASE("host_callback: one made inside the traced function lives as long as the kept program") {
  // The HostCallback is a temporary of the trace (as every C and Python
  // caller's is): only the kept program holds it after the first call (the
  // graph's hold ends with the evaluation that ran it). It was dropped there
  // once: every call failed with "a host_call step whose function is gone".
  std::mt19937_64 rng(34);
  std::atomic<int> calls{0};
  auto step = aj::compile([&](const Array& x) {
    aj::HostCallback inner([&](const auto& in, const auto& out) {
      ++calls;
      running_max(in, out);
    });
    return inner({{x.shape(), DType::f64}}, {x + 1.0})[0] * 2.0;
  });
  for (int it = 0; it < 3; ++it) {
    const std::vector<double> v = random_values(rng, 6);
    const std::vector<double> got = step(aj::from_vector(v, aj::Shape{2, 3})).to_vector<double>();
    std::vector<double> plus = v;
    for (double& e : plus) e += 1.0;
    const std::vector<double> want = running_max_of(plus, 2, 3, false);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(2 * want[i]).epsilon(1e-15));
  }
  CHECK(calls == 3);
  CHECK(step.counts().replays >= 1);
}

TEST_CASE("host_callback: a vjp callback gives its gradient; without one, grad is an error") {
  std::mt19937_64 rng(34);
  // y = x^3 elementwise, by the host; its vjp: 3 x^2 g.
  auto cube = [](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
    for (std::int64_t i = 0; i < in[0].numel(); ++i) out[0].as<double>()[i] = std::pow(in[0].at<double>(i), 3);
  };
  auto cube_vjp = [](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
    // in: x, y (the result), g (its cotangent); out: x's cotangent
    for (std::int64_t i = 0; i < in[0].numel(); ++i) {
      const double x = in[0].at<double>(i);
      out[0].as<double>()[i] = 3 * x * x * in[2].at<double>(i);
    }
  };
  aj::HostCallback with(cube, cube_vjp, "cube");
  const std::vector<double> v = random_values(rng, 5);
  const Array x = aj::from_vector(v);
  const Array g = aj::grad([&](const Array& a) { return aj::sum(with({{a.shape(), DType::f64}}, {a * 2.0})[0]); })(x);
  const std::vector<double> got = g.to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(got[i] == doctest::Approx(6 * 4 * v[i] * v[i]).epsilon(1e-14));

  aj::HostCallback without(cube, "cube");
  const std::string e = error_of([&] {
    (void)aj::grad([&](const Array& a) { return aj::sum(without({{a.shape(), DType::f64}}, {a})[0]); })(x);
  });
  CHECK(e.find("host_callback 'cube' has no derivative") != std::string::npos);
  CHECK(e.find("test_host_callback.cpp") != std::string::npos);
  // Its value still works.
  CHECK(without({{x.shape(), DType::f64}}, {x})[0].to_vector<double>().size() == 5);
}

TEST_CASE("host_callback: a throwing function, mixed result dtypes and bad inputs are clear errors") {
  const Array x = aj::from_vector<double>({1, 2, 3});
  aj::HostCallback bad([](const auto&, const auto&) { throw std::runtime_error("the model file is missing"); },
                       "loader");
  const Array y = bad({{aj::Shape{3}, DType::f64}}, {x})[0];
  std::string e = error_of([&] { (void)y.to_vector<double>(); });
  CHECK(e.find("host_callback 'loader' (made at") != std::string::npos);
  CHECK(e.find("threw: the model file is missing") != std::string::npos);
  // The session goes on; x is intact.
  CHECK(x.to_vector<double>() == std::vector<double>{1, 2, 3});
  e = error_of([&] {
    (void)aj::host_callback([](const auto&, const auto&) {}, {{aj::Shape{3}, DType::f64}, {aj::Shape{3}, DType::i64}},
                            {x});
  });
  CHECK(e.find("result 1 is i64 but result 0 is f64") != std::string::npos);
  e = error_of([&] { (void)aj::host_callback([](const auto&, const auto&) {}, {}, {x}); });
  CHECK(e.find("has no results") != std::string::npos);
  e = error_of([&] { (void)aj::host_callback([](const auto&, const auto&) {}, {{aj::Shape{3}, DType::f64}}, {Array()}); });
  CHECK(e.find("input 0 is an empty Array handle") != std::string::npos);
}

namespace {
struct CCtx {
  int calls = 0, released = 0;
};
aj_status c_square(void* c, const aj_view* in, int32_t n_in, const aj_view* out, int32_t n_out) {
  auto* ctx = static_cast<CCtx*>(c);
  ++ctx->calls;
  if (n_in != 1 || n_out != 1 || in[0].dtype != AJ_F64 || !in[0].readonly || out[0].readonly) {
    aj_set_error("unexpected views");
    return AJ_ERROR_USER;
  }
  const int64_t n = in[0].ndim ? in[0].shape[0] : 1;
  for (int64_t i = 0; i < n; ++i) {
    const double v = *reinterpret_cast<const double*>(static_cast<const char*>(in[0].data) + i * in[0].strides[0]);
    static_cast<double*>(out[0].data)[i] = v * v;
  }
  return AJ_OK;
}
aj_status c_fail(void*, const aj_view*, int32_t, const aj_view*, int32_t) {
  aj_set_error("the device is busy");
  return AJ_ERROR_RUNTIME;
}
void c_release(void* c) { ++static_cast<CCtx*>(c)->released; }
}  // namespace

TEST_CASE("c api: aj_host_callback runs a C function as a step, releases its context once") {
  CCtx ctx;
  const Array x = aj::from_vector<double>({1, -2, 3, 0.5});
  {
    aj_host_callback_desc d{};
    d.struct_size = sizeof d;
    d.fn = c_square;
    d.context = &ctx;
    d.release = c_release;
    d.name = "square";
    const int64_t shape[] = {4};
    const int64_t* shapes[] = {shape};
    const int32_t ndims[] = {1};
    aj_array in = aj::to_c(x), out{0};
    REQUIRE(aj_host_callback(&d, AJ_F64, shapes, ndims, 1, &in, 1, &out) == AJ_OK);
    CHECK(ctx.calls == 0);
    CHECK(aj::from_c(out).to_vector<double>() == std::vector<double>{1, 4, 9, 0.25});
    CHECK(ctx.calls == 1);
    aj_array_release(out);
    aj_array_release(in);
    d.fn = c_fail;
    in = aj::to_c(x);
    REQUIRE(aj_host_callback(&d, AJ_F64, shapes, ndims, 1, &in, 1, &out) == AJ_OK);
    CHECK(aj_eval(out) == AJ_ERROR_RUNTIME);
    CHECK(std::string(aj_last_error()).find("host_callback 'square' (made at") != std::string::npos);
    CHECK(std::string(aj_last_error()).find("it returned the device is busy") != std::string::npos);
    aj_array_release(out);
    aj_array_release(in);
    d.fn = nullptr;
    CHECK(aj_host_callback(&d, AJ_F64, shapes, ndims, 1, &in, 1, &out) == AJ_ERROR_USER);
  }
  (x * 2.0).eval();  // an evaluation lets go of what the graph kept for evaluated or freed nodes
  CHECK(ctx.released == 2);  // one per successful call, once its functions are gone
}

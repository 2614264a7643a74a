// aj::compile's checked contract (CompileOptions): after warm-up, a replay
// that would take a buffer from the system beyond max_allocations, or would
// not write an in_place argument's buffer with a result, throws an aj::Error
// naming the argument, the op and line and the reason; an in_place refusal
// is found before anything runs (the arguments are still the caller's).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

using aj::Array;
using aj::DType;

Array random_f32(aj::Shape s, unsigned seed) {
  aj::random::seed(seed);
  return aj::random::normal(s).eval();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the aj::Error `f` throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const aj::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("compile contract: an SGD step keeps its promise, call after call") {
  auto step = aj::compile([](Array w, const Array& g, double lr) { return w - lr * g; },
                          aj::CompileOptions{.max_allocations = 0, .in_place = {0}});
  Array w = random_f32({256, 64}, 1);
  const Array g = random_f32({256, 64}, 2);
  std::vector<float> want = w.to_vector<float>();
  const std::vector<float> gv = g.to_vector<float>();
  for (int i = 0; i < 6; ++i) {
    const aj::Stats before = aj::stats();
    w = step(std::move(w), g, 0.5);
    for (std::size_t k = 0; k < want.size(); ++k) want[k] = want[k] - 0.5f * gv[k];
    if (i >= 2) {
      CHECK(aj::stats().system_allocs == before.system_allocs);
      CHECK(aj::stats().inplace_reuses > before.inplace_reuses);
    }
  }
  CHECK(step.counts().replays >= 4);
  CHECK(w.to_vector<float>() == want);
}

TEST_CASE("compile contract: a handle kept alive is refused before the call runs, losing nothing") {
  auto step = aj::compile([](Array w, const Array& g) { return w - 0.25f * g; }, aj::CompileOptions{.in_place = {0}});
  Array w = random_f32({64}, 3);
  const Array g = random_f32({64}, 4);
  w = step(std::move(w), g);
  w = step(std::move(w), g);
  Array kept = w;  // a second handle to the buffer
  const std::vector<float> before = w.to_vector<float>();
  const std::string msg = error_of([&] { w = step(std::move(w), g); });
  CHECK_MESSAGE(has(msg, "in_place: argument 0 (f32[64]"), msg);
  CHECK_MESSAGE(has(msg, "another handle to it is still alive"), msg);
  CHECK_MESSAGE(has(msg, "nothing was run and no argument taken"), msg);
  // Nothing was taken: both handles still hold the old values.
  REQUIRE(w.valid());
  CHECK(w.to_vector<float>() == before);
  CHECK(kept.to_vector<float>() == before);
  kept = Array();
  w = step(std::move(w), g);  // now it holds
  CHECK(w.to_vector<float>()[0] == before[0] - 0.25f * g.to_vector<float>()[0]);
  // An argument that is not donated: the second such call (the first is a
  // trace of its own signature) is refused.
  Array w2 = step(w, g);
  CHECK(has(error_of([&] { w2 = step(w, g); }), "it is not donated (pass it as std::move(x) or aj::donate(x))"));
  // A lazy array that still reads it, and an evaluated view that shares its buffer.
  Array base = random_f32({64}, 5);
  w = step(std::move(base), g);
  w = step(std::move(w), g);
  Array lazy = w * 2;
  CHECK(has(error_of([&] { w = step(std::move(w), g); }), "a lazy array made from it still reads it"));
  lazy = Array();
  Array view = aj::reshape(w, {8, 8}).eval();
  CHECK(has(error_of([&] { w = step(std::move(w), g); }), "its buffer is shared with another array"));
  view = Array();
  w = step(std::move(w), g);
  CHECK(w.valid());
}

TEST_CASE("compile contract: what the planner cannot do in place is named, with the op and line") {
  const Array x = random_f32({4, 4}, 6);
  // A dtype change.
  {
    auto f = aj::compile([](Array w) { return (w * 2).astype(DType::f64); }, aj::CompileOptions{.in_place = {0}});
    (void)f(random_f32({4, 4}, 7));
    const std::string msg = error_of([&] { (void)f(random_f32({4, 4}, 8)); });
    CHECK_MESSAGE(has(msg, "(a dtype change)"), msg);
    CHECK_MESSAGE(has(msg, "the cast at test_compile_contract.cpp:"), msg);
  }
  // A broadcast: the result is larger than the argument.
  {
    auto f = aj::compile([](Array b, const Array& m) { return m + b; }, aj::CompileOptions{.in_place = {0}});
    (void)f(random_f32({4}, 9), x);
    const std::string msg = error_of([&] { (void)f(random_f32({4}, 10), x); });
    CHECK_MESSAGE(has(msg, "the add at test_compile_contract.cpp:"), msg);
  }
  // A transposed read.
  {
    auto f = aj::compile([](Array w) { return w.T() * 3; }, aj::CompileOptions{.in_place = {0}});
    (void)f(random_f32({4, 4}, 11));
    const std::string msg = error_of([&] { (void)f(random_f32({4, 4}, 12)); });
    CHECK_MESSAGE(has(msg, "reads it at another index or layout than it writes"), msg);
  }
  // A library op that writes a new buffer.
  {
    auto f = aj::compile([](Array a, const Array& b) { return aj::matmul(a, b); }, aj::CompileOptions{.in_place = {0}});
    (void)f(random_f32({4, 4}, 13), x);
    const std::string msg = error_of([&] { (void)f(random_f32({4, 4}, 14), x); });
    CHECK_MESSAGE(has(msg, "it is read by the library step matmul at test_compile_contract.cpp:"), msg);
    CHECK_MESSAGE(has(msg, "which writes a new buffer"), msg);
  }
  // Borrowed memory is never written.
  {
    std::vector<float> mine(16, 1.0f);
    auto f = aj::compile([](Array w) { return w + 1; }, aj::CompileOptions{.in_place = {0}});
    (void)f(aj::borrow(mine.data(), {16}));
    const std::string msg = error_of([&] { (void)f(aj::borrow(mine.data(), {16})); });
    CHECK_MESSAGE(has(msg, "borrowed memory (never written)"), msg);
    CHECK(mine[0] == 1.0f);
  }
  // Bad options.
  CHECK(has(error_of([] { (void)aj::compile([](Array w) { return w; }, aj::CompileOptions{.in_place = {-1}}); }),
            "in_place names argument -1"));
  CHECK(has(error_of([] { (void)aj::compile([](Array w) { return w; }, aj::CompileOptions{.max_allocations = -2}); }),
            "max_allocations -2"));
  auto two = aj::compile([](Array w, double s) { return w * s; }, aj::CompileOptions{.in_place = {1}});
  CHECK(has(error_of([&] { (void)two(random_f32({4}, 15), 2.0); }), "in_place names argument 1, a scalar"));
  auto one = aj::compile([](Array w) { return w * 2; }, aj::CompileOptions{.in_place = {3}});
  CHECK(has(error_of([&] { (void)one(random_f32({4}, 16)); }), "in_place names argument 3; the function compiled at"));
}

TEST_CASE("compile contract: a replay over max_allocations stops at the allocation, naming the step") {
  auto f = aj::compile([](const Array& x) { return aj::exp(x) * 2; }, aj::CompileOptions{.max_allocations = 0});
  const Array x = random_f32({1000}, 17);
  aj::trim_memory();  // the pool holds no free buffer
  Array r1 = f(x);    // warm-up: traced (its buffer from the system)
  const aj::Stats before = aj::stats();
  const std::string msg = error_of([&] { (void)f(x); });  // r1 still holds that buffer
  CHECK_MESSAGE(has(msg, "would take a buffer of "), msg);
  CHECK_MESSAGE(has(msg, "bytes from the system at step 0, the mul at test_compile_contract.cpp:"), msg);
  CHECK_MESSAGE(has(msg, "over its max_allocations = 0"), msg);
  CHECK(aj::stats().system_allocs == before.system_allocs);  // refused before it was made
  const std::vector<float> want = r1.to_vector<float>();
  r1 = Array();  // its buffer goes back to the pool
  Array r2 = f(x);
  CHECK(r2.to_vector<float>() == want);
  CHECK(aj::stats().system_allocs == before.system_allocs);
  // A limit of 1 lets one buffer through per call.
  auto g = aj::compile([](const Array& x) { return aj::exp(x) * 2; }, aj::CompileOptions{.max_allocations = 1});
  aj::trim_memory();
  Array a = g(x), b = g(x);
  CHECK(b.to_vector<float>() == want);
}

namespace {
// outputs[0] = inputs[0] - inputs[1] * 0.5, through the C API.
aj_status c_sgd(void*, const aj_array* in, aj_array* out) {
  aj_array half{}, step{};
  if (aj_scalar_f64(0.5, &half) != AJ_OK) return AJ_ERROR_USER;
  if (aj_multiply(in[1], half, &step) != AJ_OK) return AJ_ERROR_USER;
  return aj_subtract(in[0], step, &out[0]);
}
}  // namespace

TEST_CASE("compile contract: the C API's aj_function_desc asks for it too") {
  const std::int32_t in_place[] = {0};
  aj_function_desc d{};
  d.struct_size = sizeof d;
  d.trace = c_sgd;
  d.n_inputs = 2;
  d.n_outputs = 1;
  d.name = "sgd";
  d.check_allocations = 1;
  d.max_allocations = 0;
  d.in_place = in_place;
  d.n_in_place = 1;
  aj_function f{};
  REQUIRE(aj_function_new(&d, &f) == AJ_OK);
  std::vector<float> wv(32, 1.0f), gv(32, 2.0f);
  const std::int64_t shape[] = {32};
  aj_array w{}, g{};
  REQUIRE(aj_array_from_data(wv.data(), AJ_F32, shape, 1, &w) == AJ_OK);
  REQUIRE(aj_array_from_data(gv.data(), AJ_F32, shape, 1, &g) == AJ_OK);
  const int donate[] = {1, 0};
  for (int i = 0; i < 4; ++i) {
    aj_array in[] = {w, g}, out[1] = {};
    REQUIRE_MESSAGE(aj_function_call_donate(f, in, donate, out) == AJ_OK, aj_last_error());
    CHECK(AJ_IS_NULL(in[0]));  // taken
    w = out[0];
  }
  std::vector<float> got(32);
  REQUIRE(aj_array_read(w, AJ_F32, got.data(), got.size() * sizeof(float), nullptr) == AJ_OK);
  CHECK(got == std::vector<float>(32, 1.0f - 4 * 1.0f));
  // A second handle to w: refused before the call runs; nothing consumed.
  aj_array keep{};
  REQUIRE(aj_array_retain(w, &keep) == AJ_OK);
  {
    aj_array in[] = {w, g}, out[1] = {};
    CHECK(aj_function_call_donate(f, in, donate, out) == AJ_ERROR_USER);
    CHECK_MESSAGE(has(aj_last_error(), "in_place: argument 0 (f32[32]"), aj_last_error());
    CHECK(has(aj_last_error(), "another handle to it is still alive"));
    CHECK_FALSE(AJ_IS_NULL(in[0]));  // not consumed
    CHECK(AJ_IS_NULL(out[0]));
  }
  CHECK(aj_array_release(keep) == AJ_OK);
  // Bad contracts are refused when the function is made.
  const std::int32_t bad[] = {5};
  d.in_place = bad;
  aj_function f2{};
  CHECK(aj_function_new(&d, &f2) == AJ_ERROR_USER);
  CHECK(has(aj_last_error(), "in_place[0] is 5; the function has 2 inputs"));
  aj_array_release(w);
  aj_array_release(g);
  aj_function_release(f);
}

TEST_CASE("compile contract: a fused Adam update writes w, m and v each in place of its own old value") {
  // The gradient is a matrix-vector product (read through a reshape) and
  // feeds all three outputs; m feeds m' and w', v feeds v' and w'. Chosen
  // in input order, v' took g's buffer and w' took v's (w not in place).
  const Array X = random_f32({64, 8}, 20), y = random_f32({64}, 21);
  auto step = aj::compile(
      [&](Array w, Array m, Array v, double c1, double c2) {
        const Array g = aj::matmul(X.T(), aj::matmul(X, w) - y) * (2.0 / 64);
        m = 0.9f * m + 0.1f * g;
        v = 0.999f * v + 0.001f * g * g;
        w = w - 0.05f * (m / c1) / (aj::sqrt(v / c2) + 1e-8f);
        return std::vector<Array>{w, m, v};
      },
      aj::CompileOptions{.max_allocations = 0, .in_place = {0, 1, 2}});
  Array w = random_f32({8}, 22), m = aj::zeros({8}), v = aj::zeros({8});
  for (int t = 1; t <= 6; ++t) {
    auto out = step(std::move(w), std::move(m), std::move(v), 1 - std::pow(0.9, t), 1 - std::pow(0.999, t));
    w = std::move(out[0]), m = std::move(out[1]), v = std::move(out[2]);
  }
  CHECK(step.counts().replays >= 3);
  CHECK(std::isfinite(aj::sum(w).item<float>()));
}

// Memory lent for writing (aj::lend, aj_array_lend): a donated lent array, or
// a lent temporary nothing else holds, has its result written into the
// caller's memory in place; borrowed memory never is, and neither is lent
// memory an array still holds.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <vector>

#include "tests/random_data.hpp"

namespace {

using aj::Array;

std::vector<float> random_floats(std::size_t n, unsigned seed) { return ajtest::random_in<float>(n, seed, -2.0, 2.0); }

const void* data_of(const Array& a) { return a.data().ptr; }

}  // namespace

TEST_CASE("lend: a compiled step writes its donated lent weights in place, step after step, with no allocation") {
  const std::size_t n = 4099;
  std::vector<float> w = random_floats(n, 1), m(n, 0.f);
  const std::vector<float> w0 = w;
  auto step = aj::compile([](Array w, Array m, const Array& g, float lr) {
    Array m2 = m * 0.9f + g;
    return std::vector<Array>{w - lr * m2, m2};
  });
  std::vector<float> want_w = w, want_m = m;
  for (int t = 0; t < 5; ++t) {
    CAPTURE(t);
    const std::vector<float> g = random_floats(n, 10 + t);
    const float lr = 0.01f * static_cast<float>(t + 1);
    for (std::size_t i = 0; i < n; ++i) {
      want_m[i] = want_m[i] * 0.9f + g[i];
      want_w[i] = want_w[i] - lr * want_m[i];
    }
    const auto before = aj::stats();
    const std::vector<Array> out =
        step(aj::donate(aj::lend(w.data(), {static_cast<std::int64_t>(n)})),
             aj::donate(aj::lend(m.data(), {static_cast<std::int64_t>(n)})), aj::from_vector(g), lr);
    CHECK(data_of(out[0]) == w.data());  // the results are the caller's memory
    CHECK(data_of(out[1]) == m.data());
    if (t >= 2) CHECK(aj::stats().system_allocs == before.system_allocs);
    CHECK(w == want_w);  // read through the caller's own pointer
    CHECK(m == want_m);
  }
  CHECK(w != w0);
}

TEST_CASE("lend: eager evaluation writes a lent temporary in place; a held lent array and borrowed memory stay") {
  std::vector<float> v = random_floats(1000, 2);
  const std::vector<float> v0 = v;
  {
    Array a = aj::lend(v.data(), {1000});
    Array r = aj::exp(a) * 2.f;  // `a` still held: its memory is not written
    r.eval();
    CHECK(v == v0);
    CHECK(data_of(r) != v.data());
    a = Array();
    Array r2 = aj::exp(aj::lend(v.data(), {1000})) * 2.f;  // a temporary: the lent memory is the result's
    r2.eval();
    CHECK(data_of(r2) == v.data());
    CHECK(r2.to_vector<float>() == r.to_vector<float>());
    CHECK(v == r.to_vector<float>());
  }
  std::vector<float> b = v0;
  {
    Array a = aj::borrow(b.data(), {1000});
    Array r = aj::exp(std::move(a)) * 2.f;  // borrowed: never written
    r.eval();
    CHECK(data_of(r) != b.data());
  }
  CHECK(b == v0);
  // A lent array is read like a borrowed one; a wrong layout is an error.
  std::vector<std::int32_t> k = {1, 2, 3, 4, 5, 6};
  CHECK(aj::sum(aj::lend(k.data(), {2, 3})).item<std::int64_t>() == 21);
  CHECK_THROWS_AS((void)aj::lend<float>(nullptr, {3}), aj::Error);
}

TEST_CASE("lend: the C API's aj_array_lend, donated to an aj_function, is updated in place and released once") {
  std::vector<double> w = {1, 2, 3, 4};
  int released = 0;
  const std::int64_t shape[1] = {4};
  aj_array lent{0};
  REQUIRE(aj_array_lend(w.data(), AJ_F64, shape, 1, [](void* c) { ++*static_cast<int*>(c); }, &released, &lent) ==
          AJ_OK);
  aj_function_desc d{};
  d.struct_size = sizeof d;
  d.n_inputs = 1;
  d.n_outputs = 1;
  d.trace = [](void*, const aj_array* in, aj_array* out) { return aj_multiply(in[0], in[0], out); };
  aj_function f{0};
  REQUIRE(aj_function_new(&d, &f) == AJ_OK);
  aj_array ins[1] = {lent}, outs[1] = {{0}};
  const int donate[1] = {1};
  REQUIRE(aj_function_call_donate(f, ins, donate, outs) == AJ_OK);
  CHECK(ins[0]._id == 0);  // consumed
  CHECK(w == std::vector<double>{1, 4, 9, 16});
  CHECK(released == 0);  // the result still lives in it
  CHECK(aj_array_release(outs[0]) == AJ_OK);
  CHECK(released == 1);
  CHECK(aj_function_release(f) == AJ_OK);
}

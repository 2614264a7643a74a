// What the C API's handles cost on top of the C++ API: the 10-op chain of
// dispatch_plan (1,000 f32, trace + plan cache hit + run) written with C
// handles, against the same chain in C++ measured in the same run, and as an
// aj_function (traced every call until aj::compile lands). Medians of this
// thread's CPU time, us per call.
//
//   build/bench/c_api_dispatch [calls]
#include <arrayjit/arrayjit.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

aj_array g_scalars[6];  // 1.5, 2, 1, 0.25, 3: weak scalars made once

// y = chain(x) with C handles, each intermediate released as the C++ chain's
// temporaries are.
aj_status c_chain(aj_array x, aj_array* out) {
  aj_array y{0}, t{0};
  aj_status s = aj_multiply(x, g_scalars[0], &y);
  auto step = [&](auto op, auto... args) {
    if (s != AJ_OK) return;
    s = op(y, args..., &t);
    aj_array_release(y);
    y = t;
  };
  step(aj_add, g_scalars[1]);
  step(aj_abs);
  step(aj_subtract, g_scalars[2]);
  step(aj_sqrt);
  step(aj_multiply, y);
  step(aj_maximum, g_scalars[3]);
  step(aj_divide, g_scalars[4]);
  step(aj_exp);
  step(aj_add, x);
  *out = y;
  return s;
}

aj_status chain_trace(void*, const aj_array* in, aj_array* out) { return c_chain(in[0], out); }

void ok(aj_status s) {
  if (s != AJ_OK) {
    std::fprintf(stderr, "c_api_dispatch: %s\n", aj_last_error());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::printf("arrayjit %s: the 10-op f32 chain on 1,000 elements, us per call (median of 9 runs)\n", aj_version());
  std::vector<float> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 17) * 0.25f;
  aj::Array x = aj::from_vector(data);
  x.eval();
  const double values[5] = {1.5, 2.0, 1.0, 0.25, 3.0};
  for (int i = 0; i < 5; ++i) ok(aj_scalar_f64(values[i], &g_scalars[i]));
  const std::int64_t n = 1000;
  aj_array cx{0};
  ok(aj_array_from_data(data.data(), AJ_F32, &n, 1, &cx));
  ok(aj_eval(cx));

  const double cpp = ajbench::median_us([&] { ajbench::chain(x).eval(); }, calls);
  const double c = ajbench::median_us([&] {
    aj_array y{0};
    ok(c_chain(cx, &y));
    ok(aj_eval(y));
    aj_array_release(y);
  }, calls);
  aj_function_desc d{};
  d.struct_size = sizeof d;
  d.trace = chain_trace;
  d.n_inputs = d.n_outputs = 1;
  aj_function f{0};
  ok(aj_function_new(&d, &f));
  const double fn = ajbench::median_us([&] {
    aj_array y{0};
    ok(aj_function_call(f, &cx, &y));
    aj_array_release(y);
  }, calls);
  const double handle = ajbench::median_us([&] {
    aj_array h{0};
    ok(aj_array_retain(cx, &h));
    ok(aj_array_release(h));
  }, calls * 10);

  std::printf("  C++ API                          %8.2f\n", cpp);
  std::printf("  C API, handles                   %8.2f   (%.2fx the C++ call)\n", c, c / cpp);
  std::printf("  C API, aj_function_call          %8.2f   (%.2fx)\n", fn, fn / cpp);
  std::printf("  one handle made and released     %8.3f\n", handle);
  ok(aj_function_release(f));
  ok(aj_array_release(cx));
  for (int i = 0; i < 5; ++i) ok(aj_array_release(g_scalars[i]));
  return 0;
}

// The C API's facilities (C API 1.2: inspection, the JIT's and the memory
// cache's switches, print options, counters, the indexing ops' debug checks)
// against the C++ functions they wrap, and their error paths.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include "tests/random_data.hpp"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The text a C function gives, read with snprintf's rule: the length first
// (NULL buffer, capacity 0), then the whole text.
template <class Call>
std::string text_of(Call&& call) {
  size_t len = 12345;
  REQUIRE(call(static_cast<char*>(nullptr), size_t{0}, &len) == AJ_OK);
  std::string buf(len + 1, '?');
  size_t len2 = 0;
  REQUIRE(call(buf.data(), buf.size(), &len2) == AJ_OK);
  CHECK(len2 == len);
  CHECK(buf[len] == '\0');
  buf.resize(len);
  return buf;
}

bool error_says(const char* fn, const char* what) {
  const std::string e = aj_last_error();
  return e.rfind(std::string(fn) + ": ", 0) == 0 && e.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("c api: explain, to_dot, kernel_ir and the log channels give what C++ does") {
  const aj::Array x = aj::from_vector<float>({1, 2, 3, 4});
  const aj::Array y = aj::exp(x) * 2.0f + 1.0f;
  const aj::Array z = aj::sum(y);
  aj_array hs[2] = {aj::to_c(y), aj::to_c(z)};
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_explain(hs, 2, b, c, l); }) == aj::explain({y, z}));
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_to_dot(hs, 2, 1, b, c, l); }) == aj::to_dot({y, z}));
  aj::DotOptions graph;
  graph.plan = false;
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_to_dot(hs, 1, 0, b, c, l); }) ==
        aj::to_dot({y}, graph));
  const std::string ir = text_of([&](char* b, size_t c, size_t* l) { return aj_jit_kernel_ir(hs[0], 0, b, c, l); });
  CHECK(ir == aj::jit::kernel_ir(y));
  CHECK(ir.find("define") != std::string::npos);
  // A short buffer gets the start of the text and its terminator.
  char small[8];
  size_t len = 0;
  REQUIRE(aj_explain(hs, 2, small, sizeof small, &len) == AJ_OK);
  CHECK(len > sizeof small);
  CHECK(std::string(small) == aj::explain({y, z}).substr(0, 7));

  CHECK(aj_explain(nullptr, 1, nullptr, 0, nullptr) == AJ_ERROR_USER);
  CHECK(error_says("aj_explain", "null array list"));
  CHECK(aj_explain(hs, 2, nullptr, 4, nullptr) == AJ_ERROR_USER);
  CHECK(error_says("aj_explain", "null buffer"));
  const aj_array dead[1] = {{12345}};
  CHECK(aj_to_dot(dead, 1, 1, nullptr, 0, nullptr) == AJ_ERROR_HANDLE);
  CHECK(aj_jit_kernel_ir(aj_array{0}, 0, nullptr, 0, nullptr) == AJ_ERROR_HANDLE);
  CHECK(std::string(aj_last_error()).rfind("aj_jit_kernel_ir: ", 0) == 0);

  CHECK(aj_set_log("plan") == AJ_OK);
  CHECK(aj_set_log("") == AJ_OK);
  CHECK(aj_set_log(nullptr) == AJ_ERROR_USER);
  CHECK(std::string(aj_llvm_version()) == aj::llvm_version());
  for (aj_array h : hs) CHECK(aj_array_release(h) == AJ_OK);
}

TEST_CASE("c api: the JIT's switches, the memory cache and the debug checks are the C++ API's") {
  const bool enabled = aj::jit::enabled();
  aj_jit_set_enabled(0);
  CHECK(!aj::jit::enabled());
  CHECK(aj_jit_enabled() == 0);
  aj_jit_set_enabled(1);
  CHECK(aj::jit::enabled());
  CHECK(aj_jit_enabled() == 1);
  aj::jit::set_enabled(enabled);

  const int threads = aj::jit::num_threads();
  CHECK(aj_jit_num_threads() == threads);
  CHECK(aj_jit_set_num_threads(3) == AJ_OK);
  CHECK(aj::jit::num_threads() == 3);
  CHECK(aj_jit_num_threads() == 3);
  CHECK(aj_jit_set_num_threads(-1) == AJ_ERROR_USER);
  CHECK(error_says("aj_jit_set_num_threads", "negative thread count -1"));
  CHECK(aj::jit::num_threads() == 3);  // unchanged
  aj::jit::set_num_threads(threads);

  const std::string dir = aj::jit::cache_dir();
  CHECK(text_of([](char* b, size_t c, size_t* l) { return aj_jit_cache_dir(b, c, l); }) == dir);
  CHECK(aj_jit_set_cache_dir("") == AJ_OK);
  CHECK(aj::jit::cache_dir().empty());
  CHECK(aj_jit_set_cache_dir(nullptr) == AJ_ERROR_USER);
  CHECK(error_says("aj_jit_set_cache_dir", "null directory"));
  aj::jit::set_cache_dir(dir);
  CHECK(aj_jit_clear_memory_cache() == AJ_OK);

  const aj::jit::Tiers tiers = aj::jit::tiers();
  CHECK(aj_jit_set_tiers(AJ_TIERS_QUICK) == AJ_OK);
  CHECK(aj::jit::tiers() == aj::jit::Tiers::quick);
  CHECK(aj_jit_tiers() == AJ_TIERS_QUICK);
  CHECK(aj_jit_set_tiers(AJ_TIERS_FULL) == AJ_OK);
  CHECK(aj::jit::tiers() == aj::jit::Tiers::full);
  CHECK(aj_jit_set_tiers(7) == AJ_ERROR_USER);
  CHECK(error_says("aj_jit_set_tiers", "tiers 7: use AJ_TIERS_AUTOMATIC"));
  CHECK(aj_jit_tiers() == AJ_TIERS_FULL);  // unchanged
  CHECK(aj_jit_set_tiers(AJ_TIERS_AUTOMATIC) == AJ_OK);
  CHECK(aj::jit::tiers() == aj::jit::Tiers::automatic);
  if (aj::jit::enabled()) {
    // The 128th launch of a small kernel queues its full compile; the C
    // call waits for it (no disk cache: a full entry there would serve it).
    aj::jit::set_cache_dir("");
    aj::jit::clear_memory_cache();
    const aj::Array x = aj::from_vector(ajtest::random_in<float>(1000, 11, -1.0f, 1.0f));
    const std::uint64_t before = aj::stats().kernels_tiered_up;
    for (int i = 0; i < 128; ++i) (aj::sinh(x * 0.3f) + x).eval();
    CHECK(aj_jit_finish_tier_ups() == AJ_OK);
    CHECK(aj::stats().kernels_tiered_up == before + 1);
    aj::jit::set_cache_dir(dir);
  }
  aj::jit::set_tiers(tiers);

  const size_t limit = aj::memory_limit();
  CHECK(aj_memory_limit() == limit);
  CHECK(aj_set_memory_limit(size_t{1} << 20) == AJ_OK);
  CHECK(aj::memory_limit() == size_t{1} << 20);
  CHECK(aj_memory_limit() == size_t{1} << 20);
  CHECK(aj_cached_bytes() == aj::cached_bytes());
  CHECK(aj_trim_memory() == AJ_OK);
  CHECK(aj_cached_bytes() == 0);
  aj::set_memory_limit(limit);

  const bool debug = aj::debug();
  aj_set_debug(1);
  CHECK(aj::debug());
  CHECK(aj_debug() == 1);
  {
    // With the checks on, an out-of-range index is an error when traced.
    aj_array x = aj::to_c(aj::from_vector<float>({1, 2, 3})), i = aj::to_c(aj::from_vector<std::int64_t>({5}));
    aj_array out{1};
    CHECK(aj_take(x, i, nullptr, &out) == AJ_ERROR_USER);
    CHECK(out._id == 0);
    CHECK(std::string(aj_last_error()).rfind("aj_take: ", 0) == 0);
    aj_set_debug(0);
    CHECK(aj_debug() == 0);
    CHECK(aj_take(x, i, nullptr, &out) == AJ_OK);  // clamped, as documented
    for (aj_array h : {x, i, out}) CHECK(aj_array_release(h) == AJ_OK);
  }
  aj::set_debug(debug);
}

TEST_CASE("c api: print options and counters read and set what C++ does") {
  const aj::PrintOptions saved = aj::printoptions();
  aj_print_options o{};
  o.struct_size = sizeof o;
  REQUIRE(aj_printoptions(&o) == AJ_OK);
  CHECK(o.precision == saved.precision);
  CHECK(o.threshold == saved.threshold);
  CHECK(o.edgeitems == saved.edgeitems);
  CHECK(o.linewidth == saved.linewidth);
  CHECK((o.suppress != 0) == saved.suppress);
  o.precision = 3;
  o.suppress = 1;
  REQUIRE(aj_set_printoptions(&o) == AJ_OK);
  CHECK(aj::printoptions().precision == 3);
  CHECK(aj::printoptions().suppress);
  const aj::Array x = aj::from_vector<double>({1.0 / 3, 2.5e-9});
  aj_array hx = aj::to_c(x);
  const std::string c_text = text_of([&](char* b, size_t c, size_t* l) { return aj_array_to_string(hx, b, c, l); });
  std::ostringstream cpp_text;
  cpp_text << x;
  CHECK(c_text == cpp_text.str());
  CHECK(c_text.find("0.333") != std::string::npos);
  CHECK(c_text.find("0.3333") == std::string::npos);
  CHECK(aj_array_release(hx) == AJ_OK);
  o.linewidth = 0;
  CHECK(aj_set_printoptions(&o) == AJ_ERROR_USER);
  CHECK(error_says("aj_set_printoptions", "linewidth must be >= 1"));
  CHECK(aj::printoptions().precision == 3);  // unchanged
  o.linewidth = 75;
  o.struct_size = sizeof(size_t);
  CHECK(aj_set_printoptions(&o) == AJ_ERROR_USER);
  CHECK(error_says("aj_set_printoptions", "struct_size"));
  CHECK(aj_printoptions(nullptr) == AJ_ERROR_USER);
  aj::set_printoptions(saved);

  aj_reset_stats();
  const aj::Array y = aj::from_vector<float>({1, 2}) * 3.0f;
  y.eval();
  aj_stats_counts s{};
  s.struct_size = sizeof s;
  REQUIRE(aj_stats(&s) == AJ_OK);
  const aj::Stats want = aj::stats();
  CHECK(s.evals >= 1);
  CHECK(s.evals == want.evals);
  CHECK(s.kernels_launched == want.kernels_launched);
  CHECK(s.nodes_created == want.nodes_created);
  CHECK(s.plans_built + s.plan_cache_hits == want.plans_built + want.plan_cache_hits);
  CHECK(s.compiled_unplanned == want.compiled_unplanned);  // the last field
  aj_reset_stats();
  REQUIRE(aj_stats(&s) == AJ_OK);
  CHECK(s.evals == 0);
  s.struct_size = 8;
  CHECK(aj_stats(&s) == AJ_ERROR_USER);
  CHECK(error_says("aj_stats", "struct_size is 8"));
  CHECK(aj_stats(nullptr) == AJ_ERROR_USER);
}

TEST_CASE("c api: what CUDA there is, its kernels' source, and einsum's order, as C++ gives them") {
  CHECK(aj_cuda_available() == (aj::cuda::available() ? 1 : 0));
  CHECK(aj_cuda_device_count() == aj::cuda::device_count());
  CHECK(aj_cuda_compiler_available() == (aj::cuda::compiler_available() ? 1 : 0));
  CHECK(text_of([](char* b, size_t c, size_t* l) { return aj_cuda_unavailable_reason(b, c, l); }) ==
        aj::cuda::unavailable_reason());
  CHECK(text_of([](char* b, size_t c, size_t* l) { return aj_cuda_compiler_reason(b, c, l); }) ==
        aj::cuda::compiler_reason());
  const aj::Array x = aj::from_vector<float>({1, 2, 3, 4});
  const aj::Array y = aj::exp(x) * 2.0f + aj::sum(x);
  aj_array h = aj::to_c(y);
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_cuda_kernel_source(&h, 1, b, c, l); }) ==
        aj::cuda::kernel_source({y}));
  CHECK(aj_cuda_kernel_source(&h, 0, nullptr, 0, nullptr) == AJ_ERROR_USER);
  aj_array_release(h);
  // Without a device these fail as C++ does (a runtime error), else succeed.
  bool cpp_ok = true;
  try {
    aj::cuda::trim_memory(0);
  } catch (const aj::Error&) {
    cpp_ok = false;
  }
  CHECK((aj_cuda_trim_memory(0) == AJ_OK) == cpp_ok);
  CHECK(aj_cuda_release_borrowed(1) == AJ_OK);

  const int64_t a[] = {2, 3}, b[] = {3, 4}, c[] = {4, 5};
  const int64_t* shapes[] = {a, b, c};
  const int32_t ndims[] = {2, 2, 2};
  int32_t steps[4] = {-1, -1, -1, -1};
  const std::string report = text_of([&](char* buf, size_t cap, size_t* l) {
    return aj_einsum_path("ij,jk,kl->il", shapes, ndims, 3, steps, buf, cap, l);
  });
  const aj::EinsumPath want = aj::einsum_path("ij,jk,kl->il", {aj::Shape{2, 3}, aj::Shape{3, 4}, aj::Shape{4, 5}});
  CHECK(report == want.str());
  REQUIRE(want.steps.size() == 2);
  for (int k = 0; k < 2; ++k) {
    CHECK(steps[2 * k] == want.steps[static_cast<std::size_t>(k)].first);
    CHECK(steps[2 * k + 1] == want.steps[static_cast<std::size_t>(k)].second);
  }
  CHECK(aj_einsum_path("ij,jk->ik", shapes, ndims, 3, nullptr, nullptr, 0, nullptr) == AJ_ERROR_USER);
  CHECK(aj_einsum_path(nullptr, shapes, ndims, 2, nullptr, nullptr, 0, nullptr) == AJ_ERROR_USER);
}

TEST_CASE("c api 1.6: the caller's line (aj_set_caller) in errors, dumps and explain; C++ ops keep their own") {
  aj_array x{0}, y{0}, bad{0};
  const int64_t s3[] = {3}, s4[] = {4};
  REQUIRE(aj_ones(s3, 1, AJ_F32, &x) == AJ_OK);
  REQUIRE(aj_ones(s4, 1, AJ_F32, &y) == AJ_OK);
  aj_set_caller("/home/u/model.py", 12);
  CHECK(aj_add(x, y, &bad) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("(at model.py:12)") != std::string::npos);
  aj_array e{0};
  aj_set_caller("train.py", 40);
  REQUIRE(aj_exp(x, &e) == AJ_OK);
  aj_set_caller("train.py", 41);  // a later call's line does not rename what was made before
  const std::string ex = text_of([&](char* b, size_t c, size_t* l) { return aj_explain(&e, 1, b, c, l); });
  CHECK(ex.find("train.py:40") == std::string::npos);  // nothing held: explain names no made-at line here
  const std::string dump = text_of([&](char* b, size_t c, size_t* l) { return aj_array_dump(e, b, c, l); });
  CHECK(!dump.empty());
  // C++ ops on this thread are not renamed by it: their errors name their own line.
  try {
    (void)(aj::ones({3}) + aj::ones({4}));
    FAIL("no error");
  } catch (const aj::Error& err) {
    CHECK(std::string(err.what()).find("train.py") == std::string::npos);
    CHECK(std::string(err.what()).find("test_c_api_facilities.cpp") != std::string::npos);
  }
  aj_set_caller(nullptr, 0);
  CHECK(aj_add(x, y, &bad) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("(at ") == std::string::npos);  // no line: the boundary's own are dropped
  // An evaluation error names the line the failing op was made at: a host
  // callback that fails, made at "cb.py":7 and evaluated from another line.
  struct Fail {
    static aj_status fn(void*, const aj_view*, int32_t, const aj_view*, int32_t) {
      aj_set_error("no luck");
      return AJ_ERROR_USER;
    }
  };
  aj_host_callback_desc d{};
  d.struct_size = sizeof d;
  d.fn = &Fail::fn;
  d.name = "flaky";
  const int64_t* shapes[] = {s3};
  const int32_t ndims[] = {1};
  aj_array r{0};
  aj_set_caller("cb.py", 7);
  REQUIRE(aj_host_callback(&d, AJ_F32, shapes, ndims, 1, &x, 1, &r) == AJ_OK);
  aj_set_caller("main.py", 99);
  CHECK(aj_eval(r) != AJ_OK);
  CHECK(std::string(aj_last_error()).find("cb.py:7") != std::string::npos);
  aj_set_caller(nullptr, 0);
  for (aj_array h : {x, y, e, r}) CHECK(aj_array_release(h) == AJ_OK);
}

TEST_CASE("c api 1.6: aj_array_format's three styles and aj_op_names' lists") {
  const aj::Array a = aj::from_vector<float>({0.5f, 2.0f, -1.0f});
  const aj_array h = aj::to_c(a);
  std::ostringstream cpp;
  cpp << a;
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_array_format(h, AJ_FORMAT_REPR, b, c, l); }) == cpp.str());
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_array_format(h, AJ_FORMAT_STR, b, c, l); }) ==
        aj::array2string(a));
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_array_format(h, AJ_FORMAT_NUMPY_REPR, b, c, l); }) ==
        "array([ 0.5,  2. , -1. ], dtype=float32)");
  const aj_array d = aj::to_c(aj::from_vector<double>({1.0, 2.5}));
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_array_format(d, AJ_FORMAT_NUMPY_REPR, b, c, l); }) ==
        "array([1. , 2.5])");  // float64 is implied, as NumPy's
  const aj_array empty = aj::to_c(aj::zeros({2, 0}, aj::DType::i32));
  CHECK(text_of([&](char* b, size_t c, size_t* l) { return aj_array_format(empty, AJ_FORMAT_NUMPY_REPR, b, c, l); }) ==
        "array([], shape=(2, 0), dtype=int32)");
  CHECK(aj_array_format(h, 3, nullptr, 0, nullptr) == AJ_ERROR_USER);
  CHECK(error_says("aj_array_format", "not an aj_format_style"));
  for (aj_array x : {h, d, empty}) CHECK(aj_array_release(x) == AJ_OK);

  // The lists name the functions the header declares from them.
  auto names = [](aj_op_list l) {
    std::vector<std::string> v;
    std::istringstream is(aj_op_names(l));
    for (std::string w; is >> w;) v.push_back(w);
    return v;
  };
  std::vector<std::string> expected_unary, expected_binary, expected_reduce, expected_product;
#define AJ_U_(n) expected_unary.push_back(#n);
#define AJ_B_(n) expected_binary.push_back(#n);
#define AJ_R_(n) expected_reduce.push_back(#n);
#define AJ_P_(n) expected_product.push_back(#n);
  AJ_UNARY_OPS(AJ_U_)
  AJ_BINARY_OPS(AJ_B_)
  AJ_REDUCE_OPS(AJ_R_)
  AJ_PRODUCT_OPS(AJ_P_)
#undef AJ_U_
#undef AJ_B_
#undef AJ_R_
#undef AJ_P_
  CHECK(names(AJ_OPS_UNARY) == expected_unary);
  CHECK(names(AJ_OPS_BINARY) == expected_binary);
  CHECK(names(AJ_OPS_TERNARY) == std::vector<std::string>{"where", "clip"});
  CHECK(names(AJ_OPS_REDUCE) == expected_reduce);
  CHECK(names(AJ_OPS_PRODUCT) == expected_product);
  CHECK(expected_unary.size() > 50);
  CHECK(aj_op_names(5) == nullptr);
  CHECK(aj_op_names(-1) == nullptr);
}

// The CPU's instruction-set level (base/cpu_level.hpp) and what follows from
// it: the JIT's features and the BLAS kernel (backends/cpu/blas.hpp). Run as
// part of the whole suite at the CPU's own level, and again by ctest with
// AJ_CPU_LEVEL=avx2 and =baseline (the entries cpu_level.*, CMakeLists.txt):
// the checks below hold at whatever level the process runs.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/blas.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "base/cpu_level.hpp"

namespace {

using aj::cpu::IsaLevel;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The naive product of row-major m x k and k x n, in double.
template <class T>
std::vector<double> naive(const std::vector<T>& a, const std::vector<T>& b, int m, int n, int k) {
  std::vector<double> c(static_cast<std::size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < k; ++p) c[i * n + j] += double(a[i * k + p]) * double(b[p * n + j]);
    }
  }
  return c;
}

template <class T>
void check_gemm(const aj::cpu::Blas& lib, std::mt19937_64& rng) {
  const int m = 37 + int(rng() % 40), n = 29 + int(rng() % 40), k = 41 + int(rng() % 60);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> a(m * k), b(k * n), c(m * n, T(7));
  for (T& x : a) x = T(u(rng));
  for (T& x : b) x = T(u(rng));
  if constexpr (sizeof(T) == 4) {
    lib.sgemm(101, 111, 111, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  } else {
    lib.dgemm(101, 111, 111, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, c.data(), n);
  }
  const std::vector<double> want = naive(a, b, m, n, k);
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += !(std::abs(double(c[i]) - want[i]) <= tol * k);
  CHECK(bad == 0);
}

}  // namespace

TEST_SUITE("host cpu") {

TEST_CASE("cpu level: names parse and print, the detected level is the CPU's") {
  for (IsaLevel l : {IsaLevel::baseline, IsaLevel::avx, IsaLevel::avx2, IsaLevel::avx512}) {
    CHECK(aj::cpu::parse_level(aj::cpu::level_name(l)) == l);
  }
  CHECK_FALSE(aj::cpu::parse_level("AVX2").has_value());
  CHECK_FALSE(aj::cpu::parse_level("sse").has_value());
  CHECK_FALSE(aj::cpu::parse_level("").has_value());
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const IsaLevel d = aj::cpu::detected_level();
  CHECK((d == IsaLevel::avx512) == (avx512 && avx2));
  CHECK((d >= IsaLevel::avx2) == avx2);
  CHECK((d >= IsaLevel::avx) == bool(__builtin_cpu_supports("avx")));
  // The level in use is the CPU's, or the one AJ_CPU_LEVEL names.
  const char* env = std::getenv("AJ_CPU_LEVEL");
  if (env && *env) {
    CHECK(aj::cpu::level_forced());
    CHECK(std::string(aj::cpu::level_name(aj::cpu::level())) == env);
  } else {
    CHECK_FALSE(aj::cpu::level_forced());
    CHECK(aj::cpu::level() == d);
  }
  const std::string info = aj::jit::host_info();
  CHECK(has(info, std::string("level: ") + aj::cpu::level_name(aj::cpu::level())));
  CHECK(has(info, "matmul: OpenBLAS"));
  CHECK(has(info, "jit: LLVM"));
}

TEST_CASE("cpu level: the LLVM features above a level are switched off, last") {
  const std::string host = "+sse3,+ssse3,+sse4.2,+popcnt,+avx,+avx2,+fma,+f16c,+avx512f,+avx512bw,+avx512vl,"
                           "-avx512fp16,+bmi2,+avxvnni,+amx-tile,+aes";
  const std::string at512 = aj::cpu::cap_llvm_features(host, IsaLevel::avx512);
  CHECK(at512 == host);
  const std::string at2 = aj::cpu::cap_llvm_features(host, IsaLevel::avx2);
  CHECK(has(at2, "+avx2,+fma,+f16c"));
  CHECK_FALSE(has(at2, "+avx512"));
  CHECK_FALSE(has(at2, "+amx"));
  CHECK_FALSE(has(at2, "+avxvnni"));
  CHECK(at2.rfind("-avx512f") > at2.rfind('+'));  // after every "+" flag
  const std::string at1 = aj::cpu::cap_llvm_features(host, IsaLevel::avx);
  CHECK(has(at1, "+avx,"));
  CHECK_FALSE(has(at1, "+avx2"));
  CHECK_FALSE(has(at1, "+fma"));
  CHECK(has(at1, "-avx2"));
  const std::string at0 = aj::cpu::cap_llvm_features(host, IsaLevel::baseline);
  CHECK_FALSE(has(at0, "+avx"));
  CHECK_FALSE(has(at0, "+sse4"));
  CHECK_FALSE(has(at0, "+popcnt"));
  CHECK(has(at0, "-avx,"));
  CHECK(has(at0, "-sse3"));
  CHECK(has(at0, "+aes"));  // what no level names stays
  // A feature is on by its whole flag, the last one naming it.
  CHECK(aj::cpu::llvm_feature_on(host, "avx512f"));
  CHECK_FALSE(aj::cpu::llvm_feature_on("+avx512fp16,-avx512f", "avx512f"));
  CHECK_FALSE(aj::cpu::llvm_feature_on(at2, "avx512f"));
  CHECK(aj::cpu::llvm_feature_on(at2, "avx2"));
  CHECK_FALSE(aj::cpu::llvm_feature_on(host, "avx512fp16"));
  CHECK_FALSE(aj::cpu::llvm_feature_on(host, "avx51"));
}

TEST_CASE("cpu level: compiled kernels use no register wider than the level's") {
  auto x = aj::random::normal({4096});
  x.eval();  // (a generator fused in would be a call per element: no vectors)
  const std::string asm_text = aj::jit::kernel_ir(aj::exp(x) * 2.0f + x, true);
  REQUIRE(!asm_text.empty());
  const IsaLevel l = aj::cpu::level();
  if (l < IsaLevel::avx512) CHECK_FALSE(has(asm_text, "zmm"));
  if (l < IsaLevel::avx) {
    CHECK_FALSE(has(asm_text, "ymm"));
    CHECK_FALSE(has(asm_text, "vmov"));  // no VEX encoding at all
  }
  if (l < IsaLevel::avx2) CHECK_FALSE(has(asm_text, "vfmadd"));
  if (l >= IsaLevel::avx2) CHECK(has(asm_text, "ymm"));  // vectors as wide as the level's, at least 256 bits
  // At AVX-512 the loops prefer 512-bit vectors, whatever LLVM's tuning for
  // the CPU says (AJ_VECTOR_WIDTH=256 asks for 256).
  const char* width = std::getenv("AJ_VECTOR_WIDTH");
  const std::string want_width = width && *width ? width : "512";
  if (l == IsaLevel::avx512) {
    CHECK(has(aj::jit::host_info(), "vector width " + want_width));
    CHECK(has(asm_text, "zmm") == (want_width == "512"));
  } else {
    CHECK_FALSE(has(aj::jit::host_info(), "vector width"));
  }
  // ... and compute what the reference interpreter computes.
  auto y = aj::exp(x) * 2.0f + x;
  aj::jit::set_enabled(false);
  auto want = (aj::exp(x) * 2.0f + x).to_vector<float>();
  aj::jit::set_enabled(true);
  const auto got = y.to_vector<float>();
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) bad += !(std::abs(got[i] - want[i]) <= 4e-6f * (1 + std::abs(want[i])));
  CHECK(bad == 0);
}

TEST_CASE("cpu level: OpenBLAS cores are known by the level they are made for") {
  CHECK(aj::cpu::openblas_core_level("Cooperlake") == IsaLevel::avx512);
  CHECK(aj::cpu::openblas_core_level("SKYLAKEX") == IsaLevel::avx512);
  CHECK(aj::cpu::openblas_core_level("haswell") == IsaLevel::avx2);
  CHECK(aj::cpu::openblas_core_level("Zen") == IsaLevel::avx2);
  CHECK(aj::cpu::openblas_core_level("Sandybridge") == IsaLevel::avx);
  CHECK(aj::cpu::openblas_core_level("Prescott") == IsaLevel::baseline);
  CHECK_FALSE(aj::cpu::openblas_core_level("Zen7").has_value());
  for (IsaLevel l : {IsaLevel::baseline, IsaLevel::avx, IsaLevel::avx2, IsaLevel::avx512}) {
    CHECK(aj::cpu::openblas_core_level(aj::cpu::openblas_core_for(l)) == l);
  }
}

TEST_CASE("cpu level: the matmul's BLAS runs kernels made for the level, products right") {
  const aj::cpu::Blas& lib = aj::cpu::blas();
  const aj::cpu::Blas own = aj::cpu::process_openblas();
  CHECK(has(aj::jit::matmul_library(), "core " + lib.core));
  if (!has(own.config, "DYNAMIC_ARCH")) return;  // one core only: nothing to choose
  const auto own_level = aj::cpu::openblas_core_level(own.core);
  if (own_level || aj::cpu::level_forced()) {
    CHECK(aj::cpu::openblas_core_level(lib.core) == aj::cpu::level());
    CHECK(lib.private_copy == (own_level != aj::cpu::level()));
  }
  std::mt19937_64 rng(11);
  check_gemm<float>(lib, rng);
  check_gemm<double>(lib, rng);
  // And through aj::matmul, against the reference interpreter.
  auto a = aj::random::normal({70, 90}, 0.0, 1.0, aj::DType::f64), b = aj::random::normal({90, 50}, 0.0, 1.0, aj::DType::f64);
  const auto got = aj::matmul(a, b).to_vector<double>();
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  const std::vector<double> want = naive(av, bv, 70, 50, 90);
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += !(std::abs(got[i] - want[i]) <= 1e-12 * 90);
  CHECK(bad == 0);
}

TEST_CASE("cpu level: a private OpenBLAS copy leaves the process's copy and the environment alone") {
  const aj::cpu::Blas own = aj::cpu::process_openblas();
  if (!has(own.config, "DYNAMIC_ARCH")) return;
  // The core another level would run: private, whatever the process's is.
  const IsaLevel other = own.core == aj::cpu::openblas_core_for(IsaLevel::avx) ? IsaLevel::baseline : IsaLevel::avx;
  const char* core = aj::cpu::openblas_core_for(other);
  const char* old = std::getenv("OPENBLAS_CORETYPE");
  const std::string before = old ? old : "";
  setenv("OPENBLAS_CORETYPE", "Marker", 1);
  std::string why;
  const std::optional<aj::cpu::Blas> mine = aj::cpu::load_private_openblas(core, &why);
  CHECK(std::string(std::getenv("OPENBLAS_CORETYPE")) == "Marker");
  if (old) {
    setenv("OPENBLAS_CORETYPE", before.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  REQUIRE_MESSAGE(mine.has_value(), why);
  CHECK(mine->private_copy);
  CHECK(mine->core == core);
  CHECK(mine->get_num_threads() == 1);
  CHECK(aj::cpu::process_openblas().core == own.core);
  CHECK(reinterpret_cast<void*>(mine->sgemm) != reinterpret_cast<void*>(own.sgemm));
  std::mt19937_64 rng(5);
  check_gemm<float>(*mine, rng);
  check_gemm<double>(*mine, rng);
  check_gemm<float>(own, rng);
  // The fallback for processes where a new namespace cannot be made: the
  // file copied into memory, its own symbols first.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const std::optional<aj::cpu::Blas> mem = aj::cpu::load_private_openblas(core, &why, aj::cpu::PrivateLoad::in_memory);
  REQUIRE_MESSAGE(mem.has_value(), why);
  CHECK(mem->core == core);
  CHECK(reinterpret_cast<void*>(mem->sgemm) != reinterpret_cast<void*>(own.sgemm));
  CHECK(reinterpret_cast<void*>(mem->sgemm) != reinterpret_cast<void*>(mine->sgemm));
  CHECK(aj::cpu::process_openblas().core == own.core);
  check_gemm<float>(*mem, rng);
  check_gemm<double>(*mem, rng);
#endif
  // Loaded once per core: the second call is the same copy.
  const std::optional<aj::cpu::Blas> again = aj::cpu::load_private_openblas(core, &why);
  REQUIRE(again.has_value());
  CHECK(reinterpret_cast<void*>(again->sgemm) == reinterpret_cast<void*>(mine->sgemm));
}

}  // TEST_SUITE

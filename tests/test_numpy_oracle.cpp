// NumPy as an outside oracle: random programs (tests/numpy_program.hpp) run
// through arrayjit, once with the JIT and once with the kernel interpreter,
// and tests/numpy_oracle.py recomputes every step with NumPy. The programs
// stream into one python process (one per run, never one per program).
//
// 1,000 programs per executor in `./dev test`, 100,000 with AJ_TEST_LONG=1;
// AJ_ORACLE_PROGRAMS / AJ_ORACLE_SEED override the count and the first seed.
// Needs /usr/bin/python3 with NumPy (Debian: python3-numpy, which ./dev
// installs); skips with a message without it.
//
// Where arrayjit differs from NumPy on purpose, the script counts the
// elements under an id listed in docs/semantics.md ("Differences from
// NumPy"); the last test cases here pin arrayjit's side of each.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/jit_switch.hpp"
#include "tests/numpy_program.hpp"

namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

bool have_numpy() {
  return std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

// tests/numpy_oracle.py, next to this file. __FILE__ may be relative to the
// build directory (ccache's base_dir), where the test binary lives.
fs::path script() {
  fs::path here = fs::path(__FILE__).parent_path();
  if (here.is_relative()) here = fs::read_symlink("/proc/self/exe").parent_path() / here;
  return here / "numpy_oracle.py";
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

struct Report {
  std::map<std::string, long> counts, ops, deliberate;
  std::vector<std::string> fails;
};

// Run `n` programs from `first_seed` on both executors through the oracle.
Report run_oracle(std::uint64_t first_seed, std::uint64_t n) {
  const fs::path report = fs::temp_directory_path() / ("aj_numpy_oracle_" + std::to_string(::getpid()) + ".txt");
  const std::string cmd = std::string(kPython) + " '" + script().string() + "' /dev/stdin '" + report.string() + "'";
  FILE* py = ::popen(cmd.c_str(), "w");
  REQUIRE_MESSAGE(py != nullptr, "cannot start " << cmd);
  Report r;
  const bool saved = aj::jit::enabled();
  for (std::uint64_t seed = first_seed; seed < first_seed + n; ++seed) {
    for (const char* mode : {"jit", "interp"}) {
      aj::jit::set_enabled(std::string(mode) == "jit");
      std::ostringstream os;
      try {
        ajtest::NumpyProgram(seed).write(os, mode);
      } catch (const std::exception& e) {
        r.fails.push_back("program " + std::to_string(seed) + " " + mode + " threw: " + e.what());
        continue;
      }
      const std::string text = os.str();
      std::fwrite(text.data(), 1, text.size(), py);
    }
  }
  aj::jit::set_enabled(saved);
  const int status = ::pclose(py);
  CHECK_MESSAGE(status == 0, cmd << " exited with status " << status);
  std::ifstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key, name;
    long count = 0;
    ls >> key;
    if (key == "fail") r.fails.push_back(line);
    else if (line.starts_with("  ") && !r.fails.empty()) r.fails.back() += "\n" + line;
    else if (key == "op" && ls >> name >> count) r.ops[name] = count;
    else if (key == "deliberate" && ls >> name >> count) r.deliberate[name] = count;
    else if (ls >> count) r.counts[key] = count;
  }
  fs::remove(report);
  return r;
}

}  // namespace

TEST_CASE("numpy oracle: random programs agree with NumPy, on the JIT and the interpreter") {
  if (!have_numpy()) {
    MESSAGE("skipped: " << kPython << " cannot import numpy (Debian: apt-get install python3-numpy; ./dev deps)");
    return;
  }
  const std::uint64_t n = env_or("AJ_ORACLE_PROGRAMS", std::getenv("AJ_TEST_LONG") ? 100000 : 1000);
  const std::uint64_t seed = env_or("AJ_ORACLE_SEED", 1);
  Report r = run_oracle(seed, n);
  std::ostringstream summary;
  summary << r.counts["programs"] << " programs (" << n << " seeds x JIT and interpreter), " << r.counts["ops"]
          << " ops, " << r.counts["elements"] << " elements checked; " << r.ops.size() << " distinct ops;";
  for (auto& [k, v] : r.deliberate) summary << " " << k << ": " << v;
  MESSAGE(summary.str());
  CHECK(r.counts["programs"] == static_cast<long>(2 * n));
  if (n >= 1000) CHECK(r.ops.size() == 172);  // every op the generator knows appeared
  for (std::size_t i = 0; i < r.fails.size() && i < 20; ++i) FAIL_CHECK(r.fails[i]);
  CHECK_MESSAGE(r.fails.empty(), r.fails.size() << " disagreements with NumPy");
}

// ---- promotion ---------------------------------------------------------------------------------

namespace {

// NumPy's name of a dtype of the table: by kind and size ("uint8"); a float
// of another format than IEEE's for its size (bf16) has none ("").
std::string numpy_name(aj::DType t) {
  const std::string bits = std::to_string(8 * aj::itemsize(t));
  switch (aj::dtype_kind(t)) {
    case aj::DTypeKind::Bool: return "bool";
    case aj::DTypeKind::Unsigned: return "uint" + bits;
    case aj::DTypeKind::Signed: return "int" + bits;
    case aj::DTypeKind::Float: {
      const int ieee_digits = aj::itemsize(t) == 2 ? 11 : aj::itemsize(t) == 4 ? 24 : aj::itemsize(t) == 8 ? 53 : 0;
      return aj::dtype_info(t).digits == ieee_digits ? "float" + bits : "";
    }
  }
  return "";
}

}  // namespace

TEST_CASE("promote_types and casts_safely are NumPy's np.promote_types and np.can_cast for every pair") {
  if (!have_numpy()) {
    MESSAGE("skipped: " << kPython << " cannot import numpy (Debian: apt-get install python3-numpy; ./dev deps)");
    return;
  }
  std::vector<aj::DType> ours;
  std::string names;
  for (aj::DType t : aj::kAllDTypes) {
    if (numpy_name(t).empty()) continue;
    ours.push_back(t);
    names += " " + numpy_name(t);
  }
  // One line per pair (a, b): np.promote_types(a, b), np.can_cast(a, b, "safe").
  const fs::path out = fs::temp_directory_path() / ("aj_promotion_" + std::to_string(::getpid()) + ".txt");
  const std::string cmd = std::string(kPython) +
                          " -c 'import sys, numpy as np\n"
                          "for a in sys.argv[1:]:\n"
                          "  for b in sys.argv[1:]:\n"
                          "    print(np.promote_types(a, b).name, int(np.can_cast(a, b, \"safe\")))'" +
                          names + " > '" + out.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  for (aj::DType a : ours) {
    for (aj::DType b : ours) {
      std::string promoted;
      int safe = -1;
      REQUIRE(static_cast<bool>(in >> promoted >> safe));
      CAPTURE(aj::dtype_name(a));
      CAPTURE(aj::dtype_name(b));
      CHECK(numpy_name(aj::promote_types(a, b)) == promoted);
      CHECK(aj::casts_safely(a, b) == (safe == 1));
    }
  }
  fs::remove(out);
  // bf16 (NumPy has none) as ml_dtypes and JAX: f16 with bf16 meet at f32;
  // bool gives way; an integer goes to f64 unless bf16 holds it.
  CHECK(aj::promote_types(aj::DType::f16, aj::DType::bf16) == aj::DType::f32);
  CHECK(aj::promote_types(aj::DType::bool_, aj::DType::bf16) == aj::DType::bf16);
  CHECK(aj::promote_types(aj::DType::i32, aj::DType::bf16) == aj::DType::f64);
}

// ---- the deliberate differences (docs/semantics.md, "Differences from NumPy"),
// each pinned on both executors by the id the oracle counts it under --------------

namespace {

using ajtest::on_both;

std::vector<bool> signbits(const aj::Array& a) {
  std::vector<bool> s;
  for (double x : a.to_vector<double>()) s.push_back(std::signbit(x));
  return s;
}

}  // namespace

TEST_CASE("numpy differences: `maximum-signed-zero` (NumPy returns the second operand on ties)") {
  on_both([] {
    auto a = aj::from_vector<double>({-0.0, 0.0, -0.0, 0.0});
    auto b = aj::from_vector<double>({0.0, -0.0, -0.0, 0.0});
    CHECK(signbits(aj::maximum(a, b)) == std::vector<bool>{false, false, true, false});
    CHECK(signbits(aj::minimum(a, b)) == std::vector<bool>{true, true, true, false});
    CHECK(signbits(aj::clip(a, 0.0, 1.0)) == std::vector<bool>{false, false, false, false});
    auto z = aj::from_vector<float>({0.0f, -0.0f});  // np.max gives -0.0 here
    CHECK_FALSE(std::signbit(aj::max(z).item<float>()));
    CHECK(std::signbit(aj::min(aj::from_vector<float>({-0.0f, 0.0f})).item<float>()));
  });
}

TEST_CASE("numpy differences: `sign-of-zero` (sign(-0.0) is -0.0; NumPy +0.0)") {
  on_both([] {
    auto s = aj::sign(aj::from_vector<double>({-0.0, 0.0, -2.0}));
    CHECK(signbits(s) == std::vector<bool>{true, false, true});
    CHECK(s.to_vector<double>() == std::vector<double>{0.0, 0.0, -1.0});
  });
}

TEST_CASE("numpy differences: `int-floor-ceil-dtype` (floor/ceil/trunc of integers stay integers; NumPy 1.24: f64)") {
  on_both([] {
    auto x = aj::from_vector<std::int32_t>({-3, 7});
    CHECK(aj::floor(x).dtype() == aj::DType::i32);
    CHECK(aj::trunc(x).to_vector<std::int32_t>() == std::vector<std::int32_t>{-3, 7});
    CHECK(aj::ceil(x).to_vector<std::int32_t>() == std::vector<std::int32_t>{-3, 7});
  });
}

TEST_CASE("numpy differences: `nan-sign` (copysign reads the platform's sign of a made NaN)") {
  on_both([] {
    auto nan = aj::log2(aj::from_vector<double>({-3.0, -1.0}));  // invalid: NaN, its sign the platform's
    auto r = aj::copysign(aj::from_vector<double>({2.0, -0.5}), nan).to_vector<double>();
    CHECK(std::fabs(r[0]) == 2.0);  // the magnitude is the first operand's, whatever the sign
    CHECK(std::fabs(r[1]) == 0.5);
    for (double v : nan.to_vector<double>()) CHECK(std::isnan(v));
    // A NaN of known sign is read as it is.
    auto q = aj::copysign(2.0, aj::from_vector<double>({-std::numeric_limits<double>::quiet_NaN()}));
    CHECK(q.to_vector<double>()[0] == -2.0);
  });
}

TEST_CASE("numpy differences: `int-pow-negative-exponent` (1 / a^|b| truncated; NumPy raises)") {
  on_both([] {
    auto a = aj::from_vector<std::int64_t>({2, 1, -1, -1, 0, -5});
    auto b = aj::from_vector<std::int64_t>({-1, -7, -3, -2, -1, -2});
    CHECK(aj::pow(a, b).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, -1, 1, 0, 0});
  });
}

TEST_CASE("numpy differences: `quantile-signed-zero` (zeros of both signs tie; sorted stably)") {
  on_both([] {
    // Sorted stably, the middle two of [0, -0, 0, -0] are -0 and 0: their mean is +0;
    // of [-0, -0, 0, 0] too; which zeros are in the middle follows the input order.
    auto x = aj::from_vector<double>({-0.0, -0.0, -0.0, 0.0, 0.0});
    CHECK(std::signbit(aj::median(x).item<double>()));  // the third of five, a -0.0
    auto y = aj::from_vector<double>({0.0, 0.0, 0.0, -0.0, -0.0});
    CHECK_FALSE(std::signbit(aj::median(y).item<double>()));
    CHECK(aj::median(x).item<double>() == 0.0);
  });
}

TEST_CASE("numpy differences: `partition-sorted` (partition sorts each line: a valid partition in sorted order)") {
  on_both([] {
    // np.partition([3, 1, 2, 5, 4], 1) may give [1, 2, 3, 5, 4]; arrayjit's is sorted.
    auto x = aj::from_vector<double>({3, 1, 2, 5, 4});
    CHECK(aj::partition(x, 1).to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5});
    CHECK(aj::argpartition(x, 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 0, 4, 3});
  });
}

TEST_CASE("numpy differences: `int-reciprocal-of-zero` (1 / x truncated, 0 at 0; NumPy: undefined)") {
  on_both([] {
    auto x = aj::from_vector<std::int32_t>({0, 1, -1, 2, -7, 100});
    auto r = aj::reciprocal(x);
    CHECK(r.dtype() == aj::DType::i32);
    CHECK(r.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 1, -1, 0, 0, 0});
  });
}

TEST_CASE("numpy differences: `float-to-int-saturation` (NumPy: undefined, INT_MIN on x86)") {
  on_both([] {
    auto x = aj::from_vector<double>({NAN, 1e20, -1e20, 3e9, -2.9, INFINITY});
    CHECK(x.astype(aj::DType::i32).to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{0, INT32_MAX, INT32_MIN, INT32_MAX, -2, INT32_MAX});
    CHECK(x.astype(aj::DType::i64).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{0, INT64_MAX, INT64_MIN, 3000000000, -2, INT64_MAX});
  });
}

TEST_CASE("numpy differences: `float-floor-divide` (floor(a / b); NumPy's divmod gives 1 // 0.1 == 9)") {
  on_both([] {
    auto q = aj::floor_divide(aj::from_vector<double>({1.0, -1.0, 7.0}), aj::from_vector<double>({0.1, 0.1, 2.0}));
    CHECK(q.to_vector<double>() == std::vector<double>{10.0, -10.0, 3.0});
  });
}

TEST_CASE("numpy differences: `arange-step` (start + i * step; NumPy steps by (start + step) - start)") {
  on_both([] {
    auto a = aj::arange(-1.0, -0.4, 0.1, aj::DType::f64).to_vector<double>();
    REQUIRE(a.size() == 6);
    CHECK(a[3] == -1.0 + 3 * 0.1);  // -0.7; NumPy: -0.7000000000000001
  });
}

TEST_CASE("numpy differences: `reduction-overflow-order` (a prod that overflows in one order only)") {
  std::vector<float> v(16, 1.5f);
  v[0] = 1e30f, v[1] = 1e30f, v[9] = 0.0f;  // in order: inf * ... * 0 = NaN
  aj::jit::set_enabled(false);
  CHECK(std::isnan(aj::prod(aj::from_vector<float>(v)).item<float>()));  // as NumPy
  aj::jit::set_enabled(true);
  const float jit = aj::prod(aj::from_vector<float>(v)).item<float>();
  CHECK((std::isnan(jit) || jit == 0.0f));  // either order's answer, nothing else
}

TEST_CASE("numpy differences: `reduction-overflow-order` in matmul (overflowing products under FMA)") {
  // NumPy: 3e38 * 2 + 3e38 * -2 = inf - inf = NaN. A fused multiply-add keeps
  // the second product exact, so inf + (-6e38) = inf. Either is allowed;
  // a finite result is not.
  const aj::Array a = aj::from_vector<float>({3e38f, 3e38f}, {1, 2});
  const aj::Array b = aj::from_vector<float>({2.0f, -2.0f}, {2, 1});
  for (bool jit : {false, true}) {
    aj::jit::set_enabled(jit);
    const float r = aj::matmul(a, b).item<float>();
    CHECK((std::isnan(r) || std::isinf(r)));
  }
  aj::jit::set_enabled(true);
}

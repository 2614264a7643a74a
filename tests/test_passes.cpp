// The pass pipeline itself: each simplify rule fires and is exact, CSE and
// DCE, the verifier, the run_pass wrapper (timing, "(unchanged)", dumps),
// switching passes off by name, AJ_LOG=plan, the Kernel IR's run-time
// arguments, and buffer slot packing.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/host_memory.hpp"
#include "core/api/executor.hpp"
#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"
#include "opt/passes/simplify.hpp"
#include "opt/pipeline.hpp"
#include "opt/verify.hpp"
#include "tests/random_data.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::detail::Executor;
using aj::detail::ExecutorScope;

std::vector<double> random_doubles(std::size_t n, unsigned seed) {
  return ajtest::random_in<double>(n, seed, -3.0, 3.0);
}

// Float data with the values exact rules must keep: -0.0, +0.0, inf, NaN.
std::vector<double> special_doubles() {
  auto v = random_doubles(12, 77);
  const double inf = std::numeric_limits<double>::infinity();
  v.insert(v.end(), {-0.0, 0.0, inf, -inf, std::nan("")});
  return v;
}

std::vector<std::int32_t> random_ints(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(rng());
  v.push_back(std::numeric_limits<std::int32_t>::min());
  v.push_back(std::numeric_limits<std::int32_t>::max());
  return v;
}

// Equal within the host JIT's tolerance: exp is computed by SLEEF's vector
// function in a loop body and by the scalar one in its tail, and which
// elements land in the tail depends on the kernel's shape (fused or not),
// so values may differ in the last bit (docs/semantics.md: 4 ulp).
bool close(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - b[i]) <= 1e-13 * (1.0 + std::fabs(b[i])))) return false;
  }
  return true;
}

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// How many nodes of the dump are op `op` ("%3 = add f32[4] %1, %2").
int count_op(const std::string& dump, const std::string& op) {
  int n = 0;
  for (std::size_t at = dump.find("= " + op + " "); at != std::string::npos;
       at = dump.find("= " + op + " ", at + 1)) {
    ++n;
  }
  return n;
}

// One simplify rule: `make` builds the expression. After simplify the dump
// holds `op` exactly `want_count` times, and the optimized values are bit for
// bit those of the reference interpreter (which rewrites nothing).
void rule(const char* name, const std::function<Array()>& make, const std::string& op, int want_count) {
  INFO("rule " << name);
  std::vector<double> want;
  {
    ExecutorScope ref(Executor::reference);
    want = make().to_vector<double>();
  }
  Array y = make();
  aj::simplify({y.node_id()});
  const std::string d = aj::dump({y});
  INFO(d);
  CHECK(count_op(d, op) == want_count);
  const std::vector<double> got = y.to_vector<double>();
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO("element " << k << ": reference " << want[k] << ", optimized " << got[k]);
    CHECK(same_bits(got[k], want[k]));
  }
}

// Captures what the library logs to stderr.
class CaptureStderr {
 public:
  CaptureStderr() : saved_(std::cerr.rdbuf(buf_.rdbuf())) {}
  ~CaptureStderr() { std::cerr.rdbuf(saved_); }
  CaptureStderr(const CaptureStderr&) = delete;
  CaptureStderr& operator=(const CaptureStderr&) = delete;
  std::string text() const { return buf_.str(); }

 private:
  std::ostringstream buf_;
  std::streambuf* saved_;
};

struct PassOff {
  explicit PassOff(std::string n) : name(std::move(n)) { aj::opt::set_pass_enabled(name, false); }
  ~PassOff() { aj::opt::set_pass_enabled(name, true); }
  PassOff(const PassOff&) = delete;
  PassOff& operator=(const PassOff&) = delete;
  std::string name;
};

std::string kernel_hash(const std::string& explain) {
  auto at = explain.find(" hash ");
  return at == std::string::npos ? "" : explain.substr(at + 6, 16);
}

}  // namespace

TEST_SUITE("passes") {

TEST_CASE("the test binary runs with the verifier and buffer poisoning on") {
  CHECK(aj::verify_enabled());
  CHECK(aj::cpu::host_poisons_freed_blocks());
}

TEST_CASE("simplify: every rule fires, and is exact under docs/semantics.md") {
  const auto fv = special_doubles();
  const auto iv = random_ints(15, 5);
  auto f = [&] { return aj::from_vector(fv); };
  auto i = [&] { return aj::from_vector(iv); };
  auto as_f64 = [](const Array& a) { return a.astype(DType::f64); };

  // Constant folding of fills, and of reductions of fills.
  rule("ones + 2 is a fill of 3", [] { return aj::ones({3, 4}, DType::f64) + 2; }, "add", 0);
  rule("a sum of a fill is a fill", [] { return aj::sum(aj::full({3, 4}, 2.5, DType::f64), 1); }, "sum", 0);
  rule("a prod of an int fill wraps", [&] { return as_f64(aj::prod(aj::full({40}, 3, DType::i64))); }, "prod", 0);
  rule("max of a fill", [] { return aj::max(aj::full({5, 2}, -0.0, DType::f64), 0); }, "max", 0);
  rule("a view of a fill is a fill", [] { return aj::transpose(aj::full({2, 3}, 1.5, DType::f64)) * 2; }, "mul", 0);
  // x * 1, 1 * x, x / 1 (floats keep -0.0, NaN, inf).
  rule("x * 1", [&] { return f() * 1.0; }, "mul", 0);
  rule("1 * x", [&] { return 1.0 * f(); }, "mul", 0);
  rule("x / 1", [&] { return f() / 1.0; }, "div", 0);
  // x + 0, x - 0 only for integers; floats only the exact x + (-0.0), x - (+0.0).
  rule("int x + 0", [&] { return as_f64(i() + 0); }, "add", 0);
  rule("int 0 + x", [&] { return as_f64(0 + i()); }, "add", 0);
  rule("int x - 0", [&] { return as_f64(i() - 0); }, "sub", 0);
  rule("float x + (-0.0)", [&] { return f() + (-0.0); }, "add", 0);
  rule("float x - 0.0", [&] { return f() - 0.0; }, "sub", 0);
  rule("float x + 0.0 is NOT x (-0.0 + 0.0 is +0.0)", [&] { return f() + 0.0; }, "add", 1);
  rule("float x - (-0.0) is NOT x", [&] { return f() - (-0.0); }, "sub", 1);
  // x - x only for integers (inf - inf is NaN).
  rule("int x - x is 0", [&] { Array x = i(); return as_f64(x - x); }, "sub", 0);
  rule("float x - x is NOT 0", [&] { Array x = f(); return x - x; }, "sub", 1);
  // Double negation.
  rule("-(-x) int", [&] { return as_f64(-(-i())); }, "neg", 0);
  rule("-(-x) float", [&] { return -(-f()); }, "neg", 0);
  // Cast chains through a lossless middle type only.
  rule("i32 -> i64 -> f64 is i32 -> f64", [&] { return i().astype(DType::i64).astype(DType::f64); }, "cast", 1);
  rule("i32 -> f64 -> i32 is nothing", [&] { return as_f64(i().astype(DType::f64).astype(DType::i32)) ; }, "cast", 1);
  rule("f64 -> f32 -> f64 is NOT nothing", [&] { return f().astype(DType::f32).astype(DType::f64); }, "cast", 2);
  // (the outer i32 -> i64 -> f64 is i32 -> f64: two casts left, not one)
  rule("f64 -> i32 -> i64 keeps the saturating cast", [&] { return as_f64(f().astype(DType::i32).astype(DType::i64)); }, "cast", 2);
  // Views.
  const auto mv = random_doubles(24, 9);
  auto m = [&] { return aj::from_vector(mv, {2, 3, 4}); };
  rule("reshape of reshape", [&] { return aj::reshape(aj::reshape(m(), {6, 4}), {4, 6}) * 2; }, "reshape", 1);
  rule("transpose of transpose", [&] { return aj::transpose(aj::transpose(m(), {1, 2, 0}), {1, 0, 2}) * 2; },
       "transpose", 1);
  rule("transpose of its inverse is nothing", [&] { return aj::transpose(aj::transpose(m(), {1, 2, 0}), {2, 0, 1}) * 2; },
       "transpose", 0);
  // where with a constant condition.
  rule("where(true-fill, a, b)", [&] { return aj::where(aj::full({17}, true, DType::bool_), f(), 2.0); }, "where", 0);
}

TEST_CASE("CSE: the same op over the same nodes is one node; scalars are never merged by value") {
  Array x = aj::from_vector(random_doubles(8, 1));
  Array y = x * 2;
  CHECK((aj::exp(y) + x).node_id() == (aj::exp(y) + x).node_id());
  CHECK(aj::sum(y, 0).node_id() == aj::sum(y, 0).node_id());
  CHECK(aj::exp(y).node_id() != aj::exp(x).node_id());
  // Each scalar the trace makes is its own node, equal values or not, so the
  // graph's structure (the plan cache's key) never depends on a value.
  Array a = x * 2 + 1, b = x * 2 + 1;
  CHECK(a.node_id() != b.node_id());
  CHECK(a.to_vector<double>() == b.to_vector<double>());
  CHECK(aj::arange(8).node_id() != aj::arange(8).node_id());
}

TEST_CASE("DCE: nodes a rewrite leaves unreachable are freed at once") {
  Array x = aj::from_vector(random_doubles(8, 2));
  Array y = (x * 1.0) / 1.0;  // mul, div, two constants, two broadcasts
  const auto before = aj::stats().live_nodes;
  aj::simplify({y.node_id()});
  CHECK(aj::stats().live_nodes < before);
  CHECK(aj::dump({y}).find("mul") == std::string::npos);
  CHECK(aj::dump({y}).find("const") == std::string::npos);
  CHECK(y.to_vector<double>() == x.to_vector<double>());
}

TEST_CASE("verify accepts what the passes produce and names a broken rule") {
  Array x = aj::from_vector(random_doubles(12, 3), {3, 4});
  Array y = aj::sum(aj::exp(x) * 2, 1);
  CHECK_NOTHROW(aj::verify(aj::graph(), "test"));
  aj::simplify({y.node_id()});
  CHECK_NOTHROW(aj::verify(aj::graph(), "simplify"));
  aj::Schedule s = aj::fuse({y.node_id()});
  aj::BufferPlan p = aj::assign_buffers(s);
  CHECK_NOTHROW(aj::verify(p, s, "assign_buffers"));

  // Break the uses count, then the reduction axes: each is caught by name.
  aj::Node& n = aj::graph()[y.node_id()];
  ++n.uses;
  try {
    aj::verify(aj::graph(), "test");
    FAIL("verify missed a wrong uses count");
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::internal);
    CHECK(std::string(e.what()).find("uses") != std::string::npos);
  }
  --n.uses;
  const auto axes = n.ints;
  n.ints = {1, 0};
  CHECK_THROWS_WITH_AS(aj::verify(aj::graph(), "test"), doctest::Contains("axes"), aj::Error);
  n.ints = axes;
  // A plan with two live values in one slot.
  if (p.values.size() >= 1) {
    aj::BufferPlan bad = p;
    bad.values.push_back(bad.values[0]);
    bad.values.back().node = bad.values[0].node + 1000;
    CHECK_THROWS_WITH_AS(aj::verify(bad, s, "test"), doctest::Contains("slot"), aj::Error);
  }
  CHECK(y.to_vector<double>().size() == 3);
}

TEST_CASE("run_pass: each pass is timed and logged, (unchanged) noted, the graph dumped on request") {
  Array x = aj::from_vector(random_doubles(16, 4));
  std::string text;
  {
    CaptureStderr cap;
    aj::set_log("passes,graph,buffers");
    Array y = x * 2 + 1;  // nothing to simplify
    y.eval();
    Array z = (x * 1.0) * 3;  // x * 1 goes
    z.eval();
    aj::set_log("");
    text = cap.text();
  }
  INFO(text);
  CHECK(text.find("[aj:passes] simplify: ") != std::string::npos);
  CHECK(text.find("ms (unchanged)") != std::string::npos);
  CHECK(text.find("[aj:passes] fuse: ") != std::string::npos);
  CHECK(text.find("1 kernels") != std::string::npos);
  CHECK(text.find("[aj:passes] assign_buffers: ") != std::string::npos);
  CHECK(text.find("[aj:graph] after simplify:") != std::string::npos);  // z's graph changed
  CHECK(text.find("[aj:graph] after fuse (unchanged)") != std::string::npos);
  CHECK(text.find("[aj:buffers] buffers: ") != std::string::npos);
  // Nothing is logged when no channel is on.
  CaptureStderr quiet;
  (x * 5).eval();
  CHECK(quiet.text().empty());
}

TEST_CASE("AJ_LOG=plan prints the optimized plan of every eval; AJ_DUMP is the same switch") {
  Array p = aj::from_vector(random_doubles(64, 5)), g = aj::from_vector(random_doubles(64, 6));
  for (const char* var : {"AJ_LOG", "AJ_DUMP"}) {
    INFO(var);
    std::string text;
    {
      CaptureStderr cap;
      setenv(var, "plan", 1);
      p = p - 0.1 * g;
      p.eval();
      unsetenv(var);
      text = cap.text();
    }
    INFO(text);
    CHECK(text.find("[aj:plan] plan: 1 steps, 1 kernels") != std::string::npos);
    CHECK(text.find("fused:") != std::string::npos);
    CHECK(text.find("(in place of") != std::string::npos);
    CHECK(text.find("lower bound") != std::string::npos);
  }
}

TEST_CASE("passes switch off by name: the results stay the same, the plan does not") {
  const auto xv = random_doubles(200, 7);
  auto make = [&] {
    Array x = aj::from_vector(xv, {10, 20});
    return aj::sum(aj::exp(x) * 2 + (aj::ones({10, 20}, DType::f64) + 1), 1);
  };
  const auto want = make().to_vector<double>();
  {
    Array y = make();
    aj::reset_stats();
    y.eval();
    CHECK(aj::stats().kernels_launched == 1);
  }
  {
    PassOff off("fuse");  // one kernel per op
    Array y = make();
    aj::reset_stats();
    y.eval();
    CHECK(aj::stats().kernels_launched >= 4);  // exp, mul, add, sum (+ constants)
    CHECK(close(y.to_vector<double>(), want));
  }
  {
    PassOff off("simplify");  // ones + 1 stays an add
    Array y = make();
    CHECK(aj::explain(y).find(":add") != std::string::npos);
    CHECK(close(y.to_vector<double>(), want));
  }
  {
    // Through the kernel interpreter (the reference's scalar functions and
    // summation order) the values are the same bit for bit.
    const bool jit = aj::jit::enabled();
    aj::jit::set_enabled(false);
    const auto exact = make().to_vector<double>();
    for (const char* pass : {"fuse", "simplify"}) {
      PassOff off(pass);
      CHECK_MESSAGE(make().to_vector<double>() == exact, pass);
    }
    aj::jit::set_enabled(jit);
  }
  {
    PassOff off("assign_buffers");  // no donation
    Array q = aj::from_vector(xv);
    q = q * 2;
    aj::reset_stats();
    q.eval();
    CHECK(aj::stats().inplace_reuses == 0);
  }
  Array q = aj::from_vector(xv);
  q = q * 2;
  aj::reset_stats();
  q.eval();
  CHECK(aj::stats().inplace_reuses == 1);
}

TEST_CASE("Kernel IR: extents and scalar constants are run-time arguments, not part of the hash") {
  std::set<std::string> hashes;
  for (std::int64_t n : {10, 100, 1000, 4097}) {
    for (double s : {0.5, 2.0, -3.25}) {
      Array x = aj::from_vector(random_doubles(static_cast<std::size_t>(n), 8));
      Array y = aj::sum(x * s + 1.0, 0);
      const std::string e = aj::explain(y);
      hashes.insert(kernel_hash(e));
      // A readable dump: loads, scalar arguments, SSA ops, outputs.
      CHECK(e.find("v0 = load f64 in0") != std::string::npos);
      CHECK(e.find("s0: f64 = ") != std::string::npos);
      CHECK(e.find("reduce_sum f64") != std::string::npos);
    }
  }
  CHECK(hashes.size() == 1);
  // Another op is another kernel.
  Array x = aj::from_vector(random_doubles(10, 8));
  CHECK(kernel_hash(aj::explain(aj::sum(x * 2.0 - 1.0, 0))) != *hashes.begin());
}

TEST_CASE("buffer slots: dead temporaries are reused, best fit, never two live values in one slot") {
  // Two expensive producers, each read by two kernels over other axes, so each
  // is materialized; the first is dead before the second is made.
  Array x = aj::from_vector(random_doubles(64 * 32, 9), {64, 32});
  Array y = aj::from_vector(random_doubles(16 * 32, 10), {16, 32});
  Array e1 = aj::exp(x), e2 = aj::exp(y);
  Array a = aj::sum(e1, 0) + aj::sum(aj::sum(e1, 1));  // [32]
  Array b = aj::sum(e2 * a, 0) + aj::sum(aj::sum(e2, 1));
  e1 = Array();
  e2 = Array();
  std::vector<aj::NodeId> roots{b.node_id()};
  aj::simplify(roots);
  aj::Schedule s = aj::fuse(roots);
  aj::BufferPlan p = aj::assign_buffers(s);
  CHECK_NOTHROW(aj::verify(p, s, "test"));
  INFO(aj::explain(b));
  // exp(y) (2 KiB) fits the dead exp(x)'s 16 KiB slot: fewer slots than values.
  CHECK(p.slot_bytes.size() < p.values.size());
  CHECK(p.lower_bound <= p.bytes_used);
  std::size_t biggest = 0;
  for (auto v : p.values) biggest = std::max(biggest, v.bytes);
  CHECK(biggest == 64 * 32 * 8);
  CHECK(p.slot_bytes[0] == biggest);  // decreasing size: the biggest value chose first
  const auto want = [&] {
    ExecutorScope ref(Executor::reference);
    Array x2 = aj::from_vector(random_doubles(64 * 32, 9), {64, 32});
    Array y2 = aj::from_vector(random_doubles(16 * 32, 10), {16, 32});
    Array f1 = aj::exp(x2), f2 = aj::exp(y2);
    Array a2 = aj::sum(f1, 0) + aj::sum(aj::sum(f1, 1));
    return (aj::sum(f2 * a2, 0) + aj::sum(aj::sum(f2, 1))).to_vector<double>();
  }();
  const auto got = b.to_vector<double>();
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-12));
}

TEST_CASE("no buffer is donated while a view of it survives the evaluation") {
  // Found by the differential test (seed 220201374): c / 1 becomes a view of
  // c; c's last kernel reader must not take c's buffer, the view shows it.
  const auto xv = random_doubles(64, 11);
  Array x = aj::from_vector(xv);
  Array c = x * 2;
  Array view = c / 1.0;
  Array out = aj::abs(view) - c;
  c = Array();
  std::vector<aj::NodeId> roots{out.node_id(), view.node_id()};
  aj::simplify(roots);
  aj::Schedule s = aj::fuse(roots);
  aj::BufferPlan p = aj::assign_buffers(s);
  CHECK_NOTHROW(aj::verify(p, s, "test"));
  CHECK(p.donations.empty());
  aj::eval({out, view});
  const auto v = view.to_vector<double>(), o = out.to_vector<double>();
  for (std::size_t k = 0; k < xv.size(); ++k) {
    CHECK(v[k] == xv[k] * 2);
    CHECK(o[k] == std::fabs(xv[k] * 2) - xv[k] * 2);
  }
}

}  // TEST_SUITE

// simplify's concatenate rule: pieces that are one elementwise expression over
// slices continuing each other along the axis become that expression over
// the slice they make together (the values checked against host loops).
TEST_CASE("simplify: a concatenate of one expression over continuing slices is the expression over the whole slice") {
  const std::vector<double> xv = random_doubles(400 * 16, 41);
  Array x = aj::from_vector(xv);
  auto f = [](const Array& s) { return s * 2.0 + 1.0; };
  auto expect = [&](std::int64_t start, std::int64_t len, std::int64_t step) {
    std::vector<double> e;
    for (std::int64_t i = 0; i < len; ++i) e.push_back(xv[static_cast<std::size_t>(start + i * step)] * 2.0 + 1.0);
    return e;
  };

  SUBCASE("400 pieces of 16: one kernel, no concatenate") {
    std::vector<Array> parts;
    for (std::int64_t i = 0; i < 400; ++i) parts.push_back(f(aj::slice(x, 0, 16 * i, 16 * (i + 1))));
    Array y = aj::concatenate(parts);
    aj::simplify({y.node_id()});
    CHECK(aj::dump({y}).find("concat") == std::string::npos);
    aj::reset_stats();
    CHECK(y.to_vector<double>() == expect(0, 6400, 1));
    CHECK(aj::stats().kernels_launched == 1);
  }
  SUBCASE("a run among other pieces becomes one piece; reversed slices continue backwards") {
    Array a = aj::from_vector(random_doubles(3, 42));
    Array y = aj::concatenate({a, f(aj::slice(x, 0, 40, 44)), f(aj::slice(x, 0, 44, 50)), f(aj::slice(x, 0, 50, 51)), a});
    aj::simplify({y.node_id()});
    CHECK(aj::dump({y}).find("concat") != std::string::npos);
    CHECK(aj::graph()[y.node_id()].inputs.size() == 3);
    std::vector<double> e = a.to_vector<double>();
    for (double v : expect(40, 11, 1)) e.push_back(v);
    for (double v : a.to_vector<double>()) e.push_back(v);
    CHECK(y.to_vector<double>() == e);

    Array r = aj::concatenate({f(aj::slice(x, 0, 20, 15, -1)), f(aj::slice(x, 0, 15, 9, -1))});
    aj::simplify({r.node_id()});
    CHECK(aj::dump({r}).find("concat") == std::string::npos);
    CHECK(r.to_vector<double>() == expect(20, 11, -1));
  }
  SUBCASE("pieces that do not continue each other, or differ, stay a concatenate") {
    std::vector<Array> cases = {
        aj::concatenate({f(aj::slice(x, 0, 0, 4)), f(aj::slice(x, 0, 5, 9))}),     // a gap
        aj::concatenate({f(aj::slice(x, 0, 4, 8)), f(aj::slice(x, 0, 0, 4))}),     // out of order
        aj::concatenate({f(aj::slice(x, 0, 0, 4)), aj::slice(x, 0, 4, 8) * 3.0 + 1.0}),  // another constant
        aj::concatenate({f(aj::slice(x, 0, 0, 4)), aj::slice(x, 0, 4, 8) * 2.0 - 1.0}),  // another op
        aj::concatenate({f(aj::slice(x, 0, 0, 4)), f(aj::slice(x, 0, 4, 12, 2))}),  // another step
    };
    const std::vector<std::vector<double>> want = {
        [&] { auto e = expect(0, 4, 1); for (double v : expect(5, 4, 1)) e.push_back(v); return e; }(),
        [&] { auto e = expect(4, 4, 1); for (double v : expect(0, 4, 1)) e.push_back(v); return e; }(),
        [&] { auto e = expect(0, 4, 1); for (int i = 4; i < 8; ++i) e.push_back(xv[static_cast<std::size_t>(i)] * 3.0 + 1.0); return e; }(),
        [&] { auto e = expect(0, 4, 1); for (int i = 4; i < 8; ++i) e.push_back(xv[static_cast<std::size_t>(i)] * 2.0 - 1.0); return e; }(),
        [&] { auto e = expect(0, 4, 1); for (double v : expect(4, 4, 2)) e.push_back(v); return e; }(),
    };
    for (std::size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(i);
      aj::simplify({cases[i].node_id()});
      CHECK(aj::graph()[cases[i].node_id()].op == aj::Op::Concat);
      CHECK(cases[i].to_vector<double>() == want[i]);
    }
  }
  SUBCASE("2-D along axis 1: a column broadcast merges, a row broadcast (different in each piece) does not") {
    const std::vector<double> mv = random_doubles(3 * 12, 43), cv = random_doubles(3, 44), rv = random_doubles(4, 45);
    Array m = aj::from_vector(mv, {3, 12});
    Array col = aj::from_vector(cv, {3, 1});
    Array row = aj::from_vector(rv, {1, 4});
    Array y = aj::concatenate({aj::slice(m, 1, 0, 4) * col, aj::slice(m, 1, 4, 8) * col, aj::slice(m, 1, 8, 12) * col}, 1);
    Array z = aj::concatenate({aj::slice(m, 1, 0, 4) * row, aj::slice(m, 1, 4, 8) * row}, 1);
    aj::simplify({y.node_id(), z.node_id()});
    CHECK(aj::graph()[y.node_id()].op == aj::Op::Mul);
    CHECK(aj::graph()[z.node_id()].op == aj::Op::Concat);
    std::vector<double> ey, ez;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 12; ++j) ey.push_back(mv[static_cast<std::size_t>(i * 12 + j)] * cv[static_cast<std::size_t>(i)]);
      for (int j = 0; j < 8; ++j) ez.push_back(mv[static_cast<std::size_t>(i * 12 + j)] * rv[static_cast<std::size_t>(j % 4)]);
    }
    CHECK(y.to_vector<double>() == ey);
    CHECK(z.to_vector<double>() == ez);
  }
  SUBCASE("aj::compile keeps the concatenate: pieces that continue at one extent need not at another") {
    auto g = aj::compile([](const Array& v) {
      return aj::concatenate({aj::slice(v, 0, 0, 4) * 2.0, aj::slice(v, 0, -4, std::nullopt) * 2.0});
    });
    for (std::int64_t n : {8, 10, 8, 13}) {
      CAPTURE(n);
      const std::vector<double> vv = random_doubles(static_cast<std::size_t>(n), static_cast<unsigned>(50 + n));
      std::vector<double> e;
      for (std::int64_t i = 0; i < 4; ++i) e.push_back(vv[static_cast<std::size_t>(i)] * 2.0);
      for (std::int64_t i = n - 4; i < n; ++i) e.push_back(vv[static_cast<std::size_t>(i)] * 2.0);
      CHECK(g(aj::from_vector(vv)).to_vector<double>() == e);
    }
  }
}

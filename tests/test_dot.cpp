// Pictures of the optimized plan (aj::to_dot with DotOptions::plan, write_dot,
// AJ_DUMP_DOT): kernels as clusters of their fused ops, library and view
// steps, buffers and slots, in-place edges and each node's source line. The
// rendering test runs where Graphviz's dot is installed and says so otherwise.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "opt/plan_cache.hpp"
#include "tests/random_data.hpp"
#include "tests/verify_off.hpp"

namespace {

using aj::Array;

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

std::string here(int line) { return "test_dot.cpp:" + std::to_string(line); }

bool have_dot() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

}  // namespace

TEST_SUITE("dot") {

TEST_CASE("to_dot draws the plan: kernel clusters, fused ops, slots, in-place edges, source lines") {
  const auto v = ajtest::random_in<float>(64, 3, -1.0f, 1.0f);
  Array p = aj::from_vector(v).reshape({8, 8});
  Array w = aj::from_vector(ajtest::random_in<float>(64, 4, -1.0f, 1.0f)).reshape({8, 8});
  p.eval();
  w.eval();
  const int line = __LINE__ + 1;
  Array q = aj::exp(p) * 2.0f + 1.0f;   // one kernel, in place of nothing (p is held)
  Array r = aj::matmul(q, w);           // a library step
  Array s = aj::sum(r, 1);              // a reduction kernel
  const std::string text = aj::to_dot(std::vector<Array>{s});
  CHECK(text.rfind("digraph arrayjit_plan", 0) == 0);
  CHECK(count(text, "subgraph cluster_") == 3);  // kernel, library step, kernel
  CHECK(text.find("kernel k0") != std::string::npos);
  CHECK(text.find("library step") != std::string::npos);
  CHECK(text.find("matmul") != std::string::npos);
  CHECK(text.find(" exp ") != std::string::npos);
  CHECK(text.find("slot ") != std::string::npos);
  CHECK(text.find(here(line)) != std::string::npos);      // where q was written
  CHECK(text.find(here(line + 2)) != std::string::npos);  // where s was written
  CHECK(!s.is_evaluated());  // a picture computes nothing
  // With no handle left on its input the update runs in place: a red edge.
  Array t = aj::from_vector(v) * 3.0f;
  t.eval();
  t = t + 1.0f;  // the old t has no handle now
  const std::string inplace = aj::to_dot(std::vector<Array>{t});
  CHECK(inplace.find("in place") != std::string::npos);
  // plan = false, or nothing left to evaluate: the traced graph.
  CHECK(aj::to_dot(std::vector<Array>{s}, aj::DotOptions{false}).rfind("digraph arrayjit {", 0) == 0);
  CHECK(s.eval().is_evaluated());
  CHECK(aj::to_dot(std::vector<Array>{s}).rfind("digraph arrayjit {", 0) == 0);
}

TEST_CASE("write_dot and AJ_DUMP_DOT write .dot files, and .svg/.png where Graphviz is installed") {
  const auto dir = std::filesystem::temp_directory_path() / ("aj_dot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Array x = aj::from_vector(ajtest::random_in<double>(100, 5, -2.0, 2.0));
  Array y = aj::tanh(x) * x;
  const auto files = aj::write_dot({y}, (dir / "y.dot").string());
  REQUIRE(!files.empty());
  std::ifstream f(files[0]);
  std::stringstream ss;
  ss << f.rdbuf();
  CHECK(ss.str().find("tanh") != std::string::npos);
  if (have_dot()) {
    REQUIRE(files.size() == 3);
    CHECK(std::filesystem::file_size(dir / "y.svg") > 100);
    CHECK(std::filesystem::file_size(dir / "y.png") > 100);
  } else {
    MESSAGE("Graphviz's dot is not installed: only the .dot file was written and checked");
    CHECK(files.size() == 1);
  }
  CHECK_THROWS_AS(aj::write_dot({y}, (dir / "no/such/dir/y.dot").string()), aj::Error);
  ::setenv("AJ_DUMP_DOT", dir.string().c_str(), 1);
  Array z = aj::exp(x) + 1.0;
  z.eval();
  ::unsetenv("AJ_DUMP_DOT");
  bool found = false;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    found |= e.path().filename().string().rfind("plan-", 0) == 0 && e.path().extension() == ".dot";
  }
  CHECK(found);
  std::filesystem::remove_all(dir);
}

TEST_CASE("AJ_DUMP_DOT draws a plan-cache hit as fully as the plan it reuses (verification off)") {
  const ajtest::VerifyOff off;  // a user's build: hits are not translated whole
  aj::plan_cache::clear();
  const auto dir = std::filesystem::temp_directory_path() / ("aj_dot_hit_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Array x = aj::from_vector(ajtest::random_in<double>(100, 6, -2.0, 2.0));
  ::setenv("AJ_DUMP_DOT", dir.string().c_str(), 1);
  for (int i = 0; i < 2; ++i) (aj::exp(x) * x + 1.0).eval();  // a plan, then a hit
  ::unsetenv("AJ_DUMP_DOT");
  std::vector<std::string> texts;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".dot") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    texts.push_back(ss.str());
  }
  REQUIRE(texts.size() == 2);
  for (const std::string& t : texts) {
    CHECK(t.find("exp") != std::string::npos);    // the kernel's fused ops
    CHECK(t.find("bytes") != std::string::npos);  // the buffers
  }
  std::filesystem::remove_all(dir);
}

}  // TEST_SUITE

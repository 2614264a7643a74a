// The profiler (arrayjit/profile.hpp): the Chrome trace a known program
// writes, parsed back and checked event by event; nesting, threads, AJ_TRACE,
// the summary table, the C functions, and the mistakes.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "tests/cuda_fake_driver.hpp"

namespace fs = std::filesystem;

namespace {

// ---- a small JSON reader: enough to check that the trace is JSON ----------------------------------

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, JsonArray, JsonObject> v;
  const Json& operator[](const std::string& k) const {
    static const Json none;
    const auto* o = std::get_if<JsonObject>(&v);
    if (!o) return none;
    auto it = o->find(k);
    return it == o->end() ? none : it->second;
  }
  bool has(const std::string& k) const {
    const auto* o = std::get_if<JsonObject>(&v);
    return o && o->count(k);
  }
  std::string str() const { return std::holds_alternative<std::string>(v) ? std::get<std::string>(v) : ""; }
  double num() const { return std::holds_alternative<double>(v) ? std::get<double>(v) : -1e300; }
  const JsonArray& arr() const {
    static const JsonArray none;
    return std::holds_alternative<JsonArray>(v) ? std::get<JsonArray>(v) : none;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse() {
    Json j = value();
    ws();
    if (i_ != s_.size()) fail("text after the value");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at byte " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c == '\\') {
        if (i_ >= s_.size()) fail("unexpected end");
        char e = s_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u':
            if (i_ + 4 > s_.size()) fail("short \\u escape");
            out += static_cast<char>(std::stoi(s_.substr(i_, 4), nullptr, 16));
            i_ += 4;
            break;
          default: fail("bad escape");
        }
      } else {
        out += c;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Json value() {
    const char c = peek();
    Json j;
    if (c == '{') {
      ++i_;
      JsonObject o;
      if (peek() == '}') {
        ++i_;
      } else {
        for (;;) {
          std::string k = string();
          expect(':');
          o[k] = value();
          if (peek() == ',') {
            ++i_;
            continue;
          }
          expect('}');
          break;
        }
      }
      j.v = std::move(o);
    } else if (c == '[') {
      ++i_;
      JsonArray a;
      if (peek() == ']') {
        ++i_;
      } else {
        for (;;) {
          a.push_back(value());
          if (peek() == ',') {
            ++i_;
            continue;
          }
          expect(']');
          break;
        }
      }
      j.v = std::move(a);
    } else if (c == '"') {
      j.v = string();
    } else if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      j.v = true;
    } else if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      j.v = false;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
      j.v = nullptr;
    } else {
      std::size_t used = 0;
      const double d = std::stod(s_.substr(i_, 40), &used);
      if (used == 0) fail("not a value");
      i_ += used;
      j.v = d;
    }
    return j;
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The trace's "X" events (complete events), and its thread names by tid.
struct Trace {
  std::vector<Json> events;
  std::map<int, std::string> threads;
  std::vector<const Json*> of(const std::string& cat) const {
    std::vector<const Json*> out;
    for (const Json& e : events) {
      if (e["cat"].str() == cat) out.push_back(&e);
    }
    return out;
  }
};

Trace read_trace(const fs::path& p) {
  const std::string text = read_file(p);
  REQUIRE_MESSAGE(!text.empty(), "no trace at " << p.string());
  Json j;
  REQUIRE_NOTHROW(j = JsonParser(text).parse());
  Trace t;
  for (const Json& e : j["traceEvents"].arr()) {
    if (e["ph"].str() == "M" && e["name"].str() == "thread_name") {
      t.threads[static_cast<int>(e["tid"].num())] = e["args"]["name"].str();
    }
    if (e["ph"].str() == "X") t.events.push_back(e);
  }
  return t;
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("aj_profile_" + std::to_string(::getpid()) + "_" + name);
}

// Whether a lies within b (a child of b on one thread).
bool inside(const Json& a, const Json& b) {
  return a["tid"].num() == b["tid"].num() && a["ts"].num() >= b["ts"].num() - 0.001 &&
         a["ts"].num() + a["dur"].num() <= b["ts"].num() + b["dur"].num() + 0.002;
}

std::vector<float> ramp(int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) * 0.5f;
  return v;
}

}  // namespace

TEST_CASE("profile: a known program's trace parses, with its kernels, ops, lines, bytes, compiles and plans") {
  const fs::path path = temp_path("known.json");
  aj::Array x = aj::from_vector(ramp(100000));
  x.eval();
  aj::jit::clear_memory_cache();  // the kernel is compiled (or read from disk) inside the profile
  int line = 0;
  {
    aj::profile p(path.string());
    for (int i = 0; i < 3; ++i) {
      aj::Array s = aj::sum(aj::exp(x * 0.25f) + x); line = __LINE__;
      s.eval();
    }
    CHECK(p.recording());
  }
  const Trace t = read_trace(path);
  const std::string where = "test_profile.cpp:" + std::to_string(line);

  // Three launches of the one fused kernel, each its plan's only step.
  const auto kernels = t.of("kernel");
  REQUIRE(kernels.size() == 3);
  for (const Json* k : kernels) {
    CHECK((*k)["name"].str() == "mul+exp+add+sum");
    CHECK((*k)["args"]["ops"].str() == "mul exp add sum");
    CHECK((*k)["args"]["where"].str() == where);
    CHECK((*k)["args"]["step"].num() == 0);
    CHECK((*k)["args"]["device"].str() == "cpu");
    CHECK((*k)["args"]["shape"].str() == "[100000] reducing [0]");
    // x read once (400000 bytes), one f32 written.
    CHECK((*k)["args"]["bytes"].num() == 400004);
    CHECK((*k)["dur"].num() >= 0);
    CHECK((*k)["ts"].num() >= 0);
    CHECK((*k)["args"]["GB/s"].num() >= 0);
  }
  // Each inside its evaluation, as is each planning (one built, then hits of
  // the plan cache, or hits throughout when an earlier test planned it).
  const auto evals = t.of("eval");
  const auto plans = t.of("plan");
  REQUIRE(evals.size() == 3);
  REQUIRE(plans.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(inside(*kernels[i], *evals[i]));
    CHECK(inside(*plans[i], *evals[i]));
    CHECK((*plans[i])["ts"].num() <= (*kernels[i])["ts"].num());
  }
  CHECK((*plans[2])["name"].str() == "plan (cache hit)");
  // The kernel was compiled (or loaded from the disk cache) during the first
  // launch (a reduction split over threads: its parts too), on some thread.
  const auto compiles = t.of("compile");
  REQUIRE(compiles.size() >= 1);
  bool whole = false;
  for (const Json* c : compiles) {
    whole |= (*c)["name"].str().rfind("compile mul+exp+add", 0) == 0;
    CHECK(((*c)["args"]["how"].str() == "host kernel (LLVM)" || (*c)["args"]["how"].str() == "host kernel (disk cache)"));
    CHECK((*c)["ts"].num() >= (*evals[0])["ts"].num());
    CHECK((*c)["ts"].num() + (*c)["dur"].num() <= (*kernels[0])["ts"].num() + (*kernels[0])["dur"].num() + 0.002);
  }
  CHECK(whole);
  // The summary counts a compile made at the launch as compile time, not
  // the kernel's: its kernels line is the launches less the compiles inside.
  double launches = 0, inside_first = 0;
  for (const Json* k : kernels) launches += (*k)["dur"].num();
  for (const Json* c : compiles) {
    if (inside(*c, *kernels[0])) inside_first += (*c)["dur"].num();
  }
  const std::string table = aj::profile_summary();
  const std::size_t at = table.find("  kernels 3 (");
  REQUIRE(at != std::string::npos);
  const double kernels_ms = std::stod(table.substr(at + 13));
  CHECK(std::abs(kernels_ms - (launches - inside_first) / 1e3) < 0.002);
  // Every event's thread is named.
  for (const Json& e : t.events) CHECK(t.threads.count(static_cast<int>(e["tid"].num())) == 1);
  fs::remove(path);
}

TEST_CASE("profile: events() and the summary table count calls per kernel and place") {
  aj::Array x = aj::from_vector(ramp(4096));
  aj::Array m = aj::from_vector(ramp(64 * 64)).reshape({64, 64});
  aj::eval({x, m});
  int line_k = 0, line_mm = 0;
  aj::profile p;
  for (int i = 0; i < 4; ++i) {
    aj::Array y = x * 3.0f - 1.0f; line_k = __LINE__;
    aj::Array z = aj::matmul(m, m); line_mm = __LINE__;
    aj::eval({y, z});
  }
  p.stop();
  const std::vector<aj::ProfileEvent> ev = p.events();
  int kernels = 0, matmuls = 0;
  for (const aj::ProfileEvent& e : ev) {
    if (e.category == "kernel" && e.where == "test_profile.cpp:" + std::to_string(line_k)) {
      ++kernels;
      CHECK(e.ops == "mul sub");
      CHECK(e.bytes == 2 * 4096 * 4);
    }
    if (e.category == "library") {
      ++matmuls;
      CHECK(e.name == "matmul");
      CHECK(e.where == "test_profile.cpp:" + std::to_string(line_mm));
      CHECK(e.bytes == 3 * 64 * 64 * 4);
    }
  }
  CHECK(kernels == 4);
  CHECK(matmuls == 4);
  const std::string table = aj::profile_summary();
  CHECK(table == p.summary());
  CHECK(table.find("kernels and library steps by time") != std::string::npos);
  CHECK(table.find("% peak") != std::string::npos);
  CHECK(table.find("mul+sub (test_profile.cpp:" + std::to_string(line_k) + ")") != std::string::npos);
  CHECK(table.find("matmul (test_profile.cpp:" + std::to_string(line_mm) + ")") != std::string::npos);
  // The matmul's row: 4 calls.
  std::istringstream rows(table);
  bool found = false;
  for (std::string row; std::getline(rows, row);) {
    if (row.find("matmul (") == std::string::npos) continue;
    std::istringstream cols(row);
    double ms = 0, pct = 0;
    int calls = 0;
    cols >> ms >> pct >> calls;
    CHECK(calls == 4);
    CHECK(ms >= 0);
    found = true;
  }
  CHECK(found);
  CHECK(aj::profile_summary(1).find("top 1 of") != std::string::npos);
}

TEST_CASE("profile: with no profile recording nothing is kept, and a profile sees only its own span") {
  aj::Array x = aj::from_vector(ramp(1000));
  (x + 1.0f).eval();  // before: not recorded anywhere
  aj::profile p;
  (x * 2.0f).eval();
  p.stop();
  int kernels = 0;
  for (const aj::ProfileEvent& e : p.events()) {
    if (e.category == "kernel") {
      ++kernels;
      CHECK(e.ops == "mul");
    }
  }
  CHECK(kernels == 1);
  const std::size_t n = p.events().size();
  (x - 1.0f).eval();  // after: not in p
  CHECK(p.events().size() == n);
  for (const aj::ProfileEvent& e : p.events()) CHECK(e.ops != "sub");
}

TEST_CASE("profile: profiles and ranges nest") {
  const fs::path outer_path = temp_path("outer.json"), inner_path = temp_path("inner.json");
  aj::Array x = aj::from_vector(ramp(2000));
  x.eval();
  {
    aj::profile outer(outer_path.string());
    aj::profile_range a("step");
    (x + 1.0f).eval();
    {
      aj::profile inner(inner_path.string());
      aj::profile_range b("forward");
      (x * 5.0f).eval();
    }
    (x - 2.0f).eval();
  }
  const Trace o = read_trace(outer_path), i = read_trace(inner_path);
  CHECK(o.of("kernel").size() == 3);
  REQUIRE(i.of("kernel").size() == 1);
  CHECK((*i.of("kernel")[0])["name"].str() == "mul");
  const auto ranges = o.of("range");
  REQUIRE(ranges.size() == 2);
  const Json* step = ranges[0];
  const Json* forward = ranges[1];
  CHECK((*step)["name"].str() == "step");
  CHECK((*forward)["name"].str() == "forward");
  CHECK(inside(*forward, *step));
  for (const Json* k : o.of("kernel")) CHECK(inside(*k, *step));
  // The inner profile saw its own range, not the outer's (it began before).
  REQUIRE(i.of("range").size() == 1);
  CHECK((*i.of("range")[0])["name"].str() == "forward");
  fs::remove(outer_path);
  fs::remove(inner_path);
}

TEST_CASE("profile: events of several threads, each on its thread") {
  aj::profile p;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([t] {
      aj::Array x = aj::from_vector(ramp(500 + t));
      for (int i = 0; i < 5; ++i) (x * static_cast<float>(i) + 1.0f).eval();
    });
  }
  for (std::thread& th : threads) th.join();
  p.stop();
  std::map<std::uint32_t, int> per_thread;
  for (const aj::ProfileEvent& e : p.events()) {
    if (e.category == "kernel") ++per_thread[e.thread];
  }
  REQUIRE(per_thread.size() == 2);
  for (const auto& [tid, n] : per_thread) CHECK(n == 5);
  const Json j = JsonParser(p.trace_json()).parse();
  CHECK(j["traceEvents"].arr().size() >= 10);
}

TEST_CASE("profile: aj::compile's replays are profiled with the function's lines") {
  int line = 0;
  auto f = aj::compile([&](const aj::Array& a) { line = __LINE__; return aj::tanh(a) * 2.0f; });
  aj::Array x = aj::from_vector(ramp(3000));
  f(x).eval();  // traced
  aj::profile p;
  for (int i = 0; i < 3; ++i) f(x).eval();
  p.stop();
  int n = 0;
  for (const aj::ProfileEvent& e : p.events()) {
    if (e.category != "kernel") continue;
    ++n;
    CHECK(e.ops == "tanh mul");
    CHECK(e.where == "test_profile.cpp:" + std::to_string(line));
  }
  CHECK(n == 3);
}

TEST_CASE("profile: mistakes are clear errors") {
  const std::string bad = "/nonexistent-aj-dir/sub/trace.json";
  try {
    aj::profile p(bad);
    FAIL("an unwritable trace path was accepted");
  } catch (const aj::Error& e) {
    const std::string m = e.what();
    CHECK(m.find("cannot write the trace file " + bad) != std::string::npos);
    CHECK(m.find("test_profile.cpp") != std::string::npos);
  }
  aj::profile p;
  p.stop();
  CHECK(!p.recording());
  try {
    p.stop();
    FAIL("stopping twice was accepted");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("stopped already") != std::string::npos);
  }
  // C: an end without a begin, a pop without a push.
  CHECK(aj_profile_end() == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("no profile is recording") != std::string::npos);
  CHECK(aj_profile_range_pop() == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("no range is open") != std::string::npos);
  CHECK(aj_profile_begin(bad.c_str()) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("cannot write the trace file") != std::string::npos);
  CHECK(aj_profile_range_push(nullptr) == AJ_ERROR_USER);
}

TEST_CASE("profile: the C functions record, write and summarize") {
  const fs::path path = temp_path("c.json");
  aj_array x{0}, y{0};
  const float data[4] = {1, 2, 3, 4};
  const std::int64_t shape[1] = {4};
  REQUIRE(aj_array_from_data(data, AJ_F32, shape, 1, &x) == AJ_OK);
  REQUIRE(aj_profile_begin(path.c_str()) == AJ_OK);
  REQUIRE(aj_profile_range_push("c range") == AJ_OK);
  REQUIRE(aj_exp(x, &y) == AJ_OK);
  REQUIRE(aj_eval(y) == AJ_OK);
  REQUIRE(aj_profile_range_pop() == AJ_OK);
  REQUIRE(aj_profile_end() == AJ_OK);
  const Trace t = read_trace(path);
  REQUIRE(t.of("kernel").size() == 1);
  CHECK((*t.of("kernel")[0])["name"].str() == "exp");
  REQUIRE(t.of("range").size() == 1);
  CHECK((*t.of("range")[0])["name"].str() == "c range");
  CHECK(inside(*t.of("kernel")[0], *t.of("range")[0]));
  std::size_t len = 0;
  REQUIRE(aj_profile_summary(10, nullptr, 0, &len) == AJ_OK);
  std::string text(len + 1, '\0');
  REQUIRE(aj_profile_summary(10, text.data(), text.size(), &len) == AJ_OK);
  text.resize(len);
  CHECK(text == aj::profile_summary(10));
  CHECK(text.find("exp") != std::string::npos);
  aj_array_release(x);
  aj_array_release(y);
  fs::remove(path);
}

// Runs only as the child of the next test (AJ_TRACE is read when the library loads).
TEST_CASE("profile child process") {
  if (!std::getenv("AJ_PROFILE_CHILD")) return;
  aj::Array x = aj::from_vector(ramp(700));
  (aj::sqrt(x) + 1.0f).eval();
}

TEST_CASE("profile: AJ_TRACE=file records the whole process and writes it at exit") {
  const fs::path path = temp_path("env.json");
  fs::remove(path);
  char exe[4096];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  exe[len] = 0;
  const std::string cmd = "AJ_PROFILE_CHILD=1 AJ_TRACE='" + path.string() + "' '" + exe +
                          "' --no-intro --no-version --test-case='profile child process' > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const Trace t = read_trace(path);
  bool found = false;
  for (const Json* k : t.of("kernel")) found |= (*k)["name"].str() == "sqrt+add";
  CHECK(found);
  // A path that cannot be written: said on stderr, the program runs on.
  const std::string bad = "AJ_PROFILE_CHILD=1 AJ_TRACE=/nonexistent-aj-dir/t.json '" + std::string(exe) +
                          "' --no-intro --no-version --test-case='profile child process' 2>&1 >/dev/null";
  std::FILE* pipe = ::popen(bad.c_str(), "r");
  REQUIRE(pipe);
  std::string err;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) err += buf;
  CHECK(::pclose(pipe) == 0);
  CHECK(err.find("AJ_TRACE") != std::string::npos);
  CHECK(err.find("cannot write the trace file") != std::string::npos);
  fs::remove(path);
}

TEST_CASE("profile: CUDA kernels and transfers (fake driver)") {
  ajtest::fake_cuda::FakeGpu gpu;
  aj::Array x = aj::from_vector(ramp(1024));
  aj::profile p;
  aj::Array d = x.to(aj::Device::cuda(0));
  aj::Array y = aj::exp(d) * 2.0f;
  const std::vector<float> back = y.to_vector<float>();
  p.stop();
  CHECK(back.size() == 1024);
  int kernels = 0, up = 0, down = 0;
  for (const aj::ProfileEvent& e : p.events()) {
    if (e.category == "kernel") {
      ++kernels;
      CHECK(e.device == "cuda:0");
      CHECK(e.ops == "exp mul");
    }
    if (e.category == "transfer") {
      CHECK(e.bytes == 4096);
      up += e.detail == "host to device";
      down += e.detail == "device to host";
    }
  }
  CHECK(kernels == 1);
  CHECK(up >= 1);
  CHECK(down == 1);
  CHECK(p.summary().find("[cuda:0]") != std::string::npos);
}

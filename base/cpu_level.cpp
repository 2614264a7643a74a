#include "base/cpu_level.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "arrayjit/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace aj::cpu {

namespace {

constexpr const char* kNames[] = {"baseline", "avx", "avx2", "avx512"};

IsaLevel detect() {
#if defined(__x86_64__) || defined(__i386__)
  // GCC's and Clang's checks include the operating system's consent (XCR0)
  // to the YMM and ZMM state, not only CPUID's bits.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma")) {
    return IsaLevel::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return IsaLevel::avx2;
  if (__builtin_cpu_supports("avx")) return IsaLevel::avx;
#endif
  return IsaLevel::baseline;
}

struct Chosen {
  IsaLevel level = IsaLevel::baseline;
  bool forced = false;
  std::string error;  // a bad AJ_CPU_LEVEL, reported at each use
};

Chosen choose() {
  Chosen c;
  c.level = detected_level();
  const char* v = std::getenv("AJ_CPU_LEVEL");
  if (!v || !*v) return c;
  const std::optional<IsaLevel> want = parse_level(v);
  if (!want) {
    c.error = std::string("AJ_CPU_LEVEL=") + v + ": not a level; use baseline, avx, avx2 or avx512";
  } else if (*want > c.level) {
    c.error = std::string("AJ_CPU_LEVEL=") + v + ": this CPU's level is " + level_name(c.level) +
              " (it can run lower levels' code, not higher ones')";
  } else {
    c.level = *want;
    c.forced = true;
  }
  return c;
}

const Chosen& chosen() {
  static const Chosen c = choose();
  if (!c.error.empty()) runtime_error(c.error);
  return c;
}

}  // namespace

const char* level_name(IsaLevel l) { return kNames[static_cast<int>(l)]; }

std::optional<IsaLevel> parse_level(const std::string& name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) return static_cast<IsaLevel>(i);
  }
  return std::nullopt;
}

IsaLevel detected_level() {
  static const IsaLevel l = detect();
  return l;
}

IsaLevel level() { return chosen().level; }
bool level_forced() { return chosen().forced; }

std::string level_description() {
  return std::string(level_name(level())) +
         (level_forced() ? std::string(" (set by AJ_CPU_LEVEL; the CPU's is ") + level_name(detected_level()) + ")"
                         : std::string(" (the CPU's)"));
}

const std::string& cpu_model() {
  static const std::string model = [] {
    std::string s;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
      char buf[49] = {};
      for (unsigned i = 0; i < 3; ++i) {
        __get_cpuid(0x80000002u + i, &a, &b, &c, &d);
        std::memcpy(buf + 16 * i, &a, 4);
        std::memcpy(buf + 16 * i + 4, &b, 4);
        std::memcpy(buf + 16 * i + 8, &c, 4);
        std::memcpy(buf + 16 * i + 12, &d, 4);
      }
      s = buf;
      const auto first = s.find_first_not_of(' ');
      const auto last = s.find_last_not_of(' ');
      s = first == std::string::npos ? "" : s.substr(first, last - first + 1);
    }
#endif
    return s;
  }();
  return model;
}

std::string cap_llvm_features(const std::string& host_features, IsaLevel level) {
  // The roots switched off above each level; LLVM clears what implies them.
  std::vector<std::string> off;
  if (level < IsaLevel::avx512) {
    off.insert(off.end(), {"avx512f", "amx-tile", "avxvnni", "avxifma", "avxvnniint8", "avxneconvert"});
  }
  if (level < IsaLevel::avx2) off.insert(off.end(), {"avx2", "fma", "fma4", "xop", "f16c", "vaes", "vpclmulqdq"});
  if (level < IsaLevel::avx) {
    off.insert(off.end(), {"avx", "sse3", "popcnt", "bmi", "bmi2", "lzcnt", "movbe", "adx", "sha"});
  }
  // Dropped from the host's list too (so that the string printed says what
  // runs): the roots and the families that depend on them.
  std::vector<std::string> families;
  if (level < IsaLevel::avx512) families.insert(families.end(), {"avx512", "amx", "avx10"});
  if (level < IsaLevel::avx2) families.insert(families.end(), {"avxvnni", "avxifma", "avxneconvert"});
  if (level < IsaLevel::avx) families.insert(families.end(), {"avx", "sse4", "ssse3"});
  auto is_off = [&](const std::string& f) {
    for (const std::string& o : off) {
      if (f == o) return true;
    }
    for (const std::string& p : families) {
      if (f.compare(0, p.size(), p) == 0) return true;
    }
    return false;
  };
  // The host's flags, less those named off, then the "-" flags last: a flag
  // later in the string wins, and "+avx512bw" after "-avx512f" would turn
  // AVX-512 back on.
  std::string out;
  std::stringstream in(host_features);
  for (std::string flag; std::getline(in, flag, ',');) {
    if (flag.size() < 2 || (flag[0] == '+' && is_off(flag.substr(1)))) continue;
    if (flag[0] == '-' && is_off(flag.substr(1))) continue;
    out += (out.empty() ? "" : ",") + flag;
  }
  for (const std::string& o : off) out += (out.empty() ? "-" : ",-") + o;
  return out;
}

bool llvm_feature_on(const std::string& features, const std::string& name) {
  bool on = false;
  std::stringstream in(features);
  for (std::string flag; std::getline(in, flag, ',');) {
    if (flag.size() == name.size() + 1 && flag.compare(1, std::string::npos, name) == 0) on = flag[0] == '+';
  }
  return on;
}

}  // namespace aj::cpu

#include "base/log.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>

extern char** environ;  // POSIX (unistd.h declares it only under _GNU_SOURCE)

namespace aj::detail {

namespace {

constexpr const char* kChannels[] = {"plan", "program", "compile", "jit", "passes", "graph", "buffers", "ir", "asm", "cuda", "all"};

std::mutex& mu() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::string& api_channels() {
  static std::string* s = new std::string;
  return *s;
}
// Whether api_channels() is not empty, read without the lock (log_any runs
// on every evaluation).
std::atomic<bool> g_api_set{false};

bool lists(const std::string& list, const char* channel) {
  if (list.empty()) return false;
  const std::string s = "," + list + ",";
  return s.find(std::string(",") + channel + ",") != std::string::npos || s.find(",all,") != std::string::npos;
}

// Says once per process which names in a channel list are not channels.
void check_names(const std::string& list, const char* from) {
  static std::atomic<bool> said{false};  // once per process: this runs at every log check
  if (said.load(std::memory_order_relaxed)) return;
  std::stringstream ss(list);
  for (std::string name; std::getline(ss, name, ',');) {
    bool known = name.empty();
    for (const char* c : kChannels) known |= name == c;
    if (known) continue;
    if (said.exchange(true)) return;
    std::cerr << "[aj] " << from << ": unknown log channel '" << name << "'; valid:";
    for (const char* c : kChannels) std::cerr << ' ' << c;
    std::cerr << '\n';
    return;
  }
}

// AJ_LOG and AJ_DUMP as they are now (tests set them while running); an
// unknown name is reported once.
std::string env_channels() {
  std::string all;
  for (const char* var : {"AJ_LOG", "AJ_DUMP"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    check_names(v, var);
    all += std::string(all.empty() ? "" : ",") + v;
  }
  return all;
}

}  // namespace

bool log_enabled(const char* channel) {
  if (lists(env_channels(), channel)) return true;
  std::lock_guard lock(mu());
  return lists(api_channels(), channel);
}

bool log_any() {
  if (g_api_set.load(std::memory_order_acquire)) return true;
  // One pass over the environment for AJ_LOG and AJ_DUMP (two getenv calls
  // were two passes, on every evaluation). Read each time, not once: a
  // program (or Python's os.environ) may set them while it runs.
  for (char** e = environ; e && *e; ++e) {
    const char* v = *e;
    if (v[0] != 'A' || v[1] != 'J' || v[2] != '_') continue;
    if (std::strncmp(v + 3, "LOG=", 4) == 0 && v[7]) return true;
    if (std::strncmp(v + 3, "DUMP=", 5) == 0 && v[8]) return true;
  }
  return false;
}

void log(const char* channel, const std::string& text) {
  if (!log_enabled(channel)) return;
  std::lock_guard lock(mu());
  std::cerr << "[aj:" << channel << "] " << text;
  if (!text.empty() && text.back() != '\n') std::cerr << "\n";
  std::cerr.flush();
}

void set_log_channels(const std::string& channels) {
  check_names(channels, "aj::set_log");
  std::lock_guard lock(mu());
  api_channels() = channels;
  g_api_set.store(!channels.empty(), std::memory_order_release);
}

}  // namespace aj::detail

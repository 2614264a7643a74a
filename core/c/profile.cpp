// The profiler for C callers (arrayjit.h, "profiler"): aj::profile and
// aj::profile_range behind begin/end and push/pop calls.
#include <memory>
#include <mutex>
#include <vector>

#include "arrayjit/profile.hpp"
#include "core/c/boundary.hpp"

using namespace aj::c_api;

namespace {

// Profiles begun from C, innermost last; any thread may end the last one.
std::mutex g_mu;
std::vector<std::unique_ptr<aj::profile>>& begun() {
  static auto* v = new std::vector<std::unique_ptr<aj::profile>>;  // never destroyed: ended at exit or not
  return *v;
}

// This thread's open ranges, innermost last.
thread_local std::vector<std::unique_ptr<aj::profile_range>> t_ranges;

}  // namespace

extern "C" {

aj_status aj_profile_begin(const char* trace_path) {
  return c_call("aj_profile_begin", [&] {
    auto p = std::make_unique<aj::profile>(trace_path ? trace_path : "");
    std::lock_guard lock(g_mu);
    begun().push_back(std::move(p));
  });
}

aj_status aj_profile_end(void) {
  return c_call("aj_profile_end", [&] {
    std::unique_ptr<aj::profile> p;
    {
      std::lock_guard lock(g_mu);
      if (begun().empty()) c_error("no profile is recording (none begun with aj_profile_begin, or all ended)");
      p = std::move(begun().back());
      begun().pop_back();
    }
    p->stop();  // writes the trace; an error here is the caller's to see
  });
}

aj_status aj_profile_summary(size_t top, char* buf, size_t cap, size_t* len) {
  return c_call("aj_profile_summary", [&] { give_text(aj::profile_summary(top), buf, cap, len); });
}

aj_status aj_profile_range_push(const char* name) {
  return c_call("aj_profile_range_push", [&] {
    if (!name) c_error("null range name");
    t_ranges.push_back(std::make_unique<aj::profile_range>(name));
  });
}

aj_status aj_profile_range_pop(void) {
  return c_call("aj_profile_range_pop", [&] {
    if (t_ranges.empty()) c_error("no range is open on this thread (a pop without its push)");
    t_ranges.pop_back();
  });
}

}  // extern "C"

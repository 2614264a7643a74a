// base/caller_loc.hpp. A std::source_location cannot be made from run-time
// text through its interface, but its layout is fixed by the compilers'
// __builtin_source_location (GCC and Clang require std::source_location to
// hold one pointer to a struct of exactly these four fields), so an interned
// struct of that layout is one.
#include "base/caller_loc.hpp"

#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace aj::detail {

namespace {

struct LocImpl {  // std::source_location::__impl's layout
  const char* file_name;
  const char* function_name;
  unsigned line;
  unsigned column;
};
static_assert(sizeof(Loc) == sizeof(const LocImpl*), "std::source_location is not one pointer here");

struct Interned {
  std::string file;
  LocImpl impl{};
  Loc loc;
};

std::mutex intern_mutex;
// (file, line) -> its location; never freed (bounded by the caller's call sites).
std::map<std::pair<std::string, std::int64_t>, std::unique_ptr<Interned>>& interned() {
  static auto* m = new std::map<std::pair<std::string, std::int64_t>, std::unique_ptr<Interned>>();
  return *m;
}

thread_local const Loc* t_caller = nullptr;
thread_local int t_depth = 0;

}  // namespace

void set_caller_loc(const char* file, std::int64_t line) {
  if (!file) {
    t_caller = nullptr;
    return;
  }
  std::lock_guard lock(intern_mutex);
  auto key = std::make_pair(std::string(file), line);
  auto& slot = interned()[key];
  if (!slot) {
    slot = std::make_unique<Interned>();
    slot->file = key.first;
    slot->impl = LocImpl{slot->file.c_str(), "", static_cast<unsigned>(line < 0 ? 0 : line), 0};
    slot->loc = std::bit_cast<Loc>(static_cast<const LocImpl*>(&slot->impl));
  }
  t_caller = &slot->loc;
}

const Loc* caller_loc_override() noexcept { return t_depth > 0 ? t_caller : nullptr; }

const Loc& effective_loc(const Loc& loc) noexcept {
  const Loc* o = caller_loc_override();
  if (!o) return loc;
  const std::string_view file = loc.file_name();
  // Sources compile with their path as given to the compiler: ".../core/c/ops.cpp".
  // (An empty location, one nothing recorded, is the caller's too.)
  const bool boundary =
      file.empty() || file.find("/core/c/") != std::string_view::npos || file.rfind("core/c/", 0) == 0;
  return boundary ? *o : loc;
}

CallerScope::CallerScope() noexcept { ++t_depth; }
CallerScope::~CallerScope() { --t_depth; }

}  // namespace aj::detail

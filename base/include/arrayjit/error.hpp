// aj::Error: the one exception type, in three kinds.
//   user     - a mistake in the caller's code, thrown at trace time with the
//              caller's file:line (std::source_location)
//   internal - a bug in arrayjit: the message says so
//   runtime  - out of memory, compile failure, device error
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace aj {

using Loc = std::source_location;

class Error : public std::runtime_error {
 public:
  enum class Kind { user, internal, runtime };
  Error(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// "file.cpp:12" with the directory stripped.
std::string loc_str(const Loc& loc);

// Throw a located user error: "aj::<op>: <msg> (at file.cpp:12)".
[[noreturn]] void user_error(const char* op, const std::string& msg, const Loc& loc);
[[noreturn]] void internal_error(const std::string& msg);
[[noreturn]] void runtime_error(const std::string& msg);

namespace detail {
// What public ops do with std::bad_alloc from tracing, compiling or copying
// out: a runtime error "aj::<op>: out of memory ... (at file.cpp:12)".
[[noreturn]] void out_of_memory(const char* op, const Loc& loc);
// An allocator's refusal, a runtime Error "aj: <reason>" ("out of host
// memory allocating N bytes (...)"): the evaluating entry points (aj::eval
// and what calls it, compiled calls) rethrow it as theirs, with the caller's
// line and the reason.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(std::string reason) : Error(Kind::runtime, "aj: " + reason), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};
// `e` as op's error at `loc`: "aj::<op>: out of host memory ...; arrays made
// before are unchanged (at file.cpp:12)".
[[noreturn]] void rethrow_out_of_memory(const OutOfMemory& e, const char* op, const Loc& loc);
}  // namespace detail

}  // namespace aj

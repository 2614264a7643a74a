// The C API's side of the boundary: every aj_* function runs its body through
// c_call, so no C++ exception crosses into C; the message is kept per thread
// for aj_last_error().
#pragma once

#include <new>
#include <string>

#include "arrayjit/arrayjit.h"
#include "arrayjit/error.hpp"

namespace aj::c_api {

void set_last_error(const std::string& what);

template <class Body>
aj_status c_call(const char* fn, Body&& body) noexcept {
  try {
    body();
    return AJ_OK;
  } catch (const Error& e) {
    set_last_error(std::string(fn) + ": " + e.what());
    switch (e.kind()) {
      case Error::Kind::user: return AJ_ERROR_USER;
      case Error::Kind::runtime: return AJ_ERROR_RUNTIME;
      case Error::Kind::internal: return AJ_ERROR_INTERNAL;
    }
    return AJ_ERROR_INTERNAL;
  } catch (const std::bad_alloc&) {
    set_last_error(std::string(fn) + ": out of memory");
    return AJ_ERROR_RUNTIME;
  } catch (const std::exception& e) {
    set_last_error(std::string(fn) + ": internal error: " + e.what());
    return AJ_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(std::string(fn) + ": internal error: unknown exception");
    return AJ_ERROR_INTERNAL;
  }
}

// A user error for a C caller (c_call puts the function's name first).
[[noreturn]] void c_error(const std::string& msg);

}  // namespace aj::c_api

// The C API's side of the boundary: every aj_* function runs its body through
// c_call, so no C++ exception crosses into C; the message is kept per thread
// for aj_last_error().
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "arrayjit/arrayjit.h"
#include "arrayjit/error.hpp"
#include "base/caller_loc.hpp"
#include "core/c/handles.hpp"

namespace aj::c_api {

// `fn`: what_text, without the "(at c/ops.cpp:12)" an op appends: for a C
// caller that line is inside arrayjit, not in its code.
void set_last_error(const char* fn, const char* what);
void clear_last_error();

// A user error for a C caller (c_call puts the function's name first).
[[noreturn]] void c_error(const std::string& msg);

// Text handed to C by snprintf's rule (arrayjit.h, aj_array_to_string): at
// most cap - 1 bytes and a NUL into buf; *len (when len is not null) the
// full length.
void give_text(const std::string& text, char* buf, std::size_t cap, std::size_t* len);

template <class Body>
aj_status c_call(const char* fn, Body&& body) noexcept {
  const aj::detail::CallerScope caller;  // ops made now name the caller's line (aj_set_caller)
  try {
    body();
    return AJ_OK;
  } catch (const StatusError& e) {
    set_last_error(fn, e.what());
    return e.status;
  } catch (const Error& e) {
    set_last_error(fn, e.what());
    switch (e.kind()) {
      case Error::Kind::user: return AJ_ERROR_USER;
      case Error::Kind::runtime: return AJ_ERROR_RUNTIME;
      case Error::Kind::internal: return AJ_ERROR_INTERNAL;
    }
    return AJ_ERROR_INTERNAL;
  } catch (const std::bad_alloc&) {
    set_last_error(fn, "out of memory");
    return AJ_ERROR_RUNTIME;
  } catch (const std::exception& e) {
    set_last_error(fn, (std::string("internal error: ") + e.what()).c_str());
    return AJ_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(fn, "internal error: unknown exception");
    return AJ_ERROR_INTERNAL;
  }
}

// c_call for a function with a handle out-parameter: *out is nulled first (so
// it is null on every failure), then set to a new handle for what `make`
// returns (an Array or an ArrayRef).
template <class Make>
aj_status c_make(const char* fn, aj_array* out, Make&& make) noexcept {
  if (out) *out = aj_array{0};
  return c_call(fn, [&] {
    if (!out) throw Error(Error::Kind::user, "null output pointer");
    Reservation slot;  // first: once the array exists, nothing may fail
    *out = slot.fill(make());
  });
}

// c_make for functions with several results: outs[0..n) nulled first, then
// every handle reserved before any result exists, so either all are written
// or (on an error) none.
template <class Make>
aj_status c_make_many(const char* fn, aj_array* outs, std::int64_t n, Make&& make) noexcept {
  if (outs) {
    for (std::int64_t i = 0; i < n; ++i) outs[i] = aj_array{0};
  }
  return c_call(fn, [&] {
    if (!outs && n > 0) throw Error(Error::Kind::user, "null output list");
    std::vector<Array> r = make();
    if (static_cast<std::int64_t>(r.size()) != n) {
      c_error("makes " + std::to_string(r.size()) + " arrays, the output list holds " + std::to_string(n));
    }
    std::unique_ptr<Reservation[]> slots(new Reservation[static_cast<std::size_t>(n)]);
    for (std::int64_t i = 0; i < n; ++i) outs[i] = slots[static_cast<std::size_t>(i)].fill(std::move(r[static_cast<std::size_t>(i)]));
  });
}

// The argument readers every C function shares; each bad argument is a user
// error naming it.
// The array of handle argument `name`.
inline Array arg(aj_array h, const char* name) { return get_array(h, name).array; }
// A C list of n values (a null pointer only with n = 0).
template <class T>
std::vector<T> list_arg(const T* v, std::int64_t n, const char* what) {
  if (n < 0) c_error(std::string("negative length ") + std::to_string(n) + " of " + what);
  if (!v && n > 0) c_error(std::string("null ") + what + " with length " + std::to_string(n));
  return std::vector<T>(v, v + n);
}
// A list of axes or other ints.
inline std::vector<int> ints_arg(const std::int32_t* v, std::int32_t n, const char* what) {
  const std::vector<std::int32_t> a = list_arg(v, n, what);
  return std::vector<int>(a.begin(), a.end());
}
// A C axis list (NULL: all axes, whatever naxes says; see arrayjit.h).
inline Axes axes_arg(const std::int32_t* axes, std::int32_t naxes) {
  if (!axes) return Axes::all();
  if (naxes < 0) c_error("negative number of axes " + std::to_string(naxes));
  return Axes(std::vector<int>(axes, axes + naxes));
}
// A C list of n array handles.
inline std::vector<Array> arrays_arg(const aj_array* xs, std::size_t n) {
  if (!xs && n > 0) c_error("null array list with n " + std::to_string(n));
  std::vector<Array> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(get_array(xs[i], "an array of the list").array);
  return out;
}

// The DType of a C dtype code; an unknown code is a user error naming `what`.
DType dtype_arg(int code, const char* what);

// The C device type (aj_device_type_code) of an array's memory: what
// aj_array_device and aj_view_acquire report.
aj_device_type device_code(Device::Kind k);

// The shape (ndim, extents) a C caller passed: a null pointer with ndim > 0
// or a negative ndim is a user error.
Shape shape_arg(const std::int64_t* shape, std::int32_t ndim, const char* what = "shape");

// Evaluation and reading values are refused while an aj_function's callback
// is being traced on this thread (core/c/function.cpp).
void check_not_tracing(const char* fn);

}  // namespace aj::c_api

// The C API's DLPack calls (arrayjit/dlpack.h) over the C++ ones
// (arrayjit/dlpack.hpp, core/interop/dlpack.cpp).
#include "arrayjit/dlpack.h"
#include "arrayjit/dlpack.hpp"
#include "core/c/boundary.hpp"

using aj::c_api::c_call;
using aj::c_api::c_error;
using aj::c_api::c_make;

extern "C" {

aj_status aj_to_dlpack_versioned(aj_array a, void* stream, DLManagedTensorVersioned** out) {
  if (out) *out = nullptr;
  return c_call("aj_to_dlpack_versioned", [&] {
    aj::c_api::check_not_tracing("aj_to_dlpack_versioned");
    if (!out) c_error("null output pointer");
    *out = aj::to_dlpack_versioned(aj::c_api::get_array(a, "the array").array, stream);
  });
}

aj_status aj_to_dlpack(aj_array a, void* stream, DLManagedTensor** out) {
  if (out) *out = nullptr;
  return c_call("aj_to_dlpack", [&] {
    aj::c_api::check_not_tracing("aj_to_dlpack");
    if (!out) c_error("null output pointer");
    *out = aj::to_dlpack(aj::c_api::get_array(a, "the array").array, stream);
  });
}

aj_status aj_from_dlpack_versioned(DLManagedTensorVersioned* t, aj_array* out) {
  return c_make("aj_from_dlpack_versioned", out, [&] { return aj::from_dlpack(t); });
}

aj_status aj_from_dlpack(DLManagedTensor* t, aj_array* out) {
  return c_make("aj_from_dlpack", out, [&] { return aj::from_dlpack(t); });
}

}  // extern "C"

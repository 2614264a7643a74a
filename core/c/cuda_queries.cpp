// What CUDA there is, for C callers (arrayjit/arrayjit.h, "CUDA: what there
// is"; arrayjit/cuda.hpp), and einsum's contraction order as text.
#include <string>
#include <vector>

#include "arrayjit/cuda.hpp"
#include "arrayjit/einsum.hpp"
#include "core/c/boundary.hpp"

using namespace aj::c_api;

extern "C" {

int aj_cuda_available(void) {
  try {
    return aj::cuda::available() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int aj_cuda_device_count(void) {
  try {
    return aj::cuda::device_count();
  } catch (...) {
    return 0;
  }
}

aj_status aj_cuda_unavailable_reason(char* buf, size_t cap, size_t* len) {
  return c_call("aj_cuda_unavailable_reason", [&] { give_text(aj::cuda::unavailable_reason(), buf, cap, len); });
}

int aj_cuda_compiler_available(void) {
  try {
    return aj::cuda::compiler_available() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

aj_status aj_cuda_compiler_reason(char* buf, size_t cap, size_t* len) {
  return c_call("aj_cuda_compiler_reason", [&] { give_text(aj::cuda::compiler_reason(), buf, cap, len); });
}

aj_status aj_cuda_kernel_source(const aj_array* arrays, size_t n, char* buf, size_t cap, size_t* len) {
  return c_call("aj_cuda_kernel_source", [&] {
    if (n == 0) c_error("no arrays");
    give_text(aj::cuda::kernel_source(arrays_arg(arrays, n)), buf, cap, len);
  });
}

aj_status aj_cuda_trim_memory(int32_t device) {
  return c_call("aj_cuda_trim_memory", [&] { aj::cuda::trim_memory(device); });
}

aj_status aj_cuda_release_borrowed(int wait) {
  return c_call("aj_cuda_release_borrowed", [&] { aj::cuda::release_borrowed(wait != 0); });
}

aj_status aj_einsum_path(const char* subscripts, const int64_t* const* shapes, const int32_t* ndims, size_t n,
                         int32_t* steps, char* buf, size_t cap, size_t* len) {
  return c_call("aj_einsum_path", [&] {
    if (!subscripts) c_error("null subscripts");
    if (n > 0 && (!shapes || !ndims)) c_error("null shapes or ndims with n " + std::to_string(n));
    std::vector<aj::Shape> s;
    for (size_t i = 0; i < n; ++i) {
      const std::string what = "shape " + std::to_string(i);
      s.push_back(shape_arg(shapes[i], ndims[i], what.c_str()));
    }
    const aj::EinsumPath p = aj::einsum_path(subscripts, s);
    if (steps) {
      for (std::size_t k = 0; k < p.steps.size(); ++k) {
        steps[2 * k] = p.steps[k].first;
        steps[2 * k + 1] = p.steps[k].second;
      }
    }
    give_text(p.str(), buf, cap, len);
  });
}

}  // extern "C"

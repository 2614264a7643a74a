// The C API's shape functions (arrayjit/arrayjit.h, "NumPy's shape
// functions"): each is the C++ function of arrayjit/shape_functions.hpp
// behind c_make (one result) or c_make_many (several: all or none written).
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/arrayjit.hpp"
#include "arrayjit/einsum.hpp"
#include "arrayjit/shape_functions.hpp"
#include "core/c/boundary.hpp"

using namespace aj::c_api;
using aj::Array;

extern "C" {

aj_status aj_flip(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out) {
  return c_make("aj_flip", out, [&] {
    return aj::flip(arg(x, "x"), axes ? aj::Axes(ints_arg(axes, naxes, "axes")) : aj::Axes::all());
  });
}
aj_status aj_swapaxes(aj_array x, int32_t axis1, int32_t axis2, aj_array* out) {
  return c_make("aj_swapaxes", out, [&] { return aj::swapaxes(arg(x, "x"), axis1, axis2); });
}
aj_status aj_moveaxis(aj_array x, const int32_t* source, const int32_t* destination, int32_t n, aj_array* out) {
  return c_make("aj_moveaxis", out, [&] {
    return aj::moveaxis(arg(x, "x"), ints_arg(source, n, "source"), ints_arg(destination, n, "destination"));
  });
}
aj_status aj_tile(aj_array x, const int64_t* reps, int32_t nreps, aj_array* out) {
  return c_make("aj_tile", out, [&] { return aj::tile(arg(x, "x"), list_arg(reps, nreps, "reps")); });
}
aj_status aj_repeat(aj_array x, const int64_t* repeats, int64_t nrepeats, const int32_t* axis, aj_array* out) {
  return c_make("aj_repeat", out, [&] {
    const std::vector<std::int64_t> r = list_arg(repeats, nrepeats, "repeats");
    if (r.empty()) c_error("needs at least one count");
    return aj::repeat(arg(x, "x"), r, axis ? std::optional<int>(*axis) : std::nullopt);
  });
}
aj_status aj_split(aj_array x, const int64_t* indices, int32_t nindices, int32_t axis, aj_array* outs) {
  return c_make_many("aj_split", outs, nindices < 0 ? 0 : nindices + 1, [&] {
    return aj::split(arg(x, "x"), list_arg(indices, nindices, "indices"), axis);
  });
}
aj_status aj_array_split(aj_array x, int64_t sections, int32_t axis, aj_array* outs) {
  return c_make_many("aj_array_split", outs, sections < 0 ? 0 : sections, [&] {
    return aj::array_split(arg(x, "x"), sections, axis);
  });
}
aj_status aj_unstack(aj_array x, int32_t axis, aj_array* outs, int64_t nouts) {
  return c_make_many("aj_unstack", outs, nouts < 0 ? 0 : nouts, [&] { return aj::unstack(arg(x, "x"), axis); });
}
aj_status aj_broadcast_arrays(const aj_array* xs, size_t n, aj_array* outs) {
  return c_make_many("aj_broadcast_arrays", outs, static_cast<std::int64_t>(n),
                     [&] { return aj::broadcast_arrays(arrays_arg(xs, n)); });
}
aj_status aj_meshgrid(const aj_array* xs, size_t n, int ij, aj_array* outs) {
  return c_make_many("aj_meshgrid", outs, static_cast<std::int64_t>(n),
                     [&] { return aj::meshgrid(arrays_arg(xs, n), ij != 0); });
}
aj_status aj_tril(aj_array x, int64_t k, aj_array* out) {
  return c_make("aj_tril", out, [&] { return aj::tril(arg(x, "x"), k); });
}
aj_status aj_triu(aj_array x, int64_t k, aj_array* out) {
  return c_make("aj_triu", out, [&] { return aj::triu(arg(x, "x"), k); });
}
aj_status aj_diag(aj_array x, int64_t k, aj_array* out) {
  return c_make("aj_diag", out, [&] { return aj::diag(arg(x, "x"), k); });
}
aj_status aj_diagonal(aj_array x, int64_t offset, int32_t axis1, int32_t axis2, aj_array* out) {
  return c_make("aj_diagonal", out, [&] { return aj::diagonal(arg(x, "x"), offset, axis1, axis2); });
}
aj_status aj_trace(aj_array x, int64_t offset, int32_t axis1, int32_t axis2, aj_array* out) {
  return c_make("aj_trace", out, [&] { return aj::linalg::trace(arg(x, "x"), offset, axis1, axis2); });
}
aj_status aj_atleast_1d(aj_array x, aj_array* out) {
  return c_make("aj_atleast_1d", out, [&] { return aj::atleast_1d(arg(x, "x")); });
}
aj_status aj_atleast_2d(aj_array x, aj_array* out) {
  return c_make("aj_atleast_2d", out, [&] { return aj::atleast_2d(arg(x, "x")); });
}
aj_status aj_atleast_3d(aj_array x, aj_array* out) {
  return c_make("aj_atleast_3d", out, [&] { return aj::atleast_3d(arg(x, "x")); });
}
aj_status aj_logspace(double start, double stop, int64_t num, double base, aj_dtype dtype, aj_array* out) {
  return c_make("aj_logspace", out, [&] { return aj::logspace(start, stop, num, base, dtype_arg(dtype, "dtype")); });
}
#define AJ_DEFINE_PRODUCT_(name)                                                                   \
  aj_status aj_##name(aj_array a, aj_array b, aj_array* out) {                                     \
    return c_make("aj_" #name, out, [&] { return aj::name(arg(a, "a"), arg(b, "b")); });          \
  }
AJ_PRODUCT_OPS(AJ_DEFINE_PRODUCT_)
#undef AJ_DEFINE_PRODUCT_
aj_status aj_tensordot(aj_array a, aj_array b, const int32_t* a_axes, const int32_t* b_axes, int32_t n, aj_array* out) {
  return c_make("aj_tensordot", out, [&] {
    return aj::tensordot(arg(a, "a"), arg(b, "b"), ints_arg(a_axes, n, "a_axes"), ints_arg(b_axes, n, "b_axes"));
  });
}
aj_status aj_cross(aj_array a, aj_array b, int32_t axis, aj_array* out) {
  return c_make("aj_cross", out, [&] { return aj::cross(arg(a, "a"), arg(b, "b"), axis); });
}
aj_status aj_einsum(const char* subscripts, const aj_array* xs, size_t n, aj_array* out) {
  return c_make("aj_einsum", out, [&] {
    if (!subscripts) c_error("null subscripts");
    return aj::einsum(subscripts, arrays_arg(xs, n));
  });
}

}  // extern "C"

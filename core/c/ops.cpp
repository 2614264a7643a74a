// The C API's ops (arrayjit/arrayjit.h, "ops" and "shape ops"): each is the
// C++ op of the same name (arrayjit/array.hpp) behind c_make, so it takes
// handles, checks them, and returns a new handle or a status.
//
// The plain elementwise ops and the reductions are generated from the lists
// in arrayjit.h (AJ_UNARY_OPS, ...): one line there declares the C function,
// and these definitions follow. A name there is looked up in namespace `fn`
// below, which sees every aj:: op and adds the names C++ spells as operators.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrayjit/arrayjit.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace fn {
using namespace ::aj;
inline Array equal(const Operand& a, const Operand& b) { return a == b; }
inline Array not_equal(const Operand& a, const Operand& b) { return a != b; }
inline Array less(const Operand& a, const Operand& b) { return a < b; }
inline Array less_equal(const Operand& a, const Operand& b) { return a <= b; }
inline Array greater(const Operand& a, const Operand& b) { return a > b; }
inline Array greater_equal(const Operand& a, const Operand& b) { return a >= b; }
inline Array logical_and(const Operand& a, const Operand& b) { return a && b; }
inline Array logical_or(const Operand& a, const Operand& b) { return a || b; }
inline Array gelu_tanh(const Operand& x) { return gelu(x, true); }
}  // namespace fn

namespace {

std::optional<std::int64_t> bound(std::int64_t v) {
  if (v == AJ_SLICE_NONE) return std::nullopt;
  return v;
}

}  // namespace

}  // namespace aj::c_api

using namespace aj::c_api;
using aj::Array;

extern "C" {

// ---- generated from the lists in arrayjit.h ----

#define AJ_DEFINE_UNARY_(name)                                                          \
  aj_status aj_##name(aj_array x, aj_array* out) {                                      \
    return c_make("aj_" #name, out, [&] { return fn::name(get_array(x, "x").operand()); }); \
  }
#define AJ_DEFINE_BINARY_(name)                                                              \
  aj_status aj_##name(aj_array a, aj_array b, aj_array* out) {                               \
    return c_make("aj_" #name, out, [&] {                                                    \
      const ArrayRef ra = get_array(a, "a"), rb = get_array(b, "b");                         \
      return fn::name(ra.operand(), rb.operand());                                           \
    });                                                                                      \
  }
#define AJ_DEFINE_TERNARY_(name)                                                             \
  aj_status aj_##name(aj_array a, aj_array b, aj_array c, aj_array* out) {                   \
    return c_make("aj_" #name, out, [&] {                                                    \
      const ArrayRef ra = get_array(a, "a"), rb = get_array(b, "b"), rc = get_array(c, "c"); \
      return fn::name(ra.operand(), rb.operand(), rc.operand());                             \
    });                                                                                      \
  }
#define AJ_DEFINE_REDUCE_(name)                                                                          \
  aj_status aj_##name(aj_array x, const int32_t* axes, int32_t naxes, int keepdims, aj_array* out) {     \
    return c_make("aj_" #name, out, [&] { return fn::name(arg(x, "x"), axes_arg(axes, naxes), keepdims != 0); }); \
  }
AJ_UNARY_OPS(AJ_DEFINE_UNARY_)
AJ_BINARY_OPS(AJ_DEFINE_BINARY_)
AJ_TERNARY_OPS(AJ_DEFINE_TERNARY_)
AJ_REDUCE_OPS(AJ_DEFINE_REDUCE_)
#undef AJ_DEFINE_UNARY_
#undef AJ_DEFINE_BINARY_
#undef AJ_DEFINE_TERNARY_
#undef AJ_DEFINE_REDUCE_

// ---- one by one ----

aj_status aj_var(aj_array x, const int32_t* axes, int32_t naxes, double ddof, int keepdims, aj_array* out) {
  return c_make("aj_var", out, [&] { return aj::var(arg(x, "x"), axes_arg(axes, naxes), ddof, keepdims != 0); });
}
aj_status aj_std(aj_array x, const int32_t* axes, int32_t naxes, double ddof, int keepdims, aj_array* out) {
  return c_make("aj_std", out, [&] { return aj::std(arg(x, "x"), axes_arg(axes, naxes), ddof, keepdims != 0); });
}
aj_status aj_diff(aj_array x, int32_t n, int32_t axis, aj_array* out) {
  return c_make("aj_diff", out, [&] { return aj::diff(arg(x, "x"), n, axis); });
}
aj_status aj_isclose(aj_array a, aj_array b, double rtol, double atol, int equal_nan, aj_array* out) {
  return c_make("aj_isclose", out, [&] {
    const ArrayRef ra = get_array(a, "a"), rb = get_array(b, "b");
    return aj::isclose(ra.operand(), rb.operand(), rtol, atol, equal_nan != 0);
  });
}
aj_status aj_allclose(aj_array a, aj_array b, double rtol, double atol, int equal_nan, aj_array* out) {
  return c_make("aj_allclose", out, [&] {
    const ArrayRef ra = get_array(a, "a"), rb = get_array(b, "b");
    return aj::allclose(ra.operand(), rb.operand(), rtol, atol, equal_nan != 0);
  });
}
aj_status aj_array_equal(aj_array a, aj_array b, int equal_nan, aj_array* out) {
  return c_make("aj_array_equal", out, [&] { return aj::array_equal(arg(a, "a"), arg(b, "b"), equal_nan != 0); });
}
aj_status aj_quantile(aj_array x, double q, const int32_t* axis, int keepdims, aj_array* out) {
  return c_make("aj_quantile", out, [&] {
    return aj::quantile(arg(x, "x"), q, axis ? std::optional<int>(*axis) : std::nullopt, keepdims != 0);
  });
}
aj_status aj_percentile(aj_array x, double p, const int32_t* axis, int keepdims, aj_array* out) {
  return c_make("aj_percentile", out, [&] {
    return aj::percentile(arg(x, "x"), p, axis ? std::optional<int>(*axis) : std::nullopt, keepdims != 0);
  });
}
aj_status aj_median(aj_array x, const int32_t* axis, int keepdims, aj_array* out) {
  return c_make("aj_median", out, [&] {
    return aj::median(arg(x, "x"), axis ? std::optional<int>(*axis) : std::nullopt, keepdims != 0);
  });
}

#define AJ_C_SCAN_(name)                                                                          \
  aj_status aj_##name(aj_array x, const int32_t* axis, aj_array* out) {                             \
    return c_make("aj_" #name, out,                                                                \
                  [&] { return aj::name(arg(x, "x"), axis ? std::optional<int>(*axis) : std::nullopt); }); \
  }
AJ_C_SCAN_(cumsum)
AJ_C_SCAN_(cumprod)
AJ_C_SCAN_(cummax)
AJ_C_SCAN_(cummin)
AJ_C_SCAN_(logcumsumexp)
#undef AJ_C_SCAN_

namespace {
std::optional<std::int64_t> size_arg(const int64_t* size) { return size ? std::optional<std::int64_t>(*size) : std::nullopt; }
}  // namespace
aj_status aj_searchsorted(aj_array a, aj_array v, int right, aj_array* out) {
  return c_make("aj_searchsorted", out, [&] {
    return aj::searchsorted(arg(a, "a"), get_array(v, "v").operand(), right ? aj::Side::right : aj::Side::left);
  });
}
aj_status aj_digitize(aj_array x, aj_array bins, int right, aj_array* out) {
  return c_make("aj_digitize", out, [&] { return aj::digitize(arg(x, "x"), arg(bins, "bins"), right != 0); });
}
aj_status aj_bincount(aj_array x, aj_array weights, int64_t minlength, const int64_t* length, aj_array* out) {
  return c_make("aj_bincount", out, [&] {
    std::optional<Array> w;
    if (weights._id != 0) w = arg(weights, "weights");
    return aj::bincount(arg(x, "x"), w, minlength, size_arg(length));
  });
}
aj_status aj_argwhere(aj_array x, const int64_t* size, int64_t fill, aj_array* out) {
  return c_make("aj_argwhere", out, [&] { return aj::argwhere(arg(x, "x"), size_arg(size), fill); });
}
aj_status aj_unique(aj_array x, const int64_t* size, double fill, aj_array* out) {
  return c_make("aj_unique", out, [&] { return aj::unique(arg(x, "x"), size_arg(size), fill); });
}
aj_status aj_masked_select(aj_array x, aj_array mask, const int64_t* size, double fill, aj_array* out) {
  return c_make("aj_masked_select", out,
                [&] { return aj::masked_select(arg(x, "x"), arg(mask, "mask"), size_arg(size), fill); });
}

aj_status aj_softmax(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out) {
  return c_make("aj_softmax", out, [&] { return aj::softmax(arg(x, "x"), axes ? axes_arg(axes, naxes) : aj::Axes(-1)); });
}
aj_status aj_log_softmax(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out) {
  return c_make("aj_log_softmax", out,
                [&] { return aj::log_softmax(arg(x, "x"), axes ? axes_arg(axes, naxes) : aj::Axes(-1)); });
}
aj_status aj_logsumexp(aj_array x, const int32_t* axes, int32_t naxes, int keepdims, aj_array* out) {
  return c_make("aj_logsumexp", out, [&] { return aj::logsumexp(arg(x, "x"), axes_arg(axes, naxes), keepdims != 0); });
}
aj_status aj_take(aj_array a, aj_array indices, const int32_t* axis, aj_array* out) {
  return c_make("aj_take", out, [&] {
    return aj::take(arg(a, "a"), arg(indices, "indices"), axis ? std::optional<int>(*axis) : std::nullopt);
  });
}
aj_status aj_take_along_axis(aj_array a, aj_array indices, int32_t axis, aj_array* out) {
  return c_make("aj_take_along_axis", out, [&] { return aj::take_along_axis(arg(a, "a"), arg(indices, "indices"), axis); });
}
aj_status aj_scatter_add(aj_array a, aj_array indices, aj_array updates, int32_t axis, aj_array* out) {
  return c_make("aj_scatter_add", out, [&] {
    return aj::scatter_add(arg(a, "a"), arg(indices, "indices"), get_array(updates, "updates").operand(), axis);
  });
}
aj_status aj_one_hot(aj_array labels, int64_t num_classes, aj_dtype dtype, aj_array* out) {
  return c_make("aj_one_hot", out,
                [&] { return aj::one_hot(arg(labels, "labels"), num_classes, dtype_arg(dtype, "dtype")); });
}

namespace {
std::optional<aj::DType> dtype_opt(const aj_dtype* dtype) {
  if (!dtype) return std::nullopt;
  return dtype_arg(*dtype, "dtype");
}
std::vector<aj::Slice> slices_arg(const int64_t* starts, const int64_t* stops, const int64_t* steps, int32_t n) {
  if (n < 0) c_error("negative number of sliced axes " + std::to_string(n));
  std::vector<aj::Slice> slices;
  for (int32_t i = 0; i < n; ++i) {
    slices.emplace_back(starts ? bound(starts[i]) : std::nullopt, stops ? bound(stops[i]) : std::nullopt,
                        steps ? steps[i] : 1);
  }
  return slices;
}
}  // namespace

aj_status aj_zeros_like(aj_array a, const aj_dtype* dtype, aj_array* out) {
  return c_make("aj_zeros_like", out, [&] { return aj::zeros_like(arg(a, "a"), dtype_opt(dtype)); });
}
aj_status aj_ones_like(aj_array a, const aj_dtype* dtype, aj_array* out) {
  return c_make("aj_ones_like", out, [&] { return aj::ones_like(arg(a, "a"), dtype_opt(dtype)); });
}
aj_status aj_full_like(aj_array a, double value, const aj_dtype* dtype, aj_array* out) {
  return c_make("aj_full_like", out, [&] { return aj::full_like(arg(a, "a"), value, dtype_opt(dtype)); });
}

aj_status aj_cumulative_sum(aj_array x, const int32_t* axis, const aj_dtype* dtype, int include_initial,
                            aj_array* out) {
  return c_make("aj_cumulative_sum", out, [&] {
    return aj::cumulative_sum(arg(x, "x"), axis ? std::optional<int>(*axis) : std::nullopt, dtype_opt(dtype),
                              include_initial != 0);
  });
}

aj_status aj_topk(aj_array x, int64_t k, int32_t axis, aj_array* values, aj_array* indices) {
  if (values) *values = aj_array{0};
  if (indices) *indices = aj_array{0};
  return c_call("aj_topk", [&] {
    if (!values || !indices) c_error("null output pointer (values and indices are both written)");
    Reservation vslot, islot;  // first: once the arrays exist, nothing may fail
    aj::TopK r = aj::topk(arg(x, "x"), k, axis);
    *values = vslot.fill(std::move(r.values));
    *indices = islot.fill(std::move(r.indices));
  });
}

aj_status aj_nonzero(aj_array x, const int64_t* size, int64_t fill, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_nonzero", outs, nouts < 0 ? 0 : nouts, [&] {
    if (nouts < 0) c_error("negative number of outputs " + std::to_string(nouts));
    return aj::nonzero(arg(x, "x"), size_arg(size), fill);
  });
}

aj_status aj_scatter(aj_array a, aj_array indices, aj_array updates, int32_t axis, aj_array* out) {
  return c_make("aj_scatter", out, [&] {
    return aj::scatter(arg(a, "a"), arg(indices, "indices"), get_array(updates, "updates").operand(), axis);
  });
}
aj_status aj_scatter_add_along_axis(aj_array a, aj_array indices, aj_array updates, int32_t axis, aj_array* out) {
  return c_make("aj_scatter_add_along_axis", out, [&] {
    return aj::scatter_add_along_axis(arg(a, "a"), arg(indices, "indices"), get_array(updates, "updates").operand(),
                                      axis);
  });
}
aj_status aj_put_along_axis(aj_array a, aj_array indices, aj_array values, int32_t axis, aj_array* out) {
  return c_make("aj_put_along_axis", out, [&] {
    return aj::put_along_axis(arg(a, "a"), arg(indices, "indices"), get_array(values, "values").operand(), axis);
  });
}
aj_status aj_slice_update(aj_array a, const int64_t* starts, const int64_t* stops, const int64_t* steps, int32_t n,
                          aj_array values, aj_array* out) {
  return c_make("aj_slice_update", out, [&] {
    return aj::slice_update(arg(a, "a"), slices_arg(starts, stops, steps, n), get_array(values, "values").operand());
  });
}
aj_status aj_slice_add(aj_array a, const int64_t* starts, const int64_t* stops, const int64_t* steps, int32_t n,
                       aj_array values, aj_array* out) {
  return c_make("aj_slice_add", out, [&] {
    return aj::slice_add(arg(a, "a"), slices_arg(starts, stops, steps, n), get_array(values, "values").operand());
  });
}
aj_status aj_pad(aj_array a, const int64_t* widths, int32_t nwidths, aj_pad_mode mode, double value, aj_array* out) {
  return c_make("aj_pad", out, [&] {
    if (nwidths < 0) c_error("negative number of widths " + std::to_string(nwidths));
    if (!widths && nwidths > 0) c_error("null widths with nwidths " + std::to_string(nwidths));
    aj::PadMode m = aj::PadMode::constant;
    switch (mode) {
      case AJ_PAD_CONSTANT: m = aj::PadMode::constant; break;
      case AJ_PAD_EDGE: m = aj::PadMode::edge; break;
      case AJ_PAD_REFLECT: m = aj::PadMode::reflect; break;
      default:
        c_error("mode " + std::to_string(mode) + " is not a pad mode (AJ_PAD_CONSTANT, AJ_PAD_EDGE, AJ_PAD_REFLECT)");
    }
    std::vector<aj::PadWidth> w;
    for (int32_t i = 0; i < nwidths; ++i) w.emplace_back(widths[2 * i], widths[2 * i + 1]);
    return aj::pad(arg(a, "a"), std::move(w), m, value);
  });
}
aj_status aj_roll(aj_array a, const int64_t* shifts, const int32_t* axes, int32_t n, aj_array* out) {
  return c_make("aj_roll", out, [&] {
    if (n < 0) c_error("negative number of shifts " + std::to_string(n));
    if (!shifts && n > 0) c_error("null shifts with n " + std::to_string(n));
    if (!axes) {
      if (n != 1) c_error("axes NULL (the flattened array) takes exactly one shift, n is " + std::to_string(n));
      return aj::roll(arg(a, "a"), shifts[0]);
    }
    return aj::roll(arg(a, "a"), std::vector<std::int64_t>(shifts, shifts + n), ints_arg(axes, n, "axes"));
  });
}

aj_status aj_stop_gradient(aj_array x, aj_array* out) {
  return c_make("aj_stop_gradient", out, [&] { return aj::stop_gradient(arg(x, "x")); });
}
aj_status aj_sum_to_shape(aj_array x, const int64_t* shape, int32_t ndim, aj_array* out) {
  return c_make("aj_sum_to_shape", out, [&] { return aj::sum_to_shape(arg(x, "x"), shape_arg(shape, ndim)); });
}

aj_status aj_sort(aj_array x, int32_t axis, aj_array* out) {
  return c_make("aj_sort", out, [&] { return aj::sort(arg(x, "x"), axis); });
}
aj_status aj_argsort(aj_array x, int32_t axis, aj_array* out) {
  return c_make("aj_argsort", out, [&] { return aj::argsort(arg(x, "x"), axis); });
}
namespace {
std::vector<std::int64_t> kth_arg(const int64_t* kth, int32_t nkth) {
  if (nkth < 0 || (nkth > 0 && !kth)) c_error("kth: " + std::to_string(nkth) + " positions at a null pointer");
  return std::vector<std::int64_t>(kth, kth + (nkth > 0 ? nkth : 0));
}
}  // namespace
aj_status aj_partition(aj_array x, const int64_t* kth, int32_t nkth, int32_t axis, aj_array* out) {
  return c_make("aj_partition", out, [&] { return aj::partition(arg(x, "x"), kth_arg(kth, nkth), axis); });
}
aj_status aj_argpartition(aj_array x, const int64_t* kth, int32_t nkth, int32_t axis, aj_array* out) {
  return c_make("aj_argpartition", out, [&] { return aj::argpartition(arg(x, "x"), kth_arg(kth, nkth), axis); });
}

aj_status aj_nan_to_num(aj_array x, double nan, const double* posinf, const double* neginf, aj_array* out) {
  return c_make("aj_nan_to_num", out, [&] {
    return aj::nan_to_num(get_array(x, "x").operand(), nan, posinf ? std::optional<double>(*posinf) : std::nullopt,
                          neginf ? std::optional<double>(*neginf) : std::nullopt);
  });
}

aj_status aj_argmax(aj_array x, const int32_t* axis, int keepdims, aj_array* out) {
  return c_make("aj_argmax", out, [&] {
    return aj::argmax(arg(x, "x"), axis ? std::optional<int>(*axis) : std::nullopt, keepdims != 0);
  });
}
aj_status aj_argmin(aj_array x, const int32_t* axis, int keepdims, aj_array* out) {
  return c_make("aj_argmin", out, [&] {
    return aj::argmin(arg(x, "x"), axis ? std::optional<int>(*axis) : std::nullopt, keepdims != 0);
  });
}
aj_status aj_matmul(aj_array a, aj_array b, aj_array* out) {
  return c_make("aj_matmul", out, [&] { return aj::matmul(arg(a, "a"), arg(b, "b")); });
}
aj_status aj_astype(aj_array x, aj_dtype dtype, aj_array* out) {
  return c_make("aj_astype", out, [&] { return arg(x, "x").astype(dtype_arg(dtype, "dtype")); });
}
aj_status aj_to_device(aj_array x, aj_device_type type, int32_t device_id, aj_array* out) {
  return c_make("aj_to_device", out, [&] {
    if (type == AJ_DEVICE_CPU) return arg(x, "x").to(aj::Device::cpu());
    if (type == AJ_DEVICE_CUDA) return arg(x, "x").to(aj::Device::cuda(device_id));
    c_error("device type " + std::to_string(type) + " is not one arrays live on (AJ_DEVICE_CPU, AJ_DEVICE_CUDA)");
  });
}

aj_status aj_reshape(aj_array x, const int64_t* shape, int32_t ndim, aj_array* out) {
  return c_make("aj_reshape", out, [&] { return aj::reshape(arg(x, "x"), shape_arg(shape, ndim)); });
}
aj_status aj_transpose(aj_array x, const int32_t* perm, int32_t nperm, aj_array* out) {
  return c_make("aj_transpose", out, [&] {
    if (!perm) return aj::transpose(arg(x, "x"));  // reversed, whatever nperm says
    return aj::transpose(arg(x, "x"), ints_arg(perm, nperm, "perm"));
  });
}
aj_status aj_broadcast_to(aj_array x, const int64_t* shape, int32_t ndim, aj_array* out) {
  return c_make("aj_broadcast_to", out, [&] { return aj::broadcast_to(arg(x, "x"), shape_arg(shape, ndim)); });
}
aj_status aj_expand_dims(aj_array x, int32_t axis, aj_array* out) {
  return c_make("aj_expand_dims", out, [&] { return aj::expand_dims(arg(x, "x"), axis); });
}
aj_status aj_squeeze(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out) {
  return c_make("aj_squeeze", out, [&] { return aj::squeeze(arg(x, "x"), axes_arg(axes, naxes)); });
}
aj_status aj_slice(aj_array x, const int64_t* starts, const int64_t* stops, const int64_t* steps, int32_t n,
                   aj_array* out) {
  return c_make("aj_slice", out, [&] {
    if (n < 0) c_error("negative number of sliced axes " + std::to_string(n));
    std::vector<aj::Slice> slices;
    for (int32_t i = 0; i < n; ++i) {
      slices.emplace_back(starts ? bound(starts[i]) : std::nullopt, stops ? bound(stops[i]) : std::nullopt,
                          steps ? steps[i] : 1);
    }
    return aj::slice(arg(x, "x"), std::move(slices));
  });
}
aj_status aj_slice_axis(aj_array x, int32_t axis, int64_t start, int64_t stop, int64_t step, aj_array* out) {
  return c_make("aj_slice_axis", out,
                [&] { return aj::slice(arg(x, "x"), axis, bound(start), bound(stop), step); });
}
aj_status aj_concatenate(const aj_array* xs, size_t n, int32_t axis, aj_array* out) {
  return c_make("aj_concatenate", out, [&] { return aj::concatenate(arrays_arg(xs, n), axis); });
}
aj_status aj_stack(const aj_array* xs, size_t n, int32_t axis, aj_array* out) {
  return c_make("aj_stack", out, [&] { return aj::stack(arrays_arg(xs, n), axis); });
}

}  // extern "C"

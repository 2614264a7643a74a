// The C API's convolution and pooling (arrayjit/arrayjit.h, "convolution and
// pooling"): the C++ functions of arrayjit/conv.hpp behind c_make, with the
// list arguments checked here.
#include <string>
#include <utility>
#include <vector>

#include "arrayjit/arrayjit.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {

std::vector<std::pair<std::int64_t, std::int64_t>> pairs(const std::int64_t* v, std::int32_t n, const char* what) {
  const std::vector<std::int64_t> flat = list_arg(v, n < 0 ? n : 2 * n, what);
  std::vector<std::pair<std::int64_t, std::int64_t>> r;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) r.emplace_back(flat[i], flat[i + 1]);
  return r;
}

std::string text(const char* s) { return s ? s : ""; }

}  // namespace

}  // namespace aj::c_api

using namespace aj::c_api;

aj_status aj_conv_general(aj_array x, aj_array w, const int64_t* strides, int32_t nstrides, aj_padding_mode mode,
                          const int64_t* padding, int32_t npadding, const int64_t* lhs_dilation, int32_t nlhs_dilation,
                          const int64_t* rhs_dilation, int32_t nrhs_dilation, int64_t groups, const char* lhs_layout,
                          const char* rhs_layout, const char* out_layout, aj_array* out) {
  return c_make("aj_conv_general", out, [&] {
    aj::ConvPadding p;
    switch (mode) {
      case AJ_PADDING_PAIRS: p = aj::ConvPadding(pairs(padding, npadding, "padding")); break;
      case AJ_PADDING_SAME: p = aj::ConvPadding("SAME"); break;
      case AJ_PADDING_VALID: p = aj::ConvPadding("VALID"); break;
      default: c_error("unknown padding mode " + std::to_string(static_cast<int>(mode)));
    }
    return aj::conv_general(arg(x, "x"), arg(w, "w"), list_arg(strides, nstrides, "strides"), p,
                            list_arg(lhs_dilation, nlhs_dilation, "lhs_dilation"),
                            list_arg(rhs_dilation, nrhs_dilation, "rhs_dilation"), groups,
                            aj::ConvLayout{text(lhs_layout), text(rhs_layout), text(out_layout)});
  });
}

aj_status aj_conv_transpose(aj_array x, aj_array w, const int64_t* stride, int32_t nstride, const int64_t* padding,
                            int32_t npadding, const int64_t* output_padding, int32_t noutput_padding, int64_t groups,
                            const int64_t* dilation, int32_t ndilation, aj_array* out) {
  return c_make("aj_conv_transpose", out, [&] {
    const aj::Array xa = arg(x, "x"), wa = arg(w, "w");
    const auto s = list_arg(stride, nstride, "stride"), p = list_arg(padding, npadding, "padding");
    const auto op = list_arg(output_padding, noutput_padding, "output_padding"), d = list_arg(dilation, ndilation, "dilation");
    switch (wa.ndim()) {
      case 3: return aj::conv_transpose1d(xa, wa, aj::Array(), s, p, op, groups, d);
      case 4: return aj::conv_transpose2d(xa, wa, aj::Array(), s, p, op, groups, d);
      case 5: return aj::conv_transpose3d(xa, wa, aj::Array(), s, p, op, groups, d);
      default: c_error("weights of rank " + std::to_string(wa.ndim()) + ": 1 to 3 spatial axes plus two");
    }
  });
}

aj_status aj_max_pool(aj_array x, const int64_t* window, int32_t nwindow, const int64_t* strides, int32_t nstrides,
                      const int64_t* padding, int32_t npadding, int ceil_mode, const int64_t* dilation,
                      int32_t ndilation, aj_array* out) {
  return c_make("aj_max_pool", out, [&] {
    return aj::max_pool(arg(x, "x"), list_arg(window, nwindow, "window"), list_arg(strides, nstrides, "strides"),
                        list_arg(padding, npadding, "padding"), ceil_mode != 0, list_arg(dilation, ndilation, "dilation"));
  });
}

aj_status aj_avg_pool(aj_array x, const int64_t* window, int32_t nwindow, const int64_t* strides, int32_t nstrides,
                      const int64_t* padding, int32_t npadding, int ceil_mode, int count_include_pad, aj_array* out) {
  return c_make("aj_avg_pool", out, [&] {
    return aj::avg_pool(arg(x, "x"), list_arg(window, nwindow, "window"), list_arg(strides, nstrides, "strides"),
                        list_arg(padding, npadding, "padding"), ceil_mode != 0, count_include_pad != 0);
  });
}

aj_status aj_reduce_window(aj_array x, const char* op, const int64_t* window, int32_t nwindow, const int64_t* strides,
                           int32_t nstrides, const int64_t* padding, int32_t npadding, aj_array* out) {
  return c_make("aj_reduce_window", out, [&] {
    return aj::reduce_window(arg(x, "x"), text(op), list_arg(window, nwindow, "window"), list_arg(strides, nstrides, "strides"),
                             pairs(padding, npadding, "padding"));
  });
}

aj_status aj_interpolate(aj_array x, const int64_t* size, int32_t nsize, const char* mode, int align_corners,
                         aj_array* out) {
  return c_make("aj_interpolate", out, [&] {
    return aj::interpolate(arg(x, "x"), list_arg(size, nsize, "size"), mode ? mode : "nearest", align_corners != 0);
  });
}

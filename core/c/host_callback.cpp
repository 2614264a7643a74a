// Host callbacks in the C API (arrayjit/arrayjit.h, "host callbacks"): the C
// function as aj::HostCallback's (arrayjit/host_callback.hpp), buffers as
// aj_views with byte strides.
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/host_callback.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {
namespace {

// The C context, released once when the last function holding it dies.
struct Context {
  void* context = nullptr;
  aj_release_fn release = nullptr;
  ~Context() {
    if (release) release(context);
  }
};

// What a C function sees of host buffers: views pointing at them, the
// shapes and byte strides kept alongside.
struct Views {
  std::vector<std::vector<std::int64_t>> shapes, strides;
  std::vector<aj_view> views;
  Views(const std::vector<HostBuffer>& bs, bool readonly) {
    shapes.reserve(bs.size());
    strides.reserve(bs.size());
    for (const HostBuffer& b : bs) {
      const auto item = static_cast<std::int64_t>(itemsize(b.dtype));
      shapes.emplace_back(b.shape.begin(), b.shape.end());
      strides.emplace_back();
      for (std::int64_t st : b.strides) strides.back().push_back(st * item);
      aj_view v{};
      v.struct_size = sizeof v;
      v.data = b.data;
      v.ndim = b.shape.ndim();
      v.shape = shapes.back().data();
      v.strides = strides.back().data();
      v.dtype = static_cast<std::int32_t>(b.dtype);
      v.format = dtype_info(b.dtype).format;
      v.itemsize = item;
      v.device_type = AJ_DEVICE_CPU;
      v.readonly = readonly ? 1 : 0;
      views.push_back(v);
    }
  }
};

HostFn c_fn(aj_host_fn fn, std::shared_ptr<Context> ctx, std::string name) {
  return [fn, ctx, name](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) {
    const Views vi(in, true), vo(out, false);
    clear_last_error();
    const aj_status st = fn(ctx->context, vi.views.data(), static_cast<std::int32_t>(vi.views.size()),
                            vo.views.data(), static_cast<std::int32_t>(vo.views.size()));
    if (st != AJ_OK) {
      const std::string why = *aj_last_error() ? std::string(aj_last_error()) : "status " + std::to_string(st);
      throw Error(st == AJ_ERROR_RUNTIME ? Error::Kind::runtime : Error::Kind::user, "it returned " + why);
    }
  };
}

}  // namespace
}  // namespace aj::c_api

using namespace aj::c_api;

extern "C" {

aj_status aj_host_callback(const aj_host_callback_desc* desc, aj_dtype dtype, const int64_t* const* shapes,
                           const int32_t* ndims, int32_t n_results, const aj_array* inputs, int32_t n_inputs,
                           aj_array* outs) {
  return c_make_many("aj_host_callback", outs, n_results < 0 ? 0 : n_results, [&] {
    if (!desc) c_error("null desc");
    constexpr std::size_t v1 = offsetof(aj_host_callback_desc, name) + sizeof(const char*);
    if (desc->struct_size < v1) c_error("desc->struct_size is not sizeof(aj_host_callback_desc): set it first");
    if (!desc->fn) c_error("desc->fn is null");
    if (n_results < 1) c_error("n_results is " + std::to_string(n_results) + " (at least 1)");
    if (n_inputs < 0) c_error("negative n_inputs " + std::to_string(n_inputs));
    if (!shapes || !ndims) c_error("null shapes or ndims");
    const aj::DType t = dtype_arg(dtype, "dtype");
    std::vector<aj::ResultSpec> specs;
    for (int32_t i = 0; i < n_results; ++i) {
      const std::string what = "result shape " + std::to_string(i);
      specs.push_back({shape_arg(shapes[i], ndims[i], what.c_str()), t});
    }
    const std::vector<aj::Array> in = arrays_arg(inputs, static_cast<std::size_t>(n_inputs));
    const std::string name = desc->name ? desc->name : "(unnamed)";
    // The context is released once the functions die; not on a failure
    // before they exist (a Context without release until then).
    auto ctx = std::make_shared<Context>();
    ctx->context = desc->context;
    aj::HostFn fn = c_fn(desc->fn, ctx, name);
    // Made at the caller's line (aj_set_caller), if it gave one.
    const aj::Loc here = aj::detail::effective_loc(aj::Loc::current());
    std::vector<aj::Array> r;
    if (desc->vjp) {
      r = aj::HostCallback(std::move(fn), c_fn(desc->vjp, ctx, name), name, here)(specs, in, here);
    } else {
      r = aj::HostCallback(std::move(fn), name, here)(specs, in, here);
    }
    ctx->release = desc->release;  // from now on the functions' death releases it
    return r;
  });
}

}  // extern "C"

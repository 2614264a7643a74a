// The C API's first calls (arrayjit/arrayjit.h): handles, errors, and the
// strided view with acquire/release (PEP 3118's Py_buffer, for C and FFI
// callers), both ways: out of an array, and into one from foreign memory.
#include <memory>
#include <string>

#include "arrayjit/c_handle.hpp"
#include "arrayjit/cuda.hpp"
#include "core/c_boundary.hpp"
#include "core/foreign_storage.hpp"
#include "core/trace.hpp"

namespace aj::c_api {

namespace {
thread_local std::string t_last_error;

// Frees the callback's owner exactly once when the last array lets go.
struct ForeignStorage : Storage {
  std::function<void()> give_back;  // set once the array exists (see import_borrowed)
  ~ForeignStorage() {
    if (give_back) give_back();
  }
};

// What aj_view::owner points at: the handle that pins the buffer and the
// view's own shape and strides arrays.
struct ViewOwner {
  Array array;
  std::vector<std::int64_t> shape, strides;
};
}  // namespace

void set_last_error(const std::string& what) { t_last_error = what; }

void c_error(const std::string& msg) { throw Error(Error::Kind::user, msg); }

const char* buffer_format(DType t) {
  switch (t) {
    case DType::bool_: return "?";
    case DType::i32: return "i";
    case DType::i64: return "q";
    case DType::f32: return "f";
    case DType::f64: return "d";
  }
  return "";
}

Array import_borrowed(void* data, DType dtype, Shape shape, std::vector<std::int64_t> strides,
                      std::function<void()> give_back, const char* fn, const Loc& loc) {
  trace::Scope scope;
  if (static_cast<int>(strides.size()) != shape.ndim()) user_error(fn, "strides and shape differ in length", loc);
  std::int64_t n = trace::checked_numel(shape.dims(), fn, loc);
  if (!data && n > 0) user_error(fn, "null data pointer for shape " + shape.str(), loc);
  std::int64_t lo = 0, hi = 0;  // the span the view touches, in elements
  if (n > 0) {
    for (int i = 0; i < shape.ndim(); ++i) {
      std::int64_t span = strides[static_cast<std::size_t>(i)] * (shape[i] - 1);
      (span < 0 ? lo : hi) += span;
    }
  }
  const auto item = static_cast<std::int64_t>(itemsize(dtype));
  auto s = std::make_shared<ForeignStorage>();
  s->data = static_cast<char*>(data) + lo * item;
  s->bytes = static_cast<std::size_t>(n > 0 ? (hi - lo + 1) * item : 0);
  s->device = Device::cpu();
  s->borrowed = true;
  Node node;
  node.op = Op::Input;
  node.dtype = dtype;
  node.shape = std::move(shape);
  node.strides = std::move(strides);
  node.offset = -lo;
  node.storage = s;
  Array a = Array::from_node(graph().add(std::move(node)));
  s->give_back = std::move(give_back);  // armed only now: a throw above took nothing
  return a;
}

}  // namespace aj::c_api

using aj::c_api::c_call;
using aj::c_api::c_error;

extern "C" {

const char* aj_last_error(void) { return aj::c_api::t_last_error.c_str(); }

void aj_array_release(aj_array* a) { delete a; }

aj_status aj_array_retain(const aj_array* a, aj_array** out) {
  return c_call("aj_array_retain", [&] {
    if (!a || !out) c_error("null argument");
    *out = aj::to_c(aj::from_c(a));
  });
}

aj_status aj_arange(int64_t n, aj_dtype dtype, aj_array** out) {
  return c_call("aj_arange", [&] {
    if (!out) c_error("null output");
    if (dtype < AJ_BOOL || dtype > AJ_F64) c_error("unknown dtype " + std::to_string(dtype));
    *out = aj::to_c(aj::arange(n, static_cast<aj::DType>(dtype)));
  });
}

aj_status aj_eval(const aj_array* a) {
  return c_call("aj_eval", [&] {
    if (!a) c_error("null array");
    aj::from_c(a).eval();
  });
}

aj_status aj_view_acquire(const aj_array* a, int flags, aj_view* view) {
  if (view) *view = aj_view{};
  return c_call("aj_view_acquire", [&] {
    if (!a || !view) c_error("null argument");
    if (flags & ~(AJ_VIEW_WRITABLE | AJ_VIEW_C_CONTIGUOUS | AJ_VIEW_F_CONTIGUOUS)) {
      c_error("unknown flags " + std::to_string(flags));
    }
    const aj::Array& arr = aj::from_c(a);
    aj::ArrayData d = arr.data();
    const std::string what = aj::trace::describe(arr);
    if ((flags & AJ_VIEW_C_CONTIGUOUS) && !d.row_major()) {
      c_error("C-contiguous asked for, but " + what + " is strided (a view); copy it first");
    }
    if ((flags & AJ_VIEW_F_CONTIGUOUS) && !d.column_major()) {
      c_error("F-contiguous asked for, but " + what + " is not column-major; copy it first");
    }
    if (flags & AJ_VIEW_WRITABLE) {
      // Writes must not reach another array: only this handle (and the view's
      // own) may refer to the node, nothing lazy may read it, no view may
      // share its buffer, and the buffer must be arrayjit's own.
      aj::GraphScope in(*arr.graph_of());
      const aj::Node& n = aj::graph()[arr.node_id()];
      if (n.storage->borrowed) c_error("writable asked for, but " + what + " borrows caller memory");
      if (aj::graph().ext_count(arr.node_id()) > 2 || n.uses > 0 || n.storage.use_count() > 1) {
        c_error("writable asked for, but other arrays share the buffer of " + what);
      }
    }
    if (d.device.kind == aj::Device::Kind::cuda) aj::cuda::current_stream(d.device.index).synchronize();
    auto owner = std::make_unique<aj::c_api::ViewOwner>();
    const auto item = static_cast<std::int64_t>(aj::itemsize(d.dtype));
    owner->shape = d.shape.dims();
    for (std::int64_t s : d.strides) owner->strides.push_back(s * item);
    view->data = const_cast<void*>(d.ptr);
    view->ndim = d.shape.ndim();
    view->shape = owner->shape.data();
    view->strides = owner->strides.data();
    view->dtype = static_cast<int32_t>(d.dtype);
    view->format = aj::c_api::buffer_format(d.dtype);
    view->itemsize = item;
    view->device_type = d.device.kind == aj::Device::Kind::cuda ? AJ_DEVICE_CUDA : AJ_DEVICE_CPU;
    view->device_id = d.device.index;
    view->readonly = (flags & AJ_VIEW_WRITABLE) ? 0 : 1;
    owner->array = std::move(d.owner);
    view->owner = owner.release();
  });
}

void aj_view_release(aj_view* view) {
  if (!view) return;
  delete static_cast<aj::c_api::ViewOwner*>(view->owner);
  *view = aj_view{};
}

aj_status aj_array_from_view(const aj_view* view, aj_release_fn release, void* context, aj_array** out) {
  return c_call("aj_array_from_view", [&] {
    const char* fn = "aj_array_from_view";
    if (!view || !out) c_error("null argument");
    if (view->dtype < AJ_BOOL || view->dtype > AJ_F64) c_error("unknown dtype " + std::to_string(view->dtype));
    const auto t = static_cast<aj::DType>(view->dtype);
    const auto item = static_cast<std::int64_t>(aj::itemsize(t));
    if (view->itemsize != item) {
      c_error("itemsize " + std::to_string(view->itemsize) + " does not match " + aj::dtype_name(t));
    }
    if (view->device_type != AJ_DEVICE_CPU && view->device_type != AJ_DEVICE_CUDA_HOST) {
      c_error("device type " + std::to_string(view->device_type) + " is not host memory (CPU or CUDA-host)");
    }
    if (view->ndim < 0 || (view->ndim > 0 && !view->shape)) c_error("bad ndim or null shape");
    std::vector<std::int64_t> dims(view->shape, view->shape + view->ndim), strides;
    if (!view->strides) {
      strides = aj::contiguous_strides(aj::Shape(dims));
    } else {
      for (int d = 0; d < view->ndim; ++d) {
        if (view->strides[d] % item != 0) {
          c_error("stride " + std::to_string(view->strides[d]) + " bytes of axis " + std::to_string(d) +
                          " is not a multiple of the item size " + std::to_string(item));
        }
        strides.push_back(view->strides[d] / item);
      }
    }
    std::function<void()> give_back;
    if (release) give_back = [release, context] { release(context); };
    auto handle = std::make_unique<aj_array>();  // first: nothing may throw once the import is armed
    handle->array = aj::c_api::import_borrowed(view->data, t, aj::Shape(std::move(dims)), std::move(strides),
                                               std::move(give_back), fn, aj::Loc::current());
    *out = handle.release();
  });
}

}  // extern "C"

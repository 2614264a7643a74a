// The strided view of the C API (arrayjit/arrayjit.h) with acquire/release
// (PEP 3118's Py_buffer, for C and FFI callers), both ways: out of an array,
// and into one from foreign memory (borrowed or copied).
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "arrayjit/cuda.hpp"
#include "backends/cpu/host_memory.hpp"
#include "backends/cuda/cuda_borrowed.hpp"
#include "core/api/foreign_storage.hpp"
#include "core/api/trace.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {

// What aj_view::owner points at: the handle that pins the buffer and the
// view's own shape and strides arrays.
struct ViewOwner {
  Array array;
  std::vector<std::int64_t> shape, strides;
};

// The owners handed out and not yet given back: aj_view_release of a struct
// copy whose original was released already finds nothing and does nothing
// (a double free otherwise). Leaked on purpose: views may outlive statics.
struct LiveViews {
  std::mutex mu;
  std::unordered_set<const void*> owners;
};
LiveViews& live_views() {
  static auto* v = new LiveViews;
  return *v;
}
}  // namespace

static_assert(AJ_BF16 == static_cast<int>(DType::bf16) && AJ_U8 == static_cast<int>(DType::u8) &&
                  AJ_I8 == static_cast<int>(DType::i8) && AJ_I16 == static_cast<int>(DType::i16) &&
                  AJ_U16 == static_cast<int>(DType::u16) && AJ_U32 == static_cast<int>(DType::u32) &&
                  AJ_U64 == static_cast<int>(DType::u64) && AJ_U64 + 1 == kNumDTypes,
              "aj_dtype_code (arrayjit.h) lists aj::DType's values");

namespace {

// The view of `ndim` row-major host extents of `dtype` at `data` (what
// aj_array_borrow, aj_array_lend and aj_array_from_data describe).
aj_view row_major_host_view(void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim) {
  aj_view v{};
  v.struct_size = sizeof v;
  v.data = data;
  v.ndim = ndim;
  v.shape = shape;
  v.dtype = dtype;
  v.itemsize = static_cast<int64_t>(aj_dtype_itemsize(dtype));
  v.device_type = AJ_DEVICE_CPU;
  return v;
}

// The smallest struct_size a caller may pass: the aj_view of API 1.0.
constexpr std::size_t kViewSizeV1 = offsetof(aj_view, owner) + sizeof(void*);

void check_view_size(const aj_view* view) {
  if (view->struct_size < kViewSizeV1) {
    c_error("view->struct_size is " + std::to_string(view->struct_size) + ", not sizeof(aj_view) (" +
            std::to_string(sizeof(aj_view)) + "): set it before the call");
  }
}

// `producer_stream`: kNoStream for host views (aj_array_from_view,
// aj_array_copy_view), else the CUDA producer's stream (aj_array_from_cuda_view).
char no_stream_tag;
void* const kNoStream = &no_stream_tag;

Array import_view(const aj_view* view, aj_release_fn release, void* context, bool copy, const char* fn,
                  void* producer_stream = kNoStream) {
  if (!view) c_error("null view");
  check_view_size(view);
  const DType t = dtype_arg(view->dtype, "view->dtype");
  const auto item = static_cast<std::int64_t>(itemsize(t));
  if (view->itemsize != item) {
    c_error("itemsize " + std::to_string(view->itemsize) + " does not match " + dtype_name(t));
  }
  const bool on_cuda = producer_stream != kNoStream;
  if (on_cuda && view->device_type != AJ_DEVICE_CUDA) {
    c_error("device type " + std::to_string(view->device_type) + " is not CUDA device memory (use aj_array_from_view)");
  }
  if (!on_cuda && view->device_type == AJ_DEVICE_CUDA) {
    c_error(copy ? "device type CUDA: a copy of device memory is not supported (borrow it with "
                   "aj_array_from_cuda_view, then compute from it)"
                 : "device type CUDA: borrow device memory with aj_array_from_cuda_view, which takes the "
                   "producer's stream");
  }
  if (!on_cuda && view->device_type != AJ_DEVICE_CPU && view->device_type != AJ_DEVICE_CUDA_HOST) {
    c_error("device type " + std::to_string(view->device_type) + " is not host memory (CPU or CUDA-host)");
  }
  Shape shape = shape_arg(view->shape, view->ndim, "view->shape");
  std::vector<std::int64_t> strides;
  if (!view->strides) {
    strides = contiguous_strides(shape);
  } else {
    for (int d = 0; d < view->ndim; ++d) {
      if (view->strides[d] % item != 0) {
        c_error("stride " + std::to_string(view->strides[d]) + " bytes of axis " + std::to_string(d) +
                " is not a multiple of the item size " + std::to_string(item));
      }
      strides.push_back(view->strides[d] / item);
    }
  }
  if (!copy) {
    std::function<void()> give_back;
    if (release) give_back = [release, context] { release(context); };
    return detail::import_borrowed(view->data, t, std::move(shape), std::move(strides), std::move(give_back), fn,
                           Loc::current(), on_cuda ? Device::cuda(view->device_id) : Device::cpu(),
                           on_cuda ? producer_stream : nullptr);
  }
  // A copy: the borrowed view written row-major into a buffer of arrayjit's.
  Array borrowed = detail::import_borrowed(view->data, t, shape, std::move(strides), {}, fn, Loc::current());
  const std::int64_t n = shape.numel();
  auto storage = cpu::host_alloc(n, static_cast<std::size_t>(item));
  if (n > 0) borrowed.copy_to(storage->data);
  if (t == DType::bool_) {  // C's "bool" bytes may be any nonzero value: arrayjit's are 0 or 1
    auto* b = static_cast<unsigned char*>(storage->data);
    for (std::int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
  }
  Node node;
  node.op = Op::Input;
  node.dtype = t;
  node.strides = contiguous_strides(shape);
  node.shape = std::move(shape);
  node.storage = std::move(storage);
  return Array::from_node(graph().add(std::move(node)));
}

}  // namespace

}  // namespace aj::c_api

using aj::c_api::c_call;
using aj::c_api::c_error;
using aj::c_api::c_make;
using aj::c_api::device_code;

extern "C" {

aj_status aj_view_acquire(aj_array a, int flags, aj_view* view) {
  // Only a view whose struct_size says it is at least this header's is
  // written (a later, longer aj_view would get its own fields zeroed too).
  if (view && view->struct_size >= aj::c_api::kViewSizeV1) {
    const std::size_t size = view->struct_size;
    *view = aj_view{};
    view->struct_size = size;
  }
  return c_call("aj_view_acquire", [&] {
    aj::c_api::check_not_tracing("aj_view_acquire");
    if (!view) c_error("null view");
    aj::c_api::check_view_size(view);
    if (flags & ~(AJ_VIEW_WRITABLE | AJ_VIEW_C_CONTIGUOUS | AJ_VIEW_F_CONTIGUOUS)) {
      c_error("unknown flags " + std::to_string(flags));
    }
    const aj::Array arr = aj::c_api::get_array(a, "the array").array;
    aj::ArrayData d = arr.data();
    const std::string what = aj::trace::describe(arr);
    if ((flags & AJ_VIEW_C_CONTIGUOUS) && !d.row_major()) {
      c_error("C-contiguous asked for, but " + what + " is strided (a view); copy it first");
    }
    if ((flags & AJ_VIEW_F_CONTIGUOUS) && !d.column_major()) {
      c_error("F-contiguous asked for, but " + what + " is not column-major; copy it first");
    }
    if (flags & AJ_VIEW_WRITABLE) {
      // Writes must not reach another array: only the caller's handle (with
      // the copies this call holds: `arr` and d.owner) may refer to the node,
      // nothing lazy may read it, no view may share its buffer, and the buffer
      // must be arrayjit's own.
      aj::GraphScope in(*arr.graph_of());
      const aj::Node& n = aj::graph()[arr.node_id()];
      if (n.storage->borrowed) c_error("writable asked for, but " + what + " borrows caller memory");
      if (aj::graph().ext_count(arr.node_id()) > 3 || n.uses > 0 || n.storage.use_count() > 1) {
        c_error("writable asked for, but other arrays share the buffer of " + what);
      }
    }
    switch (d.device.kind) {  // the caller reads the memory once this returns
      case aj::Device::Kind::cpu: break;
      case aj::Device::Kind::cuda: aj::cuda::current_stream(d.device.index).synchronize(); break;
    }
    auto owner = std::make_unique<aj::c_api::ViewOwner>();
    const auto item = static_cast<std::int64_t>(aj::itemsize(d.dtype));
    owner->shape = d.shape.dims();
    for (std::int64_t s : d.strides) owner->strides.push_back(s * item);
    view->data = const_cast<void*>(d.ptr);
    view->ndim = d.shape.ndim();
    view->shape = owner->shape.data();
    view->strides = owner->strides.data();
    view->dtype = static_cast<int32_t>(d.dtype);
    view->format = aj::dtype_info(d.dtype).format;
    view->itemsize = item;
    view->device_type = device_code(d.device.kind);
    view->device_id = d.device.index;
    view->readonly = (flags & AJ_VIEW_WRITABLE) ? 0 : 1;
    owner->array = std::move(d.owner);
    {
      aj::c_api::LiveViews& live = aj::c_api::live_views();
      std::lock_guard<std::mutex> lock(live.mu);
      live.owners.insert(owner.get());  // may throw: nothing handed out yet
    }
    view->owner = owner.release();
  });
}

void aj_view_release(aj_view* view) {
  if (!view || view->struct_size < aj::c_api::kViewSizeV1) return;  // never acquired
  bool ours = false;
  if (view->owner) {
    aj::c_api::LiveViews& live = aj::c_api::live_views();
    std::lock_guard<std::mutex> lock(live.mu);
    ours = live.owners.erase(view->owner) == 1;
  }
  if (ours) delete static_cast<aj::c_api::ViewOwner*>(view->owner);
  const std::size_t size = view->struct_size;
  *view = aj_view{};
  view->struct_size = size;
}

aj_status aj_array_from_view(const aj_view* view, aj_release_fn release, void* context, aj_array* out) {
  return c_make("aj_array_from_view", out, [&] {
    return aj::c_api::import_view(view, release, context, false, "aj_array_from_view");
  });
}

aj_status aj_array_from_cuda_view(const aj_view* view, void* producer_stream, aj_release_fn release, void* context,
                                  aj_array* out) {
  return c_make("aj_array_from_cuda_view", out, [&] {
    return aj::c_api::import_view(view, release, context, false, "aj_array_from_cuda_view", producer_stream);
  });
}

aj_status aj_cuda_current_stream(int32_t device_id, void** out) {
  if (out) *out = nullptr;
  return aj::c_api::c_call("aj_cuda_current_stream", [&] {
    if (!out) c_error("null output pointer");
    *out = aj::cuda::current_stream(device_id).handle();
  });
}

namespace {
// aj_cuda_stream_push's guards, innermost last, per thread.
thread_local std::vector<std::pair<int, std::unique_ptr<aj::cuda::StreamGuard>>> t_stream_guards;
}  // namespace

aj_status aj_cuda_stream_push(int32_t device_id, void* stream) {
  return aj::c_api::c_call("aj_cuda_stream_push", [&] {
    auto guard = std::make_unique<aj::cuda::StreamGuard>(aj::cuda::Stream::wrap(stream, device_id));
    t_stream_guards.emplace_back(device_id, std::move(guard));
  });
}

aj_status aj_cuda_stream_pop(int32_t device_id) {
  return aj::c_api::c_call("aj_cuda_stream_pop", [&] {
    if (t_stream_guards.empty()) c_error("no stream pushed on this thread");
    const int top = t_stream_guards.back().first;
    if (top != device_id) {
      c_error("the innermost stream pushed on this thread is cuda:" + std::to_string(top) + "'s, not cuda:" +
              std::to_string(device_id) + "'s (pops go in reverse order)");
    }
    t_stream_guards.pop_back();
  });
}

aj_status aj_array_copy_view(const aj_view* view, aj_array* out) {
  return c_make("aj_array_copy_view", out,
                [&] { return aj::c_api::import_view(view, nullptr, nullptr, true, "aj_array_copy_view"); });
}

aj_status aj_array_borrow(void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim, aj_release_fn release,
                          void* context, aj_array* out) {
  return c_make("aj_array_borrow", out, [&] {
    const aj_view v = aj::c_api::row_major_host_view(data, dtype, shape, ndim);
    return aj::c_api::import_view(&v, release, context, false, "aj_array_borrow");
  });
}

aj_status aj_array_lend(void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim, aj_release_fn release,
                        void* context, aj_array* out) {
  return c_make("aj_array_lend", out, [&] {
    const aj_view v = aj::c_api::row_major_host_view(data, dtype, shape, ndim);
    aj::Array a = aj::c_api::import_view(&v, release, context, false, "aj_array_lend");
    aj::GraphScope in(*a.graph_of());
    aj::graph()[a.node_id()].storage->lent = true;  // import_view's storage is this array's alone
    return a;
  });
}

aj_status aj_array_from_data(const void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim, aj_array* out) {
  return c_make("aj_array_from_data", out, [&] {
    const aj_view v = aj::c_api::row_major_host_view(const_cast<void*>(data), dtype, shape, ndim);
    return aj::c_api::import_view(&v, nullptr, nullptr, true, "aj_array_from_data");
  });
}

}  // extern "C"

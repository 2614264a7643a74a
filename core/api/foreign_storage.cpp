// Memory another library owns, as arrays (see foreign_storage.hpp).
#include "core/api/foreign_storage.hpp"

#include <memory>
#include <string>

#include "arrayjit/cuda.hpp"
#include "backends/cuda/cuda_borrowed.hpp"
#include "core/api/trace.hpp"

namespace aj::detail {

namespace {

// Frees the callback's owner exactly once when the last array lets go.
struct ForeignStorage : Storage {
  std::function<void()> give_back;  // set once the array exists (see import_borrowed)
  ~ForeignStorage() {
    if (give_back) give_back();
  }
};

}  // namespace

ForeignSpan check_foreign_layout(const void* data, DType dtype, const Shape& shape,
                                 const std::vector<std::int64_t>& strides, const char* fn, const Loc& loc) {
  trace::check_array_size(shape, dtype, fn, loc);  // the rank, the count within int64 and 2^62 bytes
  if (static_cast<int>(strides.size()) != shape.ndim()) {
    user_error(fn, std::to_string(strides.size()) + " strides given for shape " + shape.str(), loc);
  }
  const std::int64_t n = shape.numel();
  if (!data && n > 0) user_error(fn, "null data pointer for shape " + shape.str(), loc);
  ForeignSpan span;
  if (n == 0) return span;
  auto bad_strides = [&](const std::string& why) {
    std::string list;
    for (std::size_t i = 0; i < strides.size(); ++i) list += (i ? ", " : "") + std::to_string(strides[i]);
    user_error(fn, "strides (" + list + ") for shape " + shape.str() + " " + why, loc);
  };
  // The extent of memory the view touches. A span that overflows, or reaches
  // past the address space, cannot describe real memory: the strides are wrong.
  std::int64_t lo = 0, hi = 0;
  for (int i = 0; i < shape.ndim(); ++i) {
    std::int64_t reach = 0;
    if (__builtin_mul_overflow(strides[static_cast<std::size_t>(i)], shape[i] - 1, &reach) ||
        __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi)) {
      bad_strides("reach further than any memory (the span overflows int64)");
    }
  }
  const auto item = static_cast<std::uint64_t>(itemsize(dtype));
  std::int64_t elems = 0;
  if (__builtin_sub_overflow(hi, lo, &elems) || static_cast<std::uint64_t>(elems) >= trace::kMaxArrayBytes / item) {
    bad_strides("span more than 2^62 bytes");
  }
  const auto addr = reinterpret_cast<std::uintptr_t>(data);
  if (addr < static_cast<std::uintptr_t>(-lo) * item || UINTPTR_MAX - addr < static_cast<std::uintptr_t>(hi) * item) {
    bad_strides("reach outside the address space from " + std::to_string(addr));
  }
  span.lo = lo;
  span.bytes = static_cast<std::size_t>(elems + 1) * item;
  return span;
}

Array import_borrowed(void* data, DType dtype, Shape shape, std::vector<std::int64_t> strides,
                      std::function<void()> give_back, const char* fn, const Loc& loc, Device device,
                      void* producer_stream) {
  trace::Scope scope;
  const ForeignSpan span = check_foreign_layout(data, dtype, shape, strides, fn, loc);
  const std::int64_t lo = span.lo;
  const std::size_t bytes = span.bytes;
  void* first = span.bytes ? static_cast<char*>(data) + lo * static_cast<std::int64_t>(itemsize(dtype)) : data;
  std::shared_ptr<Storage> s;
  std::function<void()>* arm = nullptr;
  switch (device.kind) {
    case Device::Kind::cpu: {
      auto f = std::make_shared<ForeignStorage>();
      f->data = first;
      f->bytes = bytes;
      f->device = Device::cpu();
      f->borrowed = true;
      arm = &f->give_back;
      s = std::move(f);
      break;
    }
    case Device::Kind::cuda: {
      if (device.index < 0) user_error(fn, "negative CUDA device index " + std::to_string(device.index), loc);
      if (!cuda::available()) {
        runtime_error(std::string("aj::") + fn + ": cannot borrow CUDA memory of " + device.str() + ": " +
                      cuda::unavailable_reason() + " (at " + loc_str(loc) + ")");
      }
      const auto stream = static_cast<cuda::CUstream>(producer_stream);
      std::string why = cuda::check_device_pointer(device.index, first, bytes);
      if (why.empty()) why = cuda::check_stream(device.index, stream);
      if (!why.empty()) {
        user_error(fn, "cannot borrow " + trace::describe(dtype, shape) + " at " + device.str() + ": " + why, loc);
      }
      auto d = cuda::borrow_device_buffer(device.index, first, bytes, stream);
      arm = &d->give_back;
      s = std::move(d);
      break;
    }
  }
  if (!s) internal_error(std::string("aj::") + fn + ": no storage for memory of " + device.str());
  Node node;
  node.op = Op::Input;
  node.dtype = dtype;
  node.shape = std::move(shape);
  node.strides = std::move(strides);
  node.offset = -lo;
  node.storage = s;
  Array a = Array::from_node(graph().add(std::move(node)));
  *arm = std::move(give_back);  // armed only now: a throw above took nothing
  return a;
}

}  // namespace aj::detail

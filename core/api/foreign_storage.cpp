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

Array import_borrowed(void* data, DType dtype, Shape shape, std::vector<std::int64_t> strides,
                      std::function<void()> give_back, const char* fn, const Loc& loc, Device device,
                      void* producer_stream) {
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
  void* first = static_cast<char*>(data) + lo * item;
  const auto bytes = static_cast<std::size_t>(n > 0 ? (hi - lo + 1) * item : 0);
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

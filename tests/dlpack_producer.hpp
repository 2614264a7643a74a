// A DLPack producer for the tests: a tensor over caller memory whose deleter
// counts its calls (and frees the tensor's own record).
#pragma once

#include <arrayjit/dlpack_abi.h>

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace ajtest {

template <class Managed>
struct Produced {
  Managed m{};
  std::vector<std::int64_t> shape, strides;
  int* deletes = nullptr;
};

// `strides` in elements, empty for none (row-major); `data` may be null.
template <class Managed>
Managed* produce(void* data, DLDataType t, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                 int* deletes, DLDeviceType dev = kDLCPU, std::uint64_t byte_offset = 0) {
  auto* p = new Produced<Managed>;
  p->shape = std::move(shape);
  p->strides = std::move(strides);
  p->deletes = deletes;
  p->m.dl_tensor.data = data;
  p->m.dl_tensor.byte_offset = byte_offset;
  p->m.dl_tensor.device = {dev, 0};
  p->m.dl_tensor.ndim = static_cast<int32_t>(p->shape.size());
  p->m.dl_tensor.dtype = t;
  p->m.dl_tensor.shape = p->shape.data();
  p->m.dl_tensor.strides = p->strides.empty() ? nullptr : p->strides.data();
  p->m.manager_ctx = p;
  p->m.deleter = [](Managed* self) {
    auto* owner = static_cast<Produced<Managed>*>(self->manager_ctx);
    ++*owner->deletes;
    delete owner;
  };
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    p->m.version = {1, 0};
    p->m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  }
  return &p->m;
}

}  // namespace ajtest

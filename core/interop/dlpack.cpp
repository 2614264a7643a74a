// DLPack 1.x and legacy, export and import, zero-copy (arrayjit/dlpack.hpp; the C calls: core/c/dlpack.cpp).
// An export holds an Array handle: the buffer stays pinned (never freed, never
// reused in place) until the consumer calls the deleter. An import borrows the
// producer's memory and calls its deleter when the last array using it dies
// (for CUDA memory: after arrayjit's work reading it completed).
// Streams (the array API's rule): an export makes the consumer's stream wait
// on an event of ours; an import of CUDA memory is ready on arrayjit's current
// stream (the caller passed that stream to the producer), or, given the
// producer's stream, ours waits on an event recorded there.
#include <memory>
#include <string>

#include "arrayjit/cuda.hpp"
#include "arrayjit/dlpack.hpp"
#include "backends/cuda/cuda_borrowed.hpp"
#include "core/api/foreign_storage.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

// DLPack's code for a dtype's kind, its bits from the table (bf16 is the one
// float of another format than IEEE's for its size).
DLDataType dl_dtype(DType t) {
  const auto bits = static_cast<std::uint8_t>(8 * itemsize(t));
  switch (dtype_kind(t)) {
    case DTypeKind::Bool: return {kDLBool, 8, 1};
    case DTypeKind::Unsigned: return {kDLUInt, bits, 1};
    case DTypeKind::Signed: return {kDLInt, bits, 1};
    case DTypeKind::Float: return {static_cast<std::uint8_t>(t == DType::bf16 ? kDLBfloat : kDLFloat), bits, 1};
  }
  return {};
}

// The DLPack device type of an array's memory (the importer below maps
// DLPack's types back).
DLDeviceType dl_device_type(Device::Kind k) {
  switch (k) {
    case Device::Kind::cpu: return kDLCPU;
    case Device::Kind::cuda: return kDLCUDA;
  }
  internal_error("DLPack: no device type for device kind " + std::to_string(static_cast<int>(k)));
}

DType aj_dtype(DLDataType t, const char* op, const Loc& loc) {
  for (DType d : kAllDTypes) {
    DLDataType want = dl_dtype(d);
    if (t.code == want.code && t.bits == want.bits && t.lanes == 1) return d;
  }
  std::string ours;  // the dtype table's, so a new row is named here too
  for (DType d : kAllDTypes) ours += std::string(ours.empty() ? "" : ", ") + dtype_name(d);
  user_error(op, "DLPack dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits, " +
                     std::to_string(t.lanes) + " lanes) is not one of arrayjit's: " + ours, loc);
}

// What an export's manager_ctx points at: the handle pinning the buffer and
// the tensor's shape and strides arrays, freed by the deleter.
template <class Managed>
struct Export {
  Managed managed{};
  Array array;
  std::vector<std::int64_t> shape, strides;
};

template <class Managed>
Managed* export_tensor(const Array& a, void* stream, const char* op, const Loc& loc) {
  trace::own_node(a, op, loc);
  ArrayData d = a.data(loc);
  switch (d.device.kind) {
    case Device::Kind::cpu: break;
    case Device::Kind::cuda: {
      // The consumer reads on its stream: it waits on an event recorded where
      // the buffer was last used (enqueued; nothing is synchronized). -1: the
      // consumer asked for no synchronization.
      const auto consumer = static_cast<cuda::CUstream>(stream);
      const std::string why = cuda::check_stream(d.device.index, consumer);
      if (!why.empty()) user_error(op, "consumer stream: " + why, loc);
      GraphScope in(*d.owner.graph_of());
      cuda::hand_off(*graph()[d.owner.node_id()].storage, consumer);
      break;
    }
  }
  auto e = std::make_unique<Export<Managed>>();
  e->array = d.owner;
  e->shape = d.shape.dims();
  e->strides = d.strides;
  DLTensor& t = e->managed.dl_tensor;
  t.data = const_cast<void*>(d.ptr);
  t.device = {dl_device_type(d.device.kind), d.device.index};
  t.ndim = d.shape.ndim();
  t.dtype = dl_dtype(d.dtype);
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = [](Managed* self) { delete static_cast<Export<Managed>*>(self->manager_ctx); };
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    e->managed.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    e->managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;  // arrayjit's buffers may be shared: never write them
  }
  return &e.release()->managed;
}

template <class Managed>
Array import_tensor(Managed* m, void* producer_stream, const char* op, const Loc& loc) {
  if (!m) user_error(op, "null DLPack tensor", loc);
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    if (m->version.major != DLPACK_MAJOR_VERSION) {
      user_error(op, "DLPack major version " + std::to_string(m->version.major) + " (arrayjit reads 1.x)", loc);
    }
  }
  const DLTensor& t = m->dl_tensor;
  Device device = Device::cpu();
  switch (t.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      break;
    case kDLCUDA:
    case kDLCUDAManaged:
      device = Device::cuda(t.device.device_id);
      break;
    default:
      user_error(op, "DLPack device type " + std::to_string(t.device.device_type) +
                         " is not supported (CPU, CUDA, CUDA-host, CUDA-managed)", loc);
  }
  const DType dtype = aj_dtype(t.dtype, op, loc);
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) user_error(op, "bad ndim or null shape", loc);
  trace::check_rank(t.ndim, op, loc);  // before reading t.ndim extents
  Shape shape(std::vector<std::int64_t>(t.shape, t.shape + t.ndim));
  std::vector<std::int64_t> strides =
      t.strides ? std::vector<std::int64_t>(t.strides, t.strides + t.ndim) : contiguous_strides(shape);
  const std::uint64_t item = itemsize(dtype);
  if (t.byte_offset % item != 0) {
    user_error(op, "byte_offset " + std::to_string(t.byte_offset) + " is not a multiple of the item size " +
                       std::to_string(item), loc);
  }
  // The offset moves a real pointer, and must not wrap it; null data stays
  // null (the layout check allows it for zero elements only), whatever the
  // offset says.
  void* data = t.data;
  if (data) {
    if (UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(data) < t.byte_offset) {
      user_error(op, "byte_offset " + std::to_string(t.byte_offset) + " from data " +
                         std::to_string(reinterpret_cast<std::uintptr_t>(data)) + " wraps around the address space",
                 loc);
    }
    data = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(data) + t.byte_offset);
  }
  return detail::import_borrowed(data, dtype, std::move(shape), std::move(strides),
                                [m] { if (m->deleter) m->deleter(m); }, op, loc, device, producer_stream);
}

}  // namespace

DLManagedTensorVersioned* to_dlpack_versioned(const Array& a, void* stream, Loc loc) {
  return export_tensor<DLManagedTensorVersioned>(a, stream, "to_dlpack_versioned", loc);
}
DLManagedTensor* to_dlpack(const Array& a, void* stream, Loc loc) {
  return export_tensor<DLManagedTensor>(a, stream, "to_dlpack", loc);
}
Array from_dlpack(DLManagedTensorVersioned* t, Loc loc) { return import_tensor(t, cuda::no_sync(), "from_dlpack", loc); }
Array from_dlpack(DLManagedTensor* t, Loc loc) { return import_tensor(t, cuda::no_sync(), "from_dlpack", loc); }
Array from_dlpack(DLManagedTensorVersioned* t, void* producer_stream, Loc loc) {
  return import_tensor(t, producer_stream, "from_dlpack", loc);
}
Array from_dlpack(DLManagedTensor* t, void* producer_stream, Loc loc) {
  return import_tensor(t, producer_stream, "from_dlpack", loc);
}

}  // namespace aj

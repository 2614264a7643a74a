// DLPack for C++ callers: the same calls as arrayjit/dlpack.h's aj_*_dlpack*,
// on aj::Array, throwing aj::Error. Zero-copy both ways; see dlpack.h for the
// ownership rules (the consumer calls an export's deleter once; arrayjit calls
// an import's deleter once, when the last array using it dies).
#pragma once

#include "arrayjit/array.hpp"
#include "arrayjit/dlpack_abi.h"

namespace aj {

// `stream`: the consumer's CUstream for a CUDA array (see dlpack.h); ignored on the host.
DLManagedTensorVersioned* to_dlpack_versioned(const Array& a, void* stream = nullptr,
                                              Loc loc = Loc::current());
DLManagedTensor* to_dlpack(const Array& a, void* stream = nullptr, Loc loc = Loc::current());

// CUDA tensors (kDLCUDA, kDLCUDAManaged) are read on arrayjit's current
// stream for the device: ask the producer for it (__dlpack__(stream=
// aj::cuda::current_stream(dev).handle())). Where the producer's writes are
// on another stream, name it: arrayjit's stream waits on an event recorded
// there (the CUDA Array Interface rule; see aj::cuda::borrow). The deleter
// runs after arrayjit's last work reading the memory completed.
Array from_dlpack(DLManagedTensorVersioned* t, Loc loc = Loc::current());
Array from_dlpack(DLManagedTensor* t, Loc loc = Loc::current());
Array from_dlpack(DLManagedTensorVersioned* t, void* producer_stream, Loc loc = Loc::current());
Array from_dlpack(DLManagedTensor* t, void* producer_stream, Loc loc = Loc::current());

}  // namespace aj

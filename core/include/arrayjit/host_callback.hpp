// A user's C++ function over evaluated host buffers, as a node of the graph
// (JAX's pure_callback; an executor meeting an op it does not know has
// somewhere to put it).
//
//   auto r = aj::host_callback(fn, {{shape, dtype}, ...}, {x, y});
//
// `fn(inputs, outputs)` runs when the results are evaluated, as a step of
// the plan, ordered with the kernels around it (what the inputs need runs
// before, what reads the results after; elementwise work around it still
// fuses into kernels of its own). inputs: the arrays as they are laid out
// in host memory (HostBuffer: data, dtype, shape, strides in elements; read
// only; a broadcast input may have zero strides: read with at() or check
// contiguous()); outputs: one row-major buffer per result, to be filled.
// The results are lazy arrays like any op's.
//
// Rules:
//  - The function is treated as pure: called once per evaluation of its
//    results, possibly not at all if nothing reads them, and two calls of
//    one HostCallback on the same arrays may be merged. Inside aj::compile it
//    is a step of the kept program: every replay calls it (the trace does
//    not).
//  - Results share one dtype (they are packed in one buffer and sliced
//    apart without copies); call it once per dtype otherwise.
//  - Host only: inputs on a CUDA device are an error naming the call (move
//    them with .to(Device::cpu())).
//  - What fn throws becomes an aj::Error naming the callback and the line it
//    was made at; the evaluation fails as any failing step does.
//  - Derivatives: none, unless a `vjp` callback is given: then reverse mode
//    calls it with inputs = (the call's inputs, its results, the results'
//    cotangents) and outputs = one cotangent per floating-point input (their
//    shapes and dtypes, which must be one dtype). Differentiating a call
//    without one is an error. Forward mode: an error.
//
// A HostCallback made once and called in a loop keeps one function: the
// plans of its calls are cached like any op's; host_callback(fn, ...) makes
// a new one at each call (fine inside aj::compile, traced once).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"
#include "arrayjit/host_buffer.hpp"

namespace aj {

using HostFn = std::function<void(const std::vector<HostBuffer>& inputs, const std::vector<HostBuffer>& outputs)>;

// A result's shape and dtype.
struct ResultSpec {
  Shape shape;
  DType dtype = DType::f32;
};

class HostCallback {
 public:
  explicit HostCallback(HostFn fn, std::string name = "host_callback", Loc loc = Loc::current());
  HostCallback(HostFn fn, HostFn vjp, std::string name = "host_callback", Loc loc = Loc::current());
  // The results of fn over `inputs`, lazy.
  std::vector<Array> operator()(const std::vector<ResultSpec>& results, const std::vector<Array>& inputs,
                                Loc loc = Loc::current()) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

std::vector<Array> host_callback(HostFn fn, const std::vector<ResultSpec>& results, const std::vector<Array>& inputs,
                                 Loc loc = Loc::current());
std::vector<Array> host_callback(HostFn fn, HostFn vjp, const std::vector<ResultSpec>& results,
                                 const std::vector<Array>& inputs, Loc loc = Loc::current());

}  // namespace aj

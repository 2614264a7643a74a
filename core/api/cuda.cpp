// The public API of arrayjit/cuda.hpp: availability, streams, DeviceScope,
// evaluation on a caller's stream, kernel sources, trimming.
#include <algorithm>

#include "arrayjit/cuda.hpp"
#include "backends/cuda/cuda_borrowed.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "core/api/foreign_storage.hpp"
#include "core/api/trace.hpp"
#include "exec/execute.hpp"
#include "jit/cuda/cuda_library.hpp"
#include "jit/cuda/cuda_source.hpp"
#include "jit/cuda/nvrtc_compile.hpp"
#include "opt/pipeline.hpp"

namespace aj::cuda {

bool available() { return driver_api() != nullptr; }

std::string unavailable_reason() {
  std::string why;
  return driver_api(&why) ? std::string() : why;
}

int device_count() { return device_count_or_zero(); }

bool compiler_available() { return nvrtc_api() != nullptr; }

std::string compiler_reason() {
  std::string why;
  return nvrtc_api(&why) ? std::string() : why;
}

Stream Stream::default_stream(int dev) { return Stream(cuda::device(dev).default_stream, dev); }

Stream Stream::wrap(void* custream, int dev) {
  const DeviceInfo& info = cuda::device(dev);
  if (custream) {
    CUcontext ctx = nullptr;
    AJ_CU(cuStreamGetCtx, static_cast<CUstream>(custream), &ctx);
    if (ctx != info.ctx) {
      runtime_error("aj::cuda::Stream::wrap: the stream belongs to another CUDA context than cuda:" +
                    std::to_string(dev) + "'s primary context");
    }
  }
  return Stream(custream, dev);
}

void Stream::synchronize() const {
  cuda::device(device_);
  AJ_CU(cuStreamSynchronize, static_cast<CUstream>(handle_));
  release_finished(false);  // borrowed buffers last used on this stream are free now
}

StreamGuard::StreamGuard(const Stream& s) : device_(s.device()) {
  push_stream(device_, static_cast<CUstream>(s.handle()));
}
StreamGuard::~StreamGuard() { pop_stream(device_); }

Stream current_stream(int dev) {
  CUstream s = stream_of(dev);
  return s == device(dev).default_stream ? Stream::default_stream(dev) : Stream::wrap(s, dev);
}

void eval(const std::vector<Array>& arrays, const Stream& stream, Loc loc) {
  StreamGuard guard(stream);
  aj::eval(arrays, loc);
}

DeviceScope::DeviceScope(Device d)
    : saved_(exec::scope_device().value_or(Device::cpu())), had_(exec::scope_device().has_value()) {
  switch (d.kind) {
    case Device::Kind::cpu: break;
    case Device::Kind::cuda: device(d.index); break;  // throws here when there is no such GPU
  }
  exec::set_scope_device(d);
}
DeviceScope::~DeviceScope() { exec::set_scope_device(had_ ? std::optional<Device>(saved_) : std::nullopt); }

std::string kernel_source(const std::vector<Array>& arrays) {
  trace::Scope scope;
  std::vector<NodeId> roots;
  for (const Array& a : arrays) {
    if (!a.valid()) continue;
    const NodeId id = trace::id(a, "cuda::kernel_source", Loc::current());
    if (!graph()[id].evaluated()) roots.push_back(id);
  }
  if (roots.empty()) return {};
  const opt::Plan p = opt::plan(roots, /*use_cache=*/false);
  const Schedule& s = p.schedule;
  const Graph& g = graph();
  std::string out;
  int n = 0;
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::kernel) {
      out += "// ---- kernel " + std::to_string(n++) + "\n" + render(collapse_axes(st.kernel)).source;
      continue;
    }
    if (st.kind != Step::Kind::library) continue;
    // The call with its inputs' layouts as the steps before will make them
    // (no addresses: only the sources are wanted).
    const Node& node = g[st.node];
    std::vector<Layout> layouts;
    for (NodeId i : node.inputs) {
      const auto it = s.layouts.find(i);
      layouts.push_back(g[i].evaluated() ? Layout{g[i].strides, g[i].offset}
                        : it != s.layouts.end() ? it->second : contiguous_layout(g[i].shape));
    }
    const LibraryCall call = opt::library_call(node, layouts);
    std::vector<LibrarySpec> shown;
    for (const LibraryLaunch& l : plan_library(call, std::vector<std::uint64_t>(call.inputs.size(), 0), 0, 1)) {
      if (std::find(shown.begin(), shown.end(), l.spec) != shown.end()) continue;
      shown.push_back(l.spec);
      out += "// ---- kernel " + std::to_string(n++) + "\n" + render_library(l.spec).source;
    }
  }
  return out;
}

void trim_memory(int dev) { trim(dev); }

Array borrow(void* ptr, DType dtype, Shape shape, std::vector<std::int64_t> strides, int dev,
             void* producer_stream, std::function<void()> release, Loc loc) {
  if (strides.empty()) strides = contiguous_strides(shape);
  return detail::import_borrowed(ptr, dtype, std::move(shape), std::move(strides), std::move(release),
                                "cuda::borrow", loc, Device::cuda(dev), producer_stream);
}

void release_borrowed(bool wait) { release_finished(wait); }

}  // namespace aj::cuda

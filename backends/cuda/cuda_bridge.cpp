// Pipeline steps on a GPU, and the public API of arrayjit/cuda.hpp.
#include "backends/cuda/cuda_bridge.hpp"

#include <algorithm>
#include <atomic>

#include "arrayjit/cuda.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "backends/reference/interpreter.hpp"
#include "core/stats_internal.hpp"
#include "graph/passes/simplify.hpp"
#include "jit/cuda/cuda_library.hpp"
#include "jit/cuda/cuda_source.hpp"
#include "jit/cuda/nvrtc_compile.hpp"

namespace aj::cuda {

namespace {

thread_local std::optional<Device> t_scope;

void require_cuda_device(Device d) {
  if (d.kind != Device::Kind::cuda) internal_error("cuda bridge: not a CUDA device: " + d.str());
}

// The storage a step reads input `n` from on `dev`: its own, or an upload of
// a host array (kept alive in `uploads` until the launch is enqueued).
const Storage* device_input(const Node& n, Device dev, std::vector<std::shared_ptr<Storage>>& uploads) {
  if (!n.evaluated()) internal_error("cuda: a step input was not computed before its step");
  if (n.storage->device == dev) return n.storage.get();
  if (n.storage->device.kind != Device::Kind::cpu) {
    runtime_error("aj: an evaluation on " + dev.str() + " reads an array on " + n.storage->device.str());
  }
  uploads.push_back(upload(*n.storage, dev.index));
  return uploads.back().get();
}

std::uint64_t address(const Storage* s) { return reinterpret_cast<std::uint64_t>(s->data); }

// ref::donation_applies with the device of this evaluation in place of the host.
bool donation_applies_on(NodeId from, std::size_t bytes, Device dev) {
  const Node& n = graph()[from];
  return n.alive && n.evaluated() && n.ext == 0 && !n.storage->borrowed && n.storage->device == dev &&
         n.storage.use_count() == 1 && n.storage->bytes == bytes;
}

}  // namespace

std::vector<LibraryLaunch> plan_library(const Node& n, const std::vector<StridedRef>& ins, std::uint64_t out,
                                        int sms) {
  const Graph& g = graph();
  std::vector<LibraryLaunch> launches;
  switch (n.op) {
    case Op::MatMul: {
      const Node& a = g[n.inputs[0]];
      launches.push_back(plan_matmul(n.dtype, n.shape.dims(), a.shape[a.shape.ndim() - 1], ins[0], ins[1], out, sms));
      break;
    }
    case Op::ArgMax:
    case Op::ArgMin: {
      const Node& src = g[n.inputs[0]];
      const LibraryOp op = n.op == Op::ArgMax ? LibraryOp::argmax : LibraryOp::argmin;
      launches.push_back(plan_arg_reduce(op, src.dtype, src.shape.dims(), static_cast<int>(n.ints[0]), ins[0], out, sms));
      break;
    }
    case Op::Concat: {
      const auto strides = contiguous_strides(n.shape);
      const auto axis = static_cast<std::size_t>(n.i0);
      std::int64_t base = 0;  // where the current input starts along the axis
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const Node& in = g[n.inputs[k]];
        launches.push_back(plan_copy(n.dtype, in.shape.dims(), ins[k], {out, strides, base * strides[axis]}, sms));
        base += in.shape[static_cast<int>(axis)];
      }
      break;
    }
    default: internal_error(std::string("cuda: no library kernel evaluates ") + op_name(n.op));
  }
  return launches;
}

bool any_device_storage() { return any_device_alloc() || t_scope.has_value(); }

std::optional<Device> scope_device() { return t_scope; }

Device schedule_device(const Schedule& s) {
  const Graph& g = graph();
  std::optional<Device> found;
  auto see = [&](NodeId id) {
    if (id == kNoNode || !g[id].evaluated()) return;
    const Device d = g[id].storage->device;
    if (d.kind != Device::Kind::cuda) return;
    if (found && *found != d) {
      runtime_error("aj: one evaluation reads arrays on " + found->str() + " and " + d.str() +
                    "; move them to one device with .to(...)");
    }
    found = d;
  };
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::kernel) {
      for (NodeId in : st.inputs) see(in);
    } else {
      for (NodeId in : g[st.node].inputs) see(in);
    }
  }
  if (t_scope && t_scope->kind == Device::Kind::cuda) {
    if (found && *found != *t_scope) {
      runtime_error("aj: an evaluation under DeviceScope(" + t_scope->str() + ") reads arrays on " + found->str());
    }
    return *t_scope;
  }
  return found.value_or(Device::cpu());
}

void run_kernel_step(const Step& st, const BufferPlan& buffers, std::size_t k, Device dev) {
  require_cuda_device(dev);
  Graph& g = graph();
  std::vector<std::shared_ptr<Storage>> uploads;  // live until the launch is enqueued
  std::vector<const Storage*> ins;
  for (std::size_t e = 0; e < st.inputs.size(); ++e) {
    ins.push_back(st.kernel.inputs[e].index_only ? nullptr : device_input(g[st.inputs[e]], dev, uploads));
  }
  std::vector<std::shared_ptr<Storage>> outs;
  std::vector<const Storage*> out_ptrs;
  for (std::size_t j = 0; j < st.outputs.size(); ++j) {
    const Node& n = g[st.outputs[j]];
    const std::size_t bytes = static_cast<std::size_t>(n.numel()) * itemsize(n.dtype);
    std::shared_ptr<Storage> s;
    for (const Donation& d : buffers.donations) {
      if (d.step == static_cast<int>(k) && d.output == static_cast<int>(j) && donation_applies_on(d.from, bytes, dev)) {
        s = g[d.from].storage;
        ++detail::stats_mut().inplace_reuses;
      }
    }
    if (!s) s = device_alloc(dev.index, bytes);
    out_ptrs.push_back(s.get());
    outs.push_back(std::move(s));
  }
  launch(dev.index, st.kernel, ins, out_ptrs);
  ++detail::stats_mut().kernels_launched;
  for (std::size_t j = 0; j < st.outputs.size(); ++j) {
    NodeId id = st.outputs[j];
    g.set_result(id, std::move(outs[j]), contiguous_strides(g[id].shape), 0);
  }
}

void run_library_step(NodeId id, Device dev) {
  require_cuda_device(dev);
  Graph& g = graph();
  const Node& n = g[id];
  const int sms = device(dev.index).sms;
  std::vector<std::shared_ptr<Storage>> uploads;  // live until the launches are enqueued
  std::vector<const Storage*> touched;
  std::vector<StridedRef> ins;
  for (NodeId i : n.inputs) {
    const Node& in = g[i];
    touched.push_back(device_input(in, dev, uploads));
    ins.push_back({address(touched.back()), in.strides, in.offset});
  }
  auto out = device_alloc(dev.index, static_cast<std::size_t>(n.numel()) * itemsize(n.dtype));
  touched.push_back(out.get());
  for (const LibraryLaunch& l : plan_library(n, ins, address(out.get()), sms)) {
    if (l.grid == 0) continue;
    launch_library(dev.index, l, touched);
    ++detail::stats_mut().kernels_launched;
  }
  g.set_result(id, std::move(out), contiguous_strides(g[id].shape), 0);
}

void run_on_host(NodeId id, Device dev) {
  require_cuda_device(dev);
  Graph& g = graph();
  // Swap each device input's storage for a host copy while the reference
  // interpreter runs; put the device storage back after (if the input is
  // still alive: evaluating may have dropped its last use).
  struct Swapped {
    NodeId id;
    std::shared_ptr<Storage> device;
    const Storage* host;
  };
  struct Restore {
    std::vector<Swapped> list;
    ~Restore() {
      Graph& gr = graph();
      for (auto& s : list) {
        if (gr[s.id].alive && gr[s.id].storage.get() == s.host) gr[s.id].storage = s.device;
      }
    }
  } restore;
  const std::vector<NodeId> inputs = g[id].inputs;
  for (NodeId in : inputs) {
    Node& n = g[in];
    if (!n.evaluated() || n.storage->device.kind != Device::Kind::cuda) continue;
    auto host = download(*n.storage);
    restore.list.push_back({in, n.storage, host.get()});
    n.storage = std::move(host);
  }
  ref::evaluate_node(id);
  const Node& r = g[id];
  if (r.storage->device == dev) return;
  auto strides = r.strides;
  const std::int64_t offset = r.offset;
  g.set_result(id, upload(*r.storage, dev.index), std::move(strides), offset);
}

std::shared_ptr<Storage> to_host(const Storage& s) { return download(s); }

std::shared_ptr<Storage> to_device(const Storage& s, Device d) {
  require_cuda_device(d);
  if (s.device.kind == Device::Kind::cuda) {
    auto host = download(s);  // GPU to GPU through the host: rare, simple
    return upload(*host, d.index);
  }
  return upload(s, d.index);
}

// ---- public API (arrayjit/cuda.hpp) ----------------------------------------------

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

DeviceScope::DeviceScope(Device d) : saved_(t_scope.value_or(Device::cpu())), had_(t_scope.has_value()) {
  if (d.kind == Device::Kind::cuda) device(d.index);  // throws here when there is no such GPU
  t_scope = d;
}
DeviceScope::~DeviceScope() {
  if (had_) t_scope = saved_;
  else t_scope.reset();
}

std::string kernel_source(const std::vector<Array>& arrays) {
  std::vector<NodeId> roots;
  for (const Array& a : arrays) {
    if (a.valid() && !a.is_evaluated()) roots.push_back(a.node_id());
  }
  if (roots.empty()) return {};
  simplify(roots);  // as the pipeline does before fusing
  std::string out;
  int n = 0;
  const Schedule s = fuse(roots);
  const Graph& g = graph();
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::kernel) {
      out += "// ---- kernel " + std::to_string(n++) + "\n" + render(collapse_axes(st.kernel)).source;
      continue;
    }
    const Node& node = g[st.node];
    if (st.kind != Step::Kind::reference || op_category(node.op) == OpCategory::View) continue;
    // The inputs' layouts as the steps before will make them (no addresses:
    // only the sources are wanted).
    std::vector<StridedRef> ins;
    for (NodeId i : node.inputs) {
      const auto it = s.layouts.find(i);
      const Layout l = g[i].evaluated() ? Layout{g[i].strides, g[i].offset}
                       : it != s.layouts.end() ? it->second : contiguous_layout(g[i].shape);
      ins.push_back({0, l.strides, l.offset});
    }
    std::vector<LibrarySpec> shown;
    for (const LibraryLaunch& l : plan_library(node, ins, 0, 1)) {
      if (std::find(shown.begin(), shown.end(), l.spec) != shown.end()) continue;
      shown.push_back(l.spec);
      out += "// ---- kernel " + std::to_string(n++) + "\n" + render_library(l.spec).source;
    }
  }
  return out;
}

void trim_memory(int dev) { trim(dev); }

}  // namespace aj::cuda

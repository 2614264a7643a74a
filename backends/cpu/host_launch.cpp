#include "backends/cpu/host_launch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "arrayjit/jit.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "jit/host_kernel.hpp"

namespace aj {

namespace jit {
namespace {
std::atomic<int>& enabled_flag() {
  static std::atomic<int> on = [] {
    const char* e = std::getenv("AJ_JIT");
    return e && (std::strcmp(e, "0") == 0 || std::strcmp(e, "off") == 0) ? 0 : 1;
  }();
  return on;
}
std::atomic<int> g_threads{0};
}  // namespace

bool enabled() { return enabled_flag().load(std::memory_order_relaxed) != 0; }
void set_enabled(bool on) { enabled_flag().store(on ? 1 : 0); }
int num_threads() { return g_threads.load(); }
void set_num_threads(int n) { g_threads.store(std::max(0, n)); }
}  // namespace jit

namespace cpu {

namespace {

// The same loop nest with fewer axes: extent-1 axes dropped, and adjacent
// axes merged where every stream walks them as one (stride[d] ==
// stride[d+1] * extent[d+1]) and both are reduced or both not. A contiguous
// [1000, 3] kernel becomes one loop of 3000 (long vector loops, fewer index
// divisions), and kernels of any rank over contiguous data share one
// compiled function. False when nothing would change.
bool collapse_axes(const Kernel& k, Kernel* out) {
  const std::size_t rank = k.shape.size();
  if (rank == 0) return false;
  std::vector<const KStream*> streams;
  for (auto& s : k.inputs) streams.push_back(&s);
  for (auto& o : k.outputs) streams.push_back(&o.stream);
  auto reduced = [&](std::size_t d) {
    return std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) != k.reduce_axes.end();
  };
  std::vector<std::int64_t> ext;
  std::vector<bool> red;
  std::vector<std::vector<std::int64_t>> st(streams.size());
  for (std::size_t d = 0; d < rank; ++d) {
    if (k.shape[d] == 1) continue;  // its index is always 0
    bool merge = !ext.empty() && red.back() == reduced(d);
    for (std::size_t s = 0; merge && s < streams.size(); ++s) {
      merge = st[s].back() == streams[s]->strides[d] * k.shape[d];
    }
    if (merge) {
      ext.back() *= k.shape[d];
      for (std::size_t s = 0; s < streams.size(); ++s) st[s].back() = streams[s]->strides[d];
      continue;
    }
    ext.push_back(k.shape[d]);
    red.push_back(reduced(d));
    for (std::size_t s = 0; s < streams.size(); ++s) st[s].push_back(streams[s]->strides[d]);
  }
  if (k.is_reduction() && std::find(red.begin(), red.end(), true) == red.end()) {
    ext.push_back(1);  // a reduction keeps a (trivial) reduce axis
    red.push_back(true);
    for (auto& v : st) v.push_back(0);
  }
  if (ext.size() == rank) return false;
  *out = k;
  out->shape = ext;
  out->reduce_axes.clear();
  for (std::size_t d = 0; d < red.size(); ++d) if (red[d]) out->reduce_axes.push_back(static_cast<std::int64_t>(d));
  for (std::size_t s = 0; s < streams.size(); ++s) {
    KStream& t = s < k.inputs.size() ? out->inputs[s] : out->outputs[s - k.inputs.size()].stream;
    t.strides = std::move(st[s]);
  }
  return true;
}

}  // namespace

void run_kernel_compiled(const Kernel& original, const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs) {
  Kernel collapsed;
  const Kernel& k = collapse_axes(original, &collapsed) ? collapsed : original;
  const std::int64_t outer = k.outer_points();
  if (outer == 0) return;  // nothing to write (reductions of empty axes still have outer points)
  std::vector<int> alias = jit::exact_aliases(k, inputs, outputs);
  jit::HostKernelFn fn = jit::host_kernel(k, alias);

  const std::size_t rank = k.shape.size();
  const std::size_t nstreams = k.inputs.size() + k.outputs.size();
  // Small kernels: arguments on the stack, no heap allocation.
  constexpr std::size_t kSmall = 16;
  void* ptr_buf[kSmall];
  std::int64_t off_buf[kSmall], stride_buf[kSmall * 4];
  std::vector<void*> ptr_vec;
  std::vector<std::int64_t> off_vec, stride_vec;
  void** ptrs = ptr_buf;
  std::int64_t* offs = off_buf;
  std::int64_t* strides = stride_buf;
  if (nstreams > kSmall || nstreams * rank > kSmall * 4) {
    ptr_vec.resize(nstreams);
    off_vec.resize(nstreams);
    stride_vec.resize(nstreams * rank);
    ptrs = ptr_vec.data();
    offs = off_vec.data();
    strides = stride_vec.data();
  }
  for (std::size_t s = 0; s < nstreams; ++s) {
    const bool in = s < k.inputs.size();
    const KStream& st = in ? k.inputs[s] : k.outputs[s - k.inputs.size()].stream;
    ptrs[s] = in ? const_cast<void*>(inputs[s]) : outputs[s - k.inputs.size()];
    offs[s] = st.offset;
    std::copy(st.strides.begin(), st.strides.end(), strides + s * rank);
  }
  const jit::HostArgs args{ptrs, k.shape.data(), strides, offs, k.scalars.data()};

  const long long work = static_cast<long long>(k.points()) * static_cast<long long>(std::max<std::size_t>(1, k.instrs.size()));
  int threads = jit::num_threads();
  if (threads <= 0) threads = hardware_threads();
  threads = static_cast<int>(std::min<std::int64_t>(threads, outer));
  if (work < kParallelWork || threads <= 1) {
    fn(&args, 0, outer);
    return;
  }
  // Contiguous chunks, a few per thread, taken by whichever thread is free.
  struct Ctx {
    jit::HostKernelFn fn;
    const jit::HostArgs* args;
  } ctx{fn, &args};
  parallel_chunks([](const void* c, std::int64_t lo, std::int64_t hi) {
    auto* x = static_cast<const Ctx*>(c);
    x->fn(x->args, lo, hi);
  }, &ctx, outer, static_cast<std::int64_t>(threads) * 8, threads);
}

}  // namespace cpu
}  // namespace aj

#include "backends/cpu/host_launch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "arrayjit/error.hpp"
#include "base/interrupt.hpp"
#include "base/stats.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "graph/kernel_split.hpp"
#include "jit/host_kernel.hpp"

namespace aj::cpu {

namespace {

std::atomic<int>& jit_flag() {
  static std::atomic<int> on = [] {
    const char* e = std::getenv("AJ_JIT");
    return e && (std::strcmp(e, "0") == 0 || std::strcmp(e, "off") == 0) ? 0 : 1;
  }();
  return on;
}
std::atomic<int> g_threads{0};

constexpr std::int64_t kOuterChunk = 1024;
// ... and a block an interrupt may stop it between, on one thread, spans at
// least kOuterBlock outputs: every block walks every row, so narrow blocks
// read each row in short pieces far apart. cumsum(x, 0) of f32 [4096, 4096]
// on 1 thread ran in 4 blocks of 1,024 columns at 11.8-12.3 ms (a row-after-
// row hand loop: 7.0) and runs in one at 5.9 ms (Zen 4).
constexpr std::int64_t kOuterBlock = 4096;

// An interrupt (aj::interrupt) stops a long kernel between blocks of about
// this much work (points x instructions: some milliseconds), so that Ctrl-C
// in the REPL does not wait for a kernel of minutes. A block this large
// makes the check (one relaxed load) cost nothing.
constexpr long long kBlockWork = 1LL << 24;

// Whether a launch may be abandoned halfway: none of its outputs is written
// over one of its inputs (an in-place donation: the input would be half
// overwritten, and the values still to compute read it). The rest of the
// outputs are new buffers nothing holds yet, dropped when the run throws.
bool abandonable(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  for (const void* o : outputs) {
    for (const void* i : inputs) {
      if (o == i) return false;
    }
  }
  return true;
}

// A kernel's extents, strides and offsets as HostArgs reads them, made once
// for a prepared kernel (a launch then only fills in its pointers).
struct ArgLayout {
  std::vector<std::int64_t> shape, strides, offsets;
  explicit ArgLayout(const Kernel& k) : shape(k.shape) {
    auto add = [&](const KStream& st) {
      offsets.push_back(st.offset);
      strides.insert(strides.end(), st.strides.begin(), st.strides.end());
    };
    for (const KStream& st : k.inputs) add(st);
    for (const KOutput& o : k.outputs) add(o.stream);
  }
};

// The run-time arguments of one call of a compiled kernel: pointers, extents,
// strides and offsets laid out as HostArgs wants them. Small kernels keep
// them on the stack (a small call allocates nothing).
class Args {
 public:
  // Pointers only; the rest is `l`'s (restrict_axis and add_offset may not be used).
  Args(const ArgLayout& l, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
       const KScalar* scalars)
      : rank_(l.shape.size()), n_(inputs.size() + outputs.size()), shared_layout_(true) {
    if (n_ > kSmall) {
      ptr_vec_.resize(n_);
      ptrs_ = ptr_vec_.data();
    }
    for (std::size_t s = 0; s < inputs.size(); ++s) ptrs_[s] = const_cast<void*>(inputs[s]);
    for (std::size_t s = 0; s < outputs.size(); ++s) ptrs_[inputs.size() + s] = outputs[s];
    args_ = {ptrs_, l.shape.data(), l.strides.data(), l.offsets.data(), scalars};
  }
  Args(const Kernel& k, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
       const KScalar* scalars = nullptr)
      : rank_(k.shape.size()), n_(k.inputs.size() + k.outputs.size()) {
    if (n_ > kSmall || n_ * rank_ > kSmall * 4 || rank_ > kSmall) {
      ptr_vec_.resize(n_);
      off_vec_.resize(n_);
      stride_vec_.resize(n_ * rank_);
      shape_vec_.resize(rank_);
      ptrs_ = ptr_vec_.data();
      offs_ = off_vec_.data();
      strides_ = stride_vec_.data();
      shape_ = shape_vec_.data();
    }
    std::copy(k.shape.begin(), k.shape.end(), shape_);
    for (std::size_t s = 0; s < n_; ++s) {
      const bool in = s < k.inputs.size();
      const KStream& st = in ? k.inputs[s] : k.outputs[s - k.inputs.size()].stream;
      ptrs_[s] = in ? const_cast<void*>(inputs[s]) : outputs[s - k.inputs.size()];
      offs_[s] = st.offset;
      std::copy(st.strides.begin(), st.strides.end(), strides_ + s * rank_);
    }
    args_ = {ptrs_, shape_, strides_, offs_, scalars ? scalars : k.scalars.data()};
  }
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  const jit::HostArgs* get() const { return &args_; }

  // Restricts axis `a` to [lo, hi): every stream starts lo steps further.
  void restrict_axis(std::size_t a, std::int64_t lo, std::int64_t hi) {
    if (shared_layout_) internal_error("Args: restrict_axis on a prepared kernel's shared layout");
    shape_[a] = hi - lo;
    for (std::size_t s = 0; s < n_; ++s) offs_[s] += lo * strides_[s * rank_ + a];
  }
  void add_offset(std::size_t stream, std::int64_t d) {
    if (shared_layout_) internal_error("Args: add_offset on a prepared kernel's shared layout");
    offs_[stream] += d;
  }

 private:
  static constexpr std::size_t kSmall = 16;
  std::size_t rank_, n_;
  bool shared_layout_ = false;
  void* ptr_buf_[kSmall];
  std::int64_t off_buf_[kSmall], stride_buf_[kSmall * 4], shape_buf_[kSmall];
  std::vector<void*> ptr_vec_;
  std::vector<std::int64_t> off_vec_, stride_vec_, shape_vec_;
  void** ptrs_ = ptr_buf_;
  std::int64_t* offs_ = off_buf_;
  std::int64_t* strides_ = stride_buf_;
  std::int64_t* shape_ = shape_buf_;
  jit::HostArgs args_{};
};

// A launch's work: points times instructions (kParallelWork and up: split
// over threads).
long long launch_work(const Kernel& k) {
  return static_cast<long long>(k.points()) * static_cast<long long>(std::max<std::size_t>(1, k.instrs.size()));
}

// Whether a launch on `threads` tries run_split: a large reduction with
// fewer outer points than threads.
bool may_split(const Kernel& k, int threads) {
  return launch_work(k) >= kParallelWork && threads > 1 && k.is_reduction() && k.outer_points() < threads;
}

// Runs `k` split over its reduced range (graph/kernel_split.hpp: a partial
// kernel per part of the range, run concurrently, then a finishing kernel);
// false when it cannot be split (nothing was run). The part count depends
// only on the thread count, so a result is the same from call to call.
bool run_split(const Kernel& k, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
               int threads) {
  const std::int64_t extent = k.shape[static_cast<std::size_t>(k.reduce_axes[0])];
  const std::int64_t parts = std::min<std::int64_t>(extent, static_cast<std::int64_t>(threads) * 4);
  if (parts < 2) return false;
  const std::optional<SplitReduction> split = split_reduction(k, parts);
  if (!split) return false;
  const SplitReduction& sp = *split;
  // 8 bytes per slot hold any dtype.
  std::vector<std::vector<std::uint64_t>> scratch(sp.slots.size(),
                                                  std::vector<std::uint64_t>(static_cast<std::size_t>(parts * sp.outer)));
  std::vector<void*> pouts;
  for (std::size_t j : sp.partial_outputs) pouts.push_back(outputs[j]);
  for (auto& s : scratch) pouts.push_back(s.data());
  const std::vector<int> alias = jit::exact_aliases(sp.partial, inputs, pouts);
  const jit::HostKernelFn fn = jit::host_kernel(sp.partial, alias, launch_work(k)).fn;
  struct Ctx {
    const SplitReduction* sp;
    const std::vector<const void*>* inputs;
    const std::vector<void*>* outs;
    jit::HostKernelFn fn;
    std::int64_t extent;
    bool abandonable;
  } ctx{&sp, &inputs, &pouts, fn, extent, abandonable(inputs, outputs)};
  parallel_chunks([](const void* c, std::int64_t lo, std::int64_t hi) {
    auto* x = static_cast<const Ctx*>(c);
    const SplitReduction& s = *x->sp;
    for (std::int64_t part = lo; part < hi; ++part) {
      if (x->abandonable && detail::interrupt_requested()) return;  // the launch throws below
      Args a(s.partial, *x->inputs, *x->outs);
      a.restrict_axis(s.axis, x->extent * part / s.parts, x->extent * (part + 1) / s.parts);
      // Scratch slots: this part's row (their stride on the split axis is 0).
      const std::size_t first_scratch = s.partial.inputs.size() + s.partial_outputs.size();
      for (std::size_t r = 0; r < s.slots.size(); ++r) a.add_offset(first_scratch + r, part * s.outer);
      x->fn(a.get(), 0, s.outer);
    }
  }, &ctx, parts, parts, threads);
  if (ctx.abandonable) detail::check_interrupt();
  // Arg reductions' indices counted from their part's first point: make
  // them indices along the whole axis.
  for (std::size_t r = 0; r < sp.slots.size(); ++r) {
    if (!sp.slots[r].index) continue;
    auto* idx = reinterpret_cast<std::int64_t*>(scratch[r].data());
    for (std::int64_t part = 1; part < parts; ++part) {
      for (std::int64_t o = 0; o < sp.outer; ++o) idx[part * sp.outer + o] += extent * part / parts;
    }
  }

  std::vector<const void*> fins;
  for (int m : sp.finish_inputs) {
    fins.push_back(m >= 0 ? static_cast<const void*>(scratch[static_cast<std::size_t>(m)].data())
                          : inputs[static_cast<std::size_t>(-m - 1)]);
  }
  std::vector<void*> fouts;
  for (std::size_t j : sp.finish_outputs) fouts.push_back(outputs[j]);
  if (!fouts.empty()) {
    const jit::HostKernelFn ffn = jit::host_kernel(sp.finish, jit::exact_aliases(sp.finish, fins, fouts), launch_work(sp.finish)).fn;
    Args a(sp.finish, fins, fouts);
    ffn(a.get(), 0, sp.outer);
  }
  return true;
}

}  // namespace

namespace {

// Launches the collapsed kernel `k` (its compiled function from `fn_for`,
// given the launch's aliasing and work), `scalars` its run-time scalars, `layout`
// its argument layout when made already (a prepared kernel). The caller
// holds a CodeInUse.
template <class FnFor>
void launch(const Kernel& k, const KScalar* scalars, const std::vector<const void*>& inputs,
            const std::vector<void*>& outputs, FnFor&& fn_for, const ArgLayout* layout = nullptr) {
  const std::int64_t outer = k.outer_points();
  if (outer == 0) return;  // nothing to write (reductions of empty axes still have outer points)

  const long long work = launch_work(k);
  int threads = num_threads();
  if (threads <= 0) threads = hardware_threads();
  if (may_split(k, threads)) {
    // Split over the reduced range (the split kernels carry the scalars).
    if (scalars == k.scalars.data()) {
      if (run_split(k, inputs, outputs, threads)) return;
    } else {
      Kernel bound = k;
      std::copy(scalars, scalars + k.scalars.size(), bound.scalars.begin());
      if (run_split(bound, inputs, outputs, threads)) return;
    }
  }
  threads = static_cast<int>(std::min<std::int64_t>(threads, outer));
  thread_local std::vector<int> alias;  // reused (looked up before any nested launch)
  jit::exact_aliases_into(k, inputs, outputs, alias);
  jit::HostKernelFn fn = fn_for(alias, work);
  std::optional<Args> made;
  if (layout) made.emplace(*layout, inputs, outputs, scalars);
  else made.emplace(k, inputs, outputs, scalars);
  const Args& args = *made;
  // A chunk of an outer-axis reduction walks every row of its outputs, so
  // it spans at least kOuterChunk of them (long row pieces for the
  // prefetchers; jit/llvm/codegen.hpp's accumulator blocks are of that order).
  const bool outer_axis_reduction = k.is_reduction() && k.reduce_axes.back() != static_cast<std::int64_t>(k.shape.size()) - 1;
  // Blocks an interrupt may stop the launch between (kBlockWork each); one
  // when the launch may not be abandoned.
  const bool may_abandon = work >= 2 * kBlockWork && abandonable(inputs, outputs);
  std::int64_t blocks = may_abandon ? std::min<std::int64_t>(outer, work / kBlockWork) : 1;
  if (outer_axis_reduction) blocks = std::clamp<std::int64_t>(outer / kOuterBlock, 1, blocks);
  if (work < kParallelWork || threads <= 1) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      if (may_abandon) detail::check_interrupt();
      fn(args.get(), outer * b / blocks, outer * (b + 1) / blocks);
    }
    return;
  }
  // Contiguous chunks, a few per thread (and at most a block each), taken by
  // whichever thread is free; an outer-axis reduction's of kOuterChunk rows
  // at least.
  std::int64_t chunks = std::max<std::int64_t>(static_cast<std::int64_t>(threads) * 8, blocks);
  if (outer_axis_reduction) chunks = std::clamp<std::int64_t>(outer / kOuterChunk, threads, chunks);
  struct Ctx {
    jit::HostKernelFn fn;
    const jit::HostArgs* args;
    bool may_abandon;
  } ctx{fn, args.get(), may_abandon};
  parallel_chunks([](const void* c, std::int64_t lo, std::int64_t hi) {
    auto* x = static_cast<const Ctx*>(c);
    if (x->may_abandon && detail::interrupt_requested()) return;  // the launch throws below
    x->fn(x->args, lo, hi);
  }, &ctx, outer, chunks, threads);
  if (may_abandon) detail::check_interrupt();
}

}  // namespace

void run_kernel_compiled(const Kernel& original, const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs) {
  jit::CodeInUse in_use;  // the compiled code stays loaded until this launch is done
  Kernel collapsed;
  const Kernel& k = collapse_axes(original, &collapsed) ? collapsed : original;
  launch(k, k.scalars.data(), inputs, outputs,
         [&](const std::vector<int>& alias, long long work) { return jit::host_kernel(k, alias, work).fn; });
}

// A kernel collapsed once, and its compiled function per aliasing pattern
// seen, each valid while the JIT's cache generation is the one it was
// looked up in. Quick code's launches are counted here and reported to the
// JIT (which queues the kernel's full compile once they reach its
// thresholds) after kTierUpLaunches of them, then after twice as many each
// time the JIT still answers with quick code, so a launch of a prepared
// kernel builds no key; and it looks again as soon as the JIT has replaced
// any quick code by full code (host_tier_ups: one atomic load a launch).
struct PreparedHostKernel final : exec::PreparedKernel {
  static constexpr int kMaxReportInterval = 1024;
  explicit PreparedHostKernel(Kernel collapsed) : k(std::move(collapsed)), layout(k) {}
  Kernel k;  // collapsed
  ArgLayout layout;
  mutable std::mutex mu;
  struct Fn {
    std::vector<int> alias;
    jit::HostKernelFn fn;
    std::uint64_t generation;
    bool quick;
    long long unreported;  // work run with quick code since the JIT last heard
    int launches;          // launches of it since then
    int report_every;      // launches between reports
    std::uint64_t tier_ups;  // host_tier_ups() when it was looked up
  };
  mutable std::vector<Fn> fns;

  jit::HostKernelFn fn_for(const std::vector<int>& alias, long long work) const {
    const std::uint64_t gen = jit::host_kernels_generation();
    const std::uint64_t ups = jit::host_tier_ups();
    int launches = 1;
    // The first lookup counts its launch itself: the JIT hears again when
    // the kernel has run kTierUpLaunches times in all.
    int interval = std::max(1, static_cast<int>(jit::kTierUpLaunches) - 1);
    {
      std::lock_guard lock(mu);
      for (Fn& f : fns) {
        if (f.alias != alias || f.generation != gen) continue;
        if (f.quick) {
          f.unreported += work;
          const bool upgraded = f.tier_ups != ups;  // some kernel's full code came: maybe this one's
          if (++f.launches >= f.report_every || f.unreported >= jit::kTierUpWork || upgraded) {
            work = std::exchange(f.unreported, 0);
            launches = std::exchange(f.launches, 0);
            interval = upgraded ? std::max(1, f.report_every - launches) : std::min(2 * f.report_every, kMaxReportInterval);
            break;  // to the JIT, which may have the full code (or queue it)
          }
        }
        ++detail::stats_mut().kernel_cache_hits;  // found compiled, as the JIT's cache would
        return f.fn;
      }
    }
    const jit::HostKernelRef r = jit::host_kernel(k, alias, work, launches);
    std::lock_guard lock(mu);
    std::erase_if(fns, [&](const Fn& f) { return f.alias == alias || f.generation != gen; });
    fns.push_back({alias, r.fn, gen, r.quick, 0, 0, interval, ups});
    return r.fn;
  }
};

std::shared_ptr<const exec::PreparedKernel> prepare_compiled(const Kernel& original) {
  Kernel collapsed;
  if (!collapse_axes(original, &collapsed)) collapsed = original;
  return std::make_shared<PreparedHostKernel>(std::move(collapsed));
}

void run_prepared_compiled(const exec::PreparedKernel& prepared, const KScalar* scalars,
                           const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  const auto& p = static_cast<const PreparedHostKernel&>(prepared);
  jit::CodeInUse in_use;  // read the generation inside: a function it vouches for stays loaded
  launch(p.k, scalars ? scalars : p.k.scalars.data(), inputs, outputs,
         [&](const std::vector<int>& alias, long long work) { return p.fn_for(alias, work); }, &p.layout);
}

void compile_ahead(const std::vector<exec::Backend::AheadKernel>& ks) {
  int threads = num_threads();
  if (threads <= 0) threads = hardware_threads();
  if (threads <= 1) return;
  // Each kernel as its launch will look it up: collapsed, with the aliasing
  // its buffers would give (ids as stand-in addresses; exact_aliases only
  // compares them). Those in memory already, and those a launch would split
  // (other kernels), are left out.
  struct Job {
    const PreparedHostKernel* prepared = nullptr;  // else the kernel as given, or collapsed
    const Kernel* given = nullptr;
    std::optional<Kernel> collapsed;
    std::vector<int> alias;
    const Kernel& k() const { return prepared ? prepared->k : collapsed ? *collapsed : *given; }
  };
  std::vector<Job> jobs;
  jobs.reserve(ks.size());
  std::unordered_set<std::string> keys;
  auto id_ptr = [](std::int64_t id) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id + 1) * 64); };
  for (const exec::Backend::AheadKernel& a : ks) {
    Job j;
    j.prepared = static_cast<const PreparedHostKernel*>(a.prepared);
    if (!j.prepared) {
      j.given = a.kernel;
      Kernel c;
      if (collapse_axes(*a.kernel, &c)) j.collapsed = std::move(c);
    }
    const Kernel& k = j.k();
    if (k.outer_points() == 0 || may_split(k, threads)) continue;
    std::vector<const void*> ins;
    std::vector<void*> outs;
    for (std::int64_t b : a.input_buffers) ins.push_back(id_ptr(b));
    for (std::int64_t b : a.output_buffers) outs.push_back(id_ptr(b));
    if (ins.size() != k.inputs.size() || outs.size() != k.outputs.size()) continue;
    j.alias = jit::exact_aliases(k, ins, outs);
    std::string key = jit::host_kernel_missing(k, j.alias);
    if (key.empty() || !keys.insert(std::move(key)).second) continue;  // in memory, or a job already
    jobs.push_back(std::move(j));
  }
  if (jobs.size() < 2) return;  // one kernel: compiled at its launch, as ever
  parallel_chunks([](const void* ctx, std::int64_t lo, std::int64_t hi) {
    const auto& all = *static_cast<const std::vector<Job>*>(ctx);
    for (std::int64_t i = lo; i < hi; ++i) {
      const Job& j = all[static_cast<std::size_t>(i)];
      try {
        jit::CodeInUse in_use;
        // The tier its first launch would get (that launch's work is
        // counted here).
        if (j.prepared) {
          j.prepared->fn_for(j.alias, launch_work(j.k()));
        } else {
          jit::host_kernel(j.k(), j.alias, launch_work(j.k()));
        }
        ++detail::stats_mut().kernels_compiled_ahead;
      } catch (const std::exception&) {
        // Left to the launch, which compiles it again and reports the error
        // where the kernel runs.
      }
    }
  }, &jobs, static_cast<std::int64_t>(jobs.size()), static_cast<std::int64_t>(jobs.size()), threads);
}

struct KernelRanges::Impl {
  Kernel collapsed;
  const Kernel* k;
  jit::HostKernelFn fn;
  std::unique_ptr<Args> args;
};

KernelRanges::KernelRanges(const Kernel& original, const std::vector<const void*>& inputs,
                           const std::vector<void*>& outputs)
    : impl_(new Impl) {
  if (original.is_reduction()) internal_error("KernelRanges: a reduction kernel");
  impl_->k = collapse_axes(original, &impl_->collapsed) ? &impl_->collapsed : &original;
  impl_->fn = jit::host_kernel(*impl_->k, jit::exact_aliases(*impl_->k, inputs, outputs), launch_work(*impl_->k)).fn;
  impl_->args = std::make_unique<Args>(*impl_->k, inputs, outputs);
}

KernelRanges::~KernelRanges() { delete impl_; }

void KernelRanges::run(std::int64_t begin, std::int64_t end) const {
  if (begin < end) impl_->fn(impl_->args->get(), begin, end);
}

bool jit_enabled() { return jit_flag().load(std::memory_order_relaxed) != 0; }
void set_jit_enabled(bool on) { jit_flag().store(on ? 1 : 0); }
int num_threads() { return g_threads.load(std::memory_order_relaxed); }
void set_num_threads(int n) { g_threads.store(std::max(0, n)); }

}  // namespace aj::cpu

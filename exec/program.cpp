// The one step loop (see program.hpp).
#include "exec/program.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>

#include "base/interrupt.hpp"
#include "base/profile.hpp"
#include "base/stats.hpp"
#include "opt/verify.hpp"

namespace aj::exec {

namespace prof = detail::prof;

namespace {

std::atomic<DestinationHook> g_destination{nullptr};

thread_local int t_current_step = -1;

// Where a run's values live, as run_program sees them: the slot holding a
// value's buffer, whether nothing else holds it, making and releasing values.
class VectorSlots {
 public:
  explicit VectorSlots(VectorValues& v) : v_(v) {}
  std::shared_ptr<Storage>& slot(int v) { return v_.storage[static_cast<std::size_t>(v)]; }
  bool sole_owner(int v) {
    const std::shared_ptr<Storage>& s = slot(v);
    return s && s.use_count() == 1;
  }
  void set(int v, std::shared_ptr<Storage> s, const Layout&) { slot(v) = std::move(s); }
  void release(int v) { slot(v).reset(); }
  std::shared_ptr<Storage> destination(int, std::size_t) { return nullptr; }
  struct Unlocked {};  // no graph lock is held

 private:
  VectorValues& v_;
};

// A value made by a step becomes its node's result; the node is held (a use
// taken) until the program's release of the value: a node whose consumers
// are all evaluated loses its last use, and a later step of this program may
// still read it (a kernel that recomputes a stored value from its input).
// `held` flags the values held; run_program lets the rest go at the end.
class GraphSlots {
 public:
  GraphSlots(GraphValues& v, std::vector<char>& held) : nodes_(*v.nodes), held_(held) {}
  // (A node is looked up at each use: while the lock is let go, other
  // threads may use the graph.)
  std::shared_ptr<Storage>& slot(int v) { return graph()[node(v)].storage; }
  bool sole_owner(int v) {
    const Node& n = graph()[node(v)];
    return n.alive && n.storage && graph().ext_count(node(v)) == 0 && n.storage.use_count() == 1;
  }
  void set(int v, std::shared_ptr<Storage> s, const Layout& l) {
    graph().set_result(node(v), std::move(s), l.strides, l.offset);
    if (!held_[static_cast<std::size_t>(v)]) {
      graph().take_use(node(v));
      held_[static_cast<std::size_t>(v)] = 1;
    }
  }
  void release(int v) {  // the graph frees the node when nothing else refers to it
    if (!held_[static_cast<std::size_t>(v)]) return;
    held_[static_cast<std::size_t>(v)] = 0;
    graph().release_use(node(v));
  }
  std::shared_ptr<Storage> destination(int v, std::size_t bytes) {
    DestinationHook hook = g_destination.load(std::memory_order_acquire);
    return hook ? hook(node(v), bytes) : nullptr;
  }
  using Unlocked = GraphUnlocked;  // other threads may use the graph while kernels run

 private:
  NodeId node(int v) const { return nodes_[static_cast<std::size_t>(v)]; }
  const std::vector<NodeId>& nodes_;
  std::vector<char>& held_;
};

using Span = std::pair<const char*, const char*>;
Span span_of(const Storage& s) {
  const char* lo = static_cast<const char*>(s.data);
  return {lo, lo + s.bytes};
}
bool overlap(const Span& a, const Span& b) { return a.first < b.second && b.first < a.second; }

// Verification: the buffers of values made by the steps (not views, not
// concatenation pieces) that are live at once never overlap, but for an
// output that took over its donor's buffer; and no kernel output overlaps an
// input it does not take over.
class OverlapCheck {
 public:
  // After step k made `owners` (value, span, donor value or -1).
  void made(std::size_t k, int v, Span s, int donor) { live_.push_back({v, s, donor, k}); }
  void check(std::size_t k, const Program& p) const {
    for (std::size_t i = 0; i < live_.size(); ++i) {
      for (std::size_t j = i + 1; j < live_.size(); ++j) {
        const Owner &a = live_[i], &b = live_[j];
        if (a.donor == b.value || b.donor == a.value) continue;
        if (overlap(a.span, b.span)) {
          internal_error("exec: values " + std::to_string(a.value) + " (made by step " + std::to_string(a.made_at) +
                         ") and " + std::to_string(b.value) + " (step " + std::to_string(b.made_at) +
                         ") are live at step " + std::to_string(k) + " in overlapping memory\n" + dump(p));
        }
      }
    }
  }
  void released(int v) {
    std::erase_if(live_, [v](const Owner& o) { return o.value == v; });
  }
  static void outputs_apart(std::size_t k, const std::vector<Span>& ins, const std::vector<const Storage*>& outs,
                            const std::vector<int>& taken) {
    for (std::size_t j = 0; j < outs.size(); ++j) {
      const Span o = span_of(*outs[j]);
      for (const Span& in : ins) {
        if (overlap(o, in) && !(o.first == in.first && taken[j])) {
          internal_error("exec: kernel output " + std::to_string(j) + " of step " + std::to_string(k) +
                         " overlaps an input it does not take over");
        }
      }
    }
  }

 private:
  struct Owner {
    int value;
    Span span;
    int donor;
    std::size_t made_at;
  };
  std::vector<Owner> live_;
};

// The profiler's record of a step (arrayjit/profile.hpp): what the kernel
// computes and where the user wrote it, the bytes it moves at least (every
// element of a stream it reads or writes once: broadcast axes do not count),
// its time. Only while a profile records.
std::uint64_t stream_bytes(const Kernel& k, const std::vector<std::int64_t>& strides, DType dt) {
  std::uint64_t n = 1;
  for (std::size_t i = 0; i < strides.size() && i < k.shape.size(); ++i) {
    if (strides[i] != 0) n *= static_cast<std::uint64_t>(k.shape[i]);
  }
  return n * itemsize(dt);
}

std::uint64_t kernel_bytes(const Kernel& k) {
  std::uint64_t b = 0;
  for (const KStream& s : k.inputs) {
    if (!s.index_only) b += stream_bytes(k, s.strides, s.dtype);
  }
  for (const KOutput& o : k.outputs) b += stream_bytes(k, o.stream.strides, o.stream.dtype);
  return b;
}

void profile_step(prof::Kind kind, std::size_t step, const ProgramStep& st, const Kernel* k, Device d,
                  std::int64_t t0, std::uint64_t bytes) {
  prof::Event e;
  e.kind = kind;
  e.start_ns = t0;
  e.dur_ns = prof::now_ns() - t0;
  e.step = static_cast<std::int32_t>(step);
  e.set_loc(st.loc);
  e.device_kind = static_cast<std::int8_t>(d.kind);
  e.device_index = static_cast<std::int8_t>(d.index);
  if (kind == prof::Kind::library) e.set_name(op_name(st.call.op));
  if (k) {
    profile_kernel(e, *k);
    if (kind == prof::Kind::kernel) bytes += kernel_bytes(*k);
  }
  e.bytes = bytes;
  prof::record(e);
}

std::uint64_t storage_bytes(const std::vector<const Storage*>& ss) {
  std::uint64_t b = 0;
  for (const Storage* s : ss) b += s ? s->bytes : 0;
  return b;
}

template <class Slots>
class Runner {
 public:
  Runner(const Program& p, Backend& target, Slots slots, const std::vector<ScalarOverride>& overrides)
      : p_(p), target_(target), device_(target.device()), slots_(std::move(slots)), overrides_(overrides) {
    if (verify_enabled()) check_.emplace();
  }

  void run() {
    // This thread's work lists, their memory kept between runs: a replay
    // allocates nothing here. (A run that starts another on this thread,
    // importing an array of another graph, happens before either runs.)
    // (The default TLS model: static TLS is too small for a library that
    // Python loads with dlopen; one lookup per run is nothing.)
    thread_local Lists lists;
    lists_ = &lists;
    struct Empty {  // no buffer stays referenced from here, however the run ends
      Lists& l;
      int step;
      ~Empty() {
        l.clear();
        t_current_step = step;
      }
    } empty_after{lists, t_current_step};
    struct Drain {  // however the run ends, no exchange is left writing into a buffer
      Runner& r;
      ~Drain() { r.drain(); }
    } drain_after{*this};
    compile_ahead();
    for (std::size_t k = 0; k < p_.steps.size(); ++k) {
      t_current_step = static_cast<int>(k);
      // Between steps every value made is set and none is half-written:
      // where an interrupt (aj::interrupt) stops the run.
      detail::check_interrupt();
      const ProgramStep& st = p_.steps[k];
      if (!exchanges_.empty()) await_inputs(k);
      switch (st.kind) {
        case ProgramStep::Kind::kernel: kernel_step(k); break;
        case ProgramStep::Kind::view: view_step(st); break;
        case ProgramStep::Kind::library:
          if (st.then) {
            library_with_epilogue(k);
            finish(k);
            ++k;  // the epilogue ran
            break;
          }
          library_step(k);
          break;
      }
      finish(k);
    }
    while (!exchanges_.empty()) await(0);
  }

 private:
  // Exchanges started and not waited for (Backend::start_library): the
  // value each makes, what waits for it, and the buffers it reads and writes,
  // held so that no later step takes them over or the pool hands them out.
  struct Exchange {
    int value;
    std::function<void()> wait;
    std::vector<std::shared_ptr<Storage>> hold;
  };
  std::vector<Exchange> exchanges_;

  static bool reads(const ProgramStep& st, int v) {
    return std::find(st.inputs.begin(), st.inputs.end(), v) != st.inputs.end();
  }
  void await(std::size_t i) {
    Exchange e = std::move(exchanges_[i]);
    exchanges_.erase(exchanges_.begin() + static_cast<std::ptrdiff_t>(i));
    e.wait();
  }
  // Before step k (and its epilogue) reads a value an exchange makes.
  void await_inputs(std::size_t k) {
    const ProgramStep& st = p_.steps[k];
    for (std::size_t i = 0; i < exchanges_.size();) {
      const int v = exchanges_[i].value;
      if (reads(st, v) || (st.then && k + 1 < p_.steps.size() && reads(p_.steps[k + 1], v))) await(i);
      else ++i;
    }
  }
  // A run that failed still waits for what it started (its errors dropped:
  // the run's own is thrown).
  void drain() noexcept {
    for (Exchange& e : exchanges_) {
      try {
        e.wait();
      } catch (...) {
      }
    }
    exchanges_.clear();
  }

  struct Lists {
    std::vector<const Storage*> ins, epilogue_ins, out_ptrs;
    std::vector<std::shared_ptr<Storage>> outs, staged;
    std::vector<int> taken;  // per output: 1 when it took its donor's buffer
    std::vector<KScalar> scalars;
    std::vector<std::pair<int, std::shared_ptr<Storage>>> pending;  // concatenations' buffers, by value
    void clear() {
      outs.clear();
      staged.clear();
      pending.clear();
    }
  };

  // Value v's buffer for a step to read on this device: its own, or a copy
  // of a host array for a device step (held until the step is enqueued).
  const Storage* input(int v) {
    if (v < 0) return nullptr;
    const Storage* s = slots_.slot(v).get();
    if (!s) internal_error("exec: a step input was not computed before its step");
    if (s->device == device_) return s;
    if (!s->device.is_host()) {
      runtime_error("aj: an evaluation on " + device_.str() + " reads an array on " + s->device.str());
    }
    lists_->staged.push_back(target_.from_host(*s));
    return lists_->staged.back().get();
  }
  void inputs_of(const ProgramStep& st, std::vector<const Storage*>& into) {
    into.clear();
    for (int v : st.inputs) into.push_back(input(v));
  }

  // The donation predicate: value d's buffer may become the output's.
  bool may_take(int d, std::size_t bytes) {
    if (d < 0 || !slots_.sole_owner(d)) return false;
    const Storage& s = *slots_.slot(d);
    return !s.read_only() && s.device == device_ && s.bytes == bytes;
  }

  std::shared_ptr<Storage> concatenation_buffer(int c, std::size_t bytes) {
    for (auto& [v, s] : lists_->pending) {
      if (v == c) return s;
    }
    lists_->pending.push_back({c, target_.allocate(bytes)});
    return lists_->pending.back().second;
  }

  // A kernel step's output buffers into lists_->outs / out_ptrs.
  void kernel_outputs(const ProgramStep& ks) {
    Lists& l = *lists_;
    l.outs.clear();
    l.out_ptrs.clear();
    l.taken.clear();
    for (std::size_t j = 0; j < ks.outputs.size(); ++j) {
      std::shared_ptr<Storage> s;
      bool taken = false;
      if (ks.into[j] >= 0) s = concatenation_buffer(ks.into[j], ks.bytes[j]);
      if (!s && device_.is_host()) s = slots_.destination(ks.outputs[j], ks.bytes[j]);
      if (!s && may_take(ks.donors[j], ks.bytes[j])) {
        // Taken, not shared: the donor keeps no reference (it has no reader
        // after this step), so the output is the buffer's only holder and a
        // later step may take it over in turn.
        s = std::move(slots_.slot(ks.donors[j]));
        taken = true;
        ++detail::stats_mut().inplace_reuses;
      }
      if (!s) s = target_.allocate(ks.bytes[j]);
      l.out_ptrs.push_back(s.get());
      l.outs.push_back(std::move(s));
      l.taken.push_back(taken);
    }
  }

  // This run's scalars of kernel step k (null: the kernel's own).
  const KScalar* scalars_of(const ProgramStep& ks, std::size_t k) {
    while (next_override_ < overrides_.size() && overrides_[next_override_].step < static_cast<int>(k)) ++next_override_;
    if (next_override_ >= overrides_.size() || overrides_[next_override_].step != static_cast<int>(k)) return nullptr;
    lists_->scalars.assign(ks.kernel.scalars.begin(), ks.kernel.scalars.end());
    for (; next_override_ < overrides_.size() && overrides_[next_override_].step == static_cast<int>(k); ++next_override_) {
      lists_->scalars[static_cast<std::size_t>(overrides_[next_override_].scalar)] = overrides_[next_override_].value;
    }
    return lists_->scalars.data();
  }

  std::vector<Span> spans(const std::vector<const Storage*>& ins) const {
    std::vector<Span> out;
    for (const Storage* s : ins) {
      if (s) out.push_back(span_of(*s));
    }
    return out;
  }

  // The outputs of kernel step ks become its values.
  void set_outputs(std::size_t k, const ProgramStep& ks) {
    Lists& l = *lists_;
    ++detail::stats_mut().kernels_launched;
    for (std::size_t j = 0; j < ks.outputs.size(); ++j) {
      if (check_ && ks.into[j] < 0) {
        check_->made(k, ks.outputs[j], span_of(*l.outs[j]), l.taken[j] ? ks.donors[j] : -1);
      }
      slots_.set(ks.outputs[j], std::move(l.outs[j]), ks.layouts[j]);
    }
  }

  // A program kept for many runs is prepared on its first (a cached plan
  // under the graph's lock, which every run of it holds here; aj::compile's
  // before it is shared), and later runs launch it without looking it up.
  // True when the cell was prepared now (the program's first run here).
  bool prepare(const ProgramStep& st) {
    PreparedCell* cell = st.prepared.get();
    if (!cell || (cell->done && cell->device == device_)) return false;
    cell->kernel = target_.prepare_kernel(st.kernel);
    cell->device = device_;
    cell->done = true;
    return true;
  }

  // On a program's first run (its kernels prepared now; a program kept for
  // one run only has no cells: every run), the backend is handed every
  // kernel to compile at once (Backend::compile_ahead), with the buffers its
  // streams will most likely be: the values read, and for an output its
  // donor's value where the donation predicate will probably hold (a value
  // a step makes: the plan arranged it; a bound one: whether nothing else
  // holds it now), else a buffer of its own.
  void compile_ahead() {
    std::vector<Backend::AheadKernel> ks;
    std::int64_t fresh = p_.values;  // ids of buffers no value names
    for (const ProgramStep& st : p_.steps) {
      if (st.kind != ProgramStep::Kind::kernel) continue;
      if (st.prepared && !prepare(st)) continue;  // run before: compiled then
      Backend::AheadKernel a;
      a.prepared = st.prepared ? st.prepared->kernel.get() : nullptr;
      a.kernel = &st.kernel;
      for (int v : st.inputs) a.input_buffers.push_back(v >= 0 ? v : fresh++);
      for (std::size_t j = 0; j < st.outputs.size(); ++j) {
        const int d = st.donors[j];
        const bool made_here = d >= p_.bound + static_cast<int>(p_.captured.size());
        const bool likely = d >= 0 && st.into[j] < 0 && (made_here || (d < p_.bound && slots_.sole_owner(d)));
        a.output_buffers.push_back(likely ? d : fresh++);
      }
      ks.push_back(std::move(a));
    }
    if (ks.size() >= 2) target_.compile_ahead(ks);
  }

  void kernel_step(std::size_t k) {
    const ProgramStep& st = p_.steps[k];
    Lists& l = *lists_;
    inputs_of(st, l.ins);
    kernel_outputs(st);
    const KScalar* scalars = scalars_of(st, k);
    prepare(st);
    PreparedCell* cell = st.prepared.get();
    // Held while the lock is let go (another run may prepare the cell again,
    // for another device).
    const std::shared_ptr<const PreparedKernel> prepared = cell ? cell->kernel : nullptr;
    if (check_) OverlapCheck::outputs_apart(k, spans(l.ins), l.out_ptrs, l.taken);
    const std::int64_t t0 = prof::on() ? prof::now_ns() : 0;
    {
      [[maybe_unused]] typename Slots::Unlocked unlocked;
      target_.run_prepared(prepared.get(), st.kernel, scalars, l.ins, l.out_ptrs);
      if (t0) [[unlikely]] profiled(prof::Kind::kernel, k, st, &st.kernel, t0, 0);
    }
    l.staged.clear();
    set_outputs(k, st);
  }

  void view_step(const ProgramStep& st) {
    std::shared_ptr<Storage> s = slots_.slot(st.inputs[0]);
    slots_.set(st.outputs[0], std::move(s), st.layouts[0]);
  }

  void library_step(std::size_t k) {
    const ProgramStep& st = p_.steps[k];
    Lists& l = *lists_;
    inputs_of(st, l.ins);
    const int self = st.outputs[0];
    std::shared_ptr<Storage> out;
    // A concatenation some of whose pieces their kernels wrote already.
    for (auto it = l.pending.begin(); it != l.pending.end(); ++it) {
      if (it->first == self) {
        out = std::move(it->second);
        l.pending.erase(it);
        break;
      }
    }
    // A step that overwrites its first operand (scatter) may take its buffer:
    // the backend sees the same storage as input 0 and output, and updates it.
    bool taken = false;
    if (!out && may_take(st.donors[0], st.bytes[0]) && l.ins[0] == slots_.slot(st.donors[0]).get()) {
      out = slots_.slot(st.donors[0]);
      taken = true;
      ++detail::stats_mut().inplace_reuses;
    }
    if (!out) out = target_.allocate(st.bytes[0]);
    bool work = true;
    const LibraryCall* call = &st.call;
    if (st.call.op == Op::Concat) {
      LibraryCall& c = concat_;
      c = st.call;
      work = false;
      for (std::size_t i = 0; i < c.inputs.size(); ++i) {
        c.inputs[i].in_place = l.ins[i] == out.get();
        work |= !c.inputs[i].in_place;
      }
      call = &c;
    }
    const std::int64_t t0 = prof::on() ? prof::now_ns() : 0;
    // A collective whose result the next step does not read is started, and
    // the steps up to its first reader run while it goes on.
    const bool overlap = st.call.op == Op::Collective && k + 1 < p_.steps.size() && !reads(p_.steps[k + 1], self);
    Exchange e{self, nullptr, {}};
    if (overlap) {  // (the slots are read under the graph's lock)
      e.hold.push_back(out);
      for (int v : st.inputs) e.hold.push_back(slots_.slot(v));
    }
    {
      [[maybe_unused]] typename Slots::Unlocked unlocked;
      if (overlap) {
        e.wait = target_.start_library(*call, l.ins, *out);
      } else {
        target_.run_library(*call, l.ins, *out);
      }
      if (t0) [[unlikely]] profiled(prof::Kind::library, k, st, nullptr, t0, storage_bytes(l.ins) + out->bytes);
    }
    if (e.wait) exchanges_.push_back(std::move(e));
    l.staged.clear();
    if (work) ++detail::stats_mut().kernels_launched;
    if (check_) check_->made(k, self, span_of(*out), taken ? st.donors[0] : -1);
    slots_.set(self, std::move(out), st.layouts[0]);
  }

  // Library step k and its epilogue, kernel step k + 1, in one backend call:
  // the kernel runs on each block of the product while it is in cache.
  void library_with_epilogue(std::size_t k) {
    const ProgramStep& st = p_.steps[k];
    const ProgramStep& ep = p_.steps[k + 1];
    Lists& l = *lists_;
    inputs_of(st, l.ins);
    // Made a leaf now, the product's node lets go of its operands: held here.
    for (int v : st.inputs) l.staged.push_back(slots_.slot(v));
    // The product exists before it is computed, so the epilogue may take it over.
    const Storage* product;
    {
      std::shared_ptr<Storage> made = target_.allocate(st.bytes[0]);
      product = made.get();  // its value holds it (or the epilogue output that takes it over)
      slots_.set(st.outputs[0], std::move(made), st.layouts[0]);
    }
    if (check_) check_->made(k, st.outputs[0], span_of(*product), -1);
    if (check_) check_->check(k, p_);
    inputs_of(ep, l.epilogue_ins);
    kernel_outputs(ep);
    const KScalar* scalars = scalars_of(ep, k + 1);
    Kernel bound;
    if (scalars) {
      bound = ep.kernel;
      std::copy(scalars, scalars + bound.scalars.size(), bound.scalars.begin());
    }
    // An operand the epilogue writes (a caller's destination buffer that
    // overlaps it) would change under the blocks still to come: then one
    // after the other.
    bool apart = true;
    for (const Storage* o : l.out_ptrs) {
      for (const Storage* i : l.ins) apart &= !overlap(span_of(*o), span_of(*i));
    }
    if (check_) OverlapCheck::outputs_apart(k + 1, spans(l.epilogue_ins), l.out_ptrs, l.taken);
    const std::int64_t t0 = prof::on() ? prof::now_ns() : 0;
    {
      [[maybe_unused]] typename Slots::Unlocked unlocked;
      if (apart) {
        target_.run_library_then(st.call, l.ins, *product, scalars ? bound : ep.kernel, l.epilogue_ins, l.out_ptrs);
      } else {
        target_.run_library(st.call, l.ins, *product);
        target_.run_kernel(scalars ? bound : ep.kernel, l.epilogue_ins, l.out_ptrs);
      }
      // One event: the product and its epilogue (the epilogue's ops listed).
      if (t0) [[unlikely]] {
        profiled(prof::Kind::library, k, st, &ep.kernel, t0,
                 storage_bytes(l.ins) + product->bytes + storage_bytes(l.out_ptrs));
      }
    }
    l.staged.clear();
    ++detail::stats_mut().kernels_launched;  // the product; set_outputs counts the epilogue
    set_outputs(k + 1, ep);
  }

  // The profiler's event of step k, which started at t0. A device's work is
  // waited for first, so the event lasts as long as the work (profiling
  // serializes a device's steps).
  void profiled(prof::Kind kind, std::size_t k, const ProgramStep& st, const Kernel* kernel, std::int64_t t0,
                std::uint64_t bytes) {
    if (!device_.is_host()) target_.synchronize();
    profile_step(kind, k, st, kernel, device_, t0, bytes);
  }

  // After step k: the values it was the last reader of are let go.
  void finish(std::size_t k) {
    const ProgramStep& st = p_.steps[k];
    if (check_) check_->check(k, p_);
    for (int r : st.release) {
      slots_.release(r);
      if (check_) check_->released(r);
    }
  }

  const Program& p_;
  Backend& target_;
  const Device device_;
  Slots slots_;
  const std::vector<ScalarOverride>& overrides_;
  std::size_t next_override_ = 0;
  Lists* lists_ = nullptr;
  LibraryCall concat_;  // a concatenation's call with its in-place pieces marked
  std::optional<OverlapCheck> check_;
};

}  // namespace

int current_step() { return t_current_step; }

void run_program(const Program& p, Backend& target, VectorValues& values, const std::vector<ScalarOverride>& overrides) {
  values.storage.resize(static_cast<std::size_t>(p.values));
  for (std::size_t i = 0; i < p.captured.size(); ++i) values.storage[static_cast<std::size_t>(p.bound) + i] = p.captured[i];
  Runner<VectorSlots>(p, target, VectorSlots(values), overrides).run();
}

void run_program(const Program& p, Backend& target, GraphValues& values, const std::vector<ScalarOverride>& overrides) {
  // This thread's flags (an evaluation does not nest in one, but stay safe).
  thread_local std::vector<char> t_held;
  thread_local bool t_busy = false;
  std::vector<char> nested;
  std::vector<char>& held = t_busy ? nested : t_held;
  const bool outer = !t_busy;
  t_busy = true;
  held.assign(static_cast<std::size_t>(p.values), 0);
  struct LetGo {  // however the run ends: results and values not yet released
    const std::vector<NodeId>& nodes;
    std::vector<char>& held;
    bool outer;
    ~LetGo() {
      for (std::size_t v = 0; v < held.size(); ++v) {
        if (held[v]) graph().release_use(nodes[v]);
      }
      held.clear();
      if (outer) t_busy = false;
    }
  } let_go{*values.nodes, held, outer};
  Runner<GraphSlots>(p, target, GraphSlots(values, held), overrides).run();
}

void prepare_program(Program& p, Backend& target) {
  for (ProgramStep& st : p.steps) {
    if (st.kind != ProgramStep::Kind::kernel) continue;
    if (!st.prepared) st.prepared = std::make_shared<PreparedCell>();
    st.prepared->kernel = target.prepare_kernel(st.kernel);
    st.prepared->device = target.device();
    st.prepared->done = true;
  }
}

void set_destination_hook(DestinationHook hook) { g_destination.store(hook, std::memory_order_release); }

}  // namespace aj::exec

// The host JIT: Kernel IR -> LLVM IR (codegen.cpp) -> O3 with SLEEF vector
// math -> object code for this CPU -> ORC LLJIT, one JITDylib per kernel (so
// clear_memory_cache frees code). Compiled objects are also written to the
// disk cache (jit/disk_cache.hpp), keyed by the kernel's structure, the CPU
// and the LLVM version, so a new process links them without compiling.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <pthread.h>
#include <unistd.h>
#include <thread>
#include <dlfcn.h>
#include <sys/stat.h>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <unordered_map>
#include <utility>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include "arrayjit/error.hpp"
#include "base/cpu_level.hpp"
#include "base/log.hpp"
#include "base/profile.hpp"
#include "base/stats.hpp"
#include "jit/disk_cache.hpp"
#include "jit/host_kernel.hpp"
#include "jit/llvm/codegen.hpp"
#include "jit/llvm/memory_guard.hpp"
#include "jit/llvm/runtime_symbols.hpp"

namespace aj::jit {

namespace {

constexpr const char* kFnName = "aj_kernel";
constexpr int kCodegenVersion = 13;         // bump when the LLVM pipeline, op numbers (arrayjit/ops.def) or dtype rows change
constexpr std::size_t kMaxKernels = 4096;   // memory cache limit (then cleared)
constexpr std::size_t kMaxDiskEntries = 16384;  // disk cache limit (then trimmed)

std::string to_string(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return s;
}

// The kernel dump as comment lines (";" in IR, "#" in assembly), heading
// a logged kernel.
std::string commented(const std::string& text, bool assembly = false) {
  const std::string mark = assembly ? "# " : "; ";
  std::string out = mark;
  for (char c : text) {
    out += c;
    if (c == '\n') out += mark;
  }
  if (out.size() >= 2 && out.compare(out.size() - 2, 2, mark) == 0) out.resize(out.size() - 2);
  return out;
}

[[noreturn]] void fail(const std::string& what, const Kernel& k) {
  runtime_error("host JIT: " + what + "\nkernel:\n" + dump(k));
}

// This shared library's path, size and modification time: changes with
// every rebuild (cheap, unlike hashing generated IR on every disk lookup).
std::string library_fingerprint() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&library_fingerprint), &info) || !info.dli_fname) return "?";
  struct stat st {};
  if (::stat(info.dli_fname, &st) != 0) return info.dli_fname;
  return std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

// ---- who may be running compiled code (CodeInUse) -------------------------------
// One counter per thread, odd while the thread holds a CodeInUse; freeing
// code waits until each counter that was odd has moved on (a grace period,
// as in RCU). A thread's counter sits on its own cache line: taking and
// letting go cost one uncontended atomic add each.
struct alignas(64) ReaderSlot {
  std::atomic<std::uint64_t> state{0};
};

struct Readers {
  std::mutex mu;
  std::vector<ReaderSlot*> all, free;
  static Readers& get() {
    static Readers* r = new Readers();  // never destroyed: threads may exit after main
    return *r;
  }
};

// This thread's slot (plain TLS, one load to reach), and the object that
// gives it back when the thread exits.
struct ThreadReader {
  ReaderSlot* slot = nullptr;
  int depth = 0;
};
constinit thread_local ThreadReader t_reader;

struct ReaderExit {
  ~ReaderExit() {
    if (!t_reader.slot) return;
    Readers& r = Readers::get();
    std::lock_guard lock(r.mu);
    r.free.push_back(t_reader.slot);
    t_reader.slot = nullptr;
  }
};

ReaderSlot& reader_slot() {
  if (!t_reader.slot) {
    static thread_local ReaderExit give_back;
    (void)&give_back;
    Readers& r = Readers::get();
    std::lock_guard lock(r.mu);
    if (!r.free.empty()) {
      t_reader.slot = r.free.back();
      r.free.pop_back();
    } else {
      r.all.push_back(new ReaderSlot());
      t_reader.slot = r.all.back();
    }
  }
  return *t_reader.slot;
}

void wait_for_code_readers() {
  Readers& r = Readers::get();
  std::vector<std::pair<ReaderSlot*, std::uint64_t>> inside;
  {
    std::lock_guard lock(r.mu);
    for (ReaderSlot* s : r.all) {
      const std::uint64_t v = s->state.load(std::memory_order_seq_cst);
      if (v & 1) inside.push_back({s, v});
    }
  }
  const ReaderSlot* mine = t_reader.slot;
  for (auto& [s, v] : inside) {
    if (s == mine) continue;  // this thread frees code between its own launches
    while (s->state.load(std::memory_order_acquire) == v) std::this_thread::yield();
  }
}

class HostJit {
  struct Entry;  // a compiled kernel in the map (below)

 public:
  // Never destroyed: compiled code may be running in other static
  // destructors, and tearing ORC down at exit only costs time.
  static HostJit& get() {
    static HostJit* j = new HostJit;
    return *j;
  }

  // The kernel's key, when it is not in memory already ("": it is).
  std::string missing(const Kernel& k, const std::vector<int>& alias) {
    std::string key = kernel_key(k, alias);
    std::lock_guard lock(mu_);
    return fns_.count(key) != 0 ? std::string() : key;
  }

  // Threads: the map is looked up under mu_; compiling and linking happen
  // outside it (each thread compiles with a TargetMachine of its own; ORC's
  // session is thread-safe), so a thread that finds its kernel never waits
  // for another thread's compile. Two threads compiling one structure at
  // once both compile; the first to finish is kept (a full kernel over a
  // quick one).
  //
  // Tiers (host_kernel.hpp): `work` and `launches` are what the caller ran
  // with the function since it last asked; a quick entry adds them up, and
  // once they reach kTierUpWork or kTierUpLaunches its full compile is
  // queued for the background compiler (every call meanwhile gets the quick
  // code, which stays valid in the graveyard after the full code replaces it).
  HostKernelRef kernel(const Kernel& k, const std::vector<int>& alias, long long work, int launches) {
    std::string key = kernel_key(k, alias);
    std::string dir;
    bool tier_up = false;
    HostTiers mode;
    {
      std::lock_guard lock(mu_);
      mode = mode_;
      if (auto it = fns_.find(key); it != fns_.end()) {
        Entry& e = it->second;
        if (e.quick && mode == HostTiers::automatic && !e.queued) {
          e.work += work;
          e.launches += launches;
          if (e.work >= kTierUpWork || e.launches >= kTierUpLaunches) {
            e.queued = true;
            if (start_compiler_locked()) {
              jobs_.push_back(Job{key, k, alias});
              wake_.notify_one();
            } else {
              tier_up = true;  // no thread to compile on: compile here
            }
          }
        } else if (e.quick && mode == HostTiers::full) {
          tier_up = true;  // full code asked for: compile it now
        }
        if (!tier_up) {
          ++detail::stats_mut().kernel_cache_hits;
          return {e.fn, e.quick};
        }
      }
      dir = cache_dir_;
    }
    // A kernel whose float sums may reassociate is compiled in full only:
    // the quick tier's code would round them otherwise.
    const bool quick = !tier_up && (mode == HostTiers::quick || (mode == HostTiers::automatic && work < kQuickTierWork)) &&
                       !reassociates(k);
    Entry e = build(k, alias, key, dir, quick, tier_up);
    return publish(std::move(key), e, work, launches, /*background=*/false);
  }

  // Compiles (or loads from the disk cache) kernel `k` in the tier asked
  // for, links it and counts it; the caller publishes the entry.
  Entry build(const Kernel& k, const std::vector<int>& alias, const std::string& key, const std::string& dir,
              bool quick, bool tier_up) {
    // From here to the end, LLVM works: no allocation may fail inside it
    // (jit/llvm/memory_guard.hpp); a reserve that cannot be taken is a
    // bad_alloc now, reported as out of memory by the evaluation.
    LlvmMemoryGuard guard;
    std::string object;
    bool from_disk = false;
    const auto t0 = std::chrono::steady_clock::now();
    DiskCache disk(dir);
    // A full entry serves a quick request too (better code, no compile).
    const std::string full_key = disk.enabled() ? disk_prefix_ + key : "";
    const std::string quick_key = disk.enabled() ? disk_prefix_ + "quick|" + key : "";
    Entry e;
    e.quick = quick;
    if (disk.enabled()) {
      auto read = [&](const std::string& dk) {
        DiskRead r = disk.read(dk, &object);
        if (r == DiskRead::corrupt) ++detail::stats_mut().kernel_disk_rejects;
        return r == DiskRead::hit;
      };
      from_disk = read(full_key);
      if (from_disk) {
        e.quick = false;
      } else if (quick) {
        from_disk = read(quick_key);
      }
    }
    if (detail::log_enabled("ir")) detail::log("ir", commented(dump(k)) + ir(k, alias, true, false));
    if (detail::log_enabled("asm")) detail::log("asm", commented(dump(k), true) + ir(k, alias, true, true));
    if (!from_disk) object = compile(k, alias, e.quick);
    if (auto err = link(object, &e)) {
      if (!from_disk) fail("linking the compiled kernel failed: " + *err, k);
      // A disk entry that passed its checks but does not link: recompile.
      ++detail::stats_mut().kernel_disk_rejects;
      from_disk = false;
      e.quick = quick;
      object = compile(k, alias, e.quick);
      if (auto err2 = link(object, &e)) fail("linking the compiled kernel failed: " + *err2, k);
    }
    if (!from_disk && disk.enabled() && disk.write(e.quick ? quick_key : full_key, object) &&
        disk_writes_.fetch_add(1, std::memory_order_relaxed) % 256 == 255) {
      disk.trim(kMaxDiskEntries);
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    if (detail::prof::on()) {
      detail::prof::Event ev;
      ev.kind = detail::prof::Kind::compile;
      ev.dur_ns = ns;
      ev.start_ns = detail::prof::now_ns() - ns;
      ev.flag = from_disk;
      ev.set_name(from_disk ? "host kernel (disk cache)" : quick ? "host kernel (LLVM, quick tier)" : "host kernel (LLVM)");
      profile_kernel(ev, k);
      detail::prof::record(ev);
    }
    detail::Counters& s = detail::stats_mut();
    if (from_disk) {
      ++s.kernel_disk_hits;
      s.kernel_disk_load_ns += static_cast<std::uint64_t>(ns);
    } else {
      ++(tier_up ? s.kernels_tiered_up : s.kernels_compiled);
      s.compile_ns += static_cast<std::uint64_t>(ns);
    }
    return e;
  }

  // Puts a built entry in the map, or keeps the one another thread put
  // there first when that is as good. A background tier-up whose kernel
  // left the map meanwhile (clear_memory_cache) is dropped.
  HostKernelRef publish(std::string key, Entry e, long long work, int launches, bool background) {
    LlvmMemoryGuard guard(std::nothrow);  // ORC may drop code
    std::vector<llvm::orc::JITDylib*> retired;
    {
      std::lock_guard lock(mu_);
      if (auto it = fns_.find(key); it != fns_.end()) {
        Entry& old = it->second;
        if (!old.quick || e.quick) {
          // Another thread was quicker (or as good): keep its kernel; ours
          // was never seen.
          drop(e.jd);
          return {old.fn, old.quick};
        }
        // The full kernel replaces the quick one. Launches that looked the
        // quick one up may still run it: its code waits in the graveyard,
        // freed with the graveyard (when the map is next full, or cleared).
        graveyard_.push_back(old.jd);
        e.work = old.work;
        e.launches = old.launches;
        old = e;
        tier_ups_.fetch_add(1, std::memory_order_release);
        return {e.fn, false};
      }
      if (background) {
        drop(e.jd);
        return {};
      }
      if (fns_.size() >= kMaxKernels) {
        // Full: the whole map goes to the graveyard, and the one before is
        // freed (by now no launch can hold its code: this thread's own
        // launches look up at most two kernels each).
        retired = std::exchange(graveyard_, take_all_locked());
      }
      e.work = work;
      e.launches = launches;
      fns_.emplace(std::move(key), e);
    }
    retire(std::move(retired));
    return {e.fn, e.quick};
  }

  // Waits until the background compiler has nothing queued or running.
  void finish_tier_ups() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return (jobs_.empty() && compiling_ == 0) || !compiler_running_locked(); });
  }

  std::string ir(const Kernel& k, const std::vector<int>& alias, bool optimized, bool assembly) {
    llvm::LLVMContext ctx;
    auto m = build(k, alias, ctx, optimized || assembly);
    std::string s;
    llvm::raw_string_ostream os(s);
    if (!assembly) {
      m->print(os, nullptr);
      return s;
    }
    llvm::SmallVector<char, 0> buf;
    llvm::raw_svector_ostream bos(buf);
    llvm::legacy::PassManager pm;
    if (thread_tm().addPassesToEmitFile(pm, bos, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
      fail("this target cannot emit assembly", k);
    }
    pm.run(*m);
    return std::string(buf.data(), buf.size());
  }

  std::string cache_dir() {
    std::lock_guard lock(mu_);
    return cache_dir_;
  }
  void set_cache_dir(const std::string& d) {
    std::lock_guard lock(mu_);
    cache_dir_ = d;
  }
  HostTiers tiers() {
    std::lock_guard lock(mu_);
    return mode_;
  }
  void set_tiers(HostTiers t) {
    std::lock_guard lock(mu_);
    mode_ = t;
  }
  void clear() {
    LlvmMemoryGuard guard(std::nothrow);  // ORC drops the code
    std::vector<llvm::orc::JITDylib*> dropped;
    {
      std::lock_guard lock(mu_);
      jobs_.clear();  // their kernels leave the map (one compiling now is dropped when done)
      dropped = take_all_locked();
      dropped.insert(dropped.end(), graveyard_.begin(), graveyard_.end());
      graveyard_.clear();
    }
    idle_.notify_all();
    retire(std::move(dropped));
  }
  const std::string& target() const { return target_; }

 private:
  struct Entry {
    HostKernelFn fn = nullptr;
    llvm::orc::JITDylib* jd = nullptr;
    bool quick = false;   // compiled by the quick tier
    bool queued = false;  // its full compile is queued (or done, or failed)
    long long work = 0;   // launch work run with it (the tier-up counts)
    long long launches = 0;
  };

  // The background compiler: one thread that compiles queued kernels in
  // full, started at the first tier-up and joined at exit (before LLVM's
  // own statics go). A forked child starts its own when it needs one.
  struct Job {
    std::string key;
    Kernel k;
    std::vector<int> alias;
  };

  bool compiler_running_locked() const { return compiler_ != nullptr && compiler_pid_ == ::getpid(); }

  bool start_compiler_locked() {
    if (compiler_running_locked()) return true;
    if (stopping_) return false;
    try {
      compiler_ = new std::thread([this] { compile_queued(); });  // (a forked parent's is left alone)
    } catch (...) {
      compiler_ = nullptr;
      return false;
    }
    compiler_pid_ = ::getpid();
    static std::once_flag once;
    std::call_once(once, [] {
      std::atexit(stop_at_exit);
      ::pthread_atfork([] { HostJit::get().before_fork(); }, [] { HostJit::get().after_fork(false); },
                       [] { HostJit::get().after_fork(true); });
    });
    return true;
  }

  // At exit the thread finishes the compile it is in and stops, before the
  // statics LLVM uses go. Registered again after each of the first jobs, so
  // that it runs before the destructors of statics a compile made first.
  static void stop_at_exit() { HostJit::get().stop_compiler(); }

  // fork(): the child has no compiler thread, and must not inherit the
  // state of a compile in progress (the memory guard's new_handler, the
  // lock). So fork waits for the compile in progress to end and holds the
  // lock across; the child clears the queue (those kernels may queue again)
  // and starts a thread of its own at its next tier-up.
  void before_fork() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return compiling_ == 0; });
    lock.release();  // held across fork()
  }
  void after_fork(bool child) {
    if (child) {
      for (const Job& j : jobs_) {
        if (auto it = fns_.find(j.key); it != fns_.end()) it->second.queued = false;
      }
      jobs_.clear();
    }
    mu_.unlock();
  }

  void compile_queued() {
    ::pthread_setname_np(::pthread_self(), "aj-jit-tier-up");
    for (;;) {
      Job j;
      std::string dir;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        j = std::move(jobs_.front());
        jobs_.pop_front();
        ++compiling_;
        dir = cache_dir_;
      }
      try {
        Entry e = build(j.k, j.alias, j.key, dir, /*quick=*/false, /*tier_up=*/true);
        publish(std::move(j.key), e, 0, 0, /*background=*/true);
        if (jobs_done_++ < kExitReRegistrations) std::atexit(stop_at_exit);
      } catch (const std::exception& ex) {
        // The quick code stays (queued: not tried again).
        detail::log("jit", std::string("tier-up failed, the quick code stays: ") + ex.what());
      } catch (...) {
        detail::log("jit", "tier-up failed, the quick code stays");
      }
      {
        std::lock_guard lock(mu_);
        --compiling_;
      }
      idle_.notify_all();
    }
  }

  void stop_compiler() {
    std::thread* t = nullptr;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      jobs_.clear();
      if (compiler_running_locked()) t = std::exchange(compiler_, nullptr);
    }
    wake_.notify_all();
    idle_.notify_all();
    if (!t) return;
    // Joined and freed; from the compiler thread itself (an exit it
    // started) the object stays: deleting a joinable std::thread terminates.
    if (t->joinable() && t->get_id() == std::this_thread::get_id()) return;
    if (t->joinable()) t->join();
    delete t;
  }

  HostJit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) runtime_error("host JIT: cannot describe this CPU: " + to_string(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    // The features above the level (base/cpu_level.hpp) switched off: the
    // same CPU's scheduling model, a lower level's instructions.
    const cpu::IsaLevel level = cpu::level();
    if (level < cpu::detected_level()) {
      llvm::SubtargetFeatures capped(cpu::cap_llvm_features(jtmb->getFeatures().getString(), level));
      jtmb->getFeatures() = capped;
    }
    cpu_ = jtmb->getCPU();
    features_ = jtmb->getFeatures().getString();
    auto tm = jtmb->createTargetMachine();
    if (!tm) runtime_error("host JIT: no target machine: " + to_string(tm.takeError()));
    tm_ = std::move(*tm);
    jtmb_ = *jtmb;
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    if (!jit) runtime_error("host JIT: cannot start ORC LLJIT: " + to_string(jit.takeError()));
    jit_ = std::move(*jit);
    // Generated code calls SLEEF and our helpers by name (absolute symbols:
    // the same object links in any process), libm/libc through the process.
    llvm::orc::JITDylib& main = jit_->getMainJITDylib();
    const bool avx2 = cpu::llvm_feature_on(features_, "avx2");
    const bool avx512 = cpu::llvm_feature_on(features_, "avx512f");
    llvm::orc::SymbolMap syms;
    for (const RuntimeSymbol& s : runtime_symbols(avx2 && cpu::llvm_feature_on(features_, "fma"))) {
      syms[jit_->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                             llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
    }
    if (auto err = main.define(llvm::orc::absoluteSymbols(std::move(syms)))) {
      runtime_error("host JIT: cannot define runtime symbols: " + to_string(std::move(err)));
    }
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
    if (!gen) runtime_error("host JIT: no process symbols: " + to_string(gen.takeError()));
    main.addGenerator(std::move(*gen));

    mappings_ = vector_math_mappings(avx2, avx512);
    for (const VectorMapping& m : mappings_) {
      const bool binary = m.arity == 2;
      prefixes_.push_back("_ZGV_LLVM_N" + std::to_string(m.lanes) + (binary ? "vv" : "v"));
    }
    // The vector width loops prefer: at AVX-512, 512 bits (LLVM's tuning for
    // Intel's AVX-512 CPUs, Skylake-SP to Sapphire Rapids, says 256, and
    // kernels then ran 8 lanes of f32 where Eigen ran 16: issue 34), unless
    // AJ_VECTOR_WIDTH=256 asks for 256; below it, the CPU's own choice.
    if (cpu::level() >= cpu::IsaLevel::avx512 && avx512) {
      vector_width_ = 512;
      if (const char* w = std::getenv("AJ_VECTOR_WIDTH"); w && *w) {
        const std::string v = w;
        if (v != "256" && v != "512") runtime_error("AJ_VECTOR_WIDTH=" + v + ": use 256 or 512");
        vector_width_ = std::stoi(v);
      }
    }
    target_ = std::string("LLVM ") + LLVM_VERSION_STRING + ", cpu " + cpu_ +
              (vector_width_ ? ", vector width " + std::to_string(vector_width_) : std::string()) + ", " + features_;
    // The disk key names this build of the library too: an entry written by a
    // library whose code generation may differ in any way is stale, never run.
    disk_prefix_ = "aj host kernel v" + std::to_string(kCodegenVersion) + "|" + target_ + "|lib " +
                   library_fingerprint() + "|";
    cache_dir_ = default_cache_dir();
    if (const char* t = std::getenv("AJ_JIT_TIER"); t && *t) {
      const std::string v = t;
      if (v == "auto") mode_ = HostTiers::automatic;
      else if (v == "quick") mode_ = HostTiers::quick;
      else if (v == "full") mode_ = HostTiers::full;
      else runtime_error("AJ_JIT_TIER=" + v + ": use auto, quick or full");
    }
  }

  std::unique_ptr<llvm::Module> build(const Kernel& k, const std::vector<int>& alias,
                                      llvm::LLVMContext& ctx, bool optimize) {
    // Remarks and warnings ("loop not vectorized" where a loop calls a helper
    // without a vector form) are expected; they must not reach stderr.
    ctx.setDiagnosticHandlerCallBack([](const llvm::DiagnosticInfo*, void*) {}, nullptr);
    std::unique_ptr<llvm::Module> m = generate_module(k, alias, kFnName, ctx);
    m->setDataLayout(thread_tm().createDataLayout());
    m->setTargetTriple(thread_tm().getTargetTriple().str());
    for (llvm::Function& f : *m) {
      if (f.isDeclaration()) continue;
      f.addFnAttr("target-cpu", cpu_);
      f.addFnAttr("target-features", features_);
      if (vector_width_) f.addFnAttr("prefer-vector-width", std::to_string(vector_width_));
    }
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(*m, &es)) internal_error("host JIT: generated invalid LLVM IR: " + err + "\n" + dump(k));
    if (optimize) this->optimize(*m, false);
    return m;
  }

  // The IR passes of a tier. Full: LLVM's O3 with the loop and SLP
  // vectorizers and SLEEF's vector functions. Quick: values out of memory
  // into registers and common subexpressions merged; no loop work, no
  // vectorizer.
  void optimize(llvm::Module& m, bool quick) {
    llvm::TargetLibraryInfoImpl tlii(thread_tm().getTargetTriple());
    if (!quick) {
      std::vector<llvm::VecDesc> descs;
      for (std::size_t i = 0; i < mappings_.size(); ++i) {
        descs.emplace_back(mappings_[i].scalar, mappings_[i].vector,
                           llvm::ElementCount::getFixed(mappings_[i].lanes), false, prefixes_[i]);
      }
      tlii.addVectorizableFunctions(descs);
    }
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = !quick;
    pto.SLPVectorization = !quick;
    llvm::PassBuilder pb(&thread_tm(quick), pto);
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    if (quick) {
      llvm::FunctionPassManager fpm;
      fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
      fpm.addPass(llvm::EarlyCSEPass());
      mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
    } else {
      mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    }
    mpm.run(m, mam);
  }

  // This thread's TargetMachine: code generation mutates it, so threads that
  // compile at once each use their own (made once per thread). The quick
  // tier's generates code without optimizing it (fast instruction
  // selection, the fast register allocator).
  llvm::TargetMachine& thread_tm(bool quick = false) {
    thread_local std::unique_ptr<llvm::TargetMachine> tm[2];
    std::unique_ptr<llvm::TargetMachine>& t = tm[quick ? 1 : 0];
    if (!t) {
      llvm::orc::JITTargetMachineBuilder b = *jtmb_;
      if (quick) b.setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
      auto made = b.createTargetMachine();
      if (!made) runtime_error("host JIT: no target machine: " + to_string(made.takeError()));
      t = std::move(*made);
    }
    return *t;
  }

  // AJ_LOG=jit: each compile's stages timed, with the kernel's dump.
  std::string compile(const Kernel& k, const std::vector<int>& alias, bool quick) {
    const bool log = detail::log_enabled("jit");
    using C = std::chrono::steady_clock;
    const auto t0 = C::now();
    llvm::LLVMContext ctx;
    auto m = build(k, alias, ctx, false);
    const auto t1 = C::now();
    auto instructions = [&] {
      std::size_t n = 0;
      if (log) {
        for (const llvm::Function& f : *m) n += f.getInstructionCount();
      }
      return n;
    };
    const std::size_t ir_before = instructions();
    optimize(*m, quick);
    const auto t2 = C::now();
    const std::size_t ir_after = instructions();
    llvm::SmallVector<char, 0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (thread_tm(quick).addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      fail("this target cannot emit object files", k);
    }
    pm.run(*m);
    const auto t3 = C::now();
    if (log) {
      auto ms = [](C::duration d) { return std::to_string(std::chrono::duration<double, std::milli>(d).count()); };
      std::string aliases;
      for (int a : alias) aliases += (aliases.empty() ? "" : " ") + std::to_string(a);
      detail::log("jit", std::string(quick ? "compiled quick" : "compiled full") + " (outputs in place of inputs [" + aliases + "]) in " + ms(t3 - t0) + " ms: generate " + ms(t1 - t0) + " ms (" +
                             std::to_string(ir_before) + " IR instructions), optimize " + ms(t2 - t1) + " ms (" +
                             std::to_string(ir_after) + "), codegen " + ms(t3 - t2) + " ms (" +
                             std::to_string(buf.size()) + " bytes)\n" + commented(dump(k)) + "\n");
    }
    return std::string(buf.data(), buf.size());
  }

  // Link an object into a fresh JITDylib; an error message on failure.
  std::optional<std::string> link(const std::string& object, Entry* e) {
    auto jd = jit_->createJITDylib("aj_kernel_" + std::to_string(next_id_.fetch_add(1)));
    if (!jd) return to_string(jd.takeError());
    // The main JITDylib first, before the process's symbols LLJIT links new
    // JITDylibs against: its runtime symbols bind SLEEF's names to other
    // functions than the process's own of those names (runtime_symbols.hpp).
    llvm::orc::JITDylib& main = jit_->getMainJITDylib();
    llvm::orc::JITDylibSearchOrder order{{&main, llvm::orc::JITDylibLookupFlags::MatchExportedSymbolsOnly}};
    jd->withLinkOrderDo([&](const llvm::orc::JITDylibSearchOrder& now) {
      for (const auto& entry : now) {
        if (entry.first != &*jd && entry.first != &main) order.push_back(entry);
      }
    });
    jd->setLinkOrder(std::move(order));
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(object, "aj_kernel.o");
    if (auto err = jit_->addObjectFile(*jd, std::move(buf))) {
      std::string msg = to_string(std::move(err));
      drop(&*jd);
      return msg;
    }
    auto sym = jit_->lookup(*jd, kFnName);
    if (!sym) {
      std::string msg = to_string(sym.takeError());
      drop(&*jd);
      return msg;
    }
    e->fn = sym->toPtr<HostKernelFn>();
    e->jd = &*jd;
    return std::nullopt;
  }

  void drop(llvm::orc::JITDylib* jd) {
    if (auto err = jit_->getExecutionSession().removeJITDylib(*jd)) llvm::consumeError(std::move(err));
  }

  std::vector<llvm::orc::JITDylib*> take_all_locked() {
    generation_.fetch_add(1, std::memory_order_seq_cst);  // functions looked up before may go
    std::vector<llvm::orc::JITDylib*> out;
    for (auto& [key, e] : fns_) out.push_back(e.jd);
    fns_.clear();
    return out;
  }

  // Frees the code of kernels no longer in the map once no thread can be
  // running it (CodeInUse: a thread that looked one up before it left the
  // map finishes its launch first).
  void retire(std::vector<llvm::orc::JITDylib*> dropped) {
    if (dropped.empty()) return;
    wait_for_code_readers();
    for (llvm::orc::JITDylib* jd : dropped) drop(jd);
  }

  std::mutex mu_;
 public:
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> tier_ups_{0};  // quick entries replaced by full ones

 private:
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_, features_, target_, disk_prefix_, cache_dir_;
  int vector_width_ = 0;  // prefer-vector-width; 0: LLVM's choice for the CPU
  std::vector<VectorMapping> mappings_;
  std::vector<std::string> prefixes_;
  std::unordered_map<std::string, Entry> fns_;
  HostTiers mode_ = HostTiers::automatic;
  std::vector<llvm::orc::JITDylib*> graveyard_;  // dropped when the map was last full
  std::deque<Job> jobs_;           // full compiles queued for the background compiler
  std::condition_variable wake_;   // jobs queued, or stopping
  std::condition_variable idle_;   // a job done (finish_tier_ups)
  int compiling_ = 0;
  bool stopping_ = false;          // at exit: no more background compiles
  std::thread* compiler_ = nullptr;
  pid_t compiler_pid_ = 0;
  static constexpr int kExitReRegistrations = 64;
  int jobs_done_ = 0;  // (the compiler thread's)
  std::atomic<std::uint64_t> next_id_{0};
  std::atomic<std::uint64_t> disk_writes_{0};
};

}  // namespace

CodeInUse::CodeInUse() {
  if (t_reader.depth++ == 0) reader_slot().state.fetch_add(1, std::memory_order_seq_cst);
}
CodeInUse::~CodeInUse() {
  if (--t_reader.depth == 0) t_reader.slot->state.fetch_add(1, std::memory_order_release);
}

HostKernelRef host_kernel(const Kernel& k, const std::vector<int>& alias, long long work, int launches) {
  return HostJit::get().kernel(k, alias, work, launches);
}

std::uint64_t host_tier_ups() { return HostJit::get().tier_ups_.load(std::memory_order_acquire); }
void finish_host_tier_ups() { HostJit::get().finish_tier_ups(); }

HostTiers host_tiers() { return HostJit::get().tiers(); }
void set_host_tiers(HostTiers t) { HostJit::get().set_tiers(t); }

std::string host_kernel_missing(const Kernel& k, const std::vector<int>& alias) {
  return HostJit::get().missing(k, alias);
}

std::uint64_t host_kernels_generation() { return HostJit::get().generation_.load(std::memory_order_seq_cst); }

std::string host_kernel_ir(const Kernel& k, const std::vector<int>& alias, bool optimized) {
  return HostJit::get().ir(k, alias, optimized, false);
}

std::string host_cache_dir() { return HostJit::get().cache_dir(); }
void set_host_cache_dir(const std::string& dir) { HostJit::get().set_cache_dir(dir); }
void clear_host_kernels() { HostJit::get().clear(); }
std::string host_target() { return HostJit::get().target(); }

std::string host_kernel_text(const Kernel& k, bool assembly) {
  std::vector<int> alias(k.outputs.size(), -1);
  return commented(dump(k), assembly) + HostJit::get().ir(k, alias, true, assembly);
}

}  // namespace aj::jit

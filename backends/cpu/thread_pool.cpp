#include "backends/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "base/profile.hpp"

namespace aj::cpu {

namespace {

// One job at a time. A caller that finds the pool busy (another thread's
// kernel has it) runs its own chunks alone instead of waiting: on a machine
// whose cores are all at work that costs nothing, and a small kernel never
// waits for a large one.
// `ticket` packs (job generation << 32 | next chunk): taking a chunk is a
// compare-and-swap that fails for a stale generation, so a worker that slept
// through a job can never take a chunk of the next one with old arguments.
class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) std::thread([this, i] { work(i); }).detach();
  }

  // False when the pool is busy (then nothing ran).
  bool try_run(ChunkFn fn, const void* ctx, std::int64_t total, std::int64_t chunks, int helpers) {
    std::unique_lock job_lock(job_mu_, std::try_to_lock);
    if (!job_lock) return false;
    std::uint64_t gen;
    {
      std::lock_guard lock(mu_);
      gen = gen_.load(std::memory_order_relaxed) + 1;
      job_ = {fn, ctx, total, chunks, helpers};
      done_.store(0, std::memory_order_relaxed);
      ticket_.store(gen << 32, std::memory_order_release);
      gen_.store(gen, std::memory_order_release);
    }
    cv_.notify_all();  // cheap when every worker is still spinning (none waits)
    take_chunks(gen, job_);
    while (done_.load(std::memory_order_acquire) < chunks) std::this_thread::yield();
    return true;
  }

 private:
  struct Job {
    ChunkFn fn = nullptr;
    const void* ctx = nullptr;
    std::int64_t total = 0, chunks = 0;
    int helpers = 0;
  };

  void take_chunks(std::uint64_t gen, const Job& job) {
    for (;;) {
      std::uint64_t cur = ticket_.load(std::memory_order_acquire);
      if ((cur >> 32) != (gen & 0xffffffffu)) return;  // the ticket keeps the generation's low 32 bits
      const auto c = static_cast<std::int64_t>(cur & 0xffffffffu);
      if (c >= job.chunks) return;
      if (!ticket_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel)) continue;
      const std::int64_t lo = job.total * c / job.chunks, hi = job.total * (c + 1) / job.chunks;
      if (lo < hi) job.fn(job.ctx, lo, hi);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  // After a job a worker spins for kSpin before it sleeps: kernels launched
  // back to back (a training step's, a product split in two) find it awake,
  // where waking a sleeping thread takes tens of microseconds on a VM, as
  // long as a 256^2 product's half. Spinning holds a core only that long.
  static constexpr auto kSpin = std::chrono::microseconds(50);

  void work(int index) {
    static const char* const kNames[] = {"aj pool 1", "aj pool 2", "aj pool 3", "aj pool 4", "aj pool 5",
                                         "aj pool 6", "aj pool 7", "aj pool 8"};
    detail::prof::set_thread_name(index < 8 ? kNames[index] : "aj pool");
    std::uint64_t seen = 0;
    bool helped = false;  // only a worker the last job used spins (on a wide machine the rest do not)
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; helped && gen_.load(std::memory_order_acquire) == seen; ++i) {
        if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) break;
        pause();
      }
      Job job;
      std::uint64_t gen;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return gen_.load(std::memory_order_relaxed) != seen; });
        gen = seen = gen_.load(std::memory_order_relaxed);
        job = job_;
      }
      helped = index < job.helpers;
      if (helped) take_chunks(gen, job);
    }
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::mutex job_mu_;  // one job at a time
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<std::uint64_t> gen_{0};  // written under mu_, read by spinning workers without it
  Job job_;
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<std::int64_t> done_{0};
};

Pool& pool() {
  static Pool* p = new Pool(hardware_threads() - 1);  // never destroyed: workers outlive main
  return *p;
}

}  // namespace

int hardware_threads() {
  static const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return n;
}

void parallel_chunks(ChunkFn fn, const void* ctx, std::int64_t total, std::int64_t chunks, int threads) {
  chunks = std::clamp<std::int64_t>(chunks, 1, std::min<std::int64_t>(total, 0xffffffffLL));
  if (threads <= 1 || chunks <= 1) {
    fn(ctx, 0, total);
    return;
  }
  if (!pool().try_run(fn, ctx, total, chunks, threads - 1)) fn(ctx, 0, total);
}

}  // namespace aj::cpu

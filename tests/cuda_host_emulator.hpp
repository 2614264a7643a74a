// Runs generated CUDA C on the host, for tests on machines without a GPU.
//
// The kernels' source (everything after the prelude is the same text NVRTC
// compiles) is compiled by the host C++ compiler against a small shim: CUDA's
// index variables become globals, a block's `blockDim.x` threads are fibers
// on one OS thread, each run until it reaches a barrier (so __syncthreads is
// a barrier and __shfl_down_sync a per-warp exchange through memory without a
// system call), blocks run one after another (so __shared__ can be a
// static). What this checks: the generated index math, vector path,
// reductions (block, two-pass, serial), epilogues, parameter packing and
// launch planning, computed with the host's libm, and that every barrier is
// reached by every thread that has not returned. What it cannot: CUDA's own
// math library, real memory ordering (the fibers between two barriers run one
// after another, forwards and backwards in turn: a missing barrier shows where
// the values it should order differ), the driver.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "jit/cuda/cuda_prelude.hpp"
#include "jit/cuda/cuda_source.hpp"

namespace ajtest {

inline constexpr const char* kCudaShim = R"SHIM(
#include <cmath>
#include <cstring>
#include <math.h>
#include <setjmp.h>
#include <stdexcept>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector>
struct aj_dim3 { unsigned x = 0, y = 0, z = 0; };
// One OS thread runs a block's threads as fibers (ucontext stacks, switched
// by _setjmp/_longjmp: no system call per switch), one after another until
// each reaches a barrier or returns; the scheduler sets the index variables
// before it resumes a fiber.
static aj_dim3 threadIdx, blockIdx, blockDim, gridDim;
struct aj_fiber { jmp_buf ctx; ucontext_t start; char* stack; bool started, done; };
struct aj_barrier { unsigned expected, count; unsigned long gen; };
static std::vector<aj_fiber> aj_fibers;
static unsigned aj_cur;
static jmp_buf aj_sched;
static void (*aj_entry)(const void*);
static const void* aj_blob;
static aj_barrier aj_block_bar, aj_warp_bar[32];
static constexpr std::size_t aj_stack_bytes = 256 << 10;
inline void aj_yield() {
  if (!_setjmp(aj_fibers[aj_cur].ctx)) _longjmp(aj_sched, 1);
}
inline void aj_release(aj_barrier& b) { b.count = 0; ++b.gen; }
// A barrier of the threads that have not returned (as bar.sync counts them).
// The last to arrive waits for the next round too, so that every thread
// leaves it in that round's order.
inline void aj_arrive_and_wait(aj_barrier& b) {
  const unsigned long g = b.gen;
  if (++b.count == b.expected) {
    aj_release(b);
    return aj_yield();
  }
  while (b.gen == g) aj_yield();
}
inline void aj_leave(aj_barrier& b) {
  --b.expected;
  if (b.count != 0 && b.count == b.expected) aj_release(b);
}
static void aj_fiber_main() {
  aj_entry(aj_blob);
  aj_fibers[aj_cur].done = true;
  aj_leave(aj_block_bar);
  aj_leave(aj_warp_bar[threadIdx.x >> 5]);
  _longjmp(aj_sched, 1);
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __constant__
inline void __syncthreads() { aj_arrive_and_wait(aj_block_bar); }
static unsigned long long aj_shfl_slot[32][32];
template <class T> T __shfl_down_sync(unsigned, T v, int d) {
  const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  std::memcpy(&aj_shfl_slot[w][lane], &v, sizeof v);
  aj_arrive_and_wait(aj_warp_bar[w]);
  T r = v;
  if (lane + d < 32) std::memcpy(&r, &aj_shfl_slot[w][lane + d], sizeof r);
  aj_arrive_and_wait(aj_warp_bar[w]);
  return r;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline long long __double_as_longlong(double f) { long long i; std::memcpy(&i, &f, 8); return i; }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
// cuda_fp16.h / cuda_bf16.h: the storage types and their bit casts.
#define AJ_HALF_STORAGE 1
struct __half { unsigned short x; };
struct __nv_bfloat16 { unsigned short x; };
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline __half __ushort_as_half(unsigned short b) { return __half{b}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16{b}; }
extern "C" void aj_emu_launch(void (*f)(const void*), const void* blob, unsigned grid, unsigned block) {
  if (block == 0 || block > 1024 || block % 32 != 0) throw std::runtime_error("emulator: block size must be 32..1024, a multiple of 32");
  gridDim.x = grid;
  blockDim.x = block;
  aj_entry = f;
  aj_blob = blob;
  while (aj_fibers.size() < block) {  // stacks kept for the next launch
    void* s = mmap(nullptr, aj_stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) throw std::runtime_error("emulator: cannot map a fiber stack");
    aj_fibers.push_back(aj_fiber{});
    aj_fibers.back().stack = static_cast<char*>(s);
  }
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx.x = b;
    aj_block_bar = aj_barrier{block, 0, 0};
    for (unsigned w = 0; w < block / 32; ++w) aj_warp_bar[w] = aj_barrier{32, 0, 0};
    for (unsigned t = 0; t < block; ++t) {
      aj_fiber& fb = aj_fibers[t];
      fb.started = fb.done = false;
      getcontext(&fb.start);
      fb.start.uc_stack.ss_sp = fb.stack;
      fb.start.uc_stack.ss_size = aj_stack_bytes;
      fb.start.uc_link = nullptr;
      makecontext(&fb.start, aj_fiber_main, 0);
    }
    // Rounds: every live fiber runs to its next barrier (or its end), in
    // thread order and then in reverse, so that a thread reading what
    // another writes without a barrier between reads it too early in one of them.
    for (unsigned live = block, round = 0; live != 0; ++round) {
      live = 0;
      for (unsigned i = 0; i < block; ++i) {
        const unsigned t = (round + b) % 2 == 0 ? i : block - 1 - i;
        if (aj_fibers[t].done) continue;
        aj_cur = t;
        threadIdx.x = t;
        if (!_setjmp(aj_sched)) {
          if (!aj_fibers[t].started) {
            aj_fibers[t].started = true;
            setcontext(&aj_fibers[t].start);
          }
          _longjmp(aj_fibers[t].ctx, 1);
        }
        if (!aj_fibers[aj_cur].done) ++live;
      }
    }
  }
}
)SHIM";

// A batch of generated kernels compiled into one host shared library.
class HostCudaLibrary {
 public:
  using Entry = void (*)(const void*);
  using Launch = void (*)(Entry, const void*, unsigned, unsigned);

  // sources: by hash. Throws std::runtime_error with the compiler output on failure.
  explicit HostCudaLibrary(const std::map<std::uint64_t, aj::cuda::KernelSource>& sources) {
    const std::string prelude = aj::cuda::kPrelude;
    std::string unit = std::string(kCudaShim) + prelude;
    int i = 0;
    for (auto& [hash, s] : sources) {
      std::string body = s.source.substr(s.source.find(prelude) + prelude.size());
      for (std::size_t p; (p = body.find("extern \"C\" ")) != std::string::npos;) body.erase(p, 11);
      const std::string ns = "k" + std::to_string(i);
      unit += "namespace " + ns + " {\n" + body + "}\n";
      for (const char* e : {"aj_k", "aj_k_finish", "aj_k_serial"}) {
        if (body.find(std::string(" ") + e + "(const P p)") == std::string::npos) continue;
        unit += "extern \"C\" void " + ns + "_" + e + "(const void* b) { " + ns + "::P p; std::memcpy(&p, b, sizeof p); " +
                ns + "::" + e + "(p); }\n";
      }
      index_[hash] = i++;
    }
    dir_ = "/tmp/aj_cuda_emu_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++);
    std::string cmd = "mkdir -p " + dir_;
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot make " + dir_);
    std::ofstream(dir_ + "/k.cpp") << unit;
    const char* cxx = std::getenv("CXX");
    cmd = std::string(cxx && *cxx ? cxx : "c++") + " -std=c++20 -O0 -w -shared -fPIC -o " + dir_ +
          "/k.so " + dir_ + "/k.cpp > " + dir_ + "/log.txt 2>&1";
    if (const int status = std::system(cmd.c_str()); status != 0) {
      std::ifstream log(dir_ + "/log.txt");
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      // The status too: a compiler killed (or a failed fork) leaves no log.
      throw std::runtime_error("host compile of generated CUDA failed (" + dir_ + "/k.cpp, system() status " +
                               std::to_string(status) + "):\n" + text.substr(0, 4000));
    }
    lib_ = dlopen((dir_ + "/k.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    launch_ = reinterpret_cast<Launch>(dlsym(lib_, "aj_emu_launch"));
  }
  ~HostCudaLibrary() {
    if (lib_) dlclose(lib_);
    if (!dir_.empty() && std::getenv("AJ_KEEP_EMU") == nullptr) std::system(("rm -rf " + dir_).c_str());
  }
  HostCudaLibrary(const HostCudaLibrary&) = delete;
  HostCudaLibrary& operator=(const HostCudaLibrary&) = delete;

  bool has(std::uint64_t hash) const { return index_.count(hash) != 0; }

  // Run entry `name` of the kernel with source hash `hash`.
  void run(std::uint64_t hash, const char* name, const std::vector<std::int64_t>& params, std::int64_t grid,
           unsigned block) const {
    run(hash, name, params.data(), grid, block);
  }
  void run(std::uint64_t hash, const char* name, const void* params, std::int64_t grid, unsigned block) const {
    const std::string sym = "k" + std::to_string(index_.at(hash)) + "_" + name;
    auto e = reinterpret_cast<Entry>(dlsym(lib_, sym.c_str()));
    if (!e) throw std::runtime_error("no entry " + sym);
    launch_(e, params, static_cast<unsigned>(grid), block);
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::map<std::uint64_t, int> index_;
  std::string dir_;
  void* lib_ = nullptr;
  Launch launch_ = nullptr;
};

}  // namespace ajtest

// Runs generated CUDA C on the host, for tests on machines without a GPU.
//
// The kernels' source (everything after the prelude is the same text NVRTC
// compiles) is compiled by the host C++ compiler against a small shim: CUDA's
// index variables become thread-locals, a block is `blockDim.x` std::threads
// run together (so __syncthreads is a barrier and __shfl_down_sync a
// per-warp exchange through memory), blocks run one after another on the
// same threads (so __shared__ can be a static). What this checks: the generated index math,
// vector path, reductions (block, two-pass, serial), epilogues, parameter
// packing and launch planning, computed with the host's libm. What it cannot:
// CUDA's own math library, real memory ordering, the driver.
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
#include <barrier>
#include <cmath>
#include <cstring>
#include <math.h>
#include <memory>
#include <thread>
#include <vector>
struct aj_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local aj_dim3 threadIdx, blockIdx;
static aj_dim3 blockDim, gridDim;
static std::barrier<>* aj_block_bar;
static std::barrier<>** aj_warp_bar;
static unsigned long long aj_shfl_slot[32][32];
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __constant__
inline void __syncthreads() { aj_block_bar->arrive_and_wait(); }
template <class T> T __shfl_down_sync(unsigned, T v, int d) {
  const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  std::memcpy(&aj_shfl_slot[w][lane], &v, sizeof v);
  aj_warp_bar[w]->arrive_and_wait();
  T r = v;
  if (lane + d < 32) std::memcpy(&r, &aj_shfl_slot[w][lane + d], sizeof r);
  aj_warp_bar[w]->arrive_and_wait();
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
  gridDim.x = grid;
  blockDim.x = block;
  std::barrier<> bar(block);
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<std::barrier<>*> wp;
  for (unsigned w = 0; w < block / 32; ++w) {
    warps.push_back(std::make_unique<std::barrier<>>(32));
    wp.push_back(warps.back().get());
  }
  aj_block_bar = &bar;
  aj_warp_bar = wp.data();
  // One thread per block thread, reused for every block (creating threads
  // dominates otherwise); the barrier after each block keeps the blocks apart.
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < block; ++t) {
    ts.emplace_back([=, &bar] {
      threadIdx.x = t;
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        f(blob);
        bar.arrive_and_wait();
      }
    });
  }
  for (auto& t : ts) t.join();
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
    cmd = std::string(cxx && *cxx ? cxx : "c++") + " -std=c++20 -O0 -w -shared -fPIC -pthread -o " + dir_ +
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

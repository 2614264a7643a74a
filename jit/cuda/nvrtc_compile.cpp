// NVRTC compilation with a memory and a disk cache (see nvrtc_compile.hpp).
#include "jit/cuda/nvrtc_compile.hpp"


#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "arrayjit/error.hpp"
#include "jit/cuda/cuda_api.hpp"
#include "jit/disk_cache.hpp"
#include "base/log.hpp"
#include "base/profile.hpp"

namespace aj::cuda {

namespace {

constexpr std::size_t kMemoryCacheMax = 4096;

struct Cache {
  std::mutex mu;
  std::unordered_map<std::uint64_t, std::shared_ptr<const Image>> images;
  CompileCounters counters;
};
Cache& cache() {
  static Cache c;
  return c;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0x100000001b3ull;
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The host JIT's disk cache directory (AJ_CACHE_DIR, "off" included), with
// a directory of its own for CUDA images; "" when disabled.
std::string disk_dir() {
  if (const char* off = std::getenv("AJ_CUDA_DISK_CACHE"); off && std::string(off) == "0") return {};
  const std::string dir = jit::default_cache_dir();
  return dir.empty() ? dir : dir + "/cuda";
}

// The architecture to compile for: `arch` itself when NVRTC knows it (cubin),
// else the newest older one (PTX). 0 when NVRTC supports nothing that old.
std::pair<int, bool> pick_arch(const NvrtcApi& nv, int arch) {
  int n = 0;
  if (nv.nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {arch, nv.nvrtcGetCUBIN != nullptr};
  std::vector<int> archs(static_cast<std::size_t>(n));
  nv.nvrtcGetSupportedArchs(archs.data());
  if (std::find(archs.begin(), archs.end(), arch) != archs.end() && nv.nvrtcGetCUBIN) return {arch, true};
  int best = 0;
  for (int a : archs) {
    if (a <= arch) best = std::max(best, a);
  }
  return {best, false};
}

std::string numbered(const std::string& src) {
  std::istringstream in(src);
  std::ostringstream out;
  int line = 1;
  for (std::string l; std::getline(in, l); ++line) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%4d  ", line);
    out << buf << l << "\n";
  }
  return out.str();
}

// RAII for an nvrtcProgram: destroyed on every path, exceptions included.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) require_nvrtc().nvrtcDestroyProgram(&p);
  }
};

// Where cuda_fp16.h and cuda_bf16.h are, which kernels of half dtypes include
// (cuda_prelude.hpp: kHalfHeaders): NVRTC has no built-in copy. The toolkit's
// include directory beside the NVRTC that was loaded, or CUDA_PATH's,
// CUDA_HOME's, /usr/local/cuda's; "" when none has them (such kernels then
// fail to compile, saying so).
const std::string& half_include_dir(const NvrtcApi& nv) {
  static const std::string dir = [&] {
    std::vector<std::string> dirs;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(nv.nvrtcCompileProgram), &info) && info.dli_fname) {
      std::error_code ec;
      const auto lib = std::filesystem::canonical(info.dli_fname, ec);
      if (!ec) dirs.push_back((lib.parent_path().parent_path() / "include").string());
    }
    for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
      if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/include");
    }
    dirs.push_back("/usr/local/cuda/include");
    for (const auto& d : dirs) {
      std::error_code ec;
      if (std::filesystem::exists(d + "/cuda_fp16.h", ec) && std::filesystem::exists(d + "/cuda_bf16.h", ec)) return d;
    }
    return std::string();
  }();
  return dir;
}

// AJ_NVRTC_FLAGS: options added to every compile (space-separated, e.g.
// "-Ofc=mid" for faster compiles of less optimized code, "-lineinfo"); part
// of both cache keys.
const std::vector<std::string>& extra_flags() {
  static const std::vector<std::string> flags = [] {
    std::vector<std::string> v;
    if (const char* e = std::getenv("AJ_NVRTC_FLAGS")) {
      std::istringstream in(e);
      for (std::string f; in >> f;) v.push_back(f);
    }
    return v;
  }();
  return flags;
}
const std::string& extra_flags_text() {
  static const std::string t = [] {
    std::string s;
    for (const auto& f : extra_flags()) s += " " + f;
    return s;
  }();
  return t;
}

Image run_nvrtc(const KernelSource& src, int arch, bool ptx_only, bool fast_compile) {
  const NvrtcApi& nv = require_nvrtc();
  auto [target, cubin] = pick_arch(nv, arch);
  if (ptx_only) cubin = false;
  if (target == 0) {
    runtime_error("aj: NVRTC " + std::to_string(nv.major) + "." + std::to_string(nv.minor) +
                  " supports no architecture at or below sm_" + std::to_string(arch));
  }
  Program prog;
  const std::string name = "aj_" + hex(src.hash) + ".cu";
  AJ_NVRTC(nvrtcCreateProgram, &prog.p, src.source.c_str(), name.c_str(), 0, nullptr, nullptr);
  const std::string arch_opt = std::string(cubin ? "-arch=sm_" : "-arch=compute_") + std::to_string(target);
  const std::string include = "--include-path=" + half_include_dir(nv);
  std::vector<const char*> opts = {"-std=c++17", "--fmad=false", arch_opt.c_str()};
  if (!half_include_dir(nv).empty()) opts.push_back(include.c_str());
  for (const auto& f : extra_flags()) opts.push_back(f.c_str());
  if (fast_compile && nv.major >= 13) opts.push_back("--Ofast-compile=max");
  const nvrtcResult r = nv.nvrtcCompileProgram(prog.p, static_cast<int>(opts.size()), opts.data());
  std::size_t log_size = 0;
  nv.nvrtcGetProgramLogSize(prog.p, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) nv.nvrtcGetProgramLog(prog.p, log.data());
  if (r != NVRTC_SUCCESS) {
    runtime_error("aj: NVRTC failed to compile a CUDA kernel (" + arch_opt + extra_flags_text() + "): " +
                  nv.nvrtcGetErrorString(r) + "\n--- log ---\n" + log.c_str() +
                  "\n--- source ---\n" + numbered(src.source));
  }
  Image img;
  img.cubin = cubin;
  img.arch = target;
  std::size_t size = 0;
  if (cubin) {
    AJ_NVRTC(nvrtcGetCUBINSize, prog.p, &size);
    img.bytes.resize(size);
    AJ_NVRTC(nvrtcGetCUBIN, prog.p, img.bytes.data());
  } else {
    AJ_NVRTC(nvrtcGetPTXSize, prog.p, &size);  // includes the terminating NUL
    img.bytes.resize(size);
    AJ_NVRTC(nvrtcGetPTX, prog.p, img.bytes.data());
  }
  return img;
}

}  // namespace

std::function<std::shared_ptr<const Image>(const KernelSource&, int)>& compile_hook() {
  static std::function<std::shared_ptr<const Image>(const KernelSource&, int)> h;
  return h;
}

void set_compile_hook_for_testing(std::function<std::shared_ptr<const Image>(const KernelSource&, int)> hook) {
  compile_hook() = std::move(hook);
}

std::shared_ptr<const Image> compile(const KernelSource& src, int arch, const CompileOptions& opt) {
  if (compile_hook()) return compile_hook()(src, arch);
  const NvrtcApi& nv = require_nvrtc();
  std::uint64_t key = mix(src.hash, static_cast<std::uint64_t>(arch));
  key = mix(key, static_cast<std::uint64_t>(nv.major * 1000 + nv.minor));
  key = mix(key, static_cast<std::uint64_t>(opt.driver_version));
  key = mix(key, opt.ptx_only);
  key = mix(key, opt.fast_compile);
  key = mix(key, std::hash<std::string>()(extra_flags_text()));
  Cache& c = cache();
  if (opt.memory_cache) {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto it = c.images.find(key); it != c.images.end()) {
      ++c.counters.memory_hits;
      return it->second;
    }
  }
  if (detail::log_enabled("cuda")) detail::log("cuda", "kernel " + hex(src.hash) + ":\n" + src.source);
  auto img = std::make_shared<Image>();
  // On disk through jit::DiskCache (checked header, size bound, a trusted
  // directory), keyed by everything that makes the image: a different source
  // under the same hash is another entry, never this one.
  const jit::DiskCache disk(opt.disk_cache ? disk_dir() : std::string());
  std::string disk_key;
  if (disk.enabled()) {
    disk_key = "cuda sm_" + std::to_string(arch) + " nvrtc " + std::to_string(nv.major) + "." +
               std::to_string(nv.minor) + " driver " + std::to_string(opt.driver_version) +
               (opt.ptx_only ? " ptx" : " any") + (opt.fast_compile ? " fast" : "") + extra_flags_text() + "\n" + src.source;
  }
  bool from_disk = false;
  std::string payload;  // the kind ('c' cubin, 'p' PTX), then the image
  if (disk.enabled() && disk.read(disk_key, &payload) == jit::DiskRead::hit && payload.size() > 1 &&
      (payload[0] == 'c' || payload[0] == 'p')) {
    img->cubin = payload[0] == 'c';
    img->arch = arch;
    img->bytes = payload.substr(1);
    from_disk = true;
  }
  if (!from_disk) {
    const std::int64_t t0 = detail::prof::on() ? detail::prof::now_ns() : 0;
    *img = run_nvrtc(src, arch, opt.ptx_only, opt.fast_compile);
    if (t0) {
      detail::prof::Event e;
      e.kind = detail::prof::Kind::compile;
      e.start_ns = t0;
      e.dur_ns = detail::prof::now_ns() - t0;
      e.set_name(("NVRTC aj_" + hex(src.hash)).c_str());
      e.device_kind = 1;
      detail::prof::record(e);
    }
    if (disk.enabled()) disk.write(disk_key, (img->cubin ? "c" : "p") + img->bytes);
  }
  std::lock_guard<std::mutex> lock(c.mu);
  ++(from_disk ? c.counters.disk_hits : c.counters.compiles);
  if (opt.memory_cache) {
    if (c.images.size() >= kMemoryCacheMax) c.images.clear();
    c.images.emplace(key, img);
  }
  return img;
}

std::string nvrtc_description() {
  const NvrtcApi* nv = nvrtc_api();
  if (!nv) return {};
  return "NVRTC " + std::to_string(nv->major) + "." + std::to_string(nv->minor) + " (" + nv->path + ")";
}

CompileCounters compile_counters() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().counters;
}

void clear_compile_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().images.clear();
}

}  // namespace aj::cuda

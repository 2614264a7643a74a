#include "backends/cpu/blas.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

#include "arrayjit/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// The OpenBLAS entry points used, declared here rather than through a cblas.h:
// Debian puts the reference, OpenBLAS and BLIS cblas.h behind alternatives, and
// these declarations are OpenBLAS's ABI whichever one the system picked
// (blasint is int: Debian's libopenblas0 is the LP64 build).
extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc);
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace aj::cpu {

namespace {

bool same_name(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) return (a >> 5) & 1u;
#endif
  return false;
}

bool is_amd() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

// Environment variables set while a private copy loads (OpenBLAS reads them
// in its constructor), restored after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The file at `path` copied into an anonymous memory file and dlopen'ed from
// there with RTLD_DEEPBIND; null with *why extended on failure. (Not under
// the sanitizers: their runtimes refuse RTLD_DEEPBIND.)
void* load_memory_copy(const char* path, std::string* why) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)path;
  *why += "; no in-memory copy under a sanitizer";
  return nullptr;
#else
  const int in = ::open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    *why += std::string("; cannot read ") + path;
    return nullptr;
  }
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, "aj-openblas", 0u));
  if (fd < 0) {
    ::close(in);
    *why += "; memfd_create failed";
    return nullptr;
  }
  char buf[1 << 16];
  bool ok = true;
  for (ssize_t n; ok && (n = ::read(in, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      ok = errno == EINTR;
      continue;
    }
    for (ssize_t off = 0; ok && off < n;) {
      const ssize_t w = ::write(fd, buf + off, static_cast<std::size_t>(n - off));
      if (w < 0) ok = errno == EINTR;
      else off += w;
    }
  }
  ::close(in);
  void* h = nullptr;
  if (ok) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    h = dlopen(self.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
      const char* e = dlerror();
      *why += std::string("; an in-memory copy: ") + (e ? e : "dlopen failed");
    }
  } else {
    *why += "; copying it into memory failed";
  }
  ::close(fd);  // the mapping keeps the memory
  return h;
#endif
}

Blas choose() {
  const IsaLevel want = level();
  Blas own = process_openblas();
  const std::optional<IsaLevel> own_level = openblas_core_level(own.core);
  // A core not in the table is OpenBLAS's choice for a CPU newer than this
  // table: trusted, unless the level was forced.
  if (own_level ? *own_level == want : !level_forced()) {
    own.description = own.config + ": core " + own.core + " (the process's copy), level " + level_description();
    return own;
  }
  const char* core = openblas_core_for(want);
  std::string why;
  if (std::optional<Blas> mine = load_private_openblas(core, &why)) {
    mine->description = mine->config + ": core " + mine->core + " (a private copy: the process's copy runs core " +
                        own.core + "), level " + level_description();
    return *mine;
  }
  own.description = own.config + ": core " + own.core + " (the process's copy; a private copy with core " + core +
                    " could not be used: " + why + "), level " + level_description();
  return own;
}

}  // namespace

std::optional<IsaLevel> openblas_core_level(const std::string& core) {
  struct Row {
    const char* core;
    IsaLevel level;
  };
  // OpenBLAS 0.3's x86-64 DYNAMIC_ARCH cores (driver/others/dynamic.c).
  static constexpr Row rows[] = {
      {"Katmai", IsaLevel::baseline},       {"Coppermine", IsaLevel::baseline}, {"Northwood", IsaLevel::baseline},
      {"Prescott", IsaLevel::baseline},     {"Banias", IsaLevel::baseline},     {"Atom", IsaLevel::baseline},
      {"Core2", IsaLevel::baseline},        {"Penryn", IsaLevel::baseline},     {"Dunnington", IsaLevel::baseline},
      {"Nehalem", IsaLevel::baseline},      {"Athlon", IsaLevel::baseline},     {"Opteron", IsaLevel::baseline},
      {"Opteron_SSE3", IsaLevel::baseline}, {"Barcelona", IsaLevel::baseline},  {"Nano", IsaLevel::baseline},
      {"Bobcat", IsaLevel::baseline},       {"Sandybridge", IsaLevel::avx},     {"Bulldozer", IsaLevel::avx},
      {"Piledriver", IsaLevel::avx},        {"Steamroller", IsaLevel::avx},     {"Excavator", IsaLevel::avx2},
      {"Haswell", IsaLevel::avx2},          {"Zen", IsaLevel::avx2},            {"SkylakeX", IsaLevel::avx512},
      {"Cooperlake", IsaLevel::avx512},     {"SapphireRapids", IsaLevel::avx512},
  };
  for (const Row& r : rows) {
    if (same_name(core, r.core)) return r.level;
  }
  return std::nullopt;
}

const char* openblas_core_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::avx512: return has_avx512_bf16() ? "Cooperlake" : "SkylakeX";
    case IsaLevel::avx2: return is_amd() ? "Zen" : "Haswell";
    case IsaLevel::avx: return "Sandybridge";
    case IsaLevel::baseline: break;
  }
  return "Prescott";
}

namespace {

// The LAPACK table from the library `h` (whose cblas_sgemm this is).
template <class T>
LapackFns<T> lapack_from(void* h, char p) {
  LapackFns<T> f;
  auto get = [&](auto& fn, const char* name) {
    const std::string sym = name[0] == 'c' ? std::string("cblas_") + p + (name + 1) : p + std::string(name);
    fn = h ? reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, sym.c_str())) : nullptr;
  };
  get(f.potrf, "potrf_");
  get(f.getrf, "getrf_");
  get(f.getrs, "getrs_");
  get(f.geqrf, "geqrf_");
  get(f.orgqr, "orgqr_");
  get(f.gesdd, "gesdd_");
  get(f.syevd, "syevd_");
  get(f.trsm, "ctrsm");
  return f;
}

void with_lapack(Blas& b, void* h) {
  b.lapack_f32 = lapack_from<float>(h, 's');
  b.lapack_f64 = lapack_from<double>(h, 'd');
}

}  // namespace

Blas process_openblas() {
  Blas b;
  b.sgemm = &cblas_sgemm;
  b.dgemm = &cblas_dgemm;
  b.set_num_threads = &openblas_set_num_threads;
  b.get_num_threads = &openblas_get_num_threads;
  b.core = openblas_get_corename();
  b.config = openblas_get_config();
  // Its LAPACK from the same file (another LAPACK loaded first in the process
  // would win a plain symbol lookup).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) && info.dli_fname) {
    void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    with_lapack(b, h);
    if (h) dlclose(h);  // RTLD_NOLOAD took a reference: the library stays loaded
  }
  return b;
}

std::optional<Blas> load_private_openblas(const char* core, std::string* why, PrivateLoad how) {
  // One copy per core for the process's life: a namespace holds a copy of
  // the C library too, and glibc has room for few (static TLS, 16 at most).
  static std::mutex mu;
  static std::map<std::string, std::optional<Blas>> loaded;
  static std::map<std::string, std::string> failed;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = std::string(core) + (how == PrivateLoad::in_memory ? " in memory" : "");
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  if (auto it = failed.find(key); it != failed.end()) {
    *why = it->second;
    return std::nullopt;
  }
  auto fail = [&](std::string msg) -> std::optional<Blas> {
    failed[key] = msg;
    *why = std::move(msg);
    return std::nullopt;
  };
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) || !info.dli_fname) {
    return fail("cannot find the file of the process's OpenBLAS");
  }
  void* h = nullptr;
  std::string dlmopen_error;
  {
    // Its constructor reads these: the core to use, and no threads of its
    // own (the host pool calls it from each worker, one thread per call).
    ScopedEnv coretype("OPENBLAS_CORETYPE", core);
    ScopedEnv threads("OPENBLAS_NUM_THREADS", "1");
    if (how == PrivateLoad::any) h = dlmopen(LM_ID_NEWLM, info.dli_fname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = how == PrivateLoad::any ? dlerror() : "not tried";
      dlmopen_error = std::string("dlmopen(") + info.dli_fname + "): " + (e ? e : "failed");
      // A new namespace needs a copy of the C library and its static TLS,
      // which a process with many libraries loaded (Python with NumPy) may
      // have used up. Then: the same file copied into memory (another file
      // to the loader, so another instance) in this namespace, its own
      // symbols bound first (RTLD_DEEPBIND: its internal calls must not
      // reach the process's copy).
      h = load_memory_copy(info.dli_fname, &dlmopen_error);
    }
  }
  if (!h) return fail(dlmopen_error);
  Blas b;
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(dlsym(h, "cblas_sgemm"));
  b.dgemm = reinterpret_cast<decltype(b.dgemm)>(dlsym(h, "cblas_dgemm"));
  b.set_num_threads = reinterpret_cast<decltype(b.set_num_threads)>(dlsym(h, "openblas_set_num_threads"));
  b.get_num_threads = reinterpret_cast<decltype(b.get_num_threads)>(dlsym(h, "openblas_get_num_threads"));
  auto corename = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename"));
  auto config = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_config"));
  if (!b.sgemm || !b.dgemm || !b.set_num_threads || !b.get_num_threads || !corename || !config) {
    return fail(std::string(info.dli_fname) + " lacks an OpenBLAS entry point");
  }
  b.core = corename();
  b.config = config();
  b.private_copy = true;
  with_lapack(b, h);
  // A build for one CPU ignores OPENBLAS_CORETYPE: its copy is no better.
  if (!same_name(b.core, core)) {
    return fail(std::string(info.dli_fname) + " ran core " + b.core + " when asked for " + core +
                " (not a DYNAMIC_ARCH build?)");
  }
  b.set_num_threads(1);
  return loaded[key] = b;
}

const Blas& blas() {
  static const Blas b = choose();
  return b;
}

}  // namespace aj::cpu

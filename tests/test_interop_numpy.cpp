// A real DLPack client: NumPy (Debian's python3-numpy 1.24, legacy DLPack)
// imports an arrayjit array and arrayjit imports NumPy's, zero-copy, through
// tests/interop_numpy.py (ctypes against libarrayjit.so's C API).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {
const char* kPython = "/usr/bin/python3";  // Debian's, where python3-numpy installs

// Runs a shell command; returns its exit status and output.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) *out += buf;
  return pclose(p);
}
}  // namespace

TEST_CASE("interop numpy: np.from_dlpack reads arrayjit's buffer, arrayjit borrows NumPy's capsule") {
  std::string probe;
  if (run(std::string(kPython) + " -c 'import numpy'", &probe) != 0) {
    MESSAGE("skipped: " << kPython << " with numpy not found (apt-get install python3-numpy): " << probe);
    return;
  }
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(&aj_last_error), &info) != 0);
  std::string out;
  std::string cmd = std::string(kPython) + " " AJ_TESTS_DIR "/interop_numpy.py " + info.dli_fname;
#if defined(__SANITIZE_ADDRESS__)
  // An ASan-built library loads into Python only after the sanitizer
  // runtimes (Python's own allocations are not checked for leaks).
  std::string preload;
  for (void* sym : {dlsym(RTLD_DEFAULT, "__asan_init"), dlsym(RTLD_DEFAULT, "__ubsan_handle_add_overflow")}) {
    Dl_info rt{};
    if (sym && dladdr(sym, &rt) != 0 && rt.dli_fname) preload += std::string(preload.empty() ? "" : ":") + rt.dli_fname;
  }
  cmd = "LD_PRELOAD=" + preload + " ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0 " + cmd;
#endif
  const int rc = run(cmd, &out);
  INFO(cmd << "\n" << out);
  CHECK(rc == 0);
  CHECK(out.find("interop numpy: ok") != std::string::npos);
}

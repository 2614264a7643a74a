// The doctest main for aj_tests; every other tests/*.cpp holds test cases.
//
// Tests run with the debug checks of a debug build, whatever the build type:
// the IR verifier after every pass (and the run-time check that no two live
// buffers overlap), and poisoning of freed host buffers, so an array that
// still pointed at freed memory would show 0xFF garbage instead of silently
// passing. AJ_VERIFY=0 / AJ_POISON=0 in the environment turn them off.
//
// AJ_CPU_LEVEL above this CPU's level (base/cpu_level.hpp) would make every
// kernel an error: the run is skipped instead, with exit code 77 (ctest's
// SKIP_RETURN_CODE for the cpu_level.* entries); so is the CPU's own level,
// the code every other run tests.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "base/cpu_level.hpp"

int main(int argc, char** argv) {
  setenv("AJ_VERIFY", "1", 0);  // read at first use, which is after this
  setenv("AJ_POISON", "1", 0);
  if (const char* l = std::getenv("AJ_CPU_LEVEL"); l && *l) {
    const auto want = aj::cpu::parse_level(l);
    if (want && *want > aj::cpu::detected_level()) {
      std::printf("skipped: AJ_CPU_LEVEL=%s, this CPU's level is %s\n", l,
                  aj::cpu::level_name(aj::cpu::detected_level()));
      return 77;
    }
    // The CPU's own level (avx2 on an AVX2-only CPU) runs the code of a run
    // without AJ_CPU_LEVEL, which the other entries test: not again.
    const char* width = std::getenv("AJ_VECTOR_WIDTH");
    if (want && *want == aj::cpu::detected_level() && !(width && *width)) {
      std::printf("skipped: AJ_CPU_LEVEL=%s is this CPU's own level (the runs without it test that code)\n", l);
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  return context.run();
}

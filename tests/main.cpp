// The doctest main for aj_tests; every other tests/*.cpp holds test cases.
//
// Tests run with the debug checks of a debug build, whatever the build type:
// the IR verifier after every pass (and the run-time check that no two live
// buffers overlap), and poisoning of freed host buffers, so an array that
// still pointed at freed memory would show 0xFF garbage instead of silently
// passing. AJ_VERIFY=0 / AJ_POISON=0 in the environment turn them off.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("AJ_VERIFY", "1", 0);  // read at first use, which is after this
  setenv("AJ_POISON", "1", 0);
  doctest::Context context(argc, argv);
  return context.run();
}

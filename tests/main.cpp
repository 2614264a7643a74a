// The doctest main for aj_tests; every other tests/*.cpp holds test cases.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

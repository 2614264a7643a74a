// Verification off for a scope. Tests run with it on (tests/main.cpp), which
// translates every plan-cache hit whole and plans it again; a user's build
// does neither, and these paths are tested with it off.
#pragma once

#include "opt/verify.hpp"

namespace ajtest {

struct VerifyOff {
  bool was = aj::verify_enabled();
  VerifyOff() { aj::set_verify(false); }
  ~VerifyOff() { aj::set_verify(was); }
  VerifyOff(const VerifyOff&) = delete;
  VerifyOff& operator=(const VerifyOff&) = delete;
};

}  // namespace ajtest

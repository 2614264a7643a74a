// Running a check on the host JIT and on the interpreter: the JIT switched
// on and off for a scope, restored after (tests compare the two paths).
#pragma once

#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <functional>
#include <vector>

namespace ajtest {

// check() twice: on the JIT, then on the interpreter.
template <class F>
void on_both(F check) {
  const bool saved = aj::jit::enabled();
  for (bool jit : {true, false}) {
    CAPTURE(jit);
    aj::jit::set_enabled(jit);
    check();
  }
  aj::jit::set_enabled(saved);
}

// The values of make()'s array, evaluated with the JIT on or off.
template <class T>
std::vector<T> eval_with(bool jit, const std::function<aj::Array()>& make) {
  const bool saved = aj::jit::enabled();
  aj::jit::set_enabled(jit);
  std::vector<T> r = make().template to_vector<T>();
  aj::jit::set_enabled(saved);
  return r;
}

}  // namespace ajtest

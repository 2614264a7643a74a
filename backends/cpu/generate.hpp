// A generator's value at flat index i (iota, linspace, eye, random numbers),
// exactly as the reference interpreter computes it. The kernel interpreter
// calls it directly; the JIT calls it through the runtime helpers
// in jit/llvm/runtime_symbols.cpp, and the differential tests compare both.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "arrayjit/error.hpp"
#include "backends/reference/scalar_ops.hpp"
#include "graph/kernel.hpp"

namespace aj::cpu {

template <class T>
T generate_value(Op op, const KScalar* s, std::int64_t i) {
  using namespace aj::ref;
  const double f0 = s[0].f, f1 = s[1].f;
  switch (op) {
    case Op::Iota: {
      const bool integral = std::floor(f0) == f0 && std::floor(f1) == f1 && std::fabs(f0) < 9e15 &&
                            std::fabs(f1) < 9e15;
      if (!std::is_floating_point_v<T> && integral) {
        return convert<T>(static_cast<std::int64_t>(f0) + i * static_cast<std::int64_t>(f1));
      }
      return convert<T>(f0 + static_cast<double>(i) * f1);
    }
    case Op::Linspace: {
      const std::int64_t total = s[3].i;
      const double step = total > 1 ? (f1 - f0) / static_cast<double>(total - 1) : 0.0;
      return convert<T>((i == total - 1 && total > 1) ? f1 : f0 + static_cast<double>(i) * step);
    }
    case Op::Eye: {
      const std::int64_t cols = s[3].i;
      return static_cast<T>((i % cols) - (i / cols) == s[2].i);
    }
    case Op::RandUniform:
    case Op::RandNormal:
      if constexpr (std::is_floating_point_v<T>) {
        const auto key = static_cast<std::uint64_t>(s[2].i);
        const auto ui = static_cast<std::uint64_t>(i);
        if (op == Op::RandNormal) return static_cast<T>(f0 + f1 * normal01(key, ui));
        T v = static_cast<T>(f0 + (f1 - f0) * uniform01(key, ui));
        if (v >= static_cast<T>(f1) && f1 > f0) v = std::nextafter(static_cast<T>(f1), static_cast<T>(f0));
        return v;
      }
      internal_error("generate: random numbers of a non-float type");
    default: internal_error(std::string("generate: not a generator: ") + op_name(op));
  }
}

}  // namespace aj::cpu

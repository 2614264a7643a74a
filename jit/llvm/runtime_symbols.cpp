#include "jit/llvm/runtime_symbols.hpp"

#include <cstdint>

#include "base/semantics.hpp"
#include "graph/kernel.hpp"

// SLEEF's functions, declared only to take their addresses: sleef.h hides the
// AVX/AVX-512 ones unless this file itself is compiled for those ISAs, and
// generated code (not this file) is what calls them, with their real types.
// X(name, accuracy): the accuracy variant generated code uses (sleef_variant).
#define AJ_SLEEF_FUNCS(X) X(exp, u10) X(log, u35) X(log1p, u10) X(expm1, u10) X(sin, u35) \
  X(cos, u35) X(tan, u35) X(tanh, u35) X(pow, u10) X(erf, u10) X(erfc, u15)
#define AJ_DECLARE(n, u)                                                                    \
  void Sleef_##n##_##u(); void Sleef_##n##f_##u(); void Sleef_##n##d2_##u();              \
  void Sleef_##n##d4_##u(); void Sleef_##n##d8_##u(); void Sleef_##n##f4_##u();           \
  void Sleef_##n##f8_##u(); void Sleef_##n##f16_##u();
extern "C" {
AJ_SLEEF_FUNCS(AJ_DECLARE)
}
#undef AJ_DECLARE

// Helpers with C names, called by generated code (jit/llvm/scalar_codegen.cpp).
extern "C" {
std::int32_t aj_jit_ipow_i32(std::int32_t a, std::int32_t b) { return aj::sem::int_pow(a, b); }
std::int64_t aj_jit_ipow_i64(std::int64_t a, std::int64_t b) { return aj::sem::int_pow(a, b); }
double aj_jit_generate_f64(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::sem::generate_value<double>(static_cast<aj::Op>(op), s[0].f, s[1].f, s[2].i, s[3].i, i);
}
float aj_jit_generate_f32(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::sem::generate_value<float>(static_cast<aj::Op>(op), s[0].f, s[1].f, s[2].i, s[3].i, i);
}
std::int64_t aj_jit_generate_i64(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::sem::generate_value<std::int64_t>(static_cast<aj::Op>(op), s[0].f, s[1].f, s[2].i, s[3].i, i);
}
std::int32_t aj_jit_generate_i32(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::sem::generate_value<std::int32_t>(static_cast<aj::Op>(op), s[0].f, s[1].f, s[2].i, s[3].i, i);
}
std::int32_t aj_jit_generate_bool(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::sem::generate_value<bool>(static_cast<aj::Op>(op), s[0].f, s[1].f, s[2].i, s[3].i, i) ? 1 : 0;
}
}

namespace aj::jit {

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> syms = [] {
    std::vector<RuntimeSymbol> v;
#define SYM(f) v.push_back({#f, reinterpret_cast<void*>(&f)});
#define SLEEF_ALL(n, u)                                                                   \
  SYM(Sleef_##n##_##u) SYM(Sleef_##n##f_##u) SYM(Sleef_##n##d2_##u) SYM(Sleef_##n##d4_##u) \
  SYM(Sleef_##n##d8_##u) SYM(Sleef_##n##f4_##u) SYM(Sleef_##n##f8_##u) SYM(Sleef_##n##f16_##u)
    AJ_SLEEF_FUNCS(SLEEF_ALL)
    SYM(aj_jit_ipow_i32) SYM(aj_jit_ipow_i64) SYM(aj_jit_generate_f64) SYM(aj_jit_generate_f32)
    SYM(aj_jit_generate_i64) SYM(aj_jit_generate_i32) SYM(aj_jit_generate_bool)
#undef SLEEF_ALL
#undef SYM
    return v;
  }();
  return syms;
}

// 3.5-ulp variants where SLEEF has them (sin, cos, tan, log, tanh: about
// twice as fast as 1.0 ulp); with the reference's correctly rounded libm the
// distance stays within the 4 ulp docs/semantics.md allows. erfc has only a
// 1.5-ulp variant.
const char* sleef_variant(const std::string& fn) {
#define AJ_VARIANT(n, u) if (fn == #n) return #u;
  AJ_SLEEF_FUNCS(AJ_VARIANT)
#undef AJ_VARIANT
  return "u10";
}

std::vector<VectorMapping> vector_math_mappings(bool avx2, bool avx512f) {
  std::vector<VectorMapping> m;
  for (const char* n : {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "pow", "erf", "erfc"}) {
    const std::string s = n, u = std::string("_") + sleef_variant(n);
    m.push_back({"Sleef_" + s + u, "Sleef_" + s + "d2" + u, 2});
    m.push_back({"Sleef_" + s + "f" + u, "Sleef_" + s + "f4" + u, 4});
    if (avx2) {
      m.push_back({"Sleef_" + s + u, "Sleef_" + s + "d4" + u, 4});
      m.push_back({"Sleef_" + s + "f" + u, "Sleef_" + s + "f8" + u, 8});
    }
    if (avx512f) {
      m.push_back({"Sleef_" + s + u, "Sleef_" + s + "d8" + u, 8});
      m.push_back({"Sleef_" + s + "f" + u, "Sleef_" + s + "f16" + u, 16});
    }
  }
  return m;
}

}  // namespace aj::jit

#include "jit/llvm/runtime_symbols.hpp"

#include <cstdint>

#include "backends/cpu/generate.hpp"
#include "backends/reference/scalar_ops.hpp"

// SLEEF's functions, declared only to take their addresses: sleef.h hides the
// AVX/AVX-512 ones unless this file itself is compiled for those ISAs, and
// generated code (not this file) is what calls them, with their real types.
#define AJ_SLEEF_FUNCS(X) X(exp) X(log) X(log1p) X(expm1) X(sin) X(cos) X(tan) X(tanh) X(pow)
#define AJ_DECLARE(n)                                                                          \
  void Sleef_##n##_u10(); void Sleef_##n##f_u10(); void Sleef_##n##d2_u10();                \
  void Sleef_##n##d4_u10(); void Sleef_##n##d8_u10(); void Sleef_##n##f4_u10();             \
  void Sleef_##n##f8_u10(); void Sleef_##n##f16_u10();
extern "C" {
AJ_SLEEF_FUNCS(AJ_DECLARE)
}
#undef AJ_DECLARE

// Helpers with C names, called by generated code (jit/llvm/scalar_codegen.cpp).
extern "C" {
std::int32_t aj_jit_ipow_i32(std::int32_t a, std::int32_t b) { return aj::ref::int_pow(a, b); }
std::int64_t aj_jit_ipow_i64(std::int64_t a, std::int64_t b) { return aj::ref::int_pow(a, b); }
double aj_jit_generate_f64(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::cpu::generate_value<double>(static_cast<aj::Op>(op), s, i);
}
float aj_jit_generate_f32(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::cpu::generate_value<float>(static_cast<aj::Op>(op), s, i);
}
std::int64_t aj_jit_generate_i64(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::cpu::generate_value<std::int64_t>(static_cast<aj::Op>(op), s, i);
}
std::int32_t aj_jit_generate_i32(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::cpu::generate_value<std::int32_t>(static_cast<aj::Op>(op), s, i);
}
std::int32_t aj_jit_generate_bool(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  return aj::cpu::generate_value<bool>(static_cast<aj::Op>(op), s, i) ? 1 : 0;
}
}

namespace aj::jit {

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> syms = [] {
    std::vector<RuntimeSymbol> v;
#define SYM(f) v.push_back({#f, reinterpret_cast<void*>(&f)});
#define SLEEF_ALL(n)                                                                        \
  SYM(Sleef_##n##_u10) SYM(Sleef_##n##f_u10) SYM(Sleef_##n##d2_u10) SYM(Sleef_##n##d4_u10) \
  SYM(Sleef_##n##d8_u10) SYM(Sleef_##n##f4_u10) SYM(Sleef_##n##f8_u10) SYM(Sleef_##n##f16_u10)
    AJ_SLEEF_FUNCS(SLEEF_ALL)
    SYM(aj_jit_ipow_i32) SYM(aj_jit_ipow_i64) SYM(aj_jit_generate_f64) SYM(aj_jit_generate_f32)
    SYM(aj_jit_generate_i64) SYM(aj_jit_generate_i32) SYM(aj_jit_generate_bool)
#undef SLEEF_ALL
#undef SYM
    return v;
  }();
  return syms;
}

std::vector<VectorMapping> vector_math_mappings(bool avx2, bool avx512f) {
  std::vector<VectorMapping> m;
  for (const char* n : {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "pow"}) {
    const std::string s = n;
    m.push_back({"Sleef_" + s + "_u10", "Sleef_" + s + "d2_u10", 2});
    m.push_back({"Sleef_" + s + "f_u10", "Sleef_" + s + "f4_u10", 4});
    if (avx2) {
      m.push_back({"Sleef_" + s + "_u10", "Sleef_" + s + "d4_u10", 4});
      m.push_back({"Sleef_" + s + "f_u10", "Sleef_" + s + "f8_u10", 8});
    }
    if (avx512f) {
      m.push_back({"Sleef_" + s + "_u10", "Sleef_" + s + "d8_u10", 8});
      m.push_back({"Sleef_" + s + "f_u10", "Sleef_" + s + "f16_u10", 16});
    }
  }
  return m;
}

}  // namespace aj::jit

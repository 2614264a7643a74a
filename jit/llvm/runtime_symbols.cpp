#include "jit/llvm/runtime_symbols.hpp"

#include <cstdint>
#include <type_traits>

#include "base/semantics.hpp"
#include "graph/kernel.hpp"

// SLEEF's functions of base/semantics.hpp's AJ_MATH_FUNCS, declared only to
// take their addresses: sleef.h hides the AVX/AVX-512 ones unless this file
// itself is compiled for those ISAs, and generated code (not this file) is
// what calls them, with their real types. The accuracy column picks the
// variant (sleef_variant).
#define AJ_DECLARE(n, arity, u)                                                            \
  void Sleef_##n##_##u(); void Sleef_##n##f_##u(); void Sleef_##n##d2_##u();              \
  void Sleef_##n##d4_##u(); void Sleef_##n##d8_##u(); void Sleef_##n##f4_##u();           \
  void Sleef_##n##f8_##u(); void Sleef_##n##f16_##u();
extern "C" {
AJ_MATH_FUNCS(AJ_DECLARE)
}
#undef AJ_DECLARE

// Helpers with C names, called by generated code (jit/llvm/scalar_codegen.cpp):
// a generator's value of each dtype (bool as i32, halves as their bits).
namespace {
template <class T> auto generated_value(std::int32_t op, const aj::KScalar* s, std::int64_t i) {
  const T v = aj::sem::generate_value<T>(static_cast<aj::Op>(op), s[0].f, s[1].f, s[2].i, s[3].i, i);
  if constexpr (std::is_same_v<T, bool>) return static_cast<std::int32_t>(v);
  else if constexpr (aj::sem::is_half_type<T>) return v.bits;
  else return v;
}
}  // namespace
extern "C" {
#define AJ_GENERATE(e, name, bytes, cpp, cuda, cat, rank, fmt) \
  auto aj_jit_generate_##e(std::int32_t op, const aj::KScalar* s, std::int64_t i) { return generated_value<cpp>(op, s, i); }
AJ_DTYPES(AJ_GENERATE)
#undef AJ_GENERATE
}

namespace aj::jit {

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> syms = [] {
    std::vector<RuntimeSymbol> v;
#define SYM(f) v.push_back({#f, reinterpret_cast<void*>(&f)});
#define SLEEF_ALL(n, arity, u)                                                                 \
  SYM(Sleef_##n##_##u) SYM(Sleef_##n##f_##u) SYM(Sleef_##n##d2_##u) SYM(Sleef_##n##d4_##u) \
  SYM(Sleef_##n##d8_##u) SYM(Sleef_##n##f4_##u) SYM(Sleef_##n##f8_##u) SYM(Sleef_##n##f16_##u)
    AJ_MATH_FUNCS(SLEEF_ALL)
#define GENERATOR(e, name, bytes, cpp, cuda, cat, rank, fmt) SYM(aj_jit_generate_##e)
    AJ_DTYPES(GENERATOR)
#undef GENERATOR
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
#define AJ_VARIANT(n, arity, u) if (fn == #n) return #u;
  AJ_MATH_FUNCS(AJ_VARIANT)
#undef AJ_VARIANT
  return "u10";
}

std::vector<VectorMapping> vector_math_mappings(bool avx2, bool avx512f) {
  std::vector<VectorMapping> m;
  struct Fn {
    const char* name;
    unsigned arity;
  };
#define AJ_FN(n, arity, u) Fn{#n, arity},
  for (const Fn& fn : {AJ_MATH_FUNCS(AJ_FN)}) {
#undef AJ_FN
    const std::string s = fn.name, u = std::string("_") + sleef_variant(fn.name);
    const unsigned arity = fn.arity;
    m.push_back({"Sleef_" + s + u, "Sleef_" + s + "d2" + u, 2, arity});
    m.push_back({"Sleef_" + s + "f" + u, "Sleef_" + s + "f4" + u, 4, arity});
    if (avx2) {
      m.push_back({"Sleef_" + s + u, "Sleef_" + s + "d4" + u, 4, arity});
      m.push_back({"Sleef_" + s + "f" + u, "Sleef_" + s + "f8" + u, 8, arity});
    }
    if (avx512f) {
      m.push_back({"Sleef_" + s + u, "Sleef_" + s + "d8" + u, 8, arity});
      m.push_back({"Sleef_" + s + "f" + u, "Sleef_" + s + "f16" + u, 16, arity});
    }
  }
  return m;
}

}  // namespace aj::jit

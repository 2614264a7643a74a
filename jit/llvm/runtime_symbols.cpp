#include "jit/llvm/runtime_symbols.hpp"

#include <cstdint>
#include <type_traits>

#include "base/semantics.hpp"
#include "graph/kernel.hpp"

// SLEEF's functions of base/semantics.hpp's AJ_MATH_FUNCS (the library
// functions of arrayjit/ops.def), declared only to take their addresses:
// sleef.h hides the AVX/AVX-512 ones unless this file itself is compiled for
// those ISAs, and generated code (not this file) is what calls them, with
// their real types. The accuracy column picks the variant (sleef_variant).
//
// Generated code calls SLEEF's plain names (Sleef_tanhf_u35 for one lane,
// Sleef_tanhf16_u35 for 16), but they are bound to one of SLEEF's two
// deterministic families, whose members give the same bits at every width:
// "finz" (with FMA) where the CPU has AVX2 and FMA, "cinz" (without) where
// it does not. SLEEF's plain scalar functions are of neither (no FMA), so a
// loop's scalar tail once gave other bits than its vector body for the same
// input: tanh, sin and cos of one value depended on where in an array it
// was, and a compiled call's result on how its kernels were blocked.
//
// A family's functions at every width (1 lane, 128, 256 and 512 bits), as
// SLEEF suffixes them; AJ_SLEEF_WITH passes a family to a macro.
#define AJ_SLEEF_FINZ finz, purecfma, avx2128, avx2, avx512f
#define AJ_SLEEF_CINZ cinz, purec, sse2, avx, avx512fnofma
#define AJ_SLEEF_WITH(m, ...) m(__VA_ARGS__)
#define AJ_DECLARE_FAMILY(n, u, fam, w1, w128, w256, w512)                                   \
  void Sleef_##fam##_##n##d1_##u##w1(); void Sleef_##fam##_##n##f1_##u##w1();                \
  void Sleef_##fam##_##n##d2_##u##w128(); void Sleef_##fam##_##n##f4_##u##w128();            \
  void Sleef_##fam##_##n##d4_##u##w256(); void Sleef_##fam##_##n##f8_##u##w256();            \
  void Sleef_##fam##_##n##d8_##u##w512(); void Sleef_##fam##_##n##f16_##u##w512();
#define AJ_DECLARE(n, arity, u) \
  AJ_SLEEF_WITH(AJ_DECLARE_FAMILY, n, u, AJ_SLEEF_FINZ) AJ_SLEEF_WITH(AJ_DECLARE_FAMILY, n, u, AJ_SLEEF_CINZ)
extern "C" {
AJ_MATH_FUNCS(AJ_DECLARE)
}
#undef AJ_DECLARE
#undef AJ_DECLARE_FAMILY

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
#define AJ_GENERATE(e, name, bytes, cpp, cuda, kind, digits, fmt) \
  auto aj_jit_generate_##e(std::int32_t op, const aj::KScalar* s, std::int64_t i) { return generated_value<cpp>(op, s, i); }
AJ_DTYPES(AJ_GENERATE)
#undef AJ_GENERATE
}

namespace aj::jit {

const std::vector<RuntimeSymbol>& runtime_symbols(bool fma) {
  static const auto make = [](bool with_fma) {
    std::vector<RuntimeSymbol> v;
#define SYM(name, f) v.push_back({name, reinterpret_cast<void*>(&f)});
// SLEEF's plain name of each width bound to the family's function.
#define BIND(n, u, fam, w1, w128, w256, w512)                                                                  \
  SYM("Sleef_" #n "_" #u, Sleef_##fam##_##n##d1_##u##w1) SYM("Sleef_" #n "f_" #u, Sleef_##fam##_##n##f1_##u##w1)         \
  SYM("Sleef_" #n "d2_" #u, Sleef_##fam##_##n##d2_##u##w128) SYM("Sleef_" #n "f4_" #u, Sleef_##fam##_##n##f4_##u##w128) \
  SYM("Sleef_" #n "d4_" #u, Sleef_##fam##_##n##d4_##u##w256) SYM("Sleef_" #n "f8_" #u, Sleef_##fam##_##n##f8_##u##w256) \
  SYM("Sleef_" #n "d8_" #u, Sleef_##fam##_##n##d8_##u##w512) SYM("Sleef_" #n "f16_" #u, Sleef_##fam##_##n##f16_##u##w512)
#define SLEEF_ALL(n, arity, u)                             \
  if (with_fma) {                                          \
    AJ_SLEEF_WITH(BIND, n, u, AJ_SLEEF_FINZ)               \
  } else {                                                 \
    AJ_SLEEF_WITH(BIND, n, u, AJ_SLEEF_CINZ)               \
  }
    AJ_MATH_FUNCS(SLEEF_ALL)
#define GENERATOR(e, name, bytes, cpp, cuda, kind, digits, fmt) SYM("aj_jit_generate_" #e, aj_jit_generate_##e)
    AJ_DTYPES(GENERATOR)
#undef GENERATOR
#undef SLEEF_ALL
#undef BIND
#undef SYM
    return v;
  };
  static const std::vector<RuntimeSymbol> with = make(true), without = make(false);
  return fma ? with : without;
}

// A library function's variant, its accuracy column in arrayjit/ops.def:
// 3.5 ulp where SLEEF has one (sin, cos, tan, log, tanh: about twice as fast
// as 1.0 ulp); with the reference's correctly rounded libm the distance stays
// within the 4 ulp docs/semantics.md allows. erfc has only a 1.5-ulp variant.
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

// What generated host code may call, besides libc/libm: SLEEF's math
// functions (scalar and vector) and a few runtime helpers. Their addresses are
// registered with ORC as absolute symbols (so the library links them and a
// disk-cached object resolves them in a new process), and the scalar -> vector
// mappings go to the loop vectorizer through TargetLibraryInfo.
#pragma once

#include <string>
#include <vector>

namespace aj::jit {

struct RuntimeSymbol {
  const char* name;
  void* address;
};

// Every symbol generated code may reference by name. `fma`: the CPU has AVX2
// and FMA, so SLEEF's names are bound to its deterministic family with FMA
// (else to the one without): every width of a function gives the same bits.
const std::vector<RuntimeSymbol>& runtime_symbols(bool fma);

// Scalar -> vector function mappings the host can run: SLEEF's vectors of 2/4
// lanes (f64) and 4/8 (f32) for SSE/AVX2, 8 and 16 with AVX-512F.
struct VectorMapping {
  std::string scalar, vector;
  unsigned lanes;
  unsigned arity;  // 1 or 2 (pow)
};
std::vector<VectorMapping> vector_math_mappings(bool avx2, bool avx512f);

// "u10" or "u35": which SLEEF accuracy variant of `fn` ("sin") is used.
const char* sleef_variant(const std::string& fn);

}  // namespace aj::jit

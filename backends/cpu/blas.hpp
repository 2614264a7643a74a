// The BLAS the host matmul calls, with kernels for the CPU's level
// (base/cpu_level.hpp), chosen once:
//
// OpenBLAS (Debian's is a DYNAMIC_ARCH build) picks its kernels by the CPU's
// model number, so a CPU newer than the library gets its generic SSE3 core
// ("Prescott"): Debian 12's 0.3.21 on Sapphire Rapids runs a 1024² sgemm 4-6x
// slower than it can. The process's OpenBLAS (the one libarrayjit links,
// which NumPy in the same process shares) is used when its core is made for
// the level; otherwise arrayjit loads a private copy of the same library file
// into a link namespace of its own (dlmopen; where the process has no static
// TLS left for the namespace's C library, as Python with NumPy, a copy of the
// file in memory dlopen'ed with RTLD_DEEPBIND) with OPENBLAS_CORETYPE naming a
// core made for the level (SkylakeX or Cooperlake for avx512, Haswell or Zen
// for avx2, Sandybridge for avx, Prescott for baseline). The process's copy
// is not touched: its core, its thread count and the environment are as the
// program left them. A library that cannot be loaded so, or that is not a
// DYNAMIC_ARCH build (the core it reports is not the one named), is not used:
// the process's copy is, and description() says why.
//
// OpenBLAS cores and the level each is made for (unknown names, newer than
// this table, are taken to be made for the CPU that OpenBLAS chose them for).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "base/cpu_level.hpp"

namespace aj::cpu {

// The LAPACK routines of the same OpenBLAS file (Fortran ABI: arguments by
// pointer, column-major, each character argument's length passed last), and
// its triangular solve, for the host linalg (backends/cpu/host_linalg.cpp).
// One table per element type; null where the file lacks one.
template <class T>
struct LapackFns {
  void (*potrf)(const char* uplo, const int* n, T* a, const int* lda, int* info, std::size_t) = nullptr;
  void (*getrf)(const int* m, const int* n, T* a, const int* lda, int* ipiv, int* info) = nullptr;
  void (*getrs)(const char* trans, const int* n, const int* nrhs, const T* a, const int* lda, const int* ipiv, T* b,
                const int* ldb, int* info, std::size_t) = nullptr;
  void (*geqrf)(const int* m, const int* n, T* a, const int* lda, T* tau, T* work, const int* lwork,
                int* info) = nullptr;
  void (*orgqr)(const int* m, const int* n, const int* k, T* a, const int* lda, const T* tau, T* work,
                const int* lwork, int* info) = nullptr;
  void (*gesdd)(const char* jobz, const int* m, const int* n, T* a, const int* lda, T* s, T* u, const int* ldu, T* vt,
                const int* ldvt, T* work, const int* lwork, int* iwork, int* info, std::size_t) = nullptr;
  void (*syevd)(const char* jobz, const char* uplo, const int* n, T* a, const int* lda, T* w, T* work,
                const int* lwork, int* iwork, const int* liwork, int* info, std::size_t, std::size_t) = nullptr;
  // cblas_?trsm(order, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)
  void (*trsm)(int, int, int, int, int, int, int, T, const T*, int, T*, int) = nullptr;
};

struct Blas {
  void (*sgemm)(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc) = nullptr;
  void (*dgemm)(int order, int transa, int transb, int m, int n, int k, double alpha, const double* a, int lda,
                const double* b, int ldb, double beta, double* c, int ldc) = nullptr;
  void (*set_num_threads)(int) = nullptr;
  int (*get_num_threads)() = nullptr;
  LapackFns<float> lapack_f32;
  LapackFns<double> lapack_f64;
  std::string core;         // openblas_get_corename()
  std::string config;       // openblas_get_config()
  bool private_copy = false;
  std::string description;  // "OpenBLAS 0.3.21 ... : core Cooperlake (the process's copy), level avx512"
};

// The BLAS the matmul uses (chosen at the first call; throws what level()
// throws).
const Blas& blas();

// The level an OpenBLAS core is made for; nullopt for a name not known here.
std::optional<IsaLevel> openblas_core_level(const std::string& core);
// The core arrayjit names for a level on this CPU ("Cooperlake" on AVX-512
// CPUs with BF16, "Zen" on AMD AVX2 CPUs, ...).
const char* openblas_core_for(IsaLevel level);

// A private copy of the process's OpenBLAS with `core` named (for tests and
// for blas()); nullopt with *why set when it cannot be loaded. One copy per
// core (and way) for the process's life: later calls return it. The way: in
// a link namespace of its own (dlmopen), falling back to a copy of the file
// in memory loaded with RTLD_DEEPBIND when the namespace cannot be made (a
// process whose static TLS is used up: Python with NumPy); tests ask for the
// in-memory copy directly.
enum class PrivateLoad { any, in_memory };
std::optional<Blas> load_private_openblas(const char* core, std::string* why, PrivateLoad how = PrivateLoad::any);

// The process's own OpenBLAS, as libarrayjit links it.
Blas process_openblas();

}  // namespace aj::cpu

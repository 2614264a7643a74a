// Eigen's GEMM built for one instruction-set level, a peer of bench_matmul
// on a CPU of that level. CMakeLists.txt compiles this file once per level
// (-march=haswell for avx2, -march=x86-64 for baseline) into a shared library
// of its own with hidden visibility: linked into one executable, Eigen's
// template instances from TUs built for different levels would be merged into
// one copy (the same mangled names), and the AVX2 peer might run baseline code.
#include <Eigen/Dense>

#ifndef AJ_EIGEN_LEVEL_FN
#error "define AJ_EIGEN_LEVEL_FN (the exported function's name prefix)"
#endif
#define AJ_CAT2(a, b) a##b
#define AJ_CAT(a, b) AJ_CAT2(a, b)

namespace {
template <class T>
void gemm(int n, const T* a, const T* b, T* c, int threads) {
  using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::setNbThreads(threads);
  Eigen::Map<const M> ea(a, n, n), eb(b, n, n);
  Eigen::Map<M> ec(c, n, n);
  ec.noalias() = ea * eb;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) void AJ_CAT(AJ_EIGEN_LEVEL_FN, _f32)(int n, const float* a,
                                                                                     const float* b, float* c,
                                                                                     int threads) {
  gemm(n, a, b, c, threads);
}
extern "C" __attribute__((visibility("default"))) void AJ_CAT(AJ_EIGEN_LEVEL_FN, _f64)(int n, const double* a,
                                                                                     const double* b, double* c,
                                                                                     int threads) {
  gemm(n, a, b, c, threads);
}

// The CUDA C prelude every generated kernel starts with: the scalar semantics
// of base/semantics.hpp, written once more for the device (until it is
// generated from that header at build time).
// Each helper names the reference function it mirrors; keep them in step.
// Compiled with --fmad=false and IEEE division/sqrt, so + - * / sqrt and the
// casts give the same bits as the host.
#pragma once

namespace aj::cuda {

inline constexpr const char* kPrelude = R"CUDA(
typedef long long i64;
typedef unsigned long long u64;

// Type facts the helpers dispatch on (no <type_traits> under NVRTC).
template <class T> struct aj_t;
template <> struct aj_t<bool> { static const bool fp = false, b = true; };
template <> struct aj_t<int> {
  static const bool fp = false, b = false;
  typedef unsigned U;
  static __device__ __forceinline__ int lo() { return -2147483647 - 1; }
  static __device__ __forceinline__ int hi() { return 2147483647; }
};
template <> struct aj_t<i64> {
  static const bool fp = false, b = false;
  typedef u64 U;
  static __device__ __forceinline__ i64 lo() { return -9223372036854775807LL - 1; }
  static __device__ __forceinline__ i64 hi() { return 9223372036854775807LL; }
};
template <> struct aj_t<float> { static const bool fp = true, b = false; };
template <> struct aj_t<double> { static const bool fp = true, b = false; };

// sem::convert: floats to integers truncate toward zero and saturate, NaN -> 0;
// anything to bool is != 0 (NaN is true); integers wrap.
template <class To, class From> __device__ __forceinline__ To aj_cvt(From v) {
  if constexpr (aj_t<To>::b) {
    return v != From(0);
  } else if constexpr (aj_t<From>::fp && !aj_t<To>::fp) {
    if (isnan(v)) return To(0);
    const double lo = (double)aj_t<To>::lo();
    if ((double)v < lo) return aj_t<To>::lo();
    if ((double)v >= -lo) return aj_t<To>::hi();
    return (To)v;
  } else {
    return (To)v;
  }
}

// sem::wrap_*: integer arithmetic wraps (computed unsigned).
template <class T> __device__ __forceinline__ T aj_wadd(T a, T b) { typedef typename aj_t<T>::U U; return (T)((U)a + (U)b); }
template <class T> __device__ __forceinline__ T aj_wsub(T a, T b) { typedef typename aj_t<T>::U U; return (T)((U)a - (U)b); }
template <class T> __device__ __forceinline__ T aj_wmul(T a, T b) { typedef typename aj_t<T>::U U; return (T)((U)a * (U)b); }
template <class T> __device__ __forceinline__ T aj_wneg(T a) { typedef typename aj_t<T>::U U; return (T)(U(0) - (U)a); }

// sem::int_floordiv: x / 0 = 0; MIN / -1 = MIN.
template <class T> __device__ __forceinline__ T aj_floordiv(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return aj_wneg(a);
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
// sem::int_mod: sign of the divisor; x % 0 = 0.
template <class T> __device__ __forceinline__ T aj_imod(T a, T b) {
  if (b == 0 || b == -1) return 0;
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// sem::float_mod
template <class T> __device__ __forceinline__ T aj_fmod(T a, T b) {
  T r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  if (r == 0) r = copysign(T(0), b);
  return r;
}
// sem::int_pow
template <class T> __device__ __forceinline__ T aj_ipow(T a, T b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b % 2 == 0) ? 1 : -1;
    return 0;
  }
  T r = 1;
  while (b > 0) {
    if (b & 1) r = aj_wmul(r, a);
    a = aj_wmul(a, a);
    b >>= 1;
  }
  return r;
}
// sem::fmax_nan / fmin_nan: NaN propagates, max(-0, +0) = +0.
template <class T> __device__ __forceinline__ T aj_fmax(T a, T b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class T> __device__ __forceinline__ T aj_fmin(T a, T b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
template <class T> __device__ __forceinline__ T aj_fsign(T x) { return x > 0 ? T(1) : x < 0 ? T(-1) : x; }

// sem::splitmix64, uniform01, normal01: counter-based random numbers.
__device__ __forceinline__ u64 aj_splitmix64(u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ double aj_uniform01(u64 key, u64 index, u64 stream) {
  u64 h = aj_splitmix64(key ^ aj_splitmix64(index * 2 + stream));
  return (double)(h >> 11) * 0x1.0p-53;
}
// sem::random_bits
__device__ __forceinline__ i64 aj_rand_bits(u64 key, u64 index) {
  return (i64)aj_splitmix64(key ^ aj_splitmix64(index * 2));
}
__device__ __forceinline__ double aj_normal01(u64 key, u64 index) {
  double u1 = 1.0 - aj_uniform01(key, index, 0);
  double u2 = aj_uniform01(key, index, 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// The generators of cpu::generate (kernel_interpreter.cpp), at flat index i.
template <class T> __device__ __forceinline__ T aj_iota(double f0, double f1, i64 i) {
  const bool integral = floor(f0) == f0 && floor(f1) == f1 && fabs(f0) < 9e15 && fabs(f1) < 9e15;
  if (!aj_t<T>::fp && integral) return aj_cvt<T>(aj_wadd((i64)f0, aj_wmul(i, (i64)f1)));
  return aj_cvt<T>(f0 + (double)i * f1);
}
template <class T> __device__ __forceinline__ T aj_linspace(double f0, double f1, i64 total, i64 i) {
  const double step = total > 1 ? (f1 - f0) / (double)(total - 1) : 0.0;
  return aj_cvt<T>((i == total - 1 && total > 1) ? f1 : f0 + (double)i * step);
}
template <class T> __device__ __forceinline__ T aj_eye(i64 k, i64 cols, i64 i) {
  return aj_cvt<T>((i % cols) - (i / cols) == k);
}
template <class T> __device__ __forceinline__ T aj_rand_uniform(double f0, double f1, i64 key, i64 i) {
  T v = (T)(f0 + (f1 - f0) * aj_uniform01((u64)key, (u64)i, 0));
  if (v >= (T)f1 && f1 > f0) v = nextafter((T)f1, (T)f0);
  return v;
}
template <class T> __device__ __forceinline__ T aj_rand_normal(double f0, double f1, i64 key, i64 i) {
  return (T)(f0 + f1 * aj_normal01((u64)key, (u64)i));
}

// Warp shuffles of every accumulator type (bool travels as int).
template <class T> __device__ __forceinline__ T aj_shfl_down(T v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ bool aj_shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }

// A 16-byte (or narrower) vector of N elements for wide loads and stores.
template <class T, int N> struct alignas(sizeof(T) * N) aj_vec { T v[N]; };
)CUDA";

}  // namespace aj::cuda

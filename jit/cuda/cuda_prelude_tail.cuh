
// ---- jit/cuda/cuda_prelude_tail.cuh: what the kernel skeletons need beside aj::sem ----
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned char u8;
typedef signed char i8;
typedef short i16;
typedef unsigned short u16;
typedef unsigned int u32;

// Warp shuffles of every accumulator type (bool travels as int).
template <class T> __device__ __forceinline__ T aj_shfl_down(T v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ bool aj_shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }

// A 16-byte (or narrower) vector of N elements for wide loads and stores.
template <class T, int N> struct alignas(sizeof(T) * N) aj_vec { T v[N]; };

// Half dtypes: stored as CUDA's __half / __nv_bfloat16, computed as aj::f16 /
// aj::bf16 (their bits; arithmetic happens in f32 after a cast). A kernel
// with half streams defines AJ_HALF_STORAGE and includes cuda_fp16.h and
// cuda_bf16.h before this prelude (cuda_source.cpp: kHalfHeaders).
#ifdef AJ_HALF_STORAGE
__device__ __forceinline__ aj::f16 aj_ld(__half h) { return aj::f16::from_bits(__half_as_ushort(h)); }
__device__ __forceinline__ aj::bf16 aj_ld(__nv_bfloat16 h) { return aj::bf16::from_bits(__bfloat16_as_ushort(h)); }
__device__ __forceinline__ void aj_st(__half* p, aj::f16 v) { *p = __ushort_as_half(v.bits); }
__device__ __forceinline__ void aj_st(__nv_bfloat16* p, aj::bf16 v) { *p = __ushort_as_bfloat16(v.bits); }
#endif
template <class T> __device__ __forceinline__ T aj_ld(T v) { return v; }
template <class T> __device__ __forceinline__ void aj_st(T* p, T v) { *p = v; }

// x / s by a value s fixed for the whole kernel (a scalar, hoisted): 1/s
// when s is a normal power of two, where x * (1/s) is x / s bit for bit (both
// the exact x * 2^-k rounded once; 1/s is exact, normal or subnormal), else 0
// and the kernel divides. An IEEE division is a subroutine; a product is one
// instruction (the chain's x*x/2 on the H200).
__device__ __forceinline__ float aj_exact_recip(float s) {
  const unsigned b = aj::half_detail::bits_of(s), e = (b >> 23) & 0xffu;
  return e != 0 && e != 0xffu && (b & 0x7fffffu) == 0 ? 1.0f / s : 0.0f;
}
__device__ __forceinline__ double aj_exact_recip(double s) {
  const u64 b = aj::half_detail::bits_of(s), e = (b >> 52) & 0x7ffu;
  return e != 0 && e != 0x7ffu && (b & 0xfffffffffffffull) == 0 ? 1.0 / s : 0.0;
}

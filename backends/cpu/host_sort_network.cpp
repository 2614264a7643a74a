#include "backends/cpu/host_sort_network.hpp"

#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "arrayjit/error.hpp"
#include "backends/cpu/isa.hpp"

#if AJ_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 headers start some intrinsics from an "undefined"
// register (_mm512_undefined_epi32), which its own -Wmaybe-uninitialized
// reports at every use: not a fault of this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace aj::cpu {

// The bitonic network (Batcher): for each run length k = 2, 4, ..., size,
// runs of k/2 sorted alternately up and down are merged into runs of k,
// again alternating (the run at element t goes down when t & k is set), by
// compare-exchanges at distances j = k/2, k/4, ..., 1: element t (bit j of t
// clear) and t + j keep their minimum at t going up, their maximum going
// down. Distances of a register or more pair whole registers (the direction
// is one for all lanes: k > j >= lanes, t a multiple of the lanes); shorter
// ones pair lanes of one register, each lane with lane ^ j through a permute,
// the direction per lane. Those are done in one pass per k, each register
// loaded once; for k up to the lanes, all of them in one pass.

#if AJ_ISA_X86

namespace {

// The network's operations on a register of E (4 or 8 bytes): minimum and
// maximum in E's own order (unsigned, signed or IEEE; the callers send no
// NaN), a lane permute, masks of lanes.
template <class E>
AJ_TARGET_AVX512 [[gnu::always_inline]] inline __m512i vmin(__m512i a, __m512i b) {
  if constexpr (std::is_same_v<E, float>) return _mm512_castps_si512(_mm512_min_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  else if constexpr (std::is_same_v<E, double>) return _mm512_castpd_si512(_mm512_min_pd(_mm512_castsi512_pd(a), _mm512_castsi512_pd(b)));
  else if constexpr (std::is_same_v<E, std::int32_t>) return _mm512_min_epi32(a, b);
  else if constexpr (std::is_same_v<E, std::uint32_t>) return _mm512_min_epu32(a, b);
  else if constexpr (std::is_same_v<E, std::int64_t>) return _mm512_min_epi64(a, b);
  else return _mm512_min_epu64(a, b);
}
template <class E>
AJ_TARGET_AVX512 [[gnu::always_inline]] inline __m512i vmax(__m512i a, __m512i b) {
  if constexpr (std::is_same_v<E, float>) return _mm512_castps_si512(_mm512_max_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  else if constexpr (std::is_same_v<E, double>) return _mm512_castpd_si512(_mm512_max_pd(_mm512_castsi512_pd(a), _mm512_castsi512_pd(b)));
  else if constexpr (std::is_same_v<E, std::int32_t>) return _mm512_max_epi32(a, b);
  else if constexpr (std::is_same_v<E, std::uint32_t>) return _mm512_max_epu32(a, b);
  else if constexpr (std::is_same_v<E, std::int64_t>) return _mm512_max_epi64(a, b);
  else return _mm512_max_epu64(a, b);
}

// One lane step at distance j: each lane meets lane ^ j; `down` marks the
// lanes whose run goes down (a mask of 16 or 8 lanes in 32 bits).
template <class E>
AJ_TARGET_AVX512 [[gnu::always_inline]] inline __m512i lane_step(__m512i x, __m512i lane, std::size_t j,
                                                                std::uint32_t down) {
  if constexpr (sizeof(E) == 4) {
    const __m512i jv = _mm512_set1_epi32(static_cast<int>(j));
    const __m512i partner = _mm512_permutexvar_epi32(_mm512_xor_si512(lane, jv), x);
    const __mmask16 upper = _mm512_test_epi32_mask(lane, jv);  // bit j set: the pair's second
    return _mm512_mask_blend_epi32(static_cast<__mmask16>(upper ^ down), vmin<E>(x, partner), vmax<E>(x, partner));
  } else {
    const __m512i jv = _mm512_set1_epi64(static_cast<long long>(j));
    const __m512i partner = _mm512_permutexvar_epi64(_mm512_xor_si512(lane, jv), x);
    const __mmask8 upper = _mm512_test_epi64_mask(lane, jv);
    return _mm512_mask_blend_epi64(static_cast<__mmask8>(upper ^ down), vmin<E>(x, partner), vmax<E>(x, partner));
  }
}

// The lanes of element t's register whose run of length k goes down.
template <class E>
AJ_TARGET_AVX512 [[gnu::always_inline]] inline std::uint32_t down_lanes(__m512i lane, std::size_t t, std::size_t k) {
  if constexpr (sizeof(E) == 4) {
    const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(t)), lane);
    return _mm512_test_epi32_mask(index, _mm512_set1_epi32(static_cast<int>(k)));
  } else {
    const __m512i index = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(t)), lane);
    return _mm512_test_epi64_mask(index, _mm512_set1_epi64(static_cast<long long>(k)));
  }
}

// The lane steps of U registers side by side (their chains of permutes and
// minimum/maximum are independent, so they overlap in the pipeline): every
// run length up to a register (k from 2, `all_k`), or the last k's
// distances below a register with one direction per register.
template <class E, int U>
AJ_TARGET_AVX512 [[gnu::always_inline]] inline void lane_pass(E* a, std::size_t size, __m512i lane, bool all_k,
                                                             std::size_t k) {
  constexpr std::size_t lanes = 64 / sizeof(E);
  constexpr std::uint32_t all = (1u << lanes) - 1;
  for (std::size_t t = 0; t < size; t += U * lanes) {
    __m512i x[U];
    std::uint32_t down[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) x[u] = _mm512_loadu_si512(a + t + u * lanes);
    if (all_k) {
#pragma GCC unroll 8
      for (std::size_t kk = 2; kk <= lanes; kk <<= 1) {
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) down[u] = down_lanes<E>(lane, t + u * lanes, kk);
#pragma GCC unroll 8
        for (std::size_t j = kk >> 1; j >= 1; j >>= 1) {
#pragma GCC unroll 4
          for (int u = 0; u < U; ++u) x[u] = lane_step<E>(x[u], lane, j, down[u]);
        }
      }
    } else {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) down[u] = ((t + u * lanes) & k) != 0 ? all : 0;
#pragma GCC unroll 8
      for (std::size_t j = lanes / 2; j >= 1; j >>= 1) {
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) x[u] = lane_step<E>(x[u], lane, j, down[u]);
      }
    }
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) _mm512_storeu_si512(a + t + u * lanes, x[u]);
  }
}

template <class E>
AJ_TARGET_AVX512 void bitonic(E* a, std::size_t size) {
  constexpr std::size_t lanes = 64 / sizeof(E);
  const __m512i lane = sizeof(E) == 4 ? _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
                                      : _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  // Four registers side by side where there are four (size is a power of
  // two of at least one register).
  auto lanes_within = [&](bool all_k, std::size_t k) AJ_TARGET_AVX512 {
    if (size >= 4 * lanes) lane_pass<E, 4>(a, size, lane, all_k, k);
    else if (size == 2 * lanes) lane_pass<E, 2>(a, size, lane, all_k, k);
    else lane_pass<E, 1>(a, size, lane, all_k, k);
  };
  // Runs up to a register long: every k in one pass over the registers.
  lanes_within(true, 0);
  for (std::size_t k = 2 * lanes; k <= size; k <<= 1) {
    // Distances of a register or more: whole registers meet.
    for (std::size_t j = k >> 1; j >= lanes; j >>= 1) {
      for (std::size_t i = 0; i < size; i += 2 * j) {
        const bool down = (i & k) != 0;
        for (std::size_t t = i; t < i + j; t += lanes) {
          const __m512i x = _mm512_loadu_si512(a + t), y = _mm512_loadu_si512(a + t + j);
          const __m512i lo = vmin<E>(x, y), hi = vmax<E>(x, y);
          _mm512_storeu_si512(a + t, down ? hi : lo);
          _mm512_storeu_si512(a + t + j, down ? lo : hi);
        }
      }
    }
    // The rest within each register, the direction one for all its lanes.
    lanes_within(false, k);
  }
}

// The lanes of v (all, or the first `m`) that hold -0.0 or a NaN: the sign
// bit alone, or a magnitude above infinity's.
template <class E>
AJ_TARGET_AVX512 [[gnu::always_inline]] inline std::uint32_t odd_lanes(__m512i v) {
  if constexpr (sizeof(E) == 4) {
    const __m512i sign = _mm512_set1_epi32(INT32_MIN), inf = _mm512_set1_epi32(0x7f800000);
    return _mm512_cmpeq_epi32_mask(v, sign) | _mm512_cmpgt_epu32_mask(_mm512_andnot_si512(sign, v), inf);
  } else {
    const __m512i sign = _mm512_set1_epi64(INT64_MIN), inf = _mm512_set1_epi64(0x7ff0000000000000);
    return _mm512_cmpeq_epi64_mask(v, sign) | _mm512_cmpgt_epu64_mask(_mm512_andnot_si512(sign, v), inf);
  }
}

// Copies a contiguous line into a, checking a float line for NaN and -0.0.
template <class E>
AJ_TARGET_AVX512 bool load_contiguous(const E* x, std::size_t n, E* a) {
  if constexpr (!std::is_floating_point_v<E>) {
    std::memcpy(a, x, n * sizeof(E));
    return true;
  } else {
    constexpr std::size_t lanes = 64 / sizeof(E);
    std::uint32_t odd = 0;
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
      const __m512i v = _mm512_loadu_si512(x + i);
      _mm512_storeu_si512(a + i, v);
      odd |= odd_lanes<E>(v);
    }
    if (i < n) {  // the tail, masked
      const std::uint32_t m = (1u << (n - i)) - 1;
      __m512i v;
      if constexpr (sizeof(E) == 4) {
        v = _mm512_maskz_loadu_epi32(static_cast<__mmask16>(m), x + i);
        _mm512_mask_storeu_epi32(a + i, static_cast<__mmask16>(m), v);
      } else {
        v = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(m), x + i);
        _mm512_mask_storeu_epi64(a + i, static_cast<__mmask8>(m), v);
      }
      odd |= m & odd_lanes<E>(v);
    }
    return odd == 0;
  }
}

}  // namespace

std::size_t network_lanes(std::size_t key_bytes) {
  if (isa_variant() < 2) return 0;
  return key_bytes == 4 ? 16 : key_bytes == 8 ? 8 : 0;
}

template <class E>
void network_sort(E* a, std::size_t size) {
  if (network_lanes(sizeof(E)) == 0) internal_error("network_sort: no sorting network at this CPU level");
  bitonic<E>(a, size);
}

template <class E>
bool network_load(const E* x, std::int64_t stride, std::size_t n, E* a, std::size_t size) {
  bool plain = true;
  if (stride == 1) {
    plain = load_contiguous<E>(x, n, a);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const E v = x[static_cast<std::int64_t>(i) * stride];
      if constexpr (std::is_floating_point_v<E>) plain &= !std::isnan(v) && !(v == 0 && std::signbit(v));
      a[i] = v;
    }
  }
  if (!plain) return false;
  E last = std::numeric_limits<E>::max();
  if constexpr (std::is_floating_point_v<E>) last = std::numeric_limits<E>::infinity();
  std::fill(a + n, a + size, last);
  return true;
}

#else  // no x86-64 vector variants (or under ThreadSanitizer): no network

std::size_t network_lanes(std::size_t) { return 0; }

template <class E>
void network_sort(E*, std::size_t) {
  internal_error("network_sort: no sorting network here");
}

template <class E>
bool network_load(const E*, std::int64_t, std::size_t, E*, std::size_t) {
  internal_error("network_load: no sorting network here");
}

#endif

template void network_sort(std::uint32_t*, std::size_t);
template void network_sort(std::int32_t*, std::size_t);
template void network_sort(float*, std::size_t);
template void network_sort(std::uint64_t*, std::size_t);
template void network_sort(std::int64_t*, std::size_t);
template void network_sort(double*, std::size_t);
template bool network_load(const std::uint32_t*, std::int64_t, std::size_t, std::uint32_t*, std::size_t);
template bool network_load(const std::int32_t*, std::int64_t, std::size_t, std::int32_t*, std::size_t);
template bool network_load(const float*, std::int64_t, std::size_t, float*, std::size_t);
template bool network_load(const std::uint64_t*, std::int64_t, std::size_t, std::uint64_t*, std::size_t);
template bool network_load(const std::int64_t*, std::int64_t, std::size_t, std::int64_t*, std::size_t);
template bool network_load(const double*, std::int64_t, std::size_t, double*, std::size_t);

std::size_t network_size(std::size_t n, std::size_t key_bytes) {
  const std::size_t lanes = network_lanes(key_bytes);
  return std::bit_ceil(n < lanes ? lanes : n);
}

}  // namespace aj::cpu

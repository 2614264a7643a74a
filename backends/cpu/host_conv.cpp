#include "backends/cpu/host_conv.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "backends/cpu/blas.hpp"
#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "arrayjit/error.hpp"

namespace aj::cpu {

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111;

void gemm(const Blas& lib, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  lib.sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
void gemm(const Blas& lib, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c,
          int ldc) {
  lib.dgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// The scratch block a tile's columns are gathered into: about this many
// bytes, so that it stays in the core's L2 while the gemm reads it.
constexpr std::int64_t kTileBytes = std::int64_t{256} << 10;

// The call's geometry with the spatial axes padded to three (leading
// extent-1 axes), in elements.
struct Geometry {
  std::int64_t N = 0, C = 0, O = 0, I = 0, groups = 1, og = 0;
  std::int64_t e[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::int64_t stride[3] = {1, 1, 1}, lo[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  std::int64_t xs_n = 0, xs_c = 0, xs[3] = {0, 0, 0}, x_off = 0;  // x's strides and offset
  std::int64_t taps = 1, K = 0, P = 1, tile = 1;

  explicit Geometry(const LibraryCall& c) {
    ConvGeometry geo;
    if (!geo.unpack(c.ints)) internal_error("host conv: a malformed geometry");
    const LibraryOperand &x = c.inputs[0], &w = c.inputs[1];
    const int d = static_cast<int>(geo.dims()), pad = 3 - d;
    N = x.shape[0], C = x.shape[1], O = w.shape[0], I = w.shape[1], groups = c.axis, og = O / groups;
    xs_n = x.strides[0], xs_c = x.strides[1], x_off = x.offset;
    for (int a = 0; a < d; ++a) {
      const auto i = static_cast<std::size_t>(a);
      const int s = a + pad;
      e[s] = x.shape[i + 2], k[s] = w.shape[i + 2], out[s] = c.shape[i + 2];
      stride[s] = geo.stride[i], lo[s] = geo.lo[i], dil[s] = geo.dilation[i];
      xs[s] = x.strides[i + 2];
    }
    for (int s = 0; s < 3; ++s) {
      taps *= k[s];
      P *= out[s];
    }
    K = I * taps;
    tile = std::clamp<std::int64_t>(kTileBytes / (K * static_cast<std::int64_t>(itemsize(c.dtype))) / 16 * 16, 16, P);
  }
  std::int64_t tiles() const { return (P + tile - 1) / tile; }
};

// Short runs (the rows of small images) are most runs: a call to memcpy or
// memset costs more than their copy. Runs of at least 32 bytes are copied as
// 32-byte blocks, the last one overlapping the one before (fixed-size
// copies: two vector moves each).
template <class T>
inline void zero(T* out, std::int64_t len) {
  if (len > 16) return (void)std::memset(out, 0, static_cast<std::size_t>(len) * sizeof(T));
  for (std::int64_t i = 0; i < len; ++i) out[i] = T(0);
}
template <class T>
inline void copy(T* out, const T* in, std::int64_t len) {
  constexpr std::int64_t block = 32 / sizeof(T);
  if (len >= block) {
    std::int64_t i = 0;
    for (; i + block <= len; i += block) std::memcpy(out + i, in + i, 32);
    if (i < len) std::memcpy(out + len - block, in + len - block, 32);
    return;
  }
  for (std::int64_t i = 0; i < len; ++i) out[i] = in[i];
}

// Columns [q0, q0 + cols) of the group's column matrix into b (leading
// dimension ld): row (c, tap) holds x[n, c0 + c] at each point's window
// position for that tap, 0 outside x. The tile's points go as runs along the
// last spatial axis; the taps along that axis read one input row, so they are
// the innermost loop, each from its precomputed window [w_lo, w_hi).
template <class T>
void gather(const Geometry& g, const T* x, std::int64_t n, std::int64_t c0, std::int64_t q0, std::int64_t cols, T* b,
            std::int64_t ld) {
  struct Run { std::int64_t od, oh, ow, len, at; };  // at: the run's first column in the tile
  thread_local std::vector<Run> runs;
  runs.clear();
  for (std::int64_t q = q0, at = 0; q < q0 + cols;) {
    const std::int64_t ow = q % g.out[2], oh = (q / g.out[2]) % g.out[1], od = q / (g.out[2] * g.out[1]);
    const std::int64_t len = std::min(g.out[2] - ow, q0 + cols - q);
    runs.push_back({od, oh, ow, len, at});
    q += len, at += len;
  }
  // Per tap along the last axis: its shift, and the outputs [w_lo, w_hi)
  // whose input position ow * stride + shift lies inside [0, e).
  struct Tap { std::int64_t shift, w_lo, w_hi; };
  thread_local std::vector<Tap> taps;
  taps.clear();
  for (std::int64_t kw = 0; kw < g.k[2]; ++kw) {
    const std::int64_t shift = kw * g.dil[2] - g.lo[2];
    const std::int64_t w_lo = shift >= 0 ? 0 : (-shift + g.stride[2] - 1) / g.stride[2];
    const std::int64_t w_hi = g.e[2] - shift <= 0 ? 0 : std::min(g.out[2], (g.e[2] - shift - 1) / g.stride[2] + 1);
    taps.push_back({shift, w_lo, std::max(w_lo, w_hi)});
  }
  const bool unit = g.stride[2] == 1 && g.xs[2] == 1;
  const std::int64_t kw_n = g.k[2];
  const T* xn = x + g.x_off + n * g.xs_n;
  for (std::int64_t c = 0; c < g.I; ++c) {
    const T* xc = xn + (c0 + c) * g.xs_c;
    for (std::int64_t kd = 0; kd < g.k[0]; ++kd) {
      for (std::int64_t kh = 0; kh < g.k[1]; ++kh) {
        T* rows = b + ((c * g.k[0] + kd) * g.k[1] + kh) * kw_n * ld;  // row (c, kd, kh, 0)
        for (const Run& u : runs) {
          const std::int64_t id = u.od * g.stride[0] + kd * g.dil[0] - g.lo[0];
          const std::int64_t ih = u.oh * g.stride[1] + kh * g.dil[1] - g.lo[1];
          if (id < 0 || id >= g.e[0] || ih < 0 || ih >= g.e[1]) {
            for (std::int64_t kw = 0; kw < kw_n; ++kw) zero(rows + kw * ld + u.at, u.len);
            continue;
          }
          const T* src = xc + id * g.xs[0] + ih * g.xs[1];
          const std::int64_t end = u.ow + u.len;
          for (std::int64_t kw = 0; kw < kw_n; ++kw) {
            const Tap& t = taps[static_cast<std::size_t>(kw)];
            T* out = rows + kw * ld + u.at - u.ow;  // out[ow] for ow in [u.ow, end)
            const std::int64_t a = std::clamp(t.w_lo, u.ow, end), z = std::clamp(t.w_hi, a, end);
            zero(out + u.ow, a - u.ow);
            if (unit) {
              copy(out + a, src + a + t.shift, z - a);
            } else {
              const std::int64_t step = g.stride[2] * g.xs[2];
              const T* s = src + (a * g.stride[2] + t.shift) * g.xs[2];
              for (std::int64_t ow = a; ow < z; ++ow, s += step) out[ow] = *s;
            }
            zero(out + z, end - z);
          }
        }
      }
    }
  }
}

template <class T>
struct Runner {
  const Geometry& g;
  const Blas& lib;
  const T* x;
  const T* w;  // [O, K] row-major
  T* y;

  void run(std::int64_t item) const {
    thread_local std::vector<T> scratch;
    const std::int64_t tiles = g.tiles();
    const std::int64_t t = item % tiles, gi = (item / tiles) % g.groups, n = item / (tiles * g.groups);
    const T* wg = w + gi * g.og * g.K;
    const std::int64_t q0 = t * g.tile, cols = std::min(g.tile, g.P - q0);
    if (scratch.size() < static_cast<std::size_t>(g.K * g.tile)) scratch.resize(static_cast<std::size_t>(g.K * g.tile));
    gather(g, x, n, gi * g.I, q0, cols, scratch.data(), cols);
    gemm(lib, static_cast<int>(g.og), static_cast<int>(cols), static_cast<int>(g.K), wg, static_cast<int>(g.K),
         scratch.data(), static_cast<int>(cols), y + (n * g.O + gi * g.og) * g.P + q0, static_cast<int>(g.P));
  }
};

template <class T>
void run_typed(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const Geometry g(c);
  for (std::int64_t v : {g.K, g.P, g.O, g.K * g.tile}) {
    if (v > INT_MAX) {
      user_error("conv_general", "an extent of " + std::to_string(v) + " is beyond the BLAS's 32-bit indices", c.loc);
    }
  }
  const Blas& lib = blas();
  // The weights as [O, K] row-major: as they lie when contiguous, else
  // copied once.
  const LibraryOperand& wo = c.inputs[1];
  const T* w = static_cast<const T*>(in[1]) + wo.offset;
  std::vector<T> packed;
  {
    bool contiguous = true;
    std::int64_t expect = 1;
    for (std::size_t a = wo.shape.size(); a-- > 0;) {
      contiguous = contiguous && (wo.shape[a] == 1 || wo.strides[a] == expect);
      expect *= wo.shape[a];
    }
    if (!contiguous) {
      packed.resize(static_cast<std::size_t>(g.O * g.K));
      const std::int64_t rank = static_cast<std::int64_t>(wo.shape.size());
      std::vector<std::int64_t> idx(wo.shape.size(), 0);
      for (std::int64_t i = 0; i < g.O * g.K; ++i) {
        std::int64_t at = 0;
        for (std::int64_t a = 0; a < rank; ++a) at += idx[static_cast<std::size_t>(a)] * wo.strides[static_cast<std::size_t>(a)];
        packed[static_cast<std::size_t>(i)] = w[at];
        for (std::int64_t a = rank; a-- > 0;) {
          if (++idx[static_cast<std::size_t>(a)] < wo.shape[static_cast<std::size_t>(a)]) break;
          idx[static_cast<std::size_t>(a)] = 0;
        }
      }
      w = packed.data();
    }
  }
  const Runner<T> runner{g, lib, static_cast<const T*>(in[0]), w, static_cast<T*>(out)};
  const std::int64_t items = g.N * g.groups * g.tiles();
  const int threads = num_threads() > 0 ? num_threads() : hardware_threads();
  // OpenBLAS's thread count is one global of the library (which NumPy in the
  // same process may share): one thread for this step's gemms, then put back.
  const int before = lib.get_num_threads();
  if (before != 1) lib.set_num_threads(1);
  auto run = [](const void* ctx, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) static_cast<const Runner<T>*>(ctx)->run(i);
  };
  if (threads <= 1 || items < 2) {
    run(&runner, 0, items);
  } else {
    parallel_chunks(run, &runner, items, std::min<std::int64_t>(items, 8 * threads), threads);
  }
  if (before != 1) lib.set_num_threads(before);
}

}  // namespace

void run_conv(const LibraryCall& c, const std::vector<const void*>& inputs, void* out) {
  if (c.dtype == DType::f32) return run_typed<float>(c, inputs, out);
  if (c.dtype == DType::f64) return run_typed<double>(c, inputs, out);
  internal_error(std::string("host conv: ") + dtype_name(c.dtype) + " reached a conv step");
}

}  // namespace aj::cpu

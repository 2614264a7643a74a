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

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// c = a b (row-major), or with b_trans c (+)= a b^T (beta 0 or 1).
void gemm(const Blas& lib, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
          bool b_trans = false, bool accumulate = false) {
  lib.sgemm(kRowMajor, kNoTrans, b_trans ? kTrans : kNoTrans, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f,
            c, ldc);
}
void gemm(const Blas& lib, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c,
          int ldc, bool b_trans = false, bool accumulate = false) {
  lib.dgemm(kRowMajor, kNoTrans, b_trans ? kTrans : kNoTrans, m, n, k, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, c,
            ldc);
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

  // The convolution's weights [O, I, k...] and result [N, O, out...] are
  // the operand w and the call's result, or for its weight gradient the
  // call's result and the operand g.
  explicit Geometry(const LibraryCall& c) {
    ConvGeometry geo;
    if (!geo.unpack(c.ints)) internal_error("host conv: a malformed geometry");
    const bool wgrad = c.k == kConvWeightGrad;
    const LibraryOperand& x = c.inputs[0];
    const std::vector<std::int64_t>& w = wgrad ? c.shape : c.inputs[1].shape;
    const std::vector<std::int64_t>& y = wgrad ? c.inputs[1].shape : c.shape;
    const int d = static_cast<int>(geo.dims()), pad = 3 - d;
    N = x.shape[0], C = x.shape[1], O = w[0], I = w[1], groups = c.axis, og = O / groups;
    xs_n = x.strides[0], xs_c = x.strides[1], x_off = x.offset;
    for (int a = 0; a < d; ++a) {
      const auto i = static_cast<std::size_t>(a);
      const int s = a + pad;
      e[s] = x.shape[i + 2], k[s] = w[i + 2], out[s] = y[i + 2];
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

// The weight gradient: for each group, its (image, tile) pairs in order are
// cut into `parts` runs; an item sums one run: each tile's columns gathered
// as the convolution gathers them, and one gemm adding g's rows for those
// points times the columns transposed into the item's own [O / groups,
// I * taps] sum. The items' sums are then added in order. The parts depend
// on the shapes alone, so the result has the same bits on every thread count.
template <class T>
struct WeightGradRunner {
  const Geometry& g;
  const Blas& lib;
  const T* x;
  const T* dy;  // [N, O, P] row-major
  T* sums;      // per item: [og, K]
  std::int64_t parts;  // per group

  void run(std::int64_t item) const {
    thread_local std::vector<T> scratch;
    const std::int64_t gi = item / parts, part = item % parts, pairs = g.N * g.tiles();
    T* sum = sums + item * g.og * g.K;
    const std::int64_t f0 = part * pairs / parts, f1 = (part + 1) * pairs / parts;
    if (f0 >= f1) return (void)std::fill(sum, sum + g.og * g.K, T(0));
    if (scratch.size() < static_cast<std::size_t>(g.K * g.tile)) scratch.resize(static_cast<std::size_t>(g.K * g.tile));
    for (std::int64_t f = f0; f < f1; ++f) {
      const std::int64_t n = f / g.tiles(), q0 = (f % g.tiles()) * g.tile, cols = std::min(g.tile, g.P - q0);
      gather(g, x, n, gi * g.I, q0, cols, scratch.data(), cols);
      gemm(lib, static_cast<int>(g.og), static_cast<int>(g.K), static_cast<int>(cols),
           dy + (n * g.O + gi * g.og) * g.P + q0, static_cast<int>(g.P), scratch.data(), static_cast<int>(cols), sum,
           static_cast<int>(g.K), /*b_trans=*/true, /*accumulate=*/f > f0);
    }
  }
};

// An operand as a row-major block of `count` elements: where it lies when
// contiguous, else copied once into `packed`.
template <class T>
const T* rows_of(const LibraryOperand& op, const void* base, std::int64_t count, std::vector<T>& packed) {
  const T* p = static_cast<const T*>(base) + op.offset;
  bool contiguous = true;
  std::int64_t expect = 1;
  for (std::size_t a = op.shape.size(); a-- > 0;) {
    contiguous = contiguous && (op.shape[a] == 1 || op.strides[a] == expect);
    expect *= op.shape[a];
  }
  if (contiguous) return p;
  packed.resize(static_cast<std::size_t>(count));
  const std::size_t rank = op.shape.size();
  std::vector<std::int64_t> idx(rank, 0);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t at = 0;
    for (std::size_t a = 0; a < rank; ++a) at += idx[a] * op.strides[a];
    packed[static_cast<std::size_t>(i)] = p[at];
    for (std::size_t a = rank; a-- > 0;) {
      if (++idx[a] < op.shape[a]) break;
      idx[a] = 0;
    }
  }
  return packed.data();
}

// Runs items [0, items) of `runner` over the host pool (8 chunks per thread),
// each gemm on one BLAS thread.
template <class R>
void run_items(const R& runner, const Blas& lib, std::int64_t items) {
  const int threads = num_threads() > 0 ? num_threads() : hardware_threads();
  // OpenBLAS's thread count is one global of the library (which NumPy in the
  // same process may share): one thread for this step's gemms, then put back.
  const int before = lib.get_num_threads();
  if (before != 1) lib.set_num_threads(1);
  auto run = [](const void* ctx, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) static_cast<const R*>(ctx)->run(i);
  };
  if (threads <= 1 || items < 2) {
    run(&runner, 0, items);
  } else {
    parallel_chunks(run, &runner, items, std::min<std::int64_t>(items, 8 * threads), threads);
  }
  if (before != 1) lib.set_num_threads(before);
}

// The items' sums of the weight gradient: at most this many bytes (or one
// part per group, summed into the result itself).
constexpr std::int64_t kSumBytes = std::int64_t{32} << 20;

template <class T>
void run_weight_grad(const Geometry& g, const LibraryCall& c, const std::vector<const void*>& in, T* out) {
  if (g.N == 0 || g.P == 0) return (void)std::fill(out, out + g.O * g.K, T(0));  // nothing summed
  std::vector<T> packed;
  const T* dy = rows_of<T>(c.inputs[1], in[1], g.N * g.O * g.P, packed);
  // About 32 items in all (work for the pool), each with a sum of og x K.
  const std::int64_t sum_size = g.og * g.K, pairs = g.N * g.tiles();
  std::int64_t parts = std::clamp<std::int64_t>((32 + g.groups - 1) / g.groups, 1, pairs);
  parts = std::max<std::int64_t>(1, std::min(parts, kSumBytes / (g.O * g.K * std::int64_t(sizeof(T)))));
  thread_local std::vector<T> sums;
  if (parts > 1 && sums.size() < static_cast<std::size_t>(g.groups * parts * sum_size)) {
    sums.resize(static_cast<std::size_t>(g.groups * parts * sum_size));
  }
  const WeightGradRunner<T> runner{g, blas(), static_cast<const T*>(in[0]), dy, parts > 1 ? sums.data() : out, parts};
  run_items(runner, runner.lib, g.groups * parts);
  if (parts == 1) return;  // each group summed into its rows of the result
  // out[gi * og + r, :] = the sums of group gi's parts, in order.
  for (std::int64_t gi = 0; gi < g.groups; ++gi) {
    T* o = out + gi * sum_size;
    const T* s = sums.data() + gi * parts * sum_size;
    std::copy(s, s + sum_size, o);
    for (std::int64_t p = 1; p < parts; ++p) {
      s += sum_size;
      for (std::int64_t i = 0; i < sum_size; ++i) o[i] += s[i];
    }
  }
}

template <class T>
void run_typed(const LibraryCall& c, const std::vector<const void*>& in, void* out) {
  const Geometry g(c);
  for (std::int64_t v : {g.K, g.P, g.O, g.K * g.tile}) {
    if (v > INT_MAX) {
      user_error("conv_general", "an extent of " + std::to_string(v) + " is beyond the BLAS's 32-bit indices", c.loc);
    }
  }
  if (c.k == kConvWeightGrad) return run_weight_grad<T>(g, c, in, static_cast<T*>(out));
  // The weights as [O, K] row-major.
  std::vector<T> packed;
  const T* w = rows_of<T>(c.inputs[1], in[1], g.O * g.K, packed);
  const Runner<T> runner{g, blas(), static_cast<const T*>(in[0]), w, static_cast<T*>(out)};
  run_items(runner, runner.lib, g.N * g.groups * g.tiles());
}

}  // namespace

void run_conv(const LibraryCall& c, const std::vector<const void*>& inputs, void* out) {
  if (c.dtype == DType::f32) return run_typed<float>(c, inputs, out);
  if (c.dtype == DType::f64) return run_typed<double>(c, inputs, out);
  internal_error(std::string("host conv: ") + dtype_name(c.dtype) + " reached a conv step");
}

}  // namespace aj::cpu

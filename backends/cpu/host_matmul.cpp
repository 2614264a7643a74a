#include "backends/cpu/host_matmul.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include "arrayjit/error.hpp"
#include "backends/cpu/blas.hpp"
#include "backends/cpu/isa.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "base/semantics.hpp"  // visit_dtype

namespace aj::cpu {

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// Below this many multiply-adds a loop runs on the calling thread (as the JIT's
// kernels: waking a worker costs more than it saves).
constexpr std::int64_t kParallelWork = std::int64_t{1} << 18;
// The least a block of a product split over threads holds: 16 rows (columns)
// of C, below which the BLAS's micro-kernel tiles run mostly empty, and 2^23
// multiply-adds (about 0.1 ms on one Zen 3 core), since each block's gemm
// packs all of the other operand again (a 256^2 product cut in 8 was 15-20%
// slower on one thread than whole; in 2, about 3%; 1024^2 in 8, about 3%).
constexpr std::int64_t kMinBlock = 16;
constexpr double kMinBlockWork = double(std::int64_t{1} << 23);
// From this many multiply-adds per thread a product is cut into one block
// per thread rather than two: each extra block packs the other operand
// again, +3-6% of the work at 1024^2 (f32 1024^2 on one Zen 4 core in 4
// blocks: 25.2 ms, in 2: 23.8, whole: 23.9), while a second block per thread
// only helps when a worker starts late, which at this size (milliseconds
// per block) means a machine busy enough that 2 threads are no faster
// anyway: the caller then takes the late worker's block itself.
constexpr double kOneBlockPerThreadWork = double(std::int64_t{1} << 27);

// The problem with extent-1 batch axes dropped: batch axes outermost first,
// each with its element stride in A, B and C.
struct Problem {
  std::vector<std::int64_t> batch, a_batch, b_batch, c_batch;
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t a_rs = 0, a_cs = 0, b_rs = 0, b_cs = 0;  // A's M and K strides, B's K and N strides

  std::int64_t batches() const {
    std::int64_t n = 1;
    for (std::int64_t e : batch) n *= e;
    return n;
  }
  // Element offsets of batch number `flat` (row-major over `batch`).
  void offsets(std::int64_t flat, std::int64_t& ao, std::int64_t& bo, std::int64_t& co) const {
    ao = bo = co = 0;
    for (std::size_t i = batch.size(); i-- > 0;) {
      const std::int64_t j = flat % batch[i];
      flat /= batch[i];
      ao += j * a_batch[i];
      bo += j * b_batch[i];
      co += j * c_batch[i];
    }
  }
};

Problem make_problem(const std::vector<std::int64_t>& out, std::int64_t K, const StridedOperand& a,
                     const StridedOperand& b) {
  const std::size_t r = out.size();
  if (r < 2 || a.strides.size() != r || b.strides.size() != r || K < 0 ||
      std::any_of(out.begin(), out.end(), [](std::int64_t e) { return e < 0; })) {
    internal_error("host matmul: " + std::to_string(r) + "-d output with " + std::to_string(a.strides.size()) +
                   " and " + std::to_string(b.strides.size()) + " operand strides, K = " + std::to_string(K) +
                   " (operand strides are one per output axis, extents >= 0)");
  }
  Problem p;
  p.M = out[r - 2];
  p.N = out[r - 1];
  p.K = K;
  p.a_rs = a.strides[r - 2];
  p.a_cs = a.strides[r - 1];
  p.b_rs = b.strides[r - 2];
  p.b_cs = b.strides[r - 1];
  std::int64_t c_stride = p.M * p.N;
  for (std::size_t i = r - 2; i-- > 0;) {
    if (out[i] == 1) continue;
    p.batch.insert(p.batch.begin(), out[i]);
    p.a_batch.insert(p.a_batch.begin(), a.strides[i]);
    p.b_batch.insert(p.b_batch.begin(), b.strides[i]);
    p.c_batch.insert(p.c_batch.begin(), c_stride);
    c_stride *= out[i];
  }
  // Fold the innermost batch axes into M while B stays the same matrix along
  // them and A's rows continue evenly into the next batch: x[b, s, d] @ W[d, h]
  // is one [b * s, d] @ [d, h] product (C is contiguous, so its rows continue).
  while (!p.batch.empty() && p.b_batch.back() == 0) {
    const std::int64_t step = p.a_batch.back();
    if (p.M == 1) {
      p.a_rs = step;  // one row: its stride was never used
    } else if (step != p.M * p.a_rs) {
      break;
    }
    p.M *= p.batch.back();
    p.batch.pop_back();
    p.a_batch.pop_back();
    p.b_batch.pop_back();
    p.c_batch.pop_back();
  }
  return p;
}

// Copy one operand's matrices (rows x cols, strides rs/cs) into a contiguous
// buffer, each distinct matrix once: batch axes the operand is broadcast along
// (stride 0) keep stride 0. `batch_strides` is replaced by the buffer's.
template <class U>
std::unique_ptr<U[]> pack(const U* src, const std::vector<std::int64_t>& batch, std::vector<std::int64_t>& batch_strides,
                          std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
  std::vector<std::int64_t> packed(batch.size(), 0);
  std::int64_t matrices = 1;
  for (std::size_t i = batch.size(); i-- > 0;) {
    if (batch_strides[i] == 0) continue;
    packed[i] = matrices * rows * cols;
    matrices *= batch[i];
  }
  auto dst = std::make_unique<U[]>(static_cast<std::size_t>(matrices * rows * cols));
  // Walk every batch index; a broadcast one lands on an already-copied matrix.
  std::int64_t total = 1;
  for (std::int64_t e : batch) total *= e;
  for (std::int64_t flat = 0; flat < total; ++flat) {
    std::int64_t f = flat, so = 0, po = 0;
    bool repeat = false;
    for (std::size_t i = batch.size(); i-- > 0;) {
      const std::int64_t j = f % batch[i];
      f /= batch[i];
      if (batch_strides[i] == 0 && j > 0) repeat = true;
      so += j * batch_strides[i];
      po += j * packed[i];
    }
    if (repeat) continue;
    for (std::int64_t i = 0; i < rows; ++i) {
      U* d = dst.get() + po + i * cols;
      const U* s = src + so + i * rs;
      for (std::int64_t j = 0; j < cols; ++j) d[j] = s[j * cs];
    }
  }
  batch_strides = packed;
  return dst;
}

// ---- integers, bool, and floats too large for the BLAS's int dimensions -----

// The inner loop of the kernel below, c[0, 256) (op)= x * b[0, 256), for a
// whole block of columns: of a fixed length so it vectorizes, written once
// and compiled for each instruction-set level (isa.hpp; the library is built
// for baseline x86-64), the variant picked by the CPU's level.
constexpr std::int64_t kColBlock = 256;
template <class U>
[[gnu::always_inline]] inline void block_madd_body(U* __restrict c, const U* __restrict b, U x) {
  for (std::int64_t n = 0; n < kColBlock; ++n) c[n] += x * b[n];
}
[[gnu::always_inline]] inline void block_or_body(std::uint8_t* __restrict c, const std::uint8_t* __restrict b) {
  for (std::int64_t n = 0; n < kColBlock; ++n) c[n] |= b[n];  // x is true here
}
#define AJ_BLOCK_VARIANTS(suffix, attr)                                                                       \
  attr void block_madd_##suffix(std::uint32_t* __restrict c, const std::uint32_t* __restrict b, std::uint32_t x) { \
    block_madd_body(c, b, x);                                                                                 \
  }                                                                                                           \
  attr void block_madd_##suffix(std::uint64_t* __restrict c, const std::uint64_t* __restrict b, std::uint64_t x) { \
    block_madd_body(c, b, x);                                                                                 \
  }                                                                                                           \
  attr void block_or_##suffix(std::uint8_t* __restrict c, const std::uint8_t* __restrict b) { block_or_body(c, b); }
AJ_BLOCK_VARIANTS(baseline, )
AJ_BLOCK_VARIANTS(avx2, AJ_TARGET_AVX2)
AJ_BLOCK_VARIANTS(avx512, AJ_TARGET_AVX512)
#undef AJ_BLOCK_VARIANTS

template <class U>
void block_madd(U* __restrict c, const U* __restrict b, U x) {
  switch (isa_variant()) {
    case 2: return block_madd_avx512(c, b, x);
    case 1: return block_madd_avx2(c, b, x);
    default: return block_madd_baseline(c, b, x);
  }
}
inline void block_or(std::uint8_t* __restrict c, const std::uint8_t* __restrict b) {
  switch (isa_variant()) {
    case 2: return block_or_avx512(c, b);
    case 1: return block_or_avx2(c, b);
    default: return block_or_baseline(c, b);
  }
}

// C rows [m0, m1) of one batch. B has unit stride along N. Blocked so a
// KB x NB block of B stays in L2 while every row of the range passes over it;
// the inner loop is a contiguous multiply-add the compiler vectorizes.
// Integers compute in the unsigned type of the same width: two's-complement
// wrapping without undefined behaviour, and the same bits whatever the order
// of the sum (and whether the dtype is signed or not). is_bool: U is bool's
// uint8_t 0/1, and the product is OR of ANDs.
template <class U, bool is_bool = false>
void rows_kernel(const U* A, std::int64_t a_rs, std::int64_t a_cs, const U* B, std::int64_t b_rs, U* C,
                 std::int64_t m0, std::int64_t m1, std::int64_t N, std::int64_t K) {
  constexpr std::int64_t KB = 128, NB = kColBlock;
  constexpr bool is_int = !std::is_floating_point_v<U>;
  // Unsigned types narrower than int would multiply as (signed) int.
  using W = std::conditional_t<is_int, decltype(U(0) + 0u), U>;
  for (std::int64_t m = m0; m < m1; ++m) std::fill(C + m * N, C + (m + 1) * N, U{0});
  for (std::int64_t n0 = 0; n0 < N; n0 += NB) {
    const std::int64_t nn = std::min(NB, N - n0);
    for (std::int64_t k0 = 0; k0 < K; k0 += KB) {
      const std::int64_t k1 = std::min(K, k0 + KB);
      for (std::int64_t m = m0; m < m1; ++m) {
        U* __restrict crow = C + m * N + n0;
        for (std::int64_t k = k0; k < k1; ++k) {
          const U x = A[m * a_rs + k * a_cs];
          if constexpr (is_int) {
            if (x == 0) continue;  // (floats must not skip: 0 * inf is NaN)
          }
          const U* __restrict brow = B + k * b_rs + n0;
          if constexpr (is_bool) {
            if (nn == NB) {
              block_or(crow, brow);
              continue;
            }
          } else if constexpr (std::is_same_v<U, std::uint32_t> || std::is_same_v<U, std::uint64_t>) {  // block_madd's
            if (nn == NB) {
              block_madd(crow, brow, x);
              continue;
            }
          }
          if constexpr (is_bool) {
            for (std::int64_t n = 0; n < nn; ++n) crow[n] |= brow[n];
          } else {
            for (std::int64_t n = 0; n < nn; ++n) crow[n] = static_cast<U>(crow[n] + static_cast<W>(x) * brow[n]);
          }
        }
      }
    }
  }
}

template <class U, bool is_bool = false>
void loop_matmul(Problem p, const U* A, const U* B, U* C, int threads, const BlocksDone& done) {
  std::unique_ptr<U[]> b_packed;
  if (p.b_cs != 1 && p.N > 1) {
    b_packed = pack(B, p.batch, p.b_batch, p.K, p.N, p.b_rs, p.b_cs);
    B = b_packed.get();
    p.b_rs = p.N;
  }
  struct Ctx {
    const Problem* p;
    const U *A, *B;
    U* C;
    const BlocksDone* done;
  } ctx{&p, A, B, C, &done};
  // Units are (batch, row) pairs, so a batch of many small products and one
  // tall product both split evenly.
  auto run = [](const void* vctx, std::int64_t lo, std::int64_t hi) {
    const Ctx& c = *static_cast<const Ctx*>(vctx);
    const Problem& q = *c.p;
    while (lo < hi) {
      const std::int64_t bi = lo / q.M, m0 = lo % q.M, m1 = std::min(q.M, m0 + (hi - lo));
      std::int64_t ao, bo, co;
      q.offsets(bi, ao, bo, co);
      rows_kernel<U, is_bool>(c.A + ao, q.a_rs, q.a_cs, c.B + bo, q.b_rs, c.C + co, m0, m1, q.N, q.K);
      (*c.done)(co + m0 * q.N, co + m1 * q.N);
      lo += m1 - m0;
    }
  };
  const std::int64_t units = p.batches() * p.M;
  const double work = static_cast<double>(units) * static_cast<double>(p.N) * static_cast<double>(p.K);
  if (threads <= 1 || work < static_cast<double>(kParallelWork) || units < 2) {
    run(&ctx, 0, units);
  } else {
    parallel_chunks(run, &ctx, units, std::min<std::int64_t>(units, 4 * threads), threads);
  }
}

// ---- f32/f64 through the BLAS ------------------------------------------------

// OpenBLAS's thread count is one global: read it back each time rather than
// remember it, since the application (or NumPy in the same process) may set it.
void single_threaded_blas(const Blas& lib) {
  if (lib.get_num_threads() != 1) lib.set_num_threads(1);
}

void gemm(const Blas& lib, int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float* c, int ldc) {
  lib.sgemm(kRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
void gemm(const Blas& lib, int ta, int tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
          double* c, int ldc) {
  lib.dgemm(kRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

bool fits_int(std::int64_t x) { return x <= INT_MAX; }

// How a row-major BLAS call reads a rows x cols matrix with strides (rs, cs)
// in place: as itself (unit column stride) or as a transpose (unit row
// stride), with its leading dimension. An extent-1 axis's stride is never
// used, so it does not decide anything.
struct BlasView {
  bool ok = false;
  int trans = kNoTrans;
  int ld = 1;
};
BlasView blas_view(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<std::int64_t>(1, cols))) {
    const std::int64_t ld = rows == 1 ? std::max<std::int64_t>(1, cols) : rs;
    if (fits_int(ld)) return {true, kNoTrans, static_cast<int>(ld)};
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<std::int64_t>(1, rows))) {
    const std::int64_t ld = cols == 1 ? std::max<std::int64_t>(1, rows) : cs;
    if (fits_int(ld)) return {true, kTrans, static_cast<int>(ld)};
  }
  return {};
}

template <class T>
void blas_matmul(Problem p, const T* A, const T* B, T* C, int threads, const BlocksDone& done) {
  if (!fits_int(p.M) || !fits_int(p.N) || !fits_int(p.K)) return loop_matmul(p, A, B, C, threads, done);
  std::unique_ptr<T[]> a_packed, b_packed;
  BlasView va = blas_view(p.M, p.K, p.a_rs, p.a_cs);
  if (!va.ok) {
    a_packed = pack(A, p.batch, p.a_batch, p.M, p.K, p.a_rs, p.a_cs);
    A = a_packed.get();
    p.a_rs = p.K, p.a_cs = 1;
    va = {true, kNoTrans, static_cast<int>(std::max<std::int64_t>(1, p.K))};
  }
  BlasView vb = blas_view(p.K, p.N, p.b_rs, p.b_cs);
  if (!vb.ok) {
    b_packed = pack(B, p.batch, p.b_batch, p.K, p.N, p.b_rs, p.b_cs);
    B = b_packed.get();
    p.b_rs = p.N, p.b_cs = 1;
    vb = {true, kNoTrans, static_cast<int>(std::max<std::int64_t>(1, p.N))};
  }
  // Threads are ours, not the BLAS's: each product is cut into row (or, for a
  // wide one, column) blocks that are independent single-threaded gemms, and
  // the blocks of all batches go to the host pool. Measured on a busy 2-core
  // machine (bench/README.md), OpenBLAS's own threads meet at a barrier many
  // times per call and wait for a descheduled partner each time; the pool's
  // caller takes blocks itself, so a late worker costs nothing. The BLAS's
  // workers also never spin beside the JIT's kernels.
  const std::int64_t batches = p.batches();
  const double work = static_cast<double>(batches) * static_cast<double>(p.M) * static_cast<double>(p.N) *
                      static_cast<double>(p.K);
  const bool parallel = threads > 1 && work >= static_cast<double>(kParallelWork);
  const bool by_rows = p.M >= p.N;
  const std::int64_t extent = by_rows ? p.M : p.N;
  std::int64_t parts = 1;
  if (parallel && batches < 2 * threads) {
    // 2 blocks a thread (a late one takes fewer), 1 for large products.
    const std::int64_t per_thread = work / threads >= kOneBlockPerThreadWork ? 1 : 2;
    const std::int64_t want = (per_thread * threads + batches - 1) / batches;
    const auto by_work = static_cast<std::int64_t>(work / static_cast<double>(batches) / kMinBlockWork);
    parts = std::max<std::int64_t>(1, std::min({want, extent / kMinBlock, by_work}));
  }
  const Blas& lib = blas();
  struct Ctx {
    const Blas* lib;
    const Problem* p;
    BlasView va, vb;
    const T *A, *B;
    T* C;
    std::int64_t parts;
    bool by_rows;
    const BlocksDone* done;
  } ctx{&lib, &p, va, vb, A, B, C, parts, by_rows, &done};
  auto run = [](const void* vctx, std::int64_t lo, std::int64_t hi) {
    const Ctx& c = *static_cast<const Ctx*>(vctx);
    const Problem& q = *c.p;
    const std::int64_t extent = c.by_rows ? q.M : q.N;
    for (std::int64_t u = lo; u < hi; ++u) {
      const std::int64_t part = u % c.parts, b0 = extent * part / c.parts, b1 = extent * (part + 1) / c.parts;
      std::int64_t ao, bo, co;
      q.offsets(u / c.parts, ao, bo, co);
      if (c.by_rows) {
        ao += b0 * q.a_rs;
        co += b0 * q.N;
      } else {
        bo += b0 * q.b_cs;
        co += b0;
      }
      const std::int64_t m = c.by_rows ? b1 - b0 : q.M, n = c.by_rows ? q.N : b1 - b0;
      gemm(*c.lib, c.va.trans, c.vb.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(q.K), c.A + ao, c.va.ld,
           c.B + bo, c.vb.ld, c.C + co, static_cast<int>(q.N));
      if (c.by_rows) {
        (*c.done)(co, co + m * q.N);
      } else {
        for (std::int64_t r = 0; r < m; ++r) (*c.done)(co + r * q.N, co + r * q.N + n);
      }
    }
  };
  single_threaded_blas(lib);
  const std::int64_t units = batches * parts;
  if (parallel && units > 1) {
    parallel_chunks(run, &ctx, units, std::min<std::int64_t>(units, 8 * threads), threads);
  } else {
    run(&ctx, 0, units);
  }
}

// f16/bf16: each operand's span widened to f32 in one pass (its strides and
// offset kept, so views stay views), the f32 product (accumulated in f32),
// then one rounding per element of C. The half -> f32 conversion is exact.
template <class H>
std::unique_ptr<float[]> widened(const StridedOperand& x, const std::vector<std::int64_t>& shape,
                                 StridedOperand* out) {
  std::int64_t lo = 0, hi = 0;  // the span touched, in elements from the offset
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t span = x.strides[d] * (shape[d] - 1);
    (span < 0 ? lo : hi) += span;
  }
  std::unique_ptr<float[]> buf(new float[static_cast<std::size_t>(hi - lo + 1)]);
  const H* src = static_cast<const H*>(x.data) + x.offset + lo;
  for (std::int64_t i = 0; i <= hi - lo; ++i) buf[static_cast<std::size_t>(i)] = static_cast<float>(src[i]);
  *out = {buf.get(), -lo, x.strides};
  return buf;
}

template <class H>
void half_matmul(const std::vector<std::int64_t>& out_shape, std::int64_t K, const StridedOperand& a,
                 const StridedOperand& b, H* c, std::int64_t numel, int threads, const BlocksDone& done) {
  std::vector<std::int64_t> a_shape = out_shape, b_shape = out_shape;
  a_shape.back() = K;
  b_shape[b_shape.size() - 2] = K;
  StridedOperand wa, wb;
  auto abuf = widened<H>(a, a_shape, &wa);
  auto bbuf = widened<H>(b, b_shape, &wb);
  std::unique_ptr<float[]> cf(new float[static_cast<std::size_t>(numel)]);
  matmul(DType::f32, out_shape, K, wa, wb, cf.get(), threads);
  for (std::int64_t i = 0; i < numel; ++i) c[i] = H(cf[static_cast<std::size_t>(i)]);
  done(0, numel);  // the epilogue (its blocks once all of C is rounded)
}

}  // namespace

void matmul(DType t, const std::vector<std::int64_t>& out_shape, std::int64_t K, const StridedOperand& a,
            const StridedOperand& b, void* c, int threads, const BlocksDone& done) {
  const Problem p = make_problem(out_shape, K, a, b);
  if (threads <= 0) threads = hardware_threads();
  const std::int64_t numel = p.batches() * p.M * p.N;
  if (numel == 0) return;
  if (K == 0) {  // an empty sum; also keeps BLAS calls away from k = 0
    std::memset(c, 0, static_cast<std::size_t>(numel) * itemsize(t));
    done(0, numel);
    return;
  }
  auto go = [&]<class U, bool is_bool = false>(U*) {
    const U* A = static_cast<const U*>(a.data) + a.offset;
    const U* B = static_cast<const U*>(b.data) + b.offset;
    if constexpr (std::is_floating_point_v<U>) {
      blas_matmul(p, A, B, static_cast<U*>(c), threads, done);
    } else {
      loop_matmul<U, is_bool>(p, A, B, static_cast<U*>(c), threads, done);
    }
  };
  // By the dtype's C++ type, whose kind is the dtype table's
  // (base/semantics.hpp checks): bool as its byte; a signed or unsigned
  // integer as the unsigned type of its width; f32 and f64 to the BLAS;
  // halves widened to f32.
  sem::visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      go.template operator()<std::uint8_t, true>(nullptr);
    } else if constexpr (sem::is_int<T>) {
      go(static_cast<std::make_unsigned_t<T>*>(nullptr));
    } else if constexpr (sem::is_half_type<T>) {
      half_matmul(out_shape, K, a, b, static_cast<T*>(c), numel, threads, done);
    } else {
      go(static_cast<T*>(nullptr));
    }
  });
}

const char* matmul_library() {
  return blas().description.c_str();
}

}  // namespace aj::cpu

#include "backends/cpu/host_linalg.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>

#include "arrayjit/error.hpp"
#include "backends/cpu/blas.hpp"
#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/thread_pool.hpp"

namespace aj::cpu {

namespace {

using namespace linalg_flag;

// CBLAS enumerators (column-major calls).
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112, kUpperTri = 121, kLowerTri = 122, kNonUnit = 131,
              kUnitDiag = 132, kLeft = 141;

// One matrix of an operand: its element offset for batch element b.
std::int64_t matrix_offset(const LibraryOperand& op, const std::vector<std::int64_t>& batch, std::int64_t b) {
  std::int64_t off = op.offset;
  for (std::size_t d = batch.size(); d-- > 0;) {
    off += (b % batch[d]) * op.strides[d];
    b /= batch[d];
  }
  return off;
}

// Work memory of one thread, kept between calls (a replayed step allocates
// nothing once it has grown).
template <class T>
struct Work {
  std::vector<T> a, b, s, u, vt, work;
  std::vector<int> ipiv, iwork;
};
template <class T>
Work<T>& work_of() {
  thread_local Work<T> w;
  return w;
}

template <class T>
void fit(std::vector<T>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

// The first matrix whose values a routine refused (or none).
struct Failure {
  std::atomic<std::int64_t> batch{-1};
  int info = 0;
  void note(std::int64_t b, int i) {
    std::int64_t none = -1;
    if (batch.compare_exchange_strong(none, b)) info = i;
  }
};

// Small systems (n <= kSmallSolve): LAPACK's per-call overhead (its buffer
// pool, thread checks, two calls) is most of a 32 x 32 solve, so these run
// an LU with partial pivoting (the first largest magnitude, as getrf) and
// the two substitutions on row-major copies, in code compiled for the CPU's
// vector width (one clone per level, chosen at load time). Returns 0, or
// the 1-based column of the first exactly zero pivot (singular).
constexpr std::int64_t kSmallSolve = 32;

template <class T>
[[gnu::always_inline]] inline int small_solve_body(T* a, T* b, int n, int k) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    T best = std::fabs(a[c * n + c]);
    for (int r = c + 1; r < n; ++r) {
      const T v = std::fabs(a[r * n + c]);
      if (v > best) best = v, p = r;
    }
    if (best == T(0)) return c + 1;
    if (p != c) {
      std::swap_ranges(a + c * n, a + c * n + n, a + p * n);
      std::swap_ranges(b + c * k, b + c * k + k, b + p * k);
    }
    const T inv = T(1) / a[c * n + c];
    const T* ac = a + c * n;
    const T* bc = b + c * k;
    for (int r = c + 1; r < n; ++r) {
      T* ar = a + r * n;
      T* br = b + r * k;
      const T f = ar[c] * inv;
      ar[c] = f;
      for (int j = c + 1; j < n; ++j) ar[j] -= f * ac[j];
      for (int j = 0; j < k; ++j) br[j] -= f * bc[j];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    T* br = b + r * k;
    for (int p = r + 1; p < n; ++p) {
      const T f = a[r * n + p];
      const T* bp = b + p * k;
      for (int j = 0; j < k; ++j) br[j] -= f * bp[j];
    }
    const T inv = T(1) / a[r * n + r];
    for (int j = 0; j < k; ++j) br[j] *= inv;
  }
  return 0;
}

[[gnu::target_clones("avx512f", "avx2", "default"), gnu::optimize("O3")]]
int small_solve(double* a, double* b, int n, int k) { return small_solve_body(a, b, n, k); }
[[gnu::target_clones("avx512f", "avx2", "default"), gnu::optimize("O3")]]
int small_solve(float* a, float* b, int n, int k) { return small_solve_body(a, b, n, k); }

template <class T>
class Runner {
 public:
  Runner(const LibraryCall& c, const std::vector<const void*>& in, void* out, const LapackFns<T>& f, Failure& fail)
      : c_(c), in_(in), out_(static_cast<T*>(out)), f_(f), fail_(fail) {
    const auto& a = c.inputs[0].shape;
    batch_.assign(a.begin(), a.end() - 2);
    m_ = a[a.size() - 2];
    n_ = a[a.size() - 1];
    out_matrix_ = 1;
    for (std::size_t d = batch_.size(); d < c.shape.size(); ++d) out_matrix_ *= c.shape[d];
    width_ = c.shape.back();
  }

  std::int64_t batches() const {
    std::int64_t n = 1;
    for (std::int64_t e : batch_) n *= e;
    return n;
  }

  void run(std::int64_t b) const {
    T* out = out_ + b * out_matrix_;
    std::fill(out, out + out_matrix_, T(0));
    switch (static_cast<LinalgKind>(c_.axis)) {
      case LinalgKind::cholesky: return cholesky(b, out);
      case LinalgKind::lu: return lu(b, out);
      case LinalgKind::solve: return solve(b, out);
      case LinalgKind::triangular: return triangular(b, out);
      case LinalgKind::qr: return qr(b, out);
      case LinalgKind::svd: return svd(b, out);
      case LinalgKind::eigh: return eigh(b, out);
    }
  }

 private:
  // dst[i * dsi + j * dsj] = src[i * ssi + j * ssj] for a rows x cols
  // matrix, in 32 x 32 tiles (a transposing copy reads and writes whole
  // cache lines); `keep(i, j)` says which elements are copied.
  template <class Keep>
  static void copy(const T* src, std::int64_t ssi, std::int64_t ssj, T* dst, std::int64_t dsi, std::int64_t dsj,
                   std::int64_t rows, std::int64_t cols, Keep keep) {
    constexpr std::int64_t kTile = 32;
    for (std::int64_t i0 = 0; i0 < rows; i0 += kTile) {
      for (std::int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const std::int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
        for (std::int64_t i = i0; i < i1; ++i) {
          for (std::int64_t j = j0; j < j1; ++j) {
            if (keep(i, j)) dst[i * dsi + j * dsj] = src[i * ssi + j * ssj];
          }
        }
      }
    }
  }
  // Operand k's matrix A of batch element b into dst, column-major with
  // leading dimension ld: A itself, or (transposed) A^T, which is A's
  // row-major elements in order (a plain copy for a contiguous operand; the
  // routines that can work on A^T take it so).
  void load(std::size_t k, std::int64_t b, T* dst, std::int64_t ld, bool transposed = false) const {
    const LibraryOperand& op = c_.inputs[k];
    const T* src = static_cast<const T*>(in_[k]) + matrix_offset(op, batch_, b);
    const std::size_t r = op.shape.size();
    const std::int64_t rows = op.shape[r - 2], cols = op.shape[r - 1];
    const std::int64_t rs = op.strides[r - 2], cs = op.strides[r - 1];
    if (transposed) {
      copy(src, rs, cs, dst, ld, 1, rows, cols, all);
    } else {
      copy(src, rs, cs, dst, 1, ld, rows, cols, all);
    }
  }
  // A column-major rows x cols matrix M (leading dimension ld) into the
  // result's rows [row0, row0 + rows), columns from 0; or (transposed) M^T,
  // M being cols x rows. `keep(i, j)` says which elements of the part are
  // written (the others stay 0).
  template <class Keep>
  void store(const T* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, T* out, std::int64_t row0, Keep keep,
             bool transposed = false) const {
    if (transposed) {
      copy(src, ld, 1, out + row0 * width_, width_, 1, rows, cols, keep);
    } else {
      copy(src, 1, ld, out + row0 * width_, width_, 1, rows, cols, keep);
    }
  }
  static bool all(std::int64_t, std::int64_t) { return true; }

  static int i(std::int64_t x) { return static_cast<int>(x); }

  // LAPACK's workspace query, then the work array at that size.
  static int queried(T w) { return std::max(1, static_cast<int>(w)); }

  void cholesky(std::int64_t b, T* out) const {
    const int n = i(n_);
    if (n == 0) return;
    Work<T>& w = work_of<T>();
    fit(w.a, n_ * n_);
    // On A^T (A's elements as they lie): its upper triangle is A's lower,
    // and its factor U = L^T is L read row-major.
    load(0, b, w.a.data(), n_, true);
    int info = 0;
    f_.potrf("U", &n, w.a.data(), &n, &info, 1);
    if (info != 0) return fail_.note(b, info);
    store(w.a.data(), n_, n_, n_, out, 0, [](std::int64_t r, std::int64_t c) { return c <= r; }, true);
  }

  void lu(std::int64_t b, T* out) const {
    const int m = i(m_), n = i(n_);
    const std::int64_t k = std::min(m_, n_);
    T* pivots = out;
    T* perm = pivots + width_;
    for (std::int64_t r = 0; r < m_; ++r) perm[r] = static_cast<T>(r);
    if (k == 0) return;
    Work<T>& w = work_of<T>();
    fit(w.a, m_ * n_);
    fit(w.ipiv, k);
    load(0, b, w.a.data(), m_);
    int info = 0;
    f_.getrf(&m, &n, w.a.data(), &m, w.ipiv.data(), &info);
    if (info < 0) return fail_.note(b, info);
    store(w.a.data(), m_, m_, n_, out, 2, all);
    for (std::int64_t p = 0; p < k; ++p) {
      const int to = w.ipiv[static_cast<std::size_t>(p)] - 1;
      pivots[p] = static_cast<T>(to);
      std::swap(perm[p], perm[to]);
    }
  }

  void solve(std::int64_t b, T* out) const {
    const int n = i(n_), nrhs = i(c_.shape.back());
    if (n == 0 || nrhs == 0) return;
    Work<T>& w = work_of<T>();
    fit(w.a, n_ * n_);
    fit(w.b, n_ * nrhs);
    if (n_ <= kSmallSolve) {  // row-major copies, our own elimination (see small_solve)
      load(0, b, w.a.data(), n_, true);
      load(1, b, w.b.data(), nrhs, true);
      if (const int zero = small_solve(w.a.data(), w.b.data(), n, nrhs)) return fail_.note(b, zero);
      store(w.b.data(), nrhs, n_, nrhs, out, 0, all, true);
      return;
    }
    fit(w.ipiv, n_);
    // LU of A^T (A's elements as they lie), then (A^T)^T x = b.
    load(0, b, w.a.data(), n_, true);
    load(1, b, w.b.data(), n_);
    int info = 0;
    f_.getrf(&n, &n, w.a.data(), &n, w.ipiv.data(), &info);
    if (info != 0) return fail_.note(b, info);
    f_.getrs("T", &n, &nrhs, w.a.data(), &n, w.ipiv.data(), w.b.data(), &n, &info, 1);
    if (info != 0) return fail_.note(b, info);
    store(w.b.data(), n_, n_, nrhs, out, 0, all);
  }

  void triangular(std::int64_t b, T* out) const {
    const int n = i(n_), nrhs = i(c_.shape.back());
    if (n == 0 || nrhs == 0) return;
    Work<T>& w = work_of<T>();
    fit(w.a, n_ * n_);
    fit(w.b, n_ * nrhs);
    // On M = A^T (A's elements as they lie): A's lower triangle is M's
    // upper, and op(A) is M transposed once more.
    load(0, b, w.a.data(), n_, true);
    load(1, b, w.b.data(), n_);
    const std::int64_t fl = c_.k;
    f_.trsm(kColMajor, kLeft, (fl & kLower) ? kUpperTri : kLowerTri, (fl & kTransposeA) ? kNoTrans : kTrans,
            (fl & kUnit) ? kUnitDiag : kNonUnit, n, nrhs, T(1), w.a.data(), n, w.b.data(), n);
    store(w.b.data(), n_, n_, nrhs, out, 0, all);
  }

  void qr(std::int64_t b, T* out) const {
    const std::int64_t k = std::min(m_, n_), q = (c_.k & kComplete) ? m_ : k;
    const int m = i(m_), n = i(n_), ik = i(k), iq = i(q);
    if (m == 0) return;
    Work<T>& w = work_of<T>();
    const std::int64_t cols = std::max(n_, q);  // Q may have more columns than a
    fit(w.a, m_ * cols);
    fit(w.s, k);  // tau
    load(0, b, w.a.data(), m_);
    int info = 0, lwork = -1;
    T size1 = 0, size2 = 0;
    if (k > 0) f_.geqrf(&m, &n, w.a.data(), &m, w.s.data(), &size1, &lwork, &info);
    if (q > 0) f_.orgqr(&m, &iq, &ik, w.a.data(), &m, w.s.data(), &size2, &lwork, &info);
    lwork = std::max(queried(size1), queried(size2));
    fit(w.work, lwork);
    if (k > 0) {
      f_.geqrf(&m, &n, w.a.data(), &m, w.s.data(), w.work.data(), &lwork, &info);
      if (info != 0) return fail_.note(b, info);
    }
    // R: the upper triangle of the first min(m, n) rows (a complete R's
    // other rows are 0).
    store(w.a.data(), m_, k, n_, out, m_, [](std::int64_t r, std::int64_t c) { return c >= r; });
    if (q == 0) return;
    for (std::int64_t j = n_; j < q; ++j) std::fill_n(w.a.data() + j * m_, m_, T(0));
    f_.orgqr(&m, &iq, &ik, w.a.data(), &m, w.s.data(), w.work.data(), &lwork, &info);
    if (info != 0) return fail_.note(b, info);
    store(w.a.data(), m_, m_, q, out, 0, all);
  }

  void svd(std::int64_t b, T* out) const {
    const std::int64_t k = std::min(m_, n_);
    const bool vectors = c_.k & kVectors, full = c_.k & kFull;
    const std::int64_t u = full ? m_ : k, v = full ? n_ : k;
    const int m = i(m_), n = i(n_), ldv = std::max(1, n), ldu = std::max(1, i(u));
    if (k == 0) {  // no values; a full U or Vh of an empty side's partner is the identity
      if (vectors) {
        for (std::int64_t d = 0; d < u; ++d) out[d * width_ + d] = T(1);
        for (std::int64_t d = 0; d < v; ++d) out[(m_ + 1 + d) * width_ + d] = T(1);
      }
      return;
    }
    // On A^T = V S U^T (A's elements as they lie, n x m): its left vectors
    // (n x v) are A's V, its right ones (u x m) A's U^T; both parts are
    // stored transposed.
    Work<T>& w = work_of<T>();
    fit(w.a, m_ * n_);
    fit(w.s, k);
    fit(w.iwork, 8 * k);
    if (vectors) {
      fit(w.u, n_ * v);
      fit(w.vt, u * m_);
    }
    load(0, b, w.a.data(), n_, true);
    const char* jobz = !vectors ? "N" : full ? "A" : "S";
    int info = 0, lwork = -1;
    T size = 0;
    f_.gesdd(jobz, &n, &m, w.a.data(), &n, w.s.data(), w.u.data(), &ldv, w.vt.data(), &ldu, &size, &lwork,
             w.iwork.data(), &info, 1);
    lwork = queried(size);
    fit(w.work, lwork);
    f_.gesdd(jobz, &n, &m, w.a.data(), &n, w.s.data(), w.u.data(), &ldv, w.vt.data(), &ldu, w.work.data(), &lwork,
             w.iwork.data(), &info, 1);
    if (info != 0) return fail_.note(b, info);
    if (!vectors) {
      std::copy_n(w.s.data(), k, out);
      return;
    }
    store(w.vt.data(), u, m_, u, out, 0, all, true);
    std::copy_n(w.s.data(), k, out + m_ * width_);
    store(w.u.data(), n_, v, n_, out, m_ + 1, all, true);
  }

  void eigh(std::int64_t b, T* out) const {
    const int n = i(n_);
    if (n == 0) return;
    const bool vectors = c_.k & kVectors;
    Work<T>& w = work_of<T>();
    fit(w.a, n_ * n_);
    fit(w.s, n_);
    // On A^T (A's elements as they lie): A's lower triangle is its upper.
    load(0, b, w.a.data(), n_, true);
    const char* jobz = vectors ? "V" : "N";
    const char* uplo = (c_.k & kUpper) ? "L" : "U";
    int info = 0, lwork = -1, liwork = -1, isize = 0;
    T size = 0;
    f_.syevd(jobz, uplo, &n, w.a.data(), &n, w.s.data(), &size, &lwork, &isize, &liwork, &info, 1, 1);
    lwork = queried(size);
    liwork = std::max(1, isize);
    fit(w.work, lwork);
    fit(w.iwork, liwork);
    f_.syevd(jobz, uplo, &n, w.a.data(), &n, w.s.data(), w.work.data(), &lwork, w.iwork.data(), &liwork, &info, 1, 1);
    if (info != 0) return fail_.note(b, info);
    std::copy_n(w.s.data(), n_, out);
    if (vectors) store(w.a.data(), n_, n_, n_, out, 1, all);
  }

  const LibraryCall& c_;
  const std::vector<const void*>& in_;
  T* out_;
  const LapackFns<T>& f_;
  Failure& fail_;
  std::vector<std::int64_t> batch_;
  std::int64_t m_ = 0, n_ = 0, out_matrix_ = 0, width_ = 0;
};

[[noreturn]] void refused(const LibraryCall& c, std::int64_t batch, int info) {
  const auto kind = static_cast<LinalgKind>(c.axis);
  std::string what;
  switch (kind) {
    case LinalgKind::cholesky:
      what = "the matrix is not positive definite (its leading minor of order " + std::to_string(info) +
             " is not positive)";
      break;
    case LinalgKind::solve: what = "the matrix is singular (an exactly zero pivot in its LU factors)"; break;
    case LinalgKind::svd:
    case LinalgKind::eigh: what = "LAPACK did not converge (info " + std::to_string(info) + ")"; break;
    default: what = "LAPACK refused the matrix (info " + std::to_string(info) + ")"; break;
  }
  std::int64_t batches = 1;
  for (std::size_t d = 0; d + 2 < c.inputs[0].shape.size(); ++d) batches *= c.inputs[0].shape[d];
  if (batches > 1) what += " in batch element " + std::to_string(batch) + " of " + std::to_string(batches);
  user_error(linalg_op_name(kind, c.k), what, c.loc);
}

template <class T>
void run_typed(const LibraryCall& c, const std::vector<const void*>& in, void* out, const Blas& lib,
               const LapackFns<T>& f) {
  if (!f.potrf || !f.getrf || !f.getrs || !f.geqrf || !f.orgqr || !f.gesdd || !f.syevd || !f.trsm) {
    runtime_error(std::string("aj::") + linalg_name(static_cast<LinalgKind>(c.axis)) +
                  ": the BLAS library (" + lib.config + ") has no LAPACK routines");
  }
  for (const LibraryOperand& op : c.inputs) {
    for (std::int64_t e : op.shape) {
      if (e > INT_MAX / 8) {
        user_error(linalg_name(static_cast<LinalgKind>(c.axis)),
                   "a matrix extent of " + std::to_string(e) + " is beyond LAPACK's 32-bit indices", c.loc);
      }
    }
  }
  Failure fail;
  const Runner<T> runner(c, in, out, f, fail);
  const std::int64_t n = runner.batches();
  const int threads = num_threads() > 0 ? num_threads() : hardware_threads();
  // OpenBLAS's thread count is one global of the library (which NumPy in
  // the same process may share): set for this step, then put back.
  const int before = lib.get_num_threads();
  const bool batch = n > 1 && threads > 1;
  const int want = batch ? 1 : threads;
  if (before != want) lib.set_num_threads(want);
  if (batch) {  // matrices over the pool, each routine on one thread
    auto run = [](const void* ctx, std::int64_t lo, std::int64_t hi) {
      for (std::int64_t b = lo; b < hi; ++b) static_cast<const Runner<T>*>(ctx)->run(b);
    };
    parallel_chunks(run, &runner, n, std::min<std::int64_t>(n, 4 * threads), threads);
  } else {  // one matrix (or one thread): LAPACK's own threads, the pool's count
    for (std::int64_t b = 0; b < n; ++b) runner.run(b);
  }
  if (before != want) lib.set_num_threads(before);
  if (fail.batch.load() >= 0) refused(c, fail.batch.load(), fail.info);
}

}  // namespace

void run_linalg(const LibraryCall& c, const std::vector<const void*>& inputs, void* out) {
  const Blas& lib = blas();
  if (c.dtype == DType::f32) return run_typed<float>(c, inputs, out, lib, lib.lapack_f32);
  if (c.dtype == DType::f64) return run_typed<double>(c, inputs, out, lib, lib.lapack_f64);
  internal_error(std::string("host linalg: ") + dtype_name(c.dtype) + " reached a LAPACK step");
}

}  // namespace aj::cpu

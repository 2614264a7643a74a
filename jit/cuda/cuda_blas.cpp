// cuBLAS loaded at run time, and the matmul steps it takes (see cuda_blas.hpp).
#include "jit/cuda/cuda_blas.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>

#include "arrayjit/error.hpp"

namespace aj::cuda {

namespace {

struct BlasLoad {
  BlasApi api{};
  bool ok = false;
  std::string why;
};

BlasLoad load_blas() {
  BlasLoad d;
  if (const char* e = std::getenv("AJ_CUDA_BLAS"); e && std::string(e) == "0") {
    d.why = "cuBLAS turned off (AJ_CUDA_BLAS=0)";
    return d;
  }
  std::string tried;
  void* lib = open_toolkit_library({"libcublas.so.13", "libcublas.so.12"}, &d.api.path, &tried);
  if (!lib) {
    d.why = "cuBLAS not found (libcublas.so.13/.12 searched in " + tried + ")";
    return d;
  }
  std::string missing;
  BlasApi& a = d.api;
  resolve(lib, a.cublasCreate_v2, "cublasCreate_v2", missing);
  resolve(lib, a.cublasDestroy_v2, "cublasDestroy_v2", missing);
  resolve(lib, a.cublasSetStream_v2, "cublasSetStream_v2", missing);
  resolve(lib, a.cublasSetMathMode, "cublasSetMathMode", missing);
  resolve(lib, a.cublasGetStatusString, "cublasGetStatusString", missing);
  resolve(lib, a.cublasSgemmStridedBatched, "cublasSgemmStridedBatched", missing);
  resolve(lib, a.cublasDgemmStridedBatched, "cublasDgemmStridedBatched", missing);
  resolve(lib, a.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx", missing);
  if (!missing.empty()) {
    d.why = d.api.path + " lacks " + missing;
    return d;
  }
  d.ok = true;
  return d;
}

const BlasLoad& loaded() {
  static const BlasLoad l = load_blas();
  return l;
}

std::atomic<BlasTest> g_test_mode{BlasTest::real};
std::atomic<const BlasApi*> g_test_api{nullptr};

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

// One operand as cuBLAS sees it: rows x cols column-major with leading
// dimension ld, or its transpose. `r`, `c`: the operand's row and column
// extents in the row-major product; rs, cs: their element strides. We want
// the column-major (cols x rows) matrix, i.e. the transpose of ours.
struct Operand {
  int op = CUBLAS_OP_N;
  std::int64_t ld = 0;
};
std::optional<Operand> as_column_major(std::int64_t r, std::int64_t c, std::int64_t rs, std::int64_t cs) {
  // Column-major cols x rows with ld = rs: element (j, i) at j + i*rs, i.e. cs == 1.
  if (cs == 1 || c == 1) {
    const std::int64_t ld = r == 1 ? std::max<std::int64_t>(c, 1) : rs;
    if (ld >= std::max<std::int64_t>(c, 1)) return Operand{CUBLAS_OP_N, ld};
  }
  // Stored as column-major rows x cols (ld = cs), used transposed: rs == 1.
  if (rs == 1 || r == 1) {
    const std::int64_t ld = c == 1 ? std::max<std::int64_t>(r, 1) : cs;
    if (ld >= std::max<std::int64_t>(r, 1)) return Operand{CUBLAS_OP_T, ld};
  }
  return std::nullopt;
}

// One cuBLAS handle per (device, stream): a handle's workspace is its own,
// so GEMMs on two streams never share one. A few are kept; the oldest is
// destroyed past that (a caller making many streams).
struct Handles {
  std::mutex mu;
  struct Entry {
    int device;
    CUstream stream;
    cublasHandle_t handle;
  };
  std::deque<Entry> entries;
};
Handles& handles() {
  static auto* h = new Handles();  // never destroyed: handles outlive static destruction order
  return *h;
}
constexpr std::size_t kMaxHandles = 16;

void check(const BlasApi& api, cublasStatus_t st, const char* call) {
  if (st == 0) return;
  const char* s = api.cublasGetStatusString ? api.cublasGetStatusString(st) : nullptr;
  runtime_error(std::string("aj: cuBLAS ") + call + " failed: " + (s ? s : "status " + std::to_string(st)));
}

}  // namespace

const BlasApi* blas_api() {
  switch (g_test_mode.load()) {
    case BlasTest::off: return nullptr;
    case BlasTest::fake: return g_test_api.load();
    case BlasTest::real: break;
  }
  return loaded().ok ? &loaded().api : nullptr;
}

std::string blas_reason() {
  switch (g_test_mode.load()) {
    case BlasTest::off: return "cuBLAS off for testing";
    case BlasTest::fake: return {};
    case BlasTest::real: break;
  }
  return loaded().ok ? std::string() : loaded().why;
}

void set_blas_for_testing(BlasTest mode, const BlasApi* fake) {
  g_test_api.store(fake);
  g_test_mode.store(mode);
  std::lock_guard<std::mutex> lock(handles().mu);
  handles().entries.clear();  // a test's handles mean nothing to the next implementation
}

std::optional<Gemm> plan_gemm(DType t, const std::vector<std::int64_t>& shape, std::int64_t k, std::uint64_t a_ptr,
                              const std::vector<std::int64_t>& a_strides, std::int64_t a_offset, std::uint64_t b_ptr,
                              const std::vector<std::int64_t>& b_strides, std::int64_t b_offset,
                              std::uint64_t c_ptr) {
  if (t != DType::f32 && t != DType::f64 && t != DType::f16 && t != DType::bf16) return std::nullopt;
  const std::size_t nd = shape.size();
  if (nd < 2 || a_strides.size() != nd || b_strides.size() != nd) return std::nullopt;
  const std::int64_t m = shape[nd - 2], n = shape[nd - 1];
  if (m <= 0 || n <= 0 || k <= 0) return std::nullopt;  // nothing, or zeros: the generated kernel writes them
  if (m > kIntMax || n > kIntMax || k > kIntMax) return std::nullopt;
  // Batch axes: extent-1 axes dropped, neighbours that walk as one merged,
  // into at most two groups (inner: one strided-batched call; outer: a loop
  // of such calls), each with one stride per operand.
  struct Group {
    std::int64_t count = 1, sa = 0, sb = 0, sc = 0;
  };
  Group group[2];
  int g_at = -1;
  std::int64_t c_stride = m * n;  // C is contiguous
  for (std::size_t d = nd - 2; d-- > 0;) {
    const std::int64_t e = shape[d];
    if (e != 1) {
      Group* cur = g_at >= 0 ? &group[g_at] : nullptr;
      if (cur && a_strides[d] == cur->sa * cur->count && b_strides[d] == cur->sb * cur->count) {
        cur->count *= e;
      } else {
        if (++g_at > 1) return std::nullopt;
        group[g_at] = {e, a_strides[d], b_strides[d], c_stride};
      }
    }
    c_stride *= e;
  }
  const Group inner = group[0], outer = g_at >= 1 ? group[1] : Group{};
  if (inner.count > kIntMax || inner.sa < 0 || inner.sb < 0 || outer.sa < 0 || outer.sb < 0) return std::nullopt;
  const std::int64_t batch = inner.count, sa = inner.sa, sb = inner.sb;
  // C^T (n x m, ld n) = op(B^T) op(A^T): B^T is n x k from B's (k, n) axes, A^T is k x m.
  const auto bop = as_column_major(k, n, b_strides[nd - 2], b_strides[nd - 1]);
  const auto aop = as_column_major(m, k, a_strides[nd - 2], a_strides[nd - 1]);
  if (!aop || !bop || aop->ld > kIntMax || bop->ld > kIntMax) return std::nullopt;
  Gemm g;
  g.dtype = t;
  g.transa = bop->op;
  g.transb = aop->op;
  g.m = n;
  g.n = m;
  g.k = k;
  g.lda = bop->ld;
  g.ldb = aop->ld;
  g.ldc = n;
  g.stride_a = sb;
  g.stride_b = sa;
  g.stride_c = inner.count > 1 ? inner.sc : m * n;
  g.batch = batch;
  const auto item = static_cast<std::uint64_t>(itemsize(t));
  g.outer = outer.count;
  g.outer_a = outer.sb * static_cast<std::int64_t>(item);
  g.outer_b = outer.sa * static_cast<std::int64_t>(item);
  g.outer_c = outer.sc * static_cast<std::int64_t>(item);
  g.a = b_ptr + static_cast<std::uint64_t>(b_offset) * item;
  g.b = a_ptr + static_cast<std::uint64_t>(a_offset) * item;
  g.c = c_ptr;
  return g;
}

void run_gemm(const Gemm& g, int device, CUstream stream) {
  const BlasApi* api = blas_api();
  if (!api) runtime_error("aj: cuBLAS is unavailable: " + blas_reason());
  cublasHandle_t h = nullptr;
  Handles& hs = handles();
  std::lock_guard<std::mutex> lock(hs.mu);  // held through the enqueue: a handle is not for two threads at once
  for (const auto& e : hs.entries) {
    if (e.device == device && e.stream == stream) h = e.handle;
  }
  if (!h) {
    check(*api, api->cublasCreate_v2(&h), "cublasCreate");
    if (api->cublasSetMathMode) check(*api, api->cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(*api, api->cublasSetStream_v2(h, stream), "cublasSetStream");
    if (hs.entries.size() >= kMaxHandles) {
      api->cublasDestroy_v2(hs.entries.front().handle);
      hs.entries.pop_front();
    }
    hs.entries.push_back({device, stream, h});
  }
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb), ldc = static_cast<int>(g.ldc);
  const int batch = static_cast<int>(g.batch);
  for (std::int64_t o = 0; o < g.outer; ++o) {
    const std::uint64_t A = g.a + static_cast<std::uint64_t>(o * g.outer_a);
    const std::uint64_t B = g.b + static_cast<std::uint64_t>(o * g.outer_b);
    const std::uint64_t C = g.c + static_cast<std::uint64_t>(o * g.outer_c);
    switch (g.dtype) {
      case DType::f32: {
        const float one = 1.f, zero = 0.f;
        check(*api,
              api->cublasSgemmStridedBatched(h, g.transa, g.transb, m, n, k, &one, reinterpret_cast<const float*>(A),
                                             lda, g.stride_a, reinterpret_cast<const float*>(B), ldb, g.stride_b,
                                             &zero, reinterpret_cast<float*>(C), ldc, g.stride_c, batch),
              "cublasSgemmStridedBatched");
        break;
      }
      case DType::f64: {
        const double one = 1.0, zero = 0.0;
        check(*api,
              api->cublasDgemmStridedBatched(h, g.transa, g.transb, m, n, k, &one,
                                             reinterpret_cast<const double*>(A), lda, g.stride_a,
                                             reinterpret_cast<const double*>(B), ldb, g.stride_b, &zero,
                                             reinterpret_cast<double*>(C), ldc, g.stride_c, batch),
              "cublasDgemmStridedBatched");
        break;
      }
      case DType::f16:
      case DType::bf16: {
        const float one = 1.f, zero = 0.f;
        const int type = g.dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
        check(*api,
              api->cublasGemmStridedBatchedEx(h, g.transa, g.transb, m, n, k, &one, reinterpret_cast<const void*>(A),
                                              type, lda, g.stride_a, reinterpret_cast<const void*>(B), type, ldb,
                                              g.stride_b, &zero, reinterpret_cast<void*>(C), type, ldc, g.stride_c,
                                              batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmStridedBatchedEx");
        break;
      }
      default: internal_error("run_gemm: a dtype cuBLAS does not take");
    }
  }
}

}  // namespace aj::cuda

// Op::Linalg's result shapes (graph/library.hpp): one rule for tracing,
// verification, the extent templates and every backend; the names of
// Op::Collective's routines.
#include <algorithm>

#include "graph/library.hpp"

namespace aj {

const char* linalg_name(LinalgKind kind) {
  switch (kind) {
    case LinalgKind::cholesky: return "cholesky";
    case LinalgKind::lu: return "lu";
    case LinalgKind::solve: return "solve";
    case LinalgKind::triangular: return "triangular_solve";
    case LinalgKind::qr: return "qr";
    case LinalgKind::svd: return "svd";
    case LinalgKind::eigh: return "eigh";
  }
  return "linalg";
}

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::send: return "send";
    case CollectiveKind::recv: return "recv";
  }
  return "collective";
}

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::sum: return "sum";
    case ReduceKind::mean: return "mean";
    case ReduceKind::max: return "max";
    case ReduceKind::min: return "min";
    case ReduceKind::prod: return "prod";
  }
  return "?";
}

const char* linalg_op_name(LinalgKind kind, std::int64_t flags) {
  return kind == LinalgKind::solve && (flags & linalg_flag::kNamedInv) ? "inv" : linalg_name(kind);
}

Shape linalg_shape(LinalgKind kind, std::int64_t flags, const Shape& a, const Shape* b) {
  using namespace linalg_flag;
  std::vector<std::int64_t> d(a.begin(), a.end() - 2);
  const std::int64_t m = a[a.ndim() - 2], n = a[a.ndim() - 1], k = std::min(m, n);
  auto matrix = [&](std::int64_t rows, std::int64_t cols) {
    d.push_back(rows);
    d.push_back(cols);
    return Shape(d);
  };
  switch (kind) {
    case LinalgKind::cholesky: return matrix(n, n);
    case LinalgKind::lu: return matrix(2 + m, std::max(m, n));
    case LinalgKind::solve:
    case LinalgKind::triangular: return matrix(n, (*b)[b->ndim() - 1]);
    case LinalgKind::qr: {
      const std::int64_t q = (flags & kComplete) ? m : k;
      return matrix(m + q, std::max(q, n));
    }
    case LinalgKind::svd: {
      if (!(flags & kVectors)) {
        d.push_back(k);
        return Shape(d);
      }
      const std::int64_t u = (flags & kFull) ? m : k, v = (flags & kFull) ? n : k;
      return matrix(m + 1 + v, std::max(u, n));
    }
    case LinalgKind::eigh:
      if (!(flags & kVectors)) {
        d.push_back(n);
        return Shape(d);
      }
      return matrix(n + 1, n);
  }
  return Shape(d);
}

}  // namespace aj

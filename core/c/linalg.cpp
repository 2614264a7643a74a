// The C API's numpy.linalg (arrayjit/arrayjit.h, "numpy.linalg"): each is
// the C++ function of arrayjit/linalg.hpp behind c_make (one result) or
// c_make_many (a decomposition's parts, in the struct's order).
#include <optional>
#include <string>
#include <vector>

#include "arrayjit/arrayjit.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {

namespace la = aj::linalg;

la::Ord ord_arg(aj_norm_ord ord, double p) {
  switch (ord) {
    case AJ_ORD_DEFAULT: return la::Ord();
    case AJ_ORD_P: return la::Ord(p);
    case AJ_ORD_FRO: return la::Ord("fro");
    case AJ_ORD_NUC: return la::Ord("nuc");
  }
  c_error("unknown norm order " + std::to_string(static_cast<int>(ord)));
}

}  // namespace

}  // namespace aj::c_api

using namespace aj::c_api;

aj_status aj_linalg_cholesky(aj_array a, int upper, aj_array* out) {
  return c_make("aj_linalg_cholesky", out, [&] { return la::cholesky(arg(a, "a"), upper != 0); });
}
aj_status aj_linalg_solve(aj_array a, aj_array b, aj_array* out) {
  return c_make("aj_linalg_solve", out, [&] { return la::solve(arg(a, "a"), arg(b, "b")); });
}
aj_status aj_linalg_inv(aj_array a, aj_array* out) {
  return c_make("aj_linalg_inv", out, [&] { return la::inv(arg(a, "a")); });
}
aj_status aj_linalg_triangular_solve(aj_array a, aj_array b, int lower, int transpose_a, int unit_diagonal,
                                     aj_array* out) {
  return c_make("aj_linalg_triangular_solve", out, [&] {
    return la::triangular_solve(arg(a, "a"), arg(b, "b"), lower != 0, transpose_a != 0, unit_diagonal != 0);
  });
}
aj_status aj_linalg_lu_factor(aj_array a, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_lu_factor", outs, nouts, [&] {
    la::LUFactor f = la::lu_factor(arg(a, "a"));
    return std::vector<aj::Array>{f.lu, f.pivots, f.permutation};
  });
}
aj_status aj_linalg_lu(aj_array a, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_lu", outs, nouts, [&] {
    la::PLU f = la::lu(arg(a, "a"));
    return std::vector<aj::Array>{f.p, f.l, f.u};
  });
}
aj_status aj_linalg_qr(aj_array a, aj_qr_mode mode, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_qr", outs, nouts, [&] {
    if (mode != AJ_QR_REDUCED && mode != AJ_QR_COMPLETE && mode != AJ_QR_R) {
      c_error("unknown qr mode " + std::to_string(static_cast<int>(mode)));
    }
    const la::QR f = la::qr(arg(a, "a"), static_cast<la::QRMode>(mode));
    if (mode == AJ_QR_R) return std::vector<aj::Array>{f.r};
    return std::vector<aj::Array>{f.q, f.r};
  });
}
aj_status aj_linalg_svd(aj_array a, int full_matrices, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_svd", outs, nouts, [&] {
    la::SVD f = la::svd(arg(a, "a"), full_matrices != 0);
    return std::vector<aj::Array>{f.u, f.s, f.vh};
  });
}
aj_status aj_linalg_svdvals(aj_array a, aj_array* out) {
  return c_make("aj_linalg_svdvals", out, [&] { return la::svdvals(arg(a, "a")); });
}
aj_status aj_linalg_eigh(aj_array a, int upper, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_eigh", outs, nouts, [&] {
    la::Eigh e = la::eigh(arg(a, "a"), upper != 0);
    return std::vector<aj::Array>{e.eigenvalues, e.eigenvectors};
  });
}
aj_status aj_linalg_eigvalsh(aj_array a, int upper, aj_array* out) {
  return c_make("aj_linalg_eigvalsh", out, [&] { return la::eigvalsh(arg(a, "a"), upper != 0); });
}
aj_status aj_linalg_det(aj_array a, aj_array* out) {
  return c_make("aj_linalg_det", out, [&] { return la::det(arg(a, "a")); });
}
aj_status aj_linalg_slogdet(aj_array a, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_slogdet", outs, nouts, [&] {
    la::SlogDet d = la::slogdet(arg(a, "a"));
    return std::vector<aj::Array>{d.sign, d.logabsdet};
  });
}
aj_status aj_linalg_lstsq(aj_array a, aj_array b, const double* rcond, aj_array* outs, int32_t nouts) {
  return c_make_many("aj_linalg_lstsq", outs, nouts, [&] {
    la::Lstsq r = la::lstsq(arg(a, "a"), arg(b, "b"), rcond ? std::optional<double>(*rcond) : std::nullopt);
    return std::vector<aj::Array>{r.x, r.residuals, r.rank, r.s};
  });
}
aj_status aj_linalg_pinv(aj_array a, double rcond, aj_array* out) {
  return c_make("aj_linalg_pinv", out, [&] { return la::pinv(arg(a, "a"), rcond); });
}
aj_status aj_linalg_norm(aj_array x, aj_norm_ord ord, double p, const int32_t* axes, int32_t naxes, int keepdims,
                         aj_array* out) {
  return c_make("aj_linalg_norm", out, [&] {
    std::optional<std::vector<int>> axis;
    if (naxes != 0 || axes) axis = ints_arg(axes, naxes, "axes");
    return la::norm(arg(x, "x"), ord_arg(ord, p), axis, keepdims != 0);
  });
}
aj_status aj_linalg_vector_norm(aj_array x, double ord, const int32_t* axes, int32_t naxes, int keepdims,
                                aj_array* out) {
  return c_make("aj_linalg_vector_norm", out, [&] {
    return la::vector_norm(arg(x, "x"), ord, axes_arg(axes, naxes), keepdims != 0);
  });
}
aj_status aj_linalg_matrix_norm(aj_array x, aj_norm_ord ord, double p, int keepdims, aj_array* out) {
  return c_make("aj_linalg_matrix_norm", out, [&] {
    return la::matrix_norm(arg(x, "x"), ord == AJ_ORD_DEFAULT ? la::Ord("fro") : ord_arg(ord, p), keepdims != 0);
  });
}
aj_status aj_linalg_matrix_power(aj_array a, int64_t n, aj_array* out) {
  return c_make("aj_linalg_matrix_power", out, [&] { return la::matrix_power(arg(a, "a"), n); });
}
aj_status aj_linalg_matrix_rank(aj_array a, const double* tol, aj_array* out) {
  return c_make("aj_linalg_matrix_rank", out, [&] {
    return la::matrix_rank(arg(a, "a"), tol ? std::optional<double>(*tol) : std::nullopt);
  });
}

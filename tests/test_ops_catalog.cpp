// docs/ops.md, the list of every op and public function (issue 35 point 7),
// is generated here: the elementwise rows from arrayjit/ops.def (their
// dtypes from the row's flags, their derivative from autodiff's table, their
// C function from the row's Api), the rest from the catalog below. The test
// fails when the file differs from what it generates, and when a C function
// the list names is not exported by the library; AJ_WRITE_OPS_MD=1 rewrites
// the file.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/op.hpp"
#include "core/autodiff/rules.hpp"

namespace {

// A function composed of ops: its C++ name, header, the NumPy / array API
// (or JAX, PyTorch) name, whether it has a derivative ("yes": in its float
// operands; "-": an integer or bool result, or no float operand), the C
// function ("" if none yet).
struct Entry {
  const char* cpp;
  const char* header;
  const char* numpy;
  const char* grad;
  const char* c;
};

// clang-format off
const Entry kCatalog[] = {
    // creation
    {"zeros, ones, full", "array.hpp", "zeros, ones, full", "-", "aj_zeros, aj_ones, aj_full"},
    {"zeros_like, ones_like, full_like", "array.hpp", "zeros_like, ones_like, full_like", "-", "aj_zeros_like, aj_ones_like, aj_full_like"},
    {"arange", "array.hpp", "arange", "-", "aj_arange, aj_arange_range"},
    {"linspace", "array.hpp", "linspace", "-", "aj_linspace"},
    {"logspace", "shape_functions.hpp", "logspace", "-", "aj_logspace"},
    {"eye", "array.hpp", "eye", "-", "aj_eye"},
    {"from_vector, borrow, lend", "array.hpp", "asarray, frombuffer", "-", "aj_array_from_data, aj_array_borrow, aj_array_lend"},
    {"scalar", "array.hpp", "a Python scalar (JAX: a weakly typed array)", "-", "aj_scalar_f64, aj_scalar_i64, aj_scalar_bool"},
    // elementwise compositions
    {"true_divide, floor_divide, logical_xor", "array.hpp", "true_divide, floor_divide, logical_xor", "yes", "aj_true_divide, aj_floor_divide, aj_logical_xor"},
    {"where", "array.hpp", "where", "yes", "aj_where"},
    {"clip", "array.hpp", "clip", "yes", "aj_clip"},
    {"isnan, isinf, isfinite, signbit", "array.hpp", "isnan, isinf, isfinite, signbit", "-", "aj_isnan, aj_isinf, aj_isfinite, aj_signbit"},
    {"square, reciprocal", "array.hpp", "square, reciprocal", "yes", "aj_square, aj_reciprocal"},
    {"nan_to_num", "array.hpp", "nan_to_num", "yes", "aj_nan_to_num"},
    {"astype", "array.hpp", "astype", "yes", "aj_astype"},
    {"stop_gradient, sum_to_shape", "autodiff.hpp", "jax.lax.stop_gradient, (sum over broadcast axes)", "yes", "aj_stop_gradient, aj_sum_to_shape"},
    {"relu, gelu, gelu_tanh, silu, softplus", "nn.hpp", "jax.nn.relu, gelu, silu, softplus", "yes", "aj_relu, aj_gelu, aj_gelu_tanh, aj_silu, aj_softplus"},
    {"softmax, log_softmax, logsumexp", "nn.hpp", "scipy.special.softmax, log_softmax, logsumexp", "yes", "aj_softmax, aj_log_softmax, aj_logsumexp"},
    // reductions and statistics
    {"sum, prod, mean, max, min", "array.hpp", "sum, prod, mean, max, min", "yes", "aj_sum, aj_prod, aj_mean, aj_max, aj_min"},
    {"all, any", "array.hpp", "all, any", "-", "aj_all, aj_any"},
    {"argmax, argmin", "array.hpp", "argmax, argmin", "-", "aj_argmax, aj_argmin"},
    {"var, std", "statistics.hpp", "var, std", "yes", "aj_var, aj_std"},
    {"nansum, nanmean, nanmax, nanmin", "statistics.hpp", "nansum, nanmean, nanmax, nanmin", "yes", "aj_nansum, aj_nanmean, aj_nanmax, aj_nanmin"},
    {"count_nonzero", "statistics.hpp", "count_nonzero", "-", "aj_count_nonzero"},
    {"diff", "statistics.hpp", "diff", "yes", "aj_diff"},
    {"isclose, allclose, array_equal", "statistics.hpp", "isclose, allclose, array_equal", "-", "aj_isclose, aj_allclose, aj_array_equal"},
    {"quantile, percentile, median", "statistics.hpp", "quantile, percentile, median", "yes", "aj_quantile, aj_percentile, aj_median"},
    // scans and sorting
    {"cumsum, cumprod, cummax, cummin, logcumsumexp", "scan_sort.hpp", "cumsum, cumprod, maximum.accumulate, minimum.accumulate, logaddexp.accumulate", "yes", "aj_cumsum, aj_cumprod, aj_cummax, aj_cummin, aj_logcumsumexp"},
    {"cumulative_sum", "scan_sort.hpp", "cumulative_sum (array API)", "yes", "aj_cumulative_sum"},
    {"sort, argsort", "scan_sort.hpp", "sort, argsort (stable)", "yes", "aj_sort, aj_argsort"},
    {"partition, argpartition", "scan_sort.hpp", "partition, argpartition", "yes", "aj_partition, aj_argpartition"},
    {"topk", "scan_sort.hpp", "jax.lax.top_k", "yes", "aj_topk"},
    // shapes and views
    {"reshape, transpose, broadcast_to, expand_dims, squeeze", "array.hpp", "reshape, transpose / permute_dims, broadcast_to, expand_dims, squeeze", "yes", "aj_reshape, aj_transpose, aj_broadcast_to, aj_expand_dims, aj_squeeze"},
    {"slice", "array.hpp", "a[start:stop:step]", "yes", "aj_slice, aj_slice_axis"},
    {"concatenate, stack", "array.hpp", "concatenate / concat, stack", "yes", "aj_concatenate, aj_stack"},
    {"flip, swapaxes, moveaxis", "shape_functions.hpp", "flip, swapaxes, moveaxis", "yes", "aj_flip, aj_swapaxes, aj_moveaxis"},
    {"broadcast_arrays, meshgrid", "shape_functions.hpp", "broadcast_arrays, meshgrid", "yes", "aj_broadcast_arrays, aj_meshgrid"},
    {"tile, repeat", "shape_functions.hpp", "tile, repeat", "yes", "aj_tile, aj_repeat"},
    {"split, array_split, unstack", "shape_functions.hpp", "split, array_split, unstack", "yes", "aj_split, aj_array_split, aj_unstack"},
    {"tril, triu, diag, diagonal", "shape_functions.hpp", "tril, triu, diag, diagonal", "yes", "aj_tril, aj_triu, aj_diag, aj_diagonal"},
    {"linalg::trace", "shape_functions.hpp", "trace (linalg.trace's axes)", "yes", "aj_trace"},
    {"atleast_1d, atleast_2d, atleast_3d", "shape_functions.hpp", "atleast_1d, atleast_2d, atleast_3d", "yes", "aj_atleast_1d, aj_atleast_2d, aj_atleast_3d"},
    // products
    {"matmul", "array.hpp", "matmul", "yes", "aj_matmul"},
    {"outer, inner, dot, vdot, kron", "shape_functions.hpp", "outer, inner, dot, vdot, kron", "yes", "aj_outer, aj_inner, aj_dot, aj_vdot, aj_kron"},
    {"tensordot, cross", "shape_functions.hpp", "tensordot, cross", "yes", "aj_tensordot, aj_cross"},
    {"einsum, einsum_path", "einsum.hpp", "einsum, einsum_path", "yes", "aj_einsum"},
    // convolution, pooling, resizing (compositions: views, one concatenation, matmul)
    {"conv_general", "conv.hpp", "jax.lax.conv_general_dilated", "yes", "aj_conv_general"},
    {"conv1d, conv2d, conv3d", "conv.hpp", "torch.nn.functional.conv1d, conv2d, conv3d", "yes", ""},
    {"conv_transpose1d, conv_transpose2d, conv_transpose3d", "conv.hpp", "torch.nn.functional.conv_transpose1d, 2d, 3d", "yes", "aj_conv_transpose"},
    {"max_pool, avg_pool", "conv.hpp", "torch.nn.functional.max_pool1d/2d/3d, avg_pool1d/2d/3d", "yes", "aj_max_pool, aj_avg_pool"},
    {"reduce_window", "conv.hpp", "jax.lax.reduce_window", "yes", "aj_reduce_window"},
    {"interpolate", "conv.hpp", "torch.nn.functional.interpolate (nearest, linear)", "yes", "aj_interpolate"},
    // linear algebra (LAPACK library steps; host only for now)
    {"linalg::solve, inv, triangular_solve (solve_triangular)", "linalg.hpp", "linalg.solve, inv, scipy.linalg.solve_triangular", "yes", "aj_linalg_solve, aj_linalg_inv, aj_linalg_triangular_solve"},
    {"linalg::cholesky, lu_factor, lu, qr", "linalg.hpp", "linalg.cholesky, scipy.linalg.lu_factor, lu, linalg.qr", "yes", "aj_linalg_cholesky, aj_linalg_lu_factor, aj_linalg_lu, aj_linalg_qr"},
    {"linalg::svd, svdvals, eigh, eigvalsh", "linalg.hpp", "linalg.svd, svdvals, eigh, eigvalsh", "yes", "aj_linalg_svd, aj_linalg_svdvals, aj_linalg_eigh, aj_linalg_eigvalsh"},
    {"linalg::det, slogdet, lstsq, pinv, matrix_power, matrix_rank", "linalg.hpp", "linalg.det, slogdet, lstsq, pinv, matrix_power, matrix_rank", "yes", "aj_linalg_det, aj_linalg_slogdet, aj_linalg_lstsq, aj_linalg_pinv, aj_linalg_matrix_power, aj_linalg_matrix_rank"},
    {"linalg::norm, vector_norm, matrix_norm", "linalg.hpp", "linalg.norm, vector_norm, matrix_norm", "yes", "aj_linalg_norm, aj_linalg_vector_norm, aj_linalg_matrix_norm"},
    // indexing
    {"take, take_along_axis", "indexing.hpp", "take, take_along_axis", "yes", "aj_take, aj_take_along_axis"},
    {"scatter_add", "indexing.hpp", "add.at", "yes", "aj_scatter_add"},
    {"scatter, scatter_add_along_axis, put_along_axis", "indexing.hpp", "a[i] = v, put_along_axis", "yes", "aj_scatter, aj_scatter_add_along_axis, aj_put_along_axis"},
    {"slice_update, slice_add", "indexing.hpp", "jax a.at[...].set / .add", "yes", "aj_slice_update, aj_slice_add"},
    {"pad, roll", "indexing.hpp", "pad, roll", "yes", "aj_pad, aj_roll"},
    {"one_hot", "indexing.hpp", "jax.nn.one_hot", "-", "aj_one_hot"},
    // search and data-dependent shapes
    {"searchsorted, digitize", "search.hpp", "searchsorted, digitize", "-", "aj_searchsorted, aj_digitize"},
    {"bincount", "search.hpp", "bincount", "yes", "aj_bincount"},
    {"nonzero, argwhere", "search.hpp", "nonzero, argwhere", "-", "aj_nonzero, aj_argwhere"},
    {"unique, masked_select", "search.hpp", "unique, torch.masked_select", "yes", "aj_unique, aj_masked_select"},
    // random
    {"random::uniform, normal", "array.hpp", "random.uniform, normal", "-", "aj_random_uniform, aj_random_normal"},
    {"random::randint, permutation, bernoulli", "array.hpp", "random.randint, permutation, jax.random.bernoulli", "-", "aj_random_randint, aj_random_permutation, aj_random_bernoulli"},
    {"random::exponential, gumbel, truncated_normal", "random.hpp", "random.exponential, gumbel, jax.random.truncated_normal", "-", "aj_random_exponential, aj_random_gumbel, aj_random_truncated_normal"},
    {"random::gamma, beta, poisson", "random.hpp", "random.gamma, beta, poisson", "-", "aj_random_gamma, aj_random_beta, aj_random_poisson"},
    {"random::categorical, multinomial, choice, shuffle", "random.hpp", "jax.random.categorical, random.multinomial, choice, shuffle", "-", "aj_random_categorical, aj_random_multinomial, aj_random_choice, aj_random_shuffle"},
    {"random::Key, key, split, fold_in, bits; uniform, normal, bernoulli of a Key", "random.hpp", "jax.random.key, split, fold_in, bits, uniform, normal, bernoulli", "-", "aj_random_key, aj_random_split, aj_random_fold_in, aj_random_bits, aj_random_key_uniform, aj_random_key_normal, aj_random_key_bernoulli"},
};
// clang-format on

// The NumPy name of an ops.def row's function where it is not the same.
std::string numpy_name(const std::string& fn) {
  if (fn == "neg") return "negative";
  if (fn == "mod") return "remainder (mod)";
  if (fn == "pow") return "power (pow)";
  if (fn == "logical_not" || fn == "not") return "logical_not";
  return fn;
}

struct Row {
  aj::Op op;
  const char* name;
  const char* api;
  const char* fn;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
#define AJ_CATALOG_ROW(e, name, arity, cat, flags, api, fn, libm, acc) Row{aj::Op::e, name, #api, #fn},
      AJ_OPS(AJ_CATALOG_ROW)
#undef AJ_CATALOG_ROW
  };
  return r;
}

std::string dtypes_of(aj::Op op) {
  using namespace aj;
  if (op_has(op, opflag::Logical)) return "bool";
  if (op_has(op, opflag::Compare)) return "any; bool result";
  if (op_has(op, opflag::FloatOnly)) return "floats (integers, bool: f64)";
  if (op_has(op, opflag::IntegerOnly)) {
    const bool logic = op == Op::BitNot || op == Op::BitAnd || op == Op::BitOr || op == Op::BitXor;
    return logic ? "integers and bool (bool: logic; floats refused)" : "integers and bool (bool: as i8; floats refused)";
  }
  return op_category(op) == OpCategory::Unary ? "numbers" : "numbers (bool: `maximum`/`minimum` as or/and)";
}

std::string generate() {
  std::ostringstream os;
  os << "# Every op and public function\n\n"
        "Generated by `tests/test_ops_catalog.cpp` (do not edit by hand: "
        "`AJ_WRITE_OPS_MD=1 ./build/aj_tests -tc=\"ops catalog*\"` rewrites it; the test fails\n"
        "when this file is stale, or when a C function it names is not exported). Semantics:\n"
        "[semantics.md](semantics.md). Every op runs on every backend: the host JIT, the kernel\n"
        "interpreter, the reference interpreter and CUDA (generated kernels and library steps),\n"
        "but for linear algebra, which is not on CUDA yet (an error there, no silent copy);\n"
        "an op is one graph node or a composition of them, so what holds for the nodes holds\n"
        "for it. Derivative: \"yes\" in its floating-point operands (reverse and forward mode),\n"
        "\"0\": defined as zero (piecewise constant), \"-\": no float result.\n\n";
  os << "## Elementwise ops (one row of arrayjit/ops.def each; C++ in arrayjit/array.hpp)\n\n";
  os << "| C++ `aj::` | NumPy / array API | dtypes | derivative | C |\n| --- | --- | --- | --- | --- |\n";
  for (const Row& r : rows()) {
    const std::string api = r.api;
    if (api != "unary" && api != "binary" && api != "c_binary") continue;
    const std::string fn = r.fn;
    const bool bool_result = aj::op_has(r.op, aj::opflag::Compare) || aj::op_has(r.op, aj::opflag::Logical);
    const aj::autodiff::Rule* rule = aj::autodiff::rule_for(r.op);
    const std::string grad = bool_result ? "-" : rule ? "yes" : "0";
    const std::string cpp = api == "c_binary" ? "operator (`" + fn + "`)" : "`" + fn + "`";
    os << "| " << cpp << " | `" << numpy_name(fn) << "` | " << dtypes_of(r.op) << " | " << grad << " | `aj_" << fn
       << "` |\n";
  }
  os << "\n## Functions (compositions of ops, and the other graph nodes)\n\n";
  os << "| C++ `aj::` | header `arrayjit/` | NumPy / array API (or JAX, PyTorch) | derivative | C |\n"
        "| --- | --- | --- | --- | --- |\n";
  for (const Entry& e : kCatalog) {
    os << "| " << e.cpp << " | " << e.header << " | " << e.numpy << " | " << e.grad << " | "
       << (*e.c ? e.c : "(none yet)") << " |\n";
  }
  return os.str();
}

std::vector<std::string> c_names() {
  std::vector<std::string> names;
  for (const Row& r : rows()) {
    const std::string api = r.api;
    if (api == "unary" || api == "binary" || api == "c_binary") names.push_back(std::string("aj_") + r.fn);
  }
  for (const Entry& e : kCatalog) {
    std::stringstream ss(e.c);
    std::string n;
    while (std::getline(ss, n, ',')) {
      n.erase(0, n.find_first_not_of(' '));
      if (!n.empty()) names.push_back(n);
    }
  }
  return names;
}

}  // namespace

TEST_CASE("ops catalog: docs/ops.md is the generated list, and every C function it names is exported") {
  const std::string text = generate();
  const std::string path = std::string(AJ_TESTS_DIR) + "/../docs/ops.md";
  if (const char* w = std::getenv("AJ_WRITE_OPS_MD"); w && std::string(w) == "1") {
    std::ofstream(path) << text;
  }
  std::ifstream in(path);
  std::stringstream have;
  have << in.rdbuf();
  CHECK_MESSAGE(have.str() == text, "docs/ops.md is stale: run AJ_WRITE_OPS_MD=1 ./build/aj_tests -tc=\"ops catalog*\"");
  std::set<std::string> seen;
  for (const std::string& n : c_names()) {
    CAPTURE(n);
    CHECK(seen.insert(n).second);  // each C function listed once
    CHECK(dlsym(RTLD_DEFAULT, n.c_str()) != nullptr);
  }
  // Every ops.def row with a public function is in the list, and so is
  // every function of the C header's elementwise lists.
  int listed = 0;
  for (const Row& r : rows()) {
    if (std::string(r.api) == "none") continue;
    ++listed;
    CHECK(text.find(std::string("`aj_") + r.fn + "`") != std::string::npos);
  }
  CHECK(listed >= 60);
#define AJ_CATALOG_C(name) CHECK(text.find("aj_" #name) != std::string::npos);
  AJ_UNARY_OPS(AJ_CATALOG_C)
  AJ_BINARY_OPS(AJ_CATALOG_C)
  AJ_TERNARY_OPS(AJ_CATALOG_C)
  AJ_REDUCE_OPS(AJ_CATALOG_C)
#undef AJ_CATALOG_C
}

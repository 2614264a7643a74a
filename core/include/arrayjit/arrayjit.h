/* arrayjit's C API (C99). Link libarrayjit.so; only aj_* symbols are exported.
 *
 * A system written in C, or any language with a C FFI, drives arrayjit through
 * this header: it makes arrays, records ops on them (lazily, as the C++ API
 * does), evaluates, reads results out, and traces functions it replays with
 * new inputs (aj_function).
 *
 * ---- Conventions (they hold for every function below) ----------------------
 *
 * Status. Every call that can fail returns an aj_status; on failure
 * aj_last_error() gives the message (per thread, valid until this thread's
 * next failing call) and nothing changed: no handle was made or released.
 * No C++ exception ever crosses this boundary (out of memory included).
 *
 * Handles. aj_array and aj_function are small values (a 64-bit id: a slot in
 * a handle table and a generation), not pointers into arrayjit. Copying the
 * value does not make a new handle. A zeroed handle is the null handle.
 *  - A handle written to an `out` parameter is new and owned by the caller,
 *    who releases it exactly once (aj_array_release, aj_function_release).
 *    On failure `*out` is set to the null handle.
 *  - A handle passed as an argument is borrowed for the duration of the call;
 *    the call never releases it (the few that consume a handle say so).
 *  - A released handle, a copy of one, a handle of the wrong kind or a
 *    made-up value is detected (always, not only in debug builds) and gives
 *    AJ_ERROR_HANDLE; releasing twice is such an error. Generations are 32
 *    bits and freed slots are reused oldest first, so a stale handle could
 *    only alias after 2^32 reuses of its slot.
 *  - Nothing is pinned beyond its handles: a buffer goes back to arrayjit's
 *    pool the moment the last handle (or lazy array) using it is released,
 *    never in a deferred sweep.
 *  - The handle table may be used from several threads at once; the arrays
 *    behind the handles follow the C++ API's threading rules.
 *
 * Shapes, axes. A shape is `(const int64_t* shape, int32_t ndim)`, ndim at
 * most 64 (as in C++ and NumPy); an axis list `(const int32_t* axes, int32_t
 * naxes)`; negative axes count from the end. Strides passed in or out of this
 * header are in BYTES. Foreign memory (views, DLPack) is checked before it
 * is read: an element span that overflows int64, exceeds 2^62 bytes or
 * leaves the address space, an offset that wraps the pointer, or NULL data
 * for a nonempty shape is an error (AJ_ERROR_USER), and nothing is taken.
 *
 * Structs passed in start with `size_t struct_size`, set by the caller to
 * sizeof(the struct) as its header declares it, so fields can be appended
 * without breaking callers compiled against an older header.
 */
#ifndef ARRAYJIT_H
#define ARRAYJIT_H

#include <stddef.h>
#include <stdint.h>

#include "arrayjit/ops.def" /* the op table: the elementwise functions below come from it */

#if defined(__GNUC__)
#define AJ_C_API __attribute__((visibility("default")))
#else
#define AJ_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------------ */

/* The C API's version: a program built against this header runs with a
 * library whose aj_api_version() has the same major and a minor >= its own
 * (new functions and appended struct fields raise the minor). */
#define AJ_API_VERSION_MAJOR 1
#define AJ_API_VERSION_MINOR 11
#define AJ_API_VERSION ((AJ_API_VERSION_MAJOR << 16) | AJ_API_VERSION_MINOR)

AJ_C_API uint32_t aj_api_version(void); /* (major << 16) | minor */
AJ_C_API const char* aj_version(void);  /* the library's version, "0.1.0" (static storage) */
/* What host code runs on, one "name: value" line each (aj::jit::host_info):
 * the CPU's model, the instruction-set level used, the JIT's target and
 * vector width, the matmul's BLAS kernel. Record it with any benchmark
 * figure. Static storage, made at the first call; never NULL (a bad
 * AJ_CPU_LEVEL gives "error: " and the message). Since C API 1.1. */
AJ_C_API const char* aj_host_info(void);

/* ---- status, errors ------------------------------------------------------------ */

/* Codes of the ABI are fixed-width integers (an enum's size is the
 * compiler's choice in C, and a value outside it is undefined in C++); the
 * enums only name the values. */
typedef int32_t aj_status;
enum aj_status_code {
  AJ_OK = 0,
  AJ_ERROR_USER = 1,     /* a bad argument or request; nothing changed */
  AJ_ERROR_RUNTIME = 2,  /* out of memory, compile failure, device error */
  AJ_ERROR_INTERNAL = 3, /* a bug in arrayjit: please report it */
  AJ_ERROR_HANDLE = 4    /* a null, released, stale or made-up handle, or one of the wrong kind */
};

/* The message of this thread's last failed call ("" when none failed). The
 * string belongs to arrayjit; it stays valid until this thread's next failing
 * call. */
AJ_C_API const char* aj_last_error(void);
/* Sets this thread's last error message (since C API 1.5): a callback (a
 * traced function's, a derivative rule's) that fails says why, and the
 * caller's error message includes it. NULL clears it. */
AJ_C_API void aj_set_error(const char* message);
/* The caller's own source line (since C API 1.6): until it is set again,
 * the ops this thread makes through this API record `file`:`line` as where
 * they were made, as a C++ op records its caller's line: an error names it
 * ("... (at model.py:12)"), and so do aj_explain, aj_array_dump and an
 * evaluation's error about that op. A binding sets it before each call (the
 * Python package does). NULL clears it: messages then name no line. */
AJ_C_API void aj_set_caller(const char* file, int32_t line);

/* ---- types ------------------------------------------------------------------------ */

/* New dtypes are appended (codes never change). */
typedef int32_t aj_dtype;
enum aj_dtype_code {
  AJ_BOOL = 0, AJ_I32 = 1, AJ_I64 = 2, AJ_F32 = 3, AJ_F64 = 4, AJ_F16 = 5, AJ_BF16 = 6,
  /* Since C API 1.7: */
  AJ_U8 = 7, AJ_I8 = 8, AJ_I16 = 9, AJ_U16 = 10, AJ_U32 = 11, AJ_U64 = 12
};
/* F16: IEEE binary16; BF16: bfloat16 (aj::DType's values, arrayjit/dtypes.def). */

/* "bool", "i32", ...; NULL for a code that is not a dtype. */
AJ_C_API const char* aj_dtype_name(aj_dtype dtype);
/* Bytes per element (bool is one byte); 0 for a code that is not a dtype. */
AJ_C_API size_t aj_dtype_itemsize(aj_dtype dtype);

/* Device types use DLPack's codes. */
typedef int32_t aj_device_type;
enum aj_device_type_code {
  AJ_DEVICE_CPU = 1,
  AJ_DEVICE_CUDA = 2,
  AJ_DEVICE_CUDA_HOST = 3 /* pinned host memory: read like CPU memory */
};

/* A handle to an array (lazy until evaluated). The field is private. */
typedef struct aj_array {
  uint64_t _id;
} aj_array;

/* A handle to a traced function (aj_function_new). The field is private. */
typedef struct aj_function {
  uint64_t _id;
} aj_function;

#define AJ_IS_NULL(handle) ((handle)._id == 0)

/* ---- handles ---------------------------------------------------------------------- */

/* Release one handle. The null handle is ignored (AJ_OK); a released or
 * unknown one is AJ_ERROR_HANDLE. The array itself lives on while other
 * handles or lazy arrays use it. */
AJ_C_API aj_status aj_array_release(aj_array a);
/* A second handle to the same array (released separately). */
AJ_C_API aj_status aj_array_retain(aj_array a, aj_array* out);
/* How many aj_array and aj_function handles are open now (all threads): a
 * leak check for tests. */
AJ_C_API size_t aj_live_handles(void);

/* ---- creation ------------------------------------------------------------------------ */

/* Copies of caller memory: `ndim` extents, row-major, `dtype` elements (a
 * bool is one byte, 0 or 1). `data` may be NULL when the shape has no
 * elements. The caller keeps its memory. */
AJ_C_API aj_status aj_array_from_data(const void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim,
                                      aj_array* out);

/* What is called when arrayjit lets go of borrowed memory. */
typedef void (*aj_release_fn)(void* context);

/* An array borrowing caller memory (row-major; zero-copy). arrayjit never
 * writes it, and never frees it: `release(context)` is called exactly once,
 * when the last array using the memory dies (which may be during a later call
 * of any thread that releases that array); a failed call takes nothing
 * (release is not called). `release` may be NULL: then the caller keeps the
 * memory alive and unchanged while arrays use it. */
AJ_C_API aj_status aj_array_borrow(void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim,
                                   aj_release_fn release, void* context, aj_array* out);
/* As aj_array_borrow, but lent for writing (aj::lend): when the array is
 * donated (aj_function_call_donate) or is a temporary nothing else holds, a
 * result of its layout may be written into the memory in place, where the
 * caller then finds it (since C API 1.7). The caller does not read or write
 * the memory while an evaluation runs. */
AJ_C_API aj_status aj_array_lend(void* data, aj_dtype dtype, const int64_t* shape, int32_t ndim,
                                 aj_release_fn release, void* context, aj_array* out);

/* Fills (lazy: a broadcast scalar, no buffer until evaluated). */
AJ_C_API aj_status aj_zeros(const int64_t* shape, int32_t ndim, aj_dtype dtype, aj_array* out);
AJ_C_API aj_status aj_ones(const int64_t* shape, int32_t ndim, aj_dtype dtype, aj_array* out);
/* `value` converted to dtype (integers beyond 2^53 do not survive a double:
 * use aj_scalar_i64 and aj_broadcast_to for those). */
AJ_C_API aj_status aj_full(const int64_t* shape, int32_t ndim, double value, aj_dtype dtype, aj_array* out);
/* 0, 1, ..., n - 1. */
AJ_C_API aj_status aj_arange(int64_t n, aj_dtype dtype, aj_array* out);
/* start, start + step, ... below stop (NumPy's arange). */
AJ_C_API aj_status aj_arange_range(double start, double stop, double step, aj_dtype dtype, aj_array* out);
/* num values from start to stop, both included. */
AJ_C_API aj_status aj_linspace(double start, double stop, int64_t num, aj_dtype dtype, aj_array* out);
/* n x m with ones on diagonal k (k > 0 above the main one). */
AJ_C_API aj_status aj_eye(int64_t n, int64_t m, int64_t k, aj_dtype dtype, aj_array* out);
/* Fills of a's shape (lazy, as aj_zeros), of a's dtype when dtype is NULL,
 * else of *dtype; a is not evaluated. Since C API 1.2. */
AJ_C_API aj_status aj_zeros_like(aj_array a, const aj_dtype* dtype, aj_array* out);
AJ_C_API aj_status aj_ones_like(aj_array a, const aj_dtype* dtype, aj_array* out);
AJ_C_API aj_status aj_full_like(aj_array a, double value, const aj_dtype* dtype, aj_array* out);
/* Counter-based random numbers: the values depend only on the seed and the
 * number of random arrays made since it was set. */
AJ_C_API void aj_random_seed(uint64_t seed);
AJ_C_API aj_status aj_random_uniform(const int64_t* shape, int32_t ndim, double lo, double hi, aj_dtype dtype,
                                     aj_array* out);
AJ_C_API aj_status aj_random_normal(const int64_t* shape, int32_t ndim, double mean, double stddev,
                                    aj_dtype dtype, aj_array* out);
/* More distributions (arrayjit/random.hpp): integers in [lo, hi) (i32/i64),
 * a permutation of 0..n-1, bools true with probability p, exponential
 * (scale), Gumbel (loc, scale), the standard normal truncated to [lower,
 * upper], gamma (alpha, scale), beta (a, b), Poisson (lam; i64), draws of
 * indices along *axis of logits (categorical) and counts of n draws
 * (multinomial), `count` indices of 0..n-1 (choice; p: {0} for uniform), and
 * x shuffled along an axis. */
AJ_C_API aj_status aj_random_randint(const int64_t* shape, int32_t ndim, int64_t lo, int64_t hi, aj_dtype dtype,
                                     aj_array* out);
AJ_C_API aj_status aj_random_permutation(int64_t n, aj_array* out);
AJ_C_API aj_status aj_random_bernoulli(const int64_t* shape, int32_t ndim, double p, aj_array* out);
AJ_C_API aj_status aj_random_exponential(const int64_t* shape, int32_t ndim, double scale, aj_dtype dtype, aj_array* out);
AJ_C_API aj_status aj_random_gumbel(const int64_t* shape, int32_t ndim, double loc, double scale, aj_dtype dtype,
                                    aj_array* out);
AJ_C_API aj_status aj_random_truncated_normal(const int64_t* shape, int32_t ndim, double lower, double upper,
                                              aj_dtype dtype, aj_array* out);
AJ_C_API aj_status aj_random_gamma(const int64_t* shape, int32_t ndim, double alpha, double scale, aj_dtype dtype,
                                   aj_array* out);
AJ_C_API aj_status aj_random_beta(const int64_t* shape, int32_t ndim, double a, double b, aj_dtype dtype, aj_array* out);
AJ_C_API aj_status aj_random_poisson(const int64_t* shape, int32_t ndim, double lam, aj_array* out);
AJ_C_API aj_status aj_random_categorical(aj_array logits, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_random_multinomial(int64_t n, aj_array pvals, aj_array* out);
AJ_C_API aj_status aj_random_choice(int64_t n, int64_t count, int replace, aj_array p, aj_array* out);
AJ_C_API aj_status aj_random_shuffle(aj_array x, int32_t axis, aj_array* out);
/* Random numbers from a key that is an array (since C API 1.6;
 * arrayjit/random.hpp's Key): `key` is a rank-0 integer array, and the same
 * key gives the same values on every backend. The functions above take
 * their key from the seed when they are traced, so an aj_function replays
 * the same numbers; with a key that is one of its inputs (a step counter, a
 * seed the caller draws) each call draws new ones without tracing again:
 * dropout in a compiled training step. aj_random_fold_in derives an
 * independent key for each `data` (aj_random_split n of them); aj_random_bits gives 64 random bits per
 * element (i64); uniform in [lo, hi) and normal are f32 or f64; bernoulli is
 * bool, true with probability p. */
AJ_C_API aj_status aj_random_fold_in(aj_array key, int64_t data, aj_array* out);
/* JAX's names: a key holding `seed` (rank-0 i64); `n` keys split from one
 * (fold_in of 0 .. n-1) into outs[0 .. n). */
AJ_C_API aj_status aj_random_key(int64_t seed, aj_array* out);
AJ_C_API aj_status aj_random_split(aj_array key, int32_t n, aj_array* outs);
AJ_C_API aj_status aj_random_bits(aj_array key, const int64_t* shape, int32_t ndim, aj_array* out);
AJ_C_API aj_status aj_random_key_uniform(aj_array key, const int64_t* shape, int32_t ndim, double lo, double hi,
                                         aj_dtype dtype, aj_array* out);
AJ_C_API aj_status aj_random_key_normal(aj_array key, const int64_t* shape, int32_t ndim, double mean, double stddev,
                                        aj_dtype dtype, aj_array* out);
AJ_C_API aj_status aj_random_key_bernoulli(aj_array key, const int64_t* shape, int32_t ndim, double p, aj_array* out);

/* Weak scalars: what a C++ literal is in `x * 2.0`. In elementwise ops
 * (everything taking `aj_array` operands in the next section, where and clip)
 * a weak scalar takes the other operand's dtype unless it is of a higher
 * category (bool < integer < floating): f32 array * weak 2.0 is f32, i32
 * array + weak 1 is i32 (docs/semantics.md, "Types and promotion"). Anywhere
 * else it is a rank-0 array of f64, i64 or bool. Results are never weak. */
AJ_C_API aj_status aj_scalar_f64(double value, aj_array* out);
AJ_C_API aj_status aj_scalar_i64(int64_t value, aj_array* out);
AJ_C_API aj_status aj_scalar_bool(int value, aj_array* out);
/* An integer of [0, 2^64): weak like aj_scalar_i64's (a u64 array where it
 * stands alone). Since C API 1.7, for the values above INT64_MAX. */
AJ_C_API aj_status aj_scalar_u64(uint64_t value, aj_array* out);

/* ---- ops ------------------------------------------------------------------------------
 * Every op records a node and returns at once with a new handle in `out`
 * (lazy); shapes and dtypes are checked now and a mistake is an error naming
 * the op, the shapes and the dtypes. Semantics are the C++ API's (arrayjit/
 * array.hpp, docs/semantics.md): NumPy broadcasting and promotion. The lists
 * below declare one function per entry (X(name) declares aj_<name>). The
 * elementwise ones come from the op table (arrayjit/ops.def, its Api column),
 * so a new elementwise op is one line there; the others are one line here.
 */

/* Elementwise, one operand: aj_status aj_<name>(aj_array x, aj_array* out):
 * negative, logical_not (bool only), abs, sign, floor, ceil, round (half to
 * even), exp, log, log1p, expm1, sin, cos, tan, tanh, sigmoid, sqrt, rsqrt,
 * erf, erfc, trunc, arcsin, arccos, arctan, sinh, cosh, arcsinh, arccosh,
 * arctanh, exp2, log2, log10, cbrt, lgamma, digamma, trigamma, erfinv, ndtri,
 * log_ndtr, i0, i1, ... (arrayjit/ops.def: the rows whose Api is `unary`);
 * and the compositions isnan, isinf, isfinite, signbit (bool results),
 * square, reciprocal, and the activations relu, gelu (exact), gelu_tanh
 * (tanh approximation), silu, softplus (arrayjit/nn.hpp). */
#define AJ_UNARY_OPS(X)                                                                                    \
  AJ_OPS_V(AJ_C_PICK_UNARY_, X) X(isnan) X(isinf) X(isfinite) X(signbit) X(square) X(reciprocal) X(relu) \
  X(gelu) X(gelu_tanh) X(silu) X(softplus)

/* Elementwise, two operands: aj_status aj_<name>(aj_array a, aj_array b, aj_array* out):
 * add, subtract, multiply, divide (true division on floats, floor division on
 * integers), mod (sign of the divisor, as NumPy), maximum (NaN propagates),
 * minimum, pow, arctan2 (y, x), hypot, copysign, nextafter, fmod (the sign of
 * the dividend), logaddexp, logaddexp2, equal, not_equal, less, less_equal,
 * greater, greater_equal (comparisons give bool), logical_and, logical_or
 * (bool only) (ops.def: Api `binary` or `c_binary`), and true_divide (always
 * floating point), floor_divide (floor(a / b) in the operands' dtype),
 * logical_xor (bool only). */
#define AJ_BINARY_OPS(X) AJ_OPS_V(AJ_C_PICK_BINARY_, X) X(true_divide) X(floor_divide) X(logical_xor)

#define AJ_C_PICK_UNARY_(X, e, name, arity, cat, flags, api, fn, libm, acc) AJ_C_PICK_UNARY_##api(X, fn)
#define AJ_C_PICK_BINARY_(X, e, name, arity, cat, flags, api, fn, libm, acc) AJ_C_PICK_BINARY_##api(X, fn)
#define AJ_C_PICK_UNARY_unary(X, fn) X(fn)
#define AJ_C_PICK_UNARY_binary(X, fn)
#define AJ_C_PICK_UNARY_c_binary(X, fn)
#define AJ_C_PICK_UNARY_none(X, fn)
#define AJ_C_PICK_BINARY_unary(X, fn)
#define AJ_C_PICK_BINARY_binary(X, fn) X(fn)
#define AJ_C_PICK_BINARY_c_binary(X, fn) X(fn)
#define AJ_C_PICK_BINARY_none(X, fn)

/* Elementwise, three operands: aj_status aj_<name>(aj_array a, aj_array b, aj_array c, aj_array* out). */
#define AJ_TERNARY_OPS(X)                            \
  X(where) /* where(cond, a, b): cond is bool */     \
  X(clip)  /* clip(x, lo, hi) */

/* Reductions over `axes` (NULL: all axes, naxes not read; naxes 0 with a
 * non-NULL pointer: none), keeping the reduced axes as extent 1 when keepdims is nonzero:
 * aj_status aj_<name>(aj_array x, const int32_t* axes, int32_t naxes, int keepdims, aj_array* out).
 * sum/prod of bool or i32 accumulate in i64; mean of integers is f64. The
 * nan* ones skip NaN (arrayjit/statistics.hpp); count_nonzero is i64. */
#define AJ_REDUCE_OPS(X) \
  X(sum)                 \
  X(prod)                \
  X(mean)                \
  X(max)                 \
  X(min)                 \
  X(all)                 \
  X(any)                 \
  X(nansum)              \
  X(nanmean)             \
  X(nanmax)              \
  X(nanmin)              \
  X(count_nonzero)

#define AJ_DECLARE_UNARY_(name) AJ_C_API aj_status aj_##name(aj_array x, aj_array* out);
#define AJ_DECLARE_BINARY_(name) AJ_C_API aj_status aj_##name(aj_array a, aj_array b, aj_array* out);
#define AJ_DECLARE_TERNARY_(name) AJ_C_API aj_status aj_##name(aj_array a, aj_array b, aj_array c, aj_array* out);
#define AJ_DECLARE_REDUCE_(name) \
  AJ_C_API aj_status aj_##name(aj_array x, const int32_t* axes, int32_t naxes, int keepdims, aj_array* out);
AJ_UNARY_OPS(AJ_DECLARE_UNARY_)
AJ_BINARY_OPS(AJ_DECLARE_BINARY_)
AJ_TERNARY_OPS(AJ_DECLARE_TERNARY_)
AJ_REDUCE_OPS(AJ_DECLARE_REDUCE_)

/* The names in one of the lists above, space-separated ("negative abs ..."),
 * so that a binding makes its functions from the same lists (since C API
 * 1.6): AJ_OPS_UNARY, AJ_OPS_BINARY, AJ_OPS_TERNARY, AJ_OPS_REDUCE, and
 * AJ_OPS_PRODUCT (the products below). Static storage; NULL for another code. */
typedef int32_t aj_op_list;
enum aj_op_list_code { AJ_OPS_UNARY = 0, AJ_OPS_BINARY = 1, AJ_OPS_TERNARY = 2, AJ_OPS_REDUCE = 3, AJ_OPS_PRODUCT = 4 };
AJ_C_API const char* aj_op_names(aj_op_list list);

/* NaN -> nan, +inf -> *posinf, -inf -> *neginf (NULL: the dtype's largest /
 * lowest finite value); integers and bool unchanged. */
AJ_C_API aj_status aj_nan_to_num(aj_array x, double nan, const double* posinf, const double* neginf, aj_array* out);

/* Statistics (arrayjit/statistics.hpp): the variance and standard deviation
 * over `axes` (as the reductions) divided by n - ddof; the n-th difference
 * along an axis; isclose elementwise, allclose and array_equal as rank-0
 * bools; the q-th quantile (0..1), p-th percentile (0..100) and median
 * along *axis (NULL: of the flattened array), NumPy's linear method. */
AJ_C_API aj_status aj_var(aj_array x, const int32_t* axes, int32_t naxes, double ddof, int keepdims, aj_array* out);
AJ_C_API aj_status aj_std(aj_array x, const int32_t* axes, int32_t naxes, double ddof, int keepdims, aj_array* out);
AJ_C_API aj_status aj_diff(aj_array x, int32_t n, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_isclose(aj_array a, aj_array b, double rtol, double atol, int equal_nan, aj_array* out);
AJ_C_API aj_status aj_allclose(aj_array a, aj_array b, double rtol, double atol, int equal_nan, aj_array* out);
AJ_C_API aj_status aj_array_equal(aj_array a, aj_array b, int equal_nan, aj_array* out);
AJ_C_API aj_status aj_quantile(aj_array x, double q, const int32_t* axis, int keepdims, aj_array* out);
AJ_C_API aj_status aj_percentile(aj_array x, double p, const int32_t* axis, int keepdims, aj_array* out);
AJ_C_API aj_status aj_median(aj_array x, const int32_t* axis, int keepdims, aj_array* out);

/* Scans along *axis (NULL: of the flattened array, a 1-d result): the
 * running sum and product (bool and i32 accumulate in i64), maximum and
 * minimum (NaN propagates; same dtype), and log(sum(exp)) (floats; integers
 * give f64). */
AJ_C_API aj_status aj_cumsum(aj_array x, const int32_t* axis, aj_array* out);
AJ_C_API aj_status aj_cumprod(aj_array x, const int32_t* axis, aj_array* out);
AJ_C_API aj_status aj_cummax(aj_array x, const int32_t* axis, aj_array* out);
AJ_C_API aj_status aj_cummin(aj_array x, const int32_t* axis, aj_array* out);
AJ_C_API aj_status aj_logcumsumexp(aj_array x, const int32_t* axis, aj_array* out);
/* The array API's cumulative_sum: cumsum accumulating in *dtype (NULL: as
 * cumsum), with a leading 0 along the axis when include_initial is nonzero.
 * Since C API 1.2. */
AJ_C_API aj_status aj_cumulative_sum(aj_array x, const int32_t* axis, const aj_dtype* dtype, int include_initial,
                                     aj_array* out);

/* Each line along `axis` sorted ascending (stable; NaN last), or the i64
 * positions that sort it; partition / argpartition as NumPy's with the
 * nkth positions kth (each in [-n, n)), computed as a sort. */
AJ_C_API aj_status aj_sort(aj_array x, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_argsort(aj_array x, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_partition(aj_array x, const int64_t* kth, int32_t nkth, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_argpartition(aj_array x, const int64_t* kth, int32_t nkth, int32_t axis, aj_array* out);
/* The k largest elements of each line along `axis`, largest first (ties:
 * the lower index first; NaN counts as largest), into *values, and their i64
 * positions into *indices (jax.lax.top_k); 0 <= k <= the axis's extent. Both
 * handles are written, or (on an error) both nulled. Since C API 1.2. */
AJ_C_API aj_status aj_topk(aj_array x, int64_t k, int32_t axis, aj_array* values, aj_array* indices);

/* Search (arrayjit/search.hpp): positions in the sorted 1-d a (i64 of v's
 * shape; right: after equal elements), bins, counts (weights: {0} for none;
 * *length: exactly that many bins, values outside dropped; NULL: max + 1,
 * evaluating x), and the results whose length depends on the values:
 * argwhere ([count, ndim] i64), unique (sorted, flattened), masked_select
 * (x where the bool mask holds, flattened). With *size they have exactly
 * that many entries, the rest `fill`; with NULL the count is evaluated
 * first (not inside a traced aj_function). */
AJ_C_API aj_status aj_searchsorted(aj_array a, aj_array v, int right, aj_array* out);
AJ_C_API aj_status aj_digitize(aj_array x, aj_array bins, int right, aj_array* out);
AJ_C_API aj_status aj_bincount(aj_array x, aj_array weights, int64_t minlength, const int64_t* length, aj_array* out);
AJ_C_API aj_status aj_argwhere(aj_array x, const int64_t* size, int64_t fill, aj_array* out);
AJ_C_API aj_status aj_unique(aj_array x, const int64_t* size, double fill, aj_array* out);
AJ_C_API aj_status aj_masked_select(aj_array x, aj_array mask, const int64_t* size, double fill, aj_array* out);
/* nonzero: one i64 index array per axis of x (outs holds nouts handles,
 * nouts must be x's rank), with *size and fill as argwhere. Since C API 1.2. */
AJ_C_API aj_status aj_nonzero(aj_array x, const int64_t* size, int64_t fill, aj_array* outs, int32_t nouts);

/* Softmax and log-softmax over `axes` (as the reductions; NULL: the last
 * axis), logsumexp over `axes` (NULL: all); gathers: take along *axis
 * (NULL: of the flattened array), take_along_axis; the transpose of a take,
 * scatter_add(a, indices, updates, axis) (duplicates accumulate); one-hot
 * rows of `num_classes` (arrayjit/nn.hpp, arrayjit/indexing.hpp). */
AJ_C_API aj_status aj_softmax(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out);
AJ_C_API aj_status aj_log_softmax(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out);
AJ_C_API aj_status aj_logsumexp(aj_array x, const int32_t* axes, int32_t naxes, int keepdims, aj_array* out);
AJ_C_API aj_status aj_take(aj_array a, aj_array indices, const int32_t* axis, aj_array* out);
AJ_C_API aj_status aj_take_along_axis(aj_array a, aj_array indices, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_scatter_add(aj_array a, aj_array indices, aj_array updates, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_one_hot(aj_array labels, int64_t num_classes, aj_dtype dtype, aj_array* out);

/* More scatters and functional updates (arrayjit/indexing.hpp; since C API
 * 1.2). None changes `a`: the result is a new array (it takes a's buffer over
 * when nothing else needs it). Updates broadcast as the C++ functions say and
 * are converted to a's dtype; indices are integers of any width, negative ones count
 * from the end, and an index beyond [-n, n) drops its update.
 * scatter: as aj_scatter_add but setting (with duplicate indices the last
 * update in row-major order wins); scatter_add_along_axis and
 * put_along_axis: the transposes of take_along_axis (indices of a's rank),
 * adding / setting. */
AJ_C_API aj_status aj_scatter(aj_array a, aj_array indices, aj_array updates, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_scatter_add_along_axis(aj_array a, aj_array indices, aj_array updates, int32_t axis,
                                             aj_array* out);
AJ_C_API aj_status aj_put_along_axis(aj_array a, aj_array indices, aj_array values, int32_t axis, aj_array* out);
/* JAX's a.at[slices].set(values) / .add(values): a with the slice (as
 * aj_slice: starts, stops, steps of the first n axes, AJ_SLICE_NONE, NULL
 * lists) replaced / incremented by values (broadcast to the slice's shape;
 * slice_add on bool is `or`). */
AJ_C_API aj_status aj_slice_update(aj_array a, const int64_t* starts, const int64_t* stops, const int64_t* steps,
                                   int32_t n, aj_array values, aj_array* out);
AJ_C_API aj_status aj_slice_add(aj_array a, const int64_t* starts, const int64_t* stops, const int64_t* steps,
                                int32_t n, aj_array values, aj_array* out);
/* NumPy pad. widths: nwidths pairs (before, after), int64_t[2 * nwidths]:
 * one pair per axis, or one pair for every axis (nwidths 1). mode: constant
 * (`value`, converted to a's dtype as aj_full's), edge (the edge element
 * repeated), reflect (mirrored about the edge element, not repeating it). */
typedef int32_t aj_pad_mode;
enum aj_pad_mode_code { AJ_PAD_CONSTANT = 0, AJ_PAD_EDGE = 1, AJ_PAD_REFLECT = 2 };
AJ_C_API aj_status aj_pad(aj_array a, const int64_t* widths, int32_t nwidths, aj_pad_mode mode, double value,
                          aj_array* out);
/* NumPy roll: shifted by shifts[i] along axes[i] (n of each), wrapping
 * around; axes NULL: the flattened array shifted by shifts[0] (n must be 1). */
AJ_C_API aj_status aj_roll(aj_array a, const int64_t* shifts, const int32_t* axes, int32_t n, aj_array* out);

/* Autodiff's graph helpers (arrayjit/autodiff.hpp; since C API 1.2): x as a
 * constant for differentiation (the identity on values), and x summed over
 * its broadcast axes down to `shape` (the transpose of aj_broadcast_to). */
AJ_C_API aj_status aj_stop_gradient(aj_array x, aj_array* out);
AJ_C_API aj_status aj_sum_to_shape(aj_array x, const int64_t* shape, int32_t ndim, aj_array* out);

/* Index of the largest/smallest element along *axis (NULL: of the flattened
 * array), as i64. */
AJ_C_API aj_status aj_argmax(aj_array x, const int32_t* axis, int keepdims, aj_array* out);
AJ_C_API aj_status aj_argmin(aj_array x, const int32_t* axis, int keepdims, aj_array* out);

/* NumPy matmul: 1-d operands are promoted and the added axis removed; batch
 * axes broadcast. */
AJ_C_API aj_status aj_matmul(aj_array a, aj_array b, aj_array* out);

/* ---- numpy.linalg (arrayjit/linalg.hpp; since C API 1.3) -------------------------------------
 * Over the last two axes, batched over the leading ones; f32/f64 (integers and
 * bool as f64; halves refused). A decomposition writes each of its parts to
 * outs[0..] (the count is fixed per function and checked: nouts). A singular
 * or not positive definite matrix is an AJ_ERROR_USER at evaluation (solve,
 * inv, cholesky), as NumPy's LinAlgError. */
typedef enum aj_qr_mode { AJ_QR_REDUCED = 0, AJ_QR_COMPLETE = 1, AJ_QR_R = 2 } aj_qr_mode;
/* A norm's order: the default (2-norm of a vector, Frobenius of a matrix), a
 * number p (2, 1, inf, -inf, 0, -1, -2, or any p for vectors), "fro", "nuc". */
typedef enum aj_norm_ord { AJ_ORD_DEFAULT = 0, AJ_ORD_P = 1, AJ_ORD_FRO = 2, AJ_ORD_NUC = 3 } aj_norm_ord;
AJ_C_API aj_status aj_linalg_cholesky(aj_array a, int upper, aj_array* out);
AJ_C_API aj_status aj_linalg_solve(aj_array a, aj_array b, aj_array* out);
AJ_C_API aj_status aj_linalg_inv(aj_array a, aj_array* out);
AJ_C_API aj_status aj_linalg_triangular_solve(aj_array a, aj_array b, int lower, int transpose_a, int unit_diagonal,
                                              aj_array* out);
/* lu_factor: lu, pivots, permutation (3 outputs); lu: p, l, u (3). */
AJ_C_API aj_status aj_linalg_lu_factor(aj_array a, aj_array* outs, int32_t nouts);
AJ_C_API aj_status aj_linalg_lu(aj_array a, aj_array* outs, int32_t nouts);
/* q, r (2 outputs; AJ_QR_R: r alone, 1 output). */
AJ_C_API aj_status aj_linalg_qr(aj_array a, aj_qr_mode mode, aj_array* outs, int32_t nouts);
/* u, s, vh (3 outputs). */
AJ_C_API aj_status aj_linalg_svd(aj_array a, int full_matrices, aj_array* outs, int32_t nouts);
AJ_C_API aj_status aj_linalg_svdvals(aj_array a, aj_array* out);
/* eigenvalues, eigenvectors (2 outputs). */
AJ_C_API aj_status aj_linalg_eigh(aj_array a, int upper, aj_array* outs, int32_t nouts);
AJ_C_API aj_status aj_linalg_eigvalsh(aj_array a, int upper, aj_array* out);
AJ_C_API aj_status aj_linalg_det(aj_array a, aj_array* out);
/* sign, logabsdet (2 outputs). */
AJ_C_API aj_status aj_linalg_slogdet(aj_array a, aj_array* outs, int32_t nouts);
/* x, residuals, rank, s (4 outputs); rcond null: NumPy 2's default. */
AJ_C_API aj_status aj_linalg_lstsq(aj_array a, aj_array b, const double* rcond, aj_array* outs, int32_t nouts);
AJ_C_API aj_status aj_linalg_pinv(aj_array a, double rcond, aj_array* out);
/* axes: null with naxes 0 for NumPy's axis=None, else 1 or 2 axes. */
AJ_C_API aj_status aj_linalg_norm(aj_array x, aj_norm_ord ord, double p, const int32_t* axes, int32_t naxes,
                                  int keepdims, aj_array* out);
AJ_C_API aj_status aj_linalg_vector_norm(aj_array x, double ord, const int32_t* axes, int32_t naxes, int keepdims,
                                         aj_array* out);
AJ_C_API aj_status aj_linalg_matrix_norm(aj_array x, aj_norm_ord ord, double p, int keepdims, aj_array* out);
AJ_C_API aj_status aj_linalg_matrix_power(aj_array a, int64_t n, aj_array* out);
/* tol null: max(s) * max(m, n) * eps. */
AJ_C_API aj_status aj_linalg_matrix_rank(aj_array a, const double* tol, aj_array* out);

/* ---- convolution and pooling (arrayjit/conv.hpp; since C API 1.3) ------------------------------
 * Lists of int64: a null list with length 0 means the default (1 for strides
 * and dilations, 0 for padding); one value applies to every spatial axis.
 * padding: (low, high) pairs, npadding pairs (2 * npadding numbers). */
typedef enum aj_padding_mode { AJ_PADDING_PAIRS = 0, AJ_PADDING_SAME = 1, AJ_PADDING_VALID = 2 } aj_padding_mode;
/* JAX's conv_general_dilated; layouts: letters ("NCHW", "OIHW", ...), null
 * or "" for the default (N, C, spatial; O, I, spatial; out as lhs). */
AJ_C_API aj_status aj_conv_general(aj_array x, aj_array w, const int64_t* strides, int32_t nstrides,
                                   aj_padding_mode mode, const int64_t* padding, int32_t npadding,
                                   const int64_t* lhs_dilation, int32_t nlhs_dilation, const int64_t* rhs_dilation,
                                   int32_t nrhs_dilation, int64_t groups, const char* lhs_layout,
                                   const char* rhs_layout, const char* out_layout, aj_array* out);
/* PyTorch's conv_transpose1d/2d/3d (by x's rank): w [C, O / groups, k...];
 * padding and output_padding: one number per spatial axis (or one for all). */
AJ_C_API aj_status aj_conv_transpose(aj_array x, aj_array w, const int64_t* stride, int32_t nstride,
                                     const int64_t* padding, int32_t npadding, const int64_t* output_padding,
                                     int32_t noutput_padding, int64_t groups, const int64_t* dilation,
                                     int32_t ndilation, aj_array* out);
/* Pooling over the last nwindow axes; padding: one number per axis (symmetric). */
AJ_C_API aj_status aj_max_pool(aj_array x, const int64_t* window, int32_t nwindow, const int64_t* strides,
                               int32_t nstrides, const int64_t* padding, int32_t npadding, int ceil_mode,
                               const int64_t* dilation, int32_t ndilation, aj_array* out);
AJ_C_API aj_status aj_avg_pool(aj_array x, const int64_t* window, int32_t nwindow, const int64_t* strides,
                               int32_t nstrides, const int64_t* padding, int32_t npadding, int ceil_mode,
                               int count_include_pad, aj_array* out);
/* JAX's reduce_window over every axis; op "sum", "prod", "max" or "min". */
AJ_C_API aj_status aj_reduce_window(aj_array x, const char* op, const int64_t* window, int32_t nwindow,
                                    const int64_t* strides, int32_t nstrides, const int64_t* padding,
                                    int32_t npadding, aj_array* out);
/* PyTorch's interpolate: mode "nearest", "linear", "bilinear", "trilinear". */
AJ_C_API aj_status aj_interpolate(aj_array x, const int64_t* size, int32_t nsize, const char* mode,
                                  int align_corners, aj_array* out);
/* A copy converted to dtype (the same array when it has that dtype). */
AJ_C_API aj_status aj_astype(aj_array x, aj_dtype dtype, aj_array* out);
/* A copy on another device (the same array when it is there already). */
AJ_C_API aj_status aj_to_device(aj_array x, aj_device_type type, int32_t device_id, aj_array* out);

/* ---- shape ops (views where possible: no copy) --------------------------------------------- */

/* One extent may be -1 (inferred). */
AJ_C_API aj_status aj_reshape(aj_array x, const int64_t* shape, int32_t ndim, aj_array* out);
/* perm NULL: reverse the axes (nperm not read). */
AJ_C_API aj_status aj_transpose(aj_array x, const int32_t* perm, int32_t nperm, aj_array* out);
AJ_C_API aj_status aj_broadcast_to(aj_array x, const int64_t* shape, int32_t ndim, aj_array* out);
AJ_C_API aj_status aj_expand_dims(aj_array x, int32_t axis, aj_array* out);
/* axes NULL: every axis of extent 1 (naxes not read). */
AJ_C_API aj_status aj_squeeze(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out);

/* "Not given" for a slice bound: from the start / to the end in the
 * direction of step (Python's x[::step]). */
#define AJ_SLICE_NONE INT64_MIN
/* Python slicing of the first n axes (the rest taken whole): axis i is
 * starts[i]:stops[i]:steps[i]. NULL starts or stops: AJ_SLICE_NONE for every
 * axis; NULL steps: 1. Negative bounds count from the end and must lie in
 * [-extent, extent] (no silent clamping). */
AJ_C_API aj_status aj_slice(aj_array x, const int64_t* starts, const int64_t* stops, const int64_t* steps,
                            int32_t n, aj_array* out);
/* x[..., start:stop:step, ...] on one axis. */
AJ_C_API aj_status aj_slice_axis(aj_array x, int32_t axis, int64_t start, int64_t stop, int64_t step,
                                 aj_array* out);
/* Join n arrays along an existing axis / a new axis. */
AJ_C_API aj_status aj_concatenate(const aj_array* xs, size_t n, int32_t axis, aj_array* out);
AJ_C_API aj_status aj_stack(const aj_array* xs, size_t n, int32_t axis, aj_array* out);

/* ---- NumPy's shape functions (arrayjit/shape_functions.hpp) ----------------------------
 * Views where NumPy returns one (flip, swapaxes, moveaxis, diagonal, the
 * pieces of split, unstack, broadcast_arrays, meshgrid, atleast_*d). Those
 * with several results write them to `outs`, which holds as many handles as
 * each says: all are written, or (on an error) none. */
/* axes NULL: every axis (naxes not read). */
AJ_C_API aj_status aj_flip(aj_array x, const int32_t* axes, int32_t naxes, aj_array* out);
AJ_C_API aj_status aj_swapaxes(aj_array x, int32_t axis1, int32_t axis2, aj_array* out);
AJ_C_API aj_status aj_moveaxis(aj_array x, const int32_t* source, const int32_t* destination, int32_t n,
                               aj_array* out);
AJ_C_API aj_status aj_tile(aj_array x, const int64_t* reps, int32_t nreps, aj_array* out);
/* One count for every element (nrepeats 1) or one per element along the
 * axis; axis NULL: of the flattened array. */
AJ_C_API aj_status aj_repeat(aj_array x, const int64_t* repeats, int64_t nrepeats, const int32_t* axis,
                             aj_array* out);
/* nindices + 1 pieces, cut before each index (clamped, as NumPy). */
AJ_C_API aj_status aj_split(aj_array x, const int64_t* indices, int32_t nindices, int32_t axis, aj_array* outs);
/* `sections` pieces, the first (extent % sections) one longer. */
AJ_C_API aj_status aj_array_split(aj_array x, int64_t sections, int32_t axis, aj_array* outs);
/* One piece per index of the axis: nouts must be the axis's extent. */
AJ_C_API aj_status aj_unstack(aj_array x, int32_t axis, aj_array* outs, int64_t nouts);
AJ_C_API aj_status aj_broadcast_arrays(const aj_array* xs, size_t n, aj_array* outs);
/* n coordinate arrays; ij nonzero: matrix indexing, else Cartesian ("xy"). */
AJ_C_API aj_status aj_meshgrid(const aj_array* xs, size_t n, int ij, aj_array* outs);
AJ_C_API aj_status aj_tril(aj_array x, int64_t k, aj_array* out);
AJ_C_API aj_status aj_triu(aj_array x, int64_t k, aj_array* out);
AJ_C_API aj_status aj_diag(aj_array x, int64_t k, aj_array* out);
AJ_C_API aj_status aj_diagonal(aj_array x, int64_t offset, int32_t axis1, int32_t axis2, aj_array* out);
AJ_C_API aj_status aj_trace(aj_array x, int64_t offset, int32_t axis1, int32_t axis2, aj_array* out);
AJ_C_API aj_status aj_atleast_1d(aj_array x, aj_array* out);
AJ_C_API aj_status aj_atleast_2d(aj_array x, aj_array* out);
AJ_C_API aj_status aj_atleast_3d(aj_array x, aj_array* out);
AJ_C_API aj_status aj_logspace(double start, double stop, int64_t num, double base, aj_dtype dtype, aj_array* out);
/* Products: aj_status aj_<name>(aj_array a, aj_array b, aj_array* out). */
#define AJ_PRODUCT_OPS(X) X(outer) X(inner) X(dot) X(vdot) X(kron)
#define AJ_DECLARE_PRODUCT_(name) AJ_C_API aj_status aj_##name(aj_array a, aj_array b, aj_array* out);
AJ_PRODUCT_OPS(AJ_DECLARE_PRODUCT_)
AJ_C_API aj_status aj_tensordot(aj_array a, aj_array b, const int32_t* a_axes, const int32_t* b_axes, int32_t n,
                                aj_array* out);
AJ_C_API aj_status aj_cross(aj_array a, aj_array b, int32_t axis, aj_array* out);

/* ---- einsum (arrayjit/einsum.hpp) ---------------------------------------------------------------
 * NumPy's einsum of the n arrays xs: subscripts as NumPy's ("ij,jk->ik",
 * implicit output without "->", "..." for broadcast axes), contracted
 * pairwise in the cheapest order (matmul where a pair sums a shared letter). */
AJ_C_API aj_status aj_einsum(const char* subscripts, const aj_array* xs, size_t n, aj_array* out);
/* The order aj_einsum contracts n operands of these shapes in (shapes[i]:
 * ndims[i] extents): steps (may be NULL; room for 2 (n - 1) ints) receives
 * each step's pair of positions in the current list (np.einsum_path's list),
 * buf the report (the subscripts, the multiply-adds against the naive loop's,
 * the steps) by aj_array_to_string's rule. Since C API 1.5. */
AJ_C_API aj_status aj_einsum_path(const char* subscripts, const int64_t* const* shapes, const int32_t* ndims, size_t n,
                                  int32_t* steps, char* buf, size_t cap, size_t* len);

/* ---- evaluation, reading out ---------------------------------------------------------------- */

/* Evaluate now (and everything it needs). */
AJ_C_API aj_status aj_eval(aj_array a);
/* Evaluate n arrays together: one plan, shared work computed once. */
AJ_C_API aj_status aj_eval_many(const aj_array* xs, size_t n);
/* Evaluate with the kernel writing straight into `dst` (row-major, the
 * array's dtype, exactly dst_bytes = size * itemsize). Afterwards the array
 * borrows dst: the caller keeps it alive and unchanged while arrays use it
 * (C++: Array::eval_into). */
AJ_C_API aj_status aj_eval_into(aj_array a, void* dst, size_t dst_bytes);

/* Copy the values (evaluating first) into caller memory as dtype `as`
 * (converted with astype's rules). strides NULL: row-major, and dst_bytes must
 * be exactly size * itemsize(as); otherwise ndim non-negative byte strides
 * (0 only for extent-1 axes), multiples of the item size, and dst_bytes must
 * cover the last element. */
AJ_C_API aj_status aj_array_read(aj_array a, aj_dtype as, void* dst, size_t dst_bytes, const int64_t* strides);
/* The one element of a size-1 array, converted. */
AJ_C_API aj_status aj_array_item_f64(aj_array a, double* out);
AJ_C_API aj_status aj_array_item_i64(aj_array a, int64_t* out);

/* ---- queries (no evaluation) ------------------------------------------------------------------- */

AJ_C_API aj_status aj_array_dtype(aj_array a, aj_dtype* out);
AJ_C_API aj_status aj_array_ndim(aj_array a, int32_t* out);
/* The extents into shape[0 .. ndim); capacity must be at least ndim. */
AJ_C_API aj_status aj_array_shape(aj_array a, int64_t* shape, int32_t capacity);
AJ_C_API aj_status aj_array_size(aj_array a, int64_t* out); /* number of elements */
AJ_C_API aj_status aj_array_device(aj_array a, aj_device_type* type, int32_t* device_id);
AJ_C_API aj_status aj_array_is_evaluated(aj_array a, int* out);

/* Text into buf (snprintf's rule: at most cap - 1 characters and a NUL;
 * *len, when len is not NULL, gets the full length without the NUL, so a
 * second call with cap > *len gets it all). buf may be NULL when cap is 0.
 * aj_array_to_string prints the values as the C++ operator<< does
 * (evaluating first); aj_array_dump prints the unevaluated graph reaching a
 * ("%3 = add f32[4] %1, %2"). */
AJ_C_API aj_status aj_array_to_string(aj_array a, char* buf, size_t cap, size_t* len);
AJ_C_API aj_status aj_array_dump(aj_array a, char* buf, size_t cap, size_t* len);
/* The values as text in one of three styles (since C API 1.6), evaluating
 * first, by aj_array_to_string's rule: AJ_FORMAT_REPR is aj_array_to_string's
 * (the C++ operator<<: "array([1., 2.], dtype=f32, shape=[2])");
 * AJ_FORMAT_STR NumPy's str(a) ("[1. 2.]"); AJ_FORMAT_NUMPY_REPR NumPy's
 * repr(a), NumPy's dtype names, none for float64, int64 and bool
 * ("array([1., 2.], dtype=float32)"). Print options apply to all three. */
typedef int32_t aj_format_style;
enum aj_format_style_code { AJ_FORMAT_REPR = 0, AJ_FORMAT_STR = 1, AJ_FORMAT_NUMPY_REPR = 2 };
AJ_C_API aj_status aj_array_format(aj_array a, aj_format_style style, char* buf, size_t cap, size_t* len);

/* ---- profiler (since C API 1.4) --------------------------------------------------------------------
 * arrayjit/profile.hpp for C: while a profile records, every kernel launch,
 * library step, compile, planning, transfer and evaluation is an event (its
 * start, duration, thread, plan step, fused ops, the tracing file:line, bytes
 * moved and bandwidth), written as Chrome trace-event JSON (Perfetto,
 * chrome://tracing). AJ_TRACE=file.json records a whole process. */

/* Starts a profile that writes its trace to `trace_path` when it ends (NULL
 * or "": kept for aj_profile_summary only). The file is opened now: a path
 * that cannot be written is AJ_ERROR_USER. Profiles nest. */
AJ_C_API aj_status aj_profile_begin(const char* trace_path);
/* Ends the profile begun last (of those begun with aj_profile_begin) and
 * writes its trace; AJ_ERROR_USER when none is recording. */
AJ_C_API aj_status aj_profile_end(void);
/* The table of the top `top` kernels and library steps by time of the last
 * profile ended (calls, mean, GB/s, % of the host's triad), as
 * aj::profile_summary; "" when none has recorded. Text as aj_array_to_string. */
AJ_C_API aj_status aj_profile_summary(size_t top, char* buf, size_t cap, size_t* len);
/* A named range of this thread in the trace (aj::profile_range), from push
 * to pop; ranges nest. Popping with no range pushed on this thread is
 * AJ_ERROR_USER. */
AJ_C_API aj_status aj_profile_range_push(const char* name);
AJ_C_API aj_status aj_profile_range_pop(void);

/* ---- inspection, switches, counters (since C API 1.2) ---------------------------------------------
 * The C++ API's facilities (arrayjit/explain.hpp, jit.hpp, memory.hpp,
 * print.hpp, stats.hpp, indexing.hpp's debug checks). Text follows
 * aj_array_to_string's rule (snprintf's). */

/* The optimized plan for evaluating the n arrays together (kernels and the
 * ops fused into each, buffer slots, in-place reuse; nothing is computed),
 * as aj::explain. */
AJ_C_API aj_status aj_explain(const aj_array* xs, size_t n, char* buf, size_t cap, size_t* len);
/* Graphviz text of the n arrays: plan nonzero, the plan evaluating them
 * would run (kernels as clusters); zero, the traced graph (aj::to_dot). */
AJ_C_API aj_status aj_to_dot(const aj_array* xs, size_t n, int plan, char* buf, size_t cap, size_t* len);
/* The LLVM IR (assembly nonzero: the machine code) of every kernel the plan
 * evaluating `a` would run (aj::jit::kernel_ir; nothing is computed). */
AJ_C_API aj_status aj_jit_kernel_ir(aj_array a, int assembly, char* buf, size_t cap, size_t* len);
/* Debug channels, comma-separated, as AJ_LOG lists them ("plan", "passes",
 * "graph", "all"; "" clears them); output goes to stderr, where an unknown
 * name is reported once (as aj::set_log does: not an error). */
AJ_C_API aj_status aj_set_log(const char* channels);
/* The LLVM version the library was built against ("19.1.7"; static storage). */
AJ_C_API const char* aj_llvm_version(void);

/* The host JIT (arrayjit/jit.hpp): on (nonzero) or off (kernels run in the
 * kernel interpreter); the threads a large kernel is split over (0: all
 * cores; negative is an error); the disk cache directory ("" when disabled;
 * setting "" disables it); forgetting the compiled kernels kept in memory. */
AJ_C_API int aj_jit_enabled(void);
AJ_C_API void aj_jit_set_enabled(int on);
/* Asks the evaluations running now to stop (on != 0; 0 withdraws a request
 * none has seen): the one that sees it fails with AJ_ERROR_RUNTIME "aj:
 * interrupted", values computed before stay. Async-signal-safe: a SIGINT
 * handler may call it (arrayjit/interrupt.hpp). Since C API 1.3. */
AJ_C_API void aj_interrupt(int on);
AJ_C_API int32_t aj_jit_num_threads(void);
AJ_C_API aj_status aj_jit_set_num_threads(int32_t n);
AJ_C_API aj_status aj_jit_cache_dir(char* buf, size_t cap, size_t* len);
AJ_C_API aj_status aj_jit_set_cache_dir(const char* dir);
AJ_C_API aj_status aj_jit_clear_memory_cache(void);
/* The host JIT's tiers (arrayjit/jit.hpp, "Tiers"; since C API 1.10):
 * AJ_TIERS_AUTOMATIC (small first launches compile quick, then in full on a
 * background thread from their 128th launch), AJ_TIERS_FULL, AJ_TIERS_QUICK;
 * another value is an error. aj_jit_finish_tier_ups waits for the
 * background thread's queued full compiles (since C API 1.11). */
enum { AJ_TIERS_AUTOMATIC = 0, AJ_TIERS_FULL = 1, AJ_TIERS_QUICK = 2 };
AJ_C_API int32_t aj_jit_tiers(void);
AJ_C_API aj_status aj_jit_set_tiers(int32_t tiers);
AJ_C_API aj_status aj_jit_finish_tier_ups(void);

/* Host memory (arrayjit/memory.hpp): give the cached free buffers back to
 * the system; cap the bytes the cache may hold (0 caches nothing); the cap;
 * the bytes cached now. */
AJ_C_API aj_status aj_trim_memory(void);
AJ_C_API aj_status aj_set_memory_limit(size_t bytes);
AJ_C_API size_t aj_memory_limit(void);
AJ_C_API size_t aj_cached_bytes(void);

/* The indexing ops' debug checks (aj::set_debug, AJ_DEBUG=1): indices are
 * evaluated when an op is traced and an out-of-range one is an error. */
AJ_C_API void aj_set_debug(int on);
AJ_C_API int aj_debug(void);

/* Print options (NumPy's set_printoptions; process-wide), for
 * aj_array_to_string: aj_printoptions reads them into *options,
 * aj_set_printoptions sets them all (options->struct_size set by the caller
 * first, in both). A negative precision, threshold or edgeitems, or
 * linewidth < 1, is an error. */
typedef struct aj_print_options {
  size_t struct_size; /* sizeof(aj_print_options) */
  int32_t precision;  /* digits after the point, at most (8) */
  int32_t edgeitems;  /* items kept at each end of a summarized axis (3) */
  int64_t threshold;  /* arrays of more elements are summarized with "..." (1000) */
  int32_t linewidth;  /* characters per line (75) */
  int32_t suppress;   /* nonzero: never scientific below 1e8; tiny values print as 0. */
} aj_print_options;
AJ_C_API aj_status aj_printoptions(aj_print_options* options);
AJ_C_API aj_status aj_set_printoptions(const aj_print_options* options);

/* Counters (aj::stats, arrayjit/stats.hpp): one uint64_t each, in this
 * order; out->struct_size is set by the caller first. (kernels_tiered_up
 * since C API 1.10.) */
#define AJ_STATS_FIELDS(X)                                                                             \
  X(evals) X(kernels_launched) X(system_allocs) X(system_frees) X(bytes_allocated) X(pool_hits)        \
  X(inplace_reuses) X(live_bytes) X(peak_live_bytes) X(live_nodes) X(nodes_created) X(plans_built)     \
  X(plan_cache_hits) X(plans_renumbered) X(held_values_stored) X(values_materialized)                  \
  X(kernels_compiled) X(kernel_cache_hits) X(kernel_disk_hits) X(kernel_disk_rejects) X(compile_ns)    \
  X(kernel_disk_load_ns) X(kernels_compiled_ahead) X(compiled_traces) X(compiled_replays)              \
  X(compiled_new_extents) X(compiled_unplanned) X(kernels_tiered_up)
#define AJ_STATS_FIELD_(name) uint64_t name;
typedef struct aj_stats_counts {
  size_t struct_size; /* sizeof(aj_stats_counts) */
  AJ_STATS_FIELDS(AJ_STATS_FIELD_)
} aj_stats_counts;
#undef AJ_STATS_FIELD_
AJ_C_API aj_status aj_stats(aj_stats_counts* out);
/* Zero the counters (aj::reset_stats; not live_bytes and live_nodes, which
 * count what lives now; peak_live_bytes restarts at live_bytes). */
AJ_C_API void aj_reset_stats(void);

/* ---- files: .npy, .npz, safetensors (arrayjit/io.hpp; since C API 1.4) ------------------------
 * As the C++ functions: loading maps the file and the arrays borrow it
 * (nothing is copied until a value is needed); saving evaluates the arrays
 * and writes their buffers, into a temporary renamed into place (a failed
 * save leaves no file). Errors name the file and what is wrong with it.
 *
 * Named arrays in: names[i] (NUL-terminated) names arrays[i], i < n.
 * Named arrays out (aj_load_npz, aj_load_safetensors): the members in name
 * order, their arrays into arrays[0 .. *count) and their names into `names`,
 * each ended by a NUL (*names_len bytes in all, the NULs included). With
 * arrays NULL the call only sets *count and *names_len (nothing is made);
 * with cap < *count or names_cap < *names_len it makes nothing, sets both
 * and fails (AJ_ERROR_USER), so a second call with room gets them all. */
AJ_C_API aj_status aj_save(const char* path, aj_array a);
AJ_C_API aj_status aj_load(const char* path, aj_array* out);
AJ_C_API aj_status aj_savez(const char* path, const char* const* names, const aj_array* arrays, size_t n);
AJ_C_API aj_status aj_savez_compressed(const char* path, const char* const* names, const aj_array* arrays, size_t n);
AJ_C_API aj_status aj_load_npz(const char* path, aj_array* arrays, size_t cap, size_t* count, char* names,
                               size_t names_cap, size_t* names_len);
/* Metadata: keys[i] maps to values[i], i < n_metadata (keys unique). */
AJ_C_API aj_status aj_save_safetensors(const char* path, const char* const* names, const aj_array* arrays, size_t n,
                                       const char* const* keys, const char* const* values, size_t n_metadata);
AJ_C_API aj_status aj_load_safetensors(const char* path, aj_array* arrays, size_t cap, size_t* count, char* names,
                                       size_t names_cap, size_t* names_len);
/* The metadata as "key\0value\0" pairs in key order, into buf by
 * aj_array_to_string's rule (snprintf's: *len is the full length without
 * the final NUL the rule adds). */
AJ_C_API aj_status aj_safetensors_metadata(const char* path, char* buf, size_t cap, size_t* len);

/* ---- traced functions (compile once, replay) ---------------------------------------------------
 * An aj_function wraps a C callback that builds its outputs from its inputs
 * with the ops above. aj_function_call runs it on new inputs and evaluates the
 * outputs together. The callback is traced: it is called with handles that
 * stand for the inputs and must only record ops on them. Calls are compiled
 * (aj::compile in C++): the first call with an input signature (each array's
 * dtype, shape, layout and device, each weak scalar's kind) traces the
 * callback and keeps its plan; a later call with the same signature replays
 * the plan on the new inputs without calling back (a weak scalar whose value
 * reaches the kernels as it is, such as a learning rate, is rebound; one the
 * callback computes with traces again). New extents: the first call at other
 * extents traces once more and checks the first trace; later calls at new
 * extents run the kept trace at their extents without calling back, and
 * compile no kernel (a callback that reads an extent, aj_array_shape,
 * keeps being called at each new extent). So the callback must not:
 *  - evaluate or read values (aj_eval*, aj_array_read, aj_array_item_*,
 *    aj_array_to_string, aj_view_acquire, DLPack exports): AJ_ERROR_USER
 *    while tracing;
 *  - read arrays it reached through `context` that change between calls
 *    (pass them as inputs), or have other side effects: they happen only
 *    when it is traced;
 *  - branch on values; branching on dtypes and ranks is fine (they are part
 *    of the signature), and on extents read with aj_array_shape (the
 *    callback is then called at each new extent).
 * Scalars that change between calls (a learning rate) are inputs: weak
 * scalar handles (aj_scalar_f64) or rank-0 arrays.
 *
 * Handles in the callback: `inputs` are owned by arrayjit for the callback's
 * duration (do not release them); it writes n_outputs new handles to
 * `outputs` (an input handle may be returned as is) and returns AJ_OK, or
 * returns an error status (its message is passed on). Handles it makes and
 * does not return are released when it returns (it may release them itself).
 * Calling another aj_function inside a callback records its ops inline.
 * A replay runs the plan the trace produced: a donated input is written in
 * place when nothing else holds its buffer, as on the first call.
 */
typedef aj_status (*aj_trace_fn)(void* context, const aj_array* inputs, aj_array* outputs);
/* A derivative rule of a traced function (since C API 1.5; see the fields of
 * aj_function_desc below). It records ops like a trace callback: `a` and `b`
 * are owned by arrayjit for the call; it writes new handles to `out` (a
 * null handle, {0}, for a zero derivative) and returns AJ_OK or an error
 * status (with aj_set_error's message). */
typedef aj_status (*aj_rule_fn)(void* context, const aj_array* a, const aj_array* b, aj_array* out);

typedef struct aj_function_desc {
  size_t struct_size;    /* sizeof(aj_function_desc) */
  aj_trace_fn trace;     /* required */
  void* context;         /* passed to trace and release */
  int32_t n_inputs;      /* every call passes exactly this many */
  int32_t n_outputs;     /* at least 1 */
  aj_release_fn release; /* called once with context when the function dies; may be NULL */
  const char* name;      /* for messages (copied); may be NULL */
  /* Since C API 1.4: aj::compile's checked contract (CompileOptions), held by
   * every call after the first of each signature; a call that would break it
   * fails (AJ_ERROR_USER) naming the input, the op, the line and why. */
  int32_t check_allocations; /* nonzero: a call takes at most max_allocations buffers from the system */
  int64_t max_allocations;   /* (a call over it stops at that allocation; its donated inputs are consumed) */
  const int32_t* in_place;   /* inputs an output must take over in place (donated, nothing else holding */
  int32_t n_in_place;        /* them): checked before the call runs, so a refusal consumes nothing */
  /* Since C API 1.5: derivatives of its own (arrayjit/autodiff.hpp), used
   * when the function is called inside a trace that is differentiated (the
   * callback of aj_vjp or aj_jvp, or an aj_function callback calling those).
   * At most one of the three kinds; all zero: ops are differentiated as
   * recorded. Its value is always trace's.
   *  - custom_vjp (fwd and bwd set): fwd(context, inputs, outs) writes
   *    n_outputs outputs (trace's shapes and dtypes), then n_residuals
   *    residuals; bwd(context, residuals, output cotangents, input
   *    cotangents) writes one per input (an output without a cotangent
   *    gets zeros). Forward mode through it is an error, as in JAX.
   *  - custom_jvp (jvp set): jvp(context, inputs, input tangents, output
   *    tangents), linear in the tangents (zeros for those not given);
   *    reverse mode transposes it.
   *  - checkpoint (nonzero): the backward computes trace's values again
   *    from the inputs instead of keeping them (aj::checkpoint).
   * The callbacks and context live as long as the function or any traced
   * call of it whose outputs are not evaluated yet (release waits). */
  aj_trace_fn fwd;
  aj_rule_fn bwd;
  int32_t n_residuals;
  aj_rule_fn jvp;
  int32_t checkpoint;
} aj_function_desc;

/* A function handle. On failure release is not called. */
AJ_C_API aj_status aj_function_new(const aj_function_desc* desc, aj_function* out);
/* Release one function handle; the function dies (release(context) runs)
 * when the last handle is released and no call is running it. */
AJ_C_API aj_status aj_function_release(aj_function f);

/* Run f on n_inputs arrays; n_outputs new, evaluated handles in outputs. */
AJ_C_API aj_status aj_function_call(aj_function f, const aj_array* inputs, aj_array* outputs);
/* As aj_function_call, but the inputs whose donate[i] is nonzero are
 * consumed: their handles are released and set to null in inputs[], so their
 * buffers may be reused in place for the outputs (a training step updating
 * its weights). A call that fails before running (bad arguments, a failing
 * callback) consumes nothing; once it runs, the donated inputs are consumed
 * even if running fails (their buffers may have been written). */
AJ_C_API aj_status aj_function_call_donate(aj_function f, aj_array* inputs, const int* donate, aj_array* outputs);

/* ---- derivatives (arrayjit/autodiff.hpp; since C API 1.5) ---------------------------------------
 * f is called once, traced on stand-ins for the primals (the rules of an
 * aj_function callback hold: it records ops, evaluates nothing), and the
 * derivative is built from the ops it recorded. Results are new lazy
 * handles: evaluating them with f's outputs fuses the forward and the
 * backward work. Only floating-point values carry derivatives: integer and
 * bool primals get zeros. These may be called inside a traced callback (a
 * training step's gradient inside an aj_function) and inside f itself
 * (derivatives of derivatives). */

/* f's n_outputs outputs and, for each of its n_inputs primals, the sum over
 * the outputs of cotangent^T d output / d primal. cotangents: one per output
 * of its shape (a null handle: zero). outputs and grads may be NULL when not
 * wanted. */
AJ_C_API aj_status aj_vjp(aj_trace_fn f, void* context, int32_t n_inputs, int32_t n_outputs, const aj_array* primals,
                          const aj_array* cotangents, aj_array* outputs, aj_array* grads);
/* f's outputs and their tangents: d output / d primals applied to the
 * tangents (one per primal of its shape; a null handle: zero). outputs may be
 * NULL. */
AJ_C_API aj_status aj_jvp(aj_trace_fn f, void* context, int32_t n_inputs, int32_t n_outputs, const aj_array* primals,
                          const aj_array* tangents, aj_array* outputs, aj_array* tangents_out);

/* ---- strided views ------------------------------------------------------------------------------ */

/* What aj_view_acquire is asked for. Without AJ_VIEW_WRITABLE the view is
 * read-only; without a layout flag any strides (negative, zero) may come. */
enum {
  AJ_VIEW_ANY = 0,
  AJ_VIEW_WRITABLE = 1,     /* only granted when no other array reads the buffer */
  AJ_VIEW_C_CONTIGUOUS = 2, /* row-major, no gaps */
  AJ_VIEW_F_CONTIGUOUS = 4  /* column-major, no gaps */
};

typedef struct aj_view {
  size_t struct_size;     /* sizeof(aj_view): set by the caller, also before aj_view_acquire */
  void* data;             /* element [0, 0, ...] */
  int32_t ndim;
  const int64_t* shape;   /* ndim extents */
  const int64_t* strides; /* ndim strides in BYTES (as Py_buffer) */
  int32_t dtype;          /* aj_dtype */
  const char* format;     /* PEP 3118 struct format: "?", "i", "q", "f", "d", "e" (f16); "" for bf16 (none exists) */
  int64_t itemsize;       /* bytes per element */
  int32_t device_type;    /* aj_device_type */
  int32_t device_id;
  int32_t readonly;       /* nonzero: must not be written */
  void* owner;            /* what keeps the memory alive; released by aj_view_release */
} aj_view;

/* Evaluate `a` and fill `view` with its layout (view->struct_size set by the
 * caller first). The view owns its shape and strides storage and pins the
 * buffer (it is neither freed nor reused in place) until aj_view_release,
 * which is the only thing that unpins it; releasing `a` meanwhile is fine.
 * Fails, leaving `view` zeroed but for struct_size, when `flags` cannot be met
 * (e.g. a transposed array asked for C-contiguous, or a writable view of a
 * buffer another array shares). */
AJ_C_API aj_status aj_view_acquire(aj_array a, int flags, aj_view* view);
/* Give everything back; the view is zeroed but for struct_size. A zeroed view
 * is ignored, and so is a view whose owner was already given back: a struct
 * copy of a released view, released again, does nothing (arrayjit keeps the
 * set of views it handed out; nothing of the copy is read but owner). */
AJ_C_API void aj_view_release(aj_view* view);

/* An array that borrows the memory `view` describes (CPU or CUDA-host; strides
 * in bytes, multiples of the item size, NULL for row-major; view->owner is not
 * used). arrayjit never writes it. `release(context)` is called exactly once,
 * when the last array using the memory dies; a failed call takes nothing
 * (release is not called). It may be NULL. */
AJ_C_API aj_status aj_array_from_view(const aj_view* view, aj_release_fn release, void* context, aj_array* out);
/* A copy of the memory `view` describes (any strides); the caller keeps it. */
AJ_C_API aj_status aj_array_copy_view(const aj_view* view, aj_array* out);
/* An array that borrows CUDA device memory (view->device_type AJ_DEVICE_CUDA,
 * view->device_id the device; the CUDA Array Interface rule: the producer
 * names the stream its writes were enqueued on). `producer_stream` is that
 * CUstream (NULL: the default stream; 1, 2: CU_STREAM_LEGACY/PER_THREAD;
 * (void*)-1: nothing to wait for). arrayjit's stream waits on an event
 * recorded there (no synchronization). The memory is checked with the driver
 * (host memory is an error); arrayjit never writes it. `release(context)` is
 * called exactly once, after the last array using it died AND arrayjit's
 * work reading it completed (an event; the call happens then or at a later
 * arrayjit CUDA call, on that call's thread, never on a driver thread). */
AJ_C_API aj_status aj_array_from_cuda_view(const aj_view* view, void* producer_stream, aj_release_fn release,
                                           void* context, aj_array* out);
/* The CUstream arrayjit enqueues work for CUDA device `device_id` on, on
 * this thread: the stream to name to a producer (DLPack's __dlpack__(stream))
 * or to wait on. AJ_ERROR_RUNTIME where CUDA or the device is unavailable. */
AJ_C_API aj_status aj_cuda_current_stream(int32_t device_id, void** out);
/* Until the matching aj_cuda_stream_pop, work for CUDA device `device_id` on
 * this thread is enqueued on `stream`, a caller's CUstream of the device's
 * primary context (PyTorch's torch.cuda.Stream.cuda_stream, CuPy's, your own;
 * NULL: the legacy default stream), ordered after what is already on it, with
 * no synchronization; reads (aj_array_read, aj_array_item_*) wait for that
 * stream only. The stream must outlive the arrays last used on it. Pushes
 * nest; pop in reverse order (a pop of another device's stream is an error). */
AJ_C_API aj_status aj_cuda_stream_push(int32_t device_id, void* stream);
AJ_C_API aj_status aj_cuda_stream_pop(int32_t device_id);

/* ---- CUDA: what there is (arrayjit/cuda.hpp; since C API 1.5) ---------------------------------
 * Texts by aj_array_to_string's rule (snprintf's). */
/* 1 when the driver is loaded and a device exists, else 0 (never fails);
 * the number of devices (0 when unavailable); why not ("" when available). */
AJ_C_API int aj_cuda_available(void);
AJ_C_API int aj_cuda_device_count(void);
AJ_C_API aj_status aj_cuda_unavailable_reason(char* buf, size_t cap, size_t* len);
/* 1 when NVRTC is found (kernels compile, with or without a GPU); why not. */
AJ_C_API int aj_cuda_compiler_available(void);
AJ_C_API aj_status aj_cuda_compiler_reason(char* buf, size_t cap, size_t* len);
/* The CUDA C source of every kernel evaluating the n arrays on a GPU would
 * run, in order (computes nothing; needs no GPU, driver or NVRTC). */
AJ_C_API aj_status aj_cuda_kernel_source(const aj_array* arrays, size_t n, char* buf, size_t cap, size_t* len);
/* Gives device `device`'s cached memory (pool and pinned staging) back. */
AJ_C_API aj_status aj_cuda_trim_memory(int32_t device);
/* Runs the release callbacks of borrowed device memory whose arrays died
 * (aj_array_from_cuda_view); with `wait` nonzero, first waits for arrayjit's
 * work on those buffers. */
AJ_C_API aj_status aj_cuda_release_borrowed(int wait);

/* ---- host callbacks (arrayjit/host_callback.hpp; since C API 1.5) -------------------------------
 * A C function over evaluated host buffers as a node of the graph: it runs
 * when its results are evaluated, as a step ordered with the kernels, also
 * in every replay of a traced aj_function (the trace does not call it).
 * `inputs` are the arrays as laid out (aj_view: byte strides, readonly set;
 * a broadcast input has zero strides); `outputs` one row-major buffer per
 * result, to be filled. It returns AJ_OK, or an error status (with
 * aj_set_error's message: the evaluation fails naming the callback). It is
 * treated as pure (called once per evaluation of its results, maybe not at
 * all when nothing reads them). The results share one dtype. Host only.
 * Derivatives: with `vjp`, reverse mode calls it with inputs = (the call's
 * inputs, its results, the results' cotangents) and outputs = one cotangent
 * per floating-point input; without, differentiating it is an error. */
typedef aj_status (*aj_host_fn)(void* context, const aj_view* inputs, int32_t n_inputs, const aj_view* outputs,
                                int32_t n_outputs);
typedef struct aj_host_callback_desc {
  size_t struct_size;    /* sizeof(aj_host_callback_desc) */
  aj_host_fn fn;         /* required */
  aj_host_fn vjp;        /* may be NULL */
  void* context;         /* passed to fn, vjp and release */
  aj_release_fn release; /* called once, when nothing can run fn any more (its results evaluated or
                            gone, no kept program holding it); may be NULL */
  const char* name;      /* for messages (copied); may be NULL */
} aj_host_callback_desc;
/* The n_results results (lazy) of desc->fn over n_inputs arrays: result i
 * has dtype `dtype` and shape shapes[i][0..ndims[i]). On failure release is
 * not called. */
AJ_C_API aj_status aj_host_callback(const aj_host_callback_desc* desc, aj_dtype dtype, const int64_t* const* shapes,
                                    const int32_t* ndims, int32_t n_results, const aj_array* inputs, int32_t n_inputs,
                                    aj_array* outs);

/* ---- several processes (arrayjit/distributed.hpp; since C API 1.8) -----------------------------
 * Collectives over MPI as lazy ops: each runs when its result is evaluated,
 * as a step ordered with the kernels around it. Start the program with
 * mpirun -np N; every rank must evaluate the same collectives in the same
 * order (a disagreement is an AJ_ERROR_USER on every rank naming what each
 * asked for; a rank that waits past the timeout gets AJ_ERROR_RUNTIME). A
 * process without a launcher is a group of one: every collective is its
 * input. Groups are numbers: 0 is the world; aj_distributed_split makes more
 * (-1: this process joined none). mean: floating-point arrays only; on bool
 * arrays sum and max are or, prod and min are and. */
typedef enum aj_reduce_op {
  AJ_REDUCE_SUM = 0,
  AJ_REDUCE_MEAN = 1,
  AJ_REDUCE_MAX = 2,
  AJ_REDUCE_MIN = 3,
  AJ_REDUCE_PROD = 4
} aj_reduce_op;
/* Starts MPI (once); rank and size of the world (either pointer may be NULL).
 * strict: a process not started by a launcher is an error, not a group of one. */
AJ_C_API aj_status aj_distributed_init(int strict, int32_t* rank, int32_t* size);
AJ_C_API aj_status aj_distributed_group_info(int64_t group, int32_t* rank, int32_t* size);
/* Collective over `group`: the ranks with the same color form a new group,
 * ranked by key (key < 0: by rank in `group`); a negative color joins none. */
AJ_C_API aj_status aj_distributed_split(int64_t group, int32_t color, int32_t key, int64_t* out_group);
/* Seconds a collective waits for the other ranks (default 300). */
AJ_C_API aj_status aj_distributed_set_timeout(double seconds);
/* Do exchanges run while the steps that do not read them do (since C API
 * 1.9)? 1: yes, 0: no, -1: automatic (AJ_DISTRIBUTED_OVERLAP, else yes with
 * at least two hardware threads per rank on the machine). */
AJ_C_API aj_status aj_distributed_set_overlap(int32_t mode);
/* *on = 1 when exchanges overlap now (the setting, or what automatic chose), else 0. */
AJ_C_API aj_status aj_distributed_overlap(int32_t* on);
/* The elementwise reduction over the ranks (x's shape). */
AJ_C_API aj_status aj_distributed_all_reduce(aj_array x, aj_reduce_op op, int64_t group, aj_array* out);
/* Every rank's x along axis 0, in rank order ([size * n, ...]; rank 0: [size]). */
AJ_C_API aj_status aj_distributed_all_gather(aj_array x, int64_t group, aj_array* out);
/* Block `rank` of the reduction, x split along axis 0 into size blocks. */
AJ_C_API aj_status aj_distributed_reduce_scatter(aj_array x, aj_reduce_op op, int64_t group, aj_array* out);
/* The root's x on every rank. */
AJ_C_API aj_status aj_distributed_broadcast(aj_array x, int32_t root, int64_t group, aj_array* out);
/* x sent to dst when the result (x's values) is evaluated; the receiver's
 * aj_distributed_recv names this rank, x's shape and dtype. */
AJ_C_API aj_status aj_distributed_send(aj_array x, int32_t dst, int64_t group, aj_array* out);
AJ_C_API aj_status aj_distributed_recv(const int64_t* shape, int32_t ndim, aj_dtype dtype, int32_t src, int64_t group,
                                       aj_array* out);
/* Data-parallel training (since C API 1.9): the mean over the ranks of each
 * of the n gradients (floating-point), exchanged in buckets of at most
 * bucket_bytes (the last gradient first; one all_reduce per bucket), into
 * outs[0..n) in grads' order (arrayjit/distributed.hpp, average_gradients). */
AJ_C_API aj_status aj_distributed_average_gradients(const aj_array* grads, size_t n, int64_t bucket_bytes,
                                                    int64_t group, aj_array* outs);

#ifdef __cplusplus
}
#endif

#endif /* ARRAYJIT_H */

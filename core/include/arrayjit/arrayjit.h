/* arrayjit's C API (C99). Link libarrayjit.so; only aj_* symbols are exported.
 *
 * Every call that can fail returns an aj_status; on failure aj_last_error()
 * gives the message (per thread, valid until this thread's next failing call).
 * No C++ exception ever crosses this boundary.
 *
 * This header starts with what exchanging arrays needs (handles, a strided
 * view with acquire/release in the spirit of PEP 3118's Py_buffer, and, in
 * <arrayjit/dlpack.h>, DLPack); the full C API builds on it.
 */
#ifndef ARRAYJIT_H
#define ARRAYJIT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define AJ_C_API __attribute__((visibility("default")))
#else
#define AJ_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors ----------------------------------------------------- */

typedef enum aj_status {
  AJ_OK = 0,
  AJ_ERROR_USER = 1,     /* a bad argument or request; nothing changed */
  AJ_ERROR_RUNTIME = 2,  /* out of memory, compile failure, device error */
  AJ_ERROR_INTERNAL = 3  /* a bug in arrayjit: please report it */
} aj_status;

/* The message of this thread's last failed call ("" when none failed). */
AJ_C_API const char* aj_last_error(void);

/* ---- arrays ---------------------------------------------------------------- */

/* aj::DType's values (arrayjit/dtypes.def). F16: IEEE binary16; BF16: bfloat16. */
typedef enum aj_dtype { AJ_BOOL = 0, AJ_I32 = 1, AJ_I64 = 2, AJ_F32 = 3, AJ_F64 = 4, AJ_F16 = 5, AJ_BF16 = 6 } aj_dtype;

/* Device types use DLPack's codes. */
typedef enum aj_device_type {
  AJ_DEVICE_CPU = 1,
  AJ_DEVICE_CUDA = 2,
  AJ_DEVICE_CUDA_HOST = 3 /* pinned host memory: read like CPU memory */
} aj_device_type;

/* A handle to an arrayjit array (lazy until evaluated). Each handle is
 * released once with aj_array_release. */
typedef struct aj_array aj_array;

AJ_C_API void aj_array_release(aj_array* a); /* NULL is ignored */
/* A second handle to the same array. */
AJ_C_API aj_status aj_array_retain(const aj_array* a, aj_array** out);
/* The values 0, 1, ..., n - 1 (lazy; a small way to make an array from C). */
AJ_C_API aj_status aj_arange(int64_t n, aj_dtype dtype, aj_array** out);
/* Evaluate now. */
AJ_C_API aj_status aj_eval(const aj_array* a);

/* ---- strided views ----------------------------------------------------------- */

/* What aj_view_acquire is asked for. Without AJ_VIEW_WRITABLE the view is
 * read-only; without a layout flag any strides (negative, zero) may come. */
enum {
  AJ_VIEW_ANY = 0,
  AJ_VIEW_WRITABLE = 1,     /* only granted when no other array reads the buffer */
  AJ_VIEW_C_CONTIGUOUS = 2, /* row-major, no gaps */
  AJ_VIEW_F_CONTIGUOUS = 4  /* column-major, no gaps */
};

typedef struct aj_view {
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

/* Evaluate `a` and fill `view` with its layout. The view owns its shape and
 * strides storage and pins the buffer (it is neither freed nor reused in
 * place) until aj_view_release, which is the only thing that unpins it.
 * Fails, leaving `view` zeroed, when `flags` cannot be met (e.g. a
 * transposed array asked for C-contiguous, or a writable view of a buffer
 * another array shares). */
AJ_C_API aj_status aj_view_acquire(const aj_array* a, int flags, aj_view* view);
/* Give everything back; the view is zeroed. A zeroed view is ignored. */
AJ_C_API void aj_view_release(aj_view* view);

/* An array that borrows the memory `view` describes (CPU or CUDA-host; strides
 * in bytes, multiples of the item size; view->owner is not used). arrayjit never
 * writes it. `release(context)` is called exactly once, when the last array
 * using the memory dies; a failed call takes nothing (release is not called).
 * It may be NULL. */
typedef void (*aj_release_fn)(void* context);
AJ_C_API aj_status aj_array_from_view(const aj_view* view, aj_release_fn release, void* context,
                                      aj_array** out);

#ifdef __cplusplus
}
#endif

#endif /* ARRAYJIT_H */

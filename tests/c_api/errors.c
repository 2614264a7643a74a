/* The C API's error paths and ownership rules, from C: every bad call returns
 * a status with a message, sets its output to the null handle, and changes
 * nothing (no handle made or lost). */
#include <arrayjit/arrayjit.h>
#include <arrayjit/dlpack.h>
#include <stdio.h>
#include <string.h>

#include "checks.h"

void check_fails(int got, int status, const char* words, const char* call, const char* file, int line) {
  ++checks_run;
  /* A C caller has no source line of arrayjit's to read: none is named. */
  if (got != status || strstr(aj_last_error(), words) == NULL || strstr(aj_last_error(), ".cpp:") != NULL) {
    ++checks_failed;
    printf("  CHECK FAILED at %s:%d: %s gave status %d (expected %d), message \"%s\" (expected to contain \"%s\")\n",
           file, line, call, got, status, aj_last_error(), words);
  }
}

static aj_array vector_f32(int n) {
  aj_array a = {0};
  CHECK(aj_arange_range(0.5, 0.5 + n, 1, AJ_F32, &a) == AJ_OK);
  return a;
}

static aj_status fails_inside(void* context, const aj_array* in, aj_array* out) {
  (void)context;
  (void)out;
  return aj_eval(in[0]); /* a traced callback may not evaluate */
}

static aj_status writes_nothing(void* context, const aj_array* in, aj_array* out) {
  aj_array tmp = {0};
  (void)context;
  (void)out;
  return aj_exp(in[0], &tmp); /* made, not returned: released by the call */
}

static int released_contexts = 0;
static void count_release(void* context) {
  ++released_contexts;
  ++*(int*)context;
}

void error_paths(void) {
  const int64_t s23[2] = {2, 3}, s4[1] = {4};
  const int32_t axis5 = 5;
  aj_array x = vector_f32(3), y = vector_f32(4), m = {0}, out = {0}, bogus = {0}, stale;
  aj_function f = {0};
  aj_function_desc desc = {0};
  aj_view view = {0};
  float buf[8];
  size_t live;
  char text[16];
  CHECK(aj_zeros(s23, 2, AJ_F64, &m) == AJ_OK);
  live = aj_live_handles();

  /* handles: null, made up, released, released twice, of the wrong kind */
  CHECK_FAILS(aj_exp(bogus, &out), AJ_ERROR_HANDLE, "null aj_array handle");
  CHECK(AJ_IS_NULL(out));
  bogus._id = 0x7777000012345ULL;
  CHECK_FAILS(aj_exp(bogus, &out), AJ_ERROR_HANDLE, "not an arrayjit handle");
  CHECK(aj_array_retain(x, &stale) == AJ_OK);
  CHECK(aj_array_release(stale) == AJ_OK);
  CHECK_FAILS(aj_exp(stale, &out), AJ_ERROR_HANDLE, "released aj_array handle");
  CHECK_FAILS(aj_array_release(stale), AJ_ERROR_HANDLE, "released");
  CHECK(aj_array_release(bogus) == AJ_ERROR_HANDLE);
  desc.struct_size = sizeof desc;
  desc.trace = fails_inside;
  desc.n_inputs = 1;
  desc.n_outputs = 1;
  desc.name = "evaluates";
  CHECK(aj_function_new(&desc, &f) == AJ_OK);
  bogus._id = f._id; /* a function handle passed where an array goes */
  CHECK_FAILS(aj_exp(bogus, &out), AJ_ERROR_HANDLE, "is an aj_function handle, not an aj_array");
  CHECK(aj_live_handles() == live + 1);

  /* shapes, axes, dtypes */
  CHECK_FAILS(aj_add(x, y, &out), AJ_ERROR_USER, "broadcast");
  CHECK(AJ_IS_NULL(out));
  CHECK_FAILS(aj_reshape(y, s23, 2, &out), AJ_ERROR_USER, "reshape");
  CHECK_FAILS(aj_matmul(m, y, &out), AJ_ERROR_USER, "matmul");
  CHECK_FAILS(aj_sum(m, &axis5, 1, 0, &out), AJ_ERROR_USER, "axis");
  CHECK_FAILS(aj_argmax(m, &axis5, 0, &out), AJ_ERROR_USER, "axis");
  CHECK_FAILS(aj_logical_and(x, x, &out), AJ_ERROR_USER, "bool");
  CHECK_FAILS(aj_zeros(s4, 1, (aj_dtype)42, &out), AJ_ERROR_USER, "not a dtype");
  CHECK_FAILS(aj_random_uniform(s4, 1, 0, 1, AJ_I32, &out), AJ_ERROR_USER, "floating point");
  CHECK_FAILS(aj_zeros(s4, -1, AJ_F32, &out), AJ_ERROR_USER, "negative ndim");

  /* null pointers */
  CHECK_FAILS(aj_exp(x, NULL), AJ_ERROR_USER, "null output");
  CHECK_FAILS(aj_zeros(NULL, 2, AJ_F32, &out), AJ_ERROR_USER, "null shape");
  CHECK_FAILS(aj_array_from_data(NULL, AJ_F32, s4, 1, &out), AJ_ERROR_USER, "null data");
  CHECK_FAILS(aj_array_shape(m, NULL, 2), AJ_ERROR_USER, "null shape");
  CHECK_FAILS(aj_concatenate(NULL, 2, 0, &out), AJ_ERROR_USER, "null array list");
  {
    aj_function g = f;
    CHECK_FAILS(aj_function_new(NULL, &g), AJ_ERROR_USER, "null");
    CHECK(AJ_IS_NULL(g));
  }

  /* reading out: sizes, strides, dtypes */
  CHECK_FAILS(aj_array_read(x, AJ_F32, buf, 8, NULL), AJ_ERROR_USER, "8 bytes given");
  CHECK_FAILS(aj_array_read(x, AJ_F64, buf, 12, NULL), AJ_ERROR_USER, "24 bytes");
  {
    const int64_t strides[2] = {64, 4}, negative[1] = {-4};
    CHECK_FAILS(aj_array_read(m, AJ_F32, buf, sizeof buf, strides), AJ_ERROR_USER, "last element");
    CHECK_FAILS(aj_array_read(x, AJ_F32, buf, sizeof buf, negative), AJ_ERROR_USER, "non-negative");
  }
  CHECK_FAILS(aj_array_read(x, (aj_dtype)99, buf, sizeof buf, NULL), AJ_ERROR_USER, "not a dtype");
  CHECK_FAILS(aj_array_shape(m, (int64_t*)buf, 1), AJ_ERROR_USER, "capacity 1");
  {
    double v;
    CHECK_FAILS(aj_array_item_f64(x, &v), AJ_ERROR_USER, "exactly one");
  }
  CHECK_FAILS(aj_view_acquire(x, AJ_VIEW_ANY, &view), AJ_ERROR_USER, "struct_size");
  CHECK(aj_array_to_string(x, text, sizeof text, &live) == AJ_OK);
  CHECK(strlen(text) == sizeof text - 1 && live > sizeof text); /* truncated, with the full length */

  /* traced functions: misuse is reported, nothing leaks */
  live = aj_live_handles();
  {
    aj_array res = {0};
    const int donate[1] = {1};
    aj_array donated = x;
    CHECK_FAILS(aj_function_call(f, &x, &res), AJ_ERROR_USER, "while tracing function 'evaluates'");
    CHECK(AJ_IS_NULL(res));
    CHECK_FAILS(aj_function_call_donate(f, &donated, donate, &res), AJ_ERROR_USER, "while tracing");
    CHECK(donated._id == x._id); /* a call that fails before running consumes nothing */
    CHECK(aj_function_release(f) == AJ_OK);
    CHECK_FAILS(aj_function_release(f), AJ_ERROR_HANDLE, "released aj_function");
    desc.trace = writes_nothing;
    desc.name = "lazy";
    CHECK(aj_function_new(&desc, &f) == AJ_OK);
    CHECK_FAILS(aj_function_call(f, &x, &res), AJ_ERROR_USER, "must write a handle to every output");
    CHECK(aj_function_release(f) == AJ_OK);
    desc.struct_size = 8; /* a caller that did not set it */
    CHECK_FAILS(aj_function_new(&desc, &f), AJ_ERROR_USER, "struct_size");
  }
  CHECK(aj_live_handles() == live - 1); /* f is gone; the callbacks' own handles were released */

  CHECK(aj_array_release(x) == AJ_OK);
  CHECK(aj_array_release(y) == AJ_OK);
  CHECK(aj_array_release(m) == AJ_OK);
}

void ownership(void) {
  double data[6] = {1, 2, 3, 4, 5, 6}, back[6];
  const int64_t shape[2] = {2, 3};
  int calls = 0;
  aj_array a = {0}, t = {0}, s = {0}, c = {0};
  aj_function_desc desc = {0};
  aj_function f = {0};

  /* a borrow's release runs once, when the last array using the memory dies */
  released_contexts = 0;
  CHECK(aj_array_borrow(data, AJ_F64, shape, 2, count_release, &calls, &a) == AJ_OK);
  CHECK(aj_transpose(a, NULL, 0, &t) == AJ_OK); /* shares the memory */
  CHECK(aj_scalar_f64(10.0, &c) == AJ_OK);
  CHECK(aj_multiply(a, c, &s) == AJ_OK);
  CHECK(aj_array_release(a) == AJ_OK);
  CHECK(aj_eval(s) == AJ_OK);
  CHECK(calls == 0); /* the transpose still reads it */
  CHECK(aj_array_read(s, AJ_F64, back, sizeof back, NULL) == AJ_OK);
  CHECK(back[0] == 10 && back[5] == 60);
  { /* out through DLPack and back in: the same memory, the export released by arrayjit's import */
    DLManagedTensorVersioned* dl = NULL;
    aj_array again = {0};
    double values[6] = {0};
    CHECK(aj_to_dlpack_versioned(s, NULL, &dl) == AJ_OK);
    CHECK(dl != NULL && dl->dl_tensor.ndim == 2 && dl->dl_tensor.shape[1] == 3);
    CHECK(aj_from_dlpack_versioned(dl, &again) == AJ_OK); /* takes dl: its deleter runs at the last release */
    CHECK(aj_array_read(again, AJ_F64, values, sizeof values, NULL) == AJ_OK);
    CHECK(values[4] == 50);
    CHECK(aj_array_release(again) == AJ_OK);
  }
  CHECK(aj_array_release(t) == AJ_OK);
  CHECK(calls == 1 && released_contexts == 1);
  CHECK(aj_array_release(s) == AJ_OK);
  CHECK(aj_array_release(c) == AJ_OK);
  CHECK(calls == 1);

  /* a function's release runs once, when its last handle goes; not for a failed new */
  desc.struct_size = sizeof desc;
  desc.trace = writes_nothing;
  desc.n_inputs = 1;
  desc.n_outputs = 1;
  desc.release = count_release;
  desc.context = &calls;
  CHECK(aj_function_new(&desc, &f) == AJ_OK);
  CHECK(calls == 1);
  CHECK(aj_function_release(f) == AJ_OK);
  CHECK(calls == 2);
  desc.n_outputs = 0;
  CHECK_FAILS(aj_function_new(&desc, &f), AJ_ERROR_USER, "n_outputs");
  CHECK(calls == 2);
}

/* The header's contracts that an earlier release broke: NULL axis lists with
 * a count (NULL means all axes, the count unread), releasing a struct copy of
 * a view after the original (ignored, not a double free), at most 64 axes,
 * and foreign layouts checked before anything is read. */
void header_contracts(void) {
  const float values[6] = {1.5f, -2.0f, 4.25f, 8.0f, -0.5f, 3.0f};
  const int64_t s23[2] = {2, 3}, s1x6x1[3] = {1, 6, 1};
  int64_t shape[3] = {0, 0, 0}, ones[65];
  aj_array m = {0}, out = {0}, col = {0};
  aj_view view, copy;
  float got[6];
  double total = 0;
  int32_t ndim = 0;
  int i, calls = 0;
  size_t live = aj_live_handles();
  CHECK(aj_array_from_data(values, AJ_F32, s23, 2, &m) == AJ_OK);

  /* NULL axes with a nonzero (even negative) count: all axes */
  CHECK(aj_sum(m, NULL, 1, 0, &out) == AJ_OK);
  CHECK(aj_array_item_f64(out, &total) == AJ_OK);
  CHECK(total == 1.5 - 2.0 + 4.25 + 8.0 - 0.5 + 3.0);
  CHECK(aj_array_release(out) == AJ_OK);
  CHECK(aj_max(m, NULL, -7, 1, &out) == AJ_OK);
  CHECK(aj_array_ndim(out, &ndim) == AJ_OK && ndim == 2);
  CHECK(aj_array_item_f64(out, &total) == AJ_OK && total == 8.0);
  CHECK(aj_array_release(out) == AJ_OK);
  /* NULL perm with a count: reversed axes */
  CHECK(aj_transpose(m, NULL, 5, &out) == AJ_OK);
  CHECK(aj_array_shape(out, shape, 3) == AJ_OK && shape[0] == 3 && shape[1] == 2);
  CHECK(aj_array_read(out, AJ_F32, got, sizeof got, NULL) == AJ_OK);
  CHECK(got[0] == values[0] && got[1] == values[3] && got[5] == values[5]);
  CHECK(aj_array_release(out) == AJ_OK);
  /* NULL squeeze axes with a count: every extent-1 axis */
  CHECK(aj_reshape(m, s1x6x1, 3, &col) == AJ_OK);
  CHECK(aj_squeeze(col, NULL, 4, &out) == AJ_OK);
  CHECK(aj_array_shape(out, shape, 3) == AJ_OK && aj_array_ndim(out, &ndim) == AJ_OK && ndim == 1 && shape[0] == 6);
  CHECK(aj_array_release(out) == AJ_OK);
  CHECK(aj_array_release(col) == AJ_OK);
  /* a non-NULL list with a negative count is still an error */
  CHECK_FAILS(aj_sum(m, (const int32_t*)shape, -1, 0, &out), AJ_ERROR_USER, "negative number of axes");

  /* at most 64 axes, as in C++ */
  for (i = 0; i < 65; ++i) ones[i] = 1;
  CHECK(aj_zeros(ones, 64, AJ_F32, &out) == AJ_OK);
  CHECK(aj_array_release(out) == AJ_OK);
  CHECK_FAILS(aj_zeros(ones, 65, AJ_F32, &out), AJ_ERROR_USER, "at most 64");
  CHECK(AJ_IS_NULL(out));

  /* a view's struct copy released after the original: ignored */
  memset(&view, 0, sizeof view);
  view.struct_size = sizeof view;
  CHECK(aj_view_acquire(m, AJ_VIEW_ANY, &view) == AJ_OK);
  copy = view;
  aj_view_release(&view);
  CHECK(view.owner == NULL);
  aj_view_release(&copy); /* already given back: nothing happens */
  aj_view_release(&copy);
  CHECK(aj_array_read(m, AJ_F32, got, sizeof got, NULL) == AJ_OK && got[2] == values[2]);

  /* hostile layouts: refused before a byte is read, the release never called */
  {
    const int64_t rows3[2] = {3, 1}, huge_strides[2] = {(int64_t)1 << 62, 4};
    const int64_t down[1] = {2}, far_below[1] = {-((int64_t)1 << 61)};
    const int64_t many[1] = {(int64_t)1 << 62};
    aj_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = (void*)values;
    v.dtype = AJ_F32;
    v.itemsize = 4;
    v.device_type = AJ_DEVICE_CPU;
    v.ndim = 2;
    v.shape = rows3;
    v.strides = huge_strides;
    CHECK_FAILS(aj_array_from_view(&v, count_release, &calls, &out), AJ_ERROR_USER, "2^62 bytes");
    CHECK_FAILS(aj_array_copy_view(&v, &out), AJ_ERROR_USER, "2^62 bytes");
    v.ndim = 1;
    v.shape = down;
    v.strides = far_below;
    CHECK_FAILS(aj_array_from_view(&v, count_release, &calls, &out), AJ_ERROR_USER, "address space");
    v.shape = many;
    v.strides = NULL;
    CHECK_FAILS(aj_array_from_view(&v, count_release, &calls, &out), AJ_ERROR_USER, "2^62 bytes");
    v.shape = down;
    v.data = NULL;
    CHECK_FAILS(aj_array_copy_view(&v, &out), AJ_ERROR_USER, "null data");
    CHECK(AJ_IS_NULL(out));
    CHECK(calls == 0);
  }

  CHECK(aj_array_release(m) == AJ_OK);
  CHECK(aj_live_handles() == live);
}

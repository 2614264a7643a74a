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
  if (got != status || strstr(aj_last_error(), words) == NULL) {
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
  CHECK_FAILS(aj_sum(m, NULL, 1, 0, &out), AJ_ERROR_USER, "null axes");
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
  CHECK_FAILS(aj_array_read(x, (aj_dtype)9, buf, sizeof buf, NULL), AJ_ERROR_USER, "not a dtype");
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

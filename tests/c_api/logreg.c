/* A reverse-mode tape in C over arrayjit's C API, and logistic regression
 * trained with it (see logreg.h). The tape records each op's inputs and its
 * value (an aj_array handle); backward walks it in reverse and applies each
 * op's hand-written vector-Jacobian product, again through the C API. The
 * training step (forward, backward, SGD update) is an aj_function: arrayjit
 * traces it and each call runs it on new weights. */
#include "logreg.h"

#include <arrayjit/arrayjit.h>
#include <stdio.h>

#define TAPE_MAX 48

typedef enum { OP_LEAF, OP_MATMUL, OP_ADD, OP_SUB, OP_MUL, OP_SIGMOID, OP_LOG, OP_NEG, OP_MEAN } op_kind;

typedef struct {
  op_kind op;
  int a, b;        /* inputs (entries of the tape), -1 for none */
  int needs_grad;  /* a parameter is upstream */
  aj_array value;  /* owned by the tape */
  aj_array grad;   /* owned by the tape; null until backward reaches it */
} entry;

typedef struct {
  entry e[TAPE_MAX];
  int n;
  aj_status failed; /* the first failure; every later call is skipped */
} tape;

/* Runs `call` unless something failed before; keeps the first failure. */
#define TRY(t, call)                           \
  do {                                         \
    if ((t)->failed == AJ_OK) (t)->failed = (call); \
  } while (0)

static void drop(aj_array* h) {
  aj_array_release(*h); /* a null handle is ignored */
  h->_id = 0;
}

/* Records an entry; takes `value`. Returns its index (-1 once failed). */
static int push(tape* t, op_kind op, int a, int b, aj_array value) {
  entry* e;
  if (t->failed != AJ_OK || t->n == TAPE_MAX) {
    if (t->failed == AJ_OK) t->failed = AJ_ERROR_USER;
    drop(&value);
    return -1;
  }
  e = &t->e[t->n];
  e->op = op;
  e->a = a;
  e->b = b;
  e->needs_grad = (a >= 0 && t->e[a].needs_grad) || (b >= 0 && t->e[b].needs_grad);
  e->value = value;
  e->grad._id = 0;
  return t->n++;
}

/* A leaf holding a second handle to `x` (the caller keeps its own). */
static int leaf(tape* t, aj_array x, int needs_grad) {
  aj_array v = {0};
  int i;
  TRY(t, aj_array_retain(x, &v));
  i = push(t, OP_LEAF, -1, -1, v);
  if (i >= 0) t->e[i].needs_grad = needs_grad;
  return i;
}

static int weak_constant(tape* t, double c) {
  aj_array v = {0};
  TRY(t, aj_scalar_f64(c, &v));
  return push(t, OP_LEAF, -1, -1, v);
}

static int op1(tape* t, op_kind op, int a) {
  aj_array v = {0};
  aj_array x = a >= 0 ? t->e[a].value : v;
  switch (op) {
    case OP_SIGMOID: TRY(t, aj_sigmoid(x, &v)); break;
    case OP_LOG: TRY(t, aj_log(x, &v)); break;
    case OP_NEG: TRY(t, aj_negative(x, &v)); break;
    case OP_MEAN: TRY(t, aj_mean(x, NULL, 0, 0, &v)); break;
    default: TRY(t, AJ_ERROR_USER); break;
  }
  return push(t, op, a, -1, v);
}

static int op2(tape* t, op_kind op, int a, int b) {
  aj_array v = {0}, none = {0};
  aj_array x = a >= 0 ? t->e[a].value : none, y = b >= 0 ? t->e[b].value : none;
  switch (op) {
    case OP_MATMUL: TRY(t, aj_matmul(x, y, &v)); break;
    case OP_ADD: TRY(t, aj_add(x, y, &v)); break;
    case OP_SUB: TRY(t, aj_subtract(x, y, &v)); break;
    case OP_MUL: TRY(t, aj_multiply(x, y, &v)); break;
    default: TRY(t, AJ_ERROR_USER); break;
  }
  return push(t, op, a, b, v);
}

/* g summed over the axes it was broadcast along, to the shape of `like`
 * (NumPy broadcasting: leading axes, and axes where `like` has extent 1). */
static aj_array unbroadcast(tape* t, aj_array g, aj_array like) {
  int64_t gs[8], ls[8];
  int32_t gn = 0, ln = 0, axes[8], naxes = 0, i;
  aj_array summed = {0}, out = {0};
  TRY(t, aj_array_ndim(g, &gn));
  TRY(t, aj_array_ndim(like, &ln));
  if (t->failed != AJ_OK || gn > 8 || ln > gn) {
    TRY(t, AJ_ERROR_USER);
    return out;
  }
  TRY(t, aj_array_shape(g, gs, 8));
  TRY(t, aj_array_shape(like, ls, 8));
  for (i = 0; i < gn; ++i) {
    if (i < gn - ln || (ls[i - (gn - ln)] == 1 && gs[i] != 1)) axes[naxes++] = i;
  }
  if (naxes == 0) {
    TRY(t, aj_array_retain(g, &out));
    return out;
  }
  TRY(t, aj_sum(g, axes, naxes, 0, &summed));
  TRY(t, aj_reshape(summed, ls, ln, &out));
  drop(&summed);
  return out;
}

/* Adds `g` (taken) to the gradient of entry i, summed to its shape. */
static void accumulate(tape* t, int i, aj_array g) {
  aj_array shaped = unbroadcast(t, g, t->e[i].value), sum = {0};
  drop(&g);
  if (AJ_IS_NULL(t->e[i].grad)) {
    t->e[i].grad = shaped;
    return;
  }
  TRY(t, aj_add(t->e[i].grad, shaped, &sum));
  drop(&shaped);
  drop(&t->e[i].grad);
  t->e[i].grad = sum;
}

/* The vector-Jacobian product of entry i: its inputs' gradients from its own. */
static void vjp(tape* t, int i) {
  const entry* e = &t->e[i];
  aj_array g = e->grad, ga = {0}, gb = {0}, tmp = {0}, tmp2 = {0}, c = {0};
  aj_array a = e->a >= 0 ? t->e[e->a].value : ga, b = e->b >= 0 ? t->e[e->b].value : ga;
  const int da = e->a >= 0 && t->e[e->a].needs_grad, db = e->b >= 0 && t->e[e->b].needs_grad;
  int64_t n = 0, shape[8];
  int32_t nd = 0;
  switch (e->op) {
    case OP_LEAF: return;
    case OP_MATMUL: /* z = A x (matrix times vector): dA = g x^T, dx = A^T g */
      if (da) {
        TRY(t, aj_expand_dims(g, 1, &tmp));
        TRY(t, aj_multiply(tmp, b, &ga));
      }
      if (db) {
        TRY(t, aj_transpose(a, NULL, 0, &tmp2));
        TRY(t, aj_matmul(tmp2, g, &gb));
      }
      break;
    case OP_ADD:
      if (da) TRY(t, aj_array_retain(g, &ga));
      if (db) TRY(t, aj_array_retain(g, &gb));
      break;
    case OP_SUB:
      if (da) TRY(t, aj_array_retain(g, &ga));
      if (db) TRY(t, aj_negative(g, &gb));
      break;
    case OP_MUL:
      if (da) TRY(t, aj_multiply(g, b, &ga));
      if (db) TRY(t, aj_multiply(g, a, &gb));
      break;
    case OP_SIGMOID: /* s' = s (1 - s) */
      TRY(t, aj_scalar_f64(1.0, &c));
      TRY(t, aj_subtract(c, e->value, &tmp));
      TRY(t, aj_multiply(e->value, tmp, &tmp2));
      TRY(t, aj_multiply(g, tmp2, &ga));
      break;
    case OP_LOG: TRY(t, aj_divide(g, a, &ga)); break;
    case OP_NEG: TRY(t, aj_negative(g, &ga)); break;
    case OP_MEAN: /* every element gets g / n */
      TRY(t, aj_array_size(a, &n));
      TRY(t, aj_array_ndim(a, &nd));
      TRY(t, aj_array_shape(a, shape, 8));
      TRY(t, aj_scalar_f64((double)n, &c));
      TRY(t, aj_divide(g, c, &tmp));
      TRY(t, aj_broadcast_to(tmp, shape, nd, &ga));
      break;
  }
  drop(&tmp);
  drop(&tmp2);
  drop(&c);
  if (da) accumulate(t, e->a, ga);
  if (db) accumulate(t, e->b, gb);
}

/* Gradients of the scalar entry `out` for every entry that needs one. */
static void backward(tape* t, int out) {
  int32_t nd = 0;
  aj_dtype dtype = AJ_F32;
  int i;
  if (t->failed != AJ_OK) return;
  TRY(t, aj_array_ndim(t->e[out].value, &nd));
  TRY(t, aj_array_dtype(t->e[out].value, &dtype));
  TRY(t, aj_ones(NULL, 0, dtype, &t->e[out].grad)); /* d out / d out */
  for (i = out; i >= 0 && t->failed == AJ_OK; --i) {
    if (t->e[i].needs_grad && !AJ_IS_NULL(t->e[i].grad)) vjp(t, i);
  }
}

static void tape_free(tape* t) {
  int i;
  for (i = 0; i < t->n; ++i) {
    drop(&t->e[i].value);
    drop(&t->e[i].grad);
  }
  t->n = 0;
}

/* The training step: inputs X, y, w, b, lr; outputs w', b', loss (before the
 * update). Written as an aj_function callback: it only records ops. */
static aj_status step(void* context, const aj_array* in, aj_array* out) {
  tape t;
  int X, y, w, b, xw, z, p, lp, one, q, lq, u, t1, t2, s, loss;
  aj_array tmp = {0};
  (void)context;
  t.n = 0;
  t.failed = AJ_OK;
  X = leaf(&t, in[0], 0);
  y = leaf(&t, in[1], 0);
  w = leaf(&t, in[2], 1);
  b = leaf(&t, in[3], 1);
  xw = op2(&t, OP_MATMUL, X, w);
  z = op2(&t, OP_ADD, xw, b);
  p = op1(&t, OP_SIGMOID, z);
  lp = op1(&t, OP_LOG, p);
  one = weak_constant(&t, 1.0);
  q = op2(&t, OP_SUB, one, p);
  lq = op1(&t, OP_LOG, q);
  u = op2(&t, OP_SUB, one, y);
  t1 = op2(&t, OP_MUL, y, lp);
  t2 = op2(&t, OP_MUL, u, lq);
  s = op2(&t, OP_ADD, t1, t2);
  loss = op1(&t, OP_NEG, op1(&t, OP_MEAN, s)); /* binary cross-entropy */
  backward(&t, loss);
  if (t.failed == AJ_OK) { /* SGD: p' = p - lr * dp */
    TRY(&t, aj_multiply(in[4], t.e[w].grad, &tmp));
    TRY(&t, aj_subtract(in[2], tmp, &out[0]));
    drop(&tmp);
    TRY(&t, aj_multiply(in[4], t.e[b].grad, &tmp));
    TRY(&t, aj_subtract(in[3], tmp, &out[1]));
    drop(&tmp);
    TRY(&t, aj_array_retain(t.e[loss].value, &out[2]));
  }
  tape_free(&t);
  return t.failed;
}

static int fail(const char* what) {
  fprintf(stderr, "logreg: %s failed: %s\n", what, aj_last_error());
  return 1;
}

int logreg_train(int mode, const float* X, const float* y, int n, int d, const float* w0, float b0, float lr,
                 int steps, double* losses, float* w_out, float* b_out) {
  const int64_t xs[2] = {n, d}, ys[1] = {n}, ws[1] = {d};
  aj_array in[5] = {{0}, {0}, {0}, {0}, {0}}, out[3] = {{0}, {0}, {0}};
  const int donate[5] = {0, 0, 1, 1, 0}; /* the weights are updated in place */
  aj_function_desc desc = {0};
  aj_function f = {0};
  int s, rc = 1, i;
  desc.struct_size = sizeof desc;
  desc.trace = step;
  desc.n_inputs = 5;
  desc.n_outputs = 3;
  desc.name = "logreg_step";
  if (aj_array_from_data(X, AJ_F32, xs, 2, &in[0]) || aj_array_from_data(y, AJ_F32, ys, 1, &in[1]) ||
      aj_array_from_data(w0, AJ_F32, ws, 1, &in[2]) || aj_array_from_data(&b0, AJ_F32, NULL, 0, &in[3]) ||
      aj_scalar_f64(lr, &in[4]) || aj_function_new(&desc, &f)) {
    fail("setup");
    goto done;
  }
  for (s = 0; s < steps; ++s) {
    if (mode == LOGREG_FUNCTION) {
      if (aj_function_call_donate(f, in, donate, out)) {
        fail("aj_function_call");
        goto done;
      }
    } else {
      if (step(NULL, in, out) || aj_eval_many(out, 3)) {
        fail("the step");
        goto done;
      }
      drop(&in[2]);
      drop(&in[3]);
    }
    if (aj_array_item_f64(out[2], &losses[s])) {
      fail("reading the loss");
      goto done;
    }
    in[2] = out[0];
    in[3] = out[1];
    out[0]._id = out[1]._id = 0;
    drop(&out[2]);
  }
  if (aj_array_read(in[2], AJ_F32, w_out, sizeof(float) * (size_t)d, NULL) ||
      aj_array_read(in[3], AJ_F32, b_out, sizeof(float), NULL)) {
    fail("reading the weights");
    goto done;
  }
  rc = 0;
done:
  for (i = 0; i < 5; ++i) drop(&in[i]);
  for (i = 0; i < 3; ++i) drop(&out[i]);
  aj_function_release(f);
  return rc;
}

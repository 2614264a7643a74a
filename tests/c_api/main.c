/* The C API from C (C99, -pedantic -Werror): logistic regression on a tape of
 * its own (logreg.c) checked against the same training as plain C loops, and
 * the error paths (errors.c). ctest: c_api. Exit status 0 when every check
 * passes. aj_tests (tests/test_c_api.cpp) runs the same training and compares
 * it with the C++ API. */
#include <arrayjit/arrayjit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "checks.h"
#include "logreg.h"

int checks_failed = 0;
int checks_run = 0;

enum { N = 96, D = 5, STEPS = 40 };

/* A small deterministic generator (the data must not depend on arrayjit). */
static unsigned long long lcg_state = 20240615ULL;
static double uniform01(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(lcg_state >> 11) / 9007199254740992.0;
}

/* The same training as plain C loops, in double. */
static void reference(const float* X, const float* y, const float* w0, float b0, float lr, double* losses,
                      double* w, double* b) {
  double p[N], g[D], gb;
  int s, i, j;
  for (j = 0; j < D; ++j) w[j] = w0[j];
  *b = b0;
  for (s = 0; s < STEPS; ++s) {
    double loss = 0;
    for (i = 0; i < N; ++i) {
      double z = *b;
      for (j = 0; j < D; ++j) z += X[i * D + j] * w[j];
      p[i] = 1.0 / (1.0 + exp(-z));
      loss -= y[i] * log(p[i]) + (1 - y[i]) * log(1 - p[i]);
    }
    losses[s] = loss / N;
    gb = 0;
    for (j = 0; j < D; ++j) g[j] = 0;
    for (i = 0; i < N; ++i) {
      const double r = (p[i] - y[i]) / N;
      gb += r;
      for (j = 0; j < D; ++j) g[j] += X[i * D + j] * r;
    }
    for (j = 0; j < D; ++j) w[j] -= lr * g[j];
    *b -= lr * gb;
  }
}

static void training(void) {
  static float X[N * D], y[N];
  const float w_true[D] = {1.5f, -2.0f, 0.5f, 0.0f, 1.0f}, w0[D] = {0.1f, -0.1f, 0.2f, 0.0f, -0.2f};
  const float b0 = 0.05f, lr = 0.5f;
  double losses_f[STEPS], losses_d[STEPS], losses_ref[STEPS], w_ref[D], b_ref, worst = 0;
  float w_f[D], w_d[D], b_f = 0, b_d = 0;
  int i, j;
  for (i = 0; i < N; ++i) {
    double z = 0.3;
    for (j = 0; j < D; ++j) {
      X[i * D + j] = (float)(2 * uniform01() - 1);
      z += w_true[j] * X[i * D + j];
    }
    y[i] = z + 0.5 * (uniform01() - 0.5) > 0 ? 1.0f : 0.0f;
  }
  CHECK(logreg_train(LOGREG_FUNCTION, X, y, N, D, w0, b0, lr, STEPS, losses_f, w_f, &b_f) == 0);
  CHECK(logreg_train(LOGREG_DIRECT, X, y, N, D, w0, b0, lr, STEPS, losses_d, w_d, &b_d) == 0);
  reference(X, y, w0, b0, lr, losses_ref, w_ref, &b_ref);
  printf("logistic regression, %d samples x %d features, %d SGD steps at lr %g\n", N, D, STEPS, lr);
  for (i = 0; i < STEPS - 1; i += 13) printf("  step %2d: loss %.6f (plain C loops in double: %.6f)\n", i, losses_f[i], losses_ref[i]);
  printf("  step %2d: loss %.6f (plain C loops in double: %.6f)\n", STEPS - 1, losses_f[STEPS - 1],
         losses_ref[STEPS - 1]);
  CHECK(losses_f[STEPS - 1] < 0.7 * losses_f[0]);
  for (i = 0; i < STEPS; ++i) {
    /* the traced function and the direct recording are the same graph: the same numbers */
    CHECK(losses_f[i] == losses_d[i]);
    /* f32 against double: a few ulps of f32 per op */
    CHECK(fabs(losses_f[i] - losses_ref[i]) <= 2e-5 * fabs(losses_ref[i]) + 1e-6);
    if (fabs(losses_f[i] - losses_ref[i]) > worst) worst = fabs(losses_f[i] - losses_ref[i]);
  }
  for (j = 0; j < D; ++j) {
    CHECK(w_f[j] == w_d[j]);
    CHECK(fabs(w_f[j] - w_ref[j]) <= 1e-4 * fabs(w_ref[j]) + 1e-5);
  }
  CHECK(b_f == b_d);
  CHECK(fabs(b_f - b_ref) <= 1e-4 * fabs(b_ref) + 1e-5);
  printf("  largest loss difference from the double loops: %.3g\n", worst);
}

int main(void) {
  CHECK(aj_api_version() >> 16 == AJ_API_VERSION_MAJOR);
  CHECK(aj_api_version() >= AJ_API_VERSION); /* same major, minor at least this header's */
  printf("arrayjit %s, C API %u.%u\n", aj_version(), aj_api_version() >> 16, aj_api_version() & 0xffff);
  CHECK(aj_host_info() != NULL && strstr(aj_host_info(), "level: ") != NULL &&
        strstr(aj_host_info(), "matmul: ") != NULL);
  CHECK(aj_host_info() == aj_host_info()); /* static storage */
  training();
  error_paths();
  ownership();
  header_contracts();
  CHECK(aj_live_handles() == 0); /* every handle made above was released */
  if (checks_failed) {
    printf("FAILED: %d of %d checks\n", checks_failed, checks_run);
    return 1;
  }
  printf("ok: all %d checks passed\n", checks_run);
  return 0;
}

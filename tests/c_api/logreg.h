/* Logistic regression trained through arrayjit's C API on a small tape of its
 * own (tests/c_api/logreg.c), compiled as C99. Used by the C test program
 * (tests/c_api/main.c) and by aj_tests (tests/test_c_api.cpp), which checks
 * its losses against the same training written with the C++ API. */
#ifndef AJ_TEST_LOGREG_H
#define AJ_TEST_LOGREG_H

#ifdef __cplusplus
extern "C" {
#endif

/* How the training step runs: as an aj_function called once per step (traced
 * by arrayjit, weights donated), or recorded and evaluated directly. */
enum { LOGREG_FUNCTION = 0, LOGREG_DIRECT = 1 };

/* Trains w (d floats) and b (one float), starting from w0 and b0, on the
 * n x d row-major samples X and labels y (0 or 1), with SGD at rate lr for
 * `steps` steps. losses[s] gets the mean binary cross-entropy before step s.
 * Returns 0, or prints the C API's message to stderr and returns 1. */
int logreg_train(int mode, const float* X, const float* y, int n, int d, const float* w0, float b0, float lr,
                 int steps, double* losses, float* w_out, float* b_out);

#ifdef __cplusplus
}
#endif

#endif

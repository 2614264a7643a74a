/* The C test program's checks: each prints where it failed and counts. */
#ifndef AJ_TEST_CHECKS_H
#define AJ_TEST_CHECKS_H

#include <stdio.h>

extern int checks_failed;
extern int checks_run;

#define CHECK(cond)                                                                \
  do {                                                                             \
    ++checks_run;                                                                  \
    if (!(cond)) {                                                                 \
      ++checks_failed;                                                             \
      printf("  CHECK FAILED at %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
    }                                                                              \
  } while (0)

/* A call that must fail with `status` and a message containing `words`. */
#define CHECK_FAILS(call, status, words) check_fails((call), (status), (words), #call, __FILE__, __LINE__)
void check_fails(int got, int status, const char* words, const char* call, const char* file, int line);

void error_paths(void); /* errors.c */
void ownership(void);   /* errors.c */
void header_contracts(void); /* errors.c */

#endif

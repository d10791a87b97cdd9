/* The expectations of the C examples: one failure counter, the EXPECT macro that counts and
 * reports a failed expectation with its file, line and text, and the final report. Every
 * example in examples/c includes this file with quotes, so it is found next to the example
 * whatever -I the build passes.
 *
 * Owns: how an example counts and reports what did not hold. Never: stops an example at the
 * first failure (the rest still runs, so one run shows every broken promise), or prints
 * anything but the expression's text (never a value, which may be a secret).
 *
 * The counter is atomic: close_race.c and task.c fail expectations from other threads. */
#ifndef JEVGATE_EXAMPLES_EXPECT_H
#define JEVGATE_EXAMPLES_EXPECT_H

#include <stdatomic.h>
#include <stdio.h>

/* How many expectations failed so far. */
static atomic_int failures = 0;

/* Counts (and reports on stderr) a failed expectation `c`; the example goes on. */
#define EXPECT(c)                                                                  \
  do {                                                                             \
    if (!(c)) {                                                                    \
      fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #c); \
      atomic_fetch_add(&failures, 1);                                              \
    }                                                                              \
  } while (0)

/* The example's exit status: 1 and the failure count on stderr when an expectation failed,
 * else 0 and "all C <what> expectations held" on stdout. */
static inline int expect_report(const char *what) {
  int failed = atomic_load(&failures);
  if (failed != 0) {
    fprintf(stderr, "%d expectation(s) failed\n", failed);
    return 1;
  }
  printf("all C %s expectations held\n", what);
  return 0;
}

#endif

/*
 * jevgate from C: closing a gateway while other threads' calls are in flight (R-C).
 *
 * `jevgate_gateway_close` is thread-safe and leaves the handle valid: a call in flight on another
 * thread finishes or fails with GATEWAY_CLOSED, later calls fail with GATEWAY_CLOSED, and only
 * `jevgate_gateway_free` — once no thread uses the handle — releases it. Here an evaluation is
 * held inside the host's model callback while the gateway closes, a second thread hammers the
 * gateway with calls, and two threads close at once; the test suite runs this under
 * AddressSanitizer, which reports any read of freed memory. Exits non-zero on the first broken
 * expectation.
 */
#define _POSIX_C_SOURCE 200809L
#include "jevgate.h"
#include "expect.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Spins before giving up on a state that should come (bounded, so a bug fails, never hangs). */
#define PATIENCE 100000000L

static jevgate_gateway *gw = NULL;
static atomic_int in_callback = 0;     /* the model callback is running (an evaluation in flight) */
static atomic_int closed_seen_in_callback = 0;
static atomic_long hammer_rounds = 0; /* rounds of calls the hammer thread has made */

static const char *ANSWER =
    "{\"model\":\"my-model\",\"answers\":{\"greeting\":{\"type\":\"noul\",\"noul\":0.9}},"
    "\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}";

static const char *CALL =
    "{\"agentId\":\"assistant\",\"state\":\"Hello\",\"questions\":"
    "{\"greeting\":{\"type\":\"noul\",\"instructions\":\"Is this a greeting?\"}}}";

/* Whether a failed call failed because the gateway closed; frees the error. Any other failure
 * is a broken expectation. */
static int closed_error(jevgate_status st, jevgate_error *err) {
  if (st == JEVGATE_OK) return 0;
  const char *code = jevgate_error_code(err);
  int closed = code != NULL && strcmp(code, "GATEWAY_CLOSED") == 0;
  if (!closed) {
    fprintf(stderr, "unexpected failure: %s: %s\n", code ? code : "(none)",
            err ? jevgate_error_message(err) : "(no error object)");
    atomic_fetch_add(&failures, 1);
  }
  jevgate_error_free(err);
  return 1;
}

/* The host's model. The first evaluation stays inside it until the gateway has closed (seen
 * through a lease call on the same handle), so `jevgate_gateway_close` runs while this
 * evaluation is in flight. */
static char *model(void *user_data, const char *request_json) {
  (void)user_data;
  (void)request_json;
  if (atomic_exchange(&in_callback, 1) == 0) {
    for (long i = 0; i < PATIENCE; i++) {
      char *grant = NULL;
      jevgate_error *err = NULL;
      jevgate_status st = jevgate_lease_acquire(gw, "probe-device", "probe", &grant, &err);
      jevgate_string_free(grant);
      if (closed_error(st, err)) {
        atomic_store(&closed_seen_in_callback, 1);
        break;
      }
      sched_yield();
    }
  }
  char *out = malloc(strlen(ANSWER) + 1);
  if (out != NULL) strcpy(out, ANSWER);
  return out;
}

static void model_free(void *user_data, char *response_json) {
  (void)user_data;
  free(response_json);
}

/* One evaluation, held in the callback across the close: it finishes or reports the close. */
static void *evaluator(void *arg) {
  (void)arg;
  char *result = NULL;
  jevgate_error *err = NULL;
  jevgate_status st = jevgate_evaluate(gw, CALL, &result, &err);
  if (st == JEVGATE_OK) {
    EXPECT(result != NULL && strstr(result, "\"model\":\"my-model\"") != NULL);
    jevgate_string_free(result);
  } else {
    EXPECT(closed_error(st, err));
  }
  return NULL;
}

/* Calls of every kind in a loop until the gateway reports it closed. */
static void *hammer(void *arg) {
  (void)arg;
  for (long round = 0; round < PATIENCE; round++) {
    int closed = 0;
    for (int kind = 0; kind < 5; kind++) {
      jevgate_error *err = NULL;
      char *out = NULL;
      jevgate_status st = JEVGATE_OK;
      switch (kind) {
        case 0: st = jevgate_gateway_doctor(gw, &out, &err); break;
        case 1: st = jevgate_usage(gw, "assistant", 5, 0, &out, &err); break;
        case 2: st = jevgate_devices(gw, "person", &out, &err); break;
        case 3: st = jevgate_lease_acquire(gw, "hammer-device", "hammer", &out, &err); break;
        default: st = jevgate_gateway_secret_env_names(gw, &out, &err); break;
      }
      closed |= closed_error(st, err);
      jevgate_string_free(out);
    }
    EXPECT(jevgate_gateway_generation(gw) >= 1);
    atomic_fetch_add(&hammer_rounds, 1);
    if (closed) break;
  }
  return NULL;
}

static void *closer(void *arg) {
  (void)arg;
  jevgate_gateway_close(gw);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1],
                           "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"callback\"}}}",
                           &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open: %s\n", jevgate_error_message(err));
    return 1;
  }
  EXPECT(jevgate_gateway_set_jev_callback(gw, model, model_free, NULL, &err) == JEVGATE_OK);

  pthread_t eval_thread, hammer_thread, closers[2];
  EXPECT(pthread_create(&hammer_thread, NULL, hammer, NULL) == 0);
  EXPECT(pthread_create(&eval_thread, NULL, evaluator, NULL) == 0);
  /* Close only once an evaluation is inside the callback and the hammer is well under way. */
  for (long i = 0; i < PATIENCE && !(atomic_load(&in_callback) && atomic_load(&hammer_rounds) >= 20); i++)
    sched_yield();
  EXPECT(atomic_load(&in_callback) && atomic_load(&hammer_rounds) >= 20);
  /* Two threads close at once: one closes, the other returns at once (idempotent). */
  EXPECT(pthread_create(&closers[0], NULL, closer, NULL) == 0);
  EXPECT(pthread_create(&closers[1], NULL, closer, NULL) == 0);
  pthread_join(closers[0], NULL);
  pthread_join(closers[1], NULL);
  pthread_join(eval_thread, NULL);
  pthread_join(hammer_thread, NULL);
  EXPECT(atomic_load(&closed_seen_in_callback));
  printf("closed while an evaluation was in flight; the hammer made %ld rounds of calls\n",
         atomic_load(&hammer_rounds));

  /* The handle is still valid: closing again does nothing, calls fail with GATEWAY_CLOSED. */
  jevgate_gateway_close(gw);
  char *result = NULL;
  err = NULL;
  EXPECT(jevgate_evaluate(gw, CALL, &result, &err) == JEVGATE_ERROR);
  EXPECT(result == NULL);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), "GATEWAY_CLOSED") == 0);
  jevgate_error_free(err);

  /* No thread uses the handle any more: free it. */
  jevgate_gateway_free(gw);
  gw = NULL;
  return expect_report("close-race");
}

/*
 * jevgate from C: the device control lease with a manual clock.
 *
 * One conversation drives a device at a time; a second one is turned away without being told
 * who holds it; the owner takes the browser back; the dispossessed conversation is told exactly
 * once; the revoked window holds others off for 120 s; owners survive a restart and a device
 * without an owner is refused to everyone. Exits non-zero on the first broken
 * expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs a call that must fail with `code`; frees the error. */
static void expect_code(jevgate_status status, jevgate_error *err, const char *code) {
  EXPECT(status != JEVGATE_OK);
  const char *got = jevgate_error_code(err);
  if (got == NULL || strcmp(got, code) != 0) {
    fprintf(stderr, "expected %s, got %s\n", code, got ? got : "(none)");
    failures++;
  }
  jevgate_error_free(err);
}

static int contains(const char *haystack, const char *needle) {
  return haystack != NULL && strstr(haystack, needle) != NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  jevgate_manual_clock *clock = jevgate_manual_clock_new();
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open_with_clock(argv[1], "{}", clock, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open: %s\n", jevgate_error_message(err));
    return 1;
  }
  EXPECT(jevgate_lease_set_device_owner(gw, "laptop", "person", &err) == JEVGATE_OK);

  /* R-LEASE-1: the first call acquires. */
  char *grant = NULL;
  EXPECT(jevgate_lease_acquire(gw, "laptop", "conversation-a", &grant, &err) == JEVGATE_OK);
  EXPECT(contains(grant, "\"acquired\":true"));
  printf("acquired: %s\n", grant);
  jevgate_string_free(grant);

  /* R-LEASE-2: another conversation is turned away, 409, without the holder's name. */
  err = NULL;
  jevgate_status st = jevgate_lease_acquire(gw, "laptop", "conversation-b", &grant, &err);
  EXPECT(jevgate_error_http_status(err) == 409);
  EXPECT(jevgate_error_retryable(err) == 1 && jevgate_error_worker_code(err) == NULL);
  EXPECT(!contains(jevgate_error_message(err), "conversation-a"));
  expect_code(st, err, JEVGATE_CODE_DEVICE_CONTROL_ELSEWHERE);

  /* R-LEASE-7: a delegated credential cannot take the browser back, nor can a stranger. */
  err = NULL;
  bool took = false;
  st = jevgate_lease_take_back(gw, "laptop", "person", true, &took, &err);
  expect_code(st, err, JEVGATE_CODE_ACCESS_DENIED);
  err = NULL;
  st = jevgate_lease_take_back(gw, "laptop", "mallory", false, &took, &err);
  expect_code(st, err, JEVGATE_CODE_ACCESS_DENIED);

  /* R-LEASE-7: owners are persisted; after a restart on the same data directory a stranger is
   * still refused and the holder keeps the device. */
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  gw = NULL;
  err = NULL;
  if (jevgate_gateway_open_with_clock(argv[1], "{}", clock, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "reopen: %s\n", jevgate_error_message(err));
    return 1;
  }
  err = NULL;
  st = jevgate_lease_take_back(gw, "laptop", "mallory", false, &took, &err);
  expect_code(st, err, JEVGATE_CODE_ACCESS_DENIED);
  err = NULL;
  st = jevgate_lease_acquire(gw, "laptop", "conversation-b", &grant, &err);
  expect_code(st, err, JEVGATE_CODE_DEVICE_CONTROL_ELSEWHERE);

  /* R-LEASE-7: a device with no recorded owner is refused to everyone. */
  err = NULL;
  st = jevgate_lease_take_back(gw, "ownerless", "person", false, &took, &err);
  expect_code(st, err, JEVGATE_CODE_ACCESS_DENIED);
  EXPECT(jevgate_error_isolated_available(NULL) == -1);

  /* R-LEASE-3: the owner takes it back. */
  err = NULL;
  EXPECT(jevgate_lease_take_back(gw, "laptop", "person", false, &took, &err) == JEVGATE_OK);
  EXPECT(took);

  /* R-LEASE-4: the revoked window is reported as held, and blocks others. */
  char *status = NULL;
  EXPECT(jevgate_lease_status(gw, "laptop", "person", NULL, false, &status, &err) == JEVGATE_OK);
  EXPECT(contains(status, "\"held\":true") && contains(status, "\"revoked\":true") &&
         contains(status, "\"heldByRootSession\":null"));
  printf("status after take-back: %s\n", status);
  jevgate_string_free(status);
  err = NULL;
  st = jevgate_lease_acquire(gw, "laptop", "conversation-b", &grant, &err);
  expect_code(st, err, JEVGATE_CODE_DEVICE_CONTROL_ELSEWHERE);

  /* The dispossessed conversation is told exactly once, then behaves normally. */
  err = NULL;
  st = jevgate_lease_acquire(gw, "laptop", "conversation-a", &grant, &err);
  expect_code(st, err, JEVGATE_CODE_DEVICE_CONTROL_REVOKED);
  err = NULL;
  EXPECT(jevgate_lease_acquire(gw, "laptop", "conversation-a", &grant, &err) == JEVGATE_OK);
  jevgate_string_free(grant);

  /* R-LEASE-1: 120 s without a renewing call frees the device. */
  jevgate_manual_clock_advance_ms(clock, 120000);
  EXPECT(jevgate_lease_acquire(gw, "laptop", "conversation-b", &grant, &err) == JEVGATE_OK);
  jevgate_string_free(grant);

  /* R-LEASE-5: status shows the caller's own session only. */
  EXPECT(jevgate_lease_status(gw, "laptop", "person", "conversation-b", false, &status, &err) ==
         JEVGATE_OK);
  EXPECT(contains(status, "\"heldByRootSession\":\"conversation-b\""));
  jevgate_string_free(status);

  /* R-LEASE-6: ending the session releases its leases. */
  size_t released = 0;
  EXPECT(jevgate_lease_release_session(gw, "conversation-b", &released, &err) == JEVGATE_OK);
  EXPECT(released == 1);

  /* Bad arguments are errors. */
  err = NULL;
  st = jevgate_lease_acquire(gw, NULL, "x", &grant, &err);
  EXPECT(st == JEVGATE_INVALID_ARGUMENT);
  expect_code(st, err, JEVGATE_CODE_INVALID_ARGUMENT);
  err = NULL;
  st = jevgate_lease_acquire(gw, "", "x", &grant, &err);
  expect_code(st, err, JEVGATE_CODE_INVALID_ARGUMENT);

  /* R-PROF-2..4: browser sessions are leased per thread; a profile has one live session. */
  jevgate_browser_call *call = NULL;
  EXPECT(jevgate_browser_call_begin(
             gw, "{\"threadId\":\"t1\",\"organization\":\"acme\",\"profileKey\":\"work\"}", &call,
             &err) == JEVGATE_OK);
  EXPECT(contains(jevgate_browser_call_info(call), "\"mode\":\"authenticated\""));
  printf("browser call: %s\n", jevgate_browser_call_info(call));
  jevgate_browser_call *other = NULL;
  err = NULL;
  st = jevgate_browser_call_begin(
      gw, "{\"threadId\":\"t2\",\"organization\":\"acme\",\"profileKey\":\"work\"}", &other, &err);
  EXPECT(other == NULL);
  /* R-PROF-2: isolatedAvailable is a field, not only words in the message. */
  EXPECT(jevgate_error_isolated_available(err) == 1);
  expect_code(st, err, JEVGATE_CODE_BROWSER_CONTEXT_BUSY);
  jevgate_browser_call_end(call);
  jevgate_manual_clock_advance_ms(clock, 15 * 60 * 1000);
  size_t reaped = 0;
  EXPECT(jevgate_lease_reap(gw, &reaped, &err) == JEVGATE_OK);
  EXPECT(reaped == 1);
  err = NULL;
  st = jevgate_browser_call_begin(gw, "{\"threadId\":\"t\"}", &other, &err);
  expect_code(st, err, JEVGATE_CODE_INVALID_ARGUMENT);
  /* R-ERR-3: an unknown mode is INVALID_ARGUMENT with the words Python's
   * gw.leases.browser_call(..., mode="sideways") raises (bindings/python/tests/test_codes.py). */
  err = NULL;
  st = jevgate_browser_call_begin(
      gw, "{\"threadId\":\"t\",\"organization\":\"acme\",\"mode\":\"sideways\"}", &other, &err);
  EXPECT(err != NULL && strcmp(jevgate_error_message(err),
                               "invalid argument `mode`: must be \"authenticated\" or \"isolated\"") == 0);
  expect_code(st, err, JEVGATE_CODE_INVALID_ARGUMENT);
  jevgate_browser_call_end(NULL);

  /* R-CLK (issue 12 item 6): any host-supplied duration saturates; none aborts the process
   * (advancing by UINT64_MAX ms a thousand times used to overflow the wall time and panic
   * outside the panic boundary). Wall time stops at 9999-12-31T23:59:59.999Z. */
  for (int i = 0; i < 1000; i++) jevgate_manual_clock_advance_ms(clock, UINT64_MAX);
  EXPECT(jevgate_manual_clock_wall_ms(clock) == INT64_C(253402300799999));
  jevgate_manual_clock_set_wall_ms(clock, INT64_MIN);
  EXPECT(jevgate_manual_clock_wall_ms(clock) == 0);
  jevgate_manual_clock_set_wall_ms(clock, INT64_MAX);
  EXPECT(jevgate_manual_clock_wall_ms(clock) == INT64_C(253402300799999));
  jevgate_manual_clock_advance_ms(NULL, UINT64_MAX);
  jevgate_manual_clock_set_wall_ms(NULL, INT64_MAX);
  EXPECT(jevgate_manual_clock_wall_ms(NULL) == 0);
  /* the gateway still works at the end of time */
  EXPECT(jevgate_lease_reap(gw, &reaped, &err) == JEVGATE_OK);

  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  jevgate_manual_clock_free(clock);
  jevgate_manual_clock_free(NULL);
  return expect_report("lease");
}

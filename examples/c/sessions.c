/*
 * jevgate from C: managed local browser sessions. The gateway serves its browser sessions
 * (one per conversation thread) with local headless Chromiums started on first use; a session
 * idle for 15 minutes (a manual clock here) is reaped and its Chromium closed; the thread's
 * next call starts a fresh one. Exits non-zero on the first broken expectation.
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <string.h>

static const char *CALL = "{\"threadId\":\"thread-1\",\"organization\":\"acme\"}";

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_manual_clock *clock = jevgate_manual_clock_new();
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open_with_clock(argv[1], "{}", clock, &gw, &err) != JEVGATE_OK) return 1;

  /* Before enabling, a session has no browser. */
  jevgate_browser_call *call = NULL;
  EXPECT(jevgate_browser_call_begin(gw, CALL, &call, &err) == JEVGATE_OK);
  char *out = NULL;
  EXPECT(jevgate_browser_call_execute(gw, call, "{\"tool\":\"observe\",\"args\":{}}", &out, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(jevgate_error_code(err), "BROWSER_UNAVAILABLE") == 0);
  jevgate_error_free(err);
  err = NULL;
  jevgate_browser_call_end(call);

  EXPECT(jevgate_gateway_enable_local_browsers(gw, NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_browser_call_begin(gw, CALL, &call, &err) == JEVGATE_OK);
  printf("session: %s\n", jevgate_browser_call_info(call));
  EXPECT(strstr(jevgate_browser_call_info(call), "\"mode\":\"isolated\"") != NULL);
  EXPECT(jevgate_browser_call_execute(
             gw, call,
             "{\"tool\":\"javascript\",\"args\":{\"operationId\":\"op-1\",\"code\":"
             "\"document.title='Session page'; document.body.innerHTML='<button>Go</button>'; 6*7\"}}",
             &out, &err) == JEVGATE_OK);
  EXPECT(out != NULL && strstr(out, "42") != NULL);
  jevgate_string_free(out);
  EXPECT(jevgate_browser_call_execute(gw, call, "{\"tool\":\"snapshot\",\"args\":{}}", &out, &err) ==
         JEVGATE_OK);
  EXPECT(out != NULL && strstr(out, "button \\\"Go\\\" [ref=e1]") != NULL);
  printf("snapshot: %s\n", out ? out : "(null)");
  jevgate_string_free(out);
  jevgate_browser_call_end(call);

  /* 15 idle minutes: the session and its Chromium are closed. */
  jevgate_manual_clock_advance_ms(clock, 15 * 60 * 1000);
  size_t reaped = 0;
  EXPECT(jevgate_lease_reap(gw, &reaped, &err) == JEVGATE_OK);
  EXPECT(reaped == 1);

  /* The thread's next call transparently starts a fresh session (a blank page). */
  EXPECT(jevgate_browser_call_begin(gw, CALL, &call, &err) == JEVGATE_OK);
  EXPECT(strstr(jevgate_browser_call_info(call), "\"created\":true") != NULL);
  EXPECT(jevgate_browser_call_execute(gw, call,
                                      "{\"tool\":\"javascript\",\"args\":{\"operationId\":\"op-2\","
                                      "\"code\":\"document.title\"}}",
                                      &out, &err) == JEVGATE_OK);
  EXPECT(out != NULL && strstr(out, "Session page") == NULL);
  jevgate_string_free(out);
  EXPECT(jevgate_browser_call_execute(gw, NULL, "{}", &out, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  jevgate_browser_call_end(call);

  jevgate_gateway_close(gw); /* closes every session's Chromium */
  jevgate_gateway_free(gw);
  jevgate_manual_clock_free(clock);
  return expect_report("session");
}

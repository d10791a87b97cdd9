/*
 * jevgate from C: what became of an operation (issue 21 item 6). A local headless Chromium
 * keeps a record of the last 1,000 operations it ran, for its own lifetime; the
 * `operation_status` tool of jevgate_local_browser_execute answers executed / not_executed /
 * unknown for an operationId, with the tool and when — never arguments or page content.
 *
 * Clicks a button once (the page counts trusted clicks), asks about it (executed), about an id
 * never used (unknown), about a click refused on a stale generation (not_executed), and
 * checks that a malformed id is INVALID_ARGUMENT and that nothing was ever clicked twice.
 * Exits non-zero on the first broken expectation (the test suite runs it under sanitizers).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs `command`; NULL (and the error code in `code`, when asked) on failure. */
static char *run(jevgate_local_browser *b, const char *command, char *code, size_t code_len) {
  char *out = NULL;
  jevgate_error *err = NULL;
  if (jevgate_local_browser_execute(b, command, &out, &err) != JEVGATE_OK) {
    if (code != NULL) {
      snprintf(code, code_len, "%s", err ? jevgate_error_code(err) : "");
    }
    jevgate_error_free(err);
    return NULL;
  }
  return out;
}

/* The operation_status answer for `id` (a JSON object), or NULL with its code in `code`. */
static char *status_of(jevgate_local_browser *b, const char *id, char *code, size_t code_len) {
  char command[512];
  snprintf(command, sizeof command,
           "{\"tool\":\"operation_status\",\"args\":{\"operationId\":\"%s\"}}", id);
  return run(b, command, code, code_len);
}

int main(void) {
  jevgate_local_browser *b = NULL;
  jevgate_error *err = NULL;
  if (jevgate_local_browser_launch(NULL, &b, &err) != JEVGATE_OK) {
    fprintf(stderr, "launch: %s\n", jevgate_error_message(err));
    jevgate_error_free(err);
    return 1;
  }
  char code[64] = "";
  /* about:blank, filled by a script: one button that counts trusted clicks. */
  char *r = run(b,
                "{\"tool\":\"javascript\",\"args\":{\"operationId\":\"setup-1\",\"code\":"
                "\"window.clicks = 0; document.body.innerHTML='<button>Pay</button>';"
                " document.querySelector('button').onclick = (e) => { if (e.isTrusted) window.clicks++; }; 1\"}}",
                code, sizeof code);
  EXPECT(r != NULL);
  jevgate_string_free(r);
  char *obs = run(b, "{\"tool\":\"observe\",\"args\":{}}", code, sizeof code);
  EXPECT(obs != NULL);
  const char *gen = obs ? strstr(obs, "\"generation\":") : NULL;
  long generation = gen ? strtol(gen + 13, NULL, 10) : 0;
  jevgate_string_free(obs);

  char click[256];
  snprintf(click, sizeof click,
           "{\"tool\":\"page_click\",\"args\":{\"operationId\":\"pay-1\",\"generation\":%ld,\"ref\":\"e1\"}}",
           generation);
  r = run(b, click, code, sizeof code);
  EXPECT(r != NULL);
  jevgate_string_free(r);

  /* The click ran: executed, by page_click, at a time; nothing else in the answer. */
  char *s = status_of(b, "pay-1", code, sizeof code);
  EXPECT(s != NULL && strstr(s, "\"status\":\"executed\"") != NULL);
  EXPECT(s != NULL && strstr(s, "\"outcome\":\"completed\"") != NULL);
  EXPECT(s != NULL && strstr(s, "\"tool\":\"page_click\"") != NULL);
  EXPECT(s != NULL && strstr(s, "\"atMs\":") != NULL);
  EXPECT(s != NULL && strstr(s, "Pay") == NULL);
  printf("pay-1: %s\n", s ? s : "(null)");
  jevgate_string_free(s);

  /* An id this browser never saw: unknown. */
  s = status_of(b, "never-used", code, sizeof code);
  EXPECT(s != NULL && strstr(s, "\"status\":\"unknown\"") != NULL);
  EXPECT(s != NULL && strstr(s, "\"outcome\":\"not_recorded\"") != NULL);
  jevgate_string_free(s);

  /* A click on a generation that no longer holds is refused before any input: not executed. */
  EXPECT(run(b,
             "{\"tool\":\"page_click\",\"args\":{\"operationId\":\"pay-2\",\"generation\":0,\"ref\":\"e1\"}}",
             code, sizeof code) == NULL);
  EXPECT(strcmp(code, JEVGATE_CODE_STALE_OBSERVATION) == 0);
  s = status_of(b, "pay-2", code, sizeof code);
  EXPECT(s != NULL && strstr(s, "\"status\":\"not_executed\"") != NULL);
  EXPECT(s != NULL && strstr(s, "\"errorCode\":\"STALE_OBSERVATION\"") != NULL);
  jevgate_string_free(s);

  /* A malformed id (over 200 bytes) is a clear argument error. */
  char long_id[260];
  memset(long_id, 'x', 201);
  long_id[201] = '\0';
  char *out = NULL;
  err = NULL;
  char command[512];
  snprintf(command, sizeof command,
           "{\"tool\":\"operation_status\",\"args\":{\"operationId\":\"%s\"}}", long_id);
  EXPECT(jevgate_local_browser_execute(b, command, &out, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  EXPECT(out == NULL);
  jevgate_error_free(err);

  /* An operation id is never run twice: the reused one is refused and the page counted one. */
  EXPECT(run(b, click, code, sizeof code) == NULL);
  EXPECT(strcmp(code, JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  r = run(b, "{\"tool\":\"javascript\",\"args\":{\"operationId\":\"count-1\",\"code\":"
          "\"window.clicks === 1 ? 'one-click' : 'wrong'\"}}",
          code, sizeof code);
  EXPECT(r != NULL && strstr(r, "one-click") != NULL);
  jevgate_string_free(r);

  jevgate_local_browser_close(b);
  return expect_report("operation_status");
}

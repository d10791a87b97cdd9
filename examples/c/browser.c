/*
 * jevgate from C: start a local headless Chromium, open a page, read what a model would see
 * (observation and snapshot), click a button by ref with real input events, close.
 * Exits non-zero on the first broken expectation (the test suite runs it; Chromium is
 * installed by scripts/test).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *run(jevgate_local_browser *b, const char *command) {
  char *out = NULL;
  jevgate_error *err = NULL;
  if (jevgate_local_browser_execute(b, command, &out, &err) != JEVGATE_OK) {
    fprintf(stderr, "%s: %s %s\n", command, jevgate_error_code(err), jevgate_error_message(err));
    jevgate_error_free(err);
    failures++;
    return NULL;
  }
  return out;
}

int main(void) {
  jevgate_local_browser *b = NULL;
  jevgate_error *err = NULL;
  if (jevgate_local_browser_launch(NULL, &b, &err) != JEVGATE_OK) {
    fprintf(stderr, "launch: %s\n", jevgate_error_message(err));
    return 1;
  }
  /* about:blank, filled by a script (the suite's Rust tests use a loopback fixture server). */
  char *r = run(b,
                "{\"tool\":\"javascript\",\"args\":{\"operationId\":\"op-1\",\"code\":"
                "\"document.title='Demo'; document.body.innerHTML='<form aria-label=Checkout><button type=button>Go</button></form>';"
                " const b = document.querySelector('button'); b.onclick = (e) => { if (e.isTrusted) b.textContent = 'Done'; }; 1\"}}");
  jevgate_string_free(r);
  char *obs = run(b, "{\"tool\":\"observe\",\"args\":{}}");
  EXPECT(obs != NULL && strstr(obs, "\"name\":\"Go\"") != NULL && strstr(obs, "\"ref\":\"e1\"") != NULL);
  /* The button's enclosing form, the evidence of what pressing it means (issue 26). */
  EXPECT(obs != NULL && strstr(obs, "\"container\":\"k1\"") != NULL &&
         strstr(obs, "{\"id\":\"k1\",\"kind\":\"form\",\"name\":\"Checkout\"") != NULL);
  printf("observation: %.200s...\n", obs ? obs : "(null)");
  /* The generation of that observation makes the ref valid. */
  const char *gen = obs ? strstr(obs, "\"generation\":") : NULL;
  long generation = gen ? strtol(gen + 13, NULL, 10) : 0;
  jevgate_string_free(obs);
  char click[256];
  snprintf(click, sizeof click,
           "{\"tool\":\"page_click\",\"args\":{\"operationId\":\"op-2\",\"generation\":%ld,\"ref\":\"e1\"}}",
           generation);
  r = run(b, click);
  jevgate_string_free(r);
  char *snap = run(b, "{\"tool\":\"snapshot\",\"args\":{}}");
  EXPECT(snap != NULL && strstr(snap, "Done") != NULL && strstr(snap, "untrusted-page-content") != NULL);
  printf("snapshot after the click: %s\n", snap ? snap : "(null)");
  jevgate_string_free(snap);

  /* A bad command is an argument error; a stale generation is refused with nothing sent. */
  err = NULL;
  char *out = NULL;
  EXPECT(jevgate_local_browser_execute(b, "{\"tool\":\"fly\"}", &out, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_local_browser_execute(
             b, "{\"tool\":\"page_click\",\"args\":{\"operationId\":\"op-3\",\"generation\":0,\"ref\":\"e1\"}}",
             &out, &err) == JEVGATE_ERROR);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), JEVGATE_CODE_STALE_OBSERVATION) == 0);
  EXPECT(jevgate_error_worker_code(err) == NULL && jevgate_error_retryable(err) == 0);
  jevgate_error_free(err);
  /* R-ERR-1: one casing for codes; the seed's lower-case worker code is a separate field. */
  err = NULL;
  EXPECT(jevgate_local_browser_execute(
             b, "{\"tool\":\"tabs\",\"args\":{\"action\":\"select\",\"tabId\":\"no-such-tab\"}}", &out,
             &err) == JEVGATE_ERROR);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), JEVGATE_CODE_TAB_UNAVAILABLE) == 0);
  EXPECT(err != NULL && strcmp(jevgate_error_worker_code(err), "tab_unavailable") == 0);
  jevgate_error_free(err);

  jevgate_local_browser_close(b);
  jevgate_local_browser_close(NULL);
  return expect_report("browser");
}

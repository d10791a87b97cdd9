/*
 * jevgate from C: browser evidence of a task (issue 21 item 7, R-TSK-VER). A session on a local
 * headless Chromium (no network needed): recorded evidence (the receipts' last kept
 * observation), fresh evidence (a new observation inside the untrusted envelope, with an
 * evidence id), the one error every stranger and unknown id gets, and the 503 once the task's
 * browser is gone — while recorded evidence still answers.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <string.h>

static char code_buf[64];
static const char *code_of(jevgate_error *err) {
  code_buf[0] = '\0';
  if (err) {
    snprintf(code_buf, sizeof code_buf, "%s", jevgate_error_code(err));
    jevgate_error_free(err);
  }
  return code_buf;
}

static int has(const char *json, const char *needle) { return json && strstr(json, needle) != NULL; }

static const char *OWNER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-1\"}";
static const char *STRANGER = "{\"agentId\":\"assistant\",\"principalId\":\"mallory\",\"conversationId\":\"conv-1\"}";
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\","
    "\"features\":{\"browserTasks\":{\"enabled\":true},\"browserSteps\":{\"enabled\":true}}}}}";
#define WAIT_MS 90000

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open: %s\n", code_of(err));
    return 1;
  }
  char *id = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"\",\"keepOpen\":true}", NULL, NULL, &id, &err) == JEVGATE_OK);
  if (id == NULL) {
    fprintf(stderr, "spawn: %s\n", code_of(err));
    return 1;
  }
  char *status = NULL;
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);

  /* Recorded: nothing was dispatched yet, so no kept observation — the envelope holds null. */
  char *evidence = NULL;
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 0, &evidence, &err) == JEVGATE_OK);
  EXPECT(has(evidence, "\"source\":\"recorded\""));
  EXPECT(has(evidence, "\"evidenceId\":\"ev_"));
  EXPECT(has(evidence, "\"untrustedContent\":{\"data\":null,\"notice\":\"Untrusted content"));
  EXPECT(has(evidence, "\"lastDispatchedMutation\":null"));
  jevgate_string_free(evidence);

  /* Fresh: the page now (about:blank here), whole inside the envelope; nothing acted. */
  evidence = NULL;
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 1, &evidence, &err) == JEVGATE_OK);
  EXPECT(has(evidence, "\"source\":\"fresh\""));
  EXPECT(has(evidence, "\"untrustedContent\":{\"data\":{\"controls\":"));
  EXPECT(has(evidence, "\"generation\":"));
  EXPECT(has(evidence, "\"notice\":\"Untrusted content"));
  EXPECT(has(evidence, "\"taskState\":\"waiting_input\""));
  EXPECT(has(evidence, "\"inDoubt\":false"));
  jevgate_string_free(evidence);
  EXPECT(jevgate_task_status(gw, OWNER, id, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"actions\":0"));
  jevgate_string_free(status);

  /* Strangers and unknown ids: one code, one message (the error says nothing of the task). */
  char first[256] = "";
  const char *who[3] = {STRANGER, OWNER, OWNER};
  const char *task[3] = {id, "6f1c2f7e-0d7b-4d0e-9a55-5b1c1c0c0c0c", "not-a-task"};
  for (int i = 0; i < 3; i++) {
    evidence = NULL;
    EXPECT(jevgate_task_evidence(gw, who[i], task[i], i % 2, &evidence, &err) == JEVGATE_ERROR);
    EXPECT(evidence == NULL);
    EXPECT(err != NULL && strcmp(jevgate_error_code(err), JEVGATE_CODE_BROWSER_EVIDENCE_UNAVAILABLE) == 0);
    EXPECT(err != NULL && jevgate_error_http_status(err) == 403);
    if (err != NULL) {
      if (i == 0) snprintf(first, sizeof first, "%s", jevgate_error_message(err));
      EXPECT(strcmp(first, jevgate_error_message(err)) == 0);
      EXPECT(strstr(jevgate_error_message(err), id) == NULL);
    }
    code_of(err);
    err = NULL;
  }
  /* Bad arguments: NULL out-pointer and NULL owner. */
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 0, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(jevgate_task_evidence(gw, NULL, id, 0, &evidence, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;

  /* The session ends: its browser closes, so a fresh read is 503; recorded still answers. */
  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"cancelled\""));
  jevgate_string_free(status);
  evidence = NULL;
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 1, &evidence, &err) == JEVGATE_ERROR);
  EXPECT(err != NULL && jevgate_error_http_status(err) == 503);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_BROWSER_INSPECTION_UNAVAILABLE) == 0);
  err = NULL;
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 0, &evidence, &err) == JEVGATE_OK);
  EXPECT(has(evidence, "\"taskState\":\"cancelled\""));
  jevgate_string_free(evidence);

  jevgate_string_free(id);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("task_evidence");
}

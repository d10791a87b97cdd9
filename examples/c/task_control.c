/*
 * jevgate from C: steering a task (R-TSK-CTL) — control commands with ids and revisions, their
 * codes, idempotent replays, and a command's control receipt. A session on a local headless
 * Chromium (no network needed): hand control to the agent and back, pause, try to resume what
 * was never paused, revise with new text, then the error paths.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
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

/* The task's "revision" from a status JSON (0 when absent). */
static unsigned revision_of(const char *status) {
  const char *p = status ? strstr(status, "\"revision\":") : NULL;
  return p ? (unsigned)strtoul(p + strlen("\"revision\":"), NULL, 10) : 0;
}

static const char *OWNER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-1\"}";
static const char *STRANGER = "{\"agentId\":\"assistant\",\"principalId\":\"mallory\",\"conversationId\":\"conv-1\"}";
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\","
    "\"features\":{\"browserTasks\":{\"enabled\":true},\"browserSteps\":{\"enabled\":true}}}}}";
#define WAIT_MS 90000

/* One control command; returns the status code, the status JSON in *status (or NULL). */
static jevgate_status control(jevgate_gateway *gw, const char *owner, const char *task, const char *id,
                              const char *action, unsigned rev, const char *text, char **status,
                              jevgate_error **err) {
  char json[512];
  if (text)
    snprintf(json, sizeof json, "{\"id\":\"%s\",\"action\":\"%s\",\"expectedRevision\":%u,\"text\":\"%s\"}", id,
             action, rev, text);
  else
    snprintf(json, sizeof json, "{\"id\":\"%s\",\"action\":\"%s\",\"expectedRevision\":%u}", id, action, rev);
  return jevgate_task_control(gw, owner, task, json, status, err);
}

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
  unsigned rev = revision_of(status);
  jevgate_string_free(status);

  /* Agent, then the same id and contents again (the same answer), then other contents. */
  const char *A = "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c01";
  EXPECT(control(gw, OWNER, id, A, "agent", rev, NULL, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"controller\":\"agent\""));
  jevgate_string_free(status);
  EXPECT(control(gw, OWNER, id, A, "agent", rev, NULL, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"controller\":\"agent\""));
  jevgate_string_free(status);
  status = NULL;
  EXPECT(control(gw, OWNER, id, A, "user", rev, NULL, &status, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_IDEMPOTENCY_CONFLICT) == 0 && status == NULL);
  err = NULL;
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c02", "user", rev, NULL, NULL, &err) ==
         JEVGATE_OK);

  /* Resume without a pause; a revision from the future; the user already has control. */
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c03", "resume", rev, NULL, NULL, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_NOTHING_TO_RESUME) == 0);
  err = NULL;
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c04", "pause", rev + 9, NULL, NULL, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_REVISION_CONFLICT) == 0);
  err = NULL;
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c05", "user", rev, NULL, NULL, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_STATE_CONFLICT) == 0);
  err = NULL;

  /* Revise: new instructions run next and the revision moves. */
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c06", "revise", rev, "scroll down", &status,
                 &err) == JEVGATE_OK);
  EXPECT(revision_of(status) == rev + 1);
  jevgate_string_free(status);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);
  char *receipt = NULL;
  EXPECT(jevgate_task_command_receipt(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c06", &receipt, &err) ==
         JEVGATE_OK);
  EXPECT(has(receipt, "\"kind\":\"revise\"") && !has(receipt, "\"state\":\"accepted\""));
  printf("revise receipt: %s\n", receipt ? receipt : "(null)");
  jevgate_string_free(receipt);
  EXPECT(jevgate_task_command_receipt(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2cff", &receipt, &err) ==
         JEVGATE_OK);
  EXPECT(receipt && strcmp(receipt, "null") == 0);
  jevgate_string_free(receipt);

  /* Update: the revised goal runs after the active request; a stale revision conflicts. */
  EXPECT(jevgate_task_status(gw, OWNER, id, &status, &err) == JEVGATE_OK);
  unsigned now_rev = revision_of(status);
  jevgate_string_free(status);
  char update[256];
  snprintf(update, sizeof update, "{\"expectedRevision\":%u,\"mode\":\"when_ready\",\"goal\":\"scroll up\"}",
           now_rev);
  EXPECT(jevgate_task_update(gw, OWNER, id, update, &status, &err) == JEVGATE_OK);
  EXPECT(revision_of(status) == now_rev + 1);
  jevgate_string_free(status);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"pendingRevisions\":[]"));
  jevgate_string_free(status);
  EXPECT(jevgate_task_update(gw, OWNER, id, update, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_REVISION_CONFLICT) == 0);
  err = NULL;
  EXPECT(jevgate_task_update(gw, OWNER, id, "{\"goal\":1}", NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_INPUT) == 0);
  err = NULL;
  rev = now_rev + 1;

  /* No field question is pending: an answer is refused (tests/task_control.rs answers one). */
  EXPECT(jevgate_task_answer(gw, OWNER, id, "Address", "12 Main St", NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_STATE_CONFLICT) == 0);
  err = NULL;

  /* Nothing is in doubt: reconcile and resolve say so (tests/task_run.rs reconciles for real). */
  EXPECT(jevgate_task_reconcile(gw, OWNER, id, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_STATE_CONFLICT) == 0);
  err = NULL;
  EXPECT(jevgate_task_resolve(gw, OWNER, id, "no-such-operation", 1, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_STATE_CONFLICT) == 0);
  err = NULL;
  EXPECT(jevgate_task_resolve(gw, STRANGER, id, "x", 0, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;

  /* Error paths: non-UUID ids, text on pause, malformed JSON, another owner, NULL. */
  EXPECT(control(gw, OWNER, "not-a-uuid", "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c07", "pause", rev, NULL, NULL,
                 &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_INPUT) == 0);
  err = NULL;
  EXPECT(control(gw, OWNER, id, "42", "pause", rev + 1, NULL, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_INPUT) == 0);
  err = NULL;
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c08", "pause", rev + 1, "x", NULL, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_INPUT) == 0);
  err = NULL;
  EXPECT(jevgate_task_control(gw, OWNER, id, "[1,2", NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_INPUT) == 0);
  err = NULL;
  EXPECT(control(gw, STRANGER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c09", "pause", rev + 1, NULL, NULL, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;
  EXPECT(jevgate_task_control(gw, OWNER, id, NULL, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;

  /* Closed: cancel, then every control action is refused with 410's code. */
  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"cancelled\""));
  rev = revision_of(status);
  jevgate_string_free(status);
  EXPECT(control(gw, OWNER, id, "8f14e45f-ceea-467f-a0e6-3d5a1e4b2c0a", "pause", rev, NULL, NULL, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_AUTOMATION_SESSION_CLOSED) == 0);
  err = NULL;

  jevgate_string_free(id);

  /* Across a restart (issue 21 item 3): a session waiting for its next command is re-admitted
   * by the next open of the data directory and takes commands there. */
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"\",\"keepOpen\":true}", NULL, NULL, &id, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  gw = NULL;
  EXPECT(jevgate_gateway_open(argv[1], CONFIG, &gw, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_status(gw, OWNER, id, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);
  EXPECT(jevgate_task_command(gw, OWNER, id, "scroll down", &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\"") && has(status, "\"state\":\"accepted\"") == 0);
  jevgate_string_free(status);
  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  jevgate_string_free(id);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("task_control");
}

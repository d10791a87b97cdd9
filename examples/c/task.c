/*
 * jevgate from C: a browser task (R-TSK, R-RUN, R-TSK-RCPT) on a local headless Chromium.
 * An empty goal with keepOpen opens the session ("Ready: …", state waiting_input, no network
 * needed); a direct command settles with an outcome line seen by the progress callback; cancel
 * closes the session; the receipts list every request. Then the error paths: an unknown id and
 * another owner's id answer alike (ACCESS_DENIED, same message), NULL and invalid UTF-8
 * arguments, an oversized command; and the feature and access gates: browser tasks need Jev and
 * features.browserTasks (ORCHESTRATION_DISABLED) and an agent with Jev access
 * (EXECUTION_DENIED), read from the live configuration at each call.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the progress callback saw. It runs on the task's thread: atomics only. */
struct seen {
  atomic_int lines;
  atomic_int ready;   /* a "Ready:" line */
  atomic_int outcome; /* a "Done:" or "Not done:" line */
};

static const char *line_of(const char *progress_json) {
  const char *p = strstr(progress_json, "\"line\":\"");
  return p ? p + strlen("\"line\":\"") : "";
}

/* progress_json is borrowed for the call only: read it here, never keep the pointer. */
static void on_progress(void *user_data, const char *progress_json) {
  struct seen *s = user_data;
  const char *line = line_of(progress_json);
  atomic_fetch_add(&s->lines, 1);
  if (strncmp(line, "Ready:", 6) == 0) atomic_store(&s->ready, 1);
  if (strncmp(line, "Done:", 5) == 0 || strncmp(line, "Not done:", 9) == 0) atomic_store(&s->outcome, 1);
  printf("  progress: %s\n", progress_json);
  fflush(stdout);
}

/* Browser tasks are off by default: this configuration turns them (and step lists) on, with the
 * local evaluator (no network, no key). */
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\",\"features\":"
    "{\"browserTasks\":{\"enabled\":true},\"browserSteps\":{\"enabled\":true}}}}}";

/* The message of a failed call, copied (its error object is not freed). */
static char message_buf[256];
static const char *message_of(jevgate_error *err) {
  snprintf(message_buf, sizeof message_buf, "%s", err ? jevgate_error_message(err) : "");
  return message_buf;
}

/* The code of a failed call, its error object freed; "" when there was none. */
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
#define WAIT_MS 90000

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open: %s\n", code_of(err));
    return 1;
  }

  /* The session start: no goal, the session stays open for commands. */
  struct seen seen = {0, 0, 0};
  char *id = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"\",\"keepOpen\":true}", on_progress, &seen, &id, &err) ==
         JEVGATE_OK);
  if (id == NULL) {
    fprintf(stderr, "spawn: %s\n", code_of(err));
    return 1;
  }
  printf("task %s\n", id);
  char *status = NULL;
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  EXPECT(has(status, "\"reason\":\"SESSION_READY\""));
  EXPECT(atomic_load(&seen.ready) == 1);
  jevgate_string_free(status);

  /* A direct command: on about:blank a scroll may be done or not; either settles with a line. */
  EXPECT(jevgate_task_command(gw, OWNER, id, "scroll down", &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  EXPECT(has(status, "\"outcome\":\"Done:") || has(status, "\"outcome\":\"Not done:"));
  EXPECT(atomic_load(&seen.outcome) == 1);
  jevgate_string_free(status);

  /* Cancel closes the session; wait sees it settled; a later command is refused. */
  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"cancelled\""));
  printf("final status: %s\n", status ? status : "(null)");
  jevgate_string_free(status);
  EXPECT(jevgate_task_command(gw, OWNER, id, "scroll down", &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_AUTOMATION_SESSION_CLOSED) == 0);
  err = NULL;

  char *receipts = NULL;
  EXPECT(jevgate_task_receipts(gw, OWNER, id, &receipts, &err) == JEVGATE_OK);
  EXPECT(has(receipts, "\"request\":1") && has(receipts, "\"request\":2"));
  printf("receipts: %s\n", receipts ? receipts : "(null)");
  jevgate_string_free(receipts);
  char *list = NULL;
  EXPECT(jevgate_task_list(gw, OWNER, &list, &err) == JEVGATE_OK);
  EXPECT(has(list, id));
  jevgate_string_free(list);
  EXPECT(jevgate_task_list(gw, STRANGER, &list, &err) == JEVGATE_OK);
  EXPECT(list && strcmp(list, "[]") == 0);
  jevgate_string_free(list);

  /* Error paths: each a status and a stable code; outputs untouched. An unknown id and
   * another owner's id answer alike, code and message: nothing tells which ids exist. */
  status = NULL;
  EXPECT(jevgate_task_status(gw, OWNER, "00000000-0000-0000-0000-000000000000", &status, &err) == JEVGATE_ERROR);
  char unknown_message[256];
  snprintf(unknown_message, sizeof unknown_message, "%s", message_of(err));
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0 && status == NULL);
  err = NULL;
  EXPECT(jevgate_task_status(gw, STRANGER, id, &status, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(message_of(err), unknown_message) == 0);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0 && status == NULL);
  err = NULL;
  EXPECT(jevgate_task_command(gw, STRANGER, id, "scroll down", &err) == JEVGATE_ERROR);
  EXPECT(strcmp(message_of(err), unknown_message) == 0);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;
  EXPECT(jevgate_task_command(gw, OWNER, "not-a-task", "scroll down", &err) == JEVGATE_ERROR);
  EXPECT(strcmp(message_of(err), unknown_message) == 0);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;
  EXPECT(jevgate_task_receipts(gw, STRANGER, id, &receipts, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;
  EXPECT(jevgate_task_cancel(gw, STRANGER, id, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;
  EXPECT(jevgate_task_status(gw, NULL, id, &status, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(jevgate_task_status(gw, OWNER, id, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(jevgate_task_command(gw, OWNER, id, "scroll \xff", &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(jevgate_task_spawn(gw, "{\"agentId\":\"\"}", "{}", NULL, NULL, &id, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"\",\"startUrl\":\"javascript:alert(1)\"}", NULL, NULL, &id,
                            &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  /* An autopilot first round (issue 26 item 8) whose values are not strings: refused before
   * anything is stored, naming the rule, never a value. */
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"autopilot\":{\"goal\":\"x\",\"values\":{\"a\":1}}}", NULL, NULL, &id,
                            &err) != JEVGATE_OK);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_TOOL_ARGUMENTS) == 0);
  err = NULL;
  char *big = malloc(4002);
  memset(big, 'a', 4001);
  big[4001] = '\0';
  EXPECT(jevgate_task_command(gw, OWNER, id, big, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(err && strstr(jevgate_error_message(err), "aaaa") == NULL); /* the command is not echoed */
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  free(big);

  /* The gates, on the live configuration. An open session, then a reload that leaves Jev on
   * but browser tasks off: its next command and a new spawn are refused before any browser
   * action. Then tasks on but this agent outside allowedAgentIds: EXECUTION_DENIED. */
  char *open_id = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"\",\"keepOpen\":true}", NULL, NULL, &open_id, &err) ==
         JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, open_id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);
  EXPECT(jevgate_gateway_reload(gw, "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\"}}}", NULL,
                                &err) == JEVGATE_OK);
  EXPECT(jevgate_task_command(gw, OWNER, open_id, "scroll down", &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ORCHESTRATION_DISABLED) == 0);
  err = NULL;
  char *refused = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"scroll down\"}", NULL, NULL, &refused, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ORCHESTRATION_DISABLED) == 0 && refused == NULL);
  err = NULL;
  EXPECT(jevgate_gateway_reload(gw,
                                "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\","
                                "\"allowedAgentIds\":[\"someone-else\"],\"features\":{\"browserTasks\":{\"enabled\":true}}}}}",
                                NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_command(gw, OWNER, open_id, "scroll down", &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_EXECUTION_DENIED) == 0);
  err = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, "{\"goal\":\"scroll down\"}", NULL, NULL, &refused, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_EXECUTION_DENIED) == 0 && refused == NULL);
  err = NULL;
  /* Cancel is never gated: the owner can always stop a task. */
  EXPECT(jevgate_task_cancel(gw, OWNER, open_id, NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_task_wait(gw, OWNER, open_id, WAIT_MS, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"cancelled\""));
  jevgate_string_free(status);
  jevgate_string_free(open_id);

  jevgate_string_free(id);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("task");
}

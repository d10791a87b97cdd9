/*
 * jevgate from C: the agent tools (issue 21 item 8) — the definitions an LLM gets (MCP and
 * function-calling form) and one call that runs any of them for an owner, so a host wires a
 * model's tool calls to jevgate in one line. A session on a local headless Chromium (no network
 * needed): list the targets, spawn, command, wait, read status with recorded evidence and the
 * receipts, update, evaluate, cancel; then the error paths (unknown tool, bad arguments, another
 * owner). Page-derived text comes back only inside "untrustedContent".
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

/* The first string value of "key" in `json`, copied into `out` (empty when absent). */
static void string_of(const char *json, const char *key, char *out, size_t n) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  out[0] = '\0';
  const char *p = json ? strstr(json, pattern) : NULL;
  if (!p) return;
  p += strlen(pattern);
  size_t i = 0;
  while (p[i] && p[i] != '"' && i + 1 < n) {
    out[i] = p[i];
    i++;
  }
  out[i] = '\0';
}

/* The task's revision in a status result (0 when absent): the last "revision": of the text —
 * the keys are in sorted order, so the control receipts' own revisions ("commands") come first. */
static unsigned revision_of(const char *json) {
  const char *pattern = "\"revision\":";
  const char *last = NULL;
  for (const char *p = json ? strstr(json, pattern) : NULL; p; p = strstr(p + 1, pattern)) last = p;
  return last ? (unsigned)strtoul(last + strlen(pattern), NULL, 10) : 0;
}

static const char *OWNER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-1\"}";
static const char *STRANGER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-2\"}";
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\","
    "\"features\":{\"browserTasks\":{\"enabled\":true},\"browserSteps\":{\"enabled\":true}}}}}";

/* One tool call; returns the status, the result in *out (NULL on failure). */
static jevgate_status tool(jevgate_gateway *gw, const char *owner, const char *name, const char *args, char **out,
                           jevgate_error **err) {
  *out = NULL;
  return jevgate_call_agent_tool(gw, owner, name, args, out, err);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_error *err = NULL;

  /* The definitions: ten tools, in both forms; any other format is refused. */
  char *defs = NULL;
  EXPECT(jevgate_agent_tool_definitions("mcp", &defs, &err) == JEVGATE_OK);
  EXPECT(has(defs, "\"name\":\"task_spawn\"") && has(defs, "\"inputSchema\"") && has(defs, "\"browserEvidence\""));
  EXPECT(has(defs, "\"name\":\"capabilities_list\"") && has(defs, "\"name\":\"jev_evaluate\""));
  jevgate_string_free(defs);
  EXPECT(jevgate_agent_tool_definitions("openai", &defs, &err) == JEVGATE_OK);
  EXPECT(has(defs, "\"type\":\"function\"") && has(defs, "\"parameters\""));
  jevgate_string_free(defs);
  defs = NULL;
  EXPECT(jevgate_agent_tool_definitions("yaml", &defs, &err) == JEVGATE_INVALID_ARGUMENT && defs == NULL);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;

  jevgate_gateway *gw = NULL;
  if (jevgate_gateway_open(argv[1], CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open: %s\n", code_of(err));
    return 1;
  }
  char *out = NULL;

  /* What the agent may drive (NULL arguments are {}). */
  EXPECT(tool(gw, OWNER, "capabilities_list", NULL, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"enabled\":true") && has(out, "\"kind\":\"local\""));
  jevgate_string_free(out);

  /* A session that waits for commands. */
  EXPECT(tool(gw, OWNER, "task_spawn", "{\"goal\":\"\",\"keepOpen\":true}", &out, &err) == JEVGATE_OK);
  char id[64];
  string_of(out, "id", id, sizeof id);
  EXPECT(strlen(id) == 36);
  EXPECT(has(out, "\"untrustedContent\""));
  jevgate_string_free(out);
  char args[512];
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"timeoutMs\":90000}", id);
  EXPECT(tool(gw, OWNER, "task_wait", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"state\":\"waiting_input\""));
  jevgate_string_free(out);

  /* Under the person's control the agent's command is refused (issue 26 item 1); the person
   * hands control to the agent (the host's own call), then it runs: its control receipt says
   * origin agent. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"command\":\"scroll down\"}", id);
  EXPECT(tool(gw, OWNER, "task_command", args, &out, &err) == JEVGATE_ERROR && out == NULL);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_EXECUTION_DENIED) == 0);
  err = NULL;
  char *status = NULL;
  EXPECT(jevgate_task_status(gw, OWNER, id, &status, &err) == JEVGATE_OK);
  char handover[160];
  snprintf(handover, sizeof handover,
           "{\"id\":\"8f14e45f-ceea-467f-a0e6-3d5a1e4b2d01\",\"action\":\"agent\",\"expectedRevision\":%u}",
           revision_of(status));
  jevgate_string_free(status);
  EXPECT(jevgate_task_control(gw, OWNER, id, handover, NULL, &err) == JEVGATE_OK);
  EXPECT(tool(gw, OWNER, "task_command", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"commandReceipt\"") && has(out, "\"origin\":\"agent\""));
  jevgate_string_free(out);
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"timeoutMs\":90000}", id);
  EXPECT(tool(gw, OWNER, "task_wait", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"state\":\"waiting_input\""));
  unsigned revision = revision_of(out);
  jevgate_string_free(out);

  /* Status with recorded evidence, then fresh. Receipts. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"browserEvidence\":\"recorded\"}", id);
  EXPECT(tool(gw, OWNER, "task_status", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"browserEvidence\":{") && has(out, "\"untrustedContent\""));
  jevgate_string_free(out);
  /* Fresh evidence, in seed 003's snake_case spelling: an evidence id, the inspection. */
  snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"browser_evidence\":\"fresh\"}", id);
  EXPECT(tool(gw, OWNER, "task_status", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"kind\":\"fresh\"") && has(out, "\"evidenceId\":\"ev_"));
  jevgate_string_free(out);
  /* Another conversation's evidence read: seed 003's evidence code. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"browserEvidence\":\"recorded\"}", id);
  EXPECT(tool(gw, "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"other\"}",
              "task_status", args, &out, &err) == JEVGATE_ERROR && out == NULL);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_BROWSER_EVIDENCE_UNAVAILABLE) == 0);
  err = NULL;
  snprintf(args, sizeof args, "{\"taskId\":\"%s\"}", id);
  EXPECT(tool(gw, OWNER, "task_receipts", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"receipts\":[") && has(out, "\"untrustedContent\""));
  jevgate_string_free(out);

  /* Continue with a revised goal at the latest revision; a stale one conflicts. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"expectedRevision\":%u,\"mode\":\"when_ready\",\"goal\":\"scroll up\"}",
           id, revision);
  EXPECT(tool(gw, OWNER, "task_update", args, &out, &err) == JEVGATE_OK);
  EXPECT(revision_of(out) == revision + 1);
  jevgate_string_free(out);
  EXPECT(tool(gw, OWNER, "task_update", args, &out, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_REVISION_CONFLICT) == 0);
  err = NULL;
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"timeoutMs\":90000}", id);
  EXPECT(tool(gw, OWNER, "task_wait", args, &out, &err) == JEVGATE_OK);
  jevgate_string_free(out);

  /* No field question is pending: an answer is refused. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"field\":\"Address\",\"text\":\"12 Main St\"}", id);
  EXPECT(tool(gw, OWNER, "task_answer", args, &out, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_STATE_CONFLICT) == 0);
  err = NULL;

  /* A Jev evaluation for the owner's agent. */
  EXPECT(tool(gw, OWNER, "jev_evaluate",
              "{\"state\":\"Hello there\",\"questions\":{\"greeting\":{\"type\":\"noul\",\"instructions\":\"Is this a "
              "greeting?\"}}}",
              &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"answers\"") && has(out, "\"greeting\""));
  jevgate_string_free(out);

  /* Another conversation: ACCESS_DENIED, as for an unknown id. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\"}", id);
  EXPECT(tool(gw, STRANGER, "task_cancel", args, &out, &err) == JEVGATE_ERROR && out == NULL);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;
  EXPECT(tool(gw, OWNER, "task_status", "{\"taskId\":\"00000000-0000-4000-8000-000000000000\"}", &out, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_ACCESS_DENIED) == 0);
  err = NULL;

  /* Bad calls: an unknown tool, arguments that are not JSON, a wrong argument, a NULL name. */
  EXPECT(tool(gw, OWNER, "browser_click", "{}", &out, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_UNKNOWN_TOOL) == 0);
  err = NULL;
  EXPECT(tool(gw, OWNER, "task_status", "{\"taskId\":", &out, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(tool(gw, OWNER, "task_wait", "{\"taskId\":\"x\",\"timeoutMs\":-1}", &out, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_TOOL_ARGUMENTS) == 0);
  err = NULL;
  EXPECT(jevgate_call_agent_tool(gw, OWNER, NULL, "{}", &out, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;
  EXPECT(jevgate_call_agent_tool(gw, "{\"agentId\":1}", "capabilities_list", NULL, &out, &err) ==
         JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  err = NULL;

  /* Cancel: the session closes. */
  snprintf(args, sizeof args, "{\"taskId\":\"%s\"}", id);
  EXPECT(tool(gw, OWNER, "task_cancel", args, &out, &err) == JEVGATE_OK);
  jevgate_string_free(out);
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"timeoutMs\":90000}", id);
  EXPECT(tool(gw, OWNER, "task_wait", args, &out, &err) == JEVGATE_OK);
  EXPECT(has(out, "\"state\":\"cancelled\""));
  jevgate_string_free(out);

  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("agent_tools");
}

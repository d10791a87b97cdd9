/*
 * jevgate from C: verification of a completion candidate (issue 26 item 6, R-TSK-VER). A page
 * served on loopback by this program, a local headless Chromium: a step list whose every step
 * is done waits `waiting_input` (COMPLETION_CANDIDATE) instead of completing; a host verifier
 * that answers `false` leaves it VERIFICATION_FAILED, one that answers "yes" INVALID_CONTRACT;
 * the parent verifies on fresh evidence (refusals first: missing evidence, a stale revision),
 * the task completes with `verification` by parent, and the same verification again answers
 * the same status. Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\","
    "\"features\":{\"browserTasks\":{\"enabled\":true},\"browserSteps\":{\"enabled\":true}}}}}";
#define WAIT_MS 90000

/* A tall page, served to every request until the listening socket is shut down. */
static const char PAGE[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\nContent-Length: 82\r\n\r\n"
    "<html><body style=\"height:6000px\"><h1>Verify me</h1><p>tall page</p></body></html>";

static void *serve(void *arg) {
  int listener = *(int *)arg;
  for (;;) {
    int c = accept(listener, NULL, NULL);
    if (c < 0) return NULL;
    char buf[4096];
    (void)recv(c, buf, sizeof buf, 0);
    (void)send(c, PAGE, sizeof PAGE - 1, 0);
    close(c);
  }
}

/* The host verifier's answer (JSON text the verifier returns; jevgate copies it, never frees). */
static const char *answer;
static const char *verifier(void *user_data, const char *input_json) {
  int *asked = user_data;
  if (has(input_json, "\"taskId\":") && has(input_json, "\"evidence\":") && has(input_json, "\"untrustedContent\""))
    (*asked)++;
  return answer;
}

/* Spawns the step list on `url` and waits for it to settle; writes the id and the status. */
static void candidate(jevgate_gateway *gw, const char *url, char **id, char **status) {
  char request[512];
  snprintf(request, sizeof request, "{\"userMessage\":\"1. scroll down\\n2. scroll down\",\"startUrl\":\"%s\"}", url);
  jevgate_error *err = NULL;
  *id = NULL;
  *status = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, request, NULL, NULL, id, &err) == JEVGATE_OK);
  if (*id == NULL) {
    fprintf(stderr, "spawn: %s\n", code_of(err));
    return;
  }
  EXPECT(jevgate_task_wait(gw, OWNER, *id, WAIT_MS, status, &err) == JEVGATE_OK);
}

/* An unsigned number after `key` in `json` (0 when absent). */
static unsigned number_after(const char *json, const char *key) {
  const char *p = json ? strstr(json, key) : NULL;
  return p ? (unsigned)strtoul(p + strlen(key), NULL, 10) : 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 16) != 0 ||
      getsockname(listener, (struct sockaddr *)&addr, &len) != 0) {
    perror("listen");
    return 1;
  }
  pthread_t server;
  pthread_create(&server, NULL, serve, &listener);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u/", (unsigned)ntohs(addr.sin_port));

  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open: %s\n", code_of(err));
    return 1;
  }

  /* A verifier that answers "yes": not a boolean, INVALID_CONTRACT (never read as false). */
  int asked = 0;
  answer = "\"yes\"";
  EXPECT(jevgate_tasks_set_verifier(gw, verifier, &asked, &err) == JEVGATE_OK);
  char *id = NULL, *status = NULL;
  candidate(gw, url, &id, &status);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  EXPECT(has(status, "\"reason\":\"INVALID_CONTRACT\""));
  EXPECT(has(status, "\"stopReason\":\"ALL_STEPS_DONE\""));
  EXPECT(asked == 1);
  if (!has(status, "INVALID_CONTRACT")) fprintf(stderr, "status: %s\n", status ? status : "(null)");
  jevgate_string_free(status);
  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  jevgate_string_free(id);

  /* A verifier that answers false: VERIFICATION_FAILED, the task still waits for a parent. */
  answer = "false";
  candidate(gw, url, &id, &status);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  EXPECT(has(status, "\"reason\":\"VERIFICATION_FAILED\""));
  EXPECT(has(status, "\"verification\":null"));
  EXPECT(asked == 2);
  unsigned revision = number_after(status, "\"revision\":");
  jevgate_string_free(status);
  EXPECT(jevgate_tasks_set_verifier(gw, NULL, NULL, &err) == JEVGATE_OK);

  /* The parent: fresh evidence of the candidate request, then verify. */
  char *evidence = NULL;
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 1, &evidence, &err) == JEVGATE_OK);
  EXPECT(has(evidence, "\"source\":\"fresh\""));
  EXPECT(has(evidence, "Verify me"));
  unsigned request = number_after(evidence, "\"request\":");
  const char *eid = evidence ? strstr(evidence, "\"evidenceId\":\"") : NULL;
  char evidence_id[65] = "";
  if (eid) sscanf(eid + strlen("\"evidenceId\":\""), "%64[^\"]", evidence_id);
  EXPECT(request == 1 && strncmp(evidence_id, "ev_", 3) == 0);
  jevgate_string_free(evidence);

  char verify[512];
  /* Refused, changing nothing: evidence never issued; a stale revision; bad input. */
  snprintf(verify, sizeof verify,
           "{\"expectedRevision\":%u,\"expectedRequestId\":%u,\"evidenceId\":\"ev_nope\","
           "\"instruction\":\"the page scrolled twice\"}",
           revision, request);
  EXPECT(jevgate_task_verify(gw, OWNER, id, verify, NULL, &err) == JEVGATE_ERROR);
  EXPECT(err && strstr(jevgate_error_message(err), "EVIDENCE_REQUIRED") != NULL);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_STATE_CONFLICT) == 0);
  err = NULL;
  snprintf(verify, sizeof verify,
           "{\"expectedRevision\":%u,\"expectedRequestId\":%u,\"evidenceId\":\"%s\","
           "\"instruction\":\"the page scrolled twice\"}",
           revision + 1, request, evidence_id);
  EXPECT(jevgate_task_verify(gw, OWNER, id, verify, NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_REVISION_CONFLICT) == 0);
  err = NULL;
  EXPECT(jevgate_task_verify(gw, OWNER, id, "{\"expectedRevision\":1}", NULL, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_INVALID_INPUT) == 0);
  err = NULL;
  EXPECT(jevgate_task_status(gw, OWNER, id, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);

  /* Accepted: completed, VERIFIED, recorded apart; the same again answers the same. */
  snprintf(verify, sizeof verify,
           "{\"expectedRevision\":%u,\"expectedRequestId\":%u,\"evidenceId\":\"%s\","
           "\"instruction\":\"the fresh page shows Verify me scrolled down twice\"}",
           revision, request, evidence_id);
  status = NULL;
  EXPECT(jevgate_task_verify(gw, OWNER, id, verify, &status, &err) == JEVGATE_OK);
  EXPECT(has(status, "\"state\":\"completed\""));
  EXPECT(has(status, "\"reason\":\"VERIFIED\""));
  EXPECT(has(status, "\"verification\":{\"by\":\"parent\""));
  printf("verified: %s\n", status ? strstr(status, "\"verification\"") : "(null)");
  jevgate_string_free(status);
  EXPECT(jevgate_task_verify(gw, OWNER, id, verify, NULL, &err) == JEVGATE_OK);
  /* The browser was let go: nothing to inspect fresh any more. */
  EXPECT(jevgate_task_evidence(gw, OWNER, id, 1, &evidence, &err) == JEVGATE_ERROR);
  EXPECT(strcmp(code_of(err), JEVGATE_CODE_BROWSER_INSPECTION_UNAVAILABLE) == 0);
  err = NULL;
  jevgate_string_free(id);

  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  shutdown(listener, SHUT_RDWR);
  close(listener);
  pthread_join(server, NULL);
  return expect_report("task_verify");
}

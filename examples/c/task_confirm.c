/*
 * jevgate from C: high-impact confirmation (issue 26 item 2). Under
 * `confirmHighImpact: "always"` a Jev-decided press on "Delete account" waits for the person's
 * yes: the task stops CONFIRMATION_REQUIRED with `confirmationRequest` in its status, "no" runs
 * nothing (CONFIRMATION_DECLINED), "yes" presses it once. A loopback HTTP server on a thread
 * serves the page and counts real presses; a C callback model answers Jev's questions (the
 * impact question honestly: "Delete …" is not routine).
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#define _POSIX_C_SOURCE 200809L
#include "jevgate.h"
#include "expect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *OWNER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-1\"}";
static const char *CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"callback\",\"features\":{"
    "\"browserTasks\":{\"enabled\":true,\"confirmHighImpact\":\"always\"},\"browserSteps\":{\"enabled\":true}}}}}";
#define WAIT_MS 90000

static const char *PAGE =
    "<title>Account</title><h1>Account</h1>"
    "<button onclick=\"fetch('/beacon',{method:'POST'})\">Delete account</button>";

/* ---- the page: one loopback server thread; POST /beacon counts a press ---- */
static atomic_int presses = 0;
static int listener = -1;

static void *serve(void *arg) {
  (void)arg;
  for (;;) {
    int c = accept(listener, NULL, NULL);
    if (c < 0) return NULL;
    char req[2048];
    ssize_t n = read(c, req, sizeof req - 1);
    if (n > 0) {
      req[n] = '\0';
      char head[256];
      if (strncmp(req, "POST /beacon", 12) == 0) {
        atomic_fetch_add(&presses, 1);
        snprintf(head, sizeof head, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        (void)!write(c, head, strlen(head));
      } else {
        snprintf(head, sizeof head,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                 strlen(PAGE));
        (void)!write(c, head, strlen(head));
        (void)!write(c, PAGE, strlen(PAGE));
      }
    }
    close(c);
  }
}

/* Waits up to 5 s for `want` presses, then a short quiet time so a double press would show. */
static int presses_after(int want) {
  struct timespec tick = {0, 20 * 1000 * 1000};
  for (int i = 0; i < 250 && atomic_load(&presses) < want; i++) nanosleep(&tick, NULL);
  struct timespec quiet = {0, 150 * 1000 * 1000};
  nanosleep(&quiet, NULL);
  return atomic_load(&presses);
}

/* ---- the model ---- */
static char *reply(const char *key, const char *answer) {
  const char *fmt = "{\"model\":\"m\",\"answers\":{\"%s\":%s},\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}";
  size_t len = strlen(fmt) + strlen(key) + strlen(answer) + 1;
  char *out = malloc(len);
  if (out) snprintf(out, len, fmt, key, answer);
  return out;
}

/* A control question's option keys, in order, from its "criteria" object (descriptions may
 * hold escaped quotes); returns how many. */
static int option_keys(const char *request, char keys[][16], int cap) {
  const char *p = strstr(request, "\"criteria\":{");
  if (!p) return 0;
  p += strlen("\"criteria\":{");
  int n = 0;
  while (*p == '"' && n < cap) {
    size_t k = strcspn(p + 1, "\"");
    if (k >= 16) return n;
    memcpy(keys[n], p + 1, k);
    keys[n][k] = '\0';
    n++;
    p += k + 2; /* past the key's closing quote */
    if (*p++ != ':' || *p++ != '"') return n;
    while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1; /* the description */
    if (*p) p++;
    if (*p == ',') p++;
  }
  return n;
}

/* The option key whose description names `name`, or "none". */
static const char *option_naming(const char *request, const char *name, char keys[][16], int n) {
  const char *criteria = strstr(request, "\"criteria\":{");
  const char *hit = criteria ? strstr(criteria, name) : NULL;
  const char *best = "none";
  for (int i = 0; i < n && hit; i++) {
    char quoted[24];
    snprintf(quoted, sizeof quoted, "\"%s\":", keys[i]);
    const char *at = strstr(criteria, quoted);
    if (at && at < hit) best = keys[i];
  }
  return best;
}

static char *model(void *user_data, const char *request) {
  (void)user_data;
  char answer[512];
  if (strstr(request, "\"routine\"")) {
    /* The impact question: its state is the chosen control only. */
    double p = strstr(request, "Delete") ? 0.05 : 0.95;
    snprintf(answer, sizeof answer, "{\"type\":\"noul\",\"noul\":%.2f}", p);
    return reply("routine", answer);
  }
  if (strstr(request, "\"reply\"")) {
    const char *c = strstr(request, "\"state\":\"yes\"") ? "yes" : strstr(request, "\"state\":\"no\"") ? "no" : "other";
    snprintf(answer, sizeof answer,
             "{\"type\":\"choice\",\"choice\":\"%s\",\"confidence\":0.9,\"probabilities\":"
             "{\"yes\":%d,\"no\":%d,\"other\":%d}}",
             c, c[0] == 'y', c[0] == 'n', c[0] == 'o');
    return reply("reply", answer);
  }
  char keys[64][16];
  int n = option_keys(request, keys, 64);
  const char *pick = option_naming(request, "Delete account", keys, n);
  /* An agent's goal run (issue 26 item 1): done once it acted. */
  if (strstr(request, "actionsDone\\\":[\\\"")) pick = "done";
  /* The person's question about the page is a read request (issue 26 item 3). */
  if (strstr(request, "page say?") && strstr(request, "\"read_request\"")) pick = "read_request";
  char probs[2048] = "";
  size_t used = 0;
  for (int i = 0; i < n && used < sizeof probs - 40; i++)
    used += (size_t)snprintf(probs + used, sizeof probs - used, "%s\"%s\":%d", i ? "," : "", keys[i],
                             strcmp(keys[i], pick) == 0);
  char big[2300];
  snprintf(big, sizeof big, "{\"type\":\"choice\",\"choice\":\"%s\",\"confidence\":0.9,\"probabilities\":{%s}}",
           pick, probs);
  return reply("control", big);
}

static void model_free(void *user_data, char *response) {
  (void)user_data;
  free(response);
}

static int has(const char *json, const char *needle) { return json && strstr(json, needle) != NULL; }

static char *settled(jevgate_gateway *gw, const char *id) {
  char *status = NULL;
  jevgate_error *err = NULL;
  EXPECT(jevgate_task_wait(gw, OWNER, id, WAIT_MS, &status, &err) == JEVGATE_OK);
  if (err) jevgate_error_free(err);
  return status;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 16) != 0 ||
      getsockname(listener, (struct sockaddr *)&addr, &alen) != 0) {
    fprintf(stderr, "cannot listen on loopback\n");
    return 1;
  }
  pthread_t server;
  pthread_create(&server, NULL, serve, NULL);
  pthread_detach(server);

  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], CONFIG, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open failed\n");
    return 1;
  }
  EXPECT(jevgate_gateway_set_jev_callback(gw, model, model_free, NULL, &err) == JEVGATE_OK);

  char spawn[256];
  snprintf(spawn, sizeof spawn, "{\"goal\":\"\",\"keepOpen\":true,\"startUrl\":\"http://127.0.0.1:%d/\"}",
           ntohs(addr.sin_port));
  char *id = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, spawn, NULL, NULL, &id, &err) == JEVGATE_OK);
  char *status = settled(gw, id);
  EXPECT(has(status, "\"state\":\"waiting_input\""));
  jevgate_string_free(status);

  /* Asked, not pressed. */
  EXPECT(jevgate_task_command(gw, OWNER, id, "press Delete account", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"reason\":\"CONFIRMATION_REQUIRED\""));
  EXPECT(has(status, "\"confirmationRequest\":{\"control\":\"Delete account\""));
  EXPECT(has(status, "awaiting_confirmation"));
  jevgate_string_free(status);
  EXPECT(presses_after(0) == 0);

  /* No: nothing runs. */
  EXPECT(jevgate_task_command(gw, OWNER, id, "no", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"reason\":\"CONFIRMATION_DECLINED\"") && has(status, "\"confirmationRequest\":null"));
  jevgate_string_free(status);
  EXPECT(presses_after(0) == 0);

  /* Asked again; yes presses once. */
  EXPECT(jevgate_task_command(gw, OWNER, id, "press Delete account", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"reason\":\"CONFIRMATION_REQUIRED\""));
  jevgate_string_free(status);
  EXPECT(jevgate_task_command(gw, OWNER, id, "yes", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"outcome\":\"Done: "));
  jevgate_string_free(status);
  EXPECT(presses_after(1) == 1);

  /* Issue 26 item 3: the person's question about the page is a read request: nothing runs, the
   * command goes to the agent (needsAgent), and the agent's turn is read-only. */
  EXPECT(jevgate_task_command(gw, OWNER, id, "what does this page say?", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"needsAgent\":{\"code\":\"READ_REQUEST\""));
  EXPECT(has(status, "needs_agent"));
  jevgate_string_free(status);
  char args[256];
  char *out = NULL;
  snprintf(args, sizeof args, "{\"taskId\":\"%s\",\"command\":\"press Alpha\"}", id);
  EXPECT(jevgate_call_agent_tool(gw, OWNER, "task_command", args, &out, &err) == JEVGATE_ERROR);
  EXPECT(err && strcmp(jevgate_error_code(err), JEVGATE_CODE_READ_REQUEST_ONLY) == 0);
  if (err) jevgate_error_free(err);
  err = NULL;
  EXPECT(out == NULL);
  EXPECT(presses_after(1) == 1);

  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  jevgate_string_free(id);

  /* Issue 26 items 1 and 2: a spawn's goal is the agent's, a goal
   * run whose every action is checked for impact — asked, not pressed; yes presses once and the
   * run ends a completion candidate. */
  snprintf(spawn, sizeof spawn, "{\"goal\":\"press Delete account\",\"startUrl\":\"http://127.0.0.1:%d/\"}",
           ntohs(addr.sin_port));
  id = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, spawn, NULL, NULL, &id, &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"reason\":\"CONFIRMATION_REQUIRED\""));
  jevgate_string_free(status);
  EXPECT(presses_after(1) == 1);
  EXPECT(jevgate_task_command(gw, OWNER, id, "yes", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"reason\":\"COMPLETION_CANDIDATE\""));
  jevgate_string_free(status);
  EXPECT(presses_after(2) == 2);
  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  jevgate_string_free(id);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  shutdown(listener, SHUT_RDWR);
  close(listener);
  return expect_report("task_confirm");
}

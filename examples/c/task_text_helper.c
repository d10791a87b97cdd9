/*
 * jevgate from C: the text helper in a task's run (issue 26 item 7). With `gateway.jev.thinking`
 * configured, a Jev-decided text entry whose command quotes no text ("choose Chiang Mai as the
 * origin") types the value the text helper resolves from the command. One loopback HTTP server
 * thread serves the page (it reports what was typed), and answers the helper's OpenAI chat
 * request; the test checks the helper saw the command but never the page's title, path, query
 * or text. A C callback model picks the field.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#define _POSIX_C_SOURCE 200809L
#include "jevgate.h"
#include "expect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *OWNER = "{\"agentId\":\"assistant\",\"principalId\":\"alice\",\"conversationId\":\"conv-1\"}";
#define WAIT_MS 90000

static const char *PAGE =
    "<title>SECRET-TITLE</title><p>SECRET-PAGE-TEXT</p>"
    "<label>Origin <input oninput=\"fetch('/typed?v='+encodeURIComponent(this.value),{method:'POST'})\"></label>";
static const char *HELPER_ANSWER =
    "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"{\\\"text\\\":\\\"Chiang Mai\\\"}\"}}]}";

/* ---- the server: the page, what was typed, the helper ---- */
static int listener = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char typed[256];     /* the last value the page reported (URL-encoded) */
static char helper[65536];  /* the last request body the helper got */
static int helper_calls = 0;

/* Reads one request (head and a body of Content-Length bytes) into buf; its length. */
static size_t read_request(int c, char *buf, size_t cap) {
  size_t n = 0;
  char *end = NULL;
  while (n + 1 < cap && !(end = strstr(buf, "\r\n\r\n"))) {
    ssize_t r = read(c, buf + n, cap - 1 - n);
    if (r <= 0) return n;
    n += (size_t)r;
    buf[n] = '\0';
  }
  if (!end) return n;
  const char *cl = strstr(buf, "Content-Length: ");
  if (!cl) cl = strstr(buf, "content-length: ");
  size_t want = cl ? (size_t)strtoul(cl + 16, NULL, 10) : 0;
  size_t have = n - (size_t)(end + 4 - buf);
  while (have < want && n + 1 < cap) {
    ssize_t r = read(c, buf + n, cap - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
    have += (size_t)r;
    buf[n] = '\0';
  }
  return n;
}

static void respond(int c, const char *type, const char *body) {
  char head[256];
  snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
           type, strlen(body));
  (void)!write(c, head, strlen(head));
  (void)!write(c, body, strlen(body));
}

static void *serve(void *arg) {
  (void)arg;
  static char req[70000];
  for (;;) {
    int c = accept(listener, NULL, NULL);
    if (c < 0) return NULL;
    /* A browser may open a connection it sends nothing on (a preconnect): do not wait on it. */
    struct timeval limit = {1, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    req[0] = '\0';
    size_t n = read_request(c, req, sizeof req);
    if (n > 0 && strncmp(req, "POST /typed?v=", 14) == 0) {
      pthread_mutex_lock(&lock);
      size_t k = strcspn(req + 14, " ");
      if (k >= sizeof typed) k = sizeof typed - 1;
      memcpy(typed, req + 14, k);
      typed[k] = '\0';
      pthread_mutex_unlock(&lock);
      respond(c, "text/plain", "");
    } else if (n > 0 && strncmp(req, "POST /v1/chat/completions", 25) == 0) {
      pthread_mutex_lock(&lock);
      const char *body = strstr(req, "\r\n\r\n");
      snprintf(helper, sizeof helper, "%s", body ? body + 4 : "");
      helper_calls++;
      pthread_mutex_unlock(&lock);
      respond(c, "application/json", HELPER_ANSWER);
    } else if (n > 0) {
      respond(c, "text/html", PAGE);
    }
    close(c);
  }
}

/* ---- the model: the option naming "Origin" ---- */
static char *model(void *user_data, const char *request) {
  (void)user_data;
  const char *criteria = strstr(request, "\"criteria\":{");
  const char *origin = criteria ? strstr(criteria, "Origin") : NULL;
  char pick[16] = "none";
  if (origin) {
    /* The key just before the description naming it: the last "oN": before the hit. */
    for (const char *p = criteria; (p = strstr(p, "\"o")) && p < origin; p++) {
      size_t k = strcspn(p + 1, "\"");
      if (k < sizeof pick && p[1 + k + 1] == ':') {
        memcpy(pick, p + 1, k);
        pick[k] = '\0';
      }
    }
  }
  /* A probability for every option key ("oN" and the named outcomes), the pick's 1. */
  char probs[4096] = "";
  size_t used = 0;
  for (const char *p = criteria; p && (p = strstr(p, "\":\"")) && used < sizeof probs - 40; p += 3) {
    const char *key_end = p;
    const char *key = key_end;
    while (key > criteria && key[-1] != '"') key--;
    size_t k = (size_t)(key_end - key);
    if (k == 0 || k >= 16 || key[-2] == ':') continue;
    char name[16];
    memcpy(name, key, k);
    name[k] = '\0';
    used += (size_t)snprintf(probs + used, sizeof probs - used, "%s\"%s\":%d", used ? "," : "", name,
                             strcmp(name, pick) == 0);
  }
  const char *fmt = "{\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1},\"answers\":{\"control\":"
                    "{\"type\":\"choice\",\"choice\":\"%s\",\"confidence\":0.9,\"probabilities\":{%s}}}}";
  size_t len = strlen(fmt) + strlen(pick) + strlen(probs) + 1;
  char *out = malloc(len);
  if (out) snprintf(out, len, fmt, pick, probs);
  return out;
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
  int port = ntohs(addr.sin_port);

  setenv("JEVGATE_TEST_C_HELPER_KEY", "k", 1);
  char config[1024];
  snprintf(config, sizeof config,
           "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"callback\","
           "\"thinking\":{\"baseUrl\":\"http://127.0.0.1:%d/v1\",\"model\":\"small\","
           "\"apiKeyEnv\":\"JEVGATE_TEST_C_HELPER_KEY\"},"
           "\"features\":{\"browserTasks\":{\"enabled\":true}}}}}",
           port);
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], config, &gw, &err) != JEVGATE_OK) {
    fprintf(stderr, "open failed\n");
    return 1;
  }
  EXPECT(jevgate_gateway_set_jev_callback(gw, model, model_free, NULL, &err) == JEVGATE_OK);

  char spawn[256];
  snprintf(spawn, sizeof spawn,
           "{\"goal\":\"\",\"keepOpen\":true,\"startUrl\":\"http://127.0.0.1:%d/secret-path?q=SECRET-QUERY\"}", port);
  char *id = NULL;
  EXPECT(jevgate_task_spawn(gw, OWNER, spawn, NULL, NULL, &id, &err) == JEVGATE_OK);
  char *status = settled(gw, id);
  jevgate_string_free(status);

  /* The command quotes no text: the helper resolves it from the command and the origin. */
  EXPECT(jevgate_task_command(gw, OWNER, id, "choose Chiang Mai as the origin", &err) == JEVGATE_OK);
  status = settled(gw, id);
  EXPECT(has(status, "\"outcome\":\"Done: typed"));
  jevgate_string_free(status);
  for (int i = 0; i < 250; i++) {
    pthread_mutex_lock(&lock);
    int done = strcmp(typed, "Chiang%20Mai") == 0;
    pthread_mutex_unlock(&lock);
    if (done) break;
    struct timespec tick = {0, 20 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
  pthread_mutex_lock(&lock);
  EXPECT(strcmp(typed, "Chiang%20Mai") == 0);
  EXPECT(helper_calls == 1);
  EXPECT(has(helper, "choose Chiang Mai as the origin"));
  EXPECT(has(helper, "127.0.0.1"));
  EXPECT(!has(helper, "SECRET-TITLE") && !has(helper, "SECRET-PAGE-TEXT"));
  EXPECT(!has(helper, "secret-path") && !has(helper, "SECRET-QUERY"));
  pthread_mutex_unlock(&lock);

  EXPECT(jevgate_task_cancel(gw, OWNER, id, NULL, &err) == JEVGATE_OK);
  jevgate_string_free(id);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  shutdown(listener, SHUT_RDWR);
  close(listener);
  return expect_report("task text helper");
}

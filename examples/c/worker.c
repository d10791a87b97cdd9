/*
 * jevgate from C: the reference device worker end to end. A gateway pairs a browser device and
 * serves the device-worker channel on loopback; a local headless Chromium connects to it as
 * that device; an agent's tool calls (browser_javascript, browser_find, browser_computer click)
 * travel the real WebSocket channel and act on the page with real input events.
 * Exits non-zero on the first broken expectation (the test suite runs it with a data dir).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs one tool call for person/conv and returns the result JSON (to free). */
static char *call(jevgate_gateway *gw, const char *tool, const char *args) {
  char request[1024];
  snprintf(request, sizeof request,
           "{\"owner\":\"person\",\"rootSession\":\"conv\",\"tool\":\"%s\",\"args\":%s}", tool, args);
  char *out = NULL;
  jevgate_error *err = NULL;
  if (jevgate_call_tool(gw, request, &out, &err) != JEVGATE_OK) {
    fprintf(stderr, "%s: %s\n", tool, jevgate_error_message(err));
    jevgate_error_free(err);
    failures++;
    return NULL;
  }
  return out;
}

/* A host's own tool server: answers browser_get_text, fails everything else with a worker
   code. Returns a malloc'd string that jevgate hands back to free_result. */
static char *serve(void *user_data, const char *tool, const char *args_json) {
  (void)args_json;
  int *calls = user_data;
  (*calls)++;
  const char *answer = strcmp(tool, "browser_get_text") == 0
                           ? "{\"success\":true,\"result\":{\"text\":\"served by C\"}}"
                           : "{\"success\":false,\"errorCode\":\"tab_unavailable\",\"message\":\"no tab\"}";
  char *out = malloc(strlen(answer) + 1);
  if (out) strcpy(out, answer);
  return out;
}

static void free_result(void *user_data, char *result_json) {
  (void)user_data;
  free(result_json);
}

/* Copies the string value after `"key":"` in `json` into `out`. */
static int field(const char *json, const char *key, char *out, size_t size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  const char *at = json ? strstr(json, pattern) : NULL;
  if (!at) return 0;
  at += strlen(pattern);
  const char *end = strchr(at, '"');
  if (!end || (size_t)(end - at) >= size) return 0;
  memcpy(out, at, (size_t)(end - at));
  out[end - at] = '\0';
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;

  char *pairing = NULL;
  EXPECT(jevgate_pair(gw, "person",
                      "{\"installationId\":\"c-worker\",\"name\":\"C worker\","
                      "\"browser\":{\"name\":\"Chromium\",\"version\":\"131\"}}",
                      &pairing, &err) == JEVGATE_OK);
  char token[256] = "", device[128] = "";
  EXPECT(field(pairing, "token", token, sizeof token));
  EXPECT(field(pairing, "id", device, sizeof device));
  jevgate_string_free(pairing);

  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel(gw, "127.0.0.1:0", &channel, &err) == JEVGATE_OK);
  char url[128];
  snprintf(url, sizeof url, "ws://127.0.0.1:%u/v1/device-worker/channel",
           (unsigned)jevgate_channel_port(channel));

  jevgate_local_browser *browser = NULL;
  if (jevgate_local_browser_launch(NULL, &browser, &err) != JEVGATE_OK) {
    fprintf(stderr, "launch: %s\n", jevgate_error_message(err));
    return 1;
  }

  /* An old protocol is refused before ready, with the reason and never the token. */
  jevgate_device_worker *worker = NULL;
  EXPECT(jevgate_device_worker_connect(url, token, browser, "{\"protocol\":1}", &worker, &err) ==
         JEVGATE_ERROR);
  EXPECT(strcmp(jevgate_error_code(err), "DEVICE_CHANNEL_IO") == 0);
  EXPECT(strstr(jevgate_error_message(err), "UPGRADE_REQUIRED") != NULL);
  EXPECT(strstr(jevgate_error_message(err), token) == NULL);
  jevgate_error_free(err);
  err = NULL;

  EXPECT(jevgate_device_worker_connect(url, token, browser, NULL, &worker, &err) == JEVGATE_OK);
  char *id = NULL;
  EXPECT(jevgate_device_worker_device_id(worker, &id, &err) == JEVGATE_OK);
  EXPECT(id != NULL && strcmp(id, device) == 0);
  printf("worker connected as %s\n", id ? id : "(null)");
  jevgate_string_free(id);

  /* The browser's blank tab, filled by a script: a button that counts its real clicks
     (browser_navigate takes http(s) addresses only; the Rust suite uses a loopback site). */
  char *r = call(gw, "browser_javascript",
           "{\"code\":\"document.title='C demo'; window.clicks=0; document.body.innerHTML="
           "'<button onclick=\\\"if(event.isTrusted)window.clicks++\\\">Press me</button>'; document.title\"}");
  EXPECT(r != NULL && strstr(r, "\"value\":\"C demo\"") != NULL);
  jevgate_string_free(r);
  r = call(gw, "browser_find", "{\"query\":\"Press me\"}");
  char ref[32] = "";
  EXPECT(field(r, "ref", ref, sizeof ref));
  jevgate_string_free(r);
  char click[128];
  snprintf(click, sizeof click, "{\"action\":\"click\",\"ref\":\"%s\"}", ref);
  r = call(gw, "browser_computer", click);
  EXPECT(r != NULL && strstr(r, "\"success\":true") != NULL);
  jevgate_string_free(r);
  r = call(gw, "browser_javascript", "{\"code\":\"window.clicks\"}");
  EXPECT(r != NULL && strstr(r, "\"value\":1") != NULL);
  printf("after one click: %s\n", r ? r : "(null)");
  jevgate_string_free(r);
  EXPECT(jevgate_device_worker_commands_served(worker) == 4);

  /* Still running: a short wait writes NULL. Unpairing ends it with 1008 DEVICE_UNPAIRED. */
  char *exit_json = NULL;
  EXPECT(jevgate_device_worker_wait(worker, 10, &exit_json, &err) == JEVGATE_OK && exit_json == NULL);
  EXPECT(jevgate_unpair(gw, "person", device, &err) == JEVGATE_OK);
  EXPECT(jevgate_device_worker_wait(worker, 5000, &exit_json, &err) == JEVGATE_OK);
  EXPECT(exit_json != NULL && strstr(exit_json, "\"closeCode\":1008") != NULL &&
         strstr(exit_json, "DEVICE_UNPAIRED") != NULL);
  printf("worker ended: %s\n", exit_json ? exit_json : "(null)");
  jevgate_string_free(exit_json);

  EXPECT(jevgate_device_worker_connect(url, token, NULL, NULL, &worker, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  jevgate_device_worker_close(worker);

  /* A worker whose commands are served by the host's own C function. */
  EXPECT(jevgate_pair(gw, "person",
                      "{\"installationId\":\"c-bridge\",\"name\":\"C bridge\","
                      "\"browser\":{\"name\":\"Bridge\",\"version\":\"1\"}}",
                      &pairing, &err) == JEVGATE_OK);
  EXPECT(field(pairing, "token", token, sizeof token));
  jevgate_string_free(pairing);
  int calls = 0;
  worker = NULL;
  EXPECT(jevgate_device_worker_connect_with(url, token, serve, free_result, &calls, NULL, &worker, &err) ==
         JEVGATE_OK);
  r = call(gw, "browser_get_text", "{}");
  EXPECT(r != NULL && strstr(r, "served by C") != NULL);
  jevgate_string_free(r);
  r = call(gw, "browser_find", "{\"query\":\"x\"}");
  EXPECT(r != NULL && strstr(r, "\"errorCode\":\"tab_unavailable\"") != NULL);
  jevgate_string_free(r);
  EXPECT(calls == 2);
  EXPECT(jevgate_device_worker_connect_with(url, token, NULL, NULL, NULL, NULL, &worker, &err) ==
         JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);

  jevgate_device_worker_close(worker);
  jevgate_device_worker_close(NULL);
  jevgate_local_browser_close(browser);
  jevgate_channel_free(channel);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("worker");
}

/*
 * jevgate from C: browser_autopilot (R-AUTO), the tenth device tool when Jev is configured.
 * A gateway with a C callback as its Jev provider pairs a local headless Chromium as a browser
 * device; the agent hands browser_autopilot a goal and a named value. The C "model" answers
 * each decision (press the button, then done) and checks it never receives the value itself;
 * a second run asks to type on a page without an http(s) origin and is refused
 * (FOREIGN_ORIGIN): nothing is typed. The tool list has ten tools only with Jev configured.
 * Exits non-zero on the first broken expectation (the test suite runs it with a data dir).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET "Zed-SECRET-77"

struct model {
  int calls;
  int leaks;
};

/* Every question's options on the demo page: the page kinds, the two controls plus done and
   stop, the one value name. The answer picks `next` per call: press, done, then fill. */
static char *model(void *user_data, const char *request_json) {
  struct model *m = user_data;
  m->calls++;
  if (strstr(request_json, SECRET) != NULL) m->leaks++;
  const char *next = m->calls == 1 ? "o0" : m->calls == 2 ? "done" : "o1";
  const char *keys[] = {"o0", "o1", "done", "stop"};
  char probs[256] = "";
  for (int i = 0; i < 4; i++) {
    char one[48];
    snprintf(one, sizeof one, "%s\"%s\":%s", i ? "," : "", keys[i], strcmp(keys[i], next) == 0 ? "1" : "0");
    strncat(probs, one, sizeof probs - strlen(probs) - 1);
  }
  char *out = malloc(1024);
  if (!out) return NULL;
  snprintf(out, 1024,
           "{\"model\":\"c-model\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1},\"answers\":{"
           "\"page\":{\"type\":\"choice\",\"choice\":\"ordinary\",\"confidence\":0.9,\"probabilities\":"
           "{\"ordinary\":1,\"consent\":0,\"login\":0,\"settings\":0,\"captcha\":0,\"instructions\":0}},"
           "\"next\":{\"type\":\"choice\",\"choice\":\"%s\",\"confidence\":0.9,\"probabilities\":{%s}},"
           "\"value\":{\"type\":\"choice\",\"choice\":\"v0\",\"confidence\":0.9,\"probabilities\":{\"v0\":1}}}}",
           next, probs);
  return out;
}

static void model_free(void *user_data, char *response) {
  (void)user_data;
  free(response);
}

static char *call(jevgate_gateway *gw, const char *tool, const char *args) {
  char request[1024];
  snprintf(request, sizeof request,
           "{\"owner\":\"person\",\"rootSession\":\"conv\",\"agentId\":\"assistant\",\"tool\":\"%s\",\"args\":%s}",
           tool, args);
  char *out = NULL;
  jevgate_error *err = NULL;
  if (jevgate_call_tool(gw, request, &out, &err) != JEVGATE_OK) {
    fprintf(stderr, "%s: %s\n", tool, jevgate_error_message(err));
    jevgate_error_free(err);
    atomic_fetch_add(&failures, 1);
    return NULL;
  }
  return out;
}

/* Counts the progress lines and checks their shape: `Autopilot: <goal> — <step>`. */
static void on_progress(void *user_data, const char *line) {
  int *lines = user_data;
  (*lines)++;
  const char *prefix = "Autopilot: press the button \xE2\x80\x94 ";
  EXPECT(strncmp(line, prefix, strlen(prefix)) == 0);
  EXPECT(strstr(line, SECRET) == NULL);
}

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

/* How many objects the JSON array `json` lists at its top level (its `"name"` keys). */
static int names(const char *json) {
  int n = 0;
  for (const char *p = json; p && (p = strstr(p, "\"name\":\"browser_")) != NULL; p++) n++;
  return n;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"callback\"}}}", &gw,
                           &err) != JEVGATE_OK)
    return 1;
  struct model m = {0, 0};
  EXPECT(jevgate_gateway_set_jev_callback(gw, model, model_free, &m, &err) == JEVGATE_OK);

  /* Ten device tools with Jev configured; the static list stays nine. */
  char *tools = NULL;
  EXPECT(jevgate_gateway_tool_definitions(gw, "mcp", &tools, &err) == JEVGATE_OK);
  EXPECT(names(tools) == 10 && strstr(tools, "\"name\":\"browser_autopilot\"") != NULL);
  jevgate_string_free(tools);
  EXPECT(jevgate_tool_definitions("mcp", &tools, &err) == JEVGATE_OK);
  EXPECT(names(tools) == 9);
  jevgate_string_free(tools);
  EXPECT(jevgate_gateway_agent_tools(gw, "openai", &tools, &err) == JEVGATE_OK);
  EXPECT(tools != NULL && strstr(tools, "\"name\":\"browser_autopilot\"") != NULL);
  jevgate_string_free(tools);
  EXPECT(jevgate_gateway_tool_definitions(gw, "yaml", &tools, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;

  char *pairing = NULL;
  EXPECT(jevgate_pair(gw, "person",
                      "{\"installationId\":\"c-auto\",\"name\":\"C autopilot\","
                      "\"browser\":{\"name\":\"Chromium\",\"version\":\"131\"}}",
                      &pairing, &err) == JEVGATE_OK);
  char token[256] = "";
  EXPECT(field(pairing, "token", token, sizeof token));
  jevgate_string_free(pairing);
  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel(gw, "127.0.0.1:0", &channel, &err) == JEVGATE_OK);
  char url[128];
  snprintf(url, sizeof url, "ws://127.0.0.1:%u/v1/device-worker/channel", (unsigned)jevgate_channel_port(channel));
  jevgate_local_browser *browser = NULL;
  if (jevgate_local_browser_launch(NULL, &browser, &err) != JEVGATE_OK) {
    fprintf(stderr, "launch: %s\n", jevgate_error_message(err));
    return 1;
  }
  jevgate_device_worker *worker = NULL;
  EXPECT(jevgate_device_worker_connect(url, token, browser, NULL, &worker, &err) == JEVGATE_OK);

  /* The blank tab, filled by a script: a button that counts its real presses, a field. */
  char *r = call(gw, "browser_javascript",
                 "{\"code\":\"window.presses=0; window.typed=0; document.body.innerHTML="
                 "'<button onclick=\\\"if(event.isTrusted)window.presses++\\\">Press me</button>"
                 "<label>Name <input oninput=\\\"window.typed++\\\"></label>'; 1\"}");
  EXPECT(r != NULL && strstr(r, "\"success\":true") != NULL);
  jevgate_string_free(r);

  /* The first run with a progress callback: one line per step, as it happens. */
  int lines = 0;
  r = NULL;
  EXPECT(jevgate_call_tool_with_progress(
             gw,
             "{\"owner\":\"person\",\"rootSession\":\"conv\",\"agentId\":\"assistant\","
             "\"tool\":\"browser_autopilot\",\"args\":{\"goal\":\"press the button\","
             "\"values\":{\"name\":\"" SECRET "\"}}}",
             on_progress, &lines, &r, &err) == JEVGATE_OK);
  EXPECT(lines == 2); /* the press, then done */
  EXPECT(r != NULL && strstr(r, "\"state\":\"done\"") != NULL);
  EXPECT(r != NULL && strstr(r, "\"tool\":\"page_click\"") != NULL);
  EXPECT(r != NULL && strstr(r, "Autopilot: press the button") != NULL);
  EXPECT(r != NULL && strstr(r, SECRET) == NULL);
  printf("autopilot: %s\n", r ? "done" : "(failed)");
  jevgate_string_free(r);
  r = call(gw, "browser_javascript", "{\"code\":\"window.presses\"}");
  EXPECT(r != NULL && strstr(r, "\"value\":1") != NULL);
  jevgate_string_free(r);

  /* A page without an http(s) origin: typing is refused, nothing reaches the field. */
  r = call(gw, "browser_autopilot", "{\"goal\":\"enter the name\",\"values\":{\"name\":\"" SECRET "\"}}");
  EXPECT(r != NULL && strstr(r, "\"reason\":\"FOREIGN_ORIGIN\"") != NULL);
  jevgate_string_free(r);
  r = call(gw, "browser_javascript", "{\"code\":\"window.typed\"}");
  EXPECT(r != NULL && strstr(r, "\"value\":0") != NULL);
  jevgate_string_free(r);
  EXPECT(m.calls == 3);
  EXPECT(m.leaks == 0);

  /* Bad arguments are refused before anything runs, naming the rule, never the value. */
  r = call(gw, "browser_autopilot", "{\"goal\":\"x\",\"values\":{\"pin\":\"" SECRET "\\u0007\"}}");
  EXPECT(r != NULL && strstr(r, "INVALID_TOOL_ARGUMENTS") != NULL && strstr(r, SECRET) == NULL);
  jevgate_string_free(r);

  jevgate_device_worker_close(worker);
  jevgate_local_browser_close(browser);
  jevgate_channel_free(channel);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("autopilot");
}

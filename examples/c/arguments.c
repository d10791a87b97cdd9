/*
 * jevgate from C: one wrong argument, one answer (issue 13 item 2, R-C). Every string → enum,
 * JSON → request parse and argument check lives once in the Rust core, so the C ABI and the
 * Python module report the same mistake with the same code and the same argument name:
 * bindings/python/tests/test_arguments.py makes the same calls from Python and expects the
 * same INVALID_ARGUMENT. Exits non-zero on the first broken expectation.
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The call returned `status` JEVGATE_INVALID_ARGUMENT, code INVALID_ARGUMENT, and a message
 * naming `arg` (e.g. "invalid argument `mode`: ..."); frees the error. */
static void expect_invalid(jevgate_status status, jevgate_error *err, const char *arg) {
  EXPECT(status == JEVGATE_INVALID_ARGUMENT);
  EXPECT(err != NULL);
  if (err == NULL) return;
  EXPECT(strcmp(jevgate_error_code(err), "INVALID_ARGUMENT") == 0);
  EXPECT(jevgate_error_http_status(err) == 400);
  char named[64];
  snprintf(named, sizeof named, "`%s`", arg);
  EXPECT(strstr(jevgate_error_message(err), named) != NULL);
  printf("%-16s %s: %s\n", arg, jevgate_error_code(err), jevgate_error_message(err));
  jevgate_error_free(err);
}

static char *never_called(void *user_data, const char *tool, const char *args_json) {
  (void)user_data;
  (void)tool;
  (void)args_json;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;

  /* An unknown session mode (the core's SessionMode::from_str). */
  jevgate_browser_call *call = NULL;
  jevgate_status status;
  err = NULL;
  status = jevgate_browser_call_begin(
      gw, "{\"threadId\":\"t\",\"organization\":\"acme\",\"mode\":\"private\"}", &call, &err);
  expect_invalid(status, err, "mode");
  EXPECT(call == NULL);

  /* An unknown tool format (ToolFormat::from_str). */
  char *json = NULL;
  err = NULL;
  status = jevgate_tool_definitions("yaml", &json, &err);
  expect_invalid(status, err, "format");
  EXPECT(json == NULL);

  /* A pairing request without its installation id (PairRequest::from_json). */
  err = NULL;
  status = jevgate_pair(gw, "owner", "{\"name\":\"no installation id\"}", &json, &err);
  expect_invalid(status, err, "request_json");

  /* A command text over the grammar's 1 MiB limit (grammar::check_text). */
  size_t n = (1u << 20) + 1;
  char *text = malloc(n + 1);
  if (text == NULL) return 1;
  memset(text, 'a', n);
  text[n] = '\0';
  err = NULL;
  status = jevgate_parse_command(text, &json, &err);
  expect_invalid(status, err, "text");
  free(text);

  /* A zero connect timeout (checked by DeviceWorker::connect before any connection). */
  jevgate_device_worker *worker = NULL;
  err = NULL;
  status = jevgate_device_worker_connect_with("ws://127.0.0.1:9/v1/device-worker/channel", "token",
                                              never_called, NULL, NULL, "{\"connectTimeoutMs\":0}",
                                              &worker, &err);
  expect_invalid(status, err, "connect_timeout");
  EXPECT(worker == NULL);

  /* A call that is not UTF-8 (as gw.evaluate(b'{"agentId": "\xff"}') from Python). */
  err = NULL;
  status = jevgate_evaluate(gw, "{\"agentId\": \"\xff\"}", &json, &err);
  expect_invalid(status, err, "call_json");

  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("argument");
}

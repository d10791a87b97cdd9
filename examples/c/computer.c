/*
 * jevgate from C (issue 25): pair a Linux computer helper (jevgate-computer) as a device of
 * capability `computer`, see it in the inventory, and drive it through a computer handle while
 * no helper is connected: observe, act, an operation's receipt and an access request all answer
 * DEVICE_OFFLINE (the action is never sent, so never executed); a bad command is refused before
 * anything is sent; a browser is no computer; another owner's computer does not exist; a task
 * on the computer is COMPUTER_NOT_ALLOWED while Computer Use is off (Jev off here). With
 * Computer Use on, a helper served by a C function grants access and a task session on the
 * computer shows "computerConnection":"connected" in its status JSON (issue 25 item 4).
 * Prints neither the token nor an observation (secrets, screen text).
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the last call failed with `code`; frees and clears the error. */
static int failed_with(jevgate_status status, jevgate_error **err, const char *code) {
  int ok = status != JEVGATE_OK && *err != NULL && strcmp(jevgate_error_code(*err), code) == 0;
  jevgate_error_free(*err);
  *err = NULL;
  return ok;
}

/* Copies the device id out of a pairing's JSON ({"device":{"id":"…",…},"token":"…"}). */
static int device_id(const char *pairing, char *out, size_t cap) {
  const char *at = strstr(pairing, "\"id\":\"");
  if (at == NULL) return 0;
  at += 6;
  const char *end = strchr(at, '"');
  if (end == NULL || (size_t)(end - at) >= cap) return 0;
  memcpy(out, at, (size_t)(end - at));
  out[end - at] = '\0';
  return 1;
}

/* A computer helper served by the host's C function: it grants access (the connection check
   and the open's request alike) and refuses everything else as the helper does without consent.
   Returns a malloc'd string that jevgate hands back to free_result. */
static char *grant_access(void *user_data, const char *tool, const char *args_json) {
  (void)args_json;
  int *calls = user_data;
  (*calls)++;
  const char *answer = strcmp(tool, "computer_access") == 0
                           ? "{\"success\":true,\"result\":{\"state\":\"granted\"}}"
                           : "{\"success\":false,\"errorCode\":\"execution_failed\","
                             "\"message\":\"CONSENT_REQUIRED: not in this example\"}";
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

/* Computer Use on (Jev's local provider): a task session on a paired computer whose helper
   grants access opens connected, and its status JSON says so (issue 25 item 4). */
static void connection_status(const char *data_dir) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s-computer-tasks", data_dir);
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  EXPECT(jevgate_gateway_open(dir, "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\"}}}",
                              &gw, &err) == JEVGATE_OK);
  if (gw == NULL) return;
  char *json = NULL;
  char token[256] = "", device[128] = "";
  EXPECT(jevgate_pair_computer(gw, "person", "{\"installationId\":\"desk-2\",\"name\":\"Desk\"}", &json,
                               &err) == JEVGATE_OK);
  EXPECT(field(json, "token", token, sizeof token) && field(json, "id", device, sizeof device));
  jevgate_string_free(json);
  json = NULL;
  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel(gw, "127.0.0.1:0", &channel, &err) == JEVGATE_OK);
  char url[128];
  snprintf(url, sizeof url, "ws://127.0.0.1:%u/v1/device-worker/channel", (unsigned)jevgate_channel_port(channel));
  int calls = 0;
  jevgate_device_worker *helper = NULL;
  EXPECT(jevgate_device_worker_connect_with(url, token, grant_access, free_result, &calls, NULL, &helper, &err) ==
         JEVGATE_OK);

  const char *owner = "{\"agentId\":\"assistant\",\"principalId\":\"person\",\"conversationId\":\"conv-1\"}";
  char request[256];
  snprintf(request, sizeof request,
           "{\"goal\":\"\",\"keepOpen\":true,\"target\":{\"kind\":\"computer\",\"deviceId\":\"%s\"}}", device);
  char *task_id = NULL;
  EXPECT(jevgate_task_spawn(gw, owner, request, NULL, NULL, &task_id, &err) == JEVGATE_OK);
  if (task_id != NULL) {
    EXPECT(jevgate_task_wait(gw, owner, task_id, 30000, &json, &err) == JEVGATE_OK);
    EXPECT(json != NULL && strstr(json, "\"state\":\"waiting_input\"") != NULL);
    EXPECT(json != NULL && strstr(json, "\"computerConnection\":\"connected\"") != NULL);
    jevgate_string_free(json);
    json = NULL;
    EXPECT(calls >= 1); /* the open asked the helper for access */
    EXPECT(jevgate_task_cancel(gw, owner, task_id, &json, &err) == JEVGATE_OK);
    jevgate_string_free(json);
    json = NULL;
    jevgate_string_free(task_id);
  }
  jevgate_error_free(err);
  jevgate_device_worker_close(helper);
  jevgate_channel_free(channel);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;

  char *json = NULL;
  char computer_id[128] = "";
  char browser_id[128] = "";
  EXPECT(jevgate_pair_computer(gw, "person", "{\"installationId\":\"desk-1\",\"name\":\"Work desktop\"}",
                               &json, &err) == JEVGATE_OK);
  EXPECT(json != NULL && strstr(json, "\"token\":\"") != NULL);
  EXPECT(json != NULL && device_id(json, computer_id, sizeof computer_id));
  jevgate_string_free(json);
  json = NULL;
  EXPECT(jevgate_pair(gw, "person",
                      "{\"installationId\":\"chrome-1\",\"name\":\"Chrome\","
                      "\"browser\":{\"name\":\"Chrome\",\"version\":\"130\"}}",
                      &json, &err) == JEVGATE_OK);
  EXPECT(json != NULL && device_id(json, browser_id, sizeof browser_id));
  jevgate_string_free(json);
  json = NULL;
  /* A pairing request that is not one: refused, nothing written. */
  EXPECT(failed_with(jevgate_pair_computer(gw, "person", "{\"name\":1}", &json, &err), &err,
                     JEVGATE_CODE_INVALID_ARGUMENT));
  EXPECT(json == NULL);

  EXPECT(jevgate_devices(gw, "person", &json, &err) == JEVGATE_OK);
  EXPECT(json != NULL && strstr(json, "\"label\":\"computer\"") != NULL && strstr(json, "token") == NULL);
  jevgate_string_free(json);
  json = NULL;

  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel(gw, "127.0.0.1:0", &channel, &err) == JEVGATE_OK);

  jevgate_computer *pc = NULL;
  EXPECT(jevgate_computer_target(gw, "person", "conv-1", computer_id, &pc, &err) == JEVGATE_OK);
  EXPECT(pc != NULL);
  /* No helper connected: every call answers DEVICE_OFFLINE, nothing is executed. */
  EXPECT(failed_with(jevgate_computer_observe(pc, &json, &err), &err, JEVGATE_CODE_DEVICE_OFFLINE));
  EXPECT(failed_with(jevgate_computer_act(pc, "{\"operation_id\":\"op-1\",\"kind\":\"press\",\"ref\":\"c1\"}",
                                          &json, &err),
                     &err, JEVGATE_CODE_DEVICE_OFFLINE));
  EXPECT(failed_with(jevgate_computer_operation_status(pc, "op-1", &json, &err), &err,
                     JEVGATE_CODE_DEVICE_OFFLINE));
  EXPECT(failed_with(jevgate_computer_request_access(pc, &json, &err), &err, JEVGATE_CODE_DEVICE_OFFLINE));
  /* Refused before anything is sent: an unknown kind, a missing ref, a bad operation id. */
  EXPECT(failed_with(jevgate_computer_act(pc, "{\"operation_id\":\"op-2\",\"kind\":\"drag\"}", &json, &err),
                     &err, JEVGATE_CODE_INVALID_ARGUMENT));
  EXPECT(failed_with(jevgate_computer_act(pc, "{\"operation_id\":\"op-2\",\"kind\":\"press\"}", &json, &err),
                     &err, JEVGATE_CODE_INVALID_ARGUMENT));
  EXPECT(failed_with(jevgate_computer_act(pc, "not json", &json, &err), &err, JEVGATE_CODE_INVALID_ARGUMENT));
  EXPECT(failed_with(jevgate_computer_operation_status(pc, "op 1", &json, &err), &err,
                     JEVGATE_CODE_INVALID_ARGUMENT));
  /* NULLs are refused, never undefined behaviour. */
  EXPECT(jevgate_computer_observe(NULL, &json, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_computer_observe(pc, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(json == NULL); /* outputs are written only on success */
  /* A cancelled handle's access request ends at once, whatever the helper. */
  jevgate_computer_cancel_access(pc);
  jevgate_computer_cancel_access(NULL);
  jevgate_computer_free(pc);
  pc = NULL;

  /* A browser is no computer; another owner's computer does not exist for them. */
  EXPECT(jevgate_computer_target(gw, "person", "conv-1", browser_id, &pc, &err) == JEVGATE_OK);
  EXPECT(failed_with(jevgate_computer_observe(pc, &json, &err), &err,
                     JEVGATE_CODE_DEVICE_CAPABILITY_MISMATCH));
  jevgate_computer_free(pc);
  pc = NULL;
  EXPECT(jevgate_computer_target(gw, "mallory", "conv-9", computer_id, &pc, &err) == JEVGATE_OK);
  EXPECT(failed_with(jevgate_computer_observe(pc, &json, &err), &err, JEVGATE_CODE_DEVICE_NOT_PAIRED));
  jevgate_computer_free(pc);
  jevgate_computer_free(NULL);

  /* A task on the computer (target {"kind":"computer","deviceId"}): this gateway has Jev off,
   * so Computer Use is not enabled for the agent — refused before anything is stored. */
  char request[256];
  snprintf(request, sizeof request, "{\"goal\":\"5\",\"target\":{\"kind\":\"computer\",\"deviceId\":\"%s\"}}",
           computer_id);
  char *task_id = NULL;
  EXPECT(failed_with(jevgate_task_spawn(gw, "{\"agentId\":\"assistant\",\"principalId\":\"person\","
                                            "\"conversationId\":\"conv-1\"}",
                                        request, NULL, NULL, &task_id, &err),
                     &err, JEVGATE_CODE_COMPUTER_NOT_ALLOWED));
  EXPECT(task_id == NULL);

  jevgate_channel_free(channel);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  connection_status(argv[1]);
  return expect_report("computer");
}

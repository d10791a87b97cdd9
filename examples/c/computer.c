/*
 * jevgate from C (issue 25): pair a Linux computer helper (jevgate-computer) as a device of
 * capability `computer`, see it in the inventory, and drive it through a computer handle while
 * no helper is connected: observe, act, an operation's receipt and an access request all answer
 * DEVICE_OFFLINE (the action is never sent, so never executed); a bad command is refused before
 * anything is sent; a browser is no computer; another owner's computer does not exist; a task
 * on the computer is COMPUTER_NOT_ALLOWED while Computer Use is off (Jev off here).
 * Prints neither the token nor an observation (secrets, screen text).
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
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
  return expect_report("computer");
}

/*
 * jevgate from C: pair a browser device, list it, serve the device-worker channel, see a
 * tool call answered without touching the browser while no worker is connected, and delete or
 * purge a conversation's screenshot artifacts.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;

  char *json = NULL;
  EXPECT(jevgate_pair(gw, "person",
                      "{\"installationId\":\"i1\",\"name\":\"Work Chrome\","
                      "\"browser\":{\"name\":\"Chrome\",\"version\":\"130\"}}",
                      &json, &err) == JEVGATE_OK);
  EXPECT(json != NULL && strstr(json, "\"token\":\"") != NULL);
  jevgate_string_free(json);

  EXPECT(jevgate_devices(gw, "person", &json, &err) == JEVGATE_OK);
  EXPECT(strstr(json, "\"label\":\"browser\"") != NULL && strstr(json, "token") == NULL);
  printf("devices: %s\n", json);
  jevgate_string_free(json);

  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel(gw, "127.0.0.1:0", &channel, &err) == JEVGATE_OK);
  EXPECT(jevgate_channel_port(channel) > 0);
  printf("channel on port %u\n", (unsigned)jevgate_channel_port(channel));

  /* No worker connected: answered without touching the browser. */
  EXPECT(jevgate_call_tool(gw,
                           "{\"owner\":\"person\",\"rootSession\":\"conv\","
                           "\"tool\":\"browser_get_text\",\"args\":{}}",
                           &json, &err) == JEVGATE_OK);
  EXPECT(strstr(json, "\"errorCode\":\"DEVICE_OFFLINE\"") != NULL);
  printf("call: %s\n", json);
  jevgate_string_free(json);

  /* Screenshot artifacts (R-DEV-SHOT): a host deletes a conversation's when it ends; expired
   * ones are purged by the gateway about once a minute, or now on request. */
  uint64_t count = 99;
  EXPECT(jevgate_gateway_delete_artifacts(gw, "conv", &count, &err) == JEVGATE_OK);
  EXPECT(count == 0);
  count = 99;
  EXPECT(jevgate_gateway_purge_artifacts(gw, &count, &err) == JEVGATE_OK);
  EXPECT(count == 0);
  err = NULL;
  EXPECT(jevgate_gateway_purge_artifacts(gw, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), "INVALID_ARGUMENT") == 0);
  jevgate_error_free(err);
  err = NULL;
  count = 99;
  EXPECT(jevgate_gateway_delete_artifacts(gw, NULL, &count, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(count == 99); /* outputs are written only on success */
  jevgate_error_free(err);
  err = NULL;

  EXPECT(jevgate_tool_definitions("mcp", &json, &err) == JEVGATE_OK);
  EXPECT(strstr(json, "browser_batch") != NULL);
  jevgate_string_free(json);
  err = NULL;
  EXPECT(jevgate_tool_definitions("yaml", &json, &err) == JEVGATE_INVALID_ARGUMENT);
  /* R-ERR-3: the code and words Python's jevgate.tool_definitions("yaml") raises too
   * (bindings/python/tests/test_codes.py). */
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), JEVGATE_CODE_INVALID_ARGUMENT) == 0);
  EXPECT(err != NULL &&
         strcmp(jevgate_error_message(err), "invalid argument `format`: must be \"mcp\" or \"openai\"") == 0);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_call_tool(gw, "{\"owner\":1}", &json, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);

  jevgate_channel_free(channel);
  jevgate_channel_free(NULL);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("device");
}

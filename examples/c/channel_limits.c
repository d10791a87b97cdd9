/*
 * jevgate from C: the device channel's limits as settings (issue 24). A gateway serves the
 * channel with jevgate_serve_channel_with — at most 2 devices, one I/O thread — and workers
 * whose commands a C function serves connect over the real loopback WebSocket: the third is
 * refused with 1013 CONNECTION_LIMIT (and never sees its token echoed), the two keep working,
 * and once one leaves the third gets in. Bad options are INVALID_ARGUMENT naming the field.
 * Exits non-zero on the first broken expectation (the test suite runs it with a data dir).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *serve(void *user_data, const char *tool, const char *args_json) {
  (void)user_data;
  (void)tool;
  (void)args_json;
  const char *answer = "{\"success\":true,\"result\":{\"text\":\"served by C\"}}";
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

/* Pairs device `n` for "person": its token and id. */
static void pair(jevgate_gateway *gw, int n, char *token, size_t tsize, char *id, size_t isize) {
  char request[256];
  snprintf(request, sizeof request,
           "{\"installationId\":\"c-limit-%d\",\"name\":\"C %d\",\"browser\":{\"name\":\"Bridge\",\"version\":\"1\"}}", n,
           n);
  char *pairing = NULL;
  jevgate_error *err = NULL;
  EXPECT(jevgate_pair(gw, "person", request, &pairing, &err) == JEVGATE_OK);
  EXPECT(field(pairing, "token", token, tsize));
  EXPECT(field(pairing, "id", id, isize));
  jevgate_string_free(pairing);
}

/* A get_text call on device `id`: 1 when it succeeded. */
static int works(jevgate_gateway *gw, const char *id) {
  char request[256];
  snprintf(request, sizeof request,
           "{\"owner\":\"person\",\"rootSession\":\"conv\",\"tool\":\"browser_get_text\",\"args\":{},\"deviceId\":\"%s\"}",
           id);
  char *out = NULL;
  jevgate_error *err = NULL;
  if (jevgate_call_tool(gw, request, &out, &err) != JEVGATE_OK) {
    jevgate_error_free(err);
    return 0;
  }
  int ok = strstr(out, "served by C") != NULL;
  jevgate_string_free(out);
  return ok;
}

static void expect_invalid(jevgate_gateway *gw, const char *options, const char *name) {
  jevgate_channel *channel = NULL;
  jevgate_error *err = NULL;
  EXPECT(jevgate_serve_channel_with(gw, options, &channel, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(channel == NULL);
  EXPECT(err != NULL && strstr(jevgate_error_message(err), name) != NULL);
  jevgate_error_free(err);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;

  expect_invalid(gw, "{\"maxConnections\":0}", "max_connections");
  expect_invalid(gw, "{\"maxConections\":5}", "options_json");
  expect_invalid(gw, "not json", "options_json");
  expect_invalid(gw, "{\"maxUnauthenticatedPerAddress\":-1}", "options_json");
  expect_invalid(gw, "{\"ioThreads\":1000}", "io_threads");
  expect_invalid(gw, "{\"maxConnections\":100000000}", "max_connections");

  /* NULL options: the defaults on a free loopback port. */
  jevgate_channel *defaults = NULL;
  EXPECT(jevgate_serve_channel_with(gw, NULL, &defaults, &err) == JEVGATE_OK);
  EXPECT(jevgate_channel_port(defaults) > 0);
  jevgate_channel_free(defaults);

  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel_with(gw, "{\"addr\":\"127.0.0.1:0\",\"maxConnections\":2,\"ioThreads\":1}", &channel,
                                    &err) == JEVGATE_OK);
  char url[128];
  snprintf(url, sizeof url, "ws://127.0.0.1:%u/v1/device-worker/channel", (unsigned)jevgate_channel_port(channel));

  char token[3][256], id[3][128];
  for (int i = 0; i < 3; i++) pair(gw, i, token[i], sizeof token[i], id[i], sizeof id[i]);

  jevgate_device_worker *workers[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 2; i++)
    EXPECT(jevgate_device_worker_connect_with(url, token[i], serve, free_result, NULL, NULL, &workers[i], &err) ==
           JEVGATE_OK);
  /* The third: refused after authenticating, with the reason and never the token. */
  EXPECT(jevgate_device_worker_connect_with(url, token[2], serve, free_result, NULL, NULL, &workers[2], &err) ==
         JEVGATE_ERROR);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), "DEVICE_CHANNEL_IO") == 0);
  EXPECT(err != NULL && strstr(jevgate_error_message(err), "CONNECTION_LIMIT") != NULL);
  EXPECT(err != NULL && strstr(jevgate_error_message(err), token[2]) == NULL);
  if (err) printf("third device: %s\n", jevgate_error_message(err));
  jevgate_error_free(err);
  err = NULL;
  EXPECT(works(gw, id[0]) && works(gw, id[1]));
  EXPECT(!works(gw, id[2]));

  /* One leaves; the third gets in once the gateway has let its socket go. */
  jevgate_device_worker_close(workers[0]);
  workers[0] = NULL;
  int connected = 0;
  for (int attempt = 0; attempt < 200 && !connected; attempt++) {
    if (jevgate_device_worker_connect_with(url, token[2], serve, free_result, NULL, NULL, &workers[2], &err) ==
        JEVGATE_OK) {
      connected = 1;
    } else {
      EXPECT(strstr(jevgate_error_message(err), "CONNECTION_LIMIT") != NULL);
      jevgate_error_free(err);
      err = NULL;
    }
  }
  EXPECT(connected);
  EXPECT(works(gw, id[2]) && works(gw, id[1]));
  printf("the third device got in after one left\n");

  for (int i = 0; i < 3; i++) jevgate_device_worker_close(workers[i]);
  jevgate_channel_free(channel);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("channel_limits");
}

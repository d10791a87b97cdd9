/*
 * jevgate from C: mint a one-time pairing code, serve the device channel, and pair a browser
 * the way the extension does — POST /devices/pair on the channel's own host:port over a real
 * loopback socket — then see the device in the inventory, the code refused a second time, and
 * a ttl over 10 minutes refused. Prints neither the code nor the token (secrets).
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#define _POSIX_C_SOURCE 200809L
#include "jevgate.h"
#include "expect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Posts `body` to /devices/pair on 127.0.0.1:`port`; writes the answer (NUL-terminated, cut
 * to `cap`) and returns the HTTP status, or -1. */
static int post_pair(uint16_t port, const char *body, char *answer, size_t cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  char request[2048];
  int n = snprintf(request, sizeof request,
                   "POST /devices/pair HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Origin: chrome-extension://abcdefghijklmnopabcdefghijklmnop\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                   strlen(body), body);
  if (n <= 0 || (size_t)n >= sizeof request || write(fd, request, (size_t)n) != n) {
    close(fd);
    return -1;
  }
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fd, answer + got, cap - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    if (got == cap - 1) break;
  }
  answer[got] = '\0';
  close(fd);
  int status = -1;
  if (sscanf(answer, "HTTP/1.1 %d", &status) != 1) return -1;
  return status;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;

  char *json = NULL;
  EXPECT(jevgate_pairing_code(gw, "person", 5 * 60 * 1000, &json, &err) == JEVGATE_OK);
  /* {"code":"ABCD-EFGH","expiresAt":…} */
  char code[16] = {0};
  const char *at = json ? strstr(json, "\"code\":\"") : NULL;
  EXPECT(at != NULL && strstr(json, "\"expiresAt\":") != NULL);
  if (at) {
    memcpy(code, at + 8, 9);
  }
  EXPECT(strlen(code) == 9 && code[4] == '-');
  jevgate_string_free(json);

  jevgate_channel *channel = NULL;
  EXPECT(jevgate_serve_channel(gw, "127.0.0.1:0", &channel, &err) == JEVGATE_OK);
  uint16_t port = channel ? jevgate_channel_port(channel) : 0;
  EXPECT(port > 0);

  char body[512];
  snprintf(body, sizeof body,
           "{\"installationId\":\"ext-1\",\"name\":\"Work Chrome\","
           "\"browser\":{\"name\":\"Chrome\",\"version\":\"131\"},\"pairingCode\":\"%s\"}",
           code);
  char answer[4096];
  EXPECT(post_pair(port, body, answer, sizeof answer) == 200);
  EXPECT(strstr(answer, "\"token\":\"jgd_") != NULL && strstr(answer, "\"deviceId\":\"dev_") != NULL);
  EXPECT(strstr(answer, "Access-Control-Allow-Origin: chrome-extension://") != NULL);
  printf("paired through POST /devices/pair\n");

  EXPECT(jevgate_devices(gw, "person", &json, &err) == JEVGATE_OK);
  EXPECT(json != NULL && strstr(json, "\"label\":\"browser\"") != NULL && strstr(json, "token") == NULL);
  jevgate_string_free(json);

  /* Used: the one answer for wrong, used and expired codes. */
  EXPECT(post_pair(port, body, answer, sizeof answer) == 401);
  EXPECT(strstr(answer, "\"errorCode\":\"PAIRING_CODE_INVALID\"") != NULL);
  EXPECT(strstr(answer, code) == NULL);

  /* A ttl over 10 minutes, or none, is refused; outputs are written only on success. */
  json = NULL;
  EXPECT(jevgate_pairing_code(gw, "person", 600001, &json, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(err != NULL && strcmp(jevgate_error_code(err), "INVALID_ARGUMENT") == 0);
  EXPECT(json == NULL);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_pairing_code(gw, "person", 0, &json, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_pairing_code(gw, NULL, 1000, &json, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_pairing_code(gw, "person", 1000, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;

  jevgate_channel_free(channel);
  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("pairing");
}

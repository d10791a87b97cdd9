/*
 * jevgate from C: the shared PostgreSQL store (issue 23), `gateway.store` in the configuration.
 *
 * Two gateways on one PostgreSQL database (as two processes of a fleet would open it) share the
 * device control lease: the second is turned away while the first holds it, takes it back as
 * the owner, and the first is told once; every grant carries a fencing token that only grows.
 * Bad `gateway.store` configurations are refused with their JSON path.
 *
 *   JEVGATE_PG_URL=postgresql://user@127.0.0.1:5432/postgres ./fleet /tmp/jevgate-data
 *
 * Without JEVGATE_PG_URL, or with a libjevgate built without the cargo feature `postgres`, the
 * shared-store part prints why it is skipped — and fails under JEVGATE_REQUIRE_PG=1 (the test
 * command starts a throw-away cluster and sets both). Exits non-zero on the first broken
 * expectation. The URL is read by the library from the variable named in the configuration;
 * this program never prints it.
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *PG_CONFIG =
    "{\"gateway\":{\"store\":{\"kind\":\"postgres\",\"urlEnv\":\"JEVGATE_PG_URL\"}}}";

static int str_eq(const char *a, const char *b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* A configuration refused at `path`. */
static void expect_refused(const char *config, const char *path) {
  jevgate_error *err = NULL;
  EXPECT(jevgate_config_validate(config, &err) == JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_code(err), "JEV_INVALID_CONFIGURATION"));
  EXPECT(str_eq(jevgate_error_path(err), path));
  jevgate_error_free(err);
}

static void bad_configurations(void) {
  EXPECT(jevgate_config_validate(PG_CONFIG, NULL) == JEVGATE_OK);
  EXPECT(jevgate_config_validate("{\"gateway\":{\"store\":{\"kind\":\"sqlite\"}}}", NULL) ==
         JEVGATE_OK);
  expect_refused("{\"gateway\":{\"store\":{\"kind\":\"postgres\"}}}", "gateway.store");
  expect_refused("{\"gateway\":{\"store\":{\"kind\":\"postgres\",\"urlEnv\":\"A_URL\","
                 "\"urlFile\":\"/run/pg-url\"}}}",
                 "gateway.store.urlFile");
  expect_refused("{\"gateway\":{\"store\":{\"kind\":\"postgres\",\"urlFile\":\"pg-url\"}}}",
                 "gateway.store.urlFile");
  expect_refused("{\"gateway\":{\"store\":{\"kind\":\"sqlite\",\"urlEnv\":\"A_URL\"}}}",
                 "gateway.store.urlEnv");
  expect_refused("{\"gateway\":{\"store\":{\"kind\":\"mysql\"}}}", "gateway.store.kind");
  /* A URL written into the configuration is an unknown key, never accepted (nor echoed). */
  jevgate_error *err = NULL;
  EXPECT(jevgate_config_validate("{\"gateway\":{\"store\":{\"kind\":\"postgres\","
                                 "\"url\":\"postgresql://u:hunter2@h/db\"}}}",
                                 &err) == JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_path(err), "gateway.store.url"));
  EXPECT(strstr(jevgate_error_message(err), "hunter2") == NULL);
  jevgate_error_free(err);
}

/* The fencing token of a grant's JSON ("fencingToken":N), or -1. */
static long long token_of(const char *json) {
  const char *at = json ? strstr(json, "\"fencingToken\":") : NULL;
  return at ? atoll(at + strlen("\"fencingToken\":")) : -1;
}

static int skip(const char *why) {
  const char *require = getenv("JEVGATE_REQUIRE_PG");
  if (require != NULL && strcmp(require, "1") == 0) {
    fprintf(stderr, "JEVGATE_REQUIRE_PG=1 but %s\n", why);
    return 1;
  }
  printf("skipped the shared store: %s\n", why);
  return 0;
}

static void shared_lease(jevgate_gateway *a, jevgate_gateway *b) {
  jevgate_error *err = NULL;
  char device[64];
  snprintf(device, sizeof device, "c-fleet-%ld", (long)getpid());
  EXPECT(jevgate_lease_set_device_owner(a, device, "person", &err) == JEVGATE_OK);

  char *grant = NULL;
  EXPECT(jevgate_lease_acquire(a, device, "conv-a", &grant, &err) == JEVGATE_OK);
  long long first = token_of(grant);
  EXPECT(first >= 1);
  EXPECT(strstr(grant, "\"acquired\":true") != NULL);
  jevgate_string_free(grant);

  /* The other gateway is turned away, then takes the device back as the owner. */
  EXPECT(jevgate_lease_acquire(b, device, "conv-b", &grant, &err) == JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_code(err), "DEVICE_CONTROL_ELSEWHERE"));
  jevgate_error_free(err);
  err = NULL;
  bool took = false;
  EXPECT(jevgate_lease_take_back(b, device, "person", false, &took, &err) == JEVGATE_OK);
  EXPECT(took);

  /* The first conversation is told once, then acquires a later tenure. */
  EXPECT(jevgate_lease_acquire(a, device, "conv-a", &grant, &err) == JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_code(err), "DEVICE_CONTROL_REVOKED"));
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_lease_acquire(a, device, "conv-a", &grant, &err) == JEVGATE_OK);
  EXPECT(token_of(grant) > first);
  jevgate_string_free(grant);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  bad_configurations();

  const char *url = getenv("JEVGATE_PG_URL");
  if (url == NULL || url[0] == '\0') {
    return skip("JEVGATE_PG_URL is not set") || expect_report("fleet");
  }
  char dir_a[4096], dir_b[4096];
  snprintf(dir_a, sizeof dir_a, "%s/a", argv[1]);
  snprintf(dir_b, sizeof dir_b, "%s/b", argv[1]);
  jevgate_gateway *a = NULL, *b = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(dir_a, PG_CONFIG, &a, &err) != JEVGATE_OK) {
    int without = str_eq(jevgate_error_path(err), "gateway.store.kind");
    fprintf(stderr, "open: %s\n", jevgate_error_code(err));
    jevgate_error_free(err);
    if (without) {
      return skip("libjevgate was built without the cargo feature `postgres`") ||
             expect_report("fleet");
    }
    return 1;
  }
  EXPECT(jevgate_gateway_open(dir_b, PG_CONFIG, &b, &err) == JEVGATE_OK);
  if (b != NULL) {
    shared_lease(a, b);
    jevgate_gateway_close(b);
    jevgate_gateway_free(b);
  }
  jevgate_gateway_close(a);
  jevgate_gateway_free(a);
  return expect_report("fleet");
}

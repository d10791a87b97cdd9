/*
 * jevgate from C: validate configurations, open a gateway on a data directory, reload it,
 * run the local doctor, and close it. Also shows that bad arguments are errors, not crashes.
 *
 *   cc -Wall -Wextra -Werror -Iinclude examples/c/config_and_gateway.c \
 *      target/debug/libjevgate.a -lpthread -ldl -lm -o config_and_gateway
 *   ./config_and_gateway /tmp/jevgate-data
 *
 * The test suite (scripts/test) compiles and runs this program; it exits non-zero on the first
 * expectation that does not hold.
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int str_eq(const char *a, const char *b) {
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const char *LOCAL_CONFIG =
    "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\","
    "\"allowedAgentIds\":[\"assistant\"]}}}";

static void validate_configs(void) {
  jevgate_error *err = NULL;

  EXPECT(jevgate_config_validate(LOCAL_CONFIG, &err) == JEVGATE_OK);
  EXPECT(err == NULL);

  /* A native CLI credential name is refused as apiKeyEnv, with the JSON path. */
  const char *bad =
      "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"typesafe\","
      "\"model\":\"jev-1.13.0\",\"apiKeyEnv\":\"OPENAI_API_KEY\"}}}";
  EXPECT(jevgate_config_validate(bad, &err) == JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_code(err), "JEV_INVALID_CONFIGURATION"));
  EXPECT(str_eq(jevgate_error_path(err), "gateway.jev.apiKeyEnv"));
  EXPECT(jevgate_error_http_status(err) == 400);
  EXPECT(jevgate_error_retry_after_ms(err) == -1);
  printf("rejected: %s\n", jevgate_error_message(err));
  jevgate_error_free(err);
  err = NULL;

  /* Unknown keys are rejected at every level. */
  EXPECT(jevgate_config_validate("{\"gateway\":{\"jev\":{\"experience\":{}}}}", &err) ==
         JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_path(err), "gateway.jev.experience"));
  jevgate_error_free(err);
  err = NULL;

  /* NULL and invalid UTF-8 are argument errors, never undefined behaviour. */
  EXPECT(jevgate_config_validate(NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(str_eq(jevgate_error_code(err), "INVALID_ARGUMENT"));
  EXPECT(jevgate_error_path(err) == NULL);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_config_validate("{\"gateway\":\xff}", &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;

  /* err_out may be NULL when the caller only wants the status. */
  EXPECT(jevgate_config_validate("not json", NULL) == JEVGATE_ERROR);

  /* Accessors and frees accept NULL. */
  EXPECT(jevgate_error_code(NULL) == NULL);
  EXPECT(jevgate_error_http_status(NULL) == 0);
  jevgate_error_free(NULL);
  jevgate_string_free(NULL);
  jevgate_gateway_close(NULL);
  jevgate_gateway_free(NULL);
}

static void gateway_lifecycle(const char *data_dir) {
  jevgate_error *err = NULL;
  jevgate_gateway *gw = NULL;

  EXPECT(jevgate_gateway_open(data_dir, LOCAL_CONFIG, &gw, &err) == JEVGATE_OK);
  if (gw == NULL) {
    fprintf(stderr, "open failed: %s\n", jevgate_error_message(err));
    jevgate_error_free(err);
    failures++;
    return;
  }
  EXPECT(jevgate_gateway_generation(gw) == 1);

  /* One live gateway per data directory. */
  jevgate_gateway *second = NULL;
  EXPECT(jevgate_gateway_open(data_dir, "{}", &second, &err) == JEVGATE_ERROR);
  EXPECT(second == NULL);
  EXPECT(str_eq(jevgate_error_code(err), "STORE_LOCKED"));
  EXPECT(jevgate_error_http_status(err) == 409);
  jevgate_error_free(err);
  err = NULL;

  /* Reload: a valid config bumps the generation; an invalid one changes nothing. */
  uint64_t generation = 0;
  EXPECT(jevgate_gateway_reload(gw, "{}", &generation, &err) == JEVGATE_OK);
  EXPECT(generation == 2);
  EXPECT(jevgate_gateway_reload(gw, "{\"gateway\":{\"jev\":{\"maxQuestions\":0}}}", &generation,
                                &err) == JEVGATE_ERROR);
  EXPECT(str_eq(jevgate_error_path(err), "gateway.jev.maxQuestions"));
  EXPECT(generation == 2);
  EXPECT(jevgate_gateway_generation(gw) == 2);
  jevgate_error_free(err);
  err = NULL;

  /* Doctor: local checks only, a JSON report. */
  char *report = NULL;
  EXPECT(jevgate_gateway_doctor(gw, &report, &err) == JEVGATE_OK);
  EXPECT(report != NULL && strstr(report, "\"ok\":true") != NULL);
  printf("doctor: %s\n", report ? report : "(null)");
  jevgate_string_free(report);

  EXPECT(jevgate_gateway_reload(gw,
                                "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"typesafe\","
                                "\"model\":\"m\",\"apiKeyEnv\":\"PRIVATE_JEV_TOKEN\"}}}",
                                NULL, &err) == JEVGATE_OK);
  char *names = NULL;
  EXPECT(jevgate_gateway_secret_env_names(gw, &names, &err) == JEVGATE_OK);
  EXPECT(str_eq(names, "[\"PRIVATE_JEV_TOKEN\"]"));
  jevgate_string_free(names);

  /* A NULL out-pointer is an argument error and writes nothing. */
  EXPECT(jevgate_gateway_doctor(gw, NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_gateway_reload(NULL, "{}", NULL, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;

  jevgate_gateway_close(gw);

  /* A closed handle stays valid until it is freed: closing again does nothing, and calls on it
   * fail with GATEWAY_CLOSED. */
  jevgate_gateway_close(gw);
  char *closed_report = NULL;
  EXPECT(jevgate_gateway_doctor(gw, &closed_report, &err) == JEVGATE_ERROR);
  EXPECT(closed_report == NULL);
  EXPECT(err && str_eq(jevgate_error_code(err), "GATEWAY_CLOSED"));
  jevgate_error_free(err);
  err = NULL;
  jevgate_gateway *closed = gw;

  /* Closing released the directory: it opens again. */
  EXPECT(jevgate_gateway_open(data_dir, "{}", &gw, &err) == JEVGATE_OK);
  jevgate_gateway_free(closed);
  /* Freeing without closing closes too. */
  jevgate_gateway_free(gw);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  printf("jevgate %s\n", jevgate_version());
  EXPECT(str_eq(jevgate_version(), JEVGATE_VERSION));
  validate_configs();
  gateway_lifecycle(argv[1]);
  return expect_report("gateway");
}

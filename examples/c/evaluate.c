/*
 * jevgate from C: Jev evaluations with a C function as the model (the `callback` provider),
 * its answers checked by the validator; the offline `local` provider; usage records.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct model {
  int calls;
  const char *answer;
};

static char *my_model(void *user_data, const char *request_json) {
  struct model *m = user_data;
  m->calls++;
  if (strstr(request_json, "\"questions\"") == NULL) return NULL;
  char *out = malloc(strlen(m->answer) + 1);
  strcpy(out, m->answer);
  return out;
}

static void my_free(void *user_data, char *response_json) {
  (void)user_data;
  free(response_json);
}

static const char *CALL =
    "{\"agentId\":\"assistant\",\"state\":\"Hello there\",\"questions\":"
    "{\"greeting\":{\"type\":\"noul\",\"instructions\":\"Is this a greeting?\"}}}";

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_gateway *gw = NULL;
  jevgate_error *err = NULL;
  if (jevgate_gateway_open(argv[1], "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"callback\"}}}",
                           &gw, &err) != JEVGATE_OK)
    return 1;

  struct model m = {0, "{\"model\":\"my-model\",\"answers\":{\"greeting\":{\"type\":\"noul\",\"noul\":0.97}},"
                       "\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}"};
  EXPECT(jevgate_gateway_set_jev_callback(gw, my_model, my_free, &m, &err) == JEVGATE_OK);
  char *result = NULL;
  EXPECT(jevgate_evaluate(gw, CALL, &result, &err) == JEVGATE_OK);
  EXPECT(result != NULL && strstr(result, "\"model\":\"my-model\"") != NULL);
  printf("evaluation: %s\n", result ? result : "(null)");
  jevgate_string_free(result);
  EXPECT(m.calls == 1);

  /* A model answer that breaks the rules is refused by the validator. */
  m.answer = "{\"model\":\"m\",\"answers\":{\"greeting\":{\"type\":\"noul\",\"noul\":7}},"
             "\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}";
  err = NULL;
  EXPECT(jevgate_evaluate(gw, CALL, &result, &err) == JEVGATE_ERROR);
  EXPECT(err && strcmp(jevgate_error_code(err), "JEV_MALFORMED_RESPONSE") == 0);
  EXPECT(err && strcmp(jevgate_error_validation_reason(err), "PROBABILITY_RANGE") == 0);
  jevgate_error_free(err);

  /* Usage records: metadata only. */
  char *usage = NULL;
  EXPECT(jevgate_usage(gw, "assistant", 10, 0, &usage, &err) == JEVGATE_OK);
  EXPECT(usage && strstr(usage, "\"total\":2") != NULL && strstr(usage, "Hello there") == NULL);
  jevgate_string_free(usage);

  /* Removing the callback makes the provider fail cleanly; the offline provider works. */
  EXPECT(jevgate_gateway_set_jev_callback(gw, NULL, NULL, NULL, &err) == JEVGATE_OK);
  EXPECT(jevgate_gateway_reload(gw, "{\"gateway\":{\"jev\":{\"enabled\":true,\"provider\":\"local\"}}}", NULL,
                                &err) == JEVGATE_OK);
  EXPECT(jevgate_evaluate(gw, CALL, &result, &err) == JEVGATE_OK);
  jevgate_string_free(result);

  err = NULL;
  EXPECT(jevgate_evaluate(gw, "{\"agentId\":\"assistant\"}", &result, &err) == JEVGATE_ERROR);
  EXPECT(err && strcmp(jevgate_error_code(err), "JEV_INVALID_REQUEST") == 0);
  jevgate_error_free(err);

  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("evaluation");
}

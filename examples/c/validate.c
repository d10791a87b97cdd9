/*
 * jevgate from C: validate a structured model answer against typed questions (R-VAL).
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <string.h>

static const char *QUESTIONS =
    "{\"needs_decision\":{\"type\":\"noul\",\"instructions\":\"Does the user still need to decide?\"},"
    "\"next_step\":{\"type\":\"choice\",\"instructions\":\"Next step?\","
    "\"criteria\":{\"explain\":\"Compare the options.\",\"execute\":\"Execute the choice.\"}},"
    "\"clarity\":{\"type\":\"score\",\"instructions\":\"How clear?\","
    "\"criteria\":[\"Unspecified\",\"Partially specified\",\"Fully specified\"]}}";

static void expect_reason(const char *response, const char *reason) {
  char *answers = NULL;
  jevgate_error *err = NULL;
  jevgate_status st = jevgate_validate_response(QUESTIONS, response, &answers, &err);
  const char *got = jevgate_error_validation_reason(err);
  if (st != JEVGATE_ERROR || got == NULL || strcmp(got, reason) != 0 ||
      strcmp(jevgate_error_code(err), "JEV_MALFORMED_RESPONSE") != 0 || answers != NULL) {
    fprintf(stderr, "expected %s, got %s\n", reason, got ? got : "(none)");
    failures++;
  } else {
    printf("rejected: %s\n", jevgate_error_message(err));
  }
  jevgate_error_free(err);
}

int main(void) {
  /* Rounded to hundredths, the choice sums to 1.01: inside the rounding envelope. */
  const char *ok =
      "{\"model\":\"jev-1.13.0\",\"answers\":{"
      "\"needs_decision\":{\"type\":\"noul\",\"noul\":0.8},"
      "\"next_step\":{\"type\":\"choice\",\"choice\":\"explain\","
      "\"probabilities\":{\"explain\":0.71,\"execute\":0.30},\"confidence\":0.7},"
      "\"clarity\":{\"type\":\"score\",\"score\":1.5,\"levels\":[0.1,0.3,0.6],"
      "\"legend\":[\"Unspecified\",\"Partially specified\",\"Fully specified\"],\"confidence\":0.6}},"
      "\"usage\":{\"input_tokens\":120,\"output_tokens\":8}}";
  char *answers = NULL;
  jevgate_error *err = NULL;
  if (jevgate_validate_response(QUESTIONS, ok, &answers, &err) != JEVGATE_OK) {
    fprintf(stderr, "valid response rejected: %s\n", jevgate_error_message(err));
    jevgate_error_free(err);
    return 1;
  }
  printf("answers: %s\n", answers);
  EXPECT(strstr(answers, "\"explain\":0.71") != NULL); /* numbers come back unchanged */
  jevgate_string_free(answers);

  expect_reason(
      "{\"model\":\"m\",\"answers\":{\"needs_decision\":{\"type\":\"noul\",\"noul\":0.8}},"
      "\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}",
      "MISSING_ANSWER");
  expect_reason(
      "{\"model\":\"m\",\"answers\":{\"needs_decision\":{\"type\":\"noul\",\"noul\":1.2},"
      "\"next_step\":{\"type\":\"choice\",\"choice\":\"explain\",\"probabilities\":{\"explain\":0.5,"
      "\"execute\":0.5},\"confidence\":0.5},\"clarity\":{\"type\":\"score\",\"score\":1,"
      "\"levels\":[0.25,0.5,0.25],\"legend\":[\"a\",\"b\",\"c\"],\"confidence\":0.5}},"
      "\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}",
      "PROBABILITY_RANGE");
  expect_reason("not json", "MALFORMED_JSON");

  /* The JSON Schema a host can use for constrained decoding. */
  char *schema = NULL;
  if (jevgate_answer_schema(QUESTIONS, &schema, &err) != JEVGATE_OK || strstr(schema, "\"next_step\"") == NULL)
    failures++;
  jevgate_string_free(schema);

  /* Invalid questions are a request error; NULL is an argument error. */
  if (jevgate_validate_response("{\"q\":{\"type\":\"score\",\"criteria\":[\"only one\"]}}", ok, &answers,
                                &err) != JEVGATE_ERROR ||
      strcmp(jevgate_error_code(err), "JEV_INVALID_REQUEST") != 0)
    failures++;
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_validate_response(QUESTIONS, NULL, &answers, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);

  return expect_report("validator");
}

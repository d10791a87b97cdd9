/*
 * jevgate from C: the step-command grammar (Thai and English), pure functions with JSON out.
 * Exits non-zero on the first broken expectation (the test suite runs it).
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <string.h>

typedef jevgate_status (*text_fn)(const char *, char **, jevgate_error **);

static void expect_json(text_fn f, const char *input, const char *want) {
  char *out = NULL;
  jevgate_error *err = NULL;
  if (f(input, &out, &err) != JEVGATE_OK) {
    fprintf(stderr, "%s: failed: %s\n", input, jevgate_error_message(err));
    jevgate_error_free(err);
    failures++;
    return;
  }
  if (strcmp(out, want) != 0) {
    fprintf(stderr, "%s: got %s, want %s\n", input, out, want);
    failures++;
  } else {
    printf("%-40s -> %s\n", input, out);
  }
  jevgate_string_free(out);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  /* Fast paths, no model call (R-GRM-PARSE). */
  expect_json(jevgate_parse_command, "scroll ลง", "{\"intent\":\"scroll\",\"direction\":\"down\"}");
  expect_json(jevgate_parse_command, "backspace x3",
              "{\"intent\":\"key\",\"key\":\"Backspace\",\"count\":3}");
  expect_json(jevgate_parse_command, "ย้อนกลับ", "{\"intent\":\"history\",\"direction\":\"back\"}");
  expect_json(jevgate_parse_command, "ค้นหา แมว", "{\"intent\":\"search\",\"text\":\"แมว\"}");
  expect_json(jevgate_parse_command, "ร้อยห้าสิบ", "{\"intent\":\"digits\",\"digits\":\"150\"}");
  expect_json(jevgate_parse_command, "go to example.com",
              "{\"intent\":\"navigate\",\"url\":\"https://example.com\"}");
  /* Ambiguous readings and other languages go to a decision. */
  expect_json(jevgate_parse_command, "ร้อยห้า", "{\"intent\":\"decide\"}");
  expect_json(jevgate_parse_command, "前のページに戻って", "{\"intent\":\"decide\"}");
  /* Step lists (R-GRM-STEPS) and parts (R-GRM-PARTS). */
  expect_json(jevgate_split_steps, "1. go to google 2. search cats",
              "[\"go to google\",\"search cats\"]");
  expect_json(jevgate_split_steps, "if it rains, search umbrellas, then buy one", "null");
  expect_json(jevgate_split_parts, "เปิด Chrome แล้วกด Cmd+T", "[\"เปิด Chrome\",\"กด Cmd+T\"]");
  /* Model-produced addresses: the strict rule (R-GRM-URL). */
  expect_json(jevgate_check_model_address, "example.com", "\"https://example.com\"");
  char *out = NULL;
  jevgate_error *err = NULL;
  if (jevgate_check_model_address("javascript:alert(1)", &out, &err) != JEVGATE_ERROR ||
      strcmp(jevgate_error_code(err), "NAVIGATION_UNRESOLVED") != 0) {
    fprintf(stderr, "javascript: address was not refused\n");
    failures++;
  }
  jevgate_error_free(err);
  err = NULL;
  /* Bad arguments are errors, never crashes. */
  EXPECT(jevgate_parse_command(NULL, &out, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_parse_command("\xff\xfe", &out, &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  EXPECT(jevgate_split_steps("x", NULL, NULL) == JEVGATE_INVALID_ARGUMENT);
  return expect_report("grammar");
}

/*
 * jevgate from C: the managed browser tool family (issue 15). The definitions for a set of
 * caps, then one thread's tools on a local headless Chromium: build a page with
 * browser_evaluate, type and click by selector (css=, role=), a Control+A chord that makes the
 * next typing replace the text, a screenshot stored as the thread's artifact (none when
 * strict; a strict call runs in a session of its own, without the journal tools), console
 * messages since the turn began, and refusals: bad arguments name the field,
 * a tool outside the caps is unknown, the file tools need a workspace and stay inside it.
 * Exits non-zero on the first broken expectation.
 */
#include "jevgate.h"
#include "expect.h"

#include <stdio.h>
#include <string.h>

static jevgate_gateway *gw = NULL;

/* Runs a tool for thread-1; returns the result (free it) or NULL with *code set. */
static char *tool(const char *name, const char *args, const char **code) {
  static char last_code[64];
  char *out = NULL;
  jevgate_error *err = NULL;
  *code = "OK";
  if (jevgate_browser_tool(gw, "thread-1", "acme", name, args, &out, &err) != JEVGATE_OK) {
    snprintf(last_code, sizeof last_code, "%s", jevgate_error_code(err));
    *code = last_code;
    jevgate_error_free(err);
    return NULL;
  }
  return out;
}

static int ok(const char *name, const char *args, const char *needle) {
  const char *code;
  char *out = tool(name, args, &code);
  int good = out != NULL && (needle == NULL || strstr(out, needle) != NULL);
  if (!good) fprintf(stderr, "%s: %s %s\n", name, code, out ? out : "");
  jevgate_string_free(out);
  return good;
}

static int fails_with(const char *name, const char *args, const char *want) {
  const char *code;
  char *out = tool(name, args, &code);
  jevgate_string_free(out);
  return out == NULL && strcmp(code, want) == 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  jevgate_error *err = NULL;
  char *defs = NULL;
  EXPECT(jevgate_managed_tool_definitions("mcp", false, false, false, &defs, &err) == JEVGATE_OK);
  EXPECT(defs && strstr(defs, "\"browser_click\"") && !strstr(defs, "\"browser_tabs\""));
  jevgate_string_free(defs);
  EXPECT(jevgate_managed_tool_definitions("openai", true, false, false, &defs, &err) == JEVGATE_OK);
  EXPECT(defs && strstr(defs, "\"browser_tabs\"") && strstr(defs, "\"function\""));
  jevgate_string_free(defs);
  EXPECT(jevgate_managed_tool_definitions("yaml", false, false, false, &defs, &err) == JEVGATE_INVALID_ARGUMENT);
  EXPECT(strcmp(jevgate_error_code(err), "INVALID_ARGUMENT") == 0);
  jevgate_error_free(err);
  err = NULL;

  if (jevgate_gateway_open(argv[1], "{}", &gw, &err) != JEVGATE_OK) return 1;
  EXPECT(jevgate_gateway_enable_local_browsers(gw, NULL, &err) == JEVGATE_OK);

  EXPECT(ok("browser_navigate", "{\"url\":\"about:blank\"}", "\"sessionMode\":\"isolated\""));
  EXPECT(ok("browser_evaluate",
            "{\"function\":\"() => { document.title = 'Managed'; document.body.innerHTML = "
            "'<input id=q aria-label=Query><button id=go onclick=\\\"window.hits=(window.hits||0)+1\\\">Go</button>'; "
            "return 1; }\"}",
            NULL));
  EXPECT(ok("browser_type", "{\"target\":\"css=#q\",\"text\":\"hello\"}", "untrusted-page-content"));
  EXPECT(ok("browser_click", "{\"target\":\"role=button[name=\\\"Go\\\"]\"}", "title: Managed"));
  EXPECT(ok("browser_evaluate",
            "{\"function\":\"() => document.getElementById('q').value + ':' + window.hits\"}",
            "hello:1"));
  EXPECT(ok("browser_click", "{\"target\":\"css=#q\"}", NULL));
  EXPECT(ok("browser_press_key", "{\"key\":\"Control+A\"}", NULL));
  EXPECT(ok("browser_press_key", "{\"key\":\"x\"}", NULL));
  EXPECT(ok("browser_evaluate", "{\"function\":\"() => document.getElementById('q').value\"}",
            "\\\"x\\\""));

  /* A screenshot: the image and the thread's artifact; strict stores none. */
  EXPECT(ok("browser_take_screenshot", NULL, "\"artifactId\""));
  char *out = NULL;
  EXPECT(jevgate_browser_tool_call(gw,
                                   "{\"threadId\":\"thread-1\",\"organization\":\"acme\","
                                   "\"dataHandling\":\"strict\"}",
                                   "browser_take_screenshot", "{}", &out, &err) == JEVGATE_OK);
  EXPECT(out && strstr(out, "\"image\"") && !strstr(out, "artifactId"));
  jevgate_string_free(out);
  /* Strict data handling is a session of its own (issue 20 item 2): the standard session's page
     is not there, and the journal tools are refused. */
  const char *strict = "{\"threadId\":\"thread-1\",\"organization\":\"acme\",\"dataHandling\":\"strict\"}";
  out = NULL;
  EXPECT(jevgate_browser_tool_call(gw, strict, "browser_evaluate",
                                   "{\"function\":\"() => document.getElementById('q') ? 'standard-page' : 'own-page'\"}",
                                   &out, &err) == JEVGATE_OK);
  EXPECT(out && strstr(out, "own-page") && strstr(out, "\"sessionMode\":\"isolated\""));
  jevgate_string_free(out);
  out = NULL;
  EXPECT(jevgate_browser_tool_call(gw, strict, "browser_console_messages", NULL, &out, &err) == JEVGATE_ERROR);
  EXPECT(out == NULL && err && strcmp(jevgate_error_code(err), "ACCESS_DENIED") == 0);
  jevgate_error_free(err);
  err = NULL;

  /* Refusals. */
  EXPECT(fails_with("browser_click", "{\"target\":\"#q\"}", "INVALID_TOOL_ARGUMENTS"));
  EXPECT(fails_with("browser_click", "{\"target\":\"css=#missing\"}", "TARGET_NOT_FOUND"));
  EXPECT(fails_with("browser_click", "not json", "INVALID_ARGUMENT"));
  EXPECT(fails_with("browser_tabs", "{\"action\":\"list\"}", "UNKNOWN_TOOL"));
  EXPECT(jevgate_gateway_set_managed_caps(gw, true, false, false, &err) == JEVGATE_OK);
  EXPECT(ok("browser_tabs", "{\"action\":\"list\"}", "\"count\":1"));

  /* Files: the cap alone is not enough; with a workspace, a path out of it is refused. */
  EXPECT(ok("browser_evaluate", "{\"function\":\"() => { console.error('c-side'); return 1; }\"}", NULL));
  EXPECT(ok("browser_console_messages", NULL, "[error] c-side"));
  EXPECT(jevgate_gateway_begin_browser_turn(gw, "thread-1", &err) == JEVGATE_OK);
  EXPECT(ok("browser_console_messages", NULL, "\"count\":0"));
  EXPECT(jevgate_gateway_set_managed_caps(gw, false, true, false, &err) == JEVGATE_OK);
  const char *upload = "{\"target\":\"css=#q\",\"paths\":[\"../../etc/passwd\"]}";
  EXPECT(fails_with("browser_file_upload", upload, "ACCESS_DENIED"));
  EXPECT(jevgate_gateway_set_managed_workspace(gw, "/no/such/jevgate-dir", &err) == JEVGATE_INVALID_ARGUMENT);
  jevgate_error_free(err);
  err = NULL;
  EXPECT(jevgate_gateway_set_managed_workspace(gw, argv[1], &err) == JEVGATE_OK);
  EXPECT(fails_with("browser_file_upload", upload, "INVALID_TOOL_ARGUMENTS"));
  EXPECT(ok("browser_download_files", NULL, "no downloads"));
  EXPECT(jevgate_gateway_set_managed_workspace(gw, NULL, &err) == JEVGATE_OK);
  EXPECT(fails_with("browser_download_files", NULL, "ACCESS_DENIED"));

  jevgate_gateway_close(gw);
  jevgate_gateway_free(gw);
  return expect_report("managed tool");
}

// The extension's pure functions (extension/lib/protocol.js, snapshot.js, keys.js) under
// node:test: frame shapes of protocol 2, hostile frames, gateway addresses, pairing codes, the
// backoff, and the snapshot format's budget and sensitive rule. Run by scripts/test with
// `node --test tools/typecheck/test/`.
import test from "node:test";
import assert from "node:assert/strict";
import * as p from "../../../extension/lib/protocol.js";
import * as s from "../../../extension/lib/snapshot.js";
import * as k from "../../../extension/lib/keys.js";

test("authenticate asks for the status feature with protocol 2 and the Device scheme", () => {
  const f = JSON.parse(p.authenticateFrame("tok"));
  assert.deepEqual(f, { type: "authenticate", authorization: "Device tok", protocol: 2, features: ["status"] });
  assert.deepEqual(JSON.parse(p.resultErr("c1", "timed_out", "x".repeat(900))).message.length, 500);
  assert.deepEqual(JSON.parse(p.resultOk("c1", { a: 1 })), { type: "result", id: "c1", success: true, result: { a: 1 } });
});

test("gateway frames parse, hostile ones never throw", () => {
  assert.deepEqual(p.parseGatewayFrame('{"type":"command","id":"c","tool":"t","args":{"a":1},"deadlineMs":5}'),
    { type: "command", id: "c", tool: "t", args: { a: 1 }, deadlineMs: 5 });
  assert.deepEqual(p.parseGatewayFrame('{"type":"status","controlled":true,"until":7,"autopilot":null}'),
    { type: "status", controlled: true, until: 7, autopilot: null });
  for (const bad of ["", "[]", "{}", "null", '{"type":3}', '{"type":"command","tool":"t"}',
    '{"type":"command","id":"c","tool":"t","deadlineMs":-1}', '{"type":"ready"}', '{"type":"cancel","id":7}',
    "x".repeat(100000)]) {
    assert.equal(p.parseGatewayFrame(bad).type, "malformed", bad.slice(0, 40));
  }
  assert.equal(p.parseGatewayFrame('{"type":"later"}').type, "unknown");
  assert.equal(p.parseGatewayFrame('{"type":"status","autopilot":"' + "a".repeat(1000) + '"}').autopilot.length, 300);
});

test("gateway addresses and pairing codes", () => {
  assert.deepEqual(p.gatewayUrls("127.0.0.1:8443"), { http: "http://127.0.0.1:8443", ws: "ws://127.0.0.1:8443/v1/device-worker/channel" });
  assert.deepEqual(p.gatewayUrls("https://gw.example"), { http: "https://gw.example", ws: "wss://gw.example/v1/device-worker/channel" });
  assert.equal(p.gatewayUrls("wss://gw.example:9/x").ws, "wss://gw.example:9/v1/device-worker/channel");
  for (const bad of ["", "ftp://x", "javascript:alert(1)", "http://user:pw@x", "a b", "x".repeat(3000)]) {
    assert.equal(p.gatewayUrls(bad), null, bad.slice(0, 30));
  }
  assert.equal(p.normalisePairingCode(" abcd-efgh "), "ABCDEFGH");
  assert.equal(p.normalisePairingCode("ab cd ef gh"), "ABCDEFGH");
  assert.equal(p.normalisePairingCode(""), null);
  assert.equal(p.normalisePairingCode("<script>"), null);
});

test("the backoff doubles to 30 s with jitter and final closes are told apart", () => {
  assert.equal(p.backoffMs(0, 0.5), 1000);
  assert.equal(p.backoffMs(3, 0.5), 8000);
  assert.equal(p.backoffMs(50, 0.5), 30000);
  assert.ok(p.backoffMs(50, 0.999) <= 45000 && p.backoffMs(0, 0) >= 750);
  assert.ok(p.closeIsFinal(1008, "DEVICE_UNPAIRED"));
  assert.ok(!p.closeIsFinal(1001, ""));
  assert.ok(!p.closeIsFinal(1006, ""));
});

test("the snapshot format: refs, flags, no sensitive value, whole lines under the budget", () => {
  const tree = { r: "root", n: "", c: [
    { r: "heading", n: "Sign in", level: 1, c: [] },
    { r: "textbox", n: "Email", ref: "e1", v: "ann@example.com", c: [] },
    { r: "textbox", n: "Password", ref: "e2", v: "hunter2", sensitive: true, c: [] },
    { r: "listitem", n: "", c: [{ r: "button", n: "Go", ref: "e3", c: [] }] },
    "  some   text ",
  ] };
  const [text, cut, total] = s.formatTree(tree, 10000);
  assert.equal(text, '- heading "Sign in" [level=1]\n- textbox "Email" [ref=e1]: ann@example.com\n- textbox "Password" [ref=e2] [sensitive]\n- button "Go" [ref=e3]\n- text: some text');
  assert.equal(cut, false);
  assert.equal(total, [...text].length);
  assert.ok(!text.includes("hunter2"));
  const [small, smallCut] = s.formatTree(tree, 40);
  assert.ok(smallCut && [...small].length <= 40 && small.endsWith("[level=1]"));
  const [withNote, truncated] = s.snapshotText(tree, 60);
  assert.ok(truncated && withNote.includes("[snapshot truncated at "));
  assert.deepEqual(s.cut("ab\u{1F600}cd", 3), ["ab\u{1F600}", true]);
});

test("keys", () => {
  assert.equal(k.parseKey(" Return "), "Enter");
  assert.equal(k.parseKey("ctrl+a"), null);
  assert.equal(k.keyEvents("Enter")[0].text, "\r");
  assert.equal(k.keyEvents("Tab")[0].type, "rawKeyDown");
  assert.equal(k.charEvents("a")[0].code, "KeyA");
  assert.equal(k.charEvents("\u0e01"), null);
});

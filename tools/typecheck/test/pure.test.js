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

import * as fr from "../../../extension/lib/frames.js";

test("frame refs split and never collide with main refs (frames.rs split_ref)", () => {
  assert.deepEqual(fr.splitRef("e3"), [0, "e3"]);
  assert.deepEqual(fr.splitRef("f2e13"), [2, "e13"]);
  assert.equal(fr.splitRef("f0e1"), null);
  assert.equal(fr.splitRef("fxe1"), null);
  assert.equal(fr.splitRef("f3"), null);
  assert.equal(fr.splitRef("f99999999999999999999e1"), null);
  const walk = { controls: [{ ref: "e1", container: "k1" }], focus: "e1", containers: [{ id: "k1", kind: "form" }],
    tree: { r: "root", c: [{ r: "button", ref: "e1", c: [] }, "text"] } };
  fr.prefixRefs(walk, 4);
  assert.equal(walk.controls[0].ref, "f4e1");
  assert.equal(walk.controls[0].container, "f4k1");
  assert.equal(walk.containers[0].id, "f4k1");
  assert.equal(walk.focus, "f4e1");
  assert.equal(/** @type {any} */ (walk.tree.c[0]).ref, "f4e1");
});

test("a frame's walk is spliced at its iframe's position (frames.rs splice)", () => {
  const main = {
    controls: [{ ref: "e1" }, { ref: "e2" }, { ref: "e3" }], text: "before\n\u0000\nafter", focus: null,
    truncated: { controls: false, text: false }, slots: [{ key: "K", ci: 2 }],
    tree: { r: "root", c: [{ r: "iframe", n: "X", slot: "K", c: [] }] },
  };
  const child = {
    controls: [{ ref: "f1e1", container: "f1k1" }], text: "inside", focus: "f1e1", containers: [{ id: "f1k1", kind: "dialog" }],
    truncated: { controls: true, text: false, containers: true }, tree: { r: "root", c: [{ r: "button", ref: "f1e1", c: [] }] },
  };
  fr.splice(main, [{ key: "K", walk: child }]);
  assert.deepEqual(main.controls.map((c) => c.ref), ["e1", "e2", "f1e1", "e3"]);
  assert.equal(main.text, "before\ninside\nafter");
  assert.equal(main.focus, "f1e1");
  assert.equal(main.truncated.controls, true);
  assert.equal(/** @type {any} */ (main.truncated).containers, true);
  assert.equal(/** @type {any} */ (main).containers[0].id, "f1k1");
  assert.equal(/** @type {any} */ (main.tree.c[0].c[0]).ref, "f1e1");
  const lone = { controls: [], text: "a\n\u0000\nb", focus: "e1", truncated: { controls: false }, slots: [{ key: "K", ci: 0 }] };
  fr.splice(lone, []);
  assert.equal(lone.text, "a\nb");
  assert.equal(lone.focus, "e1");
});

test("removing a frame removes the frames nested in it; a composed walk is cut to its budget", () => {
  const set = new fr.FrameSet();
  set.add("A", "fa", "");
  set.add("B", "fb", "A");
  set.add("C", "fc", "");
  set.removeTree("A");
  assert.deepEqual([...set.bySession.keys()], ["C"]);
  assert.equal(set.sessionOf("", "fc"), "C");
  assert.deepEqual(set.notReady(), ["C"]);
  const walk = { controls: [{}, {}, {}], text: "ab😀cd", truncated: {} };
  fr.cutToBudget(walk, { maxControls: 2, maxTextChars: 3 });
  assert.equal(walk.controls.length, 2);
  assert.equal(walk.text, "ab😀");
  assert.deepEqual(walk.truncated, { controls: true, text: true });
});

//! One device-tool conformance suite for every device (issue 22 item 6): the nine browser
//! tools through `gw.call_tool` on the held fixture pages, against whatever device a test hands
//! it — the reference worker (`jevgate-worker`'s executor on a local Chromium) or the browser
//! extension — asserting the behaviour R-DEV-TOOLS, R-DEV-CAPS, R-DEV-SHOT, R-BRW-SNAP and
//! R-BRW-OBS name, and returning a transcript of every answer with what legitimately differs
//! between two runs taken out (operation ids, generation numbers, artifact ids, the fixture
//! server's port, and a batch's byte count, which counts the operation ids), so two devices' transcripts can be compared for equality.
//!
//! Owns: the sequence of calls and its assertions. Never: starts a device or a gateway (the
//! caller does), or sleeps (the fixture server's counts are bounded polls).

use super::pages::{SECRET_CARD, SECRET_PASSWORD};
use super::Server;
use jevgate::device::{ToolCall, ToolResult};
use jevgate::untrusted::UNTRUSTED_NOTICE;
use jevgate::Gateway;
use serde_json::{json, Value};

/// A paired, connected browser device as the suite drives it.
pub struct Device<'a> {
    pub gw: &'a Gateway,
    pub owner: String,
    pub conversation: String,
    pub device: String,
}

impl Device<'_> {
    /// Calls `tool` on this device (its `deviceId` added to the arguments).
    pub fn call(&self, tool: &str, mut args: Value) -> ToolResult {
        args["deviceId"] = json!(self.device);
        self.gw
            .call_tool(&ToolCall::new(&self.owner, &self.conversation, tool, args))
    }

    /// The ref of the first control `browser_find` matches for `query`.
    pub fn find_ref(&self, query: &str) -> String {
        let found = data(&self.call("browser_find", json!({ "query": query })));
        found["matches"][0]["ref"]
            .as_str()
            .unwrap_or_else(|| panic!("no match for {query}: {found}"))
            .to_string()
    }
}

/// The page-derived data of a successful answer (inside the one untrusted envelope).
pub fn data(r: &ToolResult) -> Value {
    let v = r.result().unwrap_or_else(|| panic!("failed: {r:?}"));
    assert_eq!(v["untrustedContent"]["notice"], UNTRUSTED_NOTICE);
    v["untrustedContent"]["data"].clone()
}

/// An answer with what differs between two equal runs taken out.
fn normal(v: &Value, base: &str) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "operationId"
                            | "generation"
                            | "generationBefore"
                            | "artifactId"
                            // a batch's size counts the operation ids' bytes
                            | "resultBytes"
                    )
                })
                .map(|(k, v)| (k.clone(), normal(v, base)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| normal(i, base)).collect()),
        Value::String(s) => Value::String(s.replace(base, "BASE")),
        other => other.clone(),
    }
}

/// Every step's name and normalised answer, in order.
pub type Transcript = Vec<(String, Value)>;

struct Recorder<'a, 'b> {
    dev: &'a Device<'b>,
    base: String,
    out: Transcript,
}

impl Recorder<'_, '_> {
    fn call(&mut self, step: &str, tool: &str, args: Value) -> ToolResult {
        let r = self.dev.call(tool, args);
        let shown = match r.result() {
            // An image's size and bytes are the browser window's (a person's window, a headless
            // one), not the device's: a screenshot compares by its media type.
            Some(v) if v.get("mediaType").is_some() => json!({"mediaType": v["mediaType"]}),
            Some(v) => normal(v, &self.base),
            None => json!({
                "errorCode": r.error_code(),
                "message": r.to_json()["message"],
            }),
        };
        self.out.push((step.to_string(), shown));
        r
    }
}

/// The nine tools on the fixture pages of `server` (a server of this run only: its beacon
/// counts prove every click happened exactly once).
pub fn every_tool(dev: &Device<'_>, server: &Server) -> Transcript {
    let mut rec = Recorder {
        dev,
        base: server.base.clone(),
        out: Vec::new(),
    };

    // Navigate returns a fresh snapshot (R-BRW-SNAP), page text unwrapped inside the one JSON
    // envelope — never a second, nested envelope.
    let nav = rec.call(
        "navigate buttons",
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    );
    let snap = &data(&nav)["snapshot"];
    assert_eq!(snap["title"], "Buttons", "{nav:?}");
    let text = snap["text"].as_str().unwrap();
    assert!(
        text.contains("Press me") && text.contains("[ref="),
        "{text}"
    );
    assert!(!text.contains("untrusted-page-content"), "{text}");

    // Click by ref: exactly one real click.
    rec.call("find press", "browser_find", json!({"query": "Press me"}));
    let press = dev.find_ref("Press me");
    let click = rec.call(
        "click press",
        "browser_computer",
        json!({"action": "click", "ref": press}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("go", 1), 1);

    // A ref from before the page changed is refused, not applied to another element.
    let press = dev.find_ref("Press me");
    let js = rec.call(
        "javascript changes the page",
        "browser_javascript",
        json!({"code": "document.body.prepend(document.createElement('button')); document.title"}),
    );
    assert_eq!(data(&js)["value"], "Buttons");
    let stale = rec.call(
        "stale click",
        "browser_computer",
        json!({"action": "click", "ref": press}),
    );
    assert_eq!(stale.error_code(), Some("execution_failed"), "{stale:?}");
    assert!(stale.to_json()["message"]
        .as_str()
        .unwrap()
        .starts_with("STALE_OBSERVATION"));
    assert_eq!(server.count("go"), 1);

    // Text and its cap at the edge (R-DEV-CAPS).
    let text = rec.call("get text", "browser_get_text", json!({}));
    assert!(data(&text)["text"]
        .as_str()
        .unwrap()
        .contains("Buttons page"));
    let cut = rec.call("get text cut", "browser_get_text", json!({"max_chars": 5}));
    assert_eq!(cut.result().unwrap()["truncated"], true, "{cut:?}");
    assert_eq!(data(&cut)["text"].as_str().unwrap().chars().count(), 5);
    let tree = rec.call(
        "read page interactive",
        "browser_read_page",
        json!({"filter": "interactive"}),
    );
    assert!(data(&tree)["text"]
        .as_str()
        .unwrap()
        .contains("\"Press me\""));
    let small = rec.call(
        "read page cut",
        "browser_read_page",
        json!({"max_chars": 60}),
    );
    assert_eq!(data(&small)["truncated"], true, "{small:?}");

    // Screenshot: a private artifact of this root session (R-DEV-SHOT).
    let shot = rec.call(
        "screenshot",
        "browser_computer",
        json!({"action": "screenshot"}),
    );
    let id = shot.result().unwrap_or_else(|| panic!("{shot:?}"))["artifactId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(shot.result().unwrap()["mediaType"], "image/jpeg");
    let art = dev.gw.artifact(&dev.conversation, &id).unwrap();
    assert_eq!(&art.bytes[..2], &[0xFF, 0xD8]);
    assert_eq!(
        dev.gw.artifact("conv-other", &id).unwrap_err().code(),
        "ARTIFACT_NOT_FOUND"
    );
    let zoom = rec.call(
        "zoom",
        "browser_computer",
        json!({"action": "zoom", "region": [0, 0, 200, 100]}),
    );
    assert!(zoom.result().unwrap()["artifactId"].is_string(), "{zoom:?}");

    // Forms: form_input, typing into a field, a key press that submits.
    rec.call(
        "navigate form",
        "browser_navigate",
        json!({"url": server.url("/p/form")}),
    );
    let comment = dev.find_ref("Comment");
    let set = rec.call(
        "form input",
        "browser_form_input",
        json!({"ref": comment, "value": "hello"}),
    );
    assert!(set.is_success(), "{set:?}");
    let value = rec.call(
        "read the value",
        "browser_javascript",
        json!({"code": "document.getElementById('comment').value"}),
    );
    assert_eq!(data(&value)["value"], "hello");
    let search = dev.find_ref("searchbox");
    let typed = rec.call(
        "type",
        "browser_computer",
        json!({"action": "type", "ref": search, "text": "cats"}),
    );
    assert!(typed.is_success(), "{typed:?}");
    let key = rec.call(
        "key enter",
        "browser_computer",
        json!({"action": "key", "text": "Enter"}),
    );
    assert!(key.is_success(), "{key:?}");
    assert_eq!(server.wait_count("submit:cats", 1), 1);
    let chord = rec.call(
        "key chord refused",
        "browser_computer",
        json!({"action": "key", "text": "ctrl+a"}),
    );
    assert_eq!(chord.error_code(), Some("execution_failed"));

    // History and a batch run by the gateway one action at a time.
    let batch = rec.call(
        "batch",
        "browser_batch",
        json!({"actions": [
            {"tool": "browser_navigate", "args": {"url": server.url("/p/second")}},
            {"tool": "browser_navigate", "args": {"url": "back"}},
            {"tool": "browser_get_text", "args": {}}
        ]}),
    );
    let b = batch.result().unwrap();
    assert_eq!(b["completed"], 3, "{b}");
    let last = &b["actions"][2]["result"]["untrustedContent"]["data"]["text"];
    assert!(last.as_str().unwrap().contains("Search form"), "{last}");

    // A click that starts a slow navigation: the answer's snapshot waits (bounded) for the new
    // page instead of answering NAVIGATION_PENDING.
    rec.call(
        "navigate slow third",
        "browser_navigate",
        json!({"url": server.url("/p/slowthird")}),
    );
    let link = dev.find_ref("Slow link");
    let slow = rec.call(
        "click slow link",
        "browser_computer",
        json!({"action": "click", "ref": link}),
    );
    assert_eq!(data(&slow)["snapshot"]["title"], "Third", "{slow:?}");

    rec.call(
        "navigate sensitive",
        "browser_navigate",
        json!({"url": server.url("/p/sensitive")}),
    );
    // Sensitive values never leave the page (R-BRW-OBS, R-LOG).
    let mut seen = String::new();
    for (step, tool, args) in [
        ("sensitive read", "browser_read_page", json!({})),
        (
            "sensitive interactive",
            "browser_read_page",
            json!({"filter": "interactive"}),
        ),
        ("sensitive text", "browser_get_text", json!({})),
        (
            "sensitive find",
            "browser_find",
            json!({"query": "password"}),
        ),
    ] {
        let r = rec.call(step, tool, args);
        assert!(r.is_success(), "{tool}: {r:?}");
        seen.push_str(&r.to_json().to_string());
    }
    assert!(seen.contains("Password"));
    assert!(!seen.contains(SECRET_PASSWORD) && !seen.contains(SECRET_CARD));

    // A script that throws is a javascript_error.
    let threw = rec.call(
        "javascript throws",
        "browser_javascript",
        json!({"code": "throw new Error('boom')"}),
    );
    assert_eq!(threw.error_code(), Some("javascript_error"), "{threw:?}");

    // Tabs: the list holds the device's current tab.
    let tabs = dev.call("browser_tabs", json!({"action": "list"}));
    let list = data(&tabs)["tabs"].as_array().unwrap().clone();
    assert!(list.iter().any(|t| t["current"] == true), "{tabs:?}");

    frame_cases(&mut rec, server);
    frame_primitives(&mut rec, server);
    rec.out
}

/// Navigates to `path` (its answer not recorded: a frame's document may still be attaching)
/// and polls `browser_find` (bounded) until `query` is found inside a frame.
fn open_framed(rec: &mut Recorder<'_, '_>, server: &Server, path: &str, query: &str) {
    let nav = rec
        .dev
        .call("browser_navigate", json!({"url": server.url(path)}));
    assert!(nav.is_success(), "{path}: {nav:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let found = data(&rec.dev.call("browser_find", json!({ "query": query })));
        if found["matches"][0]["ref"].is_string() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{query} never appeared on {path}: {found}"
        );
    }
}

/// Iframes (R-BRW-OBS, R-BRW-ACT, R-BRW-STALE): same-origin, cross-origin (an out-of-process
/// frame of another site), nested cross-origin, cross-origin inside same-origin, and a covered
/// frame — read, found, clicked, typed into and filled by ref, on every device alike.
fn frame_cases(rec: &mut Recorder<'_, '_>, server: &Server) {
    let dev = rec.dev;

    // A same-origin frame: walked inline, its button clicked once.
    open_framed(rec, server, "/p/frames", "Frame button");
    let read = rec.call("frames read", "browser_read_page", json!({}));
    let text = data(&read)["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("Inner frame") && text.contains("Frame button"),
        "{text}"
    );
    rec.call(
        "frames find",
        "browser_find",
        json!({"query": "Frame button"}),
    );
    let inner = dev.find_ref("Frame button");
    let click = rec.call(
        "frames click",
        "browser_computer",
        json!({"action": "click", "ref": inner}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("inner", 1), 1);
    rec.call("frames text", "browser_get_text", json!({}));

    // A cross-origin frame: its controls carry frame refs, in page order.
    open_framed(rec, server, "/p/xframes", "Cross button");
    let read = rec.call("xframes read", "browser_read_page", json!({}));
    let text = data(&read)["text"].as_str().unwrap().to_string();
    let (top, cross, after) = (
        text.find("Top button").unwrap_or(usize::MAX),
        text.find("Cross button").unwrap_or(usize::MAX),
        text.find("After button").unwrap_or(usize::MAX),
    );
    assert!(top < cross && cross < after && after < usize::MAX, "{text}");
    assert!(!text.contains(SECRET_PASSWORD), "{text}");
    rec.call(
        "xframes interactive",
        "browser_read_page",
        json!({"filter": "interactive"}),
    );
    let text = rec.call("xframes text", "browser_get_text", json!({}));
    let text = data(&text)["text"].as_str().unwrap().to_string();
    assert!(text.contains("Inside the cross frame"), "{text}");
    assert!(!text.contains(SECRET_PASSWORD), "{text}");
    let found = rec.call(
        "xframes find",
        "browser_find",
        json!({"query": "Cross button"}),
    );
    let cross = data(&found)["matches"][0]["ref"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(cross.starts_with('f'), "{cross}");
    let click = rec.call(
        "xframes click",
        "browser_computer",
        json!({"action": "click", "ref": cross}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("xinner", 1), 1);
    let name = dev.find_ref("Cross name");
    let set = rec.call(
        "xframes form input",
        "browser_form_input",
        json!({"ref": name, "value": "dog"}),
    );
    assert!(set.is_success(), "{set:?}");
    let found = rec.call(
        "xframes find name",
        "browser_find",
        json!({"query": "Cross name"}),
    );
    assert_eq!(data(&found)["matches"][0]["value"], "dog", "{found:?}");
    let name = dev.find_ref("Cross name");
    let typed = rec.call(
        "xframes type",
        "browser_computer",
        json!({"action": "type", "ref": name, "text": "dogs"}),
    );
    assert!(typed.is_success(), "{typed:?}");
    let key = rec.call(
        "xframes key enter",
        "browser_computer",
        json!({"action": "key", "text": "Enter"}),
    );
    assert!(key.is_success(), "{key:?}");
    assert_eq!(server.wait_count("xenter:dogs", 1), 1);
    let shot = rec.call(
        "xframes screenshot",
        "browser_computer",
        json!({"action": "screenshot"}),
    );
    assert!(shot.is_success(), "{shot:?}");
    // Nested cross-origin frames, three sites deep.
    open_framed(rec, server, "/p/xnest", "Deep button");
    rec.call("xnest read", "browser_read_page", json!({}));
    let deep = dev.find_ref("Deep button");
    let click = rec.call(
        "xnest click",
        "browser_computer",
        json!({"action": "click", "ref": deep}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("deep", 1), 1);

    // A cross-origin frame inside a same-origin frame.
    open_framed(rec, server, "/p/xsame", "Deep button");
    rec.call("xsame read", "browser_read_page", json!({}));
    let deep = dev.find_ref("Deep button");
    let click = rec.call(
        "xsame click",
        "browser_computer",
        json!({"action": "click", "ref": deep}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("deep", 2), 2);

    // The frame limits: four levels of cross-origin frames below the page are walked, the
    // rest left out and said so (truncated); a dozen side by side are all walked in order.
    open_framed(rec, server, "/p/xchain", "Level 4");
    let chain = rec.call(
        "xchain interactive",
        "browser_read_page",
        json!({"filter": "interactive"}),
    );
    let text = data(&chain)["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("\"Level 4\"") && !text.contains("\"Level 5\""),
        "{text}"
    );
    assert_eq!(chain.result().unwrap()["truncated"], true, "{chain:?}");
    let level = dev.find_ref("Level 4");
    assert!(level.starts_with("f4e"), "{level}");
    open_framed(rec, server, "/p/xwide", "Wide button 11");
    let wide = rec.call(
        "xwide interactive",
        "browser_read_page",
        json!({"filter": "interactive"}),
    );
    let text = data(&wide)["text"].as_str().unwrap().to_string();
    let at: Vec<usize> = (0..12)
        .map(|i| {
            text.find(&format!("\"Wide button {i}\""))
                .unwrap_or(usize::MAX)
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]) && at[11] < usize::MAX,
        "{text}"
    );
    assert!(text.find("Wide after").unwrap_or(0) > at[11], "{text}");

    // A frame below the fold: scrolled into view, its button clicked once.
    open_framed(rec, server, "/p/xfar", "Cross button");
    let far = dev.find_ref("Cross button");
    let click = rec.call(
        "xfar click",
        "browser_computer",
        json!({"action": "click", "ref": far}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("xinner", 2), 2);

    // A dialog opened inside a cross-origin frame is reported in the click's answer.
    open_framed(rec, server, "/p/xnest", "Middle alert");
    let alert = dev.find_ref("Middle alert");
    let click = rec.call(
        "xnest alert click",
        "browser_computer",
        json!({"action": "click", "ref": alert}),
    );
    assert_eq!(
        data(&click)["dialog"]["message"],
        "From the middle",
        "{click:?}"
    );
    let target = dev
        .gw
        .device_target(&dev.owner, &dev.conversation, &dev.device)
        .unwrap();
    let answered = jevgate::browser::BrowserBackend::handle_dialog(
        &target,
        jevgate::browser::HandleDialogArgs {
            accept: true,
            prompt_text: None,
        },
    );
    assert!(answered.is_ok(), "{answered:?}");
    assert_eq!(server.wait_count("after-mid-alert", 1), 1);

    // A covered frame: the click is refused, nothing reaches the frame.
    open_framed(rec, server, "/p/xcovered", "Cross button");
    let covered = dev.find_ref("Cross button");
    let click = rec.call(
        "xcovered click",
        "browser_computer",
        json!({"action": "click", "ref": covered}),
    );
    assert!(
        click.to_json()["message"]
            .as_str()
            .unwrap_or_default()
            .contains("TARGET_OBSCURED"),
        "{click:?}"
    );
    assert_eq!(server.count("veil"), 0);
    assert_eq!(server.count("xinner"), 2);
}

/// Asserts two transcripts are equal step by step (the first difference named).
pub fn assert_same(expected: &Transcript, got: &Transcript) {
    assert_eq!(
        expected.iter().map(|(s, _)| s).collect::<Vec<_>>(),
        got.iter().map(|(s, _)| s).collect::<Vec<_>>()
    );
    for ((step, want), (_, have)) in expected.iter().zip(got) {
        assert_eq!(
            want, have,
            "step `{step}` differs:\nreference worker: {want}\ndevice: {have}"
        );
    }
}

/// A primitive's answer (or its error code and message), recorded as a tool's is.
fn record<T: serde::Serialize>(
    rec: &mut Recorder<'_, '_>,
    step: &str,
    r: &jevgate::Result<T>,
) -> Value {
    let shown = match r {
        Ok(v) => normal(&serde_json::to_value(v).unwrap(), &rec.base),
        Err(e) => json!({"errorCode": e.code(), "message": e.to_string()}),
    };
    rec.out.push((step.to_string(), shown.clone()));
    shown
}

/// The SPEC §6 primitives a task controller uses (observe, snapshot, page_click, page_type,
/// form_input) inside frames, through the device's target: observations carry frame refs,
/// actions by frame ref reach the frame once.
fn frame_primitives(rec: &mut Recorder<'_, '_>, server: &Server) {
    use jevgate::browser::{BrowserBackend, ClickArgs, FormInputArgs, SnapshotArgs, TypeArgs};
    let dev = rec.dev;
    let target = dev
        .gw
        .device_target(&dev.owner, &dev.conversation, &dev.device)
        .unwrap();
    let named = |obs: &Value, name: &str| -> String {
        obs["controls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {obs}"))["ref"]
            .as_str()
            .unwrap()
            .to_string()
    };

    // Nested cross-origin frames: one observation, the deep button clicked by its frame ref.
    open_framed(rec, server, "/p/xnest", "Deep button");
    let obs = target.observe();
    let shown = record(rec, "primitive observe xnest", &obs);
    let obs = obs.unwrap();
    let deep = named(&shown, "Deep button");
    assert!(deep.starts_with("f2e"), "{shown}");
    let clicked = target.page_click(ClickArgs {
        operation_id: format!("conf-xnest-{}", dev.device),
        generation: obs.generation,
        reference: deep,
    });
    record(rec, "primitive click deep", &clicked);
    assert!(clicked.is_ok(), "{clicked:?}");
    assert_eq!(server.wait_count("deep", 3), 3);
    let snap = target.snapshot(SnapshotArgs {
        region: None,
        max_chars: None,
    });
    let shown = record(rec, "primitive snapshot xnest", &snap);
    assert!(
        shown["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Deep text"),
        "{shown}"
    );
    // A snapshot of one region (R-BRW-SNAP): a ref inside the nested cross-origin frame, a ref
    // of the main frame, and refs the page never handed out.
    let obs = target.observe();
    let shown = record(rec, "primitive observe xnest again", &obs);
    let deep = named(&shown, "Deep button");
    let top = named(&shown, "Nest top");
    let region = |r: &str| {
        target.snapshot(SnapshotArgs {
            region: Some(r.to_string()),
            max_chars: None,
        })
    };
    let shown = record(rec, "primitive snapshot region in a frame", &region(&deep));
    let text = shown["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Deep button") && !text.contains("Nest top") && !text.contains("Middle"),
        "{shown}"
    );
    let shown = record(rec, "primitive snapshot region of the page", &region(&top));
    let text = shown["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Nest top") && !text.contains("Deep"),
        "{shown}"
    );
    for missing in ["e99999", "f9e1", "zz"] {
        let r = region(missing);
        record(rec, "primitive snapshot missing region", &r);
        assert_eq!(
            r.as_ref().map_err(|e| e.code()).unwrap_err(),
            "TARGET_NOT_FOUND",
            "{missing}: {r:?}"
        );
    }

    // A cross-origin frame's field: typed into with submit, then set by form_input.
    open_framed(rec, server, "/p/xframes", "Cross name");
    let obs = target.observe();
    let shown = record(rec, "primitive observe xframes", &obs);
    let obs = obs.unwrap();
    let field = named(&shown, "Cross name");
    let typed = target.page_type(TypeArgs {
        operation_id: format!("conf-xtype-{}", dev.device),
        generation: obs.generation,
        reference: field.clone(),
        text: "birds".into(),
        submit: true,
    });
    record(rec, "primitive type", &typed);
    assert!(typed.is_ok(), "{typed:?}");
    assert_eq!(server.wait_count("xenter:birds", 1), 1);
    let obs = target.observe().unwrap();
    let set = target.form_input(FormInputArgs {
        operation_id: format!("conf-xform-{}", dev.device),
        generation: obs.generation,
        reference: field,
        value: "set by form".into(),
    });
    record(rec, "primitive form input", &set);
    assert!(set.is_ok(), "{set:?}");
    let obs = target.observe();
    let shown = record(rec, "primitive observe after", &obs);
    let value = shown["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Cross name")
        .map(|c| c["value"].clone());
    assert_eq!(value, Some(json!("set by form")), "{shown}");
    // A change inside the frame makes the refs of the observation before it stale.
    let add = named(&shown, "Cross add");
    let top = named(&shown, "Top button");
    let added = target.page_click(ClickArgs {
        operation_id: format!("conf-xadd-{}", dev.device),
        generation: obs.as_ref().unwrap().generation,
        reference: add,
    });
    record(rec, "primitive click add", &added);
    assert!(added.is_ok(), "{added:?}");
    assert_eq!(server.wait_count("xadd", 1), 1);
    let stale = target.page_click(ClickArgs {
        operation_id: format!("conf-xstale-{}", dev.device),
        generation: obs.as_ref().unwrap().generation,
        reference: top,
    });
    record(rec, "primitive stale click", &stale);
    assert_eq!(
        stale.as_ref().map_err(|e| e.code()).unwrap_err(),
        "STALE_OBSERVATION",
        "{stale:?}"
    );
    assert_eq!(server.count("top"), 0);
    let obs = target.observe();
    // A ref of a frame the observation never handed out is refused, nothing sent.
    let obs = obs.unwrap();
    let missing = target.page_click(ClickArgs {
        operation_id: format!("conf-xmissing-{}", dev.device),
        generation: obs.generation,
        reference: "f9e1".into(),
    });
    record(rec, "primitive click unknown frame", &missing);
    assert!(missing.is_err(), "{missing:?}");
}

/// The reference worker a device is held to: `BrowserTools` on a tab of the shared local
/// Chromium (what `jevgate-worker` runs), paired on `t`'s channel as `owner`'s device with
/// `installation`, online once [`ReferenceWorker::start`] returns. Dropping it closes the
/// worker, then its tab.
pub struct ReferenceWorker {
    pub device: String,
    worker: Option<jevgate::device::DeviceWorker>,
    tab: Option<jevgate::browser::LocalTab>,
    _browser: super::Closing,
}

impl ReferenceWorker {
    pub fn start(
        t: &super::gateway::TestGateway,
        owner: &str,
        installation: &str,
    ) -> ReferenceWorker {
        let browser = super::Closing(super::shared_browser());
        let tab = browser.0.open_tab().unwrap();
        let paired = t.pair(owner, installation);
        let worker = jevgate::device::DeviceWorker::connect(
            jevgate::device::WorkerOptions::new(t.channel().url(), paired.token.clone()),
            std::sync::Arc::new(jevgate::browser::BrowserTools::new(std::sync::Arc::new(
                tab.clone(),
            ))),
        )
        .unwrap();
        t.wait_online(&paired, true);
        ReferenceWorker {
            device: paired.device,
            worker: Some(worker),
            tab: Some(tab),
            _browser: browser,
        }
    }

    /// Closes the worker, then its tab (which must close cleanly).
    pub fn close(mut self) {
        if let Some(w) = self.worker.take() {
            w.close();
        }
        if let Some(tab) = self.tab.take() {
            tab.close().unwrap();
        }
    }
}

impl Drop for ReferenceWorker {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            w.close();
        }
        if let Some(tab) = self.tab.take() {
            let _ = tab.close();
        }
    }
}

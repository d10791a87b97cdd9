//! Issue 26 item 8, R-AUTO (seed 000 "Autopilot"), R-DEV-TOOLS: `browser_autopilot`, the tenth
//! device tool when Jev is configured, end to end — an agent's call through
//! `Gateway::call_tool` drives a paired device (the reference worker over a real headless
//! Chromium tab) on loopback fixture pages that count real presses, submits and typing.
//!
//! The decision model is a deterministic callback: it answers each evaluation from a script
//! (the next action it wants, and the value name for a field), classifies a page that talks
//! about cookies as a consent banner, and keeps every request it received so the tests can
//! assert that no value ever reached it. The worker's executor checks, at the moment each
//! click or typing reaches it, that the action's receipt is already durable in the gateway's
//! SQLite file. Nothing sleeps: waits are bounded polls.

mod support;

use jevgate::browser::{BrowserBackend, BrowserTools, LocalTab};
use jevgate::device::{ToolCall, ToolExecutor, ToolFormat, WorkerFailure};
use jevgate::jev::JevCallback;
use jevgate::task::TaskOwner;
use jevgate::{CancelToken, Config};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::gateway::{builder, Paired, TestGateway};
use support::{shared_browser, Closing, Server};

const CALLBACK: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"callback"}}}"#;

/// The scripted model: each `next` answer pops one `(what the wanted option says, value
/// name)`; `"done"` answers done; an option that is not offered answers `stop`.
struct Model {
    script: Mutex<VecDeque<(&'static str, Option<&'static str>)>>,
    seen: Mutex<Vec<String>>,
}

fn model(script: &[(&'static str, Option<&'static str>)]) -> (JevCallback, Arc<Model>) {
    let m = Arc::new(Model {
        script: Mutex::new(script.iter().copied().collect()),
        seen: Mutex::new(Vec::new()),
    });
    let me = Arc::clone(&m);
    let callback: JevCallback = Arc::new(move |req: &[u8]| {
        let raw = String::from_utf8_lossy(req).into_owned();
        me.seen.lock().push(raw);
        let v: Value = serde_json::from_slice(req).unwrap();
        let state = v["state"].as_str().unwrap_or("").to_ascii_lowercase();
        let questions = v["questions"].as_object().unwrap();
        let step = me.script.lock().pop_front().unwrap_or(("done", None));
        let mut answers = serde_json::Map::new();
        for (key, q) in questions {
            let opts = q["criteria"].as_object().unwrap();
            let find = |want: &str| {
                opts.iter()
                    .find(|(_, d)| d.as_str().unwrap_or("").contains(want))
                    .map(|(k, _)| k.clone())
            };
            let pick = match key.as_str() {
                "page" if state.contains("cookie") => "consent".to_string(),
                "page" => "ordinary".to_string(),
                "next" if step.0 == "done" => "done".to_string(),
                "next" => find(step.0).unwrap_or_else(|| "stop".into()),
                "value" => step
                    .1
                    .and_then(|n| find(&format!("named {n}")))
                    .unwrap_or_else(|| opts.keys().next().unwrap().clone()),
                _ => opts.keys().next().unwrap().clone(),
            };
            let probs: serde_json::Map<String, Value> = opts
                .keys()
                .map(|k| (k.clone(), json!(if *k == pick { 1.0 } else { 0.0 })))
                .collect();
            answers.insert(
                key.clone(),
                json!({"type": "choice", "choice": pick, "probabilities": probs, "confidence": 0.9}),
            );
        }
        Ok(json!({"model": "script", "usage": {"input_tokens": 1, "output_tokens": 1}, "answers": answers})
            .to_string()
            .into_bytes())
    });
    (callback, m)
}

/// The worker's executor: the reference tools over the tab, checking first that every click
/// or typing that reaches it already has its durable receipt (`dispatched`) in the gateway's
/// SQLite file.
struct Checking {
    inner: BrowserTools,
    db: PathBuf,
    checked: Mutex<Vec<(String, Option<String>)>>,
}

impl ToolExecutor for Checking {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        deadline: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        if tool == "page_click" || tool == "page_type" {
            let op = args["operationId"].as_str().unwrap_or("").to_string();
            let conn = rusqlite::Connection::open_with_flags(
                &self.db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .unwrap();
            let status: Option<String> = conn
                .query_row(
                    "SELECT status FROM autopilot_operations WHERE operation_id = ?1",
                    [&op],
                    |r| r.get(0),
                )
                .ok();
            self.checked.lock().push((op, status));
        }
        self.inner.execute(tool, args, deadline, cancel)
    }
}

struct Setup {
    t: TestGateway,
    alice: Paired,
    server: Server,
    _browser: Closing,
    tab: LocalTab,
    checking: Arc<Checking>,
    worker: Option<jevgate::device::DeviceWorker>,
    model: Arc<Model>,
}

fn setup(page: &str, script: &[(&'static str, Option<&'static str>)]) -> Setup {
    let t = builder()
        .config(Config::from_json_str(CALLBACK).unwrap())
        .channel()
        .build();
    let (callback, model) = model(script);
    t.gw.set_jev_callback(Some(callback));
    let alice = t.pair("alice", "alice-laptop");
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    assert!(tab.navigate(&server.url(page)).unwrap().settled);
    let checking = Arc::new(Checking {
        inner: BrowserTools::new(Arc::new(tab.clone())),
        db: t.dir.path().join("jevgate.sqlite3"),
        checked: Mutex::new(Vec::new()),
    });
    let worker = t.device_worker(&alice, checking.clone());
    Setup {
        t,
        alice,
        server,
        _browser: browser,
        tab,
        checking,
        worker: Some(worker),
        model,
    }
}

impl Setup {
    fn run(&self, args: Value) -> Value {
        let answer =
            self.t
                .gw
                .call_tool(&ToolCall::new("alice", "conv-1", "browser_autopilot", args));
        assert!(answer.is_success(), "{:?}", answer.to_json());
        answer.result().unwrap().clone()
    }

    /// Every request the model received, joined.
    fn seen(&self) -> String {
        self.model.seen.lock().join("\n")
    }

    /// The receipt rows of a run: `(operation id, tool, status)`.
    fn receipts(&self, run: &str) -> Vec<(String, String, String)> {
        let conn = rusqlite::Connection::open_with_flags(
            self.t.dir.path().join("jevgate.sqlite3"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut stmt = conn
            .prepare("SELECT operation_id, tool, status FROM autopilot_operations WHERE run_id = ?1 ORDER BY dispatched_ms, operation_id")
            .unwrap();
        stmt.query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// Waits (bounded) until the tab shows a control named `name`.
    fn wait_control(&self, name: &str) {
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            let obs = self.tab.observe().unwrap();
            if obs.controls.iter().any(|c| c.name == name) {
                return;
            }
            assert!(Instant::now() < end, "no control named {name}");
            std::thread::yield_now();
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            w.close();
        }
        self.t.gw.close();
        let _ = self.tab.close();
    }
}

fn progress(result: &Value) -> Vec<String> {
    result["untrustedContent"]["data"]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

// R-AUTO: a normal two-field form, filled with the given values and submitted once; each
// action's receipt was durable before the action reached the browser; progress lines name
// the goal and the step with value names only.
#[test]
fn r_auto_a_two_field_form_is_filled_and_submitted_once_with_receipts_first() {
    let s = setup(
        "/p/apform",
        &[
            ("fill textbox \"First name\"", Some("first")),
            ("fill textbox \"Email\"", Some("email")),
            ("press button \"Submit\"", None),
            ("done", None),
        ],
    );
    let result = s.run(json!({
        "goal": "sign up for the news with the first name and the email",
        "values": {"first": "Zelda-VALUE-1", "email": "zelda.VALUE@mail.example"},
    }));
    assert_eq!(result["state"], "done", "{result}");
    assert_eq!(result["reason"], "GOAL_REACHED");
    assert_eq!(result["steps"], 4);
    assert_eq!(
        s.server.wait_count("submitted", 1),
        1,
        "submitted exactly once"
    );
    assert_eq!(s.server.count("press:submit"), 1, "one real press");
    assert_eq!(
        s.server
            .count("values:Zelda-VALUE-1|zelda.VALUE@mail.example"),
        1,
        "the given values, typed as given"
    );
    // Receipts: three actions, each checkpointed before it reached the browser.
    let run = result["runId"].as_str().unwrap();
    let rows = s.receipts(run);
    let tools: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(tools, ["page_type", "page_type", "page_click"]);
    assert!(rows.iter().all(|r| r.2 == "done"), "{rows:?}");
    let checked = s.checking.checked.lock().clone();
    assert_eq!(checked.len(), 3);
    for (op, status) in &checked {
        assert!(op.starts_with(run), "{op}");
        assert_eq!(
            status.as_deref(),
            Some("dispatched"),
            "receipt before dispatch"
        );
    }
    assert_eq!(result["actions"].as_array().unwrap().len(), 3);
    // Progress: `Autopilot: <goal> — <step>`, value names only.
    let lines = progress(&result);
    assert_eq!(
        lines[0],
        "Autopilot: sign up for the news with the first name and the email — type [first] into textbox \"First name\""
    );
    assert!(lines.last().unwrap().ends_with("— done"), "{lines:?}");
    let seen = s.seen();
    assert_eq!(
        s.model.seen.lock().len(),
        4,
        "one decision per action, and done"
    );
    for secret in ["Zelda-VALUE-1", "zelda.VALUE@mail.example", "VALUE"] {
        assert!(!seen.contains(secret), "the model saw {secret}");
        assert!(!result.to_string().contains(secret));
    }
    assert_eq!(s.t.gw.devices("alice").unwrap()[0].id, s.alice.device);
}

// R-AUTO: a page that echoes the typed value in its URL, title and text: the model never sees
// the value (in any request it received, as written, in another case or URL-encoded); it sees
// the value's name where the page echoed it.
#[test]
fn r_auto_page_text_echoing_a_value_is_masked_before_any_evaluation() {
    let s = setup(
        "/p/apecho",
        &[("fill searchbox \"Search\"", Some("query")), ("done", None)],
    );
    let value = "Blue Suede SECRET-42 shoes";
    let result = s.run(json!({
        "goal": "search for the query",
        "values": {"query": value},
        "maxSteps": 5,
    }));
    assert_eq!(result["state"], "done", "{result}");
    assert_eq!(
        s.server.wait_count(&format!("q:{value}"), 1),
        1,
        "the search ran once"
    );
    let seen = s.seen();
    assert_eq!(s.model.seen.lock().len(), 2);
    for echo in [
        value.to_string(),
        value.to_ascii_lowercase(),
        "Blue+Suede+SECRET-42+shoes".into(),
        "Blue%20Suede%20SECRET-42%20shoes".into(),
        "SECRET-42".into(),
    ] {
        assert!(!seen.contains(&echo), "the model saw the value as {echo}");
    }
    // The second decision saw the results page, its echo masked with the value's name.
    let second = &s.model.seen.lock()[1];
    assert!(second.contains("You searched for [query]."), "{second}");
    assert!(second.contains("Results for [query]"), "{second}");
    assert!(!result.to_string().contains("SECRET-42"), "{result}");
}

// R-AUTO: a sign-in page (a password field) hands back before anything is pressed or typed,
// without asking the model; a consent banner hands back on the model's page answer.
#[test]
fn r_auto_login_pages_and_consent_banners_hand_back() {
    let s = setup("/p/aplogin", &[("fill textbox \"Username\"", Some("user"))]);
    let result = s.run(json!({"goal": "sign in", "values": {"user": "ann"}}));
    assert_eq!(result["state"], "handed_back", "{result}");
    assert_eq!(result["reason"], "LOGIN_PAGE");
    assert_eq!(result["actions"], json!([]));
    assert_eq!(
        s.model.seen.lock().len(),
        0,
        "structural: no evaluation needed"
    );
    assert_eq!(s.server.count("ap-typed") + s.server.count("signin"), 0);

    s.tab.navigate(&s.server.url("/p/apconsent")).unwrap();
    *s.model.script.lock() = [("press button \"Accept all\"", None)]
        .into_iter()
        .collect();
    let result = s.run(json!({"goal": "search the shop"}));
    assert_eq!(result["state"], "handed_back", "{result}");
    assert_eq!(result["reason"], "CONSENT_BANNER");
    assert_eq!(result["actions"], json!([]));
    assert_eq!(
        s.server.wait_count("accept", 0),
        0,
        "the banner is the person's"
    );
    let seen = s.seen();
    // The page evidence reached the model inside the untrusted envelope only.
    assert!(seen.contains("<untrusted-page-content>"));
}

// R-AUTO: typing only on the tab's starting origin — a field inside a cross-origin frame is
// refused, and so is a field on another origin the run navigated to (the click itself runs).
#[test]
fn r_auto_it_never_types_on_another_origin() {
    let s = setup(
        "/p/apxorigin",
        &[("fill textbox \"Cross name\"", Some("name"))],
    );
    s.wait_control("Cross name");
    let result = s.run(json!({"goal": "enter the name", "values": {"name": "Ann"}}));
    assert_eq!(result["state"], "handed_back", "{result}");
    assert_eq!(result["reason"], "FOREIGN_ORIGIN");
    assert_eq!(result["actions"], json!([]));
    assert_eq!(s.server.wait_count("frame-typed", 0), 0);

    *s.model.script.lock() = [
        ("press link \"Partner site\"", None),
        ("fill textbox \"Away name\"", Some("name")),
    ]
    .into_iter()
    .collect();
    let result =
        s.run(json!({"goal": "go to the partner and enter the name", "values": {"name": "Ann"}}));
    assert_eq!(result["state"], "handed_back", "{result}");
    assert_eq!(result["reason"], "FOREIGN_ORIGIN");
    assert_eq!(
        result["actions"].as_array().unwrap().len(),
        1,
        "the link was pressed"
    );
    assert_eq!(s.server.count("load:apaway"), 1);
    assert_eq!(
        s.server.wait_count("away-typed", 0),
        0,
        "nothing typed away"
    );
    assert_eq!(s.server.count("home-typed"), 0);
}

// R-AUTO: the same click again while URL and title stay the same stops `stuck` before it is
// sent a second time.
#[test]
fn r_auto_a_button_that_does_nothing_stops_stuck() {
    let s = setup(
        "/p/apstuck",
        &[
            ("press button \"Do nothing\"", None),
            ("press button \"Do nothing\"", None),
            ("press button \"Do nothing\"", None),
        ],
    );
    let result = s.run(json!({"goal": "make something happen"}));
    assert_eq!(result["state"], "stuck", "{result}");
    assert_eq!(result["reason"], "STUCK");
    assert_eq!(result["steps"], 2);
    assert_eq!(
        s.server.wait_count("nothing", 1),
        1,
        "pressed once, not twice"
    );
    let lines = progress(&result);
    assert!(lines.last().unwrap().contains("stuck"), "{lines:?}");
}

// R-DEV-TOOLS, R-AUTO: the tool is listed (tenth) and served only when Jev is configured;
// the agent tools carry it too; its arguments are checked before anything is sent.
#[test]
fn r_auto_the_tool_is_the_tenth_only_with_jev() {
    let off = builder()
        .config(Config::from_json_str("{}").unwrap())
        .build();
    assert_eq!(
        off.gw
            .device_tool_definitions(ToolFormat::Mcp)
            .as_array()
            .unwrap()
            .len(),
        9
    );
    assert_eq!(
        off.gw
            .agent_tools(ToolFormat::Mcp)
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let refused = off.gw.call_tool(&ToolCall::new(
        "alice",
        "conv-1",
        "browser_autopilot",
        json!({"goal": "x"}),
    ));
    assert_eq!(refused.error_code(), Some("UNKNOWN_TOOL"));

    let on = builder()
        .config(Config::from_json_str(CALLBACK).unwrap())
        .build();
    let tools = on.gw.device_tool_definitions(ToolFormat::OpenAi);
    assert_eq!(tools.as_array().unwrap().len(), 10);
    assert_eq!(tools[9]["function"]["name"], "browser_autopilot");
    let agent = on.gw.agent_tools(ToolFormat::Mcp);
    assert_eq!(agent.as_array().unwrap().len(), 11);
    assert_eq!(agent[10]["name"], "browser_autopilot");
    let bad = on.gw.call_tool(&ToolCall::new(
        "alice",
        "conv-1",
        "browser_autopilot",
        json!({"goal": "x", "values": {"pin": 1234}}),
    ));
    assert_eq!(bad.error_code(), Some("INVALID_TOOL_ARGUMENTS"));
    let offline = on.gw.call_tool(&ToolCall::new(
        "alice",
        "conv-1",
        "browser_autopilot",
        json!({"goal": "x"}),
    ));
    assert_eq!(offline.error_code(), Some("DEVICE_NOT_PAIRED"));
    // Through the agent tools, for the owner's agent.
    let owner = TaskOwner::new("assistant", "alice", "conv-1");
    let e = on
        .gw
        .call_agent_tool(&owner, "browser_autopilot", r#"{"goal":"x"}"#)
        .unwrap_err();
    assert_eq!(e.code(), "DEVICE_NOT_PAIRED");
}

// Issue 26 item 8: the same loop as a local task's first round (`SpawnRequest::autopilot`, the
// `gw.tasks` spawn option): the form is filled and submitted once, every action is in the
// task's receipts (checkpointed before it ran, like any task action), the model never sees a
// value, and the model's "done" is a completion candidate waiting for a verification.
#[test]
fn r_auto_a_local_tasks_autopilot_round_fills_the_form_with_the_tasks_receipts() {
    use jevgate::task::{AutopilotRequest, SpawnRequest, TaskState};
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{"gateway":{"jev":{"enabled":true,"provider":"callback","features":{"browserTasks":{"enabled":true}}}}}"#;
    let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(
        dir.path(),
        Config::from_json_str(config).unwrap(),
    ))
    .unwrap();
    let (callback, model) = model(&[
        ("fill textbox \"First name\"", Some("first")),
        ("fill textbox \"Email\"", Some("email")),
        ("press button \"Submit\"", None),
        ("done", None),
    ]);
    gw.set_jev_callback(Some(callback));
    let owner = TaskOwner::new("assistant", "alice", "conv-ap");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let request = SpawnRequest {
        autopilot: Some(AutopilotRequest {
            goal: "sign up for the news with the first name and the email".into(),
            values: vec![
                ("first".into(), "Zelda-VALUE-1".into()),
                ("email".into(), "zelda.VALUE@mail.example".into()),
            ],
            max_steps: None,
        }),
        start_url: Some(server.url("/p/apform")),
        progress: Some(Arc::new(move |p: &jevgate::task::TaskProgress| {
            sink.lock().push(p.line.clone())
        })),
        ..SpawnRequest::default()
    };
    let id = gw.tasks().spawn(&owner, request).unwrap();
    let s = gw
        .tasks()
        .wait(&owner, &id, Duration::from_secs(90))
        .unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("COMPLETION_CANDIDATE"), "{s:#?}");
    assert_eq!(server.wait_count("submitted", 1), 1, "submitted once");
    assert_eq!(
        server.count("values:Zelda-VALUE-1|zelda.VALUE@mail.example"),
        1
    );
    let receipts = gw.tasks().receipts(&owner, &id).unwrap();
    let ops: Vec<(String, String)> = receipts
        .iter()
        .flat_map(|r| r.operations.iter())
        .map(|o| (o.tool.clone(), o.status.clone()))
        .collect();
    assert_eq!(
        ops,
        [
            ("tab_navigate", "done"),
            ("page_type", "done"),
            ("page_type", "done"),
            ("page_click", "done")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
        "{receipts:#?}"
    );
    assert_eq!(s.actions, 4, "the start page and three autopilot actions");
    assert_eq!(s.evaluations, 4, "one decision per action, and done");
    assert!(lines
        .lock()
        .iter()
        .any(|l| l.starts_with("Autopilot: sign up for the news")));
    let seen = model.seen.lock().join("\n");
    for secret in ["Zelda-VALUE-1", "zelda.VALUE@mail.example"] {
        assert!(!seen.contains(secret), "the model saw {secret}");
        assert!(
            !format!("{s:?}").contains(secret),
            "the status shows {secret}"
        );
    }
    // Bad autopilot arguments are refused before anything is stored.
    let bad = SpawnRequest::from_json(r#"{"autopilot": {"goal": "x", "values": {"a": 1}}}"#);
    assert_eq!(bad.unwrap_err().code(), "INVALID_TOOL_ARGUMENTS");
    gw.close();
}

// Issue 22 item 5 (R-AUTO, R-DEV-CHAN): a worker that asked for `status` frames — the
// extension, whose popup shows it — is told each step's line `Autopilot: <goal> — <step>` as
// the run reaches it, before the step's action arrives, and `null` once the run ended. The
// values stay out of every frame.
#[test]
fn r_auto_each_step_line_reaches_a_status_worker_and_clears_when_the_run_ends() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use support::worker::{self, Ws};
    use tungstenite::Message;

    let t = builder()
        .config(Config::from_json_str(CALLBACK).unwrap())
        .channel()
        .build();
    let (callback, _model) = model(&[
        ("fill textbox \"First name\"", Some("first")),
        ("fill textbox \"Email\"", Some("email")),
        ("press button \"Submit\"", None),
        ("done", None),
    ]);
    t.gw.set_jev_callback(Some(callback));
    let alice = t.pair("alice", "alice-laptop");
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    assert!(tab.navigate(&server.url("/p/apform")).unwrap().settled);

    // A raw protocol-2 worker asking for `status`, serving commands from the tab. It records
    // every frame in order: `status` lines and the tools of the commands it ran.
    let mut ws: Ws = worker::open(t.channel().local_addr(), worker::PATH, None).unwrap();
    let auth = json!({"type": "authenticate", "protocol": 2, "features": ["status"],
        "authorization": format!("Device {}", alice.token_text())});
    ws.send(Message::text(auth.to_string())).unwrap();
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let serve = {
        let (seen, done) = (Arc::clone(&seen), Arc::clone(&done));
        let tools = BrowserTools::new(Arc::new(tab.clone()));
        std::thread::spawn(move || loop {
            let text = match ws.read() {
                Ok(Message::Text(t)) => t.to_string(),
                Ok(Message::Close(_)) => return,
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    if done.load(Ordering::Acquire) {
                        return;
                    }
                    continue;
                }
                Err(_) => return,
            };
            let frame: Value = serde_json::from_str(&text).unwrap();
            seen.lock().push(frame.clone());
            if frame["type"] != "command" {
                continue;
            }
            let id = frame["id"].as_str().unwrap();
            let answer = match tools.execute(
                frame["tool"].as_str().unwrap(),
                &frame["args"],
                Duration::from_secs(30),
                &CancelToken::new(),
            ) {
                Ok(result) => {
                    json!({"type": "result", "id": id, "success": true, "result": result})
                }
                Err(f) => json!({"type": "result", "id": id, "success": false,
                    "errorCode": f.code, "message": f.message}),
            };
            ws.send(Message::text(answer.to_string())).unwrap();
        })
    };
    let end = Instant::now() + Duration::from_secs(5);
    while !t.gw.devices("alice").unwrap()[0].online {
        assert!(Instant::now() < end, "the raw worker never came online");
        std::thread::yield_now();
    }

    let answer = t.gw.call_tool(&ToolCall::new(
        "alice",
        "conv-1",
        "browser_autopilot",
        json!({"goal": "sign up with the first name and the email",
               "values": {"first": "Zelda-VALUE-1", "email": "zelda.VALUE@mail.example"}}),
    ));
    assert!(answer.is_success(), "{:?}", answer.to_json());
    let result = answer.result().unwrap().clone();
    assert_eq!(result["state"], "done", "{result}");
    let lines = progress(&result);
    // The last status (autopilot null) arrives once the run ended; wait for it, bounded.
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let frames = seen.lock().clone();
        let last_line = frames
            .iter()
            .rfind(|f| f["type"] == "status")
            .map(|f| f["autopilot"].clone());
        if frames.iter().any(|f| f["autopilot"].is_string()) && last_line == Some(Value::Null) {
            break;
        }
        assert!(
            Instant::now() < end,
            "no cleared line after the run: {frames:?}"
        );
        std::thread::yield_now();
    }
    done.store(true, Ordering::Release);
    let frames = seen.lock().clone();
    // Every line of the run was shown, in order, and each action's line before the action.
    let shown: Vec<&str> =
        frames
            .iter()
            .filter_map(|f| f["autopilot"].as_str())
            .fold(Vec::new(), |mut v, l| {
                if v.last() != Some(&l) {
                    v.push(l);
                }
                v
            });
    // Each step's line that has an action was shown, in order; the last line (`— done`, no
    // action after it) may be overtaken by the run's end, which clears it.
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert!(shown.len() + 1 >= lines.len(), "{shown:?} of {lines:?}");
    assert_eq!(shown[..], lines[..shown.len()], "in order");
    let first_type = frames
        .iter()
        .position(|f| f["tool"] == "page_type")
        .unwrap();
    let first_line = frames
        .iter()
        .position(|f| f["autopilot"] == lines[0])
        .unwrap();
    assert!(first_line < first_type, "the line before its action");
    for f in &frames {
        if f["type"] == "status" {
            assert!(f["controlled"].is_boolean(), "{f}");
            let s = f.to_string();
            assert!(!s.contains("Zelda") && !s.contains("VALUE"), "{s}");
        }
    }
    t.gw.close();
    serve.join().unwrap();
    let _ = tab.close();
}

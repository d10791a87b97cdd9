//! Issue 26 items 3 and 4 (seed 003 "Read requests", "Agent hand-off when nothing ran"): a
//! single direct command of the person's, under their control, whose decision is Jev's is
//! offered `read_request` and `unclear`. A read request dispatches nothing: its control receipt
//! is `needs_agent` / `READ_REQUEST`, status says so (`needsAgent`), the progress callback gets
//! the code, and every task mutation the agent sends is `READ_REQUEST_ONLY` until the person's
//! next command settles (reads stay allowed). A command that ends with nothing dispatched for
//! any other reason — except the outcomes that are their own answer — is handed to the agent
//! (`AGENT_HANDOFF`): the agent may send exactly one `task_update` at the revision it settled
//! at, run as the person's next direct command with the impact check; anything else is
//! `AGENT_HANDOFF_ONE_COMMAND`, a second update `AGENT_HANDOFF_USED`, and one sent after the
//! person's newer command `REVISION_CONFLICT`.
//!
//! An in-memory page (`Desk`) through `spawn_with_backend`, the agent through
//! `call_agent_tool`, and a callback model that reads a command ending in "?" as a read request.

mod support;

use jevgate::task::{SpawnRequest, TaskOwner, TaskState, TaskStatus};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::desk::Desk;

const WAIT: Duration = Duration::from_secs(30);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn open(dir: &std::path::Path) -> Gateway {
    let config = Config::from_json_str(
        &json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
            "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}})
        .to_string(),
    )
    .unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir, config)).unwrap();
    gw.set_jev_callback(Some(support::desk::picks_reading()));
    gw
}

type Lines = Arc<Mutex<Vec<(String, String)>>>;

fn session(gw: &Gateway, desk: &Arc<Desk>) -> (String, Lines) {
    let lines: Lines = Arc::default();
    let sink = lines.clone();
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    request.progress = Some(Arc::new(move |p: &jevgate::task::TaskProgress| {
        sink.lock()
            .unwrap()
            .push((p.reason.clone(), p.line.clone()))
    }));
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, desk.clone())
        .unwrap();
    settled(gw, &id);
    (id, lines)
}

fn settled(gw: &Gateway, id: &str) -> TaskStatus {
    let s = gw.tasks().wait(&owner(), id, WAIT).unwrap();
    assert!(!s.state.is_busy(), "{s:#?}");
    s
}

fn agent(gw: &Gateway, tool: &str, args: Value) -> jevgate::Result<Value> {
    gw.call_agent_tool(&owner(), tool, &args.to_string())
}

fn receipt(s: &TaskStatus, id: &str) -> (String, Option<String>) {
    let c = s.commands.iter().find(|c| c.command_id == id).unwrap();
    (c.state.clone(), c.reason.clone())
}

// Item 3: a read request dispatches nothing, goes to the agent, and its turn is read-only until
// the person's next command settles.
#[test]
fn r_run_a_read_request_goes_to_the_agent_whose_turn_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let (id, lines) = session(&gw, &desk);
    let asked = gw
        .tasks()
        .command(&owner(), &id, "what does this page say?")
        .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(
        receipt(&s, &asked.command_id),
        ("needs_agent".into(), Some("READ_REQUEST".into()))
    );
    let turn = s.needs_agent.clone().expect("needsAgent");
    assert_eq!(turn.code, "READ_REQUEST");
    assert_eq!(turn.command_id.as_deref(), Some(asked.command_id.as_str()));
    assert!(desk.clicks.lock().is_empty(), "nothing dispatched");
    assert!(lines
        .lock()
        .unwrap()
        .iter()
        .any(|(code, _)| code == "READ_REQUEST"));
    // Reads are allowed; every mutation is READ_REQUEST_ONLY.
    agent(&gw, "task_status", json!({"taskId": id})).unwrap();
    for (tool, args) in [
        (
            "task_command",
            json!({"taskId": id, "command": "press Alpha"}),
        ),
        (
            "task_update",
            json!({"taskId": id, "expectedRevision": s.revision, "goal": "press Alpha"}),
        ),
        ("task_cancel", json!({"taskId": id})),
        (
            "task_answer",
            json!({"taskId": id, "field": "Address", "text": "x"}),
        ),
    ] {
        let e = agent(&gw, tool, args).unwrap_err();
        assert_eq!(e.code(), "READ_REQUEST_ONLY", "{tool}: {e}");
    }
    assert!(desk.clicks.lock().is_empty());
    // The person's next command settles: the agent's turn is over.
    gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
    let s = settled(&gw, &id);
    assert!(s.needs_agent.is_none(), "{s:#?}");
    assert_eq!(desk.clicked("Bravo"), 1);
    agent(
        &gw,
        "task_update",
        json!({"taskId": id, "expectedRevision": s.revision, "goal": "press Alpha"}),
    )
    .unwrap();
    settled(&gw, &id);
    assert_eq!(desk.clicked("Alpha"), 1);
    gw.close();
}

// Item 4: a command that did nothing is handed to the agent; its one update runs as the
// person's next direct command (checked for impact), a second is refused, and so is anything
// else; own-answer outcomes and step lists never hand off.
#[test]
fn r_run_a_handoff_takes_one_update_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let (id, _) = session(&gw, &desk);
    let said = gw
        .tasks()
        .command(&owner(), &id, "press the shiny one")
        .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(
        receipt(&s, &said.command_id),
        ("needs_agent".into(), Some("AGENT_HANDOFF".into()))
    );
    let turn = s.needs_agent.clone().expect("needsAgent");
    assert_eq!((turn.code.as_str(), turn.used), ("AGENT_HANDOFF", false));
    assert_eq!(turn.revision, s.revision);
    for (tool, args) in [
        (
            "task_command",
            json!({"taskId": id, "command": "press Alpha"}),
        ),
        ("task_cancel", json!({"taskId": id})),
    ] {
        let e = agent(&gw, tool, args).unwrap_err();
        assert_eq!(e.code(), "AGENT_HANDOFF_ONE_COMMAND", "{tool}: {e}");
    }
    // The one update: run as the person's direct command, its impact asked (Alpha: routine).
    let updated = agent(
        &gw,
        "task_update",
        json!({"taskId": id, "expectedRevision": turn.revision, "goal": "press Alpha"}),
    )
    .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(desk.clicked("Alpha"), 1, "{s:#?}");
    assert!(s.needs_agent.as_ref().is_some_and(|t| t.used), "{s:#?}");
    let rev = updated["revision"].as_u64().unwrap();
    let e = agent(
        &gw,
        "task_update",
        json!({"taskId": id, "expectedRevision": rev, "goal": "press Bravo"}),
    )
    .unwrap_err();
    assert_eq!(e.code(), "AGENT_HANDOFF_USED", "{e}");
    assert_eq!(desk.clicked("Bravo"), 0);

    // A newer command of the person's first: the agent's late update conflicts.
    gw.tasks()
        .command(&owner(), &id, "press the shiny one")
        .unwrap();
    let s = settled(&gw, &id);
    let stale = s.needs_agent.clone().unwrap().revision;
    gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
    settled(&gw, &id);
    let e = agent(
        &gw,
        "task_update",
        json!({"taskId": id, "expectedRevision": stale, "goal": "press Alpha"}),
    )
    .unwrap_err();
    assert_eq!(e.code(), "REVISION_CONFLICT", "{e}");

    // An outcome that is its own answer, and a step list, never hand off.
    let own = gw.tasks().command(&owner(), &id, "เปิด tab ใหม่").unwrap();
    let list = gw
        .tasks()
        .command(&owner(), &id, "1. press the shiny one\n2. press Alpha")
        .unwrap();
    let s = settled(&gw, &id);
    for (what, c) in [("a new tab", &own.command_id), ("a list", &list.command_id)] {
        let r = receipt(&s, c);
        assert_ne!(r.0, "needs_agent", "{what}: {r:?} {:?}", s.action_log);
    }
    assert!(s.needs_agent.is_none(), "{s:#?}");
    gw.close();
}

// Item 4: the agent's hand-off command on a high-impact control asks the person first.
#[test]
fn r_run_a_handoff_on_a_high_impact_control_asks_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::with(support::desk::Layout {
        controls: vec![
            jevgate::observation::Control::new("e0", "button", "Delete account"),
            jevgate::observation::Control::new("e1", "button", "Alpha"),
        ],
        ..support::desk::Layout::default()
    });
    let (id, _) = session(&gw, &desk);
    gw.tasks().command(&owner(), &id, "get rid of it").unwrap();
    let s = settled(&gw, &id);
    let turn = s.needs_agent.clone().expect("handed off");
    agent(
        &gw,
        "task_update",
        json!({"taskId": id, "expectedRevision": turn.revision, "goal": "press Delete account"}),
    )
    .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_REQUIRED"), "{s:#?}");
    assert_eq!(desk.clicked("Delete account"), 0);
    gw.close();
}

/// A gateway whose Jev decisions come from `model` and whose text helper
/// (`gateway.jev.thinking`) is the loopback `server` (OpenAI chat wire format).
fn with_helper(
    dir: &std::path::Path,
    server: &support::jev_server::TestServer,
    model: jevgate::jev::JevCallback,
) -> Gateway {
    let var = format!("JEVGATE_TEST_TEXT_HELPER_{}", std::process::id());
    std::env::set_var(&var, "k");
    let config = Config::from_json_str(
        &json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
            "thinking": {"baseUrl": format!("{}/v1", server.base()), "model": "small",
                "apiKeyEnv": var},
            "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}})
        .to_string(),
    )
    .unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir, config)).unwrap();
    gw.set_jev_callback(Some(model));
    gw
}

/// A model that answers the control question with `pick` (probability 1, confidence `conf`)
/// whenever that option is offered, else like the desk's model.
fn choosing(pick: &'static str, conf: f64) -> jevgate::jev::JevCallback {
    let picks = support::desk::picks();
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let opts = &v["questions"]["control"]["criteria"];
        let key = match opts.as_object() {
            Some(o) if o.contains_key(pick) => pick.to_string(),
            Some(o) if pick == "field" => o
                .iter()
                .find(|(_, d)| d.as_str().unwrap_or("").contains("Address"))
                .map(|(k, _)| k.clone())
                .unwrap(),
            _ => return picks(req),
        };
        let probs: serde_json::Map<String, Value> = opts
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (k.clone(), json!(if *k == key { 1.0 } else { 0.0 })))
            .collect();
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": {"control": {"type": "choice", "choice": key,
                "probabilities": probs, "confidence": conf}}})
            .to_string()
            .into_bytes(),
        )
    })
}

// Item 7: a Jev-decided text entry types the value the text helper resolves; the helper sees
// the command and the page's origin only — never its title, path, query or text.
#[test]
fn r_run_the_text_helper_fills_a_field_from_the_command_only() {
    use support::jev_server::{Behaviour, TestServer};
    let server = TestServer::start();
    server.script([Behaviour::Think(r#"{"text":"Chiang Mai"}"#.into())]);
    let dir = tempfile::tempdir().unwrap();
    let gw = with_helper(dir.path(), &server, choosing("field", 0.9));
    let desk = Desk::with(support::desk::Layout {
        url: "https://desk.example/secret-path?token=SECRET-QUERY".into(),
        title: "SECRET-TITLE".into(),
        text: "SECRET-PAGE-TEXT".into(),
        ..support::desk::Layout::default()
    });
    let (id, _) = session(&gw, &desk);
    gw.tasks()
        .command(&owner(), &id, "choose Chiang Mai as the origin")
        .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(*desk.typed.lock(), 1, "{s:#?}");
    assert!(s.needs_agent.is_none(), "{s:#?}");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let sent = seen[0].body.to_string();
    assert!(sent.contains("choose Chiang Mai as the origin"), "{sent}");
    assert!(sent.contains("https://desk.example"), "{sent}");
    for secret in [
        "secret-path",
        "SECRET-QUERY",
        "SECRET-TITLE",
        "SECRET-PAGE-TEXT",
    ] {
        assert!(
            !sent.contains(secret),
            "{secret} reached the text helper: {sent}"
        );
    }
    // Missing information is never invented: no text, nothing typed (handed to the agent).
    server.script([Behaviour::Think(r#"{"text":null}"#.into())]);
    gw.tasks().command(&owner(), &id, "put my city in").unwrap();
    let s = settled(&gw, &id);
    assert_eq!(*desk.typed.lock(), 1, "{s:#?}");
    assert_eq!(
        s.needs_agent.map(|t| t.code).as_deref(),
        Some("AGENT_HANDOFF")
    );
    gw.close();
}

// Item 7: a named site becomes NAVIGATE through the text helper under the model-address rules:
// an address it may not open (an IP literal) is NAVIGATION_UNRESOLVED and nothing is opened;
// an uncertain navigate is LOW_OPERATION_CONFIDENCE; without a text helper it is not offered.
#[test]
fn r_run_a_named_site_goes_through_the_text_helper_and_the_address_rules() {
    use support::jev_server::{Behaviour, TestServer};
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = with_helper(dir.path(), &server, choosing("navigate", 0.9));
    let desk = Desk::new();
    let (id, lines) = session(&gw, &desk);
    server.script([Behaviour::Think(
        r#"{"text":"http://127.0.0.1/admin"}"#.into(),
    )]);
    gw.tasks()
        .command(&owner(), &id, "go to the Yahoo website")
        .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(server.seen().len(), 1, "{s:#?}");
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|(c, _)| c == "AGENT_HANDOFF"),
        "NAVIGATION_UNRESOLVED is handed to the agent"
    );
    assert_eq!(s.reason.as_deref(), Some("NAVIGATION_UNRESOLVED"), "{s:#?}");
    assert_eq!(
        s.needs_agent.map(|t| t.code).as_deref(),
        Some("AGENT_HANDOFF")
    );
    gw.close();

    // Uncertain: LOW_OPERATION_CONFIDENCE, the helper not even asked.
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start();
    let gw = with_helper(dir.path(), &server, choosing("navigate", 0.3));
    let (id, _) = session(&gw, &Desk::new());
    gw.tasks()
        .command(&owner(), &id, "go to the Yahoo website")
        .unwrap();
    settled(&gw, &id);
    assert!(server.seen().is_empty());
    gw.close();

    // No text helper: navigate is not offered at all.
    let dir = tempfile::tempdir().unwrap();
    let offered: Arc<Mutex<Vec<String>>> = Arc::default();
    let gw = open(dir.path());
    let (sink, picks) = (offered.clone(), support::desk::picks());
    gw.set_jev_callback(Some(Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        if let Some(o) = v["questions"]["control"]["criteria"].as_object() {
            sink.lock().unwrap().extend(o.keys().cloned());
        }
        picks(req)
    })));
    let (id, _) = session(&gw, &Desk::new());
    gw.tasks()
        .command(&owner(), &id, "go to the Yahoo website")
        .unwrap();
    settled(&gw, &id);
    let offered = offered.lock().unwrap();
    assert!(offered.contains(&"read_request".to_string()), "{offered:?}");
    assert!(!offered.contains(&"navigate".to_string()), "{offered:?}");
    gw.close();
}

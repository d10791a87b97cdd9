//! Tasks end to end (R-TSK, R-TSK-RCPT, R-RUN): a gateway runs a person's commands on a real
//! headless Chromium over loopback fixture pages that count every real click (and every page
//! load and form submission), with the local evaluator for the decisions — or the deterministic
//! callback model of tests/support/desk.rs where a test needs an exact pick.

mod support;

use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Gateway, GatewayOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::Server;

/// Browser tasks and step lists on (both off by default), the local evaluator.
const CONFIG: &str = support::gateway::TASKS_CONFIG;
const WAIT: Duration = Duration::from_secs(90);

fn gateway(dir: &std::path::Path) -> Gateway {
    Gateway::open(GatewayOptions::new(
        dir,
        Config::from_json_str(CONFIG).unwrap(),
    ))
    .unwrap()
}

/// A gateway whose Jev decisions come from the deterministic callback model
/// ([`support::desk::picks`]: the control the command's last word names).
fn callback_gateway(dir: &std::path::Path) -> Gateway {
    let config = CONFIG.replace("\"provider\":\"local\"", "\"provider\":\"callback\"");
    assert_ne!(config, CONFIG);
    let gw = Gateway::open(GatewayOptions::new(
        dir,
        Config::from_json_str(&config).unwrap(),
    ))
    .unwrap();
    gw.set_jev_callback(Some(support::desk::picks()));
    gw
}

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn lines_sink() -> (Arc<Mutex<Vec<String>>>, jevgate::task::ProgressFn) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    (
        lines,
        Arc::new(move |p: &jevgate::task::TaskProgress| sink.lock().unwrap().push(p.line.clone())),
    )
}

// R-RUN, R-TSK-RCPT: a mixed Thai/English step list runs on a real browser: a search through the
// grammar's fast path, a link chosen by one Jev decision, back, scroll. Every step is done, every
// action has a receipt committed before it ran, and each real click happened exactly once.
#[test]
fn r_run_a_mixed_step_list_runs_with_receipts_and_outcome_lines() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (lines, progress) = lines_sink();
    let mut request =
        SpawnRequest::from_person("1. ค้นหา cats\n2. open Cats result one\n3. กลับ\n4. scroll ลง");
    request.start_url = Some(server.url("/p/taskhome"));
    request.progress = Some(progress);
    let id = gw.tasks().spawn(&owner(), request).unwrap();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let status = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    let lines = lines.lock().unwrap().clone();
    // Every step done is a completion candidate (R-TSK-VER): the task waits for a verification,
    // its browser held, though the spawn did not ask to keep the session open.
    assert_eq!(
        status.state,
        TaskState::WaitingInput,
        "{status:#?}\n{lines:#?}"
    );
    assert_eq!(status.reason.as_deref(), Some("COMPLETION_CANDIDATE"));
    assert!(status.verification.is_none());
    let run = status.step_run.clone().unwrap();
    assert_eq!(run.stop_reason, "ALL_STEPS_DONE", "{run:?}");
    assert_eq!(run.done_parts, ["1.1", "2.1", "3.1", "4.1"]);
    assert_eq!(lines.len(), 5, "start + four steps: {lines:#?}");
    assert!(lines.iter().all(|l| l.starts_with("Done: ")), "{lines:#?}");
    assert!(lines[1].contains("searched in"), "{lines:#?}");
    assert!(lines[2].contains("Cats result one"), "{lines:#?}");
    assert_eq!(status.actions, 5);
    assert_eq!(status.evaluations, 1, "only the link needed a decision");
    assert_eq!(server.wait_count("search", 1), 1);
    assert_eq!(server.wait_count("cats-link", 1), 1);
    assert_eq!(server.count("dogs-link"), 0);
    // The action log shows what each round did, typed text as [text].
    assert_eq!(status.action_log.len(), 5);
    assert!(
        status
            .action_log
            .iter()
            .all(|e| !e.command.contains("cats") || e.command.contains("Cats")),
        "typed text is [text]: {:?}",
        status.action_log
    );
    // Receipts: one request, five operations, each done, tool names only.
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].state, "done");
    assert_eq!(receipts[0].reason.as_deref(), Some("COMPLETION_CANDIDATE"));
    let tools: Vec<&str> = receipts[0]
        .operations
        .iter()
        .map(|o| o.tool.as_str())
        .collect();
    assert_eq!(
        tools,
        [
            "tab_navigate",
            "page_type",
            "page_click",
            "tab_history",
            "page_scroll"
        ]
    );
    assert!(receipts[0].operations.iter().all(|o| o.status == "done"));
    let last = status.last_dispatched_mutation.clone().unwrap();
    assert_eq!(last.tool, "page_scroll");
    // The owner's list has it; another conversation's does not.
    assert_eq!(gw.tasks().list(&owner()).unwrap().len(), 1);
    let other = TaskOwner::new("assistant", "alice", "conv-2");
    assert!(gw.tasks().list(&other).unwrap().is_empty());
    // The parent verifies on fresh evidence of the real page (R-TSK-VER, issue 26 item 6): the
    // task completes, the verification is recorded apart, nothing more reaches the page.
    let evidence = gw.tasks().evidence(&owner(), &id, true).unwrap();
    assert_eq!(evidence.request, 1);
    let verified = gw
        .tasks()
        .verify(
            &owner(),
            &id,
            &jevgate::task::VerifyRequest {
                expected_revision: status.revision,
                expected_request_id: evidence.request,
                evidence_id: evidence.evidence_id.clone(),
                instruction: "the page scrolled down after the Cats result, as the list asked"
                    .into(),
            },
        )
        .unwrap();
    assert_eq!(
        (verified.state, verified.reason.as_deref()),
        (TaskState::Completed, Some("VERIFIED")),
        "{verified:#?}"
    );
    let v = verified.verification.clone().unwrap();
    assert_eq!(
        (v.by.as_str(), v.request, v.evidence_id.as_str()),
        ("parent", 1, evidence.evidence_id.as_str())
    );
    assert_eq!(server.count("cats-link"), 1, "verification never acts");
    assert_eq!(
        gw.tasks().receipts(&owner(), &id).unwrap().len(),
        1,
        "no request ran for it"
    );
    // The browser was let go: fresh evidence has nothing to observe.
    assert_eq!(
        gw.tasks().evidence(&owner(), &id, true).unwrap_err().code(),
        "BROWSER_INSPECTION_UNAVAILABLE"
    );
    gw.close();
}

// R-TSK: every read and write checks the whole owner triple; unknown ids and bad commands are
// clear errors (a list of more than 12 steps is not one: it takes the one-command path,
// tests/task_rules.rs).
#[test]
fn r_tsk_owner_triple_and_bad_input_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let server = Server::start();
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    let id = gw.tasks().spawn(&owner(), request).unwrap();
    for stranger in [
        TaskOwner::new("other-agent", "alice", "conv-1"),
        TaskOwner::new("assistant", "mallory", "conv-1"),
        TaskOwner::new("assistant", "alice", "conv-9"),
    ] {
        let t = gw.tasks();
        assert_eq!(
            t.status(&stranger, &id).unwrap_err().code(),
            "ACCESS_DENIED"
        );
        assert_eq!(
            t.wait(&stranger, &id, Duration::ZERO).unwrap_err().code(),
            "ACCESS_DENIED"
        );
        assert_eq!(
            t.command(&stranger, &id, "scroll down").unwrap_err().code(),
            "ACCESS_DENIED"
        );
        assert_eq!(
            t.cancel(&stranger, &id).unwrap_err().code(),
            "ACCESS_DENIED"
        );
        assert_eq!(
            t.receipts(&stranger, &id).unwrap_err().code(),
            "ACCESS_DENIED"
        );
    }
    let t = gw.tasks();
    assert_eq!(
        t.status(&owner(), "0000").unwrap_err().code(),
        "ACCESS_DENIED"
    );
    assert_eq!(
        t.status(&owner(), &"x".repeat(10_000)).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    let e = t.command(&owner(), &id, "").unwrap_err();
    assert_eq!(
        (e.code(), e.to_string().contains("1 to 4000")),
        ("INVALID_ARGUMENT", true)
    );
    let long = "ก".repeat(4001);
    let e = t.command(&owner(), &id, &long).unwrap_err();
    assert_eq!(e.code(), "INVALID_ARGUMENT");
    assert!(!e.to_string().contains('ก'), "the command is not echoed");
    let bad_owner = TaskOwner::new("", "alice", "conv-1");
    assert_eq!(
        t.spawn(&bad_owner, SpawnRequest::from_person("x"))
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
    let mut bad_url = SpawnRequest::from_person("");
    bad_url.start_url = Some("javascript:alert(1)".into());
    assert_eq!(
        t.spawn(&owner(), bad_url).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    t.cancel(&owner(), &id).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    gw.close();
}

// R-RUN session start and direct commands: an empty goal opens the session (SESSION_READY);
// each command settles with its outcome line and the session waits for the next; a command
// that finds nothing to do is "Not done" and the session goes on; cancel closes it.
#[test]
fn r_run_an_open_session_takes_direct_commands_until_cancelled() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (lines, progress) = lines_sink();
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    request.progress = Some(progress);
    let t = gw.tasks();
    let id = t.spawn(&owner(), request).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("SESSION_READY"));
    assert!(s.outcome.as_deref().unwrap().starts_with("Ready: "));

    t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert!(
        s.outcome
            .as_deref()
            .unwrap()
            .starts_with("Done: pressed \"Charlie"),
        "{s:#?}"
    );
    assert_eq!(server.wait_count("Charlie", 1), 1);

    t.command(&owner(), &id, "scroll up").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput);
    assert_eq!(s.reason.as_deref(), Some("SCROLL_LIMIT"), "{s:#?}");
    assert!(s.outcome.as_deref().unwrap().starts_with("Not done: "));

    t.cancel(&owner(), &id).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("CANCELLED"));
    assert_eq!(
        t.command(&owner(), &id, "press Delta").unwrap_err().code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    let receipts = t.receipts(&owner(), &id).unwrap();
    assert_eq!(receipts.len(), 3, "{receipts:#?}");
    assert_eq!(server.count("Delta"), 0);
    gw.close();
}

// Issue 21 item 4 (R-TSK-CTL, R-RUN) on a real Chromium and a real form: a step list that types
// a value the command does not give stops on a field question (waiting_input, fieldRequest)
// before Submit is pressed; an answer about another field and an answer over 2,000 characters
// are clear errors that change nothing; the answer resumes on the current page — the start URL
// is loaded once, never again — the field gets exactly the answer, and Submit is pressed once.
#[test]
fn r_tsk_ctl_a_field_question_on_a_real_form_is_answered_mid_run() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = callback_gateway(dir.path());
    let t = gw.tasks();
    // "enter my address in Address" gives no text (the grammar's `type X` would type X itself,
    // verbatim: R-RUN), so the field Jev picks needs an answer.
    let mut request = SpawnRequest::from_person("1. enter my address in Address\n2. press Submit");
    request.start_url = Some(server.url("/p/delivery"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    let asked = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(asked.state, TaskState::WaitingInput, "{asked:#?}");
    assert!(
        asked
            .outcome
            .as_deref()
            .is_some_and(|o| o.contains("FIELD_TEXT_REQUIRED")),
        "{asked:#?}"
    );
    let question = asked.field_request.clone().expect("a field question");
    assert_eq!(
        (question.field.as_str(), question.question.as_str()),
        ("Address", "What should go into \"Address\"?")
    );
    assert_eq!(
        server.count("submit"),
        0,
        "Submit pressed before the answer"
    );
    assert_eq!(server.count("load:delivery"), 1);

    // Not asked, too long: refused, and nothing about the task changes.
    let receipts = t.receipts(&owner(), &id).unwrap();
    let e = t.answer(&owner(), &id, "Town", "Springfield").unwrap_err();
    assert_eq!(e.to_string(), "state conflict: FIELD_NOT_ASKED");
    let long = "9".repeat(2001);
    let e = t.answer(&owner(), &id, "Address", &long).unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(
        !e.to_string().contains("9999"),
        "the answer is not echoed: {e}"
    );
    let unchanged = t.status(&owner(), &id).unwrap();
    assert_eq!(
        (
            unchanged.state,
            unchanged.revision,
            unchanged.actions,
            unchanged.field_request.as_ref().map(|q| q.field.as_str())
        ),
        (asked.state, asked.revision, asked.actions, Some("Address")),
        "{unchanged:#?}"
    );
    assert_eq!(t.receipts(&owner(), &id).unwrap(), receipts);
    assert!(unchanged.commands.is_empty(), "{unchanged:#?}");
    assert_eq!(server.count("submit"), 0);

    let answered = t.answer(&owner(), &id, "Address", "12 Main St").unwrap();
    assert!(answered.field_request.is_none(), "{answered:#?}");
    let done = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(done.state, TaskState::WaitingInput, "{done:#?}");
    assert!(done.field_request.is_none(), "{done:#?}");
    assert_eq!(
        done.step_run.as_ref().map(|r| r.stop_reason.as_str()),
        Some("ALL_STEPS_DONE"),
        "{done:#?}"
    );
    assert_eq!(
        server.wait_count("submitted:12 Main St", 1),
        1,
        "Submit pressed once, with the answer: {done:#?}"
    );
    assert_eq!(server.count("submit"), 1, "{done:#?}");
    assert_eq!(
        server.count("load:delivery"),
        1,
        "resumed on the current page: the start URL was not loaded again"
    );
    let navigations = t
        .receipts(&owner(), &id)
        .unwrap()
        .iter()
        .flat_map(|r| r.operations.iter())
        .filter(|o| o.tool == "tab_navigate")
        .count();
    assert_eq!(navigations, 1);
    t.cancel(&owner(), &id).unwrap();
    assert_eq!(
        t.wait(&owner(), &id, WAIT).unwrap().state,
        TaskState::Cancelled
    );
    gw.close();
}

// R-TSK-RCPT, issue 21 item 6: an operation in doubt (a panic right after its dispatch) is
// reconciled from the browser's own record — executed, so resolved without a second press; after
// the gateway restarted the record is gone, the operation stays unknown until a person resolves
// it, and nothing is ever sent again.
#[test]
fn r_tsk_rcpt_reconcile_reads_the_browsers_record_and_a_person_resolves_after_a_restart() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    assert_eq!(
        t.wait(&owner(), &id, WAIT).unwrap().state,
        TaskState::WaitingInput
    );
    jevgate::unstable::set_checkpoint_hook(
        &t,
        Some(Arc::new(|at: &'static str| {
            if at == "after_dispatch" {
                panic!("injected: the process loses the result");
            }
        })),
    );
    t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::NeedsReconciliation, "{s:#?}");
    assert_eq!(server.wait_count("Charlie", 1), 1);
    jevgate::unstable::set_checkpoint_hook(&t, None);
    let s = t.reconcile(&owner(), &id).unwrap();
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::Failed, Some("RECONCILED")),
        "{s:#?}"
    );
    let op = t
        .receipts(&owner(), &id)
        .unwrap()
        .last()
        .unwrap()
        .operations[0]
        .clone();
    assert_eq!(
        (op.status.as_str(), op.resolved_by.as_deref()),
        ("done", Some("operation_status"))
    );
    assert_eq!(
        t.reconcile(&owner(), &id).unwrap_err().to_string(),
        "state conflict: NOTHING_IN_DOUBT"
    );

    // Again, then a restart between: the record died with the browser's process.
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    t.wait(&owner(), &id, WAIT).unwrap();
    jevgate::unstable::set_checkpoint_hook(
        &t,
        Some(Arc::new(|at: &'static str| {
            if at == "after_dispatch" {
                panic!("injected: the process loses the result");
            }
        })),
    );
    t.command(&owner(), &id, "press Charlie").unwrap();
    assert_eq!(
        t.wait(&owner(), &id, WAIT).unwrap().state,
        TaskState::NeedsReconciliation
    );
    assert_eq!(server.wait_count("Charlie", 2), 2);
    gw.close();
    let gw = gateway(dir.path());
    let t = gw.tasks();
    let s = t.reconcile(&owner(), &id).unwrap();
    assert_eq!(
        s.state,
        TaskState::NeedsReconciliation,
        "unknown until a person says: {s:#?}"
    );
    let op = s.last_dispatched_mutation.clone().unwrap();
    assert_eq!(
        t.resolve(&owner(), &id, "no-such-operation", true)
            .unwrap_err()
            .to_string(),
        "state conflict: NOT_IN_DOUBT"
    );
    let s = t.resolve(&owner(), &id, &op.operation_id, true).unwrap();
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::Failed, Some("RECONCILED"))
    );
    let op = t
        .receipts(&owner(), &id)
        .unwrap()
        .last()
        .unwrap()
        .operations[0]
        .clone();
    assert_eq!(op.resolved_by.as_deref(), Some("person"));
    assert_eq!(server.count("Charlie"), 2, "nothing was sent again");
    gw.close();
}

// Issue 21 item 7 (R-TSK-VER), on a real Chromium: recorded evidence shows what the receipt
// kept (no field values), fresh evidence the page now — a plain field's value, never a
// password, card number or one-time code — inside the untrusted envelope, with the browser's
// own record of the receipt's last operation; neither acts on the page. A task whose click is
// in doubt can still be read from its receipts, but its local browser is gone (503), it stays
// in doubt, and the button was pressed once.
#[test]
fn r_tsk_ver_evidence_of_a_real_page_recorded_fresh_and_after_the_browser_is_gone() {
    use support::pages::{SECRET_CARD, SECRET_OTP, SECRET_PASSWORD};
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/sensitive"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    let navigate = s.last_dispatched_mutation.clone().unwrap();
    assert_eq!(navigate.tool, "tab_navigate");
    let receipts = t.receipts(&owner(), &id).unwrap();
    let secrets = [SECRET_PASSWORD, SECRET_CARD, SECRET_OTP];

    let recorded = t.evidence(&owner(), &id, false).unwrap();
    let json = serde_json::to_string(&recorded).unwrap();
    let obs = recorded.observation().unwrap();
    assert_eq!(obs["title"], "Checkout");
    assert!(
        !json.contains("Ann Visible"),
        "a receipt keeps no field value"
    );
    assert!(json.contains("valueChars"));
    assert!(recorded.operation_status.is_none());

    let fresh = t.evidence(&owner(), &id, true).unwrap();
    let json = serde_json::to_string(&fresh).unwrap();
    let env = &fresh.untrusted_content;
    assert_eq!(env["notice"], jevgate::untrusted::UNTRUSTED_NOTICE);
    let controls = env["data"]["controls"].as_array().unwrap();
    let value_of = |name: &str| {
        controls
            .iter()
            .find(|c| c["name"].as_str().is_some_and(|n| n.starts_with(name)))
            .unwrap_or_else(|| panic!("no {name}: {controls:#?}"))
            .get("value")
            .cloned()
    };
    assert_eq!(value_of("Name"), Some("Ann Visible".into()));
    assert_eq!(value_of("Password"), None);
    assert_eq!(value_of("Card number"), None);
    for secret in secrets {
        assert!(!json.contains(secret), "a sensitive value reached evidence");
    }
    let status = fresh.operation_status.clone().unwrap();
    assert_eq!(status.operation_id, navigate.operation_id);
    assert_eq!(status.status, jevgate::browser::OperationState::Executed);
    assert_eq!(
        t.receipts(&owner(), &id).unwrap(),
        receipts,
        "nothing acted"
    );
    assert_eq!(t.status(&owner(), &id).unwrap().actions, s.actions);
    t.cancel(&owner(), &id).unwrap();
    t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(
        t.evidence(&owner(), &id, true).unwrap_err().code(),
        "BROWSER_INSPECTION_UNAVAILABLE",
        "the session's browser closed with it"
    );

    // In doubt: a panic right after the click's dispatch.
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    t.wait(&owner(), &id, WAIT).unwrap();
    jevgate::unstable::set_checkpoint_hook(
        &t,
        Some(Arc::new(|at: &'static str| {
            if at == "after_dispatch" {
                panic!("injected: the process loses the result");
            }
        })),
    );
    t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    jevgate::unstable::set_checkpoint_hook(&t, None);
    assert_eq!(s.state, TaskState::NeedsReconciliation, "{s:#?}");
    assert_eq!(server.wait_count("Charlie", 1), 1);
    let err = t.evidence(&owner(), &id, true).unwrap_err();
    assert_eq!(err.code(), "BROWSER_INSPECTION_UNAVAILABLE");
    assert_eq!(err.http_status(), 503);
    let recorded = t.evidence(&owner(), &id, false).unwrap();
    assert!(recorded.in_doubt);
    assert_eq!(recorded.task_state, TaskState::NeedsReconciliation);
    let last = recorded.last_dispatched_mutation.clone().unwrap();
    assert_eq!(
        (last.tool.as_str(), last.status.as_str()),
        ("page_click", "dispatched"),
        "checkpointed, no result: prepared, not proof"
    );
    let stranger = TaskOwner::new("assistant", "mallory", "conv-1");
    assert_eq!(
        t.evidence(&stranger, &id, false).unwrap_err().code(),
        "BROWSER_EVIDENCE_UNAVAILABLE"
    );
    assert_eq!(
        t.status(&owner(), &id).unwrap().state,
        TaskState::NeedsReconciliation,
        "evidence resolved nothing"
    );
    assert_eq!(server.count("Charlie"), 1, "never pressed again");
    gw.close();
}

// Issue 21 item 3 (R-TSK-CTL, seed 003 "Continuing a browser task"): an open session outlives
// its gateway. Closed while it waited for its next command, it is re-admitted by the next open
// of the data directory — still `waiting_input`, with its revision, controller and action log;
// its browser went with the process, so the next command opens a new one and runs on a fresh
// observation: the start URL is not opened again (Charlie cannot be pressed on a blank page),
// and the action that ran before is never re-sent. Receipts number on. A cancelled session
// stays closed across the next restart.
#[test]
fn r_tsk_ctl_an_open_session_is_readmitted_after_a_restart() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    assert_eq!(
        t.wait(&owner(), &id, WAIT).unwrap().state,
        TaskState::WaitingInput
    );
    t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert!(
        s.outcome.as_deref().unwrap().starts_with("Done: "),
        "{s:#?}"
    );
    assert_eq!(server.wait_count("Charlie", 1), 1);
    let agent = jevgate::task::ControlRequest::from_json(
        &serde_json::json!({
            "id": "00000000-0000-4000-8000-00000000a001",
            "action": "agent",
            "expectedRevision": s.revision,
        })
        .to_string(),
    )
    .unwrap();
    t.control(&owner(), &id, &agent).unwrap();
    let before = t.status(&owner(), &id).unwrap();
    assert_eq!(before.controller, "agent");
    gw.close();

    let gw = gateway(dir.path());
    let t = gw.tasks();
    let s = t.status(&owner(), &id).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "re-admitted: {s:#?}");
    assert_eq!(
        (s.revision, s.controller.as_str(), s.actions, &s.action_log),
        (before.revision, "agent", before.actions, &before.action_log)
    );
    // A new browser: the start URL is not replayed, so there is no Charlie to press.
    let r = t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert!(
        s.outcome.as_deref().unwrap().starts_with("Not done"),
        "{s:#?}"
    );
    assert_eq!(
        t.command_receipt(&owner(), &id, &r.command_id)
            .unwrap()
            .unwrap()
            .state,
        "not_done"
    );
    t.command(&owner(), &id, &format!("open {}", server.url("/p/crash")))
        .unwrap();
    t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert!(
        s.outcome.as_deref().unwrap().starts_with("Done: "),
        "{s:#?}"
    );
    assert_eq!(
        server.wait_count("Charlie", 2),
        2,
        "pressed once more, never re-sent"
    );
    let receipts = t.receipts(&owner(), &id).unwrap();
    let numbers: Vec<u32> = receipts.iter().map(|r| r.request).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5], "{receipts:#?}");
    t.cancel(&owner(), &id).unwrap();
    assert_eq!(
        t.wait(&owner(), &id, WAIT).unwrap().state,
        TaskState::Cancelled
    );
    gw.close();
    let gw = gateway(dir.path());
    let t = gw.tasks();
    assert_eq!(t.status(&owner(), &id).unwrap().state, TaskState::Cancelled);
    assert_eq!(
        t.command(&owner(), &id, "press Charlie")
            .unwrap_err()
            .code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    gw.close();
}

/// The child of the kill test below: an open session that pressed Charlie once, then waits
/// for its next command until the parent SIGKILLs the process. Does nothing unless the parent
/// set the environment.
#[test]
fn child_session_waiting_for_a_command() {
    let (Some(dir), Some(url)) = (
        std::env::var_os("JEVGATE_READMIT_CHILD_DIR"),
        std::env::var("JEVGATE_READMIT_CHILD_URL").ok(),
    ) else {
        return;
    };
    let gw = gateway(std::path::Path::new(&dir));
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person("press Charlie");
    request.start_url = Some(url);
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "CHILD-WAITING {id}");
        let _ = out.flush();
    }
    loop {
        std::thread::park();
    }
}

// Issue 21 item 3 after a crash: a process SIGKILLed while its session waited for the next
// command leaves nothing in doubt, so the next open re-admits the session — the person's next
// command runs on a new browser, and the press before the kill is never repeated.
#[test]
fn r_tsk_ctl_a_waiting_session_is_readmitted_after_a_kill() {
    use std::io::BufRead;
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_session_waiting_for_a_command",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("JEVGATE_READMIT_CHILD_DIR", dir.path())
        .env("JEVGATE_READMIT_CHILD_URL", server.url("/p/crash"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some((_, id)) = line.split_once("CHILD-WAITING ") {
                let _ = tx.send(id.trim().to_string());
            }
        }
    });
    let id = rx.recv_timeout(Duration::from_secs(120));
    child.kill().unwrap();
    child.wait().unwrap();
    let id = id.expect("the child's session waited for a command");
    assert_eq!(server.wait_count("Charlie", 1), 1);

    let gw = gateway(dir.path());
    let t = gw.tasks();
    let s = t.status(&owner(), &id).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "re-admitted: {s:#?}");
    t.command(&owner(), &id, &format!("open {}", server.url("/p/crash")))
        .unwrap();
    t.command(&owner(), &id, "press Charlie").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert!(
        s.outcome.as_deref().unwrap().starts_with("Done: "),
        "{s:#?}"
    );
    assert_eq!(
        server.wait_count("Charlie", 2),
        2,
        "once before the kill, once after"
    );
    assert_eq!(t.receipts(&owner(), &id).unwrap().len(), 3);
    gw.close();
}

// Issue 21 item 3, the queue across a restart: commands a session accepted and had not run yet
// when its process stopped (written here into the file as the stopped process would have left
// them) run after the next open, once each, in the order they were accepted, on the new browser.
#[test]
fn r_tsk_ctl_accepted_commands_run_after_a_restart_in_order() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    gw.close();
    {
        let db = rusqlite::Connection::open(dir.path().join("jevgate.sqlite3")).unwrap();
        for (n, text) in [
            (1, format!("open {}", server.url("/p/crash"))),
            (2, "press Charlie".to_string()),
        ] {
            db.execute(
                "INSERT INTO task_commands (task_id, id, seq, origin, kind, text, revision,
                    state, created_ms, updated_ms)
                 VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM task_commands
                                  WHERE task_id = ?1), 'user', 'command', ?3, ?4,
                         'accepted', 1, 1)",
                rusqlite::params![
                    id,
                    format!("00000000-0000-4000-8000-0000000b000{n}"),
                    text,
                    s.revision + n
                ],
            )
            .unwrap();
        }
    }
    let gw = gateway(dir.path());
    let t = gw.tasks();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert!(
        s.outcome.as_deref().unwrap().starts_with("Done: "),
        "{s:#?}"
    );
    assert_eq!(server.wait_count("Charlie", 1), 1, "pressed once");
    let states: Vec<(String, String)> = s
        .commands
        .iter()
        .map(|c| (c.kind.clone(), c.state.clone()))
        .collect();
    assert_eq!(
        states,
        [
            ("command".to_string(), "done".to_string()),
            ("command".to_string(), "done".to_string())
        ]
    );
    assert_eq!(t.receipts(&owner(), &id).unwrap().len(), 3);
    gw.close();
}

// Issue 26 item 4, R-TSK-CTL: the agent's turn for the person's handed-off command outlives a
// restart — after it, the re-admitted session still takes only the hand-off's one update from
// the agent (a command is AGENT_HANDOFF_ONE_COMMAND, not the plain EXECUTION_DENIED).
#[test]
fn r_tsk_ctl_a_hand_off_outlives_a_restart() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = callback_gateway(dir.path());
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person("");
    request.start_url = Some(server.url("/p/crash"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    t.wait(&owner(), &id, WAIT).unwrap();
    t.command(&owner(), &id, "press Nowhere").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    let turn = s.needs_agent.clone().expect("handed off");
    assert_eq!(turn.code, "AGENT_HANDOFF");
    gw.close();

    let gw = callback_gateway(dir.path());
    let s = gw.tasks().status(&owner(), &id).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "re-admitted: {s:#?}");
    assert_eq!(s.needs_agent.as_ref(), Some(&turn));
    let e = gw
        .call_agent_tool(
            &owner(),
            "task_command",
            &serde_json::json!({"taskId": id, "command": "press Alpha"}).to_string(),
        )
        .unwrap_err();
    assert_eq!(e.code(), "AGENT_HANDOFF_ONE_COMMAND", "{e}");
    let update = |gw: &Gateway| {
        gw.call_agent_tool(
            &owner(),
            "task_update",
            &serde_json::json!({"taskId": id, "expectedRevision": turn.revision,
                "goal": "press Alpha"})
            .to_string(),
        )
    };
    update(&gw).expect("the hand-off's one update");
    gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    gw.close();
    let gw = callback_gateway(dir.path());
    let s = gw.tasks().status(&owner(), &id).unwrap();
    assert!(s.needs_agent.as_ref().is_some_and(|t| t.used), "{s:#?}");
    assert_eq!(update(&gw).unwrap_err().code(), "AGENT_HANDOFF_USED");
    gw.close();
}

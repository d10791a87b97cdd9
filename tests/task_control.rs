//! The task control plane (issue 21, R-TSK-CTL, R-TSK-RCPT): the defects of part 1 and the
//! command model. Every accepted command runs or is listed dropped with its reason; the queue is
//! dropped after a command that needs an answer; a `cancel()` that returned lets no later
//! checkpoint through; a panic after a dispatch leaves the task needing reconciliation; open
//! sessions hold no slot, are bounded and expire on the gateway's clock.
//!
//! An in-memory page (`Desk`, tests/support/desk.rs) through `spawn_with_backend`, a callback
//! "model", a manual clock: exact, and nothing sleeps. A blocking click (the page holds it until
//! the test lets go) makes "a command queued while another runs" deterministic.

mod support;

use jevgate::clock::ManualClock;
use jevgate::task::{SpawnRequest, TaskLimits, TaskOwner, TaskState, TaskStatus};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use support::desk::{picks, Desk};

const WAIT: Duration = Duration::from_secs(60);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn config() -> Config {
    Config::from_json_str(
        &json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
            "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}})
        .to_string(),
    )
    .unwrap()
}

fn open_with(
    dir: &std::path::Path,
    limits: TaskLimits,
    clock: Option<Arc<ManualClock>>,
) -> Gateway {
    let mut options = GatewayOptions::new(dir, config()).with_task_limits(limits);
    if let Some(c) = clock {
        options = options.with_clock(c);
    }
    let gw = Gateway::open(options).unwrap();
    gw.set_jev_callback(Some(picks()));
    gw
}

fn open(dir: &std::path::Path) -> Gateway {
    open_with(dir, TaskLimits::default(), None)
}

fn session(gw: &Gateway, desk: &Arc<Desk>) -> String {
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, desk.clone())
        .unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    id
}

fn settled(gw: &Gateway, id: &str) -> TaskStatus {
    let s = gw.tasks().wait(&owner(), id, WAIT).unwrap();
    assert!(!s.state.is_busy(), "{s:#?}");
    s
}

fn receipt<'a>(s: &'a TaskStatus, command_id: &str) -> &'a jevgate::task::ControlReceipt {
    s.commands
        .iter()
        .find(|c| c.command_id == command_id)
        .unwrap_or_else(|| panic!("command {command_id} not listed: {s:#?}"))
}

// Defect 3 (R-TSK-CTL "Queue"): a command that needs an answer drops the queue behind it —
// "press Submit" queued behind a field question is never clicked, and is listed dropped with
// the question's reason.
#[test]
fn r_tsk_ctl_a_field_question_drops_the_queue_and_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    // Hold the first command on a click so the next two queue behind it deterministically.
    desk.hold();
    let first = gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    desk.await_click();
    let ask = gw
        .tasks()
        .command(&owner(), &id, "fill in the Address")
        .unwrap();
    let submit = gw.tasks().command(&owner(), &id, "press Submit").unwrap();
    assert_eq!(submit.state, "accepted");
    assert_eq!(gw.tasks().status(&owner(), &id).unwrap().queued_commands, 2);
    desk.release();
    let s = settled(&gw, &id);
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(desk.clicked("Alpha"), 1);
    assert_eq!(desk.clicked("Submit"), 0, "Submit clicked on an empty form");
    assert_eq!(*desk.typed.lock(), 0);
    assert_eq!(receipt(&s, &first.command_id).state, "done");
    // A single direct command missing its text is not a question: it is handed to the agent
    // (issue 26 item 4, seed 003 "The next command always runs"); the queue behind it is
    // dropped for the missing text all the same.
    let a = receipt(&s, &ask.command_id);
    assert_eq!(
        (a.state.as_str(), a.reason.as_deref()),
        ("needs_agent", Some("AGENT_HANDOFF"))
    );
    let d = receipt(&s, &submit.command_id);
    assert_eq!(
        (d.state.as_str(), d.reason.as_deref()),
        ("dropped", Some("FIELD_TEXT_REQUIRED"))
    );
    assert_eq!(d.summary, "press Submit");
    // The typed text of a command never shows in its summary.
    let typed = gw
        .tasks()
        .command(&owner(), &id, "type SECRET-WORDS into Address")
        .unwrap();
    assert!(!typed.summary.contains("SECRET-WORDS"), "{typed:?}");
    settled(&gw, &id);
    assert_eq!(
        gw.tasks()
            .command_receipt(&owner(), &id, &typed.command_id)
            .unwrap()
            .unwrap()
            .state,
        "done"
    );
    gw.close();
}

// Defect 2 (R-TSK-CTL): commands accepted while the round before them ends the task are never
// lost — each is listed dropped with the reason; after the end, `command()` is refused.
#[test]
fn r_tsk_ctl_commands_accepted_before_the_session_ends_are_listed_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    desk.hold();
    gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    desk.await_click();
    let a = gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
    let b = gw.tasks().command(&owner(), &id, "press Submit").unwrap();
    // Jev access goes away: the next decision stops the task (a stop drops the queue).
    gw.reload(Config::from_json_str(r#"{"gateway":{"jev":{"enabled":false}}}"#).unwrap())
        .unwrap();
    desk.release();
    let s = settled(&gw, &id);
    assert!(s.state.is_closed(), "{s:#?}");
    for c in [&a, &b] {
        let r = receipt(&s, &c.command_id);
        assert!(
            r.state == "dropped" || r.state == "not_done",
            "every accepted command is accounted for: {r:?}"
        );
        assert!(r.reason.is_some(), "{r:?}");
    }
    assert_eq!(desk.clicked("Bravo") + desk.clicked("Submit"), 0);
    // Tasks on again: the session itself is what refuses now.
    gw.reload(config()).unwrap();
    assert_eq!(
        gw.tasks()
            .command(&owner(), &id, "press Alpha")
            .unwrap_err()
            .code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    gw.close();
}

// Defect 4 (R-TSK-CTL, R-TSK-RCPT): a `cancel()` that returned lets no later checkpoint of the
// task commit — the hook sees the cancellation land between the decision and the checkpoint,
// and the click never reaches the page.
#[test]
fn r_tsk_ctl_cancel_is_checked_under_the_checkpoint_fence() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    let gw2 = gw.clone();
    let id2 = id.clone();
    // Right before the checkpoint (after the observation and the decision), the owner cancels
    // and `cancel()` returns: nothing may be dispatched after that.
    jevgate::unstable::set_checkpoint_hook(
        &gw.tasks(),
        Some(Arc::new(move |at: &'static str| {
            if at == "before_checkpoint" {
                gw2.tasks().cancel(&owner(), &id2).unwrap();
            }
        })),
    );
    gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    let s = settled(&gw, &id);
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    assert_eq!(
        desk.clicked("Alpha"),
        0,
        "a click was sent after cancel() returned"
    );
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    assert!(
        receipts.iter().all(|r| r.operations.is_empty()),
        "no checkpoint after the cancellation: {receipts:#?}"
    );
    gw.close();
}

// Defect 1 (R-TSK-RCPT): a panic after a dispatch leaves the task `needs_reconciliation` (the
// operation's outcome is unknown), its request `unknown`, and the target let go.
#[test]
fn r_tsk_rcpt_a_panic_after_a_dispatch_needs_reconciliation_and_releases_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    let queued_behind = {
        jevgate::unstable::set_checkpoint_hook(
            &gw.tasks(),
            Some(Arc::new(|at: &'static str| {
                if at == "after_dispatch" {
                    panic!("injected panic after a dispatch");
                }
            })),
        );
        desk.hold();
        gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
        desk.await_click();
        let b = gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
        desk.release();
        b
    };
    let s = settled(&gw, &id);
    assert_eq!(s.state, TaskState::NeedsReconciliation, "{s:#?}");
    assert_eq!(desk.clicked("Alpha"), 1);
    assert_eq!(desk.clicked("Bravo"), 0);
    let r = receipt(&s, &queued_behind.command_id);
    assert_eq!(r.state, "dropped", "{r:?}");
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    let last = receipts.last().unwrap();
    assert_eq!(last.state, "unknown", "{receipts:#?}");
    assert_eq!(last.operations.last().unwrap().status, "dispatched");
    // The session let its target go; the backend is kept only so `reconcile` can ask its record
    // (the desk keeps none: unknown), until a person resolves the operation.
    let s = gw.tasks().reconcile(&owner(), &id).unwrap();
    assert_eq!(s.state, TaskState::NeedsReconciliation);
    let op = last.operations.last().unwrap().operation_id.clone();
    let s = gw.tasks().resolve(&owner(), &id, &op, true).unwrap();
    assert_eq!(s.reason.as_deref(), Some("RECONCILED"));
    assert_eq!(Arc::strong_count(&desk), 1, "the target was not let go");
    gw.close();
}

// R-TSK-CTL "Sessions and bounds": a waiting session holds no slot; a spawn past the
// principal's bound is refused with the oldest session's state; an idle session expires on
// the gateway's clock, closing its target.
#[test]
fn r_tsk_ctl_open_sessions_are_bounded_and_expire_on_the_gateway_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let limits = TaskLimits {
        slots: 1,
        sessions_per_principal: 2,
        ..TaskLimits::default()
    };
    let gw = open_with(dir.path(), limits, Some(clock.clone()));
    let (d1, d2) = (Desk::new(), Desk::new());
    let first = session(&gw, &d1);
    // One slot, and the first session waits: the second still runs.
    let second = session(&gw, &d2);
    let err = gw
        .tasks()
        .spawn_with_backend(&owner(), SpawnRequest::from_person(""), Desk::new())
        .unwrap_err();
    assert_eq!(err.code(), "AUTOMATION_SESSION_EXISTS");
    assert!(err.to_string().contains("waiting_input"), "{err}");
    // Another principal is not affected by alice's bound.
    let bob = TaskOwner::new("assistant", "bob", "conv-9");
    let mut r = SpawnRequest::from_person("");
    r.keep_open = true;
    let bobs = gw.tasks().spawn_with_backend(&bob, r, Desk::new()).unwrap();
    // A round that was done: the session waits 60 minutes; one that failed: 15.
    gw.tasks().command(&owner(), &first, "press Alpha").unwrap();
    settled(&gw, &first);
    gw.tasks()
        .command(&owner(), &second, "press Nothing-Here")
        .unwrap();
    let s = settled(&gw, &second);
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    clock.advance(Duration::from_secs(15 * 60));
    let s2 = settled(&gw, &second);
    assert_eq!(
        (s2.state, s2.reason.as_deref()),
        (TaskState::Failed, Some("SESSION_EXPIRED")),
        "{s2:#?}"
    );
    assert_eq!(
        Arc::strong_count(&d2),
        1,
        "the expired session let its target go"
    );
    let s1 = settled(&gw, &first);
    assert_eq!(s1.state, TaskState::WaitingInput, "{s1:#?}");
    clock.advance(Duration::from_secs(45 * 60));
    let s1 = settled(&gw, &first);
    assert_eq!(
        (s1.state, s1.reason.as_deref()),
        (TaskState::Completed, Some("SESSION_EXPIRED")),
        "{s1:#?}"
    );
    assert_eq!(
        gw.tasks()
            .command(&owner(), &first, "press Alpha")
            .unwrap_err()
            .code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    let s = gw.tasks().wait(&bob, &bobs, WAIT).unwrap();
    assert_eq!(s.reason.as_deref(), Some("SESSION_EXPIRED"));
    // With the two sessions gone, alice may open a new one.
    session(&gw, &Desk::new());
    gw.close();
}

// R-TSK-CTL: spawns past the queued bound wait no more — `TASK_QUEUE_FULL` — while a task
// holds the only slot; the queue at 20 takes no 21st command.
#[test]
fn r_tsk_ctl_queued_spawns_and_commands_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let limits = TaskLimits {
        slots: 1,
        queued_spawns: 3,
        sessions_per_principal: 100,
        ..TaskLimits::default()
    };
    let gw = open_with(dir.path(), limits, None);
    let desk = Desk::new();
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    request.budget.max_steps = 100;
    request.budget.max_evaluations = 100;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, desk.clone())
        .unwrap();
    settled(&gw, &id);
    desk.hold();
    gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    desk.await_click();
    let mut ids = Vec::new();
    for _ in 0..19 {
        ids.push(gw.tasks().command(&owner(), &id, "press Bravo").unwrap());
    }
    assert_eq!(
        gw.tasks().status(&owner(), &id).unwrap().queued_commands,
        19
    );
    ids.push(gw.tasks().command(&owner(), &id, "press Bravo").unwrap());
    assert_eq!(
        gw.tasks()
            .command(&owner(), &id, "press Bravo")
            .unwrap_err()
            .code(),
        "COMMAND_QUEUE_FULL"
    );
    // The only slot runs the held command: spawns wait queued, up to the bound.
    let mut queued = Vec::new();
    for _ in 0..3 {
        queued.push(
            gw.tasks()
                .spawn_with_backend(
                    &owner(),
                    SpawnRequest::from_person("press Alpha"),
                    Desk::new(),
                )
                .unwrap(),
        );
    }
    let s = gw.tasks().status(&owner(), &queued[0]).unwrap();
    assert_eq!(s.state, TaskState::Queued);
    assert_eq!(
        gw.tasks()
            .spawn_with_backend(
                &owner(),
                SpawnRequest::from_person("press Alpha"),
                Desk::new()
            )
            .unwrap_err()
            .code(),
        "TASK_QUEUE_FULL"
    );
    desk.release();
    let s = settled(&gw, &id);
    assert_eq!(desk.clicked("Bravo"), 20, "{s:#?}");
    assert!(ids
        .iter()
        .all(|c| receipt(&s, &c.command_id).state == "done"));
    for q in &queued {
        assert_eq!(settled(&gw, q).state, TaskState::Completed);
    }
    gw.close();
}

fn ctl(action: &str, revision: u32, text: Option<&str>) -> jevgate::task::ControlRequest {
    let mut v = json!({"id": uuid(), "action": action, "expectedRevision": revision});
    if let Some(t) = text {
        v["text"] = json!(t);
    }
    jevgate::task::ControlRequest::from_json(&v.to_string()).unwrap()
}

fn uuid() -> String {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(1);
    format!(
        "00000000-0000-4000-8000-{:012x}",
        N.fetch_add(1, Ordering::SeqCst)
    )
}

// R-TSK-CTL: every error code of the control route, and idempotent replays.
#[test]
fn r_tsk_ctl_control_codes_and_idempotency() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    let t = gw.tasks();
    let rev = t.status(&owner(), &id).unwrap().revision;
    let code = |r: jevgate::Result<TaskStatus>| r.unwrap_err().code();
    // INVALID_INPUT: ids that are not UUIDs, text where none is taken, revise text bounds.
    assert_eq!(
        code(t.control(&owner(), "not-a-uuid", &ctl("pause", rev, None))),
        "INVALID_INPUT"
    );
    let mut bad = ctl("pause", rev, None);
    bad.id = "42".into();
    assert_eq!(code(t.control(&owner(), &id, &bad)), "INVALID_INPUT");
    assert_eq!(
        code(t.control(&owner(), &id, &ctl("pause", rev, Some("x")))),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(t.control(&owner(), &id, &ctl("revise", rev, None))),
        "INVALID_INPUT"
    );
    let long = "a".repeat(4001);
    let e = t
        .control(&owner(), &id, &ctl("revise", rev, Some(&long)))
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(!e.to_string().contains("aaaa"), "never echoed: {e}");
    for json in [
        "[]",
        "{}",
        r#"{"id":"00000000-0000-4000-8000-000000000000","action":"jump","expectedRevision":1}"#,
        r#"{"id":"00000000-0000-4000-8000-000000000000","action":"pause","expectedRevision":-1}"#,
        r#"{"id":"00000000-0000-4000-8000-000000000000","action":"pause","expectedRevision":1,"x":1}"#,
    ] {
        let e = jevgate::task::ControlRequest::from_json(json).unwrap_err();
        assert_eq!(e.code(), "INVALID_INPUT", "{json}");
    }
    // ACCESS_DENIED for another owner, alike for an unknown task.
    let stranger = TaskOwner::new("assistant", "mallory", "conv-1");
    let a = t
        .control(&stranger, &id, &ctl("pause", rev, None))
        .unwrap_err();
    let b = t
        .control(
            &owner(),
            "00000000-0000-4000-8000-00000000ffff",
            &ctl("pause", rev, None),
        )
        .unwrap_err();
    assert_eq!(a.code(), "ACCESS_DENIED");
    assert_eq!(b.code(), a.code());
    // REVISION_CONFLICT: a revision from the future (or the past).
    let e = t
        .control(&owner(), &id, &ctl("pause", rev + 5, None))
        .unwrap_err();
    assert_eq!(e.code(), "REVISION_CONFLICT");
    // STATE_CONFLICT: the user already has control; NOTHING_TO_RESUME.
    assert_eq!(
        code(t.control(&owner(), &id, &ctl("user", rev, None))),
        "STATE_CONFLICT"
    );
    assert_eq!(
        code(t.control(&owner(), &id, &ctl("resume", rev, None))),
        "NOTHING_TO_RESUME"
    );
    // Accepted: agent; the same id and contents answer the same; other contents conflict.
    let agent = ctl("agent", rev, None);
    let s = t.control(&owner(), &id, &agent).unwrap();
    assert_eq!(s.controller, "agent");
    let again = t.control(&owner(), &id, &agent).unwrap();
    assert_eq!(again.controller, "agent");
    assert_eq!(
        again
            .commands
            .iter()
            .filter(|c| c.command_id == agent.id)
            .count(),
        1
    );
    let mut other = agent.clone();
    other.action = jevgate::task::ControlAction::User;
    assert_eq!(
        code(t.control(&owner(), &id, &other)),
        "IDEMPOTENCY_CONFLICT"
    );
    let s = t.control(&owner(), &id, &ctl("user", rev, None)).unwrap();
    assert_eq!(s.controller, "user");
    // A revise moves the revision; the old expectation then conflicts.
    let s = t
        .control(&owner(), &id, &ctl("revise", rev, Some("press Alpha")))
        .unwrap();
    let s2 = settled(&gw, &id);
    assert_eq!(s.revision, rev + 1);
    assert_eq!(desk.clicked("Alpha"), 1, "{s2:#?}");
    assert_eq!(
        code(t.control(&owner(), &id, &ctl("pause", rev, None))),
        "REVISION_CONFLICT"
    );
    // AUTOMATION_SESSION_CLOSED after cancel.
    t.cancel(&owner(), &id).unwrap();
    settled(&gw, &id);
    let rev = t.status(&owner(), &id).unwrap().revision;
    assert_eq!(
        code(t.control(&owner(), &id, &ctl("pause", rev, None))),
        "AUTOMATION_SESSION_CLOSED"
    );
    gw.close();
}

// R-TSK-CTL: pause stops a step run before its next action and drops the queue (listed);
// resume runs the remaining steps verbatim — nothing done is repeated, nothing dropped returns.
#[test]
fn r_tsk_ctl_pause_drops_the_queue_and_resume_continues_the_remaining_steps() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    let t = gw.tasks();
    desk.hold();
    t.command(
        &owner(),
        &id,
        "1. press Alpha\n2. press Bravo\n3. press Submit",
    )
    .unwrap();
    desk.await_click();
    let queued = t.command(&owner(), &id, "press Alpha").unwrap();
    let rev = t.status(&owner(), &id).unwrap().revision;
    let paused = t.control(&owner(), &id, &ctl("pause", rev, None)).unwrap();
    assert_eq!(paused.queued_commands, 0);
    assert_eq!(receipt(&paused, &queued.command_id).state, "dropped");
    assert_eq!(
        receipt(&paused, &queued.command_id).reason.as_deref(),
        Some("PAUSED")
    );
    desk.release();
    let s = settled(&gw, &id);
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!((desk.clicked("Alpha"), desk.clicked("Bravo")), (1, 0));
    assert_eq!(s.step_run.as_ref().unwrap().stop_reason, "PAUSED");
    // A second pause while paused conflicts; resume continues Bravo and Submit.
    assert_eq!(
        t.control(&owner(), &id, &ctl("pause", rev, None))
            .unwrap_err()
            .code(),
        "STATE_CONFLICT"
    );
    t.control(&owner(), &id, &ctl("resume", rev, None)).unwrap();
    let s = settled(&gw, &id);
    assert_eq!(
        (
            desk.clicked("Alpha"),
            desk.clicked("Bravo"),
            desk.clicked("Submit")
        ),
        (1, 1, 1),
        "{s:#?}"
    );
    assert_eq!(
        t.control(&owner(), &id, &ctl("resume", rev, None))
            .unwrap_err()
            .code(),
        "NOTHING_TO_RESUME",
        "a finished command is never replayed"
    );
    // Handing control to the agent drops the queue, listed.
    desk.hold();
    t.command(&owner(), &id, "press Alpha").unwrap();
    desk.await_click();
    let q = t.command(&owner(), &id, "press Bravo").unwrap();
    let rev = t.status(&owner(), &id).unwrap().revision;
    let s = t.control(&owner(), &id, &ctl("agent", rev, None)).unwrap();
    assert_eq!(
        receipt(&s, &q.command_id).reason.as_deref(),
        Some("AGENT_CONTROL")
    );
    desk.release();
    settled(&gw, &id);
    assert_eq!(desk.clicked("Bravo"), 1);
    gw.close();
}

// Bad input: 1,000 control calls in a loop get clear answers and leave nothing behind.
#[test]
fn r_tsk_ctl_a_thousand_control_calls() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let id = session(&gw, &Desk::new());
    let t = gw.tasks();
    let rev = t.status(&owner(), &id).unwrap().revision;
    let mut accepted = 0;
    for i in 0..1000 {
        let action = ["agent", "user", "pause", "resume"][i % 4];
        match t.control(&owner(), &id, &ctl(action, rev, None)) {
            Ok(_) => accepted += 1,
            Err(e) => assert!(
                ["STATE_CONFLICT", "NOTHING_TO_RESUME"].contains(&e.code()),
                "{e}"
            ),
        }
    }
    assert!(accepted >= 500, "{accepted}");
    let s = t.status(&owner(), &id).unwrap();
    assert_eq!(s.commands.len(), jevgate::task::STATUS_COMMANDS);
    gw.close();
}

fn update(gw: &Gateway, id: &str, goal: &str) -> jevgate::Result<TaskStatus> {
    let rev = gw.tasks().status(&owner(), id)?.revision;
    gw.tasks().update(
        &owner(),
        id,
        &jevgate::task::UpdateRequest::from_json(
            &json!({"expectedRevision": rev, "mode": "when_ready", "goal": goal}).to_string(),
        )?,
    )
}

// R-TSK-CTL "Continuing a task": an update runs after the active request settles (pending
// until then, applied after); replans are bounded per chain; a cancelled task stays closed and
// a host's own backend cannot be reopened.
#[test]
fn r_tsk_ctl_update_pending_then_applied_and_replans_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    desk.hold();
    gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    desk.await_click();
    let s = update(&gw, &id, "press Bravo").unwrap();
    assert_eq!(s.pending_revisions, vec![s.revision], "{s:#?}");
    assert!(s.applied_revision < s.revision);
    desk.release();
    let s = settled(&gw, &id);
    assert!(s.pending_revisions.is_empty(), "{s:#?}");
    assert_eq!(s.applied_revision, s.revision);
    assert_eq!((desk.clicked("Alpha"), desk.clicked("Bravo")), (1, 1));
    // A round that changed nothing: three distinct replans, then REPLAN_LIMIT; the same
    // guidance twice is REPLAN_DUPLICATE; the person's command starts a new chain. On a task
    // the agent controls (under the person's, a command that did nothing is handed to the agent
    // instead, which then gets one update: issue 26 item 4).
    let rev = gw.tasks().status(&owner(), &id).unwrap().revision;
    gw.tasks()
        .control(&owner(), &id, &ctl("agent", rev, None))
        .unwrap();
    gw.tasks()
        .command(&owner(), &id, "press Nowhere-0")
        .unwrap();
    settled(&gw, &id);
    for i in 1..=3 {
        update(&gw, &id, &format!("press Nowhere-{i}")).unwrap();
        settled(&gw, &id);
    }
    let e = update(&gw, &id, "press Nowhere-4").unwrap_err();
    assert_eq!(e.to_string(), "state conflict: REPLAN_LIMIT");
    gw.tasks()
        .command(&owner(), &id, "press Nowhere-5")
        .unwrap();
    settled(&gw, &id);
    update(&gw, &id, "press Nowhere-6").unwrap();
    settled(&gw, &id);
    let e = update(&gw, &id, "press   NOWHERE-6").unwrap_err();
    assert_eq!(e.to_string(), "state conflict: REPLAN_DUPLICATE");
    // Bad input and stale revisions.
    let stale = gw.tasks().update(
        &owner(),
        &id,
        &jevgate::task::UpdateRequest::from_json(r#"{"expectedRevision":1,"goal":"press Alpha"}"#)
            .unwrap(),
    );
    assert_eq!(stale.unwrap_err().code(), "REVISION_CONFLICT");
    assert_eq!(update(&gw, &id, "").unwrap_err().code(), "INVALID_INPUT");
    assert_eq!(
        jevgate::task::UpdateRequest::from_json(
            r#"{"expectedRevision":1,"mode":"later","goal":"x"}"#
        )
        .unwrap_err()
        .code(),
        "INVALID_INPUT"
    );
    // The host's own backend went with its session: nothing to reopen.
    let mut r = SpawnRequest::from_person("press Alpha");
    r.keep_open = false;
    let done = gw
        .tasks()
        .spawn_with_backend(&owner(), r, Desk::new())
        .unwrap();
    assert_eq!(settled(&gw, &done).state, TaskState::Completed);
    assert_eq!(
        update(&gw, &done, "press Bravo").unwrap_err().to_string(),
        "state conflict: TARGET_GONE"
    );
    gw.tasks().cancel(&owner(), &id).unwrap();
    settled(&gw, &id);
    assert_eq!(
        update(&gw, &id, "press Alpha").unwrap_err().code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    gw.close();
}

// R-TSK-CTL, issue 21 item 4: a step list that stops on a field question shows it; the queue
// behind it is dropped; the answer continues from the step that asked, on the current page, and
// stays available; an answer to a field nobody asked about is refused; a new command from the
// owner supersedes a pending question.
#[test]
fn r_tsk_ctl_a_field_question_is_answered_and_the_steps_continue() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let id = session(&gw, &desk);
    let t = gw.tasks();
    t.command(
        &owner(),
        &id,
        "1. press Alpha\n2. fill in the Address\n3. press Submit",
    )
    .unwrap();
    let s = settled(&gw, &id);
    let q = s.field_request.clone().expect("a field question");
    assert_eq!(q.field, "Address", "{s:#?}");
    assert_eq!((desk.clicked("Alpha"), desk.clicked("Submit")), (1, 0));
    assert_eq!(
        t.answer(&owner(), &id, "Town", "Springfield")
            .unwrap_err()
            .to_string(),
        "state conflict: FIELD_NOT_ASKED"
    );
    let e = t
        .answer(&owner(), &id, "Address", &"x".repeat(2001))
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    let s = t.answer(&owner(), &id, "Address", "12 Main St").unwrap();
    assert!(s.field_request.is_none());
    let s = settled(&gw, &id);
    assert_eq!(*desk.typed.lock(), 1, "{s:#?}");
    assert_eq!(
        (desk.clicked("Alpha"), desk.clicked("Submit")),
        (1, 1),
        "continued from the step that asked: Alpha not pressed again"
    );
    // The answer stays available: the same field later needs no question.
    t.command(&owner(), &id, "fill in the Address").unwrap();
    let s = settled(&gw, &id);
    assert!(s.field_request.is_none(), "{s:#?}");
    assert_eq!(*desk.typed.lock(), 2);
    // A new command supersedes a pending question.
    let desk2 = Desk::new();
    let id2 = session(&gw, &desk2);
    t.command(&owner(), &id2, "1. fill in the Address\n2. press Submit")
        .unwrap();
    assert!(settled(&gw, &id2).field_request.is_some());
    t.command(&owner(), &id2, "press Bravo").unwrap();
    let s = settled(&gw, &id2);
    assert!(s.field_request.is_none(), "{s:#?}");
    assert_eq!(
        t.answer(&owner(), &id2, "Address", "x")
            .unwrap_err()
            .to_string(),
        "state conflict: FIELD_NOT_ASKED"
    );
    // A single direct command missing its text is not a question.
    t.command(&owner(), &id2, "fill in the Address")
        .unwrap_or_else(|e| panic!("{e}"));
    let s = settled(&gw, &id2);
    assert!(
        s.field_request.is_none() || *desk2.typed.lock() == 0,
        "{s:#?}"
    );
    gw.close();
}

// R-TSK-CTL "Replaced sessions": a spawn for the same device replaces a session that failed
// before any tab action (it ends REPLACED with replacedByTaskId); a session that acted is not
// replaced — AUTOMATION_SESSION_EXISTS with its state, reason and controller; a throw-away
// local profile is never the same target.
#[test]
fn r_tsk_ctl_a_spawn_replaces_only_a_session_that_failed_before_acting() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let t = gw.tasks();
    let device = || {
        let mut r = SpawnRequest::from_person("press Nowhere");
        r.keep_open = true;
        r.target = jevgate::task::TaskTarget::Device {
            device_id: "dev_same".into(),
        };
        r
    };
    // spawn_with_backend records the target without opening it: the same device twice.
    let failed = t
        .spawn_with_backend(&owner(), device(), Desk::new())
        .unwrap();
    let s = settled(&gw, &failed);
    assert_eq!((s.state, s.actions), (TaskState::WaitingInput, 0), "{s:#?}");
    let new = t
        .spawn_with_backend(&owner(), device(), Desk::new())
        .unwrap();
    let old = settled(&gw, &failed);
    assert_eq!(
        (
            old.state,
            old.reason.as_deref(),
            old.replaced_by_task_id.as_deref()
        ),
        (TaskState::Failed, Some("REPLACED"), Some(new.as_str())),
        "{old:#?}"
    );
    // The new one acts: a third spawn for the device is refused, with what it needs to know.
    settled(&gw, &new);
    t.command(&owner(), &new, "press Alpha").unwrap();
    settled(&gw, &new);
    let e = t
        .spawn_with_backend(&owner(), device(), Desk::new())
        .unwrap_err();
    assert_eq!(e.code(), "AUTOMATION_SESSION_EXISTS");
    assert!(
        e.to_string().contains("state: waiting_input")
            && e.to_string().contains("controller: user"),
        "{e}"
    );
    // Another principal's session on "the same" device id is not this principal's target.
    let bob = TaskOwner::new("assistant", "bob", "conv-1");
    let mut r = device();
    r.user_message = None;
    t.spawn_with_backend(&bob, r, Desk::new()).unwrap();
    // Throw-away local profiles never collide.
    for _ in 0..2 {
        let mut r = SpawnRequest::from_person("");
        r.keep_open = true;
        t.spawn_with_backend(&owner(), r, Desk::new()).unwrap();
    }
    gw.close();
}

// Issue 21 item 4: a spawned step list (not kept open) that stops on a field question waits for
// the answer (`waiting_input`, never closed under the question); the answer continues it, and
// once its steps are done it is a completion candidate waiting for its verification.
#[test]
fn r_tsk_ctl_a_spawned_step_list_waits_for_its_field_answer() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path());
    let desk = Desk::new();
    let t = gw.tasks();
    let id = t
        .spawn_with_backend(
            &owner(),
            SpawnRequest::from_person("1. press Alpha\n2. fill in the Address\n3. press Submit"),
            desk.clone(),
        )
        .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(
        s.field_request.as_ref().map(|q| q.field.as_str()),
        Some("Address")
    );
    t.answer(&owner(), &id, "Address", "12 Main St").unwrap();
    let s = settled(&gw, &id);
    assert_eq!(
        (desk.clicked("Alpha"), desk.clicked("Submit")),
        (1, 1),
        "{s:#?}"
    );
    // Every step done: a completion candidate, which waits for its verification (R-TSK-VER).
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::WaitingInput, Some("COMPLETION_CANDIDATE")),
        "{s:#?}"
    );
    assert!(s.field_request.is_none());
    gw.close();
}

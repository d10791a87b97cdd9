//! Verification (issue 26 item 6, R-TSK-VER; seed 003 "Parent verification and recovery"): a
//! step list whose every step is done is a completion candidate — the task waits
//! `waiting_input`, its browser held, until a parent verifies it on fresh evidence of that
//! request (five minutes, tied to the task and the request) or a host verifier answers `true`.
//! Every refusal is a clear code and changes nothing; a verification is recorded apart from the
//! run's own verdict, is idempotent, completes the task and lets its browser go.
//!
//! An in-memory page (`Desk`, tests/support/desk.rs) through `spawn_with_backend`, a callback
//! "model", a manual clock: exact, and nothing sleeps. tests/task_run.rs verifies a real
//! Chromium's candidate.

mod support;

use jevgate::clock::ManualClock;
use jevgate::task::{
    SpawnRequest, TaskOwner, TaskState, TaskStatus, VerifierInput, VerifyRequest, EVIDENCE_TTL,
};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::desk::{picks, Desk};

const WAIT: Duration = Duration::from_secs(60);
const LIST: &str = "1. press Alpha\n2. press Bravo";
const PROOF: &str = "the page counts one click on Alpha and one on Bravo, as the list asked";

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Gateway {
    let config = Config::from_json_str(
        &json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
            "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}})
        .to_string(),
    )
    .unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir, config).with_clock(clock)).unwrap();
    gw.set_jev_callback(Some(picks()));
    gw
}

fn settled(gw: &Gateway, owner: &TaskOwner, id: &str) -> TaskStatus {
    let s = gw.tasks().wait(owner, id, WAIT).unwrap();
    assert!(!s.state.is_busy(), "{s:#?}");
    s
}

/// A spawn whose goal is `LIST` (keepOpen false), settled: a completion candidate.
fn candidate(gw: &Gateway, owner: &TaskOwner, desk: &Arc<Desk>) -> (String, TaskStatus) {
    let id = gw
        .tasks()
        .spawn_with_backend(owner, SpawnRequest::from_person(LIST), desk.clone())
        .unwrap();
    let s = settled(gw, owner, &id);
    (id, s)
}

fn request(s: &TaskStatus, request: u32, evidence_id: &str) -> VerifyRequest {
    VerifyRequest {
        expected_revision: s.revision,
        expected_request_id: request,
        evidence_id: evidence_id.into(),
        instruction: PROOF.into(),
    }
}

fn conflict(e: jevgate::Error) -> String {
    match e {
        jevgate::Error::StateConflict { reason } => reason.to_string(),
        other => other.code().to_string(),
    }
}

// R-TSK-VER: a step list that ends ALL_STEPS_DONE ends its request COMPLETION_CANDIDATE and the
// task waits (keepOpen false), its browser held; the parent's verification on fresh evidence
// completes it (VERIFIED), records {by: parent, request, evidenceId, at} apart from the run's
// verdict, lists the verify command with the instruction's receipt, and lets the browser go.
// The same verification again answers the same status; another is AUTOMATION_SESSION_CLOSED.
#[test]
fn r_tsk_ver_a_candidate_waits_until_the_parent_verifies_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let gw = open(dir.path(), clock.clone());
    let desk = Desk::new();
    let (id, s) = candidate(&gw, &owner(), &desk);
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::WaitingInput, Some("COMPLETION_CANDIDATE")),
        "{s:#?}"
    );
    assert_eq!(s.step_run.as_ref().unwrap().stop_reason, "ALL_STEPS_DONE");
    assert!(s.verification.is_none());
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    assert_eq!(
        (receipts[0].state.as_str(), receipts[0].reason.as_deref()),
        ("done", Some("COMPLETION_CANDIDATE"))
    );
    assert!(Arc::strong_count(&desk) > 1, "the candidate holds its page");
    // Fifteen minutes idle (the limit after a failure) do not end a candidate.
    clock.advance(Duration::from_secs(15 * 60));
    assert_eq!(settled(&gw, &owner(), &id).state, TaskState::WaitingInput);

    let evidence = gw.tasks().evidence(&owner(), &id, true).unwrap();
    assert_eq!(evidence.request, 1);
    let v = gw
        .tasks()
        .verify(&owner(), &id, &request(&s, 1, &evidence.evidence_id))
        .unwrap();
    assert_eq!(
        (v.state, v.reason.as_deref()),
        (TaskState::Completed, Some("VERIFIED")),
        "{v:#?}"
    );
    let rec = v.verification.clone().unwrap();
    assert_eq!(
        (rec.by.as_str(), rec.request, rec.evidence_id.as_str()),
        ("parent", 1, evidence.evidence_id.as_str())
    );
    assert!(rec.at > 0);
    let cmd = v.commands.iter().find(|c| c.kind == "verify").unwrap();
    assert_eq!(
        (
            cmd.origin.as_str(),
            cmd.state.as_str(),
            cmd.reason.as_deref()
        ),
        ("user", "done", Some("VERIFIED"))
    );
    assert_eq!(cmd.summary, "[text]", "the instruction is not shown");
    assert_eq!(holders(&desk), 1, "the page was let go");
    assert_eq!(
        (desk.clicked("Alpha"), desk.clicked("Bravo")),
        (1, 1),
        "verification never acts"
    );
    assert_eq!(gw.tasks().receipts(&owner(), &id).unwrap().len(), 1);
    // Idempotent: the same verification answers the same status.
    let again = gw
        .tasks()
        .verify(&owner(), &id, &request(&s, 1, &evidence.evidence_id))
        .unwrap();
    assert_eq!(
        (again.state, again.verification.clone()),
        (TaskState::Completed, v.verification.clone())
    );
    // Another one after it: the session is over.
    let other = gw.tasks().evidence(&owner(), &id, false).unwrap();
    assert_eq!(
        gw.tasks()
            .verify(&owner(), &id, &request(&s, 1, &other.evidence_id))
            .unwrap_err()
            .code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    assert_eq!(
        gw.tasks()
            .command(&owner(), &id, "press Alpha")
            .unwrap_err()
            .code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    gw.close();
}

// R-TSK-VER: refusals, each a clear code that changes nothing — another owner (ACCESS_DENIED),
// a stale revision, evidence missing, recorded rather than fresh, of another task, of another
// owner, of an earlier request, expired after five minutes on the gateway's clock, a request
// that is not the latest, a bad instruction. The candidate still verifies afterwards.
#[test]
fn r_tsk_ver_refusals_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let gw = open(dir.path(), clock.clone());
    let desk = Desk::new();
    let mut r = SpawnRequest::from_person("");
    r.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), r, desk.clone())
        .unwrap();
    settled(&gw, &owner(), &id);
    gw.tasks().command(&owner(), &id, LIST).unwrap();
    let s = settled(&gw, &owner(), &id);
    assert_eq!(s.reason.as_deref(), Some("COMPLETION_CANDIDATE"), "{s:#?}");
    let seq = gw.tasks().receipts(&owner(), &id).unwrap().len() as u32;
    let fresh = gw.tasks().evidence(&owner(), &id, true).unwrap();
    assert_eq!(fresh.request, seq);
    let t = gw.tasks();
    let refuse =
        |owner: &TaskOwner, req: &VerifyRequest| conflict(t.verify(owner, &id, req).unwrap_err());

    let mallory = TaskOwner::new("assistant", "mallory", "conv-1");
    assert_eq!(
        refuse(&mallory, &request(&s, seq, &fresh.evidence_id)),
        "ACCESS_DENIED"
    );
    let stale = VerifyRequest {
        expected_revision: s.revision - 1,
        ..request(&s, seq, &fresh.evidence_id)
    };
    assert_eq!(refuse(&owner(), &stale), "REVISION_CONFLICT");
    assert_eq!(
        refuse(&owner(), &request(&s, seq, "ev_000000000000000000000000")),
        "EVIDENCE_REQUIRED"
    );
    let recorded = t.evidence(&owner(), &id, false).unwrap();
    assert_eq!(
        refuse(&owner(), &request(&s, seq, &recorded.evidence_id)),
        "EVIDENCE_REQUIRED",
        "recorded evidence is not fresh"
    );
    // Another task's evidence (same owner), another owner's evidence.
    let other_desk = Desk::new();
    let (other, _) = candidate(&gw, &owner(), &other_desk);
    let theirs = t.evidence(&owner(), &other, true).unwrap();
    assert_eq!(theirs.request, 1);
    let mut mine = request(&s, seq, &theirs.evidence_id);
    assert_eq!(refuse(&owner(), &mine), "EVIDENCE_REQUIRED");
    let bob = TaskOwner::new("assistant", "bob", "conv-2");
    let bob_desk = Desk::new();
    let (bobs, _) = candidate(&gw, &bob, &bob_desk);
    let bobs_evidence = t.evidence(&bob, &bobs, true).unwrap();
    mine.evidence_id = bobs_evidence.evidence_id.clone();
    assert_eq!(refuse(&owner(), &mine), "EVIDENCE_REQUIRED");
    // Not the latest request.
    assert_eq!(
        refuse(&owner(), &request(&s, seq - 1, &fresh.evidence_id)),
        "NOT_A_CANDIDATE"
    );
    // Bad input, never echoed.
    let empty = VerifyRequest {
        instruction: " ".into(),
        ..request(&s, seq, &fresh.evidence_id)
    };
    assert_eq!(refuse(&owner(), &empty), "INVALID_INPUT");
    // Five minutes on the gateway's clock: expired.
    clock.advance(EVIDENCE_TTL);
    assert_eq!(
        refuse(&owner(), &request(&s, seq, &fresh.evidence_id)),
        "EVIDENCE_EXPIRED"
    );
    // Nothing changed.
    let after = t.status(&owner(), &id).unwrap();
    assert_eq!(
        (after.state, after.reason.as_deref(), after.revision),
        (
            TaskState::WaitingInput,
            Some("COMPLETION_CANDIDATE"),
            s.revision
        )
    );
    assert!(after.verification.is_none());
    assert!(
        after.commands.iter().all(|c| c.kind != "verify"),
        "{after:#?}"
    );
    // Evidence of an earlier request: a newer candidate needs its own.
    let old = t.evidence(&owner(), &id, true).unwrap();
    t.command(&owner(), &id, LIST).unwrap();
    let s2 = settled(&gw, &owner(), &id);
    assert_eq!(s2.reason.as_deref(), Some("COMPLETION_CANDIDATE"));
    assert_eq!(
        refuse(&owner(), &request(&s2, seq + 1, &old.evidence_id)),
        "EVIDENCE_REQUIRED"
    );
    let new = t.evidence(&owner(), &id, true).unwrap();
    let v = t
        .verify(&owner(), &id, &request(&s2, seq + 1, &new.evidence_id))
        .unwrap();
    assert_eq!(v.reason.as_deref(), Some("VERIFIED"));
    gw.close();
}

// R-TSK-VER: an unverified candidate that idles out (the 60-minute expiry) ends failed,
// SESSION_EXPIRED — never completed.
#[test]
fn r_tsk_ver_an_unverified_candidate_expires_failed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let gw = open(dir.path(), clock.clone());
    let desk = Desk::new();
    let (id, s) = candidate(&gw, &owner(), &desk);
    assert_eq!(s.state, TaskState::WaitingInput);
    clock.advance(Duration::from_secs(60 * 60));
    let s = settled(&gw, &owner(), &id);
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::Failed, Some("SESSION_EXPIRED")),
        "{s:#?}"
    );
    assert_eq!(holders(&desk), 1);
    // A single direct command's Done is unchanged: the session ends with it.
    let d = Desk::new();
    let id = gw
        .tasks()
        .spawn_with_backend(
            &owner(),
            SpawnRequest::from_person("press Alpha"),
            d.clone(),
        )
        .unwrap();
    let s = settled(&gw, &owner(), &id);
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::Completed, Some("COMPLETION_CANDIDATE")),
        "{s:#?}"
    );
    gw.close();
}

// R-TSK-VER: refused after an interrupted run (a pause landed mid-list: INTERRUPTED_RUN) and with
// an operation in doubt (a panic after a dispatch: UNRESOLVED_MUTATION).
#[test]
fn r_tsk_ver_refused_after_an_interrupted_run_and_with_an_operation_in_doubt() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let gw = open(dir.path(), clock);
    let desk = Desk::new();
    let mut r = SpawnRequest::from_person("");
    r.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), r, desk.clone())
        .unwrap();
    settled(&gw, &owner(), &id);
    // A pause lands between the first step's dispatch and the second's checkpoint.
    let once = Arc::new(AtomicBool::new(false));
    let (gw2, id2, once2) = (gw.clone(), id.clone(), once.clone());
    jevgate::unstable::set_checkpoint_hook(
        &gw.tasks(),
        Some(Arc::new(move |at: &'static str| {
            if at == "after_settle" && !once2.swap(true, Ordering::SeqCst) {
                let t = gw2.tasks();
                let rev = t.status(&owner(), &id2).unwrap().revision;
                let pause: jevgate::task::ControlRequest = serde_json::from_value(json!({
                    "id": "1b4e28ba-2fa1-41d2-883f-0016d3cca427",
                    "action": "pause", "expectedRevision": rev}))
                .unwrap();
                t.control(&owner(), &id2, &pause).unwrap();
            }
        })),
    );
    gw.tasks().command(&owner(), &id, LIST).unwrap();
    let s = settled(&gw, &owner(), &id);
    assert_eq!(s.reason.as_deref(), Some("PAUSED"), "{s:#?}");
    assert_eq!((desk.clicked("Alpha"), desk.clicked("Bravo")), (1, 0));
    let seq = gw.tasks().receipts(&owner(), &id).unwrap().len() as u32;
    let e = gw.tasks().evidence(&owner(), &id, true).unwrap();
    assert_eq!(
        conflict(
            gw.tasks()
                .verify(&owner(), &id, &request(&s, seq, &e.evidence_id))
                .unwrap_err()
        ),
        "INTERRUPTED_RUN"
    );
    assert_eq!(
        gw.tasks().status(&owner(), &id).unwrap().state,
        TaskState::WaitingInput
    );

    // A panic after the dispatch: the click's outcome is in doubt.
    jevgate::unstable::set_checkpoint_hook(
        &gw.tasks(),
        Some(Arc::new(|at: &'static str| {
            if at == "after_dispatch" {
                panic!("injected panic after a dispatch");
            }
        })),
    );
    let d = Desk::new();
    let (doubt, s) = candidate(&gw, &owner(), &d);
    assert_eq!(s.state, TaskState::NeedsReconciliation, "{s:#?}");
    let recorded = gw.tasks().evidence(&owner(), &doubt, false).unwrap();
    assert!(recorded.in_doubt);
    assert_eq!(
        conflict(
            gw.tasks()
                .verify(&owner(), &doubt, &request(&s, 1, &recorded.evidence_id))
                .unwrap_err()
        ),
        "UNRESOLVED_MUTATION"
    );
    assert_eq!(
        gw.tasks().status(&owner(), &doubt).unwrap().state,
        TaskState::NeedsReconciliation
    );
    jevgate::unstable::set_checkpoint_hook(&gw.tasks(), None);
    gw.close();
}

// R-TSK-VER: a host verifier must answer a boolean. true completes the task (verification by
// host); false leaves it waiting with VERIFICATION_FAILED (a parent may still verify); "yes"
// and a panic are INVALID_CONTRACT — the task waits with that reason, never as if false.
// The verifier sees the request's text as the goal and fresh evidence inside the envelope.
#[test]
fn r_tsk_ver_a_host_verifier_must_answer_a_boolean() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let gw = open(dir.path(), clock);
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let answer: Arc<Mutex<Value>> = Arc::new(Mutex::new(json!(true)));
    let (seen2, answer2) = (seen.clone(), answer.clone());
    gw.tasks()
        .set_verifier(Some(Arc::new(move |input: &VerifierInput| {
            seen2
                .lock()
                .unwrap()
                .push(serde_json::to_value(input).unwrap());
            let a = answer2.lock().unwrap().clone();
            if a == json!("panic") {
                panic!("a verifier bug");
            }
            a
        })));

    let desk = Desk::new();
    let (id, s) = candidate(&gw, &owner(), &desk);
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::Completed, Some("VERIFIED")),
        "{s:#?}"
    );
    let v = s.verification.clone().unwrap();
    assert_eq!((v.by.as_str(), v.request), ("host", 1));
    assert_eq!(holders(&desk), 1);
    {
        let seen = seen.lock().unwrap();
        let input = &seen[0];
        assert_eq!(input["taskId"], json!(id));
        assert_eq!(input["request"], 1);
        assert_eq!(input["goal"], LIST);
        assert_eq!(input["evidence"]["source"], "fresh");
        assert_eq!(input["evidence"]["evidenceId"], json!(v.evidence_id));
        assert!(input["evidence"]["untrustedContent"]["data"]["controls"].is_array());
    }

    *answer.lock().unwrap() = json!(false);
    let desk = Desk::new();
    let (id, s) = candidate(&gw, &owner(), &desk);
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::WaitingInput, Some("VERIFICATION_FAILED")),
        "{s:#?}"
    );
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    assert_eq!(receipts[0].reason.as_deref(), Some("VERIFICATION_FAILED"));
    assert!(Arc::strong_count(&desk) > 1, "still held");
    // The parent may still verify a failed verification's request.
    let e = gw.tasks().evidence(&owner(), &id, true).unwrap();
    let done = gw
        .tasks()
        .verify(&owner(), &id, &request(&s, 1, &e.evidence_id))
        .unwrap();
    assert_eq!(done.verification.unwrap().by, "parent");

    for bad in [
        json!("yes"),
        json!(null),
        json!({"verified": true}),
        json!("panic"),
    ] {
        *answer.lock().unwrap() = bad.clone();
        let desk = Desk::new();
        let (id, s) = candidate(&gw, &owner(), &desk);
        assert_eq!(
            (s.state, s.reason.as_deref()),
            (TaskState::WaitingInput, Some("INVALID_CONTRACT")),
            "{bad}: {s:#?}"
        );
        assert!(s.verification.is_none());
        // Not a candidate a parent verifies as if it had answered false.
        let e = gw.tasks().evidence(&owner(), &id, true).unwrap();
        assert_eq!(
            conflict(
                gw.tasks()
                    .verify(&owner(), &id, &request(&s, 1, &e.evidence_id))
                    .unwrap_err()
            ),
            "NOT_A_CANDIDATE"
        );
        gw.tasks().cancel(&owner(), &id).unwrap();
    }
    gw.tasks().set_verifier(None);
    gw.close();
}

// R-TSK-VER through the agent tool: task_update mode verify_browser with the fresh evidence's
// request and id verifies (origin agent); verify arguments without the mode are refused.
#[test]
fn r_tsk_ver_the_agent_tool_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new());
    let gw = open(dir.path(), clock);
    let desk = Desk::new();
    let (id, s) = candidate(&gw, &owner(), &desk);
    let status: Value = gw
        .call_agent_tool(
            &owner(),
            "task_status",
            &json!({"taskId": id, "browserEvidence": "fresh"}).to_string(),
        )
        .unwrap();
    let evidence_id = status["browserEvidence"]["evidenceId"].as_str().unwrap();
    let request = status["browserEvidence"]["request"].as_u64().unwrap();
    let wrong = gw
        .call_agent_tool(
            &owner(),
            "task_update",
            &json!({"taskId": id, "expectedRevision": s.revision, "goal": "g",
                "evidenceId": evidence_id})
            .to_string(),
        )
        .unwrap_err();
    assert_eq!(wrong.code(), "INVALID_TOOL_ARGUMENTS");
    let out: Value = gw
        .call_agent_tool(
            &owner(),
            "task_update",
            &json!({"task_id": id, "mode": "verify_browser", "expected_revision": s.revision,
                "expected_request_id": request, "evidence_id": evidence_id,
                "instruction": PROOF})
            .to_string(),
        )
        .unwrap();
    assert_eq!(out["state"], "completed", "{out:#}");
    assert_eq!(out["verification"]["by"], "parent");
    let s = gw.tasks().status(&owner(), &id).unwrap();
    let cmd = s.commands.iter().find(|c| c.kind == "verify").unwrap();
    assert_eq!(cmd.origin, "agent");
    gw.close();
}

/// How many hold `desk` once the task's thread has let it go (it does so right after the task
/// is seen settled: a bounded wait of at most 5 s).
fn holders(desk: &Arc<Desk>) -> usize {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(desk) > 1 && std::time::Instant::now() < until {
        std::thread::yield_now();
    }
    Arc::strong_count(desk)
}

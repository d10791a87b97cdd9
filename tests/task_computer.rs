//! Issue 25 item 1 (the computer task target; seed 003 "Computer Use connectors", "Computer
//! helper contract", "Direct commands"; R-TSK, R-TSK-RCPT, R-RUN, R-LEASE-1): a task with
//! `target: {kind: "computer", deviceId}` drives a paired `jevgate-computer` through the same
//! run loop, receipts and fences as a browser task, under one desktop lease for the run that is
//! released when the task ends (done or cancelled). `features.computerTasks` gates it
//! (`COMPUTER_NOT_ALLOWED`); a device that is not the principal's computer is refused before
//! any lease.
//!
//! A helper's certain refusal (`EXECUTION_FAILED`) stops a command not executed; a failure
//! without a cause code needs reconciliation; the lines say "the computer", never "the
//! browser". Opening a site without one address field uses the helper's `address:focus`
//! (scripted helpers, no desktop).
//!
//! The calculator tests need a real desktop (scripts/desktop, gnome-calculator): skipped with
//! the reason printed, a failure under `JEVGATE_REQUIRE_DESKTOP=1`.

mod support;

use jevgate::task::{TaskOwner, TaskState};
use jevgate::Config;
use std::time::Duration;
use support::computer::{on_computer, pair_computer, COMPUTER_CONFIG};
use support::gateway::{builder, TestGateway};

const WAIT: Duration = Duration::from_secs(30);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn gateway(config: &str) -> TestGateway {
    builder()
        .config(Config::from_json_str(config).unwrap())
        .channel()
        .build()
}

// Issue 25 item 4, seed 003 "Computer Use connectors": features.computerTasks off (or Jev off,
// or the agent not allowed) refuses a computer task with COMPUTER_NOT_ALLOWED before anything
// is stored; browser tasks keep their own gate.
#[test]
fn r_tsk_computer_tasks_off_is_computer_not_allowed() {
    let off = gateway(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"computerTasks":{"enabled":false},"browserTasks":{"enabled":true}}}}}"#,
    );
    let paired = pair_computer(&off, "alice", "desk-1");
    let refused = off
        .gw
        .tasks()
        .spawn(&owner(), on_computer("5", &paired.device))
        .unwrap_err();
    assert_eq!(refused.code(), "COMPUTER_NOT_ALLOWED");
    assert!(off.gw.tasks().list(&owner()).unwrap().is_empty());
    assert_eq!(off.gw.leases().holder(&paired.device), None);
    // Jev off: not allowed either; an agent Jev does not allow: not allowed.
    let no_jev = gateway(r#"{}"#);
    let refused = no_jev
        .gw
        .tasks()
        .spawn(&owner(), on_computer("5", "dev_x"))
        .unwrap_err();
    assert_eq!(refused.code(), "COMPUTER_NOT_ALLOWED");
    let only_other = gateway(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":["other"]}}}"#,
    );
    let refused = only_other
        .gw
        .tasks()
        .spawn(&owner(), on_computer("5", "dev_x"))
        .unwrap_err();
    assert_eq!(refused.code(), "COMPUTER_NOT_ALLOWED");
}

// Issue 25 item 1: only the principal's own device of capability computer is a computer
// target: another's is DEVICE_NOT_PAIRED, a browser DEVICE_CAPABILITY_MISMATCH; no lease is
// taken for either.
#[test]
fn r_tsk_a_computer_target_is_the_principals_own_computer() {
    let tg = gateway(COMPUTER_CONFIG);
    let browser = tg.pair("alice", "alice-laptop");
    let bobs = pair_computer(&tg, "bob", "bob-desk");
    for (device, code) in [
        (&browser.device, "DEVICE_CAPABILITY_MISMATCH"),
        (&bobs.device, "DEVICE_NOT_PAIRED"),
    ] {
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), on_computer("5", device))
            .unwrap();
        let status = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(
            (status.state, status.reason.as_deref()),
            (TaskState::Failed, Some(code)),
            "{status:#?}"
        );
        assert_eq!(status.actions, 0);
        // Said of the computer, not a browser.
        assert_eq!(
            status.outcome,
            Some(format!(
                "Not done: the computer could not be reached ({code})"
            ))
        );
        assert_eq!(tg.gw.leases().holder(device), None);
    }
}

// Issue 25, seed 003 "Computer helper contract" and "Pre-dispatch rejections" (R-TSK-RCPT): a
// helper's EXECUTION_FAILED (its promise that the refused action did nothing) stops the
// person's command not executed with that cause — its receipt operation `not_executed`, the
// outcome naming the device error behind it — where it used to need reconciliation; a failure
// without a cause code still needs reconciliation. Scripted helpers, no desktop.
#[test]
fn r_tsk_rcpt_a_helpers_certain_refusal_is_not_executed() {
    use serde_json::json;
    use support::computer::Scripted;
    let tg = gateway(COMPUTER_CONFIG);
    let keys: Vec<_> = (0..10)
        .map(|d| {
            json!({"ref": format!("k{d}"), "role": "button", "name": d.to_string(),
                        "actions": ["press"]})
        })
        .collect();
    let keypad = json!({"contractVersion": 1, "application": "calc",
                        "windowTitle": "Calculator", "controls": keys});
    let cases = [
        (
            "EXECUTION_FAILED: the desktop refused the action",
            "EXECUTION_FAILED",
            "not_executed",
        ),
        ("something broke", "OUTCOME_UNKNOWN", "unknown"),
    ];
    for (i, (answer, reason, op_status)) in cases.into_iter().enumerate() {
        let paired = pair_computer(&tg, "alice", &format!("desk-{i}"));
        let helper = Scripted::new(
            keypad.clone(),
            Err(answer.into()),
            Ok(json!({"state": "not_found"})),
        );
        let _worker = tg.device_worker(&paired, helper.clone());
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), on_computer("5", &paired.device))
            .unwrap();
        let status = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(status.reason.as_deref(), Some(reason), "{status:#?}");
        assert_eq!(
            status.state == TaskState::NeedsReconciliation,
            reason == "OUTCOME_UNKNOWN",
            "{status:#?}"
        );
        let receipts = tg.gw.tasks().receipts(&owner(), &id).unwrap();
        let ops: Vec<_> = receipts.iter().flat_map(|r| r.operations.iter()).collect();
        assert_eq!(ops.len(), 1, "{receipts:#?}");
        assert_eq!(ops[0].status, op_status, "{receipts:#?}");
        assert_eq!(helper.actions.load(std::sync::atomic::Ordering::SeqCst), 1);
        if reason == "EXECUTION_FAILED" {
            assert_eq!(
                status.outcome.as_deref(),
                Some(
                    "Not done: the computer refused the action (EXECUTION_FAILED). Device tool \
                     errors (most recent first): page_click EXECUTION_FAILED"
                ),
                "{status:#?}"
            );
        }
        tg.gw.tasks().cancel(&owner(), &id).ok();
    }
}

// Issue 25, seed 003 "Opening a site" and "Computer helper contract" (R-RUN, R-GRM-RESOLVE,
// R-TSK-RCPT): "go to example.com" on a browser whose address bar is not the one typeable field
// (none observed, or several) and whose helper offers address:focus observes with that standard
// command, presses `standard-address-focus`, then types the address into the field that took
// the focus and presses Enter — two actions, each checkpointed and settled done, no Jev call.
// Nothing focused after the press: FOCUS_REQUIRED, nothing typed. Scripted helpers, no desktop.
#[test]
fn r_run_address_focus_opens_a_site_without_one_address_bar() {
    use serde_json::{json, Value};
    use support::computer::Scripted;
    let tg = gateway(COMPUTER_CONFIG);
    let screen = |controls: Vec<Value>, extra: Value| {
        let mut o = json!({"contractVersion": 1, "application": "Chromium",
                           "windowTitle": "Page - Chromium",
                           "capabilities": {"standardCommands": ["address:focus"]},
                           "controls": controls});
        for (k, v) in extra.as_object().unwrap() {
            o[k] = v.clone();
        }
        o
    };
    let reload = json!({"ref": "r", "role": "push button", "name": "Reload", "actions": ["press"]});
    let field = |r: &str, name: &str| {
        json!({"ref": r, "role": "entry", "name": name, "states": ["editable"],
               "actions": ["set_text", "focus"]})
    };
    let focus_button = json!({"ref": "standard-address-focus", "role": "push button",
                              "name": "Focus the address bar", "actions": ["press"]});
    let focused = json!({"focused": "bar"});
    let cases = [
        // No address field observed (the bar not exposed until focused).
        (
            vec![reload.clone()],
            vec![reload.clone(), field("bar", "Address and search bar")],
            focused.clone(),
        ),
        // Several: the bar and a page's field.
        (
            vec![
                reload.clone(),
                field("bar", "Address and search bar"),
                field("q", "Search"),
            ],
            vec![
                reload.clone(),
                field("bar", "Address and search bar"),
                field("q", "Search"),
            ],
            focused.clone(),
        ),
        // The focus went nowhere: nothing typed.
        (
            vec![reload.clone()],
            vec![reload.clone(), field("bar", "Address and search bar")],
            json!({}),
        ),
    ];
    for (i, (before, after, focus)) in cases.into_iter().enumerate() {
        let mut standard = before.clone();
        standard.push(focus_button.clone());
        let helper = Scripted::screens(
            screen(before, json!({})),
            screen(standard, json!({"standardCommand": "address:focus"})),
            screen(after, focus),
        );
        let paired = pair_computer(&tg, "alice", &format!("desk-{i}"));
        let _worker = tg.device_worker(&paired, helper.clone());
        let mut request = on_computer("go to example.com", &paired.device);
        request.keep_open = true;
        let id = tg.gw.tasks().spawn(&owner(), request).unwrap();
        let status = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(status.evaluations, 0, "case {i}: no Jev call: {status:#?}");
        let receipts = tg.gw.tasks().receipts(&owner(), &id).unwrap();
        let ops: Vec<_> = receipts
            .iter()
            .flat_map(|r| r.operations.iter())
            .map(|o| (o.tool.as_str(), o.status.as_str()))
            .collect();
        let sent = helper.sent.lock().unwrap().clone();
        let press = json!({"kind": "press", "ref": "standard-address-focus"});
        let kinds: Vec<Value> = sent
            .iter()
            .map(|a| {
                let mut a = a.clone();
                a.as_object_mut().unwrap().remove("operation_id");
                a
            })
            .collect();
        assert!(
            helper.tools.lock().unwrap().iter().any(|t| t == "observe"),
            "case {i}"
        );
        if i < 2 {
            assert_eq!(
                status.reason.as_deref(),
                Some("DONE"),
                "case {i}: {status:#?}"
            );
            assert_eq!(
                kinds,
                [
                    press,
                    json!({"kind": "set_text", "ref": "bar", "text": "https://example.com"}),
                    json!({"kind": "key", "key": "Return"}),
                ],
                "case {i}"
            );
            assert_eq!(
                ops,
                [("page_click", "done"), ("page_type", "done")],
                "case {i}"
            );
            assert_eq!(status.actions, 2, "case {i}");
        } else {
            assert_eq!(
                status.reason.as_deref(),
                Some("FOCUS_REQUIRED"),
                "case {i}: {status:#?}"
            );
            assert_eq!(kinds, [press], "case {i}");
            assert_eq!(ops, [("page_click", "done")], "case {i}");
        }
        tg.gw.tasks().cancel(&owner(), &id).ok();
    }
}

#[cfg(not(feature = "computer"))]
#[test]
fn r_tsk_a_calculator_task_on_a_paired_computer() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn r_tsk_a_calculator_task_on_a_paired_computer() {
    desktop::calculator_task();
}

#[cfg(not(feature = "computer"))]
#[test]
fn r_tsk_ctl_a_computer_spawn_replaces_only_a_session_that_did_not_act() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn r_tsk_ctl_a_computer_spawn_replaces_only_a_session_that_did_not_act() {
    desktop::replaced_sessions();
}

#[cfg(not(feature = "computer"))]
#[test]
fn r_run_one_spoken_calculation_presses_each_key_without_jev() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn r_run_one_spoken_calculation_presses_each_key_without_jev() {
    desktop::spoken_calculation();
}

#[cfg(feature = "computer")]
mod desktop {
    use super::*;
    use crate::support::computer::{
        approve, display, helper, tab_off_display, wait_buttons, wait_display,
    };
    use crate::support::desktop::{missing, skip, Desk};
    use jevgate::clock::ManualClock;
    use std::time::Instant;

    // R-TSK, R-TSK-RCPT, R-RUN, seed 003 "Numbers and calculator keys": the person's Thai step
    // list ห้า, บวก, เจ็ด, เท่ากับ on gnome-calculator through a paired jevgate-computer presses
    // 5 + 7 = (each the one labelled button, without Jev) and the display reads 12; one
    // checkpoint per press, each settled done; the desktop lease is held by the task's
    // conversation while it runs and released when it completes and when it is cancelled.
    pub fn calculator_task() {
        if let Some(why) = missing(&["gnome-calculator"]) {
            skip(&why);
            return;
        }
        let started = Instant::now();
        let mut desk = Desk::start();
        desk.launch("gnome-calculator");
        let tg = gateway(COMPUTER_CONFIG);
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let clock = ManualClock::new();
        let _worker = tg.device_worker(&paired, helper(dir, Some(&desk), &clock));
        approve(dir, "gnome-calculator", 30, &clock);
        // The person's setup, through the helper directly: the calculator shown and the focus
        // off its display (while a text field has focus, number words are text).
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();
        wait_buttons(&pc);
        let o = tab_off_display(&pc, "setup-tab");
        assert_eq!(display(&o).1.as_deref(), Some(""));
        tg.gw.leases().release_session("conv-1").unwrap();
        assert_eq!(tg.gw.leases().holder(&paired.device), None);
        let ready = started.elapsed();

        let t = Instant::now();
        let goal = "1. ห้า\n2. บวก\n3. เจ็ด\n4. เท่ากับ";
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), on_computer(goal, &paired.device))
            .unwrap();
        let status = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        let ran = t.elapsed();
        assert_eq!(
            (status.state, status.reason.as_deref()),
            (TaskState::WaitingInput, Some("COMPLETION_CANDIDATE")),
            "{status:#?}"
        );
        assert_eq!(
            status.step_run.clone().unwrap().stop_reason,
            "ALL_STEPS_DONE"
        );
        assert_eq!(status.actions, 4);
        assert_eq!(status.evaluations, 0, "no press needed Jev");
        // The waiting session holds the one desktop lease, for its conversation.
        assert_eq!(
            tg.gw.leases().holder(&paired.device).as_deref(),
            Some("conv-1")
        );
        // Receipts: one per press, each checkpointed and settled done.
        let receipts = tg.gw.tasks().receipts(&owner(), &id).unwrap();
        assert_eq!(receipts.len(), 1);
        let ops = &receipts[0].operations;
        assert_eq!(ops.len(), 4, "{receipts:#?}");
        assert!(ops
            .iter()
            .all(|o| o.tool == "page_click" && o.status == "done"));
        // The display reads 12, through the task's own target (fresh evidence) …
        let deadline = Instant::now() + Duration::from_secs(5);
        let evidence = loop {
            let e = tg.gw.tasks().evidence(&owner(), &id, true).unwrap();
            let data = &e.untrusted_content["data"];
            assert_eq!(data["url"], "app:gnome-calculator");
            let reads_12 = data["controls"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["editable"] == true && c["value"] == "12");
            if reads_12 || Instant::now() > deadline {
                assert!(reads_12, "the display reads 12");
                break e;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // … and the helper's receipt of the last press says completed.
        let last = status.last_dispatched_mutation.clone().unwrap();
        assert_eq!(last.tool, "page_click");
        assert_eq!(
            evidence.operation_status.clone().map(|r| r.status),
            Some(jevgate::browser::OperationState::Executed)
        );
        // The parent verifies: the task completes and the desktop lease is released.
        let verified = tg
            .gw
            .tasks()
            .verify(
                &owner(),
                &id,
                &jevgate::task::VerifyRequest {
                    expected_revision: status.revision,
                    expected_request_id: evidence.request,
                    evidence_id: evidence.evidence_id.clone(),
                    instruction: "the calculator's display reads 12".into(),
                },
            )
            .unwrap();
        assert_eq!(verified.state, TaskState::Completed, "{verified:#?}");
        wait_released(&tg, &paired.device);

        // A second task, a number said in Thai (ห้าสิบ: 5 then 0, each on a fresh observation)
        // and บวก, is cancelled while it waits: the lease is released too, and each button was
        // pressed once.
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), on_computer("1. ห้าสิบ\n2. บวก", &paired.device))
            .unwrap();
        let status = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(
            status.state,
            TaskState::WaitingInput,
            "{:#?}",
            tg.gw.tasks().receipts(&owner(), &id).unwrap()
        );
        assert_eq!(
            tg.gw.leases().holder(&paired.device).as_deref(),
            Some("conv-1")
        );
        let ops = &tg.gw.tasks().receipts(&owner(), &id).unwrap()[0].operations;
        assert_eq!(ops.len(), 3, "{ops:#?}");
        assert!(ops
            .iter()
            .all(|o| o.tool == "page_click" && o.status == "done"));
        tg.gw.tasks().cancel(&owner(), &id).unwrap();
        let cancelled = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(cancelled.state, TaskState::Cancelled, "{cancelled:#?}");
        wait_released(&tg, &paired.device);
        wait_display(&pc, "50+");
        tg.gw.leases().release_session("conv-1").unwrap();
        eprintln!(
            "calculator task: desktop ready in {} ms, 5 + 7 = run in {} ms, all {} ms",
            ready.as_millis(),
            ran.as_millis(),
            started.elapsed().as_millis()
        );
    }

    // R-TSK-CTL, seed 003 "Device sessions and access requests" (issue 25 item 4): on a paired
    // computer, a kept-open session that failed before any desktop action (a button that is not
    // there) does not block the device — a new spawn replaces it (the old one ends REPLACED with
    // replacedByTaskId) and takes the desktop lease; once that one has pressed a button, a third
    // spawn is AUTOMATION_SESSION_EXISTS with its state, last result and controller.
    pub fn replaced_sessions() {
        if let Some(why) = missing(&["gnome-calculator"]) {
            skip(&why);
            return;
        }
        let mut desk = Desk::start();
        desk.launch("gnome-calculator");
        let tg = gateway(COMPUTER_CONFIG);
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let clock = ManualClock::new();
        let _worker = tg.device_worker(&paired, helper(dir, Some(&desk), &clock));
        approve(dir, "gnome-calculator", 30, &clock);
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();
        wait_buttons(&pc);
        tab_off_display(&pc, "setup-tab");
        tg.gw.leases().release_session("conv-1").unwrap();
        let kept_open = |goal: &str| {
            let mut r = on_computer(goal, &paired.device);
            r.keep_open = true;
            r
        };

        let failed = tg
            .gw
            .tasks()
            .spawn(&owner(), kept_open("1. press Nowhere"))
            .unwrap();
        let s = tg.gw.tasks().wait(&owner(), &failed, WAIT).unwrap();
        assert_eq!((s.state, s.actions), (TaskState::WaitingInput, 0), "{s:#?}");
        let new = tg
            .gw
            .tasks()
            .spawn(&owner(), kept_open("1. ห้า\n2. บวก"))
            .unwrap();
        let old = tg.gw.tasks().wait(&owner(), &failed, WAIT).unwrap();
        assert_eq!(
            (
                old.state,
                old.reason.as_deref(),
                old.replaced_by_task_id.as_deref()
            ),
            (TaskState::Failed, Some("REPLACED"), Some(new.as_str())),
            "{old:#?}"
        );
        let s = tg.gw.tasks().wait(&owner(), &new, WAIT).unwrap();
        assert_eq!((s.state, s.actions), (TaskState::WaitingInput, 2), "{s:#?}");
        assert_eq!(
            tg.gw.leases().holder(&paired.device).as_deref(),
            Some("conv-1")
        );

        let e = tg
            .gw
            .tasks()
            .spawn(&owner(), kept_open("1. เจ็ด"))
            .unwrap_err();
        match &e {
            jevgate::Error::AutomationSessionExists {
                state,
                reason,
                controller,
            } => assert_eq!(
                (state.as_deref(), reason.as_deref(), controller.as_deref()),
                (Some("waiting_input"), s.reason.as_deref(), Some("user")),
                "{e}"
            ),
            other => panic!("{other}"),
        }
        tg.gw.tasks().cancel(&owner(), &new).unwrap();
        wait_released(&tg, &paired.device);
        wait_display(&pc, "5+");
        tg.gw.leases().release_session("conv-1").unwrap();
    }

    /// A calculator on a throw-away desktop, a paired helper approved for it, and the person's
    /// setup through the helper (the calculator shown, the focus off its display: while a text
    /// field has focus, number words are text); the desktop lease is free again.
    struct Calculator {
        tg: TestGateway,
        device: String,
        pc: jevgate::device::computer::ComputerDevice,
        _worker: jevgate::device::DeviceWorker,
        _state: tempfile::TempDir,
        _desk: Desk,
    }

    fn calculator() -> Option<Calculator> {
        if let Some(why) = missing(&["gnome-calculator"]) {
            skip(&why);
            return None;
        }
        let mut desk = Desk::start();
        desk.launch("gnome-calculator");
        let tg = gateway(COMPUTER_CONFIG);
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state = tempfile::tempdir().unwrap();
        let clock = ManualClock::new();
        let worker = tg.device_worker(&paired, helper(state.path(), Some(&desk), &clock));
        approve(state.path(), "gnome-calculator", 30, &clock);
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();
        wait_buttons(&pc);
        tab_off_display(&pc, "setup-tab");
        tg.gw.leases().release_session("conv-1").unwrap();
        Some(Calculator {
            tg,
            device: paired.device,
            pc,
            _worker: worker,
            _state: state,
            _desk: desk,
        })
    }

    /// The operations of task `id`'s receipts: each a page_click settled done.
    fn presses(tg: &TestGateway, id: &str) -> usize {
        let receipts = tg.gw.tasks().receipts(&owner(), id).unwrap();
        let ops: Vec<_> = receipts.iter().flat_map(|r| r.operations.iter()).collect();
        assert!(
            ops.iter()
                .all(|o| o.tool == "page_click" && o.status == "done"),
            "{receipts:#?}"
        );
        ops.len()
    }

    // Issue 25's named test (R-RUN, R-TSK-RCPT, R-GRM-PARSE; seed 003 "Numbers and calculator
    // keys"): the person's one direct command "ห้า บวก เจ็ด เท่ากับ" (no list separators) on
    // gnome-calculator presses 5 + 7 = key by key — four presses, each a checkpoint settled
    // done, each matched on a fresh observation — and the display reads 12 through AT-SPI, with
    // no Jev evaluation; then "ห้าสิบ บวก ๕ เท่ากับ" on the same session (a number after a
    // result starts a new calculation) presses 5 0 + 5 = and reads 55.
    pub fn spoken_calculation() {
        let Some(calc) = calculator() else { return };
        let (tg, pc) = (&calc.tg, &calc.pc);
        let mut request = on_computer("ห้า บวก เจ็ด เท่ากับ", &calc.device);
        request.keep_open = true;
        let id = tg.gw.tasks().spawn(&owner(), request).unwrap();
        let status = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(status.state, TaskState::WaitingInput, "{status:#?}");
        assert_eq!(
            status.outcome.as_deref(),
            Some("Done: pressed \"=\", the last of 4 keys")
        );
        assert_eq!(status.actions, 4, "{status:#?}");
        assert_eq!(status.evaluations, 0, "no press needed Jev");
        assert_eq!(presses(tg, &id), 4);
        wait_display(pc, "12");

        tg.gw
            .tasks()
            .command(&owner(), &id, "ห้าสิบ บวก ๕ เท่ากับ")
            .unwrap();
        let deadline = Instant::now() + WAIT;
        let status = loop {
            let s = tg.gw.tasks().status(&owner(), &id).unwrap();
            if (s.state != TaskState::Running && s.actions > 4) || Instant::now() > deadline {
                break s;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(
            (status.state, status.actions, status.evaluations),
            (TaskState::WaitingInput, 9, 0),
            "{status:#?}"
        );
        assert_eq!(presses(tg, &id), 9);
        wait_display(pc, "55");
        tg.gw.tasks().cancel(&owner(), &id).unwrap();
        wait_released(tg, &calc.device);
        tg.gw.leases().release_session("conv-1").unwrap();
    }

    /// The task's close runs on its thread: bounded wait for the device to be free.
    fn wait_released(tg: &TestGateway, device: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while tg.gw.leases().holder(device).is_some() {
            assert!(
                Instant::now() < deadline,
                "the desktop lease was not released"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

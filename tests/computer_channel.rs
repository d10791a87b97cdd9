//! The computer helper as a paired device on the channel (issue 25, slice 2; seed 003 "Computer
//! helper contract", "Computer Use connectors"): a gateway drives a paired computer (capability
//! `computer`) through `Gateway::computer_target` — observe, act, operation_status, access
//! requests — under the device's control lease, and the helper answers with consent and
//! receipts.
//!
//! On a real desktop (scripts/desktop, gnome-calculator; skipped with the reason printed, a
//! failure under `JEVGATE_REQUIRE_DESKTOP=1`): 5 + 7 = pressed through the gateway reads 12 in an
//! observation; consent refused, expired and for another application refuse before anything is
//! pressed (the receipt says not_found); operation_status returns the recorded receipt, also
//! after a helper restart; the `jevgate-computer` command pairs by token, takes an approval and
//! serves. Without a desktop (scripted helpers): the contract version, the pre-dispatch rule's
//! receipts, the capability checks and the five-minute access request on an injected clock.

mod support;

use jevgate::device::computer::{ComputerAction, ComputerCommand};
#[cfg(feature = "computer")]
use jevgate::device::computer::{ReceiptRead, ReceiptState, ACCESS_TIMEOUT};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
#[cfg(feature = "computer")]
use std::time::Duration;
use support::computer::{pair_computer, Scripted};
use support::gateway::builder;

fn press(op: &str, reference: &str) -> ComputerCommand {
    ComputerCommand {
        operation_id: op.into(),
        action: ComputerAction::Press {
            reference: reference.into(),
        },
    }
}

/// A scripted `computer_action` answer, the scripted receipt, and the outcome the gateway
/// reports (`Ok`: a trusted receipt's state; `Err`: an error code).
type Case = (
    Result<Value, String>,
    Result<Value, String>,
    Result<&'static str, &'static str>,
);

fn v1() -> Value {
    json!({"contractVersion": 1, "application": "calc", "windowTitle": "Calculator",
           "controls": [{"ref": "e1", "role": "button", "name": "5", "actions": ["press"]}]})
}

// Issue 25, seed 003 "Computer helper contract": another major contract version stops the
// command before any action; unknown values are ignored.
#[test]
fn r_computer_contract_version_is_checked_before_any_action() {
    let tg = builder().channel().build();
    let paired = pair_computer(&tg, "alice", "desk-1");
    let v2 = Scripted::new(
        json!({"contractVersion": "2.0", "controls": []}),
        Ok(json!({"state": "completed"})),
        Ok(json!({"state": "not_found"})),
    );
    let _worker = tg.device_worker(&paired, v2.clone());
    let pc = tg
        .gw
        .computer_target("alice", "conv-1", &paired.device)
        .unwrap();
    assert_eq!(
        pc.observe().unwrap_err().code(),
        "COMPUTER_CONTRACT_UNSUPPORTED"
    );
    assert_eq!(
        pc.act(&press("op-1", "e1")).unwrap_err().code(),
        "COMPUTER_CONTRACT_UNSUPPORTED"
    );
    // A fresh target observes first: still refused, and no action reached the helper.
    let fresh = tg
        .gw
        .computer_target("alice", "conv-1", &paired.device)
        .unwrap();
    assert_eq!(
        fresh.act(&press("op-2", "e1")).unwrap_err().code(),
        "COMPUTER_CONTRACT_UNSUPPORTED"
    );
    assert_eq!(v2.actions.load(Ordering::SeqCst), 0);
}

// Seed 003 pre-dispatch rejections through a real channel: not_found = not executed with the
// cause; a recorded receipt is trusted; a failure without a cause code stays unknown.
#[test]
fn r_computer_pre_dispatch_rejections_read_the_helpers_receipt() {
    let tg = builder().channel().build();
    let cases: Vec<Case> = vec![
        (
            Err("CONSENT_REQUIRED: no".into()),
            Ok(json!({"state": "not_found"})),
            Err("CONSENT_REQUIRED"),
        ),
        (
            Err("COMPUTER_BUSY".into()),
            Ok(json!({"state": "not_found"})),
            Err("COMPUTER_BUSY"),
        ),
        // A recorded receipt is trusted: it completed.
        (
            Err("CONTROL_DENIED: relay".into()),
            Ok(json!({"operation_id": "op-1", "state": "completed", "action": "press"})),
            Ok("completed"),
        ),
        // Unreadable receipt: not executed with the cause, except DEVICE_OFFLINE.
        (
            Err("APPLICATION_NOT_ALLOWED".into()),
            Err("garbage".into()),
            Err("APPLICATION_NOT_ALLOWED"),
        ),
        (
            Err("DEVICE_OFFLINE: relay lost it".into()),
            Err("garbage".into()),
            Err("OUTCOME_UNKNOWN"),
        ),
        (
            Err("DEVICE_OFFLINE: relay lost it".into()),
            Ok(json!({"state": "not_found"})),
            Err("DEVICE_OFFLINE"),
        ),
        // No cause code: unknown, and the receipt is not asked.
        (
            Err("something broke".into()),
            Ok(json!({"state": "not_found"})),
            Err("OUTCOME_UNKNOWN"),
        ),
        // A started-only receipt: it may have run.
        (
            Err("CONSENT_REQUIRED".into()),
            Ok(json!({"operation_id": "op-1", "state": "started"})),
            Err("OUTCOME_UNKNOWN"),
        ),
    ];
    for (i, (action, status, want)) in cases.into_iter().enumerate() {
        let paired = pair_computer(&tg, "alice", &format!("desk-{i}"));
        let helper = Scripted::new(v1(), action, status);
        let worker = tg.device_worker(&paired, helper.clone());
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();
        pc.observe().unwrap();
        let got = pc.act(&press("op-1", "e1"));
        match want {
            Ok(state) => assert_eq!(got.unwrap()["receipt"]["state"], state, "case {i}"),
            Err(code) => assert_eq!(got.unwrap_err().code(), code, "case {i}"),
        }
        let asked = helper
            .tools
            .lock()
            .unwrap()
            .iter()
            .filter(|t| *t == "operation_status")
            .count();
        assert_eq!(
            asked,
            usize::from(i != 6),
            "case {i}: receipt asked once, or never"
        );
        drop(worker);
        tg.wait_online(&paired, false);
    }
}

// Capabilities keep browsers and computers apart: a browser is no computer target, and a
// computer serves no browser tools.
#[test]
fn r_computer_capabilities_are_kept_apart() {
    let tg = builder().channel().build();
    let browser = tg.pair("alice", "chrome-1");
    let pc = tg
        .gw
        .computer_target("alice", "conv-1", &browser.device)
        .unwrap();
    assert_eq!(
        pc.observe().unwrap_err().code(),
        "DEVICE_CAPABILITY_MISMATCH"
    );
    let computer = pair_computer(&tg, "alice", "desk-1");
    let helper = Scripted::new(v1(), Ok(json!({})), Ok(json!({"state": "not_found"})));
    let _worker = tg.device_worker(&computer, helper.clone());
    let mut call = jevgate::device::ToolCall::new("alice", "conv-1", "browser_get_text", json!({}));
    call.device_id = Some(computer.device.clone());
    let result = tg.gw.call_tool(&call);
    assert_eq!(result.error_code(), Some("DEVICE_CAPABILITY_MISMATCH"));
    // Another owner's computer does not exist for mallory.
    let pc = tg
        .gw
        .computer_target("mallory", "conv-9", &computer.device)
        .unwrap();
    assert_eq!(pc.observe().unwrap_err().code(), "DEVICE_NOT_PAIRED");
    // The inventory names it.
    let devices = tg.gw.devices("alice").unwrap();
    let d = devices.iter().find(|d| d.id == computer.device).unwrap();
    assert!(d.online && d.label == "computer" && !d.browser_tools);
    assert!(helper.tools.lock().unwrap().is_empty());
}

#[cfg(not(feature = "computer"))]
#[test]
fn calculator_through_the_gateway() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn calculator_through_the_gateway() {
    helper::calculator_through_the_gateway();
}

#[cfg(feature = "computer")]
#[test]
fn r_computer_access_request_times_out_after_five_minutes_on_the_helpers_clock() {
    helper::access_request_times_out();
}

#[cfg(feature = "computer")]
mod helper {
    use super::*;
    use crate::support::computer::{
        approve, button, display, focused, helper, tab_off_display, wait_buttons, wait_display,
    };
    use crate::support::desktop::{missing, skip, Desk};
    use crate::support::gateway::Paired;
    use jevgate::clock::{Clock, ManualClock};
    use jevgate::device::computer::ComputerDevice;
    use jevgate::unstable::computer::state;
    use jevgate::CancelToken;
    use std::io::Write;
    use std::path::Path;
    use std::time::Instant;

    fn not_found(pc: &ComputerDevice, op: &str) {
        assert_eq!(
            pc.operation_status(op).unwrap(),
            ReceiptRead::NotFound,
            "{op}"
        );
    }

    pub fn calculator_through_the_gateway() {
        if let Some(why) = missing(&["gnome-calculator"]) {
            skip(&why);
            return;
        }
        let started = Instant::now();
        let mut desk = Desk::start();
        desk.launch("gnome-calculator");
        let tg = builder().channel().build();
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let clock = ManualClock::new();
        let worker = tg.device_worker(&paired, helper(dir, Some(&desk), &clock));
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();

        // Pairing alone authorizes nothing: no approval, nothing observed.
        assert_eq!(pc.observe().unwrap_err().code(), "CONSENT_REQUIRED");
        assert_eq!(
            pc.act(&press("op-0", "e1")).unwrap_err().code(),
            "CONSENT_REQUIRED"
        );
        not_found(&pc, "op-0");

        // The person approves the calculator; its buttons appear once its window is mapped.
        approve(dir, "gnome-calculator", 30, &clock);
        let o = wait_buttons(&pc);
        let ready = started.elapsed();
        assert_eq!(o.contract_version, 1);
        assert_eq!(o.application, "gnome-calculator");
        assert_eq!(o.capabilities.keys, ["backspace"]);
        assert_eq!(display(&o).1.as_deref(), Some(""));
        assert_eq!(tg.gw.devices("alice").unwrap()[0].label, "computer");

        // Consent withdrawn after the observation: the helper refuses, the receipt says
        // not_found, nothing was pressed.
        let five = button(&o, "5");
        state::revoke(dir).unwrap();
        assert_eq!(
            pc.act(&press("op-1", &five)).unwrap_err().code(),
            "CONSENT_REQUIRED"
        );
        not_found(&pc, "op-1");
        // Approved, but for another application.
        approve(dir, "gedit", 30, &clock);
        assert_eq!(
            pc.act(&press("op-2", &five)).unwrap_err().code(),
            "APPLICATION_NOT_ALLOWED"
        );
        not_found(&pc, "op-2");
        // Approved for a minute, then expired (the helper's clock).
        approve(dir, "gnome-calculator", 1, &clock);
        clock.advance(Duration::from_secs(61));
        assert_eq!(
            pc.act(&press("op-3", &five)).unwrap_err().code(),
            "CONSENT_REQUIRED"
        );
        not_found(&pc, "op-3");
        approve(dir, "gnome-calculator", 30, &clock);
        let o = pc.observe().unwrap();
        assert_eq!(display(&o).1.as_deref(), Some(""), "nothing was pressed");

        // 5 + 7 = through the gateway; the display reads 12 in an observation.
        let t = Instant::now();
        for (i, label) in ["5", "+", "7", "="].iter().enumerate() {
            let answer = pc
                .act(&press(&format!("calc-{i}"), &button(&o, label)))
                .unwrap();
            assert_eq!(answer["state"], "completed");
        }
        let o = wait_display(&pc, "12");
        let pressed = t.elapsed();
        // The helper's receipt of each press; an operation id is never run twice.
        let ReceiptRead::Recorded(r) = pc.operation_status("calc-3").unwrap() else {
            panic!("no receipt for calc-3");
        };
        assert_eq!(
            (r.state, r.action.as_deref()),
            (ReceiptState::Completed, Some("press"))
        );
        assert_eq!(
            pc.act(&press("calc-3", &button(&o, "=")))
                .unwrap_err()
                .code(),
            "INVALID_ARGUMENT"
        );
        // A ref the last observation never handed out is refused before any receipt.
        assert_eq!(
            pc.act(&press("op-4", "e999999")).unwrap_err().code(),
            "TARGET_NOT_FOUND"
        );
        not_found(&pc, "op-4");
        // A key through XTest (the focused display): backspace erases one character.
        let key = ComputerCommand {
            operation_id: "key-1".into(),
            action: ComputerAction::Key {
                key: "backspace".into(),
            },
        };
        pc.act(&key).unwrap();
        wait_display(&pc, "1");

        // Focus where the toolkit has no GrabFocus (GTK 4.8): Tab takes the focus off the
        // display; `focus` on the display (an editable field) clicks its centre once and its
        // focused state comes back, so the next key types into it; `focus` on a button never
        // clicks it (a click would press it): refused, nothing pressed.
        let key = |op: &str, name: &str| ComputerCommand {
            operation_id: op.into(),
            action: ComputerAction::Key { key: name.into() },
        };
        let focus = |op: &str, reference: &str| ComputerCommand {
            operation_id: op.into(),
            action: ComputerAction::Focus {
                reference: reference.into(),
            },
        };
        let o = tab_off_display(&pc, "key-2");
        let (field, _) = display(&o);
        assert!(!focused(&o, &field), "Tab took the focus off the display");
        let answer = pc.act(&focus("focus-1", &field)).unwrap();
        assert_eq!(answer["state"], "completed");
        assert!(focused(&pc.observe().unwrap(), &field));
        pc.act(&key("key-3", "5")).unwrap();
        let o = wait_display(&pc, "15");
        // Refused, not executed (EXECUTION_FAILED), the receipt keeps the desktop's reason.
        let refused = pc.act(&focus("focus-2", &button(&o, "7"))).unwrap_err();
        assert_eq!(refused.code(), "EXECUTION_FAILED");
        let ReceiptRead::Recorded(r) = pc.operation_status("focus-2").unwrap() else {
            panic!("no receipt for focus-2");
        };
        assert_eq!(
            (r.state, r.code.as_deref()),
            (ReceiptState::Failed, Some("ACTION_UNAVAILABLE"))
        );
        // A pressed 7 would show on GTK's next main-loop turn; a key typed after it lands after
        // it, so the display reading 150 (not 1570) says nothing was pressed.
        pc.act(&key("key-4", "0")).unwrap();
        wait_display(&pc, "150");
        pc.act(&key("key-5", "backspace")).unwrap();
        pc.act(&key("key-6", "backspace")).unwrap();
        wait_display(&pc, "1");

        // A helper restart keeps its receipts.
        drop(worker);
        tg.wait_online(&paired, false);
        let worker = tg.device_worker(&paired, helper(dir, Some(&desk), &clock));
        let ReceiptRead::Recorded(r) = pc.operation_status("calc-0").unwrap() else {
            panic!("the receipt of calc-0 was lost in the restart");
        };
        assert_eq!(r.state, ReceiptState::Completed);
        not_found(&pc, "op-1");
        drop(worker);
        tg.wait_online(&paired, false);

        // The command: `pair` redeems a pairing code at the channel listener (a device of
        // capability `computer`, its token kept in the state directory), `serve` connects with
        // it, `approve` writes the approval the running helper reads.
        let bin = env!("CARGO_BIN_EXE_jevgate-computer");
        let cli_dir = tempfile::tempdir().unwrap();
        let code = tg
            .gw
            .pairing_code("alice", Duration::from_secs(60))
            .unwrap();
        let mut pair = desk
            .command(bin)
            .args(["pair", "--url", &tg.channel().url(), "--name", "my desktop"])
            .arg("--state-dir")
            .arg(cli_dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(pair.stdin.take().unwrap(), "{}", code.expose()).unwrap();
        let out = pair.wait_with_output().unwrap();
        assert!(out.status.success(), "jevgate-computer pair");
        let device = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let listed = tg.gw.devices("alice").unwrap();
        let d = listed.iter().find(|d| d.id == device).expect("paired");
        assert_eq!(d.label, "computer");
        let token_mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(cli_dir.path().join("token"))
                .unwrap()
                .permissions(),
        );
        assert_eq!(token_mode & 0o077, 0, "the token file is the owner's only");
        let cli = Paired {
            owner: "alice".into(),
            device: device.clone(),
            token: jevgate::device::DeviceToken::new(String::new()),
        };
        let mut serve = desk
            .command(bin)
            .args(["serve", "--url", &tg.channel().url(), "--exit-on-stdin-eof"])
            .arg("--state-dir")
            .arg(cli_dir.path())
            .args(["--app", "gnome-calculator"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        tg.wait_online(&cli, true);
        let pc = tg.gw.computer_target("alice", "conv-1", &device).unwrap();
        assert_eq!(pc.observe().unwrap_err().code(), "CONSENT_REQUIRED");
        let st = desk
            .command(bin)
            .args(["approve", "--app", "gnome-calculator", "--minutes", "30"])
            .arg("--state-dir")
            .arg(cli_dir.path())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let o = wait_display(&pc, "1");
        pc.act(&press("cli-0", &button(&o, "Clear Display [Escape]")))
            .unwrap();
        wait_display(&pc, "");
        drop(serve.stdin.take());
        assert!(serve.wait().unwrap().success());

        let _ = writeln!(
            std::io::stderr(),
            "desktop + calculator ready in {ready:?}; 5 + 7 = through the gateway in \
             {pressed:?}; total {:?}",
            started.elapsed()
        );
    }

    /// Seed 003 "Device sessions and access requests": an unanswered access request ends after
    /// five minutes (the helper's injected clock) with COMPUTER_ACCESS_TIMEOUT; the helper keeps
    /// answering receipts meanwhile; an approval answers a pending one. No desktop needed:
    /// access is the helper's own state.
    pub fn access_request_times_out() {
        let tg = builder().channel().build();
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path().to_path_buf();
        let clock = ManualClock::new();
        let _worker = tg.device_worker(&paired, helper(&dir, None, &clock));
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();
        let pending = |dir: &Path| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while state::pending_access_request(dir).is_none() {
                assert!(Instant::now() < deadline, "no access request");
                std::thread::yield_now();
            }
        };
        std::thread::scope(|s| {
            let asked = s.spawn(|| pc.request_access(&CancelToken::new()));
            pending(&dir);
            // The helper keeps answering while the request is pending.
            assert_eq!(pc.operation_status("op-x").unwrap(), ReceiptRead::NotFound);
            clock.advance(ACCESS_TIMEOUT);
            let e = asked.join().unwrap().unwrap_err();
            assert_eq!(e.code(), "COMPUTER_ACCESS_TIMEOUT");
        });
        assert_eq!(state::pending_access_request(&dir), None);
        // Answered by the person while pending.
        std::thread::scope(|s| {
            let asked = s.spawn(|| pc.request_access(&CancelToken::new()));
            pending(&dir);
            approve(&dir, "gnome-calculator", 30, &clock);
            let v = asked.join().unwrap().unwrap();
            assert_eq!(v["state"], "granted");
            assert_eq!(v["applications"], json!(["gnome-calculator"]));
        });
        // Approved: granted at once.
        assert_eq!(
            pc.request_access(&CancelToken::new()).unwrap()["state"],
            "granted"
        );
        assert!(clock.wall_millis() > 0);
    }
}

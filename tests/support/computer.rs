//! The computer helper in tests (issue 25): pairing a `computer` device, a `jevgate-computer`
//! helper on a throw-away desktop ([`super::desktop`]) or none, the person's approval, and
//! reading the calculator through the gateway — shared by the channel tests and the task
//! target's.
//!
//! Owns: those steps. Never: asserts a behaviour of jevgate beyond what a step needs to go on.

use super::gateway::{Paired, TestGateway};
use jevgate::device::{PairRequest, ToolExecutor, WorkerFailure};
use jevgate::task::{SpawnRequest, TaskTarget};
use jevgate::CancelToken;
use jevgate::Gateway;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Jev on (the local provider), computer tasks on by default, step lists on; browser tasks off:
/// they play no part in a computer task.
pub const COMPUTER_CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"computerSteps":{"enabled":true}}}}}"#;

/// A person's request `goal` for a task on the computer `device`.
pub fn on_computer(goal: &str, device: &str) -> SpawnRequest {
    let mut request = SpawnRequest::from_person(goal);
    request.target = TaskTarget::Computer {
        device_id: device.into(),
    };
    request
}

/// The pairing request of a computer helper installation.
pub fn computer_request(installation: &str) -> PairRequest {
    PairRequest {
        installation_id: installation.into(),
        name: format!("Desktop {installation}"),
        browser: None,
    }
}

/// A scripted helper (no desktop): answers `observe` with `observation`, `computer_action` with `action`
/// and `operation_status` with `status`; counts the actions that reached it. Made by
/// [`Scripted::screens`], an `observe` asking for a standard command answers `standard` and,
/// once an action reached it, `observe` answers `after_action`.
pub struct Scripted {
    pub observation: Value,
    pub action: Result<Value, String>,
    pub status: Result<Value, String>,
    pub actions: AtomicUsize,
    pub tools: Mutex<Vec<String>>,
    pub standard: Option<Value>,
    pub after_action: Option<Value>,
    /// The arguments of each `computer_action`, in order.
    pub sent: Mutex<Vec<Value>>,
}

impl Scripted {
    pub fn new(
        observation: Value,
        action: Result<Value, String>,
        status: Result<Value, String>,
    ) -> Arc<Scripted> {
        Arc::new(Scripted {
            observation,
            action,
            status,
            actions: AtomicUsize::new(0),
            tools: Mutex::new(Vec::new()),
            standard: None,
            after_action: None,
            sent: Mutex::new(Vec::new()),
        })
    }

    /// A helper whose screen is `before`, `standard` when a standard command is asked for, and
    /// `after` once an action ran; every action completes.
    pub fn screens(before: Value, standard: Value, after: Value) -> Arc<Scripted> {
        Arc::new(Scripted {
            observation: before,
            action: Ok(serde_json::json!({"state": "completed"})),
            status: Ok(serde_json::json!({"state": "not_found"})),
            actions: AtomicUsize::new(0),
            tools: Mutex::new(Vec::new()),
            standard: Some(standard),
            after_action: Some(after),
            sent: Mutex::new(Vec::new()),
        })
    }
}

impl ToolExecutor for Scripted {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        self.tools.lock().unwrap().push(tool.to_string());
        let answer = |a: &Result<Value, String>| {
            a.clone()
                .map_err(|m| WorkerFailure::new("execution_failed", m))
        };
        match tool {
            "observe" => {
                let acted = self.actions.load(Ordering::SeqCst) > 0;
                Ok(match (&self.standard, &self.after_action) {
                    (_, Some(after)) if acted => after.clone(),
                    (Some(standard), _) if args.get("standard_command").is_some() => {
                        standard.clone()
                    }
                    _ => self.observation.clone(),
                })
            }
            "computer_action" => {
                self.sent.lock().unwrap().push(args.clone());
                self.actions.fetch_add(1, Ordering::SeqCst);
                answer(&self.action)
            }
            "operation_status" => answer(&self.status),
            // The person's approval stands: the access a task's open asks for is granted.
            "computer_access" => Ok(serde_json::json!({"state": "granted"})),
            _ => Err(WorkerFailure::new("execution_failed", "UNKNOWN_TOOL: no")),
        }
    }
}

/// Pairs a computer of `owner` (label `computer`).
pub fn pair_computer(tg: &TestGateway, owner: &str, installation: &str) -> Paired {
    pair_computer_on(&tg.gw, owner, installation)
}

/// Pairs a computer of `owner` on a gateway the test opened itself.
pub fn pair_computer_on(gw: &Gateway, owner: &str, installation: &str) -> Paired {
    let p = gw
        .pair_computer(owner, &computer_request(installation))
        .unwrap();
    assert_eq!(p.device.label, "computer");
    Paired {
        owner: owner.into(),
        device: p.device.id,
        token: p.token,
    }
}

#[cfg(feature = "computer")]
#[allow(unused_imports)] // each test binary uses a different part of the support module
pub use helper::*;

#[cfg(feature = "computer")]
mod helper {
    use super::super::desktop::Desk;
    use jevgate::clock::ManualClock;
    use jevgate::device::computer::{
        ComputerAction, ComputerCommand, ComputerDevice, ComputerObservation,
    };
    use jevgate::unstable::computer::{state, ComputerHelper, HelperOptions};
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A helper for gnome-calculator with its state in `dir`, on `desk` (or no desktop).
    pub fn helper(dir: &Path, desk: Option<&Desk>, clock: &ManualClock) -> Arc<ComputerHelper> {
        helper_for("gnome-calculator", dir, desk, clock)
    }

    /// A helper for application `app` (its accessible name) with its state in `dir`, on `desk`.
    pub fn helper_for(
        app: &str,
        dir: &Path,
        desk: Option<&Desk>,
        clock: &ManualClock,
    ) -> Arc<ComputerHelper> {
        helper_app_on(
            app,
            dir,
            desk.map(Desk::a11y_bus),
            desk.map(|d| d.var("DISPLAY").to_string()),
            clock,
        )
    }

    /// [`helper`] on the desktop of this accessibility bus and X display (a process that did
    /// not start the desktop: a helper child of a crash test).
    pub fn helper_on(
        dir: &Path,
        a11y_bus: Option<String>,
        display: Option<String>,
        clock: &ManualClock,
    ) -> Arc<ComputerHelper> {
        helper_app_on("gnome-calculator", dir, a11y_bus, display, clock)
    }

    /// A helper for `app` on the desktop of this accessibility bus and X display.
    fn helper_app_on(
        app: &str,
        dir: &Path,
        a11y_bus: Option<String>,
        display: Option<String>,
        clock: &ManualClock,
    ) -> Arc<ComputerHelper> {
        Arc::new(ComputerHelper::new(HelperOptions {
            state_dir: dir.to_path_buf(),
            app: Some(app.into()),
            a11y_bus,
            display,
            clock: Arc::new(clock.clone()),
        }))
    }

    /// The person approves `app` for `minutes` (the helper's clock).
    pub fn approve(dir: &Path, app: &str, minutes: u64, clock: &ManualClock) {
        state::approve(
            dir,
            &[app.to_string()],
            Duration::from_secs(minutes * 60),
            clock,
        )
        .unwrap();
    }

    /// The calculator's display: its one editable text box (ref, value).
    pub fn display(o: &ComputerObservation) -> (String, Option<String>) {
        let d: Vec<_> = o
            .controls
            .iter()
            .filter(|c| c.states.iter().any(|s| s == "editable"))
            .collect();
        assert_eq!(d.len(), 1, "one editable display");
        (d[0].reference.clone(), d[0].value.clone())
    }

    /// The ref of the one pressable control named `label`.
    pub fn button(o: &ComputerObservation, label: &str) -> String {
        let found = o.named(label);
        assert_eq!(found.len(), 1, "exactly one control named {label:?}");
        assert!(found[0].actions.iter().any(|a| a == "press"));
        found[0].reference.clone()
    }

    /// Observes through the gateway until the display reads `want` (GTK updates it on its main
    /// loop), bounded.
    pub fn wait_display(pc: &ComputerDevice, want: &str) -> ComputerObservation {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let o = pc.observe().expect("observe");
            if display(&o).1.as_deref() == Some(want) || Instant::now() > deadline {
                assert_eq!(display(&o).1.as_deref(), Some(want));
                return o;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Whether the control `reference` of `o` has the keyboard focus.
    pub fn focused(o: &ComputerObservation, reference: &str) -> bool {
        o.control(reference)
            .is_some_and(|c| c.states.iter().any(|s| s == "focused"))
    }

    /// Presses Tab (operation `op`) and observes until the calculator's display has lost the
    /// keyboard focus, bounded to 5 s; the last observation.
    pub fn tab_off_display(pc: &ComputerDevice, op: &str) -> ComputerObservation {
        pc.act(&ComputerCommand {
            operation_id: op.into(),
            action: ComputerAction::Key { key: "tab".into() },
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let o = pc.observe().unwrap();
            let (field, _) = display(&o);
            if !focused(&o, &field) || Instant::now() > deadline {
                return o;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Observes until the calculator's 29 buttons show (its window mapped and approved),
    /// bounded to 30 s.
    pub fn wait_buttons(pc: &ComputerDevice) -> ComputerObservation {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(o) = pc.observe() {
                if o.controls
                    .iter()
                    .filter(|c| c.actions.iter().any(|a| a == "press"))
                    .count()
                    >= 29
                {
                    return o;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the calculator's buttons never showed"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

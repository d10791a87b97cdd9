//! The paired-computer target of a task (issue 25 item 1; seed 003 "Computer Use connectors",
//! "Computer helper contract"): a [`BrowserBackend`] over one paired computer
//! ([`ComputerDevice`], `jevgate-computer`), so the run loop drives a desktop exactly as it
//! drives a browser — the same checkpoint before every action, the same fences, the same
//! never-replay rule.
//!
//! It owns only the translation, both ways:
//! - an observation: the helper's accepted observation ([`ComputerObservation`]) becomes an
//!   engine [`Observation`] under this target's own generation counter (one per observation;
//!   an action on an older generation is `STALE_OBSERVATION` without sending anything), the
//!   window title as title, `app:<application>` as the address, controls with their ref, role,
//!   name, value, states (editable, disabled, checked), menu-bar place and actions (`press` →
//!   `click`, `set_text` → `type`), focus, static text and the helper's discrete keys
//!   (`capabilities.keys`); a sensitive field's value is never kept;
//! - standard commands ([`BrowserBackend::observe_standard`]): offered only when the last
//!   observation listed them in `capabilities.standardCommands`; the observation asked for one
//!   keeps the `standard-…` control only when the helper echoed that command (any other
//!   `standard-…` control is dropped), so pressing it is an ordinary `press`;
//! - the commands: `page_click` → `press` (`focus` on a field that focuses but does not press),
//!   `page_type` → `set_text` (then `Return` when it
//!   submits), `page_keypress` → `key` (once per count), `operation_status` → the helper's
//!   receipt (`not_found` → not executed; completed / failed → executed; started or unreadable
//!   → unknown). Every other browser command is refused (`UNKNOWN_TOOL`) without sending.
//!
//! Choosing the device, the control lease and the meaning of a helper's failure are
//! [`ComputerDevice`]'s (its pre-dispatch rule). It must never retry or re-send an action, never
//! log names, values, text or typed text, and never import the gateway.

use crate::browser::{
    ActionResult, BrowserBackend, Command, OperationOutcome, OperationRecord, OperationState,
    Response,
};
use crate::clock::SharedClock;
use crate::device::computer::{
    ComputerAction, ComputerCommand, ComputerDevice, ComputerObservation, ReceiptRead, ReceiptState,
};
use crate::observation::{Control, Observation};
use crate::reasons::StaleCause;
use crate::{Error, Result};
use parking_lot::Mutex;

/// A paired computer as a task's [`BrowserBackend`]. Made by the gateway for one conversation
/// of one owner on one device.
pub struct ComputerTarget {
    device: ComputerDevice,
    clock: SharedClock,
    /// The generation of the last observation handed out (0: none yet).
    generation: Mutex<u64>,
    /// The refs of that observation's controls that focus but do not press (a text field): a
    /// click on one is the helper's `focus` (seed 003 "Unfocused fields": click that field).
    focus_only: Mutex<std::collections::HashSet<String>>,
    /// The standard commands the last observation offered.
    standard: Mutex<Vec<String>>,
}

impl std::fmt::Debug for ComputerTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputerTarget")
            .field("device_id", &self.device.device_id())
            .finish_non_exhaustive()
    }
}

/// The address an observation of `application` carries.
pub fn app_address(application: &str) -> String {
    format!("app:{application}")
}

/// A helper observation as the engine's, under `generation` (pure).
pub(crate) fn to_observation(o: &ComputerObservation, generation: u64) -> Observation {
    // A standard command's control only when the helper echoed that command.
    let echoed = o
        .standard_command
        .as_deref()
        .and_then(crate::device::computer::standard_ref);
    let controls = o
        .controls
        .iter()
        .filter(|c| {
            !c.reference.starts_with("standard-") || echoed.as_deref() == Some(&c.reference)
        })
        .map(|c| {
            let has = |s: &str| c.states.iter().any(|x| x.eq_ignore_ascii_case(s));
            let mut actions: Vec<String> = c
                .actions
                .iter()
                .filter_map(|a| match a.as_str() {
                    "press" => Some("click".to_string()),
                    "set_text" => Some("type".to_string()),
                    "focus" => Some("focus".to_string()),
                    _ => None,
                })
                .collect();
            let disabled = has("disabled");
            if disabled {
                actions.clear();
            }
            let editable = has("editable") || c.actions.iter().any(|a| a == "set_text");
            let checkable =
                has("checkable") || c.role.contains("check") || c.role.contains("radio");
            Control {
                reference: c.reference.clone(),
                role: c.role.clone(),
                name: c.name.clone(),
                value: if c.sensitive { None } else { c.value.clone() },
                editable,
                search_like: c.role.contains("search"),
                sensitive: c.sensitive,
                actions,
                checked: checkable.then(|| has("checked")),
                disabled,
                container: None,
                menu: c.menu.clone(),
            }
        })
        .collect();
    let mut obs = Observation {
        generation,
        url: app_address(&o.application),
        title: o.window_title.clone(),
        focus: o.focused.clone(),
        controls,
        text: o.text.join("\n"),
        keys: o.capabilities.keys.clone(),
        ..Observation::default()
    };
    obs.truncated.controls = o.omitted > 0;
    obs
}

/// The refs of `o`'s controls that take the focus but cannot be pressed (pure).
pub(crate) fn focus_only(o: &ComputerObservation) -> std::collections::HashSet<String> {
    o.controls
        .iter()
        .filter(|c| {
            c.actions.iter().any(|a| a == "focus") && !c.actions.iter().any(|a| a == "press")
        })
        .map(|c| c.reference.clone())
        .collect()
}

/// What the engine's record says of a helper receipt (pure).
pub(crate) fn to_record(operation_id: &str, read: &ReceiptRead) -> OperationRecord {
    let mut r = OperationRecord::unknown(operation_id);
    match read {
        ReceiptRead::NotFound => {
            r.status = OperationState::NotExecuted;
            r.outcome = OperationOutcome::Refused;
        }
        ReceiptRead::Recorded(receipt) => match receipt.state {
            ReceiptState::Completed => {
                r.status = OperationState::Executed;
                r.outcome = OperationOutcome::Completed;
            }
            ReceiptState::Failed => {
                r.status = OperationState::Executed;
                r.outcome = OperationOutcome::Failed;
                r.error_code = receipt
                    .code
                    .as_deref()
                    .and_then(crate::ErrorKind::from_code)
                    .map(|k| k.code().to_string());
            }
            ReceiptState::Started => r.outcome = OperationOutcome::Lost,
        },
        ReceiptRead::Unreadable => {}
    }
    r
}

/// The helper's key name of an engine key.
fn key_name(key: crate::grammar::Key) -> &'static str {
    use crate::grammar::Key;
    match key {
        Key::Enter => "Return",
        Key::Tab => "Tab",
        Key::Escape => "Escape",
        Key::Backspace => "backspace",
        Key::ArrowUp => "Up",
        Key::ArrowDown => "Down",
        Key::ArrowLeft => "Left",
        Key::ArrowRight => "Right",
    }
}

impl ComputerTarget {
    /// A target driving `device` (its clock for the run loop's waits).
    pub(crate) fn new(device: ComputerDevice, clock: SharedClock) -> ComputerTarget {
        ComputerTarget {
            device,
            clock,
            generation: Mutex::new(0),
            focus_only: Mutex::new(std::collections::HashSet::new()),
            standard: Mutex::new(Vec::new()),
        }
    }

    /// The device this target drives.
    pub fn device_id(&self) -> &str {
        self.device.device_id()
    }

    fn observe_now(&self) -> Result<Observation> {
        let o = self.device.observe()?;
        self.handed_out(&o)
    }

    /// `o` as the engine's observation, under the next generation; its standard commands kept.
    fn handed_out(&self, o: &ComputerObservation) -> Result<Observation> {
        self.standard
            .lock()
            .clone_from(&o.capabilities.standard_commands);
        let mut g = self.generation.lock();
        *g = g.saturating_add(1);
        *self.focus_only.lock() = focus_only(o);
        Ok(to_observation(o, *g))
    }

    /// Refuses an action decided on another generation: nothing is sent.
    fn current(&self, generation: u64) -> Result<()> {
        if generation == *self.generation.lock() {
            Ok(())
        } else {
            Err(Error::StaleObservation {
                cause: StaleCause::GenerationChanged,
            })
        }
    }

    /// One action; an answered one is the engine's action result.
    fn act(
        &self,
        tool: &str,
        operation_id: &str,
        generation: u64,
        action: ComputerAction,
    ) -> Result<Response> {
        self.device.act(&ComputerCommand {
            operation_id: operation_id.to_string(),
            action,
        })?;
        Ok(Response::Action(ActionResult {
            operation_id: operation_id.to_string(),
            tool: tool.to_string(),
            generation_before: generation,
            navigation_started: false,
            settled: true,
            dialog: None,
            notes: Vec::new(),
        }))
    }

    /// A follow-up action of one operation (the submit of a `set_text`, the second press of a
    /// key): once the first ran, anything but its completion leaves the operation unknown.
    fn follow_up(&self, operation_id: &str, n: u32, action: ComputerAction) -> Result<()> {
        self.device
            .act(&ComputerCommand {
                operation_id: format!("{operation_id}.{n}"),
                action,
            })
            .map(|_| ())
            .map_err(|_| Error::OutcomeUnknown {
                reason: "a later part of the desktop action did not complete".into(),
            })
    }
}

impl BrowserBackend for ComputerTarget {
    fn observe_standard(&self, name: &str) -> Result<Option<Observation>> {
        if !self.standard.lock().iter().any(|s| s == name) {
            return Ok(None);
        }
        let o = self.device.observe_standard(name)?;
        self.handed_out(&o).map(Some)
    }

    fn execute(&self, command: &Command) -> Result<Response> {
        match command {
            Command::Observe(_) => self.observe_now().map(Response::Observation),
            Command::PageClick(a) => {
                self.current(a.generation)?;
                let reference = a.reference.clone();
                // A click on a field focuses it (the helper's GrabFocus, else one click there).
                let action = if self.focus_only.lock().contains(&reference) {
                    ComputerAction::Focus { reference }
                } else {
                    ComputerAction::Press { reference }
                };
                self.act(command.tool(), &a.operation_id, a.generation, action)
            }
            Command::PageType(a) => {
                self.current(a.generation)?;
                let done = self.act(
                    command.tool(),
                    &a.operation_id,
                    a.generation,
                    ComputerAction::SetText {
                        reference: a.reference.clone(),
                        text: a.text.clone(),
                    },
                )?;
                if a.submit {
                    self.follow_up(
                        &a.operation_id,
                        2,
                        ComputerAction::Key {
                            key: "Return".into(),
                        },
                    )?;
                }
                Ok(done)
            }
            Command::PageKeypress(a) => {
                self.current(a.generation)?;
                let key = || ComputerAction::Key {
                    key: key_name(a.key).to_string(),
                };
                let done = self.act(command.tool(), &a.operation_id, a.generation, key())?;
                for n in 2..=a.count.max(1) {
                    self.follow_up(&a.operation_id, n, key())?;
                }
                Ok(done)
            }
            Command::OperationStatus(a) => {
                let read = self.device.operation_status(&a.operation_id)?;
                Ok(Response::Operation(to_record(&a.operation_id, &read)))
            }
            // Nothing else is an action of the helper contract: refused, never sent.
            other => Err(Error::UnknownTool {
                tool: other.tool().to_string(),
            }),
        }
    }

    fn clock(&self) -> SharedClock {
        std::sync::Arc::clone(&self.clock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::computer::{validate_observation, Receipt};
    use serde_json::json;

    // Issue 25 item 1: the computer observation as the engine's: app address, window title,
    // controls with press → click, set_text → type, states read, a sensitive value dropped.
    #[test]
    fn r_computer_observation_maps_to_the_engines() {
        let o = validate_observation(&json!({
            "application": "gnome-calculator", "windowTitle": "Calculator",
            "focused": "e2",
            "controls": [
                {"ref": "e1", "role": "push button", "name": "5", "actions": ["press"]},
                {"ref": "e2", "role": "text", "name": "", "value": "12",
                 "states": ["editable", "focused"], "actions": ["set_text", "focus"]},
                {"ref": "e3", "role": "password text", "name": "PIN", "value": "1234",
                 "actions": ["set_text"]},
                {"ref": "e4", "role": "push button", "name": "=", "states": ["disabled"],
                 "actions": ["press"]},
                {"ref": "e5", "role": "menu item", "name": "Copy", "menu": "Edit",
                 "actions": ["press", "focus"]}
            ],
            "text": ["a", "b"],
            "capabilities": {"keys": ["backspace"]}
        }))
        .unwrap();
        let obs = to_observation(&o, 7);
        assert_eq!(obs.generation, 7);
        assert_eq!(obs.url, "app:gnome-calculator");
        assert_eq!(obs.title, "Calculator");
        assert_eq!(obs.focus.as_deref(), Some("e2"));
        assert_eq!(obs.text, "a\nb");
        assert_eq!(obs.controls[0].actions, ["click"]);
        assert!(obs.controls[0].is_pressable());
        assert!(obs.controls[1].editable);
        assert_eq!(obs.controls[1].value.as_deref(), Some("12"));
        assert!(obs.controls[2].sensitive && obs.controls[2].value.is_none());
        assert!(obs.controls[3].disabled && obs.controls[3].actions.is_empty());
        assert!(!obs.truncated.controls);
        // Issue 25: the menu-bar place and the helper's keys are kept; a click on the field
        // (focus, no press) is a focus.
        assert_eq!(obs.controls[4].menu.as_deref(), Some("Edit"));
        assert_eq!(obs.controls[0].menu, None);
        assert_eq!(obs.keys, ["backspace"]);
        assert_eq!(focus_only(&o), ["e2".to_string()].into_iter().collect());
    }

    // Seed 003 "Computer helper contract": a standard command's control is kept only when the
    // helper echoed that command; any other `standard-…` control is dropped.
    #[test]
    fn r_computer_a_standard_control_only_when_echoed() {
        let controls = json!([
            {"ref": "standard-app-quit", "role": "push button", "name": "Quit Chromium",
             "actions": ["press"]},
            {"ref": "standard-tab-new", "role": "push button", "name": "New Tab",
             "actions": ["press"]},
            {"ref": "e1", "role": "entry", "name": "Address", "states": ["editable"],
             "actions": ["set_text"]}
        ]);
        let refs = |v: serde_json::Value| -> Vec<String> {
            to_observation(&validate_observation(&v).unwrap(), 1)
                .controls
                .into_iter()
                .map(|c| c.reference)
                .collect()
        };
        assert_eq!(
            refs(json!({"standardCommand": "app:quit", "controls": controls})),
            ["standard-app-quit", "e1"]
        );
        assert_eq!(refs(json!({"controls": controls})), ["e1"]);
    }

    // Seed 003 "Computer helper contract": not_found → not executed; completed and failed →
    // executed; started or unreadable → unknown.
    #[test]
    fn r_computer_receipts_read_as_the_engines_record() {
        let rec = |state, code: Option<&str>| {
            ReceiptRead::Recorded(Receipt {
                operation_id: "op".into(),
                state,
                action: Some("press".into()),
                code: code.map(str::to_string),
            })
        };
        let cases = [
            (ReceiptRead::NotFound, OperationState::NotExecuted),
            (rec(ReceiptState::Completed, None), OperationState::Executed),
            (
                rec(ReceiptState::Failed, Some("TARGET_NOT_FOUND")),
                OperationState::Executed,
            ),
            (rec(ReceiptState::Started, None), OperationState::Unknown),
            (ReceiptRead::Unreadable, OperationState::Unknown),
        ];
        for (read, want) in cases {
            let r = to_record("op", &read);
            assert_eq!(r.status, want, "{read:?}");
            assert_eq!(r.outcome.state(), r.status);
            assert_eq!(r.operation_id, "op");
        }
        let failed = to_record("op", &rec(ReceiptState::Failed, Some("TARGET_NOT_FOUND")));
        assert_eq!(failed.error_code.as_deref(), Some("TARGET_NOT_FOUND"));
    }
}

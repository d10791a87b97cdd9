//! The paired-device target of a task (issue 14 item 2; R-TSK, R-DEV-FAIL, R-BRW-ACT): a
//! [`BrowserBackend`] whose every command is one primitive sent over the channel to the owner's
//! paired browser, for the task's conversation, under the device's control lease.
//!
//! It owns only the translation: a [`Command`] goes out as its serde `tool`/`args`, the worker's
//! raw result comes back through [`Command::decode_result`], so the run loop drives a device
//! exactly as it drives the local Chromium and sees the same typed errors (a stale generation is
//! `STALE_OBSERVATION` with its cause on both). Choosing the device, the control lease, the
//! deadline and the meaning of a failure are `device::PrimitiveSender`'s: `DEVICE_OFFLINE` and
//! the other refusals mean nothing was sent, `OUTCOME_UNKNOWN` means the command may have run.
//! A mutation whose result cannot be read, or names another operation, is an unknown outcome
//! too: it was answered, so something may have happened. A worker's observation is held to
//! the same container bounds as a local one (`Observation::bound_containers`).
//!
//! It must never retry or re-send a command (above all a mutation that was sent), and never log
//! arguments, typed text, page content or results.

use crate::browser::{BrowserBackend, Command, Response};
use crate::clock::SharedClock;
use crate::device::PrimitiveSender;
use crate::lease::Leases;
use crate::{Error, Result};

/// A paired browser device as a task's [`BrowserBackend`]. Made by the gateway for one
/// conversation (`root_session`) of one owner on one device.
pub struct DeviceTarget {
    sender: PrimitiveSender,
    leases: Leases,
    owner: String,
    root_session: String,
    device_id: String,
}

impl std::fmt::Debug for DeviceTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTarget")
            .field("device_id", &self.device_id)
            .finish_non_exhaustive()
    }
}

impl DeviceTarget {
    /// A target driving `device_id` of `owner` for the conversation `root_session`.
    pub(crate) fn new(
        sender: PrimitiveSender,
        leases: Leases,
        owner: impl Into<String>,
        root_session: impl Into<String>,
        device_id: impl Into<String>,
    ) -> DeviceTarget {
        DeviceTarget {
            sender,
            leases,
            owner: owner.into(),
            root_session: root_session.into(),
            device_id: device_id.into(),
        }
    }

    /// The device this target drives.
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// The conversation that holds the device's control lease while this target is used.
    pub fn root_session(&self) -> &str {
        &self.root_session
    }
}

impl BrowserBackend for DeviceTarget {
    fn execute(&self, command: &Command) -> Result<Response> {
        let mut frame = serde_json::to_value(command).map_err(|_| Error::Internal {
            reason: "a command could not be serialized".into(),
        })?;
        let args = frame
            .get_mut("args")
            .map(serde_json::Value::take)
            .unwrap_or_else(|| serde_json::json!({}));
        let raw = self.sender.send(
            &self.leases,
            &self.owner,
            &self.root_session,
            &self.device_id,
            command.tool(),
            &args,
        )?;
        let Some(operation) = command.operation_id() else {
            // A worker's observation is held to the same container bounds as a local one.
            return command.decode_result(raw).map(|r| match r {
                Response::Observation(mut o) => {
                    o.bound_containers();
                    Response::Observation(o)
                }
                other => other,
            });
        };
        // An answered mutation: something may have happened whatever the answer looks like.
        let unknown = |reason: &str| Error::OutcomeUnknown {
            reason: reason.into(),
        };
        match command.decode_result(raw) {
            Ok(Response::Action(a)) if a.operation_id != operation => {
                Err(unknown("the browser answered for another operation"))
            }
            Ok(response) => Ok(response),
            Err(_) => Err(unknown("the browser's result could not be read")),
        }
    }

    fn clock(&self) -> SharedClock {
        self.sender.clock()
    }

    fn show_progress(&self, line: Option<&str>) {
        self.sender.show_progress(&self.device_id, line);
    }
}

#[cfg(test)]
mod tests {
    use crate::browser::*;
    use crate::device::PRIMITIVES;

    // R-BRW-ACT: every command a backend serves is a primitive the device sender sends, so the
    // run loop can drive a device with anything it can drive the local browser with.
    #[test]
    fn r_brw_act_every_command_is_a_primitive_the_device_sender_sends() {
        let commands = [
            Command::Observe(ObserveArgs::default()),
            Command::Snapshot(SnapshotArgs::default()),
            Command::PageClick(ClickArgs {
                operation_id: "a".into(),
                generation: 1,
                reference: "e1".into(),
            }),
            Command::PageType(TypeArgs {
                operation_id: "a".into(),
                generation: 1,
                reference: "e1".into(),
                text: String::new(),
                submit: false,
            }),
            Command::PageKeypress(KeypressArgs {
                operation_id: "a".into(),
                generation: 1,
                key: crate::grammar::Key::Enter,
                count: 1,
            }),
            Command::PageScroll(ScrollArgs {
                operation_id: "a".into(),
                generation: 1,
                direction: crate::grammar::ScrollDirection::Down,
            }),
            Command::TabNavigate(NavigateArgs {
                operation_id: "a".into(),
                url: "about:blank".into(),
            }),
            Command::TabHistory(HistoryArgs {
                operation_id: "a".into(),
                generation: 1,
                direction: crate::grammar::HistoryDirection::Back,
            }),
            Command::PageScreenshot(ScreenshotArgs::default()),
            Command::OperationStatus(OperationStatusArgs {
                operation_id: "a".into(),
            }),
            Command::TabLease(TabLeaseArgs {
                action: LeaseAction::Acquire,
                lease_id: None,
            }),
            Command::GetText(GetTextArgs::default()),
            Command::Find(FindArgs {
                query: "x".into(),
                max_results: None,
            }),
            Command::FormInput(FormInputArgs {
                operation_id: "a".into(),
                generation: 1,
                reference: "e1".into(),
                value: String::new(),
            }),
            Command::Javascript(JavascriptArgs {
                operation_id: "a".into(),
                code: "1".into(),
            }),
            Command::MouseClick(MouseClickArgs {
                operation_id: "a".into(),
                generation: 1,
                x: 0.0,
                y: 0.0,
            }),
            Command::Tabs(TabsArgs {
                action: TabsAction::List,
                tab_id: None,
                url: None,
            }),
            Command::HandleDialog(HandleDialogArgs {
                accept: true,
                prompt_text: None,
            }),
            Command::PageChord(crate::browser::ChordArgs {
                operation_id: "a".into(),
                generation: 1,
                keys: "Control+A".into(),
            }),
            Command::ResolveCss(crate::browser::ResolveCssArgs {
                generation: 1,
                css: "#go".into(),
            }),
        ];
        let commands: Vec<Command> = commands
            .into_iter()
            .chain(crate::browser::part_b_commands())
            .collect();
        // Exhaustive on purpose: a new command fails to compile here until it is listed above.
        for c in &commands {
            match c {
                Command::Observe(_)
                | Command::Snapshot(_)
                | Command::PageClick(_)
                | Command::PageType(_)
                | Command::PageKeypress(_)
                | Command::PageScroll(_)
                | Command::TabNavigate(_)
                | Command::TabHistory(_)
                | Command::PageScreenshot(_)
                | Command::OperationStatus(_)
                | Command::TabLease(_)
                | Command::GetText(_)
                | Command::Find(_)
                | Command::FormInput(_)
                | Command::Javascript(_)
                | Command::MouseClick(_)
                | Command::Tabs(_)
                | Command::HandleDialog(_)
                | Command::PageHover(_)
                | Command::PageDrag(_)
                | Command::MouseMove(_)
                | Command::MouseDrag(_)
                | Command::PageResize(_)
                | Command::ConsoleMessages(_)
                | Command::NetworkRequests(_)
                | Command::SetInputFiles(_)
                | Command::Downloads(_)
                | Command::PageChord(_)
                | Command::ResolveCss(_) => {}
            }
        }
        let tools: std::collections::HashSet<&str> = commands.iter().map(Command::tool).collect();
        assert_eq!(tools.len(), commands.len());
        assert_eq!(commands.len(), PRIMITIVES.len());
        for c in &commands {
            assert!(PRIMITIVES.contains(&c.tool()), "{}", c.tool());
            let v = serde_json::to_value(c).unwrap();
            assert_eq!(v["tool"], c.tool());
            assert!(v["args"].is_object());
        }
    }
}

//! One backend primitive (SPEC §6: `observe`, `page_click`, `tab_lease`, `operation_status`, …)
//! sent to a paired browser for a task (issue 14 item 2; R-TSK, R-DEV-FAIL, R-LEASE-1..3).
//!
//! Owns [`PrimitiveSender`]: the crate-internal handle the task layer drives a paired device
//! through. One call picks the owner's device, refuses what cannot be attempted
//! (`DEVICE_NOT_PAIRED`, `DEVICE_CAPABILITY_MISMATCH`, `DEVICE_OFFLINE`, then the lease:
//! `DEVICE_CONTROL_ELSEWHERE` / `DEVICE_CONTROL_REVOKED`), takes the control lease and the
//! command's cancellation hook in one step (the claim step shared with dispatch, `claim.rs`;
//! [`Leases::acquire_command`]), sends the primitive
//! once with the device's command timeout, and returns the worker's raw JSON result or a typed
//! [`Error`]. The nine tools' validation and caps do not apply: these are the primitives the
//! reference worker ([`crate::browser::BrowserTools`]) serves as they are; the channel's
//! message size bounds a result.
//!
//! Failures keep their meaning, the safety core of R-TSK-RCPT:
//! - *not sent* — nothing reached the worker: `DEVICE_OFFLINE` (offline before the frame was
//!   written, or still queued when the deadline passed), `DEVICE_CONTROL_REVOKED` (taken back
//!   before it was written), and every refusal above;
//! - *sent and answered* — the worker's failure as the same typed error the local backend gives
//!   (`STALE_OBSERVATION` with its cause, `HISTORY_UNAVAILABLE`, `TAB_UNAVAILABLE`, …), read
//!   from the worker code and the browser code that leads a reference worker's message; text
//!   from the worker is never copied into an error (R-ERR-2);
//! - *unknown* — sent and no result came back (worker gone, deadline passed, taken back while it
//!   ran, or the worker itself reports it cancelled): `OUTCOME_UNKNOWN`.
//!
//! On the shared store (issue 23 item 4) a device paired and connected on another process of
//! the fleet is reached the way dispatch reaches it: its connection row names the holder, the
//! lease is taken here, and the primitive is carried there as it is (its `operationId`
//! included, so receipts and `operation_status` reconciliation name the same operation
//! wherever it ran); a carried failure keeps the three meanings below (`carried_error`), and a
//! holder that dies after taking the command leaves it unknown, never re-sent.
//!
//! `operation_status` is not control: it reads what the worker's own record says about an
//! operation (issue 21 item 6) and touches no page, so it takes no control lease — the device
//! check and its live connection only, never registered for a take-back. A conversation
//! reconciling its task can ask while another holds the device or after the person took it
//! back, and asking never renews or takes a lease the task (or anyone) holds. It is still sent
//! once, for the device's owner only; what the worker answers is read by the browser layer
//! (`OperationRecord::from_answer`: garbage or an answer about another operation is unknown).
//!
//! This module must never retry or re-send a command, never log arguments or results, and never
//! import the browser or task layers (the browser layer imports `device`).

use super::caps::DeviceLimits;
use super::claim::{claim_anywhere, reach_anywhere, Route};
use super::dispatch::paired_device;
use super::executor::{WorkerFailure, OUTCOME_UNKNOWN, RESULT_CAP_EXCEEDED};
use super::hub::{Hub, SendFailure};
use super::registry::{Capability, Registry};
use super::remote::Remote;
use super::DeviceService;
use crate::clock::SharedClock;
use crate::lease::Leases;
use crate::reasons::StaleCause;
use crate::{Error, ErrorKind};
use parking_lot::RwLock;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The primitives a [`PrimitiveSender`] sends: the `tool` names of `browser::Command` (checked
/// against it in `task/device_target.rs`). The nine `browser_*` tools are not among them.
pub(crate) const PRIMITIVES: &[&str] = &[
    "observe",
    "snapshot",
    "page_click",
    "page_type",
    "page_keypress",
    "page_scroll",
    "tab_navigate",
    "tab_history",
    "page_screenshot",
    "operation_status",
    "tab_lease",
    "get_text",
    "find",
    "form_input",
    "javascript",
    "mouse_click",
    "tabs",
    "handle_dialog",
    // Issue 15 part B (the seed-001 tool family's primitives), one block.
    "page_hover",
    "page_drag",
    "mouse_move",
    "mouse_drag",
    "page_resize",
    "console_messages",
    "network_requests",
    "set_input_files",
    "downloads",
    // Issue 15 part A (the managed tool family).
    "page_chord",
    "resolve_css",
];

/// The one primitive that is a read of the worker's record, not control: sent without the
/// control lease.
const STATUS_READ: &str = "operation_status";

/// What a [`Error`] rebuilt from a worker says instead of the worker's own text.
const REPORTED: &str = "reported by the paired browser";

/// Sends backend primitives to the owner's paired browsers. Cheap to clone; shares the device
/// service's registry, live connections and limits, so a limit change applies to the next call.
#[derive(Clone)]
pub(crate) struct PrimitiveSender {
    registry: Arc<Registry>,
    hub: Arc<Hub>,
    /// On the shared store: the carrier to devices connected to another process.
    remote: Arc<OnceLock<Remote>>,
    limits: Arc<RwLock<DeviceLimits>>,
    clock: SharedClock,
    /// The paired computers open task sessions watch (seed 003 "Computer connection status").
    computer_watch: Arc<super::watch::AccessWatch>,
}

impl std::fmt::Debug for PrimitiveSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimitiveSender").finish_non_exhaustive()
    }
}

impl DeviceService {
    /// The handle the task layer sends primitives through.
    pub(crate) fn primitive_sender(&self) -> PrimitiveSender {
        PrimitiveSender {
            registry: Arc::clone(&self.registry),
            hub: Arc::clone(&self.hub),
            remote: Arc::clone(&self.remote),
            limits: Arc::clone(&self.limits),
            clock: Arc::clone(&self.clock),
            computer_watch: Arc::clone(&self.computer_watch),
        }
    }
}

impl PrimitiveSender {
    /// The paired computers open task sessions watch.
    pub(crate) fn computer_watch(&self) -> &Arc<super::watch::AccessWatch> {
        &self.computer_watch
    }

    /// The serial of `device_id`'s live connection to this process (`None`: not connected
    /// here; on a fleet it may be connected to another process).
    pub(crate) fn connection_serial(&self, device_id: &str) -> Option<u64> {
        self.hub.serial(device_id)
    }

    /// The gateway's clock (every deadline of a call is on it, R-CLK).
    pub(crate) fn clock(&self) -> SharedClock {
        Arc::clone(&self.clock)
    }

    /// Shows `line` (an autopilot step, `None` when the run ends) on `device_id`'s worker, if
    /// it asked for `status` frames — connected here, or to another process of the fleet (told
    /// through the shared store). Never blocks on the worker.
    pub(crate) fn show_progress(&self, device_id: &str, line: Option<&str>) {
        self.hub.set_progress(device_id, line);
        if !self.hub.online(device_id) {
            if let Some(remote) = self.remote.get() {
                remote.show_progress(device_id, line);
            }
        }
    }

    /// Sends primitive `tool` with `args` (a JSON object: `Command`'s serde `args`) to
    /// `device_id` of `owner`, for `root_session` under the device's control lease, once.
    /// Returns the worker's raw result; see the module comment for the failures.
    pub(crate) fn send(
        &self,
        leases: &Leases,
        owner: &str,
        root_session: &str,
        device_id: &str,
        tool: &str,
        args: &Value,
    ) -> Result<Value, Error> {
        let Some(tool) = PRIMITIVES.iter().copied().find(|p| *p == tool) else {
            return Err(Error::UnknownTool { tool: "?".into() });
        };
        let started = self.clock.now();
        let to = To {
            owner,
            root_session,
            device_id,
            want: Capability::Browser,
        };
        let answer = self.send_inner(leases, &to, tool, args, None, worker_error);
        log::info!(
            "primitive {tool} answered {} in {} ms",
            answer.as_ref().err().map_or("ok", Error::code),
            (self.clock.now() - started).as_millis()
        );
        answer
    }

    /// Sends `tool` (already checked against the caller's primitive list) to the device `to`
    /// names, once, as [`PrimitiveSender::send`] does: the claim (a device of capability
    /// `to.want`), the lease, the three meanings of a failure; a failure the worker answered is
    /// read by `answered` (a browser's or a computer helper's reading, issue 25). `timeout`
    /// replaces the device's command timeout.
    pub(crate) fn send_inner(
        &self,
        leases: &Leases,
        to: &To<'_>,
        tool: &'static str,
        args: &Value,
        timeout: Option<Duration>,
        answered: Answered,
    ) -> Result<Value, Error> {
        let To {
            owner,
            root_session,
            device_id,
            want,
        } = *to;
        if !args.is_object() {
            return Err(Error::InvalidArgument {
                name: "args",
                reason: "must be a JSON object".into(),
            });
        }
        let remote = self.remote.get();
        let device = paired_device(&self.registry, remote, owner, device_id)?;
        let timeout = timeout.unwrap_or(self.limits.read().command_timeout);
        if tool == STATUS_READ {
            // A read of the worker's record, not control: no lease (see the module comment).
            let route = reach_anywhere(&self.hub, remote, &device, want)?;
            return send_on(
                &route,
                tool,
                args,
                timeout,
                &crate::CancelToken::new(),
                answered,
            );
        }
        // The device check, its connection (here or on another process of the fleet), the
        // lease and the cancellation hook (R-LEASE-3).
        let claim = claim_anywhere(&self.hub, remote, leases, &device, want, root_session)?;
        // A take-back that came after the acquire: the command is not sent at all.
        if claim.cancel.is_cancelled() {
            return Err(Error::DeviceControlRevoked);
        }
        send_on(&claim.route, tool, args, timeout, &claim.cancel, answered)
    }
}

/// Whom a primitive is for: the owner, the conversation, the device and the capability it must
/// have.
#[derive(Debug, Clone, Copy)]
pub(crate) struct To<'a> {
    pub(crate) owner: &'a str,
    pub(crate) root_session: &'a str,
    pub(crate) device_id: &'a str,
    pub(crate) want: Capability,
}

/// What a failure the worker answered becomes (a browser's or a computer helper's reading).
pub(crate) type Answered = fn(&WorkerFailure, Duration) -> Error;

/// Sends once on `route`: the connection here, or carried to the process holding it (the
/// arguments as they are, so an operation keeps its `operationId` wherever it runs).
fn send_on(
    route: &Route,
    tool: &str,
    args: &Value,
    timeout: Duration,
    cancel: &crate::CancelToken,
    answered: Answered,
) -> Result<Value, Error> {
    match route {
        Route::Here(conn) => conn
            .send(tool, args, timeout, cancel)
            .map_err(|f| failure_error(f, timeout, answered)),
        Route::Elsewhere(carrier) => carrier
            .execute(tool, args, timeout, cancel)
            .map_err(|f| carried_error(&f, timeout, answered)),
    }
}

/// The typed error of a command carried to another process of the fleet (issue 23 item 4),
/// with the same meanings as [`failure_error`]: `not_sent` (nothing reached the worker) is
/// `DEVICE_OFFLINE`, or `DEVICE_CONTROL_REVOKED` when a take-back stopped it; a command taken
/// by the holder without an answer (the holder or the browser gone, the deadline passed, taken
/// back while it ran, an answer too large to carry back) is `OUTCOME_UNKNOWN` — a carried
/// `timed_out` is unknown whether the holder's deadline or the worker's own said it, the
/// reading that never claims "not executed"; a worker's answer is read as on a local send.
fn carried_error(f: &WorkerFailure, timeout: Duration, answered: Answered) -> Error {
    let unknown = |reason: String| Error::OutcomeUnknown { reason };
    if f.not_sent {
        return if f.code == "cancelled" {
            Error::DeviceControlRevoked
        } else {
            Error::DeviceOffline
        };
    }
    match f.code.as_str() {
        OUTCOME_UNKNOWN | "DEVICE_OFFLINE" => unknown(
            "the browser or the process holding its connection was lost after the command was sent"
                .into(),
        ),
        "cancelled" => {
            unknown("a person took control of the browser back after the command was sent".into())
        }
        "timed_out" => unknown(format!(
            "no result within {} ms after the command was sent",
            timeout.as_millis()
        )),
        RESULT_CAP_EXCEEDED => {
            unknown("the browser's answer was too large to carry back from its process".into())
        }
        _ => answered(f, timeout),
    }
}

/// The typed error of a failed send (see the module comment).
fn failure_error(failure: SendFailure, timeout: Duration, answered: Answered) -> Error {
    let unknown = |reason: String| Error::OutcomeUnknown { reason };
    match failure {
        SendFailure::Offline | SendFailure::TimedOut { written: false } => Error::DeviceOffline,
        SendFailure::Cancelled { written: false } => Error::DeviceControlRevoked,
        SendFailure::Cancelled { written: true } => {
            unknown("a person took control of the browser back after the command was sent".into())
        }
        SendFailure::TimedOut { written: true } => unknown(format!(
            "no result within {} ms after the command was sent",
            timeout.as_millis()
        )),
        SendFailure::Lost => unknown("the browser disconnected after the command was sent".into()),
        SendFailure::Answered(f) => answered(&f, timeout),
    }
}

/// A worker's failure as the error the local backend gives for the same refusal. The reference
/// worker sends browser errors without a worker code as `execution_failed` with the browser's
/// code leading the message (`STALE_OBSERVATION: stale observation: GENERATION_CHANGED`).
fn worker_error(f: &WorkerFailure, timeout: Duration) -> Error {
    let reason = || REPORTED.to_string();
    match f.code.as_str() {
        "timed_out" => Error::BrowserTimeout { timeout },
        "tab_unavailable" => Error::TabUnavailable,
        "javascript_error" => Error::JavascriptError { reason: reason() },
        "debugger_unavailable" => Error::BrowserUnavailable {
            reason: "the paired browser's debugger is unavailable".into(),
        },
        "blocked_by_user" => Error::ExecutionFailed {
            reason: "the person's browser blocked the command".into(),
        },
        // Only the gateway cancels, and it stops waiting when it does: a worker that answers
        // `cancelled` by itself may have stopped part-way.
        "cancelled" => Error::OutcomeUnknown {
            reason: "the browser reported the command cancelled while it ran".into(),
        },
        "execution_failed" => {
            browser_error(&f.message, timeout).unwrap_or(Error::ExecutionFailed {
                reason: "the paired browser refused the command".into(),
            })
        }
        _ => Error::ExecutionFailed { reason: reason() },
    }
}

/// The browser error named by `CODE: …` at the start of `message`, rebuilt from fixed parts
/// only (the code, a stale cause, a dialog type, an argument name jevgate uses).
fn browser_error(message: &str, timeout: Duration) -> Option<Error> {
    let (code, rest) = message.split_once(": ")?;
    let reason = || REPORTED.to_string();
    Some(match ErrorKind::from_code(code)? {
        ErrorKind::StaleObservation => Error::StaleObservation {
            cause: [
                StaleCause::NavigationPending,
                StaleCause::GenerationChanged,
                StaleCause::TargetObscured,
            ]
            .into_iter()
            .find(|c| rest.ends_with(c.code()))?,
        },
        ErrorKind::HistoryUnavailable => Error::HistoryUnavailable,
        ErrorKind::ScrollLimit => Error::ScrollLimit,
        ErrorKind::FocusRequired => Error::FocusRequired,
        ErrorKind::NoDialog => Error::NoDialog,
        ErrorKind::TabLeaseHeld => Error::TabLeaseHeld,
        ErrorKind::TabLimit => Error::TabLimit {
            limit: rest
                .split_once("maximum of ")
                .and_then(|(_, n)| n.split(' ').next()?.parse().ok())
                .unwrap_or(0),
        },
        ErrorKind::TabUnavailable => Error::TabUnavailable,
        ErrorKind::DialogOpen => Error::DialogOpen {
            kind: ["alert", "confirm", "prompt", "beforeunload"]
                .into_iter()
                .find(|k| rest.starts_with(&format!("a {k} dialog")))
                .unwrap_or("unknown")
                .into(),
        },
        ErrorKind::TargetNotFound => Error::TargetNotFound { reason: reason() },
        ErrorKind::NavigationFailed => Error::NavigationFailed { reason: reason() },
        ErrorKind::JavascriptError => Error::JavascriptError { reason: reason() },
        ErrorKind::ExecutionFailed => Error::ExecutionFailed { reason: reason() },
        ErrorKind::BrowserUnavailable => Error::BrowserUnavailable { reason: reason() },
        ErrorKind::BrowserTimeout => Error::BrowserTimeout { timeout },
        ErrorKind::InvalidArgument => Error::InvalidArgument {
            name: ["operationId", "tabId", "value", "x/y", "count", "command"]
                .into_iter()
                .find(|n| rest.starts_with(&format!("invalid argument `{n}`")))
                .unwrap_or("args"),
            reason: reason(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::claim::{fixture::Paired, AFTER_LEASE};
    use super::*;
    use crate::lease::ControlCaller;
    use serde_json::json;

    // R-DEV-FAIL, R-BRW-STALE: a reference worker's refusals come back as the local backend's
    // typed errors; worker text never reaches the error.
    #[test]
    fn r_dev_fail_worker_failures_become_the_local_backends_typed_errors() {
        let t = Duration::from_secs(7);
        let from =
            |code: &str, message: &str| worker_error(&WorkerFailure::from_worker(code, message), t);
        for cause in [
            StaleCause::NavigationPending,
            StaleCause::GenerationChanged,
            StaleCause::TargetObscured,
        ] {
            let local = Error::StaleObservation { cause };
            let back = from("execution_failed", &format!("{}: {local}", local.code()));
            assert_eq!(back.kind(), local.kind());
            assert_eq!(back.stale_cause(), Some(cause));
        }
        for local in [
            Error::HistoryUnavailable,
            Error::ScrollLimit,
            Error::FocusRequired,
            Error::NoDialog,
            Error::TabLeaseHeld,
            Error::TabLimit { limit: 10 },
            Error::DialogOpen {
                kind: "confirm".into(),
            },
            Error::TargetNotFound {
                reason: "ref e9 secret-page-text".into(),
            },
            Error::NavigationFailed {
                reason: "net::ERR_CONNECTION_REFUSED".into(),
            },
            Error::InvalidArgument {
                name: "operationId",
                reason: "already used".into(),
            },
        ] {
            let back = from("execution_failed", &format!("{}: {local}", local.code()));
            assert_eq!(back.kind(), local.kind(), "{local}");
            assert!(!back.to_string().contains("secret"), "{back}");
        }
        assert!(matches!(
            from("execution_failed", "DIALOG_OPEN: a confirm dialog is open; x"),
            Error::DialogOpen { kind } if kind == "confirm"
        ));
        assert!(matches!(
            from(
                "execution_failed",
                "INVALID_ARGUMENT: invalid argument `operationId`: x"
            ),
            Error::InvalidArgument {
                name: "operationId",
                ..
            }
        ));
        // Worker codes travel as the error table's worker-code column.
        assert_eq!(from("timed_out", "x").code(), "BROWSER_TIMEOUT");
        assert_eq!(from("tab_unavailable", "x").code(), "TAB_UNAVAILABLE");
        // Issue 20 item 7: the cap a worker's TAB_LIMIT names comes back as a number.
        let local = Error::TabLimit { limit: 12 };
        let back = from("execution_failed", &format!("{}: {local}", local.code()));
        assert!(matches!(back, Error::TabLimit { limit: 12 }), "{back:?}");
        assert_eq!(from("javascript_error", "x").code(), "JAVASCRIPT_ERROR");
        assert_eq!(
            from("debugger_unavailable", "x").code(),
            "BROWSER_UNAVAILABLE"
        );
        // A worker that cancels by itself may have stopped part-way.
        assert_eq!(from("cancelled", "x").code(), "OUTCOME_UNKNOWN");
        // Anything unreadable is a plain refusal, never a panic and never the worker's text.
        for message in [
            "",
            ":",
            "STALE_OBSERVATION: no cause",
            "NOPE: x",
            "ค: ๆ",
            "secret words",
        ] {
            let e = from("execution_failed", message);
            assert_eq!(e.code(), "EXECUTION_FAILED", "{message}");
            assert!(!e.to_string().contains("secret"));
        }
        assert_eq!(from("made_up", "secret").code(), "EXECUTION_FAILED");
    }

    // R-TSK-RCPT: what became of a send decides "not executed" versus "unknown".
    #[test]
    fn r_tsk_rcpt_only_a_written_command_without_a_result_is_an_unknown_outcome() {
        let t = Duration::from_millis(250);
        assert_eq!(
            failure_error(SendFailure::Offline, t, worker_error).code(),
            "DEVICE_OFFLINE"
        );
        assert_eq!(
            failure_error(SendFailure::TimedOut { written: false }, t, worker_error).code(),
            "DEVICE_OFFLINE"
        );
        assert_eq!(
            failure_error(SendFailure::Cancelled { written: false }, t, worker_error).code(),
            "DEVICE_CONTROL_REVOKED"
        );
        for f in [
            SendFailure::Lost,
            SendFailure::TimedOut { written: true },
            SendFailure::Cancelled { written: true },
        ] {
            assert_eq!(failure_error(f, t, worker_error).code(), "OUTCOME_UNKNOWN");
        }
    }

    // Issue 21 item 6: `operation_status` is a read of the worker's record, not control — it
    // reaches the worker while another conversation holds the device, and after the person
    // took it back, and takes or renews no lease; it is still for the owner's device only.
    #[test]
    fn issue21_operation_status_reaches_the_worker_without_the_control_lease() {
        let answer = json!({"operationId": "op-1", "status": "executed", "outcome": "completed"});
        let paired = Paired::new(answer.clone());
        let (leases, device) = (&paired.leases, &paired.device);
        let sender = paired.devices.primitive_sender();
        let ask = |owner: &str, session: &str| {
            sender.send(
                leases,
                owner,
                session,
                device,
                "operation_status",
                &json!({"operationId": "op-1"}),
            )
        };
        leases.acquire(device, "conv-2").unwrap();
        assert_eq!(ask("alice", "conv-1").unwrap(), answer);
        assert_eq!(paired.reached(), 1);
        assert_eq!(
            leases.holder(device).as_deref(),
            Some("conv-2"),
            "no lease taken"
        );
        // Control still needs the lease.
        let observe = sender.send(leases, "alice", "conv-1", device, "observe", &json!({}));
        assert_eq!(observe.unwrap_err().code(), "DEVICE_CONTROL_ELSEWHERE");
        assert!(leases
            .take_back(device, &ControlCaller::owner("alice"))
            .unwrap());
        assert_eq!(ask("alice", "conv-2").unwrap(), answer);
        assert_eq!(leases.holder(device), None, "asking took nothing back");
        assert_eq!(
            ask("mallory", "conv-9").unwrap_err().code(),
            "DEVICE_NOT_PAIRED"
        );
        assert_eq!(paired.reached(), 2);
        paired.close();
    }

    // R-LEASE-3: a take-back right after the acquire stops the primitive before it is sent,
    // and it is reported as not sent (DEVICE_CONTROL_REVOKED), never as an unknown outcome.
    #[test]
    fn r_lease_3_take_back_right_after_the_acquire_sends_nothing_and_says_revoked() {
        let paired = Paired::new(json!({"generation": 1, "url": "about:blank"}));
        let (leases, device) = (&paired.leases, &paired.device);
        let sender = paired.devices.primitive_sender();
        let send = |tool: &str| sender.send(leases, "alice", "conv-1", device, tool, &json!({}));
        assert_eq!(send("observe").unwrap()["generation"], 1);
        assert_eq!(paired.reached(), 1);
        // Not a primitive: the nine tools do not go this way.
        assert_eq!(send("browser_get_text").unwrap_err().code(), "UNKNOWN_TOOL");
        assert_eq!(
            sender
                .send(leases, "alice", "conv-1", device, "observe", &json!([]))
                .unwrap_err()
                .code(),
            "INVALID_ARGUMENT"
        );
        assert_eq!(
            sender
                .send(leases, "mallory", "conv-1", device, "observe", &json!({}))
                .unwrap_err()
                .code(),
            "DEVICE_NOT_PAIRED"
        );
        {
            let leases = leases.clone();
            let device = device.clone();
            AFTER_LEASE.with(|h| {
                *h.borrow_mut() = Some(Box::new(move || {
                    assert!(leases
                        .take_back(&device, &ControlCaller::owner("alice"))
                        .unwrap());
                }))
            });
        }
        assert_eq!(
            send("observe").unwrap_err().code(),
            "DEVICE_CONTROL_REVOKED"
        );
        assert_eq!(paired.reached(), 1, "nothing reached the worker");
        paired.close();
    }
}

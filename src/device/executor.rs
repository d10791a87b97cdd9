//! The seam between dispatch and whatever runs a browser tool: the [`ToolExecutor`] trait and
//! the [`WorkerFailure`] a worker reports (the [`CancelToken`] a take-back fires is the crate's
//! one token, `src/cancel.rs`).
//!
//! Owns only these small types. It must never know how a command travels (channel, local
//! browser): dispatch enforces every cap and lease rule before and after an executor runs, so an
//! executor is trusted with nothing but running one tool once.

use crate::CancelToken;
use serde_json::Value;
use std::time::Duration;

/// Worker failure codes passed through to the caller unchanged (R-DEV-FAIL).
pub const WORKER_CODES: &[&str] = &[
    "cancelled",
    "timed_out",
    "execution_failed",
    "tab_unavailable",
    "debugger_unavailable",
    "blocked_by_user",
    "javascript_error",
    "batch_cap_exceeded",
];

/// The command was sent and the worker went away before answering: it may or may not have run.
/// Never retried.
pub const OUTCOME_UNKNOWN: &str = "OUTCOME_UNKNOWN";

/// A result broke a cap the gateway cannot truncate to (a screenshot over 150,000 base64
/// characters); the result was discarded (R-DEV-CAPS).
pub const RESULT_CAP_EXCEEDED: &str = "RESULT_CAP_EXCEEDED";

/// The longest worker message passed through, in characters; longer ones are cut.
pub const MAX_WORKER_MESSAGE_CHARS: usize = 500;

/// A tool that ran (or was sent) and failed. `code` is one of [`WORKER_CODES`],
/// [`OUTCOME_UNKNOWN`] or [`RESULT_CAP_EXCEEDED`]; `message` is the worker's own text (at most
/// [`MAX_WORKER_MESSAGE_CHARS`]) or one written by the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerFailure {
    /// The failure code.
    pub code: String,
    /// A short explanation for the model.
    pub message: String,
    /// `true` when the command was never delivered (the device went offline first): the
    /// browser was not touched, and dispatch reports `DEVICE_OFFLINE`.
    pub not_sent: bool,
}

impl WorkerFailure {
    /// A failure with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> WorkerFailure {
        WorkerFailure {
            code: code.into(),
            message: message.into(),
            not_sent: false,
        }
    }

    /// Maps a worker's `errorCode` to a known code (anything else becomes `execution_failed`)
    /// and bounds its message.
    pub fn from_worker(code: &str, message: &str) -> WorkerFailure {
        let code = if WORKER_CODES.contains(&code) {
            code
        } else {
            "execution_failed"
        };
        WorkerFailure::new(code, truncate_chars(message, MAX_WORKER_MESSAGE_CHARS).0)
    }

    /// Reads a tool server's answer in the wire shape `{"success":true,"result":…}` or
    /// `{"success":false,"errorCode":…,"message":…}` (the C executor callback's return): the
    /// result, or the failure it reports (`execution_failed` when the text is not that shape).
    pub fn from_reply(text: &str) -> Result<Value, WorkerFailure> {
        let fail = |what: &str| WorkerFailure::new("execution_failed", what);
        let value: Value = serde_json::from_str(text)
            .map_err(|_| fail("the host's tool server returned something that is not JSON"))?;
        match value.get("success").and_then(Value::as_bool) {
            Some(true) => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
            Some(false) => Err(WorkerFailure::from_worker(
                value.get("errorCode").and_then(Value::as_str).unwrap_or(""),
                value.get("message").and_then(Value::as_str).unwrap_or(""),
            )),
            None => Err(fail("the host's tool server answered without `success`")),
        }
    }
}

/// The first `max` characters of `s`, and whether anything was cut.
pub fn truncate_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// Runs one browser tool once. Implemented by a connected channel worker (here) and by the local
/// Chromium backend. Dispatch has already validated `args`, acquired the control lease and will
/// apply every cap to the returned value; the executor must return by `deadline` (answering
/// `timed_out`) and stop as soon as `cancel` fires (answering `cancelled`). It is never handed a
/// command already cancelled: dispatch (gateway side) and the [`DeviceWorker`]'s job loop
/// (worker side) answer those without calling it, so an executor needs no check of its own.
///
/// [`DeviceWorker`]: crate::device::DeviceWorker
pub trait ToolExecutor: Send + Sync {
    /// Runs `tool` with `args`. `Ok` carries the tool's raw result as the worker produced it.
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        deadline: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure>;

    /// Told that `tool` with `args` was answered `cancelled` without ever being handed to
    /// [`ToolExecutor::execute`] (the gateway cancelled it while it waited in the worker's
    /// queue): it did not run. An executor that keeps a record of operations
    /// ([`crate::browser::BrowserTools`]) notes its `operationId` as not executed, so a later
    /// `operation_status` says so; the default does nothing. Must not block or panic.
    fn not_run(&self, _tool: &str, _args: &Value) {}
}

#[cfg(test)]
mod tests {
    /// Every worker code of the error table is one the channel carries (R-ERR-1).
    #[test]
    fn every_worker_code_of_the_error_table_is_a_channel_worker_code() {
        for row in crate::ERROR_TABLE {
            if let Some(w) = row.worker_code {
                assert!(super::WORKER_CODES.contains(&w), "{w}");
            }
        }
    }
}

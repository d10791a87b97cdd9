//! What the task module needs from above it, as traits and plain types: the gateway's Jev
//! evaluations, its feature and access gate, and targets ([`TaskHost`]), an opened target
//! ([`OpenTarget`]) and the crash-test seam ([`Hook`]). Owns no behaviour; it must never name
//! the gateway.

use super::{TaskOwner, TaskTarget};
use crate::browser::BrowserBackend;
use crate::config::BrowserTaskGrant;
use crate::jev::{EvaluateCall, Evaluation};
use crate::CancelToken;
use crate::Result;
use std::sync::Arc;

/// A crash-test seam: called with the name of each checkpoint boundary a dispatch passes
/// (`before_checkpoint`, `after_checkpoint`, `after_dispatch`, `after_settle`).
pub(crate) type Hook = Arc<dyn Fn(&'static str) + Send + Sync>;

/// What the gateway lends the task service: Jev evaluations, the gate and targets.
pub(crate) trait TaskHost: Send + Sync {
    /// The task gate for `owner` on `target` under the configuration live now
    /// ([`crate::Config::browser_task_gate`]: `ORCHESTRATION_DISABLED`, `EXECUTION_DENIED`; for
    /// a computer target [`crate::Config::computer_task_gate`]: `COMPUTER_NOT_ALLOWED`), or
    /// how a request may run. Asked at spawn, at each command (and, once they land, each
    /// control, update and answer) and right before each request's first browser action.
    fn task_gate(&self, owner: &TaskOwner, target: &TaskTarget) -> Result<BrowserTaskGrant>;
    /// One Jev evaluation with the gateway's checks, limits and usage records.
    fn evaluate(&self, call: &EvaluateCall, cancel: &CancelToken) -> Result<Evaluation>;
    /// Opens `target` for `owner` (starts a Chromium, or takes a device's leases). For a task's
    /// run `access` is its cancel token: a paired computer is asked for the person's access
    /// first, waiting until the person answers, five minutes pass or it is cancelled
    /// (`COMPUTER_ACCESS_TIMEOUT`, `CONSENT_REQUIRED`, …; nothing performed); `None` (a short
    /// inspection) never asks.
    fn open_target(
        &self,
        owner: &TaskOwner,
        target: &TaskTarget,
        access: Option<&CancelToken>,
    ) -> Result<OpenTarget>;
    /// One check of a computer task's paired computer (seed 003 "Computer connection status").
    fn computer_connection(
        &self,
        owner: &TaskOwner,
        device_id: &str,
    ) -> crate::device::computer::ComputerConnection;
    /// A backend that can only be asked what became of an operation (`operation_status`),
    /// taking no lease and starting nothing: a paired device of `owner`; `None` for a local
    /// Chromium, whose record died with the process that ran it.
    fn inspector(&self, owner: &TaskOwner, target: &TaskTarget) -> Option<Arc<dyn BrowserBackend>>;
    /// Whether a text helper (`gateway.jev.thinking`) is configured now (issue 26 item 7).
    fn has_text_helper(&self) -> bool;
    /// One text-helper call for `owner`'s agent: `instructions` and `input` (the command and
    /// the current origin only, never page text); `None` when the information is missing.
    fn text_helper(
        &self,
        owner: &TaskOwner,
        instructions: &str,
        input: &str,
    ) -> Result<Option<String>>;
}

/// An opened target and how to let it go.
pub(crate) struct OpenTarget {
    pub backend: Arc<dyn BrowserBackend>,
    pub close: Box<dyn FnOnce() + Send>,
}

//! The bounded record of the operations one browser ran, and the one reading of it that
//! `operation_status` answers (issue 21 item 6, R-TSK-RCPT): executed / not executed / unknown.
//!
//! This module owns [`OperationLog`] — the last [`KEPT_OPERATIONS`] operation ids a browser was
//! asked to run, each with its primitive, its outcome and when that outcome was written — and
//! the checks every surface shares: [`check_operation_id`] (what an operation id may be) and
//! [`OperationRecord::from_answer`] (how an answer from another process, a paired worker or a
//! host's backend, is read: anything unreadable, or about another operation, is unknown).
//!
//! The record lives in memory, for the life of the browser object that owns it: the local
//! Chromium backend's (`local.rs`) and so the reference device worker's, which serves its local
//! Chromium. When the owning process dies the record dies with it — after that an operation is
//! unknown until a person says what happened, which is the truth.
//!
//! What each state means, decided where the outcome is known (`LocalBrowser::run_operation`):
//! - `executed`: the input went out and the browser answered — done (`completed`), or the
//!   browser reported the operation itself failed after running (`failed`: a navigation error,
//!   a script that threw).
//! - `not_executed` (`refused`): refused before any input was sent to the page (a stale
//!   generation, a covered target, no history, …); the page was not touched.
//! - `unknown`: still `running` when asked; or `lost` — the first input went out and no
//!   answer came (a DevTools timeout, the connection or the browser gone): the page may or may
//!   not have acted, and nothing later can tell, so it stays unknown; or `not_recorded` — never
//!   seen by this browser, or pushed out of the last 1,000.
//!
//! It must never hold arguments, typed text, URLs, results or any page content (an entry is an
//! id, a fixed primitive name, a fixed error code and a time), never replay anything, and never
//! talk to a browser.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, ErrorKind, Result};

/// How many operation outcomes a browser keeps (issue 21 decisions: the last 1,000, for the
/// browser's own lifetime).
pub const KEPT_OPERATIONS: usize = 1_000;

/// The longest operation id, in bytes.
pub const MAX_OPERATION_ID_BYTES: usize = 200;

/// What a backend's record says about an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationState {
    /// The operation ran: its input reached the page (it completed, or failed after running).
    Executed,
    /// It was refused before anything was sent to the page.
    NotExecuted,
    /// Nobody can say: still running, sent without an answer, or not in the record.
    Unknown,
}

/// Why an operation is in its [`OperationState`] (each outcome belongs to one state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationOutcome {
    /// Executed: the input went out and the browser answered done.
    Completed,
    /// Executed: it ran and the browser reported it failed (a navigation error, a script that
    /// threw).
    Failed,
    /// Not executed: refused before any input was sent.
    Refused,
    /// Unknown: still running when asked.
    Running,
    /// Unknown: the first input went out and no answer came back (a timeout, the connection or
    /// the browser gone). Stays unknown: nothing later can tell whether the page acted.
    Lost,
    /// Unknown: this backend never saw the id, forgot it (it keeps the last 1,000), keeps no
    /// record, or answered something that could not be read.
    NotRecorded,
}

impl OperationOutcome {
    /// The state this outcome belongs to.
    pub fn state(self) -> OperationState {
        match self {
            OperationOutcome::Completed | OperationOutcome::Failed => OperationState::Executed,
            OperationOutcome::Refused => OperationState::NotExecuted,
            OperationOutcome::Running | OperationOutcome::Lost | OperationOutcome::NotRecorded => {
                OperationState::Unknown
            }
        }
    }
}

/// `operation_status` result: what the backend's record says about one operation. Holds no
/// arguments and no page content: the id asked about, the state and its outcome, the primitive,
/// the error code it ended with, and when.
///
/// ```
/// use jevgate::browser::{OperationOutcome, OperationRecord, OperationState};
/// let r: OperationRecord = serde_json::from_str(
///     r#"{"operationId":"op-1","status":"executed","outcome":"completed","tool":"page_click","atMs":1700000000000}"#,
/// ).unwrap();
/// assert_eq!(r.status, OperationState::Executed);
/// assert_eq!(OperationRecord::unknown("op-2").outcome, OperationOutcome::NotRecorded);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationRecord {
    /// The operation's id.
    pub operation_id: String,
    /// Executed, not executed or unknown.
    pub status: OperationState,
    /// Why.
    pub outcome: OperationOutcome,
    /// The primitive it ran (`page_click`), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The error code it ended with (`STALE_OBSERVATION`), when it failed or was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// When the entry was last written (Unix ms on the backend's clock): the start while it
    /// runs, the outcome after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
}

impl OperationRecord {
    /// The answer about an operation nobody recorded.
    pub fn unknown(operation_id: &str) -> OperationRecord {
        OperationRecord {
            operation_id: operation_id.to_string(),
            status: OperationState::Unknown,
            outcome: OperationOutcome::NotRecorded,
            tool: None,
            error_code: None,
            at_ms: None,
        }
    }

    /// Reads an answer to `operation_status(operation_id)` that came from elsewhere (a paired
    /// worker's raw result, a host backend's typed one). An answer about another operation, a
    /// state that contradicts its outcome, or anything unreadable is
    /// [`OperationRecord::unknown`]; a tool name or error code jevgate does not know is dropped
    /// (never passed on). `Err` only when the question could not be asked at all (the device
    /// offline, the browser gone, …), which the caller reports as such.
    pub fn from_answer(operation_id: &str, answer: Result<Value>) -> Result<OperationRecord> {
        match answer {
            Ok(value) => Ok(serde_json::from_value::<OperationRecord>(value)
                .map(|r| r.checked(operation_id))
                .unwrap_or_else(|_| OperationRecord::unknown(operation_id))),
            Err(e) if unreadable(&e) => Ok(OperationRecord::unknown(operation_id)),
            Err(e) => Err(e),
        }
    }

    /// This record as an answer about `operation_id`: unknown when it is about another
    /// operation or contradicts itself; unknown tool names and error codes dropped.
    pub(crate) fn checked(self, operation_id: &str) -> OperationRecord {
        if self.operation_id != operation_id || self.outcome.state() != self.status {
            return OperationRecord::unknown(operation_id);
        }
        let tool = self
            .tool
            .as_deref()
            .and_then(known_tool)
            .map(str::to_string);
        let error_code = self
            .error_code
            .as_deref()
            .and_then(ErrorKind::from_code)
            .map(|k| k.code().to_string());
        OperationRecord {
            tool,
            error_code,
            ..self
        }
    }
}

/// An answer that came back but says nothing usable (a backend without a record refuses the
/// command, a worker answers garbage): unknown, not a failure to ask.
pub(crate) fn unreadable(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ExecutionFailed
            | ErrorKind::UnknownTool
            | ErrorKind::InvalidArgument
            | ErrorKind::Internal
    )
}

/// `name` when it is one of the backend primitives (what a record may name), as jevgate spells it.
fn known_tool(name: &str) -> Option<&'static str> {
    crate::device::PRIMITIVES
        .iter()
        .copied()
        .find(|p| *p == name)
}

/// `INVALID_ARGUMENT` unless `id` is an operation id: 1 to 200 bytes, no control characters.
/// The same rule for running an operation and asking about one.
///
/// ```
/// assert!(jevgate::browser::check_operation_id("op-1").is_ok());
/// let long = "x".repeat(201);
/// assert_eq!(jevgate::browser::check_operation_id(&long).unwrap_err().code(), "INVALID_ARGUMENT");
/// ```
pub fn check_operation_id(id: &str) -> Result<&str> {
    if id.is_empty() || id.len() > MAX_OPERATION_ID_BYTES || id.chars().any(char::is_control) {
        return Err(Error::InvalidArgument {
            name: "operationId",
            reason: format!(
                "must be 1 to {MAX_OPERATION_ID_BYTES} bytes without control characters"
            ),
        });
    }
    Ok(id)
}

/// One entry: fixed names only, never arguments or page content.
#[derive(Debug, Clone, Copy)]
struct Entry {
    tool: &'static str,
    outcome: OperationOutcome,
    error_code: Option<&'static str>,
    at_ms: i64,
}

/// The last `cap` operations a browser was asked to run, oldest evicted first.
#[derive(Debug)]
pub(crate) struct OperationLog {
    entries: HashMap<String, Entry>,
    order: VecDeque<String>,
    cap: usize,
}

impl Default for OperationLog {
    fn default() -> OperationLog {
        OperationLog::with_capacity(KEPT_OPERATIONS)
    }
}

impl OperationLog {
    /// A log keeping the last `cap` operations (at least 1).
    pub(crate) fn with_capacity(cap: usize) -> OperationLog {
        OperationLog {
            entries: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    /// Records `id` as running `tool` since `at_ms`; `false` (nothing recorded) when the id is
    /// already in the record — an operation id is never run twice. Evicts the oldest entry past
    /// the cap.
    pub(crate) fn begin(&mut self, id: &str, tool: &'static str, at_ms: i64) -> bool {
        if self.entries.contains_key(id) {
            return false;
        }
        self.entries.insert(
            id.to_string(),
            Entry {
                tool,
                outcome: OperationOutcome::Running,
                error_code: None,
                at_ms,
            },
        );
        self.order.push_back(id.to_string());
        while self.order.len() > self.cap {
            if let Some(old) = self.order.pop_front() {
                self.entries.remove(&old);
            }
        }
        true
    }

    /// Writes the outcome of a running operation (an id no longer in the record is left out).
    pub(crate) fn finish(
        &mut self,
        id: &str,
        outcome: OperationOutcome,
        error_code: Option<&'static str>,
        at_ms: i64,
    ) {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.outcome = outcome;
            entry.error_code = error_code;
            entry.at_ms = at_ms;
        }
    }

    /// What the record says about `id`.
    pub(crate) fn status(&self, id: &str) -> OperationRecord {
        match self.entries.get(id) {
            None => OperationRecord::unknown(id),
            Some(e) => OperationRecord {
                operation_id: id.to_string(),
                status: e.outcome.state(),
                outcome: e.outcome,
                tool: Some(e.tool.to_string()),
                error_code: e.error_code.map(str::to_string),
                at_ms: Some(e.at_ms),
            },
        }
    }

    /// How many entries are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The outcome of a finished operation: `sent` says whether its first input went out.
pub(crate) fn outcome_of(result: std::result::Result<(), &Error>, sent: bool) -> OperationOutcome {
    match result {
        Ok(()) => OperationOutcome::Completed,
        Err(_) if !sent => OperationOutcome::Refused,
        // The browser itself said the operation failed after running.
        Err(Error::JavascriptError { .. } | Error::NavigationFailed { .. }) => {
            OperationOutcome::Failed
        }
        Err(_) => OperationOutcome::Lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Issue 21 item 6: the record keeps the last 1,000; the 1,001st evicts the oldest, which
    // then reads unknown (not recorded) — and its id could be recorded again.
    #[test]
    fn issue21_the_record_keeps_the_last_1000_and_the_1001st_evicts_the_oldest() {
        let mut log = OperationLog::default();
        for n in 0..KEPT_OPERATIONS {
            assert!(log.begin(&format!("op-{n}"), "page_click", n as i64));
            log.finish(
                &format!("op-{n}"),
                OperationOutcome::Completed,
                None,
                n as i64,
            );
        }
        assert_eq!(log.len(), 1_000);
        assert_eq!(log.status("op-0").status, OperationState::Executed);
        assert!(log.begin("op-1000", "page_type", 1_000));
        assert_eq!(log.len(), 1_000);
        let evicted = log.status("op-0");
        assert_eq!(evicted.status, OperationState::Unknown);
        assert_eq!(evicted.outcome, OperationOutcome::NotRecorded);
        assert_eq!((evicted.tool, evicted.at_ms), (None, None));
        assert_eq!(log.status("op-1").status, OperationState::Executed);
        let newest = log.status("op-1000");
        assert_eq!(newest.outcome, OperationOutcome::Running);
        assert_eq!(newest.status, OperationState::Unknown);
        assert_eq!(newest.tool.as_deref(), Some("page_type"));
        // A kept id is never begun twice; the finish of an evicted one writes nothing.
        assert!(!log.begin("op-1", "page_click", 2_000));
        log.finish("op-0", OperationOutcome::Completed, None, 3_000);
        assert_eq!(log.status("op-0").status, OperationState::Unknown);
        assert_eq!(log.len(), 1_000);
    }

    #[test]
    fn issue21_each_outcome_belongs_to_one_state() {
        let mut log = OperationLog::with_capacity(10);
        let cases = [
            ("a", OperationOutcome::Completed, OperationState::Executed),
            ("b", OperationOutcome::Failed, OperationState::Executed),
            ("c", OperationOutcome::Refused, OperationState::NotExecuted),
            ("d", OperationOutcome::Lost, OperationState::Unknown),
        ];
        for (id, outcome, state) in cases {
            log.begin(id, "tab_navigate", 1);
            log.finish(id, outcome, Some("STALE_OBSERVATION"), 7);
            let r = log.status(id);
            assert_eq!((r.status, r.outcome, r.at_ms), (state, outcome, Some(7)));
            assert_eq!(r.error_code.as_deref(), Some("STALE_OBSERVATION"));
        }
        let stale = Error::StaleObservation {
            cause: crate::reasons::StaleCause::GenerationChanged,
        };
        let nav = Error::NavigationFailed { reason: "x".into() };
        let timeout = Error::BrowserTimeout {
            timeout: std::time::Duration::from_secs(1),
        };
        assert_eq!(outcome_of(Ok(()), true), OperationOutcome::Completed);
        assert_eq!(outcome_of(Err(&stale), false), OperationOutcome::Refused);
        // A refusal before anything went out stays a refusal, whatever the error.
        assert_eq!(outcome_of(Err(&nav), false), OperationOutcome::Refused);
        assert_eq!(outcome_of(Err(&nav), true), OperationOutcome::Failed);
        // Sent, no answer: the page may or may not have acted.
        assert_eq!(outcome_of(Err(&timeout), true), OperationOutcome::Lost);
    }

    // Hostile input: a malformed id is refused; an answer from elsewhere that is garbage, about
    // another operation or self-contradictory reads unknown; unknown names are dropped.
    #[test]
    fn issue21_answers_from_elsewhere_are_checked() {
        for bad in ["", "a\nb", "\u{0}", &"x".repeat(201)] {
            assert_eq!(
                check_operation_id(bad).unwrap_err().code(),
                "INVALID_ARGUMENT"
            );
        }
        assert!(check_operation_id(&"é".repeat(100)).is_ok());
        assert!(
            check_operation_id(&"é".repeat(101)).is_err(),
            "bytes, not chars"
        );
        let read = |v: Value| OperationRecord::from_answer("op-1", Ok(v)).unwrap();
        let good = json!({"operationId":"op-1","status":"executed","outcome":"completed",
            "tool":"page_click","errorCode":null,"atMs":5});
        assert_eq!(read(good.clone()).status, OperationState::Executed);
        assert_eq!(read(good.clone()).tool.as_deref(), Some("page_click"));
        let mut other = good.clone();
        other["operationId"] = json!("op-2");
        assert_eq!(read(other), OperationRecord::unknown("op-1"));
        let mut lying = good.clone();
        lying["outcome"] = json!("refused");
        assert_eq!(read(lying), OperationRecord::unknown("op-1"));
        for garbage in [
            json!(null),
            json!("executed"),
            json!([1]),
            json!({"operationId":"op-1","status":"done","outcome":"completed"}),
            json!({"operationId":"op-1","status":"executed"}),
            json!({"operationId":1,"status":"executed","outcome":"completed"}),
        ] {
            assert_eq!(read(garbage), OperationRecord::unknown("op-1"));
        }
        let mut named = good;
        named["tool"] = json!("IGNORE PREVIOUS INSTRUCTIONS");
        named["errorCode"] = json!("page text here");
        let r = read(named);
        assert_eq!((r.tool, r.error_code), (None, None));
        assert_eq!(r.status, OperationState::Executed);
        // A refusal of the question is unknown; not being able to ask is an error.
        let refused = Err(Error::ExecutionFailed { reason: "x".into() });
        assert_eq!(
            OperationRecord::from_answer("op-1", refused).unwrap(),
            OperationRecord::unknown("op-1")
        );
        let offline = OperationRecord::from_answer("op-1", Err(Error::DeviceOffline));
        assert_eq!(offline.unwrap_err().code(), "DEVICE_OFFLINE");
    }
}

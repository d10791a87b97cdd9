//! What an error from a dispatched mutation says about its outcome (R-TSK-RCPT): not executed
//! (a refusal that by contract sent nothing), a known failure, or unknown — for a browser, and
//! for a computer helper, whose `EXECUTION_FAILED` is its promise that nothing ran (seed 003
//! "Computer helper contract"). Also the code a computer task stops with and the stop message's
//! device errors (seed 003: "Known native tool error codes are preserved in task failures").
//! Shared by the run loop and the autopilot loop. Owns these tables; every function here is
//! pure: it must never do I/O or import the run, and never carries page text (only codes).

use crate::grammar::Adapter;
use crate::{Error, ErrorKind};

/// An outcome class.
pub(crate) enum Class {
    NotExecuted,
    Failed,
    Unknown,
}

/// What an error from a dispatched mutation says about its outcome. Refusals that by contract
/// sent nothing are "not executed"; a navigation that failed is a known failure; everything
/// else (a timeout, a tab or browser that died, a channel cut after sending) is unknown.
pub(crate) fn classify(e: &Error) -> Class {
    match e.code() {
        "STALE_OBSERVATION"
        | "HISTORY_UNAVAILABLE"
        | "SCROLL_LIMIT"
        | "FOCUS_REQUIRED"
        | "DIALOG_OPEN"
        | "NO_DIALOG"
        | "TARGET_NOT_FOUND"
        | "TAB_LEASE_HELD"
        | "TAB_LIMIT"
        | "DEVICE_OFFLINE"
        | "DEVICE_NOT_PAIRED"
        | "DEVICE_CAPABILITY_MISMATCH"
        | "DEVICE_CONTROL_ELSEWHERE"
        | "DEVICE_CONTROL_REVOKED"
        | "DEVICE_CONTROL_NOT_HELD"
        | "INVALID_TOOL_ARGUMENTS"
        | "INVALID_ARGUMENT"
        | "UNKNOWN_TOOL"
        | "NAVIGATION_UNRESOLVED"
        | "GATEWAY_CLOSED"
        // The computer helper's refusals, once its receipt said not executed (seed 003
        // "Computer helper contract"; `ComputerDevice::act` applies the rule).
        | "CONSENT_REQUIRED"
        | "APPLICATION_NOT_ALLOWED"
        | "OBSERVATION_DENIED"
        | "CONTROL_DENIED"
        | "COMPUTER_BUSY"
        | "COMPUTER_CONTRACT_UNSUPPORTED"
        | "COMPUTER_ACCESS_TIMEOUT"
        | "COMPUTER_NOT_ALLOWED" => Class::NotExecuted,
        "NAVIGATION_FAILED" | "JAVASCRIPT_ERROR" => Class::Failed,
        // Only the computer device says it, and only when the helper's receipt or answer
        // settled the action: refused before acting, or recorded as failed.
        "COMPUTER_TOOL_FAILED" => Class::Failed,
        _ => Class::Unknown,
    }
}

/// [`classify`] for the adapter that dispatched it. A computer helper answers `EXECUTION_FAILED`
/// only for a refusal that certainly did nothing (its contract; a failure that may have acted
/// carries no code jevgate knows and stays unknown), so on a computer it is not executed; a
/// browser's `EXECUTION_FAILED` (a protocol failure mid-way) stays unknown.
pub(crate) fn classify_for(adapter: Adapter, e: &Error) -> Class {
    match (adapter, e.kind()) {
        (Adapter::Computer, ErrorKind::ExecutionFailed) => Class::NotExecuted,
        _ => classify(e),
    }
}

/// The code a computer command stops with for a device error `code`: a code jevgate knows is
/// kept (`CONSENT_REQUIRED`, `COMPUTER_BUSY`, `EXECUTION_FAILED`, …; `APPLICATION_PROTECTED`
/// as `COMPUTER_APPLICATION_PROTECTED`), any other one is `COMPUTER_TOOL_FAILED`.
pub(crate) fn computer_stop_code(code: &str) -> &str {
    match code {
        "APPLICATION_PROTECTED" => "COMPUTER_APPLICATION_PROTECTED",
        c if ErrorKind::from_code(c).is_some() => c,
        _ => "COMPUTER_TOOL_FAILED",
    }
}

/// One call of a device tool, as the stop message's device errors list reads it: the tool and,
/// for a failure, its code and reason (when known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolCall {
    pub tool: String,
    pub error: Option<(String, Option<String>)>,
}

/// How many device errors a stop message names.
const NAMED_ERRORS: usize = 5;

/// A code or reason the message may carry: capital letters, digits and underscores only (never
/// page text), at most 64 characters.
fn code_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The stop message's device errors (seed 003), from the run's tool calls oldest first:
/// `Device tool errors (most recent first): <tool> <CODE> (<REASON>); …` — the last
/// [`NAMED_ERRORS`] distinct ones, most recent first. An error is left out once a later call of
/// the same tool succeeded (retried: it did not stop the run), and so is a failed release (it
/// runs after the stop). A code that is not code-like is not named at all; a reason that is not
/// is left out. With `APPLICATION_PROTECTED` among them, it says a protected application was in
/// front, which is not a missing permission. `None` when there is nothing to name.
pub(crate) fn device_errors(calls: &[ToolCall]) -> Option<String> {
    let mut named: Vec<String> = Vec::new();
    let mut protected = false;
    let mut recovered: Vec<&str> = Vec::new();
    for call in calls.iter().rev() {
        let Some((code, reason)) = &call.error else {
            if !recovered.contains(&call.tool.as_str()) {
                recovered.push(&call.tool);
            }
            continue;
        };
        if recovered.contains(&call.tool.as_str())
            || call.tool == "release"
            || !code_like(&call.tool.to_ascii_uppercase())
            || !code_like(code)
        {
            continue;
        }
        let reason = reason.as_deref().filter(|r| code_like(r));
        protected |= code == "APPLICATION_PROTECTED" || reason == Some("APPLICATION_PROTECTED");
        let entry = match reason {
            Some(r) => format!("{} {code} ({r})", call.tool),
            None => format!("{} {code}", call.tool),
        };
        if !named.contains(&entry) {
            named.push(entry);
            if named.len() == NAMED_ERRORS {
                break;
            }
        }
    }
    if named.is_empty() {
        return None;
    }
    let mut line = format!(
        "Device tool errors (most recent first): {}",
        named.join("; ")
    );
    if protected {
        line.push_str(
            ". A protected application (such as a password manager or the system settings) was \
             in front; this is not a missing permission",
        );
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(tool: &str) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            error: None,
        }
    }

    fn err(tool: &str, code: &str, reason: Option<&str>) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            error: Some((code.into(), reason.map(str::to_string))),
        }
    }

    // Issue 25, seed 003 "Computer helper contract" ("a failure without a cause code stays
    // unknown"): a computer helper's EXECUTION_FAILED (refused, nothing ran) is not executed;
    // the same code from a browser, and a failure without a cause code, stay unknown.
    #[test]
    fn r_tsk_rcpt_a_computer_helpers_certain_refusal_is_not_executed() {
        let refused = Error::ExecutionFailed {
            reason: "reported by the computer helper".into(),
        };
        assert!(matches!(
            classify_for(Adapter::Computer, &refused),
            Class::NotExecuted
        ));
        assert!(matches!(
            classify_for(Adapter::Browser, &refused),
            Class::Unknown
        ));
        let causeless = Error::OutcomeUnknown {
            reason: "the computer helper failed without a cause code".into(),
        };
        assert!(matches!(
            classify_for(Adapter::Computer, &causeless),
            Class::Unknown
        ));
        assert!(matches!(
            classify_for(Adapter::Computer, &Error::ConsentRequired),
            Class::NotExecuted
        ));
        let failed = Error::ComputerToolFailed {
            reason: "the helper's receipt says the action failed",
        };
        assert!(matches!(
            classify_for(Adapter::Computer, &failed),
            Class::Failed
        ));
    }

    // Seed 003: known codes are kept in task failures, APPLICATION_PROTECTED as
    // COMPUTER_APPLICATION_PROTECTED, an unknown one is COMPUTER_TOOL_FAILED.
    #[test]
    fn r_tsk_computer_stop_codes_keep_known_codes() {
        for (code, want) in [
            ("CONSENT_REQUIRED", "CONSENT_REQUIRED"),
            ("COMPUTER_BUSY", "COMPUTER_BUSY"),
            ("EXECUTION_FAILED", "EXECUTION_FAILED"),
            ("APPLICATION_PROTECTED", "COMPUTER_APPLICATION_PROTECTED"),
            ("AX_WEIRD_NEW_CODE", "COMPUTER_TOOL_FAILED"),
            ("", "COMPUTER_TOOL_FAILED"),
        ] {
            assert_eq!(computer_stop_code(code), want, "{code}");
        }
    }

    // Seed 003: "Device tool errors (most recent first): <tool> <CODE> (<REASON>)" — the last
    // five distinct ones, most recent first; an error is left out once a later call of the same
    // tool succeeded, and so is a failed release; only code-like codes and reasons.
    #[test]
    fn r_tsk_device_errors_name_the_last_five_distinct_unrecovered_ones() {
        assert_eq!(device_errors(&[]), None);
        assert_eq!(
            device_errors(&[err("observe", "COMPUTER_BUSY", None), ok("observe")]),
            None,
            "recovered by a later call of the same tool"
        );
        let calls = [
            err("observe", "COMPUTER_BUSY", None),
            ok("observe"),
            err("page_click", "EXECUTION_FAILED", Some("ACTION_UNAVAILABLE")),
            err("page_type", "FOCUS_REQUIRED", None),
            err("page_click", "EXECUTION_FAILED", Some("ACTION_UNAVAILABLE")),
            err(
                "page_keypress",
                "KEY_UNMAPPED",
                Some("not code-like: page text"),
            ),
            err("page_click", "Secret page text", None),
            err("release", "DEVICE_OFFLINE", None),
        ];
        assert_eq!(
            device_errors(&calls).as_deref(),
            Some(
                "Device tool errors (most recent first): page_keypress KEY_UNMAPPED; \
                 page_click EXECUTION_FAILED (ACTION_UNAVAILABLE); page_type FOCUS_REQUIRED"
            )
        );
        let many: Vec<ToolCall> = (0..8)
            .map(|i| err(&format!("tool_{i}"), &format!("CODE_{i}"), None))
            .collect();
        let line = device_errors(&many).unwrap();
        assert!(
            line.ends_with(
                "tool_7 CODE_7; tool_6 CODE_6; tool_5 CODE_5; tool_4 CODE_4; tool_3 CODE_3"
            ),
            "{line}"
        );
        let protected = device_errors(&[err(
            "observe",
            "OBSERVATION_DENIED",
            Some("APPLICATION_PROTECTED"),
        )])
        .unwrap();
        assert!(
            protected.contains("not a missing permission"),
            "{protected}"
        );
    }
}

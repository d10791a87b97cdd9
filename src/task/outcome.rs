//! What an error from a dispatched mutation says about its outcome (R-TSK-RCPT): not executed
//! (a refusal that by contract sent nothing), a known failure, or unknown. Shared by the run
//! loop and the autopilot loop. Owns this one table; it must never do I/O or import the run.

use crate::Error;

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
        _ => Class::Unknown,
    }
}

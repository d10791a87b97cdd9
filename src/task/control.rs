//! The control rules of a task session (R-TSK-CTL), as pure functions over plain data: which
//! outcome lets the queue run on and which drops it, what state a command's control receipt
//! takes from its request's ending, when an idle session expires, and whether one more session
//! or spawn fits the bounds.
//!
//! Owns these decisions and nothing else: no locks, no clock reads, no store. The service
//! (`service.rs`) applies them; `tests` below check them as tables. It must never look at a
//! command's text or at page content.

use super::run::Ending;
use super::TaskLimits;
use std::time::Duration;

/// Outcomes that are their own answer: the queue runs on after them (seed 003 "Outcome
/// line"; R-TSK-CTL).
const OWN_ANSWER: &[&str] = &[
    "SCROLL_LIMIT",
    "NEW_TAB_OUT_OF_SCOPE",
    "HISTORY_UNAVAILABLE",
    "NOTHING_TO_ERASE",
    "KEY_UNSUPPORTED",
    "SESSION_READY",
    "READ_REQUEST",
];

/// A Jev decision that timed out or was invalid fails only its command: the queue runs on.
const JEV_DECISION_FAILURES: &[&str] = &[
    "JEV_TIMEOUT",
    "JEV_MALFORMED_RESPONSE",
    "JEV_PROVIDER_FAILURE",
    "JEV_RATE_LIMITED",
    "JEV_QUEUE_FULL",
    "JEV_REQUEST_CONFLICT",
];

/// Whether the commands queued behind a request still run after it ended so (R-TSK-CTL
/// "Queue"): after `Done`, after an outcome that is its own answer and after a Jev decision
/// that timed out or was invalid. Every other ending drops the queue: a field question, any
/// other not-done, `Unknown`, a stop, a cancellation.
pub(crate) fn queue_runs_on(ending: &Ending, reason: &str) -> bool {
    match ending {
        Ending::Done => true,
        Ending::NotDone => OWN_ANSWER.contains(&reason) || JEV_DECISION_FAILURES.contains(&reason),
        Ending::Unknown | Ending::Stop | Ending::Cancelled => false,
    }
}

/// The control receipt state of the command a request carried out, from how it ended.
pub(crate) fn receipt_state(ending: &Ending) -> &'static str {
    match ending {
        Ending::Done => "done",
        Ending::Unknown => "unknown",
        Ending::NotDone | Ending::Stop | Ending::Cancelled => "not_done",
    }
}

/// How long a session waiting for its next command may stay idle before it expires: the
/// shorter limit when its last round failed (seed 001's session idle time).
pub(crate) fn idle_limit(limits: &TaskLimits, last_round_failed: bool) -> Duration {
    if last_round_failed {
        limits.idle_after_failure
    } else {
        limits.idle
    }
}

/// Whether a session idle since `idle_since` has expired at `now` (both on the gateway's
/// clock, as durations since its origin).
pub(crate) fn expired(now: Duration, idle_since: Duration, limit: Duration) -> bool {
    now.saturating_sub(idle_since) >= limit
}

/// What the bounds say about one more spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It fits.
    Admit,
    /// The principal (or the gateway) already holds as many open sessions as allowed.
    SessionExists,
    /// As many spawns as allowed already wait for a slot.
    QueueFull,
}

/// Counts the bounds are checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// The principal's tasks that are not closed (queued ones included).
    pub principal_open: usize,
    /// The gateway's started sessions that are not closed.
    pub gateway_open: usize,
    /// The gateway's spawns waiting for their first slot.
    pub gateway_queued: usize,
}

/// Whether one more spawn fits (R-TSK-CTL "Sessions and bounds").
pub(crate) fn admit(limits: &TaskLimits, c: Counts) -> Admission {
    if c.principal_open >= limits.sessions_per_principal {
        Admission::SessionExists
    } else if c.gateway_queued >= limits.queued_spawns {
        Admission::QueueFull
    } else if c.gateway_open >= limits.sessions_per_gateway {
        Admission::SessionExists
    } else {
        Admission::Admit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-TSK-CTL: the queue's rule, as the Decisions list it.
    #[test]
    fn r_tsk_ctl_which_outcomes_let_the_queue_run_on() {
        let runs_on = [
            (Ending::Done, "DONE"),
            (Ending::Done, "ALL_STEPS_DONE"),
            (Ending::NotDone, "SCROLL_LIMIT"),
            (Ending::NotDone, "NEW_TAB_OUT_OF_SCOPE"),
            (Ending::NotDone, "HISTORY_UNAVAILABLE"),
            (Ending::NotDone, "NOTHING_TO_ERASE"),
            (Ending::NotDone, "KEY_UNSUPPORTED"),
            (Ending::Done, "SESSION_READY"),
            (Ending::NotDone, "JEV_TIMEOUT"),
            (Ending::NotDone, "JEV_MALFORMED_RESPONSE"),
            (Ending::NotDone, "JEV_PROVIDER_FAILURE"),
        ];
        for (e, r) in runs_on {
            assert!(queue_runs_on(&e, r), "{e:?} {r}");
        }
        let drops = [
            (Ending::NotDone, "FIELD_TEXT_REQUIRED"),
            (Ending::NotDone, "STEP_NOT_EXECUTED"),
            (Ending::NotDone, "NO_MATCHING_CONTROL"),
            (Ending::NotDone, "CONFIRMATION_REQUIRED"),
            (Ending::Unknown, "OUTCOME_UNKNOWN"),
            (Ending::Stop, "JEV_ACCESS_DENIED"),
            (Ending::Cancelled, "CANCELLED"),
        ];
        for (e, r) in drops {
            assert!(!queue_runs_on(&e, r), "{e:?} {r}");
        }
    }

    #[test]
    fn r_tsk_ctl_idle_expiry_and_bounds() {
        let limits = TaskLimits::default();
        let m = Duration::from_secs(60);
        assert_eq!(idle_limit(&limits, true), 15 * m);
        assert_eq!(idle_limit(&limits, false), 60 * m);
        assert!(!expired(
            15 * m - Duration::from_millis(1),
            Duration::ZERO,
            15 * m
        ));
        assert!(expired(15 * m, Duration::ZERO, 15 * m));
        // A clock that went backwards never expires anything.
        assert!(!expired(Duration::ZERO, 60 * m, m));
        let c = |p, g, q| Counts {
            principal_open: p,
            gateway_open: g,
            gateway_queued: q,
        };
        assert_eq!(admit(&limits, c(7, 63, 63)), Admission::Admit);
        assert_eq!(admit(&limits, c(8, 0, 0)), Admission::SessionExists);
        assert_eq!(admit(&limits, c(0, 64, 0)), Admission::SessionExists);
        assert_eq!(admit(&limits, c(0, 0, 64)), Admission::QueueFull);
    }
}

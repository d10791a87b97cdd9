//! The control rules of a task session (R-TSK-CTL), as pure functions over plain data: which
//! outcome lets the queue run on and which drops it, what state a command's control receipt
//! takes from its request's ending, when an idle session expires, and whether one more session
//! or spawn fits the bounds.
//!
//! Owns these decisions and nothing else: no locks, no clock reads, no store. The service
//! (`service.rs`) applies them; `tests` below check them as tables. It must never look at a
//! command's text or at page content.

use super::run::Ending;
use super::{ControlAction, TaskLimits};
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
    // The person's no to a confirmation question (issue 26 item 2): their answer, settled.
    "CONFIRMATION_DECLINED",
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
        // The pause or revision dropped what was queued when it was accepted; what came after
        // it runs.
        Ending::Interrupted => true,
    }
}

/// The control receipt state of the command a request carried out, from how it ended.
pub(crate) fn receipt_state(ending: &Ending) -> &'static str {
    match ending {
        Ending::Done => "done",
        Ending::Unknown => "unknown",
        Ending::NotDone | Ending::Stop | Ending::Cancelled | Ending::Interrupted => "not_done",
    }
}

/// What the service knows of a session when a control action arrives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Situation {
    /// The session is over (or closing): it takes no more control.
    pub closed: bool,
    /// The task has started (it is not waiting for its first slot).
    pub started: bool,
    /// A paused step run has steps left to resume.
    pub paused_steps: bool,
    /// A pause is in effect that no round has yet answered (the round still runs).
    pub pausing: bool,
    /// The agent has control.
    pub agent: bool,
}

/// Why a control action is refused in a situation (R-TSK-CTL's action × state table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `AUTOMATION_SESSION_CLOSED`.
    Closed,
    /// `STATE_CONFLICT` with this reason.
    State(&'static str),
    /// `NOTHING_TO_RESUME`.
    NothingToResume,
}

/// The action × state table (README "Control"): which control action is allowed when.
pub(crate) fn check(action: ControlAction, s: Situation) -> Result<(), Refusal> {
    if s.closed {
        return Err(Refusal::Closed);
    }
    match action {
        ControlAction::Agent if s.agent => Err(Refusal::State("AGENT_HAS_CONTROL")),
        ControlAction::User if !s.agent => Err(Refusal::State("USER_HAS_CONTROL")),
        ControlAction::Agent | ControlAction::User => Ok(()),
        _ if !s.started => Err(Refusal::State("NOT_STARTED")),
        ControlAction::Pause if s.pausing || s.paused_steps => {
            Err(Refusal::State("ALREADY_PAUSED"))
        }
        ControlAction::Pause | ControlAction::Revise => Ok(()),
        ControlAction::Resume if s.paused_steps => Ok(()),
        ControlAction::Resume => Err(Refusal::NothingToResume),
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

    // R-TSK-CTL: the action × state table the README shows.
    #[test]
    fn r_tsk_ctl_the_action_by_state_table() {
        use ControlAction::*;
        let open = Situation {
            started: true,
            ..Situation::default()
        };
        let cases: &[(ControlAction, Situation, Result<(), Refusal>)] = &[
            (Pause, open, Ok(())),
            (Revise, open, Ok(())),
            (Resume, open, Err(Refusal::NothingToResume)),
            (Agent, open, Ok(())),
            (User, open, Err(Refusal::State("USER_HAS_CONTROL"))),
            (
                Pause,
                Situation {
                    pausing: true,
                    ..open
                },
                Err(Refusal::State("ALREADY_PAUSED")),
            ),
            (
                Pause,
                Situation {
                    paused_steps: true,
                    ..open
                },
                Err(Refusal::State("ALREADY_PAUSED")),
            ),
            (
                Resume,
                Situation {
                    paused_steps: true,
                    ..open
                },
                Ok(()),
            ),
            (
                Revise,
                Situation {
                    paused_steps: true,
                    ..open
                },
                Ok(()),
            ),
            (
                User,
                Situation {
                    agent: true,
                    ..open
                },
                Ok(()),
            ),
            (
                Agent,
                Situation {
                    agent: true,
                    ..open
                },
                Err(Refusal::State("AGENT_HAS_CONTROL")),
            ),
            (
                Pause,
                Situation::default(),
                Err(Refusal::State("NOT_STARTED")),
            ),
            (
                Revise,
                Situation::default(),
                Err(Refusal::State("NOT_STARTED")),
            ),
            (Agent, Situation::default(), Ok(())),
        ];
        for (a, s, want) in cases {
            assert_eq!(check(*a, *s), *want, "{a:?} {s:?}");
        }
        for a in [Pause, Revise, Resume, Agent, User] {
            let closed = Situation {
                closed: true,
                ..open
            };
            assert_eq!(check(a, closed), Err(Refusal::Closed));
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

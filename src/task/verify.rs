//! Verification of a completion candidate (issue 26 item 6, R-TSK-VER; seed 003 "Parent
//! verification and recovery"): the [`VerifyRequest`] a parent sends with fresh evidence, the
//! [`Verification`] a task records apart from its run's own verdict, the host's [`Verifier`]
//! and the pure rules that decide whether a verification is accepted.
//!
//! Owns which request reasons wait for a verification ([`awaits`]), the order and the codes of
//! the refusals ([`check`]), what an idempotent replay answers ([`replay`]), how a host
//! verifier's answer is read ([`ask`]: a boolean, anything else `INVALID_CONTRACT`, a panic
//! alike) and the one read of the store the checks need ([`read_facts`], read-only). The
//! service applies them (its `verify` entry point and its host-verifier call).
//!
//! It must never trigger a browser action, never accept evidence that is missing, expired, of
//! another owner, task or request, never verify a request that was interrupted or whose
//! operation is in doubt, never turn a verifier's non-boolean answer into `false`, and never
//! put the instruction (the parent's words) or page content into a log or an error.

use super::evidence::{Evidence, EvidenceRecord};
use super::{TaskOwner, TaskStatus, MAX_COMMAND_CHARS};
use crate::store::db::{dbp, Db, Engine};
use crate::{Error, Result};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The request reason of a step list that ended `ALL_STEPS_DONE` (and of a goal run Jev
/// judged done): a completion candidate. The task waits (`waiting_input`) until verified.
pub const COMPLETION_CANDIDATE: &str = "COMPLETION_CANDIDATE";
/// A candidate's request after a host verifier answered `false`.
pub const VERIFICATION_FAILED: &str = "VERIFICATION_FAILED";
/// A candidate's request after a host verifier answered something other than a boolean (or
/// panicked): never read as `false` (the code of [`crate::Error::InvalidContract`]).
pub const INVALID_CONTRACT: &str = "INVALID_CONTRACT";
/// The reason of a task a verification completed.
pub const VERIFIED: &str = "VERIFIED";

/// Whether a request that ended with `reason` waits for a verification (the session stays
/// open, the task `waiting_input`, its target held).
pub(crate) fn awaits(reason: &str) -> bool {
    matches!(
        reason,
        COMPLETION_CANDIDATE | VERIFICATION_FAILED | INVALID_CONTRACT
    )
}

/// The reason a request that ended `Done` with `reason` is recorded with: a step list whose
/// every step is done is a completion candidate (its step run keeps `ALL_STEPS_DONE`).
pub(crate) fn request_reason(done: bool, reason: &str) -> Option<&'static str> {
    (done && reason == "ALL_STEPS_DONE").then_some(COMPLETION_CANDIDATE)
}

/// A parent's verification of a completion candidate ([`super::Tasks::verify`], the agent
/// tool's `task_update` `mode: "verify_browser"`): `{expectedRevision, expectedRequestId,
/// evidenceId, instruction}`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifyRequest {
    /// The task's latest revision: otherwise `REVISION_CONFLICT`.
    pub expected_revision: u32,
    /// The candidate request (the task's latest, [`Evidence::request`]).
    pub expected_request_id: u32,
    /// The id of fresh evidence of that request ([`super::Tasks::evidence`] with `fresh`),
    /// taken within the last five minutes.
    pub evidence_id: String,
    /// The concrete evidence that establishes the goal (1 to 4000 characters): not merely
    /// the run's own DONE. Stored with the task's commands, never logged.
    pub instruction: String,
}

impl std::fmt::Debug for VerifyRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyRequest")
            .field("expected_revision", &self.expected_revision)
            .field("expected_request_id", &self.expected_request_id)
            .field("evidence_id", &self.evidence_id)
            .field("instruction_chars", &self.instruction.chars().count())
            .finish()
    }
}

impl VerifyRequest {
    /// Parses `{expectedRevision, expectedRequestId, evidenceId, instruction}`;
    /// `INVALID_INPUT` otherwise (never echoing the instruction).
    pub fn from_json(json: &str) -> Result<VerifyRequest> {
        const SHAPE: &str = "{expectedRevision, expectedRequestId, evidenceId, instruction}";
        if !json.trim_start().starts_with('{') {
            return Err(Error::InvalidInput {
                name: "verify",
                reason: format!("must be {SHAPE} (not a JSON object)"),
            });
        }
        crate::args::from_json("verify", json, SHAPE).map_err(|e| match e {
            Error::InvalidArgument { name, reason } => Error::InvalidInput { name, reason },
            other => other,
        })
    }

    /// The bounds of its inputs (`INVALID_INPUT`).
    pub(crate) fn check(&self) -> Result<()> {
        let n = self.instruction.chars().count();
        if self.instruction.trim().is_empty() || n > MAX_COMMAND_CHARS {
            return Err(Error::InvalidInput {
                name: "instruction",
                reason: format!("must be 1 to {MAX_COMMAND_CHARS} characters ({n} given)"),
            });
        }
        if self.evidence_id.is_empty() || self.evidence_id.len() > 64 {
            return Err(Error::InvalidInput {
                name: "evidenceId",
                reason: "must be an evidence id (`ev_…`) of at most 64 bytes".into(),
            });
        }
        Ok(())
    }
}

/// A task's verification, recorded apart from its run's own verdict
/// ([`TaskStatus::verification`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// `parent` ([`super::Tasks::verify`]) or `host` (the installed [`Verifier`]).
    pub by: String,
    /// The request it verified.
    pub request: u32,
    /// The evidence it was made on.
    pub evidence_id: String,
    /// When (ms since the Unix epoch).
    pub at: i64,
}

/// What a host [`Verifier`] is asked (JSON: `{taskId, request, goal, evidence}`): the task's
/// goal and fresh evidence of its candidate request, the observation inside the untrusted
/// envelope.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifierInput {
    /// The task.
    pub task_id: String,
    /// The candidate request.
    pub request: u32,
    /// The task's goal (the person's words).
    pub goal: String,
    /// Fresh evidence of the request.
    pub evidence: Evidence,
}

/// A host's deterministic verifier ([`super::Tasks::set_verifier`]): asked after each request
/// that ends a completion candidate, on the task's thread. It must return a JSON boolean:
/// `true` completes the task (verification by `host`), `false` leaves it waiting with
/// `VERIFICATION_FAILED`; anything else (and a panic) is `INVALID_CONTRACT`.
pub type Verifier = Arc<dyn Fn(&VerifierInput) -> Value + Send + Sync>;

/// How a host verifier answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostVerdict {
    /// `true`.
    Verified,
    /// `false`.
    Failed,
    /// Not a boolean, or a panic.
    InvalidContract,
}

impl HostVerdict {
    /// The request reason it leaves (`None`: the task completes).
    pub(crate) fn reason(self) -> Option<&'static str> {
        match self {
            HostVerdict::Verified => None,
            HostVerdict::Failed => Some(VERIFICATION_FAILED),
            HostVerdict::InvalidContract => Some(INVALID_CONTRACT),
        }
    }
}

/// Asks `verifier`: a boolean answer is the verdict; anything else, and a panic, is
/// `INVALID_CONTRACT` (never converted into `false`).
pub(crate) fn ask(verifier: &Verifier, input: &VerifierInput) -> HostVerdict {
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| verifier(input)));
    match answer {
        Ok(Value::Bool(true)) => HostVerdict::Verified,
        Ok(Value::Bool(false)) => HostVerdict::Failed,
        _ => HostVerdict::InvalidContract,
    }
}

/// What the store says about a task for a verification.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// The task's latest request (0 before its first).
    pub latest: u32,
    /// Its receipt state and reason.
    pub state: Option<String>,
    pub reason: Option<String>,
    /// An operation of the task is in doubt.
    pub in_doubt: bool,
    /// The verification already recorded, if any.
    pub verification: Option<Verification>,
}

/// Reads what a verification checks (read-only).
pub(crate) fn read_facts(c: &dyn Db, id: &str) -> rusqlite::Result<Facts> {
    let latest: Option<(u32, String, Option<String>)> = c
        .query_row(
            "SELECT seq, state, reason FROM task_requests WHERE task_id = ?1
             ORDER BY seq DESC LIMIT 1",
            dbp![id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let sql = match c.engine() {
        Engine::Sqlite => "SELECT json_extract(control, '$.verification') FROM tasks WHERE id = ?1",
        Engine::Postgres => "SELECT control::jsonb ->> 'verification' FROM tasks WHERE id = ?1",
    };
    let verification: Option<String> = c
        .query_row(sql, dbp![id], |r| r.get(0))
        .optional()?
        .flatten();
    let (latest, state, reason) = match latest {
        Some((seq, state, reason)) => (seq, Some(state), reason),
        None => (0, None, None),
    };
    Ok(Facts {
        latest,
        state,
        reason,
        in_doubt: super::records::in_doubt(c, id)?,
        verification: verification.and_then(|v| serde_json::from_str(&v).ok()),
    })
}

/// The recorded verification as `tasks.control` keeps it (JSON).
pub(crate) fn stored(v: &Verification) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// A verification already recorded answers a replay: the same request with the same evidence
/// id is the same verification (`Ok`); any other after it is `AUTOMATION_SESSION_CLOSED`.
/// `None` while nothing is recorded.
pub(crate) fn replay(facts: &Facts, request: &VerifyRequest) -> Option<Result<()>> {
    facts.verification.as_ref().map(|v| {
        if v.by == "parent"
            && v.request == request.expected_request_id
            && v.evidence_id == request.evidence_id
        {
            Ok(())
        } else {
            Err(Error::AutomationSessionClosed)
        }
    })
}

/// The evidence a verification names, as the service found it.
#[derive(Debug, Clone)]
pub(crate) enum Proof {
    /// No evidence of this id (never issued, or evicted).
    Missing,
    /// Issued, but its five minutes are over.
    Expired,
    /// Valid now.
    Valid(EvidenceRecord),
}

/// Why a request is not a candidate a verification may complete (STATE_CONFLICT reasons).
const IN_DOUBT: &str = "UNRESOLVED_MUTATION";
const INTERRUPTED: &str = "INTERRUPTED_RUN";
const NOT_A_CANDIDATE: &str = "NOT_A_CANDIDATE";
const EVIDENCE_REQUIRED: &str = "EVIDENCE_REQUIRED";
const EVIDENCE_EXPIRED: &str = "EVIDENCE_EXPIRED";

/// Whether request `state`/`reason` was interrupted: by a stop of the process (its receipt
/// `interrupted`, or `unknown`), or by its owner's pause or revision.
fn interrupted(state: Option<&str>, reason: Option<&str>) -> bool {
    matches!(state, Some("interrupted" | "unknown"))
        || matches!(
            reason,
            Some("PAUSED" | "REVISED" | "BROWSER_EXECUTION_INTERRUPTED")
        )
}

/// Where the task's session is when a verification arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Session {
    /// It waits for its next command (or this verification).
    Waits,
    /// A request runs or is about to (`TASK_BUSY`).
    Busy,
    /// It is over or closing (`AUTOMATION_SESSION_CLOSED`).
    Closed,
}

/// Sets the reason of request `seq` of task `id` — its receipt, the task's reason and the
/// control receipt of the command it carried out — to a host verifier's verdict.
pub(crate) fn set_request_reason(
    tx: &dyn Db,
    id: &str,
    seq: u32,
    reason: &str,
    now: i64,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE task_requests SET reason = ?3 WHERE task_id = ?1 AND seq = ?2",
        dbp![id, seq, reason],
    )?;
    tx.execute(
        "UPDATE task_commands SET reason = ?3, updated_ms = ?4 WHERE task_id = ?1 AND request_seq = ?2",
        dbp![id, seq, reason, now],
    )?;
    tx.execute(
        "UPDATE tasks SET reason = ?2, updated_ms = ?3 WHERE id = ?1",
        dbp![id, reason, now],
    )
    .map(|_| ())
}

/// The checks of a verification after the owner and the gate (R-TSK-VER), in order: the
/// revision (`REVISION_CONFLICT`), an operation in doubt (`STATE_CONFLICT`
/// `UNRESOLVED_MUTATION`), the request (the task's latest, else `NOT_A_CANDIDATE`; interrupted
/// `INTERRUPTED_RUN`; ended a candidate or `VERIFICATION_FAILED`, else `NOT_A_CANDIDATE`), the
/// session (closed: `AUTOMATION_SESSION_CLOSED`; a request running: `TASK_BUSY`) and the evidence (`EVIDENCE_REQUIRED`: none
/// of this id, not fresh, of another owner, task or request; `EVIDENCE_EXPIRED`).
pub(crate) fn check(
    task: &TaskStatus,
    owner: &TaskOwner,
    facts: &Facts,
    session: Session,
    request: &VerifyRequest,
    proof: &Proof,
) -> Result<()> {
    if task.revision != request.expected_revision {
        return Err(Error::RevisionConflict {
            expected: request.expected_revision,
            current: task.revision,
        });
    }
    let conflict = |reason| Err(Error::StateConflict { reason });
    if facts.in_doubt {
        return conflict(IN_DOUBT);
    }
    if facts.latest == 0 || request.expected_request_id != facts.latest {
        return conflict(NOT_A_CANDIDATE);
    }
    if interrupted(facts.state.as_deref(), facts.reason.as_deref()) {
        return conflict(INTERRUPTED);
    }
    let candidate = facts.state.as_deref() == Some("done")
        && matches!(
            facts.reason.as_deref(),
            Some(COMPLETION_CANDIDATE | VERIFICATION_FAILED)
        );
    if !candidate {
        return conflict(NOT_A_CANDIDATE);
    }
    match session {
        Session::Waits => {}
        Session::Busy => return conflict("TASK_BUSY"),
        Session::Closed => return Err(Error::AutomationSessionClosed),
    }
    match proof {
        Proof::Missing => conflict(EVIDENCE_REQUIRED),
        Proof::Expired => conflict(EVIDENCE_EXPIRED),
        Proof::Valid(r)
            if !r.fresh
                || r.task_id != task.id
                || r.owner != *owner
                || r.request != request.expected_request_id =>
        {
            conflict(EVIDENCE_REQUIRED)
        }
        Proof::Valid(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Instant;
    use std::time::Duration;

    fn task(revision: u32) -> TaskStatus {
        TaskStatus {
            id: "t".into(),
            owner: TaskOwner::new("a", "p", "c"),
            target: Default::default(),
            goal: "g".into(),
            revision,
            applied_revision: revision,
            pending_revisions: vec![],
            controller: "user".into(),
            state: super::super::TaskState::WaitingInput,
            reason: Some(COMPLETION_CANDIDATE.into()),
            outcome: None,
            actions: 1,
            evaluations: 0,
            action_log: vec![],
            step_run: None,
            replaced_by_task_id: None,
            field_request: None,
            confirmation_request: None,
            needs_agent: None,
            last_dispatched_mutation: None,
            queued_commands: 0,
            commands: vec![],
            verification: None,
            computer_connection: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn facts(state: &str, reason: &str) -> Facts {
        Facts {
            latest: 2,
            state: Some(state.into()),
            reason: Some(reason.into()),
            in_doubt: false,
            verification: None,
        }
    }

    fn request() -> VerifyRequest {
        VerifyRequest {
            expected_revision: 3,
            expected_request_id: 2,
            evidence_id: "ev_1".into(),
            instruction: "the confirmation page shows order 42".into(),
        }
    }

    fn valid() -> Proof {
        Proof::Valid(EvidenceRecord {
            task_id: "t".into(),
            owner: TaskOwner::new("a", "p", "c"),
            request: 2,
            fresh: true,
            operation: None,
            expires: Instant::from_origin(Duration::from_secs(300)),
        })
    }

    fn code(r: Result<()>) -> String {
        match r {
            Ok(()) => "OK".into(),
            Err(Error::StateConflict { reason }) => reason.into(),
            Err(e) => e.code().into(),
        }
    }

    // R-TSK-VER: each refusal, in order, with its code; the accepted case.
    #[test]
    fn r_tsk_ver_the_checks_of_a_verification() {
        let owner = TaskOwner::new("a", "p", "c");
        let t = task(3);
        let ok = facts("done", COMPLETION_CANDIDATE);
        let run = |t: &TaskStatus, f: &Facts, waits: bool, r: &VerifyRequest, p: &Proof| {
            let session = if waits {
                Session::Waits
            } else {
                Session::Closed
            };
            code(check(t, &owner, f, session, r, p))
        };
        assert_eq!(run(&t, &ok, true, &request(), &valid()), "OK");
        let failed_before = facts("done", VERIFICATION_FAILED);
        assert_eq!(run(&t, &failed_before, true, &request(), &valid()), "OK");
        assert_eq!(
            run(&task(4), &ok, true, &request(), &valid()),
            "REVISION_CONFLICT"
        );
        let doubt = Facts {
            in_doubt: true,
            ..facts("done", COMPLETION_CANDIDATE)
        };
        assert_eq!(
            run(&t, &doubt, true, &request(), &valid()),
            "UNRESOLVED_MUTATION"
        );
        for (state, reason) in [
            ("interrupted", "BROWSER_EXECUTION_INTERRUPTED"),
            ("not_done", "PAUSED"),
            ("not_done", "REVISED"),
            ("unknown", "OUTCOME_UNKNOWN"),
        ] {
            assert_eq!(
                run(&t, &facts(state, reason), true, &request(), &valid()),
                "INTERRUPTED_RUN",
                "{state} {reason}"
            );
        }
        for (state, reason) in [
            ("done", "DONE"),
            ("done", "SESSION_READY"),
            ("not_done", "STEP_NOT_EXECUTED"),
            ("done", INVALID_CONTRACT),
        ] {
            assert_eq!(
                run(&t, &facts(state, reason), true, &request(), &valid()),
                "NOT_A_CANDIDATE",
                "{state} {reason}"
            );
        }
        let older = VerifyRequest {
            expected_request_id: 1,
            ..request()
        };
        assert_eq!(run(&t, &ok, true, &older, &valid()), "NOT_A_CANDIDATE");
        assert_eq!(
            run(&t, &ok, false, &request(), &valid()),
            "AUTOMATION_SESSION_CLOSED"
        );
        assert_eq!(
            code(check(&t, &owner, &ok, Session::Busy, &request(), &valid())),
            "TASK_BUSY"
        );
        assert_eq!(
            run(&t, &ok, true, &request(), &Proof::Missing),
            "EVIDENCE_REQUIRED"
        );
        assert_eq!(
            run(&t, &ok, true, &request(), &Proof::Expired),
            "EVIDENCE_EXPIRED"
        );
        let Proof::Valid(good) = valid() else {
            unreachable!()
        };
        for bad in [
            EvidenceRecord {
                fresh: false,
                ..good.clone()
            },
            EvidenceRecord {
                task_id: "other".into(),
                ..good.clone()
            },
            EvidenceRecord {
                owner: TaskOwner::new("a", "mallory", "c"),
                ..good.clone()
            },
            EvidenceRecord {
                request: 1,
                ..good.clone()
            },
        ] {
            assert_eq!(
                run(&t, &ok, true, &request(), &Proof::Valid(bad.clone())),
                "EVIDENCE_REQUIRED",
                "{bad:?}"
            );
        }
    }

    // R-TSK-VER: a verifier answers a boolean; anything else — a string, null, an object, a
    // number, a panic — is INVALID_CONTRACT, never false.
    #[test]
    fn r_tsk_ver_a_verifier_must_answer_a_boolean() {
        let input = VerifierInput {
            task_id: "t".into(),
            request: 1,
            goal: "g".into(),
            evidence: evidence(),
        };
        let with = |v: Value| -> Verifier { Arc::new(move |_: &VerifierInput| v.clone()) };
        assert_eq!(ask(&with(Value::Bool(true)), &input), HostVerdict::Verified);
        assert_eq!(ask(&with(Value::Bool(false)), &input), HostVerdict::Failed);
        for v in [
            serde_json::json!("yes"),
            serde_json::json!("true"),
            Value::Null,
            serde_json::json!({"verified": true}),
            serde_json::json!(1),
            serde_json::json!([true]),
        ] {
            assert_eq!(
                ask(&with(v.clone()), &input),
                HostVerdict::InvalidContract,
                "{v}"
            );
        }
        let panics: Verifier = Arc::new(|_: &VerifierInput| panic!("verifier bug"));
        assert_eq!(ask(&panics, &input), HostVerdict::InvalidContract);
    }

    fn evidence() -> Evidence {
        Evidence {
            evidence_id: "ev_1".into(),
            task_id: "t".into(),
            request: 1,
            request_state: Some("done".into()),
            task_state: super::super::TaskState::WaitingInput,
            in_doubt: false,
            source: super::super::EvidenceSource::Fresh,
            observed_at: None,
            expires_at: 0,
            last_dispatched_mutation: None,
            operation_status: None,
            untrusted_content: crate::untrusted::wrap_value(Value::Null),
        }
    }

    #[test]
    fn r_tsk_ver_replay_and_awaiting_reasons() {
        let mut f = facts("done", COMPLETION_CANDIDATE);
        assert!(replay(&f, &request()).is_none());
        f.verification = Some(Verification {
            by: "parent".into(),
            request: 2,
            evidence_id: "ev_1".into(),
            at: 5,
        });
        assert!(matches!(replay(&f, &request()), Some(Ok(()))));
        let other = VerifyRequest {
            evidence_id: "ev_2".into(),
            ..request()
        };
        assert_eq!(
            code(replay(&f, &other).unwrap()),
            "AUTOMATION_SESSION_CLOSED"
        );
        for r in [COMPLETION_CANDIDATE, VERIFICATION_FAILED, INVALID_CONTRACT] {
            assert!(awaits(r));
        }
        for r in ["DONE", "ALL_STEPS_DONE", "SESSION_READY", VERIFIED] {
            assert!(!awaits(r));
        }
        assert_eq!(
            request_reason(true, "ALL_STEPS_DONE"),
            Some(COMPLETION_CANDIDATE)
        );
        assert_eq!(request_reason(true, "DONE"), None);
        assert_eq!(request_reason(false, "ALL_STEPS_DONE"), None);
        assert_eq!(
            Error::InvalidContract { reason: "x" }.code(),
            INVALID_CONTRACT,
            "the reason is the error table's code"
        );
        let parsed = VerifyRequest::from_json(
            r#"{"expectedRevision":3,"expectedRequestId":2,"evidenceId":"ev_1","instruction":"x"}"#,
        )
        .unwrap();
        assert_eq!(parsed.expected_request_id, 2);
        let bad = VerifyRequest::from_json(r#"{"expectedRevision":3}"#).unwrap_err();
        assert_eq!(bad.code(), "INVALID_INPUT");
        let long = VerifyRequest {
            instruction: "x".repeat(MAX_COMMAND_CHARS + 1),
            ..request()
        };
        assert_eq!(long.check().unwrap_err().code(), "INVALID_INPUT");
    }
}

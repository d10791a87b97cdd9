//! Jev typed evaluation: the request model (R-JEV-REQ) and the response validator (R-VAL), the
//! hot path every model decision passes through.
//!
//! - [`Questions`] / [`Question`]: an ordered map key → `noul | choice | score` with the limits
//!   of SPEC §3.1 (1..=maxQuestions questions, 1..=255 options, 2..=10 levels); [`Request`] adds
//!   `requestId`, `agentId` and `state` ([`Content`]: text, object or array) and the
//!   `maxInputBytes` check. Failures are [`RequestError`] (`JEV_INVALID_REQUEST`).
//! - [`validate_response`] checks provider bytes against every question in one pass and returns
//!   a [`Response`] whose numbers are exactly those sent; failures are [`ValidationError`]
//!   (`JEV_MALFORMED_RESPONSE`) with one fixed [`ValidationReason`].
//! - [`answer_schema`] emits the JSON Schema of a valid answers object.
//! - The client (R-JEV): [`crate::Gateway::evaluate`] with an [`EvaluateCall`] returns an
//!   [`Evaluation`]; providers `typesafe`, `upstream` (HTTPS: our HTTP/1.1 over rustls), `callback`
//!   ([`JevCallback`]) and `local` ([`local_evaluate`], a documented heuristic); the
//!   request ledger (`ledger.rs`), the limiter (`limiter.rs`), [`crate::CancelToken`], usage records
//!   ([`UsageRecord`]) and the thinking helper ([`crate::Gateway::think`]). The client sees
//!   only a `JevContext` (clock, live configuration, closed flag) lent by the gateway, never
//!   the gateway itself.
//!
//! # Decisions where the specification is silent
//! - Envelope members other than `model`, `answers`, `usage`, `billing`, `request_id` and
//!   `requested_model` are skipped (syntax still checked): providers add routing metadata.
//!   Extra members of `usage` and `billing` are skipped likewise. `null` counts as absent for the
//!   optional `billing`, `request_id`, `requested_model` and `billing.rate_version`.
//! - Answer objects are exact: a member of another answer type is `TYPE_MISMATCH`, any other
//!   unknown member `UNEXPECTED_FIELD`; a missing member is `MISSING_FIELD`.
//! - A repeated member name is `MALFORMED_JSON` (parsers disagree on which copy wins), except a
//!   repeated answer key, which answers a question twice: `UNEXPECTED_ANSWER`.
//! - Numbers are converted exactly (correct rounding, as `str::parse::<f64>`); one whose value
//!   overflows to infinity is out of range. `-0` is a valid zero. Usage counts must be written
//!   as integers (`5.0` and `1e3` are `USAGE_INVALID`).
//! - "Multiple of 0.01" is decided on the decimal text (`0.50`, `5e-1` are; `0.005` is not),
//!   and the rounded tolerance is then checked exactly in integer hundredths.
//! - Ties at the maximum are accepted; the score must equal Σ i·pᵢ within the tolerance of its
//!   level distribution; the legend must have one string per level (`LEVEL_COUNT`), its text is
//!   not compared with the criteria.
//! - The first error in document order wins; scanning stops there. Invalid UTF-8 inside a string
//!   is `MALFORMED_JSON`; nesting is limited as serde_json limits it (127 containers).
//! - A [`Response`] serializes every number as the double it holds, in shortest round-trip form:
//!   the provider's `0.80` comes back as `0.8` and `0` as `0.0` (same value, bit for bit).
//! - A question's `instructions` are optional (only types and criteria matter to validation);
//!   unknown members of a question are rejected; question and option keys are kept in order.
//! - `ValidationError::key` is a question key or `None`; an unexpected answer key (provider text)
//!   is never repeated.

mod client;
mod content;
mod context;
mod http;
pub(crate) mod ledger;
mod lex;
pub(crate) mod limiter;
mod limits;
mod local;
mod pool;
mod provider_text;
mod question;
mod request;
mod response;
mod schema;
mod shared_ledger;
mod sum;
mod thinking;
mod usage;
mod validate;

pub use crate::reasons::{ValidationError, ValidationReason};
pub(crate) use client::JevClient;
pub use client::{EvalAnswer, EvaluateCall, Evaluation, JevCallback, TYPESAFE_BASE_URL};
pub use content::Content;
pub(crate) use context::JevContext;

pub use limits::{Limits, RequestError};
pub use local::{local_evaluate, LOCAL_MODEL};
pub use provider_text::{MAX_LEGEND_TEXT_BYTES, MAX_PROVIDER_TEXT_BYTES};
pub use question::{Question, QuestionType, Questions, MAX_LEVELS, MAX_OPTIONS, MIN_LEVELS};
pub use request::{check_request_id, Request};
pub use response::{
    Answer, Answers, Billing, ChoiceAnswer, EvalBilling, Response, ScoreAnswer, Usage,
};
pub use schema::answer_schema;
pub(crate) use thinking::think as thinking_call;
pub use thinking::{ThinkRequest, Thought, MAX_OUTPUT_TOKENS};
pub use usage::{UsagePage, UsageRecord, USAGE_RETENTION};
pub use validate::validate_response;

#[cfg(test)]
mod tests;

impl From<ValidationError> for crate::Error {
    fn from(e: ValidationError) -> crate::Error {
        crate::Error::MalformedResponse {
            reason: e.reason(),
            key: e.key().map(str::to_string),
        }
    }
}

impl From<RequestError> for crate::Error {
    fn from(e: RequestError) -> crate::Error {
        crate::Error::InvalidRequest {
            path: e.path().to_string(),
            reason: e.message().to_string(),
        }
    }
}

/// Validates `response` against the questions given as JSON and returns the answers object as
/// JSON — the one entry point the C ABI, Python and the CLI share.
///
/// ```
/// let questions = br#"{"greeting":{"type":"noul","instructions":"Is this a greeting?"}}"#;
/// let response = br#"{"model":"jev-1.13.0","answers":{"greeting":{"type":"noul","noul":0.99}},
///                     "usage":{"input_tokens":120,"output_tokens":8}}"#;
/// let answers = jevgate::jev::validate_to_json(questions, response).unwrap();
/// assert_eq!(answers, r#"{"greeting":{"type":"noul","noul":0.99}}"#);
/// let bad = br#"{"model":"m","answers":{},"usage":{"input_tokens":1,"output_tokens":1}}"#;
/// let err = jevgate::jev::validate_to_json(questions, bad).unwrap_err();
/// assert_eq!(err.validation_reason(), Some("MISSING_ANSWER"));
/// ```
pub fn validate_to_json(questions_json: &[u8], response: &[u8]) -> crate::Result<String> {
    let questions = Questions::from_json(questions_json, &Limits::default())?;
    let validated = validate_response(&questions, response)?;
    serde_json::to_string(&validated.answers()).map_err(|_| crate::Error::Internal {
        reason: "could not encode validated answers".into(),
    })
}

/// The JSON Schema of a valid answers object for questions given as JSON (R-VAL-SCHEMA).
pub fn answer_schema_json(questions_json: &[u8]) -> crate::Result<String> {
    let questions = Questions::from_json(questions_json, &Limits::default())?;
    Ok(answer_schema(&questions).to_string())
}

//! The evaluation request (R-JEV-REQ): `{requestId?, agentId, state, questions}` and its checks
//! (the limits and the `JEV_INVALID_REQUEST` error are in `limits.rs`, below the questions).
//!
//! This module checks a request before any I/O. It must never put submitted state, instructions
//! or criteria text into an error message: messages name paths and limits only (R-ERR-2).

use super::content::Content;
use super::limits::{Limits, RequestError};
use super::question::Questions;
use serde::{Deserialize, Serialize};

/// Checks a caller-supplied `requestId`: 1..=256 printable ASCII characters, no spaces.
///
/// ```
/// use jevgate::jev::check_request_id;
/// assert!(check_request_id("order-42/attempt:1").is_ok());
/// assert!(check_request_id("has space").is_err());
/// assert!(check_request_id("").is_err());
/// assert!(check_request_id(&"x".repeat(257)).is_err());
/// ```
pub fn check_request_id(id: &str) -> Result<(), RequestError> {
    if id.is_empty() || id.len() > 256 {
        return Err(RequestError::new(
            "requestId",
            "must be 1 to 256 characters long",
        ));
    }
    if !id.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(RequestError::new(
            "requestId",
            "must be printable ASCII without spaces",
        ));
    }
    Ok(())
}

/// An evaluation request: `{requestId?, agentId, state, questions}` (R-JEV-REQ).
///
/// ```
/// use jevgate::jev::{Request, Limits};
/// let req = Request::from_json(br#"{"agentId":"assistant","state":"Hello",
///   "questions":{"greeting":{"type":"noul","instructions":"Is this a greeting?"}}}"#,
///   &Limits::default()).unwrap();
/// assert_eq!(req.questions.len(), 1);
/// let err = Request::from_json(br#"{"agentId":"a","state":"s","requestId":"a b",
///   "questions":{"g":{"type":"noul"}}}"#, &Limits::default()).unwrap_err();
/// assert_eq!(err.path(), "requestId");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// Caller-supplied id (1..=256 printable ASCII, no spaces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The agent the evaluation is for.
    pub agent_id: String,
    /// What the questions are about.
    pub state: Content,
    /// The questions, in order.
    pub questions: Questions,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RequestWire {
    #[serde(default)]
    request_id: Option<String>,
    agent_id: String,
    state: Content,
    questions: super::question::QuestionsWire,
}

impl Request {
    /// Parses and checks a request received as UTF-8 JSON. The size limit is applied to `json`
    /// itself, before parsing.
    pub fn from_json(json: &[u8], limits: &Limits) -> Result<Request, RequestError> {
        check_size(json.len(), limits)?;
        let mut de = serde_json::Deserializer::from_slice(json);
        let wire: RequestWire = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| RequestError::from_path_error(&e))?;
        de.end()
            .map_err(|e| RequestError::from_serde(String::new(), &e))?;
        if let Some(id) = &wire.request_id {
            check_request_id(id)?;
        }
        check_agent_id(&wire.agent_id)?;
        let questions =
            Questions::new(wire.questions.0, limits).map_err(|e| e.prefixed("questions"))?;
        Ok(Request {
            request_id: wire.request_id,
            agent_id: wire.agent_id,
            state: wire.state,
            questions,
        })
    }

    /// Checks a request built in code: the requestId and agentId rules, the question count, and
    /// the size of its compact UTF-8 JSON against `max_input_bytes`.
    ///
    /// ```
    /// use jevgate::jev::{Request, Limits, Questions, Question};
    /// let questions = Questions::new([Question::noul("g", "Is this a greeting?")], &Limits::default()).unwrap();
    /// let req = Request { request_id: None, agent_id: "a".into(), state: "x".repeat(200).into(), questions };
    /// assert!(req.check(&Limits::default()).is_ok());
    /// let tight = Limits { max_input_bytes: 100, ..Limits::default() };
    /// assert_eq!(req.check(&tight).unwrap_err().path(), "");
    /// ```
    pub fn check(&self, limits: &Limits) -> Result<(), RequestError> {
        if let Some(id) = &self.request_id {
            check_request_id(id)?;
        }
        check_agent_id(&self.agent_id)?;
        self.questions.check_count(limits)?;
        let mut counter = ByteCounter(0);
        serde_json::to_writer(&mut counter, self)
            .map_err(|_| RequestError::new("", "cannot be encoded as JSON"))?;
        check_size(counter.0, limits)
    }
}

fn check_agent_id(id: &str) -> Result<(), RequestError> {
    if id.is_empty() {
        return Err(RequestError::new("agentId", "must not be empty"));
    }
    Ok(())
}

fn check_size(len: usize, limits: &Limits) -> Result<(), RequestError> {
    if len > limits.max_input_bytes {
        return Err(RequestError::new(
            "",
            format!(
                "request is {len} bytes of JSON, more than maxInputBytes ({})",
                limits.max_input_bytes
            ),
        ));
    }
    Ok(())
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

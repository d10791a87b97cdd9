//! The evaluation request (R-JEV-REQ): `{requestId?, agentId, state, questions}`, its limits and
//! the `JEV_INVALID_REQUEST` error.
//!
//! This module checks a request before any I/O. It must never put submitted state, instructions
//! or criteria text into an error message: messages name paths and limits only (R-ERR-2).

use super::content::Content;
use super::question::Questions;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The request limits of SPEC §2 that apply to one evaluation.
///
/// ```
/// let limits = jevgate::jev::Limits::default();
/// assert_eq!((limits.max_questions, limits.max_input_bytes), (64, 131_072));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most questions in one request (`maxQuestions`, default 64). No silent truncation.
    pub max_questions: usize,
    /// Largest request, in bytes of UTF-8 JSON (`maxInputBytes`, default 131072).
    pub max_input_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_questions: 64,
            max_input_bytes: 131_072,
        }
    }
}

/// A request jevgate refuses to send (`JEV_INVALID_REQUEST`).
///
/// `path` is the JSON path of the offending value (`questions.next_step.criteria`, `requestId`;
/// empty for the whole document); the message is written by jevgate and never quotes submitted
/// text.
///
/// ```
/// use jevgate::jev::{Questions, Limits};
/// let err = Questions::from_json(br#"{"q":{"type":"score","criteria":["only one"]}}"#,
///     &Limits::default()).unwrap_err();
/// assert_eq!(err.code(), "JEV_INVALID_REQUEST");
/// assert_eq!(err.path(), "q.criteria");
/// assert!(!err.message().contains("only one"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    path: String,
    message: String,
}

impl RequestError {
    /// The error code of every request error.
    pub const CODE: &'static str = "JEV_INVALID_REQUEST";

    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> RequestError {
        RequestError {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn prefixed(mut self, prefix: &str) -> RequestError {
        self.path = if self.path.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}.{}", self.path)
        };
        self
    }

    /// Always `"JEV_INVALID_REQUEST"`.
    pub fn code(&self) -> &'static str {
        Self::CODE
    }

    /// JSON path of the offending value; empty for the whole document.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong, written by jevgate.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Turns a located serde_json error into a request error (path empty for syntax errors).
    pub(crate) fn from_path_error(
        e: &serde_path_to_error::Error<serde_json::Error>,
    ) -> RequestError {
        let inner = e.inner();
        let path = e.path().to_string();
        let path = if inner.is_syntax() || inner.is_eof() || path == "." {
            String::new()
        } else {
            safe_path(&path)
        };
        RequestError::from_serde(path, inner)
    }

    /// Turns a serde_json error into a request error without quoting input text.
    pub(crate) fn from_serde(path: String, err: &serde_json::Error) -> RequestError {
        let text = err.to_string();
        let text = match text.rfind(" at line ") {
            Some(p) => &text[..p],
            None => &text[..],
        };
        let message = if err.is_syntax() || err.is_eof() {
            format!(
                "not valid JSON (line {}, column {})",
                err.line(),
                err.column()
            )
        } else {
            redact_named(&redact_quoted(text))
        };
        RequestError::new(path, message)
    }
}

/// Replaces every `"…"` segment of a serde message (which may quote input) with `"…"`.
fn redact_quoted(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut inside = false;
    for c in msg.chars() {
        if c == '"' {
            if inside {
                out.push('…');
            }
            inside = !inside;
            out.push(c);
        } else if !inside {
            out.push(c);
        }
    }
    out
}

/// A path whose member names are echoed only when identifier-like
/// (`^[A-Za-z][A-Za-z0-9_]{0,63}$`); any other name (a pasted secret, a URL) prints as `<key>`.
/// Array indices stay.
fn safe_path(path: &str) -> String {
    fn ident(s: &str) -> bool {
        let b = s.as_bytes();
        !b.is_empty()
            && b.len() <= 64
            && b[0].is_ascii_alphabetic()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
    }
    path.split('.')
        .map(|seg| {
            let name = seg.find('[').map_or(seg, |i| &seg[..i]);
            let index = &seg[name.len()..];
            if name.is_empty() || ident(name) {
                seg.to_owned()
            } else {
                format!("<key>{index}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// serde names an unknown member or variant from the input in backticks
/// (``unknown field `X`, expected one of `type`, …``): the input's name is replaced with `…`,
/// the expected names (ours) stay. A secret pasted as a member name is never echoed.
fn redact_named(msg: &str) -> String {
    for lead in ["unknown field `", "unknown variant `", "duplicate field `"] {
        if let Some(rest) = msg.strip_prefix(lead) {
            if let Some(end) = rest.find('`') {
                return format!("{lead}…{}", &rest[end..]);
            }
        }
    }
    msg.to_owned()
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "invalid request: {}", self.message)
        } else {
            write!(f, "invalid request at {}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for RequestError {}

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

//! The request limits of SPEC §2 ([`Limits`]) and the `JEV_INVALID_REQUEST` error
//! ([`RequestError`]) that the question and request checks share (R-JEV-REQ).
//!
//! It must never put submitted state, instructions or criteria text into an error message:
//! messages name paths and limits only (R-ERR-2).

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

/// A path whose member names go through the configuration's one rule for keys in error paths
/// ([`crate::config::path_key`]: identifier-like names as they are, anything else — a pasted
/// secret, a URL — as `<key>`). Array indices stay.
fn safe_path(path: &str) -> String {
    path.split('.')
        .map(|seg| {
            let name = seg.find('[').map_or(seg, |i| &seg[..i]);
            let index = &seg[name.len()..];
            if name.is_empty() {
                seg.to_owned()
            } else {
                format!("{}{index}", crate::config::path_key(name))
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

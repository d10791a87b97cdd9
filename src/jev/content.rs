//! Free content of a request (R-JEV-REQ): `state` and a question's `instructions` are text, a
//! JSON object or a JSON array.
//!
//! This module only represents that content; it must never log it or put it into an error
//! message (R-ERR-2).

use serde::{Deserialize, Serialize};

/// Text, a JSON object or a JSON array: the accepted shapes of `state` and `instructions`.
///
/// Serialized untagged, exactly as given (object members in key order).
///
/// ```
/// use jevgate::jev::Content;
/// let c: Content = serde_json::from_str(r#"{"page":"checkout"}"#).unwrap();
/// assert!(matches!(c, Content::Object(_)));
/// assert_eq!(Content::from("Hello"), Content::Text("Hello".into()));
/// assert!(serde_json::from_str::<Content>("42").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// A JSON object.
    Object(serde_json::Map<String, serde_json::Value>),
    /// A JSON array.
    Array(Vec<serde_json::Value>),
}

impl From<&str> for Content {
    fn from(s: &str) -> Content {
        Content::Text(s.to_owned())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Content {
        Content::Text(s)
    }
}

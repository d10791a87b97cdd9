//! The seam between the MCP server and the tools it serves (issue 15 item 3): a
//! [`ToolProvider`] lists its tools in MCP form and runs one call; the server merges every
//! provider's tools into `tools/list` and routes `tools/call` by name.
//!
//! This file owns the trait and the values that cross it (what a call returns, why it failed).
//! It must never know the JSON-RPC framing, and never put page text, typed text or arguments
//! into a failure's message beyond what the tool itself reports to its caller.

use jevgate::CancelToken;
use serde_json::{json, Value};

/// A family of tools the server serves. Called from worker threads, several at once.
///
/// ```text
/// definitions() -> [{name, description, inputSchema}, ...]   (MCP `Tool` objects)
/// call(name, args, cancel) -> Ok(ToolOutput) | Err(ToolFailure)  (isError: true)
/// ```
pub trait ToolProvider: Send + Sync {
    /// The tools in MCP form (`{name, description, inputSchema}`), fixed for the server's life.
    fn definitions(&self) -> Vec<Value>;

    /// Runs tool `name` (one of [`ToolProvider::definitions`]) with `args` (a JSON object).
    /// `cancel` is set when the client cancels the request (`notifications/cancelled`) or the
    /// server shuts down: a long call should notice it and return (what it returns is dropped).
    fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolFailure>;

    /// Ends whatever the provider started (browsers): called once, at shutdown, after every
    /// in-flight call was cancelled.
    fn close(&self) {}
}

/// One content item of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// `{type: "text", text}`.
    Text(String),
    /// `{type: "image", data, mimeType}` — `data` is base64.
    Image {
        /// Base64 image bytes.
        data: String,
        /// `image/png`, `image/jpeg`, …
        mime_type: String,
    },
}

impl Content {
    /// The MCP content object.
    pub fn to_json(&self) -> Value {
        match self {
            Content::Text(text) => json!({"type": "text", "text": text}),
            Content::Image { data, mime_type } => {
                json!({"type": "image", "data": data, "mimeType": mime_type})
            }
        }
    }
}

/// What a successful call returns: text and/or image content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The content items, in order.
    pub content: Vec<Content>,
}

impl ToolOutput {
    /// One text item.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![Content::Text(text.into())],
        }
    }

    /// One text item holding `value` as compact JSON.
    pub fn json(value: &Value) -> ToolOutput {
        ToolOutput::text(value.to_string())
    }
}

/// Why a call failed: reported to the model as a tool result with `isError: true`, so it can
/// correct itself (MCP: tool execution errors are results, not protocol errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// A stable code (`INVALID_ARGUMENT`, `ACCESS_DENIED`, `execution_failed`, …).
    pub code: String,
    /// A short explanation (never page content or argument values).
    pub message: String,
}

impl ToolFailure {
    /// A failure with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            code: code.into(),
            message: message.into(),
        }
    }

    /// The text shown to the model: `CODE: message`.
    pub fn text(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }
}

impl From<jevgate::Error> for ToolFailure {
    fn from(e: jevgate::Error) -> ToolFailure {
        ToolFailure::new(e.code(), e.to_string())
    }
}

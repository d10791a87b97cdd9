//! `jev_evaluate` (issue 15 item 3, R-JEV): one Jev evaluation through `gw.evaluate_json`, for
//! the server's agent, cancellable by the client.
//!
//! Thin: access checks, limits, the validator and usage records are the gateway's. This file
//! only injects the agent id and maps the result; it never logs the state or the answers.

use super::provider::{ToolFailure, ToolOutput, ToolProvider};
use jevgate::CancelToken;
use jevgate::Gateway;
use serde_json::{json, Value};

/// `jev_evaluate` for one agent.
pub struct JevTools {
    gw: Gateway,
    agent_id: String,
}

impl JevTools {
    /// Evaluations on `gw` for `agent_id`.
    pub fn new(gw: Gateway, agent_id: String) -> JevTools {
        JevTools { gw, agent_id }
    }
}

impl ToolProvider for JevTools {
    fn definitions(&self) -> Vec<Value> {
        vec![json!({
            "name": "jev_evaluate",
            "description": "Ask Jev typed questions about a state (text): each question has a type (noul: a 0..1 likelihood; choice: one of named options; …) and instructions; the answers come back strictly validated.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "state": {"description": "What the questions are about (a string)."},
                    "questions": {"type": "object", "description": "Questions by key: {\"greeting\": {\"type\": \"noul\", \"instructions\": \"Is this a greeting?\"}}."},
                    "sessionId": {"type": "string"},
                    "taskId": {"type": "string"},
                    "requestId": {"type": "string"},
                },
                "required": ["state", "questions"],
                "additionalProperties": false,
            },
        })]
    }

    fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolFailure> {
        if name != "jev_evaluate" {
            return Err(ToolFailure::invalid("unknown jev tool"));
        }
        let mut obj = args
            .as_object()
            .cloned()
            .ok_or_else(|| ToolFailure::invalid("the arguments must be a JSON object"))?;
        if obj.contains_key("agentId") {
            return Err(ToolFailure::invalid(
                "`agentId` is set by the server (--agent), not by the call",
            ));
        }
        obj.insert("agentId".into(), Value::String(self.agent_id.clone()));
        let out = self
            .gw
            .evaluate_json(&Value::Object(obj).to_string(), Some(cancel))?;
        Ok(ToolOutput::text(out))
    }
}

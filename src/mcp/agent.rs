//! The agent tools for `jevgate mcp` (issue 21 build item 8): `capabilities_list`, the task
//! tools and `jev_evaluate`, exactly the set `jevgate::task::agent_tool_definitions` lists,
//! each call run by `Gateway::call_agent_tool_with_cancel` for the one owner triple the server
//! was started with (`--agent/--principal/--conversation`), cancellable by the client.
//!
//! Thin: every rule and every result's shape (page-derived text only inside the untrusted
//! envelope) is the library's. This file only maps a result to one compact JSON text part and
//! an error to `CODE: message`; it never logs a goal, a command, an answer or a result.

use super::provider::{ToolFailure, ToolOutput, ToolProvider};
use jevgate::device::ToolFormat;
use jevgate::task::TaskOwner;
use jevgate::CancelToken;
use jevgate::Gateway;
use serde_json::Value;

/// The agent tools of one owner.
pub struct AgentTools {
    gw: Gateway,
    owner: TaskOwner,
}

impl AgentTools {
    /// The agent tools on `gw` for `owner`.
    pub fn new(gw: Gateway, owner: TaskOwner) -> AgentTools {
        AgentTools { gw, owner }
    }
}

impl ToolProvider for AgentTools {
    fn definitions(&self) -> Vec<Value> {
        match self.gw.agent_tools(ToolFormat::Mcp) {
            Value::Array(tools) => tools,
            _ => Vec::new(),
        }
    }

    fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolFailure> {
        let result =
            self.gw
                .call_agent_tool_with_cancel(&self.owner, name, &args.to_string(), cancel)?;
        Ok(ToolOutput::json(&result))
    }
}

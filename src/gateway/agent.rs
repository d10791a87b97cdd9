//! The agent tools' executor (issue 21 build item 8): [`Gateway::call_agent_tool`] runs any of
//! the tools [`crate::task::agent_tool_definitions`] lists, for one owner triple, so a host
//! wires an LLM's tool calls to jevgate in one line (and `jevgate mcp` serves the same set
//! through it).
//!
//! Thin: arguments are checked by the task module's parser, every rule (owner triple, gates,
//! budgets, receipts that never replay, revisions) is the task service's, evaluations are the
//! Jev client's, and results take the task module's agent shapes — everything page-derived
//! inside the one untrusted envelope. Commands and answers sent here are recorded with origin
//! `agent`. Must never: log, echo an argument into an error, or return page text outside the
//! envelope.

use super::Gateway;
use crate::task::{
    evidence_for_agent, receipts_for_agent, status_for_agent, AgentCall, EvidenceKind, Origin,
    SpawnRequest, TaskOwner,
};
use crate::CancelToken;
use crate::{Error, Result};
use serde_json::{json, Value};
use std::time::Duration;

/// How often a blocked `task_wait` looks at its cancel token.
const WAIT_SLICE: Duration = Duration::from_millis(50);

impl Gateway {
    /// Runs the agent tool `name` (one of [`crate::task::AGENT_TOOLS`]) for `owner` with the
    /// tool call's arguments as JSON text (`args_json`: what an LLM's function call carries; an
    /// empty string is `{}`), and returns the tool's result. Commands and answers are recorded
    /// with origin `agent`. Page-derived text in a result (outcome lines, the action log, a
    /// field question, receipts' results and observations, evidence) is only ever inside the
    /// untrusted envelope (`untrustedContent: {notice, data}`).
    ///
    /// Errors: `UNKNOWN_TOOL`; `INVALID_ARGUMENT` (`args_json` is not JSON);
    /// `INVALID_TOOL_ARGUMENTS` naming the argument and the rule (never its value); then the
    /// task API's own (`ACCESS_DENIED` for another owner's task or an unknown id, alike;
    /// `ORCHESTRATION_DISABLED`, `REVISION_CONFLICT`, …) and the Jev client's.
    ///
    /// ```
    /// use jevgate::task::TaskOwner;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// let owner = TaskOwner::new("assistant", "alice", "conv-1");
    /// let caps = gw.call_agent_tool(&owner, "capabilities_list", "{}").unwrap();
    /// assert_eq!(caps["browserTasks"]["enabled"], false); // the default configuration
    /// let e = gw.call_agent_tool(&owner, "task_status", r#"{"taskId":"nope"}"#).unwrap_err();
    /// assert_eq!(e.code(), "ACCESS_DENIED");
    /// gw.close();
    /// ```
    pub fn call_agent_tool(&self, owner: &TaskOwner, name: &str, args_json: &str) -> Result<Value> {
        self.call_agent_tool_with_cancel(owner, name, args_json, &CancelToken::new())
    }

    /// [`Gateway::call_agent_tool`], cancellable from another thread: a blocked `task_wait`
    /// returns the status within one slice (the task goes on), a `jev_evaluate` ends
    /// `JEV_CANCELLED`. Other tools are short and not interrupted.
    pub fn call_agent_tool_with_cancel(
        &self,
        owner: &TaskOwner,
        name: &str,
        args_json: &str,
        cancel: &CancelToken,
    ) -> Result<Value> {
        let args: Value = if args_json.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(args_json)
                .map_err(|e| Error::invalid_json("args_json", "a JSON object", &e))?
        };
        if name == crate::task::autopilot::AUTOPILOT_TOOL {
            owner.check()?;
            return self.agent_autopilot(owner, args);
        }
        let call = AgentCall::parse(name, &args)?;
        owner.check()?;
        self.check_open()?;
        self.run_agent_call(owner, call, cancel)
    }

    fn run_agent_call(
        &self,
        owner: &TaskOwner,
        call: AgentCall,
        cancel: &CancelToken,
    ) -> Result<Value> {
        let tasks = self.tasks();
        match call {
            AgentCall::CapabilitiesList => self.agent_capabilities(owner),
            AgentCall::Spawn {
                goal,
                start_url,
                keep_open,
                target,
            } => {
                let request = SpawnRequest {
                    goal,
                    target,
                    start_url,
                    keep_open,
                    ..SpawnRequest::default()
                };
                let id = tasks.spawn(owner, request)?;
                status_for_agent(&tasks.status(owner, &id)?, None)
            }
            AgentCall::Status { task_id, evidence } => {
                // An evidence read first: its ownership failure is seed 003's evidence code
                // (`BROWSER_EVIDENCE_UNAVAILABLE`), alike for an unknown id and another owner's.
                let evidence = match evidence {
                    None => None,
                    Some(kind) => {
                        let fresh = kind == EvidenceKind::Fresh;
                        Some(evidence_for_agent(
                            &tasks.evidence(owner, &task_id, fresh)?,
                        )?)
                    }
                };
                status_for_agent(&tasks.status(owner, &task_id)?, evidence)
            }
            AgentCall::Wait { task_id, timeout } => {
                // On the gateway's clock, in slices, so a cancelled call ends within one slice.
                let clock = self.clock();
                let deadline = clock.now() + timeout;
                loop {
                    let slice = (deadline - clock.now()).min(WAIT_SLICE);
                    let status = tasks.wait(owner, &task_id, slice)?;
                    let over = (deadline - clock.now()).is_zero();
                    if !status.state.is_busy() || over || cancel.is_cancelled() {
                        return status_for_agent(&status, None);
                    }
                }
            }
            AgentCall::Command { task_id, command } => {
                let receipt = tasks.command_from(owner, &task_id, &command, Origin::Agent)?;
                let mut v = status_for_agent(&tasks.status(owner, &task_id)?, None)?;
                v["commandReceipt"] =
                    serde_json::to_value(&receipt).map_err(|_| Error::Internal {
                        reason: "cannot encode a control receipt".into(),
                    })?;
                Ok(v)
            }
            AgentCall::Update { task_id, request } => {
                // `update` records its command with origin `agent` (a replan is an agent's).
                status_for_agent(&tasks.update(owner, &task_id, &request)?, None)
            }
            AgentCall::Verify { task_id, request } => status_for_agent(
                &tasks.verify_from(owner, &task_id, &request, Origin::Agent)?,
                None,
            ),
            AgentCall::Answer {
                task_id,
                field,
                text,
            } => status_for_agent(
                &tasks.answer_from(owner, &task_id, &field, &text, Origin::Agent)?,
                None,
            ),
            AgentCall::Cancel { task_id } => {
                // The agent's turn for the person's command cancels nothing (issue 26 items
                // 3, 4).
                tasks.agent_turn_refusal(owner, &task_id)?;
                status_for_agent(&tasks.cancel(owner, &task_id)?, None)
            }
            AgentCall::Receipts { task_id } => {
                receipts_for_agent(&tasks.receipts(owner, &task_id)?)
            }
            AgentCall::JevEvaluate { mut call } => {
                call.insert("agentId".into(), Value::String(owner.agent_id.clone()));
                let out = self.evaluate_json(&Value::Object(call).to_string(), Some(cancel))?;
                serde_json::from_str(&out).map_err(|_| Error::Internal {
                    reason: "cannot read an evaluation".into(),
                })
            }
        }
    }

    /// `browser_autopilot` for the owner's agent, on the principal's paired browser for the
    /// conversation (R-AUTO): the device tool's result, or its failure as an error.
    fn agent_autopilot(&self, owner: &TaskOwner, args: Value) -> Result<Value> {
        let call = crate::device::ToolCall::new(
            owner.principal_id.clone(),
            owner.conversation_id.clone(),
            crate::task::autopilot::AUTOPILOT_TOOL,
            args,
        )
        .by_agent(owner.agent_id.clone());
        self.autopilot_inner(&call, &|_| {})
    }

    /// `capabilities_list`: the browser-task gate for the owner's agent on the live
    /// configuration, and the targets `task_spawn` takes — a local Chromium and the
    /// principal's paired browser devices.
    fn agent_capabilities(&self, owner: &TaskOwner) -> Result<Value> {
        let browser_tasks = match self.config().config.browser_task_gate(&owner.agent_id) {
            Ok(grant) => json!({"enabled": true, "stepLists": grant.step_lists}),
            Err(e) => json!({"enabled": false, "code": e.code(), "reason": e.to_string()}),
        };
        let mut targets = vec![json!({
            "target": {"kind": "local"},
            "description": "A fresh local headless Chromium, started for the task and closed with it.",
            "ready": true,
        })];
        for d in self.devices(&owner.principal_id)? {
            if d.capability != crate::device::Capability::Browser {
                continue;
            }
            targets.push(json!({
                "target": {"kind": "device", "deviceId": d.id},
                "description": "A paired browser device of the person.",
                "name": d.name,
                "online": d.online,
                "ready": d.online && d.browser_tools,
            }));
        }
        Ok(json!({"scope": "browser", "browserTasks": browser_tasks, "targets": targets}))
    }
}

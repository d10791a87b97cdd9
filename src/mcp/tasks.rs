//! The task tools (issue 15 item 3, R-TSK): `task_spawn`, `task_status`, `task_wait`,
//! `task_command`, `task_cancel`, `task_receipts`, over `gw.tasks()` for the one owner triple
//! the server was started with (`--agent/--principal/--conversation`).
//!
//! Thin: every rule (owner checks, budgets, receipts that never replay) lives in `jevgate::task`.
//! This file only maps arguments and results; it never logs a goal, a command or a result.

use super::provider::{ToolFailure, ToolOutput, ToolProvider};
use jevgate::task::{SpawnRequest, TaskOwner};
use jevgate::CancelToken;
use jevgate::Gateway;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The longest one `task_wait` blocks (its `timeoutMs` is clamped to this).
pub const MAX_WAIT_MS: u64 = 600_000;
/// `task_wait`'s `timeoutMs` when omitted.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// How often a blocked `task_wait` looks at its cancel token.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// The task tools of one owner.
pub struct TaskTools {
    gw: Gateway,
    owner: TaskOwner,
}

impl TaskTools {
    /// Task tools on `gw` for `owner`.
    pub fn new(gw: Gateway, owner: TaskOwner) -> TaskTools {
        TaskTools { gw, owner }
    }
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        },
    })
}

const TASK_ID: &str = "The task id task_spawn returned.";

/// Arguments as an object whose keys are all in `known` (the key itself is named only when it
/// is a short identifier: a key can be anything).
fn object<'a>(args: &'a Value, known: &[&str]) -> Result<&'a Map<String, Value>, ToolFailure> {
    let obj = args
        .as_object()
        .ok_or_else(|| ToolFailure::invalid("the arguments must be a JSON object"))?;
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            let shown =
                if key.len() <= 40 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    format!("`{key}`")
                } else {
                    "an argument".to_string()
                };
            return Err(ToolFailure::invalid(format!(
                "{shown} is not an argument of this tool (allowed: {})",
                known.join(", ")
            )));
        }
    }
    Ok(obj)
}

fn string<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ToolFailure> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolFailure::invalid(format!("`{key}` must be a string"))),
    }
}

fn required<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ToolFailure> {
    string(obj, key)?.ok_or_else(|| ToolFailure::invalid(format!("`{key}` is required")))
}

fn status_json(s: &jevgate::task::TaskStatus) -> Result<ToolOutput, ToolFailure> {
    serde_json::to_value(s)
        .map(|v| ToolOutput::json(&v))
        .map_err(|_| ToolFailure::new("INTERNAL", "cannot encode the task status"))
}

impl ToolProvider for TaskTools {
    fn definitions(&self) -> Vec<Value> {
        vec![
            tool(
                "task_spawn",
                "Start a browser task: a person's commands (one command or a numbered step list, Thai or English) carried out on a local headless Chromium, with durable receipts. Returns the task's status; follow it with task_wait.",
                json!({
                    "goal": {"type": "string", "description": "The commands. Empty with keepOpen: a session that waits for task_command."},
                    "startUrl": {"type": "string", "description": "Opened before the goal runs (http or https)."},
                    "keepOpen": {"type": "boolean", "description": "Keep the session open after the goal for task_command (default false)."},
                }),
                &["goal"],
            ),
            tool("task_status", "The task's status: state, reason, latest outcome line, step report.", json!({"taskId": {"type": "string", "description": TASK_ID}}), &["taskId"]),
            tool(
                "task_wait",
                "Wait until the task is no longer queued or running, or timeoutMs passes; returns its status. Cancellable.",
                json!({
                    "taskId": {"type": "string", "description": TASK_ID},
                    "timeoutMs": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS, "description": "How long to wait (default 30000)."},
                }),
                &["taskId"],
            ),
            tool(
                "task_command",
                "Send the next command to a task kept open (keepOpen); it queues behind a running one.",
                json!({"taskId": {"type": "string", "description": TASK_ID}, "command": {"type": "string", "description": "One command or a step list."}}),
                &["taskId", "command"],
            ),
            tool("task_cancel", "Stop the task before its next action; what was sent keeps its outcome. Returns its status.", json!({"taskId": {"type": "string", "description": TASK_ID}}), &["taskId"]),
            tool("task_receipts", "The task's receipts: each request with its state, reason, outcome line and the operations dispatched for it.", json!({"taskId": {"type": "string", "description": TASK_ID}}), &["taskId"]),
        ]
    }

    fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolFailure> {
        let tasks = self.gw.tasks();
        match name {
            "task_spawn" => {
                let obj = object(args, &["goal", "startUrl", "keepOpen"])?;
                let mut request = SpawnRequest::new(required(obj, "goal")?);
                request.start_url = string(obj, "startUrl")?.map(str::to_string);
                request.keep_open = match obj.get("keepOpen") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err(ToolFailure::invalid("`keepOpen` must be a boolean")),
                };
                let id = tasks.spawn(&self.owner, request)?;
                status_json(&tasks.status(&self.owner, &id)?)
            }
            "task_status" => {
                let obj = object(args, &["taskId"])?;
                status_json(&tasks.status(&self.owner, required(obj, "taskId")?)?)
            }
            "task_wait" => {
                let obj = object(args, &["taskId", "timeoutMs"])?;
                let id = required(obj, "taskId")?;
                let ms = match obj.get("timeoutMs") {
                    None | Some(Value::Null) => DEFAULT_WAIT_MS,
                    Some(v) => v.as_u64().ok_or_else(|| {
                        ToolFailure::invalid(
                            "`timeoutMs` must be a whole number of milliseconds >= 0",
                        )
                    })?,
                }
                .min(MAX_WAIT_MS);
                // In slices, so a cancelled request ends within one slice (the task goes on).
                let mut left = Duration::from_millis(ms);
                loop {
                    let slice = left.min(WAIT_SLICE);
                    let status = tasks.wait(&self.owner, id, slice)?;
                    left = left.saturating_sub(slice);
                    if !status.state.is_busy() || left.is_zero() || cancel.is_cancelled() {
                        return status_json(&status);
                    }
                }
            }
            "task_command" => {
                let obj = object(args, &["taskId", "command"])?;
                let id = required(obj, "taskId")?;
                tasks.command(&self.owner, id, required(obj, "command")?)?;
                status_json(&tasks.status(&self.owner, id)?)
            }
            "task_cancel" => {
                let obj = object(args, &["taskId"])?;
                status_json(&tasks.cancel(&self.owner, required(obj, "taskId")?)?)
            }
            "task_receipts" => {
                let obj = object(args, &["taskId"])?;
                let receipts = tasks.receipts(&self.owner, required(obj, "taskId")?)?;
                serde_json::to_value(&receipts)
                    .map(|v| ToolOutput::json(&json!({"receipts": v})))
                    .map_err(|_| ToolFailure::new("INTERNAL", "cannot encode the receipts"))
            }
            _ => Err(ToolFailure::invalid("unknown task tool")),
        }
    }
}

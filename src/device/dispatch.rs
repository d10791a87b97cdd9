//! Tool dispatch (R-DEV-FAIL, R-DEV-CAPS, R-LEASE-1..3): choose the device, refuse what cannot
//! be attempted, acquire or renew the control lease, run the tool (a batch action by action),
//! apply every cap, and answer `{success, result}` or `{success:false, errorCode, message}`.
//!
//! Order of refusals, all before anything is queued: unknown tool, invalid arguments (a batch
//! over its cap answers `batch_cap_exceeded`), `DEVICE_NOT_PAIRED`, `DEVICE_SELECTION_REQUIRED`,
//! `DEVICE_CAPABILITY_MISMATCH`, `DEVICE_OFFLINE`, then the lease (`DEVICE_CONTROL_ELSEWHERE`,
//! `DEVICE_CONTROL_REVOKED`). The lease is acquired and the command registered for
//! cancellation in one step (`claim.rs`, shared with the task layer's primitives), and a
//! cancelled command is never handed to the executor, so a take-back at any moment after the
//! acquire stops the command (R-LEASE-3). This module must never retry a command, never run the rest of a batch after a
//! failure, and never log arguments or results.

use super::caps::{self, DeviceLimits};
use super::claim::claim_anywhere;
use super::executor::{ToolExecutor, WorkerFailure, OUTCOME_UNKNOWN};
use super::registry::{Capability, DeviceRecord, Registry};
use super::remote::Remote;
use super::tools::{self, BatchRefusal, Tool};
use super::DeviceService;
use crate::lease::Leases;
use crate::CancelToken;
use crate::Error;
use serde::ser::SerializeStruct;
use serde_json::{json, Value};
use std::sync::Arc;

/// One tool call by an agent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The account whose devices the call may use.
    pub owner: String,
    /// The root session (conversation) making the call; it holds the control lease.
    pub root_session: String,
    /// The tool name (`browser_navigate`, …).
    pub tool: String,
    /// The tool's arguments (a JSON object; `deviceId` may be given here too).
    pub args: Value,
    /// The device; optional when the owner has exactly one browser.
    pub device_id: Option<String>,
    /// Return screenshots inline (`image`, base64) instead of storing them as artifacts.
    pub inline_images: bool,
    /// The agent making the call: `browser_autopilot`'s Jev evaluations are its (access
    /// check, usage records); `None` attributes them to [`AUTOPILOT_AGENT`].
    pub agent_id: Option<String>,
}

/// The agent `browser_autopilot`'s evaluations are attributed to when a call names none.
pub const AUTOPILOT_AGENT: &str = "browser-autopilot";

impl ToolCall {
    /// A call with no explicit device and artifacts for screenshots.
    pub fn new(
        owner: impl Into<String>,
        root_session: impl Into<String>,
        tool: impl Into<String>,
        args: Value,
    ) -> ToolCall {
        ToolCall {
            owner: owner.into(),
            root_session: root_session.into(),
            tool: tool.into(),
            args,
            device_id: None,
            inline_images: false,
            agent_id: None,
        }
    }

    /// Targets `device_id`.
    pub fn on_device(mut self, device_id: impl Into<String>) -> ToolCall {
        self.device_id = Some(device_id.into());
        self
    }

    /// Names the agent making the call (see [`ToolCall::agent_id`]).
    pub fn by_agent(mut self, agent_id: impl Into<String>) -> ToolCall {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// Parses `{"owner","rootSession","tool","args"?,"deviceId"?,"inlineImages"?,"agentId"?}`
    /// (the C `call_json`; `args` defaults to `{}`), or `INVALID_ARGUMENT` (`call_json`).
    pub fn from_json(json: &str) -> Result<ToolCall, Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct CallJson {
            owner: String,
            root_session: String,
            tool: String,
            #[serde(default)]
            args: Option<Value>,
            #[serde(default)]
            device_id: Option<String>,
            #[serde(default)]
            inline_images: bool,
            #[serde(default)]
            agent_id: Option<String>,
        }
        let c: CallJson = crate::args::from_json(
            "call_json",
            json,
            "{owner, rootSession, tool, args?, deviceId?, inlineImages?, agentId?}",
        )?;
        Ok(ToolCall {
            owner: c.owner,
            root_session: c.root_session,
            tool: c.tool,
            args: c.args.unwrap_or_else(|| json!({})),
            device_id: c.device_id,
            inline_images: c.inline_images,
            agent_id: c.agent_id,
        })
    }
}

/// A tool call's answer, serialized exactly as `{"success":true,"result":…}` or
/// `{"success":false,"errorCode":…,"message":…}`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    /// The tool ran; page-derived parts of `result` sit in the untrusted envelope.
    Success(Value),
    /// Not attempted, or ran and failed.
    Failure {
        /// `DEVICE_*`, a worker code, `OUTCOME_UNKNOWN`, `RESULT_CAP_EXCEEDED`,
        /// `INVALID_TOOL_ARGUMENTS`, `UNKNOWN_TOOL`, `GATEWAY_CLOSED`, …
        error_code: String,
        /// A short explanation the model can act on.
        message: String,
    },
}

impl ToolResult {
    fn from_error(e: &Error) -> ToolResult {
        ToolResult::Failure {
            error_code: e.code().to_string(),
            message: e.to_string(),
        }
    }

    fn from_failure(f: WorkerFailure) -> ToolResult {
        if f.not_sent {
            return ToolResult::from_error(&Error::DeviceOffline);
        }
        ToolResult::Failure {
            error_code: f.code,
            message: f.message,
        }
    }

    /// Whether the tool ran and succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, ToolResult::Success(_))
    }

    /// The failure code, if it failed.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            ToolResult::Failure { error_code, .. } => Some(error_code),
            ToolResult::Success(_) => None,
        }
    }

    /// The result, if it succeeded.
    pub fn result(&self) -> Option<&Value> {
        match self {
            ToolResult::Success(v) => Some(v),
            ToolResult::Failure { .. } => None,
        }
    }

    /// The JSON value of the answer.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl serde::Serialize for ToolResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolResult::Success(result) => {
                let mut st = s.serialize_struct("ToolResult", 2)?;
                st.serialize_field("success", &true)?;
                st.serialize_field("result", result)?;
                st.end()
            }
            ToolResult::Failure {
                error_code,
                message,
            } => {
                let mut st = s.serialize_struct("ToolResult", 3)?;
                st.serialize_field("success", &false)?;
                st.serialize_field("errorCode", error_code)?;
                st.serialize_field("message", message)?;
                st.end()
            }
        }
    }
}

struct Run<'a> {
    service: &'a DeviceService,
    call: &'a ToolCall,
    device: &'a DeviceRecord,
    executor: Arc<dyn ToolExecutor>,
    limits: DeviceLimits,
    cancel: CancelToken,
}

impl Run<'_> {
    /// Runs one action and shapes its result.
    fn action(
        &self,
        tool: Tool,
        args: &Value,
        deadline: std::time::Duration,
    ) -> Result<(Value, usize), WorkerFailure> {
        // A take-back that came after the acquire: the command is not sent at all.
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let raw = self
            .executor
            .execute(tool.name(), args, deadline, &self.cancel)?;
        let size = raw.to_string().len();
        let shaped = match tool {
            Tool::ReadPage | Tool::GetText => {
                let max = args
                    .get("max_chars")
                    .and_then(Value::as_u64)
                    .map_or(self.limits.text_default_chars, |n| n as usize)
                    .min(self.limits.text_max_chars);
                caps::cap_text(raw, max)
            }
            Tool::Javascript => caps::cap_javascript(raw, self.limits.javascript_max_chars),
            Tool::Computer
                if matches!(
                    args.get("action").and_then(Value::as_str),
                    Some("screenshot" | "zoom")
                ) =>
            {
                self.screenshot(raw)?
            }
            _ => caps::wrap_result(raw),
        };
        Ok((shaped, size))
    }

    fn screenshot(&self, raw: Value) -> Result<Value, WorkerFailure> {
        let shot = caps::take_screenshot(raw, self.limits.screenshot_max_base64)?;
        let rest = crate::untrusted::wrap_value(Value::Object(shot.rest));
        if self.call.inline_images {
            return Ok(
                json!({"image": shot.base64, "mediaType": shot.media_type, crate::untrusted::UNTRUSTED_KEY: rest}),
            );
        }
        let bytes = data_encoding::BASE64
            .decode(shot.base64.as_bytes())
            .or_else(|_| data_encoding::BASE64_NOPAD.decode(shot.base64.as_bytes()))
            .map_err(|_| {
                WorkerFailure::new(
                    "execution_failed",
                    "the browser returned an image that is not base64",
                )
            })?;
        let id = self
            .service
            .artifacts
            .put(
                &self.call.root_session,
                &self.device.id,
                &shot.media_type,
                &bytes,
                self.limits.artifact_max_per_session,
            )
            .map_err(|e| {
                log::warn!("screenshot not stored: {}", e.code());
                WorkerFailure::new("execution_failed", "the screenshot could not be stored")
            })?;
        Ok(
            json!({"artifactId": id, "mediaType": shot.media_type, "bytes": bytes.len(), crate::untrusted::UNTRUSTED_KEY: rest}),
        )
    }

    fn batch(&self, actions: &[tools::Action]) -> ToolResult {
        // The budget and the timeout are on the gateway's clock (R-CLK).
        let clock = &*self.service.clock;
        let start = clock.now();
        let batch_end = start + self.limits.batch_timeout;
        let mut bytes = 0usize;
        let mut entries = Vec::with_capacity(actions.len());
        let mut stopped: Option<&'static str> = None;
        let mut completed = 0usize;
        for (index, action) in actions.iter().enumerate() {
            let name = action.tool.name();
            if stopped.is_none() && self.cancel.is_cancelled() {
                stopped = Some("cancelled");
            }
            let remaining = batch_end - clock.now();
            if stopped.is_none() && remaining.is_zero() {
                stopped = Some("batch_timeout");
            }
            if stopped.is_some() {
                entries.push(json!({"index": index, "tool": name, "status": "not_run"}));
                continue;
            }
            let deadline = remaining.min(self.limits.command_timeout);
            match self.action(action.tool, &action.args, deadline) {
                Ok((result, size)) => {
                    bytes = bytes.saturating_add(size);
                    completed += 1;
                    entries.push(
                        json!({"index": index, "tool": name, "status": "ok", "result": result}),
                    );
                }
                Err(f) if f.not_sent && index == 0 => {
                    return ToolResult::from_error(&Error::DeviceOffline)
                }
                Err(f) => {
                    let status = if f.not_sent {
                        "not_run"
                    } else if f.code == OUTCOME_UNKNOWN {
                        "unknown"
                    } else {
                        "failed"
                    };
                    stopped = Some(if f.not_sent {
                        "device_offline"
                    } else if f.code == "timed_out" && clock.now() >= batch_end {
                        "batch_timeout"
                    } else if f.code == "cancelled" {
                        "cancelled"
                    } else {
                        "action_failed"
                    });
                    entries.push(json!({"index": index, "tool": name, "status": status,
                        "errorCode": f.code, "message": f.message}));
                    continue;
                }
            }
            if clock.now() - start > self.limits.batch_time_budget {
                stopped = Some("time_limit");
            } else if bytes > self.limits.batch_byte_budget {
                stopped = Some("size_limit");
            }
        }
        let not_run = entries.iter().filter(|e| e["status"] == "not_run").count();
        ToolResult::Success(json!({
            "actions": entries,
            "completed": completed,
            "notRun": not_run,
            "stoppedEarly": stopped,
            "resultBytes": bytes,
        }))
    }
}

fn cancelled() -> WorkerFailure {
    WorkerFailure::new(
        "cancelled",
        "a person took control of this browser back and the command was cancelled before it was sent; do not retry unless asked to",
    )
}

enum Prepared {
    Single(Tool, Value),
    Batch(Vec<tools::Action>),
}

/// `owner`'s device `id`: this process's registry first, then, on the shared store, the row
/// its connection left there (a device paired with another process of the fleet, issue 23
/// item 4); else `DEVICE_NOT_PAIRED`. Shared with the task layer's primitives.
pub(crate) fn paired_device(
    registry: &Registry,
    remote: Option<&Remote>,
    owner: &str,
    id: &str,
) -> Result<DeviceRecord, Error> {
    if let Some(record) = registry.get(owner, id)? {
        return Ok(record);
    }
    match remote {
        Some(r) => r
            .known(id)?
            .map(|e| e.record)
            .filter(|d| d.owner == owner)
            .ok_or(Error::DeviceNotPaired),
        None => Err(Error::DeviceNotPaired),
    }
}

impl DeviceService {
    /// Picks the device for a call (R-DEV-FAIL, R-DEV-VER).
    fn select(&self, owner: &str, device_id: Option<&str>) -> Result<DeviceRecord, Error> {
        // On the shared store the registry is the fleet's; a device known only by the row its
        // connection left there (issue 23 item 4) is added after it.
        let remote = self.remote.get();
        if let Some(id) = device_id {
            return paired_device(&self.registry, remote, owner, id);
        }
        let mut all = self.registry.list(owner)?;
        if let Some(r) = remote {
            for e in r.known_of(owner)? {
                if e.record.owner == owner && !all.iter().any(|d| d.id == e.record.id) {
                    all.push(e.record);
                }
            }
        }
        let mut browsers: Vec<DeviceRecord> = all
            .into_iter()
            .filter(|d| d.capability == Capability::Browser)
            .collect();
        match browsers.len() {
            0 => Err(Error::DeviceNotPaired),
            1 => Ok(browsers.remove(0)),
            _ => Err(Error::DeviceSelectionRequired),
        }
    }

    /// The browser device a call of `owner` uses (`device_id`, or the one browser), for a tool
    /// the gateway runs itself over primitives (`browser_autopilot`): the same selection and
    /// refusals as every tool (`DEVICE_NOT_PAIRED`, `DEVICE_SELECTION_REQUIRED`).
    pub(crate) fn select_browser(
        &self,
        owner: &str,
        device_id: Option<&str>,
    ) -> Result<String, Error> {
        self.select(owner, device_id).map(|d| d.id)
    }

    fn prepare(
        &self,
        call: &ToolCall,
        limits: &DeviceLimits,
    ) -> Result<(Prepared, Option<String>), ToolResult> {
        let Some(tool) = Tool::from_name(&call.tool) else {
            let shown = if call.tool.len() <= 64
                && call
                    .tool
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                call.tool.clone()
            } else {
                "?".into()
            };
            return Err(ToolResult::from_error(&Error::UnknownTool { tool: shown }));
        };
        let mut args = match &call.args {
            Value::Null => Value::Object(Default::default()),
            v => v.clone(),
        };
        let invalid = |reason: &str| {
            ToolResult::from_error(&Error::InvalidToolArguments {
                tool: tool.name(),
                reason: reason.into(),
            })
        };
        let mut device_id = call.device_id.clone();
        if let Value::Object(obj) = &mut args {
            match obj.remove("deviceId") {
                None | Some(Value::Null) => {}
                Some(Value::String(id)) => match &device_id {
                    Some(given) if *given != id => {
                        return Err(invalid("`deviceId` differs from the call's device"))
                    }
                    _ => device_id = Some(id),
                },
                Some(_) => return Err(invalid("`deviceId` must be a string")),
            }
        }
        let prepared = if tool == Tool::Batch {
            match tools::validate_batch(&args, limits.batch_max_actions, limits.text_max_chars) {
                Ok(actions) => Prepared::Batch(actions),
                Err(BatchRefusal::TooMany(n)) => {
                    return Err(ToolResult::Failure {
                        error_code: "batch_cap_exceeded".into(),
                        message: format!(
                            "browser_batch runs at most {} actions; {n} were given and none ran",
                            limits.batch_max_actions
                        ),
                    })
                }
                Err(BatchRefusal::Invalid(e)) => return Err(ToolResult::from_error(&e)),
            }
        } else {
            if let Err(e) = tools::validate(tool, &args, limits.text_max_chars) {
                return Err(ToolResult::from_error(&e));
            }
            Prepared::Single(tool, args)
        };
        Ok((prepared, device_id))
    }

    /// Runs one tool call to its answer.
    pub(crate) fn call_tool(&self, leases: &Leases, call: &ToolCall) -> ToolResult {
        let started = self.clock.now();
        let answer = self.call_inner(leases, call);
        log::info!(
            "tool {} answered {} in {} ms",
            Tool::from_name(&call.tool).map_or("unknown", Tool::name),
            answer.error_code().unwrap_or("ok"),
            (self.clock.now() - started).as_millis()
        );
        answer
    }

    fn call_inner(&self, leases: &Leases, call: &ToolCall) -> ToolResult {
        let limits = self.limits();
        let (prepared, device_id) = match self.prepare(call, &limits) {
            Ok(p) => p,
            Err(answer) => return answer,
        };
        let device = match self.select(&call.owner, device_id.as_deref()) {
            Ok(d) => d,
            Err(e) => return ToolResult::from_error(&e),
        };
        // The device check, its connection, the lease and the cancellation hook (R-LEASE-3).
        let claim = match claim_anywhere(
            &self.hub,
            self.remote.get(),
            leases,
            &device,
            Capability::Browser,
            &call.root_session,
        ) {
            Ok(c) => c,
            Err(e) => return ToolResult::from_error(&e),
        };
        let run = Run {
            service: self,
            call,
            device: &device,
            executor: claim.route.executor(),
            limits,
            cancel: claim.cancel.clone(),
        };
        match prepared {
            Prepared::Single(tool, args) => {
                match run.action(tool, &args, run.limits.command_timeout) {
                    Ok((result, _)) => ToolResult::Success(result),
                    Err(f) => ToolResult::from_failure(f),
                }
            }
            Prepared::Batch(actions) => run.batch(&actions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::claim::{fixture::Paired, AFTER_LEASE};
    use super::*;
    use crate::lease::ControlCaller;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // R-LEASE-3: the person takes the device back at the one moment that used to be a gap —
    // after the conversation's call acquired the lease, before its command was registered for
    // cancellation and sent. The command must not reach the worker. The interleaving is forced
    // on the dispatching thread (no timing, no sleep); a real worker on a loopback channel
    // counts what reaches it.
    #[test]
    fn r_lease_3_take_back_right_after_the_acquire_stops_the_command_before_it_is_sent() {
        let paired = Paired::new(json!({"text": "ran"}));
        let (devices, leases, device) = (&paired.devices, &paired.leases, &paired.device);
        let call = ToolCall::new("alice", "conv-1", "browser_get_text", json!({}));

        // Control: without a take-back the command reaches the worker.
        assert!(devices.call_tool(leases, &call).is_success());
        assert_eq!(paired.reached(), 1);

        let took = Arc::new(AtomicUsize::new(0));
        {
            let leases = leases.clone();
            let device = device.clone();
            let took = Arc::clone(&took);
            AFTER_LEASE.with(|h| {
                *h.borrow_mut() = Some(Box::new(move || {
                    if leases
                        .take_back(&device, &ControlCaller::owner("alice"))
                        .unwrap()
                    {
                        took.fetch_add(1, Ordering::SeqCst);
                    }
                }))
            });
        }
        let answer = devices.call_tool(leases, &call);
        assert_eq!(
            took.load(Ordering::SeqCst),
            1,
            "the take-back dispossessed the caller"
        );
        assert_eq!(answer.error_code(), Some("cancelled"), "{answer:?}");
        assert_eq!(
            paired.reached(),
            1,
            "the command taken back never reached the worker"
        );
        // Nobody else slips in during the window, and the dispossessed conversation is told.
        assert_eq!(
            leases.acquire(device, "conv-2").unwrap_err().code(),
            "DEVICE_CONTROL_ELSEWHERE"
        );
        assert_eq!(
            devices.call_tool(leases, &call).error_code(),
            Some("DEVICE_CONTROL_REVOKED")
        );
        assert_eq!(paired.reached(), 1);
        paired.close();
    }
}

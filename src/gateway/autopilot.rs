//! `browser_autopilot`, the tenth device tool (R-AUTO, R-DEV-TOOLS; issue 26 item 8), on the
//! gateway: the tool lists that carry it when Jev is configured
//! ([`Gateway::device_tool_definitions`], [`Gateway::agent_tools`]) and the call itself, which
//! [`Gateway::call_tool`] (and `call_agent_tool`, for the owner's agent) hands here.
//!
//! Thin: the device choice and its refusals are the device service's, every primitive goes
//! over the channel under the conversation's control lease ([`crate::task::DeviceTarget`]),
//! the loop and its rules are `task::autopilot`'s, the receipts `task::autopilot_store`'s, and
//! evaluations go through [`Gateway::evaluate_with_cancel`] (access, limits, usage). Must never
//! log or echo a goal, a value or page text, and never run without Jev configured.

use super::Gateway;
use crate::device::{tool_definitions, ToolCall, ToolFormat, ToolResult, AUTOPILOT_AGENT};
use crate::task::autopilot::{self, Drive, Plan, AUTOPILOT_TOOL};
use crate::task::autopilot_store::StoreLedger;
use crate::CancelToken;
use crate::Error;
use serde_json::Value;

impl Gateway {
    /// Whether Jev is configured (`gateway.jev.enabled` in the live configuration): then the
    /// device tools include `browser_autopilot`.
    fn jev_configured(&self) -> bool {
        self.config().config.gateway.jev.enabled
    }

    /// The device tools this gateway serves through [`Gateway::call_tool`], in `format`: the
    /// nine of [`tool_definitions`], and `browser_autopilot` tenth when Jev is configured
    /// (R-DEV-TOOLS, R-AUTO).
    ///
    /// ```
    /// use jevgate::device::ToolFormat;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// assert_eq!(gw.device_tool_definitions(ToolFormat::Mcp).as_array().unwrap().len(), 9);
    /// gw.reload(jevgate::Config::from_json_str(
    ///     r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#).unwrap()).unwrap();
    /// let tools = gw.device_tool_definitions(ToolFormat::OpenAi);
    /// assert_eq!(tools[9]["function"]["name"], "browser_autopilot");
    /// gw.close();
    /// ```
    pub fn device_tool_definitions(&self, format: ToolFormat) -> Value {
        let mut tools = tool_definitions(format);
        if self.jev_configured() {
            if let Value::Array(list) = &mut tools {
                list.push(autopilot::definition(format));
            }
        }
        tools
    }

    /// The tools [`Gateway::call_agent_tool`] runs, in `format`: the agent tools of
    /// [`crate::task::agent_tool_definitions`], and `browser_autopilot` (on the owner's paired
    /// browser) when Jev is configured. `jevgate mcp` lists these.
    pub fn agent_tools(&self, format: ToolFormat) -> Value {
        let mut tools = crate::task::agent_tool_definitions(format);
        if self.jev_configured() {
            if let Value::Array(list) = &mut tools {
                list.push(autopilot::definition(format));
            }
        }
        tools
    }

    /// [`Gateway::call_tool`] with a progress callback: a `browser_autopilot` call gives it
    /// each step's line as it happens, `Autopilot: <goal> — <step>` (R-AUTO; the goal with
    /// every value masked as `[name]`, the step naming a control — page text, for the person's
    /// screen, not for a model). Called on this thread, before the step's action is sent; the
    /// other tools never call it.
    ///
    /// ```
    /// use jevgate::device::ToolCall;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// let call = ToolCall::new("alice", "conv-1", "browser_autopilot", serde_json::json!({"goal": "search"}));
    /// let answer = gw.call_tool_with_progress(&call, &|line| println!("{line}"));
    /// assert_eq!(answer.error_code(), Some("UNKNOWN_TOOL")); // Jev is not configured
    /// gw.close();
    /// ```
    pub fn call_tool_with_progress(&self, call: &ToolCall, progress: &dyn Fn(&str)) -> ToolResult {
        if call.tool == AUTOPILOT_TOOL {
            return self.autopilot_tool(call, progress);
        }
        self.call_tool(call)
    }

    /// Runs `browser_autopilot` for `call` (see the module comment). Always answers
    /// `{success, result}` or `{success:false, errorCode, message}`.
    pub(super) fn autopilot_tool(&self, call: &ToolCall, progress: &dyn Fn(&str)) -> ToolResult {
        match self.autopilot_inner(call, progress) {
            Ok(v) => ToolResult::Success(v),
            Err(e) => ToolResult::Failure {
                error_code: e.code().into(),
                message: e.to_string(),
            },
        }
    }

    pub(super) fn autopilot_inner(
        &self,
        call: &ToolCall,
        progress: &dyn Fn(&str),
    ) -> crate::Result<Value> {
        self.check_open()?;
        if let Some(e) = self.read_request_refusal(call) {
            return Err(e);
        }
        if !self.jev_configured() {
            // Not listed without Jev: to the caller it does not exist.
            return Err(Error::UnknownTool {
                tool: AUTOPILOT_TOOL.into(),
            });
        }
        let mut args = match &call.args {
            Value::Null => Value::Object(Default::default()),
            v => v.clone(),
        };
        let mut device_id = call.device_id.clone();
        if let Value::Object(obj) = &mut args {
            match obj.remove("deviceId") {
                None | Some(Value::Null) => {}
                Some(Value::String(id)) => match &device_id {
                    Some(given) if *given != id => {
                        return Err(Error::InvalidToolArguments {
                            tool: AUTOPILOT_TOOL,
                            reason: "`deviceId` differs from the call's device".into(),
                        })
                    }
                    _ => device_id = Some(id),
                },
                Some(_) => {
                    return Err(Error::InvalidToolArguments {
                        tool: AUTOPILOT_TOOL,
                        reason: "`deviceId` must be a string".into(),
                    })
                }
            }
        }
        let plan = Plan::from_args(&args)?;
        let device = self
            .device_service()
            .select_browser(&call.owner, device_id.as_deref())?;
        let target = self.device_target(&call.owner, &call.root_session, &device)?;
        let run_id = crate::ids::random_id("ap_")?;
        let clock = self.clock();
        let ledger = StoreLedger::begin(
            self.inner.tasks.db().clone(),
            clock.as_ref(),
            &run_id,
            &call.owner,
            &call.root_session,
            &device,
        )?;
        let cancel = CancelToken::new();
        let evaluate = |c: &crate::jev::EvaluateCall| self.evaluate_with_cancel(c, &cancel);
        let agent = call.agent_id.as_deref().unwrap_or(AUTOPILOT_AGENT);
        let drive = Drive {
            evaluate: &evaluate,
            ledger: &ledger,
            progress,
            clock: clock.as_ref(),
            cancel: &cancel,
            budget: self.device_limits().batch_timeout,
            run_id: &run_id,
            agent_id: agent,
            session_id: Some(&call.root_session),
            task_id: None,
        };
        let outcome = autopilot::autopilot(&target, &plan, &drive);
        ledger.end(outcome.ending, &outcome.reason, outcome.steps);
        log::info!(
            "autopilot run ended {} ({}) after {} step(s)",
            outcome.ending.as_str(),
            outcome.reason,
            outcome.steps
        );
        Ok(outcome.to_json(&run_id))
    }
}

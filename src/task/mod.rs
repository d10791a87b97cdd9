//! Browser tasks (SPEC §8): a person's or agent's commands carried out on one browser, with
//! durable receipts so that an action whose outcome is unknown is never sent again.
//!
//! This module owns the task model and its persistence (R-TSK), the receipts and checkpoints
//! (R-TSK-RCPT, `writer` and `records`), the run loop (R-RUN, `run`) and the pool of task
//! threads. A task runs on a thread of its slot; the slot also owns the task's browser (a local
//! headless Chromium or a paired device's tab) until the task's session closes.
//!
//! The gateway sits above this module: it hands a `TaskHost` down (Jev evaluations and
//! targets) and never the other way round. This module must never dispatch a page mutation
//! whose checkpoint did not commit, never re-send an operation whose outcome is unknown (not
//! after a timeout, a crash, a restart or a cancellation), never let one owner read another's
//! task, and never put commands, typed text, page text or results into logs or errors: they
//! live only in the task's rows, for its owner.

pub(crate) mod autopilot;
pub(crate) mod autopilot_store;
pub(crate) mod bench;
mod carry;
mod computer_target;
mod control;
mod device_target;
pub(crate) mod engine;
mod evidence;
mod fence;
mod host;
mod lines;
pub(crate) mod outcome;
mod records;
mod run;
mod service;
mod tools;
mod verify;
pub(crate) mod writer;

#[doc(hidden)]
pub use computer_target::{app_address, ComputerTarget};
pub use device_target::DeviceTarget;
#[doc(hidden)]
pub use evidence::EvidenceRecord;
pub use evidence::{
    Evidence, EvidenceSource, EVIDENCE_TTL, MAX_EVIDENCE_IDS, MAX_EVIDENCE_IDS_PER_PRINCIPAL,
};
pub(crate) use host::{OpenTarget, TaskHost};
pub(crate) use service::TaskService;
pub use service::{Tasks, MAX_ANSWER_CHARS};
pub use tools::{agent_tool_definitions, AGENT_TOOLS, MAX_AGENT_WAIT_MS};
pub(crate) use tools::{
    evidence_for_agent, receipts_for_agent, status_for_agent, AgentCall, EvidenceKind,
};
pub use verify::{
    Verification, Verifier, VerifierInput, VerifyRequest, COMPLETION_CANDIDATE, INVALID_CONTRACT,
    VERIFICATION_FAILED, VERIFIED,
};

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The most characters one command (or step list) may have.
pub const MAX_COMMAND_CHARS: usize = 4000;
/// The most commands waiting behind a running one (R-TSK-CTL).
pub const MAX_QUEUED_COMMANDS: usize = 20;
/// The rounds kept in [`TaskStatus::action_log`].
pub const ACTION_LOG_ROUNDS: usize = 12;
/// Task slots when the host does not choose ([`crate::GatewayOptions::with_task_slots`]).
pub const DEFAULT_TASK_SLOTS: usize = 4;
/// The control receipts [`TaskStatus::commands`] shows (the most recent).
pub const STATUS_COMMANDS: usize = 40;

/// Bounds of the task service (R-TSK-CTL "Sessions and bounds"):
/// [`crate::GatewayOptions::with_task_limits`].
///
/// A slot is a thread for work in flight; an open session waiting for its next command holds
/// its browser but no slot. Past the session bounds a spawn gets `AUTOMATION_SESSION_EXISTS`,
/// past the queued bound `TASK_QUEUE_FULL`. A waiting session expires after `idle` (or
/// `idle_after_failure` when its last round was not done): its browser closes and the task
/// ends with `SESSION_EXPIRED`, on the gateway's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Tasks running at once (at least one).
    pub slots: usize,
    /// Open sessions (queued included) of one principal.
    pub sessions_per_principal: usize,
    /// Started, open sessions of the gateway.
    pub sessions_per_gateway: usize,
    /// Spawns waiting for their first slot.
    pub queued_spawns: usize,
    /// Idle time after which a waiting session expires.
    pub idle: Duration,
    /// Idle time after which a waiting session whose last round was not done expires.
    pub idle_after_failure: Duration,
}

impl Default for TaskLimits {
    fn default() -> TaskLimits {
        TaskLimits {
            slots: DEFAULT_TASK_SLOTS,
            sessions_per_principal: 8,
            sessions_per_gateway: 64,
            queued_spawns: 64,
            idle: Duration::from_secs(60 * 60),
            idle_after_failure: Duration::from_secs(15 * 60),
        }
    }
}

/// How [`Tasks::update`] applies a revised goal (seed 003 "Continuing a browser task").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum UpdateMode {
    /// After the active request settles, on a fresh observation of the current page.
    #[default]
    WhenReady,
}

/// A revised goal for a task ([`Tasks::update`]): `{expectedRevision, mode: "when_ready",
/// goal}`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateRequest {
    /// The task's latest revision (pending included): otherwise `REVISION_CONFLICT`.
    pub expected_revision: u32,
    /// `when_ready`.
    #[serde(default)]
    pub mode: UpdateMode,
    /// The complete revised goal (1 to 4000 characters).
    pub goal: String,
}

impl std::fmt::Debug for UpdateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateRequest")
            .field("expected_revision", &self.expected_revision)
            .field("mode", &self.mode)
            .field("goal_chars", &self.goal.chars().count())
            .finish()
    }
}

impl UpdateRequest {
    /// Parses `{expectedRevision, mode?, goal}`; `INVALID_INPUT` otherwise.
    pub fn from_json(json: &str) -> crate::Result<UpdateRequest> {
        const SHAPE: &str = "{expectedRevision, mode?: when_ready, goal}";
        if !json.trim_start().starts_with('{') {
            return Err(crate::Error::InvalidInput {
                name: "update",
                reason: format!("must be {SHAPE} (not a JSON object)"),
            });
        }
        crate::args::from_json("update", json, SHAPE).map_err(|e| match e {
            crate::Error::InvalidArgument { name, reason } => {
                crate::Error::InvalidInput { name, reason }
            }
            other => other,
        })
    }
}

/// A control action (R-TSK-CTL): what [`Tasks::control`] asks of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// Stop the current round before its next action and drop the queue (listed); the session
    /// waits, and `resume` continues the step run's remaining steps.
    Pause,
    /// Stop the current round before its next action, drop the queue and run `text` next (a
    /// new revision).
    Revise,
    /// Continue the paused step run's remaining steps, verbatim (never dropped commands).
    Resume,
    /// Hand control to the agent (drops the queue, listed).
    Agent,
    /// Take control back from the agent.
    User,
}

impl ControlAction {
    /// The stored name (`pause`).
    pub fn as_str(self) -> &'static str {
        match self {
            ControlAction::Pause => "pause",
            ControlAction::Revise => "revise",
            ControlAction::Resume => "resume",
            ControlAction::Agent => "agent",
            ControlAction::User => "user",
        }
    }
}

/// A control command (R-TSK-CTL, seed 003 "Direct task control over HTTP"):
/// `{id, action, expectedRevision, text?}`.
///
/// ```
/// let c = jevgate::task::ControlRequest::from_json(
///     r#"{"id":"1b4e28ba-2fa1-11d2-883f-0016d3cca427","action":"revise","expectedRevision":1,"text":"search Osaka"}"#,
/// ).unwrap();
/// assert_eq!(c.action, jevgate::task::ControlAction::Revise);
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControlRequest {
    /// The command's id (a UUID you choose): the same id with the same contents answers the
    /// same result; with other contents `IDEMPOTENCY_CONFLICT`.
    pub id: String,
    /// What to do.
    pub action: ControlAction,
    /// The task's latest revision (pending included): otherwise `REVISION_CONFLICT`.
    pub expected_revision: u32,
    /// `revise` only: the new instructions (1 to 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl std::fmt::Debug for ControlRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The text is the person's: never in debug output.
        f.debug_struct("ControlRequest")
            .field("id", &self.id)
            .field("action", &self.action)
            .field("expected_revision", &self.expected_revision)
            .field("text_chars", &self.text.as_ref().map(|t| t.chars().count()))
            .finish()
    }
}

impl ControlRequest {
    /// Parses `{id, action, expectedRevision, text?}`; `INVALID_INPUT` otherwise (never
    /// echoing the text).
    pub fn from_json(json: &str) -> crate::Result<ControlRequest> {
        const SHAPE: &str = "{id, action: pause|revise|resume|agent|user, expectedRevision, text?}";
        if !json.trim_start().starts_with('{') {
            return Err(crate::Error::InvalidInput {
                name: "control",
                reason: format!("must be {SHAPE} (not a JSON object)"),
            });
        }
        crate::args::from_json("control", json, SHAPE).map_err(|e| match e {
            crate::Error::InvalidArgument { name, reason } => {
                crate::Error::InvalidInput { name, reason }
            }
            other => other,
        })
    }
}

/// One accepted command's control receipt (R-TSK-CTL): every command a task accepts either
/// runs (`running`, then `done`, `not_done` or `unknown`) or is `dropped` with the reason
/// (a field question, a not-done, an unknown outcome, a stop, a pause, a cancellation, the
/// session closing). `needs_agent` and `awaiting_confirmation` are reserved for hand-off and
/// confirmation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlReceipt {
    /// The command's id (a UUID).
    pub command_id: String,
    /// `command`, `pause`, `revise`, `resume`, `agent`, `user`, `update` or `answer`.
    pub kind: String,
    /// `user` (the host's own call) or `agent`.
    pub origin: String,
    /// The command, shortened, typed text shown as `[text]`.
    pub summary: String,
    /// The task revision it made (or saw).
    pub revision: u32,
    /// `accepted`, `running`, `done`, `not_done`, `dropped`, `unknown`, `needs_agent`,
    /// `awaiting_confirmation`.
    pub state: String,
    /// Why (the request's reason code, or why it was dropped).
    pub reason: Option<String>,
    /// The request that carried it out, if one did.
    pub request: Option<u32>,
    /// Accepted (ms since the Unix epoch).
    pub accepted_at: i64,
    /// Last changed (ms since the Unix epoch).
    pub updated_at: i64,
}

/// Who sent a command ([`ControlReceipt::origin`]): the host's own call on the person's behalf,
/// or an agent through the agent tools (`Gateway::call_agent_tool`). Recorded with the command;
/// the next issue builds authority on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The person (the host's own API call).
    User,
    /// An agent's tool call.
    Agent,
}

impl Origin {
    /// The stored name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Agent => "agent",
        }
    }
}

/// Who a task belongs to (R-TSK): every read and write checks all three.
///
/// ```
/// let owner = jevgate::task::TaskOwner::new("assistant", "alice", "conv-1");
/// assert_eq!(serde_json::to_string(&owner).unwrap(),
///     r#"{"agentId":"assistant","principalId":"alice","conversationId":"conv-1"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskOwner {
    /// The agent (Jev access and usage are checked and recorded for it).
    pub agent_id: String,
    /// The person the agent acts for.
    pub principal_id: String,
    /// The conversation: it holds the device's control lease while the task drives it.
    pub conversation_id: String,
}

impl TaskOwner {
    /// An owner triple.
    pub fn new(
        agent_id: impl Into<String>,
        principal_id: impl Into<String>,
        conversation_id: impl Into<String>,
    ) -> TaskOwner {
        TaskOwner {
            agent_id: agent_id.into(),
            principal_id: principal_id.into(),
            conversation_id: conversation_id.into(),
        }
    }

    /// Parses `{agentId, principalId, conversationId}` (each 1..=256 bytes, no control
    /// characters); `INVALID_ARGUMENT` naming `owner` otherwise.
    pub fn from_json(json: &str) -> crate::Result<TaskOwner> {
        let owner: TaskOwner =
            crate::args::from_json("owner", json, "{agentId, principalId, conversationId}")?;
        owner.check()?;
        Ok(owner)
    }

    pub(crate) fn check(&self) -> crate::Result<()> {
        for (name, v) in [
            ("agentId", &self.agent_id),
            ("principalId", &self.principal_id),
            ("conversationId", &self.conversation_id),
        ] {
            if v.is_empty() || v.len() > 256 || v.chars().any(char::is_control) {
                return Err(crate::Error::InvalidArgument {
                    name: "owner",
                    reason: format!("`{name}` must be 1 to 256 bytes without control characters"),
                });
            }
        }
        Ok(())
    }
}

/// A JSON argument must be an object (serde would also take a struct as an array).
fn object(name: &'static str, json: &str, shape: &str) -> crate::Result<()> {
    if json.trim_start().starts_with('{') {
        Ok(())
    } else {
        Err(crate::Error::InvalidArgument {
            name,
            reason: format!("must be {shape} (not a JSON object)"),
        })
    }
}

/// What a task drives (R-TSK targets).
///
/// ```
/// use jevgate::task::TaskTarget;
/// let t: TaskTarget = serde_json::from_str(r#"{"kind":"local"}"#).unwrap();
/// assert_eq!(t, TaskTarget::Local { profile: None });
/// let d: TaskTarget = serde_json::from_str(r#"{"kind":"device","deviceId":"dev_1"}"#).unwrap();
/// assert!(matches!(d, TaskTarget::Device { .. }));
/// let c: TaskTarget = serde_json::from_str(r#"{"kind":"computer","deviceId":"dev_2"}"#).unwrap();
/// assert_eq!(c.device_id(), Some("dev_2"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskTarget {
    /// A local headless Chromium the gateway starts for the task (and closes with it): a fresh
    /// profile, or with `profile` the gateway's persistent profile of that key (logins kept).
    ///
    /// A profile is the lease manager's profile of `(organization = the owner's principalId,
    /// profile key)` — the one a thread session's authenticated browser calls of that
    /// organization and key use — and the task holds it for its whole life: the task ends
    /// `failed` with `BROWSER_CONTEXT_BUSY` while an active thread session or another task
    /// holds it (an idle thread session is closed, its profile persisted, and the task takes
    /// it), and meanwhile thread sessions get `BROWSER_CONTEXT_BUSY` for it (isolated mode
    /// stays available).
    #[serde(rename_all = "camelCase")]
    Local {
        /// A profile key (`<data_dir>/profiles/<keyed hash>`); `None` for a throw-away profile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
    },
    /// A paired browser device of the principal, over the device channel: the task takes the
    /// device's control lease for its conversation and the tab lease.
    #[serde(rename_all = "camelCase")]
    Device {
        /// The device id (`dev_…`).
        device_id: String,
    },
    /// A paired computer of the principal (capability `computer`, `jevgate-computer`; issue
    /// 25 item 1), over the device channel: the task takes the device's control lease — one
    /// desktop lease for the run, released on every exit path — and drives the front
    /// application through its accessibility tree (`task::ComputerTarget`). Gated by
    /// `features.computerTasks` (`COMPUTER_NOT_ALLOWED`).
    #[serde(rename_all = "camelCase")]
    Computer {
        /// The device id (`dev_…`).
        device_id: String,
    },
}

impl TaskTarget {
    /// The paired device this target drives, if any.
    pub fn device_id(&self) -> Option<&str> {
        match self {
            TaskTarget::Local { .. } => None,
            TaskTarget::Device { device_id } | TaskTarget::Computer { device_id } => {
                Some(device_id)
            }
        }
    }
}

impl Default for TaskTarget {
    fn default() -> TaskTarget {
        TaskTarget::Local { profile: None }
    }
}

/// Bounds of one task (R-RUN): reaching them stops with `ACTION_BUDGET`, `EVALUATION_BUDGET`
/// or `TIMEOUT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Budget {
    /// Most page actions over the task's life.
    pub max_steps: u32,
    /// Most Jev evaluations over the task's life.
    pub max_evaluations: u32,
    /// Longest one step list (or command) runs, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_steps: 20,
            max_evaluations: 30,
            timeout_ms: 120_000,
        }
    }
}

impl Budget {
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// Progress: each outcome line as it settles (R-RUN). Called on the task's thread; keep it
/// short and never call back into the task API from it.
pub type ProgressFn = Arc<dyn Fn(&TaskProgress) + Send + Sync>;

/// One settled command's outcome line, for a [`ProgressFn`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskProgress {
    /// The task.
    pub task_id: String,
    /// The outcome line (`Done: …`, `Not done: … (hint)`, `Unknown: …`, `Ready: …`).
    pub line: String,
    /// Its reason code (`DONE`, `STEP_NOT_EXECUTED`, …).
    pub reason: String,
}

/// What [`Tasks::spawn`] starts.
#[derive(Clone, Default)]
pub struct SpawnRequest {
    /// The agent's goal (issue 26 item 1: a spawn's goal is the agent's words, whatever it
    /// says): a goal run — the task runs on toward it, one Jev decision per action, each
    /// action checked for impact first; words in which Jev finds no action end ready
    /// (`SESSION_READY`). It never runs as the person's step list. Empty (and no
    /// [`SpawnRequest::user_message`]): the session opens and waits (`SESSION_READY`).
    pub goal: String,
    /// The person's own message that started the round (the host's word for it; no agent tool
    /// can set it). When it is a step list, that list runs verbatim as the person's own — their
    /// authorization — instead of the goal (seed 003); with no goal it runs as the person's
    /// direct command. Otherwise it only sets the language of a confirmation question.
    pub user_message: Option<String>,
    /// The first round is an autopilot run (issue 26 item 8, R-AUTO): the agent's mechanical
    /// sub-goal with every value to type, carried out one Jev decision per click or field on
    /// the task's tab — the loop of the `browser_autopilot` tool, with the task's receipts.
    /// It takes the place of `goal` and `userMessage` for that round.
    pub autopilot: Option<AutopilotRequest>,
    /// What to drive.
    pub target: TaskTarget,
    /// Opened before the goal runs (the task's first navigation, with its own receipt).
    pub start_url: Option<String>,
    /// Bounds.
    pub budget: Budget,
    /// Keep the session open after the goal (state `waiting_input`) for [`Tasks::command`];
    /// otherwise the task ends with the goal.
    pub keep_open: bool,
    /// Receives each outcome line.
    pub progress: Option<ProgressFn>,
}

impl std::fmt::Debug for SpawnRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The goal is the person's text: never in debug output.
        f.debug_struct("SpawnRequest")
            .field("goal_chars", &self.goal.chars().count())
            .field("autopilot", &self.autopilot)
            .field(
                "user_message_chars",
                &self.user_message.as_ref().map(|m| m.chars().count()),
            )
            .field(
                "user_message_chars",
                &self.user_message.as_ref().map(|m| m.chars().count()),
            )
            .field("target", &self.target)
            .field("budget", &self.budget)
            .field("keep_open", &self.keep_open)
            .finish_non_exhaustive()
    }
}

impl SpawnRequest {
    /// A request for the agent's `goal` on a fresh local Chromium.
    pub fn new(goal: impl Into<String>) -> SpawnRequest {
        SpawnRequest {
            goal: goal.into(),
            ..SpawnRequest::default()
        }
    }

    /// A request that runs the person's own `message` (a step list, or one direct command)
    /// with the person's authority, on a fresh local Chromium: [`SpawnRequest::user_message`]
    /// with no goal.
    pub fn from_person(message: impl Into<String>) -> SpawnRequest {
        SpawnRequest {
            user_message: Some(message.into()),
            ..SpawnRequest::default()
        }
    }

    /// What the session's first round runs: the person's message (a step list, or the only
    /// words there are), else the agent's goal as a goal run, else nothing (ready).
    /// `step_lists`: `features.browserSteps` (off, no message is a step list).
    pub(crate) fn first_round(&self, step_lists: bool) -> FirstRound {
        let message = self
            .user_message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let goal = self.goal.trim();
        if self.autopilot.is_some() {
            return FirstRound::Autopilot;
        }
        match message {
            Some(m)
                if goal.is_empty() || (step_lists && crate::grammar::split_steps(m).is_some()) =>
            {
                FirstRound::Person(m.to_string())
            }
            _ if !goal.is_empty() => FirstRound::Goal(goal.to_string()),
            _ => FirstRound::Ready,
        }
    }

    /// Whether the spawn has words for a first round at all (without any, the session opens
    /// and waits for commands).
    pub(crate) fn has_words(&self) -> bool {
        self.autopilot.is_some()
            || !self.goal.trim().is_empty()
            || self
                .user_message
                .as_deref()
                .is_some_and(|m| !m.trim().is_empty())
    }

    /// Parses `{goal, userMessage?, target?, startUrl?, budget?, keepOpen?}` (the C, Python
    /// and CLI form).
    pub fn from_json(json: &str) -> crate::Result<SpawnRequest> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Wire {
            #[serde(default)]
            goal: String,
            #[serde(default)]
            user_message: Option<String>,
            #[serde(default)]
            autopilot: Option<serde_json::Value>,
            #[serde(default)]
            target: TaskTarget,
            #[serde(default)]
            start_url: Option<String>,
            #[serde(default)]
            budget: Option<Budget>,
            #[serde(default)]
            keep_open: bool,
        }
        object(
            "request",
            json,
            "{goal, userMessage?, autopilot?, target?, startUrl?, budget?, keepOpen?}",
        )?;
        let w: Wire = crate::args::from_json(
            "request",
            json,
            "{goal, userMessage?, autopilot?, target?, startUrl?, budget?, keepOpen?}",
        )?;
        let autopilot = match &w.autopilot {
            None | Some(serde_json::Value::Null) => None,
            Some(args) => Some(AutopilotRequest::from_args(args)?),
        };
        Ok(SpawnRequest {
            autopilot,
            goal: w.goal,
            user_message: w.user_message,
            target: w.target,
            start_url: w.start_url,
            budget: w.budget.unwrap_or_default(),
            keep_open: w.keep_open,
            progress: None,
        })
    }
}

/// An autopilot round ([`SpawnRequest::autopilot`]): `{goal, values: {name: value}, maxSteps?}`
/// (the `browser_autopilot` tool's arguments). The model sees the value names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AutopilotRequest {
    /// The sub-goal (the agent's words).
    pub goal: String,
    /// `(name, value)` pairs, names unique.
    pub values: Vec<(String, String)>,
    /// The most decisions (default 20, at most 50).
    pub max_steps: Option<u32>,
}

impl std::fmt::Debug for AutopilotRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the goal or the values.
        f.debug_struct("AutopilotRequest")
            .field("values", &self.values.len())
            .field("max_steps", &self.max_steps)
            .finish_non_exhaustive()
    }
}

impl AutopilotRequest {
    /// The tool's argument object.
    pub(crate) fn to_args(&self) -> serde_json::Value {
        let values: serde_json::Map<String, serde_json::Value> = self
            .values
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let mut args = serde_json::json!({"goal": self.goal, "values": values});
        if let Some(n) = self.max_steps {
            args["maxSteps"] = serde_json::json!(n);
        }
        args
    }

    /// Parses `{goal, values: {name: value}, maxSteps?}` (the C and Python form), checked as
    /// the `browser_autopilot` tool checks its arguments (`INVALID_TOOL_ARGUMENTS`).
    pub fn from_json(json: &str) -> crate::Result<AutopilotRequest> {
        let args: serde_json::Value =
            serde_json::from_str(json).map_err(|_| crate::Error::InvalidArgument {
                name: "autopilot",
                reason: "must be a JSON object {goal, values, maxSteps?}".into(),
            })?;
        AutopilotRequest::from_args(&args)
    }

    /// From the tool's argument object (checked as the tool checks it).
    pub(crate) fn from_args(args: &serde_json::Value) -> crate::Result<AutopilotRequest> {
        let plan = autopilot::Plan::from_args(args)?;
        Ok(AutopilotRequest {
            goal: plan.goal,
            values: plan.values,
            max_steps: args
                .get("maxSteps")
                .and_then(serde_json::Value::as_u64)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        })
    }
}

/// What a session's first round runs (issue 26 item 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FirstRound {
    /// The person's own words, with their authority (a step list runs verbatim).
    Person(String),
    /// The agent's goal, as a goal run.
    Goal(String),
    /// No words: the session is ready.
    Ready,
    /// An autopilot run (issue 26 item 8).
    Autopilot,
}

/// A task's state (R-TSK).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Waiting for a slot.
    Queued,
    /// A command runs.
    Running,
    /// The session is open and waits for the next command (or an answer).
    WaitingInput,
    /// Finished: a verification completed it (`VERIFIED`, [`TaskStatus::verification`]), or a
    /// single direct command's session ended after its `Done` (`COMPLETION_CANDIDATE`). A step
    /// list whose every step is done waits `waiting_input` until verified.
    Completed,
    /// Stopped without finishing (the reason says why); nothing is unknown.
    Failed,
    /// Cancelled by its owner or by the gateway closing; nothing is unknown.
    Cancelled,
    /// An operation's outcome is unknown: only `operation_status` or a person resolves it, and
    /// nothing is re-sent.
    NeedsReconciliation,
}

impl TaskState {
    /// The stored name (`waiting_input`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::WaitingInput => "waiting_input",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
            TaskState::NeedsReconciliation => "needs_reconciliation",
        }
    }

    pub(crate) fn parse(s: &str) -> TaskState {
        match s {
            "queued" => TaskState::Queued,
            "running" => TaskState::Running,
            "waiting_input" => TaskState::WaitingInput,
            "completed" => TaskState::Completed,
            "cancelled" => TaskState::Cancelled,
            "needs_reconciliation" => TaskState::NeedsReconciliation,
            _ => TaskState::Failed,
        }
    }

    /// Queued or running: [`Tasks::wait`] waits while this holds.
    pub fn is_busy(self) -> bool {
        matches!(self, TaskState::Queued | TaskState::Running)
    }

    /// The session is over: no more commands.
    pub fn is_closed(self) -> bool {
        matches!(
            self,
            TaskState::Completed
                | TaskState::Failed
                | TaskState::Cancelled
                | TaskState::NeedsReconciliation
        )
    }
}

/// A pending field question ([`TaskStatus::field_request`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldRequest {
    /// The field's accessible name (page text, shortened).
    pub field: String,
    /// The question, for the person.
    pub question: String,
}

/// A pending confirmation question ([`TaskStatus::confirmation_request`], issue 26 item 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationRequest {
    /// The chosen control's accessible name (page text, shortened).
    pub control: String,
    /// The question the person is asked (`Press "…"?` / `จะกด "…" ใช่ไหม`).
    pub question: String,
}

/// The person's command the agent has a turn for ([`TaskStatus::needs_agent`], issue 26 items 3
/// and 4). Words of jevgate only: no page text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NeedsAgent {
    /// `READ_REQUEST`: the person asked about what is shown; the agent answers from fresh
    /// evidence and every task mutation it sends is `READ_REQUEST_ONLY` until the person's next
    /// command settles. `AGENT_HANDOFF`: nothing of the command ran; the agent may send one
    /// `task_update` (`when_ready`, at `revision`), run as the person's next direct command
    /// with the impact check.
    pub code: String,
    /// The person's command.
    pub command_id: Option<String>,
    /// The task's revision when the command settled (the hand-off's `expectedRevision`).
    pub revision: u32,
    /// The hand-off's one command was sent.
    pub used: bool,
}

/// One round of [`TaskStatus::action_log`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionLogEntry {
    /// The command, shortened (typed text shows as `[text]`).
    pub command: String,
    /// Its outcome line.
    pub outcome: String,
}

/// A step run's report (R-RUN step mode).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRun {
    /// `ALL_STEPS_DONE`, `STEP_NOT_EXECUTED`, `STEP_NO_EFFECT`, `OUTCOME_UNKNOWN`, `TIMEOUT`,
    /// `ACTION_BUDGET`, `EVALUATION_BUDGET`, `CANCELLED`, or a stopping error's code.
    pub stop_reason: String,
    /// How many steps there were.
    pub steps: usize,
    /// The parts done, as `step.part` (1-based: `"2.1"`).
    pub done_parts: Vec<String>,
    /// The steps not run, shortened.
    pub remaining: Vec<String>,
    /// Steps whose action ran but showed no visible change (scrolls, keys), 1-based.
    pub unverified_steps: Vec<usize>,
    /// Notes (`NEW_TAB_OUT_OF_SCOPE: kept the approved tab`).
    pub notes: Vec<String>,
}

/// The last page mutation prepared for dispatch (its checkpoint committed): not proof that the
/// browser completed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchedMutation {
    /// The operation id.
    pub operation_id: String,
    /// The primitive (`page_click`).
    pub tool: String,
    /// When the checkpoint committed (ms since the Unix epoch).
    pub dispatched_at: i64,
    /// `dispatched` (no result stored), `done`, `not_executed`, `failed`, `unknown`,
    /// `interrupted`.
    pub status: String,
}

/// A task as its owner sees it (R-TSK).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The id (a UUID).
    pub id: String,
    /// The owner.
    pub owner: TaskOwner,
    /// The target.
    pub target: TaskTarget,
    /// The goal as given.
    pub goal: String,
    /// The latest revision, pending included: what a control command's `expectedRevision`
    /// and an update's `expected_revision` must equal. Every accepted command, `revise` and
    /// `update` moves it.
    pub revision: u32,
    /// The latest revision that has started (or settled): [`TaskStatus::revision`] without the
    /// pending updates.
    pub applied_revision: u32,
    /// Updates accepted and waiting for the active request to settle (their revisions).
    pub pending_revisions: Vec<u32>,
    /// `user` or `agent`.
    pub controller: String,
    /// The state.
    pub state: TaskState,
    /// The reason code of the state (`COMPLETION_CANDIDATE`, `STEP_NOT_EXECUTED`,
    /// `BROWSER_EXECUTION_INTERRUPTED`, …).
    pub reason: Option<String>,
    /// The latest outcome line.
    pub outcome: Option<String>,
    /// Page actions dispatched.
    pub actions: u32,
    /// Jev evaluations made.
    pub evaluations: u32,
    /// The last [`ACTION_LOG_ROUNDS`] rounds.
    pub action_log: Vec<ActionLogEntry>,
    /// The latest step run.
    pub step_run: Option<StepRun>,
    /// The task that replaced this one (a spawn for the same target while this session had
    /// failed before any tab action).
    pub replaced_by_task_id: Option<String>,
    /// The field question a step list stopped on (`FIELD_TEXT_REQUIRED`): `{field, question}`
    /// — the field's name is page text. [`Tasks::answer`] continues the run.
    pub field_request: Option<FieldRequest>,
    /// The confirmation a Jev-decided action stopped for (`CONFIRMATION_REQUIRED`, issue 26
    /// item 2): `{control, question}` — the control's name is page text. The person's next
    /// command answers it: yes runs that action on that control once, no runs nothing
    /// (`CONFIRMATION_DECLINED`), anything else is a new command.
    pub confirmation_request: Option<ConfirmationRequest>,
    /// The person's last command went to the agent (issue 26 items 3 and 4): a read request
    /// the agent answers read-only, or a hand-off of a command that did nothing.
    pub needs_agent: Option<NeedsAgent>,
    /// The latest dispatched mutation.
    pub last_dispatched_mutation: Option<DispatchedMutation>,
    /// Commands waiting behind the running one.
    pub queued_commands: usize,
    /// The most recent control receipts ([`STATUS_COMMANDS`]), oldest first: what ran, what
    /// waits and what was dropped, and why.
    pub commands: Vec<ControlReceipt>,
    /// Who verified the task's completion candidate, on which evidence (R-TSK-VER): recorded
    /// apart from the run's own verdict; `None` until a verification completes the task.
    pub verification: Option<Verification>,
    /// A computer task's paired computer while its session is open (seed 003 "Computer
    /// connection status"; issue 25 item 4): `connected`, `disconnected`, `waiting_access` or
    /// `unknown`, checked every [`crate::device::computer::CONNECTION_CHECK`] on the gateway's
    /// clock, idle included. Absent for other targets and once the session closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computer_connection: Option<crate::device::computer::ComputerConnection>,
    /// Created (ms since the Unix epoch).
    pub created_at: i64,
    /// Last changed (ms since the Unix epoch).
    pub updated_at: i64,
}

/// One operation of a receipt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationReceipt {
    /// The operation id.
    pub operation_id: String,
    /// The primitive.
    pub tool: String,
    /// When its checkpoint committed (ms since the Unix epoch).
    pub dispatched_at: i64,
    /// See [`DispatchedMutation::status`].
    pub status: String,
    /// The error code when it failed or is unknown.
    pub error_code: Option<String>,
    /// The primitive's result (private to the owner).
    pub result: Option<serde_json::Value>,
    /// The bounded observation after it (private to the owner; untrusted page content).
    pub observation: Option<serde_json::Value>,
    /// Who resolved it when its outcome was in doubt: `operation_status` (the browser's own
    /// record) or `person` ([`Tasks::resolve`]).
    pub resolved_by: Option<String>,
}

/// The receipt of one request (a command or step list) of a task (R-TSK-RCPT).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// 1-based request number within the task.
    pub request: u32,
    /// `running`, `done`, `not_done`, `unknown`, `interrupted`, `cancelled`, `failed`.
    pub state: String,
    /// The reason code.
    pub reason: Option<String>,
    /// The request's outcome line.
    pub outcome: Option<String>,
    /// Started (ms since the Unix epoch).
    pub started_at: i64,
    /// Ended, if it did.
    pub ended_at: Option<i64>,
    /// The operations dispatched for it, in order.
    pub operations: Vec<OperationReceipt>,
}

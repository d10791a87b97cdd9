//! Gateway configuration (SPEC §2, R-CFG).
//!
//! Owns parsing the `{"gateway": {...}, "agents": [...]}` JSON document into typed values,
//! rejecting unknown keys at every level, applying the documented defaults, and validating every
//! rule as a whole before a configuration may replace the live one. A rejection is
//! `JEV_INVALID_CONFIGURATION` with the JSON path of the first offending value.
//!
//! It must never echo a configured value in an error (a misplaced key could be a secret), and it
//! never reads credentials: it only checks references ([`doctor`] reads key files' metadata).
//! [`ConfigSnapshot`] is a validated configuration with its generation, as the gateway holds it
//! and the layers above capture it (defined here so they need not reach up to the gateway).
//!
//! ```
//! let cfg = jevgate::Config::from_json_str(r#"{
//!   "gateway": {"jev": {"enabled": true, "provider": "local", "allowedAgentIds": ["assistant"]}},
//!   "agents": [{"id": "assistant"}, {"id": "intern", "jev": {"enabled": false}}]
//! }"#).unwrap();
//! assert_eq!(cfg.gateway.jev.timeout_ms, 5000);
//! assert!(cfg.jev_allowed("assistant"));
//! assert!(!cfg.jev_allowed("intern"));
//! ```

mod credentials;
mod doctor;
mod parse;
pub(crate) use parse::path_key;
mod rules;
mod url;

pub use credentials::{
    CredentialRef, Secret, REFUSED_ENV_NAMES, TYPESAFE_DEFAULT_ENV, UPSTREAM_IDENTITY_ENV,
};
pub use doctor::{doctor, CheckStatus, DoctorCheck, DoctorReport};
pub(crate) use url::split_host_port;
pub use url::{parse_endpoint, resolve_api_url, EndpointUrl};

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A configuration as the gateway holds it: immutable, numbered. Work captures one of these
/// when it starts and keeps it to the end, whatever reloads happen meanwhile.
#[derive(Debug)]
pub struct ConfigSnapshot {
    /// Starts at 1 and grows by one on every successful reload.
    pub generation: u64,
    /// The configuration of this generation.
    pub config: Config,
}

/// The largest configuration document accepted, in bytes.
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// A whole, validated configuration document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// The `gateway` block.
    #[serde(default)]
    pub gateway: GatewayConfig,
    /// Per-agent settings; they can only narrow what the gateway block allows.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
}

/// The `gateway` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GatewayConfig {
    /// Jev evaluations and everything built on them.
    #[serde(default)]
    pub jev: JevConfig,
    /// Computer Use with the agent's own model when Jev does not serve it.
    #[serde(default)]
    pub computer_use: ComputerUseConfig,
    /// Browser tasks: how long their rows are kept.
    #[serde(default)]
    pub tasks: TasksConfig,
    /// Where leases live: this process's SQLite file (the default) or the PostgreSQL database a
    /// fleet of processes shares (issue 23). Fixed for the life of a gateway.
    #[serde(default)]
    pub store: StoreConfig,
}

/// Which engine keeps what several processes must agree on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// The embedded SQLite file in the data directory (one process).
    #[default]
    Sqlite,
    /// A PostgreSQL database shared by every process of a fleet (cargo feature `postgres`).
    Postgres,
}

/// `gateway.store`: `{"kind": "sqlite"}` (the default) or `{"kind": "postgres", "urlEnv": NAME}`
/// / `{"kind": "postgres", "urlFile": "/abs/path"}` — exactly one reference. The URL is a
/// credential (R-CFG-ENV, R-CFG-KEYFILE): named, never written in the configuration, never
/// printed.
///
/// ```
/// use jevgate::config::{Config, StoreKind};
/// let c = Config::from_json_str(r#"{"gateway":{"store":{"kind":"postgres","urlEnv":"FLEET_PG_URL"}}}"#).unwrap();
/// assert_eq!(c.gateway.store.kind, StoreKind::Postgres);
/// assert_eq!(Config::default().gateway.store.kind, StoreKind::Sqlite);
/// let e = Config::from_json_str(r#"{"gateway":{"store":{"kind":"postgres"}}}"#).unwrap_err();
/// assert_eq!(e.path(), Some("gateway.store"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StoreConfig {
    /// The engine (default `sqlite`).
    #[serde(default)]
    pub kind: StoreKind,
    /// The environment variable holding the PostgreSQL URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_env: Option<String>,
    /// An absolute path to a file holding only the PostgreSQL URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_file: Option<String>,
}

impl StoreConfig {
    /// Where the PostgreSQL URL is read from (`None` for SQLite).
    pub fn url_ref(&self) -> Option<CredentialRef> {
        if self.kind != StoreKind::Postgres {
            return None;
        }
        match (&self.url_env, &self.url_file) {
            (Some(name), _) => Some(CredentialRef::Env(name.clone())),
            (None, Some(path)) => Some(CredentialRef::File(path.clone())),
            (None, None) => None,
        }
    }
}

/// `gateway.tasks`.
///
/// ```
/// let c = jevgate::Config::from_json_str(r#"{"gateway":{"tasks":{"retentionDays":7}}}"#).unwrap();
/// assert_eq!(c.gateway.tasks.retention(), std::time::Duration::from_secs(7 * 86_400));
/// assert_eq!(jevgate::Config::default().gateway.tasks.retention_days, 30);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TasksConfig {
    /// Days a closed task (completed, failed, cancelled) is kept after its last change, with its
    /// requests and receipts, 1..=3650 (default 30). Open tasks and tasks with an operation in
    /// doubt are never deleted.
    #[serde(default = "d::retention_days")]
    pub retention_days: u64,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            retention_days: d::retention_days(),
        }
    }
}

impl TasksConfig {
    /// The retention window as a duration.
    pub fn retention(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.retention_days.saturating_mul(86_400))
    }
}

/// Which provider answers Jev evaluations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Direct TypeSafe connection (`https://api.typesafe.ai/v1/systemone`).
    Typesafe,
    /// A compatible upstream (`/v1/jev/evaluate`).
    Upstream,
    /// A host-supplied function.
    Callback,
    /// The offline, deterministic heuristic evaluator.
    Local,
}

impl Provider {
    /// `true` for the providers reached over HTTP, which need a model and credentials.
    pub fn is_remote(self) -> bool {
        matches!(self, Provider::Typesafe | Provider::Upstream)
    }
}

/// `gateway.jev`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JevConfig {
    /// Explicit opt-in (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Required when enabled.
    #[serde(default)]
    pub provider: Option<Provider>,
    /// Opaque model id; required for `typesafe` and `upstream`. Never rewritten.
    #[serde(default)]
    pub model: Option<String>,
    /// Absolute path of a file holding only the key.
    #[serde(default)]
    pub api_key_file: Option<String>,
    /// Name of an environment variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Provider endpoint base.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Agents allowed to evaluate; omitted = all, `[]` = none.
    #[serde(default)]
    pub allowed_agent_ids: Option<Vec<String>>,
    /// Whole-evaluation deadline, 1..=120000 ms.
    #[serde(default = "d::timeout_ms")]
    pub timeout_ms: u64,
    /// Evaluations in flight at once, 1..=1024.
    #[serde(default = "d::max_concurrent")]
    pub max_concurrent_requests: u64,
    /// Evaluations waiting for a slot, 0..=65536.
    #[serde(default = "d::max_queue")]
    pub max_queue_size: u64,
    /// UTF-8 JSON request size limit, 1..=1048576.
    #[serde(default = "d::max_input_bytes")]
    pub max_input_bytes: u64,
    /// Questions per request, 1..=64.
    #[serde(default = "d::max_questions")]
    pub max_questions: u64,
    /// Image input.
    #[serde(default)]
    pub images: ImagesConfig,
    /// Feature flags.
    #[serde(default)]
    pub features: Features,
    /// The text helper connection.
    #[serde(default)]
    pub thinking: Option<ThinkingConfig>,
    /// Browser task bindings.
    #[serde(default)]
    pub browser: Option<BrowserConfig>,
}

impl Default for JevConfig {
    fn default() -> Self {
        JevConfig {
            enabled: false,
            provider: None,
            model: None,
            api_key_file: None,
            api_key_env: None,
            base_url: None,
            allowed_agent_ids: None,
            timeout_ms: d::timeout_ms(),
            max_concurrent_requests: d::max_concurrent(),
            max_queue_size: d::max_queue(),
            max_input_bytes: d::max_input_bytes(),
            max_questions: d::max_questions(),
            images: ImagesConfig::default(),
            features: Features::default(),
            thinking: None,
            browser: None,
        }
    }
}

/// `gateway.jev.images`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImagesConfig {
    /// Image input (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Model for requests carrying an image (default `jev-1.14.0`).
    #[serde(default = "d::images_model")]
    pub model: String,
    /// Per-image byte cap, 1..=16 MiB (default 16 MiB).
    #[serde(default = "d::max_image_bytes")]
    pub max_image_bytes: u64,
}

impl Default for ImagesConfig {
    fn default() -> Self {
        ImagesConfig {
            enabled: false,
            model: d::images_model(),
            max_image_bytes: d::max_image_bytes(),
        }
    }
}

/// One feature's `{ "enabled": bool }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureFlag {
    /// Whether the feature is on.
    pub enabled: bool,
}

/// `features.browserTasks`: `{ "enabled": bool, "confirmHighImpact"?: "seed" | "always" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BrowserTasksFlag {
    /// Whether browser tasks are on.
    pub enabled: bool,
    /// When the person confirms a Jev-decided action first (issue 26 item 2); default `seed`.
    #[serde(default)]
    pub confirm_high_impact: ConfirmHighImpact,
}

/// `features.browserTasks.confirmHighImpact` (issue 26 item 2, R-RUN, seed 003 "High-impact
/// controls"): which Jev-decided actions need the person's yes unless Jev judges them routine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmHighImpact {
    /// The seed's rule: the person's own commands and an agent-controlled task's commands are
    /// their own authorization; an agent's goal run and hand-off ask.
    #[default]
    Seed,
    /// Every Jev-decided action asks unless Jev judges it routine (the grammar's fast path of
    /// a person's unambiguous command never asks).
    Always,
}

/// `gateway.jev.features`: exactly four flags; any other key is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Features {
    /// Computer Use connectors (default on).
    #[serde(default)]
    pub computer_tasks: Option<FeatureFlag>,
    /// Step-by-step Computer Use (default off).
    #[serde(default)]
    pub computer_steps: Option<FeatureFlag>,
    /// Remote Browser tasks (default off), with the high-impact confirmation policy.
    #[serde(default)]
    pub browser_tasks: Option<BrowserTasksFlag>,
    /// Step-by-step Remote Browser commands (default off).
    #[serde(default)]
    pub browser_steps: Option<FeatureFlag>,
}

/// A feature of the `features` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `computerTasks`.
    ComputerTasks,
    /// `computerSteps`.
    ComputerSteps,
    /// `browserTasks`.
    BrowserTasks,
    /// `browserSteps`.
    BrowserSteps,
}

impl Features {
    /// Whether `feature` is on, with the documented defaults applied.
    pub fn enabled(&self, feature: Feature) -> bool {
        let (flag, default) = match feature {
            Feature::ComputerTasks => (self.computer_tasks, true),
            Feature::ComputerSteps => (self.computer_steps, false),
            Feature::BrowserTasks => (
                self.browser_tasks
                    .map(|f| FeatureFlag { enabled: f.enabled }),
                false,
            ),
            Feature::BrowserSteps => (self.browser_steps, false),
        };
        flag.map_or(default, |f| f.enabled)
    }
}

/// Wire format of the thinking (text helper) connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ThinkingApi {
    /// `POST {baseUrl}/chat/completions` with `Authorization: Bearer`.
    #[default]
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// `POST {baseUrl}/messages` with `x-api-key`.
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
}

/// `gateway.jev.thinking`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ThinkingConfig {
    /// Base URL including the API version path, e.g. `https://models.example/v1`.
    pub base_url: String,
    /// Model id.
    pub model: String,
    /// Key environment variable (exactly one of this and `api_key_file`).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Absolute key file path.
    #[serde(default)]
    pub api_key_file: Option<String>,
    /// Wire format (default `openai-chat`).
    #[serde(default)]
    pub api: ThinkingApi,
}

/// `gateway.jev.browser`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BrowserConfig {
    /// Approved tab bindings; `[]` means automatic discovery only.
    #[serde(default)]
    pub bindings: Vec<BindingConfig>,
}

/// One browser binding: an approved tab owned by one agent, principal and conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BindingConfig {
    /// Unique id.
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Owning agent.
    pub agent_id: String,
    /// Owning principal.
    pub principal_id: String,
    /// Owning orchestration conversation.
    pub conversation_id: String,
    /// Browser controller endpoint (exclusive with `connector_id`).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// An already connected connector (exclusive with `endpoint` and key references).
    #[serde(default)]
    pub connector_id: Option<String>,
    /// Controller key file.
    #[serde(default)]
    pub api_key_file: Option<String>,
    /// Controller key environment variable.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The approved device, grant and tab.
    pub scope: BindingScope,
    /// Explicit user-supplied field values.
    #[serde(default)]
    pub fields: Vec<BindingField>,
    /// Run budget.
    #[serde(default)]
    pub budget: Budget,
}

/// `scope` of a binding (snake_case keys, as the seed writes them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingScope {
    /// Device id.
    pub device_id: String,
    /// Grant id.
    pub grant_id: String,
    /// Tab id.
    pub tab_id: String,
}

/// An explicit field value of a binding. The text is user data: never logged.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingField {
    /// Field label.
    pub label: String,
    /// Field value (1..=2000 characters).
    pub text: String,
}

impl std::fmt::Debug for BindingField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BindingField")
            .field("label", &self.label)
            .field("text", &"<redacted>")
            .finish()
    }
}

/// A binding's run budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Budget {
    /// Actions per run, 1..=200 (default 20).
    #[serde(default = "d::max_steps")]
    pub max_steps: u64,
    /// Evaluations per run, 1..=500 (default 30).
    #[serde(default = "d::max_evaluations")]
    pub max_evaluations: u64,
    /// Run deadline, 1000..=3600000 ms (default 120000).
    #[serde(default = "d::budget_timeout_ms")]
    pub timeout_ms: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_steps: d::max_steps(),
            max_evaluations: d::max_evaluations(),
            timeout_ms: d::budget_timeout_ms(),
        }
    }
}

/// `gateway.computerUse.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputerUseMode {
    /// Accessibility only (default).
    #[default]
    Ax,
    /// Screenshot and pixel coordinates.
    Vision,
    /// Vision plus accessibility boxes.
    Hybrid,
}

/// `gateway.computerUse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComputerUseConfig {
    /// Opt in (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Step decision model (default `claude-haiku-4-5-20251001`).
    #[serde(default = "d::cu_model")]
    pub model: String,
    /// Per-decision deadline, 1000..=120000 ms (default 20000).
    #[serde(default = "d::cu_timeout_ms")]
    pub timeout_ms: u64,
    /// Confidence below this is unsure, 0.55..=1 (default 0.7).
    #[serde(default = "d::cu_min_confidence")]
    pub min_confidence: f64,
    /// Decision mode (default `ax`).
    #[serde(default)]
    pub mode: ComputerUseMode,
    /// Vision model (default `claude-sonnet-5`).
    #[serde(default = "d::cu_vision_model")]
    pub vision_model: String,
}

impl Default for ComputerUseConfig {
    fn default() -> Self {
        ComputerUseConfig {
            enabled: false,
            model: d::cu_model(),
            timeout_ms: d::cu_timeout_ms(),
            min_confidence: d::cu_min_confidence(),
            mode: ComputerUseMode::default(),
            vision_model: d::cu_vision_model(),
        }
    }
}

/// One entry of `agents[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentConfig {
    /// Agent id (unique).
    pub id: String,
    /// `jev.enabled: false` removes this agent's Jev access; `true` grants nothing extra.
    #[serde(default)]
    pub jev: Option<FeatureFlag>,
    /// `computerUse.enabled: false` removes this agent from the model backend.
    #[serde(default)]
    pub computer_use: Option<FeatureFlag>,
}

/// What [`Config::browser_task_gate`] grants a task's agent under one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrowserTaskGrant {
    /// `features.browserSteps`: a step list runs step by step (R-RUN step mode). Off, the whole
    /// text is one direct command (the one-command path), never refused.
    pub step_lists: bool,
    /// `features.browserTasks.confirmHighImpact` (issue 26 item 2).
    pub confirm_high_impact: ConfirmHighImpact,
}

/// Who decides Computer Use steps for an agent (seed 003 "Computer Use without Jev").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputerUseBackend {
    /// Jev serves Computer Use; `gateway.computerUse` has no effect.
    Jev,
    /// The agent's own model through the Messages API.
    Model,
    /// Computer Use is not available to the agent.
    Unavailable,
}

// The constructors and `Config::validate` live in `parse.rs`, above this file: this file holds
// the types, which `parse.rs` and `rules.rs` read, and uses neither (tests/layers.rs).
impl Config {
    fn agent(&self, agent_id: &str) -> Option<&AgentConfig> {
        self.agents.iter().find(|a| a.id == agent_id)
    }

    /// Whether `agent_id` may run Jev evaluations: global enablement, `allowedAgentIds` and the
    /// agent's own `jev.enabled` (which can only narrow) — R-JEV-ACCESS's static part.
    pub fn jev_allowed(&self, agent_id: &str) -> bool {
        self.jev_refusal(agent_id).is_none()
    }

    /// Why `agent_id` may not run Jev evaluations under this configuration, or `None`
    /// ([`Config::jev_allowed`]): `Jev is not enabled`, `the agent is not in allowedAgentIds`
    /// or `Jev is disabled for this agent` (words that name no other agent).
    pub fn jev_refusal(&self, agent_id: &str) -> Option<&'static str> {
        let jev = &self.gateway.jev;
        if !jev.enabled {
            Some("Jev is not enabled")
        } else if jev
            .allowed_agent_ids
            .as_ref()
            .is_some_and(|ids| !ids.iter().any(|id| id == agent_id))
        {
            Some("the agent is not in allowedAgentIds")
        } else if self
            .agent(agent_id)
            .and_then(|a| a.jev)
            .is_some_and(|f| !f.enabled)
        {
            Some("Jev is disabled for this agent")
        } else {
            None
        }
    }

    /// The browser-task gate (issue 21 defect 6, seed 003): whether a task of `agent_id` may
    /// start, take a command or start its next request under this configuration, and how.
    /// Pure; the task service asks it with the configuration live at each of those moments,
    /// so a reload applies to running and queued tasks before their next browser action.
    ///
    /// `ORCHESTRATION_DISABLED` when Jev is not enabled or `features.browserTasks` is off;
    /// `EXECUTION_DENIED` when the agent has no Jev access ([`Config::jev_refusal`]). Otherwise
    /// the grant: with `features.browserSteps` off a step list is not refused, it runs as one
    /// direct command ([`BrowserTaskGrant::step_lists`]).
    ///
    /// ```
    /// let off = jevgate::Config::from_json_str(
    ///     r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#).unwrap();
    /// assert_eq!(off.browser_task_gate("assistant").unwrap_err().code(), "ORCHESTRATION_DISABLED");
    /// let on = jevgate::Config::from_json_str(r#"{"gateway":{"jev":{"enabled":true,
    ///   "provider":"local","allowedAgentIds":["assistant"],
    ///   "features":{"browserTasks":{"enabled":true}}}}}"#).unwrap();
    /// assert!(!on.browser_task_gate("assistant").unwrap().step_lists);
    /// assert_eq!(on.browser_task_gate("intern").unwrap_err().code(), "EXECUTION_DENIED");
    /// ```
    pub fn browser_task_gate(&self, agent_id: &str) -> crate::Result<BrowserTaskGrant> {
        let jev = &self.gateway.jev;
        if !jev.enabled {
            return Err(crate::Error::OrchestrationDisabled {
                reason: "Jev is not enabled",
            });
        }
        if !jev.features.enabled(Feature::BrowserTasks) {
            return Err(crate::Error::OrchestrationDisabled {
                reason: "features.browserTasks is off",
            });
        }
        if let Some(reason) = self.jev_refusal(agent_id) {
            return Err(crate::Error::ExecutionDenied { reason });
        }
        Ok(BrowserTaskGrant {
            step_lists: jev.features.enabled(Feature::BrowserSteps),
            confirm_high_impact: jev
                .features
                .browser_tasks
                .map(|f| f.confirm_high_impact)
                .unwrap_or_default(),
        })
    }

    /// The computer-task gate (issue 25 item 4; seed 003 "Computer Use connectors"): a task on
    /// a paired computer runs when Jev is enabled, `features.computerTasks` is on (the default)
    /// and `agent_id` may use Jev; otherwise `COMPUTER_NOT_ALLOWED`. A step list runs step by
    /// step under `features.computerSteps` (default off). `features.browserTasks` plays no part.
    ///
    /// ```
    /// let on = jevgate::Config::from_json_str(r#"{"gateway":{"jev":{"enabled":true,
    ///   "provider":"local","allowedAgentIds":["assistant"]}}}"#).unwrap();
    /// assert!(!on.computer_task_gate("assistant").unwrap().step_lists);
    /// assert_eq!(on.computer_task_gate("intern").unwrap_err().code(), "COMPUTER_NOT_ALLOWED");
    /// ```
    pub fn computer_task_gate(&self, agent_id: &str) -> crate::Result<BrowserTaskGrant> {
        let jev = &self.gateway.jev;
        if !jev.enabled
            || !jev.features.enabled(Feature::ComputerTasks)
            || self.jev_refusal(agent_id).is_some()
        {
            return Err(crate::Error::ComputerNotAllowed);
        }
        Ok(BrowserTaskGrant {
            step_lists: jev.features.enabled(Feature::ComputerSteps),
            confirm_high_impact: ConfirmHighImpact::default(),
        })
    }

    /// Which backend decides Computer Use steps for `agent_id`.
    pub fn computer_use_backend(&self, agent_id: &str) -> ComputerUseBackend {
        if self.jev_allowed(agent_id) && self.gateway.jev.features.enabled(Feature::ComputerTasks) {
            return ComputerUseBackend::Jev;
        }
        let agent_ok = self
            .agent(agent_id)
            .and_then(|a| a.computer_use)
            .is_none_or(|f| f.enabled);
        if self.gateway.computer_use.enabled && agent_ok {
            ComputerUseBackend::Model
        } else {
            ComputerUseBackend::Unavailable
        }
    }

    /// Whether `feature` is on: Jev enabled and the flag (with its default) set.
    pub fn feature_enabled(&self, feature: Feature) -> bool {
        self.gateway.jev.enabled && self.gateway.jev.features.enabled(feature)
    }

    /// The Jev credential reference in use, applying the `TYPESAFE_API_KEY` default for a direct
    /// connection without a reference. `None` when Jev is off or needs no credential; for an
    /// `upstream` without references the credential comes from the upstream identity group.
    pub fn jev_credential(&self) -> Option<CredentialRef> {
        let jev = &self.gateway.jev;
        if !jev.enabled {
            return None;
        }
        match (jev.provider?, &jev.api_key_file, &jev.api_key_env) {
            (p, _, _) if !p.is_remote() => None,
            (_, Some(file), _) => Some(CredentialRef::File(file.clone())),
            (_, None, Some(env)) => Some(CredentialRef::Env(env.clone())),
            (Provider::Typesafe, None, None) => {
                Some(CredentialRef::Env(TYPESAFE_DEFAULT_ENV.to_string()))
            }
            _ => None,
        }
    }

    /// Whether Jev resolves its endpoint and key from the gateway's upstream identity group
    /// ([`UPSTREAM_IDENTITY_ENV`]): an enabled `upstream` provider without both `baseUrl` and a
    /// key reference.
    pub(crate) fn uses_upstream_identity(&self) -> bool {
        let jev = &self.gateway.jev;
        jev.enabled
            && jev.provider == Some(Provider::Upstream)
            && !(jev.base_url.is_some() && self.jev_credential().is_some())
    }

    /// The environment variable names this configuration reads credentials from (R-CFG-SECRETS):
    /// the Jev `apiKeyEnv` (or `TYPESAFE_API_KEY` when a direct connection has no reference),
    /// the upstream identity group ([`UPSTREAM_IDENTITY_ENV`]) when an upstream uses it, the
    /// thinking helper's and every binding's `apiKeyEnv`. A host strips them from children.
    ///
    /// ```
    /// let c = jevgate::Config::from_json_str(
    ///     r#"{"gateway":{"jev":{"enabled":true,"provider":"upstream","model":"m"}}}"#).unwrap();
    /// assert!(c.secret_env_names().contains("CLAUDE_CODE_OAUTH_TOKEN"));
    /// ```
    pub fn secret_env_names(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        if let Some(CredentialRef::Env(name)) = self.jev_credential() {
            names.insert(name);
        }
        if self.uses_upstream_identity() {
            names.extend(UPSTREAM_IDENTITY_ENV.iter().map(|n| n.to_string()));
        }
        let jev = &self.gateway.jev;
        if let Some(name) = &jev.api_key_env {
            names.insert(name.clone());
        }
        if let Some(t) = &jev.thinking {
            names.extend(t.api_key_env.iter().cloned());
        }
        if let Some(b) = &jev.browser {
            names.extend(b.bindings.iter().filter_map(|b| b.api_key_env.clone()));
        }
        if let Some(CredentialRef::Env(name)) = self.gateway.store.url_ref() {
            names.insert(name);
        }
        names
    }
}

/// Documented defaults (SPEC §2 table).
mod d {
    pub fn timeout_ms() -> u64 {
        5000
    }
    pub fn max_concurrent() -> u64 {
        4
    }
    pub fn max_queue() -> u64 {
        16
    }
    pub fn max_input_bytes() -> u64 {
        131_072
    }
    pub fn max_questions() -> u64 {
        64
    }
    pub fn images_model() -> String {
        "jev-1.14.0".into()
    }
    pub fn max_image_bytes() -> u64 {
        16 * 1024 * 1024
    }
    pub fn max_steps() -> u64 {
        20
    }
    pub fn max_evaluations() -> u64 {
        30
    }
    pub fn budget_timeout_ms() -> u64 {
        120_000
    }
    pub fn cu_model() -> String {
        "claude-haiku-4-5-20251001".into()
    }
    pub fn cu_timeout_ms() -> u64 {
        20_000
    }
    pub fn cu_min_confidence() -> f64 {
        0.7
    }
    pub fn cu_vision_model() -> String {
        "claude-sonnet-5".into()
    }
    pub fn retention_days() -> u64 {
        30
    }
}

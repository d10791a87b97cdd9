//! The one error type of jevgate (R-ERR).
//!
//! Every failure a host can see is a [`Error`] with a stable [`Error::code`] string (the codes of
//! the product documents, always upper snake case), an [`Error::http_status`] so a host can serve
//! the documented HTTP contracts by mapping errors, a [`Error::family`] that the bindings use to
//! pick an exception class, and [`Error::retryable`]. All four come from one row per variant of
//! [`ERROR_TABLE`]; [`Error::kind`] is the only match over the variants. The seed's lower-case
//! worker codes (`timed_out`, …) are a column of that table ([`Error::worker_code`]), the
//! `errorCode` a device result carries, never a second spelling of `code()`. The table is also
//! exported as `JEVGATE_CODE_*` in the C header and `jevgate.codes` in Python.
//!
//! This module must never put credentials, raw provider bodies, submitted state, field values or
//! page text into a message (R-ERR-2): constructors take codes, paths, sizes and short reasons
//! written by jevgate itself, never text received from outside.

use std::time::Duration;

/// The result type of every fallible jevgate call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which part of jevgate an error comes from. The Python binding raises one exception subclass
/// per family (`jevgate.ConfigError`, `jevgate.StoreError`, …); C hosts read [`Error::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorFamily {
    /// Configuration was rejected or cannot be used.
    Config,
    /// The SQLite store could not be opened, migrated or written.
    Store,
    /// An argument was malformed (NULL pointer, invalid UTF-8, out-of-range value).
    Argument,
    /// The gateway is not in a state that allows the call.
    Gateway,
    /// Jev evaluations: invalid requests, malformed provider responses, provider failures.
    Jev,
    /// The step-command grammar refused an input (e.g. an unsafe address).
    Grammar,
    /// Device control leases and browser session (profile) leases.
    Lease,
    /// The caller is not allowed to do this (wrong owner, delegated credential, an agent
    /// without Jev access).
    Access,
    /// Paired devices, the device-worker channel and the browser tools.
    Device,
    /// A browser backend: the browser, its pages and the actions on them.
    Browser,
    /// Browser tasks: closed sessions, full command queues, tasks turned off.
    Task,
    /// A bug in jevgate (a caught panic, a broken invariant).
    Internal,
}

impl ErrorFamily {
    /// The family's stable lower-case name (`"config"`, `"store"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorFamily::Config => "config",
            ErrorFamily::Store => "store",
            ErrorFamily::Argument => "argument",
            ErrorFamily::Gateway => "gateway",
            ErrorFamily::Jev => "jev",
            ErrorFamily::Grammar => "grammar",
            ErrorFamily::Lease => "lease",
            ErrorFamily::Access => "access",
            ErrorFamily::Device => "device",
            ErrorFamily::Browser => "browser",
            ErrorFamily::Task => "task",
            ErrorFamily::Internal => "internal",
        }
    }
}

/// Every error jevgate reports.
///
/// Match on [`Error::code`] rather than on variants when you need stability across versions:
/// the enum is `#[non_exhaustive]` and grows as modules land, codes never change meaning.
///
/// ```
/// let err = jevgate::Config::from_json_str(r#"{"gateway":{"jev":{"timeoutMs":0}}}"#).unwrap_err();
/// assert_eq!(err.code(), "JEV_INVALID_CONFIGURATION");
/// assert_eq!(err.path(), Some("gateway.jev.timeoutMs"));
/// assert_eq!(err.http_status(), 400);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is not valid JSON, has an unknown key, a value of the wrong type, or
    /// breaks one of the rules of SPEC §2. `path` is the JSON path of the first offending value
    /// (`gateway.jev.apiKeyEnv`, `agents[1].id`; empty for a document-level problem).
    #[error("invalid configuration at {}: {reason}", display_path(path))]
    InvalidConfiguration {
        /// JSON path of the first offending value.
        path: String,
        /// Why the value was rejected, written by jevgate (never echoes the value).
        reason: String,
    },

    /// A credential reference (key file or environment variable) cannot be resolved: the file
    /// is unreadable or empty, or the variable is unset or empty. Names the reference, never
    /// the secret.
    #[error("missing credentials: {reason}")]
    MissingCredentials {
        /// Which reference failed and how (`key file /run/jev.key is empty`).
        reason: String,
    },

    /// The store file is not a SQLite database, is damaged, or is a SQLite database that
    /// belongs to another program.
    #[error("store is corrupt or not a jevgate database: {reason}")]
    StoreCorrupt {
        /// What was found.
        reason: String,
    },

    /// The store was written by a newer jevgate whose schema this version does not know.
    #[error("store schema version {found} is newer than this jevgate supports ({supported})")]
    StoreVersionUnsupported {
        /// `PRAGMA user_version` found in the file.
        found: i64,
        /// The newest schema version this build knows.
        supported: i64,
    },

    /// Another gateway (in this or another process) already has the data directory open.
    #[error("data directory is in use by another gateway")]
    StoreLocked,

    /// The store could not be read or written (disk full, permissions, I/O error).
    #[error("store I/O failed: {reason}")]
    StoreIo {
        /// The operation and the underlying error kind.
        reason: String,
    },

    /// The shared store (PostgreSQL, `gateway.store.kind: "postgres"`) cannot be reached: the
    /// connection was lost and could not be made again, or a statement timed out. Nothing was
    /// changed by the failed call; try again later. The message never carries the URL.
    #[error("store unavailable: {reason}")]
    StoreUnavailable {
        /// The operation and the kind of failure (written by jevgate, never the URL).
        reason: String,
    },

    /// An argument was invalid: a NULL pointer or invalid UTF-8 across the C ABI, or a value
    /// outside its documented range.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// Another root session drives this device (or a person just took it back and the revoked
    /// window is open). Deliberately names nobody (R-LEASE-2).
    #[error(
        "another conversation is controlling this browser; it becomes free after 120 s without use"
    )]
    DeviceControlElsewhere,

    /// A person took control of the device back from this root session. Reported exactly once,
    /// on the session's next call (R-LEASE-3); do not retry unless asked to.
    #[error("a person took control of this browser back; do not retry unless asked to")]
    DeviceControlRevoked,

    /// `renew` by a root session that does not hold the device's lease.
    #[error("this conversation does not hold the browser's control lease")]
    DeviceControlNotHeld,

    /// The caller may not do this: a control route called by someone other than the device's
    /// owner or with a delegated credential (R-LEASE-7); a task id that is not the caller's
    /// (R-TSK: an unknown id, another owner's and a malformed one answer alike).
    #[error("access denied: {reason}")]
    AccessDenied {
        /// Why, without naming other principals.
        reason: String,
    },

    /// Another active thread holds the browser profile. Not retryable as is; when
    /// `isolated_available` (the seed's `isolatedAvailable`) the call may be retried in isolated
    /// mode if the task does not need saved logins (R-PROF-2). Read it with
    /// [`Error::isolated_available`].
    #[error("another active thread holds the browser profile; {}", isolated_hint(*isolated_available))]
    BrowserContextBusy {
        /// Whether isolated mode is available to retry in (`isolatedAvailable`).
        isolated_available: bool,
    },

    /// Authenticated mode was requested without permission or without a configured profile.
    /// Never silently downgraded to isolated (R-PROF-3).
    #[error("authenticated browser mode is unavailable to this caller")]
    BrowserAuthenticatedUnavailable,

    /// A Jev request is invalid (R-JEV-REQ): too many questions, options or levels, a bad
    /// `requestId`, a request larger than `maxInputBytes`, malformed JSON. Rejected before any
    /// I/O. `path` is the JSON path of the offending value when there is one.
    #[error("invalid Jev request at {}: {reason}", display_path(path))]
    InvalidRequest {
        /// JSON path of the offending value (`questions.next_step.criteria`), or empty.
        path: String,
        /// Why, never quoting submitted text.
        reason: String,
    },

    /// A provider response failed validation (R-VAL): one fixed `validationReason` code and
    /// the question key it concerns. The answer itself is never kept or shown.
    #[error("malformed Jev response: {}{}", reason.as_str(), key.as_deref().map(|k| format!(" (question {k})")).unwrap_or_default())]
    MalformedResponse {
        /// Which check failed (`DISTRIBUTION_SUM`, `MISSING_ANSWER`, …).
        reason: crate::reasons::ValidationReason,
        /// The question key concerned, when there is one.
        key: Option<String>,
    },

    /// An address produced by a model or text helper was refused (R-GRM-URL): not http(s) or a
    /// bare domain, or it carries credentials, an IP literal, localhost or a single-label host.
    /// Nothing is dispatched.
    #[error("navigation unresolved: {reason}")]
    NavigationUnresolved {
        /// Which rule refused the address (never the address itself).
        reason: String,
    },

    /// Jev access was refused (R-JEV-ACCESS): Jev is not enabled, the agent is not in
    /// `allowedAgentIds`, or the agent's own `jev.enabled` is false — checked before dispatch
    /// and again before returning (a revocation in between discards the answer, although the
    /// provider may have charged). Also the provider's HTTP 403.
    #[error("Jev access denied: {reason}")]
    JevAccessDenied {
        /// Which check refused (written by jevgate; names no other agent).
        reason: String,
    },

    /// The provider refused the credential (HTTP 401).
    #[error("the Jev provider rejected the credential (HTTP 401)")]
    AuthenticationFailed,

    /// The provider reports the account's quota or credit exhausted (HTTP 402). Retry/reset
    /// metadata the provider sent is kept.
    #[error("the Jev provider reports the quota exhausted (HTTP 402)")]
    QuotaExceeded {
        /// Retry-After and reset metadata, when supplied.
        retry: RetryInfo,
    },

    /// The provider does not serve the requested model (HTTP 404).
    #[error("the Jev provider does not serve the requested model (HTTP 404)")]
    UnsupportedModel,

    /// The `requestId` was already used within this caller's scope in the last five minutes
    /// (R-JEV-LEDGER), or the provider answered HTTP 409. Never a cached answer.
    #[error("request conflict: {reason}")]
    RequestConflict {
        /// Local ledger or provider.
        reason: String,
    },

    /// Rate limited (HTTP 429 from the provider), or the local request ledger is full
    /// (R-JEV-LEDGER: 4096 ids, 1024 per caller). `retry` holds Retry-After / reset metadata.
    #[error("Jev rate limited: {reason}")]
    RateLimited {
        /// Provider or local ledger.
        reason: String,
        /// When to retry, when known.
        retry: RetryInfo,
    },

    /// The local queue of evaluations waiting for a slot is full (`maxQueueSize`, R-JEV-LIMIT).
    /// Rejected immediately; nothing was sent.
    #[error("too many Jev evaluations are waiting (maxQueueSize reached)")]
    QueueFull,

    /// The provider failed: HTTP 5xx, an unexpected status, a redirect (never followed), a
    /// transport or TLS error, or a callback provider's failure. The provider's body is never
    /// kept. Not retried automatically.
    #[error("Jev provider failure: {reason}")]
    ProviderFailure {
        /// Status or transport error kind, written by jevgate.
        reason: String,
    },

    /// The evaluation's deadline (`timeoutMs`, covering queue wait, credential resolution and
    /// I/O) passed. The provider may still have done (and charged for) the work.
    #[error("Jev evaluation timed out after {timeout_ms} ms")]
    Timeout {
        /// The deadline that applied, in milliseconds.
        timeout_ms: u64,
    },

    /// The caller cancelled the evaluation (R-JEV-LIMIT). The provider may still have done the
    /// work.
    #[error("Jev evaluation cancelled by the caller")]
    Cancelled,

    /// The gateway has been closed; no further calls are accepted.
    #[error("the gateway is closed")]
    GatewayClosed,

    /// No such device for this owner: none is paired, the id is unknown, or it belongs to
    /// another owner (existence is never revealed across owners) (R-DEV-FAIL).
    #[error("no browser is paired with this id for this account; pair one first")]
    DeviceNotPaired,

    /// The owner has several browsers paired and the call named none; copy `deviceId` from the
    /// device inventory (R-DEV-TOOLS).
    #[error("several browsers are paired; pass deviceId (see the device inventory)")]
    DeviceSelectionRequired,

    /// The device is paired but its worker is not connected to the channel right now.
    #[error("the browser is offline; it drives only while its extension is connected")]
    DeviceOffline,

    /// The device cannot serve browser tools: a shell worker, or a browser whose extension
    /// last authenticated below channel protocol 2 (R-DEV-VER). Refused before anything is
    /// queued.
    #[error("this device cannot run browser tools (extension out of date — update to use)")]
    DeviceCapabilityMismatch,

    /// A tool name that is not one of the browser tools.
    #[error("unknown tool `{tool}`")]
    UnknownTool {
        /// The requested tool name, when it is a short identifier; `?` otherwise.
        tool: String,
    },

    /// A tool's arguments failed validation before anything was sent (R-DEV-TOOLS). The
    /// reason names the argument and the rule, never its value.
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidToolArguments {
        /// The tool.
        tool: &'static str,
        /// Which argument and rule, never the value.
        reason: String,
    },

    /// No artifact with this id for this root session (also when it belongs to another
    /// session: existence is never revealed) (R-DEV-SHOT).
    #[error("no such artifact for this session")]
    ArtifactNotFound,

    /// The device-worker channel could not be served (address in use, TLS setup failed).
    #[error("device channel failed: {reason}")]
    ChannelIo {
        /// The operation and the error kind.
        reason: String,
    },

    /// No browser can be driven: no Chromium is installed (or `JEVGATE_CHROMIUM` points at
    /// nothing runnable), it failed to start, or the browser process exited or its DevTools
    /// connection was lost under the backend. `reason` is written by jevgate.
    #[error("browser unavailable: {reason}")]
    BrowserUnavailable {
        /// What happened (`no Chromium found`, `the browser connection was lost`).
        reason: String,
    },

    /// The observation the action was decided on no longer describes the page (R-BRW-STALE).
    /// Nothing was sent to the page; re-observe and decide again. The action is never
    /// replayed by jevgate.
    #[error("stale observation: {cause}")]
    StaleObservation {
        /// Why the observation is stale.
        cause: crate::reasons::StaleCause,
    },

    /// `tab_history` asked for a history entry that does not exist. Nothing was sent
    /// (not executed, never an unknown outcome).
    #[error("no history entry in that direction; nothing was sent")]
    HistoryUnavailable,

    /// `page_scroll` towards a limit the page is already at. Nothing was sent.
    #[error("the page is already scrolled to that limit; nothing was sent")]
    ScrollLimit,

    /// `page_type` into an element that cannot take keyboard focus (not editable, disabled,
    /// read-only, or focus was refused). No key was sent.
    #[error("the target cannot take keyboard focus; nothing was typed")]
    FocusRequired,

    /// A JavaScript dialog (alert, confirm, prompt, beforeunload) is open in the tab; every
    /// action other than handling it is refused until it is accepted or dismissed.
    #[error("a {kind} dialog is open; handle it before acting on the page")]
    DialogOpen {
        /// The dialog type (`alert`, `confirm`, `prompt`, `beforeunload`).
        kind: String,
    },

    /// `handle_dialog` was called while no dialog is open.
    #[error("no dialog is open")]
    NoDialog,

    /// A ref that this generation never handed out (`e999`), or a target that has no box on
    /// the page (hidden, zero-sized). Nothing was sent.
    #[error("target not found: {reason}")]
    TargetNotFound {
        /// Which ref and why, written by jevgate.
        reason: String,
    },

    /// A navigation could not be started or failed at the network level (refused scheme,
    /// connection refused, DNS failure). The reason names the error class, never the URL.
    #[error("navigation failed: {reason}")]
    NavigationFailed {
        /// The network error class (`net::ERR_CONNECTION_REFUSED`) or the refusal.
        reason: String,
    },

    /// The browser did not answer a command within its deadline (worker code `timed_out`).
    #[error("the browser did not answer within {}ms", timeout.as_millis())]
    BrowserTimeout {
        /// The deadline that passed.
        timeout: Duration,
    },

    /// The tab is gone (closed, crashed) or was never opened (worker code `tab_unavailable`).
    #[error("the tab is unavailable")]
    TabUnavailable,

    /// A script run by `javascript` threw or its result could not be serialized (worker code
    /// `javascript_error`). The page's exception text is not repeated.
    #[error("the script failed: {reason}")]
    JavascriptError {
        /// `threw an exception`, `result is not serializable`, … written by jevgate.
        reason: String,
    },

    /// The browser refused a command (worker code `execution_failed`). `reason` is the
    /// DevTools method name and error code, never page content.
    #[error("the browser refused the command: {reason}")]
    ExecutionFailed {
        /// The DevTools method and protocol error code.
        reason: String,
    },

    /// The tab is leased to another operation holder (`tab_lease` acquire while held).
    #[error("the tab is leased by another holder")]
    TabLeaseHeld,

    /// A new tab would pass the session's tab cap ([`crate::browser::LaunchOptions::max_tabs`],
    /// default 10; the page's own popups count). Nothing was opened; close a tab first. HTTP 409,
    /// not 429: the cap is a state of the session that waiting never lifts, only closing a tab.
    #[error("the session already has its maximum of {limit} tabs (popups count); close one first")]
    TabLimit {
        /// The cap.
        limit: usize,
    },

    /// A command reached the browser and no result came back: its worker disconnected, the
    /// command's deadline passed, or a person took control back while it ran (R-TSK-RCPT,
    /// R-DEV-FAIL). The action may or may not have taken effect; it is never sent again —
    /// ask `operation_status(operationId)` or the person. Distinct from every "nothing was sent"
    /// error (`DEVICE_OFFLINE`, `STALE_OBSERVATION`, …).
    #[error("outcome unknown: {reason}; it may have taken effect and was not sent again")]
    OutcomeUnknown {
        /// What happened after the command was sent, written by jevgate.
        reason: String,
    },
    /// The task's session is closed: it finished, failed or was cancelled and takes no more
    /// commands (R-TSK-CTL `AUTOMATION_SESSION_CLOSED`).
    #[error("the task's session is closed and takes no more commands")]
    AutomationSessionClosed,

    /// The task already has [`crate::task::MAX_QUEUED_COMMANDS`] commands waiting (R-TSK-CTL).
    #[error("the task's command queue is full")]
    CommandQueueFull,

    /// A spawn past the open-session bounds ([`crate::task::TaskLimits`]), or for a target (a
    /// profile, a device) that an open session already drives and that did more than fail
    /// before any tab action (R-TSK-CTL "Replaced sessions"). Carries that session's (or the
    /// principal's oldest session's) state, last reason code and controller — never its text,
    /// never another principal's.
    #[error(
        "an automation session is already open{}",
        session_summary(state, reason, controller)
    )]
    AutomationSessionExists {
        /// The session's state, when it is the same principal's.
        state: Option<String>,
        /// Its last reason code.
        reason: Option<String>,
        /// Who controls it (`user` or `agent`).
        controller: Option<String>,
    },

    /// As many spawns as allowed already wait for a task slot (R-TSK-CTL).
    #[error("too many tasks wait for a slot")]
    TaskQueueFull,

    /// A control input is malformed (R-TSK-CTL, seed 003's control route): a task or command id
    /// that is not a UUID, a missing or extra field, text on an action that takes none. The
    /// control route's counterpart of `INVALID_ARGUMENT`; never echoes the input.
    #[error("invalid input `{name}`: {reason}")]
    InvalidInput {
        /// Which input.
        name: &'static str,
        /// Why, never quoting it.
        reason: String,
    },

    /// The control command's `expectedRevision` is not the task's latest revision (pending
    /// included): someone changed the task since the caller looked (R-TSK-CTL).
    #[error("revision conflict: expected {expected}, the task is at {current}")]
    RevisionConflict {
        /// What the caller expected.
        expected: u32,
        /// The task's latest revision.
        current: u32,
    },

    /// The control action is not allowed in the task's state (R-TSK-CTL's action × state
    /// table); `reason` says which rule (`ALREADY_PAUSED`, `NOT_STARTED`, …).
    #[error("state conflict: {reason}")]
    StateConflict {
        /// The rule, as a code.
        reason: &'static str,
    },

    /// A command id was reused with different contents (R-TSK-CTL). The same id with the same
    /// contents answers the same result instead.
    #[error("the command id was already used with different contents")]
    IdempotencyConflict,

    /// `resume` with nothing the owner paused (R-TSK-CTL): a finished command is never
    /// replayed.
    #[error("nothing to resume: only work the owner paused continues")]
    NothingToResume,
    /// Browser tasks are turned off (R-CFG features, seed 003 `ORCHESTRATION_DISABLED`): Jev is
    /// not enabled or `features.browserTasks` is off, in the configuration live at the call.
    /// Nothing was opened or sent; a reload that turns them on lifts it.
    #[error("browser tasks are turned off: {reason}")]
    OrchestrationDisabled {
        /// Which switch is off (`Jev is not enabled`, `features.browserTasks is off`).
        reason: &'static str,
    },

    /// The task's agent may not run browser tasks (R-JEV-ACCESS, seed 003 `EXECUTION_DENIED`):
    /// it is not in `allowedAgentIds`, or its own `jev.enabled` is false. Nothing was opened or
    /// sent.
    #[error("execution denied: {reason}")]
    ExecutionDenied {
        /// Which check refused (written by jevgate; names no other agent).
        reason: &'static str,
    },

    /// Browser evidence of the task is not this caller's to read (issue 21 item 7, seed 003's
    /// evidence routes, R-TSK-VER): every access or ownership failure of an evidence read — an
    /// unknown or malformed task id, another agent's, principal's or conversation's task, an
    /// agent without browser-task access — answers this one way, word for word, so the answer
    /// says nothing about whether the task exists.
    #[error("browser evidence is unavailable: no task of this id with evidence this agent, principal and conversation may read")]
    BrowserEvidenceUnavailable,

    /// A host's verifier broke its contract (issue 26 item 6, R-TSK-VER; seed 003 "Independent
    /// verification must return a boolean"): it answered something other than a boolean — a
    /// string, `null`, an object — or panicked. Never read as `false`: a completion candidate
    /// it was asked about keeps waiting with this code as its request's reason.
    #[error("invalid contract: {reason}")]
    InvalidContract {
        /// What the hook broke (written by jevgate; never the hook's answer).
        reason: &'static str,
    },

    /// The agent's turn for a person's read request is read-only (issue 26 item 3, seed 003
    /// "Read requests"): status and evidence reads are allowed; every mutation of that task by
    /// the agent is refused until the person's next command settles.
    #[error("read request only: the agent's turn for the person's read request is read-only")]
    ReadRequestOnly,

    /// A person's command was handed to the agent (issue 26 item 4, seed 003 "Agent hand-off
    /// when nothing ran"): the one thing the agent may send for it is a `task_update` (`mode:
    /// when_ready`, the revision the command settled at, no field values, no start URL).
    #[error("agent hand-off takes one command: a task_update at the hand-off's revision")]
    AgentHandoffOneCommand,

    /// The agent already sent its one command for this hand-off (issue 26 item 4).
    #[error("agent hand-off used: the agent already sent its one command for this utterance")]
    AgentHandoffUsed,

    /// A task control call was carried to the live process running the task (issue 23,
    /// R-TSK-CTL across processes) and written there durably, but that process did not
    /// confirm applying it within the carry deadline. It was neither refused nor lost: the
    /// owner applies it when it reads it (within a minute of the call, else never). Read the
    /// task's status to see its effect; do not resend a command (it would run twice).
    #[error("task control pending: {reason}")]
    TaskControlPending {
        /// Why, written by jevgate (never task text).
        reason: &'static str,
    },

    /// The call cannot be carried to the live process of the fleet running the task (issue
    /// 23): a fresh inspection of its browser or a verification against evidence of it. Make
    /// it through the gateway of that process; nothing was done.
    #[error("the task runs in another process of the fleet; inspect or verify it there")]
    TaskRunningElsewhere,

    /// An error the live process running the task answered a carried control call with
    /// (issue 23): its code, status and family are that error's ([`Error::kind`]), its message
    /// as that process wrote it (jevgate's words, never task text).
    #[error("{message}")]
    Carried {
        /// The kind of the error the owner process answered with.
        kind: ErrorKind,
        /// Its message.
        message: String,
    },

    /// The task's browser cannot be inspected now (fresh evidence, issue 21 item 7): its local
    /// browser is gone (the task ended, or the process that ran it died), a request is running
    /// on it, or the device is offline or its tab is leased. Nothing was done to the page;
    /// recorded evidence is still available.
    #[error("browser inspection is unavailable: {reason}")]
    BrowserInspectionUnavailable {
        /// Why, written by jevgate (never page content).
        reason: &'static str,
    },

    /// The person has not approved access to their computer, or the approval expired (issue
    /// 25, seed 003 "Computer Use connectors": pairing alone authorizes nothing). The helper
    /// refused before acting: nothing was observed or done.
    #[error("the person has not approved (or no longer approves) access to this computer")]
    ConsentRequired,

    /// The front application is not one the person approved in the computer helper (issue
    /// 25). Nothing was observed or done.
    #[error("the front application is not one the person approved for computer access")]
    ApplicationNotAllowed,

    /// A computer access request went unanswered for five minutes on the device (seed 003
    /// "Device sessions and access requests"). Not a denial; nothing was done on the desktop.
    #[error("the computer access request was not answered within five minutes")]
    ComputerAccessTimeout,

    /// The computer helper speaks another major version of the helper contract (seed 003
    /// "Computer helper contract": version 1). Refused before any action.
    #[error("the computer helper speaks contract version {major}, this gateway speaks 1")]
    ComputerContractUnsupported {
        /// The helper's major contract version.
        major: u64,
    },

    /// The computer helper refused to observe the desktop (seed 003 pre-dispatch rejection).
    /// Nothing was done.
    #[error("the computer helper refused to observe the desktop")]
    ObservationDenied,

    /// The computer helper refused control of the desktop (seed 003 pre-dispatch rejection).
    /// Nothing was done.
    #[error("the computer helper refused control of the desktop")]
    ControlDenied,

    /// The computer helper is busy with another session's action (seed 003 pre-dispatch
    /// rejection). Nothing was done; try again later.
    #[error("the computer helper is busy")]
    ComputerBusy,

    /// Computer Use is not enabled for this agent (seed 003 "Computer Use connectors": Jev
    /// off, `features.computerTasks` disabled, or the agent not allowed). Not retryable.
    #[error("Computer Use is not enabled for this agent")]
    ComputerNotAllowed,

    /// The computer helper failed in a way jevgate does not know, or answered something that
    /// is not the helper contract (issue 25). `reason` is written by jevgate, never the
    /// helper's own text.
    #[error("the computer helper failed: {reason}")]
    ComputerToolFailed {
        /// What went wrong, written by jevgate.
        reason: &'static str,
    },

    /// A bug in jevgate: a panic caught at an FFI boundary or a broken internal invariant.
    #[error("internal error: {reason}")]
    Internal {
        /// What went wrong.
        reason: String,
    },
}

/// ` (state: waiting_input, reason: STEP_NOT_EXECUTED, controller: user)`, or nothing.
fn session_summary(
    state: &Option<String>,
    reason: &Option<String>,
    controller: &Option<String>,
) -> String {
    let parts: Vec<String> = [
        ("state", state),
        ("reason", reason),
        ("controller", controller),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {v}")))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Retry and reset metadata kept from a provider's `Retry-After` and rate-limit reset headers
/// (R-ERR-2, R-JEV-ERRMAP), as typed values: never the raw header text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryInfo {
    /// How long to wait before retrying (`Retry-After`, delta-seconds or an HTTP date
    /// converted against the gateway's wall clock).
    pub retry_after: Option<Duration>,
    /// When the provider's rate-limit window resets (`RateLimit-Reset` / `X-RateLimit-Reset`:
    /// epoch seconds when larger than 10⁹, otherwise seconds from now).
    pub reset_at: Option<std::time::SystemTime>,
}

fn isolated_hint(available: bool) -> &'static str {
    if available {
        "isolated mode is available (isolatedAvailable: true)"
    } else {
        "isolated mode is not available (isolatedAvailable: false)"
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "the document root"
    } else {
        path
    }
}

/// Declares [`ErrorKind`] and [`ERROR_TABLE`] from one list, so the kinds and the rows cannot
/// drift apart: row `i` of the table is the kind whose discriminant is `i`.
macro_rules! error_table {
    ($($kind:ident => $code:literal, $status:literal, $family:ident, $retry:literal, $worker:expr;)+) => {
        /// Which variant an [`Error`] is, without its fields: the index of its row in
        /// [`ERROR_TABLE`]. Read it with [`Error::kind`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        #[allow(missing_docs)] // each kind is documented on the `Error` variant of the same name
        pub enum ErrorKind {
            $($kind,)+
        }

        impl ErrorKind {
            /// Every kind, in table order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind,)+];
        }

        /// One row per [`ErrorKind`], in declaration order (R-ERR-1): the only place a code,
        /// an HTTP status, a family, retryability or a worker code is written down.
        pub const ERROR_TABLE: &[ErrorRow] = &[$(ErrorRow {
            kind: ErrorKind::$kind,
            code: $code,
            http_status: $status,
            family: ErrorFamily::$family,
            retryable: $retry,
            worker_code: $worker,
        },)+];
    };
}

/// One row of [`ERROR_TABLE`]: everything a host maps an error by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorRow {
    /// The kind this row describes.
    pub kind: ErrorKind,
    /// The stable code, upper snake case (`JEV_TIMEOUT`); also `JEVGATE_CODE_<code>` in the C
    /// header and `jevgate.codes.<code>` in Python.
    pub code: &'static str,
    /// The HTTP status a host serving the documented contracts answers with.
    pub http_status: u16,
    /// The family (the Python exception class).
    pub family: ErrorFamily,
    /// Whether the same call may succeed when simply tried again later (after
    /// [`Error::retry_after`] when given; a Jev retry needs a fresh `requestId`). `false` when
    /// something must change first or a retry must not happen unasked.
    pub retryable: bool,
    /// The seed's lower-case worker code (R-DEV-FAIL) this error travels as in a device
    /// result's `errorCode`, for the browser errors that have one.
    pub worker_code: Option<&'static str>,
}

error_table! {
    InvalidConfiguration => "JEV_INVALID_CONFIGURATION", 400, Config, false, None;
    MissingCredentials => "JEV_MISSING_CREDENTIALS", 500, Config, false, None;
    StoreCorrupt => "STORE_CORRUPT", 500, Store, false, None;
    StoreVersionUnsupported => "STORE_VERSION_UNSUPPORTED", 500, Store, false, None;
    StoreLocked => "STORE_LOCKED", 409, Store, true, None;
    StoreIo => "STORE_IO", 500, Store, false, None;
    StoreUnavailable => "STORE_UNAVAILABLE", 503, Store, true, None;
    InvalidArgument => "INVALID_ARGUMENT", 400, Argument, false, None;
    DeviceControlElsewhere => "DEVICE_CONTROL_ELSEWHERE", 409, Lease, true, None;
    DeviceControlRevoked => "DEVICE_CONTROL_REVOKED", 409, Lease, false, None;
    DeviceControlNotHeld => "DEVICE_CONTROL_NOT_HELD", 409, Lease, false, None;
    AccessDenied => "ACCESS_DENIED", 403, Access, false, None;
    BrowserContextBusy => "BROWSER_CONTEXT_BUSY", 409, Lease, false, None;
    BrowserAuthenticatedUnavailable => "BROWSER_AUTHENTICATED_UNAVAILABLE", 403, Lease, false, None;
    InvalidRequest => "JEV_INVALID_REQUEST", 400, Jev, false, None;
    MalformedResponse => "JEV_MALFORMED_RESPONSE", 502, Jev, false, None;
    NavigationUnresolved => "NAVIGATION_UNRESOLVED", 400, Grammar, false, None;
    JevAccessDenied => "JEV_ACCESS_DENIED", 403, Jev, false, None;
    AuthenticationFailed => "JEV_AUTHENTICATION_FAILED", 401, Jev, false, None;
    QuotaExceeded => "JEV_QUOTA_EXCEEDED", 402, Jev, false, None;
    UnsupportedModel => "JEV_UNSUPPORTED_MODEL", 404, Jev, false, None;
    RequestConflict => "JEV_REQUEST_CONFLICT", 409, Jev, false, None;
    RateLimited => "JEV_RATE_LIMITED", 429, Jev, true, None;
    QueueFull => "JEV_QUEUE_FULL", 429, Jev, true, None;
    ProviderFailure => "JEV_PROVIDER_FAILURE", 502, Jev, true, None;
    Timeout => "JEV_TIMEOUT", 504, Jev, true, None;
    Cancelled => "JEV_CANCELLED", 499, Jev, false, None;
    GatewayClosed => "GATEWAY_CLOSED", 409, Gateway, false, None;
    DeviceNotPaired => "DEVICE_NOT_PAIRED", 404, Device, false, None;
    DeviceSelectionRequired => "DEVICE_SELECTION_REQUIRED", 400, Device, false, None;
    DeviceOffline => "DEVICE_OFFLINE", 409, Device, true, None;
    DeviceCapabilityMismatch => "DEVICE_CAPABILITY_MISMATCH", 409, Device, false, None;
    UnknownTool => "UNKNOWN_TOOL", 400, Device, false, None;
    InvalidToolArguments => "INVALID_TOOL_ARGUMENTS", 400, Device, false, None;
    ArtifactNotFound => "ARTIFACT_NOT_FOUND", 404, Device, false, None;
    ChannelIo => "DEVICE_CHANNEL_IO", 500, Device, false, None;
    BrowserUnavailable => "BROWSER_UNAVAILABLE", 500, Browser, false, None;
    StaleObservation => "STALE_OBSERVATION", 409, Browser, false, None;
    HistoryUnavailable => "HISTORY_UNAVAILABLE", 409, Browser, false, None;
    ScrollLimit => "SCROLL_LIMIT", 409, Browser, false, None;
    FocusRequired => "FOCUS_REQUIRED", 409, Browser, false, None;
    DialogOpen => "DIALOG_OPEN", 409, Browser, false, None;
    NoDialog => "NO_DIALOG", 409, Browser, false, None;
    TargetNotFound => "TARGET_NOT_FOUND", 400, Browser, false, None;
    NavigationFailed => "NAVIGATION_FAILED", 400, Browser, false, None;
    BrowserTimeout => "BROWSER_TIMEOUT", 500, Browser, false, Some("timed_out");
    TabUnavailable => "TAB_UNAVAILABLE", 500, Browser, false, Some("tab_unavailable");
    JavascriptError => "JAVASCRIPT_ERROR", 500, Browser, false, Some("javascript_error");
    ExecutionFailed => "EXECUTION_FAILED", 500, Browser, false, Some("execution_failed");
    TabLeaseHeld => "TAB_LEASE_HELD", 409, Browser, true, None;
    TabLimit => "TAB_LIMIT", 409, Browser, false, None;
    OutcomeUnknown => "OUTCOME_UNKNOWN", 502, Browser, false, None;
    AutomationSessionClosed => "AUTOMATION_SESSION_CLOSED", 410, Task, false, None;
    CommandQueueFull => "COMMAND_QUEUE_FULL", 429, Task, true, None;
    AutomationSessionExists => "AUTOMATION_SESSION_EXISTS", 409, Task, false, None;
    TaskQueueFull => "TASK_QUEUE_FULL", 429, Task, true, None;
    InvalidInput => "INVALID_INPUT", 400, Argument, false, None;
    RevisionConflict => "REVISION_CONFLICT", 409, Task, false, None;
    StateConflict => "STATE_CONFLICT", 409, Task, false, None;
    IdempotencyConflict => "IDEMPOTENCY_CONFLICT", 409, Task, false, None;
    NothingToResume => "NOTHING_TO_RESUME", 409, Task, false, None;
    OrchestrationDisabled => "ORCHESTRATION_DISABLED", 409, Task, false, None;
    ExecutionDenied => "EXECUTION_DENIED", 403, Access, false, None;
    BrowserEvidenceUnavailable => "BROWSER_EVIDENCE_UNAVAILABLE", 403, Access, false, None;
    BrowserInspectionUnavailable => "BROWSER_INSPECTION_UNAVAILABLE", 503, Browser, false, None;
    InvalidContract => "INVALID_CONTRACT", 502, Task, false, None;
    ReadRequestOnly => "READ_REQUEST_ONLY", 409, Task, false, None;
    AgentHandoffOneCommand => "AGENT_HANDOFF_ONE_COMMAND", 409, Task, false, None;
    AgentHandoffUsed => "AGENT_HANDOFF_USED", 409, Task, false, None;
    TaskControlPending => "TASK_CONTROL_PENDING", 504, Task, false, None;
    TaskRunningElsewhere => "TASK_RUNNING_ELSEWHERE", 409, Task, false, None;
    ConsentRequired => "CONSENT_REQUIRED", 403, Device, false, None;
    ApplicationNotAllowed => "APPLICATION_NOT_ALLOWED", 403, Device, false, None;
    ComputerAccessTimeout => "COMPUTER_ACCESS_TIMEOUT", 504, Device, false, None;
    ComputerContractUnsupported => "COMPUTER_CONTRACT_UNSUPPORTED", 502, Device, false, None;
    ObservationDenied => "OBSERVATION_DENIED", 403, Device, false, None;
    ControlDenied => "CONTROL_DENIED", 403, Device, false, None;
    ComputerBusy => "COMPUTER_BUSY", 409, Device, true, None;
    ComputerToolFailed => "COMPUTER_TOOL_FAILED", 502, Device, false, None;
    ComputerNotAllowed => "COMPUTER_NOT_ALLOWED", 403, Device, false, None;
    Internal => "INTERNAL", 500, Internal, false, None;
}

impl ErrorKind {
    /// This kind's row of [`ERROR_TABLE`].
    pub fn row(self) -> &'static ErrorRow {
        &ERROR_TABLE[self as usize]
    }

    /// The stable code (see [`Error::code`]).
    pub fn code(self) -> &'static str {
        self.row().code
    }

    /// The kind whose code is `code`, if any.
    ///
    /// ```
    /// use jevgate::ErrorKind;
    /// assert_eq!(ErrorKind::from_code("JEV_TIMEOUT"), Some(ErrorKind::Timeout));
    /// assert_eq!(ErrorKind::from_code("timed_out"), None);
    /// ```
    pub fn from_code(code: &str) -> Option<ErrorKind> {
        ERROR_TABLE.iter().find(|r| r.code == code).map(|r| r.kind)
    }
}

impl Error {
    /// Which variant this is: the only `match` over the variants; everything else reads the
    /// kind's row of [`ERROR_TABLE`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidConfiguration { .. } => ErrorKind::InvalidConfiguration,
            Error::MissingCredentials { .. } => ErrorKind::MissingCredentials,
            Error::StoreCorrupt { .. } => ErrorKind::StoreCorrupt,
            Error::StoreVersionUnsupported { .. } => ErrorKind::StoreVersionUnsupported,
            Error::StoreLocked => ErrorKind::StoreLocked,
            Error::StoreIo { .. } => ErrorKind::StoreIo,
            Error::StoreUnavailable { .. } => ErrorKind::StoreUnavailable,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::DeviceControlElsewhere => ErrorKind::DeviceControlElsewhere,
            Error::DeviceControlRevoked => ErrorKind::DeviceControlRevoked,
            Error::DeviceControlNotHeld => ErrorKind::DeviceControlNotHeld,
            Error::AccessDenied { .. } => ErrorKind::AccessDenied,
            Error::BrowserContextBusy { .. } => ErrorKind::BrowserContextBusy,
            Error::BrowserAuthenticatedUnavailable => ErrorKind::BrowserAuthenticatedUnavailable,
            Error::InvalidRequest { .. } => ErrorKind::InvalidRequest,
            Error::MalformedResponse { .. } => ErrorKind::MalformedResponse,
            Error::NavigationUnresolved { .. } => ErrorKind::NavigationUnresolved,
            Error::JevAccessDenied { .. } => ErrorKind::JevAccessDenied,
            Error::AuthenticationFailed => ErrorKind::AuthenticationFailed,
            Error::QuotaExceeded { .. } => ErrorKind::QuotaExceeded,
            Error::UnsupportedModel => ErrorKind::UnsupportedModel,
            Error::RequestConflict { .. } => ErrorKind::RequestConflict,
            Error::RateLimited { .. } => ErrorKind::RateLimited,
            Error::QueueFull => ErrorKind::QueueFull,
            Error::ProviderFailure { .. } => ErrorKind::ProviderFailure,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Cancelled => ErrorKind::Cancelled,
            Error::GatewayClosed => ErrorKind::GatewayClosed,
            Error::DeviceNotPaired => ErrorKind::DeviceNotPaired,
            Error::DeviceSelectionRequired => ErrorKind::DeviceSelectionRequired,
            Error::DeviceOffline => ErrorKind::DeviceOffline,
            Error::DeviceCapabilityMismatch => ErrorKind::DeviceCapabilityMismatch,
            Error::UnknownTool { .. } => ErrorKind::UnknownTool,
            Error::InvalidToolArguments { .. } => ErrorKind::InvalidToolArguments,
            Error::ArtifactNotFound => ErrorKind::ArtifactNotFound,
            Error::ChannelIo { .. } => ErrorKind::ChannelIo,
            Error::BrowserUnavailable { .. } => ErrorKind::BrowserUnavailable,
            Error::StaleObservation { .. } => ErrorKind::StaleObservation,
            Error::HistoryUnavailable => ErrorKind::HistoryUnavailable,
            Error::ScrollLimit => ErrorKind::ScrollLimit,
            Error::FocusRequired => ErrorKind::FocusRequired,
            Error::DialogOpen { .. } => ErrorKind::DialogOpen,
            Error::NoDialog => ErrorKind::NoDialog,
            Error::TargetNotFound { .. } => ErrorKind::TargetNotFound,
            Error::NavigationFailed { .. } => ErrorKind::NavigationFailed,
            Error::BrowserTimeout { .. } => ErrorKind::BrowserTimeout,
            Error::TabUnavailable => ErrorKind::TabUnavailable,
            Error::JavascriptError { .. } => ErrorKind::JavascriptError,
            Error::ExecutionFailed { .. } => ErrorKind::ExecutionFailed,
            Error::TabLeaseHeld => ErrorKind::TabLeaseHeld,
            Error::TabLimit { .. } => ErrorKind::TabLimit,
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::AutomationSessionClosed => ErrorKind::AutomationSessionClosed,
            Error::CommandQueueFull => ErrorKind::CommandQueueFull,
            Error::AutomationSessionExists { .. } => ErrorKind::AutomationSessionExists,
            Error::TaskQueueFull => ErrorKind::TaskQueueFull,
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::RevisionConflict { .. } => ErrorKind::RevisionConflict,
            Error::StateConflict { .. } => ErrorKind::StateConflict,
            Error::IdempotencyConflict => ErrorKind::IdempotencyConflict,
            Error::NothingToResume => ErrorKind::NothingToResume,
            Error::OrchestrationDisabled { .. } => ErrorKind::OrchestrationDisabled,
            Error::ExecutionDenied { .. } => ErrorKind::ExecutionDenied,
            Error::BrowserEvidenceUnavailable => ErrorKind::BrowserEvidenceUnavailable,
            Error::BrowserInspectionUnavailable { .. } => ErrorKind::BrowserInspectionUnavailable,
            Error::InvalidContract { .. } => ErrorKind::InvalidContract,
            Error::ReadRequestOnly => ErrorKind::ReadRequestOnly,
            Error::AgentHandoffOneCommand => ErrorKind::AgentHandoffOneCommand,
            Error::AgentHandoffUsed => ErrorKind::AgentHandoffUsed,
            Error::TaskControlPending { .. } => ErrorKind::TaskControlPending,
            Error::TaskRunningElsewhere => ErrorKind::TaskRunningElsewhere,
            Error::Carried { kind, .. } => *kind,
            Error::ConsentRequired => ErrorKind::ConsentRequired,
            Error::ApplicationNotAllowed => ErrorKind::ApplicationNotAllowed,
            Error::ComputerAccessTimeout => ErrorKind::ComputerAccessTimeout,
            Error::ComputerContractUnsupported { .. } => ErrorKind::ComputerContractUnsupported,
            Error::ObservationDenied => ErrorKind::ObservationDenied,
            Error::ControlDenied => ErrorKind::ControlDenied,
            Error::ComputerBusy => ErrorKind::ComputerBusy,
            Error::ComputerToolFailed { .. } => ErrorKind::ComputerToolFailed,
            Error::ComputerNotAllowed => ErrorKind::ComputerNotAllowed,
            Error::Internal { .. } => ErrorKind::Internal,
        }
    }

    /// This error's row of [`ERROR_TABLE`].
    pub fn row(&self) -> &'static ErrorRow {
        self.kind().row()
    }

    /// The stable error code, e.g. `"JEV_INVALID_CONFIGURATION"`: always upper snake case.
    pub fn code(&self) -> &'static str {
        self.row().code
    }

    /// The HTTP status a host serving the documented HTTP contracts should answer with.
    pub fn http_status(&self) -> u16 {
        self.row().http_status
    }

    /// The family the error belongs to (selects the Python exception class).
    pub fn family(&self) -> ErrorFamily {
        self.row().family
    }

    /// Whether the same call may succeed when tried again later (see [`ErrorRow::retryable`]).
    pub fn retryable(&self) -> bool {
        self.row().retryable
    }

    /// The seed's lower-case worker code (R-DEV-FAIL: `timed_out`, `tab_unavailable`,
    /// `javascript_error`, `execution_failed`) this error travels as in a device result's
    /// `errorCode`; `None` for errors that are not worker failures. [`Error::code`] stays upper
    /// snake case (R-ERR-1).
    ///
    /// ```
    /// let err = jevgate::Error::TabUnavailable;
    /// assert_eq!(err.code(), "TAB_UNAVAILABLE");
    /// assert_eq!(err.worker_code(), Some("tab_unavailable"));
    /// ```
    pub fn worker_code(&self) -> Option<&'static str> {
        self.row().worker_code
    }

    /// The JSON path of the offending value, for configuration errors.
    pub fn path(&self) -> Option<&str> {
        match self {
            Error::InvalidConfiguration { path, .. } | Error::InvalidRequest { path, .. } => {
                Some(path)
            }
            _ => None,
        }
    }

    /// `isolatedAvailable` of a `BROWSER_CONTEXT_BUSY` error (R-PROF-2): whether the call may
    /// be retried in isolated mode; `None` for every other error.
    ///
    /// ```
    /// let err = jevgate::Error::BrowserContextBusy { isolated_available: true };
    /// assert_eq!(err.isolated_available(), Some(true));
    /// assert_eq!(jevgate::Error::DeviceOffline.isolated_available(), None);
    /// ```
    pub fn isolated_available(&self) -> Option<bool> {
        match self {
            Error::BrowserContextBusy { isolated_available } => Some(*isolated_available),
            _ => None,
        }
    }

    /// The fixed `validationReason` code of a malformed provider response.
    pub fn validation_reason(&self) -> Option<&'static str> {
        match self {
            Error::MalformedResponse { reason, .. } => Some(reason.as_str()),
            _ => None,
        }
    }

    /// The cause of a `STALE_OBSERVATION`, when this is one (R-BRW-STALE).
    ///
    /// ```
    /// use jevgate::browser::StaleCause;
    /// let err = jevgate::Error::StaleObservation { cause: StaleCause::TargetObscured };
    /// assert_eq!(err.stale_cause(), Some(StaleCause::TargetObscured));
    /// assert_eq!(err.to_string(), "stale observation: TARGET_OBSCURED");
    /// ```
    pub fn stale_cause(&self) -> Option<crate::reasons::StaleCause> {
        match self {
            Error::StaleObservation { cause } => Some(*cause),
            _ => None,
        }
    }

    /// How long the provider asked the caller to wait before retrying, when it said so.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_info().and_then(|r| r.retry_after)
    }

    /// The retry and reset metadata of a rate-limit or quota error (R-ERR-2), when the provider
    /// (or the local ledger) supplied any.
    pub fn retry_info(&self) -> Option<&RetryInfo> {
        match self {
            Error::RateLimited { retry, .. } | Error::QuotaExceeded { retry } => Some(retry),
            _ => None,
        }
    }

    /// What is wrong with a JSON document serde_json could not read, in jevgate's own words:
    /// the one classification of serde_json errors that the core, C and Python share (never
    /// serde's message, which can quote the input; R-ERR-2).
    ///
    /// ```
    /// let e = serde_json::from_str::<Vec<u8>>("[1,").unwrap_err();
    /// assert_eq!(jevgate::Error::json_problem(&e), "truncated JSON");
    /// let e = serde_json::from_str::<Vec<u8>>("nope").unwrap_err();
    /// assert_eq!(jevgate::Error::json_problem(&e), "not JSON");
    /// let e = serde_json::from_str::<Vec<u8>>("{}").unwrap_err();
    /// assert_eq!(jevgate::Error::json_problem(&e), "wrong or unknown members");
    /// let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    /// let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
    /// assert_eq!(jevgate::Error::json_problem(&e), "nested too deeply");
    /// ```
    pub fn json_problem(e: &serde_json::Error) -> &'static str {
        use serde_json::error::Category;
        match e.classify() {
            Category::Io => "unreadable",
            // serde_json files its nesting limit (128) under syntax; the document may be valid
            // JSON, so it is named for what it is. serde's own text is read, never echoed.
            Category::Syntax if e.to_string().starts_with("recursion limit exceeded") => {
                "nested too deeply"
            }
            Category::Syntax => "not JSON",
            Category::Eof => "truncated JSON",
            Category::Data => "wrong or unknown members",
        }
    }

    /// `INVALID_ARGUMENT` for a JSON argument `name` that is not the `expected` shape, with
    /// [`Error::json_problem`] as the cause: how C and Python report the same bad JSON alike.
    ///
    /// ```
    /// let e = serde_json::from_str::<u8>("[]").unwrap_err();
    /// let err = jevgate::Error::invalid_json("call_json", "a number", &e);
    /// assert_eq!(err.code(), "INVALID_ARGUMENT");
    /// assert_eq!(err.to_string(), "invalid argument `call_json`: must be a number (wrong or unknown members)");
    /// ```
    pub fn invalid_json(name: &'static str, expected: &str, e: &serde_json::Error) -> Error {
        Error::InvalidArgument {
            name,
            reason: format!("must be {expected} ({})", Error::json_problem(e)),
        }
    }

    pub(crate) fn config(path: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::InvalidConfiguration {
            path: path.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn store_io(op: &str, err: impl std::fmt::Display) -> Error {
        Error::StoreIo {
            reason: format!("{op}: {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-ERR-1: every variant has a stable code, a status and a family.
    #[test]
    fn codes_statuses_and_families_are_stable() {
        let cases: Vec<(Error, &str, u16, ErrorFamily)> = vec![
            (
                Error::config("gateway.jev.model", "required"),
                "JEV_INVALID_CONFIGURATION",
                400,
                ErrorFamily::Config,
            ),
            (
                Error::MissingCredentials { reason: "x".into() },
                "JEV_MISSING_CREDENTIALS",
                500,
                ErrorFamily::Config,
            ),
            (
                Error::StoreCorrupt { reason: "x".into() },
                "STORE_CORRUPT",
                500,
                ErrorFamily::Store,
            ),
            (
                Error::StoreVersionUnsupported {
                    found: 9,
                    supported: 1,
                },
                "STORE_VERSION_UNSUPPORTED",
                500,
                ErrorFamily::Store,
            ),
            (Error::StoreLocked, "STORE_LOCKED", 409, ErrorFamily::Store),
            (
                Error::store_io("open", "denied"),
                "STORE_IO",
                500,
                ErrorFamily::Store,
            ),
            (
                Error::StoreUnavailable {
                    reason: "connect: timed out".into(),
                },
                "STORE_UNAVAILABLE",
                503,
                ErrorFamily::Store,
            ),
            (
                Error::InvalidArgument {
                    name: "json",
                    reason: "NULL".into(),
                },
                "INVALID_ARGUMENT",
                400,
                ErrorFamily::Argument,
            ),
            (
                Error::GatewayClosed,
                "GATEWAY_CLOSED",
                409,
                ErrorFamily::Gateway,
            ),
            (
                Error::DeviceNotPaired,
                "DEVICE_NOT_PAIRED",
                404,
                ErrorFamily::Device,
            ),
            (
                Error::DeviceSelectionRequired,
                "DEVICE_SELECTION_REQUIRED",
                400,
                ErrorFamily::Device,
            ),
            (
                Error::DeviceOffline,
                "DEVICE_OFFLINE",
                409,
                ErrorFamily::Device,
            ),
            (
                Error::DeviceCapabilityMismatch,
                "DEVICE_CAPABILITY_MISMATCH",
                409,
                ErrorFamily::Device,
            ),
            (
                Error::UnknownTool { tool: "x".into() },
                "UNKNOWN_TOOL",
                400,
                ErrorFamily::Device,
            ),
            (
                Error::InvalidToolArguments {
                    tool: "browser_find",
                    reason: "x".into(),
                },
                "INVALID_TOOL_ARGUMENTS",
                400,
                ErrorFamily::Device,
            ),
            (
                Error::ArtifactNotFound,
                "ARTIFACT_NOT_FOUND",
                404,
                ErrorFamily::Device,
            ),
            (
                Error::ChannelIo { reason: "x".into() },
                "DEVICE_CHANNEL_IO",
                500,
                ErrorFamily::Device,
            ),
            (
                Error::Internal { reason: "x".into() },
                "INTERNAL",
                500,
                ErrorFamily::Internal,
            ),
            (
                Error::OrchestrationDisabled {
                    reason: "features.browserTasks is off",
                },
                "ORCHESTRATION_DISABLED",
                409,
                ErrorFamily::Task,
            ),
            (
                Error::ExecutionDenied {
                    reason: "the agent is not in allowedAgentIds",
                },
                "EXECUTION_DENIED",
                403,
                ErrorFamily::Access,
            ),
            (
                Error::BrowserEvidenceUnavailable,
                "BROWSER_EVIDENCE_UNAVAILABLE",
                403,
                ErrorFamily::Access,
            ),
            (
                Error::BrowserInspectionUnavailable {
                    reason: "the task's local browser is gone",
                },
                "BROWSER_INSPECTION_UNAVAILABLE",
                503,
                ErrorFamily::Browser,
            ),
            (
                Error::InvalidContract {
                    reason: "the verifier must answer a boolean",
                },
                "INVALID_CONTRACT",
                502,
                ErrorFamily::Task,
            ),
            (
                Error::ReadRequestOnly,
                "READ_REQUEST_ONLY",
                409,
                ErrorFamily::Task,
            ),
            (
                Error::AgentHandoffOneCommand,
                "AGENT_HANDOFF_ONE_COMMAND",
                409,
                ErrorFamily::Task,
            ),
            (
                Error::AgentHandoffUsed,
                "AGENT_HANDOFF_USED",
                409,
                ErrorFamily::Task,
            ),
            (
                Error::TaskControlPending { reason: "x" },
                "TASK_CONTROL_PENDING",
                504,
                ErrorFamily::Task,
            ),
            (
                Error::TaskRunningElsewhere,
                "TASK_RUNNING_ELSEWHERE",
                409,
                ErrorFamily::Task,
            ),
            (
                Error::JevAccessDenied { reason: "x".into() },
                "JEV_ACCESS_DENIED",
                403,
                ErrorFamily::Jev,
            ),
            (
                Error::AuthenticationFailed,
                "JEV_AUTHENTICATION_FAILED",
                401,
                ErrorFamily::Jev,
            ),
            (
                Error::QuotaExceeded {
                    retry: RetryInfo::default(),
                },
                "JEV_QUOTA_EXCEEDED",
                402,
                ErrorFamily::Jev,
            ),
            (
                Error::UnsupportedModel,
                "JEV_UNSUPPORTED_MODEL",
                404,
                ErrorFamily::Jev,
            ),
            (
                Error::RequestConflict { reason: "x".into() },
                "JEV_REQUEST_CONFLICT",
                409,
                ErrorFamily::Jev,
            ),
            (
                Error::RateLimited {
                    reason: "x".into(),
                    retry: RetryInfo::default(),
                },
                "JEV_RATE_LIMITED",
                429,
                ErrorFamily::Jev,
            ),
            (Error::QueueFull, "JEV_QUEUE_FULL", 429, ErrorFamily::Jev),
            (
                Error::ProviderFailure { reason: "x".into() },
                "JEV_PROVIDER_FAILURE",
                502,
                ErrorFamily::Jev,
            ),
            (
                Error::Timeout { timeout_ms: 5 },
                "JEV_TIMEOUT",
                504,
                ErrorFamily::Jev,
            ),
            (Error::Cancelled, "JEV_CANCELLED", 499, ErrorFamily::Jev),
        ];
        for (err, code, status, family) in cases {
            assert_eq!(err.code(), code);
            assert_eq!(err.http_status(), status, "{code}");
            assert_eq!(err.family(), family, "{code}");
            assert!(!err.to_string().is_empty());
        }
    }

    // R-ERR-2: retry metadata is typed and reachable through retry_after().
    #[test]
    fn rate_limit_keeps_retry_after_as_a_typed_field() {
        let err = Error::RateLimited {
            reason: "provider".into(),
            retry: RetryInfo {
                retry_after: Some(Duration::from_secs(7)),
                reset_at: None,
            },
        };
        assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(Error::QueueFull.retry_after(), None);
    }

    // R-ERR-1 for the browser family: codes spelled as the seeds spell them.
    #[test]
    fn browser_codes_statuses_and_family() {
        let cases: Vec<(Error, &str, u16)> = vec![
            (
                Error::BrowserUnavailable { reason: "x".into() },
                "BROWSER_UNAVAILABLE",
                500,
            ),
            (
                Error::StaleObservation {
                    cause: crate::reasons::StaleCause::NavigationPending,
                },
                "STALE_OBSERVATION",
                409,
            ),
            (Error::HistoryUnavailable, "HISTORY_UNAVAILABLE", 409),
            (Error::ScrollLimit, "SCROLL_LIMIT", 409),
            (Error::FocusRequired, "FOCUS_REQUIRED", 409),
            (
                Error::DialogOpen {
                    kind: "alert".into(),
                },
                "DIALOG_OPEN",
                409,
            ),
            (Error::NoDialog, "NO_DIALOG", 409),
            (
                Error::TargetNotFound { reason: "x".into() },
                "TARGET_NOT_FOUND",
                400,
            ),
            (
                Error::NavigationFailed { reason: "x".into() },
                "NAVIGATION_FAILED",
                400,
            ),
            (
                Error::BrowserTimeout {
                    timeout: Duration::from_secs(1),
                },
                "BROWSER_TIMEOUT",
                500,
            ),
            (Error::TabUnavailable, "TAB_UNAVAILABLE", 500),
            (
                Error::JavascriptError { reason: "x".into() },
                "JAVASCRIPT_ERROR",
                500,
            ),
            (
                Error::ExecutionFailed { reason: "x".into() },
                "EXECUTION_FAILED",
                500,
            ),
            (Error::TabLeaseHeld, "TAB_LEASE_HELD", 409),
            (Error::TabLimit { limit: 10 }, "TAB_LIMIT", 409),
            (
                Error::OutcomeUnknown { reason: "x".into() },
                "OUTCOME_UNKNOWN",
                502,
            ),
        ];
        for (err, code, status) in cases {
            assert_eq!(err.code(), code);
            assert_eq!(err.http_status(), status, "{code}");
            assert_eq!(err.family(), ErrorFamily::Browser, "{code}");
            assert_eq!(err.family().as_str(), "browser");
        }
        // R-ERR-1: the seed's lower-case worker codes are a column, not a second spelling.
        let workers: Vec<(Error, &str)> = vec![
            (
                Error::BrowserTimeout {
                    timeout: Duration::from_secs(1),
                },
                "timed_out",
            ),
            (Error::TabUnavailable, "tab_unavailable"),
            (
                Error::JavascriptError { reason: "x".into() },
                "javascript_error",
            ),
            (
                Error::ExecutionFailed { reason: "x".into() },
                "execution_failed",
            ),
        ];
        for (err, worker) in workers {
            assert_eq!(err.worker_code(), Some(worker));
        }
        assert_eq!(
            Error::TargetNotFound { reason: "x".into() }.worker_code(),
            None
        );
    }

    // R-ERR-1: one row per kind, in kind order; codes unique and upper snake case; statuses
    // from the allowed set; families consistent with the code's prefix; worker codes only on
    // browser rows and lower-case.
    #[test]
    fn every_row_of_the_error_table_is_well_formed() {
        assert_eq!(ERROR_TABLE.len(), ErrorKind::ALL.len());
        let mut seen = std::collections::HashSet::new();
        for (i, (row, kind)) in ERROR_TABLE.iter().zip(ErrorKind::ALL).enumerate() {
            assert_eq!(row.kind, *kind, "row {i}");
            assert_eq!(*kind as usize, i, "{kind:?}");
            assert_eq!(kind.row(), row);
            assert!(seen.insert(row.code), "duplicate code {}", row.code);
            assert_eq!(ErrorKind::from_code(row.code), Some(*kind));
            let c = row.code;
            assert!(
                !c.is_empty()
                    && !c.starts_with('_')
                    && !c.ends_with('_')
                    && !c.contains("__")
                    && c.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                "{c} is not upper snake case"
            );
            assert!(
                [400, 401, 402, 403, 404, 409, 410, 429, 499, 500, 502, 503, 504]
                    .contains(&row.http_status),
                "{c}: status {}",
                row.http_status
            );
            let family_ok = match row.family {
                ErrorFamily::Config => {
                    ["JEV_INVALID_CONFIGURATION", "JEV_MISSING_CREDENTIALS"].contains(&c)
                }
                ErrorFamily::Store => c.starts_with("STORE_"),
                ErrorFamily::Argument => ["INVALID_ARGUMENT", "INVALID_INPUT"].contains(&c),
                ErrorFamily::Gateway => c.starts_with("GATEWAY_"),
                ErrorFamily::Jev => c.starts_with("JEV_"),
                ErrorFamily::Grammar => c.starts_with("NAVIGATION_"),
                ErrorFamily::Lease => c.starts_with("DEVICE_CONTROL_") || c.starts_with("BROWSER_"),
                ErrorFamily::Access => [
                    "ACCESS_DENIED",
                    "EXECUTION_DENIED",
                    "BROWSER_EVIDENCE_UNAVAILABLE",
                ]
                .contains(&c),
                ErrorFamily::Device => {
                    c.starts_with("DEVICE_")
                        || c.ends_with("_TOOL")
                        || c.contains("TOOL_")
                        || c == "ARTIFACT_NOT_FOUND"
                        // The computer helper's codes (issue 25, seed 003).
                        || c.starts_with("COMPUTER_")
                        || [
                            "CONSENT_REQUIRED",
                            "APPLICATION_NOT_ALLOWED",
                            "OBSERVATION_DENIED",
                            "CONTROL_DENIED",
                        ]
                        .contains(&c)
                }
                ErrorFamily::Browser => {
                    !c.starts_with("JEV_") && !c.starts_with("STORE_") && !c.starts_with("DEVICE_")
                }
                ErrorFamily::Task => [
                    "AUTOMATION_SESSION_CLOSED",
                    "COMMAND_QUEUE_FULL",
                    "ORCHESTRATION_DISABLED",
                    "AUTOMATION_SESSION_EXISTS",
                    "TASK_QUEUE_FULL",
                    "REVISION_CONFLICT",
                    "STATE_CONFLICT",
                    "IDEMPOTENCY_CONFLICT",
                    "NOTHING_TO_RESUME",
                    "INVALID_CONTRACT",
                    "READ_REQUEST_ONLY",
                    "AGENT_HANDOFF_ONE_COMMAND",
                    "AGENT_HANDOFF_USED",
                    "TASK_CONTROL_PENDING",
                    "TASK_RUNNING_ELSEWHERE",
                ]
                .contains(&c),
                ErrorFamily::Internal => c == "INTERNAL",
            };
            assert!(family_ok, "{c} in family {:?}", row.family);
            if let Some(w) = row.worker_code {
                assert_eq!(row.family, ErrorFamily::Browser, "{c}");
                assert!(
                    w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{w}"
                );
                // (that it is one of device::WORKER_CODES is checked in device/executor.rs:
                // error sits below device)
            }
        }
        // Every family has at least one row.
        for family in [
            ErrorFamily::Config,
            ErrorFamily::Store,
            ErrorFamily::Argument,
            ErrorFamily::Gateway,
            ErrorFamily::Jev,
            ErrorFamily::Grammar,
            ErrorFamily::Lease,
            ErrorFamily::Access,
            ErrorFamily::Device,
            ErrorFamily::Browser,
            ErrorFamily::Task,
            ErrorFamily::Internal,
        ] {
            assert!(ERROR_TABLE.iter().any(|r| r.family == family), "{family:?}");
        }
    }

    // R-TSK-RCPT: an unknown outcome is its own kind, never retryable, and not a worker code
    // (a worker cannot report it: only the gateway knows a command was sent and then lost).
    #[test]
    fn r_tsk_rcpt_outcome_unknown_is_its_own_never_retryable_kind() {
        let err = Error::OutcomeUnknown {
            reason: "the browser disconnected after the command was sent".into(),
        };
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown);
        assert_eq!(
            ErrorKind::from_code("OUTCOME_UNKNOWN"),
            Some(ErrorKind::OutcomeUnknown)
        );
        assert!(!err.retryable());
        assert_eq!(err.worker_code(), None);
        assert_eq!(err.stale_cause(), None);
        assert_eq!(
            err.to_string(),
            "outcome unknown: the browser disconnected after the command was sent; it may have taken effect and was not sent again"
        );
    }

    #[test]
    fn config_error_message_names_the_path() {
        let err = Error::config("gateway.jev.apiKeyEnv", "refused name");
        assert_eq!(err.path(), Some("gateway.jev.apiKeyEnv"));
        assert_eq!(
            err.to_string(),
            "invalid configuration at gateway.jev.apiKeyEnv: refused name"
        );
        let root = Error::config("", "not JSON");
        assert_eq!(
            root.to_string(),
            "invalid configuration at the document root: not JSON"
        );
    }
}

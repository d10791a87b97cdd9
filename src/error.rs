//! The one error type of jevgate (R-ERR).
//!
//! Every failure a host can see is a [`Error`] with a stable [`Error::code`] string (the codes of
//! the product documents, spelled as there), an [`Error::http_status`] so a host can serve the
//! documented HTTP contracts by mapping errors, and a [`Error::family`] that the bindings use to
//! pick an exception class.
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
    /// The caller is not allowed to do this (wrong owner, delegated credential).
    Access,
    /// Paired devices, the device-worker channel and the browser tools.
    Device,
    /// A browser backend: the browser, its pages and the actions on them.
    Browser,
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
    /// owner or with a delegated credential (R-LEASE-7).
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

    /// A bug in jevgate: a panic caught at an FFI boundary or a broken internal invariant.
    #[error("internal error: {reason}")]
    Internal {
        /// What went wrong.
        reason: String,
    },
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

impl Error {
    /// The stable error code, e.g. `"JEV_INVALID_CONFIGURATION"`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidConfiguration { .. } => "JEV_INVALID_CONFIGURATION",
            Error::MissingCredentials { .. } => "JEV_MISSING_CREDENTIALS",
            Error::StoreCorrupt { .. } => "STORE_CORRUPT",
            Error::StoreVersionUnsupported { .. } => "STORE_VERSION_UNSUPPORTED",
            Error::StoreLocked => "STORE_LOCKED",
            Error::StoreIo { .. } => "STORE_IO",
            Error::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Error::GatewayClosed => "GATEWAY_CLOSED",
            Error::NavigationUnresolved { .. } => "NAVIGATION_UNRESOLVED",
            Error::InvalidRequest { .. } => "JEV_INVALID_REQUEST",
            Error::MalformedResponse { .. } => "JEV_MALFORMED_RESPONSE",
            Error::DeviceControlElsewhere => "DEVICE_CONTROL_ELSEWHERE",
            Error::DeviceControlRevoked => "DEVICE_CONTROL_REVOKED",
            Error::DeviceControlNotHeld => "DEVICE_CONTROL_NOT_HELD",
            Error::AccessDenied { .. } => "ACCESS_DENIED",
            Error::BrowserContextBusy { .. } => "browser_context_busy",
            Error::BrowserAuthenticatedUnavailable => "browser_authenticated_unavailable",
            Error::DeviceNotPaired => "DEVICE_NOT_PAIRED",
            Error::DeviceSelectionRequired => "DEVICE_SELECTION_REQUIRED",
            Error::DeviceOffline => "DEVICE_OFFLINE",
            Error::DeviceCapabilityMismatch => "DEVICE_CAPABILITY_MISMATCH",
            Error::UnknownTool { .. } => "UNKNOWN_TOOL",
            Error::InvalidToolArguments { .. } => "INVALID_TOOL_ARGUMENTS",
            Error::ArtifactNotFound => "ARTIFACT_NOT_FOUND",
            Error::ChannelIo { .. } => "DEVICE_CHANNEL_IO",
            Error::BrowserUnavailable { .. } => "BROWSER_UNAVAILABLE",
            Error::StaleObservation { .. } => "STALE_OBSERVATION",
            Error::HistoryUnavailable => "HISTORY_UNAVAILABLE",
            Error::ScrollLimit => "SCROLL_LIMIT",
            Error::FocusRequired => "FOCUS_REQUIRED",
            Error::DialogOpen { .. } => "DIALOG_OPEN",
            Error::NoDialog => "NO_DIALOG",
            Error::TargetNotFound { .. } => "TARGET_NOT_FOUND",
            Error::NavigationFailed { .. } => "NAVIGATION_FAILED",
            Error::BrowserTimeout { .. } => "timed_out",
            Error::TabUnavailable => "tab_unavailable",
            Error::JavascriptError { .. } => "javascript_error",
            Error::ExecutionFailed { .. } => "execution_failed",
            Error::TabLeaseHeld => "TAB_LEASE_HELD",
            Error::Internal { .. } => "INTERNAL",
            Error::JevAccessDenied { .. } => "JEV_ACCESS_DENIED",
            Error::AuthenticationFailed => "JEV_AUTHENTICATION_FAILED",
            Error::QuotaExceeded { .. } => "JEV_QUOTA_EXCEEDED",
            Error::UnsupportedModel => "JEV_UNSUPPORTED_MODEL",
            Error::RequestConflict { .. } => "JEV_REQUEST_CONFLICT",
            Error::RateLimited { .. } => "JEV_RATE_LIMITED",
            Error::QueueFull => "JEV_QUEUE_FULL",
            Error::ProviderFailure { .. } => "JEV_PROVIDER_FAILURE",
            Error::Timeout { .. } => "JEV_TIMEOUT",
            Error::Cancelled => "JEV_CANCELLED",
        }
    }

    /// The HTTP status a host serving the documented HTTP contracts should answer with.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::InvalidConfiguration { .. }
            | Error::InvalidArgument { .. }
            | Error::NavigationUnresolved { .. }
            | Error::InvalidRequest { .. }
            | Error::DeviceSelectionRequired
            | Error::UnknownTool { .. }
            | Error::InvalidToolArguments { .. } => 400,
            Error::DeviceNotPaired | Error::ArtifactNotFound => 404,
            Error::DeviceOffline | Error::DeviceCapabilityMismatch => 409,
            Error::MalformedResponse { .. } => 502,
            Error::MissingCredentials { .. } => 500,
            Error::StoreLocked
            | Error::GatewayClosed
            | Error::DeviceControlElsewhere
            | Error::DeviceControlRevoked
            | Error::DeviceControlNotHeld
            | Error::BrowserContextBusy { .. }
            | Error::StaleObservation { .. }
            | Error::HistoryUnavailable
            | Error::ScrollLimit
            | Error::FocusRequired
            | Error::DialogOpen { .. }
            | Error::NoDialog
            | Error::TabLeaseHeld => 409,
            Error::TargetNotFound { .. } | Error::NavigationFailed { .. } => 400,
            Error::BrowserTimeout { .. }
            | Error::BrowserUnavailable { .. }
            | Error::TabUnavailable
            | Error::JavascriptError { .. }
            | Error::ExecutionFailed { .. } => 500,
            Error::AccessDenied { .. } | Error::BrowserAuthenticatedUnavailable => 403,
            Error::StoreCorrupt { .. }
            | Error::StoreVersionUnsupported { .. }
            | Error::StoreIo { .. }
            | Error::ChannelIo { .. }
            | Error::Internal { .. } => 500,
            Error::JevAccessDenied { .. } => 403,
            Error::AuthenticationFailed => 401,
            Error::QuotaExceeded { .. } => 402,
            Error::UnsupportedModel => 404,
            Error::RequestConflict { .. } => 409,
            Error::RateLimited { .. } | Error::QueueFull => 429,
            Error::ProviderFailure { .. } => 502,
            Error::Timeout { .. } => 504,
            Error::Cancelled => 499,
        }
    }

    /// The family the error belongs to (selects the Python exception class).
    pub fn family(&self) -> ErrorFamily {
        match self {
            Error::InvalidConfiguration { .. } | Error::MissingCredentials { .. } => {
                ErrorFamily::Config
            }
            Error::StoreCorrupt { .. }
            | Error::StoreVersionUnsupported { .. }
            | Error::StoreLocked
            | Error::StoreIo { .. } => ErrorFamily::Store,
            Error::InvalidArgument { .. } => ErrorFamily::Argument,
            Error::GatewayClosed => ErrorFamily::Gateway,
            Error::NavigationUnresolved { .. } => ErrorFamily::Grammar,
            Error::InvalidRequest { .. }
            | Error::MalformedResponse { .. }
            | Error::JevAccessDenied { .. }
            | Error::AuthenticationFailed
            | Error::QuotaExceeded { .. }
            | Error::UnsupportedModel
            | Error::RequestConflict { .. }
            | Error::RateLimited { .. }
            | Error::QueueFull
            | Error::ProviderFailure { .. }
            | Error::Timeout { .. }
            | Error::Cancelled => ErrorFamily::Jev,
            Error::DeviceControlElsewhere
            | Error::DeviceControlRevoked
            | Error::DeviceControlNotHeld
            | Error::BrowserContextBusy { .. }
            | Error::BrowserAuthenticatedUnavailable => ErrorFamily::Lease,
            Error::AccessDenied { .. } => ErrorFamily::Access,
            Error::DeviceNotPaired
            | Error::DeviceSelectionRequired
            | Error::DeviceOffline
            | Error::DeviceCapabilityMismatch
            | Error::UnknownTool { .. }
            | Error::InvalidToolArguments { .. }
            | Error::ArtifactNotFound
            | Error::ChannelIo { .. } => ErrorFamily::Device,
            Error::BrowserUnavailable { .. }
            | Error::StaleObservation { .. }
            | Error::HistoryUnavailable
            | Error::ScrollLimit
            | Error::FocusRequired
            | Error::DialogOpen { .. }
            | Error::NoDialog
            | Error::TargetNotFound { .. }
            | Error::NavigationFailed { .. }
            | Error::BrowserTimeout { .. }
            | Error::TabUnavailable
            | Error::JavascriptError { .. }
            | Error::ExecutionFailed { .. }
            | Error::TabLeaseHeld => ErrorFamily::Browser,
            Error::Internal { .. } => ErrorFamily::Internal,
        }
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

    /// `isolatedAvailable` of a `browser_context_busy` error (R-PROF-2): whether the call may
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
                "timed_out",
                500,
            ),
            (Error::TabUnavailable, "tab_unavailable", 500),
            (
                Error::JavascriptError { reason: "x".into() },
                "javascript_error",
                500,
            ),
            (
                Error::ExecutionFailed { reason: "x".into() },
                "execution_failed",
                500,
            ),
            (Error::TabLeaseHeld, "TAB_LEASE_HELD", 409),
        ];
        for (err, code, status) in cases {
            assert_eq!(err.code(), code);
            assert_eq!(err.http_status(), status, "{code}");
            assert_eq!(err.family(), ErrorFamily::Browser, "{code}");
            assert_eq!(err.family().as_str(), "browser");
        }
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

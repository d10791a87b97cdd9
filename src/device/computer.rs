//! The gateway's side of the computer helper contract, version 1 (issue 25; seed 003 "Computer
//! helper contract"): a paired device of capability `computer` (`jevgate-computer`) driven over
//! the same channel as a browser, through four primitives ([`PRIMITIVES`]): `observe`,
//! `computer_action`, `operation_status` and `computer_access`.
//!
//! It owns:
//! - the observation's reading ([`validate_observation`], pure): `contractVersion` (absent = 1;
//!   another major version is `COMPUTER_CONTRACT_UNSUPPORTED` before any action), bounded sizes
//!   (controls, names, values, text: what is over a bound is cut and counted in `omitted`),
//!   forward compatibility (unknown values of `supportedActions`, of a control's `actions` and
//!   of `capabilities` are dropped, never a reason to reject the observation), and a sensitive
//!   field's value dropped even when a helper sent one;
//! - the action a gateway sends ([`ComputerCommand`]: `press`, `set_text`, `focus`, `key`, each
//!   with its `operation_id`), checked before anything is sent;
//! - the helper's operation receipt ([`ReceiptRead::from_answer`], pure) and the pre-dispatch
//!   rejection rule ([`pre_dispatch_verdict`], pure): after `DEVICE_OFFLINE` reported by the
//!   helper's side, `CONSENT_REQUIRED`, `OBSERVATION_DENIED`, `CONTROL_DENIED`,
//!   `APPLICATION_NOT_ALLOWED` or `COMPUTER_BUSY`, the receipt decides: `not_found` = not
//!   executed with that cause, a recorded receipt is trusted, an unreadable one leaves only
//!   `DEVICE_OFFLINE` unknown; a failure without a cause code stays unknown;
//! - a helper's refusal read back as a typed error (`helper_error`): the code leading its
//!   message, never its text (R-ERR-2);
//! - [`ComputerDevice`], the handle a host (and later the task controller) drives one paired
//!   computer with for one conversation, under the device's control lease, with JSON in and out
//!   for the C and Python surfaces;
//! - the connection status (seed 003 "Computer connection status"): the pure rule
//!   [`connection_status`] over what one check saw ([`read_access_check`]), the check itself
//!   ([`ComputerDevice::check_connection`]: `computer_access` with `{"check": true}`, which
//!   shows the person nothing), and the revocation a disconnect leaves: while an open task
//!   session watches a device (`watch.rs`), a connection that ended — the device went
//!   offline, or came back on another connection — revokes its access. Nothing more is sent
//!   to that device until its helper confirms the revocation (`{"revoke": true}` answered
//!   `revoked`: the person's approval withdrawn there, so only a new approval grants access
//!   again); no other answer acknowledges it. A revocation never closes a session and never
//!   re-sends an action.
//!
//! The gateway's own `DEVICE_OFFLINE` (the command was never written: the helper was offline
//! before it was sent) and the claim step's refusals mean nothing was sent: no receipt is asked.
//! This module must never retry or re-send an action, never log names, values, text or typed
//! text, and never import the browser or task layers.

use super::executor::WorkerFailure;
use super::primitive::{PrimitiveSender, To};
use super::registry::Capability;
use super::watch::ConnectionWatch;
use crate::lease::Leases;
use crate::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The helper contract version this gateway speaks.
pub const CONTRACT_VERSION: u64 = 1;

/// The primitives a computer helper serves.
pub const PRIMITIVES: &[&str] = &[
    "observe",
    "computer_action",
    "operation_status",
    "computer_access",
];

/// The action kinds of contract version 1 (also what `supportedActions` may name).
pub const ACTION_KINDS: &[&str] = &["press", "set_text", "focus", "key"];
/// The standard commands a helper may offer (`capabilities.standardCommands`).
pub const STANDARD_COMMANDS: &[&str] = &["tab:new", "tab:close", "app:quit", "address:focus"];
/// The keys a helper may offer as discrete key actions (`capabilities.keys`).
pub const CAPABILITY_KEYS: &[&str] = &["backspace"];
/// The causes after which the gateway reads the helper's receipt (seed 003).
pub const PRE_DISPATCH_CAUSES: &[ErrorKind] = &[
    ErrorKind::DeviceOffline,
    ErrorKind::ConsentRequired,
    ErrorKind::ObservationDenied,
    ErrorKind::ControlDenied,
    ErrorKind::ApplicationNotAllowed,
    ErrorKind::ComputerBusy,
];

/// Most controls kept from one observation.
pub const MAX_CONTROLS: usize = 400;
/// Longest ref, role or name kept, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Longest value kept, in characters.
pub const MAX_VALUE_CHARS: usize = 2_000;
/// Most static text kept, in characters (all lines).
pub const MAX_TEXT_CHARS: usize = 8_000;
/// Most static text lines kept.
pub const MAX_TEXT_LINES: usize = 200;
/// Most states or actions kept of one control.
pub const MAX_CONTROL_LIST: usize = 16;
/// Longest text a `set_text` sends, in characters (the helper's request line is 32 KB).
pub const MAX_SET_TEXT_CHARS: usize = 4_000;
/// Longest `operation_id`, in characters.
pub const MAX_OPERATION_ID_CHARS: usize = 128;
/// How long an access request waits for the person on the device (seed 003).
pub const ACCESS_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How often the gateway asks again while an access request is pending.
pub const ACCESS_POLL: Duration = Duration::from_millis(500);
/// How often the gateway checks a paired computer's connection and access while a task
/// session on it is open, idle included (seed 003 "Computer connection status").
pub const CONNECTION_CHECK: Duration = Duration::from_secs(5);
/// The longest one connection check waits for the helper's answer.
pub const CONNECTION_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A paired computer's connection as task activity shows it (`computerConnection`; seed 003
/// "Computer connection status").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputerConnection {
    /// Connected, with access granted by the person's approval.
    Connected,
    /// The helper is not connected.
    Disconnected,
    /// Connected without access: no valid approval (none, expired, refused, a request
    /// pending or timed out), or a revocation its helper has not confirmed yet.
    WaitingAccess,
    /// The connection could not be checked.
    Unknown,
}

impl ComputerConnection {
    /// The wire word (`connected`, `disconnected`, `waiting_access`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            ComputerConnection::Connected => "connected",
            ComputerConnection::Disconnected => "disconnected",
            ComputerConnection::WaitingAccess => "waiting_access",
            ComputerConnection::Unknown => "unknown",
        }
    }
}

/// The helper's access, as one connection check read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessAnswer {
    /// A valid approval.
    Granted,
    /// No valid approval (or a revocation not confirmed yet).
    NotGranted,
}

/// The connection status (pure): `unknown` when the check failed, else `disconnected` without
/// the channel, `connected` with access granted, `waiting_access` without it (reconnecting
/// without the person's approval is not ready), `unknown` without an access answer.
pub fn connection_status(
    channel_connected: bool,
    access: Option<AccessAnswer>,
    check_failed: bool,
) -> ComputerConnection {
    match (check_failed, channel_connected, access) {
        (true, _, _) => ComputerConnection::Unknown,
        (false, false, _) => ComputerConnection::Disconnected,
        (false, true, Some(AccessAnswer::Granted)) => ComputerConnection::Connected,
        (false, true, Some(AccessAnswer::NotGranted)) => ComputerConnection::WaitingAccess,
        (false, true, None) => ComputerConnection::Unknown,
    }
}

/// What one check's answer says (pure): whether the channel is connected, the access answer
/// and whether the check failed. `granted` / `waiting` answers and the consent refusals
/// (`CONSENT_REQUIRED`, `APPLICATION_NOT_ALLOWED`, `COMPUTER_ACCESS_TIMEOUT`) are access
/// answers; `DEVICE_OFFLINE` is a disconnected channel; anything else a failed check.
pub fn read_access_check(answer: &Result<Value>) -> (bool, Option<AccessAnswer>, bool) {
    match answer {
        Ok(v) => match v.get("state").and_then(Value::as_str) {
            Some("granted") => (true, Some(AccessAnswer::Granted), false),
            Some("waiting") => (true, Some(AccessAnswer::NotGranted), false),
            _ => (true, None, true),
        },
        Err(e) => match e.kind() {
            ErrorKind::DeviceOffline => (false, None, false),
            ErrorKind::ConsentRequired
            | ErrorKind::ApplicationNotAllowed
            | ErrorKind::ComputerAccessTimeout => (true, Some(AccessAnswer::NotGranted), false),
            _ => (true, None, true),
        },
    }
}

/// One control of a validated observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComputerControl {
    /// The ref to act on (valid for this observation).
    #[serde(rename = "ref")]
    pub reference: String,
    /// The accessibility role.
    pub role: String,
    /// The accessible name (bounded).
    pub name: String,
    /// Named states (`focused`, `editable`, `disabled`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    /// Contract actions it supports (`press`, `set_text`, `focus`); unknown ones dropped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// Its value (never a sensitive field's), bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A sensitive field (password role): its value is never read.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
    /// A menu-bar command's place: the names of the menus it is in (`Edit` for Edit → Copy,
    /// empty for a menu-bar title); `None` outside a menu bar (bounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub menu: Option<String>,
}

/// What a helper offers beyond the basic actions, unknown values dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputerCapabilities {
    /// Of [`STANDARD_COMMANDS`].
    pub standard_commands: Vec<String>,
    /// Of [`CAPABILITY_KEYS`].
    pub keys: Vec<String>,
}

/// A helper's observation as the gateway accepted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputerObservation {
    /// The helper's contract version (1 when it sent none).
    pub contract_version: u64,
    /// The front application's name.
    pub application: String,
    /// Its window title.
    pub window_title: String,
    /// Its controls, in the helper's order.
    pub controls: Vec<ComputerControl>,
    /// The focused control's ref, when it is one of `controls`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focused: Option<String>,
    /// Static text lines.
    pub text: Vec<String>,
    /// Of [`ACTION_KINDS`]: what the helper supports.
    pub supported_actions: Vec<String>,
    /// Standard commands and keys.
    pub capabilities: ComputerCapabilities,
    /// The standard command the helper echoed (`standardCommand`), of [`STANDARD_COMMANDS`]:
    /// the observation carries its control ([`standard_ref`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standard_command: Option<String>,
    /// Controls and text lines left out (by the helper's bounds or the gateway's).
    pub omitted: usize,
}

/// The ref of standard command `name`'s control (`app:quit` → `standard-app-quit`), `None` for
/// a name that is not one of [`STANDARD_COMMANDS`].
///
/// ```
/// use jevgate::device::computer::standard_ref;
/// assert_eq!(standard_ref("app:quit").as_deref(), Some("standard-app-quit"));
/// assert_eq!(standard_ref("warp:9"), None);
/// ```
pub fn standard_ref(name: &str) -> Option<String> {
    STANDARD_COMMANDS
        .contains(&name)
        .then(|| format!("standard-{}", name.replace(':', "-")))
}

impl ComputerObservation {
    /// The control `reference` names.
    pub fn control(&self, reference: &str) -> Option<&ComputerControl> {
        self.controls.iter().find(|c| c.reference == reference)
    }

    /// The controls whose name is exactly `name`.
    pub fn named(&self, name: &str) -> Vec<&ComputerControl> {
        self.controls.iter().filter(|c| c.name == name).collect()
    }

    /// The control of standard command `name`, when the helper echoed that command and sent
    /// its control (a pressable one); `None` otherwise (an older helper or relay dropped it).
    pub fn standard(&self, name: &str) -> Option<&ComputerControl> {
        if self.standard_command.as_deref() != Some(name) {
            return None;
        }
        let reference = standard_ref(name)?;
        self.control(&reference)
            .filter(|c| c.actions.iter().any(|a| a == "press"))
    }
}

fn bounded(s: &str, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s.to_string(), false),
    }
}

fn text_field(v: &Value, key: &str, max: usize) -> String {
    bounded(v.get(key).and_then(Value::as_str).unwrap_or(""), max).0
}

/// The known values of the string list at `key` (`allowed`), in order, without duplicates;
/// anything else is ignored (forward compatibility).
fn known_list(v: &Value, key: &str, allowed: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if allowed.contains(&s) && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// The major version of a `contractVersion` (`1`, `1.2`, `"1.2"`), `None` when it is not one.
fn contract_major(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.is_finite())
                .map(|f| f as u64)
        }),
        Value::String(s) => s.split('.').next()?.trim().parse().ok(),
        _ => None,
    }
}

fn ref_ok(r: &str) -> bool {
    !r.is_empty() && r.chars().count() <= MAX_NAME_CHARS && r.chars().all(|c| c.is_ascii_graphic())
}

/// Reads a helper's observation (pure; see the module comment): `COMPUTER_CONTRACT_UNSUPPORTED`
/// for another major version, `COMPUTER_TOOL_FAILED` for something that is not an observation;
/// everything else is accepted, bounded.
pub fn validate_observation(v: &Value) -> Result<ComputerObservation> {
    let failed = |reason| Error::ComputerToolFailed { reason };
    if !v.is_object() {
        return Err(failed("the helper's observation is not a JSON object"));
    }
    let contract_version = match v.get("contractVersion") {
        None | Some(Value::Null) => CONTRACT_VERSION,
        Some(c) => contract_major(c).ok_or(failed(
            "the helper's contractVersion is not a version number",
        ))?,
    };
    if contract_version != CONTRACT_VERSION {
        return Err(Error::ComputerContractUnsupported {
            major: contract_version,
        });
    }
    let mut omitted = v
        .get("omitted")
        .and_then(Value::as_u64)
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut controls: Vec<ComputerControl> = Vec::new();
    let raw_controls = match v.get("controls") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => return Err(failed("the helper's controls are not a list")),
    };
    for c in raw_controls {
        let reference = c.get("ref").and_then(Value::as_str).unwrap_or("");
        if controls.len() >= MAX_CONTROLS
            || !ref_ok(reference)
            || controls.iter().any(|k| k.reference == reference)
        {
            omitted = omitted.saturating_add(1);
            continue;
        }
        let role = text_field(c, "role", MAX_NAME_CHARS);
        let sensitive = c.get("sensitive").and_then(Value::as_bool) == Some(true)
            || role.to_ascii_lowercase().contains("password");
        let states: Vec<String> = c
            .get("states")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .take(MAX_CONTROL_LIST)
            .map(|s| bounded(s, 32).0)
            .collect();
        let mut actions = known_list(c, "actions", ACTION_KINDS);
        actions.retain(|a| a != "key");
        controls.push(ComputerControl {
            reference: reference.to_string(),
            role,
            name: text_field(c, "name", MAX_NAME_CHARS),
            states,
            actions,
            // Whole or not at all: a cut value would let an erase rewrite the field without
            // its hidden end (ERASE_UNAVAILABLE needs to know).
            value: if sensitive {
                None
            } else {
                c.get("value")
                    .and_then(Value::as_str)
                    .map(|s| bounded(s, MAX_VALUE_CHARS))
                    .and_then(|(s, cut)| (!cut).then_some(s))
            },
            sensitive,
            menu: c
                .get("menu")
                .and_then(Value::as_str)
                .map(|m| bounded(m, MAX_NAME_CHARS).0),
        });
    }
    let mut text = Vec::new();
    let mut chars = 0usize;
    for line in v
        .get("text")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(line) = line.as_str() else {
            continue;
        };
        let left = MAX_TEXT_CHARS.saturating_sub(chars);
        if text.len() >= MAX_TEXT_LINES || left == 0 {
            omitted = omitted.saturating_add(1);
            continue;
        }
        let (kept, cut) = bounded(line, left);
        chars = chars.saturating_add(kept.chars().count());
        if cut {
            omitted = omitted.saturating_add(1);
        }
        text.push(kept);
    }
    let focused = v
        .get("focused")
        .and_then(Value::as_str)
        .filter(|f| controls.iter().any(|c| c.reference == *f))
        .map(str::to_string);
    let caps = v.get("capabilities").cloned().unwrap_or(Value::Null);
    Ok(ComputerObservation {
        contract_version,
        application: text_field(v, "application", MAX_NAME_CHARS),
        window_title: text_field(v, "windowTitle", MAX_NAME_CHARS),
        controls,
        focused,
        text,
        supported_actions: known_list(v, "supportedActions", ACTION_KINDS),
        capabilities: ComputerCapabilities {
            standard_commands: known_list(&caps, "standardCommands", STANDARD_COMMANDS),
            keys: known_list(&caps, "keys", CAPABILITY_KEYS),
        },
        standard_command: v
            .get("standardCommand")
            .and_then(Value::as_str)
            .filter(|s| STANDARD_COMMANDS.contains(s))
            .map(str::to_string),
        omitted,
    })
}

/// One action of contract version 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComputerAction {
    /// Press the control `reference` names (its press action).
    Press {
        /// The control's ref.
        reference: String,
    },
    /// Replace the text of the field `reference` names.
    SetText {
        /// The field's ref.
        reference: String,
        /// The new text (at most [`MAX_SET_TEXT_CHARS`]).
        text: String,
    },
    /// Give the keyboard focus to the control `reference` names.
    Focus {
        /// The control's ref.
        reference: String,
    },
    /// Press and release one key (`backspace`, `Return`, `5`, …).
    Key {
        /// The key's name.
        key: String,
    },
}

/// An action and the operation id its receipt is recorded under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputerCommand {
    /// The operation id (1..=128 of `A-Z a-z 0-9 . _ : -`), unique per action.
    pub operation_id: String,
    /// What to do.
    pub action: ComputerAction,
}

fn invalid(name: &'static str, reason: &str) -> Error {
    Error::InvalidArgument {
        name,
        reason: reason.into(),
    }
}

/// Checks an operation id's shape (never echoing it).
pub fn check_operation_id(id: &str) -> Result<()> {
    let n = id.chars().count();
    if n == 0
        || n > MAX_OPERATION_ID_CHARS
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
    {
        return Err(invalid(
            "operation_id",
            "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -",
        ));
    }
    Ok(())
}

impl ComputerCommand {
    /// Checks the bounds (`INVALID_ARGUMENT` naming the argument, never its value).
    pub fn validate(&self) -> Result<()> {
        check_operation_id(&self.operation_id)?;
        let reference = match &self.action {
            ComputerAction::Press { reference }
            | ComputerAction::Focus { reference }
            | ComputerAction::SetText { reference, .. } => Some(reference),
            ComputerAction::Key { .. } => None,
        };
        if let Some(r) = reference {
            if !ref_ok(r) {
                return Err(invalid("ref", "must be a ref of the last observation"));
            }
        }
        match &self.action {
            ComputerAction::SetText { text, .. }
                if text.chars().count() > MAX_SET_TEXT_CHARS || text.contains('\0') =>
            {
                Err(invalid(
                    "text",
                    "must be at most 4000 characters without NUL",
                ))
            }
            ComputerAction::Key { key }
                if key.is_empty()
                    || key.chars().count() > 32
                    || key.chars().any(char::is_control) =>
            {
                Err(invalid("key", "must be a key name of 1 to 32 characters"))
            }
            _ => Ok(()),
        }
    }

    /// The action's kind (`press`, `set_text`, `focus`, `key`).
    pub fn kind(&self) -> &'static str {
        match self.action {
            ComputerAction::Press { .. } => "press",
            ComputerAction::SetText { .. } => "set_text",
            ComputerAction::Focus { .. } => "focus",
            ComputerAction::Key { .. } => "key",
        }
    }

    /// The `computer_action` arguments: `{"operation_id","kind", "ref"?, "text"?, "key"?}`.
    pub fn to_args(&self) -> Value {
        let mut m = Map::new();
        m.insert("operation_id".into(), json!(self.operation_id));
        m.insert("kind".into(), json!(self.kind()));
        match &self.action {
            ComputerAction::Press { reference } | ComputerAction::Focus { reference } => {
                m.insert("ref".into(), json!(reference));
            }
            ComputerAction::SetText { reference, text } => {
                m.insert("ref".into(), json!(reference));
                m.insert("text".into(), json!(text));
            }
            ComputerAction::Key { key } => {
                m.insert("key".into(), json!(key));
            }
        }
        Value::Object(m)
    }

    /// Reads `computer_action` arguments (the helper's side, and the JSON surface):
    /// `{"operation_id","kind":"press"|"set_text"|"focus"|"key","ref"?,"text"?,"key"?}`, then
    /// [`ComputerCommand::validate`]. Unknown fields are refused (`INVALID_ARGUMENT`).
    pub fn from_args(v: &Value) -> Result<ComputerCommand> {
        let obj = v
            .as_object()
            .ok_or_else(|| invalid("args", "must be a JSON object"))?;
        let s = |k: &'static str| -> Result<String> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| invalid(k, "is required and must be a string"))
        };
        let kind = s("kind")?;
        let (action, fields): (ComputerAction, &[&str]) = match kind.as_str() {
            "press" => (
                ComputerAction::Press {
                    reference: s("ref")?,
                },
                &["ref"],
            ),
            "focus" => (
                ComputerAction::Focus {
                    reference: s("ref")?,
                },
                &["ref"],
            ),
            "set_text" => (
                ComputerAction::SetText {
                    reference: s("ref")?,
                    text: s("text")?,
                },
                &["ref", "text"],
            ),
            "key" => (ComputerAction::Key { key: s("key")? }, &["key"]),
            _ => return Err(invalid("kind", "must be press, set_text, focus or key")),
        };
        if obj
            .keys()
            .any(|k| k != "operation_id" && k != "kind" && !fields.contains(&k.as_str()))
        {
            return Err(invalid("args", "has a field this action does not take"));
        }
        let command = ComputerCommand {
            operation_id: s("operation_id")?,
            action,
        };
        command.validate()?;
        Ok(command)
    }
}

/// The state of a recorded operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptState {
    /// Recorded before acting; no end recorded (the helper stopped mid-action, or is acting).
    Started,
    /// The action ran.
    Completed,
    /// The action was attempted and failed (its code says how).
    Failed,
}

impl ReceiptState {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptState::Started => "started",
            ReceiptState::Completed => "completed",
            ReceiptState::Failed => "failed",
        }
    }

    /// The state a wire word names.
    pub fn parse(s: &str) -> Option<ReceiptState> {
        match s {
            "started" => Some(ReceiptState::Started),
            "completed" => Some(ReceiptState::Completed),
            "failed" => Some(ReceiptState::Failed),
            _ => None,
        }
    }
}

/// A helper's receipt for one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    /// The operation.
    pub operation_id: String,
    /// What the helper recorded.
    pub state: ReceiptState,
    /// The action's kind, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// A failed operation's code (upper snake case), when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// What reading the receipt of an operation gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiptRead {
    /// `{"state":"not_found"}` without an operation id: never recorded, so never executed.
    NotFound,
    /// A receipt recorded for this operation.
    Recorded(Receipt),
    /// No answer, or an answer that is not a receipt for this operation.
    Unreadable,
}

fn code_ok(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 64
        && c.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

impl ReceiptRead {
    /// Reads a helper's `operation_status` answer for `operation_id` (pure): `not_found` only
    /// without an operation id; a receipt only for this operation and a known state; anything
    /// else unreadable.
    pub fn from_answer(answer: &Value, operation_id: &str) -> ReceiptRead {
        let Some(obj) = answer.as_object() else {
            return ReceiptRead::Unreadable;
        };
        let state = obj.get("state").and_then(Value::as_str);
        let id = obj.get("operation_id");
        if state == Some("not_found") {
            return if id.is_none() {
                ReceiptRead::NotFound
            } else {
                ReceiptRead::Unreadable
            };
        }
        if id.and_then(Value::as_str) != Some(operation_id) {
            return ReceiptRead::Unreadable;
        }
        let Some(state) = state.and_then(ReceiptState::parse) else {
            return ReceiptRead::Unreadable;
        };
        ReceiptRead::Recorded(Receipt {
            operation_id: operation_id.to_string(),
            state,
            action: obj
                .get("action")
                .and_then(Value::as_str)
                .filter(|a| ACTION_KINDS.contains(a))
                .map(str::to_string),
            code: obj
                .get("code")
                .and_then(Value::as_str)
                .filter(|c| code_ok(c))
                .map(str::to_string),
        })
    }

    /// The JSON a host reads: `{"state":"not_found"}`, the receipt, or `{"state":"unreadable"}`.
    pub fn to_json(&self) -> Value {
        match self {
            ReceiptRead::NotFound => json!({"state": "not_found"}),
            ReceiptRead::Recorded(r) => serde_json::to_value(r).unwrap_or(Value::Null),
            ReceiptRead::Unreadable => json!({"state": "unreadable"}),
        }
    }
}

/// What the gateway concludes about an action the helper's side rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not executed, with this cause.
    NotExecuted(ErrorKind),
    /// The helper's receipt says what happened: trusted.
    Receipt(Receipt),
    /// May have run: reconciled, never replayed.
    Unknown,
}

/// The pre-dispatch rejection rule (seed 003 "Computer helper contract"), pure: `cause` is the
/// code the helper's side answered (`None`: a failure without a cause code) and `receipt` what
/// reading its receipt gave (not asked when the cause is not one of [`PRE_DISPATCH_CAUSES`]).
pub fn pre_dispatch_verdict(cause: Option<ErrorKind>, receipt: &ReceiptRead) -> Verdict {
    let Some(cause) = cause.filter(|c| PRE_DISPATCH_CAUSES.contains(c)) else {
        return Verdict::Unknown;
    };
    match receipt {
        ReceiptRead::NotFound => Verdict::NotExecuted(cause),
        ReceiptRead::Recorded(r) => Verdict::Receipt(r.clone()),
        ReceiptRead::Unreadable if cause == ErrorKind::DeviceOffline => Verdict::Unknown,
        ReceiptRead::Unreadable => Verdict::NotExecuted(cause),
    }
}

/// The message of an error rebuilt from the helper's side.
const HELPER_REPORTED: &str = "reported by the computer helper";

/// The typed error of a cause code the helper's side answered with, if jevgate knows it.
pub fn cause_error(kind: ErrorKind) -> Option<Error> {
    let reason = || HELPER_REPORTED.to_string();
    Some(match kind {
        // The helper's side (a relay) saw the device go: the command may have been recorded
        // there first, unlike the gateway's own DEVICE_OFFLINE (never sent).
        ErrorKind::DeviceOffline => Error::Carried {
            kind,
            message: "the computer helper's side reported the device offline".into(),
        },
        ErrorKind::ConsentRequired => Error::ConsentRequired,
        ErrorKind::ApplicationNotAllowed => Error::ApplicationNotAllowed,
        ErrorKind::ComputerAccessTimeout => Error::ComputerAccessTimeout,
        ErrorKind::ObservationDenied => Error::ObservationDenied,
        ErrorKind::ControlDenied => Error::ControlDenied,
        ErrorKind::ComputerBusy => Error::ComputerBusy,
        ErrorKind::TargetNotFound => Error::TargetNotFound { reason: reason() },
        ErrorKind::FocusRequired => Error::FocusRequired,
        ErrorKind::StaleObservation => Error::StaleObservation {
            cause: crate::reasons::StaleCause::GenerationChanged,
        },
        ErrorKind::InvalidArgument => Error::InvalidArgument {
            name: "args",
            reason: reason(),
        },
        ErrorKind::ExecutionFailed => Error::ExecutionFailed { reason: reason() },
        _ => return None,
    })
}

/// A computer helper's answered failure as a typed error (the `Answered` reading of
/// `primitive.rs`): the code leading its message (`CONSENT_REQUIRED: …`) when jevgate knows it,
/// else `OUTCOME_UNKNOWN` (a failure without a cause code: it may have acted). The helper's
/// text is never copied.
pub(crate) fn helper_error(f: &WorkerFailure, timeout: Duration) -> Error {
    if f.code == "timed_out" {
        return Error::OutcomeUnknown {
            reason: format!(
                "the computer helper's own deadline passed ({} ms)",
                timeout.as_millis()
            ),
        };
    }
    helper_cause(&f.message)
        .and_then(cause_error)
        .unwrap_or(Error::OutcomeUnknown {
            reason: "the computer helper failed without a cause code".into(),
        })
}

/// The known code leading a helper's message, if any.
fn helper_cause(message: &str) -> Option<ErrorKind> {
    let code = message.split_once(':').map_or(message, |(c, _)| c).trim();
    code_ok(code).then(|| ErrorKind::from_code(code)).flatten()
}

/// A paired computer (capability `computer`) driven for one conversation of its owner (issue
/// 25): every call one primitive over the channel, every action under the device's control
/// lease. Made by [`crate::Gateway::computer_target`].
pub struct ComputerDevice {
    sender: PrimitiveSender,
    leases: Leases,
    owner: String,
    root_session: String,
    device_id: String,
    /// The contract major version of the last observation (actions wait for one).
    contract: Mutex<Option<u64>>,
}

impl std::fmt::Debug for ComputerDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputerDevice")
            .field("device_id", &self.device_id)
            .finish_non_exhaustive()
    }
}

impl ComputerDevice {
    pub(crate) fn new(
        sender: PrimitiveSender,
        leases: Leases,
        owner: &str,
        root_session: &str,
        device_id: &str,
    ) -> ComputerDevice {
        ComputerDevice {
            sender,
            leases,
            owner: owner.into(),
            root_session: root_session.into(),
            device_id: device_id.into(),
            contract: Mutex::new(None),
        }
    }

    /// The device driven.
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// Sends helper primitive `tool` once (the claim, the lease and the failures of
    /// `primitive.rs`, a helper's refusal read by [`helper_error`]); `timeout` replaces the
    /// device's command timeout. Errors as they came (a helper-side `DEVICE_OFFLINE` still
    /// carried, see [`plain`]).
    fn send_raw(
        &self,
        tool: &'static str,
        args: &Value,
        timeout: Option<Duration>,
    ) -> Result<Value> {
        let to = To {
            owner: &self.owner,
            root_session: &self.root_session,
            device_id: &self.device_id,
            want: Capability::Computer,
        };
        let clock = self.sender.clock();
        let started = clock.now();
        let answer = self
            .sender
            .send_inner(&self.leases, &to, tool, args, timeout, helper_error);
        log::info!(
            "computer primitive {tool} answered {} in {} ms",
            answer.as_ref().err().map_or("ok", Error::code),
            (clock.now() - started).as_millis()
        );
        answer
    }

    fn send(&self, tool: &'static str, args: &Value, timeout: Option<Duration>) -> Result<Value> {
        self.send_raw(tool, args, timeout).map_err(plain)
    }

    /// An open task session watches this device until the guard drops: from now on a
    /// connection that ends revokes its access (see the module comment).
    pub(crate) fn watch_connection(&self) -> ConnectionWatch {
        let serial = self.sender.connection_serial(&self.device_id);
        self.sender.computer_watch().watch(&self.device_id, serial)
    }

    /// A pending revocation of this device confirmed by its helper before anything else is
    /// sent: `Ok` when none is pending or the helper answered `revoked`; else the error (the
    /// revocation stays pending: `CONSENT_REQUIRED` for an answer that is not `revoked`).
    fn settle_revocation(&self) -> Result<()> {
        let watch = self.sender.computer_watch();
        let serial = self.sender.connection_serial(&self.device_id);
        if !watch.saw(&self.device_id, serial) {
            return Ok(());
        }
        let answer = self
            .send(
                "computer_access",
                &json!({"revoke": true}),
                Some(CONNECTION_CHECK_TIMEOUT),
            )
            .map_err(read_error)?;
        if answer.get("state").and_then(Value::as_str) != Some("revoked") {
            return Err(Error::ConsentRequired);
        }
        log::info!("computer access revoked after a disconnect; the person approves again");
        watch.confirmed(&self.device_id);
        Ok(())
    }

    /// One connection check (seed 003 "Computer connection status"): a pending revocation
    /// confirmed first, then the helper's access read without showing the person anything
    /// (`computer_access` with `{"check": true}`), as [`connection_status`] says. A device that
    /// answers offline has its access revoked when an open task session watches it.
    pub fn check_connection(&self) -> ComputerConnection {
        let answer = self.settle_revocation().and_then(|()| {
            self.send(
                "computer_access",
                &json!({"check": true}),
                Some(CONNECTION_CHECK_TIMEOUT),
            )
            .map_err(read_error)
        });
        if matches!(&answer, Err(e) if e.kind() == ErrorKind::DeviceOffline) {
            self.sender.computer_watch().went_offline(&self.device_id);
        }
        let (connected, access, failed) = read_access_check(&answer);
        connection_status(connected, access, failed)
    }

    /// Observes the front application (under the control lease): the helper's observation,
    /// validated ([`validate_observation`]). `CONSENT_REQUIRED` / `APPLICATION_NOT_ALLOWED`
    /// when the person has not approved it; `COMPUTER_CONTRACT_UNSUPPORTED` for a helper of
    /// another major version (and every later action is refused until an observation of
    /// version 1).
    pub fn observe(&self) -> Result<ComputerObservation> {
        self.observe_with(&json!({}))
    }

    /// Observes asking for standard command `name` (seed 003 "Computer helper contract";
    /// `name` of [`STANDARD_COMMANDS`], else `INVALID_ARGUMENT` before anything is sent): the
    /// observation, with the command's control ([`standard_ref`]) when the helper echoed it —
    /// `ComputerObservation::standard` says whether it did. A helper (or relay) that drops
    /// the request answers an ordinary observation; the caller goes on with it. Used by the
    /// computer task target (`task/computer_target.rs`), which asks only for a command the last
    /// observation offered.
    pub(crate) fn observe_standard(&self, name: &str) -> Result<ComputerObservation> {
        if !STANDARD_COMMANDS.contains(&name) {
            return Err(Error::InvalidArgument {
                name: "standard_command",
                reason: "not a standard command".into(),
            });
        }
        self.observe_with(&json!({ "standard_command": name }))
    }

    fn observe_with(&self, args: &Value) -> Result<ComputerObservation> {
        self.settle_revocation()?;
        let raw = self.send("observe", args, None).map_err(read_error)?;
        let checked = validate_observation(&raw);
        *self.contract.lock() = match &checked {
            Ok(o) => Some(o.contract_version),
            Err(Error::ComputerContractUnsupported { major }) => Some(*major),
            Err(_) => *self.contract.lock(),
        };
        checked
    }

    /// Runs one action (under the control lease; the helper records its receipt before acting).
    /// `Ok` carries the helper's result (or `{"receipt": …}` when a pre-dispatch rejection's
    /// receipt said it completed). A refusal is a typed error meaning not executed (the cause
    /// the helper gave, the claim's refusals, `INVALID_ARGUMENT`); `OUTCOME_UNKNOWN` means it
    /// may have run: read [`ComputerDevice::operation_status`], never send it again.
    pub fn act(&self, command: &ComputerCommand) -> Result<Value> {
        command.validate()?;
        let contract = *self.contract.lock();
        match contract {
            Some(CONTRACT_VERSION) => {}
            Some(major) => return Err(Error::ComputerContractUnsupported { major }),
            None => {
                // Never act on a helper whose contract was not read: observe first.
                self.observe()?;
            }
        }
        // A revocation not confirmed: the action is not sent.
        self.settle_revocation()?;
        match self.sender_act(command) {
            Ok(v) => Ok(v),
            Err(Rejected::Cause(kind)) => {
                let receipt = self.receipt_of(&command.operation_id);
                match pre_dispatch_verdict(Some(kind), &receipt) {
                    Verdict::NotExecuted(k) => {
                        Err(cause_error(k)
                            .map(plain)
                            .unwrap_or(Error::ComputerToolFailed {
                                reason: "an unknown pre-dispatch cause",
                            }))
                    }
                    Verdict::Receipt(r) => receipt_outcome(&r),
                    Verdict::Unknown => Err(Error::OutcomeUnknown {
                        reason: "the computer helper's side reported the device offline and \
                                 its receipt could not be read"
                            .into(),
                    }),
                }
            }
            Err(Rejected::Other(e)) => Err(e),
        }
    }

    fn sender_act(&self, command: &ComputerCommand) -> std::result::Result<Value, Rejected> {
        match self.send_raw("computer_action", &command.to_args(), None) {
            Ok(v) => Ok(v),
            // The gateway's own DEVICE_OFFLINE: never written, so never executed.
            Err(Error::DeviceOffline) => Err(Rejected::Other(Error::DeviceOffline)),
            Err(e) if PRE_DISPATCH_CAUSES.contains(&e.kind()) => Err(Rejected::Cause(e.kind())),
            Err(e) => Err(Rejected::Other(plain(e))),
        }
    }

    fn receipt_of(&self, operation_id: &str) -> ReceiptRead {
        match self.send(
            "operation_status",
            &json!({ "operation_id": operation_id }),
            None,
        ) {
            Ok(answer) => ReceiptRead::from_answer(&answer, operation_id),
            Err(_) => ReceiptRead::Unreadable,
        }
    }

    /// Reads the helper's receipt of `operation_id` (not control: no lease taken, issue 21 item
    /// 6). A helper that cannot be reached is an error (`DEVICE_OFFLINE`, …); an answer that is
    /// not a receipt is [`ReceiptRead::Unreadable`].
    pub fn operation_status(&self, operation_id: &str) -> Result<ReceiptRead> {
        check_operation_id(operation_id)?;
        let answer = self.send(
            "operation_status",
            &json!({ "operation_id": operation_id }),
            None,
        )?;
        Ok(ReceiptRead::from_answer(&answer, operation_id))
    }

    /// Asks the person for access on the device (under the control lease) and waits for the
    /// answer: `{"state":"granted", "applications", "expiresAt"}` at once under a valid
    /// approval; else the helper shows a pending access request and the gateway asks again every
    /// [`ACCESS_POLL`] (each ask one short command, so the helper keeps answering receipts
    /// meanwhile) until the person approves, or the helper's five minutes end
    /// (`COMPUTER_ACCESS_TIMEOUT`, also when the gateway's own bound of five and a half minutes
    /// passes). `cancel` stops waiting with `DEVICE_CONTROL_REVOKED` (the request stays
    /// pending on the helper until it is answered or times out).
    pub fn request_access(&self, cancel: &crate::CancelToken) -> Result<Value> {
        let clock = self.sender.clock();
        let end = clock.now() + ACCESS_TIMEOUT.saturating_add(Duration::from_secs(30));
        self.settle_revocation()?;
        loop {
            let answer = self
                .send("computer_access", &json!({}), None)
                .map_err(read_error)?;
            match answer.get("state").and_then(Value::as_str) {
                Some("granted") => return Ok(answer),
                Some("waiting") => {}
                _ => {
                    return Err(Error::ComputerToolFailed {
                        reason: "the helper's access answer is not granted or waiting",
                    })
                }
            }
            if clock.now() >= end {
                return Err(Error::ComputerAccessTimeout);
            }
            let mut pause = crate::clock::Grace::new(&*clock, ACCESS_POLL);
            while let Some(slice) = pause.next(Duration::from_millis(50)) {
                if cancel.is_cancelled() {
                    return Err(Error::DeviceControlRevoked);
                }
                std::thread::sleep(slice);
            }
            if cancel.is_cancelled() {
                return Err(Error::DeviceControlRevoked);
            }
        }
    }

    /// [`ComputerDevice::observe`] as JSON.
    pub fn observe_json(&self) -> Result<String> {
        let o = self.observe()?;
        Ok(serde_json::to_string(&o).unwrap_or_else(|_| "{}".into()))
    }

    /// [`ComputerDevice::act`] with the `computer_action` arguments as JSON
    /// (`{"operation_id","kind","ref"?,"text"?,"key"?}`); the result as JSON.
    pub fn act_json(&self, command_json: &str) -> Result<String> {
        let v: Value = crate::args::from_json(
            "command_json",
            command_json,
            "{operation_id, kind, ref?, text?, key?}",
        )?;
        let command = ComputerCommand::from_args(&v)?;
        Ok(self.act(&command)?.to_string())
    }

    /// [`ComputerDevice::operation_status`] as JSON ([`ReceiptRead::to_json`]).
    pub fn operation_status_json(&self, operation_id: &str) -> Result<String> {
        Ok(self.operation_status(operation_id)?.to_json().to_string())
    }
}

/// Why an action came back without a result.
enum Rejected {
    /// One of [`PRE_DISPATCH_CAUSES`], answered by the helper's side.
    Cause(ErrorKind),
    /// Anything else, as it is.
    Other(Error),
}

/// A helper-side `DEVICE_OFFLINE` (carried as [`Error::Carried`] to tell it from the
/// gateway's own) as the plain error a caller sees.
fn plain(e: Error) -> Error {
    match e {
        Error::Carried {
            kind: ErrorKind::DeviceOffline,
            ..
        } => Error::DeviceOffline,
        e => e,
    }
}

/// A failure of a call that acts on nothing (an observation, an access request): an
/// "unknown outcome" there is only a failed helper.
fn read_error(e: Error) -> Error {
    match e {
        Error::OutcomeUnknown { .. } => Error::ComputerToolFailed {
            reason: "the computer helper did not answer with a result",
        },
        e => e,
    }
}

/// What a trusted receipt means for the caller.
fn receipt_outcome(r: &Receipt) -> Result<Value> {
    match r.state {
        ReceiptState::Completed => Ok(json!({ "receipt": r })),
        ReceiptState::Failed => Err(r
            .code
            .as_deref()
            .and_then(ErrorKind::from_code)
            .and_then(cause_error)
            .map(plain)
            .unwrap_or(Error::ComputerToolFailed {
                reason: "the helper's receipt says the action failed",
            })),
        ReceiptState::Started => Err(Error::OutcomeUnknown {
            reason: "the computer helper recorded the action but not its end".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(state: ReceiptState) -> ReceiptRead {
        ReceiptRead::Recorded(Receipt {
            operation_id: "op-1".into(),
            state,
            action: Some("press".into()),
            code: None,
        })
    }

    // Issue 25, seed 003 "Computer helper contract": the pre-dispatch rejection rule.
    #[test]
    fn r_computer_pre_dispatch_rejections_are_settled_by_the_receipt() {
        for cause in PRE_DISPATCH_CAUSES {
            // not_found: not executed, with that cause.
            assert_eq!(
                pre_dispatch_verdict(Some(*cause), &ReceiptRead::NotFound),
                Verdict::NotExecuted(*cause)
            );
            // A recorded receipt is always trusted.
            for state in [
                ReceiptState::Started,
                ReceiptState::Completed,
                ReceiptState::Failed,
            ] {
                let read = receipt(state);
                let ReceiptRead::Recorded(r) = &read else {
                    unreachable!()
                };
                assert_eq!(
                    pre_dispatch_verdict(Some(*cause), &read),
                    Verdict::Receipt(r.clone())
                );
            }
            // Unreadable: only DEVICE_OFFLINE stays unknown.
            let want = if *cause == ErrorKind::DeviceOffline {
                Verdict::Unknown
            } else {
                Verdict::NotExecuted(*cause)
            };
            assert_eq!(
                pre_dispatch_verdict(Some(*cause), &ReceiptRead::Unreadable),
                want
            );
        }
        // A failure without a cause code stays unknown, whatever the receipt.
        for read in [
            ReceiptRead::NotFound,
            ReceiptRead::Unreadable,
            receipt(ReceiptState::Completed),
        ] {
            assert_eq!(pre_dispatch_verdict(None, &read), Verdict::Unknown);
        }
        // Another cause is not a pre-dispatch rejection: unknown here (the caller keeps the
        // helper's definite refusals as they are and never asks).
        assert_eq!(
            pre_dispatch_verdict(Some(ErrorKind::ExecutionFailed), &ReceiptRead::NotFound),
            Verdict::Unknown
        );
    }

    // Seed 003 "Computer connection status" (issue 25 item 4): the status of one check.
    #[test]
    fn r_computer_connection_status_is_a_pure_rule() {
        use AccessAnswer::{Granted, NotGranted};
        use ComputerConnection::*;
        for (connected, access, failed, want) in [
            (true, Some(Granted), false, Connected),
            (true, Some(NotGranted), false, WaitingAccess),
            (false, None, false, Disconnected),
            (false, Some(Granted), false, Disconnected),
            (true, None, false, Unknown),
            (true, Some(Granted), true, Unknown),
            (false, None, true, Unknown),
        ] {
            assert_eq!(
                connection_status(connected, access, failed),
                want,
                "{connected} {access:?} {failed}"
            );
        }
        let read = |answer: Result<Value>| {
            let (c, a, f) = read_access_check(&answer);
            connection_status(c, a, f)
        };
        assert_eq!(read(Ok(json!({"state": "granted"}))), Connected);
        assert_eq!(read(Ok(json!({"state": "waiting"}))), WaitingAccess);
        for e in [
            Error::ConsentRequired,
            Error::ApplicationNotAllowed,
            Error::ComputerAccessTimeout,
        ] {
            assert_eq!(read(Err(e)), WaitingAccess);
        }
        assert_eq!(read(Err(Error::DeviceOffline)), Disconnected);
        assert_eq!(
            read(Err(Error::Carried {
                kind: ErrorKind::DeviceOffline,
                message: "relay".into()
            })),
            Disconnected
        );
        for answer in [
            Ok(json!({"state": "revoked"})),
            Ok(json!("granted")),
            Err(Error::ComputerToolFailed { reason: "x" }),
            Err(Error::DeviceNotPaired),
        ] {
            assert_eq!(read(answer), Unknown);
        }
        let words: Vec<_> = [Connected, Disconnected, WaitingAccess, Unknown]
            .iter()
            .map(|c| (c.as_str(), serde_json::to_value(c).unwrap()))
            .collect();
        for (word, value) in words {
            assert_eq!(value, json!(word));
        }
    }

    #[test]
    fn r_computer_receipts_are_read_strictly() {
        let read = |v: Value| ReceiptRead::from_answer(&v, "op-1");
        assert_eq!(read(json!({"state": "not_found"})), ReceiptRead::NotFound);
        // not_found naming an operation is not the contract's not_found.
        assert_eq!(
            read(json!({"state": "not_found", "operation_id": "op-1"})),
            ReceiptRead::Unreadable
        );
        assert_eq!(
            read(json!({"operation_id": "op-1", "state": "completed", "action": "press"})),
            receipt(ReceiptState::Completed)
        );
        // Another operation's receipt, an unknown state, garbage: unreadable.
        for v in [
            json!({"operation_id": "op-2", "state": "completed"}),
            json!({"operation_id": "op-1", "state": "done"}),
            json!({"operation_id": "op-1"}),
            json!("completed"),
            json!(null),
            json!([]),
        ] {
            assert_eq!(read(v.clone()), ReceiptRead::Unreadable, "{v}");
        }
        // A failed receipt keeps a well-formed code only.
        let ReceiptRead::Recorded(r) = read(
            json!({"operation_id": "op-1", "state": "failed", "code": "secret text", "action": "zap"}),
        ) else {
            panic!()
        };
        assert_eq!((r.code, r.action), (None, None));
    }

    #[test]
    fn r_computer_observations_are_bounded_and_forward_compatible() {
        // No contractVersion: version 1.
        let o = validate_observation(&json!({"application": "calc", "controls": []})).unwrap();
        assert_eq!(o.contract_version, 1);
        for v in [json!(1), json!(1.4), json!("1.9")] {
            assert!(validate_observation(&json!({"contractVersion": v})).is_ok());
        }
        for (v, major) in [(json!(2), 2), (json!("2.0"), 2), (json!(0), 0)] {
            assert!(matches!(
                validate_observation(&json!({"contractVersion": v})),
                Err(Error::ComputerContractUnsupported { major: m }) if m == major
            ));
        }
        for bad in [
            json!([]),
            json!({"contractVersion": "x"}),
            json!({"controls": 3}),
        ] {
            assert_eq!(
                validate_observation(&bad).unwrap_err().code(),
                "COMPUTER_TOOL_FAILED"
            );
        }
        // Unknown values are ignored, not a rejection; a sensitive value is dropped.
        let o = validate_observation(&json!({
            "contractVersion": 1,
            "supportedActions": ["press", "teleport", "key"],
            "capabilities": {"standardCommands": ["tab:new", "warp:9"], "keys": ["backspace", "hyper"], "future": true},
            "controls": [
                {"ref": "e1", "role": "button", "name": "5", "actions": ["press", "levitate"]},
                {"ref": "e2", "role": "password text", "name": "pw", "value": "hunter2"},
                {"ref": "e2", "role": "button", "name": "dup"},
                {"ref": "", "role": "button"},
                {"ref": "e3", "role": "text box", "value": "x".repeat(5000), "actions": ["set_text"]},
                {"ref": "e4", "role": "menu item", "name": "Copy", "menu": "Edit", "actions": ["press"]},
            ],
            "focused": "e9",
            "text": ["a", 3, "b"],
            "newField": {"ignored": true},
        }))
        .unwrap();
        assert_eq!(o.supported_actions, ["press", "key"]);
        assert_eq!(o.capabilities.standard_commands, ["tab:new"]);
        assert_eq!(o.capabilities.keys, ["backspace"]);
        assert_eq!(o.controls.len(), 4);
        assert_eq!(o.controls[0].actions, ["press"]);
        assert!(o.controls[1].sensitive && o.controls[1].value.is_none());
        // A value over the bound is absent, never cut (issue 25: ERASE_UNAVAILABLE).
        assert_eq!(o.controls[2].value, None);
        assert_eq!(o.controls[3].menu.as_deref(), Some("Edit"));
        assert_eq!(o.controls[0].menu, None);
        assert_eq!(o.focused, None, "a focus on no listed control is dropped");
        assert_eq!(o.text, ["a", "b"]);
        assert_eq!(o.omitted, 2);
        assert!(!serde_json::to_string(&o).unwrap().contains("hunter2"));
        assert_eq!(o.standard_command, None);
        // A standard command echoed with its control; an unknown echo is ignored; an echo
        // without its (pressable) control offers nothing.
        let quit = json!({"ref": "standard-app-quit", "role": "push button",
                          "name": "Quit Chromium", "actions": ["press"]});
        let o = validate_observation(&json!({"standardCommand": "app:quit", "controls": [quit]}))
            .unwrap();
        assert_eq!(o.standard_command.as_deref(), Some("app:quit"));
        assert_eq!(
            o.standard("app:quit").map(|c| c.name.as_str()),
            Some("Quit Chromium")
        );
        assert_eq!(o.standard("tab:new"), None);
        let o = validate_observation(&json!({"standardCommand": "warp:9", "controls": [quit]}))
            .unwrap();
        assert_eq!((o.standard_command, o.controls.len()), (None, 1));
        let o = validate_observation(&json!({"controls": [quit]})).unwrap();
        assert_eq!(
            o.standard("app:quit"),
            None,
            "not echoed: a relay dropped it"
        );
        let o = validate_observation(&json!({"standardCommand": "app:quit", "controls": [
            {"ref": "standard-app-quit", "role": "push button", "name": "Quit"}]}))
        .unwrap();
        assert_eq!(o.standard("app:quit"), None, "not pressable");
        // Bounds: controls and text.
        let many: Vec<Value> = (0..1000)
            .map(|i| json!({"ref": format!("e{i}"), "role": "button", "name": "x".repeat(500)}))
            .collect();
        let lines: Vec<Value> = (0..1000).map(|_| json!("y".repeat(100))).collect();
        let o = validate_observation(&json!({"controls": many, "text": lines})).unwrap();
        assert_eq!(o.controls.len(), MAX_CONTROLS);
        assert_eq!(o.controls[0].name.chars().count(), MAX_NAME_CHARS);
        assert!(o.text.iter().map(|l| l.chars().count()).sum::<usize>() <= MAX_TEXT_CHARS);
        assert!(o.omitted >= 600);
    }

    #[test]
    fn r_computer_commands_round_trip_and_are_checked() {
        for c in [
            ComputerCommand {
                operation_id: "op-1".into(),
                action: ComputerAction::Press {
                    reference: "e5".into(),
                },
            },
            ComputerCommand {
                operation_id: "op:2".into(),
                action: ComputerAction::SetText {
                    reference: "e9".into(),
                    text: "ห้า".into(),
                },
            },
            ComputerCommand {
                operation_id: "op_3".into(),
                action: ComputerAction::Focus {
                    reference: "e1".into(),
                },
            },
            ComputerCommand {
                operation_id: "op.4".into(),
                action: ComputerAction::Key {
                    key: "backspace".into(),
                },
            },
        ] {
            assert_eq!(ComputerCommand::from_args(&c.to_args()).unwrap(), c);
        }
        for bad in [
            json!({"operation_id": "op", "kind": "press"}),
            json!({"operation_id": "op", "kind": "zap", "ref": "e1"}),
            json!({"operation_id": "", "kind": "press", "ref": "e1"}),
            json!({"operation_id": "a b", "kind": "press", "ref": "e1"}),
            json!({"operation_id": "op", "kind": "press", "ref": "e1", "text": "x"}),
            json!({"operation_id": "op", "kind": "set_text", "ref": "e1", "text": "x".repeat(4001)}),
            json!({"operation_id": "op", "kind": "key", "key": ""}),
            json!({"kind": "key", "key": "a"}),
            json!([]),
        ] {
            assert_eq!(
                ComputerCommand::from_args(&bad).unwrap_err().code(),
                "INVALID_ARGUMENT",
                "{bad}"
            );
        }
    }

    #[test]
    fn r_computer_helper_failures_keep_only_their_code() {
        let t = Duration::from_secs(1);
        let e = |code: &str, message: &str| helper_error(&WorkerFailure::new(code, message), t);
        assert_eq!(
            e("execution_failed", "CONSENT_REQUIRED: secret").code(),
            "CONSENT_REQUIRED"
        );
        assert_eq!(
            e("execution_failed", "APPLICATION_NOT_ALLOWED").code(),
            "APPLICATION_NOT_ALLOWED"
        );
        assert!(matches!(
            e("execution_failed", "DEVICE_OFFLINE: relay"),
            Error::Carried {
                kind: ErrorKind::DeviceOffline,
                ..
            }
        ));
        // No cause code, an unknown code, a deadline: unknown, never the helper's text.
        for (code, message) in [
            ("execution_failed", "secret words"),
            ("execution_failed", "NOT_A_CODE_WE_KNOW: x"),
            ("execution_failed", ""),
            ("timed_out", "CONSENT_REQUIRED"),
        ] {
            let err = e(code, message);
            assert_eq!(err.code(), "OUTCOME_UNKNOWN", "{message}");
            assert!(!err.to_string().contains("secret"));
        }
        assert!(!e("execution_failed", "TARGET_NOT_FOUND: secret")
            .to_string()
            .contains("secret"));
    }
}

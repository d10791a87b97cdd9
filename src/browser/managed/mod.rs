//! The managed-browser tool family of seed 001 "Tools" (issue 15 items 1–2): `browser_snapshot`,
//! `browser_navigate`, `browser_click`, `browser_type`, `browser_fill_form`,
//! `browser_press_key` (keys and chords), `browser_wait_for`, `browser_handle_dialog` (armed
//! before the action), `browser_evaluate`, `browser_take_screenshot`, `browser_tabs`,
//! `browser_hover`, `browser_drag`, `browser_resize`, `browser_console_messages` /
//! `browser_network_requests` (since this turn started), `browser_file_upload` /
//! `browser_download_files` (confined to the host's workspace), `browser_mouse_click_xy` /
//! `_move_xy` / `_drag_xy` and the rest — their definitions ([`managed_tool_definitions`]) and
//! one executor ([`ManagedBrowser`]) over any [`BrowserBackend`].
//!
//! It owns the mapping from a tool call to the backend's primitives (R-BRW-ACT), the target
//! syntax (`target.rs`: a ref or a `css=`/`role=`/`text=` selector that must match exactly one
//! element), which generation a ref belongs to (the last snapshot handed out; a ref from a page
//! that changed since is refused `STALE_OBSERVATION`, never applied elsewhere), the dialog
//! armed for the next action, and the result shapes: every mutating tool returns a fresh
//! snapshot (R-BRW-SNAP), and everything read from the page — URL, title, tree, dialog
//! message, tab titles, a script's value — sits inside the one text envelope of
//! [`crate::untrusted::wrap_text`] under `page` (R-BRW-UNTRUSTED); the fields beside it
//! (`generation`, `operationId`, `navigationStarted`, `artifactId`, …) are jevgate's own.
//!
//! It never decides a session's mode or profile (the gateway does, with the lease manager,
//! R-PROF), never stores a screenshot itself (a [`ScreenshotSink`] the gateway supplies does,
//! so this layer does not reach into the device service), never echoes an argument's value in
//! an error (`INVALID_TOOL_ARGUMENTS` names the field), never logs page content, typed text
//! or field values, and never lets a file tool reach a path outside the workspace of the call's
//! [`ManagedRun`] (`crate::browser::confine`; no workspace refuses them). Console text, request
//! URLs (already redacted) and download names are page output and go inside the envelope.
//! Waits are bounded and on the backend's clock (R-CLK), and `browser_wait_for` stops when the
//! call's [`CancelToken`] fires.

mod defs;
mod target;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

pub use defs::{managed_tool_definitions, ManagedCaps};

use super::backend::{
    ActionResult, BrowserBackend, ChordArgs, ClickArgs, DownloadsArgs, DragArgs, FormInputArgs,
    GetTextArgs, HandleDialogArgs, HistoryArgs, HoverArgs, JavascriptArgs, LogArgs, MouseClickArgs,
    MouseDragArgs, MouseMoveArgs, NavigateArgs, ObserveArgs, ResizeArgs, ResolveCssArgs,
    ScreenshotArgs, SetInputFilesArgs, SnapshotArgs, TabsAction, TabsArgs, TypeArgs, MAX_VIEWPORT,
    MIN_VIEWPORT,
};
use crate::device::CancelToken;
use crate::grammar::HistoryDirection;
use crate::observation::{Control, Observation};
use crate::untrusted::{unwrap_text, wrap_text};
use crate::{Error, Result};
use target::{matching, parse_target, Target};

/// How long a read waits for a navigation in progress to finish loading.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);
/// The longest `browser_wait_for` waits, and its default for text.
const WAIT_MAX: Duration = Duration::from_secs(30);
const WAIT_TEXT_DEFAULT: Duration = Duration::from_secs(10);
/// How often `browser_wait_for` reads the page text (at most; a manual clock polls faster).
const WAIT_POLL: Duration = Duration::from_millis(100);
/// The most fields one `browser_fill_form` fills.
const MAX_FIELDS: usize = 50;
/// The longest text, URL or function accepted (characters).
const MAX_TEXT: usize = 100_000;
/// The most files one `browser_file_upload` sets.
const MAX_UPLOAD: usize = 16;

/// Where `browser_take_screenshot` stores its private artifact (R-DEV-SHOT). The gateway
/// supplies one per call (storing under the calling thread); `None` in the call's
/// [`ManagedRun`] (strict data handling) stores nothing.
pub trait ScreenshotSink: Send + Sync {
    /// Stores `bytes` and returns the artifact id.
    fn store(&self, media_type: &str, bytes: &[u8]) -> Result<String>;
}

/// Saves a finished download of the session's current tab into the workspace
/// (`browser_download_files` with `name`). The gateway passes its local browser; a backend
/// without one leaves it `None` and saving is refused.
pub trait DownloadSaver: Send + Sync {
    /// Copies the current tab's completed download `name` to `requested`, confined to
    /// `workspace` ([`crate::browser::confine`]: no `..`, no symlink out, never overwriting);
    /// the path written.
    fn save(&self, name: &str, workspace: &Path, requested: &str) -> Result<PathBuf>;
}

impl DownloadSaver for crate::browser::LocalTab {
    fn save(&self, name: &str, workspace: &Path, requested: &str) -> Result<PathBuf> {
        self.save_download(name, workspace, requested)
    }
}

impl DownloadSaver for crate::browser::LocalBrowser {
    fn save(&self, name: &str, workspace: &Path, requested: &str) -> Result<PathBuf> {
        self.current_tab()?
            .save_download(name, workspace, requested)
    }
}

/// How a session treats page data (seed 001 "Strict data handling").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataHandling {
    /// Screenshots are also stored as private artifacts.
    #[default]
    Standard,
    /// Nothing is written to disk for the session's screenshots (no artifact).
    Strict,
}

/// Who makes a managed tool call (the thread-scoped session of R-PROF-4) and with what:
/// the host's configured profile, whether authenticated mode is permitted, data handling.
///
/// ```
/// use jevgate::browser::managed::{DataHandling, ManagedCall};
/// let call = ManagedCall::new("thread-1", "acme");
/// assert_eq!(call.data_handling, DataHandling::Standard);
/// assert!(call.profile_key.is_none() && call.authenticated_allowed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedCall {
    /// The thread (conversation): its session carries page state between calls.
    pub thread_id: String,
    /// The organization owning the profile.
    pub organization: String,
    /// The configured persistent profile key, if any (stored only as a keyed hash, R-PROF-1).
    pub profile_key: Option<String>,
    /// Whether the caller may use authenticated mode.
    pub authenticated_allowed: bool,
    /// Standard or strict.
    pub data_handling: DataHandling,
}

/// The JSON shape of a [`ManagedCall`] (the C `call_json`, the Python keywords).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ManagedCallJson {
    thread_id: String,
    organization: String,
    #[serde(default)]
    profile_key: Option<String>,
    #[serde(default = "yes")]
    authenticated_allowed: bool,
    #[serde(default)]
    data_handling: DataHandling,
}

fn yes() -> bool {
    true
}

impl ManagedCall {
    /// Parses `{"threadId","organization","profileKey"?,"authenticatedAllowed"? (default
    /// true),"dataHandling"?: "standard"|"strict"}`; `INVALID_ARGUMENT` `call_json` otherwise.
    ///
    /// ```
    /// use jevgate::browser::managed::{DataHandling, ManagedCall};
    /// let c = ManagedCall::from_json(r#"{"threadId":"t","organization":"o","dataHandling":"strict"}"#)?;
    /// assert_eq!(c.data_handling, DataHandling::Strict);
    /// assert_eq!(ManagedCall::from_json("{}").unwrap_err().code(), "INVALID_ARGUMENT");
    /// # Ok::<(), jevgate::Error>(())
    /// ```
    pub fn from_json(json: &str) -> Result<ManagedCall> {
        let c: ManagedCallJson = serde_json::from_str(json).map_err(|_| Error::InvalidArgument {
            name: "call_json",
            reason: "must be {\"threadId\",\"organization\",\"profileKey\"?,\"authenticatedAllowed\"?,\"dataHandling\"?: \"standard\"|\"strict\"}".into(),
        })?;
        Ok(ManagedCall {
            thread_id: c.thread_id,
            organization: c.organization,
            profile_key: c.profile_key,
            authenticated_allowed: c.authenticated_allowed,
            data_handling: c.data_handling,
        })
    }

    /// A call of `thread_id` in `organization`: no profile, authenticated allowed (it needs a
    /// profile anyway), standard data handling.
    pub fn new(thread_id: impl Into<String>, organization: impl Into<String>) -> ManagedCall {
        ManagedCall {
            thread_id: thread_id.into(),
            organization: organization.into(),
            profile_key: None,
            authenticated_allowed: true,
            data_handling: DataHandling::Standard,
        }
    }
}

/// What one call runs with: the host's caps, its workspace, where screenshots and downloads
/// go, and its cancellation.
#[derive(Clone, Copy, Default)]
pub struct ManagedRun<'a> {
    /// The caps the host turned on (a tool outside them is `UNKNOWN_TOOL`).
    pub caps: ManagedCaps,
    /// The workspace directory the file tools are confined to; `None` refuses them
    /// (`ACCESS_DENIED`) even with the `files` cap.
    pub workspace: Option<&'a Path>,
    /// Saves a download into the workspace; `None` lists downloads but refuses saving.
    pub downloads: Option<&'a dyn DownloadSaver>,
    /// Where a screenshot's artifact is stored; `None` stores none (strict data handling).
    pub screenshots: Option<&'a dyn ScreenshotSink>,
    /// Fires to stop a `browser_wait_for` early (`JEV_CANCELLED`).
    pub cancel: Option<&'a CancelToken>,
}

impl std::fmt::Debug for ManagedRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedRun")
            .field("caps", &self.caps)
            .field("workspace", &self.workspace.is_some())
            .field("screenshots", &self.screenshots.is_some())
            .finish()
    }
}

/// The managed tool family served from one browser (one thread's session). Keeps, between
/// calls, the generation of the refs it handed out, the dialog armed for the next action, and
/// per tab the marks of `browser_console_messages` / `browser_network_requests`.
///
/// "Since this turn started" (seed 001): a turn of these two tools is the span since the tool
/// last returned in this session, or since the host began a new turn
/// ([`ManagedBrowser::begin_turn`], `Gateway::begin_browser_turn`), whichever is later; a tab
/// the session has not read yet starts at its first entry (the session's tabs are its own).
/// `begin_turn` marks the current tab; another tab keeps the mark of its own last read.
///
/// ```no_run
/// use std::sync::Arc;
/// use jevgate::browser::managed::{ManagedBrowser, ManagedRun};
/// use jevgate::browser::{LaunchOptions, LocalBrowser};
/// let browser = LocalBrowser::launch(LaunchOptions::default())?;
/// let tools = ManagedBrowser::new(Arc::new(browser.clone()));
/// let run = ManagedRun::default();
/// tools.run("browser_navigate", &serde_json::json!({"url": "https://example.com"}), &run)?;
/// tools.run("browser_click", &serde_json::json!({"target": "role=link"}), &run)?;
/// browser.close();
/// # Ok::<(), jevgate::Error>(())
/// ```
pub struct ManagedBrowser {
    backend: Arc<dyn BrowserBackend>,
    clock: crate::clock::SharedClock,
    handed_out: Mutex<Option<u64>>,
    armed: Mutex<Option<HandleDialogArgs>>,
    /// Tab id → the next console / network entry not yet returned.
    marks: Mutex<HashMap<String, LogMarks>>,
    ops: AtomicU64,
    prefix: String,
}

/// One tab's marks for the two journal tools.
#[derive(Debug, Clone, Copy, Default)]
struct LogMarks {
    console: u64,
    network: u64,
}

impl std::fmt::Debug for ManagedBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedBrowser")
            .field("generation", &*self.handed_out.lock())
            .field("dialog_armed", &self.armed.lock().is_some())
            .finish()
    }
}

/// `INVALID_TOOL_ARGUMENTS` for `tool`, naming the field and rule (never the value).
fn bad(tool: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidToolArguments {
        tool,
        reason: reason.into(),
    }
}

/// A tool name safe to show back: a short identifier, else `?`.
fn shown_name(name: &str) -> String {
    if !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        name.to_string()
    } else {
        "?".into()
    }
}

struct Args<'a> {
    tool: &'static str,
    obj: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    fn opt_str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= MAX_TEXT => Ok(Some(s)),
            Some(Value::String(_)) => Err(bad(
                self.tool,
                format!("`{key}` is longer than {MAX_TEXT} characters"),
            )),
            Some(_) => Err(bad(self.tool, format!("`{key}` must be a string"))),
        }
    }

    fn str(&self, key: &str) -> Result<&'a str> {
        self.opt_str(key)?
            .ok_or_else(|| bad(self.tool, format!("`{key}` is required")))
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(bad(self.tool, format!("`{key}` must be true or false"))),
        }
    }

    fn num(&self, key: &str, max: f64) -> Result<f64> {
        self.opt_num(key, max)?
            .ok_or_else(|| bad(self.tool, format!("`{key}` is required")))
    }

    fn side(&self, key: &str) -> Result<u32> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Err(bad(self.tool, format!("`{key}` is required"))),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| (MIN_VIEWPORT..=MAX_VIEWPORT).contains(n))
                .ok_or_else(|| {
                    bad(
                        self.tool,
                        format!(
                            "`{key}` must be a whole number from {MIN_VIEWPORT} to {MAX_VIEWPORT}"
                        ),
                    )
                }),
        }
    }

    fn opt_num(&self, key: &str, max: f64) -> Result<Option<f64>> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if (0.0..=max).contains(&v) => Ok(Some(v)),
                _ => Err(bad(
                    self.tool,
                    format!("`{key}` must be a number from 0 to {max}"),
                )),
            },
            Some(_) => Err(bad(self.tool, format!("`{key}` must be a number"))),
        }
    }

    fn target(&self, key: &str) -> Result<Target> {
        parse_target(self.str(key)?).ok_or_else(|| {
            bad(
                self.tool,
                format!("`{key}` must be a ref (e5) or css=…, role=…[name=\"…\"] or text=…"),
            )
        })
    }
}

/// The workspace of a file tool, or `ACCESS_DENIED` saying the host has not named one.
fn workspace_of<'r>(tool: &'static str, run: &ManagedRun<'r>) -> Result<&'r Path> {
    run.workspace.ok_or_else(|| Error::AccessDenied {
        reason: format!(
            "{tool} needs a workspace directory, and the host has not set one (set_managed_workspace)"
        ),
    })
}

/// A path refused by the workspace confinement as `INVALID_TOOL_ARGUMENTS` naming `field`
/// (the confinement's reason never holds the path); other errors as they are.
fn confined_error(tool: &'static str, field: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument { reason, .. } => bad(tool, format!("`{field}`: {reason}")),
        other => other,
    }
}

fn text_of(wrapped: &str) -> &str {
    unwrap_text(wrapped).unwrap_or(wrapped)
}

fn count_error(kind: &str, n: usize) -> Error {
    Error::TargetNotFound {
        reason: if n == 0 {
            format!("the {kind} selector matched no interactive element (count 0)")
        } else {
            format!("the {kind} selector matched {n} interactive elements (count {n}); make it match exactly one")
        },
    }
}

impl ManagedBrowser {
    /// Serves the family from `backend` (a [`crate::browser::LocalBrowser`] or any backend).
    pub fn new(backend: Arc<dyn BrowserBackend>) -> ManagedBrowser {
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        ManagedBrowser {
            clock: backend.clock(),
            backend,
            handed_out: Mutex::new(None),
            armed: Mutex::new(None),
            marks: Mutex::new(HashMap::new()),
            ops: AtomicU64::new(0),
            prefix: format!("managed-{}-{n}", std::process::id()),
        }
    }

    fn op(&self) -> String {
        format!(
            "{}-{}",
            self.prefix,
            self.ops.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    /// Sleeps at most `pause` of real time, never past `deadline` on the backend's clock.
    fn nap(&self, deadline: crate::clock::Instant, pause: Duration) -> bool {
        match crate::clock::wait_slice(&*self.clock, deadline) {
            Some(slice) => {
                std::thread::sleep(slice.min(pause));
                true
            }
            None => false,
        }
    }

    /// Runs a read, re-reading while a navigation is still loading, for at most
    /// [`SETTLE_WITHIN`] on the backend's clock.
    fn settled<T>(&self, read: impl Fn() -> Result<T>) -> Result<T> {
        let deadline = self.clock.now() + SETTLE_WITHIN;
        let mut pause = Duration::from_millis(25);
        loop {
            match read() {
                Err(Error::StaleObservation {
                    cause: super::StaleCause::NavigationPending,
                }) if self.nap(deadline, pause) => {
                    pause = (pause * 2).min(Duration::from_millis(400));
                }
                other => return other,
            }
        }
    }

    fn observe(&self) -> Result<Observation> {
        self.settled(|| {
            self.backend.observe_with(ObserveArgs {
                max_controls: None,
                max_text_chars: Some(1),
            })
        })
    }

    /// The ref and generation `target` names: a ref of the last snapshot handed out, or the
    /// one control a selector matches on the current page.
    fn resolve(&self, target: &Target, obs: &Observation) -> Result<(u64, String)> {
        match target {
            Target::Ref(r) => {
                let generation = self.handed_out.lock().ok_or_else(|| Error::TargetNotFound {
                    reason: "no snapshot has handed out refs yet: call browser_snapshot first, or use a css=/role=/text= selector".into(),
                })?;
                Ok((generation, r.clone()))
            }
            Target::Css(css) => {
                let found = self.backend.resolve_css(ResolveCssArgs {
                    generation: obs.generation,
                    css: css.clone(),
                })?;
                match found.refs.as_slice() {
                    [one] if found.count == 1 => Ok((obs.generation, one.clone())),
                    _ => Err(count_error("css", found.count)),
                }
            }
            Target::Role { .. } | Target::Text(_) => {
                let kind = if matches!(target, Target::Text(_)) {
                    "text"
                } else {
                    "role"
                };
                match matching(target, &obs.controls).as_slice() {
                    [one] => Ok((obs.generation, one.reference.clone())),
                    many => Err(count_error(kind, many.len())),
                }
            }
        }
    }

    /// [`ManagedBrowser::resolve`] observing the page only when a selector needs it (a ref
    /// of the last snapshot is checked by the backend against its generation).
    fn locate(&self, target: &Target) -> Result<(u64, String)> {
        if matches!(target, Target::Ref(_)) {
            return self.resolve(target, &Observation::default());
        }
        self.resolve(target, &self.observe()?)
    }

    /// The observed control behind a resolved ref (when it is of `obs`'s generation).
    fn control<'o>(obs: &'o Observation, generation: u64, reference: &str) -> Option<&'o Control> {
        (obs.generation == generation)
            .then(|| obs.controls.iter().find(|c| c.reference == reference))
            .flatten()
    }

    /// The page view: generation and the one envelope with URL, title, tree (and `before`,
    /// e.g. a dialog's message). Hands the refs out.
    fn page_view(&self, region: Option<String>, before: Option<String>) -> Result<Value> {
        let snap = self.settled(|| {
            self.backend.snapshot(SnapshotArgs {
                region: region.clone(),
                max_chars: None,
            })
        })?;
        *self.handed_out.lock() = Some(snap.generation);
        let mut page = String::new();
        if let Some(b) = before {
            page.push_str(&b);
            page.push('\n');
        }
        page.push_str(&format!(
            "url: {}\ntitle: {}\n\n{}",
            snap.url,
            snap.title,
            text_of(&snap.text)
        ));
        Ok(json!({
            "generation": snap.generation,
            "truncated": snap.truncated,
            "page": wrap_text(&page),
        }))
    }

    /// A mutating tool's answer: what happened, the armed dialog handled if one opened, then
    /// the fresh snapshot (R-BRW-SNAP).
    fn after_action(&self, action: ActionResult, extra: Map<String, Value>) -> Result<Value> {
        let mut before = None;
        let mut dialog_out = Value::Null;
        if let Some(dialog) = &action.dialog {
            let armed = self.armed.lock().take();
            match armed {
                Some(arm) => {
                    let accepted = arm.accept;
                    self.backend.handle_dialog(arm)?;
                    dialog_out = json!({"type": dialog.kind, "handled": if accepted { "accepted" } else { "dismissed" }});
                    before = Some(format!(
                        "{} dialog handled: {}",
                        dialog.kind, dialog.message
                    ));
                }
                None => {
                    dialog_out = json!({"type": dialog.kind, "handled": Value::Null});
                    before = Some(format!(
                        "{} dialog open (call browser_handle_dialog): {}",
                        dialog.kind, dialog.message
                    ));
                }
            }
        }
        let mut out = self.page_view(None, before)?;
        out["operationId"] = json!(action.operation_id);
        out["navigationStarted"] = json!(action.navigation_started);
        if !action.notes.is_empty() {
            out["notes"] = json!(action.notes);
        }
        if !dialog_out.is_null() {
            out["dialog"] = dialog_out;
        }
        for (k, v) in extra {
            out[k] = v;
        }
        Ok(out)
    }

    fn current_generation(&self) -> Result<u64> {
        Ok(self
            .settled(|| {
                self.backend.observe_with(ObserveArgs {
                    max_controls: Some(1),
                    max_text_chars: Some(1),
                })
            })?
            .generation)
    }

    /// Runs one tool of the family with `args` (a JSON object) and returns its result.
    /// `UNKNOWN_TOOL` for a name outside the family or the caps; `INVALID_TOOL_ARGUMENTS`
    /// naming the field for bad arguments (nothing sent); the backend's errors as they are.
    /// Never panics on any `args`.
    pub fn run(&self, name: &str, args: &Value, run: &ManagedRun<'_>) -> Result<Value> {
        let def = defs::def(name)
            .filter(|d| run.caps.allows(d.needs))
            .ok_or_else(|| Error::UnknownTool {
                tool: shown_name(name),
            })?;
        let tool = def.name;
        let empty = Map::new();
        let obj = match args {
            Value::Object(o) => o,
            Value::Null => &empty,
            _ => return Err(bad(tool, "the arguments must be a JSON object")),
        };
        let accepted = defs::accepted(def);
        for key in obj.keys() {
            if !accepted.iter().any(|a| a == key) {
                return Err(bad(tool, format!("unknown argument `{}`", shown_name(key))));
            }
        }
        let a = Args { tool, obj };
        let b = &self.backend;
        match tool {
            "browser_snapshot" => {
                let region = match obj.get("target") {
                    None | Some(Value::Null) => None,
                    Some(_) => {
                        let t = a.target("target")?;
                        let obs = self.observe()?;
                        let (generation, r) = self.resolve(&t, &obs)?;
                        if generation != obs.generation {
                            return Err(Error::StaleObservation {
                                cause: super::StaleCause::GenerationChanged,
                            });
                        }
                        Some(r)
                    }
                };
                self.page_view(region, None)
            }
            "browser_navigate" => {
                let url = a.str("url")?;
                if url.trim().is_empty() {
                    return Err(bad(tool, "`url` must not be empty"));
                }
                match a.opt_str("sessionMode")? {
                    None | Some("authenticated") | Some("isolated") => {}
                    Some(_) => {
                        return Err(bad(tool, "`sessionMode` must be authenticated or isolated"))
                    }
                }
                let action = match super::tools::navigation_target(url.trim()) {
                    Ok(direction) => b.tab_history(HistoryArgs {
                        operation_id: self.op(),
                        generation: self.current_generation()?,
                        direction,
                    })?,
                    Err(url) => b.tab_navigate(NavigateArgs {
                        operation_id: self.op(),
                        url,
                    })?,
                };
                self.after_action(action, Map::new())
            }
            "browser_navigate_back" => {
                let action = b.tab_history(HistoryArgs {
                    operation_id: self.op(),
                    generation: self.current_generation()?,
                    direction: HistoryDirection::Back,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_click" => {
                let t = a.target("target")?;
                let (generation, reference) = self.locate(&t)?;
                let action = b.page_click(ClickArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_type" => {
                let t = a.target("target")?;
                let text = a.str("text")?;
                let submit = a.opt_bool("submit")?.unwrap_or(false);
                let (generation, reference) = self.locate(&t)?;
                let action = b.page_type(TypeArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    text: text.to_string(),
                    submit,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_select_option" => {
                let t = a.target("target")?;
                let value = a.str("value")?;
                let (generation, reference) = self.locate(&t)?;
                let action = b.form_input(FormInputArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    value: value.to_string(),
                })?;
                self.after_action(action, Map::new())
            }
            "browser_check" | "browser_uncheck" => {
                let want = tool == "browser_check";
                let t = a.target("target")?;
                let obs = self.observe()?;
                let (generation, reference) = self.resolve(&t, &obs)?;
                let extra = self.set_checked(&obs, generation, &reference, want)?;
                match extra {
                    Some(action) => self.after_action(action, Map::new()),
                    None => {
                        let mut out = self.page_view(None, None)?;
                        out["changed"] = json!(false);
                        Ok(out)
                    }
                }
            }
            "browser_fill_form" => self.fill_form(tool, obj),
            "browser_press_key" => {
                let key = a.str("key")?;
                if super::keys::parse_chord(key).is_none() {
                    return Err(bad(tool, "`key` must be a key or a chord such as Control+A (modifiers Control, Shift, Alt, Meta, then one named key or printable ASCII character)"));
                }
                let action = b.page_chord(ChordArgs {
                    operation_id: self.op(),
                    generation: self.current_generation()?,
                    keys: key.to_string(),
                })?;
                self.after_action(action, Map::new())
            }
            "browser_wait_for" => self.wait_for(&a, run.cancel),
            "browser_handle_dialog" => {
                let accept = a
                    .opt_bool("accept")?
                    .ok_or_else(|| bad(tool, "`accept` is required"))?;
                let prompt_text = a.opt_str("promptText")?.map(str::to_string);
                let args = HandleDialogArgs {
                    accept,
                    prompt_text,
                };
                match b.handle_dialog(args.clone()) {
                    Ok(_) => {
                        *self.armed.lock() = None;
                        let mut out = self.page_view(None, None)?;
                        out["dialog"] =
                            json!({"handled": if accept { "accepted" } else { "dismissed" }});
                        Ok(out)
                    }
                    Err(Error::NoDialog) => {
                        *self.armed.lock() = Some(args);
                        Ok(json!({"armed": true, "accept": accept}))
                    }
                    Err(e) => Err(e),
                }
            }
            "browser_evaluate" => {
                let function = a.str("function")?;
                if function.trim().is_empty() {
                    return Err(bad(tool, "`function` must not be empty"));
                }
                let script = b.javascript(JavascriptArgs {
                    operation_id: self.op(),
                    code: format!("(\n{function}\n)()"),
                })?;
                Ok(json!({"page": script.value, "truncated": script.truncated}))
            }
            "browser_take_screenshot" => {
                let full_page = a.opt_bool("fullPage")?.unwrap_or(false);
                let shot = b.page_screenshot(ScreenshotArgs {
                    operation_id: Some(self.op()),
                    full_page,
                    region: None,
                })?;
                let media_type = format!("image/{}", shot.format);
                let mut out = json!({
                    "image": shot.data,
                    "mediaType": media_type,
                    "width": shot.width,
                    "height": shot.height,
                    "generation": shot.generation,
                });
                if let Some(sink) = run.screenshots {
                    let bytes =
                        data_encoding::BASE64
                            .decode(shot.data.as_bytes())
                            .map_err(|_| Error::ExecutionFailed {
                                reason: "the browser returned an image that is not base64".into(),
                            })?;
                    out["artifactId"] = json!(sink.store(&media_type, &bytes)?);
                }
                Ok(out)
            }
            "browser_tabs" => self.tabs(&a),
            "browser_mouse_click_xy" => {
                let x = a
                    .opt_num("x", 100_000.0)?
                    .ok_or_else(|| bad(tool, "`x` is required"))?;
                let y = a
                    .opt_num("y", 100_000.0)?
                    .ok_or_else(|| bad(tool, "`y` is required"))?;
                let action = b.mouse_click(MouseClickArgs {
                    operation_id: self.op(),
                    generation: self.current_generation()?,
                    x,
                    y,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_mouse_move_xy" => {
                let (x, y) = (a.num("x", 100_000.0)?, a.num("y", 100_000.0)?);
                let action = b.mouse_move(MouseMoveArgs {
                    operation_id: self.op(),
                    generation: self.current_generation()?,
                    x,
                    y,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_mouse_drag_xy" => {
                let from_x = a.num("startX", 100_000.0)?;
                let from_y = a.num("startY", 100_000.0)?;
                let to_x = a.num("endX", 100_000.0)?;
                let to_y = a.num("endY", 100_000.0)?;
                let action = b.mouse_drag(MouseDragArgs {
                    operation_id: self.op(),
                    generation: self.current_generation()?,
                    from_x,
                    from_y,
                    to_x,
                    to_y,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_hover" => {
                let t = a.target("target")?;
                let (generation, reference) = self.locate(&t)?;
                let action = b.page_hover(HoverArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_drag" => {
                let from = a.target("startTarget")?;
                let to = a.target("endTarget")?;
                let obs = match (&from, &to) {
                    (Target::Ref(_), Target::Ref(_)) => Observation::default(),
                    _ => self.observe()?,
                };
                let (generation, from_ref) = self.resolve(&from, &obs)?;
                let (to_generation, to_ref) = self.resolve(&to, &obs)?;
                if generation != to_generation {
                    // A ref of the last snapshot beside a selector of a page that changed since.
                    return Err(Error::StaleObservation {
                        cause: super::StaleCause::GenerationChanged,
                    });
                }
                let action = b.page_drag(DragArgs {
                    operation_id: self.op(),
                    generation,
                    from_ref,
                    to_ref,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_resize" => {
                let (width, height) = (a.side("width")?, a.side("height")?);
                let action = b.page_resize(ResizeArgs {
                    operation_id: self.op(),
                    width,
                    height,
                })?;
                self.after_action(action, Map::new())
            }
            "browser_console_messages" | "browser_network_requests" => self.journal(tool),
            "browser_file_upload" => {
                let workspace = workspace_of(tool, run)?;
                let t = a.target("target")?;
                let Some(Value::Array(items)) = obj.get("paths") else {
                    return Err(bad(tool, "`paths` must be an array of strings"));
                };
                if items.len() > MAX_UPLOAD {
                    return Err(bad(
                        tool,
                        format!("`paths` must have at most {MAX_UPLOAD} entries"),
                    ));
                }
                let mut paths = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let Value::String(p) = item else {
                        return Err(bad(tool, format!("`paths[{i}]` must be a string")));
                    };
                    let confined = super::files::confine_upload(workspace, p)
                        .map_err(|e| confined_error(tool, &format!("paths[{i}]"), e))?;
                    paths.push(confined.to_string_lossy().into_owned());
                }
                let (generation, reference) = self.locate(&t)?;
                let action = b.set_input_files(SetInputFilesArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    paths,
                })?;
                let mut extra = Map::new();
                extra.insert("uploaded".into(), json!(items.len()));
                self.after_action(action, extra)
            }
            "browser_download_files" => self.download_files(&a, run),
            _ => Err(Error::Internal {
                reason: "a listed managed tool has no executor arm".into(),
            }),
        }
    }

    /// Starts a new turn for `browser_console_messages` / `browser_network_requests`: the
    /// current tab's entries logged so far are no longer returned (see the type's
    /// documentation). Reads the tab's journal only; sends nothing to the page.
    pub fn begin_turn(&self) -> Result<()> {
        let tab = self.current_tab_id()?;
        let end = LogArgs {
            since: Some(u64::MAX),
            max: Some(0),
        };
        let console = self.backend.console_messages(end.clone())?.next;
        let network = self.backend.network_requests(end)?.next;
        self.marks.lock().insert(tab, LogMarks { console, network });
        Ok(())
    }

    fn current_tab_id(&self) -> Result<String> {
        self.backend
            .tabs(TabsArgs {
                action: TabsAction::List,
                tab_id: None,
                url: None,
            })?
            .tabs
            .into_iter()
            .find(|t| t.current)
            .map(|t| t.tab_id)
            .ok_or(Error::TabUnavailable)
    }

    /// `browser_console_messages` / `browser_network_requests`: the current tab's entries
    /// since its mark, all inside one envelope; the mark then moves past them.
    fn journal(&self, tool: &'static str) -> Result<Value> {
        let tab = self.current_tab_id()?;
        let mark = self.marks.lock().get(&tab).copied().unwrap_or_default();
        let console = tool == "browser_console_messages";
        let since = Some(if console { mark.console } else { mark.network });
        let args = LogArgs { since, max: None };
        let (lines, next, dropped): (Vec<String>, u64, u64) = if console {
            let log = self.backend.console_messages(args)?;
            let lines = log
                .messages
                .iter()
                .map(|m| match &m.url {
                    Some(u) => format!("[{}] {} ({u})", m.level, m.text),
                    None => format!("[{}] {}", m.level, m.text),
                })
                .collect();
            (lines, log.next, log.dropped)
        } else {
            let log = self.backend.network_requests(args)?;
            let lines = log
                .requests
                .iter()
                .map(|r| {
                    let outcome = match (r.status, r.failed) {
                        (_, true) => "failed".to_string(),
                        (Some(s), false) => s.to_string(),
                        (None, false) => "pending".to_string(),
                    };
                    format!("{} {} => {outcome} [{}]", r.method, r.url, r.resource_type)
                })
                .collect();
            (lines, log.next, log.dropped)
        };
        {
            let mut marks = self.marks.lock();
            let m = marks.entry(tab).or_default();
            let slot = if console {
                &mut m.console
            } else {
                &mut m.network
            };
            *slot = (*slot).max(next);
        }
        let body = if lines.is_empty() {
            "(none since this turn started)".to_string()
        } else {
            lines.join("\n")
        };
        Ok(json!({"count": lines.len(), "dropped": dropped, "page": wrap_text(&body)}))
    }

    /// `browser_download_files`: the tab's downloads (names are page-suggested, so inside the
    /// envelope) and, with `name`, that download saved into the workspace.
    fn download_files(&self, a: &Args<'_>, run: &ManagedRun<'_>) -> Result<Value> {
        let tool = a.tool;
        let workspace = workspace_of(tool, run)?;
        let name = a.opt_str("name")?;
        let save_as = a.opt_str("saveAs")?;
        if name.is_some_and(|n| n.trim().is_empty()) {
            return Err(bad(tool, "`name` must not be empty"));
        }
        if save_as.is_some() && name.is_none() {
            return Err(bad(tool, "`saveAs` needs `name`"));
        }
        let list = self.backend.downloads(DownloadsArgs {})?;
        let mut lines: Vec<String> = list
            .downloads
            .iter()
            .map(|d| format!("{} — {}, {} bytes", d.name, d.state, d.bytes))
            .collect();
        if lines.is_empty() {
            lines.push("(no downloads in this tab)".into());
        }
        let mut out = json!({"count": list.downloads.len()});
        if let Some(name) = name {
            let saver = run.downloads.ok_or_else(|| Error::BrowserUnavailable {
                reason: "this backend cannot save downloads into the workspace".into(),
            })?;
            let field = if save_as.is_some() { "saveAs" } else { "name" };
            let written = saver
                .save(name, workspace, save_as.unwrap_or(name))
                .map_err(|e| confined_error(tool, field, e))?;
            let root = workspace
                .canonicalize()
                .unwrap_or_else(|_| workspace.to_path_buf());
            let shown = written
                .strip_prefix(&root)
                .unwrap_or(&written)
                .to_string_lossy()
                .into_owned();
            lines.push(format!("saved into the workspace as: {shown}"));
            out["saved"] = json!(true);
        }
        out["page"] = json!(wrap_text(&lines.join("\n")));
        Ok(out)
    }

    /// Clicks a checkbox or radio when its state differs from `want`; `None` when it already
    /// is. `TARGET_NOT_FOUND` for an element without a checked state.
    fn set_checked(
        &self,
        obs: &Observation,
        generation: u64,
        reference: &str,
        want: bool,
    ) -> Result<Option<ActionResult>> {
        let control = Self::control(obs, generation, reference).ok_or(Error::StaleObservation {
            cause: super::StaleCause::GenerationChanged,
        })?;
        let Some(checked) = control.checked else {
            return Err(Error::TargetNotFound {
                reason: "the target is not a checkbox or radio".into(),
            });
        };
        if checked == want {
            return Ok(None);
        }
        Ok(Some(self.backend.page_click(ClickArgs {
            operation_id: self.op(),
            generation,
            reference: reference.to_string(),
        })?))
    }

    fn fill_form(&self, tool: &'static str, obj: &Map<String, Value>) -> Result<Value> {
        let Some(Value::Array(fields)) = obj.get("fields") else {
            return Err(bad(tool, "`fields` must be an array of {target, value}"));
        };
        if fields.is_empty() || fields.len() > MAX_FIELDS {
            return Err(bad(
                tool,
                format!("`fields` must have 1 to {MAX_FIELDS} entries"),
            ));
        }
        let mut parsed = Vec::with_capacity(fields.len());
        for (i, f) in fields.iter().enumerate() {
            let Value::Object(fo) = f else {
                return Err(bad(tool, format!("`fields[{i}]` must be an object")));
            };
            if fo.keys().any(|k| k != "target" && k != "value") {
                return Err(bad(
                    tool,
                    format!("`fields[{i}]` accepts only target and value"),
                ));
            }
            let t = match fo.get("target") {
                Some(Value::String(s)) => parse_target(s).ok_or_else(|| {
                    bad(
                        tool,
                        format!(
                            "`fields[{i}].target` must be a ref (e5) or css=…, role=… or text=…"
                        ),
                    )
                })?,
                _ => return Err(bad(tool, format!("`fields[{i}].target` must be a string"))),
            };
            let value = match fo.get("value") {
                Some(Value::String(s)) if s.chars().count() <= MAX_TEXT => s.clone(),
                Some(Value::Bool(v)) => v.to_string(),
                _ => {
                    return Err(bad(
                        tool,
                        format!("`fields[{i}].value` must be a string or a boolean"),
                    ))
                }
            };
            parsed.push((t, value));
        }
        let obs = self.observe()?;
        let mut resolved = Vec::with_capacity(parsed.len());
        for (i, (t, value)) in parsed.iter().enumerate() {
            let (generation, reference) = self.resolve(t, &obs).map_err(|e| match e {
                Error::TargetNotFound { reason } => Error::TargetNotFound {
                    reason: format!("fields[{i}]: {reason}"),
                },
                other => other,
            })?;
            resolved.push((generation, reference, value));
        }
        let mut last = None;
        for (i, (generation, reference, value)) in resolved.into_iter().enumerate() {
            let control =
                Self::control(&obs, generation, &reference).ok_or(Error::StaleObservation {
                    cause: super::StaleCause::GenerationChanged,
                })?;
            let action = if control.checked.is_some() {
                let want = match value.as_str() {
                    "true" | "on" | "checked" => true,
                    "false" | "off" | "unchecked" => false,
                    _ => {
                        return Err(bad(
                            tool,
                            format!(
                                "`fields[{i}].value` must be true or false for a checkbox or radio"
                            ),
                        ))
                    }
                };
                self.set_checked(&obs, generation, &reference, want)?
            } else if control.editable {
                Some(self.backend.page_type(TypeArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    text: value.clone(),
                    submit: false,
                })?)
            } else {
                Some(self.backend.form_input(FormInputArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    value: value.clone(),
                })?)
            };
            if let Some(a) = action {
                let dialog = a.dialog.is_some();
                last = Some(a);
                if dialog {
                    break;
                }
            }
        }
        let mut extra = Map::new();
        extra.insert("filled".into(), json!(fields.len()));
        match last {
            Some(a) => self.after_action(a, extra),
            None => {
                let mut out = self.page_view(None, None)?;
                out["filled"] = json!(fields.len());
                Ok(out)
            }
        }
    }

    fn wait_for(&self, a: &Args<'_>, cancel: Option<&CancelToken>) -> Result<Value> {
        let tool = a.tool;
        let text = a.opt_str("text")?;
        let gone = a.opt_str("textGone")?;
        let time = a.opt_num("time", WAIT_MAX.as_secs_f64())?;
        if text.is_some() && gone.is_some() {
            return Err(bad(tool, "give `text` or `textGone`, not both"));
        }
        if text.is_none() && gone.is_none() && time.is_none() {
            return Err(bad(tool, "give `text`, `textGone` or `time`"));
        }
        if text.or(gone).is_some_and(|t| t.trim().is_empty()) {
            return Err(bad(tool, "the text to wait for must not be empty"));
        }
        let span = match (text.or(gone), time) {
            (_, Some(secs)) => Duration::from_secs_f64(secs).min(WAIT_MAX),
            (Some(_), None) => WAIT_TEXT_DEFAULT,
            (None, None) => Duration::ZERO,
        };
        let start = self.clock.now();
        let deadline = start + span;
        let cancelled = || cancel.is_some_and(CancelToken::is_cancelled);
        let Some(needle) = text.or(gone) else {
            while self.nap(deadline, WAIT_POLL) {
                if cancelled() {
                    return Err(Error::Cancelled);
                }
            }
            let mut out = self.page_view(None, None)?;
            out["waited"] = json!((self.clock.now() - start).as_millis() as u64);
            return Ok(out);
        };
        let want_present = text.is_some();
        loop {
            if cancelled() {
                return Err(Error::Cancelled);
            }
            let page = self.settled(|| self.backend.get_text(GetTextArgs { max_chars: None }))?;
            if text_of(&page.text).contains(needle) == want_present {
                let mut out = self.page_view(None, None)?;
                out["waited"] = json!((self.clock.now() - start).as_millis() as u64);
                return Ok(out);
            }
            if !self.nap(deadline, WAIT_POLL) {
                return Err(Error::BrowserTimeout { timeout: span });
            }
        }
    }

    fn tabs(&self, a: &Args<'_>) -> Result<Value> {
        let tool = a.tool;
        let action = match a.str("action")? {
            "list" => TabsAction::List,
            "new" => TabsAction::New,
            "select" => TabsAction::Select,
            "close" => TabsAction::Close,
            _ => return Err(bad(tool, "`action` must be list, new, select or close")),
        };
        let index = match a.obj.get("index") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .ok_or_else(|| bad(tool, "`index` must be a whole number from 0"))?,
            ),
        };
        let url = a.opt_str("url")?;
        let list = |args: TabsArgs| self.backend.tabs(args);
        let tab_id = match action {
            TabsAction::Select | TabsAction::Close => {
                let Some(i) = index else {
                    return Err(bad(tool, "`index` is required to select or close a tab"));
                };
                let current = list(TabsArgs {
                    action: TabsAction::List,
                    tab_id: None,
                    url: None,
                })?;
                Some(
                    current
                        .tabs
                        .get(i)
                        .map(|t| t.tab_id.clone())
                        .ok_or(Error::TabUnavailable)?,
                )
            }
            _ => None,
        };
        let url = match (action, url) {
            (TabsAction::New, Some(u)) => match super::tools::navigation_target(u.trim()) {
                Err(u) => Some(u),
                Ok(_) => Some("about:blank".to_string()),
            },
            _ => None,
        };
        let after = list(TabsArgs {
            action,
            tab_id,
            url,
        })?;
        let lines: Vec<String> = after
            .tabs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "{i}:{} {} — {}",
                    if t.current { " (current)" } else { "" },
                    t.title,
                    t.url
                )
            })
            .collect();
        let current = after.tabs.iter().position(|t| t.current);
        let tabs = json!({"count": after.tabs.len(), "current": current, "tabs": wrap_text(&lines.join("\n"))});
        if action == TabsAction::List {
            return Ok(tabs);
        }
        *self.handed_out.lock() = None;
        if after.tabs.is_empty() {
            return Ok(tabs);
        }
        let mut out = self.page_view(None, None)?;
        out["tabs"] = tabs;
        Ok(out)
    }
}

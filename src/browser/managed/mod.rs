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
//! Layout: this file owns the executor's state and the steps every tool shares (resolving a
//! target, the page view, the answer after an action, settling reads) and dispatches a call on
//! its `ManagedTool` (parsed by the definitions of `defs.rs`) to one file per tool group —
//! `page.rs` (snapshot, evaluate, screenshot, console, network), `navigation.rs`, `input.rs`
//! (click, type, keys, hover, drag), `forms.rs`, `files.rs`, `dialogs.rs` (dialogs and waits),
//! `tabs.rs`, `xy.rs` (pixel coordinates and the viewport); `args.rs` reads the arguments,
//! `target.rs` parses targets.
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
//! Waits are bounded and on the backend's clock (R-CLK; a read that settles while a navigation
//! loads waits a grace, `crate::browser::settle`, so it ends on a clock nobody advances too),
//! and `browser_wait_for` stops when the call's [`CancelToken`] fires.

mod args;
mod defs;
mod dialogs;
mod files;
mod forms;
mod input;
mod navigation;
mod page;
mod tabs;
mod target;
mod xy;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

pub use defs::{managed_tool_definitions, managed_tool_definitions_for, DataHandling, ManagedCaps};

use super::backend::{
    ActionResult, BrowserBackend, HandleDialogArgs, LogArgs, ObserveArgs, ResolveCssArgs,
    SnapshotArgs, TabsAction, TabsArgs,
};
use crate::observation::{Control, Observation};
use crate::untrusted::wrap_text;
use crate::CancelToken;
use crate::{Error, Result};
use args::{bad, count_error, shown_name, text_of, Args};
use defs::ManagedTool;
use target::{matching, Target};

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
    /// `workspace` (`confine`: no `..`, no symlink out, never overwriting);
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
    /// The call's data handling: strict refuses the file and journal tools (`ACCESS_DENIED`)
    /// and authenticated mode, and stores no screenshot even with a sink.
    pub data_handling: DataHandling,
}

impl std::fmt::Debug for ManagedRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedRun")
            .field("caps", &self.caps)
            .field("workspace", &self.workspace.is_some())
            .field("screenshots", &self.screenshots.is_some())
            .field("data_handling", &self.data_handling)
            .finish()
    }
}

/// The tool `name` as `caps` and `data` handling serve it, with its definition:
/// `UNKNOWN_TOOL` outside the family or the caps, `ACCESS_DENIED` for a tool strict data
/// handling does not expose (seed 001: the file tools and the session journal tools).
pub(crate) fn served(
    name: &str,
    caps: ManagedCaps,
    data: DataHandling,
) -> Result<(ManagedTool, &'static defs::Def)> {
    let unknown = || Error::UnknownTool {
        tool: shown_name(name),
    };
    let tool = ManagedTool::from_name(name).ok_or_else(unknown)?;
    let def = defs::def(tool).ok_or_else(|| Error::Internal {
        reason: "a managed tool has no definition".into(),
    })?;
    if !caps.allows(def.needs) {
        return Err(unknown());
    }
    if !defs::exposed_in(def.needs, data) {
        return Err(Error::AccessDenied {
            reason: format!("{} is not available in strict data handling", def.name),
        });
    }
    Ok((tool, def))
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

    /// Runs a read, re-reading while a navigation is still loading (a grace of
    /// `crate::browser::settle` on the backend's clock).
    fn settled<T>(&self, read: impl FnMut() -> Result<T>) -> Result<T> {
        super::settle::settled(&*self.clock, read)
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
        let (tool, def) = served(name, run.caps, run.data_handling)?;
        let name = def.name;
        let empty = Map::new();
        let obj = match args {
            Value::Object(o) => o,
            Value::Null => &empty,
            _ => return Err(bad(name, "the arguments must be a JSON object")),
        };
        let accepted = defs::accepted(def);
        for key in obj.keys() {
            if !accepted.iter().any(|a| a == key) {
                return Err(bad(name, format!("unknown argument `{}`", shown_name(key))));
            }
        }
        let a = Args { tool: name, obj };
        match tool {
            ManagedTool::Snapshot => self.snapshot(&a),
            ManagedTool::Evaluate => self.evaluate(&a),
            ManagedTool::TakeScreenshot => self.take_screenshot(&a, run),
            ManagedTool::ConsoleMessages => self.journal(true),
            ManagedTool::NetworkRequests => self.journal(false),
            ManagedTool::Navigate => self.navigate(&a, run.data_handling),
            ManagedTool::NavigateBack => self.navigate_back(),
            ManagedTool::Click => self.click(&a),
            ManagedTool::Type => self.type_text(&a),
            ManagedTool::PressKey => self.press_key(&a),
            ManagedTool::Hover => self.hover(&a),
            ManagedTool::Drag => self.drag(&a),
            ManagedTool::FillForm => self.fill_form(&a),
            ManagedTool::SelectOption => self.select_option(&a),
            ManagedTool::Check => self.check(&a, true),
            ManagedTool::Uncheck => self.check(&a, false),
            ManagedTool::FileUpload => self.file_upload(&a, run),
            ManagedTool::DownloadFiles => self.download_files(&a, run),
            ManagedTool::HandleDialog => self.handle_dialog(&a),
            ManagedTool::WaitFor => self.wait_for(&a, run.cancel),
            ManagedTool::Tabs => self.tabs(&a),
            ManagedTool::MouseClickXy => self.mouse_click_xy(&a),
            ManagedTool::MouseMoveXy => self.mouse_move_xy(&a),
            ManagedTool::MouseDragXy => self.mouse_drag_xy(&a),
            ManagedTool::Resize => self.resize(&a),
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
}

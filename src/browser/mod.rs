//! Browser backends (SPEC §6): the backend trait shared by the local Chromium and the channel
//! worker, the local Chromium over the DevTools protocol and the snapshot view. Page text it
//! returns is wrapped by [`crate::untrusted::wrap_text`].
//!
//! This module owns nothing but the layout and the public names; each file's top comment says
//! what it owns and what it must never do.
//!
//! * [`BrowserBackend`] — one required method, `execute(&Command) -> Response`; typed helpers
//!   (`observe`, `snapshot`, `page_click`, …) are provided.
//! * [`Command`] / [`Response`] — serde enums whose JSON is the channel frame's `tool`/`args`
//!   and `result`.
//! * [`LocalBrowser`] / [`LocalTab`] — the embedded default: a headless Chromium started,
//!   driven and ended by jevgate.
//! * [`OperationRecord`] — what `operation_status` answers: a backend's bounded record of the
//!   operations it ran (`oplog.rs`; the local Chromium keeps the last 1,000 for its lifetime),
//!   read by reconciliation (issue 21 item 6).
//! * [`LocalSessions`] — one local Chromium per browser session of the lease manager (R-PROF),
//!   started on first use and closed when the session closes.
//! * `files.rs` (workspace path confinement for uploads and saved downloads) and `journal.rs`
//!   (the URL redaction of `network_requests`) are internal; tests reach them through
//!   `jevgate::unstable`.
//! * [`BrowserTools`] — the nine browser tools of R-DEV-TOOLS served from any backend (what
//!   the reference device worker runs).
//! * [`managed`] — the seed-001 managed tool family (issue 15): definitions for MCP and
//!   function calling, and [`managed::ManagedBrowser`], one executor per browser session
//!   (what [`crate::Gateway::browser_tool`] runs).

mod actions;
mod backend;
mod cdp;
mod extras;
pub(crate) mod files;
mod frame_walk;
mod frames;
pub(crate) mod journal;
mod keys;
mod launch;
mod local;
pub mod managed;
mod oplog;
mod sessions;
mod settle;
mod snapshot;
mod tab;
mod tools;
mod world;

pub use backend::{
    ActionResult, BrowserBackend, ChordArgs, ClickArgs, Command, FindArgs, FormInputArgs,
    FoundControls, GetTextArgs, HandleDialogArgs, HistoryArgs, JavascriptArgs, KeypressArgs,
    LeaseAction, MouseClickArgs, NavigateArgs, ObserveArgs, OperationOutcome, OperationRecord,
    OperationState, OperationStatusArgs, PageText, Rect, ResolveCssArgs, ResolvedRefs, Response,
    ScreenshotArgs, ScriptResult, ScrollArgs, Snapshot, SnapshotArgs, StaleCause, TabInfo,
    TabLeaseArgs, TabLeaseState, TabList, TabsAction, TabsArgs, TypeArgs,
};
// Issue 15 part B: the seed-001 tool family's primitives.
#[cfg(test)]
pub(crate) use backend::part_b_commands;
pub use backend::{
    ConsoleLog, ConsoleMessage, DownloadInfo, DownloadList, DownloadsArgs, DragArgs, HoverArgs,
    LogArgs, MouseDragArgs, MouseMoveArgs, NetworkLog, NetworkRequest, ResizeArgs,
    SetInputFilesArgs, MAX_VIEWPORT, MIN_VIEWPORT,
};
pub(crate) use launch::create_private_dir;
pub use launch::{find_chromium, LaunchOptions, DEFAULT_MAX_TABS, DEFAULT_MAX_UPLOAD_BYTES};
pub use local::{LocalBrowser, LocalTab};
pub use oplog::{check_operation_id, KEPT_OPERATIONS, MAX_OPERATION_ID_BYTES};
pub use sessions::LocalSessions;
pub use tools::BrowserTools;

/// JSON in, JSON out, for the C and Python surfaces: runs `{"tool": …, "args": …}` (a
/// [`Command`]) on `backend` and returns its typed result as JSON.
///
/// ```no_run
/// # use jevgate::browser::{execute_json, LaunchOptions, LocalBrowser};
/// let browser = LocalBrowser::launch(LaunchOptions::default())?;
/// let observation = execute_json(&browser, r#"{"tool":"observe","args":{}}"#)?;
/// # Ok::<(), jevgate::Error>(())
/// ```
pub fn execute_json(backend: &dyn BrowserBackend, command_json: &str) -> crate::Result<String> {
    let command: Command =
        serde_json::from_str(command_json).map_err(|_| crate::Error::InvalidArgument {
            name: "command",
            reason: "must be {\"tool\": …, \"args\": {…}} naming a browser command".into(),
        })?;
    let response = match &command {
        // The one reading of a record for every backend (validation, a foreign answer checked).
        Command::OperationStatus(a) => {
            Response::Operation(backend.operation_status(&a.operation_id)?)
        }
        _ => backend.execute(&command)?,
    };
    serde_json::to_string(&response).map_err(|_| crate::Error::Internal {
        reason: "could not encode a browser result".into(),
    })
}

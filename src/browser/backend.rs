//! The one browser backend trait of SPEC §6 and its JSON-friendly commands and results.
//!
//! This module owns the *shape* of every call a backend serves: the primitives of R-BRW-ACT
//! (each with its `operationId` and observed `generation`), what the nine tools of R-DEV-TOOLS
//! need, `observe` and `operation_status`. A command serializes exactly as the `tool`/`args`
//! pair of a channel frame (`{"type":"command","tool":"page_click","args":{…}}`), so the channel
//! backend of issue 7 is a thin serializer: send `serde_json::to_value(&command)`, read the
//! worker's `result`, and turn it back with [`Command::decode_result`]. It never talks to a
//! browser and never decides anything.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grammar::{HistoryDirection, Key, ScrollDirection};
use crate::observation::{Control, Dialog, Observation};
use crate::{Error, Result};

pub use super::oplog::{OperationOutcome, OperationRecord, OperationState};

pub use crate::reasons::StaleCause;

/// The `STALE_OBSERVATION` error with its cause.
pub(crate) fn stale(cause: StaleCause) -> Error {
    Error::StaleObservation { cause }
}

/// Arguments of `observe`.
///
/// ```
/// let a: jevgate::browser::ObserveArgs = serde_json::from_str("{}").unwrap();
/// assert_eq!(a.max_controls, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObserveArgs {
    /// At most this many controls (default 2,000); more sets `truncated.controls`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_controls: Option<usize>,
    /// At most this many characters of page text (default 20,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_text_chars: Option<usize>,
}

/// Arguments of `snapshot` (R-BRW-SNAP; the `browser_read_page` tool).
///
/// ```
/// let a: jevgate::browser::SnapshotArgs = serde_json::from_str(r#"{"region":"e4"}"#).unwrap();
/// assert_eq!(a.region.as_deref(), Some("e4"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SnapshotArgs {
    /// Only the subtree of this ref (of the current generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Character budget of the tree text (default 20,000, at most 30,000 as `read_page`: a
    /// larger value reads as 30,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// `page_click(ref)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClickArgs {
    /// Caller-chosen id of this operation; never reused.
    pub operation_id: String,
    /// The generation of the observation the ref comes from.
    pub generation: u64,
    /// The control's ref (`e5`).
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `page_type(ref, text, submit)`: replaces the field's content by `text`, then Enter when
/// `submit`, under one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// The field's ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The text to type.
    pub text: String,
    /// Press Enter after the text.
    #[serde(default)]
    pub submit: bool,
}

/// `page_keypress(key, count)` to the focused element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeypressArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// The key.
    pub key: Key,
    /// How many presses (1–20).
    #[serde(default = "one")]
    pub count: u32,
}

fn one() -> u32 {
    1
}

/// `page_scroll(direction)` by about one screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrollArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// Which way.
    pub direction: ScrollDirection,
}

/// `tab_navigate(url)` in the tab (http, https or `about:blank` only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigateArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The address.
    pub url: String,
}

/// `tab_history(back|forward)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// Which way.
    pub direction: HistoryDirection,
}

/// A rectangle in CSS pixels of the page viewport.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// `page_screenshot()`: the viewport, the whole page, or one region (the computer tool's zoom).
///
/// ```
/// let a: jevgate::browser::ScreenshotArgs = serde_json::from_str("{}").unwrap();
/// assert!(!a.full_page && a.region.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScreenshotArgs {
    /// Optional operation id (screenshots do not mutate; the id only names the record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The whole scrollable page instead of the viewport.
    pub full_page: bool,
    /// Only this region of the viewport.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<Rect>,
}

/// `operation_status(operationId)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationStatusArgs {
    /// The operation asked about.
    pub operation_id: String,
}

/// `tab_lease(acquire|release)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabLeaseArgs {
    /// Acquire or release.
    pub action: LeaseAction,
    /// The lease to release (from the acquire result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<String>,
}

/// What `tab_lease` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaseAction {
    /// Take the tab's lease (refused while another holder has it).
    Acquire,
    /// Give it back.
    Release,
}

/// `get_text` (the `browser_get_text` tool).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetTextArgs {
    /// At most this many characters (default 20,000, at most 30,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

/// `find` (the `browser_find` tool): controls whose name or role contains every word of
/// `query` (case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindArgs {
    /// The words to look for.
    pub query: String,
    /// At most this many matches (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<usize>,
}

/// `form_input` (the `browser_form_input` tool): sets a control's value with input/change
/// events (selects pick an option by value or label; checkboxes take `true`/`false`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormInputArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// The control's ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The value to set.
    pub value: String,
}

/// `javascript` (the `browser_javascript` tool): evaluates an expression in the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JavascriptArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// A JavaScript expression; a promise is awaited.
    pub code: String,
}

/// `mouse_click` (the computer tool's pixel-coordinate click, for surfaces without refs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MouseClickArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation (the screenshot's).
    pub generation: u64,
    /// Viewport x in CSS pixels.
    pub x: f64,
    /// Viewport y in CSS pixels.
    pub y: f64,
}

/// `tabs` (the `browser_tabs` tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabsArgs {
    /// What to do.
    pub action: TabsAction,
    /// The tab for `select` and `close`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<String>,
    /// The address a `new` tab opens (http, https or `about:blank`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// What `tabs` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TabsAction {
    /// List the tabs.
    List,
    /// Open a tab and make it current.
    New,
    /// Make a tab current.
    Select,
    /// Close a tab.
    Close,
}

/// `handle_dialog`: accept or dismiss the open JavaScript dialog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandleDialogArgs {
    /// Accept (OK) or dismiss (Cancel).
    pub accept: bool,
    /// The text a `prompt` answers with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}

/// `page_hover(ref)`: moves the real mouse over the element's centre (CSS `:hover`,
/// `mouseover`/`mouseenter` fire as for a user).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HoverArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// The element's ref.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `page_drag(from, to)`: a real drag with the left button from one element's centre to
/// another's (mouse down, moves, up; an HTML5 drag-and-drop the page starts is carried
/// through to its `drop`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DragArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation (both refs come from it).
    pub generation: u64,
    /// The element dragged.
    pub from_ref: String,
    /// The element dropped on.
    pub to_ref: String,
}

/// `mouse_move(x, y)`: moves the real mouse to a viewport point (no button).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MouseMoveArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation (the screenshot's).
    pub generation: u64,
    /// Viewport x in CSS pixels.
    pub x: f64,
    /// Viewport y in CSS pixels.
    pub y: f64,
}

/// `mouse_drag(from → to)`: a left-button drag between two viewport points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MouseDragArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation (the screenshot's).
    pub generation: u64,
    /// Start x (CSS pixels).
    pub from_x: f64,
    /// Start y.
    pub from_y: f64,
    /// End x.
    pub to_x: f64,
    /// End y.
    pub to_y: f64,
}

/// The smallest viewport side `page_resize` accepts.
pub const MIN_VIEWPORT: u32 = 200;
/// The largest viewport side `page_resize` accepts.
pub const MAX_VIEWPORT: u32 = 4096;

/// `page_resize(width, height)`: the tab's viewport in CSS pixels, each side
/// [`MIN_VIEWPORT`]`..=`[`MAX_VIEWPORT`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResizeArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// Viewport width.
    pub width: u32,
    /// Viewport height.
    pub height: u32,
}

/// `console_messages(since?)`: what the tab logged since a mark.
///
/// ```
/// let a: jevgate::browser::LogArgs = serde_json::from_str("{}").unwrap();
/// assert_eq!(a.since, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogArgs {
    /// Only entries at or after this mark (the `next` of an earlier answer); all kept when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// At most this many entries, the latest (default and maximum 200).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<usize>,
}

/// One console message or uncaught page error. `text` is untrusted page content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleMessage {
    /// Its mark (increasing per tab).
    pub seq: u64,
    /// `log`, `info`, `warning`, `error`, `debug` (uncaught exceptions are `error`).
    pub level: String,
    /// The message, at most 2,000 characters (untrusted page content).
    pub text: String,
    /// The script or resource it came from, token-bearing query values redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `console_messages` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleLog {
    /// The entries, oldest first.
    pub messages: Vec<ConsoleMessage>,
    /// The mark to pass as `since` next time.
    pub next: u64,
    /// Entries after `since` no longer kept (the buffer holds the latest 500) or over `max`.
    #[serde(default)]
    pub dropped: u64,
}

/// One request the page made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRequest {
    /// Its mark (increasing per tab).
    pub seq: u64,
    /// `GET`, `POST`, …
    pub method: String,
    /// The URL without userinfo, token-bearing query values redacted, at most 2,048 characters.
    pub url: String,
    /// The HTTP status, when a response came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `Document`, `Fetch`, `XHR`, `Script`, …
    pub resource_type: String,
    /// The request failed (network error, blocked, cancelled).
    #[serde(default)]
    pub failed: bool,
}

/// `network_requests` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkLog {
    /// The requests, oldest first.
    pub requests: Vec<NetworkRequest>,
    /// The mark to pass as `since` next time.
    pub next: u64,
    /// Entries after `since` no longer kept (the buffer holds the latest 500) or over `max`.
    #[serde(default)]
    pub dropped: u64,
}

/// `set_input_files(ref, paths)`: puts files into an `<input type=file>`. Each path is an
/// absolute path of a regular file on the machine that runs the browser, already confined by
/// the caller to its workspace (`confine_upload`); at most 16. The local
/// backend opens each without following any link on the way (a path through a link is
/// `INVALID_ARGUMENT`) and gives the page a private copy of what it opened, staged in the
/// session's owner-only directory and removed when the browser ends; a file over
/// [`crate::browser::LaunchOptions::max_upload_bytes`] (default 100 MiB) is `INVALID_ARGUMENT`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetInputFilesArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// The file input's ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The files (empty clears the input).
    pub paths: Vec<String>,
}

/// `downloads()` (no arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DownloadsArgs {}

/// One download of the tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadInfo {
    /// The file name the page suggested, reduced to a safe single name (untrusted).
    pub name: String,
    /// Bytes received so far.
    pub bytes: u64,
    /// `in_progress`, `completed` or `canceled`.
    pub state: String,
}

/// `downloads` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadList {
    /// The tab's downloads, oldest first (the latest 100).
    pub downloads: Vec<DownloadInfo>,
}

/// `page_chord`: one key or chord (`Control+A`, `Shift+Tab`, `Meta+L`, `Enter`, `a`) to the
/// focused element as real key events, modifiers held around the key (issue 15, seed 001
/// `browser_press_key`). Syntax: modifiers `Control`/`Ctrl`, `Shift`, `Alt`/`Option`,
/// `Meta`/`Cmd`/`Command`, joined by `+` before one key — a named key (`Enter`, `Tab`,
/// `Escape`, `Backspace`, `Delete`, `Arrow…`, `Home`, `End`, `PageUp`, `PageDown`, `Insert`,
/// `Space`, `F1`–`F12`) or one printable ASCII character. Case-insensitive names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChordArgs {
    /// Caller-chosen id of this operation.
    pub operation_id: String,
    /// The observed generation.
    pub generation: u64,
    /// The key or chord.
    pub keys: String,
}

/// `resolve_css`: the refs (of the observed generation, main document) of the interactive
/// elements a CSS selector matches, resolved in the page library's isolated world.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveCssArgs {
    /// The observed generation the refs must belong to.
    pub generation: u64,
    /// A CSS selector (`#go`, `form input[name=q]`).
    pub css: String,
}

/// `resolve_css` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedRefs {
    /// The generation the refs belong to.
    pub generation: u64,
    /// The refs of the matched interactive elements, in page order (at most 50).
    pub refs: Vec<String>,
    /// How many interactive elements matched (may exceed `refs.len()`).
    pub count: usize,
    /// How many elements matched at all, interactive or not.
    pub matched: usize,
}

/// One call to a backend. Serializes as the channel frame's `tool` and `args`.
///
/// ```
/// use jevgate::browser::{ClickArgs, Command};
/// let c = Command::PageClick(ClickArgs { operation_id: "op-1".into(), generation: 3, reference: "e5".into() });
/// assert_eq!(
///     serde_json::to_string(&c).unwrap(),
///     r#"{"tool":"page_click","args":{"operationId":"op-1","generation":3,"ref":"e5"}}"#
/// );
/// let back: Command = serde_json::from_str(r#"{"tool":"observe","args":{}}"#).unwrap();
/// assert_eq!(back.tool(), "observe");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tool", content = "args", rename_all = "snake_case")]
pub enum Command {
    /// Read the tab (R-BRW-OBS) → [`Response::Observation`].
    Observe(ObserveArgs),
    /// The snapshot view (R-BRW-SNAP) → [`Response::Snapshot`].
    Snapshot(SnapshotArgs),
    /// → [`Response::Action`].
    PageClick(ClickArgs),
    /// → [`Response::Action`].
    PageType(TypeArgs),
    /// → [`Response::Action`].
    PageKeypress(KeypressArgs),
    /// → [`Response::Action`].
    PageScroll(ScrollArgs),
    /// → [`Response::Action`].
    TabNavigate(NavigateArgs),
    /// → [`Response::Action`].
    TabHistory(HistoryArgs),
    /// → [`Response::Screenshot`].
    PageScreenshot(ScreenshotArgs),
    /// → [`Response::Operation`].
    OperationStatus(OperationStatusArgs),
    /// → [`Response::Lease`].
    TabLease(TabLeaseArgs),
    /// → [`Response::Text`].
    GetText(GetTextArgs),
    /// → [`Response::Found`].
    Find(FindArgs),
    /// → [`Response::Action`].
    FormInput(FormInputArgs),
    /// → [`Response::Script`].
    Javascript(JavascriptArgs),
    /// → [`Response::Action`].
    MouseClick(MouseClickArgs),
    /// → [`Response::Tabs`].
    Tabs(TabsArgs),
    /// → [`Response::Action`].
    HandleDialog(HandleDialogArgs),
    // Issue 15 part B (the seed-001 tool family's primitives), one block.
    /// → [`Response::Action`].
    PageHover(HoverArgs),
    /// → [`Response::Action`].
    PageDrag(DragArgs),
    /// → [`Response::Action`].
    MouseMove(MouseMoveArgs),
    /// → [`Response::Action`].
    MouseDrag(MouseDragArgs),
    /// → [`Response::Action`].
    PageResize(ResizeArgs),
    /// → [`Response::Console`].
    ConsoleMessages(LogArgs),
    /// → [`Response::Network`].
    NetworkRequests(LogArgs),
    /// → [`Response::Action`].
    SetInputFiles(SetInputFilesArgs),
    /// → [`Response::Downloads`].
    Downloads(DownloadsArgs),
    // Issue 15 part A (the managed tool family): keep these together at the end.
    /// → [`Response::Action`].
    PageChord(ChordArgs),
    /// → [`Response::Resolved`].
    ResolveCss(ResolveCssArgs),
}

impl Command {
    /// The tool name (`"page_click"`), as in the channel frame.
    pub fn tool(&self) -> &'static str {
        match self {
            Command::Observe(_) => "observe",
            Command::Snapshot(_) => "snapshot",
            Command::PageClick(_) => "page_click",
            Command::PageType(_) => "page_type",
            Command::PageKeypress(_) => "page_keypress",
            Command::PageScroll(_) => "page_scroll",
            Command::TabNavigate(_) => "tab_navigate",
            Command::TabHistory(_) => "tab_history",
            Command::PageScreenshot(_) => "page_screenshot",
            Command::OperationStatus(_) => "operation_status",
            Command::TabLease(_) => "tab_lease",
            Command::GetText(_) => "get_text",
            Command::Find(_) => "find",
            Command::FormInput(_) => "form_input",
            Command::Javascript(_) => "javascript",
            Command::MouseClick(_) => "mouse_click",
            Command::Tabs(_) => "tabs",
            Command::HandleDialog(_) => "handle_dialog",
            Command::PageHover(_) => "page_hover",
            Command::PageDrag(_) => "page_drag",
            Command::MouseMove(_) => "mouse_move",
            Command::MouseDrag(_) => "mouse_drag",
            Command::PageResize(_) => "page_resize",
            Command::ConsoleMessages(_) => "console_messages",
            Command::NetworkRequests(_) => "network_requests",
            Command::SetInputFiles(_) => "set_input_files",
            Command::Downloads(_) => "downloads",
            Command::PageChord(_) => "page_chord",
            Command::ResolveCss(_) => "resolve_css",
        }
    }

    /// The operation id a mutating command carries (`None` for reads).
    pub fn operation_id(&self) -> Option<&str> {
        match self {
            Command::PageClick(a) => Some(&a.operation_id),
            Command::PageType(a) => Some(&a.operation_id),
            Command::PageKeypress(a) => Some(&a.operation_id),
            Command::PageScroll(a) => Some(&a.operation_id),
            Command::TabNavigate(a) => Some(&a.operation_id),
            Command::TabHistory(a) => Some(&a.operation_id),
            Command::FormInput(a) => Some(&a.operation_id),
            Command::Javascript(a) => Some(&a.operation_id),
            Command::MouseClick(a) => Some(&a.operation_id),
            Command::PageChord(a) => Some(&a.operation_id),
            Command::PageScreenshot(a) => a.operation_id.as_deref(),
            Command::PageHover(a) => Some(&a.operation_id),
            Command::PageDrag(a) => Some(&a.operation_id),
            Command::MouseMove(a) => Some(&a.operation_id),
            Command::MouseDrag(a) => Some(&a.operation_id),
            Command::PageResize(a) => Some(&a.operation_id),
            Command::SetInputFiles(a) => Some(&a.operation_id),
            _ => None,
        }
    }

    /// Turns a backend's JSON result for this command back into its typed [`Response`] (what
    /// the channel backend does with a worker's `result`).
    ///
    /// ```
    /// use jevgate::browser::{Command, ObserveArgs, Response};
    /// let cmd = Command::Observe(ObserveArgs::default());
    /// let r = cmd.decode_result(serde_json::json!({"generation": 2, "url": "about:blank"})).unwrap();
    /// assert!(matches!(r, Response::Observation(o) if o.generation == 2));
    /// ```
    pub fn decode_result(&self, value: Value) -> Result<Response> {
        fn de<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
            serde_json::from_value(v).map_err(|e| Error::ExecutionFailed {
                reason: format!("malformed result: {}", Error::json_problem(&e)),
            })
        }
        Ok(match self {
            Command::Observe(_) => Response::Observation(de(value)?),
            Command::Snapshot(_) => Response::Snapshot(de(value)?),
            Command::PageScreenshot(_) => Response::Screenshot(de(value)?),
            Command::OperationStatus(_) => Response::Operation(de(value)?),
            Command::TabLease(_) => Response::Lease(de(value)?),
            Command::GetText(_) => Response::Text(de(value)?),
            Command::Find(_) => Response::Found(de(value)?),
            Command::Javascript(_) => Response::Script(de(value)?),
            Command::Tabs(_) => Response::Tabs(de(value)?),
            Command::ConsoleMessages(_) => Response::Console(de(value)?),
            Command::NetworkRequests(_) => Response::Network(de(value)?),
            Command::Downloads(_) => Response::Downloads(de(value)?),
            Command::ResolveCss(_) => Response::Resolved(de(value)?),
            _ => Response::Action(de(value)?),
        })
    }
}

/// What a mutating primitive did.
///
/// ```
/// let a: jevgate::browser::ActionResult = serde_json::from_str(
///     r#"{"operationId":"op-1","tool":"page_click","generationBefore":4}"#).unwrap();
/// assert!(!a.navigation_started && a.dialog.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionResult {
    /// The operation's id.
    pub operation_id: String,
    /// The primitive that ran.
    pub tool: String,
    /// The generation the action was checked against.
    pub generation_before: u64,
    /// A navigation started during the action (refs of `generation_before` are now stale).
    #[serde(default)]
    pub navigation_started: bool,
    /// For navigations: the new page finished loading before the call returned.
    #[serde(default)]
    pub settled: bool,
    /// A dialog the action opened (the action's result reports it; handle it next).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<Dialog>,
    /// What the browser did on its own since the last action result, said once each (jevgate's
    /// words, never page content): a page's further dialogs suppressed after it opened more
    /// than 20 within 5 s; a crashed tab replaced by a fresh one (issue 20 item 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The snapshot view: a compact YAML-like tree with `[ref=eN]` per interactive element,
/// wrapped in the untrusted envelope (R-BRW-SNAP, R-BRW-UNTRUSTED).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The generation whose refs the tree shows.
    pub generation: u64,
    /// The tab's URL.
    pub url: String,
    /// The page title.
    pub title: String,
    /// The tree text, inside the untrusted envelope. A cut tree ends with a line saying so
    /// (`[snapshot truncated at <shown> of <total> characters; …]`) and how to read the rest.
    pub text: String,
    /// The tree was cut to the character budget.
    #[serde(default)]
    pub truncated: bool,
    /// When cut: the length in characters of the whole tree text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_chars: Option<usize>,
}

/// A screenshot, JPEG, base64, under 150,000 characters (R-DEV-CAPS).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Screenshot {
    /// Always `"jpeg"`.
    pub format: String,
    /// Base64 image bytes.
    pub data: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// The JPEG quality used.
    pub quality: u32,
    /// The scale used (1.0 = CSS pixels).
    pub scale: f64,
    /// The generation current when it was taken.
    pub generation: u64,
}

/// `tab_lease` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabLeaseState {
    /// The tab is leased now.
    pub held: bool,
    /// The lease id (after acquire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<String>,
}

/// Page text (`get_text`), inside the untrusted envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageText {
    /// The generation it was read at.
    pub generation: u64,
    /// The wrapped text.
    pub text: String,
    /// Cut to the budget.
    #[serde(default)]
    pub truncated: bool,
}

/// `find` result: matching controls of one generation (names are untrusted page content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FoundControls {
    /// The generation the refs belong to.
    pub generation: u64,
    /// The matches, in page order.
    pub controls: Vec<Control>,
}

/// `javascript` result: the JSON-serialized value, inside the untrusted envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptResult {
    /// The operation's id.
    pub operation_id: String,
    /// The wrapped JSON text of the value (`undefined` → `null`).
    pub value: String,
    /// The JSON was longer than 20,000 characters and was cut.
    #[serde(default)]
    pub truncated: bool,
}

/// One tab of `tabs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabInfo {
    /// The tab's id.
    pub tab_id: String,
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// Commands go to this tab.
    pub current: bool,
}

/// `tabs` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabList {
    /// The tabs, in opening order.
    pub tabs: Vec<TabInfo>,
}

/// The typed result of a [`Command`]. Serializes as the bare result object (the channel
/// frame's `result`); [`Command::decode_result`] reads it back.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// From `observe`.
    Observation(Observation),
    /// From `snapshot`.
    Snapshot(Snapshot),
    /// From the mutating primitives and `handle_dialog`.
    Action(ActionResult),
    /// From `page_screenshot`.
    Screenshot(Screenshot),
    /// From `operation_status`.
    Operation(OperationRecord),
    /// From `tab_lease`.
    Lease(TabLeaseState),
    /// From `get_text`.
    Text(PageText),
    /// From `find`.
    Found(FoundControls),
    /// From `javascript`.
    Script(ScriptResult),
    /// From `tabs`.
    Tabs(TabList),
    /// From `console_messages`.
    Console(ConsoleLog),
    /// From `network_requests`.
    Network(NetworkLog),
    /// From `downloads`.
    Downloads(DownloadList),
    /// From `resolve_css`.
    Resolved(ResolvedRefs),
}

fn mismatch(tool: &str) -> Error {
    Error::Internal {
        reason: format!("backend answered {tool} with another result type"),
    }
}

macro_rules! typed_call {
    ($(#[$doc:meta])* $name:ident($args:ty) -> $variant:ident($out:ty) via $cmd:ident) => {
        $(#[$doc])*
        fn $name(&self, args: $args) -> Result<$out> {
            match self.execute(&Command::$cmd(args))? {
                Response::$variant(v) => Ok(v),
                _ => Err(mismatch(stringify!($name))),
            }
        }
    };
}

/// A browser backend (SPEC §6): the local Chromium ([`crate::browser::LocalBrowser`]) or a
/// paired worker over the channel. One required method; the typed helpers call it.
///
/// Every call blocks and returns within its deadline. Mutating primitives check the observed
/// generation first and refuse with `STALE_OBSERVATION` (cause [`StaleCause`]) rather than act
/// on a page that changed; a refused action sent nothing and is recorded as not executed.
///
/// ```no_run
/// use jevgate::browser::{BrowserBackend, ClickArgs, LaunchOptions, LocalBrowser, NavigateArgs};
/// let browser = LocalBrowser::launch(LaunchOptions::default())?;
/// browser.tab_navigate(NavigateArgs { operation_id: "op-1".into(), url: "http://127.0.0.1:8080/".into() })?;
/// let obs = browser.observe()?;
/// if let Some(button) = obs.controls.iter().find(|c| c.role == "button") {
///     browser.page_click(ClickArgs {
///         operation_id: "op-2".into(),
///         generation: obs.generation,
///         reference: button.reference.clone(),
///     })?;
/// }
/// browser.close();
/// # Ok::<(), jevgate::Error>(())
/// ```
pub trait BrowserBackend: Send + Sync {
    /// Runs one command.
    fn execute(&self, command: &Command) -> Result<Response>;

    /// The clock the backend's deadlines are on (R-CLK); the tools layered on it
    /// ([`crate::browser::BrowserTools`]) time their waits with it too. The system clock unless
    /// the backend has its own ([`crate::browser::LaunchOptions::clock`] for a local browser).
    fn clock(&self) -> crate::clock::SharedClock {
        crate::clock::system()
    }

    /// A line for the person watching this browser — an autopilot step, `Autopilot: <goal> —
    /// <step>` — or `None` when the run ends. A paired device shows it (the extension's popup,
    /// through the channel's `status` frame); a local browser has no one to show it to.
    fn show_progress(&self, _line: Option<&str>) {}

    /// A desktop helper's standard command (issue 25; seed 003 "Computer helper contract":
    /// `tab:new`, `tab:close`, `app:quit`, `address:focus`): `Ok(None)` when this backend does
    /// not offer `name` — every browser, and a computer whose last observation did not list it
    /// — else a fresh observation asked for it, which holds the command's control (ref
    /// `standard-tab-new`, `standard-app-quit`, …) to press when the helper sent it.
    fn observe_standard(&self, _name: &str) -> Result<Option<Observation>> {
        Ok(None)
    }

    /// `observe` with default budgets.
    fn observe(&self) -> Result<Observation> {
        self.observe_with(ObserveArgs::default())
    }

    typed_call!(
        /// `observe` with explicit budgets.
        observe_with(ObserveArgs) -> Observation(Observation) via Observe);
    typed_call!(
        /// The snapshot view.
        snapshot(SnapshotArgs) -> Snapshot(Snapshot) via Snapshot);
    typed_call!(
        /// `page_click`.
        page_click(ClickArgs) -> Action(ActionResult) via PageClick);
    typed_call!(
        /// `page_type`.
        page_type(TypeArgs) -> Action(ActionResult) via PageType);
    typed_call!(
        /// `page_keypress`.
        page_keypress(KeypressArgs) -> Action(ActionResult) via PageKeypress);
    typed_call!(
        /// `page_scroll`.
        page_scroll(ScrollArgs) -> Action(ActionResult) via PageScroll);
    typed_call!(
        /// `tab_navigate`.
        tab_navigate(NavigateArgs) -> Action(ActionResult) via TabNavigate);
    typed_call!(
        /// `tab_history`.
        tab_history(HistoryArgs) -> Action(ActionResult) via TabHistory);
    typed_call!(
        /// `page_screenshot`.
        page_screenshot(ScreenshotArgs) -> Screenshot(Screenshot) via PageScreenshot);
    /// What this backend's record says about operation `operation_id` (issue 21 item 6):
    /// `executed`, `not_executed` or `unknown`, with the primitive, the error code it ended with
    /// and when ([`OperationRecord`]; never arguments or page content). Never runs or replays
    /// anything, and needs no lease: it reads a record.
    ///
    /// `INVALID_ARGUMENT` for a malformed id ([`crate::browser::check_operation_id`]). The
    /// default asks [`BrowserBackend::execute`] with [`Command::OperationStatus`] and reads the
    /// answer with [`OperationRecord::from_answer`]: a backend that keeps no record (refuses the
    /// command) or answers something unreadable or about another operation reads `unknown`;
    /// `Err` only when the question could not be asked (a device offline, a browser gone).
    /// The local Chromium answers from its own record (the last 1,000 operations, for its own
    /// lifetime), even after its browser exited.
    fn operation_status(&self, operation_id: &str) -> Result<OperationRecord> {
        let id = super::oplog::check_operation_id(operation_id)?;
        let asked = self.execute(&Command::OperationStatus(OperationStatusArgs {
            operation_id: id.to_string(),
        }));
        match asked {
            Ok(Response::Operation(record)) => Ok(record.checked(id)),
            Ok(_) => Ok(OperationRecord::unknown(id)),
            Err(e) => OperationRecord::from_answer(id, Err(e)),
        }
    }
    typed_call!(
        /// `tab_lease`.
        tab_lease(TabLeaseArgs) -> Lease(TabLeaseState) via TabLease);
    typed_call!(
        /// `get_text`.
        get_text(GetTextArgs) -> Text(PageText) via GetText);
    typed_call!(
        /// `find`.
        find(FindArgs) -> Found(FoundControls) via Find);
    typed_call!(
        /// `form_input`.
        form_input(FormInputArgs) -> Action(ActionResult) via FormInput);
    typed_call!(
        /// `javascript`.
        javascript(JavascriptArgs) -> Script(ScriptResult) via Javascript);
    typed_call!(
        /// `mouse_click`.
        mouse_click(MouseClickArgs) -> Action(ActionResult) via MouseClick);
    typed_call!(
        /// `tabs`.
        tabs(TabsArgs) -> Tabs(TabList) via Tabs);
    typed_call!(
        /// `handle_dialog`.
        handle_dialog(HandleDialogArgs) -> Action(ActionResult) via HandleDialog);
    typed_call!(
        /// `page_hover`: the real mouse over a ref's element.
        page_hover(HoverArgs) -> Action(ActionResult) via PageHover);
    typed_call!(
        /// `page_drag`: a real drag from one ref's element to another's.
        page_drag(DragArgs) -> Action(ActionResult) via PageDrag);
    typed_call!(
        /// `mouse_move`: the real mouse to a viewport point.
        mouse_move(MouseMoveArgs) -> Action(ActionResult) via MouseMove);
    typed_call!(
        /// `mouse_drag`: a left-button drag between two viewport points.
        mouse_drag(MouseDragArgs) -> Action(ActionResult) via MouseDrag);
    typed_call!(
        /// `page_resize`: the tab's viewport size.
        page_resize(ResizeArgs) -> Action(ActionResult) via PageResize);
    typed_call!(
        /// `console_messages`: console messages and page errors since a mark.
        console_messages(LogArgs) -> Console(ConsoleLog) via ConsoleMessages);
    typed_call!(
        /// `network_requests`: the page's requests since a mark, secrets redacted.
        network_requests(LogArgs) -> Network(NetworkLog) via NetworkRequests);
    typed_call!(
        /// `set_input_files`: files into an `<input type=file>`.
        set_input_files(SetInputFilesArgs) -> Action(ActionResult) via SetInputFiles);
    typed_call!(
        /// `downloads`: the tab's downloads.
        downloads(DownloadsArgs) -> Downloads(DownloadList) via Downloads);
    typed_call!(
        /// `page_chord`.
        page_chord(ChordArgs) -> Action(ActionResult) via PageChord);
    typed_call!(
        /// `resolve_css`.
        resolve_css(ResolveCssArgs) -> Resolved(ResolvedRefs) via ResolveCss);
}

/// One of each command of issue 15 part B (for the round-trip tests here and elsewhere).
#[cfg(test)]
pub(crate) fn part_b_commands() -> Vec<Command> {
    vec![
        Command::PageHover(HoverArgs {
            operation_id: "pb1".into(),
            generation: 1,
            reference: "e1".into(),
        }),
        Command::PageDrag(DragArgs {
            operation_id: "pb2".into(),
            generation: 1,
            from_ref: "e1".into(),
            to_ref: "f1:e2".into(),
        }),
        Command::MouseMove(MouseMoveArgs {
            operation_id: "pb3".into(),
            generation: 1,
            x: 3.5,
            y: 4.0,
        }),
        Command::MouseDrag(MouseDragArgs {
            operation_id: "pb4".into(),
            generation: 1,
            from_x: 1.0,
            from_y: 2.0,
            to_x: 30.0,
            to_y: 40.0,
        }),
        Command::PageResize(ResizeArgs {
            operation_id: "pb5".into(),
            width: 800,
            height: 600,
        }),
        Command::ConsoleMessages(LogArgs {
            since: Some(3),
            max: None,
        }),
        Command::NetworkRequests(LogArgs::default()),
        Command::SetInputFiles(SetInputFilesArgs {
            operation_id: "pb6".into(),
            generation: 1,
            reference: "e4".into(),
            paths: vec!["/w/a.txt".into()],
        }),
        Command::Downloads(DownloadsArgs {}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Issue 15 part B: the new reads decode to their own result types.
    #[test]
    fn r_brw_act_part_b_results_decode_by_command() {
        let console = Command::ConsoleMessages(LogArgs::default());
        let r = console
            .decode_result(json!({"messages":[{"seq":1,"level":"error","text":"boom"}],"next":2}))
            .unwrap();
        assert!(matches!(r, Response::Console(c) if c.next == 2 && c.messages[0].level == "error"));
        let net = Command::NetworkRequests(LogArgs::default());
        let r = net
            .decode_result(json!({"requests":[{"seq":0,"method":"GET","url":"http://a/","status":200,"resourceType":"Fetch"}],"next":1}))
            .unwrap();
        assert!(matches!(r, Response::Network(n) if n.requests[0].status == Some(200)));
        let dl = Command::Downloads(DownloadsArgs {});
        let r = dl
            .decode_result(json!({"downloads":[{"name":"a.txt","bytes":5,"state":"completed"}]}))
            .unwrap();
        assert!(matches!(r, Response::Downloads(d) if d.downloads[0].bytes == 5));
        assert_eq!(
            Command::PageHover(HoverArgs {
                operation_id: "h".into(),
                generation: 1,
                reference: "e1".into()
            })
            .operation_id(),
            Some("h")
        );
        assert_eq!(Command::Downloads(DownloadsArgs {}).operation_id(), None);
    }

    // The channel frame's `tool`/`args` for every command round-trips (R-DEV-TOOLS, R-BRW-ACT).
    #[test]
    fn r_brw_act_every_command_round_trips_as_tool_and_args() {
        let commands = vec![
            Command::Observe(ObserveArgs {
                max_controls: Some(5),
                max_text_chars: None,
            }),
            Command::Snapshot(SnapshotArgs {
                region: Some("e2".into()),
                max_chars: Some(100),
            }),
            Command::PageClick(ClickArgs {
                operation_id: "a".into(),
                generation: 1,
                reference: "e1".into(),
            }),
            Command::PageType(TypeArgs {
                operation_id: "b".into(),
                generation: 1,
                reference: "e1".into(),
                text: "แมว".into(),
                submit: true,
            }),
            Command::PageKeypress(KeypressArgs {
                operation_id: "c".into(),
                generation: 1,
                key: Key::Tab,
                count: 2,
            }),
            Command::PageScroll(ScrollArgs {
                operation_id: "d".into(),
                generation: 1,
                direction: ScrollDirection::Down,
            }),
            Command::TabNavigate(NavigateArgs {
                operation_id: "e".into(),
                url: "https://example.com/".into(),
            }),
            Command::TabHistory(HistoryArgs {
                operation_id: "f".into(),
                generation: 1,
                direction: HistoryDirection::Back,
            }),
            Command::PageScreenshot(ScreenshotArgs {
                operation_id: None,
                full_page: true,
                region: None,
            }),
            Command::OperationStatus(OperationStatusArgs {
                operation_id: "a".into(),
            }),
            Command::TabLease(TabLeaseArgs {
                action: LeaseAction::Acquire,
                lease_id: None,
            }),
            Command::GetText(GetTextArgs {
                max_chars: Some(10),
            }),
            Command::Find(FindArgs {
                query: "sign in".into(),
                max_results: None,
            }),
            Command::FormInput(FormInputArgs {
                operation_id: "g".into(),
                generation: 1,
                reference: "e3".into(),
                value: "true".into(),
            }),
            Command::Javascript(JavascriptArgs {
                operation_id: "h".into(),
                code: "1+1".into(),
            }),
            Command::MouseClick(MouseClickArgs {
                operation_id: "i".into(),
                generation: 1,
                x: 1.5,
                y: 2.0,
            }),
            Command::Tabs(TabsArgs {
                action: TabsAction::List,
                tab_id: None,
                url: None,
            }),
            Command::HandleDialog(HandleDialogArgs {
                accept: false,
                prompt_text: None,
            }),
            Command::PageChord(ChordArgs {
                operation_id: "j".into(),
                generation: 1,
                keys: "Control+A".into(),
            }),
            Command::ResolveCss(ResolveCssArgs {
                generation: 1,
                css: "#go".into(),
            }),
        ];
        let commands = commands.into_iter().chain(part_b_commands());
        for c in commands {
            let v = serde_json::to_value(&c).unwrap();
            assert_eq!(v["tool"], c.tool());
            assert!(v["args"].is_object(), "{v}");
            let back: Command = serde_json::from_value(v).unwrap();
            assert_eq!(back, c);
        }
        let typed: Command = serde_json::from_value(
            json!({"tool":"page_keypress","args":{"operationId":"k","generation":3,"key":"Enter"}}),
        )
        .unwrap();
        assert_eq!(
            typed,
            Command::PageKeypress(KeypressArgs {
                operation_id: "k".into(),
                generation: 3,
                key: Key::Enter,
                count: 1
            })
        );
    }

    #[test]
    fn r_brw_act_results_decode_by_command_and_stale_causes_are_typed() {
        let click = Command::PageClick(ClickArgs {
            operation_id: "a".into(),
            generation: 1,
            reference: "e1".into(),
        });
        let r = click.decode_result(json!({"operationId":"a","tool":"page_click","generationBefore":1,"dialog":{"type":"alert","message":"hi"}})).unwrap();
        let Response::Action(a) = &r else {
            panic!("{r:?}")
        };
        assert_eq!(a.dialog.as_ref().unwrap().kind, "alert");
        assert_eq!(serde_json::to_value(&r).unwrap()["generationBefore"], 1);
        let bad = click.decode_result(json!({"nope": true})).unwrap_err();
        assert_eq!(bad.code(), "EXECUTION_FAILED");
        assert_eq!(bad.worker_code(), Some("execution_failed"));
        for (cause, code) in [
            (StaleCause::NavigationPending, "NAVIGATION_PENDING"),
            (StaleCause::GenerationChanged, "GENERATION_CHANGED"),
            (StaleCause::TargetObscured, "TARGET_OBSCURED"),
        ] {
            let err = Error::StaleObservation { cause };
            assert_eq!(err.code(), "STALE_OBSERVATION");
            assert_eq!(err.http_status(), 409);
            assert_eq!(err.stale_cause(), Some(cause));
            assert!(err.to_string().ends_with(code));
        }
    }
}

//! The nine browser tools of R-DEV-TOOLS served from any [`BrowserBackend`] — what the
//! reference device worker runs on its local Chromium, and what a host uses to put the same
//! tools on a browser it drives itself.
//!
//! This module owns the mapping from a tool call (`browser_computer {"action":"click","ref":"e5"}`)
//! to the backend's primitives of R-BRW-ACT and back to the raw result shapes the channel
//! protocol names (`{"text"}`, `{"value"}`, `{"image","mediaType"}`, any JSON for the rest).
//! Backend primitives (`page_click`, `observe`, …) are served as they are, so a worker speaks
//! both vocabularies. It trusts nothing: the gateway still enforces every cap and wraps every
//! result as untrusted content, so this module returns page text *unwrapped* (one envelope,
//! applied by the gateway). It never logs page content, typed text or field values.
//!
//! Reads (`browser_read_page`, `browser_get_text`, `browser_find`, the snapshot after an action)
//! wait, bounded, for a navigation in progress to finish loading instead of answering
//! `NAVIGATION_PENDING` to a model that cannot wait well by itself (`settle.rs`: a grace on the
//! backend's clock, shared with the managed family).
//!
//! Operations: `operation_status` reads the backend's record (`oplog.rs`), and a primitive the
//! worker's job loop answered `cancelled` before it reached the backend is noted here as not
//! executed ([`ToolExecutor::not_run`]) — the reference worker's record is its local Chromium's
//! plus those. Both live as long as the worker process.
//!
//! Refs: every result that shows refs (`browser_read_page`, `browser_find`, and the fresh
//! snapshot each mutating tool returns, R-BRW-SNAP) hands out one generation; a ref given back
//! is checked against the latest generation handed out, so a ref from a page that changed since
//! is refused (`STALE_OBSERVATION`), never applied to a different element.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::backend::{
    BrowserBackend, ClickArgs, Command, FindArgs, FormInputArgs, GetTextArgs, HistoryArgs,
    JavascriptArgs, KeypressArgs, MouseClickArgs, NavigateArgs, ObserveArgs, Rect, ScreenshotArgs,
    ScrollArgs, SnapshotArgs, TabsAction, TabsArgs, TypeArgs,
};
use super::oplog::{check_operation_id, OperationLog, OperationOutcome};
use super::snapshot::{truncation_note, Surface, NOTE_PREFIX};
use crate::device::{ToolExecutor, WorkerFailure};
use crate::grammar::{HistoryDirection, Key, ScrollDirection};
use crate::CancelToken;
use crate::Error;

/// The most screens one `scroll` action moves.
const MAX_SCROLL_SCREENS: u64 = 5;

/// Serves the nine browser tools (and the backend primitives) from a [`BrowserBackend`].
///
/// ```no_run
/// use std::sync::Arc;
/// use jevgate::browser::{BrowserTools, LaunchOptions, LocalBrowser};
/// let browser = LocalBrowser::launch(LaunchOptions::default())?;
/// let tools = BrowserTools::new(Arc::new(browser.clone()));
/// let page = tools.run("browser_navigate", &serde_json::json!({"url": "https://example.com"}));
/// assert!(page.is_ok());
/// browser.close();
/// # Ok::<(), jevgate::Error>(())
/// ```
pub struct BrowserTools {
    backend: Arc<dyn BrowserBackend>,
    /// The backend's clock (R-CLK): how long a read waits for a navigation to settle.
    clock: crate::clock::SharedClock,
    /// The generation whose refs were handed out last.
    handed_out: Mutex<Option<u64>>,
    ops: AtomicU64,
    prefix: String,
    /// Operations the worker's job loop answered `cancelled` before they reached the backend
    /// ([`ToolExecutor::not_run`]): not executed, read when the backend has no entry.
    never_ran: Mutex<OperationLog>,
}

impl std::fmt::Debug for BrowserTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserTools")
            .field("generation", &*self.handed_out.lock())
            .finish()
    }
}

/// A tool failure in the channel's worker vocabulary.
fn failure(e: &Error) -> WorkerFailure {
    let code = e.code();
    if let Some(worker) = e.worker_code() {
        return WorkerFailure::new(worker, e.to_string());
    }
    if matches!(e, Error::BrowserUnavailable { .. }) {
        return WorkerFailure::new("debugger_unavailable", e.to_string());
    }
    // The gateway passes worker codes through and maps others to `execution_failed`; the
    // browser's own code leads the message so a model can tell a stale ref from a broken page.
    WorkerFailure::new("execution_failed", format!("{code}: {e}"))
}

fn refused(message: &str) -> WorkerFailure {
    WorkerFailure::new("execution_failed", message)
}

fn text_of(wrapped: &str) -> String {
    crate::untrusted::unwrap_text(wrapped)
        .unwrap_or(wrapped)
        .to_string()
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A key name of the computer tool's `key` action (one key; no chords).
fn parse_key(text: &str) -> Option<Key> {
    let lower = text.trim().to_ascii_lowercase();
    Some(match lower.as_str() {
        "enter" | "return" => Key::Enter,
        "tab" => Key::Tab,
        "escape" | "esc" => Key::Escape,
        "backspace" => Key::Backspace,
        "arrowup" | "up" => Key::ArrowUp,
        "arrowdown" | "down" => Key::ArrowDown,
        "arrowleft" | "left" => Key::ArrowLeft,
        "arrowright" | "right" => Key::ArrowRight,
        _ => return None,
    })
}

/// `url` as the backend opens it: `back`/`forward` are history, a bare domain (`example.com`,
/// `localhost:3000/x`) gets `https://`. An address with another scheme (`file:`,
/// `javascript:`, `chrome:`, `data:` …) is passed as it is, so the backend refuses it — never
/// turned into an `https://file:///…` that would open a tab.
pub(super) fn navigation_target(url: &str) -> Result<HistoryDirection, String> {
    match url {
        "back" => Ok(HistoryDirection::Back),
        "forward" => Ok(HistoryDirection::Forward),
        _ if has_scheme(url.trim()) => Err(url.to_string()),
        _ => Err(format!("https://{url}")),
    }
}

/// `scheme:` before any `/`, `?` or `#`, where what follows the colon is not a port number.
fn has_scheme(url: &str) -> bool {
    let Some(colon) = url.find(':') else {
        return false;
    };
    let scheme = &url[..colon];
    let valid = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let port = url[colon + 1..]
        .split(['/', '?', '#'])
        .next()
        .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    valid && !port
}

impl BrowserTools {
    /// Serves tools from `backend` (a [`crate::browser::LocalBrowser`], a tab, or any other
    /// backend).
    pub fn new(backend: Arc<dyn BrowserBackend>) -> BrowserTools {
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        BrowserTools {
            clock: backend.clock(),
            backend,
            handed_out: Mutex::new(None),
            ops: AtomicU64::new(0),
            prefix: format!("tool-{}-{n}", std::process::id()),
            never_ran: Mutex::new(OperationLog::default()),
        }
    }

    /// Runs a read, re-reading while a navigation is still loading ([`super::settle`]).
    fn settled<T>(&self, read: impl FnMut() -> crate::Result<T>) -> Result<T, WorkerFailure> {
        super::settle::settled(&*self.clock, read).map_err(|e| failure(&e))
    }

    fn op(&self) -> String {
        format!(
            "{}-{}",
            self.prefix,
            self.ops.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    fn hand_out(&self, generation: u64) {
        *self.handed_out.lock() = Some(generation);
    }

    /// The generation the caller's refs belong to.
    fn ref_generation(&self) -> Result<u64, WorkerFailure> {
        self.handed_out.lock().ok_or_else(|| {
            refused(
                "no refs handed out yet: read the page first (browser_read_page or browser_find)",
            )
        })
    }

    /// The current generation, for actions that name no ref (coordinates, keys, scrolling).
    fn current_generation(&self) -> Result<(u64, Option<String>), WorkerFailure> {
        let obs = self.settled(|| {
            self.backend.observe_with(ObserveArgs {
                max_controls: Some(1),
                max_text_chars: Some(1),
            })
        })?;
        Ok((obs.generation, obs.focus))
    }

    fn snapshot(&self, max_chars: Option<usize>) -> Result<Value, WorkerFailure> {
        let snap = self.settled(|| {
            self.backend.snapshot(SnapshotArgs {
                region: None,
                max_chars,
            })
        })?;
        self.hand_out(snap.generation);
        let mut text = text_of(&snap.text);
        if let Some(total) = snap.total_chars.filter(|_| snap.truncated) {
            // The backend's note names its own options; the tool's reader gets the tool's.
            let body = match text.rfind('\n') {
                Some(at) if text[at + 1..].starts_with(NOTE_PREFIX) => &text[..at],
                _ if text.starts_with(NOTE_PREFIX) => "",
                _ => text.as_str(),
            };
            let shown = body.chars().count();
            let note = truncation_note(shown, total, Surface::Tool);
            text = if body.is_empty() {
                note
            } else {
                format!("{body}\n{note}")
            };
        }
        Ok(json!({
            "generation": snap.generation,
            "url": snap.url,
            "title": snap.title,
            "text": text,
            "truncated": snap.truncated,
        }))
    }

    /// A mutating tool's answer: what happened, then the fresh snapshot (R-BRW-SNAP).
    fn after_action(&self, action: super::backend::ActionResult) -> Result<Value, WorkerFailure> {
        let mut out = json!({
            "operationId": action.operation_id,
            "navigationStarted": action.navigation_started,
            "settled": action.settled,
        });
        if !action.notes.is_empty() {
            out["notes"] = json!(action.notes);
        }
        if let Some(dialog) = action.dialog {
            // A dialog blocks the page: no snapshot until it is handled.
            out["dialog"] = json!(dialog);
            return Ok(out);
        }
        match self.snapshot(None) {
            Ok(snap) => out["snapshot"] = snap,
            Err(f) => out["snapshotError"] = json!(f.message),
        }
        Ok(out)
    }

    /// Makes the tab at `index` (of `browser_tabs list`) current.
    fn select_tab(&self, index: u64) -> Result<(), WorkerFailure> {
        let list = self
            .backend
            .tabs(TabsArgs {
                action: TabsAction::List,
                tab_id: None,
                url: None,
            })
            .map_err(|e| failure(&e))?;
        let tab = usize::try_from(index)
            .ok()
            .and_then(|i| list.tabs.get(i))
            .ok_or_else(|| WorkerFailure::new("tab_unavailable", "no tab with that tabId"))?;
        if !tab.current {
            self.backend
                .tabs(TabsArgs {
                    action: TabsAction::Select,
                    tab_id: Some(tab.tab_id.clone()),
                    url: None,
                })
                .map_err(|e| failure(&e))?;
            *self.handed_out.lock() = None;
        }
        Ok(())
    }

    fn tab_list(&self, action: TabsAction, args: &Value) -> Result<Value, WorkerFailure> {
        let list = |a: TabsArgs| self.backend.tabs(a).map_err(|e| failure(&e));
        let current = list(TabsArgs {
            action: TabsAction::List,
            tab_id: None,
            url: None,
        })?;
        let by_index = |key: &str| -> Result<Option<String>, WorkerFailure> {
            match args.get(key).and_then(Value::as_u64) {
                None => Ok(None),
                Some(i) => usize::try_from(i)
                    .ok()
                    .and_then(|i| current.tabs.get(i))
                    .map(|t| Some(t.tab_id.clone()))
                    .ok_or_else(|| WorkerFailure::new("tab_unavailable", "no tab with that tabId")),
            }
        };
        let after = match action {
            TabsAction::List => current.clone(),
            TabsAction::New => {
                let url = str_arg(args, "url").map(|u| match navigation_target(u) {
                    Err(url) => url,
                    Ok(_) => "about:blank".to_string(),
                });
                list(TabsArgs {
                    action: TabsAction::New,
                    tab_id: None,
                    url,
                })?
            }
            TabsAction::Select | TabsAction::Close => {
                let Some(tab_id) = by_index("tabId")? else {
                    return Err(refused("`tabId` is required to switch or close a tab"));
                };
                list(TabsArgs {
                    action,
                    tab_id: Some(tab_id),
                    url: None,
                })?
            }
        };
        if action != TabsAction::List {
            *self.handed_out.lock() = None;
        }
        let tabs: Vec<Value> = after
            .tabs
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"tabId": i, "url": t.url, "title": t.title, "current": t.current}))
            .collect();
        Ok(json!({ "tabs": tabs }))
    }

    fn computer(&self, args: &Value) -> Result<Value, WorkerFailure> {
        let b = &self.backend;
        match str_arg(args, "action").unwrap_or("") {
            "click" => {
                let action = if let Some(reference) = str_arg(args, "ref") {
                    b.page_click(ClickArgs {
                        operation_id: self.op(),
                        generation: self.ref_generation()?,
                        reference: reference.to_string(),
                    })
                } else if let Some([x, y]) = args
                    .get("coordinate")
                    .and_then(Value::as_array)
                    .and_then(|a| <&[Value; 2]>::try_from(a.as_slice()).ok())
                {
                    let (generation, _) = self.current_generation()?;
                    b.mouse_click(MouseClickArgs {
                        operation_id: self.op(),
                        generation,
                        x: x.as_f64().unwrap_or(-1.0),
                        y: y.as_f64().unwrap_or(-1.0),
                    })
                } else {
                    return Err(refused("click needs a `ref` or a `coordinate`"));
                };
                self.after_action(action.map_err(|e| failure(&e))?)
            }
            "type" => {
                let text = str_arg(args, "text").unwrap_or("");
                let (generation, reference) = match str_arg(args, "ref") {
                    Some(r) => (self.ref_generation()?, r.to_string()),
                    None => match self.current_generation()? {
                        (g, Some(focus)) => (g, focus),
                        (_, None) => return Err(refused(
                            "FOCUS_REQUIRED: no field has keyboard focus; pass the field's `ref`",
                        )),
                    },
                };
                let action = b
                    .page_type(TypeArgs {
                        operation_id: self.op(),
                        generation,
                        reference,
                        text: text.to_string(),
                        submit: false,
                    })
                    .map_err(|e| failure(&e))?;
                self.after_action(action)
            }
            "key" => {
                let Some(key) = str_arg(args, "text").and_then(parse_key) else {
                    return Err(refused(
                        "unsupported key: one of Enter, Tab, Escape, Backspace, ArrowUp, ArrowDown, ArrowLeft, ArrowRight (no combinations)",
                    ));
                };
                let (generation, _) = self.current_generation()?;
                let action = b
                    .page_keypress(KeypressArgs {
                        operation_id: self.op(),
                        generation,
                        key,
                        count: 1,
                    })
                    .map_err(|e| failure(&e))?;
                self.after_action(action)
            }
            "scroll" => {
                let direction = match str_arg(args, "scroll_direction").unwrap_or("down") {
                    "up" => ScrollDirection::Up,
                    "down" => ScrollDirection::Down,
                    _ => return Err(refused("only up and down scrolling is supported")),
                };
                let screens = args
                    .get("scroll_amount")
                    .and_then(Value::as_u64)
                    .unwrap_or(1)
                    .clamp(1, MAX_SCROLL_SCREENS);
                let mut last = None;
                for n in 0..screens {
                    let (generation, _) = self.current_generation()?;
                    match b.page_scroll(ScrollArgs {
                        operation_id: self.op(),
                        generation,
                        direction,
                    }) {
                        Ok(a) => last = Some(a),
                        // Reaching the end after moving is not a failure.
                        Err(Error::ScrollLimit) if n > 0 => break,
                        Err(e) => return Err(failure(&e)),
                    }
                }
                match last {
                    Some(a) => self.after_action(a),
                    None => Err(refused("nothing scrolled")),
                }
            }
            action @ ("screenshot" | "zoom") => {
                let region =
                    if action == "zoom" {
                        let r: Vec<f64> = args
                            .get("region")
                            .and_then(Value::as_array)
                            .map(|a| a.iter().filter_map(Value::as_f64).collect())
                            .unwrap_or_default();
                        match r.as_slice() {
                            [x0, y0, x1, y1] if x1 > x0 && y1 > y0 => Some(Rect {
                                x: *x0,
                                y: *y0,
                                width: x1 - x0,
                                height: y1 - y0,
                            }),
                            _ => return Err(refused(
                                "zoom needs a `region` [x0, y0, x1, y1] with x1 > x0 and y1 > y0",
                            )),
                        }
                    } else {
                        None
                    };
                let shot = b
                    .page_screenshot(ScreenshotArgs {
                        operation_id: Some(self.op()),
                        full_page: false,
                        region,
                    })
                    .map_err(|e| failure(&e))?;
                Ok(json!({
                    "image": shot.data,
                    "mediaType": format!("image/{}", shot.format),
                    "width": shot.width,
                    "height": shot.height,
                    "generation": shot.generation,
                }))
            }
            _ => Err(refused(
                "unknown action: one of click, type, key, scroll, screenshot, zoom",
            )),
        }
    }

    /// Runs one tool (or backend primitive) and returns its raw result in the channel
    /// protocol's shape. Never panics on any `args`.
    pub fn run(&self, tool: &str, args: &Value) -> Result<Value, WorkerFailure> {
        let b = &self.backend;
        if let Some(tab) = args.get("tabId").and_then(Value::as_u64) {
            if tool != "browser_tabs" {
                self.select_tab(tab)?;
            }
        }
        match tool {
            "browser_navigate" => {
                let url = str_arg(args, "url").unwrap_or("");
                let action = match navigation_target(url) {
                    Ok(direction) => {
                        let (generation, _) = self.current_generation()?;
                        b.tab_history(HistoryArgs {
                            operation_id: self.op(),
                            generation,
                            direction,
                        })
                    }
                    Err(url) => b.tab_navigate(NavigateArgs {
                        operation_id: self.op(),
                        url,
                    }),
                }
                .map_err(|e| failure(&e))?;
                self.after_action(action)
            }
            "browser_read_page" => {
                let max = args
                    .get("max_chars")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize);
                if str_arg(args, "filter") == Some("interactive") {
                    let obs = self.settled(|| b.observe())?;
                    self.hand_out(obs.generation);
                    let lines: Vec<String> = obs
                        .controls
                        .iter()
                        .map(|c| format!("- {} {:?} [ref={}]", c.role, c.name, c.reference))
                        .collect();
                    return Ok(json!({
                        "generation": obs.generation,
                        "url": obs.url,
                        "title": obs.title,
                        "text": lines.join("\n"),
                        "truncated": obs.truncated.controls,
                    }));
                }
                self.snapshot(max)
            }
            "browser_get_text" => {
                let max_chars = args
                    .get("max_chars")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize);
                let text = self.settled(|| b.get_text(GetTextArgs { max_chars }))?;
                Ok(json!({
                    "generation": text.generation,
                    "text": text_of(&text.text),
                    "truncated": text.truncated,
                }))
            }
            "browser_find" => {
                let query = str_arg(args, "query").unwrap_or("").to_string();
                let found = self.settled(|| {
                    b.find(FindArgs {
                        query: query.clone(),
                        max_results: Some(20),
                    })
                })?;
                self.hand_out(found.generation);
                Ok(json!({"generation": found.generation, "matches": found.controls}))
            }
            "browser_computer" => self.computer(args),
            "browser_form_input" => {
                let value = match args.get("value") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Bool(v)) => v.to_string(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => return Err(refused("`value` must be a string, boolean or number")),
                };
                let action = b
                    .form_input(FormInputArgs {
                        operation_id: self.op(),
                        generation: self.ref_generation()?,
                        reference: str_arg(args, "ref").unwrap_or("").to_string(),
                        value,
                    })
                    .map_err(|e| failure(&e))?;
                self.after_action(action)
            }
            "browser_javascript" => {
                let script = b
                    .javascript(JavascriptArgs {
                        operation_id: self.op(),
                        code: str_arg(args, "code").unwrap_or("").to_string(),
                    })
                    .map_err(|e| failure(&e))?;
                let json_text = text_of(&script.value);
                let value = serde_json::from_str(&json_text).unwrap_or(Value::String(json_text));
                Ok(json!({ "value": value }))
            }
            "browser_tabs" => {
                let action = match str_arg(args, "action").unwrap_or("list") {
                    "list" => TabsAction::List,
                    "create" => TabsAction::New,
                    "switch" => TabsAction::Select,
                    "close" => TabsAction::Close,
                    _ => {
                        return Err(refused(
                            "unknown action: one of list, create, switch, close",
                        ))
                    }
                };
                self.tab_list(action, args)
            }
            "browser_batch" => Err(refused(
                "browser_batch is run by the gateway one action at a time",
            )),
            "operation_status" => {
                // The backend's record, read the one way every surface reads it (issue 21
                // item 6): a malformed id is INVALID_ARGUMENT, never a question.
                let id = str_arg(args, "operationId").unwrap_or("");
                let mut record = b.operation_status(id).map_err(|e| failure(&e))?;
                if record.outcome == OperationOutcome::NotRecorded {
                    let never_ran = self.never_ran.lock().status(id);
                    if never_ran.outcome == OperationOutcome::Refused {
                        record = never_ran;
                    }
                }
                serde_json::to_value(&record)
                    .map_err(|_| refused("the result could not be serialized"))
            }
            primitive => {
                let command: Command =
                    serde_json::from_value(json!({"tool": primitive, "args": args})).map_err(
                        |_| refused("unknown tool, or its arguments do not match the primitive"),
                    )?;
                let response = b.execute(&command).map_err(|e| failure(&e))?;
                serde_json::to_value(&response)
                    .map_err(|_| refused("the result could not be serialized"))
            }
        }
    }
}

impl ToolExecutor for BrowserTools {
    /// Runs the tool. A browser primitive is short and is not interrupted once started (its
    /// outcome would be unknown); the backend's own per-call timeouts bound it. A command
    /// cancelled before it started never gets here: the worker's job loop answers it.
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        self.run(tool, args)
    }

    /// A primitive with an `operationId` that never reached the backend is recorded not
    /// executed (issue 21 item 6); anything else carries no operation to record.
    fn not_run(&self, tool: &str, args: &Value) {
        let Ok(command) = serde_json::from_value::<Command>(json!({"tool": tool, "args": args}))
        else {
            return;
        };
        let Some(id) = command.operation_id() else {
            return;
        };
        if check_operation_id(id).is_err() {
            return;
        }
        let at = self.clock.wall_millis();
        let mut log = self.never_ran.lock();
        if log.begin(id, command.tool(), at) {
            log.finish(id, OperationOutcome::Refused, None, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_navigation_targets() {
        assert_eq!(parse_key(" Return "), Some(Key::Enter));
        assert_eq!(parse_key("ArrowDown"), Some(Key::ArrowDown));
        assert_eq!(parse_key("ctrl+a"), None);
        assert_eq!(navigation_target("back"), Ok(HistoryDirection::Back));
        assert_eq!(
            navigation_target("example.com/a"),
            Err("https://example.com/a".to_string())
        );
        assert_eq!(
            navigation_target("HTTP://x.test/"),
            Err("HTTP://x.test/".to_string())
        );
        // Another scheme is kept as it is (the backend refuses it), never made https://file:…
        for other in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "chrome://settings",
            "data:text/html,hi",
            "view-source:http://x.test/",
            "about:config",
        ] {
            assert_eq!(navigation_target(other), Err(other.to_string()), "{other}");
        }
        // A bare host with a port is still a bare host.
        assert_eq!(
            navigation_target("localhost:3000/x"),
            Err("https://localhost:3000/x".to_string())
        );
        assert_eq!(
            navigation_target("example.com:8443"),
            Err("https://example.com:8443".to_string())
        );
    }

    /// A backend that keeps no record (and runs nothing).
    struct NoRecord;

    impl BrowserBackend for NoRecord {
        fn execute(&self, _command: &Command) -> crate::Result<super::super::Response> {
            Err(Error::ExecutionFailed {
                reason: "not here".into(),
            })
        }
    }

    // Issue 21 item 6: a primitive the worker's job loop answered `cancelled` before it ran is
    // not executed in the worker's record; anything without an operation id is not recorded.
    #[test]
    fn issue21_a_command_that_never_ran_is_not_executed_in_the_workers_record() {
        let tools = BrowserTools::new(Arc::new(NoRecord));
        let click = json!({"operationId": "q1", "generation": 1, "ref": "e1"});
        tools.not_run("page_click", &click);
        tools.not_run("browser_get_text", &json!({}));
        tools.not_run(
            "page_click",
            &json!({"operationId": "", "generation": 1, "ref": "e1"}),
        );
        tools.not_run("page_click", &json!("garbage"));
        let status = |id: &str| {
            tools
                .run("operation_status", &json!({ "operationId": id }))
                .unwrap()
        };
        let q1 = status("q1");
        assert_eq!(q1["status"], "not_executed", "{q1}");
        assert_eq!(q1["outcome"], "refused");
        assert_eq!(q1["tool"], "page_click");
        assert_eq!(status("q2")["status"], "unknown");
        let bad = tools
            .run("operation_status", &json!({"operationId": "x".repeat(201)}))
            .unwrap_err();
        assert!(
            bad.message.starts_with("INVALID_ARGUMENT"),
            "{}",
            bad.message
        );
    }

    #[test]
    fn browser_errors_map_to_worker_codes_without_page_content() {
        assert_eq!(failure(&Error::TabUnavailable).code, "tab_unavailable");
        let refused = failure(&Error::ExecutionFailed {
            reason: "Input.dispatchKeyEvent -32000".into(),
        });
        assert_eq!(refused.code, "execution_failed");
        assert!(
            !refused.message.contains("EXECUTION_FAILED"),
            "{}",
            refused.message
        );
        assert_eq!(
            failure(&Error::BrowserTimeout {
                timeout: std::time::Duration::from_secs(1)
            })
            .code,
            "timed_out"
        );
        assert_eq!(
            failure(&Error::BrowserUnavailable { reason: "x".into() }).code,
            "debugger_unavailable"
        );
        let stale = failure(&Error::StaleObservation {
            cause: crate::browser::StaleCause::GenerationChanged,
        });
        assert_eq!(stale.code, "execution_failed");
        assert!(stale.message.starts_with("STALE_OBSERVATION: "));
    }
}

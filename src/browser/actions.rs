//! What the local backend does for each command on one tab: observe through the page library
//! in an isolated world, and the primitives as real input events (R-BRW-OBS, R-BRW-ACT,
//! R-BRW-STALE).
//!
//! This module owns the order of checks before an action (dialog, navigation in flight,
//! generation, the page's own fingerprint, hit-testing) and the input events themselves. It
//! never sends input after a failed check, never reads a sensitive field's value (the page
//! library refuses to) and never puts page text, URLs or typed text into an error.

use std::cell::Cell;
use std::time::Duration;

use serde_json::{json, Value};

use super::backend::*;
use super::keys::{char_events, chord_events, key_events, parse_chord};
use super::local::{openable, LocalTab, Sent};
use super::snapshot::{cut_lines, format_tree, truncation_note, Surface, MAX_SNAPSHOT};
use super::tab::TabState;
use super::world::{library_answer, PAGE_JS, WORLD};
use crate::caps::{
    JAVASCRIPT_MAX_CHARS, SCREENSHOT_MAX_BASE64, TEXT_DEFAULT_CHARS, TEXT_MAX_CHARS,
};
use crate::grammar::{HistoryDirection, Key, ScrollDirection};
use crate::observation::{Navigation, Observation, ScrollPosition, Truncated};
use crate::untrusted::wrap_text;
use crate::{Error, Result};

/// How long a click on a link or submit control waits for the navigation to start.
const NAV_GRACE: Duration = Duration::from_millis(300);

/// Title and URL budgets (R-BRW-OBS `truncated.title` / `truncated.url`).
const MAX_TITLE: usize = 300;
const MAX_URL: usize = 2048;
/// At most this many characters of a `page_type` text go out as key events; the rest is
/// inserted as text in one event.
const KEYED_CHARS: usize = 256;

struct NavMarks {
    doc: u64,
    same_doc: u64,
    started: u64,
}

/// The page a navigation leaves: its document, the last of its dialogs an answer was posted
/// for and the last one known answered, and whether Chromium could not answer one.
struct Leaving {
    doc: u64,
    posted: Cell<u64>,
    answered: Cell<u64>,
    trapped: Cell<bool>,
}

impl Leaving {
    fn new(doc: u64) -> Leaving {
        Leaving {
            doc,
            posted: Cell::new(0),
            answered: Cell::new(0),
            trapped: Cell::new(false),
        }
    }

    /// The open dialog of the page being left not known answered yet: its number, and the
    /// answer it gets (dismissed; a `beforeunload` accepted: leaving is the point).
    /// A suppressed page's dialog (never shown, answered by the event handler) counts too:
    /// its answer may be one Chromium can no longer take.
    fn open(&self, st: &TabState) -> Option<(u64, bool)> {
        let accept = match (&st.dialog, st.unseen) {
            (Some(d), _) => d.kind == "beforeunload",
            (None, Some(accept)) => accept,
            (None, None) => return None,
        };
        (st.doc_seq == self.doc && st.dialog_seq != self.answered.get())
            .then_some((st.dialog_seq, accept))
    }

    /// A dialog of the page being left is open: one to wait for, unless answered already
    /// (its close is on the way).
    fn waits_on(&self, st: &TabState) -> bool {
        self.open(st).is_some()
    }

    /// Posts the answer to the open dialog of the page being left, once, without waiting.
    fn post(&self, tab: &LocalTab) {
        let Some((seq, accept)) = self.open(&tab.tab.lock()) else {
            return;
        };
        if self.posted.replace(seq) != seq {
            tab.inner.poster.post(
                "Page.handleJavaScriptDialog",
                json!({ "accept": accept }),
                Some(tab.session()),
            );
        }
    }

    /// Answers the open dialog of the page being left and waits for the answer; `true` when
    /// there was one. One Chromium cannot answer any more (it opened after the navigation
    /// left the page's frame, and holds the navigation) marks the navigation trapped.
    fn answer(&self, tab: &LocalTab) -> bool {
        let Some((seq, accept)) = self.open(&tab.tab.lock()) else {
            return false;
        };
        if tab
            .call_plain("Page.handleJavaScriptDialog", json!({ "accept": accept }))
            .is_err()
        {
            // Events come before the answer that follows them: a dialog an earlier posted
            // answer closed is closed in the state by now.
            let st = tab.tab.lock();
            if (st.dialog.is_some() || st.unseen.is_some()) && st.dialog_seq == seq {
                self.trapped.set(true);
                return false;
            }
        }
        self.answered.set(seq);
        true
    }
}

fn cut(s: &str, max: usize) -> (String, bool) {
    if s.chars().count() <= max {
        (s.to_string(), false)
    } else {
        (s.chars().take(max).collect(), true)
    }
}

impl LocalTab {
    pub(crate) fn session(&self) -> &str {
        &self.tab.session_id
    }

    /// A DevTools call on this tab's session that ends early when a dialog opens.
    pub(crate) fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.inner
            .cdp
            .call_interruptible(
                method,
                params,
                Some(self.session()),
                self.inner.opts.call_timeout,
                &|| self.tab.dialog_or_gone(),
            )
            .map_err(|e| e.into_error(method))
    }

    /// A DevTools call that ignores dialogs (browser-side methods that work while one is open).
    pub(crate) fn call_plain(&self, method: &str, params: Value) -> Result<Value> {
        self.inner.call(method, params, Some(self.session()))
    }

    /// The isolated world's context, created (and the page library installed) when missing.
    pub(crate) fn world(&self) -> Result<i64> {
        let doc = {
            let st = self.tab.lock();
            if let Some((ctx, made_in)) = st.world {
                if made_in == st.doc_seq {
                    return Ok(ctx);
                }
            }
            st.doc_seq
        };
        let frame = self.tab.main_frame.lock().clone();
        let made = self.call(
            "Page.createIsolatedWorld",
            json!({ "frameId": frame, "worldName": WORLD, "grantUniveralAccess": false }),
        )?;
        let ctx = made["executionContextId"]
            .as_i64()
            .ok_or_else(|| Error::ExecutionFailed {
                reason: "Page.createIsolatedWorld answered without a context".into(),
            })?;
        let installed = self.call(
            "Runtime.evaluate",
            json!({ "expression": format!("globalThis.__jevgate = {PAGE_JS}; 0"), "contextId": ctx }),
        )?;
        if installed.get("exceptionDetails").is_some() {
            return Err(Error::ExecutionFailed {
                reason: "the page library failed to install".into(),
            });
        }
        self.tab.lock().world = Some((ctx, doc));
        Ok(ctx)
    }

    /// Calls `__jevgate.<expr>` in the isolated world and parses its JSON answer. A lost
    /// context (the document changed under us) is retried once in a fresh world.
    pub(crate) fn page(&self, expr: &str) -> Result<Value> {
        for attempt in 0..2 {
            let ctx = self.world()?;
            let res = self.inner.cdp.call_interruptible(
                "Runtime.evaluate",
                json!({ "expression": format!("__jevgate.{expr}"), "contextId": ctx, "returnByValue": true }),
                Some(self.session()),
                self.inner.opts.call_timeout,
                &|| self.tab.dialog_or_gone(),
            );
            match res {
                Ok(v) => return library_answer(&v),
                Err(super::cdp::CdpError::Protocol { message, .. })
                    if attempt == 0 && message.contains("ontext") =>
                {
                    // The context was destroyed (navigation); make a new world and retry.
                    self.tab.lock().world = None;
                }
                Err(e) => return Err(e.into_error("Runtime.evaluate")),
            }
        }
        Err(stale(StaleCause::GenerationChanged))
    }

    fn navigation(&self) -> Result<Navigation> {
        let h = self.call_plain("Page.getNavigationHistory", json!({}))?;
        let index = h["currentIndex"].as_i64().unwrap_or(0);
        let len = h["entries"].as_array().map_or(0, Vec::len) as i64;
        Ok(Navigation {
            can_go_back: index > 0,
            can_go_forward: index + 1 < len,
        })
    }

    fn url_title(&self) -> Result<(String, String)> {
        let info = self.inner.call(
            "Target.getTargetInfo",
            json!({ "targetId": self.tab.target_id }),
            None,
        )?;
        let field = |k: &str| {
            info["targetInfo"][k]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        Ok((field("url"), field("title")))
    }

    /// The observation while a dialog blocks the page: no controls, the dialog reported.
    fn dialog_observation(&self) -> Result<Observation> {
        let (url, title) = self.url_title()?;
        let (url, url_cut) = cut(&url, MAX_URL);
        let (title, title_cut) = cut(&title, MAX_TITLE);
        let st = self.tab.lock();
        Ok(Observation {
            generation: st.generation,
            url,
            title,
            navigation: None,
            truncated: Truncated {
                controls: false,
                title: title_cut,
                url: url_cut,
                text: false,
                containers: false,
            },
            focus: None,
            scroll: ScrollPosition::default(),
            controls: Vec::new(),
            containers: Vec::new(),
            text: String::new(),
            dialog: st.dialog.clone(),
            keys: Vec::new(),
        })
        .map(|mut o| {
            o.navigation = self.navigation().ok();
            o
        })
    }

    /// The walk plus generation bookkeeping; `tree` asks for the snapshot tree too.
    fn observe_raw(
        &self,
        args: &ObserveArgs,
        tree: Option<&SnapshotArgs>,
    ) -> Result<(Observation, Option<Value>)> {
        if self.tab.lock().dialog.is_some() {
            return Ok((self.dialog_observation()?, None));
        }
        if let Some(err) = self.tab.refusal() {
            return Err(err);
        }
        let doc_before = self.tab.lock().doc_seq;
        let mut opts = json!({
            "maxControls": args.max_controls.unwrap_or(2000).max(1),
            "maxTextChars": args.max_text_chars.unwrap_or(TEXT_DEFAULT_CHARS).min(TEXT_MAX_CHARS),
        });
        let mut region = None;
        if let Some(t) = tree {
            opts["tree"] = json!(true);
            if let Some(r) = &t.region {
                region = Some(self.region_scope(r)?);
            }
        }
        let composed = match self.observe_frames(&opts, region.as_ref()) {
            Ok(v) => v,
            Err(Error::DialogOpen { .. }) => return Ok((self.dialog_observation()?, None)),
            Err(e) => return Err(e),
        };
        let mut walked = composed.walk;
        let navigation = match self.navigation() {
            Ok(n) => Some(n),
            Err(Error::DialogOpen { .. }) => return Ok((self.dialog_observation()?, None)),
            Err(e) => return Err(e),
        };
        let controls = serde_json::from_value(walked["controls"].take()).map_err(|_| {
            Error::ExecutionFailed {
                reason: "the page library answered controls of an unexpected shape".into(),
            }
        })?;
        let containers = match walked.get_mut("containers").map(Value::take) {
            Some(v) => serde_json::from_value(v).map_err(|_| Error::ExecutionFailed {
                reason: "the page library answered containers of an unexpected shape".into(),
            })?,
            None => Vec::new(),
        };
        let fp = composed.fp;
        let generation = {
            let mut st = self.tab.lock();
            if st.pending_nav || st.doc_seq != doc_before {
                return Err(stale(StaleCause::NavigationPending));
            }
            if st.generation == 0 || st.fp != fp || st.obs_doc != doc_before {
                st.generation += 1;
                st.fp = fp;
                st.obs_doc = doc_before;
            }
            st.main_fp = walked["fp"].as_str().unwrap_or_default().to_string();
            st.frames = composed.frames;
            st.generation
        };
        let (url, url_cut) = cut(walked["url"].as_str().unwrap_or_default(), MAX_URL);
        let (title, title_cut) = cut(walked["title"].as_str().unwrap_or_default(), MAX_TITLE);
        let mut obs = Observation {
            generation,
            url,
            title,
            navigation,
            truncated: Truncated {
                controls: walked["truncated"]["controls"].as_bool().unwrap_or(false),
                title: title_cut,
                url: url_cut,
                text: walked["truncated"]["text"].as_bool().unwrap_or(false),
                containers: walked["truncated"]["containers"].as_bool().unwrap_or(false),
            },
            focus: walked["focus"].as_str().map(str::to_string),
            scroll: ScrollPosition {
                at_top: walked["scroll"]["atTop"].as_bool().unwrap_or(true),
                at_bottom: walked["scroll"]["atBottom"].as_bool().unwrap_or(true),
            },
            controls,
            containers,
            text: walked["text"].as_str().unwrap_or_default().to_string(),
            dialog: None,
            keys: Vec::new(),
        };
        // Frames add their own containers: the bound holds for the composed observation.
        obs.bound_containers();
        let tree = walked.get_mut("tree").map(Value::take);
        Ok((obs, tree))
    }

    /// The frame a snapshot region ref belongs to, by the last observation's frame numbers.
    fn region_scope(&self, region: &str) -> Result<super::frame_walk::Region> {
        let not_found = || Error::TargetNotFound {
            reason: "the region ref is not on the page".into(),
        };
        match super::frames::split_ref(region).ok_or_else(not_found)? {
            (0, inner) => Ok((None, inner.to_string())),
            (n, inner) => {
                let st = self.tab.lock();
                let f = st.frames.get(n - 1).ok_or_else(not_found)?;
                Ok((Some(f.session.clone()), inner.to_string()))
            }
        }
    }

    fn snapshot_now(&self, args: &SnapshotArgs) -> Result<Snapshot> {
        // The tree holds every control; the observation's own list and text are not used here,
        // so the page sends one of each (issue 19 item 7: the list doubled what the page
        // serialised and this process parsed). Refs and the generation do not depend on the
        // budget: the page assigns and fingerprints every control whatever it reports.
        let (obs, tree) = self.observe_raw(
            &ObserveArgs {
                max_controls: Some(1),
                max_text_chars: Some(1),
            },
            Some(args),
        )?;
        let max = args
            .max_chars
            .unwrap_or(TEXT_DEFAULT_CHARS)
            .min(MAX_SNAPSHOT);
        let (mut body, truncated, total) = match (&obs.dialog, tree) {
            (Some(d), _) => (
                format!(
                    "- dialog {}: {}",
                    serde_json::to_string(&d.kind).unwrap_or_default(),
                    d.message
                ),
                false,
                0,
            ),
            (None, Some(tree)) if !tree.is_null() => match format_tree(&tree, max) {
                // Cut: cut again leaving room for the note (either surface's, the tools
                // rewrite it), so the text stays in the budget.
                (text, true, total) => {
                    let room = [Surface::Backend, Surface::Tool]
                        .map(|s| truncation_note(max, total, s).chars().count())
                        .into_iter()
                        .max()
                        .unwrap_or(0)
                        + 1;
                    (cut_lines(text, max.saturating_sub(room)), true, total)
                }
                whole => whole,
            },
            (None, _) if args.region.is_some() => {
                return Err(Error::TargetNotFound {
                    reason: "the region ref is not on the page".into(),
                })
            }
            (None, _) => (String::new(), false, 0),
        };
        if truncated {
            // Said in the text itself, so a reader of the text alone never takes the cut for
            // the end of the page (issue 12 §10).
            let shown = body.chars().count();
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(&truncation_note(shown, total, Surface::Backend));
        }
        Ok(Snapshot {
            generation: obs.generation,
            url: obs.url,
            title: obs.title,
            text: wrap_text(&body),
            truncated,
            total_chars: truncated.then_some(total),
        })
    }

    /// Runs one tab command (the busy flag and operation record are the caller's).
    pub(crate) fn run(&self, command: &Command, sent: &Sent) -> Result<Response> {
        match command {
            Command::Observe(a) => Ok(Response::Observation(self.observe_raw(a, None)?.0)),
            Command::Snapshot(a) => Ok(Response::Snapshot(self.snapshot_now(a)?)),
            Command::GetText(a) => {
                let max = a
                    .max_chars
                    .unwrap_or(TEXT_DEFAULT_CHARS)
                    .min(TEXT_MAX_CHARS);
                let (obs, _) = self.observe_raw(
                    &ObserveArgs {
                        max_controls: Some(1),
                        max_text_chars: Some(max + 1),
                    },
                    None,
                )?;
                let (text, cut_here) = cut(&obs.text, max);
                Ok(Response::Text(PageText {
                    generation: obs.generation,
                    text: wrap_text(&text),
                    truncated: cut_here || obs.truncated.text,
                }))
            }
            Command::Find(a) => {
                let (obs, _) = self.observe_raw(&ObserveArgs::default(), None)?;
                let words: Vec<String> =
                    a.query.split_whitespace().map(str::to_lowercase).collect();
                let controls = obs
                    .controls
                    .into_iter()
                    .filter(|c| {
                        let hay = format!("{} {}", c.role, c.name).to_lowercase();
                        words.iter().all(|w| hay.contains(w.as_str()))
                    })
                    .take(a.max_results.unwrap_or(20))
                    .collect();
                Ok(Response::Found(FoundControls {
                    generation: obs.generation,
                    controls,
                }))
            }
            Command::PageClick(a) => self.click(a, sent).map(Response::Action),
            Command::PageType(a) => self.type_text(a, sent).map(Response::Action),
            Command::PageKeypress(a) => self.keypress(a, sent).map(Response::Action),
            Command::PageScroll(a) => self.scroll(a, sent).map(Response::Action),
            Command::TabNavigate(a) => self.navigate_now(a, sent).map(Response::Action),
            Command::TabHistory(a) => self.history(a, sent).map(Response::Action),
            Command::PageScreenshot(a) => self.screenshot(a).map(Response::Screenshot),
            Command::FormInput(a) => self.form_input_now(a, sent).map(Response::Action),
            Command::Javascript(a) => self.javascript_now(a, sent).map(Response::Script),
            Command::MouseClick(a) => self.mouse_click_now(a, sent).map(Response::Action),
            Command::PageHover(_)
            | Command::PageDrag(_)
            | Command::MouseMove(_)
            | Command::MouseDrag(_)
            | Command::PageResize(_)
            | Command::ConsoleMessages(_)
            | Command::NetworkRequests(_)
            | Command::SetInputFiles(_)
            | Command::Downloads(_) => self.run_extra(command, sent),
            Command::PageChord(a) => self.chord(a, sent).map(Response::Action),
            Command::ResolveCss(a) => self.resolve_css(a).map(Response::Resolved),
            Command::OperationStatus(_)
            | Command::TabLease(_)
            | Command::Tabs(_)
            | Command::HandleDialog(_) => Err(Error::Internal {
                reason: "browser-level command routed to a tab".into(),
            }),
        }
    }

    pub(crate) fn result(
        &self,
        id: &str,
        tool: &str,
        generation: u64,
        started_before: u64,
    ) -> ActionResult {
        let mut st = self.tab.lock();
        ActionResult {
            operation_id: id.to_string(),
            tool: tool.to_string(),
            generation_before: generation,
            navigation_started: st.started_seq > started_before || st.pending_nav,
            settled: false,
            dialog: st.dialog.clone(),
            notes: std::mem::take(&mut st.notes),
        }
    }

    pub(crate) fn started_seq(&self) -> u64 {
        self.tab.lock().started_seq
    }

    /// Sends input; a dialog opened by it ends the wait (the input was delivered).
    pub(crate) fn input(&self, method: &str, params: Value) -> Result<()> {
        match self.call(method, params) {
            Ok(_) | Err(Error::DialogOpen { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn mouse_click_at(&self, x: f64, y: f64, sent: &Sent) -> Result<()> {
        sent.mark();
        self.input(
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseMoved", "x": x, "y": y, "button": "none", "buttons": 0 }),
        )?;
        if self.tab.lock().dialog.is_some() {
            return Ok(());
        }
        self.input(
            "Input.dispatchMouseEvent",
            json!({ "type": "mousePressed", "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1 }),
        )?;
        if self.tab.lock().dialog.is_some() {
            return Ok(());
        }
        self.input(
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1 }),
        )
    }

    /// Maps the page library's status of a target check to the refusal it means.
    pub(crate) fn target_status(&self, v: &Value) -> Result<()> {
        match v["status"].as_str().unwrap_or("") {
            "ok" => Ok(()),
            "changed" => Err(stale(StaleCause::GenerationChanged)),
            "obscured" => Err(stale(StaleCause::TargetObscured)),
            "unfocusable" => Err(Error::FocusRequired),
            "missing" => Err(Error::TargetNotFound {
                reason: "the ref was not handed out by this generation".into(),
            }),
            "nobox" => Err(Error::TargetNotFound {
                reason: "the target has no box on the page (hidden or empty)".into(),
            }),
            "nooption" => Err(Error::InvalidArgument {
                name: "value",
                reason: "matches no option of the select".into(),
            }),
            _ => Err(Error::ExecutionFailed {
                reason: "the page library answered an unknown status".into(),
            }),
        }
    }

    /// A page-library call for an action; a lost document means the page changed.
    pub(crate) fn page_for_action(&self, expr: &str) -> Result<Value> {
        match self.page(expr) {
            Err(Error::ExecutionFailed { .. }) if self.document_changed() => {
                Err(stale(StaleCause::GenerationChanged))
            }
            other => other,
        }
    }

    fn document_changed(&self) -> bool {
        let st = self.tab.lock();
        st.doc_seq != st.obs_doc
    }

    /// Holds the main frame to its fingerprint (and every observed frame to its own).
    pub(crate) fn check_all(&self, obs: &super::frames::Observed) -> Result<()> {
        let v = self.page_for_action(&format!("check({})", json!(obs.fp)))?;
        self.target_status(&v)?;
        self.check_frames(obs)
    }

    fn click(&self, a: &ClickArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        let (x, y, navigates) = self.point_and_nav(&obs, &a.reference, false)?;
        let before = self.started_seq();
        let frame = self.scope_of(&obs, &a.reference)?.n;
        if frame > 0 {
            // Delivery, not timing: the frame acknowledges the mouse at the point first.
            sent.mark();
            self.await_frame_input(&obs, frame, x, y)?;
        }
        self.mouse_click_at(x, y, sent)?;
        if navigates {
            self.nav_grace(before);
        }
        Ok(self.result(&a.operation_id, "page_click", a.generation, before))
    }

    /// The viewport point of a ref's element, scrolled into view and hit-tested (the element,
    /// not something over it, is there), in the main frame or an out-of-process frame.
    pub(crate) fn point_of(
        &self,
        obs: &super::frames::Observed,
        reference: &str,
    ) -> Result<(f64, f64)> {
        self.point_and_nav(obs, reference, true)
            .map(|(x, y, _)| (x, y))
    }

    /// [`Self::point_of`], and whether the element is a link or a form's submit control (a
    /// click on it usually starts a navigation; main-frame elements only). With `settle`, a
    /// point inside a frame waits for the frame to be drawn ([`Self::settle_frames`]); a click
    /// instead awaits the frame's acknowledgement of the mouse ([`Self::await_frame_input`]).
    fn point_and_nav(
        &self,
        obs: &super::frames::Observed,
        reference: &str,
        settle: bool,
    ) -> Result<(f64, f64, bool)> {
        let scope = self.scope_of(obs, reference)?;
        self.check_frames(obs)?;
        Ok(if scope.n == 0 {
            let args = serde_json::to_string(&[&scope.inner, &obs.fp]).unwrap_or_default();
            let v = self.page_for_action(&format!("point(...{args})"))?;
            self.target_status(&v)?;
            (
                v["x"].as_f64().unwrap_or(0.0),
                v["y"].as_f64().unwrap_or(0.0),
                v["nav"].as_bool().unwrap_or(false),
            )
        } else {
            self.frame_point(obs, scope.n, &scope.inner)?;
            if settle {
                self.settle_frames(obs, scope.n)?;
            }
            // the point again, on the drawn page (a scroll may have moved it)
            let (x, y) = self.frame_point(obs, scope.n, &scope.inner)?;
            (x, y, false)
        })
    }

    /// After a click on a link or submit control: waits up to [`NAV_GRACE`] on the browser's
    /// clock for the navigation it usually starts (Chromium starts it asynchronously, after the
    /// input was acknowledged), so the result's `navigationStarted` and the next read see it.
    fn nav_grace(&self, started_before: u64) {
        // A `Grace`, not a deadline: on a clock nobody advances (a manual clock in a test) a
        // link whose script prevents the navigation still ends the wait after ~NAV_GRACE.
        let mut grace = crate::clock::Grace::new(&*self.inner.opts.clock, NAV_GRACE);
        let mut st = self.tab.lock();
        while !(st.started_seq > started_before || st.pending_nav || st.dialog.is_some() || st.gone)
        {
            let Some(slice) = grace.next(NAV_GRACE) else {
                break;
            };
            self.tab.changed.wait_for(&mut st, slice);
        }
    }

    fn mouse_click_now(&self, a: &MouseClickArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        self.check_all(&obs)?;
        self.in_viewport(a.x, a.y)?;
        let before = self.started_seq();
        self.mouse_click_at(a.x, a.y, sent)?;
        Ok(self.result(&a.operation_id, "mouse_click", a.generation, before))
    }

    fn press(&self, key: Key, sent: &Sent) -> Result<()> {
        sent.mark();
        for ev in key_events(key) {
            self.input("Input.dispatchKeyEvent", ev)?;
            if self.tab.lock().dialog.is_some() {
                break;
            }
        }
        Ok(())
    }

    fn type_text(&self, a: &TypeArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        let scope = self.scope_of(&obs, &a.reference)?;
        if scope.n > 0 {
            let v = self.page_for_action(&format!("check({})", json!(obs.fp)))?;
            self.target_status(&v)?;
        }
        self.check_frames(&obs)?;
        let args = serde_json::to_string(&[&scope.inner, &scope.fp]).unwrap_or_default();
        let v = self.page_in(scope.session.as_deref(), &format!("focusField(...{args})"))?;
        self.target_status(&v)?;
        if let Some(session) = &scope.session {
            self.wait_frame_focus(session)?;
        }
        let before = self.started_seq();
        sent.mark();
        let text: Vec<char> = a.text.chars().collect();
        let (keyed, rest) = text.split_at(text.len().min(KEYED_CHARS));
        let mut pending = String::new();
        for &c in keyed {
            match char_events(c) {
                Some(events) => {
                    if !pending.is_empty() {
                        let chunk = std::mem::take(&mut pending);
                        self.input("Input.insertText", json!({ "text": chunk }))?;
                    }
                    for ev in events {
                        self.input("Input.dispatchKeyEvent", ev)?;
                    }
                }
                None => pending.push(c),
            }
            if self.tab.lock().dialog.is_some() {
                return Ok(self.result(&a.operation_id, "page_type", a.generation, before));
            }
        }
        pending.extend(rest);
        if !pending.is_empty() {
            self.input("Input.insertText", json!({ "text": pending }))?;
        }
        if a.submit && self.tab.lock().dialog.is_none() {
            self.press(Key::Enter, sent)?;
        }
        Ok(self.result(&a.operation_id, "page_type", a.generation, before))
    }

    fn keypress(&self, a: &KeypressArgs, sent: &Sent) -> Result<ActionResult> {
        if a.count == 0 || a.count > 20 {
            return Err(Error::InvalidArgument {
                name: "count",
                reason: "must be 1 to 20".into(),
            });
        }
        let obs = self.tab.check_generation(a.generation)?;
        self.check_all(&obs)?;
        let before = self.started_seq();
        for _ in 0..a.count {
            self.press(a.key, sent)?;
            if self.tab.lock().dialog.is_some() {
                break;
            }
        }
        Ok(self.result(&a.operation_id, "page_keypress", a.generation, before))
    }

    /// `page_chord`: the chord's key events to the focused element (issue 15).
    fn chord(&self, a: &ChordArgs, sent: &Sent) -> Result<ActionResult> {
        let chord = parse_chord(&a.keys).ok_or_else(|| Error::InvalidArgument {
            name: "keys",
            reason: "must be a key or a chord such as Control+A (modifiers Control, Shift, Alt, Meta; one named key or printable ASCII character)".into(),
        })?;
        let obs = self.tab.check_generation(a.generation)?;
        self.check_all(&obs)?;
        let before = self.started_seq();
        sent.mark();
        for ev in chord_events(&chord) {
            self.input("Input.dispatchKeyEvent", ev)?;
            if self.tab.lock().dialog.is_some() {
                break;
            }
        }
        Ok(self.result(&a.operation_id, "page_chord", a.generation, before))
    }

    /// `resolve_css`: the refs of the interactive elements `css` matches, in the isolated world.
    fn resolve_css(&self, a: &ResolveCssArgs) -> Result<ResolvedRefs> {
        let obs = self.tab.check_generation(a.generation)?;
        let args = serde_json::to_string(&[&a.css, &obs.fp]).unwrap_or_default();
        let v = self.page_for_action(&format!("cssRefs(...{args})"))?;
        if v["status"] == "badselector" {
            return Err(Error::InvalidArgument {
                name: "target",
                reason: "is not a valid CSS selector".into(),
            });
        }
        self.target_status(&v)?;
        let refs = v["refs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .take(50)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(ResolvedRefs {
            generation: a.generation,
            refs,
            count: v["count"].as_u64().unwrap_or(0) as usize,
            matched: v["matched"].as_u64().unwrap_or(0) as usize,
        })
    }

    fn scroll(&self, a: &ScrollArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        self.check_all(&obs)?;
        let s = self.page("scroll()")?;
        let at_limit = match a.direction {
            ScrollDirection::Up => s["atTop"].as_bool().unwrap_or(true),
            ScrollDirection::Down => s["atBottom"].as_bool().unwrap_or(true),
        };
        if at_limit {
            return Err(Error::ScrollLimit);
        }
        let top = s["top"].as_f64().unwrap_or(0.0);
        let view = s["view"].as_f64().unwrap_or(600.0);
        let (w, h) = self.inner.opts.window_size;
        // Over an iframe or a scrolling box the wheel would move that instead of the page.
        let at = self.page("wheelPoint()")?;
        let x = at["x"].as_f64().unwrap_or(f64::from(w) / 2.0);
        let y = at["y"].as_f64().unwrap_or(f64::from(h) / 2.0);
        let delta = (view * 0.8).max(40.0);
        let before = self.started_seq();
        sent.mark();
        self.input(
            "Input.dispatchMouseEvent",
            json!({
                "type": "mouseWheel", "x": x, "y": y,
                "deltaX": 0, "deltaY": if a.direction == ScrollDirection::Up { -delta } else { delta },
            }),
        )?;
        // Bounded polling of the real scroll position: wheel scrolling is asynchronous. Done
        // when it moved and then held still for one poll.
        let clock = &*self.inner.opts.clock;
        let deadline = clock.now() + Duration::from_millis(2000);
        let mut last = top;
        let mut moved = false;
        while clock.now() < deadline {
            std::thread::sleep(Duration::from_millis(15));
            let now = self.page("scroll()")?["top"].as_f64().unwrap_or(last);
            if moved && (now - last).abs() < 0.5 {
                break;
            }
            moved |= (now - top).abs() >= 1.0;
            last = now;
        }
        Ok(self.result(&a.operation_id, "page_scroll", a.generation, before))
    }

    /// The counters a navigation's settling is measured against.
    fn nav_marks(&self) -> NavMarks {
        let st = self.tab.lock();
        NavMarks {
            doc: st.doc_seq,
            same_doc: st.same_doc_seq,
            started: st.started_seq,
        }
    }

    /// Waits (bounded) until the navigation started after `marks` settled — a new document
    /// committed and loaded, a same-document navigation, or a load that started and stopped
    /// without a commit (204, download) — or a dialog opened; `true` when it settled. With
    /// `leaving`, a dialog of the page being left (no new document yet) is answered and the
    /// wait goes on; a dialog of the new page ends it, and so does one Chromium can no longer
    /// answer (`leaving` is then trapped).
    fn wait_settled(&self, marks: &NavMarks, leaving: Option<&Leaving>) -> bool {
        let clock = &*self.inner.opts.clock;
        let deadline = clock.now() + self.inner.opts.navigation_timeout;
        let done = |st: &TabState| {
            !st.pending_nav
                && ((st.doc_seq > marks.doc && st.loaded_since_commit)
                    || st.same_doc_seq > marks.same_doc
                    || (st.started_seq > marks.started
                        && st.stop_seq > st.stop_at_start
                        && st.doc_seq == marks.doc))
        };
        loop {
            self.tab.wait_for(clock, deadline, |st| {
                let shown = match leaving {
                    // The new page's dialog ends the wait; the old page's wants an answer.
                    Some(l) => (st.dialog.is_some() && st.doc_seq != l.doc) || l.waits_on(st),
                    None => st.dialog.is_some(),
                };
                st.gone || shown || done(st)
            });
            match leaving {
                Some(l) if clock.now() < deadline && l.answer(self) => continue,
                _ => break,
            }
        }
        let st = self.tab.lock();
        !st.gone && st.dialog.is_none() && done(&st)
    }

    /// Navigating away always works (issue 20 item 3): a dialog the page being left has open,
    /// or opens while the navigation starts, is answered (dismissed; a `beforeunload`
    /// accepted) instead of refusing with `DIALOG_OPEN`. A page that opens one the moment the
    /// last is answered (`while (true) alert()`) gets one open after the navigation left its
    /// frame, which Chromium can no longer answer and waits for: the tab is then replaced by
    /// a fresh tab of the same browser, where the navigation runs (said once in a note).
    fn navigate_now(&self, a: &NavigateArgs, sent: &Sent) -> Result<ActionResult> {
        let url = openable(&a.url)?;
        match self.navigate_leaving(url, a, sent)? {
            Some(result) => Ok(result),
            None => {
                log::warn!("a page held a navigation away with dialogs; replacing its tab");
                let fresh = LocalTab {
                    inner: self.inner.clone(),
                    tab: self
                        .inner
                        .replace_tab(&self.tab, super::tab::TRAPPED_REPLACED_NOTE)?,
                };
                let _busy = fresh
                    .tab
                    .enter(&*self.inner.opts.clock, self.inner.opts.call_timeout)?;
                fresh
                    .navigate_leaving(url, a, sent)?
                    .ok_or(Error::TabUnavailable)
            }
        }
    }

    /// The navigation itself; `None` when the page being left trapped it (see
    /// [`LocalTab::navigate_now`]).
    fn navigate_leaving(
        &self,
        url: &str,
        a: &NavigateArgs,
        sent: &Sent,
    ) -> Result<Option<ActionResult>> {
        let generation = self.tab.lock().generation;
        let marks = self.nav_marks();
        let leaving = Leaving::new(marks.doc);
        sent.mark();
        // Bounded: past DIALOG_BURST dialogs the page's dialogs are answered unseen.
        for _ in 0..=super::tab::DIALOG_BURST {
            if !leaving.answer(self) {
                break;
            }
        }
        let res = match self.inner.cdp.call_interruptible(
            "Page.navigate",
            json!({ "url": url }),
            Some(self.session()),
            self.inner.opts.call_timeout,
            &|| {
                leaving.post(self);
                let st = self.tab.lock();
                if st.gone {
                    return Some(Error::TabUnavailable);
                }
                st.dialog
                    .as_ref()
                    .filter(|_| st.doc_seq != leaving.doc)
                    .map(|d| Error::DialogOpen {
                        kind: d.kind.clone(),
                    })
            },
        ) {
            Ok(v) => v,
            // The new page opened a dialog before the answer came: the result reports it.
            Err(super::cdp::CdpError::Failed(Error::DialogOpen { .. })) => Value::Null,
            Err(e) => return Err(e.into_error("Page.navigate")),
        };
        if let Some(err) = res["errorText"].as_str().filter(|e| !e.is_empty()) {
            let class: String = err
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .take(80)
                .collect();
            return Err(Error::NavigationFailed { reason: class });
        }
        let settled = self.wait_settled(&marks, Some(&leaving));
        if leaving.trapped.get() {
            return Ok(None);
        }
        let mut r = self.result(&a.operation_id, "tab_navigate", generation, marks.started);
        r.navigation_started = true;
        r.settled = settled;
        Ok(Some(r))
    }

    fn history(&self, a: &HistoryArgs, sent: &Sent) -> Result<ActionResult> {
        self.tab.check_generation(a.generation)?;
        let h = self.call_plain("Page.getNavigationHistory", json!({}))?;
        let index = h["currentIndex"].as_i64().unwrap_or(0);
        let entries = h["entries"].as_array().cloned().unwrap_or_default();
        let target = match a.direction {
            HistoryDirection::Back => index - 1,
            HistoryDirection::Forward => index + 1,
        };
        let entry = usize::try_from(target).ok().and_then(|i| entries.get(i));
        let Some(entry_id) = entry.and_then(|e| e["id"].as_i64()) else {
            return Err(Error::HistoryUnavailable);
        };
        let marks = self.nav_marks();
        sent.mark();
        self.call(
            "Page.navigateToHistoryEntry",
            json!({ "entryId": entry_id }),
        )?;
        let settled = self.wait_settled(&marks, None);
        let mut r = self.result(&a.operation_id, "tab_history", a.generation, marks.started);
        r.navigation_started = true;
        r.settled = settled;
        Ok(r)
    }

    fn form_input_now(&self, a: &FormInputArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        let scope = self.scope_of(&obs, &a.reference)?;
        if scope.n > 0 {
            let v = self.page_for_action(&format!("check({})", json!(obs.fp)))?;
            self.target_status(&v)?;
        }
        self.check_frames(&obs)?;
        let before = self.started_seq();
        let args = serde_json::to_string(&[&scope.inner, &scope.fp, &a.value]).unwrap_or_default();
        sent.mark();
        let v = self.page_in(scope.session.as_deref(), &format!("setValue(...{args})"))?;
        if v["status"] != "ok" {
            // Nothing was set: the library checks before it writes.
            sent.0.set(false);
        }
        self.target_status(&v)?;
        Ok(self.result(&a.operation_id, "form_input", a.generation, before))
    }

    fn javascript_now(&self, a: &JavascriptArgs, sent: &Sent) -> Result<ScriptResult> {
        if let Some(err) = self.tab.refusal() {
            return Err(err);
        }
        sent.mark();
        let res = self.call(
            "Runtime.evaluate",
            json!({
                "expression": a.code, "returnByValue": true, "awaitPromise": true,
                "userGesture": true, "timeout": self.inner.opts.call_timeout.as_millis() as u64,
            }),
        )?;
        if res.get("exceptionDetails").is_some() {
            return Err(Error::JavascriptError {
                reason: "the script threw an exception".into(),
            });
        }
        let value = res["result"].get("value").cloned().unwrap_or(Value::Null);
        let json = serde_json::to_string(&value).map_err(|_| Error::JavascriptError {
            reason: "the result is not serializable".into(),
        })?;
        let (json, truncated) = cut(&json, JAVASCRIPT_MAX_CHARS);
        Ok(ScriptResult {
            operation_id: a.operation_id.clone(),
            value: wrap_text(&json),
            truncated,
        })
    }

    pub(crate) fn handle_dialog_now(
        &self,
        a: &HandleDialogArgs,
        sent: &Sent,
    ) -> Result<ActionResult> {
        let (generation, started, seq) = {
            let st = self.tab.lock();
            if st.dialog.is_none() {
                return Err(Error::NoDialog);
            }
            (st.generation, st.started_seq, st.dialog_seq)
        };
        let mut params = json!({ "accept": a.accept });
        if let Some(t) = &a.prompt_text {
            params["promptText"] = json!(t);
        }
        sent.mark();
        self.call_plain("Page.handleJavaScriptDialog", params)?;
        let clock = &*self.inner.opts.clock;
        let deadline = clock.now() + self.inner.opts.call_timeout;
        // A page may open its next dialog before this wait wakes: a newer dialog also ends it
        // (waiting on `dialog.is_none()` alone then slept until the call timeout).
        self.tab.wait_for(clock, deadline, |st| {
            st.dialog.is_none() || st.dialog_seq != seq || st.gone
        });
        Ok(self.result("", "handle_dialog", generation, started))
    }

    fn screenshot(&self, a: &ScreenshotArgs) -> Result<Screenshot> {
        if let Some(err) = self.tab.refusal() {
            return Err(err);
        }
        let generation = self.tab.lock().generation;
        let metrics = self.call("Page.getLayoutMetrics", json!({}))?;
        let view = &metrics["cssLayoutViewport"];
        let (vw, vh) = (
            view["clientWidth"].as_f64().unwrap_or(1280.0),
            view["clientHeight"].as_f64().unwrap_or(800.0),
        );
        let rect = match (&a.region, a.full_page) {
            (Some(r), _) => Rect {
                x: r.x.max(0.0),
                y: r.y.max(0.0),
                width: r.width.clamp(1.0, 16_000.0),
                height: r.height.clamp(1.0, 16_000.0),
            },
            (None, true) => {
                let content = &metrics["cssContentSize"];
                Rect {
                    x: 0.0,
                    y: 0.0,
                    width: content["width"].as_f64().unwrap_or(vw).clamp(1.0, 16_000.0),
                    height: content["height"]
                        .as_f64()
                        .unwrap_or(vh)
                        .clamp(1.0, 16_000.0),
                }
            }
            (None, false) => Rect {
                x: view["pageX"].as_f64().unwrap_or(0.0),
                y: view["pageY"].as_f64().unwrap_or(0.0),
                width: vw,
                height: vh,
            },
        };
        // Lower the JPEG quality first (80 → 60 → 45 → 30; straight to 30 when far over),
        // then the scale, sized from how far over the cap the last frame was.
        let (mut quality, mut scale) = (80u32, 1.0f64);
        for _ in 0..12 {
            let shot = self.call(
                "Page.captureScreenshot",
                json!({
                    "format": "jpeg", "quality": quality,
                    "captureBeyondViewport": a.full_page,
                    "clip": { "x": rect.x, "y": rect.y, "width": rect.width, "height": rect.height, "scale": scale },
                }),
            )?;
            let data = shot["data"].as_str().unwrap_or_default();
            if !data.is_empty() && data.len() <= SCREENSHOT_MAX_BASE64 {
                return Ok(Screenshot {
                    format: "jpeg".into(),
                    data: data.to_string(),
                    width: (rect.width * scale).round() as u32,
                    height: (rect.height * scale).round() as u32,
                    quality,
                    scale,
                    generation,
                });
            }
            let over = data.len().max(1) as f64 / SCREENSHOT_MAX_BASE64 as f64;
            if quality > 30 {
                quality = if over > 2.5 {
                    30
                } else {
                    match quality {
                        80 => 60,
                        60 => 45,
                        _ => 30,
                    }
                };
            } else {
                // Bytes scale with the pixel count, so with the square of the scale.
                scale = (scale * over.sqrt().recip() * 0.9).max(0.02);
            }
        }
        Err(Error::ExecutionFailed {
            reason: "the screenshot stays over the size cap at the smallest scale".into(),
        })
    }
}

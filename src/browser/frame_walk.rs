//! How the local backend observes and acts across out-of-process iframes (R-BRW-OBS, R-BRW-ACT,
//! R-BRW-STALE).
//!
//! This module owns the DevTools side of cross-site frames: asking each frame session to
//! auto-attach its own nested frames, installing the page library in each frame's isolated
//! world, naming each frame's `<iframe>` element in its parent's world (`DOM.getFrameOwner` →
//! `DOM.resolveNode` → the library's `tag`), the walk of every frame in page order and its
//! composition, holding every observed frame to its fingerprint before an action, and mapping a
//! point inside a frame up to the top-level viewport where the real mouse event is sent. A frame
//! that cannot be reached is left out and the observation says `truncated.controls`; every call
//! keeps its deadline, no lock is held across a call, nothing here logs page content.

use std::time::Duration;

use serde_json::{json, Value};

use super::backend::stale;
use super::backend::StaleCause;
use super::cdp::CdpError;
use super::frames::{
    prefix_refs, splice, split_ref, Child, Observed, ObservedFrame, MAX_FRAME_DEPTH,
};
use super::local::{auto_attach_frames, LocalTab};
use super::world::{library_answer, PAGE_JS, WORLD};
use crate::{Error, Result};

/// How long typing waits for a frame to hold the page's focus after the field was focused.
const FRAME_FOCUS_WAIT: Duration = Duration::from_millis(1000);

/// The most a click inside a frame waits for the frame to acknowledge the mouse at its point.
const FRAME_INPUT_WAIT: Duration = Duration::from_secs(5);

/// An observation's walk with its out-of-process frames spliced in.
pub(crate) struct Composed {
    pub walk: Value,
    pub frames: Vec<ObservedFrame>,
    /// The main frame's fingerprint followed by each frame's, so a change in any bumps the
    /// generation.
    pub fp: String,
}

/// Where a ref lives: the frame (0 = main), its session, the fingerprint to hold that frame
/// to, and the ref inside it.
pub(crate) struct Scope {
    pub n: usize,
    pub session: Option<String>,
    pub fp: String,
    pub inner: String,
}

/// Which frame a snapshot region belongs to (`None` = the main frame) and its ref there.
pub(crate) type Region = (Option<String>, String);

struct WalkCtx<'a> {
    opts: &'a Value,
    region: Option<&'a Region>,
    frames: Vec<ObservedFrame>,
    region_tree: Option<Value>,
}

fn session_gone(message: &str) -> bool {
    message.contains("ession")
}

impl LocalTab {
    /// A DevTools call on `session` (the tab's or one of its frames') that ends early when a
    /// dialog opens.
    fn call_on(&self, session: &str, method: &str, params: Value) -> Result<Value> {
        self.inner
            .cdp
            .call_interruptible(
                method,
                params,
                Some(session),
                self.inner.opts.call_timeout,
                &|| self.tab.dialog_or_gone(),
            )
            .map_err(|e| self.frame_error(method, e))
    }

    /// A frame call's failure: the frame went away (its session is gone) is a changed page.
    fn frame_error(&self, method: &str, e: CdpError) -> Error {
        match &e {
            CdpError::Protocol { message, .. } if session_gone(message) => {
                stale(StaleCause::GenerationChanged)
            }
            _ => e.into_error(method),
        }
    }

    fn frame_known(&self, session: &str) -> bool {
        self.tab.frames.lock().get(session).is_some()
    }

    /// The page library's world in the frame of `session`, created when missing.
    pub(crate) fn frame_world(&self, session: &str) -> Result<i64> {
        let (world, frame_id) = {
            let frames = self.tab.frames.lock();
            let f = frames
                .get(session)
                .ok_or_else(|| stale(StaleCause::GenerationChanged))?;
            (f.world, f.frame_id.clone())
        };
        if let Some(ctx) = world {
            return Ok(ctx);
        }
        let made = self.call_on(
            session,
            "Page.createIsolatedWorld",
            json!({ "frameId": frame_id, "worldName": WORLD, "grantUniveralAccess": false }),
        )?;
        let ctx = made["executionContextId"]
            .as_i64()
            .ok_or_else(|| Error::ExecutionFailed {
                reason: "Page.createIsolatedWorld answered without a context".into(),
            })?;
        let installed = self.call_on(
            session,
            "Runtime.evaluate",
            json!({ "expression": format!("globalThis.__jevgate = {PAGE_JS}; 0"), "contextId": ctx }),
        )?;
        if installed.get("exceptionDetails").is_some() {
            return Err(Error::ExecutionFailed {
                reason: "the page library failed to install in a frame".into(),
            });
        }
        if let Some(f) = self.tab.frames.lock().get_mut(session) {
            f.world = Some(ctx);
        }
        Ok(ctx)
    }

    /// Calls `__jevgate.<expr>` in the main frame (`None`) or the frame of `session`.
    pub(crate) fn page_in(&self, session: Option<&str>, expr: &str) -> Result<Value> {
        let Some(session) = session else {
            return self.page_for_action(expr);
        };
        for attempt in 0..2 {
            let ctx = self.frame_world(session)?;
            let res = self.inner.cdp.call_interruptible(
                "Runtime.evaluate",
                json!({ "expression": format!("__jevgate.{expr}"), "contextId": ctx, "returnByValue": true }),
                Some(session),
                self.inner.opts.call_timeout,
                &|| self.tab.dialog_or_gone(),
            );
            match res {
                Ok(v) => return library_answer(&v),
                Err(CdpError::Protocol { message, .. })
                    if attempt == 0 && message.contains("ontext") =>
                {
                    // The frame's document changed under us: a new world, once.
                    if let Some(f) = self.tab.frames.lock().get_mut(session) {
                        f.world = None;
                    }
                }
                Err(e) => {
                    let err = self.frame_error("Runtime.evaluate", e);
                    return Err(if self.frame_known(session) {
                        err
                    } else {
                        stale(StaleCause::GenerationChanged)
                    });
                }
            }
        }
        Err(stale(StaleCause::GenerationChanged))
    }

    /// Asks every frame session not yet asked to auto-attach its nested frames (those attach
    /// before the answer, so a few rounds reach a few levels).
    fn prepare_frames(&self) {
        for _ in 0..MAX_FRAME_DEPTH {
            let pending = self.tab.frames.lock().not_ready();
            if pending.is_empty() {
                return;
            }
            for session in pending {
                // A frame that refuses stays without nested frames; it is still walked.
                let _ = auto_attach_frames(&self.inner, &session);
                if let Some(f) = self.tab.frames.lock().get_mut(&session) {
                    f.ready = true;
                }
            }
        }
    }

    /// Names, in the world `ctx` of `session`, the `<iframe>` element of each out-of-process
    /// frame it hosts. Best effort: an element that cannot be named is walked
    /// past (and counted as untagged).
    fn tag_children(&self, session: &str, ctx: i64) {
        let kids = self.tab.frames.lock().children_of(session);
        for kid in kids {
            // Named once per world; a failure is tried again at the next walk.
            if kid.tagged_in == Some((ctx, true)) {
                continue;
            }
            let ok = self.tag_one(session, ctx, &kid.frame_id).is_ok();
            if let Some(f) = self.tab.frames.lock().get_mut(&kid.session) {
                f.tagged_in = Some((ctx, ok));
            }
        }
    }

    fn tag_one(&self, session: &str, ctx: i64, frame_id: &str) -> Result<()> {
        let owner = self.call_on(session, "DOM.getFrameOwner", json!({ "frameId": frame_id }))?;
        let missing = || Error::ExecutionFailed {
            reason: "a frame's element could not be resolved".into(),
        };
        let node = owner["backendNodeId"].as_i64().ok_or_else(missing)?;
        let object = self.call_on(
            session,
            "DOM.resolveNode",
            json!({ "backendNodeId": node, "executionContextId": ctx }),
        )?;
        let id = object["object"]["objectId"]
            .as_str()
            .ok_or_else(missing)?
            .to_string();
        let tagged = self.call_on(
            session,
            "Runtime.callFunctionOn",
            json!({
                "objectId": id, "returnByValue": true,
                "functionDeclaration": "function (k) { return __jevgate.tag(this, k); }",
                "arguments": [{ "value": frame_id }],
            }),
        );
        let _ = self.call_on(session, "Runtime.releaseObject", json!({ "objectId": id }));
        if tagged?.get("exceptionDetails").is_some() {
            return Err(missing());
        }
        Ok(())
    }

    /// The walk of the main frame with every reachable out-of-process frame spliced in.
    /// `opts` are the page library's walk options without a region.
    pub(crate) fn observe_frames(&self, opts: &Value, region: Option<&Region>) -> Result<Composed> {
        if !self.tab.frames.lock().is_empty() {
            self.prepare_frames();
        }
        let mut cx = WalkCtx {
            opts,
            region,
            frames: Vec::new(),
            region_tree: None,
        };
        let mut walk = self.walk_frame(None, 0, 0, &mut cx)?;
        if let Some((Some(_), _)) = region {
            walk["tree"] = cx.region_tree.take().unwrap_or(Value::Null);
        }
        if !cx.frames.is_empty() {
            cut_to_budget(&mut walk, opts);
        }
        let mut fp = walk["fp"].as_str().unwrap_or_default().to_string();
        for (i, f) in cx.frames.iter().enumerate() {
            fp.push_str(&format!("|{}:{}:{}", i + 1, f.session, f.fp));
        }
        Ok(Composed {
            walk,
            frames: cx.frames,
            fp,
        })
    }

    /// Walks one frame (`None` = main, frame number `n`) and, depth first, the frames it hosts.
    fn walk_frame(
        &self,
        session: Option<&str>,
        n: usize,
        depth: usize,
        cx: &mut WalkCtx<'_>,
    ) -> Result<Value> {
        let here = session.unwrap_or(&self.tab.session_id).to_string();
        let has_kids = !self.tab.frames.lock().children_of(&here).is_empty();
        if has_kids {
            let ctx = match session {
                None => self.world()?,
                Some(s) => self.frame_world(s)?,
            };
            self.tag_children(&here, ctx);
        }
        let owner = cx.region.filter(|(s, _)| s.as_deref() == session);
        let mut opts = cx.opts.clone();
        if let Some((_, inner)) = owner {
            opts["region"] = json!(inner);
        }
        let expr = format!("observe({opts})");
        let mut walk = match session {
            None => self.page(&expr)?,
            Some(s) => self.page_in(Some(s), &expr)?,
        };
        if n > 0 {
            prefix_refs(&mut walk, n);
        }
        let mut missed = walk.get("untagged").is_some();
        let slots: Vec<String> = walk
            .get("slots")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s["key"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut children = Vec::new();
        for key in slots {
            let child = self.tab.frames.lock().session_of(&here, &key);
            let Some(child) = child.filter(|_| depth < MAX_FRAME_DEPTH) else {
                missed = true;
                continue;
            };
            let at = cx.frames.len();
            cx.frames.push(ObservedFrame {
                session: child.clone(),
                frame_id: key.clone(),
                parent: n,
                fp: String::new(),
            });
            match self.walk_frame(Some(&child), at + 1, depth + 1, cx) {
                Ok(w) => {
                    cx.frames[at].fp = w["fp"].as_str().unwrap_or_default().to_string();
                    children.push(Child { key, walk: w });
                }
                Err(e @ Error::DialogOpen { .. }) => return Err(e),
                Err(_) => {
                    // Left out: the frames after it are numbered as if it was never there.
                    cx.frames.truncate(at);
                    missed = true;
                }
            }
        }
        if walk.get("slots").is_some() {
            splice(&mut walk, children);
        }
        if missed {
            walk["truncated"]["controls"] = Value::Bool(true);
        }
        if owner.is_some() && session.is_some() {
            cx.region_tree = Some(walk["tree"].take());
        }
        Ok(walk)
    }

    /// Resolves an action's ref against the observation it was handed out by.
    pub(crate) fn scope_of(&self, obs: &Observed, reference: &str) -> Result<Scope> {
        let not_found = || Error::TargetNotFound {
            reason: "the ref was not handed out by this generation".into(),
        };
        let (n, inner) = split_ref(reference).ok_or_else(not_found)?;
        if n == 0 {
            return Ok(Scope {
                n,
                session: None,
                fp: obs.fp.clone(),
                inner: inner.to_string(),
            });
        }
        let f = obs.frames.get(n - 1).ok_or_else(not_found)?;
        Ok(Scope {
            n,
            session: Some(f.session.clone()),
            fp: f.fp.clone(),
            inner: inner.to_string(),
        })
    }

    /// Holds every observed out-of-process frame to its fingerprint (one cheap call each; none
    /// on a page without such frames). A frame gone or changed is `GENERATION_CHANGED`.
    pub(crate) fn check_frames(&self, obs: &Observed) -> Result<()> {
        for f in &obs.frames {
            if !self.frame_known(&f.session) {
                return Err(stale(StaleCause::GenerationChanged));
            }
            let v = self.page_in(Some(&f.session), &format!("check({})", json!(f.fp)))?;
            self.target_status(&v)?;
        }
        Ok(())
    }

    /// The top-level viewport point of the ref `inner` of frame `n`: scrolled into view and
    /// hit-tested inside its frame, then mapped through each enclosing `<iframe>` (each
    /// scrolled into view and hit-tested in its own parent).
    pub(crate) fn frame_point(&self, obs: &Observed, n: usize, inner: &str) -> Result<(f64, f64)> {
        let mut cur = obs.frames.get(n - 1).ok_or(Error::TargetNotFound {
            reason: "the ref was not handed out by this generation".into(),
        })?;
        let args = serde_json::to_string(&[inner, cur.fp.as_str()]).unwrap_or_default();
        let v = self.page_in(Some(&cur.session), &format!("point(...{args})"))?;
        self.target_status(&v)?;
        let (mut x, mut y) = (
            v["x"].as_f64().unwrap_or(0.0),
            v["y"].as_f64().unwrap_or(0.0),
        );
        loop {
            let (session, fp) = match cur.parent {
                0 => (None, obs.fp.as_str()),
                p => {
                    let parent = &obs.frames[p - 1];
                    (Some(parent.session.as_str()), parent.fp.as_str())
                }
            };
            let expr = format!(
                "framePoint({}, {x}, {y}, {})",
                json!(cur.frame_id),
                json!(fp)
            );
            let v = self.page_in(session, &expr)?;
            self.target_status(&v)?;
            x = v["x"].as_f64().unwrap_or(0.0);
            y = v["y"].as_f64().unwrap_or(0.0);
            match cur.parent {
                0 => return Ok((x, y)),
                p => cur = &obs.frames[p - 1],
            }
        }
    }

    /// Before input goes to a point inside out-of-process frames: waits (bounded by the call
    /// timeout) for at least four animation frames and 50 ms in the innermost frame and two in
    /// the page, so a frame
    /// just scrolled into view has been drawn and its hit-test region is live in the browser
    /// (otherwise Chromium may drop the mouse events — seen for a frame below the fold). Runs
    /// in our isolated worlds only, where the page cannot replace `requestAnimationFrame`; a
    /// page that starves its frames gets a timeout before anything is sent.
    pub(crate) fn settle_frames(&self, obs: &Observed, n: usize) -> Result<()> {
        const FRAME_SETTLED: &str = "new Promise(r => { const t0 = performance.now(); let n = 0; \
            const f = () => (++n >= 4 && performance.now() - t0 >= 50) ? r(true) : requestAnimationFrame(f); \
            requestAnimationFrame(f); })";
        const TWO_FRAMES: &str =
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))";
        let Some(inner) = obs.frames.get(n - 1) else {
            return Ok(());
        };
        let waits = [
            (
                FRAME_SETTLED,
                self.frame_world(&inner.session)?,
                inner.session.as_str(),
            ),
            (TWO_FRAMES, self.world()?, self.tab.session_id.as_str()),
        ];
        for (expression, ctx, session) in waits {
            self.inner
                .cdp
                .call_interruptible(
                    "Runtime.evaluate",
                    json!({ "expression": expression, "contextId": ctx, "awaitPromise": true, "returnByValue": true }),
                    Some(session),
                    self.inner.opts.call_timeout,
                    &|| self.tab.dialog_or_gone(),
                )
                .map_err(|e| self.frame_error("Runtime.evaluate", e))?;
        }
        Ok(())
    }

    /// Before a click at (`x`, `y`) inside out-of-process frame `n`: moves the mouse there until
    /// the frame's own document acknowledges it — a trusted `mousemove` reached it, seen by a
    /// capture listener in our isolated world (the page can neither see nor fake it) — so the
    /// press that follows is routed to the frame, not dropped by a hit-test region that is not
    /// live yet after a scroll (seen for a frame below the fold, under load). No timing: each
    /// round sends one move and waits at most two of the frame's animation frames for it (a
    /// move is dispatched before the next frame's callbacks). Bounded by [`FRAME_INPUT_WAIT`]
    /// as a grace on the browser's clock; past it the click goes ahead as before. A move is
    /// input: the caller marks the action sent first.
    pub(crate) fn await_frame_input(&self, obs: &Observed, n: usize, x: f64, y: f64) -> Result<()> {
        const ARM: &str = "(() => { const g = globalThis; if (!g.__jevgateInput) { \
            g.__jevgateInput = { seen: false }; addEventListener('mousemove', e => { \
            if (e.isTrusted) g.__jevgateInput.seen = true; }, true); } \
            g.__jevgateInput.seen = false; return true; })()";
        const SEEN: &str = "new Promise(r => { const g = globalThis.__jevgateInput; let n = 0; \
            const f = () => (g.seen || ++n > 2) ? r(g.seen) : requestAnimationFrame(f); f(); })";
        let Some(frame) = obs.frames.get(n - 1) else {
            return Ok(());
        };
        let session = frame.session.as_str();
        let ctx = self.frame_world(session)?;
        let eval = |expression: &str| {
            self.inner
                .cdp
                .call_interruptible(
                    "Runtime.evaluate",
                    json!({ "expression": expression, "contextId": ctx, "awaitPromise": true, "returnByValue": true }),
                    Some(session),
                    self.inner.opts.call_timeout,
                    &|| self.tab.dialog_or_gone(),
                )
                .map_err(|e| self.frame_error("Runtime.evaluate", e))
        };
        eval(ARM)?;
        let mut grace = crate::clock::Grace::new(&*self.inner.opts.clock, FRAME_INPUT_WAIT);
        while grace.next(FRAME_INPUT_WAIT).is_some() {
            self.input(
                "Input.dispatchMouseEvent",
                json!({ "type": "mouseMoved", "x": x, "y": y, "button": "none", "buttons": 0 }),
            )?;
            if self.tab.lock().dialog.is_some() {
                break;
            }
            if eval(SEEN)?["result"]["value"] == Value::Bool(true) {
                break;
            }
        }
        Ok(())
    }

    /// After a field in a frame was focused: waits (bounded) until that frame holds the page's
    /// focus, so key events reach it. Proceeds after the wait either way.
    pub(crate) fn wait_frame_focus(&self, session: &str) -> Result<()> {
        let clock = &*self.inner.opts.clock;
        let deadline = clock.now() + FRAME_FOCUS_WAIT;
        loop {
            if self.page_in(Some(session), "hasFocus()")? == Value::Bool(true)
                || clock.now() >= deadline
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Cuts a composed walk to the caller's budgets: controls past `maxControls`, text past
/// `maxTextChars` (each flagged truncated).
fn cut_to_budget(walk: &mut Value, opts: &Value) {
    let max_controls = opts["maxControls"].as_u64().unwrap_or(2000) as usize;
    if let Some(a) = walk["controls"].as_array_mut() {
        if a.len() > max_controls {
            a.truncate(max_controls);
            walk["truncated"]["controls"] = Value::Bool(true);
        }
    }
    let max_text = opts["maxTextChars"]
        .as_u64()
        .unwrap_or(crate::caps::TEXT_DEFAULT_CHARS as u64) as usize;
    let text = walk["text"].as_str().unwrap_or_default();
    if text.chars().count() > max_text {
        let cut: String = text.chars().take(max_text).collect();
        walk["text"] = Value::String(cut);
        walk["truncated"]["text"] = Value::Bool(true);
    }
}

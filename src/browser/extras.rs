//! The local backend's primitives for the seed-001 tool family that `actions.rs` does not
//! have (issue 15 part B): hover and drag by ref, mouse move and drag by coordinates, the
//! viewport size, file inputs, and the reads of the tab's journal (console messages, requests,
//! downloads).
//!
//! Like `actions.rs` it checks before it acts (dialog, navigation in flight, generation, the
//! page's fingerprint, hit-testing) and sends real input events only after every check passed.
//! An HTML5 drag the page starts is intercepted (`Input.setInterceptDrags`) and carried to its
//! drop with `Input.dispatchDragEvent`, since headless Chromium has no OS drag loop. It never
//! puts page text, URLs, file names or paths into an error or a log line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::backend::*;
use super::local::{LocalTab, Sent};
use crate::{Error, Result};

/// How many intermediate mouse moves a drag makes between its ends.
const DRAG_STEPS: u32 = 6;
/// How long a drag waits for the page to start an HTML5 drag after the button went down and
/// the mouse moved.
const DRAG_START_WAIT: Duration = Duration::from_millis(300);
/// Files one `set_input_files` sets at most.
const MAX_FILES: usize = 16;

impl LocalTab {
    pub(crate) fn run_extra(&self, command: &Command, sent: &Sent) -> Result<Response> {
        match command {
            Command::PageHover(a) => self.hover_now(a, sent).map(Response::Action),
            Command::PageDrag(a) => self.drag_now(a, sent).map(Response::Action),
            Command::MouseMove(a) => self.mouse_move_now(a, sent).map(Response::Action),
            Command::MouseDrag(a) => self.mouse_drag_now(a, sent).map(Response::Action),
            Command::PageResize(a) => self.resize_now(a, sent).map(Response::Action),
            Command::ConsoleMessages(a) => {
                Ok(Response::Console(self.tab.journal.lock().console(a)))
            }
            Command::NetworkRequests(a) => {
                Ok(Response::Network(self.tab.journal.lock().network(a)))
            }
            Command::SetInputFiles(a) => self.set_files_now(a, sent).map(Response::Action),
            Command::Downloads(_) => Ok(Response::Downloads(self.tab.journal.lock().downloads())),
            _ => Err(Error::Internal {
                reason: "not an issue 15 primitive".into(),
            }),
        }
    }

    /// The viewport size in CSS pixels: the one `page_resize` set, else the launch window.
    pub(crate) fn viewport(&self) -> (u32, u32) {
        self.tab
            .lock()
            .viewport
            .unwrap_or(self.inner.opts.window_size)
    }

    /// Refuses a point outside the viewport (before anything is sent).
    pub(crate) fn in_viewport(&self, x: f64, y: f64) -> Result<()> {
        let (w, h) = self.viewport();
        if x >= 0.0 && y >= 0.0 && x <= f64::from(w) && y <= f64::from(h) {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                name: "x/y",
                reason: "outside the viewport".into(),
            })
        }
    }

    fn mouse(&self, kind: &str, x: f64, y: f64, buttons: u32) -> Result<()> {
        let button = match (kind, buttons) {
            ("mouseMoved", 0) => "none",
            _ => "left",
        };
        let mut ev = json!({ "type": kind, "x": x, "y": y, "button": button, "buttons": buttons });
        if kind != "mouseMoved" {
            ev["clickCount"] = json!(1);
        }
        self.input("Input.dispatchMouseEvent", ev)
    }

    fn hover_now(&self, a: &HoverArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        let (x, y) = self.point_of(&obs, &a.reference)?;
        let before = self.started_seq();
        sent.mark();
        self.mouse("mouseMoved", x, y, 0)?;
        Ok(self.result(&a.operation_id, "page_hover", a.generation, before))
    }

    fn drag_now(&self, a: &DragArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        let from = self.point_of(&obs, &a.from_ref)?;
        let to = self.point_of(&obs, &a.to_ref)?;
        // Reaching the target may have scrolled the source away: both must be on screen at once.
        let again = self.point_of(&obs, &a.from_ref)?;
        if (again.0 - from.0).abs() > 1.0 || (again.1 - from.1).abs() > 1.0 {
            return Err(Error::InvalidArgument {
                name: "toRef",
                reason: "the two elements are not in the viewport together; scroll or resize first"
                    .into(),
            });
        }
        let before = self.started_seq();
        self.drag_between(again, to, sent)?;
        Ok(self.result(&a.operation_id, "page_drag", a.generation, before))
    }

    fn mouse_move_now(&self, a: &MouseMoveArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        self.check_all(&obs)?;
        self.in_viewport(a.x, a.y)?;
        let before = self.started_seq();
        sent.mark();
        self.mouse("mouseMoved", a.x, a.y, 0)?;
        Ok(self.result(&a.operation_id, "mouse_move", a.generation, before))
    }

    fn mouse_drag_now(&self, a: &MouseDragArgs, sent: &Sent) -> Result<ActionResult> {
        let obs = self.tab.check_generation(a.generation)?;
        self.check_all(&obs)?;
        self.in_viewport(a.from_x, a.from_y)?;
        self.in_viewport(a.to_x, a.to_y)?;
        let before = self.started_seq();
        self.drag_between((a.from_x, a.from_y), (a.to_x, a.to_y), sent)?;
        Ok(self.result(&a.operation_id, "mouse_drag", a.generation, before))
    }

    /// Press at `from`, move in steps to `to`, release — or, when the page started an HTML5
    /// drag (intercepted), enter/over/drop at `to` as Chromium's own drag loop would.
    fn drag_between(&self, from: (f64, f64), to: (f64, f64), sent: &Sent) -> Result<()> {
        sent.mark();
        self.mouse("mouseMoved", from.0, from.1, 0)?;
        if self.tab.lock().dialog.is_some() {
            return Ok(());
        }
        let intercepting = self
            .call("Input.setInterceptDrags", json!({ "enabled": true }))
            .is_ok();
        self.tab.lock().drag_data = None;
        let outcome = self.drag_moves(from, to, intercepting);
        if intercepting {
            let _ = self.call_plain("Input.setInterceptDrags", json!({ "enabled": false }));
        }
        outcome
    }

    fn drag_moves(&self, from: (f64, f64), to: (f64, f64), intercepting: bool) -> Result<()> {
        self.mouse("mousePressed", from.0, from.1, 1)?;
        for i in 1..=DRAG_STEPS {
            let t = f64::from(i) / f64::from(DRAG_STEPS);
            let (x, y) = (from.0 + (to.0 - from.0) * t, from.1 + (to.1 - from.1) * t);
            self.mouse("mouseMoved", x, y, 1)?;
            if self.tab.lock().dialog.is_some() {
                return Ok(());
            }
            if i == 1 && intercepting {
                // The page starts its drag on the first move past the threshold; the intercept
                // arrives shortly after.
                let clock = &*self.inner.opts.clock;
                let deadline = clock.now() + DRAG_START_WAIT;
                self.tab.wait_for(clock, deadline, |st| {
                    st.drag_data.is_some() || st.dialog.is_some() || st.gone
                });
            }
        }
        let data = self.tab.lock().drag_data.take();
        match data {
            Some(data) => {
                for kind in ["dragEnter", "dragOver", "drop"] {
                    self.input(
                        "Input.dispatchDragEvent",
                        json!({ "type": kind, "x": to.0, "y": to.1, "data": data }),
                    )?;
                }
                Ok(())
            }
            None => self.mouse("mouseReleased", to.0, to.1, 0),
        }
    }

    fn resize_now(&self, a: &ResizeArgs, sent: &Sent) -> Result<ActionResult> {
        let ok = |v: u32| (MIN_VIEWPORT..=MAX_VIEWPORT).contains(&v);
        if !ok(a.width) || !ok(a.height) {
            return Err(Error::InvalidArgument {
                name: "width/height",
                reason: format!("each must be {MIN_VIEWPORT} to {MAX_VIEWPORT} CSS pixels"),
            });
        }
        if self.tab.lock().gone {
            return Err(Error::TabUnavailable);
        }
        let (generation, before) = {
            let st = self.tab.lock();
            (st.generation, st.started_seq)
        };
        sent.mark();
        self.call_plain(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": a.width, "height": a.height, "deviceScaleFactor": 0, "mobile": false }),
        )?;
        self.tab.lock().viewport = Some((a.width, a.height));
        Ok(self.result(&a.operation_id, "page_resize", generation, before))
    }

    fn set_files_now(&self, a: &SetInputFilesArgs, sent: &Sent) -> Result<ActionResult> {
        if a.paths.len() > MAX_FILES {
            return Err(Error::InvalidArgument {
                name: "paths",
                reason: format!("at most {MAX_FILES} files"),
            });
        }
        // Opened now, link-free; copied below, after the page checks (issue 20 item 5).
        let mut files = Vec::with_capacity(a.paths.len());
        for p in &a.paths {
            files.push(upload_source(p)?);
        }
        let obs = self.tab.check_generation(a.generation)?;
        let scope = self.scope_of(&obs, &a.reference)?;
        if scope.n > 0 {
            let v = self.page_for_action(&format!("check({})", json!(obs.fp)))?;
            self.target_status(&v)?;
        }
        self.check_frames(&obs)?;
        let session = scope
            .session
            .clone()
            .unwrap_or_else(|| self.session().to_string());
        let ctx = match &scope.session {
            Some(s) => self.frame_world(s)?,
            None => self.world()?,
        };
        let args = serde_json::to_string(&[&scope.inner, &scope.fp]).unwrap_or_default();
        let res = self
            .inner
            .cdp
            .call_interruptible(
                "Runtime.evaluate",
                json!({ "expression": format!("__jevgate.fileTarget(...{args})"), "contextId": ctx }),
                Some(&session),
                self.inner.opts.call_timeout,
                &|| self.tab.dialog_or_gone(),
            )
            .map_err(|e| e.into_error("Runtime.evaluate"))?;
        let object = match (
            res["result"]["type"].as_str(),
            res["result"]["objectId"].as_str(),
        ) {
            (Some("object"), Some(id)) => id.to_string(),
            _ => {
                let status: Value = super::world::library_answer(&res)?;
                if status["status"] == "notfile" {
                    return Err(Error::InvalidArgument {
                        name: "ref",
                        reason: "not a file input (<input type=file>)".into(),
                    });
                }
                self.target_status(&status)?;
                return Err(Error::ExecutionFailed {
                    reason: "the page library answered no file input".into(),
                });
            }
        };
        let mut copies = Vec::with_capacity(files.len());
        for (file, name) in files {
            let copy = super::files::stage_copy(
                file,
                &name,
                &self.inner.uploads,
                self.inner.opts.max_upload_bytes,
            )?;
            copies.push(copy.to_string_lossy().into_owned());
        }
        let files = copies;
        let before = self.started_seq();
        sent.mark();
        let set = self.inner.cdp.call(
            "DOM.setFileInputFiles",
            json!({ "files": files, "objectId": object }),
            Some(&session),
            self.inner.opts.call_timeout,
        );
        let _ = self.inner.cdp.call(
            "Runtime.releaseObject",
            json!({ "objectId": object }),
            Some(&session),
            self.inner.opts.call_timeout,
        );
        set.map_err(|e| e.into_error("DOM.setFileInputFiles"))?;
        Ok(self.result(&a.operation_id, "set_input_files", a.generation, before))
    }

    /// Copies this tab's completed download named `name` (as `downloads` lists it) to
    /// `requested` confined to `workspace` (`confine`); the path written.
    /// `TARGET_NOT_FOUND` when the tab has no completed download of that name.
    ///
    /// ```no_run
    /// # use jevgate::browser::{LaunchOptions, LocalBrowser};
    /// let browser = LocalBrowser::launch(LaunchOptions::default())?;
    /// let tab = browser.current_tab()?;
    /// let saved = tab.save_download("report.csv", std::path::Path::new("/srv/ws"), "in/report.csv")?;
    /// # Ok::<(), jevgate::Error>(())
    /// ```
    pub fn save_download(&self, name: &str, workspace: &Path, requested: &str) -> Result<PathBuf> {
        let not_found = || Error::TargetNotFound {
            reason: "no completed download of that name in this tab".into(),
        };
        let download = self
            .tab
            .journal
            .lock()
            .completed(name)
            .ok_or_else(not_found)?;
        let dir = self.inner.downloads.as_ref().ok_or_else(not_found)?;
        if download.guid.is_empty() || download.guid.contains(['/', '\\', '.']) {
            return Err(not_found());
        }
        super::files::save_into(&dir.join(&download.guid), workspace, requested)
    }
}

/// The regular file an absolute `path` names, opened without following any link on the way
/// (a path the caller confined: no link there is expected), and the name the page sees.
fn upload_source(path: &str) -> Result<(std::fs::File, std::ffi::OsString)> {
    let p = Path::new(path);
    if !p.is_absolute() || path.contains('\0') {
        return Err(Error::InvalidArgument {
            name: "paths",
            reason: "each must be an absolute path (confined by the caller)".into(),
        });
    }
    let name = p.file_name().map(ToOwned::to_owned).unwrap_or_default();
    let (file, _) = super::files::open_beneath(Path::new("/"), path).map_err(|e| match e {
        Error::InvalidArgument { reason, .. } => Error::InvalidArgument {
            name: "paths",
            reason,
        },
        other => other,
    })?;
    Ok((file, name))
}

//! The tools that read the page without acting on it: `browser_snapshot` (the tree, or one
//! region of it), `browser_evaluate`, `browser_take_screenshot` and the two journal tools,
//! `browser_console_messages` / `browser_network_requests` (since this turn started).
//!
//! Everything read from the page goes inside the one untrusted envelope. It never stores a
//! screenshot itself (the call's [`ScreenshotSink`](super::ScreenshotSink) does, when there is
//! one) and never logs page output.

use serde_json::{json, Value};

use super::args::{bad, Args};
use super::{DataHandling, LogMarks, ManagedBrowser, ManagedRun};
use crate::browser::backend::{JavascriptArgs, LogArgs, ScreenshotArgs};
use crate::browser::StaleCause;
use crate::untrusted::wrap_text;
use crate::{Error, Result};

impl ManagedBrowser {
    /// `browser_snapshot`: the page view, or the region of `target` (of the current page).
    pub(super) fn snapshot(&self, a: &Args<'_>) -> Result<Value> {
        let region = match a.obj.get("target") {
            None | Some(Value::Null) => None,
            Some(_) => {
                let t = a.target("target")?;
                let obs = self.observe()?;
                let (generation, r) = self.resolve(&t, &obs)?;
                if generation != obs.generation {
                    return Err(Error::StaleObservation {
                        cause: StaleCause::GenerationChanged,
                    });
                }
                Some(r)
            }
        };
        self.page_view(region, None)
    }

    /// `browser_evaluate`: a function expression run in the page; its JSON value in the
    /// envelope.
    pub(super) fn evaluate(&self, a: &Args<'_>) -> Result<Value> {
        let function = a.str("function")?;
        if function.trim().is_empty() {
            return Err(bad(a.tool, "`function` must not be empty"));
        }
        let script = self.backend.javascript(JavascriptArgs {
            operation_id: self.op(),
            code: format!("(\n{function}\n)()"),
        })?;
        Ok(json!({"page": script.value, "truncated": script.truncated}))
    }

    /// `browser_take_screenshot`: the image for the model and, with a sink, the host's private
    /// artifact.
    pub(super) fn take_screenshot(&self, a: &Args<'_>, run: &ManagedRun<'_>) -> Result<Value> {
        let full_page = a.opt_bool("fullPage")?.unwrap_or(false);
        let shot = self.backend.page_screenshot(ScreenshotArgs {
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
        let sink = run
            .screenshots
            .filter(|_| run.data_handling == DataHandling::Standard);
        if let Some(sink) = sink {
            let bytes = data_encoding::BASE64
                .decode(shot.data.as_bytes())
                .map_err(|_| Error::ExecutionFailed {
                    reason: "the browser returned an image that is not base64".into(),
                })?;
            out["artifactId"] = json!(sink.store(&media_type, &bytes)?);
        }
        Ok(out)
    }

    /// `browser_console_messages` (`console`) / `browser_network_requests`: the current tab's
    /// entries since its mark, all inside one envelope; the mark then moves past them.
    pub(super) fn journal(&self, console: bool) -> Result<Value> {
        let tab = self.current_tab_id()?;
        let mark: LogMarks = self.marks.lock().get(&tab).copied().unwrap_or_default();
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
}

//! Dialogs and waits: `browser_handle_dialog` (the open dialog now, or armed before the action
//! that opens it) and `browser_wait_for` (text appearing or gone, or a fixed time).
//!
//! Every wait is bounded (at most [`WAIT_MAX`]) and on the backend's clock (R-CLK): a manual
//! clock decides when a wait ends, and the call's cancel token stops it early. It never shows a
//! prompt's answer or a dialog's message outside the envelope.

use std::time::Duration;

use serde_json::{json, Value};

use super::args::{bad, text_of, Args};
use super::ManagedBrowser;
use crate::browser::backend::{GetTextArgs, HandleDialogArgs};
use crate::CancelToken;
use crate::{Error, Result};

/// The longest `browser_wait_for` waits, and its default for text.
const WAIT_MAX: Duration = Duration::from_secs(30);
const WAIT_TEXT_DEFAULT: Duration = Duration::from_secs(10);
/// How often `browser_wait_for` reads the page text (at most; a manual clock polls faster).
const WAIT_POLL: Duration = Duration::from_millis(100);

impl ManagedBrowser {
    /// `browser_handle_dialog`: handles the open dialog, or arms the answer for the dialog the
    /// next action opens.
    pub(super) fn handle_dialog(&self, a: &Args<'_>) -> Result<Value> {
        let accept = a
            .opt_bool("accept")?
            .ok_or_else(|| bad(a.tool, "`accept` is required"))?;
        let prompt_text = a.opt_str("promptText")?.map(str::to_string);
        let args = HandleDialogArgs {
            accept,
            prompt_text,
        };
        match self.backend.handle_dialog(args.clone()) {
            Ok(_) => {
                *self.armed.lock() = None;
                let mut out = self.page_view(None, None)?;
                out["dialog"] = json!({"handled": if accept { "accepted" } else { "dismissed" }});
                Ok(out)
            }
            Err(Error::NoDialog) => {
                *self.armed.lock() = Some(args);
                Ok(json!({"armed": true, "accept": accept}))
            }
            Err(e) => Err(e),
        }
    }

    /// `browser_wait_for`: text appearing or gone, or a fixed time, on the backend's clock; stops
    /// when `cancel` fires.
    pub(super) fn wait_for(&self, a: &Args<'_>, cancel: Option<&CancelToken>) -> Result<Value> {
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
}

//! The state of one attached tab, kept current from DevTools events (R-BRW-OBS, R-BRW-STALE).
//!
//! This module owns what the reader thread learns about a tab — a navigation in flight, the
//! committed document, loads finished, an open dialog, the tab gone or crashed — plus the
//! generation bookkeeping of the last observation and the tab's busy flag, lease and isolated
//! world, an intercepted HTML5 drag and the viewport size set; console, network and download
//! events go to the tab's journal (`journal.rs`). It also owns the page's dialog budget (issue
//! 20 item 3: past [`DIALOG_BURST`] dialogs within [`DIALOG_WINDOW`] on one page, its further
//! dialogs are dismissed unseen), the notes a tab owes its next action result, and the link
//! from a crashed tab to the fresh tab that replaced it. It never calls the browser: the event
//! handler only updates state, wakes waiters and says which dialog answer to post, and no lock
//! here is held across I/O.

use crate::clock::{wait_slice, Clock, Instant, SharedClock};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};
use serde_json::Value;

use crate::observation::Dialog;
use crate::{Error, Result};

use super::backend::StaleCause;
use super::frames::{FrameSet, Observed, ObservedFrame};
use super::journal::Journal;

/// A page may open this many dialogs within [`DIALOG_WINDOW`]; the next one, and every one
/// after it until the tab leaves the page, is dismissed unseen (issue 20 item 3).
pub(crate) const DIALOG_BURST: usize = 20;
/// The window [`DIALOG_BURST`] is counted in, on the browser's clock.
pub(crate) const DIALOG_WINDOW: Duration = Duration::from_secs(5);

/// The note of a page whose dialogs are suppressed.
pub(crate) const DIALOGS_SUPPRESSED_NOTE: &str =
    "this page opened more than 20 dialogs within 5 s; \
its further dialogs are dismissed unseen until the tab leaves the page";
/// The note of a crashed tab replaced by a fresh one.
pub(crate) const CRASH_REPLACED_NOTE: &str = "the tab's page crashed; it was replaced by a fresh \
tab in the same session (the crashed page's history and state are gone)";

/// The note of a tab replaced because the page being left held a navigation with a dialog.
pub(crate) const TRAPPED_REPLACED_NOTE: &str = "the page being left kept opening dialogs and \
held the navigation; the tab was replaced by a fresh tab in the same session (the old page's \
history and state are gone)";

/// At most this many notes wait for the next action result.
const KEPT_NOTES: usize = 8;

/// One tab: its DevTools ids and its event-fed state.
pub(crate) struct TabShared {
    pub target_id: String,
    pub session_id: String,
    pub main_frame: Mutex<String>,
    pub state: Mutex<TabState>,
    /// The tab's out-of-process frames (never locked together with `state`).
    pub frames: Mutex<FrameSet>,
    /// Console messages, requests and downloads since the tab was attached (never locked
    /// together with `state`).
    pub journal: Mutex<Journal>,
    pub changed: Condvar,
    /// The browser's clock (the dialog budget's window is on it).
    clock: SharedClock,
    /// The fresh tab that replaced this one after its page crashed.
    replaced_by: Mutex<Option<Arc<TabShared>>>,
}

/// What the events and the last observation say about a tab.
#[derive(Default)]
pub(crate) struct TabState {
    /// A main-frame navigation started and its document is not ready yet.
    pub pending_nav: bool,
    /// Main-frame navigations started.
    pub started_seq: u64,
    /// Main-frame loads finished (frameStoppedLoading).
    pub stop_seq: u64,
    /// Same-document navigations (fragment, pushState, same-document history).
    pub same_doc_seq: u64,
    /// Cross-document commits of the main frame.
    pub doc_seq: u64,
    /// The main frame finished loading since its last commit.
    pub loaded_since_commit: bool,
    /// `stop_seq` when the last navigation started.
    pub stop_at_start: u64,
    /// The open JavaScript dialog.
    pub dialog: Option<Dialog>,
    /// Dialogs opened so far, shown or not; tells one open dialog from the next.
    pub dialog_seq: u64,
    /// A dialog of a page whose dialogs are suppressed is open (never shown; its answer is on
    /// the way): the answer it gets.
    pub unseen: Option<bool>,
    /// The tab was closed, detached or crashed.
    pub gone: bool,
    /// An operation runs on the tab.
    pub busy: bool,
    /// The generation of the last observation (0 before the first).
    pub generation: u64,
    /// The fingerprint of the last observation's controls, out-of-process frames included.
    pub fp: String,
    /// The main frame's own fingerprint at the last observation.
    pub main_fp: String,
    /// The out-of-process frames the last observation covered (`f<N>` is `frames[N - 1]`).
    pub frames: Vec<ObservedFrame>,
    /// `doc_seq` at the last observation.
    pub obs_doc: u64,
    /// The isolated world's execution context and the `doc_seq` it was made in.
    pub world: Option<(i64, u64)>,
    /// The tab lease holder.
    pub lease: Option<String>,
    /// The drag data of the last `Input.dragIntercepted` (an HTML5 drag the page started while
    /// drags are intercepted).
    pub drag_data: Option<Value>,
    /// The viewport `page_resize` set (CSS pixels); the launch window size before.
    pub viewport: Option<(u32, u32)>,
    /// The renderer of the tab's page crashed (the tab is also `gone`).
    pub crashed: bool,
    /// When the page's dialogs within the last [`DIALOG_WINDOW`] opened.
    pub dialog_times: VecDeque<Instant>,
    /// The page spent its dialog budget: its dialogs are dismissed as they open.
    pub dialogs_suppressed: bool,
    /// What the tab's next action result says once (suppressed dialogs, a crash replaced).
    pub notes: Vec<String>,
}

impl TabState {
    /// Adds a note for the next action result (once; bounded).
    pub(crate) fn note(&mut self, note: &str) {
        if self.notes.len() < KEPT_NOTES && !self.notes.iter().any(|n| n == note) {
            self.notes.push(note.to_string());
        }
    }
}

impl TabShared {
    pub(crate) fn new(target_id: String, session_id: String, clock: SharedClock) -> TabShared {
        TabShared {
            main_frame: Mutex::new(target_id.clone()),
            target_id,
            session_id,
            state: Mutex::new(TabState::default()),
            frames: Mutex::new(FrameSet::default()),
            journal: Mutex::new(Journal::default()),
            changed: Condvar::new(),
            clock,
            replaced_by: Mutex::new(None),
        }
    }

    /// The tab that stands for this one now: itself, or the last fresh tab that replaced it
    /// after a crash.
    pub(crate) fn current(self: &Arc<Self>) -> Arc<TabShared> {
        let mut tab = Arc::clone(self);
        loop {
            let next = tab.replaced_by.lock().clone();
            match next {
                Some(next) => tab = next,
                None => return tab,
            }
        }
    }

    /// Records that `fresh` replaced this crashed tab.
    pub(crate) fn replace_with(&self, fresh: Arc<TabShared>) {
        *self.replaced_by.lock() = Some(fresh);
        self.changed.notify_all();
    }

    /// Marks the tab's page crashed (and the tab gone) and wakes every waiter.
    pub(crate) fn mark_crashed(&self) {
        let mut st = self.state.lock();
        st.gone = true;
        st.crashed = true;
        drop(st);
        self.changed.notify_all();
    }

    /// Applies one event of this tab's session. `Some(accept)` when the event is a dialog of
    /// a page whose dialogs are suppressed: the caller answers it at once with `accept`
    /// (a `beforeunload` is accepted — leaving is what it asks — every other kind dismissed).
    pub(crate) fn apply(&self, method: &str, params: &Value) -> Option<bool> {
        let frame_of = |p: &Value| p.get("frameId").and_then(Value::as_str).map(str::to_string);
        let is_main = |id: Option<String>| id.is_some_and(|id| *self.main_frame.lock() == id);
        if std::env::var_os("JEVGATE_CDP_TRACE").is_some() {
            eprintln!(
                "[cdp {}] {method} main={}",
                &self.target_id[..6],
                is_main(frame_of(params))
            );
        }
        if method.starts_with("Runtime.")
            || method.starts_with("Log.")
            || method.starts_with("Network.")
        {
            self.journal.lock().apply(method, params);
            return None;
        }
        let mut answer = None;
        {
            let mut st = self.state.lock();
            match method {
                "Input.dragIntercepted" => {
                    st.drag_data = Some(params.get("data").cloned().unwrap_or(Value::Null));
                }
                "Page.frameStartedNavigating"
                | "Page.frameStartedLoading"
                | "Page.frameRequestedNavigation" => {
                    if is_main(frame_of(params)) {
                        if !st.pending_nav {
                            st.started_seq += 1;
                            st.stop_at_start = st.stop_seq;
                        }
                        st.pending_nav = true;
                    }
                }
                "Page.frameNavigated" => {
                    let frame = params.get("frame").unwrap_or(&Value::Null);
                    if frame.get("parentId").is_none() {
                        st.doc_seq += 1;
                        st.world = None;
                        st.loaded_since_commit = false;
                        // A new page has its own dialog budget.
                        st.dialog_times.clear();
                        st.dialogs_suppressed = false;
                    }
                }
                "Page.domContentEventFired" => st.pending_nav = false,
                "Page.frameStoppedLoading" => {
                    if is_main(frame_of(params)) {
                        st.pending_nav = false;
                        st.stop_seq += 1;
                        st.loaded_since_commit = true;
                    }
                }
                "Page.navigatedWithinDocument" => {
                    if is_main(frame_of(params)) {
                        st.same_doc_seq += 1;
                    }
                }
                "Page.javascriptDialogOpening" => {
                    let kind = params
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("alert");
                    let now = self.clock.now();
                    while st
                        .dialog_times
                        .front()
                        .is_some_and(|t| now.saturating_duration_since(*t) >= DIALOG_WINDOW)
                    {
                        st.dialog_times.pop_front();
                    }
                    if !st.dialogs_suppressed {
                        st.dialog_times.push_back(now);
                        if st.dialog_times.len() > DIALOG_BURST {
                            st.dialogs_suppressed = true;
                            st.dialog_times.clear();
                            st.note(DIALOGS_SUPPRESSED_NOTE);
                        }
                    }
                    st.dialog_seq += 1;
                    if st.dialogs_suppressed {
                        answer = Some(kind == "beforeunload");
                        st.unseen = answer;
                    } else {
                        let message = params.get("message").and_then(Value::as_str).unwrap_or("");
                        st.dialog = Some(Dialog {
                            kind: kind.to_string(),
                            message: message.chars().take(500).collect(),
                        });
                    }
                }
                "Page.javascriptDialogClosed" => {
                    st.dialog = None;
                    st.unseen = None;
                }
                "Inspector.targetCrashed" => {
                    st.gone = true;
                    st.crashed = true;
                }
                "Inspector.detached" => st.gone = true,
                _ => return None,
            }
        }
        self.changed.notify_all();
        answer
    }

    /// Marks the tab gone (detached, destroyed, connection lost) and wakes every waiter.
    pub(crate) fn mark_gone(&self) {
        self.state.lock().gone = true;
        self.changed.notify_all();
    }

    /// Waits (bounded by `timeout` on `clock`) until no other operation runs on the tab, then
    /// marks it busy.
    pub(crate) fn enter(&self, clock: &dyn Clock, timeout: Duration) -> Result<BusyGuard<'_>> {
        let deadline = clock.now() + timeout;
        let mut st = self.state.lock();
        while st.busy {
            let Some(slice) = wait_slice(clock, deadline) else {
                return Err(Error::BrowserTimeout { timeout });
            };
            self.changed.wait_for(&mut st, slice);
        }
        st.busy = true;
        Ok(BusyGuard { tab: self })
    }

    /// Waits until `done(state)` or `deadline` on `clock`; `true` when `done` held.
    pub(crate) fn wait_for(
        &self,
        clock: &dyn Clock,
        deadline: Instant,
        done: impl Fn(&TabState) -> bool,
    ) -> bool {
        let mut st = self.state.lock();
        loop {
            if done(&st) {
                return true;
            }
            let Some(slice) = wait_slice(clock, deadline) else {
                return false;
            };
            self.changed.wait_for(&mut st, slice);
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TabState> {
        self.state.lock()
    }

    /// The refusal for acting on this tab now, if any: gone, dialog, navigation in flight.
    pub(crate) fn refusal(&self) -> Option<Error> {
        let st = self.state.lock();
        if st.gone {
            return Some(Error::TabUnavailable);
        }
        if let Some(d) = &st.dialog {
            return Some(Error::DialogOpen {
                kind: d.kind.clone(),
            });
        }
        if st.pending_nav {
            return Some(Error::StaleObservation {
                cause: StaleCause::NavigationPending,
            });
        }
        None
    }

    /// Checks an action's observed generation; returns the fingerprints to hold the page to.
    pub(crate) fn check_generation(&self, generation: u64) -> Result<Observed> {
        if let Some(err) = self.refusal() {
            return Err(err);
        }
        let st = self.state.lock();
        if st.generation == 0 || generation != st.generation || st.obs_doc != st.doc_seq {
            return Err(Error::StaleObservation {
                cause: StaleCause::GenerationChanged,
            });
        }
        Ok(Observed {
            fp: st.main_fp.clone(),
            frames: st.frames.clone(),
        })
    }

    /// An interrupt for waits on this tab: a dialog opened or the tab went away.
    pub(crate) fn dialog_or_gone(&self) -> Option<Error> {
        let st = self.state.lock();
        if st.gone {
            return Some(Error::TabUnavailable);
        }
        st.dialog.as_ref().map(|d| Error::DialogOpen {
            kind: d.kind.clone(),
        })
    }
}

/// Clears the busy flag on drop.
pub(crate) struct BusyGuard<'a> {
    tab: &'a TabShared,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.tab.state.lock().busy = false;
        self.tab.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, SystemClock};
    use std::sync::Arc;

    /// Advances `clock` a second at a time until `waiter` ends; what it returned, and the real
    /// time it took.
    fn drive<T>(clock: &ManualClock, waiter: std::thread::JoinHandle<T>) -> (T, Duration) {
        let real = SystemClock::new();
        let started = real.now();
        while !waiter.is_finished() {
            clock.advance(Duration::from_secs(1));
            std::thread::yield_now();
        }
        (waiter.join().unwrap(), real.now() - started)
    }

    // R-CLK (issue 13 item 5): waiting for a busy tab and for a tab state are bounded by the
    // browser's clock: a manual clock moved past the deadline ends them (the old waits read
    // `std::time::Instant` and took their full length of real time).
    #[test]
    fn r_clk_tab_waits_end_when_the_manual_clock_passes_their_deadline() {
        let tab = Arc::new(TabShared::new(
            "t".into(),
            "s".into(),
            Arc::new(ManualClock::new()),
        ));
        let clock = ManualClock::new();
        let busy = tab.enter(&clock, Duration::from_secs(30)).unwrap();
        let waiter = {
            let (tab, clock) = (Arc::clone(&tab), clock.clone());
            std::thread::spawn(move || {
                matches!(
                    tab.enter(&clock, Duration::from_secs(30)).map(|_| ()),
                    Err(Error::BrowserTimeout { .. })
                )
            })
        };
        let (timed_out, real) = drive(&clock, waiter);
        assert!(timed_out);
        assert!(real < Duration::from_secs(20), "{real:?}");
        drop(busy);
        assert!(tab.enter(&clock, Duration::from_secs(30)).is_ok());

        let waiter = {
            let (tab, clock) = (Arc::clone(&tab), clock.clone());
            std::thread::spawn(move || {
                let deadline = clock.now() + Duration::from_secs(30);
                tab.wait_for(&clock, deadline, |st| st.gone)
            })
        };
        let (settled, real) = drive(&clock, waiter);
        assert!(!settled);
        assert!(real < Duration::from_secs(20), "{real:?}");
    }

    fn dialog(tab: &TabShared, kind: &str) -> Option<bool> {
        tab.apply(
            "Page.javascriptDialogOpening",
            &serde_json::json!({"type": kind, "message": "m"}),
        )
    }

    // Issue 20 item 3: a page gets 20 dialogs within 5 s on the browser's clock; the 21st and
    // every later one on that page are answered at once (dismissed, a beforeunload accepted)
    // and never shown, said once in a note; a new page has a fresh budget, and dialogs spread
    // out in time never run out of it.
    #[test]
    fn issue20_a_page_past_its_dialog_budget_is_suppressed_once_per_page() {
        let clock = ManualClock::new();
        let tab = TabShared::new("t".into(), "s".into(), Arc::new(clock.clone()));
        let closed = || tab.apply("Page.javascriptDialogClosed", &serde_json::json!({}));
        for i in 0..DIALOG_BURST {
            assert_eq!(dialog(&tab, "alert"), None, "dialog {i} is shown");
            assert!(tab.lock().dialog.is_some());
            closed();
            clock.advance(Duration::from_millis(100));
        }
        assert_eq!(dialog(&tab, "alert"), Some(false), "the 21st is dismissed");
        assert!(tab.lock().dialog.is_none() && tab.lock().dialogs_suppressed);
        assert_eq!(dialog(&tab, "confirm"), Some(false));
        assert_eq!(dialog(&tab, "beforeunload"), Some(true));
        clock.advance(Duration::from_secs(60));
        assert_eq!(
            dialog(&tab, "alert"),
            Some(false),
            "suppressed for the page"
        );
        assert_eq!(
            std::mem::take(&mut tab.lock().notes),
            vec![DIALOGS_SUPPRESSED_NOTE.to_string()],
            "said once"
        );
        // A new document: a fresh budget.
        tab.apply(
            "Page.frameNavigated",
            &serde_json::json!({"frame": {"id": "t"}}),
        );
        assert_eq!(dialog(&tab, "alert"), None);
        closed();
        // One dialog every 300 ms: never more than 17 within 5 s.
        for _ in 0..100 {
            clock.advance(Duration::from_millis(300));
            assert_eq!(dialog(&tab, "alert"), None);
            closed();
        }
        assert!(tab.lock().notes.is_empty());
    }
}

//! The embedded default backend: a local headless Chromium over the DevTools protocol
//! (SPEC §6, issue 8).
//!
//! This module owns the browser's lifetime (launch, tabs, close and drop), routing DevTools
//! events to tabs, the record of operations it ran (`operation_status`, with `Sent` marking that
//! an operation's first input went out, and `openable`, the one address check) and the dispatch
//! of [`Command`]s to the tab that runs them, and where downloads are saved (routing the
//! browser's download events to the tab that started them), the session's tab cap (issue 20
//! item 7: `tabs new` past it is refused, a popup past it closed as it appears) and the
//! replacement of a tab whose page crashed by a fresh tab on the next navigation (issue 20
//! item 3). `LocalTab`'s observation and actions
//! (`actions.rs`) and its frame walk (`frame_walk.rs`) sit above this file: they use it, never
//! the reverse. It never replays an operation id, never holds a
//! lock across a DevTools call, and never logs page content, URLs or typed text.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::backend::{
    ActionResult, BrowserBackend, Command, OperationRecord, Response, TabInfo, TabLeaseState,
    TabList, TabsAction, TabsArgs,
};
use super::cdp::{Cdp, Event, Poster};
use super::launch::{find_chromium, ChromiumProcess, LaunchOptions, Started};
use super::oplog::{check_operation_id, outcome_of, OperationLog};
use super::tab::TabShared;
use crate::{Error, Result};

/// How long a crashed tab's replacement may take to answer its first call before a second
/// replacement is tried (see `Inner::replace_tab`).
const REPLACEMENT_FIRST_ANSWER: Duration = Duration::from_secs(3);

/// Routes events to tabs by session: a tab's own session and the sessions of its
/// out-of-process frames (which only attach and detach here; their other events are not the
/// tab's — a frame's dialogs are reported on the tab's own session).
#[derive(Default)]
struct Router {
    by_session: Mutex<HashMap<String, Arc<TabShared>>>,
    /// The Chromium process, here so that a browser gone from under us (crash, kill) is reaped
    /// and its temporary profile removed as soon as its pipe closes, not only at close/drop.
    process: Mutex<Option<ChromiumProcess>>,
    /// Answers sent from the reader thread without waiting (a suppressed page's dialogs, a
    /// popup past the cap); set once the connection exists.
    poster: Mutex<Option<Poster>>,
    /// The page targets that exist (target discovery), ours and the pages' own popups.
    pages: Mutex<HashSet<String>>,
    /// The tab cap ([`LaunchOptions::max_tabs`], at least 1).
    max_tabs: AtomicUsize,
    /// Popups within the cap not attached yet (`tabs` attaches and lists them).
    popups: Mutex<Vec<String>>,
}

impl Router {
    fn post(&self, method: &str, params: Value, session: Option<&str>) {
        if let Some(poster) = self.poster.lock().as_ref() {
            poster.post(method, params, session);
        }
    }

    /// A page target appeared: counted; a popup (it has an opener) past the cap is closed at
    /// once and never counted (issue 20 item 7).
    fn page_created(&self, info: &Value) {
        if info["type"] != "page" {
            return;
        }
        let Some(target) = info["targetId"].as_str() else {
            return;
        };
        let popup = info["openerId"].as_str().is_some_and(|o| !o.is_empty());
        let mut pages = self.pages.lock();
        if pages.contains(target) {
            return;
        }
        if popup && pages.len() >= self.max_tabs.load(Ordering::Relaxed) {
            drop(pages);
            log::warn!("a page opened a popup past the session's tab cap; closed it");
            self.post("Target.closeTarget", json!({ "targetId": target }), None);
            return;
        }
        pages.insert(target.to_string());
        if popup {
            self.popups.lock().push(target.to_string());
        }
    }

    fn handle(&self, event: Event) {
        if let Some(session) = &event.session_id {
            let tab = self.by_session.lock().get(session).cloned();
            let Some(tab) = tab else { return };
            match event.method.as_str() {
                "Target.attachedToTarget" => {
                    let p = &event.params;
                    let child = p["sessionId"].as_str();
                    let target = p["targetInfo"]["targetId"].as_str();
                    if let (Some(child), Some(target), "iframe") = (
                        child,
                        target,
                        p["targetInfo"]["type"].as_str().unwrap_or(""),
                    ) {
                        tab.frames
                            .lock()
                            .add(child.into(), target.into(), session.clone());
                        self.by_session.lock().insert(child.into(), tab);
                    }
                }
                "Target.detachedFromTarget" => {
                    if let Some(child) = event.params["sessionId"].as_str() {
                        let gone = tab.frames.lock().remove_tree(child);
                        let mut map = self.by_session.lock();
                        for s in gone {
                            map.remove(&s);
                        }
                    }
                }
                _ if *session == tab.session_id => {
                    if let Some(accept) = tab.apply(&event.method, &event.params) {
                        // A dialog of a page whose dialogs are suppressed (issue 20 item 3).
                        self.post(
                            "Page.handleJavaScriptDialog",
                            json!({ "accept": accept }),
                            Some(session),
                        );
                    }
                }
                _ => {}
            }
            return;
        }
        match event.method.as_str() {
            "Browser.downloadWillBegin" => {
                let p = &event.params;
                let frame = p["frameId"].as_str().unwrap_or("");
                let tabs: Vec<Arc<TabShared>> = self.by_session.lock().values().cloned().collect();
                let owner = tabs
                    .iter()
                    .find(|t| t.target_id == frame || *t.main_frame.lock() == frame);
                if let (Some(tab), Some(guid)) = (owner, p["guid"].as_str()) {
                    tab.journal
                        .lock()
                        .download_begins(guid, p["suggestedFilename"].as_str().unwrap_or(""));
                }
            }
            "Browser.downloadProgress" => {
                let p = &event.params;
                let guid = p["guid"].as_str().unwrap_or("");
                let tabs: Vec<Arc<TabShared>> = self.by_session.lock().values().cloned().collect();
                for tab in tabs {
                    let mut journal = tab.journal.lock();
                    if journal.download_progress(
                        guid,
                        p["receivedBytes"].as_u64().unwrap_or(0),
                        p["state"].as_str().unwrap_or(""),
                    ) {
                        break;
                    }
                }
            }
            "Target.detachedFromTarget" => {
                let session = event.params.get("sessionId").and_then(Value::as_str);
                let tab = session.and_then(|s| self.by_session.lock().get(s).cloned());
                if let Some(tab) = tab {
                    tab.mark_gone();
                }
            }
            "Target.targetCreated" => self.page_created(&event.params["targetInfo"]),
            "Target.targetDestroyed" | "Target.targetCrashed" => {
                let target = event.params.get("targetId").and_then(Value::as_str);
                let destroyed = event.method == "Target.targetDestroyed";
                if let (true, Some(target)) = (destroyed, target) {
                    self.pages.lock().remove(target);
                    self.popups.lock().retain(|p| p != target);
                }
                let tabs: Vec<Arc<TabShared>> = self.by_session.lock().values().cloned().collect();
                for tab in tabs {
                    if Some(tab.target_id.as_str()) == target {
                        if destroyed {
                            tab.mark_gone();
                        } else {
                            tab.mark_crashed();
                        }
                    }
                }
            }
            "jevgate.disconnected" => {
                let tabs: Vec<Arc<TabShared>> = self.by_session.lock().values().cloned().collect();
                for tab in tabs {
                    tab.mark_gone();
                }
                // Chromium closed its end of the pipe: it exited or crashed. End what is left
                // of its group, reap it, remove its temporary profile (never touches the pipe,
                // so it is safe on the reader thread).
                let process = self.process.lock().take();
                if let Some(mut process) = process {
                    log::warn!("the browser closed its DevTools pipe; ending its processes");
                    process.kill();
                }
            }
            _ => {}
        }
    }
}

pub(crate) struct Inner {
    pub(crate) cdp: Cdp,
    /// Calls sent without waiting for their answers (a dialog answered while a navigation
    /// waits).
    pub(crate) poster: Poster,
    pub(crate) opts: LaunchOptions,
    router: Arc<Router>,
    tabs: Mutex<Vec<Arc<TabShared>>>,
    current: Mutex<Option<Arc<TabShared>>>,
    /// The record `operation_status` reads (the last 1,000 operations, this browser's life).
    ops: Mutex<OperationLog>,
    closed: AtomicBool,
    /// Where the browser saves downloads (`<profile>/jevgate-downloads`, one file per download
    /// named by its guid); `None` when it could not be set up.
    pub(crate) downloads: Option<std::path::PathBuf>,
    /// Where uploads are staged (`<profile>/jevgate-uploads`, owner only): the private copies
    /// Chromium reads instead of workspace files; removed when the browser ends.
    pub(crate) uploads: std::path::PathBuf,
}

/// A local headless Chromium started and owned by jevgate. Cheap to clone (an `Arc` inside);
/// the browser ends when [`LocalBrowser::close`] is called, or when the last clone and the last
/// [`LocalTab`] handle are dropped, or when the host process dies (a watchdog ends it).
///
/// As a [`BrowserBackend`] it acts on its current tab (the first one, or the one `tabs`
/// selected); [`LocalBrowser::open_tab`] gives a handle bound to one tab.
///
/// ```no_run
/// use jevgate::browser::{BrowserBackend, LaunchOptions, LocalBrowser, SnapshotArgs};
/// let browser = LocalBrowser::launch(LaunchOptions::default())?;
/// browser.navigate("http://127.0.0.1:8080/")?;
/// println!("{}", browser.snapshot(SnapshotArgs::default())?.text);
/// browser.close();
/// # Ok::<(), jevgate::Error>(())
/// ```
#[derive(Clone)]
pub struct LocalBrowser {
    inner: Arc<Inner>,
}

/// A handle on one tab of a [`LocalBrowser`]; a [`BrowserBackend`] acting on that tab only.
#[derive(Clone)]
pub struct LocalTab {
    pub(crate) inner: Arc<Inner>,
    pub(crate) tab: Arc<TabShared>,
}

impl std::fmt::Debug for LocalBrowser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBrowser")
            .field("pid", &self.pid())
            .field("usable", &self.is_usable())
            .finish()
    }
}

impl std::fmt::Debug for LocalTab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTab")
            .field("id", &self.tab.target_id)
            .finish()
    }
}

impl LocalBrowser {
    /// Starts Chromium and attaches to its first tab. `BROWSER_UNAVAILABLE` when no Chromium
    /// is installed or it cannot start.
    pub fn launch(opts: LaunchOptions) -> Result<LocalBrowser> {
        let exe = find_chromium(opts.executable.as_deref())?;
        let router = Arc::new(Router::default());
        router
            .max_tabs
            .store(opts.max_tabs.max(1), Ordering::Relaxed);
        let (process, cdp) = match start_connected(&opts, &exe, &router) {
            Err(Started::ExitedEarly) => {
                log::warn!("Chromium exited during start-up; starting it once more");
                start_connected(&opts, &exe, &router).map_err(Started::into_error)?
            }
            other => other.map_err(Started::into_error)?,
        };
        let downloads = process.profile().join("jevgate-downloads");
        let uploads = process.profile().join("jevgate-uploads");
        // Copies a host killed outright left in a persistent profile.
        let _ = std::fs::remove_dir_all(&uploads);
        *router.process.lock() = Some(process);
        let downloads = if opts.strict {
            // Strict data handling: a download is refused, never written.
            let deny = json!({ "behavior": "deny" });
            if let Err(e) = cdp.call("Browser.setDownloadBehavior", deny, None, opts.call_timeout) {
                log::warn!(
                    "downloads not refused: {}",
                    e.into_error("Browser.setDownloadBehavior").code()
                );
            }
            None
        } else {
            super::launch::create_private_dir(&downloads, true)
                .and_then(|()| {
                    cdp.call(
                        "Browser.setDownloadBehavior",
                        json!({
                            "behavior": "allowAndName",
                            "downloadPath": downloads.to_string_lossy(),
                            "eventsEnabled": true,
                        }),
                        None,
                        opts.call_timeout,
                    )
                    .map_err(|e| e.into_error("Browser.setDownloadBehavior"))
                })
                .map(|_| downloads)
                .map_err(|e| log::warn!("downloads are not kept: {}", e.code()))
                .ok()
        };
        // Every page target is seen as it appears: the tab cap counts the pages' own popups.
        if let Err(e) = cdp.call(
            "Target.setDiscoverTargets",
            json!({ "discover": true }),
            None,
            opts.call_timeout,
        ) {
            log::warn!(
                "target discovery failed; popups are not counted: {}",
                e.into_error("Target.setDiscoverTargets").code()
            );
        }
        let inner = Arc::new(Inner {
            poster: cdp.poster(),
            cdp,
            opts,
            router,
            tabs: Mutex::new(Vec::new()),
            current: Mutex::new(None),
            ops: Mutex::new(OperationLog::default()),
            closed: AtomicBool::new(false),
            downloads,
            uploads,
        });
        let browser = LocalBrowser { inner };
        let first = browser.first_page_target();
        let tab = match first.and_then(|target| browser.inner.attach(&target)) {
            Ok(tab) => tab,
            Err(e) => {
                browser.close();
                return Err(e);
            }
        };
        *browser.inner.current.lock() = Some(tab);
        Ok(browser)
    }

    fn first_page_target(&self) -> Result<String> {
        let targets = self.inner.call("Target.getTargets", json!({}), None)?;
        targets["targetInfos"]
            .as_array()
            .and_then(|list| {
                list.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["targetId"].as_str())
            })
            .map(str::to_string)
            .map_or_else(|| self.inner.create_target("about:blank"), Ok)
    }

    /// Opens a new tab (about:blank) and returns a handle bound to it; the current tab of the
    /// browser does not change. `TAB_LIMIT` when the browser already has
    /// [`LaunchOptions::max_tabs`] tabs (its pages' popups included).
    pub fn open_tab(&self) -> Result<LocalTab> {
        let tab = self.inner.new_tab()?;
        Ok(LocalTab {
            inner: self.inner.clone(),
            tab,
        })
    }

    /// A handle on the current tab.
    pub fn current_tab(&self) -> Result<LocalTab> {
        let tab = self
            .inner
            .current
            .lock()
            .clone()
            .ok_or(Error::TabUnavailable)?
            .current();
        Ok(LocalTab {
            inner: self.inner.clone(),
            tab,
        })
    }

    /// Loads `url` in the current tab and waits (bounded) for it to settle; a shortcut for
    /// `tab_navigate` with a generated operation id.
    pub fn navigate(&self, url: &str) -> Result<ActionResult> {
        self.current_tab()?.navigate(url)
    }

    /// The process id of the browser process (for hosts that watch processes, and tests).
    pub fn pid(&self) -> Option<u32> {
        self.inner
            .router
            .process
            .lock()
            .as_ref()
            .map(ChromiumProcess::pid)
    }

    /// Ends the browser: asks it to close, then kills its process group, reaps it, joins the
    /// connection's threads and removes a temporary profile. Idempotent; bounded in time.
    pub fn close(&self) {
        self.inner.shutdown();
    }

    /// The browser is running and connected (not closed, not exited or crashed).
    pub fn is_usable(&self) -> bool {
        !self.inner.closed.load(Ordering::SeqCst) && !self.inner.cdp.is_closed()
    }
}

impl LocalTab {
    /// The tab's id (its DevTools target id) when the handle was made. A tab whose page
    /// crashed, or held a navigation away with dialogs, is replaced by a fresh tab with a new
    /// id; the handle then acts on the fresh tab (`tabs` lists its id).
    pub fn id(&self) -> &str {
        &self.tab.target_id
    }

    /// Loads `url` and waits (bounded) for it to settle, with a generated operation id.
    pub fn navigate(&self, url: &str) -> Result<ActionResult> {
        let id = format!("nav-{}", super::world::next_internal_id());
        self.tab_navigate(super::backend::NavigateArgs {
            operation_id: id,
            url: url.to_string(),
        })
    }

    /// Closes this tab (its replacement, when it was replaced).
    pub fn close(&self) -> Result<()> {
        self.inner.close_tab(&self.tab.current().target_id)
    }
}

impl Inner {
    pub(crate) fn call(&self, method: &str, params: Value, session: Option<&str>) -> Result<Value> {
        self.cdp
            .call(method, params, session, self.opts.call_timeout)
            .map_err(|e| e.into_error(method))
    }

    /// Opens a tab in its own window, where it stays visible: a tab behind another in one
    /// window is hidden and draws nothing, and Chromium then may not route a mouse event into
    /// its out-of-process iframes (the click lands on the `<iframe>` element instead; seen in
    /// tests/browser_frames.rs with tabs run in parallel).
    fn create_target(&self, url: &str) -> Result<String> {
        let created = self.call(
            "Target.createTarget",
            json!({ "url": url, "newWindow": true }),
            None,
        )?;
        created["targetId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Error::ExecutionFailed {
                reason: "Target.createTarget answered without a target id".into(),
            })
    }

    /// How many tabs the session has: its page targets (ours and the pages' popups), or the
    /// tabs attached when discovery gave none.
    fn tab_count(&self) -> usize {
        self.router.pages.lock().len().max(self.tabs.lock().len())
    }

    fn max_tabs(&self) -> usize {
        self.router.max_tabs.load(Ordering::Relaxed)
    }

    /// A new attached tab (about:blank) within the cap: `TAB_LIMIT` before anything is opened
    /// when the cap is reached, and the tab closed again when a popup took the last place
    /// while it opened.
    fn new_tab(&self) -> Result<Arc<TabShared>> {
        let limit = self.max_tabs();
        if self.tab_count() >= limit {
            return Err(Error::TabLimit { limit });
        }
        let target = self.create_target("about:blank")?;
        let tab = self.attach(&target)?;
        if self.tab_count() > limit {
            let _ = self.close_tab(&target);
            return Err(Error::TabLimit { limit });
        }
        Ok(tab)
    }

    /// Replaces the tab `old`, whose page crashed, by a fresh tab ([`Inner::replace_tab`]).
    /// Concurrent callers agree on one replacement (the busy flag of `old` orders them).
    fn replace_crashed(&self, old: &Arc<TabShared>) -> Result<Arc<TabShared>> {
        let _busy = old.enter(&*self.opts.clock, self.opts.call_timeout)?;
        let now = old.current();
        if !Arc::ptr_eq(&now, old) {
            return Ok(now);
        }
        log::warn!("a tab's page crashed; replacing it by a fresh tab");
        self.replace_tab(old, super::tab::CRASH_REPLACED_NOTE)
    }

    /// Replaces the tab `old` (its page crashed, or trapped a navigation away) by a fresh tab
    /// (about:blank) in the same browser: same place in the list, current when `old` was,
    /// `note` said once in its next action result; `old`'s handles follow it. `old` is closed
    /// (best effort). The caller holds `old`'s busy flag.
    pub(crate) fn replace_tab(&self, old: &Arc<TabShared>, note: &str) -> Result<Arc<TabShared>> {
        let open = |first_answer| {
            let target = self.create_target("about:blank")?;
            self.attach_within(&target, first_answer).inspect_err(|_| {
                // Best effort: a tab that did not start is not left behind.
                let _ = self.call("Target.closeTarget", json!({ "targetId": target }), None);
            })
        };
        // Right after a crash Chromium may give the fresh tab a renderer process the crash
        // already killed (it has not noticed yet): its first call then never answers. A
        // second fresh tab gets a live one, so the first is given a few seconds, not the whole
        // call timeout (a fresh blank tab answers in well under one even on a loaded machine).
        let quick = self.opts.call_timeout.min(REPLACEMENT_FIRST_ANSWER);
        let fresh = open(quick).or_else(|e| {
            log::warn!(
                "a replacement tab did not start ({}); trying once more",
                e.code()
            );
            open(self.opts.call_timeout)
        })?;
        {
            let mut tabs = self.tabs.lock();
            tabs.retain(|t| !Arc::ptr_eq(t, &fresh));
            match tabs.iter().position(|t| Arc::ptr_eq(t, old)) {
                Some(i) => tabs[i] = fresh.clone(),
                None => tabs.push(fresh.clone()),
            }
        }
        self.router
            .by_session
            .lock()
            .retain(|_, t| !Arc::ptr_eq(t, old));
        {
            let mut current = self.current.lock();
            if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, old)) {
                *current = Some(fresh.clone());
            }
        }
        fresh.lock().note(note);
        old.replace_with(fresh.clone());
        old.mark_gone();
        if self
            .call(
                "Target.closeTarget",
                json!({ "targetId": old.target_id }),
                None,
            )
            .is_ok()
        {
            self.router.pages.lock().remove(&old.target_id);
        }
        Ok(fresh)
    }

    fn attach(&self, target_id: &str) -> Result<Arc<TabShared>> {
        self.attach_within(target_id, self.opts.call_timeout)
    }

    /// [`Self::attach`] whose tab must answer its first call within `first_answer`.
    fn attach_within(&self, target_id: &str, first_answer: Duration) -> Result<Arc<TabShared>> {
        let attached = self.call(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
            None,
        )?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| Error::ExecutionFailed {
                reason: "Target.attachToTarget answered without a session".into(),
            })?
            .to_string();
        let tab = Arc::new(TabShared::new(
            target_id.to_string(),
            session.clone(),
            Arc::clone(&self.opts.clock),
        ));
        self.router
            .by_session
            .lock()
            .insert(session.clone(), tab.clone());
        let enabled = self
            .cdp
            .call("Page.enable", json!({}), Some(&session), first_answer)
            .map_err(|e| e.into_error("Page.enable"));
        if let Err(e) = enabled {
            // Not a tab: its session's events have nowhere to go.
            self.router.by_session.lock().remove(&session);
            return Err(e);
        }
        // The tab's journal (console, page errors, requests) starts with the tab; without
        // these domains the tab still works and its journal stays empty — as in strict data
        // handling, which never enables them.
        let journal: &[&str] = if self.opts.strict {
            &[]
        } else {
            &["Runtime.enable", "Log.enable", "Network.enable"]
        };
        for domain in journal {
            if let Err(e) = self.call(domain, json!({}), Some(&session)) {
                log::warn!("{domain} failed: {}", e.code());
            }
        }
        // Without it the tab still works; its cross-origin iframes stay out of observations.
        let _ = auto_attach_frames(self, &session);
        let tree = self.call("Page.getFrameTree", json!({}), Some(&session))?;
        if let Some(id) = tree["frameTree"]["frame"]["id"].as_str() {
            *tab.main_frame.lock() = id.to_string();
        }
        self.tabs.lock().push(tab.clone());
        Ok(tab)
    }

    fn close_tab(&self, target_id: &str) -> Result<()> {
        let tab = self
            .tabs
            .lock()
            .iter()
            .find(|t| t.target_id == target_id)
            .cloned()
            .ok_or(Error::TabUnavailable)?;
        self.call("Target.closeTarget", json!({ "targetId": target_id }), None)?;
        // No longer counted against the cap, whenever its destruction event comes.
        self.router.pages.lock().remove(target_id);
        tab.mark_gone();
        self.tabs.lock().retain(|t| t.target_id != target_id);
        self.router
            .by_session
            .lock()
            .retain(|_, t| !Arc::ptr_eq(t, &tab));
        let mut current = self.current.lock();
        if current.as_ref().is_some_and(|c| c.target_id == target_id) {
            *current = self.tabs.lock().first().cloned();
        }
        Ok(())
    }

    fn shutdown(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let process = self.router.process.lock().take();
        if !self.cdp.is_closed() {
            let _ = self
                .cdp
                .call("Browser.close", json!({}), None, Duration::from_secs(2));
        }
        self.cdp.close();
        if let Some(mut process) = process {
            process.wait_exit(&*self.opts.clock, Duration::from_secs(2));
            process.kill();
        }
        // The staged uploads go with the session (a temporary profile goes as a whole).
        let _ = std::fs::remove_dir_all(&self.uploads);
        for tab in self.tabs.lock().iter() {
            tab.mark_gone();
        }
    }

    /// Attaches the popups the pages opened (within the cap) so that `tabs` lists them and
    /// can select them; one closed meanwhile is skipped.
    fn adopt_popups(&self) {
        let popups: Vec<String> = std::mem::take(&mut *self.router.popups.lock());
        for target in popups {
            let known = self.tabs.lock().iter().any(|t| t.target_id == target);
            if !known && self.router.pages.lock().contains(&target) {
                if let Err(e) = self.attach(&target) {
                    log::warn!("a popup could not be attached: {}", e.code());
                }
            }
        }
    }

    fn tabs_command(&self, args: &TabsArgs) -> Result<TabList> {
        self.adopt_popups();
        match args.action {
            TabsAction::List => {}
            TabsAction::New => {
                let tab = self.new_tab()?;
                *self.current.lock() = Some(tab);
            }
            TabsAction::Select => {
                let id = args
                    .tab_id
                    .as_deref()
                    .ok_or_else(|| Error::InvalidArgument {
                        name: "tabId",
                        reason: "select needs a tabId".into(),
                    })?;
                let tab = self
                    .tabs
                    .lock()
                    .iter()
                    .find(|t| t.target_id == id)
                    .cloned()
                    .ok_or(Error::TabUnavailable)?;
                *self.current.lock() = Some(tab);
            }
            TabsAction::Close => {
                let id = args
                    .tab_id
                    .as_deref()
                    .ok_or_else(|| Error::InvalidArgument {
                        name: "tabId",
                        reason: "close needs a tabId".into(),
                    })?;
                self.close_tab(id)?;
            }
        }
        let infos = self.call("Target.getTargets", json!({}), None)?;
        let infos = infos["targetInfos"].as_array().cloned().unwrap_or_default();
        let current = self.current.lock().as_ref().map(|t| t.target_id.clone());
        let tabs = self.tabs.lock().clone();
        Ok(TabList {
            tabs: tabs
                .iter()
                .map(|t| {
                    let info = infos.iter().find(|i| i["targetId"] == t.target_id.as_str());
                    let field = |k: &str| {
                        info.and_then(|i| i[k].as_str())
                            .unwrap_or_default()
                            .to_string()
                    };
                    TabInfo {
                        tab_id: t.target_id.clone(),
                        url: field("url"),
                        title: field("title"),
                        current: current.as_deref() == Some(t.target_id.as_str()),
                    }
                })
                .collect(),
        })
    }

    /// Runs a mutating command under its operation id: refuses a malformed or reused id with
    /// nothing sent (never replays), records it running, then writes its outcome the moment it
    /// is known (`oplog.rs` says what each outcome means): completed, failed after running,
    /// refused before any input went out, or lost — input went out and no answer came.
    pub(crate) fn run_operation(
        &self,
        command: &Command,
        run: impl FnOnce(&Sent) -> Result<Response>,
    ) -> Result<Response> {
        let Some(id) = command.operation_id() else {
            return run(&Sent::default());
        };
        check_operation_id(id)?;
        let clock = &*self.opts.clock;
        if !self
            .ops
            .lock()
            .begin(id, command.tool(), clock.wall_millis())
        {
            return Err(Error::InvalidArgument {
                name: "operationId",
                reason:
                    "already used on this browser; read operation_status instead (nothing was sent)"
                        .into(),
            });
        }
        let sent = Sent::default();
        let outcome = run(&sent);
        let (result, code) = match &outcome {
            Ok(_) => (Ok(()), None),
            Err(e) => (Err(e), Some(e.code())),
        };
        self.ops.lock().finish(
            id,
            outcome_of(result, sent.get()),
            code,
            clock.wall_millis(),
        );
        outcome
    }

    /// `BROWSER_UNAVAILABLE` once the browser was closed or its connection was lost.
    fn usable(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) || self.cdp.is_closed() {
            return Err(Error::BrowserUnavailable {
                reason: if self.closed.load(Ordering::SeqCst) {
                    "the browser was closed".into()
                } else {
                    "the browser connection was lost (the browser exited or closed it)".into()
                },
            });
        }
        Ok(())
    }

    /// What the record says about `id` (the caller checked the id).
    fn operation_status(&self, id: &str) -> OperationRecord {
        self.ops.lock().status(id)
    }

    fn lease(&self, tab: &TabShared, args: &super::backend::TabLeaseArgs) -> Result<TabLeaseState> {
        use super::backend::LeaseAction;
        let mut st = tab.lock();
        match args.action {
            LeaseAction::Acquire => {
                if st.lease.is_some() {
                    return Err(Error::TabLeaseHeld);
                }
                let id = format!("lease-{}", super::world::next_internal_id());
                st.lease = Some(id.clone());
                Ok(TabLeaseState {
                    held: true,
                    lease_id: Some(id),
                })
            }
            LeaseAction::Release => {
                if st.lease.is_some() && st.lease != args.lease_id {
                    return Err(Error::TabLeaseHeld);
                }
                st.lease = None;
                Ok(TabLeaseState {
                    held: false,
                    lease_id: None,
                })
            }
        }
    }
}

/// Set once the first input event of an operation is about to go out, so a failure after it
/// is recorded as unknown rather than not executed.
#[derive(Default)]
pub(crate) struct Sent(pub(super) Cell<bool>);

impl Sent {
    pub(crate) fn mark(&self) {
        self.0.set(true);
    }
    pub(crate) fn get(&self) -> bool {
        self.0.get()
    }
}

/// `url` trimmed, when it is an address a tab may open (http, https, about:blank); the same
/// refusal for `tab_navigate` and `tabs new`, checked before anything is opened or sent.
pub(crate) fn openable(url: &str) -> Result<&str> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower == "about:blank" {
        Ok(url)
    } else {
        Err(Error::NavigationFailed {
            reason: "only http, https and about:blank addresses are opened".into(),
        })
    }
}

/// Asks `session` to attach (flat, not paused) to its out-of-process iframes; the frames that
/// exist are attached before the answer arrives, later ones as they appear.
pub(crate) fn auto_attach_frames(inner: &Inner, session: &str) -> Result<()> {
    inner
        .call(
            "Target.setAutoAttach",
            json!({
                "autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true,
                "filter": [{ "type": "iframe" }],
            }),
            Some(session),
        )
        .map(|_| ())
}

/// One start attempt: spawns Chromium on its DevTools pipe and waits (bounded by
/// `launch_timeout`) for the answer to a first call. A Chromium that closes the pipe first (a
/// start-up failure seen on loaded machines) is `ExitedEarly`, worth one more attempt; on any
/// failure the process is killed and reaped and its temporary profile removed.
fn start_connected(
    opts: &LaunchOptions,
    exe: &std::path::Path,
    router: &Arc<Router>,
) -> std::result::Result<(ChromiumProcess, Cdp), Started> {
    let (mut process, pipe) = ChromiumProcess::spawn(opts, exe)?;
    let handler_router = router.clone();
    let cdp = match Cdp::over_pipe(
        pipe,
        opts.call_timeout,
        Arc::clone(&opts.clock),
        Arc::new(move |e| handler_router.handle(e)),
    ) {
        Ok(cdp) => cdp,
        Err(e) => {
            process.kill();
            return Err(e.into());
        }
    };
    match cdp.call("Browser.getVersion", json!({}), None, opts.launch_timeout) {
        Ok(_) => {
            *router.poster.lock() = Some(cdp.poster());
            Ok((process, cdp))
        }
        Err(e) => {
            let exited = cdp.is_closed();
            cdp.close();
            process.kill();
            Err(match e {
                _ if exited => Started::ExitedEarly,
                super::cdp::CdpError::Failed(Error::BrowserTimeout { .. }) => {
                    Started::Failed(Error::BrowserUnavailable {
                        reason: "Chromium did not answer on its DevTools pipe in time".into(),
                    })
                }
                other => Started::Failed(other.into_error("Browser.getVersion")),
            })
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl BrowserBackend for LocalTab {
    fn execute(&self, command: &Command) -> Result<Response> {
        // The record outlives the page and the browser process: asked even after a crash.
        if let Command::OperationStatus(a) = command {
            let id = check_operation_id(&a.operation_id)?;
            return Ok(Response::Operation(self.inner.operation_status(id)));
        }
        // A handle on a crashed tab that was replaced acts on its replacement.
        let now = self.tab.current();
        if !Arc::ptr_eq(&now, &self.tab) {
            return LocalTab {
                inner: self.inner.clone(),
                tab: now,
            }
            .execute(command);
        }
        // A navigation gets out of a crashed page: a fresh tab takes the crashed one's place
        // and navigates (issue 20 item 3); everything else answers TAB_UNAVAILABLE meanwhile.
        if let Command::TabNavigate(a) = command {
            if self.tab.lock().crashed {
                openable(&a.url)?;
                return LocalTab {
                    inner: self.inner.clone(),
                    tab: self.inner.replace_crashed(&self.tab)?,
                }
                .execute(command);
            }
        }
        if command.operation_id().is_some() {
            // Every refusal from here on is recorded (`not_executed`): the browser gone, the
            // tab busy past the call timeout, a stale generation, …
            return self.inner.run_operation(command, |sent| {
                self.inner.usable()?;
                let _busy = self
                    .tab
                    .enter(&*self.inner.opts.clock, self.inner.opts.call_timeout)?;
                self.run(command, sent)
            });
        }
        self.inner.usable()?;
        match command {
            Command::TabLease(a) => return Ok(Response::Lease(self.inner.lease(&self.tab, a)?)),
            Command::Tabs(a) => {
                if let (TabsAction::New, Some(url)) = (a.action, a.url.as_deref()) {
                    // A refused address opens nothing: no blank tab left behind (issue 12 §10).
                    openable(url)?;
                }
                let list = self.inner.tabs_command(a)?;
                let Some(url) = a.url.as_deref().filter(|_| a.action == TabsAction::New) else {
                    return Ok(Response::Tabs(list));
                };
                let opened = LocalBrowser {
                    inner: self.inner.clone(),
                }
                .current_tab()?;
                opened.navigate(url)?;
                return Ok(Response::Tabs(self.inner.tabs_command(&TabsArgs {
                    action: TabsAction::List,
                    tab_id: None,
                    url: None,
                })?));
            }
            Command::HandleDialog(a) => {
                return self.inner.run_operation(command, |sent| {
                    self.handle_dialog_now(a, sent).map(Response::Action)
                })
            }
            _ => {}
        }
        let _busy = self
            .tab
            .enter(&*self.inner.opts.clock, self.inner.opts.call_timeout)?;
        self.inner
            .run_operation(command, |sent| self.run(command, sent))
    }

    fn clock(&self) -> crate::clock::SharedClock {
        Arc::clone(&self.inner.opts.clock)
    }
}

impl BrowserBackend for LocalBrowser {
    fn execute(&self, command: &Command) -> Result<Response> {
        if let Command::OperationStatus(a) = command {
            let id = check_operation_id(&a.operation_id)?;
            return Ok(Response::Operation(self.inner.operation_status(id)));
        }
        self.current_tab()?.execute(command)
    }

    fn clock(&self) -> crate::clock::SharedClock {
        Arc::clone(&self.inner.opts.clock)
    }
}

//! Managed local browser sessions (SPEC §6 (b) with R-PROF-2..4): one headless Chromium per
//! browser session of the lease manager, started on the session's first use, with a fresh
//! temporary profile (isolated mode) or the profile's own directory (authenticated mode), and
//! ended when the lease manager closes the session — idle for 15 minutes, the 1-hour ceiling, a
//! mode switch, a switch between standard and strict data handling, a profile handed over to
//! another thread, the thread ending, the gateway closing. A strict session (seed 001 "Strict
//! data handling") always gets a fresh temporary profile, no journal and no downloads
//! ([`LaunchOptions::strict`]).
//!
//! This module owns the map from session id to browser. It is the lease manager's
//! [`SessionHooks`]: the manager decides *when* a session closes (a pure state machine), this
//! module only does it, closing Chromium with `Browser.close` so an authenticated profile is
//! written to disk before the next session opens the same directory. It never opens one
//! profile directory twice at once, never names a directory after a profile key (only its keyed
//! hash), and never logs page content.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use super::launch::LaunchOptions;
use super::local::LocalBrowser;
use crate::lease::{BrowserCallGuard, Effect, SessionHooks, SessionMode};
use crate::{Error, Result};

/// How many closed session ids are remembered, so a late call on a closed session cannot
/// start a browser nobody would close.
const REMEMBERED_CLOSED: usize = 1024;

#[derive(Default)]
struct Slot {
    browser: Mutex<Option<LocalBrowser>>,
}

#[derive(Default)]
struct State {
    live: HashMap<String, Arc<Slot>>,
    closed: VecDeque<String>,
}

/// Local headless Chromiums for the lease manager's browser sessions. Register it with
/// [`crate::lease::Leases::set_session_hooks`] (or let
/// [`crate::Gateway::enable_local_browsers`] do both).
///
/// ```no_run
/// use std::sync::Arc;
/// use jevgate::browser::{LaunchOptions, LocalSessions};
/// use jevgate::lease::BrowserCall;
/// # let dir = tempfile::tempdir().unwrap();
/// # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
/// gw.enable_local_browsers(LaunchOptions::default())?;
/// let call = gw.leases().begin_browser_call(&BrowserCall {
///     thread_id: "thread-1".into(),
///     organization: "acme".into(),
///     mode: None,
///     profile_key: None,
///     authenticated_allowed: false,
/// })?;
/// let browser = gw.session_browser(&call)?; // started now, reused by the thread's next calls
/// browser.navigate("https://example.com/")?;
/// drop(call); // 15 idle minutes later the lease manager closes the session and its Chromium
/// # Ok::<(), jevgate::Error>(())
/// ```
pub struct LocalSessions {
    options: LaunchOptions,
    profiles_dir: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for LocalSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSessions")
            .field("live", &self.live())
            .finish()
    }
}

impl LocalSessions {
    /// Sessions launched with `options` (its `profile_dir` is ignored: isolated sessions get a
    /// fresh directory, authenticated ones `<profiles_dir>/<profile hash>`).
    pub fn new(options: LaunchOptions, profiles_dir: impl Into<PathBuf>) -> LocalSessions {
        LocalSessions {
            options,
            profiles_dir: profiles_dir.into(),
            state: Mutex::new(State::default()),
        }
    }

    /// How many sessions have a running browser.
    pub fn live(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self.state.lock().live.values().cloned().collect();
        slots.iter().filter(|s| s.browser.lock().is_some()).count()
    }

    /// The browser of `call`'s session, started on first use (and started again if it
    /// crashed or was closed by the host). `BROWSER_UNAVAILABLE` when Chromium cannot start or
    /// the session was closed meanwhile.
    pub fn browser(&self, call: &BrowserCallGuard) -> Result<LocalBrowser> {
        let slot = {
            let mut st = self.state.lock();
            if st.closed.contains(&call.session_id) {
                return Err(Error::BrowserUnavailable {
                    reason: "this browser session was closed; start a new call".into(),
                });
            }
            st.live.entry(call.session_id.clone()).or_default().clone()
        };
        // One launch per session at a time; other sessions launch in parallel.
        let mut browser = slot.browser.lock();
        if let Some(b) = browser.as_ref().filter(|b| b.is_usable()) {
            return Ok(b.clone());
        }
        if let Some(old) = browser.take() {
            old.close();
        }
        let mut options = self.options.clone();
        options.strict = call.strict;
        options.profile_dir = match (call.mode, &call.profile) {
            (SessionMode::Authenticated, Some(hash)) if !call.strict => {
                let dir = self.profiles_dir.join(hash);
                super::launch::create_private_dir(&dir, true)?;
                Some(dir)
            }
            _ => None,
        };
        let launched = LocalBrowser::launch(options)?;
        // The session may have closed while Chromium started: close it again at once.
        if self.state.lock().closed.contains(&call.session_id) {
            launched.close();
            return Err(Error::BrowserUnavailable {
                reason: "this browser session was closed; start a new call".into(),
            });
        }
        *browser = Some(launched.clone());
        log::info!("browser session started ({})", call.mode.as_str());
        Ok(launched)
    }

    /// Closes one session's browser (persisting its profile) and forgets the session.
    fn close_session(&self, session_id: &str) {
        let slot = {
            let mut st = self.state.lock();
            if st.closed.len() >= REMEMBERED_CLOSED {
                st.closed.pop_front();
            }
            st.closed.push_back(session_id.to_string());
            st.live.remove(session_id)
        };
        if let Some(slot) = slot {
            // Waits for a launch in progress, then closes what it started.
            if let Some(browser) = slot.browser.lock().take() {
                browser.close();
            }
        }
    }
}

impl SessionHooks for LocalSessions {
    fn apply(&self, effect: &Effect) {
        match effect {
            Effect::Close { session_id, .. } => self.close_session(session_id),
        }
    }
}

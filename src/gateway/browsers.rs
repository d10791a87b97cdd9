//! The local-browser methods of [`Gateway`] (R-PROF-2..4): enabling local headless Chromiums
//! for the lease manager's browser sessions, handing a call its session's browser, and the
//! managed tool family (issue 15) over them: [`Gateway::browser_tool`] begins the thread's
//! browser call with the lease manager (mode, profile, `browser_context_busy`), runs the tool
//! on that session's [`crate::browser::managed::ManagedBrowser`] (one per session, kept while
//! its Chromium lives) and stores screenshots as the thread's artifacts unless the call is
//! strict. The file tools run only with the `files` cap and the workspace directory the host
//! named ([`Gateway::set_managed_workspace`]). Strict data handling (seed 001) gets a session
//! of its own — never the thread's standard one, which it replaces — always isolated, with no
//! file or journal tools, no console or network journal and no screenshot artifact; a tool
//! strict does not expose is refused before any session is touched.
//! Thin: each checks that the gateway is open and forwards.

use super::Gateway;
use crate::browser::managed::{
    DataHandling, ManagedBrowser, ManagedCall, ManagedCaps, ManagedRun, ScreenshotSink,
};
use crate::lease::{BrowserCall, SessionMode};
use crate::CancelToken;
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The managed family's caps and its executor per browser session.
#[derive(Debug, Default)]
pub(super) struct ManagedState {
    caps: RwLock<ManagedCaps>,
    /// The directory the file tools are confined to (canonical); none refuses them.
    workspace: RwLock<Option<PathBuf>>,
    /// Session id → (Chromium pid, executor); an entry whose browser ended is replaced.
    sessions: Mutex<HashMap<String, SessionTools>>,
}

/// One session's executor, with the browser it drives, that browser's pid (a restarted
/// Chromium gets a fresh executor) and the thread it serves.
type SessionTools = (
    Option<u32>,
    crate::browser::LocalBrowser,
    Arc<ManagedBrowser>,
    String,
);

/// Stores a managed screenshot as an artifact of the calling thread (R-DEV-SHOT).
struct ThreadArtifacts<'a> {
    gateway: &'a Gateway,
    thread_id: &'a str,
}

impl ScreenshotSink for ThreadArtifacts<'_> {
    fn store(&self, media_type: &str, bytes: &[u8]) -> Result<String> {
        self.gateway.device_service().store_artifact(
            self.thread_id,
            "local-browser",
            media_type,
            bytes,
        )
    }
}

impl Gateway {
    /// Serves the lease manager's browser sessions (R-PROF-2..4) with local headless
    /// Chromiums started on first use ([`crate::browser::LocalSessions`]): isolated sessions
    /// get a fresh profile, authenticated ones `<data_dir>/profiles/<keyed hash of the profile
    /// key>`. `INVALID_ARGUMENT` when already enabled.
    pub fn enable_local_browsers(&self, options: crate::browser::LaunchOptions) -> Result<()> {
        self.check_open()?;
        let mut slot = self.inner.local_browsers.write();
        if slot.is_some() {
            return Err(Error::InvalidArgument {
                name: "local_browsers",
                reason: "are already enabled on this gateway".into(),
            });
        }
        let sessions = Arc::new(crate::browser::LocalSessions::new(
            options,
            self.inner.data_dir.join("profiles"),
        ));
        self.inner.leases.set_session_hooks(sessions.clone());
        *slot = Some(sessions);
        Ok(())
    }

    /// The local browser of `call`'s session (started on the session's first use, reused by
    /// the thread's later calls). `BROWSER_UNAVAILABLE` when local browsers are not enabled or
    /// Chromium cannot start.
    pub fn session_browser(
        &self,
        call: &crate::lease::BrowserCallGuard,
    ) -> Result<crate::browser::LocalBrowser> {
        self.check_open()?;
        let sessions =
            self.inner
                .local_browsers
                .read()
                .clone()
                .ok_or_else(|| Error::BrowserUnavailable {
                    reason:
                        "local browsers are not enabled on this gateway (enable_local_browsers)"
                            .into(),
                })?;
        sessions.browser(call)
    }
}

impl Gateway {
    /// Sets which optional tools of the managed family this gateway serves (`tabs`, `files`;
    /// issue 15): [`crate::browser::managed::managed_tool_definitions`] with the same caps lists
    /// them, and [`Gateway::browser_tool`] refuses a tool outside them with `UNKNOWN_TOOL`.
    /// Default: none.
    pub fn set_managed_caps(&self, caps: ManagedCaps) -> Result<()> {
        self.check_open()?;
        *self.inner.managed.caps.write() = caps;
        Ok(())
    }

    /// Names the workspace directory `browser_file_upload` and `browser_download_files` are
    /// confined to (issue 15: no `..`, no symlink out of it); `None` removes it, and the file
    /// tools are then refused with `ACCESS_DENIED` even with the `files` cap. The directory
    /// must exist (`INVALID_ARGUMENT` `workspace` otherwise); it is kept resolved, so a later
    /// change of a link above it does not move the confinement. Default: none.
    ///
    /// ```no_run
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// gw.set_managed_workspace(Some("/srv/agent-files".into()))?;
    /// # Ok::<(), jevgate::Error>(())
    /// ```
    pub fn set_managed_workspace(&self, workspace: Option<PathBuf>) -> Result<()> {
        self.check_open()?;
        let resolved = match workspace {
            None => None,
            Some(w) => Some(
                w.canonicalize()
                    .ok()
                    .filter(|r| r.is_dir())
                    .ok_or_else(|| Error::InvalidArgument {
                        name: "workspace",
                        reason: "must be an existing directory".into(),
                    })?,
            ),
        };
        *self.inner.managed.workspace.write() = resolved;
        Ok(())
    }

    /// The workspace set by [`Gateway::set_managed_workspace`] (resolved).
    pub fn managed_workspace(&self) -> Option<PathBuf> {
        self.inner.managed.workspace.read().clone()
    }

    /// Begins a new turn of `thread_id` for `browser_console_messages` and
    /// `browser_network_requests` ("since this turn started", seed 001): what the thread's
    /// current tab logged and requested so far is no longer returned. A host calls it when a
    /// new user message starts the agent's turn; without it a turn is the span since these
    /// tools last returned. Nothing to do (Ok) when the thread has no live browser session.
    pub fn begin_browser_turn(&self, thread_id: &str) -> Result<()> {
        self.check_open()?;
        let managed = {
            let sessions = self.inner.managed.sessions.lock();
            sessions
                .values()
                .find(|(_, b, _, t)| t == thread_id && b.is_usable())
                .map(|(_, _, m, _)| Arc::clone(m))
        };
        match managed {
            Some(m) => m.begin_turn(),
            None => Ok(()),
        }
    }

    /// The caps set by [`Gateway::set_managed_caps`].
    pub fn managed_caps(&self) -> ManagedCaps {
        *self.inner.managed.caps.read()
    }

    /// Runs one tool of the managed family (seed 001 "Tools") for `thread_id` of
    /// `organization` on that thread's local browser session (no profile, standard data
    /// handling): [`Gateway::browser_tool_call`] with [`ManagedCall::new`].
    ///
    /// ```no_run
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// use serde_json::json;
    /// gw.enable_local_browsers(jevgate::browser::LaunchOptions::default())?;
    /// let page = gw.browser_tool("thread-1", "acme", "browser_navigate", &json!({"url": "https://example.com"}))?;
    /// let clicked = gw.browser_tool("thread-1", "acme", "browser_click", &json!({"target": "role=link"}))?;
    /// # Ok::<(), jevgate::Error>(())
    /// ```
    pub fn browser_tool(
        &self,
        thread_id: &str,
        organization: &str,
        name: &str,
        args: &Value,
    ) -> Result<Value> {
        self.browser_tool_call(&ManagedCall::new(thread_id, organization), name, args, None)
    }

    /// Runs one tool of the managed family for `call`'s thread (R-PROF-2..4): begins the
    /// browser call with the lease manager — `sessionMode` of `browser_navigate` is the call's
    /// mode; errors `BROWSER_CONTEXT_BUSY` (with `isolatedAvailable`) and
    /// `BROWSER_AUTHENTICATED_UNAVAILABLE` come from there, never a silent downgrade — then
    /// runs the tool on the session's browser (started on first use). The result carries
    /// `sessionMode`. A screenshot is stored as an artifact of `call.thread_id` (read it with
    /// [`Gateway::artifact`]) unless `call.data_handling` is strict. `cancel` stops a
    /// `browser_wait_for` early.
    ///
    /// Strict data handling (seed 001): the call runs in a strict session of the thread — a
    /// standard session of the thread is closed and replaced, never reused (and a later
    /// standard call replaces the strict one) — that is always isolated (no profile on disk;
    /// `sessionMode: authenticated` is `BROWSER_AUTHENTICATED_UNAVAILABLE`), keeps no console
    /// or network journal, refuses downloads and stores no screenshot; the file tools and
    /// `browser_console_messages` / `browser_network_requests` are `ACCESS_DENIED` (listed by
    /// [`crate::browser::managed::managed_tool_definitions_for`] only in standard).
    pub fn browser_tool_call(
        &self,
        call: &ManagedCall,
        name: &str,
        args: &Value,
        cancel: Option<&CancelToken>,
    ) -> Result<Value> {
        self.check_open()?;
        let mode = match (name, args.get("sessionMode")) {
            ("browser_navigate", Some(Value::String(m))) => Some(
                m.parse::<SessionMode>()
                    .map_err(|_| Error::InvalidToolArguments {
                        tool: "browser_navigate",
                        reason: "`sessionMode` must be authenticated or isolated".into(),
                    })?,
            ),
            ("browser_navigate", Some(Value::Null) | None) => None,
            ("browser_navigate", Some(_)) => {
                return Err(Error::InvalidToolArguments {
                    tool: "browser_navigate",
                    reason: "`sessionMode` must be a string".into(),
                })
            }
            _ => None,
        };
        // Refused before the lease: a strict call of a tool strict does not expose must not
        // replace the thread's standard session.
        let caps = self.managed_caps();
        crate::browser::managed::served(name, caps, call.data_handling)?;
        let strict = call.data_handling == DataHandling::Strict;
        let guard = self.leases().begin_browser_call_as(
            &BrowserCall {
                thread_id: call.thread_id.clone(),
                organization: call.organization.clone(),
                mode,
                profile_key: call.profile_key.clone(),
                authenticated_allowed: call.authenticated_allowed,
            },
            strict,
        )?;
        let browser = self.session_browser(&guard)?;
        let managed = {
            let mut sessions = self.inner.managed.sessions.lock();
            sessions.retain(|_, (_, b, _, _)| b.is_usable());
            let pid = browser.pid();
            match sessions.get(&guard.session_id) {
                Some((p, _, m, t)) if *p == pid && *t == call.thread_id => Arc::clone(m),
                _ => {
                    let m = Arc::new(ManagedBrowser::new(Arc::new(browser.clone())));
                    sessions.insert(
                        guard.session_id.clone(),
                        (pid, browser.clone(), Arc::clone(&m), call.thread_id.clone()),
                    );
                    m
                }
            }
        };
        let sink = ThreadArtifacts {
            gateway: self,
            thread_id: &call.thread_id,
        };
        let workspace = self.managed_workspace();
        let run = ManagedRun {
            caps,
            workspace: workspace.as_deref(),
            downloads: Some(&browser),
            screenshots: match call.data_handling {
                DataHandling::Standard => Some(&sink),
                DataHandling::Strict => None,
            },
            cancel,
            data_handling: call.data_handling,
        };
        let mut out = managed.run(name, args, &run)?;
        if let Value::Object(o) = &mut out {
            o.insert("sessionMode".into(), Value::from(guard.mode.as_str()));
        }
        Ok(out)
    }
}

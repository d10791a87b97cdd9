//! The local-browser methods of [`Gateway`] (R-PROF-2..4): enabling local headless Chromiums
//! for the lease manager's browser sessions and handing a call its session's browser. Thin:
//! each checks that the gateway is open and forwards to [`crate::browser::LocalSessions`].

use super::Gateway;
use crate::{Error, Result};
use std::sync::Arc;

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

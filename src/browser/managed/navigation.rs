//! Navigation tools: `browser_navigate` (a URL, or `back`/`forward` in the tab's history) and
//! `browser_navigate_back`; each returns the fresh snapshot.
//!
//! The session mode a navigation asks for (`sessionMode`) is only checked here: the gateway
//! decides the session with the lease manager before the call reaches this executor. It never
//! rewrites an address with another scheme into `https://` (the backend refuses it).

use serde_json::{Map, Value};

use super::args::{bad, Args};
use super::{DataHandling, ManagedBrowser};
use crate::browser::backend::{HistoryArgs, NavigateArgs};
use crate::grammar::HistoryDirection;
use crate::{Error, Result};

impl ManagedBrowser {
    /// `browser_navigate`; in strict data handling `sessionMode: authenticated` is
    /// `BROWSER_AUTHENTICATED_UNAVAILABLE` (never a silent downgrade).
    pub(super) fn navigate(&self, a: &Args<'_>, data: DataHandling) -> Result<Value> {
        let url = a.str("url")?;
        if url.trim().is_empty() {
            return Err(bad(a.tool, "`url` must not be empty"));
        }
        match a.opt_str("sessionMode")? {
            Some("authenticated") if data == DataHandling::Strict => {
                return Err(Error::BrowserAuthenticatedUnavailable)
            }
            None | Some("authenticated") | Some("isolated") => {}
            Some(_) => {
                return Err(bad(
                    a.tool,
                    "`sessionMode` must be authenticated or isolated",
                ))
            }
        }
        let action = match crate::browser::tools::navigation_target(url.trim()) {
            Ok(direction) => self.backend.tab_history(HistoryArgs {
                operation_id: self.op(),
                generation: self.current_generation()?,
                direction,
            })?,
            Err(url) => self.backend.tab_navigate(NavigateArgs {
                operation_id: self.op(),
                url,
            })?,
        };
        self.after_action(action, Map::new())
    }

    /// `browser_navigate_back`.
    pub(super) fn navigate_back(&self) -> Result<Value> {
        let action = self.backend.tab_history(HistoryArgs {
            operation_id: self.op(),
            generation: self.current_generation()?,
            direction: HistoryDirection::Back,
        })?;
        self.after_action(action, Map::new())
    }
}

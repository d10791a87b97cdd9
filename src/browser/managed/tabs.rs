//! `browser_tabs` (the `tabs` cap): list, open, select and close the session's tabs, numbered
//! from 0 in the list.
//!
//! Tab titles and URLs are page output and go inside the envelope. An address the backend
//! refuses in `new` opens no tab; a tab index outside the list is `TAB_UNAVAILABLE`.

use serde_json::{json, Value};

use super::args::{bad, Args};
use super::ManagedBrowser;
use crate::browser::backend::{TabsAction, TabsArgs};
use crate::untrusted::wrap_text;
use crate::{Error, Result};

impl ManagedBrowser {
    /// `browser_tabs`: list, open, select or close; a change answers with the new current
    /// tab's page view and forgets the refs handed out.
    pub(super) fn tabs(&self, a: &Args<'_>) -> Result<Value> {
        let tool = a.tool;
        let action = match a.str("action")? {
            "list" => TabsAction::List,
            "new" => TabsAction::New,
            "select" => TabsAction::Select,
            "close" => TabsAction::Close,
            _ => return Err(bad(tool, "`action` must be list, new, select or close")),
        };
        let index = match a.obj.get("index") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .ok_or_else(|| bad(tool, "`index` must be a whole number from 0"))?,
            ),
        };
        let url = a.opt_str("url")?;
        let list = |args: TabsArgs| self.backend.tabs(args);
        let tab_id = match action {
            TabsAction::Select | TabsAction::Close => {
                let Some(i) = index else {
                    return Err(bad(tool, "`index` is required to select or close a tab"));
                };
                let current = list(TabsArgs {
                    action: TabsAction::List,
                    tab_id: None,
                    url: None,
                })?;
                Some(
                    current
                        .tabs
                        .get(i)
                        .map(|t| t.tab_id.clone())
                        .ok_or(Error::TabUnavailable)?,
                )
            }
            _ => None,
        };
        let url = match (action, url) {
            (TabsAction::New, Some(u)) => {
                match crate::browser::tools::navigation_target(u.trim()) {
                    Err(u) => Some(u),
                    Ok(_) => Some("about:blank".to_string()),
                }
            }
            _ => None,
        };
        let after = list(TabsArgs {
            action,
            tab_id,
            url,
        })?;
        let lines: Vec<String> = after
            .tabs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "{i}:{} {} — {}",
                    if t.current { " (current)" } else { "" },
                    t.title,
                    t.url
                )
            })
            .collect();
        let current = after.tabs.iter().position(|t| t.current);
        let tabs = json!({"count": after.tabs.len(), "current": current, "tabs": wrap_text(&lines.join("\n"))});
        if action == TabsAction::List {
            return Ok(tabs);
        }
        *self.handed_out.lock() = None;
        if after.tabs.is_empty() {
            return Ok(tabs);
        }
        let mut out = self.page_view(None, None)?;
        out["tabs"] = tabs;
        Ok(out)
    }
}

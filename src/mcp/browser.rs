//! TEMPORARY browser tools for `jevgate mcp` (issue 15 item 3): the nine device browser tools
//! of R-DEV-TOOLS (`jevgate::device::tool_definitions`), served by `jevgate::browser::BrowserTools`
//! on one local Chromium the server starts on the first browser call and closes at shutdown.
//!
//! The seed-001 managed-browser family (`Gateway::browser_tool`) replaces this file at merge:
//! nothing else in `src/mcp/` knows these tools, the server sees only a [`ToolProvider`].
//!
//! Caps: `browser_tabs` (and a `tabId` argument) only with `tabs`; the screenshot and zoom
//! actions of `browser_computer` only with `vision`. `browser_batch` is not served (its actions
//! would bypass these checks). Everything read from the page comes back inside the untrusted
//! envelope. This file never logs page content, typed text or arguments.

use super::provider::{Content, ToolFailure, ToolOutput, ToolProvider};
use super::Caps;
use jevgate::browser::{BrowserTools, LaunchOptions, LocalBrowser};
use jevgate::device::{tool_definitions, ToolFormat};
use jevgate::jev::CancelToken;
use jevgate::untrusted::{wrap_text, wrap_value};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// The browser tools on a lazily started local Chromium.
pub struct LocalBrowserTools {
    caps: Caps,
    /// `Some`: where the profile lives (kept across runs); `None`: a throw-away profile.
    profile_dir: Option<PathBuf>,
    /// `--device` was given: paired devices are not served yet.
    device: bool,
    running: Mutex<Option<(LocalBrowser, Arc<BrowserTools>)>>,
    closed: Mutex<bool>,
}

impl LocalBrowserTools {
    /// Browser tools with `caps`, a profile directory (or a throw-away profile), and whether a
    /// device was asked for.
    pub fn new(caps: Caps, profile_dir: Option<PathBuf>, device: bool) -> LocalBrowserTools {
        LocalBrowserTools {
            caps,
            profile_dir,
            device,
            running: Mutex::new(None),
            closed: Mutex::new(false),
        }
    }

    fn served(&self, name: &str) -> bool {
        match name {
            "browser_batch" => false,
            "browser_tabs" => self.caps.tabs,
            _ => true,
        }
    }

    /// The tools of the running browser, starting it first when needed (or again after it
    /// crashed).
    fn tools(&self) -> Result<Arc<BrowserTools>, ToolFailure> {
        // Held while starting, so two first calls start one browser; `closed` is checked under
        // it, so no browser starts after shutdown closed the last one.
        let mut running = self.running.lock();
        if *self.closed.lock() {
            return Err(ToolFailure::new(
                "GATEWAY_CLOSED",
                "the server is shutting down",
            ));
        }
        if let Some((browser, tools)) = running.as_ref() {
            if browser.is_usable() {
                return Ok(tools.clone());
            }
            browser.close();
        }
        let opts = LaunchOptions {
            profile_dir: self.profile_dir.clone(),
            ..LaunchOptions::default()
        };
        let browser = LocalBrowser::launch(opts)?;
        eprintln!(
            "mcp: started a local Chromium (pid {})",
            browser.pid().unwrap_or(0)
        );
        let tools = Arc::new(BrowserTools::new(Arc::new(browser.clone())));
        *running = Some((browser, tools.clone()));
        Ok(tools)
    }
}

/// The result in MCP content: an image as image content; page text inside the untrusted
/// envelope, the rest (url, title, generation, which the page also controls) as enveloped JSON.
fn content_of(result: Value) -> ToolOutput {
    let mut obj = match result {
        Value::Object(o) => o,
        other => return ToolOutput::json(&wrap_value(other)),
    };
    let mut content = Vec::new();
    if let Some(Value::String(data)) = obj.remove("image") {
        let mime_type = match obj.remove("mediaType") {
            Some(Value::String(m)) => m,
            _ => "image/png".to_string(),
        };
        content.push(Content::Image { data, mime_type });
    }
    if let Some(Value::String(text)) = obj.remove("text") {
        content.push(Content::Text(wrap_text(&text)));
    }
    if !obj.is_empty() {
        content.push(Content::Text(wrap_value(Value::Object(obj)).to_string()));
    }
    ToolOutput { content }
}

impl ToolProvider for LocalBrowserTools {
    fn definitions(&self) -> Vec<Value> {
        let Value::Array(tools) = tool_definitions(ToolFormat::Mcp) else {
            return Vec::new();
        };
        tools
            .into_iter()
            .filter(|t| t["name"].as_str().is_some_and(|n| self.served(n)))
            .map(|mut t| {
                // One local browser: no device to choose.
                if let Some(props) = t["inputSchema"]["properties"].as_object_mut() {
                    props.remove("deviceId");
                    if !self.caps.tabs {
                        props.remove("tabId");
                    }
                }
                t
            })
            .collect()
    }

    fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolFailure> {
        if self.device {
            return Err(ToolFailure::new(
                "NOT_SUPPORTED_YET",
                "browser tools on a paired device (--device) are not served by jevgate mcp yet; start it without --device to use a local Chromium",
            ));
        }
        if !self.served(name) {
            return Err(ToolFailure::invalid(
                "this tool is not enabled on this server",
            ));
        }
        let obj: &Map<String, Value> = args
            .as_object()
            .ok_or_else(|| ToolFailure::invalid("the arguments must be a JSON object"))?;
        if obj.contains_key("deviceId") {
            return Err(ToolFailure::invalid(
                "`deviceId` is not an argument here: the server drives one local Chromium",
            ));
        }
        if obj.contains_key("tabId") && !self.caps.tabs {
            return Err(ToolFailure::invalid(
                "`tabId` needs the `tabs` capability (--caps tabs)",
            ));
        }
        if name == "browser_computer"
            && matches!(
                obj.get("action").and_then(Value::as_str),
                Some("screenshot" | "zoom")
            )
            && !self.caps.vision
        {
            return Err(ToolFailure::invalid(
                "screenshots need the `vision` capability (--caps vision)",
            ));
        }
        let tools = self.tools()?;
        if cancel.is_cancelled() {
            return Err(ToolFailure::new(
                "CANCELLED",
                "cancelled before anything was sent to the page",
            ));
        }
        // A browser primitive is short and bounded by the backend's own timeouts; once sent it
        // is not interrupted (its outcome would be unknown).
        let result = tools
            .run(name, args)
            .map_err(|f| ToolFailure::new(f.code, f.message))?;
        Ok(content_of(result))
    }

    fn close(&self) {
        let mut running = self.running.lock();
        *self.closed.lock() = true;
        if let Some((browser, _)) = running.take() {
            browser.close();
            eprintln!("mcp: closed the local Chromium");
        }
    }
}

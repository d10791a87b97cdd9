//! The managed browser family on a paired device (`jevgate mcp --device ID`, issue 15 item 3):
//! the same seed-001 tools as on a local Chromium, run through the task module's
//! `DeviceTarget` — every primitive goes over the device channel under the conversation's
//! control lease, generation-checked, exactly as a task drives a device.
//!
//! This file owns the provider and the channel the server serves for the device's worker to
//! connect to. It must never start a local browser, never act on a device the principal does
//! not own (the device service checks every call), and never log page content or arguments.

use super::provider::{ToolFailure, ToolOutput, ToolProvider};
use jevgate::browser::managed::{
    managed_tool_definitions, ManagedBrowser, ManagedCaps, ManagedRun,
};
use jevgate::device::ToolFormat;
use jevgate::CancelToken;
use jevgate::Gateway;
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;

/// The managed family served from one paired device.
pub struct DeviceBrowserTools {
    gw: Gateway,
    principal: String,
    conversation: String,
    device: String,
    caps: ManagedCaps,
    browser: Mutex<Option<Arc<ManagedBrowser>>>,
}

impl DeviceBrowserTools {
    /// Tools on `device` of `principal`, driven for `conversation`.
    pub fn new(
        gw: Gateway,
        principal: String,
        conversation: String,
        device: String,
        caps: ManagedCaps,
    ) -> DeviceBrowserTools {
        DeviceBrowserTools {
            gw,
            principal,
            conversation,
            device,
            caps,
            browser: Mutex::new(None),
        }
    }

    fn browser(&self) -> Result<Arc<ManagedBrowser>, jevgate::Error> {
        let mut slot = self.browser.lock();
        if let Some(b) = slot.as_ref() {
            return Ok(Arc::clone(b));
        }
        let target = self
            .gw
            .device_target(&self.principal, &self.conversation, &self.device)?;
        let b = Arc::new(ManagedBrowser::new(Arc::new(target)));
        *slot = Some(Arc::clone(&b));
        Ok(b)
    }
}

impl ToolProvider for DeviceBrowserTools {
    fn definitions(&self) -> Vec<Value> {
        match managed_tool_definitions(ToolFormat::Mcp, self.caps) {
            Value::Array(tools) => tools,
            _ => Vec::new(),
        }
    }

    fn call(
        &self,
        name: &str,
        args: &Value,
        cancel: &CancelToken,
    ) -> Result<ToolOutput, ToolFailure> {
        if cancel.is_cancelled() {
            return Err(ToolFailure::new(
                "CANCELLED",
                "cancelled before anything was sent to the device",
            ));
        }
        let browser = self.browser()?;
        let run = ManagedRun {
            caps: self.caps,
            // No artifact store for a device's screenshots here: the image goes to the client.
            screenshots: None,
            cancel: Some(cancel),
            // The device's files are on the device: no workspace here, so the file tools
            // answer that a workspace is needed.
            ..ManagedRun::default()
        };
        Ok(super::browser::content_of(browser.run(name, args, &run)?))
    }
}

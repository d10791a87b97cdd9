//! The managed-browser tool family of seed 001 for `jevgate mcp` (issue 15 items 1 and 3):
//! `tools/list` gets [`managed_tool_definitions`] for the server's `--caps`, and a call runs
//! [`Gateway::browser_tool_call`] for the server's one thread (the conversation) of its
//! organization (the principal), so its browser session, mode and profile are the lease
//! manager's (R-PROF-2..4) and its Chromium is started on first use by the gateway's local
//! sessions and closed with them (idle reaping, shutdown).
//!
//! It owns only the mapping between MCP and the family: the server's options → the
//! [`ManagedCall`] (`--isolated`: isolated sessions only; otherwise authenticated with the
//! server's persistent profile key; `--strict`: strict data handling — isolated sessions whatever
//! `--isolated` says, no file or journal tools listed, no screenshot artifact), a screenshot → MCP image
//! content plus a text part with the rest, any other result → one compact JSON text part, a
//! failure → `CODE: message`. Everything read from the page is already inside the library's
//! untrusted envelope. This file never logs page content, typed text or arguments.

use super::provider::{Content, ToolFailure, ToolOutput, ToolProvider};
use super::Caps;
use jevgate::browser::managed::{
    managed_tool_definitions_for, DataHandling, ManagedCall, ManagedCaps,
};
use jevgate::device::ToolFormat;
use jevgate::CancelToken;
use jevgate::Gateway;
use serde_json::Value;

/// The profile key of the server's authenticated sessions: one profile per data directory
/// (stored as `<data dir>/profiles/<keyed hash>`, R-PROF-1).
pub const PROFILE_KEY: &str = "mcp";

/// The managed family for one thread of one organization on a gateway with local browsers.
pub struct ManagedTools {
    gw: Gateway,
    caps: ManagedCaps,
    call: ManagedCall,
}

impl ManagedTools {
    /// The family on `gw` (local browsers enabled, caps set) for `thread_id` of
    /// `organization`: `isolated` keeps every session isolated (no profile, authenticated mode
    /// refused); otherwise sessions are authenticated with [`PROFILE_KEY`] unless the model
    /// asks `sessionMode: isolated`. `strict` is strict data handling (seed 001): sessions are
    /// isolated even without `isolated` (the profile is never used), and the file and journal
    /// tools are neither listed nor served.
    pub fn new(
        gw: Gateway,
        caps: Caps,
        thread_id: &str,
        organization: &str,
        isolated: bool,
        strict: bool,
    ) -> ManagedTools {
        let mut call = ManagedCall::new(thread_id, organization);
        if isolated {
            call.authenticated_allowed = false;
        } else {
            call.profile_key = Some(PROFILE_KEY.into());
        }
        if strict {
            call.data_handling = DataHandling::Strict;
        }
        ManagedTools {
            gw,
            caps: managed_caps(caps),
            call,
        }
    }
}

/// Prepares `gw` for the family: local Chromiums for its browser sessions (headless, or with a
/// window for `headed` — which needs a display), the family's caps, and the workspace the file
/// tools are confined to.
pub fn enable(
    gw: &Gateway,
    caps: Caps,
    headed: bool,
    workspace: Option<&std::path::Path>,
) -> Result<(), jevgate::Error> {
    gw.enable_local_browsers(jevgate::browser::LaunchOptions {
        headed,
        ..jevgate::browser::LaunchOptions::default()
    })?;
    gw.set_managed_caps(managed_caps(caps))?;
    if let Some(dir) = workspace {
        gw.set_managed_workspace(Some(dir.to_path_buf()))?;
    }
    Ok(())
}

/// The server's `--caps` as the family's caps.
pub fn managed_caps(caps: Caps) -> ManagedCaps {
    ManagedCaps {
        tabs: caps.tabs,
        files: caps.files,
        vision: caps.vision,
    }
}

/// The result in MCP content: a screenshot's image as image content and the rest (size,
/// generation, artifact id) as one compact JSON text part; anything else as one compact JSON
/// text part (page text is inside the library's envelope already).
pub fn content_of(result: Value) -> ToolOutput {
    let mut obj = match result {
        Value::Object(o) => o,
        other => return ToolOutput::json(&other),
    };
    if let Some(Value::String(data)) = obj.remove("image") {
        let mime_type = match obj.remove("mediaType") {
            Some(Value::String(m)) => m,
            _ => "image/png".to_string(),
        };
        return ToolOutput {
            content: vec![
                Content::Image { data, mime_type },
                Content::Text(Value::Object(obj).to_string()),
            ],
        };
    }
    // A page result reads as the model will use it: one compact JSON line of what is worth
    // knowing (defaults and internal operation ids left out), then the page in its untrusted
    // envelope as plain text — not escaped inside a JSON string (half the characters).
    let Some(Value::String(page)) = obj.remove("page") else {
        return ToolOutput::json(&Value::Object(obj));
    };
    obj.remove("operationId");
    for flag in ["truncated", "navigationStarted"] {
        if obj.get(flag) == Some(&Value::Bool(false)) {
            obj.remove(flag);
        }
    }
    ToolOutput::text(format!("{}\n{page}", Value::Object(obj)))
}

impl ToolProvider for ManagedTools {
    fn definitions(&self) -> Vec<Value> {
        match managed_tool_definitions_for(ToolFormat::Mcp, self.caps, self.call.data_handling) {
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
                "cancelled before anything was sent to the page",
            ));
        }
        // `browser_wait_for` stops when the token fires; other tools are short and bounded
        // by the backend's own timeouts, and once sent are not interrupted.
        let result = self
            .gw
            .browser_tool_call(&self.call, name, args, Some(cancel))?;
        Ok(content_of(result))
    }

    fn close(&self) {
        // The thread's session and its Chromium (the gateway's close ends every other one).
        self.gw.leases().end_thread(&self.call.thread_id);
        eprintln!("mcp: closed the browser session");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Issue 15 item 3: a screenshot is an image part and a text part with the rest; any other
    // result is one compact JSON text part.
    #[test]
    fn screenshots_become_image_content_and_the_rest_one_text_part() {
        let out = content_of(
            json!({"image": "iVBO", "mediaType": "image/jpeg", "width": 3, "artifactId": "a1"}),
        );
        assert_eq!(
            out.content[0],
            Content::Image {
                data: "iVBO".into(),
                mime_type: "image/jpeg".into()
            }
        );
        let Content::Text(rest) = &out.content[1] else {
            panic!("{out:?}")
        };
        let rest: Value = serde_json::from_str(rest).unwrap();
        assert_eq!(rest, json!({"width": 3, "artifactId": "a1"}));
        // A page result: one compact JSON line without the page, internal ids or false
        // defaults, then the page as plain text.
        let out = content_of(
            json!({"page": "<untrusted-page-content>\n- button \"Go\"\n</untrusted-page-content>",
            "generation": 2, "operationId": "op-1", "truncated": false, "navigationStarted": true}),
        );
        let [Content::Text(one)] = out.content.as_slice() else {
            panic!("{out:?}")
        };
        let (head, page) = one.split_once('\n').unwrap();
        let head: Value = serde_json::from_str(head).unwrap();
        assert_eq!(head, json!({"generation": 2, "navigationStarted": true}));
        assert_eq!(
            page,
            "<untrusted-page-content>\n- button \"Go\"\n</untrusted-page-content>"
        );
        // Anything else: one compact JSON part.
        let out = content_of(json!({"count": 1}));
        let [Content::Text(one)] = out.content.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(one, r#"{"count":1}"#);
    }
}

//! R-LOG: nothing the channel carries reaches a log record, at any level, from any crate.
//!
//! Its own test binary, so that the capturing logger (`support::log_capture`) is the process's
//! logger: every record of every target at `trace` (as a host debugging with `RUST_LOG=trace` would see them).
//! A device is paired and served by the library's own worker ([`DeviceWorker`]) over `ws://`
//! and `wss://`, tool calls carry sentinel typed text and form values, the worker answers with
//! sentinel page text, a wrong token is tried, and a malformed frame is refused; no record may
//! contain the device token or a sentinel.

mod support;

use jevgate::device::{
    ChannelOptions, ChannelTls, DeviceToken, DeviceWorker, ToolCall, ToolExecutor, WorkerFailure,
    WorkerOptions,
};
use jevgate::CancelToken;
use jevgate::{Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::log_capture;

const PAGE_TEXT: &str = "PAGE-TEXT-SENTINEL-5b1e";
const TYPED_TEXT: &str = "TYPED-TEXT-SENTINEL-77c0";
const FIELD_VALUE: &str = "FIELD-VALUE-SENTINEL-0d4a";
const SCRIPT: &str = "SCRIPT-SENTINEL-e21f";

/// Answers with page text (and echoes nothing it was given).
struct Page;

impl ToolExecutor for Page {
    fn execute(
        &self,
        tool: &str,
        _args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        match tool {
            "browser_get_text" | "browser_read_page" => {
                Ok(json!({"text": format!("{PAGE_TEXT} body"), "title": PAGE_TEXT}))
            }
            "browser_javascript" => Ok(json!({"value": PAGE_TEXT})),
            "browser_form_input" => Err(WorkerFailure::new("execution_failed", "no such field")),
            _ => Ok(json!({"snapshot": {"text": PAGE_TEXT}})),
        }
    }
}

fn run_calls(gw: &Gateway, device_id: &str) {
    let call = |tool: &str, args: Value| {
        let mut args = args;
        args["deviceId"] = json!(device_id);
        gw.call_tool(&ToolCall::new("alice", "conv-1", tool, args))
    };
    assert!(call("browser_get_text", json!({})).is_success());
    assert!(call("browser_read_page", json!({})).is_success());
    assert!(call(
        "browser_computer",
        json!({"action": "type", "text": TYPED_TEXT})
    )
    .is_success());
    assert!(call("browser_javascript", json!({"code": SCRIPT})).is_success());
    assert_eq!(
        call(
            "browser_form_input",
            json!({"ref": "ref_1", "value": FIELD_VALUE})
        )
        .error_code(),
        Some("execution_failed")
    );
    let batch = json!({"actions": [
        {"tool": "browser_computer", "args": {"action": "type", "text": TYPED_TEXT}},
        {"tool": "browser_get_text", "args": {}},
    ]});
    assert!(call("browser_batch", batch).is_success());
}

/// Pairs a browser for alice: (device id, token text).
fn pair(gw: &Gateway, installation: &str) -> (String, String) {
    let p = support::gateway::pair(gw, "alice", installation);
    (p.device.clone(), p.token_text())
}

// R-LOG, R-DEV-CHAN: tokens, typed text, form values, scripts and page text never reach a log
// record of any crate at trace level, over ws:// and wss://.
#[test]
fn r_log_the_channel_logs_no_token_and_no_content_at_trace() {
    log_capture::install(log_capture::everything);
    // The logger sees every target at trace.
    log::trace!(target: "tungstenite::protocol", "probe-record");

    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir.path(), Default::default())).unwrap();
    let mut tokens = Vec::new();

    // ws://
    let mut options = ChannelOptions::new("127.0.0.1:0");
    options.auth_timeout = Duration::from_secs(5);
    let plain = gw.serve_channel(options).unwrap();
    let (id, token) = pair(&gw, "plain");
    tokens.push(token.clone());
    let worker = DeviceWorker::connect(
        WorkerOptions::new(plain.url(), DeviceToken::new(token.clone())),
        Arc::new(Page),
    )
    .unwrap();
    run_calls(&gw, &id);
    // A wrong token is refused, and the refusal is logged without it.
    let wrong = format!("{token}x");
    tokens.push(wrong.clone());
    let refused = DeviceWorker::connect(
        WorkerOptions::new(plain.url(), DeviceToken::new(wrong)),
        Arc::new(Page),
    )
    .unwrap_err();
    assert!(refused.to_string().contains("AUTHENTICATION_FAILED"));
    drop(worker);

    // wss://
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let tls = ChannelTls::from_pem(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let mut options = ChannelOptions::new("127.0.0.1:0").with_tls(tls);
    options.auth_timeout = Duration::from_secs(5);
    let secure = gw.serve_channel(options).unwrap();
    let (id, token) = pair(&gw, "secure");
    tokens.push(token.clone());
    let mut worker_options = WorkerOptions::new(
        format!(
            "wss://localhost:{}/v1/device-worker/channel",
            secure.local_addr().port()
        ),
        DeviceToken::new(token),
    );
    worker_options.tls_roots_pem = Some(cert.cert.pem().into_bytes());
    let worker = DeviceWorker::connect(worker_options, Arc::new(Page)).unwrap();
    run_calls(&gw, &id);
    drop(worker);
    gw.close();

    let records: Vec<(String, String)> = log_capture::records()
        .into_iter()
        .map(|r| (r.target, r.message))
        .collect();
    assert!(records
        .iter()
        .any(|(t, m)| t == "tungstenite::protocol" && m == "probe-record"));
    assert!(records
        .iter()
        .any(|(_, m)| m.contains("device channel listening")));
    for (target, message) in &records {
        for secret in
            tokens
                .iter()
                .map(String::as_str)
                .chain([PAGE_TEXT, TYPED_TEXT, FIELD_VALUE, SCRIPT])
        {
            assert!(
                !message.contains(secret),
                "a {target} record leaks a sentinel: {message}"
            );
        }
        // No frame of any WebSocket library is logged with its content either.
        assert!(
            !message.contains("\"type\":\"authenticate\"") && !message.contains("Device jgd_"),
            "a {target} record carries a frame: {message}"
        );
    }
}

//! R-DEV-CAPS against a hostile worker: caps are the gateway's, whatever shape the worker's
//! answer takes (extra fields, arrays, nested objects, numbers, huge keys, escapes), for every
//! tool; and the documented default limits, asserted as they ship.

mod support;

use jevgate::device::{DeviceLimits, ToolCall};
use serde_json::{json, Value};
use std::time::Duration;
use support::worker::{Cmd, Out};

// R-DEV-CAPS: the product limits of SPEC §5 / seed 000 "Limits", as they ship.
#[test]
fn r_dev_caps_default_limits_are_the_documented_ones() {
    let d = DeviceLimits::default();
    assert_eq!(d.batch_max_actions, 10);
    assert_eq!(d.batch_time_budget, Duration::from_secs(30));
    assert_eq!(d.batch_byte_budget, 190_000);
    assert_eq!(d.text_max_chars, 30_000);
    assert_eq!(d.text_default_chars, 20_000);
    assert_eq!(d.javascript_max_chars, 20_000);
    assert_eq!(d.screenshot_max_base64, 150_000);
    assert_eq!(d.command_timeout, Duration::from_secs(60));
    assert_eq!(d.batch_timeout, Duration::from_secs(90));
    assert_eq!(d.artifact_retention, Duration::from_secs(24 * 60 * 60));
    assert_eq!(d.artifact_max_per_session, 200);
    // A new gateway runs with exactly these.
    let t = support::gateway::builder().build();
    assert_eq!(t.gw.device_limits(), d);
    t.gw.close();
}

/// Hostile shapes of about 200,000 characters (under the channel's 1 MiB message limit).
fn hostile(i: usize) -> Value {
    let z = "z".repeat(200_000);
    match i % 8 {
        0 => json!({"text": "short", "content": z}),
        1 => json!([z]),
        2 => json!({"text": {"nested": {"deeper": [z]}}, "title": "t"}),
        3 => json!((0..60_000).collect::<Vec<u32>>()),
        4 => json!({ z.clone(): 1, "text": "k" }),
        5 => json!({"text": "x", "url": "\u{1}".repeat(100_000)}),
        6 => json!({"value": 1, "extra": z, "image": "AAAA", "alt": z}),
        _ => json!(z),
    }
}

/// The characters the caller gets: the whole result as compact JSON, each string counted by
/// its characters (an escape is the one character it stands for, as `max_chars` counts text).
fn size(v: &Value) -> usize {
    let list = |n: usize| 2 + n.saturating_sub(1);
    match v {
        Value::String(s) => s.chars().count() + 2,
        Value::Array(a) => list(a.len()) + a.iter().map(size).sum::<usize>(),
        Value::Object(o) => {
            list(o.len())
                + o.iter()
                    .map(|(k, v)| k.chars().count() + 3 + size(v))
                    .sum::<usize>()
        }
        other => other.to_string().len(),
    }
}

// R-DEV-CAPS: every tool, every hostile shape — the caller never gets more than the cap:
// text tools `max_chars` (default 20,000) plus 2,000 of metadata; javascript 20,000; any other
// tool 50,000; a screenshot whose other fields are over 2,000 is discarded like an oversized
// image. The envelope and the gateway's own fields add a few hundred characters at most.
#[test]
fn r_dev_caps_hostile_result_shapes_never_pass_the_cap() {
    let mut options = support::gateway::channel_options();
    options.auth_timeout = Duration::from_secs(5);
    let t = support::gateway::builder().channel_with(options).build();
    let gw = &t.gw;
    let shape = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let current = shape.clone();
    let (_, _w) = t.scripted_worker(
        "alice",
        "i1",
        Box::new(move |cmd: &Cmd| {
            let i = current.load(std::sync::atomic::Ordering::SeqCst);
            vec![Out::Ok(cmd.id.clone(), hostile(i))]
        }),
    );
    const ENVELOPE: usize = 400;
    let tools: Vec<(&str, Value, usize)> = vec![
        ("browser_get_text", json!({}), 20_000 + 2_000),
        (
            "browser_read_page",
            json!({"max_chars": 30_000}),
            30_000 + 2_000,
        ),
        ("browser_read_page", json!({"max_chars": 10}), 10 + 2_000),
        ("browser_javascript", json!({"code": "1"}), 20_000),
        ("browser_find", json!({"query": "q"}), 50_000),
        (
            "browser_navigate",
            json!({"url": "https://example.com/"}),
            50_000,
        ),
        ("browser_tabs", json!({"action": "list"}), 50_000),
        (
            "browser_computer",
            json!({"action": "click", "coordinate": [1, 1]}),
            50_000,
        ),
        ("browser_computer", json!({"action": "screenshot"}), 2_000),
    ];
    for i in 0..8 {
        shape.store(i, std::sync::atomic::Ordering::SeqCst);
        for (tool, args, cap) in &tools {
            let r = gw.call_tool(&ToolCall::new("alice", "s1", *tool, args.clone()));
            let out = r.to_json();
            assert!(
                size(&out) <= cap + ENVELOPE,
                "{tool} shape {i}: {} characters over a cap of {cap}",
                size(&out)
            );
            match r.result() {
                Some(v) => {
                    // A cut is said, beside the envelope.
                    // (javascript keeps only `value`, when there is one)
                    let js_value = *tool == "browser_javascript" && i == 6;
                    if size(&hostile(i)) > *cap && !js_value {
                        assert_eq!(v["truncated"], true, "{tool} shape {i}");
                    }
                }
                None => assert_eq!(
                    r.error_code(),
                    Some(if i == 6 && tool.contains("computer") {
                        "RESULT_CAP_EXCEEDED"
                    } else {
                        "execution_failed"
                    }),
                    "{tool} shape {i}: {out}"
                ),
            }
        }
        // A batch of them: each action's result is capped the same way.
        let batch = json!({"actions": [
            {"tool": "browser_get_text", "args": {}},
            {"tool": "browser_find", "args": {"query": "q"}},
        ]});
        let r = gw.call_tool(&ToolCall::new("alice", "s1", "browser_batch", batch));
        assert!(
            size(&r.to_json()) <= 22_000 + 50_000 + 2 * ENVELOPE,
            "batch shape {i}"
        );
    }
    gw.close();
}

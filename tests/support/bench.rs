//! Round trips the benches measure the same way (R-PERF): a fixture page's `browser_read_page`
//! and a `browser_computer` click by ref through `gw.call_tool` on a browser device (the
//! reference worker, what `jevgate-worker` runs, or the extension), and percentiles of the
//! times. Shared so that a bench comparing something with the reference worker measures the
//! worker exactly as the others do.
//!
//! Owns: those measurements. Never: asserts a goal (the benches print ratios).

use super::conformance::ReferenceWorker;
use super::gateway::TestGateway;
use super::Server;
use jevgate::device::ToolCall;
use jevgate::Gateway;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The rounds a bench runs: `JEVGATE_BENCH_ROUNDS` (default 40, at least 2).
pub fn rounds() -> usize {
    std::env::var("JEVGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40)
        .max(2)
}

/// The baseline of every bench that compares a device with `jevgate-worker`: the reference
/// worker's executor on a local Chromium, paired as alice on `t`, measured by [`measure`]; the
/// worker is gone when this returns.
pub fn worker_baseline(
    t: &TestGateway,
    server: &Server,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let worker = ReferenceWorker::start(t, "alice", "alice-install");
    measure(&t.gw, "alice", &worker.device, server, rounds)
}

/// One tool call of `owner` on `device`; its result (a failure panics).
pub fn call(gw: &Gateway, owner: &str, device: &str, tool: &str, mut args: Value) -> Value {
    args["deviceId"] = json!(device);
    let r = gw.call_tool(&ToolCall::new(owner, format!("conv-{owner}"), tool, args));
    assert!(r.is_success(), "{tool}: {r:?}");
    r.result().unwrap().clone()
}

/// `(click times, read_page times)` over `rounds` rounds on the device: each round reads
/// `/p/buttons` (timed) and clicks its "Press me" button by the ref it read (timed).
pub fn measure(
    gw: &Gateway,
    owner: &str,
    device: &str,
    server: &Server,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    call(
        gw,
        owner,
        device,
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    );
    let (mut clicks, mut reads) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        let page = call(gw, owner, device, "browser_read_page", json!({}));
        reads.push(t.elapsed());
        let text = page["untrustedContent"]["data"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let line = text
            .lines()
            .find(|l| l.contains("\"Press me\""))
            .expect("the button");
        let reference = line
            .split("[ref=")
            .nth(1)
            .and_then(|r| r.split(']').next())
            .unwrap()
            .to_string();
        let t = Instant::now();
        call(
            gw,
            owner,
            device,
            "browser_computer",
            json!({"action": "click", "ref": reference}),
        );
        clicks.push(t.elapsed());
    }
    (clicks, reads)
}

/// The `p`-th percentile (nearest rank) of `v`, in milliseconds.
pub fn pct(v: &mut [Duration], p: usize) -> f64 {
    v.sort();
    let i = ((v.len() * p).div_ceil(100))
        .saturating_sub(1)
        .min(v.len() - 1);
    v[i].as_secs_f64() * 1e3
}

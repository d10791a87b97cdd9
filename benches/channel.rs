//! Round-trip latency of one tool call through the device channel (gateway → WebSocket →
//! reference worker → back, with the lease, argument checks and caps), beside a bare loopback
//! TCP echo of a frame of the same size in the same run (R-PERF). The executor answers at once,
//! so the number is the channel's own cost.
//!
//! Final line: `channel: call_us=<p50 µs> p90_us=<p90 µs> floor_us=<echo p50 µs> ratio=<call / echo>`.

use jevgate::device::{
    BrowserInfo, ChannelOptions, DeviceWorker, PairRequest, ToolCall, ToolExecutor, WorkerFailure,
    WorkerOptions,
};
use jevgate::CancelToken;
use jevgate::{Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Echo;

impl ToolExecutor for Echo {
    fn execute(
        &self,
        _tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        Ok(json!({ "matches": [], "query": args["query"] }))
    }
}

fn pct(v: &mut [Duration], p: usize) -> Duration {
    v.sort();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

fn main() {
    let iterations: usize = std::env::var("JEVGATE_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir.path(), Default::default())).unwrap();
    let pairing = gw
        .pair(
            "bench",
            &PairRequest {
                installation_id: "bench".into(),
                name: "bench".into(),
                browser: Some(BrowserInfo {
                    name: "Chromium".into(),
                    version: "131".into(),
                }),
            },
        )
        .unwrap();
    let channel = gw
        .serve_channel(ChannelOptions::new("127.0.0.1:0"))
        .unwrap();
    let worker = DeviceWorker::connect(
        WorkerOptions::new(channel.url(), pairing.token),
        Arc::new(Echo),
    )
    .unwrap();
    let call = ToolCall::new(
        "bench",
        "conv",
        "browser_find",
        json!({"query": "search box"}),
    );
    let frame_len = {
        let answer = gw.call_tool(&call);
        assert!(answer.is_success(), "{answer:?}");
        answer.to_json().to_string().len()
    };
    let mut calls = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        let answer = gw.call_tool(&call);
        calls.push(t.elapsed());
        assert!(answer.is_success());
    }

    // Baseline: a line of the same size echoed over loopback TCP by a blocking thread.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        conn.set_nodelay(true).unwrap();
        let mut writer = conn.try_clone().unwrap();
        let mut reader = BufReader::new(conn);
        let mut line = String::new();
        while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            writer.write_all(line.as_bytes()).unwrap();
            line.clear();
        }
    });
    let client = TcpStream::connect(addr).unwrap();
    client.set_nodelay(true).unwrap();
    let mut writer = client.try_clone().unwrap();
    let mut reader = BufReader::new(client);
    let payload = format!("{}\n", "x".repeat(frame_len));
    let mut echoes = Vec::with_capacity(iterations);
    let mut line = String::new();
    for _ in 0..iterations {
        let t = Instant::now();
        writer.write_all(payload.as_bytes()).unwrap();
        line.clear();
        reader.read_line(&mut line).unwrap();
        echoes.push(t.elapsed());
    }

    let p50 = pct(&mut calls, 50);
    let p90 = pct(&mut calls, 90);
    let floor = pct(&mut echoes, 50);
    worker.close();
    gw.close();
    println!(
        "tool call p50: {:.1} µs, p90: {:.1} µs",
        p50.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
    println!(
        "tcp echo  p50: {:.1} µs ({} bytes)",
        floor.as_secs_f64() * 1e6,
        frame_len
    );
    println!(
        "channel: call_us={:.1} p90_us={:.1} floor_us={:.1} ratio={:.2}",
        p50.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6,
        floor.as_secs_f64() * 1e6,
        p50.as_secs_f64() / floor.as_secs_f64()
    );
}

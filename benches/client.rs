//! Per-evaluation overhead of `Gateway::evaluate` against a loopback compatible upstream, beside
//! a bare ureq POST of the same body to the same server in the same run (R-PERF).
//!
//! Final line: `client: overhead_us=<p50 added µs> ratio=<evaluate / bare POST>`.

#[path = "../tests/support/jev_server.rs"]
mod jev_server;

use jevgate::jev::{EvaluateCall, Limits, Question, Questions};
use jevgate::{Config, Gateway, GatewayOptions};
use std::time::{Duration, Instant};

fn p50(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let iterations: usize = std::env::var("JEVGATE_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let server = jev_server::TestServer::start();
    let env = format!("JEVGATE_BENCH_KEY_{}", std::process::id());
    std::env::set_var(&env, "bench-key");
    let dir = tempfile::tempdir().unwrap();
    let config = Config::from_json_str(
        &serde_json::json!({"gateway": {"jev": {"enabled": true, "provider": "upstream",
            "baseUrl": server.base(), "apiKeyEnv": env, "model": "catalog-prefix/jev-version"}}})
        .to_string(),
    )
    .unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir.path(), config)).unwrap();
    // the typical answer set of the validator bench: 1 noul, 1 choice of 5, 1 score of 3
    let questions = Questions::new(
        [
            Question::noul("needs_decision", "Does the user still need to decide?"),
            Question::choice(
                "next_step",
                "What is the appropriate next step?",
                [
                    ("explain", "Compare the options for the user."),
                    ("execute", "Execute a clearly authorized choice."),
                    ("ask", "Ask a clarifying question."),
                    ("wait", "Wait for more input."),
                    ("stop", "Stop here."),
                ],
            )
            .unwrap(),
            Question::score(
                "clarity",
                "How clear is the requested action?",
                ["Unspecified", "Partially specified", "Fully specified"],
            )
            .unwrap(),
        ],
        &Limits::default(),
    )
    .unwrap();
    let call = EvaluateCall::new(
        "assistant",
        "The user wants to compare two options before deciding.",
        questions.clone(),
    );
    let body = serde_json::to_vec(&serde_json::json!({
        "request_id": "jev-0123456789abcdef0123456789abcdef",
        "model": "catalog-prefix/jev-version",
        "state": "The user wants to compare two options before deciding.",
        "questions": questions,
    }))
    .unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .build()
        .into();
    let url = format!("{}/v1/jev/evaluate", server.base());
    let bare = || {
        let mut r = agent
            .post(&url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer bench-key")
            .send(&body[..])
            .unwrap();
        assert_eq!(r.status(), 200);
        r.body_mut().read_to_vec().unwrap()
    };
    for _ in 0..200 {
        bare();
        gw.evaluate(&call).unwrap();
    }
    let mut t_bare = Vec::with_capacity(iterations);
    let mut t_eval = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        std::hint::black_box(bare());
        t_bare.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(gw.evaluate(&call).unwrap());
        t_eval.push(t.elapsed());
    }
    // For attribution only: a bare POST with a request-level timeout, and one run on another
    // thread (the hand-off evaluate makes so a caller can stop waiting).
    let mut t_cfg = Vec::with_capacity(iterations);
    let mut t_hop = Vec::with_capacity(iterations);
    let (tx, rx) = std::sync::mpsc::channel::<std::sync::mpsc::Sender<Vec<u8>>>();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for back in rx {
                let _ = back.send(bare());
            }
        });
        for _ in 0..iterations {
            let t = Instant::now();
            let mut r = agent
                .post(&url)
                .header("content-type", "application/json")
                .header("authorization", "Bearer bench-key")
                .config()
                .timeout_global(Some(Duration::from_secs(5)))
                .build()
                .send(&body[..])
                .unwrap();
            std::hint::black_box(r.body_mut().read_to_vec().unwrap());
            t_cfg.push(t.elapsed());
            let t = Instant::now();
            let (btx, brx) = std::sync::mpsc::channel();
            tx.send(btx).unwrap();
            std::hint::black_box(brx.recv().unwrap());
            t_hop.push(t.elapsed());
        }
        drop(tx);
    });
    println!(
        "bare POST with request-level timeout p50: {:.1} µs",
        p50(&mut t_cfg).as_secs_f64() * 1e6
    );
    println!(
        "bare POST on another thread p50: {:.1} µs",
        p50(&mut t_hop).as_secs_f64() * 1e6
    );
    // For attribution only: a callback provider returning a fixed answer (the client path with
    // the I/O-thread hand-off, without HTTP).
    let cb_dir = tempfile::tempdir().unwrap();
    let cb = Gateway::open(GatewayOptions::new(
        cb_dir.path(),
        Config::from_json_str(r#"{"gateway":{"jev":{"enabled":true,"provider":"callback"}}}"#)
            .unwrap(),
    ))
    .unwrap();
    let canned = bare();
    cb.set_jev_callback(Some(std::sync::Arc::new(move |_req: &[u8]| {
        Ok(canned.clone())
    })));
    let mut t_cb = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        std::hint::black_box(cb.evaluate(&call).unwrap());
        t_cb.push(t.elapsed());
    }
    cb.close();
    println!(
        "callback provider p50: {:.1} µs (client path + hand-off, no HTTP)",
        p50(&mut t_cb).as_secs_f64() * 1e6
    );
    // For attribution only: the same call on the local provider (no I/O, no I/O thread).
    let local_dir = tempfile::tempdir().unwrap();
    let local = Gateway::open(GatewayOptions::new(
        local_dir.path(),
        Config::from_json_str(r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#)
            .unwrap(),
    ))
    .unwrap();
    let mut t_local = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        std::hint::black_box(local.evaluate(&call).unwrap());
        t_local.push(t.elapsed());
    }
    local.close();
    println!(
        "local provider p50: {:.1} µs (client path without I/O, heuristic included)",
        p50(&mut t_local).as_secs_f64() * 1e6
    );
    let (b, e) = (p50(&mut t_bare), p50(&mut t_eval));
    println!("bare POST p50: {:.1} µs", b.as_secs_f64() * 1e6);
    println!("evaluate  p50: {:.1} µs", e.as_secs_f64() * 1e6);
    gw.close();
    let overhead = (e.as_secs_f64() - b.as_secs_f64()) * 1e6;
    println!(
        "client: overhead_us={overhead:.1} ratio={:.2}",
        e.as_secs_f64() / b.as_secs_f64()
    );
}

//! The browser extension beside the reference worker in one run (issue 22 "Benchmark"): a
//! `browser_computer` click by ref and a `browser_read_page` round trip through
//! `gw.call_tool`, over the same loopback channel, on the same fixture page — once served by
//! the reference worker's executor (`BrowserTools` on a local Chromium, what `jevgate-worker`
//! runs) and once by the extension in its own headless Chromium, paired through its options
//! page with a code. p50 and p99 of each, and the extension's p50 over the worker's.
//!
//! Goal: ≤ 1.5× the reference worker. `JEVGATE_BENCH_ROUNDS` rounds (default 40).
//! Before it, how long the commands ran inside the extension (p50/p99 of its own records); the
//! rest of a round trip is the channel. Final line:
//! `extension: click_p50_ms=… click_p99_ms=… worker_click_p50_ms=… worker_click_p99_ms=…
//! click_ratio=… read_p50_ms=… read_p99_ms=… worker_read_p50_ms=… worker_read_p99_ms=… read_ratio=…`

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};
use support::bench::{measure, pct, rounds, worker_baseline};
use support::extension::ExtensionBrowser;
use support::Server;

fn main() {
    let rounds = rounds();
    let t = support::gateway::builder().channel().build();
    let server = Server::start();

    let (mut w_clicks, mut w_reads) = worker_baseline(&t, &server, rounds);

    let ext = ExtensionBrowser::launch();
    let device = ext.pair_with_code(&t.gw, t.channel(), "bob");
    let (mut e_clicks, mut e_reads) = measure(&t.gw, "bob", &device, &server, rounds);
    // How long each command ran inside the extension (its own records, written once the
    // commands pause): the rest of a round trip is the channel.
    let want = (2 * rounds + 1).min(200);
    let deadline = Instant::now() + Duration::from_secs(5);
    let inside = loop {
        let v = ext.in_extension(
            "chrome.storage.session.get('ops').then(s => (s.ops || []).map(o => [o.tool, o.ms]))",
        );
        if v.as_array().map_or(0, Vec::len) >= want || Instant::now() >= deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let mut in_read: Vec<Duration> = Vec::new();
    let mut in_click: Vec<Duration> = Vec::new();
    for o in inside.as_array().into_iter().flatten() {
        let ms = Duration::from_secs_f64(o[1].as_f64().unwrap_or(0.0) / 1e3);
        match o[0].as_str() {
            Some("browser_read_page") => in_read.push(ms),
            Some("browser_computer") => in_click.push(ms),
            _ => {}
        }
    }
    if !in_read.is_empty() && !in_click.is_empty() {
        println!(
            "inside the extension: read_page p50 {:.2} ms p99 {:.2} ms | click p50 {:.2} ms p99 {:.2} ms",
            pct(&mut in_read, 50),
            pct(&mut in_read, 99),
            pct(&mut in_click, 50),
            pct(&mut in_click, 99)
        );
    }

    let (ec50, ec99, wc50, wc99) = (
        pct(&mut e_clicks, 50),
        pct(&mut e_clicks, 99),
        pct(&mut w_clicks, 50),
        pct(&mut w_clicks, 99),
    );
    let (er50, er99, wr50, wr99) = (
        pct(&mut e_reads, 50),
        pct(&mut e_reads, 99),
        pct(&mut w_reads, 50),
        pct(&mut w_reads, 99),
    );
    println!("{rounds} rounds each on /p/buttons");
    println!("click     extension p50 {ec50:.2} ms p99 {ec99:.2} ms | reference worker p50 {wc50:.2} ms p99 {wc99:.2} ms");
    println!("read_page extension p50 {er50:.2} ms p99 {er99:.2} ms | reference worker p50 {wr50:.2} ms p99 {wr99:.2} ms");
    println!(
        "extension: click_p50_ms={ec50:.2} click_p99_ms={ec99:.2} worker_click_p50_ms={wc50:.2} worker_click_p99_ms={wc99:.2} click_ratio={:.2} read_p50_ms={er50:.2} read_p99_ms={er99:.2} worker_read_p50_ms={wr50:.2} worker_read_p99_ms={wr99:.2} read_ratio={:.2}",
        ec50 / wc50,
        er50 / wr50
    );
    drop(ext);
    t.gw.close();
}

//! Lease manager throughput: acquire+renew operations per second on one thread, and with 8
//! threads contending for 2 devices, through the gateway façade (lock, clock, transition).
//! Baseline in the same run: the same number of lookups in a `parking_lot::Mutex<HashMap>`,
//! reported as a ratio.
//! Then, with `JEVGATE_PG_URL` (and the cargo feature `postgres`), the same two measures on
//! the fleet's PostgreSQL store (issue 23 "Benchmark": every operation a transaction on the
//! device's row at the database's clock, synchronous commit, loopback), beside SQLite's in this
//! run; skipped with the reason printed otherwise. `JEVGATE_BENCH_PG_OPS` sets the operations
//! per PostgreSQL measure (default 2000).
//! Final line: `lease: single=<ops/s> contended8=<ops/s>`, followed with PostgreSQL by
//! ` pg_single=<ops/s> pg_contended8=<ops/s> pg_single_ratio=<single/pg_single>`.

use jevgate::{Config, Gateway, GatewayOptions};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

const OPS: usize = 200_000;
const ROUNDS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn single(gw: &Gateway, ops: usize, prefix: &str) -> f64 {
    let l = gw.leases();
    let (a, b) = (format!("{prefix}dev-a"), format!("{prefix}dev-b"));
    let start = Instant::now();
    for i in 0..ops / 2 {
        let device = if i % 2 == 0 { &a } else { &b };
        l.acquire(device, "bench-session").unwrap();
        l.renew(device, "bench-session").unwrap();
    }
    ops as f64 / start.elapsed().as_secs_f64()
}

fn contended(gw: &Gateway, ops: usize, prefix: &str) -> f64 {
    let per_thread = ops / 8;
    let start = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let gw = gw.clone();
            let (a, b) = (format!("{prefix}c-a"), format!("{prefix}c-b"));
            std::thread::spawn(move || {
                let session = format!("s{t}");
                for i in 0..per_thread {
                    let device = if i % 2 == 0 { &a } else { &b };
                    let _ = gw.leases().acquire(device, &session);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    (per_thread * 8) as f64 / start.elapsed().as_secs_f64()
}

fn baseline() -> f64 {
    let map: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let start = Instant::now();
    for i in 0..OPS {
        let key = if i % 2 == 0 { "dev-a" } else { "dev-b" };
        *map.lock().entry(key.to_string()).or_default() += 1;
    }
    OPS as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir.path(), Config::default())).unwrap();
    let (mut s, mut c, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let base = baseline();
        let one = single(&gw, OPS, "");
        let many = contended(&gw, OPS, "");
        println!("round {round}: single={one:.0} ops/s contended8={many:.0} ops/s baseline_map={base:.0} ops/s");
        ratios.push(base / one);
        s.push(one);
        c.push(many);
    }
    gw.close();
    println!(
        "lease_baseline_ratio: map_lookup/lease_single={:.2}",
        median(ratios)
    );
    let pg = match pg_leases() {
        Some((one, many)) => {
            let ratio = median(s.clone()) / one;
            println!(
                "postgres: single={one:.0} ops/s contended8={many:.0} ops/s; SQLite's single is {ratio:.1}x"
            );
            format!(" pg_single={one:.0} pg_contended8={many:.0} pg_single_ratio={ratio:.2}")
        }
        None => String::new(),
    };
    println!(
        "lease: single={:.0} contended8={:.0}{pg}",
        median(s),
        median(c)
    );
}

/// Acquire+renew ops/s on one thread and with 8 threads contending, on PostgreSQL
/// (`JEVGATE_PG_URL`; the feature `postgres`), medians of 3 rounds; `None` with the reason
/// printed when either is missing.
fn pg_leases() -> Option<(f64, f64)> {
    let url = match std::env::var("JEVGATE_PG_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            println!("postgres: skipped (JEVGATE_PG_URL is not set)");
            return None;
        }
    };
    if !cfg!(feature = "postgres") {
        println!("postgres: skipped (built without the cargo feature `postgres`)");
        return None;
    }
    let ops: usize = std::env::var("JEVGATE_BENCH_PG_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
        .max(16);
    let dir = tempfile::tempdir().unwrap();
    // The URL goes through a file (`urlFile`) in a private temporary directory, never a log.
    let url_file = dir.path().join("pg-url");
    std::fs::write(&url_file, format!("{url}\n")).unwrap();
    let json = serde_json::json!({"gateway": {"store": {"kind": "postgres", "urlFile": url_file}}});
    let config = Config::from_json_str(&json.to_string()).unwrap();
    let data = dir.path().join("data");
    let gw = Gateway::open(GatewayOptions::new(&data, config)).unwrap();
    // Lease rows outlive a run: this run's devices are its own.
    let run = format!(
        "b{}-{}-",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default()
    );
    let (mut s, mut c) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let prefix = format!("{run}{round}-");
        let one = single(&gw, ops, &prefix);
        let many = contended(&gw, ops, &prefix);
        println!("postgres round {round}: single={one:.0} ops/s contended8={many:.0} ops/s");
        s.push(one);
        c.push(many);
    }
    gw.close();
    Some((median(s), median(c)))
}

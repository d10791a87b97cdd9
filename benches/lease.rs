//! Lease manager throughput: acquire+renew operations per second on one thread, and with 8
//! threads contending for 2 devices, through the gateway façade (lock, clock, transition).
//! Baseline in the same run: the same number of lookups in a `parking_lot::Mutex<HashMap>`,
//! reported as a ratio. Final line: `lease: single=<ops/s> contended8=<ops/s>`.

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

fn single(gw: &Gateway) -> f64 {
    let l = gw.leases();
    let start = Instant::now();
    for i in 0..OPS / 2 {
        let device = if i % 2 == 0 { "dev-a" } else { "dev-b" };
        l.acquire(device, "bench-session").unwrap();
        l.renew(device, "bench-session").unwrap();
    }
    OPS as f64 / start.elapsed().as_secs_f64()
}

fn contended(gw: &Gateway) -> f64 {
    let per_thread = OPS / 8;
    let start = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let gw = gw.clone();
            std::thread::spawn(move || {
                let session = format!("s{t}");
                for i in 0..per_thread {
                    let device = if i % 2 == 0 { "c-a" } else { "c-b" };
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
        let one = single(&gw);
        let many = contended(&gw);
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
    println!("lease: single={:.0} contended8={:.0}", median(s), median(c));
}

//! Receipt commit cost (R-TSK-RCPT): how long a task's checkpoint takes to become durable
//! through the real path (the one receipt writer, its group commit, `records::checkpoint` into
//! SQLite with `synchronous=FULL`), beside the disk's own floor measured in the same run and the
//! same directory: a raw `fdatasync` of a small file (a 512-byte rewrite, then `sync_data`).
//! A raw `fsync` of the same file is shown too (SQLite calls `fsync`, which also writes the
//! inode whose mtime each write changed) and a raw `fdatasync` of as many bytes as one
//! checkpoint adds to the WAL. Samples alternate in blocks of 100, so all see the same disk.
//!
//! Then throughput: 16 producer threads each committing checkpoints through the one writer
//! (receipts/s over the whole run, and the slowest single checkpoint).
//!
//! Goals (issue 14): p50 ≤ 1.2× raw p50, p99 ≤ 2× raw p99, ≥ 25,000 receipts/s with 16
//! producers, max ≤ 10 ms. `JEVGATE_BENCH_ITERS` sets the latency samples (default 3000),
//! `JEVGATE_BENCH_PER_PRODUCER` the checkpoints per producer (default 2000), `JEVGATE_BENCH_DIR`
//! where the files go (default: a temporary directory).
//! Then the control plane (issue 21): the accept-to-dispatch latency of a command sent to a
//! waiting session (from `command()` to the backend receiving its mutation: the command's row,
//! a slot, the request's receipt, an observation and the checkpoint) as p50/p99 and as a ratio
//! to the checkpoint's p50 measured above, and control verbs per second from 16 concurrent
//! callers (each steering its own session: `agent`, then `user`, with fresh ids).
//! `JEVGATE_BENCH_COMMANDS` sets the commands timed (default 200), `JEVGATE_BENCH_VERBS` the
//! verbs per caller (default 50).
//! Then, with `JEVGATE_PG_URL` (and the cargo feature `postgres`), the same checkpoint on
//! PostgreSQL (issue 23 "Benchmark": p50/p99 beside SQLite's, goal p50 ≤ 3× SQLite's p50), its
//! numbers appended to the last line (`pg_p50_us=… pg_p99_us=… pg_p50_ratio=…`); skipped with
//! the reason printed otherwise.
//! Last two lines: `control: accept_to_dispatch_p50_us=… p99_us=… checkpoint_ratio=…
//! verbs16_per_s=…`, then `receipts: p50_us=… p99_us=… fsync_p50_us=… fsync_p99_us=…
//! p50_ratio=… p99_ratio=… producers16_per_s=… max_ms=…`.

use jevgate::browser::{ActionResult, BrowserBackend, Command, Response};
use jevgate::observation::Observation;
use jevgate::task::{ControlRequest, SpawnRequest, TaskOwner, TaskState};
use jevgate::unstable::ReceiptBench;
use jevgate::{Config, Gateway, GatewayOptions};
use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A page that answers at once and reports when a mutation reaches it.
struct Instant0 {
    generation: AtomicU64,
    dispatched: Mutex<Option<mpsc::Sender<Instant>>>,
}

impl BrowserBackend for Instant0 {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        match command {
            Command::Observe(_) => Ok(Response::Observation(Observation {
                generation: self.generation.load(Ordering::SeqCst),
                url: "https://bench.example/".into(),
                title: "Bench".into(),
                text: format!("{}", self.generation.load(Ordering::SeqCst)),
                ..Observation::default()
            })),
            Command::PageScroll(a) => {
                if let Some(tx) = self.dispatched.lock().unwrap().as_ref() {
                    let _ = tx.send(Instant::now());
                }
                Ok(Response::Action(ActionResult {
                    operation_id: a.operation_id.clone(),
                    tool: "page_scroll".into(),
                    generation_before: self.generation.fetch_add(1, Ordering::SeqCst),
                    navigation_started: false,
                    settled: false,
                    dialog: None,
                    notes: Vec::new(),
                }))
            }
            other => Err(jevgate::Error::ExecutionFailed {
                reason: format!("the bench page has no {}", other.tool()),
            }),
        }
    }
}

/// `control:` — accept-to-dispatch p50/p99 and verbs/s under 16 callers.
fn control_plane(
    dir: &std::path::Path,
    commands: usize,
    verbs: usize,
) -> (Duration, Duration, f64) {
    let config = Config::from_json_str(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"browserTasks":{"enabled":true}}}}}"#,
    )
    .unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir, config)).unwrap();
    let owner = TaskOwner::new("bench", "p0", "c0");
    let (tx, rx) = mpsc::channel();
    let page = Arc::new(Instant0 {
        generation: AtomicU64::new(1),
        dispatched: Mutex::new(Some(tx)),
    });
    let mut request = SpawnRequest::new("");
    request.keep_open = true;
    request.budget.max_steps = 1000;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner, request, page.clone())
        .unwrap();
    let wait = Duration::from_secs(60);
    gw.tasks().wait(&owner, &id, wait).unwrap();
    let mut lat = Vec::with_capacity(commands);
    for i in 0..commands {
        let text = if i % 2 == 0 {
            "scroll down"
        } else {
            "scroll up"
        };
        let t = Instant::now();
        gw.tasks().command(&owner, &id, text).unwrap();
        let at = rx.recv_timeout(wait).expect("the command was dispatched");
        lat.push(at.saturating_duration_since(t));
        let s = gw.tasks().wait(&owner, &id, wait).unwrap();
        assert_eq!(s.state, TaskState::WaitingInput);
    }
    let (p50, p99) = (pct(&mut lat, 50), pct(&mut lat, 99));
    // 16 callers, each its own session (a principal each: 8 sessions per principal at most).
    let sessions: Vec<(TaskOwner, String)> = (0..PRODUCERS)
        .map(|k| {
            let owner = TaskOwner::new("bench", format!("p{}", k + 1), "c");
            let mut r = SpawnRequest::new("");
            r.keep_open = true;
            let id = gw
                .tasks()
                .spawn_with_backend(&owner, r, page.clone())
                .unwrap();
            gw.tasks().wait(&owner, &id, wait).unwrap();
            (owner, id)
        })
        .collect();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for (k, (owner, id)) in sessions.iter().enumerate() {
            let gw = &gw;
            scope.spawn(move || {
                let rev = gw.tasks().status(owner, id).unwrap().revision;
                for i in 0..verbs {
                    let action = if i % 2 == 0 { "agent" } else { "user" };
                    let c = ControlRequest::from_json(&format!(
                        r#"{{"id":"00000000-0000-4000-8000-{:06x}{:06x}","action":"{action}","expectedRevision":{rev}}}"#,
                        k, i
                    ))
                    .unwrap();
                    gw.tasks().control(owner, id, &c).unwrap();
                }
            });
        }
    });
    let per_s = (PRODUCERS * verbs) as f64 / start.elapsed().as_secs_f64();
    gw.close();
    (p50, p99, per_s)
}

const BLOCK: usize = 100;
const PRODUCERS: usize = 16;

fn pct(v: &mut [Duration], p: usize) -> Duration {
    v.sort();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let iterations = env("JEVGATE_BENCH_ITERS", 3000).max(BLOCK);
    let per_producer = env("JEVGATE_BENCH_PER_PRODUCER", 2000).max(1);
    // `JEVGATE_BENCH_DIR` puts the files elsewhere (a tmpfs shows the CPU-bound ceiling).
    let dir = match std::env::var_os("JEVGATE_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let bench = Arc::new(ReceiptBench::open(dir.path()).unwrap());

    // The raw floor: a small file in the same directory, rewritten in place and fdatasync'ed.
    let mut raw = std::fs::File::options()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(dir.path().join("raw-fsync"))
        .unwrap();
    raw.write_all(&[0u8; 512]).unwrap();
    raw.sync_all().unwrap();

    // Warm-up: the first commit also fsyncs the directory; the WAL grows to its working size.
    for i in 0..200 {
        bench.checkpoint(&format!("warm-{i}")).unwrap();
    }

    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    let (mut full, mut wal_sized) = (Vec::new(), Vec::new());
    let mut big = vec![0u8; 3 * (4096 + 24)];
    let mut op = 0usize;
    let mut buf = [0u8; 512];
    while ours.len() < iterations {
        for _ in 0..BLOCK {
            buf[op % 512] = buf[op % 512].wrapping_add(1);
            let t = Instant::now();
            raw.seek(SeekFrom::Start(0)).unwrap();
            raw.write_all(&buf).unwrap();
            raw.sync_data().unwrap();
            floor.push(t.elapsed());
            op += 1;
        }
        for _ in 0..BLOCK {
            // For the report only: `fsync` (what SQLite calls; it also writes the inode).
            buf[op % 512] = buf[op % 512].wrapping_add(1);
            let t = Instant::now();
            raw.seek(SeekFrom::Start(0)).unwrap();
            raw.write_all(&buf).unwrap();
            raw.sync_all().unwrap();
            full.push(t.elapsed());
            op += 1;
        }
        for _ in 0..BLOCK {
            // For the report only: the bytes one checkpoint adds to the WAL (three 4 KiB pages:
            // the table, its primary key and its request index, each with a frame header).
            big[op % 512] = big[op % 512].wrapping_add(1);
            let t = Instant::now();
            raw.seek(SeekFrom::Start(0)).unwrap();
            raw.write_all(&big).unwrap();
            raw.sync_data().unwrap();
            wal_sized.push(t.elapsed());
            op += 1;
        }
        for _ in 0..BLOCK {
            let id = format!("op-{op}");
            let t = Instant::now();
            bench.checkpoint(&id).unwrap();
            ours.push(t.elapsed());
            op += 1;
        }
    }
    let (p50, p99) = (pct(&mut ours, 50), pct(&mut ours, 99));
    let (f50, f99) = (pct(&mut floor, 50), pct(&mut floor, 99));
    println!(
        "latency ({} samples each): checkpoint p50={:.0}us p99={:.0}us max={:.0}us; raw fdatasync p50={:.0}us p99={:.0}us max={:.0}us",
        ours.len(),
        us(p50),
        us(p99),
        us(*ours.last().unwrap()),
        us(f50),
        us(f99),
        us(*floor.last().unwrap())
    );

    println!(
        "raw fsync (data and inode, as SQLite syncs its WAL) p50={:.0}us p99={:.0}us",
        us(pct(&mut full, 50)),
        us(pct(&mut full, 99))
    );
    println!(
        "raw fdatasync of {} bytes (one checkpoint's WAL frames) p50={:.0}us p99={:.0}us",
        big.len(),
        us(pct(&mut wal_sized, 50)),
        us(pct(&mut wal_sized, 99))
    );

    // Throughput: 16 producers through the one writer.
    let start = Instant::now();
    let threads: Vec<_> = (0..PRODUCERS)
        .map(|t| {
            let bench = Arc::clone(&bench);
            std::thread::spawn(move || {
                let mut max = Duration::ZERO;
                for i in 0..per_producer {
                    let id = format!("p{t}-{i}");
                    let s = Instant::now();
                    bench.checkpoint(&id).unwrap();
                    max = max.max(s.elapsed());
                }
                max
            })
        })
        .collect();
    let max = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .max()
        .unwrap_or_default();
    let wall = start.elapsed();
    let per_s = (PRODUCERS * per_producer) as f64 / wall.as_secs_f64();
    println!(
        "throughput: {PRODUCERS} producers x {per_producer} checkpoints in {:.0} ms: {per_s:.0} receipts/s, max {:.2} ms",
        wall.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    bench.close();

    // The fleet's store (issue 23 "Benchmark"): the same checkpoint through the same writer
    // into PostgreSQL (loopback, synchronous commit), beside SQLite's in this run.
    let pg = pg_checkpoints(iterations);

    let control_dir = tempfile::tempdir_in(dir.path()).unwrap();
    let (c50, c99, verbs_per_s) = control_plane(
        control_dir.path(),
        env("JEVGATE_BENCH_COMMANDS", 200).max(2),
        env("JEVGATE_BENCH_VERBS", 50).max(1),
    );

    let (r50, r99) = (us(p50) / us(f50), us(p99) / us(f99));
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "goals: p50<=1.2x {} p99<=2x {} >=25000/s {} max<=10ms {}",
        verdict(r50 <= 1.2),
        verdict(r99 <= 2.0),
        verdict(per_s >= 25_000.0),
        verdict(max <= Duration::from_millis(10))
    );
    println!(
        "control: accept_to_dispatch_p50_us={:.0} p99_us={:.0} checkpoint_ratio={:.2} verbs16_per_s={verbs_per_s:.0}",
        us(c50),
        us(c99),
        us(c50) / us(p50)
    );
    let pg = match pg {
        Some((g50, g99)) => {
            let ratio = us(g50) / us(p50);
            println!(
                "postgres: checkpoint p50={:.0}us p99={:.0}us; {ratio:.2}x SQLite's p50 (goal <=3x: {})",
                us(g50),
                us(g99),
                verdict(ratio <= 3.0)
            );
            format!(
                " pg_p50_us={:.0} pg_p99_us={:.0} pg_p50_ratio={ratio:.2}",
                us(g50),
                us(g99)
            )
        }
        None => String::new(),
    };
    println!(
        "receipts: p50_us={:.0} p99_us={:.0} fsync_p50_us={:.0} fsync_p99_us={:.0} p50_ratio={r50:.2} p99_ratio={r99:.2} producers16_per_s={per_s:.0} max_ms={:.2}{pg}",
        us(p50),
        us(p99),
        us(f50),
        us(f99),
        max.as_secs_f64() * 1e3
    );
}

/// Checkpoint p50/p99 on PostgreSQL (`JEVGATE_PG_URL`; the feature `postgres`), `None` with
/// the reason printed when either is missing.
fn pg_checkpoints(iterations: usize) -> Option<(Duration, Duration)> {
    let url = match std::env::var("JEVGATE_PG_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            println!("postgres: skipped (JEVGATE_PG_URL is not set)");
            return None;
        }
    };
    #[cfg(feature = "postgres")]
    {
        let bench = ReceiptBench::open_shared(&url).unwrap();
        // Operation ids are unique in the whole database, which earlier runs may have used.
        let run = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        for i in 0..200 {
            bench.checkpoint(&format!("{run}-pg-warm-{i}")).unwrap();
        }
        let mut times = Vec::with_capacity(iterations);
        for i in 0..iterations {
            let t = Instant::now();
            bench.checkpoint(&format!("{run}-pg-op-{i}")).unwrap();
            times.push(t.elapsed());
        }
        bench.close();
        Some((pct(&mut times, 50), pct(&mut times, 99)))
    }
    #[cfg(not(feature = "postgres"))]
    {
        let _ = (url, iterations);
        println!("postgres: skipped (built without the cargo feature `postgres`)");
        None
    }
}

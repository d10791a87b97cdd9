//! Leases shared by several OS processes through PostgreSQL (issue 23 items 1, 2 and 5;
//! R-LEASE-1..4, R-LEASE-6, R-LEASE-8 across processes, R-ERR for `STORE_UNAVAILABLE`).
//!
//! Needs the cargo feature `postgres` and a throw-away cluster in `JEVGATE_PG_URL`
//! (`scripts/pg-cluster start DIR` prints one; `scripts/test` starts one and sets
//! `JEVGATE_REQUIRE_PG=1`). Without them every test here prints why it is skipped — and fails
//! instead under `JEVGATE_REQUIRE_PG=1`. Each test works in a database of its own.
//!
//! Child processes are this test binary run again with `JEVGATE_FLEET_CHILD` naming a role
//! (the `child_role` test does nothing without it).

mod support;

use jevgate::lease::{BrowserCall, ControlCaller, SessionMode};
use jevgate::{Config, Gateway, GatewayOptions};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use support::pg::{
    expect_line, fresh_db, lines_of, open_gateway, pg_config, pg_url, psql, with_db,
};

const DEVICES: [&str; 4] = ["dev-0", "dev-1", "dev-2", "dev-3"];
const TTL_MS: i64 = 120_000;

fn person() -> ControlCaller {
    ControlCaller::owner("person")
}

/// Runs this binary again as a child in `role`.
fn spawn_child(role: &str, url_file: &Path, extra: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env("JEVGATE_FLEET_CHILD", role)
        .env("JEVGATE_FLEET_URL_FILE", url_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A small xorshift: the contention children's choices (seeded per thread, printed on failure).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The child processes' roles. Does nothing unless a parent test set `JEVGATE_FLEET_CHILD`.
#[test]
fn child_role() {
    let Ok(role) = std::env::var("JEVGATE_FLEET_CHILD") else {
        return;
    };
    let url_file = PathBuf::from(std::env::var_os("JEVGATE_FLEET_URL_FILE").unwrap());
    let (gw, _dir) = open_gateway(&url_file);
    match role.as_str() {
        "contention" => contention_child(&gw),
        "hold" => {
            // Acquires and then waits to be killed: a process that dies holding a lease.
            let g = gw.leases().acquire("dev", "session-a").unwrap();
            say(&format!("HELD {}", g.fencing_token));
            loop {
                std::thread::park();
            }
        }
        "command" => {
            // A command in flight: reports when its cancellation hook ran.
            let (tx, rx) = mpsc::channel();
            let (grant, _guard) = gw
                .leases()
                .acquire_command("dev", "session-a", move || {
                    let _ = tx.send(Instant::now());
                })
                .unwrap();
            say(&format!("RUNNING {}", grant.fencing_token));
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(_) => say("CANCELLED"),
                Err(_) => say("NOT-CANCELLED"),
            }
        }
        "profile" => {
            // Holds a persistent profile in a browser session, then waits to be killed.
            let _guard = gw
                .leases()
                .begin_browser_call(&profile_call("t-child", SessionMode::Authenticated))
                .unwrap();
            say("PROFILE");
            loop {
                std::thread::park();
            }
        }
        "alive" => {
            let (me, _) = jevgate::unstable::fleet_processes(gw.leases())
                .unwrap()
                .unwrap();
            say(&format!("PROCESS {me}"));
            loop {
                std::thread::park();
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

/// 8 threads doing random acquire / renew / take-back / release on 4 devices until the
/// deadline; every grant is printed as `GRANT device token session grant_ms acquired`.
fn contention_child(gw: &Gateway) {
    let secs: u64 = std::env::var("JEVGATE_FLEET_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    // Under an outage of the store (the partition test), `STORE_UNAVAILABLE` is expected: it
    // must be retryable (503) and come fast; every other answer is checked as without it.
    let outage = std::env::var("JEVGATE_FLEET_OUTAGE").is_ok_and(|v| v == "1");
    let me = std::process::id();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let lines = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    say("STARTED");
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let gw = gw.clone();
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                let mut rng = Rng(u64::from(me) << 8 | t | 1 << 40);
                let mut generation = 0;
                let mut session = format!("p{me}-t{t}-g{generation}");
                let mut local = Vec::new();
                let mut counts = [0u64; 5];
                // The device this thread's session holds, as far as it knows: it renews it
                // mostly (so a take-back is noticed soon and its window closes).
                let mut held: Option<&str> = None;
                // Calls that met an unreachable store: how many, and the slowest (ms).
                let (mut unavailable, mut slowest_ms) = (0u64, 0u128);
                let mut unreachable = |e: &jevgate::Error, started: Instant| -> bool {
                    if !(outage && e.code() == "STORE_UNAVAILABLE") {
                        return false;
                    }
                    assert!(e.retryable() && e.http_status() == 503, "{e}");
                    unavailable += 1;
                    slowest_ms = slowest_ms.max(started.elapsed().as_millis());
                    // Do not spin on a refused connection.
                    std::thread::sleep(Duration::from_millis(20));
                    true
                };
                while Instant::now() < deadline {
                    let any = DEVICES[rng.below(4) as usize];
                    let l = gw.leases();
                    let roll = rng.below(20);
                    let started = Instant::now();
                    let (device, granted) = match (held, roll) {
                        (Some(d), 0..=11) => (d, Some(l.renew(d, &session))),
                        (_, 12 | 13) => {
                            match l.take_back(any, &person()) {
                                Ok(true) => counts[3] += 1,
                                Ok(false) => {}
                                Err(e) => assert!(unreachable(&e, started), "take-back: {e}"),
                            }
                            (any, None)
                        }
                        (_, 14) => {
                            match l.release_session(&session) {
                                Ok(_) => {
                                    counts[4] += 1;
                                    generation += 1;
                                    session = format!("p{me}-t{t}-g{generation}");
                                    held = None;
                                }
                                Err(e) => assert!(unreachable(&e, started), "release: {e}"),
                            }
                            (any, None)
                        }
                        _ => (any, Some(l.acquire(any, &session))),
                    };
                    let granted = match granted {
                        Some(Err(e)) if unreachable(&e, started) => None,
                        other => other,
                    };
                    if let Some(Err(_)) = &granted {
                        if held == Some(device) {
                            held = None;
                        }
                    }
                    match granted {
                        Some(Ok(g)) => {
                            if g.acquired {
                                held = Some(device);
                            }
                            counts[usize::from(g.acquired)] += 1;
                            local.push(format!(
                                "GRANT {device} {} {session} {} {}",
                                g.fencing_token,
                                g.expires_at - TTL_MS,
                                g.acquired
                            ));
                        }
                        Some(Err(e)) => {
                            let code = e.code();
                            assert!(
                                matches!(
                                    code,
                                    "DEVICE_CONTROL_ELSEWHERE"
                                        | "DEVICE_CONTROL_REVOKED"
                                        | "DEVICE_CONTROL_NOT_HELD"
                                ),
                                "unexpected {code}: {e}"
                            );
                            counts[2] += 1;
                        }
                        None => {}
                    }
                }
                local.push(format!(
                    "COUNTS renewals={} acquisitions={} refusals={} takebacks={} releases={}",
                    counts[0], counts[1], counts[2], counts[3], counts[4]
                ));
                local.push(format!("UNAVAILABLE {unavailable} {slowest_ms}"));
                lines.lock().extend(local);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut out = std::io::stdout().lock();
    for line in lines.lock().iter() {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "DONE");
    let _ = out.flush();
}

#[derive(Debug, Clone)]
struct Grant {
    token: u64,
    session: String,
    at_ms: i64,
}

/// What the contention children reported.
#[derive(Default)]
struct Run {
    /// Every grant, by device.
    grants: HashMap<String, Vec<Grant>>,
    /// The children's counts, summed.
    totals: BTreeMap<String, u64>,
    /// Per child: calls that met an unreachable store, the slowest of them (ms), and the
    /// database time of its last grant.
    children: Vec<(u64, u64, i64)>,
}

/// Reads every child's lines up to its `DONE`.
fn collect_run(receivers: &[mpsc::Receiver<String>]) -> Run {
    let mut run = Run::default();
    for rx in receivers {
        let mut child = (0u64, 0u64, i64::MIN);
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(120))
                .expect("a contention child ended without DONE");
            if line.contains("DONE") {
                break;
            }
            let Some(i) = ["GRANT ", "COUNTS ", "UNAVAILABLE "]
                .iter()
                .find_map(|m| line.find(m))
            else {
                continue;
            };
            let fields: Vec<&str> = line[i..].split_whitespace().collect();
            match fields[0] {
                "COUNTS" => {
                    for kv in &fields[1..] {
                        let (k, v) = kv.split_once('=').unwrap();
                        *run.totals.entry(k.to_string()).or_default() += v.parse::<u64>().unwrap();
                    }
                }
                "UNAVAILABLE" => {
                    child.0 += fields[1].parse::<u64>().unwrap();
                    child.1 = child.1.max(fields[2].parse().unwrap());
                }
                _ => {
                    let g = Grant {
                        token: fields[2].parse().unwrap(),
                        session: fields[3].to_string(),
                        at_ms: fields[4].parse().unwrap(),
                    };
                    child.2 = child.2.max(g.at_ms);
                    run.grants.entry(fields[1].to_string()).or_default().push(g);
                }
            }
        }
        run.children.push(child);
    }
    run
}

/// The checker: a token belongs to one session, and the tenures of a device never overlap on
/// the database clock (every grant of a tenure comes before every grant of a later one), so
/// tokens only grow with time. Returns the number of tenures seen.
fn check_no_two_holders(grants: &HashMap<String, Vec<Grant>>) -> usize {
    let mut tenures = 0;
    for (device, list) in grants {
        let mut owner_of: BTreeMap<u64, &str> = BTreeMap::new();
        let mut span: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
        for g in list {
            let owner = owner_of.entry(g.token).or_insert(&g.session);
            assert_eq!(
                *owner, g.session,
                "{device}: token {} granted to two sessions",
                g.token
            );
            let s = span.entry(g.token).or_insert((g.at_ms, g.at_ms));
            s.0 = s.0.min(g.at_ms);
            s.1 = s.1.max(g.at_ms);
        }
        let spans: Vec<(u64, (i64, i64))> = span.into_iter().collect();
        for w in spans.windows(2) {
            let (t1, (_, last1)) = w[0];
            let (t2, (first2, _)) = w[1];
            assert!(
                last1 <= first2,
                "{device}: tenure {t1} was renewed at {last1} after tenure {t2} began at {first2}"
            );
        }
        tenures += spans.len();
    }
    tenures
}

// R-LEASE-8 across processes: ≥ 8 OS processes × 8 threads of random acquire / renew /
// take-back / release on 4 devices. Every grant carries its fencing token and the database
// time it was made at; the checker proves a token belongs to one session, the tenures of a
// device never overlap on the database clock (every grant of a tenure comes before every grant
// of a later one), and tokens only grow.
#[test]
fn contention_across_8_processes_never_gives_a_device_two_holders() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    for d in DEVICES {
        gw.leases().set_device_owner(d, "person").unwrap();
    }
    let mut children: Vec<Child> = (0..8)
        .map(|_| spawn_child("contention", &db.url_file, &[]))
        .collect();
    let receivers: Vec<_> = children.iter_mut().map(lines_of).collect();
    let run = collect_run(&receivers);
    let (grants, totals) = (&run.grants, &run.totals);
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a contention child failed");
    }
    eprintln!("contention totals: {totals:?}");
    assert!(
        totals["acquisitions"] >= 8 && totals["takebacks"] >= 2 && totals["renewals"] >= 4,
        "the run exercised every transition: {totals:?}"
    );
    let tenures = check_no_two_holders(grants);
    assert!(tenures >= 8, "devices changed hands ({tenures} tenures)");
    // The database agrees: every device's token is at least the highest granted.
    for device in DEVICES {
        let top = grants[device].iter().map(|g| g.token).max().unwrap();
        let stored: u64 = psql(
            &db.url,
            &format!(
                "SELECT fencing_token FROM jevgate_control_leases WHERE device_id = '{device}'"
            ),
        )
        .parse()
        .unwrap();
        assert!(
            stored >= top,
            "{device}: stored token {stored} < granted {top}"
        );
    }
}

// R-LEASE-3 across processes: the person takes the device back from another process; the
// holder's in-flight command there is cancelled (through NOTIFY) within 1 s.
#[test]
fn take_back_from_another_process_cancels_the_in_flight_command_within_1_s() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    gw.leases().set_device_owner("dev", "person").unwrap();
    let mut child = spawn_child("command", &db.url_file, &[]);
    let rx = lines_of(&mut child);
    let token: u64 = expect_line(&rx, "RUNNING", Duration::from_secs(60))
        .parse()
        .unwrap();
    assert!(token >= 1);
    assert!(gw.leases().take_back("dev", &person()).unwrap());
    let cancelled = expect_line(&rx, "CANCELLED", Duration::from_secs(1));
    assert_eq!(cancelled, "", "the hook ran (not NOT-CANCELLED)");
    assert!(child.wait().unwrap().success());
    // The dispossessed session is told once (R-LEASE-3), from any process.
    assert_eq!(
        gw.leases().acquire("dev", "session-a").unwrap_err().code(),
        "DEVICE_CONTROL_REVOKED"
    );
    let again = gw.leases().acquire("dev", "session-a").unwrap();
    assert!(again.acquired && again.fencing_token > token);
}

// R-LEASE-6, issue 25 item 1, on the shared store: one device is released alone.
#[test]
fn one_device_is_released_alone_on_the_shared_store() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    let l = gw.leases();
    l.acquire("d1", "a").unwrap();
    l.acquire("d2", "a").unwrap();
    assert!(!l.release("d1", "b").unwrap());
    assert!(l.release("d1", "a").unwrap());
    assert_eq!(l.holder("d1"), None);
    assert_eq!(l.holder("d2").as_deref(), Some("a"));
    assert!(l.acquire("d1", "c").unwrap().acquired);
}

// R-LEASE-6 across processes: a release by another process cancels nothing.
#[test]
fn a_release_from_another_process_does_not_cancel_the_command() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    let mut child = spawn_child("command", &db.url_file, &[]);
    let rx = lines_of(&mut child);
    expect_line(&rx, "RUNNING", Duration::from_secs(60));
    assert_eq!(gw.leases().release_session("session-a").unwrap(), 1);
    // A take-back of a later tenure (not the command's) must not cancel it either.
    gw.leases().set_device_owner("dev", "person").unwrap();
    gw.leases().acquire("dev", "session-b").unwrap();
    assert!(gw.leases().take_back("dev", &person()).unwrap());
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    let _ = child.wait();
    let mut seen = Vec::new();
    while let Ok(line) = rx.try_recv() {
        seen.push(line);
    }
    assert!(
        !seen.iter().any(|l| l.contains("CANCELLED")),
        "nothing cancelled: {seen:?}"
    );
}

// Clock policy on the shared store: a process that dies holding a lease frees nothing early;
// the same session renews its tenure (same token) from a restarted process; another session
// waits for the full idle expiry on the database clock.
#[test]
fn a_killed_process_does_not_free_its_lease_early() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let mut child = spawn_child("hold", &db.url_file, &[]);
    let rx = lines_of(&mut child);
    let token: u64 = expect_line(&rx, "HELD", Duration::from_secs(60))
        .parse()
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let (gw, _dir) = open_gateway(&db.url_file);
    let l = gw.leases();
    assert_eq!(
        l.acquire("dev", "session-b").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    let renewed = l.acquire("dev", "session-a").unwrap();
    assert!(!renewed.acquired, "the restarted session renews its tenure");
    assert_eq!(renewed.fencing_token, token);
    jevgate::unstable::advance_store_clock_ms(l, TTL_MS - 1_000);
    assert_eq!(
        l.acquire("dev", "session-b").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    jevgate::unstable::advance_store_clock_ms(l, 1_000);
    let b = l.acquire("dev", "session-b").unwrap();
    assert!(b.acquired && b.fencing_token > token);
}

// Expiry is judged by the database's clock: hosts whose clocks disagree by hours agree on the
// lease; moving the database clock (the test offset) is what expires it.
#[test]
fn expiry_is_judged_by_the_database_clock_not_the_hosts() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let config = pg_config(&db.url_file);
    let early = jevgate::clock::ManualClock::new();
    let late = jevgate::clock::ManualClock::new();
    late.advance(Duration::from_secs(6 * 3600));
    let (da, db_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Gateway::open(
        GatewayOptions::new(da.path(), config.clone()).with_clock(Arc::new(early.clone())),
    )
    .unwrap();
    let b = Gateway::open(
        GatewayOptions::new(db_dir.path(), config).with_clock(Arc::new(late.clone())),
    )
    .unwrap();
    let g = a.leases().acquire("dev", "sa").unwrap();
    let db_now: i64 = psql(
        &db.url,
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    )
    .parse()
    .unwrap();
    assert!(
        (g.expires_at - TTL_MS - db_now).abs() < 60_000,
        "expiresAt is on the database clock"
    );
    early.advance(Duration::from_secs(24 * 3600));
    late.advance(Duration::from_secs(24 * 3600));
    assert_eq!(
        b.leases().acquire("dev", "sb").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE",
        "host clocks moving a day frees nothing"
    );
    jevgate::unstable::advance_store_clock_ms(b.leases(), TTL_MS + 1_000);
    assert!(b.leases().acquire("dev", "sb").unwrap().acquired);
    // A's view of the database clock did not move: it still sees sb's new tenure as live.
    assert_eq!(
        a.leases().acquire("dev", "sa").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    a.close();
    b.close();
}

// Item 1: four processes' gateways opening a fresh database at once apply each migration
// exactly once (the advisory lock; the migrations table's key would refuse a second one), and
// the versions recorded are the SQLite file's: one numbered list for both engines.
#[test]
fn four_concurrent_opens_apply_the_migrations_once() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let file = db.url_file.clone();
            std::thread::spawn(move || {
                let dir = tempfile::tempdir().unwrap();
                barrier.wait();
                let gw = Gateway::open(GatewayOptions::new(dir.path(), pg_config(&file)));
                gw.map(|gw| gw.close()).map_err(|e| e.code())
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), Ok(()));
    }
    let rows = psql(
        &db.url,
        "SELECT count(*) || ' ' || count(DISTINCT version) || ' ' || min(version) || ' ' || max(version) FROM jevgate_migrations",
    );
    let parts: Vec<i64> = rows.split(' ').map(|p| p.parse().unwrap()).collect();
    assert_eq!(parts[0], parts[1], "no version applied twice");
    assert_eq!(
        (parts[2], parts[3]),
        (1, parts[0]),
        "versions 1..=n each once"
    );
    // The SQLite file of a gateway of the same build is at the same version.
    let dir = tempfile::tempdir().unwrap();
    Gateway::open(GatewayOptions::new(dir.path(), Config::default()))
        .unwrap()
        .close();
    let sqlite_version: i64 = rusqlite::Connection::open(dir.path().join("jevgate.sqlite3"))
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(
        parts[3], sqlite_version,
        "one numbered list for both engines"
    );
    // A database migrated by a newer build is refused, like a newer SQLite file.
    psql(
        &db.url,
        &format!(
            "INSERT INTO jevgate_migrations (version) VALUES ({})",
            sqlite_version + 3
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let err = Gateway::open(GatewayOptions::new(dir.path(), pg_config(&db.url_file)))
        .map(|gw| gw.close())
        .unwrap_err();
    assert_eq!(err.code(), "STORE_VERSION_UNSUPPORTED");
}

// Item 2: every process keeps a liveness row; one killed is dead once its row is 10 s old on
// the database clock, while a living one keeps beating (every 2 s).
#[test]
fn a_killed_process_is_dead_after_10_s_of_database_time() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    let mut child = spawn_child("alive", &db.url_file, &[]);
    let rx = lines_of(&mut child);
    let other = expect_line(&rx, "PROCESS", Duration::from_secs(60));
    child.kill().unwrap();
    child.wait().unwrap();
    let (me, live) = jevgate::unstable::fleet_processes(gw.leases())
        .unwrap()
        .unwrap();
    assert!(live.contains(&me) && live.contains(&other), "{live:?}");
    jevgate::unstable::advance_store_clock_ms(gw.leases(), 10_000);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, live) = jevgate::unstable::fleet_processes(gw.leases())
            .unwrap()
            .unwrap();
        if !live.contains(&other) && live.contains(&me) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the killed process is dead and this one alive: {live:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    gw.close();
    let rows = psql(
        &db.url,
        &format!("SELECT count(*) FROM jevgate_processes WHERE process_id = '{me}'"),
    );
    assert_eq!(rows, "0", "a clean close removes its liveness row");
}

// Item 1: a store that cannot be reached is STORE_UNAVAILABLE (503, retryable) and the error
// never carries the URL or its password.
#[test]
fn an_unreachable_store_is_store_unavailable_without_the_url() {
    if !cfg!(feature = "postgres") {
        support::pg::skip_note("built without the cargo feature `postgres`");
        return;
    }
    // A loopback port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("url");
    let url = format!("postgresql://jevgate:hunter2-secret@127.0.0.1:{port}/fleetdb");
    std::fs::write(&file, &url).unwrap();
    let data = tempfile::tempdir().unwrap();
    let err = Gateway::open(GatewayOptions::new(data.path(), pg_config(&file))).unwrap_err();
    assert_eq!(err.code(), "STORE_UNAVAILABLE");
    assert_eq!(err.http_status(), 503);
    assert!(err.retryable());
    let text = format!("{err} {err:?}");
    for secret in ["hunter2", "fleetdb", &port.to_string()] {
        assert!(!text.contains(secret), "the error leaks {secret}: {text}");
    }
}

// Item 1: a lost connection is STORE_UNAVAILABLE for the call that meets it, and the store
// reconnects by itself afterwards.
#[test]
fn a_lost_connection_reconnects() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    let first = gw.leases().acquire("dev", "s").unwrap();
    let db_name = db.url.rsplit('/').next().unwrap().to_string();
    psql(
        &url,
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = '{db_name}' AND application_name = 'jevgate'"
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match gw.leases().acquire("dev", "s") {
            Ok(g) => {
                assert_eq!(g.fencing_token, first.fencing_token, "the same tenure");
                break;
            }
            Err(e) => {
                assert_eq!(e.code(), "STORE_UNAVAILABLE", "{e}");
                assert!(Instant::now() < deadline, "reconnected");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

// R-LEASE-7 across processes: the owner recorded by one process is the owner for all.
#[test]
fn the_owner_recorded_by_one_process_holds_for_every_process() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open_gateway(&db.url_file);
    let (b, _db) = open_gateway(&db.url_file);
    a.leases().set_device_owner("dev", "person").unwrap();
    b.leases().acquire("dev", "s").unwrap();
    assert_eq!(
        b.leases()
            .take_back("dev", &ControlCaller::owner("mallory"))
            .unwrap_err()
            .code(),
        "ACCESS_DENIED"
    );
    assert!(b.leases().take_back("dev", &person()).unwrap());
    let status = a.leases().status("dev", &person()).unwrap();
    assert!(status.held && status.revoked, "{status:?}");
}

#[test]
fn with_db_replaces_only_the_database() {
    assert_eq!(
        with_db("postgresql://u@127.0.0.1:5/postgres", "x"),
        "postgresql://u@127.0.0.1:5/x"
    );
    assert_eq!(
        with_db("postgresql://u@h:5/postgres?sslmode=disable", "x"),
        "postgresql://u@h:5/x?sslmode=disable"
    );
}

// Item 1: `sslmode=require` is never downgraded: against a cluster without TLS the open fails
// (STORE_UNAVAILABLE), it does not connect in the clear.
#[test]
fn sslmode_require_never_falls_back_to_plain_text() {
    let Some(url) = pg_url() else { return };
    let sep = if url.contains('?') { '&' } else { '?' };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("url");
    std::fs::write(&file, format!("{url}{sep}sslmode=require")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let err = Gateway::open(GatewayOptions::new(data.path(), pg_config(&file))).unwrap_err();
    assert_eq!(err.code(), "STORE_UNAVAILABLE", "{err}");
}

// Item 1: a URL the client cannot parse is a configuration error that does not repeat it; an
// unset variable or a missing file is the credential error of every other key reference.
#[test]
fn a_malformed_or_missing_url_is_refused_without_echoing_it() {
    if !cfg!(feature = "postgres") {
        support::pg::skip_note("built without the cargo feature `postgres`");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("url");
    std::fs::write(&file, "postgresql://u:hunter2@h:notaport/db").unwrap();
    let data = tempfile::tempdir().unwrap();
    let err = Gateway::open(GatewayOptions::new(data.path(), pg_config(&file))).unwrap_err();
    assert_eq!(err.code(), "JEV_INVALID_CONFIGURATION");
    assert_eq!(err.path(), Some("gateway.store"));
    assert!(!format!("{err} {err:?}").contains("hunter2"));
    let missing = dir.path().join("absent");
    let err = Gateway::open(GatewayOptions::new(data.path(), pg_config(&missing))).unwrap_err();
    assert_eq!(err.code(), "JEV_MISSING_CREDENTIALS");
    let config = Config::from_json_str(
        r#"{"gateway":{"store":{"kind":"postgres","urlEnv":"JEVGATE_TEST_UNSET_PG_URL"}}}"#,
    )
    .unwrap();
    let err = Gateway::open(GatewayOptions::new(data.path(), config)).unwrap_err();
    assert_eq!(err.code(), "JEV_MISSING_CREDENTIALS");
    assert!(
        err.to_string()
            .contains("JEVGATE_TEST_UNSET_PG_URL is not set"),
        "{err}"
    );
}

// R-LEASE-3 on the shared store, raced: a command's acquire in one gateway against a take-back
// in another. Whenever the take-back dispossessed someone, it can only be the command's tenure,
// whose hook must then run (within 1 s); when it found the device free, the hook never runs.
#[test]
fn a_take_back_racing_a_command_either_finds_it_and_cancels_it_or_comes_first() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open_gateway(&db.url_file);
    let (b, _db) = open_gateway(&db.url_file);
    let mut cancelled_runs = 0;
    for i in 0..30 {
        let device = format!("race-{i}");
        b.leases().set_device_owner(&device, "person").unwrap();
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let barrier = Arc::new(Barrier::new(2));
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let command = {
            let (a, ran, barrier, device) = (
                a.clone(),
                Arc::clone(&ran),
                Arc::clone(&barrier),
                device.clone(),
            );
            std::thread::spawn(move || {
                barrier.wait();
                let result = a.leases().acquire_command(&device, "session", move || {
                    ran.store(true, Ordering::SeqCst)
                });
                // The command stays registered until the checks below are done.
                let _ = done_rx.recv();
                result.map(|(grant, _guard)| grant.fencing_token)
            })
        };
        barrier.wait();
        let took = b.leases().take_back(&device, &person()).unwrap();
        if took {
            let deadline = Instant::now() + Duration::from_secs(1);
            while !ran.load(Ordering::SeqCst) {
                assert!(
                    Instant::now() < deadline,
                    "{device}: the command was not cancelled"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            cancelled_runs += 1;
        }
        done_tx.send(()).unwrap();
        let result = command.join().unwrap();
        if took {
            assert!(
                result.is_ok(),
                "{device}: only the command's tenure could be taken back"
            );
        } else {
            assert!(
                !ran.load(Ordering::SeqCst),
                "{device}: nothing to cancel, nothing cancelled"
            );
        }
    }
    eprintln!("{cancelled_runs} of 30 take-backs found the command");
}

// Item 1 / Also: the doctor checks the shared store — its URL reference, reachability, the
// schema version and the database clock against the host's — and never prints the URL.
#[test]
fn the_doctor_checks_the_shared_store_without_printing_the_url() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (gw, _dir) = open_gateway(&db.url_file);
    let report = gw.doctor().unwrap();
    let json = report.to_json();
    let by_name = |name: &str| report.checks.iter().find(|c| c.name == name).cloned();
    let shared = by_name("store.shared").expect("a store.shared check");
    assert_eq!(shared.status, jevgate::config::CheckStatus::Ok, "{json}");
    assert!(shared.detail.contains("schema version"), "{json}");
    assert!(by_name("store.url").is_some(), "{json}");
    let db_name = db.url.rsplit('/').next().unwrap();
    assert!(
        !json.contains(db_name) && !json.contains("postgresql://"),
        "{json}"
    );
    // A database clock far from the host's is a warning.
    jevgate::unstable::advance_store_clock_ms(gw.leases(), 5_000);
    let report = gw.doctor().unwrap();
    let shared = report
        .checks
        .iter()
        .find(|c| c.name == "store.shared")
        .unwrap();
    assert_eq!(shared.status, jevgate::config::CheckStatus::Warn);
    assert!(shared.detail.contains("ahead of"), "{}", shared.detail);
}

/// A cluster of the test's own (`scripts/pg-cluster` in a temporary directory), stopped and
/// removed when dropped — also when the test fails.
struct OwnCluster {
    dir: tempfile::TempDir,
    url: String,
}

fn pg_cluster(cmd: &str, dir: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster");
    let out = Command::new(script)
        .arg(cmd)
        .arg(dir)
        .stderr(Stdio::inherit())
        .output()
        .expect("scripts/pg-cluster runs");
    assert!(out.status.success(), "scripts/pg-cluster {cmd} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let dir = tempfile::tempdir().unwrap();
        let url = pg_cluster("start", &dir.path().join("pg"));
        OwnCluster { dir, url }
    }
    fn pause(&self) {
        pg_cluster("pause", &self.dir.path().join("pg"));
    }
    fn resume(&self) {
        pg_cluster("resume", &self.dir.path().join("pg"));
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster");
        let _ = Command::new(script)
            .arg("stop")
            .arg(self.dir.path().join("pg"))
            .status();
    }
}

fn unix_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(d.as_millis()).unwrap()
}

// Issue 23 Tests, partition-like faults (R-ERR `STORE_UNAVAILABLE`, R-LEASE-8): PostgreSQL is
// stopped for 3 s while 3 processes × 8 threads hold, renew, take back and release leases on 4
// devices. Every call meeting the outage is `STORE_UNAVAILABLE` (503, retryable) and comes back
// well within the connect timeout; nothing panics; once the database is back every process
// reconnects by itself and is granted again; and the checker over every grant (fencing token,
// database time) proves no device ever had two holders, across the outage too. The test runs
// its own cluster (it stops it), never the suite's.
#[test]
fn a_store_outage_is_store_unavailable_and_never_gives_a_device_two_holders() {
    if pg_url().is_none() {
        return;
    }
    let cluster = OwnCluster::start();
    let db = fresh_db(&cluster.url);
    let (gw, _dir) = open_gateway(&db.url_file);
    for d in DEVICES {
        gw.leases().set_device_owner(d, "person").unwrap();
    }
    let extra = [
        ("JEVGATE_FLEET_SECS", "9".to_string()),
        ("JEVGATE_FLEET_OUTAGE", "1".to_string()),
    ];
    let mut children: Vec<Child> = (0..3)
        .map(|_| spawn_child("contention", &db.url_file, &extra))
        .collect();
    let receivers: Vec<_> = children.iter_mut().map(lines_of).collect();
    for rx in &receivers {
        expect_line(rx, "STARTED", Duration::from_secs(60));
    }
    std::thread::sleep(Duration::from_millis(1500));
    cluster.pause();
    let down_from = unix_ms();
    // This process too: a call is refused at once, and retryable.
    let started = Instant::now();
    let err = gw.leases().acquire("dev-0", "parent").unwrap_err();
    assert_eq!(err.code(), "STORE_UNAVAILABLE", "{err}");
    assert!(err.retryable() && err.http_status() == 503);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused in {:?}",
        started.elapsed()
    );
    assert!(!format!("{err} {err:?}").contains(&db.url));
    // A call needing a persistent profile cannot renew its profile lease: it does not run.
    assert_eq!(refused(&gw, "t-outage").code(), "STORE_UNAVAILABLE");
    assert_eq!(
        gw.leases().session_count(),
        0,
        "no session was left in the profile"
    );
    std::thread::sleep(Duration::from_millis(3000).saturating_sub(started.elapsed()));
    let down_until = unix_ms();
    cluster.resume();
    let up_at = unix_ms();
    let run = collect_run(&receivers);
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a child failed (or panicked)");
    }
    eprintln!("outage totals: {:?}; per child (unavailable, slowest ms, last grant ms): {:?}; down {down_from}..{down_until}, up {up_at}", run.totals, run.children);
    for &(unavailable, slowest_ms, last_grant) in &run.children {
        assert!(unavailable >= 1, "every child met the outage");
        // Bounded by the connect timeout (5 s) at worst; a refused connection is immediate.
        assert!(
            slowest_ms < 5_500,
            "a call met the outage for {slowest_ms} ms"
        );
        assert!(
            last_grant >= up_at,
            "the child was granted again after the database came back"
        );
    }
    for (device, list) in &run.grants {
        for g in list {
            assert!(
                g.at_ms < down_from || g.at_ms > down_until,
                "{device}: a grant at {} while the database was down",
                g.at_ms
            );
        }
    }
    let tenures = check_no_two_holders(&run.grants);
    assert!(tenures >= 4, "devices changed hands ({tenures} tenures)");
    // And this process reconnected too.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match gw.leases().status("dev-0", &person()) {
            Ok(_) => break,
            Err(e) => {
                assert_eq!(e.code(), "STORE_UNAVAILABLE", "{e}");
                assert!(Instant::now() < deadline, "reconnected");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    gw.close();
}

/// The error of a browser call that must be refused.
fn refused(gw: &Gateway, thread: &str) -> jevgate::Error {
    match gw
        .leases()
        .begin_browser_call(&profile_call(thread, SessionMode::Authenticated))
    {
        Ok(_) => panic!("{thread}: the call was not refused"),
        Err(e) => e,
    }
}

fn profile_call(thread: &str, mode: SessionMode) -> BrowserCall {
    BrowserCall {
        thread_id: thread.into(),
        organization: "acme".into(),
        mode: Some(mode),
        profile_key: Some("work-profile".into()),
        authenticated_allowed: true,
    }
}

// Issue 23 item 2, R-PROF-2 across processes: a persistent profile one process's session
// holds is BROWSER_CONTEXT_BUSY for every other process (isolated mode stays available) until
// the holder lets it go; a process killed while holding it frees nothing — the lease lasts
// until it ends on the database clock (30 s past the last renewal), then another process gets
// the profile.
#[test]
fn a_profile_held_by_one_process_is_busy_for_another_until_released_or_expired() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open_gateway(&db.url_file);
    let (b, _db) = open_gateway(&db.url_file);
    let held = a
        .leases()
        .begin_browser_call(&profile_call("t-a", SessionMode::Authenticated))
        .unwrap();
    assert!(held.profile.is_some());
    let busy = refused(&b, "t-b");
    assert_eq!(busy.code(), "BROWSER_CONTEXT_BUSY", "{busy}");
    assert_eq!(
        b.leases().session_count(),
        0,
        "the refused session is not kept"
    );
    let isolated = b
        .leases()
        .begin_browser_call(&profile_call("t-b", SessionMode::Isolated))
        .unwrap();
    assert!(isolated.profile.is_none());
    drop(isolated);
    b.leases().end_thread("t-b");
    // A call in the holder's own session renews it, and still refuses the other process.
    drop(held);
    let again = a
        .leases()
        .begin_browser_call(&profile_call("t-a", SessionMode::Authenticated))
        .unwrap();
    drop(again);
    assert_eq!(refused(&b, "t-b").code(), "BROWSER_CONTEXT_BUSY");
    // The holder's session ends: the profile is free for the fleet.
    a.leases().end_thread("t-a");
    let taken = b
        .leases()
        .begin_browser_call(&profile_call("t-b", SessionMode::Authenticated))
        .unwrap();
    assert!(taken.profile.is_some());
    assert_eq!(refused(&a, "t-a").code(), "BROWSER_CONTEXT_BUSY");
    drop(taken);
    b.leases().end_thread("t-b");
    // A process killed while holding the profile frees nothing early.
    let mut child = spawn_child("profile", &db.url_file, &[]);
    let rx = lines_of(&mut child);
    expect_line(&rx, "PROFILE", Duration::from_secs(60));
    child.kill().unwrap();
    child.wait().unwrap();
    for gw in [&a, &b] {
        assert_eq!(refused(gw, "t-x").code(), "BROWSER_CONTEXT_BUSY");
    }
    let rows = psql(
        &db.url,
        "SELECT count(*) FROM jevgate_profile_leases WHERE expires_at > 0",
    );
    assert_eq!(rows, "1", "one row, keyed by the fleet hash");
    assert!(!psql(&db.url, "SELECT profile_key FROM jevgate_profile_leases").contains("work"));
    // Past its end on the database clock, the profile is another process's to take.
    jevgate::unstable::advance_store_clock_ms(b.leases(), 31_000);
    let after = b
        .leases()
        .begin_browser_call(&profile_call("t-b", SessionMode::Authenticated))
        .unwrap();
    assert!(after.profile.is_some());
}

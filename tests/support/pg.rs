//! The throw-away PostgreSQL cluster of the shared-store tests (issue 23): its URL
//! (`JEVGATE_PG_URL`; a skip with the reason printed without it or without the cargo feature
//! `postgres`, a failure under `JEVGATE_REQUIRE_PG=1`), a fresh database per test with its URL in
//! a 0600 file (`urlFile`), `psql` for checks made from outside jevgate, gateways on it, and
//! the lines a child process of the fleet tests prints.

use jevgate::{Config, Gateway, GatewayOptions};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How far a test moves a gateway's view of the database clock to find a killed process dead:
/// the liveness threshold (10 s) plus a margin.
pub const PAST_DEAD_MS: i64 = 11_000;

/// Prints why a test is skipped where `cargo test` shows it: straight to the process's stderr
/// (libtest captures what `eprintln!` prints for a passing test, which would hide the skip).
pub fn skip_note(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// The cluster's URL, or `None` with the reason printed (a failure under `JEVGATE_REQUIRE_PG=1`).
pub fn pg_url() -> Option<String> {
    let require = std::env::var("JEVGATE_REQUIRE_PG").is_ok_and(|v| v == "1");
    let skip = |why: &str| {
        assert!(!require, "JEVGATE_REQUIRE_PG=1 but {why}");
        skip_note(&format!(
            "{why} (scripts/test runs this suite against a throw-away cluster)"
        ));
    };
    if !cfg!(feature = "postgres") {
        skip("this test binary was built without the cargo feature `postgres`");
        return None;
    }
    match std::env::var("JEVGATE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            skip("JEVGATE_PG_URL is not set");
            None
        }
    }
}

pub fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([
            url,
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `url` with its database replaced by `db`.
pub fn with_db(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let authority_end = base
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| base[start..].find('/').map(|j| start + j))
        .unwrap_or(base.len());
    format!("{}/{db}{query}", &base[..authority_end])
}

/// A fresh database on the cluster and a 0600 file holding its URL (`urlFile`).
pub struct Db {
    pub url: String,
    pub name: String,
    _dir: tempfile::TempDir,
    pub url_file: PathBuf,
}

pub fn fresh_db(url: &str) -> Db {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let name = format!(
        "jg_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        nanos
    );
    psql(url, &format!("CREATE DATABASE {name}"));
    let db_url = with_db(url, &name);
    let dir = tempfile::tempdir().unwrap();
    let url_file = dir.path().join("pg-url");
    std::fs::write(&url_file, format!("{db_url}\n")).unwrap();
    Db {
        url: db_url,
        name,
        _dir: dir,
        url_file,
    }
}

/// Drops `db` from the cluster at `cluster_url`, ending its connections first (for a suite
/// that makes many); best effort: a failure leaves a database in a throw-away cluster.
pub fn drop_db(cluster_url: &str, db: &Db) {
    let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", db.name);
    let _ = Command::new("psql")
        .args([cluster_url, "-X", "-q", "-c", &sql])
        .output();
}

pub fn pg_config(url_file: &Path) -> Config {
    let json = serde_json::json!({"gateway": {"store": {"kind": "postgres", "urlFile": url_file}}});
    Config::from_json_str(&json.to_string()).unwrap()
}

/// The shared store's configuration with the local Jev provider enabled, as JSON (a suite may
/// add to it before parsing).
pub fn pg_jev_json(url_file: &Path) -> serde_json::Value {
    serde_json::json!({"gateway": {
        "jev": {"enabled": true, "provider": "local"},
        "store": {"kind": "postgres", "urlFile": url_file}
    }})
}

/// A gateway on the shared store, with a private data directory (kept alive with it).
pub fn open_gateway(url_file: &Path) -> (Gateway, tempfile::TempDir) {
    open_with(pg_config(url_file))
}

/// A gateway with `config`, with a private data directory (kept alive with it).
pub fn open_with(config: Config) -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir.path(), config)).unwrap();
    (gw, dir)
}

/// The lines a child prints, on a channel (read on a thread: a stuck child fails, never hangs).
pub fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (at most `within`) for a line containing `marker` and returns what follows it,
/// trimmed (other lines are skipped; the harness's own `test child_role ...` may lead one).
pub fn expect_line(rx: &mpsc::Receiver<String>, marker: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(i) = line.find(marker) {
                    return line[i + marker.len()..].trim().to_string();
                }
            }
            Err(_) => panic!("the child never printed {marker}"),
        }
    }
}

//! Who can read what jevgate leaves on disk (issue 20 items 1 and 4).
//!
//! Item 1: a data directory jevgate creates (`jevgate mcp --data-dir NEW`, the README's own
//! example) is 0700 with missing parents, and every file in it — database, WAL, shared memory,
//! lock, screenshot artifact, the Chromium profile and a finished download — is owner-only, even
//! under `umask 000` (set in the child's shell, never in this process: a umask is process-wide).
//! An existing directory others can reach is reported (a `warn` record at open, a
//! `store.permissions` warning in `doctor`), never chmodded, and never named by its path.
//!
//! Item 4: the private temporary store of a SIGKILLed `jevgate mcp` is removed by the next
//! start; a live owner's directory and names that are not ours are kept.
//!
//! Each test points the child's `TMPDIR` at its own directory, so nothing here reads or sweeps
//! the machine's shared temporary directory.

mod support;

use jevgate::{Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A `jevgate mcp` child speaking JSON-RPC lines on its stdio.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Mcp {
    /// Starts `jevgate mcp ARGS` with `TMPDIR=tmp` (and `umask 000` when asked) and completes
    /// the initialize handshake: once it answers, its store is open.
    fn start(args: &[&str], tmp: &Path, umask_000: bool) -> Mcp {
        let bin = std::env::var_os("JEVGATE_BIN").unwrap_or(env!("CARGO_BIN_EXE_jevgate").into());
        let umask = if umask_000 { "000" } else { "077" };
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(r#"umask {umask}; exec "$0" mcp "$@""#))
            .arg(bin)
            .args(args)
            .env("TMPDIR", tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut mcp = Mcp {
            child,
            stdin,
            lines,
        };
        let init = mcp.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        assert!(init["result"].is_object(), "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    fn ask(&mut self, msg: Value) -> Value {
        self.send(&msg);
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("a response line");
        serde_json::from_str(&line).unwrap()
    }

    /// `tools/call` of `name`: the result.
    fn call(&mut self, id: i64, name: &str, args: Value) -> Value {
        let r = self.ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}}));
        r["result"].clone()
    }

    /// Ends stdin and waits for a clean exit.
    fn finish(mut self) {
        self.stdin.take();
        assert!(self.child.wait().unwrap().success());
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every directory and regular file under `root` with its mode, read in passing (Chromium
/// removes some of its files meanwhile); symlinks and sockets are not followed.
fn walk(root: &Path, out: &mut Vec<(PathBuf, bool, u32)>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue; // removed meanwhile (Chromium's own temporary files)
        };
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() {
            out.push((path.clone(), true, mode));
            walk(&path, out);
        } else if meta.is_file() {
            out.push((path, false, mode));
        }
    }
}

fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// Issue 20 item 1: `jevgate mcp --data-dir NEW` under umask 000 creates NEW and its missing
// parents 0700, the store's files 0600 (the WAL and shared memory taking the database's mode),
// a screenshot artifact 0600, and Chromium's profile and download owner-only.
#[test]
fn issue20_a_new_data_dir_and_everything_in_it_are_private_under_umask_000() {
    let server = support::Server::start();
    let tmp = tempfile::tempdir().unwrap();
    let temp = tmp.path().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    let data = tmp.path().join("new").join("data");
    let mut mcp = Mcp::start(&["--data-dir", data.to_str().unwrap()], &temp, true);
    let nav = mcp.call(
        1,
        "browser_navigate",
        json!({"url": server.url("/p/download")}),
    );
    assert_eq!(nav["isError"], false, "{nav}");
    let shot = mcp.call(2, "browser_take_screenshot", json!({}));
    let rest: Value = serde_json::from_str(shot["content"][1]["text"].as_str().unwrap()).unwrap();
    let artifact = rest["artifactId"]
        .as_str()
        .expect("an artifact")
        .to_string();
    // A navigation to an attachment downloads it into the profile.
    mcp.call(
        3,
        "browser_navigate",
        json!({"url": server.url("/download?name=report.txt")}),
    );
    // Named by Chromium's download id in the profile's `jevgate-downloads`.
    let downloaded = |p: &Path| {
        p.parent().is_some_and(|d| d.ends_with("jevgate-downloads"))
            && std::fs::read(p).is_ok_and(|b| b == support::pages::DOWNLOAD_BODY.as_bytes())
    };
    let mut found = Vec::new();
    eventually("the download", || {
        found.clear();
        walk(&data, &mut found);
        found.iter().any(|(p, _, _)| downloaded(p))
    });
    let download = found
        .iter()
        .find(|(p, _, _)| downloaded(p))
        .unwrap()
        .clone();
    // While the gateway is open: the WAL and shared memory exist.
    walk(&temp, &mut found);
    let has = |name: &str| found.iter().any(|(p, _, _)| p.ends_with(name));
    for dir in [tmp.path().join("new"), data.clone()] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    for name in [
        "jevgate.sqlite3",
        "jevgate.sqlite3-wal",
        "jevgate.sqlite3-shm",
        "jevgate.lock",
        &artifact,
    ] {
        assert!(has(name), "{name} not found");
        let (_, _, mode) = found.iter().find(|(p, _, _)| p.ends_with(name)).unwrap();
        assert_eq!(*mode, 0o600, "{name}");
    }
    assert_eq!(download.2, 0o600, "the download");
    assert!(
        found.len() > 20,
        "a profile was written: {} entries",
        found.len()
    );
    for (path, is_dir, mode) in &found {
        if *is_dir {
            assert_eq!(*mode, 0o700, "{}", path.display());
        } else {
            assert_eq!(mode & 0o077, 0, "{}", path.display());
        }
    }
    mcp.finish();
}

/// The `log` records of this process (a test binary of its own: the logger is global).
struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

// Issue 20 item 1: an existing directory group or others can reach, and a store file they can
// read, are reported by `open` (a warn record) and by `doctor` (a warning, the report still ok),
// never chmodded, never named by path; a directory jevgate created reports nothing.
#[test]
fn issue20_an_open_existing_directory_is_reported_and_left_as_the_host_made_it() {
    let _ = log::set_logger(&CAPTURE);
    log::set_max_level(log::LevelFilter::Trace);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("host-chose-this");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = dir.join("jevgate.sqlite3");
    std::fs::write(&db, b"").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();

    let gw = Gateway::open(GatewayOptions::new(&dir, Default::default())).unwrap();
    let report = gw.doctor().unwrap();
    gw.close();
    assert!(report.ok, "a warning does not fail the report: {report:?}");
    let check = report
        .checks
        .iter()
        .find(|c| c.name == "store.permissions")
        .expect("a store.permissions check");
    assert_eq!(
        check.status,
        jevgate::config::CheckStatus::Warn,
        "{check:?}"
    );
    assert!(check.detail.contains("data directory") && check.detail.contains("755"));
    assert!(check.detail.contains("jevgate.sqlite3") && check.detail.contains("644"));
    assert!(
        !check.detail.contains("host-chose-this"),
        "{}",
        check.detail
    );
    assert_eq!(mode(&dir), 0o755, "never chmodded");
    assert_eq!(mode(&db), 0o644, "never chmodded");
    let warned: Vec<String> = CAPTURE
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, m)| *level == log::Level::Warn && m.contains("data directory"))
        .map(|(_, m)| m.clone())
        .collect();
    assert!(!warned.is_empty(), "open logs the open directory");
    assert!(warned.iter().all(|m| !m.contains("host-chose-this")));

    // A directory jevgate creates: private, nothing to report.
    let fresh = tmp.path().join("fresh");
    let gw = Gateway::open(GatewayOptions::new(&fresh, Default::default())).unwrap();
    let report = gw.doctor().unwrap();
    gw.close();
    let check = report
        .checks
        .iter()
        .find(|c| c.name == "store.permissions")
        .unwrap();
    assert_eq!(check.status, jevgate::config::CheckStatus::Ok, "{check:?}");
}

/// The start time of `pid` (field 22 of `/proc/<pid>/stat`).
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn mcp_dirs(temp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(temp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("jevgate-mcp-"))
        .collect();
    names.sort();
    names
}

// Issue 20 item 4: a SIGKILLed `jevgate mcp` leaves its private store behind; the next start
// removes it (its owner, by pid and start time, is gone), keeps a live process's directory and
// names that are not ours, and removes its own at a clean exit.
#[test]
fn issue20_a_killed_mcp_private_store_is_swept_at_the_next_start() {
    let tmp = tempfile::tempdir().unwrap();
    let temp = tmp.path();
    let mut killed = Mcp::start(&[], temp, false);
    let left = mcp_dirs(temp);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(temp.join(&left[0]).join("jevgate.sqlite3").exists());
    killed.child.kill().unwrap(); // SIGKILL: no cleanup runs
    killed.child.wait().unwrap();
    assert!(temp.join(&left[0]).exists(), "SIGKILL left its store");

    let me = std::process::id();
    let live = format!("jevgate-mcp-p{me}-t{}-00ff", start_time(me));
    let not_ours = [
        "jevgate-mcp-0123abcd".to_string(),
        format!("jevgate-mcp-p{me}-x"),
        "jevgate-task-p1-t1-00ff".to_string(),
    ];
    for name in std::iter::once(&live).chain(&not_ours) {
        std::fs::create_dir(temp.join(name)).unwrap();
    }

    let next = Mcp::start(&[], temp, false);
    let now = mcp_dirs(temp);
    assert!(
        !now.contains(&left[0]),
        "the killed server's store is swept"
    );
    assert!(now.contains(&live), "a live owner's directory is kept");
    for name in &not_ours {
        assert!(temp.join(name).exists(), "{name} is kept");
    }
    next.finish();
    let mut expected: Vec<String> = vec![live];
    expected.extend(
        not_ours
            .iter()
            .filter(|n| n.starts_with("jevgate-mcp-"))
            .cloned(),
    );
    expected.sort();
    assert_eq!(mcp_dirs(temp), expected, "a clean exit removes its own");
}

//! `jevgate mcp` spoken to in raw JSON-RPC lines (issue 15 items 3 and 4): malformed input of
//! every kind gets its JSON-RPC error and the server keeps serving; a 50 MB line is refused
//! without being held in memory; notifications get no answer; batches are answered per
//! JSON-RPC 2.0; stdout carries nothing but JSON-RPC messages; a SIGKILLed or SIGTERMed server
//! leaves no Chromium behind.

mod support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;
use support::Server;

struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl Mcp {
    fn start(args: &[&str]) -> Mcp {
        // JEVGATE_BIN: a copy of the binary, when a shared target directory may be rebuilt
        // under the test by another checkout.
        let bin = std::env::var_os("JEVGATE_BIN").unwrap_or(env!("CARGO_BIN_EXE_jevgate").into());
        let mut child = Command::new(bin)
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
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
        let (etx, stderr) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                let _ = etx.send(line);
            }
        });
        let stdin = child.stdin.take();
        let mut mcp = Mcp {
            child,
            stdin,
            lines,
            stderr,
        };
        let init = mcp.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        mcp.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        mcp
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next stdout line, which must be one JSON-RPC message (or a batch of them).
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("a response line");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("not JSON on stdout: {line:.200}"));
        let all = match &v {
            Value::Array(a) => a.clone(),
            one => vec![one.clone()],
        };
        for m in all {
            assert_eq!(m["jsonrpc"], "2.0", "not a JSON-RPC message: {line:.200}");
            assert!(
                m.get("result").is_some() != m.get("error").is_some(),
                "{line:.200}"
            );
        }
        v
    }

    fn ask(&mut self, msg: Value) -> Value {
        self.send_raw(msg.to_string().as_bytes());
        self.next()
    }

    /// A ping answers: the server still serves, and nothing else was queued before it.
    fn still_serving(&mut self, id: i64) {
        let pong = self.ask(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        assert_eq!(pong, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    }

    /// Waits for a stderr line containing `needle` and returns it.
    fn stderr_line(&self, needle: &str) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no stderr line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    fn close_stdin(&mut self) {
        self.stdin.take();
    }
}

fn code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {v}"))
}

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

// R-DEV-TOOLS, issue 15 item 3: every kind of malformed input gets its JSON-RPC error, and the
// server answers the next request after each.
#[test]
fn malformed_json_rpc_gets_errors_and_the_server_keeps_serving() {
    let mut mcp = Mcp::start(&[]);
    mcp.send_raw(b"{not json");
    let e = mcp.next();
    assert_eq!((code(&e), &e["id"]), (-32700, &Value::Null), "{e}");
    mcp.still_serving(1);
    mcp.send_raw(&[0xff, 0xfe, b'{', b'}']);
    assert_eq!(code(&mcp.next()), -32700);
    mcp.still_serving(2);
    let e = mcp.ask(json!({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}));
    assert_eq!((code(&e), &e["id"]), (-32601, &json!(3)), "{e}");
    mcp.still_serving(4);
    for (id, bad) in [
        (
            5,
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": 7}}),
        ),
        (
            6,
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "no_such_tool"}}),
        ),
        (
            7,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "task_status", "arguments": [1]}}),
        ),
        (
            8,
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"cursor": 5}}),
        ),
        (
            9,
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": [1, 2]}),
        ),
    ] {
        let e = mcp.ask(bad);
        assert_eq!((code(&e), &e["id"]), (-32602, &json!(id)), "{e}");
        mcp.still_serving(100 + id);
    }
    for bad in [
        json!({"jsonrpc": "1.0", "id": 10, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 11, "method": 5}),
        json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 12, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        json!(42),
        json!([]),
    ] {
        assert_eq!(code(&mcp.ask(bad.clone())), -32600, "{bad}");
        mcp.still_serving(13);
    }
    // A tool's own failure is a result with isError, not a protocol error.
    let r = mcp.ask(json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "task_status", "arguments": {"taskId": "nope"}}}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
}

// Issue 15 item 3: a notification (no id) is never answered; a batch gets one array with a
// response per request, none for its notifications, and nothing at all when it holds only
// notifications.
#[test]
fn notifications_get_no_answer_and_batches_are_answered_per_json_rpc() {
    let mut mcp = Mcp::start(&[]);
    mcp.send_raw(br#"{"jsonrpc":"2.0","method":"ping"}"#);
    mcp.send_raw(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}"#,
    );
    mcp.send_raw(br#"{"jsonrpc":"2.0","method":"no/such/notification"}"#);
    mcp.still_serving(1); // the first line after the notifications is the ping's answer
    let batch = mcp.ask(json!([
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
        7,
    ]));
    let items = batch.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 4, "{batch}");
    let by_id = |id: Value| items.iter().find(|m| m["id"] == id).cloned().unwrap();
    assert_eq!(by_id(json!(2))["result"], json!({}));
    assert_eq!(code(&by_id(json!(3))), -32601);
    assert!(by_id(json!(4))["result"]["tools"].as_array().unwrap().len() >= 8);
    assert!(items.iter().any(|m| m["id"].is_null() && code(m) == -32600));
    mcp.send_raw(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#);
    mcp.still_serving(5);
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
}

// Issue 15 item 3: a 50 MB line is refused with -32600 without being kept in memory (the
// server's peak resident size stays far below the line), and the server keeps serving.
#[test]
fn a_50_mb_line_is_refused_without_buffering_it_and_the_server_keeps_serving() {
    let mut mcp = Mcp::start(&[]);
    let pid = mcp.child.id();
    let before = peak_rss_kib(pid);
    let chunk = vec![b'a'; 1 << 20];
    {
        let stdin = mcp.stdin.as_mut().unwrap();
        stdin
            .write_all(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#)
            .unwrap();
        for _ in 0..50 {
            stdin.write_all(&chunk).unwrap();
        }
        stdin.write_all(b"\"}}\n").unwrap();
    }
    let e = mcp.next();
    assert_eq!(code(&e), -32600, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{e}"
    );
    mcp.still_serving(2);
    let grew_mib = peak_rss_kib(pid).saturating_sub(before) / 1024;
    assert!(
        grew_mib < 20,
        "the server's peak memory grew {grew_mib} MiB for a 50 MB line"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
}

/// The pid of the local Chromium the server logged it started.
fn chromium_pid(mcp: &mut Mcp, server: &Server) -> i32 {
    let r = mcp.ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "browser_navigate", "arguments": {"url": server.url("/p/taskhome")}}}),
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
    let line = mcp.stderr_line("started a local Chromium");
    line.split("(pid ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line:?}"))
}

/// Processes still in the Chromium's process group (its renderers and helpers included).
fn group_members(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the `(comm)`: state ppid pgrp …
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(2).and_then(|g| g.parse().ok()) == Some(pgid)
        {
            found.push(pid);
        }
    }
    found
}

fn gone_within(pgid: i32, limit: Duration) -> bool {
    let step = Duration::from_millis(50);
    let mut waited = Duration::ZERO;
    while waited < limit {
        if group_members(pgid).is_empty() {
            return true;
        }
        // Waiting on another process's exit: there is no event to wait for but /proc.
        std::thread::sleep(step);
        waited += step;
    }
    group_members(pgid).is_empty()
}

// Issue 15 item 4: a SIGKILLed server leaves no Chromium behind (the pipe closes, the watchdog
// ends the browser's process group).
#[test]
fn sigkill_of_the_server_leaves_no_chromium() {
    let server = Server::start();
    let mut mcp = Mcp::start(&[]);
    let pgid = chromium_pid(&mut mcp, &server);
    assert!(!group_members(pgid).is_empty(), "the Chromium runs");
    mcp.child.kill().unwrap(); // SIGKILL
    mcp.child.wait().unwrap();
    assert!(
        gone_within(pgid, Duration::from_secs(5)),
        "left behind: {:?}",
        group_members(pgid)
    );
}

// Issue 15 item 4: SIGTERM shuts the server down cleanly (exit 0) and closes its Chromium;
// so does the end of stdin.
#[test]
fn sigterm_and_eof_close_every_chromium_the_server_started() {
    let server = Server::start();
    let mut mcp = Mcp::start(&[]);
    let pgid = chromium_pid(&mut mcp, &server);
    let pid = mcp.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(mcp.child.wait().unwrap().success());
    assert!(
        group_members(pgid).is_empty(),
        "left behind: {:?}",
        group_members(pgid)
    );

    let mut mcp = Mcp::start(&[]);
    let pgid = chromium_pid(&mut mcp, &server);
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
    assert!(
        group_members(pgid).is_empty(),
        "left behind: {:?}",
        group_members(pgid)
    );
}

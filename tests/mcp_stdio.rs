//! `jevgate mcp` spoken to in raw JSON-RPC lines (issue 15 items 3 and 4): malformed input of
//! every kind gets its JSON-RPC error and the server keeps serving; a 50 MB line is refused
//! without being held in memory; notifications get no answer; batches are answered per
//! JSON-RPC 2.0; stdout carries nothing but JSON-RPC messages; the seed-001 managed family is
//! listed per `--caps` and driven on a real Chromium (a ref from a snapshot clicks for real, a
//! chord, a screenshot as image content, a cancelled `browser_wait_for` ends at once); a
//! SIGKILLed or SIGTERMed server, or one whose stdin ended, leaves no Chromium behind.

mod support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
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

/// `tools/call` of `name` with `args` as request `id`: the call's result.
fn call(mcp: &mut Mcp, id: i64, name: &str, args: Value) -> Value {
    let r = mcp.ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": args}}));
    assert_eq!(r["id"], id, "{r}");
    r["result"].clone()
}

/// The one text part of a successful result, parsed.
fn ok_json(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{result}");
    assert_eq!(content[0]["type"], "text");
    let text = content[0]["text"].as_str().unwrap();
    // Compact JSON, or for a page result one compact JSON line and then the page (plain text
    // in its envelope): the page comes back as `page`.
    let (head, page) = match text.split_once('\n') {
        Some((head, page)) => (head, Some(page)),
        None => (text, None),
    };
    let mut v: Value =
        serde_json::from_str(head).unwrap_or_else(|_| panic!("not JSON: {text:.200}"));
    if let Some(page) = page {
        assert!(page.starts_with("<untrusted-page-content>"), "{text:.200}");
        v["page"] = Value::String(page.to_string());
    }
    v
}

/// The ref of the snapshot line naming `name` (`- button "Press me" [ref=e3]`).
fn ref_of(snapshot: &Value, name: &str) -> String {
    let page = snapshot["page"].as_str().expect("the page in its envelope");
    let line = page
        .lines()
        .find(|l| l.contains(&format!("\"{name}\"")) && l.contains("[ref="))
        .unwrap_or_else(|| panic!("no {name} in {page:.2000}"));
    let at = line.find("[ref=").unwrap() + 5;
    line[at..].split(']').next().unwrap().to_string()
}

fn tool_names(mcp: &mut Mcp, id: i64) -> Vec<String> {
    let r = mcp.ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(t["inputSchema"].is_object(), "{t}");
            t["name"].as_str().unwrap().to_string()
        })
        .collect()
}

// Issue 15 items 1 and 3 (seed 001 "Tools", R-BRW-*): the managed family over stdio on a real
// Chromium. tools/list follows --caps; a ref taken from a snapshot clicks for real (the page's
// beacon counts it server-side, once); browser_type and the Control+A chord reach the field
// (read back from the page); a screenshot is MCP image content plus a text part with the rest;
// a tool failure is `isError` with `CODE: message`; a long browser_wait_for cancelled with
// notifications/cancelled ends at once, sends no response, and the server keeps serving; EOF
// shuts down leaving no Chromium.
#[test]
fn the_managed_family_is_served_on_chromium_and_a_long_wait_is_cancelled() {
    let server = Server::start();
    let mut tabs = Mcp::start(&["--caps", "tabs"]);
    assert!(tool_names(&mut tabs, 1).contains(&"browser_tabs".to_string()));
    tabs.close_stdin();
    assert!(tabs.child.wait().unwrap().success());

    let mut mcp = Mcp::start(&[]);
    let names = tool_names(&mut mcp, 1);
    for n in [
        "browser_snapshot",
        "browser_navigate",
        "browser_navigate_back",
        "browser_click",
        "browser_type",
        "browser_fill_form",
        "browser_press_key",
        "browser_wait_for",
        "browser_handle_dialog",
        "browser_evaluate",
        "browser_take_screenshot",
        "jev_evaluate",
        "task_spawn",
    ] {
        assert!(names.contains(&n.to_string()), "{n} missing: {names:?}");
    }
    assert!(!names.contains(&"browser_tabs".to_string()), "tabs is off");
    assert!(
        !names.contains(&"browser_computer".to_string()),
        "the old device tools are gone"
    );

    let nav = ok_json(&call(
        &mut mcp,
        2,
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    ));
    assert_eq!(nav["sessionMode"], "authenticated", "{nav}");
    let snap = ok_json(&call(&mut mcp, 3, "browser_snapshot", json!({})));
    let press = ref_of(&snap, "Press me");
    ok_json(&call(
        &mut mcp,
        4,
        "browser_click",
        json!({"target": press}),
    ));
    assert_eq!(server.wait_count("go", 1), 1, "one real click");
    assert_eq!(server.count("untrusted:go"), 0);

    ok_json(&call(
        &mut mcp,
        5,
        "browser_navigate",
        json!({"url": server.url("/p/mkeys")}),
    ));
    ok_json(&call(
        &mut mcp,
        6,
        "browser_type",
        json!({"target": "css=#one", "text": "typed"}),
    ));
    ok_json(&call(
        &mut mcp,
        7,
        "browser_press_key",
        json!({"key": "Control+A"}),
    ));
    ok_json(&call(&mut mcp, 8, "browser_press_key", json!({"key": "n"})));
    let value = ok_json(&call(
        &mut mcp,
        9,
        "browser_evaluate",
        json!({"function": "() => one.value"}),
    ));
    assert!(
        value["page"].as_str().unwrap().contains("\"n\""),
        "Control+A selected all: {value}"
    );

    let shot = call(&mut mcp, 10, "browser_take_screenshot", json!({}));
    assert_eq!(shot["isError"], false, "{shot:.300}");
    let parts = shot["content"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{shot:.300}");
    assert_eq!(parts[0]["type"], "image");
    let bytes = data_encoding::BASE64
        .decode(parts[0]["data"].as_str().unwrap().as_bytes())
        .unwrap();
    let magic: &[u8] = match parts[0]["mimeType"].as_str() {
        Some("image/png") => b"\x89PNG",
        Some("image/jpeg") => b"\xff\xd8\xff",
        other => panic!("mimeType {other:?}"),
    };
    assert!(bytes.starts_with(magic), "the bytes are of the mimeType");
    let rest: Value = serde_json::from_str(parts[1]["text"].as_str().unwrap()).unwrap();
    assert!(
        rest["artifactId"].is_string() && rest.get("image").is_none(),
        "{rest}"
    );

    let bad = call(&mut mcp, 11, "browser_click", json!({"target": "e99999"}));
    assert_eq!(bad["isError"], true, "{bad}");
    let text = bad["content"][0]["text"].as_str().unwrap();
    let (code, _) = text.split_once(": ").unwrap_or_else(|| panic!("{text}"));
    assert!(
        !code.is_empty() && code.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
        "{text}"
    );

    // A wait for text that never appears (bounded at 25 s): still running after 300 ms, then
    // cancelled; it ends at once (well under its bound) and is never answered.
    mcp.send_raw(
        json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {
            "name": "browser_wait_for", "arguments": {"text": "Never shown", "time": 25}}})
        .to_string()
        .as_bytes(),
    );
    assert!(
        mcp.lines.recv_timeout(Duration::from_millis(300)).is_err(),
        "the wait answered before it was cancelled"
    );
    mcp.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":50,"reason":"test"}}"#);
    let ended = mcp.stderr_line("cancelled request 50 ended after");
    let ms: u64 = ended
        .split("ended after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{ended}"));
    eprintln!("the cancelled browser_wait_for ended after {ms} ms");
    // Not answered within 300 ms above: it was really waiting. Ignoring the cancellation
    // would end it only at its 25 s bound.
    assert!(ms < 3000, "the cancelled wait ended after {ms} ms");
    mcp.still_serving(51); // the next line is the ping's: no response for the cancelled call
    let after = ok_json(&call(&mut mcp, 52, "browser_snapshot", json!({})));
    assert!(
        after["page"].as_str().unwrap().contains("First field"),
        "{after:.300}"
    );

    let pgid = chromium_groups(mcp.child.id())[0];
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
    assert!(
        group_members(pgid).is_empty(),
        "left behind: {:?}",
        group_members(pgid)
    );
}

// Issue 15 item 3: --isolated serves isolated sessions only (authenticated mode is refused,
// never a silent downgrade); --strict stores no screenshot artifact.
#[test]
fn isolated_sessions_and_strict_data_handling_follow_the_flags() {
    let server = Server::start();
    let mut mcp = Mcp::start(&["--isolated", "--strict"]);
    let nav = ok_json(&call(
        &mut mcp,
        1,
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    ));
    assert_eq!(nav["sessionMode"], "isolated", "{nav}");
    let auth = call(
        &mut mcp,
        2,
        "browser_navigate",
        json!({"url": server.url("/p/buttons"), "sessionMode": "authenticated"}),
    );
    assert_eq!(auth["isError"], true, "{auth}");
    assert!(
        auth["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("BROWSER_AUTHENTICATED_UNAVAILABLE: "),
        "{auth}"
    );
    let shot = call(&mut mcp, 3, "browser_take_screenshot", json!({}));
    assert_eq!(shot["content"][0]["type"], "image", "{shot:.300}");
    let rest: Value = serde_json::from_str(shot["content"][1]["text"].as_str().unwrap()).unwrap();
    assert!(
        rest.get("artifactId").is_none(),
        "strict: no artifact {rest}"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
}

/// The fields of `/proc/<pid>/stat` after the `(comm)`: state ppid pgrp …
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Every pid on the machine.
fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .collect()
}

/// The local Chromiums the server started: its children that lead their own process group
/// (the watchdog shells stay in the server's group).
fn chromium_groups(server_pid: u32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            stat_fields(pid).is_some_and(|f| {
                f.first().map(String::as_str) != Some("Z")
                    && f.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(server_pid)
                    && f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pid)
            })
        })
        .collect()
}

/// Navigates (starting the thread's browser session) and returns its Chromium's pid.
fn chromium_pid(mcp: &mut Mcp, server: &Server) -> i32 {
    let r = mcp.ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "browser_navigate", "arguments": {"url": server.url("/p/taskhome")}}}),
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
    let groups = chromium_groups(mcp.child.id());
    assert_eq!(
        groups.len(),
        1,
        "one Chromium for the one thread: {groups:?}"
    );
    groups[0]
}

/// Processes still in the Chromium's process group (its renderers and helpers included).
fn group_members(pgid: i32) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| {
            stat_fields(pid).is_some_and(|f| {
                f.first().map(String::as_str) != Some("Z")
                    && f.get(2).and_then(|g| g.parse().ok()) == Some(pgid)
            })
        })
        .collect()
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

// Issue 15 item 3: --profile-dir DIR keeps the authenticated profile in DIR (its profiles/, the
// Chromium runs on it) after the server ends; beside --data-dir it is a usage error.
#[test]
fn profile_dir_keeps_the_login_profile_and_excludes_data_dir() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("keep");
    let mut mcp = Mcp::start(&["--profile-dir", keep.to_str().unwrap()]);
    let pgid = chromium_pid(&mut mcp, &server);
    let cmdline = std::fs::read(format!("/proc/{pgid}/cmdline")).unwrap();
    let profiles = keep.join("profiles");
    let needle = format!("--user-data-dir={}/", profiles.display());
    assert!(
        cmdline
            .split(|b| *b == 0)
            .any(|arg| arg.starts_with(needle.as_bytes())),
        "Chromium runs on a profile in DIR/profiles"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
    assert_eq!(
        std::fs::read_dir(&profiles).unwrap().count(),
        1,
        "the profile is kept"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["mcp", "--profile-dir", "a", "--data-dir", "b"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--profile-dir and --data-dir exclude each other"));
}

// Issue 15 item 3 (`--device`): the managed family runs on a paired device over the channel
// the server serves — the worker connects to the URL printed on stderr, and a click through
// MCP is a real click in the device's browser. A stranger's device id is refused.
#[test]
fn a_paired_device_serves_the_managed_family_over_the_channel() {
    use jevgate::browser::{BrowserTools, LocalBrowser};
    use jevgate::device::{DeviceWorker, WorkerOptions};
    use jevgate::{Config, Gateway, GatewayOptions};
    use std::sync::Arc;
    let server = Server::start();
    let data = tempfile::tempdir().unwrap();
    let (device, token) = {
        let gw = Gateway::open(GatewayOptions::new(data.path(), Config::default())).unwrap();
        let p = support::gateway::pair(&gw, "alice", "alice-laptop");
        gw.close();
        (p.device, p.token)
    };
    let dir = data.path().to_str().unwrap().to_string();
    let mut mcp = Mcp::start(&[
        "--data-dir",
        &dir,
        "--principal",
        "alice",
        "--device",
        &device,
    ]);
    let line = mcp.stderr_line("device channel listening on ");
    let url = line.rsplit(' ').next().unwrap().to_string();
    let browser = LocalBrowser::launch(Default::default()).unwrap();
    let worker = DeviceWorker::connect(
        WorkerOptions::new(url, token),
        Arc::new(BrowserTools::new(Arc::new(browser.clone()))),
    )
    .unwrap();
    // The worker's connection lands on the server's own thread: a first call may still find
    // the device offline (nothing sent); bounded retries.
    let page = server.url("/p/buttons");
    let mut id = 100;
    let navigated = loop {
        id += 1;
        let r = call(&mut mcp, id, "browser_navigate", json!({"url": page}));
        if r["isError"] != true {
            break r;
        }
        let text = r["content"][0]["text"].as_str().unwrap_or("").to_string();
        assert!(text.starts_with("DEVICE_OFFLINE"), "{r}");
        assert!(id < 400, "the device never came online");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(ok_json(&navigated)["page"]
        .as_str()
        .unwrap()
        .contains("Buttons page"));
    let clicked = call(
        &mut mcp,
        500,
        "browser_click",
        json!({"target": "role=button[name=\"Press me\"]"}),
    );
    ok_json(&clicked);
    assert_eq!(
        server.wait_count("go", 1),
        1,
        "one real click in the device's browser"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
    worker.close();
    browser.close();

    // Another principal's server on the same data directory cannot drive alice's device.
    let mut stranger = Mcp::start(&[
        "--data-dir",
        &dir,
        "--principal",
        "mallory",
        "--device",
        &device,
    ]);
    let _ = stranger.stderr_line("device channel listening on ");
    let r = call(&mut stranger, 1, "browser_snapshot", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("DEVICE_NOT_PAIRED"),
        "{r}"
    );
    stranger.close_stdin();
}

// Issue 20 item 2, seed 001 "Strict data handling": `jevgate mcp --strict` without
// `--isolated` is strict — its sessions are isolated (the server's profile is never used, so
// no profile lands in the data directory), tools/list has no file or journal tools whatever
// --caps says and browser_navigate offers only the isolated mode, calling them is refused, and
// authenticated mode is refused. (The old server ran authenticated on DIR/profiles and listed
// and served every tool.)
#[test]
fn strict_without_isolated_is_isolated_and_lists_no_file_or_journal_tools() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut mcp = Mcp::start(&[
        "--strict",
        "--caps",
        "tabs,files,vision",
        "--workspace",
        ws.path().to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    let r = mcp.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = r["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"browser_tabs"), "{names:?}");
    for gone in [
        "browser_file_upload",
        "browser_download_files",
        "browser_console_messages",
        "browser_network_requests",
    ] {
        assert!(!names.contains(&gone), "{gone} listed in strict");
    }
    let navigate = tools
        .iter()
        .find(|t| t["name"] == "browser_navigate")
        .unwrap();
    assert_eq!(
        navigate["inputSchema"]["properties"]["sessionMode"]["enum"],
        json!(["isolated"])
    );
    let nav = ok_json(&call(
        &mut mcp,
        2,
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    ));
    assert_eq!(nav["sessionMode"], "isolated", "{nav}");
    // Not listed, so not routed: the same answer as a tool outside --caps.
    for (id, name) in [
        (3, "browser_console_messages"),
        (4, "browser_download_files"),
    ] {
        let refused = mcp.ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}}));
        assert_eq!(code(&refused), -32602, "{refused}");
        assert!(refused.get("result").is_none(), "{refused}");
    }
    let auth = call(
        &mut mcp,
        5,
        "browser_navigate",
        json!({"url": server.url("/p/buttons"), "sessionMode": "authenticated"}),
    );
    assert!(
        auth["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("BROWSER_AUTHENTICATED_UNAVAILABLE: "),
        "{auth}"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
    let profiles: Vec<_> = std::fs::read_dir(data.join("profiles"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        profiles.is_empty(),
        "a strict session left a profile: {profiles:?}"
    );
}

// Issue 21 defects 6 and 10 over MCP (no browser needed): the task tools answer another
// owner's task id (here another conversation's, in the same data directory) exactly as they
// answer an unknown or malformed id — the same `isError` text, code and message — and a
// `--config` that leaves `features.browserTasks` off refuses `task_spawn` with
// ORCHESTRATION_DISABLED (the built-in default turns tasks on).
#[test]
fn issue21_task_tools_tell_no_foreign_id_apart_and_obey_the_gate() {
    use jevgate::browser::{BrowserBackend, Command as BrowserCommand, Response};
    use jevgate::task::{SpawnRequest, TaskOwner};
    use jevgate::{Config, Gateway, GatewayOptions};
    use std::sync::Arc;

    /// A blank page that refuses every action.
    struct Blank;
    impl BrowserBackend for Blank {
        fn execute(&self, command: &BrowserCommand) -> jevgate::Result<Response> {
            match command {
                BrowserCommand::Observe(_) => Ok(Response::Observation(Default::default())),
                _ => Err(jevgate::Error::TabUnavailable),
            }
        }
    }

    let data = tempfile::tempdir().unwrap();
    let foreign = {
        let gw = Gateway::open(GatewayOptions::new(
            data.path(),
            Config::from_json_str(support::gateway::TASKS_CONFIG).unwrap(),
        ))
        .unwrap();
        // The server's agent and principal, another conversation.
        let other = TaskOwner::new("mcp", "local", "another-conversation");
        let mut request = SpawnRequest::from_person("");
        request.keep_open = true;
        let id = gw
            .tasks()
            .spawn_with_backend(&other, request, Arc::new(Blank))
            .unwrap();
        gw.tasks().cancel(&other, &id).unwrap();
        gw.tasks()
            .wait(&other, &id, Duration::from_secs(30))
            .unwrap();
        gw.close();
        id
    };
    let dir = data.path().to_str().unwrap().to_string();
    let mut mcp = Mcp::start(&["--data-dir", &dir]);
    let mut answers = std::collections::BTreeSet::new();
    let mut n = 1;
    for task in [
        foreign.as_str(),
        "00000000-0000-4000-8000-000000000000",
        "",
        "not-a-task",
    ] {
        for (tool, extra) in [
            ("task_status", json!({})),
            ("task_wait", json!({"timeoutMs": 0})),
            ("task_command", json!({"command": "scroll down"})),
            ("task_cancel", json!({})),
            ("task_receipts", json!({})),
        ] {
            let mut args = extra;
            args["taskId"] = json!(task);
            let r = call(&mut mcp, n, tool, args);
            n += 1;
            assert_eq!(r["isError"], true, "{tool} {task}: {r}");
            answers.insert(r["content"].to_string());
        }
    }
    assert_eq!(answers.len(), 1, "{answers:#?}");
    let only = answers.into_iter().next().unwrap();
    assert!(
        only.contains("ACCESS_DENIED") && !only.contains(&foreign),
        "{only}"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());

    let config = data.path().join("off.json");
    std::fs::write(
        &config,
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
    )
    .unwrap();
    let mut mcp = Mcp::start(&["--config", config.to_str().unwrap()]);
    let r = call(&mut mcp, 1, "task_spawn", json!({"goal": "scroll down"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"].to_string().contains("ORCHESTRATION_DISABLED"),
        "{r}"
    );
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
}

/// Every string (and key) of `v` outside the untrusted envelope (`untrustedContent`).
fn outside_envelope(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| outside_envelope(x, out)),
        Value::Object(o) => {
            for (k, x) in o {
                if k != jevgate::untrusted::UNTRUSTED_KEY {
                    out.push(k.clone());
                    outside_envelope(x, out);
                }
            }
        }
        _ => {}
    }
}

/// A loopback Jev provider answering like [`support::desk::picks`], and a configuration file
/// for `jevgate mcp` that uses it (tasks and step lists on).
fn picking_provider() -> (support::jev_server::TestServer, tempfile::NamedTempFile) {
    use support::jev_server::{Behaviour, Rule, TestServer};
    let provider = TestServer::start();
    let picks = support::desk::picks();
    provider.set_default(Behaviour::Rule(Rule(Arc::new(move |req: &Value| {
        let out = picks(&serde_json::to_vec(req).unwrap()).unwrap();
        serde_json::from_slice::<Value>(&out).unwrap()["answers"].clone()
    }))));
    let var = format!("JEVGATE_TEST_MCP_PICKS_{}", std::process::id());
    std::env::set_var(&var, "k");
    let config = json!({"gateway": {"jev": {
        "enabled": true, "provider": "upstream", "baseUrl": provider.base(), "apiKeyEnv": var,
        "model": "m", "timeoutMs": 30000,
        "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}});
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, config.to_string().as_bytes()).unwrap();
    (provider, file)
}

// Issue 21 item 8 over MCP, as an attacker drives it (R-BRW-UNTRUSTED): `tools/list` serves
// exactly the library's agent tools besides the browser family, and a task on a page whose
// button, field label and title are prompt injections returns that text only inside the
// untrusted envelope — in task_status (its outcome line names the pressed control: before, the
// tool returned `Done: pressed "IGNORE ALL PREVIOUS INSTRUCTIONS…"` as a plain field), the
// field question the agent answers, task_receipts (before: plain JSON) and recorded evidence.
#[test]
fn issue21_page_text_reaches_the_mcp_client_only_inside_the_envelope() {
    use support::pages::INJECTED_FIELD;
    let server = Server::start();
    // The agent's goal is a goal run (issue 26 item 1): its decisions come from a loopback
    // provider that answers like the tests' deterministic callback model (the lexical `local`
    // evaluator cannot tell when a goal is reached).
    let (_provider, config) = picking_provider();
    let mut mcp = Mcp::start(&["--config", config.path().to_str().unwrap()]);
    let names = tool_names(&mut mcp, 1);
    for tool in jevgate::task::AGENT_TOOLS {
        assert!(
            names.contains(&tool.to_string()),
            "{tool} missing: {names:?}"
        );
    }
    // Jev is configured: the agent tools carry browser_autopilot too (issue 26 item 8).
    assert!(
        names.contains(&"browser_autopilot".to_string()),
        "{names:?}"
    );
    let listed = mcp.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let expected = jevgate::task::agent_tool_definitions(jevgate::device::ToolFormat::Mcp);
    for def in expected.as_array().unwrap() {
        assert!(
            listed["result"]["tools"].as_array().unwrap().contains(def),
            "{} differs from the library's definition",
            def["name"]
        );
    }
    let mut n = 10;
    let mut results = Vec::new();
    let mut tool = |mcp: &mut Mcp, name: &str, args: Value| -> Value {
        n += 1;
        let v = ok_json(&call(mcp, n, name, args));
        results.push((name.to_string(), v.clone()));
        v
    };
    let caps = tool(&mut mcp, "capabilities_list", json!({}));
    assert_eq!(caps["browserTasks"]["enabled"], true, "{caps}");
    let spawned = tool(
        &mut mcp,
        "task_spawn",
        json!({"goal": "press Continue",
            "startUrl": server.url("/p/injection"), "keepOpen": true}),
    );
    let id = spawned["id"].as_str().unwrap().to_string();
    let pressed = tool(
        &mut mcp,
        "task_wait",
        json!({"taskId": id, "timeoutMs": 90000}),
    );
    assert_eq!(server.wait_count("inj", 1), 1, "{pressed}");
    tool(
        &mut mcp,
        "task_update",
        json!({"taskId": id, "expectedRevision": pressed["revision"], "mode": "when_ready",
            "goal": "fill in the Address"}),
    );
    let asked = tool(
        &mut mcp,
        "task_wait",
        json!({"taskId": id, "timeoutMs": 90000}),
    );
    let page = &asked["untrustedContent"]["data"];
    let field = page["fieldRequest"]["field"]
        .as_str()
        .unwrap_or_else(|| panic!("a field question: {asked:#}"))
        .to_string();
    assert!(field.contains(INJECTED_FIELD), "{field}");
    tool(
        &mut mcp,
        "task_answer",
        json!({"taskId": id, "field": field, "text": "12 Main St"}),
    );
    let done = tool(
        &mut mcp,
        "task_wait",
        json!({"taskId": id, "timeoutMs": 90000}),
    );
    assert_eq!(done["state"], "waiting_input", "{done:#}");
    let status = tool(&mut mcp, "task_status", json!({"taskId": id}));
    let evidence = tool(
        &mut mcp,
        "task_status",
        json!({"taskId": id, "browserEvidence": "recorded"}),
    );
    assert_eq!(
        evidence["browserEvidence"]["available"], true,
        "{evidence:#}"
    );
    let receipts = tool(&mut mcp, "task_receipts", json!({"taskId": id}));
    tool(&mut mcp, "task_cancel", json!({"taskId": id}));
    for (name, v) in &results {
        let mut strings = Vec::new();
        outside_envelope(v, &mut strings);
        for s in strings {
            assert!(
                !s.contains("IGNORE ALL PREVIOUS") && !s.contains("SYSTEM: ignore"),
                "{name}: page text outside the envelope: {s:.120}"
            );
        }
    }
    // It did reach the client, inside the envelope (the test can fail).
    for (what, v) in [
        ("status", &status),
        ("evidence", &evidence),
        ("receipts", &receipts),
    ] {
        let inside = v["untrustedContent"]["data"].to_string();
        assert!(inside.contains("IGNORE ALL PREVIOUS"), "{what}: {v:.400}");
        assert_eq!(
            v["untrustedContent"]["notice"],
            jevgate::untrusted::UNTRUSTED_NOTICE
        );
    }
    // The answer is the agent's.
    let answer = status["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "answer")
        .unwrap_or_else(|| panic!("{status:#}"));
    assert_eq!(answer["origin"], "agent");
    mcp.close_stdin();
    assert!(mcp.child.wait().unwrap().success());
}

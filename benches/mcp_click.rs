//! One tool round trip through `jevgate mcp` beside the same click through Playwright MCP, in
//! one run (issue 15 "Benchmarks"): `tools/call browser_click` on a loopback page, median
//! latency and response size (characters of the result's `content`), and their ratios.
//!
//! Both servers are driven the same way over stdio with raw JSON-RPC lines: initialize,
//! navigate, then per round a `browser_snapshot` (to get the button's current ref; not timed)
//! and the timed `browser_click`. Playwright MCP (`@playwright/mcp`) is installed from npm
//! into `target/bench-node` when missing and runs headless on the same Chromium
//! (`/usr/bin/chromium` or `JEVGATE_CHROMIUM`). Without node/npm or the package the bench says
//! so and reports jevgate alone. `JEVGATE_BENCH_ROUNDS` (default 20).
//!
//! Goal: ≤ 0.5× its latency and ≤ 0.5× its response characters. Current Playwright MCP no
//! longer puts the page snapshot in a click's response: it writes it to a file and links it, so
//! the run also reports the response plus that file (what an agent reads to see the page;
//! jevgate returns the fresh snapshot inline). Final line:
//! `mcp_click: jevgate_ms=… playwright_ms=… latency_ratio=… jevgate_chars=… playwright_chars=… chars_ratio=… playwright_chars_with_snapshot=… chars_with_snapshot_ratio=…`

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const PAGE: &str = "<!doctype html><title>Bench</title><h1>Bench</h1>\
<p>A page with one button.</p>\
<button onclick=\"this.textContent='Go '+(++window.n||(window.n=1))\">Go</button>";

fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                PAGE.len()
            );
        }
    });
    base
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(mut cmd: Command) -> Option<Server> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        let mut s = Server {
            child,
            stdin,
            stdout,
            next: 0,
        };
        s.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "jevgate-bench", "version": "1"}}),
        )?;
        s.notify("notifications/initialized");
        Some(s)
    }

    fn notify(&mut self, method: &str) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": {}});
        let _ = writeln!(self.stdin, "{msg}");
        let _ = self.stdin.flush();
    }

    fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        self.next += 1;
        let id = self.next;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").ok()?;
        self.stdin.flush().ok()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&line).ok()?;
            if v["id"] == json!(id) {
                return Some(v);
            }
        }
    }

    fn tool(&mut self, name: &str, args: Value) -> Option<Value> {
        self.call("tools/call", json!({"name": name, "arguments": args}))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The ref of the button named `Go…` in a snapshot tool result.
fn button_ref(result: &Value) -> Option<String> {
    // A text part is the snapshot itself (Playwright MCP) or a JSON result whose `page` holds
    // it (jevgate): unwrap the JSON so the quotes are plain.
    let text: String = result["result"]["content"]
        .as_array()?
        .iter()
        .filter_map(|c| c["text"].as_str())
        .map(|t| match serde_json::from_str::<Value>(t) {
            Ok(v) => v["page"]
                .as_str()
                .map_or_else(|| t.to_string(), str::to_string),
            Err(_) => t.to_string(),
        })
        .collect();
    let at = text.find("button \"Go")?;
    let rest = &text[at..];
    let r = rest.find("[ref=")?;
    let end = rest[r..].find(']')?;
    Some(rest[r + 5..r + end].to_string())
}

struct Sample {
    ms: Vec<f64>,
    chars: Vec<usize>,
    /// The response plus a snapshot it only links to (Playwright MCP writes the page snapshot
    /// to a file under its working directory and returns a link): what an agent must read to
    /// see the page after the click.
    with_linked: Vec<usize>,
}

/// The characters of a snapshot file a response links to (`[Snapshot](path)`), read from `cwd`.
fn linked_chars(text: &str, cwd: Option<&Path>) -> usize {
    let (Some(cwd), Some(at)) = (cwd, text.find("](")) else {
        return 0;
    };
    let rest = &text[at + 2..];
    let Some(end) = rest.find(')') else { return 0 };
    std::fs::read_to_string(cwd.join(&rest[..end]))
        .map(|s| s.chars().count())
        .unwrap_or(0)
}

fn rounds(
    server: &mut Server,
    url: &str,
    n: usize,
    cwd: Option<&Path>,
    args: impl Fn(&str) -> Value,
) -> Option<Sample> {
    server.tool("browser_navigate", json!({"url": url}))?;
    let mut s = Sample {
        ms: Vec::new(),
        chars: Vec::new(),
        with_linked: Vec::new(),
    };
    for _ in 0..n {
        let snap = server.tool("browser_snapshot", json!({}))?;
        let r = button_ref(&snap)?;
        let t = Instant::now();
        let out = server.tool("browser_click", args(&r))?;
        s.ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if out["result"]["isError"] == json!(true) || out.get("error").is_some() {
            eprintln!("click failed: {out}");
            return None;
        }
        let chars = out["result"]["content"].to_string().chars().count();
        let text: String = out["result"]["content"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["text"].as_str()).collect())
            .unwrap_or_default();
        s.chars.push(chars);
        s.with_linked.push(chars + linked_chars(&text, cwd));
    }
    Some(s)
}

fn median<T: Copy + PartialOrd>(v: &[T]) -> T {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `@playwright/mcp`'s cli.js, installed into `target/bench-node` when missing.
fn playwright_mcp() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-node");
    let cli = root.join("node_modules/@playwright/mcp/cli.js");
    if !cli.exists() {
        eprintln!(
            "installing @playwright/mcp from npm into {}",
            root.display()
        );
        std::fs::create_dir_all(&root).ok()?;
        let ok = Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(&root)
            .arg("@playwright/mcp@latest")
            .status()
            .ok()?
            .success();
        if !ok {
            return None;
        }
    }
    cli.exists().then_some(cli)
}

fn main() {
    let n: usize = std::env::var("JEVGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let chromium = std::env::var("JEVGATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let url = serve();

    let data = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jevgate"));
    cmd.arg("mcp").arg("--data-dir").arg(data.path());
    let mut ours = Server::start(cmd).expect("jevgate mcp starts");
    // One warm-up round each (Chromium start, first page).
    let _ = rounds(&mut ours, &url, 1, None, |r| json!({"target": r}));
    let j = rounds(&mut ours, &url, n, None, |r| json!({"target": r})).expect("jevgate clicks");
    drop(ours);
    let (jm, jc) = (median(&j.ms), median(&j.chars));
    println!("jevgate mcp: browser_click median {jm:.2} ms, {jc} chars ({n} rounds)");

    // Playwright MCP writes snapshot files into its working directory: a private one.
    let pw_cwd = tempfile::tempdir().unwrap();
    let theirs = playwright_mcp().and_then(|cli| {
        let mut cmd = Command::new("node");
        cmd.arg(cli)
            .args([
                "--headless",
                "--isolated",
                "--no-sandbox",
                "--executable-path",
            ])
            .arg(&chromium)
            .current_dir(pw_cwd.path());
        let mut s = Server::start(cmd)?;
        let args = |r: &str| json!({"element": "Go button", "target": r});
        let _ = rounds(&mut s, &url, 1, Some(pw_cwd.path()), args);
        rounds(&mut s, &url, n, Some(pw_cwd.path()), args)
    });
    match theirs {
        Some(p) => {
            let (pm, pc, pl) = (median(&p.ms), median(&p.chars), median(&p.with_linked));
            println!(
                "playwright mcp: browser_click median {pm:.2} ms, {pc} chars in the response, {pl} with the snapshot it links to ({n} rounds)"
            );
            println!(
                "mcp_click: jevgate_ms={jm:.2} playwright_ms={pm:.2} latency_ratio={:.3} jevgate_chars={jc} playwright_chars={pc} chars_ratio={:.3} playwright_chars_with_snapshot={pl} chars_with_snapshot_ratio={:.3}",
                jm / pm,
                jc as f64 / pc as f64,
                jc as f64 / pl as f64
            );
        }
        None => {
            println!(
                "playwright mcp unavailable (node/npm or @playwright/mcp missing): no baseline"
            );
            println!(
                "mcp_click: jevgate_ms={jm:.2} playwright_ms=nan latency_ratio=nan jevgate_chars={jc} playwright_chars=nan chars_ratio=nan playwright_chars_with_snapshot=nan chars_with_snapshot_ratio=nan"
            );
        }
    }
}

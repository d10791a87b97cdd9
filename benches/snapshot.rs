//! Observe and snapshot latency and size on a fixture page with about 1,000 interactive
//! elements (issue 8 benchmark, R-PERF), beside Playwright's `ariaSnapshot` of the same page in
//! the same Chromium when Node.js and npm `playwright-core` are available.
//!
//! Issue 19 item 7: the default snapshot command (`{"tool": "snapshot", "args": {}}`, the 20,000-character
//! budget) timed in Rust through `execute_json` — the very call the Python binding makes — and
//! from Python through `LocalBrowser.execute` (benches/snapshot_py.py, run with the checkout's
//! `.venv/bin/python` or `JEVGATE_BENCH_PYTHON`; skipped with a note when no built module
//! imports), in the same run on the same page.
//!
//! Final line: `snapshot: ms=<ours> chars=<ours> peer_ms=<playwright> peer_chars=<playwright>
//! rust_cmd_ms=<execute_json> py_ms=<LocalBrowser.execute> py_ratio=<py_ms/rust_cmd_ms>`
//! (medians; peer and py fields `na` when unavailable). Set `JEVGATE_BENCH_NO_PEER=1` to skip
//! the Playwright peer.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jevgate::browser::{BrowserBackend, LaunchOptions, LocalBrowser, ObserveArgs, SnapshotArgs};

const RUNS: usize = 20;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let server = support::Server::start();
    let url = server.url("/p/big");
    let browser = LocalBrowser::launch(LaunchOptions::default()).expect("launch Chromium");
    browser.navigate(&url).expect("load the fixture page");

    let obs = browser.observe().expect("observe");
    println!("page: {} controls", obs.controls.len());
    let mut times = Vec::new();
    let mut chars = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let o = browser.observe_with(ObserveArgs::default()).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        chars = serde_json::to_string(&o).unwrap().chars().count();
    }
    let observe_ms = median(times);
    println!("observe: ms={observe_ms:.1} chars={chars}");

    let full = SnapshotArgs {
        region: None,
        max_chars: Some(10_000_000),
    };
    let mut times = Vec::new();
    let mut text = String::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        text = browser.snapshot(full.clone()).unwrap().text;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let ours_ms = median(times);
    let ours_chars = text.chars().count();
    let capped = browser.snapshot(SnapshotArgs::default()).unwrap();
    println!(
        "snapshot (default 20,000-char budget): chars={} truncated={}",
        capped.text.chars().count(),
        capped.truncated
    );
    browser.close();

    let rust_cmd_ms = rust_command(&url);
    println!("snapshot command (rust, execute_json): ms={rust_cmd_ms:.1}");

    let (py_ms, py_ratio) = match python_side(&url) {
        Some(py) => {
            println!(
                "snapshot command (python, LocalBrowser.execute): ms={:.1} snapshot()_ms={:.1} chars={}",
                py.ms, py.snapshot_ms, py.chars
            );
            (
                format!("{:.1}", py.ms),
                format!("{:.2}", py.ms / rust_cmd_ms),
            )
        }
        None => ("na".to_string(), "na".to_string()),
    };

    let peer = if std::env::var_os("JEVGATE_BENCH_NO_PEER").is_some() {
        None
    } else {
        playwright_peer(&url)
    };
    let (peer_ms, peer_chars) = match peer {
        Some((ms, chars)) => (format!("{ms:.1}"), chars.to_string()),
        None => ("na".to_string(), "na".to_string()),
    };
    println!(
        "snapshot: ms={ours_ms:.1} chars={ours_chars} peer_ms={peer_ms} peer_chars={peer_chars} rust_cmd_ms={rust_cmd_ms:.1} py_ms={py_ms} py_ratio={py_ratio}"
    );
}

/// The warm-up calls before each side's timed runs (the page library's code is then compiled
/// alike in both browsers).
const WARM: usize = 5;

/// The Python binding's call without Python — command JSON in, result JSON out — in the same
/// sequence as benches/snapshot_py.py: a fresh browser, the page, `WARM` calls, `RUNS` timed.
fn rust_command(url: &str) -> f64 {
    const COMMAND: &str = r#"{"tool":"snapshot","args":{}}"#;
    let browser = LocalBrowser::launch(LaunchOptions::default()).expect("launch Chromium");
    browser.navigate(url).expect("load the fixture page");
    for _ in 0..WARM {
        jevgate::browser::execute_json(&browser, COMMAND).unwrap();
    }
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        jevgate::browser::execute_json(&browser, COMMAND).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    browser.close();
    median(times)
}

struct PySide {
    ms: f64,
    snapshot_ms: f64,
    chars: u64,
}

/// Runs benches/snapshot_py.py on `url` with the checkout's virtualenv Python (or
/// `JEVGATE_BENCH_PYTHON`). `None`, after a note on stderr, when there is no such Python or it
/// cannot import a built jevgate module (build one with `maturin develop --release` in
/// bindings/python to compare like with like: this bench is a release build).
fn python_side(url: &str) -> Option<PySide> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var_os("JEVGATE_BENCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    if !python.exists() {
        eprintln!(
            "python: {} not found; skipping the Python half",
            python.display()
        );
        return None;
    }
    let mut child = Command::new(&python)
        .arg(root.join("benches/snapshot_py.py"))
        .arg(url)
        .arg(RUNS.to_string())
        .arg(WARM.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                eprintln!("python: timed out; skipping the Python half");
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        eprintln!("python: no built jevgate module answered; skipping the Python half");
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(PySide {
        ms: v["ms"].as_f64()?,
        snapshot_ms: v["snapshot_ms"].as_f64()?,
        chars: v["chars"].as_u64()?,
    })
}

/// Installs `playwright-core` (once, under the target directory) and measures
/// `locator('body').ariaSnapshot()` on `url` with the same Chromium. `None` when Node.js,
/// npm or the package is unavailable.
fn playwright_peer(url: &str) -> Option<(f64, usize)> {
    let chromium = jevgate::browser::find_chromium(None).ok()?;
    let ok = |cmd: &mut Command| {
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ok(Command::new("node").arg("--version")) {
        eprintln!("peer: node not found");
        return None;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("bench-peer");
    std::fs::create_dir_all(&dir).ok()?;
    if !dir.join("node_modules/playwright-core").exists() {
        eprintln!("peer: npm install playwright-core in {}", dir.display());
        if !ok(Command::new("npm")
            .args([
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "playwright-core",
            ])
            .current_dir(&dir))
        {
            eprintln!("peer: npm install playwright-core failed; skipping the peer");
            return None;
        }
    }
    let script = format!(
        r#"
const {{ chromium }} = require('playwright-core');
(async () => {{
  const browser = await chromium.launch({{
    executablePath: {exe},
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  }});
  const page = await browser.newPage({{ viewport: {{ width: 1280, height: 800 }} }});
  await page.goto({url});
  let text = '';
  const times = [];
  await page.locator('body').ariaSnapshot();
  for (let i = 0; i < {RUNS}; i++) {{
    const t = process.hrtime.bigint();
    text = await page.locator('body').ariaSnapshot();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }}
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({{ ms: times[Math.floor(times.length / 2)], chars: [...text].length }}));
  await browser.close();
}})().catch((e) => {{ console.error(String(e)); process.exit(1); }});
"#,
        exe = serde_json::to_string(&chromium.to_string_lossy()).ok()?,
        url = serde_json::to_string(url).ok()?,
    );
    let path = dir.join("peer.js");
    std::fs::write(&path, script).ok()?;
    let mut child = Command::new("node")
        .arg(&path)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                eprintln!("peer: timed out");
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some((v["ms"].as_f64()?, v["chars"].as_u64()? as usize))
}

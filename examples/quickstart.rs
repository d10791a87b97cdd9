//! The quickstart: what jevgate does today, end to end, with no network and no key.
//!
//! `scripts/quickstart` (installs Chromium when missing), or `cargo run --release --example
//! quickstart`. With `--strict` (as `scripts/test` runs it) a skipped browser demo or a step that
//! is not done makes it exit non-zero instead of reporting and going on.
//!
//! It validates a configuration (and shows how a bad one is rejected with the JSON path of the
//! offending value), opens a gateway on a data directory (one SQLite file), reloads the live
//! configuration, runs the local doctor, shows the control lease, and closes; then it starts a
//! local headless Chromium on a loopback fixture site, runs step commands through the grammar's
//! fast paths, and finally connects that browser as a paired device (the reference worker) and
//! drives it with an agent's tool calls over the real WebSocket channel.

use jevgate::browser::BrowserTools;
use jevgate::browser::{
    BrowserBackend, HistoryArgs, KeypressArgs, LaunchOptions, LocalBrowser, ScrollArgs,
    SnapshotArgs, TypeArgs,
};
use jevgate::device::{
    BrowserInfo, ChannelOptions, DeviceWorker, PairRequest, ToolCall, WorkerOptions,
};
use jevgate::grammar::{parse_command, resolve, Adapter, Primitive, Resolution};
use jevgate::{Config, Gateway, GatewayOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;

const CONFIG: &str = r#"{
  "gateway": {
    "jev": {
      "enabled": true,
      "provider": "local",
      "allowedAgentIds": ["assistant"],
      "features": { "browserTasks": { "enabled": true } }
    }
  },
  "agents": [{ "id": "assistant" }, { "id": "intern", "jev": { "enabled": false } }]
}"#;

/// `--strict`: a skip or a step that is not done is a failure (the test command's mode).
fn strict() -> bool {
    std::env::args_os().skip(1).any(|a| a == "--strict")
}

/// Reports a step that did not happen; under `--strict` it ends the run with an error.
fn not_done(what: String) -> Result<(), Box<dyn std::error::Error>> {
    println!("{what}");
    if strict() {
        return Err(format!("--strict: {}", what.trim()).into());
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("jevgate {} quickstart\n", env!("CARGO_PKG_VERSION"));

    // 1. Configuration: typed, unknown keys rejected, every rule checked with a JSON path.
    let config = Config::from_json_str(CONFIG)?;
    println!(
        "config ok: Jev for assistant = {}, for intern = {}",
        config.jev_allowed("assistant"),
        config.jev_allowed("intern")
    );
    let bad = r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"jev-1.13.0","apiKeyEnv":"OPENAI_API_KEY"}}}"#;
    let err = Config::from_json_str(bad).unwrap_err();
    println!(
        "rejected: code={} path={} ({})",
        err.code(),
        err.path().unwrap_or(""),
        err
    );

    // 2. A gateway on a data directory: one SQLite file (WAL, synchronous=FULL).
    let dir = match std::env::var_os("JEVGATE_DATA_DIR") {
        Some(d) => tempfile::Builder::new()
            .prefix("quickstart-")
            .tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let gw = Gateway::open(GatewayOptions::new(dir.path(), config))?;
    println!(
        "\ngateway open: store {} (schema v{}), config generation {}",
        gw.store().path().display(),
        gw.store().schema_version()?,
        gw.generation()
    );

    // 3. Live reload: validated as a whole, swapped atomically, generation bumped.
    let generation = gw.reload_json(r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"browserSteps":{"enabled":true}}}}}"#)?;
    println!("reloaded: generation {generation}");
    let refused = gw
        .reload_json(r#"{"gateway":{"jev":{"maxQuestions":100}}}"#)
        .unwrap_err();
    println!(
        "refused reload ({}), still generation {}",
        refused.path().unwrap_or(""),
        gw.generation()
    );

    // 4. Doctor: local checks only, never a network call, never a key in the report.
    let report = gw.doctor()?;
    println!("\ndoctor ok={}", report.ok);
    for check in &report.checks {
        println!("  {:<16} {:?}: {}", check.name, check.status, check.detail);
    }

    // 5. Leases: one conversation drives a device; the person can always take it back.
    let leases = gw.leases();
    leases.set_device_owner("laptop", "person")?;
    let grant = leases.acquire("laptop", "conversation-a")?;
    println!(
        "\nconversation-a acquired the laptop (expires at {} ms)",
        grant.expires_at
    );
    let elsewhere = leases.acquire("laptop", "conversation-b").unwrap_err();
    println!("conversation-b: {} ({})", elsewhere.code(), elsewhere);
    leases.take_back("laptop", &jevgate::lease::ControlCaller::owner("person"))?;
    let status = leases.status("laptop", &jevgate::lease::ControlCaller::owner("person"))?;
    println!("person took it back: {}", serde_json::to_string(&status)?);
    let revoked = leases.acquire("laptop", "conversation-a").unwrap_err();
    println!("conversation-a is told once: {}", revoked.code());

    // 6. Close: joins the gateway's threads and releases the data directory.
    gw.close();
    println!("\ngateway closed");

    // 7. The browser: a local headless Chromium driven by the grammar's fast paths, then the
    //    same browser as a paired device driven by an agent's tool calls over the channel.
    browser_demo(dir.path())
}

const HOME: &str = "<!doctype html><title>Pets</title><h1>Pets</h1>\
<form action=/search><input type=search name=q aria-label=Search><button>Search</button></form>\
<div style='height:3000px'>A long page.</div>";

/// A two-page fixture site on loopback: `/` with a search box, `/search?q=…` with results.
fn serve_fixture() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(match conn.try_clone() {
                Ok(c) => c,
                Err(_) => continue,
            });
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut header = String::new();
            while reader
                .read_line(&mut header)
                .map(|n| n > 2)
                .unwrap_or(false)
            {
                header.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/");
            let body = match path.strip_prefix("/search?q=") {
                Some(q) => format!(
                    "<!doctype html><title>Results</title><h1>Results for {}</h1><a href=/>Back home</a>",
                    q.replace(['<', '>', '&'], "")
                ),
                None => HOME.to_string(),
            };
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                body.len(),
                body
            );
        }
    });
    Ok(base)
}

fn browser_demo(data_dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let browser = match LocalBrowser::launch(LaunchOptions::default()) {
        Ok(b) => b,
        Err(e) if e.code() == "BROWSER_UNAVAILABLE" => {
            return not_done(format!("\nbrowser demo skipped: {e} (Debian: apt-get install chromium; scripts/quickstart installs it)"));
        }
        Err(e) => return Err(e.into()),
    };
    let base = serve_fixture()?;
    println!("\nbrowser: headless Chromium on the fixture site {base}");
    let commands = [
        format!("go to {base}/"),
        "scroll ลง".into(),
        "search cats".into(),
        "กลับ".into(),
    ];
    for (i, command) in commands.iter().enumerate() {
        let op = format!("op-{i}");
        let intent = parse_command(command);
        let obs = browser.observe()?;
        let g = obs.generation;
        let outcome = match resolve(&intent, &obs, Adapter::Browser) {
            Resolution::Act(Primitive::Navigate { url }) => {
                browser.navigate(&url).map(|_| format!("opened {url}"))
            }
            Resolution::Act(Primitive::Type {
                target,
                text,
                submit,
            }) => browser
                .page_type(TypeArgs {
                    operation_id: op,
                    generation: g,
                    reference: target,
                    text: text.clone(),
                    submit,
                })
                .map(|_| {
                    format!(
                        "typed [{text}]{}",
                        if submit { " and submitted" } else { "" }
                    )
                }),
            Resolution::Act(Primitive::Scroll { direction }) => browser
                .page_scroll(ScrollArgs {
                    operation_id: op,
                    generation: g,
                    direction,
                })
                .map(|_| format!("scrolled {direction:?}")),
            Resolution::Act(Primitive::History { direction }) => browser
                .tab_history(HistoryArgs {
                    operation_id: op,
                    generation: g,
                    direction,
                })
                .map(|_| format!("went {direction:?}")),
            Resolution::Act(Primitive::Keypress { key, count }) => browser
                .page_keypress(KeypressArgs {
                    operation_id: op,
                    generation: g,
                    key,
                    count,
                })
                .map(|_| format!("pressed {key:?} x{count}")),
            Resolution::Act(other) => Ok(format!("would run {other:?}")),
            Resolution::Decide(_) => {
                not_done(format!(
                    "  {command:<32} Not done: needs a Jev decision (not in this demo)"
                ))?;
                continue;
            }
            Resolution::Outcome(o) => {
                not_done(format!(
                    "  {command:<32} Not done: {} (nothing was sent)",
                    o.code()
                ))?;
                continue;
            }
        };
        // Let a navigation settle before the next observation.
        for _ in 0..50 {
            match browser.observe() {
                Ok(_) => break,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        match outcome {
            Ok(line) => println!("  {command:<32} Done: {line}"),
            Err(e) => not_done(format!("  {command:<32} Not done: {}", e.code()))?,
        }
    }
    let snapshot = browser.snapshot(SnapshotArgs::default())?;
    println!("\nfinal snapshot:\n{}", snapshot.text);
    let result = device_demo(data_dir, &browser, &base);
    browser.close();
    result
}

/// 8. The same browser as a paired device: the reference worker connects it to the gateway's
///    channel, and an agent drives it with the nine browser tools (R-DEV-TOOLS) under the lease.
fn device_demo(
    data_dir: &std::path::Path,
    browser: &LocalBrowser,
    base: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let gw = Gateway::open(GatewayOptions::new(data_dir, Config::default()))?;
    let pairing = gw.pair(
        "person",
        &PairRequest {
            installation_id: "quickstart".into(),
            name: "Quickstart Chromium".into(),
            browser: Some(BrowserInfo {
                name: "Chromium".into(),
                version: "headless".into(),
            }),
        },
    )?;
    let channel = gw.serve_channel(ChannelOptions::new("127.0.0.1:0"))?;
    let worker = DeviceWorker::connect(
        WorkerOptions::new(channel.url(), pairing.token),
        Arc::new(BrowserTools::new(Arc::new(browser.clone()))),
    )?;
    println!(
        "\ndevice {} connected over {}; an agent's tool calls:",
        worker.device_id(),
        channel.url()
    );
    let failed = std::cell::Cell::new(0u32);
    let call = |tool: &str, args: serde_json::Value| {
        let answer = gw.call_tool(&ToolCall::new(
            "person",
            "conversation-a",
            tool,
            args.clone(),
        ));
        let line = match answer.error_code() {
            None => "ok".to_string(),
            Some(code) => {
                failed.set(failed.get() + 1);
                format!("{code}: {}", answer.to_json()["message"])
            }
        };
        let what = match args.get("action").and_then(|a| a.as_str()) {
            Some(action) => format!("{tool} {action}"),
            None => tool.to_string(),
        };
        println!("  {what:<28} {line}");
        answer
    };
    call(
        "browser_navigate",
        serde_json::json!({ "url": format!("{base}/") }),
    );
    let found = call("browser_find", serde_json::json!({ "query": "search" }));
    let search = found.result().and_then(|r| {
        r["untrustedContent"]["data"]["matches"][0]["ref"]
            .as_str()
            .map(str::to_string)
    });
    if search.is_none() {
        failed.set(failed.get() + 1);
    }
    if let Some(search) = search {
        call(
            "browser_computer",
            serde_json::json!({"action": "type", "ref": search, "text": "dogs"}),
        );
        call(
            "browser_computer",
            serde_json::json!({"action": "key", "text": "Enter"}),
        );
    }
    let text = call("browser_get_text", serde_json::json!({ "max_chars": 60 }));
    if let Some(r) = text.result() {
        println!(
            "  page text (untrusted): {}",
            r["untrustedContent"]["data"]["text"]
        );
    }
    let shot = call(
        "browser_computer",
        serde_json::json!({"action": "screenshot"}),
    );
    if let Some(id) = shot.result().and_then(|r| r["artifactId"].as_str()) {
        let art = gw.artifact("conversation-a", id)?;
        println!(
            "  screenshot stored privately as {id} ({} bytes)",
            art.bytes.len()
        );
    }
    worker.close();
    gw.close();
    match failed.get() {
        0 => Ok(()),
        n => not_done(format!("{n} tool call(s) of the device demo failed")),
    }
}

//! The quickstart: what jevgate does today, end to end, with no network and no key.
//!
//! `scripts/quickstart` (installs Chromium when missing), or `cargo run --release --example
//! quickstart`. With `--strict` (as `scripts/test` runs it) a skipped browser demo, a task that
//! does not complete or a failed tool call makes it exit non-zero instead of reporting and
//! going on.
//!
//! It validates a configuration (and shows how a bad one is rejected with the JSON path of the
//! offending value), opens a gateway on a data directory (one SQLite file), reloads the live
//! configuration, runs the local doctor, shows the control lease, and closes; then it runs a
//! task — a mixed Thai/English step list (go to, search, open a result, back, scroll) — on a
//! local headless Chromium over a loopback fixture site with the local evaluator, printing each
//! outcome line as it settles and the task's receipts; finally it connects a browser as a
//! paired device (the reference worker) and drives it with an agent's tool calls over the real
//! WebSocket channel.

use jevgate::browser::{BrowserTools, LaunchOptions, LocalBrowser};
use jevgate::device::{
    BrowserInfo, ChannelOptions, DeviceWorker, PairRequest, ToolCall, WorkerOptions,
};
use jevgate::task::{SpawnRequest, TaskOwner, TaskProgress, TaskState};
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
      "features": { "browserTasks": { "enabled": true }, "browserSteps": { "enabled": true } }
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
        gw.data_dir().join("jevgate.sqlite3").display(),
        gw.schema_version()?,
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

    // 7. The browser: a task runs a person's step list on a local headless Chromium, then a
    //    browser joins as a paired device driven by an agent's tool calls over the channel.
    browser_demo(dir.path())
}

/// The fixture site's pages: a home with a search box, results with links, and a page behind
/// the first result; every page is long enough to scroll.
fn page(path: &str) -> String {
    const TALL: &str = "<div style='height:3000px'>A long page.</div>";
    let body = match path.split_once("?q=") {
        Some(("/search", q)) => format!(
            "<title>Results</title><h1>Results for {}</h1>\
             <p><a href=/cats>Cats result one</a></p><p><a href=/dogs>Dogs result two</a></p>\
             <p><a href=/>Back home</a></p>{TALL}",
            q.replace(['<', '>', '&', '\'', '"'], "")
        ),
        _ => match path {
            "/cats" => format!("<title>All about cats</title><h1>Cats</h1><p>Cats purr.</p>{TALL}"),
            "/dogs" => format!("<title>All about dogs</title><h1>Dogs</h1><p>Dogs bark.</p>{TALL}"),
            _ => format!(
                "<title>Pets</title><h1>Pets</h1>\
                 <form action=/search><input type=search name=q aria-label=Search>\
                 <button>Search</button></form>{TALL}"
            ),
        },
    };
    format!("<!doctype html><meta charset=utf-8>{body}")
}

/// The fixture site on loopback: `/` with a search box, `/search?q=…` with result links,
/// `/cats` and `/dogs` behind them.
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
            let body = page(line.split_whitespace().nth(1).unwrap_or("/"));
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
    let base = serve_fixture()?;
    if !task_demo(data_dir, &base)? {
        return Ok(());
    }
    let browser = LocalBrowser::launch(LaunchOptions::default())?;
    let result = device_demo(data_dir, &browser, &base);
    browser.close();
    result
}

/// 7. A task (R-TSK, R-RUN): a person's mixed Thai/English step list carried out on a local
///    headless Chromium. Fast paths need no model; "open Cats result one" needs one decision,
///    made here by the local evaluator. Every page action is checkpointed in the task's receipt
///    before it is sent. Returns false when the browser demo was skipped.
fn task_demo(data_dir: &std::path::Path, base: &str) -> Result<bool, Box<dyn std::error::Error>> {
    let gw = Gateway::open(GatewayOptions::new(
        data_dir,
        Config::from_json_str(CONFIG)?,
    ))?;
    let owner = TaskOwner::new("assistant", "person", "conversation-a");
    let steps =
        format!("1. ไปที่ {base}/\n2. ค้นหา cats\n3. open Cats result one\n4. กลับ\n5. scroll ลง");
    println!("\ntask on a local headless Chromium, fixture site {base}:");
    for step in steps.lines() {
        println!("  {step}");
    }
    // The person's own step list (their authorization, run verbatim); an agent's goal would
    // be `SpawnRequest::new`, a goal run checked for impact before each action.
    let mut request = SpawnRequest::from_person(steps);
    request.progress = Some(Arc::new(|p: &TaskProgress| {
        // Each outcome line as it settles.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "  -> {}", p.line);
        let _ = out.flush();
    }));
    // Browser tasks are off unless `features.browserTasks` is on, and only for agents with Jev
    // access: the intern's task is refused before any browser starts.
    let intern = TaskOwner::new("intern", "person", "conversation-a");
    match gw
        .tasks()
        .spawn(&intern, SpawnRequest::from_person("scroll down"))
    {
        Err(e) => println!("the intern's task: {} (HTTP {})", e.code(), e.http_status()),
        Ok(_) => not_done("the intern's task was not refused".into())?,
    }
    let id = gw.tasks().spawn(&owner, request)?;
    let mut status = gw
        .tasks()
        .wait(&owner, &id, std::time::Duration::from_secs(180))?;
    // Every step done is a completion candidate (R-TSK-VER): it waits until someone verifies
    // it on fresh evidence of the page — here the person, whose own list it was.
    if status.reason.as_deref() == Some(jevgate::task::COMPLETION_CANDIDATE) {
        let evidence = gw.tasks().evidence(&owner, &id, true)?;
        println!(
            "completion candidate; fresh evidence {} of request {}",
            evidence.evidence_id, evidence.request
        );
        status = gw.tasks().verify(
            &owner,
            &id,
            &jevgate::task::VerifyRequest {
                expected_revision: status.revision,
                expected_request_id: evidence.request,
                evidence_id: evidence.evidence_id,
                instruction: "the Cats result page was opened, then the search page came back"
                    .into(),
            },
        )?;
    }
    let receipts = gw.tasks().receipts(&owner, &id)?;
    gw.close();
    if status.reason.as_deref() == Some("BROWSER_UNAVAILABLE") {
        not_done("\nbrowser demo skipped: no Chromium (Debian: apt-get install chromium; scripts/quickstart installs it)".into())?;
        return Ok(false);
    }
    println!(
        "task {}: {} ({}), {} actions, {} evaluation(s)",
        status.id,
        status.state.as_str(),
        status.reason.as_deref().unwrap_or("-"),
        status.actions,
        status.evaluations
    );
    // The receipts: what was sent, each committed before it was sent; an operation whose
    // outcome is unknown is never sent again.
    for r in &receipts {
        println!(
            "receipt of request {}: {} ({})",
            r.request,
            r.state,
            r.reason.as_deref().unwrap_or("-")
        );
        for o in &r.operations {
            println!("  {}  {:<12} {}", o.operation_id, o.tool, o.status);
        }
    }
    if status.state != TaskState::Completed {
        not_done(format!(
            "the task did not complete: {} ({})",
            status.state.as_str(),
            status.reason.as_deref().unwrap_or("-")
        ))?;
    }
    Ok(true)
}

/// 8. A browser as a paired device as a paired device: the reference worker connects it to the gateway's
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

//! The reference device worker end to end (issue 7 + 8, R-DEV-CHAN, R-DEV-TOOLS, R-DEV-CAPS,
//! R-DEV-SHOT, R-BRW-UNTRUSTED): a gateway pairs a device, the worker (in process, and the
//! `jevgate-worker` binary) connects with its token over a real loopback WebSocket, and agents
//! drive a real headless Chromium on fixture pages through `gw.call_tool`. The fixture server
//! counts beacons, so every click is proven to have happened exactly once.

mod support;

use jevgate::browser::BrowserTools;
use jevgate::device::{
    ChannelHandle, ChannelOptions, ChannelTls, DeviceToken, DeviceWorker, ToolCall, ToolExecutor,
    ToolResult, WorkerFailure, WorkerOptions,
};
use jevgate::lease::ControlCaller;
use jevgate::untrusted::UNTRUSTED_NOTICE;
use jevgate::CancelToken;
use jevgate::Gateway;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use support::{conformance, shared_browser, Closing, Server};

fn gateway() -> (tempfile::TempDir, Gateway, ChannelHandle) {
    let t = support::gateway::builder().channel().build();
    (t.dir, t.gw, t.channel.unwrap())
}

fn pair(gw: &Gateway, owner: &str) -> (String, DeviceToken) {
    let p = support::gateway::pair(gw, owner, &format!("{owner}-install"));
    (p.device, p.token)
}

fn call(gw: &Gateway, tool: &str, args: Value) -> ToolResult {
    gw.call_tool(&ToolCall::new("alice", "conv-1", tool, args))
}

/// The page-derived data of a successful answer (inside the one untrusted envelope).
fn data(r: &ToolResult) -> Value {
    let v = r.result().unwrap_or_else(|| panic!("failed: {r:?}"));
    assert_eq!(v["untrustedContent"]["notice"], UNTRUSTED_NOTICE);
    v["untrustedContent"]["data"].clone()
}

fn find_ref(gw: &Gateway, query: &str) -> String {
    let found = data(&call(gw, "browser_find", json!({ "query": query })));
    found["matches"][0]["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("no match for {query}: {found}"))
        .to_string()
}

// R-DEV-TOOLS end to end: every tool through the channel on a real Chromium — the one
// conformance suite every device runs (tests/support/conformance.rs; the extension runs it in
// tests/extension_conformance.rs).
#[test]
fn r_dev_tools_every_tool_through_the_reference_worker_on_a_real_browser() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    let (_dir, gw, channel) = gateway();
    let (device, token) = pair(&gw, "alice");
    let worker = DeviceWorker::connect(
        WorkerOptions::new(channel.url(), token),
        Arc::new(BrowserTools::new(Arc::new(tab.clone()))),
    )
    .unwrap();
    assert_eq!(worker.device_id(), device);
    assert!(gw.devices("alice").unwrap()[0].online);

    let dev = conformance::Device {
        gw: &gw,
        owner: "alice".into(),
        conversation: "conv-1".into(),
        device: device.clone(),
    };
    let transcript = conformance::every_tool(&dev, &server);
    assert!(transcript.len() >= 25, "{}", transcript.len());

    // Unpairing closes the worker's channel: it ends, and the device is gone.
    gw.unpair("alice", &device).unwrap();
    let exit = worker.wait_timeout(Duration::from_secs(5)).expect("ended");
    assert_eq!(exit.close_code, Some(1008));
    assert_eq!(exit.reason, "DEVICE_UNPAIRED");
    assert!(worker.commands_served() >= 20);
    tab.close().unwrap();
    gw.close();
}

/// An executor that blocks until its command is cancelled, then reports it.
struct Blocking {
    started: mpsc::Sender<()>,
    saw_cancel: Arc<AtomicBool>,
}

impl ToolExecutor for Blocking {
    fn execute(
        &self,
        _tool: &str,
        _args: &Value,
        _deadline: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        let _ = self.started.send(());
        let (tx, rx) = mpsc::channel();
        let _hook = cancel.on_cancel(move || {
            let _ = tx.send(());
        });
        if rx.recv_timeout(Duration::from_secs(10)).is_ok() {
            self.saw_cancel.store(true, Ordering::SeqCst);
            return Err(WorkerFailure::new("cancelled", "stopped"));
        }
        Ok(json!({"text": "finished"}))
    }
}

// R-LEASE-3 / R-DEV-FAIL through the worker: the person's take-back reaches the worker as a
// cancel frame that fires the running command's token.
#[test]
fn r_dev_fail_take_back_reaches_the_worker_as_a_cancel() {
    let (_dir, gw, channel) = gateway();
    let (device, token) = pair(&gw, "alice");
    let (started_tx, started) = mpsc::channel();
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let worker = DeviceWorker::connect(
        WorkerOptions::new(channel.url(), token),
        Arc::new(Blocking {
            started: started_tx,
            saw_cancel: saw_cancel.clone(),
        }),
    )
    .unwrap();
    let gw = Arc::new(gw);
    let caller = {
        let gw = gw.clone();
        std::thread::spawn(move || call(&gw, "browser_get_text", json!({})))
    };
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(gw
        .leases()
        .take_back(&device, &ControlCaller::owner("alice"))
        .unwrap());
    let answer = caller.join().unwrap();
    assert_eq!(answer.error_code(), Some("cancelled"));
    // The worker's executor saw the cancel (bounded wait, no sleep-based assertion).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !saw_cancel.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(saw_cancel.load(Ordering::SeqCst));
    worker.close();
    assert!(!worker.is_running());
    gw.close();
}

/// Echoes its tool and arguments.
struct Echo;

impl ToolExecutor for Echo {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        Ok(json!({"tool": tool, "args": args}))
    }
}

// R-DEV-CHAN, R-DEV-VER from the worker's side: refusals are clear errors, TLS works, the
// gateway closing ends the worker with 1001.
#[test]
fn r_dev_chan_worker_refusals_tls_and_gateway_shutdown() {
    let (_dir, gw, channel) = gateway();
    let (_device, token) = pair(&gw, "alice");
    let refused = |options: WorkerOptions| {
        let e = DeviceWorker::connect(options, Arc::new(Echo)).unwrap_err();
        assert_eq!(e.code(), "DEVICE_CHANNEL_IO");
        e.to_string()
    };
    let mut old = WorkerOptions::new(channel.url(), token.clone());
    old.protocol = 1;
    assert!(refused(old).contains("1008 UPGRADE_REQUIRED"));
    let wrong = WorkerOptions::new(channel.url(), DeviceToken::new("not-the-token"));
    let message = refused(wrong);
    assert!(message.contains("AUTHENTICATION_FAILED"), "{message}");
    assert!(!message.contains("not-the-token"));
    let path = channel
        .url()
        .replace("/v1/device-worker/channel", "/elsewhere");
    assert!(refused(WorkerOptions::new(path, token.clone())).contains("HTTP 404"));
    let bad = DeviceWorker::connect(
        WorkerOptions::new("http://x/", token.clone()),
        Arc::new(Echo),
    );
    assert_eq!(bad.unwrap_err().code(), "INVALID_ARGUMENT");

    // TLS with a private root.
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let tls = ChannelTls::from_pem(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let secure = gw
        .serve_channel(ChannelOptions::new("127.0.0.1:0").with_tls(tls))
        .unwrap();
    let url = format!(
        "wss://localhost:{}/v1/device-worker/channel",
        secure.local_addr().port()
    );
    // The public roots do not trust a self-signed gateway.
    assert!(refused(WorkerOptions::new(url.clone(), token.clone())).contains("not trusted"));
    let mut trusted = WorkerOptions::new(url, token);
    trusted.tls_roots_pem = Some(cert.cert.pem().into_bytes());
    let worker = DeviceWorker::connect(trusted, Arc::new(Echo)).unwrap();
    let r = call(&gw, "browser_find", json!({"query": "over tls"}));
    assert_eq!(data(&r)["args"]["query"], "over tls");
    assert_eq!(data(&r)["tool"], "browser_find");

    gw.close();
    let exit = worker.wait_timeout(Duration::from_secs(5)).expect("ended");
    assert_eq!(exit.close_code, Some(1001));
}

/// Starts the `jevgate-worker` binary with `flag` (stdin piped), waits for its `ready` line and
/// returns it with its stderr and its Chromium (the process group led by its child).
fn spawn_worker(
    url: &str,
    token: &DeviceToken,
    flag: &str,
) -> (
    std::process::Child,
    BufReader<std::process::ChildStderr>,
    Vec<u32>,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate-worker"))
        .args(["--url", url, flag])
        .env("JEVGATE_DEVICE_TOKEN", token.expose())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("jevgate-worker: ready device="), "{line}");
    assert!(!line.contains(token.expose()));
    let chromium = support::children_of(child.id());
    assert!(!chromium.is_empty(), "the worker started no browser");
    (child, stderr, chromium)
}

// Issue 8 item 4: the `jevgate-worker` binary pairs, serves a fixture page, and on stdin EOF
// closes its Chromium — no process left behind.
#[test]
fn the_jevgate_worker_binary_serves_a_real_browser_and_leaves_no_chromium() {
    let server = Server::start();
    let (_dir, gw, channel) = gateway();
    let (_device, token) = pair(&gw, "alice");
    let (mut child, mut stderr, chromium) =
        spawn_worker(&channel.url(), &token, "--exit-on-stdin-eof");

    let nav = call(
        &gw,
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    );
    assert!(nav.is_success(), "{nav:?}");
    let press = find_ref(&gw, "Press me");
    let click = call(
        &gw,
        "browser_computer",
        json!({"action": "click", "ref": press}),
    );
    assert!(click.is_success(), "{click:?}");
    assert_eq!(server.wait_count("go", 1), 1);

    drop(child.stdin.take());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(status.success(), "{status:?} {rest}");
    for pid in chromium {
        let left = support::wait_group_gone(pid, Duration::from_secs(5));
        assert!(left.is_empty(), "Chromium left behind: {left:?}");
    }
    let after = call(&gw, "browser_get_text", json!({}));
    assert_eq!(after.error_code(), Some("DEVICE_OFFLINE"));
    gw.close();
}

// `--reconnect`: the gateway's channel going away (1001) and coming back on the same address
// is reconnected to; an unpair (1008) is final and ends the worker with status 1.
#[test]
fn the_jevgate_worker_binary_reconnects_after_a_gateway_restart_but_not_after_an_unpair() {
    let server = Server::start();
    let (_dir, gw, channel) = gateway();
    let (device, token) = pair(&gw, "alice");
    let addr = channel.local_addr();
    let (mut child, mut stderr, chromium) = spawn_worker(&channel.url(), &token, "--reconnect");
    let mut line = String::new();

    // The channel goes away (1001) and comes back on the same address.
    channel.stop();
    let again = gw
        .serve_channel(ChannelOptions::new(addr.to_string()))
        .unwrap();
    assert_eq!(again.local_addr(), addr);
    let mut lines = Vec::new();
    for _ in 0..2 {
        line.clear();
        stderr.read_line(&mut line).unwrap();
        lines.push(line.clone());
    }
    assert!(lines[0].contains("channel closed (1001"), "{lines:?}");
    assert!(lines[1].starts_with("jevgate-worker: ready"), "{lines:?}");
    let nav = call(
        &gw,
        "browser_navigate",
        json!({"url": server.url("/p/buttons")}),
    );
    assert!(nav.is_success(), "{nav:?}");

    // Unpaired: final.
    gw.unpair("alice", &device).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    for pid in chromium {
        let left = support::wait_group_gone(pid, Duration::from_secs(5));
        assert!(left.is_empty(), "Chromium left behind: {left:?}");
    }
    gw.close();
}

// Usage errors never echo a token and exit 2.
#[test]
fn the_jevgate_worker_binary_refuses_bad_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_jevgate-worker"))
        .args([
            "--url",
            "ws://127.0.0.1:9/v1/device-worker/channel",
            "sekrit-token",
        ])
        .env_remove("JEVGATE_DEVICE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("never given on the command line"), "{err}");
    assert!(!err.contains("sekrit-token"));
    let out = Command::new(env!("CARGO_BIN_EXE_jevgate-worker"))
        .args(["--url", "ws://127.0.0.1:9/v1/device-worker/channel"])
        .env_remove("JEVGATE_DEVICE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JEVGATE_DEVICE_TOKEN"));
}

/// Reads the worker's stderr until its next `ready` line (bounded by the worker's own connect
/// attempts; the pipe ends if it exits).
fn wait_ready(stderr: &mut BufReader<std::process::ChildStderr>) {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the worker ended");
        if line.starts_with("jevgate-worker: ready") {
            return;
        }
    }
}

// Issue 21 item 6 and its decision "operation records": the gateway asks a paired worker what
// became of an operation and the worker answers from its record — after the gateway host is
// restarted (the worker lives) the click is still `executed`; after the worker process is
// killed and started again its record died with it and the answer is `unknown`. Never a
// replay: the fixture counts one click throughout.
#[test]
fn issue21_a_paired_worker_answers_operation_status_from_its_record_until_it_dies() {
    use jevgate::browser::{
        BrowserBackend, ClickArgs, NavigateArgs, OperationOutcome, OperationState,
    };
    let server = Server::start();
    let t = support::gateway::builder().channel().build();
    let (dir, gw, channel) = (t.dir, t.gw, t.channel.unwrap());
    let addr = channel.local_addr();
    let (device, token) = pair(&gw, "alice");
    let (mut child, mut stderr, chromium) = spawn_worker(&channel.url(), &token, "--reconnect");

    let target = gw.device_target("alice", "conv-1", &device).unwrap();
    let pid = std::process::id();
    target
        .tab_navigate(NavigateArgs {
            operation_id: format!("nav-{pid}"),
            url: server.url("/p/buttons"),
        })
        .unwrap();
    let obs = target.observe().unwrap();
    let press = obs.controls.iter().find(|c| c.name == "Press me").unwrap();
    let id = format!("press-{pid}");
    target
        .page_click(ClickArgs {
            operation_id: id.clone(),
            generation: obs.generation,
            reference: press.reference.clone(),
        })
        .unwrap();
    assert_eq!(server.wait_count("go", 1), 1);
    let r = target.operation_status(&id).unwrap();
    assert_eq!(
        (r.status, r.outcome),
        (OperationState::Executed, OperationOutcome::Completed)
    );
    assert_eq!(r.tool.as_deref(), Some("page_click"));
    assert!(r.at_ms.is_some());
    assert_eq!(
        target.operation_status("never-sent").unwrap().status,
        OperationState::Unknown
    );

    // The gateway host goes away and comes back on the same data and address; the worker
    // lives and reconnects, and its record still says executed.
    drop(target);
    channel.stop();
    gw.close();
    drop(gw);
    let gw = Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    let channel = gw
        .serve_channel(ChannelOptions::new(addr.to_string()))
        .unwrap();
    wait_ready(&mut stderr);
    let target = gw.device_target("alice", "conv-1", &device).unwrap();
    let r = target.operation_status(&id).unwrap();
    assert_eq!(r.status, OperationState::Executed, "{r:?}");

    // The worker process is killed (no chance to close anything) and started again: a new
    // process, a new browser, an empty record.
    child.kill().unwrap();
    child.wait().unwrap();
    for pid in chromium {
        let left = support::wait_group_gone(pid, Duration::from_secs(10));
        assert!(left.is_empty(), "Chromium left behind: {left:?}");
    }
    let (mut child, _stderr, chromium) =
        spawn_worker(&channel.url(), &token, "--exit-on-stdin-eof");
    let r = target.operation_status(&id).unwrap();
    assert_eq!(
        (r.status, r.outcome),
        (OperationState::Unknown, OperationOutcome::NotRecorded)
    );
    assert_eq!(server.wait_count("go", 1), 1, "nothing was replayed");

    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    for pid in chromium {
        let left = support::wait_group_gone(pid, Duration::from_secs(5));
        assert!(left.is_empty(), "Chromium left behind: {left:?}");
    }
    drop(channel);
    gw.close();
}

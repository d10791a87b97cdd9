//! Devices connected to another process of a fleet (issue 23 item 4; R-DEV-CHAN, R-DEV-FAIL,
//! R-LEASE-1..3 across processes): a worker connects to gateway A; an agent's tool call on
//! gateway B (same PostgreSQL store) is carried to A through a command row and NOTIFY, under
//! B's lease, caps and deadline; a take-back from A cancels it; a holder that dies after taking
//! the command leaves the outcome unknown and nothing is re-sent; a device connected nowhere is
//! `DEVICE_OFFLINE`.
//!
//! Needs the cargo feature `postgres` and a throw-away cluster in `JEVGATE_PG_URL` (see
//! `tests/fleet_leases.rs`); skipped with the reason printed otherwise (a failure under
//! `JEVGATE_REQUIRE_PG=1`). The holder that is killed is this test binary run again as a child
//! with `JEVGATE_FLEET_DEVICE_CHILD` set (the `child_role` test does nothing without it).

mod support;

use jevgate::device::{ToolCall, ToolExecutor, WorkerFailure};
use jevgate::lease::ControlCaller;
use jevgate::CancelToken;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use support::gateway::{builder, Counting, Paired};
use support::pg::{expect_line, fresh_db, lines_of, open_gateway, pg_config, pg_url, psql};

/// A worker executor that reports each command reaching it and then waits for its cancel (or
/// `deadline`), answering `cancelled` / `timed_out` as a real worker does.
struct Blocking {
    reached: mpsc::Sender<String>,
    cancelled: Arc<AtomicUsize>,
}

impl ToolExecutor for Blocking {
    fn execute(
        &self,
        tool: &str,
        _args: &Value,
        deadline: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        let _ = self.reached.send(tool.to_string());
        let end = Instant::now() + deadline;
        while Instant::now() < end {
            if cancel.is_cancelled() {
                self.cancelled.fetch_add(1, Ordering::SeqCst);
                return Err(WorkerFailure::new("cancelled", "cancelled"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(WorkerFailure::new("timed_out", "timed out"))
    }
}

fn call(device: &str, tool: &str, args: Value) -> ToolCall {
    ToolCall::new("alice", "conv-1", tool, args).on_device(device)
}

/// Bounded wait until `f` holds.
fn wait_until(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process id the fleet knows `device`'s connection by (`None`: connected nowhere).
fn holder_row(url: &str, device: &str) -> String {
    psql(
        url,
        &format!(
            "SELECT coalesce(process_id, 'none') FROM jevgate_device_connections WHERE device_id = '{device}'"
        ),
    )
}

/// The child role: gateway A holding a worker's connection whose executor blocks and prints
/// `REACHED <tool>` for each command, until it is killed.
#[test]
fn child_role() {
    let Ok(role) = std::env::var("JEVGATE_FLEET_DEVICE_CHILD") else {
        return;
    };
    assert_eq!(role, "holder");
    let url_file = PathBuf::from(std::env::var_os("JEVGATE_FLEET_URL_FILE").unwrap());
    let t = builder().config(pg_config(&url_file)).channel().build();
    let paired = t.pair("alice", "child-laptop");
    let (tx, rx) = mpsc::channel();
    let _worker = t.device_worker(
        &paired,
        Arc::new(Blocking {
            reached: tx,
            cancelled: Arc::new(AtomicUsize::new(0)),
        }),
    );
    let say = |line: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    say(&format!("DEVICE {}", paired.device));
    for tool in rx {
        say(&format!("REACHED {tool}"));
    }
    loop {
        std::thread::park();
    }
}

// Issue 23 item 4: a call on B reaches the worker connected to A, once; B holds the lease
// (A's conversation is refused), B's caps and untrusted envelope apply; once the worker is gone
// the call on B is DEVICE_OFFLINE and nothing reaches anything.
#[test]
fn r_dev_chan_a_call_on_one_gateway_runs_on_a_device_connected_to_another() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let (b, _dir) = open_gateway(&db.url_file);
    let paired: Paired = a.pair("alice", "laptop");
    let long = "x".repeat(200_000);
    let (executor, reached) = Counting::new(json!({ "text": long }));
    let worker = a.device_worker(&paired, executor);
    wait_until("A records the connection", || {
        !holder_row(&db.url, &paired.device).contains("none")
            && !holder_row(&db.url, &paired.device).is_empty()
    });

    // B lists the device, marked as connected to another process; A lists it as its own.
    let listed = b.devices("alice").unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].id, paired.device);
    assert!(
        listed[0].online && listed[0].connected_elsewhere,
        "{listed:?}"
    );
    let here = a.gw.devices("alice").unwrap();
    assert!(here[0].online && !here[0].connected_elsewhere, "{here:?}");
    assert!(b.devices("mallory").unwrap().is_empty());

    let answer = b.call_tool(&call(&paired.device, "browser_get_text", json!({})));
    assert!(answer.is_success(), "{:?}", answer.to_json());
    assert_eq!(reached.load(Ordering::SeqCst), 1, "sent once");
    let result = answer.result().unwrap();
    // B's caps and envelope: the page text is untrusted and cut to B's cap.
    assert_eq!(result["truncated"], true, "{result}");
    let text = result["untrustedContent"]["data"]
        .as_str()
        .or_else(|| result["untrustedContent"]["data"]["text"].as_str())
        .unwrap_or_default();
    assert!(text.len() < long.len());
    assert!(result["untrustedContent"]["notice"].is_string());

    // The lease was taken on B by conv-1: A's other conversation is refused, and B's listing
    // of alice's devices through the fleet is not needed for the call.
    let e = a.gw.leases().acquire(&paired.device, "conv-2").unwrap_err();
    assert_eq!(e.code(), "DEVICE_CONTROL_ELSEWHERE");
    let refused = b.call_tool(
        &ToolCall::new("alice", "conv-2", "browser_get_text", json!({})).on_device(&paired.device),
    );
    assert_eq!(refused.error_code(), Some("DEVICE_CONTROL_ELSEWHERE"));
    // Another owner cannot reach it through the fleet either.
    let stranger = b.call_tool(
        &ToolCall::new("mallory", "conv-9", "browser_get_text", json!({}))
            .on_device(&paired.device),
    );
    assert_eq!(stranger.error_code(), Some("DEVICE_NOT_PAIRED"));
    assert_eq!(reached.load(Ordering::SeqCst), 1);

    // Connected nowhere: the offline error, nothing sent.
    worker.close();
    a.wait_online(&paired, false);
    wait_until("A records the disconnection", || {
        holder_row(&db.url, &paired.device).contains("none")
    });
    let offline = b.call_tool(&call(&paired.device, "browser_get_text", json!({})));
    assert_eq!(offline.error_code(), Some("DEVICE_OFFLINE"));
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    // Unpaired on A: the fleet forgets it, and B answers as for any unknown device.
    a.gw.unpair("alice", &paired.device).unwrap();
    wait_until("A forgets the device in the store", || {
        holder_row(&db.url, &paired.device).is_empty()
    });
    let unknown = b.call_tool(&call(&paired.device, "browser_get_text", json!({})));
    assert_eq!(unknown.error_code(), Some("DEVICE_NOT_PAIRED"));
    b.close();
}

// R-LEASE-3 across processes: the person takes the device back on A while B's command runs on
// A's worker; the command is cancelled there and B answers `cancelled`, within a few seconds.
#[test]
fn r_lease_3_a_take_back_on_the_holder_cancels_the_command_another_gateway_sent() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let (b, _dir) = open_gateway(&db.url_file);
    let paired = a.pair("alice", "laptop");
    let (tx, rx) = mpsc::channel();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let _worker = a.device_worker(
        &paired,
        Arc::new(Blocking {
            reached: tx,
            cancelled: Arc::clone(&cancelled),
        }),
    );
    wait_until("A records the connection", || {
        let row = holder_row(&db.url, &paired.device);
        !row.is_empty() && !row.contains("none")
    });
    let b2 = b.clone();
    let device = paired.device.clone();
    let running = std::thread::spawn(move || {
        b2.call_tool(&call(
            &device,
            "browser_computer",
            json!({"action": "click", "ref": "e1"}),
        ))
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(15)).unwrap(),
        "browser_computer"
    );
    let taken = Instant::now();
    assert!(a
        .gw
        .leases()
        .take_back(&paired.device, &ControlCaller::owner("alice"))
        .unwrap());
    let answer = running.join().unwrap();
    assert_eq!(
        answer.error_code(),
        Some("cancelled"),
        "{:?}",
        answer.to_json()
    );
    assert!(
        taken.elapsed() < Duration::from_secs(5),
        "{:?}",
        taken.elapsed()
    );
    wait_until("the worker's command was cancelled", || {
        cancelled.load(Ordering::SeqCst) == 1
    });
    assert!(rx.try_recv().is_err(), "never re-sent");
    let state = psql(&db.url, "SELECT state FROM jevgate_remote_commands");
    assert_eq!(state.trim(), "cancelled");
    b.close();
}

// Issue 23 item 4: the holder process is SIGKILLed after it took B's command and handed it to
// the worker; B reports the outcome unknown (never offline, never a success) once the holder's
// liveness row is dead on the database clock, and the command is not re-sent.
#[test]
fn r_dev_fail_a_holder_killed_mid_call_leaves_the_outcome_unknown_and_nothing_replayed() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (b, _dir) = open_gateway(&db.url_file);
    let mut child = spawn_holder(&db.url_file);
    let lines = lines_of(&mut child.0);
    let device = expect_line(&lines, "DEVICE", Duration::from_secs(30));
    wait_until("the child records the connection", || {
        let row = holder_row(&db.url, &device);
        !row.is_empty() && !row.contains("none")
    });
    let b2 = b.clone();
    let d = device.clone();
    let running = std::thread::spawn(move || {
        b2.call_tool(&call(
            &d,
            "browser_computer",
            json!({"action": "click", "ref": "e1"}),
        ))
    });
    expect_line(&lines, "REACHED browser_computer", Duration::from_secs(30));
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // Dead after 10 s of database time: B's view of the clock moves on.
    jevgate::unstable::advance_store_clock_ms(b.leases(), 11_000);
    let answer = running.join().unwrap();
    assert_eq!(
        answer.error_code(),
        Some("OUTCOME_UNKNOWN"),
        "{:?}",
        answer.to_json()
    );
    let rows = psql(
        &db.url,
        "SELECT count(*), min(state) FROM jevgate_remote_commands",
    );
    assert_eq!(rows.trim(), "1|cancelled", "one row, never re-queued");
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(300)) {
        assert!(
            !line.contains("REACHED"),
            "nothing more reached the holder: {line}"
        );
    }
    // And the device is connected nowhere alive now: offline, not sent.
    let offline = b.call_tool(
        &ToolCall::new("alice", "conv-1", "browser_get_text", json!({})).on_device(&device),
    );
    assert_eq!(offline.error_code(), Some("DEVICE_OFFLINE"));
    assert_eq!(
        psql(&db.url, "SELECT count(*) FROM jevgate_remote_commands").trim(),
        "1"
    );
    // The cleanup: the dead holder's claim on the connection goes at once (the row stays, the
    // device is known), its cancelled command row once it ended more than 10 minutes ago.
    let prune = || {
        jevgate::unstable::prune_dead_device_rows(&b)
            .unwrap()
            .unwrap()
    };
    assert_eq!(prune(), (0, 1));
    assert_eq!(holder_row(&db.url, &device).trim(), "none");
    jevgate::unstable::advance_store_clock_ms(b.leases(), 11 * 60_000);
    assert_eq!(prune(), (1, 0));
    assert_eq!(
        psql(&db.url, "SELECT count(*) FROM jevgate_remote_commands").trim(),
        "0"
    );
    assert_eq!(prune(), (0, 0), "nothing more");
    b.close();
}

/// A worker executor keeping an operation log as the reference worker does: a click answers
/// for its operation id and is recorded executed; `operation_status` reads the record back.
struct OpLog {
    seen: Arc<parking_lot::Mutex<Vec<(String, String)>>>,
}

impl ToolExecutor for OpLog {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        let op = args["operationId"].as_str().unwrap_or("").to_string();
        let mut seen = self.seen.lock();
        match tool {
            "observe" => {
                seen.push((tool.to_string(), op));
                Ok(json!({"generation": 7, "url": "about:blank", "title": "Fleet"}))
            }
            "page_click" => {
                seen.push((tool.to_string(), op.clone()));
                Ok(json!({"operationId": op, "tool": "page_click", "generationBefore": 7}))
            }
            "operation_status" => {
                let ran = seen.iter().any(|(t, o)| t == "page_click" && *o == op);
                seen.push((tool.to_string(), op.clone()));
                Ok(if ran {
                    json!({"operationId": op, "status": "executed", "outcome": "completed"})
                } else {
                    json!({"operationId": op, "status": "unknown", "outcome": "unknown"})
                })
            }
            _ => Err(WorkerFailure::new("execution_failed", "not served here")),
        }
    }
}

// Issue 23 item 4 (R-TSK, R-TSK-RCPT, R-LEASE-1): a task's device target on gateway B drives a
// worker connected to gateway A — every primitive carried once with its operation id, B holding
// the control lease (A's own conversation is refused), `operation_status` read back through A
// without a lease, and a device connected nowhere is DEVICE_OFFLINE, not sent.
#[test]
fn r_tsk_a_task_on_one_gateway_drives_a_device_connected_to_another() {
    use jevgate::browser::{BrowserBackend, ClickArgs, OperationState};
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let (b, _dir) = open_gateway(&db.url_file);
    let paired: Paired = a.pair("alice", "laptop");
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let worker = a.device_worker(
        &paired,
        Arc::new(OpLog {
            seen: Arc::clone(&seen),
        }),
    );
    wait_until("A records the connection", || {
        let row = holder_row(&db.url, &paired.device);
        !row.is_empty() && !row.contains("none")
    });

    let target = b.device_target("alice", "conv-1", &paired.device).unwrap();
    let observed = target.observe().unwrap();
    assert_eq!(observed.generation, 7);
    assert_eq!(b.leases().holder(&paired.device).as_deref(), Some("conv-1"));
    // The lease is B's, fleet-wide: A's conversation is refused before anything is sent.
    assert_eq!(
        a.gw.device_target("alice", "conv-2", &paired.device)
            .unwrap()
            .observe()
            .unwrap_err()
            .code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    let op = format!("fleet-click-{}", std::process::id());
    let action = target
        .page_click(ClickArgs {
            operation_id: op.clone(),
            generation: 7,
            reference: "e1".into(),
        })
        .unwrap();
    assert_eq!(
        action.operation_id, op,
        "the operation id crossed the fleet"
    );
    // Reconciliation reads the holder's record by the same id, without the lease.
    let record = b
        .device_target("alice", "conv-9", &paired.device)
        .unwrap()
        .operation_status(&op)
        .unwrap();
    assert_eq!(record.status, OperationState::Executed);
    assert_eq!(
        seen.lock().clone(),
        vec![
            ("observe".to_string(), String::new()),
            ("page_click".to_string(), op.clone()),
            ("operation_status".to_string(), op.clone()),
        ],
        "each primitive reached the worker once"
    );
    // Not a device of mallory's, on either gateway.
    assert_eq!(
        b.device_target("mallory", "conv-1", &paired.device)
            .unwrap()
            .observe()
            .unwrap_err()
            .code(),
        "DEVICE_NOT_PAIRED"
    );
    drop(worker);
    wait_until("A records the disconnection", || {
        holder_row(&db.url, &paired.device).contains("none")
    });
    assert_eq!(target.observe().unwrap_err().code(), "DEVICE_OFFLINE");
    assert_eq!(seen.lock().len(), 3, "nothing more was sent");
    b.close();
}

// Issue 23 item 4 (R-TSK-RCPT): a task's click carried to a holder that is SIGKILLed after
// handing it to the worker stays "sent, unknown" (OUTCOME_UNKNOWN, never DEVICE_OFFLINE) and
// is not re-sent.
#[test]
fn r_tsk_rcpt_a_task_command_whose_holder_dies_stays_unknown() {
    use jevgate::browser::{BrowserBackend, ClickArgs};
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (b, _dir) = open_gateway(&db.url_file);
    let mut child = spawn_holder(&db.url_file);
    let lines = lines_of(&mut child.0);
    let device = expect_line(&lines, "DEVICE", Duration::from_secs(30));
    wait_until("the child records the connection", || {
        let row = holder_row(&db.url, &device);
        !row.is_empty() && !row.contains("none")
    });
    let target = b.device_target("alice", "conv-1", &device).unwrap();
    let running = std::thread::spawn(move || {
        target.page_click(ClickArgs {
            operation_id: "fleet-unknown".into(),
            generation: 1,
            reference: "e1".into(),
        })
    });
    expect_line(&lines, "REACHED page_click", Duration::from_secs(30));
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    jevgate::unstable::advance_store_clock_ms(b.leases(), 11_000);
    let answer = running.join().unwrap();
    assert_eq!(answer.unwrap_err().code(), "OUTCOME_UNKNOWN");
    let rows = psql(
        &db.url,
        "SELECT count(*), min(state), min(tool) FROM jevgate_remote_commands",
    );
    assert_eq!(
        rows.trim(),
        "1|cancelled|page_click",
        "one row, never re-queued"
    );
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(300)) {
        assert!(
            !line.contains("REACHED"),
            "nothing more reached the holder: {line}"
        );
    }
    b.close();
}

/// A child process killed when dropped (a failing test leaves none behind).
struct Holder(std::process::Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_holder(url_file: &Path) -> Holder {
    Holder(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
            .env("JEVGATE_FLEET_DEVICE_CHILD", "holder")
            .env("JEVGATE_FLEET_URL_FILE", url_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

/// POSTs a pairing request with `code` to the channel at `addr`: the status and the JSON body.
fn post_pair(addr: std::net::SocketAddr, installation: &str, code: &str) -> (u16, Value) {
    use std::io::Read;
    let body = json!({
        "installationId": installation,
        "name": format!("Chrome on {installation}"),
        "browser": {"name": "Chrome", "version": "131.0"},
        "pairingCode": code,
    })
    .to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /devices/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

// R-DEV-PAIR across processes (issue 23): a code minted on A is redeemed through B's pairing
// route (the device is B's, for A's owner), once: a second redemption anywhere is the one
// `PAIRING_CODE_INVALID` answer; the store holds no code, only its keyed hash.
#[test]
fn r_dev_pair_a_code_minted_by_one_gateway_is_redeemed_once_by_another() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let b = builder().config(pg_config(&db.url_file)).channel().build();
    let code =
        a.gw.pairing_code("alice", Duration::from_secs(300))
            .unwrap();
    let text = code.expose().to_string();
    let stored = psql(
        &db.url,
        "SELECT encode(hash, 'hex'), owner FROM jevgate_pairing_codes",
    );
    assert!(stored.ends_with("|alice"), "{stored}");
    assert!(!stored.contains(&text.replace('-', "")), "never the code");

    let (status, paired) = post_pair(b.channel().local_addr(), "laptop", &text);
    assert_eq!(status, 200, "{paired}");
    let device = paired["deviceId"].as_str().unwrap().to_string();
    assert!(b
        .gw
        .devices("alice")
        .unwrap()
        .iter()
        .any(|d| d.id == device));
    for gw in [&a, &b] {
        let (status, answer) = post_pair(gw.channel().local_addr(), "other", &text);
        assert_eq!(status, 401);
        assert_eq!(answer["errorCode"], "PAIRING_CODE_INVALID");
    }
    assert_eq!(
        psql(&db.url, "SELECT count(*) FROM jevgate_pairing_codes"),
        "0"
    );
}

// Issue 23 item 4 with issue 22 item 5: an autopilot run on process B drives a device whose
// worker is connected to process A; the run's line (`Autopilot: <goal> — <step>`) reaches the
// worker's status frames through A as if the run were A's own, and its end clears it there.
#[test]
fn r_auto_a_runs_line_reaches_a_status_worker_connected_to_another_process() {
    use jevgate::browser::BrowserBackend;
    use tungstenite::Message;
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let (b, _dir) = open_gateway(&db.url_file);
    let paired = a.pair("alice", "laptop");
    let mut ws =
        support::worker::open(a.channel().local_addr(), support::worker::PATH, None).unwrap();
    let auth = json!({"type": "authenticate", "protocol": 2, "features": ["status"],
        "authorization": format!("Device {}", paired.token_text())});
    ws.send(Message::text(auth.to_string())).unwrap();
    wait_until("A records the connection", || {
        let row = holder_row(&db.url, &paired.device);
        !row.is_empty() && !row.contains("none")
    });
    // The autopilot line of the next status frame that carries one (bounded).
    let mut next_line = |want: &Value| -> Vec<Value> {
        let end = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while Instant::now() < end {
            match ws.read() {
                Ok(Message::Text(t)) => {
                    let frame: Value = serde_json::from_str(&t).unwrap();
                    if frame["type"] == "status" {
                        seen.push(frame["autopilot"].clone());
                        if &frame["autopilot"] == want {
                            return seen;
                        }
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("the worker's connection ended: {e}"),
            }
        }
        panic!("no status frame with {want}: saw {seen:?}");
    };
    let target = b.device_target("alice", "conv-1", &paired.device).unwrap();
    let line = "Autopilot: sign up — fill textbox \"Email\"";
    target.show_progress(Some(line));
    next_line(&json!(line));
    // A line longer than the status frame keeps is cut the same way as a local run's.
    let long = format!("Autopilot: {}", "ก".repeat(400));
    target.show_progress(Some(&long));
    let cut: String = long.chars().take(300).collect();
    next_line(&json!(cut));
    target.show_progress(None);
    next_line(&Value::Null);
}

/// A worker with `paired`'s token is refused by `gw`'s channel (the token authenticates no
/// device there).
fn refused(gw: &support::gateway::TestGateway, paired: &Paired) {
    let (executor, _) = Counting::new(json!({}));
    let err = jevgate::device::DeviceWorker::connect(
        jevgate::device::WorkerOptions::new(gw.channel().url(), paired.token.clone()),
        executor,
    )
    .map(|w| w.close())
    .unwrap_err();
    assert_eq!(err.code(), "DEVICE_CHANNEL_IO");
    assert!(err.to_string().contains("AUTHENTICATION_FAILED"), "{err}");
}

// R-DEV-PAIR across processes (issue 23): the registry is in the shared store, not in a data
// directory. A device paired on A authenticates to B (its WebSocket reached another process:
// a load balancer, A restarted) and serves B's calls; a re-pair on A keeps the device and ends
// the old token on every process; an unpair on B ends the token on A.
#[test]
fn r_dev_pair_a_device_paired_on_one_gateway_authenticates_to_another() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let b = builder().config(pg_config(&db.url_file)).channel().build();
    let paired = a.pair("alice", "laptop");
    let stored = psql(
        &db.url,
        "SELECT device_id, owner, length(token_hash) FROM devices",
    );
    assert_eq!(
        stored,
        format!("{}|alice|32", paired.device),
        "only the hash"
    );

    let (executor, reached) = Counting::new(json!({ "text": "hello" }));
    let worker = b.device_worker(&paired, executor);
    let listed = b.gw.devices("alice").unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(
        listed[0].online && !listed[0].connected_elsewhere,
        "{listed:?}"
    );
    assert_eq!(listed[0].last_protocol, Some(2), "{listed:?}");
    let answer =
        b.gw.call_tool(&call(&paired.device, "browser_get_text", json!({})));
    assert!(answer.is_success(), "{:?}", answer.to_json());
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    wait_until("A sees the device connected to B", || {
        a.gw.devices("alice")
            .unwrap()
            .iter()
            .any(|d| d.id == paired.device && d.online && d.connected_elsewhere)
    });
    worker.close();
    b.wait_online(&paired, false);

    // Re-pair on A: the same device, a new token; the old one is refused everywhere.
    let again = a.pair("alice", "laptop");
    assert_eq!(again.device, paired.device);
    assert_ne!(again.token_text(), paired.token_text());
    refused(&a, &paired);
    refused(&b, &paired);
    let (executor, _) = Counting::new(json!({}));
    b.device_worker(&again, executor).close();
    b.wait_online(&again, false);

    // Unpair on B: A refuses the token and lists nothing.
    b.gw.unpair("alice", &again.device).unwrap();
    refused(&a, &again);
    assert!(a.gw.devices("alice").unwrap().is_empty());
    assert_eq!(psql(&db.url, "SELECT count(*) FROM devices"), "0");
}

// R-DEV-PAIR, R-DEV-CHAN across processes (issue 23): an unpair or a re-pair on B ends the
// old token's open connection to A too — closed with 1008 `DEVICE_UNPAIRED` exactly as a local
// unpair closes it (tests/device_channel.rs `issue22_…`), learnt through the store's NOTIFY
// within the bounded wait of `read_close` — while the new token's connection to A stays and
// serves A's calls; once unpaired, a call for the device on A answers as for a device never
// paired.
#[test]
fn r_dev_pair_an_unpair_or_re_pair_on_one_gateway_closes_the_connection_another_holds() {
    use support::worker::{authenticate, open, read_close, PATH};
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let a = builder().config(pg_config(&db.url_file)).channel().build();
    let (b, _dir) = open_gateway(&db.url_file);
    let addr = a.channel().local_addr();
    let closed_on_a = |ws: &mut support::worker::Ws| {
        let closed = read_close(ws).expect("A closes the connection");
        assert_eq!(
            (closed.code, closed.reason.as_str()),
            (1008, "DEVICE_UNPAIRED")
        );
    };

    // Re-pair on B: the old token's connection to A closes.
    let first = a.pair("alice", "laptop");
    let mut ws = open(addr, PATH, None).unwrap();
    authenticate(&mut ws, &first.token_text(), Some(2)).unwrap();
    let again = support::gateway::pair(&b, "alice", "laptop");
    assert_eq!(again.device, first.device);
    closed_on_a(&mut ws);

    // The new token's connection to A stays and serves A's calls.
    let (executor, reached) = Counting::new(json!({ "text": "hello" }));
    let worker = a.device_worker(&again, executor);
    let answer =
        a.gw.call_tool(&call(&again.device, "browser_get_text", json!({})));
    assert!(answer.is_success(), "{:?}", answer.to_json());
    assert_eq!(reached.load(Ordering::SeqCst), 1);
    worker.close();
    a.wait_online(&again, false);

    // Unpair on B: the connection to A closes, and A answers as for an unknown device.
    let mut ws = open(addr, PATH, None).unwrap();
    authenticate(&mut ws, &again.token_text(), Some(2)).unwrap();
    b.unpair("alice", &again.device).unwrap();
    closed_on_a(&mut ws);
    let unknown =
        a.gw.call_tool(&call("dev_never_paired", "browser_get_text", json!({})))
            .to_json();
    assert_eq!(unknown["success"], false, "{unknown}");
    let answer =
        a.gw.call_tool(&call(&again.device, "browser_get_text", json!({})))
            .to_json();
    assert_eq!(answer["errorCode"], unknown["errorCode"], "{answer}");
    assert!(a.gw.devices("alice").unwrap().is_empty());
}

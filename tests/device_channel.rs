//! Devices over real WebSocket clients on loopback (SPEC §5): pairing, the channel, dispatch
//! with the control lease, and every cap at its edge. Test names cite the requirement ids.

mod support;

use jevgate::device::{
    ChannelHandle, ChannelOptions, ChannelTls, DeviceLimits, PairRequest, ToolCall, ToolResult,
};
use jevgate::lease::ControlCaller;
use jevgate::untrusted::UNTRUSTED_NOTICE;
use jevgate::Gateway;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::gateway::pair_request;
use support::worker::{self, echo, silent, wait_until, Cmd, Out, Worker};

fn gateway() -> (tempfile::TempDir, Gateway) {
    let t = support::gateway::builder().build();
    (t.dir, t.gw)
}

fn options() -> ChannelOptions {
    let mut o = support::gateway::channel_options();
    o.auth_timeout = Duration::from_secs(2);
    o
}

fn serve(gw: &Gateway) -> ChannelHandle {
    gw.serve_channel(options()).unwrap()
}

/// Pairs a browser for `owner` and returns (device id, token).
fn pair(gw: &Gateway, owner: &str, installation: &str) -> (String, String) {
    let p = support::gateway::pair(gw, owner, installation);
    (p.device.clone(), p.token_text())
}

fn call(gw: &Gateway, owner: &str, session: &str, tool: &str, args: Value) -> ToolResult {
    gw.call_tool(&ToolCall::new(owner, session, tool, args))
}

fn code(r: &ToolResult) -> &str {
    r.error_code().unwrap_or("ok")
}

fn data(r: &ToolResult) -> Value {
    let v = r.result().unwrap_or_else(|| panic!("failed: {r:?}"));
    assert_eq!(v["untrustedContent"]["notice"], UNTRUSTED_NOTICE);
    v["untrustedContent"]["data"].clone()
}

// ----- authentication and protocol (R-DEV-CHAN, R-DEV-VER) -----

#[test]
fn r_dev_chan_authenticates_with_the_first_frame_and_answers_ready() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (id, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(channel.local_addr(), &token, echo());
    assert_eq!(w.device_id, id);
    wait_until("online", || gw.devices("alice").unwrap()[0].online);
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_navigate",
        json!({"url": "https://example.com"}),
    );
    assert_eq!(data(&r)["args"]["url"], "https://example.com");
    assert_eq!(r.to_json()["success"], true);
    let cmd = &w.log.commands()[0];
    assert_eq!(cmd.tool, "browser_navigate");
    assert_eq!(cmd.deadline_ms, 60_000);
    gw.close();
}

#[test]
fn r_dev_chan_bad_token_and_non_authenticate_first_frame_are_closed_1008() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    pair(&gw, "alice", "i1");
    let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
    let closed = worker::authenticate(&mut ws, "jgd_not-a-token", Some(2)).unwrap_err();
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "AUTHENTICATION_FAILED")
    );

    let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
    ws.send(tungstenite::Message::text(
        r#"{"type":"result","id":"x","success":true}"#,
    ))
    .unwrap();
    let closed = worker::read_close(&mut ws).unwrap();
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "AUTHENTICATION_FAILED")
    );
    gw.close();
}

#[test]
fn r_dev_chan_no_first_frame_before_the_deadline_is_closed() {
    let (_d, gw) = gateway();
    let mut o = options();
    o.auth_timeout = Duration::from_millis(300);
    let channel = gw.serve_channel(o).unwrap();
    let started = Instant::now();
    let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
    let closed = worker::read_close(&mut ws).unwrap();
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "AUTHENTICATION_TIMEOUT")
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // A TCP client that never completes the handshake is dropped too, by the same deadline.
    let mut raw = std::net::TcpStream::connect(channel.local_addr()).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(raw.read(&mut buf).unwrap_or(0), 0);
    gw.close();
}

#[test]
fn r_dev_chan_wrong_path_is_404() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let err = worker::open(channel.local_addr(), "/v1/other", None).unwrap_err();
    match err {
        tungstenite::Error::Http(resp) => assert_eq!(resp.status().as_u16(), 404),
        other => panic!("expected 404, got {other:?}"),
    }
    // The right path still works afterwards.
    assert!(worker::open(channel.local_addr(), worker::PATH, None).is_ok());
    gw.close();
}

#[test]
fn r_dev_ver_protocol_1_and_missing_protocol_are_closed_upgrade_required() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (id, token) = pair(&gw, "alice", "i1");
    // Never authenticated yet: a plain browser.
    assert_eq!(gw.devices("alice").unwrap()[0].label, "browser");
    for protocol in [Some(1), None] {
        let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
        let closed = worker::authenticate(&mut ws, &token, protocol).unwrap_err();
        assert_eq!(
            (closed.code, closed.reason.as_str()),
            (1008, "UPGRADE_REQUIRED")
        );
        let device = gw.devices("alice").unwrap().remove(0);
        assert_eq!(
            device.label,
            "browser (extension out of date — update to use)"
        );
        assert!(!device.browser_tools && !device.online);
        // R-DEV-VER: refused with DEVICE_CAPABILITY_MISMATCH before anything is queued.
        let r = call(&gw, "alice", "s1", "browser_get_text", json!({}));
        assert_eq!(code(&r), "DEVICE_CAPABILITY_MISMATCH");
        let r = gw
            .call_tool(&ToolCall::new("alice", "s1", "browser_get_text", json!({})).on_device(&id));
        assert_eq!(code(&r), "DEVICE_CAPABILITY_MISMATCH");
    }
    // No lease was taken by the refused calls.
    assert_eq!(gw.leases().holder(&id), None);
    // Updating the extension (protocol 2) makes it a browser again.
    let w = Worker::start(channel.local_addr(), &token, echo());
    assert_eq!(gw.devices("alice").unwrap()[0].label, "browser");
    assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    drop(w);
    gw.close();
}

#[test]
fn r_dev_ver_shell_worker_is_accepted_without_protocol_but_gets_no_browser_tools() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let shell = gw
        .pair(
            "alice",
            &PairRequest {
                installation_id: "cli".into(),
                name: "laptop shell".into(),
                browser: None,
            },
        )
        .unwrap();
    let w = Worker::start_with(
        channel.local_addr(),
        shell.token.expose(),
        None,
        None,
        echo(),
    );
    assert_eq!(w.device_id, shell.device.id);
    let inventory = gw.devices("alice").unwrap();
    assert_eq!(inventory[0].label, "shell");
    assert!(inventory[0].online);
    // A shell is not a browser: no browser paired for selection, mismatch when named.
    assert_eq!(
        code(&call(&gw, "alice", "s1", "browser_get_text", json!({}))),
        "DEVICE_NOT_PAIRED"
    );
    let r = gw.call_tool(
        &ToolCall::new("alice", "s1", "browser_get_text", json!({})).on_device(&shell.device.id),
    );
    assert_eq!(code(&r), "DEVICE_CAPABILITY_MISMATCH");
    assert!(w.log.commands().is_empty());
    gw.close();
}

// ----- registry (R-DEV-PAIR) -----

#[test]
fn r_dev_pair_inventory_labels_online_state_and_unpair() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (a, token_a) = pair(&gw, "alice", "i1");
    let (b, _) = pair(&gw, "alice", "i2");
    let inv = gw.devices("alice").unwrap();
    assert_eq!(inv.len(), 2);
    assert!(inv
        .iter()
        .all(|d| d.label == "browser" && !d.online && d.browser_tools));
    let w = Worker::start(channel.local_addr(), &token_a, echo());
    let inv = gw.devices("alice").unwrap();
    assert!(inv.iter().find(|d| d.id == a).unwrap().online);
    assert!(!inv.iter().find(|d| d.id == b).unwrap().online);
    let json = serde_json::to_value(&inv[0]).unwrap();
    assert!(json.get("browserTools").is_some() && json.get("lastSeenAt").is_some());
    // Unpairing closes the live connection.
    gw.unpair("alice", &a).unwrap();
    wait_until("unpaired worker closed", || w.ended());
    assert_eq!(w.log.closed().unwrap().reason, "DEVICE_UNPAIRED");
    assert_eq!(
        gw.unpair("alice", &a).unwrap_err().code(),
        "DEVICE_NOT_PAIRED"
    );
    assert_eq!(gw.devices("alice").unwrap().len(), 1);
    gw.close();
}

#[test]
fn r_dev_pair_repairing_replaces_the_token_and_the_old_one_stops_working() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (id, old) = pair(&gw, "alice", "i1");
    let w = Worker::start(channel.local_addr(), &old, echo());
    let (id2, new) = pair(&gw, "alice", "i1");
    assert_eq!(id, id2);
    assert_ne!(old, new);
    assert!(!format!("{:?}", gw.pair("alice", &pair_request("i9")).unwrap()).contains("jgd_"));
    wait_until("old connection closed", || w.ended());
    let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
    let closed = worker::authenticate(&mut ws, &old, Some(2)).unwrap_err();
    assert_eq!(closed.reason, "AUTHENTICATION_FAILED");
    let w2 = Worker::start(channel.local_addr(), &new, echo());
    assert_eq!(w2.device_id, id);
    // The token is stored only hashed: after close, no file anywhere under the data directory
    // (the database, its `-wal`/`-shm`, artifacts…) holds either token's bytes.
    drop(w2);
    gw.close();
    let scanned = scan_files(_d.path(), &[old.as_bytes(), new.as_bytes()]);
    assert!(scanned > 0, "no file was read under the data directory");
}

/// Reads every file under `dir` (recursively) and fails if one contains any of `needles`;
/// returns how many files were read.
fn scan_files(dir: &std::path::Path, needles: &[&[u8]]) -> usize {
    let mut read = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read += scan_files(&path, needles);
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for needle in needles {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == *needle),
                "a token was found in {}",
                path.display()
            );
        }
        read += 1;
    }
    read
}

#[test]
fn r_dev_pair_two_owners_devices_are_isolated() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (a, token_a) = pair(&gw, "alice", "same-installation");
    let (b, token_b) = pair(&gw, "bob", "same-installation");
    assert_ne!(a, b);
    let _wa = Worker::start(channel.local_addr(), &token_a, echo());
    let wb = Worker::start(channel.local_addr(), &token_b, echo());
    assert_eq!(gw.devices("alice").unwrap().len(), 1);
    assert_eq!(gw.devices("bob").unwrap()[0].id, b);
    assert!(gw.devices("carol").unwrap().is_empty());
    // Alice naming Bob's device learns nothing: the same answer as an unknown id.
    let r =
        gw.call_tool(&ToolCall::new("alice", "s1", "browser_get_text", json!({})).on_device(&b));
    assert_eq!(code(&r), "DEVICE_NOT_PAIRED");
    let unknown = gw.call_tool(
        &ToolCall::new("alice", "s1", "browser_get_text", json!({})).on_device("dev_nope"),
    );
    assert_eq!(r, unknown);
    assert!(wb.log.commands().is_empty());
    assert_eq!(
        gw.unpair("alice", &b).unwrap_err().code(),
        "DEVICE_NOT_PAIRED"
    );
    // Control routes are the owner's only.
    assert_eq!(
        gw.leases()
            .take_back(&b, &ControlCaller::owner("alice"))
            .unwrap_err()
            .code(),
        "ACCESS_DENIED"
    );
    assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    gw.close();
}

// ----- dispatch (R-DEV-FAIL, R-LEASE) -----

#[test]
fn r_dev_fail_calls_that_cannot_be_attempted_answer_without_touching_the_browser() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let r = call(&gw, "alice", "s1", "browser_get_text", json!({}));
    assert_eq!(code(&r), "DEVICE_NOT_PAIRED");
    assert_eq!(r.to_json().as_object().unwrap().len(), 3);
    let (a, token_a) = pair(&gw, "alice", "i1");
    assert_eq!(
        code(&call(&gw, "alice", "s1", "browser_get_text", json!({}))),
        "DEVICE_OFFLINE"
    );
    let (b, _) = pair(&gw, "alice", "i2");
    assert_eq!(
        code(&call(&gw, "alice", "s1", "browser_get_text", json!({}))),
        "DEVICE_SELECTION_REQUIRED"
    );
    let w = Worker::start(channel.local_addr(), &token_a, echo());
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_get_text",
        json!({"deviceId": a}),
    );
    assert!(r.is_success(), "{r:?}");
    // deviceId travels in args or in the call, never to the worker.
    assert!(w.log.commands()[0].args.get("deviceId").is_none());
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_get_text",
        json!({"deviceId": b}),
    );
    assert_eq!(code(&r), "DEVICE_OFFLINE");
    // The lease is held elsewhere: another root session is refused without naming the holder.
    let r = call(
        &gw,
        "alice",
        "s2",
        "browser_get_text",
        json!({"deviceId": a}),
    );
    assert_eq!(code(&r), "DEVICE_CONTROL_ELSEWHERE");
    assert!(!r.to_json()["message"].as_str().unwrap().contains("s1"));
    assert_eq!(
        code(&call(&gw, "alice", "s1", "browser_nope", json!({}))),
        "UNKNOWN_TOOL"
    );
    assert_eq!(
        code(&call(
            &gw,
            "alice",
            "s1",
            "browser_navigate",
            json!({"url": "javascript:alert(1)", "deviceId": a})
        )),
        "INVALID_TOOL_ARGUMENTS"
    );
    assert_eq!(w.log.commands().len(), 1);
    gw.close();
}

#[test]
fn r_dev_fail_worker_failure_codes_pass_through() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let _w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| {
            let q = cmd.args["query"].as_str().unwrap_or("");
            match q {
                "weird" => vec![Out::Fail(cmd.id.clone(), "made_up_code", "x")],
                code => vec![Out::Fail(
                    cmd.id.clone(),
                    Box::leak(code.to_string().into_boxed_str()),
                    "the extension says so",
                )],
            }
        }),
    );
    for c in jevgate::device::WORKER_CODES {
        let r = call(&gw, "alice", "s1", "browser_find", json!({"query": c}));
        assert_eq!(
            r.to_json(),
            json!({"success": false, "errorCode": c, "message": "the extension says so"})
        );
    }
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_find",
        json!({"query": "weird"}),
    );
    assert_eq!(code(&r), "execution_failed");
    gw.close();
}

#[test]
fn r_dev_chan_commands_are_correlated_under_concurrency() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    const PER: usize = 4;
    // Each worker holds PER commands and answers them in reverse order.
    let reorder = || -> worker::Handler {
        let mut held: Vec<Cmd> = Vec::new();
        Box::new(move |cmd: &Cmd| {
            held.push(cmd.clone());
            if held.len() < PER {
                return Vec::new();
            }
            held.drain(..)
                .rev()
                .map(|c| Out::Ok(c.id.clone(), json!({"echo": c.args["query"]})))
                .collect()
        })
    };
    let mut workers = Vec::new();
    let mut targets = Vec::new();
    for (owner, inst, session) in [
        ("alice", "i1", "sa1"),
        ("alice", "i2", "sa2"),
        ("bob", "i1", "sb1"),
    ] {
        let (id, token) = pair(&gw, owner, inst);
        workers.push(Worker::start(channel.local_addr(), &token, reorder()));
        targets.push((owner, id, session));
    }
    let ok = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|scope| {
        for (owner, id, session) in &targets {
            for n in 0..PER {
                let (gw, ok) = (&gw, Arc::clone(&ok));
                scope.spawn(move || {
                    let query = format!("{id}/{session}/{n}");
                    let r = gw.call_tool(
                        &ToolCall::new(*owner, *session, "browser_find", json!({"query": query}))
                            .on_device(id),
                    );
                    assert_eq!(data(&r)["echo"], query.as_str());
                    ok.fetch_add(1, Ordering::SeqCst);
                });
            }
        }
    });
    assert_eq!(ok.load(Ordering::SeqCst), 3 * PER);
    for w in &workers {
        assert_eq!(w.log.commands().len(), PER);
    }
    gw.close();
}

#[test]
fn r_lease_3_take_back_cancels_the_in_flight_command_on_the_worker() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (id, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| {
            if cmd.tool == "browser_get_text" {
                Vec::new() // hangs until cancelled
            } else {
                vec![Out::Ok(cmd.id.clone(), json!({}))]
            }
        }),
    );
    std::thread::scope(|scope| {
        let running = scope.spawn(|| call(&gw, "alice", "s1", "browser_get_text", json!({})));
        wait_until("command reached the worker", || {
            !w.log.commands().is_empty()
        });
        assert!(gw
            .leases()
            .take_back(&id, &ControlCaller::owner("alice"))
            .unwrap());
        let r = running.join().unwrap();
        assert_eq!(code(&r), "cancelled");
    });
    let sent = w.log.commands()[0].id.clone();
    wait_until("cancel frame", || w.log.cancels() == vec![sent.clone()]);
    assert_eq!(
        code(&call(
            &gw,
            "alice",
            "s1",
            "browser_tabs",
            json!({"action": "list"})
        )),
        "DEVICE_CONTROL_REVOKED"
    );
    assert!(call(
        &gw,
        "alice",
        "s1",
        "browser_tabs",
        json!({"action": "list"})
    )
    .is_success());
    gw.close();
}

#[test]
fn r_dev_fail_worker_disconnect_mid_command_is_an_unknown_outcome_never_retried() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|_: &Cmd| vec![Out::Disconnect]),
    );
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_computer",
        json!({"action": "click", "ref": "ref_3"}),
    );
    assert_eq!(code(&r), "OUTCOME_UNKNOWN");
    assert_eq!(w.log.commands().len(), 1);
    wait_until("offline", || !gw.devices("alice").unwrap()[0].online);
    assert_eq!(
        code(&call(&gw, "alice", "s1", "browser_get_text", json!({}))),
        "DEVICE_OFFLINE"
    );
    assert_eq!(w.log.commands().len(), 1);
    gw.close();
}

#[test]
fn r_dev_caps_single_command_timeout_cancels_on_the_worker() {
    let (_d, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        command_timeout: Duration::from_millis(200),
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(channel.local_addr(), &token, silent());
    let started = Instant::now();
    let r = call(&gw, "alice", "s1", "browser_get_text", json!({}));
    assert_eq!(code(&r), "timed_out");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(w.log.commands()[0].deadline_ms, 200);
    let id = w.log.commands()[0].id.clone();
    wait_until("cancel after timeout", || {
        w.log.cancels() == vec![id.clone()]
    });
    gw.close();
}

// ----- caps (R-DEV-CAPS) -----

fn batch_of(n: usize) -> Value {
    json!({"actions": (0..n).map(|i| json!({"tool": "browser_find", "args": {"query": format!("q{i}")}})).collect::<Vec<_>>()})
}

#[test]
fn r_dev_caps_batch_of_10_runs_and_11_is_refused_before_anything_runs() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(channel.local_addr(), &token, echo());
    let r = call(&gw, "alice", "s1", "browser_batch", batch_of(11));
    assert_eq!(code(&r), "batch_cap_exceeded");
    assert!(w.log.commands().is_empty());
    let r = call(&gw, "alice", "s1", "browser_batch", batch_of(10));
    let v = r.result().unwrap();
    assert_eq!(v["completed"], 10);
    assert_eq!(v["stoppedEarly"], Value::Null);
    assert_eq!(
        v["actions"][9]["result"]["untrustedContent"]["data"]["args"]["query"],
        "q9"
    );
    let cmds = w.log.commands();
    assert_eq!(cmds.len(), 10);
    assert!(cmds.iter().all(|c| c.tool == "browser_find"));
    gw.close();
}

#[test]
fn r_dev_caps_batch_stops_past_its_time_budget_and_reports_the_rest_not_run() {
    let (_d, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        batch_time_budget: Duration::from_millis(150),
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| {
            vec![
                Out::Sleep(Duration::from_millis(100)),
                Out::Ok(cmd.id.clone(), json!({})),
            ]
        }),
    );
    let r = call(&gw, "alice", "s1", "browser_batch", batch_of(5));
    let v = r.result().unwrap();
    assert_eq!(v["stoppedEarly"], "time_limit");
    assert_eq!(v["completed"], 2);
    assert_eq!(v["notRun"], 3);
    let statuses: Vec<&str> = v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "not_run", "not_run", "not_run"]);
    assert_eq!(w.log.commands().len(), 2);
    gw.close();
}

#[test]
fn r_dev_caps_batch_stops_past_its_byte_budget() {
    let (_d, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        batch_byte_budget: 1000,
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    // Each result serializes to exactly 400 bytes: 400, 800, 1200 > 1000 → stop after the third.
    let w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| vec![Out::Ok(cmd.id.clone(), json!({"m": "x".repeat(392)}))]),
    );
    let r = call(&gw, "alice", "s1", "browser_batch", batch_of(5));
    let v = r.result().unwrap();
    assert_eq!(v["stoppedEarly"], "size_limit");
    assert_eq!(v["completed"], 3);
    assert_eq!(v["resultBytes"], 1200);
    assert_eq!(w.log.commands().len(), 3);
    // At the edge: 1000 bytes exactly does not stop.
    gw.set_device_limits(DeviceLimits {
        batch_byte_budget: 1200,
        ..Default::default()
    })
    .unwrap();
    let v = call(&gw, "alice", "s1", "browser_batch", batch_of(4))
        .result()
        .unwrap()
        .clone();
    assert_eq!(v["completed"], 4);
    assert_eq!(v["stoppedEarly"], "size_limit");
    gw.close();
}

#[test]
fn r_dev_caps_batch_stops_at_the_first_failure_and_at_its_overall_timeout() {
    let (_d, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        batch_timeout: Duration::from_millis(300),
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| match cmd.args["query"].as_str() {
            Some("q1") => vec![Out::Fail(cmd.id.clone(), "tab_unavailable", "tab closed")],
            Some("hang") => Vec::new(),
            _ => vec![Out::Ok(cmd.id.clone(), json!({}))],
        }),
    );
    let v = call(&gw, "alice", "s1", "browser_batch", batch_of(4))
        .result()
        .unwrap()
        .clone();
    assert_eq!(v["stoppedEarly"], "action_failed");
    assert_eq!(v["actions"][1]["errorCode"], "tab_unavailable");
    assert_eq!(v["notRun"], 2);
    assert_eq!(w.log.commands().len(), 2);
    let hang = json!({"actions": [{"tool": "browser_find", "args": {"query": "q0"}}, {"tool": "browser_find", "args": {"query": "hang"}}, {"tool": "browser_find", "args": {"query": "q2"}}]});
    let started = Instant::now();
    let v = call(&gw, "alice", "s1", "browser_batch", hang)
        .result()
        .unwrap()
        .clone();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(v["stoppedEarly"], "batch_timeout");
    assert_eq!(v["actions"][1]["errorCode"], "timed_out");
    assert_eq!(v["actions"][2]["status"], "not_run");
    gw.close();
}

#[test]
fn r_dev_caps_text_tools_respect_max_chars_and_its_bounds() {
    let (_d, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        text_max_chars: 30,
        text_default_chars: 20,
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let page: String = "ก".repeat(50);
    let text = page.clone();
    let w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(move |cmd: &Cmd| {
            vec![Out::Ok(cmd.id.clone(), json!({"text": text, "title": "t"}))]
        }),
    );
    for (tool, args, chars, truncated) in [
        ("browser_get_text", json!({}), 20, true),
        ("browser_get_text", json!({"max_chars": 30}), 30, true),
        ("browser_read_page", json!({"max_chars": 10}), 10, true),
    ] {
        let r = call(&gw, "alice", "s1", tool, args);
        assert_eq!(
            data(&r)["text"].as_str().unwrap().chars().count(),
            chars,
            "{tool}"
        );
        assert_eq!(r.result().unwrap()["truncated"], truncated);
    }
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_get_text",
        json!({"max_chars": 31}),
    );
    assert_eq!(code(&r), "INVALID_TOOL_ARGUMENTS");
    // The worker is told the cap too.
    assert_eq!(w.log.commands()[2].args["max_chars"], 10);
    // Default limits: 30,000 is allowed, 30,001 is not.
    gw.set_device_limits(DeviceLimits::default()).unwrap();
    assert!(call(
        &gw,
        "alice",
        "s1",
        "browser_get_text",
        json!({"max_chars": 30000})
    )
    .is_success());
    assert_eq!(
        code(&call(
            &gw,
            "alice",
            "s1",
            "browser_get_text",
            json!({"max_chars": 30001})
        )),
        "INVALID_TOOL_ARGUMENTS"
    );
    let r = call(&gw, "alice", "s1", "browser_get_text", json!({}));
    assert_eq!(data(&r)["text"], page.as_str());
    assert_eq!(r.result().unwrap()["truncated"], false);
    gw.close();
}

#[test]
fn r_dev_caps_javascript_result_is_capped() {
    let (_d, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        javascript_max_chars: 12,
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let _w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| {
            let n = cmd.args["code"].as_str().unwrap().len();
            vec![Out::Ok(cmd.id.clone(), json!({"value": "y".repeat(n)}))]
        }),
    );
    // "yyyyyyyyyy" serializes to 12 characters: at the cap.
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_javascript",
        json!({"code": "x".repeat(10)}),
    );
    assert_eq!(r.result().unwrap()["truncated"], false);
    assert_eq!(data(&r)["value"], "y".repeat(10));
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_javascript",
        json!({"code": "x".repeat(11)}),
    );
    assert_eq!(r.result().unwrap()["truncated"], true);
    assert_eq!(
        data(&r)["serializedPrefix"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        12
    );
    gw.close();
}

// ----- screenshots (R-DEV-SHOT) -----

#[test]
fn r_dev_shot_screenshots_are_private_artifacts_of_the_root_session_and_capped() {
    let (dir, gw) = gateway();
    gw.set_device_limits(DeviceLimits {
        screenshot_max_base64: 16,
        ..Default::default()
    })
    .unwrap();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let png = b"\x89PNG\r\n\x1a\nabcd".to_vec(); // 12 bytes → 16 base64 characters
    let b64 = data_encoding::BASE64.encode(&png);
    let big = data_encoding::BASE64.encode(&[png.clone(), vec![0]].concat());
    let _w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(move |cmd: &Cmd| {
            let image = if cmd.args["action"] == "zoom" {
                big.clone()
            } else {
                b64.clone()
            };
            vec![Out::Ok(
                cmd.id.clone(),
                json!({"image": image, "mediaType": "image/png", "width": 4}),
            )]
        }),
    );
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_computer",
        json!({"action": "screenshot"}),
    );
    let v = r.result().unwrap();
    assert!(v.get("image").is_none());
    assert_eq!(v["mediaType"], "image/png");
    assert_eq!(v["untrustedContent"]["data"]["width"], 4);
    let id = v["artifactId"].as_str().unwrap();
    let artifact = gw.artifact("s1", id).unwrap();
    assert_eq!(artifact.bytes, png);
    assert_eq!(
        gw.artifact("s2", id).unwrap_err().code(),
        "ARTIFACT_NOT_FOUND"
    );
    assert_eq!(
        gw.artifact("s1", "art_000000000000000000000000")
            .unwrap_err()
            .code(),
        "ARTIFACT_NOT_FOUND"
    );
    assert_eq!(
        gw.artifact("s1", "../jevgate.sqlite3").unwrap_err().code(),
        "ARTIFACT_NOT_FOUND"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("artifacts").join(id))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Inline when the host asks.
    let mut inline = ToolCall::new(
        "alice",
        "s1",
        "browser_computer",
        json!({"action": "screenshot"}),
    );
    inline.inline_images = true;
    let r = gw.call_tool(&inline);
    assert_eq!(
        r.result().unwrap()["image"],
        data_encoding::BASE64.encode(&png)
    );
    // One base64 character over the cap: discarded.
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_computer",
        json!({"action": "zoom", "region": [0, 0, 2, 2]}),
    );
    assert_eq!(code(&r), "RESULT_CAP_EXCEEDED");
    gw.close();
}

// ----- frames (R-DEV-CHAN) -----

#[test]
fn r_dev_chan_oversized_and_malformed_frames_close_only_that_connection() {
    let (_d, gw) = gateway();
    let mut o = options();
    o.max_message_bytes = 4096;
    let channel = gw.serve_channel(o).unwrap();
    let (_, token_good) = pair(&gw, "alice", "good");
    let good = Worker::start(channel.local_addr(), &token_good, echo());
    let cases: Vec<(Out, u16, &str)> = vec![
        (
            Out::Raw(format!(
                "{{\"type\":\"ping\",\"pad\":\"{}\"}}",
                "x".repeat(8192)
            )),
            1009,
            "MESSAGE_TOO_BIG",
        ),
        (Out::Raw("this is not json".into()), 1007, "MALFORMED_FRAME"),
        (
            Out::Raw(r#"{"type":"result","id":7,"success":true}"#.into()),
            1007,
            "MALFORMED_FRAME",
        ),
        (
            Out::Binary(vec![1, 2, 3]),
            1003,
            "BINARY_FRAMES_UNSUPPORTED",
        ),
    ];
    for (i, (out, close_code, reason)) in cases.into_iter().enumerate() {
        let (_, token) = pair(&gw, "bob", &format!("bad{i}"));
        let bad = Worker::start(channel.local_addr(), &token, echo());
        bad.send(out);
        wait_until("bad worker closed", || bad.log.closed().is_some());
        let closed = bad.log.closed().unwrap();
        assert_eq!((closed.code, closed.reason.as_str()), (close_code, reason));
        // The other connection is unharmed.
        assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    }
    assert!(!good.ended());
    gw.close();
}

#[test]
fn r_dev_chan_a_second_connection_replaces_the_first() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let first = Worker::start(channel.local_addr(), &token, echo());
    let second = Worker::start(channel.local_addr(), &token, echo());
    wait_until("first replaced", || first.ended());
    assert_eq!(
        first.log.closed().unwrap(),
        worker::Closed {
            code: 4000,
            reason: "REPLACED_BY_NEW_CONNECTION".into()
        }
    );
    assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    assert_eq!(second.log.commands().len(), 1);
    assert!(first.log.commands().is_empty());
    gw.close();
}

#[test]
fn r_dev_chan_keepalive_pings_and_json_ping_pong() {
    let (_d, gw) = gateway();
    let mut o = options();
    o.ping_interval = Duration::from_millis(30);
    let channel = gw.serve_channel(o).unwrap();
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(channel.local_addr(), &token, echo());
    wait_until("pings", || *w.log.pings.lock().unwrap() >= 2);
    w.send(Out::Raw(r#"{"type":"ping"}"#.into()));
    wait_until("pong", || {
        w.log
            .texts
            .lock()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "pong")
    });
    // An unknown frame type is ignored (forward compatibility).
    w.send(Out::Raw(r#"{"type":"progress","id":"c1"}"#.into()));
    assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    gw.close();
}

#[test]
fn r_dev_chan_silent_worker_is_dropped_after_the_idle_timeout() {
    let (_d, gw) = gateway();
    let mut o = options();
    o.idle_timeout = Duration::from_millis(200);
    o.ping_interval = Duration::from_secs(10);
    let channel = gw.serve_channel(o).unwrap();
    let (_, token) = pair(&gw, "alice", "i1");
    let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
    worker::authenticate(&mut ws, &token, Some(2)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let closed = worker::read_close(&mut ws).unwrap();
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1001, "KEEPALIVE_TIMEOUT")
    );
    gw.close();
}

#[test]
fn r_dev_chan_tls_wss_with_a_test_certificate() {
    let (_d, gw) = gateway();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_pem = cert.cert.pem();
    let tls = ChannelTls::from_pem(
        cert_pem.as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    assert_eq!(
        ChannelTls::from_pem(b"nope", b"nope").unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let channel = gw.serve_channel(options().with_tls(tls)).unwrap();
    assert!(channel.url().starts_with("wss://"));
    let (id, token) = pair(&gw, "alice", "i1");
    let w = Worker::start_with(
        channel.local_addr(),
        &token,
        Some(2),
        Some(&cert_pem),
        echo(),
    );
    assert_eq!(w.device_id, id);
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_find",
        json!({"query": "over tls"}),
    );
    assert_eq!(data(&r)["args"]["query"], "over tls");
    // A plain client gets nowhere on the TLS port.
    assert!(worker::open(channel.local_addr(), worker::PATH, None).is_err());
    gw.close();
}

#[test]
fn r_dev_chan_close_stops_and_joins_the_channel() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let second = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let w = Worker::start(second.local_addr(), &token, echo());
    channel.stop();
    assert!(channel.is_stopped());
    assert!(std::net::TcpStream::connect(channel.local_addr()).is_err());
    let started = Instant::now();
    gw.close();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(second.is_stopped());
    wait_until("worker told", || w.log.closed().is_some());
    assert_eq!(w.log.closed().unwrap().reason, "GATEWAY_CLOSING");
    assert_eq!(
        code(&call(&gw, "alice", "s1", "browser_get_text", json!({}))),
        "GATEWAY_CLOSED"
    );
}

// R-DEV-CHAN: raw HTTP that is not a channel upgrade gets an answer (an HTTP status or the end
// of the connection), never a hang: a plain GET of the channel path, a wrong path, a request
// that is not HTTP, and one that never ends (dropped by the authentication deadline).
#[test]
fn r_dev_chan_raw_http_gets_an_answer_never_a_hang() {
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let answer = |bytes: &[u8]| -> (String, Duration) {
        let mut raw = std::net::TcpStream::connect(channel.local_addr()).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let started = Instant::now();
        raw.write_all(bytes).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            match raw.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("no answer within 10 s: {e}"),
            }
        }
        (
            String::from_utf8_lossy(&got).into_owned(),
            started.elapsed(),
        )
    };
    // Not an upgrade: 426, at once.
    let (text, took) = answer(b"GET /v1/device-worker/channel HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(text.starts_with("HTTP/1.1 426 "), "{text:?}");
    assert!(took < Duration::from_secs(2));
    // Another path: 404.
    let (text, _) = answer(
        b"GET /v1/other HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
          Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    );
    assert!(text.starts_with("HTTP/1.1 404 "), "{text:?}");
    // Not HTTP at all, or a TLS hello on the plain port: 400, at once.
    for bytes in [
        &b"\x00\x01 not http\r\n\r\n"[..],
        &[0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0][..],
    ] {
        let (text, took) = answer(bytes);
        assert!(text.starts_with("HTTP/1.1 400 "), "{text:?}");
        assert!(took < Duration::from_secs(2));
    }
    // A request head that never ends: dropped by the authentication deadline (2 s here).
    let (text, took) = answer(b"GET /v1/device-worker/channel HTTP/1.1\r\nHost: x\r\n");
    assert!(text.is_empty(), "{text:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The channel still serves a worker afterwards.
    let (_, token) = pair(&gw, "alice", "i1");
    let _w = Worker::start(channel.local_addr(), &token, echo());
    assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    gw.close();
}

// ----- CLI (R-DEV-TOOLS) -----

#[test]
fn r_dev_tools_cli_prints_definitions_in_mcp_and_openai_form() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_jevgate"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["tools", "--format", "mcp"]);
    assert!(out.status.success());
    let mcp: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        mcp,
        jevgate::device::tool_definitions(jevgate::device::ToolFormat::Mcp)
    );
    let names: Vec<&str> = mcp
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "browser_navigate",
            "browser_read_page",
            "browser_get_text",
            "browser_find",
            "browser_computer",
            "browser_form_input",
            "browser_javascript",
            "browser_tabs",
            "browser_batch"
        ]
    );
    let out = run(&["tools", "--format", "openai"]);
    let openai: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(openai[8]["type"], "function");
    assert_eq!(
        openai[8]["function"]["parameters"]["properties"]["actions"]["maxItems"],
        10
    );
    assert_eq!(run(&["tools", "--format", "xml"]).status.code(), Some(2));
    // The agent task tools (issue 21 item 8).
    let out = run(&["tools", "--set", "agent", "--format", "openai"]);
    assert!(out.status.success());
    let agent: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        agent,
        jevgate::task::agent_tool_definitions(jevgate::device::ToolFormat::OpenAi)
    );
    assert_eq!(run(&["tools", "--set", "computer"]).status.code(), Some(2));
}

// ----- privacy (R-LOG, R-ERR-2) -----

/// Keeps jevgate's own records at every level, and every crate's records above `trace` (this
/// test's scripted worker is a tungstenite client, which traces raw frames; the library's own
/// channel logs none at any level: tests/log_privacy_channel.rs).
fn ours_and_above_trace(m: &log::Metadata<'_>) -> bool {
    m.target().starts_with("jevgate") || m.level() < log::Level::Trace
}

#[test]
fn r_log_tokens_page_text_and_field_values_never_reach_logs_or_errors() {
    support::log_capture::install(ours_and_above_trace);
    let (_d, gw) = gateway();
    let channel = serve(&gw);
    let (_, token) = pair(&gw, "alice", "i1");
    let _w = Worker::start(
        channel.local_addr(),
        &token,
        Box::new(|cmd: &Cmd| match cmd.tool.as_str() {
            "browser_get_text" => vec![Out::Ok(cmd.id.clone(), json!({"text": "PAGE-TEXT-7f3a"}))],
            _ => vec![Out::Fail(cmd.id.clone(), "execution_failed", "failed")],
        }),
    );
    let mut ws = worker::open(channel.local_addr(), worker::PATH, None).unwrap();
    let _ = worker::authenticate(&mut ws, &format!("{token}x"), Some(2));
    assert!(call(&gw, "alice", "s1", "browser_get_text", json!({})).is_success());
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_form_input",
        json!({"ref": "ref_1", "value": "FIELD-VALUE-9c2e"}),
    );
    assert_eq!(code(&r), "execution_failed");
    let r = call(
        &gw,
        "alice",
        "s1",
        "browser_form_input",
        json!({"ref": "ref_1", "value": "FIELD-VALUE-9c2e", "FIELD-VALUE-9c2e": 1}),
    );
    assert!(!r.to_json().to_string().contains("FIELD-VALUE-9c2e"));
    gw.close();
    let lines: Vec<String> = support::log_capture::records()
        .into_iter()
        .map(|r| r.message)
        .collect();
    assert!(lines.iter().any(|l| l.contains("device channel listening")));
    for line in &lines {
        for secret in [token.as_str(), "PAGE-TEXT-7f3a", "FIELD-VALUE-9c2e"] {
            assert!(!line.contains(secret), "log line leaks: {line}");
        }
    }
}

// Issue 22 (the extension's Unpair, R-DEV-PAIR): a worker that sends `unpair` on its own
// authenticated connection makes the gateway forget the device — its token stops working —
// and is closed 1008 DEVICE_UNPAIRED; a second `unpair` or another device's worker changes
// nothing else.
#[test]
fn issue22_a_worker_that_unpairs_is_forgotten_and_its_token_stops_working() {
    use support::worker::{authenticate, open, read_close, PATH};
    let t = support::gateway::builder().channel().build();
    let addr = t.channel().local_addr();
    let gone = t.pair("alice", "gone");
    let stays = t.pair("alice", "stays");
    let mut ws = open(addr, PATH, None).unwrap();
    authenticate(&mut ws, &gone.token_text(), Some(2)).unwrap();
    let mut other = open(addr, PATH, None).unwrap();
    authenticate(&mut other, &stays.token_text(), Some(2)).unwrap();
    for _ in 0..2 {
        ws.send(tungstenite::Message::text(r#"{"type":"unpair"}"#))
            .unwrap();
    }
    let closed = read_close(&mut ws).expect("closed");
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1008, "DEVICE_UNPAIRED")
    );
    let ids: Vec<String> =
        t.gw.devices("alice")
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
    assert_eq!(ids, vec![stays.device.clone()]);
    // The token is refused from now on.
    let mut again = open(addr, PATH, None).unwrap();
    let refused = authenticate(&mut again, &gone.token_text(), Some(2)).unwrap_err();
    assert_eq!(refused.reason, "AUTHENTICATION_FAILED");
    // The other device's connection is untouched.
    let online = t.gw.devices("alice").unwrap();
    assert!(online[0].online, "{online:?}");
}

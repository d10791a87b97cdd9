//! The opt-in `status` frame (issue 22 item 3, R-DEV-CHAN, R-LEASE-1..6, R-CLK): a raw
//! protocol-2 worker whose authenticate frame carries `"features": ["status"]` is told, after
//! `ready` and on every change of its device's control lease — acquired, renewed to a new end,
//! taken back, released, expired at the announced end on the gateway's clock — whether an agent
//! controls it and until when. A worker that does not ask never receives one.

mod support;

use jevgate::clock::ManualClock;
use jevgate::lease::ControlCaller;
use serde_json::{json, Value};
use std::time::Duration;
use support::gateway::builder;
use support::worker::{self, Ws};
use tungstenite::Message;

/// Opens a channel connection and authenticates with protocol 2, asking for `features`.
fn connect(addr: std::net::SocketAddr, token: &str, features: Option<Value>) -> Ws {
    let mut ws = worker::open(addr, worker::PATH, None).unwrap();
    let mut frame =
        json!({"type": "authenticate", "authorization": format!("Device {token}"), "protocol": 2});
    if let Some(f) = features {
        frame["features"] = f;
    }
    ws.send(Message::text(frame.to_string())).unwrap();
    assert_eq!(next(&mut ws)["type"], "ready");
    ws
}

/// The next text frame (pings and pongs skipped), within the socket's 5 s read timeout.
fn next(ws: &mut Ws) -> Value {
    loop {
        match ws.read().expect("a frame before the timeout") {
            Message::Text(t) => return serde_json::from_str(&t).unwrap(),
            Message::Close(c) => panic!("closed: {c:?}"),
            _ => {}
        }
    }
}

/// A channel whose keepalive stays out of the way of a clock moved by minutes.
fn quiet_channel() -> jevgate::device::ChannelOptions {
    let mut o = support::gateway::channel_options();
    o.ping_interval = Duration::from_secs(3600);
    o.idle_timeout = Duration::from_secs(7200);
    o
}

fn status(controlled: bool, until: Option<i64>) -> Value {
    json!({"type": "status", "controlled": controlled, "until": until, "autopilot": null})
}

// Issue 22 item 3: status after ready and on acquire, renew, take-back, revoked re-acquire,
// release and expiry; the worker that did not ask sees none of it.
#[test]
fn r_dev_chan_status_frames_follow_the_control_lease_only_for_workers_that_ask() {
    let clock = ManualClock::new();
    let t = builder()
        .clock(&clock)
        .channel_with(quiet_channel())
        .build();
    let addr = t.channel().local_addr();
    let asks = t.pair("alice", "asks");
    let quiet = t.pair("alice", "quiet");
    let mut ws = connect(addr, &asks.token_text(), Some(json!(["status"])));
    let mut other = connect(addr, &quiet.token_text(), None);
    assert_eq!(next(&mut ws), status(false, None), "the first, after ready");
    let leases = t.gw.leases();
    let owner = ControlCaller::owner("alice");
    // Every change below happens to both devices.
    let both = |f: &dyn Fn(&str)| {
        f(&asks.device);
        f(&quiet.device);
    };

    let grant = leases.acquire(&asks.device, "conv-1").unwrap();
    leases.acquire(&quiet.device, "conv-1").unwrap();
    assert_eq!(
        next(&mut ws),
        status(true, Some(grant.expires_at)),
        "acquired"
    );

    clock.advance(Duration::from_secs(30));
    let renewed = leases.renew(&asks.device, "conv-1").unwrap();
    leases.renew(&quiet.device, "conv-1").unwrap();
    assert_eq!(renewed.expires_at, grant.expires_at + 30_000);
    assert_eq!(
        next(&mut ws),
        status(true, Some(renewed.expires_at)),
        "renewed"
    );

    both(&|d| assert!(leases.take_back(d, &owner).unwrap()));
    assert_eq!(next(&mut ws), status(false, None), "taken back");

    // The dispossessed conversation is told once (no change), then acquires again.
    both(&|d| {
        let e = leases.acquire(d, "conv-1").unwrap_err();
        assert_eq!(e.code(), "DEVICE_CONTROL_REVOKED");
    });
    let again = leases.acquire(&asks.device, "conv-1").unwrap();
    leases.acquire(&quiet.device, "conv-1").unwrap();
    assert_eq!(next(&mut ws), status(true, Some(again.expires_at)));

    assert_eq!(leases.release_session("conv-1").unwrap(), 2);
    assert_eq!(next(&mut ws), status(false, None), "released");

    // Expiry: nobody calls; the channel re-reads the lease at the announced end.
    let last = leases.acquire(&asks.device, "conv-2").unwrap();
    leases.acquire(&quiet.device, "conv-2").unwrap();
    assert_eq!(next(&mut ws), status(true, Some(last.expires_at)));
    clock.advance(Duration::from_secs(120));
    assert_eq!(next(&mut ws), status(false, None), "expired");

    // The worker that did not ask: its next frame after all that answers its own ping.
    other
        .send(Message::text(json!({"type": "ping"}).to_string()))
        .unwrap();
    assert_eq!(next(&mut other), json!({"type": "pong"}));
    // And the asking one got nothing more than the changes.
    ws.send(Message::text(json!({"type": "ping"}).to_string()))
        .unwrap();
    assert_eq!(next(&mut ws), json!({"type": "pong"}));
}

// A refused call changes nothing: no frame. A tool call through the gateway acquires the lease
// like any other holder and the worker hears it before the command.
#[test]
fn r_dev_chan_status_frames_only_on_change_and_through_tool_calls() {
    let t = builder().channel().build();
    let addr = t.channel().local_addr();
    let p = t.pair("alice", "asks");
    let mut ws = connect(addr, &p.token_text(), Some(json!(["later", "status"])));
    assert_eq!(next(&mut ws), status(false, None));
    let leases = t.gw.leases();
    let grant = leases.acquire(&p.device, "conv-1").unwrap();
    let first = next(&mut ws);
    assert_eq!(first["controlled"], true);
    // On the system clock the frame's Unix ms is read a moment after the grant's.
    let until = first["until"].as_i64().unwrap();
    assert!(
        (until - grant.expires_at).abs() <= 50,
        "{until} vs {}",
        grant.expires_at
    );
    // Another conversation is refused: the lease did not change.
    let e = leases.acquire(&p.device, "conv-2").unwrap_err();
    assert_eq!(e.code(), "DEVICE_CONTROL_ELSEWHERE");
    // A tool call by the holder renews it: a status (a new end), then the command.
    let gw = t.gw.clone();
    let call = std::thread::spawn(move || {
        gw.call_tool(&jevgate::device::ToolCall::new(
            "alice",
            "conv-1",
            "browser_get_text",
            json!({}),
        ))
    });
    let mut seen = Vec::new();
    let command = loop {
        let f = next(&mut ws);
        if f["type"] == "command" {
            break f;
        }
        seen.push(f);
    };
    assert!(
        seen.iter()
            .all(|f| f["type"] == "status" && f["controlled"] == true),
        "{seen:?}"
    );
    assert!(seen.len() <= 1, "one status per change: {seen:?}");
    let id = command["id"].as_str().unwrap();
    ws.send(Message::text(
        json!({"type": "result", "id": id, "success": true, "result": {"text": "hi"}}).to_string(),
    ))
    .unwrap();
    assert!(call.join().unwrap().is_success());
}

// Issue 23 (R-LEASE-1, -3, -6 across processes, review finding): on the shared store the
// status frames of a worker connected here follow holds taken, taken back and released by
// another gateway of the fleet — learned from the store's NOTIFY by the listener, never by a
// database round trip on the channel's I/O thread.
#[test]
fn r_dev_chan_status_frames_follow_holds_taken_on_another_gateway_of_the_fleet() {
    let Some(url) = support::pg::pg_url() else {
        return;
    };
    let db = support::pg::fresh_db(&url);
    let t = builder()
        .config(support::pg::pg_config(&db.url_file))
        .channel_with(quiet_channel())
        .build();
    let (other, _dir) = support::pg::open_gateway(&db.url_file);
    let addr = t.channel().local_addr();
    let p = t.pair("alice", "asks");
    let mut ws = connect(addr, &p.token_text(), Some(json!(["status"])));
    assert_eq!(next(&mut ws), status(false, None), "the first, after ready");

    let grant = other.leases().acquire(&p.device, "conv-1").unwrap();
    assert_eq!(
        next(&mut ws),
        status(true, Some(grant.expires_at)),
        "acquired on the other gateway"
    );
    assert!(other
        .leases()
        .take_back(&p.device, &ControlCaller::owner("alice"))
        .unwrap());
    assert_eq!(next(&mut ws), status(false, None), "taken back there");
    let e = other.leases().acquire(&p.device, "conv-1").unwrap_err();
    assert_eq!(e.code(), "DEVICE_CONTROL_REVOKED");
    // This gateway's own transitions are announced as before.
    let here = t.gw.leases().acquire(&p.device, "conv-2").unwrap();
    assert_eq!(next(&mut ws), status(true, Some(here.expires_at)), "here");
    assert_eq!(other.leases().release_session("conv-2").unwrap(), 1);
    assert_eq!(next(&mut ws), status(false, None), "released there");
    other.close();
}

// Issue 23 item 4 (R-LEASE-1, R-CLK): renewals send no NOTIFY, yet a hold renewed on another
// gateway of the fleet is announced as its new end — before the old end (re-read in the hold's
// last second), and also when the renewal is learned only after the old end passed — and never
// as "not held" in between (a flicker of the extension's badge).
#[test]
fn r_dev_chan_a_renewal_on_another_gateway_is_announced_without_a_not_held_frame() {
    let Some(url) = support::pg::pg_url() else {
        return;
    };
    let db = support::pg::fresh_db(&url);
    let clock = ManualClock::new();
    let t = builder()
        .clock(&clock)
        .config(support::pg::pg_config(&db.url_file))
        .channel_with(quiet_channel())
        .build();
    let (other, _dir) = support::pg::open_gateway(&db.url_file);
    let addr = t.channel().local_addr();
    let p = t.pair("alice", "asks");
    let mut ws = connect(addr, &p.token_text(), Some(json!(["status"])));
    assert_eq!(next(&mut ws), status(false, None), "the first, after ready");
    let first = other.leases().acquire(&p.device, "conv-1").unwrap();
    assert_eq!(next(&mut ws), status(true, Some(first.expires_at)));
    // This gateway's clocks (its own and its view of the database's) move together.
    let advance = |ms: u64| {
        clock.advance(Duration::from_millis(ms));
        jevgate::unstable::advance_store_clock_ms(t.gw.leases(), ms as i64);
    };

    // Renewed on the other gateway 1 s before the end; this one reaches its last half second.
    jevgate::unstable::advance_store_clock_ms(other.leases(), 119_000);
    let second = other.leases().renew(&p.device, "conv-1").unwrap();
    assert!(second.expires_at > first.expires_at);
    advance(119_500);
    assert_eq!(
        next(&mut ws),
        status(true, Some(second.expires_at)),
        "the renewal, announced before the old end"
    );

    // Renewed again; this gateway jumps past the old end before its listener had a round.
    jevgate::unstable::advance_store_clock_ms(other.leases(), 119_000);
    let third = other.leases().renew(&p.device, "conv-1").unwrap();
    assert!(third.expires_at > second.expires_at);
    advance(120_000);
    assert_eq!(
        next(&mut ws),
        status(true, Some(third.expires_at)),
        "the renewal, never a \"not held\" frame first"
    );

    // Not renewed: the expiry is announced once the old end passed.
    advance(121_000);
    assert_eq!(next(&mut ws), status(false, None), "expired");
    other.close();
}

//! Issue 24 (R-DEV-CHAN, R-CLK): the device channel on readiness I/O, with the limits of a
//! public port — checked through the real server on loopback with small caps (the 10,000
//! connection case is `benches/channel_scale.rs`). A connection costs no thread; the 51st device
//! of a cap of 50 is refused cleanly and a device reconnecting is never refused; unauthenticated
//! sockets have their own budget (per address too) that never displaces a device; the first
//! message is at most 8 KiB; the authentication deadline is 5 s of the gateway's clock; a worker
//! that does not read what it is sent is closed after 10 s over the limit, its in-flight call
//! ending "outcome unknown"; a burst of 1,000 pings is answered; half-closed sockets are let go.

mod support;

use jevgate::clock::ManualClock;
use jevgate::device::{ChannelOptions, ToolCall, ToolResult};
use jevgate::Gateway;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::gateway::{channel_options, Paired, TestGateway};
use support::worker::{authenticate, echo, open, read_close, wait_until, Closed, Worker, Ws, PATH};
use tungstenite::Message;

fn gateway(options: ChannelOptions, clock: Option<&ManualClock>) -> TestGateway {
    let mut b = support::gateway::builder().channel_with(options);
    if let Some(c) = clock {
        b = b.clock(c);
    }
    b.build()
}

fn connect(addr: SocketAddr, paired: &Paired) -> Result<(Ws, String), Closed> {
    let mut ws = open(addr, PATH, None).expect("handshake");
    authenticate(&mut ws, &paired.token_text(), Some(2)).map(|id| (ws, id))
}

fn call(gw: &Gateway, owner: &str, tool: &str) -> ToolResult {
    gw.call_tool(&ToolCall::new(owner, "s1", tool, json!({})))
}

fn online(gw: &Gateway, paired: &Paired) -> bool {
    gw.devices(&paired.owner)
        .unwrap()
        .iter()
        .any(|d| d.id == paired.device && d.online)
}

/// The socket was closed by the server: a read gives the end of the stream or a reset (never
/// data, never a timeout).
fn ended(tcp: &mut TcpStream) -> bool {
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

// Issue 24 item 3: no thread per connection. 100 authenticated idle workers (raw WebSockets
// held by this test thread, no worker threads) add no thread to the process. The count is taken
// in a child process running only this test (the other tests of this binary start threads of
// their own).
#[test]
fn issue24_a_hundred_connected_devices_cost_no_thread() {
    const CHILD: &str = "JEVGATE_THREAD_COUNT_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "issue24_a_hundred_connected_devices_cost_no_thread",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        return;
    }
    let t = gateway(channel_options(), None);
    let addr = t.channel().local_addr();
    let paired: Vec<Paired> = (0..100)
        .map(|i| t.pair("alice", &format!("i{i}")))
        .collect();
    // Let the I/O threads start before counting.
    let first = connect(addr, &paired[0]).unwrap();
    let before = threads();
    let mut held = vec![first];
    for p in &paired[1..] {
        held.push(connect(addr, p).unwrap());
    }
    wait_until("all online", || paired.iter().all(|p| online(&t.gw, p)));
    let after = threads();
    assert!(
        after <= before,
        "{before} threads before the 99 connections, {after} after"
    );
    drop(held);
    wait_until("all offline", || paired.iter().all(|p| !online(&t.gw, p)));
}

// Issue 24 item 2: the connection cap is a setting. With 50, the 51st device is refused with
// 1013 CONNECTION_LIMIT after authenticating (its close frame says why); the 50 keep working; a
// device that reconnects replaces its own connection and is not refused at the cap; once one
// leaves, the 51st gets in.
#[test]
fn issue24_cap_50_refuses_the_51st_cleanly_and_a_reconnect_is_never_refused() {
    let mut options = channel_options();
    options.max_connections = 50;
    let t = gateway(options, None);
    let addr = t.channel().local_addr();
    let paired: Vec<Paired> = (0..51).map(|i| t.pair("alice", &format!("i{i}"))).collect();
    let mut held: Vec<Ws> = paired[..50]
        .iter()
        .map(|p| connect(addr, p).unwrap().0)
        .collect();
    let refused = connect(addr, &paired[50]).unwrap_err();
    assert_eq!(
        refused,
        Closed {
            code: 1013,
            reason: "CONNECTION_LIMIT".into()
        }
    );
    assert!(!online(&t.gw, &paired[50]));
    // A reconnect at the cap replaces the device's own connection.
    let (replacement, _) = connect(addr, &paired[7]).unwrap();
    let old = std::mem::replace(&mut held[7], replacement);
    let mut old = old;
    assert_eq!(
        read_close(&mut old).map(|c| c.reason),
        Some("REPLACED_BY_NEW_CONNECTION".into())
    );
    drop(old);
    // One leaves: the 51st gets in (once the gateway has let the socket go).
    let mut gone = held.remove(0);
    gone.close(None).unwrap();
    let _ = read_close(&mut gone);
    drop(gone);
    let deadline = Instant::now() + Duration::from_secs(10);
    let last = loop {
        match connect(addr, &paired[50]) {
            Ok((ws, _)) => break ws,
            Err(c) => {
                assert_eq!(c.code, 1013);
                assert!(Instant::now() < deadline, "the 51st never got in");
            }
        }
    };
    assert!(online(&t.gw, &paired[50]));
    drop(last);
}

// Issue 24 item 2: unauthenticated sockets have their own budget — per address and in all —
// and never push a connected device out: with 4 per address, 4 idle sockets are held and the
// 5th is closed at once; the connected device keeps answering; once the idle ones pass the
// authentication deadline (5 s of the gateway's clock) they are let go and a device connects.
#[test]
fn issue24_unauthenticated_sockets_have_their_own_budget_and_never_displace_a_device() {
    let clock = ManualClock::new();
    let mut options = channel_options();
    options.max_unauthenticated = 6;
    options.max_unauthenticated_per_address = 4;
    let t = gateway(options, Some(&clock));
    let addr = t.channel().local_addr();
    let (device, worker) = t.scripted_worker("alice", "i0", echo());
    let waiting = t.pair("bob", "i1");
    let mut idle: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    // The 5th from the same address: closed without an answer.
    let mut fifth = TcpStream::connect(addr).unwrap();
    assert!(ended(&mut fifth), "the 5th unauthenticated socket was held");
    assert!(online(&t.gw, &device));
    let r = call(&t.gw, "alice", "browser_get_text");
    assert!(r.is_success(), "{r:?}");
    assert!(!worker.ended());
    // The budget is full: a device cannot even start its handshake from this address now...
    let mut blocked = TcpStream::connect(addr).unwrap();
    assert!(ended(&mut blocked));
    // ...until the idle sockets pass their deadline on the gateway's clock.
    clock.advance(Duration::from_secs(5));
    for s in &mut idle {
        assert!(
            ended(s),
            "an idle socket outlived its authentication deadline"
        );
    }
    let (_ws, id) = connect(addr, &waiting).unwrap();
    assert_eq!(id, waiting.device);
    assert!(online(&t.gw, &device));
}

// Issue 24 item 2: the authentication deadline is 5 s of the gateway's clock (handshake
// included) — a socket that upgraded at 0 s may still authenticate at 4 s, one that did not
// is closed 1008 AUTHENTICATION_TIMEOUT at 5 s, and a socket that never sent its HTTP head
// is dropped.
#[test]
fn issue24_the_authentication_deadline_is_5_s_on_the_gateway_clock() {
    let clock = ManualClock::new();
    let t = gateway(channel_options(), Some(&clock));
    let addr = t.channel().local_addr();
    let paired = t.pair("alice", "i0");
    // Accepted in order: once the two handshakes are answered, the bare socket is accepted too.
    let mut bare = TcpStream::connect(addr).unwrap();
    let mut late = open(addr, PATH, None).unwrap();
    let mut silent = open(addr, PATH, None).unwrap();
    clock.advance(Duration::from_secs(4));
    assert!(authenticate(&mut late, &paired.token_text(), Some(2)).is_ok());
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        read_close(&mut silent),
        Some(Closed {
            code: 1008,
            reason: "AUTHENTICATION_TIMEOUT".into()
        })
    );
    assert!(ended(&mut bare));
    assert!(online(&t.gw, &paired));
}

// Issue 24 item 2: the first (authenticate) message may be at most 8 KiB — a 9 KiB one is
// closed 1009 MESSAGE_TOO_BIG before anything is looked up — while an authenticated worker's
// messages may be as big as `max_message_bytes`.
#[test]
fn issue24_the_first_message_is_at_most_8_kib_and_later_ones_up_to_the_limit() {
    let t = gateway(channel_options(), None);
    let addr = t.channel().local_addr();
    let paired = t.pair("alice", "i0");
    let mut ws = open(addr, PATH, None).unwrap();
    let frame = json!({
        "type": "authenticate",
        "authorization": format!("Device {}", paired.token_text()),
        "protocol": 2,
        "pad": "x".repeat(9 * 1024),
    });
    ws.send(Message::text(frame.to_string())).unwrap();
    assert_eq!(
        read_close(&mut ws),
        Some(Closed {
            code: 1009,
            reason: "MESSAGE_TOO_BIG".into()
        })
    );
    assert!(!online(&t.gw, &paired));
    let (mut ws, _) = connect(addr, &paired).unwrap();
    let big = json!({"type": "ping", "pad": "y".repeat(500 * 1024)});
    ws.send(Message::text(big.to_string())).unwrap();
    loop {
        match ws.read().unwrap() {
            Message::Text(t) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                assert_eq!(v["type"], "pong");
                break;
            }
            Message::Close(c) => panic!("closed: {c:?}"),
            _ => {}
        }
    }
    assert!(online(&t.gw, &paired));
}

/// A masked WebSocket ping with a 125-byte payload (mask key zero).
fn ping_frame() -> Vec<u8> {
    let mut f = vec![0x89, 0x80 | 125, 0, 0, 0, 0];
    f.extend(std::iter::repeat_n(b'p', 125));
    f
}

// Issue 24 item 2: a worker that does not read what it is sent. Its unread bytes pile up past
// `slow_reader_bytes`; the gateway stops reading it, and when they have stayed above the limit
// for `slow_reader_timeout` (10 s of the gateway's clock) closes it: the call in flight ends
// OUTCOME_UNKNOWN (its command was queued for writing), the device goes offline, and the
// other device never noticed.
#[test]
fn issue24_a_slow_reader_is_closed_after_10_s_over_the_limit_and_its_call_ends_unknown() {
    let clock = ManualClock::new();
    let mut options = channel_options();
    options.slow_reader_bytes = 1024;
    let t = gateway(options, Some(&clock));
    let addr = t.channel().local_addr();
    let (other, other_worker) = t.scripted_worker("bob", "b0", echo());
    let slow = t.pair("alice", "i0");
    let (mut ws, _) = connect(addr, &slow).unwrap();
    let gw = std::sync::Arc::new(t.gw);
    let in_flight = {
        let gw = std::sync::Arc::clone(&gw);
        std::thread::spawn(move || call(&gw, "alice", "browser_get_text"))
    };
    // The command reaches the worker, which never answers and never reads again; it floods
    // pings until the gateway stops reading it (its writes then block).
    loop {
        match ws.read().unwrap() {
            Message::Text(t) if t.contains("\"command\"") => break,
            Message::Close(c) => panic!("closed: {c:?}"),
            _ => {}
        }
    }
    let tcp = match ws.get_mut() {
        support::worker::Stream::Plain(s) => s,
        _ => unreachable!(),
    };
    tcp.set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let burst: Vec<u8> = std::iter::repeat_n(ping_frame(), 256).flatten().collect();
    let started = Instant::now();
    while tcp.write(&burst).is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the gateway kept reading a worker that never reads"
        );
    }
    assert!(!in_flight.is_finished());
    clock.advance(Duration::from_secs(10));
    let r = in_flight.join().unwrap();
    assert_eq!(r.error_code(), Some("OUTCOME_UNKNOWN"), "{r:?}");
    wait_until("the slow reader offline", || !online(&gw, &slow));
    assert!(online(&gw, &other));
    assert!(call(&gw, "bob", "browser_get_text").is_success());
    assert!(!other_worker.ended());
}

// Issue 24 tests: 1,000 WebSocket pings and 1,000 JSON pings in one burst are all answered, in
// order, and the device keeps working.
#[test]
fn issue24_a_burst_of_1000_pings_is_answered_and_the_device_keeps_working() {
    let t = gateway(channel_options(), None);
    let addr = t.channel().local_addr();
    let paired = t.pair("alice", "i0");
    let (mut ws, _) = connect(addr, &paired).unwrap();
    for i in 0..1000u32 {
        ws.write(Message::Ping(i.to_be_bytes().to_vec().into()))
            .unwrap();
        ws.write(Message::text(r#"{"type":"ping"}"#)).unwrap();
    }
    ws.flush().unwrap();
    let (mut pongs, mut json_pongs) = (0u32, 0u32);
    while pongs < 1000 || json_pongs < 1000 {
        match ws.read().unwrap() {
            Message::Pong(p) => {
                assert_eq!(&p[..], &pongs.to_be_bytes());
                pongs += 1;
            }
            Message::Text(t) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                assert_eq!(v["type"], "pong");
                json_pongs += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    drop(ws);
    let worker = Worker::start(addr, &paired.token_text(), echo());
    assert!(call(&t.gw, "alice", "browser_get_text").is_success());
    assert!(!worker.ended());
}

// Issue 24 tests: half-open and half-closed sockets. A worker that shuts its sending side after
// authenticating is let go (device offline); a socket that shuts its side before its HTTP head
// is let go; a worker that goes silent without a FIN is dropped by the keepalive on the
// gateway's clock (pinged, then silent past the idle timeout).
#[test]
fn issue24_half_closed_and_silent_sockets_are_let_go() {
    let clock = ManualClock::new();
    let t = gateway(channel_options(), Some(&clock));
    let addr = t.channel().local_addr();
    let a = t.pair("alice", "a");
    let b = t.pair("alice", "b");
    let (mut ws, _) = connect(addr, &a).unwrap();
    if let support::worker::Stream::Plain(s) = ws.get_mut() {
        s.shutdown(Shutdown::Write).unwrap();
    }
    wait_until("half-closed worker offline", || !online(&t.gw, &a));
    let mut early = TcpStream::connect(addr).unwrap();
    early.shutdown(Shutdown::Write).unwrap();
    assert!(ended(&mut early));
    // Silent, connection kept (no FIN): the keepalive drops it on the gateway's clock.
    let (mut silent, _) = connect(addr, &b).unwrap();
    assert!(online(&t.gw, &b));
    clock.advance(Duration::from_secs(60));
    // The gateway probes it at the new instant (the ping is read here, never answered)...
    assert!(matches!(silent.read().unwrap(), Message::Ping(_)));
    // ...and drops it at a later one.
    clock.advance(Duration::from_secs(1));
    wait_until("silent worker dropped", || !online(&t.gw, &b));
    drop(silent);
}

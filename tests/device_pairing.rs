//! Pairing codes and `POST /devices/pair` over real loopback HTTP (R-DEV-PAIR, issue 22 item 2):
//! a host mints a code, a client posts it to the channel listener with the extension's pairing
//! body, and gets a device token that authenticates on the same listener's WebSocket. Wrong,
//! used and expired codes are one answer; wrong codes are rate limited per address on the
//! gateway's clock; CORS only for a `chrome-extension://` origin; hostile bodies (malformed,
//! oversized, slow, lying about their length) get a clear answer and cost nothing else; and
//! neither the code nor the token reaches a log record (R-LOG).

mod support;

use jevgate::clock::ManualClock;
use jevgate::device::{ChannelOptions, ChannelTls};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use support::gateway::{builder, TestGateway};
use support::log_capture;
use support::worker;

const EXT: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";

/// A parsed HTTP answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {self:?}"))
    }

    fn error_code(&self) -> String {
        self.json()["errorCode"].as_str().unwrap_or("").to_string()
    }
}

fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8(raw.to_vec()).expect("an UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Sends `raw` and reads the answer up to the server's close.
fn exchange(addr: SocketAddr, raw: &[u8]) -> Answer {
    let mut s = connect(addr);
    s.write_all(raw).unwrap();
    read_answer(&mut s)
}

fn read_answer(s: &mut TcpStream) -> Answer {
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    parse(&out)
}

fn post_raw(body: &[u8], headers: &str) -> Vec<u8> {
    let mut raw = format!(
        "POST /devices/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    raw
}

fn body(installation: &str, code: &str) -> Value {
    json!({
        "installationId": installation,
        "name": format!("Chrome on {installation}"),
        "browser": {"name": "Chrome", "version": "131.0"},
        "pairingCode": code,
    })
}

fn post(addr: SocketAddr, installation: &str, code: &str) -> Answer {
    let b = body(installation, code).to_string();
    exchange(addr, &post_raw(b.as_bytes(), ""))
}

fn gateway(clock: Option<&ManualClock>) -> TestGateway {
    let mut options = ChannelOptions::new("127.0.0.1:0");
    options.auth_timeout = Duration::from_secs(2);
    let b = builder().channel_with(options);
    match clock {
        Some(c) => b.clock(c).build(),
        None => b.build(),
    }
}

fn addr(t: &TestGateway) -> SocketAddr {
    t.channel().local_addr()
}

fn code(t: &TestGateway, owner: &str) -> String {
    t.gw.pairing_code(owner, Duration::from_secs(300))
        .unwrap()
        .expose()
        .to_string()
}

// R-DEV-PAIR: a good code pairs a browser for the code's owner, once; the token it answers
// authenticates on the same listener's channel (protocol 2) and the device is in the owner's
// inventory.
#[test]
fn r_dev_pair_a_good_code_pairs_once_and_the_token_authenticates() {
    let t = gateway(None);
    let c =
        t.gw.pairing_code("alice", Duration::from_secs(300))
            .unwrap();
    assert!(c.expires_at > 0);
    // Typed in lower case with spaces: the same code.
    let typed = c.expose().to_lowercase().replace('-', " ");
    let a = post(addr(&t), "ext-1", &typed);
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let v = a.json();
    let device = v["deviceId"].as_str().unwrap().to_string();
    let token = v["token"].as_str().unwrap().to_string();
    assert_eq!(v.as_object().unwrap().len(), 2);
    let devices = t.gw.devices("alice").unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0].id, device);
    assert_eq!(devices[0].browser.as_ref().unwrap().name, "Chrome");
    assert!(t.gw.devices("bob").unwrap().is_empty());
    let mut ws = worker::open(addr(&t), worker::PATH, None).unwrap();
    assert_eq!(worker::authenticate(&mut ws, &token, Some(2)), Ok(device));
    // Used: the same answer as a wrong code; nothing more paired.
    let again = post(addr(&t), "ext-2", c.expose());
    assert_eq!(again.status, 401);
    assert_eq!(again.error_code(), "PAIRING_CODE_INVALID");
    assert_eq!(t.gw.devices("alice").unwrap().len(), 1);
}

// R-DEV-PAIR: wrong, used and expired (on the gateway's manual clock) codes get one and the
// same answer, byte for byte.
#[test]
fn r_dev_pair_wrong_used_and_expired_codes_are_one_answer() {
    let clock = ManualClock::new();
    let t = gateway(Some(&clock));
    let used = code(&t, "alice");
    assert_eq!(post(addr(&t), "ext-1", &used).status, 200);
    let expired = t.gw.pairing_code("alice", Duration::from_secs(60)).unwrap();
    clock.advance(Duration::from_secs(60));
    let answers = [
        post(addr(&t), "ext-2", "ABCD-EFGH"),
        post(addr(&t), "ext-2", &used),
        post(addr(&t), "ext-2", expired.expose()),
    ];
    for a in &answers {
        assert_eq!(a.status, 401, "{a:?}");
        assert_eq!(a.error_code(), "PAIRING_CODE_INVALID");
        assert_eq!(a.body, answers[0].body);
        assert_eq!(a.headers, answers[0].headers);
    }
    assert_eq!(t.gw.devices("alice").unwrap().len(), 1);
    // Not a code at all (a 0, an O, too short): the same answer too.
    assert_eq!(post(addr(&t), "ext-2", "0000-OOOO").body, answers[0].body);
}

// R-DEV-PAIR: five wrong codes from one address in a minute of the gateway's clock, then 429
// with Retry-After — even for a good code — until the oldest failure leaves the window.
#[test]
fn r_dev_pair_wrong_codes_are_rate_limited_per_address_then_recover() {
    let clock = ManualClock::new();
    let t = gateway(Some(&clock));
    let good = code(&t, "alice");
    for i in 0..5 {
        assert_eq!(post(addr(&t), "x", "ABCD-EFGH").status, 401, "try {i}");
        clock.advance(Duration::from_secs(1));
    }
    let limited = post(addr(&t), "ext-1", &good);
    assert_eq!(limited.status, 429, "{limited:?}");
    assert_eq!(limited.error_code(), "RATE_LIMITED");
    // The first failure was at t0; now is t0 + 5 s: 55 s to go.
    assert_eq!(limited.header("retry-after"), Some("55"));
    clock.advance(Duration::from_secs(54));
    assert_eq!(post(addr(&t), "ext-1", &good).status, 429);
    clock.advance(Duration::from_secs(1));
    let ok = post(addr(&t), "ext-1", &good);
    assert_eq!(ok.status, 200, "the window moved on: {ok:?}");
    // The good code was not consumed by the refused tries.
    assert_eq!(t.gw.devices("alice").unwrap().len(), 1);
}

// R-DEV-PAIR: CORS for the extension's origin (echoed, Vary: Origin), a preflight answered
// 204, and no CORS header for any other origin.
#[test]
fn r_dev_pair_cors_for_a_chrome_extension_origin_only() {
    let t = gateway(None);
    let pre = exchange(
        addr(&t),
        format!("OPTIONS /devices/pair HTTP/1.1\r\nHost: h\r\nOrigin: {EXT}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n\r\n").as_bytes(),
    );
    assert_eq!(pre.status, 204, "{pre:?}");
    assert_eq!(pre.header("access-control-allow-origin"), Some(EXT));
    assert_eq!(pre.header("access-control-allow-methods"), Some("POST"));
    assert_eq!(
        pre.header("access-control-allow-headers"),
        Some("content-type")
    );
    assert_eq!(pre.header("vary"), Some("Origin"));
    assert_eq!(pre.body, "");
    let b = body("ext-1", &code(&t, "alice")).to_string();
    let a = exchange(
        addr(&t),
        &post_raw(b.as_bytes(), &format!("Origin: {EXT}\r\n")),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.header("access-control-allow-origin"), Some(EXT));
    assert_eq!(a.header("vary"), Some("Origin"));
    // An error answer carries them too (the extension must read it).
    let b = body("ext-1", "ABCD-EFGH").to_string();
    let a = exchange(
        addr(&t),
        &post_raw(b.as_bytes(), &format!("Origin: {EXT}\r\n")),
    );
    assert_eq!(a.status, 401);
    assert_eq!(a.header("access-control-allow-origin"), Some(EXT));
    for origin in ["https://evil.example", "null", "chrome-extension://a/b"] {
        let pre = exchange(
            addr(&t),
            format!("OPTIONS /devices/pair HTTP/1.1\r\nHost: h\r\nOrigin: {origin}\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(pre.status, 204);
        let b = body("ext-9", &code(&t, "alice")).to_string();
        let a = exchange(
            addr(&t),
            &post_raw(b.as_bytes(), &format!("Origin: {origin}\r\n")),
        );
        assert_eq!(a.status, 200, "pairing itself does not depend on CORS");
        for answer in [&pre, &a] {
            assert!(
                answer
                    .headers
                    .iter()
                    .all(|(n, _)| !n.to_ascii_lowercase().starts_with("access-control")),
                "{origin}: {answer:?}"
            );
        }
    }
}

// R-DEV-PAIR, hostile input: malformed JSON, missing or extra fields, fields out of bounds, an
// oversized body, no or bad Content-Length, another method — each one clear answer, no device,
// and the code is not spent.
#[test]
fn r_dev_pair_malformed_missing_and_oversized_bodies_get_clear_answers() {
    let t = gateway(None);
    let good = code(&t, "alice");
    let mut missing = body("ext-1", &good);
    missing.as_object_mut().unwrap().remove("browser");
    let mut extra = body("ext-1", &good);
    extra["admin"] = json!(true);
    let mut empty_name = body("ext-1", &good);
    empty_name["name"] = json!("");
    let mut wrong_type = body("ext-1", &good);
    wrong_type["installationId"] = json!(7);
    for (what, raw) in [
        ("not JSON", b"{\"installationId\":".to_vec()),
        ("an array", b"[]".to_vec()),
        ("not UTF-8", vec![0xFF, 0xFE, 0xFD]),
        ("no browser", missing.to_string().into_bytes()),
        ("an unknown field", extra.to_string().into_bytes()),
        ("an empty name", empty_name.to_string().into_bytes()),
        ("a number id", wrong_type.to_string().into_bytes()),
    ] {
        let a = exchange(addr(&t), &post_raw(&raw, ""));
        assert_eq!(a.status, 400, "{what}: {a:?}");
        assert_eq!(a.error_code(), "INVALID_INPUT", "{what}");
        let message = a.json()["message"].as_str().unwrap().to_string();
        assert!(!message.contains(&good), "{what}: the code echoed");
    }
    // Over 8 KiB: refused from its header (413), whether or not the bytes follow.
    let big = vec![b' '; 9000];
    let a = exchange(addr(&t), &post_raw(&big, ""));
    assert_eq!(a.status, 413, "{a:?}");
    assert_eq!(a.error_code(), "PAYLOAD_TOO_LARGE");
    let a = exchange(
        addr(&t),
        b"POST /devices/pair HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000\r\n\r\n",
    );
    assert_eq!(a.status, 413);
    for (what, head, status) in [
        (
            "no length",
            "POST /devices/pair HTTP/1.1\r\nHost: h\r\n\r\n",
            411,
        ),
        (
            "chunked",
            "POST /devices/pair HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            411,
        ),
        (
            "two lengths",
            "POST /devices/pair HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            400,
        ),
        (
            "a negative length",
            "POST /devices/pair HTTP/1.1\r\nHost: h\r\nContent-Length: -2\r\n\r\n{}",
            400,
        ),
        ("GET", "GET /devices/pair HTTP/1.1\r\nHost: h\r\n\r\n", 405),
    ] {
        let a = exchange(addr(&t), head.as_bytes());
        assert_eq!(a.status, status, "{what}: {a:?}");
    }
    assert!(t.gw.devices("alice").unwrap().is_empty());
    // None of it spent the code (and none counted as a wrong code).
    assert_eq!(post(addr(&t), "ext-1", &good).status, 200);
}

// R-DEV-PAIR, hostile input: a body that trickles in (slowloris) or a head announcing more
// bytes than it sends is answered 408 at the channel's deadline on the gateway's clock, while
// other clients are served meanwhile; a head announcing fewer bytes than it sends is judged on
// the bytes it announced.
#[test]
fn r_dev_pair_slow_and_lying_bodies_meet_the_deadline() {
    let clock = ManualClock::new();
    let t = gateway(Some(&clock));
    let good = code(&t, "alice");
    let full = body("ext-1", &good).to_string();
    // Announces the whole body, sends a third of it.
    let mut slow = connect(addr(&t));
    let raw = post_raw(full.as_bytes(), "");
    let cut = raw.len() - full.len() * 2 / 3;
    slow.write_all(&raw[..cut]).unwrap();
    // Another client is served while the slow one waits.
    let other = post(addr(&t), "ext-2", &code(&t, "alice"));
    assert_eq!(other.status, 200);
    // Nothing is answered to the slow one before its deadline.
    slow.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(
        slow.read(&mut byte).is_err(),
        "answered before the deadline"
    );
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    clock.advance(Duration::from_secs(2));
    let a = read_answer(&mut slow);
    assert_eq!(a.status, 408, "{a:?}");
    assert_eq!(a.error_code(), "REQUEST_TIMEOUT");
    // A length shorter than the body: the announced bytes are not JSON.
    let lying =
        format!("POST /devices/pair HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n{full}");
    let a = exchange(addr(&t), lying.as_bytes());
    assert_eq!(a.status, 400, "{a:?}");
    // A head that never ends is dropped at the same deadline (nothing was promised to it).
    let mut endless = connect(addr(&t));
    endless
        .write_all(b"POST /devices/pair HTTP/1.1\r\nHost: h\r\n")
        .unwrap();
    // A later connection answered: the endless one was accepted (its deadline set) before it.
    let pre = "OPTIONS /devices/pair HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_eq!(exchange(addr(&t), pre.as_bytes()).status, 204);
    clock.advance(Duration::from_secs(2));
    let mut rest = Vec::new();
    let started = Instant::now();
    let _ = endless.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "not dropped at its deadline"
    );
    assert!(rest.is_empty());
    // None of that spent the code.
    assert_eq!(post(addr(&t), "ext-1", &good).status, 200);
}

// R-DEV-PAIR: two clients racing with one code: exactly one device, exactly one token.
#[test]
fn r_dev_pair_two_concurrent_uses_of_one_code_pair_exactly_once() {
    let clock = ManualClock::new();
    let t = gateway(Some(&clock));
    for round in 0..10 {
        // Each round's loser is a wrong try: the window moves on between rounds.
        clock.advance(Duration::from_secs(61));
        let c = code(&t, "alice");
        let barrier = Arc::new(Barrier::new(2));
        let a = addr(&t);
        let racers: Vec<_> = (0..2)
            .map(|i| {
                let (barrier, c) = (Arc::clone(&barrier), c.clone());
                std::thread::spawn(move || {
                    let raw = post_raw(
                        body(&format!("ext-{round}-{i}"), &c).to_string().as_bytes(),
                        "",
                    );
                    let mut s = connect(a);
                    barrier.wait();
                    s.write_all(&raw).unwrap();
                    read_answer(&mut s).status
                })
            })
            .collect();
        let mut statuses: Vec<u16> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        statuses.sort();
        assert_eq!(statuses, [200, 401], "round {round}");
        assert_eq!(t.gw.devices("alice").unwrap().len(), round + 1);
    }
}

// R-DEV-PAIR over TLS: the route answers on a wss:// listener too.
#[test]
fn r_dev_pair_over_tls() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_pem = cert.cert.pem();
    let tls = ChannelTls::from_pem(
        cert_pem.as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let t = builder()
        .channel_with(ChannelOptions::new("127.0.0.1:0").with_tls(tls))
        .build();
    let mut s = worker::tls_client(connect(addr(&t)), &cert_pem);
    let b = body("ext-1", &code(&t, "alice")).to_string();
    s.write_all(&post_raw(b.as_bytes(), "")).unwrap();
    let mut out = Vec::new();
    // The server ends with a TCP shutdown after its answer (no TLS close_notify is promised).
    let _ = s.read_to_end(&mut out);
    let a = parse(&out);
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.json()["token"].as_str().unwrap().starts_with("jgd_"));
}

// R-LOG: neither the pairing code (in any spelling) nor the token reaches a log record of any
// crate at any level, through a success, a failure and a rate limit.
#[test]
fn r_log_pairing_code_and_token_never_logged() {
    log_capture::install(log_capture::everything);
    let t = gateway(None);
    let c = code(&t, "alice");
    let a = post(addr(&t), "ext-1", &c);
    assert_eq!(a.status, 200);
    let token = a.json()["token"].as_str().unwrap().to_string();
    let wrong = "WXYZ-2345";
    for _ in 0..6 {
        post(addr(&t), "ext-1", wrong);
    }
    // (No WebSocket client here: the test's own client library, tungstenite, traces the frames
    // it sends, token included; the gateway's side is covered by tests/log_privacy_channel.rs.)
    let deadline = Instant::now() + Duration::from_secs(5);
    while !log_capture::records()
        .iter()
        .any(|r| r.message.contains("too many wrong codes"))
    {
        assert!(Instant::now() < deadline, "no rate-limit record");
        std::thread::sleep(Duration::from_millis(10));
    }
    let records = log_capture::records();
    assert!(records.iter().any(|r| r.message.contains("paired")));
    assert!(records
        .iter()
        .any(|r| r.message.contains("wrong, used or expired")));
    let canonical = c.replace('-', "");
    for r in &records {
        for secret in [
            &c,
            &canonical,
            &token,
            &wrong.to_string(),
            &"WXYZ2345".to_string(),
        ] {
            assert!(
                !r.message.contains(secret.as_str()),
                "a secret in a log record: {}",
                r.target
            );
        }
    }
}

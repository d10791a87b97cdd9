//! Raw peers that break the WebSocket protocol, on both sides of the channel (R-DEV-CHAN):
//! a 20 MB frame, a reserved opcode, an unmasked client frame (a masked server frame), invalid
//! UTF-8 text, a fragmented control frame, reserved bits. The gateway and the worker answer each
//! with the right close code, never panic (tests run in debug, so a debug assertion would count:
//! a panic hook counts every panic of this binary), never read the failed socket again, and the
//! gateway keeps serving other devices.

mod support;

use jevgate::device::{DeviceToken, DeviceWorker, ToolCall, WorkerOptions};
use jevgate::Gateway;
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};
use support::gateway::Counting;

const PATH: &str = "/v1/device-worker/channel";
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

static PANICS: AtomicUsize = AtomicUsize::new(0);
static HOOK: Once = Once::new();

/// Counts every panic in this test binary (threads of the gateway and worker included).
fn count_panics() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

fn accept_key(key: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.as_bytes());
    ctx.update(GUID.as_bytes());
    data_encoding::BASE64.encode(ctx.finish().as_ref())
}

/// One frame; `mask` as a client must, or not as a hostile one may.
fn frame(first: u8, payload: &[u8], mask: bool) -> Vec<u8> {
    let mut f = vec![first];
    let bit = if mask { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => f.push(bit | n as u8),
        n if n <= 0xFFFF => {
            f.push(bit | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(bit | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if mask {
        let key = [0x37, 0xFA, 0x21, 0x3D];
        f.extend_from_slice(&key);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i & 3]));
    } else {
        f.extend_from_slice(payload);
    }
    f
}

fn text(payload: &str) -> Vec<u8> {
    frame(0x81, payload.as_bytes(), true)
}

fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "the head ended early");
        head.push(b[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A raw client after the upgrade handshake.
fn raw_client(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    write!(
        s,
        "GET {PATH} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n\r\n"
    )
    .unwrap();
    let head = read_head(&mut s);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head.contains(&accept_key(key)));
    s
}

/// Reads frames (unmasked, from a server; masked, from a client) until a close frame; returns
/// its code and reason, or `None` when the stream ends or resets first.
fn read_close(s: &mut TcpStream) -> Option<(u16, String)> {
    let end = Instant::now() + Duration::from_secs(10);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    while Instant::now() < end {
        // Parse what we have.
        loop {
            if buf.len() < 2 {
                break;
            }
            let masked = buf[1] & 0x80 != 0;
            let (len, mut at) = match buf[1] & 0x7F {
                126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                127 if buf.len() >= 10 => (
                    u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                126 | 127 => break,
                n => (n as usize, 2),
            };
            let key = if masked {
                if buf.len() < at + 4 {
                    break;
                }
                at += 4;
                Some([buf[at - 4], buf[at - 3], buf[at - 2], buf[at - 1]])
            } else {
                None
            };
            if buf.len() < at + len {
                break;
            }
            let mut payload: Vec<u8> = buf[at..at + len].to_vec();
            if let Some(k) = key {
                payload
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b ^= k[i & 3]);
            }
            let opcode = buf[0] & 0x0F;
            buf.drain(..at + len);
            if opcode == 8 {
                if payload.len() < 2 {
                    return Some((1005, String::new()));
                }
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                return Some((code, String::from_utf8(payload[2..].to_vec()).unwrap()));
            }
        }
        match s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
        }
    }
    None
}

/// Pairs a browser for alice and returns its token's text.
fn pair(gw: &Gateway, installation: &str) -> String {
    support::gateway::pair(gw, "alice", installation).token_text()
}

/// A worker executor that answers every command with some text.
fn echo() -> Arc<Counting> {
    Counting::new(json!({"text": "fine"})).0
}

fn authenticate(s: &mut TcpStream, token: &str) {
    let auth =
        json!({"type": "authenticate", "authorization": format!("Device {token}"), "protocol": 2});
    s.write_all(&text(&auth.to_string())).unwrap();
}

// R-DEV-CHAN: every violation, before and after authentication, closes only that connection
// with its code; the gateway never panics and keeps serving the good device.
#[test]
fn r_dev_chan_protocol_violations_from_a_raw_worker_close_only_that_connection() {
    count_panics();
    let mut options = support::gateway::channel_options();
    options.auth_timeout = Duration::from_secs(5);
    let t = support::gateway::builder().channel_with(options).build();
    let (gw, channel) = (&t.gw, t.channel());
    let addr = channel.local_addr();
    let good_token = pair(gw, "good");
    let good = DeviceWorker::connect(
        WorkerOptions::new(channel.url(), DeviceToken::new(good_token)),
        echo(),
    )
    .unwrap();
    let call = || {
        gw.call_tool(&ToolCall::new(
            "alice",
            "s1",
            "browser_get_text",
            json!({"deviceId": good.device_id()}),
        ))
    };
    assert!(call().is_success());

    let cases: Vec<(&str, Vec<u8>, (u16, &str))> = vec![
        (
            "reserved opcode",
            frame(0x83, b"x", true),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "unmasked client frame",
            frame(0x81, b"{}", false),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "invalid UTF-8 text",
            frame(0x81, &[b'{', 0xFF, 0xFE, b'}'], true),
            (1007, "MALFORMED_FRAME"),
        ),
        (
            "fragmented ping",
            frame(0x09, b"p", true),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "reserved bit",
            frame(0xC1, b"{}", true),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "continuation of nothing",
            frame(0x80, b"{}", true),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "1-byte close",
            frame(0x88, &[3], true),
            (1002, "PROTOCOL_ERROR"),
        ),
    ];
    for (i, (what, bytes, want)) in cases.into_iter().enumerate() {
        for authenticated in [false, true] {
            let mut s = raw_client(addr);
            if authenticated {
                authenticate(&mut s, &pair(gw, &format!("bad{i}")));
            }
            s.write_all(&bytes).unwrap();
            // Bytes after the violation are never parsed: a valid frame would be a result.
            let _ = s.write_all(&text(r#"{"type":"ping"}"#));
            let got = read_close(&mut s);
            assert_eq!(
                got.as_ref().map(|(c, r)| (*c, r.as_str())),
                Some(want),
                "{what} (authenticated: {authenticated})"
            );
            assert!(call().is_success(), "{what}: the good device was harmed");
        }
    }

    // A 20 MB frame (over the 1 MiB default), written while the gateway answers.
    let mut s = raw_client(addr);
    authenticate(&mut s, &pair(gw, "huge"));
    let huge = frame(0x81, &vec![b'z'; 20 << 20], true);
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&huge);
    });
    let started = Instant::now();
    assert_eq!(
        read_close(&mut s),
        Some((1009, "MESSAGE_TOO_BIG".to_string()))
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The gateway ends the connection (lingering close), so the writer stops too.
    sender.join().unwrap();
    assert!(call().is_success());
    assert!(good.is_running());

    drop(good);
    gw.close();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a thread panicked");
}

/// A raw gateway: accepts the upgrade, reads the authenticate frame, answers `ready`.
fn raw_gateway(listener: &TcpListener) -> TcpStream {
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = read_head(&mut s);
    let key = head
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap()
        .to_string();
    write!(
        s,
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(&key)
    )
    .unwrap();
    // The authenticate frame (masked, small).
    let mut h = [0u8; 2];
    s.read_exact(&mut h).unwrap();
    let mut rest = vec![0u8; 4 + (h[1] & 0x7F) as usize];
    if h[1] & 0x7F == 126 {
        let mut n = [0u8; 2];
        s.read_exact(&mut n).unwrap();
        rest = vec![0u8; 4 + u16::from_be_bytes(n) as usize];
    }
    s.read_exact(&mut rest).unwrap();
    let ready = json!({"type": "ready", "deviceId": "dev_x"}).to_string();
    s.write_all(&frame(0x81, ready.as_bytes(), false)).unwrap();
    s
}

// R-DEV-CHAN: the worker side — a hostile gateway's violations end the worker's connection with
// the right close code, without a panic and without another read of the failed socket.
#[test]
fn r_dev_chan_protocol_violations_from_a_raw_gateway_end_the_worker_cleanly() {
    count_panics();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}{PATH}", listener.local_addr().unwrap());
    let cases: Vec<(&str, Vec<u8>, (u16, &str))> = vec![
        (
            "reserved opcode",
            frame(0x83, b"x", false),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "masked server frame",
            frame(0x81, b"{}", true),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "invalid UTF-8 text",
            frame(0x81, &[0xC3, 0x28], false),
            (1007, "MALFORMED_FRAME"),
        ),
        (
            "reserved bit",
            frame(0xA1, b"{}", false),
            (1002, "PROTOCOL_ERROR"),
        ),
        (
            "20 MB frame",
            frame(0x81, &vec![b'z'; 20 << 20], false),
            (1009, "MESSAGE_TOO_BIG"),
        ),
    ];
    for (what, bytes, want) in cases {
        let server = std::thread::scope(|scope| {
            let gateway = scope.spawn(|| {
                let mut s = raw_gateway(&listener);
                let mut writer = s.try_clone().unwrap();
                let sender = std::thread::spawn(move || {
                    let _ = writer.write_all(&bytes);
                });
                let got = read_close(&mut s);
                sender.join().unwrap();
                got
            });
            let mut options =
                WorkerOptions::new(url.clone(), DeviceToken::new("jgd_x".to_string()));
            options.max_message_bytes = 1 << 20;
            let worker = DeviceWorker::connect(options, echo()).unwrap();
            let exit = worker
                .wait_timeout(Duration::from_secs(10))
                .unwrap_or_else(|| panic!("{what}: the worker did not end"));
            assert_eq!(exit.close_code, None, "{what}");
            gateway.join().unwrap()
        });
        assert_eq!(
            server.as_ref().map(|(c, r)| (*c, r.as_str())),
            Some(want),
            "{what}"
        );
    }
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a thread panicked");
}

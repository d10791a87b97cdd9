//! Many idle browsers on one process (issue 24): N authenticated idle workers connected to one
//! gateway's channel from a separate process (N = 1,000 and 10,000 by default;
//! `JEVGATE_SCALE_N=1000,10000`), reporting the server's RSS per connection, its threads, the
//! time to connect them all, and the `browser_computer` round trip p50/p99 on one device while
//! the rest idle and while 1,000 of them are called at once — beside a loopback TCP echo of a
//! frame of the same size in the same run (the ratio, as in `benches/channel.rs`).
//!
//! Each N runs in its own server process (a clean RSS), whose clients run in another process
//! (the open-file limit is per process): this one binary plays all three roles, chosen by
//! `JEVGATE_SCALE_ROLE`. The clients are a small non-blocking WebSocket client on mio: upgrade,
//! authenticate (protocol 2), answer every command at once and every ping with a pong.
//!
//! With TLS (`wss://`, rustls on both sides) the same is measured for N = 1,000
//! (`JEVGATE_SCALE_TLS_N`, 0 to skip): `rss_per_conn_kb_tls` in the final line.
//!
//! Final line: `channel_scale: n=… rss_per_conn_kb=… threads=… connect_ms=… p50_us=… p99_us=…
//! p50_ratio=… busy1000_p99_us=… rss_per_conn_kb_tls=…` (for the largest N; one
//! `channel_scale_n:` line per run before it).

use jevgate::device::{BrowserInfo, ChannelOptions, PairRequest, ToolCall};
use jevgate::{Gateway, GatewayOptions};
use mio::net::TcpStream as MioStream;
use mio::{Events, Interest, Poll, Token};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROLE: &str = "JEVGATE_SCALE_ROLE";
const PATH: &str = "/v1/device-worker/channel";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("server") => server(),
        Ok("client") => client(),
        _ => driver(),
    }
}

fn raise_open_files() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let l = getrlimit(Resource::Nofile);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: l.maximum,
            maximum: l.maximum,
        },
    );
}

// ----- the driver: one server process per N -----

fn driver() {
    let ns: Vec<usize> = std::env::var("JEVGATE_SCALE_N")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let tls_n: usize = std::env::var("JEVGATE_SCALE_TLS_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let exe = std::env::current_exe().unwrap();
    let run = |n: usize, tls: bool| {
        let out = Command::new(&exe)
            .env(ROLE, "server")
            .env("JEVGATE_SCALE_THIS_N", n.to_string())
            .env("JEVGATE_SCALE_THIS_TLS", if tls { "1" } else { "0" })
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        print!("{text}");
        assert!(out.status.success(), "the server for n={n} failed");
        text.lines()
            .find(|l| l.starts_with("channel_scale_n:"))
            .map(str::to_string)
            .unwrap_or_default()
    };
    let mut last = String::new();
    for n in ns {
        last = run(n, false).replacen("channel_scale_n:", "channel_scale:", 1);
    }
    let tls_kb = if tls_n > 0 {
        let line = run(tls_n, true);
        line.split_whitespace()
            .find_map(|f| f.strip_prefix("rss_per_conn_kb="))
            .unwrap_or("-")
            .to_string()
    } else {
        "-".to_string()
    };
    println!("{last} rss_per_conn_kb_tls={tls_kb}");
}

// ----- the server: a gateway, N paired devices, the clients in a child process -----

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

fn pct(v: &mut [Duration], p: usize) -> Duration {
    v.sort();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn server() {
    raise_open_files();
    let n: usize = std::env::var("JEVGATE_SCALE_THIS_N")
        .unwrap()
        .parse()
        .unwrap();
    let tls = std::env::var("JEVGATE_SCALE_THIS_TLS").as_deref() == Ok("1");
    let dir = tempfile::tempdir().unwrap();
    let gw = Arc::new(Gateway::open(GatewayOptions::new(dir.path(), Default::default())).unwrap());
    let mut options = ChannelOptions::new("127.0.0.1:0");
    let cert_file = dir.path().join("cert.pem");
    if tls {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(&cert_file, cert.cert.pem()).unwrap();
        let tls = jevgate::device::ChannelTls::from_pem(
            cert.cert.pem().as_bytes(),
            cert.signing_key.serialize_pem().as_bytes(),
        )
        .unwrap();
        options = options.with_tls(tls);
    }
    // One address connects them all: its handshakes in flight may reach the client's window.
    options.max_unauthenticated_per_address = 256;
    options.max_connections = options.max_connections.max(n);
    let channel = gw.serve_channel(options).unwrap();
    let started = Instant::now();
    let mut devices = Vec::with_capacity(n);
    let mut tokens = String::new();
    for i in 0..n {
        let p = gw
            .pair(
                "bench",
                &PairRequest {
                    installation_id: format!("i{i}"),
                    name: format!("bench {i}"),
                    browser: Some(BrowserInfo {
                        name: "Chromium".into(),
                        version: "131".into(),
                    }),
                },
            )
            .unwrap();
        devices.push(p.device.id.clone());
        tokens.push_str(p.token.expose());
        tokens.push('\n');
    }
    eprintln!("n={n}: paired in {:?}", started.elapsed());
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, tokens).unwrap();
    let rss_before = rss_kb();
    let threads_before = threads();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(ROLE, "client")
        .arg(channel.local_addr().to_string())
        .arg(&token_file)
        .arg(if tls {
            cert_file.as_os_str()
        } else {
            "-".as_ref()
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.next().unwrap().unwrap();
    let connect_ms: f64 = ready
        .strip_prefix("ready ")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("client said {ready:?}"));
    // Every device online as the gateway sees it.
    let deadline = Instant::now() + Duration::from_secs(120);
    while gw
        .devices("bench")
        .unwrap()
        .iter()
        .filter(|d| d.online)
        .count()
        < n
    {
        assert!(Instant::now() < deadline, "not every device came online");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_after = rss_kb();
    let threads_after = threads();
    let rss_per_conn_kb = (rss_after.saturating_sub(rss_before)) as f64 / n as f64;

    let click = |device: &str, session: &str| {
        let mut call = ToolCall::new(
            "bench",
            session,
            "browser_computer",
            json!({"action": "click", "ref": "ref_3"}),
        );
        call.device_id = Some(device.to_string());
        call
    };
    let one = click(&devices[0], "conv0");
    let frame_len = {
        let r = gw.call_tool(&one);
        assert!(r.is_success(), "{r:?}");
        r.to_json().to_string().len()
    };
    let iterations = 1000;
    let mut idle_calls = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        let r = gw.call_tool(&one);
        idle_calls.push(t.elapsed());
        assert!(r.is_success());
    }

    // 1,000 devices called at once (each by its own thread, in a loop) while device 0 is timed.
    let busy = 1000.min(n.saturating_sub(1));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (1..=busy)
        .map(|i| {
            let gw = Arc::clone(&gw);
            let stop = Arc::clone(&stop);
            let call = click(&devices[i], &format!("conv{i}"));
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let mut done = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let _ = gw.call_tool(&call);
                        done += 1;
                    }
                    done
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut busy_calls = Vec::with_capacity(200);
    let busy_started = Instant::now();
    for _ in 0..200 {
        let t = Instant::now();
        let r = gw.call_tool(&one);
        busy_calls.push(t.elapsed());
        assert!(r.is_success(), "{r:?}");
    }
    let busy_elapsed = busy_started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let background: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();

    let floor = echo_p50(frame_len, iterations);
    drop(child.stdin.take());
    let _ = child.wait();
    channel.stop();
    gw.close();

    let p50 = pct(&mut idle_calls, 50);
    let p99 = pct(&mut idle_calls, 99);
    let busy_p50 = pct(&mut busy_calls, 50);
    let busy_p99 = pct(&mut busy_calls, 99);
    let tls_word = if tls { " (wss)" } else { "" };
    println!(
        "n={n}{tls_word}: RSS {rss_before} kB → {rss_after} kB ({rss_per_conn_kb:.1} kB per connection), threads {threads_before} → {threads_after}, connected in {connect_ms:.0} ms"
    );
    println!(
        "n={n}{tls_word}: browser_computer click p50 {:.1} µs p99 {:.1} µs idle; p50 {:.1} µs p99 {:.1} µs with {busy} devices busy ({} background calls in {:?}); tcp echo p50 {:.1} µs ({frame_len} bytes)",
        us(p50),
        us(p99),
        us(busy_p50),
        us(busy_p99),
        background,
        busy_elapsed,
        us(floor)
    );
    println!(
        "channel_scale_n: n={n} rss_per_conn_kb={rss_per_conn_kb:.1} threads={threads_after} connect_ms={connect_ms:.0} p50_us={:.1} p99_us={:.1} p50_ratio={:.2} busy1000_p99_us={:.1}",
        us(p50),
        us(p99),
        p50.as_secs_f64() / floor.as_secs_f64(),
        us(busy_p99)
    );
}

/// The floor: a line of `len` bytes echoed over loopback TCP by a blocking thread, p50.
fn echo_p50(len: usize, iterations: usize) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        conn.set_nodelay(true).unwrap();
        let mut writer = conn.try_clone().unwrap();
        let mut reader = BufReader::new(conn);
        let mut line = String::new();
        while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            writer.write_all(line.as_bytes()).unwrap();
            line.clear();
        }
    });
    let client = TcpStream::connect(addr).unwrap();
    client.set_nodelay(true).unwrap();
    let mut writer = client.try_clone().unwrap();
    let mut reader = BufReader::new(client);
    let payload = format!("{}\n", "x".repeat(len));
    let mut echoes = Vec::with_capacity(iterations);
    let mut line = String::new();
    for _ in 0..iterations {
        let t = Instant::now();
        writer.write_all(payload.as_bytes()).unwrap();
        line.clear();
        reader.read_line(&mut line).unwrap();
        echoes.push(t.elapsed());
    }
    pct(&mut echoes, 50)
}

// ----- the clients: N WebSocket workers on one mio loop -----

#[derive(PartialEq)]
enum State {
    Upgrading,
    Authenticating,
    Ready,
    Closed,
}

struct Client {
    stream: MioStream,
    tls: Option<rustls::ClientConnection>,
    state: State,
    token: String,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
}

/// A masked client frame (the key need not be secret here: a bench's own loopback traffic).
fn frame(opcode: u8, payload: &[u8], key: [u8; 4], out: &mut Vec<u8>) {
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&key);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i & 3]));
}

/// One unmasked server frame from the front of `buf`: (opcode, payload, its length in bytes).
fn parse(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0F;
    let (len, at) = match buf[1] & 0x7F {
        126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
        127 if buf.len() >= 10 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[2..10]);
            (u64::from_be_bytes(b) as usize, 10)
        }
        126 | 127 => return None,
        n => (n as usize, 2),
    };
    (buf.len() >= at + len).then(|| (opcode, buf[at..at + len].to_vec(), at + len))
}

impl Client {
    /// Queues bytes to send (through TLS when there is TLS).
    fn queue(&mut self, bytes: &[u8]) {
        match &mut self.tls {
            Some(tls) => tls.writer().write_all(bytes).unwrap(),
            None => self.wbuf.extend_from_slice(bytes),
        }
    }

    fn flush(&mut self) {
        if let Some(tls) = &mut self.tls {
            while tls.wants_write() {
                match tls.write_tls(&mut self.stream) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                    Err(_) => {
                        self.state = State::Closed;
                        return;
                    }
                }
            }
            return;
        }
        while !self.wbuf.is_empty() {
            match self.stream.write(&self.wbuf) {
                Ok(n) => {
                    self.wbuf.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.state = State::Closed;
                    return;
                }
            }
        }
    }

    /// Reads what is there and answers; returns whether it just became ready.
    fn service(&mut self, key: [u8; 4]) -> bool {
        let mut became_ready = false;
        let mut chunk = [0u8; 16 * 1024];
        if let Some(tls) = &mut self.tls {
            loop {
                match tls.read_tls(&mut self.stream) {
                    Ok(0) => {
                        self.state = State::Closed;
                        break;
                    }
                    Ok(_) => {
                        if tls.process_new_packets().is_err() {
                            self.state = State::Closed;
                            break;
                        }
                        loop {
                            match tls.reader().read(&mut chunk) {
                                Ok(0) => break,
                                Ok(n) => self.rbuf.extend_from_slice(&chunk[..n]),
                                Err(_) => break,
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        self.state = State::Closed;
                        break;
                    }
                }
            }
        }
        while self.tls.is_none() {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.state = State::Closed;
                    break;
                }
                Ok(n) => self.rbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.state = State::Closed;
                    break;
                }
            }
        }
        if self.state == State::Upgrading {
            if let Some(end) = self.rbuf.windows(4).position(|w| w == b"\r\n\r\n") {
                assert!(self.rbuf.starts_with(b"HTTP/1.1 101"), "upgrade refused");
                self.rbuf.drain(..end + 4);
                let auth = json!({"type": "authenticate", "authorization": format!("Device {}", self.token), "protocol": 2});
                let mut out = Vec::new();
                frame(1, auth.to_string().as_bytes(), key, &mut out);
                self.queue(&out);
                self.state = State::Authenticating;
            }
        }
        if self.state != State::Upgrading {
            while let Some((opcode, payload, used)) = parse(&self.rbuf) {
                self.rbuf.drain(..used);
                match opcode {
                    1 => {
                        let v: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                        match v["type"].as_str() {
                            Some("ready") => {
                                self.state = State::Ready;
                                became_ready = true;
                            }
                            Some("command") => {
                                let answer = json!({"type": "result", "id": v["id"], "success": true, "result": {"clicked": true}});
                                let mut out = Vec::new();
                                frame(1, answer.to_string().as_bytes(), key, &mut out);
                                self.queue(&out);
                            }
                            _ => {}
                        }
                    }
                    8 => self.state = State::Closed,
                    9 => {
                        let mut out = Vec::new();
                        frame(10, &payload, key, &mut out);
                        self.queue(&out);
                    }
                    _ => {}
                }
            }
        }
        self.flush();
        became_ready
    }
}

fn client() {
    raise_open_files();
    let args: Vec<String> = std::env::args().collect();
    let addr: SocketAddr = args[1].parse().unwrap();
    let tokens: Vec<String> = std::fs::read_to_string(&args[2])
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let n = tokens.len();
    let tls_config = (args[3] != "-").then(|| {
        use rustls::pki_types::pem::PemObject;
        let pem = std::fs::read(&args[3]).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.unwrap()).unwrap();
        }
        Arc::new(
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
        )
    });
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = std::io::stdin().read_to_string(&mut sink);
            stop.store(true, Ordering::Relaxed);
        });
    }
    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(1024);
    let mut clients: Vec<Client> = Vec::with_capacity(n);
    let mut pending = tokens.into_iter();
    let window = 200;
    let (mut in_flight, mut ready) = (0usize, 0usize);
    let started = Instant::now();
    let mut said_ready = false;
    let mut counter: u32 = 1;
    loop {
        while in_flight < window {
            let Some(token) = pending.next() else { break };
            let mut stream = MioStream::connect(addr).unwrap();
            let _ = stream.set_nodelay(true);
            let id = clients.len();
            poll.registry()
                .register(
                    &mut stream,
                    Token(id),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .unwrap();
            let tls = tls_config.as_ref().map(|config| {
                let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
                rustls::ClientConnection::new(Arc::clone(config), name).unwrap()
            });
            let mut client = Client {
                stream,
                tls,
                state: State::Upgrading,
                token,
                rbuf: Vec::new(),
                wbuf: Vec::new(),
            };
            let upgrade = format!(
                "GET {PATH} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            );
            client.queue(upgrade.as_bytes());
            client.flush();
            clients.push(client);
            in_flight += 1;
        }
        if ready == n && !said_ready {
            said_ready = true;
            println!("ready {:.0}", started.elapsed().as_secs_f64() * 1000.0);
            std::io::stdout().flush().unwrap();
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        poll.poll(&mut events, Some(Duration::from_millis(100)))
            .unwrap();
        for event in events.iter() {
            let Some(c) = clients.get_mut(event.token().0) else {
                continue;
            };
            counter = counter.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let was_closed = c.state == State::Closed;
            if c.service(counter.to_be_bytes()) {
                ready += 1;
                in_flight -= 1;
            }
            if c.state == State::Closed && !was_closed {
                panic!("a client was closed by the gateway");
            }
        }
    }
}

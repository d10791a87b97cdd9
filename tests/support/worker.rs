//! A scripted device worker for tests: a real WebSocket client (tungstenite over loopback,
//! optionally TLS) that authenticates, then answers commands as its handler says and records
//! every command, cancel, ping and close it sees.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

pub const PATH: &str = "/v1/device-worker/channel";

/// Plain or TLS client stream.
#[derive(Debug)]
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

pub type Ws = WebSocket<Stream>;

/// A TLS client over `tcp` for the name `localhost`, trusting only the certificates in
/// `root_pem` (the test's self-signed one).
pub fn tls_client(
    tcp: TcpStream,
    root_pem: &str,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(root_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// Opens a WebSocket to `path` (plain, or TLS trusting `tls_root_pem` for `localhost`).
pub fn open(
    addr: SocketAddr,
    path: &str,
    tls_root_pem: Option<&str>,
) -> Result<Ws, tungstenite::Error> {
    let tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    let (stream, url) = match tls_root_pem {
        None => (Stream::Plain(tcp), format!("ws://{addr}{path}")),
        Some(pem) => (
            Stream::Tls(Box::new(tls_client(tcp, pem))),
            format!("wss://localhost:{}{path}", addr.port()),
        ),
    };
    let config = WebSocketConfig::default().max_message_size(Some(64 << 20));
    match tungstenite::client::client_with_config(url, stream, Some(config)) {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::HandshakeError::Failure(e)) => Err(e),
        Err(tungstenite::HandshakeError::Interrupted(_)) => Err(tungstenite::Error::Io(
            std::io::ErrorKind::WouldBlock.into(),
        )),
    }
}

/// How the server ended a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub code: u16,
    pub reason: String,
}

/// Reads until a close frame (or the socket ends) within 5 s.
pub fn read_close(ws: &mut Ws) -> Option<Closed> {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        match ws.read() {
            Ok(Message::Close(Some(frame))) => {
                return Some(Closed {
                    code: u16::from(frame.code),
                    reason: frame.reason.to_string(),
                })
            }
            Ok(Message::Close(None)) => {
                return Some(Closed {
                    code: 1005,
                    reason: String::new(),
                })
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Sends an authenticate frame (`protocol: None` omits it) and waits for ready or a close.
pub fn authenticate(ws: &mut Ws, token: &str, protocol: Option<u64>) -> Result<String, Closed> {
    let mut frame = json!({"type": "authenticate", "authorization": format!("Device {token}")});
    if let Some(p) = protocol {
        frame["protocol"] = json!(p);
    }
    ws.send(Message::text(frame.to_string())).unwrap();
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(&t).unwrap();
                assert_eq!(v["type"], "ready");
                return Ok(v["deviceId"].as_str().unwrap().to_string());
            }
            Ok(Message::Close(Some(frame))) => {
                return Err(Closed {
                    code: u16::from(frame.code),
                    reason: frame.reason.to_string(),
                })
            }
            Ok(Message::Close(None)) => {
                return Err(Closed {
                    code: 1005,
                    reason: String::new(),
                })
            }
            Ok(_) => {}
            Err(e) => {
                return Err(Closed {
                    code: 0,
                    reason: e.to_string(),
                })
            }
        }
    }
}

/// A command as the worker received it.
#[derive(Debug, Clone)]
pub struct Cmd {
    pub id: String,
    pub tool: String,
    pub args: Value,
    pub deadline_ms: u64,
}

/// What the worker does after receiving a command.
pub enum Out {
    /// `{"type":"result","id","success":true,"result"}`.
    Ok(String, Value),
    /// `{"type":"result","id","success":false,"errorCode","message"}`.
    Fail(String, &'static str, &'static str),
    /// Sleep (blocks the worker).
    Sleep(Duration),
    /// Send this text as is.
    Raw(String),
    /// Send a binary message.
    Binary(Vec<u8>),
    /// Drop the socket without a close handshake.
    Disconnect,
}

pub type Handler = Box<dyn FnMut(&Cmd) -> Vec<Out> + Send>;

/// What the worker saw.
#[derive(Default)]
pub struct Log {
    pub commands: Mutex<Vec<Cmd>>,
    pub cancels: Mutex<Vec<String>>,
    pub pings: Mutex<usize>,
    pub texts: Mutex<Vec<Value>>,
    pub closed: Mutex<Option<Closed>>,
    pub ended: AtomicBool,
}

impl Log {
    pub fn commands(&self) -> Vec<Cmd> {
        self.commands.lock().unwrap().clone()
    }
    pub fn cancels(&self) -> Vec<String> {
        self.cancels.lock().unwrap().clone()
    }
    pub fn closed(&self) -> Option<Closed> {
        self.closed.lock().unwrap().clone()
    }
}

/// A running scripted worker.
pub struct Worker {
    pub device_id: String,
    pub log: Arc<Log>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    outbox: Arc<Mutex<Vec<Out>>>,
}

impl Worker {
    /// Connects, authenticates with protocol 2 and starts answering with `handler`.
    pub fn start(addr: SocketAddr, token: &str, handler: Handler) -> Worker {
        Worker::start_with(addr, token, Some(2), None, handler)
    }

    pub fn start_with(
        addr: SocketAddr,
        token: &str,
        protocol: Option<u64>,
        tls_root: Option<&str>,
        handler: Handler,
    ) -> Worker {
        let mut ws = open(addr, PATH, tls_root).expect("connect");
        let device_id = authenticate(&mut ws, token, protocol).expect("ready");
        Worker::run(ws, device_id, handler)
    }

    fn run(mut ws: Ws, device_id: String, mut handler: Handler) -> Worker {
        match ws.get_mut() {
            Stream::Plain(s) => s.set_read_timeout(Some(Duration::from_millis(5))).unwrap(),
            Stream::Tls(s) => s
                .sock
                .set_read_timeout(Some(Duration::from_millis(5)))
                .unwrap(),
        }
        let log = Arc::new(Log::default());
        let stop = Arc::new(AtomicBool::new(false));
        let outbox: Arc<Mutex<Vec<Out>>> = Arc::default();
        let (l, s, o) = (Arc::clone(&log), Arc::clone(&stop), Arc::clone(&outbox));
        let thread = std::thread::spawn(move || {
            'outer: while !s.load(Ordering::Acquire) {
                let queued: Vec<Out> = std::mem::take(&mut *o.lock().unwrap());
                for out in queued {
                    if !perform(&mut ws, out) {
                        break 'outer;
                    }
                }
                match ws.read() {
                    Ok(Message::Text(t)) => {
                        let v: Value = serde_json::from_str(&t).unwrap();
                        l.texts.lock().unwrap().push(v.clone());
                        match v["type"].as_str() {
                            Some("command") => {
                                let cmd = Cmd {
                                    id: v["id"].as_str().unwrap().to_string(),
                                    tool: v["tool"].as_str().unwrap().to_string(),
                                    args: v["args"].clone(),
                                    deadline_ms: v["deadlineMs"].as_u64().unwrap(),
                                };
                                l.commands.lock().unwrap().push(cmd.clone());
                                for out in handler(&cmd) {
                                    if !perform(&mut ws, out) {
                                        break 'outer;
                                    }
                                }
                            }
                            Some("cancel") => l
                                .cancels
                                .lock()
                                .unwrap()
                                .push(v["id"].as_str().unwrap().to_string()),
                            _ => {}
                        }
                    }
                    Ok(Message::Ping(_)) => *l.pings.lock().unwrap() += 1,
                    Ok(Message::Close(frame)) => {
                        *l.closed.lock().unwrap() = Some(frame.map_or(
                            Closed {
                                code: 1005,
                                reason: String::new(),
                            },
                            |f| Closed {
                                code: u16::from(f.code),
                                reason: f.reason.to_string(),
                            },
                        ));
                        let _ = ws.flush();
                    }
                    Ok(_) => {}
                    Err(tungstenite::Error::Io(e))
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        let _ = ws.flush();
                    }
                    Err(_) => break,
                }
            }
            l.ended.store(true, Ordering::Release);
        });
        Worker {
            device_id,
            log,
            stop,
            thread: Some(thread),
            outbox,
        }
    }

    /// Has the worker send `out` from its thread.
    pub fn send(&self, out: Out) {
        self.outbox.lock().unwrap().push(out);
    }

    /// Whether the worker's connection ended.
    pub fn ended(&self) -> bool {
        self.log.ended.load(Ordering::Acquire)
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn perform(ws: &mut Ws, out: Out) -> bool {
    let sent = match out {
        Out::Ok(id, result) => ws.send(Message::text(
            json!({"type": "result", "id": id, "success": true, "result": result}).to_string(),
        )),
        Out::Fail(id, code, message) => ws.send(Message::text(
            json!({"type": "result", "id": id, "success": false, "errorCode": code, "message": message}).to_string(),
        )),
        Out::Sleep(d) => {
            std::thread::sleep(d);
            Ok(())
        }
        Out::Raw(text) => ws.send(Message::text(text)),
        Out::Binary(bytes) => ws.send(Message::binary(bytes)),
        Out::Disconnect => {
            match ws.get_mut() {
                Stream::Plain(s) => {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                Stream::Tls(s) => {
                    let _ = s.sock.shutdown(std::net::Shutdown::Both);
                }
            }
            return false;
        }
    };
    sent.is_ok()
        || matches!(sent, Err(tungstenite::Error::Io(ref e)) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// Echo handler: answers every command with `{"tool", "args"}`.
pub fn echo() -> Handler {
    Box::new(|cmd: &Cmd| {
        vec![Out::Ok(
            cmd.id.clone(),
            json!({"tool": cmd.tool, "args": cmd.args}),
        )]
    })
}

/// Handler that never answers.
pub fn silent() -> Handler {
    Box::new(|_: &Cmd| Vec::new())
}

/// Polls `cond` every 5 ms for up to 5 s.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

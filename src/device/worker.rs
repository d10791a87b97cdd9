//! The worker side of the channel (R-DEV-CHAN): a [`DeviceWorker`] connects out to a gateway's
//! `/v1/device-worker/channel` with a device token, authenticates with protocol 2 and serves
//! every command with a [`ToolExecutor`] — for the reference worker, the nine tools of a local
//! Chromium ([`crate::browser::BrowserTools`]).
//!
//! It owns one I/O thread (the socket: sleeps until the gateway sends something or a result is
//! ready, writes results, answers pings, routes cancels) and one executor thread (runs commands one at a time, in order). It
//! never runs a command twice, never retries after a disconnect (the gateway reports the
//! outcome as unknown), and never logs its token or any command's arguments or results. The
//! WebSocket is the channel's own (`wire.rs`, which logs nothing): after a protocol or I/O
//! failure the socket is never read again (one close frame with the matching code, then a
//! lingering close).

use std::collections::HashMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::executor::ToolExecutor;
use super::frames::{self, parse_gateway_frame, GatewayFrame, PROTOCOL_VERSION};
use super::registry::DeviceToken;
use super::socket::Wake;
use super::wire::{self, HandshakeError, Message, WireError};
use crate::clock::{self, wait_slice, SharedClock};
use crate::CancelToken;
use crate::{Error, Result};

/// The read timeout of the connect phase (handshake, `ready`).
const POLL: Duration = Duration::from_millis(5);

/// The longest sleep of the I/O thread when nothing wakes it.
const MAX_WAIT: Duration = Duration::from_millis(500);

/// How long a result frame may take to write.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the worker reaches a gateway.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// `ws://host:port/v1/device-worker/channel` or `wss://…` ([`crate::device::ChannelHandle::url`]).
    pub url: String,
    /// The device token from pairing (sent in the first frame, never logged).
    pub token: DeviceToken,
    /// For `wss`: PEM certificates to trust instead of the public web roots (a private CA or a
    /// self-signed gateway).
    pub tls_roots_pem: Option<Vec<u8>>,
    /// The protocol number sent (2; lower numbers exist to test refusals).
    pub protocol: u64,
    /// Connecting, the TLS and WebSocket handshakes and the `ready` answer must fit in this.
    pub connect_timeout: Duration,
    /// The largest message accepted from the gateway.
    pub max_message_bytes: usize,
    /// The clock every deadline of the worker is on (connecting, closing, `wait_timeout`);
    /// the system clock unless a test or simulation gives its own (R-CLK).
    pub clock: SharedClock,
}

impl WorkerOptions {
    /// Protocol 2, 10 s to connect, messages ≤ 16 MiB, public web roots for `wss`, the system
    /// clock.
    pub fn new(url: impl Into<String>, token: DeviceToken) -> WorkerOptions {
        WorkerOptions {
            url: url.into(),
            token,
            tls_roots_pem: None,
            protocol: PROTOCOL_VERSION,
            connect_timeout: Duration::from_secs(10),
            max_message_bytes: 16 << 20,
            clock: clock::system(),
        }
    }
}

/// The JSON shape of the extra worker options the C ABI takes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WorkerJson {
    #[serde(default)]
    tls_roots_pem: Option<String>,
    #[serde(default)]
    protocol: Option<u64>,
    #[serde(default)]
    connect_timeout_ms: Option<u64>,
}

impl WorkerOptions {
    /// [`WorkerOptions::new`] with `{"tlsRootsPem"?: PEM text, "protocol"?: 2,
    /// "connectTimeoutMs"?: 10000}` applied, or `INVALID_ARGUMENT` (`options_json`).
    pub fn from_json(url: impl Into<String>, token: DeviceToken, json: &str) -> Result<Self> {
        let extra: WorkerJson = crate::args::from_json(
            "options_json",
            json,
            "{tlsRootsPem?, protocol?, connectTimeoutMs?}",
        )?;
        let mut options = WorkerOptions::new(url, token);
        options.tls_roots_pem = extra.tls_roots_pem.map(String::into_bytes);
        if let Some(p) = extra.protocol {
            options.protocol = p;
        }
        if let Some(ms) = extra.connect_timeout_ms {
            options.connect_timeout = Duration::from_millis(ms);
        }
        Ok(options)
    }
}

/// How a worker's connection ended; serialized `{"closeCode","reason"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerExit {
    /// The WebSocket close code the gateway sent (`1001` when it shut down, `1008` with
    /// `DEVICE_UNPAIRED` when the device was unpaired…), or `None` when the connection broke
    /// without one or the worker closed it itself.
    pub close_code: Option<u16>,
    /// The close reason (a fixed code word, never page content), or a short description.
    pub reason: String,
}

type Io = super::socket::Io<rustls::ClientConnection>;

fn channel_error(reason: impl Into<String>) -> Error {
    Error::ChannelIo {
        reason: reason.into(),
    }
}

fn bad_url() -> Error {
    Error::InvalidArgument {
        name: "url",
        reason: "must be ws://host:port/path or wss://host:port/path".into(),
    }
}

struct Target {
    tls: bool,
    host: String,
    port: u16,
    /// The `Host` header: the URL's authority.
    authority: String,
    /// The request target: the URL's path and query.
    path: String,
}

fn parse_url(url: &str) -> Result<Target> {
    if url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad_url());
    }
    let (tls, rest) = match url.split_once("://") {
        Some((s, r)) if s.eq_ignore_ascii_case("ws") => (false, r),
        Some((s, r)) if s.eq_ignore_ascii_case("wss") => (true, r),
        _ => return Err(bad_url()),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(Error::InvalidArgument {
            name: "url",
            reason: "must not carry credentials".into(),
        });
    }
    if tail.contains('#') {
        return Err(bad_url());
    }
    let (host, port) = crate::config::split_host_port(authority).map_err(|_| bad_url())?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Ok(Target {
        tls,
        host: host.to_string(),
        port: port.unwrap_or(if tls { 443 } else { 80 }),
        authority: authority.to_string(),
        path: match tail {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        },
    })
}

fn tls_config(roots_pem: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match roots_pem {
        Some(pem) => {
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|_| Error::InvalidArgument {
                    name: "tls_roots_pem",
                    reason: "not a PEM certificate list".into(),
                })?;
                roots.add(cert).map_err(|_| Error::InvalidArgument {
                    name: "tls_roots_pem",
                    reason: "a certificate could not be used as a root".into(),
                })?;
            }
            if roots.is_empty() {
                return Err(Error::InvalidArgument {
                    name: "tls_roots_pem",
                    reason: "no certificate found".into(),
                });
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|_| channel_error("TLS is not available"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

type Ws = wire::Socket<Io>;

/// Opens the socket, the TLS session and the WebSocket, sends `authenticate` and waits for
/// `ready`.
fn open(options: &WorkerOptions) -> Result<(Ws, TcpStream, String)> {
    let target = parse_url(&options.url)?;
    let clock = &*options.clock;
    let deadline = clock.now() + options.connect_timeout;
    let addrs: Vec<_> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| channel_error(format!("resolve the gateway address: {}", e.kind())))?
        .collect();
    let mut last = channel_error("the gateway address resolved to nothing");
    let mut tcp = None;
    for addr in addrs {
        // One blocking connect: it sleeps at most what is left of the deadline.
        let left = deadline - clock.now();
        if left.is_zero() {
            last = channel_error("connect to the gateway: timed out");
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = channel_error(format!("connect to the gateway: {}", e.kind())),
        }
    }
    let tcp = tcp.ok_or(last)?;
    let _ = tcp.set_nodelay(true);
    let poll_handle = tcp
        .try_clone()
        .map_err(|e| channel_error(format!("configure the socket: {}", e.kind())))?;
    tcp.set_read_timeout(Some(POLL))
        .and_then(|_| tcp.set_write_timeout(Some(WRITE_TIMEOUT)))
        .map_err(|e| channel_error(format!("configure the socket: {}", e.kind())))?;
    let io = if target.tls {
        let name =
            rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(|_| bad_url())?;
        let mut conn =
            rustls::ClientConnection::new(tls_config(options.tls_roots_pem.as_deref())?, name)
                .map_err(|_| channel_error("start TLS"))?;
        let mut tcp = tcp;
        // The TLS handshake first, so a certificate problem is reported as one.
        while conn.is_handshaking() {
            match conn.complete_io(&mut tcp) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if clock.now() >= deadline {
                        return Err(channel_error("the TLS handshake timed out"));
                    }
                }
                Err(e) => {
                    let why = match e
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                    {
                        Some(rustls::Error::InvalidCertificate(_)) => {
                            "the gateway's certificate is not trusted (see tls_roots_pem)"
                        }
                        _ => "the TLS handshake failed",
                    };
                    return Err(channel_error(why));
                }
            }
        }
        Io::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
    } else {
        Io::Plain(tcp)
    };
    let mut keep_going = || clock.now() < deadline;
    let mut ws = match wire::connect(
        io,
        &target.authority,
        &target.path,
        options.max_message_bytes,
        &mut keep_going,
    ) {
        Ok(ws) => ws,
        Err(HandshakeError::Status(status)) => {
            return Err(channel_error(format!(
                "the gateway answered HTTP {status} (is the URL the channel path?)"
            )))
        }
        Err(HandshakeError::Abandoned) => {
            return Err(channel_error("the WebSocket handshake timed out"))
        }
        Err(HandshakeError::Io(kind)) => {
            return Err(channel_error(format!(
                "the WebSocket handshake failed: {kind}"
            )))
        }
        Err(HandshakeError::Refused) => {
            return Err(channel_error("the WebSocket handshake failed"))
        }
    };
    let sent = ws
        .send_text(&frames::authenticate(
            options.token.expose(),
            options.protocol,
        ))
        .is_ok();
    let mut flushed = false;
    while sent && !flushed && clock.now() < deadline {
        match ws.flush() {
            Ok(done) => flushed = done,
            Err(_) => break,
        }
    }
    if !flushed {
        return Err(channel_error("send the authenticate frame"));
    }
    loop {
        if clock.now() >= deadline {
            return Err(channel_error("the gateway did not answer `ready` in time"));
        }
        match ws.read() {
            Ok(Message::Text(text)) => match parse_gateway_frame(&text) {
                Ok(GatewayFrame::Ready { device_id }) => return Ok((ws, poll_handle, device_id)),
                Ok(_) => {}
                Err(_) => return Err(channel_error("the gateway sent a malformed frame")),
            },
            Ok(Message::Close(frame)) => {
                let _ = ws.flush();
                let (code, reason) = frame.unwrap_or((1005, String::new()));
                return Err(channel_error(format!(
                    "the gateway refused the worker: {code} {}",
                    printable(&reason)
                )));
            }
            Ok(Message::Ping) => {
                let _ = ws.flush();
            }
            Ok(_) | Err(WireError::WouldBlock) => {}
            Err(_) => return Err(channel_error("the connection ended before `ready`")),
        }
    }
}

/// A close reason as reported: at most 123 printable characters (a hostile gateway's reason is
/// never passed through raw).
fn printable(reason: &str) -> String {
    reason
        .chars()
        .filter(|c| !c.is_control())
        .take(123)
        .collect()
}

struct Job {
    id: String,
    tool: String,
    args: Value,
    deadline: Duration,
    cancel: CancelToken,
}

struct Shared {
    clock: SharedClock,
    wake: Wake,
    stop: AtomicBool,
    served: AtomicU64,
    exit: Mutex<Option<WorkerExit>>,
    ended: Condvar,
    cancels: Mutex<HashMap<String, CancelToken>>,
}

/// A connected device worker. Dropping it (or [`DeviceWorker::close`]) closes the connection
/// and joins its threads.
///
/// ```no_run
/// use std::sync::Arc;
/// use jevgate::browser::{BrowserTools, LaunchOptions, LocalBrowser};
/// use jevgate::device::{DeviceToken, DeviceWorker, WorkerOptions};
/// let browser = LocalBrowser::launch(LaunchOptions::default())?;
/// let token = DeviceToken::new(std::env::var("JEVGATE_DEVICE_TOKEN").unwrap_or_default());
/// let worker = DeviceWorker::connect(
///     WorkerOptions::new("ws://127.0.0.1:7000/v1/device-worker/channel", token),
///     Arc::new(BrowserTools::new(Arc::new(browser.clone()))),
/// )?;
/// println!("serving device {}", worker.device_id());
/// let exit = worker.wait(); // until the gateway closes the channel
/// browser.close();
/// # Ok::<(), jevgate::Error>(())
/// ```
pub struct DeviceWorker {
    device_id: String,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for DeviceWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceWorker")
            .field("device_id", &self.device_id)
            .field("running", &self.is_running())
            .finish()
    }
}

impl DeviceWorker {
    /// Connects and authenticates; returns once the gateway answered `ready`. A refusal
    /// (`AUTHENTICATION_FAILED`, `UPGRADE_REQUIRED`, …) is `DEVICE_CHANNEL_IO` naming the close
    /// code and reason; a malformed URL or PEM, or a zero `connect_timeout`, is
    /// `INVALID_ARGUMENT`.
    pub fn connect(
        options: WorkerOptions,
        executor: Arc<dyn ToolExecutor>,
    ) -> Result<DeviceWorker> {
        // The one check of the options for every surface (C `connectTimeoutMs`, Python
        // `connect_timeout`): a zero budget could never connect.
        if options.connect_timeout.is_zero() {
            return Err(Error::InvalidArgument {
                name: "connect_timeout",
                reason: "must be positive".into(),
            });
        }
        let (ws, socket, device_id) = open(&options)?;
        socket
            .set_nonblocking(true)
            .map_err(|e| channel_error(format!("configure the socket: {}", e.kind())))?;
        let shared = Arc::new(Shared {
            clock: Arc::clone(&options.clock),
            wake: Wake::new(),
            stop: AtomicBool::new(false),
            served: AtomicU64::new(0),
            exit: Mutex::new(None),
            ended: Condvar::new(),
            cancels: Mutex::new(HashMap::new()),
        });
        let (jobs, queue) = mpsc::channel::<Job>();
        let (results, outbox) = mpsc::channel::<String>();
        let exec = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("jevgate-worker-exec".into())
                .spawn(move || run_jobs(&queue, &results, executor.as_ref(), &shared))
        }
        .map_err(|e| channel_error(format!("start the executor thread: {}", e.kind())))?;
        let io = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("jevgate-worker-io".into())
                .spawn(move || run_io(ws, &socket, &jobs, &outbox, &shared))
        };
        let io = match io {
            Ok(t) => t,
            Err(e) => {
                shared.stop.store(true, Ordering::Release);
                let _ = exec.join();
                return Err(channel_error(format!("start the I/O thread: {}", e.kind())));
            }
        };
        log::info!("device worker connected as {device_id}");
        Ok(DeviceWorker {
            device_id,
            shared,
            threads: Mutex::new(vec![io, exec]),
        })
    }

    /// The device id the gateway answered `ready` with.
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// The connection is still open.
    pub fn is_running(&self) -> bool {
        self.shared.exit.lock().is_none()
    }

    /// How many commands this worker has answered.
    pub fn commands_served(&self) -> u64 {
        self.shared.served.load(Ordering::Acquire)
    }

    /// Blocks until the connection ends (the gateway closed it, it broke, or
    /// [`DeviceWorker::close`] ran), then joins the threads.
    pub fn wait(&self) -> WorkerExit {
        {
            let mut exit = self.shared.exit.lock();
            while exit.is_none() {
                self.shared.ended.wait(&mut exit);
            }
        }
        self.join();
        self.shared.exit.lock().clone().unwrap_or(WorkerExit {
            close_code: None,
            reason: "ended".into(),
        })
    }

    /// Like [`DeviceWorker::wait`], for at most `timeout` on the worker's clock; `None` if still
    /// running.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<WorkerExit> {
        let clock = &*self.shared.clock;
        let end = clock.now() + timeout;
        {
            let mut exit = self.shared.exit.lock();
            while exit.is_none() {
                let Some(slice) = wait_slice(clock, end) else {
                    break;
                };
                self.shared.ended.wait_for(&mut exit, slice);
            }
            exit.as_ref()?;
        }
        Some(self.wait())
    }

    /// Closes the connection (close code 1000) and joins the threads; a command running in the
    /// executor finishes first. Idempotent.
    pub fn close(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.notify();
        self.join();
    }

    fn join(&self) {
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for DeviceWorker {
    fn drop(&mut self) {
        self.close();
    }
}

/// The executor thread's loop: runs each command once, in order. It is the one place a command
/// cancelled before it started (a take-back or the gateway's cancel frame while it waited in
/// the queue) is answered `cancelled` without being handed to the executor — every executor
/// (the local browser's tools, a C callback, a Python callable) relies on it.
fn run_jobs(
    queue: &mpsc::Receiver<Job>,
    results: &mpsc::Sender<String>,
    executor: &dyn ToolExecutor,
    shared: &Shared,
) {
    while let Ok(job) = queue.recv() {
        let answer = if job.cancel.is_cancelled() {
            // Recorded where the outcome is known: this command never ran (issue 21 item 6).
            let noted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                executor.not_run(&job.tool, &job.args)
            }));
            if noted.is_err() {
                log::error!("a device worker executor panicked noting a command that never ran");
            }
            frames::result_err(
                &job.id,
                "cancelled",
                "cancelled before it started; nothing was sent to the page",
            )
        } else {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                executor.execute(&job.tool, &job.args, job.deadline, &job.cancel)
            }));
            match outcome {
                Ok(Ok(value)) => frames::result_ok(&job.id, &value),
                Ok(Err(f)) => frames::result_err(&job.id, &f.code, &f.message),
                Err(_) => {
                    log::error!("a device worker tool panicked");
                    frames::result_err(&job.id, "execution_failed", "the worker failed internally")
                }
            }
        };
        shared.cancels.lock().remove(&job.id);
        shared.served.fetch_add(1, Ordering::AcqRel);
        if results.send(answer).is_err() {
            break;
        }
        shared.wake.notify();
    }
}

fn run_io(
    mut ws: Ws,
    socket: &TcpStream,
    jobs: &mpsc::Sender<Job>,
    outbox: &mpsc::Receiver<String>,
    shared: &Shared,
) {
    let clock = &*shared.clock;
    let broke = |why: &str| WorkerExit {
        close_code: None,
        reason: why.to_string(),
    };
    let exit = 'conn: loop {
        if shared.stop.load(Ordering::Acquire) {
            // Closing waits (bounded) for the gateway's reply with ordinary timed reads.
            ws.close(socket, Some((1000, "")), Duration::from_secs(1), clock);
            break broke("closed by the worker");
        }
        let mut failed = None;
        while let Ok(text) = outbox.try_recv() {
            if let Err(e) = ws.send_text(&text) {
                failed = Some(e);
                break;
            }
        }
        if failed.is_none() && ws.pending() {
            failed = ws.flush().err();
        }
        if let Some(e) = failed {
            ws.fail_close(socket, e.close(), Duration::from_millis(500), clock);
            break broke("the connection broke while sending a result");
        }
        loop {
            match ws.read() {
                Ok(Message::Text(text)) => match parse_gateway_frame(&text) {
                    Ok(GatewayFrame::Command {
                        id,
                        tool,
                        args,
                        deadline_ms,
                    }) => {
                        let cancel = CancelToken::new();
                        shared.cancels.lock().insert(id.clone(), cancel.clone());
                        let deadline = Duration::from_millis(deadline_ms.unwrap_or(60_000));
                        let job = Job {
                            id,
                            tool,
                            args,
                            deadline,
                            cancel,
                        };
                        if jobs.send(job).is_err() {
                            ws.close(socket, Some((1011, "")), Duration::from_millis(500), clock);
                            break 'conn broke("the executor stopped");
                        }
                    }
                    Ok(GatewayFrame::Cancel { id }) => {
                        let token = shared.cancels.lock().get(&id).cloned();
                        if let Some(token) = token {
                            token.cancel();
                        }
                    }
                    Ok(_) => {}
                    Err(_) => log::warn!("device worker ignored a malformed frame"),
                },
                Ok(Message::Close(frame)) => {
                    // The close reply is queued: send it, then wait for the gateway to end.
                    ws.close(socket, None, Duration::from_millis(500), clock);
                    let (code, reason) = frame.map_or((None, String::new()), |(c, r)| (Some(c), r));
                    break 'conn WorkerExit {
                        close_code: code,
                        reason: printable(&reason),
                    };
                }
                Ok(Message::Ping) => {
                    if ws.flush().is_err() {
                        break 'conn broke("the connection broke");
                    }
                }
                Ok(Message::Binary | Message::Pong) => {}
                Err(WireError::WouldBlock) => break,
                Err(e) => {
                    ws.fail_close(socket, e.close(), Duration::from_millis(500), clock);
                    break 'conn broke("the connection broke");
                }
            }
        }
        // Sleep until the gateway sends something, a result is ready, or close() is called.
        shared.wake.wait(socket, ws.pending(), MAX_WAIT);
    };
    log::info!(
        "device worker connection ended ({})",
        exit.close_code
            .map_or("no close code".to_string(), |c| c.to_string())
    );
    // Running and queued commands get no answer now: cancel them so the executor stops early.
    for (_, token) in shared.cancels.lock().drain() {
        token.cancel();
    }
    *shared.exit.lock() = Some(exit);
    shared.ended.notify_all();
}

/// A result frame the scripted gateway read: the command id and its outcome.
#[cfg(test)]
pub(crate) type ScriptedResult = (String, std::result::Result<Value, (String, String)>);

/// A scripted gateway for tests of the worker's job loop through any executor (Rust, C):
/// accepts one worker on loopback, sends command `c1` (args `{"n":1}`), command `c2` (args
/// `{"n":2}`) and a cancel of `c2`, then a WebSocket ping; the pong proves the worker's I/O
/// thread handled the cancel (it reads frames in order) while `c1` still blocks its executor.
/// Then `release` unblocks `c1`, and the two result frames are returned as `(id, outcome)`.
/// No timing: every step waits for the previous one's effect (reads bounded to 10 s).
#[cfg(test)]
pub(crate) struct CancelledInQueue {
    listener: std::net::TcpListener,
}

#[cfg(test)]
impl CancelledInQueue {
    /// Listens on a loopback port.
    pub(crate) fn bind() -> CancelledInQueue {
        CancelledInQueue {
            listener: std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback"),
        }
    }

    /// The URL a worker connects to.
    pub(crate) fn url(&self) -> String {
        let addr = self.listener.local_addr().expect("local address");
        format!("ws://{addr}/v1/device-worker/channel")
    }

    /// Runs the script (see the type); call on another thread than the worker's owner.
    pub(crate) fn serve(&self, release: impl FnOnce()) -> Vec<ScriptedResult> {
        use frames::{parse_worker_frame, WorkerFrame};
        let (stream, _) = self.listener.accept().expect("accept the worker");
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("read timeout");
        let clock = clock::system();
        let started = clock.now();
        let mut keep_going = || clock.now() - started < Duration::from_secs(10);
        let Ok(mut ws) = wire::accept(
            stream,
            "/v1/device-worker/channel",
            1 << 20,
            &mut keep_going,
        ) else {
            panic!("the worker's handshake failed");
        };
        let next = |ws: &mut wire::Socket<TcpStream>| loop {
            assert!(
                clock.now() - started < Duration::from_secs(10),
                "the worker went quiet"
            );
            match ws.read() {
                Ok(m) => return m,
                Err(WireError::WouldBlock) => continue,
                Err(_) => panic!("the worker's connection failed"),
            }
        };
        assert!(matches!(next(&mut ws), Message::Text(_)), "authenticate");
        ws.send_text(&frames::ready("dev_queued")).expect("ready");
        ws.send_text(&frames::command(
            "c1",
            "browser_get_text",
            &serde_json::json!({"n": 1}),
            60_000,
        ))
        .expect("c1");
        ws.send_text(&frames::command(
            "c2",
            "browser_get_text",
            &serde_json::json!({"n": 2}),
            60_000,
        ))
        .expect("c2");
        ws.send_text(&frames::cancel("c2")).expect("cancel c2");
        ws.send_ping().expect("ping");
        ws.flush().expect("flush");
        while !matches!(next(&mut ws), Message::Pong) {}
        release();
        let mut results = Vec::new();
        while results.len() < 2 {
            if let Message::Text(text) = next(&mut ws) {
                if let Ok(WorkerFrame::Result { id, outcome }) = parse_worker_frame(&text) {
                    results.push((id, outcome));
                }
            }
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_before_connecting() {
        let t = parse_url("wss://localhost:8443/v1/device-worker/channel")
            .ok()
            .unwrap();
        assert!(t.tls && t.host == "localhost" && t.port == 8443);
        let t = parse_url("ws://[::1]/x").ok().unwrap();
        assert!(!t.tls && t.host == "::1" && t.port == 80);
        let t = parse_url("WS://127.0.0.1:7000?x=1").ok().unwrap();
        assert!(t.authority == "127.0.0.1:7000" && t.path == "/?x=1" && t.port == 7000);
        for bad in [
            "http://h/x",
            "ws://user:pw@h/x",
            "",
            "ws//h",
            "h:1",
            "ws://h:0/x",
            "ws://h:99999/x",
            "ws:///x",
            "ws://h/x#frag",
            "ws://h /x",
            "ws://[zz]/x",
        ] {
            assert_eq!(
                parse_url(bad).err().map(|e| e.code()),
                Some("INVALID_ARGUMENT"),
                "{bad}"
            );
        }
        assert!(tls_config(Some(b"not pem")).is_err());
        assert!(tls_config(None).is_ok());
    }

    /// Blocks the first command until released; records the `n` of every command it runs.
    struct Gate {
        ran: Mutex<Vec<u64>>,
        /// The `n` of every command the job loop reported as never run.
        never_ran: Mutex<Vec<u64>>,
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl ToolExecutor for Gate {
        fn execute(
            &self,
            _tool: &str,
            args: &Value,
            _deadline: Duration,
            _cancel: &CancelToken,
        ) -> std::result::Result<Value, super::super::WorkerFailure> {
            self.ran.lock().push(args["n"].as_u64().unwrap_or(0));
            let mut open = self.open.lock();
            while !*open {
                self.opened.wait(&mut open);
            }
            Ok(serde_json::json!({"text": "ran"}))
        }

        fn not_run(&self, _tool: &str, args: &Value) {
            self.never_ran.lock().push(args["n"].as_u64().unwrap_or(0));
        }
    }

    // Issue 19 item 1, R-DEV-CHAN: a command the gateway cancels while it waits in the worker's
    // queue is answered `cancelled` and never reaches the executor — checked once, in the core
    // job loop, for every executor (the C and Python ones run the same loop: src/ffi/worker.rs,
    // bindings/python/tests/test_worker.py).
    #[test]
    fn a_command_cancelled_in_the_queue_never_reaches_the_executor() {
        let gateway = CancelledInQueue::bind();
        let gate = Arc::new(Gate {
            ran: Mutex::new(Vec::new()),
            never_ran: Mutex::new(Vec::new()),
            open: Mutex::new(false),
            opened: Condvar::new(),
        });
        let results = std::thread::scope(|scope| {
            let script = scope.spawn(|| {
                gateway.serve(|| {
                    *gate.open.lock() = true;
                    gate.opened.notify_all();
                })
            });
            let worker = DeviceWorker::connect(
                WorkerOptions::new(gateway.url(), DeviceToken::new("jgd_x".to_string())),
                gate.clone(),
            )
            .unwrap();
            let results = script.join().unwrap();
            assert_eq!(worker.commands_served(), 2);
            worker.close();
            results
        });
        assert_eq!(*gate.ran.lock(), vec![1], "only c1 ran");
        // Issue 21 item 6: the executor is told c2 never ran (its record says not executed).
        assert_eq!(*gate.never_ran.lock(), vec![2]);
        assert_eq!(
            results[0],
            ("c1".to_string(), Ok(serde_json::json!({"text": "ran"})))
        );
        let (id, outcome) = &results[1];
        assert_eq!(id, "c2");
        assert_eq!(outcome.as_ref().unwrap_err().0, "cancelled", "{outcome:?}");
    }
}

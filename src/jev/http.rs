//! HTTP transport for the `typesafe` and `upstream` providers and the thinking helper: one JSON
//! POST over HTTP/1.1 (plain on loopback, TLS via rustls with the Mozilla roots or the given
//! ones), bounded as a whole by the evaluation's remaining time, never following a redirect, no
//! automatic retry, idle connections kept for reuse.
//!
//! An exchange can be ended from another thread (issue 12 item 5: one deadline covers
//! everything an evaluation does): [`Abort::abort`] (the caller cancelled or its deadline passed)
//! and [`Http::close`] (the gateway closes) shut the in-flight socket down, so a blocked read or
//! write returns at once and the I/O thread frees its concurrency slot; a connection that was
//! shut down is never returned to the pool. Only the TCP connect itself is not interrupted (it
//! keeps the call's own deadline). Every socket deadline is on the evaluation context's clock
//! (R-CLK) and also ends in real time on a clock nobody advances (see `Timed`).
//!
//! Status mapping (R-JEV-ERRMAP) happens here, keeping only typed metadata (Retry-After, reset
//! time). It must never surface or log a provider's response body, the request body, a response
//! header or the credential: error reasons are statuses and error kinds written by jevgate.
//!
//! Why not an HTTP library (R-LOG, issue 12 item 8): ureq/ureq-proto log the raw request and
//! response bytes (the `Authorization` header, the questions and state, the provider's answer)
//! at `trace` and the full `Location` header at `debug` with trace enabled, through the host's
//! logger, with no setting to stop it. This file writes no log record at all; the only records
//! under it are rustls's handshake messages (server name, certificates, cipher suites), which
//! carry no key, header or body (`tests/log_privacy_provider.rs` measures it at `Trace`).

use crate::clock::{GraceBound, Instant, SharedClock};
use crate::config::Secret;
use crate::error::RetryInfo;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest provider response read, in bytes; more is a provider failure.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;

/// Largest response head (status line and headers), in bytes.
const MAX_HEAD_BYTES: u64 = 64 * 1024;

/// Most idle connections kept per endpoint, and most endpoints with idle connections.
const MAX_IDLE_PER_ENDPOINT: usize = 8;
const MAX_ENDPOINTS: usize = 16;

/// An idle connection older than this is closed rather than reused (servers close idle
/// connections after about a minute; a POST is never retried on a connection that was closed
/// under it).
const MAX_IDLE_AGE: Duration = Duration::from_secs(30);

/// How the credential is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `x-api-key: <key>` (Anthropic Messages).
    XApiKey,
}

/// One JSON POST.
#[derive(Clone, Copy)]
pub(crate) struct Post<'a> {
    /// Full URL.
    pub url: &'a str,
    /// How the key is sent.
    pub auth: Auth,
    /// The key.
    pub key: &'a Secret,
    /// More headers.
    pub extra_headers: &'a [(&'a str, &'a str)],
    /// The JSON body.
    pub body: &'a [u8],
    /// Time left before the caller's deadline (nothing is sent when it is zero), on `clock`.
    pub timeout: Duration,
    /// The evaluation context's clock: every socket deadline of the exchange reads it (R-CLK).
    pub clock: &'a SharedClock,
    /// Wall clock now, to convert HTTP dates.
    pub wall: SystemTime,
    /// The configured deadline, for `JEV_TIMEOUT`.
    pub timeout_ms: u64,
    /// A handle another thread may use to end this exchange (the caller's cancellation or
    /// deadline); [`Http::close`] ends it too.
    pub abort: Option<&'a Arc<Abort>>,
}

/// Ends one in-flight exchange from another thread: the socket it is using is shut down (both
/// directions), so a blocked read or write returns at once. Aborting is permanent; an exchange
/// that starts after it fails at once, and its connection is never pooled again.
#[derive(Default)]
pub(crate) struct Abort {
    state: Mutex<AbortState>,
}

#[derive(Default)]
struct AbortState {
    aborted: bool,
    /// A clone of the socket the exchange is using, while it uses it.
    socket: Option<TcpStream>,
}

impl Abort {
    /// Shuts the exchange's socket down (if it has one yet) and marks the exchange aborted.
    pub(crate) fn abort(&self) {
        let mut st = self.state.lock();
        st.aborted = true;
        if let Some(s) = st.socket.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Registers the socket an exchange is about to use; refused once aborted.
    fn attach(&self, tcp: &TcpStream) -> std::result::Result<(), Fail> {
        let clone = tcp.try_clone()?;
        let mut st = self.state.lock();
        if st.aborted {
            return Err(Fail::Aborted);
        }
        st.socket = Some(clone);
        Ok(())
    }

    /// Forgets the socket (a later abort no longer touches it: it may be pooled) and tells
    /// whether the exchange was aborted (then its connection must not be reused).
    fn detach(&self) -> bool {
        let mut st = self.state.lock();
        st.socket = None;
        st.aborted
    }
}

/// The exchanges in flight, so [`Http::close`] can end them.
#[derive(Default)]
struct InFlight {
    closed: bool,
    next: u64,
    calls: HashMap<u64, Arc<Abort>>,
}

/// Where a connection goes: scheme, host (as written, `[::1]` bracketed) and port.
type Endpoint = (bool, String, u16);

/// A pooled HTTP client. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Http {
    /// `None` when the TLS provider offers no protocol version (then every https call fails).
    tls: Option<Arc<rustls::ClientConfig>>,
    idle: Arc<Mutex<HashMap<Endpoint, Vec<Conn>>>>,
    in_flight: Arc<Mutex<InFlight>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http").finish_non_exhaustive()
    }
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        }
    }
}

/// A stream whose reads and writes end at the exchange's deadline on the context's clock
/// (R-CLK). Each blocking call sleeps at most one slice of the bound ([`GraceBound`]: the time
/// left on a clock that follows real time; a short slice on one that does not, re-read after
/// each), and a slice that passes without progress is simply retried until the bound ends — so
/// an advanced manual clock ends the exchange within a slice, and a manual clock nobody advances
/// still ends it after about the timeout of real waiting instead of never.
struct Timed {
    stream: Stream,
    clock: SharedClock,
    bound: GraceBound,
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

impl Timed {
    /// The next slice to block for, or `TimedOut` once the bound is over.
    fn slice(&mut self) -> io::Result<Duration> {
        self.bound
            .next(&*self.clock, Duration::MAX)
            .ok_or_else(|| io::ErrorKind::TimedOut.into())
    }

    /// Runs one blocking call slice by slice: `arm` sets the socket's timeout for a slice,
    /// `call` blocks at most that long; a slice that times out is retried (nothing was consumed:
    /// a plain socket read or write that times out moved no byte, and rustls keeps what it
    /// buffered) until the bound ends.
    fn sliced<T>(
        &mut self,
        arm: fn(&TcpStream, Option<Duration>) -> io::Result<()>,
        mut call: impl FnMut(&mut Stream) -> io::Result<T>,
    ) -> io::Result<T> {
        loop {
            let slice = self.slice()?;
            arm(self.stream.tcp(), Some(slice))?;
            match call(&mut self.stream) {
                Err(e) if timed_out(&e) => continue,
                other => return other,
            }
        }
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.sliced(TcpStream::set_read_timeout, |stream| match stream {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        })
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sliced(TcpStream::set_write_timeout, |stream| match stream {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        })
    }
    fn flush(&mut self) -> io::Result<()> {
        self.sliced(TcpStream::set_write_timeout, |stream| match stream {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        })
    }
}

/// One connection with its read buffer.
struct Conn {
    io: BufReader<Timed>,
    idle_since: Instant,
}

impl Conn {
    /// Whether an idle connection can carry another request at `now`: young enough, not closed
    /// by the server and with nothing unexpected waiting to be read.
    fn reusable(&self, now: Instant) -> bool {
        if now - self.idle_since > MAX_IDLE_AGE || !self.io.buffer().is_empty() {
            return false;
        }
        let tcp = self.io.get_ref().stream.tcp();
        if tcp.set_nonblocking(true).is_err() {
            return false;
        }
        let quiet =
            matches!(tcp.peek(&mut [0u8; 1]), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        tcp.set_nonblocking(false).is_ok() && quiet
    }
}

/// Why a call failed, before it becomes an [`Error`]: kinds only, never a header or body.
#[derive(Debug)]
enum Fail {
    Timeout,
    Io(io::ErrorKind),
    HostNotFound,
    ConnectionFailed,
    Protocol,
    TooLarge,
    Tls,
    BadHeaderValue,
    BadUrl,
    /// Ended by [`Abort::abort`] or [`Http::close`].
    Aborted,
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Fail::Timeout,
            k => Fail::Io(k),
        }
    }
}

/// A response head: status, whether the connection stays open, and the few headers jevgate
/// reads (names lower-cased; values kept only when they are text).
struct Head {
    status: u16,
    keep_alive: bool,
    headers: Vec<(String, String)>,
}

impl Head {
    fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Http {
    /// A client trusting the Mozilla roots, or only `extra_roots` (DER certificates; tests and
    /// private CAs) when any are given. Certificates that cannot be used as roots are skipped.
    pub(crate) fn new(extra_roots: &[Vec<u8>]) -> Http {
        let mut roots = rustls::RootCertStore::empty();
        if extra_roots.is_empty() {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        } else {
            for der in extra_roots {
                let _ = roots.add(rustls::pki_types::CertificateDer::from(der.clone()));
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .ok()
        .map(|b| {
            let mut config = b.with_root_certificates(roots).with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(config)
        });
        Http {
            tls,
            idle: Arc::new(Mutex::new(HashMap::new())),
            in_flight: Arc::default(),
        }
    }

    /// Ends every exchange in flight (their sockets are shut down), drops the idle
    /// connections and refuses later exchanges (`GATEWAY_CLOSED`). Idempotent.
    pub(crate) fn close(&self) {
        let calls: Vec<Arc<Abort>> = {
            let mut f = self.in_flight.lock();
            f.closed = true;
            f.calls.values().cloned().collect()
        };
        for a in calls {
            a.abort();
        }
        self.idle.lock().clear();
    }

    /// POSTs `body` as JSON to `url` and returns the 2xx body. Other statuses map per
    /// R-JEV-ERRMAP; `wall` converts HTTP dates.
    pub(crate) fn post_json(&self, p: &Post<'_>) -> Result<Vec<u8>> {
        if p.timeout.is_zero() {
            return Err(Error::Timeout {
                timeout_ms: p.timeout_ms,
            });
        }
        // On the context's clock, and bounded in real time on one that does not follow it (a
        // deadline past the end of time saturates: no deadline).
        let deadline = GraceBound::new(&**p.clock, p.timeout);
        let abort = p.abort.cloned().unwrap_or_default();
        let id = {
            let mut f = self.in_flight.lock();
            if f.closed {
                return Err(Error::GatewayClosed);
            }
            let id = f.next;
            f.next = f.next.wrapping_add(1);
            f.calls.insert(id, Arc::clone(&abort));
            id
        };
        let result = self.exchange(p, deadline, &abort);
        let closed = {
            let mut f = self.in_flight.lock();
            f.calls.remove(&id);
            f.closed
        };
        // An aborted exchange's outcome is whatever the shut-down socket gave (an error, or a
        // body cut at the shutdown when the response is framed by the end of the connection).
        if abort.detach() {
            return Err(if closed {
                Error::GatewayClosed
            } else {
                Error::Cancelled
            });
        }
        match result {
            Ok(Ok(body)) => Ok(body),
            Ok(Err((status, retry))) => Err(map_status(status, retry)),
            Err(fail) => Err(fail_error(fail, p.timeout_ms)),
        }
    }

    /// One request and its response: the 2xx body, or the status and its retry metadata (the
    /// body of a non-2xx answer is never read: it may echo state or credentials).
    #[allow(clippy::type_complexity)] // reason: private, read once right above
    fn exchange(
        &self,
        p: &Post<'_>,
        mut deadline: GraceBound,
        abort: &Abort,
    ) -> std::result::Result<std::result::Result<Vec<u8>, (u16, RetryInfo)>, Fail> {
        let url = crate::config::parse_endpoint(p.url).map_err(|_| Fail::BadUrl)?;
        let tls = url.scheme == "https";
        let port = url.port.unwrap_or(if tls { 443 } else { 80 });
        let endpoint: Endpoint = (tls, url.host.clone(), port);
        let request = request_bytes(p, &url.host, url.port, &url.path)?;
        let clock = p.clock;
        let mut conn = match self.pooled(&endpoint, clock.now()) {
            Some(c) => c,
            None => self.connect(&endpoint, clock, &mut deadline)?,
        };
        abort.attach(conn.io.get_ref().stream.tcp())?;
        let timed = conn.io.get_mut();
        timed.clock = Arc::clone(clock);
        timed.bound = deadline;
        conn.io.get_mut().write_all(&request)?;
        conn.io.get_mut().flush()?;
        let head = loop {
            let head = read_head(&mut conn.io)?;
            match head.status {
                101 => return Err(Fail::Protocol),
                100..=199 => continue,
                _ => break head,
            }
        };
        if !(200..300).contains(&head.status) {
            return Ok(Err((head.status, retry_info(|n| head.get(n), p.wall))));
        }
        let (body, reusable) = read_body(&mut conn.io, &head)?;
        // a shut-down connection is never pooled; after this no abort touches it
        if abort.detach() {
            return Err(Fail::Aborted);
        }
        if reusable && head.keep_alive {
            self.put_back(endpoint, conn, clock.now());
        }
        Ok(Ok(body))
    }

    fn pooled(&self, endpoint: &Endpoint, now: Instant) -> Option<Conn> {
        let mut idle = self.idle.lock();
        let conns = idle.get_mut(endpoint)?;
        while let Some(c) = conns.pop() {
            if c.reusable(now) {
                return Some(c);
            }
        }
        None
    }

    fn put_back(&self, endpoint: Endpoint, mut conn: Conn, now: Instant) {
        conn.idle_since = now;
        let mut idle = self.idle.lock();
        if !idle.contains_key(&endpoint) && idle.len() >= MAX_ENDPOINTS {
            idle.clear();
        }
        let conns = idle.entry(endpoint).or_default();
        if conns.len() < MAX_IDLE_PER_ENDPOINT {
            conns.push(conn);
        }
    }

    fn connect(
        &self,
        (tls, host, port): &Endpoint,
        clock: &SharedClock,
        deadline: &mut GraceBound,
    ) -> std::result::Result<Conn, Fail> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        // name resolution keeps the OS resolver's own timeouts
        let addrs: Vec<_> = (bare, *port)
            .to_socket_addrs()
            .map_err(|_| Fail::HostNotFound)?
            .collect();
        if addrs.is_empty() {
            return Err(Fail::HostNotFound);
        }
        // Each address is tried slice by slice of the bound: an attempt that times out starts
        // again until the bound ends (on a clock that follows real time, one attempt of the whole
        // time left, as before); any other failure moves on to the next address.
        let mut tcp = None;
        'addrs: for addr in addrs {
            loop {
                let Some(slice) = deadline.next(&**clock, Duration::MAX) else {
                    return Err(Fail::Timeout);
                };
                match TcpStream::connect_timeout(&addr, slice) {
                    Ok(s) => {
                        tcp = Some(s);
                        break 'addrs;
                    }
                    Err(e) if timed_out(&e) => continue,
                    Err(_) => continue 'addrs,
                }
            }
        }
        let Some(tcp) = tcp else {
            return Err(Fail::ConnectionFailed);
        };
        let _ = tcp.set_nodelay(true);
        let stream = if *tls {
            let config = self.tls.clone().ok_or(Fail::Tls)?;
            let name =
                rustls::pki_types::ServerName::try_from(bare.to_string()).map_err(|_| Fail::Tls)?;
            let client = rustls::ClientConnection::new(config, name).map_err(|_| Fail::Tls)?;
            Stream::Tls(Box::new(rustls::StreamOwned::new(client, tcp)))
        } else {
            Stream::Plain(tcp)
        };
        Ok(Conn {
            io: BufReader::new(Timed {
                stream,
                clock: Arc::clone(clock),
                bound: *deadline,
            }),
            idle_since: clock.now(),
        })
    }
}

/// The request head and body, in one buffer (one write). Header values with CR, LF or NUL are
/// refused without being repeated.
fn request_bytes(
    p: &Post<'_>,
    host: &str,
    port: Option<u16>,
    path: &str,
) -> std::result::Result<Vec<u8>, Fail> {
    let mut out = Vec::with_capacity(512 + p.body.len());
    let path = if path.is_empty() { "/" } else { path };
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    if let Some(port) = port {
        out.extend_from_slice(format!(":{port}").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    let mut header = |name: &str, value: &[&str]| -> std::result::Result<(), Fail> {
        let bad = |s: &str| s.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0));
        if bad(name) || name.contains(':') || name.is_empty() || value.iter().any(|v| bad(v)) {
            return Err(Fail::BadHeaderValue);
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        for v in value {
            out.extend_from_slice(v.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        Ok(())
    };
    header(
        "user-agent",
        &[concat!("jevgate/", env!("CARGO_PKG_VERSION"))],
    )?;
    header("content-type", &["application/json"])?;
    header("accept", &["application/json"])?;
    match p.auth {
        Auth::Bearer => header("authorization", &["Bearer ", p.key.expose()])?,
        Auth::XApiKey => header("x-api-key", &[p.key.expose()])?,
    }
    for (k, v) in p.extra_headers {
        header(k, &[v])?;
    }
    header("content-length", &[&p.body.len().to_string()])?;
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(p.body);
    Ok(out)
}

/// One line (LF-terminated) of at most `cap` bytes, without its CRLF.
fn read_line(r: &mut impl BufRead, cap: &mut u64) -> std::result::Result<Vec<u8>, Fail> {
    let mut line = Vec::new();
    let n = r.take(*cap).read_until(b'\n', &mut line)?;
    *cap = cap.saturating_sub(n as u64);
    if line.last() != Some(&b'\n') {
        // EOF or the cap before the end of the line
        return Err(if n == 0 {
            Fail::Io(io::ErrorKind::UnexpectedEof)
        } else {
            Fail::Protocol
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(line)
}

fn read_head(r: &mut impl BufRead) -> std::result::Result<Head, Fail> {
    let mut cap = MAX_HEAD_BYTES;
    let status_line = read_line(r, &mut cap)?;
    let status_line = std::str::from_utf8(&status_line).map_err(|_| Fail::Protocol)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let status = parts.next().unwrap_or_default();
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(Fail::Protocol),
    };
    if status.len() != 3 || !status.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Fail::Protocol);
    }
    let status: u16 = status.parse().map_err(|_| Fail::Protocol)?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(r, &mut cap)?;
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            return Err(Fail::Protocol);
        };
        let name = String::from_utf8_lossy(&line[..colon])
            .trim()
            .to_ascii_lowercase();
        if let Ok(value) = std::str::from_utf8(&line[colon + 1..]) {
            headers.push((name, value.trim().to_string()));
        }
    }
    let connection = headers
        .iter()
        .filter(|(k, _)| k == "connection")
        .map(|(_, v)| v.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",");
    let keep_alive = if http10 {
        connection.contains("keep-alive")
    } else {
        !connection.contains("close")
    };
    Ok(Head {
        status,
        keep_alive,
        headers,
    })
}

/// The body of a 2xx answer, at most [`MAX_RESPONSE_BYTES`], and whether the connection can
/// carry another request after it.
fn read_body(r: &mut impl BufRead, head: &Head) -> std::result::Result<(Vec<u8>, bool), Fail> {
    if head.status == 204 {
        return Ok((Vec::new(), true));
    }
    let chunked = head
        .get("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().trim_end().ends_with("chunked"));
    if chunked {
        return read_chunked(r).map(|b| (b, true));
    }
    if let Some(len) = head.get("content-length") {
        let len: u64 = len.parse().map_err(|_| Fail::Protocol)?;
        if len > MAX_RESPONSE_BYTES {
            return Err(Fail::TooLarge);
        }
        let mut body = Vec::new();
        r.take(len).read_to_end(&mut body)?;
        if body.len() as u64 != len {
            return Err(Fail::Io(io::ErrorKind::UnexpectedEof));
        }
        return Ok((body, true));
    }
    // delimited by the end of the connection
    let mut body = Vec::new();
    r.take(MAX_RESPONSE_BYTES + 1).read_to_end(&mut body)?;
    if body.len() as u64 > MAX_RESPONSE_BYTES {
        return Err(Fail::TooLarge);
    }
    Ok((body, false))
}

fn read_chunked(r: &mut impl BufRead) -> std::result::Result<Vec<u8>, Fail> {
    let mut body = Vec::new();
    loop {
        let mut cap = 1024;
        let line = read_line(r, &mut cap)?;
        let size = line.split(|b| *b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(size)
            .map_err(|_| Fail::Protocol)?
            .trim();
        if size.is_empty() || size.len() > 16 {
            return Err(Fail::Protocol);
        }
        let size = u64::from_str_radix(size, 16).map_err(|_| Fail::Protocol)?;
        if size == 0 {
            // trailers, then the empty line
            let mut cap = MAX_HEAD_BYTES;
            while !read_line(r, &mut cap)?.is_empty() {}
            return Ok(body);
        }
        if (body.len() as u64).saturating_add(size) > MAX_RESPONSE_BYTES {
            return Err(Fail::TooLarge);
        }
        let before = body.len();
        r.take(size).read_to_end(&mut body)?;
        if (body.len() - before) as u64 != size {
            return Err(Fail::Io(io::ErrorKind::UnexpectedEof));
        }
        let mut cap = 2;
        if !read_line(r, &mut cap)?.is_empty() {
            return Err(Fail::Protocol);
        }
    }
}

fn fail_error(fail: Fail, timeout_ms: u64) -> Error {
    let reason = match fail {
        Fail::Timeout => return Error::Timeout { timeout_ms },
        // rustls reports a refused certificate as an I/O error of kind InvalidData
        Fail::Io(io::ErrorKind::InvalidData) => {
            "TLS error or invalid data from the provider".into()
        }
        Fail::Io(kind) => format!("transport error ({kind:?})"),
        Fail::HostNotFound => "host not found".into(),
        Fail::ConnectionFailed => "connection failed".into(),
        Fail::TooLarge => "response larger than the limit".into(),
        Fail::Tls => "TLS error".into(),
        Fail::Protocol => "HTTP protocol error".into(),
        Fail::BadHeaderValue => {
            "a header value (the API key or a configured header) has a line break or NUL".into()
        }
        Fail::BadUrl => "the provider URL is not usable".into(),
        Fail::Aborted => "the request was aborted".into(),
    };
    Error::ProviderFailure { reason }
}

/// R-JEV-ERRMAP for a non-2xx status.
pub(crate) fn map_status(status: u16, retry: RetryInfo) -> Error {
    match status {
        400 => Error::InvalidRequest {
            path: String::new(),
            reason: "the provider rejected the request (HTTP 400)".into(),
        },
        401 => Error::AuthenticationFailed,
        402 => Error::QuotaExceeded { retry },
        403 => Error::JevAccessDenied {
            reason: "the provider denied access (HTTP 403)".into(),
        },
        404 => Error::UnsupportedModel,
        409 => Error::RequestConflict {
            reason: "the provider reports a conflicting request id (HTTP 409)".into(),
        },
        429 => Error::RateLimited {
            reason: "the provider is rate limiting (HTTP 429)".into(),
            retry,
        },
        300..=399 => Error::ProviderFailure {
            reason: format!("HTTP {status} redirect (not followed)"),
        },
        s => Error::ProviderFailure {
            reason: format!("HTTP {s}"),
        },
    }
}

/// Longest `Retry-After` kept: a provider (or anything between it and us) may send any date or
/// number; beyond a year the advice is meaningless and only risks overflow downstream.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400 * 365);

/// Retry-After (delta-seconds or IMF-fixdate) and `RateLimit-Reset` / `X-RateLimit-Reset`;
/// `header` looks a lower-case header name up. Every value is peer-supplied: arithmetic
/// saturates and `retry_after` is clamped to [`MAX_RETRY_AFTER`]; a reset time that cannot be
/// represented is dropped.
pub(crate) fn retry_info<'h>(
    header: impl Fn(&str) -> Option<&'h str>,
    wall: SystemTime,
) -> RetryInfo {
    let retry_after = header("retry-after").and_then(|v| {
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            // all digits: delta-seconds, however many (an overflowing number is "very long")
            let secs = v.parse::<u64>().unwrap_or(u64::MAX);
            return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
        }
        let at = parse_http_date(v)?;
        Some(
            at.duration_since(wall)
                .unwrap_or(Duration::ZERO)
                .min(MAX_RETRY_AFTER),
        )
    });
    let reset_at = header("ratelimit-reset")
        .or_else(|| header("x-ratelimit-reset"))
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e11)
        .and_then(|v| {
            let d = Duration::try_from_secs_f64(v).ok()?;
            if v > 1e9 {
                UNIX_EPOCH.checked_add(d)
            } else {
                wall.checked_add(d)
            }
        });
    RetryInfo {
        retry_after,
        reset_at,
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`). Years outside 1970..=9999 are
/// refused (`None`), so the arithmetic below cannot overflow.
pub(crate) fn parse_http_date(s: &str) -> Option<SystemTime> {
    let rest = s.split_once(", ")?.1;
    let mut parts = rest.split(' ');
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let h: u64 = hms.next()?.parse().ok()?;
    let m: u64 = hms.next()?.parse().ok()?;
    let sec: u64 = hms.next()?.parse().ok()?;
    if parts.next()? != "GMT"
        || parts.next().is_some()
        || !(1..=31).contains(&day)
        || !(1970..=9999).contains(&year)
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    // days from civil (Howard Hinnant); bounded by the year check above
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + sec;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_parse() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 784_111_777);
        assert!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").is_none());
        // peer-supplied years far out of range are refused, never an overflow (issue 12 item 6)
        for y in ["10000", "99999999999999999", "-99999999999999999", "1969"] {
            assert!(parse_http_date(&format!("Fri, 31 Dec {y} 23:59:59 GMT")).is_none());
        }
        assert!(parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT").is_some());
    }

    // R-JEV-ERRMAP, issue 12 item 6: every Retry-After / reset value a peer can send is
    // clamped or dropped; none panics, whatever the wall clock.
    #[test]
    fn retry_headers_saturate() {
        let far_wall = UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 2);
        let headers = |ra: &'static str, reset: &'static str| {
            move |name: &str| match name {
                "retry-after" => Some(ra),
                "x-ratelimit-reset" => Some(reset),
                _ => None,
            }
        };
        for (ra, reset) in [
            ("Fri, 31 Dec 9999 23:59:59 GMT", "99999999999"),
            ("18446744073709551616000", "5e10"),
            ("7", "30"),
        ] {
            for wall in [UNIX_EPOCH, far_wall, crate::clock::system().wall()] {
                let r = retry_info(headers(ra, reset), wall);
                assert!(r.retry_after.unwrap() <= MAX_RETRY_AFTER, "{ra}");
            }
        }
        assert_eq!(
            retry_info(headers("7", "30"), UNIX_EPOCH).retry_after,
            Some(Duration::from_secs(7))
        );
    }

    fn parse(raw: &[u8]) -> std::result::Result<(Head, Vec<u8>, bool), Fail> {
        let mut r = io::BufReader::new(raw);
        let head = read_head(&mut r)?;
        let (body, reusable) = read_body(&mut r, &head)?;
        Ok((head, body, reusable))
    }

    fn kind(f: std::result::Result<(Head, Vec<u8>, bool), Fail>) -> &'static str {
        match f {
            Ok(_) => "ok",
            Err(Fail::Protocol) => "protocol",
            Err(Fail::TooLarge) => "too large",
            Err(Fail::Io(_)) => "io",
            Err(_) => "other",
        }
    }

    // The framings a provider may use: length, chunked (extensions, trailers), end of connection.
    #[test]
    fn response_framings() {
        let (head, body, reusable) =
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-A: b\r\n\r\nabcdEXTRA").unwrap();
        assert_eq!(
            (head.status, &body[..], reusable, head.keep_alive),
            (200, &b"abcd"[..], true, true)
        );
        assert_eq!(head.get("x-a"), Some("b"));
        let (_, body, reusable) = parse(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
        )
        .unwrap();
        assert_eq!((&body[..], reusable), (&b"abcde"[..], true));
        let (head, body, reusable) =
            parse(b"HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n{\"a\":1}").unwrap();
        assert_eq!(
            (&body[..], reusable, head.keep_alive),
            (&b"{\"a\":1}"[..], false, false)
        );
        let (_, body, _) = parse(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
        assert!(body.is_empty());
    }

    // Hostile heads and bodies are errors, never panics, never unbounded reads.
    #[test]
    fn hostile_responses_are_refused() {
        let big = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
            MAX_RESPONSE_BYTES + 1
        );
        assert_eq!(kind(parse(big.as_bytes())), "too large");
        let huge = "HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999999\r\n\r\n";
        assert_eq!(kind(parse(huge.as_bytes())), "protocol");
        let chunk = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffff\r\n";
        assert_eq!(kind(parse(chunk)), "too large");
        let chunk = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1ffffffffffffffff\r\n";
        assert_eq!(kind(parse(chunk)), "protocol");
        let chunk = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcX\r\n";
        assert_eq!(kind(parse(chunk)), "protocol");
        let mut long_head = b"HTTP/1.1 200 OK\r\nx: ".to_vec();
        long_head.extend(std::iter::repeat_n(b'a', 100_000));
        assert_eq!(kind(parse(&long_head)), "protocol");
        assert_eq!(kind(parse(b"HTTP/2 200\r\n\r\n")), "protocol");
        assert_eq!(kind(parse(b"HTTP/1.1 2000 OK\r\n\r\n")), "protocol");
        assert_eq!(
            kind(parse(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n")),
            "protocol"
        );
        assert_eq!(
            kind(parse(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab")),
            "io"
        );
        assert_eq!(kind(parse(b"")), "io");
        assert_eq!(kind(parse(b"\xff\xfe\r\n\r\n")), "protocol");
    }

    // A configured header with a line break cannot inject headers, and the error does not
    // repeat it.
    #[test]
    fn header_values_with_line_breaks_are_refused_without_echo() {
        let key = crate::config::CredentialRef::Env("K".into())
            .resolve(&|_| Some("sk-1".into()))
            .unwrap();
        let clock = crate::clock::system();
        let post = |extra: &'static [(&'static str, &'static str)]| Post {
            url: "http://127.0.0.1:9/v1",
            auth: Auth::Bearer,
            key: &key,
            extra_headers: extra,
            body: b"{}",
            timeout: Duration::from_secs(1),
            clock: &clock,
            wall: UNIX_EPOCH,
            timeout_ms: 1000,
            abort: None,
        };
        let ok = request_bytes(
            &post(&[("anthropic-version", "1")]),
            "127.0.0.1",
            Some(9),
            "/v1",
        )
        .unwrap_or_default();
        let text = String::from_utf8(ok).unwrap();
        assert!(
            text.starts_with("POST /v1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\n"),
            "{text}"
        );
        assert!(text.contains("authorization: Bearer sk-1\r\n"));
        assert!(text.ends_with("content-length: 2\r\n\r\n{}"));
        for extra in [
            &[("x", "SECRET\r\nevil: 1")][..],
            &[("x\r\nevil", "1")][..],
            &[("x", "a\0b")][..],
        ] {
            assert!(matches!(
                request_bytes(&post(extra), "h", None, "/"),
                Err(Fail::BadHeaderValue)
            ));
        }
        let err = fail_error(Fail::BadHeaderValue, 1000).to_string();
        assert!(!err.contains("SECRET"), "{err}");
    }

    // R-JEV-ERRMAP: every documented status.
    #[test]
    fn statuses_map_to_documented_codes() {
        let cases = [
            (400, "JEV_INVALID_REQUEST"),
            (401, "JEV_AUTHENTICATION_FAILED"),
            (402, "JEV_QUOTA_EXCEEDED"),
            (403, "JEV_ACCESS_DENIED"),
            (404, "JEV_UNSUPPORTED_MODEL"),
            (409, "JEV_REQUEST_CONFLICT"),
            (429, "JEV_RATE_LIMITED"),
            (500, "JEV_PROVIDER_FAILURE"),
            (503, "JEV_PROVIDER_FAILURE"),
            (302, "JEV_PROVIDER_FAILURE"),
            (418, "JEV_PROVIDER_FAILURE"),
        ];
        for (status, code) in cases {
            assert_eq!(map_status(status, RetryInfo::default()).code(), code);
        }
    }

    /// A loopback provider that reads the request, reports it, and then never answers (the
    /// socket stays open until the returned sender is dropped).
    fn stalling_server() -> (
        String,
        std::sync::mpsc::Receiver<()>,
        std::sync::mpsc::Sender<()>,
    ) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let (got, got_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = got.send(());
            let _ = stop_rx.recv();
        });
        (url, got_rx, stop)
    }

    /// Runs a POST of `timeout` on `clock` against `url` on its own thread.
    fn post_on(
        url: String,
        clock: SharedClock,
        timeout: Duration,
    ) -> std::sync::mpsc::Receiver<Result<Vec<u8>>> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let key = crate::config::CredentialRef::Env("K".into())
                .resolve(&|_| Some("sk-1".into()))
                .unwrap();
            let r = Http::new(&[]).post_json(&Post {
                url: &url,
                auth: Auth::Bearer,
                key: &key,
                extra_headers: &[],
                body: b"{}",
                timeout,
                clock: &clock,
                wall: UNIX_EPOCH,
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                abort: None,
            });
            let _ = tx.send(r);
        });
        rx
    }

    // R-CLK, issue 19 item 6: the socket deadline is on the context's clock. A provider that
    // stalls after reading the request, a 60 s timeout on a manual clock advanced past it: the
    // exchange ends with JEV_TIMEOUT within a slice, not after 60 s of real time (the old
    // real-time deadline kept it blocked; the 10 s bound of this test's wait would fail).
    #[test]
    fn r_clk_a_stalled_exchange_ends_when_the_manual_clock_passes_its_deadline() {
        let (url, got, _stop) = stalling_server();
        let clock = crate::clock::ManualClock::new();
        let answer = post_on(url, Arc::new(clock.clone()), Duration::from_secs(60));
        got.recv_timeout(Duration::from_secs(10))
            .expect("the request arrived");
        clock.advance(Duration::from_secs(61));
        let r = answer
            .recv_timeout(Duration::from_secs(10))
            .expect("the exchange ended when the clock passed its deadline");
        assert!(
            matches!(r, Err(Error::Timeout { timeout_ms: 60_000 })),
            "{r:?}"
        );
    }

    // R-CLK, issue 19 item 6: on a manual clock nobody advances, a stalled exchange still ends
    // — after about its timeout of real waiting (the slices count against it, as a
    // `clock::Grace` does) — instead of hanging forever.
    #[test]
    fn r_clk_a_stalled_exchange_ends_on_a_manual_clock_nobody_advances() {
        let (url, got, _stop) = stalling_server();
        let clock = crate::clock::ManualClock::new();
        let answer = post_on(url, Arc::new(clock), Duration::from_millis(200));
        got.recv_timeout(Duration::from_secs(10))
            .expect("the request arrived");
        let r = answer
            .recv_timeout(Duration::from_secs(10))
            .expect("the exchange ended in real time");
        assert!(
            matches!(r, Err(Error::Timeout { timeout_ms: 200 })),
            "{r:?}"
        );
    }
}

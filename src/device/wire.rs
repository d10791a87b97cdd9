//! The channel's own WebSocket (RFC 6455), on both sides (R-DEV-CHAN, R-LOG): the HTTP upgrade
//! handshake and the data phase — frames (FIN, opcode, mask, length), fragmentation, ping/pong,
//! close with a code, the message size limit and UTF-8 validation of text.
//!
//! It exists so that nothing the channel carries (the device token in `authenticate`, typed
//! text, form values, page text) can reach a log record: general-purpose WebSocket libraries log
//! every frame with its payload at `trace`, and hosts debug with `RUST_LOG=trace`. This module
//! must never log at all, and never put a payload into an error.
//!
//! After any protocol or I/O failure a [`Socket`] is failed for good: it never parses another
//! byte, and after an I/O failure it never writes again either ([`WireError::Failed`]). The one
//! thing left to do with it is [`Socket::fail_close`]: one best-effort close frame, then a
//! bounded lingering close that discards (never parses) what the peer still sends, so the close
//! code is not lost to a reset. Reads and writes are non-blocking-friendly: `WouldBlock` and a
//! read timeout are [`WireError::WouldBlock`] and lose nothing. Linear time in the input.

use crate::clock::{Clock, Grace};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// The largest HTTP head (request or response) accepted in the handshake.
pub(crate) const MAX_HEAD: usize = 8192;
/// How much one socket read asks for (a buffer on the stack: a connection's own read buffer
/// only ever holds bytes that arrived).
const READ_CHUNK: usize = 32 * 1024;
/// A buffer emptied with more capacity than this gives it back (an idle connection keeps
/// almost nothing, whatever the size of the last message).
const KEEP_CAPACITY: usize = 4 * 1024;
/// RFC 6455 §1.3.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Which end of the connection this is: a server expects masked frames and sends unmasked
/// ones, a client the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The gateway.
    Server,
    /// The worker.
    Client,
}

/// One message (control frames included, so a caller can count them as signs of life).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Message {
    /// A whole text message, valid UTF-8.
    Text(String),
    /// A whole binary message (its content is dropped: the channel has no use for it).
    Binary,
    /// A ping (already answered with a pong).
    Ping,
    /// A pong.
    Pong,
    /// A close frame: its code and reason, when it had one (already answered).
    Close(Option<(u16, String)>),
}

/// Why a read or write did not complete. Never carries a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// Nothing more now (non-blocking socket or read timeout): try again later.
    WouldBlock,
    /// A message or frame over the size limit, or a write backlog over its limit (1009).
    TooBig,
    /// A WebSocket protocol violation (1002).
    Protocol,
    /// A text message or close reason that is not UTF-8 (1007).
    Utf8,
    /// The connection failed or ended (`UnexpectedEof` when the peer closed without a frame).
    Io(io::ErrorKind),
    /// The socket already failed or closed: nothing was read or written.
    Failed,
}

impl WireError {
    /// The close code and reason this gateway sends for a failure of the peer's making.
    pub(crate) fn close(self) -> Option<(u16, &'static str)> {
        match self {
            WireError::TooBig => Some((1009, "MESSAGE_TOO_BIG")),
            WireError::Protocol => Some((1002, "PROTOCOL_ERROR")),
            WireError::Utf8 => Some((1007, "MALFORMED_FRAME")),
            _ => None,
        }
    }
}

/// A WebSocket over `S` after its handshake.
pub(crate) struct Socket<S> {
    stream: S,
    role: Role,
    max_message: usize,
    max_write: usize,
    rbuf: Vec<u8>,
    rpos: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    /// A fragmented message being assembled: (is text, bytes so far).
    partial: Option<(bool, Vec<u8>)>,
    /// No more reads: a protocol failure, the end of the stream, or a close received.
    read_done: bool,
    /// No more reads or writes: an I/O failure.
    broken: bool,
    close_sent: bool,
    /// Queued bytes may still sit in the stream (TLS) after `wbuf` was written.
    needs_flush: bool,
    rng: ring::rand::SystemRandom,
}

impl<S: Read + Write> Socket<S> {
    /// A socket whose handshake is done; `leftover` are bytes already read past the HTTP head.
    pub(crate) fn new(stream: S, role: Role, max_message: usize, leftover: Vec<u8>) -> Socket<S> {
        Socket {
            stream,
            role,
            max_message,
            max_write: max_message.saturating_mul(4).max(1 << 20),
            rbuf: leftover,
            rpos: 0,
            wbuf: Vec::new(),
            wpos: 0,
            partial: None,
            read_done: false,
            broken: false,
            close_sent: false,
            needs_flush: false,
            rng: ring::rand::SystemRandom::new(),
        }
    }

    /// The stream, for its owner's bookkeeping (never for reading or writing around this type).
    #[cfg(test)]
    pub(crate) fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The next message. Pings are answered (the pong is queued: call [`Socket::flush`]) and a
    /// close is answered with the same code. Any error but `WouldBlock` ends reading for good.
    pub(crate) fn read(&mut self) -> Result<Message, WireError> {
        if self.broken || self.read_done {
            return Err(WireError::Failed);
        }
        loop {
            match self.parse() {
                Ok(Some(message)) => return Ok(message),
                Ok(None) => {}
                Err(e) => {
                    self.read_done = true;
                    self.partial = None;
                    return Err(e);
                }
            }
            if self.rpos > 0 && self.rpos >= self.rbuf.len() / 2 {
                self.rbuf.drain(..self.rpos);
                self.rpos = 0;
            }
            let mut chunk = [0u8; READ_CHUNK];
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.read_done = true;
                    return Err(WireError::Io(io::ErrorKind::UnexpectedEof));
                }
                Ok(n) => self.rbuf.extend_from_slice(&chunk[..n.min(READ_CHUNK)]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_would_block(&e) => return Err(WireError::WouldBlock),
                Err(e) => {
                    self.read_done = true;
                    self.broken = true;
                    return Err(WireError::Io(e.kind()));
                }
            }
        }
    }

    /// Parses one frame from the buffer: `None` when more bytes are needed.
    fn parse(&mut self) -> Result<Option<Message>, WireError> {
        loop {
            let buf = &self.rbuf[self.rpos..];
            if buf.len() < 2 {
                return Ok(None);
            }
            let (b0, b1) = (buf[0], buf[1]);
            let fin = b0 & 0x80 != 0;
            let opcode = b0 & 0x0F;
            if b0 & 0x70 != 0 || !matches!(opcode, 0 | 1 | 2 | 8 | 9 | 10) {
                return Err(WireError::Protocol);
            }
            let masked = b1 & 0x80 != 0;
            if masked != (self.role == Role::Server) {
                return Err(WireError::Protocol);
            }
            let control = opcode & 0x08 != 0;
            let (len, mut at) = match b1 & 0x7F {
                126 if buf.len() < 4 => return Ok(None),
                126 => (u64::from(u16::from_be_bytes([buf[2], buf[3]])), 4),
                127 if buf.len() < 10 => return Ok(None),
                127 => {
                    let mut n = [0u8; 8];
                    n.copy_from_slice(&buf[2..10]);
                    (u64::from_be_bytes(n), 10)
                }
                n => (u64::from(n), 2),
            };
            if len >> 63 != 0 || (control && (!fin || len > 125)) {
                return Err(WireError::Protocol);
            }
            if !control {
                let so_far = self.partial.as_ref().map_or(0, |(_, p)| p.len()) as u64;
                if so_far.saturating_add(len) > self.max_message as u64 {
                    return Err(WireError::TooBig);
                }
            }
            // Fits in usize: bounded by max_message or 125 above.
            let len = len as usize;
            let mut key = None;
            if masked {
                if buf.len() < at + 4 {
                    return Ok(None);
                }
                key = Some([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
                at += 4;
            }
            // Not reserved ahead: the buffer grows with what arrives, never with what a header
            // announces (a peer announcing big frames and sending little gets nothing).
            if buf.len() < at + len {
                return Ok(None);
            }
            let start = self.rpos + at;
            let end = start + len;
            if let Some(key) = key {
                for (i, b) in self.rbuf[start..end].iter_mut().enumerate() {
                    *b ^= key[i & 3];
                }
            }
            self.rpos = end;
            if self.rpos == self.rbuf.len() {
                // Everything consumed: the payload is copied out below before the next read.
                self.rpos = 0;
                let payload = self.rbuf[start..end].to_vec();
                self.rbuf.clear();
                if self.rbuf.capacity() > KEEP_CAPACITY {
                    self.rbuf = Vec::new();
                }
                return self.frame(fin, opcode, &payload);
            }
            let payload = self.rbuf[start..end].to_vec();
            if let Some(m) = self.frame(fin, opcode, &payload)? {
                return Ok(Some(m));
            }
        }
    }

    /// Handles one frame's payload: `None` when a fragmented message is not complete yet.
    fn frame(
        &mut self,
        fin: bool,
        opcode: u8,
        payload: &[u8],
    ) -> Result<Option<Message>, WireError> {
        match opcode {
            0 => {
                let Some((_, bytes)) = self.partial.as_mut() else {
                    return Err(WireError::Protocol);
                };
                bytes.extend_from_slice(payload);
                if !fin {
                    return Ok(None);
                }
                let (text, bytes) = self.partial.take().unwrap_or_default();
                finish(text, bytes).map(Some)
            }
            1 | 2 => {
                if self.partial.is_some() {
                    return Err(WireError::Protocol);
                }
                if fin {
                    return finish(opcode == 1, payload.to_vec()).map(Some);
                }
                self.partial = Some((opcode == 1, payload.to_vec()));
                Ok(None)
            }
            8 => {
                let close = match payload.len() {
                    0 => None,
                    1 => return Err(WireError::Protocol),
                    _ => {
                        let code = u16::from_be_bytes([payload[0], payload[1]]);
                        if !matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999) {
                            return Err(WireError::Protocol);
                        }
                        let reason = std::str::from_utf8(&payload[2..])
                            .map_err(|_| WireError::Utf8)?
                            .to_string();
                        Some((code, reason))
                    }
                };
                self.read_done = true;
                if !self.close_sent {
                    let reply = close.as_ref().map(|(c, _)| *c);
                    let _ = self.queue_close(reply, "");
                }
                Ok(Some(Message::Close(close)))
            }
            9 => {
                if !self.close_sent {
                    self.queue(10, payload)?;
                }
                Ok(Some(Message::Ping))
            }
            _ => Ok(Some(Message::Pong)),
        }
    }

    /// Queues a text message (call [`Socket::flush`]).
    pub(crate) fn send_text(&mut self, text: &str) -> Result<(), WireError> {
        self.queue(1, text.as_bytes())
    }

    /// Queues an empty ping.
    pub(crate) fn send_ping(&mut self) -> Result<(), WireError> {
        self.queue(9, &[])
    }

    /// Queues a close frame with `code` and `reason` (cut to the 123 bytes a frame allows);
    /// after it nothing else is sent.
    pub(crate) fn send_close(&mut self, code: u16, reason: &str) -> Result<(), WireError> {
        self.queue_close(Some(code), reason)
    }

    fn queue_close(&mut self, code: Option<u16>, reason: &str) -> Result<(), WireError> {
        if self.close_sent {
            return Ok(());
        }
        let mut payload = Vec::with_capacity(125);
        if let Some(code) = code {
            payload.extend_from_slice(&code.to_be_bytes());
            let mut cut = reason.len().min(123);
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            payload.extend_from_slice(&reason.as_bytes()[..cut]);
        }
        self.queue(8, &payload)?;
        self.close_sent = true;
        Ok(())
    }

    fn queue(&mut self, opcode: u8, payload: &[u8]) -> Result<(), WireError> {
        if self.broken || self.close_sent {
            return Err(WireError::Failed);
        }
        let backlog = self.wbuf.len() - self.wpos;
        if backlog.saturating_add(payload.len()) > self.max_write {
            return Err(WireError::TooBig);
        }
        self.needs_flush = true;
        let mask = self.role == Role::Client;
        let mask_bit = if mask { 0x80 } else { 0 };
        self.wbuf.push(0x80 | opcode);
        match payload.len() {
            n if n < 126 => self.wbuf.push(mask_bit | n as u8),
            n if n <= usize::from(u16::MAX) => {
                self.wbuf.push(mask_bit | 126);
                self.wbuf.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                self.wbuf.push(mask_bit | 127);
                self.wbuf.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        if mask {
            let mut key = [0u8; 4];
            if ring::rand::SecureRandom::fill(&self.rng, &mut key).is_err() {
                // No random source: refuse to send a predictable mask.
                self.broken = true;
                return Err(WireError::Io(io::ErrorKind::Other));
            }
            self.wbuf.extend_from_slice(&key);
            let start = self.wbuf.len();
            self.wbuf.extend_from_slice(payload);
            for (i, b) in self.wbuf[start..].iter_mut().enumerate() {
                *b ^= key[i & 3];
            }
        } else {
            self.wbuf.extend_from_slice(payload);
        }
        Ok(())
    }

    /// Writes what is queued: `Ok(true)` when everything went out, `Ok(false)` when the socket
    /// would block (call again when it is writable).
    pub(crate) fn flush(&mut self) -> Result<bool, WireError> {
        if self.broken {
            return Err(WireError::Failed);
        }
        while self.wpos < self.wbuf.len() {
            match self.stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(self.break_io(io::ErrorKind::WriteZero)),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_would_block(&e) => return Ok(false),
                Err(e) => return Err(self.break_io(e.kind())),
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        if self.wbuf.capacity() > KEEP_CAPACITY {
            self.wbuf = Vec::new();
        }
        match self.stream.flush() {
            Ok(()) => {
                self.needs_flush = false;
                Ok(true)
            }
            Err(e) if is_would_block(&e) || e.kind() == io::ErrorKind::Interrupted => Ok(false),
            Err(e) => Err(self.break_io(e.kind())),
        }
    }

    fn break_io(&mut self, kind: io::ErrorKind) -> WireError {
        self.broken = true;
        self.read_done = true;
        WireError::Io(kind)
    }

    /// How many queued bytes are not written yet (to the stream: TLS may hold more).
    pub(crate) fn backlog(&self) -> usize {
        self.wbuf.len() - self.wpos
    }

    /// Changes the largest message accepted from now on (the first, authenticating message of
    /// a connection is held to a smaller limit than the rest).
    pub(crate) fn set_max_message(&mut self, max_message: usize) {
        self.max_message = max_message;
        self.max_write = max_message.saturating_mul(4).max(1 << 20);
    }

    /// The stream, for the close that follows a failure (nothing more is parsed).
    pub(crate) fn into_inner(self) -> S {
        self.stream
    }

    /// The stream, mutably (for the owner's I/O on a failed socket: never to read or write
    /// around this type while it is healthy).
    pub(crate) fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Whether an I/O failure broke the socket (nothing more is read or written).
    pub(crate) fn is_broken(&self) -> bool {
        self.broken
    }

    /// Something is queued and not yet written.
    pub(crate) fn pending(&self) -> bool {
        self.needs_flush || self.wpos < self.wbuf.len()
    }

    /// The orderly close on a healthy socket: sends `code` (unless a close was already sent),
    /// then reads (with `tcp`'s timeouts, blocking) until the peer's close reply, the end of the
    /// stream, a failure or the end of `grace` (a [`Grace`] on `clock`). Reads nothing after a
    /// failure.
    pub(crate) fn close(
        &mut self,
        tcp: &TcpStream,
        code: Option<(u16, &str)>,
        grace: Duration,
        clock: &dyn Clock,
    ) {
        let mut grace = Grace::new(clock, grace);
        let _ = tcp.set_nonblocking(false);
        let _ = tcp.set_read_timeout(Some(CLOSE_READ_SLICE));
        if let Some((code, reason)) = code {
            if self.send_close(code, reason).is_err() {
                return;
            }
        }
        while grace.next(CLOSE_READ_SLICE).is_some() {
            match self.flush() {
                Ok(true) => break,
                Ok(false) => {}
                Err(_) => return,
            }
        }
        while let Some(slice) = grace.next(CLOSE_READ_SLICE) {
            let _ = tcp.set_read_timeout(Some(slice));
            match self.read() {
                Ok(Message::Close(_)) => {
                    let _ = self.flush();
                    return;
                }
                Ok(_) | Err(WireError::WouldBlock) => {}
                Err(_) => return,
            }
        }
    }

    /// The close after a failure: if the socket can still be written, one close frame with
    /// `code` (best effort, bounded by `grace` on `clock`), then the lingering close of
    /// [`linger`]. Never parses another byte.
    pub(crate) fn fail_close(
        &mut self,
        tcp: &TcpStream,
        code: Option<(u16, &str)>,
        grace: Duration,
        clock: &dyn Clock,
    ) {
        let mut grace = Grace::new(clock, grace);
        if !self.broken {
            let _ = tcp.set_nonblocking(false);
            if let Some((code, reason)) = code {
                let _ = self.send_close(code, reason);
            }
            while self.pending() && grace.next(CLOSE_READ_SLICE).is_some() {
                if self.flush().is_err() {
                    break;
                }
            }
            let _ = self.flush();
        }
        self.broken = true;
        self.read_done = true;
        linger(tcp, &mut grace);
    }
}

/// The read timeout of one step of a close: how often it looks at its [`Grace`].
const CLOSE_READ_SLICE: Duration = Duration::from_millis(10);

/// The lingering close: ends our side of the TCP stream, then discards (never parses) what the
/// peer still sends until it ends its side or the end of `grace`, so that the peer reads our
/// last frame instead of a reset.
pub(crate) fn linger(tcp: &TcpStream, grace: &mut Grace<'_>) {
    let _ = tcp.shutdown(Shutdown::Write);
    let _ = tcp.set_nonblocking(false);
    let mut sink = [0u8; 16 * 1024];
    loop {
        let Some(left) = grace.next(Duration::MAX) else {
            return;
        };
        if tcp.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match (&*tcp).read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn finish(text: bool, bytes: Vec<u8>) -> Result<Message, WireError> {
    if !text {
        return Ok(Message::Binary);
    }
    String::from_utf8(bytes)
        .map(Message::Text)
        .map_err(|_| WireError::Utf8)
}

/// A read or write that would block (non-blocking socket) or timed out (read timeout).
pub(crate) fn is_would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

// ----- the HTTP upgrade handshake -----

/// Why a handshake did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandshakeError {
    /// `keep_going` said stop (deadline, shutdown) before the head was complete.
    Abandoned,
    /// The peer is not speaking HTTP/WebSocket as expected (the server answered it with a 4xx).
    Refused,
    /// The server answered with this HTTP status instead of 101 (0: not an HTTP answer); on
    /// the server side, internally, a head that is not HTTP.
    Status(u16),
    /// The socket failed or ended.
    Io(io::ErrorKind),
}

/// Reads an HTTP head (up to the blank line). Returns the head and the bytes after it.
fn read_head<S: Read>(
    stream: &mut S,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<(Vec<u8>, Vec<u8>), HandshakeError> {
    let mut buf = Vec::with_capacity(1024);
    let mut searched = 0;
    let mut chunk = [0u8; 2048];
    loop {
        match head_end(&buf, &mut searched) {
            Ok(Some(end)) => {
                let rest = buf.split_off(end);
                return Ok((buf, rest));
            }
            Ok(None) => {}
            Err(431) => return Err(HandshakeError::Refused),
            Err(status) => return Err(HandshakeError::Status(status)),
        }
        if !keep_going() {
            return Err(HandshakeError::Abandoned);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Err(HandshakeError::Io(io::ErrorKind::UnexpectedEof)),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted || is_would_block(&e) => {}
            Err(e) => return Err(HandshakeError::Io(e.kind())),
        }
    }
}

/// Where the HTTP head in `buf` ends (just past its blank line), `None` while it is incomplete,
/// or the status that refuses it: 431 past [`MAX_HEAD`], 400 when it cannot be HTTP. `searched`
/// carries how far earlier calls looked, so feeding a head in pieces is linear in its length.
pub(crate) fn head_end(buf: &[u8], searched: &mut usize) -> Result<Option<usize>, u16> {
    let from = (*searched).min(buf.len());
    if let Some(at) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
        let end = from + at + 4;
        return if end > MAX_HEAD + 4 {
            Err(431)
        } else {
            Ok(Some(end))
        };
    }
    *searched = buf.len().saturating_sub(3);
    if buf.len() > MAX_HEAD {
        return Err(431);
    }
    // Every HTTP head starts with a method or `HTTP/` in capitals: anything else (a TLS hello
    // on the plain port, garbage) is answered at once, not waited for.
    if buf.first().is_some_and(|b| !b.is_ascii_uppercase()) {
        return Err(400);
    }
    Ok(None)
}

/// A parsed head: its first line and headers (names lower-cased).
pub(crate) struct Head<'a> {
    pub(crate) first: &'a str,
    pub(crate) headers: Vec<(String, &'a str)>,
}

impl Head<'_> {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// The header's comma-separated tokens contain `token` (case-insensitive).
    pub(crate) fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

pub(crate) fn parse_head(head: &[u8]) -> Option<Head<'_>> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.strip_suffix("\r\n\r\n")?.split("\r\n");
    let first = lines.next()?;
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.is_empty() || name.bytes().any(|b| !b.is_ascii_graphic()) {
            return None;
        }
        headers.push((name.to_ascii_lowercase(), value.trim()));
    }
    Some(Head { first, headers })
}

fn accept_key(key: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.as_bytes());
    ctx.update(ACCEPT_GUID.as_bytes());
    data_encoding::BASE64.encode(ctx.finish().as_ref())
}

#[cfg(test)]
fn refuse<S: Write>(stream: &mut S, status: u16) -> HandshakeError {
    let _ = stream.write_all(refusal(status).as_bytes());
    let _ = stream.flush();
    HandshakeError::Refused
}

/// The refusal of a head that is not an upgrade to this server's WebSocket, for `status`
/// (400, 404, 405, 426, 431), with no body.
pub(crate) fn refusal(status: u16) -> String {
    let (line, extra) = match status {
        404 => ("404 Not Found", ""),
        405 => ("405 Method Not Allowed", "Allow: GET\r\n"),
        426 => (
            "426 Upgrade Required",
            "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
        ),
        431 => ("431 Request Header Fields Too Large", ""),
        _ => ("400 Bad Request", ""),
    };
    format!("HTTP/1.1 {line}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n")
}

/// The server's answer to a complete request head: the 101 response that upgrades it to the
/// WebSocket at `path`, or the status that refuses it (see [`refusal`]). Pure; linear in the
/// head.
pub(crate) fn upgrade_answer(head: &[u8], path: &str) -> Result<String, u16> {
    let request = parse_head(head).ok_or(400u16)?;
    let mut parts = request.first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(400);
    };
    if version != "HTTP/1.1" {
        return Err(400);
    }
    if target.split('?').next() != Some(path) {
        return Err(404);
    }
    if method != "GET" {
        return Err(405);
    }
    if !request.has_token("upgrade", "websocket")
        || !request.has_token("connection", "upgrade")
        || request.header("sec-websocket-version") != Some("13")
    {
        return Err(426);
    }
    let key = match request.header("sec-websocket-key") {
        Some(k) if data_encoding::BASE64.decode(k.as_bytes()).map(|b| b.len()) == Ok(16) => k,
        _ => return Err(400),
    };
    Ok(format!(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    ))
}

/// The server side over a blocking-style stream: reads the upgrade request, answers 101 for
/// `path` (or 400 / 404 / 426, then gives up), and returns the socket. `keep_going` is asked
/// between reads. (The gateway's event loop feeds [`head_end`] and [`upgrade_answer`] itself.)
#[cfg(test)]
pub(crate) fn accept<S: Read + Write>(
    mut stream: S,
    path: &str,
    max_message: usize,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Socket<S>, HandshakeError> {
    let (head, rest) = match read_head(&mut stream, keep_going) {
        Ok(h) => h,
        Err(HandshakeError::Refused) => return Err(refuse(&mut stream, 431)),
        Err(HandshakeError::Status(_)) => return Err(refuse(&mut stream, 400)),
        Err(e) => return Err(e),
    };
    let response = match upgrade_answer(&head, path) {
        Ok(r) => r,
        Err(status) => return Err(refuse(&mut stream, status)),
    };
    write_head(&mut stream, response.as_bytes(), keep_going)?;
    Ok(Socket::new(stream, Role::Server, max_message, rest))
}

fn write_head<S: Write>(
    stream: &mut S,
    mut bytes: &[u8],
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<(), HandshakeError> {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(HandshakeError::Io(io::ErrorKind::WriteZero)),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted || is_would_block(&e) => {
                if !keep_going() {
                    return Err(HandshakeError::Abandoned);
                }
            }
            Err(e) => return Err(HandshakeError::Io(e.kind())),
        }
    }
    loop {
        match stream.flush() {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted || is_would_block(&e) => {
                if !keep_going() {
                    return Err(HandshakeError::Abandoned);
                }
            }
            Err(e) => return Err(HandshakeError::Io(e.kind())),
        }
    }
}

/// The client side: sends the upgrade request for `host` (as in the `Host` header) and `target`
/// (path and query), checks the 101 answer and its accept key.
pub(crate) fn connect<S: Read + Write>(
    mut stream: S,
    host: &str,
    target: &str,
    max_message: usize,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Socket<S>, HandshakeError> {
    let mut nonce = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce)
        .map_err(|_| HandshakeError::Io(io::ErrorKind::Other))?;
    let key = data_encoding::BASE64.encode(&nonce);
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n\r\n"
    );
    write_head(&mut stream, request.as_bytes(), keep_going)?;
    let (head, rest) = match read_head(&mut stream, keep_going) {
        Err(HandshakeError::Refused | HandshakeError::Status(_)) => {
            return Err(HandshakeError::Status(0))
        }
        other => other?,
    };
    let Some(response) = parse_head(&head) else {
        return Err(HandshakeError::Status(0));
    };
    let mut parts = response.first.split(' ');
    let status = match (parts.next(), parts.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => code.parse::<u16>().unwrap_or(0),
        _ => 0,
    };
    if status != 101 {
        return Err(HandshakeError::Status(status));
    }
    if !response.has_token("upgrade", "websocket")
        || !response.has_token("connection", "upgrade")
        || response.header("sec-websocket-accept") != Some(accept_key(&key).as_str())
    {
        return Err(HandshakeError::Status(101));
    }
    Ok(Socket::new(stream, Role::Client, max_message, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// An in-memory stream: reads from `input`, records writes, counts reads.
    struct Mem {
        input: Vec<u8>,
        at: usize,
        out: Vec<u8>,
        reads: Rc<Cell<usize>>,
    }

    impl Read for Mem {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads.set(self.reads.get() + 1);
            if self.at == self.input.len() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.input.len() - self.at).min(1000);
            buf[..n].copy_from_slice(&self.input[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    impl Write for Mem {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn mem(input: Vec<u8>) -> (Mem, Rc<Cell<usize>>) {
        let reads = Rc::new(Cell::new(0));
        (
            Mem {
                input,
                at: 0,
                out: Vec::new(),
                reads: reads.clone(),
            },
            reads,
        )
    }

    /// A frame as a client sends it (masked).
    fn client_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let (s, _) = mem(Vec::new());
        let mut sock = Socket::new(s, Role::Client, 1 << 20, Vec::new());
        sock.queue(opcode, payload).unwrap();
        let mut f = sock.wbuf.clone();
        if !fin {
            f[0] &= 0x7F;
        }
        f
    }

    fn server(input: Vec<u8>, max: usize) -> (Socket<Mem>, Rc<Cell<usize>>) {
        let (s, reads) = mem(input);
        (Socket::new(s, Role::Server, max, Vec::new()), reads)
    }

    #[test]
    fn messages_fragments_and_control_frames_round_trip() {
        let mut input = client_frame(true, 1, "héllo".as_bytes());
        input.extend(client_frame(false, 1, b"ab"));
        input.extend(client_frame(true, 9, b"p"));
        input.extend(client_frame(true, 0, b"cd"));
        input.extend(client_frame(true, 2, &[0, 1]));
        input.extend(client_frame(true, 10, b""));
        input.extend(client_frame(true, 1, &vec![b'x'; 70_000]));
        input.extend(client_frame(true, 8, &[0x03, 0xE8, b'o', b'k']));
        let (mut s, _) = server(input, 1 << 20);
        assert_eq!(s.read(), Ok(Message::Text("héllo".into())));
        assert_eq!(s.read(), Ok(Message::Ping));
        assert_eq!(s.read(), Ok(Message::Text("abcd".into())));
        assert_eq!(s.read(), Ok(Message::Binary));
        assert_eq!(s.read(), Ok(Message::Pong));
        assert_eq!(s.read(), Ok(Message::Text("x".repeat(70_000))));
        assert_eq!(s.read(), Ok(Message::Close(Some((1000, "ok".into())))));
        assert_eq!(s.read(), Err(WireError::Failed));
        assert!(s.flush().unwrap());
        // The pong echoes the ping's payload; the close reply echoes the code; unmasked.
        assert_eq!(s.get_ref().out, [0x8A, 1, b'p', 0x88, 2, 0x03, 0xE8]);
    }

    #[test]
    fn violations_fail_the_socket_and_nothing_is_read_after() {
        let mut unmasked = vec![0x81, 2, b'h', b'i'];
        let cases: Vec<(Vec<u8>, WireError)> = vec![
            (client_frame(true, 3, b"x"), WireError::Protocol), // reserved opcode
            (std::mem::take(&mut unmasked), WireError::Protocol), // unmasked client frame
            (client_frame(true, 1, &[0xFF, 0xFE]), WireError::Utf8),
            (client_frame(true, 0, b"x"), WireError::Protocol), // continuation of nothing
            (client_frame(false, 9, b"x"), WireError::Protocol), // fragmented control
            (client_frame(true, 9, &[0; 126]), WireError::Protocol), // long control
            (client_frame(true, 8, &[3]), WireError::Protocol), // 1-byte close
            (client_frame(true, 8, &[0x03, 0xED]), WireError::Protocol), // close 1005
            (client_frame(true, 1, &[b'x'; 101]), WireError::TooBig),
            (
                {
                    let mut f = client_frame(false, 1, &[b'x'; 60]);
                    f.extend(client_frame(true, 0, &[b'x'; 60]));
                    f
                },
                WireError::TooBig,
            ),
            (
                {
                    let mut f = client_frame(false, 1, b"a");
                    f.extend(client_frame(true, 1, b"b"));
                    f
                },
                WireError::Protocol,
            ), // a new message inside a fragmented one
            (
                {
                    let mut f = vec![0x81, 0xFF];
                    f.extend_from_slice(&u64::MAX.to_be_bytes());
                    f
                },
                WireError::Protocol,
            ),
            (vec![0xC1, 0x80, 0, 0, 0, 0], WireError::Protocol), // RSV1
        ];
        for (i, (input, want)) in cases.into_iter().enumerate() {
            let mut input = input;
            // Bytes after the violation must never be looked at.
            input.extend(client_frame(true, 1, b"after"));
            let (mut s, reads) = server(input, 100);
            let got = loop {
                match s.read() {
                    Ok(Message::Text(_)) if i == 2 => panic!("invalid UTF-8 accepted"),
                    Ok(_) => {}
                    Err(e) => break e,
                }
            };
            assert_eq!(got, want, "case {i}");
            let n = reads.get();
            assert_eq!(s.read(), Err(WireError::Failed), "case {i}");
            assert_eq!(reads.get(), n, "case {i}: read after a failure");
        }
    }

    #[test]
    fn buffers_grow_with_what_arrives_and_shrink_when_emptied() {
        // Issue 24 item 2: a header announcing 1 MiB followed by 10 bytes makes the socket hold
        // 10 bytes, not 1 MiB (nothing is reserved ahead of what arrives).
        let mut announced = vec![0x81, 0xFF];
        announced.extend_from_slice(&(1u64 << 20).to_be_bytes());
        announced.extend_from_slice(&[1, 2, 3, 4]);
        announced.extend_from_slice(&[b'x'; 10]);
        let (mut s, _) = server(announced, 2 << 20);
        assert_eq!(s.read(), Err(WireError::WouldBlock));
        assert!(s.rbuf.capacity() <= KEEP_CAPACITY, "{}", s.rbuf.capacity());
        // A 300 KB message is read whole; afterwards the buffers are given back.
        let big = "y".repeat(300_000);
        let (mut s, _) = server(client_frame(true, 1, big.as_bytes()), 1 << 20);
        assert_eq!(s.read(), Ok(Message::Text(big.clone())));
        assert!(s.rbuf.capacity() <= KEEP_CAPACITY, "{}", s.rbuf.capacity());
        s.send_text(&big).unwrap();
        assert!(s.wbuf.capacity() >= 300_000);
        assert_eq!(s.flush(), Ok(true));
        assert!(s.wbuf.capacity() <= KEEP_CAPACITY, "{}", s.wbuf.capacity());
        assert_eq!(s.backlog(), 0);
    }

    #[test]
    fn a_20_mb_declared_frame_is_refused_from_its_header() {
        let mut input = vec![0x81, 0xFF];
        input.extend_from_slice(&(20u64 << 20).to_be_bytes());
        input.extend_from_slice(&[1, 2, 3, 4]);
        let (mut s, reads) = server(input, 16 << 20);
        assert_eq!(s.read(), Err(WireError::TooBig));
        assert_eq!(reads.get(), 1);
        assert!(s.rbuf.capacity() < 1 << 20);
    }

    #[test]
    fn eof_and_io_errors_end_the_socket() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::ErrorKind::ConnectionReset.into())
            }
        }
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut s = Socket::new(Broken, Role::Server, 100, Vec::new());
        assert_eq!(s.read(), Err(WireError::Io(io::ErrorKind::ConnectionReset)));
        assert_eq!(s.send_text("x"), Err(WireError::Failed));
        assert_eq!(s.flush(), Err(WireError::Failed));
        let mut s = Socket::new(Broken, Role::Server, 100, Vec::new());
        s.send_text("x").unwrap();
        assert_eq!(s.flush(), Err(WireError::Io(io::ErrorKind::BrokenPipe)));
        assert_eq!(s.read(), Err(WireError::Failed));
    }

    #[test]
    fn handshake_both_sides_and_refusals() {
        // Client request → server → response → client.
        let (c, _) = mem(b"HTTP/1.1 101 x\r\n\r\n".to_vec());
        let err = connect(c, "h:1", "/p", 100, &mut || true).err();
        assert_eq!(err, Some(HandshakeError::Status(101)), "no accept key");
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        assert_eq!(accept_key(key), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        let request = format!(
            "GET /p?x HTTP/1.1\r\nHost: h\r\nconnection: keep-alive, Upgrade\r\nUPGRADE: WebSocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n\r\n"
        );
        let mut input = request.clone().into_bytes();
        input.extend(client_frame(true, 1, b"early"));
        let (s, _) = mem(input);
        let mut sock = accept(s, "/p", 100, &mut || true).ok().unwrap();
        let out = String::from_utf8(sock.get_ref().out.clone()).unwrap();
        assert!(out.starts_with("HTTP/1.1 101 "));
        assert!(out.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert_eq!(sock.read(), Ok(Message::Text("early".into())));
        for (req, status) in [
            (request.replace("/p?x", "/q"), "404"),
            (request.replace("GET", "POST"), "405"),
            (request.replace("Version: 13", "Version: 8"), "426"),
            (request.replace("WebSocket\r\n", "h2c\r\n"), "426"),
            (request.replace(key, "short"), "400"),
            (request.replace("HTTP/1.1", "HTTP/1.0"), "400"),
            ("\u{0}\u{1} not http\r\n\r\n".to_string(), "400"),
            (
                format!("GET /p HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(9000)),
                "431",
            ),
        ] {
            let (s, _) = mem(req.into_bytes());
            let mut out = Vec::new();
            let err = accept(Tee(s, &mut out), "/p", 100, &mut || true).err();
            assert_eq!(err, Some(HandshakeError::Refused));
            let text = String::from_utf8(out).unwrap();
            assert!(text.starts_with(&format!("HTTP/1.1 {status} ")), "{text}");
        }
        // Not HTTP (a TLS hello on the plain port): answered at once, without waiting for
        // a blank line.
        let (s, _) = mem(vec![0x16, 0x03, 0x01, 0x02, 0x00]);
        let mut out = Vec::new();
        let err = accept(Tee(s, &mut out), "/p", 100, &mut || true).err();
        assert_eq!(err, Some(HandshakeError::Refused));
        assert!(out.starts_with(b"HTTP/1.1 400 "));
        // An incomplete head is abandoned when told, not waited for.
        let (s, _) = mem(b"GET /p HTTP/1.1\r\n".to_vec());
        let mut calls = 0;
        let err = accept(s, "/p", 100, &mut || {
            calls += 1;
            calls < 3
        })
        .err();
        assert_eq!(err, Some(HandshakeError::Abandoned));
    }

    struct Tee<'a>(Mem, &'a mut Vec<u8>);
    impl Read for Tee<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }
    impl Write for Tee<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}

//! One worker connection as a state machine that an I/O thread drives (R-DEV-CHAN, R-DEV-VER):
//! the WebSocket handshake ([`super::wire`]; only [`CHANNEL_PATH`], others 404, a request that is
//! not an upgrade 4xx) or the pairing route's one HTTP exchange ([`super::http`]: its body read
//! within the same deadline, the store's part on the checker thread, one answer, then the
//! close), first-frame authentication within a deadline (the first message at most
//! [`MAX_FIRST_MESSAGE_BYTES`]), the protocol check and the device cap, then the live phase:
//! write queued frames, read what the worker sent, route results to waiting commands, ping an
//! idle worker, close a slow reader; then an orderly or a failed close. Every timer (the
//! authentication deadline, the keepalive, the slow reader, the close grace) is on the
//! gateway's clock (R-CLK).
//!
//! [`Connection::drive`] never blocks: it does what its socket allows now and says when it
//! wants to be driven again ([`Connection::due`], or as soon as its socket is ready). It must
//! never panic on network input, hold a lock across socket I/O, or log a token or a frame's
//! content; a malformed or oversized message closes only this connection, with a clear close
//! code, and after any protocol or I/O failure the socket is never parsed again (one
//! best-effort close frame, then a lingering close that discards what the worker still sends):
//!
//! | code | reason | when |
//! |---|---|---|
//! | 1008 | `AUTHENTICATION_TIMEOUT` | no authenticate frame in time |
//! | 1008 | `AUTHENTICATION_FAILED` | first frame not an authenticate with a valid token |
//! | 1008 | `UPGRADE_REQUIRED` | a browser worker without protocol 2 |
//! | 1008 | `DEVICE_UNPAIRED` | the device was unpaired or re-paired |
//! | 1013 | `CONNECTION_LIMIT` | `max_connections` devices are connected already |
//! | 1007 | `MALFORMED_FRAME` | not a JSON frame object / invalid UTF-8 |
//! | 1003 | `BINARY_FRAMES_UNSUPPORTED` | a binary message |
//! | 1009 | `MESSAGE_TOO_BIG` | over `max_message_bytes` (over 8 KiB for the first message) |
//! | 1002 | `PROTOCOL_ERROR` | a WebSocket protocol violation |
//! | 1001 | `GATEWAY_CLOSING` / `KEEPALIVE_TIMEOUT` | shutdown / silent for `idle_timeout` with a ping unanswered |
//! | 4000 | `REPLACED_BY_NEW_CONNECTION` | the same device connected again |
//! | — | (no frame: the socket is just closed) | a slow reader: over `slow_reader_bytes` unread for `slow_reader_timeout` |

use super::channel::{Shared, MAX_FIRST_MESSAGE_BYTES};
use super::frames::{self, parse_worker_frame, WorkerFrame, CHANNEL_PATH, PROTOCOL_VERSION};
use super::http::{self, PairBody, Reply, Route};
use super::hub::{Conn, Nudge};
use super::registry::{Capability, DeviceRecord};
use super::wire::{self, Message, Role, Socket, WireError};
use crate::clock::{Clock, GraceBound, Instant};
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The socket under a connection: mio's TCP stream, plain or TLS.
pub(crate) type Io = super::socket::Io<rustls::ServerConnection, mio::net::TcpStream>;

/// How long a closing connection waits for the worker's close reply (or lingers).
pub(crate) const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// How many messages (or lingering reads) one turn handles before letting other connections
/// of the same I/O thread have theirs.
const MESSAGES_PER_TURN: usize = 64;
/// One read of the HTTP head.
const HEAD_READ: usize = 2048;
/// The shortest wait of an I/O thread that has timers (none is spun on) and the step at which a
/// closing connection's grace counts down.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// "Never" on the gateway's clock: no timer.
pub(crate) const NEVER: Instant = Instant::from_origin(Duration::MAX);

/// What a connection asks of the I/O thread that drives it.
pub(crate) trait Host {
    /// A nudge that wakes this thread for this connection (for the hub).
    fn nudge(&mut self) -> Nudge;
    /// Hands an authenticate frame's token to the checker thread ([`check`]); its verdict
    /// comes back through [`Connection::checked`] and a drive.
    fn check(&mut self, token: Option<String>, protocol: Option<u64>);
    /// Hands a pairing request's body to the checker thread ([`pair`]); its answer comes back
    /// through [`Connection::checked`] and a drive.
    fn pair(&mut self, peer: IpAddr, body: Vec<u8>);
    /// Hands a live worker's `unpair` to the checker thread ([`unpair`]), which forgets the
    /// device and closes its connection through the hub.
    fn unpair(&mut self, device_id: String);
}

/// The checker's answer to an authenticate frame.
pub(crate) enum Verdict {
    /// A paired device, its authentication recorded.
    Device(DeviceRecord),
    /// Closed with this code and reason.
    Refused(u16, &'static str),
    /// The pairing route's answer.
    Replied(Reply),
}

/// The store's part of an authentication (run on the checker thread, off the I/O threads):
/// the token looked up, the protocol recorded, an out-of-date browser refused.
pub(crate) fn check(shared: &Shared, token: Option<String>, protocol: Option<u64>) -> Verdict {
    let record = match token.map(|t| shared.registry.authenticate(&t)) {
        Some(Ok(Some(record))) => record,
        Some(Err(e)) => {
            log::warn!("device authentication could not be checked: {}", e.code());
            return Verdict::Refused(1011, "INTERNAL_ERROR");
        }
        _ => {
            log::info!("device channel authentication refused");
            return Verdict::Refused(1008, "AUTHENTICATION_FAILED");
        }
    };
    if let Err(e) = shared.registry.record_authentication(&record.id, protocol) {
        log::warn!("device protocol not recorded: {}", e.code());
    }
    if record.capability == Capability::Browser && protocol.is_none_or(|p| p < PROTOCOL_VERSION) {
        log::info!("device {} refused: extension out of date", record.id);
        return Verdict::Refused(1008, "UPGRADE_REQUIRED");
    }
    Verdict::Device(record)
}

/// The store's part of a pairing request (run on the checker thread, off the I/O threads): the
/// address's failure window, the body's shape, the code redeemed (once), the device paired for
/// the code's owner. Logs codes and device ids only — never the pairing code or the token.
pub(crate) fn pair(shared: &Shared, peer: IpAddr, body: &[u8]) -> Reply {
    if let Err(retry_after) = shared.pairing.may_try(peer) {
        log::info!("device pairing refused: too many wrong codes from {peer}");
        return Reply::rate_limited(retry_after);
    }
    let body = match PairBody::parse(body) {
        Ok(body) => body,
        Err(message) => return Reply::error(400, "INVALID_INPUT", &message),
    };
    let (request, capability) = body.request();
    if let Err(e) = request.validate() {
        return Reply::error(400, "INVALID_INPUT", &e.to_string());
    }
    let Some(owner) = shared.pairing.redeem(&body.pairing_code) else {
        shared.pairing.failed(peer);
        log::info!("device pairing refused: a wrong, used or expired code from {peer}");
        return Reply::code_invalid();
    };
    match super::pairing::pair_device(
        &shared.registry,
        &shared.hub,
        &shared.leases,
        &owner,
        &request,
        Some(capability),
    ) {
        Ok(pairing) => Reply::paired(&pairing.device.id, pairing.token.expose()),
        Err(e) => {
            log::warn!("device pairing failed: {}", e.code());
            Reply::error(500, e.code(), "the device could not be paired; try again")
        }
    }
}

/// The store's part of a worker's `unpair` (run on the checker thread): the device is
/// forgotten — its token stops working — and its connection closed with 1008
/// `DEVICE_UNPAIRED`, as when the host unpairs it.
pub(crate) fn unpair(shared: &Shared, device_id: &str) {
    match shared.registry.unpair_device(device_id) {
        Ok(true) => log::info!("device {device_id} unpaired by its worker"),
        Ok(false) => {}
        Err(e) => log::warn!("device {device_id} could not be unpaired: {}", e.code()),
    }
    shared.hub.disconnect(device_id, 1008, "DEVICE_UNPAIRED");
    shared.hub.unpaired(device_id);
}

/// What a connection needs from its I/O thread after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Wait for the socket, a nudge or [`Connection::due`].
    Wait,
    /// It stopped before its socket said "would block" (its turn's budget ran out): drive it
    /// again soon, without waiting.
    More,
    /// It is closing: drive it with `tick` on every timer tick until it finishes.
    Closing,
    /// It is over: drop it (which closes the socket).
    Finished,
}

/// Which budget a connection holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Unauthenticated,
    Device,
}

/// After a close frame is written: wait for the worker's reply (an orderly close), or end our
/// side and discard what still comes (after a failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    AwaitReply,
    Linger,
}

struct Live {
    ws: Socket<Io>,
    conn: Arc<Conn>,
    last_heard: Instant,
    last_ping: Instant,
    /// Since when a ping has gone unanswered (anything heard answers it).
    unanswered: Option<Instant>,
    /// Since when the unread outgoing bytes have been above `slow_reader_bytes`.
    over_since: Option<Instant>,
    /// For a worker that asked for `status` frames: the end of the control hold its last frame
    /// announced (`None`: not controlled) and the autopilot line it showed. `None` for a worker
    /// that did not ask.
    status: Option<(Option<Instant>, Option<String>)>,
    /// The worker sent `unpair` (handed to the checker once).
    unpairing: bool,
}

enum Phase {
    /// Reading the HTTP head.
    Head {
        io: Io,
        head: Vec<u8>,
        searched: usize,
    },
    /// Writing the 101 answer (then `upgrade` holds the bytes read past the head) or a refusal
    /// (then `None`: linger).
    Answer {
        io: Io,
        out: Vec<u8>,
        at: usize,
        upgrade: Option<Vec<u8>>,
    },
    /// Reading a pairing request's body (`want` bytes), for the CORS `origin`.
    Body {
        io: Io,
        body: Vec<u8>,
        want: usize,
        origin: Option<String>,
    },
    /// The checker thread pairs (nothing more is read meanwhile).
    Pairing {
        io: Io,
        origin: Option<String>,
        reply: Option<Reply>,
    },
    /// Waiting for the authenticate frame.
    Auth {
        ws: Socket<Io>,
    },
    /// The checker thread looks the token up (nothing more is read meanwhile).
    Checking {
        ws: Socket<Io>,
        verdict: Option<Verdict>,
    },
    Live(Box<Live>),
    /// A close frame is queued (or was received and answered).
    Closing {
        ws: Socket<Io>,
        ending: Ending,
        bound: GraceBound,
    },
    /// Our side is shut; discarding what the worker still sends.
    Linger {
        io: Io,
        bound: GraceBound,
    },
    Done,
}

/// One accepted connection, from its handshake to its close.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    peer: IpAddr,
    phase: Phase,
    counted: Counted,
    /// The handshake and the authenticate frame must be done by then.
    auth_deadline: Instant,
    due: Instant,
    /// The authenticate frame asked for `status` frames.
    wants_status: bool,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Phase::Live(live) = std::mem::replace(&mut self.phase, Phase::Done) {
            end_live(&self.shared, &live.conn);
        }
        match self.counted {
            Counted::Unauthenticated => self.shared.release(self.peer),
            Counted::Device => self.shared.release_device_slot(),
        }
    }
}

fn end_live(shared: &Shared, conn: &Arc<Conn>) {
    conn.shut();
    shared.hub.unregister(conn);
    log::info!("device {} disconnected", conn.device_id());
}

fn clock(shared: &Shared) -> &dyn Clock {
    &**shared.hub.clock()
}

impl Connection {
    /// A connection for an accepted socket whose unauthenticated slot (for `peer`) the caller
    /// took with [`Shared::admit`]; the slot is given back when the connection is dropped.
    /// `None` (slot given back) when TLS cannot be set up.
    pub(crate) fn new(
        shared: Arc<Shared>,
        stream: mio::net::TcpStream,
        peer: IpAddr,
    ) -> Option<Connection> {
        let _ = stream.set_nodelay(true);
        let now = clock(&shared).now();
        let auth_deadline = now + shared.options.auth_timeout;
        let mut connection = Connection {
            shared,
            peer,
            phase: Phase::Done,
            counted: Counted::Unauthenticated,
            auth_deadline,
            due: auth_deadline,
            wants_status: false,
        };
        let io = match &connection.shared.options.tls {
            None => Io::Plain(stream),
            Some(tls) => match rustls::ServerConnection::new(tls.config()) {
                Ok(conn) => Io::Tls(Box::new(rustls::StreamOwned::new(conn, stream))),
                Err(_) => return None,
            },
        };
        connection.phase = Phase::Head {
            io,
            head: Vec::new(),
            searched: 0,
        };
        Some(connection)
    }

    /// When the connection wants to be driven even if its socket says nothing ([`NEVER`]: no
    /// timer).
    pub(crate) fn due(&self) -> Instant {
        self.due
    }

    /// The TCP stream, to register it with the I/O thread's poll.
    pub(crate) fn tcp_mut(&mut self) -> Option<&mut mio::net::TcpStream> {
        let io = match &mut self.phase {
            Phase::Head { io, .. }
            | Phase::Answer { io, .. }
            | Phase::Body { io, .. }
            | Phase::Pairing { io, .. }
            | Phase::Linger { io, .. } => io,
            Phase::Auth { ws } | Phase::Checking { ws, .. } | Phase::Closing { ws, .. } => {
                ws.stream_mut()
            }
            Phase::Live(live) => live.ws.stream_mut(),
            Phase::Done => return None,
        };
        Some(match io {
            Io::Plain(s) => s,
            Io::Tls(s) => &mut s.sock,
        })
    }

    /// Does what the socket allows now. `tick`: a timer tick for a closing connection (its
    /// grace counts down on these).
    pub(crate) fn drive(&mut self, tick: bool, host: &mut dyn Host) -> Turn {
        let shared = Arc::clone(&self.shared);
        loop {
            let now = clock(&shared).now();
            let phase = std::mem::replace(&mut self.phase, Phase::Done);
            let (next, flow) = match phase {
                Phase::Head { io, head, searched } => self.head(now, io, head, searched),
                Phase::Answer {
                    io,
                    out,
                    at,
                    upgrade,
                } => self.answer(now, io, out, at, upgrade),
                Phase::Body {
                    io,
                    body,
                    want,
                    origin,
                } => self.body(now, io, body, want, origin, host),
                Phase::Pairing { io, origin, reply } => self.pairing(now, io, origin, reply),
                Phase::Auth { ws } => self.auth(now, ws, host),
                Phase::Checking { ws, verdict } => self.checking(ws, verdict, host),
                Phase::Live(live) => self.live(now, live, host),
                Phase::Closing { ws, ending, bound } => closing(&shared, tick, ws, ending, bound),
                Phase::Linger { io, bound } => linger(&shared, tick, io, bound),
                Phase::Done => (Phase::Done, Flow::Finished),
            };
            self.phase = next;
            match flow {
                Flow::Again => continue,
                Flow::Wait => return Turn::Wait,
                Flow::More => return Turn::More,
                Flow::Finished => {
                    self.phase = Phase::Done;
                    return Turn::Finished;
                }
                Flow::Closing => {
                    self.due = NEVER;
                    return Turn::Closing;
                }
            }
        }
    }

    fn head(&mut self, now: Instant, mut io: Io, mut head: Vec<u8>, mut searched: usize) -> Step {
        if self.shared.stopping.load(Ordering::Acquire) || now >= self.auth_deadline {
            // Abandoned: nothing was promised to this socket.
            return (Phase::Done, Flow::Finished);
        }
        let mut chunk = [0u8; HEAD_READ];
        loop {
            match io.read(&mut chunk) {
                Ok(0) => return (Phase::Done, Flow::Finished),
                Ok(n) => {
                    head.extend_from_slice(&chunk[..n.min(HEAD_READ)]);
                    let answer = match wire::head_end(&head, &mut searched) {
                        Ok(None) => continue,
                        Ok(Some(end)) => {
                            let rest = head.split_off(end);
                            match http::route(&head, CHANNEL_PATH) {
                                Route::Upgrade(response) => (response, Some(rest)),
                                Route::Refuse(status) => (wire::refusal(status), None),
                                Route::Reply(reply, origin) => {
                                    return self.reply(now, io, &reply, origin.as_deref())
                                }
                                Route::Body { length, origin } => {
                                    let mut body = rest;
                                    // Bytes past the announced length are not the body.
                                    body.truncate(length);
                                    let phase = Phase::Body {
                                        io,
                                        body,
                                        want: length,
                                        origin,
                                    };
                                    return (phase, Flow::Again);
                                }
                            }
                        }
                        Err(status) => (wire::refusal(status), None),
                    };
                    let phase = Phase::Answer {
                        io,
                        out: answer.0.into_bytes(),
                        at: 0,
                        upgrade: answer.1,
                    };
                    return (phase, Flow::Again);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if wire::is_would_block(&e) => {
                    self.due = self.auth_deadline;
                    return (Phase::Head { io, head, searched }, Flow::Wait);
                }
                Err(_) => return (Phase::Done, Flow::Finished),
            }
        }
    }

    fn answer(
        &mut self,
        now: Instant,
        mut io: Io,
        out: Vec<u8>,
        mut at: usize,
        upgrade: Option<Vec<u8>>,
    ) -> Step {
        if self.shared.stopping.load(Ordering::Acquire) || now >= self.auth_deadline {
            return (Phase::Done, Flow::Finished);
        }
        let blocked = loop {
            if at >= out.len() {
                match io.flush() {
                    Ok(()) => break false,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if wire::is_would_block(&e) => break true,
                    Err(_) => return (Phase::Done, Flow::Finished),
                }
                continue;
            }
            match io.write(&out[at..]) {
                Ok(0) => return (Phase::Done, Flow::Finished),
                Ok(n) => at += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if wire::is_would_block(&e) => break true,
                Err(_) => return (Phase::Done, Flow::Finished),
            }
        };
        if blocked {
            self.due = self.auth_deadline;
            let phase = Phase::Answer {
                io,
                out,
                at,
                upgrade,
            };
            return (phase, Flow::Wait);
        }
        match upgrade {
            Some(rest) => {
                let max = self.shared.options.max_message_bytes;
                let ws = Socket::new(io, Role::Server, max.min(MAX_FIRST_MESSAGE_BYTES), rest);
                (Phase::Auth { ws }, Flow::Again)
            }
            None => start_linger(&self.shared, io),
        }
    }

    /// Answers the pairing route with `reply`, then closes. The answer gets its own short
    /// deadline (a 408 is sent when the request's deadline has just passed).
    fn reply(&mut self, now: Instant, io: Io, reply: &Reply, origin: Option<&str>) -> Step {
        self.auth_deadline = self.auth_deadline.max(now + CLOSE_GRACE);
        let phase = Phase::Answer {
            io,
            out: http::response(reply, origin).into_bytes(),
            at: 0,
            upgrade: None,
        };
        (phase, Flow::Again)
    }

    fn body(
        &mut self,
        now: Instant,
        mut io: Io,
        mut body: Vec<u8>,
        want: usize,
        origin: Option<String>,
        host: &mut dyn Host,
    ) -> Step {
        if self.shared.stopping.load(Ordering::Acquire) {
            return (Phase::Done, Flow::Finished);
        }
        if now >= self.auth_deadline {
            // A slow or lying client (a Content-Length above what it sends).
            return self.reply(now, io, &Reply::timed_out(), origin.as_deref());
        }
        let mut chunk = [0u8; HEAD_READ];
        while body.len() < want {
            let room = (want - body.len()).min(HEAD_READ);
            match io.read(&mut chunk[..room]) {
                Ok(0) => return (Phase::Done, Flow::Finished),
                Ok(n) => body.extend_from_slice(&chunk[..n.min(room)]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if wire::is_would_block(&e) => {
                    self.due = self.auth_deadline;
                    let phase = Phase::Body {
                        io,
                        body,
                        want,
                        origin,
                    };
                    return (phase, Flow::Wait);
                }
                Err(_) => return (Phase::Done, Flow::Finished),
            }
        }
        // The store's part runs on the checker thread, never on this I/O thread.
        host.pair(self.peer, body);
        self.due = NEVER;
        let phase = Phase::Pairing {
            io,
            origin,
            reply: None,
        };
        (phase, Flow::Wait)
    }

    fn pairing(
        &mut self,
        now: Instant,
        io: Io,
        origin: Option<String>,
        reply: Option<Reply>,
    ) -> Step {
        if self.shared.stopping.load(Ordering::Acquire) {
            return (Phase::Done, Flow::Finished);
        }
        match reply {
            None => (Phase::Pairing { io, origin, reply }, Flow::Wait),
            Some(reply) => self.reply(now, io, &reply, origin.as_deref()),
        }
    }

    fn auth(&mut self, now: Instant, mut ws: Socket<Io>, host: &mut dyn Host) -> Step {
        let shared = Arc::clone(&self.shared);
        if shared.stopping.load(Ordering::Acquire) {
            return close(&shared, ws, Some((1001, "GATEWAY_CLOSING")));
        }
        if now >= self.auth_deadline {
            return close(&shared, ws, Some((1008, "AUTHENTICATION_TIMEOUT")));
        }
        let (token, protocol) = loop {
            let refusal = match ws.read() {
                Ok(Message::Text(text)) => match parse_worker_frame(&text) {
                    Ok(WorkerFrame::Authenticate {
                        token,
                        protocol,
                        status,
                    }) => {
                        self.wants_status = status;
                        break (token, protocol);
                    }
                    Ok(_) => (1008, "AUTHENTICATION_FAILED"),
                    Err(_) => (1007, "MALFORMED_FRAME"),
                },
                Ok(Message::Binary) => (1003, "BINARY_FRAMES_UNSUPPORTED"),
                Ok(Message::Close(_)) => return close(&shared, ws, None),
                Ok(Message::Ping | Message::Pong) => continue,
                Err(WireError::WouldBlock) => {
                    if ws.pending() {
                        if let Err(e) = ws.flush() {
                            return fail(&shared, ws, e.close());
                        }
                    }
                    self.due = self.auth_deadline;
                    return (Phase::Auth { ws }, Flow::Wait);
                }
                Err(e) => return fail(&shared, ws, e.close()),
            };
            return close(&shared, ws, Some(refusal));
        };
        // The store's part (a lookup and a durable write) runs on the checker thread, never on
        // this I/O thread: the other connections of the thread are not held up by it.
        host.check(token, protocol);
        self.due = NEVER;
        (Phase::Checking { ws, verdict: None }, Flow::Wait)
    }

    /// Takes the checker's verdict (ignored unless the connection is waiting for one).
    pub(crate) fn checked(&mut self, verdict: Verdict) {
        match (&mut self.phase, verdict) {
            (Phase::Pairing { reply, .. }, Verdict::Replied(answer)) => *reply = Some(answer),
            (Phase::Checking { verdict: slot, .. }, verdict) => *slot = Some(verdict),
            _ => {}
        }
    }

    fn checking(
        &mut self,
        mut ws: Socket<Io>,
        verdict: Option<Verdict>,
        host: &mut dyn Host,
    ) -> Step {
        let shared = Arc::clone(&self.shared);
        if shared.stopping.load(Ordering::Acquire) {
            return close(&shared, ws, Some((1001, "GATEWAY_CLOSING")));
        }
        let record = match verdict {
            None => return (Phase::Checking { ws, verdict }, Flow::Wait),
            Some(Verdict::Refused(code, reason)) => {
                return close(&shared, ws, Some((code, reason)))
            }
            Some(Verdict::Replied(_)) => return close(&shared, ws, Some((1011, "INTERNAL_ERROR"))),
            Some(Verdict::Device(record)) => record,
        };
        let now = clock(&shared).now();
        if !shared.take_device_slot(shared.hub.online(&record.id)) {
            log::warn!(
                "device channel at its connection limit; device {} refused",
                record.id
            );
            return close(&shared, ws, Some((1013, "CONNECTION_LIMIT")));
        }
        shared.release(self.peer);
        self.counted = Counted::Device;
        ws.set_max_message(shared.options.max_message_bytes);
        let conn = shared.hub.register(&record.id, host.nudge());
        shared.hub.announce(&record);
        log::info!("device {} connected", record.id);
        let _ = ws.send_text(&frames::ready(conn.device_id()));
        let status = if self.wants_status {
            shared.hub.want_status(&conn);
            // The first status right after ready; later ones when the lease changes.
            let control = shared.leases.control_until(conn.device_id());
            let line = shared.hub.progress_line(conn.device_id());
            let _ = ws.send_text(&status_frame(control, line.as_deref()));
            Some((control.map(|(end, _)| end), line))
        } else {
            None
        };
        let live = Live {
            ws,
            conn,
            last_heard: now,
            last_ping: now,
            unanswered: None,
            over_since: None,
            status,
            unpairing: false,
        };
        (Phase::Live(Box::new(live)), Flow::Again)
    }

    fn live(&mut self, now: Instant, mut live: Box<Live>, host: &mut dyn Host) -> Step {
        let shared = Arc::clone(&self.shared);
        let options = &shared.options;
        let ending = |live: Box<Live>| {
            end_live(&shared, &live.conn);
            live.ws
        };
        if shared.stopping.load(Ordering::Acquire) {
            return close(&shared, ending(live), Some((1001, "GATEWAY_CLOSING")));
        }
        if let Some(code) = live.conn.close_request() {
            return close(&shared, ending(live), Some(code));
        }
        // The queued commands are taken before the status is read and written after it: a
        // step's autopilot line, set before its action was queued, reaches the worker first.
        let queued = live.conn.drain_outgoing();
        if let Some((announced, shown)) = &live.status {
            // The lease as it is now: a frame when the hold began, ended or moved its end
            // (a renewal, a take-back, a release, an expiry at the announced end), or when an
            // autopilot run's line changed.
            let control = shared.leases.control_until(live.conn.device_id());
            let end = control.map(|(end, _)| end);
            let line = shared.hub.progress_line(live.conn.device_id());
            if end != *announced || line != *shown {
                let frame = status_frame(control, line.as_deref());
                live.status = Some((end, line));
                if let Err(e) = live.ws.send_text(&frame) {
                    return fail(&shared, ending(live), e.close());
                }
            }
        }
        for item in queued {
            item.mark_sent();
            if let Err(e) = live.ws.send_text(&item.text) {
                return fail(&shared, ending(live), e.close());
            }
        }
        // Everything the worker sent so far, before any timer is judged — unless it does not
        // read what it is sent: then it is not read either, until it catches up.
        let mut more = false;
        if live.ws.backlog() <= options.slow_reader_bytes {
            let mut budget = MESSAGES_PER_TURN;
            loop {
                if budget == 0 {
                    more = true;
                    break;
                }
                budget -= 1;
                let message = match live.ws.read() {
                    Ok(message) => message,
                    Err(WireError::WouldBlock) => break,
                    Err(e) => return fail(&shared, ending(live), e.close()),
                };
                live.last_heard = now;
                live.unanswered = None;
                match message {
                    Message::Text(text) => match parse_worker_frame(&text) {
                        Ok(WorkerFrame::Result { id, outcome }) => live.conn.complete(&id, outcome),
                        Ok(WorkerFrame::Unpair) if !live.unpairing => {
                            // Once per connection; the hub closes it when the store is done.
                            live.unpairing = true;
                            host.unpair(live.conn.device_id().to_string());
                        }
                        Ok(WorkerFrame::Ping) => {
                            if let Err(e) = live.ws.send_text(&frames::pong()) {
                                return fail(&shared, ending(live), e.close());
                            }
                        }
                        Ok(_) => {}
                        Err(_) => {
                            return close(&shared, ending(live), Some((1007, "MALFORMED_FRAME")))
                        }
                    },
                    Message::Binary => {
                        let code = (1003, "BINARY_FRAMES_UNSUPPORTED");
                        return close(&shared, ending(live), Some(code));
                    }
                    // The reply is queued already.
                    Message::Close(_) => return close(&shared, ending(live), None),
                    Message::Ping | Message::Pong => {}
                }
            }
        }
        // Keepalive on the gateway's clock (R-CLK): a ping every `ping_interval`; the worker
        // is dropped once it said nothing for `idle_timeout` *and* left unanswered a ping sent
        // at an earlier instant of that clock. The second condition keeps a live worker
        // connected when a manual clock jumps past `idle_timeout` in one step (it is probed
        // first, at the new instant, and answers).
        let silent = now - live.last_heard >= options.idle_timeout;
        if silent && live.unanswered.is_some_and(|since| since < now) {
            return close(&shared, ending(live), Some((1001, "KEEPALIVE_TIMEOUT")));
        }
        if (silent && live.unanswered.is_none()) || now - live.last_ping >= options.ping_interval {
            live.last_ping = now;
            live.unanswered.get_or_insert(now);
            if let Err(e) = live.ws.send_ping() {
                return fail(&shared, ending(live), e.close());
            }
        }
        if live.ws.pending() {
            if let Err(e) = live.ws.flush() {
                return fail(&shared, ending(live), e.close());
            }
        }
        if live.ws.backlog() > options.slow_reader_bytes {
            let since = *live.over_since.get_or_insert(now);
            if now - since >= options.slow_reader_timeout {
                log::warn!(
                    "device {} closed: it left its commands unread too long",
                    live.conn.device_id()
                );
                return fail(&shared, ending(live), None);
            }
        } else {
            live.over_since = None;
        }
        let mut due =
            (live.last_ping + options.ping_interval).min(live.last_heard + options.idle_timeout);
        if let Some(since) = live.over_since {
            due = due.min(since + options.slow_reader_timeout);
        }
        if let Some((Some(end), _)) = live.status {
            // Re-read the lease at the announced end: an unrenewed hold expires then.
            due = due.min(end);
        }
        // A timer that is due already (a ping unanswered at this very instant) waits for the
        // clock to move on, instead of spinning.
        self.due = due.max(now + Duration::from_nanos(1));
        (
            Phase::Live(live),
            if more { Flow::More } else { Flow::Wait },
        )
    }
}

/// The `status` frame for a control hold (its end on the gateway's clock and in Unix ms) or
/// none, with the autopilot line a run shows on the device (`null` when none).
fn status_frame(control: Option<(Instant, i64)>, autopilot: Option<&str>) -> String {
    frames::status(control.is_some(), control.map(|(_, ms)| ms), autopilot)
}

/// What a phase does next.
enum Flow {
    /// Run the (new) phase now.
    Again,
    Wait,
    More,
    Closing,
    Finished,
}

type Step = (Phase, Flow);

/// An orderly close: `code` is sent (`None`: a close frame was received and its reply is
/// queued), then the worker's reply awaited within [`CLOSE_GRACE`].
fn close(shared: &Shared, mut ws: Socket<Io>, code: Option<(u16, &'static str)>) -> Step {
    if let Some((code, reason)) = code {
        if ws.send_close(code, reason).is_err() {
            return start_linger(shared, ws.into_inner());
        }
    }
    let bound = GraceBound::new(clock(shared), CLOSE_GRACE);
    let phase = Phase::Closing {
        ws,
        ending: Ending::AwaitReply,
        bound,
    };
    (phase, Flow::Again)
}

/// The close after a failure: one best-effort close frame with `code` if the socket can still
/// be written, then the lingering close. Never parses another byte.
fn fail(shared: &Shared, mut ws: Socket<Io>, code: Option<(u16, &'static str)>) -> Step {
    if ws.is_broken() {
        return start_linger(shared, ws.into_inner());
    }
    if let Some((code, reason)) = code {
        let _ = ws.send_close(code, reason);
    }
    let bound = GraceBound::new(clock(shared), CLOSE_GRACE);
    let phase = Phase::Closing {
        ws,
        ending: Ending::Linger,
        bound,
    };
    (phase, Flow::Again)
}

fn start_linger(shared: &Shared, io: Io) -> Step {
    let _ = io.tcp().shutdown(Shutdown::Write);
    let bound = GraceBound::new(clock(shared), CLOSE_GRACE);
    (Phase::Linger { io, bound }, Flow::Again)
}

/// A turn of a closing connection: the grace counts down on ticks (and on the clock).
fn over(shared: &Shared, tick: bool, bound: &mut GraceBound) -> bool {
    let clock = clock(shared);
    if tick {
        bound.next(clock, TICK).is_none()
    } else {
        // Only the clock's own instant: a socket event spends no grace.
        bound.next(clock, Duration::from_nanos(1)).is_none()
    }
}

fn closing(
    shared: &Shared,
    tick: bool,
    mut ws: Socket<Io>,
    ending: Ending,
    mut bound: GraceBound,
) -> Step {
    if over(shared, tick, &mut bound) {
        return (Phase::Done, Flow::Finished);
    }
    match ws.flush() {
        Ok(true) => {}
        Ok(false) => {
            let phase = Phase::Closing { ws, ending, bound };
            return (phase, Flow::Closing);
        }
        Err(_) if ending == Ending::Linger => return start_linger(shared, ws.into_inner()),
        Err(_) => return (Phase::Done, Flow::Finished),
    }
    if ending == Ending::Linger {
        return start_linger(shared, ws.into_inner());
    }
    for _ in 0..MESSAGES_PER_TURN {
        match ws.read() {
            Ok(Message::Close(_)) => {
                let _ = ws.flush();
                return (Phase::Done, Flow::Finished);
            }
            Ok(_) => {}
            Err(WireError::WouldBlock) => {
                let phase = Phase::Closing { ws, ending, bound };
                return (phase, Flow::Closing);
            }
            Err(_) => return (Phase::Done, Flow::Finished),
        }
    }
    (Phase::Closing { ws, ending, bound }, Flow::Closing)
}

fn linger(shared: &Shared, tick: bool, io: Io, mut bound: GraceBound) -> Step {
    if over(shared, tick, &mut bound) {
        return (Phase::Done, Flow::Finished);
    }
    let mut sink = [0u8; 16 * 1024];
    for _ in 0..MESSAGES_PER_TURN {
        match io.tcp().read(&mut sink) {
            Ok(0) => return (Phase::Done, Flow::Finished),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if wire::is_would_block(&e) => {
                return (Phase::Linger { io, bound }, Flow::Closing)
            }
            Err(_) => return (Phase::Done, Flow::Finished),
        }
    }
    (Phase::Linger { io, bound }, Flow::Closing)
}

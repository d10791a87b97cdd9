//! One worker connection, on its own thread (R-DEV-CHAN, R-DEV-VER): the WebSocket handshake
//! ([`super::wire`]; only [`CHANNEL_PATH`], others 404, a request that is not an upgrade 4xx), first-frame authentication within a deadline, the
//! protocol check, then a loop that sleeps until the worker sends something or a frame is
//! queued ([`super::wake`]), writes queued frames, pings an idle worker and routes results to
//! waiting commands. Every timer (the authentication deadline, the keepalive, the close grace)
//! is on the gateway's clock (R-CLK).
//!
//! This thread alone touches its socket. It must never panic on network input, wait without a
//! deadline, or log a token or a frame's content; a malformed or oversized message closes only
//! this connection, with a clear close code, and after any protocol or I/O failure the socket is
//! never read again (one best-effort close frame, then a lingering close that discards what the
//! worker still sends):
//!
//! | code | reason | when |
//! |---|---|---|
//! | 1008 | `AUTHENTICATION_TIMEOUT` | no authenticate frame in time |
//! | 1008 | `AUTHENTICATION_FAILED` | first frame not an authenticate with a valid token |
//! | 1008 | `UPGRADE_REQUIRED` | a browser worker without protocol 2 |
//! | 1008 | `DEVICE_UNPAIRED` | the device was unpaired or re-paired |
//! | 1007 | `MALFORMED_FRAME` | not a JSON frame object / invalid UTF-8 |
//! | 1003 | `BINARY_FRAMES_UNSUPPORTED` | a binary message |
//! | 1009 | `MESSAGE_TOO_BIG` | over `max_message_bytes` |
//! | 1002 | `PROTOCOL_ERROR` | a WebSocket protocol violation |
//! | 1001 | `GATEWAY_CLOSING` / `KEEPALIVE_TIMEOUT` | shutdown / silent for `idle_timeout` with a ping unanswered |
//! | 4000 | `REPLACED_BY_NEW_CONNECTION` | the same device connected again |

use super::channel::Shared;
use super::frames::{self, parse_worker_frame, WorkerFrame, CHANNEL_PATH, PROTOCOL_VERSION};
use super::registry::Capability;
use super::wire::{self, Message, WireError};
use crate::clock::Instant;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a read waits before the loop checks its queue, timers and stop flag.
const POLL: Duration = Duration::from_millis(10);
/// How long a blocked write may take before the connection is given up.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest sleep between two looks at the stop flag when nothing else wakes the thread.
const MAX_WAIT: Duration = Duration::from_millis(500);
/// How long a closing connection waits for the worker's close reply.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

type Io = super::socket::Io<rustls::ServerConnection>;

/// Serves one accepted TCP connection to the end.
pub(crate) fn serve(stream: TcpStream, shared: &Shared) {
    let options = &shared.options;
    // Every timer of the connection is on the gateway's clock (R-CLK).
    let clock = &**shared.hub.clock();
    let auth_deadline = clock.now() + options.auth_timeout;
    let _ = stream.set_nodelay(true);
    // A second handle on the same socket, for `poll`, switching it to non-blocking and the
    // lingering close.
    let Ok(tcp) = stream.try_clone() else {
        return;
    };
    if stream.set_read_timeout(Some(POLL)).is_err()
        || stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_err()
    {
        return;
    }
    let io = match &options.tls {
        None => Io::Plain(stream),
        Some(tls) => match rustls::ServerConnection::new(tls.config()) {
            Ok(conn) => Io::Tls(Box::new(rustls::StreamOwned::new(conn, stream))),
            Err(_) => return,
        },
    };
    let mut keep_going = || clock.now() < auth_deadline && !shared.stopping.load(Ordering::Acquire);
    let mut ws = match wire::accept(io, CHANNEL_PATH, options.max_message_bytes, &mut keep_going) {
        Ok(ws) => ws,
        Err(wire::HandshakeError::Refused) => {
            wire::linger(&tcp, &mut crate::clock::Grace::new(clock, CLOSE_GRACE));
            return;
        }
        Err(_) => return,
    };

    // First frame: authenticate (R-DEV-CHAN), protocol check (R-DEV-VER).
    let (token, protocol) = loop {
        if clock.now() >= auth_deadline {
            ws.close(
                &tcp,
                Some((1008, "AUTHENTICATION_TIMEOUT")),
                CLOSE_GRACE,
                clock,
            );
            return;
        }
        if shared.stopping.load(Ordering::Acquire) {
            ws.close(&tcp, Some((1001, "GATEWAY_CLOSING")), CLOSE_GRACE, clock);
            return;
        }
        let refusal = match ws.read() {
            Ok(Message::Text(text)) => match parse_worker_frame(&text) {
                Ok(WorkerFrame::Authenticate { token, protocol }) => break (token, protocol),
                Ok(_) => (1008, "AUTHENTICATION_FAILED"),
                Err(_) => (1007, "MALFORMED_FRAME"),
            },
            Ok(Message::Binary) => (1003, "BINARY_FRAMES_UNSUPPORTED"),
            Ok(Message::Close(_)) => {
                ws.close(&tcp, None, CLOSE_GRACE, clock);
                return;
            }
            Ok(Message::Ping | Message::Pong) => {
                let _ = ws.flush();
                continue;
            }
            Err(WireError::WouldBlock) => continue,
            Err(e) => {
                ws.fail_close(&tcp, e.close(), CLOSE_GRACE, clock);
                return;
            }
        };
        ws.close(&tcp, Some(refusal), CLOSE_GRACE, clock);
        return;
    };
    let record = match token.map(|t| shared.registry.authenticate(&t)) {
        Some(Ok(Some(record))) => record,
        Some(Err(e)) => {
            log::warn!("device authentication could not be checked: {}", e.code());
            ws.close(&tcp, Some((1011, "INTERNAL_ERROR")), CLOSE_GRACE, clock);
            return;
        }
        _ => {
            log::info!("device channel authentication refused");
            ws.close(
                &tcp,
                Some((1008, "AUTHENTICATION_FAILED")),
                CLOSE_GRACE,
                clock,
            );
            return;
        }
    };
    if let Err(e) = shared.registry.record_authentication(&record.id, protocol) {
        log::warn!("device protocol not recorded: {}", e.code());
    }
    if record.capability == Capability::Browser && protocol.is_none_or(|p| p < PROTOCOL_VERSION) {
        log::info!("device {} refused: extension out of date", record.id);
        ws.close(&tcp, Some((1008, "UPGRADE_REQUIRED")), CLOSE_GRACE, clock);
        return;
    }

    let conn = shared.hub.register(&record.id);
    log::info!("device {} connected", record.id);
    // From here on the socket is non-blocking and the thread sleeps in `Wake::wait` until the
    // worker sends something, a frame is queued for it, or a timer is due.
    if tcp.set_nonblocking(true).is_err() {
        conn.shut();
        shared.hub.unregister(&conn);
        return;
    }
    // `Err` ends the connection: `Some(code)` is sent on a healthy socket, a failure closes
    // with `fail_close` (its own code, if any, and never another read).
    enum End {
        Close(u16, &'static str),
        Peer,
        Failed(WireError),
    }
    let _ = ws.send_text(&frames::ready(conn.device_id()));
    // Keepalive on the gateway's clock (R-CLK): a ping every `ping_interval`; the worker is
    // dropped once it said nothing for `idle_timeout` *and* left unanswered a ping sent at an
    // earlier instant of that clock. The second condition keeps a live worker connected when a
    // manual clock jumps past `idle_timeout` in one step (it is probed first, at the new
    // instant, and answers); on real time it changes nothing, a silent worker having been
    // pinged before (or, with `ping_interval` ≥ `idle_timeout`, being probed one poll before).
    let mut last_heard = clock.now();
    let mut last_ping = clock.now();
    // Since when a ping has gone unanswered (anything heard answers it).
    let mut unanswered: Option<Instant> = None;
    let end: End = 'conn: loop {
        if shared.stopping.load(Ordering::Acquire) {
            break End::Close(1001, "GATEWAY_CLOSING");
        }
        if let Some((code, reason)) = conn.close_request() {
            break End::Close(code, reason);
        }
        for item in conn.drain_outgoing() {
            item.mark_sent();
            if let Err(e) = ws.send_text(&item.text) {
                break 'conn End::Failed(e);
            }
        }
        // Everything the worker sent so far, before any timer is judged.
        loop {
            match ws.read() {
                Ok(message) => {
                    last_heard = clock.now();
                    unanswered = None;
                    match message {
                        Message::Text(text) => match parse_worker_frame(&text) {
                            Ok(WorkerFrame::Result { id, outcome }) => conn.complete(&id, outcome),
                            Ok(WorkerFrame::Ping) => {
                                conn.queue(frames::pong());
                                continue 'conn;
                            }
                            Ok(_) => {}
                            Err(_) => break 'conn End::Close(1007, "MALFORMED_FRAME"),
                        },
                        Message::Binary => {
                            break 'conn End::Close(1003, "BINARY_FRAMES_UNSUPPORTED")
                        }
                        Message::Close(_) => break 'conn End::Peer,
                        Message::Ping => continue 'conn,
                        Message::Pong => {}
                    }
                }
                Err(WireError::WouldBlock) => break,
                Err(e) => break 'conn End::Failed(e),
            }
        }
        let now = clock.now();
        let silent = now - last_heard >= options.idle_timeout;
        if silent && unanswered.is_some_and(|since| since < now) {
            break End::Close(1001, "KEEPALIVE_TIMEOUT");
        }
        if (silent && unanswered.is_none()) || now - last_ping >= options.ping_interval {
            last_ping = now;
            unanswered.get_or_insert(now);
            if let Err(e) = ws.send_ping() {
                break End::Failed(e);
            }
        }
        if ws.pending() {
            if let Err(e) = ws.flush() {
                break End::Failed(e);
            }
        }
        let now = clock.now();
        let next_ping = options.ping_interval.saturating_sub(now - last_ping);
        let idle = options.idle_timeout.saturating_sub(now - last_heard);
        let wait = next_ping.min(idle).min(MAX_WAIT).max(POLL);
        conn.wait(&tcp, ws.pending(), wait);
    };
    conn.shut();
    shared.hub.unregister(&conn);
    // Closing waits (bounded) for the worker's reply with ordinary timed reads.
    match end {
        End::Close(code, reason) => ws.close(&tcp, Some((code, reason)), CLOSE_GRACE, clock),
        // The close reply is already queued.
        End::Peer => ws.close(&tcp, None, CLOSE_GRACE, clock),
        End::Failed(e) => ws.fail_close(&tcp, e.close(), CLOSE_GRACE, clock),
    }
    log::info!("device {} disconnected", conn.device_id());
}

//! One worker connection, on its own thread (R-DEV-CHAN, R-DEV-VER): the WebSocket handshake
//! (only [`CHANNEL_PATH`], others 404), first-frame authentication within a deadline, the
//! protocol check, then a loop that sleeps until the worker sends something or a frame is
//! queued ([`super::wake`]), writes queued frames, pings an idle worker and routes results to
//! waiting commands.
//!
//! This thread alone touches its socket. It must never panic on network input, wait without a
//! deadline, or log a token or a frame's content; a malformed or oversized message closes only
//! this connection, with a clear close code:
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
//! | 1001 | `GATEWAY_CLOSING` / `KEEPALIVE_TIMEOUT` | shutdown / silent worker |
//! | 4000 | `REPLACED_BY_NEW_CONNECTION` | the same device connected again |

use super::frames::{self, parse_worker_frame, WorkerFrame, CHANNEL_PATH, PROTOCOL_VERSION};
use super::registry::Capability;
use super::server::Shared;
use super::socket::would_block;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::frame::CloseFrame;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, Utf8Bytes, WebSocket};

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
    let auth_deadline = Instant::now() + options.auth_timeout;
    let _ = stream.set_nodelay(true);
    // A second handle on the same socket, for `poll` and for switching it to non-blocking.
    let Ok(poll_handle) = stream.try_clone() else {
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
    let config = WebSocketConfig::default()
        .max_message_size(Some(options.max_message_bytes))
        .max_frame_size(Some(options.max_message_bytes))
        .max_write_buffer_size(options.max_message_bytes.saturating_mul(4).max(1 << 20));
    #[allow(clippy::result_large_err)] // reason: the signature is tungstenite's `Callback`
    let callback = |request: &Request, response: Response| {
        if request.uri().path() == CHANNEL_PATH {
            Ok(response)
        } else {
            let mut refusal = ErrorResponse::new(Some("not found".to_string()));
            *refusal.status_mut() = tungstenite::http::StatusCode::NOT_FOUND;
            Err(refusal)
        }
    };
    let mut attempt = tungstenite::accept_hdr_with_config(io, callback, Some(config));
    let mut ws = loop {
        match attempt {
            Ok(ws) => break ws,
            Err(HandshakeError::Interrupted(mid)) => {
                if Instant::now() >= auth_deadline || shared.stopping.load(Ordering::Acquire) {
                    return;
                }
                attempt = mid.handshake();
            }
            Err(HandshakeError::Failure(_)) => return,
        }
    };

    // First frame: authenticate (R-DEV-CHAN), protocol check (R-DEV-VER).
    let (token, protocol) = loop {
        if Instant::now() >= auth_deadline {
            close(&mut ws, 1008, "AUTHENTICATION_TIMEOUT");
            return;
        }
        if shared.stopping.load(Ordering::Acquire) {
            close(&mut ws, 1001, "GATEWAY_CLOSING");
            return;
        }
        match ws.read() {
            Ok(Message::Text(text)) => match parse_worker_frame(&text) {
                Ok(WorkerFrame::Authenticate { token, protocol }) => break (token, protocol),
                Ok(_) => {
                    close(&mut ws, 1008, "AUTHENTICATION_FAILED");
                    return;
                }
                Err(_) => {
                    close(&mut ws, 1007, "MALFORMED_FRAME");
                    return;
                }
            },
            Ok(Message::Binary(_)) => {
                close(&mut ws, 1003, "BINARY_FRAMES_UNSUPPORTED");
                return;
            }
            Ok(Message::Close(_)) => {
                drain_close(&mut ws);
                return;
            }
            Ok(_) => {}
            Err(e) if would_block(&e) => {}
            Err(e) => {
                close_for(&mut ws, &e);
                return;
            }
        }
    };
    let record = match token.map(|t| shared.registry.authenticate(&t)) {
        Some(Ok(Some(record))) => record,
        Some(Err(e)) => {
            log::warn!("device authentication could not be checked: {}", e.code());
            close(&mut ws, 1011, "INTERNAL_ERROR");
            return;
        }
        _ => {
            log::info!("device channel authentication refused");
            close(&mut ws, 1008, "AUTHENTICATION_FAILED");
            return;
        }
    };
    if let Err(e) = shared.registry.record_authentication(&record.id, protocol) {
        log::warn!("device protocol not recorded: {}", e.code());
    }
    if record.capability == Capability::Browser && protocol.is_none_or(|p| p < PROTOCOL_VERSION) {
        log::info!("device {} refused: extension out of date", record.id);
        close(&mut ws, 1008, "UPGRADE_REQUIRED");
        return;
    }

    let conn = shared.hub.register(&record.id);
    log::info!("device {} connected", record.id);
    // From here on the socket is non-blocking and the thread sleeps in `Wake::wait` until the
    // worker sends something, a frame is queued for it, or a timer is due.
    if poll_handle.set_nonblocking(true).is_err() {
        conn.shut();
        shared.hub.unregister(&conn);
        return;
    }
    let mut pending_write = ws
        .write(Message::text(frames::ready(conn.device_id())))
        .is_ok();
    let mut last_heard = Instant::now();
    let mut last_ping = Instant::now();
    let end: Option<(u16, &'static str)> = 'conn: loop {
        if shared.stopping.load(Ordering::Acquire) {
            break Some((1001, "GATEWAY_CLOSING"));
        }
        if let Some(request) = conn.close_request() {
            break Some(request);
        }
        let mut failed = false;
        for item in conn.drain_outgoing() {
            item.mark_sent();
            match ws.write(Message::text(item.text)) {
                Ok(()) => {}
                Err(e) if would_block(&e) => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
            pending_write = true;
        }
        if failed {
            break None;
        }
        if last_ping.elapsed() >= options.ping_interval {
            last_ping = Instant::now();
            match ws.write(Message::Ping(Default::default())) {
                Ok(()) => {}
                Err(e) if would_block(&e) => {}
                Err(_) => break None,
            }
            pending_write = true;
        }
        if pending_write {
            match ws.flush() {
                Ok(()) => pending_write = false,
                Err(e) if would_block(&e) => {}
                Err(_) => break None,
            }
        }
        if last_heard.elapsed() >= options.idle_timeout {
            break Some((1001, "KEEPALIVE_TIMEOUT"));
        }
        // Everything the worker sent so far.
        loop {
            match ws.read() {
                Ok(message) => {
                    last_heard = Instant::now();
                    match message {
                        Message::Text(text) => match parse_worker_frame(&text) {
                            Ok(WorkerFrame::Result { id, outcome }) => conn.complete(&id, outcome),
                            Ok(WorkerFrame::Ping) => {
                                conn.queue(frames::pong());
                                continue 'conn;
                            }
                            Ok(_) => {}
                            Err(_) => break 'conn Some((1007, "MALFORMED_FRAME")),
                        },
                        Message::Binary(_) => {
                            break 'conn Some((1003, "BINARY_FRAMES_UNSUPPORTED"))
                        }
                        Message::Close(_) => {
                            let _ = poll_handle.set_nonblocking(false);
                            drain_close(&mut ws);
                            break 'conn None;
                        }
                        _ => {}
                    }
                }
                Err(e) if would_block(&e) => break,
                Err(e) => {
                    let _ = poll_handle.set_nonblocking(false);
                    close_for(&mut ws, &e);
                    break 'conn None;
                }
            }
        }
        let next_ping = options.ping_interval.saturating_sub(last_ping.elapsed());
        let idle = options.idle_timeout.saturating_sub(last_heard.elapsed());
        conn.wait(
            &poll_handle,
            pending_write,
            next_ping.min(idle).min(MAX_WAIT),
        );
    };
    // Closing waits (bounded) for the worker's reply with ordinary timed reads.
    let _ = poll_handle.set_nonblocking(false);
    conn.shut();
    shared.hub.unregister(&conn);
    if let Some((code, reason)) = end {
        close(&mut ws, code, reason);
    }
    log::info!("device {} disconnected", conn.device_id());
}

/// Closes after a read error with the matching code (oversized, protocol, UTF-8).
fn close_for<S: Read + Write>(ws: &mut WebSocket<S>, e: &tungstenite::Error) {
    match e {
        tungstenite::Error::Capacity(_) => close(ws, 1009, "MESSAGE_TOO_BIG"),
        tungstenite::Error::Utf8(_) => close(ws, 1007, "MALFORMED_FRAME"),
        tungstenite::Error::Protocol(_) => close(ws, 1002, "PROTOCOL_ERROR"),
        _ => {}
    }
}

/// Sends a close frame and waits briefly for the worker's reply, so it reads the code.
fn close<S: Read + Write>(ws: &mut WebSocket<S>, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: Utf8Bytes::from_static(reason),
    };
    if ws.close(Some(frame)).is_err() {
        return;
    }
    drain_close(ws);
}

fn drain_close<S: Read + Write>(ws: &mut WebSocket<S>) {
    let until = Instant::now() + CLOSE_GRACE;
    while Instant::now() < until {
        match ws.read() {
            Ok(_) => {}
            Err(e) if would_block(&e) => {
                let _ = ws.flush();
            }
            Err(_) => break,
        }
    }
}

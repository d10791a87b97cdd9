//! A small blocking Chrome DevTools Protocol client over `tungstenite` (SPEC §1, §6).
//!
//! This module owns one WebSocket connection to a browser endpoint: a writer thread that sends
//! queued frames, a reader thread that routes responses to their caller by id and events to one
//! handler, a deadline on every call, and joining both threads on close. It never interprets
//! what a method means, never holds a lock across socket I/O, and never logs parameters or
//! results (they carry page content).

use std::collections::HashMap;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};
use tungstenite::protocol::Role;
use tungstenite::{Message, WebSocket};

use crate::Error;

/// One DevTools event: `method`, `params`, and the flat-mode session it belongs to.
#[derive(Debug)]
pub(crate) struct Event {
    pub method: String,
    pub params: Value,
    pub session_id: Option<String>,
}

/// Receives every event on the reader thread; must return quickly and never call back into
/// the connection.
pub(crate) type EventHandler = Arc<dyn Fn(Event) + Send + Sync>;

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum CdpError {
    /// The browser answered with a protocol error (Chromium's own text, never page content).
    Protocol { code: i64, message: String },
    /// No answer: timeout, lost connection, interrupted wait.
    Failed(Error),
}

impl CdpError {
    /// The public error for a failed call of `method`.
    pub(crate) fn into_error(self, method: &str) -> Error {
        match self {
            CdpError::Protocol { code, .. } => Error::ExecutionFailed {
                reason: format!("{method} failed (protocol error {code})"),
            },
            CdpError::Failed(e) => e,
        }
    }
}

type Reply = Result<Value, CdpError>;

struct Shared {
    pending: Mutex<HashMap<u64, Sender<Reply>>>,
    closed: AtomicBool,
    handler: EventHandler,
}

impl Shared {
    fn fail_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let pending: Vec<Sender<Reply>> = self.pending.lock().drain().map(|(_, tx)| tx).collect();
        for tx in pending {
            let _ = tx.send(Err(CdpError::Failed(lost())));
        }
    }
}

fn lost() -> Error {
    Error::BrowserUnavailable {
        reason: "the browser connection was lost (the browser exited or closed it)".into(),
    }
}

enum Outgoing {
    Text(String),
    Close,
}

/// A connection to one DevTools endpoint.
pub(crate) struct Cdp {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    out: Mutex<Option<Sender<Outgoing>>>,
    stream: TcpStream,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Cdp {
    /// Connects to `ws://host:port/path` and starts the reader and writer threads.
    pub(crate) fn connect(
        url: &str,
        timeout: Duration,
        handler: EventHandler,
    ) -> Result<Cdp, Error> {
        let fail = |what: &str| Error::BrowserUnavailable {
            reason: format!("cannot connect to the DevTools endpoint: {what}"),
        };
        let rest = url
            .strip_prefix("ws://")
            .ok_or_else(|| fail("not a ws:// URL"))?;
        let host_port = rest.split('/').next().unwrap_or_default();
        let addr = host_port
            .to_socket_addrs()
            .map_err(|e| fail(&e.kind().to_string()))?
            .next()
            .ok_or_else(|| fail("no address"))?;
        let stream =
            TcpStream::connect_timeout(&addr, timeout).map_err(|e| fail(&e.kind().to_string()))?;
        let _ = stream.set_nodelay(true);
        let io = |e: std::io::Error| fail(&e.kind().to_string());
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        // The handshake runs on its own handle; Chromium sends nothing before our first
        // frame, so no buffered bytes are lost when that handle is dropped.
        let (handshake, _) = tungstenite::client::client(url, stream.try_clone().map_err(io)?)
            .map_err(|_| fail("WebSocket handshake refused"))?;
        drop(handshake);
        stream.set_read_timeout(None).map_err(io)?;
        let mut reader =
            WebSocket::from_raw_socket(stream.try_clone().map_err(io)?, Role::Client, None);
        let mut writer =
            WebSocket::from_raw_socket(stream.try_clone().map_err(io)?, Role::Client, None);
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            handler,
        });
        let (tx, rx): (Sender<Outgoing>, Receiver<Outgoing>) = mpsc::channel();
        let spawn_err = |e: std::io::Error| fail(&format!("cannot start a thread: {}", e.kind()));

        let wshared = shared.clone();
        let wstream = stream.try_clone().map_err(io)?;
        let writer_thread = std::thread::Builder::new()
            .name("jevgate-cdp-writer".into())
            .spawn(move || {
                while let Ok(msg) = rx.recv() {
                    match msg {
                        Outgoing::Text(text) => {
                            if writer.send(Message::text(text)).is_err() {
                                // A broken socket: end the reader too, it fails every waiter.
                                let _ = wstream.shutdown(Shutdown::Both);
                                wshared.fail_all();
                                break;
                            }
                        }
                        Outgoing::Close => {
                            let _ = writer.close(None);
                            let _ = writer.flush();
                            break;
                        }
                    }
                }
            })
            .map_err(spawn_err)?;

        let rshared = shared.clone();
        let reader_thread = std::thread::Builder::new()
            .name("jevgate-cdp-reader".into())
            .spawn(move || {
                loop {
                    match reader.read() {
                        Ok(Message::Text(text)) => route(&rshared, text.as_str()),
                        Ok(Message::Binary(bytes)) => {
                            if let Ok(text) = std::str::from_utf8(&bytes) {
                                route(&rshared, text)
                            }
                        }
                        Ok(Message::Close(_)) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                rshared.fail_all();
                (rshared.handler)(Event {
                    method: "jevgate.disconnected".into(),
                    params: Value::Null,
                    session_id: None,
                });
            })
            .map_err(spawn_err)?;

        Ok(Cdp {
            shared,
            next_id: AtomicU64::new(1),
            out: Mutex::new(Some(tx)),
            stream,
            threads: Mutex::new(vec![writer_thread, reader_thread]),
        })
    }

    /// The connection is gone (closed by us, or the browser went away).
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends `method` and waits for its answer until `timeout`.
    pub(crate) fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.call_interruptible(method, params, session, timeout, &|| None)
    }

    /// Like [`Cdp::call`], but `interrupt` is polled while waiting; when it returns an error the
    /// wait ends with it (the answer, if it comes later, is dropped). Used so that an action a
    /// page answers with a JavaScript dialog never blocks until the dialog is handled.
    pub(crate) fn call_interruptible(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
        interrupt: &dyn Fn() -> Option<Error>,
    ) -> Result<Value, CdpError> {
        if self.is_closed() {
            return Err(CdpError::Failed(lost()));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            frame["sessionId"] = Value::String(s.to_string());
        }
        let (tx, rx) = mpsc::channel();
        self.shared.pending.lock().insert(id, tx);
        let sent = match self.out.lock().as_ref() {
            Some(out) => out.send(Outgoing::Text(frame.to_string())).is_ok(),
            None => false,
        };
        if !sent {
            self.shared.pending.lock().remove(&id);
            return Err(CdpError::Failed(lost()));
        }
        let deadline = Instant::now() + timeout;
        let slice = Duration::from_millis(20);
        loop {
            let now = Instant::now();
            if now >= deadline {
                self.shared.pending.lock().remove(&id);
                return Err(CdpError::Failed(Error::BrowserTimeout { timeout }));
            }
            match rx.recv_timeout(slice.min(deadline - now)) {
                Ok(reply) => return reply,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(err) = interrupt() {
                        self.shared.pending.lock().remove(&id);
                        return Err(CdpError::Failed(err));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Err(CdpError::Failed(lost())),
            }
        }
    }

    /// Closes the connection and joins both threads. Idempotent; never blocks past the socket
    /// shutdown.
    pub(crate) fn close(&self) {
        if let Some(out) = self.out.lock().take() {
            let _ = out.send(Outgoing::Close);
        }
        let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
        let mut threads = threads.into_iter();
        if let Some(writer) = threads.next() {
            let _ = writer.join();
        }
        // The reader blocks in read(): shutting the socket down ends it.
        let _ = self.stream.shutdown(Shutdown::Both);
        for t in threads {
            let _ = t.join();
        }
        self.shared.fail_all();
    }
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.close();
    }
}

fn route(shared: &Shared, text: &str) {
    let Ok(mut msg) = serde_json::from_str::<Value>(text) else {
        return;
    };
    if let Some(id) = msg.get("id").and_then(Value::as_u64) {
        let waiter = shared.pending.lock().remove(&id);
        if let Some(tx) = waiter {
            let reply = match msg.get_mut("error") {
                Some(err) => Err(CdpError::Protocol {
                    code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                }),
                None => Ok(msg
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            let _ = tx.send(reply);
        }
        return;
    }
    if let Some(method) = msg.get("method").and_then(Value::as_str) {
        let event = Event {
            method: method.to_string(),
            session_id: msg
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string),
            params: msg
                .get_mut("params")
                .map(Value::take)
                .unwrap_or(Value::Null),
        };
        (shared.handler)(event);
    }
}

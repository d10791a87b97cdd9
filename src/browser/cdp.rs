//! A small blocking Chrome DevTools Protocol client over Chromium's DevTools pipe
//! (`--remote-debugging-pipe`; SPEC §1, §6, issue 12 §1).
//!
//! This module owns one connection to the browser: an anonymous socket whose other end is
//! Chromium's fds 3/4, carrying NUL-terminated JSON messages; a writer thread that sends queued
//! messages, a reader thread that routes responses to their caller by id and events to one
//! handler, a deadline on every call, and joining both threads on close (a socket shutdown
//! ends both, whatever Chromium does). It never interprets what a method means, never holds a
//! lock across socket I/O, and never logs messages, parameters or results (they carry page
//! content; no dependency sees them either: there is no WebSocket library on this path).

use crate::clock::{wait_slice, SharedClock};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::Error;

/// One DevTools event: `method`, `params`, and the flat-mode session it belongs to.
#[derive(Debug)]
pub(crate) struct Event {
    pub method: String,
    pub params: Value,
    pub session_id: Option<String>,
}

/// Receives every event on the reader thread; must return quickly and never wait on the
/// connection (it may [`Poster::post`], which never waits).
pub(crate) type EventHandler = Arc<dyn Fn(Event) + Send + Sync>;

/// Sends calls whose answers nobody waits for (the answer is dropped when it comes): what the
/// event handler uses to react at once — dismiss a dialog of a page whose dialogs are
/// suppressed, close a popup past the tab cap. Never blocks; a no-op once the connection is
/// closed (it shares the connection's queue handle, so it never keeps the writer alive).
#[derive(Clone)]
pub(crate) struct Poster {
    out: Arc<Mutex<Option<Sender<Outgoing>>>>,
    next_id: Arc<AtomicU64>,
}

impl Poster {
    /// Queues `method` without waiting for its answer.
    pub(crate) fn post(&self, method: &str, params: Value, session: Option<&str>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            frame["sessionId"] = Value::String(s.to_string());
        }
        if let Some(out) = self.out.lock().as_ref() {
            let _ = out.send(Outgoing::Text(frame.to_string()));
        }
    }
}

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
}

/// The largest DevTools message accepted from the browser (a larger one ends the connection).
const MAX_MESSAGE: usize = 64 << 20;

/// A connection to one browser's DevTools pipe.
pub(crate) struct Cdp {
    shared: Arc<Shared>,
    next_id: Arc<AtomicU64>,
    out: Arc<Mutex<Option<Sender<Outgoing>>>>,
    stream: UnixStream,
    threads: Mutex<Vec<JoinHandle<()>>>,
    clock: SharedClock,
}

impl Cdp {
    /// Speaks the protocol over `stream` (our end of the browser's pipe) and starts the reader
    /// and writer threads. `timeout` bounds every single write; every call's deadline is on
    /// `clock` (R-CLK).
    pub(crate) fn over_pipe(
        stream: UnixStream,
        timeout: Duration,
        clock: SharedClock,
        handler: EventHandler,
    ) -> Result<Cdp, Error> {
        let fail = |what: &str| Error::BrowserUnavailable {
            reason: format!("cannot use the DevTools pipe: {what}"),
        };
        let io = |e: std::io::Error| fail(&e.kind().to_string());
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        let mut writer = stream.try_clone().map_err(io)?;
        let mut reader = stream.try_clone().map_err(io)?;
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            handler,
        });
        let (tx, rx): (Sender<Outgoing>, Receiver<Outgoing>) = mpsc::channel();
        let spawn_err = |e: std::io::Error| fail(&format!("cannot start a thread: {}", e.kind()));

        let wshared = shared.clone();
        let writer_thread = std::thread::Builder::new()
            .name("jevgate-cdp-writer".into())
            .spawn(move || {
                while let Ok(Outgoing::Text(mut text)) = rx.recv() {
                    // serde_json escapes every control character, so the only NUL is ours.
                    text.push('\0');
                    if writer.write_all(text.as_bytes()).is_err() {
                        // A broken pipe: end the reader too, it fails every waiter.
                        let _ = writer.shutdown(Shutdown::Both);
                        wshared.fail_all();
                        break;
                    }
                }
            })
            .map_err(spawn_err)?;

        let rshared = shared.clone();
        let reader_thread = std::thread::Builder::new()
            .name("jevgate-cdp-reader".into())
            .spawn(move || {
                read_messages(&mut reader, &mut |text| route(&rshared, text));
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
            next_id: Arc::new(AtomicU64::new(1)),
            out: Arc::new(Mutex::new(Some(tx))),
            stream,
            threads: Mutex::new(vec![writer_thread, reader_thread]),
            clock,
        })
    }

    /// A handle that sends calls without waiting for their answers.
    pub(crate) fn poster(&self) -> Poster {
        Poster {
            out: Arc::clone(&self.out),
            next_id: Arc::clone(&self.next_id),
        }
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
        let deadline = self.clock.now() + timeout;
        let slice = Duration::from_millis(20);
        loop {
            let Some(left) = wait_slice(&*self.clock, deadline) else {
                self.shared.pending.lock().remove(&id);
                return Err(CdpError::Failed(Error::BrowserTimeout { timeout }));
            };
            match rx.recv_timeout(slice.min(left)) {
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

    /// Closes the connection and joins both threads. Idempotent; never waits on the browser:
    /// shutting our end of the socket down ends a blocked read and a blocked write at once.
    pub(crate) fn close(&self) {
        // The writer ends once its queue is empty (every write after the shutdown fails fast).
        drop(self.out.lock().take());
        let _ = self.stream.shutdown(Shutdown::Both);
        let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
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

/// Reads NUL-terminated messages until end-of-file, an error, or a message larger than
/// [`MAX_MESSAGE`]; `deliver` gets each complete message that is UTF-8. Linear in the input:
/// each byte is scanned once and moved at most once.
fn read_messages(reader: &mut impl Read, deliver: &mut dyn FnMut(&str)) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    // `buf[..scanned]` holds no NUL.
    let mut scanned = 0;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(at) = buf[scanned..].iter().position(|&b| b == 0) {
            let end = scanned + at;
            if end - start > MAX_MESSAGE {
                log::warn!(
                    "the browser sent a DevTools message over the size limit; disconnecting"
                );
                return;
            }
            if let Ok(text) = std::str::from_utf8(&buf[start..end]) {
                deliver(text);
            }
            start = end + 1;
            scanned = start;
        }
        if start > 0 {
            buf.drain(..start);
        }
        scanned = buf.len();
        if buf.len() > MAX_MESSAGE {
            log::warn!("the browser sent a DevTools message over the size limit; disconnecting");
            return;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes in fixed-size reads, so messages are split across reads.
    struct Chunks<'a>(&'a [u8], usize);

    impl Read for Chunks<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn messages(input: &[u8], chunk: usize) -> Vec<String> {
        let mut got = Vec::new();
        read_messages(&mut Chunks(input, chunk), &mut |m| got.push(m.to_string()));
        got
    }

    #[test]
    fn pipe_messages_are_split_on_nul_whatever_the_reads() {
        let input = b"{\"id\":1}\0{\"method\":\"a\"}\0\0{\"id\":2}\0{\"partial\"";
        for chunk in [1, 3, 7, 1000] {
            assert_eq!(
                messages(input, chunk),
                vec!["{\"id\":1}", "{\"method\":\"a\"}", "", "{\"id\":2}"],
                "chunk {chunk}"
            );
        }
        // Not UTF-8: skipped, the next message still arrives.
        assert_eq!(messages(b"\xff\xfe\0ok\0", 2), vec!["ok"]);
    }

    #[test]
    fn a_message_over_the_limit_ends_the_connection() {
        let mut big = vec![b'a'; MAX_MESSAGE + 2];
        big.extend_from_slice(b"\0after\0");
        assert!(messages(&big, 1 << 20).is_empty());
    }

    // R-CLK (issue 13 item 5): a DevTools call's deadline is on the browser's clock. The peer
    // never answers; moving a manual clock past the 10 s deadline ends the call with
    // `BrowserTimeout` without 10 s of real time (the old wait read `std::time::Instant`).
    #[test]
    fn r_clk_a_call_times_out_when_the_manual_clock_passes_its_deadline() {
        use crate::clock::{Clock, ManualClock, SystemClock};
        let (ours, _peer) = UnixStream::pair().unwrap();
        let clock = ManualClock::new();
        let cdp = Arc::new(
            Cdp::over_pipe(
                ours,
                Duration::from_secs(1),
                Arc::new(clock.clone()),
                Arc::new(|_| {}),
            )
            .unwrap(),
        );
        let call = {
            let cdp = Arc::clone(&cdp);
            std::thread::spawn(move || {
                cdp.call(
                    "Browser.getVersion",
                    json!({}),
                    None,
                    Duration::from_secs(10),
                )
            })
        };
        let real = SystemClock::new();
        let started = real.now();
        while !call.is_finished() {
            clock.advance(Duration::from_secs(1));
            std::thread::yield_now();
        }
        let timed_out = matches!(
            call.join().unwrap(),
            Err(CdpError::Failed(Error::BrowserTimeout { timeout })) if timeout == Duration::from_secs(10)
        );
        assert!(timed_out);
        assert!(real.now() - started < Duration::from_secs(8));
        cdp.close();
    }
}

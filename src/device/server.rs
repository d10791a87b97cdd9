//! The device-worker channel server (R-DEV-CHAN): a listening socket and a small fixed set of
//! I/O threads (`io_threads`: the cores, at most 4) that serve every connection through
//! readiness (mio: epoll/kqueue), optionally behind TLS (rustls), all stopped and joined by
//! [`ChannelHandle::stop`] or [`Gateway::close`](crate::Gateway::close). An idle worker costs a
//! socket and a few hundred bytes, never a thread.
//!
//! It owns sockets, threads, the budgets at accept (unauthenticated sockets: their own cap and
//! a cap per address, so they never displace a paired device) and the timers; each connection's
//! handshake, authentication, frames and close are its state machine in [`super::connection`],
//! which also answers the pairing route (`POST /devices/pair`, [`super::http`]) on the same port.
//! The checker thread does the store's part of every authentication and pairing request.
//! A tool call queues its frame on the connection and nudges the connection's I/O thread (one
//! waker per thread). It must never block an I/O thread on one client (every connection step is
//! non-blocking, every wait has a deadline on the gateway's clock), never spin on a timer that
//! is due (a due timer waits for the clock to move, at least [`TICK`]), and never leave a
//! thread running after stop returns.

use super::channel::{Admissions, ChannelOptions, Shared, DEFAULT_MAX_CONNECTIONS};
use super::connection::{self as connection, Connection, Host, Turn, Verdict, NEVER, TICK};
use super::hub::{Hub, Nudge};
use super::pairing::PairingCodes;
use super::registry::Registry;
use crate::clock::{Clock, Instant};
use crate::lease::Leases;
use crate::{Error, Result};
use mio::{Events, Interest, Poll, Token, Waker};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// A running channel server. Stop it with [`ChannelHandle::stop`]; [`Gateway::close`](crate::Gateway::close)
/// (crate::Gateway::close) stops every server of the gateway. Dropping the handle does not stop
/// the server.
#[derive(Clone)]
pub struct ChannelHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ChannelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelHandle")
            .field("addr", &self.addr)
            .field("tls", &self.shared.options.tls.is_some())
            .finish()
    }
}

impl ChannelHandle {
    /// The bound address (the real port when `:0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://host:port/v1/device-worker/channel` (or `wss://`).
    pub fn url(&self) -> String {
        let scheme = if self.shared.options.tls.is_some() {
            "wss"
        } else {
            "ws"
        };
        format!("{scheme}://{}{}", self.addr, super::frames::CHANNEL_PATH)
    }

    /// Whether the server has been stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopping.load(Ordering::Acquire)
    }

    /// Stops accepting, closes every connection (1001 `GATEWAY_CLOSING`) and joins every thread.
    /// Idempotent.
    pub fn stop(&self) {
        self.shared.stop();
    }
}

/// The longest wait of an I/O thread: how often it looks at a clock that does not follow real
/// time even when nothing is due.
const MAX_WAIT: Duration = Duration::from_millis(500);
/// Descriptors kept free beside the channel's sockets (the store, browsers, logs, the host).
const RESERVED_FDS: u64 = 512;
const WAKER: Token = Token(usize::MAX);
const LISTENER: Token = Token(usize::MAX - 1);
/// Events taken from the poll at once.
const EVENTS: usize = 1024;

/// Binds and starts serving.
pub(crate) fn serve(
    mut options: ChannelOptions,
    registry: Arc<Registry>,
    hub: Arc<Hub>,
    pairing: Arc<PairingCodes>,
    leases: Leases,
) -> Result<(ChannelHandle, Arc<Shared>)> {
    options.validate()?;
    fit_open_files(&mut options)?;
    let addrs: Vec<SocketAddr> = options
        .addr
        .to_socket_addrs()
        .map_err(|_| Error::InvalidArgument {
            name: "addr",
            reason: "not a socket address".into(),
        })?
        .collect();
    let listener = std::net::TcpListener::bind(&addrs[..]).map_err(|e| Error::ChannelIo {
        reason: format!("bind: {}", e.kind()),
    })?;
    let addr = listener.local_addr().map_err(|e| Error::ChannelIo {
        reason: format!("local address: {}", e.kind()),
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::ChannelIo {
            reason: format!("configure listener: {}", e.kind()),
        })?;
    let mut listener = Some(mio::net::TcpListener::from_std(listener));
    let io = |what: &str, e: std::io::Error| Error::ChannelIo {
        reason: format!("{what}: {}", e.kind()),
    };
    let count = options.io_thread_count();
    let admissions = Admissions::new(
        options.max_unauthenticated,
        options.max_unauthenticated_per_address,
    );
    let shared = Arc::new(Shared {
        options,
        registry,
        hub,
        pairing,
        leases,
        stopping: AtomicBool::new(false),
        unauthenticated: Mutex::new(admissions),
        devices: AtomicUsize::new(0),
        wakers: Mutex::new(Vec::new()),
        threads: Mutex::new(Vec::new()),
    });
    let mut polls = Vec::with_capacity(count);
    let mut inboxes = Vec::with_capacity(count);
    for _ in 0..count {
        let poll = Poll::new().map_err(|e| io("poll", e))?;
        let waker = Waker::new(poll.registry(), WAKER).map_err(|e| io("waker", e))?;
        inboxes.push(Arc::new(Inbox {
            waker,
            queue: Mutex::new(InboxQueue::default()),
        }));
        polls.push(poll);
    }
    if let Some(l) = listener.as_mut() {
        polls[0]
            .registry()
            .register(l, LISTENER, Interest::READABLE)
            .map_err(|e| io("register listener", e))?;
    }
    *shared.wakers.lock() = inboxes
        .iter()
        .map(|inbox| {
            let inbox = Arc::clone(inbox);
            Arc::new(move || {
                let _ = inbox.waker.wake();
            }) as Arc<dyn Fn() + Send + Sync>
        })
        .collect();
    // The checker: the store's part of every authentication and of every pairing request, off
    // the I/O threads. It ends when the last I/O thread (holding a sender) has ended.
    let (checks, pending_checks) = mpsc::channel::<Check>();
    let checker = {
        let shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("jevgate-channel-auth".into())
            .spawn(move || {
                for job in pending_checks {
                    let verdict = match job.work {
                        Work::Authenticate { token, protocol } => {
                            connection::check(&shared, token, protocol)
                        }
                        Work::Pair { peer, body } => {
                            Verdict::Replied(connection::pair(&shared, peer, &body))
                        }
                        Work::Unpair { device_id } => {
                            // The connection is closed by the hub; nothing waits for a verdict.
                            connection::unpair(&shared, &device_id);
                            continue;
                        }
                    };
                    job.inbox
                        .queue
                        .lock()
                        .verdicts
                        .push((job.key, job.serial, verdict));
                    let _ = job.inbox.waker.wake();
                }
            })
            .map_err(|e| io("start the checker thread", e))?
    };
    for (index, poll) in polls.into_iter().enumerate() {
        let thread = IoThread {
            checks: checks.clone(),
            index,
            poll,
            inbox: Arc::clone(&inboxes[index]),
            peers: inboxes.clone(),
            next_peer: 0,
            listener: if index == 0 { listener.take() } else { None },
            accept_again: false,
            slots: Vec::new(),
            free: Vec::new(),
            serial: 0,
            timers: BinaryHeap::new(),
            again: Vec::new(),
            closing: Vec::new(),
            last_tick: Instant::default(),
            shared: Arc::clone(&shared),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("jevgate-channel-io-{index}"))
            .spawn(move || thread.run());
        match spawned {
            Ok(t) => shared.threads.lock().push(t),
            Err(e) => {
                shared.stop();
                return Err(io("start an I/O thread", e));
            }
        }
    }
    drop(checks);
    // Joined after the I/O threads (whose senders end it).
    shared.threads.lock().push(checker);
    log::info!("device channel listening on {addr} ({count} I/O threads)");
    Ok((
        ChannelHandle {
            addr,
            shared: Arc::clone(&shared),
        },
        shared,
    ))
}

/// Raises the soft open-file limit to the hard one and fits `max_connections` under it: the
/// default is lowered (with a log line), a host's own value above the limit is refused.
fn fit_open_files(options: &mut ChannelOptions) -> Result<()> {
    let Some(limit) = open_file_limit() else {
        return Ok(());
    };
    let wanted = (options.max_connections as u64)
        .saturating_add(options.max_unauthenticated as u64)
        .saturating_add(RESERVED_FDS);
    if wanted <= limit {
        return Ok(());
    }
    let fits = limit
        .saturating_sub(options.max_unauthenticated as u64)
        .saturating_sub(RESERVED_FDS);
    if options.max_connections != DEFAULT_MAX_CONNECTIONS || fits == 0 {
        return Err(Error::InvalidArgument {
            name: "max_connections",
            reason: format!(
                "{} devices and {} unauthenticated sockets do not fit the open-file limit of {limit}",
                options.max_connections, options.max_unauthenticated
            ),
        });
    }
    let fits = usize::try_from(fits).unwrap_or(usize::MAX);
    log::warn!(
        "device channel: the open-file limit ({limit}) allows {fits} devices, not the default {DEFAULT_MAX_CONNECTIONS}"
    );
    options.max_connections = fits;
    Ok(())
}

/// The soft open-file limit after raising it to the hard one; `None` when unlimited or unknown.
#[cfg(unix)]
fn open_file_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_err() {
            log::debug!("the open-file limit could not be raised");
        }
    }
    getrlimit(Resource::Nofile).current
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// What other threads hand an I/O thread: connections accepted for it, connections nudged.
#[derive(Default)]
struct InboxQueue {
    accepted: Vec<Connection>,
    nudged: Vec<(usize, u64)>,
    verdicts: Vec<(usize, u64, Verdict)>,
}

/// An authenticate frame or a pairing request for the checker thread, and where its verdict
/// goes.
struct Check {
    inbox: Arc<Inbox>,
    key: usize,
    serial: u64,
    work: Work,
}

/// The store's part the checker does.
enum Work {
    Authenticate {
        token: Option<String>,
        protocol: Option<u64>,
    },
    Pair {
        peer: std::net::IpAddr,
        body: Vec<u8>,
    },
    /// The worker of an authenticated connection unpaired its device.
    Unpair { device_id: String },
}

struct Inbox {
    waker: Waker,
    queue: Mutex<InboxQueue>,
}

struct Slot {
    serial: u64,
    conn: Connection,
    /// A nudge is pending (so a burst of queued frames wakes the thread once).
    nudged: Arc<AtomicBool>,
    /// The instant of this slot's live entry in the timer heap ([`NEVER`]: none).
    scheduled: Instant,
}

struct IoThread {
    checks: mpsc::Sender<Check>,
    index: usize,
    poll: Poll,
    inbox: Arc<Inbox>,
    peers: Vec<Arc<Inbox>>,
    next_peer: usize,
    listener: Option<mio::net::TcpListener>,
    /// Accept failed for want of descriptors: try again on the next tick.
    accept_again: bool,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    serial: u64,
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
    /// Connections whose turn ran out of budget.
    again: Vec<(usize, u64)>,
    /// Closing connections: driven on every tick.
    closing: Vec<(usize, u64)>,
    last_tick: Instant,
    shared: Arc<Shared>,
}

impl IoThread {
    fn clock(&self) -> &dyn Clock {
        &**self.shared.hub.clock()
    }

    fn run(mut self) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.serve()));
        if result.is_err() {
            log::error!("a device channel I/O thread panicked; its connections are closed");
        }
    }

    fn serve(&mut self) {
        let mut events = Events::with_capacity(EVENTS);
        let mut stopping_since: Option<crate::clock::GraceBound> = None;
        loop {
            if self.shared.stopping.load(Ordering::Acquire) {
                match stopping_since.as_mut() {
                    None => {
                        // Stop accepting; every connection's next turn ends or closes it.
                        if let Some(mut l) = self.listener.take() {
                            let _ = self.poll.registry().deregister(&mut l);
                        }
                        self.inbox.queue.lock().accepted.clear();
                        let all: Vec<(usize, u64)> = self.live_keys();
                        for (key, serial) in all {
                            self.drive(key, serial, false);
                        }
                        stopping_since = Some(crate::clock::GraceBound::new(
                            self.clock(),
                            super::connection::CLOSE_GRACE.saturating_mul(2),
                        ));
                    }
                    Some(bound) => {
                        let over = bound.next(self.clock(), TICK).is_none();
                        if over || self.slots.iter().all(Option::is_none) {
                            break;
                        }
                    }
                }
            }
            let timeout = self.timeout();
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::error!("device channel poll failed: {}", e.kind());
                    break;
                }
            }
            let timed_out = events.is_empty();
            for event in events.iter() {
                match event.token() {
                    WAKER => self.take_inbox(),
                    LISTENER => self.accept(),
                    Token(key) => {
                        if let Some(serial) = self.serial_of(key) {
                            self.drive(key, serial, false);
                        }
                    }
                }
            }
            for (key, serial) in std::mem::take(&mut self.again) {
                self.drive(key, serial, false);
            }
            let now = self.clock().now();
            while let Some(Reverse((at, key, serial))) = self.timers.peek().copied() {
                if at > now {
                    break;
                }
                self.timers.pop();
                let live = self.slots.get_mut(key).and_then(Option::as_mut);
                if let Some(slot) = live.filter(|s| s.serial == serial && s.scheduled == at) {
                    slot.scheduled = NEVER;
                    self.drive(key, serial, false);
                }
            }
            if timed_out || now >= self.last_tick + TICK {
                self.last_tick = now;
                for (key, serial) in std::mem::take(&mut self.closing) {
                    self.drive(key, serial, true);
                }
                if self.accept_again {
                    self.accept();
                }
            }
        }
        // Whatever is left is dropped: sockets closed, devices unregistered, budgets given
        // back (by each connection's drop).
        self.slots.clear();
        log::debug!("device channel I/O thread {} stopped", self.index);
    }

    /// How long the next poll may wait: until the first timer (at least [`TICK`], at most
    /// [`MAX_WAIT`] and the clock's own slice), or not at all when a turn ran out of budget.
    fn timeout(&self) -> Duration {
        if !self.again.is_empty() {
            return Duration::ZERO;
        }
        let mut wait = MAX_WAIT.min(self.clock().max_wait());
        if !self.closing.is_empty()
            || self.accept_again
            || self.shared.stopping.load(Ordering::Acquire)
        {
            wait = TICK;
        }
        if let Some(Reverse((at, _, _))) = self.timers.peek() {
            wait = wait.min(*at - self.clock().now());
        }
        wait.max(TICK)
    }

    fn live_keys(&self) -> Vec<(usize, u64)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(key, s)| s.as_ref().map(|s| (key, s.serial)))
            .collect()
    }

    fn serial_of(&self, key: usize) -> Option<u64> {
        self.slots.get(key)?.as_ref().map(|s| s.serial)
    }

    fn take_inbox(&mut self) {
        let InboxQueue {
            accepted,
            nudged,
            verdicts,
        } = std::mem::take(&mut *self.inbox.queue.lock());
        for conn in accepted {
            self.insert(conn);
        }
        for (key, serial, verdict) in verdicts {
            if let Some(slot) = self.slots.get_mut(key).and_then(Option::as_mut) {
                if slot.serial == serial {
                    slot.conn.checked(verdict);
                    self.drive(key, serial, false);
                }
            }
        }
        for (key, serial) in nudged {
            if let Some(slot) = self.slots.get(key).and_then(Option::as_ref) {
                if slot.serial == serial {
                    slot.nudged.store(false, Ordering::Release);
                    self.drive(key, serial, false);
                }
            }
        }
    }

    fn accept(&mut self) {
        self.accept_again = false;
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((stream, addr)) => {
                    if self.shared.stopping.load(Ordering::Acquire) {
                        continue;
                    }
                    if !self.shared.admit(addr.ip()) {
                        log::debug!("device channel: unauthenticated budget full; socket closed");
                        continue;
                    }
                    let Some(conn) = Connection::new(Arc::clone(&self.shared), stream, addr.ip())
                    else {
                        continue;
                    };
                    let target = self.next_peer % self.peers.len();
                    self.next_peer = self.next_peer.wrapping_add(1);
                    if target == self.index {
                        self.insert(conn);
                    } else {
                        let peer = &self.peers[target];
                        peer.queue.lock().accepted.push(conn);
                        let _ = peer.waker.wake();
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    // Out of descriptors (or memory): the pending sockets wait in the backlog
                    // until the next tick.
                    log::warn!("device channel accept failed: {}", e.kind());
                    self.accept_again = true;
                    return;
                }
            }
        }
    }

    fn insert(&mut self, mut conn: Connection) {
        let key = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let registered = conn.tcp_mut().is_some_and(|tcp| {
            self.poll
                .registry()
                .register(tcp, Token(key), Interest::READABLE | Interest::WRITABLE)
                .is_ok()
        });
        if !registered {
            self.free.push(key);
            return;
        }
        self.serial = self.serial.wrapping_add(1);
        let serial = self.serial;
        self.slots[key] = Some(Slot {
            serial,
            conn,
            nudged: Arc::new(AtomicBool::new(false)),
            scheduled: NEVER,
        });
        self.drive(key, serial, false);
    }

    /// One turn of the connection at `key` (if it is still the one with `serial`).
    fn drive(&mut self, key: usize, serial: u64, tick: bool) {
        let Some(slot) = self.slots.get_mut(key).and_then(Option::as_mut) else {
            return;
        };
        if slot.serial != serial {
            return;
        }
        let mut host = ThreadHost {
            inbox: &self.inbox,
            flag: &slot.nudged,
            checks: &self.checks,
            key,
            serial,
        };
        let turn = slot.conn.drive(tick, &mut host);
        match turn {
            Turn::Finished => {
                if let Some(mut slot) = self.slots[key].take() {
                    if let Some(tcp) = slot.conn.tcp_mut() {
                        let _ = self.poll.registry().deregister(tcp);
                    }
                }
                self.free.push(key);
                return;
            }
            Turn::More => self.again.push((key, serial)),
            Turn::Closing => {
                if !tick {
                    // Ticks drive it from now on (a tick re-adds it below).
                    self.closing.retain(|&(k, s)| (k, s) != (key, serial));
                }
                self.closing.push((key, serial));
            }
            Turn::Wait => {}
        }
        let due = slot.conn.due();
        if due < slot.scheduled {
            slot.scheduled = due;
            self.timers.push(Reverse((due, key, serial)));
        }
    }
}

/// What a connection asks of its I/O thread, for one turn.
struct ThreadHost<'a> {
    inbox: &'a Arc<Inbox>,
    flag: &'a Arc<AtomicBool>,
    checks: &'a mpsc::Sender<Check>,
    key: usize,
    serial: u64,
}

impl Host for ThreadHost<'_> {
    fn nudge(&mut self) -> Nudge {
        let inbox = Arc::clone(self.inbox);
        let flag = Arc::clone(self.flag);
        let (key, serial) = (self.key, self.serial);
        Box::new(move || {
            if !flag.swap(true, Ordering::AcqRel) {
                inbox.queue.lock().nudged.push((key, serial));
                let _ = inbox.waker.wake();
            }
        })
    }

    fn check(&mut self, token: Option<String>, protocol: Option<u64>) {
        self.submit(Work::Authenticate { token, protocol });
    }

    fn pair(&mut self, peer: std::net::IpAddr, body: Vec<u8>) {
        self.submit(Work::Pair { peer, body });
    }

    fn unpair(&mut self, device_id: String) {
        self.submit(Work::Unpair { device_id });
    }
}

impl ThreadHost<'_> {
    fn submit(&mut self, work: Work) {
        let job = Check {
            inbox: Arc::clone(self.inbox),
            key: self.key,
            serial: self.serial,
            work,
        };
        if let Err(mpsc::SendError(job)) = self.checks.send(job) {
            // The checker is gone (the server stops): refused like a store failure.
            let verdict = match job.work {
                // The server stops: every connection closes anyway.
                Work::Unpair { .. } => return,
                Work::Authenticate { .. } => Verdict::Refused(1011, "INTERNAL_ERROR"),
                Work::Pair { .. } => Verdict::Replied(super::http::Reply::error(
                    503,
                    "GATEWAY_CLOSING",
                    "the gateway is closing",
                )),
            };
            job.inbox
                .queue
                .lock()
                .verdicts
                .push((job.key, job.serial, verdict));
            let _ = job.inbox.waker.wake();
        }
    }
}

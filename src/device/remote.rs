//! Devices connected to another process of a fleet (issue 23 item 4, R-DEV-CHAN, R-DEV-FAIL,
//! R-LEASE-3): a device's WebSocket reaches one process, an agent's call may arrive at another.
//!
//! Owns, on the shared PostgreSQL store (cargo feature `postgres`), two tables and one NOTIFY
//! channel (`jevgate_device`):
//!
//! - `jevgate_device_connections`: which process holds each device's connection, written by
//!   that process when the connection arrives and removed when it leaves (queued by the hub's
//!   presence watcher and written on this module's own thread, never on a channel I/O thread);
//!   a row whose process's liveness row is dead (`lease/fleet.rs`: 10 s without a heartbeat)
//!   or gone counts as no connection.
//! - `jevgate_remote_commands`: one row per command carried to the holder — `queued` when the
//!   caller inserts it (NOTIFY `run <holder> <id>`), `sent` when the holder takes it (before
//!   anything is written to the worker), `done` with its result (NOTIFY `done <caller> <id>`),
//!   or `cancelled` by the caller (a take-back, a lease lost, its deadline: NOTIFY
//!   `cancel <holder> <id>`, and the holder cancels its in-flight command).
//!
//! The same channel carries `unpaired <device>` (sent by `registry.rs` in the transaction that
//! unpaired or re-paired it): the process holding the device's connection closes it with 1008
//! `DEVICE_UNPAIRED` unless it authenticated with the current pairing, as a local unpair does
//! (and checks every connection held here after each reconnection of its listener).
//!
//! Rows do not outlive their use: about every minute each process deletes the ended rows
//! addressed to it, and what a dead process (on the database clock) left — command rows
//! addressed to it that ended more than ten minutes ago, whatever their state, and its claim on
//! device connections — in bounded batches.
//!
//! The caller's process keeps every policy: device selection, the lease and its cancellation
//! hook, caps, deadlines and the untrusted envelope stay with dispatch (and the task layer's
//! primitives, `primitive.rs`), which use a [`RemoteDevice`] as the executor of the claimed
//! device; the holder runs the command through
//! its hub exactly as a local call and returns the worker's raw answer. The rows' life, the
//! listener and the caller's wait (a condition variable the listener wakes, with a bounded
//! re-read every 250 ms as the fallback for a lost notification) are the fleet's mailbox
//! (`store/mailbox.rs`); this module owns what a command is, its deadline and cancellation.
//!
//! It must never re-send a command: a row is taken once (`queued` → `sent` in one UPDATE), and
//! a holder that dies after taking it leaves the outcome unknown (`OUTCOME_UNKNOWN`), one that
//! dies before leaves it unsent (`DEVICE_OFFLINE`). Arguments and results are bounded by the
//! channel's frame cap and are never logged (codes, ids and sizes only). A build without the
//! feature has an uninhabited stand-in: dispatch's code is the same in both builds.

use super::executor::WorkerFailure;
use super::registry::DeviceRecord;

#[cfg(feature = "postgres")]
pub(crate) use real::Remote;
#[cfg(not(feature = "postgres"))]
pub(crate) use stand_in::Remote;

/// The largest arguments or result a carried command holds: the channel's default frame cap.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries commands
pub(crate) const MAX_CARRIED_BYTES: usize = 1 << 20;

/// Carried commands run at once on a holder; past it a command is answered
/// `DEVICE_OFFLINE` unsent.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries commands
const MAX_RUNNING: usize = 64;

/// A failure as carried back in a result row.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries commands
fn failure_json(f: &WorkerFailure) -> serde_json::Value {
    serde_json::json!({"err": {"code": f.code, "message": f.message, "notSent": f.not_sent}})
}

/// A device connected to another live process, as the caller's dispatch sees it.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries commands
pub(crate) struct Elsewhere {
    /// What device selection needs (no token, no browser details).
    pub(crate) record: DeviceRecord,
    /// The other live process holding its connection now, if any.
    pub(crate) process: Option<String>,
}

#[cfg(not(feature = "postgres"))]
mod stand_in {
    use super::*;
    use crate::store::SharedStore;
    use crate::Result;
    use std::sync::Arc;

    /// No fleet in a build without the `postgres` feature: a value of this type cannot exist.
    #[derive(Debug)]
    pub(crate) enum Remote {}

    impl Remote {
        pub(crate) fn start(
            shared: &SharedStore,
            _process: String,
            _hub: &Arc<super::super::hub::Hub>,
        ) -> Result<Remote> {
            match *shared {}
        }
        pub(crate) fn known(&self, _device: &str) -> Result<Option<Elsewhere>> {
            match *self {}
        }
        pub(crate) fn known_of(&self, _owner: &str) -> Result<Vec<Elsewhere>> {
            match *self {}
        }
        pub(crate) fn executor(
            &self,
            _device: &str,
            _process: String,
        ) -> Arc<dyn super::super::executor::ToolExecutor> {
            match *self {}
        }
        pub(crate) fn close(&self) {
            match *self {}
        }
        pub(crate) fn prune_dead(&self) -> Result<(u64, u64)> {
            match *self {}
        }
        pub(crate) fn show_progress(&self, _device: &str, _line: Option<&str>) {
            match *self {}
        }
    }
}

#[cfg(feature = "postgres")]
mod real {
    use super::super::executor::{ToolExecutor, OUTCOME_UNKNOWN};
    use super::super::hub::{Change, Hub, SendFailure, PROGRESS_LINE_CHARS};
    use super::super::registry::{Capability, CHANNEL, UNPAIRED};
    use super::*;
    use crate::clock::wait_slice;
    use crate::lease::pg_liveness::{is_alive, DEAD_AFTER};
    use crate::store::mailbox::{Cancelled, Holder, Kind, Mailbox, Seen};
    use crate::store::pg::PgStore;
    use crate::store::SharedStore;
    use crate::{CancelToken, Result};
    use parking_lot::{Condvar, Mutex};
    use serde_json::Value;
    use std::collections::{HashMap, VecDeque};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Weak};
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// The table and NOTIFY channel of carried commands.
    static KIND: Kind = Kind {
        table: "jevgate_remote_commands",
        channel: CHANNEL,
        taken: "sent",
        dropped: "cancelled",
        noun: "a remote command",
        thread: "remote-listen",
    };
    /// How long an ended command's row is kept past its deadline before its holder deletes it.
    const KEEP_ENDED: Duration = Duration::from_secs(600);
    /// The most rows of a dead process one cleanup prunes (per table).
    const PRUNE_BATCH: i64 = 500;
    /// How long past its deadline a caller waits for the holder's own `timed_out` answer.
    const GRACE: Duration = Duration::from_millis(500);

    /// A change of a device's row: its connection arrived here, left, or it was unpaired.
    enum Presence {
        Here(DeviceRecord),
        Left,
        Unpaired,
    }

    type Announce = (String, Presence);

    struct Inner {
        store: Arc<PgStore>,
        process: String,
        hub: Weak<Hub>,
        /// The carried commands' rows, caller and holder side.
        mailbox: Arc<Mailbox>,
        /// Holder side: command id → the cancel token of the command running here.
        running: Mutex<HashMap<i64, CancelToken>>,
        /// Connections to record, in order, and the thread writing them.
        announce: Mutex<VecDeque<Announce>>,
        /// The devices connected here now, with their records (recorded afresh after the
        /// listener reconnects).
        here: Mutex<HashMap<String, DeviceRecord>>,
        announced: Condvar,
        stop: AtomicBool,
    }

    /// This process's part in carrying commands to devices connected elsewhere.
    pub(crate) struct Remote {
        inner: Arc<Inner>,
        threads: Mutex<Vec<JoinHandle<()>>>,
    }

    impl std::fmt::Debug for Remote {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Remote").finish_non_exhaustive()
        }
    }

    fn ms(d: Duration) -> i64 {
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }

    impl Remote {
        /// Starts the listener and the thread recording this process's connections, and tells
        /// `hub` to queue every connection arriving and leaving.
        pub(crate) fn start(
            shared: &SharedStore,
            process: String,
            hub: &Arc<Hub>,
        ) -> Result<Remote> {
            let mailbox = Mailbox::new(&KIND, Arc::clone(&shared.0), process.clone(), DEAD_AFTER);
            let inner = Arc::new(Inner {
                store: Arc::clone(&shared.0),
                process,
                hub: Arc::downgrade(hub),
                mailbox,
                running: Mutex::new(HashMap::new()),
                announce: Mutex::new(VecDeque::new()),
                here: Mutex::new(HashMap::new()),
                announced: Condvar::new(),
                stop: AtomicBool::new(false),
            });
            let queue = Arc::downgrade(&inner);
            hub.set_presence(Arc::new(move |device, change| {
                if let Some(inner) = queue.upgrade() {
                    let presence = match change {
                        Change::Here(r) => {
                            inner.here.lock().insert(device.to_string(), r.clone());
                            Presence::Here(r.clone())
                        }
                        Change::Left => {
                            inner.here.lock().remove(device);
                            Presence::Left
                        }
                        Change::Unpaired => Presence::Unpaired,
                    };
                    let mut q = inner.announce.lock();
                    // Bounded: past it the oldest is dropped (the listener's next reconnection
                    // records every connection afresh).
                    if q.len() >= 4096 {
                        q.pop_front();
                    }
                    q.push_back((device.to_string(), presence));
                    inner.announced.notify_all();
                }
            }));
            inner.mailbox.listen(Arc::new(Holding(Arc::clone(&inner))));
            let mut threads = Vec::new();
            let writer = Arc::clone(&inner);
            match std::thread::Builder::new()
                .name("jevgate-remote-presence".into())
                .spawn(move || writer.record_presence())
            {
                Ok(t) => threads.push(t),
                Err(_) => log::error!("the remote device presence thread could not be started"),
            }
            Ok(Remote {
                inner,
                threads: Mutex::new(threads),
            })
        }

        /// The device as the fleet knows it (a device that connected to some process once and
        /// was not unpaired since), with the other live process holding its connection now.
        pub(crate) fn known(&self, device: &str) -> Result<Option<Elsewhere>> {
            Ok(self
                .inner
                .rows("device_id = $1", device)?
                .into_iter()
                .next())
        }

        /// `owner`'s devices as the fleet knows them (see [`Remote::known`]).
        pub(crate) fn known_of(&self, owner: &str) -> Result<Vec<Elsewhere>> {
            self.inner.rows("owner = $1", owner)
        }

        /// The executor carrying commands for `device` to `process`.
        pub(crate) fn executor(&self, device: &str, process: String) -> Arc<dyn ToolExecutor> {
            Arc::new(RemoteDevice {
                inner: Arc::clone(&self.inner),
                device: device.to_string(),
                process,
            })
        }

        /// The periodic cleanup of what dead processes left (see [`Inner::prune_dead`]), now.
        pub(crate) fn prune_dead(&self) -> Result<(u64, u64)> {
            self.inner.prune_dead()
        }

        /// An autopilot line for `device` (`None`: the run ended) when another live process
        /// holds its connection: told to that process (NOTIFY `progress <holder> <device>
        /// +<line>` or `-`, no row), whose hub shows it to the worker as if it were its own run.
        /// The line is cut to [`PROGRESS_LINE_CHARS`] first. Best effort, like the line itself:
        /// a store error is logged by code and dropped, never delays the run.
        pub(crate) fn show_progress(&self, device: &str, line: Option<&str>) {
            let process = match self.known(device) {
                Ok(Some(Elsewhere {
                    process: Some(p), ..
                })) => p,
                Ok(_) => return,
                Err(e) => {
                    log::warn!("remote: an autopilot line was not carried: {}", e.code());
                    return;
                }
            };
            let rest = match line {
                Some(l) => format!(
                    "{device} +{}",
                    l.chars().take(PROGRESS_LINE_CHARS).collect::<String>()
                ),
                None => format!("{device} -"),
            };
            if let Err(e) =
                self.inner
                    .mailbox
                    .tell("carry an autopilot line", &process, "progress", &rest)
            {
                log::warn!("remote: an autopilot line was not carried: {}", e.code());
            }
        }

        /// Stops the threads and removes this process's connection rows. Idempotent.
        pub(crate) fn close(&self) {
            if self.inner.stop.swap(true, Ordering::AcqRel) {
                return;
            }
            self.inner.announced.notify_all();
            self.inner.mailbox.close();
            let threads: Vec<JoinHandle<()>> = self.threads.lock().drain(..).collect();
            let me = std::thread::current().id();
            for t in threads {
                if t.thread().id() != me {
                    let _ = t.join();
                }
            }
            let me = self.inner.process.clone();
            let gone = self
                .inner
                .store
                .tx("forget this process's connections", |tx, _| {
                    tx.execute(
                        "UPDATE jevgate_device_connections SET process_id = NULL
                      WHERE process_id = $1",
                        &[&me],
                    )?;
                    Ok(())
                });
            if let Err(e) = gone {
                log::warn!("remote: connections not removed: {}", e.code());
            }
        }
    }

    impl Drop for Remote {
        fn drop(&mut self) {
            self.close();
        }
    }

    impl Inner {
        /// The fleet's device rows filtered by `filter` on `value`, each with the other live
        /// process holding its connection (`None`: connected nowhere else alive). Only paired
        /// devices: a row an unpair raced with (a connection recorded as it was unpaired) is
        /// never a device.
        fn rows(&self, filter: &str, value: &str) -> Result<Vec<Elsewhere>> {
            let sql = format!(
                "SELECT c.device_id, c.process_id, c.owner, c.name, c.capability,
                        c.last_protocol, c.connected_at, p.heartbeat_at
                   FROM jevgate_device_connections c
                   LEFT JOIN jevgate_processes p ON p.process_id = c.process_id
                  WHERE c.{filter}
                    AND EXISTS (SELECT 1 FROM devices d WHERE d.device_id = c.device_id)
                  ORDER BY c.device_id LIMIT 256"
            );
            let me = self.process.clone();
            self.store.tx("find a device's connection", |tx, clock| {
                let rows = tx.query(sql.as_str(), &[&value])?;
                let now = clock.now_ms(tx)?;
                Ok(rows
                    .into_iter()
                    .map(|r| {
                        let process: Option<String> = r.get(1);
                        let alive = r
                            .get::<_, Option<i64>>(7)
                            .is_some_and(|beat| is_alive(beat, now, DEAD_AFTER));
                        Elsewhere {
                            process: process.filter(|p| alive && *p != me),
                            record: DeviceRecord {
                                id: r.get(0),
                                owner: r.get(2),
                                name: r.get(3),
                                capability: Capability::from_stored(&r.get::<_, String>(4)),
                                browser: None,
                                last_protocol: r
                                    .get::<_, Option<i64>>(5)
                                    .map(|p| u64::try_from(p).unwrap_or(0)),
                                paired_at: r.get(6),
                                last_seen_at: None,
                            },
                        }
                    })
                    .collect())
            })
        }

        /// Writes the queued connection changes in order until stopped.
        fn record_presence(&self) {
            loop {
                let next = {
                    let mut q = self.announce.lock();
                    while q.is_empty() && !self.stop.load(Ordering::Acquire) {
                        self.announced.wait_for(&mut q, Duration::from_secs(1));
                    }
                    if self.stop.load(Ordering::Acquire) {
                        return;
                    }
                    q.pop_front()
                };
                let Some((device, record)) = next else {
                    continue;
                };
                let me = self.process.clone();
                let written = self.store.tx("record a device connection", |tx, clock| {
                    match &record {
                        Presence::Here(r) => {
                            let now = clock.now_ms(tx)?;
                            let capability = r.capability.as_str();
                            let protocol = r.last_protocol.map(|p| i64::try_from(p).unwrap_or(0));
                            tx.execute(
                                "INSERT INTO jevgate_device_connections
                                   (device_id, process_id, owner, name, capability, last_protocol,
                                    connected_at)
                                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                                 ON CONFLICT (device_id) DO UPDATE SET process_id = $2, owner = $3,
                                   name = $4, capability = $5, last_protocol = $6,
                                   connected_at = $7",
                                &[
                                    &device,
                                    &me,
                                    &r.owner,
                                    &r.name,
                                    &capability,
                                    &protocol,
                                    &now,
                                ],
                            )?;
                        }
                        Presence::Left => {
                            tx.execute(
                                "UPDATE jevgate_device_connections SET process_id = NULL
                                  WHERE device_id = $1 AND process_id = $2",
                                &[&device, &me],
                            )?;
                        }
                        Presence::Unpaired => {
                            tx.execute(
                                "DELETE FROM jevgate_device_connections WHERE device_id = $1",
                                &[&device],
                            )?;
                        }
                    }
                    Ok(())
                });
                if let Err(e) = written {
                    log::warn!("remote: a device connection was not recorded: {}", e.code());
                }
            }
        }

        /// After a (re)connection of the listener: commands cancelled meanwhile are cancelled
        /// here and this process's connections are recorded afresh (the mailbox wakes every
        /// waiter and runs the queued rows).
        fn resync(&self, client: &mut postgres::Client) {
            self.check_credentials(client, None);
            let running: Vec<i64> = self.running.lock().keys().copied().collect();
            if !running.is_empty() {
                if let Ok(rows) = client.query(
                    "SELECT id FROM jevgate_remote_commands WHERE id = ANY($1) AND state = 'cancelled'",
                    &[&running],
                ) {
                    let running = self.running.lock();
                    for r in rows {
                        if let Some(t) = running.get(&r.get::<_, i64>(0)) {
                            t.cancel();
                        }
                    }
                }
            }
            let here: Vec<Announce> = self
                .here
                .lock()
                .iter()
                .map(|(d, r)| (d.clone(), Presence::Here(r.clone())))
                .collect();
            let mut q = self.announce.lock();
            q.extend(here);
            self.announced.notify_all();
        }

        /// `device` was unpaired or re-paired somewhere in the fleet (`None`: any may have been,
        /// after a reconnection of the listener): each connection held here whose device row
        /// is gone, or whose pairing is not the one it authenticated with (another
        /// `paired_at`), closes with 1008 `DEVICE_UNPAIRED`, as a local unpair closes it. An
        /// unreadable registry closes nothing (the next reconnection checks again).
        fn check_credentials(&self, client: &mut postgres::Client, device: Option<&str>) {
            let here: Vec<(String, i64)> = self
                .here
                .lock()
                .iter()
                .filter(|(d, _)| device.is_none_or(|x| x == d.as_str()))
                .map(|(d, r)| (d.clone(), r.paired_at))
                .collect();
            if here.is_empty() {
                return;
            }
            let ids: Vec<&str> = here.iter().map(|(d, _)| d.as_str()).collect();
            let Ok(rows) = client.query(
                "SELECT device_id, paired_at FROM devices WHERE device_id = ANY($1)",
                &[&ids],
            ) else {
                return;
            };
            let current: HashMap<String, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            let Some(hub) = self.hub.upgrade() else {
                return;
            };
            for (d, paired_at) in here {
                if current.get(&d) != Some(&paired_at) {
                    log::info!("device {d} unpaired or re-paired elsewhere: its connection closes");
                    hub.disconnect(&d, 1008, "DEVICE_UNPAIRED");
                }
            }
        }

        /// The periodic cleanup (about every minute, on the listener's thread): deletes the
        /// command rows addressed to this process whose deadline passed more than
        /// [`KEEP_ENDED`] ago (never one being run: those are `sent` until answered), then
        /// [`Inner::prune_dead`].
        fn prune(&self, client: &mut postgres::Client) {
            let Ok(now) = self.store.db_clock().now_ms(client) else {
                return;
            };
            let before = now.saturating_sub(ms(KEEP_ENDED));
            if client
                .execute(
                    "DELETE FROM jevgate_remote_commands
                      WHERE to_process = $1 AND state <> 'sent'
                        AND created_at + deadline_ms < $2",
                    &[&self.process, &before],
                )
                .is_err()
            {
                log::warn!("remote: ended commands were not pruned");
            }
            if let Err(e) = self.prune_dead() {
                log::warn!(
                    "remote: a dead process's rows were not pruned: {}",
                    e.code()
                );
            }
        }

        /// What a process that died (no liveness row, or none fresh within `DEAD_AFTER` on
        /// the database clock) left behind, in bounded batches of [`PRUNE_BATCH`]: the command
        /// rows addressed to it whose deadline passed more than [`KEEP_ENDED`] ago, whatever
        /// their state (nobody will answer or take them; their callers stopped waiting at the
        /// deadline), and its claim on device connections (the row stays: it is how the
        /// fleet knows the device; it reads "connected nowhere" as before). Returns how many
        /// command rows and connections were pruned.
        pub(super) fn prune_dead(&self) -> Result<(u64, u64)> {
            self.store
                .tx("prune a dead process's device rows", |tx, clock| {
                    let now = clock.now_ms(tx)?;
                    let alive_since = now.saturating_sub(ms(DEAD_AFTER));
                    let ended_before = now.saturating_sub(ms(KEEP_ENDED));
                    let commands = tx.execute(
                        "DELETE FROM jevgate_remote_commands WHERE id IN (
                       SELECT c.id FROM jevgate_remote_commands c
                        WHERE c.created_at + c.deadline_ms < $1
                          AND NOT EXISTS (SELECT 1 FROM jevgate_processes p
                                           WHERE p.process_id = c.to_process
                                             AND p.heartbeat_at > $2)
                        ORDER BY c.id LIMIT $3)",
                        &[&ended_before, &alive_since, &PRUNE_BATCH],
                    )?;
                    let connections = tx.execute(
                        "UPDATE jevgate_device_connections SET process_id = NULL
                      WHERE device_id IN (
                        SELECT c.device_id FROM jevgate_device_connections c
                         WHERE c.process_id IS NOT NULL
                           AND NOT EXISTS (SELECT 1 FROM jevgate_processes p
                                            WHERE p.process_id = c.process_id
                                              AND p.heartbeat_at > $1)
                         ORDER BY c.device_id LIMIT $2)",
                        &[&alive_since, &PRUNE_BATCH],
                    )?;
                    Ok((commands, connections))
                })
        }

        /// Holder side: runs command `id` on its own thread (at most [`MAX_RUNNING`] at once).
        fn spawn_run(self: &Arc<Self>, id: i64) {
            let token = CancelToken::new();
            {
                let mut running = self.running.lock();
                if running.contains_key(&id) {
                    return;
                }
                if running.len() >= MAX_RUNNING {
                    drop(running);
                    self.finish(id, &Err(busy()));
                    return;
                }
                running.insert(id, token.clone());
            }
            let me = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("jevgate-remote-run".into())
                .spawn(move || {
                    me.run(id, &token);
                    me.running.lock().remove(&id);
                });
            if spawned.is_err() {
                self.running.lock().remove(&id);
                self.finish(id, &Err(busy()));
            }
        }

        /// Takes command `id` (`queued` → `sent`, once), runs it through the hub as a local
        /// call, and writes its answer.
        fn run(&self, id: i64, cancel: &CancelToken) {
            // Never a command whose deadline passed (its caller gave up or died): taking it
            // late would run what nobody waits for.
            let taken = self
                .mailbox
                .take(
                    id,
                    "created_at + deadline_ms > $3",
                    "device_id, tool, args, deadline_ms",
                )
                .map(|row| {
                    row.map(|r| {
                        (
                            r.get::<_, String>(0),
                            r.get::<_, String>(1),
                            r.get::<_, String>(2),
                            r.get::<_, i64>(3),
                        )
                    })
                });
            let (device, tool, args, deadline_ms) = match taken {
                Ok(Some(t)) => t,
                Ok(None) => return,
                Err(e) => {
                    log::warn!("remote: a command could not be taken: {}", e.code());
                    return;
                }
            };
            let answer = (|| {
                let args: Value = serde_json::from_str(&args).map_err(|_| {
                    WorkerFailure::new("execution_failed", "the carried arguments are unreadable")
                })?;
                let conn = self
                    .hub
                    .upgrade()
                    .and_then(|h| h.get(&device))
                    .ok_or_else(offline)?;
                let deadline = Duration::from_millis(u64::try_from(deadline_ms).unwrap_or(0));
                conn.send(&tool, &args, deadline, cancel).map_err(|f| match f {
                    SendFailure::Answered(f) => f,
                    SendFailure::Offline => offline(),
                    SendFailure::Cancelled { written } => WorkerFailure {
                        not_sent: !written,
                        ..WorkerFailure::new("cancelled", "the command was cancelled")
                    },
                    SendFailure::TimedOut { written } => WorkerFailure {
                        not_sent: !written,
                        ..WorkerFailure::new(
                            "timed_out",
                            format!(
                                "the command did not finish within {deadline_ms} ms and was cancelled; it may have partly run"
                            ),
                        )
                    },
                    SendFailure::Lost => lost(),
                })
            })();
            self.finish(id, &answer);
        }

        /// Writes command `id`'s answer (unless the caller cancelled it) and tells the caller.
        fn finish(&self, id: i64, answer: &std::result::Result<Value, WorkerFailure>) {
            let mut text = match answer {
                Ok(v) => serde_json::json!({ "ok": v }).to_string(),
                Err(f) => failure_json(f).to_string(),
            };
            if text.len() > MAX_CARRIED_BYTES {
                text = failure_json(&WorkerFailure::new(
                    super::super::executor::RESULT_CAP_EXCEEDED,
                    "the browser's answer is larger than a channel frame may be",
                ))
                .to_string();
            }
            let written = self.mailbox.answer(id, &text);
            if let Err(e) = written {
                log::warn!("remote: a command's answer was not written: {}", e.code());
            }
        }
    }

    /// The holder's side of the mailbox: each queued command runs on its own thread.
    struct Holding(Arc<Inner>);

    impl Holder for Holding {
        fn run(&self, id: i64) {
            self.0.spawn_run(id);
        }
        fn cancel(&self, id: i64) {
            if let Some(token) = self.0.running.lock().get(&id) {
                token.cancel();
            }
        }
        fn reconnected(&self, client: &mut postgres::Client) {
            self.0.resync(client);
        }
        fn prune(&self, client: &mut postgres::Client) {
            self.0.prune(client);
        }
        fn event(&self, client: &mut postgres::Client, kind: &str, rest: &str) {
            // A device unpaired or re-paired by any process: its connection here, if any, is
            // checked against its current pairing.
            if let Some(device) = UNPAIRED
                .strip_suffix(' ')
                .filter(|k| *k == kind)
                .map(|_| rest)
            {
                self.0.check_credentials(client, Some(device));
                return;
            }
            // An autopilot line another process's run shows on a device connected here.
            if kind != "progress" {
                return;
            }
            let Some((to, rest)) = rest.split_once(' ') else {
                return;
            };
            if to != self.0.process {
                return;
            }
            let Some((device, line)) = rest.split_once(' ') else {
                return;
            };
            let line = match line.strip_prefix('+') {
                Some(l) => Some(l),
                None if line == "-" => None,
                None => return,
            };
            if let Some(hub) = self.0.hub.upgrade() {
                if hub.online(device) {
                    hub.set_progress(device, line);
                }
            }
        }
    }

    fn offline() -> WorkerFailure {
        WorkerFailure {
            code: "DEVICE_OFFLINE".into(),
            message: "the browser went offline before the command was delivered".into(),
            not_sent: true,
        }
    }

    fn busy() -> WorkerFailure {
        WorkerFailure {
            code: "DEVICE_OFFLINE".into(),
            message: "the process holding the browser's connection is too busy; the command was not delivered".into(),
            not_sent: true,
        }
    }

    fn lost() -> WorkerFailure {
        WorkerFailure::new(
            OUTCOME_UNKNOWN,
            "the browser disconnected while running the command; it may or may not have taken effect, and it was not retried",
        )
    }

    /// Caller side: the executor of a device connected to `process`.
    struct RemoteDevice {
        inner: Arc<Inner>,
        device: String,
        process: String,
    }

    fn store_failure(e: &crate::Error) -> WorkerFailure {
        WorkerFailure {
            code: "DEVICE_OFFLINE".into(),
            message: format!(
                "the shared store could not carry the command to the browser's process ({}); it was not delivered",
                e.code()
            ),
            not_sent: true,
        }
    }

    /// A result row's text as the executor's answer.
    fn answer(text: &str) -> std::result::Result<Value, WorkerFailure> {
        let bad = || WorkerFailure::new("execution_failed", "the carried answer is unreadable");
        let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
        if let Some(ok) = v.get("ok") {
            return Ok(ok.clone());
        }
        let err = v.get("err").ok_or_else(bad)?;
        let code = err.get("code").and_then(Value::as_str).unwrap_or("");
        let message = err.get("message").and_then(Value::as_str).unwrap_or("");
        let mut f = match code {
            "DEVICE_OFFLINE" | OUTCOME_UNKNOWN | "cancelled" | "timed_out" => {
                WorkerFailure::new(code, message)
            }
            _ => WorkerFailure::from_worker(code, message),
        };
        f.not_sent = err.get("notSent").and_then(Value::as_bool).unwrap_or(false);
        Err(f)
    }

    impl ToolExecutor for RemoteDevice {
        fn execute(
            &self,
            tool: &str,
            args: &Value,
            deadline: Duration,
            cancel: &CancelToken,
        ) -> std::result::Result<Value, WorkerFailure> {
            let args = args.to_string();
            if args.len() > MAX_CARRIED_BYTES {
                return Err(WorkerFailure {
                    not_sent: true,
                    ..WorkerFailure::new(
                        "execution_failed",
                        "the command's arguments are larger than a channel frame may be",
                    )
                });
            }
            let clock = self.inner.hub.upgrade().map(|h| Arc::clone(h.clock()));
            let Some(clock) = clock else {
                return Err(offline());
            };
            let mailbox = &self.inner.mailbox;
            let deadline_ms = ms(deadline);
            let posted = mailbox.post(
                "carry a command",
                &self.process,
                "device_id, tool, args, deadline_ms",
                &[&self.device, &tool, &args, &deadline_ms],
            );
            let wait = match posted {
                Ok(wait) => wait,
                Err(e) => return Err(store_failure(&e)),
            };
            let id = wait.id();
            let registration = cancel.on_cancel(wait.waker());
            let end = clock.now() + deadline.saturating_add(GRACE);
            let outcome = loop {
                match mailbox.read(id) {
                    Ok(Seen::Done(text)) => break Some(answer(&text)),
                    Ok(Seen::HolderGone { taken }) => {
                        // Never re-sent: taken is unknown, untaken is not delivered.
                        let _ = mailbox.cancel(id, &self.process);
                        break Some(Err(if taken { lost() } else { offline() }));
                    }
                    Ok(Seen::Ended) => break Some(Err(offline())),
                    Ok(Seen::Pending) | Err(_) => {}
                }
                if cancel.is_cancelled() {
                    break None;
                }
                let Some(slice) = wait_slice(&*clock, end) else {
                    break None;
                };
                wait.pause(slice);
            };
            drop(registration);
            drop(wait);
            if let Some(outcome) = outcome {
                return outcome;
            }
            // Cancelled or out of time: the row is cancelled (the holder cancels its command)
            // unless its answer came first.
            let written = match mailbox.cancel(id, &self.process) {
                Ok(Cancelled::Done(text)) => return answer(&text),
                Ok(Cancelled::Dropped { taken }) => taken,
                Err(_) => true,
            };
            let mut f = if cancel.is_cancelled() {
                WorkerFailure::new(
                    "cancelled",
                    "a person took control of this browser back and the command was cancelled; do not retry unless asked to",
                )
            } else {
                WorkerFailure::new(
                    "timed_out",
                    format!(
                        "the command did not finish within {} ms and was cancelled; it may have partly run",
                        deadline.as_millis()
                    ),
                )
            };
            f.not_sent = !written;
            Err(f)
        }
    }
}

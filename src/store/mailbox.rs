//! The fleet's mailbox of carried calls (issue 23 items 3 and 4): one process writes a call
//! for another as a row of a table and NOTIFYs it; the other's listener takes the row once,
//! runs it, writes the answer and NOTIFYs the caller back, whose thread waits on a condition
//! variable with a bounded re-read as the fallback for a lost notification.
//!
//! Owns the mechanism only, the same for every table that uses it (`jevgate_remote_commands`
//! for device commands, `device/remote.rs`; `jevgate_task_calls` for task control calls,
//! `task/carry.rs`): the row's life — `queued` (the caller's insert, NOTIFY `run <holder>
//! <id>`), the taken state (its holder's one conditional UPDATE from `queued`, before anything
//! runs), `done` with the answer (NOTIFY `done <caller> <id>`), or the dropped state (the
//! caller's conditional UPDATE: a withdrawal from `queued` only, or a cancellation from
//! `queued` or taken, NOTIFY `cancel <holder> <id>`) — the waiters, the listener thread (its
//! re-scan of queued rows about every second and its periodic cleanup call), and the reading
//! of a row against its holder's liveness row on the database clock. A row is never re-queued:
//! a holder that dies after taking a row leaves its outcome unknown to the caller.
//!
//! It never decides what a call means, what its answer is, or which error a caller reports
//! (the modules above do), and never logs a call or an answer (they may hold a person's words
//! or page content): codes and ids only.

use super::pg::{listen_here, DbClock, PgStore, TxError};
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use postgres::types::ToSql;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The caller's fallback re-read of its row.
pub(crate) const REREAD: Duration = Duration::from_millis(250);
/// The listener's wait before it connects again.
const RETRY: Duration = Duration::from_millis(500);
/// Rows looked at per scan of the queued ones.
const SCAN: i64 = 64;

/// One table of carried calls and its NOTIFY channel.
#[derive(Debug)]
pub(crate) struct Kind {
    /// The table (its columns: `id`, `from_process`, `to_process`, `state`, `result`,
    /// `created_at`, and the call's own).
    pub(crate) table: &'static str,
    /// The NOTIFY channel.
    pub(crate) channel: &'static str,
    /// The state of a row its holder took.
    pub(crate) taken: &'static str,
    /// The state of a row its caller dropped (withdrew or cancelled).
    pub(crate) dropped: &'static str,
    /// What a row is, for errors and the listener thread's name (`jevgate-<thread>`).
    pub(crate) noun: &'static str,
    pub(crate) thread: &'static str,
}

/// What a caller read of its row.
#[derive(Debug)]
pub(crate) enum Seen {
    /// Not answered yet; its holder is alive.
    Pending,
    /// Answered: the answer's text.
    Done(String),
    /// Its holder is dead or gone (on the database clock); whether it had taken the row.
    HolderGone { taken: bool },
    /// Dropped (by its caller) or gone.
    Ended,
}

/// How a cancellation found a row.
#[derive(Debug)]
pub(crate) enum Cancelled {
    /// It had been answered meanwhile: the answer's text.
    Done(String),
    /// Dropped now (or before); whether its holder had taken it.
    Dropped { taken: bool },
}

/// The holder's side of a table: what its listener does with the rows addressed here.
pub(crate) trait Holder: Send + Sync + 'static {
    /// Row `id` is queued for this process (oldest first; it may already be running).
    fn run(&self, id: i64);
    /// The caller cancelled row `id`.
    fn cancel(&self, _id: i64) {}
    /// The listener (re)connected: what a holder re-checks before the queued rows run.
    fn reconnected(&self, _client: &mut postgres::Client) {}
    /// The periodic cleanup, about every minute, on the listener's connection.
    fn prune(&self, client: &mut postgres::Client);
    /// A notice on the channel that is not about a row: `kind` (its first word) is neither
    /// `run`, `cancel` nor `done`, `rest` what followed it. Addressed notices ([`Mailbox::tell`])
    /// are handed over only when addressed here, `rest` starting after the process id; other
    /// modules' notices on the same channel (e.g. `unpaired <device>`) come as they are.
    fn event(&self, _client: &mut postgres::Client, _kind: &str, _rest: &str) {}
}

#[derive(Default)]
struct Waiter {
    woken: Mutex<bool>,
    ready: Condvar,
}

impl Waiter {
    fn wake(&self) {
        *self.woken.lock() = true;
        self.ready.notify_all();
    }
}

/// This process's mailbox on one table: both sides, caller and holder.
pub(crate) struct Mailbox {
    kind: &'static Kind,
    store: Arc<PgStore>,
    process: String,
    /// When a holder counts as dead: no heartbeat for this long on the database clock.
    dead_after: Duration,
    waiters: Mutex<HashMap<i64, Arc<Waiter>>>,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox")
            .field("table", &self.kind.table)
            .finish_non_exhaustive()
    }
}

/// A caller's registration for the answer of one row; it ends when dropped.
pub(crate) struct Wait<'a> {
    mailbox: &'a Mailbox,
    id: i64,
    waiter: Arc<Waiter>,
}

impl Wait<'_> {
    /// The row.
    pub(crate) fn id(&self) -> i64 {
        self.id
    }

    /// Wakes this wait now (e.g. from a cancel token's hook).
    pub(crate) fn waker(&self) -> impl Fn() + Send + Sync + 'static {
        let w = Arc::clone(&self.waiter);
        move || w.wake()
    }

    /// Blocks until the row may have changed: a notification, a wake, or at most `slice`
    /// (capped at [`REREAD`]).
    pub(crate) fn pause(&self, slice: Duration) {
        let mut woken = self.waiter.woken.lock();
        if !*woken {
            self.waiter.ready.wait_for(&mut woken, slice.min(REREAD));
        }
        *woken = false;
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.mailbox.waiters.lock().remove(&self.id);
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Mailbox {
    /// This process's mailbox on `kind`'s table; [`Mailbox::listen`] starts its holder side.
    pub(crate) fn new(
        kind: &'static Kind,
        store: Arc<PgStore>,
        process: String,
        dead_after: Duration,
    ) -> Arc<Mailbox> {
        Arc::new(Mailbox {
            kind,
            store,
            process,
            dead_after,
            waiters: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        })
    }

    /// The shared store.
    pub(crate) fn store(&self) -> &Arc<PgStore> {
        &self.store
    }

    /// When a holder counts as dead (no heartbeat for this long on the database clock).
    pub(crate) fn dead_after(&self) -> Duration {
        self.dead_after
    }

    /// This process's id.
    pub(crate) fn process(&self) -> &str {
        &self.process
    }

    fn corrupt(&self) -> TxError {
        TxError::Jevgate(Error::StoreCorrupt {
            reason: format!("{} row is unreadable", self.kind.noun),
        })
    }

    /// Starts the listener running the rows addressed to this process with `holder`.
    pub(crate) fn listen(self: &Arc<Self>, holder: Arc<dyn Holder>) {
        let me = Arc::clone(self);
        let config = self.store.config().clone();
        let spawned = std::thread::Builder::new()
            .name(format!("jevgate-{}", self.kind.thread))
            .spawn(move || {
                let mut rounds = 0u32;
                listen_here(
                    &config,
                    me.kind.channel,
                    &me.stop,
                    RETRY,
                    &mut |client, payload| match payload {
                        Some(p) => me.notified(client, &*holder, p),
                        None => {
                            for w in me.waiters.lock().values() {
                                w.wake();
                            }
                            holder.reconnected(client);
                            me.run_queued(client, &*holder);
                        }
                    },
                    &mut |client| {
                        // A lost notification: the queued rows, about every second (a tick
                        // is a round of the listener, about 100 ms).
                        rounds = rounds.wrapping_add(1);
                        if rounds.is_multiple_of(10) {
                            me.run_queued(client, &*holder);
                        }
                        // About every minute.
                        if rounds.is_multiple_of(600) {
                            holder.prune(client);
                        }
                    },
                );
            });
        match spawned {
            Ok(t) => *self.thread.lock() = Some(t),
            Err(_) => log::error!("the {} listener could not be started", self.kind.thread),
        }
    }

    /// Stops the listener. Idempotent.
    pub(crate) fn close(&self) {
        if self.stop.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(t) = self.thread.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }

    /// One payload: `run|cancel <holder> <id>`, `done <caller> <id>`, or an event (see
    /// [`Holder::event`]).
    fn notified(&self, client: &mut postgres::Client, holder: &dyn Holder, payload: &str) {
        let (kind, after) = payload.split_once(' ').unwrap_or((payload, ""));
        if !matches!(kind, "run" | "cancel" | "done") {
            holder.event(client, kind, after);
            return;
        }
        let Some((process, id)) = after.split_once(' ') else {
            return;
        };
        if process != self.process {
            return;
        }
        let Ok(id) = id.parse::<i64>() else { return };
        match kind {
            // In row order: a later row never overtakes an earlier one.
            "run" => self.run_queued(client, holder),
            "cancel" => holder.cancel(id),
            "done" => {
                if let Some(w) = self.waiters.lock().get(&id) {
                    w.wake();
                }
            }
            _ => {}
        }
    }

    /// Hands the rows queued for this process to `holder`, oldest first.
    fn run_queued(&self, client: &mut postgres::Client, holder: &dyn Holder) {
        let sql = format!(
            "SELECT id FROM {} WHERE to_process = $1 AND state = 'queued' ORDER BY id LIMIT {SCAN}",
            self.kind.table
        );
        let Ok(rows) = client.query(sql.as_str(), &[&self.process]) else {
            return;
        };
        for r in rows {
            holder.run(r.get(0));
        }
    }

    /// Tells process `to` something that is not a call (no row, no answer): NOTIFY `<kind>
    /// <to> <rest>`, handed to its holder's [`Holder::event`] (`rest` still starting with `<to>
    /// `: the holder checks it is addressed to it). Lost if `to` is not listening
    /// right now. `kind` is one word other than `run`, `cancel` and `done`; the payload must
    /// stay under PostgreSQL's 8,000 bytes (the caller bounds `rest`).
    pub(crate) fn tell(&self, op: &str, to: &str, kind: &str, rest: &str) -> Result<()> {
        debug_assert!(!matches!(kind, "run" | "cancel" | "done") && !kind.contains(' '));
        let channel = self.kind.channel;
        let payload = format!("{kind} {to} {rest}");
        self.store.tx(op, |tx, _clock: DbClock| {
            tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload])?;
            Ok(())
        })
    }

    /// Caller: writes a call for process `to` — `columns` (comma-separated, after the
    /// mailbox's own) with `values` as `$4`… — NOTIFYs it, and registers the wait for its
    /// answer.
    pub(crate) fn post(
        &self,
        op: &str,
        to: &str,
        columns: &str,
        values: &[&(dyn ToSql + Sync)],
    ) -> Result<Wait<'_>> {
        let marks: Vec<String> = (0..values.len()).map(|k| format!("${}", k + 4)).collect();
        let sql = format!(
            "INSERT INTO {} (from_process, to_process, created_at, {columns})
             VALUES ($1, $2, $3, {}) RETURNING id",
            self.kind.table,
            marks.join(", ")
        );
        let (me, channel) = (self.process.as_str(), self.kind.channel);
        let id = self.store.tx(op, |tx, clock: DbClock| {
            let now = clock.now_ms(tx)?;
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&me, &to, &now];
            params.extend_from_slice(values);
            let id: i64 = tx.query_one(sql.as_str(), &params)?.get(0);
            tx.execute(
                "SELECT pg_notify($1, $2)",
                &[&channel, &format!("run {to} {id}")],
            )?;
            Ok(id)
        })?;
        let waiter = Arc::new(Waiter::default());
        self.waiters.lock().insert(id, Arc::clone(&waiter));
        Ok(Wait {
            mailbox: self,
            id,
            waiter,
        })
    }

    /// Caller: row `id` as it is now, with its holder's liveness.
    pub(crate) fn read(&self, id: i64) -> Result<Seen> {
        let sql = format!(
            "SELECT c.state, c.result, p.heartbeat_at FROM {} c
               LEFT JOIN jevgate_processes p ON p.process_id = c.to_process
              WHERE c.id = $1",
            self.kind.table
        );
        let (kind, dead_after) = (self.kind, ms(self.dead_after));
        self.store.tx("read a carried call", |tx, clock| {
            let Some(row) = tx.query_opt(sql.as_str(), &[&id])? else {
                return Ok(Seen::Ended);
            };
            let state: String = row.get(0);
            if state == "done" {
                let text = row.get::<_, Option<String>>(1);
                return Ok(Seen::Done(text.ok_or_else(|| self.corrupt())?));
            }
            if state == kind.dropped {
                return Ok(Seen::Ended);
            }
            let now = clock.now_ms(tx)?;
            // Alive: a heartbeat less than `dead_after` ago (`lease/pg.rs`, `is_alive`).
            let alive = row
                .get::<_, Option<i64>>(2)
                .is_some_and(|beat| now.saturating_sub(beat) < dead_after);
            Ok(match alive {
                true => Seen::Pending,
                false => Seen::HolderGone {
                    taken: state == kind.taken,
                },
            })
        })
    }

    /// Caller: drops row `id` if its holder has not taken it: `true` when dropped now.
    pub(crate) fn withdraw(&self, id: i64) -> Result<bool> {
        let sql = format!(
            "UPDATE {} SET state = $2 WHERE id = $1 AND state = 'queued'",
            self.kind.table
        );
        let dropped = self.kind.dropped;
        self.store.tx("withdraw a carried call", |tx, _| {
            Ok(tx.execute(sql.as_str(), &[&id, &dropped])? == 1)
        })
    }

    /// Caller: drops row `id` unless it was answered, and tells its holder to stop it.
    pub(crate) fn cancel(&self, id: i64, to: &str) -> Result<Cancelled> {
        let (kind, channel) = (self.kind, self.kind.channel);
        let select = format!(
            "SELECT state, result FROM {} WHERE id = $1 FOR UPDATE",
            kind.table
        );
        let update = format!("UPDATE {} SET state = $2 WHERE id = $1", kind.table);
        self.store.tx("cancel a carried call", |tx, _| {
            let row = tx
                .query_opt(select.as_str(), &[&id])?
                .ok_or_else(|| self.corrupt())?;
            let state: String = row.get(0);
            if state == "done" {
                let text = row.get::<_, Option<String>>(1);
                return Ok(Cancelled::Done(text.ok_or_else(|| self.corrupt())?));
            }
            if state != kind.dropped {
                tx.execute(update.as_str(), &[&id, &kind.dropped])?;
                tx.execute(
                    "SELECT pg_notify($1, $2)",
                    &[&channel, &format!("cancel {to} {id}")],
                )?;
            }
            Ok(Cancelled::Dropped {
                taken: state == kind.taken,
            })
        })
    }

    /// Holder: takes row `id` once (`queued` → taken) when `fresh` (an SQL condition on the
    /// row, `$3` being the database clock's now in milliseconds) holds, returning `returning`
    /// (a column list) of the row; `None` when it is not this process's to take now.
    pub(crate) fn take(
        &self,
        id: i64,
        fresh: &str,
        returning: &str,
    ) -> Result<Option<postgres::Row>> {
        let sql = format!(
            "UPDATE {} SET state = $4
              WHERE id = $1 AND to_process = $2 AND state = 'queued' AND ({fresh})
              RETURNING {returning}",
            self.kind.table
        );
        let (me, taken) = (self.process.as_str(), self.kind.taken);
        self.store.tx("take a carried call", |tx, clock| {
            let now = clock.now_ms(tx)?;
            Ok(tx.query_opt(sql.as_str(), &[&id, &me, &now, &taken])?)
        })
    }

    /// Holder: writes row `id`'s answer (unless its caller dropped it) and tells the caller.
    pub(crate) fn answer(&self, id: i64, text: &str) -> Result<()> {
        let sql = format!(
            "UPDATE {} SET state = 'done', result = $2
              WHERE id = $1 AND state IN ('queued', $3) RETURNING from_process",
            self.kind.table
        );
        let (taken, channel) = (self.kind.taken, self.kind.channel);
        self.store.tx("answer a carried call", |tx, _| {
            if let Some(r) = tx.query_opt(sql.as_str(), &[&id, &text, &taken])? {
                let caller: String = r.get(0);
                tx.execute(
                    "SELECT pg_notify($1, $2)",
                    &[&channel, &format!("done {caller} {id}")],
                )?;
            }
            Ok(())
        })
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        self.close();
    }
}

//! The receipt writer (R-TSK-RCPT): one thread that commits every task write of a gateway, in
//! groups.
//!
//! Owns the order and durability of task writes. A caller hands it a write and blocks until the
//! transaction holding it is committed (`synchronous=FULL`: the WAL is fsynced) — so a
//! checkpoint that returned `Ok` is on disk before its operation is dispatched. Writes that
//! arrive while a commit is in flight are committed together in the next transaction (group
//! commit: one fsync for many receipts); each runs inside its own savepoint, so one failing
//! write fails alone. The data directory is fsynced after the first commit, so the WAL file's
//! directory entry is durable too.
//!
//! It also sweeps (issue 21 defect 11): once [`Writer::retain`] set a window, a retention pass
//! rides along with a group at most every [`SWEEP_EVERY`] of the gateway's clock (sooner while
//! a pass still finds a full batch), deleting closed tasks older than the window with their
//! receipts — a bounded number per pass, walking the tasks oldest first from where the last
//! pass stopped ([`records::sweep_closed`]). It never deletes an open task or one with an
//! operation in doubt.
//!
//! On the fleet's PostgreSQL store (issue 23 item 3) a group is one transaction on the writer's
//! own connection with the same savepoint per write (none for a group of one: its failure rolls
//! the transaction back), committed synchronously; the directory fsync is the SQLite file's
//! only.
//!
//! It must never drop a write silently (a write that could not be committed returns its
//! error), never hold a caller's lock while it waits, and never see arguments, field values or
//! page content in anything it logs (it logs error codes only).

use super::engine::TaskDb;
use super::records::{self, SweepCursor};
use crate::clock::{Instant, SharedClock};
use crate::store::db::Db;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One write: runs inside the group's transaction.
pub(crate) type WriteFn = Box<dyn FnOnce(&dyn Db) -> rusqlite::Result<()> + Send>;

/// The most writes one transaction carries.
const MAX_GROUP: usize = 512;
/// How often a retention pass runs when the last one found nothing more to delete.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(600);
/// How soon the next pass runs after one that deleted a full batch (the backlog drains in
/// bounded steps between groups of receipts).
const SWEEP_AGAIN: Duration = Duration::from_secs(1);
/// The most closed tasks one pass looks at, and the most it deletes.
const SWEEP_SCAN: u32 = 256;
const SWEEP_BATCH: u32 = 64;

struct Job {
    write: WriteFn,
    done: Arc<Slot>,
}

/// Where a caller waits for its write's verdict.
#[derive(Default)]
struct Slot {
    verdict: Mutex<Option<Result<()>>>,
    ready: Condvar,
    /// Nobody waits ([`Writer::submit`]): a failure is logged (its code only).
    detached: bool,
}

impl Slot {
    fn set(&self, r: Result<()>) {
        if self.detached {
            if let Err(e) = &r {
                log::warn!("a submitted task write was not committed: {}", e.code());
            }
        }
        *self.verdict.lock() = Some(r);
        self.ready.notify_all();
    }

    fn wait(&self) -> Result<()> {
        let mut v = self.verdict.lock();
        loop {
            if let Some(r) = v.take() {
                return r;
            }
            // The writer always answers (even when it stops), so this wait ends.
            self.ready.wait(&mut v);
        }
    }
}

/// A write queued by [`Writer::submit`]: whether it committed, once the writer decided.
#[derive(Clone)]
pub(crate) struct Pending(Arc<Slot>);

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pending").field(&self.committed()).finish()
    }
}

impl Pending {
    /// `Some(true)` committed, `Some(false)` not committed, `None` not decided yet.
    pub(crate) fn committed(&self) -> Option<bool> {
        self.0.verdict.lock().as_ref().map(Result::is_ok)
    }

    /// Waits for the verdict (the writer answers every queued write, also when it stops);
    /// `true` when the write committed.
    pub(crate) fn wait(&self) -> bool {
        let mut v = self.0.verdict.lock();
        loop {
            if let Some(r) = v.as_ref() {
                return r.is_ok();
            }
            self.0.ready.wait(&mut v);
        }
    }
}

/// The retention window and the clock it is measured on.
#[derive(Clone)]
struct Retention {
    clock: SharedClock,
    window: Duration,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
    retention: Option<Retention>,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The writer thread and its queue.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl Writer {
    /// Starts the writer on `store`; `data_dir` is fsynced after the first commit.
    pub(crate) fn start(store: TaskDb, data_dir: PathBuf) -> Result<Writer> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("jevgate-receipts".into())
                .spawn(move || run(&shared, &store, &data_dir))
                .map_err(|e| Error::Internal {
                    reason: format!("cannot start the receipt writer: {}", e.kind()),
                })?
        };
        Ok(Writer {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Commits `write` (with whatever else is waiting) and returns when it is durable, or its
    /// error: `GATEWAY_CLOSED` after [`Writer::close`], `STORE_IO`/`STORE_CORRUPT` from SQLite.
    pub(crate) fn write(&self, write: WriteFn) -> Result<()> {
        let done = self.enqueue(write, false)?;
        done.wait()
    }

    /// Queues `write` without waiting: it commits with the next group — at the latest with the
    /// next [`Writer::write`], since writes commit in the order they were queued. For records
    /// whose loss in a crash is safe (an operation's result: without it the operation counts as
    /// interrupted, never as done). `GATEWAY_CLOSED` after close; a later SQLite failure is
    /// logged by code.
    pub(crate) fn submit(&self, write: WriteFn) -> Result<Pending> {
        self.enqueue(write, true).map(Pending)
    }

    /// Starts (or changes) retention: closed tasks whose last change is older than `window` on
    /// `clock`'s wall time are swept with the writer's groups, the first pass right away.
    pub(crate) fn retain(&self, clock: SharedClock, window: Duration) {
        self.shared.queue.lock().retention = Some(Retention { clock, window });
        self.shared.wake.notify_all();
    }

    /// A compare-and-set write (R-TSK-CTL): `f` reads and writes inside the group's
    /// transaction and returns a value or a typed error. On `Err` its savepoint is rolled back
    /// (nothing of it commits) and that error is returned, so a check (a revision, a command
    /// id, a queue bound) is atomic with the write it guards. A store failure wins over `f`'s
    /// value: a value is returned only once its write is durable.
    pub(crate) fn apply<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Db) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let out: Arc<Mutex<Option<Result<T>>>> = Arc::new(Mutex::new(None));
        let cell = Arc::clone(&out);
        let written = self.write(Box::new(move |tx| {
            let r = f(tx);
            let failed = r.is_err();
            *cell.lock() = Some(r);
            if failed {
                // Rolls the savepoint back; the typed error is what the caller sees.
                Err(rusqlite::Error::InvalidQuery)
            } else {
                Ok(())
            }
        }));
        let value = out.lock().take();
        match (written, value) {
            (_, Some(Err(e))) => Err(e),
            (Ok(()), Some(Ok(v))) => Ok(v),
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err(Error::Internal {
                reason: "a compare-and-set write did not run".into(),
            }),
        }
    }

    fn enqueue(&self, write: WriteFn, detached: bool) -> Result<Arc<Slot>> {
        let done = Arc::new(Slot {
            detached,
            ..Slot::default()
        });
        {
            let mut q = self.shared.queue.lock();
            if q.closed {
                return Err(Error::GatewayClosed);
            }
            q.jobs.push_back(Job {
                write,
                done: Arc::clone(&done),
            });
        }
        self.shared.wake.notify_one();
        Ok(done)
    }

    /// Commits what is queued, then stops and joins the thread. Later writes fail with
    /// `GATEWAY_CLOSED`. Idempotent.
    pub(crate) fn close(&self) {
        self.shared.queue.lock().closed = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

/// Where the retention sweep stands: when its next pass is due and where it goes on.
#[derive(Default)]
struct Sweep {
    due: Option<Instant>,
    cursor: Option<SweepCursor>,
}

impl Sweep {
    /// The pass to run with the next group, when one is due.
    fn job(
        &mut self,
        retention: &Retention,
    ) -> Option<(Job, Arc<Mutex<Option<records::SweepPass>>>)> {
        let now = retention.clock.now();
        if now < *self.due.get_or_insert(now) {
            return None;
        }
        let window_ms = i64::try_from(retention.window.as_millis()).unwrap_or(i64::MAX);
        let cutoff = retention.clock.wall_millis().saturating_sub(window_ms);
        let cursor = self.cursor.clone();
        let out = Arc::new(Mutex::new(None));
        let put = Arc::clone(&out);
        let write: WriteFn = Box::new(move |tx| {
            let pass = records::sweep_closed(tx, cutoff, cursor, SWEEP_SCAN, SWEEP_BATCH)?;
            *put.lock() = Some(pass);
            Ok(())
        });
        let done = Arc::new(Slot {
            detached: true,
            ..Slot::default()
        });
        // Not due again until this pass said how it went.
        self.due = Some(now + SWEEP_EVERY);
        Some((Job { write, done }, out))
    }

    /// Takes in how the pass went (`None`: it did not commit; tried again later from the same
    /// place).
    fn settle(&mut self, retention: &Retention, pass: Option<records::SweepPass>) {
        let now = retention.clock.now();
        match pass {
            Some(p) => {
                let more = p.deleted >= SWEEP_BATCH || p.cursor.is_some();
                if p.deleted > 0 {
                    log::debug!("retention: {} closed task(s) deleted", p.deleted);
                }
                self.cursor = p.cursor;
                self.due = Some(now + if more { SWEEP_AGAIN } else { SWEEP_EVERY });
            }
            None => self.due = Some(now + SWEEP_EVERY),
        }
    }
}

fn run(shared: &Shared, store: &TaskDb, data_dir: &std::path::Path) {
    let mut dir_synced = false;
    let mut sweep = Sweep::default();
    loop {
        let (mut group, retention) = {
            let mut q = shared.queue.lock();
            loop {
                if !q.jobs.is_empty() || q.closed {
                    break;
                }
                let Some(r) = q.retention.clone() else {
                    shared.wake.wait(&mut q);
                    continue;
                };
                let due = *sweep.due.get_or_insert(r.clock.now());
                match crate::clock::wait_slice(&*r.clock, due) {
                    // A pass is due: it goes alone.
                    None => break,
                    Some(slice) => {
                        shared.wake.wait_for(&mut q, slice);
                    }
                }
            }
            if q.jobs.is_empty() && q.closed {
                return;
            }
            let n = q.jobs.len().min(MAX_GROUP);
            let group: Vec<Job> = q.jobs.drain(..n).collect();
            (group, q.retention.clone())
        };
        // A due retention pass rides along with the group (after its writes, in its own
        // savepoint: it never fails a receipt).
        let pass = retention
            .as_ref()
            .and_then(|r| sweep.job(r))
            .map(|(job, out)| {
                let slot = Arc::clone(&job.done);
                group.push(job);
                (slot, out)
            });
        let slots: Vec<Arc<Slot>> = group.iter().map(|j| Arc::clone(&j.done)).collect();
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit_group(store, group, data_dir, &mut dir_synced)
        }));
        if ran.is_err() {
            // A write that panicked: its group is answered, the writer goes on.
            for slot in &slots {
                let mut v = slot.verdict.lock();
                if v.is_none() {
                    *v = Some(Err(Error::Internal {
                        reason: "a receipt write panicked".into(),
                    }));
                }
                slot.ready.notify_all();
            }
        }
        if let (Some(r), Some((slot, out))) = (&retention, pass) {
            let committed = slot.verdict.lock().as_ref().is_some_and(Result::is_ok);
            let result = out.lock().take().filter(|_| committed);
            sweep.settle(r, result);
        }
    }
}

/// One transaction for the group; each write in its own savepoint.
fn commit_group(store: &TaskDb, group: Vec<Job>, data_dir: &std::path::Path, synced: &mut bool) {
    // The slots are taken out first: every caller gets an answer, even for writes the
    // transaction never reached.
    let slots: Vec<Arc<Slot>> = group.iter().map(|j| Arc::clone(&j.done)).collect();
    let mut verdicts: Vec<Result<()>> = Vec::with_capacity(group.len());
    // A group of one write on PostgreSQL needs no savepoint (two round trips fewer): when the
    // write fails, the whole transaction rolls back and the write gets its own error.
    let alone = group.len() == 1 && !store.is_file();
    let mut failed_alone = false;
    let committed = store.write_group(|tx| {
        if alone {
            for job in group {
                if let Err(e) = (job.write)(tx) {
                    verdicts.push(Err(crate::store::sqlite_error("write receipt", e)));
                    failed_alone = true;
                    // Rolls the transaction back; the verdict above is what the caller sees.
                    return Err(rusqlite::Error::InvalidQuery);
                }
                verdicts.push(Ok(()));
            }
            return Ok(());
        }
        for job in group {
            // On SQLite cached statements: the savepoint pair is parsed once per connection.
            tx.batch("SAVEPOINT w")?;
            match (job.write)(tx) {
                Ok(()) => {
                    tx.batch("RELEASE w")?;
                    verdicts.push(Ok(()));
                }
                Err(e) => {
                    tx.batch("ROLLBACK TO w")?;
                    tx.batch("RELEASE w")?;
                    verdicts.push(Err(crate::store::sqlite_error("write receipt", e)));
                }
            }
        }
        Ok(())
    });
    match committed {
        Ok(()) => {
            if !*synced && store.is_file() {
                *synced = sync_dir(data_dir);
            }
            for (slot, v) in slots.iter().zip(verdicts) {
                slot.set(v);
            }
        }
        // Nothing of the lone write committed: its own error.
        Err(_) if failed_alone => {
            for (slot, v) in slots.iter().zip(verdicts) {
                slot.set(v);
            }
        }
        Err(e) => {
            log::warn!("receipt group not committed: {}", e.code());
            // Every write of the group fails; the ones the transaction never reached too.
            let code = e.code();
            for slot in &slots {
                slot.set(Err(match code {
                    "GATEWAY_CLOSED" => Error::GatewayClosed,
                    "STORE_UNAVAILABLE" => Error::StoreUnavailable {
                        reason: "commit receipts: the shared store is unreachable for now".into(),
                    },
                    _ => Error::store_io("commit receipts", code),
                }));
            }
        }
    }
}

/// fsyncs the data directory, so the WAL file's entry survives a power cut.
fn sync_dir(dir: &std::path::Path) -> bool {
    match std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        Ok(()) => true,
        Err(e) => {
            log::warn!("data directory not synced: {}", e.kind());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn r_tsk_rcpt_writes_commit_before_returning_and_a_failing_write_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let w = Writer::start(TaskDb::file(Arc::clone(&store)), dir.path().to_path_buf()).unwrap();
        w.write(Box::new(|tx| {
            tx.batch("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        }))
        .unwrap();
        let w = Arc::new(w);
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let w = Arc::clone(&w);
                std::thread::spawn(move || {
                    for j in 0..50 {
                        let x = i * 1000 + j;
                        w.write(Box::new(move |tx| {
                            tx.execute("INSERT INTO t (x) VALUES (?1)", crate::store::db::dbp![x])
                                .map(|_| ())
                        }))
                        .unwrap();
                    }
                    // A duplicate key fails alone; the others of its group still commit.
                    let e = w
                        .write(Box::new(move |tx| {
                            tx.execute(
                                "INSERT INTO t (x) VALUES (?1)",
                                crate::store::db::dbp![i * 1000],
                            )
                            .map(|_| ())
                        }))
                        .unwrap_err();
                    assert_eq!(e.code(), "STORE_IO");
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n: i64 = store
            .read(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(n, 400);
        w.close();
        assert_eq!(
            w.write(Box::new(|_| Ok(()))).unwrap_err().code(),
            "GATEWAY_CLOSED"
        );
    }

    // Issue 23 item 3: on the fleet's PostgreSQL store too, a write commits before it returns
    // and a failing write fails alone — in a group of many (its savepoint) and alone (its
    // transaction), with nothing of it committed.
    #[cfg(feature = "postgres")]
    #[test]
    fn r_tsk_rcpt_on_postgres_a_failing_write_fails_alone() {
        let Some(url) = std::env::var("JEVGATE_PG_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            let require = std::env::var("JEVGATE_REQUIRE_PG").is_ok_and(|v| v == "1");
            assert!(
                !require,
                "JEVGATE_REQUIRE_PG=1 but JEVGATE_PG_URL is not set"
            );
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: JEVGATE_PG_URL is not set");
            return;
        };
        let pg = crate::store::SharedStore(Arc::new(
            crate::store::pg::PgStore::open_fresh(&url).unwrap(),
        ));
        let member = super::super::engine::Member {
            process: "proc_writer_test".into(),
            dead_after_ms: 10_000,
        };
        let db = TaskDb::shared(&pg, member).unwrap();
        let w = Arc::new(Writer::start(db.clone(), std::env::temp_dir()).unwrap());
        w.write(Box::new(|tx| {
            tx.batch("CREATE TABLE t (x BIGINT PRIMARY KEY)")
        }))
        .unwrap();
        // Alone: a duplicate fails with its own error and commits nothing.
        w.write(Box::new(|tx| {
            tx.execute("INSERT INTO t (x) VALUES (?1)", crate::store::db::dbp![1])
                .map(|_| ())
        }))
        .unwrap();
        let e = w
            .write(Box::new(|tx| {
                tx.execute("INSERT INTO t (x) VALUES (?1)", crate::store::db::dbp![2])?;
                tx.execute("INSERT INTO t (x) VALUES (?1)", crate::store::db::dbp![1])
                    .map(|_| ())
            }))
            .unwrap_err();
        assert_eq!(e.code(), "STORE_IO");
        // In groups: 8 threads racing, each with one duplicate.
        let threads: Vec<_> = (0..8i64)
            .map(|i| {
                let w = Arc::clone(&w);
                std::thread::spawn(move || {
                    for j in 0..20 {
                        let x = 100 + i * 1000 + j;
                        w.write(Box::new(move |tx| {
                            tx.execute("INSERT INTO t (x) VALUES (?1)", crate::store::db::dbp![x])
                                .map(|_| ())
                        }))
                        .unwrap();
                    }
                    let e = w
                        .write(Box::new(move |tx| {
                            tx.execute(
                                "INSERT INTO t (x) VALUES (?1)",
                                crate::store::db::dbp![100 + i * 1000],
                            )
                            .map(|_| ())
                        }))
                        .unwrap_err();
                    assert_eq!(e.code(), "STORE_IO");
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n: i64 = db
            .read(|c| c.query_row("SELECT count(*) FROM t", &[], |r| r.get(0)))
            .unwrap();
        assert_eq!(
            n,
            1 + 8 * 20,
            "the row of the failed lone write (2) did not commit"
        );
        w.close();
        db.close();
        pg.close();
    }

    // R-TSK-RCPT: a write that panics is answered (INTERNAL) and the writer goes on; writes racing
    // a close are each answered, Ok only when committed, GATEWAY_CLOSED after.
    #[test]
    fn r_tsk_rcpt_a_panicking_write_and_a_close_leave_every_caller_answered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let w = Arc::new(
            Writer::start(TaskDb::file(Arc::clone(&store)), dir.path().to_path_buf()).unwrap(),
        );
        w.write(Box::new(|tx| {
            tx.batch("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        }))
        .unwrap();
        let e = w
            .write(Box::new(|_| panic!("a write that panics")))
            .unwrap_err();
        assert_eq!(e.code(), "INTERNAL");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let w = Arc::clone(&w);
                std::thread::spawn(move || {
                    let mut ok = 0i64;
                    for j in 0..200 {
                        let x = i * 1000 + j;
                        match w.write(Box::new(move |tx| {
                            tx.execute("INSERT INTO t (x) VALUES (?1)", crate::store::db::dbp![x])
                                .map(|_| ())
                        })) {
                            Ok(()) => ok += 1,
                            Err(e) => {
                                assert_eq!(e.code(), "GATEWAY_CLOSED");
                                break;
                            }
                        }
                    }
                    ok
                })
            })
            .collect();
        w.write(Box::new(|_| Ok(()))).unwrap();
        w.close();
        let ok: i64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let n: i64 = store
            .read(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(n, ok, "every Ok was committed, nothing else");
    }
}

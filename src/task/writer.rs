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
//! It must never drop a write silently (a write that could not be committed returns its
//! error), never hold a caller's lock while it waits, and never see arguments, field values or
//! page content in anything it logs (it logs error codes only).

use crate::store::Store;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

/// One write: runs inside the group's transaction.
pub(crate) type WriteFn =
    Box<dyn FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()> + Send>;

/// The most writes one transaction carries.
const MAX_GROUP: usize = 512;

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

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
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
    pub(crate) fn start(store: Arc<Store>, data_dir: PathBuf) -> Result<Writer> {
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
    pub(crate) fn submit(&self, write: WriteFn) -> Result<()> {
        self.enqueue(write, true).map(|_| ())
    }

    /// A compare-and-set write (R-TSK-CTL): `f` reads and writes inside the group's
    /// transaction and returns a value or a typed error. On `Err` its savepoint is rolled back
    /// (nothing of it commits) and that error is returned, so a check (a revision, a command
    /// id, a queue bound) is atomic with the write it guards. A store failure wins over `f`'s
    /// value: a value is returned only once its write is durable.
    pub(crate) fn apply<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T> + Send + 'static,
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

fn run(shared: &Shared, store: &Store, data_dir: &std::path::Path) {
    let mut dir_synced = false;
    loop {
        let group: Vec<Job> = {
            let mut q = shared.queue.lock();
            while q.jobs.is_empty() && !q.closed {
                shared.wake.wait(&mut q);
            }
            if q.jobs.is_empty() {
                return;
            }
            let n = q.jobs.len().min(MAX_GROUP);
            q.jobs.drain(..n).collect()
        };
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
    }
}

/// One transaction for the group; each write in its own savepoint.
fn commit_group(store: &Store, group: Vec<Job>, data_dir: &std::path::Path, synced: &mut bool) {
    // The slots are taken out first: every caller gets an answer, even for writes the
    // transaction never reached.
    let slots: Vec<Arc<Slot>> = group.iter().map(|j| Arc::clone(&j.done)).collect();
    let mut verdicts: Vec<Result<()>> = Vec::with_capacity(group.len());
    let committed = store.write(|tx| {
        for job in group {
            // Cached statements: the savepoint pair is parsed once per connection, not per write.
            tx.prepare_cached("SAVEPOINT w")?.execute([])?;
            match (job.write)(tx) {
                Ok(()) => {
                    tx.prepare_cached("RELEASE w")?.execute([])?;
                    verdicts.push(Ok(()));
                }
                Err(e) => {
                    tx.prepare_cached("ROLLBACK TO w")?.execute([])?;
                    tx.prepare_cached("RELEASE w")?.execute([])?;
                    verdicts.push(Err(crate::store::sqlite_error("write receipt", e)));
                }
            }
        }
        Ok(())
    });
    match committed {
        Ok(()) => {
            if !*synced {
                *synced = sync_dir(data_dir);
            }
            for (slot, v) in slots.iter().zip(verdicts) {
                slot.set(v);
            }
        }
        Err(e) => {
            log::warn!("receipt group not committed: {}", e.code());
            // Every write of the group fails; the ones the transaction never reached too.
            let code = e.code();
            for slot in &slots {
                slot.set(Err(if code == "GATEWAY_CLOSED" {
                    Error::GatewayClosed
                } else {
                    Error::store_io("commit receipts", code)
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

    #[test]
    fn r_tsk_rcpt_writes_commit_before_returning_and_a_failing_write_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let w = Writer::start(Arc::clone(&store), dir.path().to_path_buf()).unwrap();
        w.write(Box::new(|tx| {
            tx.execute_batch("CREATE TABLE t (x INTEGER PRIMARY KEY)")
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
                            tx.execute("INSERT INTO t (x) VALUES (?1)", [x]).map(|_| ())
                        }))
                        .unwrap();
                    }
                    // A duplicate key fails alone; the others of its group still commit.
                    let e = w
                        .write(Box::new(move |tx| {
                            tx.execute("INSERT INTO t (x) VALUES (?1)", [i * 1000])
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

    // R-TSK-RCPT: a write that panics is answered (INTERNAL) and the writer goes on; writes racing
    // a close are each answered, Ok only when committed, GATEWAY_CLOSED after.
    #[test]
    fn r_tsk_rcpt_a_panicking_write_and_a_close_leave_every_caller_answered() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let w = Arc::new(Writer::start(Arc::clone(&store), dir.path().to_path_buf()).unwrap());
        w.write(Box::new(|tx| {
            tx.execute_batch("CREATE TABLE t (x INTEGER PRIMARY KEY)")
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
                            tx.execute("INSERT INTO t (x) VALUES (?1)", [x]).map(|_| ())
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

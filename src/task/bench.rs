//! The task service's seams for benches, crash tests and the `jevgate` binary, reached only
//! through `jevgate::unstable` (hidden, not a supported API): [`ReceiptBench`], a thin handle
//! for `benches/receipts.rs` (R-TSK-RCPT) — a store and the receipt writer on a directory, with
//! one task and one open request, so a bench can time the real checkpoint path (the writer's
//! group commit plus [`records::checkpoint`]) and nothing else — [`set_checkpoint_hook`], and
//! [`all_tasks`] (every owner's tasks, for `jevgate task list`: it bypasses the owner triple, so
//! it is no part of [`Tasks`]' public API, issue 21 defect 10).
//!
//! It must stay thin: no behaviour of its own beyond wiring the real writer to the real record
//! functions, and never hands out the store.

use super::engine::TaskDb;
use super::records;
use super::writer::Writer;
use super::{Receipt, TaskOwner, TaskStatus, TaskTarget, Tasks};
use crate::store::Store;
use crate::Result;
use std::path::Path;
use std::sync::Arc;

const TASK_ID: &str = "bench-task";

/// Crash-test seam: `hook` is called with the name of each checkpoint boundary a dispatch of
/// `tasks` passes (`before_checkpoint`, `after_checkpoint`, `after_dispatch`, `after_settle`),
/// and on the shared store around a control call another process carried here
/// (`carried_take` before its row is taken, `carried_taken` after, on the listener's thread:
/// while the hook blocks, no carried call is applied); `None` removes it.
pub fn set_checkpoint_hook(
    tasks: &Tasks<'_>,
    hook: Option<Arc<dyn Fn(&'static str) + Send + Sync>>,
) {
    tasks.set_checkpoint_hook(hook)
}

/// Every task of the data directory with its receipts, newest first (at most `limit`),
/// whoever owns them: for the person who owns the directory (`jevgate task list`), never for an
/// agent (agents use [`Tasks::list`]).
pub fn all_tasks(tasks: &Tasks<'_>, limit: u32) -> Result<Vec<(TaskStatus, Vec<Receipt>)>> {
    tasks.all(limit)
}

/// What evidence id `evidence_id` of `tasks` stands for while it is valid (issue 21 item 7:
/// the lookup issue 26's `verify` uses); `None` for an unknown, evicted or expired id.
pub fn evidence_record(tasks: &Tasks<'_>, evidence_id: &str) -> Option<super::EvidenceRecord> {
    tasks.evidence_record(evidence_id)
}

/// A store plus the receipt writer, with task `bench-task` and its request 1 open.
#[doc(hidden)]
#[derive(Debug)]
pub struct ReceiptBench {
    store: Option<Arc<Store>>,
    shared: Option<crate::store::SharedStore>,
    writer: Writer,
    task: String,
}

impl ReceiptBench {
    /// Opens the store in `data_dir`, starts the writer and opens one task and request.
    pub fn open(data_dir: &Path) -> Result<ReceiptBench> {
        let store = Arc::new(Store::open(data_dir)?);
        let writer = Writer::start(TaskDb::file(Arc::clone(&store)), data_dir.to_path_buf())?;
        ReceiptBench::begin(Some(store), None, writer, TASK_ID.to_string())
    }

    /// The same on the fleet's PostgreSQL store at `url` (issue 23 "Benchmark"): the writer
    /// on its own connection, a task of a random id (the database may be shared by runs).
    #[cfg(feature = "postgres")]
    pub fn open_shared(url: &str) -> Result<ReceiptBench> {
        let shared = crate::store::SharedStore::open(url)?;
        let member = super::engine::Member {
            process: crate::ids::random_id("bench_")?,
            dead_after_ms: 10_000,
        };
        let db = TaskDb::shared(&shared, member)?;
        let writer = Writer::start(db, std::env::temp_dir())?;
        let task = crate::ids::random_id("bench-task-")?;
        ReceiptBench::begin(None, Some(shared), writer, task)
    }

    fn begin(
        store: Option<Arc<Store>>,
        shared: Option<crate::store::SharedStore>,
        writer: Writer,
        task: String,
    ) -> Result<ReceiptBench> {
        let now = now_ms();
        let id = task.clone();
        writer.write(Box::new(move |tx| {
            let owner = TaskOwner::new("bench", "bench", "bench");
            records::insert_task(tx, &id, &owner, &TaskTarget::default(), "", now)?;
            records::begin_request(tx, &id, 1, now)
        }))?;
        Ok(ReceiptBench {
            store,
            shared,
            writer,
            task,
        })
    }

    /// Commits the checkpoint of operation `operation_id` (unique per call) through the writer;
    /// returns when it is durable.
    pub fn checkpoint(&self, operation_id: &str) -> Result<()> {
        let op = operation_id.to_string();
        let task = self.task.clone();
        let now = now_ms();
        self.writer.write(Box::new(move |tx| {
            records::checkpoint(tx, &task, 1, &op, "page_scroll", now)
        }))
    }

    /// Stops the writer and closes the store.
    pub fn close(&self) {
        self.writer.close();
        if let Some(store) = &self.store {
            store.close();
        }
        if let Some(shared) = &self.shared {
            shared.close();
        }
    }
}

fn now_ms() -> i64 {
    use crate::clock::Clock;
    crate::clock::SystemClock::new().wall_millis()
}

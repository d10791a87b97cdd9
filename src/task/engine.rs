//! Where a gateway's task rows and receipts live (issue 23 item 3): the gateway's SQLite file
//! (the default) or, when `gateway.store.kind` is `"postgres"`, the store the fleet shares, so
//! every process sees a task and its receipts.
//!
//! Owns the choice of engine for the task module and the connections it uses on it: reads and
//! startup recovery on the shared store's connection, the receipt writer's groups on a
//! connection of its own (a group never waits behind a lease call, and the reverse). Every
//! transaction is committed before its call returns — `synchronous=FULL` on SQLite, a
//! synchronous commit (PostgreSQL's default `synchronous_commit = on`) on PostgreSQL — so the
//! receipt rule (a checkpoint is durable before its dispatch; a failed commit prevents it)
//! holds on both. On the shared store it also knows this process's fleet id (recorded as the
//! owner of the tasks and requests it runs) and when an owner counts as dead.
//!
//! The choice of engine itself is the store's [`Records`] (the device registry's too): this
//! adds the receipt writer's own connection ([`Records::sibling`]) and the fleet membership.
//!
//! It never builds SQL (the records do), never decides a task's state, and never sees the URL.

use crate::store::db::Db;
use crate::store::{Records, SharedStore, Store};
use crate::Result;
use std::sync::Arc;

/// The task module's store.
#[derive(Debug, Clone)]
pub(crate) struct TaskDb {
    /// Reads, startup recovery, takeover: the gateway's SQLite file or its shared connection.
    records: Records,
    /// The receipt writer's groups: on the shared store a connection of their own.
    receipts: Records,
    /// On the shared store, this process's membership of the fleet.
    member: Option<Member>,
}

/// Who this process is in the fleet: its liveness row's id, and how old a liveness row may be
/// before its process counts as dead (ms).
#[derive(Debug, Clone)]
pub(crate) struct Member {
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: a fleet needs the feature
    pub process: String,
    pub dead_after_ms: i64,
}

impl TaskDb {
    /// The shared store when the gateway has one (with this process's fleet membership), else
    /// the SQLite file.
    pub(crate) fn open(
        store: Arc<Store>,
        shared: Option<&SharedStore>,
        member: Option<Member>,
    ) -> Result<TaskDb> {
        match (shared, member) {
            (Some(shared), Some(member)) => TaskDb::shared(shared, member),
            _ => Ok(TaskDb::file(store)),
        }
    }

    /// The gateway's SQLite file (one process).
    pub(crate) fn file(store: Arc<Store>) -> TaskDb {
        let records = Records::Sqlite(store);
        TaskDb {
            receipts: records.clone(),
            records,
            member: None,
        }
    }

    /// The fleet's store, for process `member`.
    pub(crate) fn shared(shared: &SharedStore, member: Member) -> Result<TaskDb> {
        let records = Records::new_shared(shared);
        Ok(TaskDb {
            receipts: records.sibling()?,
            records,
            member: Some(member),
        })
    }

    fn process(&self) -> Option<&str> {
        self.member.as_ref().map(|m| m.process.as_str())
    }

    /// Runs `f` over a consistent read (a transaction on the shared store).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&dyn Db) -> rusqlite::Result<T>) -> Result<T> {
        self.records.read_for("read tasks", self.process(), f)
    }

    /// Runs `f` in one transaction committed before returning (startup recovery, takeover),
    /// outside the receipt writer. `f` also gets the database clock's now (ms) on the shared
    /// store, `None` on SQLite.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&dyn Db, Option<i64>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        self.records
            .write_for("recover tasks", self.process(), true, f)
    }

    /// Runs `f` in one transaction of the receipt writer's own connection.
    pub(crate) fn write_group(
        &self,
        f: impl FnOnce(&dyn Db) -> rusqlite::Result<()>,
    ) -> Result<()> {
        self.receipts
            .write_for("commit receipts", self.process(), false, |db, _| f(db))
    }

    /// On the shared store, this process's membership of the fleet.
    pub(crate) fn member(&self) -> Option<&Member> {
        self.member.as_ref()
    }

    /// On the shared store, the gateway's connection to it (the task carrier listens there).
    #[cfg(feature = "postgres")]
    pub(crate) fn shared_store(&self) -> Option<&Arc<crate::store::pg::PgStore>> {
        self.records.shared()
    }

    /// Whether data-directory fsyncs apply (the SQLite file's WAL entry).
    pub(crate) fn is_file(&self) -> bool {
        self.records.is_file()
    }

    /// Drops the writer's own connection (the shared one is the gateway's to close).
    pub(crate) fn close(&self) {
        self.receipts.close_sibling();
    }
}

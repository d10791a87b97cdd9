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
//! It never builds SQL (the records do), never decides a task's state, and never sees the URL.

use crate::store::db::Db;
use crate::store::{SharedStore, Store};
use crate::Result;
use std::sync::Arc;

/// The task module's store.
#[derive(Clone)]
pub(crate) enum TaskDb {
    /// The gateway's SQLite file (one process).
    Sqlite(Arc<Store>),
    /// The fleet's PostgreSQL store.
    #[cfg(feature = "postgres")]
    Shared(Arc<pg::Tasks>),
}

impl std::fmt::Debug for TaskDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskDb::Sqlite(_) => f.write_str("TaskDb::Sqlite"),
            #[cfg(feature = "postgres")]
            TaskDb::Shared(_) => f.write_str("TaskDb::Shared"),
        }
    }
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
            #[cfg(feature = "postgres")]
            (Some(shared), Some(member)) => TaskDb::shared(shared, member),
            #[cfg(not(feature = "postgres"))]
            (Some(s), _) => match *s {},
            _ => Ok(TaskDb::Sqlite(store)),
        }
    }

    /// The fleet's store, for process `member`.
    #[cfg(feature = "postgres")]
    pub(crate) fn shared(shared: &SharedStore, member: Member) -> Result<TaskDb> {
        Ok(TaskDb::Shared(Arc::new(pg::Tasks::open(
            &shared.0, member,
        )?)))
    }

    /// Runs `f` over a consistent read (a transaction on the shared store).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&dyn Db) -> rusqlite::Result<T>) -> Result<T> {
        match self {
            TaskDb::Sqlite(s) => s.read(|c| f(c)),
            #[cfg(feature = "postgres")]
            TaskDb::Shared(t) => {
                t.reads
                    .db_tx("read tasks", Some(&t.member.process), false, |db, _| f(db))
            }
        }
    }

    /// Runs `f` in one transaction committed before returning (startup recovery, takeover),
    /// outside the receipt writer. `f` also gets the database clock's now (ms) on the shared
    /// store, `None` on SQLite.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&dyn Db, Option<i64>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        match self {
            TaskDb::Sqlite(s) => s.write(|tx| f(tx, None)),
            #[cfg(feature = "postgres")]
            TaskDb::Shared(t) => t
                .reads
                .db_tx("recover tasks", Some(&t.member.process), true, f),
        }
    }

    /// Runs `f` in one transaction of the receipt writer's own connection.
    pub(crate) fn write_group(
        &self,
        f: impl FnOnce(&dyn Db) -> rusqlite::Result<()>,
    ) -> Result<()> {
        match self {
            TaskDb::Sqlite(s) => s.write(|tx| f(tx)),
            #[cfg(feature = "postgres")]
            TaskDb::Shared(t) => t.writes.db_tx(
                "commit receipts",
                Some(&t.member.process),
                false,
                |db, _| f(db),
            ),
        }
    }

    /// On the shared store, this process's membership of the fleet.
    pub(crate) fn member(&self) -> Option<&Member> {
        match self {
            TaskDb::Sqlite(_) => None,
            #[cfg(feature = "postgres")]
            TaskDb::Shared(t) => Some(&t.member),
        }
    }

    /// Whether data-directory fsyncs apply (the SQLite file's WAL entry).
    pub(crate) fn is_file(&self) -> bool {
        matches!(self, TaskDb::Sqlite(_))
    }

    /// Drops the writer's own connection (the shared one is the gateway's to close).
    pub(crate) fn close(&self) {
        #[cfg(feature = "postgres")]
        if let TaskDb::Shared(t) = self {
            t.writes.close();
        }
    }
}

#[cfg(feature = "postgres")]
mod pg {
    use super::Member;
    use crate::store::pg::PgStore;
    use crate::Result;
    use std::sync::Arc;

    /// The task module's connections to the shared store.
    pub(crate) struct Tasks {
        /// The gateway's shared connection: reads, recovery, takeover.
        pub(crate) reads: Arc<PgStore>,
        /// The receipt writer's own connection.
        pub(crate) writes: PgStore,
        pub(crate) member: Member,
    }

    impl Tasks {
        pub(crate) fn open(shared: &Arc<PgStore>, member: Member) -> Result<Tasks> {
            Ok(Tasks {
                reads: Arc::clone(shared),
                writes: shared.sibling()?,
                member,
            })
        }
    }
}

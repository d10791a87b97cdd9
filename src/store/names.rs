//! The names every file of the store shares: the database's application id, the file names in
//! the data directory, and how a SQLite failure becomes a store error. Below `mod.rs`,
//! `files.rs` and `migrations.rs` (tests/layers.rs: no circle between a directory's files).
//! Holds no state and does no I/O.

use crate::Error;
use rusqlite::ErrorCode;

/// `PRAGMA application_id` of jevgate databases ("JEVG").
pub const APPLICATION_ID: i32 = 0x4A45_5647;

/// The database file name inside the data directory.
pub const DB_FILE: &str = "jevgate.sqlite3";
/// The lock file name inside the data directory (held while a gateway has it open).
pub const LOCK_FILE: &str = "jevgate.lock";

/// Maps a SQLite failure to a store error; corruption is told apart from I/O.
/// A PostgreSQL failure carried through the task records' [`Db`](super::db::Db) is mapped as
/// the shared store maps it (`STORE_UNAVAILABLE` for a lost connection; never its message).
pub(crate) fn sqlite_error(op: &str, e: rusqlite::Error) -> Error {
    #[cfg(feature = "postgres")]
    if let rusqlite::Error::ToSqlConversionFailure(inner) = &e {
        if let Some(super::db::PgFailure(pg)) = inner.downcast_ref::<super::db::PgFailure>() {
            return super::pg::pg_error(op, pg);
        }
    }
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => Error::StoreCorrupt {
            reason: format!("{op}: {e}"),
        },
        _ => Error::store_io(op, e),
    }
}

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
pub(crate) fn sqlite_error(op: &str, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => Error::StoreCorrupt {
            reason: format!("{op}: {e}"),
        },
        _ => Error::store_io(op, e),
    }
}

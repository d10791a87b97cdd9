//! The one SQLite file of a gateway (R-STO).
//!
//! Owns opening or creating `<data_dir>/jevgate.sqlite3` (WAL, `synchronous=FULL`), recognising
//! a jevgate database by its `application_id`, migrating forward by `user_version`, and
//! serialising access from many threads. A write made through [`Store::write`] is a committed
//! transaction when the call returns, so a record that must precede a dispatch is durable first.
//!
//! It never panics on a damaged or foreign file (`STORE_CORRUPT`, `STORE_VERSION_UNSUPPORTED`),
//! never opens a data directory that another live gateway holds (`STORE_LOCKED`), and never
//! stores credentials or page content. What it creates is owner-only (`files.rs`).

pub(crate) mod db;
mod files;
#[cfg(feature = "postgres")]
pub(crate) mod mailbox;
mod migrations;
mod names;
#[cfg(feature = "postgres")]
pub(crate) mod pg;
mod schema;
mod shared;
pub(crate) mod temp_dirs;
#[cfg(test)]
mod tests;

use crate::{Error, Result};
use parking_lot::Mutex;
use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};
use std::fs::File;
use std::path::{Path, PathBuf};

pub(crate) use names::sqlite_error;
pub use names::{DB_FILE, LOCK_FILE};
pub use schema::SCHEMA_VERSION;
pub(crate) use shared::{Records, SharedStore};

/// An open store. Cheap to share behind an `Arc`; every method is safe from any thread.
#[derive(Debug)]
pub(crate) struct Store {
    conn: Mutex<Option<Connection>>,
    lock: Mutex<Option<File>>,
    #[cfg_attr(not(test), allow(dead_code))] // reason: only the store's tests read it for now
    path: PathBuf,
}

impl Store {
    /// Opens (or creates) the store in `data_dir`, creating the directory if needed. What it
    /// creates is private to the gateway's user whatever the umask: the directory (and missing
    /// parents) 0700, the database, its WAL and shared memory and the lock file 0600. An
    /// existing directory or file that group or others can reach is logged (`warn`) and left
    /// as the host made it.
    pub fn open(data_dir: &Path) -> Result<Store> {
        files::create_data_dir(data_dir)?;
        let lock = files::open_private(&data_dir.join(LOCK_FILE))
            .map_err(|e| Error::store_io("open lock file", e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(Error::StoreLocked),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::store_io("lock data directory", e))
            }
        }
        let path = data_dir.join(DB_FILE);
        check_header(&path)?;
        files::precreate_database(&path)?;
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| sqlite_error("open database", e))?;
        configure(&conn)?;
        migrations::migrate(&conn)?;
        for warning in files::exposure(data_dir) {
            log::warn!("store: {warning}");
        }
        Ok(Store {
            conn: Mutex::new(Some(conn)),
            lock: Mutex::new(Some(lock)),
            path,
        })
    }

    /// What of the data directory a local user other than its owner can reach (the directory,
    /// the store's files), one sentence each without a path; empty when all is private.
    pub(crate) fn exposure(&self) -> Vec<String> {
        self.path.parent().map(files::exposure).unwrap_or_default()
    }

    /// Path of the database file.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version (`PRAGMA user_version`) of the open file.
    pub fn schema_version(&self) -> Result<i64> {
        self.read(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)))
    }

    /// Runs a read with the connection.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let guard = self.conn.lock();
        let conn = guard.as_ref().ok_or(Error::GatewayClosed)?;
        f(conn).map_err(|e| sqlite_error("read", e))
    }

    #[allow(dead_code)] // reason: its first callers (usage records, receipts) land with later modules
    /// Runs `f` in an immediate transaction and commits it before returning: when this returns
    /// `Ok`, the write is durable (`synchronous=FULL`). On error nothing is written.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut guard = self.conn.lock();
        let conn = guard.as_mut().ok_or(Error::GatewayClosed)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sqlite_error("begin", e))?;
        let value = f(&tx).map_err(|e| sqlite_error("write", e))?;
        tx.commit().map_err(|e| sqlite_error("commit", e))?;
        Ok(value)
    }

    /// `PRAGMA quick_check`: `Ok` when the file is sound.
    pub fn quick_check(&self) -> Result<()> {
        let verdict: String =
            self.read(|c| c.pragma_query_value(None, "quick_check", |r| r.get(0)))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(Error::StoreCorrupt {
                reason: "quick_check reported damage".into(),
            })
        }
    }

    /// A per-gateway random secret (32 bytes), created with the store and kept in it. Used to
    /// key hashes of identifiers (profile keys, request ids) so they are not guessable.
    pub(crate) fn gateway_secret(&self) -> Result<Vec<u8>> {
        self.read(|c| {
            c.query_row(
                "SELECT value FROM meta WHERE key = 'gateway_secret'",
                [],
                |r| r.get(0),
            )
        })
    }

    /// Closes the connection and releases the data directory. Later calls fail with
    /// `GATEWAY_CLOSED`. Idempotent.
    pub fn close(&self) {
        if let Some(conn) = self.conn.lock().take() {
            // Closing checkpoints the WAL; a failure leaves a WAL that the next open replays.
            if let Err((_conn, e)) = conn.close() {
                log::warn!(
                    "store close failed: {}",
                    e.sqlite_error_code().map_or("unknown", |c| code_name(c))
                );
            }
        }
        if let Some(lock) = self.lock.lock().take() {
            let _ = lock.unlock();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

fn code_name(c: ErrorCode) -> &'static str {
    match c {
        ErrorCode::DatabaseBusy => "busy",
        ErrorCode::DiskFull => "disk full",
        ErrorCode::SystemIoFailure => "io",
        _ => "other",
    }
}

/// A non-empty file must start with the SQLite magic; anything else is not ours to touch.
fn check_header(path: &Path) -> Result<()> {
    use std::io::Read;
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::store_io("open database", e)),
    };
    let mut header = [0u8; 16];
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) => return Err(Error::store_io("read database header", e)),
        }
    }
    if read == 0 {
        return Ok(());
    }
    if read < 16 || &header != b"SQLite format 3\0" {
        return Err(Error::StoreCorrupt {
            reason: "the file is not a SQLite database".into(),
        });
    }
    Ok(())
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| sqlite_error("configure", e))?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(|e| sqlite_error("enable WAL", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::store_io(
            "enable WAL",
            format!("journal mode is {mode}"),
        ));
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .and_then(|_| conn.pragma_update(None, "foreign_keys", "ON"))
        .map_err(|e| sqlite_error("configure", e))?;
    Ok(())
}

//! Applies the schema's migrations ([`super::schema`]) to the gateway's SQLite file, versioned
//! by `PRAGMA user_version`.
//!
//! Each migration runs in its own transaction together with the version bump, so a crash leaves
//! the file at the previous version, never half-migrated. A file of another program, a negative
//! version or a damaged file is refused (`STORE_CORRUPT`), a newer one too
//! (`STORE_VERSION_UNSUPPORTED`); it never changes a file it refuses.

use super::names::{sqlite_error, APPLICATION_ID};
use super::schema::{MIGRATIONS, SCHEMA_VERSION};
use crate::{Error, Result};
use rusqlite::{Connection, TransactionBehavior};

pub(super) fn migrate(conn: &Connection) -> Result<()> {
    let app_id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| sqlite_error("read application_id", e))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| sqlite_error("read user_version", e))?;
    if app_id == 0 && version == 0 {
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| sqlite_error("inspect schema", e))?;
        if tables > 0 {
            return Err(Error::StoreCorrupt {
                reason: "the file is a SQLite database of another program".into(),
            });
        }
    } else if app_id != APPLICATION_ID {
        return Err(Error::StoreCorrupt {
            reason: "the file is a SQLite database of another program".into(),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(Error::StoreVersionUnsupported {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 0 {
        return Err(Error::StoreCorrupt {
            reason: "negative schema version".into(),
        });
    }
    let verdict: String = conn
        .pragma_query_value(None, "quick_check", |r| r.get(0))
        .map_err(|e| sqlite_error("check integrity", e))?;
    if verdict != "ok" {
        return Err(Error::StoreCorrupt {
            reason: "quick_check reported damage".into(),
        });
    }
    for m in MIGRATIONS.iter().skip(version as usize) {
        // A Connection used only here; the transaction needs `&mut`-free immediate behaviour.
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(|e| sqlite_error("begin migration", e))?;
        (m.sqlite)(&tx).map_err(|e| sqlite_error("migrate", e))?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .and_then(|_| tx.pragma_update(None, "user_version", m.version))
            .map_err(|e| sqlite_error("migrate", e))?;
        tx.commit()
            .map_err(|e| sqlite_error("commit migration", e))?;
    }
    Ok(())
}

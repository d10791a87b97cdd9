//! The store a fleet of processes shares (issue 23): a handle on the PostgreSQL store that the
//! lease manager and the Jev request ledger both use, one connection setup per gateway.
//!
//! Owns only the choice between the real handle (cargo feature `postgres`) and an uninhabited
//! stand-in, so the callers' code is the same in both builds: without the feature, asking for
//! a shared store is refused with a clear configuration error before any credential is read;
//! and [`Records`], where a module's rows live (the gateway's SQLite file or this store), so
//! the module writes its statements once.
//! It never sees the URL's reference or prints the URL.

use crate::{Error, Result};

/// The largest skew between the database's clock and a host's the doctor accepts without a
/// warning (ms).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a real shared store is checked
pub(crate) const MAX_SKEW_MS: u64 = 1_000;

/// The shared store of a fleet.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone)]
pub(crate) struct SharedStore(pub(crate) std::sync::Arc<super::pg::PgStore>);

/// No shared store in a build without the `postgres` feature: a value cannot exist.
#[cfg(not(feature = "postgres"))]
#[derive(Debug, Clone)]
pub(crate) enum SharedStore {}

impl SharedStore {
    /// `Ok` when this build can open a shared store; the configuration error otherwise
    /// (called before the URL is read, so the refusal does not depend on the environment).
    pub(crate) fn check_built() -> Result<()> {
        if cfg!(feature = "postgres") {
            Ok(())
        } else {
            Err(Error::config(
                "gateway.store.kind",
                "\"postgres\" needs a jevgate built with the cargo feature `postgres`",
            ))
        }
    }

    /// Connects to `url` and applies the missing migrations (once across processes).
    #[cfg(feature = "postgres")]
    pub(crate) fn open(url: &str) -> Result<SharedStore> {
        Ok(SharedStore(std::sync::Arc::new(super::pg::PgStore::open(
            url,
        )?)))
    }

    /// The doctor's check of the shared store (issue 23): reachable, migrated to the version
    /// this build knows, and the database's clock against `host_wall_ms` (a skew above
    /// [`MAX_SKEW_MS`] is a warning: expiry is judged by the database's clock, but times shown
    /// to people come from the host's). `(ok?, detail)`; never the URL.
    pub(crate) fn doctor(&self, host_wall_ms: i64) -> (Result<bool>, String) {
        #[cfg(feature = "postgres")]
        {
            match self.0.health() {
                Err(e) => {
                    let detail = e.to_string();
                    (Err(e), detail)
                }
                Ok((version, db_ms)) => {
                    let skew = db_ms.saturating_sub(host_wall_ms);
                    let migrated = i64::from(version) == super::SCHEMA_VERSION;
                    let detail = format!(
                        "PostgreSQL reachable; schema version {version} ({}); database clock {} ms {} this host's",
                        if migrated { "current" } else { "not the version this build knows" },
                        skew.unsigned_abs(),
                        if skew >= 0 { "ahead of" } else { "behind" },
                    );
                    (Ok(migrated && skew.unsigned_abs() <= MAX_SKEW_MS), detail)
                }
            }
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = host_wall_ms;
            match *self {}
        }
    }

    /// Drops the connection; later calls fail with `GATEWAY_CLOSED`. Idempotent.
    pub(crate) fn close(&self) {
        #[cfg(feature = "postgres")]
        self.0.close();
        #[cfg(not(feature = "postgres"))]
        match *self {}
    }

    /// Refused: this build has no PostgreSQL client.
    #[cfg(not(feature = "postgres"))]
    pub(crate) fn open(_url: &str) -> Result<SharedStore> {
        Self::check_built().and_then(|()| {
            Err(Error::Internal {
                reason: "no shared store in this build".into(),
            })
        })
    }
}

/// Where a module's rows live (issue 23): the gateway's SQLite file, or — when
/// `gateway.store.kind` is `"postgres"` — the store every process of the fleet shares. The
/// module's statements are written once, over [`Db`](super::db::Db); each call is one
/// transaction committed before it returns.
#[derive(Debug, Clone)]
pub(crate) enum Records {
    /// The gateway's SQLite file (one process).
    Sqlite(std::sync::Arc<super::Store>),
    /// The fleet's PostgreSQL store.
    #[cfg(feature = "postgres")]
    Shared(std::sync::Arc<super::pg::PgStore>),
}

impl Records {
    /// The shared store when the gateway has one, else its SQLite file.
    pub(crate) fn new(
        store: std::sync::Arc<super::Store>,
        shared: Option<&SharedStore>,
    ) -> Records {
        match shared {
            Some(s) => Records::new_shared(s),
            None => Records::Sqlite(store),
        }
    }

    /// The fleet's store.
    pub(crate) fn new_shared(shared: &SharedStore) -> Records {
        #[cfg(feature = "postgres")]
        {
            Records::Shared(std::sync::Arc::clone(&shared.0))
        }
        #[cfg(not(feature = "postgres"))]
        match *shared {}
    }

    /// Runs `f` over a consistent read (`op` names it in errors).
    pub(crate) fn read<T>(
        &self,
        op: &str,
        f: impl FnOnce(&dyn super::db::Db) -> rusqlite::Result<T>,
    ) -> crate::Result<T> {
        self.read_for(op, None, f)
    }

    /// Runs `f` in one transaction committed before returning; on error nothing is written.
    pub(crate) fn write<T>(
        &self,
        op: &str,
        f: impl FnOnce(&dyn super::db::Db) -> rusqlite::Result<T>,
    ) -> crate::Result<T> {
        self.write_for(op, None, false, |db, _| f(db))
    }

    /// [`Records::read`] for fleet process `process` ([`Db::process`](super::db::Db::process);
    /// ignored on SQLite).
    pub(crate) fn read_for<T>(
        &self,
        op: &str,
        process: Option<&str>,
        f: impl FnOnce(&dyn super::db::Db) -> rusqlite::Result<T>,
    ) -> crate::Result<T> {
        match self {
            Records::Sqlite(s) => {
                let _ = (op, process);
                s.read(|c| f(c))
            }
            #[cfg(feature = "postgres")]
            Records::Shared(p) => p.db_tx(op, process, false, |db, _| f(db)),
        }
    }

    /// [`Records::write`] for fleet process `process`; `clock`: `f` also gets the database
    /// clock's now (ms) on the shared store (`None` on SQLite, or without `clock`).
    pub(crate) fn write_for<T>(
        &self,
        op: &str,
        process: Option<&str>,
        clock: bool,
        f: impl FnOnce(&dyn super::db::Db, Option<i64>) -> rusqlite::Result<T>,
    ) -> crate::Result<T> {
        match self {
            Records::Sqlite(s) => {
                let _ = (op, process, clock);
                s.write(|tx| f(tx, None))
            }
            #[cfg(feature = "postgres")]
            Records::Shared(p) => p.db_tx(op, process, clock, f),
        }
    }

    /// The same rows on a connection of their own (the shared store: a new connection sharing
    /// the clock offset, so its transactions never wait behind the gateway's); on SQLite the
    /// same file (its one writer thread orders every write anyway).
    pub(crate) fn sibling(&self) -> crate::Result<Records> {
        match self {
            Records::Sqlite(s) => Ok(Records::Sqlite(std::sync::Arc::clone(s))),
            #[cfg(feature = "postgres")]
            Records::Shared(p) => Ok(Records::Shared(std::sync::Arc::new(p.sibling()?))),
        }
    }

    /// Whether the rows are in the gateway's SQLite file.
    pub(crate) fn is_file(&self) -> bool {
        matches!(self, Records::Sqlite(_))
    }

    /// The shared store's connection, if the rows are there.
    #[cfg(feature = "postgres")]
    pub(crate) fn shared(&self) -> Option<&std::sync::Arc<super::pg::PgStore>> {
        match self {
            Records::Sqlite(_) => None,
            Records::Shared(p) => Some(p),
        }
    }

    /// Drops the connection of a [`Records::sibling`] (only its maker calls this: the
    /// gateway's own connection and its SQLite file are the gateway's to close); nothing on
    /// SQLite.
    pub(crate) fn close_sibling(&self) {
        #[cfg(feature = "postgres")]
        if let Records::Shared(p) = self {
            p.close();
        }
    }
}

//! The Jev request ledger shared by a fleet (issue 23 item 3, R-JEV-LEDGER across processes).
//!
//! Owns keeping caller-supplied `requestId`s in the shared PostgreSQL store, so an id is
//! accepted once across every process of a fleet: each insert takes one fleet-wide transaction
//! lock, forgets the expired rows, reads what the rules need at the database's time and lets
//! [`super::ledger::decide`] (the in-memory ledger's rules) answer. Rows hold keyed hashes of
//! the caller scope and the id under the fleet's secret, never the raw values. A build without
//! the cargo feature `postgres` has an uninhabited stand-in.
//!
//! It never answers with a cached result, and a store it cannot reach is `STORE_UNAVAILABLE`
//! before any dispatch (nothing was sent).

use super::ledger::LedgerRefusal;
use crate::store::SharedStore;
use crate::Result;

#[cfg(feature = "postgres")]
pub(crate) use real::SharedLedger;
#[cfg(not(feature = "postgres"))]
pub(crate) use stand_in::SharedLedger;

#[cfg(not(feature = "postgres"))]
mod stand_in {
    use super::*;

    /// No shared ledger without the `postgres` feature: a value cannot exist.
    #[derive(Debug)]
    pub(crate) enum SharedLedger {}

    impl SharedLedger {
        pub(crate) fn open(shared: Option<&SharedStore>) -> Result<Option<SharedLedger>> {
            match shared {
                None => Ok(None),
                Some(s) => match *s {},
            }
        }
        pub(crate) fn insert(
            &self,
            _scope: &str,
            _id: &str,
        ) -> Result<std::result::Result<(), LedgerRefusal>> {
            match *self {}
        }
        pub(crate) fn release(&self, _scope: &str, _id: &str) {
            match *self {}
        }
    }
}

#[cfg(feature = "postgres")]
mod real {
    use super::super::ledger::{decide, Seen, LEDGER_TTL};
    use super::*;
    use crate::store::pg::PgStore;
    use std::sync::Arc;

    /// The transaction-level advisory lock serialising ledger inserts fleet-wide ("JEVG" "LEDG").
    const LEDGER_LOCK: i64 = 0x4A45_5647_4C45_4447;

    /// The fleet's request ledger.
    pub(crate) struct SharedLedger {
        store: Arc<PgStore>,
        key: ring::hmac::Key,
    }

    impl std::fmt::Debug for SharedLedger {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("SharedLedger").finish_non_exhaustive()
        }
    }

    impl SharedLedger {
        /// `None` without a shared store; with one, reads the fleet's secret.
        pub(crate) fn open(shared: Option<&SharedStore>) -> Result<Option<SharedLedger>> {
            let Some(shared) = shared else {
                return Ok(None);
            };
            let secret = shared.0.fleet_secret()?;
            Ok(Some(SharedLedger {
                store: Arc::clone(&shared.0),
                key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
            }))
        }

        /// The keyed hashes of the scope and of (scope, id): length-prefixed, so no two
        /// different pairs share an input.
        fn keys(&self, scope: &str, id: &str) -> (Vec<u8>, Vec<u8>) {
            let mut ctx = ring::hmac::Context::with_key(&self.key);
            ctx.update(b"scope\0");
            ctx.update(scope.as_bytes());
            let scope_key = ctx.sign().as_ref().to_vec();
            let mut ctx = ring::hmac::Context::with_key(&self.key);
            ctx.update(b"request\0");
            ctx.update(&(scope.len() as u64).to_be_bytes());
            ctx.update(scope.as_bytes());
            ctx.update(id.as_bytes());
            (scope_key, ctx.sign().as_ref().to_vec())
        }

        /// Records `id` in `scope` for the whole fleet, or says why not (the rules of the
        /// in-memory ledger, at the database's time).
        pub(crate) fn insert(
            &self,
            scope: &str,
            id: &str,
        ) -> Result<std::result::Result<(), LedgerRefusal>> {
            let (scope_key, request_key) = self.keys(scope, id);
            let ttl = i64::try_from(LEDGER_TTL.as_millis()).unwrap_or(i64::MAX);
            self.store.tx("request ledger", |tx, clock| {
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LEDGER_LOCK])?;
                let now_ms = clock.now_ms(tx)?;
                tx.execute(
                    "DELETE FROM jevgate_request_ledger WHERE expires_at <= $1",
                    &[&now_ms],
                )?;
                let live = tx
                    .query_opt(
                        "SELECT 1 FROM jevgate_request_ledger WHERE scope = $1 AND request = $2",
                        &[&scope_key, &request_key],
                    )?
                    .is_some();
                let row = tx.query_one(
                    "SELECT count(*) FILTER (WHERE scope = $1),
                            min(expires_at) FILTER (WHERE scope = $1),
                            count(*), min(expires_at)
                     FROM jevgate_request_ledger",
                    &[&scope_key],
                )?;
                let count = |i: usize| usize::try_from(row.get::<_, i64>(i)).unwrap_or(usize::MAX);
                let seen = Seen {
                    live,
                    caller: (count(0), row.get(1)),
                    total: (count(2), row.get(3)),
                    now_ms,
                };
                let verdict = decide(&seen);
                if verdict.is_ok() {
                    tx.execute(
                        "INSERT INTO jevgate_request_ledger (scope, request, expires_at)
                         VALUES ($1, $2, $3)",
                        &[&scope_key, &request_key, &now_ms.saturating_add(ttl)],
                    )?;
                }
                Ok(verdict)
            })
        }

        /// Forgets an id that was never dispatched, so the caller may use it again.
        pub(crate) fn release(&self, scope: &str, id: &str) {
            let (scope_key, request_key) = self.keys(scope, id);
            let result = self.store.tx("request ledger release", |tx, _| {
                tx.execute(
                    "DELETE FROM jevgate_request_ledger WHERE scope = $1 AND request = $2",
                    &[&scope_key, &request_key],
                )?;
                Ok(())
            });
            if let Err(e) = result {
                // The id stays until it expires: the caller may not reuse it early, nothing worse.
                log::warn!("request ledger: an id could not be released: {}", e.code());
            }
        }
    }
}

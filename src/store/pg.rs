//! The shared PostgreSQL store of a fleet (issue 23 item 1, feature `postgres`).
//!
//! Owns the connection to the one database every process of a fleet shares: connecting (a
//! 5 s connect timeout, TCP keepalives, a 10 s `statement_timeout`, TLS through the tree's
//! rustls when the URL's `sslmode` asks for it), reconnecting after a lost connection,
//! applying its numbered migrations exactly once under a PostgreSQL advisory lock when several
//! processes start together, running a transaction with the **database's** clock (one clock for
//! the fleet: `clock_timestamp()` plus a test-only offset this store adds, the PostgreSQL
//! counterpart of `ManualClock`), and a blocking LISTEN loop for NOTIFY.
//!
//! Its migrations are the PostgreSQL bodies of the one numbered list in `migrations.rs` (the
//! SQLite file's versions and this store's are the same numbers); they cover what the fleet
//! shares (control leases, owners, liveness, the request ledger, tasks and receipts — the task
//! tables with the SQLite ones' names and columns, as the task records run the same statements
//! on both engines through `db.rs` — and the Jev usage records).
//!
//! It never prints, logs or returns the URL or anything the server said in an error (only
//! SQLSTATE codes and sentences written here); a connection it cannot (re)make is
//! `STORE_UNAVAILABLE` (503, retryable). It holds no lease logic: `lease/pg.rs` does.

use crate::{Error, Result};
use parking_lot::Mutex;
use postgres::{Client, Transaction};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a connection attempt may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The `statement_timeout` of every session: a statement stuck longer fails.
pub(crate) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// The advisory-lock key serialising migrations across processes ("JEVG" "MIGR").
const MIGRATION_LOCK: i64 = 0x4A45_5647_4D49_4752;

/// The key of the fleet's random secret in `jevgate_meta` (created with migration 1).
const FLEET_SECRET: &str = "fleet_secret";

/// Why a transaction body stopped: the database failed, or jevgate refused what it read.
#[derive(Debug)]
pub(crate) enum TxError {
    /// A PostgreSQL failure (mapped by [`pg_error`], never printed).
    Pg(postgres::Error),
    /// A jevgate error (e.g. an unreadable row: `STORE_CORRUPT`); the transaction rolls back.
    Jevgate(Error),
}

impl From<postgres::Error> for TxError {
    fn from(e: postgres::Error) -> TxError {
        TxError::Pg(e)
    }
}

/// The database's clock inside one transaction: read it after taking the row locks a
/// transition needs, so the time it judges by is never older than the state it judges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbClock {
    offset_ms: i64,
}

impl DbClock {
    /// Milliseconds since the Unix epoch on the database's clock (plus the test offset).
    pub(crate) fn now_ms(
        &self,
        tx: &mut impl postgres::GenericClient,
    ) -> std::result::Result<i64, postgres::Error> {
        let row = tx.query_one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
            &[],
        )?;
        Ok(row.get::<_, i64>(0).saturating_add(self.offset_ms))
    }
}

/// An open PostgreSQL store. Every method is safe from any thread.
pub(crate) struct PgStore {
    config: postgres::Config,
    client: Mutex<Option<Client>>,
    /// The statements the task records prepared on this connection (by their SQL), locked
    /// after `client` and cleared with it.
    statements: Mutex<super::db::Statements>,
    offset_ms: Arc<AtomicI64>,
    closed: AtomicBool,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL or the configuration (it holds the password).
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

/// A PostgreSQL failure as a store error: a lost or unmakeable connection and a timed-out
/// statement are `STORE_UNAVAILABLE`; anything else is `STORE_IO` with its SQLSTATE only.
pub(crate) fn pg_error(op: &str, e: &postgres::Error) -> Error {
    if let Some(state) = e.code() {
        let code = state.code();
        // 57014 query_canceled (statement_timeout), 57P01..57P03 shutdown/cannot connect now,
        // 08xxx connection exceptions, 40001/40P01 serialization failure/deadlock (retry).
        if code == "57014"
            || code.starts_with("57P")
            || code.starts_with("08")
            || code.starts_with("40")
        {
            return Error::StoreUnavailable {
                reason: format!("{op}: the database refused for now (SQLSTATE {code})"),
            };
        }
        return Error::store_io(op, format!("SQLSTATE {code}"));
    }
    Error::StoreUnavailable {
        reason: format!("{op}: the connection to the database failed or was lost"),
    }
}

/// Parses a URL without ever echoing it.
pub(crate) fn parse_url(url: &str) -> Result<postgres::Config> {
    let mut config = postgres::Config::from_str(url).map_err(|_| Error::InvalidConfiguration {
        path: "gateway.store".into(),
        reason: "the PostgreSQL URL is not a valid connection string (it is not repeated here)"
            .into(),
    })?;
    config
        .connect_timeout(CONNECT_TIMEOUT)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .application_name("jevgate");
    Ok(config)
}

fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|_| Error::StoreUnavailable {
        reason: "TLS is not available".into(),
    })?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Connects once with `config` and sets the session up. TLS when the URL's `sslmode` requires
/// it (`require`: rustls, the server's certificate verified against the Mozilla roots and its
/// host name — stricter than libpq's `require`); `prefer` (the default) and `disable` connect
/// without, as an unverified "preferred" TLS would protect against nobody who can interpose.
pub(crate) fn connect(config: &postgres::Config) -> Result<Client> {
    let mut client = if config.get_ssl_mode() == postgres::config::SslMode::Require {
        config.connect(tls()?)
    } else {
        config.connect(postgres::NoTls)
    }
    .map_err(|e| pg_error("connect", &e))?;
    client
        .batch_execute(&format!(
            "SET statement_timeout = {}",
            STATEMENT_TIMEOUT.as_millis()
        ))
        .map_err(|e| pg_error("configure session", &e))?;
    Ok(client)
}

impl PgStore {
    /// Connects to `url` and applies the missing migrations (once across processes).
    pub(crate) fn open(url: &str) -> Result<PgStore> {
        PgStore::open_config(parse_url(url)?)
    }

    /// Connects with `config` and applies the missing migrations.
    fn open_config(config: postgres::Config) -> Result<PgStore> {
        let mut client = connect(&config)?;
        migrate(&mut client)?;
        Ok(PgStore {
            config,
            client: Mutex::new(Some(client)),
            statements: Mutex::new(super::db::Statements::default()),
            offset_ms: Arc::new(AtomicI64::new(0)),
            closed: AtomicBool::new(false),
        })
    }

    /// Tests only: a fresh database on the cluster at `url`, migrated, and a store on it.
    #[cfg(test)]
    pub(crate) fn open_fresh(url: &str) -> Result<PgStore> {
        use std::sync::atomic::AtomicU64;
        static N: AtomicU64 = AtomicU64::new(0);
        let mut config = parse_url(url)?;
        let name = format!(
            "jg_unit_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            crate::ids::random_hex(4)?
        );
        connect(&config)?
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(|e| pg_error("create a test database", &e))?;
        config.dbname(&name);
        PgStore::open_config(config)
    }

    /// The connection settings (for the listener's own connection).
    pub(crate) fn config(&self) -> &postgres::Config {
        &self.config
    }

    /// The database clock as this store reads it (with the test offset as it is now), for a
    /// connection of its own (the listener's).
    pub(crate) fn db_clock(&self) -> DbClock {
        DbClock {
            offset_ms: self.offset_ms.load(Ordering::Acquire),
        }
    }

    /// Moves this store's view of the database clock by `ms` (tests only, through
    /// `jevgate::unstable`): the PostgreSQL counterpart of `ManualClock::advance`.
    pub(crate) fn advance_clock_ms(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::AcqRel);
    }

    /// Runs `f` in one transaction and commits it before returning. `f` gets the database
    /// clock; read it after taking the locks a decision needs. A connection found closed is
    /// made again first; one that cannot be made, or is lost during the call, is
    /// `STORE_UNAVAILABLE` (the next call reconnects).
    pub(crate) fn tx<T>(
        &self,
        op: &str,
        f: impl FnOnce(&mut Transaction<'_>, DbClock) -> std::result::Result<T, TxError>,
    ) -> Result<T> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::GatewayClosed);
        }
        let clock = DbClock {
            offset_ms: self.offset_ms.load(Ordering::Acquire),
        };
        let mut guard = self.client.lock();
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = None;
            // Statements prepared on the lost connection are gone with it.
            self.statements.lock().clear();
            *guard = Some(connect(&self.config)?);
        }
        let client = guard.as_mut().ok_or(Error::GatewayClosed)?;
        let result = (|| {
            let mut tx = client.transaction()?;
            let value = f(&mut tx, clock)?;
            tx.commit()?;
            Ok(value)
        })();
        match result {
            Ok(v) => Ok(v),
            Err(TxError::Jevgate(e)) => Err(e),
            Err(TxError::Pg(e)) => {
                if e.code().is_none() || client.is_closed() {
                    *guard = None;
                }
                Err(pg_error(op, &e))
            }
        }
    }

    /// For the doctor: the schema version recorded in the database and the database's clock
    /// (ms since the Unix epoch, with the test offset), read in one round trip.
    pub(crate) fn health(&self) -> Result<(i32, i64)> {
        self.tx("check the shared store", |tx, clock| {
            let version: i32 = tx
                .query_one(
                    "SELECT coalesce(max(version), 0) FROM jevgate_migrations",
                    &[],
                )?
                .get(0);
            Ok((version, clock.now_ms(tx)?))
        })
    }

    /// The fleet's random secret (32 bytes, created with the schema): the key of the hashes
    /// every process must compute alike.
    pub(crate) fn fleet_secret(&self) -> Result<Vec<u8>> {
        self.tx("read the fleet secret", |tx, _| {
            Ok(tx
                .query_one(
                    "SELECT value FROM jevgate_meta WHERE key = $1",
                    &[&FLEET_SECRET],
                )?
                .get(0))
        })
    }

    /// A second store on its own connection to the same database, sharing this one's clock
    /// offset (the receipt writer commits on it, so its groups never wait behind lease calls).
    pub(crate) fn sibling(&self) -> Result<PgStore> {
        let client = connect(&self.config)?;
        Ok(PgStore {
            config: self.config.clone(),
            client: Mutex::new(Some(client)),
            statements: Mutex::new(super::db::Statements::default()),
            offset_ms: Arc::clone(&self.offset_ms),
            closed: AtomicBool::new(false),
        })
    }

    /// Runs `f` over a [`Db`](super::db::Db) in one transaction committed before returning
    /// (synchronous commit: durable when this returns `Ok`), with the database clock's now
    /// (ms). A failure of `f` rolls everything back and is mapped like the SQLite store's.
    /// `process` is the fleet process the writes are for ([`Db::process`](super::db::Db));
    /// `clock`: read the database clock first (one more round trip) and hand it to `f`.
    /// Statements are prepared once per connection.
    pub(crate) fn db_tx<T>(
        &self,
        op: &str,
        process: Option<&str>,
        clock: bool,
        f: impl FnOnce(&dyn super::db::Db, Option<i64>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        self.tx(op, |tx, db_clock| {
            let now = if clock {
                Some(db_clock.now_ms(tx)?)
            } else {
                None
            };
            let mut statements = self.statements.lock();
            let db = super::db::PgDb::new(tx, process, &mut statements);
            f(&db, now).map_err(|e| match e {
                rusqlite::Error::ToSqlConversionFailure(inner)
                    if inner.is::<super::db::PgFailure>() =>
                {
                    match inner.downcast::<super::db::PgFailure>() {
                        Ok(p) => TxError::Pg(p.0),
                        Err(_) => TxError::Jevgate(Error::Internal {
                            reason: "a store failure changed its kind".into(),
                        }),
                    }
                }
                // A row that did not fit what the records read (never a value in the text).
                _ => TxError::Jevgate(Error::store_io(op, "an unexpected row or value")),
            })
        })
    }

    /// Drops the connection; later calls fail with `GATEWAY_CLOSED`. Idempotent.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.client.lock().take();
    }
}

/// Tests only: the throw-away cluster's URL (`JEVGATE_PG_URL`), or `None` with the skip
/// printed — a failure under `JEVGATE_REQUIRE_PG=1`.
#[cfg(test)]
pub(crate) fn test_url() -> Option<String> {
    match std::env::var("JEVGATE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let require = std::env::var("JEVGATE_REQUIRE_PG").is_ok_and(|v| v == "1");
            assert!(
                !require,
                "JEVGATE_REQUIRE_PG=1 but JEVGATE_PG_URL is not set"
            );
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: JEVGATE_PG_URL is not set");
            None
        }
    }
}

/// Applies the missing migrations under a session advisory lock, so processes starting
/// together apply each exactly once (the others wait, then find nothing to do). Each
/// migration commits with its row in `jevgate_migrations`, whose primary key would refuse a
/// second application.
fn migrate(client: &mut Client) -> Result<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .map_err(|e| pg_error("lock for migrations", &e))?;
    let result = apply_migrations(client);
    let unlock = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    result?;
    unlock.map_err(|e| pg_error("unlock after migrations", &e))?;
    Ok(())
}

fn apply_migrations(client: &mut Client) -> Result<()> {
    use super::schema::{PgBody, MIGRATIONS, SCHEMA_VERSION};
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS jevgate_migrations (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
            )",
        )
        .map_err(|e| pg_error("create migrations table", &e))?;
    let current: i32 = client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM jevgate_migrations",
            &[],
        )
        .map_err(|e| pg_error("read schema version", &e))?
        .get(0);
    if i64::from(current) > SCHEMA_VERSION {
        return Err(Error::StoreVersionUnsupported {
            found: i64::from(current),
            supported: SCHEMA_VERSION,
        });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > i64::from(current)) {
        let version = i32::try_from(m.version).map_err(|_| Error::Internal {
            reason: "a migration number out of range".into(),
        })?;
        let secret = if matches!(m.postgres, PgBody::SqlThenFleetSecret(_)) {
            let mut secret = [0u8; 32];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret).map_err(
                |_| Error::Internal {
                    reason: "no randomness for the fleet secret".into(),
                },
            )?;
            Some(secret)
        } else {
            None
        };
        let mut tx = client
            .transaction()
            .map_err(|e| pg_error("begin migration", &e))?;
        let body = match m.postgres {
            PgBody::Sql(sql) | PgBody::SqlThenFleetSecret(sql) => tx.batch_execute(sql),
        };
        body.and_then(|()| match secret {
            Some(s) => tx
                .execute(
                    "INSERT INTO jevgate_meta (key, value) VALUES ($1, $2)",
                    &[&FLEET_SECRET, &&s[..]],
                )
                .map(drop),
            None => Ok(()),
        })
        .and_then(|()| {
            tx.execute(
                "INSERT INTO jevgate_migrations (version) VALUES ($1)",
                &[&version],
            )
            .map(drop)
        })
        .map_err(|e| pg_error("migrate", &e))?;
        tx.commit().map_err(|e| pg_error("commit migration", &e))?;
        log::info!(
            "store: PostgreSQL schema migrated to version {} ({})",
            m.version,
            m.name
        );
    }
    Ok(())
}

/// Listens on `channel` on a connection of its own until `stop` is set, calling `deliver`
/// with that connection (to re-read what changed without waiting for the store's shared one)
/// and each distinct notification payload of a batch, and with `None` after every
/// (re)connection — the moment to re-check everything, since notifications sent while
/// disconnected are lost — and `tick` after every round (at least every 100 ms), for work
/// asked of the listener's connection meanwhile. Reconnects every `retry` while the database
/// cannot be reached. Blocking: run it on its own thread.
pub(crate) fn listen_here(
    config: &postgres::Config,
    channel: &str,
    stop: &AtomicBool,
    retry: Duration,
    deliver: &mut dyn FnMut(&mut Client, Option<&str>),
    tick: &mut dyn FnMut(&mut Client),
) {
    use postgres::fallible_iterator::FallibleIterator;
    const POLL: Duration = Duration::from_millis(100);
    /// At most this many payloads are taken per batch (the rest wait for the next round).
    const MAX_BATCH: usize = 1024;
    while !stop.load(Ordering::Acquire) {
        let mut client = match connect(config) {
            Ok(c) => c,
            Err(_) => {
                std::thread::sleep(retry);
                continue;
            }
        };
        if client.batch_execute(&format!("LISTEN {channel}")).is_err() {
            std::thread::sleep(retry);
            continue;
        }
        deliver(&mut client, None);
        let mut rounds = 0u32;
        while !stop.load(Ordering::Acquire) {
            let mut batch = std::collections::BTreeSet::new();
            let mut failed = false;
            {
                let mut notifications = client.notifications();
                match notifications.timeout_iter(POLL).next() {
                    Ok(Some(n)) => {
                        batch.insert(n.payload().to_string());
                    }
                    Ok(None) => {}
                    Err(_) => failed = true,
                }
                // What else arrived with it, without waiting.
                let mut ready = notifications.iter();
                while !failed && !batch.is_empty() && batch.len() < MAX_BATCH {
                    match ready.next() {
                        Ok(Some(n)) => {
                            batch.insert(n.payload().to_string());
                        }
                        Ok(None) => break,
                        Err(_) => failed = true,
                    }
                }
            }
            for payload in &batch {
                deliver(&mut client, Some(payload));
            }
            tick(&mut client);
            if failed {
                break;
            }
            // A connection that died quietly shows up on the next round trip (about each second).
            rounds = rounds.wrapping_add(1);
            if client.is_closed() || (rounds.is_multiple_of(10) && client.simple_query("").is_err())
            {
                break;
            }
        }
    }
}

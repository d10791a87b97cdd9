//! Device control leases in PostgreSQL rows, shared by every process of a fleet (issue 23
//! item 2, feature `postgres`).
//!
//! Owns running the very transitions of `control.rs` (the SQLite engine's pure state machine)
//! on a device's row inside one transaction: the row is locked (`SELECT … FOR UPDATE`), the
//! database's clock is read *after* the lock (one clock for the fleet; host clocks may
//! disagree), the transition runs, and the row is written back with a `fencing_token` that
//! grows by one whenever the live holder changes (acquire by a new tenure, take-back, release,
//! expiry), so a token names exactly one tenure. The tokens of the tenures a take-back ended
//! are kept (the last 16, `taken_back`): those are the tenures whose in-flight commands must be
//! cancelled wherever they run (R-LEASE-3), while a release or an expiry cancels nothing
//! (R-LEASE-6). Every token change NOTIFYs `jevgate_lease` with the device id, so the process
//! that lost the lease learns it (`fleet.rs`). It also keeps
//! device owners, the processes' liveness rows, and profile leases (one row per profile, held
//! by one process until given back or past its end on the database clock).
//!
//! It never lets two sessions hold one device (the row lock serialises every transition), never
//! judges expiry by a host's clock, never frees a lease because a process restarted (the row
//! outlives every process), and never names a holder in an error.

use super::control::{After, DeviceLease, Record, MAX_NOTICES_PER_DEVICE};
use crate::clock::Instant;
use crate::store::pg::{DbClock, PgStore, TxError};
use crate::{Error, Result};
use std::sync::Arc;
use std::time::Duration;

/// The NOTIFY channel of lease changes (payload: the device id).
pub(crate) const CHANNEL: &str = "jevgate_lease";

/// Liveness settings of a fleet's processes (item 2): each writes its row every `heartbeat`,
/// and is dead once its row is older than `dead_after` on the database clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetSettings {
    /// How often a process writes its liveness row (default 2 s).
    pub heartbeat: Duration,
    /// How old a liveness row may be before its process counts as dead (default 10 s).
    pub dead_after: Duration,
}

impl Default for FleetSettings {
    fn default() -> Self {
        FleetSettings {
            heartbeat: Duration::from_secs(2),
            dead_after: Duration::from_secs(10),
        }
    }
}

/// Whether a process whose last heartbeat was at `heartbeat_ms` is alive at `now_ms` (pure).
pub(crate) fn is_alive(heartbeat_ms: i64, now_ms: i64, dead_after: Duration) -> bool {
    let limit = i64::try_from(dead_after.as_millis()).unwrap_or(i64::MAX);
    now_ms.saturating_sub(heartbeat_ms) < limit
}

/// The lease rows of one process's view of the fleet.
#[derive(Debug)]
pub(crate) struct PgLeases {
    store: Arc<PgStore>,
    process: String,
}

fn corrupt() -> TxError {
    TxError::Jevgate(Error::StoreCorrupt {
        reason: "a control lease row is unreadable".into(),
    })
}

fn instant(ms: i64) -> Instant {
    Instant::from_origin(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl PgLeases {
    pub(crate) fn new(store: Arc<PgStore>, process: String) -> PgLeases {
        PgLeases { store, process }
    }

    pub(crate) fn store(&self) -> &Arc<PgStore> {
        &self.store
    }

    /// This process's id (its liveness row, the `holder_process` of what it acquires).
    pub(crate) fn process(&self) -> &str {
        &self.process
    }

    /// Runs `f` on `device`'s lease under the row's lock at the database's time, writes the
    /// row back when the state changed, bumps the fencing token (and NOTIFYs) when the live
    /// holder changed.
    pub(crate) fn transition<T>(
        &self,
        device: &str,
        f: impl FnOnce(&mut DeviceLease, Instant) -> T,
    ) -> Result<(T, After)> {
        self.store.tx("lease transition", |tx, clock| {
            let select = "SELECT state, fencing_token, taken_back FROM jevgate_control_leases
                          WHERE device_id = $1 FOR UPDATE";
            let row = match tx.query_opt(select, &[&device])? {
                Some(row) => row,
                None => {
                    tx.execute(
                        "INSERT INTO jevgate_control_leases (device_id) VALUES ($1)
                         ON CONFLICT (device_id) DO NOTHING",
                        &[&device],
                    )?;
                    tx.query_one(select, &[&device])?
                }
            };
            let state: String = row.get(0);
            let token = u64::try_from(row.get::<_, i64>(1)).map_err(|_| corrupt())?;
            let mut taken_back: Vec<i64> = row.get(2);
            let record: Record = serde_json::from_str(&state).map_err(|_| corrupt())?;
            // The clock after the lock: a waiter judges expiry at the time it gets the row.
            let now_ms = clock.now_ms(tx)?;
            let now = instant(now_ms);
            let mut lease = DeviceLease::from_record(&record);
            let before = lease.holder(now).map(str::to_string);
            let out = f(&mut lease, now);
            let after_holder = lease.holder(now).map(str::to_string);
            let after = lease.to_record();
            let mut token_after = token;
            let mut took_back = None;
            if before != after_holder {
                token_after = token.saturating_add(1);
                // A take-back: the live holder is gone and is owed a notice (an expiry or a
                // release leaves no notice for it).
                if let (Some(old), None) = (&before, &after_holder) {
                    if lease.snapshot().revoked_sessions.contains(old) {
                        took_back = Some(token);
                        taken_back.push(to_i64(token));
                        let excess = taken_back.len().saturating_sub(MAX_NOTICES_PER_DEVICE);
                        taken_back.drain(..excess);
                    }
                }
            }
            if after != record || token_after != token {
                let json = serde_json::to_string(&after).map_err(|_| corrupt())?;
                let snapshot = lease.snapshot();
                let expires = after.hold_expires_ms().map(to_i64);
                let process = after_holder.as_ref().map(|_| self.process.as_str());
                tx.execute(
                    "UPDATE jevgate_control_leases SET state = $2, holder = $3, revoked = $4,
                       holder_process = CASE WHEN $3::text IS NULL THEN NULL
                                             WHEN $7 THEN $5 ELSE holder_process END,
                       expires_at = $6, fencing_token = $8, taken_back = $9
                     WHERE device_id = $1",
                    &[
                        &device,
                        &json,
                        &snapshot.holder,
                        &snapshot.revoked_sessions,
                        &process,
                        &expires,
                        &(token_after != token),
                        &to_i64(token_after),
                        &taken_back,
                    ],
                )?;
            }
            if token_after != token {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &device])?;
            }
            Ok((
                out,
                After {
                    token: token_after,
                    now_ms: u64::try_from(now_ms).unwrap_or(0),
                    took_back,
                },
            ))
        })
    }

    /// Reads `device`'s lease at the database's time without changing it: the state (an empty
    /// lease when the device has no row) and its fencing token.
    pub(crate) fn read(&self, device: &str) -> Result<(DeviceLease, After)> {
        self.store.tx("lease read", |tx, clock| {
            let row = tx.query_opt(
                "SELECT state, fencing_token FROM jevgate_control_leases WHERE device_id = $1",
                &[&device],
            )?;
            let now_ms = clock.now_ms(tx)?;
            let (lease, token) = match row {
                None => (DeviceLease::default(), 0),
                Some(row) => {
                    let state: String = row.get(0);
                    let record: Record = serde_json::from_str(&state).map_err(|_| corrupt())?;
                    let token = u64::try_from(row.get::<_, i64>(1)).map_err(|_| corrupt())?;
                    (DeviceLease::from_record(&record), token)
                }
            };
            Ok((
                lease,
                After {
                    token,
                    now_ms: u64::try_from(now_ms).unwrap_or(0),
                    took_back: None,
                },
            ))
        })
    }

    /// Reads `device`'s lease on `client` (the listener's own connection) at the database's
    /// time as `clock` reads it: the state (empty when the device has no row) and that time.
    pub(crate) fn read_on(
        client: &mut postgres::Client,
        clock: DbClock,
        device: &str,
    ) -> std::result::Result<(DeviceLease, u64), TxError> {
        let row = client.query_opt(
            "SELECT state FROM jevgate_control_leases WHERE device_id = $1",
            &[&device],
        )?;
        let now_ms = clock.now_ms(client)?;
        let lease = match row {
            None => DeviceLease::default(),
            Some(row) => {
                let state: String = row.get(0);
                let record: Record = serde_json::from_str(&state).map_err(|_| corrupt())?;
                DeviceLease::from_record(&record)
            }
        };
        Ok((lease, u64::try_from(now_ms).unwrap_or(0)))
    }

    /// The tokens of the device's last tenures ended by a take-back (oldest first), read on
    /// `client` (the listener's own connection).
    pub(crate) fn taken_back_on(
        client: &mut postgres::Client,
        device: &str,
    ) -> std::result::Result<Vec<u64>, postgres::Error> {
        let row = client.query_opt(
            "SELECT taken_back FROM jevgate_control_leases WHERE device_id = $1",
            &[&device],
        )?;
        Ok(row
            .map(|r| r.get::<_, Vec<i64>>(0))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|t| u64::try_from(t).ok())
            .collect())
    }

    /// Devices whose lease `session` holds or which owe it a notice.
    pub(crate) fn devices_of(&self, session: &str) -> Result<Vec<String>> {
        self.store.tx("lease devices of session", |tx, _| {
            let rows = tx.query(
                "SELECT device_id FROM jevgate_control_leases
                 WHERE holder = $1 OR $1 = ANY(revoked) ORDER BY device_id",
                &[&session],
            )?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// The recorded owner of `device`.
    pub(crate) fn owner(&self, device: &str) -> Result<Option<String>> {
        self.store.tx("read device owner", |tx, _| {
            Ok(tx
                .query_opt(
                    "SELECT owner FROM jevgate_device_owners WHERE device_id = $1",
                    &[&device],
                )?
                .map(|r| r.get(0)))
        })
    }

    /// Records `owner` as the owner of `device` for the whole fleet.
    pub(crate) fn set_owner(&self, device: &str, owner: &str) -> Result<()> {
        self.store.tx("write device owner", |tx, _| {
            tx.execute(
                "INSERT INTO jevgate_device_owners (device_id, owner) VALUES ($1, $2)
                 ON CONFLICT (device_id) DO UPDATE SET owner = excluded.owner",
                &[&device, &owner],
            )?;
            Ok(())
        })
    }

    /// Takes or renews the profile lease `key` for this process until `ttl` past the
    /// database's time: granted (with its fencing token) when the row is free, expired, or
    /// already this process's; `None` while another process holds it.
    pub(crate) fn profile_acquire(&self, key: &str, ttl: Duration) -> Result<Option<u64>> {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.store.tx("profile lease", |tx, clock| {
            let now = clock.now_ms(tx)?;
            let row = tx.query_opt(
                "INSERT INTO jevgate_profile_leases
                   (profile_key, holder_process, expires_at, fencing_token)
                 VALUES ($1, $2, $3, 1)
                 ON CONFLICT (profile_key) DO UPDATE SET
                   fencing_token = jevgate_profile_leases.fencing_token
                     + CASE WHEN jevgate_profile_leases.holder_process = excluded.holder_process
                            THEN 0 ELSE 1 END,
                   holder_process = excluded.holder_process,
                   expires_at = excluded.expires_at
                 WHERE jevgate_profile_leases.holder_process = excluded.holder_process
                    OR jevgate_profile_leases.expires_at <= $4
                 RETURNING fencing_token",
                &[&key, &self.process, &now.saturating_add(ttl_ms), &now],
            )?;
            Ok(row.and_then(|r| u64::try_from(r.get::<_, i64>(0)).ok()))
        })
    }

    /// Gives the profile lease `key` back if this process holds it.
    pub(crate) fn profile_release(&self, key: &str) -> Result<()> {
        self.store.tx("release profile lease", |tx, _| {
            tx.execute(
                "DELETE FROM jevgate_profile_leases
                 WHERE profile_key = $1 AND holder_process = $2",
                &[&key, &self.process],
            )?;
            Ok(())
        })
    }

    /// Extends every profile lease this process still holds to `ttl` past the database's
    /// time (the heartbeat); a lease that already ended stays ended.
    pub(crate) fn profile_renew_all(&self, ttl: Duration) -> Result<()> {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.store.tx("renew profile leases", |tx, clock| {
            let now = clock.now_ms(tx)?;
            tx.execute(
                "UPDATE jevgate_profile_leases SET expires_at = $2
                 WHERE holder_process = $1 AND expires_at > $3",
                &[&self.process, &now.saturating_add(ttl_ms), &now],
            )?;
            Ok(())
        })
    }

    /// Writes this process's liveness row (a heartbeat) at the database's time.
    pub(crate) fn heartbeat(&self) -> Result<()> {
        self.store.tx("heartbeat", |tx, clock| {
            let now = clock.now_ms(tx)?;
            tx.execute(
                "INSERT INTO jevgate_processes (process_id, started_at, heartbeat_at)
                 VALUES ($1, $2, $2)
                 ON CONFLICT (process_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                &[&self.process, &now],
            )?;
            Ok(())
        })
    }

    /// Removes this process's liveness row (a clean close: gone, not dead).
    pub(crate) fn forget_process(&self) -> Result<()> {
        self.store.tx("remove liveness row", |tx, _| {
            tx.execute(
                "DELETE FROM jevgate_processes WHERE process_id = $1",
                &[&self.process],
            )?;
            Ok(())
        })
    }

    /// The processes alive now on the database clock (`dead_after` old rows are dead).
    pub(crate) fn live_processes(&self, dead_after: Duration) -> Result<Vec<String>> {
        self.store.tx("read liveness rows", |tx, clock| {
            let now = clock.now_ms(tx)?;
            let rows = tx.query(
                "SELECT process_id, heartbeat_at FROM jevgate_processes ORDER BY process_id",
                &[],
            )?;
            Ok(rows
                .iter()
                .filter(|r| is_alive(r.get(1), now, dead_after))
                .map(|r| r.get(0))
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_dead_once_its_heartbeat_is_dead_after_old() {
        let ten = Duration::from_secs(10);
        assert!(is_alive(1_000, 1_000, ten));
        assert!(is_alive(1_000, 10_999, ten));
        assert!(!is_alive(1_000, 11_000, ten));
        assert!(
            is_alive(i64::MAX, i64::MIN, ten),
            "saturating, never a panic"
        );
        assert!(!is_alive(i64::MIN, i64::MAX, ten));
    }
}

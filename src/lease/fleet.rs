//! The fleet: this process's place among the processes sharing one PostgreSQL store (issue 23
//! item 2).
//!
//! Owns what [`super::Leases`] needs when `gateway.store.kind` is `"postgres"`: the shared
//! lease rows (`pg.rs`), a listener thread on NOTIFY `jevgate_lease` that hands every changed
//! device (and, after each reconnection, "re-check everything") to the lease manager so it
//! cancels the in-flight commands of a tenure this process lost (and re-reads the holds
//! status-asking device connections watch, so their I/O thread never waits on the database),
//! and a heartbeat thread that
//! keeps this process's liveness row fresh and renews the profile leases this process holds.
//! A build without the cargo feature `postgres` has
//! an uninhabited stand-in (`enum Fleet {}`): the lease manager's code is the same in both
//! builds (the shared store it would need cannot exist there).
//!
//! It never sees the URL (the gateway resolves it and opens the shared store) and never
//! decides a lease itself: the transitions are `control.rs`'s.

use super::control::{After, DeviceLease};
use crate::clock::Instant;
use crate::store::SharedStore;
use crate::Result;

#[cfg(feature = "postgres")]
pub(crate) use real::Fleet;
#[cfg(not(feature = "postgres"))]
pub(crate) use stand_in::Fleet;

/// What the listener tells the lease manager, and asks it.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet listens
pub(crate) trait FleetNews: Send + Sync {
    /// The devices this process has commands in flight on (re-checked after a reconnection).
    fn devices_in_flight(&self) -> Vec<String>;
    /// `device`'s tenures ended by a take-back, as just read: cancel the commands of those.
    fn taken_back(&self, device: &str, tokens: Vec<u64>);
    /// The devices whose hold a status-asking connection watches: all of them (after a
    /// reconnection) or only those to read afresh.
    fn watched(&self, all: bool) -> Vec<String>;
    /// Whether a status-asking connection watches `device`'s hold.
    fn is_watched(&self, device: &str) -> bool;
    /// `device`'s lease as just read at `db_now_ms` on the database clock.
    fn hold_read(&self, device: &str, lease: &DeviceLease, db_now_ms: u64);
}

#[cfg(not(feature = "postgres"))]
mod stand_in {
    use super::*;

    /// No fleet in a build without the `postgres` feature: a value of this type cannot exist.
    #[derive(Debug)]
    pub(crate) enum Fleet {}

    impl Fleet {
        /// No fleet without a shared store (and none can exist in this build).
        pub(crate) fn open(shared: Option<&SharedStore>) -> Result<Option<Fleet>> {
            match shared {
                None => Ok(None),
                Some(s) => match *s {},
            }
        }
        pub(crate) fn start(&self, _news: Box<dyn FleetNews>) {
            match *self {}
        }
        pub(crate) fn transition<T>(
            &self,
            _device: &str,
            _f: impl FnOnce(&mut DeviceLease, Instant) -> T,
        ) -> Result<(T, After)> {
            match *self {}
        }
        pub(crate) fn read(&self, _device: &str) -> Result<(DeviceLease, After)> {
            match *self {}
        }
        pub(crate) fn devices_of(&self, _session: &str) -> Result<Vec<String>> {
            match *self {}
        }
        pub(crate) fn owner(&self, _device: &str) -> Result<Option<String>> {
            match *self {}
        }
        pub(crate) fn set_owner(&self, _device: &str, _owner: &str) -> Result<()> {
            match *self {}
        }
        pub(crate) fn close(&self) {
            match *self {}
        }
        pub(crate) fn process_id(&self) -> &str {
            match *self {}
        }
        pub(crate) fn advance_clock_ms(&self, _ms: i64) {
            match *self {}
        }
        pub(crate) fn dead_after(&self) -> std::time::Duration {
            match *self {}
        }
        pub(crate) fn live_processes(&self) -> Result<Vec<String>> {
            match *self {}
        }
        pub(crate) fn profile_key(&self, _organization: &str, _profile_key: &str) -> String {
            match *self {}
        }
        pub(crate) fn profile_acquire(&self, _key: &str) -> Result<bool> {
            match *self {}
        }
        pub(crate) fn profile_release(&self, _key: &str) -> Result<()> {
            match *self {}
        }
    }
}

#[cfg(feature = "postgres")]
mod real {
    use super::super::pg::{FleetSettings, PgLeases, CHANNEL};
    use super::*;
    use parking_lot::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// How long a profile lease lasts past its last renewal on the database clock: every call
    /// using the profile and every heartbeat renew it, so it ends this long after its process
    /// died or lost the store — never earlier (a restarted process is a new one and waits).
    pub(crate) const PROFILE_LEASE_TTL: Duration = Duration::from_secs(30);

    /// This process's membership of a fleet.
    pub(crate) struct Fleet {
        leases: PgLeases,
        /// The fleet's secret: profile leases are keyed by an HMAC under it, the same in every
        /// process (each gateway's own secret names its local profile directory).
        secret: Vec<u8>,
        settings: FleetSettings,
        stop: Arc<AtomicBool>,
        threads: Mutex<Vec<JoinHandle<()>>>,
    }

    impl std::fmt::Debug for Fleet {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Fleet").finish_non_exhaustive()
        }
    }

    impl Fleet {
        /// `None` without a shared store; with one, this process joins the fleet: its first
        /// liveness row is written.
        pub(crate) fn open(shared: Option<&SharedStore>) -> Result<Option<Fleet>> {
            let Some(shared) = shared else {
                return Ok(None);
            };
            let process = crate::ids::random_id("proc_")?;
            let leases = PgLeases::new(Arc::clone(&shared.0), process);
            leases.heartbeat()?;
            let secret = shared.0.fleet_secret()?;
            Ok(Some(Fleet {
                leases,
                secret,
                settings: FleetSettings::default(),
                stop: Arc::new(AtomicBool::new(false)),
                threads: Mutex::new(Vec::new()),
            }))
        }

        /// Starts the listener and the heartbeat thread. The listener re-reads a device named
        /// by a NOTIFY on its own connection (so a busy store connection never delays a
        /// cancellation) and tells `news`; after each (re)connection it re-reads every device
        /// with commands in flight, since notifications sent meanwhile are lost.
        pub(crate) fn start(&self, news: Box<dyn FleetNews>) {
            let config = self.leases.store().config().clone();
            let store = Arc::clone(self.leases.store());
            let stop = Arc::clone(&self.stop);
            let listener = std::thread::Builder::new()
                .name("jevgate-fleet-listen".into())
                .spawn(move || {
                    let read_holds = |client: &mut postgres::Client, devices: Vec<String>| {
                        for d in devices {
                            match PgLeases::read_on(client, store.db_clock(), &d) {
                                Ok((lease, now_ms)) => news.hold_read(&d, &lease, now_ms),
                                Err(_) => log::warn!("fleet: a lease could not be re-read"),
                            }
                        }
                    };
                    crate::store::pg::listen_here(
                        &config,
                        CHANNEL,
                        &stop,
                        Duration::from_millis(500),
                        &mut |client, device| {
                            // Only devices with commands in flight here need a re-read.
                            let in_flight = news.devices_in_flight();
                            let devices = match device {
                                Some(d) => in_flight.into_iter().filter(|x| x == d).collect(),
                                None => in_flight,
                            };
                            for d in devices {
                                match PgLeases::taken_back_on(client, &d) {
                                    Ok(tokens) => news.taken_back(&d, tokens),
                                    Err(_) => log::warn!("fleet: a lease could not be re-read"),
                                }
                            }
                            // And the holds status-asking connections watch.
                            let watched = match device {
                                Some(d) if news.is_watched(d) => vec![d.to_string()],
                                Some(_) => Vec::new(),
                                None => news.watched(true),
                            };
                            read_holds(client, watched);
                        },
                        &mut |client| read_holds(client, news.watched(false)),
                    );
                });
            let beat = PgLeases::new(
                Arc::clone(self.leases.store()),
                self.leases.process().to_string(),
            );
            let stop = Arc::clone(&self.stop);
            let every = self.settings.heartbeat;
            let heartbeat = std::thread::Builder::new()
                .name("jevgate-fleet-heartbeat".into())
                .spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        std::thread::park_timeout(every);
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                        if let Err(e) = beat.heartbeat() {
                            log::warn!("fleet heartbeat failed: {}", e.code());
                        }
                        if let Err(e) = beat.profile_renew_all(PROFILE_LEASE_TTL) {
                            log::warn!("profile leases not renewed: {}", e.code());
                        }
                    }
                });
            let mut threads = self.threads.lock();
            for t in [listener, heartbeat] {
                match t {
                    Ok(handle) => threads.push(handle),
                    Err(_) => log::error!("a fleet thread could not be started"),
                }
            }
        }

        pub(crate) fn transition<T>(
            &self,
            device: &str,
            f: impl FnOnce(&mut DeviceLease, Instant) -> T,
        ) -> Result<(T, After)> {
            self.leases.transition(device, f)
        }

        pub(crate) fn read(&self, device: &str) -> Result<(DeviceLease, After)> {
            self.leases.read(device)
        }

        pub(crate) fn devices_of(&self, session: &str) -> Result<Vec<String>> {
            self.leases.devices_of(session)
        }

        pub(crate) fn owner(&self, device: &str) -> Result<Option<String>> {
            self.leases.owner(device)
        }

        pub(crate) fn set_owner(&self, device: &str, owner: &str) -> Result<()> {
            self.leases.set_owner(device, owner)
        }

        /// This process's id in the fleet (its liveness row).
        pub(crate) fn process_id(&self) -> &str {
            self.leases.process()
        }

        /// How old a liveness row may be before its process counts as dead.
        pub(crate) fn dead_after(&self) -> Duration {
            self.settings.dead_after
        }

        /// Moves this process's view of the database clock (tests only).
        pub(crate) fn advance_clock_ms(&self, ms: i64) {
            self.leases.store().advance_clock_ms(ms);
        }

        /// The processes whose liveness row is fresh on the database clock.
        pub(crate) fn live_processes(&self) -> Result<Vec<String>> {
            self.leases.live_processes(self.settings.dead_after)
        }

        /// The fleet-wide key of the profile `(organization, profile_key)`: its keyed hash
        /// under the fleet's secret (never the raw key).
        pub(crate) fn profile_key(&self, organization: &str, profile_key: &str) -> String {
            super::super::profile::profile_key_hash(&self.secret, organization, profile_key)
        }

        /// Takes or renews the profile lease `key` for this process (see
        /// [`PROFILE_LEASE_TTL`]); `false` while another process holds it.
        pub(crate) fn profile_acquire(&self, key: &str) -> Result<bool> {
            Ok(self
                .leases
                .profile_acquire(key, PROFILE_LEASE_TTL)?
                .is_some())
        }

        /// Gives the profile lease `key` back (this process no longer uses the profile).
        pub(crate) fn profile_release(&self, key: &str) -> Result<()> {
            self.leases.profile_release(key)
        }

        /// Stops the threads and removes this process's liveness row (it is gone, not dead);
        /// the gateway closes the shared store after. Leases held stay held: a closed process
        /// frees nothing early.
        pub(crate) fn close(&self) {
            if self.stop.swap(true, Ordering::AcqRel) {
                return;
            }
            let threads: Vec<JoinHandle<()>> = self.threads.lock().drain(..).collect();
            for t in &threads {
                t.thread().unpark();
            }
            let me = std::thread::current().id();
            for t in threads {
                // The listener may be the one dropping the last handle on the gateway.
                if t.thread().id() != me {
                    let _ = t.join();
                }
            }
            if let Err(e) = self.leases.forget_process() {
                log::warn!("fleet liveness row not removed: {}", e.code());
            }
        }
    }

    impl Drop for Fleet {
        fn drop(&mut self) {
            self.close();
        }
    }
}

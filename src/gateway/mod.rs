//! The [`Gateway`] façade: owns the live configuration generation, the store, the clock, the
//! lease manager, the device service, the Jev client, the task service and the threads that do
//! long work. Every `impl Gateway` lives in this module: this file (open, configuration,
//! doctor, close), `devices.rs` (pairing, channel, tools, artifacts), `jev.rs` (evaluations,
//! usage, thinking), `browsers.rs` (local browser sessions and the managed tool family),
//! `tasks.rs` (tasks and the host that runs them on the gateway) and `agent.rs` (the agent
//! tools' executor). It sits above every
//! capability (`task`, `browser`, `device`, `jev`, `lease`, `grammar`) and below only `ffi` and
//! `unstable`; nothing below it may use it (tests/layers.rs): they get what they need passed in.
//!
//! A configuration replaces the live one only after it validated as a whole; the swap is atomic
//! and bumps the generation, and work started earlier keeps the snapshot it captured
//! (R-CFG-RELOAD). Environment names that ever held credentials stay reported as secret for the
//! life of the gateway (R-CFG-SECRETS).

use crate::clock::{Instant, SharedClock, SystemClock};
use crate::config::{doctor, CheckStatus, Config, ConfigSnapshot, DoctorCheck, DoctorReport};
use crate::device::DeviceService;
use crate::jev::JevClient;
use crate::lease::Leases;
use crate::store::Store;
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod agent;
mod autopilot;
mod browsers;
mod devices;
mod jev;
mod tasks;

/// How to open a [`Gateway`].
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// Directory holding the store (created if missing). One live gateway per directory.
    pub data_dir: PathBuf,
    /// The initial configuration (validated again on open).
    pub config: Config,
    /// The clock; `None` uses the system clock.
    pub clock: Option<SharedClock>,
    /// Extra trusted root certificates (DER) for provider connections. When non-empty, only
    /// these are trusted (a private CA, tests); otherwise the Mozilla roots are used.
    pub jev_root_certificates: Vec<Vec<u8>>,
    /// Task slots, session bounds and idle expiry (R-TSK, R-TSK-CTL); default
    /// [`crate::task::TaskLimits::default`].
    pub task_limits: crate::task::TaskLimits,
    /// How tasks start their local Chromium (executable, timeouts, window); the gateway's clock
    /// and the task's profile replace `clock` and `profile_dir`.
    pub task_browser: crate::browser::LaunchOptions,
}

impl GatewayOptions {
    /// Options with the system clock.
    pub fn new(data_dir: impl Into<PathBuf>, config: Config) -> GatewayOptions {
        GatewayOptions {
            data_dir: data_dir.into(),
            config,
            clock: None,
            jev_root_certificates: Vec::new(),
            task_limits: crate::task::TaskLimits::default(),
            task_browser: crate::browser::LaunchOptions::default(),
        }
    }

    /// Runs at most `slots` tasks at once (at least one).
    pub fn with_task_slots(mut self, slots: usize) -> GatewayOptions {
        self.task_limits.slots = slots.max(1);
        self
    }

    /// Task slots, session bounds and idle expiry ([`crate::task::TaskLimits`]).
    pub fn with_task_limits(mut self, limits: crate::task::TaskLimits) -> GatewayOptions {
        self.task_limits = limits;
        self
    }

    /// Trusts only these DER root certificates for provider connections (private CA, tests).
    pub fn with_jev_root_certificates(mut self, roots: Vec<Vec<u8>>) -> GatewayOptions {
        self.jev_root_certificates = roots;
        self
    }

    /// Uses `clock` instead of the system clock (tests, simulations).
    pub fn with_clock(mut self, clock: SharedClock) -> GatewayOptions {
        self.clock = Some(clock);
        self
    }
}

/// The embeddable gateway. Cheap to clone (an `Arc` inside); every method is safe from any
/// thread. Call [`Gateway::close`] (or drop every clone) to release the data directory.
///
/// ```
/// use jevgate::{Config, Gateway, GatewayOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let config = Config::from_json_str(r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#).unwrap();
/// let gw = Gateway::open(GatewayOptions::new(dir.path(), config)).unwrap();
/// assert_eq!(gw.generation(), 1);
/// let generation = gw.reload(Config::from_json_str("{}").unwrap()).unwrap();
/// assert_eq!(generation, 2);
/// assert!(gw.doctor().unwrap().ok);
/// gw.close();
/// ```
#[derive(Debug, Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<Store>,
    /// The store a fleet shares (`gateway.store.kind: "postgres"`), closed last.
    shared: Option<crate::store::SharedStore>,
    leases: Leases,
    devices: DeviceService,
    reaper: Mutex<Option<Reaper>>,
    clock: SharedClock,
    live: RwLock<Arc<ConfigSnapshot>>,
    /// Serialises reloads so generations are assigned in order.
    reload: Mutex<()>,
    secret_names: Mutex<BTreeSet<String>>,
    jev: JevClient,
    closed: AtomicBool,
    data_dir: PathBuf,
    local_browsers: RwLock<Option<Arc<crate::browser::LocalSessions>>>,
    /// The managed tool family's caps and per-session executors (issue 15).
    managed: browsers::ManagedState,
    tasks: crate::task::TaskService,
}

impl Gateway {
    /// Validates the configuration, opens (or creates) the store, and starts the gateway.
    pub fn open(options: GatewayOptions) -> Result<Gateway> {
        options.config.validate()?;
        let store = Arc::new(Store::open(&options.data_dir)?);
        let clock: SharedClock = options
            .clock
            .unwrap_or_else(|| Arc::new(SystemClock::new()));
        // `gateway.store`: what a fleet shares lives in PostgreSQL (issue 23). The URL is read
        // from its reference here, handed to the store only, and dropped.
        let shared = match options.config.gateway.store.url_ref() {
            None => None,
            Some(reference) => {
                crate::store::SharedStore::check_built()?;
                let url = reference.resolve(&|name| std::env::var_os(name))?;
                Some(crate::store::SharedStore::open(url.expose())?)
            }
        };
        let fleet = crate::lease::Fleet::open(shared.as_ref())?;
        let leases = Leases::open(Arc::clone(&store), Arc::clone(&clock), fleet)?;
        let devices = DeviceService::open(
            Arc::clone(&store),
            shared.as_ref(),
            Arc::clone(&clock),
            &leases,
            options.data_dir.clone(),
        )?;
        if let (Some(shared), Some(process)) = (&shared, leases.fleet_process()) {
            devices.join_fleet(shared, process);
        }
        let jev = JevClient::open(
            Arc::clone(&store),
            &options.jev_root_certificates,
            shared.as_ref(),
        )?;
        let reaper = Reaper::start(
            leases.clone(),
            devices.artifact_purger(),
            Arc::clone(&clock),
        )?;
        let secret_names = options.config.secret_env_names();
        let host = Arc::new(tasks::Host::default());
        // Tasks and receipts live where the fleet shares them (issue 23 item 3), else in the file.
        let task_db = crate::task::engine::TaskDb::open(
            Arc::clone(&store),
            shared.as_ref(),
            leases
                .fleet_member()
                .map(|(process, dead_after)| crate::task::engine::Member {
                    process,
                    dead_after_ms: i64::try_from(dead_after.as_millis()).unwrap_or(i64::MAX),
                }),
        )?;
        crate::task::autopilot_store::recover(&task_db, clock.wall_millis())?;
        let task_service = crate::task::TaskService::open(
            task_db,
            options.data_dir.clone(),
            Arc::clone(&clock),
            host.clone(),
            options.task_limits,
        )?;
        task_service.set_retention(options.config.gateway.tasks.retention());
        log::info!("gateway opened (schema {})", crate::store::SCHEMA_VERSION);
        let gateway = Gateway {
            inner: Arc::new(Inner {
                store,
                shared,
                leases,
                devices,
                reaper: Mutex::new(Some(reaper)),
                clock,
                live: RwLock::new(Arc::new(ConfigSnapshot {
                    generation: 1,
                    config: options.config,
                })),
                reload: Mutex::new(()),
                secret_names: Mutex::new(secret_names),
                jev,
                closed: AtomicBool::new(false),
                data_dir: options.data_dir.clone(),
                local_browsers: RwLock::new(None),
                managed: browsers::ManagedState::default(),
                tasks: task_service,
            }),
        };
        host.attach(&gateway, options.task_browser);
        gateway.inner.tasks.start_readmitted();
        Ok(gateway)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            Err(Error::GatewayClosed)
        } else {
            Ok(())
        }
    }

    /// The live configuration snapshot (its generation and config).
    pub fn config(&self) -> Arc<ConfigSnapshot> {
        Arc::clone(&self.inner.live.read())
    }

    /// The live configuration generation.
    pub fn generation(&self) -> u64 {
        self.inner.live.read().generation
    }

    /// Validates `config` as a whole and, only if it is valid, swaps it in atomically and
    /// returns the new generation. On error the live configuration is unchanged.
    pub fn reload(&self, config: Config) -> Result<u64> {
        self.check_open()?;
        config.validate()?;
        let _serial = self.inner.reload.lock();
        if config.gateway.store != self.inner.live.read().config.gateway.store {
            return Err(Error::config(
                "gateway.store",
                "cannot change while the gateway is open; close it and open it with the new store",
            ));
        }
        let names = config.secret_env_names();
        self.inner
            .tasks
            .set_retention(config.gateway.tasks.retention());
        let mut live = self.inner.live.write();
        let generation = live.generation + 1;
        *live = Arc::new(ConfigSnapshot { generation, config });
        drop(live);
        self.inner.secret_names.lock().extend(names);
        log::info!("configuration reloaded (generation {generation})");
        Ok(generation)
    }

    /// Parses, validates and reloads a JSON configuration document.
    pub fn reload_json(&self, json: &str) -> Result<u64> {
        self.reload(Config::from_json_str(json)?)
    }

    /// Local readiness checks: the configuration's credential references (file readability and
    /// size, variables set — no key is read into the report, no network call), the store's
    /// integrity, and whether group or others can reach the data directory or the store's files
    /// (`store.permissions`, a warning: the modes are never changed). Fails only when the gateway is closed; a failing check is reported in the
    /// report (`ok == false`), not as an error.
    pub fn doctor(&self) -> Result<DoctorReport> {
        self.check_open()?;
        let snapshot = self.config();
        let report = doctor(&snapshot.config, &|name| std::env::var_os(name));
        let mut checks = report.checks;
        checks.push(match self.inner.store.quick_check() {
            Ok(()) => DoctorCheck {
                name: "store".into(),
                status: CheckStatus::Ok,
                code: None,
                detail: format!("{} is sound", crate::store::DB_FILE),
            },
            Err(e) => DoctorCheck {
                name: "store".into(),
                status: CheckStatus::Error,
                code: Some(e.code()),
                detail: e.to_string(),
            },
        });
        // Issue 23: the shared store — reachable, migrated, its clock against this host's.
        if let Some(shared) = &self.inner.shared {
            let (verdict, detail) = shared.doctor(self.inner.clock.wall_millis());
            checks.push(DoctorCheck {
                name: "store.shared".into(),
                status: match verdict {
                    Ok(true) => CheckStatus::Ok,
                    Ok(false) => CheckStatus::Warn,
                    Err(_) => CheckStatus::Error,
                },
                code: verdict.err().map(|e| e.code()),
                detail,
            });
        }
        // Issue 20 item 1: who else can read the data directory is reported, never changed.
        let exposure = self.inner.store.exposure();
        checks.push(DoctorCheck {
            name: "store.permissions".into(),
            status: if exposure.is_empty() {
                CheckStatus::Ok
            } else {
                CheckStatus::Warn
            },
            code: None,
            detail: if exposure.is_empty() {
                "the data directory and the store's files are private to the gateway's user".into()
            } else {
                exposure.join("; ")
            },
        });
        Ok(DoctorReport::new(checks))
    }

    /// Every environment variable name that holds (or, before a reload, held) a credential this
    /// gateway reads. Strip them from child processes' environments (R-CFG-SECRETS).
    pub fn secret_env_names(&self) -> Vec<String> {
        self.inner.secret_names.lock().iter().cloned().collect()
    }

    /// The gateway's clock.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// The data directory the gateway was opened on (its store is `jevgate.sqlite3` in it).
    pub fn data_dir(&self) -> &std::path::Path {
        &self.inner.data_dir
    }

    /// The schema version of the gateway's store (`PRAGMA user_version`, R-STO).
    pub fn schema_version(&self) -> Result<i64> {
        self.check_open()?;
        self.inner.store.schema_version()
    }

    /// The lease manager: device control leases and browser session (profile) leases.
    pub fn leases(&self) -> &Leases {
        &self.inner.leases
    }

    /// The device registry, channel servers and tool dispatch.
    pub(crate) fn device_service(&self) -> &DeviceService {
        &self.inner.devices
    }

    /// Whether [`Gateway::close`] has been called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Stops the gateway: joins its threads, closes the store and releases the data directory.
    /// Later calls fail with `GATEWAY_CLOSED`. Idempotent; safe from any clone.
    pub fn close(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        // Tasks first: they stop before their next action and release their targets while
        // the devices, leases and Jev client still answer.
        self.inner.tasks.close();
        self.inner.devices.close();
        if let Some(reaper) = self.inner.reaper.lock().take() {
            reaper.stop();
        }
        self.inner.leases.close_all();
        self.inner.jev.close();
        self.inner.store.close();
        if let Some(shared) = &self.inner.shared {
            shared.close();
        }
        log::info!("gateway closed");
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.tasks.close();
        self.devices.close();
        if let Some(reaper) = self.reaper.lock().take() {
            reaper.stop();
        }
        self.leases.close_all();
        self.jev.close();
    }
}

/// The thread that reaps idle browser sessions (R-PROF-4) and purges expired screenshot
/// artifacts (R-DEV-SHOT). It wakes every second of real time and decides with the gateway's
/// clock: leases on every wake, artifacts at most once per [`Reaper::PURGE_EVERY`] of that
/// clock's monotonic time, looking at no more than [`Reaper::PURGE_BUDGET`] artifacts per wake so
/// that a backlog never delays `close` for long. It holds no lock across file I/O, and is stopped
/// and joined on close, before the store closes.
struct Reaper {
    stop: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: std::thread::JoinHandle<()>,
}

impl std::fmt::Debug for Reaper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reaper")
    }
}

/// Whether the reaper purges artifacts at `now`, having last purged at `last` (`None`: never,
/// or a purge that used its whole budget and has more to do).
fn purge_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|t| now.saturating_duration_since(t) >= Reaper::PURGE_EVERY)
}

impl Reaper {
    const PERIOD: std::time::Duration = std::time::Duration::from_secs(1);
    const PURGE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
    const PURGE_BUDGET: usize = 1024;

    fn start(leases: Leases, purger: crate::device::Purger, clock: SharedClock) -> Result<Reaper> {
        let stop = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let signal = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("jevgate-reaper".into())
            .spawn(move || {
                let (lock, cvar) = &*signal;
                let mut last_purge = None;
                let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                while !*stopped {
                    let (guard, _) = cvar
                        .wait_timeout(stopped, Self::PERIOD)
                        .unwrap_or_else(|p| p.into_inner());
                    stopped = guard;
                    if !*stopped {
                        drop(stopped);
                        leases.reap();
                        let now = clock.now();
                        if purge_due(last_purge, now) {
                            last_purge = Self::purge(&purger).then_some(now);
                        }
                        stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                    }
                }
            })
            .map_err(|e| Error::Internal {
                reason: format!("cannot start the reaper thread: {}", e.kind()),
            })?;
        Ok(Reaper { stop, thread })
    }

    /// One purge within the budget; `false` when it used the whole budget (more may be due).
    fn purge(purger: &crate::device::Purger) -> bool {
        match purger.purge(Self::PURGE_BUDGET) {
            Ok(n) => {
                if n > 0 {
                    log::info!("purged {n} expired artifacts");
                }
                n < Self::PURGE_BUDGET
            }
            Err(e) => {
                log::warn!("artifact purge failed: {}", e.code());
                true
            }
        }
    }

    fn stop(self) {
        let (lock, cvar) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cvar.notify_all();
        if self.thread.thread().id() != std::thread::current().id() {
            let _ = self.thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // R-DEV-SHOT: the reaper purges on its first wake, then not again before a minute of the
    // gateway clock, and at once again when the last purge used its whole budget.
    #[test]
    fn artifact_purge_is_due_first_then_once_a_minute() {
        let t0 = Instant::from_origin(Duration::from_secs(5));
        assert!(purge_due(None, t0));
        assert!(!purge_due(Some(t0), t0));
        assert!(!purge_due(Some(t0), t0 + Duration::from_millis(59_999)));
        assert!(purge_due(Some(t0), t0 + Duration::from_secs(60)));
        assert!(purge_due(None, t0 + Duration::from_secs(1)));
    }
}

/// Hooks for tests, re-exported by `jevgate::unstable` (which only re-exports).
pub(crate) mod test_hooks {
    /// Tests only: on the shared store, the periodic cleanup of what dead processes left in the
    /// device tables (issue 23 item 4), run now: `(command rows deleted, connections cleared)`;
    /// `None` on SQLite.
    pub fn prune_dead_device_rows(gw: &super::Gateway) -> Option<crate::Result<(u64, u64)>> {
        gw.device_service().prune_dead_rows()
    }

    /// Tests only: on the shared store, the periodic cleanup of the task control calls dead
    /// processes left (issue 23 item 3), run now: the rows deleted; `None` on SQLite.
    pub fn prune_dead_task_calls(gw: &super::Gateway) -> Option<crate::Result<u64>> {
        gw.tasks().prune_dead_calls()
    }
}

//! Leases: who may drive a browser device, and which thread's browser session holds a profile
//! (SPEC §4, R-LEASE, R-PROF).
//!
//! The rules live in two pure state machines over explicit time — `control.rs` (device control
//! leases, `ControlTable`) and `profile.rs` (profile leases and session lifetimes,
//! `SessionTable`); both are internal, and tests reach the first through `jevgate::unstable`.
//! [`Leases`] is the thin, thread-safe façade a [`Gateway`](crate::Gateway) owns: it reads the
//! injected clock, takes a short lock around each transition, persists control-lease holder
//! changes and device owners, and runs cancellation and session-close hooks *after* releasing
//! its locks.
//!
//! It never names a lease holder to anyone but the holder (R-LEASE-2, -5), never lets two root
//! sessions hold one device (R-LEASE-8), and never stores a raw profile key (R-PROF-1).
//!
//! # Owner-only control (R-LEASE-7)
//!
//! Device owners are written to the store before they take effect and loaded on open, so a
//! restart forgets no owner. Every control route goes through one check, and a device with no
//! recorded owner is refused (`ACCESS_DENIED`) exactly like a stranger: an unknown owner is never
//! a pass.
//!
//! # Take-back and in-flight commands (R-LEASE-3)
//!
//! [`Leases::acquire_command`] acquires (or renews) the lease and registers the command's
//! cancellation hook in one transition under one lock, and [`Leases::take_back`] dispossesses
//! the holder and collects its hooks in one transition under the same lock. So a take-back
//! either comes first (the command is refused) or finds the command registered (it is
//! cancelled); there is no moment between the two where a take-back finds nothing to cancel.
//!
//! # Clock policy
//!
//! All expiry uses the gateway's monotonic clock ([`Clock::now`](crate::clock::Clock::now)).
//! The choice on each edge is the one that never lets a lease end early — the reading etcd takes
//! when it extends every lease across a leader change rather than letting any expire early, and
//! Chubby takes when it holds a failed holder's lock back for a lock-delay:
//!
//! - **System suspend.** The system clock's monotonic time (`CLOCK_MONOTONIC` on Linux) does not
//!   advance while the machine sleeps, so a lease or a revoked window does not run out during a
//!   suspend: after resume the holder keeps the time it had left. A device is never handed to a
//!   second conversation because the host slept. Wall-clock jumps (NTP, manual changes) affect
//!   only the `expiresAt` shown to people, never expiry.
//! - **Gateway restart.** Holder changes and owed revocation notices are written to the store
//!   (renewals are not). On open, every lease recorded as held is held again by the same root
//!   session for a full 120 s from the restart, and every owed `DEVICE_CONTROL_REVOKED` notice
//!   re-opens its 120 s window, so no other conversation can acquire before the dispossessed one
//!   is told. The cost is bounded: after a restart a device may stay unavailable to others for
//!   up to 120 s longer than strictly needed; it is never available sooner.
//! - **Profile sessions** are in memory only: a restart closes every browser, so the next call
//!   starts a fresh session (R-PROF-4's transparent restart). So are the profile pins of browser
//!   tasks (a restart ends every task's Chromium too).
//!
//! # One holder per profile: thread sessions and tasks
//!
//! A browser task on a local profile ([`crate::task::TaskTarget::Local`]) pins the profile for
//! its life (the crate-internal `Leases::pin_profile`) under the same table and lock as thread
//! sessions, keyed by the same keyed hash of `(organization, profileKey)`. A task's organization is its owner's
//! `principalId`: a thread session meets the task's pin when its call names that principal id
//! as `organization` and the same profile key (the rule hosts follow when they pick
//! `organization` for [`BrowserCall`] and managed tool calls).

//!
//! # Several processes: the PostgreSQL store
//!
//! With `gateway.store.kind: "postgres"` (cargo feature `postgres`, issue 23) device control
//! leases and owners live in the database every process of a fleet shares (`pg.rs`): each
//! transition is the same pure one of `control.rs`, run on the device's locked row at the
//! database's time, and the façade's control table stays empty. The clock policy above then
//! reads: expiry is judged by the database's clock (one clock for the fleet; the host's clock
//! is not consulted), and a restart of any process changes no row, so it frees nothing early.
//! A take-back in one process cancels the in-flight commands of the lost tenure in every
//! process: each command remembers the fencing token it was granted under, and `fleet.rs`'s
//! listener hears the take-back (NOTIFY) and cancels the commands of that token here.
//! Profile leases span the fleet too: a session or task of this process that takes a
//! persistent profile first takes (or renews) the profile's row for this process — keyed by
//! its HMAC under the fleet secret — and is `BROWSER_CONTEXT_BUSY` while another process holds
//! it; the row is given back once no session or task here holds the profile, and otherwise ends
//! on the database clock 30 s after the last call or heartbeat renewed it. A call that cannot
//! reach the store to renew it does not run in the profile (`STORE_UNAVAILABLE`).

pub(crate) mod control;
mod fleet;
#[cfg(feature = "postgres")]
mod pg;
pub(crate) mod profile;

pub(crate) use fleet::Fleet;

/// Whether a process of the fleet is alive by its liveness row (for `device/remote.rs`).
#[cfg(feature = "postgres")]
pub(crate) mod pg_liveness {
    pub(crate) use super::pg::is_alive;
    /// A process whose liveness row is older than this on the database clock is dead.
    pub(crate) const DEAD_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
}

use control::{ControlTable, DeviceLease, Refusal};
pub use control::{Status, CONTROL_TTL};
use profile::profile_key_hash;
pub use profile::{CloseReason, Effect, SessionMode, ACTIVE_GRACE, HARD_CEILING, IDLE_REAP};
use profile::{SessionRefusal, SessionTable};

use crate::clock::{Instant, SharedClock};
use crate::store::Store;
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How the caller of a control route authenticated (R-LEASE-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// The device's owner acting on their own account.
    Owner,
    /// A delegated credential (e.g. the browser extension's token): refused on control routes.
    Delegated,
}

/// The caller of `take_back` / `control_status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlCaller {
    /// The authenticated principal.
    pub principal: String,
    /// How it authenticated.
    pub credential: Credential,
    /// The caller's own root session, if it is asking from a conversation.
    pub root_session: Option<String>,
}

impl ControlCaller {
    /// The device's owner, not in a conversation.
    pub fn owner(principal: impl Into<String>) -> ControlCaller {
        ControlCaller {
            principal: principal.into(),
            credential: Credential::Owner,
            root_session: None,
        }
    }
}

/// A granted browser call (R-LEASE-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseGrant {
    /// This call acquired the lease (it was free); `false` means it renewed it.
    pub acquired: bool,
    /// When the lease goes idle unless renewed (Unix ms, for display).
    pub expires_at: i64,
    /// The tenure's fencing token (`fencingToken` in JSON): the same for every renewal of one
    /// tenure, strictly greater for every later tenure of the device, so a downstream system
    /// can refuse a write made under a lease that has since changed hands. On SQLite it is the
    /// device row's version; on PostgreSQL the fleet-wide token of the device's row.
    pub fencing_token: u64,
}

/// `control_status` (R-LEASE-4, R-LEASE-5), in the seed's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlStatus {
    /// Held, or in the revoked-but-unexpired window (never `false` during that window).
    pub held: bool,
    /// The holder, only ever the caller's own root session.
    pub held_by_root_session: Option<String>,
    /// When the hold or window ends (Unix ms), if held.
    pub expires_at: Option<i64>,
    /// The revoked-but-unexpired window is open.
    pub revoked: bool,
}

/// A browser call's session request with the raw profile key (hashed at once, never kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserCall {
    /// The thread (conversation) making the call.
    pub thread_id: String,
    /// The organization owning the profile.
    pub organization: String,
    /// Explicit `sessionMode`, or `None`.
    pub mode: Option<SessionMode>,
    /// The configured profile key, if any.
    pub profile_key: Option<String>,
    /// Whether the caller may use authenticated mode.
    pub authenticated_allowed: bool,
}

/// The JSON shape of a [`BrowserCall`] (the C `call_json`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BrowserCallJson {
    thread_id: String,
    organization: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    profile_key: Option<String>,
    #[serde(default = "yes")]
    authenticated_allowed: bool,
}

fn yes() -> bool {
    true
}

impl BrowserCall {
    /// Parses `{"threadId","organization","mode"?:"authenticated"|"isolated","profileKey"?,
    /// "authenticatedAllowed"?}` (default `true`): `INVALID_ARGUMENT` `call_json` for a wrong
    /// shape, `mode` for an unknown mode — the same error the Python keywords give.
    ///
    /// ```
    /// use jevgate::lease::{BrowserCall, SessionMode};
    /// let c = BrowserCall::from_json(r#"{"threadId":"t","organization":"o","mode":"isolated"}"#)?;
    /// assert_eq!(c.mode, Some(SessionMode::Isolated));
    /// assert!(c.authenticated_allowed);
    /// let e = BrowserCall::from_json(r#"{"threadId":"t","organization":"o","mode":"x"}"#);
    /// assert_eq!(e.unwrap_err().code(), "INVALID_ARGUMENT");
    /// # Ok::<(), jevgate::Error>(())
    /// ```
    pub fn from_json(json: &str) -> Result<BrowserCall> {
        let c: BrowserCallJson = crate::args::from_json(
            "call_json",
            json,
            "{threadId, organization, mode?, profileKey?, authenticatedAllowed?}",
        )?;
        Ok(BrowserCall {
            thread_id: c.thread_id,
            organization: c.organization,
            mode: c.mode.as_deref().map(str::parse).transpose()?,
            profile_key: c.profile_key,
            authenticated_allowed: c.authenticated_allowed,
        })
    }
}

/// What a started browser call reports: `{"sessionId","mode","created"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserCallInfo {
    /// The session the call runs in.
    pub session_id: String,
    /// Its mode.
    pub mode: SessionMode,
    /// `true` when this call created the session.
    pub created: bool,
}

/// Closes real browser sessions on behalf of the lease manager (the browser backend registers
/// one). Called outside every lease lock, in order.
pub trait SessionHooks: Send + Sync {
    /// Close `effect`'s session, persisting its profile first when asked.
    fn apply(&self, effect: &Effect);
}

/// Told a device id after a control transition ([`Leases::set_control_watcher`]).
pub(crate) type ControlWatcher = Arc<dyn Fn(&str) + Send + Sync>;

/// Cancels an in-flight command when a person takes the device back.
type CancelHook = Box<dyn FnOnce() + Send>;

struct InFlight {
    id: u64,
    session: String,
    cancel: CancelHook,
    /// On the shared store: the tenure (fencing token) the command runs under, `None` while
    /// its acquire is still in flight (see [`Leases::acquire_command`]).
    token: Option<u64>,
}

#[derive(Default)]
struct ControlState {
    table: ControlTable,
    owners: HashMap<String, String>,
    in_flight: HashMap<String, Vec<InFlight>>,
    /// On the shared store: per device with commands in flight, the tokens of the tenures a
    /// take-back ended, as last read (a command granted under one of them is cancelled).
    taken_back: HashMap<String, Vec<u64>>,
}

/// A value aligned (and so padded) to a 128-byte line: two 64-byte lines, as adjacent-line
/// prefetchers pair them.
#[repr(align(128))]
struct CacheLine<T>(T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

struct Inner {
    clock: SharedClock,
    store: Arc<Store>,
    secret: Vec<u8>,
    /// On a cache line of its own: every acquire/renew locks it, and under contention its lock
    /// word must not share a line with the fields every call reads first (`clock`, `closed`).
    control: CacheLine<Mutex<ControlState>>,
    /// Serialises owner changes so the store and the in-memory map agree on the last one.
    owners_write: Mutex<()>,
    sessions: Mutex<SessionTable>,
    hooks: RwLock<Option<Arc<dyn SessionHooks>>>,
    /// Told the device after every control transition (outside the lock): the device channel
    /// re-reads the lease for a worker that asked for `status` frames.
    /// Set once; read without a lock write, so the contended acquire path gains no shared
    /// cache line.
    control_watcher: std::sync::OnceLock<ControlWatcher>,
    next_id: AtomicU64,
    closed: std::sync::atomic::AtomicBool,
    /// The shared store's leases when `gateway.store.kind` is `"postgres"` (issue 23); the
    /// control table above then holds nothing and device owners live in the shared store too.
    fleet: Option<Fleet>,
    /// On the shared store: the holds announced to status-asking connections, so their I/O
    /// thread never waits on the database ([`Leases::control_until`]).
    holds: Mutex<FleetHolds>,
    /// On the shared store: the profiles this process holds a fleet-wide profile lease on,
    /// by local keyed hash → fleet key. Locked across the database call that takes or gives
    /// one back, so a release never races a new local holder.
    fleet_profiles: Mutex<HashMap<String, String>>,
}

/// The most devices whose hold [`FleetHolds`] keeps (a status-asking connection each); past
/// it the map starts again empty (every device is read afresh, never wrongly announced).
const MAX_WATCHED_HOLDS: usize = 4096;

/// How long before a watched hold's announced end the listener re-reads it on every round
/// (~100 ms): a renewal by another process sends no NOTIFY, so it is found here, before the end.
const RENEWAL_LOOKAHEAD: std::time::Duration = std::time::Duration::from_secs(1);

/// How long past its announced end a watched hold still reads as held, until the listener has
/// re-read it (a round, ~100 ms): a renewal made on another process in the hold's last moments
/// is announced as a new end, never as "not held" then "held" again (a flicker of the badge).
/// An expiry is announced that much late at most, and never later than this.
const PAST_END_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// A hold as a status frame announces it: its end on this gateway's monotonic clock and in
/// Unix ms; `None` when no agent drives the device.
type Announced = Option<(Instant, i64)>;

/// On the shared store: per device a status-asking connection watches, its hold as this
/// process last learned it — from its own transitions and from the listener, which re-reads a
/// device named by another process's NOTIFY (acquire, take-back, release: every holder change)
/// and every device marked `stale`.
#[derive(Default)]
struct FleetHolds {
    known: HashMap<String, Announced>,
    /// Devices to read afresh on the listener's next round (~100 ms): never read yet, or whose
    /// announced end has passed (another process may have renewed it meanwhile; renewals send
    /// no NOTIFY). A hold within [`RENEWAL_LOOKAHEAD`] of its end is re-read too.
    stale: std::collections::BTreeSet<String>,
}

/// The thread-safe lease manager of a gateway. Cheap to clone.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
/// let leases = gw.leases();
/// leases.set_device_owner("laptop", "me").unwrap();
/// assert!(leases.acquire("laptop", "conversation-1").unwrap().acquired);
/// let err = leases.acquire("laptop", "conversation-2").unwrap_err();
/// assert_eq!(err.code(), "DEVICE_CONTROL_ELSEWHERE");
/// let stranger = jevgate::lease::ControlCaller::owner("mallory");
/// assert_eq!(leases.take_back("laptop", &stranger).unwrap_err().code(), "ACCESS_DENIED");
/// assert!(leases.take_back("laptop", &jevgate::lease::ControlCaller::owner("me")).unwrap());
/// assert_eq!(leases.acquire("laptop", "conversation-1").unwrap_err().code(), "DEVICE_CONTROL_REVOKED");
/// ```
#[derive(Clone)]
pub struct Leases {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leases").finish_non_exhaustive()
    }
}

/// Unregisters an in-flight command's cancellation hook when dropped.
pub struct CommandGuard {
    leases: Leases,
    device: String,
    id: u64,
}

impl Drop for CommandGuard {
    fn drop(&mut self) {
        let mut control = self.leases.inner.control.lock();
        if let Some(list) = control.in_flight.get_mut(&self.device) {
            list.retain(|c| c.id != self.id);
            if list.is_empty() {
                control.in_flight.remove(&self.device);
                control.taken_back.remove(&self.device);
            }
        }
    }
}

/// A browser call's session; ends the call when dropped.
pub struct BrowserCallGuard {
    leases: Leases,
    /// The session to run the call in.
    pub session_id: String,
    /// Its mode.
    pub mode: SessionMode,
    /// `true` when this call created the session.
    pub created: bool,
    /// The keyed hash of the profile an authenticated session holds (`None` when isolated):
    /// safe to use as a directory name, never the profile key itself.
    pub profile: Option<String>,
    /// Strict data handling (seed 001): the session's browser keeps no journal, writes no
    /// download, holds no profile.
    pub strict: bool,
}

impl BrowserCallGuard {
    /// The call's session as reported to callers.
    pub fn info(&self) -> BrowserCallInfo {
        BrowserCallInfo {
            session_id: self.session_id.clone(),
            mode: self.mode,
            created: self.created,
        }
    }
}

impl Drop for BrowserCallGuard {
    fn drop(&mut self) {
        let now = self.leases.inner.clock.now();
        self.leases
            .inner
            .sessions
            .lock()
            .end_call(&self.session_id, now);
    }
}

/// The listener's view of the lease manager: held weakly, so it never keeps a closed gateway
/// alive.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet listens
struct News(std::sync::Weak<Inner>);

impl fleet::FleetNews for News {
    fn devices_in_flight(&self) -> Vec<String> {
        self.0.upgrade().map_or_else(Vec::new, |inner| {
            inner.control.lock().in_flight.keys().cloned().collect()
        })
    }

    fn watched(&self, all: bool) -> Vec<String> {
        self.0.upgrade().map_or_else(Vec::new, |inner| {
            let holds = inner.holds.lock();
            if all {
                return holds.known.keys().chain(&holds.stale).cloned().collect();
            }
            // And the holds about to end: a renewal elsewhere is learned before the end.
            let now = inner.clock.now();
            let ending = holds.known.iter().filter_map(|(device, hold)| match hold {
                Some((end, _))
                    if end.saturating_duration_since(now) <= RENEWAL_LOOKAHEAD
                        && !holds.stale.contains(device) =>
                {
                    Some(device)
                }
                _ => None,
            });
            holds.stale.iter().chain(ending).cloned().collect()
        })
    }

    fn is_watched(&self, device: &str) -> bool {
        self.0.upgrade().is_some_and(|inner| {
            let holds = inner.holds.lock();
            holds.known.contains_key(device) || holds.stale.contains(device)
        })
    }

    fn hold_read(&self, device: &str, lease: &DeviceLease, db_now_ms: u64) {
        if let Some(inner) = self.0.upgrade() {
            let leases = Leases { inner };
            let now = Instant::from_origin(std::time::Duration::from_millis(db_now_ms));
            leases.learn_hold(device, &lease.status(None, now), db_now_ms, true);
            if let Some(watch) = leases.inner.control_watcher.get() {
                watch(device);
            }
        }
    }

    fn taken_back(&self, device: &str, tokens: Vec<u64>) {
        if let Some(inner) = self.0.upgrade() {
            let leases = Leases { inner };
            leases.cancel_taken_back(device, tokens);
            if let Some(watch) = leases.inner.control_watcher.get() {
                watch(device);
            }
        }
    }
}

/// Runs cancellation hooks in order, outside every lock; a panicking hook is logged.
/// Registers command `id` of `root_session` on `device` in `in_flight`, without a tenure yet
/// (the caller holds the control lock): the one place a command joins the in-flight list.
fn push_in_flight(
    in_flight: &mut HashMap<String, Vec<InFlight>>,
    device: &str,
    id: u64,
    root_session: &str,
    cancel: CancelHook,
) {
    in_flight
        .entry(device.to_string())
        .or_default()
        .push(InFlight {
            id,
            session: root_session.to_string(),
            cancel,
            token: None,
        });
}

fn run_hooks(hooks: Vec<CancelHook>) {
    for cancel in hooks {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(cancel)).is_err() {
            log::error!("a command cancellation hook panicked");
        }
    }
}

/// An instant on the shared store's clock (ms since the Unix epoch) as Unix ms.
fn db_ms(at: Instant) -> i64 {
    i64::try_from(at.since_origin().as_millis()).unwrap_or(i64::MAX)
}

fn refusal(r: Refusal) -> Error {
    match r {
        Refusal::Elsewhere => Error::DeviceControlElsewhere,
        Refusal::Revoked => Error::DeviceControlRevoked,
        Refusal::NotHeld => Error::DeviceControlNotHeld,
    }
}

fn session_refusal(r: SessionRefusal) -> Error {
    match r {
        // Isolated sessions never read or write a profile, so they are always available.
        SessionRefusal::ContextBusy => Error::BrowserContextBusy {
            isolated_available: true,
        },
        SessionRefusal::AuthenticatedUnavailable => Error::BrowserAuthenticatedUnavailable,
        SessionRefusal::TooManyPins => Error::BrowserUnavailable {
            reason: format!(
                "too many browser tasks hold a profile (at most {})",
                profile::MAX_PINS
            ),
        },
    }
}

fn id_arg(name: &'static str, value: &str) -> Result<()> {
    if value.is_empty() || value.len() > 256 || value.chars().any(char::is_control) {
        return Err(Error::InvalidArgument {
            name,
            reason: "must be 1 to 256 bytes without control characters".into(),
        });
    }
    Ok(())
}

impl Leases {
    /// Builds the manager and restores persisted control leases (see the clock policy).
    pub(crate) fn open(
        store: Arc<Store>,
        clock: SharedClock,
        fleet: Option<Fleet>,
    ) -> Result<Leases> {
        let secret = store.gateway_secret()?;
        let now = clock.now();
        let rows: Vec<(String, Option<String>, String, i64)> = store.read(|c| {
            let mut stmt =
                c.prepare("SELECT device_id, holder, revoked, version FROM control_leases")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<Vec<_>>>();
            rows
        })?;
        let owners: Vec<(String, String)> = store.read(|c| {
            let mut stmt = c.prepare("SELECT device_id, owner FROM device_owners")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>();
            rows
        })?;
        let mut state = ControlState::default();
        state.owners.extend(owners);
        for (device, holder, revoked, version) in rows {
            let revoked_sessions: Vec<String> =
                serde_json::from_str(&revoked).map_err(|_| Error::StoreCorrupt {
                    reason: "a control lease row is unreadable".into(),
                })?;
            let snapshot = control::Snapshot {
                holder,
                revoked_sessions,
            };
            let mut lease = DeviceLease::restore(&snapshot, now);
            lease.set_version(version.max(0) as u64);
            state.table.insert(device, lease);
        }
        let leases = Leases {
            inner: Arc::new(Inner {
                clock,
                store,
                secret,
                control: CacheLine(Mutex::new(state)),
                owners_write: Mutex::new(()),
                sessions: Mutex::new(SessionTable::default()),
                hooks: RwLock::new(None),
                control_watcher: std::sync::OnceLock::new(),
                next_id: AtomicU64::new(1),
                closed: std::sync::atomic::AtomicBool::new(false),
                fleet,
                holds: Mutex::new(FleetHolds::default()),
                fleet_profiles: Mutex::new(HashMap::new()),
            }),
        };
        if let Some(fleet) = &leases.inner.fleet {
            // The listener holds the manager weakly: it must not keep a closed gateway alive.
            fleet.start(Box::new(News(Arc::downgrade(&leases.inner))));
        }
        Ok(leases)
    }

    /// Records `tokens` (the device's tenures ended by a take-back) and runs, outside the
    /// lock, the cancellation hooks of this process's commands granted under one of them.
    fn cancel_taken_back(&self, device: &str, tokens: Vec<u64>) {
        let hooks: Vec<CancelHook> = {
            let mut control = self.inner.control.lock();
            let ControlState {
                in_flight,
                taken_back,
                ..
            } = &mut *control;
            let mut hooks = Vec::new();
            if let Some(list) = in_flight.get_mut(device) {
                let (cancel, keep): (Vec<_>, Vec<_>) = list
                    .drain(..)
                    .partition(|c| c.token.is_some_and(|t| tokens.contains(&t)));
                *list = keep;
                hooks.extend(cancel.into_iter().map(|c| c.cancel));
                if list.is_empty() {
                    in_flight.remove(device);
                    taken_back.remove(device);
                } else {
                    taken_back.insert(device.to_string(), tokens);
                }
            }
            hooks
        };
        run_hooks(hooks);
    }

    /// On the shared store: registers command `id` of `root_session` on `device`, without a
    /// tenure yet ([`Leases::settle_command`] gives it the token it was granted under).
    fn register_in_flight(&self, device: &str, id: u64, root_session: &str, cancel: CancelHook) {
        push_in_flight(
            &mut self.inner.control.lock().in_flight,
            device,
            id,
            root_session,
            cancel,
        );
    }

    /// A command's acquire on the shared store was granted under `token`: the command takes
    /// it, and is cancelled at once if a take-back of that tenure was already seen.
    fn settle_command(&self, device: &str, id: u64, token: u64) {
        let hook = {
            let mut control = self.inner.control.lock();
            let ControlState {
                in_flight,
                taken_back,
                ..
            } = &mut *control;
            let lost = taken_back.get(device).is_some_and(|t| t.contains(&token));
            match in_flight.get_mut(device) {
                Some(list) => {
                    if lost {
                        list.iter()
                            .position(|c| c.id == id)
                            .map(|i| list.remove(i).cancel)
                    } else {
                        if let Some(c) = list.iter_mut().find(|c| c.id == id) {
                            c.token = Some(token);
                        }
                        None
                    }
                }
                None => None,
            }
        };
        run_hooks(hook.into_iter().collect());
    }

    /// On the shared store: this process's id in the fleet (its liveness row).
    pub(crate) fn fleet_process(&self) -> Option<String> {
        self.inner
            .fleet
            .as_ref()
            .map(|f| f.process_id().to_string())
    }

    /// In a fleet: this process's id (its liveness row) and how old a liveness row may be
    /// before its process counts as dead; `None` on SQLite.
    pub(crate) fn fleet_member(&self) -> Option<(String, std::time::Duration)> {
        let fleet = self.inner.fleet.as_ref()?;
        Some((fleet.process_id().to_string(), fleet.dead_after()))
    }

    /// Stops the fleet's threads and closes the shared store's connection (gateway close).
    pub(crate) fn close_fleet(&self) {
        if let Some(fleet) = &self.inner.fleet {
            fleet.close();
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            Err(Error::GatewayClosed)
        } else {
            Ok(())
        }
    }

    fn wall_ms(&self, at: Instant, now: Instant) -> i64 {
        let delta =
            i64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(i64::MAX);
        self.inner.clock.wall_millis().saturating_add(delta)
    }

    /// Runs a transition on one device; persists the new snapshot if it changed. Returns the
    /// value and the device's version after it (the SQLite fencing token).
    fn transition<T>(
        &self,
        device: &str,
        f: impl FnOnce(&mut DeviceLease, Instant) -> T,
    ) -> (T, u64) {
        self.transition_state(device, |lease, _, now| f(lease, now))
    }

    /// Like [`Leases::transition`], with the whole control state (lease, in-flight commands)
    /// under the one lock, so a lease change and the commands it concerns change together.
    ///
    /// The device's lease is looked up once (this is the acquire/renew hot path: `benches/lease`).
    /// Returns `f`'s value and the device's version after it (the SQLite fencing token).
    fn transition_state<T>(
        &self,
        device: &str,
        f: impl FnOnce(&mut DeviceLease, &mut HashMap<String, Vec<InFlight>>, Instant) -> T,
    ) -> (T, u64) {
        let now = self.inner.clock.now();
        let out_persist = {
            let mut control = self.inner.control.lock();
            let ControlState {
                table, in_flight, ..
            } = &mut *control;
            let lease = table.device(device);
            let before = lease.epoch();
            let out = f(lease, in_flight, now);
            let version = lease.version();
            let persist = if lease.epoch() != before {
                Some((lease.bump_version(), lease.snapshot()))
            } else {
                None
            };
            (out, persist.as_ref().map_or(version, |p| p.0), persist)
        };
        let (out, version, persist) = out_persist;
        if let Some((version, snapshot)) = persist {
            self.persist(device, version, &snapshot);
        }
        if let Some(watch) = self.inner.control_watcher.get() {
            watch(device);
        }
        (out, version)
    }

    /// Registers what is told a device's id after each of its control transitions (acquire,
    /// renew, take-back, release; refused calls too), outside every lock of this manager. It
    /// must be quick and must not call back into the lease manager's transitions.
    /// Once per manager: a second watcher is ignored (one device service per gateway).
    pub(crate) fn set_control_watcher(&self, watcher: ControlWatcher) {
        if self.inner.control_watcher.set(watcher).is_err() {
            log::debug!("a second control watcher was ignored");
        }
    }

    /// A transition of `device` on the shared store, then the control watcher told (as
    /// [`Leases::transition`] does for the local engine).
    fn shared_step<T>(
        &self,
        fleet: &Fleet,
        device: &str,
        f: impl FnOnce(&mut DeviceLease, Instant) -> T,
    ) -> Result<(T, control::After)> {
        let ((out, status), after) = fleet.transition(device, |l, now| {
            let out = f(l, now);
            (out, l.status(None, now))
        })?;
        self.learn_hold(device, &status, after.now_ms, false);
        if let Some(watch) = self.inner.control_watcher.get() {
            watch(device);
        }
        Ok((out, after))
    }

    /// On the shared store: `device`'s hold is `status` at `db_now_ms` on the database clock.
    /// Kept only for a device a status-asking connection watches, unless `watch` (the listener's
    /// first read of a device); its end carries over to this gateway's clock as the time left.
    fn learn_hold(&self, device: &str, status: &Status, db_now_ms: u64, watch: bool) {
        let announced = if status.held && !status.revoked {
            status.expires_at.map(|end| {
                let left = end.saturating_duration_since(Instant::from_origin(
                    std::time::Duration::from_millis(db_now_ms),
                ));
                (self.inner.clock.now() + left, db_ms(end))
            })
        } else {
            None
        };
        let mut holds = self.inner.holds.lock();
        holds.stale.remove(device);
        if let Some(known) = holds.known.get_mut(device) {
            // The same end read again (e.g. this process's own NOTIFY) keeps its instant, so
            // a connection sees no change.
            if known.map(|(_, ms)| ms) != announced.map(|(_, ms)| ms) {
                *known = announced;
            }
        } else if watch {
            if holds.known.len() >= MAX_WATCHED_HOLDS {
                holds.known.clear();
            }
            holds.known.insert(device.to_string(), announced);
        }
    }

    /// Whether an agent drives `device` now (a live hold; the revoked window is no hold), and
    /// until when: the hold's end on the gateway's monotonic clock and as Unix ms.
    ///
    /// Called on the device channel's I/O thread, so it never waits on the database: on the
    /// shared store it answers from the holds this process learned (see [`FleetHolds`]). A
    /// device not known yet says "not held" and is read by the listener within a round, which
    /// then tells the control watcher (a second status frame follows if it is held). A hold is
    /// re-read in its last [`RENEWAL_LOOKAHEAD`], so a renewal by another process is announced
    /// as a new end before the old one; one whose announced end passed still reads as held for
    /// at most [`PAST_END_GRACE`] while it is read again the same way, so a renewal in its last
    /// moments never shows as "not held" then "held" again.
    pub(crate) fn control_until(&self, device: &str) -> Option<(Instant, i64)> {
        if self.inner.fleet.is_some() {
            let now = self.inner.clock.now();
            let mut holds = self.inner.holds.lock();
            let known = holds.known.get(device).copied();
            return match known {
                Some(Some((end, ms))) if end > now => Some((end, ms)),
                Some(None) => None,
                Some(Some((end, ms))) if now < end + PAST_END_GRACE => {
                    if holds.stale.len() < MAX_WATCHED_HOLDS {
                        holds.stale.insert(device.to_string());
                    }
                    Some((end, ms))
                }
                _ => {
                    if holds.stale.len() < MAX_WATCHED_HOLDS {
                        holds.stale.insert(device.to_string());
                    }
                    None
                }
            };
        }
        let now = self.inner.clock.now();
        let status = {
            let control = self.inner.control.lock();
            control.table.get(device)?.status(None, now)
        };
        if !status.held || status.revoked {
            return None;
        }
        let end = status.expires_at?;
        Some((end, self.wall_ms(end, now)))
    }

    fn persist(&self, device: &str, version: u64, snapshot: &control::Snapshot) {
        let revoked =
            serde_json::to_string(&snapshot.revoked_sessions).unwrap_or_else(|_| "[]".into());
        let result = self.inner.store.write(|tx| {
            tx.execute(
                "INSERT INTO control_leases (device_id, holder, revoked, version) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(device_id) DO UPDATE SET holder = excluded.holder,
                   revoked = excluded.revoked, version = excluded.version
                 WHERE excluded.version > control_leases.version",
                rusqlite::params![device, snapshot.holder, revoked, version as i64],
            )
        });
        if let Err(e) = result {
            log::warn!("control lease not persisted: {}", e.code());
        }
    }

    /// A browser call by `root_session` on `device` (R-LEASE-1..4): acquires a free lease or
    /// renews its own. `DEVICE_CONTROL_ELSEWHERE` while another session holds it or the revoked
    /// window is open; `DEVICE_CONTROL_REVOKED` exactly once after a take-back.
    pub fn acquire(&self, device: &str, root_session: &str) -> Result<LeaseGrant> {
        self.check_open()?;
        id_arg("device_id", device)?;
        id_arg("root_session", root_session)?;
        if let Some(fleet) = &self.inner.fleet {
            let (grant, after) =
                self.shared_step(fleet, device, |l, now| l.touch(root_session, now))?;
            let grant = grant.map_err(refusal)?;
            return Ok(LeaseGrant {
                acquired: grant.acquired,
                expires_at: db_ms(grant.expires_at),
                fencing_token: after.token,
            });
        }
        let now = self.inner.clock.now();
        let (grant, token) = self.transition(device, |l, now| l.touch(root_session, now));
        let grant = grant.map_err(refusal)?;
        Ok(LeaseGrant {
            acquired: grant.acquired,
            expires_at: self.wall_ms(grant.expires_at, now),
            fencing_token: token,
        })
    }

    /// Renews the caller's lease without ever acquiring one (`DEVICE_CONTROL_NOT_HELD`).
    pub fn renew(&self, device: &str, root_session: &str) -> Result<LeaseGrant> {
        self.check_open()?;
        id_arg("device_id", device)?;
        id_arg("root_session", root_session)?;
        if let Some(fleet) = &self.inner.fleet {
            let (grant, after) =
                self.shared_step(fleet, device, |l, now| l.renew(root_session, now))?;
            let grant = grant.map_err(refusal)?;
            return Ok(LeaseGrant {
                acquired: false,
                expires_at: db_ms(grant.expires_at),
                fencing_token: after.token,
            });
        }
        let now = self.inner.clock.now();
        let (grant, token) = self.transition(device, |l, now| l.renew(root_session, now));
        let grant = grant.map_err(refusal)?;
        Ok(LeaseGrant {
            acquired: false,
            expires_at: self.wall_ms(grant.expires_at, now),
            fencing_token: token,
        })
    }

    fn check_owner(&self, device: &str, caller: &ControlCaller) -> Result<()> {
        self.check_open()?;
        id_arg("device_id", device)?;
        if caller.credential == Credential::Delegated {
            return Err(Error::AccessDenied {
                reason: "control routes are for the device's owner; a delegated credential cannot use them".into(),
            });
        }
        // An unknown owner is a refusal, never a pass (R-LEASE-7): the same answer as a
        // stranger's, so it tells nobody whether the device has an owner. On the shared store
        // the fleet's record decides (the owner may have been set by another process).
        let owner = match &self.inner.fleet {
            Some(fleet) => fleet.owner(device)?,
            None => self.inner.control.lock().owners.get(device).cloned(),
        };
        match owner {
            Some(owner) if owner == caller.principal => Ok(()),
            _ => Err(Error::AccessDenied {
                reason: "only the device's owner can use its control routes".into(),
            }),
        }
    }

    /// Records `owner` as the owner of `device` (the device registry calls this on pairing).
    /// Control routes then accept only that principal (R-LEASE-7); a device with no recorded
    /// owner accepts nobody. The owner is written to the store before it takes effect, so it
    /// survives a restart.
    pub fn set_device_owner(&self, device: &str, owner: &str) -> Result<()> {
        self.check_open()?;
        id_arg("device_id", device)?;
        id_arg("owner", owner)?;
        let _serial = self.inner.owners_write.lock();
        if let Some(fleet) = &self.inner.fleet {
            return fleet.set_owner(device, owner);
        }
        if self
            .inner
            .control
            .lock()
            .owners
            .get(device)
            .map(String::as_str)
            == Some(owner)
        {
            return Ok(());
        }
        self.inner.store.write(|tx| {
            tx.execute(
                "INSERT INTO device_owners (device_id, owner) VALUES (?1, ?2)
                 ON CONFLICT(device_id) DO UPDATE SET owner = excluded.owner",
                rusqlite::params![device, owner],
            )
        })?;
        self.inner
            .control
            .lock()
            .owners
            .insert(device.to_string(), owner.to_string());
        Ok(())
    }

    /// The person takes the device back (R-LEASE-3, R-LEASE-7): clears the holder, opens the
    /// revoked window, and cancels the dispossessed session's in-flight commands. Returns
    /// whether a holder was dispossessed (taking back a free device is a no-op).
    pub fn take_back(&self, device: &str, caller: &ControlCaller) -> Result<bool> {
        self.check_owner(device, caller)?;
        if let Some(fleet) = &self.inner.fleet {
            // This process's commands of the tenure are cancelled now; other processes' through
            // the NOTIFY the transition sends (their listener re-reads the row).
            let (session, after) = self.shared_step(fleet, device, |l, now| l.take_back(now))?;
            if let Some(token) = after.took_back {
                let mut tokens = self
                    .inner
                    .control
                    .lock()
                    .taken_back
                    .get(device)
                    .cloned()
                    .unwrap_or_default();
                tokens.push(token);
                self.cancel_taken_back(device, tokens);
            }
            return Ok(session.is_some());
        }
        // Dispossess and collect the holder's in-flight hooks in one transition: a command
        // registers under the same lock as its acquire, so none can slip between the two.
        let (hooks, _): (Option<Vec<CancelHook>>, u64) =
            self.transition_state(device, |lease, in_flight, now| {
                let session = lease.take_back(now)?;
                let hooks = match in_flight.get_mut(device) {
                    Some(list) => {
                        let (cancel, keep): (Vec<_>, Vec<_>) =
                            list.drain(..).partition(|c| c.session == session);
                        *list = keep;
                        if list.is_empty() {
                            in_flight.remove(device);
                        }
                        cancel.into_iter().map(|c| c.cancel).collect()
                    }
                    None => Vec::new(),
                };
                Some(hooks)
            });
        let Some(hooks) = hooks else {
            return Ok(false);
        };
        run_hooks(hooks);
        Ok(true)
    }

    /// `control_status` for the device's owner (R-LEASE-4, -5, -7).
    pub fn status(&self, device: &str, caller: &ControlCaller) -> Result<ControlStatus> {
        self.check_owner(device, caller)?;
        if let Some(fleet) = &self.inner.fleet {
            let (lease, after) = fleet.read(device)?;
            let now = Instant::from_origin(std::time::Duration::from_millis(after.now_ms));
            let status = lease.status(caller.root_session.as_deref(), now);
            return Ok(ControlStatus {
                held: status.held,
                held_by_root_session: status.held_by_root_session,
                expires_at: status.expires_at.map(db_ms),
                revoked: status.revoked,
            });
        }
        let now = self.inner.clock.now();
        let status = {
            let control = self.inner.control.lock();
            match control.table.get(device) {
                Some(l) => l.status(caller.root_session.as_deref(), now),
                None => DeviceLease::default().status(None, now),
            }
        };
        Ok(ControlStatus {
            held: status.held,
            held_by_root_session: status.held_by_root_session,
            expires_at: status.expires_at.map(|e| self.wall_ms(e, now)),
            revoked: status.revoked,
        })
    }

    /// Chat Stop / session end / archive (R-LEASE-6): releases every lease `root_session` holds
    /// and forgets notices owed to it, without cancelling anything. Returns how many devices
    /// changed.
    pub fn release_session(&self, root_session: &str) -> Result<usize> {
        self.check_open()?;
        id_arg("root_session", root_session)?;
        if let Some(fleet) = &self.inner.fleet {
            let mut changed = 0;
            for device in fleet.devices_of(root_session)? {
                let (did, _) = self.shared_step(fleet, &device, |l, now| {
                    l.release_session(root_session, now)
                })?;
                changed += usize::from(did);
            }
            return Ok(changed);
        }
        let devices = self.inner.control.lock().table.devices_of(root_session);
        let mut changed = 0;
        for device in devices {
            if self
                .transition(&device, |l, now| l.release_session(root_session, now))
                .0
            {
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Releases `root_session`'s lease on `device` only (a computer task's desktop lease, issue
    /// 25), leaving its other devices alone; nothing is cancelled. Whether it changed anything
    /// (`false` when `root_session` did not hold it).
    pub fn release(&self, device: &str, root_session: &str) -> Result<bool> {
        self.check_open()?;
        id_arg("device_id", device)?;
        id_arg("root_session", root_session)?;
        if let Some(fleet) = &self.inner.fleet {
            let (did, _) =
                self.shared_step(fleet, device, |l, now| l.release_session(root_session, now))?;
            return Ok(did);
        }
        Ok(self
            .transition(device, |l, now| l.release_session(root_session, now))
            .0)
    }

    /// The current holder of `device` — for the gateway's own routing and invariant checks.
    /// Never expose it to callers other than the holder.
    pub fn holder(&self, device: &str) -> Option<String> {
        if let Some(fleet) = &self.inner.fleet {
            return match fleet.read(device) {
                Ok((lease, after)) => lease
                    .holder(Instant::from_origin(std::time::Duration::from_millis(
                        after.now_ms,
                    )))
                    .map(str::to_string),
                Err(e) => {
                    log::warn!("fleet: a lease could not be read: {}", e.code());
                    None
                }
            };
        }
        let now = self.inner.clock.now();
        self.inner
            .control
            .lock()
            .table
            .get(device)
            .and_then(|l| l.holder(now).map(str::to_string))
    }

    /// A command by `root_session` on `device` (R-LEASE-1..3): acquires or renews the lease
    /// exactly like [`Leases::acquire`] and, in the same transition under the same lock,
    /// registers `cancel` for a take-back. A take-back therefore either comes first (this
    /// answers `DEVICE_CONTROL_ELSEWHERE` / `DEVICE_CONTROL_REVOKED` and `cancel` is dropped
    /// unrun) or finds the command and cancels it. Dropping the guard unregisters it.
    pub fn acquire_command(
        &self,
        device: &str,
        root_session: &str,
        cancel: impl FnOnce() + Send + 'static,
    ) -> Result<(LeaseGrant, CommandGuard)> {
        self.check_open()?;
        id_arg("device_id", device)?;
        id_arg("root_session", root_session)?;
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(fleet) = &self.inner.fleet {
            // Registered before the shared transition, without a tenure yet: news about the
            // device that lands meanwhile passes it by; once granted it takes its token, and a
            // take-back of that tenure (seen before or after) cancels it. On a refusal or an
            // error the guard unregisters it unrun.
            self.register_in_flight(device, id, root_session, Box::new(cancel));
            let guard = CommandGuard {
                leases: self.clone(),
                device: device.to_string(),
                id,
            };
            let (grant, after) =
                self.shared_step(fleet, device, |l, now| l.touch(root_session, now))?;
            let grant = grant.map_err(refusal)?;
            self.settle_command(device, id, after.token);
            return Ok((
                LeaseGrant {
                    acquired: grant.acquired,
                    expires_at: db_ms(grant.expires_at),
                    fencing_token: after.token,
                },
                guard,
            ));
        }
        let now = self.inner.clock.now();
        let (grant, token) = self.transition_state(device, |lease, in_flight, now| {
            let grant = lease.touch(root_session, now)?;
            push_in_flight(in_flight, device, id, root_session, Box::new(cancel));
            Ok(grant)
        });
        let grant = grant.map_err(refusal)?;
        let guard = CommandGuard {
            leases: self.clone(),
            device: device.to_string(),
            id,
        };
        Ok((
            LeaseGrant {
                acquired: grant.acquired,
                expires_at: self.wall_ms(grant.expires_at, now),
                fencing_token: token,
            },
            guard,
        ))
    }

    /// Registers a cancellation hook for a command `root_session` is running on `device`; a
    /// take-back calls it (once, outside all locks). Dropping the guard unregisters it.
    ///
    /// Prefer [`Leases::acquire_command`], which cannot be separated from the acquire. For a
    /// caller that acquired first, a take-back in between is not lost: when `root_session`
    /// does not hold the lease at registration, `cancel` runs at once (outside the lock).
    pub fn begin_command(
        &self,
        device: &str,
        root_session: &str,
        cancel: impl FnOnce() + Send + 'static,
    ) -> CommandGuard {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(fleet) = &self.inner.fleet {
            let guard = CommandGuard {
                leases: self.clone(),
                device: device.to_string(),
                id,
            };
            let held = fleet.read(device).ok().and_then(|(lease, after)| {
                let now = Instant::from_origin(std::time::Duration::from_millis(after.now_ms));
                (lease.holder(now) == Some(root_session)).then_some(after.token)
            });
            match held {
                Some(token) => {
                    self.register_in_flight(device, id, root_session, Box::new(cancel));
                    self.settle_command(device, id, token);
                }
                None => run_hooks(vec![Box::new(cancel)]),
            }
            return guard;
        }
        let now = self.inner.clock.now();
        let late: Option<CancelHook> = {
            let mut control = self.inner.control.lock();
            let holds = control
                .table
                .get(device)
                .and_then(|l| l.holder(now))
                .is_some_and(|h| h == root_session);
            if holds {
                push_in_flight(
                    &mut control.in_flight,
                    device,
                    id,
                    root_session,
                    Box::new(cancel),
                );
                None
            } else {
                Some(Box::new(cancel))
            }
        };
        run_hooks(late.into_iter().collect());
        CommandGuard {
            leases: self.clone(),
            device: device.to_string(),
            id,
        }
    }

    /// Registers the hooks that close real browser sessions.
    pub fn set_session_hooks(&self, hooks: Arc<dyn SessionHooks>) {
        *self.inner.hooks.write() = Some(hooks);
    }

    fn apply(&self, effects: &[Effect]) {
        if effects.is_empty() {
            return;
        }
        let hooks = self.inner.hooks.read().clone();
        for e in effects {
            log::debug!(
                "browser session closes ({:?})",
                match e {
                    Effect::Close { reason, .. } => *reason,
                }
            );
            if let Some(h) = &hooks {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.apply(e))).is_err() {
                    log::error!("a session close hook panicked");
                }
            }
        }
    }

    /// Starts a browser tool call's session (R-PROF-2..4): lazily creates or reuses the
    /// thread's session, closes what must close first (through the hooks), and returns a guard
    /// that ends the call when dropped. Standard data handling: a strict session of the thread
    /// is replaced, never reused.
    pub fn begin_browser_call(&self, call: &BrowserCall) -> Result<BrowserCallGuard> {
        self.begin_browser_call_as(call, false)
    }

    /// [`Leases::begin_browser_call`] in standard or `strict` data handling (seed 001): a
    /// strict call gets a strict session — never the thread's standard one, which it replaces —
    /// always isolated (`BROWSER_AUTHENTICATED_UNAVAILABLE` when it asks for authenticated
    /// mode; a configured profile is not used).
    pub(crate) fn begin_browser_call_as(
        &self,
        call: &BrowserCall,
        strict: bool,
    ) -> Result<BrowserCallGuard> {
        self.check_open()?;
        id_arg("thread_id", &call.thread_id)?;
        id_arg("organization", &call.organization)?;
        let req = profile::SessionRequest {
            thread_id: call.thread_id.clone(),
            organization: call.organization.clone(),
            mode: call.mode,
            profile: call
                .profile_key
                .as_deref()
                .map(|k| profile_key_hash(&self.inner.secret, &call.organization, k)),
            authenticated_allowed: call.authenticated_allowed,
            strict,
        };
        let now = self.inner.clock.now();
        // Drawn before the lock (used only when the call creates a session); a failed random
        // source is an error, never a predictable id.
        let fresh = crate::ids::random_id("bs_")?;
        let (result, effects) = self
            .inner
            .sessions
            .lock()
            .begin_call(&req, move || fresh, now);
        self.apply(&effects);
        let result = match (result, &self.inner.fleet, &call.profile_key) {
            (Ok(grant), Some(fleet), Some(key)) if grant.profile.is_some() => {
                let local = grant.profile.clone().unwrap_or_default();
                match self.take_fleet_profile(fleet, &local, &call.organization, key) {
                    Ok(()) => Ok(grant),
                    Err(e) => {
                        // Not this process's profile (now): the call does not run in it.
                        let now = self.inner.clock.now();
                        let mut sessions = self.inner.sessions.lock();
                        sessions.end_call(&grant.session_id, now);
                        let close = grant.created || e.code() == "BROWSER_CONTEXT_BUSY";
                        let effects = if close {
                            sessions.end_thread(&call.thread_id)
                        } else {
                            Vec::new()
                        };
                        drop(sessions);
                        self.apply(&effects);
                        self.release_fleet_profiles();
                        return Err(e);
                    }
                }
            }
            (result, _, _) => {
                self.release_fleet_profiles();
                result
            }
        };
        match result {
            Ok(grant) => Ok(BrowserCallGuard {
                leases: self.clone(),
                session_id: grant.session_id,
                mode: grant.mode,
                created: grant.created,
                profile: grant.profile,
                strict: grant.strict,
            }),
            Err(r) => Err(session_refusal(r)),
        }
    }

    /// A browser task takes the profile of `(organization, profile_key)` for its whole life
    /// (issue 21 item 5), as `holder`, and returns the profile's keyed hash — the directory
    /// name under `<data_dir>/profiles` its browser must use, the very one a thread session of
    /// the same organization and key gets, so the two meet here and never at Chromium's lock.
    /// An idle thread session holding it is closed first, its profile persisted (through the
    /// hooks, outside every lock, before this returns). `BROWSER_CONTEXT_BUSY` (isolated mode
    /// available: a task without a profile can run) while an active thread session or another
    /// task holds it — naming neither; `BROWSER_UNAVAILABLE` past
    /// [`profile::MAX_PINS`]. Pair with [`Leases::unpin_profile`] once the browser is closed.
    pub(crate) fn pin_profile(
        &self,
        organization: &str,
        profile_key: &str,
        holder: &str,
    ) -> Result<String> {
        self.check_open()?;
        id_arg("organization", organization)?;
        let hash = profile_key_hash(&self.inner.secret, organization, profile_key);
        if let Some(fleet) = &self.inner.fleet {
            // Another process's holder refuses it before anything here changes.
            self.take_fleet_profile(fleet, &hash, organization, profile_key)?;
        }
        let now = self.inner.clock.now();
        let (result, effects) = self.inner.sessions.lock().pin(&hash, holder, now);
        self.apply(&effects);
        self.release_fleet_profiles();
        result.map(|()| hash).map_err(session_refusal)
    }

    /// On the shared store: takes or renews this process's fleet-wide lease on the profile
    /// whose local keyed hash is `local`. `BROWSER_CONTEXT_BUSY` (naming nobody) while another
    /// process holds it; `STORE_UNAVAILABLE` when the store cannot say — a holder that cannot
    /// reach the store does not start a call in the profile.
    fn take_fleet_profile(
        &self,
        fleet: &Fleet,
        local: &str,
        organization: &str,
        profile_key: &str,
    ) -> Result<()> {
        let key = fleet.profile_key(organization, profile_key);
        let mut held = self.inner.fleet_profiles.lock();
        if fleet.profile_acquire(&key)? {
            held.insert(local.to_string(), key);
            Ok(())
        } else {
            Err(session_refusal(SessionRefusal::ContextBusy))
        }
    }

    /// On the shared store: gives back the fleet-wide leases of the profiles no session or
    /// task of this process holds any more (one that cannot be given back now is retried at
    /// the next call; meanwhile the heartbeat keeps it).
    fn release_fleet_profiles(&self) {
        let Some(fleet) = &self.inner.fleet else {
            return;
        };
        let mut held = self.inner.fleet_profiles.lock();
        if held.is_empty() {
            return;
        }
        let unused: Vec<String> = {
            let sessions = self.inner.sessions.lock();
            held.keys()
                .filter(|local| sessions.holders_of(local) == 0)
                .cloned()
                .collect()
        };
        for local in unused {
            let Some(key) = held.get(&local) else {
                continue;
            };
            match fleet.profile_release(key) {
                Ok(()) => {
                    held.remove(&local);
                }
                Err(e) => log::warn!("a profile lease was not given back: {}", e.code()),
            }
        }
    }

    /// Ends `holder`'s pin of the profile `hash` ([`Leases::pin_profile`]) after the task's
    /// browser is closed. Idempotent; works on a closed gateway (a task closing late still
    /// lets go); only the holder unpins.
    pub(crate) fn unpin_profile(&self, hash: &str, holder: &str) {
        self.inner.sessions.lock().unpin(hash, holder);
        self.release_fleet_profiles();
    }

    /// Closes the thread's browser session (the thread ended).
    pub fn end_thread(&self, thread_id: &str) {
        let effects = self.inner.sessions.lock().end_thread(thread_id);
        self.apply(&effects);
        self.release_fleet_profiles();
    }

    /// Reaps idle and over-age browser sessions and prunes empty control leases now. The
    /// gateway's reaper thread calls this periodically; tests call it after moving a manual
    /// clock. Returns how many sessions were closed.
    pub fn reap(&self) -> usize {
        let now = self.inner.clock.now();
        let effects = self.inner.sessions.lock().reap(now);
        self.apply(&effects);
        self.release_fleet_profiles();
        self.inner.control.lock().table.prune(now);
        effects.len()
    }

    /// Closes every browser session (gateway shutdown).
    pub(crate) fn close_all(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let effects = self.inner.sessions.lock().drain();
        self.apply(&effects);
        self.release_fleet_profiles();
        self.close_fleet();
    }

    /// Live browser sessions.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.lock().len()
    }
}

/// Test hooks of the shared store, re-exported by `jevgate::unstable` only (never part of the
/// lease API).
pub(crate) mod test_hooks {
    use super::{Leases, Result};

    /// Tests only (re-exported by `jevgate::unstable`): moves `leases`' view of the shared store's
    /// clock by `ms` (the PostgreSQL counterpart of `ManualClock::advance`; expiry on the shared
    /// store is judged by the database's clock, never the host's). No effect on SQLite.
    pub fn advance_store_clock_ms(leases: &Leases, ms: i64) {
        if let Some(fleet) = &leases.inner.fleet {
            fleet.advance_clock_ms(ms);
        }
    }

    /// Tests only (re-exported by `jevgate::unstable`): on the shared store, this process's id in
    /// the fleet and the ids of the processes alive now (fresh liveness rows on the database
    /// clock); `None` on SQLite.
    pub fn fleet_processes(leases: &Leases) -> Option<Result<(String, Vec<String>)>> {
        let fleet = leases.inner.fleet.as_ref()?;
        Some(
            fleet
                .live_processes()
                .map(|live| (fleet.process_id().to_string(), live)),
        )
    }
}

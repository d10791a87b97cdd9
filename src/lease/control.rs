//! The device control lease as a pure state machine over explicit time (R-LEASE-1..6).
//!
//! Owns who drives each device: acquire on first call, renew on each later call, free after
//! 120 s without a renewing call, the person's take-back with its revoked-but-unexpired window,
//! and the one-time `DEVICE_CONTROL_REVOKED` notice. It never names a holder to anyone but the
//! holder itself, never lets two sessions hold one device, and does no I/O: the façade in
//! `lease/mod.rs` adds locking, persistence and cancellation hooks.

use crate::clock::Instant;
use std::collections::HashMap;
use std::time::Duration;

/// Idle expiry of a control lease, and the length of the revoked-but-unexpired window.
pub const CONTROL_TTL: Duration = Duration::from_secs(120);

/// How long an undelivered revocation notice is kept for its session.
pub const NOTICE_RETENTION: Duration = Duration::from_secs(3600);

/// At most this many undelivered notices are kept per device (oldest dropped first).
pub const MAX_NOTICES_PER_DEVICE: usize = 16;

/// Why a call may not drive the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Another session holds the lease (or the revoked window is open). Names nobody.
    Elsewhere,
    /// A person took control back from this session; told once, then cleared.
    Revoked,
    /// `renew` by a session that does not hold the lease.
    NotHeld,
}

/// A granted call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// `true` when this call acquired the lease (it was free), `false` when it renewed it.
    pub acquired: bool,
    /// When the lease goes idle unless renewed.
    pub expires_at: Instant,
}

/// What `control_status` reports (R-LEASE-4, R-LEASE-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The device is held, or sits in the revoked-but-unexpired window.
    pub held: bool,
    /// The holder, only when it is the caller's own session.
    pub held_by_root_session: Option<String>,
    /// When the hold or the window ends.
    pub expires_at: Option<Instant>,
    /// The revoked-but-unexpired window is open.
    pub revoked: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Hold {
    session: String,
    expires_at: Instant,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Notice {
    session: String,
    /// Takeover time + 120 s: until then nobody else may acquire.
    window_ends: Instant,
    taken_at: Instant,
}

/// One device's lease state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceLease {
    hold: Option<Hold>,
    notices: Vec<Notice>,
    /// Bumped whenever the persistable view (holder, notices) changes; renewals do not bump it.
    epoch: u64,
    /// The version of the persisted row, kept by the façade (the SQLite engine's fencing
    /// token: it grows with every persisted change, so every tenure has its own).
    version: u64,
}

/// A persisted view of one device's lease (holder changes and notices only; renewals are not
/// persisted because a restart re-grants a full TTL anyway — see the clock policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The holder, if any.
    pub holder: Option<String>,
    /// Sessions owed a `DEVICE_CONTROL_REVOKED` notice.
    pub revoked_sessions: Vec<String>,
}

impl DeviceLease {
    /// Drops an idle hold and stale notices.
    fn settle(&mut self, now: Instant) {
        if self.hold.as_ref().is_some_and(|h| h.expires_at <= now) {
            self.hold = None;
            self.epoch += 1;
        }
        let before = self.notices.len();
        self.notices
            .retain(|n| now.saturating_duration_since(n.taken_at) < NOTICE_RETENTION);
        if self.notices.len() != before {
            self.epoch += 1;
        }
    }

    /// Changes whenever the persistable view changes (cheap change detection for the façade).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The persisted row's version (see the field); 0 before the first write.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The next version, for a write of the changed view; returns it.
    pub(crate) fn bump_version(&mut self) -> u64 {
        self.version = self.version.saturating_add(1);
        self.version
    }

    /// Sets the version read back from the store on open.
    pub(crate) fn set_version(&mut self, version: u64) {
        self.version = version;
    }

    fn window_open(&self, now: Instant) -> Option<Instant> {
        self.notices
            .iter()
            .filter(|n| n.window_ends > now)
            .map(|n| n.window_ends)
            .max()
    }

    fn take_notice(&mut self, session: &str) -> bool {
        let before = self.notices.len();
        self.notices.retain(|n| n.session != session);
        let taken = self.notices.len() != before;
        if taken {
            self.epoch += 1;
        }
        taken
    }

    /// A browser call by `session`: acquires a free lease or renews its own (R-LEASE-1),
    /// refuses while another holds it or the revoked window is open (R-LEASE-2, -4), and
    /// delivers a pending revocation notice exactly once (R-LEASE-3).
    pub fn touch(&mut self, session: &str, now: Instant) -> Result<Grant, Refusal> {
        self.settle(now);
        if self.take_notice(session) {
            return Err(Refusal::Revoked);
        }
        let expires_at = now + CONTROL_TTL;
        let window_open = self.window_open(now).is_some();
        match &mut self.hold {
            Some(h) if h.session == session => {
                h.expires_at = expires_at;
                Ok(Grant {
                    acquired: false,
                    expires_at,
                })
            }
            Some(_) => Err(Refusal::Elsewhere),
            None if window_open => Err(Refusal::Elsewhere),
            None => {
                self.hold = Some(Hold {
                    session: session.to_string(),
                    expires_at,
                });
                self.epoch += 1;
                Ok(Grant {
                    acquired: true,
                    expires_at,
                })
            }
        }
    }

    /// Renews only: like [`DeviceLease::touch`] but never acquires (`NotHeld` instead).
    pub fn renew(&mut self, session: &str, now: Instant) -> Result<Grant, Refusal> {
        self.settle(now);
        if self.take_notice(session) {
            return Err(Refusal::Revoked);
        }
        match &mut self.hold {
            Some(h) if h.session == session => {
                h.expires_at = now + CONTROL_TTL;
                Ok(Grant {
                    acquired: false,
                    expires_at: h.expires_at,
                })
            }
            Some(_) => Err(Refusal::Elsewhere),
            None => Err(Refusal::NotHeld),
        }
    }

    /// The person takes control back (R-LEASE-3): clears the holder and opens the revoked
    /// window. Returns the dispossessed session (whose in-flight command must be cancelled),
    /// or `None` when nobody held the lease.
    pub fn take_back(&mut self, now: Instant) -> Option<String> {
        self.settle(now);
        let hold = self.hold.take()?;
        self.epoch += 1;
        self.notices.retain(|n| n.session != hold.session);
        if self.notices.len() >= MAX_NOTICES_PER_DEVICE {
            self.notices.remove(0);
        }
        self.notices.push(Notice {
            session: hold.session.clone(),
            window_ends: now + CONTROL_TTL,
            taken_at: now,
        });
        Some(hold.session)
    }

    /// Session end / Chat Stop / archive (R-LEASE-6): releases the lease if `session` holds it
    /// and forgets notices owed to it. Never cancels anything. Returns whether anything changed.
    pub fn release_session(&mut self, session: &str, now: Instant) -> bool {
        self.settle(now);
        let mut changed = false;
        if self.hold.as_ref().is_some_and(|h| h.session == session) {
            self.hold = None;
            self.epoch += 1;
            changed = true;
        }
        changed | self.take_notice(session)
    }

    /// `control_status` for `caller` (R-LEASE-4, R-LEASE-5). Reads only.
    pub fn status(&self, caller: Option<&str>, now: Instant) -> Status {
        if let Some(h) = self.hold.as_ref().filter(|h| h.expires_at > now) {
            return Status {
                held: true,
                held_by_root_session: caller.filter(|c| *c == h.session).map(str::to_string),
                expires_at: Some(h.expires_at),
                revoked: false,
            };
        }
        match self.window_open(now) {
            Some(ends) => Status {
                held: true,
                held_by_root_session: None,
                expires_at: Some(ends),
                revoked: true,
            },
            None => Status {
                held: false,
                held_by_root_session: None,
                expires_at: None,
                revoked: false,
            },
        }
    }

    /// The holder now, if any (for invariant checks and cancellation routing).
    pub fn holder(&self, now: Instant) -> Option<&str> {
        self.hold
            .as_ref()
            .filter(|h| h.expires_at > now)
            .map(|h| h.session.as_str())
    }

    /// Whether the lease holds nothing worth keeping (no hold, no notices).
    pub fn is_empty(&self, now: Instant) -> bool {
        self.holder(now).is_none()
            && self
                .notices
                .iter()
                .all(|n| now.saturating_duration_since(n.taken_at) >= NOTICE_RETENTION)
    }

    /// The persistable view.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            holder: self.hold.as_ref().map(|h| h.session.clone()),
            revoked_sessions: self.notices.iter().map(|n| n.session.clone()).collect(),
        }
    }

    /// Restores a persisted lease after a restart at `now` (the clock policy): a holder gets a
    /// full TTL from now — never an early expiry — and every owed notice a fresh window, so no
    /// other session can slip in before the dispossessed one is told (a Chubby-style lock-delay).
    pub fn restore(snapshot: &Snapshot, now: Instant) -> DeviceLease {
        DeviceLease {
            hold: snapshot.holder.as_ref().map(|s| Hold {
                session: s.clone(),
                expires_at: now + CONTROL_TTL,
            }),
            notices: snapshot
                .revoked_sessions
                .iter()
                .map(|s| Notice {
                    session: s.clone(),
                    window_ends: now + CONTROL_TTL,
                    taken_at: now,
                })
                .collect(),
            epoch: 0,
            version: 0,
        }
    }
}

/// The whole state of one device's lease as plain data (times in milliseconds since the
/// clock's origin), for an engine that keeps it in a row and runs the same transitions on it
/// (the PostgreSQL engine, `lease/pg.rs`).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only the PostgreSQL engine keeps records
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Record {
    /// The holder and when its hold expires.
    #[serde(default)]
    hold: Option<(String, u64)>,
    /// Owed notices: session, window end, take-back time.
    #[serde(default)]
    notices: Vec<(String, u64, u64)>,
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only the PostgreSQL engine keeps records
impl Record {
    /// When the recorded hold expires (ms since the clock's origin), if there is one.
    pub(crate) fn hold_expires_ms(&self) -> Option<u64> {
        self.hold.as_ref().map(|(_, e)| *e)
    }
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only the PostgreSQL engine keeps records
fn ms(at: Instant) -> u64 {
    u64::try_from(at.since_origin().as_millis()).unwrap_or(u64::MAX)
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only the PostgreSQL engine keeps records
fn at(ms: u64) -> Instant {
    Instant::from_origin(Duration::from_millis(ms))
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only the PostgreSQL engine keeps records
impl DeviceLease {
    /// The whole state as plain data.
    pub(crate) fn to_record(&self) -> Record {
        Record {
            hold: self
                .hold
                .as_ref()
                .map(|h| (h.session.clone(), ms(h.expires_at))),
            notices: self
                .notices
                .iter()
                .map(|n| (n.session.clone(), ms(n.window_ends), ms(n.taken_at)))
                .collect(),
        }
    }

    /// The state a [`Record`] describes (bounded: at most [`MAX_NOTICES_PER_DEVICE`] notices).
    pub(crate) fn from_record(r: &Record) -> DeviceLease {
        DeviceLease {
            hold: r.hold.as_ref().map(|(s, e)| Hold {
                session: s.clone(),
                expires_at: at(*e),
            }),
            notices: r
                .notices
                .iter()
                .rev()
                .take(MAX_NOTICES_PER_DEVICE)
                .rev()
                .map(|(s, w, t)| Notice {
                    session: s.clone(),
                    window_ends: at(*w),
                    taken_at: at(*t),
                })
                .collect(),
            epoch: 0,
            version: 0,
        }
    }
}

/// What a transition on a device's shared row left behind (the PostgreSQL engine, `pg.rs`;
/// here so that engine and the fleet share it without a circle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct After {
    /// The device's fencing token after the transition.
    pub token: u64,
    /// The database clock when the transition ran (ms since the Unix epoch).
    pub now_ms: u64,
    /// The token of the tenure this transition took back (R-LEASE-3), if it did.
    pub took_back: Option<u64>,
}

/// All devices' control leases.
#[derive(Debug, Default)]
pub struct ControlTable {
    devices: HashMap<String, DeviceLease>,
}

impl ControlTable {
    /// The lease of `device`, created empty on first use.
    pub fn device(&mut self, device: &str) -> &mut DeviceLease {
        if !self.devices.contains_key(device) {
            self.devices
                .insert(device.to_string(), DeviceLease::default());
        }
        self.devices.get_mut(device).expect("inserted above")
    }

    /// The lease of `device`, if it was ever used.
    pub fn get(&self, device: &str) -> Option<&DeviceLease> {
        self.devices.get(device)
    }

    /// Devices whose lease `session` holds or which owe it a notice.
    pub fn devices_of(&self, session: &str) -> Vec<String> {
        self.devices
            .iter()
            .filter(|(_, l)| {
                l.hold.as_ref().is_some_and(|h| h.session == session)
                    || l.notices.iter().any(|n| n.session == session)
            })
            .map(|(d, _)| d.clone())
            .collect()
    }

    /// Forgets devices whose lease holds nothing (bounded memory).
    pub fn prune(&mut self, now: Instant) {
        self.devices.retain(|_, l| !l.is_empty(now));
    }

    /// Puts a restored lease in place.
    pub fn insert(&mut self, device: String, lease: DeviceLease) {
        self.devices.insert(device, lease);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: u64) -> Instant {
        Instant::from_origin(Duration::from_secs(secs))
    }

    // R-LEASE-1
    #[test]
    fn first_call_acquires_later_calls_renew_and_idle_expiry_frees() {
        let mut l = DeviceLease::default();
        assert_eq!(
            l.touch("a", t(0)),
            Ok(Grant {
                acquired: true,
                expires_at: t(120)
            })
        );
        assert_eq!(
            l.touch("a", t(100)),
            Ok(Grant {
                acquired: false,
                expires_at: t(220)
            })
        );
        assert_eq!(l.touch("b", t(219)), Err(Refusal::Elsewhere));
        assert_eq!(
            l.touch("b", t(220)),
            Ok(Grant {
                acquired: true,
                expires_at: t(340)
            })
        );
    }

    // R-LEASE-2: the refusal carries nothing about the holder.
    #[test]
    fn another_session_gets_elsewhere_without_the_holder() {
        let mut l = DeviceLease::default();
        l.touch("secret-holder", t(0)).unwrap();
        let r = l.touch("b", t(1)).unwrap_err();
        assert_eq!(r, Refusal::Elsewhere);
        assert!(!format!("{r:?}").contains("secret-holder"));
        assert_eq!(l.status(Some("b"), t(1)).held_by_root_session, None);
    }

    // R-LEASE-3, R-LEASE-4
    #[test]
    fn take_back_revokes_once_and_holds_the_window_against_others() {
        let mut l = DeviceLease::default();
        l.touch("a", t(0)).unwrap();
        assert_eq!(l.take_back(t(10)), Some("a".to_string()));
        let s = l.status(Some("a"), t(11));
        assert_eq!(
            s,
            Status {
                held: true,
                held_by_root_session: None,
                expires_at: Some(t(130)),
                revoked: true
            }
        );
        assert_eq!(
            l.touch("b", t(20)),
            Err(Refusal::Elsewhere),
            "window blocks others"
        );
        assert_eq!(l.touch("a", t(30)), Err(Refusal::Revoked), "told once");
        assert!(!l.status(None, t(31)).held, "told: window closed");
        assert!(
            l.touch("a", t(32)).unwrap().acquired,
            "then behaves normally"
        );
    }

    #[test]
    fn window_ends_after_120_s_even_if_the_former_holder_was_never_told() {
        let mut l = DeviceLease::default();
        l.touch("a", t(0)).unwrap();
        l.take_back(t(0));
        assert_eq!(l.touch("b", t(119)), Err(Refusal::Elsewhere));
        assert!(l.touch("b", t(120)).unwrap().acquired);
        // The former holder is still told once, then meets the new holder.
        assert_eq!(l.touch("a", t(121)), Err(Refusal::Revoked));
        assert_eq!(l.touch("a", t(122)), Err(Refusal::Elsewhere));
    }

    #[test]
    fn take_back_of_a_free_device_changes_nothing() {
        let mut l = DeviceLease::default();
        assert_eq!(l.take_back(t(0)), None);
        assert!(!l.status(None, t(0)).held);
        l.touch("a", t(0)).unwrap();
        assert_eq!(
            l.take_back(t(121)),
            None,
            "an expired lease has no holder to dispossess"
        );
    }

    // R-LEASE-5
    #[test]
    fn status_reveals_only_the_callers_own_session() {
        let mut l = DeviceLease::default();
        l.touch("a", t(0)).unwrap();
        assert_eq!(
            l.status(Some("a"), t(1)).held_by_root_session.as_deref(),
            Some("a")
        );
        assert_eq!(l.status(Some("b"), t(1)).held_by_root_session, None);
        assert_eq!(l.status(None, t(1)).held_by_root_session, None);
        assert_eq!(l.status(None, t(1)).expires_at, Some(t(120)));
        assert_eq!(
            l.status(None, t(120)),
            Status {
                held: false,
                held_by_root_session: None,
                expires_at: None,
                revoked: false
            }
        );
    }

    // R-LEASE-6
    #[test]
    fn session_end_releases_without_a_notice() {
        let mut l = DeviceLease::default();
        l.touch("a", t(0)).unwrap();
        assert!(l.release_session("a", t(5)));
        assert!(l.touch("b", t(6)).unwrap().acquired);
        assert!(!l.release_session("a", t(7)));
        assert_eq!(
            l.touch("a", t(8)),
            Err(Refusal::Elsewhere),
            "no REVOKED after a session end"
        );
    }

    #[test]
    fn renew_never_acquires() {
        let mut l = DeviceLease::default();
        assert_eq!(l.renew("a", t(0)), Err(Refusal::NotHeld));
        l.touch("a", t(0)).unwrap();
        assert_eq!(l.renew("a", t(60)).unwrap().expires_at, t(180));
        assert_eq!(l.renew("b", t(60)), Err(Refusal::Elsewhere));
        assert_eq!(l.renew("a", t(180)), Err(Refusal::NotHeld));
    }

    #[test]
    fn notices_are_bounded_and_expire() {
        let mut l = DeviceLease::default();
        for i in 0..40u64 {
            l.touch(&format!("s{i}"), t(i * 200)).unwrap();
            l.take_back(t(i * 200));
        }
        assert!(l.notices.len() <= MAX_NOTICES_PER_DEVICE);
        let later = t(40 * 200 + 3600);
        assert!(l.is_empty(later));
    }

    #[test]
    fn a_record_round_trips_the_whole_state() {
        let mut l = DeviceLease::default();
        l.touch("a", t(0)).unwrap();
        l.take_back(t(5));
        l.touch("b", t(200)).unwrap();
        let back = DeviceLease::from_record(&l.to_record());
        assert_eq!(back.to_record(), l.to_record());
        assert_eq!(back.holder(t(201)), Some("b"));
        let json = serde_json::to_string(&l.to_record()).unwrap();
        let parsed: Record = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed, l.to_record());
    }

    // Clock policy: restore re-grants a full TTL and re-opens owed windows.
    #[test]
    fn restore_never_expires_early() {
        let mut l = DeviceLease::default();
        l.touch("a", t(0)).unwrap();
        let mut other = DeviceLease::default();
        other.touch("x", t(0)).unwrap();
        other.take_back(t(1));
        let restored = DeviceLease::restore(&l.snapshot(), t(500));
        assert_eq!(restored.holder(t(619)), Some("a"));
        let mut r2 = DeviceLease::restore(&other.snapshot(), t(500));
        assert_eq!(r2.touch("y", t(600)), Err(Refusal::Elsewhere));
        assert_eq!(r2.touch("x", t(601)), Err(Refusal::Revoked));
    }
}

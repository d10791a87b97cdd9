//! Profile leases and browser session lifetimes as a pure state machine (R-PROF-1..4).
//!
//! Owns which thread's browser session is live, in which mode, and which session holds a
//! persistent profile: one live session per (organization, profileKey), an idle holder closed
//! (and its profile persisted) before a new thread inherits it, `BROWSER_CONTEXT_BUSY` when the
//! holder is active, explicit modes never silently downgraded, lazy creation, and reaping after
//! 15 minutes idle or at a 1-hour hard ceiling. Strict data handling (seed 001 "Strict data
//! handling") is a property of a session: a strict call never reuses a standard session (it
//! replaces it, and a standard call replaces a strict one), and a strict session is always
//! isolated — it never holds a profile, and authenticated mode is refused in strict.
//!
//! A browser task's local profile (R-TSK targets, issue 21 item 5) is held here too, as a
//! *pin*: a task takes the profile for its whole life ([`SessionTable::pin`]), so at most one
//! live holder — a thread session or a task — uses a profile directory at any moment. Pinning a
//! profile an active thread session holds is refused (`BROWSER_CONTEXT_BUSY`), an idle holder is
//! closed with its profile persisted first; while pinned, an authenticated call needing the
//! profile is busy (isolated mode stays available). At most [`MAX_PINS`] pins at once.
//!
//! It does no I/O and never sees a raw profile key: callers pass the keyed hash
//! ([`profile_key_hash`]). Closing a real browser is an [`Effect`] the façade performs.

use crate::clock::Instant;
use ring::hmac;
use std::collections::HashMap;
use std::time::Duration;

/// A session idle this long (no call in flight) is reaped.
pub const IDLE_REAP: Duration = Duration::from_secs(15 * 60);
/// A session this old is reaped (once no call is in flight).
pub const HARD_CEILING: Duration = Duration::from_secs(60 * 60);
/// A profile holder whose last call ended less than this long ago counts as active (a run
/// between two tool calls), so a new thread does not take the profile from under it.
pub const ACTIVE_GRACE: Duration = Duration::from_secs(60);
/// Most profiles tasks may pin at once. The task service's own bound (64 open sessions per
/// gateway, issue 21 "Sessions and bounds") keeps the real number far below; past this cap a
/// pin is refused ([`SessionRefusal::TooManyPins`]) and no pin is ever evicted — evicting a
/// live task's pin would let a second Chromium open its profile directory.
pub const MAX_PINS: usize = 1024;

/// HMAC-SHA-256 of `(organization, profile_key)` under the per-gateway secret, hex-encoded
/// (R-PROF-1). The raw key is never stored.
///
/// ```
/// let h = jevgate::unstable::profile_key_hash(b"secret", "org", "work-profile");
/// assert_eq!(h.len(), 64);
/// assert_ne!(h, jevgate::unstable::profile_key_hash(b"other", "org", "work-profile"));
/// ```
pub fn profile_key_hash(secret: &[u8], organization: &str, profile_key: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(&(organization.len() as u64).to_be_bytes());
    ctx.update(organization.as_bytes());
    ctx.update(profile_key.as_bytes());
    ctx.sign()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Browser session mode (seed 001 `sessionMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionMode {
    /// Uses the persistent profile (cookies, saved logins).
    Authenticated,
    /// Starts clean; never reads or writes the profile.
    Isolated,
}

impl SessionMode {
    /// `"authenticated"` or `"isolated"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionMode::Authenticated => "authenticated",
            SessionMode::Isolated => "isolated",
        }
    }
}

/// The one parser of a session mode for every surface (Rust, C, Python): `"authenticated"` or
/// `"isolated"`, anything else `INVALID_ARGUMENT` (argument `mode`).
///
/// ```
/// use jevgate::lease::SessionMode;
/// assert_eq!("isolated".parse::<SessionMode>().unwrap(), SessionMode::Isolated);
/// assert_eq!("private".parse::<SessionMode>().unwrap_err().code(), "INVALID_ARGUMENT");
/// ```
impl std::str::FromStr for SessionMode {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<SessionMode, crate::Error> {
        match s {
            "authenticated" => Ok(SessionMode::Authenticated),
            "isolated" => Ok(SessionMode::Isolated),
            _ => Err(crate::Error::InvalidArgument {
                name: "mode",
                reason: "must be \"authenticated\" or \"isolated\"".into(),
            }),
        }
    }
}

impl serde::Serialize for SessionMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A browser tool call's view of what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRequest {
    /// The thread (conversation) the call belongs to.
    pub thread_id: String,
    /// The organization owning the profile.
    pub organization: String,
    /// Explicit mode, or `None` to continue the live mode (or the default).
    pub mode: Option<SessionMode>,
    /// Keyed hash of the configured profile key, if a profile is configured.
    pub profile: Option<String>,
    /// Whether the caller may use authenticated mode.
    pub authenticated_allowed: bool,
    /// Strict data handling: only a strict session serves the call; always isolated.
    pub strict: bool,
}

/// Why a session could not be provided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionRefusal {
    /// Another active thread holds the profile; isolated mode is available.
    ContextBusy,
    /// Authenticated mode without permission or without a configured profile.
    AuthenticatedUnavailable,
    /// [`MAX_PINS`] profiles are pinned already (a pin only).
    TooManyPins,
}

/// Why a session closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The thread switched modes explicitly.
    ModeSwitch,
    /// A new thread, or a task, needed the profile this idle session held.
    ProfileHandOver,
    /// 15 minutes without a call.
    Idle,
    /// The 1-hour hard ceiling.
    Ceiling,
    /// The thread ended.
    ThreadEnded,
    /// A call of the thread switched between standard and strict data handling (seed 001: a
    /// strict run replaces an existing standard session rather than reusing it).
    DataHandlingSwitch,
}

/// Something the façade must do after a transition (outside any lock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Close a browser session; persist its profile first when `persist_profile`.
    Close {
        /// The session to close.
        session_id: String,
        /// Its thread.
        thread_id: String,
        /// Persist cookies/storage to the profile before closing (authenticated sessions).
        persist_profile: bool,
        /// Why.
        reason: CloseReason,
    },
}

/// A live session as the table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserSession {
    /// Session id.
    pub id: String,
    /// Owning thread.
    pub thread_id: String,
    /// Organization.
    pub organization: String,
    /// Mode.
    pub mode: SessionMode,
    /// Profile hash held (authenticated sessions).
    pub profile: Option<String>,
    /// Creation time.
    pub created_at: Instant,
    /// End of the last call (or creation).
    pub last_used: Instant,
    /// Calls in flight.
    pub in_flight: u32,
    /// Strict data handling.
    pub strict: bool,
}

/// The result of [`SessionTable::begin_call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionGrant {
    /// The session to run the call in.
    pub session_id: String,
    /// Its mode.
    pub mode: SessionMode,
    /// `true` when the session was created by this call.
    pub created: bool,
    /// The keyed hash of the profile an authenticated session holds (`None` when isolated).
    pub profile: Option<String>,
    /// Strict data handling.
    pub strict: bool,
    /// Sessions to close before using it (a switched-away session, an idle profile holder,
    /// reaped sessions), in order.
    pub effects: Vec<Effect>,
}

/// A task's hold on a profile ([`SessionTable::pin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pin {
    /// Who pinned it (the only one who may unpin it).
    holder: String,
}

/// All live browser sessions, keyed by thread, and the profiles tasks pin.
#[derive(Debug, Default)]
pub struct SessionTable {
    by_thread: HashMap<String, BrowserSession>,
    /// Profile hash → the task holding it; at most [`MAX_PINS`] entries.
    pins: HashMap<String, Pin>,
}

fn close(s: BrowserSession, reason: CloseReason) -> Effect {
    Effect::Close {
        persist_profile: s.mode == SessionMode::Authenticated,
        session_id: s.id,
        thread_id: s.thread_id,
        reason,
    }
}

impl SessionTable {
    /// Starts a browser tool call (R-PROF-2..4): reaps what is due, resolves the mode, reuses
    /// or creates the thread's session (with `new_id` when creating), and hands the profile
    /// over from an idle holder. On refusal nothing changes except reaping.
    pub fn begin_call(
        &mut self,
        req: &SessionRequest,
        new_id: impl FnOnce() -> String,
        now: Instant,
    ) -> (Result<SessionGrant, SessionRefusal>, Vec<Effect>) {
        let mut effects = self.reap(now);
        // A session of the other data handling is never continued (its mode neither).
        let live_mode = self
            .by_thread
            .get(&req.thread_id)
            .filter(|s| s.strict == req.strict)
            .map(|s| s.mode);
        let mode = req
            .mode
            .or(live_mode)
            .unwrap_or(if req.profile.is_some() && !req.strict {
                SessionMode::Authenticated
            } else {
                SessionMode::Isolated
            });
        if mode == SessionMode::Authenticated
            && (!req.authenticated_allowed || req.profile.is_none() || req.strict)
        {
            return (Err(SessionRefusal::AuthenticatedUnavailable), effects);
        }
        if let Some(s) = self.by_thread.get_mut(&req.thread_id) {
            if s.mode == mode && s.strict == req.strict {
                s.in_flight += 1;
                return (
                    Ok(SessionGrant {
                        session_id: s.id.clone(),
                        mode,
                        created: false,
                        profile: s.profile.clone(),
                        strict: s.strict,
                        effects: Vec::new(),
                    }),
                    effects,
                );
            }
        }
        // Find the profile holder of another thread before changing anything.
        let holder = match mode {
            SessionMode::Authenticated => self
                .by_thread
                .values()
                .find(|s| {
                    s.thread_id != req.thread_id
                        && s.organization == req.organization
                        && s.profile == req.profile
                        && s.mode == SessionMode::Authenticated
                })
                .map(|s| {
                    (
                        s.thread_id.clone(),
                        s.in_flight > 0
                            || now.saturating_duration_since(s.last_used) < ACTIVE_GRACE,
                    )
                }),
            SessionMode::Isolated => None,
        };
        if let Some((_, true)) = holder {
            return (Err(SessionRefusal::ContextBusy), effects);
        }
        // A task holds the profile for its whole life: busy, however long it has been idle.
        if mode == SessionMode::Authenticated
            && req
                .profile
                .as_ref()
                .is_some_and(|p| self.pins.contains_key(p))
        {
            return (Err(SessionRefusal::ContextBusy), effects);
        }
        let mut grant_effects = Vec::new();
        if let Some(old) = self.by_thread.remove(&req.thread_id) {
            let why = if old.strict != req.strict {
                CloseReason::DataHandlingSwitch
            } else {
                CloseReason::ModeSwitch
            };
            grant_effects.push(close(old, why));
        }
        if let Some((thread, false)) = holder {
            if let Some(idle) = self.by_thread.remove(&thread) {
                grant_effects.push(close(idle, CloseReason::ProfileHandOver));
            }
        }
        let id = new_id();
        let profile = (mode == SessionMode::Authenticated)
            .then(|| req.profile.clone())
            .flatten();
        self.by_thread.insert(
            req.thread_id.clone(),
            BrowserSession {
                id: id.clone(),
                thread_id: req.thread_id.clone(),
                organization: req.organization.clone(),
                mode,
                profile: profile.clone(),
                created_at: now,
                last_used: now,
                in_flight: 1,
                strict: req.strict,
            },
        );
        effects.extend(grant_effects.iter().cloned());
        (
            Ok(SessionGrant {
                session_id: id,
                mode,
                created: true,
                profile,
                strict: req.strict,
                effects: grant_effects,
            }),
            effects,
        )
    }

    /// Ends a call started by [`SessionTable::begin_call`] on `session_id`.
    pub fn end_call(&mut self, session_id: &str, now: Instant) {
        if let Some(s) = self.by_thread.values_mut().find(|s| s.id == session_id) {
            s.in_flight = s.in_flight.saturating_sub(1);
            s.last_used = now;
        }
    }

    /// Closes sessions idle for 15 minutes or past the 1-hour ceiling (none with a call in
    /// flight). The next call of their thread transparently starts a fresh session.
    pub fn reap(&mut self, now: Instant) -> Vec<Effect> {
        let due: Vec<(String, CloseReason)> = self
            .by_thread
            .values()
            .filter(|s| s.in_flight == 0)
            .filter_map(|s| {
                if now.saturating_duration_since(s.created_at) >= HARD_CEILING {
                    Some((s.thread_id.clone(), CloseReason::Ceiling))
                } else if now.saturating_duration_since(s.last_used) >= IDLE_REAP {
                    Some((s.thread_id.clone(), CloseReason::Idle))
                } else {
                    None
                }
            })
            .collect();
        due.into_iter()
            .filter_map(|(t, why)| self.by_thread.remove(&t).map(|s| close(s, why)))
            .collect()
    }

    /// Closes a thread's session (the thread ended).
    pub fn end_thread(&mut self, thread_id: &str) -> Vec<Effect> {
        self.by_thread
            .remove(thread_id)
            .map(|s| vec![close(s, CloseReason::ThreadEnded)])
            .unwrap_or_default()
    }

    /// A task takes `profile` (a keyed hash) for its whole life, as `holder` (issue 21 item 5):
    /// reaps what is due, then refuses (`ContextBusy`) while another task pins it or a thread
    /// session holding it is active (a call in flight, or its last call ended less than
    /// [`ACTIVE_GRACE`] ago); an idle holder is closed ([`CloseReason::ProfileHandOver`], its
    /// profile persisted) — the effect comes with the grant, to be performed before the task's
    /// browser opens the profile. Pinning again by the same holder is a no-op. Past
    /// [`MAX_PINS`]: `TooManyPins`. On refusal nothing changes except reaping.
    pub fn pin(
        &mut self,
        profile: &str,
        holder: &str,
        now: Instant,
    ) -> (Result<(), SessionRefusal>, Vec<Effect>) {
        let mut effects = self.reap(now);
        if let Some(pin) = self.pins.get(profile) {
            let answer = if pin.holder == holder {
                Ok(())
            } else {
                Err(SessionRefusal::ContextBusy)
            };
            return (answer, effects);
        }
        if self.pins.len() >= MAX_PINS {
            return (Err(SessionRefusal::TooManyPins), effects);
        }
        let holders: Vec<(String, bool)> = self
            .by_thread
            .values()
            .filter(|s| s.profile.as_deref() == Some(profile))
            .map(|s| {
                (
                    s.thread_id.clone(),
                    s.in_flight > 0 || now.saturating_duration_since(s.last_used) < ACTIVE_GRACE,
                )
            })
            .collect();
        if holders.iter().any(|(_, active)| *active) {
            return (Err(SessionRefusal::ContextBusy), effects);
        }
        for (thread, _) in holders {
            if let Some(idle) = self.by_thread.remove(&thread) {
                effects.push(close(idle, CloseReason::ProfileHandOver));
            }
        }
        self.pins.insert(
            profile.to_string(),
            Pin {
                holder: holder.to_string(),
            },
        );
        (Ok(()), effects)
    }

    /// Ends `holder`'s pin of `profile` (the task ended and its browser is closed). Idempotent;
    /// only the holder unpins — anyone else changes nothing. Returns whether a pin ended.
    pub fn unpin(&mut self, profile: &str, holder: &str) -> bool {
        match self.pins.get(profile) {
            Some(pin) if pin.holder == holder => {
                self.pins.remove(profile);
                true
            }
            _ => false,
        }
    }

    /// How many live holders `profile` has: thread sessions holding it plus a task's pin. The
    /// table's invariant keeps it at most 1.
    pub fn holders_of(&self, profile: &str) -> usize {
        self.by_thread
            .values()
            .filter(|s| s.profile.as_deref() == Some(profile))
            .count()
            + usize::from(self.pins.contains_key(profile))
    }

    /// Number of pinned profiles.
    pub fn pin_count(&self) -> usize {
        self.pins.len()
    }

    /// The live session of a thread.
    #[cfg(test)]
    pub fn session_of(&self, thread_id: &str) -> Option<&BrowserSession> {
        self.by_thread.get(thread_id)
    }

    /// Number of live sessions.
    pub fn len(&self) -> usize {
        self.by_thread.len()
    }

    /// No live session (pins aside).
    pub fn is_empty(&self) -> bool {
        self.by_thread.is_empty()
    }

    /// Every live session's close effect (gateway shutdown). Pins stay: each task unpins
    /// when its browser is closed.
    pub fn drain(&mut self) -> Vec<Effect> {
        self.by_thread
            .drain()
            .map(|(_, s)| close(s, CloseReason::ThreadEnded))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: u64) -> Instant {
        Instant::from_origin(Duration::from_secs(secs))
    }

    fn req(thread: &str, mode: Option<SessionMode>, profile: bool) -> SessionRequest {
        SessionRequest {
            thread_id: thread.into(),
            organization: "org".into(),
            mode,
            profile: profile.then(|| "hash".to_string()),
            authenticated_allowed: true,
            strict: false,
        }
    }

    fn ids() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("s{n}")
        }
    }

    // R-PROF-1
    #[test]
    fn profile_keys_are_keyed_hashes() {
        let a = profile_key_hash(b"k1", "org", "p");
        assert_eq!(a, profile_key_hash(b"k1", "org", "p"));
        assert_ne!(a, profile_key_hash(b"k1", "org2", "p"));
        assert_ne!(
            profile_key_hash(b"k1", "or", "gp"),
            profile_key_hash(b"k1", "org", "p"),
            "no ambiguity"
        );
        assert!(!a.contains('p') || a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    // R-PROF-3: defaults and no silent downgrade.
    #[test]
    fn mode_defaults_and_never_downgrades() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let (g, _) = table.begin_call(&req("t1", None, true), &mut id, t(0));
        assert_eq!(g.unwrap().mode, SessionMode::Authenticated);
        let (g, _) = table.begin_call(&req("t2", None, false), &mut id, t(0));
        assert_eq!(g.unwrap().mode, SessionMode::Isolated);
        let mut denied = req("t3", Some(SessionMode::Authenticated), true);
        denied.authenticated_allowed = false;
        let (g, _) = table.begin_call(&denied, &mut id, t(0));
        assert_eq!(g, Err(SessionRefusal::AuthenticatedUnavailable));
        let (g, _) = table.begin_call(
            &req("t4", Some(SessionMode::Authenticated), false),
            &mut id,
            t(0),
        );
        assert_eq!(g, Err(SessionRefusal::AuthenticatedUnavailable));
        assert!(table.session_of("t3").is_none());
    }

    // R-PROF-3: omitted mode continues the live mode; switching closes the prior session.
    #[test]
    fn switching_modes_closes_the_prior_session() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let (g, _) = table.begin_call(&req("t", Some(SessionMode::Isolated), true), &mut id, t(0));
        let first = g.unwrap().session_id;
        table.end_call(&first, t(1));
        let (g, _) = table.begin_call(&req("t", None, true), &mut id, t(2));
        assert_eq!(
            g.as_ref().unwrap().session_id,
            first,
            "continues the live mode"
        );
        table.end_call(&first, t(3));
        let (g, _) = table.begin_call(
            &req("t", Some(SessionMode::Authenticated), true),
            &mut id,
            t(4),
        );
        let g = g.unwrap();
        assert!(g.created);
        assert_eq!(
            g.effects,
            vec![Effect::Close {
                session_id: first,
                thread_id: "t".into(),
                persist_profile: false,
                reason: CloseReason::ModeSwitch
            }]
        );
    }

    // R-PROF-2
    #[test]
    fn idle_holder_is_closed_and_persisted_before_a_new_thread_inherits() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let (g, _) = table.begin_call(&req("t1", None, true), &mut id, t(0));
        let s1 = g.unwrap().session_id;
        table.end_call(&s1, t(10));
        // Active (within the grace period): busy, non-retryable, isolated available.
        let (g, _) = table.begin_call(&req("t2", None, true), &mut id, t(30));
        assert_eq!(g, Err(SessionRefusal::ContextBusy));
        let (g, _) = table.begin_call(
            &req("t2", Some(SessionMode::Isolated), true),
            &mut id,
            t(31),
        );
        assert_eq!(
            g.unwrap().mode,
            SessionMode::Isolated,
            "isolated is available"
        );
        let s_iso = table.session_of("t2").unwrap().id.clone();
        table.end_call(&s_iso, t(32));
        // Idle: closed with persistence, the new session inherits.
        let (g, _) = table.begin_call(
            &req("t2", Some(SessionMode::Authenticated), true),
            &mut id,
            t(100),
        );
        let g = g.unwrap();
        assert_eq!(g.effects.len(), 2);
        assert!(g.effects.contains(&Effect::Close {
            session_id: s1,
            thread_id: "t1".into(),
            persist_profile: true,
            reason: CloseReason::ProfileHandOver
        }));
        assert!(table.session_of("t1").is_none());
    }

    #[test]
    fn a_holder_with_a_call_in_flight_is_busy_however_old() {
        let mut table = SessionTable::default();
        let mut id = ids();
        table
            .begin_call(&req("t1", None, true), &mut id, t(0))
            .0
            .unwrap();
        let (g, _) = table.begin_call(&req("t2", None, true), &mut id, t(600));
        assert_eq!(g, Err(SessionRefusal::ContextBusy));
    }

    // R-PROF-4
    #[test]
    fn reaping_after_15_minutes_idle_and_at_the_hard_ceiling() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let s = table
            .begin_call(&req("idle", None, false), &mut id, t(0))
            .0
            .unwrap()
            .session_id;
        table.end_call(&s, t(0));
        assert!(table.reap(t(899)).is_empty());
        assert_eq!(table.reap(t(900)).len(), 1);
        // The next call transparently starts a fresh one.
        let g = table
            .begin_call(&req("idle", None, false), &mut id, t(901))
            .0
            .unwrap();
        assert!(g.created);
        // Busy sessions hit the ceiling once their call ends.
        let s = g.session_id;
        for k in 0..70 {
            table.end_call(&s, t(901 + k * 50));
            table
                .begin_call(&req("idle", None, false), &mut id, t(901 + k * 50 + 1))
                .0
                .unwrap();
        }
        assert!(table.reap(t(901 + 3600)).is_empty(), "call in flight");
        table.end_call(&s, t(901 + 3601));
        let effects = table.reap(t(901 + 3601));
        assert!(matches!(
            effects.as_slice(),
            [Effect::Close {
                reason: CloseReason::Ceiling,
                ..
            }]
        ));
    }

    // Issue 20 item 2, seed 001 "Strict data handling": a strict call never reuses the
    // thread's standard session — it replaces it (closing it) — and a standard call never
    // reuses a strict one; a strict session is isolated and never holds the profile, and
    // authenticated mode is refused in strict (no silent downgrade).
    #[test]
    fn strict_calls_replace_standard_sessions_and_are_always_isolated() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let standard = table
            .begin_call(&req("t", None, true), &mut id, t(0))
            .0
            .unwrap();
        assert_eq!(standard.mode, SessionMode::Authenticated);
        table.end_call(&standard.session_id, t(1));
        let mut strict = req("t", None, true);
        strict.strict = true;
        let (g, effects) = table.begin_call(&strict, &mut id, t(2));
        let g = g.unwrap();
        assert!(g.created && g.strict);
        assert_ne!(g.session_id, standard.session_id);
        assert_eq!(
            (g.mode, g.profile.as_deref()),
            (SessionMode::Isolated, None)
        );
        assert_eq!(
            effects,
            vec![Effect::Close {
                session_id: standard.session_id.clone(),
                thread_id: "t".into(),
                persist_profile: true,
                reason: CloseReason::DataHandlingSwitch,
            }]
        );
        table.end_call(&g.session_id, t(3));
        // The next strict call continues the strict session.
        let again = table.begin_call(&strict, &mut id, t(4)).0.unwrap();
        assert_eq!(
            (again.session_id.as_str(), again.created),
            (g.session_id.as_str(), false)
        );
        table.end_call(&again.session_id, t(5));
        // Authenticated in strict: refused, the strict session kept.
        let mut auth = strict.clone();
        auth.mode = Some(SessionMode::Authenticated);
        let (refused, effects) = table.begin_call(&auth, &mut id, t(6));
        assert_eq!(refused, Err(SessionRefusal::AuthenticatedUnavailable));
        assert!(effects.is_empty());
        assert_eq!(table.session_of("t").unwrap().id, g.session_id);
        // A standard call replaces the strict session in turn.
        let (back, effects) = table.begin_call(&req("t", None, true), &mut id, t(7));
        let back = back.unwrap();
        assert!(back.created && !back.strict);
        assert_eq!(back.mode, SessionMode::Authenticated);
        assert!(matches!(
            effects.as_slice(),
            [Effect::Close { session_id, persist_profile: false, reason: CloseReason::DataHandlingSwitch, .. }]
                if *session_id == g.session_id
        ));
    }

    // Issue 21 item 5: a task's pin meets thread sessions on the same profile — refused while
    // the holder is active (a call in flight or within the grace), an idle holder closed with
    // its profile persisted before the task takes it.
    #[test]
    fn a_pin_is_refused_by_an_active_holder_and_takes_an_idle_ones_profile() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let s1 = table
            .begin_call(&req("t1", None, true), &mut id, t(0))
            .0
            .unwrap()
            .session_id;
        let (busy, effects) = table.pin("hash", "task-1", t(500));
        assert_eq!(busy, Err(SessionRefusal::ContextBusy), "call in flight");
        assert!(effects.is_empty());
        table.end_call(&s1, t(510));
        let (busy, _) = table.pin("hash", "task-1", t(569));
        assert_eq!(busy, Err(SessionRefusal::ContextBusy), "within the grace");
        assert_eq!(table.pin_count(), 0, "a refusal changes nothing");
        let (ok, effects) = table.pin("hash", "task-1", t(570));
        assert_eq!(ok, Ok(()));
        assert_eq!(
            effects,
            vec![Effect::Close {
                session_id: s1,
                thread_id: "t1".into(),
                persist_profile: true,
                reason: CloseReason::ProfileHandOver,
            }]
        );
        assert!(table.session_of("t1").is_none());
        assert_eq!(table.holders_of("hash"), 1);
    }

    // Issue 21 item 5: while a task pins a profile, authenticated calls needing it are busy —
    // however long the task has held it — isolated mode stays available, another task is
    // busy, and only the holder unpins (idempotently).
    #[test]
    fn while_pinned_authenticated_calls_are_busy_and_only_the_holder_unpins() {
        let mut table = SessionTable::default();
        let mut id = ids();
        assert_eq!(table.pin("hash", "task-1", t(0)).0, Ok(()));
        let (again, effects) = table.pin("hash", "task-1", t(1));
        assert_eq!(
            (again, effects.len()),
            (Ok(()), 0),
            "the holder again: a no-op"
        );
        assert_eq!(
            table.pin("hash", "task-2", t(2)).0,
            Err(SessionRefusal::ContextBusy)
        );
        let (g, _) = table.begin_call(&req("t2", None, true), &mut id, t(10_000));
        assert_eq!(g, Err(SessionRefusal::ContextBusy), "never reaped");
        let iso = table
            .begin_call(
                &req("t2", Some(SessionMode::Isolated), true),
                &mut id,
                t(10_001),
            )
            .0
            .unwrap();
        assert_eq!((iso.mode, iso.profile), (SessionMode::Isolated, None));
        table.end_call(&iso.session_id, t(10_002));
        // Switching the isolated session to authenticated is refused and keeps it.
        let (g, effects) = table.begin_call(
            &req("t2", Some(SessionMode::Authenticated), true),
            &mut id,
            t(10_003),
        );
        assert_eq!((g, effects.len()), (Err(SessionRefusal::ContextBusy), 0));
        assert_eq!(table.session_of("t2").unwrap().id, iso.session_id);
        // Another profile is not affected.
        let mut other = req("t3", None, true);
        other.profile = Some("other".into());
        assert!(table.begin_call(&other, &mut id, t(10_004)).0.is_ok());
        // Only the holder unpins; twice is a no-op.
        assert!(!table.unpin("hash", "task-2"));
        assert!(!table.unpin("other", "task-1"));
        assert_eq!(table.holders_of("hash"), 1);
        assert!(table.unpin("hash", "task-1"));
        assert!(!table.unpin("hash", "task-1"));
        let g = table
            .begin_call(
                &req("t2", Some(SessionMode::Authenticated), true),
                &mut id,
                t(10_005),
            )
            .0
            .unwrap();
        assert_eq!(g.profile.as_deref(), Some("hash"));
        assert_eq!(
            table.pin("hash", "task-2", t(10_006)).0,
            Err(SessionRefusal::ContextBusy)
        );
    }

    // Issue 21 item 5: the pin table is bounded; past the cap a pin is refused and no pin is
    // evicted.
    #[test]
    fn pins_are_bounded_and_never_evicted() {
        let mut table = SessionTable::default();
        for k in 0..MAX_PINS {
            assert_eq!(
                table.pin(&format!("p{k}"), &format!("task-{k}"), t(0)).0,
                Ok(())
            );
        }
        assert_eq!(
            table.pin("one-more", "task-x", t(1)).0,
            Err(SessionRefusal::TooManyPins)
        );
        assert_eq!(table.pin_count(), MAX_PINS);
        assert_eq!(table.pin("p0", "task-0", t(1)).0, Ok(()), "held pins stay");
        assert!(table.unpin("p7", "task-7"));
        assert_eq!(table.pin("one-more", "task-x", t(2)).0, Ok(()));
    }

    // A pin reaps what is due first (an over-age holder closes as reaped, not handed over).
    #[test]
    fn a_pin_reaps_first() {
        let mut table = SessionTable::default();
        let mut id = ids();
        let s = table
            .begin_call(&req("t1", None, true), &mut id, t(0))
            .0
            .unwrap()
            .session_id;
        table.end_call(&s, t(0));
        let (ok, effects) = table.pin("hash", "task-1", t(900));
        assert_eq!(ok, Ok(()));
        assert!(matches!(
            effects.as_slice(),
            [Effect::Close {
                reason: CloseReason::Idle,
                persist_profile: true,
                ..
            }]
        ));
    }
}

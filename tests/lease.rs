//! The lease manager through the gateway façade, with a manual clock (SPEC §4: R-LEASE-1..7,
//! R-PROF-1..4, and the clock policy of `jevgate::lease`).

mod support;

use jevgate::clock::{Clock, ManualClock};
use jevgate::lease::{
    BrowserCall, CloseReason, ControlCaller, Credential, Effect, SessionHooks, SessionMode,
};
use jevgate::{Config, Gateway, GatewayOptions};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

fn gateway(dir: &std::path::Path, clock: &ManualClock) -> Gateway {
    Gateway::open(GatewayOptions::new(dir, Config::default()).with_clock(Arc::new(clock.clone())))
        .unwrap()
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn owner() -> ControlCaller {
    ControlCaller::owner("person")
}

#[test]
fn r_lease_1_acquire_renew_and_idle_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    let start = clock.wall_millis();
    let g = l.acquire("dev", "a").unwrap();
    assert!(g.acquired);
    assert_eq!(g.expires_at, start + 120_000);
    clock.advance(secs(100));
    let g = l.acquire("dev", "a").unwrap();
    assert!(!g.acquired);
    assert_eq!(g.expires_at, start + 220_000);
    clock.advance(secs(119));
    assert_eq!(
        l.acquire("dev", "b").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    clock.advance(secs(1));
    assert!(
        l.acquire("dev", "b").unwrap().acquired,
        "free after 120 s without a renewing call"
    );
}

#[test]
fn r_lease_2_elsewhere_is_409_and_never_names_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    gw.leases()
        .acquire("dev", "holder-conversation-42")
        .unwrap();
    let err = gw.leases().acquire("dev", "other").unwrap_err();
    assert_eq!(err.http_status(), 409);
    assert!(!err.to_string().contains("holder-conversation-42"));
    assert!(!format!("{err:?}").contains("holder-conversation-42"));
}

#[test]
fn r_lease_3_take_back_cancels_in_flight_and_revokes_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.set_device_owner("dev", "person").unwrap();
    l.acquire("dev", "a").unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&cancelled);
    let guard = l.begin_command("dev", "a", move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    assert!(l.take_back("dev", &owner()).unwrap());
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        1,
        "the in-flight command was cancelled"
    );
    drop(guard);
    assert!(
        !l.take_back("dev", &owner()).unwrap(),
        "nothing left to take back"
    );
    assert_eq!(cancelled.load(Ordering::SeqCst), 1, "cancelled once");
    let err = l.acquire("dev", "a").unwrap_err();
    assert_eq!(
        (err.code(), err.http_status()),
        ("DEVICE_CONTROL_REVOKED", 409)
    );
    assert!(
        l.acquire("dev", "a").unwrap().acquired,
        "then behaves normally"
    );
}

#[test]
fn r_lease_4_revoked_window_is_reported_held_and_blocks_others() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.set_device_owner("dev", "person").unwrap();
    l.acquire("dev", "a").unwrap();
    clock.advance(secs(10));
    let takeover = clock.wall_millis();
    l.take_back("dev", &owner()).unwrap();
    let s = l.status("dev", &owner()).unwrap();
    assert!(s.held, "never held:false during the window");
    assert!(s.revoked);
    assert_eq!(s.held_by_root_session, None);
    assert_eq!(s.expires_at, Some(takeover + 120_000));
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"held": true, "heldByRootSession": null, "expiresAt": takeover + 120_000, "revoked": true})
    );
    clock.advance(secs(60));
    assert_eq!(
        l.acquire("dev", "b").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    clock.advance(secs(60));
    assert!(
        l.acquire("dev", "b").unwrap().acquired,
        "120 s after the takeover the window closes"
    );
}

#[test]
fn r_lease_5_status_reveals_only_the_callers_own_session() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.set_device_owner("dev", "person").unwrap();
    l.set_device_owner("never-used", "person").unwrap();
    l.acquire("dev", "a").unwrap();
    let mut as_a = owner();
    as_a.root_session = Some("a".into());
    assert_eq!(
        l.status("dev", &as_a)
            .unwrap()
            .held_by_root_session
            .as_deref(),
        Some("a")
    );
    let mut as_b = owner();
    as_b.root_session = Some("b".into());
    let s = l.status("dev", &as_b).unwrap();
    assert!(s.held && s.held_by_root_session.is_none() && !s.revoked);
    let free = l.status("never-used", &owner()).unwrap();
    assert_eq!(
        serde_json::to_value(&free).unwrap(),
        serde_json::json!({"held": false, "heldByRootSession": null, "expiresAt": null, "revoked": false})
    );
}

#[test]
fn r_lease_6_session_end_releases_everything_without_cancelling() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.acquire("d1", "a").unwrap();
    l.acquire("d2", "a").unwrap();
    l.acquire("d3", "b").unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&cancelled);
    let _guard = l.begin_command("d1", "a", move || {
        c.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(l.release_session("a").unwrap(), 2);
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        0,
        "no cancellation on session end"
    );
    assert!(l.acquire("d1", "c").unwrap().acquired);
    assert!(l.acquire("d2", "c").unwrap().acquired);
    assert_eq!(
        l.acquire("d3", "c").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
}

// R-LEASE-6, issue 25 item 1: a computer task lets go of its one desktop lease only — the
// conversation's other devices stay its own; releasing what it does not hold changes nothing.
#[test]
fn r_lease_6_one_device_is_released_alone() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.acquire("d1", "a").unwrap();
    l.acquire("d2", "a").unwrap();
    assert!(!l.release("d1", "b").unwrap(), "not b's to release");
    assert!(l.release("d1", "a").unwrap());
    assert!(!l.release("d1", "a").unwrap(), "already free");
    assert_eq!(l.holder("d1"), None);
    assert_eq!(l.holder("d2").as_deref(), Some("a"));
    assert!(l.acquire("d1", "c").unwrap().acquired);
    assert_eq!(
        l.acquire("d2", "c").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
}

#[test]
fn r_lease_7_control_routes_are_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.set_device_owner("dev", "person").unwrap();
    l.acquire("dev", "a").unwrap();
    let stranger = ControlCaller::owner("stranger");
    let err = l.take_back("dev", &stranger).unwrap_err();
    assert_eq!((err.code(), err.http_status()), ("ACCESS_DENIED", 403));
    assert_eq!(
        l.status("dev", &stranger).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    let delegated = ControlCaller {
        principal: "person".into(),
        credential: Credential::Delegated,
        root_session: None,
    };
    assert_eq!(
        l.take_back("dev", &delegated).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    assert_eq!(
        l.holder("dev").as_deref(),
        Some("a"),
        "refused take-backs changed nothing"
    );
    assert!(l.take_back("dev", &owner()).unwrap());
}

// R-LEASE-7: owners are persisted. After a restart (close, reopen on the same data directory)
// a stranger is still refused and the holder keeps the device; the owner still takes it back.
#[test]
fn r_lease_7_owners_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    {
        let gw = gateway(dir.path(), &clock);
        gw.leases().set_device_owner("laptop", "person").unwrap();
        gw.leases().acquire("laptop", "conversation-1").unwrap();
        assert_eq!(
            gw.leases()
                .take_back("laptop", &ControlCaller::owner("mallory"))
                .unwrap_err()
                .code(),
            "ACCESS_DENIED"
        );
        gw.close();
    }
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    let mallory = ControlCaller::owner("mallory");
    let err = l.take_back("laptop", &mallory).unwrap_err();
    assert_eq!((err.code(), err.http_status()), ("ACCESS_DENIED", 403));
    assert_eq!(
        l.status("laptop", &mallory).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    assert_eq!(
        l.holder("laptop").as_deref(),
        Some("conversation-1"),
        "the refused take-back dispossessed nobody"
    );
    assert!(
        l.take_back("laptop", &owner()).unwrap(),
        "the owner still can"
    );
    assert!(l.status("laptop", &owner()).unwrap().revoked);
    // A later owner change is persisted too (last write wins across a restart).
    l.set_device_owner("laptop", "heir").unwrap();
    gw.close();
    let gw = gateway(dir.path(), &clock);
    assert_eq!(
        gw.leases().status("laptop", &owner()).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    assert!(gw
        .leases()
        .status("laptop", &ControlCaller::owner("heir"))
        .is_ok());
}

// R-LEASE-7: a device with no recorded owner is refused to everyone on every control route —
// an unknown owner is never a pass — and the refusal changes nothing.
#[test]
fn r_lease_7_a_device_without_an_owner_is_refused_to_everyone() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.acquire("ownerless", "conversation-1").unwrap();
    for who in ["person", "mallory", ""] {
        let caller = ControlCaller::owner(who);
        assert_eq!(
            l.take_back("ownerless", &caller).unwrap_err().code(),
            "ACCESS_DENIED",
            "{who:?}"
        );
        assert_eq!(
            l.status("ownerless", &caller).unwrap_err().code(),
            "ACCESS_DENIED",
            "{who:?}"
        );
    }
    assert_eq!(
        l.status("never-seen", &owner()).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    assert_eq!(l.holder("ownerless").as_deref(), Some("conversation-1"));
    assert!(
        !l.acquire("ownerless", "conversation-1").unwrap().acquired,
        "the holder was never told it lost the device"
    );
}

// R-LEASE-7 through pairing: a paired device's owner is known after a restart, and no other
// account can take it back.
#[test]
fn r_lease_7_paired_device_owner_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let device = {
        let gw = gateway(dir.path(), &clock);
        let p = support::gateway::pair(&gw, "alice", "alice-laptop");
        gw.leases().acquire(&p.device, "conversation-1").unwrap();
        gw.close();
        p.device
    };
    let gw = gateway(dir.path(), &clock);
    assert_eq!(
        gw.leases()
            .take_back(&device, &ControlCaller::owner("mallory"))
            .unwrap_err()
            .code(),
        "ACCESS_DENIED"
    );
    assert!(gw
        .leases()
        .take_back(&device, &ControlCaller::owner("alice"))
        .unwrap());
}

#[test]
fn hostile_ids_are_argument_errors() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    for (device, session) in [("", "a"), ("d", ""), ("d\n", "a"), (&*"x".repeat(300), "a")] {
        assert_eq!(
            l.acquire(device, session).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }
    l.acquire("db'; DROP TABLE control_leases;--", "a").unwrap();
    gw.close();
    let gw = gateway(dir.path(), &clock);
    assert_eq!(
        gw.leases()
            .holder("db'; DROP TABLE control_leases;--")
            .as_deref(),
        Some("a")
    );
}

// Clock policy: a restart re-grants held leases a full TTL and re-opens owed windows.
#[test]
fn clock_policy_restart_never_frees_a_lease_early_and_keeps_owed_notices() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    {
        let gw = gateway(dir.path(), &clock);
        gw.leases().set_device_owner("taken", "person").unwrap();
        gw.leases().acquire("held", "a").unwrap();
        gw.leases().acquire("taken", "x").unwrap();
        gw.leases().take_back("taken", &owner()).unwrap();
        gw.leases().acquire("released", "r").unwrap();
        gw.leases().release_session("r").unwrap();
        gw.close();
    }
    // The host restarts much later (a fresh process: monotonic time starts over).
    clock.advance(secs(100));
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    assert_eq!(
        l.acquire("held", "b").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    assert!(
        !l.acquire("held", "a").unwrap().acquired,
        "the holder keeps it"
    );
    assert_eq!(
        l.acquire("taken", "y").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE",
        "window re-opened"
    );
    assert_eq!(
        l.acquire("taken", "x").unwrap_err().code(),
        "DEVICE_CONTROL_REVOKED",
        "still told once"
    );
    assert!(
        l.acquire("released", "s").unwrap().acquired,
        "released stays released"
    );
    clock.advance(secs(120));
    assert!(
        l.acquire("held", "b").unwrap().acquired,
        "a full TTL after the restart, then free"
    );
}

// Clock policy: suspend. Monotonic time does not advance while the machine sleeps; the wall
// clock jumps. The lease keeps its remaining time; only the displayed expiresAt moves.
#[test]
fn clock_policy_suspend_does_not_expire_a_lease() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.set_device_owner("dev", "person").unwrap();
    l.acquire("dev", "a").unwrap();
    clock.advance(secs(60));
    let resumed_wall = clock.wall() + Duration::from_secs(8 * 3600);
    clock.set_wall(resumed_wall);
    assert_eq!(
        l.acquire("dev", "b").unwrap_err().code(),
        "DEVICE_CONTROL_ELSEWHERE"
    );
    let s = l.status("dev", &owner()).unwrap();
    let resumed_ms = resumed_wall.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    assert_eq!(
        s.expires_at,
        Some(resumed_ms + 60_000),
        "60 s left, shown in the new wall time"
    );
}

#[derive(Default)]
struct Recorder(Mutex<Vec<Effect>>);

impl SessionHooks for Recorder {
    fn apply(&self, effect: &Effect) {
        self.0.lock().push(effect.clone());
    }
}

fn call(thread: &str, mode: Option<SessionMode>, profile: Option<&str>) -> BrowserCall {
    BrowserCall {
        thread_id: thread.into(),
        organization: "acme".into(),
        mode,
        profile_key: profile.map(str::to_string),
        authenticated_allowed: true,
    }
}

// R-PROF-1: the profile a session holds is named by a hash keyed with the gateway's own secret.
// Two gateways (two data directories, two secrets) give the same (organization, profileKey)
// different hashes, so a hash from one gateway says nothing about another's profiles; the same
// gateway reopened gives the same hash (its secret is kept in the store), and the hash is
// exactly HMAC(secret of that store) — never the key itself.
#[test]
fn r_prof_1_different_gateway_secrets_give_different_profile_hashes() {
    let clock = ManualClock::new();
    let hash_in = |dir: &std::path::Path| {
        let gw = gateway(dir, &clock);
        let guard = gw
            .leases()
            .begin_browser_call(&call("t1", None, Some("work")))
            .unwrap();
        let hash = guard
            .profile
            .clone()
            .expect("an authenticated session names its profile");
        drop(guard);
        gw.close();
        hash
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let hash_a = hash_in(a.path());
    let hash_b = hash_in(b.path());
    assert_ne!(
        hash_a, hash_b,
        "different gateway secrets, different hashes"
    );
    assert_eq!(hash_in(a.path()), hash_a, "the secret survives a reopen");
    for (dir, hash) in [(a.path(), &hash_a), (b.path(), &hash_b)] {
        // The secret is no API (not even `unstable`): read it from the store file, as only a
        // process with the data directory's permissions can.
        let secret = stored_secret(dir);
        assert_eq!(
            *hash,
            jevgate::unstable::profile_key_hash(&secret, "acme", "work")
        );
        assert!(!hash.contains("work"));
    }
    assert_ne!(
        hash_a,
        jevgate::unstable::profile_key_hash(&[], "acme", "work"),
        "not an unkeyed hash"
    );
}

/// The gateway secret kept in the store of `dir` (R-STO), read with SQLite directly.
fn stored_secret(dir: &std::path::Path) -> Vec<u8> {
    let conn = rusqlite::Connection::open_with_flags(
        dir.join("jevgate.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row(
        "SELECT value FROM meta WHERE key = 'gateway_secret'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn r_prof_1_to_4_through_the_facade_with_hooks_and_reaping() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    let hooks = Arc::new(Recorder::default());
    l.set_session_hooks(hooks.clone());
    // Lazy creation, authenticated by default with a profile.
    let first = l
        .begin_browser_call(&call("t1", None, Some("work")))
        .unwrap();
    assert!(first.created);
    assert_eq!(first.mode, SessionMode::Authenticated);
    let s1 = first.session_id.clone();
    // Another thread while the holder is mid-call: busy, 409, isolated available.
    let err = l
        .begin_browser_call(&call("t2", None, Some("work")))
        .err()
        .unwrap();
    assert_eq!(
        (err.code(), err.http_status()),
        ("BROWSER_CONTEXT_BUSY", 409)
    );
    assert!(err.to_string().contains("isolatedAvailable: true"));
    assert_eq!(
        err.isolated_available(),
        Some(true),
        "a typed field, not only words in the message"
    );
    assert!(matches!(
        err,
        jevgate::Error::BrowserContextBusy {
            isolated_available: true
        }
    ));
    drop(first);
    // Without permission, authenticated is refused, never downgraded.
    let mut denied = call("t3", Some(SessionMode::Authenticated), Some("work"));
    denied.authenticated_allowed = false;
    assert_eq!(
        l.begin_browser_call(&denied).err().unwrap().code(),
        "BROWSER_AUTHENTICATED_UNAVAILABLE"
    );
    // The holder goes idle: a new thread takes the profile after the holder is closed and persisted.
    clock.advance(secs(120));
    let second = l
        .begin_browser_call(&call("t2", None, Some("work")))
        .unwrap();
    assert!(second.created);
    assert_eq!(
        hooks.0.lock().as_slice(),
        [Effect::Close {
            session_id: s1,
            thread_id: "t1".into(),
            persist_profile: true,
            reason: CloseReason::ProfileHandOver
        }]
    );
    drop(second);
    // Reaping after 15 minutes idle; the next call starts a fresh session transparently.
    clock.advance(secs(15 * 60));
    assert_eq!(l.reap(), 1);
    assert_eq!(l.session_count(), 0);
    let fresh = l
        .begin_browser_call(&call("t2", None, Some("work")))
        .unwrap();
    assert!(fresh.created);
}

#[test]
fn closing_the_gateway_closes_browser_sessions_and_refuses_lease_calls() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let hooks = Arc::new(Recorder::default());
    gw.leases().set_session_hooks(hooks.clone());
    drop(
        gw.leases()
            .begin_browser_call(&call("t", None, None))
            .unwrap(),
    );
    let leases = gw.leases().clone();
    gw.close();
    assert_eq!(hooks.0.lock().len(), 1);
    assert_eq!(
        leases.acquire("d", "a").unwrap_err().code(),
        "GATEWAY_CLOSED"
    );
}

// Issue 23 item 2 (R-LEASE-1, -3): on SQLite a grant's fencing token is the device row's
// version: the same through the renewals of one tenure, strictly greater for every later
// tenure, and kept across a restart.
#[test]
fn fencing_tokens_name_one_tenure_each_and_only_grow() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let l = gw.leases();
    l.set_device_owner("dev", "person").unwrap();
    let a = l.acquire("dev", "a").unwrap();
    assert!(a.fencing_token > 0);
    assert_eq!(l.renew("dev", "a").unwrap().fencing_token, a.fencing_token);
    assert_eq!(
        l.acquire("dev", "a").unwrap().fencing_token,
        a.fencing_token
    );
    assert!(l.take_back("dev", &owner()).unwrap());
    assert_eq!(
        l.acquire("dev", "a").unwrap_err().code(),
        "DEVICE_CONTROL_REVOKED"
    );
    let a2 = l.acquire("dev", "a").unwrap();
    assert!(a2.acquired && a2.fencing_token > a.fencing_token);
    l.release_session("a").unwrap();
    let b = l.acquire("dev", "b").unwrap();
    assert!(b.fencing_token > a2.fencing_token);
    clock.advance(secs(120));
    let c = l.acquire("dev", "c").unwrap();
    assert!(
        c.acquired && c.fencing_token > b.fencing_token,
        "expiry ends a tenure"
    );
    let json = serde_json::to_value(c).unwrap();
    assert_eq!(json["fencingToken"], c.fencing_token);
    gw.close();
    let gw = gateway(dir.path(), &clock);
    let again = gw.leases().acquire("dev", "c").unwrap();
    assert!(!again.acquired, "restored across the restart");
    assert_eq!(again.fencing_token, c.fencing_token);
    assert!(gw.leases().acquire("other", "c").unwrap().fencing_token > 0);
}

// Issue 23 item 1: the store is chosen when the gateway opens and cannot change by reload.
#[test]
fn the_store_cannot_change_by_reload() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let err = gw
        .reload_json(r#"{"gateway":{"store":{"kind":"postgres","urlEnv":"FLEET_PG_URL"}}}"#)
        .unwrap_err();
    assert_eq!(err.code(), "JEV_INVALID_CONFIGURATION");
    assert_eq!(err.path(), Some("gateway.store"));
    assert_eq!(gw.generation(), 1);
    gw.reload_json(r#"{"gateway":{"store":{"kind":"sqlite"}}}"#)
        .unwrap();
}

// Issue 23 item 1: a build without the cargo feature `postgres` refuses `kind: "postgres"` with
// a clear error, before anything is opened.
#[cfg(not(feature = "postgres"))]
#[test]
fn a_build_without_the_postgres_feature_refuses_the_postgres_store() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::from_json_str(
        r#"{"gateway":{"store":{"kind":"postgres","urlEnv":"FLEET_PG_URL"}}}"#,
    )
    .unwrap();
    let err = Gateway::open(GatewayOptions::new(dir.path(), config)).unwrap_err();
    assert_eq!(err.code(), "JEV_INVALID_CONFIGURATION");
    assert_eq!(err.path(), Some("gateway.store.kind"));
    assert!(
        err.to_string().contains("cargo feature `postgres`"),
        "{err}"
    );
}

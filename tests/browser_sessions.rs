//! Managed local browser sessions (R-PROF-2..4 with SPEC §6 (b)) against real headless
//! Chromiums: one browser per session, started on first use and reused by the thread, closed
//! (every process reaped) when the lease manager closes the session — idle reap, profile
//! hand-over, gateway close — and an authenticated profile that survives the hand-over.
//! Time is a manual clock; nothing sleeps to make time pass.

mod support;

use jevgate::browser::{BrowserBackend, JavascriptArgs, LaunchOptions};
use jevgate::clock::ManualClock;
use jevgate::lease::{BrowserCall, BrowserCallGuard, SessionMode};
use jevgate::{Config, Gateway, GatewayOptions};
use std::sync::Arc;
use std::time::Duration;
use support::Server;

fn gateway(dir: &std::path::Path, clock: &ManualClock) -> Gateway {
    let gw = Gateway::open(
        GatewayOptions::new(dir, Config::default()).with_clock(Arc::new(clock.clone())),
    )
    .unwrap();
    gw.enable_local_browsers(LaunchOptions::default()).unwrap();
    gw
}

fn call(gw: &Gateway, thread: &str, profile: Option<&str>) -> BrowserCallGuard {
    gw.leases()
        .begin_browser_call(&BrowserCall {
            thread_id: thread.into(),
            organization: "acme".into(),
            mode: None,
            profile_key: profile.map(Into::into),
            authenticated_allowed: true,
        })
        .unwrap()
}

fn js(browser: &dyn BrowserBackend, id: &str, code: &str) -> String {
    let r = browser
        .javascript(JavascriptArgs {
            operation_id: id.into(),
            code: code.into(),
        })
        .unwrap();
    jevgate::untrusted::unwrap_text(&r.value)
        .unwrap()
        .to_string()
}

fn gone(pid: u32) {
    let left = support::wait_group_gone(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "Chromium processes left: {left:?}");
}

// R-PROF-4: lazily created, reused by the thread, reaped after 15 idle minutes; the next call
// transparently starts a fresh one.
#[test]
fn r_prof_4_a_session_browser_starts_lazily_is_reused_and_is_reaped_when_idle() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let first = call(&gw, "thread-1", None);
    assert_eq!(first.mode, SessionMode::Isolated);
    let browser = gw.session_browser(&first).unwrap();
    let pid = browser.pid().unwrap();
    support::track_pid(pid);
    browser.navigate(&server.url("/p/buttons")).unwrap();
    let again = gw.session_browser(&first).unwrap();
    assert_eq!(again.pid(), Some(pid), "one browser per session");
    drop(first);
    let second = call(&gw, "thread-1", None);
    assert_eq!(gw.session_browser(&second).unwrap().pid(), Some(pid));
    drop(second);

    clock.advance(Duration::from_secs(15 * 60));
    assert_eq!(gw.leases().reap(), 1);
    gone(pid);
    assert!(!browser.is_usable());
    let fresh = call(&gw, "thread-1", None);
    assert!(fresh.created);
    let next = gw.session_browser(&fresh).unwrap();
    let next_pid = next.pid().unwrap();
    support::track_pid(next_pid);
    assert_ne!(next_pid, pid);
    drop(fresh);
    gw.close();
    gone(next_pid);
}

// R-PROF-2/3: an authenticated profile is persisted when its idle holder is closed and
// inherited by the next thread; isolated sessions never see it.
#[test]
fn r_prof_2_the_profile_survives_a_hand_over_and_isolated_sessions_do_not_see_it() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = gateway(dir.path(), &clock);
    let a = call(&gw, "thread-a", Some("work-profile"));
    assert_eq!(a.mode, SessionMode::Authenticated);
    let hash = a.profile.clone().unwrap();
    assert_eq!(hash.len(), 64);
    let browser_a = gw.session_browser(&a).unwrap();
    let pid_a = browser_a.pid().unwrap();
    support::track_pid(pid_a);
    browser_a.navigate(&server.url("/p/buttons")).unwrap();
    js(
        &browser_a,
        "set-cookie",
        "document.cookie = 'jevk=kept; max-age=3600; path=/'; document.cookie",
    );
    // The profile directory is named by the keyed hash, never the key.
    let profiles: Vec<String> = std::fs::read_dir(dir.path().join("profiles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(profiles, vec![hash.clone()]);
    drop(a);

    // Another thread meanwhile gets an isolated session without the cookie.
    let iso = gw
        .leases()
        .begin_browser_call(&BrowserCall {
            thread_id: "thread-c".into(),
            organization: "acme".into(),
            mode: Some(SessionMode::Isolated),
            profile_key: Some("work-profile".into()),
            authenticated_allowed: true,
        })
        .unwrap();
    let browser_c = gw.session_browser(&iso).unwrap();
    support::track_pid(browser_c.pid().unwrap());
    browser_c.navigate(&server.url("/p/buttons")).unwrap();
    assert!(!js(&browser_c, "read-iso", "document.cookie").contains("jevk"));
    drop(iso);

    // Thread B needs the profile while A is active: busy. After A's grace, A is closed first
    // (persisting the profile) and B inherits it.
    let busy = gw.leases().begin_browser_call(&BrowserCall {
        thread_id: "thread-b".into(),
        organization: "acme".into(),
        mode: None,
        profile_key: Some("work-profile".into()),
        authenticated_allowed: true,
    });
    assert_eq!(busy.err().map(|e| e.code()), Some("BROWSER_CONTEXT_BUSY"));
    clock.advance(Duration::from_secs(61));
    let b = call(&gw, "thread-b", Some("work-profile"));
    gone(pid_a);
    let browser_b = gw.session_browser(&b).unwrap();
    let pid_b = browser_b.pid().unwrap();
    support::track_pid(pid_b);
    browser_b.navigate(&server.url("/p/buttons")).unwrap();
    let cookies = js(&browser_b, "read-b", "document.cookie");
    assert!(cookies.contains("jevk=kept"), "{cookies}");
    drop(b);

    // Closing the gateway closes every session's browser.
    gw.close();
    gone(pid_b);
}

#[test]
fn without_local_browsers_a_session_has_no_browser() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir.path(), Config::default())).unwrap();
    let c = call(&gw, "t", None);
    assert_eq!(
        gw.session_browser(&c).unwrap_err().code(),
        "BROWSER_UNAVAILABLE"
    );
    drop(c);
    gw.enable_local_browsers(LaunchOptions::default()).unwrap();
    assert_eq!(
        gw.enable_local_browsers(LaunchOptions::default())
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
    gw.close();
}

//! A browser task's local profile is the lease manager's profile lease (issue 21 build item 5,
//! R-PROF-2, R-TSK) against real headless Chromiums: a task on a profile an active thread
//! session holds ends `failed` with `BROWSER_CONTEXT_BUSY` (before any Chromium opens it); once
//! the session is idle past the grace the task takes the profile — the session's Chromium
//! closed first, its cookie persisted and seen by the task's — and while the task runs, an
//! authenticated call on the profile is `BROWSER_CONTEXT_BUSY` (isolated available) until the
//! task ends. Exactly one Chromium has the profile directory open at every step. A task's
//! organization is its owner's principal id: the thread calls below name `alice` for that.
//! Time is a manual clock; nothing sleeps to make time pass.

mod support;

use jevgate::browser::{BrowserBackend, JavascriptArgs, LaunchOptions};
use jevgate::clock::ManualClock;
use jevgate::lease::{BrowserCall, BrowserCallGuard, SessionMode, ACTIVE_GRACE};
use jevgate::task::{SpawnRequest, TaskOwner, TaskState, TaskTarget};
use jevgate::{Gateway, GatewayOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::Server;

const WAIT: Duration = Duration::from_secs(90);
const PROFILE: &str = "work-profile";

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// An authenticated-capable browser call of `thread` on `PROFILE`, organization = the task
/// owner's principal id.
fn thread_call(
    gw: &Gateway,
    thread: &str,
    mode: Option<SessionMode>,
) -> jevgate::Result<BrowserCallGuard> {
    gw.leases().begin_browser_call(&BrowserCall {
        thread_id: thread.into(),
        organization: "alice".into(),
        mode,
        profile_key: Some(PROFILE.into()),
        authenticated_allowed: true,
    })
}

/// An open session on `PROFILE` that starts at `url`.
fn request(url: String) -> SpawnRequest {
    let mut request = SpawnRequest::from_person("");
    request.target = TaskTarget::Local {
        profile: Some(PROFILE.into()),
    };
    request.start_url = Some(url);
    request.keep_open = true;
    request
}

fn spawn_on_profile(gw: &Gateway, url: String) -> String {
    gw.tasks().spawn(&owner(), request(url)).unwrap()
}

/// The main Chromium processes (not their helpers) running on the profile directory `dir`.
fn browsers_on(dir: &Path) -> Vec<u32> {
    let flag = format!("--user-data-dir={}", dir.display());
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        if !zombie && args.contains(&flag) && !args.iter().any(|a| a.starts_with("--type=")) {
            out.push(pid);
        }
    }
    out
}

fn gone(pid: u32) {
    let left = support::wait_group_gone(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "Chromium processes left: {left:?}");
}

// Issue 21 build item 5 (R-PROF-2, R-TSK): one live holder per profile, a thread session or a
// task; the task takes the lease manager's profile lease for its whole life.
#[test]
fn a_task_on_a_profile_takes_the_profile_lease_from_thread_sessions() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = Gateway::open(
        GatewayOptions::new(dir.path(), support::gateway::tasks_config())
            .with_clock(Arc::new(clock.clone())),
    )
    .unwrap();
    gw.enable_local_browsers(LaunchOptions::default()).unwrap();

    // A thread session of alice's organization works on the profile and sets a cookie.
    let call = thread_call(&gw, "thread-1", None).unwrap();
    assert_eq!(call.mode, SessionMode::Authenticated);
    let profile_dir = dir
        .path()
        .join("profiles")
        .join(call.profile.clone().unwrap());
    let session_browser = gw.session_browser(&call).unwrap();
    let session_pid = session_browser.pid().unwrap();
    support::track_pid(session_pid);
    session_browser.navigate(&server.url("/p/buttons")).unwrap();
    session_browser
        .javascript(JavascriptArgs {
            operation_id: "set-cookie".into(),
            code: "document.cookie = 'jevk=kept; max-age=3600; path=/'; 1".into(),
        })
        .unwrap();
    drop(call);
    assert_eq!(browsers_on(&profile_dir), [session_pid]);

    // (a) The session is active (its last call ended just now): the task ends failed with
    // BROWSER_CONTEXT_BUSY, naming nobody, and no second Chromium ever opened the profile.
    let busy = spawn_on_profile(&gw, server.url("/p/cookiecheck"));
    let status = gw.tasks().wait(&owner(), &busy, WAIT).unwrap();
    assert_eq!(status.state, TaskState::Failed, "{status:#?}");
    assert_eq!(status.reason.as_deref(), Some("BROWSER_CONTEXT_BUSY"));
    let line = status.outcome.clone().unwrap_or_default();
    assert!(line.contains("BROWSER_CONTEXT_BUSY"), "{line}");
    assert!(
        !line.contains("thread-1"),
        "the holder is not named: {line}"
    );
    assert!(session_browser.is_usable(), "the session keeps its browser");
    assert_eq!(browsers_on(&profile_dir), [session_pid]);
    assert_eq!(
        server.count("cookie-kept") + server.count("cookie-missing"),
        0
    );

    // (b) Idle past the grace: the task takes the profile. The session's Chromium is closed
    // first (the profile persisted: the task's Chromium sees the cookie).
    clock.advance(ACTIVE_GRACE);
    let task = spawn_on_profile(&gw, server.url("/p/cookiecheck"));
    let status = gw.tasks().wait(&owner(), &task, WAIT).unwrap();
    assert_eq!(status.state, TaskState::WaitingInput, "{status:#?}");
    gone(session_pid);
    assert!(!session_browser.is_usable());
    assert_eq!(
        gw.leases().session_count(),
        0,
        "the session was handed over"
    );
    assert_eq!(
        server.wait_count("cookie-kept", 1),
        1,
        "the profile was persisted"
    );
    assert_eq!(server.count("cookie-missing"), 0);
    let task_browsers = browsers_on(&profile_dir);
    assert_eq!(task_browsers.len(), 1, "{task_browsers:?}");
    let task_pid = task_browsers[0];
    support::track_pid(task_pid);
    assert_ne!(task_pid, session_pid);

    // (c) While the task runs — however long — an authenticated call on the profile is busy,
    // isolated mode available.
    clock.advance(Duration::from_secs(20 * 60));
    let refused = thread_call(&gw, "thread-1", None).err().unwrap();
    assert_eq!(refused.code(), "BROWSER_CONTEXT_BUSY");
    assert_eq!(refused.isolated_available(), Some(true));
    let other = thread_call(&gw, "thread-2", Some(SessionMode::Authenticated)).err();
    assert_eq!(other.map(|e| e.code()), Some("BROWSER_CONTEXT_BUSY"));
    let isolated = thread_call(&gw, "thread-2", Some(SessionMode::Isolated)).unwrap();
    assert_eq!(isolated.mode, SessionMode::Isolated);
    drop(isolated);
    // (A second task of the principal on the profile is refused at spawn by the task
    // service's own rule; the pin would refuse it too.)
    let second = gw
        .tasks()
        .spawn(&owner(), request(server.url("/p/buttons")));
    assert_eq!(
        second.err().map(|e| e.code()),
        Some("AUTOMATION_SESSION_EXISTS")
    );
    assert_eq!(browsers_on(&profile_dir), [task_pid]);

    // The task ends: its Chromium is closed before the profile is let go, and the thread's
    // authenticated call works again on the same profile (with the cookie).
    gw.tasks().cancel(&owner(), &task).unwrap();
    let status = gw.tasks().wait(&owner(), &task, WAIT).unwrap();
    assert_eq!(status.state, TaskState::Cancelled, "{status:#?}");
    gone(task_pid);
    let back = thread_call(&gw, "thread-1", None).unwrap();
    assert_eq!(back.mode, SessionMode::Authenticated);
    assert!(back.created);
    let browser = gw.session_browser(&back).unwrap();
    let back_pid = browser.pid().unwrap();
    support::track_pid(back_pid);
    browser.navigate(&server.url("/p/cookiecheck")).unwrap();
    assert_eq!(server.wait_count("cookie-kept", 2), 2);
    assert_eq!(browsers_on(&profile_dir), [back_pid]);
    drop(back);
    gw.close();
    gone(back_pid);
}

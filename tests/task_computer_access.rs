//! Issue 25 item 4 (seed 003 "Device sessions and access requests", "Computer connection
//! status"; R-TSK, R-TSK-CTL, R-LEASE-1, R-CLK): consent in a computer task's context and the
//! connection status its activity shows.
//!
//! A task's run asks the person for access when it opens the computer: an approval grants it at
//! once; otherwise the helper shows an access request the person approves or refuses
//! (`CONSENT_REQUIRED`), and five unanswered minutes on the helper's clock end it
//! (`COMPUTER_ACCESS_TIMEOUT`). Either failure performs nothing and lets the device go. An
//! approval that expires while the session is open refuses the next command. While the session
//! is open, idle included, the gateway checks the computer every five seconds of its clock
//! (`computerConnection`: `connected`, `disconnected`, `waiting_access`); a disconnect keeps
//! the session open, replays nothing and revokes the device's access, so after reconnecting it
//! is `waiting_access` until the person approves again. An explicit cancel still closes it.
//!
//! None of this needs a desktop: the helper here has none (`desk: None`), and consent is
//! checked before anything touches AT-SPI. Clocks are manual: the gateway's is advanced to
//! drive the five-second checks, the helper's to expire an approval or an access request.

mod support;

#[cfg(not(feature = "computer"))]
#[test]
fn r_tsk_computer_access_needs_the_computer_feature() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
mod access {
    use crate::support;
    use jevgate::clock::ManualClock;
    use jevgate::device::computer::ComputerConnection;
    use jevgate::device::{ToolExecutor, WorkerFailure};
    use jevgate::task::{SpawnRequest, TaskOwner, TaskState, TaskStatus, TaskTarget};
    use jevgate::unstable::computer::{state, ComputerHelper};
    use jevgate::{CancelToken, Config};
    use parking_lot::Mutex;
    use serde_json::Value;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use support::computer::{approve, helper, pair_computer};
    use support::gateway::{builder, Paired, TestGateway};

    const WAIT: Duration = Duration::from_secs(30);
    const FIVE_SECONDS: Duration = Duration::from_secs(5);
    const COMPUTER_CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#;

    fn owner() -> TaskOwner {
        TaskOwner::new("assistant", "alice", "conv-1")
    }

    fn gateway(clock: &ManualClock) -> TestGateway {
        builder()
            .config(Config::from_json_str(COMPUTER_CONFIG).unwrap())
            .clock(clock)
            .channel()
            .build()
    }

    /// A kept-open session on the computer; `words` its first command (none: it opens and
    /// waits).
    fn session(device: &str, words: Option<&str>) -> SpawnRequest {
        let mut request = match words {
            Some(w) => SpawnRequest::from_person(w),
            None => SpawnRequest::new(""),
        };
        request.keep_open = true;
        request.target = TaskTarget::Computer {
            device_id: device.into(),
        };
        request
    }

    /// The helper, recording every command that reaches it (tool and arguments).
    struct Spy {
        helper: Arc<ComputerHelper>,
        seen: Mutex<Vec<(String, Value)>>,
        /// Answers a connection check with something that is no access answer.
        garble: AtomicBool,
    }

    impl Spy {
        fn new(helper: Arc<ComputerHelper>) -> Arc<Spy> {
            Arc::new(Spy {
                helper,
                seen: Mutex::new(Vec::new()),
                garble: AtomicBool::new(false),
            })
        }

        /// The commands seen since the last call.
        fn take(&self) -> Vec<(String, Value)> {
            std::mem::take(&mut *self.seen.lock())
        }
    }

    impl ToolExecutor for Spy {
        fn execute(
            &self,
            tool: &str,
            args: &Value,
            deadline: Duration,
            cancel: &CancelToken,
        ) -> Result<Value, WorkerFailure> {
            self.seen.lock().push((tool.to_string(), args.clone()));
            if self.garble.load(Ordering::SeqCst) && args["check"] == true {
                return Ok(serde_json::json!({"state": "perhaps"}));
            }
            self.helper.execute(tool, args, deadline, cancel)
        }
    }

    /// The tools of `seen`, with `computer_access`'s mode (`check`, `revoke`, or a plain ask).
    fn tools(seen: &[(String, Value)]) -> Vec<String> {
        seen.iter()
            .map(|(tool, args)| match tool.as_str() {
                "computer_access" if args["check"] == true => "access:check".to_string(),
                "computer_access" if args["revoke"] == true => "access:revoke".to_string(),
                "computer_access" => "access:ask".to_string(),
                other => other.to_string(),
            })
            .collect()
    }

    /// The task's status once its `computerConnection` reads `want`: the task reaper runs the
    /// check the gateway's clock made due within about a second of real time (no API call waits
    /// for a helper), so a bounded real-time poll.
    fn connection(tg: &TestGateway, id: &str, want: Option<ComputerConnection>) -> TaskStatus {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let s = tg.gw.tasks().status(&owner(), id).unwrap();
            if s.computer_connection == want || Instant::now() > end {
                assert_eq!(s.computer_connection, want, "{s:#?}");
                return s;
            }
            std::thread::yield_now();
        }
    }

    /// The next `n` commands to reach the helper (the reaper's check runs within about a
    /// second of real time once the clock made it due), bounded.
    fn next(spy: &Spy, n: usize) -> Vec<String> {
        let end = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while seen.len() < n && Instant::now() < end {
            seen.extend(spy.take());
            std::thread::yield_now();
        }
        tools(&seen)
    }

    /// Bounded wait for the helper to show an access request (the task's open asks for it).
    fn wait_request(dir: &Path) {
        let end = Instant::now() + Duration::from_secs(10);
        while state::pending_access_request(dir).is_none() {
            assert!(Instant::now() < end, "no access request was shown");
            std::thread::yield_now();
        }
    }

    fn failed_without_acting(tg: &TestGateway, paired: &Paired, id: &str, code: &str) {
        let s = tg.gw.tasks().wait(&owner(), id, WAIT).unwrap();
        assert_eq!(
            (s.state, s.reason.as_deref(), s.actions),
            (TaskState::Failed, Some(code), 0),
            "{s:#?}"
        );
        assert_eq!(s.computer_connection, None);
        assert!(tg
            .gw
            .tasks()
            .receipts(&owner(), id)
            .unwrap()
            .iter()
            .all(|r| r.operations.is_empty()));
        // The failed task does not hold the device.
        let end = Instant::now() + Duration::from_secs(5);
        while tg.gw.leases().holder(&paired.device).is_some() {
            assert!(Instant::now() < end, "the desktop lease was not released");
            std::thread::yield_now();
        }
    }

    // Seed 003 "Device sessions and access requests", issue 25 tests "Consent refused, expired
    // and approved": refused → CONSENT_REQUIRED; unanswered for five minutes →
    // COMPUTER_ACCESS_TIMEOUT; approved → the session opens connected; an approval that
    // expired while the session is open refuses the next command. Nothing is ever performed
    // without access, and a failed task leaves the device to the next spawn.
    #[test]
    fn r_tsk_computer_consent_refused_timed_out_approved_and_expired() {
        let gclock = ManualClock::new();
        let tg = gateway(&gclock);
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let hclock = ManualClock::new();
        let spy = Spy::new(helper(dir, None, &hclock));
        let _worker = tg.device_worker(&paired, Arc::clone(&spy) as Arc<dyn ToolExecutor>);

        // Refused: the person answers the request with `revoke`.
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), session(&paired.device, Some("5")))
            .unwrap();
        wait_request(dir);
        state::revoke(dir).unwrap();
        failed_without_acting(&tg, &paired, &id, "CONSENT_REQUIRED");
        assert_eq!(state::pending_access_request(dir), None);

        // Unanswered: five minutes on the helper's clock end the request.
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), session(&paired.device, Some("5")))
            .unwrap();
        wait_request(dir);
        hclock.advance(Duration::from_secs(5 * 60));
        failed_without_acting(&tg, &paired, &id, "COMPUTER_ACCESS_TIMEOUT");
        assert_eq!(state::pending_access_request(dir), None);
        let seen = tools(&spy.take());
        assert!(
            seen.iter().all(|t| t == "access:ask"),
            "only access was asked: {seen:?}"
        );

        // Approved (by the next spawn's request, as the person answers it): the session opens
        // connected.
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), session(&paired.device, None))
            .unwrap();
        wait_request(dir);
        approve(dir, "gnome-calculator", 2, &hclock);
        let s = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(
            (s.state, s.reason.as_deref(), s.actions),
            (TaskState::WaitingInput, Some("SESSION_READY"), 0),
            "{s:#?}"
        );
        assert_eq!(s.computer_connection, Some(ComputerConnection::Connected));
        assert_eq!(
            tg.gw.leases().holder(&paired.device).as_deref(),
            Some("conv-1")
        );
        assert_eq!(state::pending_access_request(dir), None);

        // The approval expires while the session waits: the next command is refused before
        // anything is observed or pressed, and the check shows the access is gone.
        hclock.advance(Duration::from_secs(2 * 60));
        spy.take();
        tg.gw.tasks().command(&owner(), &id, "5").unwrap();
        let s = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(
            (s.reason.as_deref(), s.actions),
            (Some("CONSENT_REQUIRED"), 0),
            "{s:#?}"
        );
        assert_ne!(s.state, TaskState::Running);
        let seen = tools(&spy.take());
        assert!(
            !seen.iter().any(|t| t == "computer_action"),
            "nothing pressed: {seen:?}"
        );
        gclock.advance(FIVE_SECONDS);
        connection(&tg, &id, Some(ComputerConnection::WaitingAccess));
        tg.gw.tasks().cancel(&owner(), &id).unwrap();
    }

    // Seed 003 "Computer connection status", issue 25 test "a disconnected helper": the check
    // runs every five seconds of the gateway's clock while the session is idle; a disconnect
    // shows `disconnected` and keeps the session open; the reconnected helper's access is
    // revoked before anything else is sent to it (`waiting_access`, the approval withdrawn on
    // the helper) until the person approves again; nothing is replayed; an explicit cancel
    // closes the session and the checks stop.
    #[test]
    fn r_tsk_computer_connection_is_checked_and_a_disconnect_revokes_access() {
        let gclock = ManualClock::new();
        let tg = gateway(&gclock);
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let hclock = ManualClock::new();
        approve(dir, "gnome-calculator", 30, &hclock);
        let spy = Spy::new(helper(dir, None, &hclock));
        let worker = tg.device_worker(&paired, Arc::clone(&spy) as Arc<dyn ToolExecutor>);

        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), session(&paired.device, None))
            .unwrap();
        let s = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
        assert_eq!(s.computer_connection, Some(ComputerConnection::Connected));
        assert_eq!(tools(&spy.take()), ["access:ask"]);
        // The JSON form the tools, C and Python read.
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["computerConnection"], "connected");

        // Every five seconds of the gateway's clock, not before; a check only reads.
        gclock.advance(Duration::from_secs(4));
        // The reaper looks about once a second of real time: two of its rounds see no check due.
        let quiet = Instant::now() + Duration::from_millis(2500);
        while Instant::now() < quiet {
            assert!(spy.take().is_empty(), "no check before five seconds");
            std::thread::sleep(Duration::from_millis(50));
        }
        connection(&tg, &id, Some(ComputerConnection::Connected));
        gclock.advance(Duration::from_secs(1));
        assert_eq!(next(&spy, 1), ["access:check"]);
        connection(&tg, &id, Some(ComputerConnection::Connected));

        // The helper disconnects while the session is idle: disconnected, the session open.
        drop(worker);
        tg.wait_online(&paired, false);
        gclock.advance(FIVE_SECONDS);
        let s = connection(&tg, &id, Some(ComputerConnection::Disconnected));
        assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
        assert_eq!(
            tg.gw.leases().holder(&paired.device).as_deref(),
            Some("conv-1")
        );

        // It reconnects without the person: its access is revoked first, so waiting_access.
        let worker = tg.device_worker(&paired, Arc::clone(&spy) as Arc<dyn ToolExecutor>);
        gclock.advance(FIVE_SECONDS);
        assert_eq!(next(&spy, 2), ["access:revoke", "access:check"]);
        let s = connection(&tg, &id, Some(ComputerConnection::WaitingAccess));
        assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
        assert_eq!(state::read_consent(dir), None, "the approval was withdrawn");
        // Still waiting a while later: nothing acknowledges the revocation but the person.
        gclock.advance(FIVE_SECONDS);
        assert_eq!(next(&spy, 1), ["access:check"]);
        connection(&tg, &id, Some(ComputerConnection::WaitingAccess));

        // The person approves again: connected. Nothing was ever replayed or pressed.
        approve(dir, "gnome-calculator", 30, &hclock);
        gclock.advance(FIVE_SECONDS);
        assert_eq!(next(&spy, 1), ["access:check"]);
        let s = connection(&tg, &id, Some(ComputerConnection::Connected));
        assert_eq!((s.state, s.actions), (TaskState::WaitingInput, 0));

        // A disconnect and a reconnect between two checks revoke access too.
        drop(worker);
        tg.wait_online(&paired, false);
        let _worker = tg.device_worker(&paired, Arc::clone(&spy) as Arc<dyn ToolExecutor>);
        gclock.advance(FIVE_SECONDS);
        assert_eq!(next(&spy, 2), ["access:revoke", "access:check"]);
        connection(&tg, &id, Some(ComputerConnection::WaitingAccess));
        assert_eq!(state::read_consent(dir), None);

        // The owner's explicit stop closes the session; the checks stop with it.
        let s = tg.gw.tasks().cancel(&owner(), &id).unwrap();
        let s = if s.state.is_busy() {
            tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap()
        } else {
            s
        };
        assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
        assert_eq!(s.computer_connection, None);
        spy.take();
        gclock.advance(FIVE_SECONDS);
        let quiet = Instant::now() + Duration::from_millis(2500);
        while Instant::now() < quiet {
            assert!(spy.take().is_empty(), "no check after the session closed");
            std::thread::sleep(Duration::from_millis(50));
        }
        connection(&tg, &id, None);
        assert!(tg
            .gw
            .tasks()
            .receipts(&owner(), &id)
            .unwrap()
            .iter()
            .all(|r| r.operations.is_empty()));
    }

    // Seed 003 "Computer connection status": a check whose answer cannot be read is `unknown`
    // (not disconnected, not waiting for access); the session stays open and the next check
    // that reads reports it again.
    #[test]
    fn r_tsk_computer_connection_is_unknown_when_the_check_cannot_be_read() {
        let gclock = ManualClock::new();
        let tg = gateway(&gclock);
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let hclock = ManualClock::new();
        approve(dir, "gnome-calculator", 30, &hclock);
        let spy = Spy::new(helper(dir, None, &hclock));
        let _worker = tg.device_worker(&paired, Arc::clone(&spy) as Arc<dyn ToolExecutor>);
        let id = tg
            .gw
            .tasks()
            .spawn(&owner(), session(&paired.device, None))
            .unwrap();
        let s = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(s.computer_connection, Some(ComputerConnection::Connected));
        spy.garble.store(true, Ordering::SeqCst);
        gclock.advance(FIVE_SECONDS);
        let s = connection(&tg, &id, Some(ComputerConnection::Unknown));
        assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
        spy.garble.store(false, Ordering::SeqCst);
        gclock.advance(FIVE_SECONDS);
        connection(&tg, &id, Some(ComputerConnection::Connected));
        assert!(
            state::read_consent(dir).is_some(),
            "no revocation: never disconnected"
        );
        tg.gw.tasks().cancel(&owner(), &id).unwrap();
    }
}

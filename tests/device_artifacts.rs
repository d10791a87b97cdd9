//! Screenshot artifact retention through the gateway (R-DEV-SHOT): the per-session cap, the
//! retention purge on request and by the reaper thread, and deleting an ended conversation's
//! artifacts. Screenshots come from a real WebSocket worker on loopback; time is a manual clock.

mod support;

use jevgate::clock::ManualClock;
use jevgate::device::{DeviceLimits, ToolCall};
use jevgate::Gateway;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;
use support::gateway::TestGateway;
use support::worker::{wait_until, Cmd, Out, Worker};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\nabcd";
const HOUR: Duration = Duration::from_secs(60 * 60);

/// A gateway on a manual clock with a connected worker that answers every screenshot.
struct Setup {
    dir: tempfile::TempDir,
    gw: Gateway,
    clock: ManualClock,
    _worker: Worker,
}

impl Setup {
    fn new() -> Setup {
        let clock = ManualClock::new();
        let t = support::gateway::builder().clock(&clock).channel().build();
        let image = data_encoding::BASE64.encode(PNG);
        let (_, worker) = t.scripted_worker(
            "alice",
            "i1",
            Box::new(move |cmd: &Cmd| {
                vec![Out::Ok(
                    cmd.id.clone(),
                    json!({"image": image, "mediaType": "image/png"}),
                )]
            }),
        );
        let TestGateway { gw, dir, .. } = t;
        Setup {
            dir,
            gw,
            clock,
            _worker: worker,
        }
    }

    /// Takes a screenshot for `session` and returns its artifact id; the session then lets go
    /// of the control lease so another session may take screenshots too.
    fn shot(&self, session: &str) -> String {
        let r = self.gw.call_tool(&ToolCall::new(
            "alice",
            session,
            "browser_computer",
            json!({"action": "screenshot"}),
        ));
        let id = r.result().unwrap_or_else(|| panic!("failed: {r:?}"))["artifactId"]
            .as_str()
            .unwrap()
            .to_string();
        self.gw.leases().release_session(session).unwrap();
        id
    }

    fn readable(&self, session: &str, id: &str) -> bool {
        match self.gw.artifact(session, id) {
            Ok(a) => {
                assert_eq!(a.bytes, PNG);
                true
            }
            Err(e) => {
                assert_eq!(e.code(), "ARTIFACT_NOT_FOUND");
                false
            }
        }
    }

    fn file(&self, id: &str) -> PathBuf {
        self.dir.path().join("artifacts").join(id)
    }
}

#[test]
fn r_dev_shot_default_limits_and_zero_retention_limits_are_refused() {
    let limits = DeviceLimits::default();
    assert_eq!(limits.artifact_retention, 24 * HOUR);
    assert_eq!(limits.artifact_max_per_session, 200);
    let t = support::gateway::builder().build();
    let gw = &t.gw;
    for bad in [
        DeviceLimits {
            artifact_retention: Duration::ZERO,
            ..Default::default()
        },
        DeviceLimits {
            artifact_max_per_session: 0,
            ..Default::default()
        },
    ] {
        assert_eq!(
            gw.set_device_limits(bad).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }
    assert_eq!(gw.device_limits(), limits);
    gw.close();
}

#[test]
fn r_dev_shot_a_session_over_its_cap_loses_its_oldest_artifact_only() {
    let s = Setup::new();
    s.gw.set_device_limits(DeviceLimits {
        artifact_max_per_session: 3,
        ..Default::default()
    })
    .unwrap();
    let other = s.shot("s2");
    let ids: Vec<String> = (0..3).map(|_| s.shot("s1")).collect();
    assert!(ids.iter().all(|id| s.readable("s1", id)), "3 of 3 are kept");
    let fourth = s.shot("s1");
    assert!(!s.readable("s1", &ids[0]), "the 4th deletes the oldest");
    assert!(!s.file(&ids[0]).exists());
    assert!(ids[1..].iter().all(|id| s.readable("s1", id)));
    assert!(s.readable("s1", &fourth));
    assert!(s.readable("s2", &other), "another session's cap is its own");
    s.gw.close();
}

#[test]
fn r_dev_shot_purge_artifacts_at_the_retention_edge() {
    let s = Setup::new();
    s.gw.set_device_limits(DeviceLimits {
        artifact_retention: HOUR,
        ..Default::default()
    })
    .unwrap();
    let old = s.shot("s1");
    s.clock.advance(Duration::from_secs(1));
    let young = s.shot("s1");
    s.clock
        .advance(HOUR - Duration::from_secs(1) - Duration::from_millis(1));
    assert_eq!(s.gw.purge_artifacts().unwrap(), 0, "1 ms before the edge");
    assert!(s.readable("s1", &old));
    s.clock.advance(Duration::from_millis(1));
    assert_eq!(s.gw.purge_artifacts().unwrap(), 1, "at the edge");
    assert!(!s.readable("s1", &old));
    assert!(!s.file(&old).exists());
    assert!(s.readable("s1", &young));
    assert_eq!(s.gw.purge_artifacts().unwrap(), 0);
    s.clock.advance(Duration::from_secs(1));
    assert_eq!(s.gw.purge_artifacts().unwrap(), 1);
    assert!(!s.file(&young).exists());
    s.gw.close();
    assert_eq!(s.gw.purge_artifacts().unwrap_err().code(), "GATEWAY_CLOSED");
}

#[test]
fn r_dev_shot_delete_artifacts_deletes_only_that_sessions_artifacts() {
    let s = Setup::new();
    let ended: Vec<String> = (0..2).map(|_| s.shot("ended")).collect();
    let live = s.shot("live");
    assert_eq!(s.gw.delete_artifacts("ended").unwrap(), 2);
    assert!(ended
        .iter()
        .all(|id| !s.readable("ended", id) && !s.file(id).exists()));
    assert!(
        s.readable("live", &live),
        "another session's artifact remains"
    );
    assert_eq!(s.gw.delete_artifacts("ended").unwrap(), 0);
    // A file already gone (an operator, a crash between file and row) still counts as deleted.
    std::fs::remove_file(s.file(&live)).unwrap();
    assert_eq!(s.gw.delete_artifacts("live").unwrap(), 1);
    s.gw.close();
}

#[test]
fn r_dev_shot_the_reaper_purges_expired_artifacts_on_its_own() {
    let s = Setup::new();
    let old = s.shot("s1");
    s.clock.advance(Duration::from_secs(60));
    let fresh = s.shot("s2");
    // One step: `old` is 30 s past the retention, `fresh` 30 s short of it. The reaper wakes
    // every second of real time and purges at most once a minute of the gateway clock, which
    // has just moved by a day.
    s.clock
        .advance(DeviceLimits::default().artifact_retention - Duration::from_secs(30));
    wait_until("the reaper purges the expired artifact", || {
        !s.file(&old).exists()
    });
    assert!(!s.readable("s1", &old));
    assert!(s.readable("s2", &fresh));
    s.gw.close();
}

//! Retention of task rows (issue 21 defect 11; R-TSK, R-TSK-RCPT, R-CLK): the receipt writer
//! deletes a closed task (completed, failed, cancelled) with its requests and operations once
//! its last change is older than `gateway.tasks.retentionDays` (default 30) on the gateway's
//! clock — and never an open task nor one with an operation in doubt.
//!
//! The gateway runs on a `ManualClock`; tasks run on an in-memory page (`spawn_with_backend`),
//! and the rows are counted in the gateway's own SQLite file. A sweep pass is due at most every
//! few minutes of the clock and runs with the writer's next group, so the write of a new task
//! after the clock moved is the moment a pass has certainly run: nothing sleeps.

use jevgate::browser::{ActionResult, BrowserBackend, Command, Response};
use jevgate::clock::ManualClock;
use jevgate::observation::{Control, Observation};
use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Error, Gateway, GatewayOptions};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);
const DAY: Duration = Duration::from_secs(86_400);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// A page with one button and a body that scrolls once; a click times out when told to.
struct Page {
    click_times_out: bool,
    scrolled: parking_lot::Mutex<bool>,
}

impl Page {
    fn new(click_times_out: bool) -> Arc<Page> {
        Arc::new(Page {
            click_times_out,
            scrolled: parking_lot::Mutex::new(false),
        })
    }
}

fn action(op: &str, tool: &str) -> Response {
    Response::Action(ActionResult {
        operation_id: op.into(),
        tool: tool.into(),
        generation_before: 1,
        navigation_started: false,
        settled: false,
        dialog: None,
        notes: Vec::new(),
    })
}

impl BrowserBackend for Page {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        match command {
            Command::Observe(_) => {
                let scrolled = *self.scrolled.lock();
                let mut o = Observation {
                    generation: 1,
                    url: "https://shop.example/".into(),
                    ..Observation::default()
                };
                o.scroll.at_top = !scrolled;
                o.scroll.at_bottom = scrolled;
                o.text = "x".repeat(3000);
                o.controls.push(Control::new("e1", "button", "Buy"));
                Ok(Response::Observation(o))
            }
            Command::PageScroll(a) => {
                let mut s = self.scrolled.lock();
                if *s {
                    return Err(Error::ScrollLimit);
                }
                *s = true;
                Ok(action(&a.operation_id, "page_scroll"))
            }
            Command::PageClick(a) if !self.click_times_out => {
                Ok(action(&a.operation_id, "page_click"))
            }
            Command::PageClick(_) => Err(Error::BrowserTimeout {
                timeout: Duration::from_secs(10),
            }),
            other => Err(Error::ExecutionFailed {
                reason: format!("the page has no {}", other.tool()),
            }),
        }
    }
}

fn open(dir: &Path, clock: &ManualClock, config: serde_json::Value) -> Gateway {
    let gw = Gateway::open(
        GatewayOptions::new(dir, Config::from_json_str(&config.to_string()).unwrap())
            .with_clock(Arc::new(clock.clone()))
            // An open session must outlive the window here (idle expiry would close it).
            .with_task_limits(jevgate::task::TaskLimits {
                idle: Duration::from_secs(400 * 86_400),
                idle_after_failure: Duration::from_secs(400 * 86_400),
                ..Default::default()
            }),
    )
    .unwrap();
    // Any choice is the one button.
    gw.set_jev_callback(Some(Arc::new(|req: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(req).unwrap();
        let opts = v["questions"]["control"]["criteria"].as_object().unwrap();
        let probs: serde_json::Map<String, serde_json::Value> = opts
            .keys()
            .map(|k| (k.clone(), json!(if k == "o0" { 1.0 } else { 0.0 })))
            .collect();
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": {"control": {"type": "choice", "choice": "o0",
                "probabilities": probs, "confidence": 0.9}}})
            .to_string()
            .into_bytes(),
        )
    })));
    gw
}

/// Spawns `goal` on a fresh page and waits until it is no longer busy.
fn task(gw: &Gateway, goal: &str, keep_open: bool, click_times_out: bool) -> (String, TaskState) {
    let mut request = SpawnRequest::from_person(goal);
    request.keep_open = keep_open;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, Page::new(click_times_out))
        .unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    (id, s.state)
}

/// `(tasks, requests, operations)` rows of task `id` in the file.
fn rows(dir: &Path, id: &str) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open_with_flags(
        dir.join("jevgate.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let count = |sql: &str| c.query_row(sql, [id], |r| r.get::<_, i64>(0)).unwrap();
    (
        count("SELECT count(*) FROM tasks WHERE id = ?1"),
        count("SELECT count(*) FROM task_requests WHERE task_id = ?1"),
        count("SELECT count(*) FROM task_operations WHERE task_id = ?1"),
    )
}

// Issue 21 defect 11: after the retention window, closed tasks go with their receipts; open
// tasks, tasks that need reconciliation and closed tasks with an operation in doubt stay, and
// so does everything younger than the window.
#[test]
fn r_tsk_closed_tasks_go_after_the_retention_window_open_and_in_doubt_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = open(
        dir.path(),
        &clock,
        json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
        "features": {"browserTasks": {"enabled": true}}}}}),
    );
    let (completed, s) = task(&gw, "scroll down", false, false);
    assert_eq!(s, TaskState::Completed);
    let (failed, s) = task(&gw, "scroll up", false, false);
    assert_eq!(s, TaskState::Failed);
    let (cancelled, s) = task(&gw, "scroll down", true, false);
    assert_eq!(s, TaskState::WaitingInput);
    gw.tasks().cancel(&owner(), &cancelled).unwrap();
    let s = gw.tasks().wait(&owner(), &cancelled, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Cancelled);
    let (open_session, s) = task(&gw, "scroll down", true, false);
    assert_eq!(s, TaskState::WaitingInput);
    let (unknown, s) = task(&gw, "press Buy", false, true);
    assert_eq!(s, TaskState::NeedsReconciliation);
    // A closed task whose operation is in doubt (as an older build could leave one).
    let (doubtful, s) = task(&gw, "scroll down", false, false);
    assert_eq!(s, TaskState::Completed);
    {
        let c = rusqlite::Connection::open(dir.path().join("jevgate.sqlite3")).unwrap();
        let n = c
            .execute(
                "UPDATE task_operations SET status = 'interrupted' WHERE task_id = ?1",
                [&doubtful],
            )
            .unwrap();
        assert_eq!(n, 1);
    }
    let all = [
        &completed,
        &failed,
        &cancelled,
        &open_session,
        &unknown,
        &doubtful,
    ];
    for id in all {
        let (t, r, _) = rows(dir.path(), id);
        assert_eq!((t, r), (1, 1), "{id}");
    }
    assert_eq!(rows(dir.path(), &completed).2, 1);

    // 29 days on: nothing is old enough.
    clock.advance(DAY * 29);
    let (young, _) = task(&gw, "scroll down", false, false);
    for id in all {
        assert_eq!(rows(dir.path(), id).0, 1, "{id} went before its time");
    }
    // 31 days on: the closed ones are gone with their receipts; the rest stay.
    clock.advance(DAY * 2);
    let (_, _) = task(&gw, "scroll down", false, false);
    for id in [&completed, &failed, &cancelled] {
        assert_eq!(rows(dir.path(), id), (0, 0, 0), "{id} was kept");
    }
    for id in [&open_session, &unknown, &doubtful, &young] {
        assert_eq!(rows(dir.path(), id).0, 1, "{id} was deleted");
    }
    assert_eq!(
        gw.tasks().status(&owner(), &open_session).unwrap().state,
        TaskState::WaitingInput
    );
    // The open session still takes commands.
    gw.tasks()
        .command(&owner(), &open_session, "press Buy")
        .unwrap();
    let s = gw.tasks().wait(&owner(), &open_session, WAIT).unwrap();
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    gw.close();
}

// Issue 21 defect 11: the window is a setting (`gateway.tasks.retentionDays`, 1..=3650); a bad
// value is a configuration error naming its path.
#[test]
fn r_cfg_the_retention_window_is_a_validated_setting() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = open(
        dir.path(),
        &clock,
        json!({"gateway": {"tasks": {"retentionDays": 2},
        "jev": {"enabled": true, "provider": "callback",
            "features": {"browserTasks": {"enabled": true}}}}}),
    );
    let (done, s) = task(&gw, "scroll down", false, false);
    assert_eq!(s, TaskState::Completed);
    clock.advance(DAY + DAY / 2);
    task(&gw, "scroll down", false, false);
    assert_eq!(rows(dir.path(), &done).0, 1, "1.5 days < 2");
    clock.advance(DAY);
    task(&gw, "scroll down", false, false);
    assert_eq!(rows(dir.path(), &done), (0, 0, 0), "2.5 days > 2");
    gw.close();
    for bad in [
        json!({"gateway": {"tasks": {"retentionDays": 0}}}),
        json!({"gateway": {"tasks": {"retentionDays": 3651}}}),
        json!({"gateway": {"tasks": {"retentionDays": -1}}}),
        json!({"gateway": {"tasks": {"keepForever": true}}}),
    ] {
        let e = Config::from_json_str(&bad.to_string()).unwrap_err();
        assert_eq!(e.code(), "JEV_INVALID_CONFIGURATION", "{bad}");
        assert!(e.to_string().contains("gateway.tasks"), "{bad}: {e}");
    }
    let c = Config::from_json_str("{}").unwrap();
    assert_eq!(c.gateway.tasks.retention_days, 30, "the default");
}

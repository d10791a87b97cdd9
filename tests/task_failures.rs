//! Tasks under failure (R-TSK, R-TSK-RCPT, R-RUN, issue 14 "Bad input"): an action whose
//! outcome is unknown is never re-sent and the task needs reconciliation; a result that
//! contradicts its operation is unknown; a hanging or lying Jev provider fails only its
//! command, a quota failure stops the task; a browser that dies mid-run stops it; slots bound
//! how many tasks run; close leaves no task running.
//!
//! Most tests drive an in-memory page through `spawn_with_backend` (a host-supplied backend),
//! so the failure is exact and nothing sleeps; one kills a real headless Chromium.

mod support;

use jevgate::browser::{ActionResult, BrowserBackend, Command, Response};
use jevgate::observation::{Control, Observation};
use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Error, Gateway, GatewayOptions};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// A gateway on `dir` with `config`, browser tasks and step lists turned on (both off by
/// default).
fn open(dir: &std::path::Path, config: Value) -> Gateway {
    let config = support::gateway::with_tasks(config);
    Gateway::open(GatewayOptions::new(
        dir,
        Config::from_json_str(&config.to_string()).unwrap(),
    ))
    .unwrap()
}

/// The local evaluator (no network, no key).
fn local() -> Value {
    json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}})
}

/// How the fake page answers a click.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnClick {
    Works,
    /// The click was sent and the browser never answered.
    TimesOut,
    /// The answer names another operation.
    Contradicts,
}

/// An in-memory page: named buttons, a scrollable body; counts every action it executes.
struct FakePage {
    generation: AtomicU64,
    clicks: Mutex<Vec<String>>,
    executed: AtomicUsize,
    on_click: Mutex<OnClick>,
    scrolled: Mutex<bool>,
}

impl FakePage {
    fn new(on_click: OnClick) -> Arc<FakePage> {
        Arc::new(FakePage {
            generation: AtomicU64::new(1),
            clicks: Mutex::new(Vec::new()),
            executed: AtomicUsize::new(0),
            on_click: Mutex::new(on_click),
            scrolled: Mutex::new(false),
        })
    }

    fn observation(&self) -> Observation {
        let mut o = Observation {
            generation: self.generation.load(Ordering::SeqCst),
            url: "https://shop.example/".into(),
            title: "Shop".into(),
            ..Observation::default()
        };
        o.navigation = Some(jevgate::observation::Navigation {
            can_go_back: false,
            can_go_forward: false,
        });
        let scrolled = *self.scrolled.lock();
        o.scroll.at_top = !scrolled;
        o.scroll.at_bottom = scrolled;
        let clicks = self.clicks.lock();
        for (i, name) in ["Alpha", "Bravo", "Charlie"].iter().enumerate() {
            let shown = if clicks.iter().any(|c| c == name) {
                format!("{name} pressed")
            } else {
                name.to_string()
            };
            o.controls
                .push(Control::new(&format!("e{i}"), "button", &shown));
        }
        o
    }

    fn action(&self, op: &str, tool: &str) -> Response {
        Response::Action(ActionResult {
            operation_id: op.into(),
            tool: tool.into(),
            generation_before: self.generation.load(Ordering::SeqCst),
            navigation_started: false,
            settled: false,
            dialog: None,
            notes: Vec::new(),
        })
    }
}

impl BrowserBackend for FakePage {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        match command {
            Command::Observe(_) => Ok(Response::Observation(self.observation())),
            Command::PageClick(a) => {
                self.executed.fetch_add(1, Ordering::SeqCst);
                let obs = self.observation();
                let name = obs
                    .controls
                    .iter()
                    .find(|c| c.reference == a.reference)
                    .map(|c| c.name.clone())
                    .unwrap_or_default();
                self.clicks.lock().push(name);
                match *self.on_click.lock() {
                    OnClick::Works => Ok(self.action(&a.operation_id, "page_click")),
                    OnClick::TimesOut => Err(Error::BrowserTimeout {
                        timeout: Duration::from_secs(10),
                    }),
                    OnClick::Contradicts => Ok(self.action("someone-else", "page_click")),
                }
            }
            Command::PageScroll(a) => {
                self.executed.fetch_add(1, Ordering::SeqCst);
                let mut s = self.scrolled.lock();
                if *s {
                    return Err(Error::ScrollLimit);
                }
                *s = true;
                Ok(self.action(&a.operation_id, "page_scroll"))
            }
            other => Err(Error::ExecutionFailed {
                reason: format!("the fake page has no {}", other.tool()),
            }),
        }
    }
}

/// A callback "model" that picks the option whose description names `word`.
fn picks(word: &'static str) -> jevgate::jev::JevCallback {
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let opts = v["questions"]["control"]["criteria"].as_object().unwrap();
        let key = opts
            .iter()
            .find(|(_, d)| d.as_str().unwrap_or("").contains(word))
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| "none".into());
        let probs: serde_json::Map<String, Value> = opts
            .keys()
            .map(|k| (k.clone(), json!(if *k == key { 1.0 } else { 0.0 })))
            .collect();
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": {"control": {"type": "choice", "choice": key,
                "probabilities": probs, "confidence": 0.9}}})
            .to_string()
            .into_bytes(),
        )
    })
}

fn session(gw: &Gateway, page: &Arc<FakePage>) -> String {
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, page.clone())
        .unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    id
}

fn run(gw: &Gateway, id: &str, command: &str) -> jevgate::task::TaskStatus {
    gw.tasks().command(&owner(), id, command).unwrap();
    gw.tasks().wait(&owner(), id, WAIT).unwrap()
}

// R-TSK-RCPT: a click sent whose answer never came is unknown: the task needs reconciliation,
// its receipt keeps the operation as unknown, the line says "Unknown:", and nothing is sent
// again — not the click, not the commands queued behind it.
#[test]
fn r_tsk_rcpt_an_unknown_outcome_is_never_resent_and_needs_reconciliation() {
    for mode in [OnClick::TimesOut, OnClick::Contradicts] {
        let dir = tempfile::tempdir().unwrap();
        let gw = open(
            dir.path(),
            json!({"gateway": {"jev": {"enabled": true, "provider": "callback"}}}),
        );
        gw.set_jev_callback(Some(picks("Bravo")));
        let page = FakePage::new(mode);
        let id = session(&gw, &page);
        gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
        // Queued behind it: must never run once the outcome is unknown.
        let _ = gw.tasks().command(&owner(), &id, "scroll down");
        let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(s.state, TaskState::NeedsReconciliation, "{mode:?}: {s:#?}");
        assert!(
            s.outcome.as_deref().unwrap().starts_with("Unknown: "),
            "{s:#?}"
        );
        let m = s.last_dispatched_mutation.unwrap();
        assert_eq!(
            (m.tool.as_str(), m.status.as_str()),
            ("page_click", "unknown")
        );
        assert_eq!(page.executed.load(Ordering::SeqCst), 1, "sent exactly once");
        assert_eq!(*page.clicks.lock(), ["Bravo"]);
        assert_eq!(
            gw.tasks()
                .command(&owner(), &id, "press Alpha")
                .unwrap_err()
                .code(),
            "AUTOMATION_SESSION_CLOSED"
        );
        let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
        let last = receipts.last().unwrap();
        assert_eq!(last.state, "unknown");
        assert_eq!(last.operations.len(), 1);
        gw.close();
        // Reopening changes nothing and re-sends nothing.
        let gw = open(dir.path(), local());
        let s = gw.tasks().status(&owner(), &id).unwrap();
        assert_eq!(s.state, TaskState::NeedsReconciliation);
        assert_eq!(page.executed.load(Ordering::SeqCst), 1);
        gw.close();
    }
}

// R-RUN: a Jev provider that hangs fails only that command (JEV_TIMEOUT, nothing dispatched);
// the session goes on and the next command runs. An invalid answer records only which check
// failed. A quota failure stops the task.
#[test]
fn r_run_a_hanging_or_invalid_provider_fails_only_its_command_and_quota_stops_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(
        dir.path(),
        json!({"gateway": {"jev": {"enabled": true, "provider": "callback", "timeoutMs": 200}}}),
    );
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    gw.set_jev_callback(Some(Arc::new(move |_req: &[u8]| {
        let _ = gate.lock().recv();
        Err(Error::ProviderFailure {
            reason: "released".into(),
        })
    })));
    let page = FakePage::new(OnClick::Works);
    let id = session(&gw, &page);
    let s = run(&gw, &id, "press Bravo");
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("JEV_TIMEOUT"));
    assert!(s.outcome.as_deref().unwrap().starts_with("Not done: "));
    assert_eq!(
        page.executed.load(Ordering::SeqCst),
        0,
        "nothing dispatched"
    );
    let _ = release.send(());
    let s = run(&gw, &id, "scroll down");
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(page.executed.load(Ordering::SeqCst), 1);

    gw.set_jev_callback(Some(Arc::new(|_req: &[u8]| {
        Ok(br#"{"model":"m","answers":{},"usage":{"input_tokens":1,"output_tokens":1}}"#.to_vec())
    })));
    let s = run(&gw, &id, "press Alpha");
    assert_eq!(s.state, TaskState::WaitingInput);
    assert_eq!(s.reason.as_deref(), Some("JEV_MALFORMED_RESPONSE"));
    assert!(
        s.outcome.as_deref().unwrap().contains("MISSING_ANSWER"),
        "{s:#?}"
    );

    gw.set_jev_callback(Some(Arc::new(|_req: &[u8]| {
        Err(Error::QuotaExceeded {
            retry: Default::default(),
        })
    })));
    gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Failed, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("JEV_QUOTA_EXCEEDED"));
    assert_eq!(page.executed.load(Ordering::SeqCst), 1);
    assert_eq!(s.evaluations, 3);
    gw.close();
}

// R-TSK, R-TSK-CTL: a slot is for work in flight — a session waiting for its next command
// holds its browser but no slot, so with one slot a second task runs while the first session
// waits. Close cancels what is left, joins every task thread, and a reopened gateway shows no
// task running. (Queued-behind-a-running-task is in tests/task_control.rs.)
#[test]
fn r_tsk_slots_bound_running_tasks_and_close_leaves_none_running() {
    let dir = tempfile::tempdir().unwrap();
    let gw = Gateway::open(
        GatewayOptions::new(dir.path(), support::gateway::tasks_config()).with_task_slots(1),
    )
    .unwrap();
    let first_page = FakePage::new(OnClick::Works);
    let first = session(&gw, &first_page);
    let mut request = SpawnRequest::from_person("scroll down");
    request.keep_open = true;
    let second_page = FakePage::new(OnClick::Works);
    let second = gw
        .tasks()
        .spawn_with_backend(&owner(), request, second_page.clone())
        .unwrap();
    let s = gw.tasks().wait(&owner(), &second, WAIT).unwrap();
    assert_eq!(
        s.state,
        TaskState::WaitingInput,
        "the waiting first session holds no slot: {s:#?}"
    );
    assert_eq!(second_page.executed.load(Ordering::SeqCst), 1);
    gw.tasks().cancel(&owner(), &first).unwrap();
    let s = gw.tasks().wait(&owner(), &first, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    // A third waits queued behind the open second session; close ends both.
    let third = gw
        .tasks()
        .spawn_with_backend(
            &owner(),
            SpawnRequest::from_person("scroll down"),
            FakePage::new(OnClick::Works),
        )
        .unwrap();
    gw.close();
    assert_eq!(
        gw.tasks().status(&owner(), &second).unwrap_err().code(),
        "GATEWAY_CLOSED"
    );
    let gw = open(dir.path(), local());
    for (id, want) in [
        (&first, "CANCELLED"),
        (&second, "GATEWAY_CLOSED"),
        (&third, "GATEWAY_CLOSED"),
    ] {
        let s = gw.tasks().status(&owner(), id).unwrap();
        assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
        assert_eq!(s.reason.as_deref(), Some(want));
    }
    gw.close();
}

// Issue 14 bad input: a browser that dies mid-run stops the task with a clear reason; nothing
// is left running.
#[test]
fn r_tsk_a_browser_that_dies_mid_run_stops_the_task() {
    let browser = jevgate::browser::LocalBrowser::launch(Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), local());
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, Arc::new(browser.clone()))
        .unwrap();
    assert_eq!(
        gw.tasks().wait(&owner(), &id, WAIT).unwrap().state,
        TaskState::WaitingInput
    );
    let pid = browser.pid().unwrap();
    // SAFETY: a plain kill(2) of the Chromium this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    gw.tasks().command(&owner(), &id, "scroll down").unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert!(s.state.is_closed(), "{s:#?}");
    assert_ne!(s.state, TaskState::Completed);
    let reason = s.reason.clone().unwrap();
    assert!(
        [
            "BROWSER_UNAVAILABLE",
            "TAB_UNAVAILABLE",
            "OUTCOME_UNKNOWN",
            "BROWSER_TIMEOUT"
        ]
        .contains(&reason.as_str()),
        "{s:#?}"
    );
    browser.close();
    gw.close();
}

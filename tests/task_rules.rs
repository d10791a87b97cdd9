//! Rules of a run that a scripted page makes exact (issue 21 defects 8 and 9; R-TSK-RCPT,
//! R-RUN, R-GRM-STEPS): a request is `done` only when its last operation's result is
//! committed (a result write that fails leaves it `unknown` and the task in
//! `needs_reconciliation`); a step list of more than 12 steps takes the one-command path; a
//! changing screen is decided afresh at most twice, about a second apart on the gateway's clock,
//! while the six-read budget with backoff serves only re-reads after a navigation.
//!
//! The page is in memory (`spawn_with_backend`) and the gateway runs on a `ManualClock` that
//! the page itself moves, so nothing sleeps; the result write is made to fail by a trigger
//! installed in the gateway's own SQLite file.

use jevgate::browser::{ActionResult, BrowserBackend, Command, Response, StaleCause};
use jevgate::clock::{Clock, Instant, ManualClock};
use jevgate::observation::{Control, Observation};
use jevgate::task::{SpawnRequest, TaskOwner, TaskState, TaskStatus};
use jevgate::{Config, Error, Gateway, GatewayOptions};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// How the page answers a click.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnClick {
    Works,
    /// Refused before anything happened: the page changed under the decision.
    Stale(StaleCause),
}

/// An in-memory page with three buttons and a scrollable body, on the gateway's manual clock.
/// Every read and every click attempt is recorded with the clock's time; a refused click or
/// read takes `step` of the clock (the page's own time), so the run's waits end without real
/// time passing.
struct Page {
    clock: ManualClock,
    step: Duration,
    on_click: OnClick,
    /// Reads still answered with NAVIGATION_PENDING.
    pending_reads: Mutex<u32>,
    reads: Mutex<Vec<Instant>>,
    clicks: Mutex<Vec<Instant>>,
    executed: Mutex<u32>,
    scrolled: Mutex<bool>,
}

impl Page {
    fn new(clock: &ManualClock, on_click: OnClick) -> Arc<Page> {
        Arc::new(Page {
            clock: clock.clone(),
            step: Duration::from_secs(1),
            on_click,
            pending_reads: Mutex::new(0),
            reads: Mutex::new(Vec::new()),
            clicks: Mutex::new(Vec::new()),
            executed: Mutex::new(0),
            scrolled: Mutex::new(false),
        })
    }

    fn observation(&self) -> Observation {
        let scrolled = *self.scrolled.lock();
        let mut o = Observation {
            generation: 1,
            url: "https://shop.example/".into(),
            title: "Shop".into(),
            navigation: Some(jevgate::observation::Navigation {
                can_go_back: false,
                can_go_forward: false,
            }),
            ..Observation::default()
        };
        o.scroll.at_top = !scrolled;
        o.scroll.at_bottom = scrolled;
        for (i, name) in ["Alpha", "Bravo", "Charlie"].iter().enumerate() {
            o.controls
                .push(Control::new(&format!("e{i}"), "button", name));
        }
        o
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

    /// Clock time between consecutive entries.
    fn gaps(times: &[Instant]) -> Vec<Duration> {
        times.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

impl BrowserBackend for Page {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        match command {
            Command::Observe(_) => {
                self.reads.lock().push(self.clock.now());
                let mut pending = self.pending_reads.lock();
                if *pending > 0 {
                    *pending -= 1;
                    self.clock.advance(self.step);
                    return Err(Error::StaleObservation {
                        cause: StaleCause::NavigationPending,
                    });
                }
                Ok(Response::Observation(self.observation()))
            }
            Command::PageClick(a) => {
                self.clicks.lock().push(self.clock.now());
                match self.on_click {
                    OnClick::Works => {
                        *self.executed.lock() += 1;
                        Ok(Page::action(&a.operation_id, "page_click"))
                    }
                    OnClick::Stale(cause) => {
                        self.clock.advance(self.step);
                        Err(Error::StaleObservation { cause })
                    }
                }
            }
            Command::PageScroll(a) => {
                let mut s = self.scrolled.lock();
                if *s {
                    return Err(Error::ScrollLimit);
                }
                *s = true;
                *self.executed.lock() += 1;
                Ok(Page::action(&a.operation_id, "page_scroll"))
            }
            other => Err(Error::ExecutionFailed {
                reason: format!("the scripted page has no {}", other.tool()),
            }),
        }
    }
}

/// A callback "model" that picks the option naming `word`.
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

fn open(dir: &std::path::Path, clock: &ManualClock) -> Gateway {
    let config = json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
        "features": {"browserTasks": {"enabled": true}}}}});
    let gw = Gateway::open(
        GatewayOptions::new(dir, Config::from_json_str(&config.to_string()).unwrap())
            .with_clock(Arc::new(clock.clone())),
    )
    .unwrap();
    gw.set_jev_callback(Some(picks("Bravo")));
    gw
}

/// An open session on `page`, waiting for its first command.
fn session(gw: &Gateway, page: &Arc<Page>) -> String {
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

fn run(gw: &Gateway, id: &str, command: &str) -> TaskStatus {
    gw.tasks().command(&owner(), id, command).unwrap();
    gw.tasks().wait(&owner(), id, WAIT).unwrap()
}

// Issue 21 defect 8, R-TSK-RCPT: the page confirmed the scroll but its result could not be
// committed (the only write that fails). The request is not `done` without its result: it is
// `unknown`, the task needs reconciliation, and nothing runs after it — not after a reopen
// either.
#[test]
fn r_tsk_rcpt_a_request_whose_result_was_not_stored_is_unknown_not_done() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = open(dir.path(), &clock);
    let page = Page::new(&clock, OnClick::Works);
    let id = session(&gw, &page);
    // The gateway's own file refuses exactly one kind of write: an operation's result.
    let c = rusqlite::Connection::open(dir.path().join("jevgate.sqlite3")).unwrap();
    c.execute_batch(
        "CREATE TRIGGER no_results BEFORE UPDATE OF status ON task_operations
         WHEN NEW.status <> 'dispatched' BEGIN SELECT RAISE(ABORT, 'injected'); END;",
    )
    .unwrap();
    drop(c);
    let s = run(&gw, &id, "scroll down");
    assert_eq!(*page.executed.lock(), 1, "the scroll ran once");
    assert_eq!(s.state, TaskState::NeedsReconciliation, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("OUTCOME_UNKNOWN"), "{s:#?}");
    assert!(
        s.outcome.as_deref().unwrap().starts_with("Unknown: "),
        "{s:#?}"
    );
    let m = s.last_dispatched_mutation.clone().unwrap();
    assert_eq!(
        (m.tool.as_str(), m.status.as_str()),
        ("page_scroll", "dispatched")
    );
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    let last = receipts.last().unwrap();
    assert_eq!(last.state, "unknown", "{receipts:#?}");
    assert_eq!(last.operations.len(), 1);
    assert_eq!(
        gw.tasks()
            .command(&owner(), &id, "press Alpha")
            .unwrap_err()
            .code(),
        "AUTOMATION_SESSION_CLOSED"
    );
    // Recovery at the next open settles result rows too: the file takes them again.
    let c = rusqlite::Connection::open(dir.path().join("jevgate.sqlite3")).unwrap();
    c.execute_batch("DROP TRIGGER no_results").unwrap();
    drop(c);
    gw.close();
    let gw = open(dir.path(), &clock);
    let s = gw.tasks().status(&owner(), &id).unwrap();
    assert_eq!(s.state, TaskState::NeedsReconciliation, "{s:#?}");
    assert_eq!(*page.executed.lock(), 1);
    gw.close();
}

// Issue 21 defect 9(a), R-GRM-STEPS: more than 12 steps is not an error; the text takes the
// one-command path (one command, at most one action, no step run).
#[test]
fn r_grm_steps_more_than_twelve_steps_take_the_one_command_path() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = open(dir.path(), &clock);
    let thirteen: String = (1..=13).map(|i| format!("{i}. scroll down\n")).collect();
    let page = Page::new(&clock, OnClick::Works);
    let id = session(&gw, &page);
    let s = run(&gw, &id, &thirteen);
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert!(s.step_run.is_none(), "not a step run: {s:#?}");
    assert!(
        *page.executed.lock() <= 1,
        "one command, at most one action"
    );
    let spawned = gw
        .tasks()
        .spawn_with_backend(
            &owner(),
            SpawnRequest::from_person(thirteen),
            Page::new(&clock, OnClick::Works),
        )
        .unwrap();
    let s = gw.tasks().wait(&owner(), &spawned, WAIT).unwrap();
    assert!(s.step_run.is_none(), "{s:#?}");
    assert_eq!(gw.tasks().receipts(&owner(), &spawned).unwrap().len(), 1);
    gw.close();
}

// Issue 21 defect 9(b), R-RUN stale rule: a click refused because the screen changed is decided
// afresh on a new read at most twice, each read about a second after the one before on the
// gateway's clock; then the command is not done (STALE_OBSERVATION) and nothing ran.
#[test]
fn r_run_a_changing_screen_is_decided_afresh_at_most_twice_a_second_apart() {
    for cause in [StaleCause::GenerationChanged, StaleCause::NavigationPending] {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new();
        let gw = open(dir.path(), &clock);
        let page = Page::new(&clock, OnClick::Stale(cause));
        let id = session(&gw, &page);
        page.reads.lock().clear();
        let s = run(&gw, &id, "press Bravo");
        assert_eq!(s.state, TaskState::WaitingInput, "{cause:?}: {s:#?}");
        assert_eq!(s.reason.as_deref(), Some("STALE_OBSERVATION"), "{s:#?}");
        assert_eq!(*page.executed.lock(), 0);
        let clicks = page.clicks.lock().clone();
        assert_eq!(
            clicks.len(),
            3,
            "{cause:?}: the first decision and two afresh"
        );
        let reads = page.reads.lock().clone();
        assert_eq!(reads.len(), 3, "{cause:?}: one read per decision");
        for gap in Page::gaps(&reads) {
            assert!(
                gap >= Duration::from_secs(1),
                "{cause:?}: reads {gap:?} apart"
            );
        }
        assert_eq!(s.evaluations, 3);
        gw.close();
    }
}

// R-RUN stale rule: a read after a navigation that is still pending is re-read with a backoff,
// six reads in all — and those re-reads are not decisions.
#[test]
fn r_run_navigation_pending_reads_have_their_own_budget_of_six() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = open(dir.path(), &clock);
    let page = Page::new(&clock, OnClick::Works);
    let id = session(&gw, &page);
    // Five pending reads, then the page: the sixth read succeeds and the click runs.
    page.reads.lock().clear();
    *page.pending_reads.lock() = 5;
    let s = run(&gw, &id, "press Bravo");
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(*page.executed.lock(), 1);
    assert_eq!(s.evaluations, 1, "re-reads are not decisions");
    let reads = page.reads.lock().clone();
    assert_eq!(
        reads.len(),
        6 + 1,
        "six reads before the action, one after: {reads:?}"
    );
    // Always pending: six reads, then not done; nothing was decided or sent.
    page.reads.lock().clear();
    *page.pending_reads.lock() = 1000;
    let s = run(&gw, &id, "press Alpha");
    assert_eq!(s.reason.as_deref(), Some("STALE_OBSERVATION"), "{s:#?}");
    assert_eq!(page.reads.lock().len(), 6);
    assert_eq!(*page.executed.lock(), 1);
    assert_eq!(s.evaluations, 1);
    *page.pending_reads.lock() = 0;
    gw.close();
}

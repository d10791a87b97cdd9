//! Issue 21 defects 6 and 10 (R-TSK, R-TSK-CTL, R-JEV-ACCESS, R-CFG): the feature and access
//! gates of browser tasks, and ownership errors that tell nothing.
//!
//! Defect 6: `features.browserTasks` (off by default) and the agent's Jev access decide whether
//! a task may start, take a command, and start its next request — read from the configuration
//! live at each of those moments, so a reload applies to queued and running tasks before their
//! next browser action (`ORCHESTRATION_DISABLED` 409, `EXECUTION_DENIED` 403). With
//! `features.browserSteps` off a step list is not refused: the whole text runs as one direct
//! command. Defect 10: an unknown task id, a malformed one and another owner's id answer every
//! verb with the same `ACCESS_DENIED`, word for word.
//!
//! Every browser here is an in-memory page (a host-supplied backend) that counts every command
//! it receives, observations included, so "no browser action" is exact; one test checks that a
//! local-target task never starts a Chromium. Nothing sleeps: waits are the task API's own.

mod support;

use jevgate::browser::{ActionResult, BrowserBackend, Command, Response};
use jevgate::observation::{Control, Observation};
use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Error, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// A configuration document with Jev on (the local evaluator) and `jev` merged in.
fn jev(extra: Value) -> Value {
    let mut jev = json!({"enabled": true, "provider": "local"});
    for (k, v) in extra.as_object().unwrap() {
        jev[k] = v.clone();
    }
    json!({"gateway": {"jev": jev}})
}

fn tasks_on() -> Value {
    jev(json!({"features": {"browserTasks": {"enabled": true}}}))
}

fn config(v: &Value) -> Config {
    Config::from_json_str(&v.to_string()).unwrap()
}

fn open(dir: &std::path::Path, v: &Value, slots: usize) -> Gateway {
    Gateway::open(GatewayOptions::new(dir, config(v)).with_task_slots(slots)).unwrap()
}

/// The configurations that turn a task of `owner()` away, with the code each must give.
fn refusing() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("default (Jev off)", json!({}), "ORCHESTRATION_DISABLED"),
        (
            "Jev on, features unset",
            jev(json!({})),
            "ORCHESTRATION_DISABLED",
        ),
        (
            "browserTasks false",
            jev(json!({"features": {"browserTasks": {"enabled": false},
                "browserSteps": {"enabled": true}}})),
            "ORCHESTRATION_DISABLED",
        ),
        (
            "Jev off, browserTasks true",
            json!({"gateway": {"jev": {"enabled": false,
                "features": {"browserTasks": {"enabled": true}}}}}),
            "ORCHESTRATION_DISABLED",
        ),
        (
            "agent outside allowedAgentIds",
            jev(json!({"allowedAgentIds": ["someone-else"],
                "features": {"browserTasks": {"enabled": true}}})),
            "EXECUTION_DENIED",
        ),
        (
            "allowedAgentIds empty",
            jev(json!({"allowedAgentIds": [], "features": {"browserTasks": {"enabled": true}}})),
            "EXECUTION_DENIED",
        ),
        (
            "the agent's own jev.enabled false",
            {
                let mut v = tasks_on();
                v["agents"] = json!([{"id": "assistant", "jev": {"enabled": false}}]);
                v
            },
            "EXECUTION_DENIED",
        ),
    ]
}

/// An in-memory page with buttons Alpha and Bravo that counts every command it receives.
#[derive(Default)]
struct Page {
    commands: AtomicUsize,
    clicks: Mutex<Vec<String>>,
}

impl Page {
    fn new() -> Arc<Page> {
        Arc::new(Page::default())
    }

    fn seen(&self) -> usize {
        self.commands.load(Ordering::SeqCst)
    }

    fn clicks(&self) -> Vec<String> {
        self.clicks.lock().unwrap().clone()
    }

    fn observation(&self) -> Observation {
        let clicks = self.clicks.lock().unwrap();
        let mut o = Observation {
            // Each click changes the page (a new generation), so a step is verified.
            generation: 1 + clicks.len() as u64,
            url: "https://shop.example/".into(),
            title: "Shop".into(),
            ..Observation::default()
        };
        for (i, name) in ["Alpha", "Bravo"].iter().enumerate() {
            let pressed = clicks.iter().filter(|c| c == name).count();
            let shown = format!("{name}{}", " pressed".repeat(pressed));
            o.controls
                .push(Control::new(&format!("e{i}"), "button", &shown));
        }
        o
    }
}

/// A page whose observation waits while `held` (bounded): a task on it keeps its slot busy.
#[derive(Default)]
struct Holder {
    held: Mutex<bool>,
    came: std::sync::atomic::AtomicBool,
    arrived: std::sync::Condvar,
    released: std::sync::Condvar,
}

impl Holder {
    fn await_arrival(&self) {
        let held = self.held.lock().unwrap();
        let (_g, r) = self
            .arrived
            .wait_timeout_while(held, Duration::from_secs(30), |_| {
                !self.came.load(Ordering::SeqCst)
            })
            .unwrap();
        assert!(!r.timed_out(), "the holder's task never observed");
    }

    fn release(&self) {
        *self.held.lock().unwrap() = false;
        self.released.notify_all();
    }
}

impl BrowserBackend for Holder {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        let mut held = self.held.lock().unwrap();
        if *held {
            self.came.store(true, Ordering::SeqCst);
            self.arrived.notify_all();
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while *held && std::time::Instant::now() < deadline {
                held = self
                    .released
                    .wait_timeout(held, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
        }
        drop(held);
        Err(Error::ExecutionFailed {
            reason: format!("the holder has no {}", command.tool()),
        })
    }
}

impl BrowserBackend for Page {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        self.commands.fetch_add(1, Ordering::SeqCst);
        match command {
            Command::Observe(_) => Ok(Response::Observation(self.observation())),
            Command::PageClick(a) => {
                let obs = self.observation();
                let name = obs
                    .controls
                    .iter()
                    .find(|c| c.reference == a.reference)
                    .map(|c| c.name.split(' ').next().unwrap_or("").to_string())
                    .unwrap_or_default();
                self.clicks.lock().unwrap().push(name);
                Ok(Response::Action(ActionResult {
                    operation_id: a.operation_id.clone(),
                    tool: "page_click".into(),
                    generation_before: obs.generation,
                    navigation_started: false,
                    settled: true,
                    dialog: None,
                    notes: Vec::new(),
                }))
            }
            other => Err(Error::ExecutionFailed {
                reason: format!("the page has no {}", other.tool()),
            }),
        }
    }
}

/// An open session (empty goal, kept open) on `page`, waiting for commands.
fn session(gw: &Gateway, who: &TaskOwner, page: &Arc<Page>) -> String {
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(who, request, page.clone())
        .unwrap();
    let s = gw.tasks().wait(who, &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    id
}

// Defect 6: every refusing configuration turns spawn away before anything is stored or any
// browser is touched — local and host-brought targets alike — with its code, status and words.
#[test]
fn issue21_d6_spawn_is_refused_when_tasks_are_off_or_the_agent_has_no_jev_access() {
    for (name, v, code) in refusing() {
        let dir = tempfile::tempdir().unwrap();
        let gw = open(dir.path(), &v, 2);
        let page = Page::new();
        let e = gw
            .tasks()
            .spawn_with_backend(
                &owner(),
                SpawnRequest::from_person("press Alpha"),
                page.clone(),
            )
            .unwrap_err();
        assert_eq!(e.code(), code, "{name}: {e}");
        let status = if code == "EXECUTION_DENIED" { 403 } else { 409 };
        assert_eq!(e.http_status(), status, "{name}");
        assert!(!e.to_string().contains("someone-else"), "{name}: {e}");
        let mut local = SpawnRequest::from_person("press Alpha");
        local.start_url = Some("http://127.0.0.1:9/".into());
        assert_eq!(
            gw.tasks().spawn(&owner(), local).unwrap_err().code(),
            code,
            "{name}"
        );
        assert_eq!(page.seen(), 0, "{name}: the page was touched");
        assert!(
            gw.tasks().list(&owner()).unwrap().is_empty(),
            "{name}: a refused spawn stored a task"
        );
        gw.close();
    }
    // The gate is per agent: another agent of the same gateway still runs.
    let dir = tempfile::tempdir().unwrap();
    let v = jev(json!({"allowedAgentIds": ["planner"],
        "features": {"browserTasks": {"enabled": true}}}));
    let gw = open(dir.path(), &v, 1);
    let planner = TaskOwner::new("planner", "alice", "conv-1");
    let page = Page::new();
    let id = gw
        .tasks()
        .spawn_with_backend(
            &planner,
            SpawnRequest::from_person("press Alpha"),
            page.clone(),
        )
        .unwrap();
    let s = gw.tasks().wait(&planner, &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Completed, "{s:#?}");
    assert_eq!(page.clicks(), ["Alpha"]);
    gw.close();
}

// Defect 6, live reload: an open session's next command is refused as soon as a reload turns
// tasks off or takes the agent's access away, and accepted again once a reload turns them back
// on. Nothing reaches the page while refused; status, receipts and cancel keep working.
#[test]
fn issue21_d6_a_command_is_refused_after_a_reload_and_accepted_after_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), &tasks_on(), 2);
    let page = Page::new();
    let id = session(&gw, &owner(), &page);
    let before = page.seen();
    for (name, v, code) in refusing() {
        gw.reload(config(&v)).unwrap();
        let e = gw
            .tasks()
            .command(&owner(), &id, "press Alpha")
            .unwrap_err();
        assert_eq!(e.code(), code, "{name}: {e}");
        assert_eq!(page.seen(), before, "{name}: the page was touched");
        let s = gw.tasks().status(&owner(), &id).unwrap();
        assert_eq!(s.state, TaskState::WaitingInput, "{name}: {s:#?}");
        assert_eq!(s.queued_commands, 0, "{name}: a refused command was queued");
        gw.tasks().receipts(&owner(), &id).unwrap();
    }
    gw.reload(config(&tasks_on())).unwrap();
    gw.tasks().command(&owner(), &id, "press Alpha").unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(page.clicks(), ["Alpha"]);
    // Cancel is never gated: the owner can always stop a task.
    gw.reload(config(&json!({}))).unwrap();
    gw.tasks().cancel(&owner(), &id).unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    gw.close();
}

// Defect 6, live reload while queued: with one slot held by an open session, tasks queued while
// tasks were on meet a reload that turns them off (or takes the agent's access away). When the
// slot frees they end with that code before any browser action: the host's page gets no
// command, a local target starts no Chromium and its start page is never requested, and no
// request receipt is opened.
#[test]
fn issue21_d6_a_task_queued_before_a_reload_never_opens_its_browser() {
    for (name, v, code) in refusing() {
        let dir = tempfile::tempdir().unwrap();
        let gw = open(dir.path(), &tasks_on(), 1);
        // The one slot is busy: a task whose page holds its first observation (a waiting
        // session holds no slot, R-TSK-CTL).
        let holder = Arc::new(Holder::default());
        *holder.held.lock().unwrap() = true;
        let first = gw
            .tasks()
            .spawn_with_backend(
                &owner(),
                SpawnRequest::from_person("press Alpha"),
                holder.clone(),
            )
            .unwrap();
        holder.await_arrival();
        let page = Page::new();
        let brought = gw
            .tasks()
            .spawn_with_backend(
                &owner(),
                SpawnRequest::from_person("press Alpha"),
                page.clone(),
            )
            .unwrap();
        // A local target whose start page would be the first thing its Chromium fetches.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let mut request = SpawnRequest::from_person("press Alpha");
        request.start_url = Some(format!("http://{}/start", listener.local_addr().unwrap()));
        let local = gw.tasks().spawn(&owner(), request).unwrap();
        for id in [&brought, &local] {
            let s = gw.tasks().status(&owner(), id).unwrap();
            assert_eq!(s.state, TaskState::Queued, "{name}: {s:#?}");
        }
        gw.reload(config(&v)).unwrap();
        gw.tasks().cancel(&owner(), &first).unwrap();
        holder.release();
        for id in [&brought, &local] {
            let s = gw.tasks().wait(&owner(), id, WAIT).unwrap();
            assert_eq!(s.state, TaskState::Failed, "{name}: {s:#?}");
            assert_eq!(s.reason.as_deref(), Some(code), "{name}: {s:#?}");
            let line = s.outcome.unwrap();
            assert!(
                line.starts_with("Not done: ") && line.ends_with(&format!("({code})")),
                "{name}: {line}"
            );
            assert_eq!(s.actions, 0, "{name}");
            assert!(
                gw.tasks().receipts(&owner(), id).unwrap().is_empty(),
                "{name}: a request was opened"
            );
        }
        assert_eq!(page.seen(), 0, "{name}: the page was touched");
        assert!(
            matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{name}: the start page was requested"
        );
        let chromium: Vec<u32> = support::children_of(std::process::id())
            .into_iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.contains("chrom"))
            })
            .collect();
        assert!(
            chromium.is_empty(),
            "{name}: a Chromium started: {chromium:?}"
        );
        gw.close();
    }
}

// Defect 6, live reload while running: a command queued while tasks were on waits behind a
// request that is deciding; a reload turns tasks off meanwhile. The running request finishes
// (its decision was already under way), and the queued command's request is refused before
// its first browser action: the task stops with ORCHESTRATION_DISABLED and Bravo is never
// pressed. Its receipt says so.
#[test]
fn issue21_d6_a_reload_stops_a_running_session_before_its_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let v = json!({"gateway": {"jev": {"enabled": true, "provider": "callback", "timeoutMs": 60000,
        "features": {"browserTasks": {"enabled": true}}}}});
    let gw = open(dir.path(), &v, 1);
    let (entered_tx, entered) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (entered_tx, released) = (Mutex::new(entered_tx), Mutex::new(released));
    gw.set_jev_callback(Some(Arc::new(move |req: &[u8]| {
        let _ = entered_tx.lock().unwrap().send(());
        let _ = released.lock().unwrap().recv();
        Ok(choose(req, "Alpha"))
    })));
    let page = Page::new();
    let id = session(&gw, &owner(), &page);
    // "click the first one" has no exact control: it needs a decision, which blocks.
    gw.tasks()
        .command(&owner(), &id, "click the first one")
        .unwrap();
    entered.recv_timeout(WAIT).unwrap();
    gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
    let mut off = v.clone();
    off["gateway"]["jev"]["features"]["browserTasks"]["enabled"] = json!(false);
    gw.reload(config(&off)).unwrap();
    release.send(()).unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Failed, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("ORCHESTRATION_DISABLED"));
    assert_eq!(page.clicks(), ["Alpha"], "the queued command never ran");
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    let last = receipts.last().unwrap();
    assert_eq!(
        (last.state.as_str(), last.reason.as_deref()),
        ("failed", Some("ORCHESTRATION_DISABLED")),
        "{receipts:#?}"
    );
    assert!(last.operations.is_empty(), "{receipts:#?}");
    gw.close();
}

/// A Jev answer choosing the option whose description names `word`.
fn choose(req: &[u8], word: &str) -> Vec<u8> {
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
    json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
        "answers": {"control": {"type": "choice", "choice": key,
            "probabilities": probs, "confidence": 0.9}}})
    .to_string()
    .into_bytes()
}

// Defect 6, browserSteps: the same step list runs step by step with `browserSteps` on, and with
// it off is not refused but takes the one-command path — the whole text is one direct command
// (one decision over the whole text, at most one action, no step run). A reload switches it
// for the next request of a running session.
#[test]
fn issue21_d6_browser_steps_off_runs_a_step_list_as_one_direct_command() {
    const LIST: &str = "press Alpha, press Bravo";
    let dir = tempfile::tempdir().unwrap();
    let v = json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
        "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}});
    let gw = open(dir.path(), &v, 1);
    let states = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = states.clone();
    gw.set_jev_callback(Some(Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let state = v["state"].as_str().unwrap_or("").to_string();
        // The first button the command names (the whole list names Alpha first).
        let word = if state.contains("Alpha") {
            "Alpha"
        } else {
            "Bravo"
        };
        seen.lock().unwrap().push(state);
        Ok(choose(req, word))
    })));

    // On: two steps, both pressed, a step run.
    let page = Page::new();
    let id = session(&gw, &owner(), &page);
    gw.tasks().command(&owner(), &id, LIST).unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    let run = s.step_run.clone().expect("a step run");
    assert_eq!(
        (run.steps, run.stop_reason.as_str()),
        (2, "ALL_STEPS_DONE"),
        "{s:#?}"
    );
    assert_eq!(page.clicks(), ["Alpha", "Bravo"]);
    assert!(
        !states.lock().unwrap().iter().any(|s| s == LIST),
        "no decision saw the whole list"
    );

    // Off (a reload while the session waits): the same text is one direct command.
    let mut off = v.clone();
    off["gateway"]["jev"]["features"]["browserSteps"]["enabled"] = json!(false);
    gw.reload(config(&off)).unwrap();
    gw.tasks().command(&owner(), &id, LIST).unwrap();
    let s = gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "not refused: {s:#?}");
    // DONE is a direct command's reason; a step run would end ALL_STEPS_DONE.
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(
        page.clicks(),
        ["Alpha", "Bravo", "Alpha"],
        "one action for the whole text"
    );
    assert_eq!(
        states.lock().unwrap().last().map(String::as_str),
        Some(LIST),
        "one decision over the whole text"
    );
    let receipts = gw.tasks().receipts(&owner(), &id).unwrap();
    assert_eq!(receipts.len(), 3, "session start + two requests");
    assert_eq!(receipts[2].operations.len(), 1);

    // A spawn's goal under browserSteps off takes the same path.
    let page = Page::new();
    let spawned = gw
        .tasks()
        .spawn_with_backend(&owner(), SpawnRequest::from_person(LIST), page.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    gw.tasks().cancel(&owner(), &id).unwrap();
    let s = gw.tasks().wait(&owner(), &spawned, WAIT).unwrap();
    assert_eq!(s.state, TaskState::Completed, "{s:#?}");
    assert_eq!(s.step_run, None, "{s:#?}");
    assert_eq!(page.clicks(), ["Alpha"]);
    gw.close();
}

// Defect 10: for every verb, an unknown id, a malformed one (empty, too long, not a UUID) and
// another owner's id (another agent, principal or conversation) give byte-identical errors:
// the same code, HTTP status, family and message, which names nothing of the task. The same
// holds once the task is closed, and after the gateway is reopened.
#[test]
fn issue21_d10_unknown_and_foreign_task_ids_are_indistinguishable_for_every_verb() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), &tasks_on(), 2);
    let page = Page::new();
    let id = session(&gw, &owner(), &page);
    let strangers = [
        TaskOwner::new("other-agent", "alice", "conv-1"),
        TaskOwner::new("assistant", "mallory", "conv-1"),
        TaskOwner::new("assistant", "alice", "conv-9"),
    ];
    let unknown_ids = [
        "00000000-0000-4000-8000-000000000000".to_string(),
        uuid_like(&id),
        String::new(),
        "x".repeat(10_000),
        "../../etc/passwd".into(),
        "' OR 1=1 --".into(),
        id.to_uppercase(),
    ];
    let check = |gw: &Gateway, phase: &str| {
        let mut seen = Vec::new();
        let t = gw.tasks();
        let mut probe = |who: &TaskOwner, task: &str, label: &str| {
            let verbs: [(&str, Error); 5] = [
                ("status", t.status(who, task).unwrap_err()),
                ("wait", t.wait(who, task, Duration::ZERO).unwrap_err()),
                ("command", t.command(who, task, "press Alpha").unwrap_err()),
                ("cancel", t.cancel(who, task).unwrap_err()),
                ("receipts", t.receipts(who, task).unwrap_err()),
            ];
            for (verb, e) in verbs {
                seen.push((
                    format!("{phase}: {verb} by {label}"),
                    (e.code(), e.http_status(), e.family(), e.to_string()),
                ));
            }
        };
        for s in &strangers {
            probe(s, &id, &format!("{s:?} on the task"));
        }
        for u in &unknown_ids {
            probe(&owner(), u, &format!("the owner on {:.20}", u));
            probe(&strangers[0], u, &format!("a stranger on {:.20}", u));
        }
        let first = seen[0].1.clone();
        assert_eq!(first.0, "ACCESS_DENIED");
        assert_eq!(first.1, 403);
        for (what, answer) in &seen {
            assert_eq!(answer, &first, "{what} differs");
        }
        assert!(!first.3.contains(&id) && !first.3.contains("alice"));
    };
    let before = page.seen();
    check(&gw, "open session");
    assert_eq!(page.seen(), before, "no stranger reached the page");
    gw.tasks().cancel(&owner(), &id).unwrap();
    gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    check(&gw, "closed task");
    gw.close();
    let gw = open(dir.path(), &tasks_on(), 2);
    check(&gw, "reopened");
    // The owner still sees it, and a stranger's list is empty either way.
    assert_eq!(
        gw.tasks().status(&owner(), &id).unwrap().state,
        TaskState::Cancelled
    );
    for s in &strangers {
        assert!(gw.tasks().list(s).unwrap().is_empty());
    }
    gw.close();
}

/// A well-formed UUID that is not `id` (its last hex digit changed).
fn uuid_like(id: &str) -> String {
    let mut s = id.to_string();
    let last = s.pop().unwrap();
    s.push(if last == '0' { '1' } else { '0' });
    s
}

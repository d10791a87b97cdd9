//! Tasks and receipts shared by a fleet through PostgreSQL (issue 23 item 3, R-TSK-RCPT across
//! processes): a task run by one process — its status and its receipts — is seen by every
//! other process of the fleet; a task of a live process is never interrupted by another's
//! startup or call; a process killed by SIGKILL in the middle of a task's click sequence (the
//! fixture server counts every real click) leaves its task to the fleet, and another process
//! takes it over once the dead owner's liveness row is older than the dead threshold on the
//! database clock (moved by the test-only offset, no waiting): the interrupted request is
//! reported `BROWSER_EXECUTION_INTERRUPTED` and nothing is replayed (0 clicks after the kill).
//! Control calls carried to the owner's process (R-TSK-CTL) are tested with their faults: an
//! owner alive but silent (held by the checkpoint hook before its take: `TASK_CONTROL_PENDING`,
//! applied once later), and both orders of the withdraw/take race when the owner dies (driven
//! by the hook, a real SIGKILL and the database clock offset, never by sleeping).
//!
//! Needs the cargo feature `postgres` and `JEVGATE_PG_URL` (see `tests/fleet_leases.rs`) and a
//! local Chromium; skipped with the reason printed otherwise, failed under
//! `JEVGATE_REQUIRE_PG=1`.

mod support;

use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Gateway};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::crash::{kill_at, kill_self, say, CrashChild};
use support::pg::{fresh_db, pg_url, psql, PAST_DEAD_MS};
use support::Server;

const WAIT: Duration = Duration::from_secs(90);
const ENV_CHILD: &str = "JEVGATE_FLEET_TASK_CHILD";
const ENV_BASE: &str = "JEVGATE_FLEET_TASK_BASE";
/// Set for the child that owns a task and dies right after taking a carried call.
const ENV_CARRY_CHILD: &str = "JEVGATE_FLEET_CARRY_CHILD";

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-fleet")
}

fn config(url_file: &Path) -> Config {
    let json = support::gateway::with_tasks(support::pg::pg_jev_json(url_file));
    Config::from_json_str(&json.to_string()).unwrap()
}

fn open(url_file: &Path) -> (Gateway, tempfile::TempDir) {
    support::pg::open_with(config(url_file))
}

fn clicks(server: &Server) -> Vec<(String, u32)> {
    support::pages::CRASH_BUTTONS
        .iter()
        .map(|b| (b.to_string(), server.count(b)))
        .collect()
}

// Issue 23 item 3: one process runs a task; a second process of the fleet (its own data
// directory) sees the same status and the same receipts, row for row.
#[test]
fn a_task_and_its_receipts_are_seen_by_every_process_of_the_fleet() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let server = Server::start();
    let (a, _da) = open(&db.url_file);
    let mut request = SpawnRequest::from_person("1. click Alpha");
    request.start_url = Some(server.url("/p/crash"));
    let id = a.tasks().spawn(&owner(), request).unwrap();
    let done = a.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(done.state, TaskState::Completed, "{done:#?}");
    assert_eq!(server.wait_count("Alpha", 1), 1);
    let (b, _db) = open(&db.url_file);
    let seen = b.tasks().status(&owner(), &id).unwrap();
    assert_eq!(
        (seen.state, seen.revision, seen.actions, &seen.outcome),
        (done.state, done.revision, done.actions, &done.outcome)
    );
    let (ra, rb) = (
        a.tasks().receipts(&owner(), &id).unwrap(),
        b.tasks().receipts(&owner(), &id).unwrap(),
    );
    assert_eq!(
        serde_json::to_value(&ra).unwrap(),
        serde_json::to_value(&rb).unwrap()
    );
    assert!(
        rb.iter()
            .flat_map(|r| &r.operations)
            .any(|o| o.tool == "page_click" && o.status == "done"),
        "{rb:#?}"
    );
    // Another owner sees nothing of it, on either process.
    let other = TaskOwner::new("assistant", "bob", "conv-fleet");
    assert_eq!(
        b.tasks().status(&other, &id).unwrap_err().code(),
        "ACCESS_DENIED"
    );
    // The rows are in the shared database, each with the process that ran it.
    let owners = psql(
        &db.url,
        &format!("SELECT count(*) FROM task_requests WHERE task_id = '{id}' AND owner_process LIKE 'proc_%'"),
    );
    assert_ne!(owners, "0");
    a.close();
    b.close();
}

/// The child: returns at once unless a parent started it. Runs a three-step click task on the
/// shared store and dies by SIGKILL right after the second click was dispatched.
#[test]
fn fleet_task_child() {
    let Some(file) = std::env::var_os(ENV_CHILD) else {
        return;
    };
    let base = std::env::var(ENV_BASE).unwrap();
    let (gw, _dir) = open(&PathBuf::from(file));
    let seen = AtomicU32::new(0);
    let base_for_hook = base.clone();
    jevgate::unstable::set_checkpoint_hook(
        &gw.tasks(),
        Some(Arc::new(move |at: &'static str| {
            // Occurrence 1 is the start page's navigation, 2 the first click, 3 the second.
            if at == "after_dispatch" && seen.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                // The click was written to the browser; the kill also ends the browser, which
                // may not have handled it yet. Wait (bounded) until the page's beacon arrived,
                // so the parent sees the one click in doubt that really happened.
                wait_for_beacon(&base_for_hook, "Bravo");
                kill_self();
            }
        })),
    );
    let mut request =
        SpawnRequest::from_person("1. click Alpha\n2. click Bravo\n3. click Charlie\n");
    request.start_url = Some(format!("{base}/p/crash"));
    let id = gw.tasks().spawn(&owner(), request).unwrap();
    say(&format!("task {id}"));
    let _ = gw.tasks().wait(&owner(), &id, WAIT);
    // Never reached when the kill came; the parent sees a normal exit and fails.
    say("finished");
}

/// Asks the parent's fixture server (`GET /count`) until the beacon `name` was counted once,
/// for at most 5 s.
fn wait_for_beacon(base: &str, name: &str) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://").to_string();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = write!(
                s,
                "GET /count?n={name} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            );
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            if out
                .rsplit("\r\n\r\n")
                .next()
                .is_some_and(|b| b.trim() != "0")
            {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// Issue 23 item 3 (the crash test): SIGKILL mid-sequence, takeover by another process after
// the dead owner's liveness expired: 0 replays, the interrupted request reported.
#[test]
fn a_task_of_a_killed_process_is_taken_over_interrupted_and_never_replayed() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let server = Server::start();
    let child = CrashChild::spawn(
        "fleet_task_child",
        &[
            (ENV_CHILD, db.url_file.as_os_str()),
            (ENV_BASE, server.base.as_ref()),
        ],
    );
    let said = child.killed(WAIT);
    // The kill may come before the child could say its task's id: the shared store knows it.
    let id = psql(&db.url, "SELECT id FROM tasks");
    assert!(
        !id.is_empty() && !id.contains('\n'),
        "one task: {id:?} {said:?}"
    );
    // The second click reached the page before the kill; its beacon may still be in flight.
    assert_eq!(server.wait_count("Bravo", 1), 1);
    let after_kill = clicks(&server);
    assert_eq!(
        after_kill[..3],
        [
            ("Alpha".to_string(), 1),
            ("Bravo".to_string(), 1),
            ("Charlie".to_string(), 0)
        ]
    );

    // Another process starts while the dead owner's liveness row is still fresh: the task is
    // not its to recover (a live owner's task is never interrupted), and it reads it running.
    let (b, _dir) = open(&db.url_file);
    let before = b.tasks().status(&owner(), &id).unwrap();
    assert_eq!(before.state, TaskState::Running, "{before:#?}");
    let receipts = b.tasks().receipts(&owner(), &id).unwrap();
    assert_eq!(receipts.last().unwrap().state, "running");

    // The owner is dead once its row is older than the threshold on the database clock.
    let t0 = Instant::now();
    jevgate::unstable::advance_store_clock_ms(b.leases(), PAST_DEAD_MS);
    let taken = b.tasks().status(&owner(), &id).unwrap();
    let took = t0.elapsed();
    assert_eq!(taken.state, TaskState::NeedsReconciliation, "{taken:#?}");
    assert_eq!(
        taken.reason.as_deref(),
        Some("BROWSER_EXECUTION_INTERRUPTED")
    );
    let receipts = b.tasks().receipts(&owner(), &id).unwrap();
    let last = receipts.last().unwrap();
    assert_eq!(
        (last.state.as_str(), last.reason.as_deref()),
        ("interrupted", Some("BROWSER_EXECUTION_INTERRUPTED")),
        "{receipts:#?}"
    );
    // The click dispatched before the kill is in doubt (interrupted), never re-sent.
    let ops = &last.operations;
    assert_eq!(
        ops.iter()
            .filter(|o| o.tool == "page_click" && o.status == "interrupted")
            .count(),
        1,
        "{ops:#?}"
    );
    // 0 replays: nothing is clicked after the takeover (a window longer than a browser start).
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(clicks(&server), after_kill, "a click after the takeover");
    // Takeover is idempotent and visible to every process: a third one reads the same.
    let (c, _dc) = open(&db.url_file);
    let again = c.tasks().status(&owner(), &id).unwrap();
    assert_eq!(again.state, TaskState::NeedsReconciliation);
    eprintln!(
        "fleet_tasks: takeover of a dead owner's task in {} ms",
        took.as_millis()
    );
    b.close();
    c.close();
}

fn ctl(action: &str, revision: u32) -> jevgate::task::ControlRequest {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let id = format!("00000000-0000-4000-8000-{:012x}", 0x7c7_0000 + n);
    let v = serde_json::json!({"id": id, "action": action, "expectedRevision": revision});
    jevgate::task::ControlRequest::from_json(&v.to_string()).unwrap()
}

/// A task of gateway `a` whose session waits for its next command (after one click).
fn waiting_task(a: &Gateway, server: &Server) -> String {
    let id = waiting_task_at(a, &server.base);
    assert_eq!(server.wait_count("Alpha", 1), 1);
    id
}

/// [`waiting_task`] on the fixture server at `base` (a child process has no [`Server`]).
fn waiting_task_at(a: &Gateway, base: &str) -> String {
    let mut request = SpawnRequest::from_person("1. click Alpha");
    request.start_url = Some(format!("{base}/p/crash"));
    request.keep_open = true;
    let id = a.tasks().spawn(&owner(), request).unwrap();
    let s = a.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    id
}

// Issue 23 (R-TSK-CTL across processes): a task runs on gateway A; every control call made on
// gateway B — a command, a control verb, an error it earns, and cancel — is carried to A (a
// row + NOTIFY) and applied there as A's own call: the command runs on A's browser, the
// controller changes on A, the error comes back with its code, and cancel closes A's session.
#[test]
fn control_calls_from_another_process_are_carried_to_the_process_running_the_task() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let server = Server::start();
    let (a, _da) = open(&db.url_file);
    let (b, _db) = open(&db.url_file);
    let id = waiting_task(&a, &server);

    // A command from B runs on A's browser, once.
    let receipt = b.tasks().command(&owner(), &id, "1. click Bravo").unwrap();
    assert_eq!(receipt.state, "accepted", "{receipt:?}");
    assert_eq!(server.wait_count("Bravo", 1), 1);
    let s = a.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    let seen = b
        .tasks()
        .command_receipt(&owner(), &id, &receipt.command_id)
        .unwrap()
        .unwrap();
    assert_eq!(seen.command_id, receipt.command_id);

    // A control verb from B changes the task on A; the same verb again is refused on A and
    // the refusal comes back to B with its code.
    let rev = a.tasks().status(&owner(), &id).unwrap().revision;
    b.tasks()
        .control(&owner(), &id, &ctl("agent", rev))
        .unwrap();
    let on_a = a.tasks().status(&owner(), &id).unwrap();
    assert_eq!(on_a.controller, "agent", "{on_a:#?}");
    let e = b
        .tasks()
        .control(&owner(), &id, &ctl("agent", on_a.revision))
        .unwrap_err();
    assert_eq!(e.code(), "STATE_CONFLICT", "{e}");
    b.tasks()
        .control(&owner(), &id, &ctl("user", on_a.revision))
        .unwrap();
    assert_eq!(a.tasks().status(&owner(), &id).unwrap().controller, "user");

    // A fresh inspection cannot be carried: refused with a clear code, never "closed".
    let e = b.tasks().evidence(&owner(), &id, true).unwrap_err();
    assert_eq!(e.code(), "TASK_RUNNING_ELSEWHERE", "{e}");

    // Cancel from B stops the task on A: A's session ends cancelled, nothing more runs.
    let clicks_before = clicks(&server);
    b.tasks().cancel(&owner(), &id).unwrap();
    let ended = a.tasks().wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(ended.state, TaskState::Cancelled, "{ended:#?}");
    assert_eq!(
        b.tasks().status(&owner(), &id).unwrap().state,
        TaskState::Cancelled
    );
    let e = b
        .tasks()
        .command(&owner(), &id, "1. click Charlie")
        .unwrap_err();
    assert_eq!(e.code(), "AUTOMATION_SESSION_CLOSED");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(clicks(&server), clicks_before, "a click after the cancel");
    // Every call went through the shared store, each applied once.
    let done = psql(
        &db.url,
        &format!(
            "SELECT count(*) FROM jevgate_task_calls WHERE task_id = '{id}' AND state = 'done'"
        ),
    );
    assert_eq!(done, "5");
    a.close();
    b.close();
}

// Issue 23: a control call for a task whose owner process is dead is not carried: the
// calling process takes the task over first (its waiting session re-admitted here), then
// applies the call itself.
#[test]
fn a_control_call_for_a_task_of_a_dead_process_goes_through_the_takeover() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let server = Server::start();
    let (a, _da) = open(&db.url_file);
    let (b, _db) = open(&db.url_file);
    let id = waiting_task(&a, &server);
    // A's liveness row is older than the dead threshold on B's view of the database clock.
    jevgate::unstable::advance_store_clock_ms(b.leases(), PAST_DEAD_MS);
    let s = b.tasks().cancel(&owner(), &id).unwrap();
    let s = match s.state {
        TaskState::Cancelled => s,
        _ => b.tasks().wait(&owner(), &id, WAIT).unwrap(),
    };
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    let carried = psql(&db.url, "SELECT count(*) FROM jevgate_task_calls");
    assert_eq!(carried, "0");
    b.close();
    a.close();
}

/// A hold on a gateway's carried task calls (see [`hold_carried_calls`]).
struct Hold {
    /// While on, the owner's listener stops right before taking a row.
    held: std::sync::atomic::AtomicBool,
    /// Rows the listener went on to take (successfully or not) and rows it took.
    takes: AtomicU32,
    taken: AtomicU32,
}

/// Holds gateway `gw`'s carried task calls: the owner stays alive (heartbeat fresh) and
/// answers nothing until released, for at most `WAIT`.
fn hold_carried_calls(gw: &Gateway) -> Arc<Hold> {
    let hold = Arc::new(Hold {
        held: std::sync::atomic::AtomicBool::new(true),
        takes: AtomicU32::new(0),
        taken: AtomicU32::new(0),
    });
    let h = Arc::clone(&hold);
    jevgate::unstable::set_checkpoint_hook(
        &gw.tasks(),
        Some(Arc::new(move |at: &'static str| match at {
            "carried_take" => {
                let t0 = Instant::now();
                while h.held.load(Ordering::SeqCst) && t0.elapsed() < WAIT {
                    std::thread::sleep(Duration::from_millis(10));
                }
                h.takes.fetch_add(1, Ordering::SeqCst);
            }
            "carried_taken" => {
                h.taken.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        })),
    );
    hold
}

impl Hold {
    /// Lets the held listener go on and waits (bounded) until it went on to its take.
    fn release_and_wait_take(&self) {
        self.held.store(false, Ordering::SeqCst);
        let t0 = Instant::now();
        while self.takes.load(Ordering::SeqCst) == 0 && t0.elapsed() < WAIT {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(self.takes.load(Ordering::SeqCst) >= 1);
    }
}

/// Two gateways of one fleet and a task waiting on the first, whose carried calls are held
/// (bind every field: what a pattern leaves out is dropped at once — the server, the
/// directories).
struct HeldFleet {
    db: support::pg::Db,
    _server: Server,
    a: Gateway,
    b: Gateway,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    id: String,
    rev: u32,
    hold: Arc<Hold>,
}

fn held_fleet() -> Option<HeldFleet> {
    let url = pg_url()?;
    let db = fresh_db(&url);
    let server = Server::start();
    let (a, da) = open(&db.url_file);
    let (b, dbd) = open(&db.url_file);
    let id = waiting_task(&a, &server);
    let rev = a.tasks().status(&owner(), &id).unwrap().revision;
    let hold = hold_carried_calls(&a);
    Some(HeldFleet {
        db,
        _server: server,
        a,
        b,
        _dirs: (da, dbd),
        id,
        rev,
        hold,
    })
}

/// The states of task `id`'s carried call rows, oldest first.
fn call_states(db_url: &str, id: &str) -> String {
    psql(
        db_url,
        &format!("SELECT string_agg(state, ',' ORDER BY id) FROM jevgate_task_calls WHERE task_id = '{id}'"),
    )
}

/// How many control requests of verb `kind` task `id` recorded (each applied once).
fn controls(db_url: &str, id: &str, kind: &str) -> String {
    psql(
        db_url,
        &format!("SELECT count(*) FROM task_commands WHERE task_id = '{id}' AND kind = '{kind}'"),
    )
}

/// Waits (bounded) until task `id`'s carried call rows read `want`.
fn wait_call_states(db_url: &str, id: &str, want: &str) {
    let t0 = Instant::now();
    while call_states(db_url, id) != want && t0.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(call_states(db_url, id), want);
}

// Issue 23 (R-TSK-CTL across processes, fault): the owner is alive (its liveness row fresh)
// but does not answer in time: the caller gets TASK_CONTROL_PENDING (504; not retryable: the
// call is written and will be applied, do not resend) — and when the owner reads its rows
// again it applies the call once; a resend with the same control request id, also pending, is
// answered as before (no second change): one control request recorded.
#[test]
fn r_tsk_ctl_a_call_the_live_owner_does_not_confirm_in_time_is_pending_and_applied_once() {
    let Some(HeldFleet {
        db,
        a,
        b,
        id,
        rev,
        hold,
        _server,
        _dirs,
    }) = held_fleet()
    else {
        return;
    };
    let request = ctl("agent", rev);
    for _ in 0..2 {
        let e = b.tasks().control(&owner(), &id, &request).unwrap_err();
        assert_eq!(
            (e.code(), e.http_status(), e.retryable()),
            ("TASK_CONTROL_PENDING", 504, false),
            "{e}"
        );
    }
    // Nothing applied while the owner holds: both rows wait, untaken.
    assert_eq!(call_states(&db.url, &id), "queued,queued");
    assert_eq!(a.tasks().status(&owner(), &id).unwrap().controller, "user");
    hold.release_and_wait_take();
    wait_call_states(&db.url, &id, "done,done");
    assert_eq!(hold.taken.load(Ordering::SeqCst), 2);
    let after = a.tasks().status(&owner(), &id).unwrap();
    assert_eq!(after.controller, "agent", "{after:#?}");
    assert_eq!(controls(&db.url, &id, "agent"), "1");
    // Both answers are the same success: the resend was recognised by its id.
    let results = psql(
        &db.url,
        &format!("SELECT count(DISTINCT result) FROM jevgate_task_calls WHERE task_id = '{id}' AND result LIKE '{{\"ok\"%'"),
    );
    assert_eq!(results, "1");
    // A third resend from B, now answered at once, changes nothing either.
    b.tasks().control(&owner(), &id, &request).unwrap();
    assert_eq!(controls(&db.url, &id, "agent"), "1");
    jevgate::unstable::set_checkpoint_hook(&a.tasks(), None);
    a.close();
    b.close();
}

// Issue 23 (fault, the withdraw/takeover race, one order): a call is written for the owner,
// which has not taken it when it is seen dead (its liveness row older than the threshold on
// the caller's view of the database clock). The caller withdraws the row (`queued` →
// `withdrawn`, a conditional UPDATE the owner's take races with: one of them wins), takes the
// task over and applies the call itself — once. The owner, reading the row afterwards, finds
// it withdrawn and applies nothing.
#[test]
fn r_tsk_ctl_a_call_withdrawn_from_a_dead_owner_is_applied_once_by_the_caller() {
    let Some(HeldFleet {
        db,
        a,
        b,
        id,
        rev: _,
        hold,
        _server,
        _dirs,
    }) = held_fleet()
    else {
        return;
    };
    let call = std::thread::scope(|s| {
        let call = s.spawn(|| b.tasks().cancel(&owner(), &id));
        // The row is written while A is alive; then A is seen dead.
        wait_call_states(&db.url, &id, "queued");
        jevgate::unstable::advance_store_clock_ms(b.leases(), PAST_DEAD_MS);
        call.join().unwrap()
    });
    let s = call.unwrap();
    let s = match s.state {
        TaskState::Cancelled => s,
        _ => b.tasks().wait(&owner(), &id, WAIT).unwrap(),
    };
    assert_eq!(s.state, TaskState::Cancelled, "{s:#?}");
    assert_eq!(call_states(&db.url, &id), "withdrawn");
    // The owner, held right before its take, goes on: the withdrawn row is not its to take.
    hold.release_and_wait_take();
    assert_eq!(hold.takes.load(Ordering::SeqCst), 1);
    assert_eq!(hold.taken.load(Ordering::SeqCst), 0);
    assert_eq!(call_states(&db.url, &id), "withdrawn");
    jevgate::unstable::set_checkpoint_hook(&a.tasks(), None);
    b.close();
    a.close();
}

/// The child of the other order: owns a waiting task and dies by SIGKILL right after its
/// listener took a carried call (before applying it).
#[test]
fn fleet_carry_child() {
    let Some(file) = std::env::var_os(ENV_CARRY_CHILD) else {
        return;
    };
    let base = std::env::var(ENV_BASE).unwrap();
    let (gw, _dir) = open(&PathBuf::from(file));
    let id = waiting_task_at(&gw, &base);
    kill_at(&gw.tasks(), "carried_taken", 1);
    let rev = gw.tasks().status(&owner(), &id).unwrap().revision;
    say(&format!("task {id} {rev}"));
    std::thread::sleep(WAIT);
    say("finished");
}

// Issue 23 (fault, the withdraw/takeover race, the other order): the owner took the call and
// died before applying it. The caller never withdraws a taken row and never guesses: it reports
// TASK_CONTROL_PENDING once the owner is seen dead; the row stays `taken` (never re-queued,
// never run by anyone else). The task is taken over by the caller's process; the call resent
// with the same control request id is applied there once — the dead owner applied nothing.
#[test]
fn r_tsk_ctl_a_call_taken_by_an_owner_that_died_is_pending_then_applied_once_on_resend() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let server = Server::start();
    let mut child = CrashChild::spawn(
        "fleet_carry_child",
        &[
            (ENV_CARRY_CHILD, db.url_file.as_os_str()),
            (ENV_BASE, server.base.as_ref()),
        ],
    );
    let said = child.expect("task ", WAIT);
    let mut parts = said.split(' ');
    let (id, rev) = (
        parts.next().unwrap().to_string(),
        parts.next().unwrap().parse::<u32>().unwrap(),
    );
    assert_eq!(server.wait_count("Alpha", 1), 1);
    let (b, _db) = open(&db.url_file);
    let request = ctl("agent", rev);
    let e = std::thread::scope(|s| {
        let call = s.spawn(|| b.tasks().control(&owner(), &id, &request));
        // The child takes the row and dies; only then is it seen dead.
        child.killed(WAIT);
        jevgate::unstable::advance_store_clock_ms(b.leases(), PAST_DEAD_MS);
        call.join().unwrap().unwrap_err()
    });
    assert_eq!(e.code(), "TASK_CONTROL_PENDING", "{e}");
    assert_eq!(call_states(&db.url, &id), "taken");
    // The resend goes through the takeover and is applied here, once.
    b.tasks().control(&owner(), &id, &request).unwrap();
    let s = b.tasks().status(&owner(), &id).unwrap();
    assert_eq!(s.controller, "agent", "{s:#?}");
    assert_eq!(controls(&db.url, &id, "agent"), "1");
    b.tasks().control(&owner(), &id, &request).unwrap();
    assert_eq!(controls(&db.url, &id, "agent"), "1");
    // Nothing was carried again, and the taken row was never run by anyone.
    assert_eq!(call_states(&db.url, &id), "taken");
    // The fleet's cleanup keeps it for ten minutes of database time, then deletes it: its
    // owner is dead, and the takeover never reads it.
    assert_eq!(
        jevgate::unstable::prune_dead_task_calls(&b)
            .unwrap()
            .unwrap(),
        0
    );
    assert_eq!(call_states(&db.url, &id), "taken");
    jevgate::unstable::advance_store_clock_ms(b.leases(), 600_000);
    assert_eq!(
        jevgate::unstable::prune_dead_task_calls(&b)
            .unwrap()
            .unwrap(),
        1
    );
    assert_eq!(call_states(&db.url, &id), "");
    b.close();
}

// Issue 23 (fault): a call reported TASK_CONTROL_PENDING (the owner alive but silent) whose
// owner then dies is not lost with it: the process that takes the task over applies the calls
// still queued for the dead owner, once, in row order; the old owner, were it to read the row
// late, finds it is no longer addressed to it.
#[test]
fn r_tsk_ctl_a_pending_call_of_an_owner_that_died_is_applied_once_by_the_takeover() {
    let Some(HeldFleet {
        db,
        a,
        b,
        id,
        rev,
        hold,
        _server,
        _dirs,
    }) = held_fleet()
    else {
        return;
    };
    let e = b
        .tasks()
        .control(&owner(), &id, &ctl("agent", rev))
        .unwrap_err();
    assert_eq!(e.code(), "TASK_CONTROL_PENDING", "{e}");
    assert_eq!(call_states(&db.url, &id), "queued");
    // A is seen dead: B's next read takes the task over and applies the pending call.
    jevgate::unstable::advance_store_clock_ms(b.leases(), PAST_DEAD_MS);
    b.tasks().status(&owner(), &id).unwrap();
    wait_call_states(&db.url, &id, "done");
    assert_eq!(controls(&db.url, &id, "agent"), "1");
    assert_eq!(b.tasks().status(&owner(), &id).unwrap().controller, "agent");
    // A's late take finds the row gone from it.
    hold.release_and_wait_take();
    assert_eq!(hold.taken.load(Ordering::SeqCst), 0);
    assert_eq!(controls(&db.url, &id, "agent"), "1");
    jevgate::unstable::set_checkpoint_hook(&a.tasks(), None);
    b.close();
    a.close();
}
